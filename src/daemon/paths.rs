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
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create state dir {}", dir.display()))?;
    let meta = std::fs::metadata(dir)
        .with_context(|| format!("cannot use state dir {}", dir.display()))?;
    // SAFETY: geteuid has no preconditions.
    let mine = meta.uid() == unsafe { libc::geteuid() };
    if mine && meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make state dir {} private", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
