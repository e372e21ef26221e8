//! `mnemofs sync`: a store kept in step with a git remote.
//!
//! The store's own repository (`<store>/.git`, made by `mnemofs sync init`
//! or the user's own) holds the history; the remote is any git remote.
//! A round:
//! 1. commits what changed in the store, with a message listing it;
//! 2. fetches the remote's branch;
//! 3. merges away from the live files (`git merge-tree --write-tree`),
//!    settling every conflict there: our version stays at its path, the
//!    other side's becomes a conflict copy beside it
//!    (`memory::conflict`), so no file ever holds conflict markers; an
//!    edit always wins over a delete;
//! 4. applies the difference between the store's commit and the merge
//!    through the store's [`Writer`], as creates, compare-and-swap
//!    replaces, moves and deletes: through the mount when a daemon serves
//!    the store, so watchers see every change, the index follows, ids
//!    follow moves, and what a delete or an overwrite takes away is kept
//!    in the history (`mnemofs restore`);
//! 5. moves the branch to the merge and pushes it.
//!
//! Git never writes a file of the store itself. A change that cannot be
//! applied (the file was written since the round began, or is open for
//! writing) waits: the branch stays where it was, so the next round sees
//! the store's version as a local change and merges it, conflict copy
//! and all, with what it could not replace.
//!
//! A round killed at any point is finished by the next one. Whatever a
//! killed round applied is in the store; the next round commits it as a
//! local change, and merging that with the remote gives the same result
//! (the same changes on both sides merge cleanly, and conflict copies are
//! named after the other side's commit, not the clock, so they come out
//! the same). What git itself leaves behind, lock files, is removed: the
//! journal (`.git/mnemofs/round`, written at the start of each round and
//! removed at its end) says a round died, and its time tells the dead
//! round's lock files from a running git's.

mod git;

pub(crate) use git::without_credentials;

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use crate::memory::conflict;
use crate::ops::{self, Outcome, SyncReport, Syncer, Writer};
use crate::store::{Store, StorePath, TEMP_PREFIX};
use git::{EMPTY_TREE, Git, GitError, NO_COMMIT, RawChange};

/// The branch of a repository made for a remote without one.
const DEFAULT_BRANCH: &str = "main";

/// The remote's name when the repository has none for the URL given.
const REMOTE_NAMES: [&str; 2] = ["origin", "mnemofs"];

/// The commit trailer naming the machine that made a commit.
const HOST_TRAILER: &str = "Mnemofs-Host";

/// How often a round fetches and merges again when the remote moved on
/// between its fetch and its push.
const PUSH_ATTEMPTS: usize = 3;

/// The most changes a commit message lists one by one.
const LISTED: usize = 200;

/// Why sync could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The store has no repository, or it is not set up for sync.
    #[error(
        "{0} is not kept in step with a git remote yet: run `mnemofs sync init <remote>` first"
    )]
    NotSetUp(String),
    /// The user left a merge, rebase or the like unfinished.
    #[error(
        "the store's repository is in the middle of a {0}; finish it or abort it \
         (`git {0} --abort` in {1}), then sync again"
    )]
    Unfinished(&'static str, String),
    /// No branch is checked out.
    #[error(
        "the store's repository has no branch checked out (HEAD is detached); \
         check one out in {0}, then sync again"
    )]
    Detached(String),
    /// The remote cannot be reached or read.
    #[error("cannot reach {remote}: {said}")]
    Unreachable {
        /// The remote as named.
        remote: String,
        /// Git's words.
        said: String,
    },
    /// The remote refused the push.
    #[error("{remote} refused the push: {said}")]
    Refused {
        /// The remote as named.
        remote: String,
        /// Git's words.
        said: String,
    },
    /// A git command failed.
    #[error("git {what} failed: {said}")]
    Git {
        /// The subcommand.
        what: String,
        /// Git's words.
        said: String,
    },
    /// The repository's own files could not be read or written.
    #[error("{0}")]
    Io(String),
}

impl From<GitError> for SyncError {
    fn from(e: GitError) -> SyncError {
        SyncError::Git {
            what: e.what,
            said: e.said,
        }
    }
}

impl From<SyncError> for ops::Error {
    fn from(e: SyncError) -> ops::Error {
        match e {
            SyncError::NotSetUp(_) | SyncError::Unfinished(..) | SyncError::Detached(_) => {
                ops::Error::InvalidInput(e.to_string())
            }
            _ => ops::Error::Unavailable(e.to_string()),
        }
    }
}

/// How `mnemofs sync init` sets a store up.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// A URL, a path, or the name of a remote the repository has.
    pub remote: String,
    /// Never push: a clone of a team's or another machine's store.
    pub read_only: bool,
    /// The name this machine goes by in commits and conflict copies
    /// (default: the host name).
    pub host: Option<String>,
}

