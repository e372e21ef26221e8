//! The store: the backing directory of plain files that is the source of truth.
//!
//! Everything that touches the backing directory goes through [`Store`], and
//! every access is sandboxed: the containing directory of a path is opened
//! with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` relative to a
//! descriptor for the root, and the last component is always operated on
//! with `*at` calls that do not follow symlinks. So a symlink planted inside
//! the store (or a directory swapped for one while mounted) can never lead
//! the daemon outside the root. On kernels without `openat2`, and always on
//! macOS, the resolver walks the path one `O_NOFOLLOW` component at a time.
//!
//! Errors are plain `io::Error`s carrying the errno the kernel gave, because
//! the filesystem layer must hand exactly that errno back to its caller.

pub mod clean_exit;
pub mod counters;
pub mod history;
mod path;
mod sys;
pub mod watch;

pub use path::{MAX_DEPTH, StorePath, is_valid_name};
pub(crate) use sys::renameat2;
pub use sys::{
    DirEntry, FileKind, NO_XATTR, O_NOATIME, RENAME_EXCHANGE, RENAME_NOREPLACE, Stat, TimeSpec,
    mode_bits,
};

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// `fstat` of any open descriptor.
pub fn fstat(fd: impl AsFd) -> io::Result<Stat> {
    sys::fstat(fd.as_fd())
}

/// Reads the rest of `file` into `buf`, which the caller has sized from
/// its [`fstat`]. The standard library's `read_to_end` of a `File` first
/// asks for its size and position again (`statx` and `lseek`), two system
/// calls more for every note kept or compared.
pub fn read_rest(file: &File, buf: &mut Vec<u8>) -> io::Result<usize> {
    io::Read::read_to_end(&mut io::Read::take(file, u64::MAX), buf)
}

/// `lstat` of `name` inside a directory opened with [`Store::open_dir`].
pub fn stat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Stat> {
    sys::fstatat_nofollow(dir.as_fd(), &cstr(name)?)
}

/// The folder a call works in: the store's root, borrowed, or a folder
/// opened for the call (so a name at the top costs no `dup` and `close`).
enum Folder<'a> {
    Root(BorrowedFd<'a>),
    Opened(OwnedFd),
}

impl AsFd for Folder<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Folder::Root(fd) => *fd,
            Folder::Opened(fd) => fd.as_fd(),
        }
    }
}

impl AsRawFd for Folder<'_> {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// The sandboxed backing directory.
#[derive(Debug)]
pub struct Store {
    root: OwnedFd,
    root_path: PathBuf,
    has_openat2: AtomicBool,
    first_temp: FirstTemp,
}

/// What runs before this process's first temp file in the store.
type TempHook = Box<dyn Fn() -> io::Result<()> + Send + Sync>;

/// The hook of [`Store::before_first_temp`], until it has succeeded once.
#[derive(Default)]
struct FirstTemp(parking_lot::Mutex<Option<TempHook>>);

impl std::fmt::Debug for FirstTemp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pending = self.0.lock().is_some();
        f.debug_tuple("FirstTemp").field(&pending).finish()
    }
}

