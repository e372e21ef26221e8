//! Volatile per-memory counters: `access_count`, `version`, `content_hash`
//! and `updated_at`.
//!
//! These change on every read or save, so they live in derived state rather
//! than in the memory files: rewriting a file on each read would fight
//! editors and git (see DESIGN.md, "Memory files"). The FUSE layer exposes
//! them as `user.mnemofs.*` extended attributes, the indexer as search
//! fields, and an opt-in mode writes [`CounterStore::frontmatter_fields`]
//! into frontmatter.
//!
//! Subtleties:
//! - Keys are the exact bytes of a [`StorePath`], so non-UTF-8 names work.
//!   In the state file a UTF-8 key is stored as `path`, any other as
//!   `path_hex`.
//! - The map is a `BTreeMap` ordered by bytes, so everything under a
//!   directory is one contiguous range starting at `dir/`. A prefix always
//!   ends at a component boundary: `a/b` covers `a/b` and `a/b/…`, never
//!   `a/bc`.
//! - A rename replaces whatever was at the destination, like rename(2)
//!   does. A rename from or onto the store root is ignored, since the
//!   kernel never asks for one.
//! - Entries are kept compact (hash as `u64`, time as `i64`) and the
//!   strings are built only when asked for, so 100k entries take about
//!   10 MB.
//! - `flush` copies the map under the lock and writes the copy after
//!   releasing it, so FUSE handlers wait only for the copy. Flushes run one
//!   at a time, so an older snapshot can never replace a newer one.
//! - The state file is derived. If it is corrupt or unreadable, it is moved
//!   aside and the store starts empty. This is never fatal.
//! - `content_hash` is FNV-1a 64, shown as `fnv1a64:<16 hex digits>`. It is
//!   stable across versions and platforms and is meant to detect changes,
//!   not to resist deliberate collisions.
//! - Timestamps are clamped to the years 0000–9999, so the text is always
//!   valid RFC 3339.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::ops::Bound;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize, Serializer};

use crate::store::StorePath;

/// The prefix of every `content_hash` value; it names the algorithm.
pub const HASH_PREFIX: &str = "fnv1a64:";

const XATTR_ACCESS_COUNT: &str = "user.mnemofs.access_count";
const XATTR_VERSION: &str = "user.mnemofs.version";
const XATTR_CONTENT_HASH: &str = "user.mnemofs.content_hash";
const XATTR_UPDATED_AT: &str = "user.mnemofs.updated_at";
const XATTR_NAMES: [&str; 4] = [
    XATTR_ACCESS_COUNT,
    XATTR_VERSION,
    XATTR_CONTENT_HASH,
    XATTR_UPDATED_AT,
];

const FORMAT_NAME: &str = "mnemofs-counters";
const FORMAT_VERSION: u32 = 1;

/// 0000-01-01T00:00:00Z, the earliest instant RFC 3339 can write.
const MIN_UNIX: i64 = -62_167_219_200;
/// 9999-12-31T23:59:59Z, the latest instant RFC 3339 can write.
const MAX_UNIX: i64 = 253_402_300_799;

/// The counters of one path, with the text values already formatted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Opens for reading by processes other than the daemon.
    pub access_count: u64,
    /// Number of completed write sessions.
    pub version: u64,
    /// `fnv1a64:<hex>` of the bytes at the last completed write.
    pub content_hash: Option<String>,
    /// RFC 3339 UTC time of the last completed write.
    pub updated_at: Option<String>,
}

/// The stored form of [`Counters`]: no strings, so no heap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Entry {
    access_count: u64,
    version: u64,
    content_hash: Option<u64>,
    updated_at: Option<i64>,
}

impl Entry {
    fn to_counters(self) -> Counters {
        Counters {
            access_count: self.access_count,
            version: self.version,
            content_hash: self.content_hash.map(format_hash),
            updated_at: self.updated_at.map(rfc3339_utc),
        }
    }

    fn is_empty(&self) -> bool {
        *self == Entry::default()
    }
}

type Entries = BTreeMap<Box<[u8]>, Entry>;

struct State {
    entries: Entries,
    dirty: bool,
}

/// The counters of every path, shared by the FUSE handlers and the tasks.
pub struct CounterStore {
    /// `None` for an in-memory store.
    state_file: Option<PathBuf>,
    state: Mutex<State>,
    /// Held for a whole flush, so flushes cannot overtake each other.
    flush_lock: Mutex<()>,
}

impl fmt::Debug for CounterStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("CounterStore")
            .field("state_file", &self.state_file)
            .field("entries", &state.entries.len())
            .field("dirty", &state.dirty)
            .finish()
    }
}

