//! Shared pieces of the mnemofs benchmarks: configuration, the synthetic
//! store, the mount guard, and timing and table helpers.
//!
//! Every figure is a ratio against a baseline measured in the same run (the
//! plain backing directory, or a plain directory on the same filesystem), so
//! the numbers survive a change of machine; absolute times alone would not.
//!
//! Subtleties:
//! - `Daemon` must be dropped before the `Workspace` that holds its
//!   directories, or removing the temp dir would walk into a live mount.
//!   `Bench` declares its fields in that order.
//! - The daemon indexes the store in the background. Measuring while it
//!   reconciles would charge indexing to whatever figure runs first, so
//!   figures call `Daemon::wait_idle` before they start and after they write.
//! - Writes into the store directly would be seen by the daemon's watcher
//!   and re-indexed, so native write baselines go to `Workspace::plain`,
//!   which is outside the store but on the same filesystem.

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod nullfs;

/// How long the mount may take to appear in /proc/self/mountinfo.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the daemon may take to exit after SIGTERM before it is killed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound for fusermount3.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

/// What a run measures, from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// Notes in the synthetic store (`MNEMOFS_BENCH_NOTES`).
    pub notes: usize,
    /// Size of the sequential-read file in bytes.
    pub big_file_bytes: u64,
    /// Repetitions per figure; the table shows the median.
    pub reps: usize,
    /// `MNEMOFS_BENCH_QUICK=1`: a smoke run, not a measurement.
    pub quick: bool,
    /// Which figure groups run (`MNEMOFS_BENCH_ONLY`).
    pub only: Selection,
}

/// The figure groups of the `mount` bench, chosen with
/// `MNEMOFS_BENCH_ONLY=mount|search|dream|hooks|tools|history|load|cli|all` (default all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// The spine figures: the mount against its backing directory.
    Mount,
    /// The index figures: search, write to searchable, start, rebuild, RSS.
    Search,
    /// The organizer figures: dream over a full inbox, with and without a daemon.
    Dream,
    /// The agent-hook figures: brief and checkpoint as new processes.
    Hooks,
    /// The agents' front ends: MCP, `mnemofs tool`, the socket.
    Tools,
    /// The cost of keeping earlier versions on save by rename.
    History,
    /// The daemon's memory under a mixed load and once idle after it.
    Load,
    /// memory-cli's commands as new processes: import, export, ingest,
    /// write then search.
    Cli,
    /// Both, mount first.
    All,
}

impl Selection {
    /// Whether the spine figures run.
    pub fn mount(self) -> bool {
        matches!(self, Selection::Mount | Selection::All)
    }

    /// Whether the index figures run.
    pub fn search(self) -> bool {
        matches!(self, Selection::Search | Selection::All)
    }

    /// Whether the organizer figures run.
    pub fn dream(self) -> bool {
        matches!(self, Selection::Dream | Selection::All)
    }

    /// Whether the agent-hook figures run.
    pub fn hooks(self) -> bool {
        matches!(self, Selection::Hooks | Selection::All)
    }

    /// Whether the front-end figures run.
    pub fn tools(self) -> bool {
        matches!(self, Selection::Tools | Selection::All)
    }

    /// Whether the history figures run.
    pub fn history(self) -> bool {
        matches!(self, Selection::History | Selection::All)
    }

    /// Whether the load figures run.
    pub fn load(self) -> bool {
        matches!(self, Selection::Load | Selection::All)
    }

    /// Whether the command-line figures run.
    pub fn cli(self) -> bool {
        matches!(self, Selection::Cli | Selection::All)
    }
}