/// Sets the store at `root` up for sync with `options.remote`: makes its
/// repository unless it has one, names the remote in it, and checks that
/// the remote answers. A remote that does not answer changes nothing.
/// Returns the remote's name in the repository.
pub fn init(root: &Path, options: &InitOptions) -> Result<String, SyncError> {
    let existing = Git::open(root)?;
    // A remote the repository already has, by name.
    let named = existing.as_ref().and_then(|git| {
        git.config(&format!("remote.{}.url", options.remote))
            .map(|url| (options.remote.clone(), url))
    });
    let url = named
        .as_ref()
        .map_or(options.remote.clone(), |(_, url)| url.clone());
    let url = absolute_remote(&url);
    let head = Git::remote_head(root, &url).map_err(|e| SyncError::Unreachable {
        remote: git::without_credentials(&options.remote),
        said: e.said,
    })?;
    let git = match existing {
        Some(git) => git,
        None => Git::init(root, head.as_deref().unwrap_or(DEFAULT_BRANCH))?,
    };
    let name = match named {
        Some((name, _)) => name,
        None => remote_for(&git, &url)?,
    };
    git.set_config("mnemofs.remote", &name)?;
    git.set_config(
        "mnemofs.readonly",
        if options.read_only { "true" } else { "false" },
    )?;
    if let Some(host) = &options.host {
        git.set_config("mnemofs.host", host)?;
    }
    exclude_temp_files(&git)?;
    // A repository with no commit yet takes the remote's branch.
    if git.rev("HEAD").is_none()
        && let Some(branch) = head
    {
        git.run(&["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
    }
    Ok(name)
}

/// A remote given as a relative path is kept as an absolute one: rounds
/// run from the store, not from where `init` was typed.
fn absolute_remote(remote: &str) -> String {
    let path = Path::new(remote);
    let looks_like_path = remote.starts_with('.') || (!remote.contains(':') && path.exists());
    if looks_like_path
        && path.is_relative()
        && let Ok(full) = std::fs::canonicalize(path)
    {
        return full.display().to_string();
    }
    remote.to_owned()
}

/// The name of the repository's remote for `url`, added if none has it.
fn remote_for(git: &Git, url: &str) -> Result<String, SyncError> {
    for name in REMOTE_NAMES {
        match git.config(&format!("remote.{name}.url")) {
            Some(have) if have == url => return Ok(name.to_owned()),
            Some(_) => continue,
            None => {
                git.run(&["remote", "add", name, url])?;
                return Ok(name.to_owned());
            }
        }
    }
    Err(SyncError::Io(format!(
        "the store's repository already has remotes named {} for other URLs; \
         pass the name of the remote to use",
        REMOTE_NAMES.join(" and ")
    )))
}

/// Keeps the writers' temp files out of every commit.
fn exclude_temp_files(git: &Git) -> Result<(), SyncError> {
    let info = git.git_dir().join("info");
    let exclude = info.join("exclude");
    let line = format!("{TEMP_PREFIX}*");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    let io = |e: std::io::Error| SyncError::Io(format!("cannot write {}: {e}", exclude.display()));
    std::fs::create_dir_all(&info).map_err(io)?;
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("# mnemofs's temp files\n{line}\n"));
    std::fs::write(&exclude, text).map_err(io)
}

/// Runs sync rounds for one store; what `ops` calls for `Request::Sync`.
#[derive(Debug, Default)]
pub struct GitSync {
    /// One round at a time in this process (the round lock covers the
    /// others).
    running: Mutex<()>,
    last: Mutex<Option<SyncReport>>,
}

impl GitSync {
    /// A syncer; it does nothing until asked.
    pub fn new() -> GitSync {
        GitSync::default()
    }
}

impl Syncer for GitSync {
    fn round(
        &self,
        store: &Store,
        writer: &dyn Writer,
        settle: &dyn Fn(),
    ) -> ops::Result<SyncReport> {
        let _one = self.running.lock();
        let result = round(store, writer, settle);
        let report = match &result {
            Ok(report) => report.clone(),
            Err(e) => SyncReport {
                finished_ms: now_ms(),
                error: Some(e.to_string()),
                ..SyncReport::default()
            },
        };
        *self.last.lock() = Some(report);
        result.map_err(ops::Error::from)
    }

    fn last(&self) -> Option<SyncReport> {
        self.last.lock().clone()
    }
}

/// What a round needs to know of the repository.
struct Settings {
    remote: String,
    branch: String,
    read_only: bool,
    host: String,
}

fn settings(git: &Git, root: &Path) -> Result<Settings, SyncError> {
    let shown = root.display().to_string();
    let remote = git
        .config("mnemofs.remote")
        .ok_or_else(|| SyncError::NotSetUp(shown.clone()))?;
    for (marker, what) in [
        ("MERGE_HEAD", "merge"),
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
    ] {
        if git.git_dir().join(marker).exists() {
            return Err(SyncError::Unfinished(what, shown));
        }
    }
    let branch = git
        .run(&["symbolic-ref", "-q", "--short", "HEAD"])
        .map(|b| b.trim().to_owned())
        .ok()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| SyncError::Detached(shown.clone()))?;
    Ok(Settings {
        remote,
        branch,
        read_only: git.config("mnemofs.readonly").as_deref() == Some("true"),
        host: git.config("mnemofs.host").unwrap_or_else(host_name),
    })
}

