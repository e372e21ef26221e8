//! Keeping the store in step with a git remote, as the operations layer
//! sees it.
//!
//! The rounds themselves (git, merges, conflict copies) live in a front
//! end (`front::sync`); this layer only asks one to run ([`Syncer`]) with
//! its own writer, so that a round's changes reach the store the way every
//! other change does: through the mount when a daemon serves it, straight
//! on the store under its lock otherwise. `mnemofs sync` and the daemon's
//! schedule are then one request, [`Request::Sync`](super::Request::Sync).

use serde::{Deserialize, Serialize};

use super::{Result, Writer};
use crate::store::Store;

/// Runs sync rounds for one store.
pub trait Syncer: Send + Sync {
    /// Runs one round: commits local changes, fetches and merges, applies
    /// what came in through `writer`, pushes. `settle` brings the index up
    /// to date with the store; a round calls it before it applies anything,
    /// so that the index knows each file as it is and follows it through a
    /// move.
    fn round(&self, store: &Store, writer: &dyn Writer, settle: &dyn Fn()) -> Result<SyncReport>;

    /// The last round's report, if a round ran in this process.
    fn last(&self) -> Option<SyncReport>;
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// The remote, as git names it, and its URL.
    pub remote: String,
    /// The branch kept in step.
    pub branch: String,
    /// Unix milliseconds when the round ended.
    pub finished_ms: i64,
    /// Local changes committed (`added a.md`, `renamed a.md -> b.md`...).
    pub committed: Vec<String>,
    /// Changes from the remote applied to the store, in the same words.
    pub pulled: Vec<String>,
    /// Conflict copies made this round: the other side's version of a
    /// file both sides changed.
    pub conflicts: Vec<String>,
    /// Files edited on one side and deleted on the other: kept.
    pub kept: Vec<String>,
    /// Changes not applied yet (a file open for writing, or written since
    /// the round began); the next round finishes them.
    pub waiting: Vec<String>,
    /// Folders sync leaves out, and why: a git repository of its own inside
    /// the store, whose notes git records only as a commit id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// True when the remote now has what the store has.
    pub pushed: bool,
    /// Commits this round pushed that earlier rounds (or the user) made:
    /// a round after one that could not reach the remote.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pushed_earlier: usize,
    /// True for a read-only clone, which never pushes.
    pub read_only: bool,
    /// The commit the store is at.
    pub head: String,
    /// True when this round finished one that was cut short.
    pub resumed: bool,
    /// What went wrong, if the round could not finish (the store is as it
    /// was, apart from what it says it applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `1 copy`, `2 copies`: a count and its noun (`-s` added, or `y` made
/// `ies`).
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        return format!("1 {noun}");
    }
    match noun.strip_suffix('y') {
        Some(stem) => format!("{n} {stem}ies"),
        None => format!("{n} {noun}s"),
    }
}

impl SyncReport {
    /// One line: what the round did.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.committed.is_empty() {
            parts.push(format!(
                "{} committed",
                counted(self.committed.len(), "local change")
            ));
        }
        if !self.pulled.is_empty() {
            parts.push(format!("{} pulled", counted(self.pulled.len(), "change")));
        }
        if !self.conflicts.is_empty() {
            parts.push(format!(
                "{} kept as copies",
                counted(self.conflicts.len(), "conflict")
            ));
        }
        if !self.kept.is_empty() {
            parts.push(format!(
                "{} edited here and deleted there kept",
                counted(self.kept.len(), "file")
            ));
        }
        if !self.waiting.is_empty() {
            let n = self.waiting.len();
            let verb = if n == 1 { "waits" } else { "wait" };
            parts.push(format!(
                "{} {verb} for the next round",
                counted(n, "change")
            ));
        }
        if self.pushed_earlier > 0 {
            parts.push(format!(
                "{} pushed",
                counted(self.pushed_earlier, "earlier commit")
            ));
        }
        if parts.is_empty() {
            parts.push("nothing to do".into());
        }
        let pushed = if self.read_only {
            "; read-only, nothing pushed"
        } else if self.pushed {
            ""
        } else {
            "; not pushed"
        };
        format!(
            "synced with {} ({}): {}{pushed}",
            self.remote,
            self.branch,
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn counts_read_as_words() {
        assert_eq!(counted(1, "sync conflict copy"), "1 sync conflict copy");
        assert_eq!(counted(2, "sync conflict copy"), "2 sync conflict copies");
        assert_eq!(counted(0, "change"), "0 changes");
        assert_eq!(counted(1, "local change"), "1 local change");
    }
}
