//! The inode table: FUSE inode numbers for the real tree.
//!
//! Each node records its parent and name, so a node's store path is rebuilt
//! by walking up, and renaming a directory moves its whole subtree for free.
//! Numbers are handed out from a counter and never reused while mounted, so
//! every generation is 0 and a stale number can never name a new file.
//!
//! A node stays while the kernel holds lookups on it, while a handle is open
//! on it, or while it has children in the table. Nodes created for plain
//! `readdir` entries (zero lookups) are kept so `d_ino` matches `st_ino`;
//! they are bounded by the number of entries in the store.
//!
//! A node whose name was unlinked or renamed over is *detached*: it keeps
//! its number for open handles and pending forgets but has no path.
//!
//! A name is kept once, in its node: the index from (parent, name) to an
//! attached node holds only inode numbers, hashed by the name their node
//! carries, so a large tree costs one name per inode and a lookup by name
//! allocates nothing.
//!
//! Nodes are boxed: a hash table doubles, so at times half its slots are
//! empty, and an empty slot then costs a pointer instead of a whole node.
//! After a mass removal both tables shrink back (see [`InodeTable::collect`]).

use std::ffi::{OsStr, OsString};
use std::hash::BuildHasher;

use hashbrown::{HashMap, HashTable};

use crate::store::{FileKind, StorePath, TimeSpec};

/// The root directory's inode number.
pub(crate) const ROOT: u64 = 1;

/// Tables holding fewer nodes than this never shrink: small ones cost
/// little, and would otherwise shrink and grow again with every few files.
const MIN_SHRINK: usize = 4096;

/// What the daemon knows about one inode.
#[derive(Debug)]
pub(crate) struct Node {
    parent: u64,
    name: Box<OsStr>,
    lookups: u64,
    open_handles: u32,
    pub(crate) open_writers: u32,
    /// Open handles the kernel reads (and writes) through passthrough.
    pub(crate) passthrough_handles: u32,
    children: u32,
    attached: bool,
    /// Backing inode number, to notice a name now naming another object.
    pub(crate) backing_ino: u64,
    pub(crate) kind: FileKind,
    /// The file's version when the kernel's page cache was last known
    /// valid.
    pub(crate) cached_version: Option<CacheVersion>,
}

/// What tells whether the kernel's cached pages of a file still hold its
/// content: mtime and size, and the status change time, which also moves
/// when a rewrite sets the mtime back (`rsync --inplace`, `touch -r`).
pub(crate) type CacheVersion = (TimeSpec, TimeSpec, u64);

/// The version of the file `st` describes.
pub(crate) fn cache_version(st: &crate::store::Stat) -> CacheVersion {
    (st.mtime, st.ctime, st.size)
}

/// All known inodes. Callers wrap it in one lock; no method does I/O.
#[derive(Debug)]
pub(crate) struct InodeTable {
    nodes: HashMap<u64, Box<Node>>,
    /// The attached nodes other than the root, by their parent and name.
    by_name: HashTable<u64>,
    hasher: hashbrown::DefaultHashBuilder,
    next: u64,
    /// The nodes open for writing.
    writers: std::collections::HashSet<u64>,
}

/// Whether an entry of `by_name` is the binding of `name` in `parent`.
fn names(nodes: &HashMap<u64, Box<Node>>, parent: u64, name: &OsStr) -> impl Fn(&u64) -> bool {
    move |ino| {
        nodes
            .get(ino)
            .is_some_and(|node| node.parent == parent && *node.name == *name)
    }
}

/// The hash of an entry of `by_name`, from the name its node carries, for
/// moving entries when the table grows or shrinks.
fn rehash<'a>(
    nodes: &'a HashMap<u64, Box<Node>>,
    hasher: &'a hashbrown::DefaultHashBuilder,
) -> impl Fn(&u64) -> u64 + 'a {
    move |ino| {
        nodes
            .get(ino)
            .map_or(0, |node| hasher.hash_one((node.parent, &*node.name)))
    }
}

