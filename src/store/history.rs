//! Earlier versions of files: what a delete, an overwrite or a truncation
//! took away, kept in the state dir so that it can be brought back.
//!
//! An agent cannot tell a search result from the memory it points at, and
//! a handler that resolves symlinks before deleting removes the memory
//! itself; a `clear_all_memory()` empties the store. Neither can be told
//! from a deliberate `rm`, so every such loss is kept here for a while
//! (`mnemofs history`, `restore`, `trash`).
//!
//! Layout, under `<state dir>/history/`:
//! - `objects/<fnv1a64 hex>-<size>[-<n>]`: one file per distinct content.
//!   When the file that loses its name is not shared (one link, no writer
//!   through the mount) and the state dir is on the store's filesystem, the
//!   object is a hard link of the old inode: no copy is made. Otherwise
//!   (another filesystem, a truncation in place, a shared inode) the bytes
//!   are copied. Equal content is stored once; two contents with the same
//!   hash and size get different suffixes (the bytes are compared). A file
//!   over 1 MiB is hashed, compared and copied a chunk at a time, so the
//!   daemon never holds a deleted file whole in memory.
//! - `versions.jsonl`: one line per kept version, appended; a later
//!   `{"drop": n}` line takes version `n` back (a collapse). [`History::sweep`]
//!   rewrites it compactly, starting with a `{"next": n}` line so that the
//!   numbers of versions it dropped are not given out again.
//!
//! Subtleties:
//! - A version is kept *before* the change that loses it: a hard link
//!   cannot be made of an inode that no longer has a name. If the change
//!   then fails, the kept version merely equals the current content.
//! - Bursts collapse: within one window (`collapse`, a minute by default,
//!   counted from the first version kept in it) a path keeps at most two
//!   versions, the first (what it was before the burst) and the latest
//!   (the newest content lost). An editor saving every few seconds, or the
//!   organizer rewriting what was just written, thus adds at most two
//!   versions a minute, and the newest loss is always kept.
//! - Restored content is always copied out of an object, never linked back
//!   into the store, so editing a restored file can never change the kept
//!   object.
//! - Numbers (`n`) are never reused, so `restore --version N` means the
//!   same version until it expires.
//! - Expiry and the size cap hold as each version is kept (the oldest go
//!   first), so a mount without the organizer stays bounded; the
//!   organizer's sweep also expires versions while nothing is kept, and
//!   compacts the log.
//! - Nothing here is fatal: the log is derived state; a bad line is
//!   skipped, and a failure to keep a version is logged and the change
//!   goes ahead (refusing deletes because the state dir is full would be
//!   worse).

use std::collections::{HashSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::hash::BuildHasher;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hashbrown::HashTable;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::counters::fnv1a64;
use super::{Store, StorePath};

/// The folder under the state dir.
pub const HISTORY_DIR: &str = "history";
const LOG_FILE: &str = "versions.jsonl";
const OBJECTS_DIR: &str = "objects";
/// Memories larger than this are not parsed for their id and title.
const PARSE_LIMIT: usize = 1 << 20;

/// How long and how much history is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistorySettings {
    /// Versions older than this are dropped by the sweep.
    pub keep: Duration,
    /// The most bytes all kept contents may take; the oldest versions go
    /// first. A single file larger than this is not kept, and `0` keeps
    /// nothing.
    pub max_bytes: u64,
    /// Versions of one path kept within this window of each other collapse
    /// (see the module documentation).
    pub collapse: Duration,
}

impl Default for HistorySettings {
    fn default() -> Self {
        HistorySettings {
            keep: Duration::from_secs(30 * 86_400),
            max_bytes: 1 << 30,
            collapse: Duration::from_secs(60),
        }
    }
}

/// Why a version was kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The file was deleted.
    Deleted,
    /// Another file was renamed over it, or it was rewritten whole.
    Overwritten,
    /// It was truncated to zero bytes (an `O_TRUNC` open, `truncate`).
    Truncated,
}

impl Why {
    /// The word for listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Deleted => "deleted",
            Why::Overwritten => "overwritten",
            Why::Truncated => "truncated",
        }
    }
}

/// How to keep the content of a file about to lose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// A hard link of the inode when possible: the inode is about to lose
    /// its only name (unlink, rename over it) and nobody can write it.
    LinkOrCopy,
    /// A copy of the bytes: the inode lives on and may change (a
    /// truncation in place, a writer holding it open).
    Copy,
}

/// One kept version, as listings give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// Its number, unique in this store's history and never reused.
    pub n: u64,
    /// Where the file was.
    pub path: StorePath,
    /// The memory's `id:`, if it had one.
    pub id: Option<String>,
    /// The memory's title, if it is a markdown memory.
    pub title: Option<String>,
    /// Why it was kept.
    pub why: Why,
    /// When (Unix seconds).
    pub at: i64,
    /// Size in bytes.
    pub size: u64,
    /// The object holding its content.
    object: Object,
}

/// The name of an object: `<hash hex>-<size>`, and `-<n>` for the `n`th
/// different content with that hash and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Object {
    hash: u64,
    size: u64,
    /// 1 for the first content with this hash and size.
    nth: u8,
}

/// How many different contents may share a hash and size.
const MAX_NTH: u8 = 99;

impl Object {
    /// The object `name` names, if it is an object's name.
    fn parse(name: &str) -> Option<Object> {
        let mut parts = name.split('-');
        let hash = parts.next().filter(|h| h.len() == 16)?;
        let hash = u64::from_str_radix(hash, 16).ok()?;
        let size = parts.next()?.parse().ok()?;
        let nth = match parts.next() {
            None => 1,
            Some(n) => n.parse().ok().filter(|n| (2..=MAX_NTH).contains(n))?,
        };
        parts.next().is_none().then_some(Object { hash, size, nth })
    }
}

impl std::fmt::Display for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}-{}", self.hash, self.size)?;
        if self.nth > 1 {
            write!(f, "-{}", self.nth)?;
        }
        Ok(())
    }
}

/// A kept version as memory holds it: what the cap, the collapse and the
/// lookups need. The id and title are in its line of the log, read when the
/// version is listed; memory holds a hash of the id, to find its versions.
#[derive(Clone, Debug)]
struct Entry {
    n: u64,
    path: StorePath,
    /// `id_hash` of the memory's id, 0 for none.
    id_hash: u64,
    why: Why,
    at: i64,
    object: Object,
    /// Start of the collapse window this version belongs to.
    window: i64,
    /// Whether it is the first version of its window.
    first: bool,
    /// Where its line starts in the log.
    offset: u64,
    /// How many versions refer to its object, if it is the version that
    /// stands for that object in [`Log::objects`]; 0 otherwise.
    refs: u32,
}

/// One line of the log.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Version {
        n: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path_hex: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        why: Why,
        at: i64,
        size: u64,
        object: String,
        window: i64,
        first: bool,
    },
    Drop {
        drop: u64,
    },
    /// The number the next version gets, at least (written by the sweep).
    Next {
        next: u64,
    },
}

impl Entry {
    fn to_line(&self, id: Option<String>, title: Option<String>) -> Line {
        let bytes = self.path.as_path().as_os_str().as_bytes();
        let (path, path_hex) = match std::str::from_utf8(bytes) {
            Ok(s) => (Some(s.to_owned()), None),
            Err(_) => (
                None,
                Some(bytes.iter().map(|b| format!("{b:02x}")).collect()),
            ),
        };
        Line::Version {
            n: self.n,
            path,
            path_hex,
            id,
            title,
            why: self.why,
            at: self.at,
            size: self.object.size,
            object: self.object.to_string(),
            window: self.window,
            first: self.first,
        }
    }

    /// This version as listings give it, with its id and title.
    fn version(&self, (id, title): (Option<String>, Option<String>)) -> Version {
        Version {
            n: self.n,
            path: self.path.clone(),
            id,
            title,
            why: self.why,
            at: self.at,
            size: self.object.size,
            object: self.object,
        }
    }
}

fn path_from(path: Option<String>, path_hex: Option<String>) -> Option<StorePath> {
    match (path, path_hex) {
        (Some(p), _) => StorePath::new(p),
        (None, Some(hex)) => {
            if hex.len() % 2 != 0 {
                return None;
            }
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect();
            StorePath::new(std::ffi::OsStr::from_bytes(&bytes?))
        }
        (None, None) => None,
    }
}

/// The hash of a memory's id in [`Entry::id_hash`]: never 0, which is
/// "no id".
fn id_hash(hasher: &hashbrown::DefaultHashBuilder, id: Option<&str>) -> u64 {
    id.map_or(0, |id| hasher.hash_one(id) | 1)
}

