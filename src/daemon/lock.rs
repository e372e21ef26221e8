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
    pub fn acquire(store: &Path) -> anyhow::Result<StoreLock> {
        let dir =
            File::open(store).with_context(|| format!("cannot open store {}", store.display()))?;
        let start = Instant::now();
        loop {
            // SAFETY: valid descriptor.
            if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(StoreLock { _dir: dir });
            }
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(err).context("cannot lock the store");
            }
            if start.elapsed() > super::LOCK_WAIT {
                let holder = dir
                    .metadata()
                    .ok()
                    .and_then(|m| lock_holder(m.ino()))
                    .map(|pid| format!(" (pid {pid})"))
                    .unwrap_or_default();
                bail!(
                    "store {} is already mounted by another mnemofs daemon{holder}",
                    store.display()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

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
