//! `StoreFs`: the filesystem operations of the real tree, without FUSE.
//!
//! Each method takes inode and handle numbers, does the work through the
//! sandboxed [`Store`], keeps the inode table in step, and returns a
//! result the FUSE adapter only has to forward. Tests drive these methods
//! directly, without a kernel mount.
//!
//! Locking: the inode table is locked only to read a path or record an
//! outcome, never across a system call, so a slow disk never blocks
//! unrelated requests. The store is reached by path, so a request that
//! turns an inode into a path holds `names` for reading until it is done
//! with that path, and a folder's rename holds it for writing: no request
//! acts on a path that a concurrent folder rename made stale (it would
//! miss the file, or in an exchange find another one).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType};
use parking_lot::{Mutex, RwLock, RwLockReadGuard};

use super::error::{FsError, FsResult};
use super::handles::{DirHandle, FileHandle, Handle, HandleTable, ViewDirHandle};
use super::inodes::{InodeTable, ROOT};
use super::viewnodes::{ViewTable, is_virtual};
use crate::ops::WriteEvent;
use crate::store::counters::CounterStore;
use crate::store::history::{History, Keep, Why};
use crate::store::{DirEntry, FileKind, Stat, Store, StorePath, TimeSpec, is_temp_name, mode_bits};
use crate::views::{ViewEntry, Views};

/// How long a writer waits for a background replace of its file.
const REPLACE_WAIT: Duration = Duration::from_secs(1);

/// How long the daemon remembers which inode replaced which, for writers
/// that reach it holding an inode a background rewrite swapped out.
const REPLACED_KEPT: Duration = Duration::from_secs(60);

/// Held while a background task replaces a file; see [`StoreFs::begin_replace`].
/// Writers of the file wait while it is held; drop it once the rewrite is
/// over, whether it swapped its content in or gave up.
#[derive(Debug)]
pub struct ReplaceGuard<'a> {
    fs: &'a StoreFs,
    path: StorePath,
}

impl Drop for ReplaceGuard<'_> {
    fn drop(&mut self) {
        self.fs.replacing.lock().remove(&self.path);
        self.fs.replace_done.notify_all();
    }
}

/// Files smaller than this are read through the daemon even when
/// passthrough is available: for notes the cost is in open and close, and
/// cached opens keep readers and writers of small files free to mix.
pub(crate) const PASSTHROUGH_MIN_SIZE: u64 = 1024 * 1024;

/// Tunables of a mounted store.
#[derive(Clone, Debug)]
pub struct FsOptions {
    /// Largest size a file may reach through the mount (bytes).
    pub max_file_size: u64,
    /// How long the kernel may cache attributes and entries.
    pub ttl: Duration,
    /// Let the kernel read files opened read-only straight from the store
    /// (FUSE passthrough) when it and our privileges allow.
    pub passthrough: bool,
    /// The kernel leaves permission checks to the daemon (no
    /// `default_permissions`, see
    /// [`kernel_checks_permissions`](super::kernel_checks_permissions)):
    /// the store refuses what the user may not do, and the daemon checks
    /// first where it would act before the store does.
    pub store_checks_permissions: bool,
    /// Only the mount's owner may enter the views (`--allow-other`): they
    /// show memories' text, titles and paths whatever the files' modes.
    pub views_for_owner_only: bool,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            max_file_size: 64 * 1024 * 1024,
            ttl: Duration::from_secs(10),
            passthrough: true,
            store_checks_permissions: false,
            views_for_owner_only: false,
        }
    }
}

/// Who asked: new files are given to this user when the daemon is root.
#[derive(Clone, Copy, Debug)]
pub struct Requester {
    /// User id of the calling process.
    pub uid: u32,
    /// Group id of the calling process.
    pub gid: u32,
}

/// A name bound to an inode, as lookup and create return it.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Inode number.
    pub ino: u64,
    /// Its attributes.
    pub attr: FileAttr,
}

/// The result of opening a file.
#[derive(Clone, Copy, Debug)]
pub struct Opened {
    /// Handle number for later calls.
    pub fh: u64,
    /// True when the kernel may keep its page cache for this file.
    pub keep_cache: bool,
    /// True when reads and writes bypass the kernel's page cache: generated
    /// files, whose size is not known in advance, and write-only handles.
    pub direct_io: bool,
    /// True when the adapter should register the file for passthrough.
    pub passthrough: bool,
}

/// Requested attribute changes (`setattr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct AttrChanges {
    /// New permission bits.
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size (truncate or extend).
    pub size: Option<u64>,
    /// New access time (`nsec == UTIME_NOW` for now).
    pub atime: Option<TimeSpec>,
    /// New modification time.
    pub mtime: Option<TimeSpec>,
    /// The handle, for ftruncate.
    pub fh: Option<u64>,
}

/// One directory entry handed to the adapter during readdir.
#[derive(Clone, Copy, Debug)]
pub struct DirItem<'a> {
    /// Inode number.
    pub ino: u64,
    /// Offset of the *next* entry.
    pub next_offset: u64,
    /// Entry kind.
    pub kind: FileType,
    /// Entry name.
    pub name: &'a OsStr,
    /// Attributes, for readdirplus.
    pub attr: Option<FileAttr>,
}

/// The filesystem over one store.
#[derive(Debug)]
pub struct StoreFs {
    store: Arc<Store>,
    options: FsOptions,
    pub(crate) inodes: Mutex<InodeTable>,
    handles: HandleTable,
    pub(crate) views: Option<ViewTable>,
    is_root: bool,
    events: std::sync::OnceLock<crossbeam_channel::Sender<WriteEvent>>,
    counters: Option<Arc<CounterStore>>,
    /// Where deletes, overwrites and truncations keep what they take away.
    history: Option<Arc<History>>,
    /// Recent listings of folders, to tell a walk's opens from recall.
    walkers: super::walkers::Walkers,
    redirects: Mutex<HashMap<StorePath, (StorePath, Instant)>>,
    /// Paths a background task is replacing right now, with the inode it
    /// is replacing. Lock order: this, then `names`, then `inodes`.
    replacing: Mutex<HashMap<StorePath, Option<u64>>>,
    /// Read while a request acts on the store by a path it got from the
    /// inode table; written while a folder moves (see the module's
    /// comment). A request takes it once, and takes `replacing` only
    /// before it, so a folder's rename never waits on a request that waits
    /// on it.
    names: RwLock<()>,
    replace_done: parking_lot::Condvar,
    /// Inodes background rewrites swapped out, and the inode that took
    /// their place.
    replaced: Mutex<HashMap<u64, (u64, Instant)>>,
    /// Passthrough is in use: the kernel granted it and no registration failed.
    passthrough: std::sync::atomic::AtomicBool,
    backing_ids: Mutex<HashMap<u64, std::sync::Weak<fuser::BackingId>>>,
    /// Events waiting for [`StoreFs::deliver_events`]: a request handler
    /// never wakes a background thread itself.
    pending_events: Mutex<Vec<WriteEvent>>,
    /// What changed through the mount that the index may not have heard of
    /// yet (the store watcher tells it, a moment later): a view answers
    /// only once the index has.
    unindexed: Mutex<Unindexed>,
    /// This process's id, asked once: a read open compares its caller's
    /// with it, and `getpid` is a system call.
    pid: u32,
}

/// Changes made through the mount, for the index (see
/// [`StoreFs::catch_up_views`]).
#[derive(Debug, Default)]
struct Unindexed {
    /// Paths created, written, truncated, renamed or removed.
    paths: Vec<StorePath>,
    /// Each file open for writing, and its size and mtime when the index
    /// was last told of it.
    writing: HashMap<u64, (TimeSpec, u64)>,
}

/// The longest a view waits for the index to take in a change made
/// through the mount; past it, the view answers with what the index has.
const VIEW_CATCH_UP: Duration = Duration::from_secs(2);

/// The kernel's `__FMODE_EXEC`, in the flags of an open made by execve.
#[cfg(target_os = "linux")]
const FMODE_EXEC: i32 = 0x20;

/// Most symlinks followed while checking where one leads (the kernel's
/// own limit).
const MAX_LINKS: u32 = 40;

/// Why a symlink's walk ended early.
#[derive(Debug, PartialEq, Eq)]
enum Walk {
    /// A step climbs above the store's root.
    LeavesStore,
    /// The kernel would stop here (too many links, an unreadable one).
    Stops,
}

/// Whether `pid` (a kernel request's thread id) is a thread of this
/// process.
#[cfg(target_os = "linux")]
fn is_own_thread(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/self/task/{pid}")).exists()
}

/// Whether `pid` (a kernel request's process id: macFUSE names processes,
/// not threads) is this process.
#[cfg(not(target_os = "linux"))]
fn is_own_thread(pid: u32) -> bool {
    pid == std::process::id()
}

