//! The indexer thread: the only owner of the `IndexWriter`.
//!
//! Work arrives on two queues. The live queue carries paths reported by
//! [`Index::notify_path`](super::Index::notify_path) plus control messages
//! (rebuild, shutdown); the bulk queue carries the paths the start-up
//! reconcile found changed. Live work always goes first, so an edit is
//! searchable within the commit interval even during a long reconcile.
//!
//! For every path the thread asks the store what is there now and compares
//! it with `mirror`, its copy of each indexed file's size and mtime (loaded
//! from fast fields at start, kept in step with every change). Only files
//! that differ are read. Reads and parsing run on a few scoped threads;
//! the writer calls stay on this thread, in order.
//!
//! Subtleties:
//! - A path that is now a directory means "reconcile this subtree"; that is
//!   how directory renames are picked up (the old name is missing, so its
//!   documents go; the new one is walked).
//! - If a commit fails, the writer is rolled back and `mirror` no longer
//!   matches the index; it is reloaded from the last commit and the whole
//!   store is queued for a reconcile, so the index heals instead of
//!   silently missing changes.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};
use tantivy::indexer::UserOperation;
use tantivy::schema::Term;
use tantivy::{IndexWriter, TantivyDocument};

use super::document::{self, FileState, is_ignored, is_ignored_name, path_from_key, path_key};
use super::ids::Identity;
use super::schema::names;
use super::{Core, IndexError, WRITER_MEMORY, WRITER_THREADS};
use crate::store::{FileKind, Store, StorePath};

/// A message on the live queue.
pub(crate) enum Live {
    /// Changes at some paths, with their notification sequence number.
    Paths(u64, Vec<StorePath>),
    /// Rebuild everything and reply with the number of documents.
    Rebuild(Sender<Result<usize, IndexError>>),
    /// Commit what is pending and stop.
    Shutdown,
}

/// A message on the bulk queue.
enum Bulk {
    /// Re-check a path.
    Path(StorePath),
    /// Drop the document with this exact key (a path that can no longer
    /// be represented as a `StorePath`).
    DeleteKey(Vec<u8>),
    /// Everything the start-up reconcile queued is ahead of this; with
    /// the keys of the regular files its walk found.
    ReconcileDone(HashSet<Vec<u8>>),
}

/// A live path is processed once its queue has been quiet this long...
const LIVE_SETTLE: Duration = Duration::from_millis(5);
/// ...or once it has waited this long.
const LIVE_MAX_WAIT: Duration = Duration::from_millis(50);
/// Commit once nothing has arrived for this long...
const QUIET: Duration = Duration::from_millis(5);
/// ...or when live changes have been uncommitted this long...
const LIVE_COMMIT_EVERY: Duration = Duration::from_millis(200);
/// ...or bulk-only changes this long.
const BULK_COMMIT_EVERY: Duration = Duration::from_secs(1);
/// Bulk paths handled per round, between looks at the live queue.
const BULK_CHUNK: usize = 1024;

/// Files read and built into documents at once.
pub(super) const READ_CHUNK: usize = 256;
/// Operations handed to the writer at once, at most.
const SEND_BATCH: usize = READ_CHUNK;
/// Documents handed to the writer before a commit waits for it to index
/// them. Its queue holds batches, not documents, and is in effect
/// unbounded: a stream of writes faster than the writer would otherwise
/// pile up built documents, each a copy of its note (80 MiB of them at the
/// peak of a stream of 100k creates).
const MAX_UNCOMMITTED_DOCS: usize = 2048;
/// The same during a rebuild, whose commits on the way are only waits: a
/// rebuild of 100k notes took 16 s with at most 230 MiB, against 17.5 s
/// and 920 MiB with no bound, and 23 s and 160 MiB with the bound above.
pub(super) const REBUILD_UNCOMMITTED_DOCS: usize = 2 * MAX_UNCOMMITTED_DOCS;
/// Files per round during a rebuild.
const REBUILD_CHUNK: usize = 2048;

/// Tantivy's log merge policy, with small segments in levels of their own.
/// Live changes commit a few hundred documents at a time; with the default
/// (everything under 10,000 documents is one level) each merge rewrites
/// the segment the previous merge made, so a burst of moves (a dream over
/// a full inbox) spends more on merging than on indexing.
fn merge_policy() -> tantivy::merge_policy::LogMergePolicy {
    let mut policy = tantivy::merge_policy::LogMergePolicy::default();
    policy.set_min_layer_size(500);
    policy
}

/// Threads for `n` paths' or files' worth of work. What a stream of
/// writes through the mount brings between two looks is done on the
/// indexer's own thread: threads spawned for it took the CPUs the writer
/// and the FUSE threads were waiting for, and cost more to start than
/// they saved. Work larger than one read chunk (a folder moved in, a
/// reconcile, a rebuild, a stream the indexer fell behind on) is shared
/// by [`io_threads`].
fn threads_for(n: usize) -> usize {
    if n > READ_CHUNK { io_threads() } else { 1 }
}

/// Threads for reading and parsing files, and for walking the store.
/// Read once: the standard library asks the cgroup files each time.
fn io_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 8)
    })
}

