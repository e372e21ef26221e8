//! Observations: categorized facts written as `- [category] text #tag (context)`.
//!
//! This is Basic Memory's convention, and agents use it to record facts
//! one per line. Task checkboxes look alike (`- [ ] todo`, `- [x] done`,
//! and Obsidian's `- [-]`, `- [/]`) and are not observations: a category
//! must contain a letter or digit and must not be a lone `x`. A Markdown
//! link at the start of an item (`- [text](url)`) is not one either, so the
//! `]` must be followed by whitespace.
//!
//! Structure (where the trailing tags and context are) is found on the
//! masked line, so a `(` inside a code span never opens the context, and
//! the words are sliced from the raw line, so code spans keep their text.

use std::ops::Range;

use super::markdown::list_item_content_start;
use super::tags::{TagList, inline_tags, tag_at};

/// One observation line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Observation {
    /// The bracketed category, as written (trimmed).
    pub category: String,
    /// The observation without its trailing `#tags` and `(context)`.
    pub text: String,
    /// Every tag on the line, normalized (lowercase, first-seen order).
    pub tags: Vec<String>,
    /// The trailing parenthesized context, if any.
    pub context: Option<String>,
}

/// Parses one body line. `raw` and `masked` must be the same line before
/// and after code masking; `skip` holds ranges where `#` is not a tag.
pub(crate) fn observation(raw: &str, masked: &str, skip: &[Range<usize>]) -> Option<Observation> {
    let start = list_item_content_start(masked)?;
    let after_marker = masked.get(start..)?;
    let inner = after_marker.strip_prefix('[')?;
    let close = inner.find(']')?;
    let category = inner.get(..close)?.trim();
    if category.contains('[')
        || category.eq_ignore_ascii_case("x")
        || !category.chars().any(char::is_alphanumeric)
    {
        return None;
    }
    // `start + 1` skips the `[`, `close + 1` the `]`.
    let after_bracket = start + 1 + close + 1;
    let gap = masked
        .get(after_bracket..)?
        .chars()
        .take_while(|c| c.is_whitespace())
        .map(char::len_utf8)
        .sum::<usize>();
    if gap == 0 {
        return None;
    }
    let content_start = after_bracket + gap;
    let line_end = raw.trim_end().len();
    if content_start >= line_end {
        return None;
    }

    let mut end = line_end;
    let mut context = None;
    if let Some((open, close)) = trailing_parenthesis(masked, content_start, end) {
        context = raw.get(open + 1..close).map(str::trim).map(str::to_owned);
        end = open;
    }
    end = strip_trailing_tags(masked, content_start, end);
    let mut text = raw.get(content_start..end).unwrap_or_default().trim();
    if text.is_empty() {
        // A line of only tags: keep them as the text rather than lose it.
        text = raw.get(content_start..line_end).unwrap_or_default().trim();
        context = None;
    }

    let mut tags = TagList::default();
    let local_skip: Vec<Range<usize>> = skip
        .iter()
        .filter(|r| r.end > content_start)
        .map(|r| r.start.saturating_sub(content_start)..r.end - content_start)
        .collect();
    inline_tags(
        masked.get(content_start..).unwrap_or_default(),
        &local_skip,
        &mut tags,
    );

    Some(Observation {
        category: category.to_owned(),
        text: text.to_owned(),
        tags: tags.into_vec(),
        context: context.filter(|c| !c.is_empty()),
    })
}

/// The `(` and `)` of a parenthesized group that ends the line, if it is
/// preceded by whitespace and is not the whole content.
fn trailing_parenthesis(masked: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let segment = masked.get(start..end)?.trim_end();
    if !segment.ends_with(')') {
        return None;
    }
    let close = start + segment.len() - 1;
    let mut depth = 0usize;
    for (i, c) in segment.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let before = segment.get(..i)?;
                    let preceded_by_space =
                        before.chars().next_back().is_some_and(char::is_whitespace);
                    return (preceded_by_space && !before.trim().is_empty())
                        .then_some((start + i, close));
                }
            }
            _ => {}
        }
    }
    None
}

