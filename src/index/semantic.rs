//! Meaning beside words: each memory's vectors (one per chunk, from the
//! configured model), kept in step with the text index by a worker thread
//! at low priority, searched by cosine and fused with the ranking of words.
//!
//! The indexer tells this table of every memory it adds, replaces or
//! drops; the worker reads the file, cuts it into chunks led by its title,
//! embeds them, and stores them under the memory's path. A memory's score
//! is its best chunk's. Vectors lag the text index (the backlog is in
//! `status`); a search never waits for a backlog: a memory not embedded
//! yet is found by its words alone. When only a few short memories wait
//! (what an agent has just written), the search embeds them itself.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex, RwLock};

use super::vectors::VectorTable;
use crate::embed::Embedder;
use crate::store::{Store, StorePath};

/// Texts embedded in one call: enough to keep the matrix products busy,
/// few enough that a removal is never held up for long.
const BATCH_TEXTS: usize = 16;

#[derive(Default)]
struct Queue {
    paths: VecDeque<StorePath>,
    /// What `paths` holds, to queue each memory once.
    queued: std::collections::HashSet<StorePath>,
    /// The memories the index held when semantic search was turned on
    /// are queued.
    seeded: bool,
    /// The batch the worker took from `paths` and is embedding.
    working: Vec<StorePath>,
    /// How many memories searches took from `paths` to embed themselves
    /// (see [`Semantic::embed_waiting`]): still waiting until their
    /// vectors are in the table.
    inline: usize,
    stop: bool,
    /// Memories embedded or removed since the vectors were last saved.
    unsaved: usize,
    /// When they were last saved, by this process.
    saved_at: Option<std::time::Instant>,
}

/// How often the vectors are saved while the worker has nothing to do,
/// and while it works through a backlog: a daemon killed before it could
/// stop loses at most that much embedding, not a store's worth.
const SAVE_IDLE: std::time::Duration = std::time::Duration::from_secs(60);
const SAVE_BUSY: std::time::Duration = std::time::Duration::from_secs(300);

/// The vectors of a store's memories, and the worker that makes them.
pub(crate) struct Semantic {
    embedder: Embedder,
    store: Arc<Store>,
    table: RwLock<VectorTable>,
    queue: Mutex<Queue>,
    wake: Condvar,
    /// The latest queries' vectors, newest last: a view folder's listing
    /// and the lookups of its entries ask the same query many times.
    recent_queries: Mutex<VecDeque<(String, Arc<Vec<f32>>)>>,
    /// Where the vectors are kept between runs, if anywhere.
    file: Option<PathBuf>,
    /// Held while the file is written: the worker and `stop` both may.
    saving: Mutex<()>,
    /// Without a worker (see [`Semantic::frozen`]).
    frozen: bool,
}

/// Query vectors kept.
const RECENT_QUERIES: usize = 32;

/// A search embeds the memories waiting for their vectors itself when
/// there are at most this many, of at most [`INLINE_BYTES`] in all (a few
/// chunks, some tens of milliseconds on the CPU).
pub(crate) const INLINE_MEMORIES: usize = 4;
/// See [`INLINE_MEMORIES`].
const INLINE_BYTES: u64 = 8 << 10;

/// Without a daemon, each search embeds this many of the memories waiting
/// for their vectors, the newest first, of at most [`ONE_SHOT_BYTES`] in
/// all (about a third of a second for the largest), however many wait:
/// what an agent wrote last is what it asks about next, and a command
/// that holds the store's lock keeps them for the next one (see
/// [`Semantic::frozen`]).
const ONE_SHOT_MEMORIES: usize = 8;
/// See [`ONE_SHOT_MEMORIES`].
const ONE_SHOT_BYTES: u64 = 16 << 10;

/// Fewer letters and digits than this in a memory's title and body (an
/// empty file, "x") and it is not embedded: all-MiniLM-L6-v2 puts an
/// empty text at 0.33 from "zebra" and "x" at 0.27, above the floor that
/// keeps what meaning alone finds, so every question of one word found
/// them.
const MIN_LETTERS: usize = 3;

/// Chunks embedded of one memory at most (about 10,000 words): a huge
/// file never holds the worker up for long.
const MAX_CHUNKS: usize = 64;

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic")
            .field("model", &self.embedder.name())
            .field("memories", &self.table.read().len())
            .finish_non_exhaustive()
    }
}

