//! The session brief and the checkpoint, on a temp store without a kernel
//! mount: what the brief shows and leaves out, how it ranks and caps, and
//! how a checkpoint writes one note per session that the next brief picks
//! up.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mnemofs::index::Index;
use mnemofs::memory::schema::SchemaSet;
use mnemofs::memory::transcript;
use mnemofs::ops::{Checkpoint, DirectWriter, Operations, ServedBy};
use mnemofs::store::Store;
use mnemofs::views::Views;

const INDEX_WAIT: Duration = Duration::from_secs(60);

fn seed(root: &Path, files: &[(&str, String)]) {
    for (rel, text) in files {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("seed");
    }
}

fn note(kind: &str, title: &str, status: &str, extra: &str, body: &str) -> String {
    format!("---\ntitle: {title}\ntype: {kind}\nstatus: {status}\n{extra}---\n{body}\n")
}

fn operations(root: &Path) -> (Operations, Index) {
    let store = Arc::new(Store::open(root).expect("store"));
    let index = Index::in_memory(Arc::clone(&store)).expect("index");
    assert!(index.wait_idle(INDEX_WAIT), "the index did not catch up");
    let writer = Arc::new(DirectWriter::new(Arc::clone(&store)).with_index(index.clone()));
    let ops = Operations::new(
        store,
        index.clone(),
        Views::new(index.clone()),
        writer,
        ServedBy::Local,
    );
    (ops, index)
}

fn section<'a>(brief: &'a mnemofs::ops::Brief, title: &str) -> Vec<&'a str> {
    brief
        .sections
        .iter()
        .find(|s| s.title == title)
        .map(|s| s.items.iter().map(|i| i.title.as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn the_brief_shows_what_is_open_and_leaves_out_what_is_done() {
    let dir = tempfile::tempdir().expect("tempdir");
    let soon = mnemofs::memory::format_timestamp(now() + 3600);
    let later = mnemofs::memory::format_timestamp(now() + 90 * 86_400);
    seed(
        dir.path(),
        &[
            (
                "tasks/a.md",
                note("task", "Wire the hook", "active", "", ""),
            ),
            (
                "tasks/b.md",
                note("task", "Port the parser", "in-progress", "", ""),
            ),
            ("tasks/c.md", note("task", "Ship 0.1", "done", "", "")),
            (
                "decisions/d.md",
                note("decision", "Use tantivy", "open", "", ""),
            ),
            (
                "decisions/e.md",
                note("decision", "Use sqlite", "accepted", "", ""),
            ),
            (
                "sessions/s.md",
                note(
                    "session",
                    "Importer session",
                    "open",
                    "",
                    "- [next-step] add a test for empty files\n- [problem] fsync is slow\n- [decision] check NUL bytes",
                ),
            ),
            (
                "reminders/r.md",
                format!(
                    "---\ntitle: Call the bank\ncategory: reminders\ndue_at: {soon}\n---\ncall\n"
                ),
            ),
            (
                "reminders/far.md",
                format!(
                    "---\ntitle: Renew the passport\ncategory: reminders\ndue_at: {later}\n---\nrenew\n"
                ),
            ),
            (
                "notes/plain.md",
                "# A plain note\nabout nothing in particular\n".into(),
            ),
        ],
    );
    let (ops, index) = operations(dir.path());
    let brief = ops.brief(None, None);
    let mut tasks = section(&brief, "Active tasks");
    tasks.sort();
    assert_eq!(tasks, ["Port the parser", "Wire the hook"], "{brief:#?}");
    assert_eq!(section(&brief, "Open decisions"), ["Use tantivy"]);
    assert_eq!(section(&brief, "Latest sessions"), ["Importer session"]);
    assert_eq!(section(&brief, "Reminders due soon"), ["Call the bank"]);
    assert_eq!(section(&brief, "Recent activity"), ["A plain note"]);
    let text = brief.to_text();
    assert!(!text.starts_with('{'));
    assert!(
        text.contains("[next-step] add a test for empty files"),
        "{text}"
    );
    assert!(text.contains("[problem] fsync is slow"), "{text}");
    // The last session's decisions are shown with its next steps.
    assert!(text.contains("[decision] check NUL bytes"), "{text}");
    assert!(
        !text.contains("Ship 0.1") && !text.contains("Use sqlite"),
        "{text}"
    );
    assert!(!text.contains("Renew the passport"), "{text}");
    assert!(
        text.contains("search/<query>/") && text.contains("mnemofs search"),
        "{text}"
    );
    index.shutdown();
}

/// Preferences written at different times but copied in at once (a
/// restore, an import): the one written last comes first, by its
/// `created_at`, not by when its file was touched.
#[test]
fn the_newest_preference_by_when_it_was_written_comes_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pref = |title: &str, created: &str| {
        format!("---\ntitle: {title}\ncategory: preferences\ncreated_at: {created}\n---\nx\n")
    };
    let mut files = vec![(
        "preferences/neovim.md".to_string(),
        pref("Moved to Neovim", "2026-11-10T09:00:00Z"),
    )];
    for i in 0..9 {
        files.push((
            format!("preferences/old-{i}.md"),
            pref(
                &format!("Old {i}"),
                &format!("2026-10-0{}T09:00:00Z", i + 1),
            ),
        ));
    }
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    seed(dir.path(), &files);
    // The newest memory's file is the one touched longest ago.
    fs::File::options()
        .write(true)
        .open(dir.path().join("preferences/neovim.md"))
        .expect("open")
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .expect("mtime");
    let (ops, index) = operations(dir.path());
    let brief = ops.brief(None, None);
    let wishes = section(&brief, "Preferences and feedback");
    assert_eq!(wishes.first(), Some(&"Moved to Neovim"), "{wishes:?}");
    index.shutdown();
}

#[test]
fn memories_of_the_sessions_project_come_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    for i in 0..5 {
        files.push((
            format!("tasks/other-{i}.md"),
            note(
                "task",
                &format!("Other {i}"),
                "active",
                "project: elsewhere\n",
                "",
            ),
        ));
    }
    files.push((
        "tasks/mine.md".into(),
        note("task", "Mine by project", "active", "project: my-app\n", ""),
    ));
    files.push((
        "tasks/cwd.md".into(),
        note(
            "task",
            "Mine by cwd",
            "active",
            "cwd: /home/u/code/my-app\n",
            "",
        ),
    ));
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    seed(dir.path(), &files);
    let (ops, index) = operations(dir.path());
    let brief = ops.brief(Some("/home/u/code/my-app/src"), None);
    let tasks = section(&brief, "Active tasks");
    let mut first: Vec<&str> = tasks[..2].to_vec();
    first.sort();
    assert_eq!(first, ["Mine by cwd", "Mine by project"], "{tasks:?}");
    assert_eq!(brief.project.as_deref(), Some("src"));
    index.shutdown();
}

