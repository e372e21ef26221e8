//! Typed requests and responses: what crosses the control socket.
//!
//! One request is one operation of [`Operations`](super::Operations); the
//! CLI, the socket server and the MCP server all speak these, so an
//! operation's arguments are spelled once. Requests and responses are
//! JSON (`{"op": "read", "path": "notes/a.md"}`), one per line.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{
    Brief, Checkpoint, FilePage, Incoming, MemoryContext, MemoryFilter, MemoryRecord,
    MemorySummary, MemoryText, Placed, RecordFilter, RecordPage, Report, Step, StepReport,
    Verbatim,
};

/// A request's operation, as logs name it (`search`, `read_memory`...).
pub(crate) struct OpName<'a>(pub(crate) &'a Request);

impl std::fmt::Display for OpName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let debug = format!("{:?}", self.0);
        let name = debug.split([' ', '{', '(']).next().unwrap_or_default();
        for (i, c) in name.char_indices() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    f.write_str("_")?;
                }
                write!(f, "{}", c.to_ascii_lowercase())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// One operation, with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Lists a folder (real or virtual) `depth` levels deep.
    List {
        /// The folder, relative to the store root ("" for the root).
        path: String,
        /// How many levels: 1 lists the folder's own entries.
        #[serde(default = "one")]
        depth: usize,
    },
    /// Reads a text file (real, virtual, or a view's link to a memory).
    Read {
        /// The file.
        path: String,
    },
    /// Searches the index.
    Search {
        /// The query, in the query language.
        query: String,
        /// Most hits.
        #[serde(default = "twenty")]
        limit: usize,
    },
    /// Writes a file: a new one, or over an existing one if `overwrite`.
    Create {
        /// The file.
        path: String,
        /// Its whole content.
        content: String,
        /// Replace the file if it exists.
        #[serde(default)]
        overwrite: bool,
    },
    /// Replaces the one occurrence of `old` in a file by `new`.
    StrReplace {
        /// The file.
        path: String,
        /// The text to find; it must occur exactly once.
        old: String,
        /// What to put in its place.
        new: String,
    },
    /// Inserts text after line `line` (0: at the top).
    Insert {
        /// The file.
        path: String,
        /// The line after which the text goes.
        line: i64,
        /// The text.
        text: String,
    },
    /// Inserts text after line `line` of a memory's body (0: just below
    /// the frontmatter), so the frontmatter is never split.
    InsertInBody {
        /// The file.
        path: String,
        /// The line of the body after which the text goes.
        line: i64,
        /// The text.
        text: String,
    },
    /// Renames or moves a file or folder; never replaces anything.
    Rename {
        /// Where it is.
        from: String,
        /// Where it goes.
        to: String,
    },
    /// Deletes a file, or a folder with everything in it.
    Delete {
        /// The file or folder.
        path: String,
    },
    /// Writes a new memory with frontmatter fields.
    WriteMemory(NewMemory),
    /// Keeps a text verbatim as a note in `folder`, titled by its first
    /// line and tagged `manual-capture`.
    Remember {
        /// The text.
        text: String,
        /// The folder, relative to the store (default `remember`).
        #[serde(default)]
        folder: Option<String>,
    },
    /// Records in `from`'s `links:` that memory `from` links to memory
    /// `to`, and with `both` the link back in `to`'s (memory-cli's links
    /// go both ways).
    Link {
        /// The linking memory (a reference).
        from: String,
        /// The memory linked to (a reference).
        to: String,
        /// Record the link in `to`'s `links:` too.
        #[serde(default)]
        both: bool,
    },
    /// Finds the memory a reference (id, path, title or alias) names.
    Resolve {
        /// The reference.
        reference: String,
    },
    /// Runs the organizer now.
    Dream {
        /// 1 = inbox and lifecycle; 2 = also duplicates and links;
        /// 3 = also reminders.
        #[serde(default = "one_u8")]
        level: u8,
    },
    /// Rebuilds the index from the store.
    Reindex,
    /// Writes the missing frontmatter into memories now, with the ids
    /// the index shows: those `paths` name, or every one with `all`.
    Normalize {
        /// References (paths, ids, titles) of the memories.
        #[serde(default)]
        paths: Vec<String>,
        /// Every memory outside `archive/`.
        #[serde(default)]
        all: bool,
    },
    /// The session brief for a session in `cwd`.
    Brief {
        /// The session's working directory, if known.
        #[serde(default)]
        cwd: Option<String>,
        /// How far back, in seconds, its recent sessions and activity
        /// reach; unbounded when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within: Option<u64>,
    },
    /// Writes or updates a session's note.
    Checkpoint(Checkpoint),
    /// Says who serves the store and how the index and tasks are doing.
    Status,
    /// Waits (ten seconds at most) until `paths`, and every change the
    /// index has been told of, are searchable: after a command's write,
    /// and between the calls of a batch, so a search finds what the write
    /// before it wrote even while the store watcher has yet to report it.
    Settle {
        /// Paths just changed, relative to the store.
        #[serde(default)]
        paths: Vec<String>,
    },
    /// Says what is at a path, without following a symlink there (like
    /// `lstat`): a real entry, or a view's folder, file or link.
    Stat {
        /// The path, relative to the store root ("" for the root).
        path: String,
    },
    /// Replaces the one occurrence of `old` in a file by `new`, counting
    /// occurrences as told, and answers with the new text and the line of
    /// the change (`StrReplace` counts overlapping ones and answers `Done`).
    Replace {
        /// The file.
        path: String,
        /// The text to find; it must occur exactly once.
        old: String,
        /// What to put in its place.
        new: String,
        /// How occurrences are counted.
        #[serde(default)]
        counting: Counting,
    },
    /// Reads the memory a reference (id, path, title or alias) names, split
    /// into frontmatter and body.
    ReadMemory {
        /// The reference.
        reference: String,
    },
    /// The memories that link to the memory a reference names, by path.
    Backlinks {
        /// The reference.
        reference: String,
        /// Most memories listed.
        #[serde(default = "super::lookup::fifty")]
        limit: usize,
    },
    /// The most recently changed memories, newest first.
    Recent {
        /// Most memories listed.
        #[serde(default = "twenty")]
        limit: usize,
        /// Only those changed at or after this: a date, a timestamp, or a
        /// duration back from now (`7d`).
        #[serde(default)]
        since: Option<String>,
        /// Only those of this `type`.
        #[serde(default, rename = "type")]
        kind: Option<String>,
    },
    /// The memories in a folder, category, tag or type (every filter
    /// given must match), by path.
    Memories(MemoryFilter),
    /// Takes away the link between two memories recorded in `links:`,
    /// both ways.
    Unlink {
        /// One memory (a reference).
        from: String,
        /// The other (a reference).
        to: String,
    },
    /// Adds tags to a memory's `tags:`.
    Tag {
        /// The memory (a reference).
        reference: String,
        /// The tags (a leading `#` is dropped).
        tags: Vec<String>,
    },
    /// Sets frontmatter fields of a memory: each replaced in place when
    /// present, added when missing; other keys, comments and the body are
    /// kept as they are.
    SetFields {
        /// The memory (a reference).
        reference: String,
        /// Field names and their new values, in order.
        fields: Vec<(String, String)>,
    },
    /// A memory with those linked to or from it, `depth` hops out.
    Context {
        /// The memory (a reference).
        reference: String,
        /// How many hops (1 to 5).
        #[serde(default = "one")]
        depth: usize,
        /// Most related memories.
        #[serde(default = "twenty")]
        limit: usize,
    },
    /// The kept earlier versions of a memory, newest first: what deletes,
    /// overwrites and truncations took away.
    History {
        /// The memory (a reference), or the path or id it had if it is gone.
        reference: String,
    },
    /// Brings back an earlier version of a memory: over its content if it
    /// exists, else at the path it had.
    Restore {
        /// The memory (a reference), or the path or id it had if it is gone.
        reference: String,
        /// The version (as `history` numbers them); the newest if none.
        #[serde(default)]
        version: Option<u64>,
    },
    /// The memories deleted and not back, newest first.
    Trash {
        /// Most memories listed.
        #[serde(default = "super::lookup::fifty")]
        limit: usize,
    },
    /// Brings back every memory in the trash at the path it had.
    RestoreTrash,
    /// Runs `request` for a session in `scope` (`global` or
    /// `agent:NAME`): it sees only global memories and the scope's own, and
    /// an agent's writes get its scope. No scope: sees everything.
    Scoped {
        /// The session's scope.
        #[serde(default)]
        scope: Option<String>,
        /// The request to run.
        request: Box<Request>,
    },
    /// Runs `request`, a write, only if the memory it changes is still at
    /// `version` (as `read_memory` gave it); else it fails with a conflict
    /// and writes nothing.
    Expecting {
        /// The version.
        #[serde(default)]
        version: Option<String>,
        /// The request to run.
        request: Box<Request>,
    },
    /// The record of the memory a reference names (memory-cli's `Memory`
    /// plus path, title, type and frontmatter); counts as a read.
    Record {
        /// The reference.
        reference: String,
    },
    /// Deletes the memory a reference names (never a folder).
    DeleteMemory {
        /// The reference.
        reference: String,
    },
    /// Records of every memory matching a filter, by path, a page at a time.
    Records {
        /// Which memories.
        #[serde(default)]
        filter: RecordFilter,
        /// Start after this path (the previous page's `next`).
        #[serde(default)]
        after: Option<String>,
        /// Most records in the page.
        #[serde(default = "page")]
        limit: usize,
    },
    /// The store's files that are not memories (attachments), with their
    /// bytes, by path, a page at a time.
    Files {
        /// Start after this path (the previous page's `next`).
        #[serde(default)]
        after: Option<String>,
        /// Most files in the page.
        #[serde(default = "page")]
        limit: usize,
    },
    /// Runs one lifecycle step of the organizer now.
    Step {
        /// Which.
        step: Step,
    },
    /// Moves an inbox memory into its category now.
    Upgrade {
        /// The memory (a reference).
        reference: String,
        /// Its category, if the caller names one.
        #[serde(default)]
        category: Option<String>,
    },
    /// Puts described memories into the store unless they are there.
    Import {
        /// The memories.
        memories: Vec<Incoming>,
    },
    /// [`Import`](Request::Import) of memories that carry the frontmatter
    /// block their files had (mnemofs's own export): each file is written
    /// back byte for byte.
    ImportVerbatim {
        /// The memories.
        memories: Vec<Verbatim>,
        /// Whether a memory already in the store whose text differs from
        /// the one described gets the described text (the store's earlier
        /// text kept in the history); else the store's copy stays.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        update: bool,
    },
    /// Puts a file that is not a memory (an attachment) into the store
    /// unless it is there; answers `Imported` with one outcome.
    Attach {
        /// Where it goes, relative to the store.
        path: String,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// Runs `request` and answers with its outcome, a failure included, as
    /// data: for front ends that word each failure themselves, since an
    /// error that crosses the socket otherwise keeps only its sentence.
    Checked {
        /// The request to run.
        request: Box<Request>,
    },
    /// Runs one round of sync with the store's git remote (`mnemofs
    /// sync`); answers `Synced`.
    Sync,
}

