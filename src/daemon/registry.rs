//! How commands find the daemon that serves a store.
//!
//! A running daemon writes one small JSON file, named after its store, into
//! `$XDG_RUNTIME_DIR/mnemofs/` (or, where that is unset, the `run/` folder
//! beside the default state dirs): its store, state dir, mountpoint, pid,
//! control socket and public socket (which listens in the same folder). So `mnemofs dream --store S` reaches the daemon
//! serving S whatever `--state-dir` it was started with, and a mountpoint
//! can be given wherever a store is. An entry whose process is gone is
//! stale and ignored (and removed when seen).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One serving daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The store's backing directory (canonical).
    pub store: PathBuf,
    /// The daemon's state dir.
    pub state_dir: PathBuf,
    /// Where it is mounted, if it mounts.
    pub mountpoint: Option<PathBuf>,
    /// The daemon's pid.
    pub pid: u32,
    /// Its control socket.
    pub socket: PathBuf,
    /// Its public JSON-RPC socket, when it listens on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_socket: Option<PathBuf>,
}

/// The registry's folder.
pub fn dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if Path::new(&d).is_absolute() => PathBuf::from(d).join("mnemofs"),
        _ => super::paths::state_root().join("run"),
    }
}

fn file_for(store: &Path) -> PathBuf {
    dir().join(format!("{}.json", super::paths::store_key(store)))
}

/// Whether process `pid` runs. A zombie has exited: its parent (a test, a
/// supervisor) has yet to reap it.
pub(crate) fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid as i32, 0) == 0 };
    exists
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|state| state.trim_start().starts_with('Z'))
        })
}

/// The daemon's entry while it serves; removed on drop.
#[derive(Debug)]
pub struct Registration {
    file: PathBuf,
}

impl Registration {
    /// Records `entry` (the store lock is held, so an old entry is stale).
    pub fn register(entry: &Entry) -> io::Result<Registration> {
        let file = file_for(&entry.store);
        if let Some(parent) = file.parent() {
            super::paths::make_private_dir(parent)?;
        }
        let tmp = file.with_extension(format!("json.{}", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec_pretty(entry)?)?;
        std::fs::rename(&tmp, &file)?;
        Ok(Registration { file })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The live daemon serving `store`, if its entry is there.
pub fn by_store(store: &Path) -> Option<Entry> {
    read_live(&file_for(store))
}

/// The live daemon mounted at `mountpoint`, if any.
pub fn by_mountpoint(mountpoint: &Path) -> Option<Entry> {
    let entries = std::fs::read_dir(dir()).ok()?;
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| read_live(&e.path()))
        .find(|e| e.mountpoint.as_deref() == Some(mountpoint))
}

/// The entry recorded for `store`, whether or not its daemon still runs
/// (a daemon killed with SIGKILL leaves it behind, with its mountpoint).
pub fn recorded(store: &Path) -> Option<Entry> {
    serde_json::from_slice(&std::fs::read(file_for(store)).ok()?).ok()
}

/// The entry of a daemon mounted at `mountpoint`, whether or not it runs.
pub(crate) fn recorded_at(mountpoint: &Path) -> Option<Entry> {
    std::fs::read_dir(dir())
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice::<Entry>(&std::fs::read(e.path()).ok()?).ok())
        .find(|e| e.mountpoint.as_deref() == Some(mountpoint))
}

/// The entry in `file` if its daemon runs. A dead daemon's entry goes,
/// unless its mount is still there: recovering that mount needs it.
fn read_live(file: &Path) -> Option<Entry> {
    // Another user's entry (in a runtime dir they can write) names their
    // socket: never followed.
    if !super::paths::is_ours(file) {
        return None;
    }
    let entry: Entry = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    if alive(entry.pid) {
        return Some(entry);
    }
    if !entry.mountpoint.as_deref().is_some_and(is_mnemofs_mount) {
        let _ = std::fs::remove_file(file);
    }
    None
}

/// True if `path` is where a mnemofs filesystem is mounted.
pub fn is_mnemofs_mount(path: &Path) -> bool {
    mnemofs_mounts().iter().any(|m| m == path)
}

/// Every mnemofs mountpoint in this mount namespace.
#[cfg(target_os = "linux")]
pub(crate) fn mnemofs_mounts() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(mnemofs_mount)
        .map(|(mountpoint, _)| mountpoint)
        .collect()
}

