//! Thin, safe wrappers over the `*at` system calls the store needs.
//!
//! Kept apart so that `store/mod.rs` reads as policy (what is allowed) and
//! this file as mechanism (how to ask the kernel). Nothing here follows a
//! final symlink unless its name says so.
//!
//! It is also where the store meets the platform. Linux has `openat2`,
//! `renameat2`, `O_PATH` and `/proc/self/fd`; macOS has none of them, so
//! there `openat2_beneath` reports `ENOSYS` (the store then always walks a
//! path one `O_NOFOLLOW` component at a time), renames go through
//! `renameatx_np` (`RENAME_EXCL`, `RENAME_SWAP`), handles are ordinary
//! read-only descriptors ([`DIR_HANDLE`], [`OBJECT_HANDLE`]) and the
//! `f*xattr`/`fchmod` calls take the descriptor itself.

use std::ffi::{CStr, CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

/// What kind of object a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A fifo, socket or device node.
    Special,
}

/// Flags that open a folder as a handle for `*at` calls (with `O_CLOEXEC`
/// and, for a walk, `O_NOFOLLOW` added by the caller).
#[cfg(target_os = "linux")]
pub(crate) const DIR_HANDLE: i32 = libc::O_PATH | libc::O_DIRECTORY;
/// Flags that open a folder as a handle for `*at` calls: macOS has no
/// `O_PATH`, and `O_SEARCH` (search permission, `O_DIRECTORY` included) is
/// the nearest.
#[cfg(target_os = "macos")]
pub(crate) const DIR_HANDLE: i32 = libc::O_SEARCH;

/// Flags that open the object a name refers to (file, folder or symlink),
/// never following a final symlink.
#[cfg(target_os = "linux")]
pub(crate) const OBJECT_HANDLE: i32 = libc::O_PATH | libc::O_NOFOLLOW;
/// Flags that open the object a name refers to (file, folder or symlink),
/// never following a final symlink: `O_SYMLINK` opens a symlink itself, and
/// `O_NONBLOCK` keeps a fifo from blocking. Unlike `O_PATH` it needs read
/// permission on the object.
#[cfg(target_os = "macos")]
pub(crate) const OBJECT_HANDLE: i32 = libc::O_RDONLY | libc::O_SYMLINK | libc::O_NONBLOCK;

/// `renameat2`'s flag that fails with `EEXIST` instead of replacing.
#[cfg(target_os = "linux")]
pub const RENAME_NOREPLACE: u32 = libc::RENAME_NOREPLACE;
/// `renameatx_np`'s flag that fails with `EEXIST` instead of replacing.
#[cfg(target_os = "macos")]
pub const RENAME_NOREPLACE: u32 = libc::RENAME_EXCL;
/// `renameat2`'s flag that swaps two names atomically.
#[cfg(target_os = "linux")]
pub const RENAME_EXCHANGE: u32 = libc::RENAME_EXCHANGE;
/// `renameatx_np`'s flag that swaps two names atomically.
#[cfg(target_os = "macos")]
pub const RENAME_EXCHANGE: u32 = libc::RENAME_SWAP;

/// `O_NOATIME`, which macOS lacks (its opens never skip the access time
/// on request): there it is no flag at all.
#[cfg(target_os = "linux")]
pub const O_NOATIME: i32 = libc::O_NOATIME;
/// `O_NOATIME`, which macOS lacks: no flag at all.
#[cfg(target_os = "macos")]
pub const O_NOATIME: i32 = 0;

/// The errno of a missing extended attribute: `ENODATA` on Linux.
#[cfg(target_os = "linux")]
pub const NO_XATTR: i32 = libc::ENODATA;
/// The errno of a missing extended attribute: `ENOATTR` on macOS.
#[cfg(target_os = "macos")]
pub const NO_XATTR: i32 = libc::ENOATTR;

/// The mode bits of `struct stat` as `u32`, the width the daemon keeps
/// modes in (`mode_t` is 16 bits on macOS).
pub mod mode_bits {
    #![allow(missing_docs)]
    #[cfg(target_os = "linux")]
    pub use libc::{S_IFBLK, S_IFIFO, S_IFMT, S_IFSOCK, S_ISGID, S_ISUID, S_IXGRP};

