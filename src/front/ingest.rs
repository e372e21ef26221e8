//! `mnemofs ingest`: notes from other tools become memories.
//!
//! A front end like the others, except that what it reads lies outside
//! the store: each source's files are found and read here, turned into
//! [`Incoming`] memories, and put through the operations layer in
//! batches, which makes a rerun add nothing (see `ops::import`). Sources,
//! as memory-cli reads them:
//! - `claude`: `~/.claude/CLAUDE.md`, the `CLAUDE.md` (and `.claude/CLAUDE.md`,
//!   `CLAUDE.local.md`) of every project `~/.claude.json` knows, and Claude
//!   Code's auto memory, `~/.claude/projects/*/memory/**/*.md`. With
//!   `--path`, that folder is read as `~/.claude` is, plus every
//!   `CLAUDE.md` below it;
//! - `logseq` (`~/logseq`): `pages/` and `journals/`, less the folders
//!   `logseq/config.edn` hides; a page's leading `prop:: value` lines
//!   become frontmatter (`tags::`, `alias::`, `title::` by their own
//!   names), and template pages are skipped. `assets/` and `draws/` come
//!   along as attachments;
//! - `obsidian` (no default: `--path VAULT`): every note with its
//!   frontmatter, tags and aliases, less the templates the vault's
//!   settings name; every other file (images, PDFs: what notes embed)
//!   comes along as an attachment. `.obsidian/`, `.trash/` and other
//!   dot-folders are skipped;
//! - `car-agent` (`~/.car-agent`: every `.md`) and `fingersaver`
//!   (`~/.fingersaver/chat.md`): plain markdown, cut at 5,000 characters.
//!
//! Each note keeps its own frontmatter as written (key order, flow lists,
//! comments), and gains `title`, `source`, `source_path` and `created_at`
//! after it (see `vault`: the note's own date, a date in its name, else
//! the file's time); a `source` or `source_path` the note gives itself is
//! kept. A note whose fields ingest had to change (Logseq properties, an
//! alias added) is written from its fields instead. A note of properties
//! alone, with no body, is a note. A note whose frontmatter cannot be
//! read comes in byte for byte, with the id the store gives its path. Nothing volatile is written: no
//! `content_hash`, no counters (those live in the state dir). A vault
//! note's id is its own (frontmatter, or a Logseq page's `id::`, which
//! block references name), else one derived from where it was read, so two notes
//! with the same text stay two; any other note's is derived from its
//! content, so the same content ingested twice, from anywhere, is one
//! memory. A rerun therefore adds nothing and changes nothing.
//! `[[wikilinks]]` are kept as written, and every note's title is its
//! name in the source (a Logseq page name, an Obsidian file name), so the
//! links resolve, and backlinks work, once the notes are in.
//!
//! Where notes go ([`Layout`]): Obsidian and Logseq keep their folders, at
//! `<source>/<path in the source>`, so relative links and embeds resolve;
//! the other sources go to `inbox/<title>.md` for the organizer to file,
//! as memory-cli does. `--into-inbox` and `--keep-folders` choose either
//! for any source. Attachments always keep their folders. An ingested
//! note carries `source_path`, and the organizer never expires or merges
//! such a note on its own (see `tasks`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::batch::{Batcher, Summary};
use super::vault::{self, Templates};
use crate::ops::{self, Incoming, Placed, Request, Response, Verbatim};

/// The most of a car-agent or fingersaver file kept, in characters.
const CUT_AT: usize = 5_000;
/// Notes larger than this are not read.
const MAX_FILE: u64 = 8 << 20;
/// Attachments larger than this are not read.
const MAX_ATTACHMENT: u64 = 64 << 20;

/// Where notes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Claude Code's `CLAUDE.md` files and auto memory.
    Claude,
    /// A Logseq graph.
    Logseq,
    /// An Obsidian vault.
    Obsidian,
    /// car-agent's markdown.
    CarAgent,
    /// FingerSaver's chat log.
    Fingersaver,
}

impl Source {
    /// Every source, for `--source all`.
    pub const ALL: [Source; 5] = [
        Source::Claude,
        Source::Logseq,
        Source::Obsidian,
        Source::CarAgent,
        Source::Fingersaver,
    ];

