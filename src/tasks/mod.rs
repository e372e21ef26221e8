//! Background tasks that keep the store tidy while people and agents write.
//!
//! The same jobs run in two places:
//! - in a daemon, one thread ("mnemofs-organizer", [`Tasks`]) owns them,
//!   so two tasks never race on one file: the normalizer adds missing
//!   frontmatter shortly after the last writer closes a memory or an
//!   external edit is seen; inbox items move as soon as their quiet
//!   period has passed; on an interval, when idle, and on demand
//!   (`mnemofs dream`) the organizer archives expired and decayed
//!   memories, and at deeper levels merges duplicates, resolves links and
//!   extracts reminders ([`organize`]);
//! - without a daemon, [`OneShot`] runs a requested dream on the
//!   caller's thread, under the store lock.
//!
//! Nothing is ever deleted: expiry, decay and merging move files into
//! `archive/` with a note of why. Every change goes through an
//! [`ops::Writer`](crate::ops::Writer) (through the mount when a daemon
//! serves the store, so watchers see it), and every rewrite is
//! compare-and-swap against the bytes read; a conflict is retried later.

pub mod meaning;
pub mod normalize;
pub mod organize;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;

use crate::config::{Config, NotificationMethod};
use crate::index::Index;
use crate::ops::{self, Outcome, WriteEvent, Writer};
pub use crate::ops::{Report, Skipped};
use crate::store::counters::CounterStore;
use crate::store::history::History;
use crate::store::{Stat, Store, StorePath, TimeSpec};
use crate::views::TaskOutputs;
use organize::Organizing;

/// Where the last report of each task is kept, in the state dir.
pub const REPORTS_FILE: &str = "tasks.json";

/// Whether a memory came in with `mnemofs ingest`: it names the file it
/// was read from in `source_path`. The organizer never takes such a note
/// out of search on its own: it does not expire (in the inbox or
/// anywhere) and is never merged into another copy, since a person wrote
/// it and two notes of a vault with the same text are still two notes.
/// Decay, off unless a person turns it on, is the one way such a note is
/// archived.
pub(crate) fn is_ingested(frontmatter: &crate::memory::Frontmatter) -> bool {
    frontmatter
        .extra
        .get("source_path")
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.trim().is_empty()))
}

/// Whether an inbox note is a capture whose time is up: it says when it
/// expires (`expires_at`, which the agents' `write` gives what it drops
/// in the inbox, as memory-cli does), that time has passed, and it was
/// not ingested. A note a person wrote into the inbox, by hand or through
/// the mount, carries no such date and never expires.
pub(crate) fn has_expired(frontmatter: &crate::memory::Frontmatter) -> bool {
    !is_ingested(frontmatter)
        && frontmatter
            .expires_at
            .as_deref()
            .and_then(crate::memory::parse_timestamp)
            .is_some_and(|at| at <= crate::ops::now_unix())
}

/// Everything the organizer works with, wired by whoever starts it.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Where changes go: through the mount, or straight on the store.
    pub writer: Arc<dyn Writer>,
    /// The store, for reads (they change nothing and count as no access).
    pub store: Arc<Store>,
    /// The index, for duplicates, links and backlinks.
    pub index: Index,
    /// The volatile counters, where they are kept.
    pub counters: Option<Arc<CounterStore>>,
    /// The configuration file's settings.
    pub config: Config,
    /// Where `.mnemofs/pending.md` and the tasks' lint are published.
    pub outputs: TaskOutputs,
    /// Where the last reports are saved for `status` (the state dir).
    pub state_dir: Option<PathBuf>,
    /// Earlier versions kept by the writers: the organizer sweeps out
    /// those past their time and over the size cap.
    pub history: Option<Arc<History>>,
}

/// Timings and thresholds of the background tasks.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    /// Quiet time after the last change before a memory is normalized.
    pub debounce: Duration,
    /// How often the organizer runs level 1 on its own.
    pub interval: Duration,
    /// How long an inbox item must be untouched before it is moved.
    pub quiet_period: Duration,
    /// How long a moved memory's old path keeps resolving.
    pub grace_period: Duration,
    /// After this long without changes, run the idle dream once.
    pub idle_after: Option<Duration>,
    /// The level of the idle dream.
    pub idle_level: u8,
    /// Inbox items read this many times are organized at once.
    pub upgrade_access_count: Option<u64>,
    /// Inbox items untouched this long go to `archive/expired/`.
    pub inbox_ttl: Duration,
    /// Organized memories untouched this long go to `archive/decayed/`
    /// (`None`: never).
    pub decay_after: Option<Duration>,
}

