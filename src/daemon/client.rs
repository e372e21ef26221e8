//! Commands, with or without a daemon serving the store.
//!
//! A [`Session`] is how every command reaches the operations layer. When a
//! daemon serves the store (found through the [`registry`](super::registry),
//! whatever state dir it was started with), requests go to it over its
//! control socket, so its writer, index and organizer do the work and
//! watchers on its mount see every change. When none does, the command
//! takes the store lock (so no mount can start meanwhile), opens the index
//! itself, brings it up to date, and works on the store directly, without
//! FUSE. A caller that only reads and cannot wait (the session brief)
//! reads the index as last committed instead, without the lock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use super::control::{ControlClient, ControlPool, SOCKET};
use super::lock::{StoreLock, holder_pid};
use super::registry;
use crate::config::Config;
use crate::index::Index;
use crate::ops::{self, DirectWriter, Operations, Request, Response, ServedBy};
use crate::store::clean_exit::CleanExit;
use crate::store::counters::CounterStore;
use crate::store::{Store, StorePath};
use crate::tasks::{OneShot, Setup};
use crate::views::Views;

/// How long a local command waits for the index to catch up with the store.
pub(super) const CATCH_UP: Duration = Duration::from_secs(600);

/// The writer of a read-only session: every change is refused.
#[derive(Debug)]
struct ReadOnly;

fn read_only() -> std::io::Error {
    std::io::Error::from_raw_os_error(libc::EROFS)
}

impl ops::Writer for ReadOnly {
    fn replace(&self, _: &StorePath, _: &[u8], _: &[u8]) -> std::io::Result<ops::Outcome> {
        Err(read_only())
    }
    fn write(&self, _: &StorePath, _: &[u8]) -> std::io::Result<()> {
        Err(read_only())
    }
    fn create(&self, _: &StorePath, _: &[u8]) -> std::io::Result<()> {
        Err(read_only())
    }
    fn move_to(&self, _: &StorePath, _: &StorePath) -> std::io::Result<ops::Outcome> {
        Err(read_only())
    }
    fn remove_file(&self, _: &StorePath) -> std::io::Result<()> {
        Err(read_only())
    }
    fn remove_folder(&self, _: &StorePath) -> std::io::Result<()> {
        Err(read_only())
    }
    fn is_busy(&self, _: &StorePath) -> bool {
        false
    }
    fn describe(&self) -> String {
        "nowhere (read-only)".into()
    }
}

/// How long a local command lets the index catch up with the store.
#[derive(Debug, Clone, Copy)]
enum CatchUp {
    /// Until it has (or [`CATCH_UP`] passed), from the first query on.
    Wait,
    /// At most this long; then answer with what it has.
    AtMost(Duration),
}

/// Where the volatile counters are kept, in the state dir.
pub(crate) const COUNTERS_FILE: &str = "counters.json";

/// Which store a command is about, as the user named it.
#[derive(Debug, Clone)]
pub struct Target {
    /// A store, or a mountpoint of one, as given (absolute).
    pub path: PathBuf,
    /// `--state-dir`, if given.
    pub state_dir: Option<PathBuf>,
}

impl Target {
    /// The store's state dir: `--state-dir`, else its serving daemon's,
    /// else the default one.
    pub fn state_dir(&self) -> anyhow::Result<PathBuf> {
        let found = find(self)?;
        Ok(match (&self.state_dir, found.daemon) {
            (Some(dir), _) => dir.clone(),
            (None, Some(daemon)) => daemon.state_dir,
            (None, None) => super::default_state_dir(&found.store),
        })
    }

    /// The state dir of `store`: `--state-dir`, else the default one.
    fn state_dir_of(&self, store: &Path) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| super::default_state_dir(store))
    }
}

/// A store found: its directory, and its daemon if one serves it.
#[derive(Debug)]
pub struct Found {
    /// The backing directory (canonical).
    pub store: PathBuf,
    /// The serving daemon.
    pub daemon: Option<registry::Entry>,
}