/// How [`Request::Replace`] counts the occurrences of the text to replace.
///
/// Whichever the counting, a text found more than once is refused with
/// the line of every place it starts, overlapping ones included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counting {
    /// Every place the text starts counts, overlapping ones too: "aa"
    /// occurs twice in "aaa", so which one is meant is unclear. An empty
    /// text is refused.
    #[default]
    Overlapping,
    /// As `str::matches` finds them: left to right, never overlapping
    /// ("aa" occurs once in "aaa", at its start), and an empty text at
    /// every character boundary. Python's `str.count` and `str.replace`
    /// count so, and with them Anthropic's memory tool.
    Disjoint,
    /// As `Overlapping`, in the body only: the frontmatter is changed
    /// through its fields, never by text that happens to repeat in it
    /// (the title a memory was written with is often its first line).
    InBody,
}

fn one() -> usize {
    1
}

fn one_u8() -> u8 {
    1
}

fn twenty() -> usize {
    20
}

fn page() -> usize {
    500
}

/// A memory to write, with the frontmatter fields it gets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewMemory {
    /// The body.
    pub content: String,
    /// Where it goes, relative to the store; else `<category>/<slug>.md`,
    /// or `inbox/<slug>.md` without a category.
    pub path: Option<String>,
    /// `title:`
    pub title: Option<String>,
    /// `category:`
    pub category: Option<String>,
    /// `tags:`
    pub tags: Vec<String>,
    /// `scope:` (global, agent:NAME)
    pub scope: Option<String>,
    /// `source:`
    pub source: Option<String>,
    /// `type:`
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// `status:` (open, active, done, accepted, ... for tasks and
    /// decisions)
    #[serde(default)]
    pub status: Option<String>,
}

