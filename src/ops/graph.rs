//! The link graph as operations: a memory with those linked to or from it
//! a few hops out (`context`), and taking a recorded link away (`unlink`).
//!
//! Outgoing links are read from the memory itself (wiki links, relation
//! lines, ids in `links:`), each resolved as a ref is (id, then title,
//! stem, path or alias; an ambiguous or dangling one is skipped). Incoming
//! ones come from the index's backlinks. Memories the session may not see
//! are skipped like dangling links, so a scope never leaks through the
//! graph.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{Error, MemoryText, Operations, Result};
use crate::memory::{self, Link};
use crate::store::StorePath;

/// The farthest `context` walks.
pub const MAX_CONTEXT_DEPTH: usize = 5;

/// A memory and the memories around it in the link graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryContext {
    /// The memory asked about, read whole.
    pub memory: MemoryText,
    /// The memories linked to or from it, nearest first.
    pub related: Vec<Related>,
}

/// A memory found around another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Related {
    /// Relative to the store root.
    pub path: String,
    /// Its `id:`, if it has one.
    pub id: Option<String>,
    /// Its title.
    pub title: String,
    /// Hops from the memory asked about (1: linked with it directly).
    pub depth: usize,
    /// Which way the link goes between `via` and this memory.
    pub direction: Direction,
    /// The memory one hop nearer through which it was found.
    pub via: String,
}

/// Which way a link goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// `via` links to this memory.
    Outgoing,
    /// This memory links to `via`.
    Incoming,
}

impl Operations {
    /// The memory `reference` names, with the memories linked to or from
    /// it, up to `depth` hops out (1 to [`MAX_CONTEXT_DEPTH`]) and at most
    /// `limit` of them.
    pub fn context(&self, reference: &str, depth: usize, limit: usize) -> Result<MemoryContext> {
        let depth = depth.clamp(1, MAX_CONTEXT_DEPTH);
        let root = self.resolve(reference)?;
        let memory = self.read_memory_text(&root.to_string())?;
        let mut seen = HashSet::from([root.clone()]);
        let mut frontier = vec![root];
        let mut related = Vec::new();
        'walk: for hops in 1..=depth {
            let mut next = Vec::new();
            for from in &frontier {
                let Ok((_, _, text)) = self.read_memory(from) else {
                    continue;
                };
                let outgoing = self.outgoing(&text).into_iter();
                let mut incoming = self.index.backlinks(&from.to_string());
                incoming.sort();
                let around = outgoing
                    .map(|p| (p, Direction::Outgoing))
                    .chain(incoming.into_iter().map(|p| (p, Direction::Incoming)));
                for (path, direction) in around {
                    if related.len() >= limit {
                        break 'walk;
                    }
                    if !seen.insert(path.clone()) {
                        continue;
                    }
                    let Ok((_, _, text)) = self.read_memory(&path) else {
                        continue;
                    };
                    let parsed = memory::parse(&stem(&path), &text);
                    related.push(Related {
                        path: path.to_string(),
                        id: parsed.frontmatter.id.or_else(|| self.untouched_id(&path)),
                        title: parsed.title,
                        depth: hops,
                        direction,
                        via: from.to_string(),
                    });
                    next.push(path);
                }
            }
            frontier = next;
        }
        Ok(MemoryContext { memory, related })
    }

    /// The memories a memory's text links to, in the order written, each
    /// once; links that name nothing or several memories are skipped.
    fn outgoing(&self, text: &str) -> Vec<StorePath> {
        let mut out: Vec<StorePath> = Vec::new();
        for link in memory::parse("", text).links {
            if let Some(path) = self.link_target(&link)
                && !out.contains(&path)
            {
                out.push(path);
            }
        }
        out
    }

    /// The one memory a link names, if it names exactly one.
    fn link_target(&self, link: &Link) -> Option<StorePath> {
        if let Some(path) = self.index.by_id(&link.target) {
            return Some(path);
        }
        let mut found = self.index.resolve_link(&link.target);
        found.sort();
        found.dedup();
        (found.len() == 1).then(|| found.remove(0))
    }

    /// Takes away the link between two memories recorded in `links:`,
    /// both ways: `to` from `from`'s list and `from` from `to`'s. Returns
    /// `from`'s path and whether any entry was removed. Links written in
    /// a body (`[[...]]`) are the author's text and stay.
    pub fn unlink(&self, from: &str, to: &str) -> Result<(StorePath, bool)> {
        let source = self.resolve(from)?;
        let target = self.resolve(to)?;
        if self.expected_version.is_some() {
            let (_, bytes, _) = self.read_memory(&source)?;
            self.check_version(&source.to_string(), &bytes)?;
        }
        let forward = self.drop_link(&source, &target)?;
        // The version the caller gave is `from`'s; `to` is compared and
        // swapped against what was just read.
        let back = self.expecting(None).drop_link(&target, &source)?;
        Ok((source, forward || back))
    }

    /// Removes from `holder`'s `links:` every entry that names `gone`.
    fn drop_link(&self, holder: &StorePath, gone: &StorePath) -> Result<bool> {
        let (_, _, gone_text) = self.read_memory(gone)?;
        let gone_id = self.id_of(gone, &gone_text);
        let (real, bytes, text) = self.read_memory(holder)?;
        let names_gone = |entry: &str| {
            let Some(link) = Link::from_frontmatter(entry) else {
                return false;
            };
            gone_id
                .as_deref()
                .is_some_and(|id| id.trim().eq_ignore_ascii_case(link.target.trim()))
                || self.link_target(&link).as_ref() == Some(gone)
        };
        match memory::remove_from_list_field(&text, "links", names_gone) {
            Ok(Some(new)) => {
                self.rewrite(&holder.to_string(), &real, &bytes, &new)?;
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => Err(Error::InvalidInput(format!("{holder}: {e}"))),
        }
    }
}

/// The file name without `.md`, a title's last resort.
fn stem(path: &StorePath) -> String {
    path.as_path()
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}
