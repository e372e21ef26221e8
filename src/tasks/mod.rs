//! Background tasks that keep the store tidy while people and agents write.
//!
//! One thread ("mnemofs-organizer") owns all of it, so two tasks never
//! race on one file:
//! - the normalizer adds missing frontmatter shortly after the last writer
//!   closes a memory or an external edit is seen, and to every memory at
//!   start-up ([`normalize`]);
//! - on an interval, and on demand (`mnemofs dream`), the organizer
//!   classifies and moves inbox items, archives expired and decayed
//!   memories, and at deeper levels merges duplicates and extracts
//!   reminders ([`organize`]).
//!
//! Nothing is ever deleted: expiry, decay and merging move files into
//! `archive/` with a note of why. All changes go through the mount
//! ([`rewrite::MountWriter`]) so watchers see them, and every rewrite is
//! compare-and-swap against the bytes read; a conflict is retried later.

pub mod normalize;
pub mod organize;
pub mod rewrite;

use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::config::{Config, NotificationMethod};
use crate::fs::FsEvent;
use crate::index::Index;
use crate::memory::{Category, classify};
use crate::store::{Store, StorePath};
use organize::Organizing;
use rewrite::{MountWriter, Outcome};

/// Where the last report of each task is kept, in the state dir.
pub const REPORTS_FILE: &str = "tasks.json";

/// Picks a category for a memory from its title and body.
pub type Classifier = Arc<dyn Fn(&str, &str) -> Option<Category> + Send + Sync>;

/// The classifier a configuration asks for: built-in rules plus its own.
pub fn classifier(config: &Config) -> Classifier {
    let rules = config.classification.rules.clone();
    Arc::new(move |title: &str, body: &str| classify::classify(title, body, None, &rules))
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
            inbox_ttl: Duration::from_secs(7 * 86_400),
            decay_after: None,
        }
    }
}

/// What one run did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Report {
    /// Dream level run (0 for the normalizer alone).
    pub level: u8,
    /// Unix seconds when the run finished.
    pub finished_at: i64,
    /// Memories given missing frontmatter.
    pub normalized: usize,
    /// Inbox items moved to their category.
    pub organized: usize,
    /// Inbox items archived as expired.
    pub expired: usize,
    /// Memories archived as decayed.
    pub decayed: usize,
    /// Duplicates archived as merged.
    pub merged: usize,
    /// Links redirected from merged copies to the memory kept.
    pub links_redirected: usize,
    /// Wikilinks recorded by id in `links:`.
    pub links_resolved: usize,
    /// Links that name no memory, or several.
    pub links_unresolved: usize,
    /// Reminders created.
    pub reminders: usize,
    /// Files left alone because their frontmatter is malformed.
    pub malformed: usize,
    /// Changes put off because the file was busy; retried later.
    pub retried: usize,
    /// Errors, one line each.
    pub errors: Vec<String>,
}

impl Report {
    fn add(&mut self, other: Report) {
        self.normalized += other.normalized;
        self.organized += other.organized;
        self.expired += other.expired;
        self.decayed += other.decayed;
        self.merged += other.merged;
        self.links_redirected += other.links_redirected;
        self.links_resolved += other.links_resolved;
        self.links_unresolved += other.links_unresolved;
        self.reminders += other.reminders;
        self.malformed += other.malformed;
        self.retried += other.retried;
        self.errors.extend(other.errors);
    }
}

enum Message {
    Changed(StorePath),
    /// A write session through the mount ended.
    Written(StorePath),
    Dream(u8, Sender<Report>),
    Stop,
}

/// The running background tasks.
pub struct Tasks {
    tx: Sender<Message>,
    thread: Option<JoinHandle<()>>,
    last: Arc<Mutex<HashMap<String, Report>>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

impl Tasks {
    /// Starts the organizer thread; it first normalizes every memory.
    pub fn start(
        writer: MountWriter,
        store: Arc<Store>,
        index: Index,
        config: &Config,
        fs_events: Receiver<FsEvent>,
        state_dir: Option<std::path::PathBuf>,
        shared: crate::views::TaskOutputs,
    ) -> std::io::Result<Tasks> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let last = Arc::new(Mutex::new(HashMap::new()));
        let worker = Worker {
            organizing: Organizing {
                writer,
                store,
                index,
                settings: TaskSettings::from_config(config),
                classify: classifier(config),
                config: config.clone(),
            },
            pending_text: shared.pending,
            task_lint: shared.lint,
            notified: std::collections::HashSet::new(),
            last_change: Instant::now(),
            idle_done: false,
            last: Arc::clone(&last),
            pending: HashMap::new(),
            reports_file: state_dir.map(|d| d.join(REPORTS_FILE)),
        };
        let thread = std::thread::Builder::new()
            .name("mnemofs-organizer".into())
            .spawn(move || worker.run(&rx, &fs_events))?;
        Ok(Tasks {
            tx,
            thread: Some(thread),
            last,
        })
    }

    /// Something changed at `path` (an external edit, or a writer closed).
    pub fn changed(&self, path: StorePath) {
        let _ = self.tx.send(Message::Changed(path));
    }

    /// Runs a dream level now and waits for its report.
    pub fn dream(&self, level: u8, timeout: Duration) -> Option<Report> {
        let (reply, wait) = crossbeam_channel::bounded(1);
        self.tx.send(Message::Dream(level, reply)).ok()?;
        wait.recv_timeout(timeout).ok()
    }

