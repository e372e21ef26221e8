//! `mnemofs serve`: a daemon without a mount, for machines and agents that
//! have no FUSE. It holds the store lock, keeps the index up to date from
//! a watch on the store, runs the organizer, and listens on the control
//! socket (so every command and `mnemofs tool`/`mcp` go through it, as
//! they would through a mount's daemon) and on the public JSON-RPC socket.
//!
//! Changes go straight to the store (`DirectWriter`): there is no mount
//! whose watchers could miss them. It stays in the foreground until
//! SIGINT, SIGTERM or SIGHUP, as a service manager expects, and prints one
//! line on stdout (`serving <store> on <socket>`) once the sockets answer.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use anyhow::{Context, bail};

use super::control::ControlServer;
use super::socket::RpcServer;
use super::{DaemonState, StoreLock, open_daemon_state, registry};
use crate::index::Index;
use crate::ops::{DirectWriter, Operations, ServedBy, Writer};
use crate::store::Store;
use crate::store::clean_exit::CleanExit;
use crate::store::watch::StoreWatcher;
use crate::tasks::{OneShot, Setup, Tasks};
use crate::views::Views;

/// What `serve` needs, with paths already absolute.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The backing directory.
    pub store: PathBuf,
    /// Where derived state lives.
    pub state_dir: PathBuf,
    /// The configuration file's settings.
    pub config: crate::config::Config,
    /// Run the background organizer.
    pub organizer: bool,
    /// What `status` says serves the store: a daemon (`mnemofs serve`),
    /// or the process itself (`mnemofs mcp`, serving the others too).
    pub served_by: ServedBy,
    /// Show the guide (`MNEMOFS.md`) at the root of what the tools list.
    pub guide: bool,
}

/// Serves the store until a signal says stop.
pub fn serve(config: &ServeConfig) -> anyhow::Result<()> {
    // Private, as a private mount's daemon: the index, the counters and
    // the organizer's files are nobody else's. Before any thread exists.
    // SAFETY: umask has no preconditions.
    unsafe { libc::umask(0o077) };
    crate::alloc::limit_arenas();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])?;
    // An agent's `mnemofs mcp` or `tool` serving the store hands it over.
    let mut started = Server::start(config)?;
    let mut kept = String::new();
    if started.is_none() {
        match super::lock::ask_for_the_store(&config.store, &config.state_dir, "this server") {
            Some(Ok(())) => started = Server::start(config)?,
            Some(Err(why)) => kept = format!(", which keeps it ({why})"),
            None => {}
        }
    }
    let Some(server) = started else {
        let pid = super::lock::holder_pid(&config.store, &config.state_dir)
            .map(|p| format!(" (pid {p})"))
            .unwrap_or_default();
        bail!(
            "{} is already served by another process{pid}{kept}",
            config.store.display()
        );
    };
    let http = start_mcp_http(&config.config.mcp, &config.state_dir, server.ops())?;
    tracing::info!(
        "serving {} on {}",
        config.store.display(),
        server.rpc_socket().display()
    );
    // Readiness, for whoever started us: the socket answers from now on.
    println!(
        "serving {} on {}",
        config.store.display(),
        server.rpc_socket().display()
    );
    if let Some(http) = &http {
        println!("serving MCP on {}", http.url());
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let signal = signals.forever().next();
    tracing::info!("stopping on signal {signal:?}");
    drop(http);
    drop(server);
    Ok(())
}

