//! `mnemofs doctor`: checks what a mount needs and says how to fix what is
//! wrong, one line per finding.
//!
//! It only looks: it creates no store, state dir or index, and probes a
//! mount from a helper thread so that a daemon that hangs cannot hang the
//! doctor. Everything but the FUSE checks works without FUSE, and the
//! FUSE checks say what is missing rather than failing early.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;

use crate::config::Config;
use crate::index::{Index, IndexError};

/// Least free space on the store's or the state dir's filesystem before
/// the doctor warns.
const LOW_SPACE: u64 = 256 << 20;
/// How long a mount may take to answer the stale-mount probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// All is well.
    Ok,
    /// Worth knowing; nothing to fix now.
    Note,
    /// Works, but may bite later.
    Warn,
    /// mnemofs cannot work until this is fixed.
    Fail,
}

/// One line of the report.
#[derive(Debug)]
struct Finding {
    level: Level,
    text: String,
}

fn finding(level: Level, text: impl Into<String>) -> Finding {
    Finding {
        level,
        text: text.into(),
    }
}

/// What the doctor examines.
#[derive(Debug)]
pub struct Subject {
    /// The store (absolute; it may not exist yet).
    pub store: PathBuf,
    /// Its state dir (absolute; it may not exist yet).
    pub state_dir: PathBuf,
    /// The configuration file, or `None` for the default one.
    pub config: Option<PathBuf>,
}

/// Prints every finding; fails (exit 1) when any check failed.
pub fn run(subject: &Subject) -> anyhow::Result<()> {
    let mut findings = Vec::new();
    findings.push(fuse_device());
    // macOS mounts and unmounts through macFUSE, without fusermount3.
    #[cfg(target_os = "linux")]
    findings.push(fusermount());
    findings.extend(allow_other());
    findings.extend(directory(
        "store",
        &subject.store,
        "mnemofs mount creates it",
    ));
    findings.extend(directory(
        "state dir",
        &subject.state_dir,
        "mnemofs creates it on first use",
    ));
    findings.push(index(&subject.state_dir));
    findings.extend(stale_mounts(&subject.store));
    findings.push(service_unit());
    findings.extend(config(subject.config.as_deref()));
    findings.push(meaning(subject.config.as_deref()));
    for f in &findings {
        let label = match f.level {
            Level::Ok => "ok     ",
            Level::Note => "note   ",
            Level::Warn => "warning",
            Level::Fail => "FAIL   ",
        };
        println!("{label} {}", f.text);
    }
    let failed: Vec<&Finding> = findings.iter().filter(|f| f.level == Level::Fail).collect();
    if failed.is_empty() {
        return Ok(());
    }
    for f in &failed {
        eprintln!("mnemofs: doctor: {}", f.text);
    }
    bail!("{} of the checks above failed", failed.len())
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// What [`super::check_fuse`] found when it passed.
#[cfg(target_os = "linux")]
const FUSE_OK: &str = "FUSE: /dev/fuse is the FUSE device and opens read-write";
/// What [`super::check_fuse`] found when it passed.
#[cfg(not(target_os = "linux"))]
const FUSE_OK: &str = "FUSE: macFUSE is installed";

fn fuse_device() -> Finding {
    match super::check_fuse() {
        Ok(()) => finding(Level::Ok, FUSE_OK),
        Err(e) => finding(Level::Fail, format!("{e}")),
    }
}

#[cfg(target_os = "linux")]
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

#[cfg(target_os = "linux")]
fn fusermount() -> Finding {
    use std::os::unix::fs::MetadataExt;
    let Some(path) = find_on_path("fusermount3") else {
        let level = if is_root() { Level::Warn } else { Level::Fail };
        return finding(
            level,
            "fusermount3: not found, so only root can mount and unmount; fix: apt-get install fuse3",
        );
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.uid() == 0 && m.mode() & 0o4000 != 0 => finding(
            Level::Ok,
            format!("fusermount3: {} is setuid root", path.display()),
        ),
        Ok(_) => finding(
            if is_root() { Level::Warn } else { Level::Fail },
            format!(
                "fusermount3: {} is not setuid root, so only root can mount; fix: chown root {0} && chmod u+s {0}",
                path.display()
            ),
        ),
        Err(e) => finding(Level::Fail, format!("fusermount3: {}: {e}", path.display())),
    }
}

/// Where allow_other is configured: the installed unit or an fstab line.
fn allow_other_sources() -> Vec<String> {
    let mut sources = Vec::new();
    let unit = super::install::unit_path();
    if std::fs::read_to_string(&unit).is_ok_and(|t| t.contains("--allow-other")) {
        sources.push(unit.display().to_string());
    }
    let fstab = std::fs::read_to_string("/etc/fstab").unwrap_or_default();
    if fstab.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        !line.trim_start().starts_with('#')
            && fields.get(2) == Some(&"mnemofs")
            && fields
                .get(3)
                .is_some_and(|o| o.split(',').any(|o| o == "allow_other"))
    }) {
        sources.push("/etc/fstab".into());
    }
    sources
}

