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
pub use fsevents::StoreWatcher;
#[cfg(target_os = "linux")]
pub use inotify::StoreWatcher;

/// How long the first change after a quiet spell waits for the rest of
/// its burst (a `git checkout`) before the batch is handed out.
const GATHER: Duration = Duration::from_millis(3);

/// While changes keep coming, how often the queue is drained.
const BURST_INTERVAL: Duration = Duration::from_millis(20);
