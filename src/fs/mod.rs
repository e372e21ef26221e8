//! The mount: the real tree of the store served through FUSE.
//!
//! `core` holds the operations (testable without a kernel), `fuse` adapts
//! them to fuser, `inodes` and `handles` are the tables behind them,
//! `error` maps every failure to one errno, `invalidate` tells the kernel
//! about changes made behind the mount, and `writer` is the writer that
//! goes through the mount.

mod core;
mod error;
mod fuse;
mod handles;
mod held;
mod inodes;
mod invalidate;
mod viewnodes;
mod walkers;
mod writer;

pub use self::core::{
    AttrChanges, DirItem, Entry, FsOptions, Opened, ReplaceGuard, Requester, StoreFs,
    target_stays_inside, to_attr,
};
pub use error::{FsError, FsResult};
pub use fuse::FuseAdapter;
pub use invalidate::ExternalChangeWatcher;
pub use writer::MountWriter;

/// True for the inodes of the virtual views.
pub fn is_view_inode(ino: u64) -> bool {
    viewnodes::is_virtual(ino)
}

/// The inode number of the mount's root directory.
pub const ROOT_INO: u64 = inodes::ROOT;

/// Whether the kernel checks permissions itself (`default_permissions`):
/// on a mount other users may use, and everywhere but Linux.
///
/// On Linux, a mount without `allow_other` only ever serves its owner,
/// the user the daemon runs as, so the store's own checks on the daemon's
/// calls are the checks the kernel would make. Left to the kernel, every
/// change to a folder costs a round trip: a create or unlink there marks
/// the folder's attributes stale, and the next name looked up in it has
/// to fetch them again before the kernel can check the caller's search
/// permission. The daemon answers access(2) from the store instead.
///
/// A daemon that may pass permission checks of its own (root, or any of
/// the capabilities that override file modes and ownership) would judge
/// its callers by privileges they may not have: the kernel checks there.
pub fn kernel_checks_permissions(allow_other: bool) -> bool {
    // Unknown counts as yes.
    allow_other
        || !cfg!(target_os = "linux")
        || crate::process::overrides_file_modes().unwrap_or(true)
}