    #[cfg(target_os = "macos")]
    mod widened {
        pub const S_IFBLK: u32 = libc::S_IFBLK as u32;
        pub const S_IFIFO: u32 = libc::S_IFIFO as u32;
        pub const S_IFMT: u32 = libc::S_IFMT as u32;
        pub const S_IFSOCK: u32 = libc::S_IFSOCK as u32;
        pub const S_ISGID: u32 = libc::S_ISGID as u32;
        pub const S_ISUID: u32 = libc::S_ISUID as u32;
        pub const S_IXGRP: u32 = libc::S_IXGRP as u32;
    }
    #[cfg(target_os = "macos")]
    pub use widened::*;
}

impl FileKind {
    #[cfg(target_os = "macos")]
    fn from_mode(mode: u32) -> FileKind {
        // mode_t is 16 bits on macOS; the type bits fit.
        match mode as libc::mode_t & libc::S_IFMT {
            libc::S_IFREG => FileKind::File,
            libc::S_IFDIR => FileKind::Directory,
            libc::S_IFLNK => FileKind::Symlink,
            _ => FileKind::Special,
        }
    }

    #[cfg(target_os = "linux")]
    fn from_mode(mode: u32) -> FileKind {
        match mode & libc::S_IFMT {
            libc::S_IFREG => FileKind::File,
            libc::S_IFDIR => FileKind::Directory,
            libc::S_IFLNK => FileKind::Symlink,
            _ => FileKind::Special,
        }
    }
}

/// The subset of `struct stat` the daemon uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Backing device.
    pub dev: u64,
    /// Backing inode number.
    pub ino: u64,
    /// Full mode including the file type bits.
    pub mode: u32,
    /// Object kind, derived from `mode`.
    pub kind: FileKind,
    /// Hard link count.
    pub nlink: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number for device nodes.
    pub rdev: u64,
    /// Size in bytes.
    pub size: u64,
    /// Allocated 512-byte blocks.
    pub blocks: u64,
    /// Preferred I/O size.
    pub blksize: u32,
    /// Access time.
    pub atime: TimeSpec,
    /// Modification time.
    pub mtime: TimeSpec,
    /// Status change time.
    pub ctime: TimeSpec,
}

/// Seconds and nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeSpec {
    /// Seconds.
    pub sec: i64,
    /// Nanoseconds.
    pub nsec: i64,
}

impl TimeSpec {
    /// Nanoseconds since the epoch.
    pub fn nanos(self) -> i64 {
        self.sec
            .saturating_mul(1_000_000_000)
            .saturating_add(self.nsec)
    }
}

/// A time for `utimensat`: `None` keeps it, `UTIME_NOW` is expressed by
/// `TimeSpec { sec: 0, nsec: libc::UTIME_NOW }`.
pub(crate) fn timespec(t: Option<TimeSpec>) -> libc::timespec {
    match t {
        Some(t) => libc::timespec {
            tv_sec: t.sec,
            tv_nsec: t.nsec,
        },
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
    }
}

#[cfg(target_os = "linux")]
impl From<libc::stat> for Stat {
    fn from(st: libc::stat) -> Stat {
        Stat {
            dev: st.st_dev,
            ino: st.st_ino,
            mode: st.st_mode,
            kind: FileKind::from_mode(st.st_mode),
            nlink: st.st_nlink,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev,
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            blksize: st.st_blksize as u32,
            atime: TimeSpec {
                sec: st.st_atime,
                nsec: st.st_atime_nsec,
            },
            mtime: TimeSpec {
                sec: st.st_mtime,
                nsec: st.st_mtime_nsec,
            },
            ctime: TimeSpec {
                sec: st.st_ctime,
                nsec: st.st_ctime_nsec,
            },
        }
    }
}

