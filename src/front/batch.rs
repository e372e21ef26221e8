//! Sending many described memories (an import, an ingest) to the
//! operations layer in batches, and counting what became of them.
//!
//! Each batch is one [`Request::Import`] ([`Request::ImportVerbatim`] when
//! a memory in it carries its file's frontmatter block); the operations
//! decide what is a duplicate. Ids are also remembered across the batches
//! of one run, so the same memory found twice in one run is a duplicate
//! even before the index has seen the first copy. A memory whose id the
//! run has already seen at another path is a copy made outside mnemofs,
//! and is kept as one (see [`Verbatim::copy`]).

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::ops::{self, Incoming, Placed, Request, Response, Verbatim};

/// Memories per request: large enough to keep the writers busy, small
/// enough that a progress bar moves and a request stays small.
const BATCH: usize = 256;

/// What a run did: items read, memories written, duplicates, and what
/// was skipped and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Items read (lines, files).
    pub read: usize,
    /// Memories written.
    pub written: usize,
    /// Memories already in the store.
    pub duplicates: usize,
    /// Items not written, each with why.
    pub skipped: Vec<Skip>,
    /// Files that are not memories (an ingested vault's attachments) in
    /// the store as they are in the source: copied now or before.
    #[serde(skip_serializing_if = "is_zero")]
    pub attachments: usize,
    /// Duplicates whose text in the store differs from the source's (a
    /// note edited on one side since it came in): the store's copy stays.
    /// Their paths in the store.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differing: Vec<String>,
    /// Memories already in the store whose text there was replaced by the
    /// source's (`--update`; the earlier text is kept in the history).
    /// Their paths in the store.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub updated: Vec<String>,
    /// Items whose frontmatter cannot be read, taken in byte for byte
    /// (the organizer leaves such a file alone until it is fixed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub as_written: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// An item not written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skip {
    /// What it was (a file, `line 7`).
    pub item: String,
    /// Why it was skipped.
    pub reason: String,
}

impl Summary {
    /// One line: `read 12, written 10, duplicates 1, skipped 1`, and
    /// `, attachments 3` when there are any.
    pub fn line(&self) -> String {
        let mut line = format!(
            "read {}, written {}, duplicates {}, skipped {}",
            self.read,
            self.written,
            self.duplicates,
            self.skipped.len()
        );
        if !self.updated.is_empty() {
            line.push_str(&format!(", updated {}", self.updated.len()));
        }
        if self.attachments > 0 {
            line.push_str(&format!(", attachments {}", self.attachments));
        }
        line
    }

    /// What the duplicates whose text differs come to, if any: one line.
    pub fn differing_line(&self) -> Option<String> {
        (!self.differing.is_empty()).then(|| {
            format!(
                "kept the store's copy, whose text differs from the source's (one of them changed since it came in; --update takes the source's unless the store's changed after it): {}",
                first_few(&self.differing)
            )
        })
    }

    /// What an update replaced, if anything: one line.
    pub fn updated_line(&self) -> Option<String> {
        (!self.updated.is_empty()).then(|| {
            format!(
                "updated from the source (the store's earlier text is in `mnemofs history`): {}",
                first_few(&self.updated)
            )
        })
    }

    /// What was taken in with unreadable frontmatter, if anything: one line.
    pub fn as_written_line(&self) -> Option<String> {
        (!self.as_written.is_empty()).then(|| {
            format!(
                "taken in as written, with frontmatter that cannot be read (the organizer leaves these alone until it is fixed): {}",
                first_few(&self.as_written)
            )
        })
    }

    /// The reasons for skipping, each with how many items and the first
    /// few of them, most frequent first.
    pub fn reasons(&self) -> Vec<String> {
        let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
        for skip in &self.skipped {
            match by_reason.iter_mut().find(|(r, _)| *r == skip.reason) {
                Some((_, items)) => items.push(&skip.item),
                None => by_reason.push((&skip.reason, vec![&skip.item])),
            }
        }
        by_reason.sort_by_key(|(_, items)| std::cmp::Reverse(items.len()));
        by_reason
            .into_iter()
            .map(|(reason, items)| format!("{reason}: {}", first_few(&items)))
            .collect()
    }
}

