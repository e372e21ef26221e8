//! One daemon per store: an `flock` on the store directory itself.
//!
//! Locking the directory (not a file in the state dir) means two mounts of
//! one store are refused even when they were given different state dirs,
//! and nothing is ever written into the store for it. `flock` locks vanish
//! with the process that held them, so a lock left by a crashed daemon is
//! simply free again. The lock is never released explicitly: after a fork
//! the daemon shares it with the parent, and an explicit unlock by the
//! exiting parent would drop it for both.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};

/// Held for as long as a daemon serves the store.
#[derive(Debug)]
pub struct StoreLock {
    _dir: File,
}

impl StoreLock {
    /// Takes the lock for `store`, waiting briefly for a daemon that is
    /// just exiting. Fails, naming the holder's pid, if the store is served.
    pub fn acquire(store: &Path, state_dir: &Path) -> anyhow::Result<StoreLock> {
        let dir =
            File::open(store).with_context(|| format!("cannot open store {}", store.display()))?;
        // A daemon that died waiting on its own mount holds the lock until
        // its connection is aborted.
        if let Some(entry) = super::registry::recorded(store)
            && let Some(mountpoint) = &entry.mountpoint
            && !super::registry::alive(entry.pid)
        {
            super::mountpoint::abort_orphaned(mountpoint);
        }
        let start = Instant::now();
        // Asked once it is found (it may be starting): a process serving
        // the store for its agent lets go of it, and goes through the
        // mount from then on.
        let mut asked = false;
        let mut kept = String::new();
        loop {
            // SAFETY: valid descriptor.
            if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(StoreLock { _dir: dir });
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(err).context("cannot lock the store");
            }
            if !asked && let Some(answer) = ask_for_the_store(store, state_dir, "this mount") {
                asked = true;
                match answer {
                    Ok(()) => continue,
                    Err(why) => kept = format!(" and keeps it ({why})"),
                }
            }
            if start.elapsed() > super::LOCK_WAIT {
                let holder = holder_pid(store, state_dir);
                let command = holder.and_then(command_of).unwrap_or_default();
                match holder {
                    Some(pid) if command.starts_with("serve") => bail!(
                        "store {} is served by `mnemofs {command}` (pid {pid}); stop it and mount again",
                        store.display()
                    ),
                    Some(pid) if !command.is_empty() && !command.starts_with("mount") => bail!(
                        "store {} is in use by `mnemofs {command}` (pid {pid}), which opened it without a daemon{kept}; stop it and mount again (with a mount running, such commands go through it)",
                        store.display()
                    ),
                    Some(pid) => bail!(
                        "store {} is already mounted by another mnemofs daemon (pid {pid})",
                        store.display()
                    ),
                    None => bail!(
                        "store {} is already mounted by another mnemofs daemon",
                        store.display()
                    ),
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl StoreLock {
    /// Takes the lock if nobody holds it, without waiting.
    pub fn try_acquire(store: &Path) -> anyhow::Result<Option<StoreLock>> {
        let dir =
            File::open(store).with_context(|| format!("cannot open store {}", store.display()))?;
        // SAFETY: valid descriptor.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Some(StoreLock { _dir: dir }));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Ok(None);
        }
        Err(err).context("cannot lock the store")
    }
}

/// The pid of the daemon serving `store`, if one does. The daemon's pid
/// file comes first: in daemon mode the lock was taken before forking, so
/// /proc/locks names the parent that has since exited.
pub(crate) fn holder_pid(store: &Path, state_dir: &Path) -> Option<u32> {
    let alive = super::registry::alive;
    std::fs::read_to_string(state_dir.join(PID_FILE))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|pid| alive(*pid))
        .or_else(|| lock_holder(std::fs::metadata(store).ok()?.ino()).filter(|pid| alive(*pid)))
}

/// The mnemofs subcommand a process runs (`tool --store x`), from its
/// command line; `None` if it is not readable.
fn command_of(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .skip(1)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let first = args.iter().position(|a| !a.starts_with('-'))?;
    Some(
        args[first..]
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Asks the process that serves `store` for its agent (`mnemofs mcp`,
/// `mnemofs tool`) to hand the store to `taker` (this mount, this
/// server): `Ok` once the lock is free, else why not; `None` when no such
/// process serves it. The process is found in the registry, or (registered
/// in another runtime dir) by its socket in the state dir.
pub(crate) fn ask_for_the_store(
    store: &Path,
    state_dir: &Path,
    taker: &str,
) -> Option<Result<(), String>> {
    let socket = match super::registry::by_store(store) {
        Some(entry) => entry.mountpoint.is_none().then_some(entry.socket),
        None => Some(state_dir.join(super::control::SOCKET)).filter(|s| s.exists()),
    }?;
    let holder = holder_pid(store, state_dir).unwrap_or_default();
    let command = command_of(holder).unwrap_or_default();
    let asked = super::control::ask_to_hand_over(&socket, HAND_OVER_ANSWER);
    if asked.is_ok() {
        tracing::info!(
            "`mnemofs {command}` (pid {holder}) handed the store over; it goes through {taker} now"
        );
    }
    Some(asked)
}

/// How long a mount waits for a process serving the store to hand it
/// over: its running requests end first.
const HAND_OVER_ANSWER: std::time::Duration = std::time::Duration::from_secs(25);

/// The daemon's pid file, in its state dir.
pub(crate) const PID_FILE: &str = "mnemofs.pid";

/// The pid holding an flock on inode `ino`, from /proc/locks.
fn lock_holder(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let suffix = format!(":{ino}");
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let dev_ino = fields.get(5)?;
        (fields.get(1) == Some(&"FLOCK") && dev_ino.ends_with(&suffix))
            .then(|| fields.get(4)?.parse().ok())
            .flatten()
    })
}