impl Config {
    /// Reads `MNEMOFS_BENCH_QUICK`, `MNEMOFS_BENCH_NOTES`, `MNEMOFS_BENCH_REPS`
    /// and `MNEMOFS_BENCH_ONLY`.
    pub fn from_env() -> Config {
        let quick = std::env::var("MNEMOFS_BENCH_QUICK").is_ok_and(|v| v == "1");
        let parse = |name: &str| -> Option<usize> {
            let v = std::env::var(name).ok()?;
            match v.trim().parse() {
                Ok(n) if n > 0 => Some(n),
                _ => panic!("{name}={v:?} is not a positive integer"),
            }
        };
        let (notes, mib, reps) = if quick { (1000, 8, 1) } else { (10_000, 64, 5) };
        let only = match std::env::var("MNEMOFS_BENCH_ONLY").as_deref() {
            Err(_) | Ok("" | "all") => Selection::All,
            Ok("mount") => Selection::Mount,
            Ok("search") => Selection::Search,
            Ok("dream") => Selection::Dream,
            Ok("hooks") => Selection::Hooks,
            Ok("tools") => Selection::Tools,
            Ok("history") => Selection::History,
            Ok("load") => Selection::Load,
            Ok("cli") => Selection::Cli,
            Ok(v) => panic!(
                "MNEMOFS_BENCH_ONLY={v:?} is not one of mount, search, dream, hooks, tools, history, load, cli, all"
            ),
        };
        Config {
            notes: parse("MNEMOFS_BENCH_NOTES").unwrap_or(notes),
            big_file_bytes: mib << 20,
            reps: parse("MNEMOFS_BENCH_REPS").unwrap_or(reps),
            quick,
            only,
        }
    }
}

/// SplitMix64: deterministic, dependency-free, good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator that always yields the same sequence for the same seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One element of a non-empty slice.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The words notes are made of; queries are drawn from it too.
pub const VOCABULARY: &[&str] = &[
    "memory",
    "agent",
    "project",
    "context",
    "decision",
    "preference",
    "deploy",
    "review",
    "branch",
    "release",
    "schema",
    "index",
    "query",
    "latency",
    "budget",
    "meeting",
    "design",
    "kernel",
    "mount",
    "cache",
    "editor",
    "terminal",
    "theme",
    "dark",
    "mode",
    "light",
    "font",
    "python",
    "rust",
    "golang",
    "typescript",
    "docker",
    "cluster",
    "server",
    "client",
    "token",
    "session",
    "summary",
    "lesson",
    "habit",
    "skill",
    "reminder",
    "deadline",
    "invoice",
    "customer",
    "feedback",
    "roadmap",
    "milestone",
    "sprint",
    "ticket",
    "incident",
    "outage",
    "backup",
    "restore",
    "archive",
    "garden",
    "recipe",
    "coffee",
    "travel",
    "flight",
    "hotel",
    "birthday",
    "family",
    "friend",
    "doctor",
    "running",
    "music",
    "guitar",
    "book",
    "chapter",
    "note",
    "draft",
    "outline",
    "benchmark",
    "profile",
    "allocation",
    "thread",
    "channel",
    "lock",
    "socket",
    "packet",
    "router",
    "firewall",
    "certificate",
    "password",
    "vault",
    "the",
    "a",
    "and",
    "of",
    "to",
    "with",
    "for",
    "after",
    "before",
    "because",
    "when",
    "always",
    "never",
    "prefers",
    "uses",
    "avoids",
    "remembers",
    "decided",
    "learned",
    "quick",
    "slow",
];

const TAGS: &[&str] = &[
    "ui", "backend", "infra", "personal", "work", "health", "finance", "reading", "ops",
    "security", "perf", "docs", "testing", "hiring", "travel", "music", "food", "family",
    "learning", "tooling",
];

/// The categories the daemon knows (DESIGN.md, "Memory files").
const CATEGORIES: &[&str] = &[
    "soul",
    "character",
    "people",
    "project",
    "date",
    "knowledge",
    "feedback",
    "preferences",
    "decisions",
    "lessons",
    "habits",
    "skills",
    "inbox",
    "reminders",
];

/// Notes per directory; 10k notes spread over 100 directories.
const NOTES_PER_DIR: usize = 100;