impl CounterStore {
    /// Loads the store from `state_file`, or starts empty if there is no
    /// such file. If the file is corrupt or unreadable, it is logged and
    /// moved aside to `<name>.corrupt-<unix secs>`, and the store starts
    /// empty.
    pub fn open(state_file: &Path) -> CounterStore {
        let entries = match fs::read(state_file) {
            Ok(bytes) => match decode(&bytes) {
                Ok(entries) => entries,
                Err(reason) => {
                    move_aside(state_file, &reason);
                    Entries::new()
                }
            },
            Err(err) if err.kind() == io::ErrorKind::NotFound => Entries::new(),
            Err(err) => {
                move_aside(state_file, &format!("unreadable: {err}"));
                Entries::new()
            }
        };
        tracing::debug!(
            "counters: loaded {} entries from {}",
            entries.len(),
            state_file.display()
        );
        CounterStore {
            state_file: Some(state_file.to_path_buf()),
            state: Mutex::new(State {
                entries,
                dirty: false,
            }),
            flush_lock: Mutex::new(()),
        }
    }

    /// A store that is never persisted. [`flush`](Self::flush) only clears
    /// the dirty flag.
    pub fn in_memory() -> CounterStore {
        CounterStore {
            state_file: None,
            state: Mutex::new(State {
                entries: Entries::new(),
                dirty: false,
            }),
            flush_lock: Mutex::new(()),
        }
    }

    /// Counts an open for reading by another process.
    pub fn record_read_open(&self, path: &StorePath) {
        self.update(path, |entry| {
            entry.access_count = entry.access_count.saturating_add(1);
        });
    }

    /// Records a completed write session that left `bytes` in the file at
    /// the time `now_unix` (seconds since the epoch).
    pub fn record_write(&self, path: &StorePath, bytes: &[u8], now_unix: i64) {
        let hash = fnv1a64(bytes);
        let now = now_unix.clamp(MIN_UNIX, MAX_UNIX);
        self.update(path, |entry| {
            entry.version = entry.version.saturating_add(1);
            entry.content_hash = Some(hash);
            entry.updated_at = Some(now);
        });
    }

    /// The counters of `path`, all zero or unset if nothing was recorded.
    pub fn get(&self, path: &StorePath) -> Counters {
        self.entry(path).to_counters()
    }

    /// Moves the counters of `from`, and of every path under it, to `to`.
    /// Whatever was recorded at or under `to` is dropped first, since the
    /// renamed file replaces it.
    pub fn rename(&self, from: &StorePath, to: &StorePath) {
        let from_key = key_of(from);
        let to_key = key_of(to);
        if from_key.is_empty() || to_key.is_empty() {
            tracing::debug!("counters: ignoring rename involving the root ({from} -> {to})");
            return;
        }
        if from_key == to_key {
            return;
        }
        let mut state = self.state.lock();
        let moved = take_subtree(&mut state.entries, from_key);
        let replaced = take_subtree(&mut state.entries, to_key);
        if moved.is_empty() && replaced.is_empty() {
            return;
        }
        for (old_key, entry) in moved {
            if let Some(suffix) = old_key.strip_prefix(from_key) {
                let mut new_key = Vec::with_capacity(to_key.len() + suffix.len());
                new_key.extend_from_slice(to_key);
                new_key.extend_from_slice(suffix);
                state.entries.insert(new_key.into_boxed_slice(), entry);
            }
        }
        state.dirty = true;
    }

    /// A file renamed over an existing one (an editor's or the normalizer's
    /// save): it is the same memory with new content, so the target keeps
    /// its access count and gains a version; the hash and time come from
    /// the new content when known.
    pub fn replace(&self, from: &StorePath, to: &StorePath) {
        let (from_key, to_key) = (key_of(from), key_of(to));
        if from_key.is_empty() || to_key.is_empty() || from_key == to_key {
            return;
        }
        let mut state = self.state.lock();
        let new = state.entries.remove(from_key);
        let old = state.entries.remove(to_key);
        if new.is_none() && old.is_none() {
            return;
        }
        let new = new.unwrap_or_default();
        let old = old.unwrap_or_default();
        let merged = Entry {
            access_count: old.access_count,
            version: old.version + 1,
            content_hash: new.content_hash.or(old.content_hash),
            updated_at: new.updated_at.or(old.updated_at),
        };
        state.entries.insert(to_key.into(), merged);
        state.dirty = true;
    }

