//! What each virtual path of the mount contains, computed from the index.
//!
//! The views sit beside the real tree at the mount root (`search/`,
//! `backlinks/`, `by-category/`, ...). This module decides names, symlink
//! targets and file contents; it does no I/O on the store and knows nothing
//! of inodes (the `fs` layer maps these values to inodes).
//!
//! Walker safety (DESIGN principle 5): views whose size grows with the
//! store (`search/`, `backlinks/`, `by-id/`) list only a guide file and
//! resolve names on lookup. Every result is a *relative* symlink into the
//! real tree, so `find`, `grep -r` and `rg` (which do not follow symlinks
//! while recursing) never read a memory twice and never loop.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::index::Index;
use crate::memory::Category;
use crate::store::StorePath;

/// Results listed in a search folder unless the query asks for more.
pub const DEFAULT_SEARCH_LIMIT: usize = 50;
/// The most results a query may ask for with `limit:N`.
pub const MAX_SEARCH_LIMIT: usize = crate::index::MAX_LIMIT;
/// Entries in `recent/`.
pub const RECENT_LIMIT: usize = 50;

/// The top-level virtual folders, in listing order.
pub const ROOT_VIEWS: [ViewRoot; 8] = [
    ViewRoot::Search,
    ViewRoot::Backlinks,
    ViewRoot::ByCategory,
    ViewRoot::ByTag,
    ViewRoot::ByType,
    ViewRoot::ById,
    ViewRoot::Recent,
    ViewRoot::Control,
];

/// A top-level virtual folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViewRoot {
    /// `search/<query>/`
    Search,
    /// `backlinks/<target>/`
    Backlinks,
    /// `by-category/<category>/`
    ByCategory,
    /// `by-tag/<tag>/`
    ByTag,
    /// `by-type/<type>/`
    ByType,
    /// `by-id/<id>.md`
    ById,
    /// `recent/`
    Recent,
    /// `.mnemofs/`
    Control,
}

impl ViewRoot {
    /// The folder's name at the mount root.
    pub fn name(self) -> &'static str {
        match self {
            ViewRoot::Search => "search",
            ViewRoot::Backlinks => "backlinks",
            ViewRoot::ByCategory => "by-category",
            ViewRoot::ByTag => "by-tag",
            ViewRoot::ByType => "by-type",
            ViewRoot::ById => "by-id",
            ViewRoot::Recent => "recent",
            ViewRoot::Control => ".mnemofs",
        }
    }

    /// The view a root-level name refers to, if it is reserved.
    pub fn from_name(name: &OsStr) -> Option<ViewRoot> {
        ROOT_VIEWS
            .into_iter()
            .find(|v| v.name().as_bytes() == name.as_bytes())
    }
}

/// A virtual directory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewDir {
    /// One of the top-level folders.
    Root(ViewRoot),
    /// `search/<query>/`
    Search(String),
    /// `backlinks/<target>/`
    Backlinks(String),
    /// `by-category/<category>/`
    Category(String),
    /// `by-tag/<tag>/`
    Tag(String),
    /// `by-type/<type>/`
    Type(String),
}

/// One entry of a virtual directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViewEntry {
    /// A subfolder.
    Dir(OsString, ViewDir),
    /// A relative symlink into the real tree.
    Link(OsString, PathBuf),
    /// A read-only file whose content is generated.
    File(OsString, ViewFile),
}

impl ViewEntry {
    /// The entry's name.
    pub fn name(&self) -> &OsStr {
        match self {
            ViewEntry::Dir(n, _) | ViewEntry::Link(n, _) | ViewEntry::File(n, _) => n,
        }
    }
}

/// A generated file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewFile {
    /// The short guide listed inside a folder that resolves on lookup.
    Guide(ViewRoot),
    /// `search/<query>/summary.md`: rank, path, title, score and snippet of each hit.
    SearchSummary(String),
    /// `.mnemofs/status.json`
    Status,
    /// `.mnemofs/GUIDE.md`
    AgentGuide,
    /// `.mnemofs/lint`
    Lint,
    /// `.mnemofs/pending.md`: reminders that are due.
    Pending,
    /// `.mnemofs/brief.md`: the session brief.
    Brief,
}