#[test]
fn thousands_of_active_tasks_stay_under_the_cap_and_say_how_many_were_left_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files: Vec<(String, String)> = (0..3000)
        .map(|i| {
            (
                format!("tasks/t{i:04}.md"),
                note(
                    "task",
                    &format!("Task number {i} with a longish title to fill the brief"),
                    "active",
                    "",
                    "",
                ),
            )
        })
        .collect();
    let files: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    seed(dir.path(), &files);
    let (ops, index) = operations(dir.path());
    let brief = ops.brief(None, None);
    let text = brief.to_text();
    assert!(
        text.chars().count() <= 8_000,
        "{} chars",
        text.chars().count()
    );
    let tasks = &brief.sections[0];
    assert_eq!(tasks.items.len() + tasks.more, 3000);
    assert!(text.contains(&format!("and {} more", tasks.more)), "{text}");
    index.shutdown();
}

const TRANSCRIPT: &str = r#"{"type":"user","timestamp":"2026-11-20T09:00:00Z","message":{"role":"user","content":"Make the importer skip binary files."}}
{"type":"assistant","timestamp":"2026-11-20T09:01:00Z","message":{"role":"assistant","content":[{"type":"text","text":"Sniffing the extension didn't work. We decided to check for NUL bytes."},{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"/src/import.rs"}}]}}
{"type":"assistant","timestamp":"2026-11-20T09:03:00Z","message":{"role":"assistant","content":"Next step: add a test for an empty file."}}
"#;

