//! `remember`: a text kept exactly as given, where the user asked for it.
//!
//! The note's title is the text's first line, cut at [`TITLE_CHARS`] on a
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
        let title = title_of(first);
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