    /// The name, as `--source` and `source:` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Claude => "claude",
            Source::Logseq => "logseq",
            Source::Obsidian => "obsidian",
            Source::CarAgent => "car-agent",
            Source::Fingersaver => "fingersaver",
        }
    }

    /// Whether the source is a vault of notes a person keeps in folders.
    fn is_vault(self) -> bool {
        matches!(self, Source::Logseq | Source::Obsidian)
    }

    /// Where the source lives by default, if it has a usual place.
    fn default_root(self, home: &Path) -> Option<PathBuf> {
        Some(match self {
            Source::Claude => home.join(".claude"),
            Source::Logseq => home.join("logseq"),
            Source::Obsidian => return None,
            Source::CarAgent => home.join(".car-agent"),
            Source::Fingersaver => home.join(".fingersaver"),
        })
    }
}

/// Where ingested notes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `<source>/<path in the source>`: the source's own folders.
    Folders,
    /// `inbox/<title>.md`, for the organizer to file (memory-cli's way).
    Inbox,
}

impl Layout {
    /// The layout `--keep-folders` or `--into-inbox` asks for, if either.
    pub fn chosen(keep_folders: bool, into_inbox: bool) -> Option<Layout> {
        match (keep_folders, into_inbox) {
            (true, false) => Some(Layout::Folders),
            (false, true) => Some(Layout::Inbox),
            _ => None,
        }
    }

    /// The layout a source gets unless told: vaults keep their folders.
    fn of(source: Source) -> Layout {
        if source.is_vault() {
            Layout::Folders
        } else {
            Layout::Inbox
        }
    }
}

/// What to ingest, and how.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The sources.
    pub sources: Vec<Source>,
    /// The folder (or file) to read instead of the source's usual place.
    pub path: Option<PathBuf>,
    /// Where notes go; `None`: each source's own way ([`Layout::of`]).
    pub layout: Option<Layout>,
    /// The user's home, where the usual places are.
    pub home: PathBuf,
    /// Folders never read, wherever they sit in a source: the store
    /// itself, its state dir and its mountpoint. A store kept inside the
    /// vault it ingests would otherwise take itself in again, one level
    /// deeper at each run.
    pub skip: Vec<PathBuf>,
    /// Whether a note already in the store whose text differs from the
    /// source's takes the source's (the store's earlier text is kept in
    /// the history); else the store's copy stays, and is named.
    pub update: bool,
}

/// One file found in a source.
struct Found {
    file: PathBuf,
    /// Its path in the source, `/`-separated (where its folders put it).
    rel: String,
}

/// What one source holds.
#[derive(Default)]
struct Holdings {
    notes: Vec<Found>,
    attachments: Vec<Found>,
    templates: Templates,
}

/// Ingests what `plan` names; `progress` is told files done and found.
/// A source named with `--path` that cannot be read is an error; a usual
/// place that does not exist is skipped and said so.
pub fn ingest(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    plan: &Plan,
    progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<Summary> {
    let mut batcher = Batcher::new(call);
    if plan.update {
        batcher = batcher.updating();
    }
    let mut found = Vec::new();
    for &source in &plan.sources {
        let root = match (&plan.path, source.default_root(&plan.home)) {
            (Some(path), _) => {
                std::fs::metadata(path).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot read the {} source {}: {e}",
                        source.name(),
                        path.display()
                    )
                })?;
                path.clone()
            }
            (None, Some(root)) => root,
            (None, None) => {
                batcher.skip(
                    source.name(),
                    "no usual place: name it with --source obsidian --path VAULT",
                );
                continue;
            }
        };
        if plan.path.is_none() && !root.exists() {
            batcher.skip(
                format!("{} ({})", source.name(), root.display()),
                "not found here",
            );
            continue;
        }
        if std::fs::canonicalize(&root)
            .is_ok_and(|real| plan.skip.iter().any(|s| real.starts_with(s)))
        {
            batcher.skip(
                root.display().to_string(),
                "inside mnemofs's own store (not read)",
            );
            continue;
        }
        let held = find(
            source,
            &root,
            &plan.home,
            plan.path.is_some(),
            &plan.skip,
            &mut batcher,
        );
        found.push((source, held));
    }
    let total: u64 = found.iter().map(|(_, held)| held.notes.len() as u64).sum();
    let mut done = 0u64;
    for (source, held) in found {
        let layout = plan.layout.unwrap_or(Layout::of(source));
        for item in &held.notes {
            batcher.read();
            let shown = item.file.display().to_string();
            match note(source, item, layout, &held.templates) {
                Ok(Note::Read(verbatim)) => batcher.push_verbatim(shown, verbatim)?,
                Ok(Note::AsWritten(verbatim)) => batcher.push_as_written(shown, verbatim)?,
                Err(why) => batcher.skip(shown, why),
            }
            if done.is_multiple_of(256) {
                progress(done, total);
            }
            done += 1;
        }
        batcher.flush()?;
        for item in &held.attachments {
            attach(call, source, item, &mut batcher);
        }
    }
    let summary = batcher.finish()?;
    progress(total, total);
    Ok(summary)
}