/// Where note `i` of a store of `total` notes lives, relative to the store.
pub fn note_path(i: usize, total: usize) -> PathBuf {
    let dirs = total.div_ceil(NOTES_PER_DIR).clamp(1, 1000);
    PathBuf::from(format!("notes/d{:03}/note-{i:06}.md", i % dirs))
}

/// The directory a store of `total` notes uses, relative to the store.
pub fn note_dirs(total: usize) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = (0..total.min(1000))
        .map(|i| note_path(i, total).parent().map(Path::to_path_buf))
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// A ~4 KB markdown note: YAML frontmatter (id, title, tags, category),
/// a heading, paragraphs with inline #tags and [[wikilinks]] to other notes
/// of the same store, and a relation line. Same `(i, total, seed)`, same text.
pub fn note_text(i: usize, total: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut s = String::with_capacity(4600);
    let title = format!(
        "{} {} {i}",
        capitalize(rng.pick(VOCABULARY)),
        rng.pick(VOCABULARY)
    );
    let id = {
        let a = rng.next_u64();
        let b = rng.next_u64();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | ((b >> 48) & 0x3fff),
            b & 0xffff_ffff_ffff
        )
    };
    let tags: Vec<&str> = (0..1 + rng.below(3)).map(|_| rng.pick(TAGS)).collect();
    let _ = writeln!(s, "---");
    let _ = writeln!(s, "id: {id}");
    let _ = writeln!(s, "title: \"{title}\"");
    let _ = writeln!(s, "tags: [{}]", tags.join(", "));
    let _ = writeln!(s, "category: {}", rng.pick(CATEGORIES));
    let _ = writeln!(
        s,
        "created_at: 2025-{:02}-{:02}",
        1 + rng.below(12),
        1 + rng.below(28)
    );
    let _ = writeln!(s, "---\n\n# {title}\n");
    let target_len = 3800 + rng.below(600);
    let link = |rng: &mut Rng| {
        let other = rng.below(total.max(1));
        format!("[[note-{other:06}]]")
    };
    while s.len() < target_len {
        let words = 40 + rng.below(40);
        for w in 0..words {
            if w > 0 {
                s.push(' ');
            }
            match rng.below(60) {
                0 => {
                    s.push('#');
                    s.push_str(rng.pick(TAGS));
                }
                1 => s.push_str(&link(&mut rng)),
                _ => s.push_str(rng.pick(VOCABULARY)),
            }
        }
        s.push_str(".\n\n");
    }
    let _ = writeln!(s, "- relates_to {}", link(&mut rng));
    s
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The seed of the synthetic store; the write figure uses another.
pub const STORE_SEED: u64 = 0x6d6e_656d_6f66_7321;

/// Writes `total` notes into `root` (creating directories) and returns their
/// paths relative to `root`, in note order. Deterministic: the same count
/// gives byte-identical stores, so 10k and 100k runs are comparable.
pub fn generate_store(root: &Path, total: usize) -> io::Result<Vec<PathBuf>> {
    for d in note_dirs(total) {
        fs::create_dir_all(root.join(d))?;
    }
    let mut paths = Vec::with_capacity(total);
    for i in 0..total {
        let rel = note_path(i, total);
        fs::write(root.join(&rel), note_text(i, total, STORE_SEED))?;
        paths.push(rel);
    }
    Ok(paths)
}

