//! The search index: a derived, rebuildable tantivy index of the store.
//!
//! One [`Index`] handle (cheap to clone) serves every reader; one thread,
//! `mnemofs-indexer`, owns the only `IndexWriter`. Callers report changed
//! paths with [`Index::notify_path`]; the indexer re-checks each path
//! against the store (size and mtime), batches the changes and commits
//! when the queue has been quiet for ~50 ms, or every 200 ms under load,
//! then reloads the reader by hand and bumps [`Index::generation`], which
//! the views use to invalidate kernel caches.
//!
//! At start the index is reconciled against the store in the background
//! (a walk comparing size and mtime with values kept as fast fields), so
//! an unchanged store costs one walk and no file reads. The index lives in
//! `<state_dir>/index/v<SCHEMA_VERSION>/`: a new schema version means a new
//! directory and a full rebuild; older version directories are removed.
//!
//! Subtleties a newcomer trips on:
//! - Every document is keyed by the exact bytes of its store path, so
//!   non-UTF-8 names survive; [`Hit::path`] carries the exact path and
//!   titles show it lossily.
//! - Live notifications and start-up/rebuild work travel on different
//!   queues, so an edit made through the mount becomes searchable within
//!   the commit interval even while a large reconcile is under way.
//! - Queries never fail on syntax, and rank rather than filter on every
//!   word: see `meaning.rs` for what a query means and `query.rs` for the
//!   plain-word fallback.
//! - The link graph is not a separate structure: each document stores
//!   the keys it answers to and the keys its links point at, so it cannot
//!   drift from the documents (see `document.rs`).
//! - A memory without `id:` still has an id in its document: the one the
//!   id table (`ids.rs`, `<state_dir>/ids.json`, outside the versioned
//!   index directory) keeps for it, so a rebuild or a new schema does not
//!   change it.

mod base_forms;
mod document;
mod fusion;
mod ids;
mod indexer;
mod mapped;
mod meaning;
mod period;
mod query;
mod ranking;
mod schema;
mod semantic;
mod snippet;
mod spelling;
mod supersede;
mod tokenizer;
mod vectors;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tantivy::directory::error::LockError;
use tantivy::{IndexReader, ReloadPolicy, TantivyError};

pub use document::normalize_key;
pub use meaning::{MAX_LIMIT, nothing_found, take_limit};
pub use schema::SCHEMA_VERSION;
pub(crate) use tokenizer::mostly_cjk;

use crate::store::{Store, StorePath};
use schema::Fields;

/// Errors of the index layer.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Another process (or another handle in this one) holds the writer
    /// lock of this index directory.
    #[error("the index in {0} is locked by another process")]
    Locked(PathBuf),
    /// No index exists yet where a read-only open looked for one.
    #[error("no index in {0}")]
    Missing(PathBuf),
    /// The index directory could not be created or cleaned.
    #[error("cannot prepare index directory {path}: {error}")]
    Directory {
        /// The directory concerned.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The index was opened read-only and cannot be written.
    #[error("the index is open read-only")]
    ReadOnly,
    /// The indexer thread is gone (shut down, or failed to start).
    #[error("the indexer has stopped")]
    Stopped,
    /// tantivy failed (corrupt index, I/O error inside the index).
    #[error("index error: {0}")]
    Tantivy(#[from] TantivyError),
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The file's exact path in the store.
    pub path: StorePath,
    /// Its title (for non-markdown files, the path).
    pub title: String,
    /// BM25 relevance; higher is better.
    pub score: f32,
    /// A plain-text, single-line excerpt of the body (at most 200 chars).
    pub snippet: String,
    /// The memory's id: its `id:`, or the one the index keeps for a memory
    /// without one; `None` for files that are not memories.
    pub id: Option<String>,
    /// When it was written (its `created_at`, else its file's time), as
    /// Unix seconds.
    pub created: Option<i64>,
    /// The day it was written, `YYYY-MM-DD`, as its `created_at` says it
    /// in its own zone (else its file's day, local).
    pub day: Option<String>,
    /// The ranking that found it: by its words, by its meaning, or both;
    /// or only that it was written in the period the question names.
    pub matched: Side,
}

/// Which ranking found a hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Its words (full text).
    Words,
    /// Its meaning (the model's vectors).
    Meaning,
    /// Both.
    Both,
    /// Neither: it was written in the period the question names, which
    /// the rest of the question finds nothing of ("what did we do
    /// yesterday?").
    Period,
}

