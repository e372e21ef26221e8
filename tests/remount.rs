//! `unmount` then `mount` right after a burst of writes: `unmount` returns
//! only once the daemon has exited, a remount at once always works, and
//! the daemon's own background writes never land in the bare folder
//! beneath the mountpoint after the mount is gone.

#![cfg(target_os = "linux")]

mod common;

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, force_unmount, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(180);
const ROUNDS: usize = 6;
const FILES: usize = 200;

/// A store, a mountpoint and a state dir in a temp dir of their own.
struct Dirs {
    tmp: tempfile::TempDir,
    store: PathBuf,
    mnt: PathBuf,
    state: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        let (store, mnt, state) = (
            tmp.path().join("store"),
            tmp.path().join("mnt"),
            tmp.path().join("state"),
        );
        for d in [&store, &mnt] {
            fs::create_dir(d).unwrap();
        }
        Dirs {
            tmp,
            store,
            mnt,
            state,
        }
    }

    /// Runs mnemofs with these dirs' runtime and config folders.
    fn mnemofs(&self, args: &[&OsStr]) -> Output {
        run_with_timeout(
            Command::new(bin())
                .args(args)
                .env("XDG_RUNTIME_DIR", self.tmp.path().join("run"))
                .env("XDG_CONFIG_HOME", self.tmp.path().join("config")),
            TIMEOUT,
        )
        .expect("mnemofs timed out")
    }

    /// Mounts the store; the daemon's pid.
    fn mount(&self, extra: &[&str]) -> u32 {
        let mut args: Vec<&OsStr> = vec![
            "mount".as_ref(),
            self.mnt.as_os_str(),
            "--store".as_ref(),
            self.store.as_os_str(),
            "--state-dir".as_ref(),
            self.state.as_os_str(),
        ];
        args.extend(extra.iter().map(|a| OsStr::new(*a)));
        let out = self.mnemofs(&args);
        assert!(
            out.status.success(),
            "mount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        fs::read_to_string(self.state.join("mnemofs.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    fn unmount(&self) -> Output {
        self.mnemofs(&["unmount".as_ref(), self.mnt.as_os_str()])
    }
}

/// Whether process `pid` still runs: not gone, nor a zombie its new
/// parent has yet to reap. Its `/proc` status line when it does.
fn still_running(pid: u32) -> Option<String> {
    let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = !state.is_empty()
        && state
            .rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'));
    running.then_some(state)
}

#[test]
fn unmount_waits_for_the_daemon_and_an_immediate_remount_works() {
    let dirs = Dirs::new();
    let (store, mnt) = (&dirs.store, &dirs.mnt);
    let guard = scopeguard(mnt);
    for round in 0..ROUNDS {
        let pid = dirs.mount(&[]);
        // Files without frontmatter: the daemon's start-up and close-time
        // normalization rewrites them in the background.
        for i in 0..FILES {
            fs::write(
                mnt.join(format!("note-{round}-{i}.md")),
                format!("note {i}\n"),
            )
            .unwrap();
        }
        let out = dirs.unmount();
        assert!(
            out.status.success(),
            "round {round}: unmount failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(state) = still_running(pid) {
            panic!("round {round}: unmount returned before the daemon exited: {state}");
        }
        let stray: Vec<_> = fs::read_dir(mnt)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            stray.is_empty(),
            "round {round}: written beneath the mountpoint: {stray:?}"
        );
    }
    let kept = fs::read_dir(store).unwrap().count();
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
    let dirs = Dirs::new();
    let mnt = &dirs.mnt;
    let guard = scopeguard(mnt);
    let pid = dirs.mount(&["--no-organizer"]);
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
    let out = dirs.unmount();
    let _ = copy.kill();
    let _ = copy.wait();
    assert!(
        out.status.success(),
        "unmount failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(still_running(pid), None, "the daemon still runs");
    drop(guard);
}
