//! Sessions: which memories a caller sees (its scope), and which version
//! of a memory it last read (compare before writing).
//!
//! A session opened as `agent:NAME` sees the global memories (no `scope:`,
//! or `scope: global`) and its own, never another agent's; one opened as
//! `global` sees only the global ones; an unscoped one (the mount, the
//! organizer, a plain command) sees everything. Hiding happens here, so
//! every front end hides the same way: a hidden memory is "not found"
//! whether it is read, edited, resolved by a ref, reached through a view's
//! link, or listed (folders, views, search, backlinks, recent, context).
//! Writes in an agent's session get its scope unless they name one, and
//! may not name another agent's.
//!
//! Subtleties:
//! - A file read directly is judged by its own frontmatter; lists and
//!   search ask the index which memories carry another scope, so a memory
//!   written a moment ago may show in a listing until it is indexed
//!   (reading it is refused at once).
//! - Scopes compare case-insensitively (the index keeps them lowercase).
//! - A version is the memory's content hash (`fnv1a64:...`): it changes
//!   with any change of its bytes, by whoever made it. Edits check it
//!   against the very bytes they compare-and-swap, so "the memory changed
//!   since" is exact; a delete or a move checks it just before acting.

use std::collections::HashSet;

use super::{Error, Operations, Result};
use crate::memory;
use crate::store::{FileKind, StorePath};

/// Which memories a session sees: `global`, or `agent:NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope(String);