/// Starts the indexer thread.
pub(super) fn spawn(
    core: Arc<Core>,
    store: Arc<Store>,
    live_rx: Receiver<Live>,
) -> Result<JoinHandle<()>, IndexError> {
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let thread = std::thread::Builder::new()
        .name("mnemofs-indexer".into())
        .spawn(move || {
            // Indexing yields the CPU to the FUSE workers: a write is
            // answered first and made searchable a moment later. The
            // writer's own threads are created here, so they inherit this.
            crate::background::lower_priority();
            let writer = match open_writer(&core.index) {
                Ok(w) => {
                    let _ = ready_tx.send(Ok(()));
                    w
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(IndexError::from(e)));
                    return;
                }
            };
            let (bulk_tx, bulk_rx) = crossbeam_channel::unbounded();
            let mut indexer = Indexer {
                last_trim: Instant::now(),
                last_release: Instant::now(),
                maps_over_budget: false,
                last_commit: None,
                mirror: load_mirror(&core),
                core,
                store,
                writer,
                live_rx,
                bulk_tx,
                bulk_rx,
                live: Vec::new(),
                live_max_seq: 0,
                live_first: None,
                last_live: Instant::now(),
                processed_seq: 0,
                dirty_since: None,
                dirty_live: false,
                writer_changed: false,
                ops: Vec::new(),
                adding: Vec::new(),
                bulk: VecDeque::new(),
                bulk_uncommitted: 0,
                uncommitted_docs: 0,
                reconcile_done: false,
            };
            indexer.start_reconcile();
            indexer.run();
            indexer.core.update_progress(|p| p.stopped = true);
        })
        .map_err(|_| IndexError::Stopped)?;
    ready_rx.recv().map_err(|_| IndexError::Stopped)??;
    Ok(thread)
}

/// The index's only writer, with what a writer killed mid-commit left
/// behind cleared away.
///
/// A commit writes its delete files, named after the commit's opstamp,
/// before `meta.json`. Killed between the two, it leaves files that the
/// next writer, counting on from the same last commit, would create again
/// under the same names, so every commit of that writer would fail.
fn open_writer(index: &tantivy::Index) -> tantivy::Result<IndexWriter> {
    let writer = index.writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY)?;
    writer.set_merge_policy(Box::new(merge_policy()));
    writer.garbage_collect_files().wait()?;
    Ok(writer)
}

/// Reads every indexed path and its file's state from the fast fields of
/// the last commit.
fn load_mirror(core: &Core) -> BTreeMap<Vec<u8>, FileState> {
    let mut mirror = BTreeMap::new();
    let searcher = core.reader.searcher();
    for segment in searcher.segment_readers() {
        let ff = segment.fast_fields();
        let (Ok(Some(paths)), Ok(sizes), Ok(mtimes), Ok(inodes), Ok(ctimes)) = (
            ff.bytes(names::PATH),
            ff.u64(names::SIZE),
            ff.i64(names::MTIME),
            ff.u64(names::INODE),
            ff.i64(names::CTIME),
        ) else {
            tracing::warn!("index segment without path/size/mtime/inode/ctime columns; skipped");
            continue;
        };
        let mut by_ord = Vec::with_capacity(paths.num_terms());
        match paths.dictionary().stream() {
            Ok(mut stream) => {
                while stream.advance() {
                    by_ord.push(stream.key().to_vec());
                }
            }
            Err(e) => {
                tracing::warn!("cannot read the path column of a segment: {e}");
                continue;
            }
        }
        for doc in segment.doc_ids_alive() {
            let Some(key) = paths
                .term_ords(doc)
                .next()
                .and_then(|o| by_ord.get(o as usize))
            else {
                continue;
            };
            let state = FileState {
                size: sizes.first(doc).unwrap_or(0),
                mtime_ns: mtimes.first(doc).unwrap_or(0),
                inode: inodes.first(doc).unwrap_or(0),
                ctime_ns: ctimes.first(doc).unwrap_or(0),
            };
            mirror.insert(key.clone(), state);
        }
    }
    mirror
}

/// What to do with one document.
enum Change {
    Upsert(FileState, Box<TantivyDocument>, bool),
    Delete,
}

struct Indexer {
    core: Arc<Core>,
    store: Arc<Store>,
    writer: IndexWriter,
    /// When freed memory was last given back (`malloc_trim`).
    last_trim: Instant,
    /// When the index's maps were last looked at (see [`Indexer::release_maps`]).
    last_release: Instant,
    /// Whether the maps were over [`MAPS_BUDGET`] then: the indexer then
    /// wakes to look again even with nothing to do.
    maps_over_budget: bool,
    /// When the writer last committed.
    last_commit: Option<Instant>,
    live_rx: Receiver<Live>,
    bulk_tx: Sender<Bulk>,
    bulk_rx: Receiver<Bulk>,
    /// Indexed files: exact path bytes → size and mtime.
    mirror: BTreeMap<Vec<u8>, FileState>,
    /// Live paths not yet processed.
    live: Vec<StorePath>,
    live_max_seq: u64,
    live_first: Option<Instant>,
    last_live: Instant,
    /// Highest live sequence number processed (maybe not yet committed).
    processed_seq: u64,
    /// When the oldest uncommitted processing happened.
    dirty_since: Option<Instant>,
    /// Whether live changes are among the uncommitted ones.
    dirty_live: bool,
    /// Whether the writer holds uncommitted operations.
    writer_changed: bool,
    /// Operations not yet handed to the writer, and the keys of the
    /// documents they add (see [`Indexer::send`]).
    ops: Vec<UserOperation>,
    adding: Vec<Vec<u8>>,
    bulk: VecDeque<Bulk>,
    /// Bulk items processed but not committed.
    bulk_uncommitted: u64,
    /// Documents handed to the writer since the last commit.
    uncommitted_docs: usize,
    /// The reconcile marker was reached; clear `reconciling` at commit.
    reconcile_done: bool,
}