impl StoreFs {
    /// Creates the filesystem for an opened store.
    pub fn new(store: Arc<Store>, options: FsOptions) -> io::Result<StoreFs> {
        let root = store.stat(&StorePath::root())?;
        Ok(StoreFs {
            store,
            options,
            inodes: Mutex::new(InodeTable::new(root.ino)),
            handles: HandleTable::default(),
            views: None,
            events: std::sync::OnceLock::new(),
            counters: None,
            history: None,
            walkers: Default::default(),
            pid: std::process::id(),
            redirects: Mutex::new(HashMap::new()),
            passthrough: std::sync::atomic::AtomicBool::new(false),
            replacing: Mutex::new(HashMap::new()),
            names: RwLock::new(()),
            replace_done: parking_lot::Condvar::new(),
            replaced: Mutex::new(HashMap::new()),
            pending_events: Mutex::new(Vec::new()),
            unindexed: Mutex::default(),
            backing_ids: Mutex::new(HashMap::new()),
            // SAFETY: geteuid has no preconditions.
            is_root: unsafe { libc::geteuid() } == 0,
        })
    }

    /// Adds the virtual views beside the real tree. `hidden` keeps them out
    /// of the root listing (they still resolve by name).
    pub fn with_views(mut self, views: Views, hidden: bool) -> io::Result<StoreFs> {
        let root = self.store.stat(&StorePath::root())?;
        self.views = Some(ViewTable::new(
            views,
            hidden,
            (root.uid, root.gid),
            self.options.views_for_owner_only,
        ));
        Ok(self)
    }

    /// Called at FUSE init with whether the kernel granted passthrough.
    pub fn set_passthrough_granted(&self, granted: bool) {
        let on = granted && self.options.passthrough;
        self.passthrough
            .store(on, std::sync::atomic::Ordering::Relaxed);
        tracing::info!("passthrough reads: {}", if on { "on" } else { "off" });
    }

    fn passthrough_on(&self) -> bool {
        self.passthrough.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The passthrough registration for an open handle's inode: reused
    /// while any handle of the inode holds it, else made with `register`.
    pub fn passthrough_backing(
        &self,
        fh: u64,
        register: impl FnOnce(&File) -> io::Result<fuser::BackingId>,
    ) -> FsResult<Arc<fuser::BackingId>> {
        let handle = self.file_handle(fh)?;
        let Handle::File(file) = handle.as_ref() else {
            return Err(FsError::BadHandle);
        };
        let mut ids = self.backing_ids.lock();
        let id = match ids.get(&file.ino).and_then(std::sync::Weak::upgrade) {
            Some(id) => id,
            None => {
                let id = Arc::new(register(&file.file)?);
                ids.retain(|_, weak| weak.strong_count() > 0);
                ids.insert(file.ino, Arc::downgrade(&id));
                id
            }
        };
        *file.backing.lock() = Some(Arc::clone(&id));
        Ok(id)
    }

    /// Registration failed (no privilege, old kernel): stop trying, and
    /// serve reads through the daemon from now on. `fh` is then a cached open.
    pub fn passthrough_failed(&self, fh: u64, err: &FsError) {
        if let Some(Handle::File(file)) = self.handles.get(fh).as_deref() {
            self.inodes.lock().passthrough_handle(file.ino, false);
        }
        if self
            .passthrough
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!("passthrough reads unavailable ({err}); reading through the daemon");
        }
    }

    /// Keeps volatile counters (`access_count`, `version`, ...) in
    /// `counters` and shows them as `user.mnemofs.*` extended attributes.
    pub fn with_counters(mut self, counters: Arc<CounterStore>) -> StoreFs {
        self.counters = Some(counters);
        self
    }

    /// Keeps what deletes, overwrites and truncations through the mount
    /// take away in `history`.
    pub fn with_history(mut self, history: Arc<History>) -> StoreFs {
        self.history = Some(history);
        self
    }

    /// The history of earlier versions, when kept.
    pub fn history(&self) -> Option<&Arc<History>> {
        self.history.as_ref()
    }

    /// Keeps the file at `path` before a change takes its content away.
    /// A failure is logged; the change goes ahead.
    fn keep_previous(&self, path: &StorePath, why: Why, how: Keep) {
        let Some(history) = &self.history else {
            return;
        };
        if let Err(e) = history.keep(&self.store, path, why, how) {
            tracing::warn!("cannot keep the previous version of {path}: {e}");
        }
    }

    /// How to keep the file `name` in `parent` before its name goes: a
    /// copy while a handle through the mount can still write its inode.
    fn keep_how(&self, parent: u64, name: &OsStr) -> Keep {
        let table = self.inodes.lock();
        match table.child(parent, name).and_then(|ino| table.get(ino)) {
            Some(node) if node.open_writers > 0 => Keep::Copy,
            _ => Keep::LinkOrCopy,
        }
    }

    /// Where the store checks permissions, whether the user may remove or
    /// replace names in the folder holding `path`: asked before a version
    /// is kept, so a removal the store would refuse keeps nothing (a kept
    /// hard link would share the live file's inode).
    fn check_may_change_in(&self, path: &StorePath) -> FsResult<()> {
        let Some(parent) = path
            .parent()
            .filter(|_| self.options.store_checks_permissions && self.history.is_some())
        else {
            return Ok(());
        };
        #[cfg(target_os = "linux")]
        self.store.access(&parent, libc::W_OK | libc::X_OK)?;
        // Elsewhere the kernel always checks, and this is never asked.
        #[cfg(not(target_os = "linux"))]
        drop(parent);
        Ok(())
    }

    /// The counters, when kept.
    pub fn counters(&self) -> Option<&Arc<CounterStore>> {
        self.counters.as_ref()
    }

    /// The views, when mounted with them.
    pub fn views(&self) -> Option<&Views> {
        self.views.as_ref().map(|v| &v.views)
    }

    fn view_table(&self) -> FsResult<&ViewTable> {
        self.views.as_ref().ok_or(FsError::UnknownInode)
    }

    /// Refuses changes inside the views, and to the names they reserve at
    /// the root (the view folders and the guide), with `EROFS`.
    fn check_mutable(&self, parent: u64, name: &OsStr, _creating: bool) -> FsResult<()> {
        if is_virtual(parent) {
            return Err(FsError::ReadOnly);
        }
        if parent == ROOT
            && let Some(views) = &self.views
            && views.root_child(name).is_some()
        {
            return Err(FsError::ReadOnly);
        }
        Ok(())
    }

    /// Sends [`WriteEvent`]s to background tasks (set once, at start).
    pub fn set_event_sink(&self, sink: crossbeam_channel::Sender<WriteEvent>) {
        let _ = self.events.set(sink);
    }

    /// Hands the events gathered since the last call to the sink. The store
    /// watcher's thread calls this on every round; closing a written file
    /// wakes it anyway.
    pub fn deliver_events(&self) {
        let Some(sink) = self.events.get() else {
            return;
        };
        let events = std::mem::take(&mut *self.pending_events.lock());
        for event in events {
            let _ = sink.send(event);
        }
    }

    /// Tells the index of a change through the mount, before a view may
    /// look for it (the store watcher tells it too, a moment later).
    fn unindexed(&self, path: StorePath) {
        if self.views.is_some() {
            self.unindexed.lock().paths.push(path);
        }
    }

    /// Read your writes: before a view (or a request to the daemon)
    /// answers, the index takes in what was changed through the mount, the
    /// files still open for writing included. When nothing changed here,
    /// it only waits for what the index was told to be committed (at once
    /// when it is).
    pub(crate) fn catch_up_views(&self) {
        let Some(views) = self.views() else { return };
        let (mut paths, writers) = {
            let table = self.inodes.lock();
            // Under the inode lock: a release moves its file from the
            // writers to the paths under it too, so it is in one of them.
            let paths = std::mem::take(&mut self.unindexed.lock().paths);
            let writers: Vec<(u64, StorePath)> = table
                .writers()
                .filter_map(|ino| Some((ino, table.path(ino)?)))
                .collect();
            (paths, writers)
        };
        if !writers.is_empty() || !self.unindexed.lock().writing.is_empty() {
            let versions: Vec<_> = writers
                .into_iter()
                .filter_map(|(ino, path)| {
                    let st = self.store.stat(&path).ok()?;
                    Some((ino, path, (st.mtime, st.size)))
                })
                .collect();
            let mut unindexed = self.unindexed.lock();
            unindexed
                .writing
                .retain(|ino, _| versions.iter().any(|(i, _, _)| i == ino));
            for (ino, path, version) in versions {
                if unindexed.writing.insert(ino, version) != Some(version) {
                    paths.push(path);
                }
            }
        }
        let index = views.index();
        // With nothing new here, another caller may still have taken this
        // caller's writes and not yet seen them committed: what was
        // notified so far is waited for either way (at once when it is).
        index.notify_paths(&paths);
        if !index.wait_committed(VIEW_CATCH_UP) {
            tracing::debug!("a view answers before the index took in the latest writes");
        }
    }

    /// True while any handle opened through the mount can write to `path`.
    pub fn is_open_for_write(&self, path: &StorePath) -> bool {
        let table = self.inodes.lock();
        let mut ino = ROOT;
        for name in path.as_path().iter() {
            match table.child(ino, name) {
                Some(child) => ino = child,
                None => return false,
            }
        }
        table.get(ino).is_some_and(|n| n.open_writers > 0)
    }

