//! Open file and directory handles.
//!
//! A file handle owns the backing descriptor opened at `open`/`create`, so
//! reads and writes never walk a path again: a file unlinked or renamed
//! over while open stays readable through its handle, as on ext4.
//! A directory handle holds a snapshot of the listing taken at `opendir`
//! (and again on rewind), so offsets never skip or repeat entries while
//! the directory changes underneath.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::store::DirEntry;
use crate::views::ViewEntry;

/// An open regular file.
#[derive(Debug)]
pub(crate) struct FileHandle {
    pub(crate) ino: u64,
    pub(crate) file: File,
    pub(crate) writable: bool,
    pub(crate) append: bool,
    /// Write-only handles bypass the kernel's page cache (`FOPEN_DIRECT_IO`).
    pub(crate) direct: bool,
    /// The kernel's passthrough registration, held while this handle is
    /// open (shared by every passthrough handle of the inode).
    pub(crate) backing: Mutex<Option<Arc<fuser::BackingId>>>,
}

/// An open directory and its listing snapshot.
#[derive(Debug)]
pub(crate) struct DirHandle {
    pub(crate) ino: u64,
    /// `None` until the first readdir; replaced when the reader rewinds.
    pub(crate) snapshot: Mutex<Option<Arc<Vec<DirEntry>>>>,
}

/// An open virtual directory and its listing snapshot.
#[derive(Debug)]
pub(crate) struct ViewDirHandle {
    pub(crate) snapshot: Mutex<Option<Arc<Vec<ViewEntry>>>>,
}

/// Any kind of handle.
#[derive(Debug)]
pub(crate) enum Handle {
    File(FileHandle),
    Dir(DirHandle),
    /// A generated file: its content as of open.
    ViewFile(Arc<Vec<u8>>),
    ViewDir(ViewDirHandle),
}

/// All open handles, by the number given to the kernel.
#[derive(Debug, Default)]
pub(crate) struct HandleTable {
    next: AtomicU64,
    map: RwLock<HashMap<u64, Arc<Handle>>>,
}

impl HandleTable {
    pub(crate) fn insert(&self, handle: Handle) -> u64 {
        let fh = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.map.write().insert(fh, Arc::new(handle));
        fh
    }

    pub(crate) fn get(&self, fh: u64) -> Option<Arc<Handle>> {
        self.map.read().get(&fh).cloned()
    }

    pub(crate) fn remove(&self, fh: u64) -> Option<Arc<Handle>> {
        self.map.write().remove(&fh)
    }

    /// Any open file handle on `ino`, to stat an unlinked-but-open file.
    pub(crate) fn any_file_for(&self, ino: u64) -> Option<Arc<Handle>> {
        self.map
            .read()
            .values()
            .find(|h| matches!(h.as_ref(), Handle::File(f) if f.ino == ino))
            .cloned()
    }
}