impl Indexer {
    fn run(&mut self) {
        loop {
            let busy = !self.live.is_empty()
                || self.dirty_since.is_some()
                || self.reconcile_done
                || self.bulk_uncommitted > 0;
            let timeout = if !self.bulk.is_empty() {
                Duration::ZERO
            } else if busy {
                Duration::from_millis(5)
            } else if self.maps_over_budget {
                RELEASE_EVERY
            } else {
                Duration::from_secs(1)
            };
            let mut stop = false;
            crossbeam_channel::select! {
                recv(self.live_rx) -> msg => match msg {
                    Ok(msg) => stop = !self.handle(msg),
                    Err(_) => stop = true,
                },
                recv(self.bulk_rx) -> msg => if let Ok(item) = msg {
                    self.bulk.push_back(item);
                },
                default(timeout) => if !busy {
                    self.follow_merges();
                    self.idle_trim();
                },
            }
            while !stop && let Ok(msg) = self.live_rx.try_recv() {
                stop = !self.handle(msg);
            }
            self.bulk.extend(self.bulk_rx.try_iter());
            if stop {
                self.process_live();
                self.commit();
                self.core.ids.flush(true, unix_ms() / 1000);
                return;
            }
            self.step();
            self.release_maps();
            // Saved a moment after its last change, whether or not a
            // commit follows.
            self.core.ids.flush(false, unix_ms() / 1000);
        }
    }

    /// Moves the reader to the segments a finished background merge left.
    /// The reader is reloaded by hand after each commit, and a merge that
    /// ends later would otherwise keep the merged-away segments (deleted
    /// files, often hundreds of MiB at 100k notes) mapped and resident
    /// until the next write. A merge changes no document, so the views'
    /// generation stays.
    fn follow_merges(&self) {
        if self.last_commit.is_none() {
            return;
        }
        let Ok(mut committed) = self.core.index.searchable_segment_ids() else {
            return;
        };
        let mut served: Vec<_> = self
            .core
            .reader
            .searcher()
            .segment_readers()
            .iter()
            .map(|r| r.segment_id())
            .collect();
        committed.sort();
        served.sort();
        if committed != served
            && let Err(e) = self.core.reader.reload()
        {
            tracing::error!("cannot reload the index reader: {e}");
        }
    }

    /// With no work at hand, gives back what the last burst freed (here,
    /// in the request threads and in tantivy's merges): at once after a
    /// commit, then every so often for a minute while merges finish.
    fn idle_trim(&mut self) {
        let Some(commit) = self.last_commit else {
            return;
        };
        if commit > self.last_trim
            || (commit.elapsed() < IDLE_TRIM_FOR && self.last_trim.elapsed() >= TRIM_EVERY)
        {
            crate::alloc::give_back();
            self.last_trim = Instant::now();
        }
    }

    /// While the index changes, and for a minute after (merges go on),
    /// lets go of the pages of its maps every so often once they are
    /// larger than [`MAPS_BUDGET`]: merges read whole segments, which
    /// would otherwise stay resident until they are deleted.
    fn release_maps(&mut self) {
        let Some(mapped) = &self.core.mapped else {
            return;
        };
        let changing = self
            .last_commit
            .is_some_and(|commit| commit.elapsed() < IDLE_TRIM_FOR);
        if !changing {
            self.maps_over_budget = false;
        } else if self.last_release.elapsed() >= RELEASE_EVERY {
            self.maps_over_budget = mapped.release(MAPS_BUDGET) > 0;
            self.last_release = Instant::now();
        }
    }

    /// Takes one live message; false means stop.
    fn handle(&mut self, msg: Live) -> bool {
        match msg {
            Live::Paths(seq, paths) => {
                let now = Instant::now();
                self.live.extend(paths);
                self.live_max_seq = self.live_max_seq.max(seq);
                self.live_first.get_or_insert(now);
                self.last_live = now;
                true
            }
            Live::Rebuild(reply) => {
                let result = self.rebuild();
                let _ = reply.send(result);
                true
            }
            Live::Shutdown => false,
        }
    }

    fn step(&mut self) {
        let now = Instant::now();
        if let Some(first) = self.live_first
            && (now - self.last_live >= LIVE_SETTLE || now - first >= LIVE_MAX_WAIT)
        {
            self.process_live();
        }
        if self.live.is_empty() && !self.bulk.is_empty() {
            self.process_bulk();
        }
        let now = Instant::now();
        let quiet = self.live.is_empty() && self.bulk.is_empty() && now - self.last_live >= QUIET;
        let due = self.dirty_since.is_some_and(|since| {
            let every = if self.dirty_live {
                LIVE_COMMIT_EVERY
            } else {
                BULK_COMMIT_EVERY
            };
            now - since >= every
        });
        // Bulk work that changed nothing still has to be counted as done.
        let unsettled =
            self.dirty_since.is_some() || self.reconcile_done || self.bulk_uncommitted > 0;
        if unsettled && (quiet || due) {
            self.commit();
        }
    }