/// Resolves what the user named: a mountpoint of a running daemon, or a
/// store (served or not). Creates nothing.
pub fn find(target: &Target) -> anyhow::Result<Found> {
    if let Some(entry) = registry::by_mountpoint(&target.path) {
        return Ok(Found {
            store: entry.store.clone(),
            daemon: Some(entry),
        });
    }
    if registry::is_mnemofs_mount(&target.path) {
        bail!(
            "{} is a mnemofs mount whose daemon cannot be found; pass its store with --store",
            target.path.display()
        );
    }
    let store = match std::fs::canonicalize(&target.path) {
        Ok(store) => store,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && target.path == super::default_store_dir() =>
        {
            bail!(
                "no memories yet: the store {} does not exist (the first `mnemofs write`, `remember`, `mcp`, `tool`, `serve` or `mount` makes it)",
                target.path.display()
            )
        }
        Err(e) => {
            return Err(e).with_context(|| format!("cannot open store {}", target.path.display()));
        }
    };
    if !store.is_dir() {
        bail!("store {} is not a directory", store.display());
    }
    if let Some(entry) = registry::by_mountpoint(&store) {
        return Ok(Found {
            store: entry.store.clone(),
            daemon: Some(entry),
        });
    }
    let daemon = registry::by_store(&store);
    Ok(Found { store, daemon })
}

/// How long nobody may hold a store just handed to a mount before this
/// process takes it back: the mount failed.
const MOUNT_GONE: Duration = Duration::from_secs(1);

/// How long a command waits for a process that holds the store's lock
/// but does not answer yet (it is starting or stopping).
const SERVER_SETTLING: Duration = Duration::from_secs(5);

/// The most memories a caller that cannot wait (a session-start brief)
/// lets the index catch up with: a store of 10k is walked and brought up
/// to date in about 70 ms, one of 100k takes over half a second, and is
/// read as last committed instead (see [`Session::changed_since_indexed`]).
const CATCH_UP_MEMORIES: u64 = 20_000;

/// A command's way to the operations: a daemon, or the store itself.
pub struct Session {
    way: Way,
}

enum Way {
    Daemon {
        daemon: ControlPool,
        pid: Option<u32>,
    },
    Local {
        ops: Operations,
        index: Index,
        /// The sweep of temp files a crash left, finished before the lock
        /// is let go.
        sweep: Option<std::thread::JoinHandle<()>>,
        /// Recorded again at a clean end (see `store::clean_exit`).
        clean_exit: CleanExit,
        _lock: StoreLock,
    },
    ReadOnly {
        ops: Operations,
        index: Index,
        /// The store's folder.
        root: PathBuf,
    },
    /// This process serves the store to the others while it lives.
    Serving(super::serve::Server),
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.way {
            Way::Daemon { pid, .. } => write!(f, "Session(daemon {pid:?})"),
            Way::Local { ops, .. } => write!(f, "Session(local {ops:?})"),
            Way::ReadOnly { ops, .. } => write!(f, "Session(read-only {ops:?})"),
            Way::Serving(server) => write!(f, "Session(serving {server:?})"),
        }
    }
}

impl Session {
    /// Reaches the daemon serving `target`'s store, or opens the store
    /// here under its lock. `config` is used only without a daemon (a
    /// daemon keeps its own).
    pub fn open(target: &Target, config: &Config) -> anyhow::Result<Session> {
        Session::open_with(target, config, CatchUp::Wait)
    }

    /// [`Session::open`] for a caller that only reads and cannot wait (a
    /// session-start hook). Without a daemon it takes the store's lock if
    /// it is free and lets the index catch up with the store (notes edited
    /// in an editor, brought by `git pull`) for at most `within`, then
    /// answers with what it has; while another command holds the lock it
    /// reads the index as last committed and refuses writes.
    pub fn open_within(
        target: &Target,
        config: &Config,
        within: Duration,
    ) -> anyhow::Result<Session> {
        Session::open_with(target, config, CatchUp::AtMost(within))
    }

    /// A session that only reads and never builds: the store's daemon, or
    /// its index as last committed, without the lock. A store with
    /// neither is an error (a brief must not index someone else's store).
    pub fn open_read_only(target: &Target) -> anyhow::Result<Session> {
        let found = find(target)?;
        if let Some(session) = Session::registered_daemon(&found)? {
            return Ok(session);
        }
        let state_dir = target.state_dir_of(&found.store);
        let store = Arc::new(
            Store::open(&found.store)
                .with_context(|| format!("cannot open store {}", found.store.display()))?,
        );
        let index = Index::open_read_only(&state_dir, Some(Arc::clone(&store)))
            .context("no index yet (mount or serve it once)")?;
        Ok(Session::read_only(store, index))
    }

