//! Inodes for the virtual views, beside the real tree.
//!
//! Virtual inode numbers live above [`VIRTUAL_BASE`], so one comparison
//! tells a handler which side it is on. The top-level view folders and the
//! root's guide have fixed numbers; everything below them is interned on
//! lookup or readdir and dropped when the kernel forgets it. Contents come
//! from [`crate::views::Views`]; this file only maps them to inodes,
//! attributes and handles. Views are read-only: every change fails with
//! `EROFS`, as on a read-only filesystem.
//!
//! The root lists the guide (unless the mount turned it off) and, only
//! when asked to, the view folders; both resolve by name either way. The
//! guide's times are those of the mnemofs binary, so a copy of the mount
//! restored onto a fresh one finds the guide unchanged.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use fuser::{FileAttr, FileType, INodeNo};

use super::error::{FsError, FsResult};
use crate::views::{ROOT_GUIDE_NAME, ROOT_VIEWS, ViewDir, ViewEntry, ViewFile, ViewRoot, Views};

/// First virtual inode number.
pub(crate) const VIRTUAL_BASE: u64 = 1 << 62;
/// The guide at the root: right after the top-level view folders.
const GUIDE_INO: u64 = VIRTUAL_BASE + ROOT_VIEWS.len() as u64;
/// The first inode number given out on demand.
const FIRST_INTERNED: u64 = GUIDE_INO + 1;

/// True for inode numbers of the virtual views.
pub(crate) fn is_virtual(ino: u64) -> bool {
    ino >= VIRTUAL_BASE
}

/// What a virtual inode is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ViewNode {
    Dir(ViewDir),
    Link(PathBuf),
    File(ViewFile),
}

impl From<ViewEntry> for (OsString, ViewNode) {
    fn from(entry: ViewEntry) -> Self {
        match entry {
            ViewEntry::Dir(n, d) => (n, ViewNode::Dir(d)),
            ViewEntry::Link(n, t) => (n, ViewNode::Link(t)),
            ViewEntry::File(n, f) => (n, ViewNode::File(f)),
        }
    }
}

#[derive(Debug)]
struct Slot {
    parent: u64,
    name: OsString,
    node: ViewNode,
    lookups: u64,
}

/// The virtual inode table plus the views it serves.
#[derive(Debug)]
pub(crate) struct ViewTable {
    pub(crate) views: Views,
    /// The view folders are left out of the root's listing.
    pub(crate) hidden: bool,
    owner: (u32, u32),
    /// Folders 0500 and files 0400: only the owner enters the views.
    owner_only: bool,
    started: SystemTime,
    /// The guide's times: when the binary that wrote its text was built.
    guide_time: SystemTime,
    slots: parking_lot::Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    nodes: HashMap<u64, Slot>,
    by_name: HashMap<(u64, OsString), u64>,
    next: u64,
}

impl ViewTable {
    pub(crate) fn new(
        views: Views,
        hidden: bool,
        owner: (u32, u32),
        owner_only: bool,
    ) -> ViewTable {
        let mut slots = Slots {
            next: FIRST_INTERNED,
            ..Slots::default()
        };
        slots.nodes.insert(
            GUIDE_INO,
            Slot {
                parent: super::inodes::ROOT,
                name: ROOT_GUIDE_NAME.into(),
                node: ViewNode::File(ViewFile::AgentGuide),
                lookups: 1,
            },
        );
        for (i, root) in ROOT_VIEWS.iter().enumerate() {
            let ino = VIRTUAL_BASE + i as u64;
            slots.nodes.insert(
                ino,
                Slot {
                    parent: super::inodes::ROOT,
                    name: root.name().into(),
                    node: ViewNode::Dir(ViewDir::Root(*root)),
                    lookups: 1,
                },
            );
        }
        let started = SystemTime::now();
        let guide_time = std::fs::metadata("/proc/self/exe")
            .and_then(|m| m.modified())
            .unwrap_or(started);
        ViewTable {
            views,
            hidden,
            owner,
            owner_only,
            started,
            guide_time,
            slots: parking_lot::Mutex::new(slots),
        }
    }

    /// The fixed inode a name at the root stands for: a view folder, or
    /// the guide when it is shown.
    pub(crate) fn root_child(&self, name: &OsStr) -> Option<u64> {
        if let Some(root) = ViewRoot::from_name(name) {
            return Some(Self::root_ino(root));
        }
        self.views.root_file(name).map(|_| GUIDE_INO)
    }

    /// True for the guide at the root.
    pub(crate) fn is_guide(ino: u64) -> bool {
        ino == GUIDE_INO
    }

    /// The fixed inode of a top-level view folder.
    pub(crate) fn root_ino(root: ViewRoot) -> u64 {
        let i = ROOT_VIEWS.iter().position(|r| *r == root).unwrap_or(0);
        VIRTUAL_BASE + i as u64
    }

    pub(crate) fn node(&self, ino: u64) -> FsResult<ViewNode> {
        self.slots
            .lock()
            .nodes
            .get(&ino)
            .map(|s| s.node.clone())
            .ok_or(FsError::UnknownInode)
    }

    fn dir(&self, ino: u64) -> FsResult<ViewDir> {
        match self.node(ino)? {
            ViewNode::Dir(d) => Ok(d),
            _ => Err(FsError::from_errno(libc::ENOTDIR)),
        }
    }