/// Writes `bytes` of incompressible, non-text data to `path` and syncs it,
/// so its pages are clean and can be dropped for a cold read.
pub fn write_big_file(path: &Path, bytes: u64) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut f = fs::File::create(path)?;
    let mut rng = Rng::new(0x0b16_f11e);
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for chunk in buf.chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// Drops the page cache of one file (`POSIX_FADV_DONTNEED`); clean pages only.
#[cfg(target_os = "linux")]
pub fn drop_file_cache(path: &Path) -> io::Result<()> {
    let f = fs::File::open(path)?;
    // SAFETY: the fd is valid for the lifetime of `f`; fadvise has no
    // memory-safety preconditions.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// macOS has no call that drops one file's cached pages.
#[cfg(not(target_os = "linux"))]
pub fn drop_file_cache(_path: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Flushes the filesystem holding `path` (`syncfs`), so writeback and
/// journal work left by one step is not charged to the next one.
#[cfg(target_os = "linux")]
pub fn sync_filesystem(path: &Path) -> io::Result<()> {
    let f = fs::File::open(path)?;
    // SAFETY: the fd is valid for the lifetime of `f`.
    if unsafe { libc::syncfs(f.as_raw_fd()) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// macOS has no `syncfs`: `sync` flushes every filesystem.
#[cfg(not(target_os = "linux"))]
pub fn sync_filesystem(_path: &Path) -> io::Result<()> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    Ok(())
}

/// Reads a whole file with a 1 MiB buffer and returns the byte count.
pub fn read_sequential(path: &Path) -> io::Result<u64> {
    let mut f = fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// The temp directories of one run, all on the filesystem of /tmp.
#[derive(Debug)]
pub struct Workspace {
    _tmp: tempfile::TempDir,
    /// The backing directory the daemon serves.
    pub store: PathBuf,
    /// Where the store is mounted.
    pub mnt: PathBuf,
    /// The daemon's state dir (index, lock, logs).
    pub state: PathBuf,
    /// A plain directory outside the store, for native write baselines.
    pub plain: PathBuf,
    /// Where the FUSE floor filesystem (`nullfs`) is mounted.
    pub floor: PathBuf,
    /// Where the storing floor is mounted, and where it keeps its files.
    pub stored_floor: PathBuf,
    pub stored_floor_data: PathBuf,
    /// The daemon's stdout and stderr.
    pub log: PathBuf,
}

impl Workspace {
    /// Creates fresh, empty directories under the temp dir.
    pub fn new() -> io::Result<Workspace> {
        let tmp = tempfile::Builder::new()
            .prefix("mnemofs-bench-")
            .tempdir()?;
        let root = tmp.path().canonicalize()?;
        let ws = Workspace {
            store: root.join("store"),
            mnt: root.join("mnt"),
            state: root.join("state"),
            plain: root.join("plain"),
            floor: root.join("floor"),
            stored_floor: root.join("floor-stored"),
            stored_floor_data: root.join("floor-data"),
            log: root.join("daemon.log"),
            _tmp: tmp,
        };
        for d in [
            &ws.store,
            &ws.mnt,
            &ws.state,
            &ws.plain,
            &ws.floor,
            &ws.stored_floor,
            &ws.stored_floor_data,
        ] {
            fs::create_dir(d)?;
        }
        Ok(ws)
    }
}

/// A running `mnemofs mount --foreground`. Dropping it unmounts and stops
/// the daemon, also when a figure panics.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    mnt: PathBuf,
    log: PathBuf,
}

impl Daemon {
    /// Starts the daemon on `ws` with extra `mnemofs mount` arguments and
    /// waits until the mount is live.
    pub fn start_with(ws: &Workspace, extra: &[&str]) -> Result<Daemon, String> {
        let log = fs::File::create(&ws.log).map_err(|e| format!("log file: {e}"))?;
        let log2 = log.try_clone().map_err(|e| format!("log file: {e}"))?;
        let child = Command::new(env!("CARGO_BIN_EXE_mnemofs"))
            .arg("mount")
            .arg(&ws.mnt)
            .arg("--store")
            .arg(&ws.store)
            .arg("--state-dir")
            .arg(&ws.state)
            .arg("--foreground")
            .args(extra)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", env!("CARGO_BIN_EXE_mnemofs")))?;
        let mut d = Daemon {
            child,
            mnt: ws.mnt.clone(),
            log: ws.log.clone(),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !is_mounted(&d.mnt) {
            if let Ok(Some(status)) = d.child.try_wait() {
                return Err(format!("daemon exited with {status}:\n{}", d.log_tail()));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "mount not ready after {READY_TIMEOUT:?}:\n{}",
                    d.log_tail()
                ));
            }
            // Short, so the mount-start figure can time the mount.
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(d)
    }

    /// Samples the daemon's memory until dropped (see [`MemorySampler`]).
    pub fn sample_memory(&self, phase: &str) -> MemorySampler {
        MemorySampler::start(self.pid(), phase)
    }

    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The daemon's resident set size in KiB (`VmRSS` in /proc/<pid>/status).
    pub fn vm_rss_kib(&self) -> Option<u64> {
        self.proc_status_kib("VmRSS")
    }

    /// One KiB field of /proc/<pid>/status, such as `RssAnon` (heap and
    /// stacks) or `RssFile` (mapped files: binary and mmap'd index pages).
    pub fn proc_status_kib(&self, field: &str) -> Option<u64> {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status
            .lines()
            .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// CPU time (user + system) the daemon has used so far, in seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        cpu_seconds_of(self.pid())
    }

    /// Waits until `.mnemofs/status.json` reports no reconcile and no pending
    /// changes (a mount without that file counts as settled there), then
    /// until the daemon is quiet: under 10% of one core over 250 ms, so
    /// background indexing is not charged to the next figure. Returns how
    /// long that took, or an error on timeout.
    pub fn wait_idle(&self, timeout: Duration) -> Result<Duration, String> {
        let start = Instant::now();
        let status_path = self.mnt.join(".mnemofs/status.json");
        loop {
            let last = match fs::read_to_string(&status_path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(e) => format!("cannot read status.json: {e}"),
                Ok(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                    Ok(v) => {
                        let reconciling = v["reconciling"].as_bool().unwrap_or(false);
                        let pending = v["pending_changes"].as_u64().unwrap_or(0);
                        if !reconciling && pending == 0 {
                            break;
                        }
                        text.split_whitespace().collect::<Vec<_>>().join(" ")
                    }
                    Err(e) => format!("status.json is not JSON: {e}"),
                },
            };
            if start.elapsed() > timeout {
                return Err(format!("index not idle after {timeout:?}: {last}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        const WINDOW: Duration = Duration::from_millis(250);
        let mut before = self.cpu_seconds();
        loop {
            std::thread::sleep(WINDOW);
            let now = self.cpu_seconds();
            match (before, now) {
                (Some(a), Some(b)) if b - a < 0.1 * WINDOW.as_secs_f64() => {
                    return Ok(start.elapsed());
                }
                (None, _) | (_, None) => return Ok(start.elapsed()),
                _ => {}
            }
            if start.elapsed() > timeout {
                return Err(format!("daemon still busy after {timeout:?}"));
            }
            before = now;
        }
    }

    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        stop_server(&mut self.child, &self.mnt, true);
    }
}

/// CPU seconds (user and system) process `pid` has used so far, from
/// /proc; `None` where /proc cannot tell.
pub fn cpu_seconds_of(pid: u32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 of the whole line.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ').skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) as f64 / ticks as f64)
}

/// Stops a FUSE server process serving `mnt`: SIGTERM first when it
/// unmounts on that signal, then `fusermount3 -u` (lazily as a last
/// resort), then a kill; never hangs.
pub fn stop_server(child: &mut Child, mnt: &Path, terminate_first: bool) {
    if terminate_first && matches!(child.try_wait(), Ok(None)) {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        wait_timeout(child, EXIT_TIMEOUT);
    }
    for flag in ["-u", "-uz"] {
        if !is_mounted(mnt) {
            break;
        }
        if let Ok(mut c) = Command::new("fusermount3")
            .arg(flag)
            .arg(mnt)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            && wait_timeout(&mut c, COMMAND_TIMEOUT).is_none()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    if wait_timeout(child, EXIT_TIMEOUT).is_none() {
        let _ = child.kill();
    }
    let _ = child.wait();
}

fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `path` is a mount point. Reads /proc only, so it cannot hang on a
/// stuck daemon. Bench paths are plain ASCII, so mountinfo escapes don't matter.
pub fn is_mounted(path: &Path) -> bool {
    let want = path.to_string_lossy();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(&want))
}

/// The wall time of `f`, and what it returned.
pub fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed(), out)
}

/// The median of non-empty samples (mean of the middle two when even).
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    assert!(n > 0, "median of no samples");
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The nearest-rank `p`th percentile of non-empty samples: the smallest
/// sample that at least `p` percent of the samples do not exceed.
pub fn percentile(samples: &[f64], p: u8) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    assert!(!v.is_empty(), "percentile of no samples");
    let rank = (f64::from(p) / 100.0 * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// What a figure's numbers are, which decides formatting and which way is better.
#[derive(Debug, Clone, Copy)]
pub enum Measure {
    /// Bytes per second; higher is better.
    Throughput,
    /// Operations per second, with the operation's name; higher is better.
    Rate(&'static str),
    /// Seconds for the whole operation; lower is better.
    Time,
    /// Bytes of memory; lower is better.
    Bytes,
}

/// The ratio a figure must reach, mount over native.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `mount / native >= x` (for throughputs and rates).
    AtLeast(f64),
    /// `mount / native <= x` (for times).
    AtMost(f64),
    /// `native / mount >= x`: the mount is x times faster (for times).
    FasterBy(f64),
    /// Reported, no target.
    Info,
}

/// How a row's samples are summed up.
#[derive(Debug, Clone, Copy)]
pub enum Summary {
    /// Samples are repetitions of one measurement; the median stands for them.
    Median,
    /// Samples are a distribution (one per query or per write); the row
    /// shows this percentile, and its spread is the result, not noise.
    Percentile(u8),
}

/// One line of the results table: a summary of per-repetition samples.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured.
    pub figure: String,
    /// Unit and direction.
    pub measure: Measure,
    /// Samples on the mount, one per repetition.
    pub mount: Vec<f64>,
    /// Samples on the native baseline, one per repetition; may be empty
    /// when there is no baseline.
    pub native: Vec<f64>,
    /// The target ratio.
    pub target: Target,
    /// An absolute upper bound on the mount's value, in the measure's unit
    /// (seconds or bytes), for targets stated without a baseline.
    pub limit: Option<f64>,
    /// Median, or a percentile of a distribution.
    pub summary: Summary,
}

impl Row {
    /// An empty row: median of repetitions, no absolute limit.
    pub fn new(figure: impl Into<String>, measure: Measure, target: Target) -> Row {
        Row {
            figure: figure.into(),
            measure,
            mount: Vec::new(),
            native: Vec::new(),
            target,
            limit: None,
            summary: Summary::Median,
        }
    }

    /// The same row with an absolute limit on the mount's value.
    pub fn with_limit(mut self, limit: f64) -> Row {
        self.limit = Some(limit);
        self
    }

    /// The same row summed up by a percentile instead of the median.
    pub fn with_percentile(mut self, p: u8) -> Row {
        self.summary = Summary::Percentile(p);
        self
    }

    fn summarize(&self, samples: &[f64]) -> f64 {
        match self.summary {
            Summary::Median => median(samples),
            Summary::Percentile(p) => percentile(samples, p),
        }
    }

    /// The mount's summary value.
    pub fn mount_value(&self) -> f64 {
        self.summarize(&self.mount)
    }

    /// Mount summary over native summary; `None` without a baseline.
    pub fn ratio(&self) -> Option<f64> {
        (!self.native.is_empty()).then(|| self.mount_value() / self.summarize(&self.native))
    }

    /// Best mount sample over best native sample. Interference from other
    /// processes only ever makes a sample worse, so when the medians are
    /// noisy this ratio is the better estimate of the mount's own cost.
    pub fn best_ratio(&self) -> Option<f64> {
        let best = |v: &[f64]| match self.measure {
            Measure::Time | Measure::Bytes => v.iter().copied().fold(f64::INFINITY, f64::min),
            Measure::Throughput | Measure::Rate(_) => v.iter().copied().fold(0.0, f64::max),
        };
        (!self.native.is_empty()).then(|| best(&self.mount) / best(&self.native))
    }

    /// Whether either side's repetitions spread by more than 2x, so the
    /// median says more about the machine than about the mount. Never true
    /// for distributions, whose spread is what they measure.
    pub fn noisy(&self) -> bool {
        let spread = |v: &[f64]| {
            let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                (lo.min(*x), hi.max(*x))
            });
            if v.is_empty() { 1.0 } else { hi / lo }
        };
        matches!(self.summary, Summary::Median)
            && (spread(&self.mount) > 2.0 || spread(&self.native) > 2.0)
    }

    /// `Some(true)` if every target (ratio and limit) is met, `None` when the
    /// row has none.
    pub fn met(&self) -> Option<bool> {
        let ratio = self.ratio().and_then(|r| match self.target {
            Target::AtLeast(x) => Some(r >= x),
            Target::AtMost(x) => Some(r <= x),
            Target::FasterBy(x) => Some(1.0 / r >= x),
            Target::Info => None,
        });
        let limit = self.limit.map(|l| self.mount_value() <= l);
        match (ratio, limit) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true)),
        }
    }

    fn target_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(l) = self.limit {
            parts.push(format!("<= {}", format_value(self.measure, l)));
        }
        match self.target {
            Target::AtLeast(x) => parts.push(format!(">= {x}x")),
            Target::AtMost(x) => parts.push(format!("<= {x}x")),
            Target::FasterBy(x) => parts.push(format!(">= {x}x faster")),
            Target::Info => {}
        }
        if parts.is_empty() {
            "(info)".into()
        } else {
            format!("target {}", parts.join(", "))
        }
    }

    fn label(&self) -> String {
        match self.summary {
            Summary::Median => String::new(),
            Summary::Percentile(50) => "p50 ".into(),
            Summary::Percentile(p) => format!("p{p} "),
        }
    }
}