impl TaskSettings {
    /// The settings a configuration file asks for.
    pub fn from_config(config: &Config) -> TaskSettings {
        let ttl = config.lifecycle.inbox_ttl;
        TaskSettings {
            interval: config.organizer.interval,
            quiet_period: config.organizer.quiet_period,
            grace_period: config.organizer.grace_period,
            idle_after: (!config.dream.idle_after.is_zero()).then_some(config.dream.idle_after),
            idle_level: config.dream.idle_level.clamp(1, 3),
            upgrade_access_count: (config.lifecycle.upgrade_access_count > 0)
                .then_some(u64::from(config.lifecycle.upgrade_access_count)),
            // Zero turns expiry off.
            inbox_ttl: if ttl.is_zero() { Duration::MAX } else { ttl },
            decay_after: config
                .lifecycle
                .decay
                .enabled
                .then_some(config.lifecycle.decay.after),
            ..TaskSettings::default()
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            debounce: Duration::from_millis(1500),
            interval: Duration::from_secs(300),
            quiet_period: Duration::from_secs(30),
            grace_period: Duration::from_secs(3600),
            idle_after: Some(Duration::from_secs(600)),
            idle_level: 3,
            upgrade_access_count: Some(3),
            inbox_ttl: crate::config::DEFAULT_INBOX_TTL,
            decay_after: None,
        }
    }
}

/// Shows a desktop notification where a notifier exists; silently
/// nothing where none does (servers, CI).
fn notify_desktop(method: NotificationMethod, title: &str) {
    let command = match method {
        NotificationMethod::None => return,
        NotificationMethod::NotifySend => (
            "notify-send",
            vec!["mnemofs".to_string(), title.to_string()],
        ),
        NotificationMethod::Osascript => (
            "osascript",
            vec![
                "-e".into(),
                format!("display notification {title:?} with title \"mnemofs\""),
            ],
        ),
        NotificationMethod::Auto if cfg!(target_os = "macos") => (
            "osascript",
            vec![
                "-e".into(),
                format!("display notification {title:?} with title \"mnemofs\""),
            ],
        ),
        NotificationMethod::Auto => (
            "notify-send",
            vec!["mnemofs".to_string(), title.to_string()],
        ),
    };
    match std::process::Command::new(command.0)
        .args(&command.1)
        .status()
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::debug!("no {} for reminder notifications", command.0)
        }
        Err(e) => tracing::warn!("reminder notification failed: {e}"),
    }
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The jobs and what they publish; shared by [`Tasks`] and [`OneShot`].
struct Runner {
    organizing: Organizing,
    last: Arc<Mutex<HashMap<String, Report>>>,
    reports_file: Option<PathBuf>,
    outputs: TaskOutputs,
    /// Due reminders already announced on the desktop.
    notified: HashSet<StorePath>,
    history: Option<Arc<History>>,
}