/// The versions in memory, about 170 bytes each with the path and the
/// indexes: a store deleting through the mount all day keeps a quarter of
/// a million of them under the default cap. The id and title stay in the
/// log, and the indexes hold only version numbers.
struct Log {
    /// Oldest first: the oldest go first when time or the cap runs out.
    /// Numbers, and offsets in the log, grow from front to back.
    versions: VecDeque<Entry>,
    next: u64,
    file: Option<File>,
    /// The log's length: where the next line goes.
    len: u64,
    /// For each object, the number of a version that refers to it and
    /// counts its references, hashed by the object.
    objects: HashTable<u64>,
    /// The size of the objects versions refer to.
    total: u64,
    /// The number of each path's newest version, hashed by the path, so a
    /// keep finds it without a scan of the log.
    newest: HashTable<u64>,
    hasher: hashbrown::DefaultHashBuilder,
}

/// Where version `n` is in `versions`.
fn position(versions: &VecDeque<Entry>, n: u64) -> Option<usize> {
    versions.binary_search_by_key(&n, |v| v.n).ok()
}

/// What [`Log::newest`] is indexed by.
fn by_path(version: &Entry) -> &StorePath {
    &version.path
}

/// What [`Log::objects`] is indexed by.
fn by_object(version: &Entry) -> &Object {
    &version.object
}

/// Whether an entry of an index by `key` numbers a version whose key is
/// `wanted`.
fn numbers<'a, K: PartialEq + 'a>(
    versions: &'a VecDeque<Entry>,
    key: fn(&Entry) -> &K,
    wanted: &'a K,
) -> impl Fn(&u64) -> bool + 'a {
    move |&n| position(versions, n).is_some_and(|i| key(&versions[i]) == wanted)
}

/// The hash of an entry of an index by `key`: its version's key's.
fn rehash<'a, K: std::hash::Hash + 'a>(
    versions: &'a VecDeque<Entry>,
    hasher: &'a hashbrown::DefaultHashBuilder,
    key: fn(&Entry) -> &K,
) -> impl Fn(&u64) -> u64 + 'a {
    move |&n| position(versions, n).map_or(0, |i| hasher.hash_one(key(&versions[i])))
}

impl Log {
    /// The log of `versions` (read from a log of `len` bytes, the ids
    /// hashed with `hasher`).
    fn new(
        versions: Vec<Entry>,
        next: u64,
        len: u64,
        hasher: hashbrown::DefaultHashBuilder,
    ) -> Log {
        let mut log = Log {
            versions: VecDeque::from(versions),
            next,
            file: None,
            len,
            objects: HashTable::new(),
            total: 0,
            newest: HashTable::new(),
            hasher,
        };
        log.recount();
        log
    }

    /// Counts the references to objects again (after versions were dropped
    /// in bulk).
    fn recount(&mut self) {
        self.objects.clear();
        self.total = 0;
        self.newest.clear();
        for i in 0..self.versions.len() {
            self.versions[i].refs = 0;
            self.count(i);
        }
        let (versions, hasher) = (&self.versions, &self.hasher);
        self.objects
            .shrink_to_fit(rehash(versions, hasher, by_object));
        self.newest.shrink_to_fit(rehash(versions, hasher, by_path));
        self.versions.shrink_to_fit();
    }

    /// Adds `version`.
    fn push(&mut self, version: Entry) {
        self.versions.push_back(version);
        self.count(self.versions.len() - 1);
    }

    /// Counts the `i`th version, the newest so far of its path, in
    /// `objects` and `newest`.
    fn count(&mut self, i: usize) {
        let (n, object) = (self.versions[i].n, self.versions[i].object);
        match self.holder_of(&object) {
            Some(holder) => self.versions[holder].refs += 1,
            None => {
                self.versions[i].refs = 1;
                self.total += object.size;
                let hash = self.hasher.hash_one(object);
                let (versions, hasher) = (&self.versions, &self.hasher);
                self.objects
                    .insert_unique(hash, n, rehash(versions, hasher, by_object));
            }
        }
        let (versions, hasher) = (&self.versions, &self.hasher);
        let path = &versions[i].path;
        let hash = hasher.hash_one(path);
        match self.newest.find_mut(hash, numbers(versions, by_path, path)) {
            Some(slot) => *slot = n,
            None => {
                self.newest
                    .insert_unique(hash, n, rehash(versions, hasher, by_path));
            }
        }
    }

    /// Where the version `index` (by `key`) holds for `wanted` is in
    /// `versions`.
    fn find<K: std::hash::Hash + PartialEq>(
        &self,
        index: &HashTable<u64>,
        key: fn(&Entry) -> &K,
        wanted: &K,
    ) -> Option<usize> {
        let hash = self.hasher.hash_one(wanted);
        let n = *index.find(hash, numbers(&self.versions, key, wanted))?;
        position(&self.versions, n)
    }

    /// Where the last version of `path` is in `versions`.
    fn last_of(&self, path: &StorePath) -> Option<usize> {
        self.find(&self.newest, by_path, path)
    }

    /// Where the version that counts the references to `object` is in
    /// `versions`, if any version refers to it.
    fn holder_of(&self, object: &Object) -> Option<usize> {
        self.find(&self.objects, by_object, object)
    }

    /// Drops the `i`th version; returns it, and its object if no version
    /// refers to that object any more.
    fn remove(&mut self, i: usize) -> Option<(Entry, Option<Object>)> {
        let (n, hash) = {
            let version = self.versions.get(i)?;
            (version.n, self.hasher.hash_one(&version.path))
        };
        if let Ok(slot) = self.newest.find_entry(hash, |&m| m == n) {
            slot.remove();
            // An older version of the path becomes its newest. Versions go
            // oldest first, or (collapsed) behind a newer one of their
            // path, so this scan is rare.
            let path = &self.versions[i].path;
            if let Some(older) = self.versions.range(..i).rev().find(|v| v.path == *path) {
                self.newest.insert_unique(
                    hash,
                    older.n,
                    rehash(&self.versions, &self.hasher, by_path),
                );
            }
        }
        let (object, refs) = (self.versions[i].object, self.versions[i].refs);
        let mut unreferenced = None;
        if refs == 0 {
            // Another version counts the references.
            if let Some(holder) = self.holder_of(&object) {
                self.versions[holder].refs = self.versions[holder].refs.saturating_sub(1);
            }
        } else {
            let hash = self.hasher.hash_one(object);
            if let Ok(slot) = self.objects.find_entry(hash, |&m| m == n) {
                slot.remove();
            }
            // Another version of the same content takes the count over. A
            // content is rarely kept twice, so this scan is rare too.
            let heir = (refs > 1)
                .then(|| {
                    (0..self.versions.len()).find(|&j| j != i && self.versions[j].object == object)
                })
                .flatten();
            match heir {
                Some(j) => {
                    self.versions[j].refs = refs - 1;
                    let heir = self.versions[j].n;
                    self.objects.insert_unique(
                        hash,
                        heir,
                        rehash(&self.versions, &self.hasher, by_object),
                    );
                }
                None => {
                    self.total = self.total.saturating_sub(object.size);
                    unreferenced = Some(object);
                }
            }
        }
        let version = self.versions.remove(i)?;
        Some((version, unreferenced))
    }
}

/// The kept versions of one store.
pub struct History {
    dir: PathBuf,
    settings: HistorySettings,
    log: Mutex<Log>,
    /// The id of a memory whose file has none (the one the index keeps),
    /// so that a version can be found by it too.
    ids: Option<IdSource>,
}

/// Where [`History`] finds the id of a memory without `id:` in its file.
pub type IdSource = Box<dyn Fn(&StorePath) -> Option<String> + Send + Sync>;

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("dir", &self.dir)
            .field("versions", &self.log.lock().versions.len())
            .finish()
    }
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn private_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
}