fn format_value(measure: Measure, v: f64) -> String {
    match measure {
        Measure::Throughput if v >= 1e9 => format!("{:.2} GB/s", v / 1e9),
        Measure::Throughput => format!("{:.0} MB/s", v / 1e6),
        Measure::Rate(op) if v >= 1e6 => format!("{:.2}M {op}/s", v / 1e6),
        Measure::Rate(op) if v >= 1e4 => format!("{:.0}k {op}/s", v / 1e3),
        Measure::Rate(op) => format!("{v:.0} {op}/s"),
        Measure::Time if v >= 1.0 => format!("{v:.2} s"),
        Measure::Time if v >= 0.01 => format!("{:.0} ms", v * 1e3),
        Measure::Time => format!("{:.2} ms", v * 1e3),
        Measure::Bytes => format!("{:.0} MiB", v / f64::from(1u32 << 20)),
    }
}

/// Renders rows as an aligned table, then every raw sample, so a reader can
/// judge the noise behind each median.
pub fn render_table(rows: &[Row]) -> String {
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.clone(),
                format!(
                    "mount {}{}",
                    r.label(),
                    format_value(r.measure, r.mount_value())
                ),
                if r.native.is_empty() {
                    "native -".into()
                } else {
                    format!(
                        "native {}{}",
                        r.label(),
                        format_value(r.measure, r.summarize(&r.native))
                    )
                },
                match (r.ratio(), r.target) {
                    (None, _) => "-".into(),
                    (Some(x), Target::FasterBy(_)) => format!("{:.1}x faster", 1.0 / x),
                    (Some(x), _) => format!("{x:.2}x"),
                },
                r.target_text(),
                format!(
                    "{}{}",
                    match r.met() {
                        Some(true) => "OK",
                        Some(false) => "MISS",
                        None => "",
                    },
                    if r.noisy() {
                        " (noisy: samples vary > 2x)"
                    } else {
                        ""
                    }
                )
                .trim()
                .to_string(),
            ]
        })
        .collect();
    let mut widths = [0usize; 6];
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    for row in &cells {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            // Numbers read best right-aligned.
            if i == 3 {
                let _ = write!(line, "{c:>w$}   ");
            } else {
                let _ = write!(line, "{c:<w$}   ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\nsamples (one per repetition, in run order; distributions as min/p50/p90/p99/max),\nand best mount vs best native:\n",
    );
    for r in rows {
        let show = |v: &[f64]| match r.summary {
            _ if v.is_empty() => "-".to_string(),
            Summary::Median => v
                .iter()
                .map(|x| format_value(r.measure, *x))
                .collect::<Vec<_>>()
                .join(", "),
            Summary::Percentile(_) => format!(
                "{} samples: {}",
                v.len(),
                [0, 50, 90, 99, 100]
                    .map(|p| format_value(r.measure, percentile(v, p)))
                    .join(" / ")
            ),
        };
        let best = r
            .best_ratio()
            .map_or(String::new(), |b| format!("   (best vs best: {b:.2}x)"));
        let _ = writeln!(
            out,
            "  {}{best}\n    mount:  {}\n    native: {}",
            r.figure,
            show(&r.mount),
            show(&r.native)
        );
    }
    out
}

/// The largest resident set a process reached, split into heap (`RssAnon`)
/// and mapped files (`RssFile`: the binary and mmap'd index pages, which
/// the kernel can take back at will), and the phase it was reached in.
#[derive(Clone, Debug, Default)]
pub struct MemoryPeak {
    pub rss_kib: u64,
    pub anon_kib: u64,
    pub file_kib: u64,
    pub phase: String,
    /// The largest heap seen, whenever it was.
    pub max_anon_kib: u64,
    pub max_anon_phase: String,
}

/// Reads /proc/<pid>/status every 20 ms on a thread of its own and keeps
/// the peak; `VmHWM` gives the peak but not what it was made of.
pub struct MemorySampler {
    shared: std::sync::Arc<std::sync::Mutex<(String, MemoryPeak, bool)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MemorySampler {
    fn start(pid: u32, phase: &str) -> MemorySampler {
        let shared = std::sync::Arc::new(std::sync::Mutex::new((
            phase.to_string(),
            MemoryPeak::default(),
            false,
        )));
        let inner = std::sync::Arc::clone(&shared);
        let thread = std::thread::spawn(move || {
            let path = format!("/proc/{pid}/status");
            loop {
                let Ok(status) = fs::read_to_string(&path) else {
                    return;
                };
                let field = |name: &str| -> u64 {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                        .and_then(|r| r.split_whitespace().next()?.parse().ok())
                        .unwrap_or(0)
                };
                let (rss, anon, file) = (field("VmRSS"), field("RssAnon"), field("RssFile"));
                {
                    let mut guard = inner.lock().unwrap_or_else(|p| p.into_inner());
                    let (phase, peak, stop) = &mut *guard;
                    if *stop {
                        return;
                    }
                    if rss > peak.rss_kib {
                        (peak.rss_kib, peak.anon_kib, peak.file_kib) = (rss, anon, file);
                        peak.phase.clone_from(phase);
                    }
                    if anon > peak.max_anon_kib {
                        peak.max_anon_kib = anon;
                        peak.max_anon_phase.clone_from(phase);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        MemorySampler {
            shared,
            thread: Some(thread),
        }
    }

    /// Names what the process is doing from now on.
    pub fn phase(&self, phase: &str) {
        let mut guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        guard.0 = phase.to_string();
    }

    /// The peak so far.
    pub fn peak(&self) -> MemoryPeak {
        let guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        guard.1.clone()
    }
}

impl Drop for MemorySampler {
    fn drop(&mut self) {
        self.shared.lock().unwrap_or_else(|p| p.into_inner()).2 = true;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