/// Copies one attachment to `<source>/<path in the source>`, unless the
/// same file is there.
fn attach(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    source: Source,
    item: &Found,
    batcher: &mut Batcher<'_>,
) {
    let shown = item.file.display().to_string();
    let bytes = match std::fs::metadata(&item.file) {
        Ok(meta) if meta.len() > MAX_ATTACHMENT => {
            batcher.skip(
                shown,
                format!("an attachment larger than {} MiB", MAX_ATTACHMENT >> 20),
            );
            return;
        }
        Ok(_) => std::fs::read(&item.file),
        Err(e) => Err(e),
    };
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(e) => {
            batcher.skip(shown, format!("cannot read: {e}"));
            return;
        }
    };
    let path = format!("{}/{}", source.name(), item.rel);
    match call(Request::Attach { path, bytes }) {
        Ok(Response::Imported { placed }) => match placed.into_iter().next() {
            Some(Placed::Written { .. } | Placed::Updated { .. } | Placed::Duplicate { .. }) => {
                batcher.attached()
            }
            Some(Placed::Failed { reason }) => batcher.skip(shown, reason),
            None => batcher.skip(shown, "not copied"),
        },
        Ok(_) => batcher.skip(shown, "unexpected answer to an attachment"),
        Err(e) => batcher.skip(shown, e.to_string()),
    }
}