const GUIDE_NAME: &str = "GUIDE.md";
const SUMMARY_NAME: &str = "summary.md";

/// Computes view contents from an index.
#[derive(Clone)]
pub struct Views {
    index: Index,
    outputs: TaskOutputs,
    brief: Arc<std::sync::OnceLock<BriefSource>>,
}

impl std::fmt::Debug for Views {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Views")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// Makes the text of `.mnemofs/brief.md` (the operations layer's brief,
/// set by whoever wires the daemon: the views cannot call up to it).
pub type BriefSource = Box<dyn Fn() -> Option<String> + Send + Sync>;

/// What the background tasks publish through the views.
#[derive(Clone, Debug, Default)]
pub struct TaskOutputs {
    /// The text of `.mnemofs/pending.md`.
    pub pending: Arc<Mutex<String>>,
    /// Problems the tasks found (unresolved links), for `.mnemofs/lint`.
    pub lint: Arc<Mutex<Vec<(StorePath, String)>>>,
}

/// Depth of a view directory below the mount root, for relative targets.
fn depth(dir: &ViewDir) -> usize {
    match dir {
        ViewDir::Root(_) => 1,
        _ => 2,
    }
}

/// `../../` + path: a relative link from a view folder into the real tree.
fn link_target(dir_depth: usize, path: &StorePath) -> PathBuf {
    let mut target = PathBuf::new();
    for _ in 0..dir_depth {
        target.push("..");
    }
    target.push(path.as_path());
    target
}

fn name_str(name: &OsStr) -> Option<String> {
    std::str::from_utf8(name.as_bytes()).ok().map(str::to_owned)
}

/// Splits `limit:N` out of a query; the rest is the query text.
pub fn split_limit(query: &str) -> (String, usize) {
    let (text, limit) = crate::index::take_limit(query);
    (text, limit.unwrap_or(DEFAULT_SEARCH_LIMIT))
}

/// Names each path by its file name, adding ` (2)`, ` (3)` before the
/// extension when two memories in different folders share a name.
fn unique_names(paths: &[StorePath]) -> Vec<OsString> {
    let mut seen = std::collections::HashMap::<Vec<u8>, usize>::new();
    paths
        .iter()
        .map(|p| {
            let name = p.file_name().map(OsStr::as_bytes).unwrap_or(b"memory");
            let count = seen.entry(name.to_vec()).or_insert(0);
            *count += 1;
            if *count == 1 {
                return OsString::from_vec(name.to_vec());
            }
            let (stem, ext) = match name.iter().rposition(|b| *b == b'.') {
                Some(i) if i > 0 => name.split_at(i),
                _ => (name, &b""[..]),
            };
            let mut out = stem.to_vec();
            out.extend_from_slice(format!(" ({count})").as_bytes());
            out.extend_from_slice(ext);
            OsString::from_vec(out)
        })
        .collect()
}

/// Prefixes names with a zero-padded rank so `ls` shows them in order.
fn ranked_names(paths: &[StorePath]) -> Vec<OsString> {
    let width = paths.len().max(1).to_string().len().max(2);
    paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut name = format!("{:0width$}-", i + 1).into_bytes();
            name.extend_from_slice(p.file_name().map(OsStr::as_bytes).unwrap_or(b"memory"));
            OsString::from_vec(name)
        })
        .collect()
}

fn links(dir: &ViewDir, names: Vec<OsString>, paths: &[StorePath]) -> Vec<ViewEntry> {
    let d = depth(dir);
    names
        .into_iter()
        .zip(paths)
        .map(|(name, path)| ViewEntry::Link(name, link_target(d, path)))
        .collect()
}