impl Runner {
    fn new(setup: Setup) -> Runner {
        let settings = TaskSettings::from_config(&setup.config);
        let last = setup
            .state_dir
            .as_ref()
            .and_then(|d| std::fs::read(d.join(REPORTS_FILE)).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Runner {
            organizing: Organizing {
                // What a dream run moves and rewrites is noted, so that
                // the run returns once the index has it.
                writer: Arc::new(crate::ops::written::Recording(setup.writer)),
                store: setup.store,
                index: setup.index,
                counters: setup.counters,
                settings,
                config: setup.config,
                prototypes: Default::default(),
                history: setup.history.clone(),
            },
            last: Arc::new(Mutex::new(last)),
            reports_file: setup.state_dir.map(|d| d.join(REPORTS_FILE)),
            outputs: setup.outputs,
            notified: HashSet::new(),
            history: setup.history,
        }
    }

    fn record(&self, task: &str, mut report: Report) -> Report {
        report.finished_at = now_unix();
        let snapshot = {
            let mut last = self.last.lock();
            last.insert(task.to_string(), report.clone());
            serde_json::to_vec_pretty(&*last).unwrap_or_default()
        };
        if let Some(file) = &self.reports_file {
            // Derived state for `mnemofs status`: a failed write loses nothing.
            let tmp = file.with_extension("json.tmp");
            if let Err(e) =
                std::fs::write(&tmp, snapshot).and_then(|()| std::fs::rename(&tmp, file))
            {
                tracing::debug!("cannot record task reports: {e}");
            }
        }
        report
    }

    /// Drops kept versions past their time or over the size cap.
    fn sweep_history(&self) {
        let Some(history) = &self.history else {
            return;
        };
        match history.sweep() {
            Ok(0) => {}
            Ok(n) => tracing::info!("history: {n} earlier versions expired or over the cap"),
            Err(e) => tracing::warn!("history: cannot sweep: {e}"),
        }
    }

    /// `mnemofs normalize`: the missing frontmatter of `paths` (or every
    /// memory), written now.
    fn normalize(&mut self, paths: Option<Vec<StorePath>>) -> Report {
        let _span = tracing::info_span!("normalize").entered();
        let report = self.organizing.normalize_all(paths);
        tracing::info!(
            "normalize: {} memories given their frontmatter",
            report.normalized
        );
        self.record("normalize", report)
    }

    /// Refreshes `.mnemofs/pending.md` and announces newly due reminders;
    /// returns the due ones.
    fn announce_due(&mut self) -> Vec<(i64, String, StorePath)> {
        let due = self.organizing.due_reminders();
        let mut text = String::from("# Due reminders\n\n");
        if due.is_empty() {
            text.push_str("Nothing is due.\n");
        }
        for (when, title, path) in &due {
            text.push_str(&format!(
                "- {} {title} (`{path}`)\n",
                crate::memory::format_timestamp(*when)
            ));
            if self.notified.insert(path.clone()) {
                notify_desktop(self.organizing.config.notifications.method, title);
            }
        }
        *self.outputs.pending.lock() = text;
        due
    }

    /// Does one chore now: a lifecycle command.
    fn run(&mut self, chore: ops::Chore) -> ops::Result<ops::StepReport> {
        use ops::{Chore, Step, StepReport};
        let _span = tracing::info_span!("chore", ?chore).entered();
        let mut out = StepReport::default();
        let mut report = Report::default();
        match chore {
            Chore::Upgrade { path, category } => {
                out.step = "upgrade".into();
                let to = self.organizing.upgrade(&path, category, &mut report)?;
                out.path = Some(to.to_string());
            }
            Chore::Step(step) => {
                out.step = step.name().into();
                match step {
                    Step::Decay => {
                        if self.organizing.settings.decay_after.is_none() {
                            out.notes.push(
                                "decay is off: set lifecycle.decay.enabled in config.yaml".into(),
                            );
                        }
                        report.add(self.organizing.lifecycle());
                    }
                    Step::Consolidate => {
                        report.add(self.organizing.organize_inbox(false).0);
                        report.add(self.organizing.lifecycle());
                        self.catch_up(&mut report);
                        report.add(self.organizing.consolidate());
                    }
                    Step::ResolveLinks => {
                        self.catch_up(&mut report);
                        let mut lint = Vec::new();
                        report.add(self.organizing.resolve_links(&mut lint));
                        report.links_unresolved = lint.len();
                        report
                            .skipped
                            .extend(lint.iter().map(|(path, why)| Skipped {
                                path: path.to_string(),
                                reason: why.clone(),
                            }));
                        *self.outputs.lint.lock() = lint;
                    }
                    Step::Notify => {
                        out.due = self
                            .announce_due()
                            .into_iter()
                            .map(|(when, title, path)| ops::DueReminder {
                                due_at: crate::memory::format_timestamp(when),
                                title,
                                path: path.to_string(),
                            })
                            .collect();
                        report.reminders = out.due.len();
                    }
                }
            }
        }
        self.organizing.flush_counters();
        out.report = self.record(&out.step, report);
        Ok(out)
    }

    /// Lets the index catch up with the changes just made, before a step
    /// that finds memories through it.
    fn catch_up(&self, report: &mut Report) {
        if !self.organizing.index.wait_idle(Duration::from_secs(120)) {
            report
                .errors
                .push("the index did not catch up; some memories may be missed".into());
        }
    }

    /// Runs a dream level. `asked`: someone asked for it now, so inbox
    /// items are classified whatever their age; on the schedule, only
    /// those past their quiet period.
    fn dream(&mut self, level: u8, asked: bool) -> Report {
        crate::ops::written::during(|| self.dream_steps(level, asked)).0
    }

    /// Has the index take in what this dream run changed so far, and waits
    /// until it has: the steps that follow find memories through it, and
    /// whoever asked for the run searches next.
    ///
    /// What this thread wrote is noted as it writes; the inbox is sorted
    /// on threads of its own, whose moves the report lists. With `all`,
    /// the start-up reconcile and everything notified so far are waited
    /// for too.
    fn settle(&self, report: &mut Report, what: &str, all: bool) {
        let index = &self.organizing.index;
        let mut written = crate::ops::written::take_so_far();
        written.extend(
            report
                .filed
                .iter()
                .flat_map(|f| [f.from.as_str(), f.to.as_str()])
                .filter_map(StorePath::new),
        );
        if written.is_empty() && !all {
            return;
        }
        index.notify_paths(&written);
        let timeout = Duration::from_secs(120);
        let caught_up = if all {
            index.wait_idle(timeout)
        } else {
            index.wait_committed(timeout)
        };
        if !caught_up {
            report
                .errors
                .push(format!("the index did not catch up; {what}"));
        }
    }

    /// The steps of [`Runner::dream`].
    fn dream_steps(&mut self, level: u8, asked: bool) -> Report {
        let level = level.clamp(1, 3);
        let _span = tracing::info_span!("dream", level, asked).entered();
        let mut report = Report {
            level,
            ..Report::default()
        };
        report.add(self.organizing.organize_inbox(asked).0);
        report.add(self.organizing.lifecycle());
        self.sweep_history();
        if level >= 2 {
            // Duplicates and link targets are found through the index: let
            // it catch up with the moves and rewrites just made.
            self.settle(&mut report, "links may be reported unresolved", true);
            report.add(self.organizing.consolidate());
            let mut lint = Vec::new();
            report.add(self.organizing.resolve_links(&mut lint));
            report.links_unresolved = lint.len();
            *self.outputs.lint.lock() = lint;
        }
        if level >= 3 {
            report.add(self.organizing.reminders(asked));
            let _ = self.announce_due();
        }
        self.settle(
            &mut report,
            "a search may still find memories where they were",
            false,
        );
        tracing::info!(
            "dream level {level}: {} organized, {} expired, {} decayed, {} merged, {} reminders",
            report.organized,
            report.expired,
            report.decayed,
            report.merged,
            report.reminders
        );
        self.record(&format!("dream-{level}"), report)
    }
}

/// The organizer on the caller's thread, for a store no daemon serves
/// (the caller holds the store lock).
pub struct OneShot {
    runner: Mutex<Runner>,
    last: Arc<Mutex<HashMap<String, Report>>>,
}

impl std::fmt::Debug for OneShot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneShot").finish_non_exhaustive()
    }
}