#[cfg(target_os = "macos")]
impl From<libc::stat> for Stat {
    fn from(st: libc::stat) -> Stat {
        Stat {
            dev: st.st_dev as u64,
            ino: st.st_ino,
            mode: u32::from(st.st_mode),
            kind: FileKind::from_mode(u32::from(st.st_mode)),
            nlink: u64::from(st.st_nlink),
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev as u64,
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            blksize: st.st_blksize as u32,
            atime: TimeSpec {
                sec: st.st_atime,
                nsec: st.st_atime_nsec,
            },
            mtime: TimeSpec {
                sec: st.st_mtime,
                nsec: st.st_mtime_nsec,
            },
            ctime: TimeSpec {
                sec: st.st_ctime,
                nsec: st.st_ctime_nsec,
            },
        }
    }
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (any bytes but `/` and NUL).
    pub name: OsString,
    /// Its kind, from `d_type` (or an `lstat` when the fs gives none).
    pub kind: FileKind,
    /// Backing inode number.
    pub ino: u64,
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`;
/// `mode` applies when `flags` create a file.
#[cfg(target_os = "linux")]
pub(crate) fn openat2_beneath(
    dir: BorrowedFd<'_>,
    path: &Path,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| super::invalid_name())?;
    // SAFETY: open_how is plain data; zeroed is a valid initial value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    // openat2 refuses a mode on an open that creates nothing.
    if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 {
        how.mode = u64::from(mode);
    }
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid fd, NUL-terminated path and a correctly sized open_how.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// macOS has no `openat2`: `ENOSYS`, so the caller walks the path.
#[cfg(target_os = "macos")]
pub(crate) fn openat2_beneath(
    _dir: BorrowedFd<'_>,
    _path: &Path,
    _flags: i32,
    _mode: u32,
) -> io::Result<OwnedFd> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// `openat` relative to `dir`.
pub(crate) fn openat(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
    // SAFETY: valid fd and NUL-terminated name.
    let fd =
        cvt(unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) })?;
    // SAFETY: the kernel returned a new descriptor that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether some open file description other than `fd` (which must be
/// read-only) can write to its file: a read lease cannot be had then. The
/// lease is let go at once. `None` where leases cannot tell (a filesystem
/// without them, a file of another owner without `CAP_LEASE`).
#[cfg(target_os = "linux")]
pub(crate) fn written_elsewhere(fd: BorrowedFd<'_>) -> Option<bool> {
    // A lease is broken by a writer's open with a signal (SIGIO) to its
    // holder, which would end the process; the lease is held for two
    // system calls, and such a signal means nothing to us.
    static IGNORE_SIGIO: std::sync::Once = std::sync::Once::new();
    // SAFETY: setting a signal's disposition to ignored.
    IGNORE_SIGIO.call_once(|| unsafe {
        libc::signal(libc::SIGIO, libc::SIG_IGN);
    });
    // SAFETY: fcntl on a valid descriptor.
    match cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) }) {
        Ok(_) => {
            // SAFETY: as above.
            unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
            Some(false)
        }
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Some(true),
        Err(_) => None,
    }
}

/// Leases are Linux's: elsewhere nothing can tell.
#[cfg(not(target_os = "linux"))]
pub(crate) fn written_elsewhere(_fd: BorrowedFd<'_>) -> Option<bool> {
    None
}

/// `fstat`.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<Stat> {
    // SAFETY: stat is plain data; the kernel fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and a valid out-pointer.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st.into())
}

/// `fstatat(AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn fstatat_nofollow(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Stat> {
    // SAFETY: stat is plain data; the kernel fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name and a valid out-pointer.
    cvt(unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(st.into())
}

/// `renameat2`.
#[cfg(target_os = "linux")]
pub(crate) fn renameat2(
    from_dir: BorrowedFd<'_>,
    from: &CStr,
    to_dir: BorrowedFd<'_>,
    to: &CStr,
    flags: u32,
) -> io::Result<()> {
    // SAFETY: valid fds and NUL-terminated names.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
            flags,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `renameat2` as macOS has it: `renameatx_np`, whose `RENAME_EXCL` and
/// `RENAME_SWAP` are [`RENAME_NOREPLACE`] and [`RENAME_EXCHANGE`] here.
#[cfg(target_os = "macos")]
pub(crate) fn renameat2(
    from_dir: BorrowedFd<'_>,
    from: &CStr,
    to_dir: BorrowedFd<'_>,
    to: &CStr,
    flags: u32,
) -> io::Result<()> {
    // SAFETY: valid fds and NUL-terminated names.
    cvt(unsafe {
        libc::renameatx_np(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
            flags,
        )
    })?;
    Ok(())
}

/// `readlinkat`, growing the buffer until the target fits.
pub(crate) fn readlinkat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: valid fd, NUL-terminated name, and a buffer of len bytes (or null).
        let n = cvt_size(unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        })?;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(buf);
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// Reads every entry of an opened directory, consuming the descriptor.
pub(crate) fn read_dir(fd: OwnedFd) -> io::Result<Vec<DirEntry>> {
    let raw = fd.as_raw_fd();
    // SAFETY: fdopendir takes ownership of the descriptor on success.
    let dirp = unsafe { libc::fdopendir(raw) };
    if dirp.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(fd);
    let mut out = Vec::new();
    let result = loop {
        // SAFETY: errno is thread-local; resetting it distinguishes end from error.
        unsafe { *errno_location() = 0 };
        // SAFETY: dirp is a valid DIR* until closedir below.
        let ent = unsafe { readdir(dirp) };
        if ent.is_null() {
            let err = io::Error::last_os_error();
            break if err.raw_os_error() == Some(0) {
                Ok(())
            } else {
                Err(err)
            };
        }
        // SAFETY: readdir returned a valid entry with a NUL-terminated name.
        let (name, d_type, ino) = unsafe {
            let ent = &*ent;
            (CStr::from_ptr(ent.d_name.as_ptr()), ent.d_type, ent.d_ino)
        };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let kind = match d_type {
            libc::DT_REG => FileKind::File,
            libc::DT_DIR => FileKind::Directory,
            libc::DT_LNK => FileKind::Symlink,
            libc::DT_UNKNOWN => {
                // SAFETY: dirp is valid; dirfd does not transfer ownership.
                let dfd = unsafe { BorrowedFd::borrow_raw(libc::dirfd(dirp)) };
                match fstatat_nofollow(dfd, name) {
                    Ok(st) => st.kind,
                    Err(_) => continue,
                }
            }
            _ => FileKind::Special,
        };
        out.push(DirEntry {
            name: OsString::from_vec(bytes.to_vec()),
            kind,
            ino,
        });
    };
    // SAFETY: dirp is valid and closed exactly once.
    unsafe { libc::closedir(dirp) };
    result.map(|()| out)
}

#[cfg(target_os = "linux")]
use libc::{__errno_location as errno_location, readdir64 as readdir};
#[cfg(target_os = "macos")]
use libc::{__error as errno_location, readdir};

/// `/proc/self/fd/N` for a descriptor: operating on this path reaches the
/// object the descriptor already refers to, without any new path walk.
#[cfg(target_os = "linux")]
pub(crate) fn proc_fd_path(fd: BorrowedFd<'_>) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// The path the descriptor's object has now (`F_GETPATH`): macOS has no
/// `/proc/self/fd`, so this is a path walk again, and a rename between the
/// two steps can make it reach another object. Empty if unknown.
#[cfg(target_os = "macos")]
pub(crate) fn proc_fd_path(fd: BorrowedFd<'_>) -> CString {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes, NUL included.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) } < 0 {
        return CString::default();
    }
    CStr::from_bytes_until_nul(&buf)
        .map(CStr::to_owned)
        .unwrap_or_default()
}

/// access(2) of the object behind `fd` (a handle from [`OBJECT_HANDLE`]),
/// with this process's effective ids: `faccessat2` with `AT_EMPTY_PATH`,
/// or its `/proc/self/fd` path on kernels older than 5.8.
#[cfg(target_os = "linux")]
pub(crate) fn access_handle(fd: BorrowedFd<'_>, mode: i32) -> io::Result<()> {
    // SAFETY: valid fd and NUL-terminated empty path.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_faccessat2,
            fd.as_raw_fd(),
            c"".as_ptr(),
            mode,
            libc::AT_EMPTY_PATH | libc::AT_EACCESS,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::ENOSYS) {
        return Err(e);
    }
    let path = proc_fd_path(fd);
    // SAFETY: NUL-terminated path.
    cvt(unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), mode, libc::AT_EACCESS) }).map(drop)
}