impl Semantic {
    /// Starts the worker, after taking in the vectors `file` kept of
    /// memories unchanged since (see [`Semantic::save`]). It embeds
    /// whatever it is told of: the memories the index holds
    /// ([`Semantic::seed`]), then each change.
    pub(crate) fn start(
        embedder: Embedder,
        store: Arc<Store>,
        file: Option<PathBuf>,
    ) -> std::io::Result<Arc<Semantic>> {
        // The encoder's matrix products run on rayon's pool: at most two
        // threads, at background priority, so that embedding a store never
        // starves the mount's callers. (A pool made earlier stays.)
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(pool_threads())
            .thread_name(|i| format!("mnemofs-embed-{i}"))
            .start_handler(|_| crate::background::lower_priority())
            .build_global();
        let table = match &file {
            Some(file) => Kept::table_for(read_vectors(file, &store), &embedder, file),
            None => VectorTable::new(embedder.dims()),
        };
        let semantic = Semantic::new(embedder, store, table, file, false);
        let weak = Arc::downgrade(&semantic);
        std::thread::Builder::new()
            .name("mnemofs-embed".into())
            .spawn(move || work(&weak))?;
        Ok(semantic)
    }

    /// The vectors `file` kept, with the model in `model_dir`, for a
    /// process that only asks (a command run without a daemon): no worker.
    /// A memory changed since the file was written waits for a search,
    /// which embeds the newest of those waiting itself (see
    /// [`embed_waiting`](Self::embed_waiting)); with `keep` (the process
    /// holds the store's lock) what it embedded is saved to `file` when it
    /// stops, so each command takes the next ones. The model loads while
    /// the file is read: a command pays for the slower of the two, not
    /// both.
    pub(crate) fn frozen(
        model_dir: &Path,
        store: Arc<Store>,
        file: &Path,
        questions: crate::embed::Questions,
        keep: bool,
    ) -> Result<Arc<Semantic>, crate::embed::EmbedError> {
        let (embedder, kept) = std::thread::scope(|scope| {
            let model = scope.spawn(|| Embedder::load(model_dir));
            let kept = read_vectors(file, &store);
            let embedder = model.join().unwrap_or_else(|_| {
                Err(crate::embed::EmbedError::Run("the loader panicked".into()))
            });
            (embedder, kept)
        });
        let mut embedder = embedder?;
        embedder.use_questions(questions);
        let table = Kept::table_for(kept, &embedder, file);
        let keep_in = keep.then(|| file.to_path_buf());
        let semantic = Semantic::new(embedder, store, table, keep_in, true);
        semantic.queue.lock().seeded = true;
        Ok(semantic)
    }

    fn new(
        embedder: Embedder,
        store: Arc<Store>,
        table: VectorTable,
        keep_in: Option<PathBuf>,
        frozen: bool,
    ) -> Arc<Semantic> {
        Arc::new(Semantic {
            embedder,
            store,
            table: RwLock::new(table),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            recent_queries: Mutex::new(VecDeque::new()),
            file: keep_in,
            saving: Mutex::new(()),
            frozen,
        })
    }

    /// The model's name.
    pub(crate) fn model(&self) -> &str {
        self.embedder.name()
    }

    /// Whether the model reads Chinese (see [`Embedder::reads_chinese`]).
    pub(crate) fn reads_chinese(&self) -> bool {
        self.embedder.reads_chinese()
    }

    /// A memory was added or changed: its vectors are made again (a
    /// frozen table forgets them, and a search embeds them itself when
    /// they are few and short, see [`embed_waiting`](Self::embed_waiting)).
    pub(crate) fn changed(&self, path: StorePath) {
        if self.frozen {
            self.table.write().remove(&path);
        }
        let mut queue = self.queue.lock();
        if queue.queued.insert(path.clone()) {
            queue.paths.push_back(path);
        }
        drop(queue);
        self.wake.notify_one();
    }

    /// The memories the index holds, once it has taken in the store: those
    /// without vectors are queued.
    pub(crate) fn seed(&self, paths: Vec<StorePath>) {
        self.waiting_here(paths);
        self.queue.lock().seeded = true;
        self.wake.notify_one();
    }