    fn mark_dirty(&mut self, live: bool) {
        self.dirty_since.get_or_insert_with(Instant::now);
        self.dirty_live |= live;
    }

    fn process_live(&mut self) {
        if self.live.is_empty() {
            return;
        }
        let mut paths = std::mem::take(&mut self.live);
        paths.sort();
        paths.dedup();
        self.live_first = None;
        self.apply_paths(&paths);
        self.processed_seq = self.live_max_seq;
        self.mark_dirty(true);
    }

    fn process_bulk(&mut self) {
        let mut paths = Vec::new();
        let mut count = 0;
        while paths.len() < BULK_CHUNK {
            match self.bulk.pop_front() {
                Some(Bulk::Path(p)) => {
                    paths.push(p);
                    count += 1;
                }
                Some(Bulk::DeleteKey(key)) => {
                    self.delete_key_and_below(&key);
                    count += 1;
                }
                Some(Bulk::ReconcileDone(walked)) => {
                    self.reconcile_done = true;
                    self.sweep_ids(&walked);
                    break;
                }
                None => break,
            }
        }
        self.apply_paths(&paths);
        self.bulk_uncommitted += count;
        self.mark_dirty(false);
    }

    /// Brings the documents of `paths` (and of everything under those that
    /// are directories) in line with the store.
    fn apply_paths(&mut self, paths: &[StorePath]) {
        let mirror = &self.mirror;
        let store = &*self.store;
        // Phase 1: decide, per path, which files to (re)read and which
        // documents to drop. Cheap (stat and readdir only).
        let plans = par_map(paths, threads_for(paths.len()), |path| {
            plan(store, mirror, path)
        });
        let mut to_read = Vec::new();
        let mut deletes = Vec::new();
        for p in plans {
            to_read.extend(p.read);
            deletes.extend(p.delete);
        }
        for key in deletes {
            self.apply(key, Change::Delete);
        }
        self.send();
        // Phase 2: read and parse a chunk at a time (on several threads
        // when there is more than a chunk to read): a burst of new files
        // or a folder of 100k notes never holds more than a chunk of built
        // documents (each a copy of its note) at once here, nor more than
        // `MAX_UNCOMMITTED_DOCS` in the writer's queue.
        let threads = threads_for(to_read.len());
        for chunk in to_read.chunks(READ_CHUNK) {
            let mut changes = self.read_files(chunk, threads);
            self.give_ids(&mut changes);
            for (key, change) in changes {
                self.apply(key, change);
            }
            self.send();
            if self.uncommitted_docs >= MAX_UNCOMMITTED_DOCS {
                self.commit();
            }
        }
    }

