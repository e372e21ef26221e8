//! Frontmatter normalization: add the fields every memory should have.
//!
//! Only missing `id`, `created_at`, `phase` and `category` are added, with
//! [`crate::memory::add_missing_fields`], which never reorders, reformats
//! or drops anything and never touches the body. Files with malformed
//! frontmatter are left byte for byte as they are (the index reports them
//! in `.mnemofs/lint`). A file already normalized needs nothing, so the
//! change event our own rewrite causes ends in a no-op: no rewrite loops.

use std::path::Path;

use crate::memory::{self, Category};
use crate::store::StorePath;

/// True for the files the normalizer and organizer may rewrite: `.md`
/// memories outside dot-folders and `archive/`, and not editor temp files.
pub fn is_memory_path(path: &StorePath) -> bool {
    let p = path.as_path();
    let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let hidden_component = p
        .iter()
        .any(|c| c.to_str().is_none_or(|s| s.starts_with('.')));
    name.ends_with(".md")
        && !hidden_component
        && !name.ends_with('~')
        && !name.starts_with("#")
        && p.iter().next() != Some(std::ffi::OsStr::new("archive"))
}

/// True for memories in the inbox.
pub fn in_inbox(path: &StorePath) -> bool {
    path.as_path().iter().next() == Some(std::ffi::OsStr::new("inbox"))
}

/// What the normalizer decided for one file.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing is missing.
    Complete,
    /// The frontmatter cannot be read; leave the file alone.
    Malformed(String),
    /// The file's new content.
    Rewrite(String),
}

/// Decides what to add to `text`. `created` is the file's mtime (unix
/// seconds), used when `created_at` is missing; `classify` picks a
/// category for memories that have none; `id` gives the id a memory
/// without one gets: the one the index already shows for it.
pub fn plan(
    path: &StorePath,
    text: &str,
    created: i64,
    classify: &dyn Fn(&str, &str) -> Option<Category>,
    id: &dyn Fn() -> String,
) -> Plan {
    let stem = Path::new(path.as_path())
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parsed = memory::parse(&stem, text);
    if parsed.has_malformed_frontmatter() {
        let reason = parsed
            .lint
            .first()
            .map(ToString::to_string)
            .unwrap_or_else(|| "malformed frontmatter".into());
        return Plan::Malformed(reason);
    }
    let fm = &parsed.frontmatter;
    // The id first, set where add_missing_fields would keep the key: an
    // `id:` left empty (or `~`) names no id and is filled in place. One
    // of the wrong shape (a list) is the author's, and linted.
    let needs_id = fm.id.is_none()
        && !parsed
            .lint
            .iter()
            .any(|l| l.message.starts_with("field `id` "));
    let with_id = if needs_id {
        match memory::set_fields(text, &[("id", id())]) {
            Ok(new) => new,
            Err(e) => return Plan::Malformed(e.to_string()),
        }
    } else {
        None
    };
    let mut fields: Vec<(&str, String)> = Vec::new();
    if fm.created_at.is_none() {
        fields.push(("created_at", memory::format_timestamp(created)));
    }
    if fm.phase.is_none() {
        let phase = if in_inbox(path) { "inbox" } else { "organized" };
        fields.push(("phase", phase.into()));
    }
    if fm.category.is_none() {
        let category = classify(&parsed.title, parsed.body(text))
            .or_else(|| in_inbox(path).then_some(Category::Inbox));
        if let Some(c) = category {
            fields.push(("category", c.as_str().into()));
        }
    }
    // add_missing_fields checks the raw keys again: a present but invalid
    // value (say `phase: later`) is the author's and stays.
    let now = with_id.as_deref().unwrap_or(text);
    match memory::add_missing_fields(now, &fields) {
        Ok(Some(new)) => Plan::Rewrite(new),
        Ok(None) => with_id.map_or(Plan::Complete, Plan::Rewrite),
        Err(e) => Plan::Malformed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> StorePath {
        StorePath::new(s).unwrap()
    }

    fn none(_: &str, _: &str) -> Option<Category> {
        None
    }

    fn id() -> String {
        "the-id".into()
    }

    #[test]
    fn which_files_are_memories() {
        assert!(is_memory_path(&p("a.md")));
        assert!(is_memory_path(&p("inbox/x.md")));
        assert!(!is_memory_path(&p("archive/x.md")));
        assert!(!is_memory_path(&p(".obsidian/x.md")));
        assert!(!is_memory_path(&p("a/.git/x.md")));
        assert!(!is_memory_path(&p("notes.txt")));
        assert!(!is_memory_path(&p(".x.md.swp")));
    }

    #[test]
    fn an_empty_id_is_filled_in_place_and_a_list_is_left_to_its_author() {
        for blank in ["id:", "id: ~", "id: null", "id: \"\"", "id: ''"] {
            let text = format!("---\n{blank}\ntitle: T\n---\nbody\n");
            let Plan::Rewrite(new) = plan(&p("a.md"), &text, 0, &none, &id) else {
                panic!("{blank}: expected a rewrite");
            };
            assert!(
                new.starts_with("---\nid: the-id\ntitle: T\n"),
                "{blank}: {new}"
            );
            assert!(new.ends_with("---\nbody\n"), "{new}");
            assert_eq!(plan(&p("a.md"), &new, 0, &none, &id), Plan::Complete);
        }
        let text = "---\nid: [a, b]\n---\nbody\n";
        let Plan::Rewrite(new) = plan(&p("a.md"), text, 0, &none, &id) else {
            panic!("expected the other fields added");
        };
        assert!(new.starts_with("---\nid: [a, b]\n"), "{new}");
        assert!(!new.contains("the-id"), "{new}");
    }

    #[test]
    fn adds_only_missing_fields_and_keeps_the_body() {
        let text = "---\ntitle: T # mine\nphase: organized\n---\nbody *stays*\n";
        let Plan::Rewrite(new) = plan(&p("a.md"), text, 0, &none, &id) else {
            panic!("expected a rewrite");
        };
        assert!(new.starts_with("---\ntitle: T # mine\nphase: organized\nid: the-id\n"));
        assert!(new.contains("created_at: 1970-01-01T00:00:00Z\n"));
        assert!(new.ends_with("---\nbody *stays*\n"));
        assert_eq!(plan(&p("a.md"), &new, 0, &none, &id), Plan::Complete);
    }

    #[test]
    fn inbox_items_get_the_inbox_phase_and_a_category() {
        let classify =
            |_: &str, body: &str| body.contains("prefer").then_some(Category::Preferences);
        let Plan::Rewrite(new) = plan(&p("inbox/x.md"), "I prefer tea\n", 0, &classify, &id) else {
            panic!("expected a rewrite");
        };
        assert!(new.contains("phase: inbox\n"));
        assert!(new.contains("category: preferences\n"));
        assert!(new.ends_with("---\nI prefer tea\n"));
        let Plan::Rewrite(other) = plan(&p("inbox/y.md"), "hmm\n", 0, &classify, &id) else {
            panic!("expected a rewrite");
        };
        assert!(other.contains("category: inbox\n"));
    }

    #[test]
    fn malformed_frontmatter_is_left_alone() {
        let text = "---\ntitle: [unclosed\n---\nbody\n";
        assert!(matches!(
            plan(&p("a.md"), text, 0, &none, &id),
            Plan::Malformed(_)
        ));
    }
}
