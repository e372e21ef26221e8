//! Nothing an agent does through the mount is irreversible: deletes,
//! overwrites (a rename over a file, a whole rewrite) and truncations keep
//! the previous content in the state dir, and `mnemofs history`, `trash`
//! and `restore` bring it back.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Mount, MountOptions, bin, poll_until, python_with, run_with_timeout};

/// Runs `mnemofs ARGS --store STORE` (answered by the daemon) and returns
/// its stdout; panics with its stderr if it fails.
fn cli(m: &Mount, args: &[&str]) -> String {
    let out = run_with_timeout(
        Command::new(bin()).args(args).arg("--store").arg(&m.store),
        Duration::from_secs(60),
    )
    .expect("mnemofs timed out");
    assert!(
        out.status.success(),
        "mnemofs {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON lines a `--json` command printed.
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

const ALPHA: &str =
    "---\nid: 11111111-1111-4111-8111-111111111111\ntitle: Alpha\n---\nThe zephyrine plan.\n";
const BETA: &str = "---\nid: 22222222-2222-4222-8222-222222222222\ntitle: Beta\n---\nBeta notes.\n";
const CAROL: &str = "# Carol\nLikes tea.\n";

fn seeded() -> Vec<(String, Vec<u8>)> {
    [
        ("notes/alpha.md", ALPHA),
        ("notes/beta.md", BETA),
        ("people/carol.md", CAROL),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
    .collect()
}

/// Anthropic's reference handler resolves a search result's symlink and
/// deletes the memory itself, and `clear_all_memory()` empties the store:
/// both are undone with `mnemofs restore`.
#[test]
fn the_reference_handler_deleting_a_search_result_and_clearing_everything_is_undone() {
    let python = python_with("anthropic.tools.memory", "anthropic");
    let mut m = Mount::with_options(MountOptions {
        seed: seeded(),
        ..Default::default()
    });
    // The handler works on <base>/memories: mount there.
    m.stop();
    let base = m.mnt.parent().expect("temp root").to_path_buf();
    m.mnt = base.join("memories");
    fs::create_dir(&m.mnt).expect("mountpoint");
    m.spawn(&["--views".into(), "hidden".into()]);

    let results = m.m("search/zephyrine");
    assert!(
        poll_until(Duration::from_secs(30), || fs::read_dir(&results)
            .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with("01-"))))),
        "the search never found the memory"
    );
    let script = r#"
import json, os, sys
from anthropic.tools.memory import BetaLocalFilesystemMemoryTool
base = sys.argv[1]
tool = BetaLocalFilesystemMemoryTool(base_path=base)
names = sorted(n for n in os.listdir(os.path.join(base, "memories", "search", "zephyrine")) if n.startswith("01-"))
out = {"delete": tool.call({"command": "delete", "path": "/memories/search/zephyrine/" + names[0]})}
out["after_delete"] = sorted(os.listdir(os.path.join(base, "memories", "notes")))
try:
    tool.clear_all_memory()
    out["clear"] = "ok"
except Exception as e:
    out["clear"] = type(e).__name__
print(json.dumps(out))
"#;
    let out = run_with_timeout(
        Command::new(&python).arg("-c").arg(script).arg(&base),
        Duration::from_secs(120),
    )
    .expect("the handler timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("json");
    // The handler deleted the memory itself, not the search result.
    assert_eq!(
        report["after_delete"],
        serde_json::json!(["beta.md"]),
        "{report}"
    );
    for rel in ["notes/alpha.md", "notes/beta.md", "people/carol.md"] {
        assert!(!m.s(rel).exists(), "{rel} survived clear_all_memory");
    }

    // The trash lists all three; alpha's history is found by its id.
    let trash = json_lines(&cli(&m, &["trash", "--json"]));
    let mut paths: Vec<&str> = trash.iter().filter_map(|v| v["path"].as_str()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        ["notes/alpha.md", "notes/beta.md", "people/carol.md"],
        "{trash:?}"
    );
    let history = json_lines(&cli(
        &m,
        &["history", "11111111-1111-4111-8111-111111111111", "--json"],
    ));
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["why"], "deleted");
    assert_eq!(history[0]["title"], "Alpha");

    // One by its old path, then everything else.
    let one = cli(&m, &["restore", "notes/alpha.md"]);
    assert!(one.contains("notes/alpha.md"), "{one}");
    assert_eq!(
        fs::read_to_string(m.m("notes/alpha.md")).expect("alpha"),
        ALPHA
    );
    let rest = cli(&m, &["restore", "--all-deleted"]);
    assert_eq!(rest.lines().count(), 2, "{rest}");
    for (rel, content) in [
        ("notes/alpha.md", ALPHA),
        ("notes/beta.md", BETA),
        ("people/carol.md", CAROL),
    ] {
        assert_eq!(
            fs::read_to_string(m.m(rel)).expect("restored"),
            content,
            "{rel}"
        );
    }
    assert!(json_lines(&cli(&m, &["trash", "--json"])).is_empty());
}