/// This machine's name.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at
    // most that many bytes.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if ok && !name.is_empty() => name.to_owned(),
        _ => "unknown".to_owned(),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// mnemofs's own files in the git dir: the round lock, the journal, the
/// index.
struct Own {
    dir: PathBuf,
}

impl Own {
    fn lock(&self) -> PathBuf {
        self.dir.join("lock")
    }
    fn journal(&self) -> PathBuf {
        self.dir.join("round")
    }
    fn index(&self) -> PathBuf {
        self.dir.join("index")
    }
    fn merge_index(&self) -> PathBuf {
        self.dir.join("merge-index")
    }
}

/// Held for a round: an `flock`, gone with the process that held it.
struct RoundLock {
    _file: std::fs::File,
}

impl RoundLock {
    fn take(path: &Path) -> Result<RoundLock, SyncError> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| SyncError::Io(format!("cannot open {}: {e}", path.display())))?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(SyncError::Io(format!(
                "cannot lock {}: {e}",
                path.display()
            )));
        }
        Ok(RoundLock { _file: file })
    }
}

/// One round.
fn round(store: &Store, writer: &dyn Writer, settle: &dyn Fn()) -> Result<SyncReport, SyncError> {
    let root = store.root_path();
    let git = Git::open(root)?.ok_or_else(|| SyncError::NotSetUp(root.display().to_string()))?;
    let settings = settings(&git, root)?;
    let own = Own {
        dir: git.git_dir().join("mnemofs"),
    };
    std::fs::create_dir_all(&own.dir)
        .map_err(|e| SyncError::Io(format!("cannot make {}: {e}", own.dir.display())))?;
    let _lock = RoundLock::take(&own.lock())?;
    let resumed = clear_dead_round(&git, &own, &settings);
    std::fs::write(own.journal(), format!("{}\n", std::process::id()))
        .map_err(|e| SyncError::Io(format!("cannot write {}: {e}", own.journal().display())))?;
    // Only a round that dies leaves its journal: one that fails says why.
    let result = locked_round(store, writer, settle, git, &own, &settings, resumed);
    let _ = std::fs::remove_file(own.journal());
    result
}

/// The round, under the round lock, with its journal written.
fn locked_round(
    store: &Store,
    writer: &dyn Writer,
    settle: &dyn Fn(),
    git: Git,
    own: &Own,
    settings: &Settings,
    resumed: bool,
) -> Result<SyncReport, SyncError> {
    let email = format!("mnemofs@{}", conflict::host_label(&settings.host));
    let git = git
        .with_index(own.index())
        .with_fallback_identity("mnemofs", &email);
    seed_index(&git, own)?;
    let mut report = SyncReport {
        remote: git::without_credentials(&settings.remote),
        branch: settings.branch.clone(),
        read_only: settings.read_only,
        resumed,
        ..SyncReport::default()
    };
    let before = git.rev("HEAD");
    report.committed = commit_local(&git, settings, resumed)?;
    report.left_out = nested_repositories(&git);

    for attempt in 1..=PUSH_ATTEMPTS {
        fetch(&git, settings).map_err(|e| match e {
            // What this round committed is safe, and goes out later.
            SyncError::Unreachable { remote, said } if !report.committed.is_empty() => {
                SyncError::Unreachable {
                    remote,
                    said: format!(
                        "{said} ({} committed here; the next round that reaches it pushes {})",
                        ops::counted(report.committed.len(), "local change"),
                        if report.committed.len() == 1 {
                            "it"
                        } else {
                            "them"
                        }
                    ),
                }
            }
            e => e,
        })?;
        let ours = git.rev("HEAD");
        let theirs = git.rev(&tracking(settings));
        let merged = merge(
            &git,
            settings,
            ours.as_deref(),
            theirs.as_deref(),
            &mut report,
        )?;
        if merged != ours
            && let Some(merged) = &merged
        {
            settle();
            apply(&git, store, writer, ours.as_deref(), merged, &mut report)?;
            if report.waiting.is_empty() {
                move_branch(&git, settings, ours.as_deref(), merged)?;
            }
        }
        if settings.read_only {
            break;
        }
        let Some(merged) = merged else { break };
        if Some(&merged) == theirs.as_ref() {
            report.pushed = true;
            break;
        }
        // What the remote lacks but this round's own commit.
        let range = match &theirs {
            Some(theirs) => format!("{theirs}..{merged}"),
            None => merged.clone(),
        };
        let ahead = git
            .run(&["rev-list", "--count", "--no-merges", &range])
            .ok()
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap_or(0);
        match push(&git, settings, &merged)? {
            true => {
                report.pushed = true;
                let own = usize::from(!report.committed.is_empty());
                report.pushed_earlier = ahead.saturating_sub(own);
                break;
            }
            false if attempt < PUSH_ATTEMPTS => continue,
            false => {
                return Err(SyncError::Refused {
                    remote: git::without_credentials(&settings.remote),
                    said: "it moved on again while this round merged; sync again".into(),
                });
            }
        }
    }
    if git.rev("HEAD") != before || !report.committed.is_empty() {
        share_index(&git, own);
    }
    report.head = git.rev("HEAD").unwrap_or_default();
    report.finished_ms = now_ms();
    Ok(report)
}