impl InodeTable {
    pub(crate) fn new(root_backing_ino: u64) -> Self {
        let mut nodes = HashMap::new();
        nodes.insert(
            ROOT,
            Box::new(Node {
                parent: ROOT,
                name: OsStr::new("").into(),
                lookups: 1,
                open_handles: 0,
                open_writers: 0,
                passthrough_handles: 0,
                children: 0,
                attached: true,
                backing_ino: root_backing_ino,
                kind: FileKind::Directory,
                cached_version: None,
            }),
        );
        InodeTable {
            nodes,
            by_name: HashTable::new(),
            hasher: Default::default(),
            next: ROOT + 1,
            writers: Default::default(),
        }
    }

    fn hash(&self, parent: u64, name: &OsStr) -> u64 {
        self.hasher.hash_one((parent, name))
    }

    /// Binds `name` in `parent` to `ino`, whose node already carries them.
    fn bind(&mut self, parent: u64, name: &OsStr, ino: u64) {
        let hash = self.hash(parent, name);
        let rehash = rehash(&self.nodes, &self.hasher);
        self.by_name.insert_unique(hash, ino, rehash);
    }

    /// Removes the binding of `name` in `parent`; returns its node.
    fn unbind(&mut self, parent: u64, name: &OsStr) -> Option<u64> {
        let hash = self.hash(parent, name);
        let found = self
            .by_name
            .find_entry(hash, names(&self.nodes, parent, name))
            .ok()?;
        Some(found.remove().0)
    }

    pub(crate) fn get(&self, ino: u64) -> Option<&Node> {
        self.nodes.get(&ino).map(|node| &**node)
    }

    pub(crate) fn get_mut(&mut self, ino: u64) -> Option<&mut Node> {
        self.nodes.get_mut(&ino).map(|node| &mut **node)
    }

    /// The store path of an attached node.
    pub(crate) fn path(&self, ino: u64) -> Option<StorePath> {
        let mut names = Vec::new();
        let mut cur = ino;
        while cur != ROOT {
            let node = self.nodes.get(&cur)?;
            if !node.attached {
                return None;
            }
            names.push(node.name.to_os_string());
            cur = node.parent;
        }
        names.reverse();
        StorePath::from_components(names)
    }

    /// The node currently bound to `name` in `parent`, if known.
    pub(crate) fn child(&self, parent: u64, name: &OsStr) -> Option<u64> {
        self.by_name
            .find(self.hash(parent, name), names(&self.nodes, parent, name))
            .copied()
    }

    /// The parent and name of an attached node.
    pub(crate) fn parent_and_name(&self, ino: u64) -> Option<(u64, OsString)> {
        let node = self.nodes.get(&ino)?;
        (node.attached && ino != ROOT).then(|| (node.parent, node.name.to_os_string()))
    }

