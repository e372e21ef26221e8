//! Putting described memories into the store: `import` and `ingest`.
//!
//! A front end turns each line of an export, or each note of an ingested
//! source, into an [`Incoming`]: an id, frontmatter fields, a body, and
//! where it should go. Putting it is idempotent, so running the same
//! import or ingest again, or finishing an interrupted one, adds nothing:
//! - a memory whose id the index already knows is a duplicate;
//! - otherwise the wanted path is tried, then `<stem>-2.md`, ... ; a
//!   candidate that holds a memory with the same id is a duplicate (the
//!   index may not have seen it yet), one that holds another memory is
//!   passed over, and the first free one is created with `O_EXCL`.
//!
//! Each memory is written whole and atomically by the writer (a temp file
//! renamed into place), so an interrupted run leaves every memory either
//! complete or absent. A batch is written by a few threads at once: each
//! write waits on an fsync, and overlapping them keeps the disk busy.

use serde::{Deserialize, Serialize};

use super::{Error, Operations, Result};
use crate::memory;
use crate::store::StorePath;

/// Writers at once in a batch.
const WORKERS: usize = 4;

/// A memory to put into the store, as described.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incoming {
    /// Its id; written into the frontmatter.
    pub id: String,
    /// Where it goes, relative to the store (`.md`). If another memory is
    /// there, the next free `<stem>-N.md` beside it.
    pub path: String,
    /// Frontmatter fields other than `id`, in order.
    pub fields: Vec<(String, serde_json::Value)>,
    /// The body.
    pub content: String,
}

/// What became of one [`Incoming`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Placed {
    /// Written at `path`.
    Written {
        /// Where.
        path: String,
    },
    /// Already in the store, at `path`.
    Duplicate {
        /// Where the memory with that id is.
        path: String,
    },
    /// Not written, and why.
    Failed {
        /// One sentence.
        reason: String,
    },
}

impl Operations {
    /// Puts each memory of `batch` into the store unless it is there
    /// already; answers in the batch's order.
    pub fn import(&self, batch: &[Incoming]) -> Vec<Placed> {
        let workers = WORKERS.min(batch.len().div_ceil(16)).max(1);
        let mut placed: Vec<(usize, Placed)> = std::thread::scope(|scope| {
            let work = |w: usize| -> Vec<(usize, Placed)> {
                batch
                    .iter()
                    .enumerate()
                    .skip(w)
                    .step_by(workers)
                    .map(|(i, incoming)| {
                        let outcome = self.put(incoming).unwrap_or_else(|e| Placed::Failed {
                            reason: e.to_string(),
                        });
                        (i, outcome)
                    })
                    .collect()
            };
            let handles: Vec<_> = (1..workers)
                .map(|w| {
                    std::thread::Builder::new()
                        .name("mnemofs-import".into())
                        .spawn_scoped(scope, move || work(w))
                })
                .collect();
            let mut all = work(0);
            for (w, handle) in (1..workers).zip(handles) {
                match handle {
                    Ok(h) => match h.join() {
                        Ok(part) => all.extend(part),
                        Err(_) => all.extend((w..batch.len()).step_by(workers).map(|i| {
                            (
                                i,
                                Placed::Failed {
                                    reason: "an import worker failed".into(),
                                },
                            )
                        })),
                    },
                    Err(_) => all.extend(work(w)),
                }
            }
            all
        });
        placed.sort_by_key(|(i, _)| *i);
        placed.into_iter().map(|(_, p)| p).collect()
    }

    /// Puts one memory, unless it is there already.
    fn put(&self, incoming: &Incoming) -> Result<Placed> {
        let id = incoming.id.trim();
        if id.is_empty() {
            return Err(Error::InvalidInput("a memory to import needs an id".into()));
        }
        if let Some(path) = self.index.by_id(id) {
            return Ok(Placed::Duplicate {
                path: path.to_string(),
            });
        }
        let wanted = self.writable(&incoming.path)?;
        let name = wanted
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.ends_with(".md") {
            return Err(Error::InvalidPath {
                path: incoming.path.clone(),
                why: "a memory's file name ends in .md",
            });
        }
        let stem = &name[..name.len() - 3];
        let folder = wanted.parent().unwrap_or_default();
        let mut fields = vec![("id".to_string(), serde_json::Value::from(id))];
        fields.extend(incoming.fields.iter().filter(|(k, _)| k != "id").cloned());
        let mut text = memory::render_frontmatter(&fields);
        text.push_str(&incoming.content);
        if !incoming.content.is_empty() && !incoming.content.ends_with('\n') {
            text.push('\n');
        }
        for n in 1..10_000 {
            let candidate = if n == 1 {
                wanted.clone()
            } else {
                match folder.join(std::ffi::OsStr::new(&format!("{stem}-{n}.md"))) {
                    Some(p) => p,
                    None => break,
                }
            };
            if let Some(found) = self.holder(&candidate) {
                if found.as_deref().is_some_and(|f| f.eq_ignore_ascii_case(id)) {
                    return Ok(Placed::Duplicate {
                        path: candidate.to_string(),
                    });
                }
                continue;
            }
            match self.create(&candidate.to_string(), &text, false) {
                Ok(()) => {
                    return Ok(Placed::Written {
                        path: candidate.to_string(),
                    });
                }
                // Taken meanwhile, perhaps by this very memory.
                Err(Error::Exists { .. }) => {
                    if let Some(Some(found)) = self.holder(&candidate)
                        && found.eq_ignore_ascii_case(id)
                    {
                        return Ok(Placed::Duplicate {
                            path: candidate.to_string(),
                        });
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::InvalidInput(format!(
            "no free name for {} in {folder}",
            incoming.path
        )))
    }

    /// `None` when nothing is at `path`; else the id of what is there.
    fn holder(&self, path: &StorePath) -> Option<Option<String>> {
        self.store.stat(path).ok()?;
        Some(
            self.read_memory(path)
                .ok()
                .and_then(|(_, _, text)| self.id_of(path, &text)),
        )
    }
}