fn allow_other() -> Option<Finding> {
    let sources = allow_other_sources();
    if sources.is_empty() {
        return None;
    }
    let conf = std::fs::read_to_string("/etc/fuse.conf").unwrap_or_default();
    let allowed = conf
        .lines()
        .any(|l| l.split('#').next().unwrap_or_default().trim() == "user_allow_other");
    let by = sources.join(" and ");
    Some(if allowed {
        finding(
            Level::Ok,
            format!("allow_other ({by}): /etc/fuse.conf has user_allow_other"),
        )
    } else if is_root() {
        finding(
            Level::Note,
            format!(
                "allow_other ({by}): root may use it; other users need user_allow_other in /etc/fuse.conf"
            ),
        )
    } else {
        finding(
            Level::Fail,
            format!(
                "allow_other ({by}) needs user_allow_other in /etc/fuse.conf; fix: echo user_allow_other >> /etc/fuse.conf (as root)"
            ),
        )
    })
}

fn directory(what: &str, path: &Path, when_missing: &str) -> Vec<Finding> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return vec![finding(
                Level::Note,
                format!("{what} {shown} does not exist yet; {when_missing}"),
            )];
        }
        Err(e) => return vec![finding(Level::Fail, format!("{what} {shown}: {e}"))],
    };
    if !meta.is_dir() {
        return vec![finding(
            Level::Fail,
            format!("{what} {shown} is not a directory; fix: move it away or pick another path"),
        )];
    }
    let mut out = Vec::new();
    use nix::unistd::{AccessFlags, access};
    let mode = meta.permissions().mode() & 0o7777;
    if let Err(e) = access(
        path,
        AccessFlags::R_OK | AccessFlags::W_OK | AccessFlags::X_OK,
    ) {
        out.push(finding(
            Level::Fail,
            format!("{what} {shown} (mode {mode:o}) is not readable and writable by this user ({e}); fix: chown it to the user who mounts"),
        ));
    } else if mode & 0o022 != 0 {
        out.push(finding(
            Level::Warn,
            format!("{what} {shown} is writable by others (mode {mode:o}); fix: chmod 700 {shown}"),
        ));
    } else {
        out.push(finding(
            Level::Ok,
            format!("{what} {shown} (mode {mode:o})"),
        ));
    }
    match nix::sys::statvfs::statvfs(path) {
        Ok(s) => {
            // fsblkcnt_t and c_ulong are 32 bits wide on some targets.
            #[allow(clippy::useless_conversion)]
            let free = u64::from(s.blocks_available()).saturating_mul(u64::from(s.fragment_size()));
            if free < LOW_SPACE {
                out.push(finding(
                    Level::Warn,
                    format!(
                        "{what} {shown}: only {} MiB free; fix: free some space",
                        free >> 20
                    ),
                ));
            }
        }
        Err(e) => out.push(finding(
            Level::Warn,
            format!("{what} {shown}: cannot tell the free space ({e})"),
        )),
    }
    out
}

fn index(state_dir: &Path) -> Finding {
    match Index::open_read_only(state_dir, None) {
        Ok(index) => {
            let documents = index.status().documents;
            index.shutdown();
            finding(Level::Ok, format!("index: {documents} documents"))
        }
        Err(IndexError::Missing(_)) => finding(
            Level::Note,
            "index: none yet; the first mount, or mnemofs reindex, builds it",
        ),
        Err(e) => finding(
            Level::Fail,
            format!(
                "index: cannot read it ({e}); fix: mnemofs reindex (the index is derived, nothing is lost)"
            ),
        ),
    }
}

/// Whether a mount's daemon answers: `Some(false)` for a dead one.
pub(super) fn answers(mountpoint: &Path) -> Option<bool> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let path = mountpoint.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("mnemofs-doctor-probe".into())
        .spawn(move || {
            let result = std::fs::read_dir(&path).map(drop);
            let dead = result.is_err_and(|e| super::mountpoint::is_dead_mount(&e));
            let _ = tx.send(!dead);
        });
    spawned.ok()?;
    rx.recv_timeout(PROBE_TIMEOUT).ok()
}