/// `chmod` of the object behind a handle from [`OBJECT_HANDLE`].
#[cfg(target_os = "linux")]
pub(crate) fn chmod_handle(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    let proc = proc_fd_path(fd);
    // SAFETY: NUL-terminated path naming our own O_PATH descriptor.
    cvt(unsafe { libc::chmod(proc.as_ptr(), mode as libc::mode_t) })?;
    Ok(())
}

/// `chmod` of the object behind a handle from [`OBJECT_HANDLE`]: on macOS
/// the handle is a real descriptor, so `fchmod`.
#[cfg(target_os = "macos")]
pub(crate) fn chmod_handle(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), mode as libc::mode_t) })?;
    Ok(())
}

fn is_symlink(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(fstat(fd)?.kind == FileKind::Symlink)
}

/// The bytes a get- or list-xattr `call` (buffer, its length) answers:
/// asked for the size with a null buffer first, then into a buffer of that
/// size, again if the value grew in between (ERANGE).
fn sized_xattr(
    mut call: impl FnMut(*mut libc::c_void, usize) -> libc::ssize_t,
) -> io::Result<Vec<u8>> {
    loop {
        let size = cvt_size(call(std::ptr::null_mut(), 0))?;
        let mut buf = vec![0u8; size];
        match cvt_size(call(buf.as_mut_ptr().cast(), buf.len())) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.raw_os_error() == Some(libc::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// getxattr on the object behind an `O_PATH` descriptor. Linux allows no
/// `user.*` attributes on symlinks, so they simply have none.
#[cfg(target_os = "linux")]
pub(crate) fn get_xattr(fd: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::ENODATA));
    }
    let path = proc_fd_path(fd);
    // SAFETY: NUL-terminated strings and a buffer of len bytes (or null).
    sized_xattr(|buf, len| unsafe { libc::getxattr(path.as_ptr(), name.as_ptr(), buf, len) })
}

