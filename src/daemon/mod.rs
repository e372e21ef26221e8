//! The mount lifecycle: checks, locking, daemonizing, serving, unmounting.
//!
//! `mnemofs mount` validates everything it can *before* forking, so a bad
//! mountpoint or a store that is already served fails at once with one
//! sentence. In daemon mode the parent then waits on a pipe until the child
//! reports the mount live (or why it is not), so a script can use the mount
//! on the very next line. SIGINT/SIGTERM unmount; the session loop then
//! ends and the process exits 0.
//!
//! Forking happens before any thread exists; every thread (FUSE workers,
//! watcher, signal listener) is started in the final daemon process.

mod client;
mod control;
pub mod doctor;
pub mod install;
mod lock;
#[cfg(target_os = "macos")]
mod mount_table;
mod mountpoint;
mod paths;
pub mod registry;
pub mod serve;
pub mod socket;
pub mod status;

pub use client::{Found, Session, Target, find};
pub use lock::StoreLock;
pub use mountpoint::{is_mounted, unmount};
pub(crate) use paths::make_state_dir;
pub use paths::{default_state_dir, default_store_dir};

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use fuser::{Config, MountOption, SessionACL};

use crate::fs::{ExternalChangeWatcher, FsOptions, FuseAdapter, MountWriter, StoreFs};
use crate::index::Index;
use crate::ops::{Operations, ServedBy};
use crate::store::Store;
use crate::store::clean_exit::CleanExit;
use crate::store::counters::CounterStore;
use crate::store::history::History;
use crate::tasks::{Setup, Tasks};
use crate::views::Views;
use client::COUNTERS_FILE;

/// Everything `mount` needs, with paths already absolute.
#[derive(Clone, Debug)]
pub struct MountConfig {
    /// Where the store appears.
    pub mountpoint: PathBuf,
    /// The backing directory.
    pub store: PathBuf,
    /// Where derived state (lock, pid, log, later the index) lives.
    pub state_dir: PathBuf,
    /// Stay attached to the terminal (for systemd/launchd and tests).
    pub foreground: bool,
    /// FUSE worker threads.
    pub threads: usize,
    /// Let other users in (permissions are still enforced by the kernel).
    pub allow_other: bool,
    /// Filesystem tunables.
    pub fs: FsOptions,
    /// Keep the virtual views out of the root listing.
    pub views_hidden: bool,
    /// Show the guide file at the root.
    pub guide: bool,
    /// The configuration file's settings.
    pub config: crate::config::Config,
    /// Run the background organizer (normalizer, inbox, lifecycle).
    pub organizer: bool,
}

/// Mounts and serves until unmounted (foreground), or returns once the
/// daemon reports the mount live.
pub fn mount(config: &MountConfig) -> anyhow::Result<()> {
    check_fuse()?;
    // Read before daemonizing, which sets a umask of its own; set before
    // the state dir, the lock and the pid file are made.
    let umask = daemon_umask(config.allow_other);
    // SAFETY: umask has no preconditions; no thread exists yet.
    unsafe { libc::umask(umask as libc::mode_t) };
    mountpoint::prepare(&config.mountpoint)?;
    paths::make_state_dir(&config.state_dir)?;
    let lock = StoreLock::acquire(&config.store, &config.state_dir)?;
    if config.foreground {
        std::fs::write(
            config.state_dir.join(lock::PID_FILE),
            format!("{}\n", std::process::id()),
        )
        .context("cannot write the pid file")?;
        return serve(config, lock, None, umask);
    }
    daemonize(config, lock, umask)
}

/// The history in `state_dir`, recording for memories without `id:` in
/// their file the ids the index shows, read from its last commit (never
/// waiting, as a delete through the mount asks).
pub(crate) fn open_history(
    state_dir: &Path,
    config: &crate::config::Config,
    index: &Index,
) -> anyhow::Result<History> {
    let index = index.clone();
    Ok(History::open(state_dir, config.history.settings())
        .with_context(|| format!("cannot open the history in {}", state_dir.display()))?
        .with_ids(Box::new(move |path| index.indexed_id(path))))
}