    /// The session of the daemon `found` names in the registry, if it
    /// answers.
    fn registered_daemon(found: &Found) -> anyhow::Result<Option<Session>> {
        let Some(entry) = &found.daemon else {
            return Ok(None);
        };
        let client = ControlClient::connect(&entry.socket)
            .with_context(|| format!("cannot reach the daemon at {}", entry.socket.display()))?;
        Ok(client.map(|client| Session {
            way: Way::Daemon {
                daemon: ControlPool::new(entry.socket.clone(), client),
                pid: Some(entry.pid),
            },
        }))
    }

    /// Answers from `index` as last committed, refusing writes.
    fn read_only(store: Arc<Store>, index: Index) -> Session {
        let root = store.root_path().to_path_buf();
        let ops = Operations::new(
            store,
            index.clone(),
            Views::new(index.clone()),
            Arc::new(ReadOnly),
            ServedBy::Local,
        );
        Session {
            way: Way::ReadOnly { ops, index, root },
        }
    }

    /// [`Session::open`] for a process that stays while an agent talks to
    /// it (`mnemofs mcp`, `mnemofs tool`). Without a daemon it serves the
    /// store itself, as `mnemofs serve` does, for as long as the session
    /// lives: hooks and commands started meanwhile reach the store through
    /// it instead of finding it locked.
    /// `guide` shows `MNEMOFS.md` at the root, as a mount does.
    ///
    /// A command that holds the store a moment (a hook's brief, a
    /// one-shot `write`) is waited out, briefly, so that this session
    /// serves the store after it rather than holding it unserved.
    pub fn open_serving(target: &Target, config: &Config, guide: bool) -> anyhow::Result<Session> {
        // Just handed to a mount: the store is the mount's to take, and
        // this session goes through it once it answers.
        let mut mounting = super::serve::handed_over_lately()
            .then(|| std::time::Instant::now() + super::serve::MOUNT_AFTER_HAND_OVER);
        // Since when nobody has held the store while this waits for the
        // mount: a mount that failed after taking it (or never took it)
        // is not waited for to the end.
        let mut unheld_since: Option<std::time::Instant> = None;
        let deadline = std::time::Instant::now() + SERVER_SETTLING;
        loop {
            let found = find(target)?;
            if found.daemon.is_some() {
                // Taken: when this mount ends, the store is free to serve.
                super::serve::mount_answered();
                break;
            }
            let state_dir = target.state_dir_of(&found.store);
            if let Some(until) = mounting {
                let now = std::time::Instant::now();
                let unheld = holder_pid(&found.store, &state_dir).is_none();
                unheld_since = unheld.then(|| unheld_since.unwrap_or(now));
                let given_up = unheld_since.is_some_and(|since| now - since >= MOUNT_GONE);
                if now < until && !given_up {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                mounting = None;
                super::serve::mount_answered();
            }
            let served = super::serve::Server::start(&super::serve::ServeConfig {
                store: found.store.clone(),
                state_dir,
                config: config.clone(),
                organizer: false,
                served_by: ServedBy::Local,
                guide,
            })?;
            if let Some(server) = served {
                // The first query waits for the index to catch up, not
                // the session: a `view` of a note answers at once.
                return Ok(Session {
                    way: Way::Serving(server),
                });
            }
            if std::time::Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Session::open(target, config)
    }

    fn open_with(target: &Target, config: &Config, catch_up: CatchUp) -> anyhow::Result<Session> {
        let mut found = find(target)?;
        if let Some(session) = Session::registered_daemon(&found)? {
            return Ok(session);
        }
        let state_dir = target.state_dir_of(&found.store);
        // A caller that cannot wait takes a store small enough to walk in
        // a moment if it is free, and lets the index catch up; else it
        // reads the index as last committed.
        let mut taken = None;
        if let CatchUp::AtMost(_) = catch_up {
            let committed = Store::open(&found.store)
                .map(Arc::new)
                .ok()
                .and_then(|store| {
                    Index::open_read_only(&state_dir, Some(Arc::clone(&store)))
                        .ok()
                        .map(|index| (store, index))
                });
            let small = committed
                .as_ref()
                .is_none_or(|(_, index)| index.memories() <= CATCH_UP_MEMORIES);
            if small {
                taken = StoreLock::try_acquire(&found.store)?;
            }
            if taken.is_none()
                && let Some((store, index)) = committed
            {
                meaning_on_demand(&index, &state_dir, config, false);
                return Ok(Session::read_only(store, index));
            }
        }
        // A process that serves the store holds its lock a moment before
        // it answers (while it starts) and after (while it stops): a
        // command that comes then waits for it, briefly.
        let deadline = std::time::Instant::now() + SERVER_SETTLING;
        let lock = loop {
            if let Some(lock) = taken.take() {
                break lock;
            }
            if let Some(lock) = StoreLock::try_acquire(&found.store)? {
                break lock;
            }
            if let Some(session) = Session::registered_daemon(&found)? {
                return Ok(session);
            }
            // Served, but not registered (an older daemon, or another
            // runtime dir): its socket may still be in the state dir.
            let socket = state_dir.join(SOCKET);
            if let Some(client) = ControlClient::connect(&socket)? {
                return Ok(Session {
                    way: Way::Daemon {
                        daemon: ControlPool::new(socket, client),
                        pid: holder_pid(&found.store, &state_dir),
                    },
                });
            }
            if std::time::Instant::now() >= deadline {
                let pid = holder_pid(&found.store, &state_dir)
                    .map(|p| format!(" (pid {p})"))
                    .unwrap_or_default();
                bail!(
                    "a daemon{pid} serves {} but cannot be reached; pass its --state-dir",
                    found.store.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
            found = find(target)?;
        };
        let (ops, index, sweep) = open_local(&found.store, &state_dir, config, catch_up)?;
        Ok(Session {
            way: Way::Local {
                ops,
                index,
                sweep,
                clean_exit: CleanExit::in_state_dir(&state_dir),
                _lock: lock,
            },
        })
    }

    /// For a session that reads the index as last committed: one sentence
    /// when a folder of the store changed after that commit (a note added,
    /// removed or saved by rename), so that what it answers may miss it.
    /// A walk of the folders alone, not of the notes: 27 ms for 500
    /// folders of 100k notes. `None` for any other session.
    pub fn changed_since_indexed(&self) -> Option<String> {
        let Way::ReadOnly { index, root, .. } = &self.way else {
            return None;
        };
        let committed_ms = index.status().last_commit;
        let mut folders = vec![root.clone()];
        while let Some(folder) = folders.pop() {
            let changed = std::fs::metadata(&folder)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .is_some_and(|t| t.as_millis() as i64 > committed_ms);
            if changed {
                return Some(
                    "notes changed in the store since its index was last brought up to date \
                     may be missing here: a mount or `mnemofs serve` keeps it current, \
                     `mnemofs reindex` brings it up to date now"
                        .into(),
                );
            }
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                let hidden = entry.file_name().as_encoded_bytes().starts_with(b".");
                if !hidden && entry.file_type().is_ok_and(|t| t.is_dir()) {
                    folders.push(entry.path());
                }
            }
        }
        None
    }

    /// True when a daemon answers.
    pub fn through_daemon(&self) -> bool {
        matches!(self.way, Way::Daemon { .. })
    }

    /// True when a request this session did not take
    /// ([`ops::Error::Unreached`]) may be sent again through a new one:
    /// its daemon went away, or it handed the store to a mount.
    pub fn may_be_replaced(&self) -> bool {
        matches!(self.way, Way::Daemon { .. } | Way::Serving(_))
    }

    /// Runs one request.
    pub fn call(&self, request: Request) -> ops::Result<Response> {
        match &self.way {
            Way::Daemon { daemon, .. } => daemon.call(&request),
            Way::Local { ops, .. } | Way::ReadOnly { ops, .. } => ops.handle(request),
            Way::Serving(server) => server.ops().handle(request),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let mut swept = true;
        if let Way::Local { ops, sweep, .. } = &mut self.way {
            ops.flush_counters();
            if let Some(sweep) = sweep.take() {
                swept = sweep.join().is_ok();
            }
        }
        if let Way::Local { index, .. } | Way::ReadOnly { index, .. } = &self.way {
            index.shutdown();
        }
        // Still under the store lock. A panic may have cut a write short
        // between its temp file and the rename: no record then.
        if let Way::Local { clean_exit, .. } = &self.way
            && swept
            && !std::thread::panicking()
            && !clean_exit.recorded()
            && let Err(e) = clean_exit.record()
        {
            tracing::debug!("cannot record a clean exit: {e}");
        }
    }
}

/// Search by meaning for a command run without a daemon, when a model is
/// configured: the model and the vectors a daemon (or an earlier command)
/// kept are loaded at the first search or text to embed that needs them.
/// With `keep` (the command holds the store's lock) what its searches
/// embed is kept for the next. True if a model is configured.
fn meaning_on_demand(index: &Index, state_dir: &Path, config: &Config, keep: bool) -> bool {
    let Some(model) = config.search.model_dir() else {
        return false;
    };
    let vectors = state_dir.join(super::VECTORS_FILE);
    index.enable_semantic_on_demand(model, vectors, config.search.questions, keep);
    true
}

/// The operations on a store no daemon serves: its index brought up to
/// date, the direct writer, and an organizer that runs when asked.
fn open_local(
    store_dir: &Path,
    state_dir: &Path,
    config: &Config,
    catch_up: CatchUp,
) -> anyhow::Result<(Operations, Index, Option<std::thread::JoinHandle<()>>)> {
    super::paths::make_state_dir(state_dir)?;
    let clean_exit = CleanExit::in_state_dir(state_dir);
    let forget = clean_exit.clone();
    let store = Arc::new(
        Store::open(store_dir)
            .with_context(|| format!("cannot open store {}", store_dir.display()))?
            .before_first_temp(move || forget.forget()),
    );
    // Under the store lock, what a crash left: temp files of other
    // processes, swept beside this command (a walk of a large store takes
    // longer than the command itself), unless the last one here ended
    // cleanly.
    let sweep = if clean_exit.recorded() {
        None
    } else {
        let sweeper = Arc::clone(&store);
        std::thread::Builder::new()
            .name("mnemofs-sweep".into())
            .spawn(move || {
                sweeper.remove_others_temp_files();
            })
            .ok()
    };
    let index = match catch_up {
        // Many commands never query the index (a listing of a real folder,
        // a write): the indexer starts, and the first query waits for the
        // catch-up, only when something needs them.
        CatchUp::Wait => Index::open_deferred(state_dir, Arc::clone(&store), CATCH_UP),
        CatchUp::AtMost(_) => Index::open(state_dir, Arc::clone(&store)),
    }
    .context("cannot open the search index")?;
    if let CatchUp::AtMost(within) = catch_up {
        // What the index has is enough; the answer says so.
        index.wait_idle(within);
    }
    let views = Views::new(index.clone());
    let history = Arc::new(super::open_history(state_dir, config, &index)?);
    let writer: Arc<dyn ops::Writer> = Arc::new(
        DirectWriter::new(Arc::clone(&store))
            .with_index(index.clone())
            .with_history(Arc::clone(&history)),
    );
    let counters = Arc::new(CounterStore::open(&state_dir.join(COUNTERS_FILE)));
    let organizer = OneShot::new(Setup {
        writer: Arc::clone(&writer),
        store: Arc::clone(&store),
        index: index.clone(),
        counters: Some(Arc::clone(&counters)),
        config: config.clone(),
        outputs: views.task_outputs(),
        state_dir: Some(state_dir.to_path_buf()),
        history: Some(Arc::clone(&history)),
    });
    meaning_on_demand(&index, state_dir, config, true);
    let ops = Operations::new(store, index.clone(), views, writer, ServedBy::Local)
        .with_organizer(Arc::new(organizer))
        .with_syncer(Arc::new(crate::front::sync::GitSync::new()))
        .with_history(history)
        .with_counters(counters)
        .with_inbox_ttl(config.lifecycle.inbox_ttl);
    Ok((ops, index, sweep))
}