/// What an operation answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Response {
    /// A folder's entries.
    Entries {
        /// The entries, folders before their contents.
        entries: Vec<Entry>,
    },
    /// A file's text.
    Text {
        /// The text.
        text: String,
    },
    /// Search results, best first.
    Hits {
        /// The hits.
        hits: Vec<SearchHit>,
        /// How the query was read, where its author should know: fields
        /// it does not have, values that are not dates.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
        /// With no hits: what was searched for, and how to search more
        /// broadly.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
    /// A memory that now exists at `path`.
    Memory {
        /// Where it is, relative to the store.
        path: String,
        /// Its id, if it has one.
        id: Option<String>,
    },
    /// Done; nothing to report.
    Done,
    /// What a dream run did.
    Report {
        /// The report.
        report: Report,
    },
    /// Files indexed by a rebuild.
    Reindexed {
        /// How many files.
        files: usize,
    },
    /// The status.
    Status {
        /// The status (boxed: it is the largest answer by far).
        status: Box<Status>,
    },
    /// The session brief.
    Brief {
        /// The brief.
        brief: Brief,
    },
    /// What is at a path.
    Entry {
        /// The entry.
        entry: Entry,
    },
    /// A file after a replace.
    Replaced {
        /// The file's new text.
        text: String,
        /// The 0-based line where the change starts.
        line: usize,
    },
    /// A memory read whole.
    MemoryText {
        /// The memory.
        memory: MemoryText,
    },
    /// A list of memories.
    Memories {
        /// The memories.
        memories: Vec<MemorySummary>,
    },
    /// A link taken away (or none there).
    Unlinked {
        /// The memory the link was taken from.
        path: String,
        /// True if `links:` had an entry to remove.
        removed: bool,
    },
    /// A memory and the memories around it.
    Context {
        /// The memory and its neighbours.
        context: MemoryContext,
    },
    /// Kept versions, newest first.
    Versions {
        /// The versions.
        versions: Vec<VersionInfo>,
    },
    /// Versions brought back.
    Restored {
        /// What was restored, and where.
        restored: Vec<Restored>,
    },
    /// One memory's record.
    Record {
        /// The record.
        record: Box<MemoryRecord>,
    },
    /// A page of records.
    Records {
        /// The page.
        page: RecordPage,
    },
    /// A page of files that are not memories.
    Files {
        /// The page.
        page: FilePage,
    },
    /// What a lifecycle step did.
    Step {
        /// The report.
        report: Box<StepReport>,
    },
    /// What became of each imported memory, in order.
    Imported {
        /// One per memory.
        placed: Vec<Placed>,
    },
    /// The outcome of a [`Request::Checked`].
    Checked {
        /// The request's answer, or why it failed.
        result: Result<Box<Response>, Failure>,
    },
    /// What a sync round did.
    Synced {
        /// The round's report.
        report: Box<super::SyncReport>,
    },
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the store root.
    pub path: String,
    /// What it is.
    pub kind: EntryKind,
    /// Size in bytes (files; 0 for generated files whose size is unknown).
    pub size: u64,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A file.
    File,
    /// A folder.
    Folder,
    /// A symlink, with its target.
    Link {
        /// The target, as stored.
        target: String,
    },
    /// A fifo, socket or device node.
    Special,
}