impl Views {
    /// Views over an index.
    pub fn new(index: Index) -> Views {
        Views {
            index,
            outputs: TaskOutputs {
                pending: Arc::new(Mutex::new("# Due reminders\n\nNothing is due.\n".into())),
                lint: Arc::default(),
            },
            brief: Arc::default(),
        }
    }

    /// Sets what `.mnemofs/brief.md` shows (once; later calls are ignored).
    pub fn set_brief_source(&self, source: BriefSource) {
        let _ = self.brief.set(source);
    }

    /// Where the background tasks publish `pending.md` and their lint.
    pub fn task_outputs(&self) -> TaskOutputs {
        self.outputs.clone()
    }

    /// The index behind the views.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Lists a virtual directory. Folders that resolve on lookup list only
    /// their guide.
    pub fn list(&self, dir: &ViewDir) -> Vec<ViewEntry> {
        match dir {
            ViewDir::Root(root) => self.list_root(*root),
            ViewDir::Search(query) => {
                let (text, limit) = split_limit(query);
                // Paths only: snippets are made when summary.md is read.
                let paths: Vec<StorePath> = match self.index.search_paths(&text, limit) {
                    Ok(paths) => paths,
                    Err(e) => {
                        tracing::warn!("search {query:?}: {e}");
                        Vec::new()
                    }
                };
                let mut out = links(dir, ranked_names(&paths), &paths);
                out.push(ViewEntry::File(
                    SUMMARY_NAME.into(),
                    ViewFile::SearchSummary(query.clone()),
                ));
                out
            }
            ViewDir::Backlinks(target) => {
                let paths = self.index.backlinks(target);
                links(dir, unique_names(&paths), &paths)
            }
            ViewDir::Category(c) => {
                let paths = self.index.by_category(c);
                links(dir, unique_names(&paths), &paths)
            }
            ViewDir::Tag(t) => {
                let paths = self.index.by_tag(t);
                links(dir, unique_names(&paths), &paths)
            }
            ViewDir::Type(t) => {
                let paths = self.index.by_type(t);
                links(dir, unique_names(&paths), &paths)
            }
        }
    }

    fn list_root(&self, root: ViewRoot) -> Vec<ViewEntry> {
        let guide = || vec![ViewEntry::File(GUIDE_NAME.into(), ViewFile::Guide(root))];
        let dirs = |values: Vec<String>, make: fn(String) -> ViewDir| {
            values
                .into_iter()
                .filter(|v| !v.is_empty() && !v.contains('/'))
                .map(|v| ViewEntry::Dir(v.clone().into(), make(v)))
                .collect()
        };
        match root {
            ViewRoot::Search | ViewRoot::Backlinks | ViewRoot::ById => guide(),
            ViewRoot::ByCategory => dirs(
                Category::ALL
                    .iter()
                    .map(|c| c.as_str().to_string())
                    .collect(),
                ViewDir::Category,
            ),
            ViewRoot::ByTag => dirs(self.index.tags(), ViewDir::Tag),
            ViewRoot::ByType => dirs(self.index.types(), ViewDir::Type),
            ViewRoot::Recent => {
                let paths: Vec<StorePath> = self
                    .index
                    .recent(RECENT_LIMIT)
                    .into_iter()
                    .map(|(p, _)| p)
                    .collect();
                links(&ViewDir::Root(root), ranked_names(&paths), &paths)
            }
            ViewRoot::Control => vec![
                ViewEntry::File("status.json".into(), ViewFile::Status),
                ViewEntry::File(GUIDE_NAME.into(), ViewFile::AgentGuide),
                ViewEntry::File("lint".into(), ViewFile::Lint),
                ViewEntry::File("pending.md".into(), ViewFile::Pending),
                ViewEntry::File("brief.md".into(), ViewFile::Brief),
            ],
        }
    }

