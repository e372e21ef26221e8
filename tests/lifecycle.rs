//! Mount lifecycle: daemon mode, clear failures, one daemon per store, stale
//! mount recovery, clean shutdown on signals, and external edits to the store
//! showing through the mount.

#![cfg(target_os = "linux")]

mod common;

use common::{
    COMMAND_TIMEOUT, EXIT_TIMEOUT, Mount, bin, force_unmount, is_fuse_mounted, is_mounted,
    metadata_with_timeout, mount_count, poll_until, run_with_timeout, signal, wait_timeout,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Temp dirs for a daemon-mode mount, cleaned up (unmount, stop the daemon)
/// even when the test fails.
struct DaemonDirs {
    tmp: Option<tempfile::TempDir>,
    store: PathBuf,
    mnt: PathBuf,
    state: PathBuf,
}

impl DaemonDirs {
    fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("mnemofs-life-")
            .tempdir()
            .expect("temp dir");
        let store = tmp.path().join("store");
        let mnt = tmp.path().join("mnt");
        let state = tmp.path().join("state");
        for d in [&store, &mnt, &state] {
            fs::create_dir(d).expect("mkdir");
        }
        Self {
            tmp: Some(tmp),
            store,
            mnt,
            state,
        }
    }

    /// `mnemofs mount` in daemon mode (no --foreground), bounded in time.
    fn mount(&self, mnt: &Path, store: &Path) -> Output {
        mount_cli(mnt, store, &self.state, &[])
    }

    /// Processes whose command line names this test's temp dir: the daemons
    /// this test started (and nothing else).
    fn daemon_pids(&self) -> Vec<u32> {
        let Some(tmp) = &self.tmp else { return vec![] };
        pids_mentioning(tmp.path())
    }
}

impl Drop for DaemonDirs {
    fn drop(&mut self) {
        force_unmount(&self.mnt);
        for pid in self.daemon_pids() {
            signal(pid, libc::SIGTERM);
        }
        let gone = poll_until(EXIT_TIMEOUT, || self.daemon_pids().is_empty());
        if !gone {
            for pid in self.daemon_pids() {
                signal(pid, libc::SIGKILL);
            }
        }
        force_unmount(&self.mnt);
        if is_mounted(&self.mnt)
            && let Some(t) = self.tmp.take()
        {
            let _ = t.keep();
        }
    }
}

fn pids_mentioning(dir: &Path) -> Vec<u32> {
    let needle = dir.as_os_str().as_encoded_bytes().to_vec();
    let me = std::process::id();
    let mut pids = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return pids;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let is_ours = cmdline.split(|b| *b == 0).next().is_some_and(|argv0| {
            Path::new(std::str::from_utf8(argv0).unwrap_or_default()).file_name()
                == Path::new(bin()).file_name()
        });
        if is_ours
            && cmdline
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
        {
            pids.push(pid);
        }
    }
    pids
}

fn mount_cli(mnt: &Path, store: &Path, state: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.arg("mount")
        .arg(mnt)
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .arg("--no-organizer")
        .args(extra);
    run_with_timeout(&mut cmd, COMMAND_TIMEOUT)
        .unwrap_or_else(|| panic!("`mnemofs mount` did not return within {COMMAND_TIMEOUT:?}"))
}

