//! The store watcher on Linux: inotify, one watch per folder.
//!
//! Only changes are watched: creation, deletion, moves, a close after
//! writing, and attribute changes. Opening or reading a file queues
//! nothing, so reads through the mount cost the watcher nothing, and a
//! file written in many pieces is reported once, when it is closed.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

use super::{BURST_INTERVAL, GATHER};
use crate::store::{FileKind, Store, StorePath};

/// What a directory watch asks for.
const MASK: u32 = libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_CLOSE_WRITE
    | libc::IN_ATTRIB
    | libc::IN_ONLYDIR
    | libc::IN_EXCL_UNLINK;

/// An inotify instance watching every directory of the store.
pub struct StoreWatcher {
    fd: OwnedFd,
    /// An eventfd a [`Stopper`] makes readable: a wait ends at once.
    wake: Arc<OwnedFd>,
    store: Arc<Store>,
    /// Watch descriptor → the directory it watches.
    dirs: HashMap<i32, StorePath>,
    buffer: Vec<u8>,
    /// The last drain found changes: keep draining on a timer.
    busy: bool,
    /// Whether running out of watches was already reported.
    warned_limit: bool,
}

impl std::fmt::Debug for StoreWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreWatcher")
            .field("dirs", &self.dirs.len())
            .finish_non_exhaustive()
    }
}

/// Ends a [`StoreWatcher`]'s waits from another thread, so that the
/// thread draining it stops without waiting out its idle timeout.
#[derive(Debug, Clone)]
pub struct Stopper {
    wake: Arc<OwnedFd>,
}