impl OneShot {
    /// An organizer that runs only when asked.
    pub fn new(setup: Setup) -> OneShot {
        let runner = Runner::new(setup);
        let last = Arc::clone(&runner.last);
        OneShot {
            runner: Mutex::new(runner),
            last,
        }
    }
}

impl ops::Organizer for OneShot {
    fn dream(&self, level: u8) -> ops::Result<Report> {
        let mut runner = self.runner.lock();
        let report = runner.dream(level, true);
        if let Some(Err(e)) = runner.organizing.counters.as_ref().map(|c| c.flush()) {
            tracing::warn!("cannot save the access counters: {e}");
        }
        Ok(report)
    }

    fn last_reports(&self) -> HashMap<String, Report> {
        self.last.lock().clone()
    }

    fn run(&self, chore: ops::Chore) -> ops::Result<ops::StepReport> {
        self.runner.lock().run(chore)
    }

    fn normalize(&self, paths: Option<Vec<StorePath>>) -> ops::Result<Report> {
        let mut runner = self.runner.lock();
        let report = runner.normalize(paths);
        runner.organizing.flush_counters();
        Ok(report)
    }
}

/// What a file looked like: a restored one is left alone while it still
/// does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileState {
    ino: u64,
    size: u64,
    mtime: TimeSpec,
}