/// The files of one source below `root`.
fn find(
    source: Source,
    root: &Path,
    home: &Path,
    named: bool,
    skip: &[PathBuf],
    batcher: &mut Batcher<'_>,
) -> Holdings {
    let mut held = Holdings::default();
    if root.is_file() {
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        held.notes.push(Found {
            file: root.to_path_buf(),
            rel: name,
        });
        return held;
    }
    let out = &mut held.notes;
    match source {
        Source::Claude => {
            walk(root, skip, root, out, batcher, &|rel, is_dir| {
                if is_dir {
                    // Transcripts, caches and the like hold no notes.
                    let top = rel.split('/').next().unwrap_or_default();
                    return !matches!(
                        top,
                        "node_modules"
                            | "shell-snapshots"
                            | "todos"
                            | "statsig"
                            | "ide"
                            | "plugins"
                    );
                }
                let name = rel.rsplit('/').next().unwrap_or_default();
                let auto_memory = rel.starts_with("projects/")
                    && rel.split('/').nth(2) == Some("memory")
                    && rel.ends_with(".md");
                auto_memory || matches!(name, "CLAUDE.md" | "CLAUDE.local.md")
            });
            if !named {
                for project in claude_projects(home) {
                    for name in ["CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md"] {
                        let file = project.join(name);
                        if file.is_file() {
                            let rel = format!(
                                "project-files{}",
                                file.to_string_lossy().replace("/.claude/", "/dot-claude/")
                            );
                            out.push(Found { file, rel });
                        }
                    }
                }
            }
        }
        Source::Logseq => {
            held.templates = Templates::logseq(root);
            let hidden = vault::logseq_hidden(root);
            let shown = |rel: &str| !hidden.iter().any(|h| vault::within(rel, h));
            for folder in ["pages", "journals"] {
                let dir = root.join(folder);
                if dir.is_dir() {
                    walk(root, skip, &dir, out, batcher, &|rel, is_dir| {
                        shown(rel) && (is_dir || rel.ends_with(".md"))
                    });
                }
            }
            if named && out.is_empty() && !root.join("pages").is_dir() {
                // A folder of pages itself.
                walk(root, skip, root, out, batcher, &|rel, is_dir| {
                    is_dir || rel.ends_with(".md")
                });
            }
            for folder in ["assets", "draws"] {
                let dir = root.join(folder);
                if dir.is_dir() {
                    walk(
                        root,
                        skip,
                        &dir,
                        &mut held.attachments,
                        batcher,
                        &|rel, _| shown(rel),
                    );
                }
            }
        }
        Source::Obsidian => {
            let templates = Templates::obsidian(root);
            let mut files = Vec::new();
            walk(root, skip, root, &mut files, batcher, &|_, _| true);
            for item in files {
                if !item.rel.ends_with(".md") {
                    held.attachments.push(item);
                } else if let Some(why) = templates.by_path(&item.rel) {
                    batcher.skip(item.file.display().to_string(), why);
                } else {
                    out.push(item);
                }
            }
            held.templates = templates;
            for (folder, why) in [
                (".obsidian", "Obsidian's settings"),
                (".trash", "Obsidian's trash"),
            ] {
                if root.join(folder).is_dir() {
                    batcher.skip(root.join(folder).display().to_string(), why);
                }
            }
        }
        Source::CarAgent => walk(root, skip, root, out, batcher, &|rel, is_dir| {
            is_dir || rel.ends_with(".md")
        }),
        Source::Fingersaver => {
            let file = root.join("chat.md");
            if file.is_file() {
                out.push(Found {
                    file,
                    rel: "chat.md".into(),
                });
            } else {
                batcher.skip(file.display().to_string(), "not found here");
            }
        }
    }
    held.notes.sort_by(|a, b| a.rel.cmp(&b.rel));
    held.attachments.sort_by(|a, b| a.rel.cmp(&b.rel));
    held
}

/// Files below `dir` that `wanted(rel, is_dir)` keeps; dot-names are never
/// entered, symlinks never followed, nor the folders of `skip`.
fn walk(
    root: &Path,
    skip: &[PathBuf],
    dir: &Path,
    out: &mut Vec<Found>,
    batcher: &mut Batcher<'_>,
    wanted: &dyn Fn(&str, bool) -> bool,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            batcher.skip(dir.display().to_string(), format!("cannot read: {e}"));
            return;
        }
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|_| name.to_string());
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if std::fs::canonicalize(&path).is_ok_and(|real| skip.contains(&real)) {
                batcher.skip(path.display().to_string(), "mnemofs's own store (not read)");
            } else if wanted(&rel, true) {
                walk(root, skip, &path, out, batcher, wanted);
            }
        } else if kind.is_file() && wanted(&rel, false) {
            out.push(Found { file: path, rel });
        } else if kind.is_symlink() && wanted(&rel, false) {
            batcher.skip(path.display().to_string(), "a symlink (not followed)");
        }
    }
}

/// The projects Claude Code knows, from `~/.claude.json`.
fn claude_projects(home: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(home.join(".claude.json")) else {
        return Vec::new();
    };
    let Ok(Value::Object(config)) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    match config.get("projects") {
        Some(Value::Object(projects)) => projects
            .keys()
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .collect(),
        _ => Vec::new(),
    }
}

/// What one file becomes.
enum Note {
    /// A memory, with the fields ingest read and added.
    Read(Verbatim),
    /// A memory byte for byte: its frontmatter cannot be read.
    AsWritten(Verbatim),
}

