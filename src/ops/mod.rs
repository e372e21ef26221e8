//! The operations layer: everything a front end does to memories.
//!
//! The mount, the organizer, the CLI, the memory tool, the socket and the
//! MCP server all stand on this layer, so an operation has one meaning
//! and one implementation whichever way it is reached. It knows nothing
//! of FUSE or of who called it: changes go through a [`Writer`] (through
//! the mount when a daemon serves the store, straight on the store when
//! none does), and failures are one [`Error`] type that each front end
//! shows its own way (errno, JSON-RPC code, sentence).
//!
//! Paths are relative to the store root, `""` being the root. A path whose
//! first name is a view (`search/`, `by-id/`, ...) is answered from the
//! index, read-only, as on the mount.

mod attach;
mod brief;
mod checkpoint;
mod error;
mod graph;
mod import;
mod lifecycle;
mod lookup;
mod records;
mod remember;
mod report;
mod request;
mod scope;
mod sync;
mod versions;
mod writer;
pub(crate) mod written;

pub use brief::{Brief, Item as BriefItem, Section as BriefSection};
pub use checkpoint::{
    Checkpoint, SESSIONS_FOLDER, SUMMARY_SECTIONS, SessionSummary, note_problems,
};
pub use error::{Error, Result, rpc};
pub use graph::{Direction, MAX_CONTEXT_DEPTH, MemoryContext, Related};
pub use import::{Incoming, Placed, Verbatim, path_id};
pub use lifecycle::{Chore, DueReminder, Step, StepReport};
pub use lookup::{MemoryFilter, MemorySummary, MemoryText};
pub use records::{
    FilePage, MemoryRecord, RecordFilter, RecordPage, SearchFilter, StoreFile, content_sha256,
    phase_of_path,
};
pub use remember::{MANUAL_CAPTURE, REMEMBER_FOLDER};
pub use report::{Filed, Organizer, Report, Skipped};
pub use request::{
    Counting, Detail, Entry, EntryKind, Failure, HistoryUsage, NewMemory, Reply, Request, Response,
    Restored, SearchHit, Status, VersionInfo, WireError,
};
pub use scope::{Scope, version_of};
pub use sync::{SyncReport, Syncer, counted};
pub use writer::{DirectWriter, NEW_FILE_MODE, NEW_FOLDER_MODE, Outcome, WriteEvent, Writer};

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::index::Index;
use crate::memory::{self, Category};
use crate::store::{FileKind, Store, StorePath, TEMP_PREFIX};
use crate::views::{ViewDir, ViewEntry, ViewFile, ViewRoot, Views};

/// The largest file an operation reads or writes, unless told otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 << 20;

/// The longest request line accepted, at least: a whole memory fits.
const MIN_REQUEST_LINE: u64 = 80 << 20;

/// The longest request line a front end (the daemon's socket, MCP on
/// stdio) accepts for a store whose files may be `max_file_size` bytes: a
/// file of control characters is six times as long in JSON (`\u0001`),
/// and a write must fail on the store's cap, said as such, not on the
/// line's.
pub fn max_request_line(max_file_size: u64) -> u64 {
    MIN_REQUEST_LINE.max(max_file_size.saturating_mul(6).saturating_add(1 << 20))
}

/// What a note's own frontmatter adds to a write: when it was written, and
/// its other fields as YAML lines.
#[derive(Default)]
pub(crate) struct OwnFields {
    /// `created_at` as the note wrote it, when it parses: kept as written,
    /// its own zone says which day it was written.
    created_at: Option<String>,
    rest: String,
}

/// The fields a write writes itself; the note's own others are kept.
const WRITTEN_FIELDS: &[&str] = &[
    "id",
    "title",
    "type",
    "status",
    "phase",
    "category",
    "scope",
    "source",
    "created_at",
    "expires_at",
    "tags",
];

/// Refuses a memory (`.md`) whose text the index would take for binary
/// (a NUL byte near its start): it would be kept but never found.
fn check_text(path: &str, real: &StorePath, text: &str) -> Result<()> {
    let markdown = real
        .as_path()
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    if markdown && memory::is_probably_binary(text.as_bytes()) {
        return Err(Error::InvalidInput(format!(
            "{path}: a memory is text, and a NUL byte makes this one read as binary, never searched"
        )));
    }
    Ok(())
}

/// Why `path` is its tools' and no memory, if it is: inside `.git/`, or
/// a file under a dot-name (`.envrc`, `.obsidian/plugins/x/main.js`) that
/// is not markdown.
fn tools_own(path: &StorePath) -> Option<&'static str> {
    let names: Vec<&std::ffi::OsStr> = path.as_path().iter().collect();
    if names.iter().any(|n| n.as_encoded_bytes() == b".git") {
        return Some("git's own folder (.git) is not memories");
    }
    let hidden = names
        .iter()
        .any(|n| n.as_encoded_bytes().first() == Some(&b'.'));
    let markdown = path
        .as_path()
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    (hidden && !markdown).then_some("only markdown memories are reached under a dot-name")
}

/// `new` with the fields of the frontmatter its content opens with, where
/// it names none, and that content's body; and what else that frontmatter
/// holds.
fn with_own_fields(new: &NewMemory) -> Result<(NewMemory, OwnFields)> {
    let Some((fields, body)) =
        memory::own_frontmatter(&new.content).map_err(Error::InvalidInput)?
    else {
        return Ok((new.clone(), OwnFields::default()));
    };
    // The fields read as every memory's are (tags in any of their forms);
    // a category is taken as written, so that one that is none is refused.
    let own = memory::parse("", &new.content).frontmatter;
    let category = match fields.get("category") {
        Some(serde_yaml::Value::String(c)) if !c.trim().is_empty() => Some(c.clone()),
        _ => None,
    };
    let merged = NewMemory {
        content: body.to_owned(),
        path: new.path.clone(),
        title: new.title.clone().or(own.title),
        category: new.category.clone().or(category),
        tags: if new.tags.is_empty() {
            own.tags
        } else {
            new.tags.clone()
        },
        scope: new.scope.clone().or(own.scope),
        source: new.source.clone().or(own.source),
        kind: new.kind.clone().or(own.kind),
        status: new.status.clone().or(own.status),
    };
    let mut others = serde_yaml::Mapping::new();
    for (key, value) in &fields {
        let name = key.as_str().unwrap_or_default();
        if !WRITTEN_FIELDS.contains(&name) {
            others.insert(key.clone(), value.clone());
        }
    }
    let rest = if others.is_empty() {
        String::new()
    } else {
        serde_yaml::to_string(&others).map_err(|e| Error::InvalidInput(e.to_string()))?
    };
    let created_at = own
        .created_at
        .clone()
        .filter(|c| memory::parse_timestamp(c).is_some());
    Ok((merged, OwnFields { created_at, rest }))
}

/// How many archived memories a search looks past to fill its results.
const MAX_ARCHIVED_PASSED: usize = 200;

/// The longest [`Request::Settle`] waits for the index.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// How many times an edit is run again when another write landed between
/// its reading and its writing (see `Operations::retrying`).
const EDIT_RETRIES: u64 = 8;

/// Whose process answers: a daemon serving the store, or the caller
/// itself under the store lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedBy {
    /// The daemon that serves (and usually mounts) the store.
    Daemon,
    /// This process, on the store directly.
    Local,
}