    /// A memory is gone (or is no longer one).
    pub(crate) fn removed(&self, path: &StorePath) {
        let mut queue = self.queue.lock();
        if queue.queued.remove(path) {
            queue.paths.retain(|p| p != path);
        }
        queue.unsaved += 1;
        drop(queue);
        self.table.write().remove(path);
    }

    /// Of `paths` (the memories the index holds), those without vectors
    /// are queued: for the worker, or, in a frozen table, for a search
    /// here, which embeds them when they are few and short.
    pub(crate) fn waiting_here(&self, paths: Vec<StorePath>) {
        let table = self.table.read();
        let mut queue = self.queue.lock();
        for path in paths {
            if !table.contains(&path) && queue.queued.insert(path.clone()) {
                queue.paths.push_back(path);
            }
        }
    }

    /// Whether no worker embeds here (a command without a daemon): what
    /// is not in the table waits for a daemon, or for a search here when
    /// it is a few short memories.
    pub(crate) fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Memories with vectors, and memories waiting for them: those
    /// queued, the batch being embedded and what searches took to embed;
    /// before the index's memories are queued, the `memories` the
    /// vectors lack. One reading of both: the table is held while the
    /// queue is read, so a batch that leaves the queue for the table in
    /// between is counted once or twice, never not at all.
    pub(crate) fn progress(&self, memories: usize) -> (usize, usize) {
        // The table before the queue, as everywhere.
        let table = self.table.read();
        let embedded = table.len();
        let lacking = memories.saturating_sub(embedded);
        let queue = self.queue.lock();
        let waiting = queue.paths.len() + queue.working.len() + queue.inline;
        let backlog = if queue.seeded {
            waiting
        } else {
            waiting.max(lacking)
        };
        (embedded, backlog)
    }

    /// True once the memories the index held are queued and every queued
    /// one is embedded.
    pub(crate) fn caught_up(&self) -> bool {
        let queue = self.queue.lock();
        queue.seeded && queue.paths.is_empty() && queue.working.is_empty() && queue.inline == 0
    }

    /// Embeds here, at the caller's priority, the memories still waiting
    /// for their vectors when they are few and short: what an agent has
    /// just written and asks about at once, by other words, is then found
    /// by its meaning too. A backlog is left to the worker, so a search
    /// never waits for one. Those the worker is embedding now are embedded
    /// here as well: the search does not wait for the worker either.
    /// Without a worker (a frozen table), the newest of the waiting are
    /// embedded, whatever the backlog.
    pub(crate) fn embed_waiting(&self) {
        if self.frozen {
            self.embed_inline(ONE_SHOT_BYTES, |queue| self.newest_waiting(queue));
            return;
        }
        self.embed_inline(INLINE_BYTES, |queue| {
            let waiting = queue.paths.len() + queue.working.len();
            if waiting == 0 || waiting > INLINE_MEMORIES {
                return Vec::new();
            }
            let mut paths: Vec<StorePath> = queue.paths.iter().cloned().collect();
            paths.extend(queue.working.iter().cloned());
            paths
        });
    }

    /// The newest of the memories waiting, as many as [`ONE_SHOT_MEMORIES`]
    /// and [`ONE_SHOT_BYTES`] allow (one too large for them waits for a
    /// daemon).
    fn newest_waiting(&self, queue: &Queue) -> Vec<StorePath> {
        let mut waiting: Vec<_> = queue
            .paths
            .iter()
            .filter_map(|p| self.store.stat(p).ok().map(|st| (st.mtime, st.size, p)))
            .collect();
        waiting.sort_unstable_by_key(|w| std::cmp::Reverse(w.0));
        let mut bytes = 0;
        let mut picked = Vec::new();
        for (_, size, path) in waiting {
            if picked.len() == ONE_SHOT_MEMORIES {
                break;
            }
            if bytes + size <= ONE_SHOT_BYTES {
                bytes += size;
                picked.push(path.clone());
            }
        }
        picked
    }

    /// Embeds here those of `paths` still waiting for their vectors, at
    /// most [`INLINE_MEMORIES`] of them and [`INLINE_BYTES`] in all: a
    /// search that compares its hits by meaning (see `supersede.rs`)
    /// does not wait for the worker to reach them after a burst of writes.
    pub(crate) fn embed_these(&self, paths: &[&StorePath]) {
        self.embed_inline(INLINE_BYTES, |queue| {
            paths
                .iter()
                .filter(|p| queue.queued.contains(**p) || queue.working.contains(p))
                .take(INLINE_MEMORIES)
                .map(|p| (*p).clone())
                .collect()
        });
    }