    /// Resolves one name inside a virtual directory. Folders that list
    /// nothing resolve any name here (a query, a target, an id).
    pub fn lookup(&self, dir: &ViewDir, name: &OsStr) -> Option<ViewEntry> {
        match dir {
            ViewDir::Root(ViewRoot::Search) if name != GUIDE_NAME => {
                let q = name_str(name)?;
                Some(ViewEntry::Dir(name.into(), ViewDir::Search(q)))
            }
            ViewDir::Root(ViewRoot::Backlinks) if name != GUIDE_NAME => {
                let t = name_str(name)?;
                Some(ViewEntry::Dir(name.into(), ViewDir::Backlinks(t)))
            }
            ViewDir::Root(ViewRoot::ById) if name != GUIDE_NAME => {
                let id = name_str(name)?;
                let id = id.strip_suffix(".md").unwrap_or(&id);
                let path = self.index.by_id(id)?;
                Some(ViewEntry::Link(name.into(), link_target(1, &path)))
            }
            ViewDir::Root(ViewRoot::ByTag) => {
                // Any tag resolves (an empty folder if unused), so a path
                // written from a listing keeps working after edits.
                let t = name_str(name)?;
                Some(ViewEntry::Dir(name.into(), ViewDir::Tag(t)))
            }
            ViewDir::Root(ViewRoot::ByType) => {
                let t = name_str(name)?;
                Some(ViewEntry::Dir(name.into(), ViewDir::Type(t)))
            }
            _ => self.list(dir).into_iter().find(|e| e.name() == name),
        }
    }

    /// The size `stat` reports for a generated file. The search summary
    /// and the brief say 0 (like files in /proc): computing them means
    /// building every snippet or reading memories, and generated files
    /// are read with direct I/O anyway.
    pub fn size_hint(&self, file: &ViewFile) -> u64 {
        match file {
            ViewFile::SearchSummary(_) | ViewFile::Brief => 0,
            other => self.read(other).len() as u64,
        }
    }

    /// The content of a generated file.
    pub fn read(&self, file: &ViewFile) -> Vec<u8> {
        match file {
            ViewFile::Guide(root) => guide_text(*root).into_bytes(),
            ViewFile::SearchSummary(query) => self.summary(query).into_bytes(),
            ViewFile::Status => {
                let s = self.index.status();
                let mut json = serde_json::to_string_pretty(&serde_json::json!({
                    "documents": s.documents,
                    "pending_changes": s.pending_changes,
                    "reconciling": s.reconciling,
                    "generation": s.generation,
                    "last_commit_ms": s.last_commit,
                }))
                .unwrap_or_default();
                json.push('\n');
                json.into_bytes()
            }
            ViewFile::AgentGuide => AGENT_GUIDE.as_bytes().to_vec(),
            ViewFile::Pending => self.outputs.pending.lock().clone().into_bytes(),
            ViewFile::Brief => self
                .brief
                .get()
                .and_then(|source| source())
                .unwrap_or_else(|| "# Session brief\n\nNot available here.\n".into())
                .into_bytes(),
            ViewFile::Lint => {
                let mut out = String::new();
                let tasks = self.outputs.lint.lock().clone();
                for (path, message) in self.index.lint().into_iter().chain(tasks) {
                    out.push_str(&format!("{path}: {message}\n"));
                }
                out.into_bytes()
            }
        }
    }

    fn summary(&self, query: &str) -> String {
        let (text, limit) = split_limit(query);
        let mut out = format!("# Search: {text}\n\n");
        for warning in self.index.query_warnings(&text) {
            out.push_str(&format!("> Note: {warning}.\n\n"));
        }
        match self.index.search(&text, limit) {
            Ok(hits) if hits.is_empty() => out.push_str("No memories matched.\n"),
            Ok(hits) => {
                let paths: Vec<StorePath> = hits.iter().map(|h| h.path.clone()).collect();
                for ((hit, name), rank) in hits.iter().zip(ranked_names(&paths)).zip(1..) {
                    out.push_str(&format!(
                        "{rank}. **{}** ({}) score {:.2}: `{}`\n   {}\n",
                        hit.title,
                        name.to_string_lossy(),
                        hit.score,
                        hit.path,
                        hit.snippet.replace('\n', " ")
                    ));
                }
            }
            Err(e) => out.push_str(&format!("The search failed: {e}\n")),
        }
        out
    }
}

