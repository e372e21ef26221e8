//! `mnemofs tool`, Anthropic's `memory` tool on stdin and stdout, against
//! the SDK's reference handler (`BetaLocalFilesystemMemoryTool`): without a
//! daemon, every answer and every resulting tree must equal the
//! reference's on a plain directory; with a daemon serving the store, the
//! tool must work through it (what it writes is read back through the
//! mount) and answer read-only commands, views included, exactly as the
//! reference does on the mount. The command sequences and comparisons live
//! in `tests/python/memory_tool_cli_diff.py`; the `anthropic` package goes
//! into a venv the tests make under the target dir.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Mount, MountOptions, TEST_UMASK, bin, python_with, run_with_timeout, set_umask};

/// Runs the driver; fails the test with its report unless it exits 0.
fn driver(args: &[&Path]) -> String {
    let python = python_with("anthropic.tools.memory", "anthropic");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/memory_tool_cli_diff.py");
    let out = run_with_timeout(
        Command::new(&python).arg(&script).args(args),
        Duration::from_secs(600),
    )
    .expect("memory_tool_cli_diff.py timed out");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mnemofs tool and the reference handler differ ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

#[test]
fn tool_answers_as_the_reference_handler_without_a_daemon() {
    set_umask(TEST_UMASK);
    let tmp = tempfile::tempdir().expect("temp dir");
    let (plain, store, state) = (
        tmp.path().join("plain"),
        tmp.path().join("store"),
        tmp.path().join("state"),
    );
    for dir in [&plain, &store] {
        fs::create_dir(dir).expect("mkdir");
    }
    let report = driver(&[Path::new("plain"), &plain, &store, &state, Path::new(bin())]);
    println!("{report}");
    // No daemon: the tool opened the store itself, its index in --state-dir.
    let kept = fs::read_dir(&state).map(|d| d.count()).unwrap_or(0);
    assert!(kept > 0, "nothing in the state dir {}", state.display());
}

#[test]
fn tool_goes_through_a_running_daemon_and_answers_as_the_reference_on_its_mount() {
    set_umask(TEST_UMASK);
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--views".into(), "hidden".into()],
        ..Default::default()
    });
    let report = driver(&[Path::new("mount"), &m.mnt, &m.store, Path::new(bin())]);
    println!("{report}");
    // The tool wrote through the daemon: the file is on the mount and in
    // the store, and the daemon's index found it.
    let ada = fs::read_to_string(m.m("people/ada.md")).expect("read through the mount");
    assert!(ada.contains("L. F. Menabrea's"), "{ada}");
    assert_eq!(
        fs::read_to_string(m.s("people/ada.md")).expect("read the store"),
        ada
    );
    let by_id = fs::read_to_string(m.m("by-id/7d0c6a52-5d0e-4a39-9f43-3c5f6a1e2b10.md"))
        .expect("by-id through the mount");
    assert_eq!(by_id, ada);
}

/// Runs `mnemofs tool` on `store` with `args`, feeding `input`; returns
/// each answer line's `content` and `is_error`.
fn tool_session(store: &Path, state: &Path, args: &[&str], input: &str) -> Vec<(String, bool)> {
    use std::io::Write;
    let mut child = Command::new(bin())
        .arg("tool")
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mnemofs tool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("send the commands");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx
        .recv_timeout(Duration::from_secs(300))
        .expect("mnemofs tool answers in time")
        .expect("mnemofs tool ran");
    assert!(out.status.success(), "mnemofs tool failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let answer: serde_json::Value = serde_json::from_str(line).expect("a JSON answer");
            (
                answer["content"].as_str().unwrap_or_default().to_string(),
                answer["is_error"] == true,
            )
        })
        .collect()
}

