//! The index's files as tantivy's `MmapDirectory` maps them, and a way to
//! let go of their pages.
//!
//! Tantivy reads segments through memory maps, and every page it touches
//! stays in the daemon's resident set until the map goes. A merge reads
//! each segment it merges whole, so while a large index churns (hundreds
//! of thousands of files written and removed), the pages of segments that
//! are about to be deleted made up over 200 MiB of the daemon's RSS.
//!
//! [`MappedDirectory`] is `MmapDirectory` for everything but reads; it maps
//! files itself and keeps a weak list of its maps. [`Mapped::release`]
//! drops the pages of every live map from the daemon's page tables
//! (`MADV_DONTNEED`) once the maps together exceed a budget: an index
//! smaller than the budget, which the searches of a normal store touch
//! again and again, is never released.
//!
//! Subtleties:
//! - The pages stay in the page cache. A read after a release faults its
//!   page back in without I/O unless the kernel reclaimed it meanwhile, as
//!   it may for any page cache.
//! - `MADV_DONTNEED` is safe here because segment files are written once
//!   and then only read: a shared, read-only map of an unchanging file
//!   reads the same bytes after the release.
//! - Locks, writes and deletes are `MmapDirectory`'s, unchanged.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use memmap2::{Mmap, UncheckedAdvice};
use parking_lot::Mutex;
use tantivy::Directory;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback, WatchHandle,
    WritePtr,
};

/// The maps of one index directory, shared by its clones.
#[derive(Clone, Debug, Default)]
pub(crate) struct Mapped {
    maps: Arc<Mutex<HashMap<PathBuf, Weak<Mmap>>>>,
}

impl Mapped {
    /// Drops the pages of every live map from the page tables when the
    /// maps together are larger than `budget` bytes. Returns the bytes of
    /// maps released (0 when within the budget).
    pub(crate) fn release(&self, budget: u64) -> u64 {
        let live: Vec<Arc<Mmap>> = {
            let mut maps = self.maps.lock();
            maps.retain(|_, map| map.strong_count() > 0);
            maps.values().filter_map(Weak::upgrade).collect()
        };
        let total: u64 = live.iter().map(|map| map.len() as u64).sum();
        if total <= budget {
            return 0;
        }
        for map in &live {
            // SAFETY: a shared, read-only map of a file tantivy never
            // changes once written (see the module documentation); the
            // Arc keeps the map alive for the call.
            let _ = unsafe { map.unchecked_advise(UncheckedAdvice::DontNeed) };
        }
        total
    }

    /// The map of `path`, shared while any reader holds it.
    fn map(&self, path: &Path) -> Result<Option<Arc<Mmap>>, OpenReadError> {
        let mut maps = self.maps.lock();
        if let Some(map) = maps.get(path).and_then(Weak::upgrade) {
            return Ok(Some(map));
        }
        let wrap = |error: io::Error| {
            if error.kind() == io::ErrorKind::NotFound {
                OpenReadError::FileDoesNotExist(path.to_path_buf())
            } else {
                OpenReadError::wrap_io_error(error, path.to_path_buf())
            }
        };
        let file = File::open(path).map_err(wrap)?;
        // An empty file cannot be mapped.
        if file.metadata().map_err(wrap)?.len() == 0 {
            return Ok(None);
        }
        // SAFETY: tantivy writes a file whole before it reads it, and
        // never changes it afterwards.
        let map = Arc::new(unsafe { Mmap::map(&file) }.map_err(wrap)?);
        maps.insert(path.to_path_buf(), Arc::downgrade(&map));
        // A handle that never releases (a reader beside the daemon) would
        // otherwise keep an entry for every segment file it ever read.
        if maps.len() >= 64 && maps.len().is_power_of_two() {
            maps.retain(|_, map| map.strong_count() > 0);
        }
        Ok(Some(map))
    }
}

/// A map as tantivy's bytes.
struct SharedMap(Arc<Mmap>);

impl Deref for SharedMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

// SAFETY: the bytes are the map's, which does not move while the Arc
// holds it.
unsafe impl stable_deref_trait::StableDeref for SharedMap {}

/// `MmapDirectory`, with reads through maps listed in [`Mapped`].
#[derive(Clone, Debug)]
pub(crate) struct MappedDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    mapped: Mapped,
}

impl MappedDirectory {
    /// The directory at `root`, and the handle that releases its maps.
    pub(crate) fn open(root: &Path) -> Result<(MappedDirectory, Mapped), OpenDirectoryError> {
        let mapped = Mapped::default();
        let directory = MappedDirectory {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
            mapped: mapped.clone(),
        };
        Ok((directory, mapped))
    }
}

impl Directory for MappedDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let bytes = match self.mapped.map(&self.root.join(path))? {
            Some(map) => OwnedBytes::new(SharedMap(map)),
            None => OwnedBytes::empty(),
        };
        Ok(Arc::new(bytes))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

// Test code only: the unwraps below never run in the daemon. Linux only,
// for /proc/self/smaps.
#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    /// Resident kilobytes of this process's maps of `path`, from smaps.
    fn resident_kib(path: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = path.to_str().unwrap();
        let mut inside = false;
        let mut total = 0;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                inside = line.ends_with(name);
            } else if inside && let Some(kib) = line.strip_prefix("Rss:") {
                total += kib
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap();
            }
        }
        total
    }

    #[test]
    fn a_release_over_the_budget_drops_the_pages_and_reads_stay_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("segment.idx"), &data).unwrap();
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        let (directory, mapped) = MappedDirectory::open(dir.path()).unwrap();

        let handle = directory.get_file_handle(Path::new("segment.idx")).unwrap();
        let bytes = handle.read_bytes(0..data.len()).unwrap();
        assert_eq!(bytes.as_slice(), &data[..]);
        let again = directory.get_file_handle(Path::new("segment.idx")).unwrap();
        let path = dir.path().join("segment.idx");
        assert!(resident_kib(&path) >= 4096, "{}", resident_kib(&path));

        assert_eq!(mapped.release(8 << 20), 0, "within the budget");
        assert!(resident_kib(&path) >= 4096);
        assert_eq!(mapped.release(1 << 20), data.len() as u64);
        assert_eq!(resident_kib(&path), 0);

        assert_eq!(bytes.as_slice(), &data[..]);
        assert_eq!(again.read_bytes(0..16).unwrap().as_slice(), &data[..16]);
        let empty = directory.get_file_handle(Path::new("empty")).unwrap();
        assert_eq!(empty.len(), 0);
        assert!(matches!(
            directory.get_file_handle(Path::new("missing")),
            Err(OpenReadError::FileDoesNotExist(_))
        ));
    }
}