    /// Keeps `old` resolving (unlisted, as a symlink to `new`) until
    /// `until`, after a background task moved a memory.
    pub fn add_redirect(&self, old: StorePath, new: StorePath, until: Instant) {
        let mut redirects = self.redirects.lock();
        let now = Instant::now();
        redirects.retain(|_, (_, t)| *t > now);
        redirects.insert(old, (new, until));
    }

    fn redirect(&self, parent: u64, name: &OsStr) -> Option<Entry> {
        let views = self.views.as_ref()?;
        let node = self.redirect_node(parent, name)?;
        let ino = views.intern(parent, name.to_os_string(), node.clone(), true);
        Some(Entry {
            ino,
            attr: views.attr(ino, &node),
        })
    }

    /// The symlink a moved path resolves as during its grace period.
    fn redirect_node(&self, parent: u64, name: &OsStr) -> Option<super::viewnodes::ViewNode> {
        let old = self.child_path(parent, name).ok()?;
        let (new, until) = self.redirects.lock().get(&old).cloned()?;
        if until <= Instant::now() {
            return None;
        }
        let mut target = std::path::PathBuf::new();
        for _ in 0..old.depth().saturating_sub(1) {
            target.push("..");
        }
        target.push(new.as_path());
        Some(super::viewnodes::ViewNode::Link(target))
    }

    /// Names in the folder `path` that were moved away and still resolve
    /// (their grace period runs), less those taken again by real entries.
    fn redirected_names(&self, path: &StorePath, real: &[DirEntry]) -> Vec<OsString> {
        if self.views.is_none() {
            return Vec::new();
        }
        let now = Instant::now();
        let mut names: Vec<OsString> = self
            .redirects
            .lock()
            .iter()
            .filter(|(old, (_, until))| *until > now && old.parent().as_ref() == Some(path))
            .filter_map(|(old, _)| old.file_name().map(OsStr::to_os_string))
            .filter(|name| !real.iter().any(|e| e.name == *name))
            .collect();
        names.sort();
        names
    }

    /// The store this filesystem serves.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The options in force.
    pub fn options(&self) -> &FsOptions {
        &self.options
    }

    fn path_of(&self, ino: u64) -> FsResult<StorePath> {
        let table = self.inodes.lock();
        match table.path(ino) {
            Some(p) => Ok(p),
            None if table.get(ino).is_some() => Err(FsError::Unlinked),
            None => Err(FsError::UnknownInode),
        }
    }

    fn child_path(&self, parent: u64, name: &OsStr) -> FsResult<StorePath> {
        self.path_of(parent)?.join(name).ok_or(FsError::InvalidName)
    }

    fn attr(&self, ino: u64, st: &Stat) -> FileAttr {
        to_attr(ino, st)
    }

    fn remember(&self, parent: u64, name: &OsStr, st: &Stat, count_lookup: bool) -> u64 {
        self.inodes
            .lock()
            .remember(parent, name, st.ino, st.kind, count_lookup)
    }

    fn give_to(&self, path: &StorePath, who: Requester) -> FsResult<()> {
        if self.is_root {
            self.store.set_owner(path, who.uid, who.gid)?;
        }
        Ok(())
    }

    /// [`StoreFs::lookup`] for the kernel: a temp file of a write in
    /// flight exists only for the daemon's own threads, which write it.
    pub fn lookup_for(&self, parent: u64, name: &OsStr, pid: u32) -> FsResult<Entry> {
        if is_temp_name(name) && !is_own_thread(pid) {
            return Err(FsError::from_errno(libc::ENOENT));
        }
        self.lookup(parent, name)
    }