/// The first three of `items`, and how many more: `a, b, c and 4 more`.
fn first_few(items: &[impl AsRef<str>]) -> String {
    let shown: Vec<&str> = items.iter().take(3).map(AsRef::as_ref).collect();
    match items.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// Collects memories and sends them a batch at a time.
pub struct Batcher<'a> {
    call: &'a dyn Fn(Request) -> ops::Result<Response>,
    pending: Vec<(String, Verbatim)>,
    /// The ids of the run so far, each with the path it came with.
    seen: HashMap<String, String>,
    /// Items whose frontmatter cannot be read.
    unreadable: HashSet<String>,
    /// Whether memories already in the store take the source's text.
    update: bool,
    summary: Summary,
}

impl<'a> Batcher<'a> {
    /// A batcher sending through `call`.
    pub fn new(call: &'a dyn Fn(Request) -> ops::Result<Response>) -> Batcher<'a> {
        Batcher {
            call,
            pending: Vec::new(),
            seen: HashMap::new(),
            unreadable: HashSet::new(),
            update: false,
            summary: Summary::default(),
        }
    }

    /// A batcher whose memories already in the store take the source's
    /// text where it differs (the store's earlier text is kept in the
    /// history).
    pub fn updating(mut self) -> Batcher<'a> {
        self.update = true;
        self
    }

    /// Counts an item read.
    pub fn read(&mut self) {
        self.summary.read += 1;
    }

    /// Counts an attachment that is in the store.
    pub fn attached(&mut self) {
        self.summary.attachments += 1;
    }

    /// Records an item skipped.
    pub fn skip(&mut self, item: impl Into<String>, reason: impl Into<String>) {
        self.summary.skipped.push(Skip {
            item: item.into(),
            reason: reason.into(),
        });
    }

    /// [`push_verbatim`](Self::push_verbatim) of a file whose frontmatter
    /// cannot be read, taken in byte for byte: said in the summary when
    /// it is written.
    pub fn push_as_written(&mut self, item: String, verbatim: Verbatim) -> ops::Result<()> {
        self.unreadable.insert(item.clone());
        self.push_verbatim(item, verbatim)
    }

    /// Queues a memory; `item` names it in the report. Sends a batch when
    /// one is full.
    pub fn push(&mut self, item: String, incoming: Incoming) -> ops::Result<()> {
        self.push_verbatim(
            item,
            Verbatim {
                memory: incoming,
                frontmatter_text: None,
                copy: false,
                modified: None,
            },
        )
    }

    /// [`push`](Self::push) of a memory that may carry the frontmatter
    /// block its file had, to be written back byte for byte.
    pub fn push_verbatim(&mut self, item: String, mut verbatim: Verbatim) -> ops::Result<()> {
        let path = &verbatim.memory.path;
        match self.seen.get(&verbatim.memory.id.to_lowercase()) {
            // The same memory again.
            Some(first) if first == path => {
                self.summary.duplicates += 1;
                return Ok(());
            }
            // Its id at another path: a copy, kept as one.
            Some(_) => verbatim.copy = true,
            None => {
                self.seen
                    .insert(verbatim.memory.id.to_lowercase(), path.clone());
            }
        }
        self.pending.push((item, verbatim));
        if self.pending.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Sends what is queued.
    pub fn flush(&mut self) -> ops::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let (items, memories): (Vec<String>, Vec<Verbatim>) =
            std::mem::take(&mut self.pending).into_iter().unzip();
        // Plain memories go as `Import`, which older daemons know too.
        let request = if self.update
            || memories
                .iter()
                .any(|m| m.frontmatter_text.is_some() || m.copy)
        {
            Request::ImportVerbatim {
                memories,
                update: self.update,
            }
        } else {
            Request::Import {
                memories: memories.into_iter().map(|m| m.memory).collect(),
            }
        };
        let Response::Imported { placed } = (self.call)(request)? else {
            return Err(ops::Error::Unavailable(
                "unexpected answer to an import".into(),
            ));
        };
        for (item, placed) in items.into_iter().zip(placed) {
            match placed {
                Placed::Written { .. } => {
                    self.summary.written += 1;
                    if self.unreadable.contains(&item) {
                        self.summary.as_written.push(item);
                    }
                }
                Placed::Updated { path } => {
                    self.summary.duplicates += 1;
                    self.summary.updated.push(path);
                }
                Placed::Duplicate { path, differs } => {
                    self.summary.duplicates += 1;
                    if differs {
                        self.summary.differing.push(path);
                    }
                }
                Placed::Failed { reason } => self.skip(item, reason),
            }
        }
        Ok(())
    }

    /// What the run did so far.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// Sends the rest; the run's summary.
    pub fn finish(mut self) -> ops::Result<Summary> {
        self.flush()?;
        Ok(self.summary)
    }
}