/// Stale mounts of this store fail; a stale mount of another store (or of
/// one the registry no longer knows) is only a warning, since it is not in
/// this store's way.
fn stale_mounts(store: &Path) -> Vec<Finding> {
    let served_at = super::registry::recorded(store).and_then(|e| e.mountpoint);
    let mut out = Vec::new();
    for mountpoint in super::registry::mnemofs_mounts() {
        let shown = mountpoint.display();
        let ours = served_at.as_deref() == Some(mountpoint.as_path());
        let fix =
            format!("fix: mnemofs unmount --lazy {shown} (mounting there again also recovers it)");
        match (answers(&mountpoint), ours) {
            (Some(true), true) => out.push(finding(
                Level::Ok,
                format!("mount: this store is mounted at {shown} and answers"),
            )),
            (Some(true), false) => {}
            (Some(false), true) => out.push(finding(
                Level::Fail,
                format!("stale mount of this store at {shown}: its daemon died; {fix}"),
            )),
            (Some(false), false) => out.push(finding(
                Level::Warn,
                format!("stale mnemofs mount at {shown} (another store): its daemon died; {fix}"),
            )),
            (None, _) => out.push(finding(
                Level::Warn,
                format!("mnemofs mount at {shown} does not answer within {PROBE_TIMEOUT:?}; its daemon may be hung: mnemofs unmount --lazy {shown}"),
            )),
        }
    }
    out
}

fn service_unit() -> Finding {
    let path = super::install::unit_path();
    let Ok(unit) = std::fs::read_to_string(&path) else {
        return finding(
            Level::Note,
            "service: no systemd user unit; mnemofs install mounts ~/memories at login",
        );
    };
    let binary = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .and_then(|cmd| cmd.split_whitespace().next())
        .map(|b| b.trim_matches('"').replace("%%", "%"));
    if let Some(binary) = binary
        && !Path::new(&binary).is_file()
    {
        return finding(
            Level::Fail,
            format!(
                "service: {} starts {binary}, which does not exist; fix: mnemofs install (again)",
                path.display()
            ),
        );
    }
    match super::install::is_enabled() {
        Ok(true) => finding(Level::Ok, format!("service: {} is enabled", path.display())),
        Ok(false) => finding(
            Level::Warn,
            format!(
                "service: {} is installed but not enabled; fix: systemctl --user enable --now mnemofs",
                path.display()
            ),
        ),
        Err(why) => finding(
            Level::Note,
            format!(
                "service: {} is installed; cannot ask systemd whether it is enabled ({why})",
                path.display()
            ),
        ),
    }
}

fn config(path: Option<&Path>) -> Vec<Finding> {
    let shown = path
        .map(Path::to_path_buf)
        .or_else(Config::default_path)
        .map_or_else(|| "the default config".into(), |p| p.display().to_string());
    if path.is_none() && !Config::default_path().is_some_and(|p| p.exists()) {
        return vec![finding(
            Level::Ok,
            format!("config: no {shown}, so every setting has its default"),
        )];
    }
    match Config::load(path) {
        Ok((_, warnings)) if warnings.is_empty() => {
            vec![finding(Level::Ok, format!("config: {shown} parses"))]
        }
        Ok((_, warnings)) => warnings
            .into_iter()
            .map(|w| finding(Level::Warn, format!("config: {shown}: {w}")))
            .collect(),
        Err(e) => vec![finding(
            Level::Fail,
            format!("config: {e}; fix the file, or move it away to use the defaults"),
        )],
    }
}

/// Whether search ranks by meaning too: the configured model loads.
fn meaning(path: Option<&Path>) -> Finding {
    let config = Config::load(path).map(|(c, _)| c).unwrap_or_default();
    let Some(dir) = config.search.model_dir() else {
        return finding(
            Level::Note,
            "search: by words only; for meaning too, run `mnemofs model pull` and put the line \
             it prints in the config",
        );
    };
    match crate::embed::Embedder::load_configured(&dir, config.search.model_name()) {
        Ok(model) => finding(
            Level::Ok,
            format!(
                "search: by words and meaning, with {} ({} dimensions)",
                model.name(),
                model.dims()
            ),
        ),
        Err(e @ crate::embed::EmbedError::NotPulled { .. }) => {
            finding(Level::Warn, format!("search: by words only, as {e}"))
        }
        Err(e) => finding(
            Level::Warn,
            format!("search: by words only, as {e}; fix search.model in the config"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_a_note_and_an_open_one_a_warning() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let missing = directory("store", &tmp.path().join("nope"), "later");
        assert_eq!(missing[0].level, Level::Note);
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let open = directory("store", tmp.path(), "later");
        assert_eq!(open[0].level, Level::Warn, "{open:?}");
    }
}