/// The memory one file becomes, or why it becomes none.
fn note(
    source: Source,
    item: &Found,
    layout: Layout,
    templates: &Templates,
) -> Result<Note, String> {
    let meta = std::fs::metadata(&item.file).map_err(|e| format!("cannot read: {e}"))?;
    if meta.len() > MAX_FILE {
        return Err(format!("larger than {} MiB", MAX_FILE >> 20));
    }
    let bytes = std::fs::read(&item.file).map_err(|e| format!("cannot read: {e}"))?;
    if bytes.contains(&0) {
        return Err("a binary file, not text".into());
    }
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let stem = item
        .rel
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .trim_end_matches(".md")
        .to_string();
    let parsed = crate::memory::parse(&stem, &text);
    if parsed.has_malformed_frontmatter() {
        return as_written(source, item, layout, &parsed, &text);
    }
    let mut fields: Vec<(String, Value)> = match serde_json::to_value(&parsed.frontmatter) {
        Ok(Value::Object(map)) => map.into_iter().collect(),
        _ => Vec::new(),
    };
    let own = fields.clone();
    let mut content = parsed.body(&text).to_string();
    let mut title = parsed.frontmatter.title.clone();
    let journal = source == Source::Logseq && item.rel.starts_with("journals/");
    match source {
        Source::Logseq => {
            let (properties, body) = logseq_properties(&content);
            if let Some(why) = templates.logseq_page(&properties, &body) {
                return Err(why);
            }
            content = body;
            for (key, value) in properties {
                match key.as_str() {
                    "title" => title = Some(value),
                    "tags" | "alias" => {
                        let name = if key == "tags" { "tags" } else { "aliases" };
                        let items: Vec<Value> =
                            logseq_list(&value).into_iter().map(Value::from).collect();
                        set(&mut fields, name, Value::Array(items));
                    }
                    "type" => set(&mut fields, "type", Value::from(value)),
                    _ => set(&mut fields, &key, Value::from(value)),
                }
            }
            if title.is_none() {
                title = Some(logseq_page_name(&stem, journal));
            }
            // Logseq links a journal by its page title ("Nov 20th, 2025").
            if let Some(name) = journal.then(|| logseq_journal_title(&stem)).flatten() {
                let mut aliases: Vec<Value> = fields
                    .iter()
                    .find(|(k, _)| k == "aliases")
                    .and_then(|(_, v)| v.as_array().cloned())
                    .unwrap_or_default();
                if !aliases.iter().any(|a| a.as_str() == Some(name.as_str())) {
                    aliases.push(Value::from(name));
                    set(&mut fields, "aliases", Value::Array(aliases));
                }
            }
        }
        Source::CarAgent | Source::Fingersaver => {
            if let Some((cut, _)) = content.char_indices().nth(CUT_AT) {
                content.truncate(cut);
            }
        }
        Source::Claude => {
            if title.is_none() {
                title = claude_title(&item.rel, &parsed);
            }
        }
        Source::Obsidian => {}
    }
    // A note of properties alone (frontmatter, no body) is a note; so is
    // an empty page of a vault, which links may name.
    let a_vault = matches!(source, Source::Obsidian | Source::Logseq);
    if content.trim().is_empty() && fields.is_empty() && !a_vault {
        return Err("empty".into());
    }
    // Links name notes by their names in the source: keep them findable.
    let title = title.unwrap_or_else(|| match source {
        Source::Obsidian | Source::Logseq => stem.clone(),
        _ => parsed.title.clone(),
    });
    if title != stem && source == Source::Obsidian && layout == Layout::Inbox {
        let mut aliases = parsed.frontmatter.aliases.clone();
        if !aliases.iter().any(|a| a.eq_ignore_ascii_case(&stem)) {
            aliases.push(stem.clone());
            set(
                &mut fields,
                "aliases",
                Value::Array(aliases.into_iter().map(Value::from).collect()),
            );
        }
    }
    let source_path = item.file.display().to_string();
    // The note's own id (frontmatter, or a Logseq page's `id::`, which
    // `((block refs))` name) is kept.
    let own_id = fields
        .iter()
        .find(|(k, _)| k == "id")
        .and_then(|(_, v)| v.as_str())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let id = own_id.unwrap_or_else(|| {
        if source.is_vault() {
            super::jsonl::content_id(&format!("{}:{source_path}", source.name()))
        } else {
            super::jsonl::content_id(&ops::content_sha256(&content))
        }
    });
    set(&mut fields, "title", Value::from(title.clone()));
    // What the note says of its own origin stays; ingest's goes where
    // the note says nothing.
    set_missing(&mut fields, "source", Value::from(source.name()));
    set_missing(&mut fields, "source_path", Value::from(source_path));
    let modified = meta
        .modified()
        .ok()
        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|age| age.as_secs() as i64);
    let named_day = templates.day_in_name(&stem);
    if let Some(created) = vault::created_at(&fields, &stem, named_day, modified) {
        set(&mut fields, "created_at", Value::from(created));
    }
    let path = match layout {
        Layout::Folders => format!("{}/{}", source.name(), item.rel),
        Layout::Inbox => {
            set(&mut fields, "phase", Value::from("inbox"));
            let slug = ops::slug(&title);
            format!("inbox/{}.md", if slug.is_empty() { "note" } else { &slug })
        }
    };
    let frontmatter_text = kept_frontmatter(&text, parsed.body(&text), &own, &fields);
    Ok(Note::Read(Verbatim {
        memory: Incoming {
            id,
            path,
            fields,
            content,
        },
        frontmatter_text,
        copy: false,
        modified,
    }))
}

