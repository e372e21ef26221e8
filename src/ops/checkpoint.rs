//! The checkpoint: a session note of what an agent is about to forget.
//!
//! One note per session, `<folder>/<date>-<slug>-<key>.md` (the folder is
//! `sessions` unless the project's settings name another), where `<key>`
//! comes from the session's id: a later checkpoint of the same session
//! finds the note by that key and updates it (new observations appended,
//! `ended_or_compacted` and `status` set), so a session never gets two
//! notes. The note is written in one atomic step, so a hook killed by its
//! timeout leaves either the old note or the new one.
//!
//! The note is extractive (what [`Digest`] read). A checkpoint that
//! carries a [`SessionSummary`], a model's account of the session, puts
//! its sections (summary, decisions, next steps, problems) before the
//! observations and sets `capture: summarized`; a later summary replaces
//! those sections, so they always tell the latest account. Their items are
//! observations (`- [next-step] ...`), so the brief, which shows a
//! session's first few, shows the model's before the digest's.

use serde::{Deserialize, Serialize};

use super::{Error, Operations, Result, now_unix};
use crate::memory::{self, transcript::Digest};
use crate::store::{FileKind, StorePath};

/// The folder of session notes when none is named.
pub const SESSIONS_FOLDER: &str = "sessions";

/// What a checkpoint records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The folder of the session's note, relative to the store.
    pub folder: String,
    /// A model's account of the session, for the note's summary sections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarized: Option<Box<SessionSummary>>,
}

impl Default for Checkpoint {
    fn default() -> Checkpoint {
        Checkpoint {
            session_id: String::new(),
            cwd: None,
            trigger: None,
            summary: None,
            digest: Digest::default(),
            folder: SESSIONS_FOLDER.into(),
            summarized: None,
        }
    }
}

/// A model's account of a session: what the summary sections of its note
/// hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionSummary {
    /// One paragraph: what the session was about and where it stands.
    pub summary: String,
    /// Decisions made, one sentence each.
    pub decisions: Vec<String>,
    /// What remains to do.
    pub next_steps: Vec<String>,
    /// Problems met, open or solved.
    pub problems: Vec<String>,
}

/// The summary sections of a session note, in order: heading and the
/// observation category of its items (none for the paragraph).
pub const SUMMARY_SECTIONS: [(&str, Option<&str>); 4] = [
    ("Summary", None),
    ("Decisions", Some("decision")),
    ("Next steps", Some("next-step")),
    ("Problems", Some("problem")),
];

/// Most items kept per list of a summary.
const SUMMARY_ITEMS: usize = 10;
/// Longest item of a summary's list, in characters.
const SUMMARY_ITEM_CHARS: usize = 400;
/// Longest summary paragraph, in characters.
const SUMMARY_CHARS: usize = 3000;

impl SessionSummary {
    /// What a model is asked for: one JSON object with these keys.
    pub const SHAPE: &str = r#"{"summary": "one paragraph: what the session was about, what was done, where it stands", "decisions": ["a decision made, with its reason, in one sentence"], "next_steps": ["what remains to do, in one sentence"], "problems": ["a problem met, and whether and how it was solved"]}"#;

    /// Reads a model's answer: one JSON object of [`SessionSummary::SHAPE`],
    /// bare, in a code fence or among prose, then [checked](Self::checked).
    pub fn from_answer(answer: &str) -> std::result::Result<SessionSummary, String> {
        let start = answer.find('{').ok_or("the answer holds no JSON object")?;
        let end = answer
            .rfind('}')
            .filter(|e| *e > start)
            .ok_or("the answer's JSON object is not closed")?;
        let summary: SessionSummary = serde_json::from_str(&answer[start..=end])
            .map_err(|e| format!("the answer's JSON is not a session summary: {e}"))?;
        summary.checked()
    }

