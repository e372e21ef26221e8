//! `mnemofs brief` and `mnemofs checkpoint` run the way Claude Code runs
//! its SessionStart and PreCompact hooks: the hook's JSON on stdin, a
//! transcript in Claude Code's JSONL format, output on stdout, exit 0
//! whatever happens. With and without a daemon; the brief is also
//! `.mnemofs/brief.md` on the mount.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Mount, MountOptions, bin};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `mnemofs <args>` with `stdin` piped in.
fn hook(args: &[&str], store: &Path, state: &Path, stdin: &[u8]) -> Output {
    hook_with(args, store, state, stdin, &[])
}

/// [`hook`] with more environment variables.
fn hook_with(
    args: &[&str],
    store: &Path,
    state: &Path,
    stdin: &[u8],
    env: &[(&str, &Path)],
) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .env("MNEMOFS_LOG", "warn")
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mnemofs");
    let mut input = child.stdin.take().expect("stdin");
    // A hook may close stdin early; a failed write is the test's point then.
    let _ = input.write_all(stdin);
    drop(input);
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the hook hung");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn stdout(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "hooks must exit 0; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn seed(store: &Path) {
    let files = [
        (
            "projects/importer/task-a.md",
            "---\ntitle: Wire the import hook\ntype: task\nstatus: active\nproject: importer\n---\n",
        ),
        (
            "tasks/done.md",
            "---\ntitle: Ship version one\ntype: task\nstatus: done\n---\n",
        ),
        (
            "decisions/db.md",
            "---\ntitle: Pick the storage engine\ntype: decision\nstatus: open\n---\n",
        ),
        (
            "decisions/old.md",
            "---\ntitle: Use a spreadsheet\ntype: decision\nstatus: accepted\n---\n",
        ),
    ];
    for (rel, text) in files {
        let path = store.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("seed");
    }
}

const TRANSCRIPT: &str = concat!(
    r#"{"type":"user","timestamp":"2026-11-20T09:00:00Z","sessionId":"sess-42","message":{"role":"user","content":"Make the importer skip binary files."}}"#,
    "\n",
    r#"{"type":"assistant","timestamp":"2026-11-20T09:01:00Z","message":{"role":"assistant","content":[{"type":"text","text":"Checking the extension didn't work. We decided to look for NUL bytes."},{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/code/importer/src/lib.rs","old_string":"a","new_string":"b"}}]}}"#,
    "\n",
    r#"{"type":"user","timestamp":"2026-11-20T09:02:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"error: file changed on disk","is_error":true}]}}"#,
    "\n",
    r#"{"type":"assistant","timestamp":"2026-11-20T09:03:00Z","message":{"role":"assistant","content":"Next step: add a test for an empty file."}}"#,
    "\n",
);

#[test]
fn brief_and_checkpoint_work_as_claude_code_hooks_without_a_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    seed(&store);
    let start = br#"{"session_id":"sess-42","transcript_path":"/nonexistent","cwd":"/code/importer","hook_event_name":"SessionStart","source":"startup"}"#;
    let text = stdout(&hook(&["brief"], &store, &state, start));
    assert!(!text.starts_with('{'), "{text}");
    assert!(text.chars().count() <= 10_000);
    assert!(text.contains("Wire the import hook"), "{text}");
    assert!(text.contains("Pick the storage engine"), "{text}");
    assert!(
        !text.contains("Ship version one"),
        "done tasks are left out: {text}"
    );
    assert!(
        !text.contains("Use a spreadsheet"),
        "accepted decisions are left out: {text}"
    );

    // PreCompact: the transcript becomes the session's note.
    let transcript = dir.path().join("transcript.jsonl");
    fs::write(&transcript, TRANSCRIPT).expect("transcript");
    let pre = format!(
        r#"{{"session_id":"sess-42","transcript_path":"{}","cwd":"/code/importer","hook_event_name":"PreCompact","trigger":"auto","custom_instructions":""}}"#,
        transcript.display()
    );
    let said = stdout(&hook(&["checkpoint"], &store, &state, pre.as_bytes()));
    assert!(said.contains("sessions/2026-11-20-"), "{said}");
    let notes: Vec<_> = fs::read_dir(store.join("sessions"))
        .expect("sessions")
        .collect();
    assert_eq!(notes.len(), 1);
    // Again, after compaction: the same note.
    stdout(&hook(&["checkpoint"], &store, &state, pre.as_bytes()));
    let notes: Vec<_> = fs::read_dir(store.join("sessions"))
        .expect("sessions")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = fs::read_to_string(&notes[0]).expect("note");
    for want in [
        "type: session",
        "claude_session_id: sess-42",
        "- [decision] We decided to look for NUL bytes.",
        "- [attempted] Checking the extension didn't work.",
        "- [problem] error: file changed on disk",
        "- [next-step] Next step: add a test for an empty file.",
        "- [file] /code/importer/src/lib.rs",
    ] {
        assert!(note.contains(want), "{want:?} missing from:\n{note}");
    }

    // The next session's brief carries the checkpoint's next step.
    let text = stdout(&hook(&["brief"], &store, &state, start));
    assert!(
        text.contains("[next-step] Next step: add a test for an empty file."),
        "{text}"
    );
    let json = stdout(&hook(&["brief", "--format", "json"], &store, &state, b""));
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("json brief");
    assert!(parsed["sections"].is_array(), "{parsed}");
}