/// The operations on one store, for one session (see
/// [`scoped`](Operations::scoped) and [`expecting`](Operations::expecting):
/// a clone is cheap).
#[derive(Clone)]
pub struct Operations {
    store: Arc<Store>,
    index: Index,
    views: Views,
    writer: Arc<dyn Writer>,
    organizer: Option<Arc<dyn Organizer>>,
    served_by: ServedBy,
    max_file_size: u64,
    /// Which memories this session sees (`None`: all).
    scope: Option<Scope>,
    /// The version the memory a write changes must still have.
    expected_version: Option<String>,
    /// Earlier versions kept by the writers.
    history: Option<Arc<crate::store::history::History>>,
    /// Where a read of a memory is counted (`access_count`).
    counters: Option<Arc<crate::store::counters::CounterStore>>,
    /// Why search is by words only although the config names a model.
    meaning_off: Option<Arc<str>>,
    /// Runs sync rounds with the store's git remote.
    syncer: Option<Arc<dyn Syncer>>,
    /// How long an agent's capture waits in the inbox before it may
    /// expire (`None`: captures never do).
    inbox_ttl: Option<std::time::Duration>,
    /// Shut once the store is handed to another process: every request
    /// then is [`Error::Unreached`], and one running holds it open.
    gate: Arc<parking_lot::RwLock<bool>>,
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operations")
            .field("store", &self.store.root_path())
            .field("writer", &self.writer.describe())
            .finish_non_exhaustive()
    }
}

/// Where a path leads.
enum Target {
    /// A real file or folder.
    Real(StorePath),
    /// A virtual folder.
    ViewFolder(ViewDir),
    /// A generated file.
    ViewFile(ViewFile),
    /// A view's link to a memory: where it leads, and its target as
    /// the link holds it.
    ViewLink(StorePath, PathBuf),
}

impl Operations {
    /// Operations on `store`, changing it through `writer`.
    pub fn new(
        store: Arc<Store>,
        index: Index,
        views: Views,
        writer: Arc<dyn Writer>,
        served_by: ServedBy,
    ) -> Operations {
        Operations {
            store,
            index,
            views,
            writer: Arc::new(written::Recording(writer)),
            organizer: None,
            served_by,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            scope: None,
            expected_version: None,
            history: None,
            counters: None,
            meaning_off: None,
            syncer: None,
            inbox_ttl: Some(crate::config::DEFAULT_INBOX_TTL),
            gate: Arc::new(parking_lot::RwLock::new(true)),
        }
    }

    /// Takes no more requests, once those running (waited for at most
    /// `within`) have ended, in every clone; false if one still runs.
    /// For a process that hands its store to a mount.
    pub fn close(&self, within: std::time::Duration) -> bool {
        match self.gate.try_write_for(within) {
            Some(mut open) => {
                *open = false;
                true
            }
            None => false,
        }
    }

    /// Gives each capture written into the inbox an `expires_at` this far
    /// ahead (`lifecycle.inbox_ttl`; zero: none).
    pub fn with_inbox_ttl(mut self, ttl: std::time::Duration) -> Operations {
        self.inbox_ttl = Some(ttl).filter(|t| !t.is_zero());
        self
    }

    /// Lets `sync` run rounds with `syncer`.
    pub fn with_syncer(mut self, syncer: Arc<dyn Syncer>) -> Operations {
        self.syncer = Some(syncer);
        self
    }

    /// Says in `status` why search is by words only although the config
    /// names a model (`None`: it is not, or none is named).
    pub fn with_meaning_off(mut self, why: Option<String>) -> Operations {
        self.meaning_off = why.map(Arc::from);
        self
    }

    /// Counts each memory a caller reads (`read`, `read_memory`) in
    /// `counters`, as the mount counts an open that is not part of a walk.
    pub fn with_counters(
        mut self,
        counters: Arc<crate::store::counters::CounterStore>,
    ) -> Operations {
        self.counters = Some(counters);
        self
    }

    /// Saves the counters, where this process keeps them (a command
    /// working on the store without a daemon).
    pub fn flush_counters(&self) {
        if let Some(counters) = &self.counters
            && let Err(e) = counters.flush()
        {
            tracing::warn!("cannot save the access counters: {e}");
        }
    }

    /// A caller read the memory at `path`.
    fn count_read(&self, path: &StorePath) {
        if let Some(counters) = &self.counters {
            counters.record_read_open(path);
        }
    }

    /// Lists and restores earlier versions from `history`.
    pub fn with_history(mut self, history: Arc<crate::store::history::History>) -> Operations {
        self.history = Some(history);
        self
    }

    /// Lets `dream` run this organizer.
    pub fn with_organizer(mut self, organizer: Arc<dyn Organizer>) -> Operations {
        self.organizer = Some(organizer);
        self
    }

    /// The largest file the store takes, in bytes.
    pub fn max_file_size(&self) -> u64 {
        self.max_file_size
    }

    /// Sets the size cap for reads and writes.
    pub fn with_max_file_size(mut self, bytes: u64) -> Operations {
        self.max_file_size = bytes;
        self
    }

    /// Runs one request. A request that changed the store returns once
    /// the index has what it wrote (see `written.rs`): whatever is asked
    /// next, by anyone, sees the change.
    pub fn handle(&self, request: Request) -> Result<Response> {
        // Recursive: a request may run others (a batch), and a close
        // waiting meanwhile must not stop them.
        let open = self.gate.read_recursive();
        if !*open {
            return Err(Error::Unreached(
                "this process has handed the store to a mount; ask again through it".into(),
            ));
        }
        self.writer.catch_up();
        let (answer, written) = written::during(|| self.answer(request));
        if !written.is_empty() {
            self.index.notify_paths(&written);
            if !self.index.wait_committed(SETTLE) {
                tracing::warn!("the index is still behind a write after {SETTLE:?}");
            }
        }
        answer
    }