/// What a daemon (mount or serve) works on, opened under the store lock.
struct DaemonState {
    store: Arc<Store>,
    index: Index,
    counters: Arc<CounterStore>,
    history: Arc<History>,
    /// Why search is by words only although the config names a model.
    meaning_off: Option<String>,
}

/// Where the memories' vectors are kept between runs, in the state dir.
pub(crate) const VECTORS_FILE: &str = "vectors.bin";

/// Semantic search for a process that serves a store, when the
/// configuration names a model: a model that cannot be loaded is a
/// warning, and search stays by words. Returns why it did not load.
fn enable_semantic(
    index: &Index,
    state_dir: &Path,
    config: &crate::config::Config,
) -> Option<String> {
    let dir = config.search.model_dir()?;
    let enabled = crate::embed::Embedder::load_configured(&dir, config.search.model_name())
        .map_err(|e| e.to_string())
        .and_then(|mut embedder| {
            embedder.use_questions(config.search.questions);
            let kept = state_dir.join(VECTORS_FILE);
            index
                .enable_semantic(embedder, Some(kept))
                .map_err(|e| e.to_string())
        });
    match enabled {
        Ok(()) => {
            tracing::info!("semantic search on, with the model in {}", dir.display());
            None
        }
        Err(e) => {
            tracing::warn!("semantic search is off, search is by words: {e}");
            Some(e)
        }
    }
}

/// Opens the store, swept of the temp files an interrupted write left (the
/// store lock is held: no write of ours is in flight), and its index,
/// counters and history. With `deferred`, the index's first query waits
/// (at most that long) for the start-up reconcile, and nothing else does;
/// without, queries answer with what the index has meanwhile.
fn open_daemon_state(
    store_dir: &Path,
    state_dir: &Path,
    config: &crate::config::Config,
    sweep: bool,
    deferred: Option<Duration>,
) -> anyhow::Result<DaemonState> {
    let store = Arc::new(
        Store::open(store_dir)
            .with_context(|| format!("cannot open store {}", store_dir.display()))?,
    );
    let swept = if sweep { store.remove_temp_files() } else { 0 };
    // A crash of this daemon must make the next command without one sweep.
    CleanExit::in_state_dir(state_dir)
        .forget()
        .context("cannot update the state dir")?;
    if swept > 0 {
        tracing::info!("removed {swept} temp files left by an interrupted write");
    }
    let index = match deferred {
        Some(within) => Index::open_deferred(state_dir, Arc::clone(&store), within),
        None => Index::open(state_dir, Arc::clone(&store)),
    }
    .context("cannot open the search index")?;
    let meaning_off = enable_semantic(&index, state_dir, config);
    let counters = Arc::new(CounterStore::open(&state_dir.join(COUNTERS_FILE)));
    let history = Arc::new(open_history(state_dir, config, &index)?);
    Ok(DaemonState {
        store,
        index,
        counters,
        history,
        meaning_off,
    })
}

/// The umask the daemon's own files are made under: 0077 for a private
/// mount (nothing the daemon makes is readable by others), the user's
/// umask when other users are let in. FUSE requests are not affected: the
/// kernel applied the caller's umask already (see `fs::fuse`).
fn daemon_umask(allow_other: bool) -> u32 {
    if !allow_other {
        return 0o077;
    }
    // Nothing the daemon makes is writable by others.
    crate::process::umask().map_or(0o022, |mask| mask | 0o022)
}

