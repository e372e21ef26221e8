//! Memories as records: memory-cli's `Memory` object, with mnemofs's path,
//! title, type and whole frontmatter beside it.
//!
//! `read --json`, `list --json` and `export` print these, and `import`
//! reads them back, so one record describes a memory completely enough
//! to restore it. Fields a memory's frontmatter does not state are
//! derived the way the organizer would see them: the phase from the
//! folder (`inbox/`, `archive/`, anywhere else organized), the category
//! from the first folder when it names one, and a memory without `scope`
//! is global. The volatile counters (`access_count`, `version`,
//! `updated_at`) come from the state dir when this process has them, else
//! from the frontmatter. `content_hash` is memory-cli's: the SHA-256 of
//! the content, in hex, so a record can be de-duplicated by content
//! wherever it came from. `frontmatter_text` is the frontmatter block as
//! the file has it, so that an import writes the file back byte for byte;
//! `frontmatter` is the same block read, for everything else.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Error, Operations, Result};
use crate::memory::{self, Category, Phase};
use crate::store::{FileKind, StorePath};

/// One memory, as memory-cli describes it, plus where and what it is here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// The frontmatter `id` (`null` until the normalizer gives it one).
    pub id: Option<String>,
    /// The body: everything below the frontmatter.
    pub content: String,
    /// SHA-256 of `content`, in hex.
    pub content_hash: String,
    /// `inbox`, `organized` or `archived`.
    pub phase: String,
    /// One of the fourteen categories, when known.
    pub category: Option<String>,
    /// `global` or `agent:NAME` (`global` when the memory names none).
    pub scope: String,
    /// Frontmatter and inline tags, lowercased.
    pub tags: Vec<String>,
    /// Who or what wrote it.
    pub source: Option<String>,
    /// When it was made, as written.
    pub created_at: Option<String>,
    /// When it last changed.
    pub updated_at: Option<String>,
    /// When it expires, as written.
    pub expires_at: Option<String>,
    /// How often it was read.
    pub access_count: u64,
    /// The ids (or names) in its `links:`.
    pub links: Vec<String>,
    /// Completed writes.
    pub version: u64,
    /// Where it is, relative to the store.
    pub path: String,
    /// Its title (frontmatter, else first heading, else file stem).
    pub title: String,
    /// Its frontmatter `type`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The whole frontmatter, as JSON.
    pub frontmatter: serde_json::Value,
    /// The frontmatter block exactly as the file has it (`---` lines, key
    /// order, comments and line ends included; empty when there is none):
    /// the file is this, then `content`. Absent from older exports.
    #[serde(default)]
    pub frontmatter_text: Option<String>,
}

/// Which memories [`Request::Records`](super::Request::Records) returns:
/// those matching every filter given, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecordFilter {
    /// Only this phase (`inbox`, `organized`, `archived`).
    pub phase: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only memories with this tag (without `#`).
    pub tag: Option<String>,
    /// Only memories with this `type`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Only memories with this `source`.
    pub source: Option<String>,
}

/// The filters of memory-cli's `search`, as terms of the query language.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchFilter {
    /// Every one of these tags.
    pub tags: Vec<String>,
    /// This phase.
    pub phase: Option<String>,
    /// This category.
    pub category: Option<String>,
    /// This source.
    pub source: Option<String>,
    /// This `type`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Created on or after this day (`YYYY-MM-DD`) or instant.
    pub from: Option<String>,
    /// Created on or before this day or instant.
    pub to: Option<String>,
}