    /// Embeds at the caller's priority the memories `pick` chooses from
    /// the queue, if they hold at most `max_bytes`; those still queued
    /// leave it.
    fn embed_inline(&self, max_bytes: u64, pick: impl FnOnce(&Queue) -> Vec<StorePath>) {
        let paths: Vec<StorePath> = {
            let mut queue = self.queue.lock();
            let paths = pick(&queue);
            if paths.is_empty() {
                return;
            }
            let bytes: u64 = paths
                .iter()
                .filter_map(|p| self.store.stat(p).ok())
                .map(|st| st.size)
                .sum();
            if bytes > max_bytes {
                return;
            }
            let taken: std::collections::HashSet<&StorePath> = paths.iter().collect();
            queue.paths.retain(|p| !taken.contains(p));
            for path in &paths {
                queue.queued.remove(path);
            }
            queue.inline += paths.len();
            paths
        };
        let taken = paths.len();
        let embedded = on_query_pool(|| self.embed_batch(paths));
        let mut queue = self.queue.lock();
        queue.inline -= taken;
        queue.unsaved += embedded;
    }

    /// Memories embedded that the model could not read (see
    /// [`VectorTable::unread`]): found by their words alone.
    pub(crate) fn unread(&self) -> usize {
        self.table.read().unread()
    }

    /// Whether the model could not read the memory at `path`.
    pub(crate) fn is_unread(&self, path: &StorePath) -> bool {
        self.table.read().is_unread(path)
    }

    /// Memories with vectors.
    pub(crate) fn embedded(&self) -> usize {
        self.table.read().len()
    }

    /// Stops the worker once its current batch is done, and keeps the
    /// vectors for the next start.
    pub(crate) fn stop(&self) {
        let unsaved = {
            let mut queue = self.queue.lock();
            queue.stop = true;
            queue.unsaved
        };
        self.wake.notify_all();
        // A command without a daemon rewrites the file only for what it
        // embedded or saw go.
        if self.frozen && unsaved == 0 {
            return;
        }
        if let Some(file) = &self.file
            && let Err(e) = self.save(file)
        {
            tracing::warn!("cannot keep the vectors in {}: {e}", file.display());
        }
    }

    /// Whether the model knows `word` whole (see
    /// [`Embedder::knows_word`]).
    pub(crate) fn knows_word(&self, word: &str) -> bool {
        self.embedder.knows_word(word)
    }

    /// One vector per text, from the model the memories are embedded
    /// with; `None` (with a warning) if it cannot make them.
    pub(crate) fn embed_texts(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        self.embedder
            .embed(texts)
            .map_err(|e| tracing::warn!("cannot embed: {e}"))
            .ok()
    }

    /// The vector of a query, if the model can make one.
    pub(crate) fn embed_query(&self, query: &str) -> Option<Arc<Vec<f32>>> {
        if let Some((_, v)) = self.recent_queries.lock().iter().find(|(q, _)| q == query) {
            return Some(Arc::clone(v));
        }
        let embedded = on_query_pool(|| self.embedder.embed_query(query));
        match embedded {
            Ok(v) => {
                let v = Arc::new(v);
                let mut recent = self.recent_queries.lock();
                if recent.len() >= RECENT_QUERIES {
                    recent.pop_front();
                }
                recent.push_back((query.to_owned(), Arc::clone(&v)));
                Some(v)
            }
            Err(e) => {
                tracing::warn!("cannot embed the query: {e}");
                None
            }
        }
    }

    /// The `limit` memories nearest to `query` (by their best chunk), with
    /// their cosine and how many chunks they have, best first; memories of
    /// `hidden_scopes` and those `keep` does not keep left out.
    pub(crate) fn nearest(
        &self,
        query: &[f32],
        limit: usize,
        hidden_scopes: &[String],
        keep: &(dyn Fn(&StorePath) -> bool + Sync),
    ) -> Vec<(StorePath, f32, usize)> {
        let table = self.table.read();
        on_query_pool(|| table.nearest_kept(query, limit, hidden_scopes, keep))
    }