impl History {
    /// Opens (or starts) the history kept in `state_dir`.
    pub fn open(state_dir: &Path, settings: HistorySettings) -> io::Result<History> {
        let dir = state_dir.join(HISTORY_DIR);
        private_dir(&dir.join(OBJECTS_DIR))?;
        let hasher = hashbrown::DefaultHashBuilder::default();
        let (versions, next, len) = match File::open(dir.join(LOG_FILE)) {
            Ok(file) => parse_log(io::BufReader::new(file), &hasher)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), 1, 0),
            Err(e) => return Err(e),
        };
        Ok(History {
            dir,
            settings,
            log: Mutex::new(Log::new(versions, next, len, hasher)),
            ids: None,
        })
    }

    /// Records, with each version of a memory whose file has no `id:`, the
    /// id `ids` gives for its path (it must not block: it is asked while a
    /// delete through the mount waits).
    pub fn with_ids(mut self, ids: IdSource) -> History {
        self.ids = Some(ids);
        self
    }

    /// The settings in force.
    pub fn settings(&self) -> HistorySettings {
        self.settings
    }

    /// Keeps the content of the regular file at `path` before it is lost
    /// for `why`. Anything but a regular file, and a file over the size
    /// cap, is left alone. Returns the version's number, if one was kept.
    pub fn keep(
        &self,
        store: &Store,
        path: &StorePath,
        why: Why,
        how: Keep,
    ) -> io::Result<Option<u64>> {
        if self.settings.max_bytes == 0 {
            return Ok(None);
        }
        let file = match store.open_file(path, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
            Ok(file) => file,
            // Nothing there, a symlink, or a special file: nothing to keep.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ELOOP | libc::ENXIO | libc::EISDIR)
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let st = super::fstat(&file)?;
        if st.kind != super::FileKind::File || st.size > self.settings.max_bytes {
            return Ok(None);
        }
        if st.size == 0 && why == Why::Truncated {
            return Ok(None);
        }
        let (path, why) = match (FileRole::of(path, st.size), why) {
            (FileRole::Scratch, _) => return Ok(None),
            // What the file held before the save that made the backup.
            (FileRole::BackupOf(original), Why::Deleted)
                if store
                    .stat(&original)
                    .is_ok_and(|st| st.kind == super::FileKind::File) =>
            {
                (original, Why::Overwritten)
            }
            _ => (path.clone(), why),
        };
        let link_from = (how == Keep::LinkOrCopy && st.nlink == 1).then_some(&file);
        if st.size > PARSE_LIMIT as u64 {
            // Read as it goes, never whole into memory.
            let content = Content::File {
                file: &file,
                size: st.size,
            };
            return self.keep_content(&path, content, (None, None), why, link_from);
        }
        let mut bytes = Vec::with_capacity(st.size as usize);
        super::read_rest(&file, &mut bytes)?;
        let described = describe(&path, &bytes);
        self.keep_content(&path, Content::Bytes(&bytes), described, why, link_from)
    }

    /// Keeps `bytes` as what `path` held before it was lost for `why`.
    pub fn keep_bytes(&self, path: &StorePath, bytes: &[u8], why: Why) -> io::Result<Option<u64>> {
        if bytes.len() as u64 > self.settings.max_bytes || self.settings.max_bytes == 0 {
            return Ok(None);
        }
        let described = describe(path, bytes);
        self.keep_content(path, Content::Bytes(bytes), described, why, None)
    }

    fn keep_content(
        &self,
        path: &StorePath,
        content: Content<'_>,
        (id, title): (Option<String>, Option<String>),
        why: Why,
        link_from: Option<&File>,
    ) -> io::Result<Option<u64>> {
        let is_md = path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        let id = match (id, &self.ids) {
            (None, Some(ids)) if is_md => ids(path),
            (id, _) => id,
        };
        let now = now_unix();
        let hash = content.hash()?;
        let mut log = self.log.lock();
        let last = log.last_of(path);
        let object = self.store_object(content, hash, link_from)?;
        let collapse = self.settings.collapse.as_secs() as i64;
        let (window, first, drop) = match last.map(|i| (i, &log.versions[i])) {
            // The same content again: already kept (a delete is still
            // recorded, for the trash).
            Some((_, v))
                if v.object == object
                    && (v.why == why || why != Why::Deleted)
                    && now - v.window < collapse.max(1) =>
            {
                return Ok(None);
            }
            Some((i, v)) if now - v.window < collapse => {
                let drop = (!v.first).then_some(i);
                (v.window, false, drop)
            }
            _ => (now, true, None),
        };
        let n = log.next;
        log.next += 1;
        let version = Entry {
            n,
            path: path.clone(),
            id_hash: id_hash(&log.hasher, id.as_deref()),
            why,
            at: now,
            object,
            window,
            first,
            offset: log.len,
            refs: 0,
        };
        let mut lines = vec![version.to_line(id, title)];
        log.push(version);
        let mut unreferenced = Vec::new();
        if let Some((dropped, object)) = drop.and_then(|i| log.remove(i)) {
            lines.push(Line::Drop { drop: dropped.n });
            unreferenced.extend(object);
        }
        // Time and the cap are kept as versions come, too, so a store
        // nobody sweeps (no organizer) stays bounded; the version just
        // kept fits the cap alone.
        let keep = i64::try_from(self.settings.keep.as_secs()).unwrap_or(i64::MAX);
        while log.versions.len() > 1
            && (log.total > self.settings.max_bytes
                || now.saturating_sub(log.versions[0].at) >= keep)
            && let Some((dropped, object)) = log.remove(0)
        {
            lines.push(Line::Drop { drop: dropped.n });
            unreferenced.extend(object);
        }
        let offset = self.append(&mut log, &lines)?;
        if let Some(version) = log.versions.back_mut() {
            version.offset = offset;
        }
        for object in unreferenced {
            let _ = fs::remove_file(self.object_path(object));
        }
        Ok(Some(n))
    }

    /// Appends `lines` to the log; returns where the first one starts.
    fn append(&self, log: &mut Log, lines: &[Line]) -> io::Result<u64> {
        let mut text = Vec::new();
        if log.file.is_none() {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .mode(0o600)
                .open(self.dir.join(LOG_FILE))?;
            // The log as it is, should anything but this history have
            // changed it. A line a crash cut short is ended, so that it
            // does not take the next one with it.
            log.len = file.metadata()?.len();
            if log.len > 0 {
                use std::os::unix::fs::FileExt;
                let mut last = [0];
                file.read_exact_at(&mut last, log.len - 1)?;
                if last != *b"\n" {
                    text.push(b'\n');
                }
            }
            log.file = Some(file);
        }
        let start = log.len + text.len() as u64;
        for line in lines {
            serde_json::to_writer(&mut text, line).map_err(io::Error::other)?;
            text.push(b'\n');
        }
        let Some(file) = log.file.as_mut() else {
            return Err(io::Error::other("the version log is not open"));
        };
        let written = file.write_all(&text);
        log.len = match &written {
            Ok(()) => log.len + text.len() as u64,
            // Part of the text may be there: the next line starts at the end.
            Err(_) => file.metadata().map_or(log.len, |m| m.len()),
        };
        written.map(|()| start)
    }

    fn object_path(&self, object: Object) -> PathBuf {
        self.dir.join(OBJECTS_DIR).join(object.to_string())
    }

    /// Stores `bytes` as an object (a hard link of `link_from` when it can)
    /// and returns its name; equal content already stored is reused.
    fn store_object(
        &self,
        content: Content<'_>,
        hash: u64,
        link_from: Option<&File>,
    ) -> io::Result<Object> {
        for nth in 1..=MAX_NTH {
            let object = Object {
                hash,
                size: content.len(),
                nth,
            };
            let path = self.object_path(object);
            match content.equals(&path) {
                Ok(true) => {
                    unshare(&path)?;
                    return Ok(object);
                }
                Ok(false) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            if let Some(file) = link_from
                && link_fd(file, &path).is_ok()
            {
                return Ok(object);
            }
            content.write_to(&path)?;
            return Ok(object);
        }
        Err(io::Error::other(format!(
            "too many different contents share the hash {hash:016x} and size {}",
            content.len()
        )))
    }

    /// How many versions are kept, and the bytes their contents take.
    pub fn usage(&self) -> (usize, u64) {
        let log = self.log.lock();
        (log.versions.len(), log.total)
    }

    /// Every kept version, oldest first.
    pub fn versions(&self) -> Vec<Version> {
        let entries: Vec<Entry> = self.log.lock().versions.iter().cloned().collect();
        let mut lines = LogReader::new(self);
        entries
            .iter()
            .map(|e| e.version(lines.describe(e)))
            .collect()
    }

    /// The versions of the file at `path`, or of the memory `id`, oldest
    /// first.
    pub fn versions_of(&self, path: Option<&StorePath>, id: Option<&str>) -> Vec<Version> {
        let candidates: Vec<Entry> = {
            let log = self.log.lock();
            let id_hash = id_hash(&log.hasher, id);
            log.versions
                .iter()
                .filter(|v| Some(&v.path) == path || (id_hash != 0 && v.id_hash == id_hash))
                .cloned()
                .collect()
        };
        let mut lines = LogReader::new(self);
        candidates
            .iter()
            .map(|e| e.version(lines.describe(e)))
            // A hash of the id matched: the id itself must.
            .filter(|v| Some(&v.path) == path || (id.is_some() && v.id.as_deref() == id))
            .collect()
    }

    /// The newest deleted version of each path, newest first (whether the
    /// path is free again is for the caller to see). Each is read from the
    /// log as the caller takes it.
    pub fn deleted(&self) -> impl Iterator<Item = Version> + '_ {
        let entries: Vec<Entry> = {
            let log = self.log.lock();
            let mut seen = HashSet::new();
            log.versions
                .iter()
                .rev()
                .filter(|v| seen.insert(&v.path) && v.why == Why::Deleted)
                .cloned()
                .collect()
        };
        let mut lines = LogReader::new(self);
        entries
            .into_iter()
            .map(move |e| e.version(lines.describe(&e)))
    }

    /// The bytes a version kept.
    pub fn read(&self, version: &Version) -> io::Result<Vec<u8>> {
        fs::read(self.object_path(version.object))
    }

    /// Drops versions older than the settings keep them and, oldest first,
    /// those over the size cap; removes the objects nothing refers to and
    /// rewrites the log compactly. Returns how many versions were dropped.
    pub fn sweep(&self) -> io::Result<usize> {
        self.sweep_at(now_unix())
    }

    fn sweep_at(&self, now: i64) -> io::Result<usize> {
        let mut log = self.log.lock();
        let before = log.versions.len();
        let keep = i64::try_from(self.settings.keep.as_secs()).unwrap_or(i64::MAX);
        log.versions.retain(|v| now.saturating_sub(v.at) < keep);
        log.recount();
        while log.total > self.settings.max_bytes && log.remove(0).is_some() {}
        let dropped = before - log.versions.len();
        for entry in fs::read_dir(self.dir.join(OBJECTS_DIR))? {
            let entry = entry?;
            let name = entry.file_name();
            let live = name
                .to_str()
                .and_then(Object::parse)
                .is_some_and(|object| log.holder_of(&object).is_some());
            if !live {
                let _ = fs::remove_file(entry.path());
            } else if let Err(e) = unshare(&entry.path()) {
                tracing::warn!("history: cannot copy {}: {e}", entry.path().display());
            }
        }
        // The new log takes each version's id and title from the old one,
        // a line at a time: the log is never held whole.
        let mut lines = LogReader::new(self);
        let mut offsets = Vec::with_capacity(log.versions.len());
        let mut len = 0;
        write_object_with(&self.dir.join(LOG_FILE), |file| {
            let mut out = io::BufWriter::new(file);
            let mut at = 0;
            let mut line = Vec::new();
            serde_json::to_writer(&mut line, &Line::Next { next: log.next })
                .map_err(io::Error::other)?;
            for v in &log.versions {
                line.push(b'\n');
                out.write_all(&line)?;
                at += line.len() as u64;
                offsets.push(at);
                line.clear();
                let (id, title) = lines.read(v.offset, v.n).unwrap_or_default();
                serde_json::to_writer(&mut line, &v.to_line(id, title))
                    .map_err(io::Error::other)?;
            }
            line.push(b'\n');
            out.write_all(&line)?;
            len = at + line.len() as u64;
            out.flush()
        })?;
        for (v, offset) in log.versions.iter_mut().zip(offsets) {
            v.offset = offset;
        }
        log.len = len;
        log.file = None;
        Ok(dropped)
    }
}

