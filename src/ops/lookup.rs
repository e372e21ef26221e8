//! Operations that find memories by what the index knows of them: one
//! memory read as frontmatter and body, the memories that link to one,
//! the latest changed, and those matching a folder, category, tag or type.
//!
//! Lists come from the index (never from walking the store); each entry's
//! title and id are then read from the file itself, so a memory the index
//! has not caught up with yet is shown as it is now. A file that vanished
//! since the index saw it is left out rather than failing the list.

use serde::{Deserialize, Serialize};

use super::{Error, Operations, Result};
use crate::memory;
use crate::store::StorePath;

/// A memory read whole: where it is, its frontmatter and its body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryText {
    /// Relative to the store root.
    pub path: String,
    /// Its `id:`, if it has one.
    pub id: Option<String>,
    /// The frontmatter fields as JSON (an empty object when there is none
    /// or it is malformed).
    pub frontmatter: serde_json::Value,
    /// The body: everything after the frontmatter block.
    pub content: String,
    /// Its version (the hash of its bytes): give it back as
    /// `expected_version` so that a write fails if the memory changed
    /// since.
    pub version: String,
}

/// One memory in a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySummary {
    /// Relative to the store root.
    pub path: String,
    /// Its `id:`, if it has one.
    pub id: Option<String>,
    /// Its title (frontmatter, else first heading, else file stem).
    pub title: String,
    /// When it last changed (unix seconds), where the list is by time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<i64>,
}

/// Which memories [`Request::Memories`](super::Request::Memories) lists:
/// those matching every filter given, by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryFilter {
    /// Only memories in this folder (relative to the store), at any depth.
    #[serde(default)]
    pub path: Option<String>,
    /// Only memories with this frontmatter `category`.
    #[serde(default)]
    pub category: Option<String>,
    /// Only memories with this tag (frontmatter or inline, without `#`).
    #[serde(default)]
    pub tag: Option<String>,
    /// Only memories with this frontmatter `type`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Only memories in this `phase` (inbox, organized, archived).
    #[serde(default)]
    pub phase: Option<String>,
    /// Only memories with this frontmatter `source`.
    #[serde(default)]
    pub source: Option<String>,
    /// Most memories listed.
    #[serde(default = "fifty")]
    pub limit: usize,
}

impl Default for MemoryFilter {
    fn default() -> MemoryFilter {
        MemoryFilter {
            path: None,
            category: None,
            tag: None,
            kind: None,
            phase: None,
            source: None,
            limit: fifty(),
        }
    }
}

pub(super) fn fifty() -> usize {
    50
}

impl Operations {
    /// Reads the memory `reference` names, split into frontmatter and body.
    pub fn read_memory_text(&self, reference: &str) -> Result<MemoryText> {
        let path = self.resolve(reference)?;
        let (real, bytes, text) = self.read_memory(&path)?;
        self.count_read(&real);
        let parsed = memory::parse(&stem(&path), &text);
        let frontmatter = serde_json::to_value(&parsed.frontmatter)
            .unwrap_or_else(|_| serde_json::Value::Object(Default::default()));
        Ok(MemoryText {
            path: path.to_string(),
            id: parsed
                .frontmatter
                .id
                .clone()
                .or_else(|| self.untouched_id(&path)),
            frontmatter,
            content: parsed.body(&text).to_string(),
            version: super::version_of(&bytes),
        })
    }

    /// The memories that link to the memory `reference` names, by path.
    pub fn backlinks(&self, reference: &str, limit: usize) -> Result<Vec<MemorySummary>> {
        let target = self.resolve(reference)?;
        let mut paths = self.index.backlinks(&target.to_string());
        paths.sort();
        paths.dedup();
        paths.retain(|p| *p != target);
        Ok(self.summaries(paths.into_iter().map(|p| (p, None)), limit))
    }

    /// The `limit` most recently changed memories, newest first.
    pub fn recent(&self, limit: usize) -> Vec<MemorySummary> {
        // Memories the session may not see are dropped below: ask for
        // enough to fill the list anyway.
        let hidden = if self.scope.is_some() {
            self.hidden_paths().len()
        } else {
            0
        };
        let recent = self.index.recent(limit.saturating_add(hidden));
        self.summaries(recent.into_iter().map(|(p, t)| (p, Some(t))), limit)
    }

