//! Just enough Markdown structure to find links, tags and headings.
//!
//! This is not a Markdown parser. Every scanner in this module family works
//! line by line on a *masked* copy of the body: fenced code blocks and
//! inline code spans are overwritten with ASCII spaces, byte for byte, so
//! that a `#tag` or `[[link]]` inside code is never seen, while every byte
//! offset in the masked copy still points at the same place in the real
//! text (scanners find structure in the mask and slice the original when
//! they need the words, e.g. a heading containing `` `code` ``).
//!
//! Deliberate simplifications, each chosen because the alternative
//! misfires more often in memory files than it helps:
//! - fences are recognized at any indentation (they often sit inside list
//!   items), and an unclosed fence runs to the end of the body, as in
//!   CommonMark;
//! - indented (four-space) code blocks are *not* masked, because nested
//!   list items look exactly like them;
//! - code spans do not cross line boundaries.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

/// Returns `body` with code blanked out, the same length as `body` and
/// with every `\n` and `\r` in place: `body` itself when it has no
/// backtick or tilde, so no code (most notes).
pub(crate) fn mask_code(body: &str) -> Cow<'_, str> {
    if memchr::memchr2(b'`', b'~', body.as_bytes()).is_none() {
        return Cow::Borrowed(body);
    }
    let mut out = body.as_bytes().to_vec();
    let mut fence: Option<Fence> = None;
    let mut line_start = 0;
    for line in body.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let range = line_start..line_start + content.len();
        line_start += line.len();
        if let Some(open) = fence {
            if open.is_closed_by(content) {
                fence = None;
            }
            blank(&mut out, range);
        } else if let Some(open) = Fence::opened_by(content) {
            fence = Some(open);
            blank(&mut out, range);
        } else if let Some(line_bytes) = out.get_mut(range) {
            mask_code_spans(line_bytes);
        }
    }
    // Only whole characters or ASCII bytes were replaced by spaces, so the
    // bytes are still UTF-8; the fallback exists so this can never panic.
    Cow::Owned(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

fn blank(out: &mut [u8], range: Range<usize>) {
    if let Some(bytes) = out.get_mut(range) {
        bytes.fill(b' ');
    }
}

#[derive(Debug, Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
}