fn guide_text(root: ViewRoot) -> String {
    match root {
        ViewRoot::Search => "# search/\n\nOpen `search/<query>/` to search every memory. Results are symlinks named\n`01-<file>`, `02-<file>`, ... in rank order; `summary.md` lists each hit's\nrank, path, title, score and a snippet.\n\nQueries: plain words, \"exact phrases\", `tag:ui`, `category:preferences`,\n`type:decision AND status:open`, `created:>2026-01-01`. Add `limit:200`\nfor more than 50 results. A query that is not valid syntax falls back to\nsearching its words.\n".into(),
        ViewRoot::Backlinks => "# backlinks/\n\nOpen `backlinks/<target>/` to list the memories that link to a memory.\nThe target may be its id, title, file name (without .md) or an alias,\nin any case.\n".into(),
        ViewRoot::ById => "# by-id/\n\n`by-id/<id>.md` is a symlink to wherever the memory with that `id:` lives\nnow; it follows moves.\n".into(),
        other => format!("# {}/\n", other.name()),
    }
}

/// The guide for agents at `.mnemofs/GUIDE.md`: what the store is and how
/// to search it. Front ends that are not the mount show it too.
pub const AGENT_GUIDE: &str = "# mnemofs: how to use this memory\n\n\
This folder is your long-term memory. Every memory is a markdown file,\n\
optionally with YAML frontmatter (`title`, `tags`, `category`, `type`, ...).\n\
Read, write, edit, rename and delete files here with your normal tools.\n\n\
Virtual folders (read-only; results are symlinks to the real files, so\n\
editing a result edits the memory itself):\n\n\
- `search/<query>/` ranked full-text results; `summary.md` has snippets.\n\
  Filters: `tag:x`, `category:x`, `type:x`, `status:x`, `scope:x`,\n\
  `created:>2026-01-01`; `limit:N` for more than 50 results.\n\
- `backlinks/<id|title|name>/` memories that link to a memory with\n\
  `[[Title]]` or `[[file-name]]`.\n\
- `by-category/<category>/`, `by-tag/<tag>/`, `by-type/<type>/`.\n\
- `by-id/<id>.md` always points at the memory with that id.\n\
- `recent/` the most recently changed memories, newest first.\n\
- `.mnemofs/brief.md` the session brief: active tasks, open decisions,\n\
  where the last sessions left off, reminders due soon.\n\
- `.mnemofs/status.json` index status; `.mnemofs/lint` problems found\n\
  in memories (such as malformed frontmatter).\n\n\
Drop new memories in `inbox/`; write durable ones wherever they belong.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_split_out_of_queries() {
        assert_eq!(
            split_limit("dark mode limit:200"),
            ("dark mode".into(), 200)
        );
        assert_eq!(split_limit("dark"), ("dark".into(), DEFAULT_SEARCH_LIMIT));
        assert_eq!(split_limit("limit:0 x"), ("x".into(), 1));
    }

    #[test]
    fn names_are_unique_and_ranked() {
        let paths = vec![
            StorePath::new("a/note.md").unwrap(),
            StorePath::new("b/note.md").unwrap(),
            StorePath::new("c/other").unwrap(),
        ];
        let names = unique_names(&paths);
        assert_eq!(
            names,
            vec![
                OsString::from("note.md"),
                "note (2).md".into(),
                "other".into()
            ]
        );
        let ranked = ranked_names(&paths);
        assert_eq!(ranked[0], OsString::from("01-note.md"));
        assert_eq!(link_target(2, &paths[0]), PathBuf::from("../../a/note.md"));
    }
}