    /// How alike two memories are by meaning (see
    /// [`VectorTable::likeness`]).
    pub(crate) fn likeness(&self, a: &StorePath, b: &StorePath) -> Option<f32> {
        self.table.read().likeness(a, b)
    }

    /// The texts to embed for the memory at `path`, and its scope; `None`
    /// when it is not a memory (any more).
    fn texts_of(&self, path: &StorePath) -> Option<(Vec<String>, Option<String>)> {
        let is_md = path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        if !is_md {
            return None;
        }
        // As the indexer reads it: at most its first 8 MiB.
        let bytes = super::document::read_clipped(&self.store, path).ok()?;
        // What the index skips as binary is no memory to find by meaning.
        if crate::memory::is_probably_binary(&bytes) {
            return None;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let stem = path
            .as_path()
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let memory = crate::memory::parse(&stem, &text);
        // A title that is only the file's name says nothing.
        let title = if memory.title == stem {
            ""
        } else {
            memory.title.as_str()
        };
        let scope = memory
            .frontmatter
            .scope
            .as_ref()
            .map(|s| s.trim().to_lowercase())
            .filter(|s| !s.is_empty() && s != "global");
        let body = memory.body(&text);
        // A memory with next to nothing in it ("", "x") means nothing, and
        // its vector is near every short question; a Chinese memory, to a
        // model that cannot read it, is like every other. Either is kept
        // with no vectors, found by its words alone.
        let letters = title
            .chars()
            .chain(body.chars())
            .filter(|c| c.is_alphanumeric())
            .take(MIN_LETTERS)
            .count();
        let (cjk, words) = [title, body]
            .map(super::tokenizer::cjk_and_words)
            .into_iter()
            .fold((0, 0), |(c, w), (cjk, words)| (c + cjk, w + words));
        if letters < MIN_LETTERS || (cjk > words && !self.reads_chinese()) {
            return Some((Vec::new(), scope));
        }
        let mut chunks = crate::embed::chunks(title, body);
        chunks.truncate(MAX_CHUNKS);
        Some((chunks, scope))
    }
}

/// The threads a query's matrix products run on: a pool of their own, at
/// the caller's priority. On the worker's pool, a question asked while a
/// backlog is embedded would wait behind it, at background priority.
/// `None` if no thread can be made: the caller's thread does it all.
fn query_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(pool_threads())
            .thread_name(|i| format!("mnemofs-query-{i}"))
            .build()
            .inspect_err(|e| tracing::warn!("queries are embedded on one thread: {e}"))
            .ok()
    })
    .as_ref()
}

/// `first` and `second` at once on [`query_pool`], `second` on whichever
/// thread is free first; one after the other without the pool.
pub(crate) fn beside<A: Send, B: Send>(
    first: impl FnOnce() -> A + Send,
    second: impl FnOnce() -> B + Send,
) -> (A, B) {
    match query_pool() {
        Some(pool) => pool.install(|| rayon::join(first, second)),
        None => (first(), second()),
    }
}

