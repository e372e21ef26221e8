//! Ids of memories whose frontmatter has none: kept here, not in the file.
//!
//! A note nobody has written through the mount (an existing vault, just
//! mounted) is not rewritten, so its id cannot live in its frontmatter
//! yet. The index gives it one all the same (`by-id/`, search results and
//! the tools show it), and this table, in the state dir beside the index
//! (`ids.json`, outside `index/v<N>/`, so a rebuild or a new schema keeps
//! it), remembers it. When the file is next written through the mount,
//! or by `mnemofs normalize`, the normalizer writes that same id into its
//! frontmatter and the entry is dropped: from then on the file carries it.
//!
//! How an id follows a file:
//! - by path: the same path keeps its id, whatever replaced the file's
//!   inode (an editor's save by rename, `git checkout`);
//! - by inode: a file at a new path whose inode, size and mtime are those
//!   of an entry whose path no longer holds that inode was moved there
//!   (`mv` behind the mount or through it, a folder renamed, even while no
//!   daemon ran), and takes the entry's id. Renames keep all three; a copy
//!   (`cp`) has a new inode and gets an id of its own;
//! - otherwise the id is derived from the path ([`derive`]): the same
//!   relative path always gives the same id, so losing the state dir only
//!   changes the ids of notes that moved since they got theirs, and two
//!   clones of a vault agree on them.
//!
//! Within a batch, moves are matched first and paths second, so `mv a b`
//! followed by a new `a` gives `b` the old id and `a` a new one.
//! An entry whose path is gone stays a while ([`GONE_KEPT`]) so that a
//! move seen as two separate changes (the delete first) still matches.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::io;
use std::ops::Bound;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::store::counters::{hex_decode, hex_encode, write_atomically};
use crate::store::{Stat, StorePath};

/// The table's file in the state dir.
pub(crate) const FILE_NAME: &str = "ids.json";

const FORMAT_NAME: &str = "mnemofs-ids";
const FORMAT_VERSION: u32 = 1;

/// How long the entry of a file that is gone is kept, for a move whose
/// new path is seen after its old one.
pub(crate) const GONE_KEPT: Duration = Duration::from_secs(3600);

/// How often the table is saved at most while it keeps changing.
const FLUSH_EVERY: Duration = Duration::from_secs(2);

/// What tells a moved file from another: a rename keeps all three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
}

impl Identity {
    pub(crate) fn of(st: &Stat) -> Identity {
        Identity {
            ino: st.ino,
            size: st.size,
            mtime_ns: st.mtime.nanos(),
        }
    }
}

/// An id as kept: a UUID in 16 bytes, anything else (an id a file had
/// in its frontmatter once) as text. Tables of 100k entries stay small.
#[derive(Clone, Debug, PartialEq, Eq)]
enum StoredId {
    Uuid(uuid::Uuid),
    Other(Box<str>),
}

impl StoredId {
    fn new(id: String) -> StoredId {
        match uuid::Uuid::parse_str(&id) {
            // Only the canonical form, so the text comes back as it was.
            Ok(uuid) if uuid.to_string() == id => StoredId::Uuid(uuid),
            _ => StoredId::Other(id.into_boxed_str()),
        }
    }

    fn text(&self) -> String {
        match self {
            StoredId::Uuid(uuid) => uuid.to_string(),
            StoredId::Other(text) => text.to_string(),
        }
    }
}

/// A path's bytes, shared by the maps that refer to it.
type Key = Arc<[u8]>;

/// A hash of an id's text, to tell quickly whether an id is in use.
fn id_hash(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    id: StoredId,
    identity: Identity,
    /// Unix seconds when its path was seen gone.
    gone_at: Option<i64>,
}

#[derive(Default)]
struct Table {
    by_path: BTreeMap<Key, Entry>,
    /// How many entries have an id of each hash (a collision only makes
    /// a free id look taken, and the next one is used).
    ids_in_use: HashMap<u64, u32>,
    /// (inode, path) of every entry, for moves.
    by_ino: BTreeSet<(u64, Key)>,
    dirty: bool,
}

impl Table {
    fn insert(&mut self, key: &[u8], entry: Entry) {
        self.remove(key);
        let key: Key = Arc::from(key);
        *self
            .ids_in_use
            .entry(id_hash(&entry.id.text()))
            .or_default() += 1;
        self.by_ino.insert((entry.identity.ino, Arc::clone(&key)));
        self.by_path.insert(key, entry);
        self.dirty = true;
    }

    fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (key, entry) = self.by_path.remove_entry(key)?;
        let hash = id_hash(&entry.id.text());
        if let Some(n) = self.ids_in_use.get_mut(&hash) {
            *n -= 1;
            if *n == 0 {
                self.ids_in_use.remove(&hash);
            }
        }
        self.by_ino.remove(&(entry.identity.ino, key));
        self.dirty = true;
        Some(entry)
    }

    fn has_id(&self, id: &str) -> bool {
        self.ids_in_use.contains_key(&id_hash(id))
    }

    /// Paths of the entries with inode `ino`.
    fn with_ino(&self, ino: u64) -> Vec<Key> {
        let from: Key = Arc::from(&[][..]);
        self.by_ino
            .range((ino, from)..)
            .take_while(|(i, _)| *i == ino)
            .map(|(_, k)| Arc::clone(k))
            .collect()
    }
}

/// The ids given to memories without one in their frontmatter.
pub(crate) struct IdTable {
    /// `None`: kept in memory only.
    file: Option<PathBuf>,
    /// A read-only snapshot never writes its file.
    writable: bool,
    state: Mutex<Table>,
    last_flush: Mutex<Instant>,
}

impl std::fmt::Debug for IdTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdTable")
            .field("file", &self.file)
            .field("entries", &self.state.lock().by_path.len())
            .finish()
    }
}

