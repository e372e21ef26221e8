//! Traditional Chinese characters as simplified ones, one character for
//! one, so that search, the organizer and reminders read `張偉`, `後天下午三點`
//! and `教訓` as they read `张伟`, `后天下午三点` and `教训`.
//!
//! The map is OpenCC's (its `TSCharacters` dictionary, through
//! `ferrous-opencc`), taken once per process at the first character past
//! U+3400: every character of the CJK blocks is converted alone, a line
//! each, so that no phrase of the dictionary spans two of them. A
//! character whose simplified form is written in another number of UTF-8
//! bytes is left as it is: a folded text keeps every byte offset of the
//! text as written, so a span found in one is the same span in the other.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

/// `c`'s simplified form if it is a traditional Chinese character, else
/// `c`.
pub fn simplified(c: char) -> char {
    if (c as u32) < 0x3400 {
        return c;
    }
    SIMPLIFIED.get(&c).copied().unwrap_or(c)
}

/// `text` with its traditional characters simplified: the same length in
/// bytes, the same offsets; borrowed when nothing changes.
pub fn simplified_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| simplified(c) != c) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(simplified).collect())
}

/// `folded`, a text derived from `simplified_text(original)` by taking
/// characters out and perhaps adding a few, in `original`'s characters:
/// each character is matched, in order, to the next position of the folded
/// text that has it, and written as the original has it there.
pub fn as_written(folded: &str, original: &str) -> String {
    let simple = simplified_text(original);
    if matches!(simple, Cow::Borrowed(_)) {
        return folded.to_owned();
    }
    let pairs: Vec<(char, char)> = simple.chars().zip(original.chars()).collect();
    let mut at = 0;
    let mut out = String::with_capacity(folded.len());
    for c in folded.chars() {
        match pairs[at..].iter().position(|(s, _)| *s == c) {
            Some(i) => {
                out.push(pairs[at + i].1);
                at += i + 1;
            }
            None => out.push(c),
        }
    }
    out
}

static SIMPLIFIED: LazyLock<HashMap<char, char>> = LazyLock::new(|| {
    let blocks = [0x3400..=0x4DBF, 0x4E00..=0x9FFF, 0xF900..=0xFAFF];
    let chars: Vec<char> = blocks
        .into_iter()
        .flatten()
        .filter_map(char::from_u32)
        .collect();
    let mut lines = String::with_capacity(chars.len() * 4);
    for c in &chars {
        lines.push(*c);
        lines.push('\n');
    }
    let converter =
        match ferrous_opencc::OpenCC::from_config(ferrous_opencc::config::BuiltinConfig::T2s) {
            Ok(converter) => converter,
            Err(e) => {
                tracing::warn!("traditional Chinese is read as written: {e}");
                return HashMap::new();
            }
        };
    let converted = converter.convert(&lines);
    if converted.split('\n').count() != chars.len() + 1 {
        tracing::warn!("traditional Chinese is read as written: the converter joined lines");
        return HashMap::new();
    }
    chars
        .iter()
        .zip(converted.split('\n'))
        .filter_map(|(&from, to)| {
            let mut to_chars = to.chars();
            match (to_chars.next(), to_chars.next()) {
                (Some(to), None) if to != from && to.len_utf8() == from.len_utf8() => {
                    Some((from, to))
                }
                _ => None,
            }
        })
        .collect()
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traditional_characters_become_simplified_in_as_many_bytes() {
        assert_eq!(simplified_text("張偉負責後端"), "张伟负责后端");
        let text = "明天下午三點開會 at 3pm";
        assert_eq!(simplified_text(text).len(), text.len());
        assert!(matches!(simplified_text("喝茶 tea"), Cow::Borrowed(_)));
        assert!(SIMPLIFIED.len() > 2000, "{}", SIMPLIFIED.len());
    }

    #[test]
    fn what_was_taken_from_a_folded_text_reads_as_written() {
        let original = "明天下午三點在會議室開會";
        let folded = simplified_text(original);
        // The time phrase taken out.
        assert_eq!(as_written(&folded[18..], original), "在會議室開會");
        assert_eq!(as_written("提醒：开会", original), "提醒：開會");
        assert_eq!(as_written("plain", "plain"), "plain");
    }
}
