//! Long commands show progress on a terminal and nothing extra when
//! piped: `reindex` of 3,000 notes under `script` (a pty) draws a bar,
//! and piped it prints its one summary line.

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