/// The FUSE connection number of the mnemofs mount at `mountpoint`: its
/// device's minor number, the name of its folder under fusectl.
#[cfg(target_os = "linux")]
pub(crate) fn fuse_connection(mountpoint: &Path) -> Option<u32> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (at, device) = mnemofs_mount(line)?;
        let (major, minor) = device.split_once(':')?;
        (at == mountpoint && major == "0")
            .then(|| minor.parse().ok())
            .flatten()
    })
}

/// Whether a mount table (the text of a `mountinfo`) holds the mnemofs
/// mount of connection `device` (the minor number of its `0:N` device).
#[cfg(target_os = "linux")]
fn holds_connection(mountinfo: &str, device: u32) -> bool {
    let wanted = format!("0:{device}");
    mountinfo
        .lines()
        .any(|line| mnemofs_mount(line).is_some_and(|(_, dev)| dev == wanted))
}

/// Whether this process's mount namespace still has the mount of
/// connection `device`, wherever it was moved.
#[cfg(target_os = "linux")]
pub(crate) fn connection_here(device: u32) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|info| holds_connection(&info, device))
}

/// Whether another mount namespace holds a copy of the mount of
/// connection `device` (a container given it as a volume, `unshare -m`):
/// the session then lives on after its mount here is gone. Only the
/// namespaces of processes this one may look into are seen.
#[cfg(target_os = "linux")]
pub(crate) fn connection_elsewhere(device: u32) -> bool {
    let own = std::fs::read_link("/proc/self/ns/mnt").ok();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    let mut seen = std::collections::HashSet::new();
    procs.flatten().any(|p| {
        let dir = p.path();
        let is_pid = p
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        let Some(ns) = is_pid
            .then(|| std::fs::read_link(dir.join("ns/mnt")).ok())
            .flatten()
        else {
            return false;
        };
        if Some(&ns) == own.as_ref() || !seen.insert(ns) {
            return false;
        }
        std::fs::read_to_string(dir.join("mountinfo"))
            .is_ok_and(|info| holds_connection(&info, device))
    })
}

/// Every mnemofs mountpoint.
#[cfg(target_os = "macos")]
pub(crate) fn mnemofs_mounts() -> Vec<PathBuf> {
    super::mount_table::mounts()
        .into_iter()
        .filter(|m| m.is_mnemofs())
        .map(|m| m.mountpoint)
        .collect()
}

/// The mountpoint and device (`major:minor`) of a mountinfo line if it is
/// a mnemofs mount: type `fuse.mnemofs`, or plain `fuse` with source
/// `mnemofs` when root mounted it without fusermount3.
#[cfg(target_os = "linux")]
fn mnemofs_mount(line: &str) -> Option<(PathBuf, &str)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let dash = fields.iter().position(|f| *f == "-")?;
    let (device, mountpoint) = (*fields.get(2)?, fields.get(4)?);
    let fstype = *fields.get(dash + 1)?;
    let source = *fields.get(dash + 2)?;
    (fstype == "fuse.mnemofs" || (fstype == "fuse" && source == "mnemofs"))
        .then(|| (unescape(mountpoint), device))
}

/// mountinfo escapes space, tab, newline and backslash as octal.
#[cfg(target_os = "linux")]
fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = field
                .get(i + 1..i + 4)
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn mnemofs_mounts_are_recognised_with_and_without_fusermount3() {
        let by_user = "56 27 0:53 / /mnt/a\\040b rw - fuse.mnemofs mnemofs rw,user_id=1000";
        let by_root = "57 27 0:54 / /mnt/r rw,nosuid - fuse mnemofs rw,user_id=0,group_id=0";
        let other = "58 27 0:55 / /mnt/s rw - fuse sshfs rw,user_id=0";
        assert_eq!(
            mnemofs_mount(by_user),
            Some((PathBuf::from("/mnt/a b"), "0:53"))
        );
        assert_eq!(
            mnemofs_mount(by_root),
            Some((PathBuf::from("/mnt/r"), "0:54"))
        );
        assert_eq!(mnemofs_mount(other), None);
    }

    #[test]
    fn mountinfo_names_are_unescaped() {
        assert_eq!(unescape(r"/mnt/a\040b"), PathBuf::from("/mnt/a b"));
        assert_eq!(unescape(r"/x\134y"), PathBuf::from(r"/x\y"));
    }
}