impl FileState {
    fn of(st: &Stat) -> FileState {
        FileState {
            ino: st.ino,
            size: st.size,
            mtime: st.mtime,
        }
    }
}

enum Message {
    /// A change the store watcher saw (made behind the mount, or a move).
    Changed(StorePath),
    /// A writer closed a file it wrote through the mount.
    Written(StorePath),
    Dream(u8, Sender<Report>),
    Chore(ops::Chore, Sender<ops::Result<ops::StepReport>>),
    /// `mnemofs normalize`: these memories, or all of them.
    Normalize(Option<Vec<StorePath>>, Sender<Report>),
    /// A memory was restored to an earlier version; its state then.
    Restored(StorePath, Option<FileState>),
    Stop,
}

/// The running background tasks of a daemon.
pub struct Tasks {
    tx: Sender<Message>,
    /// Files the worker has yet to normalize (it keeps this up to date).
    queued: Arc<AtomicUsize>,
    /// The writer's closes, to count those not yet taken.
    closes: Receiver<WriteEvent>,
    thread: Option<JoinHandle<()>>,
    last: Arc<Mutex<HashMap<String, Report>>>,
    /// For the state of a restored file.
    store: Arc<Store>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

/// How long a requested dream may take before the caller stops waiting.
pub const DREAM_TIMEOUT: Duration = Duration::from_secs(1800);

impl Tasks {
    /// Starts the organizer thread; it first normalizes the inbox.
    /// `events` are the writer's (closes of written files).
    pub fn start(setup: Setup, events: Receiver<WriteEvent>) -> std::io::Result<Tasks> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let store = Arc::clone(&setup.store);
        let runner = Runner::new(setup);
        let last = Arc::clone(&runner.last);
        let queued = Arc::new(AtomicUsize::new(0));
        let closes = events.clone();
        let worker = Worker {
            runner,
            queued: Arc::clone(&queued),
            pending: HashMap::new(),
            due_order: BinaryHeap::new(),
            retries: HashMap::new(),
            restored: HashMap::new(),
            inbox_due: Some(Instant::now()),
            last_change: Instant::now(),
            idle_done: false,
            started: now_unix(),
        };
        let thread = std::thread::Builder::new()
            .name("mnemofs-organizer".into())
            .spawn(move || worker.run(&rx, &events))?;
        Ok(Tasks {
            tx,
            queued,
            closes,
            thread: Some(thread),
            last,
            store,
        })
    }

    /// Something changed at `path` (an external edit, or a writer closed).
    pub fn changed(&self, path: StorePath) {
        let _ = self.tx.send(Message::Changed(path));
    }
}

impl ops::Organizer for Tasks {
    fn dream(&self, level: u8) -> ops::Result<Report> {
        let (reply, wait) = crossbeam_channel::bounded(1);
        let gone = || ops::Error::Unavailable("the organizer has stopped".into());
        self.tx
            .send(Message::Dream(level, reply))
            .map_err(|_| gone())?;
        wait.recv_timeout(DREAM_TIMEOUT).map_err(|e| match e {
            crossbeam_channel::RecvTimeoutError::Timeout => ops::Error::Unavailable(format!(
                "the dream run did not finish within {} s",
                DREAM_TIMEOUT.as_secs()
            )),
            crossbeam_channel::RecvTimeoutError::Disconnected => gone(),
        })
    }

    fn last_reports(&self) -> HashMap<String, Report> {
        self.last.lock().clone()
    }

    fn normalize(&self, paths: Option<Vec<StorePath>>) -> ops::Result<Report> {
        let (reply, wait) = crossbeam_channel::bounded(1);
        let gone = || ops::Error::Unavailable("the organizer has stopped".into());
        self.tx
            .send(Message::Normalize(paths, reply))
            .map_err(|_| gone())?;
        wait.recv_timeout(DREAM_TIMEOUT).map_err(|e| match e {
            crossbeam_channel::RecvTimeoutError::Timeout => ops::Error::Unavailable(format!(
                "normalizing did not finish within {} s",
                DREAM_TIMEOUT.as_secs()
            )),
            crossbeam_channel::RecvTimeoutError::Disconnected => gone(),
        })
    }

    fn restored(&self, path: &StorePath) {
        let state = self.store.stat(path).ok().map(|st| FileState::of(&st));
        let _ = self.tx.send(Message::Restored(path.clone(), state));
    }