impl Fence {
    fn opened_by(line: &str) -> Option<Fence> {
        let t = line.trim_start_matches([' ', '\t']).as_bytes();
        let ch = *t.first()?;
        if ch != b'`' && ch != b'~' {
            return None;
        }
        let len = t.iter().take_while(|&&c| c == ch).count();
        if len < 3 {
            return None;
        }
        // A backtick fence's info string cannot contain backticks, otherwise
        // ```` ```inline``` ```` on one line would open a block.
        if ch == b'`' && t.get(len..).is_some_and(|rest| rest.contains(&b'`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    fn is_closed_by(self, line: &str) -> bool {
        let t = line.trim_matches([' ', '\t']).as_bytes();
        t.len() >= self.len && t.iter().all(|&c| c == self.ch)
    }
}

/// Blanks CommonMark code spans: a run of N backticks up to the next run of
/// exactly N backticks. An unmatched run is literal text.
fn mask_code_spans(line: &mut [u8]) {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line.get(i) == Some(&b'`') {
            let n = run_len(line, i);
            runs.push((i, n));
            i += n;
        } else {
            i += 1;
        }
    }
    // The next run of the same length, for every run, found in one pass
    // from the end: scanning forward from each opener would be quadratic on
    // a long line of unmatched backticks.
    let mut next_same = vec![None; runs.len()];
    let mut latest: HashMap<usize, usize> = HashMap::new();
    for (k, &(_, len)) in runs.iter().enumerate().rev() {
        next_same[k] = latest.insert(len, k);
    }
    let mut k = 0;
    while let Some(&(start, _)) = runs.get(k) {
        match next_same[k].and_then(|j| runs.get(j).map(|&(s, n)| (j, s + n))) {
            Some((j, end)) => {
                if let Some(span) = line.get_mut(start..end) {
                    span.fill(b' ');
                }
                k = j + 1;
            }
            None => k += 1,
        }
    }
}

fn run_len(line: &[u8], start: usize) -> usize {
    line.get(start..)
        .map_or(0, |rest| rest.iter().take_while(|&&c| c == b'`').count())
}

/// If `line` is an ATX heading, its level and the byte range of its text
/// (without the `#` markers, surrounding spaces or a closing `#` run).
pub(crate) fn atx_heading(line: &str) -> Option<(usize, Range<usize>)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let b = line.as_bytes();
    let level = b.get(indent..)?.iter().take_while(|&&c| c == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = indent + level;
    match b.get(after) {
        None | Some(b' ' | b'\t') => {}
        Some(_) => return None,
    }
    let rest = line.get(after..)?;
    let mut text = rest.trim_matches([' ', '\t']);
    // A closing sequence only counts when separated by a space (`# C#` keeps
    // its `#`).
    let without_hashes = text.trim_end_matches('#');
    if without_hashes.is_empty() {
        text = without_hashes;
    } else if without_hashes.len() != text.len() && without_hashes.ends_with([' ', '\t']) {
        text = without_hashes.trim_end_matches([' ', '\t']);
    }
    let start = after + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
    Some((level, start..start + text.len()))
}

/// The byte offset just past a list marker (`-`, `*`, `+`, `1.`, `1)`) and
/// the whitespace after it, if `line` is a list item.
pub(crate) fn list_item_content_start(line: &str) -> Option<usize> {
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    let b = line.as_bytes();
    let marker_end = match *b.get(indent)? {
        b'-' | b'*' | b'+' => indent + 1,
        c if c.is_ascii_digit() => {
            let digits = b
                .get(indent..)?
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            match b.get(indent + digits) {
                Some(b'.' | b')') if digits <= 9 => indent + digits + 1,
                _ => return None,
            }
        }
        _ => return None,
    };
    let spaces = b
        .get(marker_end..)?
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    (spaces > 0).then_some(marker_end + spaces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_without_code_is_not_copied() {
        assert!(matches!(mask_code("a #x [[y]]\n`"), Cow::Owned(_)));
        assert!(matches!(mask_code("a #x [[y]]\n~"), Cow::Owned(_)));
        assert!(matches!(mask_code("a #x [[y]]\n- z"), Cow::Borrowed(_)));
    }

    #[test]
    fn fenced_blocks_are_blanked_but_keep_their_length() {
        let body = "a #x\n```rust\nlet s = \"#no [[No]]\";\n```\nb #y\n";
        let masked = mask_code(body);
        assert_eq!(masked.len(), body.len());
        assert_eq!(masked, "a #x\n       \n                     \n   \nb #y\n");
    }

    #[test]
    fn tilde_fences_need_a_long_enough_closer() {
        let masked = mask_code("~~~~\n#a\n~~~\n#b\n~~~~\n#c");
        assert_eq!(masked.lines().last(), Some("#c"));
        assert!(!masked.contains("#a") && !masked.contains("#b"));
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let masked = mask_code("x\n```\n#a\n#b");
        assert_eq!(masked.trim(), "x");
    }

    #[test]
    fn backtick_fence_with_backticks_in_info_is_not_a_fence() {
        // It is an ordinary code span, and the next line is not code.
        assert_eq!(mask_code("```a``` #t\n#u"), "        #t\n#u");
    }

    #[test]
    fn code_spans_need_matching_run_lengths() {
        assert_eq!(mask_code("a `b` c"), "a     c");
        assert_eq!(mask_code("a ``b ` c`` d"), "a           d");
        assert_eq!(mask_code("a `b"), "a `b");
        assert_eq!(mask_code("`中文` #t"), "         #t");
    }

    #[test]
    fn crlf_survives_masking() {
        assert_eq!(
            mask_code("```\r\nx\r\n```\r\n#t\r\n"),
            "   \r\n \r\n   \r\n#t\r\n"
        );
    }

    #[test]
    fn headings() {
        let h = |s: &'static str| atx_heading(s).map(|(l, r)| (l, &s[r]));
        assert_eq!(h("# Title"), Some((1, "Title")));
        assert_eq!(h("##   Two  ##  "), Some((2, "Two")));
        assert_eq!(h("# C#"), Some((1, "C#")));
        assert_eq!(h("#"), Some((1, "")));
        assert_eq!(h("# ##"), Some((1, "")));
        assert_eq!(h("   # Indented"), Some((1, "Indented")));
        assert_eq!(h("    # code"), None);
        assert_eq!(h("#tag"), None);
        assert_eq!(h("####### seven"), None);
        assert_eq!(h("# 中文标题"), Some((1, "中文标题")));
    }

    #[test]
    fn list_markers() {
        assert_eq!(list_item_content_start("- x"), Some(2));
        assert_eq!(list_item_content_start("  *\tx"), Some(4));
        assert_eq!(list_item_content_start("12. x"), Some(4));
        assert_eq!(list_item_content_start("3) x"), Some(3));
        assert_eq!(list_item_content_start("-x"), None);
        assert_eq!(list_item_content_start("1.5 x"), None);
        assert_eq!(list_item_content_start("x - y"), None);
    }
}