    /// Reads and builds documents for `files`, on `threads` threads.
    fn read_files(
        &self,
        files: &[(StorePath, FileState)],
        threads: usize,
    ) -> Vec<(Vec<u8>, Change)> {
        let fields = &self.core.fields;
        let store = &*self.store;
        par_map(files, threads, |(path, state)| {
            let key = path_key(path).to_vec();
            match document::read_clipped(store, path) {
                Ok(bytes) => {
                    let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        document::build(fields, path, *state, &bytes)
                    }));
                    let doc = built.unwrap_or_else(|_| {
                        tracing::error!("indexing {path} panicked; indexed as binary");
                        document::build(fields, path, *state, b"\0")
                    });
                    let searchable = !is_skipped(fields, &doc);
                    (key, Change::Upsert(*state, Box::new(doc), searchable))
                }
                Err(e) if is_gone(&e) => (key, Change::Delete),
                Err(e) => {
                    // Unreadable (permissions): index nothing, but remember
                    // the state so it is not retried on every start.
                    tracing::warn!("cannot read {path} for indexing: {e}");
                    let mut doc = TantivyDocument::new();
                    doc.add_bytes(fields.path, &key);
                    state.add_to(fields, &mut doc);
                    doc.add_text(fields.kind, super::schema::KIND_SKIPPED);
                    (key, Change::Upsert(*state, Box::new(doc), false))
                }
            }
        })
    }

    /// Gives the memories among `changes` that have no id of their own
    /// the one the id table keeps for them (or a new one); the others'
    /// entries are dropped, since their files carry their ids.
    fn give_ids(&self, changes: &mut [(Vec<u8>, Change)]) {
        let fields = &self.core.fields;
        let mut need = Vec::new();
        let mut files = Vec::new();
        let mut copies = Vec::new();
        for (i, (key, change)) in changes.iter().enumerate() {
            let Change::Upsert(_, doc, _) = change else {
                continue;
            };
            if !document::needs_id(fields, doc) {
                self.core.ids.forget(key);
                copies.push((key.clone(), own_id(fields, doc)));
                continue;
            }
            let Some(stat) = path_from_key(key).and_then(|p| self.store.stat(&p).ok()) else {
                continue;
            };
            need.push(i);
            files.push((key.clone(), Identity::of(&stat)));
        }
        let searcher = self.core.reader.searcher();
        let taken = |id: &str, key: &[u8]| {
            let query = tantivy::query::TermQuery::new(
                Term::from_field_text(fields.id, &id.to_lowercase()),
                tantivy::schema::IndexRecordOption::Basic,
            );
            super::query::paths_matching_in(&searcher, &query)
                .is_ok_and(|paths| paths.iter().any(|p| path_key(p) != key))
        };
        let previous = |key: &[u8]| super::query::indexed_id_in(&searcher, fields, key);
        self.note_copies(copies, &taken, &previous);
        if files.is_empty() {
            return;
        }
        let ids = self
            .core
            .ids
            .assign(&files, &|k| self.holds(k), &taken, &previous);
        for (i, id) in need.into_iter().zip(ids) {
            if let Some((_, Change::Upsert(_, doc, _))) = changes.get_mut(i) {
                document::add_id(fields, doc, &id);
            }
        }
    }

    /// Remembers which of `memories` (with the ids their files give) came
    /// with an id another path already had in the committed index, and
    /// had not had it here before: copies (`cp a.md b.md`), as opposed to
    /// the memory they were copied from, whichever is edited first.
    fn note_copies(
        &self,
        memories: Vec<(Vec<u8>, Option<String>)>,
        taken: &dyn Fn(&str, &[u8]) -> bool,
        previous: &dyn Fn(&[u8]) -> Option<String>,
    ) {
        if memories.is_empty() {
            return;
        }
        let mut copies = self.core.copies.lock();
        for (key, id) in memories {
            // A copy read again (its later writes, a re-read of a racy
            // change) stays one while the other still has the id.
            // Whether another path has the id first (one lookup, and for
            // nearly every memory the last): the document read that
            // `previous` costs only for the few that share theirs.
            let copy = id.filter(|id| {
                taken(id, &key)
                    && (copies.get(&key).is_some_and(|kept| kept == id)
                        || !previous(&key).is_some_and(|p| p.eq_ignore_ascii_case(id)))
            });
            match copy {
                Some(id) => {
                    copies.insert(key, id);
                }
                None => {
                    copies.remove(&key);
                }
            }
        }
    }

    /// The inode of the regular file at `key`, if there is one.
    fn holds(&self, key: &[u8]) -> Option<u64> {
        let path = path_from_key(key)?;
        self.store
            .stat(&path)
            .ok()
            .filter(|st| st.kind == FileKind::File)
            .map(|st| st.ino)
    }

    /// After a walk of the whole store, which found the regular files of
    /// `walked`: ids of files no longer there are let go (after a while,
    /// in case they moved). A file the walk found is there; only the
    /// others are looked at again (one may have come since), so a start
    /// does not stat every file a second time.
    fn sweep_ids(&self, walked: &HashSet<Vec<u8>>) {
        let holds = |k: &[u8]| walked.contains(k) || self.holds(k).is_some();
        self.core.ids.sweep(&holds, unix_ms() / 1000);
    }

    fn apply(&mut self, key: Vec<u8>, change: Change) {
        if let Some(semantic) = self.core.semantic.get()
            && let Some(path) = path_from_key(&key)
        {
            match &change {
                Change::Upsert(_, _, true) => semantic.changed(path),
                Change::Upsert(_, _, false) | Change::Delete => semantic.removed(&path),
            }
        }
        let term = Term::from_field_bytes(self.core.fields.path, &key);
        match change {
            Change::Delete => {
                if self.mirror.remove(&key).is_some() {
                    self.ops.push(UserOperation::Delete(term));
                    self.core.ids.gone(&key, unix_ms() / 1000);
                    self.core.copies.lock().remove(&key);
                }
            }
            Change::Upsert(state, doc, _) => {
                // The mirror is what the index holds: a new file has no
                // document to replace, and a delete costs a lookup in
                // every segment at the next commit.
                if self.mirror.insert(key.clone(), state).is_some() {
                    self.ops.push(UserOperation::Delete(term));
                }
                self.ops.push(UserOperation::Add(*doc));
                self.adding.push(key);
            }
        }
        if self.ops.len() >= SEND_BATCH {
            self.send();
        }
    }

    /// Hands the pending operations to the writer as one batch: its
    /// documents go to one of the writer's threads together, which then
    /// wakes once for the batch instead of once per document.
    fn send(&mut self) {
        if self.ops.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.ops);
        let adding = std::mem::take(&mut self.adding);
        self.writer_changed = true;
        self.uncommitted_docs += adding.len();
        if let Err(e) = self.writer.run(ops) {
            tracing::error!("cannot add {} documents to the index: {e}", adding.len());
            for key in adding {
                self.mirror.remove(&key);
            }
        }
    }

    fn delete_key_and_below(&mut self, key: &[u8]) {
        for k in keys_at_or_below(&self.mirror, key) {
            self.apply(k, Change::Delete);
        }
        self.send();
    }

    fn commit(&mut self) {
        self.send();
        if self.writer_changed {
            self.last_commit = Some(Instant::now());
            match self.writer.commit() {
                Ok(_) => {
                    self.core.update_progress(|p| p.failing = None);
                    if let Err(e) = self.core.reader.reload() {
                        tracing::error!("cannot reload the index reader: {e}");
                    }
                    self.core.generation.fetch_add(1, Ordering::AcqRel);
                    self.core.last_commit.store(unix_ms(), Ordering::Release);
                }
                Err(e) => self.recover_from_failed_commit(&e.to_string()),
            }
            self.writer_changed = false;
            self.uncommitted_docs = 0;
        }
        let seq = self.processed_seq;
        let bulk_done = std::mem::take(&mut self.bulk_uncommitted);
        if (bulk_done > 0 && self.bulk.is_empty()) || self.last_trim.elapsed() >= TRIM_EVERY {
            // Indexing leaves the allocator holding freed buffers (hundreds
            // of MiB after a big build); give them back to the system once
            // the bulk work is done, and every so often under steady load.
            crate::alloc::give_back();
            self.last_trim = Instant::now();
        }
        let reconcile_done = std::mem::take(&mut self.reconcile_done);
        self.core.update_progress(|p| {
            p.committed_seq = p.committed_seq.max(seq);
            p.bulk_pending = p.bulk_pending.saturating_sub(bulk_done);
            if reconcile_done {
                p.reconciling = false;
            }
        });
        self.dirty_since = None;
        self.dirty_live = false;
        self.core.ids.flush(false, unix_ms() / 1000);
    }

    /// After a failed commit (a full disk): rolls the writer back to the
    /// last commit and reconciles the store with what that holds.
    fn recover_from_failed_commit(&mut self, why: &str) {
        tracing::error!("index commit failed, rolling back and reconciling: {why}");
        let why = why.to_string();
        self.core.update_progress(|p| p.failing = Some(why));
        if let Err(e) = self.writer.rollback() {
            tracing::error!("index rollback failed: {e}");
        }
        // What the failed commit wrote would stand in the way of the next.
        if let Err(e) = self.writer.garbage_collect_files().wait() {
            tracing::error!("cannot clear the failed commit's files: {e}");
        }
        // A full disk fails every commit until space is back: try again
        // at a walking pace, not in a tight loop.
        std::thread::sleep(COMMIT_RETRY);
        // The last commit may be part of a rebuild the reader never moved
        // to: the mirror must be what the writer goes on from.
        if let Err(e) = self.core.reader.reload() {
            tracing::error!("cannot reload the index reader: {e}");
        }
        self.mirror = load_mirror(&self.core);
        self.bulk.push_back(Bulk::Path(StorePath::root()));
        self.core.update_progress(|p| p.bulk_pending += 1);
    }

    /// Drops everything and indexes the whole store. Searches see the old
    /// index until the new one is complete: the reader moves to it at the
    /// last commit (the writer commits on the way only to bound what it
    /// holds).
    fn rebuild(&mut self) -> Result<usize, IndexError> {
        let start = Instant::now();
        self.send();
        self.writer.delete_all_documents()?;
        self.mirror.clear();
        self.writer_changed = true;
        // Everything notified so far is covered by the walk below.
        self.live.clear();
        self.live_first = None;
        self.processed_seq = self.live_max_seq;
        let files = walk(&self.store, &StorePath::root());
        let total = files.len();
        let walked: HashSet<Vec<u8>> = files.iter().map(|(p, _)| path_key(p).to_vec()).collect();
        tracing::info!("rebuilding the index: {total} files");
        self.core.update_progress(|p| {
            p.rebuild_done = 0;
            p.rebuild_total = total as u64;
        });
        let mut searchable = 0;
        let mut last_log = Instant::now();
        for (done, chunk) in (1..).zip(files.chunks(REBUILD_CHUNK)) {
            let mut changes = self.read_files(chunk, io_threads());
            self.give_ids(&mut changes);
            for (key, change) in changes {
                if let Change::Upsert(_, _, true) = change {
                    searchable += 1;
                }
                self.apply(key, change);
            }
            self.send();
            if self.uncommitted_docs >= REBUILD_UNCOMMITTED_DOCS {
                // Waits for the writer to index what it was handed. The
                // daemon's reader is not reloaded: its searches keep the
                // old index until the new one is complete. (A read-only
                // index of another process follows every commit, and a
                // crash leaves what was committed for the reconcile.)
                if let Err(e) = self.writer.commit() {
                    self.recover_from_failed_commit(&e.to_string());
                    return Err(e.into());
                }
                self.uncommitted_docs = 0;
            }
            let done = (done * REBUILD_CHUNK).min(total);
            self.core.update_progress(|p| p.rebuild_done = done as u64);
            if last_log.elapsed() >= Duration::from_secs(2) || done == total {
                let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-3);
                tracing::info!("indexed {done}/{total} files ({rate:.0} files/s)");
                last_log = Instant::now();
            }
        }
        self.mark_dirty(true);
        self.sweep_ids(&walked);
        self.commit();
        self.core.update_progress(|p| {
            p.rebuild_done = 0;
            p.rebuild_total = 0;
        });
        tracing::info!(
            "index rebuilt: {searchable} documents in {:.1}s",
            start.elapsed().as_secs_f64()
        );
        Ok(searchable)
    }

    /// Starts the background walk that compares the store with `mirror`
    /// and queues what differs on the bulk queue.
    fn start_reconcile(&self) {
        let store = Arc::clone(&self.store);
        let snapshot = self.mirror.clone();
        let bulk_tx = self.bulk_tx.clone();
        let core = Arc::clone(&self.core);
        let spawned = std::thread::Builder::new()
            .name("mnemofs-reconcile".into())
            .spawn(move || reconcile(&store, snapshot, &bulk_tx, &core));
        if let Err(e) = spawned {
            tracing::error!("cannot start the index reconcile: {e}");
            self.core.update_progress(|p| p.reconciling = false);
        }
    }
}

