//! The organizer's jobs: normalize, sort the inbox, archive, merge.
//!
//! Reads go to the store directly (they change nothing and must not count
//! as an agent's access); every change goes through the writer (through
//! the mount when a daemon serves the store). Paths
//! written by someone stay valid: only inbox items are moved into the
//! tree, and anything else that leaves its place goes to `archive/`, with
//! `archived_reason` and `archived_at` saying why and when.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::meaning::{self, CategoryPrototypes, Meaning};
use super::normalize::{self, Plan, in_inbox, is_memory_path};
use super::{Report, Skipped, TaskSettings, now_unix};
use crate::config::Config;
use crate::index::Index;
use crate::memory::classify::{self, FiledBy, Note};
use crate::memory::reminders;
use crate::memory::{self, Category, Memory};
use crate::ops::{self, Filed, Outcome, Writer};
use crate::store::counters::CounterStore;
use crate::store::{FileKind, Stat, Store, StorePath};

/// How soon an inbox item that was open for writing is tried again.
const BUSY_RETRY: Duration = Duration::from_secs(2);

/// Inbox items moved at once.
const INBOX_WORKERS: usize = 4;

/// How long after its time a reminder is still made: a note written in
/// the evening about the next morning, read by a dream after that, is
/// announced late rather than never. Older times narrate the past.
const REMINDER_LATE_KEPT: Duration = Duration::from_secs(86_400);

/// The inbox folder.
fn inbox() -> StorePath {
    // "inbox" is a single valid name, which `StorePath::new` always takes.
    StorePath::new("inbox").unwrap_or_default()
}

/// Everything the organizer works with.
pub(crate) struct Organizing {
    pub(crate) writer: Arc<dyn Writer>,
    pub(crate) counters: Option<Arc<CounterStore>>,
    pub(crate) store: Arc<Store>,
    pub(crate) index: Index,
    pub(crate) settings: TaskSettings,
    pub(crate) config: Config,
    /// The categories' prototypes, embedded once a note needs them and
    /// the index has a model (see [`meaning`]).
    pub(crate) prototypes: Mutex<Option<Arc<CategoryPrototypes>>>,
    /// The earlier versions kept, where they are: a reminder deleted
    /// since it was made is not made again.
    pub(crate) history: Option<Arc<crate::store::history::History>>,
}

/// A file-name-safe version of a stem.
fn slug(stem: &str) -> String {
    let s: String = stem
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    s.trim_matches('-').to_string()
}

fn age(st: &Stat) -> Duration {
    let mtime = UNIX_EPOCH + Duration::from_secs(st.mtime.sec.max(0) as u64);
    SystemTime::now().duration_since(mtime).unwrap_or_default()
}

/// A reminder's title as `notify` shows it: its own, else, for a note
/// filed under `reminders/` with neither a title nor a heading (its file
/// name would say nothing), what its first line is about ("Dentist" for
/// "Remind me: dentist tomorrow at 3pm").
fn shown_title(path: &StorePath, parsed: &memory::Memory, text: &str) -> String {
    if parsed.frontmatter.title.is_some() || parsed.title != stem(path) {
        return parsed.title.clone();
    }
    let first = parsed
        .body(text)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    Some(reminders::subject(first))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| parsed.title.clone())
}

/// Why a note's frontmatter cannot be read, in one phrase.
fn unreadable(problem: &memory::LintIssue) -> String {
    let message = problem
        .message
        .strip_prefix("malformed frontmatter: ")
        .unwrap_or(&problem.message);
    match problem.line {
        Some(line) => format!("malformed frontmatter, line {line}: {message}"),
        None => format!("malformed frontmatter: {message}"),
    }
}

