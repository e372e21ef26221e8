//! One organizer step on request: memory-cli's lifecycle commands.
//!
//! `dream` runs a whole level; these run one part of it once, where the
//! organizer runs (the daemon's organizer thread, or the caller's own
//! under the store lock), so a step never races the organizer:
//! - `upgrade` moves one inbox memory to its category now;
//! - `decay` archives organized memories unused past the threshold;
//! - `consolidate` runs what the daemon runs on its interval (inbox items
//!   past their quiet period, expiry, upgrades by access count, decay)
//!   and then merges duplicates, as memory-cli's `consolidate` runs all
//!   its daemon tasks once;
//! - `resolve-links` records `[[wikilinks]]` by id and reports the ones
//!   that name nothing or several memories;
//! - `notify` refreshes `.mnemofs/pending.md` and announces due
//!   reminders on the desktop.

use serde::{Deserialize, Serialize};

use super::{Error, Operations, Report, Result};
use crate::memory::Category;
use crate::store::StorePath;

/// A step that works on the whole store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Archive organized memories unused past the decay threshold.
    Decay,
    /// The interval's tasks, then duplicates merged.
    Consolidate,
    /// Record wikilinks by id; report unresolved ones.
    ResolveLinks,
    /// Refresh the due reminders and announce them.
    Notify,
}

impl Step {
    /// The command's name.
    pub fn name(self) -> &'static str {
        match self {
            Step::Decay => "decay",
            Step::Consolidate => "consolidate",
            Step::ResolveLinks => "resolve-links",
            Step::Notify => "notify",
        }
    }
}

/// What the organizer is asked to do once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chore {
    /// A whole-store step.
    Step(Step),
    /// Move one inbox memory into a category folder now.
    Upgrade {
        /// The memory, in `inbox/`.
        path: StorePath,
        /// Its category; else its frontmatter's, else the classifier's.
        category: Option<Category>,
    },
}

/// What a step did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepReport {
    /// The step (`upgrade`, `decay`, ...).
    pub step: String,
    /// The organizer's counts, what it skipped and why, its errors.
    pub report: Report,
    /// `upgrade`: where the memory is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `notify`: the reminders that are due, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub due: Vec<DueReminder>,
    /// Things worth saying, such as a step turned off in the configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A reminder that is due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueReminder {
    /// When it was due (RFC 3339).
    pub due_at: String,
    /// Its title.
    pub title: String,
    /// Where it is.
    pub path: String,
}

impl Operations {
    /// Runs one whole-store step now.
    pub fn step(&self, step: Step) -> Result<StepReport> {
        self.organizer_for(step.name())?.run(Chore::Step(step))
    }

    /// Moves the inbox memory `reference` names into its category now:
    /// `category` if given, else its frontmatter's, else the classifier's.
    pub fn upgrade(&self, reference: &str, category: Option<&str>) -> Result<StepReport> {
        let category = category.map(super::error::category).transpose()?;
        if category == Some(Category::Inbox) {
            return Err(Error::InvalidInput(
                "upgrade moves a memory out of the inbox; name another category".into(),
            ));
        }
        let path = self.resolve(reference)?;
        if path
            .as_path()
            .iter()
            .next()
            .is_none_or(|first| first != "inbox")
        {
            return Err(Error::InvalidInput(format!(
                "{path} is not in inbox/; only inbox memories are upgraded"
            )));
        }
        self.organizer_for("upgrade")?
            .run(Chore::Upgrade { path, category })
    }

    fn organizer_for(&self, what: &str) -> Result<&dyn super::Organizer> {
        self.organizer.as_deref().ok_or_else(|| {
            Error::Unavailable(format!(
                "cannot {what}: the organizer is off here (--no-organizer)"
            ))
        })
    }
}