/// A snapshot of the indexer's state, for `.mnemofs/status.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IndexStatus {
    /// Searchable documents (memories and other text files).
    pub documents: u64,
    /// Changes seen (notified, or found by the reconcile) but not yet
    /// searchable.
    pub pending_changes: u64,
    /// True until the start-up reconcile has committed.
    pub reconciling: bool,
    /// Unix milliseconds of the last commit, 0 if none yet.
    pub last_commit: i64,
    /// See [`Index::generation`].
    pub generation: u64,
    /// Files read and to read, while a rebuild runs.
    pub rebuilding: Option<(u64, u64)>,
    /// Why indexing is failing (the last commit's error), until a commit
    /// succeeds again.
    pub failing: Option<String>,
    /// Memories whose id the index keeps because their file has none yet.
    pub kept_ids: u64,
    /// The model semantic search uses; `None`: search is by words only.
    pub model: Option<String>,
    /// Memories with vectors.
    pub embedded: u64,
    /// Memories waiting for their vectors (a search never waits for a
    /// backlog; the few just written it embeds itself).
    pub embed_backlog: u64,
    /// Of `embedded`, the memories the model cannot read (Chinese to an
    /// English model, next to no letters): found by their words alone.
    pub embed_unread: u64,
    /// Why the configured model could not be loaded, if it could not.
    pub model_failed: Option<String>,
}

/// What `wait_idle` waits on; guarded by `Core::progress`.
#[derive(Debug, Default)]
struct Progress {
    /// Highest notification sequence number that is committed.
    committed_seq: u64,
    /// Whether the start-up reconcile is still running.
    reconciling: bool,
    /// Paths queued by the reconcile or a rebuild, not yet committed.
    bulk_pending: u64,
    /// The indexer thread has ended.
    stopped: bool,
    /// Why the last commit failed, until one succeeds.
    failing: Option<String>,
    /// Files read so far by a running rebuild, and how many it will read
    /// (0 when none runs).
    rebuild_done: u64,
    rebuild_total: u64,
}

/// State shared by the handles and the indexer thread.
struct Core {
    index: tantivy::Index,
    reader: IndexReader,
    fields: Fields,
    progress: Mutex<Progress>,
    progress_changed: Condvar,
    generation: AtomicU64,
    /// Unix ms of the last commit.
    last_commit: AtomicI64,
    /// Read-only handles reload on their own; this is false for them.
    writable: bool,
    /// Ids of memories without one in their frontmatter.
    ids: ids::IdTable,
    /// Where hits' snippets are read from; none for a handle that only
    /// counts (doctor).
    store: Option<Arc<Store>>,
    /// The maps of the index's files; none for an index in RAM.
    mapped: Option<mapped::Mapped>,
    /// Memories' vectors, when a model is configured.
    semantic: std::sync::OnceLock<Arc<semantic::Semantic>>,
    /// Semantic search turned on at the first search that needs it (see
    /// [`Index::enable_semantic_on_demand`]).
    semantic_on_demand: parking_lot::Mutex<Option<OnDemand>>,
    /// Why the model on demand could not be loaded.
    model_failed: parking_lot::Mutex<Option<String>>,
    /// Paths that came with an id another memory already had in the
    /// index (`cp a.md b.md`: `b.md`), and that id. The organizer gives
    /// such a copy an id of its own, whichever of the two changed last.
    copies: parking_lot::Mutex<std::collections::HashMap<Vec<u8>, String>>,
}

/// What [`Index::enable_semantic_on_demand`] loads when first asked.
struct OnDemand {
    model_dir: PathBuf,
    vectors: PathBuf,
    questions: crate::embed::Questions,
    keep: bool,
}

impl Core {
    fn update_progress(&self, f: impl FnOnce(&mut Progress)) {
        let mut p = self.progress.lock();
        f(&mut p);
        drop(p);
        self.progress_changed.notify_all();
    }
}

/// The sending side of the live queue, with the sequence counter, so that
/// sequence numbers arrive in order.
struct Sender {
    seq: u64,
    tx: crossbeam_channel::Sender<indexer::Live>,
}

