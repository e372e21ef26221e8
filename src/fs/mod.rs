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
