//! The writer that goes through the mount.
//!
//! When a daemon serves the store, every change the daemon makes on its
//! own (the organizer's rewrites and moves, and requests from the CLI, the
//! socket or MCP) goes through the mountpoint like any other program's, so
//! inotify watchers on the mount (editors, chokidar, `inotifywait -m -r`)
//! see each one; cache invalidation alone would emit no event.
//!
//! A rewrite is compare-and-swap against the exact bytes read: the new
//! content goes to a temp file beside the target, and is renamed over it
//! only if the target still holds those bytes and no handle is open for
//! writing on it; writers that open the file meanwhile wait for the
//! rename ([`StoreFs::begin_replace`]). Otherwise it gives up and the
//! caller retries later. Moves use `RENAME_NOREPLACE`, so they never
//! overwrite anything.
//!
//! Each change first pins the mount: it opens the mountpoint (`O_PATH`),
//! checks that a FUSE filesystem is what it opened, and works through that
//! descriptor (`/proc/self/fd/N/...`; on macOS through its path, see
//! [`held`](super::held)). A change that runs while the mount
//! is being unmounted then either keeps the mount busy until it is done
//! or fails; it never lands in the bare folder beneath the mountpoint.
//!
//! Every step through the mount is a FUSE round trip, so what needs no
//! kernel event is done on the store directly (the stat for a file's mode,
//! the compare of its bytes), folders are made only when a rename or
//! create finds them missing, and the mode of a temp file is set again
//! only when the umask changed it.
//!
//! New files and folders take their modes from the daemon's umask (0077
//! for a private mount: 0600 and 0700; the user's with `--allow-other`),
//! as any program's would; a replaced file keeps its own mode.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{StoreFs, held};
use crate::ops::{Outcome, Writer};
use crate::store::{FileKind, RENAME_EXCHANGE, RENAME_NOREPLACE, StorePath};

/// Performs changes through the mountpoint.
#[derive(Debug, Clone)]
pub struct MountWriter {
    mountpoint: PathBuf,
    fs: Arc<StoreFs>,
    /// The process's umask when the writer was made.
    umask: u32,
}

/// Runs `op`; if it fails because `target`'s folder is missing, makes the
/// folder and runs it again.
fn with_parent<T>(target: &Path, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    match op() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = target.parent() {
                // The umask decides (see the module's comment).
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o777)
                    .create(dir)?;
            }
            op()
        }
        other => other,
    }
}

impl MountWriter {
    /// Writes through `mountpoint`, asking `fs` about open writers.
    pub fn new(mountpoint: PathBuf, fs: Arc<StoreFs>) -> MountWriter {
        MountWriter {
            mountpoint,
            fs,
            // The strictest if it cannot be read.
            umask: crate::process::umask().unwrap_or(0o777),
        }
    }

    /// Pins the mount for one change; fails if no FUSE filesystem is
    /// mounted at the mountpoint any more.
    fn pin(&self) -> io::Result<Pinned> {
        let (fd, root) = held::hold(&self.mountpoint)?;
        if !held::is_fuse(&fd)? {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("the mount at {} is gone", self.mountpoint.display()),
            ));
        }
        Ok(Pinned { _fd: fd, root })
    }

    /// The mode of a new file: 0666 less the umask.
    fn new_file_mode(&self) -> u32 {
        0o666 & !self.umask
    }

    /// Writes `content` to a new temp file beside `target` with `mode`.
    fn write_temp(&self, target: &Path, content: &[u8], mode: u32) -> io::Result<PathBuf> {
        let tmp = target.with_file_name(crate::store::temp_name());
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&tmp)?;
            file.write_all(content)?;
            file.sync_all()?;
            if mode & self.umask != 0 {
                // create_new applied the umask; set the mode exactly.
                file.set_permissions(fs::Permissions::from_mode(mode))?;
            }
            Ok(())
        })();
        match written {
            Ok(()) => Ok(tmp),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }
}

use std::os::unix::fs::DirBuilderExt;

