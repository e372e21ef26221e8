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
use std::time::Duration;

use anyhow::{Context, bail};

use super::control::ControlServer;
use super::socket::RpcServer;
use super::{DaemonState, StoreLock, open_daemon_state, registry};
use crate::index::Index;
use crate::ops::{DirectWriter, Operations, ServedBy, Writer};
use crate::store::Store;
use crate::store::watch::StoreWatcher;
use crate::tasks::{Setup, Tasks};
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
}

/// Serves the store until a signal says stop.
pub fn serve(config: &ServeConfig) -> anyhow::Result<()> {
    // Private, as a private mount's daemon: the index, the counters and
    // the organizer's files are nobody else's. Before any thread exists.
    // SAFETY: umask has no preconditions.
    unsafe { libc::umask(0o077) };
    crate::alloc::limit_arenas();
    std::fs::create_dir_all(&config.state_dir)
        .with_context(|| format!("cannot create state dir {}", config.state_dir.display()))?;
    let Some(lock) = StoreLock::try_acquire(&config.store)? else {
        let pid = super::lock::holder_pid(&config.store, &config.state_dir)
            .map(|p| format!(" (pid {p})"))
            .unwrap_or_default();
        bail!(
            "{} is already served by another process{pid}",
            config.store.display()
        );
    };
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])?;
    let DaemonState {
        store,
        index,
        counters,
        history,
    } = open_daemon_state(&config.store, &config.state_dir, &config.config)?;
    let views = Views::new(index.clone());
    let writer: Arc<dyn Writer> = Arc::new(
        DirectWriter::new(Arc::clone(&store))
            .with_index(index.clone())
            .with_history(Arc::clone(&history)),
    );
    // The direct writer reports no closes; the organizer learns of every
    // change from the store watch below.
    let (_closes, closes_rx) = crossbeam_channel::unbounded();
    let tasks = if config.organizer {
        Some(Arc::new(Tasks::start(
            Setup {
                writer: Arc::clone(&writer),
                store: Arc::clone(&store),
                index: index.clone(),
                counters: Some(Arc::clone(&counters)),
                config: config.config.clone(),
                outputs: views.task_outputs(),
                state_dir: Some(config.state_dir.clone()),
                history: Some(Arc::clone(&history)),
            },
            closes_rx,
        )?))
    } else {
        None
    };
    let watch = Watch::start(&store, &index, tasks.clone())?;
    let mut ops = Operations::new(
        Arc::clone(&store),
        index.clone(),
        views.clone(),
        writer,
        ServedBy::Daemon,
    )
    .with_history(history)
    .with_counters(Arc::clone(&counters));
    if let Some(tasks) = &tasks {
        ops = ops.with_organizer(Arc::clone(tasks) as Arc<dyn crate::ops::Organizer>);
    }
    let ops = Arc::new(ops);
    let weak = Arc::downgrade(&ops);
    views.set_brief_source(Box::new(move || {
        weak.upgrade().map(|ops| ops.brief(None).to_markdown())
    }));
    let control = ControlServer::start(&config.state_dir, Arc::clone(&ops))?;
    let rpc = RpcServer::start(&config.store, Arc::clone(&ops))?;
    let registration = registry::Registration::register(&registry::Entry {
        store: config.store.clone(),
        state_dir: config.state_dir.clone(),
        mountpoint: None,
        pid: std::process::id(),
        socket: control.path().to_path_buf(),
        rpc_socket: Some(rpc.path().to_path_buf()),
    })
    .with_context(|| format!("cannot register in {}", registry::dir().display()))?;
    tracing::info!(
        "serving {} on {}",
        config.store.display(),
        rpc.path().display()
    );
    // Readiness, for whoever started us: the socket answers from now on.
    println!(
        "serving {} on {}",
        config.store.display(),
        rpc.path().display()
    );
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let signal = signals.forever().next();
    tracing::info!("stopping on signal {signal:?}");
    drop(registration);
    drop(rpc);
    drop(control);
    drop(watch);
    drop(ops);
    drop(tasks);
    index.shutdown();
    if let Err(e) = counters.flush() {
        tracing::warn!("cannot save the access counters: {e}");
    }
    drop(lock);
    Ok(())
}

/// The thread that hands the store's changes to the index and organizer.
struct Watch {
    stop: Arc<AtomicBool>,
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
            thread: Some(thread),
        })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
