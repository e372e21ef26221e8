//! What an organizer run did, and the organizer as the operations layer
//! sees it.
//!
//! The organizer itself lives above this layer (`tasks`); the operations
//! layer only asks it to run ([`Organizer`]), so that `dream` is one
//! operation whichever front end calls it and wherever the organizer runs.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::Result;
use crate::store::StorePath;

/// What one run did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Report {
    /// Dream level run (0 for the normalizer alone).
    pub level: u8,
    /// Unix seconds when the run finished.
    pub finished_at: i64,
    /// Memories given missing frontmatter.
    pub normalized: usize,
    /// Inbox items moved to their category.
    pub organized: usize,
    /// Inbox items archived as expired.
    pub expired: usize,
    /// Memories archived as decayed.
    pub decayed: usize,
    /// Duplicates archived as merged.
    pub merged: usize,
    /// Links redirected from merged copies to the memory kept.
    pub links_redirected: usize,
    /// Wikilinks recorded by id in `links:`.
    pub links_resolved: usize,
    /// Links that name no memory, or several.
    pub links_unresolved: usize,
    /// Reminders created.
    pub reminders: usize,
    /// Files left alone because their frontmatter is malformed.
    pub malformed: usize,
    /// Changes put off because the file was busy; retried later.
    pub retried: usize,
    /// Inbox items moved to their category, and what placed each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filed: Vec<Filed>,
    /// Items left where they are on purpose, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// Errors, one line each.
    pub errors: Vec<String>,
}

/// An inbox item a run filed, and what placed it there.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Filed {
    /// Where it was.
    pub from: String,
    /// Where it is now.
    pub to: String,
    /// What placed it: its category field, what it says about itself,
    /// its meaning, its words, the default category, or the caller.
    pub by: String,
}

/// An item a run left alone, and why.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Skipped {
    /// The item's path in the store.
    pub path: String,
    /// Why it was left alone.
    pub reason: String,
}

impl Report {
    /// The non-zero counts in a few words: `3 organized, 1 merged`, or
    /// `nothing to do`; errors counted last.
    pub fn summary(&self) -> String {
        let said = |n: usize, what: &str| (n > 0).then(|| format!("{n} {what}"));
        let noun = |n: usize, what: &str| (n > 0).then(|| super::sync::counted(n, what));
        let words: Vec<String> = [
            said(self.normalized, "normalized"),
            said(self.organized, "organized"),
            said(self.expired, "expired"),
            said(self.decayed, "decayed"),
            said(self.merged, "merged"),
            said(self.links_redirected, "links redirected"),
            said(self.links_resolved, "links resolved"),
            said(self.links_unresolved, "links unresolved"),
            noun(self.reminders, "reminder"),
            said(self.malformed, "malformed"),
            said(self.retried, "retried"),
            said(self.skipped.len(), "skipped"),
            noun(self.errors.len(), "error"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if words.is_empty() {
            "nothing to do".to_owned()
        } else {
            words.join(", ")
        }
    }

    /// Adds another run's counts and lists to this one.
    pub fn add(&mut self, other: Report) {
        self.normalized += other.normalized;
        self.organized += other.organized;
        self.expired += other.expired;
        self.decayed += other.decayed;
        self.merged += other.merged;
        self.links_redirected += other.links_redirected;
        self.links_resolved += other.links_resolved;
        self.links_unresolved += other.links_unresolved;
        self.reminders += other.reminders;
        self.malformed += other.malformed;
        self.retried += other.retried;
        self.filed.extend(other.filed);
        self.skipped.extend(other.skipped);
        // A note one level left in the inbox and a later one filed (its
        // reminder made) was filed, not skipped.
        let filed: std::collections::HashSet<&str> =
            self.filed.iter().map(|f| f.from.as_str()).collect();
        self.skipped.retain(|s| !filed.contains(s.path.as_str()));
        self.errors.extend(other.errors);
    }
}

/// The organizer, as the operations layer calls it.
pub trait Organizer: Send + Sync {
    /// Runs a dream level now, on request: every inbox item that is not
    /// open for writing is classified, whatever its age.
    fn dream(&self, level: u8) -> Result<Report>;

    /// The last report of each task ("normalize", "dream-1", ...).
    fn last_reports(&self) -> HashMap<String, Report>;

    /// Writes the missing frontmatter (with the ids the index shows) into
    /// `paths`, or into every memory outside `archive/` when `None`,
    /// whether written since the mount or not.
    fn normalize(&self, paths: Option<Vec<StorePath>>) -> Result<Report> {
        let _ = paths;
        Err(super::Error::Unavailable(
            "this organizer does not normalize on request".into(),
        ))
    }

    /// `path` was just restored to an earlier version: the normalizer
    /// leaves those bytes as they are until someone writes the file again.
    fn restored(&self, path: &StorePath) {
        let _ = path;
    }

    /// Changes waiting for the organizer: files to normalize and changes
    /// it has not taken yet.
    fn queue(&self) -> usize {
        0
    }

    /// Does one chore now (a lifecycle command): one step of a dream, or
    /// the upgrade of one inbox memory.
    fn run(&self, chore: super::Chore) -> Result<super::StepReport> {
        let _ = chore;
        Err(super::Error::Unavailable(
            "this organizer runs whole dreams only".into(),
        ))
    }
}