/// setxattr on the object behind an `O_PATH` descriptor.
#[cfg(target_os = "linux")]
pub(crate) fn set_xattr(
    fd: BorrowedFd<'_>,
    name: &CStr,
    value: &[u8],
    flags: i32,
) -> io::Result<()> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    let path = proc_fd_path(fd);
    // SAFETY: NUL-terminated strings and a value buffer of value.len() bytes.
    cvt(unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    })?;
    Ok(())
}

/// listxattr on the object behind an `O_PATH` descriptor.
#[cfg(target_os = "linux")]
pub(crate) fn list_xattr(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    if is_symlink(fd)? {
        return Ok(Vec::new());
    }
    let path = proc_fd_path(fd);
    // SAFETY: a NUL-terminated path and a buffer of len bytes (or null).
    sized_xattr(|buf, len| unsafe { libc::listxattr(path.as_ptr(), buf.cast(), len) })
}

/// removexattr on the object behind an `O_PATH` descriptor.
#[cfg(target_os = "linux")]
pub(crate) fn remove_xattr(fd: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::ENODATA));
    }
    let path = proc_fd_path(fd);
    // SAFETY: NUL-terminated strings.
    cvt(unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) })?;
    Ok(())
}

/// getxattr on the object behind a handle (macOS: the descriptor itself).
/// Symlinks have none, as on Linux.
#[cfg(target_os = "macos")]
pub(crate) fn get_xattr(fd: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::ENOATTR));
    }
    // SAFETY: a valid fd, a NUL-terminated name and a buffer of len bytes (or null).
    sized_xattr(|buf, len| unsafe {
        libc::fgetxattr(fd.as_raw_fd(), name.as_ptr(), buf, len, 0, 0)
    })
}

/// setxattr on the object behind a handle (macOS: the descriptor itself).
#[cfg(target_os = "macos")]
pub(crate) fn set_xattr(
    fd: BorrowedFd<'_>,
    name: &CStr,
    value: &[u8],
    flags: i32,
) -> io::Result<()> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    // SAFETY: valid fd, name and a value buffer of value.len() bytes.
    cvt(unsafe {
        libc::fsetxattr(
            fd.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
            flags,
        )
    })?;
    Ok(())
}

/// listxattr on the object behind a handle (macOS: the descriptor itself).
#[cfg(target_os = "macos")]
pub(crate) fn list_xattr(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    if is_symlink(fd)? {
        return Ok(Vec::new());
    }
    // SAFETY: a valid fd and a buffer of len bytes (or null).
    sized_xattr(|buf, len| unsafe { libc::flistxattr(fd.as_raw_fd(), buf.cast(), len, 0) })
}