/// One kept version of a memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// Its number: `restore --version N` brings it back.
    pub version: u64,
    /// Where the file was, relative to the store root.
    pub path: String,
    /// What took it away: `deleted`, `overwritten` or `truncated`.
    pub why: String,
    /// When, RFC 3339.
    pub at: String,
    /// Its size in bytes.
    pub size: u64,
    /// The memory's id, if it had one.
    pub id: Option<String>,
    /// The memory's title, if it is a markdown memory.
    pub title: Option<String>,
}

/// A version brought back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    /// Where it is now, relative to the store root.
    pub path: String,
    /// The version restored.
    pub version: u64,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// Relative to the store root; bytes that are not UTF-8 as `\xNN`.
    pub path: String,
    /// The path's exact bytes, when they are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<Vec<u8>>,
    /// The memory's title.
    pub title: String,
    /// Relevance; higher is better (BM25 by words, cosine by meaning, a
    /// fused rank's score when both ranked).
    pub score: f32,
    /// A one-line excerpt.
    pub snippet: String,
    /// The memory's id, if it has one.
    pub id: Option<String>,
    /// When it was written (its `created_at`, else its file's time), RFC
    /// 3339 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// The day it was written, `YYYY-MM-DD`, as its `created_at` says it in
    /// its own zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
    /// What found it: `words`, `meaning`, `both`, or `period` (only
    /// written when the question asks about).
    #[serde(default = "by_words")]
    pub matched: crate::index::Side,
}