/// A stand-in for `claude -p`: it keeps its arguments, its environment's
/// MNEMOFS_CHECKPOINT_CHILD and its stdin beside it, and prints `answer`.
fn fake_claude(dir: &Path, answer: &str) -> std::path::PathBuf {
    let script = dir.join("claude");
    fs::write(dir.join("answer"), answer).expect("answer");
    let d = dir.display();
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {d}/args\necho \"$MNEMOFS_CHECKPOINT_CHILD\" > {d}/child\ncat > {d}/prompt\ncat {d}/answer\n"
        ),
    )
    .expect("script");
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    script
}

#[test]
fn a_summarized_checkpoint_adds_the_model_summary_to_the_same_note() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    let project = dir.path().join("importer");
    fs::create_dir_all(&store).expect("mkdir");
    fs::create_dir_all(project.join(".claude")).expect("mkdir");
    fs::write(
        project.join(".claude/settings.json"),
        r#"{"mnemofs": {"captureFolder": "notes/s", "captureMode": "summarized"}}"#,
    )
    .expect("settings");
    let transcript = dir.path().join("transcript.jsonl");
    fs::write(&transcript, TRANSCRIPT).expect("transcript");
    let input = |event: &str, session: &str| {
        format!(
            r#"{{"session_id":"{session}","transcript_path":"{}","cwd":"{}","hook_event_name":"{event}","trigger":"manual"}}"#,
            transcript.display(),
            project.display()
        )
    };
    let answer = serde_json::json!({
        "type": "result", "subtype": "success", "is_error": false,
        "result": "```json\n{\"summary\": \"Made the importer skip binary files.\", \"decisions\": [\"Look for NUL bytes.\"], \"next_steps\": [\"Test an empty file.\"], \"problems\": []}\n```",
    });
    let claude = fake_claude(dir.path(), &answer.to_string());
    let env = [("MNEMOFS_CLAUDE", claude.as_path())];

    let out = hook_with(
        &["checkpoint"],
        &store,
        &state,
        input("PreCompact", "s-1").as_bytes(),
        &env,
    );
    let said = stdout(&out);
    assert!(
        said.contains("session checkpoint in notes/s/2026-11-20-"),
        "{said}"
    );
    assert!(
        said.contains("session summary in notes/s/2026-11-20-"),
        "{said}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "the note fits its schema"
    );
    let notes: Vec<_> = fs::read_dir(store.join("notes/s"))
        .expect("notes/s")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = fs::read_to_string(&notes[0]).expect("note");
    for want in [
        "capture: summarized",
        "## Summary\nMade the importer skip binary files.\n\n## Decisions\n- [decision] Look for NUL bytes.\n\n## Next steps\n- [next-step] Test an empty file.\n\n## Problems\nNone.\n\n## Observations\n",
        "- [next-step] Next step: add a test for an empty file.",
    ] {
        assert!(note.contains(want), "{want:?} missing from:\n{note}");
    }
    // What `claude` was asked, and how.
    let args = fs::read_to_string(dir.path().join("args")).expect("args");
    let args: Vec<&str> = args.lines().collect();
    for (flag, value) in [
        ("--model", "haiku"),
        ("--tools", ""),
        ("--output-format", "json"),
    ] {
        let at = args
            .iter()
            .position(|a| *a == flag)
            .unwrap_or_else(|| panic!("{flag}: {args:?}"));
        assert_eq!(args.get(at + 1), Some(&value), "{args:?}");
    }
    assert!(
        args.contains(&"--safe-mode") && args.contains(&"-p"),
        "{args:?}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("child")).expect("env"),
        "1\n"
    );
    let prompt = fs::read_to_string(dir.path().join("prompt")).expect("prompt");
    assert!(
        prompt.contains("User: Make the importer skip binary files."),
        "{prompt}"
    );
    assert!(prompt.contains("\"next_steps\""), "{prompt}");
    for noise in ["file changed on disk", "/code/importer/src/lib.rs"] {
        assert!(!prompt.contains(noise), "{noise} in {prompt}");
    }

    // PostCompact follows with the same transcript: no second summary.
    fs::remove_file(dir.path().join("args")).expect("rm");
    stdout(&hook_with(
        &["checkpoint"],
        &store,
        &state,
        input("PostCompact", "s-1").as_bytes(),
        &env,
    ));
    assert!(
        !dir.path().join("args").exists(),
        "claude ran at PostCompact"
    );

    // A summary that cannot be had leaves the extractive note, and says so.
    let missing = [("MNEMOFS_CLAUDE", Path::new("/nonexistent/claude"))];
    fake_claude(
        dir.path(),
        r#"{"type":"result","is_error":false,"result":"I'd rather not."}"#,
    );
    for (session, env) in [("s-2", &missing[..]), ("s-3", &env[..])] {
        let out = hook_with(
            &["checkpoint"],
            &store,
            &state,
            input("PreCompact", session).as_bytes(),
            env,
        );
        let said = stdout(&out);
        assert!(said.contains("session checkpoint in notes/s/"), "{said}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("mnemofs: no summary for notes/s/"), "{err}");
    }
    assert_eq!(
        fs::read_dir(store.join("notes/s"))
            .expect("notes/s")
            .count(),
        3
    );

    // Under the summarizing `claude`, the hooks step aside.
    let child = [("MNEMOFS_CHECKPOINT_CHILD", Path::new("1"))];
    for args in [&["checkpoint"][..], &["brief"][..]] {
        let out = hook_with(
            args,
            &store,
            &state,
            input("PreCompact", "s-4").as_bytes(),
            &child,
        );
        assert_eq!(stdout(&out), "", "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
    assert_eq!(
        fs::read_dir(store.join("notes/s"))
            .expect("notes/s")
            .count(),
        3
    );
}

#[test]
fn on_garbage_or_without_a_store_the_brief_says_so_and_the_checkpoint_fails_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-store");
    let state = dir.path().join("state");
    for (input, why) in [
        (&b"\xff\xfe not json {"[..], "not UTF-8"),
        (b"{not json", "not JSON"),
        (b"", "empty"),
        (b"[1,2,3]", "not a JSON object"),
    ] {
        let text = stdout(&hook(&["brief"], &missing, &state, input));
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.starts_with("mnemofs: no memory brief"), "{text}");
        // Nothing was written, and the user is told why: exit 1, one line.
        let out = hook(&["checkpoint"], &missing, &state, input);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("mnemofs: no checkpoint written: "), "{err}");
        assert!(err.contains(why), "{why}: {err}");
    }
    assert!(!missing.exists(), "a hook created the store");
}