struct Inner {
    core: Arc<Core>,
    sender: Option<Mutex<Sender>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set by [`Index::open_deferred`]: the first query waits this long
    /// for the start-up reconcile.
    deferred: Mutex<Option<Duration>>,
    /// Set by [`Index::open_deferred`]: starts the indexer thread, on the
    /// first call that needs it.
    starter: Mutex<Option<Starter>>,
}

/// Starts an index's indexer thread.
type Starter = Box<dyn FnOnce() -> Result<JoinHandle<()>, IndexError> + Send>;

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    /// Starts a deferred indexer thread; false if it could not start.
    fn start_deferred(&self) -> bool {
        let Some(start) = self.starter.lock().take() else {
            return true;
        };
        match start() {
            Ok(thread) => {
                *self.thread.lock() = Some(thread);
                true
            }
            Err(e) => {
                tracing::error!("cannot start the indexer: {e}");
                self.core.progress.lock().stopped = true;
                self.core.progress_changed.notify_all();
                false
            }
        }
    }

    fn stop(&self) {
        if self.starter.lock().is_some() {
            // Never started: started now only to index what was written.
            let notified = self.sender.as_ref().is_some_and(|s| s.lock().seq > 0);
            if !notified || !self.start_deferred() {
                return;
            }
        }
        if let Some(sender) = &self.sender {
            let _ = sender.lock().tx.send(indexer::Live::Shutdown);
        }
        if let Some(thread) = self.thread.lock().take()
            && thread.join().is_err()
        {
            tracing::error!("the indexer thread panicked");
        }
    }
}

/// A handle on the search index; clone it freely (all clones share one
/// index and one indexer thread, which stops with the last handle).
#[derive(Clone)]
pub struct Index {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("writable", &self.inner.core.writable)
            .field("generation", &self.generation())
            .finish()
    }
}

/// Writer heap budget.
const WRITER_MEMORY: usize = 50_000_000;

/// The writer's indexing threads. Each thread that got documents since the
/// last commit writes a segment of its own at the next one, so with two a
/// stream of writes made two small segments a commit where one does, and
/// the merges that follow read them all again: a new note cost about a
/// third more CPU. A full rebuild is slower with one thread (1.4 s instead
/// of 1.1 s for 10k notes), far inside its target.
const WRITER_THREADS: usize = 1;

fn index_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("index").join(format!("v{SCHEMA_VERSION}"))
}

fn map_lock(err: TantivyError, dir: &Path) -> IndexError {
    match err {
        TantivyError::LockFailure(LockError::LockBusy, _) => IndexError::Locked(dir.to_path_buf()),
        other => IndexError::Tantivy(other),
    }
}

/// Removes `index/v<N>` directories of other schema versions.
fn remove_old_versions(state_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(state_dir.join("index")) else {
        return;
    };
    let current = format!("v{SCHEMA_VERSION}");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_version = name
            .strip_prefix('v')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if is_version && name != current {
            tracing::info!(
                "removing index of an older schema: {}",
                entry.path().display()
            );
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!("cannot remove {}: {e}", entry.path().display());
            }
        }
    }
}

impl Index {
    /// Opens or creates the index under `state_dir/index/v<SCHEMA_VERSION>/`,
    /// starts the indexer thread and the start-up reconcile.
    ///
    /// Fails with [`IndexError::Locked`] if another process holds the
    /// writer lock.
    pub fn open(state_dir: &Path, store: Arc<Store>) -> Result<Index, IndexError> {
        Self::open_with(state_dir, store, None)
    }

    /// [`Index::open`] for a command that may never query the index (the
    /// memory tool's `view` of a note, a `create`): the indexer starts, and
    /// the first query waits for the start-up reconcile (at most
    /// `within`), only when something needs them.
    pub fn open_deferred(
        state_dir: &Path,
        store: Arc<Store>,
        within: Duration,
    ) -> Result<Index, IndexError> {
        Self::open_with(state_dir, store, Some(within))
    }