/// MCP over HTTP for the daemon's operations, when the config's `mcp.http`
/// names an address: every call with a token from `state_dir`.
pub(super) fn start_mcp_http(
    settings: &crate::config::McpSettings,
    state_dir: &std::path::Path,
    ops: &Arc<Operations>,
) -> anyhow::Result<Option<crate::front::http::HttpServer>> {
    use crate::front::http::{Access, HttpOptions, HttpServer};
    let Some(addr) = settings.http else {
        return Ok(None);
    };
    let ops = Arc::clone(ops);
    let server = HttpServer::start(
        HttpOptions {
            addr,
            access: Access::Tokens(crate::front::tokens::TokenBook::in_state_dir(state_dir)),
            origins: settings.allow_origins.clone(),
            hosts: settings.allow_hosts.clone(),
        },
        Arc::new(move |request| ops.handle(request)),
    )
    .context("cannot serve MCP over HTTP")?;
    tracing::info!("serving MCP on {}", server.url());
    Ok(Some(server))
}

/// A store served without a mount, for as long as the value lives: the
/// store lock, the index kept up to date from a watch on the store, the
/// organizer, the control socket and the public socket, and the entry in
/// the registry that lets every other command find them. `mnemofs serve`
/// is one until a signal; `mnemofs mcp` and `mnemofs tool` are one while
/// their agent talks to them, so that hooks and commands started meanwhile
/// reach the store through them instead of finding it locked.
pub struct Server {
    ops: Arc<Operations>,
    index: Index,
    counters: Arc<crate::store::counters::CounterStore>,
    rpc_socket: PathBuf,
    /// Let go of when the server ends, or hands the store to a mount.
    held: Arc<Mutex<Option<Held>>>,
}

/// What a server holds while it serves: let go of in [`Held::let_go`]'s
/// order.
struct Held {
    registration: Option<registry::Registration>,
    rpc: Option<RpcServer>,
    control: Option<ControlServer>,
    watch: Option<Watch>,
    tasks: Option<Arc<Tasks>>,
    sync: Option<crate::front::sync::Schedule>,
    /// Recorded at a clean end, where the server is a command's.
    clean_exit: Option<CleanExit>,
    lock: StoreLock,
}

impl Held {
    /// First nobody can find or reach the server, then nothing changes
    /// the store, then the lock goes.
    fn let_go(mut self, index: &Index, counters: &crate::store::counters::CounterStore) {
        drop(self.sync.take());
        drop(self.registration.take());
        drop(self.rpc.take());
        drop(self.control.take());
        drop(self.watch.take());
        drop(self.tasks.take());
        index.shutdown();
        if let Err(e) = counters.flush() {
            tracing::warn!("cannot save the access counters: {e}");
        }
        // Still under the store lock.
        if let Some(clean_exit) = &self.clean_exit
            && !std::thread::panicking()
            && let Err(e) = clean_exit.record()
        {
            tracing::debug!("cannot record a clean exit: {e}");
        }
        drop(self.lock);
    }
}

/// How long a process asked for the store waits for its running requests
/// to end.
const HAND_OVER_WAIT: Duration = Duration::from_secs(20);

/// When this process last handed its store to a mount: for a while after,
/// it goes through that mount rather than serve the store again before
/// the mount has taken it.
static HANDED_OVER: Mutex<Option<Instant>> = Mutex::new(None);

/// How long after a hand-over this process waits for the mount to answer
/// before it serves the store itself again.
pub(super) const MOUNT_AFTER_HAND_OVER: Duration = Duration::from_secs(30);

/// Whether this process handed its store over within
/// [`MOUNT_AFTER_HAND_OVER`].
pub(super) fn handed_over_lately() -> bool {
    HANDED_OVER
        .lock()
        .is_some_and(|at| at.elapsed() < MOUNT_AFTER_HAND_OVER)
}

/// The mount a store was handed to answers: this process may serve the
/// store again once that mount ends.
pub(super) fn mount_answered() {
    HANDED_OVER.lock().take();
}