    /// The summary with one-line, bounded items and a paragraph that is
    /// there; an error when it is empty.
    pub fn checked(self) -> std::result::Result<SessionSummary, String> {
        let list = |items: Vec<String>| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for item in items {
                let item = item.trim().trim_start_matches(['-', '*', ' ']);
                let item = strip_category(item);
                let item = memory::transcript::clip_at_word(item, SUMMARY_ITEM_CHARS);
                if !item.is_empty() && !out.contains(&item) && out.len() < SUMMARY_ITEMS {
                    out.push(item);
                }
            }
            out
        };
        let summary = memory::transcript::clip_at_word(&self.summary, SUMMARY_CHARS);
        if summary.is_empty() {
            return Err("the session summary has no summary paragraph".into());
        }
        Ok(SessionSummary {
            summary,
            decisions: list(self.decisions),
            next_steps: list(self.next_steps),
            problems: list(self.problems),
        })
    }

    /// The note's summary sections, each `## Heading` then its text.
    fn sections(&self) -> String {
        let mut text = String::new();
        for (heading, category) in SUMMARY_SECTIONS {
            text.push_str(&format!("## {heading}\n"));
            let items = match heading {
                "Decisions" => &self.decisions,
                "Next steps" => &self.next_steps,
                "Problems" => &self.problems,
                _ => {
                    text.push_str(&format!("{}\n\n", self.summary));
                    continue;
                }
            };
            if items.is_empty() {
                text.push_str("None.\n");
            }
            for item in items {
                text.push_str(&format!("- [{}] {item}\n", category.unwrap_or("note")));
            }
            text.push('\n');
        }
        text
    }
}

/// `item` without a leading `[category]` a model may have copied.
fn strip_category(item: &str) -> &str {
    match item.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        Some((category, rest)) if !category.contains(' ') => rest.trim_start(),
        _ => item,
    }
}

/// `text` with the summary sections of `summary` in place of any it has:
/// before `## Observations`, or at the end when it has none.
fn with_summary_sections(text: &str, summary: &SessionSummary) -> String {
    let body = memory::body_of(text);
    let front = &text[..text.len() - body.len()];
    let ours = |line: &str| {
        line.strip_prefix("## ")
            .is_some_and(|h| SUMMARY_SECTIONS.iter().any(|(s, _)| *s == h.trim()))
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut skipping = false;
    for line in body.split_inclusive('\n') {
        if line.starts_with("# ") || line.starts_with("## ") {
            skipping = ours(line);
        }
        if !skipping {
            kept.push(line);
        }
    }
    let mut body: String = kept.concat();
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    let sections = summary.sections();
    let at = body
        .match_indices("## Observations")
        .map(|(i, _)| i)
        .find(|i| *i == 0 || body[..*i].ends_with('\n'));
    match at {
        Some(i) => body.insert_str(i, &sections),
        None => {
            if !body.is_empty() && !body.ends_with("\n\n") {
                body.push('\n');
            }
            body.push_str(sections.trim_end());
            body.push('\n');
        }
    }
    format!("{front}{body}")
}

/// What is wrong with a session note a checkpoint wrote, one line each:
/// the schemas in force (the `session` schema's fields and sections), its
/// `type`, and with `summarized` the summary sections and `capture`.
pub fn note_problems(text: &str, summarized: bool) -> Vec<String> {
    let note = memory::parse("note", text);
    if note.frontmatter_span.is_none() {
        return vec!["the note has no frontmatter".into()];
    }
    let mut out = memory::schema::active().check(text);
    let field = |key: &str| {
        note.frontmatter
            .extra
            .get(key)
            .and_then(serde_yaml::Value::as_str)
            .map(str::to_owned)
    };
    if note.frontmatter.kind.as_deref() != Some("session") {
        out.push("the note's type is not `session`".into());
    }
    if summarized {
        let headings: Vec<&str> = memory::schema::headings(note.body(text)).collect();
        for (heading, _) in SUMMARY_SECTIONS {
            if !headings.contains(&heading) {
                out.push(format!("the summarized note has no `## {heading}` section"));
            }
        }
        if field("capture").as_deref() != Some("summarized") {
            out.push("the summarized note does not say `capture: summarized`".into());
        }
    }
    out
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
        // Claude Code's own summary names the next step in a section of
        // its own; the transcript may not.
        if let Some(step) = self.summary.as_deref().and_then(next_step_of_summary)
            && !d
                .next_steps
                .iter()
                .any(|said| step_key(said) == step_key(&step))
        {
            add("next-step", &[step]);
        }
        add("file", &d.files_edited);
        add("read", &d.files_read);
        out
    }
}

