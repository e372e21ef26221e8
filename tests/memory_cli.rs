//! memory-cli's commands, run as the real binary on a store no daemon
//! serves: write, read, list, delete, export then import into an empty
//! store (and again, which adds nothing), memory-cli's own JSON lines with
//! a malformed line, an Obsidian vault ingested twice, and bad input.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, run_with_timeout};

fn run(store: &Path, args: &[&str], input: Option<&str>) -> Output {
    let state = store.with_extension("state");
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(&state)
        .env("XDG_RUNTIME_DIR", store.with_extension("run"))
        .env("MNEMOFS_LOG", "warn");
    if let Some(input) = input {
        let file = store.with_extension("jsonl");
        fs::write(&file, input).expect("input file");
        cmd.arg("--input").arg(&file);
    }
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn write_read_list_delete_export_import_without_a_daemon() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let id = ok(&run(
        &store,
        &[
            "write",
            "I prefer dark mode",
            "--category",
            "preferences",
            "--tags",
            "ui,dark",
        ],
        None,
    ));
    let id = id.trim();
    assert!(store.join("preferences/i-prefer-dark-mode.md").is_file());
    let record: serde_json::Value =
        serde_json::from_str(&ok(&run(&store, &["read", id, "--json"], None))).expect("json");
    assert_eq!(record["id"], id);
    assert_eq!(record["category"], "preferences");
    assert_eq!(record["scope"], "global");
    assert_eq!(record["tags"], serde_json::json!(["ui", "dark"]));
    ok(&run(&store, &["write", "a second note"], None));
    let listed = ok(&run(&store, &["list", "--category", "preferences"], None));
    assert_eq!(listed.lines().count(), 1, "{listed}");

    let export = ok(&run(&store, &["export"], None));
    assert_eq!(export.lines().count(), 2, "{export}");
    let other = tmp.path().join("t");
    fs::create_dir(&other).expect("mkdir");
    let first = ok(&run(&other, &["import"], Some(&export)));
    assert!(
        first.starts_with("read 2, written 2, duplicates 0"),
        "{first}"
    );
    let again = ok(&run(&other, &["import"], Some(&export)));
    assert!(
        again.starts_with("read 2, written 0, duplicates 2"),
        "{again}"
    );
    let set = |text: &str| {
        let mut v: Vec<(String, String, String)> = text
            .lines()
            .map(|l| {
                let r: serde_json::Value = serde_json::from_str(l).expect("a line");
                (
                    r["id"].to_string(),
                    r["path"].to_string(),
                    r["content"].to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(set(&export), set(&ok(&run(&other, &["export"], None))));

    ok(&run(&store, &["delete", id], None));
    assert!(!store.join("preferences/i-prefer-dark-mode.md").exists());
    let missing = run(&store, &["read", id], None);
    assert!(!missing.status.success());
    assert_eq!(String::from_utf8_lossy(&missing.stderr).lines().count(), 1);
    let empty = run(&store, &["write", "  "], None);
    assert!(!empty.status.success());
}

#[test]
fn memory_cli_lines_import_and_a_malformed_line_is_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let lines = "{\"ID\":\"m-1\",\"Content\":\"user prefers tabs\",\"Phase\":\"organized\",\"Category\":\"preferences\",\"Tags\":[\"editor\"]}\nnot json\n{\"id\":\"m-2\",\"content\":\"new idea\",\"phase\":\"inbox\",\"category\":\"inbox\"}\n";
    let out = ok(&run(&store, &["import"], Some(lines)));
    assert!(out.contains("written 2") && out.contains("line 2"), "{out}");
    assert!(store.join("preferences/user-prefers-tabs.md").is_file());
    assert!(store.join("inbox/new-idea.md").is_file());
}

#[test]
fn an_obsidian_vault_ingested_twice_adds_nothing_the_second_time() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("s");
    let vault = tmp.path().join("vault");
    fs::create_dir(&store).expect("mkdir");
    for (rel, text) in [
        (
            "Projects/Alpha.md",
            "---\ntags: [work]\naliases: [A]\n---\nSee [[Beta]].\n",
        ),
        ("Beta.md", "Beta is the second project.\n"),
        (".obsidian/app.json", "{}"),
        (".trash/Old.md", "old"),
        ("img/pic.png", "png"),
    ] {
        let p = vault.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("seed");
    }
    let vault_arg = vault.to_string_lossy().into_owned();
    let args = [
        "ingest",
        "--source",
        "obsidian",
        "--path",
        &vault_arg,
        "--keep-folders",
    ];
    let first = ok(&run(&store, &args, None));
    assert!(
        first.starts_with("read 2, written 2, duplicates 0"),
        "{first}"
    );
    let alpha = fs::read_to_string(store.join("obsidian/Projects/Alpha.md")).expect("ingested");
    assert!(
        alpha.contains("source: obsidian") && alpha.contains("[[Beta]]"),
        "{alpha}"
    );
    let second = ok(&run(&store, &args, None));
    assert!(
        second.starts_with("read 2, written 0, duplicates 2"),
        "{second}"
    );
    let backlinks = run(&store, &["backlinks", "Beta"], None);
    let _ = backlinks;
    let missing = run(
        &store,
        &[
            "ingest",
            "--source",
            "logseq",
            "--path",
            "/nonexistent/graph",
        ],
        None,
    );
    assert!(!missing.status.success());
}

/// Runs a command against a store a daemon serves (its registry is found
/// through the same runtime dir the daemon uses).
fn run_served(store: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .arg("--store")
        .arg(store)
        .env("MNEMOFS_LOG", "warn");
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

#[test]
fn write_read_list_delete_go_through_a_running_daemon() {
    let m = common::Mount::start();
    let a = ok(&run_served(
        &m.store,
        &["write", "Alpha note", "--category", "project", "--json"],
    ));
    let a: serde_json::Value = serde_json::from_str(&a).expect("json");
    let path = a["path"].as_str().expect("path").to_string();
    // Written through the mount: it is there, and the daemon answers reads.
    assert!(m.m(&path).is_file(), "{path} not on the mount");
    let b = ok(&run_served(
        &m.store,
        &["write", "Beta note", "--category", "project"],
    ));
    // An id resolves once the daemon's index has seen the write.
    let id = a["id"].as_str().expect("id").to_string();
    assert!(common::poll_until(Duration::from_secs(30), || {
        run_served(&m.store, &["read", &id]).status.success()
            && run_served(&m.store, &["read", b.trim()]).status.success()
    }));
    let record: serde_json::Value = serde_json::from_str(&ok(&run_served(
        &m.store,
        &["read", a["id"].as_str().expect("id"), "--json"],
    )))
    .expect("json");
    assert_eq!(record["path"], path.as_str());
    let listed = ok(&run_served(&m.store, &["list", "--category", "project"]));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    ok(&run_served(&m.store, &["delete", b.trim()]));
    let listed = ok(&run_served(&m.store, &["list", "--category", "project"]));
    assert_eq!(listed.lines().count(), 1, "{listed}");
}