/// If a round died before its end (its journal is still there), removes
/// the lock files it left, and says so. Another process's git could hold
/// a lock made since then only in the moment between; mnemofs's own
/// index locks are removed whenever they are old news.
fn clear_dead_round(git: &Git, own: &Own, settings: &Settings) -> bool {
    let Ok(journal) = std::fs::metadata(own.journal()) else {
        return false;
    };
    let since = journal.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    for path in [own.index(), own.merge_index()] {
        let _ = std::fs::remove_file(path.with_extension("lock"));
    }
    let dir = git.git_dir();
    let theirs = [
        dir.join("index.lock"),
        dir.join("HEAD.lock"),
        dir.join(format!("refs/heads/{}.lock", settings.branch)),
        dir.join(format!(
            "refs/remotes/{}/{}.lock",
            settings.remote, settings.branch
        )),
    ];
    for lock in theirs {
        let left_by_the_round = std::fs::metadata(&lock)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since);
        if left_by_the_round {
            tracing::info!(
                "removing {}, left by a sync round that died",
                lock.display()
            );
            let _ = std::fs::remove_file(&lock);
        }
    }
    true
}

/// Starts mnemofs's index from the user's (which knows every file's stat,
/// so the first `add` need not read them all), or from the branch.
fn seed_index(git: &Git, own: &Own) -> Result<(), SyncError> {
    if own.index().exists() {
        return Ok(());
    }
    let theirs = git.git_dir().join("index");
    if std::fs::copy(&theirs, own.index()).is_ok() {
        return Ok(());
    }
    if git.rev("HEAD").is_some() {
        git.run(&["read-tree", "HEAD"])?;
    }
    Ok(())
}

/// Gives the user's index mnemofs's, so `git status` in the store agrees
/// with the branch; left alone while some git holds its lock.
fn share_index(git: &Git, own: &Own) {
    use std::io::Write;
    let dir = git.git_dir();
    let lock = dir.join("index.lock");
    let Ok(bytes) = std::fs::read(own.index()) else {
        return;
    };
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock);
    let Ok(mut file) = made else {
        tracing::debug!("the store's git index is locked; left as it is");
        return;
    };
    let written = file.write_all(&bytes).and_then(|()| file.sync_all());
    let renamed = written.and_then(|()| std::fs::rename(&lock, dir.join("index")));
    if let Err(e) = renamed {
        tracing::warn!("cannot update the store's git index: {e}");
        let _ = std::fs::remove_file(&lock);
    }
}

/// The remote-tracking ref of the branch.
fn tracking(settings: &Settings) -> String {
    format!("refs/remotes/{}/{}", settings.remote, settings.branch)
}

/// Commits every change in the store; the changes, in words.
/// The folders of the store that are git repositories of their own: git
/// records each as the commit it is at (a gitlink), never its files, so
/// its notes reach no other machine. Said at every round.
fn nested_repositories(git: &Git) -> Vec<String> {
    let staged = git.run(&["ls-files", "--stage"]).unwrap_or_default();
    staged
        .lines()
        .filter(|line| line.starts_with("160000 "))
        .filter_map(|line| line.split_once('\t').map(|(_, path)| path.to_owned()))
        .map(|path| {
            format!(
                "{path}/ is a git repository of its own: its notes are not synced \
                 (remove its .git, or sync it with git itself)"
            )
        })
        .collect()
}