#[test]
fn tool_in_an_agents_scope_sees_global_memories_and_its_own() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    fs::write(store.join("shared.md"), "# Shared\n").expect("seed");
    fs::write(
        store.join("alice.md"),
        "---\nscope: agent:alice\n---\nmine\n",
    )
    .expect("seed");
    fs::write(store.join("bob.md"), "---\nscope: agent:bob\n---\nsecret\n").expect("seed");
    let commands = [
        r#"{"command": "view", "path": "/memories"}"#,
        r#"{"command": "view", "path": "/memories/bob.md"}"#,
        r#"{"command": "str_replace", "path": "/memories/bob.md", "old_str": "secret", "new_str": "mine"}"#,
        r#"{"command": "create", "path": "/memories/new.md", "file_text": "hello\n"}"#,
        r#"{"command": "view", "path": "/memories/alice.md"}"#,
    ]
    .join("\n");
    let answers = tool_session(&store, &state, &["--scope", "agent:alice"], &commands);
    assert_eq!(answers.len(), 5, "{answers:?}");
    let (listing, _) = &answers[0];
    assert!(
        listing.contains("/memories/alice.md") && listing.contains("/memories/shared.md"),
        "{listing}"
    );
    assert!(!listing.contains("bob.md"), "{listing}");
    for (answer, is_error) in &answers[1..3] {
        assert!(*is_error, "{answer}");
        assert!(
            answer.contains("/memories/bob.md does not exist"),
            "as if it were not there: {answer}"
        );
    }
    assert!(!answers[3].1 && !answers[4].1, "{answers:?}");
    assert_eq!(
        fs::read_to_string(store.join("new.md")).expect("created"),
        "---\nscope: agent:alice\n---\nhello\n"
    );
    assert_eq!(
        fs::read_to_string(store.join("bob.md")).expect("bob's"),
        "---\nscope: agent:bob\n---\nsecret\n"
    );
    // Unscoped, the same tool sees Bob's memory.
    let answers = tool_session(
        &store,
        &state,
        &[],
        r#"{"command": "view", "path": "/memories"}"#,
    );
    assert!(answers[0].0.contains("bob.md"), "{answers:?}");
    // A scope that is not one is refused before anything runs.
    let out = Command::new(bin())
        .args(["tool", "--scope", "bob"])
        .arg("--store")
        .arg(&store)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("agent:NAME"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A temp file of mnemofs's own in `folder`, named as process `pid` names
/// them.
fn temp_file_of(folder: &Path, pid: u32) -> std::path::PathBuf {
    folder.join(format!(
        ".mnemofs-tmp-{pid:x}-0123456789abcdef0123456789abcdef"
    ))
}

#[test]
fn a_command_after_a_killed_writer_sweeps_and_one_after_a_clean_end_does_not() {
    use std::io::{BufRead, BufReader, Write};
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    let notes = store.join("notes");
    fs::create_dir_all(&notes).expect("mkdir");
    fs::write(notes.join("a.md"), "# A\n\nalpha\n").expect("seed");
    let view = "{\"command\": \"view\", \"path\": \"/memories/notes/a.md\"}\n";
    let clean_exit = state.join("clean-exit");

    // A new state dir: the first command sweeps, and records its clean end.
    let left = temp_file_of(&notes, 1);
    fs::write(&left, "half a note").expect("plant");
    let answers = tool_session(&store, &state, &[], view);
    assert!(!answers[0].1, "{answers:?}");
    assert!(!left.exists(), "the first command did not sweep");
    assert!(clean_exit.exists(), "no clean end recorded");

    // After a clean end nothing is swept: no walk of the store.
    let planted = temp_file_of(&notes, 2);
    fs::write(&planted, "not left by a crash").expect("plant");
    tool_session(&store, &state, &[], view);
    assert!(
        planted.exists(),
        "a command after a clean end walked the store"
    );
    fs::remove_file(&planted).expect("unplant");

    // A writer killed with a write of its own cut short: the next command
    // sweeps.
    let mut writer = Command::new(bin())
        .arg("tool")
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mnemofs tool");
    let mut input = writer.stdin.take().expect("stdin");
    let mut output = BufReader::new(writer.stdout.take().expect("stdout"));
    writeln!(
        input,
        "{{\"command\": \"create\", \"path\": \"/memories/notes/b.md\", \"file_text\": \"# B\\n\"}}"
    )
    .expect("send a create");
    let mut answer = String::new();
    output.read_line(&mut answer).expect("the create's answer");
    assert!(answer.contains("\"is_error\":false"), "{answer}");
    assert!(!clean_exit.exists(), "a writer left the clean end recorded");
    let cut_short = temp_file_of(&notes, writer.id());
    fs::write(&cut_short, "half of the next write").expect("plant");
    writer.kill().expect("kill the writer");
    writer.wait().expect("reap the writer");
    tool_session(&store, &state, &[], view);
    assert!(
        !cut_short.exists(),
        "a command after a killed writer did not sweep"
    );
    assert!(clean_exit.exists(), "no clean end recorded after the sweep");
    assert_eq!(
        fs::read_to_string(notes.join("b.md")).expect("the killed writer's note"),
        "# B\n"
    );
}

#[test]
fn tool_without_a_daemon_shows_the_guide_and_the_brief_as_a_mount_does() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    fs::write(
        store.join("task.md"),
        "---\ntitle: Wire the hook\ntype: task\nstatus: active\n---\nwire it\n",
    )
    .expect("seed");
    let commands = [
        r#"{"command": "view", "path": "/memories"}"#,
        r#"{"command": "view", "path": "/memories/MNEMOFS.md"}"#,
        r#"{"command": "view", "path": "/memories/.mnemofs/brief.md"}"#,
    ]
    .join("\n");
    let answers = tool_session(&store, &state, &[], &commands);
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(answers[0].0.contains("/memories/MNEMOFS.md"), "{answers:?}");
    assert!(
        !answers[1].1 && answers[1].0.contains("long-term memory"),
        "{answers:?}"
    );
    assert!(
        !answers[2].1 && answers[2].0.contains("Wire the hook"),
        "{answers:?}"
    );
    // `--guide off`: the root is exactly the real files.
    let answers = tool_session(
        &store,
        &state,
        &["--guide", "off"],
        r#"{"command": "view", "path": "/memories"}"#,
    );
    assert!(!answers[0].0.contains("MNEMOFS.md"), "{answers:?}");
}