/// What a server serving its agent does when a mount asks for the store:
/// the requests running end, then it lets go of everything as at its end.
/// The session it served then goes through the mount.
fn hand_over(
    held: std::sync::Weak<Mutex<Option<Held>>>,
    ops: std::sync::Weak<Operations>,
    index: Index,
    counters: Arc<crate::store::counters::CounterStore>,
) -> super::control::HandOver {
    Arc::new(move || {
        let (Some(held), Some(ops)) = (held.upgrade(), ops.upgrade()) else {
            return Err("it is stopping".into());
        };
        let mut held = held.lock();
        if held.is_none() {
            return Err("it has handed the store over already".into());
        }
        if !ops.close(HAND_OVER_WAIT) {
            return Err(format!(
                "a request it runs has not ended within {}s; try again",
                HAND_OVER_WAIT.as_secs()
            ));
        }
        *HANDED_OVER.lock() = Some(Instant::now());
        if let Some(held) = held.take() {
            held.let_go(&index, &counters);
        }
        tracing::info!("handed the store to a mount; going through it from now on");
        Ok(())
    })
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Server({:?})", self.ops)
    }
}

impl Server {
    /// Serves the store, or `None` when another process holds its lock.
    /// Served for an agent (`ServedBy::Local`) with the organizer off,
    /// `dream` and the lifecycle steps still run when asked, on the
    /// caller's thread, as a command's do.
    pub fn start(config: &ServeConfig) -> anyhow::Result<Option<Server>> {
        super::paths::make_state_dir(&config.state_dir)?;
        let Some(lock) = StoreLock::try_acquire(&config.store)? else {
            return Ok(None);
        };
        // A process serving for its agent ends as a command does: after a
        // clean end the next one need not walk the store for temp files a
        // crash left.
        let clean_exit = (config.served_by == ServedBy::Local)
            .then(|| CleanExit::in_state_dir(&config.state_dir));
        let sweep = clean_exit.as_ref().is_none_or(|c| !c.recorded());
        let DaemonState {
            store,
            index,
            counters,
            history,
            meaning_off,
        } = open_daemon_state(
            &config.store,
            &config.state_dir,
            &config.config,
            sweep,
            // A process serving for its agent answers as a command does:
            // a search waits for the index to catch up with the store, a
            // `view` of a note does not.
            (config.served_by == ServedBy::Local).then_some(super::client::CATCH_UP),
        )?;
        let views = Views::new(index.clone()).with_root_guide(config.guide);
        let writer: Arc<dyn Writer> = Arc::new(
            DirectWriter::new(Arc::clone(&store))
                .with_index(index.clone())
                .with_history(Arc::clone(&history)),
        );
        let setup = Setup {
            writer: Arc::clone(&writer),
            store: Arc::clone(&store),
            index: index.clone(),
            counters: Some(Arc::clone(&counters)),
            config: config.config.clone(),
            outputs: views.task_outputs(),
            state_dir: Some(config.state_dir.clone()),
            history: Some(Arc::clone(&history)),
        };
        // The direct writer reports no closes; the organizer learns of
        // every change from the store watch below.
        let (_closes, closes_rx) = crossbeam_channel::unbounded();
        let tasks = if config.organizer {
            Some(Arc::new(Tasks::start(setup.clone(), closes_rx)?))
        } else {
            None
        };
        let watch = Watch::start(&store, &index, tasks.clone())?;
        // A daemon started with the organizer off has none; a process
        // serving for its agent runs it when asked, as a command does.
        let organizer: Option<Arc<dyn crate::ops::Organizer>> = match &tasks {
            Some(tasks) => Some(Arc::clone(tasks) as Arc<dyn crate::ops::Organizer>),
            None if config.served_by == ServedBy::Local => Some(Arc::new(OneShot::new(setup))),
            None => None,
        };
        let mut ops = Operations::new(
            Arc::clone(&store),
            index.clone(),
            views.clone(),
            writer,
            config.served_by,
        )
        .with_history(history)
        .with_counters(Arc::clone(&counters))
        .with_inbox_ttl(config.config.lifecycle.inbox_ttl)
        .with_meaning_off(meaning_off)
        .with_syncer(Arc::new(crate::front::sync::GitSync::new()));
        if let Some(organizer) = organizer {
            ops = ops.with_organizer(organizer);
        }
        let ops = Arc::new(ops);
        let weak = Arc::downgrade(&ops);
        views.set_brief_source(Box::new(move || {
            weak.upgrade()
                .map(|ops| ops.brief(None, None).to_markdown())
        }));
        // Filled once everything is started; a mount that asks for the
        // store before then is told it is stopping.
        let held = Arc::new(Mutex::new(None));
        let hand_over = (config.served_by == ServedBy::Local).then(|| {
            hand_over(
                Arc::downgrade(&held),
                Arc::downgrade(&ops),
                index.clone(),
                Arc::clone(&counters),
            )
        });
        let control = ControlServer::start(&config.state_dir, Arc::clone(&ops), hand_over)?;
        let rpc = RpcServer::start(&config.store, Arc::clone(&ops))?;
        // Only a daemon syncs on a schedule, not a process serving its agent.
        let sync = match config.served_by {
            ServedBy::Daemon => super::sync_schedule(&config.store, &config.config, &ops)?,
            ServedBy::Local => None,
        };
        let registration = registry::Registration::register(&registry::Entry {
            store: config.store.clone(),
            state_dir: config.state_dir.clone(),
            mountpoint: None,
            pid: std::process::id(),
            socket: control.path().to_path_buf(),
            rpc_socket: Some(rpc.path().to_path_buf()),
        })
        .with_context(|| format!("cannot register in {}", registry::dir().display()))?;
        let rpc_socket = rpc.path().to_path_buf();
        *held.lock() = Some(Held {
            registration: Some(registration),
            rpc: Some(rpc),
            control: Some(control),
            watch: Some(watch),
            tasks,
            sync,
            clean_exit,
            lock,
        });
        Ok(Some(Server {
            ops,
            index,
            counters,
            rpc_socket,
            held,
        }))
    }