fn commit_local(git: &Git, settings: &Settings, resumed: bool) -> Result<Vec<String>, SyncError> {
    git.run(&["add", "-A"])?;
    let mut tree = git.run(&["write-tree"])?.trim().to_owned();
    let head_tree = git
        .rev("HEAD^{tree}")
        .unwrap_or_else(|| EMPTY_TREE.to_owned());
    if tree == head_tree {
        return Ok(Vec::new());
    }
    let mut changes = diff(git, &head_tree, &tree)?;
    // What the last commit holds that is not a regular file (a symlink,
    // a submodule) another machine pushed, and a round leaves out of the
    // store (see [`apply`]): its absence here is no deletion. Put back in
    // git's index, or the machine that made it loses it on its next round.
    let not_synced: Vec<&RawChange> = changes
        .iter()
        .filter(|c| c.status == 'D' && !is_file(&c.old_mode))
        .collect();
    if !not_synced.is_empty() {
        for change in not_synced {
            let info = format!(
                "{},{},{}",
                change.old_mode,
                change.old_oid,
                change.path.to_string_lossy()
            );
            git.run(&["update-index", "--add", "--cacheinfo", &info])?;
        }
        tree = git.run(&["write-tree"])?.trim().to_owned();
        if tree == head_tree {
            return Ok(Vec::new());
        }
        changes = diff(git, &head_tree, &tree)?;
    }
    let words: Vec<String> = changes.iter().map(describe).collect();
    let mut message = format!(
        "mnemofs: {} on {}",
        ops::counted(words.len(), "change"),
        settings.host
    );
    if resumed {
        message.push_str(", with what a sync cut short had applied");
    }
    message.push_str("\n\n");
    message.push_str(&listed(&words));
    message.push_str(&format!("\n{HOST_TRAILER}: {}\n", settings.host));
    git.run_bytes(
        &["commit", "-q", "--no-edit", "-F", "-"],
        Some(message.as_bytes()),
    )?;
    Ok(words)
}

/// Up to [`LISTED`] changes, one a line.
fn listed(words: &[String]) -> String {
    let mut out = String::new();
    for word in words.iter().take(LISTED) {
        out.push_str(word);
        out.push('\n');
    }
    if words.len() > LISTED {
        out.push_str(&format!("… and {} more\n", words.len() - LISTED));
    }
    out
}

/// The changes from tree-ish `from` to `to`, renames found.
fn diff(git: &Git, from: &str, to: &str) -> Result<Vec<RawChange>, SyncError> {
    let out = git.run_bytes(&["diff-tree", "-r", "-z", "--raw", "-M", from, to], None)?;
    Ok(git::parse_raw(&out))
}

/// A change in words.
fn describe(change: &RawChange) -> String {
    let path = change.path.display();
    match (change.status, &change.to) {
        ('A', _) => format!("added {path}"),
        ('D', _) => format!("deleted {path}"),
        ('R', Some(to)) if change.old_oid == change.new_oid => {
            format!("renamed {path} -> {}", to.display())
        }
        ('R', Some(to)) => format!("renamed and changed {path} -> {}", to.display()),
        _ => format!("changed {path}"),
    }
}

/// Fetches the remote's branches.
fn fetch(git: &Git, settings: &Settings) -> Result<(), SyncError> {
    let refspec = format!("+refs/heads/*:refs/remotes/{}/*", settings.remote);
    git.run(&["fetch", "-q", "--no-tags", &settings.remote, &refspec])
        .map(drop)
        .map_err(|e| SyncError::Unreachable {
            remote: git::without_credentials(&settings.remote),
            said: e.said,
        })
}

/// The commit the store should be at: ours, theirs, or a merge of both
/// with every conflict settled; `None` while neither side has a commit.
fn merge(
    git: &Git,
    settings: &Settings,
    ours: Option<&str>,
    theirs: Option<&str>,
    report: &mut SyncReport,
) -> Result<Option<String>, SyncError> {
    let (ours, theirs) = match (ours, theirs) {
        (ours, None) => return Ok(ours.map(str::to_owned)),
        (None, Some(theirs)) => return Ok(Some(theirs.to_owned())),
        (Some(ours), Some(theirs)) => (ours, theirs),
    };
    if ours == theirs || git.is_ancestor(theirs, ours)? {
        return Ok(Some(ours.to_owned()));
    }
    if git.is_ancestor(ours, theirs)? {
        return Ok(Some(theirs.to_owned()));
    }
    let (code, out, said) = git.run_code(&[
        "merge-tree",
        "--write-tree",
        "-z",
        "--no-messages",
        "--allow-unrelated-histories",
        ours,
        theirs,
    ])?;
    if code > 1 {
        // Before git 2.38, merge-tree has no --write-tree.
        let said = if said.contains("write-tree") {
            format!(
                "sync needs git 2.38 or newer, whose merge-tree merges in the repository ({said})"
            )
        } else {
            said
        };
        return Err(GitError {
            what: "merge-tree".into(),
            said,
        }
        .into());
    }
    let (tree, stages) = git::parse_merge_tree(&out).ok_or_else(|| GitError {
        what: "merge-tree".into(),
        said: "no tree in its answer".into(),
    })?;
    let tree = if stages.is_empty() {
        tree
    } else {
        settle(git, settings, &tree, &stages, theirs, report)?
    };
    let mut message = format!(
        "mnemofs: merged {}/{} on {}\n\n",
        settings.remote, settings.branch, settings.host
    );
    if !report.conflicts.is_empty() {
        message.push_str("Conflicts, the other side's version kept as a copy:\n");
        message.push_str(&listed(&report.conflicts));
        message.push('\n');
    }
    message.push_str(&format!("{HOST_TRAILER}: {}\n", settings.host));
    let commit = git.run_bytes(
        &["commit-tree", &tree, "-p", ours, "-p", theirs, "-F", "-"],
        Some(message.as_bytes()),
    )?;
    Ok(Some(String::from_utf8_lossy(&commit).trim().to_owned()))
}