/// Reads versions' lines from the log, for their id and title.
struct LogReader<'h> {
    history: &'h History,
    file: Option<File>,
}

/// The longest line read back: a path of 4 KiB and a title, with room.
const MAX_LINE: usize = 1 << 20;

impl<'h> LogReader<'h> {
    fn new(history: &'h History) -> Self {
        LogReader {
            history,
            file: None,
        }
    }

    /// The id and title the log gives `version`: none if its line cannot
    /// be read.
    fn describe(&mut self, version: &Entry) -> (Option<String>, Option<String>) {
        if let Some(found) = self.read(version.offset, version.n) {
            return found;
        }
        // The log was rewritten (a sweep) since `version` was copied out
        // of it: look for it again.
        self.file = None;
        let offset = {
            let log = self.history.log.lock();
            position(&log.versions, version.n).map(|i| log.versions[i].offset)
        };
        offset
            .and_then(|offset| self.read(offset, version.n))
            .unwrap_or_default()
    }

    fn read(&mut self, offset: u64, n: u64) -> Option<(Option<String>, Option<String>)> {
        use std::os::unix::fs::FileExt;
        if self.file.is_none() {
            self.file = File::open(self.history.dir.join(LOG_FILE)).ok();
        }
        let file = self.file.as_ref()?;
        let mut line = Vec::new();
        let mut buf = [0; 1024];
        loop {
            let got = file.read_at(&mut buf, offset + line.len() as u64).ok()?;
            if got == 0 {
                break;
            }
            if let Some(end) = memchr::memchr(b'\n', &buf[..got]) {
                line.extend_from_slice(&buf[..end]);
                break;
            }
            line.extend_from_slice(&buf[..got]);
            if line.len() > MAX_LINE {
                return None;
            }
        }
        match serde_json::from_slice(&line) {
            Ok(Line::Version {
                n: m, id, title, ..
            }) if m == n => Some((id, title)),
            _ => None,
        }
    }
}

