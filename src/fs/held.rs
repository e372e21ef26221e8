//! How the mount's writer holds a folder of the mount open and reaches
//! paths through it, and the few other calls it needs from the platform.
//!
//! Linux: the folder is held as an `O_PATH` descriptor and reached through
//! `/proc/self/fd/N`, so a path stays inside that folder whatever it is
//! renamed to, and a held mount cannot vanish from under a change (the
//! unmount fails busy, or the change fails).
//!
//! macOS has no `/proc/self/fd`: the folder is held open read-only, which
//! keeps a plain unmount busy as well, but paths are walked from the
//! folder's name, so a folder renamed between the open and the change is
//! looked for under its old name (and the change fails or finds nothing).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Flags that hold a folder open without reading it.
#[cfg(target_os = "linux")]
const HOLD: i32 = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
/// Flags that hold a folder open without reading it.
#[cfg(target_os = "macos")]
const HOLD: i32 = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// Opens the folder at `path` and returns it with the path that reaches
/// it through the descriptor.
pub(super) fn hold(path: &Path) -> io::Result<(OwnedFd, PathBuf)> {
    let c = c_path(path)?;
    // SAFETY: NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), HOLD) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned only here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let through = through(&fd, path);
    Ok((fd, through))
}

#[cfg(target_os = "linux")]
fn through(fd: &OwnedFd, _path: &Path) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

#[cfg(target_os = "macos")]
fn through(_fd: &OwnedFd, path: &Path) -> PathBuf {
    path.to_path_buf()
}

/// Whether the folder held by `fd` is on a FUSE filesystem.
pub(super) fn is_fuse(fd: &OwnedFd) -> io::Result<bool> {
    // SAFETY: zeroed statfs is a valid out-parameter.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor and out-parameter.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(is_fuse_statfs(&st))
}

/// `statfs.f_type` of a FUSE filesystem.
#[cfg(target_os = "linux")]
const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;

#[cfg(target_os = "linux")]
#[allow(clippy::unnecessary_cast)] // f_type is 32 bits wide on some targets
fn is_fuse_statfs(st: &libc::statfs) -> bool {
    st.f_type as i64 == FUSE_SUPER_MAGIC
}

/// macFUSE names its filesystems `macfuse` (older releases `osxfuse`).
#[cfg(target_os = "macos")]
fn is_fuse_statfs(st: &libc::statfs) -> bool {
    let name: Vec<u8> = st
        .f_fstypename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    name.starts_with(b"macfuse") || name.starts_with(b"osxfuse")
}

/// `renameat2` on two paths (`renameatx_np` on macOS); `flags` are the
/// store's ([`RENAME_NOREPLACE`](crate::store::RENAME_NOREPLACE),
/// [`RENAME_EXCHANGE`](crate::store::RENAME_EXCHANGE)).
pub(super) fn rename(from: &Path, to: &Path, flags: u32) -> io::Result<()> {
    let (from, to) = (c_path(from)?, c_path(to)?);
    // SAFETY: AT_FDCWD is not -1, and names the current directory for the
    // whole call.
    let cwd = unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) };
    crate::store::renameat2(cwd, &from, cwd, &to, flags)
}