impl SearchFilter {
    /// `query` with the filters added as terms it must also match; a
    /// value that is not a phase, a category or a date is refused.
    pub fn apply(&self, query: &str) -> Result<String> {
        let quoted = |v: &str| format!("\"{}\"", v.trim().replace('"', ""));
        let mut terms = vec![query.trim().to_string()];
        let bare = terms.clone();
        for tag in &self.tags {
            let tag = tag.trim().trim_start_matches('#');
            // A plain tag unquoted, so that it finds its nested tags too.
            let plain = tag
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '/' | '-' | '_'));
            if plain && !tag.is_empty() {
                // Lowercase, as tags are kept: never the parser's AND or OR.
                terms.push(format!("tag:{}", tag.to_lowercase()));
            } else if !tag.is_empty() {
                terms.push(format!("tag:{}", quoted(tag)));
            }
        }
        if let Some(p) = &self.phase {
            let p = p
                .parse::<Phase>()
                .map_err(|e| Error::InvalidInput(e.to_string()))?;
            terms.push(format!("phase:{}", p.as_str()));
        }
        if let Some(c) = &self.category {
            let c = super::error::category(c)?;
            terms.push(format!("category:{}", c.as_str()));
        }
        for (field, value) in [("source", &self.source), ("type", &self.kind)] {
            if let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) {
                terms.push(format!("{field}:{}", quoted(v)));
            }
        }
        let day = |flag: &str, value: &Option<String>| -> Result<Option<String>> {
            match value.as_deref().map(str::trim) {
                None | Some("") => Ok(None),
                Some(v) if memory::parse_timestamp(v).is_some() => Ok(Some(v.to_string())),
                Some(v) => Err(Error::InvalidInput(format!(
                    "{v:?} is not a date for `{flag}` (YYYY-MM-DD)"
                ))),
            }
        };
        match (day("from", &self.from)?, day("to", &self.to)?) {
            (None, None) => {}
            (from, to) => {
                // `--to` a day takes that whole day: up to the next one,
                // which is left out.
                let next_day = to
                    .as_deref()
                    .and_then(|t| {
                        t.parse::<jiff::civil::Date>()
                            .ok()
                            .filter(|_| t.len() == 10)
                    })
                    .and_then(|d| d.tomorrow().ok());
                let (to, close) = match (next_day, to) {
                    (Some(next), _) => (next.to_string(), '}'),
                    (None, to) => (to.unwrap_or_else(|| "*".into()), ']'),
                };
                terms.push(format!(
                    "created:[{} TO {to}{close}",
                    from.as_deref().unwrap_or("*"),
                ));
            }
        }
        if terms == bare {
            return Ok(query.to_string());
        }
        // The query's own words bind among themselves, not to a filter;
        // the filters restrict without ranking, the words rank.
        if !terms[0].is_empty() {
            terms[0] = format!("({})", terms[0]);
        }
        terms.retain(|t| !t.is_empty());
        Ok(terms.join(" "))
    }
}

/// One page of records, and where the next one starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordPage {
    /// The records, by path.
    pub records: Vec<MemoryRecord>,
    /// The path to pass as `after` for the next page; `None` at the end.
    pub next: Option<String>,
}

/// Bytes of files after which a page of [`Operations::files`] ends.
const FILES_PAGE_BYTES: usize = 16 << 20;

/// A page of the store's files that are not memories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePage {
    /// The files, by path.
    pub files: Vec<StoreFile>,
    /// The path to pass as `after` for the next page; `None` at the end.
    pub next: Option<String>,
}

/// A file of the store that is not a memory, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreFile {
    /// Its path in the store.
    pub path: String,
    /// Its content.
    pub bytes: Vec<u8>,
}