    fn open_with(
        state_dir: &Path,
        store: Arc<Store>,
        deferred: Option<Duration>,
    ) -> Result<Index, IndexError> {
        let dir = index_dir(state_dir);
        std::fs::create_dir_all(&dir).map_err(|error| IndexError::Directory {
            path: dir.clone(),
            error,
        })?;
        let (schema, _) = schema::build();
        let open = || -> Result<(tantivy::Index, mapped::Mapped), TantivyError> {
            let (directory, mapped) = mapped::MappedDirectory::open(&dir)
                .map_err(|e| TantivyError::SystemError(e.to_string()))?;
            Ok((
                tantivy::Index::open_or_create(directory, schema.clone())?,
                mapped,
            ))
        };
        let (index, mapped) = match open() {
            Ok(index) => index,
            Err(TantivyError::SchemaError(message)) => {
                // Same version, different schema: only during development.
                tracing::warn!(
                    "index schema changed without a version bump ({message}); rebuilding"
                );
                std::fs::remove_dir_all(&dir)
                    .and_then(|()| std::fs::create_dir_all(&dir))
                    .map_err(|error| IndexError::Directory {
                        path: dir.clone(),
                        error,
                    })?;
                open()?
            }
            Err(e) => return Err(e.into()),
        };
        let ids = ids::IdTable::open(state_dir);
        let index =
            Self::start(index, Some(mapped), store, ids, deferred).map_err(|e| match e {
                IndexError::Tantivy(t) => map_lock(t, &dir),
                other => other,
            })?;
        remove_old_versions(state_dir);
        Ok(index)
    }

    /// An index in RAM (tests): the same behaviour as [`Index::open`],
    /// without files.
    pub fn in_memory(store: Arc<Store>) -> Result<Index, IndexError> {
        let (schema, _) = schema::build();
        Self::start(
            tantivy::Index::create_in_ram(schema),
            None,
            store,
            ids::IdTable::in_memory(),
            None,
        )
    }