    /// Waits until the index has caught up with the store (at most
    /// `within`): a scope hides other agents' memories by what the index
    /// says of them, so a first request must not run ahead of it.
    pub fn wait_caught_up(&self, within: std::time::Duration) -> bool {
        self.index.wait_idle(within)
    }

    /// The operations it serves.
    pub fn ops(&self) -> &Arc<Operations> {
        &self.ops
    }

    /// Where agents reach it with JSON-RPC.
    pub fn rpc_socket(&self) -> &std::path::Path {
        &self.rpc_socket
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(held) = self.held.lock().take() {
            held.let_go(&self.index, &self.counters);
        }
    }
}

/// The thread that hands the store's changes to the index and organizer.
struct Watch {
    stop: Arc<AtomicBool>,
    /// Ends the thread's wait, so a stop does not wait out its timeout.
    stopper: crate::store::watch::Stopper,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    fn start(
        store: &Arc<Store>,
        index: &Index,
        tasks: Option<Arc<Tasks>>,
    ) -> anyhow::Result<Watch> {
        let mut watcher =
            StoreWatcher::start(Arc::clone(store)).context("cannot watch the store")?;
        let stopper = watcher.stopper();
        let stop = Arc::new(AtomicBool::new(false));
        let (index, flag) = (index.clone(), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("mnemofs-watch".into())
            .spawn(move || {
                crate::background::lower_priority();
                while !flag.load(Ordering::Relaxed) {
                    let batch = match watcher.next_batch(Duration::from_millis(50)) {
                        Ok(batch) => batch,
                        Err(e) => {
                            tracing::error!("the store watcher failed, changes go unseen: {e}");
                            return;
                        }
                    };
                    if batch.is_empty() {
                        continue;
                    }
                    index.notify_paths(&batch);
                    if let Some(tasks) = &tasks {
                        for path in batch {
                            tasks.changed(path);
                        }
                    }
                }
            })?;
        Ok(Watch {
            stop,
            stopper,
            thread: Some(thread),
        })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