    fn queue(&self) -> usize {
        self.queued.load(Ordering::Relaxed) + self.tx.len() + self.closes.len()
    }

    fn run(&self, chore: ops::Chore) -> ops::Result<ops::StepReport> {
        let (reply, wait) = crossbeam_channel::bounded(1);
        let gone = || ops::Error::Unavailable("the organizer has stopped".into());
        self.tx
            .send(Message::Chore(chore, reply))
            .map_err(|_| gone())?;
        wait.recv_timeout(DREAM_TIMEOUT).map_err(|e| match e {
            crossbeam_channel::RecvTimeoutError::Timeout => ops::Error::Unavailable(format!(
                "the organizer did not finish within {} s",
                DREAM_TIMEOUT.as_secs()
            )),
            crossbeam_channel::RecvTimeoutError::Disconnected => gone(),
        })?
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        let _ = self.tx.send(Message::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    runner: Runner,
    /// Shared with [`Tasks`]: how many files wait to be normalized.
    queued: Arc<AtomicUsize>,
    /// Memories to normalize, with the time they become due.
    pending: HashMap<StorePath, Instant>,
    /// `pending` in time order, for the next due one in O(log n); an entry
    /// whose time `pending` no longer holds is stale and skipped.
    due_order: BinaryHeap<Reverse<(Instant, StorePath)>>,
    /// How many times each put-off memory was tried (for the backoff).
    retries: HashMap<StorePath, u32>,
    /// Memories restored to an earlier version, as they were then: left
    /// as they are until written again.
    restored: HashMap<StorePath, FileState>,
    /// When the next inbox item passes its quiet period, if one waits.
    inbox_due: Option<Instant>,
    last_change: Instant,
    /// True once the idle dream ran since the last change.
    idle_done: bool,
    /// Unix seconds when the daemon started: files changed since then
    /// were touched; older ones are left as they are.
    started: i64,
}

impl Worker {
    fn run(mut self, rx: &Receiver<Message>, events: &Receiver<WriteEvent>) {
        crate::background::lower_priority();
        // Only the inbox: a vault's other notes are left as they are until
        // someone writes them through the mount.
        let start = self.runner.organizing.normalize_inbox();
        if start.normalized > 0 || !start.errors.is_empty() {
            tracing::info!(
                "start-up normalization of the inbox: {} memories updated",
                start.normalized
            );
        }
        self.runner.record("normalize", start);
        // What is already due shows in `pending.md` from the start, not
        // from the first interval's run.
        let _ = self.runner.announce_due();
        let settings = self.runner.organizing.settings.clone();
        let mut next_tick = Instant::now() + settings.interval;
        let mut events = events.clone();
        loop {
            self.queued.store(self.pending.len(), Ordering::Relaxed);
            let next_due = self.due_order.peek().map(|Reverse((due, _))| *due);
            let wake = [next_due, self.inbox_due]
                .into_iter()
                .flatten()
                .fold(next_tick, Instant::min);
            let timeout = wake.saturating_duration_since(Instant::now());
            let message = crossbeam_channel::select! {
                recv(rx) -> m => m.map_err(|_| RecvTimeoutError::Disconnected),
                recv(events) -> e => match e {
                    Ok(WriteEvent::Closed(path)) => {
                        self.runner.organizing.record_write(&path);
                        Ok(Message::Written(path))
                    }
                    Err(_) => {
                        // The writer is gone; stop listening to it.
                        events = crossbeam_channel::never();
                        Err(RecvTimeoutError::Timeout)
                    }
                },
                default(timeout) => Err(RecvTimeoutError::Timeout),
            };
            match message {
                Ok(Message::Changed(path))
                    if !normalize::in_inbox(&path) && !self.touched_since_start(&path) =>
                {
                    // Moved here, but not written since the daemon started
                    // (an existing note): the normalizer leaves it alone.
                    self.last_change = Instant::now();
                    self.idle_done = false;
                }
                Ok(Message::Changed(path) | Message::Written(path)) => {
                    self.last_change = Instant::now();
                    self.idle_done = false;
                    if normalize::is_memory_path(&path) {
                        let now = Instant::now();
                        // Rewritten only once writes have stopped for the
                        // quiet period, as an editor autosaving would.
                        let quiet = settings.debounce.max(settings.quiet_period);
                        self.schedule(path.clone(), now + quiet);
                        if normalize::in_inbox(&path) {
                            let due = now + settings.quiet_period;
                            self.inbox_due = Some(self.inbox_due.map_or(due, |d| d.min(due)));
                        }
                    }
                }
                Ok(Message::Normalize(paths, reply)) => {
                    let report = self.runner.normalize(paths);
                    let _ = reply.send(report);
                }
                Ok(Message::Restored(path, state)) => {
                    match state {
                        Some(state) => self.restored.insert(path, state),
                        None => self.restored.remove(&path),
                    };
                }
                Ok(Message::Dream(level, reply)) => {
                    let report = self.runner.dream(level, true);
                    self.inbox_due = Some(Instant::now());
                    let _ = reply.send(report);
                }
                Ok(Message::Chore(chore, reply)) => {
                    let _ = reply.send(self.runner.run(chore));
                }
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    self.runner.organizing.flush_counters();
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            self.normalize_due();
            self.organize_inbox_due();
            if Instant::now() >= next_tick {
                self.runner.dream(1, false);
                let _ = self.runner.announce_due();
                self.runner.organizing.flush_counters();
                next_tick = Instant::now() + settings.interval;
            }
            if let Some(idle) = settings.idle_after
                && !self.idle_done
                && self.last_change.elapsed() >= idle
            {
                self.idle_done = true;
                self.runner.dream(settings.idle_level, false);
            }
        }
    }

    /// Whether `path` was written since the daemon started (a file written
    /// through the mount and then moved, or its folder renamed, shows up
    /// at its new path only as a change the watcher saw).
    fn touched_since_start(&self, path: &StorePath) -> bool {
        self.runner
            .organizing
            .store
            .stat(path)
            .is_ok_and(|st| st.mtime.sec >= self.started)
    }

    /// Whether `path` holds what a restore put there: those bytes were
    /// asked for, so the normalizer leaves them until the next write.
    fn still_as_restored(&mut self, path: &StorePath) -> bool {
        let Some(restored) = self.restored.get(path) else {
            return false;
        };
        let now = self.runner.organizing.store.stat(path).ok();
        if now.is_some_and(|st| FileState::of(&st) == *restored) {
            return true;
        }
        self.restored.remove(path);
        false
    }

    /// Normalizes `path` at `due` (replacing an earlier time).
    fn schedule(&mut self, path: StorePath, due: Instant) {
        self.pending.insert(path.clone(), due);
        self.due_order.push(Reverse((due, path)));
    }

    fn normalize_due(&mut self) {
        let now = Instant::now();
        // In time order; entries whose time was replaced are skipped. Each
        // costs O(log n), so a backlog of thousands stays cheap to serve.
        let mut due = Vec::new();
        while let Some(top) = self.due_order.peek_mut()
            && top.0.0 <= now
        {
            let Reverse((at, path)) = std::collections::binary_heap::PeekMut::pop(top);
            if self.pending.get(&path) == Some(&at) {
                due.push(path);
            }
        }
        if due.is_empty() {
            return;
        }
        let mut report = Report::default();
        for path in due {
            self.pending.remove(&path);
            if self.still_as_restored(&path) {
                continue;
            }
            match self.runner.organizing.normalize_one(&path, &mut report) {
                Outcome::Done => {
                    self.retries.remove(&path);
                }
                Outcome::Busy => {
                    report.retried += 1;
                    // 2 s, then twice as long each time, up to about 2 min.
                    let tries = self.retries.entry(path.clone()).or_insert(0);
                    let pause = Duration::from_secs(2) * (1u32 << (*tries).min(6));
                    *tries += 1;
                    self.schedule(path, now + pause);
                }
            }
        }
        if report != Report::default() {
            self.runner.record("normalize", report);
        }
    }

    /// Moves the inbox items whose quiet period has passed, and notes when
    /// the next one will have.
    fn organize_inbox_due(&mut self) {
        if self.inbox_due.is_none_or(|d| d > Instant::now()) {
            return;
        }
        let (report, next) = self.runner.organizing.organize_inbox(false);
        self.inbox_due = next.map(|wait| Instant::now() + wait);
        if report.organized > 0 || report.expired > 0 || !report.errors.is_empty() {
            self.runner.record("inbox", report);
        }
    }
}