    /// Looks a name up and counts a kernel lookup on the result.
    pub fn lookup(&self, parent: u64, name: &OsStr) -> FsResult<Entry> {
        if let Some(views) = &self.views {
            if is_virtual(parent) {
                self.catch_up_views();
                let (ino, attr) = views.lookup(parent, name)?;
                return Ok(Entry { ino, attr });
            }
            if parent == ROOT
                && let Some(ino) = views.root_child(name)
            {
                return Ok(Entry {
                    ino,
                    attr: views.getattr(ino)?,
                });
            }
        }
        let _names = self.names.read();
        let path = self.child_path(parent, name)?;
        let st = match self.store.stat(&path) {
            Ok(st) => st,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                return self.redirect(parent, name).ok_or_else(|| e.into());
            }
            Err(e) => return Err(e.into()),
        };
        let ino = self.remember(parent, name, &st, true);
        Ok(Entry {
            ino,
            attr: self.attr(ino, &st),
        })
    }

    /// The kernel dropped `n` lookups of `ino`.
    pub fn forget(&self, ino: u64, n: u64) {
        if is_virtual(ino) {
            if let Some(views) = &self.views {
                views.forget(ino, n);
            }
            return;
        }
        self.inodes.lock().forget(ino, n);
    }

    fn file_handle(&self, fh: u64) -> FsResult<Arc<Handle>> {
        let handle = self.handles.get(fh).ok_or(FsError::BadHandle)?;
        match handle.as_ref() {
            Handle::File(_) => Ok(handle),
            Handle::Dir(_) | Handle::ViewDir(_) => Err(FsError::IsDirectory),
            Handle::ViewFile(_) => Err(FsError::BadHandle),
        }
    }

    fn with_file<T>(&self, fh: u64, f: impl FnOnce(&FileHandle) -> FsResult<T>) -> FsResult<T> {
        let handle = self.file_handle(fh)?;
        match handle.as_ref() {
            Handle::File(file) => f(file),
            _ => Err(FsError::BadHandle),
        }
    }

    /// An open file handle of `ino` (`fh` if it is one), for calls on an
    /// inode whose name is gone.
    fn unlinked_open(&self, ino: u64, fh: Option<u64>) -> Option<Arc<Handle>> {
        fh.and_then(|fh| self.handles.get(fh))
            .filter(|h| matches!(h.as_ref(), Handle::File(f) if f.ino == ino))
            .or_else(|| self.handles.any_file_for(ino))
    }

    /// Runs `on_path` on the inode's path, or, if it was unlinked while
    /// open, `on_open` on an open descriptor of it.
    fn by_path_or_open<T>(
        &self,
        ino: u64,
        on_path: impl FnOnce(&StorePath) -> std::io::Result<T>,
        on_open: impl FnOnce(&std::fs::File) -> std::io::Result<T>,
    ) -> FsResult<T> {
        let _names = self.names.read();
        match self.path_of(ino) {
            Ok(path) => Ok(on_path(&path)?),
            Err(FsError::Unlinked) => match self.unlinked_open(ino, None).as_deref() {
                Some(Handle::File(file)) => Ok(on_open(&file.file)?),
                _ => Err(FsError::Unlinked),
            },
            Err(e) => Err(e),
        }
    }

    fn stat_ino(&self, ino: u64, fh: Option<u64>) -> FsResult<Stat> {
        if let Some(handle) = fh.and_then(|fh| self.handles.get(fh))
            && let Handle::File(file) = handle.as_ref()
        {
            return Ok(crate::store::fstat(&file.file)?);
        }
        let _names = self.names.read();
        match self.path_of(ino) {
            Ok(path) => self.stat_same_kind(ino, &path),
            Err(FsError::Unlinked) => match self.handles.any_file_for(ino).as_deref() {
                Some(Handle::File(file)) => Ok(crate::store::fstat(&file.file)?),
                _ => Err(FsError::Unlinked),
            },
            Err(e) => Err(e),
        }
    }

    /// The object at the inode's path, if it is still of the inode's
    /// kind. A folder swapped for a symlink behind the mount is gone as
    /// far as the old inode goes: the kernel fails a change of type with
    /// EIO and marks the inode bad, where ENOENT makes it look again.
    fn stat_same_kind(&self, ino: u64, path: &StorePath) -> FsResult<Stat> {
        let st = self.store.stat(path)?;
        let kind = self.inodes.lock().get(ino).map(|node| node.kind);
        match kind {
            Some(kind) if kind != st.kind => Err(FsError::from_errno(libc::ENOENT)),
            _ => Ok(st),
        }
    }

    /// Attributes of an inode.
    pub fn getattr(&self, ino: u64, fh: Option<u64>) -> FsResult<FileAttr> {
        if is_virtual(ino) {
            return self.view_table()?.getattr(ino);
        }
        let st = self.stat_ino(ino, fh)?;
        Ok(self.attr(ino, &st))
    }

    /// chmod, chown, truncate and utimens, in that order.
    pub fn setattr(&self, ino: u64, changes: AttrChanges) -> FsResult<FileAttr> {
        if is_virtual(ino) {
            return Err(FsError::ReadOnly);
        }
        if changes
            .size
            .is_some_and(|size| size > self.options.max_file_size)
        {
            return Err(FsError::TooBig(self.options.max_file_size));
        }
        let mut names = Some(self.names.read());
        let mut path = self.path_of(ino);
        if matches!(path, Err(FsError::Unlinked))
            && let Some(handle) = self.unlinked_open(ino, changes.fh)
            && let Handle::File(file) = handle.as_ref()
        {
            // Unlinked while open: as on ext4, the descriptor still works.
            use crate::store::open_file;
            if let Some(mode) = changes.mode {
                open_file::set_mode(&file.file, mode & 0o7777)?;
            }
            if changes.uid.is_some() || changes.gid.is_some() {
                open_file::set_owner(
                    &file.file,
                    changes.uid.unwrap_or(u32::MAX),
                    changes.gid.unwrap_or(u32::MAX),
                )?;
            }
            if let Some(size) = changes.size {
                file.file.set_len(size)?;
            }
            if changes.atime.is_some() || changes.mtime.is_some() {
                open_file::set_times(&file.file, changes.atime, changes.mtime)?;
            }
            drop(names);
            return self.getattr(ino, changes.fh);
        }
        if let Some(mode) = changes.mode {
            self.store
                .set_mode(path.as_ref().map_err(clone_err)?, mode & 0o7777)?;
        }
        if changes.uid.is_some() || changes.gid.is_some() {
            self.store.set_owner(
                path.as_ref().map_err(clone_err)?,
                changes.uid.unwrap_or(u32::MAX),
                changes.gid.unwrap_or(u32::MAX),
            )?;
        }
        if let Some(size) = changes.size {
            if size == 0
                && let Ok(path) = &path
            {
                // A copy: the inode lives on, emptied.
                self.keep_previous(path, Why::Truncated, Keep::Copy);
            }
            let via_handle = changes.fh.and_then(|fh| self.handles.get(fh));
            match via_handle.as_deref() {
                Some(Handle::File(file)) if file.writable => file.file.set_len(size)?,
                _ => {
                    // truncate(2) by name writes like an open for writing,
                    // and may be sent to the file a rewrite put in place.
                    // It waits with `names` let go (see `names`), and
                    // comes back holding it.
                    drop(names.take());
                    let (writing, now, held) = self.announce_writer(ino)?;
                    names = Some(held);
                    let truncated = self.store.truncate(&now, size);
                    self.unindexed(now.clone());
                    self.inodes.lock().closed(writing, true);
                    truncated?;
                    path = Ok(now);
                }
            }
        }
        if changes.atime.is_some() || changes.mtime.is_some() {
            self.store.set_times(
                path.as_ref().map_err(clone_err)?,
                changes.atime,
                changes.mtime,
            )?;
        }
        match (&path, changes.fh) {
            (Ok(path), None) => Ok(self.attr(ino, &self.stat_same_kind(ino, path)?)),
            _ => {
                drop(names);
                self.getattr(ino, changes.fh)
            }
        }
    }

    /// Reads a symlink's target.
    pub fn readlink(&self, ino: u64) -> FsResult<Vec<u8>> {
        if is_virtual(ino) {
            return self.view_table()?.readlink(ino);
        }
        let _names = self.names.read();
        let path = self.path_of(ino)?;
        let text = self.store.readlink(&path)?;
        // Checked where the link is now, as the kernel will follow it: a
        // link made safe may have been moved, or lead through other links
        // (`esc/l/..` where `l` is `..`), out of the store.
        let folder: Vec<OsString> = path
            .parent()
            .map(|p| p.as_path().iter().map(OsStr::to_os_string).collect())
            .unwrap_or_default();
        let mut budget = MAX_LINKS;
        let walked = self.resolve_inside(folder, Path::new(OsStr::from_bytes(&text)), &mut budget);
        if walked == Err(Walk::LeavesStore) {
            tracing::warn!("{path}: refusing a symlink that leads out of the store");
            return Err(FsError::from_errno(libc::EACCES));
        }
        Ok(text)
    }

    /// Where `target` (a symlink's text, read in `folder`) leads, the
    /// kernel's way: each component in turn, `..` from where the walk is,
    /// and symlinks on the way followed. A missing component is passed
    /// over (the kernel's walk would stop there, so this is the cautious
    /// reading).
    fn resolve_inside(
        &self,
        folder: Vec<OsString>,
        target: &Path,
        budget: &mut u32,
    ) -> Result<Vec<OsString>, Walk> {
        let mut at = folder;
        for component in target.components() {
            match component {
                Component::RootDir | Component::Prefix(_) => return Err(Walk::LeavesStore),
                Component::CurDir => {}
                Component::ParentDir => {
                    at.pop().ok_or(Walk::LeavesStore)?;
                }
                Component::Normal(name) => {
                    at.push(name.to_os_string());
                    let path = StorePath::from_components(at.iter().cloned()).ok_or(Walk::Stops)?;
                    if self
                        .store
                        .stat(&path)
                        .is_ok_and(|st| st.kind == FileKind::Symlink)
                    {
                        // The kernel gives up with ELOOP here too.
                        *budget = budget.checked_sub(1).ok_or(Walk::Stops)?;
                        let text = self.store.readlink(&path).map_err(|_| Walk::Stops)?;
                        at.pop();
                        at =
                            self.resolve_inside(at, Path::new(OsStr::from_bytes(&text)), budget)?;
                    }
                }
            }
        }
        Ok(at)
    }

    /// Creates a directory.
    pub fn mkdir(&self, parent: u64, name: &OsStr, mode: u32, who: Requester) -> FsResult<Entry> {
        self.check_mutable(parent, name, true)?;
        {
            let _names = self.names.read();
            let path = self.child_path(parent, name)?;
            self.store.mkdir(&path, mode & 0o7777)?;
            self.give_to(&path, who)?;
        }
        self.lookup(parent, name)
    }

    /// Removes a file or symlink.
    pub fn unlink(&self, parent: u64, name: &OsStr) -> FsResult<()> {
        self.check_mutable(parent, name, false)?;
        let _names = self.names.read();
        let path = self.child_path(parent, name)?;
        if !is_temp_name(name) {
            self.check_may_change_in(&path)?;
            self.keep_previous(&path, Why::Deleted, self.keep_how(parent, name));
        }
        self.store.unlink(&path)?;
        self.inodes.lock().detach(parent, name);
        if let Some(counters) = &self.counters {
            counters.remove(&path);
        }
        self.unindexed(path);
        Ok(())
    }

    /// Removes an empty directory.
    pub fn rmdir(&self, parent: u64, name: &OsStr) -> FsResult<()> {
        self.check_mutable(parent, name, false)?;
        let _names = self.names.read();
        let path = self.child_path(parent, name)?;
        match self.store.rmdir(&path) {
            // A folder that looks empty may hold temp files a failed write
            // left behind: they go with it.
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => {
                if self.store.remove_temp_files_in(&path)? == 0 {
                    return Err(e.into());
                }
                self.store.rmdir(&path)?;
            }
            other => other?,
        }
        self.inodes.lock().detach(parent, name);
        Ok(())
    }

    /// Creates a symlink; targets that would leave the mount are refused.
    pub fn symlink(
        &self,
        parent: u64,
        name: &OsStr,
        target: &Path,
        who: Requester,
    ) -> FsResult<Entry> {
        self.check_mutable(parent, name, true)?;
        {
            let _names = self.names.read();
            let path = self.child_path(parent, name)?;
            let depth = path.parent().map_or(0, |p| p.depth());
            if !target_stays_inside(target, depth) {
                return Err(FsError::EscapingSymlink);
            }
            self.store.symlink(target, &path)?;
            self.give_to(&path, who)?;
        }
        self.lookup(parent, name)
    }

    /// rename / renameat2 (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
    pub fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        flags: u32,
    ) -> FsResult<()> {
        self.check_mutable(parent, name, false)?;
        if self.is_guide_written_back(parent, name, new_parent, new_name, flags)? {
            return self.unlink(parent, name);
        }
        self.check_mutable(new_parent, new_name, true)?;
        let exchange = flags & crate::store::RENAME_EXCHANGE != 0;
        // A folder that moves takes its whole subtree to new paths.
        let moves_folder =
            self.is_folder(parent, name) || (exchange && self.is_folder(new_parent, new_name));
        // A background rewrite swapping its temp file in: under the lock
        // writers announce themselves with, so it is refused once one holds
        // the inode it would swap out, and writers arriving later with that
        // inode find its successor. It names the note first and its temp
        // file second, so that watchers see the note moved away and then
        // back (a swap back names them the other way round).
        let note_first = is_temp_name(new_name) && !is_temp_name(name);
        let rewrite = exchange && (is_temp_name(name) || note_first) && !moves_folder;
        // The note's side of the exchange, and the temp file's.
        let (note, temp) = if note_first {
            ((parent, name), (new_parent, new_name))
        } else {
            ((new_parent, new_name), (parent, name))
        };
        let replacing = rewrite.then(|| self.replacing.lock());
        let (names_shared, names_exclusive) = if moves_folder {
            (None, Some(self.names.write()))
        } else {
            (Some(self.names.read()), None)
        };
        let from = self.child_path(parent, name)?;
        let to = self.child_path(new_parent, new_name)?;
        // Only the counters and the history care whether a file is being
        // replaced.
        let replaced = if (self.counters.is_some() || self.history.is_some())
            && flags & crate::store::RENAME_NOREPLACE == 0
        {
            self.store
                .stat(&to)
                .ok()
                .filter(|st| st.kind == FileKind::File)
        } else {
            None
        };
        let replaces_file = replaced.is_some();
        if rewrite && note_first && replaces_file {
            // The note's old content, which the rewrite removes under its
            // temp name once exchanged.
            self.check_may_change_in(&from)?;
            self.check_may_change_in(&to)?;
            if self
                .store
                .stat(&from)
                .is_ok_and(|st| st.kind == FileKind::File)
            {
                self.keep_previous(&from, Why::Overwritten, Keep::LinkOrCopy);
            }
        } else if let Some(old) = replaced
            && !is_temp_name(new_name)
        {
            self.check_may_change_in(&from)?;
            self.check_may_change_in(&to)?;
            if exchange {
                // Both files live on, except in a background rewrite,
                // which exchanges its temp file in and removes the old one.
                if is_temp_name(name) {
                    self.keep_previous(&to, Why::Overwritten, Keep::LinkOrCopy);
                }
            } else if self.store.stat(&from).is_ok_and(|st| st.ino != old.ino) {
                self.keep_previous(&to, Why::Overwritten, self.keep_how(new_parent, new_name));
            }
        }
        let swap = replacing.as_ref().and_then(|replacing| {
            let table = self.inodes.lock();
            let old = table.child(note.0, note.1)?;
            let new = table.child(temp.0, temp.1)?;
            replacing
                .values()
                .any(|o| *o == Some(old))
                .then(|| (old, new, table.get(old).is_some_and(|n| n.open_writers > 0)))
        });
        if let Some((_, _, true)) = swap {
            return Err(FsError::from_errno(libc::EBUSY));
        }
        self.store.rename(&from, &to, flags)?;
        {
            let mut table = self.inodes.lock();
            if exchange {
                table.exchange(parent, name, new_parent, new_name);
            } else {
                table.rename(parent, name, new_parent, new_name);
            }
        }
        if let Some((old, new, _)) = swap {
            let now = Instant::now();
            let mut replaced = self.replaced.lock();
            replaced.retain(|_, (_, t)| now.duration_since(*t) < REPLACED_KEPT);
            replaced.insert(old, (new, now));
        }
        drop((names_shared, names_exclusive));
        drop(replacing);
        self.unindexed(from.clone());
        self.unindexed(to.clone());
        let ours = self.replacing.lock().contains_key(&to);
        match &self.counters {
            // The daemon's own rewrite is not a write session of anyone's.
            Some(counters) if !exchange && ours => counters.remove(&from),
            Some(counters) if !exchange && replaces_file => counters.replace(&from, &to),
            Some(counters) if !exchange => counters.rename(&from, &to),
            _ => {}
        }
        Ok(())
    }

    /// Whether `name` in `parent` is a folder: by the inode table, which
    /// knows every name the kernel has looked up, or else by the store.
    fn is_folder(&self, parent: u64, name: &OsStr) -> bool {
        let known = {
            let table = self.inodes.lock();
            table
                .child(parent, name)
                .and_then(|ino| table.get(ino))
                .map(|node| node.kind)
        };
        match known {
            Some(kind) => kind == FileKind::Directory,
            None => {
                let _names = self.names.read();
                self.child_path(parent, name)
                    .ok()
                    .and_then(|path| self.store.stat(&path).ok())
                    .is_some_and(|st| st.kind == FileKind::Directory)
            }
        }
    }

    /// Whether a rename puts a file holding exactly the guide's bytes over
    /// the guide (rsync restoring a copy of the mount): then the rename is
    /// a no-op that takes the source away.
    fn is_guide_written_back(
        &self,
        parent: u64,
        name: &OsStr,
        new_parent: u64,
        new_name: &OsStr,
        flags: u32,
    ) -> FsResult<bool> {
        let Some(views) = &self.views else {
            return Ok(false);
        };
        if new_parent != ROOT
            || flags != 0
            || !views.root_child(new_name).is_some_and(ViewTable::is_guide)
        {
            return Ok(false);
        }
        let from = self.child_path(parent, name)?;
        let same = self
            .store
            .stat(&from)
            .is_ok_and(|st| st.kind == FileKind::File)
            && self
                .store
                .read(&from)
                .is_ok_and(|bytes| views.is_the_guide(&bytes));
        Ok(same)
    }

    /// Hard links are refused: one inode with several paths would break the
    /// invariant that a memory has one location (see SEMANTICS.md).
    pub fn link(&self) -> FsResult<Entry> {
        Err(FsError::Refused("hard links"))
    }

    /// Device nodes, fifos and sockets are refused (see SEMANTICS.md).
    pub fn mknod(&self) -> FsResult<Entry> {
        Err(FsError::Refused("special files"))
    }

    fn open_flags(flags: i32) -> i32 {
        flags
            & (libc::O_ACCMODE
                | libc::O_APPEND
                | libc::O_TRUNC
                | libc::O_SYNC
                | libc::O_DSYNC
                | libc::O_EXCL
                | crate::store::O_NOATIME)
    }

    /// Records an open handle. `st` is the file's stat when the caller
    /// already has it; `counted` says the writer was counted beforehand.
    fn register_open(
        &self,
        ino: u64,
        file: File,
        st: Option<Stat>,
        flags: i32,
        counted: bool,
    ) -> FsResult<Opened> {
        let acc = flags & libc::O_ACCMODE;
        let writable = acc == libc::O_WRONLY || acc == libc::O_RDWR;
        // A write through the page cache first asks the daemon whether the
        // file carries `security.capability` (a round trip per write(2));
        // a direct write lets the daemon clear privileges itself. Nothing
        // can be read or mapped through a write-only handle, so the cache
        // has nothing to offer it.
        let write_only = acc == libc::O_WRONLY;
        let st = match st {
            Some(st) => st,
            None => crate::store::fstat(&file)?,
        };
        let version = super::inodes::cache_version(&st);
        let (keep_cache, passthrough) = {
            let mut table = self.inodes.lock();
            // The kernel will not mix passthrough and cached opens of one
            // inode: a reader of a large file goes passthrough only while
            // every other open of it does too, and a writer joins the
            // passthrough readers already there (see SEMANTICS.md).
            let (open, through) = table.open_counts(ino);
            let passthrough = self.passthrough_on()
                && if writable {
                    through > 0
                } else {
                    st.size >= PASSTHROUGH_MIN_SIZE && open == through
                };
            if passthrough {
                table.passthrough_handle(ino, true);
            }
            if !counted {
                table.opened(ino, writable);
            }
            let keep = match table.get_mut(ino) {
                Some(node) => {
                    let keep = node.cached_version == Some(version);
                    node.cached_version = Some(version);
                    keep
                }
                None => false,
            };
            (keep, passthrough)
        };
        let direct = write_only && !passthrough;
        let fh = self.handles.insert(Handle::File(FileHandle {
            ino,
            file,
            writable,
            append: flags & libc::O_APPEND != 0,
            direct,
            backing: Mutex::new(None),
        }));
        Ok(Opened {
            fh,
            keep_cache,
            direct_io: direct,
            passthrough,
        })
    }

    /// Opens an existing file for the process `pid`. Opens for reading by
    /// other processes than the daemon itself count as accesses, unless
    /// they are part of a walk of the file's folder.
    pub fn open(&self, ino: u64, flags: i32, pid: u32) -> FsResult<Opened> {
        if is_virtual(ino) {
            self.catch_up_views();
            let content = self.view_table()?.open(ino, flags)?;
            let fh = self.handles.insert(Handle::ViewFile(content));
            return Ok(Opened {
                fh,
                keep_cache: false,
                direct_io: true,
                passthrough: false,
            });
        }
        #[cfg(target_os = "linux")]
        let for_exec = flags & FMODE_EXEC != 0;
        let flags = Self::open_flags(flags) & !libc::O_EXCL;
        let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
        if writable {
            let (ino, path, names) = self.announce_writer(ino)?;
            if flags & libc::O_TRUNC != 0 {
                self.keep_previous(&path, Why::Truncated, Keep::Copy);
            }
            let opened = self.store.open_file(&path, flags, 0);
            drop(names);
            return match opened {
                Ok(file) => self.register_open(ino, file, None, flags, true),
                Err(e) => {
                    self.inodes.lock().closed(ino, true);
                    Err(e.into())
                }
            };
        }
        let (path, file) = {
            let _names = self.names.read();
            let path = self.path_of(ino)?;
            let file = self.store.open_file(&path, flags, 0)?;
            (path, file)
        };
        // An open for execve: the kernel, not checking, only made sure
        // some execute bit is set; the user's own must be.
        #[cfg(target_os = "linux")]
        if self.options.store_checks_permissions && for_exec {
            crate::store::open_file::access(&file, libc::X_OK)?;
        }
        if pid != self.pid
            && let Some(counters) = &self.counters
            && !self.is_walk(ino, pid)
        {
            counters.record_read_open(&path);
        }
        self.register_open(ino, file, None, flags, false)
    }

    /// Counts a writer on `ino` before its file is opened, after waiting
    /// out a background replace of the same file, so a replace can never
    /// slip between a writer's open and its first write. A writer holding
    /// an inode a replace swapped out (it looked the file up just before)
    /// is sent to the inode that took its place. Returns the inode and
    /// path to open, and `names` held for reading while the caller opens it.
    ///
    /// The wait is bounded, because the replace needs a FUSE worker for
    /// its exchange; a writer that stops waiting is counted on the inode,
    /// and a replace that has not swapped yet then gives up (see `rename`).
    fn announce_writer(&self, ino: u64) -> FsResult<(u64, StorePath, RwLockReadGuard<'_, ()>)> {
        let mut replacing = self.replacing.lock();
        let deadline = Instant::now() + REPLACE_WAIT;
        loop {
            let (ino, path) = self.writer_target(ino)?;
            let busy = replacing.contains_key(&path) || replacing.values().any(|o| *o == Some(ino));
            if !busy
                || self
                    .replace_done
                    .wait_until(&mut replacing, deadline)
                    .timed_out()
            {
                let names = self.names.read();
                let (ino, path) = self.writer_target(ino)?;
                self.inodes.lock().opened(ino, true);
                return Ok((ino, path, names));
            }
        }
    }

    /// Where a writer holding `ino` writes: the inode that replaced it, if
    /// a background rewrite swapped it out, and that inode's path now.
    /// The exchange records its successor under the `replacing` lock,
    /// which the caller holds, so a swapped-out inode is always followed.
    fn writer_target(&self, mut ino: u64) -> FsResult<(u64, StorePath)> {
        {
            let replaced = self.replaced.lock();
            // Bounded: each step is a rewrite of the same file.
            for _ in 0..16 {
                match replaced.get(&ino) {
                    Some((next, _)) => ino = *next,
                    None => break,
                }
            }
        }
        Ok((ino, self.path_of(ino)?))
    }

    fn ino_of_path(&self, path: &StorePath) -> Option<u64> {
        let table = self.inodes.lock();
        let mut ino = ROOT;
        for name in path.as_path().iter() {
            ino = table.child(ino, name)?;
        }
        Some(ino)
    }

    /// Starts a background replace of `path`: `None` while any handle may
    /// write it; otherwise writers opening it wait until the guard drops.
    /// The replace itself is an exchange through the mount (see `rename`),
    /// which is refused if a writer got hold of the file meanwhile.
    pub fn begin_replace(&self, path: &StorePath) -> Option<ReplaceGuard<'_>> {
        let mut replacing = self.replacing.lock();
        if self.is_open_for_write(path) || replacing.contains_key(path) {
            return None;
        }
        replacing.insert(path.clone(), self.ino_of_path(path));
        Some(ReplaceGuard {
            fs: self,
            path: path.clone(),
        })
    }

    /// Creates (or, without `O_EXCL`, opens) a file and opens it.
    pub fn create(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        flags: i32,
        who: Requester,
    ) -> FsResult<(Entry, Opened)> {
        self.check_mutable(parent, name, true)?;
        let flags = Self::open_flags(flags) | libc::O_CREAT;
        // Without O_EXCL an existing file may be opened: like any writer's
        // open it waits out a background replace, and is counted before an
        // exchange can take the inode away.
        let mut replacing = (flags & libc::O_EXCL == 0).then(|| self.replacing.lock());
        if let Some(replacing) = replacing.as_mut() {
            let path = self.child_path(parent, name)?;
            let deadline = Instant::now() + REPLACE_WAIT;
            while replacing.contains_key(&path)
                && !self
                    .replace_done
                    .wait_until(replacing, deadline)
                    .timed_out()
            {}
        }
        let names = self.names.read();
        let path = self.child_path(parent, name)?;
        let mode = mode & 0o7777;
        let file = if flags & (libc::O_TRUNC | libc::O_EXCL) == libc::O_TRUNC {
            // The kernel asks to create a name it believes free, so that is
            // tried first; one made behind the mount may be there after
            // all, and is kept before it is truncated.
            match self.store.open_file(&path, flags | libc::O_EXCL, mode) {
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    self.keep_previous(&path, Why::Truncated, Keep::Copy);
                    self.store.open_file(&path, flags, mode)?
                }
                opened => opened?,
            }
        } else {
            self.store.open_file(&path, flags, mode)?
        };
        drop(names);
        let st = crate::store::fstat(&file)?;
        let ino = self.remember(parent, name, &st, true);
        let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
        self.inodes.lock().opened(ino, writable);
        drop(replacing);
        let mut st = st;
        if self.is_root && (who.uid != 0 || who.gid != 0) {
            // SAFETY: valid descriptor; u32::MAX would leave ids unchanged.
            let ret = unsafe { libc::fchown(file.as_raw_fd(), who.uid, who.gid) };
            let owned = if ret < 0 {
                Err(io::Error::last_os_error())
            } else {
                crate::store::fstat(&file)
            };
            match owned {
                Ok(now) => st = now,
                Err(e) => {
                    self.inodes.lock().closed(ino, writable);
                    return Err(e.into());
                }
            }
        }
        let opened = self.register_open(ino, file, Some(st), flags, true)?;
        Ok((
            Entry {
                ino,
                attr: self.attr(ino, &st),
            },
            opened,
        ))
    }

    /// Reads up to `size` bytes at `offset`.
    pub fn read(&self, fh: u64, offset: u64, size: u32) -> FsResult<Vec<u8>> {
        if let Some(Handle::ViewFile(content)) = self.handles.get(fh).as_deref() {
            let start = (offset as usize).min(content.len());
            let end = start.saturating_add(size as usize).min(content.len());
            return Ok(content[start..end].to_vec());
        }
        self.with_file(fh, |h| {
            let mut buf = vec![0u8; size as usize];
            let mut filled = 0;
            while filled < buf.len() {
                match h.file.read_at(&mut buf[filled..], offset + filled as u64) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            buf.truncate(filled);
            Ok(buf)
        })
    }

    /// Writes at `offset` (or at the end for `O_APPEND` handles). A write
    /// crossing the size cap is cut short at the cap, and a write starting
    /// at the cap fails with `EFBIG`, like `RLIMIT_FSIZE` on a local disk.
    pub fn write(&self, fh: u64, offset: u64, data: &[u8]) -> FsResult<u32> {
        self.with_file(fh, |h| {
            let start = if h.append {
                crate::store::fstat(&h.file)?.size
            } else {
                offset
            };
            let cap = self.options.max_file_size;
            if start >= cap && !data.is_empty() {
                return Err(FsError::TooBig(cap));
            }
            let allowed = ((cap - start).min(data.len() as u64)) as usize;
            let data = &data[..allowed];
            // With O_APPEND on the backing descriptor, pwrite appends.
            let mut written = 0;
            while written < data.len() {
                match h.file.write_at(&data[written..], offset + written as u64) {
                    Ok(0) => break,
                    Ok(n) => written += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if written > 0 => {
                        tracing::debug!("short write after {written} bytes: {e}");
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(written as u32)
        })
    }

    /// Before a direct write by a caller without `CAP_FSETID` (process
    /// `pid`): clears the set-user-ID bit, and the set-group-ID bit of a
    /// group-executable file or of a file whose group the caller is not in,
    /// as a local filesystem does on write. A daemon without that capability
    /// gets this from the backing filesystem's own write.
    pub fn drop_setid_bits(&self, fh: u64, who: Requester, pid: u32) -> FsResult<()> {
        if !self.is_root {
            return Ok(());
        }
        self.with_file(fh, |h| {
            let st = crate::store::fstat(&h.file)?;
            let mode = st.mode & 0o7777;
            let mut kept = mode & !mode_bits::S_ISUID;
            if mode & mode_bits::S_ISGID != 0
                && (mode & mode_bits::S_IXGRP != 0 || !in_group(who, pid, st.gid))
            {
                kept &= !mode_bits::S_ISGID;
            }
            if kept != mode {
                // SAFETY: valid descriptor.
                if unsafe { libc::fchmod(h.file.as_raw_fd(), kept as libc::mode_t) } < 0 {
                    return Err(io::Error::last_os_error().into());
                }
            }
            Ok(())
        })
    }

    /// fsync / fdatasync.
    pub fn fsync(&self, fh: u64, datasync: bool) -> FsResult<()> {
        self.with_file(fh, |h| {
            if datasync {
                h.file.sync_data()?;
            } else {
                h.file.sync_all()?;
            }
            Ok(())
        })
    }

    /// Closes a file handle.
    pub fn release(&self, fh: u64) -> FsResult<()> {
        let handle = self.handles.remove(fh).ok_or(FsError::BadHandle)?;
        if let Handle::File(h) = handle.as_ref() {
            // Writes through the kernel's page cache leave it valid for the
            // version we leave behind; direct writes left it behind.
            let version = if h.writable && !h.direct {
                crate::store::fstat(&h.file)
                    .ok()
                    .map(|st| super::inodes::cache_version(&st))
            } else {
                None
            };
            let mut table = self.inodes.lock();
            if h.writable
                && let Some(node) = table.get_mut(h.ino)
            {
                node.cached_version = version;
            }
            if h.backing.lock().take().is_some() {
                table.passthrough_handle(h.ino, false);
            }
            table.closed(h.ino, h.writable);
            let last_writer_closed =
                h.writable && table.get(h.ino).is_some_and(|n| n.open_writers == 0);
            let path = last_writer_closed.then(|| table.path(h.ino)).flatten();
            if let Some(path) = &path {
                // Under the inode lock (see `catch_up_views`).
                self.unindexed(path.clone());
            }
            drop(table);
            let path = path.filter(|_| self.events.get().is_some());
            if let Some(path) = path {
                self.pending_events.lock().push(WriteEvent::Closed(path));
            }
        }
        Ok(())
    }

    /// fallocate; growing past the size cap fails with `EFBIG`.
    pub fn fallocate(&self, fh: u64, offset: u64, length: u64, mode: i32) -> FsResult<()> {
        let keeps_size = crate::store::open_file::allocate_keeps_size(mode);
        if !keeps_size && offset.saturating_add(length) > self.options.max_file_size {
            return Err(FsError::TooBig(self.options.max_file_size));
        }
        self.with_file(fh, |h| {
            crate::store::open_file::allocate(&h.file, mode, offset, length)?;
            Ok(())
        })
    }

    /// lseek for `SEEK_DATA` / `SEEK_HOLE` (the kernel handles the rest).
    pub fn lseek(&self, fh: u64, offset: i64, whence: i32) -> FsResult<i64> {
        self.with_file(fh, |h| {
            // SAFETY: valid descriptor. Handles only use pread/pwrite, so
            // moving the shared offset is harmless.
            let ret = unsafe { libc::lseek(h.file.as_raw_fd(), offset, whence) };
            if ret < 0 {
                return Err(io::Error::last_os_error().into());
            }
            Ok(ret)
        })
    }

    /// Whether process `pid` opening `ino` is walking its folder (see
    /// `walkers.rs`): such opens are not counted as accesses.
    fn is_walk(&self, ino: u64, pid: u32) -> bool {
        let parent = self.inodes.lock().parent_and_name(ino).map(|(p, _)| p);
        parent.is_some_and(|dir| self.walkers.is_walk(dir, ino, pid))
    }

    /// [`StoreFs::opendir`] for the kernel: a real folder listed by `pid`
    /// is remembered for a moment, so the opens of a walk that follows are
    /// not counted as accesses.
    pub fn opendir_for(&self, ino: u64, pid: u32) -> FsResult<u64> {
        let fh = self.opendir(ino)?;
        if self.counters.is_some() && !is_virtual(ino) {
            self.walkers.listed(ino, pid);
        }
        Ok(fh)
    }

    /// Opens a directory for listing.
    pub fn opendir(&self, ino: u64) -> FsResult<u64> {
        if is_virtual(ino) {
            self.catch_up_views();
            self.view_table()?.list(ino)?;
            return Ok(self.handles.insert(Handle::ViewDir(ViewDirHandle {
                snapshot: Mutex::new(None),
            })));
        }
        let st = {
            let _names = self.names.read();
            self.store.stat(&self.path_of(ino)?)?
        };
        match st.kind {
            FileKind::Directory => {}
            // The folder was swapped for a symlink behind the mount; the
            // kernel's cached inode is still a folder. As promised: ELOOP.
            FileKind::Symlink => return Err(FsError::from_errno(libc::ELOOP)),
            _ => return Err(FsError::from_errno(libc::ENOTDIR)),
        }
        Ok(self.handles.insert(Handle::Dir(DirHandle {
            ino,
            snapshot: Mutex::new(None),
        })))
    }

    /// Lists a directory from `offset`, calling `add` for each entry until it
    /// returns true (reply buffer full). Offsets index a snapshot taken at
    /// the first call and at every rewind to 0. With `plus`, each entry
    /// carries attributes and counts a lookup, except one that did not fit.
    pub fn readdir(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(DirItem<'_>) -> bool,
    ) -> FsResult<()> {
        let handle = self.handles.get(fh).ok_or(FsError::BadHandle)?;
        let dir = match handle.as_ref() {
            Handle::Dir(dir) => dir,
            Handle::ViewDir(view_dir) => {
                return self.readdir_view(ino, view_dir, offset, plus, add);
            }
            _ => return Err(FsError::from_errno(libc::ENOTDIR)),
        };
        let names = self.names.read();
        let path = self.path_of(dir.ino)?;
        let entries = {
            let mut snap = dir.snapshot.lock();
            match snap.as_ref() {
                Some(entries) if offset != 0 => Arc::clone(entries),
                _ => {
                    let mut fresh = self.store.read_dir(&path)?;
                    // Temp files of writes in flight are never listed.
                    fresh.retain(|e| !is_temp_name(&e.name));
                    if ino == ROOT && self.views.is_some() {
                        // Real entries under reserved names are shadowed by the views.
                        let views = self.views.as_ref();
                        fresh.retain(|e| views.is_none_or(|v| v.root_child(&e.name).is_none()));
                    }
                    let fresh = Arc::new(fresh);
                    *snap = Some(Arc::clone(&fresh));
                    fresh
                }
            }
        };
        // One descriptor for the directory, so each entry costs one fstatat.
        let dir_fd = if plus {
            Some(self.store.open_dir(&path)?)
        } else {
            None
        };
        drop(names);
        let parent_ino = self
            .inodes
            .lock()
            .parent_and_name(ino)
            .map_or(ROOT, |(p, _)| p);
        let dots = [(ino, "."), (parent_ino, "..")];
        for (i, (dot_ino, name)) in dots.iter().enumerate().skip(offset as usize) {
            let attr = if plus {
                // The kernel does not count lookups for dot entries.
                Some(self.getattr(*dot_ino, None)?)
            } else {
                None
            };
            let item = DirItem {
                ino: *dot_ino,
                next_offset: i as u64 + 1,
                kind: FileType::Directory,
                name: OsStr::new(name),
                attr,
            };
            if add(item) {
                return Ok(());
            }
        }
        let start = offset.saturating_sub(2) as usize;
        for (i, entry) in entries.iter().enumerate().skip(start) {
            let next_offset = i as u64 + 3;
            let (entry_ino, attr) = if let Some(dir_fd) = &dir_fd {
                let st = match crate::store::stat_at(dir_fd, &entry.name) {
                    Ok(st) => st,
                    // Gone since the snapshot: skip it rather than fail the listing.
                    Err(_) => continue,
                };
                let entry_ino = self.remember(ino, &entry.name, &st, true);
                (entry_ino, Some(self.attr(entry_ino, &st)))
            } else {
                (self.known_ino(ino, entry), None)
            };
            let item = DirItem {
                ino: entry_ino,
                next_offset,
                kind: attr.map_or_else(|| kind_to_type(entry.kind, 0), |a| a.kind),
                name: &entry.name,
                attr,
            };
            if add(item) {
                if plus {
                    self.forget(entry_ino, 1);
                }
                return Ok(());
            }
        }
        if ino == ROOT
            && let Some(views) = &self.views
        {
            let start = (offset as usize).saturating_sub(entries.len() + 2);
            for (i, (view_ino, name, kind)) in
                views.root_entries().into_iter().enumerate().skip(start)
            {
                let item = DirItem {
                    ino: view_ino,
                    next_offset: (entries.len() + 3 + i) as u64,
                    kind,
                    name: OsStr::new(name),
                    attr: if plus {
                        Some(views.getattr(view_ino)?)
                    } else {
                        None
                    },
                };
                if add(item) {
                    return Ok(());
                }
            }
        }
        // A path an inbox item was moved from is listed, as the symlink it
        // resolves as, for its grace period: a create of that name fails
        // (it exists), so the folder must not look as if it did not.
        let root_extra = match (&self.views, ino == ROOT) {
            (Some(views), true) => views.root_entries().len(),
            _ => 0,
        };
        let base = entries.len() + 2 + root_extra;
        let moved = self.redirected_names(&path, &entries);
        if let Some(views) = &self.views {
            for (i, name) in moved
                .iter()
                .enumerate()
                .skip((offset as usize).saturating_sub(base))
            {
                let Some(node) = self.redirect_node(ino, name) else {
                    continue;
                };
                let child = views.intern(ino, name.clone(), node.clone(), plus);
                let attr = views.attr(child, &node);
                let item = DirItem {
                    ino: child,
                    next_offset: (base + i + 1) as u64,
                    kind: FileType::Symlink,
                    name,
                    attr: plus.then_some(attr),
                };
                if add(item) {
                    if plus {
                        views.forget(child, 1);
                    }
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn readdir_view(
        &self,
        ino: u64,
        dir: &ViewDirHandle,
        offset: u64,
        plus: bool,
        add: &mut dyn FnMut(DirItem<'_>) -> bool,
    ) -> FsResult<()> {
        let views = self.view_table()?;
        let entries = {
            let mut snap = dir.snapshot.lock();
            match snap.as_ref() {
                Some(entries) if offset != 0 => Arc::clone(entries),
                _ => {
                    let fresh = Arc::new(views.list(ino)?);
                    *snap = Some(Arc::clone(&fresh));
                    fresh
                }
            }
        };
        let parent = if views.node(ino).is_ok_and(|n| {
            matches!(
                n,
                super::viewnodes::ViewNode::Dir(crate::views::ViewDir::Root(_))
            )
        }) {
            ROOT
        } else {
            ino
        };
        for (i, (dot_ino, name)) in [(ino, "."), (parent, "..")]
            .into_iter()
            .enumerate()
            .skip(offset as usize)
        {
            let item = DirItem {
                ino: dot_ino,
                next_offset: i as u64 + 1,
                kind: FileType::Directory,
                name: OsStr::new(name),
                attr: if plus {
                    Some(self.getattr(dot_ino, None)?)
                } else {
                    None
                },
            };
            if add(item) {
                return Ok(());
            }
        }
        for (i, entry) in entries
            .iter()
            .enumerate()
            .skip(offset.saturating_sub(2) as usize)
        {
            let (name, node): (std::ffi::OsString, _) = ViewEntry::clone(entry).into();
            let attr_node = node.clone();
            let child = views.intern(ino, name, node, plus);
            let attr = views.attr(child, &attr_node);
            let item = DirItem {
                ino: child,
                next_offset: i as u64 + 3,
                kind: attr.kind,
                name: entry.name(),
                attr: plus.then_some(attr),
            };
            if add(item) {
                if plus {
                    views.forget(child, 1);
                }
                return Ok(());
            }
        }
        Ok(())
    }

    fn known_ino(&self, dir: u64, entry: &DirEntry) -> u64 {
        self.inodes
            .lock()
            .remember(dir, &entry.name, entry.ino, entry.kind, false)
    }

    /// Closes a directory handle.
    pub fn releasedir(&self, fh: u64) -> FsResult<()> {
        self.handles.remove(fh).ok_or(FsError::BadHandle)?;
        Ok(())
    }

    /// fsync of a directory.
    pub fn fsyncdir(&self, ino: u64) -> FsResult<()> {
        if is_virtual(ino) {
            return Ok(());
        }
        let dir = {
            let _names = self.names.read();
            self.store
                .open_file(&self.path_of(ino)?, libc::O_RDONLY | libc::O_DIRECTORY, 0)?
        };
        dir.sync_all()?;
        Ok(())
    }

    /// statvfs of the backing filesystem.
    pub fn statfs(&self) -> FsResult<libc::statvfs> {
        Ok(self.store.statfs()?)
    }

    /// Gets an extended attribute.
    pub fn getxattr(&self, ino: u64, name: &OsStr) -> FsResult<Vec<u8>> {
        if is_virtual(ino) {
            return Err(FsError::from_errno(crate::store::NO_XATTR));
        }
        if let (Some(counters), Some(field)) = (&self.counters, counter_xattr(name)) {
            let _names = self.names.read();
            let path = self.path_of(ino)?;
            return counters
                .xattr(&path, field)
                .ok_or(FsError::from_errno(crate::store::NO_XATTR));
        }
        self.by_path_or_open(
            ino,
            |path| self.store.get_xattr(path, name),
            |file| crate::store::open_file::get_xattr(file, name),
        )
    }

    /// Sets an extended attribute.
    pub fn setxattr(&self, ino: u64, name: &OsStr, value: &[u8], flags: i32) -> FsResult<()> {
        if is_virtual(ino) {
            return Err(FsError::ReadOnly);
        }
        if self.counters.is_some() && counter_xattr(name).is_some() {
            return Err(FsError::Refused(
                "user.mnemofs.* attributes are kept by the daemon",
            ));
        }
        self.by_path_or_open(
            ino,
            |path| self.store.set_xattr(path, name, value, flags),
            |file| crate::store::open_file::set_xattr(file, name, value, flags),
        )
    }

    /// Lists extended attribute names, NUL-separated.
    pub fn listxattr(&self, ino: u64) -> FsResult<Vec<u8>> {
        if is_virtual(ino) {
            return Ok(Vec::new());
        }
        // The user.mnemofs.* counters are readable by name but not listed,
        // so listings (and tools that copy every attribute) match the store.
        self.by_path_or_open(
            ino,
            |path| self.store.list_xattr(path),
            |file| crate::store::open_file::list_xattr(file),
        )
    }

    /// Removes an extended attribute.
    pub fn removexattr(&self, ino: u64, name: &OsStr) -> FsResult<()> {
        if is_virtual(ino) {
            return Err(FsError::ReadOnly);
        }
        if self.counters.is_some() && counter_xattr(name).is_some() {
            return Err(FsError::Refused(
                "user.mnemofs.* attributes are kept by the daemon",
            ));
        }
        self.by_path_or_open(
            ino,
            |path| self.store.remove_xattr(path, name),
            |file| crate::store::open_file::remove_xattr(file, name),
        )
    }

    /// access(2), for `mode` (`F_OK` or any of `R_OK`, `W_OK`, `X_OK`).
    /// The kernel asks only where it does not check permissions itself:
    /// an owner-only mount on Linux (see
    /// [`kernel_checks_permissions`](super::kernel_checks_permissions)).
    /// The store answers there, for the daemon, which is the caller. Views
    /// are read-only, and none of their files can be run.
    pub fn access(&self, ino: u64, mode: i32) -> FsResult<()> {
        if is_virtual(ino) {
            let attr = self.view_table()?.getattr(ino)?;
            if mode & libc::W_OK != 0 {
                return Err(FsError::ReadOnly);
            }
            if mode & libc::X_OK != 0 && attr.kind != FileType::Directory {
                return Err(FsError::from_errno(libc::EACCES));
            }
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        return self.by_path_or_open(
            ino,
            |path| self.store.access(path, mode),
            |file| crate::store::open_file::access(file, mode),
        );
        #[cfg(not(target_os = "linux"))]
        self.stat_ino(ino, None).map(|_| ())
    }

    /// Number of inodes known (for status).
    pub fn inode_count(&self) -> usize {
        self.inodes.lock().len()
    }
}

/// Whether the caller `who` (process `pid`) is in group `gid`: its own group
/// or one of its supplementary groups (from `/proc`; unknown counts as no).
#[cfg(target_os = "linux")]
fn in_group(who: Requester, pid: u32, gid: u32) -> bool {
    if who.gid == gid {
        return true;
    }
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .is_some_and(|groups| {
            groups
                .split_whitespace()
                .any(|g| g.parse::<u32>() == Ok(gid))
        })
}

/// Whether the caller `who` is in group `gid`, by its own group only:
/// macOS has no `/proc` to read another process's supplementary groups,
/// so those count as no (a set-group-id bit is dropped more often).
#[cfg(not(target_os = "linux"))]
fn in_group(who: Requester, _pid: u32, gid: u32) -> bool {
    who.gid == gid
}

/// The counter an extended attribute name refers to, if it is one of ours.
fn counter_xattr(name: &OsStr) -> Option<&'static str> {
    CounterStore::xattr_names()
        .iter()
        .copied()
        .find(|n| n.as_bytes() == name.as_bytes())
}

fn clone_err(e: &FsError) -> FsError {
    FsError::from_errno(e.errno())
}

/// True if a relative symlink target created in a directory `depth` levels
/// below the root never climbs above the root.
pub fn target_stays_inside(target: &Path, depth: usize) -> bool {
    if target.as_os_str().is_empty() {
        return true;
    }
    let mut level = depth as isize;
    for component in target.components() {
        match component {
            Component::Normal(_) => level += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                level -= 1;
                if level < 0 {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fn kind_to_type(kind: FileKind, mode: u32) -> FileType {
    match kind {
        FileKind::File => FileType::RegularFile,
        FileKind::Directory => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        FileKind::Special => match mode & mode_bits::S_IFMT {
            mode_bits::S_IFIFO => FileType::NamedPipe,
            mode_bits::S_IFSOCK => FileType::Socket,
            mode_bits::S_IFBLK => FileType::BlockDevice,
            _ => FileType::CharDevice,
        },
    }
}

fn to_time(t: TimeSpec) -> SystemTime {
    if t.sec >= 0 {
        UNIX_EPOCH + Duration::new(t.sec as u64, t.nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(t.sec.unsigned_abs()) + Duration::from_nanos(t.nsec as u64)
    }
}

/// Converts a backing `stat` into the attributes the kernel sees.
pub fn to_attr(ino: u64, st: &Stat) -> FileAttr {
    FileAttr {
        ino: fuser::INodeNo(ino),
        size: st.size,
        blocks: st.blocks,
        atime: to_time(st.atime),
        mtime: to_time(st.mtime),
        ctime: to_time(st.ctime),
        crtime: to_time(st.ctime),
        kind: kind_to_type(st.kind, st.mode),
        perm: (st.mode & 0o7777) as u16,
        nlink: st.nlink as u32,
        uid: st.uid,
        gid: st.gid,
        rdev: st.rdev as u32,
        blksize: st.blksize,
        flags: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_targets() {
        assert!(target_stays_inside(Path::new("a/b"), 0));
        assert!(target_stays_inside(Path::new("../x"), 1));
        assert!(!target_stays_inside(Path::new("../x"), 0));
        assert!(!target_stays_inside(Path::new("/etc/passwd"), 3));
        assert!(!target_stays_inside(Path::new("a/../../x"), 0));
        assert!(target_stays_inside(Path::new("a/../x"), 0));
    }
}