/// Moves `end` back over whitespace-separated `#tag` tokens ending the text.
fn strip_trailing_tags(masked: &str, start: usize, mut end: usize) -> usize {
    loop {
        let Some(segment) = masked.get(start..end) else {
            return end;
        };
        let trimmed = segment.trim_end();
        let token_start = trimmed
            .char_indices()
            .rev()
            .find(|&(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let whole_token_is_tag =
            tag_at(trimmed, token_start).is_some_and(|(_, e)| e == trimmed.len());
        // Not `start + trimmed.len()`: the mask may end in a blanked code
        // span whose words belong to the text.
        if trimmed.is_empty() || !whole_token_is_tag {
            return end;
        }
        end = start + token_start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(line: &str) -> Option<Observation> {
        let masked = super::super::markdown::mask_code(line);
        observation(line, &masked, &[])
    }

    #[test]
    fn full_observation() {
        let o = obs("- [tech] Uses SQLite #db #Storage (chosen for simplicity)");
        assert_eq!(
            o,
            Some(Observation {
                category: "tech".into(),
                text: "Uses SQLite".into(),
                tags: vec!["db".into(), "storage".into()],
                context: Some("chosen for simplicity".into()),
            })
        );
    }

    #[test]
    fn tags_in_the_middle_stay_in_the_text() {
        let o = obs("* [idea] try #rust for the cli #later").unwrap_or_else(|| panic!("no obs"));
        assert_eq!(o.text, "try #rust for the cli");
        assert_eq!(o.tags, ["rust", "later"]);
        assert_eq!(o.context, None);
    }

    #[test]
    fn checkboxes_and_links_are_not_observations() {
        for line in [
            "- [ ] buy milk",
            "- [x] done",
            "- [X] done",
            "- [-] cancelled",
            "- [/] half",
            "- [link](http://x)",
            "- [[Wiki]] link",
            "- [tech]",
            "- [tech]   ",
            "[tech] not a list item",
            "- [] empty",
        ] {
            assert_eq!(obs(line), None, "{line:?}");
        }
    }

    #[test]
    fn code_spans_keep_their_text_but_hide_structure() {
        let o = obs("- [cmd] run `cargo test (all)` #ci").unwrap_or_else(|| panic!("no obs"));
        assert_eq!(o.text, "run `cargo test (all)`");
        assert_eq!(o.context, None);
        assert_eq!(o.tags, ["ci"]);
    }

    #[test]
    fn nested_parentheses_and_parenthesis_only_content() {
        let o = obs("- [note] a (b (c) d)").unwrap_or_else(|| panic!("no obs"));
        assert_eq!(
            (o.text.as_str(), o.context.as_deref()),
            ("a", Some("b (c) d"))
        );
        let o = obs("- [note] (only context)").unwrap_or_else(|| panic!("no obs"));
        assert_eq!((o.text.as_str(), o.context), ("(only context)", None));
        let o = obs("- [note] f(x)").unwrap_or_else(|| panic!("no obs"));
        assert_eq!((o.text.as_str(), o.context), ("f(x)", None));
    }

    #[test]
    fn only_tags() {
        let o = obs("- [mood] #happy #calm").unwrap_or_else(|| panic!("no obs"));
        assert_eq!(o.text, "#happy #calm");
        assert_eq!(o.tags, ["happy", "calm"]);
    }

    #[test]
    fn cjk_observation() {
        let o =
            obs("- [偏好] 喜欢简洁的回答 #风格 （不要客套）").unwrap_or_else(|| panic!("no obs"));
        assert_eq!(o.category, "偏好");
        assert_eq!(o.text, "喜欢简洁的回答 #风格 （不要客套）");
        assert_eq!(o.tags, ["风格"]);
        let o = obs("- [偏好] 喜欢简洁的回答 #风格 (不要客套)").unwrap_or_else(|| panic!("no obs"));
        assert_eq!(o.text, "喜欢简洁的回答");
        assert_eq!(o.context.as_deref(), Some("不要客套"));
    }
}
