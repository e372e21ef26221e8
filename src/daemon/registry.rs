//! How commands find the daemon that serves a store.
//!
//! A running daemon writes one small JSON file, named after its store, into
//! `$XDG_RUNTIME_DIR/mnemofs/` (or, where that is unset, the `run/` folder
//! beside the default state dirs): its store, state dir, mountpoint, pid
//! and control socket. So `mnemofs dream --store S` reaches the daemon
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

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as i32, 0) == 0 }
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
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
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

fn read_live(file: &Path) -> Option<Entry> {
    let entry: Entry = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    if alive(entry.pid) {
        Some(entry)
    } else {
        let _ = std::fs::remove_file(file);
        None
    }
}

/// True if `path` is where a mnemofs filesystem is mounted.
pub fn is_mnemofs_mount(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    info.lines().any(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            return false;
        };
        let mount = fields.get(4).map(|m| unescape(m));
        let fstype = fields.get(dash + 1).copied().unwrap_or_default();
        fstype == "fuse.mnemofs" && mount.as_deref() == Some(path)
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal.
pub(crate) fn unescape(field: &str) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_names_are_unescaped() {
        assert_eq!(unescape(r"/mnt/a\040b"), PathBuf::from("/mnt/a b"));
        assert_eq!(unescape(r"/x\134y"), PathBuf::from(r"/x\y"));
    }
}