/// PostCompact's input carries Claude Code's own summary: a transcript
/// that cannot be read does not cost it, and its next step reaches the
/// note's observations, which the brief shows.
#[test]
fn a_compact_summary_is_kept_without_its_transcript_and_its_next_step_is_observed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    let input = serde_json::json!({
        "session_id": "sess-9",
        "hook_event_name": "PostCompact",
        "transcript_path": tmp.path().join("gone.jsonl"),
        "compact_summary": format!(
            "1. Primary Request and Intent: speed up billing\n{}\n9. Optional Next Step: Benchmark the Rust billing job against the Go one.",
            "x".repeat(2 << 20)
        ),
    });
    let out = hook(
        &["checkpoint"],
        &store,
        &state,
        input.to_string().as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = stdout(&out);
    let path = said
        .trim()
        .strip_prefix("mnemofs: session checkpoint in ")
        .unwrap_or_else(|| panic!("{said}"));
    let note = fs::read_to_string(store.join(path)).expect("the note");
    assert!(
        note.contains("- [next-step] Benchmark the Rust billing job against the Go one."),
        "{}",
        &note[note.len().saturating_sub(400)..]
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gone.jsonl"), "{err}");
}

/// A transcript path that names a FIFO (or a device) is refused at once:
/// opening it would wait for a writer and hold up the compaction.
#[test]
fn a_transcript_that_is_not_a_regular_file_is_refused_without_waiting() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    let fifo = tmp.path().join("transcript.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for path in [fifo.as_path(), Path::new("/dev/zero")] {
        let input = serde_json::json!({
            "session_id": "sess-fifo",
            "hook_event_name": "PreCompact",
            "transcript_path": path,
        });
        let out = hook(
            &["checkpoint"],
            &store,
            &state,
            input.to_string().as_bytes(),
        );
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not a regular file"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn through_a_daemon_the_brief_is_a_file_on_the_mount_and_checkpoints_go_through_it() {
    let m = Mount::with_options(MountOptions::default());
    seed(&m.store);
    let status = m.m(".mnemofs/status.json");
    assert!(
        common::poll_until(Duration::from_secs(30), || fs::read_to_string(&status)
            .is_ok_and(|s| s.contains("\"documents\": 4"))),
        "the daemon did not index the seeded store"
    );
    let on_mount = fs::read_to_string(m.m(".mnemofs/brief.md")).expect("brief.md");
    assert!(on_mount.starts_with("# Session brief"), "{on_mount}");
    assert!(on_mount.contains("Pick the storage engine"), "{on_mount}");

    let transcript = m.state.join("transcript.jsonl");
    fs::write(&transcript, TRANSCRIPT).expect("transcript");
    let pre = format!(
        r#"{{"session_id":"sess-7","transcript_path":"{}","cwd":"/code/importer","trigger":"manual"}}"#,
        transcript.display()
    );
    // No --state-dir needed: but pass the daemon's to be explicit.
    let said = stdout(&hook(&["checkpoint"], &m.store, &m.state, pre.as_bytes()));
    let path = said
        .trim()
        .strip_prefix("mnemofs: session checkpoint in ")
        .unwrap_or_else(|| panic!("{said}"));
    // Written through the mount: it is there, as the daemon's writer made it.
    let note = fs::read_to_string(m.m(path)).expect("the note, on the mount");
    assert!(note.contains("claude_session_id: sess-7"), "{note}");
    // The next brief shows it once the daemon has indexed the note.
    let start = br#"{"session_id":"sess-8","cwd":"/code/importer","source":"resume"}"#;
    let mut text = String::new();
    let shown = common::poll_until(Duration::from_secs(30), || {
        text = stdout(&hook(&["brief"], &m.store, &m.state, start));
        text.contains("add a test for an empty file")
    });
    assert!(shown, "{text}");
}

/// The README's setup in Claude Code: `mnemofs mcp` (here `mnemofs tool`,
/// the same session) runs for the agent and no daemon does. The hooks
/// and commands started meanwhile reach the store through it: the
/// checkpoint is written, and a memory the agent just wrote is found at
/// once by another process, and the other way round.
#[test]
fn hooks_and_commands_reach_a_store_that_an_agents_tool_holds() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    seed(&store);
    let mut tool = Command::new(bin())
        .arg("tool")
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .env("MNEMOFS_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn mnemofs tool");
    let mut to_tool = tool.stdin.take().expect("stdin");
    let mut from_tool = BufReader::new(tool.stdout.take().expect("stdout"));
    let mut ask = |command: &str| -> String {
        writeln!(to_tool, "{command}").expect("ask the tool");
        let mut line = String::new();
        from_tool.read_line(&mut line).expect("the tool answers");
        line
    };
    let created = ask(
        r#"{"command": "create", "path": "/memories/notes/freeze.md", "file_text": "The billing deploy freeze starts Friday.\n"}"#,
    );
    assert!(!created.contains("\"is_error\":true"), "{created}");

    // Another process, at once: it finds the memory the agent just wrote.
    let found = hook(
        &["search", "when does the deploy freeze start?"],
        &store,
        &state,
        b"",
    );
    assert!(found.status.success(), "{found:?}");
    assert!(stdout(&found).contains("notes/freeze.md"), "{found:?}");

    // The PreCompact hook writes its note through the tool's process.
    let transcript = dir.path().join("transcript.jsonl");
    fs::write(&transcript, TRANSCRIPT).expect("transcript");
    let pre = format!(
        r#"{{"session_id":"sess-7","transcript_path":"{}","cwd":"/code/importer","hook_event_name":"PreCompact","trigger":"manual","custom_instructions":""}}"#,
        transcript.display()
    );
    let said = hook(&["checkpoint"], &store, &state, pre.as_bytes());
    assert!(said.status.success(), "{said:?}");
    let said = stdout(&said);
    let note = said
        .trim()
        .strip_prefix("mnemofs: session checkpoint in ")
        .unwrap_or_else(|| panic!("no checkpoint: {said}"))
        .to_owned();
    assert!(store.join(&note).is_file(), "{note}");

    // And the agent sees the note at once.
    let seen = ask(&format!(
        r#"{{"command": "view", "path": "/memories/{note}"}}"#
    ));
    assert!(!seen.contains("\"is_error\":true"), "{seen}");

    // status names who serves the store.
    let status = stdout(&hook(&["status"], &store, &state, b""));
    let expected = format!("mnemofs mcp or tool (pid {}) serves the store", tool.id());
    assert!(status.contains(&expected), "{status}");
    drop(to_tool);
    assert!(tool.wait().expect("the tool ends").success());
}

