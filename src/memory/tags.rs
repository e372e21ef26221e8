//! Inline `#tags` and tag normalization.
//!
//! A `#` is a tag only where a person would read it as one. It must start
//! the line or follow whitespace or opening punctuation, which rules out
//! URL fragments (`http://x/#frag`), HTML entities (`&#123;`), `a#b` and
//! `C#`; it must be followed by at least one letter, digit or `_`, which
//! rules out ATX headings (`# Title`); and it must not be all digits,
//! because `#123` is an issue or PR reference. Letters are Unicode, so
//! `#中文标签` is a tag; CJK writers often put a tag right after
//! full-width punctuation (`，#标签`), so any non-ASCII punctuation may
//! precede one too. Tags are compared lowercased, and the first spelling
//! seen wins the order.

use std::collections::HashSet;
use std::ops::Range;

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-' || c == '/'
}

fn may_precede_tag(c: char) -> bool {
    c.is_whitespace()
        || matches!(c, '(' | '[' | '{' | ',' | ';' | '"' | '\'' | '*')
        || (!c.is_ascii() && !c.is_alphanumeric())
}

/// Normalizes a tag from frontmatter or text: trimmed, without a leading
/// `#`, lowercased. `None` if nothing is left.
pub(crate) fn normalize_tag(raw: &str) -> Option<String> {
    let t = raw.trim();
    let t = t.strip_prefix('#').unwrap_or(t).trim();
    (!t.is_empty()).then(|| t.to_lowercase())
}

/// Tags in first-seen order without duplicates. The set makes a file with
/// thousands of distinct tags cost linear time, not quadratic.
#[derive(Debug, Default)]
pub(crate) struct TagList {
    tags: Vec<String>,
    seen: HashSet<String>,
}

impl TagList {
    /// Appends `tag` unless an equal tag is already present.
    pub(crate) fn push(&mut self, tag: String) {
        if !self.seen.contains(&tag) {
            self.seen.insert(tag.clone());
            self.tags.push(tag);
        }
    }

    pub(crate) fn into_vec(self) -> Vec<String> {
        self.tags
    }
}

