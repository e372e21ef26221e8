//! Background changes, made through the mount.
//!
//! Every rewrite and move the daemon makes on its own goes through the
//! mountpoint, like any other program's, so inotify watchers on the mount
//! (editors, chokidar, `inotifywait -m -r`) see each one; cache invalidation
//! alone would emit no event.
//!
//! A rewrite is compare-and-swap against the exact bytes the task read: the
//! new content goes to a temp file beside the target, and is renamed over
//! it only if the target still holds those bytes and no handle is open for
//! writing on it. Otherwise the task gives up and retries later. Moves use
//! `RENAME_NOREPLACE`, so they never overwrite anything.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fs::StoreFs;
use crate::store::StorePath;

/// What happened to a rewrite or move.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done.
    Done,
    /// The file changed since it was read, or is open for writing: retry later.
    Busy,
}

/// Performs background changes through the mountpoint.
#[derive(Debug, Clone)]
pub struct MountWriter {
    mountpoint: PathBuf,
    fs: Arc<StoreFs>,
}

impl MountWriter {
    /// Writes through `mountpoint`, asking `fs` about open writers.
    pub fn new(mountpoint: PathBuf, fs: Arc<StoreFs>) -> MountWriter {
        MountWriter { mountpoint, fs }
    }

    /// The path of a store path on the mount.
    pub fn on_mount(&self, path: &StorePath) -> PathBuf {
        self.mountpoint.join(path.as_path())
    }

    /// Reads a file through the mount.
    pub fn read(&self, path: &StorePath) -> io::Result<Vec<u8>> {
        fs::read(self.on_mount(path))
    }

    /// Keeps `old` resolving to `new` for `grace` after a move.
    pub fn redirect(&self, old: &StorePath, new: &StorePath, grace: std::time::Duration) {
        self.fs
            .add_redirect(old.clone(), new.clone(), std::time::Instant::now() + grace);
    }

    /// The volatile counters the filesystem keeps, if any.
    pub fn counters(&self) -> Option<&Arc<crate::store::counters::CounterStore>> {
        self.fs.counters()
    }

    /// True while a handle opened through the mount may write the file.
    pub fn is_busy(&self, path: &StorePath) -> bool {
        self.fs.is_open_for_write(path)
    }

    /// Replaces the file's content with `new` if it still holds `expected`.
    pub fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
        if self.is_busy(path) {
            return Ok(Outcome::Busy);
        }
        let target = self.on_mount(path);
        let mode = fs::symlink_metadata(&target)?.permissions().mode() & 0o7777;
        let tmp = temp_beside(&target);
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&tmp)?;
            file.write_all(new)?;
            file.sync_all()?;
            // create_new applies the umask; restore the original mode exactly.
            fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        // From here until the rename, writers opening the file wait.
        let Some(guard) = self.fs.begin_replace(path) else {
            let _ = fs::remove_file(&tmp);
            return Ok(Outcome::Busy);
        };
        let unchanged = self.fs.store().read(path).is_ok_and(|now| now == expected);
        if !unchanged {
            drop(guard);
            let _ = fs::remove_file(&tmp);
            return Ok(Outcome::Busy);
        }
        let renamed = fs::rename(&tmp, &target);
        drop(guard);
        if let Err(e) = renamed {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(Outcome::Done)
    }

    /// Moves `from` to `to` (creating `to`'s folder) without ever replacing
    /// an existing file. Returns `Busy` if `from` is open for writing.
    pub fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
        if self.is_busy(from) {
            return Ok(Outcome::Busy);
        }
        let target = self.on_mount(to);
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir)?;
        }
        rename_noreplace(&self.on_mount(from), &target)?;
        Ok(Outcome::Done)
    }

    /// A free path in `dir` for a file named `name`: `name`, then
    /// `stem-2.ext`, `stem-3.ext`, ...
    pub fn free_name(&self, dir: &StorePath, name: &str) -> Option<StorePath> {
        let (stem, ext) = match name.rfind('.') {
            Some(i) if i > 0 => name.split_at(i),
            _ => (name, ""),
        };
        (1..10_000).find_map(|n| {
            let candidate = if n == 1 {
                name.to_string()
            } else {
                format!("{stem}-{n}{ext}")
            };
            let path = dir.join(std::ffi::OsStr::new(&candidate))?;
            (!self.on_mount(&path).exists()).then_some(path)
        })
    }

    /// Creates a new file through the mount; fails if it exists.
    pub fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        let target = self.on_mount(path);
        if let Some(dir) = target.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut file = File::options().write(true).create_new(true).open(&target)?;
        file.write_all(content)?;
        file.sync_all()
    }
}

fn temp_beside(target: &Path) -> PathBuf {
    let name = format!(".mnemofs-tmp-{}", uuid::Uuid::new_v4().simple());
    target.with_file_name(name)
}

fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: NUL-terminated paths; AT_FDCWD resolves them as given.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