/// The next step a Claude Code compaction summary names in its section
/// (`9. Optional Next Step: ...`, on the heading's line or below it), in
/// one line of at most [`SUMMARY_ITEM_CHARS`] characters.
fn next_step_of_summary(summary: &str) -> Option<String> {
    let mut lines = summary.lines();
    // A section's heading: a short label that names the next step.
    let first = loop {
        let line = lines.next()?;
        if let Some((label, rest)) = line.split_once(':')
            && label.chars().count() <= 40
            && label.to_lowercase().contains("next step")
        {
            break rest.trim().to_string();
        }
    };
    let mut step = first;
    if step.is_empty() {
        // Below the heading, up to a blank line or the next section.
        for line in lines {
            let line = line.trim();
            let next_section = line
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if line.is_empty() && !step.is_empty() || next_section {
                break;
            }
            if !line.is_empty() {
                if !step.is_empty() {
                    step.push(' ');
                }
                step.push_str(line.trim_start_matches("- "));
            }
        }
    }
    // Claude Code wraps its summary in tags (`</summary>`): not the step's.
    let mut step = step.trim().to_string();
    while let Some(open) = step.rfind("</")
        && step.ends_with('>')
    {
        step.truncate(open);
        step = step.trim_end().to_string();
    }
    let step = memory::transcript::clip_at_word(&step, SUMMARY_ITEM_CHARS);
    (!step.is_empty()).then_some(step)
}

/// A next step as compared: lowercase, without a "next step:" of its own.
fn step_key(step: &str) -> String {
    let lower = step.trim().to_lowercase();
    lower
        .strip_prefix("next step:")
        .or_else(|| lower.strip_prefix("next steps:"))
        .unwrap_or(&lower)
        .trim()
        .trim_end_matches('.')
        .to_string()
}

impl Operations {
    /// Writes or updates the session's note; returns its path.
    pub fn checkpoint(&self, cp: &Checkpoint) -> Result<StorePath> {
        if cp.session_id.trim().is_empty() {
            return Err(Error::InvalidInput(
                "a checkpoint needs the session's id (session_id)".into(),
            ));
        }
        let folder = cp.folder.trim().trim_matches('/');
        let folder = StorePath::new(folder)
            .filter(|p| !p.is_root())
            .ok_or_else(|| Error::InvalidPath {
                path: cp.folder.clone(),
                why: "a checkpoint's folder must be a folder inside the store",
            })?;
        let summarized = match cp.summarized.clone().map(|s| s.checked()) {
            Some(Ok(summary)) => Some(summary),
            Some(Err(e)) => return Err(Error::InvalidInput(e)),
            None => None,
        };
        let key = session_key(&cp.session_id);
        let now = memory::format_timestamp(now_unix());
        // A conflict means the note changed under us: read it again once.
        for _ in 0..3 {
            let result = match self.session_note(&folder, &key)? {
                Some(path) => self
                    .update_note(&path, cp, summarized.as_ref(), &now)
                    .map(|()| path),
                None => self.new_note(&folder, cp, summarized.as_ref(), &key, &now),
            };
            match result {
                Err(Error::Conflict { .. } | Error::Exists { .. }) => continue,
                other => return other,
            }
        }
        Err(Error::Conflict {
            path: format!("{folder}/*-{key}.md"),
        })
    }

