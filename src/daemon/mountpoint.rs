//! Mountpoint checks, stale-mount recovery and unmounting.
//!
//! A daemon killed with SIGKILL leaves its mount behind; every access then
//! fails with ENOTCONN ("Transport endpoint is not connected"), or with
//! ECONNABORTED right after its connection was aborted. `prepare`
//! recognises that state and detaches the dead mount before mounting again.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

/// Checks that `mountpoint` can be mounted on, recovering a stale mount.
pub(crate) fn prepare(mountpoint: &Path) -> anyhow::Result<()> {
    abort_orphaned(mountpoint);
    // A dead mount may still answer stat from cached attributes; opening
    // the directory always reaches the (missing) daemon and gives ENOTCONN
    // (ECONNABORTED while an aborted connection is torn down).
    let probe = std::fs::metadata(mountpoint).and_then(|_| std::fs::read_dir(mountpoint).map(drop));
    match probe {
        Err(e) if is_dead_mount(&e) => {
            tracing::warn!(
                "{} is a stale mount left by a dead daemon; detaching it",
                mountpoint.display()
            );
            detach_stale(mountpoint).context("cannot recover the stale mount")?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            bail!("mountpoint {} does not exist", mountpoint.display())
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            bail!("mountpoint {} is not a directory", mountpoint.display())
        }
        Err(e) => bail!("cannot use mountpoint {}: {e}", mountpoint.display()),
        Ok(()) => {}
    }
    let meta = std::fs::metadata(mountpoint)
        .with_context(|| format!("cannot use mountpoint {}", mountpoint.display()))?;
    if !meta.is_dir() {
        bail!("mountpoint {} is not a directory", mountpoint.display());
    }
    if is_mounted(mountpoint) {
        bail!(
            "{} is already mounted; unmount it first (mnemofs unmount {})",
            mountpoint.display(),
            mountpoint.display()
        );
    }
    let mut entries = std::fs::read_dir(mountpoint)
        .with_context(|| format!("cannot read mountpoint {}", mountpoint.display()))?;
    if entries.next().is_some() {
        bail!("mountpoint {} is not empty", mountpoint.display());
    }
    if !Path::new("/dev/fuse").exists() {
        bail!("/dev/fuse does not exist: load the fuse kernel module (modprobe fuse)");
    }
    Ok(())
}

/// Whether an access failed because the mount's daemon is gone.
pub(crate) fn is_dead_mount(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED))
}

/// Turns a failed mount into one clear sentence.
pub(crate) fn explain_mount_error(mountpoint: &Path, err: io::Error) -> anyhow::Error {
    let mp = mountpoint.display();
    match err.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => anyhow!(
            "permission denied mounting {mp}: the user needs access to /dev/fuse and a setuid fusermount3 (install fuse3)"
        ),
        Some(libc::ENOENT) => {
            anyhow!("cannot mount {mp}: {err} (is fusermount3 installed? apt-get install fuse3)")
        }
        _ => anyhow!("cannot mount {mp}: {err}"),
    }
}