fn daemonize(config: &MountConfig, lock: StoreLock, umask: u32) -> anyhow::Result<()> {
    let log_path = config.state_dir.join("mnemofs.log");
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open log file {}", log_path.display()))?;
    let (read_end, write_end) = pipe()?;
    // The pid file is written by the child, not locked by `daemonize`: the
    // store lock already keeps a second daemon out, and a lock on the pid
    // file held by a daemon still exiting would refuse a new mount.
    let outcome = daemonize::Daemonize::new()
        .working_directory("/")
        .umask(0o077)
        .stdout(log.try_clone()?)
        .stderr(log)
        .execute();
    match outcome {
        daemonize::Outcome::Parent(result) => {
            drop(write_end);
            result.map_err(|e| anyhow!("cannot start the daemon: {e}"))?;
            wait_ready(read_end, &log_path)
        }
        daemonize::Outcome::Child(result) => {
            drop(read_end);
            let mut ready = File::from(write_end);
            let result = result.map_err(|e| e.to_string()).and_then(|_| {
                std::fs::write(
                    config.state_dir.join(lock::PID_FILE),
                    format!("{}\n", std::process::id()),
                )
                .map_err(|e| format!("cannot write the pid file: {e}"))
            });
            if let Err(e) = result {
                let _ = writeln!(ready, "cannot start the daemon: {e}");
                std::process::exit(1);
            }
            match serve(config, lock, Some(ready), umask) {
                Ok(()) => std::process::exit(0),
                Err(e) => {
                    tracing::error!("{e:#}");
                    std::process::exit(1);
                }
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: fds is a two-element array the kernel fills.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(std::io::Error::last_os_error()).context("cannot create a pipe");
    }
    // SAFETY: both descriptors were just created and are owned only here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// macOS has no `pipe2`: close-on-exec is set right after, before the
/// daemon forks (no other thread runs yet).
#[cfg(not(target_os = "linux"))]
fn pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    let (read, write) = nix::unistd::pipe().context("cannot create a pipe")?;
    for fd in [&read, &write] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).context("cannot create a pipe")?;
    }
    Ok((read, write))
}

/// Waits for the daemon's one-line report: `ready` or an error sentence.
fn wait_ready(read_end: OwnedFd, log_path: &Path) -> anyhow::Result<()> {
    let mut pfd = libc::pollfd {
        fd: read_end.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, 60_000) };
    if n == 0 {
        bail!(
            "the daemon did not report the mount ready within 60 s (see {})",
            log_path.display()
        );
    }
    // The daemon keeps its end open while it serves: read one line, not to EOF.
    let mut message = Vec::new();
    let mut file = File::from(read_end);
    let mut byte = [0u8; 1];
    while file.read(&mut byte)? == 1 && byte[0] != b'\n' {
        message.push(byte[0]);
    }
    let message = String::from_utf8_lossy(&message);
    let message = message.trim();
    if message == "ready" {
        return Ok(());
    }
    // A daemon that failed is still undoing its mount: the command returns
    // once it is gone (its end of the pipe closes as it exits), so nothing
    // is left mounted behind a failed `mount`.
    let mut pfd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(10_000) as i32) };
        if n <= 0 || file.read(&mut byte).unwrap_or(0) == 0 {
            break;
        }
    }
    match message {
        "" => bail!(
            "the daemon exited before mounting (see {})",
            log_path.display()
        ),
        other => bail!("{other}"),
    }
}

/// Mounts, reports readiness, and serves until unmounted.
fn serve(
    config: &MountConfig,
    lock: StoreLock,
    ready: Option<File>,
    umask: u32,
) -> anyhow::Result<()> {
    // SAFETY: umask has no preconditions. Set before any thread exists, so
    // every thread of the daemon starts with it.
    unsafe { libc::umask(umask as libc::mode_t) };
    crate::alloc::limit_arenas();
    let result = serve_inner(config, ready.as_ref());
    if let (Err(e), Some(mut ready)) = (&result, ready) {
        let _ = writeln!(ready, "{e:#}");
    }
    drop(lock);
    result
}

/// Fails with one sentence when this machine cannot mount FUSE
/// filesystems: `/dev/fuse` must be the FUSE character device (10, 229)
/// and open for reading and writing.
#[cfg(target_os = "linux")]
fn check_fuse() -> anyhow::Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    const FIX: &str = "install fuse3 and load the fuse module (modprobe fuse); in a container, \
        pass --device /dev/fuse and --cap-add SYS_ADMIN. Every command but mount works without FUSE";
    let device = Path::new("/dev/fuse");
    let meta = match std::fs::metadata(device) {
        Ok(m) => m,
        Err(e) => bail!("FUSE is not available here: /dev/fuse: {e}; {FIX}"),
    };
    let (major, minor) = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
    if !meta.file_type().is_char_device() || (major, minor) != (10, 229) {
        bail!("FUSE is not available here: /dev/fuse is not the FUSE device; {FIX}");
    }
    if let Err(e) = OpenOptions::new().read(true).write(true).open(device) {
        bail!("FUSE is not available here: cannot open /dev/fuse ({e}); {FIX}");
    }
    Ok(())
}