/// Content to keep: in memory, or read from the file as it goes (a large
/// file is never held whole).
#[derive(Clone, Copy)]
enum Content<'a> {
    Bytes(&'a [u8]),
    File { file: &'a File, size: u64 },
}

/// How much of a large file is read at a time.
const CHUNK: usize = 1 << 16;

impl Content<'_> {
    fn len(&self) -> u64 {
        match self {
            Content::Bytes(bytes) => bytes.len() as u64,
            Content::File { size, .. } => *size,
        }
    }

    /// Calls `each` with the content, a chunk at a time, while it returns
    /// true; returns how many bytes it was given.
    fn chunks(&self, mut each: impl FnMut(&[u8]) -> io::Result<bool>) -> io::Result<u64> {
        use std::os::unix::fs::FileExt;
        match self {
            Content::Bytes(bytes) => {
                each(bytes)?;
                Ok(bytes.len() as u64)
            }
            Content::File { file, size } => {
                let mut buf = vec![0; CHUNK];
                let mut at = 0;
                while at < *size {
                    let want = usize::try_from(*size - at).map_or(CHUNK, |left| left.min(CHUNK));
                    let n = file.read_at(&mut buf[..want], at)?;
                    if n == 0 {
                        break;
                    }
                    at += n as u64;
                    if !each(&buf[..n])? {
                        break;
                    }
                }
                Ok(at)
            }
        }
    }

    /// FNV-1a, as [`fnv1a64`] computes it.
    fn hash(&self) -> io::Result<u64> {
        if let Content::Bytes(bytes) = self {
            return Ok(fnv1a64(bytes));
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        self.chunks(|chunk| {
            for &byte in chunk {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
            Ok(true)
        })?;
        Ok(hash)
    }

    /// Whether the file at `path` holds exactly this content (`NotFound`
    /// when there is none).
    fn equals(&self, path: &Path) -> io::Result<bool> {
        if let Content::Bytes(bytes) = self {
            return fs::read(path).map(|existing| existing == *bytes);
        }
        let mut existing = File::open(path)?;
        if existing.metadata()?.len() != self.len() {
            return Ok(false);
        }
        let mut theirs = vec![0; CHUNK];
        let mut same = true;
        let compared = self.chunks(|ours| {
            existing.read_exact(&mut theirs[..ours.len()])?;
            same = theirs[..ours.len()] == *ours;
            Ok(same)
        })?;
        // A file that shrank meanwhile is not this content.
        Ok(same && compared == self.len())
    }

    /// Writes the content as a private file at `path`.
    fn write_to(&self, path: &Path) -> io::Result<()> {
        match self {
            Content::Bytes(bytes) => write_object(path, bytes),
            Content::File { .. } => write_object_with(path, |out| {
                self.chunks(|chunk| out.write_all(chunk).map(|()| true))
                    .map(drop)
            }),
        }
    }
}

/// Whether a file is a memory, or what a tool keeps beside memories.
#[derive(Debug, PartialEq, Eq)]
enum FileRole {
    /// Never a memory, and keeping it would fill the trash (and the cap)
    /// with files whose restore confuses the tool that made them: an
    /// editor's swap, lock, auto-save or probe file (vim's `.X.swp`, its
    /// empty `4913` probe, Emacs's `#X#`, LibreOffice's `.~lock.X#`,
    /// gedit's `.goutputstream-*`, Kate's `X.kate-swp`), and anything in a
    /// dot-folder, where tools keep their own state (`.git/`, whose every
    /// commit and gc removes lock files and objects; `.obsidian/`).
    Scratch,
    /// `X~`: a backup of `X`, which vim makes by renaming `X` before each
    /// save and removes after it. Its content is an earlier version of `X`.
    BackupOf(StorePath),
    /// Anything else.
    Other,
}

impl FileRole {
    /// What the file at `path`, of `size` bytes, is.
    fn of(path: &StorePath, size: u64) -> FileRole {
        let Some(name) = path.file_name().map(OsStrExt::as_bytes) else {
            return FileRole::Other;
        };
        let in_dot_folder = path.parent().is_some_and(|dir| {
            dir.as_path()
                .components()
                .any(|c| c.as_os_str().as_bytes().starts_with(b"."))
        });
        if in_dot_folder {
            return FileRole::Scratch;
        }
        let vim_swap = name.len() > 5
            && name[0] == b'.'
            && matches!(
                &name[name.len() - 4..],
                [b'.', b's', b'v' | b'w', b'a'..=b'z']
            );
        let vim_probe = size == 0
            && name.iter().all(u8::is_ascii_digit)
            && std::str::from_utf8(name)
                .ok()
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n >= 4913 && (n - 4913) % 123 == 0);
        let emacs_auto_save = name.len() > 2 && name[0] == b'#' && name.ends_with(b"#");
        let office_lock = name.starts_with(b".~lock.") && name.ends_with(b"#");
        if vim_swap
            || vim_probe
            || emacs_auto_save
            || office_lock
            || name.starts_with(b".goutputstream-")
            || name.ends_with(b".kate-swp")
        {
            return FileRole::Scratch;
        }
        match name.strip_suffix(b"~") {
            Some(original) if !original.is_empty() => path
                .parent()
                .and_then(|dir| dir.join(std::ffi::OsStr::from_bytes(original)))
                .map_or(FileRole::Other, FileRole::BackupOf),
            _ => FileRole::Other,
        }
    }
}

/// The id and title of a markdown memory's content.
fn describe(path: &StorePath, bytes: &[u8]) -> (Option<String>, Option<String>) {
    let is_md = path
        .as_path()
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    if !is_md || bytes.len() > PARSE_LIMIT {
        return (None, None);
    }
    let stem = path
        .as_path()
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match crate::memory::id_and_title(&stem, bytes) {
        Some((id, title)) => (id, Some(title)),
        None => (None, None),
    }
}

/// The versions a log holds, the number the next one gets (past every
/// number the log ever gave out, dropped ones included) and the log's
/// length.
fn parse_log(
    mut log: impl io::BufRead,
    hasher: &hashbrown::DefaultHashBuilder,
) -> io::Result<(Vec<Entry>, u64, u64)> {
    let mut versions: Vec<Entry> = Vec::new();
    // Numbers are never given out twice, so the dropped ones can go in
    // one pass at the end.
    let mut dropped = HashSet::new();
    let mut next = 1;
    let mut bad = 0;
    let mut offset = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = log.read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        let at = offset;
        offset += read as u64;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Line>(&line) {
            Ok(Line::Version {
                n,
                path,
                path_hex,
                id,
                title: _,
                why,
                at: when,
                size,
                object,
                window,
                first,
            }) => {
                next = next.max(n.saturating_add(1));
                let object = Object::parse(&object).filter(|o| o.size == size);
                match (path_from(path, path_hex), object) {
                    (Some(path), Some(object)) => versions.push(Entry {
                        n,
                        path,
                        id_hash: id_hash(hasher, id.as_deref()),
                        why,
                        at: when,
                        object,
                        window,
                        first,
                        offset: at,
                        refs: 0,
                    }),
                    _ => bad += 1,
                }
            }
            Ok(Line::Drop { drop }) => {
                dropped.insert(drop);
            }
            Ok(Line::Next { next: n }) => next = next.max(n),
            Err(_) => bad += 1,
        }
    }
    if bad > 0 {
        tracing::warn!("history: skipped {bad} unreadable lines of the version log");
    }
    versions.retain(|v| !dropped.contains(&v.n));
    Ok((versions, next, offset))
}