fn reconcile(
    store: &Store,
    mut snapshot: BTreeMap<Vec<u8>, FileState>,
    bulk_tx: &Sender<Bulk>,
    core: &Core,
) {
    let start = Instant::now();
    let files = walk(store, &StorePath::root());
    let scanned = files.len();
    let mut queue = Vec::new();
    let mut walked = HashSet::with_capacity(scanned);
    for (path, state) in files {
        let key = path_key(&path).to_vec();
        let changed = snapshot.remove(&key) != Some(state);
        walked.insert(key);
        if changed {
            queue.push(Bulk::Path(path));
        }
    }
    let changed = queue.len();
    let removed = snapshot.len();
    for key in snapshot.into_keys() {
        queue.push(match path_from_key(&key) {
            Some(path) => Bulk::Path(path),
            None => Bulk::DeleteKey(key),
        });
    }
    let n = queue.len() as u64;
    core.update_progress(|p| p.bulk_pending += n);
    for item in queue {
        if bulk_tx.send(item).is_err() {
            return;
        }
    }
    let _ = bulk_tx.send(Bulk::ReconcileDone(walked));
    tracing::info!(
        "index reconcile: {scanned} files scanned in {:.2}s, {changed} to reindex, {removed} removed",
        start.elapsed().as_secs_f64()
    );
}