/// Fails with one sentence when macFUSE is not installed: its bundle in
/// `/Library/Filesystems` is what mounts (the device appears only then).
#[cfg(target_os = "macos")]
fn check_fuse() -> anyhow::Result<()> {
    let bundle = Path::new("/Library/Filesystems/macfuse.fs");
    if !bundle.is_dir() {
        bail!(
            "FUSE is not available here: {} is missing; install macFUSE \
             (https://macfuse.github.io). Every command but mount works without FUSE",
            bundle.display()
        );
    }
    Ok(())
}

/// A mounted store whose session has not started serving yet.
struct Mounted {
    store: Arc<Store>,
    index: Index,
    fs: Arc<StoreFs>,
    views: Views,
    session: fuser::Session<FuseAdapter>,
    meaning_off: Option<String>,
}

/// Opens the store and its index, and mounts it.
fn mount_store(config: &MountConfig) -> anyhow::Result<Mounted> {
    let DaemonState {
        store,
        index,
        counters,
        history,
        meaning_off,
    } = open_daemon_state(&config.store, &config.state_dir, &config.config, true, None)?;
    let views = Views::new(index.clone()).with_root_guide(config.guide);
    let kernel_checks = crate::fs::kernel_checks_permissions(config.allow_other);
    let fs_options = crate::fs::FsOptions {
        store_checks_permissions: !kernel_checks,
        views_for_owner_only: config.allow_other,
        ..config.fs.clone()
    };
    let fs = Arc::new(
        StoreFs::new(Arc::clone(&store), fs_options)?
            .with_views(views.clone(), config.views_hidden)?
            .with_counters(counters)
            .with_history(history),
    );
    let mut fuse_config = Config::default();
    fuse_config.mount_options = vec![
        MountOption::FSName("mnemofs".into()),
        MountOption::Subtype("mnemofs".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    if kernel_checks {
        fuse_config
            .mount_options
            .push(MountOption::DefaultPermissions);
    }
    fuse_config.acl = if config.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    if cfg!(target_os = "linux") {
        fuse_config.n_threads = Some(config.threads.max(2));
        fuse_config.clone_fd = true;
    } else {
        // fuser serves a mount from one thread elsewhere (no cloned
        // device descriptors), and refuses more.
        fuse_config.n_threads = Some(1);
    }
    let session = fuser::Session::new(
        FuseAdapter::new(Arc::clone(&fs)),
        &config.mountpoint,
        &fuse_config,
    )
    .map_err(|e| mountpoint::explain_mount_error(&config.mountpoint, e))?;
    Ok(Mounted {
        store,
        index,
        fs,
        views,
        session,
        meaning_off,
    })
}

/// The operations a daemon serves, the background tasks, and the store
/// watcher that feeds them and the index.
struct Serving {
    ops: Arc<Operations>,
    tasks: Option<Arc<Tasks>>,
    watcher: ExternalChangeWatcher,
    /// Stopped first: a round writes through the mount.
    sync: Option<crate::front::sync::Schedule>,
}

fn start_serving(config: &MountConfig, mounted: &Mounted) -> anyhow::Result<Serving> {
    let writer = Arc::new(MountWriter::new(
        config.mountpoint.clone(),
        Arc::clone(&mounted.fs),
    ));
    let tasks = if config.organizer {
        let (events, events_rx) = crossbeam_channel::unbounded();
        mounted.fs.set_event_sink(events);
        Some(Arc::new(Tasks::start(
            Setup {
                writer: writer.clone(),
                store: Arc::clone(&mounted.store),
                index: mounted.index.clone(),
                counters: mounted.fs.counters().cloned(),
                config: config.config.clone(),
                outputs: mounted.views.task_outputs(),
                state_dir: Some(config.state_dir.clone()),
                history: mounted.fs.history().cloned(),
            },
            events_rx,
        )?))
    } else {
        None
    };
    let on_change = {
        let index = mounted.index.clone();
        let tasks = tasks.clone();
        Box::new(move |paths: &[crate::store::StorePath]| {
            index.notify_paths(paths);
            if let Some(tasks) = &tasks {
                for path in paths {
                    tasks.changed(path.clone());
                }
            }
        })
    };
    let watcher = ExternalChangeWatcher::start(
        Arc::clone(&mounted.fs),
        mounted.session.notifier(),
        on_change,
    )
    .context("cannot watch the store for external changes")?;
    let mut ops = Operations::new(
        Arc::clone(&mounted.store),
        mounted.index.clone(),
        mounted.views.clone(),
        writer,
        ServedBy::Daemon,
    )
    .with_max_file_size(config.fs.max_file_size)
    .with_inbox_ttl(config.config.lifecycle.inbox_ttl)
    .with_meaning_off(mounted.meaning_off.clone())
    .with_syncer(Arc::new(crate::front::sync::GitSync::new()));
    if let Some(history) = mounted.fs.history() {
        ops = ops.with_history(Arc::clone(history));
    }
    if let Some(counters) = mounted.fs.counters() {
        ops = ops.with_counters(Arc::clone(counters));
    }
    if let Some(tasks) = &tasks {
        ops = ops.with_organizer(Arc::clone(tasks) as Arc<dyn crate::ops::Organizer>);
    }
    let ops = Arc::new(ops);
    // A weak handle: the views live inside the operations.
    let weak = Arc::downgrade(&ops);
    mounted.views.set_brief_source(Box::new(move || {
        weak.upgrade()
            .map(|ops| ops.brief(None, None).to_markdown())
    }));
    let sync = sync_schedule(&config.store, &config.config, &ops)?;
    Ok(Serving {
        ops,
        tasks,
        watcher,
        sync,
    })
}

/// The daemon's sync rounds, when the config asks for them.
pub(crate) fn sync_schedule(
    store: &Path,
    config: &crate::config::Config,
    ops: &Arc<Operations>,
) -> anyhow::Result<Option<crate::front::sync::Schedule>> {
    let Some(interval) = config.sync.schedule() else {
        return Ok(None);
    };
    let setup = config
        .sync
        .remote
        .clone()
        .map(|remote| crate::front::sync::InitOptions {
            remote,
            read_only: config.sync.read_only,
            host: None,
        });
    let ops = Arc::clone(ops);
    let schedule = crate::front::sync::Schedule::start(
        store.to_path_buf(),
        setup,
        interval,
        move || match ops.handle(crate::ops::Request::Sync)? {
            crate::ops::Response::Synced { report } => Ok(*report),
            _ => Err(crate::ops::Error::Unavailable(
                "unexpected answer to sync".into(),
            )),
        },
    )
    .context("cannot start the sync thread")?;
    Ok(Some(schedule))
}

fn serve_inner(config: &MountConfig, ready: Option<&File>) -> anyhow::Result<()> {
    let mut mounted = mount_store(config)?;
    let unmounter = mounted.session.unmount_callable();
    let serving = start_serving(config, &mounted)?;
    let started = (|| -> anyhow::Result<_> {
        let control =
            control::ControlServer::start(&config.state_dir, Arc::clone(&serving.ops), None)?;
        // The mount works without its public socket; agents are told why not.
        let rpc = socket::RpcServer::start(&config.store, Arc::clone(&serving.ops))
            .inspect_err(|e| tracing::warn!("no public socket: {e:#}"))
            .ok();
        let registration = registry::Registration::register(&registry::Entry {
            store: config.store.clone(),
            state_dir: config.state_dir.clone(),
            mountpoint: Some(config.mountpoint.clone()),
            pid: std::process::id(),
            socket: control.path().to_path_buf(),
            rpc_socket: rpc.as_ref().map(|r| r.path().to_path_buf()),
        });
        if let Err(e) = &registration {
            tracing::warn!(
                "cannot register in {} ({e}); commands need --state-dir {} to find this daemon",
                registry::dir().display(),
                config.state_dir.display()
            );
        }
        let http = serve::start_mcp_http(&config.config.mcp, &config.state_dir, &serving.ops)?;
        let signals =
            SignalListener::start(unmounter, config.mountpoint.clone(), mounted.index.clone())?;
        Ok((control, rpc, registration, http, signals))
    })();
    let (control, rpc, registration, http, signals) = match started {
        Ok(started) => started,
        Err(e) => {
            // Nothing answers the mount until its session runs, and the
            // organizer may already wait on it: the session goes first,
            // which fails what waits (and unmounts), then the rest.
            drop(mounted);
            drop(serving);
            // A request that waited on the session made the mount busy
            // when the session went: detach what is left of it.
            if mountpoint::is_mounted(&config.mountpoint)
                && let Err(e) = mountpoint::unmount(&config.mountpoint, true)
            {
                tracing::warn!("cannot detach {}: {e:#}", config.mountpoint.display());
            }
            return Err(e);
        }
    };
    tracing::info!(
        "mounted {} at {}",
        config.store.display(),
        config.mountpoint.display()
    );
    if let Some(mut ready) = ready {
        writeln!(ready, "ready")?;
    }
    notify_systemd_ready();
    let Mounted {
        index, session, fs, ..
    } = mounted;
    let copies = mountpoint::CopiesWatch::start(&config.mountpoint);
    let result = session.run();
    copies.stop();
    signals.stop();
    drop(http);
    drop(registration);
    drop(rpc);
    drop(control);
    let Serving {
        ops,
        tasks,
        watcher,
        sync,
    } = serving;
    drop(sync);
    drop(ops);
    drop(watcher);
    drop(tasks);
    index.shutdown();
    if let Some(Err(e)) = fs.counters().map(|c| c.flush()) {
        tracing::warn!("cannot save the access counters: {e}");
    }
    tracing::info!("unmounted {}", config.mountpoint.display());
    result.context("the FUSE session ended with an error")
}

/// Tells systemd (`Type=notify`) that the mount is live, if it asked.
#[cfg(target_os = "linux")]
fn notify_systemd_ready() {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let bytes = socket.as_encoded_bytes();
    // "@name" is a socket in the abstract namespace.
    let address = match bytes.strip_prefix(b"@") {
        Some(name) => SocketAddr::from_abstract_name(name),
        None => SocketAddr::from_pathname(&socket),
    };
    let sent = address.and_then(|a| UnixDatagram::unbound()?.send_to_addr(b"READY=1", &a));
    if let Err(e) = sent {
        tracing::warn!("cannot notify systemd at {}: {e}", socket.to_string_lossy());
    }
}

/// launchd has no readiness protocol: nothing to tell.
#[cfg(not(target_os = "linux"))]
fn notify_systemd_ready() {}

/// Unmounts on SIGINT/SIGTERM and rebuilds the index on SIGUSR1, from a
/// thread of its own.
struct SignalListener {
    handle: signal_hook::iterator::Handle,
    thread: std::thread::JoinHandle<()>,
}

impl SignalListener {
    fn start(
        mut unmounter: fuser::SessionUnmounter,
        mountpoint: PathBuf,
        index: Index,
    ) -> anyhow::Result<Self> {
        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
            signal_hook::consts::SIGUSR1,
        ])?;
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("mnemofs-signals".into())
            .spawn(move || {
                let mut pending = signals.forever();
                let signal = loop {
                    match pending.next() {
                        Some(signal_hook::consts::SIGUSR1) => {
                            let index = index.clone();
                            let spawned = std::thread::Builder::new()
                                .name("mnemofs-reindex".into())
                                .spawn(move || match index.rebuild() {
                                    Ok(n) => tracing::info!("rebuilt the index: {n} files"),
                                    Err(e) => tracing::error!("rebuilding the index failed: {e}"),
                                });
                            if let Err(e) = spawned {
                                tracing::error!("cannot start the rebuild: {e}");
                            }
                        }
                        other => break other,
                    }
                };
                if let Some(signal) = signal {
                    tracing::info!("signal {signal}: unmounting {}", mountpoint.display());
                    // Someone else may have unmounted it meanwhile: then
                    // there is nothing left to detach.
                    if let Err(e) = unmounter.unmount()
                        && mountpoint::is_mounted(&mountpoint)
                    {
                        tracing::warn!("unmount failed ({e}); detaching lazily");
                        if let Err(e) = mountpoint::unmount(&mountpoint, true) {
                            tracing::error!("lazy unmount failed: {e:#}");
                        }
                    }
                }
            })?;
        Ok(SignalListener { handle, thread })
    }

    fn stop(self) {
        self.handle.close();
        let _ = self.thread.join();
    }
}

/// How long `mount` waits for a store lock held by a daemon that is exiting.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(3);
