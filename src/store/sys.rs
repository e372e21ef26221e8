//! Thin, safe wrappers over the `*at` system calls the store needs.
//!
//! Kept apart so that `store/mod.rs` reads as policy (what is allowed) and
//! this file as mechanism (how to ask the kernel). Nothing here follows a
//! final symlink unless its name says so.

use std::ffi::{CStr, CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
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

impl FileKind {
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
pub(crate) fn openat2_beneath(
    dir: BorrowedFd<'_>,
    path: &Path,
    flags: i32,
    mode: u32,
) -> io::Result<OwnedFd> {
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

/// `readlinkat`, growing the buffer until the target fits.
pub(crate) fn readlinkat(dir: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: valid fd, NUL-terminated name, and a buffer of buf.len() bytes.
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
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: dirp is a valid DIR* until closedir below.
        let ent = unsafe { libc::readdir64(dirp) };
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

/// `/proc/self/fd/N` for a descriptor: operating on this path reaches the
/// object the descriptor already refers to, without any new path walk.
pub(crate) fn proc_fd_path(fd: BorrowedFd<'_>) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

fn is_symlink(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(fstat(fd)?.kind == FileKind::Symlink)
}

/// getxattr on the object behind an `O_PATH` descriptor. Linux allows no
/// `user.*` attributes on symlinks, so they simply have none.
pub(crate) fn get_xattr(fd: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::ENODATA));
    }
    let path = proc_fd_path(fd);
    loop {
        // SAFETY: NUL-terminated strings; a null buffer asks for the size.
        let size = cvt_size(unsafe {
            libc::getxattr(path.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0)
        })?;
        let mut buf = vec![0u8; size];
        // SAFETY: buffer of buf.len() bytes.
        match cvt_size(unsafe {
            libc::getxattr(
                path.as_ptr(),
                name.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        }) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.raw_os_error() == Some(libc::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// setxattr on the object behind an `O_PATH` descriptor.
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
pub(crate) fn list_xattr(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    if is_symlink(fd)? {
        return Ok(Vec::new());
    }
    let path = proc_fd_path(fd);
    loop {
        // SAFETY: NUL-terminated path; a null buffer asks for the size.
        let size = cvt_size(unsafe { libc::listxattr(path.as_ptr(), std::ptr::null_mut(), 0) })?;
        let mut buf = vec![0u8; size];
        // SAFETY: buffer of buf.len() bytes.
        match cvt_size(unsafe {
            libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        }) {
            Ok(n) => {
                buf.truncate(n);
                return Ok(buf);
            }
            Err(e) if e.raw_os_error() == Some(libc::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// removexattr on the object behind an `O_PATH` descriptor.
pub(crate) fn remove_xattr(fd: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    if is_symlink(fd)? {
        return Err(io::Error::from_raw_os_error(libc::ENODATA));
    }
    let path = proc_fd_path(fd);
    // SAFETY: NUL-terminated strings.
    cvt(unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) })?;
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