/// The error for a path that is not a valid single name or escapes the store.
pub fn invalid_name() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| invalid_name())
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl Store {
    /// Opens an existing directory as a store.
    pub fn open(root_path: &Path) -> io::Result<Store> {
        let c = CString::new(root_path.as_os_str().as_bytes()).map_err(|_| invalid_name())?;
        // SAFETY: `c` is a valid NUL-terminated string; the fd is owned below.
        let fd = cvt(unsafe { libc::open(c.as_ptr(), sys::DIR_HANDLE | libc::O_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by open and is owned by nobody else.
        let root = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Store {
            root,
            root_path: root_path.to_path_buf(),
            has_openat2: AtomicBool::new(cfg!(target_os = "linux")),
            first_temp: FirstTemp::default(),
        })
    }

    /// Runs `hook` before the first temp file this store handle writes
    /// (again before the next one if it failed, and the write fails with
    /// its error): a command forgets its clean exit there
    /// ([`clean_exit`]).
    pub fn before_first_temp(
        self,
        hook: impl Fn() -> io::Result<()> + Send + Sync + 'static,
    ) -> Store {
        *self.first_temp.0.lock() = Some(Box::new(hook));
        self
    }

    /// Runs the hook of [`Store::before_first_temp`] if it has not run.
    fn announce_temp(&self) -> io::Result<()> {
        let mut pending = self.first_temp.0.lock();
        if let Some(hook) = pending.as_ref() {
            hook()?;
            *pending = None;
        }
        Ok(())
    }

    /// The absolute path of the backing directory (for watchers and messages).
    pub fn root_path(&self) -> &Path {
        &self.root_path
    }

    /// Opens a directory of the store as an `O_PATH` descriptor, refusing any
    /// symlink on the way.
    pub fn open_dir(&self, dir: &StorePath) -> io::Result<OwnedFd> {
        if dir.is_root() {
            return self.root.try_clone();
        }
        if let Some(opened) = self.open_beneath(dir, sys::DIR_HANDLE | libc::O_CLOEXEC, 0) {
            return opened;
        }
        let mut fd = self.root.try_clone()?;
        for component in dir.as_path().components() {
            let name = cstr(component.as_os_str())?;
            fd = sys::openat(
                fd.as_fd(),
                &name,
                sys::DIR_HANDLE | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0,
            )?;
        }
        Ok(fd)
    }

    /// `path` opened with one `openat2` beneath the root, refusing any
    /// symlink on the way; `None` on a kernel without `openat2` (the
    /// caller then walks the path a component at a time).
    fn open_beneath(&self, path: &StorePath, flags: i32, mode: u32) -> Option<io::Result<OwnedFd>> {
        if !self.has_openat2.load(Ordering::Relaxed) {
            return None;
        }
        match sys::openat2_beneath(self.root.as_fd(), path.as_path(), flags, mode) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                self.has_openat2.store(false, Ordering::Relaxed);
                None
            }
            other => Some(other),
        }
    }

    /// Splits a non-root path into its opened parent directory and last name.
    fn parent_and_name(&self, path: &StorePath) -> io::Result<(Folder<'_>, CString)> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        };
        let folder = if parent.is_root() {
            Folder::Root(self.root.as_fd())
        } else {
            Folder::Opened(self.open_dir(&parent)?)
        };
        Ok((folder, cstr(name)?))
    }

    /// `lstat` of a path; never follows a final symlink.
    pub fn stat(&self, path: &StorePath) -> io::Result<Stat> {
        if path.is_root() {
            return sys::fstat(self.root.as_fd());
        }
        // Below the top, one openat2 of the whole path: a missing name
        // (the lookup before every create) is then one call, not three.
        if path.parent().is_some_and(|parent| !parent.is_root())
            && let Some(opened) = self.open_beneath(path, sys::OBJECT_HANDLE | libc::O_CLOEXEC, 0)
        {
            return sys::fstat(opened?.as_fd());
        }
        let (dir, name) = self.parent_and_name(path)?;
        sys::fstatat_nofollow(dir.as_fd(), &name)
    }

    /// Opens (and possibly creates) a regular file. `O_NOFOLLOW` is always
    /// added, so a final symlink fails with `ELOOP` instead of being followed.
    pub fn open_file(&self, path: &StorePath, flags: i32, mode: u32) -> io::Result<File> {
        if path.is_root() {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        // One call for the whole path, where the parent's descriptor took
        // three (open, open, close).
        if let Some(opened) =
            self.open_beneath(path, flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, mode)
        {
            return opened.map(File::from);
        }
        let (dir, name) = self.parent_and_name(path)?;
        let fd = sys::openat(
            dir.as_fd(),
            &name,
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode,
        )?;
        Ok(File::from(fd))
    }

    /// An `O_PATH` descriptor for the object itself (file, dir or symlink).
    pub fn open_path(&self, path: &StorePath) -> io::Result<OwnedFd> {
        if path.is_root() {
            return self.root.try_clone();
        }
        let (dir, name) = self.parent_and_name(path)?;
        sys::openat(dir.as_fd(), &name, sys::OBJECT_HANDLE | libc::O_CLOEXEC, 0)
    }

    /// access(2) of the object at `path` itself (a final symlink is not
    /// followed), with the daemon's own ids.
    #[cfg(target_os = "linux")]
    pub fn access(&self, path: &StorePath, mode: i32) -> io::Result<()> {
        sys::access_handle(self.open_path(path)?.as_fd(), mode)
    }

    /// Creates a directory.
    pub fn mkdir(&self, path: &StorePath, mode: u32) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        // SAFETY: valid fd and NUL-terminated name.
        cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) })?;
        Ok(())
    }

    /// Removes a non-directory.
    pub fn unlink(&self, path: &StorePath) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        // SAFETY: valid fd and NUL-terminated name.
        cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })?;
        Ok(())
    }

    /// Removes every temp file mnemofs left in the store (a crash between
    /// writing one and renaming it); returns how many. Run at start-up,
    /// before anything writes.
    pub fn remove_temp_files(&self) -> usize {
        self.sweep_temp_files(false)
    }

    /// [`Store::remove_temp_files`] beside this process's own writes:
    /// its temp files carry its pid and are left alone.
    pub fn remove_others_temp_files(&self) -> usize {
        self.sweep_temp_files(true)
    }

    fn sweep_temp_files(&self, spare_ours: bool) -> usize {
        let ours = own_temp_prefix();
        let mut removed = 0;
        let mut folders = vec![StorePath::root()];
        while let Some(folder) = folders.pop() {
            let Ok(entries) = self.read_dir(&folder) else {
                continue;
            };
            for entry in entries {
                let Some(path) = folder.join(&entry.name) else {
                    continue;
                };
                if entry.kind == FileKind::Directory {
                    folders.push(path);
                } else if is_temp_name(&entry.name)
                    && !(spare_ours && entry.name.as_bytes().starts_with(ours.as_bytes()))
                    && self.unlink(&path).is_ok()
                {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Removes the temp files in `folder` (not below it); returns how many.
    pub fn remove_temp_files_in(&self, folder: &StorePath) -> io::Result<usize> {
        let mut removed = 0;
        for entry in self.read_dir(folder)? {
            if entry.kind != FileKind::Directory
                && is_temp_name(&entry.name)
                && let Some(path) = folder.join(&entry.name)
                && self.unlink(&path).is_ok()
            {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes an empty directory.
    pub fn rmdir(&self, path: &StorePath) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        // SAFETY: valid fd and NUL-terminated name.
        cvt(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) })?;
        Ok(())
    }

    /// `renameat2` with the given flags (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
    pub fn rename(&self, from: &StorePath, to: &StorePath, flags: u32) -> io::Result<()> {
        let (from_dir, from_name) = self.parent_and_name(from)?;
        let (to_dir, to_name) = self.parent_and_name(to)?;
        sys::renameat2(
            from_dir.as_fd(),
            &from_name,
            to_dir.as_fd(),
            &to_name,
            flags,
        )
    }

    /// Creates a symlink at `path` pointing to `target` (stored verbatim).
    pub fn symlink(&self, target: &Path, path: &StorePath) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        let target = CString::new(target.as_os_str().as_bytes()).map_err(|_| invalid_name())?;
        // SAFETY: valid fd and NUL-terminated strings.
        cvt(unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) })?;
        Ok(())
    }

    /// Reads a symlink's target.
    pub fn readlink(&self, path: &StorePath) -> io::Result<Vec<u8>> {
        let (dir, name) = self.parent_and_name(path)?;
        sys::readlinkat(dir.as_fd(), &name)
    }

    /// Lists a directory (without `.` and `..`).
    pub fn read_dir(&self, path: &StorePath) -> io::Result<Vec<DirEntry>> {
        let fd = if path.is_root() {
            sys::openat(
                self.root.as_fd(),
                c".",
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                0,
            )?
        } else {
            let (dir, name) = self.parent_and_name(path)?;
            sys::openat(
                dir.as_fd(),
                &name,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0,
            )?
        };
        sys::read_dir(fd)
    }

    /// chmod. Symlinks have no mode of their own on Linux: `EOPNOTSUPP`.
    pub fn set_mode(&self, path: &StorePath, mode: u32) -> io::Result<()> {
        let fd = self.open_path(path)?;
        if sys::fstat(fd.as_fd())?.kind == FileKind::Symlink {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        sys::chmod_handle(fd.as_fd(), mode)
    }

    /// chown without following a final symlink. `u32::MAX` leaves a field.
    pub fn set_owner(&self, path: &StorePath, uid: u32, gid: u32) -> io::Result<()> {
        if path.is_root() {
            return sys::chown_handle(self.root.as_fd(), uid, gid);
        }
        let (dir, name) = self.parent_and_name(path)?;
        // SAFETY: valid fd and NUL-terminated name.
        cvt(unsafe {
            libc::fchownat(
                dir.as_raw_fd(),
                name.as_ptr(),
                uid,
                gid,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        Ok(())
    }

    /// utimensat without following a final symlink. `None` leaves a time as is.
    pub fn set_times(
        &self,
        path: &StorePath,
        atime: Option<TimeSpec>,
        mtime: Option<TimeSpec>,
    ) -> io::Result<()> {
        let times = [sys::timespec(atime), sys::timespec(mtime)];
        if path.is_root() {
            let proc = sys::proc_fd_path(self.root.as_fd());
            // SAFETY: NUL-terminated path and a two-element array.
            cvt(unsafe { libc::utimensat(libc::AT_FDCWD, proc.as_ptr(), times.as_ptr(), 0) })?;
            return Ok(());
        }
        let (dir, name) = self.parent_and_name(path)?;
        // SAFETY: valid fd, NUL-terminated name and a two-element array.
        cvt(unsafe {
            libc::utimensat(
                dir.as_raw_fd(),
                name.as_ptr(),
                times.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })?;
        Ok(())
    }

    /// Truncates a regular file by path.
    pub fn truncate(&self, path: &StorePath, size: u64) -> io::Result<()> {
        let file = self.open_file(path, libc::O_WRONLY, 0)?;
        file.set_len(size)
    }

    /// Gets an extended attribute of the object itself (never a symlink target).
    pub fn get_xattr(&self, path: &StorePath, name: &OsStr) -> io::Result<Vec<u8>> {
        let fd = self.open_path(path)?;
        sys::get_xattr(fd.as_fd(), &cstr(name)?)
    }

    /// Sets an extended attribute.
    pub fn set_xattr(
        &self,
        path: &StorePath,
        name: &OsStr,
        value: &[u8],
        flags: i32,
    ) -> io::Result<()> {
        let fd = self.open_path(path)?;
        sys::set_xattr(fd.as_fd(), &cstr(name)?, value, flags)
    }

    /// Lists extended attribute names (NUL-separated, as the kernel gives them).
    pub fn list_xattr(&self, path: &StorePath) -> io::Result<Vec<u8>> {
        let fd = self.open_path(path)?;
        sys::list_xattr(fd.as_fd())
    }

    /// Removes an extended attribute.
    pub fn remove_xattr(&self, path: &StorePath, name: &OsStr) -> io::Result<()> {
        let fd = self.open_path(path)?;
        sys::remove_xattr(fd.as_fd(), &cstr(name)?)
    }

    /// statvfs of the backing filesystem.
    pub fn statfs(&self) -> io::Result<libc::statvfs> {
        sys::fstatvfs(self.root.as_fd())
    }

    /// Reads a whole file (used by background tasks and the CLI).
    pub fn read(&self, path: &StorePath) -> io::Result<Vec<u8>> {
        let mut file = self.open_file(path, libc::O_RDONLY, 0)?;
        let mut buf = Vec::new();
        io::Read::read_to_end(&mut file, &mut buf)?;
        Ok(buf)
    }

    /// Writes a whole file atomically: a temp file in the same directory,
    /// fsync, rename over the target, fsync of the directory.
    pub fn write_atomic(&self, path: &StorePath, bytes: &[u8], mode: u32) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        self.announce_temp()?;
        let tmp = write_temp(&dir, bytes, mode)?;
        finish_temp(&dir, &tmp, &name, 0)
    }

    /// Creates a new file with `bytes`, atomically: nobody ever sees it
    /// half written. Fails with `EEXIST` if the name is taken.
    pub fn create_atomic(&self, path: &StorePath, bytes: &[u8], mode: u32) -> io::Result<()> {
        let (dir, name) = self.parent_and_name(path)?;
        self.announce_temp()?;
        let tmp = write_temp(&dir, bytes, mode)?;
        finish_temp(&dir, &tmp, &name, RENAME_NOREPLACE)
    }

    /// Creates many new files, each atomically, and all of them durable
    /// with two flushes of the filesystem instead of two fsyncs a file:
    /// every file is written to a temp file beside its target, one
    /// `syncfs` makes their data durable, each is renamed onto its name
    /// (failing with `EEXIST` if the name is taken), and a second `syncfs`
    /// makes the names durable. A crash leaves each file whole or absent
    /// (temp files are removed when the store is next opened under its
    /// lock). One result per file, in order.
    pub fn create_many_atomic(
        &self,
        files: &[(StorePath, &[u8])],
        mode: u32,
    ) -> Vec<io::Result<()>> {
        if let Err(e) = self.announce_temp() {
            return files
                .iter()
                .map(|_| Err(io::Error::new(e.kind(), e.to_string())))
                .collect();
        }
        let mut staged: Vec<io::Result<(Folder<'_>, CString, CString)>> = files
            .iter()
            .map(|(path, bytes)| {
                let (dir, name) = self.parent_and_name(path)?;
                let tmp = write_temp_unsynced(&dir, bytes, mode)?;
                Ok((dir, tmp, name))
            })
            .collect();
        if let Err(e) = self.sync_filesystem() {
            for entry in &mut staged {
                if let Ok((dir, tmp, _)) = entry {
                    // SAFETY: valid fd and NUL-terminated name; best-effort clean-up.
                    unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
                }
                *entry = Err(io::Error::new(e.kind(), e.to_string()));
            }
        }
        let mut results: Vec<io::Result<()>> = staged
            .into_iter()
            .map(|entry| {
                let (dir, tmp, name) = entry?;
                sys::renameat2(dir.as_fd(), &tmp, dir.as_fd(), &name, RENAME_NOREPLACE).inspect_err(
                    |_| {
                        // SAFETY: valid fd and NUL-terminated name; best-effort clean-up.
                        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
                    },
                )
            })
            .collect();
        if results.iter().any(Result::is_ok)
            && let Err(e) = self.sync_filesystem()
        {
            for result in results.iter_mut().filter(|r| r.is_ok()) {
                *result = Err(io::Error::new(e.kind(), e.to_string()));
            }
        }
        results
    }

    /// Flushes everything written to the store's filesystem (`syncfs`).
    fn sync_filesystem(&self) -> io::Result<()> {
        // The root is held as an O_PATH descriptor, which syncfs refuses.
        let root = sys::openat(
            self.root.as_fd(),
            c".",
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            0,
        )?;
        sys::sync_filesystem(root.as_fd())
    }

    /// Replaces a regular file's content atomically, but only if it still
    /// is the same inode holding exactly `expected`; returns `false` (and
    /// changes nothing) otherwise. The new file keeps the old one's mode.
    ///
    /// A file another program holds open for writing is left alone (its
    /// later writes would go to the old file). The check and the rename are
    /// two steps: a writer that opens the file between them is overwritten.
    /// Through the mount, writers wait (see `fs`); on the store directly,
    /// the store lock keeps other mnemofs processes out, and editors write
    /// by rename, which the inode check sees.
    pub fn replace_if_unchanged(
        &self,
        path: &StorePath,
        expected: &[u8],
        new: &[u8],
    ) -> io::Result<bool> {
        let (dir, name) = self.parent_and_name(path)?;
        let before = match sys::fstatat_nofollow(dir.as_fd(), &name) {
            Ok(st) if st.kind == FileKind::File => st,
            Ok(_) => return Ok(false),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(false),
            Err(e) => return Err(e),
        };
        self.announce_temp()?;
        let tmp = write_temp(&dir, new, before.mode & 0o7777)?;
        let unchanged = (|| -> io::Result<bool> {
            let fd = sys::openat(
                dir.as_fd(),
                &name,
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0,
            )?;
            let now = sys::fstat(fd.as_fd())?;
            if now.ino != before.ino
                || now.size != expected.len() as u64
                || sys::written_elsewhere(fd.as_fd()) == Some(true)
            {
                return Ok(false);
            }
            let file = File::from(fd);
            let mut buf = Vec::with_capacity(expected.len());
            read_rest(&file, &mut buf)?;
            Ok(buf == expected)
        })();
        match unchanged {
            Ok(true) => exchange_temp(&dir, &tmp, &name, before.ino),
            other => {
                // SAFETY: valid fd and NUL-terminated name; best-effort clean-up.
                unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
                match other {
                    Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
                    other => other.map(|_| false),
                }
            }
        }
    }

    /// Whether a program has the file at `path` open for writing behind
    /// the mount (a logger appending to a note): its later writes would go
    /// to the old file if it were replaced. `false` where that cannot be
    /// told (see [`sys::written_elsewhere`]).
    pub fn is_open_for_writing(&self, path: &StorePath) -> bool {
        let Ok((dir, name)) = self.parent_and_name(path) else {
            return false;
        };
        sys::openat(
            dir.as_fd(),
            &name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            0,
        )
        .is_ok_and(|fd| sys::written_elsewhere(fd.as_fd()) == Some(true))
    }

    /// Creates `path` and every missing folder above it (mode `mode`).
    pub fn create_dirs(&self, path: &StorePath, mode: u32) -> io::Result<()> {
        let mut built = StorePath::root();
        for component in path.as_path().components() {
            let Some(next) = built.join(component.as_os_str()) else {
                return Err(invalid_name());
            };
            match self.mkdir(&next, mode) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    if self.stat(&next)?.kind != FileKind::Directory {
                        return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
                    }
                }
                Err(e) => return Err(e),
            }
            built = next;
        }
        Ok(())
    }
}

/// Metadata calls on an open file's descriptor, for a file unlinked while
/// open (whose name is gone): as `fchmod`, `fchown`, `futimens` and the
/// `f*xattr` calls on ext4.
pub mod open_file {
    use std::ffi::OsStr;
    use std::io;
    use std::os::fd::{AsFd, AsRawFd};

    use super::{TimeSpec, cstr, cvt, sys};

    /// access(2) of the object behind the descriptor, with the daemon's
    /// own ids.
    #[cfg(target_os = "linux")]
    pub fn access(fd: impl AsFd, mode: i32) -> io::Result<()> {
        sys::access_handle(fd.as_fd(), mode)
    }

    /// fchmod.
    pub fn set_mode(fd: impl AsFd, mode: u32) -> io::Result<()> {
        // SAFETY: valid descriptor.
        cvt(unsafe { libc::fchmod(fd.as_fd().as_raw_fd(), mode as libc::mode_t) }).map(drop)
    }

    /// fchown; `u32::MAX` leaves a field.
    pub fn set_owner(fd: impl AsFd, uid: u32, gid: u32) -> io::Result<()> {
        // SAFETY: valid descriptor.
        cvt(unsafe { libc::fchown(fd.as_fd().as_raw_fd(), uid, gid) }).map(drop)
    }

    /// futimens.
    pub fn set_times(
        fd: impl AsFd,
        atime: Option<TimeSpec>,
        mtime: Option<TimeSpec>,
    ) -> io::Result<()> {
        let times = [sys::timespec(atime), sys::timespec(mtime)];
        // SAFETY: valid descriptor and a two-element array.
        cvt(unsafe { libc::futimens(fd.as_fd().as_raw_fd(), times.as_ptr()) }).map(drop)
    }

    /// fallocate (macOS: mode 0 only, by `F_PREALLOCATE`).
    pub fn allocate(fd: impl AsFd, mode: i32, offset: u64, length: u64) -> io::Result<()> {
        sys::allocate(fd.as_fd(), mode, offset, length)
    }

    /// Whether a fallocate `mode` leaves the file's size as it is.
    pub fn allocate_keeps_size(mode: i32) -> bool {
        sys::allocate_keeps_size(mode)
    }

    /// fgetxattr.
    pub fn get_xattr(fd: impl AsFd, name: &OsStr) -> io::Result<Vec<u8>> {
        sys::get_xattr(fd.as_fd(), &cstr(name)?)
    }

    /// fsetxattr.
    pub fn set_xattr(fd: impl AsFd, name: &OsStr, value: &[u8], flags: i32) -> io::Result<()> {
        sys::set_xattr(fd.as_fd(), &cstr(name)?, value, flags)
    }

    /// flistxattr.
    pub fn list_xattr(fd: impl AsFd) -> io::Result<Vec<u8>> {
        sys::list_xattr(fd.as_fd())
    }

    /// fremovexattr.
    pub fn remove_xattr(fd: impl AsFd, name: &OsStr) -> io::Result<()> {
        sys::remove_xattr(fd.as_fd(), &cstr(name)?)
    }
}

/// The prefix of the temp files atomic writes make beside their target.
pub const TEMP_PREFIX: &str = ".mnemofs-tmp-";

/// Whether `name` is one of mnemofs's temp files.
pub fn is_temp_name(name: &OsStr) -> bool {
    name.as_bytes().starts_with(TEMP_PREFIX.as_bytes())
}

/// Writes `bytes` to a new temp file in `dir` with exactly `mode` (the
/// umask does not apply), fsynced; returns its name.
fn write_temp(dir: &impl AsFd, bytes: &[u8], mode: u32) -> io::Result<CString> {
    write_temp_with(dir, bytes, mode, true)
}

/// [`write_temp`] without the fsync, for a caller that flushes a whole
/// batch at once.
fn write_temp_unsynced(dir: &impl AsFd, bytes: &[u8], mode: u32) -> io::Result<CString> {
    write_temp_with(dir, bytes, mode, false)
}

/// The start of this process's temp file names: the prefix and its pid.
fn own_temp_prefix() -> String {
    format!("{TEMP_PREFIX}{:x}-", std::process::id())
}

/// A new temp file name: this process's prefix and a random part.
pub fn temp_name() -> String {
    format!("{}{}", own_temp_prefix(), uuid::Uuid::new_v4().simple())
}

fn write_temp_with(dir: &impl AsFd, bytes: &[u8], mode: u32, sync: bool) -> io::Result<CString> {
    let tmp = CString::new(temp_name()).map_err(|_| invalid_name())?;
    let fd = sys::openat(
        dir.as_fd(),
        &tmp,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        mode,
    )?;
    let mut file = File::from(fd);
    // SAFETY: valid descriptor; fchmod has no other preconditions.
    let written = cvt(unsafe { libc::fchmod(file.as_raw_fd(), mode as libc::mode_t) })
        .and_then(|_| file.write_all(bytes))
        .and_then(|()| if sync { file.sync_all() } else { Ok(()) });
    if let Err(e) = written {
        // SAFETY: valid fd and NUL-terminated name; best-effort clean-up.
        unsafe { libc::unlinkat(dir.as_fd().as_raw_fd(), tmp.as_ptr(), 0) };
        return Err(e);
    }
    Ok(tmp)
}

/// Puts the temp file `tmp` in place of `name` only if `name` is still the
/// inode `ino`, and fsyncs the directory: an exchange (`RENAME_EXCHANGE`)
/// never creates `name`, so a file unlinked or renamed meanwhile is not
/// brought back; if another file took the name meanwhile, the exchange is
/// undone. The old file, now under the temp name, is removed. Returns
/// whether the new content is in place.
///
/// The exchange names `name` first: inotify then reports the note moved to
/// the temp name and the new content moved to the note's name, in that
/// order, so a watcher that follows the events ends with the note there
/// and changed, not moved away.
fn exchange_temp(dir: &impl AsFd, tmp: &CString, name: &CString, ino: u64) -> io::Result<bool> {
    let unlink_tmp = || {
        // SAFETY: valid fd and NUL-terminated name; best-effort clean-up.
        unsafe { libc::unlinkat(dir.as_fd().as_raw_fd(), tmp.as_ptr(), 0) };
    };
    match sys::renameat2(dir.as_fd(), name, dir.as_fd(), tmp, RENAME_EXCHANGE) {
        Ok(()) => {}
        Err(e) => {
            unlink_tmp();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(false),
                _ => Err(e),
            };
        }
    }
    let swapped_out = sys::fstatat_nofollow(dir.as_fd(), tmp).map(|st| st.ino);
    if swapped_out.as_ref().ok() != Some(&ino) {
        // Someone put another file at `name` just before the exchange:
        // give it its name back.
        sys::renameat2(dir.as_fd(), tmp, dir.as_fd(), name, RENAME_EXCHANGE)?;
        unlink_tmp();
        return Ok(false);
    }
    unlink_tmp();
    let dir_file = sys::openat(
        dir.as_fd(),
        c".",
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        0,
    )?;
    File::from(dir_file).sync_all()?;
    Ok(true)
}

fn finish_temp(dir: &impl AsFd, tmp: &CString, name: &CString, flags: u32) -> io::Result<()> {
    if let Err(e) = sys::renameat2(dir.as_fd(), tmp, dir.as_fd(), name, flags) {
        // SAFETY: valid fd and NUL-terminated name; best-effort clean-up.
        unsafe { libc::unlinkat(dir.as_fd().as_raw_fd(), tmp.as_ptr(), 0) };
        return Err(e);
    }
    let dir_file = sys::openat(
        dir.as_fd(),
        c".",
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        0,
    )?;
    File::from(dir_file).sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        (dir, store)
    }

    /// The events inotify gives for a folder, as (mask, name), while
    /// `act` runs.
    fn inotify_events(dir: &Path, act: impl FnOnce()) -> Vec<(u32, String)> {
        use std::io::Read;
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscalls; the fd is owned by the File below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0);
        let mut file = unsafe { File::from_raw_fd(fd) };
        let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let mask = libc::IN_MOVED_FROM | libc::IN_MOVED_TO | libc::IN_CREATE | libc::IN_DELETE;
        assert!(unsafe { libc::inotify_add_watch(fd, path.as_ptr(), mask) } >= 0);
        act();
        let mut buf = vec![0u8; 64 * 1024];
        let n = file.read(&mut buf).unwrap();
        let mut events = Vec::new();
        let mut at = 0;
        while at < n {
            let word = |i: usize| u32::from_ne_bytes(buf[at + i..at + i + 4].try_into().unwrap());
            let (mask, len) = (word(4), word(12) as usize);
            let name = &buf[at + 16..at + 16 + len];
            let name = name.split(|b| *b == 0).next().unwrap_or_default();
            events.push((mask, String::from_utf8_lossy(name).into_owned()));
            at += 16 + len;
        }
        events
    }

    /// A watcher that follows the events of a rewrite ends with the note
    /// there: the last event naming it moves the new content in.
    #[test]
    fn a_rewrite_shows_watchers_the_note_moved_back_in_last() {
        let (dir, store) = store();
        std::fs::write(dir.path().join("n.md"), b"before").unwrap();
        let path = StorePath::new("n.md").unwrap();
        let events = inotify_events(dir.path(), || {
            assert!(
                store
                    .replace_if_unchanged(&path, b"before", b"after")
                    .unwrap()
            );
        });
        assert_eq!(std::fs::read(dir.path().join("n.md")).unwrap(), b"after");
        let last = events.iter().rev().find(|(_, name)| name == "n.md");
        assert_eq!(last.map(|e| e.0), Some(libc::IN_MOVED_TO), "{events:?}");
    }

    /// A program appending to a note keeps writing to the note: while it
    /// holds it open for writing, the note is not replaced under it.
    #[test]
    fn a_file_held_open_for_writing_is_not_replaced() {
        let (dir, store) = store();
        let file = dir.path().join("log.md");
        std::fs::write(&file, b"line 1\n").unwrap();
        let path = StorePath::new("log.md").unwrap();
        let mut held = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        assert!(store.is_open_for_writing(&path));
        assert!(
            !store
                .replace_if_unchanged(&path, b"line 1\n", b"new\n")
                .unwrap()
        );
        held.write_all(b"line 2\n").unwrap();
        drop(held);
        assert_eq!(std::fs::read(&file).unwrap(), b"line 1\nline 2\n");
        // Readers do not count.
        let _reader = File::open(&file).unwrap();
        assert!(!store.is_open_for_writing(&path));
        let now = std::fs::read(&file).unwrap();
        assert!(store.replace_if_unchanged(&path, &now, b"new\n").unwrap());
        assert_eq!(std::fs::read(&file).unwrap(), b"new\n");
    }

    #[test]
    fn create_many_creates_each_new_file_and_refuses_taken_names() {
        let (dir, store) = store();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/taken.md"), b"first").unwrap();
        let p = |s: &str| StorePath::new(s).unwrap();
        let files = [
            (p("a/one.md"), &b"one"[..]),
            (p("a/taken.md"), &b"second"[..]),
            (p("missing/two.md"), &b"two"[..]),
            (p("two.md"), &b"two"[..]),
        ];
        let results = store.create_many_atomic(&files, 0o600);
        assert!(results[0].is_ok() && results[3].is_ok(), "{results:?}");
        assert_eq!(
            results[1].as_ref().unwrap_err().raw_os_error(),
            Some(libc::EEXIST)
        );
        assert!(results[2].is_err(), "no folder is made: {results:?}");
        assert_eq!(std::fs::read(dir.path().join("a/one.md")).unwrap(), b"one");
        assert_eq!(
            std::fs::read(dir.path().join("a/taken.md")).unwrap(),
            b"first"
        );
        let mode = std::fs::metadata(dir.path().join("two.md")).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("a"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| is_temp_name(n))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn refuses_symlinked_directories() {
        let (dir, store) = store();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
        let p = StorePath::new("escape/secret").unwrap();
        let err = store.stat(&p).unwrap_err();
        assert!(
            matches!(
                err.raw_os_error(),
                Some(libc::ELOOP) | Some(libc::ENOTDIR) | Some(libc::EXDEV)
            ),
            "{err}"
        );
        assert!(store.open_file(&p, libc::O_RDONLY, 0).is_err());
        let created = StorePath::new("escape/new").unwrap();
        assert!(
            store
                .open_file(&created, libc::O_CREAT | libc::O_WRONLY, 0o644)
                .is_err()
        );
        assert!(!outside.path().join("new").exists());
    }

    #[test]
    fn final_symlink_is_not_followed() {
        let (dir, store) = store();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).unwrap();
        let p = StorePath::new("link").unwrap();
        assert_eq!(store.stat(&p).unwrap().kind, FileKind::Symlink);
        let err = store.open_file(&p, libc::O_RDONLY, 0).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
        assert_eq!(store.readlink(&p).unwrap(), b"/etc/hostname");
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let (dir, store) = store();
        let p = StorePath::new("a.md").unwrap();
        store.write_atomic(&p, b"one", 0o644).unwrap();
        store.write_atomic(&p, b"two", 0o644).unwrap();
        assert_eq!(store.read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.md")]);
    }

    #[test]
    fn read_dir_lists_kinds() {
        let (dir, store) = store();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("f"), b"").unwrap();
        let mut entries = store.read_dir(&StorePath::root()).unwrap();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].kind, FileKind::Directory);
        assert_eq!(entries[1].kind, FileKind::File);
    }

    /// The temp file, the name and the folder of a replace about to finish.
    fn staged<'a>(dir: &std::path::Path, store: &'a Store) -> (Folder<'a>, CString, CString, u64) {
        std::fs::write(dir.join("f.md"), "old").unwrap();
        let (fd, name) = store
            .parent_and_name(&StorePath::new("f.md").unwrap())
            .unwrap();
        let ino = sys::fstatat_nofollow(fd.as_fd(), &name).unwrap().ino;
        let tmp = write_temp(&fd, b"new", 0o644).unwrap();
        (fd, tmp, name, ino)
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_replace_never_brings_back_a_file_unlinked_after_the_compare() {
        let (dir, store) = store();
        let (fd, tmp, name, ino) = staged(dir.path(), &store);
        std::fs::remove_file(dir.path().join("f.md")).unwrap();
        assert!(!exchange_temp(&fd, &tmp, &name, ino).unwrap());
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
    }

    #[test]
    fn a_replace_gives_the_name_back_to_a_file_put_there_after_the_compare() {
        let (dir, store) = store();
        let (fd, tmp, name, ino) = staged(dir.path(), &store);
        std::fs::write(dir.path().join("other"), "an editor's save").unwrap();
        std::fs::rename(dir.path().join("other"), dir.path().join("f.md")).unwrap();
        assert!(!exchange_temp(&fd, &tmp, &name, ino).unwrap());
        assert_eq!(names(dir.path()), ["f.md"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.md")).unwrap(),
            "an editor's save"
        );
    }

    #[test]
    fn a_replace_of_an_unchanged_file_swaps_in_the_new_content() {
        let (dir, store) = store();
        let (fd, tmp, name, ino) = staged(dir.path(), &store);
        assert!(exchange_temp(&fd, &tmp, &name, ino).unwrap());
        assert_eq!(names(dir.path()), ["f.md"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.md")).unwrap(),
            "new"
        );
    }
}