/// Runs `work` on [`query_pool`], or on this thread without one.
fn on_query_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match query_pool() {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// The worker: embeds queued memories until stopped or dropped.
fn work(semantic: &Weak<Semantic>) {
    crate::background::lower_priority();
    loop {
        let Some(this) = semantic.upgrade() else {
            return;
        };
        let batch: Vec<StorePath> = {
            let mut queue = this.queue.lock();
            while queue.paths.is_empty() && !queue.stop {
                // Wakes now and then to notice the table was dropped, and
                // to save what a backlog left unsaved.
                this.wake
                    .wait_for(&mut queue, std::time::Duration::from_secs(1));
                if Arc::strong_count(&this) == 1 {
                    return;
                }
                if this.save_due(&queue) {
                    queue.unsaved = 0;
                    queue.saved_at = Some(std::time::Instant::now());
                    drop(queue);
                    this.save_now();
                    queue = this.queue.lock();
                }
            }
            if queue.stop {
                return;
            }
            let n = queue.paths.len().min(BATCH_TEXTS);
            let batch: Vec<StorePath> = queue.paths.drain(..n).collect();
            for path in &batch {
                queue.queued.remove(path);
            }
            queue.working.clone_from(&batch);
            batch
        };
        let embedded = this.embed_batch(batch);
        let mut queue = this.queue.lock();
        queue.working.clear();
        queue.unsaved += embedded;
        if this.save_due(&queue) {
            queue.unsaved = 0;
            queue.saved_at = Some(std::time::Instant::now());
            drop(queue);
            this.save_now();
        }
    }
}

impl Semantic {
    /// Whether the vectors should be saved now.
    fn save_due(&self, queue: &Queue) -> bool {
        if self.file.is_none() || queue.unsaved == 0 {
            return false;
        }
        let every = if queue.paths.is_empty() {
            SAVE_IDLE
        } else {
            SAVE_BUSY
        };
        queue.saved_at.is_none_or(|at| at.elapsed() >= every)
    }

    fn save_now(&self) {
        if let Some(file) = &self.file
            && let Err(e) = self.save(file)
        {
            tracing::warn!("cannot keep the vectors in {}: {e}", file.display());
        }
    }

    /// Embeds the memories of `batch`; how many now have vectors.
    fn embed_batch(&self, batch: Vec<StorePath>) -> usize {
        let mut texts = Vec::new();
        let mut owners = Vec::new();
        for path in batch {
            match self.texts_of(&path) {
                // Kept with no vectors: a memory the model cannot read.
                Some((chunks, scope)) if chunks.is_empty() => {
                    self.table.write().insert(path, scope, &[]);
                }
                Some((chunks, scope)) => {
                    for chunk in chunks {
                        texts.push(chunk);
                        owners.push((path.clone(), scope.clone()));
                    }
                }
                None => {
                    self.table.write().remove(&path);
                }
            }
        }
        let mut vectors = Vec::with_capacity(texts.len());
        for part in texts.chunks(BATCH_TEXTS) {
            let refs: Vec<&str> = part.iter().map(String::as_str).collect();
            match self.embedder.embed(&refs) {
                Ok(v) => vectors.extend(v),
                Err(e) => {
                    tracing::warn!("cannot embed {} texts: {e}", refs.len());
                    break;
                }
            }
        }
        if vectors.len() != texts.len() {
            return 0;
        }
        let mut fresh: HashMap<StorePath, (Option<String>, Vec<f32>)> = HashMap::new();
        for ((path, scope), vector) in owners.into_iter().zip(vectors) {
            fresh
                .entry(path)
                .or_insert_with(|| (scope, Vec::new()))
                .1
                .extend(vector);
        }
        // A memory removed while it was embedded stays removed.
        fresh.retain(|path, _| self.store.stat(path).is_ok());
        let embedded = fresh.len();
        let mut table = self.table.write();
        for (path, (scope, data)) in fresh {
            table.insert(path, scope, &data);
        }
        embedded
    }
}

/// The vectors file's first bytes; its format's version is in them. (2:
/// Chinese memories are kept without vectors by a model that cannot read
/// them, so the vectors an earlier version gave them are made again.)
const MAGIC: &[u8; 8] = b"MNVEC02\n";

impl Semantic {
    /// Writes every memory's vectors to `file` (atomically), with the
    /// size and mtime each memory had, so that the next start embeds only
    /// what changed meanwhile.
    pub(crate) fn save(&self, file: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let _saving = self.saving.lock();
        // A copy, taken at once: writing a large table (and a stat of each
        // memory) takes long enough that the indexer, which removes
        // vectors under the write lock, must not wait for it.
        let table = self.table.read().clone();
        let tmp = file.with_extension("tmp");
        let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        out.write_all(MAGIC)?;
        let name = self.embedder.name().as_bytes();
        out.write_all(&(name.len() as u32).to_le_bytes())?;
        out.write_all(name)?;
        out.write_all(&(self.embedder.dims() as u32).to_le_bytes())?;
        for (path, scope, data) in table.iter() {
            let Ok(st) = self.store.stat(path) else {
                continue;
            };
            let key = super::document::path_key(path);
            out.write_all(&(key.len() as u32).to_le_bytes())?;
            out.write_all(key)?;
            out.write_all(&st.size.to_le_bytes())?;
            out.write_all(&st.mtime.sec.to_le_bytes())?;
            out.write_all(&st.mtime.nsec.to_le_bytes())?;
            let scope = scope.unwrap_or("").as_bytes();
            out.write_all(&(scope.len() as u32).to_le_bytes())?;
            out.write_all(scope)?;
            out.write_all(&(data.len() as u32).to_le_bytes())?;
            for x in &data {
                out.write_all(&x.to_le_bytes())?;
            }
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, file)
    }
}

/// What a vectors file held: the model it was made with, and the vectors
/// of the memories still as they were then.
pub(crate) struct Kept {
    model: String,
    table: VectorTable,
}

impl Kept {
    /// The table to start from: what `kept` (read from `file`) holds if it
    /// is `embedder`'s, else an empty one.
    fn table_for(kept: Option<Kept>, embedder: &Embedder, file: &Path) -> VectorTable {
        let dims = embedder.dims();
        match kept {
            Some(kept) if kept.model == embedder.name() && kept.table.dims() == dims => {
                tracing::debug!(
                    "{} memories' vectors taken from {}",
                    kept.table.len(),
                    file.display()
                );
                kept.table
            }
            Some(_) => {
                tracing::info!(
                    "{} holds another model's vectors: they are embedded anew",
                    file.display()
                );
                VectorTable::new(dims)
            }
            None => VectorTable::new(dims),
        }
    }
}

/// Threads in each of the encoder's pools: the cores, at most two.
fn pool_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
}