/// removexattr on the object behind a handle (macOS: the descriptor itself).
#[cfg(target_os = "macos")]
pub(crate) fn remove_xattr(fd: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::ENOATTR));
    }
    // SAFETY: valid fd and name.
    cvt(unsafe { libc::fremovexattr(fd.as_raw_fd(), name.as_ptr(), 0) })?;
    Ok(())
}

/// `fchown` of a folder handle from [`DIR_HANDLE`].
#[cfg(target_os = "linux")]
pub(crate) fn chown_handle(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: valid fd.
    cvt(unsafe { libc::fchownat(fd.as_raw_fd(), c"".as_ptr(), uid, gid, libc::AT_EMPTY_PATH) })?;
    Ok(())
}

/// `fchown` of a folder handle from [`DIR_HANDLE`].
#[cfg(target_os = "macos")]
pub(crate) fn chown_handle(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: valid fd.
    cvt(unsafe { libc::fchown(fd.as_raw_fd(), uid, gid) })?;
    Ok(())
}

/// Makes everything written to the filesystem of `dir` (an open folder)
/// durable: `syncfs`.
#[cfg(target_os = "linux")]
pub(crate) fn sync_filesystem(dir: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: a valid descriptor; syncfs has no other preconditions.
    cvt(unsafe { libc::syncfs(dir.as_raw_fd()) }).map(|_| ())
}

/// Makes everything written durable. macOS has no `syncfs`: `sync` queues
/// every dirty buffer of every filesystem, then `F_FULLFSYNC` on the folder
/// waits for its drive to flush its cache (a plain `fsync` of the folder
/// where the filesystem refuses that).
#[cfg(target_os = "macos")]
pub(crate) fn sync_filesystem(dir: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    // SAFETY: a valid descriptor.
    if unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_FULLFSYNC) } == 0 {
        return Ok(());
    }
    // SAFETY: a valid descriptor.
    cvt(unsafe { libc::fsync(dir.as_raw_fd()) }).map(|_| ())
}

/// Whether a `fallocate` mode leaves the file's size as it is.
#[cfg(target_os = "linux")]
pub(crate) fn allocate_keeps_size(mode: i32) -> bool {
    mode & (libc::FALLOC_FL_KEEP_SIZE | libc::FALLOC_FL_PUNCH_HOLE) != 0
}

/// Whether a `fallocate` mode leaves the file's size as it is: macOS
/// knows only mode 0, which does not.
#[cfg(target_os = "macos")]
pub(crate) fn allocate_keeps_size(_mode: i32) -> bool {
    false
}

/// `fallocate`.
#[cfg(target_os = "linux")]
pub(crate) fn allocate(fd: BorrowedFd<'_>, mode: i32, offset: u64, length: u64) -> io::Result<()> {
    // SAFETY: valid descriptor; the kernel validates the range.
    cvt(unsafe { libc::fallocate(fd.as_raw_fd(), mode, offset as i64, length as i64) })?;
    Ok(())
}

/// `fallocate` as macOS has it: mode 0 only (anything else is
/// `EOPNOTSUPP`), as `F_PREALLOCATE` for the blocks past the end and
/// `ftruncate` for a size that grows.
#[cfg(target_os = "macos")]
pub(crate) fn allocate(fd: BorrowedFd<'_>, mode: i32, offset: u64, length: u64) -> io::Result<()> {
    if mode != 0 {
        return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
    }
    let end = offset
        .checked_add(length)
        .and_then(|end| i64::try_from(end).ok())
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EFBIG))?;
    let size = fstat(fd)?.size as i64;
    if end <= size {
        return Ok(());
    }
    let mut store = libc::fstore_t {
        fst_flags: libc::F_ALLOCATEALL,
        fst_posmode: libc::F_PEOFPOSMODE,
        fst_offset: 0,
        fst_length: end - size,
        fst_bytesalloc: 0,
    };
    // SAFETY: valid descriptor and a valid fstore_t.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_PREALLOCATE, &mut store) })?;
    // SAFETY: valid descriptor.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), end) })?;
    Ok(())
}

/// `fstatvfs`.
pub(crate) fn fstatvfs(fd: BorrowedFd<'_>) -> io::Result<libc::statvfs> {
    // SAFETY: statvfs is plain data; the kernel fills it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and a valid out-pointer. fstatvfs works on O_PATH fds.
    cvt(unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}
