//! `StorePath`: a path relative to the store root that cannot escape it.
//!
//! Every path handed to the store is one of these. It holds only normal
//! components (no `..`, no `.`, not absolute), so joining it to the root can
//! never climb out lexically; symlinks are handled separately by the
//! resolver, which refuses to follow them at all.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Folders below the store's root that mnemofs follows (the indexer's
/// walks, the watcher) and lets a path name. Each folder is opened from
/// the root, one component at a time, so a tree thousands of folders deep
/// (a runaway script's) would cost the square of its depth at every walk:
/// below this depth it is left alone.
pub const MAX_DEPTH: usize = 100;

/// A normalized path beneath the store root. The empty path is the root.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StorePath(PathBuf);

impl StorePath {
    /// The store root itself.
    pub fn root() -> Self {
        StorePath(PathBuf::new())
    }

    /// Validates a relative path: only normal components are allowed.
    /// Returns `None` for absolute paths, `..`, or embedded NUL bytes.
    pub fn new(path: impl AsRef<Path>) -> Option<Self> {
        let mut out = PathBuf::new();
        for component in path.as_ref().components() {
            match component {
                Component::Normal(name) if is_valid_name(name) => out.push(name),
                Component::CurDir => {}
                Component::Normal(_)
                | Component::ParentDir
                | Component::RootDir
                | Component::Prefix(_) => return None,
            }
        }
        Some(StorePath(out))
    }

    /// This path with one more component. `None` if `name` is not a single
    /// valid file name.
    pub fn join(&self, name: &OsStr) -> Option<Self> {
        if !is_valid_name(name) {
            return None;
        }
        Some(StorePath(self.0.join(name)))
    }

    /// True for the store root.
    pub fn is_root(&self) -> bool {
        self.0.as_os_str().is_empty()
    }

    /// The containing directory, or `None` for the root.
    pub fn parent(&self) -> Option<StorePath> {
        if self.is_root() {
            return None;
        }
        Some(StorePath(
            self.0.parent().map(Path::to_path_buf).unwrap_or_default(),
        ))
    }

    /// The last component, or `None` for the root.
    pub fn file_name(&self) -> Option<&OsStr> {
        self.0.file_name()
    }

    /// The relative path, suitable for display and for joining.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// Number of components (the root has depth 0).
    pub fn depth(&self) -> usize {
        self.0.components().count()
    }

    /// True for a folder mnemofs follows into ([`MAX_DEPTH`]).
    pub fn within_depth(&self) -> bool {
        self.depth() <= MAX_DEPTH
    }

    /// Builds a path from components known to be valid names.
    pub fn from_components<I, S>(names: I) -> Option<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut out = PathBuf::new();
        for name in names {
            let name = name.into();
            if !is_valid_name(&name) {
                return None;
            }
            out.push(name);
        }
        Some(StorePath(out))
    }
}

impl StorePath {
    /// The path as text that names it exactly: bytes that are not UTF-8
    /// are written `\xNN`, as `ls -b` does (so the printed path can be
    /// typed back); valid text is unchanged.
    pub fn escaped(&self) -> String {
        let mut out = String::new();
        for chunk in self.0.as_os_str().as_encoded_bytes().utf8_chunks() {
            out.push_str(chunk.valid());
            for byte in chunk.invalid() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        }
        out
    }

    /// The path's bytes when they are not UTF-8 (for JSON, which cannot
    /// hold them as text).
    pub fn non_utf8_bytes(&self) -> Option<Vec<u8>> {
        let bytes = self.0.as_os_str().as_encoded_bytes();
        std::str::from_utf8(bytes).is_err().then(|| bytes.to_vec())
    }
}

impl std::fmt::Display for StorePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_root() {
            f.write_str(".")
        } else {
            write!(f, "{}", self.0.display())
        }
    }
}

/// A single directory entry name: non-empty, not `.`/`..`, no `/` or NUL.
pub fn is_valid_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes != b"."
        && bytes != b".."
        && !bytes.contains(&b'/')
        && !bytes.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_escapes() {
        assert!(StorePath::new("../etc").is_none());
        assert!(StorePath::new("/etc").is_none());
        assert!(StorePath::new("a/../../b").is_none());
        assert_eq!(StorePath::new("./a/b").unwrap().as_path(), Path::new("a/b"));
        assert!(StorePath::new("").unwrap().is_root());
    }

    #[test]
    fn parent_and_name() {
        let p = StorePath::new("a/b/c.md").unwrap();
        assert_eq!(p.file_name().unwrap(), "c.md");
        assert_eq!(p.parent().unwrap().as_path(), Path::new("a/b"));
        assert!(StorePath::new("a").unwrap().parent().unwrap().is_root());
        assert!(StorePath::root().parent().is_none());
        assert!(p.join(OsStr::new("..")).is_none());
        assert!(p.join(OsStr::new("x/y")).is_none());
    }
}