    /// Binds a name under a virtual parent, reusing the inode when the name
    /// still means the same thing.
    pub(crate) fn intern(&self, parent: u64, name: OsString, node: ViewNode, count: bool) -> u64 {
        let mut slots = self.slots.lock();
        let key = (parent, name.clone());
        if let Some(&ino) = slots.by_name.get(&key)
            && let Some(slot) = slots.nodes.get_mut(&ino)
            && slot.node == node
        {
            slot.lookups += u64::from(count);
            return ino;
        }
        let ino = slots.next;
        slots.next += 1;
        slots.by_name.insert(key, ino);
        slots.nodes.insert(
            ino,
            Slot {
                parent,
                name,
                node,
                lookups: u64::from(count),
            },
        );
        ino
    }

    /// Looks a name up in a virtual directory.
    pub(crate) fn lookup(&self, parent: u64, name: &OsStr) -> FsResult<(u64, FileAttr)> {
        let dir = self.dir(parent)?;
        let entry = self
            .views
            .lookup(&dir, name)
            .ok_or(FsError::from_errno(libc::ENOENT))?;
        let (name, node) = entry.into();
        let attr_node = node.clone();
        let ino = self.intern(parent, name, node, true);
        Ok((ino, self.attr(ino, &attr_node)))
    }

    /// The kernel dropped lookups; transient nodes go when unreferenced.
    pub(crate) fn forget(&self, ino: u64, n: u64) {
        if ino < FIRST_INTERNED {
            return;
        }
        let mut slots = self.slots.lock();
        let Some(slot) = slots.nodes.get_mut(&ino) else {
            return;
        };
        slot.lookups = slot.lookups.saturating_sub(n);
        if slot.lookups == 0 {
            let key = (slot.parent, slot.name.clone());
            slots.nodes.remove(&ino);
            if slots.by_name.get(&key) == Some(&ino) {
                slots.by_name.remove(&key);
            }
        }
    }

    /// Attributes of a virtual inode.
    pub(crate) fn attr(&self, ino: u64, node: &ViewNode) -> FileAttr {
        // The guide at the root is the same text for everyone; the rest
        // shows memories.
        let others = if self.owner_only && ino != GUIDE_INO {
            0o000
        } else {
            0o055
        };
        let (kind, perm, size, nlink) = match node {
            ViewNode::Dir(_) => (FileType::Directory, 0o500 | others, 0, 2),
            ViewNode::Link(target) => (
                FileType::Symlink,
                0o777,
                target.as_os_str().as_bytes().len() as u64,
                1,
            ),
            // What a read returns now (reads use direct I/O, so a file that
            // changes after the stat is still read whole).
            ViewNode::File(f) => (
                FileType::RegularFile,
                0o400 | (others & 0o044),
                self.views.size_hint(f),
                1,
            ),
        };
        let time = if ino == GUIDE_INO {
            self.guide_time
        } else {
            self.started
        };
        FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: time,
            mtime: time,
            ctime: time,
            crtime: time,
            kind,
            perm,
            nlink,
            uid: self.owner.0,
            gid: self.owner.1,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    pub(crate) fn getattr(&self, ino: u64) -> FsResult<FileAttr> {
        let node = self.node(ino)?;
        Ok(self.attr(ino, &node))
    }

    pub(crate) fn readlink(&self, ino: u64) -> FsResult<Vec<u8>> {
        match self.node(ino)? {
            ViewNode::Link(target) => Ok(target.as_os_str().as_bytes().to_vec()),
            _ => Err(FsError::from_errno(libc::EINVAL)),
        }
    }

    /// Generated content of a virtual file, for an open handle.
    pub(crate) fn open(&self, ino: u64, flags: i32) -> FsResult<Arc<Vec<u8>>> {
        match self.node(ino)? {
            ViewNode::File(f) if flags & libc::O_ACCMODE == libc::O_RDONLY => {
                Ok(self.views.content(&f))
            }
            ViewNode::File(_) => Err(FsError::ReadOnly),
            ViewNode::Dir(_) => Err(FsError::IsDirectory),
            ViewNode::Link(_) => Err(FsError::from_errno(libc::ELOOP)),
        }
    }

    /// Lists a virtual directory.
    pub(crate) fn list(&self, ino: u64) -> FsResult<Vec<ViewEntry>> {
        Ok(self.views.list(&self.dir(ino)?))
    }

    /// The root's virtual entries as readdir shows them: the guide unless
    /// it is off, then the view folders unless they are unlisted.
    pub(crate) fn root_entries(&self) -> Vec<(u64, &'static str, FileType)> {
        let mut out = Vec::new();
        if self.views.root_guide() {
            out.push((GUIDE_INO, ROOT_GUIDE_NAME, FileType::RegularFile));
        }
        if !self.hidden {
            out.extend(
                ROOT_VIEWS
                    .iter()
                    .map(|r| (Self::root_ino(*r), r.name(), FileType::Directory)),
            );
        }
        out
    }

    /// True when `bytes` are exactly the guide: a copy of the mount being
    /// written back.
    pub(crate) fn is_the_guide(&self, bytes: &[u8]) -> bool {
        self.views.content(&ViewFile::AgentGuide).as_slice() == bytes
    }

    /// Every (parent, name) the kernel may have cached below the view
    /// folders: all of them may change when the index changes.
    pub(crate) fn cached_names(&self) -> Vec<(u64, OsString)> {
        let slots = self.slots.lock();
        slots
            .nodes
            .values()
            .filter(|s| is_virtual(s.parent))
            .map(|s| (s.parent, s.name.clone()))
            .collect()
    }
}