/// The merged tree with every conflicted path settled: ours at its path
/// and theirs as a conflict copy; an edit kept over a delete.
fn settle(
    git: &Git,
    settings: &Settings,
    tree: &str,
    stages: &[git::Stage],
    theirs: &str,
    report: &mut SyncReport,
) -> Result<String, SyncError> {
    let mut by_path: BTreeMap<&[u8], [Option<&git::Stage>; 3]> = BTreeMap::new();
    for stage in stages {
        let slot = usize::from(stage.stage.clamp(1, 3) - 1);
        by_path.entry(&stage.path).or_default()[slot] = Some(stage);
    }
    let mut lines: Vec<u8> = Vec::new();
    let mut entry = |mode: &str, oid: &str, path: &[u8]| {
        lines.extend_from_slice(format!("{mode} {oid}\t").as_bytes());
        lines.extend_from_slice(path);
        lines.push(0);
    };
    for (path, [base, ours, theirs_stage]) in &by_path {
        let shown = String::from_utf8_lossy(path).into_owned();
        match (ours, theirs_stage) {
            (Some(ours), Some(other)) => {
                // Stamped alike on both machines: one version, the same
                // one whichever machine merges.
                if other.oid != ours.oid
                    && let Some(kept) = stamped_alike(git, &ours.oid, &other.oid)
                {
                    let mode = if kept == ours.oid {
                        &ours.mode
                    } else {
                        &other.mode
                    };
                    entry(mode, &kept, path);
                    continue;
                }
                entry(&ours.mode, &ours.oid, path);
                if other.oid != ours.oid {
                    let copy = conflict_copy(git, theirs, &shown, &other.oid, tree, settings)?;
                    entry(&other.mode, &other.oid, copy.as_bytes());
                    report.conflicts.push(copy);
                }
            }
            (Some(ours), None) => {
                entry(&ours.mode, &ours.oid, path);
                if base.is_some() {
                    report
                        .kept
                        .push(format!("{shown}: changed here, deleted there"));
                }
            }
            (None, Some(other)) => {
                entry(&other.mode, &other.oid, path);
                if base.is_some() {
                    report
                        .kept
                        .push(format!("{shown}: changed there, deleted here"));
                }
            }
            (None, None) => entry("0", NO_COMMIT, path),
        }
    }
    let merge_index = git.git_dir().join("mnemofs").join("merge-index");
    let _ = std::fs::remove_file(&merge_index);
    let _ = std::fs::remove_file(merge_index.with_extension("lock"));
    let scratch = git.clone().with_index(merge_index.clone());
    scratch.run(&["read-tree", tree])?;
    scratch.run_bytes(&["update-index", "-z", "--index-info"], Some(&lines))?;
    let settled = scratch.run(&["write-tree"])?.trim().to_owned();
    let _ = std::fs::remove_file(&merge_index);
    Ok(settled)
}

/// Fields the normalizer adds to a memory that lacks them, each machine
/// on its own: `created_at` from its own file time, so a note written on
/// one machine and stamped on both differs there alone.
const STAMPED: [&str; 4] = ["id", "created_at", "phase", "category"];

/// The larger of two versions of a memory [`stamped_alike`] compares.
const STAMPED_MAX: usize = 1 << 20;

/// When blobs `a` and `b` are one memory that each machine's normalizer
/// stamped on its own (the same body, frontmatter that differs only in
/// [`STAMPED`] fields), the one to keep: the earlier `created_at`, then
/// the smaller object name, so that both machines keep the same one and
/// their next rounds agree. `None` when they differ otherwise.
fn stamped_alike(git: &Git, a: &str, b: &str) -> Option<String> {
    let read = |oid: &str| {
        git.run_bytes(&["cat-file", "blob", oid], None)
            .ok()
            .filter(|bytes| bytes.len() <= STAMPED_MAX)
            .and_then(|bytes| String::from_utf8(bytes).ok())
    };
    let (text_a, text_b) = (read(a)?, read(b)?);
    let (fields_a, body_a) = crate::memory::own_frontmatter(&text_a).ok()??;
    let (fields_b, body_b) = crate::memory::own_frontmatter(&text_b).ok()??;
    if body_a != body_b {
        return None;
    }
    let value = |fields: &serde_yaml::Mapping, key: &serde_yaml::Value| fields.get(key).cloned();
    let differing_only_in_stamps = fields_a
        .keys()
        .chain(fields_b.keys())
        .filter(|key| value(&fields_a, key) != value(&fields_b, key))
        .all(|key| key.as_str().is_some_and(|k| STAMPED.contains(&k)));
    if !differing_only_in_stamps {
        return None;
    }
    let created = |fields: &serde_yaml::Mapping| {
        fields
            .get("created_at")
            .and_then(|v| v.as_str())
            .and_then(crate::memory::parse_timestamp)
    };
    let key_a = (created(&fields_a).unwrap_or(i64::MAX), a);
    let key_b = (created(&fields_b).unwrap_or(i64::MAX), b);
    Some(key_a.min(key_b).1.to_owned())
}

