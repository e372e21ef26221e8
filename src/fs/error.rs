//! The one place where filesystem errors become errno values.
//!
//! The match in [`FsError::errno`] is exhaustive on purpose: adding a
//! variant forces a decision about what the caller sees. Backing-store
//! errors keep the errno the kernel gave us, so the mount reports exactly
//! what ext4 would.

use std::io;

/// Why a filesystem operation failed.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The backing store refused; carries the kernel's errno.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The kernel named an inode this mount does not know (or no longer has).
    #[error("unknown inode")]
    UnknownInode,
    /// The inode exists but its name was removed; only open handles reach it.
    #[error("inode has no path any more")]
    Unlinked,
    /// The kernel named a file handle this mount never gave out.
    #[error("unknown file handle")]
    BadHandle,
    /// The write or truncate would take the file past the size cap.
    #[error("file would exceed the size cap of {0} bytes")]
    TooBig(u64),
    /// A symlink whose target would leave the mount.
    #[error("symlink target leaves the mount")]
    EscapingSymlink,
    /// A change to a view or to the guide: they are generated, as on a
    /// read-only filesystem.
    #[error("the views are read-only")]
    ReadOnly,
    /// An operation the mount refuses by design (hard links, device nodes).
    #[error("refused: {0}")]
    Refused(&'static str),
    /// A name that cannot be a single path component.
    #[error("invalid file name")]
    InvalidName,
    /// The target is a directory where a file was required.
    #[error("is a directory")]
    IsDirectory,
}

impl FsError {
    /// The errno to hand back to the kernel.
    pub fn errno(&self) -> i32 {
        match self {
            FsError::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
            FsError::UnknownInode => libc::ESTALE,
            FsError::Unlinked => libc::ENOENT,
            FsError::BadHandle => libc::EBADF,
            FsError::TooBig(_) => libc::EFBIG,
            FsError::EscapingSymlink => libc::EPERM,
            FsError::ReadOnly => libc::EROFS,
            FsError::Refused(_) => libc::EPERM,
            FsError::InvalidName => libc::EINVAL,
            FsError::IsDirectory => libc::EISDIR,
        }
    }

    /// Builds an error from a raw errno.
    pub fn from_errno(errno: i32) -> FsError {
        FsError::Io(io::Error::from_raw_os_error(errno))
    }

    /// True for the common, expected outcomes (a missing name, an existing
    /// name under O_EXCL) that are logged at debug rather than warn.
    pub fn is_routine(&self) -> bool {
        matches!(
            self.errno(),
            libc::ENOENT
                | libc::EEXIST
                | crate::store::NO_XATTR
                | libc::ENOTEMPTY
                | libc::ENOTDIR
                | libc::EISDIR
                | libc::ERANGE
                | libc::EPERM
                | libc::EROFS
                | libc::EACCES
                | libc::EFBIG
                | libc::ELOOP
        )
    }
}

/// Result of a filesystem operation.
pub type FsResult<T> = Result<T, FsError>;
