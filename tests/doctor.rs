//! `mnemofs doctor`: all is well on a fresh store, and a machine without
//! FUSE is told so in a line that names it.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use common::{COMMAND_TIMEOUT, bin, run_with_timeout};

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `mnemofs ARGS` with a private HOME and no user session.
fn mnemofs(home: &Path, program: &mut Command) -> Output {
    let cmd = program
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("DBUS_SESSION_BUS_ADDRESS");
    run_with_timeout(cmd, COMMAND_TIMEOUT).unwrap_or_else(|| panic!("{cmd:?} did not finish"))
}

#[test]
fn doctor_passes_on_a_fresh_store() {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("skipped: /dev/fuse does not exist, so the FUSE check would fail");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    fs::create_dir(&store).expect("store");
    fs::write(store.join("note.md"), "a memory\n").expect("seed");
    let out = mnemofs(
        tmp.path(),
        Command::new(bin())
            .args(["reindex", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state),
    );
    assert!(out.status.success(), "reindex: {}", text(&out));

    let out = mnemofs(
        tmp.path(),
        Command::new(bin())
            .args(["doctor", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state),
    );
    assert!(out.status.success(), "doctor: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ok      index: 1 documents"), "{stdout}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

#[test]
fn doctor_without_fuse_fails_naming_fuse() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: masking /dev/fuse in a mount namespace needs root");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    fs::create_dir(&store).expect("store");
    let out = mnemofs(
        tmp.path(),
        Command::new("unshare")
            .args([
                "-m",
                "sh",
                "-c",
                r#"mount --bind /dev/null /dev/fuse && exec "$@""#,
                "sh",
                bin(),
                "doctor",
                "--store",
            ])
            .arg(&store),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fuse_lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("FAIL") && l.contains("FUSE"))
        .collect();
    assert_eq!(fuse_lines.len(), 1, "{stdout}");
    assert!(fuse_lines[0].contains("/dev/fuse"), "{stdout}");
    // Nothing else is wrong here.
    assert_eq!(stdout.matches("FAIL").count(), 1, "{stdout}");
}