    /// Read-only access to an index that a daemon owns: no writer, and the
    /// reader follows the daemon's commits on its own. Hits have snippets
    /// only with the `store`.
    pub fn open_read_only(
        state_dir: &Path,
        store: Option<Arc<Store>>,
    ) -> Result<Index, IndexError> {
        let dir = index_dir(state_dir);
        // Its last commit, as far as a reader can tell: when the commit
        // record was last written.
        let Ok(meta) = std::fs::metadata(dir.join("meta.json")) else {
            return Err(IndexError::Missing(dir));
        };
        let committed_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        let (directory, mapped) = mapped::MappedDirectory::open(&dir)
            .map_err(|e| TantivyError::SystemError(e.to_string()))?;
        let index = tantivy::Index::open(directory)?;
        tokenizer::register(&index);
        let fields = schema::fields_of(&index.schema())?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::OnCommitWithDelay)
            .try_into()?;
        let core = Arc::new(Core {
            index,
            reader,
            fields,
            progress: Mutex::new(Progress::default()),
            progress_changed: Condvar::new(),
            generation: AtomicU64::new(0),
            last_commit: AtomicI64::new(committed_ms),
            writable: false,
            ids: ids::IdTable::snapshot(state_dir),
            store,
            mapped: Some(mapped),
            semantic: Default::default(),
            semantic_on_demand: Default::default(),
            model_failed: Default::default(),
            copies: Default::default(),
        });
        Ok(Index {
            inner: Arc::new(Inner {
                core,
                sender: None,
                thread: Mutex::new(None),
                deferred: Mutex::new(None),
                starter: Mutex::new(None),
            }),
        })
    }

    fn start(
        index: tantivy::Index,
        mapped: Option<mapped::Mapped>,
        store: Arc<Store>,
        ids: ids::IdTable,
        deferred: Option<Duration>,
    ) -> Result<Index, IndexError> {
        tokenizer::register(&index);
        let fields = schema::fields_of(&index.schema())?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let core = Arc::new(Core {
            index,
            reader,
            fields,
            progress: Mutex::new(Progress {
                reconciling: true,
                ..Progress::default()
            }),
            progress_changed: Condvar::new(),
            generation: AtomicU64::new(0),
            last_commit: AtomicI64::new(0),
            writable: true,
            ids,
            store: Some(Arc::clone(&store)),
            mapped,
            semantic: Default::default(),
            semantic_on_demand: Default::default(),
            model_failed: Default::default(),
            copies: Default::default(),
        });
        let (tx, rx) = crossbeam_channel::unbounded();
        let spawn_core = Arc::clone(&core);
        let starter: Starter = Box::new(move || indexer::spawn(spawn_core, store, rx));
        let (thread, starter) = match deferred {
            None => (Some(starter()?), None),
            Some(_) => (None, Some(starter)),
        };
        Ok(Index {
            inner: Arc::new(Inner {
                core,
                sender: Some(Mutex::new(Sender { seq: 0, tx })),
                thread: Mutex::new(thread),
                deferred: Mutex::new(deferred),
                starter: Mutex::new(starter),
            }),
        })
    }

    /// Something changed at `path`: the indexer re-checks it (a file is
    /// reindexed if its size or mtime changed; a directory has its subtree
    /// reconciled; a missing path loses its document and every document
    /// under it). Never blocks.
    pub fn notify_path(&self, path: &StorePath) {
        self.notify_paths(std::slice::from_ref(path));
    }

    /// [`Index::notify_path`] for a batch, in one message: the indexer
    /// wakes once for the batch, not once per path.
    pub fn notify_paths(&self, paths: &[StorePath]) {
        let Some(sender) = &self.inner.sender else {
            return;
        };
        if paths.is_empty() {
            return;
        }
        let mut s = sender.lock();
        s.seq += 1;
        let seq = s.seq;
        if s.tx
            .send(indexer::Live::Paths(seq, paths.to_vec()))
            .is_err()
        {
            tracing::debug!("indexer stopped; dropped {} changes", paths.len());
        }
    }

    /// Blocks until every change notified so far, and the start-up
    /// reconcile, are committed and searchable. False on timeout.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.wait_for_commit(timeout, true)
    }

    /// Waits out a deferred catch-up, once.
    pub fn caught_up(&self) {
        self.inner.start_deferred();
        let mut deferred = self.inner.deferred.lock();
        if let Some(within) = deferred.take()
            && !self.wait_idle(within)
        {
            tracing::warn!(
                "the index has not caught up with the store; answering with what it has"
            );
        }
    }

    /// Blocks until every change notified so far is committed and
    /// searchable, whatever bulk work (the start-up reconcile, a rebuild)
    /// is still going on. False on timeout.
    pub fn wait_committed(&self, timeout: Duration) -> bool {
        self.wait_for_commit(timeout, false)
    }

    fn wait_for_commit(&self, timeout: Duration, with_bulk: bool) -> bool {
        let Some(sender) = &self.inner.sender else {
            return true;
        };
        self.inner.start_deferred();
        let target = sender.lock().seq;
        let deadline = Instant::now() + timeout;
        let core = &self.inner.core;
        let mut p = core.progress.lock();
        let done = |p: &Progress| {
            p.committed_seq >= target && !(with_bulk && (p.reconciling || p.bulk_pending > 0))
        };
        loop {
            // Commits that fail (a full disk) may go on failing: waiting
            // for one would hold the caller for the whole timeout.
            if done(&p) || p.stopped || p.failing.is_some() {
                return done(&p);
            }
            if core
                .progress_changed
                .wait_until(&mut p, deadline)
                .timed_out()
            {
                return done(&p);
            }
        }
    }

    /// Drops every document and indexes the whole store again, reading
    /// files in parallel and logging progress. Returns the number of
    /// searchable documents. Blocks until committed.
    pub fn rebuild(&self) -> Result<usize, IndexError> {
        let Some(sender) = &self.inner.sender else {
            return Err(IndexError::ReadOnly);
        };
        self.inner.start_deferred();
        let (reply_tx, reply_rx) = crossbeam_channel::bounded(1);
        sender
            .lock()
            .tx
            .send(indexer::Live::Rebuild(reply_tx))
            .map_err(|_| IndexError::Stopped)?;
        reply_rx.recv().map_err(|_| IndexError::Stopped)?
    }

    /// Bumped after every commit and reader reload; a change means views
    /// may have changed.
    pub fn generation(&self) -> u64 {
        let core = &self.inner.core;
        if core.writable {
            core.generation.load(Ordering::Acquire)
        } else {
            core.reader.searcher().generation().generation_id()
        }
    }

    /// Counters for `.mnemofs/status.json`.
    pub fn status(&self) -> IndexStatus {
        let core = &self.inner.core;
        let notified = self.inner.sender.as_ref().map_or(0, |s| s.lock().seq);
        let p = core.progress.lock();
        let pending_changes = notified.saturating_sub(p.committed_seq) + p.bulk_pending;
        let reconciling = p.reconciling;
        let rebuilding = (p.rebuild_total > 0).then_some((p.rebuild_done, p.rebuild_total));
        let failing = p.failing.clone();
        drop(p);
        // Semantic search on demand is loaded to be reported.
        let semantic = self.semantic();
        // Without a worker, every memory the kept vectors lack waits (for
        // a daemon, or the searches here).
        let memories = self.memories() as usize;
        let embedding = semantic.map_or((0, 0), |s| {
            let (embedded, backlog) = s.progress(memories);
            if s.is_frozen() {
                (embedded, memories.saturating_sub(embedded))
            } else {
                (embedded, backlog)
            }
        });
        IndexStatus {
            documents: self.documents(),
            pending_changes,
            reconciling,
            last_commit: core.last_commit.load(Ordering::Acquire),
            generation: self.generation(),
            rebuilding,
            failing,
            kept_ids: core.ids.kept(),
            model: semantic.map(|s| s.model().to_owned()),
            model_failed: core.model_failed.lock().clone(),
            embedded: embedding.0 as u64,
            embed_unread: semantic.map_or(0, |s| s.unread() as u64),
            embed_backlog: embedding.1 as u64,
        }
    }

    /// Turns semantic search on with `embedder`: every memory the index
    /// holds is embedded in the background, then each one it takes in;
    /// searches fuse the nearest memories by meaning with those found by
    /// words. Once per index. `vectors` is where they are kept between
    /// runs (in the state dir), so that a start embeds only the memories
    /// changed meanwhile.
    pub fn enable_semantic(
        &self,
        embedder: crate::embed::Embedder,
        vectors: Option<PathBuf>,
    ) -> Result<(), IndexError> {
        let core = &self.inner.core;
        let Some(store) = &core.store else {
            return Err(IndexError::ReadOnly);
        };
        let semantic =
            semantic::Semantic::start(embedder, Arc::clone(store), vectors).map_err(|e| {
                IndexError::Directory {
                    path: PathBuf::from("mnemofs-embed"),
                    error: e,
                }
            })?;
        if core.semantic.set(Arc::clone(&semantic)).is_err() {
            tracing::debug!("semantic search was already on");
            return Ok(());
        }
        // From now on the indexer reports each change; what it took in
        // before is queued once the start-up reconcile is done.
        let index = self.clone();
        std::thread::Builder::new()
            .name("mnemofs-embed-seed".into())
            .spawn(move || {
                index.wait_idle(Duration::from_secs(24 * 3600));
                semantic.seed(index.memory_paths());
            })
            .map_err(|e| IndexError::Directory {
                path: PathBuf::from("mnemofs-embed-seed"),
                error: e,
            })?;
        Ok(())
    }

    /// The paths of the markdown files the index holds.
    fn memory_paths(&self) -> Vec<StorePath> {
        let searcher = self.inner.core.reader.searcher();
        query::paths_matching_in(&searcher, &tantivy::query::AllQuery)
            .unwrap_or_default()
            .into_iter()
            .filter(|p| {
                p.as_path()
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("md"))
            })
            .collect()
    }

    /// Semantic search for a process that only asks (a command run
    /// without a daemon): the vectors a daemon or an earlier command kept
    /// in `vectors` (if any), with the model in `model_dir`, both loaded at
    /// the first search that ranks by meaning or text to embed, so that a
    /// command that needs neither never pays for the model. A memory
    /// without vectors (changed since the file was written, or never
    /// embedded) is found by its words until a search embeds it: each
    /// embeds the newest few (see `Semantic::embed_waiting`), and saves
    /// them to `vectors` when it stops if `keep` (the caller holds the
    /// store's lock).
    pub fn enable_semantic_on_demand(
        &self,
        model_dir: PathBuf,
        vectors: PathBuf,
        questions: crate::embed::Questions,
        keep: bool,
    ) {
        *self.inner.core.semantic_on_demand.lock() = Some(OnDemand {
            model_dir,
            vectors,
            questions,
            keep,
        });
    }

    /// The vectors, if semantic search is on (loaded now if it is on
    /// demand).
    fn semantic(&self) -> Option<&Arc<semantic::Semantic>> {
        let core = &self.inner.core;
        if let Some(semantic) = core.semantic.get() {
            return Some(semantic);
        }
        // Held while loading: a second search waits for the first's load.
        let mut pending = core.semantic_on_demand.lock();
        if let Some(on) = pending.take()
            && let Some(store) = &core.store
        {
            match semantic::Semantic::frozen(
                &on.model_dir,
                Arc::clone(store),
                &on.vectors,
                on.questions,
                on.keep,
            ) {
                Ok(frozen) => {
                    // What a daemon did not embed (a command's own `write`,
                    // a store no daemon served) waits for the searches here.
                    if self.memories() > frozen.embedded() as u64 {
                        frozen.waiting_here(self.memory_paths());
                    }
                    let _ = core.semantic.set(frozen);
                }
                Err(e) => {
                    tracing::warn!("search is by words only: {e}");
                    *core.model_failed.lock() = Some(e.to_string());
                }
            }
        }
        drop(pending);
        core.semantic.get()
    }

    /// One vector per text from the model semantic search uses (loaded
    /// now if it is on demand), so other parts compare texts by meaning
    /// without a second copy of the model. `None` without a model.
    pub fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        self.semantic()?.embed_texts(texts)
    }

    /// Waits until every memory has its vectors (benchmarks and tests).
    /// False on timeout.
    pub fn wait_embedded(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let Some(semantic) = self.inner.core.semantic.get() else {
            return true;
        };
        while !semantic.caught_up() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// The id the index keeps for the memory at `path`, which has none in
    /// its frontmatter (see `ids.rs`); `None` when it has one of its own
    /// or the index has not seen it.
    pub fn kept_id(&self, path: &StorePath) -> Option<String> {
        self.caught_up();
        self.inner.core.ids.get(document::path_key(path))
    }

    /// The id the index last committed for the document at `path` (its
    /// `id:`, or the one kept for it). Reads only the committed index:
    /// never waits for the indexer.
    pub fn indexed_id(&self, path: &StorePath) -> Option<String> {
        let core = &self.inner.core;
        query::indexed_id_in(
            &core.reader.searcher(),
            &core.fields,
            document::path_key(path),
        )
    }

    /// The id of the memory at `path`, which has none in its frontmatter:
    /// the one the index keeps, given now if the index has not seen the
    /// file yet. The normalizer writes this id into the file.
    pub fn id_for_untouched(&self, store: &Store, path: &StorePath) -> Option<String> {
        if let Some(id) = self.kept_id(path) {
            return Some(id);
        }
        let stat = store.stat(path).ok()?;
        let key = document::path_key(path).to_vec();
        let holds = |k: &[u8]| {
            document::path_from_key(k)
                .and_then(|p| store.stat(&p).ok())
                .filter(|st| st.kind == crate::store::FileKind::File)
                .map(|st| st.ino)
        };
        let taken = |id: &str, key: &[u8]| {
            self.paths_with_id(id)
                .iter()
                .any(|p| document::path_key(p) != key)
        };
        let core = &self.inner.core;
        let searcher = core.reader.searcher();
        let previous = |key: &[u8]| query::indexed_id_in(&searcher, &core.fields, key);
        core.ids
            .assign(
                &[(key, ids::Identity::of(&stat))],
                &holds,
                &taken,
                &previous,
            )
            .pop()
    }

    /// Whether the memory at `path` came into the index with the id `id`
    /// while another memory already had it there: a copy of that one.
    /// `false` when the index saw both arrive together, or never saw it.
    pub fn came_as_copy(&self, path: &StorePath, id: &str) -> bool {
        self.inner
            .core
            .copies
            .lock()
            .get(document::path_key(path))
            .is_some_and(|kept| kept.eq_ignore_ascii_case(id.trim()))
    }

    /// The id a markdown file at `path` without one in its frontmatter
    /// gets when nothing else decides it (no file moved there, no earlier
    /// id kept for the path): derived from the path alone.
    pub fn derived_id(&self, path: &StorePath) -> String {
        path_id(path)
    }

    /// Commits pending work and stops the indexer thread. Later calls to
    /// `notify_path` are ignored and `rebuild` fails; reads keep working.
    pub fn shutdown(&self) {
        if let Some(semantic) = self.inner.core.semantic.get() {
            semantic.stop();
        }
        self.inner.stop();
    }
}

/// The id a memory at `path` has when its frontmatter names none (until
/// it moves: an id follows its memory).
pub fn path_id(path: &StorePath) -> String {
    ids::derive(document::path_key(path), 1)
}
