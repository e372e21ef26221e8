//! Earlier versions of memories: a memory's history, the trash (memories
//! deleted and not back), and bringing a version back.
//!
//! The versions themselves are kept by whoever writes (the mount's
//! handlers, [`DirectWriter`](super::DirectWriter)) in the store's
//! [`History`]; this layer finds them by path or id and restores one
//! through the [`Writer`](super::Writer), so a restore is a write like any
//! other: watchers on the mount see it, and the content it replaces is
//! kept in turn, so a restore can be undone too.
//!
//! A reference names a memory that exists (a path, an id, a title...) or
//! one that is gone, by the path it had or its id. A restore over an
//! existing memory replaces its content; a deleted memory comes back at the
//! path it had, never over another file that took that path since.

use super::{Error, Operations, Result};
use crate::memory;
use crate::store::StorePath;
use crate::store::history::{History, Version};

use super::request::{Restored, VersionInfo};

impl Operations {
    fn kept(&self) -> Result<&History> {
        self.history
            .as_deref()
            .ok_or_else(|| Error::Unavailable("no history is kept here".into()))
    }

    /// Whether this session may see a kept version (its scope).
    fn sees_version(&self, history: &History, version: &Version) -> bool {
        self.scope.is_none()
            || history
                .read(version)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .is_some_and(|text| !self.hides_text(&text))
    }

    /// The memory `reference` names now, if it exists: its path and id.
    fn current(&self, reference: &str) -> Option<(StorePath, Option<String>)> {
        let path = self.resolve(reference).ok()?;
        let id = self
            .read_memory(&path)
            .ok()
            .and_then(|(_, _, text)| self.id_of(&path, &text));
        Some((path, id))
    }

    /// The versions `reference` has, oldest first, and the memory it names
    /// now if there is one.
    fn versions_for(&self, reference: &str) -> Result<(Vec<Version>, Option<StorePath>)> {
        let history = self.kept()?;
        let reference = reference.trim();
        let (path, id, current) = match self.current(reference) {
            Some((path, id)) => (Some(path.clone()), id, Some(path)),
            None => (
                StorePath::new(reference.trim_start_matches('/')).filter(|p| !p.is_root()),
                Some(reference.to_string()),
                None,
            ),
        };
        let mut versions = history.versions_of(path.as_ref(), id.as_deref());
        versions.retain(|v| self.sees_version(history, v));
        if versions.is_empty() && current.is_none() {
            return Err(Error::NotFound {
                path: reference.into(),
            });
        }
        Ok((versions, current))
    }

    /// The kept versions of the memory `reference` names (or named, when
    /// it is gone), newest first.
    pub fn history(&self, reference: &str) -> Result<Vec<VersionInfo>> {
        let (versions, _) = self.versions_for(reference)?;
        Ok(versions.iter().rev().map(info).collect())
    }

    /// The memories deleted and not back (their path is free), newest
    /// first, at most `limit`.
    pub fn trash(&self, limit: usize) -> Result<Vec<VersionInfo>> {
        let history = self.kept()?;
        Ok(history
            .deleted()
            .filter(|v| self.store.stat(&v.path).is_err())
            .filter(|v| self.sees_version(history, v))
            .take(limit)
            .map(|v| info(&v))
            .collect())
    }

    /// Brings back version `version` (else the newest) of the memory
    /// `reference` names: over its content if it exists, else at the path
    /// it had, if that is free. A memory this session may not see is never
    /// replaced: its path is taken, as by any file.
    pub fn restore(&self, reference: &str, version: Option<u64>) -> Result<Restored> {
        let history = self.kept()?;
        let (versions, current) = self.versions_for(reference)?;
        let chosen = match version {
            Some(n) => versions.iter().find(|v| v.n == n).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{reference} has no version {n}; `mnemofs history {reference}` lists them"
                ))
            })?,
            None => versions.last().ok_or_else(|| {
                Error::InvalidInput(format!("{reference} has no earlier version kept"))
            })?,
        };
        let bytes = history
            .read(chosen)
            .map_err(|e| Error::io(chosen.path.to_string(), e))?;
        let overwrite = current.is_some();
        let path = current.unwrap_or_else(|| chosen.path.clone());
        self.put_back(&path, &bytes, overwrite)?;
        if let Some(organizer) = &self.organizer {
            organizer.restored(&path);
        }
        Ok(Restored {
            path: path.to_string(),
            version: chosen.n,
        })
    }

    /// Brings back every memory in the trash at the path it had. Those
    /// that cannot come back (their path was taken meanwhile, a file now
    /// stands where a folder was) are left in the trash and the others
    /// still come back; it fails only when none could.
    pub fn restore_trash(&self) -> Result<Vec<Restored>> {
        let history = self.kept()?;
        let mut restored = Vec::new();
        let mut failed = None;
        for version in self.trash(usize::MAX)? {
            let Some(kept) = history
                .versions_of(StorePath::new(&version.path).as_ref(), None)
                .into_iter()
                .rfind(|v| v.n == version.version)
            else {
                continue;
            };
            let put_back = history
                .read(&kept)
                .map_err(|e| Error::io(&version.path, e))
                .and_then(|bytes| self.put_back(&kept.path, &bytes, false));
            if put_back.is_ok()
                && let Some(organizer) = &self.organizer
            {
                organizer.restored(&kept.path);
            }
            match put_back {
                Ok(()) => restored.push(Restored {
                    path: version.path,
                    version: kept.n,
                }),
                Err(Error::Exists { .. }) => continue,
                Err(e) => {
                    tracing::warn!("left in the trash: {e}");
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            Some(e) if restored.is_empty() => Err(e),
            _ => Ok(restored),
        }
    }

    /// Writes restored bytes at `path`: over the file there when
    /// `overwrite`, else only if the path is free.
    fn put_back(&self, path: &StorePath, bytes: &[u8], overwrite: bool) -> Result<()> {
        let shown = path.to_string();
        let written = if overwrite {
            self.writer.write(path, bytes)
        } else {
            self.writer.create(path, bytes)
        };
        written.map_err(|e| match e.raw_os_error() {
            Some(libc::EEXIST) => Error::Exists { path: shown },
            _ => Error::io(path.to_string(), e),
        })
    }
}

fn info(version: &Version) -> VersionInfo {
    VersionInfo {
        version: version.n,
        path: version.path.to_string(),
        why: version.why.as_str().to_string(),
        at: memory::format_timestamp(version.at),
        size: version.size,
        id: version.id.clone(),
        title: version.title.clone(),
    }
}