/// A note written outside mnemofs since a command last indexed the store
/// (an editor's save, a `git pull`) is in the next brief, with no daemon.
#[test]
fn the_brief_without_a_daemon_shows_a_note_edited_outside_mnemofs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    let out = hook(&["write", "first", "--title", "First"], &store, &state, b"");
    assert!(out.status.success(), "{out:?}");
    fs::write(
        store.join("task-new.md"),
        "---\ntitle: Rotate the signing key\ntype: task\nstatus: active\n---\nsoon\n",
    )
    .expect("a task written behind mnemofs's back");
    let brief = stdout(&hook(&["brief"], &store, &state, b"{}"));
    assert!(brief.contains("Rotate the signing key"), "{brief}");
}

/// Bytes of a transcript that are not UTF-8 are left out of the note, not
/// carried into it (and the brief) as replacement characters.
#[test]
fn a_transcript_that_is_not_utf8_leaves_no_replacement_characters() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    let transcript = tmp.path().join("t.jsonl");
    let damaged = TRANSCRIPT
        .replace("We decided", "We \u{1}decided")
        .into_bytes();
    let at = damaged.iter().position(|&b| b == 1).expect("the mark");
    let mut bytes = damaged[..at].to_vec();
    bytes.extend_from_slice(b"\xff\xfe");
    bytes.extend_from_slice(&damaged[at + 1..]);
    fs::write(&transcript, bytes).expect("transcript");
    let input = serde_json::json!({"session_id": "sess-u", "transcript_path": transcript});
    let said = stdout(&hook(
        &["checkpoint"],
        &store,
        &state,
        input.to_string().as_bytes(),
    ));
    let path = said
        .trim()
        .strip_prefix("mnemofs: session checkpoint in ")
        .unwrap_or_else(|| panic!("{said}"));
    let note = fs::read_to_string(store.join(path)).expect("the note");
    assert!(note.contains("[decision]"), "{note}");
    assert!(!note.contains('\u{FFFD}'), "{note}");
}

/// A store read as its index was last committed (a brief of a store too
/// large to walk in a moment, or one another command holds) says when a
/// folder changed since that commit: what it answers may miss a note.
#[test]
fn a_read_of_the_committed_index_says_when_the_store_changed_since() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir_all(store.join("notes")).expect("store");
    fs::write(store.join("notes/a.md"), "a note\n").expect("seed");
    let out = hook(&["reindex"], &store, &state, b"");
    assert!(out.status.success(), "{out:?}");
    let target = mnemofs::daemon::Target {
        path: store.clone(),
        state_dir: Some(state.clone()),
    };
    let session = mnemofs::daemon::Session::open_read_only(&target).expect("read-only");
    assert_eq!(session.changed_since_indexed(), None);
    drop(session);
    // Folder times have a clock tick's grain: step past the commit's.
    std::thread::sleep(Duration::from_millis(20));
    fs::write(store.join("notes/b.md"), "written behind mnemofs's back\n").expect("b");
    let session = mnemofs::daemon::Session::open_read_only(&target).expect("read-only");
    let said = session.changed_since_indexed().expect("a change is said");
    assert!(said.contains("may be missing"), "{said}");
}
