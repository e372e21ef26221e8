//! Turning one store file into one tantivy document.
//!
//! Which files count: every regular file except dot-files and anything
//! under a dot-directory (`.git/`, `.obsidian/`, `.mnemofs-tmp-*`, emacs
//! `.#locks`) and editor swap or backup files (`*.swp`, `*~`). `.md` files
//! are parsed as memories; other files are indexed as full text with their
//! path as title unless they look binary, in which case only a `skipped`
//! stub is kept (see `schema.rs`). Files over [`MAX_INDEXED_BYTES`] are
//! indexed by their first 8 MiB.
//!
//! Subtleties:
//! - Link resolution is by normalized key ([`normalize_key`]): lowercase,
//!   trimmed, without a trailing `.md`. A memory answers to its id, title,
//!   stem, aliases and every trailing part of its path (`a/b/c`, `b/c`), so
//!   `[[b/c]]` reaches `a/b/c.md` as Obsidian resolves it.
//! - Dates come from the frontmatter when it parses, else from the file's
//!   mtime; `changed` is the later of `updated` and the mtime and orders
//!   `recent/`.

use std::collections::BTreeSet;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;

use tantivy::{DateTime, TantivyDocument};

use super::schema::{FLAG_LINT, Fields, KIND_MEMORY, KIND_SKIPPED, KIND_TEXT};
use crate::memory::{self, Memory, parse_timestamp};
use crate::store::{Store, StorePath};

/// How much of a file is read and indexed.
pub(crate) const MAX_INDEXED_BYTES: u64 = 8 * 1024 * 1024;

/// What the index remembers to decide whether a file changed. Size and
/// mtime alone miss another file renamed over this one with the same of
/// both, and a rewrite that sets the mtime back; the inode and the status
/// change time catch those.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileState {
    pub(crate) size: u64,
    /// Nanoseconds since the epoch.
    pub(crate) mtime_ns: i64,
    pub(crate) inode: u64,
    /// Nanoseconds since the epoch.
    pub(crate) ctime_ns: i64,
}

impl FileState {
    pub(crate) fn of(stat: &crate::store::Stat) -> FileState {
        FileState {
            size: stat.size,
            mtime_ns: stat.mtime.nanos(),
            inode: stat.ino,
            ctime_ns: stat.ctime.nanos(),
        }
    }

    /// Adds the state to a file's document.
    pub(crate) fn add_to(self, f: &Fields, doc: &mut TantivyDocument) {
        doc.add_u64(f.size, self.size);
        doc.add_i64(f.mtime, self.mtime_ns);
        doc.add_u64(f.inode, self.inode);
        doc.add_i64(f.ctime, self.ctime_ns);
    }

    fn mtime_secs(self) -> i64 {
        self.mtime_ns.div_euclid(1_000_000_000)
    }
}

/// Whether a single name is skipped: dot-files, dot-directories, editor
/// swap and backup files.
pub(crate) fn is_ignored_name(name: &[u8]) -> bool {
    name.first() == Some(&b'.')
        || name.ends_with(b"~")
        || name.ends_with(b".swp")
        || name.ends_with(b".swo")
        || name.ends_with(b".swx")
}

/// Whether any component of `path` is ignored.
pub(crate) fn is_ignored(path: &StorePath) -> bool {
    path.as_path()
        .components()
        .any(|c| is_ignored_name(c.as_os_str().as_bytes()))
}

/// The exact bytes of a path, the unique key of its document.
pub(crate) fn path_key(path: &StorePath) -> &[u8] {
    path.as_path().as_os_str().as_bytes()
}

/// A path from the bytes of its key; `None` if they are not a valid path.
pub(crate) fn path_from_key(key: &[u8]) -> Option<StorePath> {
    StorePath::new(std::ffi::OsStr::from_bytes(key))
}

/// The form in which link targets and the names they resolve to are
/// compared: trimmed, lowercase, without a trailing `.md` or leading `./`.
pub fn normalize_key(name: &str) -> String {
    let mut s = name.trim();
    while let Some(rest) = s.strip_prefix("./").or_else(|| s.strip_prefix('/')) {
        s = rest;
    }
    let lower = s.to_lowercase();
    match lower.strip_suffix(".md") {
        Some(stem) if !stem.is_empty() => stem.trim_end().to_owned(),
        _ => lower,
    }
}