/// What to do about one notified path.
#[derive(Default)]
struct Plan {
    read: Vec<(StorePath, FileState)>,
    delete: Vec<Vec<u8>>,
}

/// A file modified this recently may have changed again within the same
/// mtime tick without changing size, so a notification re-reads it.
const RACY_NS: i64 = 2_000_000_000;

/// How often a commit gives freed memory back to the system at most.
const TRIM_EVERY: Duration = Duration::from_secs(10);
/// How long after the last commit an idle indexer keeps trimming.
const IDLE_TRIM_FOR: Duration = Duration::from_secs(60);
/// How often the index's maps are looked at while it changes (a merge
/// reads page-cached segments at hundreds of MiB a second)...
const RELEASE_EVERY: Duration = Duration::from_millis(100);
/// ...and how large they may be before their pages are let go. An index
/// of 100,000 notes is about half this: a store that size is searched at
/// full speed, and only an index that grows far past it is released, at
/// the cost of page faults in the searches that follow a release.
const MAPS_BUDGET: u64 = 128 << 20;

/// The pause after a failed commit before the work is tried again.
const COMMIT_RETRY: Duration = Duration::from_secs(2);

/// Whether the index's copy of a file with `state` may be stale although
/// the state matches (git's "racy clean" problem).
fn is_racy(state: &FileState) -> bool {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    now - state.mtime_ns < RACY_NS
}

fn needs_read(mirror: &BTreeMap<Vec<u8>, FileState>, key: &[u8], state: &FileState) -> bool {
    mirror.get(key) != Some(state) || is_racy(state)
}

fn plan(store: &Store, mirror: &BTreeMap<Vec<u8>, FileState>, path: &StorePath) -> Plan {
    let mut plan = Plan::default();
    if is_ignored(path) {
        return plan;
    }
    let key = path_key(path);
    match store.stat(path) {
        Ok(stat) if stat.kind == FileKind::File && !path.is_root() => {
            let state = FileState::of(&stat);
            if needs_read(mirror, key, &state) {
                plan.read.push((path.clone(), state));
            }
            // A directory replaced by a file: drop what was below it.
            plan.delete.extend(keys_below(mirror, key));
        }
        Ok(stat) if stat.kind == FileKind::Directory => {
            let files = walk(store, path);
            let mut present: HashMap<&[u8], ()> = HashMap::with_capacity(files.len());
            for (p, _) in &files {
                present.insert(path_key(p), ());
            }
            let below: Vec<Vec<u8>> = if path.is_root() {
                mirror.keys().cloned().collect()
            } else {
                let mut v = keys_below(mirror, key);
                if mirror.contains_key(key) {
                    v.push(key.to_vec());
                }
                v
            };
            plan.delete.extend(
                below
                    .into_iter()
                    .filter(|k| !present.contains_key(k.as_slice())),
            );
            plan.read.extend(
                files
                    .iter()
                    .filter(|(p, s)| needs_read(mirror, path_key(p), s))
                    .cloned(),
            );
        }
        Ok(_) => plan.delete = keys_at_or_below(mirror, key),
        Err(e) if is_gone(&e) => plan.delete = keys_at_or_below(mirror, key),
        Err(e) => tracing::warn!("cannot check {path} for indexing: {e}"),
    }
    plan
}

/// Keys strictly below directory `key` (`key/...`).
fn keys_below(mirror: &BTreeMap<Vec<u8>, FileState>, key: &[u8]) -> Vec<Vec<u8>> {
    let mut prefix = key.to_vec();
    prefix.push(b'/');
    mirror
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(k, _)| k.clone())
        .collect()
}

