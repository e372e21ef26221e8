//! Keeps the kernel's caches honest when the store changes behind the mount.
//!
//! `git pull` or a sync tool may write into the backing directory while it
//! is mounted. The store watcher (`watch.rs`) reports those paths in
//! batches; this module works out which kernel entries and inodes they
//! touch, and sends `inval_entry` / `inval_inode` through the session's
//! notifier.
//!
//! Two rules keep this safe. Notifications are sent from this thread only,
//! never from a FUSE handler (the kernel may wait on a handler while we
//! wait on the kernel). And the inode table lock is released before any
//! notification is sent. Changes we made ourselves through the mount show
//! up here too; they are recognised because the table already matches the
//! backing state, and cost nothing.

use std::ffi::OsString;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use fuser::{INodeNo, Notifier};

use super::core::StoreFs;
use super::inodes::ROOT;
use crate::store::StorePath;
use crate::store::watch::StoreWatcher;

/// A kernel cache entry to drop.
#[derive(Debug, PartialEq, Eq)]
enum Invalidation {
    /// The name in the directory may now name something else (or nothing).
    Entry(u64, OsString),
    /// The inode's attributes changed; `true` drops its cached data too.
    Inode(u64, bool),
}

/// Called with each batch of paths that changed in the store.
pub(super) type ChangeSink = Box<dyn Fn(&[StorePath]) + Send>;

/// The running watcher; dropping it stops its thread.
pub struct ExternalChangeWatcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ExternalChangeWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalChangeWatcher")
            .finish_non_exhaustive()
    }
}

impl ExternalChangeWatcher {
    /// Starts watching the store behind `fs`, invalidating through `notifier`.
    /// Every batch of changed paths is also handed to `on_change` (the
    /// indexer and the background tasks re-read them).
    pub fn start(fs: Arc<StoreFs>, notifier: Notifier, on_change: ChangeSink) -> io::Result<Self> {
        let watcher = StoreWatcher::start(Arc::clone(fs.store()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("mnemofs-watch".into())
                .spawn(move || run(&fs, &notifier, &*on_change, watcher, &stop))?
        };
        Ok(ExternalChangeWatcher {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for ExternalChangeWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    fs: &StoreFs,
    notifier: &Notifier,
    on_change: &dyn Fn(&[StorePath]),
    mut watcher: StoreWatcher,
    stop: &AtomicBool,
) {
    // Most changes are our own, already known: never let sorting them out
    // slow down the FUSE workers.
    crate::background::lower_priority();
    let generation = || fs.views().map_or(0, |v| v.index().generation());
    let mut seen_generation = generation();
    while !stop.load(Ordering::Relaxed) {
        let batch = match watcher.next_batch(Duration::from_millis(50)) {
            Ok(batch) => batch,
            Err(e) => {
                tracing::error!(
                    "the store watcher failed, changes behind the mount go unseen: {e}"
                );
                return;
            }
        };
        if generation() != seen_generation {
            seen_generation = generation();
            invalidate_views(fs, notifier);
        }
        if !batch.is_empty() {
            on_change(&batch);
        }
        fs.deliver_events();
        let work: Vec<Invalidation> = batch
            .iter()
            .flat_map(|p| invalidations_for(fs, p))
            .collect();
        for inval in work {
            let result = match &inval {
                Invalidation::Entry(parent, name) => notifier.inval_entry(INodeNo(*parent), name),
                Invalidation::Inode(ino, data) => {
                    notifier.inval_inode(INodeNo(*ino), if *data { 0 } else { -1 }, 0)
                }
            };
            // ENOENT just means the kernel had nothing cached.
            if let Err(e) = result
                && e.raw_os_error() != Some(libc::ENOENT)
            {
                tracing::debug!("invalidate {inval:?}: {e}");
            }
        }
    }
}

/// The index changed: every view entry the kernel holds may be stale.
fn invalidate_views(fs: &StoreFs, notifier: &Notifier) {
    let Some(views) = &fs.views else { return };
    for (parent, name) in views.cached_names() {
        if let Err(e) = notifier.inval_entry(INodeNo(parent), &name)
            && e.raw_os_error() != Some(libc::ENOENT)
        {
            tracing::debug!("invalidate view entry {name:?}: {e}");
        }
    }
}

/// Compares what the kernel may have cached for `path` with the store now.
fn invalidations_for(fs: &StoreFs, path: &StorePath) -> Vec<Invalidation> {
    let (Some(parent_path), Some(name)) = (path.parent(), path.file_name()) else {
        return Vec::new();
    };
    let backing = fs.store().stat(path).ok();
    let table = fs.inodes.lock();
    // Find the parent's inode by walking names from the root.
    let mut parent = ROOT;
    for component in parent_path.as_path().iter() {
        match table.child(parent, component) {
            Some(ino) => parent = ino,
            // The kernel never saw the parent, so it cached nothing below it.
            None => return Vec::new(),
        }
    }
    let known = table.child(parent, name);
    let mut out = Vec::new();
    match (
        known.and_then(|ino| table.get(ino).map(|n| (ino, n))),
        backing,
    ) {
        // A new name: the kernel's cached listing of the folder is stale.
        (None, Some(_)) => out.push(Invalidation::Inode(parent, true)),
        (None, None) => {}
        (Some((ino, node)), Some(st)) if node.kind == st.kind && node.backing_ino == st.ino => {
            let version = super::inodes::cache_version(&st);
            if node.cached_version.is_some_and(|v| v != version) && node.open_writers == 0 {
                out.push(Invalidation::Inode(ino, true));
            } else {
                out.push(Invalidation::Inode(ino, false));
            }
        }
        (Some(_), _) => {
            out.push(Invalidation::Entry(parent, name.to_os_string()));
            out.push(Invalidation::Inode(parent, true));
        }
    }
    out
}