/// Every name a memory at `path` answers to in a link.
pub(crate) fn memory_keys(
    path: &StorePath,
    title: &str,
    id: Option<&str>,
    aliases: &[String],
) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    if let Some(id) = id {
        keys.insert(normalize_key(id));
    }
    keys.insert(normalize_key(title));
    for alias in aliases {
        keys.insert(normalize_key(alias));
    }
    // Every trailing part of the path: `a/b/c.md` → `a/b/c`, `b/c`, `c`.
    let lossy = path.as_path().to_string_lossy();
    let full = normalize_key(&lossy);
    let mut rest = full.as_str();
    loop {
        keys.insert(rest.to_owned());
        match rest.split_once('/') {
            Some((_, tail)) => rest = tail,
            None => break,
        }
    }
    keys.remove("");
    keys
}

/// The link keys of a memory's outgoing links.
pub(crate) fn link_keys(memory: &Memory) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = memory
        .links
        .iter()
        .map(|l| normalize_key(&l.target))
        .collect();
    keys.remove("");
    keys
}

/// File name without `.md` (or the whole name for other files), lossy.
pub(crate) fn stem(path: &StorePath) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    match name.strip_suffix(".md") {
        Some(stem) => stem.to_owned(),
        None => name.into_owned(),
    }
}

fn is_markdown(path: &StorePath) -> bool {
    path.file_name()
        .map(|n| n.as_bytes())
        .is_some_and(|n| n.len() > 3 && n[n.len() - 3..].eq_ignore_ascii_case(b".md"))
}

/// The bytes of a file cut at [`MAX_INDEXED_BYTES`], backed off to a
/// character boundary so the cut does not read as invalid UTF-8.
fn clip(bytes: &[u8]) -> &[u8] {
    let max = MAX_INDEXED_BYTES as usize;
    if bytes.len() <= max {
        return bytes;
    }
    let clipped = &bytes[..max];
    match std::str::from_utf8(clipped) {
        Err(e) if e.error_len().is_none() => &clipped[..e.valid_up_to()],
        _ => clipped,
    }
}