fn unmount_cli(mnt: &Path) -> Output {
    let mut cmd = Command::new(bin());
    cmd.arg("unmount").arg(mnt);
    run_with_timeout(&mut cmd, COMMAND_TIMEOUT)
        .unwrap_or_else(|| panic!("`mnemofs unmount` did not return within {COMMAND_TIMEOUT:?}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A failed mount: non-zero exit, a message on stderr, nothing mounted.
#[track_caller]
fn assert_refused(out: &Output, mnt: &Path, what: &str) -> String {
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success(),
        "{what}: mount succeeded but must fail\nstdout: {}\nstderr: {stderr}",
        text(&out.stdout)
    );
    assert!(
        !stderr.trim().is_empty(),
        "{what}: failed ({}) without a message on stderr",
        out.status
    );
    assert!(
        !is_fuse_mounted(mnt),
        "{what}: failed but left a FUSE mount at {}",
        mnt.display()
    );
    stderr.to_lowercase()
}

#[test]
fn daemon_mode_returns_once_the_mount_is_live_and_unmount_stops_it() {
    let d = DaemonDirs::new();
    let out = d.mount(&d.mnt, &d.store);
    assert!(
        out.status.success(),
        "daemon-mode mount failed: {}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    // Usable on the very next line: no polling allowed here.
    assert!(
        is_fuse_mounted(&d.mnt),
        "mount returned 0 but nothing is mounted"
    );
    fs::write(d.mnt.join("first.md"), b"hello").expect("write through the fresh mount");
    assert_eq!(
        fs::read(d.store.join("first.md")).expect("in store"),
        b"hello"
    );
    assert!(
        !d.daemon_pids().is_empty(),
        "no daemon process found after daemon-mode mount"
    );
    assert!(
        fs::read_dir(&d.state).expect("state dir").next().is_some(),
        "daemon mode left no pid/log file in --state-dir"
    );

    let out = unmount_cli(&d.mnt);
    assert!(
        out.status.success(),
        "unmount failed: {}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    assert!(!is_mounted(&d.mnt), "still mounted after `mnemofs unmount`");
    assert!(
        poll_until(EXIT_TIMEOUT, || d.daemon_pids().is_empty()),
        "daemon still running after unmount: {:?}",
        d.daemon_pids()
    );
    assert_eq!(
        fs::read(d.store.join("first.md")).expect("store kept"),
        b"hello"
    );
}

#[test]
fn unmount_command_stops_a_foreground_daemon_with_status_zero() {
    let mut m = Mount::start();
    let out = unmount_cli(&m.mnt);
    assert!(
        out.status.success(),
        "unmount failed: {}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    let status = wait_timeout(m.child_mut(), EXIT_TIMEOUT)
        .expect("foreground daemon did not exit after `mnemofs unmount`");
    m.clear_child();
    assert!(status.success(), "foreground daemon exited with {status}");
    assert!(!is_mounted(&m.mnt));
}

#[test]
fn a_second_mount_of_the_same_store_fails_clearly() {
    let m = Mount::start();
    let d = DaemonDirs::new();
    let out = d.mount(&d.mnt, &m.store);
    assert_refused(&out, &d.mnt, "second daemon-mode mount of the same store");
    let out = mount_cli(&d.mnt, &m.store, &d.state, &["--foreground"]);
    assert_refused(&out, &d.mnt, "second foreground mount of the same store");
    // The first mount is unaffected.
    fs::write(m.m("still.md"), b"ok").expect("first mount still works");
    assert_eq!(fs::read(m.s("still.md")).expect("store"), b"ok");
}

#[test]
fn mounting_on_an_already_mounted_mountpoint_fails_clearly() {
    let m = Mount::start();
    let d = DaemonDirs::new();
    let out = mount_cli(&m.mnt, &d.store, &d.state, &[]);
    let stderr = text(&out.stderr);
    assert!(
        !out.status.success(),
        "mounting over a live mount succeeded"
    );
    assert!(!stderr.trim().is_empty(), "no message");
    assert!(stderr.to_lowercase().contains("mount"), "message: {stderr}");
    let stacked = mount_count(&m.mnt);
    assert_eq!(
        stacked, 1,
        "a second filesystem was stacked on the mountpoint"
    );
    fs::write(m.m("still.md"), b"ok").expect("first mount still works");
}

#[test]
fn mounting_on_a_non_empty_directory_fails_clearly() {
    let d = DaemonDirs::new();
    fs::write(d.mnt.join("occupied.txt"), b"x").expect("write");
    let out = d.mount(&d.mnt, &d.store);
    let msg = assert_refused(&out, &d.mnt, "mount on a non-empty directory");
    assert!(
        msg.contains("empty"),
        "message does not say the dir is not empty: {msg}"
    );
    assert!(d.mnt.join("occupied.txt").exists());
}

#[test]
fn mounting_on_a_missing_directory_or_a_file_fails_clearly() {
    let d = DaemonDirs::new();
    let missing = d.mnt.join("does-not-exist");
    let out = d.mount(&missing, &d.store);
    let msg = assert_refused(&out, &missing, "mount on a missing directory");
    assert!(
        msg.contains("exist") || msg.contains("missing") || msg.contains("no such"),
        "message does not say the mountpoint is missing: {msg}"
    );
    let file = d.mnt.join("a-file");
    fs::write(&file, b"x").expect("write");
    let out = d.mount(&file, &d.store);
    let msg = assert_refused(&out, &file, "mount on a regular file");
    assert!(
        msg.contains("director"),
        "message does not say 'not a directory': {msg}"
    );
}

#[test]
fn kill_9_leaves_a_stale_mount_that_the_next_mount_recovers() {
    let mut m = Mount::start();
    fs::write(m.m("survivor.md"), b"still here").expect("write");
    signal(m.pid(), libc::SIGKILL);
    wait_timeout(m.child_mut(), EXIT_TIMEOUT).expect("killed daemon reaped");
    m.clear_child();
    assert!(is_mounted(&m.mnt), "expected the mount to be left behind");
    let err = metadata_with_timeout(&m.mnt, Duration::from_secs(10))
        .expect("stat of a dead FUSE mount must not hang")
        .expect_err("stat of a dead FUSE mount");
    assert_eq!(err.raw_os_error(), Some(libc::ENOTCONN), "{err}");

    m.spawn(&[]);
    assert_eq!(
        fs::read(m.m("survivor.md")).expect("read after recovery"),
        b"still here"
    );
    let stacked = mount_count(&m.mnt);
    assert_eq!(stacked, 1, "recovery stacked a new mount on the stale one");
}

#[test]
fn kill_9_then_daemon_mode_mount_recovers_too() {
    let mut m = Mount::start();
    signal(m.pid(), libc::SIGKILL);
    wait_timeout(m.child_mut(), EXIT_TIMEOUT).expect("killed daemon reaped");
    m.clear_child();
    let d = DaemonDirs::new();
    let out = mount_cli(&m.mnt, &m.store, &d.state, &[]);
    // Clean up the new daemon however the test ends.
    let _guard = ForeignMount(m.mnt.clone(), d.state.clone());
    assert!(
        out.status.success(),
        "daemon-mode mount over a stale mount failed: {}\nstderr: {}",
        out.status,
        text(&out.stderr)
    );
    fs::write(m.m("after.md"), b"ok").expect("write after recovery");
    assert_eq!(fs::read(m.s("after.md")).expect("store"), b"ok");
}

/// Unmounts a mount made by daemon mode and stops its daemon on drop.
struct ForeignMount(PathBuf, PathBuf);

impl Drop for ForeignMount {
    fn drop(&mut self) {
        let _ = run_with_timeout(
            Command::new(bin()).arg("unmount").arg(&self.0),
            COMMAND_TIMEOUT,
        );
        force_unmount(&self.0);
        let parent = self.1.parent().map(Path::to_path_buf).unwrap_or_default();
        for pid in pids_mentioning(&parent) {
            signal(pid, libc::SIGKILL);
        }
    }
}

fn stops_cleanly_on(sig: libc::c_int) {
    let mut m = Mount::start();
    fs::write(m.m("kept.md"), b"kept").expect("write");
    signal(m.pid(), sig);
    let status = wait_timeout(m.child_mut(), EXIT_TIMEOUT)
        .unwrap_or_else(|| panic!("daemon did not exit within {EXIT_TIMEOUT:?} of signal {sig}"));
    m.clear_child();
    assert!(
        status.success(),
        "daemon exited with {status} on signal {sig}"
    );
    assert!(!is_mounted(&m.mnt), "signal {sig} left the mount behind");
    assert_eq!(fs::read(m.s("kept.md")).expect("store"), b"kept");
}

#[test]
fn sigterm_in_foreground_unmounts_and_exits_zero() {
    stops_cleanly_on(libc::SIGTERM);
}

#[test]
fn sigint_in_foreground_unmounts_and_exits_zero() {
    stops_cleanly_on(libc::SIGINT);
}

/// Polls (never sleeps a fixed time) until `read` yields `want`.
#[track_caller]
fn visible_within(
    limit: Duration,
    what: &str,
    mut read: impl FnMut() -> Option<Vec<u8>>,
    want: Option<&[u8]>,
) {
    let mut last = None;
    let ok = poll_until(limit, || {
        last = read();
        last.as_deref() == want
    });
    assert!(
        ok,
        "{what}: not visible through the mount within {limit:?}; last saw {:?}, want {:?}",
        last.as_deref().map(String::from_utf8_lossy),
        want.map(String::from_utf8_lossy)
    );
}

#[test]
fn external_changes_to_the_store_show_through_the_mount() {
    let m = Mount::start();
    let limit = Duration::from_secs(2);
    let read = |p: PathBuf| move || fs::read(&p).ok();

    // A name the kernel has just cached as missing.
    assert!(fs::read(m.m("ext.md")).is_err());
    fs::write(m.s("ext.md"), b"written outside").expect("external write");
    visible_within(
        limit,
        "new file",
        read(m.m("ext.md")),
        Some(b"written outside"),
    );

    // Same size, different bytes: only invalidation can reveal this.
    fs::write(m.m("cached.md"), b"AAAA").expect("write through mount");
    assert_eq!(fs::read(m.m("cached.md")).expect("read"), b"AAAA");
    fs::write(m.s("cached.md"), b"BBBB").expect("external rewrite");
    visible_within(
        limit,
        "same-size rewrite",
        read(m.m("cached.md")),
        Some(b"BBBB"),
    );

    // Growth and atomic replacement, as git checkout does.
    fs::write(m.s("cached.md.tmp"), b"replaced and longer").expect("tmp");
    fs::rename(m.s("cached.md.tmp"), m.s("cached.md")).expect("rename");
    visible_within(
        limit,
        "rename-over",
        read(m.m("cached.md")),
        Some(b"replaced and longer"),
    );

    fs::remove_file(m.s("ext.md")).expect("external delete");
    visible_within(limit, "deletion", read(m.m("ext.md")), None);

    fs::create_dir(m.s("newdir")).expect("external mkdir");
    fs::write(m.s("newdir/inner.md"), b"inner").expect("external write");
    visible_within(
        limit,
        "new dir",
        read(m.m("newdir/inner.md")),
        Some(b"inner"),
    );
    let listed = poll_until(limit, || {
        fs::read_dir(&m.mnt)
            .map(|it| it.flatten().any(|e| e.file_name() == "newdir"))
            .unwrap_or(false)
    });
    assert!(
        listed,
        "externally created directory not listed within {limit:?}"
    );
}

/// The kernel keeps folder listings between reads; changes made directly
/// in the store must still show up in the next listing.
#[test]
fn a_cached_listing_shows_files_created_removed_and_renamed_in_the_store() {
    let m = Mount::start();
    fs::create_dir(m.s("d")).expect("mkdir in the store");
    fs::write(m.s("d/a"), b"a").expect("seed");
    let list = || -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(m.m("d"))
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    assert_eq!(list(), ["a"]);
    assert_eq!(list(), ["a"], "second listing, now from the kernel's cache");
    let limit = Duration::from_secs(2);
    fs::write(m.s("d/b"), b"b").expect("external create");
    assert!(poll_until(limit, || list() == ["a", "b"]), "{:?}", list());
    fs::remove_file(m.s("d/a")).expect("external remove");
    assert!(poll_until(limit, || list() == ["b"]), "{:?}", list());
    fs::rename(m.s("d/b"), m.s("d/c")).expect("external rename");
    assert!(poll_until(limit, || list() == ["c"]), "{:?}", list());
}