fn keys_at_or_below(mirror: &BTreeMap<Vec<u8>, FileState>, key: &[u8]) -> Vec<Vec<u8>> {
    let mut keys = keys_below(mirror, key);
    if mirror.contains_key(key) {
        keys.push(key.to_vec());
    }
    keys
}

fn is_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ELOOP)
    )
}

/// The id a memory's own frontmatter gives it, if any.
fn own_id(fields: &super::schema::Fields, doc: &TantivyDocument) -> Option<String> {
    use tantivy::schema::Value;
    doc.get_first(fields.id)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

fn is_skipped(fields: &super::schema::Fields, doc: &TantivyDocument) -> bool {
    use tantivy::schema::Value;
    doc.get_first(fields.kind)
        .and_then(|v| v.as_str())
        .is_some_and(|k| k == super::schema::KIND_SKIPPED)
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Maps `f` over `items` on up to `threads` scoped threads, keeping order.
fn par_map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 || threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.min(items.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut local = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        local.push((i, f(item)));
                    }
                    local
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// Every indexable regular file at or under `dir`, with its state. The
/// folder itself is listed on the calling thread; a few threads sharing a
/// stack of folders walk what lies below it, if anything does (a folder
/// just made, or a flat one, starts no thread).
pub(crate) fn walk(store: &Store, dir: &StorePath) -> Vec<(StorePath, FileState)> {
    struct Shared {
        stack: Vec<StorePath>,
        active: usize,
    }
    let (mut files, subdirs) = list(store, dir);
    if !subdirs.is_empty() {
        let shared = Mutex::new(Shared {
            stack: subdirs,
            active: 0,
        });
        let cond = Condvar::new();
        let worker = || {
            let mut found = Vec::new();
            loop {
                let mut s = shared.lock();
                let next = loop {
                    if let Some(d) = s.stack.pop() {
                        s.active += 1;
                        break Some(d);
                    }
                    if s.active == 0 {
                        break None;
                    }
                    cond.wait(&mut s);
                };
                drop(s);
                let Some(d) = next else {
                    cond.notify_all();
                    return found;
                };
                let (files, subdirs) = list(store, &d);
                found.extend(files);
                let mut s = shared.lock();
                s.stack.extend(subdirs);
                s.active -= 1;
                drop(s);
                cond.notify_all();
            }
        };
        files.extend(std::thread::scope(|s| {
            let handles: Vec<_> = (0..io_threads()).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect::<Vec<_>>()
        }));
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

/// The indexable regular files directly in `dir`, with their states, and
/// its subfolders.
fn list(store: &Store, dir: &StorePath) -> (Vec<(StorePath, FileState)>, Vec<StorePath>) {
    let mut files = Vec::new();
    let mut subdirs = Vec::new();
    match store.read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                if is_ignored_name(std::os::unix::ffi::OsStrExt::as_bytes(
                    entry.name.as_os_str(),
                )) {
                    continue;
                }
                let Some(child) = dir.join(&entry.name) else {
                    continue;
                };
                match entry.kind {
                    FileKind::Directory if child.within_depth() => subdirs.push(child),
                    FileKind::Directory => tracing::debug!("not followed, too deep: {child}"),
                    FileKind::File => match store.stat(&child) {
                        Ok(st) if st.kind == FileKind::File => {
                            files.push((child, FileState::of(&st)));
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!("cannot stat {child}: {e}"),
                    },
                    FileKind::Symlink | FileKind::Special => {}
                }
            }
        }
        Err(e) => tracing::debug!("cannot list {dir}: {e}"),
    }
    (files, subdirs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tantivy::schema::{STRING, Schema};
    use tantivy::{Term, doc};

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read_dir") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
        }
    }

    #[test]
    fn a_writer_opens_past_a_commit_killed_before_its_meta() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (dir, left) = (tmp.path().join("index"), tmp.path().join("left"));
        std::fs::create_dir(&dir).expect("mkdir");
        let mut builder = Schema::builder();
        let key = builder.add_text_field("key", STRING);
        let index = tantivy::Index::create_in_dir(&dir, builder.build()).expect("create");
        let mut writer = open_writer(&index).expect("writer");
        writer.add_document(doc!(key => "a")).expect("add");
        writer.add_document(doc!(key => "b")).expect("add");
        writer.commit().expect("commit");
        drop(writer);

        // The next process's commit, as it left it when killed just
        // before it wrote meta.json: its delete file written, its meta not.
        let meta = std::fs::read(dir.join("meta.json")).expect("meta");
        let mut writer = open_writer(&index).expect("writer");
        writer.delete_term(Term::from_field_text(key, "a"));
        writer.commit().expect("commit");
        drop(writer);
        copy_dir(&dir, &left);
        std::fs::write(left.join("meta.json"), meta).expect("old meta");
        let _ = std::fs::remove_file(left.join(".tantivy-writer.lock"));

        let index = tantivy::Index::open_in_dir(&left).expect("open");
        let mut writer = open_writer(&index).expect("writer");
        writer.delete_term(Term::from_field_text(key, "a"));
        writer.commit().expect("the same commit again");
        let searcher = index.reader().expect("reader").searcher();
        assert_eq!(searcher.num_docs(), 1);
    }
}