/// Reads at most [`MAX_INDEXED_BYTES`] of a file.
pub(crate) fn read_clipped(store: &Store, path: &StorePath) -> io::Result<Vec<u8>> {
    let file = store.open_file(path, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
    // Sized from the start, so a note is read in one call, not in doubling
    // pieces.
    let size = crate::store::fstat(&file).map_or(0, |st| st.size);
    let mut bytes = Vec::with_capacity(size.min(MAX_INDEXED_BYTES) as usize + 1);
    file.take(MAX_INDEXED_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The text [`build`] indexes as the body of the file at `path`, read
/// again from the store (the index does not keep it): for a memory, what
/// follows its frontmatter. `None` when the file is gone, unreadable or
/// binary.
pub(crate) fn body_of(store: &Store, path: &StorePath) -> Option<String> {
    let bytes = read_clipped(store, path).ok()?;
    let bytes = clip(&bytes);
    if memory::is_probably_binary(bytes) {
        return None;
    }
    let text = String::from_utf8_lossy(bytes);
    if !is_markdown(path) {
        return Some(text.into_owned());
    }
    Some(memory::body_of(&text).to_owned())
}

fn date(secs: i64) -> DateTime {
    DateTime::from_timestamp_secs(secs)
}

/// A title, as written and stemmed.
fn add_title(f: &Fields, doc: &mut TantivyDocument, title: &str) {
    doc.add_text(f.title, title);
    doc.add_text(f.title_stem, title);
}

/// How much of a memory's body is read for the times it names.
const MENTIONS_READ: usize = 16 * 1024;
/// The most times of one memory kept.
const MAX_MENTIONED: usize = 32;

/// The days `body` names that were still ahead when it was written
/// (`written`), as the reminders read them in `tz` ("the dentist on
/// Friday", "下周三"): a question about that day finds the memory too.
fn mentioned(body: &str, written: i64, tz: &jiff::tz::TimeZone) -> Vec<jiff::civil::Date> {
    let mut end = body.len().min(MENTIONS_READ);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let mut days: Vec<jiff::civil::Date> =
        memory::reminders::extract_reminders(&body[..end], written, tz)
            .into_iter()
            .filter_map(|r| local_day(r.due, tz))
            .collect();
    days.sort_unstable();
    days.dedup();
    days.truncate(MAX_MENTIONED);
    days
}

/// The day of the instant `secs` in `tz`.
fn local_day(secs: i64, tz: &jiff::tz::TimeZone) -> Option<jiff::civil::Date> {
    Some(
        jiff::Timestamp::from_second(secs)
            .ok()?
            .to_zoned(tz.clone())
            .date(),
    )
}

/// A day as the index keeps it: its first second in UTC.
pub(crate) fn day_start(day: jiff::civil::Date) -> i64 {
    day.to_zoned(jiff::tz::TimeZone::UTC)
        .map_or(0, |z| z.timestamp().as_second())
}

/// A body, as written and stemmed.
fn add_body(f: &Fields, doc: &mut TantivyDocument, body: &str) {
    doc.add_text(f.body, body);
    doc.add_text(f.body_stem, body);
}

/// Whether `doc` is a memory without an id of its own, which the index
/// gives one from its table (see `ids.rs`).
pub(crate) fn needs_id(f: &Fields, doc: &TantivyDocument) -> bool {
    use tantivy::schema::Value;
    doc.get_first(f.kind)
        .and_then(|v| v.as_str())
        .is_some_and(|k| k == KIND_MEMORY)
        && doc.get_first(f.id).is_none()
}

/// Gives `doc` the id `id`: found by `by-id/`, in links and in hits.
pub(crate) fn add_id(f: &Fields, doc: &mut TantivyDocument, id: &str) {
    doc.add_text(f.id, id);
    doc.add_text(f.key, normalize_key(id));
}

/// The document for a file with contents `bytes` (at most
/// [`MAX_INDEXED_BYTES`] of them are used).
pub(crate) fn build(
    f: &Fields,
    path: &StorePath,
    state: FileState,
    bytes: &[u8],
) -> TantivyDocument {
    let bytes = clip(bytes);
    let mut doc = TantivyDocument::new();
    doc.add_bytes(f.path, path_key(path));
    state.add_to(f, &mut doc);
    let mtime = state.mtime_secs();

    if memory::is_probably_binary(bytes) {
        doc.add_text(f.kind, KIND_SKIPPED);
        return doc;
    }
    let clipped = state.size > MAX_INDEXED_BYTES;
    if clipped {
        doc.add_text(f.flag, FLAG_LINT);
        doc.add_text(
            f.lint,
            format!(
                "only the first {} MiB of its {} MiB are indexed: search does not see the rest",
                MAX_INDEXED_BYTES >> 20,
                state.size.div_ceil(1 << 20)
            ),
        );
    }
    if !is_markdown(path) {
        let text = String::from_utf8_lossy(bytes);
        doc.add_text(f.kind, KIND_TEXT);
        let title = path.as_path().to_string_lossy();
        add_title(f, &mut doc, &title);
        add_body(f, &mut doc, &text);
        for key in memory_keys(path, &title, None, &[]) {
            doc.add_text(f.key, key);
        }
        doc.add_date(f.created, date(mtime));
        doc.add_date(f.updated, date(mtime));
        doc.add_i64(f.changed, mtime);
        return doc;
    }

    let stem = stem(path);
    let Some((text, memory)) = memory::parse_bytes(&stem, bytes) else {
        doc.add_text(f.kind, KIND_SKIPPED);
        return doc;
    };
    let fm = &memory.frontmatter;
    doc.add_text(f.kind, KIND_MEMORY);
    add_title(f, &mut doc, &memory.title);
    add_body(f, &mut doc, memory.body(&text));
    for tag in &memory.tags {
        doc.add_text(f.tag, tag);
    }
    // Without a `category:`, the category folder it is in (a note in
    // `decisions/` that nobody wrote since the mount, so the normalizer
    // left it as it was).
    let folder = || crate::memory::Category::of_folder(path.as_path());
    if let Some(c) = fm.category.or_else(folder) {
        doc.add_text(f.category, c.as_str());
    }
    if let Some(p) = fm.phase {
        doc.add_text(f.phase, p.as_str());
    }
    let keyword_fields = [
        (f.kind_type, &fm.kind),
        (f.status, &fm.status),
        (f.scope, &fm.scope),
        (f.source, &fm.source),
    ];
    for (field, value) in keyword_fields {
        if let Some(v) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            doc.add_text(field, v);
        }
    }
    let id = fm.id.as_deref().map(str::trim).filter(|v| !v.is_empty());
    if let Some(id) = id {
        doc.add_text(f.id, id);
    }
    for alias in &fm.aliases {
        doc.add_text(f.alias, alias);
        doc.add_text(f.title_stem, alias);
    }
    for key in memory_keys(path, &memory.title, id, &fm.aliases) {
        doc.add_text(f.key, key);
    }
    for key in link_keys(&memory) {
        doc.add_text(f.link, key);
    }
    let created = fm
        .created_at
        .as_deref()
        .and_then(parse_timestamp)
        .unwrap_or(mtime);
    let updated = fm
        .updated_at
        .as_deref()
        .and_then(parse_timestamp)
        .unwrap_or(mtime);
    doc.add_date(f.created, date(created));
    doc.add_date(f.updated, date(updated));
    let tz = jiff::tz::TimeZone::system();
    let day = fm
        .created_at
        .as_deref()
        .and_then(memory::written_day)
        .or_else(|| local_day(created, &tz));
    if let Some(day) = day {
        doc.add_date(f.day, date(day_start(day)));
    }
    for day in mentioned(memory.body(&text), created, &tz) {
        doc.add_date(f.mentioned, date(day_start(day)));
    }
    doc.add_i64(f.changed, updated.max(mtime));
    let conflict = memory::conflict::parse(&path.to_string()).map(|c| {
        format!(
            "a sync conflict: the version of {} from {} ({}); keep what you want of it \
             in {}, then delete this copy",
            c.original, c.host, c.when, c.original
        )
    });
    if !memory.lint.is_empty() || !memory.schema_warnings.is_empty() || conflict.is_some() {
        if !clipped {
            doc.add_text(f.flag, FLAG_LINT);
        }
        for issue in &memory.lint {
            doc.add_text(f.lint, issue.to_string());
        }
        for warning in &memory.schema_warnings {
            doc.add_text(f.lint, warning);
        }
        if let Some(conflict) = conflict {
            doc.add_text(f.lint, conflict);
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_normalized() {
        assert_eq!(normalize_key("  Dark Mode.md "), "dark mode");
        assert_eq!(normalize_key("./Notes/X"), "notes/x");
        assert_eq!(normalize_key(".md"), ".md");
        let p = StorePath::new("a/B/c.md").unwrap();
        let keys = memory_keys(&p, "Title", Some("ID-1"), &["Al".into()]);
        let keys: Vec<_> = keys.into_iter().collect();
        assert_eq!(keys, ["a/b/c", "al", "b/c", "c", "id-1", "title"]);
    }

    #[test]
    fn ignored_names() {
        for name in [
            ".git",
            ".#x.md",
            "x.md~",
            ".x.md.swp",
            "a.swp",
            ".mnemofs-tmp-1",
        ] {
            assert!(is_ignored_name(name.as_bytes()), "{name}");
        }
        assert!(!is_ignored_name(b"notes.md"));
        assert!(is_ignored(&StorePath::new("a/.obsidian/x.json").unwrap()));
    }

    #[test]
    fn clip_keeps_char_boundaries() {
        let mut big = vec![b'a'; MAX_INDEXED_BYTES as usize - 1];
        big.extend_from_slice("é".as_bytes());
        let clipped = clip(&big);
        assert_eq!(clipped.len(), MAX_INDEXED_BYTES as usize - 1);
        assert!(std::str::from_utf8(clipped).is_ok());
    }
}