    /// Drops the counters of `path` and of every path under it.
    pub fn remove(&self, path: &StorePath) {
        let key = key_of(path);
        let mut state = self.state.lock();
        let removed = if key.is_empty() {
            let had_any = !state.entries.is_empty();
            state.entries.clear();
            had_any
        } else {
            !take_subtree(&mut state.entries, key).is_empty()
        };
        if removed {
            state.dirty = true;
        }
    }

    /// The extended attribute names, in the order the fields are listed.
    pub fn xattr_names() -> &'static [&'static str] {
        &XATTR_NAMES
    }

    /// The value of extended attribute `name` as text. `None` if `name` is
    /// not one of [`xattr_names`](Self::xattr_names) or the field is unset.
    /// The two counts are always set, zero included.
    pub fn xattr(&self, path: &StorePath, name: &str) -> Option<Vec<u8>> {
        // Check the name first so unknown names cost no lock.
        if !XATTR_NAMES.contains(&name) {
            return None;
        }
        let entry = self.entry(path);
        let text = match name {
            XATTR_ACCESS_COUNT => entry.access_count.to_string(),
            XATTR_VERSION => entry.version.to_string(),
            XATTR_CONTENT_HASH => format_hash(entry.content_hash?),
            XATTR_UPDATED_AT => rfc3339_utc(entry.updated_at?),
            _ => return None,
        };
        Some(text.into_bytes())
    }

    /// The fields to write into frontmatter in the opt-in mode, in this
    /// order: `access_count` and `version` (always), then `content_hash`
    /// and `updated_at` if set. Values are unquoted text; the caller quotes
    /// them as YAML needs.
    pub fn frontmatter_fields(&self, path: &StorePath) -> Vec<(&'static str, String)> {
        let entry = self.entry(path);
        let mut fields = vec![
            ("access_count", entry.access_count.to_string()),
            ("version", entry.version.to_string()),
        ];
        if let Some(hash) = entry.content_hash {
            fields.push(("content_hash", format_hash(hash)));
        }
        if let Some(time) = entry.updated_at {
            fields.push(("updated_at", rfc3339_utc(time)));
        }
        fields
    }

    /// Writes the store to its state file if anything changed since the
    /// last flush: a temp file in the same directory, fsync, rename, then
    /// fsync of the directory. The directory is created if missing. On
    /// error the store stays dirty, so the next flush tries again.
    pub fn flush(&self) -> io::Result<()> {
        let Some(state_file) = &self.state_file else {
            self.state.lock().dirty = false;
            return Ok(());
        };
        let _flushing = self.flush_lock.lock();
        let snapshot = {
            let mut state = self.state.lock();
            if !state.dirty {
                return Ok(());
            }
            state.dirty = false;
            state.entries.clone()
        };
        let result = encode(&snapshot).and_then(|bytes| write_atomically(state_file, &bytes));
        if result.is_err() {
            self.state.lock().dirty = true;
        }
        result
    }

    /// True if something changed since the last successful flush.
    pub fn is_dirty(&self) -> bool {
        self.state.lock().dirty
    }

    /// Number of paths with counters.
    pub fn len(&self) -> usize {
        self.state.lock().entries.len()
    }

    /// True if no path has counters.
    pub fn is_empty(&self) -> bool {
        self.state.lock().entries.is_empty()
    }

    fn entry(&self, path: &StorePath) -> Entry {
        self.state
            .lock()
            .entries
            .get(key_of(path))
            .copied()
            .unwrap_or_default()
    }

    fn update(&self, path: &StorePath, change: impl FnOnce(&mut Entry)) {
        let key = key_of(path);
        let mut state = self.state.lock();
        match state.entries.get_mut(key) {
            Some(entry) => change(entry),
            None => {
                let mut entry = Entry::default();
                change(&mut entry);
                state.entries.insert(Box::from(key), entry);
            }
        }
        state.dirty = true;
    }

    #[cfg(test)]
    fn snapshot(&self) -> std::collections::HashMap<Vec<u8>, Counters> {
        self.state
            .lock()
            .entries
            .iter()
            .map(|(key, entry)| (key.to_vec(), entry.to_counters()))
            .collect()
    }
}

/// The 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The `content_hash` text for `bytes`, as [`CounterStore::record_write`]
/// records it: `fnv1a64:` followed by 16 lowercase hex digits.
pub fn content_hash(bytes: &[u8]) -> String {
    format_hash(fnv1a64(bytes))
}

/// Whether `text` is a [`content_hash`]: what `read` gives as a version.
pub fn is_content_hash(text: &str) -> bool {
    parse_hash(text).is_some()
}