/// The path of the conflict copy of `path` holding blob `oid`: named
/// after the machine and time of the other side's last commit of it, and
/// not taken by another content in the merged tree.
fn conflict_copy(
    git: &Git,
    theirs: &str,
    path: &str,
    oid: &str,
    tree: &str,
    settings: &Settings,
) -> Result<String, SyncError> {
    let format = format!("--format=%ct%x00%(trailers:key={HOST_TRAILER},valueonly,separator=)");
    let out = git.run(&["log", "-1", &format, theirs, "--", path])?;
    let (time, host) = out.trim().split_once('\0').unwrap_or((out.trim(), ""));
    let when = conflict::when_of(time.trim().parse().unwrap_or(0));
    let host = if host.trim().is_empty() {
        settings.remote.as_str()
    } else {
        host.trim()
    };
    for n in 1.. {
        let copy = conflict::conflict_path(path, host, &when, n);
        match git.rev(&format!("{tree}:{copy}")) {
            Some(there) if there != oid => continue,
            _ => return Ok(copy),
        }
    }
    unreachable!("an unbounded range ends only by returning")
}

/// Applies the changes from commit `ours` (none: an empty store) to
/// `merged` through `writer`. What cannot be applied now goes to
/// `report.waiting`.
fn apply(
    git: &Git,
    store: &Store,
    writer: &dyn Writer,
    ours: Option<&str>,
    merged: &str,
    report: &mut SyncReport,
) -> Result<(), SyncError> {
    let mut changes = diff(git, ours.unwrap_or(EMPTY_TREE), merged)?;
    // Deletes and moves first: they free the names adds may take.
    changes.sort_by_key(|c| match c.status {
        'D' => 0,
        'R' => 1,
        'M' | 'T' => 2,
        _ => 3,
    });
    let mut blobs = git.blobs()?;
    for change in &changes {
        if !is_file(&change.old_mode) && change.status != 'A'
            || !is_file(&change.new_mode) && change.status != 'D'
        {
            tracing::info!(
                "sync: {} is not a regular file in git (mode {} -> {}); left alone",
                change.path.display(),
                change.old_mode,
                change.new_mode
            );
            continue;
        }
        match apply_one(store, writer, &mut blobs, change) {
            Ok(()) => report.pulled.push(describe(change)),
            Err(why) => report
                .waiting
                .push(format!("{}: {why}", change.path.display())),
        }
    }
    Ok(())
}

fn is_file(mode: &str) -> bool {
    matches!(mode, "100644" | "100755")
}

/// What a file holds now, `None` if nothing is there.
fn current(store: &Store, path: &StorePath) -> Result<Option<Vec<u8>>, String> {
    match store.read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

fn store_path(path: &Path) -> Result<StorePath, String> {
    StorePath::new(path).ok_or_else(|| "not a path this store can hold".to_owned())
}

const CHANGED_HERE: &str = "changed here since the round began";

/// Applies one change; why not, if it cannot be now.
fn apply_one(
    store: &Store,
    writer: &dyn Writer,
    blobs: &mut git::Blobs,
    change: &RawChange,
) -> Result<(), String> {
    let path = store_path(&change.path)?;
    let blob = |blobs: &mut git::Blobs, oid: &str| blobs.get(oid).map_err(|e| e.to_string());
    match change.status {
        'D' => {
            let old = blob(blobs, &change.old_oid)?;
            match current(store, &path)? {
                None => Ok(()),
                Some(now) if now == old => {
                    writer.remove_file(&path).map_err(|e| e.to_string())?;
                    prune(store, writer, &path);
                    Ok(())
                }
                Some(_) => Err(CHANGED_HERE.into()),
            }
        }
        'A' => {
            let new = blob(blobs, &change.new_oid)?;
            match writer.create(&path, &new) {
                Ok(()) => Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    if current(store, &path)?.as_deref() == Some(&new[..]) {
                        Ok(())
                    } else {
                        Err("a file was made there since the round began".into())
                    }
                }
                Err(e) => Err(e.to_string()),
            }
        }
        'R' => {
            let to = store_path(change.to.as_deref().unwrap_or(&change.path))?;
            let old = blob(blobs, &change.old_oid)?;
            let new = blob(blobs, &change.new_oid)?;
            match current(store, &path)? {
                Some(now) if now == old => {
                    match writer.move_to(&path, &to).map_err(|e| e.to_string())? {
                        Outcome::Done => prune(store, writer, &path),
                        Outcome::Busy => return Err("open for writing".into()),
                    }
                }
                None if current(store, &to)?.is_some() => {}
                _ => return Err(CHANGED_HERE.into()),
            }
            replace(store, writer, &to, &old, &new)
        }
        _ => {
            let old = blob(blobs, &change.old_oid)?;
            let new = blob(blobs, &change.new_oid)?;
            replace(store, writer, &path, &old, &new)
        }
    }
}