    /// The note of the session with this key in `dir`, if one exists.
    fn session_note(&self, dir: &StorePath, key: &str) -> Result<Option<StorePath>> {
        let entries = match self.store.read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let suffix = format!("-{key}.md");
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == FileKind::File)
            .filter(|e| e.name.to_string_lossy().ends_with(&suffix))
            .filter_map(|e| dir.join(&e.name))
            .min())
    }

    fn new_note(
        &self,
        dir: &StorePath,
        cp: &Checkpoint,
        summarized: Option<&SessionSummary>,
        key: &str,
        now: &str,
    ) -> Result<StorePath> {
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
        field(
            "capture",
            if summarized.is_some() {
                "summarized"
            } else {
                "extractive"
            },
        );
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
        if let Some(summary) = summarized {
            text = with_summary_sections(&text, summary);
        }
        let slug = slug(ask);
        let path = format!("{dir}/{date}-{slug}-{key}.md");
        self.create(&path, &text, false)?;
        self.store_path(&path)
    }

    fn update_note(
        &self,
        path: &StorePath,
        cp: &Checkpoint,
        summarized: Option<&SessionSummary>,
        now: &str,
    ) -> Result<()> {
        let shown = path.to_string();
        let (real, bytes, text) = self.read_text(path, &shown)?;
        let mut fields = vec![
            ("ended_or_compacted", now.to_string()),
            ("status", "open".to_string()),
        ];
        if summarized.is_some() {
            fields.push(("capture", "summarized".to_string()));
        }
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
        if let Some(summary) = summarized {
            new = with_summary_sections(&new, summary);
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
    fn a_next_step_the_transcript_said_is_not_observed_twice() {
        let mut cp = Checkpoint {
            session_id: "s".into(),
            summary: Some("9. Optional Next Step: Confirm the list with Priya.</summary>".into()),
            ..Checkpoint::default()
        };
        cp.digest.next_steps = vec!["Next step: confirm the list with Priya".into()];
        let steps: Vec<String> = cp
            .observations()
            .into_iter()
            .filter(|l| l.starts_with("- [next-step]"))
            .collect();
        assert_eq!(steps.len(), 1, "{steps:?}");
    }

    #[test]
    fn the_next_step_of_a_compact_summary_is_an_observation() {
        for (summary, step) in [
            (
                "1. Primary Request: build X\n9. Optional Next Step: Benchmark the Rust billing job.",
                Some("Benchmark the Rust billing job."),
            ),
            (
                "8. Current Work:\n   the parser\n\n9. Optional Next Step:\n   Wire the parser\n   into the CLI.\n\n10. Other: x",
                Some("Wire the parser into the CLI."),
            ),
            (
                "9. Optional Next Step: confirm the list with Priya.</summary>",
                Some("confirm the list with Priya."),
            ),
            ("1. Primary Request: build X", None),
            (
                "1. Primary Request: plan the next steps of the parser: carefully",
                None,
            ),
        ] {
            assert_eq!(next_step_of_summary(summary).as_deref(), step, "{summary}");
        }
    }

    #[test]
    fn the_analysis_of_a_compact_summary_is_left_out() {
        let raw = "<analysis>\nLet me think about the chat.\n</analysis>\n\n<summary>\n1. Primary request: ship it.\n</summary>";
        assert_eq!(without_analysis(raw), "1. Primary request: ship it.");
        assert_eq!(without_analysis("plain summary"), "plain summary");
        assert_eq!(without_analysis("<analysis>unclosed"), "");
    }

    fn summary() -> SessionSummary {
        SessionSummary {
            summary: "Made the importer skip binary files.".into(),
            decisions: vec!["[decision] Check for NUL bytes, not extensions.".into()],
            next_steps: vec!["- Add a test for an empty file.".into(), "".into()],
            problems: Vec::new(),
        }
        .checked()
        .expect("a summary")
    }

    #[test]
    fn a_model_answer_is_read_from_bare_fenced_or_wrapped_json() {
        let bare =
            r#"{"summary": "Did X.", "decisions": ["A"], "next_steps": [], "problems": ["B"]}"#;
        let fenced = format!("Here it is:\n```json\n{bare}\n```\nHope that helps.");
        for answer in [bare.to_string(), fenced] {
            let s = SessionSummary::from_answer(&answer).expect("read");
            assert_eq!(s.summary, "Did X.");
            assert_eq!(s.decisions, vec!["A"]);
            assert_eq!(s.problems, vec!["B"]);
        }
        let missing = SessionSummary::from_answer(r#"{"decisions": ["A"]}"#);
        assert!(missing.unwrap_err().contains("no summary paragraph"));
        assert!(SessionSummary::from_answer("I cannot do that.").is_err());
        assert!(SessionSummary::from_answer(r#"{"summary": 3}"#).is_err());
        let long = SessionSummary {
            summary: "word ".repeat(2000),
            next_steps: (0..30).map(|i| format!("step {i}\nmore")).collect(),
            ..Default::default()
        }
        .checked()
        .expect("read");
        assert!(long.summary.chars().count() <= SUMMARY_CHARS + 1);
        assert_eq!(long.next_steps.len(), SUMMARY_ITEMS);
        assert_eq!(long.next_steps[0], "step 0 more");
        assert_eq!(summary().next_steps, vec!["Add a test for an empty file."]);
        assert_eq!(
            summary().decisions,
            vec!["Check for NUL bytes, not extensions."]
        );
    }

    const NOTE: &str = "---\nid: 7d6c1c56-0000-4000-8000-000000000001\ntitle: \"Session: x\"\ntype: session\nstatus: open\nstarted: 2026-11-20T09:00:00Z\nended_or_compacted: 2026-11-20T10:00:00Z\ncapture: extractive\n---\n# Session: x\n\n## Observations\n- [asked] x\n\n## Summary at 2026-11-20T10:00:00Z\nClaude's own.\n";

    #[test]
    fn summary_sections_go_before_the_observations_and_replace_older_ones() {
        let once = with_summary_sections(NOTE, &summary());
        let sections = "## Summary\nMade the importer skip binary files.\n\n## Decisions\n- [decision] Check for NUL bytes, not extensions.\n\n## Next steps\n- [next-step] Add a test for an empty file.\n\n## Problems\nNone.\n\n## Observations\n";
        assert!(
            once.contains(&format!("# Session: x\n\n{sections}")),
            "{once}"
        );
        assert!(once.ends_with("## Summary at 2026-11-20T10:00:00Z\nClaude's own.\n"));
        let newer = SessionSummary {
            summary: "Shipped it.".into(),
            ..summary()
        };
        let twice = with_summary_sections(&once, &newer);
        assert_eq!(twice.matches("## Decisions").count(), 1, "{twice}");
        assert!(twice.contains("## Summary\nShipped it.\n"), "{twice}");
        assert!(!twice.contains("Made the importer"), "{twice}");
        assert_eq!(with_summary_sections(&twice, &newer), twice);

        let without = "---\ntitle: t\n---\nbody";
        let added = with_summary_sections(without, &summary());
        assert!(
            added.starts_with("---\ntitle: t\n---\nbody\n\n## Summary\n"),
            "{added}"
        );
        assert!(added.ends_with("## Problems\nNone.\n"), "{added}");
    }

    #[test]
    fn a_session_note_is_checked_against_the_session_schema() {
        assert!(
            note_problems(NOTE, false).is_empty(),
            "{:?}",
            note_problems(NOTE, false)
        );
        let summarized = memory::set_fields(
            &with_summary_sections(NOTE, &summary()),
            &[("capture", "summarized".into())],
        )
        .expect("set")
        .expect("changed");
        assert!(
            note_problems(&summarized, true).is_empty(),
            "{:?}",
            note_problems(&summarized, true)
        );
        let problems = note_problems(NOTE, true);
        assert!(
            problems.iter().any(|p| p.contains("`## Summary`")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("capture: summarized")),
            "{problems:?}"
        );
        let broken = NOTE
            .replace("type: session", "type: note")
            .replace("started: 2026-11-20T09:00:00Z\n", "")
            .replace("## Observations", "## Notes");
        let problems = note_problems(&broken, false);
        assert!(
            problems.iter().any(|p| p.contains("not `session`")),
            "{problems:?}"
        );
        assert_eq!(note_problems("no frontmatter", false).len(), 1);
        let bare_session = NOTE
            .replace("started: 2026-11-20T09:00:00Z\n", "")
            .replace("## Observations", "## Notes");
        let problems = note_problems(&bare_session, false);
        assert!(
            problems.iter().any(|p| p.contains("`started`")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("`## Observations`")),
            "{problems:?}"
        );
    }
}