/// An editor's save by rename, a shell's `>` and a `truncate` each keep
/// what they replaced; a burst within a minute keeps its first and latest.
#[test]
fn overwrites_and_truncations_keep_the_previous_content() {
    let m = Mount::start();
    let note = m.m("note.md");
    fs::write(&note, "one\n").expect("write");
    // Save by rename, as editors do.
    let save = |content: &str| {
        let tmp = m.m(".note.md.swp");
        fs::write(&tmp, content).expect("temp");
        fs::rename(&tmp, &note).expect("rename over");
    };
    save("two\n");
    save("three\n");
    save("four\n");
    let versions = json_lines(&cli(&m, &["history", "note.md", "--json"]));
    let kept: Vec<&str> = versions.iter().filter_map(|v| v["why"].as_str()).collect();
    assert_eq!(kept, ["overwritten", "overwritten"], "{versions:?}");
    // Newest first: the latest loss ("three") and the burst's first ("one").
    let newest = versions[0]["version"].as_u64().expect("number");
    let oldest = versions[1]["version"].as_u64().expect("number");
    cli(
        &m,
        &["restore", "note.md", "--version", &newest.to_string()],
    );
    assert_eq!(fs::read_to_string(&note).expect("read"), "three\n");
    // The first of a burst is never collapsed away.
    cli(
        &m,
        &["restore", "note.md", "--version", &oldest.to_string()],
    );
    assert_eq!(fs::read_to_string(&note).expect("read"), "one\n");

    // Truncations keep a copy: the file lives on, emptied and rewritten.
    let other = m.m("other.md");
    fs::write(&other, "kept before truncation\n").expect("write");
    let status = Command::new("sh")
        .arg("-c")
        .arg("echo replaced > \"$1\"")
        .arg("sh")
        .arg(&other)
        .status()
        .expect("sh");
    assert!(status.success());
    let versions = json_lines(&cli(&m, &["history", "other.md", "--json"]));
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_eq!(versions[0]["why"], "truncated");
    cli(&m, &["restore", "other.md"]);
    assert_eq!(
        fs::read_to_string(&other).expect("read"),
        "kept before truncation\n"
    );

    // `truncate -s 0` (setattr) too.
    fs::write(&other, "kept before truncate -s 0\n").expect("write");
    let status = Command::new("truncate")
        .args(["-s", "0"])
        .arg(&other)
        .status()
        .expect("truncate");
    assert!(status.success());
    let versions = json_lines(&cli(&m, &["history", "other.md", "--json"]));
    assert_eq!(versions[0]["why"], "truncated", "{versions:?}");
    cli(&m, &["restore", "other.md"]);
    assert_eq!(
        fs::read_to_string(&other).expect("read"),
        "kept before truncate -s 0\n"
    );

    // Everything lives in the state dir; the store holds only the files.
    assert!(m.state.join("history/versions.jsonl").exists());
    let mut names: Vec<String> = fs::read_dir(&m.store)
        .expect("store")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["note.md", "other.md"]);
}

