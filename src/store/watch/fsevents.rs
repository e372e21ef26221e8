//! The store watcher on macOS: FSEvents, through the `notify` crate.
//!
//! One stream watches the whole tree, so unlike inotify there is no watch
//! to add for a new folder or to drop for one moved out. FSEvents names
//! paths with symlinks resolved (`/private/var/...` for `/var/...`), so the
//! root is resolved once at the start and paths that are not below it (a
//! folder moved out of the store) are dropped. Reads are ignored. A folder
//! that appears (made, or moved in) is walked, since FSEvents reports the
//! folder but not what it already holds; when FSEvents says it dropped
//! events, the whole store is reported, as after an inotify overflow.
//!
//! This backend is type-checked and linted for macOS but has never run.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use notify::{EventKind, RecursiveMode, Watcher};

use super::{BURST_INTERVAL, GATHER};
use crate::store::{FileKind, Store, StorePath};

/// An FSEvents stream over the whole store.
pub struct StoreWatcher {
    /// Stops the stream when dropped.
    _stream: notify::RecommendedWatcher,
    events: Receiver<notify::Result<notify::Event>>,
    /// What a [`Stopper`] sends to end a wait at once.
    wake: (Sender<()>, Receiver<()>),
    store: Arc<Store>,
    /// The store's root with symlinks resolved, as FSEvents names it.
    root: PathBuf,
    /// The last drain found changes: keep draining on a timer.
    busy: bool,
}

impl std::fmt::Debug for StoreWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreWatcher")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Ends a [`StoreWatcher`]'s wait from another thread, so that the thread
/// draining it stops without waiting out its idle timeout.
#[derive(Debug, Clone)]
pub struct Stopper {
    wake: Sender<()>,
}

impl Stopper {
    /// Ends the current wait.
    pub fn stop(&self) {
        let _ = self.wake.send(());
    }
}

impl StoreWatcher {
    /// What ends this watcher's wait, from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper {
            wake: self.wake.0.clone(),
        }
    }

    /// Watches every directory of `store`, now and later.
    pub fn start(store: Arc<Store>) -> io::Result<Self> {
        let root = std::fs::canonicalize(store.root_path())?;
        let (tx, events) = crossbeam_channel::unbounded();
        let mut stream = notify::recommended_watcher(move |event| {
            // The receiver is gone only once the watcher is dropped.
            let _ = tx.send(event);
        })
        .map_err(into_io)?;
        stream
            .watch(&root, RecursiveMode::Recursive)
            .map_err(into_io)?;
        Ok(StoreWatcher {
            _stream: stream,
            events,
            wake: crossbeam_channel::unbounded(),
            store,
            root,
            busy: false,
        })
    }

    /// Waits up to `idle_timeout` for changes and returns the paths that
    /// changed, sorted and without repeats (empty after a quiet wait).
    pub fn next_batch(&mut self, idle_timeout: Duration) -> io::Result<Vec<StorePath>> {
        let mut changed = Vec::new();
        if self.busy {
            std::thread::sleep(BURST_INTERVAL);
        } else {
            crossbeam_channel::select! {
                recv(self.events) -> event => match event {
                    Ok(event) => self.take(event, &mut changed),
                    Err(_) => return Err(io::Error::other("the FSEvents stream stopped")),
                },
                recv(self.wake.1) -> _ => return Ok(Vec::new()),
                default(idle_timeout) => return Ok(Vec::new()),
            }
            std::thread::sleep(GATHER);
        }
        while let Ok(event) = self.events.try_recv() {
            self.take(event, &mut changed);
        }
        self.busy = !changed.is_empty();
        changed.sort();
        changed.dedup();
        Ok(changed)
    }

    /// Adds what one event says changed to `changed`.
    fn take(&self, event: notify::Result<notify::Event>, changed: &mut Vec<StorePath>) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!("the store watcher: {e}; rescanning the whole store");
                self.walk(&StorePath::root(), changed);
                return;
            }
        };
        if event.need_rescan() {
            tracing::warn!("FSEvents dropped events; rescanning the whole store");
            self.walk(&StorePath::root(), changed);
            return;
        }
        if matches!(event.kind, EventKind::Access(_)) {
            return;
        }
        let appeared = matches!(
            event.kind,
            EventKind::Create(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
        );
        for path in &event.paths {
            let Some(path) = self.store_path(path) else {
                continue;
            };
            if appeared
                && self
                    .store
                    .stat(&path)
                    .is_ok_and(|st| st.kind == FileKind::Directory)
            {
                self.walk(&path, changed);
            }
            changed.push(path);
        }
    }

    /// The store path of an absolute path FSEvents named; `None` for the
    /// root itself and for paths outside the store.
    fn store_path(&self, path: &Path) -> Option<StorePath> {
        let relative = path.strip_prefix(&self.root).ok()?;
        if relative.as_os_str().is_empty() {
            return None;
        }
        StorePath::new(relative)
    }

    /// Pushes every path below `top` to `changed`.
    fn walk(&self, top: &StorePath, changed: &mut Vec<StorePath>) {
        let mut stack = vec![top.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match self.store.read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) => {
                    tracing::debug!("cannot list {dir}: {e}");
                    continue;
                }
            };
            for entry in entries {
                let Some(path) = dir.join(&entry.name) else {
                    continue;
                };
                if entry.kind == FileKind::Directory {
                    stack.push(path.clone());
                }
                changed.push(path);
            }
        }
    }
}

fn into_io(e: notify::Error) -> io::Error {
    match e.kind {
        notify::ErrorKind::Io(e) => e,
        _ => io::Error::other(e.to_string()),
    }
}

// Compiled (type-checked) for macOS by .ci/check-macos; they run only on a
// Mac. The same cases as the inotify backend's.
#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::store::watch::testing::watcher;

    /// Collects batches until `want` has been reported or five seconds pass.
    fn collect_until(w: &mut StoreWatcher, want: &str) -> Vec<String> {
        crate::store::watch::testing::collect_until(w, want, Duration::from_secs(5))
    }

    #[test]
    fn reports_writes_in_nested_folders() {
        let (dir, mut w) = watcher();
        fs::write(dir.path().join("a/b/note.md"), "x").unwrap();
        let seen = collect_until(&mut w, "a/b/note.md");
        assert!(seen.contains(&"a/b/note.md".to_string()), "{seen:?}");
    }

    #[test]
    fn a_folder_moved_in_is_reported_with_what_it_holds() {
        let (dir, mut w) = watcher();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(outside.path().join("new/deep")).unwrap();
        fs::write(outside.path().join("new/deep/early.md"), "x").unwrap();
        fs::rename(outside.path().join("new"), dir.path().join("new")).unwrap();
        let seen = collect_until(&mut w, "new/deep/early.md");
        assert!(seen.contains(&"new/deep/early.md".to_string()), "{seen:?}");
    }

    #[test]
    fn paths_outside_the_store_and_the_root_itself_are_dropped() {
        let (_dir, w) = watcher();
        assert_eq!(w.store_path(&w.root), None);
        assert_eq!(w.store_path(Path::new("/elsewhere/x.md")), None);
        assert_eq!(
            w.store_path(&w.root.join("a/b.md")),
            StorePath::new("a/b.md")
        );
    }
}