    /// The last report of each task ("normalize", "dream-1", ...).
    pub fn last_reports(&self) -> HashMap<String, Report> {
        self.last.lock().clone()
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
    organizing: Organizing,
    last: Arc<Mutex<HashMap<String, Report>>>,
    /// Memories to normalize, with the time they become due.
    pending: HashMap<StorePath, Instant>,
    reports_file: Option<std::path::PathBuf>,
    /// The text of `.mnemofs/pending.md`, shared with the views.
    pending_text: Arc<Mutex<String>>,
    /// Problems found by the tasks, for `.mnemofs/lint`.
    task_lint: Arc<Mutex<Vec<(StorePath, String)>>>,
    /// Due reminders already announced on the desktop.
    notified: std::collections::HashSet<StorePath>,
    last_change: Instant,
    /// True once the idle dream ran since the last change.
    idle_done: bool,
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
            log::debug!("no {} for reminder notifications", command.0)
        }
        Err(e) => log::warn!("reminder notification failed: {e}"),
    }
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Worker {
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
                log::debug!("cannot record task reports: {e}");
            }
        }
        report
    }

    fn run(mut self, rx: &Receiver<Message>, fs_events: &Receiver<FsEvent>) {
        crate::background::lower_priority();
        let start = self.organizing.normalize_all();
        if start.normalized > 0 || !start.errors.is_empty() {
            log::info!(
                "start-up normalization: {} memories updated",
                start.normalized
            );
        }
        self.record("normalize", start);
        let settings = self.organizing.settings.clone();
        let mut next_tick = Instant::now() + settings.interval;
        let mut fs_events = fs_events.clone();
        loop {
            let next_due = self.pending.values().min().copied();
            let wake = next_due.map_or(next_tick, |d| d.min(next_tick));
            let timeout = wake.saturating_duration_since(Instant::now());
            let message = crossbeam_channel::select! {
                recv(rx) -> m => m.map_err(|_| RecvTimeoutError::Disconnected),
                recv(fs_events) -> e => match e {
                    Ok(FsEvent::WriterClosed(path)) => Ok(Message::Written(path)),
                    Err(_) => {
                        // The filesystem is gone; stop listening to it.
                        fs_events = crossbeam_channel::never();
                        Err(RecvTimeoutError::Timeout)
                    }
                },
                default(timeout) => Err(RecvTimeoutError::Timeout),
            };
            match message {
                Ok(Message::Changed(path)) => {
                    self.last_change = Instant::now();
                    self.idle_done = false;
                    if normalize::is_memory_path(&path) {
                        self.pending
                            .insert(path, Instant::now() + settings.debounce);
                    }
                }
                Ok(Message::Written(path)) => {
                    self.organizing.record_write(&path);
                    self.last_change = Instant::now();
                    self.idle_done = false;
                    if normalize::is_memory_path(&path) {
                        self.pending
                            .insert(path, Instant::now() + settings.debounce);
                    }
                }
                Ok(Message::Dream(level, reply)) => {
                    let report = self.dream(level);
                    let _ = reply.send(report);
                }
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => {
                    self.organizing.flush_counters();
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            self.normalize_due();
            if Instant::now() >= next_tick {
                self.dream(1);
                self.announce_due();
                self.organizing.flush_counters();
                next_tick = Instant::now() + settings.interval;
            }
            if let Some(idle) = settings.idle_after
                && !self.idle_done
                && self.last_change.elapsed() >= idle
            {
                self.idle_done = true;
                self.dream(settings.idle_level);
            }
        }
    }

    fn normalize_due(&mut self) {
        let now = Instant::now();
        let due: Vec<StorePath> = self
            .pending
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(p, _)| p.clone())
            .collect();
        if due.is_empty() {
            return;
        }
        let mut report = Report::default();
        for path in due {
            self.pending.remove(&path);
            match self.organizing.normalize_one(&path, &mut report) {
                Outcome::Done => {}
                Outcome::Busy => {
                    report.retried += 1;
                    self.pending.insert(path, now + Duration::from_secs(2));
                }
            }
        }
        if report != Report::default() {
            self.record("normalize", report);
        }
    }

    /// Refreshes `.mnemofs/pending.md` and announces newly due reminders.
    fn announce_due(&mut self) {
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
        *self.pending_text.lock() = text;
    }

    fn dream(&mut self, level: u8) -> Report {
        let level = level.clamp(1, 3);
        let mut report = Report {
            level,
            ..Report::default()
        };
        report.add(self.organizing.organize_inbox());
        report.add(self.organizing.lifecycle());
        if level >= 2 {
            // Duplicates and link targets are found through the index: let
            // it catch up with the moves and rewrites just made.
            if !self.organizing.index.wait_idle(Duration::from_secs(120)) {
                report
                    .errors
                    .push("the index did not catch up; links may be reported unresolved".into());
            }
            report.add(self.organizing.consolidate());
            let mut lint = Vec::new();
            report.add(self.organizing.resolve_links(&mut lint));
            report.links_unresolved = lint.len();
            *self.task_lint.lock() = lint;
        }
        if level >= 3 {
            report.add(self.organizing.reminders());
            self.announce_due();
        }
        log::info!(
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