    fn answer(&self, request: Request) -> Result<Response> {
        let _span = tracing::debug_span!("request", op = %request::OpName(&request)).entered();
        Ok(match request {
            Request::List { path, depth } => Response::Entries {
                entries: self.list(&path, depth)?,
            },
            Request::Read { path } => Response::Text {
                text: self.read(&path)?,
            },
            Request::Search { query, limit } => {
                let (query, in_query) = crate::index::take_limit(&query);
                let (hits, warnings) = self.search_noting(&query, in_query.unwrap_or(limit))?;
                let hint = hits.is_empty().then(|| crate::index::nothing_found(&query));
                Response::Hits {
                    hits,
                    warnings,
                    hint,
                }
            }
            Request::Create {
                path,
                content,
                overwrite,
            } => {
                self.create(&path, &content, overwrite)?;
                Response::Done
            }
            Request::StrReplace { path, old, new } => {
                self.str_replace(&path, &old, &new)?;
                Response::Done
            }
            Request::Insert { path, line, text } => {
                self.insert(&path, line, &text)?;
                Response::Done
            }
            Request::InsertInBody { path, line, text } => {
                self.insert_in_body(&path, line, &text)?;
                Response::Done
            }
            Request::Rename { from, to } => {
                self.rename(&from, &to)?;
                Response::Done
            }
            Request::Delete { path } => {
                self.delete(&path)?;
                Response::Done
            }
            Request::WriteMemory(memory) => {
                let (path, id) = self.write_memory(&memory)?;
                Response::Memory {
                    path: path.to_string(),
                    id: Some(id),
                }
            }
            Request::Remember { text, folder } => {
                let folder = folder.as_deref().unwrap_or(remember::REMEMBER_FOLDER);
                let (path, id) = self.remember(&text, folder)?;
                Response::Memory {
                    path: path.to_string(),
                    id: Some(id),
                }
            }
            Request::Link { from, to, both } => {
                let path = if both {
                    self.link_both(&from, &to)?
                } else {
                    self.link(&from, &to)?
                };
                Response::Memory {
                    path: path.to_string(),
                    id: None,
                }
            }
            Request::Resolve { reference } => self.memory_at(self.resolve(&reference)?),
            Request::Dream { level } => Response::Report {
                report: self.dream(level)?,
            },
            Request::Normalize { paths, all } => Response::Report {
                report: self.normalize(&paths, all)?,
            },
            Request::Reindex => Response::Reindexed {
                files: self.reindex()?,
            },
            Request::Settle { paths } => {
                let paths: Vec<StorePath> = paths.iter().filter_map(StorePath::new).collect();
                self.index.notify_paths(&paths);
                if !self.index.wait_committed(SETTLE) {
                    tracing::debug!("settle: the index is still behind after {SETTLE:?}");
                }
                Response::Done
            }
            Request::Status => Response::Status {
                status: Box::new(self.status()),
            },
            Request::Brief { cwd, within } => Response::Brief {
                brief: self.brief(cwd.as_deref(), within.map(Duration::from_secs)),
            },
            Request::Checkpoint(checkpoint) => Response::Memory {
                path: self.checkpoint(&checkpoint)?.to_string(),
                id: None,
            },
            Request::Stat { path } => Response::Entry {
                entry: self.stat(&path)?,
            },
            Request::Replace {
                path,
                old,
                new,
                counting,
            } => {
                let (text, line) = self.replace(&path, &old, &new, counting)?;
                Response::Replaced { text, line }
            }
            Request::ReadMemory { reference } => Response::MemoryText {
                memory: self.read_memory_text(&reference)?,
            },
            Request::Backlinks { reference, limit } => Response::Memories {
                memories: self.backlinks(&reference, limit)?,
            },
            Request::Recent { limit, since, kind } => Response::Memories {
                memories: self.recent_filtered(limit, since.as_deref(), kind.as_deref())?,
            },
            Request::Memories(filter) => Response::Memories {
                memories: self.memories(&filter)?,
            },
            Request::Unlink { from, to } => {
                let (path, removed) = self.unlink(&from, &to)?;
                Response::Unlinked {
                    path: path.to_string(),
                    removed,
                }
            }
            Request::SetFields { reference, fields } => {
                self.memory_at(self.set_fields(&reference, &fields)?)
            }
            Request::Tag { reference, tags } => self.memory_at(self.tag(&reference, &tags)?),
            Request::Context {
                reference,
                depth,
                limit,
            } => Response::Context {
                context: self.context(&reference, depth, limit)?,
            },
            Request::History { reference } => Response::Versions {
                versions: self.history(&reference)?,
            },
            Request::Trash { limit } => Response::Versions {
                versions: self.trash(limit)?,
            },
            Request::Restore { reference, version } => Response::Restored {
                restored: vec![self.restore(&reference, version)?],
            },
            Request::RestoreTrash => Response::Restored {
                restored: self.restore_trash()?,
            },
            Request::Scoped { scope, request } => {
                let scope = match scope.as_deref().map(str::trim) {
                    None | Some("") => None,
                    Some(s) => Some(Scope::parse(s)?),
                };
                match (&self.scope, scope) {
                    (Some(current), Some(asked)) if *current != asked => {
                        return Err(Error::InvalidInput(format!(
                            "this session is in scope {current}; it cannot act in {asked}"
                        )));
                    }
                    // A scoped session stays scoped.
                    (Some(_), _) | (None, None) => self.handle(*request)?,
                    (None, asked) => self.scoped(asked).handle(*request)?,
                }
            }
            Request::Expecting { version, request } => {
                // A version nobody gave would only ever be a conflict.
                if let Some(v) = version.as_deref().map(str::trim)
                    && !crate::store::counters::is_content_hash(v)
                {
                    return Err(Error::InvalidInput(format!(
                        "`{v}` is not a version: pass the one `read` gave (`fnv1a64:` and 16 hex digits)"
                    )));
                }
                self.expecting(version).handle(*request)?
            }
            Request::Record { reference } => Response::Record {
                record: Box::new(self.record(&reference)?),
            },
            Request::DeleteMemory { reference } => {
                let (path, id) = self.delete_memory(&reference)?;
                Response::Memory {
                    path: path.to_string(),
                    id,
                }
            }
            Request::Records {
                filter,
                after,
                limit,
            } => Response::Records {
                page: self.records(&filter, after.as_deref(), limit)?,
            },
            Request::Step { step } => Response::Step {
                report: Box::new(self.step(step)?),
            },
            Request::Upgrade {
                reference,
                category,
            } => Response::Step {
                report: Box::new(self.upgrade(&reference, category.as_deref())?),
            },
            Request::Import { memories } => Response::Imported {
                placed: self.import(&memories),
            },
            Request::ImportVerbatim { memories, update } => Response::Imported {
                placed: self.import_verbatim(&memories, update),
            },
            Request::Files { after, limit } => Response::Files {
                page: self.files(after.as_deref(), limit)?,
            },
            Request::Attach { path, bytes } => Response::Imported {
                placed: vec![self.attach(&path, &bytes)],
            },
            Request::Checked { request } => Response::Checked {
                result: self
                    .handle(*request)
                    .map(Box::new)
                    .map_err(|e| Failure::from(&e)),
            },
            Request::Sync => Response::Synced {
                report: Box::new(self.sync()?),
            },
        })
    }

    /// A real path, or an error naming what is wrong with it.
    fn store_path(&self, path: &str) -> Result<StorePath> {
        // Longer than the system takes whole, the store's own path
        // included (the indexer, sync and the mount's callers name files
        // by it): refused before any folder on the way is made.
        let whole = self.store.root_path().as_os_str().len() + 1 + path.len();
        if whole >= libc::PATH_MAX as usize {
            return Err(Error::io(
                path,
                std::io::Error::from_raw_os_error(libc::ENAMETOOLONG),
            ));
        }
        if Path::new(path).is_absolute() {
            return Err(Error::InvalidPath {
                path: path.into(),
                why: "paths are relative to the store",
            });
        }
        StorePath::new(path).ok_or_else(|| Error::InvalidPath {
            path: path.into(),
            why: "it leaves the store or holds an invalid name",
        })
    }

    /// Refuses to make a file or folder deeper than mnemofs follows
    /// ([`MAX_DEPTH`](crate::store::MAX_DEPTH)); what is already there
    /// is read and changed as any file is.
    fn check_depth(real: &StorePath, shown: &str) -> Result<()> {
        const _: () = assert!(
            crate::store::MAX_DEPTH == 100,
            "the sentence below names it"
        );
        if real.parent().is_some_and(|folder| !folder.within_depth()) {
            return Err(Error::InvalidPath {
                path: shown.into(),
                why: "it is more than 100 folders deep",
            });
        }
        Ok(())
    }

    /// Where `path` leads: a real path, or a place in a view.
    fn target(&self, path: &str) -> Result<Target> {
        let real = self.store_path(path)?;
        // `.git/` (whose config names commands git runs: `core.fsmonitor`,
        // hooks), `.obsidian/` plugins, `.envrc`: what tools keep in dot
        // files runs code. Nothing an agent or a command asks for reaches
        // `.git/`, nor any file under a dot-name but a markdown memory.
        // The control folder `.mnemofs/` is a view.
        let control = real
            .as_path()
            .iter()
            .next()
            .and_then(ViewRoot::from_name)
            .is_some();
        if !control && let Some(why) = tools_own(&real) {
            return Err(Error::InvalidPath {
                path: path.into(),
                why,
            });
        }
        if real.depth() == 1
            && let Some(file) = real.file_name().and_then(|n| self.views.root_file(n))
        {
            return Ok(Target::ViewFile(file));
        }
        let mut names = real.as_path().iter();
        let Some(root) = names.next().and_then(ViewRoot::from_name) else {
            return Ok(Target::Real(real));
        };
        let views = self.views_seen();
        let mut dir = ViewDir::Root(root);
        let mut walked = PathBuf::from(root.name());
        while let Some(name) = names.next() {
            let not_found = || Error::NotFound { path: path.into() };
            let entry = views.lookup(&dir, name).ok_or_else(not_found)?;
            let last = names.as_path().as_os_str().is_empty();
            match entry {
                ViewEntry::Dir(_, next) => dir = next,
                ViewEntry::File(_, file) if last => return Ok(Target::ViewFile(file)),
                ViewEntry::Link(_, target) if last => {
                    let to = resolve_link(&walked, &target).ok_or_else(not_found)?;
                    if self.hides(&to) {
                        return Err(not_found());
                    }
                    return Ok(Target::ViewLink(to, target));
                }
                ViewEntry::File(..) | ViewEntry::Link(..) => {
                    return Err(Error::NotFolder { path: path.into() });
                }
            }
            walked.push(name);
        }
        Ok(Target::ViewFolder(dir))
    }