/// Replaces `old` by `new` at `path`, unless it holds `new` already.
fn replace(
    store: &Store,
    writer: &dyn Writer,
    path: &StorePath,
    old: &[u8],
    new: &[u8],
) -> Result<(), String> {
    if old == new {
        return Ok(());
    }
    match writer.replace(path, old, new).map_err(|e| e.to_string())? {
        Outcome::Done => Ok(()),
        Outcome::Busy if current(store, path)?.as_deref() == Some(new) => Ok(()),
        Outcome::Busy => Err(format!("{CHANGED_HERE}, or open for writing")),
    }
}

/// Removes the folders a delete or a move left empty, up to the root.
/// `inbox/` and `archive/` stay.
fn prune(store: &Store, writer: &dyn Writer, path: &StorePath) {
    let mut folder = path.parent();
    while let Some(dir) = folder {
        if dir.is_root() {
            return;
        }
        let kept = dir.depth() == 1
            && matches!(dir.as_path().as_os_str().as_bytes(), b"inbox" | b"archive");
        let empty = store.read_dir(&dir).is_ok_and(|entries| entries.is_empty());
        if kept || !empty || writer.remove_folder(&dir).is_err() {
            return;
        }
        folder = dir.parent();
    }
}

/// Points the branch at `merged` (if it still points at `ours`), and
/// mnemofs's index at it, keeping what the index knows of unchanged files.
fn move_branch(
    git: &Git,
    settings: &Settings,
    ours: Option<&str>,
    merged: &str,
) -> Result<(), SyncError> {
    let branch = format!("refs/heads/{}", settings.branch);
    git.run(&[
        "update-ref",
        "-m",
        "mnemofs sync",
        &branch,
        merged,
        ours.unwrap_or(NO_COMMIT),
    ])?;
    let two_way = match ours {
        Some(ours) => git.run(&["read-tree", "-m", ours, merged]).is_ok(),
        None => false,
    };
    if !two_way {
        git.run(&["read-tree", merged])?;
    }
    Ok(())
}

/// Pushes `merged` to the remote's branch; `false` if the remote moved
/// on meanwhile.
fn push(git: &Git, settings: &Settings, merged: &str) -> Result<bool, SyncError> {
    let refspec = format!("{merged}:refs/heads/{}", settings.branch);
    let (code, out, said) = git.run_code(&["push", "--porcelain", &settings.remote, &refspec])?;
    if code == 0 {
        git.run(&["update-ref", &tracking(settings), merged])?;
        return Ok(true);
    }
    let out = String::from_utf8_lossy(&out);
    if out.contains("[rejected]") || out.contains("[remote rejected] (fetch first)") {
        return Ok(false);
    }
    Err(SyncError::Refused {
        remote: git::without_credentials(&settings.remote),
        said: git::without_credentials(&said),
    })
}

/// Runs rounds on a daemon's thread every `interval`, at background
/// priority, until dropped.
pub struct Schedule {
    stop: Option<crossbeam_channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Schedule {
    /// Starts the thread. `setup`, if given, sets the store up first when
    /// it is not yet; `round` runs one round.
    pub fn start(
        store: PathBuf,
        setup: Option<InitOptions>,
        interval: Duration,
        round: impl Fn() -> ops::Result<SyncReport> + Send + 'static,
    ) -> std::io::Result<Schedule> {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        let thread = std::thread::Builder::new()
            .name("mnemofs-sync".into())
            .spawn(move || {
                crate::background::lower_priority();
                if let Some(options) = setup {
                    let set_up = Git::open(&store)
                        .ok()
                        .flatten()
                        .is_some_and(|git| git.config("mnemofs.remote").is_some());
                    if !set_up && let Err(e) = init(&store, &options) {
                        tracing::warn!("sync: cannot set up {}: {e}", store.display());
                    }
                }
                loop {
                    match round() {
                        Ok(report) => tracing::info!("{}", report.summary()),
                        Err(e) => tracing::warn!("sync: {e}"),
                    }
                    match stopped.recv_timeout(interval) {
                        Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            })?;
        Ok(Schedule {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Schedule {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