fn by_words() -> crate::index::Side {
    crate::index::Side::Words
}

/// Who serves the store, and how its index and tasks are doing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// `daemon` when a running daemon answered, `local` when the command
    /// worked on the store itself.
    pub served_by: String,
    /// Where changes go.
    pub writer: String,
    /// The daemon's pid, when one serves the store.
    pub pid: Option<u32>,
    /// The store's backing directory.
    pub store: String,
    /// Searchable documents.
    pub documents: u64,
    /// Changes not yet searchable.
    pub pending_changes: u64,
    /// True until the start-up reconcile has committed.
    pub reconciling: bool,
    /// Memories without `id:` in their file, whose id the index keeps
    /// until they are written (or `mnemofs normalize --all`).
    #[serde(default)]
    pub kept_ids: u64,
    /// Unix milliseconds of the last index commit, 0 if none yet.
    pub last_commit_ms: i64,
    /// Why indexing is failing (say, the state dir's disk is full), until
    /// it works again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_failing: Option<String>,
    /// While the index is rebuilt: files read so far, and in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilding: Option<Rebuilding>,
    /// True when an organizer runs here.
    pub organizer: bool,
    /// Changes waiting for the organizer (files to normalize, changes not
    /// taken yet): a backlog `pending_changes` does not show.
    #[serde(default)]
    pub organizer_queue: usize,
    /// The last report of each task.
    pub tasks: HashMap<String, Report>,
    /// Earlier versions kept here, if any are (`mnemofs history`); boxed,
    /// as every response is as large as its largest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Box<HistoryUsage>>,
    /// Search by meaning, when a model is configured; `None`: search is
    /// by words only. Boxed, as `history`.
    #[serde(default)]
    pub meaning: Option<Box<MeaningStatus>>,
    /// Why search is by words only although the config names a model
    /// (one that is not downloaded, or cannot be loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meaning_off: Option<String>,
    /// The last sync round run here, when the store is kept in step with
    /// a git remote; boxed, as `history`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<Box<super::SyncReport>>,
    /// Conflict copies a sync made that are still in the store: the other
    /// side's versions, waiting for someone to resolve them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
}

