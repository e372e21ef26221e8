//! Reports which paths of the backing store changed, behind whoever writes.
//!
//! One type, [`StoreWatcher`], with one backend per platform: inotify on
//! Linux (`inotify.rs`, a watch per folder), FSEvents through the `notify`
//! crate on macOS (`fsevents.rs`, one stream for the whole tree). Both hand
//! out the same batches: the changed paths, sorted, without repeats, with
//! everything inside a folder that appeared, and the whole store after the
//! platform dropped events.
//!
//! Most changes in the store are the daemon's own, made while a FUSE worker
//! answers a request. Waking a sleeping thread costs that worker a
//! cross-CPU interrupt, so while changes keep coming the watcher drains its
//! queue on a timer and nobody sleeps on it; only the first change after a
//! quiet spell wakes it.

use std::time::Duration;

#[cfg(target_os = "macos")]
mod fsevents;
#[cfg(target_os = "linux")]
mod inotify;

#[cfg(target_os = "macos")]
pub use fsevents::{Stopper, StoreWatcher};
#[cfg(target_os = "linux")]
pub use inotify::{Stopper, StoreWatcher};

/// How long the first change after a quiet spell waits for the rest of
/// its burst (a `git checkout`) before the batch is handed out.
const GATHER: Duration = Duration::from_millis(3);

/// While changes keep coming, how often the queue is drained.
const BURST_INTERVAL: Duration = Duration::from_millis(20);

/// What both backends' tests start from.
#[cfg(test)]
mod testing {
    use std::fs;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::StoreWatcher;
    use crate::store::Store;

    /// A watcher on a fresh store holding the folders `a/b`.
    pub(super) fn watcher() -> (tempfile::TempDir, StoreWatcher) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let w = StoreWatcher::start(store).unwrap();
        (dir, w)
    }

    /// Collects batches until `want` has been reported or `within` passes.
    pub(super) fn collect_until(w: &mut StoreWatcher, want: &str, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            for p in w.next_batch(Duration::from_millis(50)).unwrap() {
                seen.push(p.as_path().to_string_lossy().into_owned());
            }
            if seen.iter().any(|s| s == want) {
                break;
            }
        }
        seen
    }
}