fn stem(path: &StorePath) -> String {
    Path::new(path.as_path())
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn name(path: &StorePath) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Organizing {
    /// Every memory below `dir` (not in dot-folders or `archive/`), but
    /// conflict copies: the organizer leaves them as sync made them.
    fn memories_under(&self, dir: &StorePath) -> Vec<(StorePath, Stat)> {
        self.files_under(dir, |p| {
            is_memory_path(p) && !memory::conflict::is_conflict(&p.to_string())
        })
    }

    /// The names of the files under the store that are not memories
    /// (images, PDFs: what notes embed), in lowercase, outside `archive/`
    /// and dot-folders.
    fn attachment_names(&self) -> HashSet<String> {
        self.files_under(&StorePath::root(), |p| !is_memory_path(p))
            .into_iter()
            .filter_map(|(p, _)| Some(p.file_name()?.to_string_lossy().to_lowercase()))
            .collect()
    }

    /// The files under `dir` that `keep` takes, outside `archive/` and
    /// dot-folders, by path.
    fn files_under(&self, dir: &StorePath, keep: fn(&StorePath) -> bool) -> Vec<(StorePath, Stat)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = self.store.read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let Some(path) = dir.join(&entry.name) else {
                    continue;
                };
                let hidden = entry.name.as_encoded_bytes().first() == Some(&b'.');
                match entry.kind {
                    FileKind::Directory
                        if !(hidden || dir.is_root() && entry.name == "archive") =>
                    {
                        stack.push(path)
                    }
                    FileKind::File if keep(&path) => {
                        if let Ok(st) = self.store.stat(&path) {
                            out.push((path, st));
                        }
                    }
                    _ => {}
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn read_text(&self, path: &StorePath) -> Option<(Vec<u8>, String)> {
        let bytes = self.store.read(path).ok()?;
        if memory::is_probably_binary(&bytes) {
            return None;
        }
        let text = String::from_utf8(bytes.clone()).ok()?;
        Some((bytes, text))
    }

    /// Counts a finished write session: version, content hash, time.
    pub(crate) fn record_write(&self, path: &StorePath) {
        if let (Some(counters), Ok(bytes)) = (self.counters.as_ref(), self.store.read(path)) {
            counters.record_write(path, &bytes, now_unix());
        }
    }

    /// Saves the counters if they changed (never from a FUSE handler).
    pub(crate) fn flush_counters(&self) {
        if let Some(Err(e)) = self.counters.as_ref().map(|c| c.flush()) {
            tracing::warn!("cannot save the access counters: {e}");
        }
    }

    fn access_count(&self, path: &StorePath) -> u64 {
        self.counters
            .as_ref()
            .map_or(0, |c| c.get(path).access_count)
    }

    /// Normalizes every memory (start-up).
    pub(crate) fn normalize_inbox(&self) -> Report {
        let mut report = Report::default();
        let inbox = inbox();
        for (path, _) in self.memories_under(&inbox) {
            if self.normalize_one(&path, &mut report) == Outcome::Busy {
                report.retried += 1;
            }
        }
        report
    }

    /// Adds missing frontmatter to `paths`, or to every memory outside
    /// `archive/` (`mnemofs normalize`): notes nobody wrote since the
    /// mount included, each with the id the index shows for it.
    pub(crate) fn normalize_all(&self, paths: Option<Vec<StorePath>>) -> Report {
        let mut report = Report::default();
        let paths = paths.unwrap_or_else(|| {
            self.memories_under(&StorePath::root())
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        });
        for path in paths {
            if self.normalize_one(&path, &mut report) == Outcome::Busy {
                report.retried += 1;
                report.skipped.push(Skipped {
                    path: path.to_string(),
                    reason: "open for writing; the normalizer takes it once it is closed".into(),
                });
            }
        }
        report
    }

    /// Whether `path` is in a git work tree of its own, below the store's
    /// root (a project's repository kept among the memories): its files
    /// are the repository's, and a rewrite would leave it dirty.
    fn in_nested_repository(&self, path: &StorePath) -> bool {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.is_root()) {
            if d.join(std::ffi::OsStr::new(".git"))
                .is_some_and(|git| self.store.stat(&git).is_ok())
            {
                return true;
            }
            dir = d.parent();
        }
        false
    }

    /// Adds missing frontmatter to one memory. A conflict copy is left as
    /// sync made it: it waits for someone to resolve it, and a change of
    /// ours would count as an edit that brings it back once deleted.
    pub(crate) fn normalize_one(&self, path: &StorePath, report: &mut Report) -> Outcome {
        if !is_memory_path(path)
            || self.in_nested_repository(path)
            || memory::conflict::is_conflict(&path.to_string())
        {
            return Outcome::Done;
        }
        let Ok(st) = self.store.stat(path) else {
            return Outcome::Done;
        };
        if st.kind != FileKind::File {
            return Outcome::Done;
        }
        let Some((bytes, text)) = self.read_text(path) else {
            return Outcome::Done;
        };
        if text.trim().is_empty() {
            // A new, empty file: someone is about to type into it.
            return Outcome::Done;
        }
        if let Some(new) = self.renewed_id_of_a_copy(path, &st, &text) {
            return match self.writer.replace(path, &bytes, new.as_bytes()) {
                Ok(Outcome::Done) => {
                    report.normalized += 1;
                    Outcome::Done
                }
                Ok(Outcome::Busy) => Outcome::Busy,
                Err(e) => {
                    report.errors.push(format!("normalize {path}: {e}"));
                    Outcome::Done
                }
            };
        }
        let parsed = memory::parse(&stem(path), &text);
        let classify = |_: &str, _: &str| self.category_of(path, &parsed, &text).map(|f| f.0);
        let id = || self.id_for(path);
        let mut plan = normalize::plan(path, &text, st.mtime.sec, &classify, &id);
        if self.config.frontmatter.write_counters {
            plan = self.with_counters(path, &text, plan);
        }
        match plan {
            Plan::Complete => Outcome::Done,
            Plan::Malformed(reason) => {
                tracing::debug!("not normalizing {path}: {reason}");
                report.malformed += 1;
                Outcome::Done
            }
            Plan::Rewrite(new) => match self.writer.replace(path, &bytes, new.as_bytes()) {
                Ok(Outcome::Done) => {
                    report.normalized += 1;
                    Outcome::Done
                }
                Ok(Outcome::Busy) => Outcome::Busy,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) => {
                    // Tried again, with a growing pause, once space is back.
                    report
                        .errors
                        .push(format!("normalize {path}: {e}; will retry"));
                    Outcome::Busy
                }
                Err(e) => {
                    report.errors.push(format!("normalize {path}: {e}"));
                    Outcome::Done
                }
            },
        }
    }

    /// The id a memory without one gets: the one the index shows for it
    /// (so it never changes once seen), or a random one if the index
    /// cannot say.
    fn id_for(&self, path: &StorePath) -> String {
        self.index
            .id_for_untouched(&self.store, path)
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
    }

    /// The category a memory names or the classifier finds for it, from
    /// its frontmatter, tags, folders, the notes linking to it, its
    /// meaning and its words (see [`meaning::filing`]), and what decided
    /// it. `None` when nothing places it.
    fn category_of(
        &self,
        path: &StorePath,
        parsed: &Memory,
        text: &str,
    ) -> Option<(Category, FiledBy)> {
        let linked_from = self
            .index
            .backlinks(&stem(path))
            .iter()
            .filter(|p| *p != path)
            .count();
        let shown = path.to_string();
        // Traditional characters read as the simplified ones the rules and
        // heads know (the same offsets, so `parsed` still fits).
        let text = crate::memory::hanzi::simplified_text(text);
        let note = Note::of(parsed, &text, &shown, linked_from);
        let rules = &self.config.classification.rules;
        // What a note says about itself needs no model (nor the
        // prototypes embedded).
        if let Some(filed) = classify::said_by_note_why(&note) {
            return Some(filed);
        }
        let Some(prototypes) = self.prototypes() else {
            return classify::filing(&note, rules);
        };
        let embed = |text: &str| self.index.embed_texts(&[text])?.pop();
        meaning::filing(
            &note,
            rules,
            Some(Meaning {
                prototypes: &prototypes,
                embed: &embed,
            }),
        )
    }

    /// The categories' prototypes, embedded the first time a note needs
    /// them; `None` while the index has no model.
    fn prototypes(&self) -> Option<Arc<CategoryPrototypes>> {
        let mut kept = self.prototypes.lock();
        if kept.is_none() {
            *kept = CategoryPrototypes::new(|texts| self.index.embed_texts(texts)).map(Arc::new);
        }
        kept.clone()
    }

    /// `text` with a fresh id when `path` is a copy of another memory
    /// (`cp a.md b.md`) that still has the same id. The copy is the one
    /// the index saw arrive with an id the other already had, whichever of
    /// the two was edited since; when the index saw both arrive together,
    /// the one whose status changed later.
    fn renewed_id_of_a_copy(&self, path: &StorePath, st: &Stat, text: &str) -> Option<String> {
        let id = memory::parse("", text).frontmatter.id?;
        let twins: Vec<(StorePath, Stat)> = self
            .index
            .paths_with_id(&id)
            .into_iter()
            .filter(|other| other != path)
            .filter_map(|other| {
                let o = self.store.stat(&other).ok()?;
                let (_, t) = self.read_text(&other)?;
                (memory::parse("", &t).frontmatter.id.as_deref() == Some(id.as_str()))
                    .then_some((other, o))
            })
            .collect();
        if twins.is_empty() {
            return None;
        }
        let copy = if self.index.came_as_copy(path, &id) {
            true
        } else if twins.iter().any(|(o, _)| self.index.came_as_copy(o, &id)) {
            false
        } else {
            twins.iter().any(|(_, o)| o.ctime < st.ctime)
        };
        if !copy {
            return None;
        }
        let fresh = uuid::Uuid::new_v4().to_string();
        tracing::info!("{path} is a copy of a memory with id {id}: it gets the id {fresh}");
        memory::set_fields(text, &[("id", fresh)]).ok().flatten()
    }

    /// Adds the volatile counters to the frontmatter (the opt-in mode for
    /// tools that expect them in the file).
    fn with_counters(&self, path: &StorePath, text: &str, plan: Plan) -> Plan {
        let Some(counters) = &self.counters else {
            return plan;
        };
        let fields = counters.frontmatter_fields(path);
        let base = match &plan {
            Plan::Malformed(_) => return plan,
            Plan::Complete => text,
            Plan::Rewrite(new) => new.as_str(),
        };
        let owned: Vec<(&str, String)> = fields.into_iter().collect();
        match memory::set_fields(base, &owned) {
            Ok(Some(new)) => Plan::Rewrite(new),
            Ok(None) => plan,
            Err(e) => Plan::Malformed(e.to_string()),
        }
    }

    /// Sets frontmatter fields on a file the organizer just moved.
    fn set_fields(&self, path: &StorePath, fields: &[(&str, String)], report: &mut Report) {
        self.edit(path, report, |text| memory::set_fields(text, fields));
    }

    /// Takes the one-line field `key` out of the memory at `path`.
    fn remove_field(&self, path: &StorePath, key: &str, report: &mut Report) {
        self.edit(path, report, |text| memory::remove_field(text, key));
    }

    /// Rewrites the memory at `path` as `change` says (`None`: as it is).
    fn edit(
        &self,
        path: &StorePath,
        report: &mut Report,
        change: impl FnOnce(&str) -> Result<Option<String>, memory::EditError>,
    ) {
        let Some((bytes, text)) = self.read_text(path) else {
            return;
        };
        match change(&text) {
            Ok(Some(new)) => match self.writer.replace(path, &bytes, new.as_bytes()) {
                Ok(Outcome::Done) => {}
                Ok(Outcome::Busy) => report.retried += 1,
                Err(e) => report.errors.push(format!("update {path}: {e}")),
            },
            Ok(None) => {}
            Err(e) => report.errors.push(format!("update {path}: {e}")),
        }
    }

    /// A free path in `dir` for a file named `name`: `name`, then
    /// `stem-2.ext`, `stem-3.ext`, ...
    fn free_name(&self, dir: &StorePath, name: &str) -> Option<StorePath> {
        let (stem, ext) = match name.rfind('.') {
            Some(i) if i > 0 => name.split_at(i),
            _ => (name, ""),
        };
        (1..10_000).find_map(|n| {
            let candidate = if n == 1 {
                name.to_string()
            } else {
                format!("{stem}-{n}{ext}")
            };
            let path = dir.join(std::ffi::OsStr::new(&candidate))?;
            self.store.stat(&path).is_err().then_some(path)
        })
    }

    /// Moves `from` into `dir` under a free name; returns where it went.
    fn move_into(&self, from: &StorePath, dir: &str, report: &mut Report) -> Option<StorePath> {
        let dir = StorePath::new(dir)?;
        // Inbox items move in parallel: another may take the free name
        // between the look and the move, which then fails with EEXIST.
        let mut tries = 3;
        loop {
            let to = self.free_name(&dir, &name(from))?;
            match self.writer.move_to(from, &to) {
                Ok(Outcome::Done) => return Some(to),
                Ok(Outcome::Busy) => {
                    report.retried += 1;
                    return None;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries > 1 => {
                    tries -= 1;
                }
                Err(e) => {
                    report.errors.push(format!("move {from} to {to}: {e}"));
                    return None;
                }
            }
        }
    }

    fn archive(
        &self,
        from: &StorePath,
        folder: &str,
        reason: &str,
        extra: &[(&str, String)],
        report: &mut Report,
    ) -> bool {
        let Some(to) = self.move_into(from, &format!("archive/{folder}"), report) else {
            return false;
        };
        let mut fields = vec![
            ("phase", "archived".to_string()),
            ("archived_reason", reason.to_string()),
            ("archived_at", memory::format_timestamp(now_unix())),
        ];
        fields.extend(extra.iter().cloned());
        self.set_fields(&to, &fields, report);
        true
    }

    /// Level 1: classifies inbox items and moves them to `<category>/`;
    /// unclassifiable ones stay, and expire after the TTL. `asked`: a
    /// person or agent asked for this run, so every item not open for
    /// writing is classified; on the schedule, only items past their quiet
    /// period (or read often enough to be wanted now). Also returns how
    /// long until the next waiting item can be tried.
    pub(crate) fn organize_inbox(&self, asked: bool) -> (Report, Option<Duration>) {
        let inbox = inbox();
        let items = self.memories_under(&inbox);
        // Each move waits on an fsync; a few at once keep the disk busy.
        let workers = INBOX_WORKERS.min(items.len().div_ceil(64)).max(1);
        let work = |w: usize| {
            let mut report = Report::default();
            let mut next: Option<Duration> = None;
            for (path, st) in items.iter().skip(w).step_by(workers) {
                if let Some(wait) = self.organize_item(path, st, asked, &mut report) {
                    next = Some(next.map_or(wait, |n| n.min(wait)));
                }
            }
            (report, next)
        };
        let outcomes: Vec<(Report, Option<Duration>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (1..workers)
                .map(|w| {
                    std::thread::Builder::new()
                        .name("mnemofs-inbox".into())
                        .spawn_scoped(scope, move || work(w))
                })
                .collect();
            // This thread takes the first share, and any a thread could
            // not be started for.
            let mut outcomes = vec![work(0)];
            for (w, handle) in (1..workers).zip(handles) {
                outcomes.push(match handle {
                    Ok(h) => h.join().unwrap_or_else(|_| {
                        let mut failed = Report::default();
                        failed.errors.push("an inbox worker panicked".into());
                        (failed, None)
                    }),
                    Err(_) => work(w),
                });
            }
            outcomes
        });
        let mut report = Report::default();
        let mut next: Option<Duration> = None;
        for (part, wait) in outcomes {
            report.add(part);
            if let Some(wait) = wait {
                next = Some(next.map_or(wait, |n| n.min(wait)));
            }
        }
        report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        (report, next)
    }

    /// Level 1 for one inbox item. Returns how long until it can be tried
    /// again, if it waits for something.
    fn organize_item(
        &self,
        path: &StorePath,
        st: &Stat,
        asked: bool,
        report: &mut Report,
    ) -> Option<Duration> {
        let age = age(st);
        let skip = |report: &mut Report, reason: String| {
            report.skipped.push(Skipped {
                path: path.to_string(),
                reason,
            });
        };
        if self.writer.is_busy(path) {
            skip(report, "open for writing".into());
            return Some(BUSY_RETRY);
        }
        // A memory read often enough is organized at once ("upgrade").
        let wanted = self
            .settings
            .upgrade_access_count
            .is_some_and(|n| self.access_count(path) >= n);
        if !asked && !wanted && age < self.settings.quiet_period {
            let left = self.settings.quiet_period - age;
            skip(
                report,
                format!(
                    "written {} s ago; waits {} s more for quiet",
                    age.as_secs(),
                    left.as_secs_f64().ceil() as u64
                ),
            );
            return Some(left);
        }
        let Some((bytes, text)) = self.read_text(path) else {
            skip(report, "not a UTF-8 text file".into());
            return None;
        };
        let parsed = memory::parse(&stem(path), &text);
        if let Some(problem) = parsed.frontmatter_problem() {
            report.malformed += 1;
            skip(report, format!("{}; left as it is", unreadable(problem)));
            return None;
        }
        let category = self
            .category_of(path, &parsed, &text)
            .map(|(c, by)| (c, by.to_string()))
            .or_else(|| self.by_default());
        match category {
            Some((c, by)) if c != Category::Inbox => {
                if let Some(to) = self.move_into(path, c.as_str(), report) {
                    self.writer.redirect(path, &to, self.settings.grace_period);
                    self.file_as_organized(&to, &bytes, &text, c, st.mtime.sec, report);
                    report.organized += 1;
                    report.filed.push(Filed {
                        from: path.to_string(),
                        to: to.to_string(),
                        by,
                    });
                }
            }
            _ if age >= self.settings.inbox_ttl && super::has_expired(&parsed.frontmatter) => {
                let reason = format!(
                    "expired: a capture untouched in the inbox for {} days",
                    self.settings.inbox_ttl.as_secs() / 86_400
                );
                if self.archive(path, "expired", &reason, &[], report) {
                    report.expired += 1;
                }
            }
            _ => skip(report, "no category matched; stays in the inbox".into()),
        }
        None
    }

    /// Moves one inbox item into `category` (else its frontmatter's, else
    /// the classifier's) now, whatever its age: memory-cli's `upgrade`.
    /// Returns where it went, or why it stayed.
    pub(crate) fn upgrade(
        &self,
        path: &StorePath,
        category: Option<Category>,
        report: &mut Report,
    ) -> Result<StorePath, ops::Error> {
        let asked = category.map(|c| (c, "the category asked for".to_string()));
        self.file_now(path, asked, report)
    }

    /// [`Organizing::upgrade`], with the reason a category was given.
    fn file_now(
        &self,
        path: &StorePath,
        category: Option<(Category, String)>,
        report: &mut Report,
    ) -> Result<StorePath, ops::Error> {
        let shown = || path.to_string();
        if self.writer.is_busy(path) {
            return Err(ops::Error::Conflict { path: shown() });
        }
        let st = self
            .store
            .stat(path)
            .map_err(|e| ops::Error::io(shown(), e))?;
        let (bytes, text) = self
            .read_text(path)
            .ok_or_else(|| ops::Error::NotText { path: shown() })?;
        let parsed = memory::parse(&stem(path), &text);
        if let Some(problem) = parsed.frontmatter_problem() {
            return Err(ops::Error::InvalidInput(format!(
                "{path}: {}; fix it first",
                unreadable(problem)
            )));
        }
        let (category, by) = category
            .filter(|(c, _)| *c != Category::Inbox)
            .or_else(|| {
                self.category_of(path, &parsed, &text)
                    .map(|(c, by)| (c, by.to_string()))
            })
            .or_else(|| self.by_default())
            .filter(|(c, _)| *c != Category::Inbox)
            .ok_or_else(|| {
                ops::Error::InvalidInput(format!(
                    "no category matched {path}; name one with --category"
                ))
            })?;
        let Some(to) = self.move_into(path, category.as_str(), report) else {
            return Err(match report.errors.pop() {
                Some(e) => ops::Error::Unavailable(e),
                None => ops::Error::Conflict { path: shown() },
            });
        };
        self.writer.redirect(path, &to, self.settings.grace_period);
        self.file_as_organized(&to, &bytes, &text, category, st.mtime.sec, report);
        report.organized += 1;
        report.filed.push(Filed {
            from: path.to_string(),
            to: to.to_string(),
            by,
        });
        Ok(to)
    }

    /// `classification.default_category`, for a note nothing placed.
    fn by_default(&self) -> Option<(Category, String)> {
        self.config
            .classification
            .default_category
            .map(|c| (c, "classification.default_category".to_string()))
    }

    /// Records a moved inbox item as organized in one rewrite: its phase
    /// and category, and the id and creation time it may still lack.
    fn file_as_organized(
        &self,
        path: &StorePath,
        bytes: &[u8],
        text: &str,
        category: Category,
        created: i64,
        report: &mut Report,
    ) {
        let fields = [
            ("phase", "organized".to_string()),
            ("category", category.as_str().to_string()),
        ];
        // A capture's `expires_at` was the inbox's: filed, it stays. (One
        // that cannot be taken out alone, a multi-line value, stays too.)
        let with_fields = memory::set_fields(text, &fields).map(|set| {
            let set = set.unwrap_or_else(|| text.to_string());
            memory::remove_field(&set, "expires_at")
                .ok()
                .flatten()
                .unwrap_or(set)
        });
        let with_fields = match with_fields {
            Ok(new) => new,
            Err(e) => {
                report.errors.push(format!("update {path}: {e}"));
                return;
            }
        };
        let id = || self.id_for(path);
        let unclassified = |_: &str, _: &str| None;
        let new = match normalize::plan(path, &with_fields, created, &unclassified, &id) {
            Plan::Rewrite(new) => new,
            Plan::Complete | Plan::Malformed(_) => with_fields,
        };
        if new.as_bytes() == bytes {
            return;
        }
        match self.writer.replace(path, bytes, new.as_bytes()) {
            Ok(Outcome::Done) => {}
            Ok(Outcome::Busy) => report.retried += 1,
            Err(e) => report.errors.push(format!("update {path}: {e}")),
        }
    }

    /// Archives organized memories untouched for longer than the decay
    /// threshold (off unless configured).
    pub(crate) fn lifecycle(&self) -> Report {
        let mut report = Report::default();
        let Some(after) = self.settings.decay_after else {
            return report;
        };
        for (path, st) in self.memories_under(&StorePath::root()) {
            if in_inbox(&path) || age(&st) < after || self.writer.is_busy(&path) {
                continue;
            }
            let malformed = self
                .read_text(&path)
                .is_none_or(|(_, text)| memory::parse("", &text).has_malformed_frontmatter());
            if malformed {
                report.malformed += 1;
                continue;
            }
            let reason = format!("decayed: unused for {} days", after.as_secs() / 86_400);
            if self.archive(&path, "decayed", &reason, &[], &mut report) {
                report.decayed += 1;
            }
        }
        report
    }

    /// Level 2: merges exact duplicates (same body up to whitespace, same
    /// scope: a merge never crosses scopes, nor tells one agent of
    /// another's memory). The oldest copy is kept; the others go to
    /// `archive/merged/` with `merged_into: <id>`, and links to them are
    /// pointed at the one kept.
    pub(crate) fn consolidate(&self) -> Report {
        let mut report = Report::default();
        type Copies = Vec<(StorePath, Stat, String)>;
        let mut groups: HashMap<(String, String), Copies> = HashMap::new();
        for (path, st) in self.memories_under(&StorePath::root()) {
            let Some((_, text)) = self.read_text(&path) else {
                continue;
            };
            // A memory that cannot be annotated is never archived.
            let parsed = memory::parse("", &text);
            if parsed.has_malformed_frontmatter() || super::is_ingested(&parsed.frontmatter) {
                continue;
            }
            let scope = agent_scope(parsed.frontmatter.scope.as_deref()).unwrap_or_default();
            let body = memory::normalized_body(&text);
            if body.is_empty() {
                continue;
            }
            groups
                .entry((scope, body))
                .or_default()
                .push((path, st, text));
        }
        for (_, mut copies) in groups.into_iter().filter(|(_, g)| g.len() > 1) {
            copies.sort_by(|a, b| (a.1.mtime, &a.0).cmp(&(b.1.mtime, &b.0)));
            let (kept, _, kept_text) = &copies[0];
            let kept_id = memory::parse(&stem(kept), kept_text)
                .frontmatter
                .id
                .unwrap_or_default();
            for (dup, _, _) in &copies[1..] {
                if self.writer.is_busy(dup) {
                    report.retried += 1;
                    continue;
                }
                let linkers = self.index.backlinks(&stem(dup));
                let names = self.names_of(dup);
                let reason = format!("duplicate of {kept}");
                let extra = [(
                    "merged_into",
                    if kept_id.is_empty() {
                        kept.to_string()
                    } else {
                        kept_id.clone()
                    },
                )];
                if !self.archive(dup, "merged", &reason, &extra, &mut report) {
                    continue;
                }
                report.merged += 1;
                for linker in linkers.iter().filter(|l| *l != dup) {
                    report.links_redirected +=
                        self.redirect_links(linker, &names, &stem(kept), &mut report);
                }
            }
        }
        report
    }

    /// Level 2: records the id of every memory a `[[wikilink]]` names in
    /// the linking memory's `links:` list, so the link survives the target
    /// being renamed. Links that name nothing, or several memories, are
    /// reported (returned as lint lines for `.mnemofs/lint`).
    pub(crate) fn resolve_links(&self, lint: &mut Vec<(StorePath, String)>) -> Report {
        let mut report = Report::default();
        // Each target's id and scope, read once.
        let mut targets_read: HashMap<StorePath, (Option<String>, Option<String>)> = HashMap::new();
        let mut read_target = |path: &StorePath| {
            targets_read
                .entry(path.clone())
                .or_insert_with(|| match self.read_text(path) {
                    Some((_, t)) => {
                        let f = memory::parse(&stem(path), &t).frontmatter;
                        (f.id, f.scope)
                    }
                    None => (None, None),
                })
                .clone()
        };
        let attachments = std::cell::OnceCell::new();
        // `![[atlas.png]]` names a file that came along, not a memory.
        let an_attachment = |target: &str| {
            let name = target.rsplit('/').next().unwrap_or(target).to_lowercase();
            Path::new(&name)
                .extension()
                .is_some_and(|e| !e.eq_ignore_ascii_case("md"))
                && attachments
                    .get_or_init(|| self.attachment_names())
                    .contains(&name)
        };
        for (path, _) in self.memories_under(&StorePath::root()) {
            let Some((bytes, text)) = self.read_text(&path) else {
                continue;
            };
            let parsed = memory::parse(&stem(&path), &text);
            if parsed.has_malformed_frontmatter() {
                continue;
            }
            let mut found = Vec::new();
            for link in &parsed.links {
                if link.kind == memory::LinkKind::FrontmatterId {
                    continue;
                }
                // A memory of another scope is not there for this one: its
                // id written here would tell this scope's readers of it.
                let mut targets = self.index.resolve_link(&link.target);
                targets.retain(|t| {
                    scope_sees(
                        parsed.frontmatter.scope.as_deref(),
                        read_target(t).1.as_deref(),
                    )
                });
                match targets.as_slice() {
                    [] if an_attachment(&link.target) => {}
                    [] => lint.push((path.clone(), format!("unresolved link [[{}]]", link.target))),
                    [one] if *one != path => {
                        if let (Some(id), _) = read_target(one) {
                            found.push(id);
                        }
                    }
                    [_] => {}
                    many => lint.push((
                        path.clone(),
                        format!(
                            "ambiguous link [[{}]] names {} memories",
                            link.target,
                            many.len()
                        ),
                    )),
                }
            }
            found.retain(|id| !parsed.frontmatter.links.contains(id));
            found.dedup();
            if found.is_empty() {
                continue;
            }
            match memory::add_to_list_field(&text, "links", &found) {
                Ok(Some(new)) => match self.writer.replace(&path, &bytes, new.as_bytes()) {
                    Ok(Outcome::Done) => report.links_resolved += found.len(),
                    Ok(Outcome::Busy) => report.retried += 1,
                    Err(e) => report.errors.push(format!("resolve links in {path}: {e}")),
                },
                Ok(None) => {}
                Err(e) => lint.push((path.clone(), format!("cannot record resolved links: {e}"))),
            }
        }
        report
    }

    /// Every name a wikilink may use for the memory at `path`: its stem,
    /// file name, path (with and without `.md`), title and aliases, in
    /// lower case.
    fn names_of(&self, path: &StorePath) -> Vec<String> {
        let full = path.to_string();
        let mut names = vec![
            stem(path),
            name(path),
            full.strip_suffix(".md").unwrap_or(&full).to_string(),
            full.clone(),
        ];
        if let Some((_, text)) = self.read_text(path) {
            let parsed = memory::parse(&stem(path), &text);
            names.push(parsed.title.clone());
            names.extend(parsed.frontmatter.aliases.iter().cloned());
        }
        names.retain(|n| !n.trim().is_empty());
        names.iter().map(|n| n.trim().to_lowercase()).collect()
    }

    /// Rewrites `[[old` to `[[new` in one memory, for each name in `olds`
    /// (lower case); returns links changed.
    fn redirect_links(
        &self,
        path: &StorePath,
        olds: &[String],
        new: &str,
        report: &mut Report,
    ) -> usize {
        let Some((bytes, text)) = self.read_text(path) else {
            return 0;
        };
        let mut count = 0;
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.find("[[") {
            let (head, tail) = rest.split_at(i + 2);
            out.push_str(head);
            let target_end = tail.find(['|', '#', ']']).unwrap_or(tail.len());
            if olds.contains(&tail[..target_end].trim().to_lowercase()) {
                out.push_str(new);
                rest = &tail[target_end..];
                count += 1;
            } else {
                rest = tail;
            }
        }
        out.push_str(rest);
        if count == 0 {
            return 0;
        }
        match self.writer.replace(path, &bytes, out.as_bytes()) {
            Ok(Outcome::Done) => count,
            Ok(Outcome::Busy) => {
                report.retried += 1;
                0
            }
            Err(e) => {
                report.errors.push(format!("redirect links in {path}: {e}"));
                0
            }
        }
    }

    /// Level 3: turns time expressions in memories ("tomorrow 3pm",
    /// "明天下午三点") into memories in `reminders/` with `expires_at`,
    /// titled by what their sentence is about. Dates count from when the
    /// note was written ([`reminders::written_at`]), so running again on
    /// another day finds the same ones; names are derived from the note's
    /// id and the phrase, so running again creates nothing twice. An inbox
    /// item with a reminder is then filed: where the classifier puts it,
    /// else (a task excepted) under `date/`. `asked`: someone asked for
    /// this run, so an inbox item is filed whatever its age.
    pub(crate) fn reminders(&self, asked: bool) -> Report {
        let mut report = Report::default();
        let now = now_unix();
        let tz = self.config.resolved_timezone.clone();
        for (path, st) in self.memories_under(&StorePath::root()) {
            let Some((_, text)) = self.read_text(&path) else {
                continue;
            };
            let parsed = memory::parse(&stem(&path), &text);
            // A habit recurs ("runs on Tuesday and Thursday mornings"): a
            // one-off reminder of it would be wrong after its first day.
            let category = parsed
                .frontmatter
                .category
                .or_else(|| Category::of_folder(path.as_path()));
            if category == Some(Category::Habits) {
                continue;
            }
            let written =
                reminders::written_at(&parsed.frontmatter, &stem(&path), st.mtime.sec, &tz);
            let late = now - REMINDER_LATE_KEPT.as_secs() as i64;
            let found: Vec<reminders::Reminder> =
                reminders::extract_reminders(parsed.body(&text), written, &tz)
                    .into_iter()
                    .filter(|r| r.due >= late)
                    .collect();
            let a_reminder = parsed
                .frontmatter
                .kind
                .as_deref()
                .is_some_and(|k| k.trim().eq_ignore_ascii_case("reminder"));
            if a_reminder && parsed.frontmatter.extra.contains_key("due_at") {
                // A reminder with its time (as this task makes them),
                // wherever it is now (done with, say): its words are its
                // source's, not a new note's.
                continue;
            }
            let mut found = found;
            if path.as_path().starts_with("reminders") {
                // A memory filed as a reminder gets its due time from its
                // own text, its first; when its due time is one of its own,
                // its other times are reminders of their own, as any note's
                // are (a due time set by hand is left to speak alone).
                let mut due = parsed
                    .frontmatter
                    .extra
                    .get("due_at")
                    .and_then(|v| v.as_str())
                    .or(parsed.frontmatter.expires_at.as_deref())
                    .map(|d| memory::parse_timestamp(d).unwrap_or(i64::MIN));
                if let (None, Some(first)) = (due, found.first()) {
                    let at = reminders::format_rfc3339(first.due, &tz);
                    // A task is due then, and stays until it is done.
                    let shown = path.to_string();
                    let fields = if Note::of(&parsed, &text, &shown, 0).is_task() {
                        vec![("due_at", at)]
                    } else {
                        vec![("due_at", at.clone()), ("expires_at", at)]
                    };
                    self.set_fields(&path, &fields, &mut report);
                    report.reminders += 1;
                    due = Some(first.due);
                }
                if !found.iter().any(|r| Some(r.due) == due) {
                    continue;
                }
                found.retain(|r| Some(r.due) != due);
            }
            if found.is_empty() {
                continue;
            }
            let source = if in_inbox(&path) && (asked || age(&st) >= self.settings.quiet_period) {
                self.file_reminded(&path, &parsed, &text, &mut report)
                    .unwrap_or_else(|| path.clone())
            } else {
                path.clone()
            };
            // The id as the note now carries it (filing writes it in).
            let id = self
                .read_text(&source)
                .and_then(|(_, text)| memory::parse("", &text).frontmatter.id)
                .or_else(|| self.index.id_for_untouched(&self.store, &source));
            let subject = reminders::subject(&parsed.title);
            let person = parsed.frontmatter.category == Some(Category::People)
                || source.as_path().starts_with("people");
            for found in found {
                let due = reminders::format_rfc3339(found.due, &tz);
                let name = |key: &str| {
                    let key = crate::store::counters::fnv1a64(
                        format!("{key}\n{}", found.phrase).as_bytes(),
                    );
                    let file = format!(
                        "reminders/{}-{}-{:08x}.md",
                        &due[..10],
                        slug(&stem(&path)),
                        key as u32
                    );
                    StorePath::new(&file)
                };
                // Named after the note's id, which follows it when it is
                // filed; a reminder named after its path (as earlier
                // versions named them) counts too.
                let (Some(target), Some(by_path)) = (
                    name(id.as_deref().unwrap_or(&path.to_string())),
                    name(&path.to_string()),
                ) else {
                    continue;
                };
                if self.made_before(&target) || self.made_before(&by_path) {
                    continue;
                }
                let about = [found.about.as_str(), subject.as_str()]
                    .into_iter()
                    .find(|s| !s.is_empty())
                    .unwrap_or(found.phrase.as_str());
                let about = &reminders::standing_alone(about, &parsed.title, person);
                // In the note's own language.
                let title = if crate::index::mostly_cjk(about) {
                    format!("提醒：{about}")
                } else {
                    format!("Reminder: {about}")
                };
                // The body says when: two reminders from one sentence
                // ("the talk on the 15th, the rehearsal on the 12th") are
                // two memories, never duplicates of each other.
                // Its link to the note is recorded by id at once, as
                // resolving links would record it: a second run has
                // nothing to add.
                let links = id
                    .as_deref()
                    .map(|id| format!("links:\n- {}\n", memory::yaml_scalar(id)))
                    .unwrap_or_default();
                let body = format!(
                    "---\nid: {}\ntitle: {}\ntype: reminder\ncategory: reminders\nphase: organized\ncreated_at: {}\ndue_at: {due}\nexpires_at: {due}\nsource: {}\n{links}---\n{}\n\nDue {}. From [[{}]].\n",
                    uuid::Uuid::new_v4(),
                    memory::yaml_scalar(&title),
                    memory::format_timestamp(now),
                    memory::yaml_scalar(&source.to_string()),
                    found.context,
                    reminders::format_due(found.due, &tz),
                    stem(&source),
                );
                match self.writer.create(&target, body.as_bytes()) {
                    Ok(()) => report.reminders += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => report.errors.push(format!("reminder {target}: {e}")),
                }
            }
        }
        report
    }

    /// Whether the reminder `target` was made before: it is there, or
    /// a memory of its name is anywhere in the store (moved, archived),
    /// or the history kept it (deleted). A reminder someone dismissed
    /// stays dismissed.
    fn made_before(&self, target: &StorePath) -> bool {
        self.store.stat(target).is_ok()
            || !self.index.resolve(&stem(target)).is_empty()
            || self
                .history
                .as_ref()
                .is_some_and(|h| !h.versions_of(Some(target), None).is_empty())
    }

    /// Files an inbox item whose time became a reminder: as the
    /// classifier places it (but for `reminders/`: its reminder is made),
    /// else under `date/` (what it holds is a time), unless it is a task,
    /// whose date is when to do it. Where it went.
    fn file_reminded(
        &self,
        path: &StorePath,
        parsed: &memory::Memory,
        text: &str,
        report: &mut Report,
    ) -> Option<StorePath> {
        let shown = path.to_string();
        let task = Note::of(parsed, text, &shown, 0).is_task();
        // Its reminder is made: what it holds is a time, not a reminder
        // of its own (filed under reminders/ it would be one twice).
        let placed = self
            .category_of(path, parsed, text)
            .filter(|(c, _)| *c != Category::Reminders)
            .map(|(c, by)| (c, by.to_string()));
        let filed = match placed {
            Some(placed) => self.file_now(path, Some(placed), report),
            None => Err(ops::Error::InvalidInput("nothing placed it".into())),
        };
        match filed {
            Ok(to) => Some(to),
            Err(ops::Error::InvalidInput(_)) if !task => {
                let why = "a time it holds became a reminder, and nothing else placed it";
                self.file_now(path, Some((Category::Date, why.into())), report)
                    .ok()
            }
            Err(ops::Error::InvalidInput(_)) => {
                // A task nothing places stays in the inbox, and no longer
                // expires: its reminder leads to it.
                self.remove_field(path, "expires_at", report);
                None
            }
            Err(_) => None,
        }
    }

    /// The reminders that are due, newest last, as (due, title, path).
    pub(crate) fn due_reminders(&self) -> Vec<(i64, String, StorePath)> {
        let now = now_unix();
        let dir = StorePath::new("reminders").unwrap_or_default();
        let mut due = Vec::new();
        for (path, _) in self.memories_under(&dir) {
            let Some((_, text)) = self.read_text(&path) else {
                continue;
            };
            let parsed = memory::parse(&stem(&path), &text);
            let when = parsed
                .frontmatter
                .extra
                .get("due_at")
                .and_then(|v| v.as_str())
                .or(parsed.frontmatter.expires_at.as_deref())
                .and_then(memory::parse_timestamp);
            if let Some(when) = when.filter(|w| *w <= now) {
                due.push((when, shown_title(&path, &parsed, &text), path));
            }
        }
        due.sort();
        due
    }
}

/// Whether a memory in scope `source` may name one in scope `target`: a
/// global memory (no scope) names only global ones, an agent's memory
/// those and its own agent's.
fn scope_sees(source: Option<&str>, target: Option<&str>) -> bool {
    match agent_scope(target) {
        None => true,
        Some(target) => agent_scope(source).is_some_and(|source| source == target),
    }
}

/// A memory's `scope:` when it is an agent's (lowercase); `None` for a
/// global one.
fn agent_scope(scope: Option<&str>) -> Option<String> {
    scope
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty() && s != "global")
}