/// Without a daemon, the CLI's own writes keep versions too, and
/// `history`, `trash` and `restore` work on the store directly.
#[test]
fn without_a_daemon_history_and_restore_work_on_the_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(store.join("notes")).expect("store");
    fs::write(store.join("notes/alpha.md"), ALPHA).expect("seed");
    let run = |args: &[&str]| -> String {
        let out = run_with_timeout(
            Command::new(bin())
                .args(args)
                .arg("--store")
                .arg(&store)
                .arg("--state-dir")
                .arg(&state),
            Duration::from_secs(120),
        )
        .expect("mnemofs timed out");
        assert!(
            out.status.success(),
            "mnemofs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let tool = |line: &str| {
        let mut child = Command::new(bin())
            .arg("tool")
            .arg("--store")
            .arg(&store)
            .arg("--state-dir")
            .arg(&state)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("tool");
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, "{line}").expect("send");
        drop(stdin);
        let out = child.wait_with_output().expect("tool output");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let answer = tool(r#"{"command": "delete", "path": "/memories/notes/alpha.md"}"#);
    assert!(answer.contains("is_error\":false"), "{answer}");
    assert!(!store.join("notes/alpha.md").exists());
    let trash = json_lines(&run(&["trash", "--json"]));
    assert_eq!(trash.len(), 1, "{trash:?}");
    assert_eq!(trash[0]["path"], "notes/alpha.md");
    run(&["restore", "11111111-1111-4111-8111-111111111111"]);
    assert_eq!(
        fs::read_to_string(store.join("notes/alpha.md")).expect("restored"),
        ALPHA
    );
    assert!(Path::new(&state).join("history/objects").is_dir());
}

/// vim's saves (with its default backups, and in place) keep the note's
/// earlier content as versions of the note, while its swap file, its
/// `4913` probe and its `note.md~` backup never reach the trash.
#[test]
fn vim_saves_are_versions_of_the_note_and_leave_nothing_in_the_trash() {
    if !common::have_program("vim") {
        eprintln!("skipped: vim is not installed");
        return;
    }
    let m = Mount::with_options(MountOptions {
        seed: vec![("notes/plan.md".into(), b"line one\n".to_vec())],
        ..Default::default()
    });
    let vim = |settings: &str, line: &str| {
        let out = run_with_timeout(
            Command::new("vim")
                .args(["-u", "NONE", "-i", "NONE", "-N", "-Es"])
                // The default skips backups of files under /tmp.
                .args(["-c", &format!("set backupskip= {settings}")])
                .args(["-c", &format!("normal Go{line}"), "-c", "wq"])
                .arg(m.m("notes/plan.md"))
                .env("HOME", &m.plain),
            Duration::from_secs(60),
        )
        .expect("vim timed out");
        assert!(out.status.success(), "vim: {out:?}");
    };
    // Renames plan.md to plan.md~, writes a new plan.md, removes the backup.
    vim("backupcopy=auto", "line two");
    // Copies plan.md to plan.md~, rewrites plan.md in place, removes it.
    vim("backupcopy=yes", "line three");
    assert_eq!(
        fs::read_to_string(m.m("notes/plan.md")).expect("read"),
        "line one\nline two\nline three\n"
    );
    let trash = json_lines(&cli(&m, &["trash", "--json"]));
    assert!(trash.is_empty(), "{trash:?}");
    let versions = json_lines(&cli(&m, &["history", "notes/plan.md", "--json"]));
    assert!(
        versions.iter().all(|v| v["path"] == "notes/plan.md"),
        "{versions:?}"
    );
    let oldest = versions.last().expect("a version")["version"]
        .as_u64()
        .expect("number");
    cli(
        &m,
        &["restore", "notes/plan.md", "--version", &oldest.to_string()],
    );
    assert_eq!(
        fs::read_to_string(m.m("notes/plan.md")).expect("read"),
        "line one\n"
    );
    let mut names: Vec<String> = fs::read_dir(m.s("notes"))
        .expect("store")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["plan.md"]);
}