/// Sorts ranges and merges overlapping ones, so a position can be looked
/// up by binary search.
pub(crate) fn merge_ranges(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

fn covering(skip: &[Range<usize>], pos: usize) -> Option<&Range<usize>> {
    let after = skip.partition_point(|r| r.start <= pos);
    after
        .checked_sub(1)
        .and_then(|k| skip.get(k))
        .filter(|r| r.contains(&pos))
}

/// Byte ranges of Markdown link destinations, `](...)`, on a line: their
/// `#anchor` fragments are not tags.
pub(crate) fn link_destinations(line: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    // A search for `]` alone, since most lines have none: a two-byte
    // pattern costs a substring searcher per line.
    while let Some(p) = line
        .as_bytes()
        .get(from..)
        .and_then(|s| memchr::memchr(b']', s))
        .map(|p| p + from)
    {
        if line.as_bytes().get(p + 1) != Some(&b'(') {
            from = p + 1;
            continue;
        }
        let end = line
            .get(p..)
            .and_then(|s| s.find(')'))
            .map_or(line.len(), |e| p + e + 1);
        out.push(p..end);
        from = end;
    }
    out
}

/// If a tag starts at byte `hash` (the `#`) of `line`, its text as written
/// and the byte just past it.
pub(crate) fn tag_at(line: &str, hash: usize) -> Option<(&str, usize)> {
    if line.as_bytes().get(hash) != Some(&b'#') {
        return None;
    }
    if let Some(prev) = line.get(..hash)?.chars().next_back()
        && !may_precede_tag(prev)
    {
        return None;
    }
    let rest = line.get(hash + 1..)?;
    let first = rest.chars().next()?;
    if !(first.is_alphanumeric() || first == '_') {
        return None;
    }
    let len = rest
        .char_indices()
        .find(|&(_, c)| !is_tag_char(c))
        .map_or(rest.len(), |(i, _)| i);
    let tag = rest.get(..len)?.trim_end_matches('/');
    if tag.chars().all(char::is_numeric) {
        return None;
    }
    Some((tag, hash + 1 + len))
}

/// Appends the inline tags of one masked line, skipping `#`s inside the
/// `skip` ranges (wikilinks, link destinations), which must be sorted and
/// disjoint (see [`merge_ranges`]).
pub(crate) fn inline_tags(line: &str, skip: &[Range<usize>], out: &mut TagList) {
    let mut i = 0;
    while let Some(p) = line
        .as_bytes()
        .get(i..)
        .and_then(|s| memchr::memchr(b'#', s))
        .map(|p| p + i)
    {
        if let Some(r) = covering(skip, p) {
            i = r.end.max(p + 1);
            continue;
        }
        match tag_at(line, p) {
            Some((tag, end)) => {
                out.push(tag.to_lowercase());
                i = end;
            }
            None => i = p + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(line: &str) -> Vec<String> {
        let mut out = TagList::default();
        inline_tags(line, &link_destinations(line), &mut out);
        out.into_vec()
    }

    #[test]
    fn simple_and_nested_tags() {
        assert_eq!(tags("#a b #c/d #e-f_g"), ["a", "c/d", "e-f_g"]);
        assert_eq!(tags("end #done."), ["done"]);
        assert_eq!(
            tags("(#paren) [#bracket] *#em*"),
            ["paren", "bracket", "em"]
        );
        assert_eq!(tags("#trailing/"), ["trailing"]);
    }

    #[test]
    fn lowercased_and_deduplicated_in_first_seen_order() {
        assert_eq!(tags("#Rust #go #RUST #Go"), ["rust", "go"]);
    }

    #[test]
    fn headings_are_not_tags() {
        assert!(tags("# Title").is_empty());
        assert!(tags("## Section").is_empty());
        assert_eq!(tags("## Notes #todo"), ["todo"]);
    }

    #[test]
    fn urls_entities_and_mid_word_hashes_are_not_tags() {
        assert!(tags("http://x/#frag https://example.com/page#section").is_empty());
        assert!(tags("&#123; &#x1F600;").is_empty());
        assert!(tags("a#b C# F#minor").is_empty());
        assert!(tags("[docs](https://x.org/a#b) [local](#anchor)").is_empty());
        assert!(tags("\\#escaped").is_empty());
    }

    #[test]
    fn link_destinations_are_found_after_other_brackets() {
        let line = "[x] ]] a](b#c) [d]e #tag [f](g)";
        let found: Vec<&str> = link_destinations(line)
            .into_iter()
            .filter_map(|r| line.get(r))
            .collect();
        assert_eq!(found, ["](b#c)", "](g)"]);
        assert_eq!(tags(line), ["tag"]);
        assert_eq!(link_destinations("a ] b ](").len(), 1);
    }

    #[test]
    fn all_digit_hashes_are_issue_references() {
        assert!(tags("fixes #123 and #４５").is_empty());
        assert_eq!(tags("#1st #2024-q1 #v2"), ["1st", "2024-q1", "v2"]);
    }

    #[test]
    fn cjk_tags() {
        assert_eq!(tags("#中文标签 文本"), ["中文标签"]);
        assert_eq!(tags("我喜欢咖啡，#饮料。"), ["饮料"]);
        assert!(tags("咖啡#饮料").is_empty());
        assert_eq!(tags("#日本語タグ #한국어"), ["日本語タグ", "한국어"]);
    }

    #[test]
    fn skip_ranges_hide_hashes() {
        let line = "[[Note#Heading]] [[#Local]] #real";
        let mut out = TagList::default();
        inline_tags(line, &[0..16, 17..27], &mut out);
        assert_eq!(out.into_vec(), ["real"]);
    }

    #[test]
    fn ranges_merge() {
        assert_eq!(
            merge_ranges(vec![5..9, 0..2, 1..3, 8..12, 20..21]),
            [0..3, 5..12, 20..21]
        );
        let merged = merge_ranges(vec![0..3, 5..12]);
        assert_eq!(covering(&merged, 4), None);
        assert_eq!(covering(&merged, 5), Some(&(5..12)));
        assert_eq!(covering(&merged, 11), Some(&(5..12)));
        assert_eq!(covering(&merged, 12), None);
        assert_eq!(covering(&[], 0), None);
    }

    #[test]
    fn normalization() {
        assert_eq!(normalize_tag(" #Foo "), Some("foo".into()));
        assert_eq!(normalize_tag("#"), None);
        assert_eq!(normalize_tag(""), None);
    }
}