    /// Like [`recent`](Self::recent), only memories changed at or after
    /// `since` (a date, a timestamp, or a duration back from now such as
    /// `7d`) and of `type` `kind`.
    pub fn recent_filtered(
        &self,
        limit: usize,
        since: Option<&str>,
        kind: Option<&str>,
    ) -> Result<Vec<MemorySummary>> {
        let since = since.map(str::trim).filter(|s| !s.is_empty());
        let kind = kind.map(str::trim).filter(|k| !k.is_empty());
        if since.is_none() && kind.is_none() {
            return Ok(self.recent(limit));
        }
        let since = match since {
            None => i64::MIN,
            Some(text) => match memory::parse_timestamp(text) {
                Some(at) => at,
                None => {
                    let back = memory::duration::parse_duration(text).map_err(|_| {
                        Error::InvalidInput(format!(
                            "since {text:?} is neither a date (2026-01-31) nor a duration (7d, 12h)"
                        ))
                    })?;
                    super::now_unix().saturating_sub(back.as_secs() as i64)
                }
            },
        };
        let typed: Option<std::collections::HashSet<StorePath>> =
            kind.map(|k| self.index.by_type(k).into_iter().collect());
        let recent = self
            .index
            .recent(usize::MAX)
            .into_iter()
            .take_while(|(_, changed)| *changed >= since)
            .filter(|(p, _)| typed.as_ref().is_none_or(|t| t.contains(p)));
        Ok(self.summaries(recent.map(|(p, t)| (p, Some(t))), limit))
    }

    /// The memories matching every filter in `filter`, by path.
    pub fn memories(&self, filter: &MemoryFilter) -> Result<Vec<MemorySummary>> {
        let folder = match filter.path.as_deref().map(str::trim) {
            None | Some("") | Some(".") => None,
            Some(p) => Some(self.store_path(p.trim_end_matches('/'))?),
        };
        let category = match filter.category.as_deref() {
            Some(c) => Some(super::error::category(c)?),
            None => None,
        };
        let mut sets: Vec<Vec<StorePath>> = Vec::new();
        if let Some(c) = category {
            sets.push(self.index.by_category(c.as_str()));
        }
        if let Some(tag) = &filter.tag {
            sets.push(self.index.by_tag(tag));
        }
        if let Some(kind) = &filter.kind {
            sets.push(self.index.by_type(kind));
        }
        for (field, value) in [("phase", &filter.phase), ("source", &filter.source)] {
            if let Some(value) = value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                let query = format!("{field}:\"{}\"", value.replace('"', ""));
                sets.push(
                    self.index
                        .search_paths(&query, usize::MAX)
                        .map_err(|e| Error::Index(e.to_string()))?,
                );
            }
        }
        let mut paths = match sets.pop() {
            Some(first) => first
                .into_iter()
                .filter(|p| sets.iter().all(|s| s.contains(p)))
                .collect(),
            None => self
                .index
                .recent(usize::MAX)
                .into_iter()
                .map(|(p, _)| p)
                .collect::<Vec<_>>(),
        };
        if let Some(folder) = &folder {
            paths.retain(|p| p.as_path().starts_with(folder.as_path()));
        }
        paths.sort();
        paths.dedup();
        Ok(self.summaries(paths.into_iter().map(|p| (p, None)), filter.limit))
    }

    /// Each path's title and id, read from the file; files gone meanwhile
    /// are left out.
    fn summaries(
        &self,
        paths: impl Iterator<Item = (StorePath, Option<i64>)>,
        limit: usize,
    ) -> Vec<MemorySummary> {
        paths
            .filter_map(|(path, changed)| {
                let (_, _, text) = self.read_memory(&path).ok()?;
                let parsed = memory::parse(&stem(&path), &text);
                Some(MemorySummary {
                    path: path.to_string(),
                    id: parsed.frontmatter.id.or_else(|| self.untouched_id(&path)),
                    title: parsed.title,
                    changed,
                })
            })
            .take(limit)
            .collect()
    }
}

/// The file name without `.md`, a title's last resort.
fn stem(path: &StorePath) -> String {
    path.as_path()
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