    /// Binds `name` in `parent` to the backing object, reusing the node when
    /// it is the same object, and counts a kernel lookup when asked.
    pub(crate) fn remember(
        &mut self,
        parent: u64,
        name: &OsStr,
        backing_ino: u64,
        kind: FileKind,
        count_lookup: bool,
    ) -> u64 {
        if let Some(ino) = self.child(parent, name) {
            if let Some(node) = self.nodes.get_mut(&ino)
                && node.backing_ino == backing_ino
                && node.kind == kind
            {
                if count_lookup {
                    node.lookups += 1;
                }
                return ino;
            }
            self.detach(parent, name);
        }
        let ino = self.next;
        self.next += 1;
        self.nodes.insert(
            ino,
            Box::new(Node {
                parent,
                name: name.into(),
                lookups: u64::from(count_lookup),
                open_handles: 0,
                open_writers: 0,
                passthrough_handles: 0,
                children: 0,
                attached: true,
                backing_ino,
                kind,
                cached_version: None,
            }),
        );
        self.bind(parent, name, ino);
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children += 1;
        }
        ino
    }

    /// Drops the binding of `name` in `parent` (after unlink, rmdir, or when
    /// the name turned out to name another object). Returns the old node.
    pub(crate) fn detach(&mut self, parent: u64, name: &OsStr) -> Option<u64> {
        let ino = self.unbind(parent, name)?;
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.attached = false;
        }
        self.release_child(parent);
        self.collect(ino);
        Some(ino)
    }

    /// Moves a binding after a successful rename. Whatever `new_name` named
    /// before is detached.
    pub(crate) fn rename(&mut self, parent: u64, name: &OsStr, new_parent: u64, new_name: &OsStr) {
        if parent == new_parent && name == new_name {
            return;
        }
        let Some(ino) = self.unbind(parent, name) else {
            // Unknown source: just forget whatever the target was.
            self.detach(new_parent, new_name);
            return;
        };
        self.detach(new_parent, new_name);
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.parent = new_parent;
            node.name = new_name.into();
        }
        self.bind(new_parent, new_name, ino);
        if let Some(p) = self.nodes.get_mut(&new_parent) {
            p.children += 1;
        }
        self.release_child(parent);
    }

    /// Swaps two bindings after a successful `RENAME_EXCHANGE`.
    pub(crate) fn exchange(
        &mut self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
    ) {
        let a = self.unbind(parent, name);
        let b = self.unbind(new_parent, new_name);
        let rebind = |ino: Option<u64>, p: u64, n: &OsStr, table: &mut Self| {
            if let Some(ino) = ino {
                if let Some(node) = table.nodes.get_mut(&ino) {
                    node.parent = p;
                    node.name = n.into();
                }
                table.bind(p, n, ino);
            }
        };
        rebind(a, new_parent, new_name, self);
        rebind(b, parent, name, self);
        // Child counts: each parent lost one known child and gained one.
        if a.is_some() != b.is_some() && parent != new_parent {
            let (from, to) = if a.is_some() {
                (parent, new_parent)
            } else {
                (new_parent, parent)
            };
            if let Some(p) = self.nodes.get_mut(&to) {
                p.children += 1;
            }
            self.release_child(from);
        }
    }

    /// The kernel dropped `n` lookups.
    pub(crate) fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.lookups = node.lookups.saturating_sub(n);
        }
        self.collect(ino);
    }

    /// A handle was opened on the node.
    pub(crate) fn opened(&mut self, ino: u64, writable: bool) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.open_handles += 1;
            node.open_writers += u32::from(writable);
            if writable {
                self.writers.insert(ino);
            }
        }
    }

    /// The nodes open for writing.
    pub(crate) fn writers(&self) -> impl Iterator<Item = u64> + '_ {
        self.writers.iter().copied()
    }

    /// The open handles of `ino`: (all, passthrough).
    pub(crate) fn open_counts(&self, ino: u64) -> (u32, u32) {
        self.nodes
            .get(&ino)
            .map_or((0, 0), |n| (n.open_handles, n.passthrough_handles))
    }

    /// Counts (or uncounts) a passthrough handle of `ino`.
    pub(crate) fn passthrough_handle(&mut self, ino: u64, add: bool) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            if add {
                node.passthrough_handles += 1;
            } else {
                node.passthrough_handles = node.passthrough_handles.saturating_sub(1);
            }
        }
    }

    /// A handle was released.
    pub(crate) fn closed(&mut self, ino: u64, writable: bool) {
        if let Some(node) = self.nodes.get_mut(&ino) {
            node.open_handles = node.open_handles.saturating_sub(1);
            if writable {
                node.open_writers = node.open_writers.saturating_sub(1);
                if node.open_writers == 0 {
                    self.writers.remove(&ino);
                }
            }
        }
        self.collect(ino);
    }

    fn release_child(&mut self, parent: u64) {
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children = p.children.saturating_sub(1);
        }
        self.collect(parent);
    }

    /// Removes a detached node nobody refers to any more.
    fn collect(&mut self, ino: u64) {
        let Some(node) = self.nodes.get(&ino) else {
            return;
        };
        // Attached zero-lookup nodes stay (they came from readdir and keep
        // d_ino stable); detached ones go once nothing refers to them.
        let unreferenced = node.open_handles == 0 && node.children == 0 && node.lookups == 0;
        if ino != ROOT && unreferenced && !node.attached {
            self.nodes.remove(&ino);
            self.shrink_when_sparse();
        }
    }

    /// Gives back the slots of a mass removal: once a table is a quarter
    /// full, it shrinks to twice what it holds. Each shrink follows as many
    /// removals as the table then holds, so their cost is spread thin.
    fn shrink_when_sparse(&mut self) {
        let len = self.nodes.len();
        if len >= MIN_SHRINK && self.nodes.capacity() / 4 > len {
            self.nodes.shrink_to(len * 2);
            let rehash = rehash(&self.nodes, &self.hasher);
            self.by_name.shrink_to(len * 2, rehash);
        }
    }

    /// Number of known inodes (for status and tests).
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_directory_renames() {
        let mut t = InodeTable::new(2);
        let d = t.remember(ROOT, OsStr::new("d"), 10, FileKind::Directory, true);
        let f = t.remember(d, OsStr::new("f.md"), 11, FileKind::File, true);
        assert_eq!(t.path(f).unwrap().as_path(), std::path::Path::new("d/f.md"));
        t.rename(ROOT, OsStr::new("d"), ROOT, OsStr::new("e"));
        assert_eq!(t.path(f).unwrap().as_path(), std::path::Path::new("e/f.md"));
        assert_eq!(t.child(ROOT, OsStr::new("e")), Some(d));
        assert_eq!(t.child(ROOT, OsStr::new("d")), None);
    }

    #[test]
    fn same_object_keeps_number_other_object_gets_new() {
        let mut t = InodeTable::new(2);
        let a = t.remember(ROOT, OsStr::new("a"), 10, FileKind::File, true);
        assert_eq!(
            t.remember(ROOT, OsStr::new("a"), 10, FileKind::File, true),
            a
        );
        let b = t.remember(ROOT, OsStr::new("a"), 12, FileKind::File, true);
        assert_ne!(a, b);
        assert!(t.path(a).is_none(), "old object is detached");
        t.forget(a, 2);
        assert!(
            t.get(a).is_none(),
            "detached and forgotten nodes are dropped"
        );
    }

    #[test]
    fn rename_over_detaches_target_but_open_handle_keeps_it() {
        let mut t = InodeTable::new(2);
        let a = t.remember(ROOT, OsStr::new("a"), 10, FileKind::File, true);
        let b = t.remember(ROOT, OsStr::new("b"), 11, FileKind::File, true);
        t.opened(b, false);
        t.rename(ROOT, OsStr::new("a"), ROOT, OsStr::new("b"));
        t.forget(b, 1);
        assert!(t.get(b).is_some(), "still open");
        t.closed(b, false);
        assert!(t.get(b).is_none());
        assert_eq!(t.child(ROOT, OsStr::new("b")), Some(a));
    }

    #[test]
    fn tables_shrink_after_a_mass_removal_and_still_find_every_name() {
        let mut t = InodeTable::new(2);
        let d = t.remember(ROOT, OsStr::new("d"), 10, FileKind::Directory, true);
        let name = |i: u64| OsString::from(format!("n{i}"));
        let inos: Vec<u64> = (0..50_000)
            .map(|i| t.remember(d, &name(i), 100 + i, FileKind::File, true))
            .collect();
        let full = t.nodes.capacity();
        for (i, ino) in inos.iter().enumerate() {
            if i % 10 != 0 {
                t.detach(d, &name(i as u64));
                t.forget(*ino, 1);
            }
        }
        assert_eq!(t.len(), 2 + 5_000);
        // The rule itself: no table is left more than three quarters
        // empty. The sizes it lands on follow hashbrown's buckets, and
        // how full a table got before (its tombstones depend on the seed).
        let most = 4 * t.len();
        assert!(most < full / 2, "{most} of {full}");
        for (table, capacity) in [
            ("nodes", t.nodes.capacity()),
            ("by_name", t.by_name.capacity()),
        ] {
            assert!(
                capacity <= most,
                "{table}: {capacity} slots for {} inodes",
                t.len()
            );
        }
        for (i, ino) in inos.iter().enumerate() {
            let found = t.child(d, &name(i as u64));
            assert_eq!(found, (i % 10 == 0).then_some(*ino), "n{i}");
        }
        assert_eq!(
            t.path(inos[40_000]).unwrap().as_path(),
            std::path::Path::new("d/n40000")
        );
    }

    /// One step of [`lookups_by_name_match_a_plain_map`]: names are
    /// `0..4`, in the root or in the folder `d`.
    #[derive(Debug, Clone)]
    enum Step {
        Remember(bool, u8, u64),
        Rename(bool, u8, bool, u8),
        Exchange(bool, u8, bool, u8),
        Detach(bool, u8),
        Forget(bool, u8),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let at = || (any::<bool>(), 0u8..4);
        prop_oneof![
            (at(), 20u64..24).prop_map(|((d, n), b)| Step::Remember(d, n, b)),
            (at(), at()).prop_map(|((d, n), (e, m))| Step::Rename(d, n, e, m)),
            (at(), at()).prop_map(|((d, n), (e, m))| Step::Exchange(d, n, e, m)),
            at().prop_map(|(d, n)| Step::Detach(d, n)),
            at().prop_map(|(d, n)| Step::Forget(d, n)),
        ]
    }

    proptest::proptest! {
        /// Whatever the sequence of changes, finding a node by its parent
        /// and name agrees with a plain map of the bindings, and each bound
        /// node's path ends in its name.
        #[test]
        fn lookups_by_name_match_a_plain_map(steps in proptest::collection::vec(step(), 1..80)) {
            let mut t = InodeTable::new(2);
            let d = t.remember(ROOT, OsStr::new("d"), 9, FileKind::Directory, true);
            let mut model: HashMap<(u64, OsString), u64> = HashMap::new();
            let key = |in_d: bool, n: u8| (if in_d { d } else { ROOT }, OsString::from(format!("n{n}")));
            for step in steps {
                match step {
                    Step::Remember(in_d, n, backing) => {
                        let (p, name) = key(in_d, n);
                        let ino = t.remember(p, &name, backing, FileKind::File, true);
                        model.insert((p, name), ino);
                    }
                    Step::Rename(a, n, b, m) => {
                        let (from, to) = (key(a, n), key(b, m));
                        t.rename(from.0, &from.1, to.0, &to.1);
                        if from != to {
                            model.remove(&to);
                            if let Some(ino) = model.remove(&from) {
                                model.insert(to, ino);
                            }
                        }
                    }
                    Step::Exchange(a, n, b, m) => {
                        let (x, y) = (key(a, n), key(b, m));
                        t.exchange(x.0, &x.1, y.0, &y.1);
                        let (ix, iy) = (model.remove(&x), model.remove(&y));
                        if let Some(ino) = ix {
                            model.insert(y.clone(), ino);
                        }
                        if let Some(ino) = iy {
                            model.insert(x, ino);
                        }
                    }
                    Step::Detach(in_d, n) => {
                        let (p, name) = key(in_d, n);
                        t.detach(p, &name);
                        model.remove(&(p, name));
                    }
                    Step::Forget(in_d, n) => {
                        if let Some(&ino) = model.get(&key(in_d, n)) {
                            t.forget(ino, 1);
                        }
                    }
                }
                for in_d in [false, true] {
                    for n in 0..4 {
                        let (p, name) = key(in_d, n);
                        let found = t.child(p, &name);
                        proptest::prop_assert_eq!(found, model.get(&(p, name.clone())).copied());
                        if let Some(ino) = found {
                            let path = t.path(ino).expect("a bound node has a path");
                            proptest::prop_assert_eq!(path.as_path().file_name(), Some(name.as_os_str()));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn exchange_swaps_paths() {
        let mut t = InodeTable::new(2);
        let d = t.remember(ROOT, OsStr::new("d"), 9, FileKind::Directory, true);
        let a = t.remember(ROOT, OsStr::new("a"), 10, FileKind::File, true);
        let b = t.remember(d, OsStr::new("b"), 11, FileKind::File, true);
        t.exchange(ROOT, OsStr::new("a"), d, OsStr::new("b"));
        assert_eq!(t.path(a).unwrap().as_path(), std::path::Path::new("d/b"));
        assert_eq!(t.path(b).unwrap().as_path(), std::path::Path::new("a"));
    }
}
