//! The query language as a user meets it from the CLI: `limit:N`,
//! `AND NOT`, `prefix*`, `source:`, and a bad value reported on stderr
//! instead of quietly searched as words. No daemon: the command opens the
//! store itself.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(120);

fn search(store: &Path, state: &Path, query: &str) -> Output {
    run_with_timeout(
        Command::new(bin())
            .args(["search", query, "--json", "--store"])
            .arg(store)
            .arg("--state-dir")
            .arg(state),
        TIMEOUT,
    )
    .expect("search timed out")
}

fn paths(out: &Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "search failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut paths: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let hit: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            hit["path"].as_str().expect("a path").to_owned()
        })
        .collect();
    paths.sort();
    paths
}

#[test]
fn the_cli_reads_queries_as_the_views_do() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(store.join("notes")).unwrap();
    for i in 0..5 {
        fs::write(
            store.join(format!("notes/wind-{i}.md")),
            format!(
                "---\nsource: {}\ntags: [{}]\n---\n# Wind {i}\nzephyr number {i}\n",
                if i == 0 { "claude" } else { "obsidian" },
                if i % 2 == 0 { "even" } else { "odd" }
            ),
        )
        .unwrap();
    }

    let all = paths(&search(&store, &state, "zephyr"));
    assert_eq!(all.len(), 5, "{all:?}");
    assert_eq!(paths(&search(&store, &state, "zephyr limit:2")).len(), 2);
    assert_eq!(
        paths(&search(&store, &state, "zephyr AND NOT tag:even")),
        ["notes/wind-1.md", "notes/wind-3.md"]
    );
    assert_eq!(paths(&search(&store, &state, "zeph*")).len(), 5);
    assert_eq!(
        paths(&search(&store, &state, "source:claude")),
        ["notes/wind-0.md"]
    );

    let out = search(&store, &state, "zephyr created:>notadate");
    assert_eq!(paths(&out).len(), 5);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: `created:>notadate` was left out: `notadate` is not a date"),
        "{stderr}"
    );
    let out = search(&store, &state, "zephyr");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
fn names_that_are_not_utf8_are_printed_escaped_and_given_exactly_in_json() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(&store).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9 notes.md");
    fs::write(store.join(name), "# Cafe\nespresso\n").unwrap();

    let out = search(&store, &state, "espresso");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hit: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(hit["path"], "caf\\xe9 notes.md");
    let bytes: Vec<u8> = serde_json::from_value(hit["path_bytes"].clone()).unwrap();
    assert_eq!(bytes, b"caf\xe9 notes.md");
    assert!(store.join(std::ffi::OsStr::from_bytes(&bytes)).exists());

    let text = run_with_timeout(
        Command::new(bin())
            .args(["search", "espresso", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state),
        TIMEOUT,
    )
    .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("(caf\\xe9 notes.md)"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}
