//! `mnemofs doctor`: all is well on a fresh store, and a machine without
//! FUSE is told so in a line that names it.

#![cfg(target_os = "linux")]

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

/// Detaches the mount even when the test fails.
struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        common::force_unmount(self.0);
    }
}

#[test]
fn doctor_finds_a_stale_mount_of_its_store() {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("skipped: /dev/fuse does not exist, so nothing can be mounted");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().canonicalize().expect("temp dir");
    let (store, state, mnt) = (root.join("store"), root.join("state"), root.join("mnt"));
    fs::create_dir(&store).expect("store");
    fs::create_dir(&mnt).expect("mountpoint");
    let _unmount = Unmount(&mnt);
    let mut daemon = Command::new(bin())
        .arg("mount")
        .arg(&mnt)
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .args(["--foreground", "--no-organizer"])
        .env("HOME", &root)
        .env("XDG_RUNTIME_DIR", &root)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn mnemofs");
    let registered = common::poll_until(common::READY_TIMEOUT, || {
        common::is_fuse_mounted(&mnt)
            && root.join("mnemofs").read_dir().is_ok_and(|mut d| {
                // The entry itself, not the file it is written to first.
                d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")))
            })
    });
    common::signal(daemon.id(), libc::SIGKILL);
    let _ = daemon.wait();
    assert!(registered, "the mount did not come up");

    let out = mnemofs(
        &root,
        Command::new(bin())
            .args(["doctor", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected = format!("FAIL    stale mount of this store at {}", mnt.display());
    assert!(stdout.contains(&expected), "{stdout}");
}