/// The id the path `key` gets when nothing else decides it: a UUID
/// (version 8, from SHA-256) of the path's bytes, and of `n` when the
/// first choices are taken.
pub(crate) fn derive(key: &[u8], n: u32) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(b"mnemofs id\0");
    hash.update(key);
    if n > 1 {
        hash.update(b"\0");
        hash.update(n.to_string().as_bytes());
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

impl IdTable {
    /// The table saved in `state_dir`, or an empty one. A file that
    /// cannot be read is moved aside: the ids of unmoved notes come back
    /// as they were ([`derive`]).
    pub(crate) fn open(state_dir: &Path) -> IdTable {
        let file = state_dir.join(FILE_NAME);
        let table = match std::fs::read(&file) {
            Ok(bytes) => decode(&bytes).unwrap_or_else(|reason| {
                crate::store::counters::move_aside(&file, &reason);
                Table::default()
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Table::default(),
            Err(e) => {
                tracing::warn!("ids: cannot read {}: {e}", file.display());
                Table::default()
            }
        };
        IdTable {
            file: Some(file),
            writable: true,
            state: Mutex::new(table),
            last_flush: Mutex::new(Instant::now()),
        }
    }

    /// The saved table as it is now, for a reader that must not write it.
    pub(crate) fn snapshot(state_dir: &Path) -> IdTable {
        let table = std::fs::read(state_dir.join(FILE_NAME))
            .ok()
            .and_then(|b| decode(&b).ok())
            .unwrap_or_default();
        IdTable {
            file: None,
            writable: false,
            state: Mutex::new(table),
            last_flush: Mutex::new(Instant::now()),
        }
    }

    /// A table that is never saved (tests, an index in RAM).
    pub(crate) fn in_memory() -> IdTable {
        IdTable {
            file: None,
            writable: true,
            state: Mutex::new(Table::default()),
            last_flush: Mutex::new(Instant::now()),
        }
    }

    /// The id kept for the file at `key`, unless its path is gone.
    pub(crate) fn get(&self, key: &[u8]) -> Option<String> {
        let state = self.state.lock();
        state
            .by_path
            .get(key)
            .filter(|e| e.gone_at.is_none())
            .map(|e| e.id.text())
    }

    /// Gives an id to each of `files` (memories without one of their
    /// own), in order: the one they had, the one of the file they were
    /// moved from, the one the index last had for the path (a file whose
    /// `id:` was taken out, say by restoring a version from before it was
    /// written, keeps it), or a new one. `holds` says which inode a path
    /// holds now (`None`: no file); `taken` whether another path's
    /// frontmatter has an id already; `previous` the id the index last
    /// had for a path.
    pub(crate) fn assign(
        &self,
        files: &[(Vec<u8>, Identity)],
        holds: &dyn Fn(&[u8]) -> Option<u64>,
        taken: &dyn Fn(&str, &[u8]) -> bool,
        previous: &dyn Fn(&[u8]) -> Option<String>,
    ) -> Vec<String> {
        if !self.writable {
            return files
                .iter()
                .map(|(k, _)| {
                    self.get(k)
                        .or_else(|| previous(k))
                        .unwrap_or_else(|| derive(k, 1))
                })
                .collect();
        }
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let mut ids: Vec<Option<String>> = vec![None; files.len()];
        // Pass 1: the same file where it was, or moved here.
        for (slot, (key, identity)) in ids.iter_mut().zip(files) {
            if let Some(entry) = state.by_path.get_mut(&key[..])
                && entry.identity.ino == identity.ino
            {
                if entry.identity != *identity || entry.gone_at.is_some() {
                    entry.identity = *identity;
                    entry.gone_at = None;
                    state.dirty = true;
                }
                *slot = Some(entry.id.text());
                continue;
            }
            let moved_from = state.with_ino(identity.ino).into_iter().find(|k| {
                **k != key[..]
                    && state.by_path.get(k).is_some_and(|e| {
                        e.identity.size == identity.size && e.identity.mtime_ns == identity.mtime_ns
                    })
                    && holds(k) != Some(identity.ino)
            });
            if let Some(from) = moved_from
                && let Some(mut entry) = state.remove(&from)
            {
                entry.identity = *identity;
                entry.gone_at = None;
                *slot = Some(entry.id.text());
                state.insert(key, entry);
            }
        }
        // Pass 2: the same path, whatever file is there now; else new.
        for (slot, (key, identity)) in ids.iter_mut().zip(files) {
            if slot.is_some() {
                continue;
            }
            if let Some(mut entry) = state.remove(key) {
                entry.identity = *identity;
                entry.gone_at = None;
                *slot = Some(entry.id.text());
                state.insert(key, entry);
                continue;
            }
            let free = |id: &String| !state.has_id(id) && !taken(id, key);
            let id = previous(key)
                .filter(|id| !id.trim().is_empty() && free(id))
                .unwrap_or_else(|| {
                    // The first derived id not in use: each try is a new
                    // hash, so the search ends.
                    let mut n = 1;
                    loop {
                        let id = derive(key, n);
                        if free(&id) {
                            break id;
                        }
                        n += 1;
                    }
                });
            *slot = Some(id.clone());
            state.insert(
                key,
                Entry {
                    id: StoredId::new(id),
                    identity: *identity,
                    gone_at: None,
                },
            );
        }
        ids.into_iter().flatten().collect()
    }

    /// The file at `key` carries its own id now (or is not a memory).
    pub(crate) fn forget(&self, key: &[u8]) {
        if self.writable {
            self.state.lock().remove(key);
        }
    }

    /// The file at `key`, and every one below it, is gone; its entry is
    /// kept for [`GONE_KEPT`] in case it was moved.
    pub(crate) fn gone(&self, key: &[u8], now: i64) {
        if !self.writable {
            return;
        }
        let mut guard = self.state.lock();
        let state = &mut *guard;
        let mut dir = key.to_vec();
        dir.push(b'/');
        let below: Vec<Key> = state
            .by_path
            .range::<[u8], _>((Bound::Included(dir.as_slice()), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(&dir))
            .map(|(k, _)| Arc::clone(k))
            .chain(state.by_path.contains_key(key).then(|| Arc::from(key)))
            .collect();
        for k in below {
            if let Some(entry) = state.by_path.get_mut(&*k)
                && entry.gone_at.is_none()
            {
                entry.gone_at = Some(now);
                state.dirty = true;
            }
        }
    }

    /// After a walk of the whole store: entries whose path holds no file
    /// are gone (a new index never saw them go), and those gone longer
    /// than [`GONE_KEPT`] are dropped.
    pub(crate) fn sweep(&self, holds: &dyn Fn(&[u8]) -> bool, now: i64) {
        if !self.writable {
            return;
        }
        let keys: Vec<Key> = self.state.lock().by_path.keys().cloned().collect();
        let missing: Vec<Key> = keys.into_iter().filter(|k| !holds(k)).collect();
        let mut guard = self.state.lock();
        let state = &mut *guard;
        for k in missing {
            if let Some(entry) = state.by_path.get_mut(&*k)
                && entry.gone_at.is_none()
            {
                entry.gone_at = Some(now);
                state.dirty = true;
            }
        }
        self.drop_expired(state, now);
    }

    fn drop_expired(&self, state: &mut Table, now: i64) {
        let expired: Vec<Key> = state
            .by_path
            .iter()
            .filter(|(_, e)| {
                e.gone_at
                    .is_some_and(|at| now.saturating_sub(at) >= GONE_KEPT.as_secs() as i64)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in expired {
            state.remove(&k);
        }
    }

    /// Saves the table if it changed, at most every [`FLUSH_EVERY`]
    /// unless `now_anyway`.
    pub(crate) fn flush(&self, now_anyway: bool, now: i64) {
        let Some(file) = &self.file else {
            return;
        };
        let mut last = self.last_flush.lock();
        if !now_anyway && last.elapsed() < FLUSH_EVERY {
            return;
        }
        let bytes = {
            let mut state = self.state.lock();
            if !state.dirty {
                return;
            }
            self.drop_expired(&mut state, now);
            state.dirty = false;
            encode(&state)
        };
        *last = Instant::now();
        if let Err(e) = write_atomically(file, &bytes) {
            tracing::warn!("ids: cannot save {}: {e}", file.display());
            self.state.lock().dirty = true;
        }
    }

    /// Memories whose id is kept here, not in their file.
    pub(crate) fn kept(&self) -> u64 {
        let state = self.state.lock();
        state
            .by_path
            .values()
            .filter(|e| e.gone_at.is_none())
            .count() as u64
    }

    /// Entries kept, those of files gone included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.state.lock().by_path.len()
    }
}

#[derive(Serialize, Deserialize)]
struct FileForm {
    format: String,
    version: u32,
    entries: Vec<EntryForm>,
}

#[derive(Serialize, Deserialize)]
struct EntryForm {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_hex: Option<String>,
    id: String,
    ino: u64,
    size: u64,
    mtime_ns: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gone_at: Option<i64>,
}

fn encode(table: &Table) -> Vec<u8> {
    let entries = table
        .by_path
        .iter()
        .map(|(key, e)| {
            let (path, path_hex) = match std::str::from_utf8(key) {
                Ok(s) => (Some(s.to_owned()), None),
                Err(_) => (None, Some(hex_encode(key))),
            };
            EntryForm {
                path,
                path_hex,
                id: e.id.text(),
                ino: e.identity.ino,
                size: e.identity.size,
                mtime_ns: e.identity.mtime_ns,
                gone_at: e.gone_at,
            }
        })
        .collect();
    let form = FileForm {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        entries,
    };
    let mut bytes = serde_json::to_vec(&form).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn decode(bytes: &[u8]) -> Result<Table, String> {
    let form: FileForm = serde_json::from_slice(bytes).map_err(|e| format!("corrupt: {e}"))?;
    if form.format != FORMAT_NAME || form.version != FORMAT_VERSION {
        return Err(format!(
            "unknown format {:?} version {}",
            form.format, form.version
        ));
    }
    let mut table = Table::default();
    for e in form.entries {
        let key = match (e.path, e.path_hex) {
            (Some(p), _) => p.into_bytes(),
            (None, Some(h)) => match hex_decode(&h) {
                Some(k) => k,
                None => continue,
            },
            (None, None) => continue,
        };
        if StorePath::new(OsStr::from_bytes(&key)).is_none() || e.id.trim().is_empty() {
            continue;
        }
        table.insert(
            &key,
            Entry {
                id: StoredId::new(e.id),
                identity: Identity {
                    ino: e.ino,
                    size: e.size,
                    mtime_ns: e.mtime_ns,
                },
                gone_at: e.gone_at,
            },
        );
    }
    table.dirty = false;
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(ino: u64, size: u64, mtime_ns: i64) -> Identity {
        Identity {
            ino,
            size,
            mtime_ns,
        }
    }

    fn k(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    fn no(_: &[u8]) -> Option<String> {
        None
    }

    #[test]
    fn derived_ids_are_stable_uuids() {
        let a = derive(b"notes/a.md", 1);
        assert_eq!(a, derive(b"notes/a.md", 1));
        assert_ne!(a, derive(b"notes/a.md", 2));
        assert_ne!(a, derive(b"notes/b.md", 1));
        let parsed = uuid::Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 8);
    }

    #[test]
    fn an_id_follows_a_move_and_a_copy_gets_its_own() {
        let t = IdTable::in_memory();
        let none = |_: &str, _: &[u8]| false;
        let at_a = |key: &[u8]| (key == b"a.md").then_some(1);
        let a = t.assign(&[(k("a.md"), ident(1, 10, 5))], &at_a, &none, &no);
        // Seen again: the same id.
        assert_eq!(
            t.assign(&[(k("a.md"), ident(1, 12, 6))], &at_a, &none, &no),
            a
        );
        // Moved to b.md (the old path seen gone first).
        t.gone(b"a.md", 0);
        let at_b = |key: &[u8]| (key == b"b.md").then_some(1);
        assert_eq!(
            t.assign(&[(k("b.md"), ident(1, 12, 6))], &at_b, &none, &no),
            a
        );
        assert_eq!(t.get(b"a.md"), None);
        // Copied to c.md: another inode, another id.
        let both = |key: &[u8]| match key {
            b"b.md" => Some(1),
            b"c.md" => Some(2),
            _ => None,
        };
        let c = t.assign(&[(k("c.md"), ident(2, 12, 7))], &both, &none, &no);
        assert_ne!(c, a);
        // A new a.md: its derived id is b.md's, so it gets another.
        let fresh = t.assign(&[(k("a.md"), ident(3, 1, 8))], &both, &none, &no);
        assert_ne!(fresh, a);
        assert_eq!(fresh[0], derive(b"a.md", 2));
    }

    #[test]
    fn a_move_and_a_new_file_at_the_old_path_in_one_batch() {
        let t = IdTable::in_memory();
        let none = |_: &str, _: &[u8]| false;
        let a = t.assign(&[(k("a.md"), ident(1, 10, 5))], &|_| Some(1), &none, &no);
        let now = |key: &[u8]| match key {
            b"a.md" => Some(2),
            b"b.md" => Some(1),
            _ => None,
        };
        let ids = t.assign(
            &[(k("a.md"), ident(2, 3, 9)), (k("b.md"), ident(1, 10, 5))],
            &now,
            &none,
            &no,
        );
        assert_eq!(ids[1], a[0]);
        assert_ne!(ids[0], a[0]);
    }

    #[test]
    fn a_save_by_rename_keeps_the_id_and_ids_taken_elsewhere_are_skipped() {
        let t = IdTable::in_memory();
        let taken = |id: &str, _: &[u8]| id == derive(b"a.md", 1);
        let a = t.assign(&[(k("a.md"), ident(1, 10, 5))], &|_| Some(1), &taken, &no);
        assert_eq!(a[0], derive(b"a.md", 2));
        let again = t.assign(&[(k("a.md"), ident(9, 11, 6))], &|_| Some(9), &taken, &no);
        assert_eq!(again, a);
    }

    #[test]
    fn the_id_the_index_last_had_is_kept_unless_another_file_has_it() {
        let t = IdTable::in_memory();
        let none = |_: &str, _: &[u8]| false;
        let had = |_: &[u8]| Some("restored-id".to_string());
        let ids = t.assign(&[(k("a.md"), ident(1, 1, 1))], &|_| Some(1), &none, &had);
        assert_eq!(ids, ["restored-id"]);
        let elsewhere = |id: &str, _: &[u8]| id == "restored-id";
        let ids = t.assign(
            &[(k("b.md"), ident(2, 1, 1))],
            &|_| Some(2),
            &elsewhere,
            &had,
        );
        assert_eq!(ids[0], derive(b"b.md", 1));
    }

    #[test]
    fn saved_and_loaded_and_swept() {
        let dir = tempfile::tempdir().unwrap();
        let t = IdTable::open(dir.path());
        let none = |_: &str, _: &[u8]| false;
        let a = t.assign(&[(k("a.md"), ident(1, 10, 5))], &|_| Some(1), &none, &no);
        t.assign(&[(k("b.md"), ident(2, 10, 5))], &|_| Some(2), &none, &no);
        t.flush(true, 0);
        let loaded = IdTable::open(dir.path());
        assert_eq!(loaded.get(b"a.md"), Some(a[0].clone()));
        assert_eq!(loaded.len(), 2);
        // b.md is gone: kept a while, then dropped.
        let only_a = |key: &[u8]| key == b"a.md";
        loaded.sweep(&only_a, 100);
        assert_eq!(loaded.get(b"b.md"), None);
        assert_eq!(loaded.len(), 2);
        loaded.sweep(&only_a, 100 + GONE_KEPT.as_secs() as i64);
        assert_eq!(loaded.len(), 1);
        std::fs::write(dir.path().join(FILE_NAME), "not json").unwrap();
        assert_eq!(IdTable::open(dir.path()).len(), 0);
    }
}