/// `.git/` holds the commands git runs (`core.fsmonitor`, hooks): an agent
/// that could write it would run commands at the next `mnemofs sync`. No
/// tool call reads, writes, creates or renames into `.git/`, nor any file
/// under a dot-name that is not markdown (`.obsidian/` plugins), nor does
/// a command; the control folder `.mnemofs/` is still a view, and a
/// hidden markdown memory is still one, as the reference handler has it.
#[test]
fn an_agent_reaches_no_dot_folder_of_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    fs::create_dir_all(store.join(".git/hooks")).expect("git");
    fs::create_dir_all(store.join(".obsidian")).expect("obsidian");
    fs::write(store.join(".git/config"), "[core]\n").expect("config");
    fs::write(store.join("n.md"), "hello\n").expect("note");
    let before = common::file_tree(&store);
    let calls = [
        r#"{"command":"view","path":"/memories/.git/config"}"#,
        r#"{"command":"str_replace","path":"/memories/.git/config","old_str":"[core]","new_str":"[core]\n\tfsmonitor = \"touch pwned\""}"#,
        r#"{"command":"insert","path":"/memories/.git/config","insert_line":1,"insert_text":"x"}"#,
        r##"{"command":"create","path":"/memories/.git/hooks/pre-commit","file_text":"#!/bin/sh\ntouch pwned\n"}"##,
        r#"{"command":"create","path":"/memories/.obsidian/app.json","file_text":"{}"}"#,
        r#"{"command":"rename","old_path":"/memories/n.md","new_path":"/memories/.git/hooks/pre-commit"}"#,
        r#"{"command":"delete","path":"/memories/.git/config"}"#,
        r#"{"command":"create","path":"/memories/.envrc","file_text":"touch pwned"}"#,
        r#"{"command":"view","path":"/memories/.mnemofs"}"#,
    ];
    let answers = tool_session(&store, &state, &[], &(calls.join("\n") + "\n"));
    assert_eq!(answers.len(), calls.len(), "{answers:?}");
    for (call, (answer, is_error)) in calls.iter().zip(&answers).take(calls.len() - 1) {
        assert!(*is_error, "{call} was answered: {answer}");
    }
    assert!(
        !answers[calls.len() - 1].1,
        "{:?}",
        answers[calls.len() - 1]
    );
    assert_eq!(common::file_tree(&store), before);

    let out = common::run_with_timeout(
        Command::new(bin())
            .args(["write", "x", "--path", ".git/hooks/post-commit", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state),
        Duration::from_secs(120),
    )
    .expect("mnemofs write");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("(.git) is not memories"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(common::file_tree(&store), before);
}

/// A memory with a NUL byte near its start would be kept but never found
/// (the index takes it for binary): a write of one is refused in one
/// sentence, and nothing is written.
#[test]
fn a_memory_the_index_would_take_for_binary_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    fs::create_dir_all(&store).expect("store");
    fs::write(store.join("n.md"), "hello\n").expect("note");
    let calls = [
        r#"{"command":"create","path":"/memories/k/nul.md","file_text":"zebrafish a\u0000b"}"#,
        r#"{"command":"str_replace","path":"/memories/n.md","old_str":"hello","new_str":"he\u0000llo"}"#,
    ];
    let answers = tool_session(&store, &state, &[], &(calls.join("\n") + "\n"));
    for (call, (answer, is_error)) in calls.iter().zip(&answers) {
        assert!(*is_error, "{call} was answered: {answer}");
    }
    assert!(!store.join("k/nul.md").exists());
    assert_eq!(
        fs::read_to_string(store.join("n.md")).expect("n"),
        "hello\n"
    );
}

/// A `create` without its text makes nothing (the reference handler
/// leaves an empty file), so the agent's retry with the text works.
#[test]
fn a_create_without_its_text_makes_nothing_and_the_retry_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, state) = (dir.path().join("store"), dir.path().join("state"));
    fs::create_dir_all(&store).expect("store");
    let calls = [
        r#"{"command":"create","path":"/memories/new/a.md"}"#,
        r#"{"command":"create","path":"/memories/new/a.md","file_text":7}"#,
        r#"{"command":"create","path":"/memories/new/a.md","file_text":"the text\n"}"#,
    ];
    let answers = tool_session(&store, &state, &[], &(calls.join("\n") + "\n"));
    assert_eq!(
        answers[0].0,
        "AttributeError(\"'NoneType' object has no attribute 'encode'\")"
    );
    assert!(answers[0].1 && answers[1].1, "{answers:?}");
    assert_eq!(
        answers[2],
        (
            "File created successfully at: /memories/new/a.md".to_string(),
            false
        )
    );
    assert_eq!(
        fs::read_to_string(store.join("new/a.md")).expect("a"),
        "the text\n"
    );
}