impl Scope {
    /// A scope as a caller spells it: `global` or `agent:NAME` (any case;
    /// NAME has no spaces).
    pub fn parse(text: &str) -> Result<Scope> {
        let scope = text.trim().to_lowercase();
        let valid = scope == "global"
            || scope.strip_prefix("agent:").is_some_and(|name| {
                !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c == ',')
            });
        if valid {
            Ok(Scope(scope))
        } else {
            Err(Error::InvalidInput(format!(
                "{text:?} is not a scope: use global or agent:NAME"
            )))
        }
    }

    /// The scope, lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for an agent's scope: what its writes get by default.
    pub fn is_agent(&self) -> bool {
        self.0 != "global"
    }

    /// True if a memory whose `scope:` is `memory_scope` is visible.
    pub fn sees(&self, memory_scope: Option<&str>) -> bool {
        match memory_scope.map(str::trim).filter(|s| !s.is_empty()) {
            None => true,
            Some(s) => s.eq_ignore_ascii_case("global") || s.eq_ignore_ascii_case(&self.0),
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A memory's version: the hash of its bytes.
pub fn version_of(bytes: &[u8]) -> String {
    crate::store::counters::content_hash(bytes)
}

impl Operations {
    /// The same operations for a session in `scope` (`None`: sees all).
    pub fn scoped(&self, scope: Option<Scope>) -> Operations {
        let mut ops = self.clone();
        ops.scope = scope;
        ops
    }

    /// The same operations, whose writes first check that the memory they
    /// change is still at `version` (as `read` gave it); if it changed, they
    /// fail with [`Error::Conflict`] and write nothing.
    pub fn expecting(&self, version: Option<String>) -> Operations {
        let mut ops = self.clone();
        ops.expected_version = version.map(|v| v.trim().to_string());
        ops
    }

    /// The session's scope, if it has one.
    pub fn scope(&self) -> Option<&Scope> {
        self.scope.as_ref()
    }

    /// True if the file's text is a memory this session may not see.
    pub(super) fn hides_text(&self, text: &str) -> bool {
        let Some(scope) = &self.scope else {
            return false;
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if !text.starts_with("---") {
            return false;
        }
        !scope.sees(memory::parse("", text).frontmatter.scope.as_deref())
    }

    /// True if the file at `path` is a memory this session may not see.
    pub(super) fn hides(&self, path: &StorePath) -> bool {
        if self.scope.is_none() {
            return false;
        }
        match self.store.stat(path) {
            Ok(st) if st.kind == FileKind::File && st.size <= self.max_file_size => self
                .store
                .read(path)
                .ok()
                .is_some_and(|bytes| self.hides_text(&String::from_utf8_lossy(&bytes))),
            _ => false,
        }
    }

    /// Refuses a path this session may not see as not found.
    pub(super) fn check_visible(&self, path: &StorePath, shown: &str) -> Result<()> {
        if self.hides(path) {
            return Err(Error::NotFound { path: shown.into() });
        }
        Ok(())
    }

    /// The scopes the index knows that this session may not see.
    pub(super) fn hidden_scopes(&self) -> Vec<String> {
        match &self.scope {
            None => Vec::new(),
            Some(scope) => self
                .index
                .scopes()
                .into_iter()
                .filter(|s| !scope.sees(Some(s)))
                .collect(),
        }
    }

    /// The memories, by path, this session may not see, as the index has
    /// them.
    pub(super) fn hidden_paths(&self) -> HashSet<String> {
        self.hidden_scopes()
            .iter()
            .flat_map(|s| self.index.by_scope(s))
            .map(|p| p.to_string())
            .collect()
    }

    /// The views as this session sees them: without the memories it may
    /// not see, ranks numbered after they are left out.
    pub(super) fn views_seen(&self) -> crate::views::Views {
        if self.scope.is_none() {
            return self.views.clone();
        }
        let hidden = self
            .hidden_paths()
            .iter()
            .filter_map(StorePath::new)
            .collect();
        self.views.hiding(hidden)
    }

    /// Refuses to change a folder holding memories this session may not
    /// see (a delete or a move would take them along).
    pub(super) fn check_folder_visible(&self, folder: &StorePath, shown: &str) -> Result<()> {
        if self.scope.is_none() {
            return Ok(());
        }
        let inside = self
            .hidden_paths()
            .into_iter()
            .any(|p| std::path::Path::new(&p).starts_with(folder.as_path()));
        if inside {
            return Err(Error::OtherScope(format!(
                "{shown} holds memories of other scopes; this session leaves it alone"
            )));
        }
        Ok(())
    }

    /// Refuses a write unless the memory read as `bytes` is at the
    /// expected version.
    pub(super) fn check_version(&self, shown: &str, bytes: &[u8]) -> Result<()> {
        match &self.expected_version {
            Some(expected) if *expected != version_of(bytes) => {
                Err(Error::Conflict { path: shown.into() })
            }
            _ => Ok(()),
        }
    }

    /// The scope a new memory gets: the one it names, which this session
    /// must see, else an agent session's own.
    pub(super) fn scope_for_new(&self, named: Option<&str>) -> Result<Option<String>> {
        let named = named.map(str::trim).filter(|s| !s.is_empty());
        match (&self.scope, named) {
            (Some(scope), Some(named)) if !scope.sees(Some(named)) => Err(Error::OtherScope(
                format!("a session in scope {scope} cannot write a memory scoped to {named}"),
            )),
            (_, Some(named)) => Ok(Some(named.to_string())),
            (Some(scope), None) if scope.is_agent() => Ok(Some(scope.to_string())),
            _ => Ok(None),
        }
    }

    /// Refuses an edit that would give a memory a scope this session may
    /// not see: an agent never hands a memory to another agent, nor hides
    /// a global one from everyone else.
    pub(super) fn check_scope_kept(&self, path: &StorePath, new: &str) -> Result<()> {
        let markdown = path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        if self.scope.is_none() || !markdown {
            return Ok(());
        }
        let named = memory::parse("", new).frontmatter.scope;
        self.scope_for_new(named.as_deref()).map(drop)
    }

    /// A markdown file's text as an agent session writes it: with the
    /// session's `scope:` when it names none. Other files, and sessions
    /// that are not an agent's, keep the text as given.
    pub(super) fn with_session_scope(&self, path: &StorePath, text: &str) -> Result<String> {
        let markdown = path
            .as_path()
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        if self.scope.is_none() || !markdown {
            return Ok(text.to_string());
        }
        let named = memory::parse("", text).frontmatter.scope;
        if named.is_some() {
            self.scope_for_new(named.as_deref())?;
            return Ok(text.to_string());
        }
        let Some(scope) = self.scope_for_new(None)? else {
            return Ok(text.to_string());
        };
        match memory::add_missing_fields(text, &[("scope", scope.clone())]) {
            Ok(Some(new)) => Ok(new),
            Ok(None) => Ok(text.to_string()),
            Err(e) => Err(Error::InvalidInput(format!(
                "{path}: cannot record this session's scope ({scope}) in its frontmatter: {e}"
            ))),
        }
    }
}