fn format_hash(hash: u64) -> String {
    format!("{HASH_PREFIX}{hash:016x}")
}

fn parse_hash(text: &str) -> Option<u64> {
    let digits = text.strip_prefix(HASH_PREFIX)?;
    if digits.len() != 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// `unix` seconds as RFC 3339 UTC, e.g. `1970-01-01T00:00:00Z`. Times
/// outside the years 0000–9999 are clamped to that range, as
/// [`format_timestamp`](crate::memory::format_timestamp) does for every
/// date mnemofs writes.
pub fn rfc3339_utc(unix: i64) -> String {
    crate::memory::format_timestamp(unix)
}

fn key_of(path: &StorePath) -> &[u8] {
    path.as_path().as_os_str().as_bytes()
}

/// Removes and returns the entry at `prefix` and every entry under it.
fn take_subtree(entries: &mut Entries, prefix: &[u8]) -> Vec<(Box<[u8]>, Entry)> {
    let mut taken = Vec::new();
    if let Some(exact) = entries.remove_entry(prefix) {
        taken.push(exact);
    }
    let mut dir = Vec::with_capacity(prefix.len() + 1);
    dir.extend_from_slice(prefix);
    dir.push(b'/');
    let under: Vec<Box<[u8]>> = entries
        .range::<[u8], _>((Bound::Included(dir.as_slice()), Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(&dir))
        .map(|(key, _)| key.clone())
        .collect();
    for key in under {
        if let Some(entry) = entries.remove(&key) {
            taken.push((key, entry));
        }
    }
    taken
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'static str,
    version: u32,
    #[serde(serialize_with = "serialize_entries")]
    entries: &'a Entries,
}

#[derive(Serialize)]
struct EntryOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path_hex: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    access_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_hash: Option<String>,
    /// Unix seconds; the file is ours, so no need to parse RFC 3339 back.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<i64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn serialize_entries<S: Serializer>(entries: &&Entries, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(entries.iter().map(|(key, entry)| {
        let (path, path_hex) = match std::str::from_utf8(key) {
            Ok(text) => (Some(text), None),
            Err(_) => (None, Some(hex_encode(key))),
        };
        EntryOut {
            path,
            path_hex,
            access_count: entry.access_count,
            version: entry.version,
            content_hash: entry.content_hash.map(format_hash),
            updated_at: entry.updated_at,
        }
    }))
}

#[derive(Deserialize)]
struct FileIn {
    format: String,
    version: u32,
    entries: Vec<EntryIn>,
}

#[derive(Deserialize)]
struct EntryIn {
    path: Option<String>,
    path_hex: Option<String>,
    #[serde(default)]
    access_count: u64,
    #[serde(default)]
    version: u64,
    content_hash: Option<String>,
    updated_at: Option<i64>,
}

fn encode(entries: &Entries) -> io::Result<Vec<u8>> {
    let file = FileOut {
        format: FORMAT_NAME,
        version: FORMAT_VERSION,
        entries,
    };
    let mut bytes = serde_json::to_vec(&file).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Parses a state file. Entries that cannot be used are skipped with a
/// warning; only a file that is not ours as a whole is an error.
fn decode(bytes: &[u8]) -> Result<Entries, String> {
    let file: FileIn = serde_json::from_slice(bytes).map_err(|err| format!("corrupt: {err}"))?;
    if file.format != FORMAT_NAME || file.version != FORMAT_VERSION {
        return Err(format!(
            "unknown format {:?} version {}",
            file.format, file.version
        ));
    }
    let mut entries = Entries::new();
    let mut skipped = 0usize;
    for raw in file.entries {
        let bytes = match (raw.path, raw.path_hex.as_deref()) {
            (Some(text), None) => Some(text.into_bytes()),
            (None, Some(hex)) => hex_decode(hex),
            _ => None,
        };
        // Re-validating also normalizes, so a hand-edited `a//b` finds `a/b`.
        let Some(path) = bytes.and_then(|bytes| StorePath::new(OsStr::from_bytes(&bytes))) else {
            skipped += 1;
            continue;
        };
        let content_hash = match raw.content_hash.as_deref() {
            None => None,
            Some(text) => {
                let parsed = parse_hash(text);
                if parsed.is_none() {
                    skipped += 1;
                }
                parsed
            }
        };
        let entry = Entry {
            access_count: raw.access_count,
            version: raw.version,
            content_hash,
            updated_at: raw.updated_at.map(|t| t.clamp(MIN_UNIX, MAX_UNIX)),
        };
        if !entry.is_empty() {
            entries.insert(Box::from(key_of(&path)), entry);
        }
    }
    if skipped > 0 {
        tracing::warn!("counters: skipped {skipped} unusable values in the state file");
    }
    Ok(entries)
}

pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

pub(crate) fn hex_decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| match pair {
            &[high, low] => {
                let high = char::from(high).to_digit(16)?;
                let low = char::from(low).to_digit(16)?;
                u8::try_from(high * 16 + low).ok()
            }
            _ => None,
        })
        .collect()
}