/// How search by meaning is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeaningStatus {
    /// The model's name.
    pub model: String,
    /// Memories with vectors.
    pub embedded: u64,
    /// Memories waiting for their vectors (a search never waits for them).
    pub backlog: u64,
    /// Of `embedded`, those the model cannot read (Chinese to an English
    /// model, next to no letters): they are found by their words alone.
    #[serde(default)]
    pub unread: u64,
}

/// What the kept earlier versions take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryUsage {
    /// Versions kept.
    pub versions: usize,
    /// Bytes their contents take (each content once).
    pub bytes: u64,
    /// The most they may take (`history.max_size`).
    pub max_bytes: u64,
    /// Memories deleted and not back (`mnemofs trash`).
    pub deleted: usize,
}

/// How far a rebuild of the index has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebuilding {
    /// Files read.
    pub done: u64,
    /// Files to read.
    pub total: u64,
}

/// A failed request, as it crosses the socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireError {
    /// The sentence.
    pub message: String,
    /// The errno a filesystem caller would see.
    pub errno: i32,
    /// The JSON-RPC error code.
    pub code: i32,
}

/// A failed request with its details, as a [`Request::Checked`] answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The sentence, errno and code, as for any failed request.
    pub error: WireError,
    /// What failed, with the values a front end words it from.
    pub detail: Detail,
}

/// What failed: one variant per [`Error`](super::Error) variant, with its
/// values (the paths as the request gave them), so that a front end can
/// word a failure its own way after it crossed the socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum Detail {
    /// Nothing at the path.
    NotFound {
        /// The path.
        path: String,
    },
    /// Something is already at the path.
    Exists {
        /// The path.
        path: String,
    },
    /// A folder where a file was required.
    IsFolder {
        /// The path.
        path: String,
    },
    /// A file where a folder was required.
    NotFolder {
        /// The path.
        path: String,
    },
    /// A path that leaves the store or is not a valid name.
    InvalidPath {
        /// The path.
        path: String,
    },
    /// A request whose arguments make no sense.
    InvalidInput,
    /// What a scoped session may not do to other scopes' memories.
    OtherScope,
    /// A view, which cannot be written.
    ReadOnly {
        /// The path.
        path: String,
    },
    /// A file that is not UTF-8 text.
    NotText {
        /// The path.
        path: String,
    },
    /// Over the size cap.
    TooBig {
        /// The path.
        path: String,
        /// The cap in bytes.
        limit: u64,
    },
    /// The text to replace does not occur.
    NoMatch {
        /// The path.
        path: String,
    },
    /// The text to replace occurs more than once.
    NotUnique {
        /// The path.
        path: String,
        /// The 1-based line of each place it starts.
        lines: Vec<usize>,
    },
    /// A line number outside the file.
    BadLine {
        /// The path.
        path: String,
        /// The line asked for.
        line: i64,
        /// The number of lines in the file.
        lines: usize,
    },
    /// A reference that names several memories.
    Ambiguous {
        /// The reference.
        reference: String,
        /// The paths it could mean.
        candidates: Vec<String>,
    },
    /// The file changed, or was open for writing, meanwhile.
    Conflict {
        /// The path.
        path: String,
    },
    /// Something the operation needs is not running here.
    Unavailable,
    /// The search index failed.
    Index,
    /// The store refused (the errno says why).
    Io {
        /// The path.
        path: String,
    },
    /// A daemon failed the request without details (one that answers
    /// plain requests only); the sentence and errno are all there is.
    Remote,
}

impl From<&super::Error> for Failure {
    fn from(e: &super::Error) -> Failure {
        Failure {
            error: e.into(),
            detail: e.detail(),
        }
    }
}

/// One line of answer: `{"ok": ...}` or `{"error": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// The operation's answer.
    Ok(Response),
    /// Why it failed.
    Error(WireError),
}

impl From<&super::Error> for WireError {
    fn from(e: &super::Error) -> WireError {
        WireError {
            message: e.to_string(),
            errno: e.errno(),
            code: e.rpc_code(),
        }
    }
}