impl Stopper {
    /// Ends the current wait and every later one.
    pub fn stop(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to an eventfd we own.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

impl StoreWatcher {
    /// Watches every directory of `store` as it is now.
    pub fn start(store: Arc<Store>) -> io::Result<Self> {
        // SAFETY: inotify_init1 has no preconditions; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: eventfd has no preconditions; the result is checked.
        let wake = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut watcher = StoreWatcher {
            fd,
            // SAFETY: a fresh descriptor that nothing else owns.
            wake: Arc::new(unsafe { OwnedFd::from_raw_fd(wake) }),
            store,
            dirs: HashMap::new(),
            buffer: vec![0; 64 * 1024],
            busy: false,
            warned_limit: false,
        };
        watcher.watch_tree(&StorePath::root(), None)?;
        Ok(watcher)
    }

    /// What ends this watcher's waits, from another thread.
    pub fn stopper(&self) -> Stopper {
        Stopper {
            wake: Arc::clone(&self.wake),
        }
    }

    /// Number of directories watched.
    #[cfg(test)]
    fn watched_dirs(&self) -> usize {
        self.dirs.len()
    }

    /// Waits up to `idle_timeout` for changes and returns the paths that
    /// changed, sorted and without repeats (empty after a quiet wait).
    pub fn next_batch(&mut self, idle_timeout: Duration) -> io::Result<Vec<StorePath>> {
        if self.busy {
            std::thread::sleep(BURST_INTERVAL);
        } else if self.wait_readable(idle_timeout)? {
            std::thread::sleep(GATHER);
        } else {
            return Ok(Vec::new());
        }
        let mut changed = self.drain()?;
        self.busy = !changed.is_empty();
        changed.sort();
        changed.dedup();
        Ok(changed)
    }

    /// Waits for events; false after `timeout`, or at once once stopped.
    fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        let mut pfds = [self.fd.as_raw_fd(), self.wake.as_raw_fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: two valid pollfds for the duration of the call.
        let n = unsafe { libc::poll(pfds.as_mut_ptr(), 2, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        // Stopped: the eventfd stays readable, so every later wait ends too.
        Ok(n > 0 && pfds[1].revents == 0)
    }

    /// Reads every queued event; returns the changed paths.
    fn drain(&mut self) -> io::Result<Vec<StorePath>> {
        let mut changed = Vec::new();
        let mut new_dirs = Vec::new();
        let mut overflowed = false;
        // Taken out while events borrow it, so the watch table can change.
        let mut buffer = std::mem::take(&mut self.buffer);
        let result = loop {
            // SAFETY: the buffer is valid for writes of its length.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => break Ok(()),
                    io::ErrorKind::Interrupted => continue,
                    _ => break Err(e),
                }
            }
            let n = n as usize;
            if n == 0 {
                break Ok(());
            }
            for event in parse_events(&buffer[..n]) {
                if event.mask & libc::IN_Q_OVERFLOW != 0 {
                    overflowed = true;
                    continue;
                }
                if event.mask & libc::IN_IGNORED != 0 {
                    self.dirs.remove(&event.wd);
                    continue;
                }
                let Some(dir) = self.dirs.get(&event.wd) else {
                    continue;
                };
                let path = match event.name {
                    Some(name) => match dir.join(name) {
                        Some(p) => p,
                        None => continue,
                    },
                    None if dir.is_root() => continue,
                    None => dir.clone(),
                };
                let is_dir = event.mask & libc::IN_ISDIR != 0;
                if is_dir && event.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0 {
                    new_dirs.push(path.clone());
                }
                if is_dir && event.mask & libc::IN_MOVED_FROM != 0 {
                    // Moved within the store, its watches are found again
                    // (same descriptors) under the new name below; moved
                    // out, they must go.
                    self.unwatch_below(&path);
                }
                changed.push(path);
            }
        };
        self.buffer = buffer;
        result?;
        if overflowed {
            tracing::warn!(
                "the store watcher's queue overflowed; rescanning the whole store \
                 (raise fs.inotify.max_queued_events if this repeats)"
            );
            self.watch_tree(&StorePath::root(), Some(&mut changed))?;
            return Ok(changed);
        }
        for dir in new_dirs {
            // Whatever was created inside before the watch existed is
            // reported too.
            if let Err(e) = self.watch_tree(&dir, Some(&mut changed)) {
                tracing::debug!("cannot watch new folder {dir}: {e}");
            }
        }
        Ok(changed)
    }

    /// Stops watching `dir` and everything below it.
    fn unwatch_below(&mut self, dir: &StorePath) {
        let gone: Vec<i32> = self
            .dirs
            .iter()
            .filter(|(_, p)| p.as_path().starts_with(dir.as_path()))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            self.dirs.remove(&wd);
            // SAFETY: plain syscall on our own descriptor.
            unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
        }
    }

    /// Watches `top` and every folder below it. With `found`, every path
    /// met on the way is pushed there as changed.
    fn watch_tree(
        &mut self,
        top: &StorePath,
        mut found: Option<&mut Vec<StorePath>>,
    ) -> io::Result<()> {
        let mut stack = vec![top.clone()];
        while let Some(dir) = stack.pop() {
            // Watch first, then list: nothing created in between is missed.
            match self.watch_dir(&dir) {
                Ok(()) => {}
                Err(e) if dir == *top => return Err(e),
                Err(e) => {
                    tracing::debug!("cannot watch {dir}: {e}");
                    continue;
                }
            }
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
                if entry.kind == FileKind::Directory && path.within_depth() {
                    stack.push(path.clone());
                }
                if let Some(found) = found.as_deref_mut() {
                    found.push(path);
                }
            }
        }
        Ok(())
    }

    /// Adds (or renames) the watch of one directory. The directory is
    /// opened through the sandboxed store and watched through its
    /// descriptor, so a symlink swapped in can never point the watch
    /// outside the store.
    fn watch_dir(&mut self, dir: &StorePath) -> io::Result<()> {
        let fd = self.store.open_dir(dir)?;
        let proc_path = format!("/proc/self/fd/{}\0", fd.as_raw_fd());
        // SAFETY: a NUL-terminated path; `fd` stays open during the call.
        let wd = unsafe {
            libc::inotify_add_watch(self.fd.as_raw_fd(), proc_path.as_ptr().cast(), MASK)
        };
        if wd < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOSPC) && !self.warned_limit {
                self.warned_limit = true;
                tracing::warn!(
                    "out of inotify watches: changes made behind the mount below {dir} \
                     will not be noticed (raise fs.inotify.max_user_watches)"
                );
            }
            return Err(e);
        }
        self.dirs.insert(wd, dir.clone());
        Ok(())
    }
}

/// One decoded `struct inotify_event`.
struct RawEvent<'a> {
    wd: i32,
    mask: u32,
    name: Option<&'a OsStr>,
}