/// SHA-256 of a memory's content, in hex, as memory-cli hashes it.
pub fn content_sha256(content: &str) -> String {
    let digest = Sha256::digest(content.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The phase a memory at `path` is in when its frontmatter says none.
pub fn phase_of_path(path: &str) -> Phase {
    match path.split('/').next() {
        Some("inbox") => Phase::Inbox,
        Some("archive") => Phase::Archived,
        _ => Phase::Organized,
    }
}

impl RecordFilter {
    /// The filter with its values checked, so a typo is one sentence
    /// rather than an empty list, and its category by its own name,
    /// whichever of its names was given (`人物`, `person`).
    fn checked(&self) -> Result<RecordFilter> {
        if let Some(p) = &self.phase {
            p.parse::<Phase>()
                .map_err(|e| Error::InvalidInput(e.to_string()))?;
        }
        let category = match &self.category {
            Some(c) => Some(super::error::category(c)?.as_str().to_string()),
            None => None,
        };
        Ok(RecordFilter {
            category,
            ..self.clone()
        })
    }

    fn matches(&self, record: &MemoryRecord) -> bool {
        let same = |want: &Option<String>, have: Option<&str>| {
            want.as_deref()
                .is_none_or(|w| have.is_some_and(|h| h.eq_ignore_ascii_case(w.trim())))
        };
        let tag = self
            .tag
            .as_deref()
            .map(|t| t.trim().trim_start_matches('#').to_lowercase());
        same(&self.phase, Some(&record.phase))
            && same(&self.category, record.category.as_deref())
            && same(&self.kind, record.kind.as_deref())
            && same(&self.source, record.source.as_deref())
            && tag.is_none_or(|t| {
                // A tag names its nested tags too: `project` has `project/alpha`.
                record.tags.iter().any(|h| {
                    h.strip_prefix(t.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
            })
    }
}

impl Operations {
    /// The record of the memory `reference` names. Counts as a read of it
    /// (memory-cli's `access_count`), where this process keeps counters.
    pub fn record(&self, reference: &str) -> Result<MemoryRecord> {
        let path = self.resolve(reference)?;
        let record = self.record_at(&path)?;
        if let Some(counters) = &self.counters {
            counters.record_read_open(&path);
        }
        Ok(record)
    }

    /// Deletes the memory `reference` names (never a folder); returns
    /// where it was and its id.
    pub fn delete_memory(&self, reference: &str) -> Result<(StorePath, Option<String>)> {
        let path = self.resolve(reference)?;
        let st = self
            .store
            .stat(&path)
            .map_err(|e| Error::io(reference, e))?;
        if st.kind == FileKind::Directory {
            return Err(Error::InvalidInput(format!(
                "{path} is a folder, not a memory; name one memory by id, path, title or alias"
            )));
        }
        let id = self
            .read_memory(&path)
            .ok()
            .and_then(|(_, _, text)| self.id_of(&path, &text));
        self.delete(&path.to_string())?;
        Ok((path, id))
    }

    /// The record of the memory at `path`.
    pub(crate) fn record_at(&self, path: &StorePath) -> Result<MemoryRecord> {
        let shown = path.to_string();
        let (_, _, text) = self.read_text(path, &shown)?;
        let stem = path
            .as_path()
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = memory::parse(&stem, &text);
        let fm = &parsed.frontmatter;
        let content = parsed.body(&text).to_string();
        let counters = self.counters.as_ref().map(|c| c.get(path));
        let category = fm
            .category
            .or_else(|| Category::of_folder(path.as_path()))
            .map(|c| c.as_str().to_string());
        let mtime = self
            .store
            .stat(path)
            .ok()
            .map(|st| memory::format_timestamp(st.mtime.sec));
        Ok(MemoryRecord {
            id: fm.id.clone().or_else(|| self.untouched_id(path)),
            content_hash: content_sha256(&content),
            phase: fm
                .phase
                .unwrap_or_else(|| phase_of_path(&shown))
                .as_str()
                .to_string(),
            category,
            scope: fm.scope.clone().unwrap_or_else(|| "global".into()),
            tags: parsed.tags.clone(),
            source: fm.source.clone(),
            created_at: fm.created_at.clone(),
            updated_at: counters
                .as_ref()
                .and_then(|c| c.updated_at.clone())
                .or_else(|| fm.updated_at.clone())
                .or(mtime),
            expires_at: fm.expires_at.clone(),
            access_count: counters
                .as_ref()
                .map(|c| c.access_count)
                .filter(|n| *n > 0)
                .or(fm.access_count)
                .unwrap_or(0),
            links: fm.links.clone(),
            version: counters
                .as_ref()
                .map(|c| c.version)
                .filter(|n| *n > 0)
                .or(fm.version)
                .unwrap_or(1),
            path: shown,
            title: parsed.title.clone(),
            kind: fm.kind.clone(),
            frontmatter: serde_json::to_value(fm)
                .unwrap_or_else(|_| serde_json::Value::Object(Default::default())),
            frontmatter_text: text.get(..text.len() - content.len()).map(str::to_string),
            content,
        })
    }

    /// Up to `limit` records matching `filter`, by path, starting after
    /// the path `after`: every markdown file of the store (`archive/`
    /// included) that this session may see, read as it is now. Files that
    /// vanished or are not text are left out. A page walks only what it
    /// lists (folders wholly before `after` are skipped), so paging
    /// through a large store costs one walk in all, not one a page.
    pub fn records(
        &self,
        filter: &RecordFilter,
        after: Option<&str>,
        limit: usize,
    ) -> Result<RecordPage> {
        let filter = filter.checked()?;
        let limit = limit.max(1);
        let mut records: Vec<MemoryRecord> = Vec::new();
        let mut next = None;
        self.walk_files(&StorePath::root(), after, true, &mut |path| {
            if records.len() == limit {
                next = records.last().map(|r| r.path.clone());
                return false;
            }
            let Ok(record) = self.record_at(&path) else {
                return true;
            };
            // A session sees by each memory's own `scope:`, as a read does.
            let visible = self
                .scope()
                .is_none_or(|scope| scope.sees(Some(&record.scope)));
            if visible && filter.matches(&record) {
                records.push(record);
            }
            true
        })?;
        Ok(RecordPage { records, next })
    }

    /// Every file below the root that is not a memory (attachments, text
    /// files), with its bytes, by path, from after `after`: at most
    /// `limit` of them, and fewer once they hold [`FILES_PAGE_BYTES`]. A
    /// scoped session gets none: a file has no scope to check.
    pub fn files(&self, after: Option<&str>, limit: usize) -> Result<FilePage> {
        let mut page = FilePage::default();
        if self.scope().is_some() {
            return Ok(page);
        }
        let limit = limit.max(1);
        let mut held = 0usize;
        let mut failed = None;
        self.walk_files(&StorePath::root(), after, false, &mut |path| {
            if page.files.len() == limit || held >= FILES_PAGE_BYTES {
                page.next = page.files.last().map(|f| f.path.clone());
                return false;
            }
            match self.store.read(&path) {
                Ok(bytes) => {
                    held += bytes.len();
                    page.files.push(StoreFile {
                        path: path.to_string(),
                        bytes,
                    });
                    true
                }
                Err(e) => {
                    failed = Some(Error::io(path.to_string(), e));
                    false
                }
            }
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(page),
        }
    }

    /// Hands `visit` every markdown file (or, unless `markdown`, every
    /// other file) below `dir` whose path sorts after `after`, in the
    /// order of their paths as strings (dot-folders, temp files and the
    /// views' names at the root left out), walked on the store itself so
    /// that nothing the index has not seen yet is missed. Stops, answering
    /// false, when `visit` does.
    fn walk_files(
        &self,
        dir: &StorePath,
        after: Option<&str>,
        markdown: bool,
        visit: &mut dyn FnMut(StorePath) -> bool,
    ) -> Result<bool> {
        let entries = match self.store.read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if dir.is_root() => return Err(Error::io("", e)),
            Err(_) => return Ok(true),
        };
        // A folder's key ends in `/`: every path inside it starts so, which
        // puts the folder where its contents sort among its siblings.
        let mut items: Vec<(String, StorePath, bool)> = Vec::new();
        for entry in entries {
            let name = entry.name.as_encoded_bytes();
            if name.first() == Some(&b'.') || name.starts_with(crate::store::TEMP_PREFIX.as_bytes())
            {
                continue;
            }
            let Some(path) = dir.join(&entry.name) else {
                continue;
            };
            match entry.kind {
                FileKind::Directory
                    if !(dir.is_root()
                        && crate::views::ViewRoot::from_name(&entry.name).is_some()) =>
                {
                    items.push((format!("{path}/"), path, true));
                }
                FileKind::File if name.ends_with(b".md") == markdown => {
                    items.push((path.to_string(), path, false));
                }
                _ => {}
            }
        }
        items.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, path, folder) in items {
            if let Some(after) = after {
                // Skip what sorts wholly before `after`: a file at or
                // before it, a folder whose paths all do.
                let before = if folder {
                    after > key.as_str() && !after.starts_with(&key)
                } else {
                    key.as_str() <= after
                };
                if before {
                    continue;
                }
            }
            let go_on = if folder {
                self.walk_files(&path, after, markdown, visit)?
            } else {
                visit(path)
            };
            if !go_on {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_is_sha256_hex() {
        assert_eq!(
            content_sha256(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn search_filters_become_terms_and_the_query_keeps_its_own_words_together() {
        let filter = SearchFilter {
            tags: vec!["ui".into(), "#dark".into()],
            category: Some("Preferences".into()),
            from: Some("2026-01-01".into()),
            to: Some("2026-01-31".into()),
            ..SearchFilter::default()
        };
        assert_eq!(
            filter.apply("dark mode").expect("valid"),
            "(dark mode) tag:ui tag:dark category:preferences \
             created:[2026-01-01 TO 2026-02-01}"
        );
        assert_eq!(SearchFilter::default().apply("a b").expect("valid"), "a b");
        let bad = SearchFilter {
            to: Some("soon".into()),
            ..SearchFilter::default()
        };
        assert!(bad.apply("x").is_err());
        let bad = SearchFilter {
            phase: Some("later".into()),
            ..SearchFilter::default()
        };
        assert!(bad.apply("x").is_err());
    }

    #[test]
    fn phase_follows_the_first_folder() {
        assert_eq!(phase_of_path("inbox/a.md"), Phase::Inbox);
        assert_eq!(phase_of_path("archive/merged/a.md"), Phase::Archived);
        assert_eq!(phase_of_path("people/ann.md"), Phase::Organized);
    }
}