/// A folder on the mount, held open (`O_PATH`) and reached through its
/// descriptor, so that it is the same folder whatever it is renamed to.
struct Folder {
    _fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

fn open_folder(path: &Path) -> io::Result<Folder> {
    let (fd, path) = held::hold(path)?;
    Ok(Folder { _fd: fd, path })
}

/// The mount, held open for one change.
struct Pinned {
    _fd: std::os::fd::OwnedFd,
    /// The mount's root through the descriptor.
    root: PathBuf,
}

impl Pinned {
    /// The path of a store path on the pinned mount.
    fn on_mount(&self, path: &StorePath) -> PathBuf {
        self.root.join(path.as_path())
    }
}

impl Writer for MountWriter {
    fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
        // Held open for writing through the mount, or by a program behind
        // it, whose later writes would go to the file swapped out.
        if self.is_busy(path) || self.fs.store().is_open_for_writing(path) {
            return Ok(Outcome::Busy);
        }
        let mount = self.pin()?;
        // Everything below goes through the target's folder, held open: if
        // the folder is renamed meanwhile, the temp file is still found
        // (and removed), and the file is replaced where it is now.
        let Some(name) = path.file_name() else {
            return Ok(Outcome::Busy);
        };
        let folder =
            match open_folder(&mount.on_mount(&path.parent().unwrap_or_else(StorePath::root))) {
                Ok(folder) => folder,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Outcome::Busy),
                Err(e) => return Err(e),
            };
        let target = folder.path.join(name);
        let Ok(seen) = fs::symlink_metadata(&target) else {
            return Ok(Outcome::Busy);
        };
        let before = match self.fs.store().stat(path) {
            Ok(st) if st.kind == FileKind::File => st,
            Ok(_) => return Ok(Outcome::Busy),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Outcome::Busy),
            Err(e) => return Err(e),
        };
        let mode = before.mode & 0o7777;
        let tmp = self.write_temp(&target, new, mode)?;
        // From here until the rename, writers opening the file wait.
        let Some(guard) = self.fs.begin_replace(path) else {
            let _ = fs::remove_file(&tmp);
            return Ok(Outcome::Busy);
        };
        let store = self.fs.store();
        let unchanged = store.stat(path).is_ok_and(|st| st.ino == before.ino)
            && store.read(path).is_ok_and(|now| now == expected);
        if !unchanged {
            drop(guard);
            let _ = fs::remove_file(&tmp);
            return Ok(Outcome::Busy);
        }
        // An exchange, not a rename: it never creates `target`, so a file
        // unlinked or renamed since the compare is not brought back. The
        // daemon refuses it (EBUSY) if a writer got hold of the file after
        // all, and sends writers that arrive later holding the old inode to
        // the new one. The guard is held to the end, so no writer opens
        // the new content while it may still be swapped back. The note is
        // named first: inotify then reports it moved to the temp name and
        // the new content moved to its name, in that order, so a watcher
        // that follows the events (watchdog, @parcel/watcher) ends with
        // the note there and changed, not moved away.
        if let Err(e) = held::rename(&target, &tmp, RENAME_EXCHANGE) {
            let _ = fs::remove_file(&tmp);
            return match e.raw_os_error() {
                Some(libc::ENOENT | libc::EBUSY) => Ok(Outcome::Busy),
                _ => Err(e),
            };
        }
        // `tmp` now names the file that was at `target`: if another file
        // took the name just before the exchange, it gets its name back.
        let swapped_out = fs::symlink_metadata(&tmp).map(|st| st.ino()).ok();
        if swapped_out != Some(seen.ino()) {
            held::rename(&tmp, &target, RENAME_EXCHANGE)?;
            let _ = fs::remove_file(&tmp);
            return Ok(Outcome::Busy);
        }
        fs::remove_file(&tmp)?;
        drop(guard);
        Ok(Outcome::Done)
    }

    fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        let mount = self.pin()?;
        let target = mount.on_mount(path);
        // A file replaced keeps its mode; anything else (a symlink: 0777)
        // is replaced by a private file.
        let mode = match self.fs.store().stat(path) {
            Ok(st) if st.kind == FileKind::File => st.mode & 0o7777,
            _ => self.new_file_mode(),
        };
        let tmp = with_parent(&target, || self.write_temp(&target, content, mode))?;
        fs::rename(&tmp, &target).inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
    }

    fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        let mount = self.pin()?;
        let target = mount.on_mount(path);
        let tmp = with_parent(&target, || {
            self.write_temp(&target, content, self.new_file_mode())
        })?;
        rename_noreplace(&tmp, &target).inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
    }

    fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
        if self.is_busy(from) {
            return Ok(Outcome::Busy);
        }
        let mount = self.pin()?;
        let (source, target) = (mount.on_mount(from), mount.on_mount(to));
        if self.fs.store().stat(from).is_err() {
            // A missing source would read as a missing folder below.
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        with_parent(&target, || rename_noreplace(&source, &target))?;
        Ok(Outcome::Done)
    }

    fn remove_file(&self, path: &StorePath) -> io::Result<()> {
        fs::remove_file(self.pin()?.on_mount(path))
    }

    fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
        fs::remove_dir(self.pin()?.on_mount(path))
    }

    fn is_busy(&self, path: &StorePath) -> bool {
        self.fs.is_open_for_write(path)
    }

    fn redirect(&self, old: &StorePath, new: &StorePath, grace: Duration) {
        self.fs
            .add_redirect(old.clone(), new.clone(), Instant::now() + grace);
    }

    fn describe(&self) -> String {
        format!("through the mount at {}", self.mountpoint.display())
    }

    fn catch_up(&self) {
        self.fs.catch_up_views();
    }
}

fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    held::rename(from, to, RENAME_NOREPLACE)
}
