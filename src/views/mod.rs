//! What each virtual path of the mount contains, computed from the index.
//!
//! The views sit beside the real tree at the mount root (`search/`,
//! `backlinks/`, `by-category/`, ...). This module decides names, symlink
//! targets and file contents; it does no I/O on the store and knows nothing
//! of inodes (the `fs` layer maps these values to inodes).
//!
//! Walker safety (DESIGN principle 5): the view folders are not listed at
//! the root unless the mount asks for it (they resolve by path), and the
//! root shows one static guide, [`ROOT_GUIDE_NAME`], instead. Views whose
//! size grows with the store (`search/`, `backlinks/`, `by-id/`) list only
//! a guide file and resolve names on lookup. Every result is a *relative*
//! symlink into the real tree, so `find`, `grep -r` and `rg` (which do not
//! follow symlinks while recursing) never read a memory twice and never
//! loop.
//!
//! Honesty: a name that does not exist is not made up (an unknown tag or
//! type is not a folder; a name that looks like a file is not a query, so
//! creating `search/x.md` reaches the mount and fails as read-only),
//! archived memories stay out of the listings unless a query asks for
//! `phase:archived`, generated files report the size of what a read
//! returns, and names are cut to 255 bytes (the link keeps its target).

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
/// The static guide at the mount root. Not a dot-name (the memory tool's
/// listing skips those), capitals so `ls` shows it first, and `.md` so
/// agents and editors open it as the document it is.
pub const ROOT_GUIDE_NAME: &str = "MNEMOFS.md";
/// The longest name a directory entry may have (bytes).
const NAME_MAX: usize = 255;
/// Endings that make a name a file, not a query or a link target: creating
/// `search/notes.md` must reach the mount and fail there as read-only.
const FILE_ENDINGS: [&str; 3] = [".md", ".markdown", ".txt"];

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
    /// `.mnemofs/GUIDE.md`, and [`ROOT_GUIDE_NAME`] at the root.
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
    root_guide: bool,
    recent_files: Arc<Mutex<Vec<Generated>>>,
    /// Memories left out of every view, before ranks are numbered (those
    /// of other scopes, for a scoped session).
    hidden: Arc<std::collections::HashSet<StorePath>>,
}

/// A generated file's content, kept for a moment so that the `stat` that
/// reports its size and the read that follows agree and cost one build.
#[derive(Debug)]
struct Generated {
    file: ViewFile,
    generation: u64,
    made: std::time::Instant,
    content: Arc<Vec<u8>>,
}

/// How long a generated file's content is reused: long enough for the
/// `stat` and the read after it, short enough that `status.json` shows a
/// finished reconcile (which changes no index generation) at once.
const GENERATED_TTL: std::time::Duration = std::time::Duration::from_millis(100);
/// Generated files kept at once.
const GENERATED_KEPT: usize = 16;

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
        // Nested tags nest: `by-tag/area/sub/`.
        ViewDir::Tag(tag) => 2 + tag.matches('/').count(),
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