/// Reads the vectors `file` holds, of the memories whose size and mtime
/// are still those recorded. A missing file is nothing to read; a damaged
/// one gives what precedes the damage (those memories are embedded anew).
/// The file is read as a stream: at 100,000 memories it is 150 MB of
/// floats, which the process would otherwise hold at once beside the
/// table it makes of them.
fn read_vectors(file: &Path, store: &Store) -> Option<Kept> {
    let mut reader = Stream::open(file)?;
    if reader.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let u32_of = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or_default());
    let name_len = u32_of(reader.take(4)?) as usize;
    let model = String::from_utf8(reader.take(name_len)?.to_vec()).ok()?;
    let dims = u32_of(reader.take(4)?) as usize;
    if dims == 0 {
        return None;
    }
    // One memory at a time into the table: the whole file in floats at
    // once would cost a store's worth of memory.
    let mut table = VectorTable::new(dims);
    let mut data = Vec::new();
    let mut one = || -> Option<()> {
        let key_len = u32_of(reader.take(4)?) as usize;
        let path = super::document::path_from_key(reader.take(key_len)?)?;
        let size = u64::from_le_bytes(reader.take(8)?.try_into().ok()?);
        let sec = i64::from_le_bytes(reader.take(8)?.try_into().ok()?);
        let nsec = i64::from_le_bytes(reader.take(8)?.try_into().ok()?);
        let scope_len = u32_of(reader.take(4)?) as usize;
        let scope = String::from_utf8(reader.take(scope_len)?.to_vec()).ok()?;
        let count = u32_of(reader.take(4)?) as usize;
        if !count.is_multiple_of(dims) {
            return None;
        }
        data.clear();
        data.extend(
            reader
                .take(count.checked_mul(4)?)?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        let unchanged = store
            .stat(&path)
            .is_ok_and(|st| st.size == size && st.mtime.sec == sec && st.mtime.nsec == nsec);
        if unchanged {
            table.insert(path, (!scope.is_empty()).then_some(scope), &data);
        }
        Some(())
    };
    while one().is_some() {}
    if reader.left > 0 {
        tracing::info!(
            "{} is damaged: the memories past the damage are embedded anew",
            file.display()
        );
    }
    Some(Kept { model, table })
}

/// A vectors file read in order, a field at a time.
struct Stream {
    file: std::io::BufReader<std::fs::File>,
    /// The bytes not read yet: no field is longer.
    left: u64,
    field: Vec<u8>,
}

impl Stream {
    fn open(path: &Path) -> Option<Stream> {
        let file = std::fs::File::open(path).ok()?;
        let left = file.metadata().ok()?.len();
        Some(Stream {
            file: std::io::BufReader::with_capacity(1 << 16, file),
            left,
            field: Vec::new(),
        })
    }

    /// The next `n` bytes; `None` past the end, or if they cannot be read.
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        use std::io::Read;
        if n as u64 > self.left {
            return None;
        }
        self.field.resize(n, 0);
        self.file.read_exact(&mut self.field).ok()?;
        self.left -= n as u64;
        Some(&self.field)
    }
}