#[test]
fn a_checkpoint_writes_one_note_per_session_that_the_next_brief_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ops, index) = operations(dir.path());
    let mut cp = Checkpoint {
        session_id: "abc-123".into(),
        cwd: Some("/home/u/code/importer".into()),
        trigger: Some("auto".into()),
        summary: None,
        digest: transcript::digest(TRANSCRIPT),
        ..Default::default()
    };
    let first = ops.checkpoint(&cp).expect("first checkpoint");
    assert!(
        first
            .to_string()
            .starts_with("sessions/2026-11-20-make-the-importer"),
        "{first}"
    );
    let text = fs::read_to_string(dir.path().join(first.as_path())).expect("note");
    for want in [
        "type: session",
        "claude_session_id: abc-123",
        "project: importer",
        "- [decision] We decided to check for NUL bytes.",
        "- [attempted] Sniffing the extension didn't work.",
        "- [next-step] Next step: add a test for an empty file.",
        "- [file] /src/import.rs",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    assert!(
        SchemaSet::builtin().check(&text).is_empty(),
        "{:?}",
        SchemaSet::builtin().check(&text)
    );

    // The same session again, after more work: the same note, updated.
    let more = format!(
        "{TRANSCRIPT}{}\n",
        r#"{"type":"assistant","timestamp":"2026-11-20T10:00:00Z","message":{"role":"assistant","content":"Next step: release 0.2 after the review."}}"#
    );
    cp.digest = transcript::digest(&more);
    let second = ops.checkpoint(&cp).expect("second checkpoint");
    assert_eq!(first, second);
    let sessions: Vec<_> = fs::read_dir(dir.path().join("sessions"))
        .expect("sessions")
        .collect();
    assert_eq!(sessions.len(), 1);
    let text = fs::read_to_string(dir.path().join(second.as_path())).expect("note");
    assert!(
        text.contains("- [next-step] Next step: release 0.2 after the review."),
        "{text}"
    );
    assert_eq!(text.matches("- [decision] We decided").count(), 1, "{text}");

    assert!(index.wait_idle(INDEX_WAIT));
    let brief = ops.brief(Some("/home/u/code/importer"), None).to_text();
    assert!(brief.contains("release 0.2 after the review"), "{brief}");
    index.shutdown();
}

#[test]
fn a_checkpoint_without_a_session_id_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ops, index) = operations(dir.path());
    assert!(ops.checkpoint(&Checkpoint::default()).is_err());
    assert!(!dir.path().join("sessions").exists());
    index.shutdown();
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[test]
fn preferences_the_last_sessions_decisions_and_untracked_tasks_are_in_the_brief() {
    let dir = tempfile::tempdir().expect("tempdir");
    seed(
        dir.path(),
        &[
            (
                "preferences/style.md",
                "---\ntitle: No emojis in answers\ncategory: preferences\n---\nKeep answers short.\n".into(),
            ),
            (
                "feedback/review.md",
                "---\ntitle: Explain the why in reviews\ncategory: feedback\n---\nSay why.\n".into(),
            ),
            (
                "tasks/loose.md",
                "---\ntitle: Tidy the fixtures\ntype: task\n---\nNo status given.\n".into(),
            ),
            (
                "sessions/2026-11-20-s.md",
                "---\ntitle: \"Session: importer\"\ntype: session\nstatus: open\nended_or_compacted: 2026-11-20T10:00:00Z\n---\n## Observations\n- [decision] We decided to check for NUL bytes.\n- [next-step] Add a test for an empty file.\n".into(),
            ),
        ],
    );
    let (ops, _index) = operations(dir.path());
    let brief = ops.brief(None, None);
    let wishes = section(&brief, "Preferences and feedback");
    assert!(wishes.contains(&"No emojis in answers"), "{brief:?}");
    assert!(wishes.contains(&"Explain the why in reviews"), "{brief:?}");
    assert_eq!(brief.sections[0].title, "Preferences and feedback");
    assert!(
        section(&brief, "Recent activity").contains(&"Tidy the fixtures"),
        "{brief:?}"
    );
    let text = brief.to_markdown();
    assert!(
        text.contains("[decision] We decided to check for NUL bytes."),
        "{text}"
    );
}
