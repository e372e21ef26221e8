//! `remember`: a text kept exactly as given, where the user asked for it.
//!
//! The note's title is the title the text's own frontmatter gives, else
//! its first line without markdown's marks, cut at [`TITLE_CHARS`] on a
//! word boundary; its file is `<folder>/<slug of the title>.md`, with
//! `-2`, `-3`, ... when the name is taken (a text remembered twice is two
//! notes: the user asked twice); it is tagged `manual-capture`.

use super::{Error, NewMemory, Operations, Result};
use crate::store::StorePath;

/// Longest title, in characters.
const TITLE_CHARS: usize = 80;

/// The tag every remembered note carries.
pub const MANUAL_CAPTURE: &str = "manual-capture";

/// Where remembered notes go when no folder is named.
pub const REMEMBER_FOLDER: &str = "remember";

/// Names tried before giving up on a free one.
const NAMES_TRIED: usize = 100;

impl Operations {
    /// Writes `text` verbatim into `folder`; returns the path and id.
    pub fn remember(&self, text: &str, folder: &str) -> Result<(StorePath, String)> {
        let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
            return Err(Error::InvalidInput(
                "nothing to remember: the text is empty".into(),
            ));
        };
        let folder = folder.trim().trim_matches('/');
        if StorePath::new(folder).is_none_or(|p| p.is_root()) {
            return Err(Error::InvalidInput(format!(
                "{folder:?} is not a folder inside the store"
            )));
        }
        let title = title_of(&title_line(text).unwrap_or_else(|| first.to_string()));
        let slug = match super::slug(&title) {
            s if s.is_empty() => "remembered".to_string(),
            s => s,
        };
        let new = |path: String| NewMemory {
            content: text.to_string(),
            path: Some(path),
            title: Some(title.clone()),
            tags: vec![MANUAL_CAPTURE.to_string()],
            ..NewMemory::default()
        };
        for n in 1..=NAMES_TRIED {
            let name = if n == 1 {
                format!("{folder}/{slug}.md")
            } else {
                format!("{folder}/{slug}-{n}.md")
            };
            match self.write_memory_with(&new(name), &Default::default()) {
                Err(Error::Exists { .. }) => continue,
                other => return other,
            }
        }
        Err(Error::InvalidInput(format!(
            "{folder}/ already holds {NAMES_TRIED} notes named {slug}"
        )))
    }
}

/// What names the text: the title its own frontmatter gives, else the
/// first line of its body without markdown's marks (a heading's `#`, a
/// list's `-`, a task's `[ ]`, a quote's `>`); `None` when it has no
/// words.
fn title_line(text: &str) -> Option<String> {
    let body = match crate::memory::own_frontmatter(text) {
        Ok(Some((fields, body))) => {
            if let Some(title) = fields
                .get("title")
                .and_then(|t| t.as_str())
                .map(str::trim)
                .filter(|t| !t.is_empty())
            {
                return Some(title.to_string());
            }
            body
        }
        _ => text,
    };
    body.lines().find_map(|line| {
        let mut line = line.trim();
        loop {
            let before = line;
            line = line.trim_start_matches('#').trim_start();
            for mark in ["- ", "* ", "+ ", "> ", "[ ] ", "[x] ", "[X] "] {
                line = line.strip_prefix(mark).unwrap_or(line).trim_start();
            }
            let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0
                && let Some(rest) = line[digits..].strip_prefix(". ")
            {
                line = rest.trim_start();
            }
            if line == before {
                break;
            }
        }
        line.chars()
            .any(char::is_alphanumeric)
            .then(|| line.to_string())
    })
}

/// A line cut at [`TITLE_CHARS`] on the last space before the cut (at
/// the cut when there is none), without an ellipsis: it is a title.
fn title_of(line: &str) -> String {
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return line;
    }
    let cut: String = line.chars().take(TITLE_CHARS + 1).collect();
    match cut.rfind(' ') {
        Some(space) if space > 0 => cut[..space].to_string(),
        _ => cut.chars().take(TITLE_CHARS).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_the_texts_own_or_its_first_words_without_marks() {
        for (text, title) in [
            ("# Heading first\nbody", Some("Heading first")),
            ("- [ ] buy milk", Some("buy milk")),
            ("> 1. quoted step", Some("quoted step")),
            ("---\ntitle: Its own\n---\nbody", Some("Its own")),
            (
                "---\ntags: [a]\n---\n\n## Below the block",
                Some("Below the block"),
            ),
            ("---\n---\n", None),
            ("#hashtag first", Some("hashtag first")),
        ] {
            assert_eq!(title_line(text).as_deref(), title, "{text:?}");
        }
    }

    #[test]
    fn titles_cut_on_a_word_boundary() {
        assert_eq!(title_of("  short   line "), "short line");
        let long = format!("{} tail", "word ".repeat(16).trim_end());
        // 16 words of 4 letters and 15 spaces make 79 characters.
        assert_eq!(title_of(&long), "word ".repeat(16).trim_end());
        let exact = "x".repeat(80);
        assert_eq!(title_of(&exact), exact);
        assert_eq!(title_of(&"y".repeat(90)), "y".repeat(80));
    }
}
