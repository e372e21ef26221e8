//! The XDG base directories: where mnemofs keeps what it makes for the
//! user (data, state, config, downloaded models).
//!
//! A variable that is unset, empty or relative is ignored, as the spec
//! asks, and the usual folder under the home folder is used instead.

use std::path::{Path, PathBuf};

/// `$HOME`, else `/`.
pub(crate) fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// `$var` when it is an absolute path, else `~/fallback`.
pub(crate) fn xdg(var: &str, fallback: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(v) if Path::new(&v).is_absolute() => PathBuf::from(v),
        _ => home().join(fallback),
    }
}

/// `$XDG_CACHE_HOME` (else `~/.cache`): what can be fetched again.
pub(crate) fn cache_home() -> PathBuf {
    xdg("XDG_CACHE_HOME", ".cache")
}