/// A name that fits in a directory entry: `prefix`, `stem`, `suffix` and
/// `ext` joined, the stem cut (at a character boundary) when the whole
/// would pass 255 bytes.
fn bounded(prefix: &[u8], stem: &[u8], suffix: &[u8], ext: &[u8]) -> OsString {
    let (ext, room_for_ext) = if ext.len() <= 32 {
        (ext, ext.len())
    } else {
        (&b""[..], 0)
    };
    let room = NAME_MAX.saturating_sub(prefix.len() + suffix.len() + room_for_ext);
    let mut cut = stem.len().min(room);
    // Back off to a UTF-8 boundary (names are bytes, but most are text).
    while cut > 0 && cut < stem.len() && (stem[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    let mut out = Vec::with_capacity(NAME_MAX);
    out.extend_from_slice(prefix);
    out.extend_from_slice(&stem[..cut]);
    out.extend_from_slice(suffix);
    out.extend_from_slice(ext);
    out.truncate(NAME_MAX);
    OsString::from_vec(out)
}

/// A file name split before its extension (`a.md` → `a`, `.md`).
fn split_ext(name: &[u8]) -> (&[u8], &[u8]) {
    match name.iter().rposition(|b| *b == b'.') {
        Some(i) if i > 0 => name.split_at(i),
        _ => (name, &b""[..]),
    }
}

/// True for names that look like a file rather than a query or a target.
fn looks_like_a_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    FILE_ENDINGS.iter().any(|end| lower.ends_with(end))
}

/// True when a query asks for archived memories itself.
fn asks_for_archived(query: &str) -> bool {
    query.to_lowercase().contains("phase:")
}

/// Splits `limit:N` out of a query; the rest is the query text.
pub fn split_limit(query: &str) -> (String, usize) {
    let (text, limit) = crate::index::take_limit(query);
    (text, limit.unwrap_or(DEFAULT_SEARCH_LIMIT))
}

/// Names each path by its file name, adding ` (2)`, ` (3)` before the
/// extension when two memories in different folders share a name.
fn unique_names(paths: &[StorePath]) -> Vec<OsString> {
    let mut seen = std::collections::HashMap::<OsString, usize>::new();
    paths
        .iter()
        .map(|p| {
            let name = p.file_name().map(OsStr::as_bytes).unwrap_or(b"memory");
            let (stem, ext) = split_ext(name);
            let base = bounded(b"", stem, b"", ext);
            let count = seen.entry(base.clone()).or_insert(0);
            *count += 1;
            if *count == 1 {
                return base;
            }
            bounded(b"", stem, format!(" ({count})").as_bytes(), ext)
        })
        .collect()
}

/// `paths` without those in `left_out`.
fn without(
    mut paths: Vec<StorePath>,
    left_out: &std::collections::HashSet<StorePath>,
) -> Vec<StorePath> {
    if !left_out.is_empty() {
        paths.retain(|p| !left_out.contains(p));
    }
    paths
}

/// Prefixes names with a zero-padded rank so `ls` shows them in order.
fn ranked_names(paths: &[StorePath]) -> Vec<OsString> {
    let width = paths.len().max(1).to_string().len().max(2);
    paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let prefix = format!("{:0width$}-", i + 1);
            let name = p.file_name().map(OsStr::as_bytes).unwrap_or(b"memory");
            let (stem, ext) = split_ext(name);
            bounded(prefix.as_bytes(), stem, b"", ext)
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
            root_guide: false,
            recent_files: Arc::default(),
            hidden: Arc::default(),
        }
    }

    /// The same views without the memories at `hidden`: they are left out
    /// before ranks are numbered, so no gap and no count gives them away.
    pub fn hiding(&self, hidden: std::collections::HashSet<StorePath>) -> Views {
        Views {
            hidden: Arc::new(hidden),
            // Never share generated files with the views that see all.
            recent_files: Arc::default(),
            ..self.clone()
        }
    }

    /// Shows (or not, the default) the guide, [`ROOT_GUIDE_NAME`], at the
    /// root. Set it before the views are shared: clones made earlier keep
    /// the old value.
    pub fn with_root_guide(mut self, shown: bool) -> Views {
        self.root_guide = shown;
        self
    }

    /// Whether the root shows the guide.
    pub fn root_guide(&self) -> bool {
        self.root_guide
    }

    /// The generated file a name at the root stands for, if any.
    pub fn root_file(&self, name: &OsStr) -> Option<ViewFile> {
        (self.root_guide && name.as_bytes() == ROOT_GUIDE_NAME.as_bytes())
            .then_some(ViewFile::AgentGuide)
    }

    /// The memories views leave out: the hidden ones, and the archived
    /// ones unless `with_archived`.
    fn left_out(&self, with_archived: bool) -> std::collections::HashSet<StorePath> {
        let mut out: std::collections::HashSet<StorePath> = (*self.hidden).clone();
        if !with_archived {
            out.extend(self.index.by_phase(crate::memory::Phase::Archived.as_str()));
        }
        out
    }

    /// The types some memory shown here has.
    fn types(&self) -> Vec<String> {
        self.shown_values(self.index.types(), |t| self.index.by_type(t))
    }

    /// The `values` (tags, types) that some memory not hidden has.
    fn shown_values(
        &self,
        mut values: Vec<String>,
        holders: impl Fn(&str) -> Vec<StorePath>,
    ) -> Vec<String> {
        if !self.hidden.is_empty() {
            values.retain(|v| holders(v).iter().any(|p| !self.hidden.contains(p)));
        }
        values
    }

    /// `paths` without archived or hidden memories.
    fn unarchived(&self, paths: Vec<StorePath>) -> Vec<StorePath> {
        without(paths, &self.left_out(false))
    }

    /// The paths a search folder lists: ranked, archived memories left out
    /// unless the query asks for a phase.
    fn search_listing(&self, text: &str, limit: usize) -> Vec<StorePath> {
        let archived = self.left_out(asks_for_archived(text));
        let wanted = limit.saturating_add(archived.len());
        let mut paths = match self.index.search_paths(text, wanted) {
            Ok(paths) => paths,
            Err(e) => {
                tracing::warn!("search {text:?}: {e}");
                Vec::new()
            }
        };
        paths.retain(|p| !archived.contains(p));
        paths.truncate(limit);
        paths
    }

    /// Tags as folders: `area/sub` is `sub` inside `area`. The direct
    /// children of `parent` (`None`: the top level), with their full tags.
    fn tag_children(&self, parent: Option<&str>) -> Vec<(String, String)> {
        let mut out = std::collections::BTreeMap::new();
        for tag in self.shown_values(self.index.tags(), |t| self.index.by_tag(t)) {
            let rest = match parent {
                None => Some(tag.as_str()),
                Some(p) => tag.strip_prefix(p).and_then(|r| r.strip_prefix('/')),
            };
            let Some(rest) = rest else { continue };
            let Some(first) = rest.split('/').find(|c| !c.is_empty()) else {
                continue;
            };
            let full = match parent {
                None => first.to_string(),
                Some(p) => format!("{p}/{first}"),
            };
            out.entry(first.to_string()).or_insert(full);
        }
        out.into_iter().collect()
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
                let paths = self.search_listing(&text, limit);
                let mut out = links(dir, ranked_names(&paths), &paths);
                out.push(ViewEntry::File(
                    SUMMARY_NAME.into(),
                    ViewFile::SearchSummary(query.clone()),
                ));
                out
            }
            ViewDir::Backlinks(target) => {
                let paths = without(
                    self.index.backlinks_seen(target, &self.hidden),
                    &self.hidden,
                );
                links(dir, unique_names(&paths), &paths)
            }
            ViewDir::Category(c) => {
                let paths = self.unarchived(self.index.by_category(c));
                links(dir, unique_names(&paths), &paths)
            }
            ViewDir::Tag(t) => {
                let paths = self.unarchived(self.index.by_tag(t));
                let mut out: Vec<ViewEntry> = self
                    .tag_children(Some(t))
                    .into_iter()
                    .map(|(name, full)| {
                        ViewEntry::Dir(bounded(b"", name.as_bytes(), b"", b""), ViewDir::Tag(full))
                    })
                    .collect();
                let taken: std::collections::HashSet<OsString> =
                    out.iter().map(|e| e.name().to_os_string()).collect();
                out.extend(
                    links(dir, unique_names(&paths), &paths)
                        .into_iter()
                        .filter(|e| !taken.contains(e.name())),
                );
                out
            }
            ViewDir::Type(t) => {
                let paths = self.unarchived(self.index.by_type(t));
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
                .map(|v| ViewEntry::Dir(bounded(b"", v.as_bytes(), b"", b""), make(v)))
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
            ViewRoot::ByTag => self
                .tag_children(None)
                .into_iter()
                .map(|(name, full)| {
                    ViewEntry::Dir(bounded(b"", name.as_bytes(), b"", b""), ViewDir::Tag(full))
                })
                .collect(),
            ViewRoot::ByType => dirs(self.types(), ViewDir::Type),
            ViewRoot::Recent => {
                let archived = self.left_out(false);
                let mut paths: Vec<StorePath> = self
                    .index
                    .recent(RECENT_LIMIT.saturating_add(archived.len()))
                    .into_iter()
                    .map(|(p, _)| p)
                    .filter(|p| !archived.contains(p))
                    .collect();
                paths.truncate(RECENT_LIMIT);
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
    /// nothing resolve any name here (a query, a target, an id), except
    /// names that look like files; tags and types resolve only when some
    /// memory has them.
    pub fn lookup(&self, dir: &ViewDir, name: &OsStr) -> Option<ViewEntry> {
        match dir {
            ViewDir::Root(ViewRoot::Search) if name != GUIDE_NAME => {
                let q = name_str(name).filter(|q| !looks_like_a_file(q))?;
                Some(ViewEntry::Dir(name.into(), ViewDir::Search(q)))
            }
            ViewDir::Root(ViewRoot::Backlinks) if name != GUIDE_NAME => {
                let t = name_str(name).filter(|t| !looks_like_a_file(t))?;
                Some(ViewEntry::Dir(name.into(), ViewDir::Backlinks(t)))
            }
            ViewDir::Root(ViewRoot::ById) if name != GUIDE_NAME => {
                let id = name_str(name)?;
                let id = id.strip_suffix(".md").unwrap_or(&id);
                let path = self.index.by_id(id).filter(|p| !self.hidden.contains(p))?;
                Some(ViewEntry::Link(name.into(), link_target(1, &path)))
            }
            ViewDir::Root(ViewRoot::ByType) => {
                let t = name_str(name)?.to_lowercase();
                if !self.types().contains(&t) {
                    return None;
                }
                Some(ViewEntry::Dir(name.into(), ViewDir::Type(t)))
            }
            _ => self.list(dir).into_iter().find(|e| e.name() == name),
        }
    }

    /// The size `stat` reports for a generated file: the length of what a
    /// read returns now.
    pub fn size_hint(&self, file: &ViewFile) -> u64 {
        self.content(file).len() as u64
    }

    /// The content of a generated file, built at most once a second for
    /// one index generation (a `stat` and the read after it agree).
    pub fn content(&self, file: &ViewFile) -> Arc<Vec<u8>> {
        let generation = self.index.generation();
        let now = std::time::Instant::now();
        {
            let mut kept = self.recent_files.lock();
            kept.retain(|g| now.duration_since(g.made) < GENERATED_TTL);
            if let Some(g) = kept
                .iter()
                .find(|g| g.file == *file && g.generation == generation)
            {
                return Arc::clone(&g.content);
            }
        }
        let content = Arc::new(self.read(file));
        let mut kept = self.recent_files.lock();
        if kept.len() >= GENERATED_KEPT {
            kept.remove(0);
        }
        kept.push(Generated {
            file: file.clone(),
            generation,
            made: now,
            content: Arc::clone(&content),
        });
        content
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
        let archived = self.left_out(asks_for_archived(&text));
        let found = self
            .index
            .search(&text, limit.saturating_add(archived.len()))
            .map(|mut hits| {
                hits.retain(|h| !archived.contains(&h.path));
                hits.truncate(limit);
                hits
            });
        match found {
            Ok(hits) if hits.is_empty() => {
                out.push_str(&crate::index::nothing_found(&text));
                out.push('\n');
            }
            Ok(hits) => {
                let paths: Vec<StorePath> = hits.iter().map(|h| h.path.clone()).collect();
                for ((hit, name), rank) in hits.iter().zip(ranked_names(&paths)).zip(1..) {
                    let written = hit
                        .day
                        .as_deref()
                        .map(|day| format!(", written {day}"))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "{rank}. **{}** ({}) score {:.2}{written}: `{}`\n   {}\n",
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
        ViewRoot::Search => "# search/\n\nOpen `search/<query>/` to search every memory. Results are symlinks named\n`01-<file>`, `02-<file>`, ... in rank order; `summary.md` lists each hit's\nrank, path, title, score and a snippet.\n\nAsk in plain words or as a question: every word is optional and ranks,\ncommon words are left out and other forms of a word match. Also:\n\"exact phrases\", `+required`, `-excluded`, `zeph*`, and filters that\nrestrict without ranking: `tag:ui`, `category:preferences`,\n`type:decision AND status:open`, `created:>2026-01-01`. Add `limit:200`\nfor more than 50 results. Archived memories are left out unless the\nquery names `phase:archived`. A query that is not valid syntax falls\nback to searching its words.\n".into(),
        ViewRoot::Backlinks => "# backlinks/\n\nOpen `backlinks/<target>/` to list the memories that link to a memory.\nThe target may be its id, title, file name (without .md) or an alias,\nin any case.\n".into(),
        ViewRoot::ById => "# by-id/\n\n`by-id/<id>.md` is a symlink to wherever the memory with that `id:` lives\nnow; it follows moves. A note without `id:` has one all the same (search\nresults show it), kept by mnemofs until the file is next written.\n".into(),
        other => format!("# {}/\n", other.name()),
    }
}

/// The guide at the root ([`ROOT_GUIDE_NAME`]) and at `.mnemofs/GUIDE.md`:
/// what this folder is, how to search it, where the brief is, the views,
/// and how memories are written. Static text, so a backup or a `git add`
/// of the mount records the same bytes every time. Front ends that are not
/// the mount show it too.
pub const AGENT_GUIDE: &str = r#"# mnemofs: this folder is your long-term memory

This guide is generated by mnemofs: on a mount it is `MNEMOFS.md` at the
root, read-only and not stored. Everything else here is a plain file you
own.

Every memory is a markdown file, with optional YAML frontmatter. Read,
write, edit, rename and delete them with your usual tools. mnemofs
indexes each change within a second, fills in missing frontmatter, files
what lands in `inbox/`, links memories and keeps earlier versions of what
you delete or overwrite (`mnemofs history`, `mnemofs restore`,
`mnemofs trash`).

## Start here

- `.mnemofs/brief.md`: the session brief (active tasks, open decisions,
  where the last sessions left off, reminders due soon). Read it first.
- Search before you write, so you update a memory instead of repeating it.

## Searching

Open a folder named after the query under `search/`; it lists the hits
as links `01-<file>`, `02-<file>`, ... in rank order, and `summary.md`
there gives each hit's path, title, score and a snippet.

Ask in plain words or as a question. Every word is optional and ranks:
a memory with more of the words, rarer ones, or them in its title comes
first. Common words (what, did, the, ...) are left out, and other forms
of a word match too ("prefer" finds "prefers" and "preference"), the
form as written ranking higher. A question that names a day, a month
or a year ranks the memories written then first, and `summary.md` says
the day each hit was written.

    search/what does the user prefer for formatting?/   a question
    search/what did we decide last week?/  what was written then first
    search/dark mode/              words, each optional
    search/"dark mode"/            an exact phrase
    search/+freeze deploy/         `+word` is required
    search/editor -vim/            `-word` (or `NOT word`) is excluded
    search/zeph*/                  a prefix
    search/tag:ui/                 a filter: tag, category, type, status,
                                   scope, source, phase, id
    search/type:decision database/ filters restrict, words rank: the
                                   decisions, about databases first
    search/type:decision AND status:open/
    search/created:>2026-01-01/    dates: created, updated (>, <, >=, <=)
    search/updated:>7d/            days from today: today, yesterday,
                                   7d, 2w, 3m, 1y (that long ago)
    search/title:atlas/            a word in one field: title, alias, body
    search/dark mode limit:200/    more than the first 50 hits

Archived memories are left out unless the query names `phase:archived`.
A query that is not valid syntax searches its words instead. When
nothing matches, `summary.md` says what was searched for.

## Views

The view folders are not listed here, but every path below opens. They
are read-only (a write fails with "Read-only file system"); their
entries are links, so editing a result edits the memory itself.

- `search/<query>/`           ranked results and `summary.md`
- `backlinks/<id|title|name>/`  memories that link to a memory
- `by-category/<category>/`   one folder per category
- `by-tag/<tag>/`             nested tags nest: `by-tag/area/sub/`
- `by-type/<type>/`           memory, session, decision, task, ...
- `by-id/<id>.md`             the memory with that `id`, wherever it lives
- `recent/`                   the latest changed memories, newest first
- `.mnemofs/`                 `brief.md`, `status.json` (the index),
                              `lint` (problems found in memories),
                              `pending.md` (reminders that are due)

## Writing memories

- One subject per file, with a name that says what it is:
  `people/alice.md`, `projects/atlas/decisions.md`.
- Not sure where it goes? Write it to `inbox/`; it is filed for you.
- Frontmatter is optional; missing `id`, `created_at`, `phase` and
  `category` are added when a file is written (`mnemofs normalize --all`
  adds them everywhere; until then a note's id is in search results and
  `by-id/`). Fields mnemofs reads:

      ---
      title: Dark mode everywhere
      type: memory          # memory, session, decision, task, ...
      category: preferences
      tags: [ui, editor]
      status: open          # for tasks and decisions
      source: conversation
      expires_at: 2026-12-31
      aliases: [theme]
      ---

- Categories: soul, character, people, project, date, knowledge,
  feedback, preferences, decisions, lessons, habits, skills, inbox,
  reminders.
- Observations, one fact per line: `- [preference] prefers dark mode #ui`
- Relations and links: `- relates_to [[Other memory]]`, `[[Title]]`,
  `[[file-name]]`, `[[file-name|shown text]]`, `[[file-name#heading]]`.
- Tags: `tags:` in the frontmatter or `#tag` in the text; `#area/sub`
  nests.
- Nothing is deleted behind your back: expired, decayed and merged
  memories move to `archive/` with `phase: archived` and a note of why.
"#;

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
    fn long_names_are_cut_before_the_extension_at_a_character_boundary() {
        let stem = "é".repeat(126); // 252 bytes
        let name = bounded(b"01-", stem.as_bytes(), b"", b".md");
        let bytes = name.as_bytes();
        assert!(bytes.len() <= 255, "{}", bytes.len());
        assert!(bytes.starts_with(b"01-") && bytes.ends_with(b".md"));
        assert!(std::str::from_utf8(bytes).is_ok(), "cut inside a character");
        let short = bounded(b"", b"note", b" (2)", b".md");
        assert_eq!(short, OsString::from("note (2).md"));
        let paths: Vec<StorePath> = ["a", "b"]
            .iter()
            .map(|d| StorePath::new(format!("{d}/{stem}.md")).unwrap())
            .collect();
        let names = unique_names(&paths);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| n.len() <= 255));
    }

    #[test]
    fn names_that_look_like_files_are_not_queries() {
        assert!(looks_like_a_file("x.md") && looks_like_a_file("Notes.TXT"));
        assert!(!looks_like_a_file("dark mode") && !looks_like_a_file("node.js"));
        assert!(asks_for_archived("kiwi phase:archived") && !asks_for_archived("kiwi"));
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