/// A note whose frontmatter cannot be read, as a memory byte for byte:
/// its block and body as they are, at the path the layout gives it, with
/// the id the store gives a file there (nothing can be added to a block
/// that does not parse), so a rerun finds it again. The store indexes it
/// and lints it, and the organizer leaves it alone until it is fixed.
fn as_written(
    source: Source,
    item: &Found,
    layout: Layout,
    parsed: &crate::memory::Memory,
    text: &str,
) -> Result<Note, String> {
    let content = parsed.body(text).to_string();
    let path = match layout {
        Layout::Folders => format!("{}/{}", source.name(), item.rel),
        Layout::Inbox => {
            let slug = ops::slug(&parsed.title);
            format!("inbox/{}.md", if slug.is_empty() { "note" } else { &slug })
        }
    };
    let id = ops::path_id(&path).ok_or_else(|| format!("no place for it in a store: {path}"))?;
    Ok(Note::AsWritten(Verbatim {
        frontmatter_text: Some(text[..text.len() - content.len()].to_string()),
        copy: false,
        modified: None,
        memory: Incoming {
            id,
            path,
            fields: Vec::new(),
            content,
        },
    }))
}

/// The note's own frontmatter block as the user wrote it (key order,
/// flow lists, comments, quoting), with the fields ingest adds after its
/// last key: `None` when ingest changed a field the note had, or adds
/// one that is not a plain string (the note is then written from its
/// fields). The import checks again that the block says what the fields
/// say before it writes the block as it is.
fn kept_frontmatter(
    text: &str,
    body: &str,
    own: &[(String, Value)],
    fields: &[(String, Value)],
) -> Option<String> {
    let head = text.strip_suffix(body)?;
    let mut added = Vec::new();
    for (key, value) in fields {
        match own.iter().find(|(k, _)| k == key) {
            Some((_, was)) if was == value => {}
            Some(_) => return None,
            None => added.push((key.as_str(), value.as_str()?.to_string())),
        }
    }
    if own.iter().any(|(k, _)| !fields.iter().any(|(f, _)| f == k)) {
        return None;
    }
    match crate::memory::add_missing_fields(head, &added) {
        Ok(Some(with)) => Some(with),
        Ok(None) => Some(head.to_string()),
        Err(_) => None,
    }
}

/// Sets `key` in `fields`, replacing what was there.
fn set(fields: &mut Vec<(String, Value)>, key: &str, value: Value) {
    match fields.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value,
        None => fields.push((key.to_string(), value)),
    }
}

/// Sets `key` in `fields` unless it holds a value there already.
fn set_missing(fields: &mut Vec<(String, Value)>, key: &str, value: Value) {
    let present = fields
        .iter()
        .any(|(k, v)| k == key && v.as_str().is_none_or(|s| !s.trim().is_empty()) && !v.is_null());
    if !present {
        set(fields, key, value);
    }
}

/// A Logseq page's leading `key:: value` lines, and the body without them.
fn logseq_properties(body: &str) -> (Vec<(String, String)>, String) {
    let mut properties = Vec::new();
    let mut rest = body;
    while let Some(line) = rest.split_inclusive('\n').next() {
        let Some((key, value)) = line.trim_end().split_once(":: ") else {
            break;
        };
        let key = key.trim().to_lowercase();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        {
            break;
        }
        properties.push((key, value.trim().to_string()));
        rest = &rest[line.len()..];
    }
    let rest = rest.strip_prefix('\n').unwrap_or(rest);
    (properties, rest.to_string())
}

