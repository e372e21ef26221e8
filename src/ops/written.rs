//! Read your writes: what a request wrote, so that it returns only once
//! every later request, from this process or another, sees it.
//!
//! The index learns of a change on its own (the direct writer tells it,
//! a mount's writer is heard through the store watch), but only within a
//! commit or two; a read by id, a search or a backlink asked at once
//! would miss a memory just written. [`Recording`] wraps the writer of
//! the operations and notes every path a request writes, moves or
//! removes; [`during`] collects them for the request being handled, and
//! the operations then wait until the index has committed them.
//!
//! Subtleties:
//! - The paths are kept per thread: a request is handled on one thread
//!   (a connection's, a command's), while the organizer writes through
//!   the same writer on its own and is never waited for.
//! - Requests nest (a scoped request handles its inner one): only the
//!   outermost collects, so the wait happens once.

use std::cell::RefCell;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::writer::{Outcome, Writer};
use crate::store::StorePath;

thread_local! {
    /// The paths written by the request being handled on this thread, if
    /// one is.
    static WRITTEN: RefCell<Option<Vec<StorePath>>> = const { RefCell::new(None) };
}

/// Runs `handle` and returns what it answered with the paths it wrote
/// (empty for a request inside another one).
pub(crate) fn during<T>(handle: impl FnOnce() -> T) -> (T, Vec<StorePath>) {
    let outermost = WRITTEN.with(|w| {
        let mut w = w.borrow_mut();
        let outermost = w.is_none();
        if outermost {
            *w = Some(Vec::new());
        }
        outermost
    });
    // Taken back even if `handle` panics, so the thread records nothing
    // more for a request that is over.
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            if self.0 {
                WRITTEN.with(|w| w.borrow_mut().take());
            }
        }
    }
    let reset = Reset(outermost);
    let answer = handle();
    let written = if outermost {
        WRITTEN.with(|w| w.borrow_mut().take()).unwrap_or_default()
    } else {
        Vec::new()
    };
    drop(reset);
    (answer, written)
}

/// The paths noted so far by the request being handled on this thread,
/// taken: for a long one (a dream run) that lets the index catch up part
/// way. Empty outside a request.
pub(crate) fn take_so_far() -> Vec<StorePath> {
    WRITTEN
        .with(|w| w.borrow_mut().as_mut().map(std::mem::take))
        .unwrap_or_default()
}

fn note(paths: &[&StorePath]) {
    WRITTEN.with(|w| {
        if let Some(written) = w.borrow_mut().as_mut() {
            written.extend(paths.iter().map(|p| (*p).clone()));
        }
    });
}

/// A writer that notes, for [`during`], every path it changes.
#[derive(Debug)]
pub(crate) struct Recording(pub(crate) Arc<dyn Writer>);

impl Writer for Recording {
    fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
        note(&[path]);
        self.0.replace(path, expected, new)
    }

    fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        note(&[path]);
        self.0.write(path, content)
    }

    fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        note(&[path]);
        self.0.create(path, content)
    }

    fn create_many(&self, files: &[(StorePath, &[u8])]) -> Vec<io::Result<()>> {
        note(&files.iter().map(|(p, _)| p).collect::<Vec<_>>());
        self.0.create_many(files)
    }

    fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
        note(&[from, to]);
        self.0.move_to(from, to)
    }

    fn remove_file(&self, path: &StorePath) -> io::Result<()> {
        note(&[path]);
        self.0.remove_file(path)
    }

    fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
        note(&[path]);
        self.0.remove_folder(path)
    }

    fn is_busy(&self, path: &StorePath) -> bool {
        self.0.is_busy(path)
    }

    fn redirect(&self, old: &StorePath, new: &StorePath, grace: Duration) {
        self.0.redirect(old, new, grace);
    }

    fn describe(&self) -> String {
        self.0.describe()
    }

    fn catch_up(&self) {
        self.0.catch_up();
    }
}