    /// A real, writable path: views are read-only.
    fn writable(&self, path: &str) -> Result<StorePath> {
        match self.target(path) {
            Ok(Target::Real(p)) if p.is_root() => Err(Error::InvalidInput(
                "the store root itself cannot be changed".into(),
            )),
            Ok(Target::Real(p)) => Ok(p),
            Ok(_) | Err(Error::NotFound { .. }) | Err(Error::NotFolder { .. }) => {
                Err(Error::ReadOnly {
                    path: path.into(),
                    why: "views are generated from the index",
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Refuses, in a scoped session, the generated files that list
    /// memories of every scope.
    fn check_view_file(&self, file: &ViewFile, path: &str) -> Result<()> {
        // A search's summary leaves out what the session may not see.
        let lists_memories = match file {
            ViewFile::Lint | ViewFile::Pending | ViewFile::Brief => true,
            ViewFile::SearchSummary(_)
            | ViewFile::Guide(_)
            | ViewFile::Status
            | ViewFile::AgentGuide => false,
        };
        if lists_memories && self.scope.is_some() {
            return Err(Error::Unavailable(format!(
                "{path} lists memories of every scope; a scoped session reads the folder or searches instead"
            )));
        }
        Ok(())
    }

    /// Lists a folder, `depth` levels deep (at least 1). Dot-names and the
    /// writers' temp files are left out, and so are the views at the root
    /// (they resolve by path). A view's own folders are not descended.
    pub fn list(&self, path: &str, depth: usize) -> Result<Vec<Entry>> {
        let depth = depth.max(1);
        match self.target(path)? {
            Target::Real(dir) => {
                let st = self.store.stat(&dir).map_err(|e| Error::io(path, e))?;
                if st.kind != FileKind::Directory {
                    return Err(Error::NotFolder { path: path.into() });
                }
                let mut out = Vec::new();
                self.list_real(&dir, depth, &mut out)
                    .map_err(|e| Error::io(path, e))?;
                if dir.is_root() && self.views.root_guide() {
                    // The guide, in name order among the top-level entries.
                    let guide = crate::views::ROOT_GUIDE_NAME;
                    let at = out
                        .iter()
                        .position(|e| !e.path.contains('/') && e.path.as_str() > guide)
                        .unwrap_or(out.len());
                    let size = self.views.size_hint(&ViewFile::AgentGuide);
                    out.insert(
                        at,
                        Entry {
                            path: guide.into(),
                            kind: EntryKind::File,
                            size,
                        },
                    );
                }
                if self.scope.is_some() {
                    let hidden = self.hidden_paths();
                    out.retain(|e| !hidden.contains(&e.path));
                }
                Ok(out)
            }
            Target::ViewFolder(dir) => {
                let base = Path::new(path);
                let views = self.views_seen();
                Ok(views
                    .list(&dir)
                    .into_iter()
                    .map(|entry| {
                        let child = base.join(entry.name()).to_string_lossy().into_owned();
                        match entry {
                            ViewEntry::Dir(..) => Entry {
                                path: child,
                                kind: EntryKind::Folder,
                                size: 0,
                            },
                            ViewEntry::Link(_, target) => Entry {
                                path: child,
                                kind: EntryKind::Link {
                                    target: target.to_string_lossy().into_owned(),
                                },
                                size: 0,
                            },
                            ViewEntry::File(_, file) => Entry {
                                path: child,
                                kind: EntryKind::File,
                                size: views.size_hint(&file),
                            },
                        }
                    })
                    .collect())
            }
            Target::ViewFile(_) | Target::ViewLink(..) => {
                Err(Error::NotFolder { path: path.into() })
            }
        }
    }

    fn list_real(
        &self,
        dir: &StorePath,
        depth: usize,
        out: &mut Vec<Entry>,
    ) -> std::io::Result<()> {
        let mut entries = self.store.read_dir(dir)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            let hidden = entry.name.as_encoded_bytes().first() == Some(&b'.');
            let reserved = ViewRoot::from_name(&entry.name).is_some()
                || self.views.root_file(&entry.name).is_some();
            if hidden || dir.is_root() && reserved {
                continue;
            }
            let Some(path) = dir.join(&entry.name) else {
                continue;
            };
            let Ok(st) = self.store.stat(&path) else {
                continue;
            };
            let kind = self.entry_kind(&path, st.kind)?;
            let folder = kind == EntryKind::Folder;
            out.push(Entry {
                path: path.to_string(),
                kind,
                size: st.size,
            });
            if folder && depth > 1 {
                self.list_real(&path, depth - 1, out)?;
            }
        }
        Ok(())
    }

    /// Reads a text file: a real one, a generated one, or the memory a
    /// view's link points at.
    pub fn read(&self, path: &str) -> Result<String> {
        let real = match self.target(path)? {
            Target::ViewFile(file) => {
                self.check_view_file(&file, path)?;
                return String::from_utf8(self.views_seen().read(&file))
                    .map_err(|_| Error::NotText { path: path.into() });
            }
            Target::ViewFolder(_) => return Err(Error::IsFolder { path: path.into() }),
            Target::ViewLink(to, _) | Target::Real(to) => to,
        };
        let (real, _, text) = self.read_text(&real, path)?;
        self.count_read(&real);
        Ok(text)
    }

    /// What is at `path`, without following a symlink there (`lstat`):
    /// a real entry with its size, or a view's folder (size 0), generated
    /// file or link (the size of its target, as the mount says).
    pub fn stat(&self, path: &str) -> Result<Entry> {
        let entry = |kind, size| Entry {
            path: path.into(),
            kind,
            size,
        };
        Ok(match self.target(path)? {
            Target::Real(real) => {
                let st = self.store.stat(&real).map_err(|e| Error::io(path, e))?;
                if st.kind == FileKind::File {
                    self.check_visible(&real, path)?;
                }
                let kind = self
                    .entry_kind(&real, st.kind)
                    .map_err(|e| Error::io(path, e))?;
                entry(kind, st.size)
            }
            Target::ViewFolder(_) => entry(EntryKind::Folder, 0),
            Target::ViewFile(file) => entry(EntryKind::File, self.views_seen().size_hint(&file)),
            Target::ViewLink(_, target) => {
                let size = target.as_os_str().len() as u64;
                let target = target.to_string_lossy().into_owned();
                entry(EntryKind::Link { target }, size)
            }
        })
    }

    /// What a real entry is; a symlink's target is read.
    fn entry_kind(&self, path: &StorePath, kind: FileKind) -> std::io::Result<EntryKind> {
        Ok(match kind {
            FileKind::File => EntryKind::File,
            FileKind::Directory => EntryKind::Folder,
            FileKind::Symlink => EntryKind::Link {
                target: String::from_utf8_lossy(&self.store.readlink(path)?).into_owned(),
            },
            FileKind::Special => EntryKind::Special,
        })
    }

    /// A real file's bytes and text, and the path they were read from: a
    /// symlink inside the store is followed once, if it stays inside, and
    /// edits go to the file it leads to.
    fn read_text(&self, real: &StorePath, shown: &str) -> Result<(StorePath, Vec<u8>, String)> {
        let mut real = real.clone();
        let st = self.store.stat(&real).map_err(|e| Error::io(shown, e))?;
        let st = if st.kind == FileKind::Symlink {
            let target = self
                .store
                .readlink(&real)
                .map_err(|e| Error::io(shown, e))?;
            let parent = real.parent().unwrap_or_default();
            real = resolve_link(parent.as_path(), Path::new(OsStr::from_bytes(&target)))
                .ok_or_else(|| Error::InvalidPath {
                    path: shown.into(),
                    why: "its symlink leads outside the store",
                })?;
            self.store.stat(&real).map_err(|e| Error::io(shown, e))?
        } else {
            st
        };
        match st.kind {
            FileKind::File => {}
            FileKind::Directory => return Err(Error::IsFolder { path: shown.into() }),
            _ => {
                return Err(Error::InvalidInput(format!("{shown}: not a regular file")));
            }
        }
        if st.size > self.max_file_size {
            return Err(Error::TooBig {
                path: shown.into(),
                limit: self.max_file_size,
            });
        }
        let bytes = self.store.read(&real).map_err(|e| Error::io(shown, e))?;
        let text =
            String::from_utf8(bytes.clone()).map_err(|_| Error::NotText { path: shown.into() })?;
        if self.hides_text(&text) {
            return Err(Error::NotFound { path: shown.into() });
        }
        Ok((real, bytes, text))
    }

    fn read_memory(&self, path: &StorePath) -> Result<(StorePath, Vec<u8>, String)> {
        self.read_text(path, &path.to_string())
    }

    /// Searches the index.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.search_noting(query, limit).map(|(hits, _)| hits)
    }

    /// Searches the index; also what its author should be told about how
    /// the query was read.
    fn search_noting(&self, query: &str, limit: usize) -> Result<(Vec<SearchHit>, Vec<String>)> {
        // Archived memories (merged duplicates, what expired) are left out
        // unless the query names a phase, as in the mount's `search/`.
        let archived: std::collections::HashSet<StorePath> =
            if query.to_lowercase().contains("phase:") {
                std::collections::HashSet::new()
            } else {
                self.index
                    .by_phase(memory::Phase::Archived.as_str())
                    .into_iter()
                    .collect()
            };
        let wanted = limit.saturating_add(archived.len().min(MAX_ARCHIVED_PASSED));
        let (mut hits, warnings) = self
            .index
            .search_noting(query, wanted, &self.hidden_scopes())
            .map_err(|e| Error::Index(e.to_string()))?;
        hits.retain(|h| !archived.contains(&h.path));
        hits.truncate(limit);
        let hits = hits
            .into_iter()
            .map(|h| SearchHit {
                path: h.path.escaped(),
                path_bytes: h.path.non_utf8_bytes(),
                title: h.title,
                score: h.score,
                snippet: h.snippet,
                id: h.id,
                created: h.created.map(crate::memory::format_timestamp),
                day: h.day,
                matched: h.matched,
            })
            .collect();
        Ok((hits, warnings))
    }

    fn check_size(&self, path: &str, len: usize) -> Result<()> {
        if len as u64 > self.max_file_size {
            return Err(Error::TooBig {
                path: path.into(),
                limit: self.max_file_size,
            });
        }
        Ok(())
    }

    /// Writes a whole file: a new one, or over an existing one when
    /// `overwrite`. Missing folders above it are made.
    pub fn create(&self, path: &str, content: &str, overwrite: bool) -> Result<()> {
        let (real, content) = self.checked_new_file(path, content)?;
        let content = &content;
        if self.expected_version.is_some() {
            // Only over the memory as the caller last read it.
            let (real, bytes, _) = self.read_text(&real, path)?;
            return self.rewrite(path, &real, &bytes, content);
        }
        let written = if overwrite {
            match self.store.stat(&real) {
                Ok(st) if st.kind == FileKind::Directory => {
                    return Err(Error::IsFolder { path: path.into() });
                }
                Ok(_) if self.hides(&real) => return Err(Error::Exists { path: path.into() }),
                _ => {}
            }
            self.writer.write(&real, content.as_bytes())
        } else {
            self.writer.create(&real, content.as_bytes())
        };
        written.map_err(|e| Error::io(path, e))
    }

    /// Where a new file at `path` goes and the text it gets (an agent
    /// session's scope added), once its name and size are checked.
    fn checked_new_file(&self, path: &str, content: &str) -> Result<(StorePath, String)> {
        let real = self.writable(path)?;
        Self::check_depth(&real, path)?;
        self.check_size(path, content.len())?;
        check_text(path, &real, content)?;
        if let Some(name) = real.file_name()
            && name.as_encoded_bytes().starts_with(TEMP_PREFIX.as_bytes())
        {
            return Err(Error::InvalidPath {
                path: path.into(),
                why: "the name is reserved for mnemofs's temp files",
            });
        }
        let content = self.with_session_scope(&real, content)?;
        Ok((real, content))
    }

    /// Creates new files (never over anything), made durable together
    /// where the writer can; one result per file, in order.
    pub(crate) fn create_new_files(&self, files: &[(String, String)]) -> Vec<Result<()>> {
        let checked: Vec<Result<(StorePath, String)>> = files
            .iter()
            .map(|(path, content)| self.checked_new_file(path, content))
            .collect();
        let ready: Vec<(StorePath, &[u8])> = checked
            .iter()
            .filter_map(|c| c.as_ref().ok())
            .map(|(real, content)| (real.clone(), content.as_bytes()))
            .collect();
        let mut written = self.writer.create_many(&ready).into_iter();
        checked
            .into_iter()
            .zip(files)
            .map(|(c, (path, _))| {
                c?;
                written
                    .next()
                    .unwrap_or_else(|| Err(std::io::Error::other("not written")))
                    .map_err(|e| Error::io(path, e))
            })
            .collect()
    }

    /// Replaces the text of a file, compare-and-swap against `bytes`.
    fn rewrite(&self, path: &str, real: &StorePath, bytes: &[u8], new: &str) -> Result<()> {
        self.check_version(path, bytes)?;
        self.check_size(path, new.len())?;
        check_text(path, real, new)?;
        self.check_scope_kept(real, new)?;
        match self.writer.replace(real, bytes, new.as_bytes()) {
            Ok(Outcome::Done) => Ok(()),
            Ok(Outcome::Busy) => Err(Error::Conflict { path: path.into() }),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Replaces the one occurrence of `old` by `new`, overlapping
    /// occurrences counted. Returns the new text and the 0-based line where
    /// the change starts.
    pub fn str_replace(&self, path: &str, old: &str, new: &str) -> Result<(String, usize)> {
        self.replace(path, old, new, Counting::Overlapping)
    }

    /// Replaces the one occurrence of `old` by `new`, occurrences counted
    /// as told. Returns the new text and the 0-based line where the change
    /// starts.
    pub fn replace(
        &self,
        path: &str,
        old: &str,
        new: &str,
        counting: Counting,
    ) -> Result<(String, usize)> {
        self.retrying(|| self.replace_once(path, old, new, counting))
    }

    /// Runs an edit again, on the file as it is now, when another write
    /// landed between its reading and its writing (two agents editing one
    /// note at once): the edit then happens just after that write, as if
    /// asked a moment later. Not when the caller named the version it
    /// edits, which has changed, nor more than a few times.
    fn retrying<T>(&self, edit: impl Fn() -> Result<T>) -> Result<T> {
        let mut tries = 0u64;
        loop {
            match edit() {
                Err(Error::Conflict { .. })
                    if self.expected_version.is_none() && tries < EDIT_RETRIES =>
                {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(2 * tries));
                }
                other => return other,
            }
        }
    }

    fn replace_once(
        &self,
        path: &str,
        old: &str,
        new: &str,
        counting: Counting,
    ) -> Result<(String, usize)> {
        let real = self.writable(path)?;
        let (real, bytes, text) = self.read_text(&real, path)?;
        if old.is_empty() && counting != Counting::Disjoint {
            return Err(Error::InvalidInput(
                "the text to replace must not be empty".into(),
            ));
        }
        let from = match counting {
            Counting::InBody => memory::parse("", &text).body_offset,
            Counting::Overlapping | Counting::Disjoint => 0,
        };
        let starts: Vec<usize> = occurrences(&text[from..], old)
            .into_iter()
            .map(|at| at + from)
            .collect();
        let unique = match counting {
            Counting::Overlapping | Counting::InBody => match starts.as_slice() {
                [at] => Some(*at),
                _ => None,
            },
            Counting::Disjoint => {
                let mut found = text.match_indices(old).map(|(at, _)| at);
                match (found.next(), found.next()) {
                    (Some(at), None) => Some(at),
                    _ => None,
                }
            }
        };
        match (unique, starts.is_empty()) {
            (Some(at), _) => {
                let replaced = format!("{}{new}{}", &text[..at], &text[at + old.len()..]);
                self.rewrite(path, &real, &bytes, &replaced)?;
                Ok((replaced, lines_at(&text, &[at])[0] - 1))
            }
            (None, true) => Err(Error::NoMatch { path: path.into() }),
            (None, false) => Err(Error::NotUnique {
                path: path.into(),
                lines: lines_at(&text, &starts),
            }),
        }
    }

    /// Inserts `text` as its own line(s) after line `line` (0: before the
    /// first). Lines are split on `\n` only; the file ends with a newline.
    pub fn insert(&self, path: &str, line: i64, text: &str) -> Result<String> {
        self.insert_after(path, line, text, false)
    }

    /// Like [`insert`](Self::insert), with lines counted from the start of
    /// the body: 0 is just below the frontmatter, which is never split.
    pub fn insert_in_body(&self, path: &str, line: i64, text: &str) -> Result<String> {
        self.insert_after(path, line, text, true)
    }

    fn insert_after(&self, path: &str, line: i64, text: &str, in_body: bool) -> Result<String> {
        self.retrying(|| self.insert_after_once(path, line, text, in_body))
    }

    fn insert_after_once(
        &self,
        path: &str,
        line: i64,
        text: &str,
        in_body: bool,
    ) -> Result<String> {
        let real = self.writable(path)?;
        let (real, bytes, content) = self.read_text(&real, path)?;
        let mut lines: Vec<&str> = content.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        let skipped = if in_body {
            let body = memory::parse("", &content).body_offset;
            content.as_bytes()[..body]
                .iter()
                .filter(|b| **b == b'\n')
                .count()
        } else {
            0
        };
        let at = usize::try_from(line)
            .ok()
            .map(|at| at + skipped)
            .filter(|at| *at <= lines.len())
            .ok_or(Error::BadLine {
                path: path.into(),
                line,
                lines: lines.len().saturating_sub(skipped),
            })?;
        lines.insert(at, text.trim_end_matches('\n'));
        let mut new = lines.join("\n");
        if !new.ends_with('\n') {
            new.push('\n');
        }
        self.rewrite(path, &real, &bytes, &new)?;
        Ok(new)
    }

    /// Renames or moves a file or folder; never replaces anything.
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        let source = self.writable(from)?;
        let target = self.writable(to)?;
        Self::check_depth(&target, to)?;
        if target.as_path().starts_with(source.as_path()) {
            return Err(Error::InvalidInput(format!(
                "cannot move {from} into itself"
            )));
        }
        let st = self.store.stat(&source).map_err(|e| Error::io(from, e))?;
        self.check_unchanged(&source, st.kind, from)?;
        match self.writer.move_to(&source, &target) {
            Ok(Outcome::Done) => Ok(()),
            Ok(Outcome::Busy) => Err(Error::Conflict { path: from.into() }),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                Err(Error::Exists { path: to.into() })
            }
            Err(e) => Err(Error::io(from, e)),
        }
    }

    /// Deletes a file or symlink, or a folder with everything in it.
    pub fn delete(&self, path: &str) -> Result<()> {
        let real = self.writable(path)?;
        let st = self.store.stat(&real).map_err(|e| Error::io(path, e))?;
        self.check_unchanged(&real, st.kind, path)?;
        let removed = if st.kind == FileKind::Directory {
            self.remove_tree(&real)
        } else {
            self.writer.remove_file(&real)
        };
        removed.map_err(|e| Error::io(path, e))
    }

    /// Before a move or a delete: the session must see what it changes,
    /// and a file must still be at the expected version.
    fn check_unchanged(&self, real: &StorePath, kind: FileKind, shown: &str) -> Result<()> {
        if kind == FileKind::Directory {
            if self.expected_version.is_some() {
                return Err(Error::InvalidInput(format!(
                    "{shown} is a folder; only a memory has a version"
                )));
            }
            return self.check_folder_visible(real, shown);
        }
        self.check_visible(real, shown)?;
        if self.expected_version.is_some() {
            let (_, bytes, _) = self.read_text(real, shown)?;
            self.check_version(shown, &bytes)?;
        }
        Ok(())
    }

    fn remove_tree(&self, dir: &StorePath) -> std::io::Result<()> {
        for entry in self.store.read_dir(dir)? {
            let Some(path) = dir.join(&entry.name) else {
                continue;
            };
            if entry.kind == FileKind::Directory {
                self.remove_tree(&path)?;
            } else {
                self.writer.remove_file(&path)?;
            }
        }
        self.writer.remove_folder(dir)
    }

    /// Writes a new memory with frontmatter; returns its path and id.
    pub fn write_memory(&self, new: &NewMemory) -> Result<(StorePath, String)> {
        if new.content.trim().is_empty() {
            return Err(Error::InvalidInput(
                "nothing to write: the content is empty".into(),
            ));
        }
        // A whole note (`write -` of a file with frontmatter): its own
        // fields count where the caller named none, and the rest of them
        // are kept as written.
        let (merged, own) = with_own_fields(new)?;
        self.write_memory_with(&merged, &own)
    }

    /// [`Operations::write_memory`] of `new` as given, its content the body
    /// whatever it opens with (a text kept verbatim), with `own` fields.
    pub(crate) fn write_memory_with(
        &self,
        new: &NewMemory,
        own: &OwnFields,
    ) -> Result<(StorePath, String)> {
        let category = match new.category.as_deref() {
            Some(c) => Some(error::category(c)?),
            None => None,
        };
        let named = new
            .scope
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(Scope::parse)
            .transpose()?;
        let scope = self.scope_for_new(named.as_ref().map(Scope::as_str))?;
        let title = new
            .title
            .clone()
            .unwrap_or_else(|| first_words(&new.content));
        let id = uuid::Uuid::new_v4().to_string();
        let mut text = String::from("---\n");
        let mut field = |key: &str, value: &str| {
            text.push_str(&format!("{key}: {}\n", memory::yaml_scalar(value)));
        };
        field("id", &id);
        field("title", &title);
        if let Some(kind) = &new.kind {
            field("type", kind);
        }
        if let Some(status) = new.status.as_deref().filter(|s| !s.trim().is_empty()) {
            field("status", status.trim());
        }
        let phase = match category {
            Some(c) if c != Category::Inbox => "organized",
            _ => "inbox",
        };
        field("phase", phase);
        if let Some(c) = category {
            field("category", c.as_str());
        }
        if let Some(scope) = &scope {
            field("scope", scope);
        }
        if let Some(source) = &new.source {
            field("source", source);
        }
        let now = now_unix();
        let created_at = own
            .created_at
            .clone()
            .unwrap_or_else(|| memory::format_timestamp(now));
        field("created_at", &created_at);
        // A capture the inbox holds for the organizer (no place and no
        // category asked for) says when it expires, as memory-cli's do.
        // What a caller put somewhere on purpose never expires.
        if let Some(ttl) = self
            .inbox_ttl
            .filter(|_| new.path.is_none() && phase == "inbox")
        {
            let until = now.saturating_add(i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX));
            field("expires_at", &memory::format_timestamp(until));
        }
        let tags: Vec<String> = new
            .tags
            .iter()
            .map(|t| t.trim().trim_start_matches('#').to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if !tags.is_empty() {
            text.push_str("tags:\n");
            for tag in &tags {
                text.push_str(&format!("  - {}\n", memory::yaml_scalar(tag)));
            }
        }
        text.push_str(&own.rest);
        text.push_str("---\n");
        text.push_str(&new.content);
        if !new.content.ends_with('\n') {
            text.push('\n');
        }
        let path = match &new.path {
            Some(p) => {
                let path = self.writable(p)?;
                let folder = p.trim_end().ends_with('/')
                    || self
                        .store
                        .stat(&path)
                        .is_ok_and(|st| st.kind == crate::store::FileKind::Directory);
                if folder {
                    return Err(Error::InvalidInput(format!(
                        "`{path}` is a folder: give the path of a file in it (`{path}/<name>.md`), or no path and a category to place it"
                    )));
                }
                let replace = self.expected_version.is_some();
                self.create(&path.to_string(), &text, replace)?;
                path
            }
            None if self.expected_version.is_some() => {
                return Err(Error::InvalidInput(
                    "an expected version needs the path of the memory to replace".into(),
                ));
            }
            None => {
                // Said again (an agent that remembers the same thing each
                // session): the memory already there is the answer.
                if let Some(repeated) = self.repeated(&text, &title) {
                    return Ok(repeated);
                }
                let folder = match category {
                    Some(c) if c != Category::Inbox => c.as_str(),
                    _ => "inbox",
                };
                self.create_free(folder, &slug(&title), &text)?
            }
        };
        Ok((path, id))
    }

    /// The memory a write of `text` (titled `title`) would only repeat: one
    /// outside `archive/` with the same title, body (up to whitespace),
    /// scope, type and status, the category if the write names one, and
    /// every tag it gives. Its path and id.
    fn repeated(&self, text: &str, title: &str) -> Option<(StorePath, String)> {
        let body = memory::normalized_body(text);
        let wanted = memory::parse("", text).frontmatter;
        self.index.resolve_link(title).into_iter().find_map(|path| {
            if records::phase_of_path(&path.to_string()) == memory::Phase::Archived {
                return None;
            }
            let (_, _, old_text) = self.read_text(&path, &path.to_string()).ok()?;
            let old = memory::parse("", &old_text);
            let had = &old.frontmatter;
            let same = memory::normalized_body(&old_text) == body
                && had.title == wanted.title
                && had.scope == wanted.scope
                && had.kind == wanted.kind
                && had.status == wanted.status
                && (wanted.category.is_none() || had.category == wanted.category)
                && wanted.tags.iter().all(|t| had.tags.contains(t));
            same.then(|| had.id.clone().map(|id| (path, id))).flatten()
        })
    }

    /// Creates `<folder>/<stem>.md`, or `<stem>-2.md`, ... if taken.
    fn create_free(&self, folder: &str, stem: &str, text: &str) -> Result<StorePath> {
        let stem = if stem.is_empty() { "memory" } else { stem };
        for n in 1..10_000 {
            let name = if n == 1 {
                format!("{folder}/{stem}.md")
            } else {
                format!("{folder}/{stem}-{n}.md")
            };
            match self.create(&name, text, false) {
                Ok(()) => return self.store_path(&name),
                Err(Error::Exists { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::InvalidInput(format!(
            "no free name for {stem} in {folder}"
        )))
    }

    /// The answer naming the memory at `path` and its id, as it is now.
    fn memory_at(&self, path: StorePath) -> Response {
        let id = self
            .read_memory(&path)
            .ok()
            .and_then(|(_, _, text)| self.id_of(&path, &text));
        Response::Memory {
            path: path.to_string(),
            id,
        }
    }

    /// The id of the memory at `path` whose text is `text`: its `id:`, or
    /// else the one the index keeps for it until it is written (a note
    /// nobody has written through the mount).
    pub(crate) fn id_of(&self, path: &StorePath, text: &str) -> Option<String> {
        memory::parse("", text)
            .frontmatter
            .id
            .or_else(|| self.untouched_id(path))
    }

    /// The id the index shows for the markdown memory at `path`, which
    /// has none in its frontmatter; given now if the index has not seen
    /// the file yet, so every answer shows the id it will keep.
    pub(crate) fn untouched_id(&self, path: &StorePath) -> Option<String> {
        let markdown = path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        if !markdown {
            return None;
        }
        self.index.id_for_untouched(&self.store, path)
    }

    /// The memory a reference names: a path, an id, a title, a file stem
    /// or an alias. Several candidates are an error that lists them.
    pub fn resolve(&self, reference: &str) -> Result<StorePath> {
        let reference = reference.trim();
        if let Ok(Target::Real(path)) = self.target(reference)
            && !path.is_root()
            && self.store.stat(&path).is_ok()
        {
            self.check_visible(&path, reference)?;
            return Ok(path);
        }
        if let Some(path) = self.index.by_id(reference)
            && !self.hides(&path)
        {
            return Ok(path);
        }
        let mut found = self.index.resolve(reference);
        found.retain(|p| !self.hides(p));
        found.sort();
        found.dedup();
        match found.len() {
            0 => Err(Error::NotFound {
                path: reference.into(),
            }),
            1 => Ok(found.remove(0)),
            _ => Err(Error::Ambiguous {
                reference: reference.into(),
                candidates: found.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// Records in `from`'s `links:` that it links to `to` (by id). Returns
    /// the linking memory's path.
    pub fn link(&self, from: &str, to: &str) -> Result<StorePath> {
        let source = self.resolve(from)?;
        let target = self.resolve(to)?;
        let (_, _, target_text) = self.read_memory(&target)?;
        let id = self.id_of(&target, &target_text).ok_or_else(|| {
            Error::InvalidInput(format!(
                "{target} is not a markdown memory, so it has no id to link by"
            ))
        })?;
        let (real, bytes, text) = self.read_memory(&source)?;
        self.check_version(&source.to_string(), &bytes)?;
        match memory::add_to_list_field(&text, "links", &[id]) {
            Ok(Some(new)) => self.rewrite(&source.to_string(), &real, &bytes, &new)?,
            Ok(None) => {}
            Err(e) => return Err(Error::InvalidInput(format!("{source}: {e}"))),
        }
        Ok(source)
    }

    /// Records the link both ways: `to`'s id in `from`'s `links:` and
    /// `from`'s in `to`'s, as memory-cli links. A memory without an id gets
    /// one first, as the normalizer would give it, since links are by id.
    /// Returns `from`'s path.
    pub fn link_both(&self, from: &str, to: &str) -> Result<StorePath> {
        let source = self.resolve(from)?;
        let target = self.resolve(to)?;
        if source == target {
            return Err(Error::InvalidInput(format!(
                "{source} cannot link to itself"
            )));
        }
        for path in [&source, &target] {
            let markdown = path
                .as_path()
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("md"));
            if !markdown {
                return Err(Error::InvalidInput(format!(
                    "{path} is not a markdown memory; links are kept in frontmatter"
                )));
            }
        }
        // The version the caller gave is `from`'s, as it was before any of
        // these edits; each edit below compares and swaps on what it read.
        if self.expected_version.is_some() {
            let (_, bytes, _) = self.read_memory(&source)?;
            self.check_version(&source.to_string(), &bytes)?;
        }
        let ops = self.expecting(None);
        ops.ensure_id(&source)?;
        ops.ensure_id(&target)?;
        let (source_text, target_text) = (source.to_string(), target.to_string());
        ops.link(&source_text, &target_text)?;
        ops.link(&target_text, &source_text)?;
        Ok(source)
    }

    /// The memory's id, written into its frontmatter first if it has none:
    /// the one the index already shows for it, so it never changes.
    fn ensure_id(&self, path: &StorePath) -> Result<String> {
        let (real, bytes, text) = self.read_memory(path)?;
        if let Some(id) = memory::parse("", &text).frontmatter.id {
            return Ok(id);
        }
        let id = self
            .index
            .id_for_untouched(&self.store, path)
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        match memory::add_missing_fields(&text, &[("id", id.clone())]) {
            Ok(Some(new)) => self.rewrite(&path.to_string(), &real, &bytes, &new)?,
            Ok(None) => {}
            Err(e) => return Err(Error::InvalidInput(format!("{path}: {e}"))),
        }
        Ok(id)
    }

    /// Adds `tags` to the `tags:` of the memory `reference` names (a
    /// leading `#` dropped, those it has kept). Returns its path.
    pub fn tag(&self, reference: &str, tags: &[String]) -> Result<StorePath> {
        let tags: Vec<String> = tags
            .iter()
            .map(|t| t.trim().trim_start_matches('#').to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if tags.is_empty() {
            return Err(Error::InvalidInput("no tag to add".into()));
        }
        let path = self.resolve(reference)?;
        let (real, bytes, text) = self.read_memory(&path)?;
        self.check_version(&path.to_string(), &bytes)?;
        match memory::add_to_list_field(&text, "tags", &tags) {
            Ok(Some(new)) => self.rewrite(&path.to_string(), &real, &bytes, &new)?,
            Ok(None) => {}
            Err(e) => return Err(Error::InvalidInput(format!("{path}: {e}"))),
        }
        Ok(path)
    }

    /// Sets frontmatter fields of the memory `reference` names, editing
    /// its frontmatter in place (other keys, comments and the body kept).
    /// Its `id` is not one of them: a memory keeps its id.
    pub fn set_fields(&self, reference: &str, fields: &[(String, String)]) -> Result<StorePath> {
        if fields.is_empty() {
            return Err(Error::InvalidInput("no field to set".into()));
        }
        if let Some((key, _)) = fields.iter().find(|(k, _)| k.trim() == "id") {
            return Err(Error::InvalidInput(format!(
                "`{key}` cannot be set: a memory keeps its id"
            )));
        }
        let path = self.resolve(reference)?;
        let (real, bytes, text) = self.read_memory(&path)?;
        self.check_version(&path.to_string(), &bytes)?;
        let pairs: Vec<(&str, String)> =
            fields.iter().map(|(k, v)| (k.trim(), v.clone())).collect();
        match memory::set_fields(&text, &pairs) {
            Ok(Some(new)) => self.rewrite(&path.to_string(), &real, &bytes, &new)?,
            Ok(None) => {}
            Err(e) => return Err(Error::InvalidInput(format!("{path}: {e}"))),
        }
        Ok(path)
    }

    /// Runs the organizer now.
    pub fn dream(&self, level: u8) -> Result<Report> {
        if !(1..=3).contains(&level) {
            return Err(Error::InvalidInput(format!(
                "dream level {level} does not exist (1, 2 or 3)"
            )));
        }
        match &self.organizer {
            Some(organizer) => organizer.dream(level),
            None => Err(Error::Unavailable(
                "the organizer is off here (--no-organizer)".into(),
            )),
        }
    }

    /// Writes the missing frontmatter (the ids the index shows included)
    /// into the memories `references` name, or into every memory with
    /// `all`, whether anyone wrote them since the mount or not. Each
    /// rewrite keeps the previous bytes in the history.
    pub fn normalize(&self, references: &[String], all: bool) -> Result<Report> {
        let paths = match (all, references.is_empty()) {
            (true, true) => None,
            (false, false) => Some(
                references
                    .iter()
                    .map(|r| self.resolve(r))
                    .collect::<Result<Vec<_>>>()?,
            ),
            (true, false) => {
                return Err(Error::InvalidInput(
                    "give memories or --all, not both".into(),
                ));
            }
            (false, true) => {
                return Err(Error::InvalidInput(
                    "which memories? name them, or --all for every one".into(),
                ));
            }
        };
        match &self.organizer {
            Some(organizer) => organizer.normalize(paths),
            None => Err(Error::Unavailable(
                "the organizer is off here (--no-organizer)".into(),
            )),
        }
    }

    /// Rebuilds the index from the store.
    pub fn reindex(&self) -> Result<usize> {
        self.index.caught_up();
        self.index
            .rebuild()
            .map_err(|e| Error::Index(e.to_string()))
    }

    /// Who serves the store, and how the index and tasks are doing.
    pub fn status(&self) -> Status {
        self.index.caught_up();
        let s = self.index.status();
        Status {
            served_by: match self.served_by {
                ServedBy::Daemon => "daemon".into(),
                ServedBy::Local => "local".into(),
            },
            writer: self.writer.describe(),
            pid: (self.served_by == ServedBy::Daemon).then(std::process::id),
            store: self.store.root_path().display().to_string(),
            // A scoped session counts what it may see.
            documents: s.documents.saturating_sub(self.hidden_paths().len() as u64),
            pending_changes: s.pending_changes,
            reconciling: s.reconciling,
            kept_ids: s.kept_ids,
            meaning: s.model.clone().map(|model| {
                Box::new(request::MeaningStatus {
                    model,
                    embedded: s.embedded,
                    backlog: s.embed_backlog,
                    unread: s.embed_unread,
                })
            }),
            meaning_off: self
                .meaning_off
                .as_deref()
                .map(str::to_owned)
                .or(s.model_failed.clone()),
            last_commit_ms: s.last_commit,
            index_failing: s.failing.clone(),
            rebuilding: s
                .rebuilding
                .map(|(done, total)| request::Rebuilding { done, total }),
            organizer: self.organizer.is_some(),
            organizer_queue: self.organizer.as_ref().map_or(0, |o| o.queue()),
            // Counts and troubles; which notes moved is the run's answer,
            // not the status's.
            tasks: self
                .organizer
                .as_ref()
                .map(|o| o.last_reports())
                .unwrap_or_default()
                .into_iter()
                .map(|(step, mut report)| {
                    report.filed = Vec::new();
                    (step, report)
                })
                .collect(),
            history: self.history.as_ref().map(|h| {
                let (versions, bytes) = h.usage();
                Box::new(request::HistoryUsage {
                    versions,
                    bytes,
                    max_bytes: h.settings().max_bytes,
                    deleted: self.trash(usize::MAX).map_or(0, |t| t.len()),
                })
            }),
            sync: self.syncer.as_ref().and_then(|s| s.last()).map(Box::new),
            conflicts: self.conflicts(),
        }
    }

    /// Runs one sync round, through this session's writer.
    pub fn sync(&self) -> Result<SyncReport> {
        if let Some(scope) = &self.scope {
            return Err(Error::InvalidInput(format!(
                "a session in scope {scope} cannot sync the whole store"
            )));
        }
        let Some(syncer) = &self.syncer else {
            return Err(Error::Unavailable(
                "sync does not run here (this process has no way to git)".into(),
            ));
        };
        syncer.round(&self.store, self.writer.as_ref(), &|| {
            self.index.caught_up()
        })
    }

    /// The conflict copies in the store, as the index knows them.
    pub fn conflicts(&self) -> Vec<String> {
        self.index
            .lint()
            .into_iter()
            .map(|(path, _)| path.to_string())
            .filter(|path| crate::memory::conflict::is_conflict(path))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

use std::os::unix::ffi::OsStrExt;

/// The store path a relative symlink at `dir` leads to, if it stays in
/// the store (resolved by names; the store refuses symlinks on the way).
fn resolve_link(dir: &Path, target: &Path) -> Option<StorePath> {
    let mut out = PathBuf::new();
    for component in dir.join(target).components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    StorePath::new(out)
}

/// The byte offset of each occurrence of `needle`, overlapping ones
/// included ("aa" occurs twice in "aaa"), as a reader scanning would count;
/// an empty needle is at every character boundary.
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut start = 0;
    while start <= text.len()
        && let Some(i) = text[start..].find(needle)
    {
        let at = start + i;
        found.push(at);
        start = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// The 1-based line of every place `needle` starts in `text`, overlapping
/// ones included (an empty needle: every character boundary): the lines a
/// replace refused as not unique reports.
pub fn occurrence_lines(text: &str, needle: &str) -> Vec<usize> {
    lines_at(text, &occurrences(text, needle))
}

/// The 1-based line of each byte offset, `offsets` in increasing order.
fn lines_at(text: &str, offsets: &[usize]) -> Vec<usize> {
    let (mut line, mut from) = (1, 0);
    offsets
        .iter()
        .map(|&at| {
            line += text.as_bytes()[from..at]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            from = at;
            line
        })
        .collect()
}

/// The first few words of a text, for a title.
pub(crate) fn first_words(text: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("memory");
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title = title.trim_end().to_string();
        title.push('…');
    }
    title
}

/// A file-name-safe version of a title: at most 48 characters, cut
/// after a whole word where one ends past the 16th.
pub(crate) fn slug(title: &str) -> String {
    let all: Vec<char> = title
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                '-'
            }
        })
        .collect();
    let mut end = all.len().min(48);
    if end < all.len()
        && all[end] != '-'
        && let Some(dash) = all[..end]
            .iter()
            .rposition(|&c| c == '-')
            .filter(|&d| d > 16)
    {
        end = dash;
    }
    let s: String = all[..end].iter().collect();
    let mut out = String::new();
    for c in s.chars() {
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_string()
}

pub(crate) fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests;