/// A vault kept in git on the mount: commits and `git gc` remove lock
/// files and loose objects in `.git/`, none of which reaches the trash (a
/// restored `index.lock` would stop git); a memory `git rm` removes does.
#[test]
fn git_working_on_the_mount_leaves_only_memories_in_the_trash() {
    if !common::have_program("git") {
        eprintln!("skipped: git is not installed");
        return;
    }
    let m = Mount::with_options(MountOptions {
        seed: seeded(),
        ..Default::default()
    });
    let git = |args: &[&str]| {
        let out = run_with_timeout(
            Command::new("git")
                .arg("-C")
                .arg(&m.mnt)
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@e",
                    "-c",
                    "gc.auto=0",
                ])
                .args(args),
            Duration::from_secs(120),
        )
        .expect("git timed out");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "one"]);
    fs::write(m.m("people/carol.md"), "# Carol\nLikes coffee now.\n").expect("edit");
    git(&["commit", "-qam", "two"]);
    git(&["rm", "-q", "notes/beta.md"]);
    git(&["commit", "-qm", "three"]);
    git(&["gc", "-q"]);
    let trash = json_lines(&cli(&m, &["trash", "--json"]));
    let paths: Vec<&str> = trash.iter().filter_map(|v| v["path"].as_str()).collect();
    assert_eq!(paths, ["notes/beta.md"], "{trash:?}");
}

/// `restore --all-deleted` brings back what it can: a memory whose folder
/// is now a file stays in the trash, and says so, while the others still
/// come back.
#[test]
fn restoring_the_trash_goes_on_past_a_memory_that_cannot_come_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(store.join("notes")).expect("store");
    fs::create_dir_all(store.join("x")).expect("store");
    fs::write(store.join("notes/alpha.md"), ALPHA).expect("seed");
    fs::write(store.join("x/beta.md"), BETA).expect("seed");
    let run = |args: &[&str]| {
        run_with_timeout(
            Command::new(bin())
                .args(args)
                .arg("--store")
                .arg(&store)
                .arg("--state-dir")
                .arg(&state)
                .stdin(std::process::Stdio::null()),
            Duration::from_secs(120),
        )
        .expect("mnemofs timed out")
    };
    let mut tool = Command::new(bin());
    tool.arg("tool")
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = tool.spawn().expect("tool");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        for path in ["/memories/notes/alpha.md", "/memories/x/beta.md"] {
            writeln!(stdin, r#"{{"command": "delete", "path": "{path}"}}"#).expect("send");
        }
    }
    let out = child.wait_with_output().expect("tool");
    assert!(out.status.success());
    // A file now stands where beta's folder was.
    fs::remove_dir(store.join("x")).expect("rmdir");
    fs::write(store.join("x"), "a file now\n").expect("file");

    let out = run(&["restore", "--all-deleted"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("notes/alpha.md"), "{stdout}");
    assert!(stderr.contains("1 left in the trash"), "{stderr}");
    assert_eq!(
        fs::read_to_string(store.join("notes/alpha.md")).expect("restored"),
        ALPHA
    );
    let out = run(&["trash", "--json"]);
    let trash = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(trash.len(), 1, "{trash:?}");
    assert_eq!(trash[0]["path"], "x/beta.md");

    // status says what the history takes and what is in the trash.
    let out = run(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status --json");
    assert_eq!(status["history"]["deleted"], 1, "{status}");
    assert_eq!(status["history"]["versions"], 2, "{status}");
    assert_eq!(
        status["history"]["bytes"],
        ALPHA.len() + BETA.len(),
        "{status}"
    );
    let text = String::from_utf8_lossy(&run(&["status"]).stdout).into_owned();
    assert!(
        text.contains("2 earlier versions") && text.contains("1 memory in the trash"),
        "{text}"
    );
}

/// An edit through the memory tool without a daemon (`str_replace`)
/// keeps what it replaced, as an edit through the mount does.
#[test]
fn edits_through_the_memory_tool_keep_what_they_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(store.join("notes")).expect("store");
    fs::write(store.join("notes/alpha.md"), ALPHA).expect("seed");
    let mut child = Command::new(bin())
        .arg("tool")
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("tool");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(
            stdin,
            r#"{{"command": "str_replace", "path": "/memories/notes/alpha.md", "old_str": "zephyrine", "new_str": "revised"}}"#
        )
        .expect("send");
    }
    let out = child.wait_with_output().expect("tool");
    let answers = String::from_utf8_lossy(&out.stdout);
    assert!(answers.contains("is_error\":false"), "{answers}");
    assert!(
        fs::read_to_string(store.join("notes/alpha.md"))
            .expect("read")
            .contains("revised")
    );
    let out = run_with_timeout(
        Command::new(bin())
            .args(["history", "notes/alpha.md", "--json", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state),
        Duration::from_secs(120),
    )
    .expect("history timed out");
    let versions = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_eq!(versions[0]["why"], "overwritten");
    assert_eq!(versions[0]["size"], ALPHA.len());
}