/// Decodes the events in one `read` of an inotify descriptor.
fn parse_events(mut buf: &[u8]) -> Vec<RawEvent<'_>> {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let mut events = Vec::new();
    while buf.len() >= HEADER {
        let word = |i: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&buf[i * 4..i * 4 + 4]);
            b
        };
        let wd = i32::from_ne_bytes(word(0));
        let mask = u32::from_ne_bytes(word(1));
        let len = u32::from_ne_bytes(word(3)) as usize;
        let Some(raw_name) = buf.get(HEADER..HEADER + len) else {
            break;
        };
        // The name is NUL-padded to an aligned length.
        let end = raw_name.iter().position(|&b| b == 0).unwrap_or(len);
        let name = (end > 0).then(|| OsStr::from_bytes(&raw_name[..end]));
        events.push(RawEvent { wd, mask, name });
        buf = &buf[HEADER + len..];
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    use crate::store::watch::testing::watcher;

    /// Collects batches until `want` has been reported or two seconds pass.
    fn collect_until(w: &mut StoreWatcher, want: &str) -> Vec<String> {
        crate::store::watch::testing::collect_until(w, want, Duration::from_secs(2))
    }

    #[test]
    fn a_stopped_watcher_waits_no_more() {
        let (_dir, mut w) = watcher();
        let stopper = w.stopper();
        let waiting = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            let batch = w.next_batch(Duration::from_secs(600)).unwrap();
            (batch, start.elapsed())
        });
        std::thread::sleep(Duration::from_millis(20));
        stopper.stop();
        let (batch, waited) = waiting.join().unwrap();
        assert!(batch.is_empty());
        // Far below the timeout: the wait ended on the stop, not on time.
        assert!(waited < Duration::from_secs(60), "{waited:?}");
    }

    #[test]
    fn reports_writes_in_nested_folders_but_not_reads() {
        let (dir, mut w) = watcher();
        assert_eq!(w.watched_dirs(), 3);
        fs::write(dir.path().join("a/b/note.md"), "x").unwrap();
        let seen = collect_until(&mut w, "a/b/note.md");
        assert!(seen.contains(&"a/b/note.md".to_string()), "{seen:?}");
        // A read queues nothing at all.
        fs::read(dir.path().join("a/b/note.md")).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut quiet = w.next_batch(Duration::from_millis(50)).unwrap();
        quiet.extend(w.next_batch(Duration::from_millis(50)).unwrap());
        assert!(quiet.is_empty(), "{quiet:?}");
    }

    #[test]
    fn follows_new_and_renamed_folders() {
        let (dir, mut w) = watcher();
        // Created with content before the watcher could see inside it.
        fs::create_dir_all(dir.path().join("new/deep")).unwrap();
        fs::write(dir.path().join("new/deep/early.md"), "x").unwrap();
        let seen = collect_until(&mut w, "new/deep/early.md");
        assert!(seen.contains(&"new/deep/early.md".to_string()), "{seen:?}");
        fs::rename(dir.path().join("new"), dir.path().join("moved")).unwrap();
        collect_until(&mut w, "moved");
        fs::write(dir.path().join("moved/deep/late.md"), "x").unwrap();
        let seen = collect_until(&mut w, "moved/deep/late.md");
        assert!(seen.contains(&"moved/deep/late.md".to_string()), "{seen:?}");
    }

    #[test]
    fn forgets_folders_moved_out_of_the_store() {
        let (dir, mut w) = watcher();
        let outside = tempfile::tempdir().unwrap();
        fs::rename(dir.path().join("a"), outside.path().join("a")).unwrap();
        collect_until(&mut w, "a");
        assert_eq!(w.watched_dirs(), 1);
        fs::write(outside.path().join("a/b/x.md"), "x").unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert!(w.next_batch(Duration::from_millis(50)).unwrap().is_empty());
    }

    #[test]
    fn parses_packed_events() {
        let mut buf = Vec::new();
        for (wd, name) in [(1i32, &b"ab"[..]), (2, &b""[..])] {
            let len = if name.is_empty() { 0 } else { 16 };
            buf.extend(wd.to_ne_bytes());
            buf.extend(libc::IN_CREATE.to_ne_bytes());
            buf.extend(0u32.to_ne_bytes());
            buf.extend((len as u32).to_ne_bytes());
            let mut padded = name.to_vec();
            padded.resize(len, 0);
            buf.extend(padded);
        }
        let events = parse_events(&buf);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].name, Some(OsStr::new("ab")));
        assert_eq!(events[1].wd, 2);
        assert_eq!(events[1].name, None);
    }
}
