//! Long commands show progress on a terminal and nothing extra when
//! piped: `reindex` of 3,000 notes and `ingest` of a 3,000-note vault
//! under `script` (a pty) draw a bar, and piped they print only their
//! report.

mod common;

use std::fs;
use std::process::Command;
use std::time::Duration;

use common::{bin, have_program, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(300);
const NOTES: usize = 3000;

#[test]
fn reindex_shows_progress_on_a_terminal_and_stays_quiet_piped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(&store).unwrap();
    for i in 0..NOTES {
        fs::write(
            store.join(format!("note-{i}.md")),
            format!("---\ntitle: Note {i}\n---\nThe body of note {i}, with a few words.\n"),
        )
        .unwrap();
    }
    let args = |cmd: &mut Command| {
        cmd.arg("--store")
            .arg(&store)
            .arg("--state-dir")
            .arg(&state);
    };

    let mut piped = Command::new(bin());
    piped.arg("reindex");
    args(&mut piped);
    let out = run_with_timeout(&mut piped, TIMEOUT).expect("reindex timed out");
    assert!(out.status.success(), "{out:?}");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.lines().count() <= 3, "piped output:\n{text}");
    assert!(text.contains(&format!("indexed {NOTES} files")), "{text}");
    assert!(!text.contains('\r') && !text.contains('\u{1b}'), "{text:?}");

    if !have_program("script") {
        eprintln!("skipping the terminal half: `script` (util-linux) is not installed");
        return;
    }
    let command = format!(
        "{} reindex --store '{}' --state-dir '{}'",
        bin(),
        store.display(),
        state.display()
    );
    let out = run_with_timeout(
        Command::new("script").args(["-qec", &command, "/dev/null"]),
        TIMEOUT,
    )
    .expect("reindex under script timed out");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("/{NOTES} files")),
        "no progress bar on a terminal:\n{text:?}"
    );
    assert!(text.contains(&format!("indexed {NOTES} files")), "{text:?}");
}

#[test]
fn ingest_shows_progress_on_a_terminal_and_only_its_report_piped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    let vault = dir.path().join("vault");
    fs::create_dir_all(&store).unwrap();
    fs::create_dir_all(&vault).unwrap();
    for i in 0..NOTES {
        fs::write(
            vault.join(format!("n{i}.md")),
            format!("Note {i} links [[n{}]].\n", i + 1),
        )
        .unwrap();
    }
    let mut piped = Command::new(bin());
    piped
        .args(["ingest", "--source", "obsidian", "--path"])
        .arg(&vault)
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .env("MNEMOFS_LOG", "warn");
    let out = run_with_timeout(&mut piped, TIMEOUT).expect("ingest timed out");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("read {NOTES}, written {NOTES}, duplicates 0, skipped 0\n")
    );
    assert!(out.stderr.is_empty(), "{out:?}");

    if !have_program("script") {
        eprintln!("skipping the terminal half: `script` (util-linux) is not installed");
        return;
    }
    let command = format!(
        "{} ingest --source obsidian --path '{}' --store '{}' --state-dir '{}'",
        bin(),
        vault.display(),
        store.display(),
        state.display()
    );
    let out = run_with_timeout(
        Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("MNEMOFS_LOG", "warn"),
        TIMEOUT,
    )
    .expect("ingest under script timed out");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("/{NOTES} notes")),
        "no progress bar on a terminal:\n{text:?}"
    );
    assert!(
        text.contains(&format!(
            "read {NOTES}, written 0, duplicates {NOTES}, skipped 0"
        )),
        "{text:?}"
    );
}