/// A hard link of an open file at `to` (through `/proc/self/fd`, which
/// needs no privilege for a file that still has a name; on macOS through
/// the path the file has now, checked to be the same file after).
fn link_fd(file: &File, to: &Path) -> io::Result<()> {
    #[cfg(not(target_os = "linux"))]
    let to_path = to;
    let from = super::sys::proc_fd_path(file.as_fd());
    let to = std::ffi::CString::new(to.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: NUL-terminated paths.
    let ret = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // A path, unlike /proc/self/fd, may name another file by now: keep the
    // link only if it is the open file (the caller copies otherwise).
    #[cfg(not(target_os = "linux"))]
    {
        use std::os::unix::fs::MetadataExt;
        let (open, linked) = (file.metadata()?, fs::symlink_metadata(to_path)?);
        if (open.dev(), open.ino()) != (linked.dev(), linked.ino()) {
            let _ = fs::remove_file(to_path);
            return Err(io::Error::other("the file was renamed while it was kept"));
        }
    }
    Ok(())
}

/// Makes the object at `path` a copy of its own if it is still a hard link
/// of a file with a name in the store: one whose delete or rename failed
/// after it was kept (or is under way), which could still be truncated or
/// written in place.
fn unshare(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if fs::symlink_metadata(path)?.nlink() > 1 {
        write_object(path, &fs::read(path)?)?;
    }
    Ok(())
}

/// Writes a private file whole (a temp name, then a rename).
fn write_object(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_object_with(path, |file| file.write_all(bytes))
}

/// Writes a private file whole with `fill` (a temp name, then a rename).
fn write_object_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        fill(&mut file)?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Removing a path's newest version while an older one stays makes the
    /// older one its newest (no keep does this today; the log allows it).
    #[test]
    fn an_older_version_becomes_the_newest_when_the_newest_goes() {
        let object = |hash| Object {
            hash,
            size: 1,
            nth: 1,
        };
        let version = |n: u64, path: &str, hash| Entry {
            n,
            path: StorePath::new(path).unwrap(),
            id_hash: 0,
            why: Why::Deleted,
            at: 0,
            object: object(hash),
            window: 0,
            first: true,
            offset: 0,
            refs: 0,
        };
        let a = StorePath::new("a.md").unwrap();
        let mut log = Log::new(
            vec![
                version(1, "a.md", 1),
                version(2, "b.md", 1),
                version(3, "a.md", 2),
            ],
            4,
            0,
            Default::default(),
        );
        assert_eq!(log.last_of(&a), Some(2));
        let (gone, unreferenced) = log.remove(2).unwrap();
        assert_eq!((gone.n, unreferenced), (3, Some(object(2))));
        assert_eq!(log.last_of(&a), Some(0));
        let (_, unreferenced) = log.remove(0).unwrap();
        assert_eq!(unreferenced, None, "b.md still refers to the first object");
        assert_eq!(log.last_of(&a), None);
        assert_eq!(log.total, 1);
    }
    use std::os::unix::fs::MetadataExt;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        store: Store,
        state: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let state = dir.path().join("state");
        fs::create_dir_all(&root).unwrap();
        let store = Store::open(&root).unwrap();
        Fixture {
            _dir: dir,
            root,
            store,
            state,
        }
    }

    fn p(s: &str) -> StorePath {
        StorePath::new(s).unwrap()
    }

    fn settings(collapse: u64) -> HistorySettings {
        HistorySettings {
            collapse: Duration::from_secs(collapse),
            ..HistorySettings::default()
        }
    }

    #[test]
    fn a_deleted_file_is_kept_as_a_hard_link_and_read_back() {
        let f = fixture();
        let h = History::open(&f.state, settings(60)).unwrap();
        fs::write(
            f.root.join("a.md"),
            "---\nid: abc\ntitle: Alpha\n---\nbody\n",
        )
        .unwrap();
        let ino = fs::metadata(f.root.join("a.md")).unwrap().ino();
        let n = h
            .keep(&f.store, &p("a.md"), Why::Deleted, Keep::LinkOrCopy)
            .unwrap()
            .unwrap();
        fs::remove_file(f.root.join("a.md")).unwrap();
        let v = &h.versions_of(None, Some("abc"))[0];
        assert_eq!(v.n, n);
        assert_eq!(v.title.as_deref(), Some("Alpha"));
        assert_eq!(
            h.read(v).unwrap(),
            b"---\nid: abc\ntitle: Alpha\n---\nbody\n"
        );
        let object = fs::metadata(h.object_path(v.object)).unwrap();
        assert_eq!(object.ino(), ino, "kept by a hard link, not a copy");
        assert_eq!(h.deleted().count(), 1);
        // The log survives a reopen.
        drop(h);
        let h = History::open(&f.state, settings(60)).unwrap();
        assert_eq!(h.versions_of(Some(&p("a.md")), None).len(), 1);
    }

    /// With the state dir on another filesystem (here tmpfs), no link can
    /// be made: the bytes are copied.
    #[test]
    fn a_state_dir_on_another_filesystem_gets_copies() {
        let f = fixture();
        let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("skipped: no /dev/shm");
            return;
        };
        let store_dev = fs::metadata(&f.root).unwrap().dev();
        if fs::metadata(shm.path()).unwrap().dev() == store_dev {
            eprintln!("skipped: /dev/shm is on the store's filesystem");
            return;
        }
        let h = History::open(shm.path(), settings(60)).unwrap();
        fs::write(f.root.join("a.md"), "across").unwrap();
        let ino = fs::metadata(f.root.join("a.md")).unwrap().ino();
        h.keep(&f.store, &p("a.md"), Why::Deleted, Keep::LinkOrCopy)
            .unwrap()
            .unwrap();
        fs::remove_file(f.root.join("a.md")).unwrap();
        let v = &h.versions()[0];
        assert_eq!(h.read(v).unwrap(), b"across");
        let object = fs::metadata(h.object_path(v.object)).unwrap();
        assert_ne!((object.dev(), object.ino()), (store_dev, ino));
    }

    #[test]
    fn a_truncation_is_kept_as_a_copy() {
        let f = fixture();
        let h = History::open(&f.state, settings(60)).unwrap();
        fs::write(f.root.join("t.md"), "before").unwrap();
        h.keep(&f.store, &p("t.md"), Why::Truncated, Keep::Copy)
            .unwrap();
        // Truncate in place and write again: the kept copy does not change.
        let file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(f.root.join("t.md"))
            .unwrap();
        (&file).write_all(b"after").unwrap();
        let v = &h.versions()[0];
        assert_eq!(h.read(v).unwrap(), b"before");
    }

    #[test]
    fn equal_content_is_stored_once() {
        let f = fixture();
        let h = History::open(&f.state, settings(0)).unwrap();
        for name in ["a.md", "b.md"] {
            fs::write(f.root.join(name), "same").unwrap();
            h.keep(&f.store, &p(name), Why::Deleted, Keep::Copy)
                .unwrap();
        }
        assert_eq!(h.versions().len(), 2);
        let objects = fs::read_dir(f.state.join("history/objects"))
            .unwrap()
            .count();
        assert_eq!(objects, 1);
    }

    #[test]
    fn a_burst_keeps_its_first_and_its_latest_version() {
        let f = fixture();
        let h = History::open(&f.state, settings(60)).unwrap();
        for content in ["v1", "v2", "v3", "v4"] {
            h.keep_bytes(&p("n.md"), content.as_bytes(), Why::Overwritten)
                .unwrap();
        }
        let kept: Vec<Vec<u8>> = h.versions().iter().map(|v| h.read(v).unwrap()).collect();
        assert_eq!(kept, [b"v1".to_vec(), b"v4".to_vec()]);
        // The dropped versions' objects are gone too.
        let objects = fs::read_dir(f.state.join("history/objects"))
            .unwrap()
            .count();
        assert_eq!(objects, 2);
        // Without collapsing, every version stays.
        let g = History::open(&f.state.join("other"), settings(0)).unwrap();
        for content in ["v1", "v2", "v3"] {
            g.keep_bytes(&p("n.md"), content.as_bytes(), Why::Overwritten)
                .unwrap();
        }
        assert_eq!(g.versions().len(), 3);
        // The collapse survives a reopen.
        drop(h);
        let h = History::open(&f.state, settings(60)).unwrap();
        assert_eq!(h.versions().len(), 2);
    }

    #[test]
    fn versions_the_cap_drops_as_they_come_stay_dropped_after_a_reopen() {
        let f = fixture();
        let capped = || HistorySettings {
            keep: Duration::from_secs(100),
            max_bytes: 10,
            collapse: Duration::ZERO,
        };
        let h = History::open(&f.state, capped()).unwrap();
        for name in ["a.md", "b.md", "c.md", "d.md", "e.md"] {
            h.keep_bytes(&p(name), name.repeat(2).as_bytes(), Why::Deleted)
                .unwrap();
        }
        let paths = |h: &History| -> Vec<String> {
            h.versions().iter().map(|v| v.path.to_string()).collect()
        };
        // Eight bytes each under a cap of ten: only the newest fits.
        assert_eq!(paths(&h), ["e.md"]);
        drop(h);
        let h = History::open(&f.state, capped()).unwrap();
        assert_eq!(paths(&h), ["e.md"]);
        assert_eq!(h.usage(), (1, 8));
    }

    #[test]
    fn the_sweep_expires_old_versions_and_enforces_the_cap() {
        let f = fixture();
        let h = History::open(&f.state, settings(0)).unwrap();
        h.keep_bytes(&p("a.md"), b"aaaa", Why::Deleted).unwrap();
        h.keep_bytes(&p("b.md"), b"bbbb", Why::Deleted).unwrap();
        let last = h
            .keep_bytes(&p("c.md"), b"cccc", Why::Deleted)
            .unwrap()
            .unwrap();
        drop(h);
        // The cap was lowered in config.yaml: 12 bytes over a cap of 10,
        // the oldest goes.
        let h = History::open(
            &f.state,
            HistorySettings {
                keep: Duration::from_secs(100),
                max_bytes: 10,
                collapse: Duration::ZERO,
            },
        )
        .unwrap();
        assert_eq!(h.sweep_at(now_unix()).unwrap(), 1);
        let paths: Vec<String> = h.versions().iter().map(|v| v.path.to_string()).collect();
        assert_eq!(paths, ["b.md", "c.md"]);
        assert_eq!(
            fs::read_dir(f.state.join("history/objects"))
                .unwrap()
                .count(),
            2
        );
        // Past the keep time, everything goes.
        assert_eq!(h.sweep_at(now_unix() + 1000).unwrap(), 2);
        assert!(h.versions().is_empty());
        drop(h);
        let h = History::open(&f.state, HistorySettings::default()).unwrap();
        assert!(h.versions().is_empty());
        // Numbers are not reused after a sweep emptied the log: version
        // `last` never means another content.
        let n = h.keep_bytes(&p("d.md"), b"d", Why::Deleted).unwrap();
        assert_eq!(n, Some(last + 1));
        drop(h);
        let h = History::open(&f.state, HistorySettings::default()).unwrap();
        let n = h.keep_bytes(&p("e.md"), b"e", Why::Deleted).unwrap();
        assert_eq!(n, Some(last + 2));
    }

    /// Without a sweep (a mount with no organizer), each version kept
    /// makes room for itself: the oldest go once over the cap, and those
    /// past their time go too.
    #[test]
    fn the_cap_and_the_time_hold_without_a_sweep() {
        let f = fixture();
        let h = History::open(
            &f.state,
            HistorySettings {
                keep: Duration::from_secs(100),
                max_bytes: 10,
                collapse: Duration::ZERO,
            },
        )
        .unwrap();
        h.keep_bytes(&p("a.md"), b"aaaa", Why::Deleted).unwrap();
        h.keep_bytes(&p("b.md"), b"bbbb", Why::Deleted).unwrap();
        // Equal content is counted once: 8 bytes, not 12.
        h.keep_bytes(&p("b2.md"), b"bbbb", Why::Deleted).unwrap();
        assert_eq!(h.versions().len(), 3);
        h.keep_bytes(&p("c.md"), b"cccc", Why::Deleted).unwrap();
        let paths: Vec<String> = h.versions().iter().map(|v| v.path.to_string()).collect();
        assert_eq!(paths, ["b.md", "b2.md", "c.md"]);
        let objects = || {
            fs::read_dir(f.state.join("history/objects"))
                .unwrap()
                .count()
        };
        assert_eq!(objects(), 2, "a's object went with it");
        // b's versions grow old; the next version kept drops them.
        for v in h.log.lock().versions.iter_mut().take(2) {
            v.at -= 1000;
        }
        h.keep_bytes(&p("d.md"), b"d", Why::Deleted).unwrap();
        let paths: Vec<String> = h.versions().iter().map(|v| v.path.to_string()).collect();
        assert_eq!(paths, ["c.md", "d.md"]);
        assert_eq!(objects(), 2);
        // The log on disk says the same.
        drop(h);
        let h = History::open(&f.state, HistorySettings::default()).unwrap();
        let paths: Vec<String> = h.versions().iter().map(|v| v.path.to_string()).collect();
        assert_eq!(paths, ["c.md", "d.md"]);
    }

    /// A version kept as a hard link stays what it was even when the
    /// change that was to take the file's name failed, and the file lives
    /// on to be truncated and rewritten in place.
    #[test]
    fn a_kept_link_whose_file_keeps_its_name_is_copied_before_it_can_change() {
        let f = fixture();
        let h = History::open(&f.state, settings(60)).unwrap();
        let file = f.root.join("a.md");
        fs::write(&file, "before").unwrap();
        // A delete kept it, then failed: the object shares the inode.
        h.keep(&f.store, &p("a.md"), Why::Deleted, Keep::LinkOrCopy)
            .unwrap();
        assert_eq!(fs::metadata(&file).unwrap().nlink(), 2);
        // An O_TRUNC open keeps the same bytes first: the object they
        // would share becomes a copy of its own.
        h.keep(&f.store, &p("a.md"), Why::Truncated, Keep::Copy)
            .unwrap();
        assert_eq!(fs::metadata(&file).unwrap().nlink(), 1);
        let handle = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&file)
            .unwrap();
        (&handle).write_all(b"after").unwrap();
        for v in h.versions() {
            assert_eq!(h.read(&v).unwrap(), b"before", "version {}", v.n);
        }

        // The sweep does the same for a link left behind.
        fs::write(f.root.join("b.md"), "kept").unwrap();
        h.keep(&f.store, &p("b.md"), Why::Deleted, Keep::LinkOrCopy)
            .unwrap();
        assert_eq!(fs::metadata(f.root.join("b.md")).unwrap().nlink(), 2);
        h.sweep().unwrap();
        assert_eq!(fs::metadata(f.root.join("b.md")).unwrap().nlink(), 1);
        fs::write(f.root.join("b.md"), "changed").unwrap();
        let v = h.versions_of(Some(&p("b.md")), None).pop().unwrap();
        assert_eq!(h.read(&v).unwrap(), b"kept");
    }

    /// One step of [`the_log_and_the_objects_agree_after_any_sequence`].
    #[derive(Debug, Clone)]
    enum Step {
        /// Keeps content `content` of path `path` for `why` (as bytes, or
        /// from a file in the store that is then removed or truncated).
        Keep {
            path: u8,
            content: u8,
            why: u8,
            from_file: bool,
        },
        Sweep,
        Reopen,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            6 => (0u8..3, 0u8..5, 0u8..3, any::<bool>()).prop_map(
                |(path, content, why, from_file)| Step::Keep {
                    path,
                    content,
                    why,
                    from_file
                }
            ),
            1 => Just(Step::Sweep),
            1 => Just(Step::Reopen),
        ]
    }

    /// Contents of different sizes, one of them large enough to be read a
    /// chunk at a time.
    fn content_of(n: u8) -> Vec<u8> {
        match n {
            4 => (0..PARSE_LIMIT + 100).map(|i| (i % 199) as u8).collect(),
            n => format!("content {n}\n")
                .repeat(usize::from(n) + 1)
                .into_bytes(),
        }
    }

    /// What must hold after every step: the log on disk replays to what is
    /// in memory, the objects folder holds exactly the objects versions
    /// refer to, each version reads back what was kept, numbers are never
    /// given twice, the cap holds, and a path's newest loss is its newest
    /// version unless the cap took it.
    fn check(
        f: &Fixture,
        h: &History,
        kept: &HashMap<u64, Vec<u8>>,
        newest: &HashMap<String, Vec<u8>>,
        given: u64,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::prop_assert;
        use proptest::prop_assert_eq;
        let versions = h.versions();
        let replayed = History::open(&f.state, h.settings()).unwrap().versions();
        prop_assert_eq!(&versions, &replayed);
        let mut on_disk: Vec<String> = fs::read_dir(f.state.join("history/objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut referred: Vec<String> = versions.iter().map(|v| v.object.to_string()).collect();
        referred.sort();
        referred.dedup();
        prop_assert_eq!(&on_disk, &referred);
        let total: u64 = referred
            .iter()
            .map(|o| {
                fs::metadata(h.object_path(Object::parse(o).unwrap()))
                    .unwrap()
                    .len()
            })
            .sum();
        prop_assert!(total <= h.settings().max_bytes);
        prop_assert_eq!(total, h.log.lock().total);
        {
            // Each path's newest version is found without a scan, and
            // each object's references are counted.
            let log = h.log.lock();
            for v in &log.versions {
                let scanned = log.versions.iter().rposition(|w| w.path == v.path);
                prop_assert_eq!(log.last_of(&v.path), scanned);
                let refs = log.versions.iter().filter(|w| w.object == v.object).count();
                let holder = log.holder_of(&v.object).map(|i| log.versions[i].refs);
                prop_assert_eq!(holder, Some(refs as u32));
            }
            let holders = log.versions.iter().filter(|v| v.refs > 0).count();
            prop_assert_eq!(log.objects.len(), holders);
            prop_assert_eq!(holders, referred.len());
            prop_assert_eq!(
                log.newest.len(),
                versions
                    .iter()
                    .map(|v| &v.path)
                    .collect::<HashSet<_>>()
                    .len()
            );
        }
        for pair in versions.windows(2) {
            prop_assert!(pair[0].n < pair[1].n);
        }
        for v in &versions {
            prop_assert!(v.n <= given);
            prop_assert_eq!(Some(&h.read(v).unwrap()), kept.get(&v.n), "version {}", v.n);
        }
        let capped = h.settings().max_bytes < 4 * (PARSE_LIMIT as u64);
        for (path, content) in newest {
            let last = versions.iter().rev().find(|v| v.path.to_string() == *path);
            match last {
                Some(v) => prop_assert_eq!(&h.read(v).unwrap(), content, "{}", path),
                None => prop_assert!(capped, "{} lost its newest version", path),
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn the_log_and_the_objects_agree_after_any_sequence(
            steps in proptest::collection::vec(step(), 1..24),
            collapse in proptest::prelude::prop_oneof![
                proptest::strategy::Just(0u64),
                proptest::strategy::Just(60u64)
            ],
            capped in proptest::prelude::any::<bool>(),
        ) {
            let f = fixture();
            let settings = HistorySettings {
                keep: Duration::from_secs(86_400),
                // Room for the large content and a few small ones, or for
                // everything.
                max_bytes: if capped { PARSE_LIMIT as u64 + 300 } else { 1 << 30 },
                collapse: Duration::from_secs(collapse),
            };
            let mut h = History::open(&f.state, settings).unwrap();
            let mut kept: HashMap<u64, Vec<u8>> = HashMap::new();
            let mut newest: HashMap<String, Vec<u8>> = HashMap::new();
            let mut given = 0;
            for step in steps {
                match step {
                    Step::Keep { path, content, why, from_file } => {
                        let path = format!("p{path}.md");
                        let bytes = content_of(content);
                        let why = [Why::Deleted, Why::Overwritten, Why::Truncated][usize::from(why)];
                        let n = if from_file {
                            fs::write(f.root.join(&path), &bytes).unwrap();
                            let how = if why == Why::Truncated { Keep::Copy } else { Keep::LinkOrCopy };
                            let n = h.keep(&f.store, &p(&path), why, how).unwrap();
                            if why == Why::Truncated {
                                fs::write(f.root.join(&path), "emptied and rewritten").unwrap();
                            } else {
                                fs::remove_file(f.root.join(&path)).unwrap();
                            }
                            n
                        } else {
                            h.keep_bytes(&p(&path), &bytes, why).unwrap()
                        };
                        if let Some(n) = n {
                            proptest::prop_assert!(n > given, "number {} given again", n);
                            given = n;
                            kept.insert(n, bytes.clone());
                        }
                        newest.insert(path, bytes);
                    }
                    Step::Sweep => {
                        h.sweep().unwrap();
                    }
                    Step::Reopen => {
                        drop(h);
                        h = History::open(&f.state, settings).unwrap();
                    }
                }
                check(&f, &h, &kept, &newest, given)?;
            }
        }
    }

    /// The history of `f` reopened after a version of `a.md` was kept and
    /// `tail` was appended to its log.
    fn reopened_with(f: &Fixture, tail: &[u8]) -> History {
        let h = History::open(&f.state, settings(0)).unwrap();
        h.keep_bytes(&p("a.md"), b"a", Why::Deleted).unwrap();
        drop(h);
        let log = f.state.join("history").join(LOG_FILE);
        let mut text = fs::read(&log).unwrap();
        text.extend_from_slice(tail);
        fs::write(&log, text).unwrap();
        History::open(&f.state, settings(0)).unwrap()
    }

    #[test]
    fn a_bad_log_line_is_skipped() {
        let f = fixture();
        let h = reopened_with(&f, b"{not json\n");
        assert_eq!(h.versions().len(), 1);
    }

    /// A line a crash cut short is skipped, and the next version kept
    /// after a reopen is not lost with it.
    #[test]
    fn a_line_cut_short_does_not_take_the_next_one_with_it() {
        let f = fixture();
        let h = reopened_with(&f, br#"{"n":7,"path":"cut.md","why":"del"#);
        let n = h
            .keep_bytes(&p("b.md"), b"---\ntitle: Bee\n---\n", Why::Deleted)
            .unwrap()
            .unwrap();
        assert_eq!(h.versions().last().unwrap().title.as_deref(), Some("Bee"));
        drop(h);
        let h = History::open(&f.state, settings(0)).unwrap();
        let versions = h.versions();
        let paths: Vec<String> = versions.iter().map(|v| v.path.to_string()).collect();
        assert_eq!(paths, ["a.md", "b.md"]);
        assert_eq!(
            (versions[1].n, versions[1].title.as_deref()),
            (n, Some("Bee"))
        );
    }

    /// Ids and titles are read from the log: they are found by id across
    /// a rename, and come back after a sweep rewrote the log, even for a
    /// version listed from before the sweep.
    #[test]
    fn ids_and_titles_are_read_from_the_log_before_and_after_a_sweep() {
        let f = fixture();
        let h = History::open(&f.state, settings(0)).unwrap();
        let memory = |id: &str, title: &str, body: &str| {
            format!("---\nid: {id}\ntitle: {title}\n---\n{body}\n")
        };
        h.keep_bytes(
            &p("old.md"),
            memory("m1", "First", "one").as_bytes(),
            Why::Deleted,
        )
        .unwrap();
        h.keep_bytes(
            &p("x.md"),
            memory("m2", "Other", "x").as_bytes(),
            Why::Deleted,
        )
        .unwrap();
        h.keep_bytes(
            &p("new.md"),
            memory("m1", "Second", "two").as_bytes(),
            Why::Overwritten,
        )
        .unwrap();
        let titles = |h: &History| -> Vec<(String, Option<String>)> {
            h.versions_of(None, Some("m1"))
                .into_iter()
                .map(|v| (v.path.to_string(), v.title))
                .collect()
        };
        let expected = vec![
            ("old.md".to_string(), Some("First".to_string())),
            ("new.md".to_string(), Some("Second".to_string())),
        ];
        assert_eq!(titles(&h), expected);
        assert!(h.versions_of(None, Some("m3")).is_empty());
        let before: Entry = h.log.lock().versions[2].clone();
        // A line the sweep drops moves the others up.
        h.log.lock().versions.pop_front();
        h.sweep().unwrap();
        assert_ne!(h.log.lock().versions[1].offset, before.offset);
        let listed = before.version(LogReader::new(&h).describe(&before));
        assert_eq!(listed.title.as_deref(), Some("Second"));
        assert_eq!(listed.id.as_deref(), Some("m1"));
        assert_eq!(titles(&h), expected[1..]);
        drop(h);
        let h = History::open(&f.state, settings(0)).unwrap();
        assert_eq!(titles(&h), expected[1..]);
        assert_eq!(
            h.versions_of(None, Some("m2"))[0].title.as_deref(),
            Some("Other")
        );
    }

    #[test]
    fn scratch_files_of_editors_and_tools_are_not_kept_and_a_backup_is_a_version_of_its_file() {
        let f = fixture();
        let h = History::open(&f.state, settings(60)).unwrap();
        fs::create_dir(f.root.join("notes")).unwrap();
        fs::create_dir_all(f.root.join("notes/.git/refs/heads")).unwrap();
        fs::create_dir(f.root.join(".obsidian")).unwrap();
        let scratch: [(&str, &[u8]); 9] = [
            ("notes/.git/refs/heads/main.lock", b"0123abcd\n"),
            (".obsidian/workspace.json", b"{}"),
            ("notes/.a.md.swp", b"b0VIM 9.0"),
            ("notes/.a.md.swx", b""),
            ("notes/4913", b""),
            ("notes/#a.md#", b"autosave"),
            ("notes/.~lock.a.md#", b"lock"),
            ("notes/.goutputstream-XYZ123", b"temp"),
            ("notes/a.md.kate-swp", b"swap"),
        ];
        for (name, content) in scratch {
            fs::write(f.root.join(name), content).unwrap();
            let kept = h
                .keep(&f.store, &p(name), Why::Deleted, Keep::LinkOrCopy)
                .unwrap();
            assert_eq!(kept, None, "{name}");
        }
        // vim's save: a.md renamed to a.md~, a new a.md written, a.md~
        // removed. The backup is what a.md held before.
        fs::write(f.root.join("notes/a.md~"), "first draft").unwrap();
        fs::write(f.root.join("notes/a.md"), "second draft").unwrap();
        h.keep(&f.store, &p("notes/a.md~"), Why::Deleted, Keep::LinkOrCopy)
            .unwrap()
            .unwrap();
        let v = &h.versions_of(Some(&p("notes/a.md")), None)[0];
        assert_eq!(
            (v.why, h.read(v).unwrap()),
            (Why::Overwritten, b"first draft".to_vec())
        );
        assert_eq!(h.deleted().count(), 0);
        // A backup whose file is gone, a 4913 with content and a name that
        // merely looks alike are kept as they are.
        for name in [
            "notes/b.md~",
            "notes/4913",
            "notes/swap.swp",
            "~",
            ".gitignore",
        ] {
            fs::write(f.root.join(name), "kept").unwrap();
            let kept = h
                .keep(&f.store, &p(name), Why::Deleted, Keep::Copy)
                .unwrap();
            assert!(kept.is_some(), "{name}");
        }
        let mut trash: Vec<String> = h.deleted().map(|v| v.path.to_string()).collect();
        trash.sort();
        assert_eq!(
            trash,
            [
                ".gitignore",
                "notes/4913",
                "notes/b.md~",
                "notes/swap.swp",
                "~"
            ]
        );
    }

    /// Files over the parse limit are hashed, compared and copied a chunk
    /// at a time, never read whole, with the same names as small ones.
    #[test]
    fn a_large_file_is_kept_as_it_is_read() {
        let f = fixture();
        let h = History::open(&f.state, settings(0)).unwrap();
        let big: Vec<u8> = (0..3 * PARSE_LIMIT + 12_345)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut other = big.clone();
        *other.last_mut().unwrap() ^= 1;
        fs::write(f.root.join("a.bin"), &big).unwrap();
        fs::write(f.root.join("b.bin"), &big).unwrap();
        fs::write(f.root.join("c.bin"), &other).unwrap();
        // A hard link, then the same content copied: one object.
        h.keep(&f.store, &p("a.bin"), Why::Deleted, Keep::LinkOrCopy)
            .unwrap()
            .unwrap();
        fs::remove_file(f.root.join("a.bin")).unwrap();
        h.keep(&f.store, &p("b.bin"), Why::Truncated, Keep::Copy)
            .unwrap()
            .unwrap();
        // Same size, different last byte: an object of its own.
        h.keep(&f.store, &p("c.bin"), Why::Truncated, Keep::Copy)
            .unwrap()
            .unwrap();
        fs::write(f.root.join("b.bin"), "rewritten").unwrap();
        fs::write(f.root.join("c.bin"), "rewritten").unwrap();
        let versions = h.versions();
        assert_eq!(versions.len(), 3);
        assert_eq!(versions[0].object, versions[1].object);
        assert_eq!(
            versions[0].object.to_string(),
            format!("{:016x}-{}", fnv1a64(&big), big.len())
        );
        assert!(h.read(&versions[1]).unwrap() == big);
        assert!(h.read(&versions[2]).unwrap() == other);
        assert_eq!(versions[2].size, other.len() as u64);
        let objects = fs::read_dir(f.state.join("history/objects"))
            .unwrap()
            .count();
        assert_eq!(objects, 2);
    }

    #[test]
    fn nothing_is_kept_of_what_is_not_a_regular_file() {
        let f = fixture();
        let h = History::open(&f.state, settings(0)).unwrap();
        std::os::unix::fs::symlink("x", f.root.join("l")).unwrap();
        fs::create_dir(f.root.join("d")).unwrap();
        for name in ["l", "d", "missing"] {
            let kept = h
                .keep(&f.store, &p(name), Why::Deleted, Keep::LinkOrCopy)
                .unwrap();
            assert_eq!(kept, None, "{name}");
        }
    }
}