/// A memory deleted on the mount is named the way `rm` took it: by its
/// path on the mount, absolute or relative to the working directory,
/// with no `--store` (the mount above it is found).
#[test]
fn a_deleted_memory_is_restored_by_its_path_on_the_mount() {
    let m = Mount::with_options(MountOptions {
        seed: seeded(),
        ..Default::default()
    });
    let run_in = |dir: &Path, args: &[&str]| -> String {
        let out = run_with_timeout(
            Command::new(bin()).args(args).current_dir(dir),
            Duration::from_secs(60),
        )
        .expect("mnemofs timed out");
        assert!(
            out.status.success(),
            "mnemofs {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let alpha = m.m("notes/alpha.md");
    fs::remove_file(&alpha).expect("rm");
    let absolute = alpha.to_string_lossy().into_owned();
    let out = run_in(&m.plain, &["restore", &absolute]);
    assert!(out.contains("notes/alpha.md"), "{out}");
    assert_eq!(fs::read_to_string(&alpha).expect("restored"), ALPHA);

    fs::remove_file(&alpha).expect("rm again");
    let versions = json_lines(&run_in(&m.m("notes"), &["history", "alpha.md", "--json"]));
    assert!(
        versions.iter().any(|v| v["why"] == "deleted"),
        "{versions:?}"
    );
    run_in(&m.m("people"), &["restore", "../notes/./alpha.md"]);
    assert_eq!(fs::read_to_string(&alpha).expect("restored"), ALPHA);
    // Ids and titles still work from inside the mount.
    fs::remove_file(&alpha).expect("rm a third time");
    run_in(
        &m.m("people"),
        &["restore", "11111111-1111-4111-8111-111111111111"],
    );
    assert_eq!(fs::read_to_string(&alpha).expect("restored"), ALPHA);
    // A title is looked up in the index, which may still be catching up.
    let by_title = || {
        run_with_timeout(
            Command::new(bin())
                .args(["history", "Beta", "--json"])
                .current_dir(m.m("people")),
            Duration::from_secs(60),
        )
        .is_some_and(|out| out.status.success() && out.stdout.is_empty())
    };
    assert!(
        poll_until(Duration::from_secs(30), by_title),
        "history by title from inside the mount"
    );
}

/// A file replaced or deleted while a writer still holds it open through
/// the mount is copied, not linked: what the writer writes afterwards
/// into the nameless inode never changes the kept version.
#[test]
fn a_version_kept_while_a_writer_holds_the_file_does_not_change() {
    use std::io::Write;
    let m = Mount::start();
    for (name, how) in [("renamed.md", "rename over"), ("deleted.md", "unlink")] {
        let note = m.m(name);
        fs::write(&note, "as it was\n").expect("write");
        let mut writer = fs::OpenOptions::new()
            .append(true)
            .open(&note)
            .expect("open for writing");
        if how == "unlink" {
            fs::remove_file(&note).expect("unlink");
        } else {
            let tmp = m.m(".save.tmp");
            fs::write(&tmp, "saved by rename\n").expect("temp");
            fs::rename(&tmp, &note).expect("rename over");
        }
        writer.write_all(b"written after\n").expect("write after");
        writer.sync_all().expect("fsync");
        drop(writer);
        let versions = json_lines(&cli(&m, &["history", name, "--json"]));
        assert_eq!(versions.len(), 1, "{how}: {versions:?}");
        assert_eq!(versions[0]["size"], "as it was\n".len(), "{how}");
        if how == "rename over" {
            cli(&m, &["restore", name]);
        } else {
            cli(&m, &["restore", "--all-deleted"]);
        }
        assert_eq!(
            fs::read_to_string(&note).expect("restored"),
            "as it was\n",
            "{how}"
        );
    }
}