/// Ends the FUSE connection of a mnemofs mount whose daemon has died
/// while one of its own threads waited on the mount: the kernel waits
/// forever for an answer nobody will send, so the process never finishes
/// exiting, and its mount (and store lock) hang on. Aborting the
/// connection through fusectl (`/sys/fs/fuse/connections`, mounted here
/// if root finds it missing) fails that wait; the dead daemon exits and
/// the mount answers ENOTCONN, which `prepare` and `unmount` detach.
/// True if a connection was aborted.
#[cfg(target_os = "linux")]
pub(crate) fn abort_orphaned(mountpoint: &Path) -> bool {
    // Never canonicalize the mountpoint itself: on such a mount that hangs.
    let target = match (mountpoint.parent(), mountpoint.file_name()) {
        (Some(parent), Some(name)) => absolute(if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        })
        .join(name),
        _ => std::path::absolute(mountpoint).unwrap_or_else(|_| mountpoint.to_path_buf()),
    };
    let Some(device) = super::registry::fuse_connection(&target) else {
        return false;
    };
    let Some(entry) = super::registry::recorded_at(&target) else {
        return false;
    };
    if super::registry::alive(entry.pid) {
        return false;
    }
    let connections = Path::new("/sys/fs/fuse/connections");
    match abort_connection(device) {
        Ok(()) => {
            tracing::warn!(
                "the daemon (pid {}) of {} is gone and left its mount behind; its connection was aborted",
                entry.pid,
                target.display()
            );
            // The dead daemon lets go of the store lock as its last
            // thread exits.
            let deadline = Instant::now() + Duration::from_secs(5);
            while has_live_thread(entry.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            true
        }
        Err(e) => {
            tracing::warn!(
                "the daemon (pid {}) of {} is gone and left its mount behind, and its connection cannot be aborted ({e}): mount fusectl (mount -t fusectl none {}) or run umount -f {} as root",
                entry.pid,
                target.display(),
                connections.display(),
                target.display()
            );
            false
        }
    }
}

/// Ends the session of a mount that was unmounted here but lives on in
/// another mount namespace (a container given it as a volume, a process
/// started with `unshare -m`): there it would keep the daemon, and the
/// store's lock, until that namespace ends, and `unmount` and SIGTERM
/// would wait for it. Once the mount is gone from this namespace and such
/// a copy is seen, the connection is aborted (the copy then answers
/// `ENOTCONN`) and the daemon stops as after any unmount. A mount detached
/// lazily whose files are still open is in no namespace, and is left to
/// end when they are closed.
pub(crate) struct CopiesWatch {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CopiesWatch {
    #[cfg(target_os = "linux")]
    pub(crate) fn start(mountpoint: &Path) -> CopiesWatch {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let device = super::registry::fuse_connection(mountpoint);
        let thread = device.and_then(|device| {
            let stop = std::sync::Arc::clone(&stop);
            let shown = mountpoint.display().to_string();
            std::thread::Builder::new()
                .name("mnemofs-copies".into())
                .spawn(move || {
                    // Seen twice in a row, a second apart, and the session
                    // still running: a session that ended frees its device
                    // number at once for a new mount to take, and ends its
                    // loop (which stops this watch) within milliseconds.
                    let mut seen = 0;
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(COPIES_EVERY);
                        if super::registry::connection_here(device)
                            || !super::registry::connection_elsewhere(device)
                        {
                            seen = 0;
                            continue;
                        }
                        seen += 1;
                        if seen < 2 || stop.load(Ordering::Relaxed) {
                            continue;
                        }
                        tracing::warn!(
                            "{shown} is unmounted here but still mounted in another mount namespace (a container?); closing its connection so that the daemon can stop"
                        );
                        if let Err(e) = abort_connection(device) {
                            tracing::error!("cannot close the connection of {shown}: {e}");
                        }
                        return;
                    }
                })
                .ok()
        });
        CopiesWatch { stop, thread }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn start(_mountpoint: &Path) -> CopiesWatch {
        CopiesWatch {
            stop: Default::default(),
            thread: None,
        }
    }