/// Moves a bad state file out of the way without overwriting an earlier
/// one, so it can still be inspected.
pub(crate) fn move_aside(state_file: &Path, reason: &str) {
    let Some(name) = state_file.file_name() else {
        tracing::warn!(
            "state file {} {reason}; starting empty",
            state_file.display()
        );
        return;
    };
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    for attempt in 0u32..100 {
        let mut aside = name.to_os_string();
        aside.push(format!(".corrupt-{secs}"));
        if attempt > 0 {
            aside.push(format!("-{attempt}"));
        }
        let aside = state_file.with_file_name(aside);
        if aside.symlink_metadata().is_ok() {
            continue;
        }
        match fs::rename(state_file, &aside) {
            Ok(()) => tracing::warn!(
                "state file {} {reason}; moved it to {} and starting empty",
                state_file.display(),
                aside.display()
            ),
            Err(err) => tracing::warn!(
                "state file {} {reason}; could not move it aside ({err}), \
                 starting empty and it will be replaced at the next flush",
                state_file.display()
            ),
        }
        return;
    }
    tracing::warn!(
        "state file {} {reason}; too many earlier copies to move it aside, \
         starting empty",
        state_file.display()
    );
}

pub(crate) fn write_atomically(target: &Path, bytes: &[u8]) -> io::Result<()> {
    static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("state file {} has no file name", target.display()),
        )
    })?;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let mut temp_name = OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = dir.join(temp_name);
    if let Err(err) = write_synced(&temp, bytes).and_then(|()| fs::rename(&temp, target)) {
        let _ = fs::remove_file(&temp);
        return Err(err);
    }
    // Makes the rename itself durable. Some filesystems refuse to fsync a
    // directory; the data is already in place, so that is not an error.
    if let Err(err) = fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!("counters: fsync of {} failed: {err}", dir.display());
    }
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        // Access counts say what the user reads: keep them private.
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn p(path: &str) -> StorePath {
        StorePath::new(path).expect("valid test path")
    }

    /// The stored keys as sorted strings.
    fn sorted_keys(store: &CounterStore) -> Vec<String> {
        let mut keys: Vec<_> = store
            .snapshot()
            .into_keys()
            .map(|key| String::from_utf8(key).unwrap())
            .collect();
        keys.sort();
        keys
    }

    fn p_bytes(bytes: &[u8]) -> StorePath {
        StorePath::new(OsStr::from_bytes(bytes)).expect("valid test path")
    }

    #[test]
    fn store_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<CounterStore>();
    }

    #[test]
    fn counts_reads_and_writes() {
        let store = CounterStore::in_memory();
        let path = p("user/prefs.md");
        assert_eq!(store.get(&path), Counters::default());
        assert!(!store.is_dirty());

        store.record_read_open(&path);
        store.record_read_open(&path);
        store.record_write(&path, b"hello", 0);
        store.record_write(&path, b"foobar", 1_795_319_632);

        let counters = store.get(&path);
        assert_eq!(counters.access_count, 2);
        assert_eq!(counters.version, 2);
        assert_eq!(
            counters.content_hash.as_deref(),
            Some("fnv1a64:85944171f73967e8")
        );
        assert_eq!(counters.updated_at.as_deref(), Some("2026-11-22T03:53:52Z"));
        assert!(store.is_dirty());
        assert_eq!(store.get(&p("user/other.md")), Counters::default());
    }

    #[test]
    fn fnv1a64_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(content_hash(b""), "fnv1a64:cbf29ce484222325");
    }

    #[test]
    fn rfc3339_known_timestamps() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        // 1795319632 = 20779 days + 14032 s. Day 20454 is 2026-01-01
        // (56 years, 14 of them leap), so this is day 325 of 2026, which is
        // November 22; 14032 s = 3 h 53 min 52 s.
        assert_eq!(rfc3339_utc(1_795_319_632), "2026-11-22T03:53:52Z");
        assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(rfc3339_utc(MIN_UNIX), "0000-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(MAX_UNIX), "9999-12-31T23:59:59Z");
        assert_eq!(rfc3339_utc(i64::MIN), "0000-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(i64::MAX), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn xattrs_and_frontmatter_fields() {
        let store = CounterStore::in_memory();
        let path = p("a.md");
        assert_eq!(CounterStore::xattr_names().len(), 4);
        assert_eq!(
            store.xattr(&path, "user.mnemofs.access_count"),
            Some(b"0".to_vec())
        );
        assert_eq!(store.xattr(&path, "user.mnemofs.content_hash"), None);
        assert_eq!(store.xattr(&path, "user.mnemofs.updated_at"), None);
        assert_eq!(store.xattr(&path, "user.other"), None);
        assert_eq!(
            store.frontmatter_fields(&path),
            vec![
                ("access_count", "0".to_string()),
                ("version", "0".to_string())
            ]
        );

        store.record_read_open(&path);
        store.record_write(&path, b"", 0);
        let values: Vec<_> = CounterStore::xattr_names()
            .iter()
            .map(|name| {
                store
                    .xattr(&path, name)
                    .map(|v| String::from_utf8(v).unwrap())
            })
            .collect();
        assert_eq!(
            values,
            vec![
                Some("1".to_string()),
                Some("1".to_string()),
                Some("fnv1a64:cbf29ce484222325".to_string()),
                Some("1970-01-01T00:00:00Z".to_string()),
            ]
        );
        let fields: Vec<&str> = store
            .frontmatter_fields(&path)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(
            fields,
            ["access_count", "version", "content_hash", "updated_at"]
        );
    }

    #[test]
    fn rename_moves_a_file() {
        let store = CounterStore::in_memory();
        store.record_read_open(&p("inbox/x.md"));
        store.record_write(&p("notes/x.md"), b"old", 5);
        store.rename(&p("inbox/x.md"), &p("notes/x.md"));
        assert_eq!(store.get(&p("inbox/x.md")), Counters::default());
        // Rename-over: the destination's old counters are gone.
        let moved = store.get(&p("notes/x.md"));
        assert_eq!(moved.access_count, 1);
        assert_eq!(moved.version, 0);
        assert_eq!(moved.content_hash, None);
    }

    #[test]
    fn rename_over_with_nothing_recorded_clears_destination() {
        let store = CounterStore::in_memory();
        store.record_write(&p("b.md"), b"x", 1);
        store.rename(&p("a.md"), &p("b.md"));
        assert_eq!(store.get(&p("b.md")), Counters::default());
        assert!(store.is_empty());
    }

    #[test]
    fn rename_of_a_directory_does_not_touch_sibling_with_common_prefix() {
        let store = CounterStore::in_memory();
        for path in [
            "a/b",
            "a/b/x.md",
            "a/b/deep/y.md",
            "a/bc",
            "a/bc/z.md",
            "a/b.md",
        ] {
            store.record_read_open(&p(path));
        }
        store.rename(&p("a/b"), &p("c"));
        assert_eq!(
            sorted_keys(&store),
            ["a/b.md", "a/bc", "a/bc/z.md", "c", "c/deep/y.md", "c/x.md"]
        );
    }

    #[test]
    fn remove_drops_a_subtree_only() {
        let store = CounterStore::in_memory();
        for path in ["a/b", "a/b/x.md", "a/bc/z.md", "a/b.md", "a"] {
            store.record_read_open(&p(path));
        }
        store.remove(&p("a/b"));
        assert_eq!(sorted_keys(&store), ["a", "a/b.md", "a/bc/z.md"]);
        store.remove(&StorePath::root());
        assert!(store.is_empty());
    }

    #[test]
    fn persistence_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/counters.json");
        let store = CounterStore::open(&file);
        store.record_read_open(&p("a.md"));
        store.record_write(&p("a.md"), b"body", 1_795_319_632);
        store.record_write(&p("dir/b.md"), b"x", -5);
        store.flush().unwrap();
        assert!(!store.is_dirty());

        let reopened = CounterStore::open(&file);
        assert_eq!(reopened.snapshot(), store.snapshot());
        assert!(!reopened.is_dirty());
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&file).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        // No temp files left behind.
        assert_eq!(fs::read_dir(file.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn flush_only_when_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        let store = CounterStore::open(&file);
        store.flush().unwrap();
        assert!(!file.exists());
        store.remove(&p("nothing/here"));
        store.rename(&p("x"), &p("y"));
        assert!(!store.is_dirty());

        let memory = CounterStore::in_memory();
        memory.record_read_open(&p("a"));
        memory.flush().unwrap();
        assert!(!memory.is_dirty());
    }

    #[test]
    fn failed_flush_stays_dirty() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("not-a-dir");
        fs::write(&blocker, b"").unwrap();
        let store = CounterStore::open(&blocker.join("counters.json"));
        store.record_read_open(&p("a"));
        assert!(store.flush().is_err());
        assert!(store.is_dirty());
    }

    #[test]
    fn corrupt_file_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        fs::write(&file, b"{not json").unwrap();
        let store = CounterStore::open(&file);
        assert!(store.is_empty());
        assert!(!file.exists());
        let aside: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(aside.len(), 1);
        let suffix = aside[0].strip_prefix("counters.json.corrupt-").unwrap();
        assert!(suffix.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(fs::read(dir.path().join(&aside[0])).unwrap(), b"{not json");

        // A second bad file in the same second does not overwrite the first.
        fs::write(&file, b"[]").unwrap();
        let _ = CounterStore::open(&file);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);

        store.record_read_open(&p("a"));
        store.flush().unwrap();
        assert_eq!(CounterStore::open(&file).get(&p("a")).access_count, 1);
    }

    #[test]
    fn unreadable_file_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        fs::create_dir(&file).unwrap();
        let store = CounterStore::open(&file);
        assert!(store.is_empty());
        store.record_read_open(&p("a"));
        store.flush().unwrap();
        assert!(file.is_file());
    }

    #[test]
    fn wrong_format_version_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        fs::write(
            &file,
            br#"{"format":"mnemofs-counters","version":99,"entries":[]}"#,
        )
        .unwrap();
        assert!(CounterStore::open(&file).is_empty());
        assert!(!file.exists());
    }

    #[test]
    fn bad_entries_are_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        let text = r#"{"format":"mnemofs-counters","version":1,"entries":[
            {"path":"../escape","access_count":1},
            {"path_hex":"zz","access_count":1},
            {"path":"a","path_hex":"61","access_count":1},
            {"access_count":1},
            {"path":"ok//b.md","access_count":3,"content_hash":"md5:xyz","updated_at":0},
            {"path":"empty.md"}
        ]}"#;
        fs::write(&file, text).unwrap();
        let store = CounterStore::open(&file);
        assert_eq!(store.len(), 1);
        assert_eq!(
            store.get(&p("ok/b.md")),
            Counters {
                access_count: 3,
                version: 0,
                content_hash: None,
                updated_at: Some("1970-01-01T00:00:00Z".into()),
            }
        );
    }

    #[test]
    fn non_utf8_paths_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        let latin1 = p_bytes(b"caf\xe9/r\xe9sum\xe9.md");
        let store = CounterStore::open(&file);
        store.record_read_open(&latin1);
        store.record_write(&p("caf\u{e9}/x.md"), b"x", 1);
        store.flush().unwrap();
        let text = fs::read_to_string(&file).unwrap();
        assert!(text.contains(r#""path_hex":"636166e92f72e973756de92e6d64""#));

        let reopened = CounterStore::open(&file);
        assert_eq!(reopened.get(&latin1).access_count, 1);
        assert_eq!(reopened.snapshot(), store.snapshot());
        reopened.rename(&p_bytes(b"caf\xe9"), &p("cafe"));
        assert_eq!(
            reopened.get(&p("cafe/r\u{e9}sum\u{e9}.md")),
            Counters::default()
        );
        assert_eq!(
            reopened.get(&p_bytes(b"cafe/r\xe9sum\xe9.md")).access_count,
            1
        );
    }

    #[test]
    fn hundred_thousand_entries() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counters.json");
        let store = CounterStore::open(&file);
        for i in 0..100_000u32 {
            let path = p(&format!("d{}/note-{i}.md", i % 100));
            store.record_write(&path, &i.to_le_bytes(), i64::from(i));
        }
        store.rename(&p("d7"), &p("seven"));
        store.flush().unwrap();
        let reopened = CounterStore::open(&file);
        assert_eq!(reopened.len(), 100_000);
        assert_eq!(reopened.get(&p("seven/note-7.md")).version, 1);
    }

    #[test]
    fn concurrent_records_are_all_counted() {
        let store = std::sync::Arc::new(CounterStore::in_memory());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        store.record_read_open(&p("shared.md"));
                    }
                    store.flush().unwrap();
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(store.get(&p("shared.md")).access_count, 8000);
    }

    /// Days since 1970-01-01 of a civil date (Hinnant's algorithm), to
    /// check jiff's calendar behind `rfc3339_utc` against an independent
    /// formula.
    fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
        let year = if month <= 2 { year - 1 } else { year };
        let era = year.div_euclid(400);
        let year_of_era = year.rem_euclid(400);
        let shifted = if month > 2 { month - 3 } else { month + 9 };
        let day_of_year = (153 * shifted + 2) / 5 + day - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        era * 146_097 + day_of_era - 719_468
    }

    #[derive(Clone, Debug)]
    enum Op {
        Read(usize),
        Write(usize, Vec<u8>, i64),
        Rename(usize, usize),
        Remove(usize),
        Reopen,
    }

    /// Paths chosen to collide on prefixes: `b` vs `bc` vs `b.md`, a
    /// non-UTF-8 name, and the root.
    fn universe() -> Vec<Vec<u8>> {
        let names: [&[u8]; 4] = [b"b", b"bc", b"b.md", b"\xff"];
        let mut paths = vec![Vec::new()];
        for first in names {
            paths.push(first.to_vec());
            for second in names {
                let mut two = first.to_vec();
                two.push(b'/');
                two.extend_from_slice(second);
                paths.push(two.clone());
                for third in [&b"b"[..], b"bc"] {
                    let mut three = two.clone();
                    three.push(b'/');
                    three.extend_from_slice(third);
                    paths.push(three);
                }
            }
        }
        paths
    }

    fn op_strategy(count: usize) -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..count).prop_map(Op::Read),
            3 => (0..count, proptest::collection::vec(any::<u8>(), 0..8), any::<i64>())
                .prop_map(|(i, bytes, now)| Op::Write(i, bytes, now)),
            3 => (0..count, 0..count).prop_map(|(a, b)| Op::Rename(a, b)),
            2 => (0..count).prop_map(Op::Remove),
            1 => Just(Op::Reopen),
        ]
    }

    fn under(key: &[u8], prefix: &[u8]) -> bool {
        prefix.is_empty()
            || key == prefix
            || (key.starts_with(prefix) && key.get(prefix.len()) == Some(&b'/'))
    }

    proptest! {
        #[test]
        fn matches_naive_model(ops in proptest::collection::vec(op_strategy(universe().len()), 0..60)) {
            let paths = universe();
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("counters.json");
            let mut store = CounterStore::open(&file);
            let mut model: HashMap<Vec<u8>, Counters> = HashMap::new();
            for op in ops {
                match op {
                    Op::Read(i) => {
                        store.record_read_open(&p_bytes(&paths[i]));
                        model.entry(paths[i].clone()).or_default().access_count += 1;
                    }
                    Op::Write(i, bytes, now) => {
                        store.record_write(&p_bytes(&paths[i]), &bytes, now);
                        let entry = model.entry(paths[i].clone()).or_default();
                        entry.version += 1;
                        entry.content_hash = Some(content_hash(&bytes));
                        entry.updated_at = Some(rfc3339_utc(now));
                    }
                    Op::Rename(a, b) => {
                        store.rename(&p_bytes(&paths[a]), &p_bytes(&paths[b]));
                        let (from, to) = (&paths[a], &paths[b]);
                        if !from.is_empty() && !to.is_empty() && from != to {
                            let moved: Vec<_> = model.keys().filter(|k| under(k, from)).cloned().collect();
                            let moved: Vec<_> = moved.into_iter().map(|k| {
                                let v = model.remove(&k).unwrap();
                                (k, v)
                            }).collect();
                            model.retain(|k, _| !under(k, to));
                            for (k, v) in moved {
                                let mut new_key = to.clone();
                                new_key.extend_from_slice(&k[from.len()..]);
                                model.insert(new_key, v);
                            }
                        }
                    }
                    Op::Remove(i) => {
                        store.remove(&p_bytes(&paths[i]));
                        model.retain(|k, _| !under(k, &paths[i]));
                    }
                    Op::Reopen => {
                        store.flush().unwrap();
                        prop_assert!(!store.is_dirty());
                        store = CounterStore::open(&file);
                    }
                }
                prop_assert_eq!(&store.snapshot(), &model);
            }
            for path in &paths {
                let expected = model.get(path).cloned().unwrap_or_default();
                prop_assert_eq!(store.get(&p_bytes(path)), expected);
            }
        }

        #[test]
        fn rfc3339_inverts(t in MIN_UNIX..=MAX_UNIX) {
            let text = rfc3339_utc(t);
            prop_assert_eq!(text.len(), 20);
            let field = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
            let days = days_from_civil(field(0..4), field(5..7), field(8..10));
            let secs = field(11..13) * 3600 + field(14..16) * 60 + field(17..19);
            prop_assert_eq!(days * 86_400 + secs, t);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }
    }
}
