//! Default locations, following the XDG base directory spec.

use std::path::{Path, PathBuf};

pub(super) use crate::dirs::home;
use crate::dirs::xdg;

/// `$XDG_CONFIG_HOME` (else `~/.config`): where the systemd user unit goes.
pub(super) fn config_home() -> PathBuf {
    xdg("XDG_CONFIG_HOME", ".config")
}

/// `$XDG_DATA_HOME/mnemofs/store`: where memories live unless told otherwise.
pub fn default_store_dir() -> PathBuf {
    xdg("XDG_DATA_HOME", ".local/share")
        .join("mnemofs")
        .join("store")
}

/// `$XDG_STATE_HOME/mnemofs`: where the default state dirs live.
pub(super) fn state_root() -> PathBuf {
    xdg("XDG_STATE_HOME", ".local/state").join("mnemofs")
}

/// A store's key: readable (the store's name) and unique (a hash of its
/// path).
pub(super) fn store_key(store: &Path) -> String {
    let name: String = store
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "{name}-{:016x}",
        crate::store::counters::fnv1a64(store.as_os_str().as_encoded_bytes())
    )
}

/// `$XDG_STATE_HOME/mnemofs/<store key>`: derived state for one store.
pub fn default_state_dir(store: &Path) -> PathBuf {
    state_root().join(store_key(store))
}

/// Makes the state dir if it is missing, and keeps it private (0700)
/// whatever the umask: it holds the whole text of the store, indexed.
pub(crate) fn make_state_dir(dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    make_private_dir(dir).with_context(|| format!("cannot use state dir {}", dir.display()))
}

/// Makes `dir` (and what is missing above it) and keeps it private
/// (0700). A folder another user owns is refused: they could read what is
/// put there, or put a socket or a registry entry of theirs in its place
/// (a runtime dir shared through `/tmp`).
pub(crate) fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != my_uid() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to another user (uid {}); point XDG_RUNTIME_DIR or XDG_STATE_HOME at a folder of yours",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// True if `path` is this user's and sits in a folder of this user's
/// that no one else may write: what a daemon of this user left there.
pub(crate) fn is_ours(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mine = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == my_uid());
    let private = |p: &Path| {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == my_uid() && m.mode() & 0o022 == 0)
    };
    mine(path) && path.parent().is_some_and(private)
}

fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_others_may_write_or_own_is_not_ours() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("mnemofs");
        make_private_dir(&dir).expect("made");
        let mode = std::fs::metadata(&dir).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let entry = dir.join("store.json");
        std::fs::write(&entry, "{}").expect("entry");
        assert!(is_ours(&entry));
        // Opened to others (another user's `chmod 777` of a shared
        // runtime dir): what it holds may be theirs.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(!is_ours(&entry));
        make_private_dir(&dir).expect("ours again");
        assert!(is_ours(&entry));
        // Owned by another user: refused, when this test may hand it over.
        if my_uid() == 0 {
            let theirs = tmp.path().join("theirs");
            std::fs::create_dir(&theirs).expect("mkdir");
            std::os::unix::fs::chown(&theirs, Some(65534), None).expect("chown");
            let e = make_private_dir(&theirs).expect_err("another user's");
            assert!(e.to_string().contains("belongs to another user"), "{e}");
        }
    }

    #[test]
    fn state_dirs_differ_per_store() {
        let a = default_state_dir(Path::new("/x/notes"));
        let b = default_state_dir(Path::new("/y/notes"));
        assert_ne!(a, b);
        assert!(
            a.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("notes-")
        );
    }
}