    pub(crate) fn stop(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How often a mount's copies in other namespaces are looked for.
const COPIES_EVERY: Duration = Duration::from_secs(1);

/// Aborts the FUSE connection `device` through fusectl.
#[cfg(target_os = "linux")]
fn abort_connection(device: u32) -> io::Result<()> {
    let connections = Path::new("/sys/fs/fuse/connections");
    let connection = connections.join(device.to_string());
    if !connection.exists() {
        mount_fusectl(connections);
    }
    std::fs::write(connection.join("abort"), "1")
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn abort_orphaned(_mountpoint: &Path) -> bool {
    false
}

/// Whether any thread of process `pid` has yet to exit.
#[cfg(target_os = "linux")]
fn has_live_thread(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|task| {
        std::fs::read_to_string(task.path().join("stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|state| !state.trim_start().starts_with(['Z', 'X']))
        })
    })
}

/// Mounts fusectl where it belongs, when root finds it missing.
#[cfg(target_os = "linux")]
fn mount_fusectl(at: &Path) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || is_mounted(at) {
        return;
    }
    let (source, fstype) = (c"fusectl", c"fusectl");
    let Ok(target) = std::ffi::CString::new(at.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: NUL-terminated strings; no data.
    let mounted = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if mounted != 0 {
        tracing::debug!("cannot mount fusectl: {}", io::Error::last_os_error());
    }
}

/// Decodes the octal escapes (`\040` for space) of /proc/self/mountinfo.
#[cfg(target_os = "linux")]
fn unescape(field: &[u8]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        if field[i] == b'\\' && field.len() >= i + 4 {
            let oct = &field[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                out.push((oct[0] - b'0') * 64 + (oct[1] - b'0') * 8 + (oct[2] - b'0'));
                i += 4;
                continue;
            }
        }
        out.push(field[i]);
        i += 1;
    }
    std::ffi::OsString::from_vec(out)
}

/// True if `path` is a mount point in this mount namespace.
#[cfg(target_os = "linux")]
pub fn is_mounted(path: &Path) -> bool {
    let target = absolute(path);
    let Ok(info) = std::fs::read("/proc/self/mountinfo") else {
        return false;
    };
    info.split(|b| *b == b'\n').any(|line| {
        line.split(|b| *b == b' ')
            .nth(4)
            .is_some_and(|mp| unescape(mp) == target.as_os_str())
    })
}

/// True if `path` is a mount point.
#[cfg(target_os = "macos")]
pub fn is_mounted(path: &Path) -> bool {
    let target = absolute(path);
    super::mount_table::mounts()
        .iter()
        .any(|m| m.mountpoint == target)
}

fn absolute(path: &Path) -> PathBuf {
    // canonicalize fails on a stale mount; fall back to a lexical absolute path.
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Unmounts a mnemofs mount (`lazy` detaches it even while busy).
pub fn unmount(mountpoint: &Path, lazy: bool) -> anyhow::Result<()> {
    abort_orphaned(mountpoint);
    detach_or_wait(mountpoint, lazy)
}

/// Detaches a mount whose daemon is gone.
fn detach_stale(mountpoint: &Path) -> anyhow::Result<()> {
    detach_or_wait(mountpoint, true)
}

fn detach_or_wait(mountpoint: &Path, lazy: bool) -> anyhow::Result<()> {
    let target = absolute(mountpoint);
    if !is_mounted(&target) {
        bail!("{} is not mounted", mountpoint.display());
    }
    // Known before the mount goes away: the daemon to wait for.
    let daemon = super::registry::by_mountpoint(&target).map(|e| e.pid);
    let unmounted = || {
        if lazy {
            Ok(())
        } else {
            wait_for_exit(daemon, mountpoint)
        }
    };
    // The daemon's own organizer writes through the mount for a moment at
    // a time, which makes the kernel answer EBUSY: a busy mount that nobody
    // else holds is tried again for a while.
    let deadline = Instant::now() + BUSY_WAIT;
    loop {
        let last_error = match detach(&target, lazy) {
            Ok(()) => return unmounted(),
            Err(e) => e,
        };
        let others: Vec<String> = holders(&target)
            .into_iter()
            .filter(|(pid, _)| Some(*pid) != daemon)
            .map(|(_, who)| who)
            .collect();
        if !others.is_empty() {
            bail!(
                "cannot unmount {}: it is in use by {}; close them, or detach it now with mnemofs unmount --lazy {}",
                mountpoint.display(),
                others.join(", "),
                mountpoint.display()
            );
        }
        if !last_error.to_ascii_lowercase().contains("busy") || Instant::now() > deadline {
            bail!("cannot unmount {}: {last_error}", mountpoint.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How long a mount that only its own daemon keeps busy is tried again.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// One attempt: fusermount3 (or fusermount), then umount2 as root.
#[cfg(target_os = "linux")]
fn detach(target: &Path, lazy: bool) -> Result<(), String> {
    let mut last_error = String::new();
    for tool in ["fusermount3", "fusermount"] {
        let mut cmd = std::process::Command::new(tool);
        cmd.arg(if lazy { "-uz" } else { "-u" })
            .arg("--")
            .arg(target);
        match cmd.output() {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => last_error = String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => last_error = e.to_string(),
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let c = std::ffi::CString::new(target.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        let flags = if lazy { libc::MNT_DETACH } else { 0 };
        // SAFETY: NUL-terminated path.
        if unsafe { libc::umount2(c.as_ptr(), flags) } == 0 {
            return Ok(());
        }
        last_error = io::Error::last_os_error().to_string();
    }
    if last_error.is_empty() {
        last_error = "fusermount3 not found (apt-get install fuse3)".into();
    }
    Err(last_error)
}

/// One attempt: unmount(2), which macOS lets the user who mounted a
/// macFUSE filesystem call; lazy is `MNT_FORCE` (macOS has no detach).
#[cfg(target_os = "macos")]
fn detach(target: &Path, lazy: bool) -> Result<(), String> {
    let c = std::ffi::CString::new(target.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    let flags = if lazy { libc::MNT_FORCE } else { 0 };
    // SAFETY: NUL-terminated path.
    if unsafe { libc::unmount(c.as_ptr(), flags) } == 0 {
        return Ok(());
    }
    Err(io::Error::last_os_error().to_string())
}

/// How long `unmount` waits for the daemon to save its index and exit.
const EXIT_WAIT: Duration = Duration::from_secs(120);

/// Waits until the daemon that served the mount has exited (its index
/// committed, its store lock released), so that a mount right after
/// `unmount` always works.
fn wait_for_exit(pid: Option<u32>, mountpoint: &Path) -> anyhow::Result<()> {
    let Some(pid) = pid else {
        return Ok(());
    };
    let alive = || super::registry::alive(pid);
    let start = Instant::now();
    let mut said = false;
    while alive() {
        if start.elapsed() > EXIT_WAIT {
            bail!(
                "{} is unmounted, but its daemon (pid {pid}) has not exited after {} s; see its log",
                mountpoint.display(),
                EXIT_WAIT.as_secs()
            );
        }
        if !said && start.elapsed() > Duration::from_secs(2) {
            eprintln!("mnemofs: waiting for the daemon (pid {pid}) to save its index");
            said = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Processes that hold something under `mountpoint` (their working
/// folder, root, an open file or a mapping), as `pid 12 (vim)`. Read from
/// `/proc` by link text only, so a hung mount cannot hang the listing.
/// Empty on macOS, which has no `/proc`.
fn holders(mountpoint: &Path) -> Vec<(u32, String)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    let under = |link: &Path| std::fs::read_link(link).is_ok_and(|t| t.starts_with(mountpoint));
    let mut out = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own {
            continue;
        }
        let dir = entry.path();
        let holds = under(&dir.join("cwd"))
            || under(&dir.join("root"))
            || std::fs::read_dir(dir.join("fd"))
                .is_ok_and(|fds| fds.flatten().any(|fd| under(&fd.path())))
            || std::fs::read_to_string(dir.join("maps")).is_ok_and(|maps| {
                maps.lines()
                    .filter_map(|l| l.split_whitespace().nth(5))
                    .any(|p| Path::new(p).starts_with(mountpoint))
            });
        if holds {
            let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            out.push((pid, format!("pid {pid} ({})", name.trim())));
        }
    }
    out
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape(b"/mnt/a\\040b"), OsString::from("/mnt/a b"));
        assert_eq!(unescape(b"/plain"), OsString::from("/plain"));
        assert_eq!(unescape(b"/tail\\"), OsString::from("/tail\\"));
    }
}
