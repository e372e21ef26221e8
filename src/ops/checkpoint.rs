//! The checkpoint: a session note of what an agent is about to forget.
//!
//! One note per session, `sessions/<date>-<slug>-<key>.md`, where `<key>`
//! comes from the session's id: a later checkpoint of the same session
//! finds the note by that key and updates it (new observations appended,
//! `ended_or_compacted` and `status` set), so a session never gets two
//! notes. The note is written in one atomic step, so a hook killed by its
//! timeout leaves either the old note or the new one.

use serde::{Deserialize, Serialize};

use super::{Error, Operations, Result, now_unix};
use crate::memory::{self, transcript::Digest};
use crate::store::{FileKind, StorePath};

/// What a checkpoint records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    /// Claude Code's `session_id`.
    pub session_id: String,
    /// The session's working directory.
    pub cwd: Option<String>,
    /// What triggered it (`manual`, `auto`).
    pub trigger: Option<String>,
    /// Claude Code's own summary (PostCompact's `compact_summary`), if any.
    pub summary: Option<String>,
    /// What the transcript says.
    pub digest: Digest,
}

/// The key in a session note's file name, from the session's id.
fn session_key(session_id: &str) -> String {
    format!(
        "{:08x}",
        crate::store::counters::fnv1a64(session_id.as_bytes()) as u32
    )
}

impl Checkpoint {
    /// The observation lines for this checkpoint, in a stable order.
    fn observations(&self) -> Vec<String> {
        let d = &self.digest;
        let mut out = Vec::new();
        let mut add = |category: &str, items: &[String]| {
            for item in items {
                out.push(format!("- [{category}] {}", item.replace('\n', " ")));
            }
        };
        add("asked", &d.asked);
        add("decision", &d.decisions);
        add("attempted", &d.attempted);
        add("problem", &d.problems);
        add("next-step", &d.next_steps);
        add("file", &d.files_edited);
        add("read", &d.files_read);
        out
    }
}

impl Operations {
    /// Writes or updates the session's note; returns its path.
    pub fn checkpoint(&self, cp: &Checkpoint) -> Result<StorePath> {
        if cp.session_id.trim().is_empty() {
            return Err(Error::InvalidInput(
                "a checkpoint needs the session's id (session_id)".into(),
            ));
        }
        let key = session_key(&cp.session_id);
        let now = memory::format_timestamp(now_unix());
        // A conflict means the note changed under us: read it again once.
        for _ in 0..3 {
            let result = match self.session_note(&key)? {
                Some(path) => self.update_note(&path, cp, &now).map(|()| path),
                None => self.new_note(cp, &key, &now),
            };
            match result {
                Err(Error::Conflict { .. } | Error::Exists { .. }) => continue,
                other => return other,
            }
        }
        Err(Error::Conflict {
            path: format!("sessions/*-{key}.md"),
        })
    }

    /// The note of the session with this key, if one exists.
    fn session_note(&self, key: &str) -> Result<Option<StorePath>> {
        let dir = StorePath::new("sessions").unwrap_or_default();
        let entries = match self.store.read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(Error::io("sessions", e)),
        };
        let suffix = format!("-{key}.md");
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == FileKind::File)
            .filter(|e| e.name.to_string_lossy().ends_with(&suffix))
            .filter_map(|e| dir.join(&e.name))
            .min())
    }

    fn new_note(&self, cp: &Checkpoint, key: &str, now: &str) -> Result<StorePath> {
        let d = &cp.digest;
        let ask = d.asked.first().map(String::as_str).unwrap_or("session");
        let title = format!(
            "Session: {}",
            memory::transcript::clip_at_word(ask, TITLE_CHARS)
        );
        let started = d
            .started
            .as_deref()
            .and_then(memory::parse_timestamp)
            .map(memory::format_timestamp)
            .unwrap_or_else(|| now.to_string());
        let date = started.get(..10).unwrap_or("unknown").to_string();
        let mut text = String::from("---\n");
        let mut field = |k: &str, v: &str| {
            text.push_str(&format!("{k}: {}\n", memory::yaml_scalar(v)));
        };
        field("id", &uuid::Uuid::new_v4().to_string());
        field("title", &title);
        field("type", "session");
        field("status", "open");
        field("claude_session_id", &cp.session_id);
        if let Some(cwd) = &cp.cwd {
            field("cwd", cwd);
            if let Some(project) = std::path::Path::new(cwd).file_name() {
                field("project", &project.to_string_lossy());
            }
        }
        field("started", &started);
        field("ended_or_compacted", now);
        field("created_at", now);
        field("phase", "organized");
        text.push_str("---\n");
        text.push_str(&format!("# {title}\n\n"));
        if let Some(summary) = cp.summary.as_deref().map(without_analysis) {
            text.push_str(&format!("{summary}\n\n"));
        }
        text.push_str("## Observations\n");
        for line in cp.observations() {
            text.push_str(&line);
            text.push('\n');
        }
        let slug = slug(ask);
        let path = format!("sessions/{date}-{slug}-{key}.md");
        self.create(&path, &text, false)?;
        self.store_path(&path)
    }

    fn update_note(&self, path: &StorePath, cp: &Checkpoint, now: &str) -> Result<()> {
        let shown = path.to_string();
        let (real, bytes, text) = self.read_text(path, &shown)?;
        let fields = [
            ("ended_or_compacted", now.to_string()),
            ("status", "open".to_string()),
        ];
        let mut new = match memory::set_fields(&text, &fields) {
            Ok(Some(t)) => t,
            Ok(None) => text.clone(),
            Err(e) => return Err(Error::InvalidInput(format!("{shown}: {e}"))),
        };
        let fresh: Vec<String> = cp
            .observations()
            .into_iter()
            .filter(|line| !text.lines().any(|l| l.trim_end() == line))
            .collect();
        if let Some(summary) = cp.summary.as_deref().map(without_analysis)
            && !summary.is_empty()
            && !text.contains(&summary)
        {
            if !new.ends_with('\n') {
                new.push('\n');
            }
            new.push_str(&format!("\n## Summary at {now}\n{summary}\n"));
        }
        if !fresh.is_empty() {
            if !new.ends_with('\n') {
                new.push('\n');
            }
            if !new.contains("## Observations") {
                new.push_str("\n## Observations\n");
            }
            for line in fresh {
                new.push_str(&line);
                new.push('\n');
            }
        }
        if new == text {
            return Ok(());
        }
        self.rewrite(&shown, &real, &bytes, &new)
    }
}

/// Longest title of a session note, in characters, before its prefix.
const TITLE_CHARS: usize = 80;

/// Claude Code's compact summary without its `<analysis>` scratch work,
/// and without the `<summary>` tags around the summary itself.
fn without_analysis(summary: &str) -> String {
    let mut text = summary.to_string();
    while let Some(start) = text.find("<analysis>") {
        let end = text[start..]
            .find("</analysis>")
            .map_or(text.len(), |e| start + e + "</analysis>".len());
        text.replace_range(start..end, "");
    }
    text.replace("<summary>", "")
        .replace("</summary>", "")
        .trim()
        .to_string()
}

fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
        if out.chars().count() >= 40 {
            break;
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() {
        "session".into()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_analysis_of_a_compact_summary_is_left_out() {
        let raw = "<analysis>\nLet me think about the chat.\n</analysis>\n\n<summary>\n1. Primary request: ship it.\n</summary>";
        assert_eq!(without_analysis(raw), "1. Primary request: ship it.");
        assert_eq!(without_analysis("plain summary"), "plain summary");
        assert_eq!(without_analysis("<analysis>unclosed"), "");
    }
}