/// `a, [[b c]], #d` as a list: `a`, `b c`, `d`.
fn logseq_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|item| {
            item.trim()
                .trim_start_matches('#')
                .trim_start_matches("[[")
                .trim_end_matches("]]")
                .trim()
                .to_string()
        })
        .filter(|item| !item.is_empty())
        .collect()
}

/// A Logseq page's name from its file stem: `___` and `%2F` are its
/// namespace separators, other `%XX` escapes are decoded; a journal
/// `2024_01_15` is `2024-01-15`.
fn logseq_page_name(stem: &str, journal: bool) -> String {
    if journal {
        return stem.replace('_', "-");
    }
    let stem = stem.replace("___", "/");
    let bytes = stem.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or(stem)
}

/// A journal's page title in Logseq's default format (`MMM do, yyyy`:
/// "Nov 20th, 2025"), from its file name (`2025_11_20`).
fn logseq_journal_title(stem: &str) -> Option<String> {
    let mut parts = stem.split(['_', '-']);
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 {
        return None;
    }
    let date = jiff::civil::Date::new(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?).ok()?;
    let day = date.day();
    let suffix = match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    Some(format!(
        "{} {day}{suffix}, {}",
        date.strftime("%b"),
        date.year()
    ))
}

/// A title for a Claude file that has none: `CLAUDE.md` files are named
/// after their project, auto-memory files by their `name:`.
fn claude_title(rel: &str, parsed: &crate::memory::Memory) -> Option<String> {
    if let Some(name) = parsed
        .frontmatter
        .extra
        .get("name")
        .and_then(|v| v.as_str())
    {
        return Some(name.to_string());
    }
    let file = rel.rsplit('/').next().unwrap_or_default();
    if !file.starts_with("CLAUDE") {
        return None;
    }
    let parts: Vec<&str> = rel.split('/').collect();
    let project = parts
        .iter()
        .rev()
        .skip(1)
        .find(|p| !matches!(**p, "dot-claude" | ".claude" | "project-files"))
        .copied();
    Some(match project {
        Some(project) => format!("{file} of {project}"),
        None => format!("{file} (global)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logseq_page_properties_become_fields_and_leave_the_body() {
        let (props, body) = logseq_properties(
            "title:: My Page\ntags:: a, [[b c]]\n\n- first block\n- x:: not a page property\n",
        );
        assert_eq!(
            props,
            vec![
                ("title".to_string(), "My Page".to_string()),
                ("tags".to_string(), "a, [[b c]]".to_string())
            ]
        );
        assert_eq!(body, "- first block\n- x:: not a page property\n");
        assert_eq!(logseq_list("a, [[b c]], #d"), vec!["a", "b c", "d"]);
    }

    #[test]
    fn a_journal_is_titled_in_logseq_as_its_links_name_it() {
        for (stem, title) in [
            ("2025_11_20", "Nov 20th, 2025"),
            ("2025_01_01", "Jan 1st, 2025"),
            ("2025_03_02", "Mar 2nd, 2025"),
            ("2025_03_23", "Mar 23rd, 2025"),
            ("2025_03_11", "Mar 11th, 2025"),
            ("2025-12-31", "Dec 31st, 2025"),
        ] {
            assert_eq!(logseq_journal_title(stem).as_deref(), Some(title), "{stem}");
        }
        for stem in ["2025_02_30", "notes", "25_11_20", "2025_11_20_x"] {
            assert_eq!(logseq_journal_title(stem), None, "{stem}");
        }
    }

    #[test]
    fn logseq_names_decode_namespaces_and_journals() {
        assert_eq!(logseq_page_name("project___alpha", false), "project/alpha");
        assert_eq!(logseq_page_name("a%2Fb", false), "a/b");
        assert_eq!(logseq_page_name("2024_01_15", true), "2024-01-15");
        assert_eq!(logseq_page_name("100%", false), "100%");
    }
}
