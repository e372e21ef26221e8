//! `unmount` then `mount` right after a burst of writes: `unmount` returns
//! only once the daemon has exited, a remount at once always works, and
//! the daemon's own background writes never land in the bare folder
//! beneath the mountpoint after the mount is gone.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::process::Command;
use std::time::Duration;

use common::{bin, force_unmount, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(180);
const ROUNDS: usize = 6;
const FILES: usize = 200;

#[test]
fn unmount_waits_for_the_daemon_and_an_immediate_remount_works() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mnt, state) = (
        tmp.path().join("store"),
        tmp.path().join("mnt"),
        tmp.path().join("state"),
    );
    for d in [&store, &mnt] {
        fs::create_dir(d).unwrap();
    }
    let mnemofs = |args: &[&std::ffi::OsStr]| {
        run_with_timeout(
            Command::new(bin())
                .args(args)
                .env("XDG_RUNTIME_DIR", tmp.path().join("run"))
                .env("XDG_CONFIG_HOME", tmp.path().join("config")),
            TIMEOUT,
        )
        .expect("mnemofs timed out")
    };
    let guard = scopeguard(&mnt);
    for round in 0..ROUNDS {
        let out = mnemofs(&[
            "mount".as_ref(),
            mnt.as_os_str(),
            "--store".as_ref(),
            store.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
        ]);
        assert!(
            out.status.success(),
            "round {round}: mount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pid: u32 = fs::read_to_string(state.join("mnemofs.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Files without frontmatter: the daemon's start-up and close-time
        // normalization rewrites them in the background.
        for i in 0..FILES {
            fs::write(
                mnt.join(format!("note-{round}-{i}.md")),
                format!("note {i}\n"),
            )
            .unwrap();
        }
        let out = mnemofs(&["unmount".as_ref(), mnt.as_os_str()]);
        assert!(
            out.status.success(),
            "round {round}: unmount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Exited: gone, or a zombie its new parent has yet to reap.
        let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let running = !state.is_empty()
            && state
                .rsplit(')')
                .next()
                .is_some_and(|s| !s.trim_start().starts_with('Z'));
        assert!(
            !running,
            "round {round}: unmount returned before the daemon exited: {state}"
        );
        let stray: Vec<_> = fs::read_dir(&mnt)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            stray.is_empty(),
            "round {round}: written beneath the mountpoint: {stray:?}"
        );
    }
    let kept = fs::read_dir(&store).unwrap().count();
    assert_eq!(kept, ROUNDS * FILES, "memories lost or duplicated");
    drop(guard);
}

/// Unmounts `mnt` when the test ends, even on panic.
fn scopeguard(mnt: &std::path::Path) -> impl Drop + '_ {
    struct Guard<'a>(&'a std::path::Path);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            force_unmount(self.0);
        }
    }
    Guard(mnt)
}

/// A copy of the mount in another mount namespace (a container given it
/// as a volume, `unshare -m`) does not keep the daemon alive: `unmount`
/// returns once it has exited, and the copy answers as unmounted.
#[test]
fn unmount_ends_the_daemon_while_another_namespace_holds_a_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (store, mnt, state) = (
        tmp.path().join("store"),
        tmp.path().join("mnt"),
        tmp.path().join("state"),
    );
    for d in [&store, &mnt] {
        fs::create_dir(d).unwrap();
    }
    let mnemofs = |args: &[&std::ffi::OsStr]| {
        run_with_timeout(
            Command::new(bin())
                .args(args)
                .env("XDG_RUNTIME_DIR", tmp.path().join("run"))
                .env("XDG_CONFIG_HOME", tmp.path().join("config")),
            TIMEOUT,
        )
        .expect("mnemofs timed out")
    };
    let guard = scopeguard(&mnt);
    let out = mnemofs(&[
        "mount".as_ref(),
        mnt.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "--state-dir".as_ref(),
        state.as_os_str(),
        "--no-organizer".as_ref(),
    ]);
    assert!(
        out.status.success(),
        "mount failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid: u32 = fs::read_to_string(state.join("mnemofs.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let Ok(mut copy) = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sleep", "300"])
        .spawn()
    else {
        eprintln!("skipped: unshare is not available");
        return;
    };
    let shown = mnt.to_string_lossy().into_owned();
    let copied = common::poll_until(Duration::from_secs(10), || {
        fs::read_to_string(format!("/proc/{}/mountinfo", copy.id()))
            .is_ok_and(|info| info.contains(&shown))
            && fs::read_link(format!("/proc/{}/ns/mnt", copy.id())).ok()
                != fs::read_link("/proc/self/ns/mnt").ok()
    });
    if !copied {
        let _ = copy.kill();
        let _ = copy.wait();
        eprintln!("skipped: cannot make a mount namespace here (not root?)");
        return;
    }
    let out = mnemofs(&["unmount".as_ref(), mnt.as_os_str()]);
    let _ = copy.kill();
    let _ = copy.wait();
    assert!(
        out.status.success(),
        "unmount failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = !state.is_empty()
        && state
            .rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'));
    assert!(!running, "the daemon still runs: {state}");
    drop(guard);
}
