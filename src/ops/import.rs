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
//! A memory coming back from mnemofs's own export is [`Verbatim`]: it
//! carries the frontmatter block its file had, and its file is written
//! back byte for byte (key order, comments, flow lists, quoting, CRLF),
//! as long as that block still says what the described fields say. A
//! block without an `id` is written as it was when the store gives the
//! file at its path that same id anyway (ids of untouched notes derive
//! from their path); otherwise the id is added to it, and nothing else.
//!
//! Each memory is written whole and atomically by the writer (a temp file
//! renamed into place), so an interrupted run leaves every memory either
//! complete or absent. A batch is planned by a few threads at once, then
//! created in one go: on the store directly that is two flushes of the
//! filesystem for the whole batch rather than two fsyncs a memory (see
//! `Store::create_many_atomic`); through a mount, file by file.

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

/// A memory to put back byte for byte: what an [`Incoming`] says, and the
/// frontmatter block its file had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verbatim {
    /// The memory, as described.
    pub memory: Incoming,
    /// Its frontmatter block exactly as written, `---` lines and line
    /// ends included (empty when the file had none): the file is this,
    /// then the content. `None`: written from the fields.
    pub frontmatter_text: Option<String>,
    /// Another memory of the same run has this id at another path (a
    /// copy made outside mnemofs): this one is placed by its path alone,
    /// a duplicate only of a file there with its id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
    /// When its source file was last changed (unix seconds), if it has
    /// one: an update never replaces a memory changed in the store since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<i64>,
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
    /// Already in the store, at `path`, whose text there was replaced
    /// by the one described (an update; the earlier text is kept in the
    /// history).
    Updated {
        /// Where.
        path: String,
    },
    /// Already in the store, at `path`.
    Duplicate {
        /// Where the memory with that id is.
        path: String,
        /// Whether its text there differs from the one described (one
        /// side changed since it came in): the store's stays.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        differs: bool,
    },
    /// Not written, and why.
    Failed {
        /// One sentence.
        reason: String,
    },
}

/// What putting one memory comes to, before anything is written.
enum Planned {
    /// Nothing to write: a duplicate.
    Placed(Placed),
    /// Create this file with this text.
    Create(StorePath, String),
    /// Replace the text of this file, which holds these bytes (an update).
    Replace(StorePath, Vec<u8>, String),
}

impl Operations {
    /// Puts each memory of `batch` into the store unless it is there
    /// already; answers in the batch's order.
    ///
    /// Each memory is planned (duplicate, or the free name it goes to) by
    /// a few threads at once; then the batch is created in one go, which
    /// a writer on the store makes durable with two flushes for the whole
    /// batch. A memory whose name another took meanwhile (two in the batch
    /// wanting one name, say) is put again on its own, which plans anew.
    pub fn import(&self, batch: &[Incoming]) -> Vec<Placed> {
        let batch: Vec<Wanted<'_>> = batch
            .iter()
            .map(|memory| (memory, None, false, None))
            .collect();
        self.import_all(&batch, false)
    }

    /// [`import`](Self::import) of memories that say how their files
    /// looked: each is written back byte for byte where its frontmatter
    /// block still describes it. With `update`, a memory already in the
    /// store whose text there differs from the one described gets the
    /// described one (a note edited in its vault since it came in); the
    /// store's earlier text is kept in the history.
    pub fn import_verbatim(&self, batch: &[Verbatim], update: bool) -> Vec<Placed> {
        let batch: Vec<Wanted<'_>> = batch
            .iter()
            .map(|v| (&v.memory, v.frontmatter_text.as_deref(), v.copy, v.modified))
            .collect();
        self.import_all(&batch, update)
    }

    fn import_all(&self, batch: &[Wanted<'_>], update: bool) -> Vec<Placed> {
        let failed = |e: Error| Placed::Failed {
            reason: e.to_string(),
        };
        let mut placed: Vec<Option<Placed>> = vec![None; batch.len()];
        let mut creates: Vec<(usize, String, String)> = Vec::new();
        let mut taken = std::collections::HashSet::new();
        let mut again = Vec::new();
        for (i, plan) in self.plan_all(batch, update).into_iter().enumerate() {
            match plan {
                Err(e) => placed[i] = Some(failed(e)),
                Ok(Planned::Placed(p)) => placed[i] = Some(p),
                Ok(Planned::Replace(path, bytes, text)) => {
                    placed[i] = Some(
                        self.replace_text(&path, &bytes, &text)
                            .unwrap_or_else(failed),
                    );
                }
                Ok(Planned::Create(path, text)) if taken.insert(path.clone()) => {
                    creates.push((i, path.to_string(), text));
                }
                Ok(Planned::Create(..)) => again.push(i),
            }
        }
        let files: Vec<(String, String)> = creates
            .iter()
            .map(|(_, path, text)| (path.clone(), text.clone()))
            .collect();
        for ((i, path, _), result) in creates.into_iter().zip(self.create_new_files(&files)) {
            match result {
                Ok(()) => placed[i] = Some(Placed::Written { path }),
                Err(Error::Exists { .. }) => again.push(i),
                Err(e) => placed[i] = Some(failed(e)),
            }
        }
        again.sort_unstable();
        for i in again {
            placed[i] = Some(self.put(batch[i], update).unwrap_or_else(failed));
        }
        // What came in stays byte for byte as it came (an export brought
        // back is the same files) until someone writes it: the normalizer
        // leaves it, as it leaves a restored version.
        if let Some(organizer) = &self.organizer {
            for p in placed.iter().flatten() {
                if let Placed::Written { path } | Placed::Updated { path } = p
                    && let Some(path) = StorePath::new(path)
                {
                    organizer.restored(&path);
                }
            }
        }
        placed
            .into_iter()
            .map(|p| {
                p.unwrap_or_else(|| Placed::Failed {
                    reason: "not imported".into(),
                })
            })
            .collect()
    }

    /// [`plan`](Self::plan) of every memory of `batch`, by a few threads.
    fn plan_all(&self, batch: &[Wanted<'_>], update: bool) -> Vec<Result<Planned>> {
        let workers = WORKERS.min(batch.len().div_ceil(16)).max(1);
        let mut planned: Vec<(usize, Result<Planned>)> = std::thread::scope(|scope| {
            let work = |w: usize| -> Vec<(usize, Result<Planned>)> {
                batch
                    .iter()
                    .enumerate()
                    .skip(w)
                    .step_by(workers)
                    .map(|(i, wanted)| (i, self.plan(*wanted, update)))
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
                match handle.map(|h| h.join()) {
                    Ok(Ok(part)) => all.extend(part),
                    Ok(Err(_)) => all.extend((w..batch.len()).step_by(workers).map(|i| {
                        (
                            i,
                            Err(Error::InvalidInput("an import worker failed".into())),
                        )
                    })),
                    Err(_) => all.extend(work(w)),
                }
            }
            all
        });
        planned.sort_by_key(|(i, _)| *i);
        planned.into_iter().map(|(_, p)| p).collect()
    }

    /// Puts one memory, unless it is there already.
    fn put(&self, wanted: Wanted<'_>, update: bool) -> Result<Placed> {
        let incoming = wanted.0;
        // A name taken between the plan and the create: plan again, which
        // sees who took it.
        for _ in 0..64 {
            match self.plan(wanted, update)? {
                Planned::Placed(placed) => return Ok(placed),
                Planned::Replace(path, bytes, text) => {
                    return self.replace_text(&path, &bytes, &text);
                }
                Planned::Create(path, text) => match self.create(&path.to_string(), &text, false) {
                    Ok(()) => {
                        return Ok(Placed::Written {
                            path: path.to_string(),
                        });
                    }
                    Err(Error::Exists { .. }) => continue,
                    Err(e) => return Err(e),
                },
            }
        }
        Err(Error::Conflict {
            path: incoming.path.clone(),
        })
    }

    /// The memory already at `path` as a duplicate of the one wanted,
    /// saying whether its body differs (frontmatter aside, which the
    /// organizer rewrites): a note edited in its vault since it was
    /// ingested. With `update`, one that differs is to be replaced.
    fn duplicate(&self, path: &StorePath, wanted: Wanted<'_>, update: bool) -> Planned {
        let Ok(bytes) = self.store.read(path) else {
            return Planned::Placed(Placed::Duplicate {
                path: path.to_string(),
                differs: false,
            });
        };
        let text = String::from_utf8_lossy(&bytes);
        let parsed = memory::parse("", &text);
        let body = parsed.body(&text);
        let differs = body.trim_end() != wanted.0.content.trim_end();
        // Changed in the store after its source was: the store's is the
        // newer text, and stays.
        let newer_here = wanted
            .3
            .is_some_and(|source| self.store.stat(path).is_ok_and(|st| st.mtime.sec > source));
        if differs && update && !newer_here {
            // Where the memory still is where it came in, it is written as
            // it comes, with the fields the store gave it since (its id,
            // when it was written, its category, its links) where the
            // source names none; one the organizer has filed since keeps
            // the block the store gave it.
            let new = if path.to_string() == wanted.0.path {
                let taken = self.text_at(path, wanted);
                let kept = store_fields(&parsed.frontmatter);
                let pairs: Vec<(&str, String)> =
                    kept.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
                let taken = match memory::set_fields(&taken, &created_only(&pairs)) {
                    Ok(Some(with_date)) => with_date,
                    _ => taken,
                };
                match memory::add_missing_fields(&taken, &pairs) {
                    Ok(Some(with_fields)) => with_fields,
                    _ => taken,
                }
            } else {
                format!("{}{}", &text[..text.len() - body.len()], wanted.0.content)
            };
            return Planned::Replace(path.clone(), bytes, new);
        }
        Planned::Placed(Placed::Duplicate {
            path: path.to_string(),
            differs,
        })
    }

    /// Replaces the text of the memory at `path`, which held `bytes`
    /// when planned; the earlier text is kept in the history.
    fn replace_text(&self, path: &StorePath, bytes: &[u8], text: &str) -> Result<Placed> {
        let shown = path.to_string();
        self.rewrite(&shown, path, bytes, text)?;
        Ok(Placed::Updated { path: shown })
    }

    /// The text of the wanted memory's file at `path`: its block as
    /// written and its content when the block still says what the fields
    /// say (with the id added when the path would not give it), else
    /// rendered from its fields.
    fn text_at(&self, path: &StorePath, (incoming, head, ..): Wanted<'_>) -> String {
        let id = incoming.id.trim();
        if let Some(head) = head.filter(|head| describes(head, incoming)) {
            let text = format!("{head}{}", incoming.content);
            if memory::parse("", &text).frontmatter.id.is_some()
                || self.index.derived_id(path).eq_ignore_ascii_case(id)
            {
                return text;
            }
            return memory::add_missing_fields(&text, &[("id", id.to_string())])
                .ok()
                .flatten()
                .unwrap_or(text);
        }
        let mut fields = vec![("id".to_string(), serde_json::Value::from(id))];
        fields.extend(incoming.fields.iter().filter(|(k, _)| k != "id").cloned());
        let mut text = memory::render_frontmatter(&fields);
        text.push_str(&incoming.content);
        if !incoming.content.is_empty() && !incoming.content.ends_with('\n') {
            text.push('\n');
        }
        text
    }

    /// Whether a memory is a duplicate, and else where it goes and its
    /// text: the wanted path, or the first free `<stem>-N.md` beside it.
    fn plan(&self, asked: Wanted<'_>, update: bool) -> Result<Planned> {
        let (incoming, head, copy, _) = asked;
        let id = incoming.id.trim();
        if id.is_empty() {
            return Err(Error::InvalidInput("a memory to import needs an id".into()));
        }
        let wanted = self.writable(&incoming.path)?;
        if let Some(path) = self.index.by_id(id).filter(|_| !copy) {
            // Where two files share the id (a copy made outside mnemofs),
            // the one at the memory's own path is the one it describes.
            let own = path != wanted
                && self
                    .holder(&wanted)
                    .flatten()
                    .is_some_and(|found| found.eq_ignore_ascii_case(id));
            let path = if own { wanted } else { path };
            return Ok(self.duplicate(&path, asked, update));
        }
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
        // The file as it was, if its block still says what the fields say.
        let verbatim = head
            .filter(|head| describes(head, incoming))
            .map(|head| format!("{head}{}", incoming.content));
        for n in 1..10_000 {
            let candidate = if n == 1 {
                wanted.clone()
            } else {
                match folder.join(std::ffi::OsStr::new(&format!("{stem}-{n}.md"))) {
                    Some(p) => p,
                    None => break,
                }
            };
            match self.holder(&candidate) {
                Some(found) if found.as_deref().is_some_and(|f| f.eq_ignore_ascii_case(id)) => {
                    return Ok(self.duplicate(&candidate, asked, update));
                }
                // The same file, though the store shows it another id.
                Some(_)
                    if verbatim.as_ref().is_some_and(|text| {
                        self.store.read(&candidate).ok().as_deref() == Some(text.as_bytes())
                    }) =>
                {
                    return Ok(Planned::Placed(Placed::Duplicate {
                        path: candidate.to_string(),
                        differs: false,
                    }));
                }
                Some(_) => continue,
                None => {
                    let text = self.text_at(&candidate, asked);
                    return Ok(Planned::Create(candidate, text));
                }
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

/// The fields mnemofs gives a memory after it comes in, as the store's
/// copy has them: kept when an update takes its source's text.
fn store_fields(frontmatter: &memory::Frontmatter) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(id) = &frontmatter.id {
        out.push(("id".to_owned(), id.clone()));
    }
    if let Some(created) = &frontmatter.created_at {
        out.push(("created_at".to_owned(), created.clone()));
    }
    if let Some(phase) = frontmatter.phase {
        out.push(("phase".to_owned(), phase.as_str().to_owned()));
    }
    if let Some(category) = frontmatter.category {
        out.push(("category".to_owned(), category.as_str().to_owned()));
    }
    if !frontmatter.links.is_empty() {
        out.push((
            "links".to_owned(),
            format!("[{}]", frontmatter.links.join(", ")),
        ));
    }
    out
}

/// Of `fields`, `created_at` alone: when a memory was written stays what
/// the store first said (a source's date read from its file time moves
/// with every save there).
fn created_only<'a>(fields: &[(&'a str, String)]) -> Vec<(&'a str, String)> {
    fields
        .iter()
        .filter(|(k, _)| *k == "created_at")
        .cloned()
        .collect()
}

/// A memory to put, the frontmatter block its file had, if known,
/// whether it is a copy ([`Verbatim::copy`]) and when its source changed
/// ([`Verbatim::modified`]).
type Wanted<'a> = (&'a Incoming, Option<&'a str>, bool, Option<i64>);

/// The id the store gives a memory created at `path` whose frontmatter
/// names none (a note whose block cannot be read, taken in as written):
/// `None` if `path` is not a path in a store.
pub fn path_id(path: &str) -> Option<String> {
    StorePath::new(std::ffi::OsStr::new(path)).map(|p| crate::index::path_id(&p))
}

/// Whether the frontmatter block `head` says what `incoming` describes:
/// the same id (or none) and the same fields. An export edited by hand
/// in its fields, not its block, is written from the fields.
fn describes(head: &str, incoming: &Incoming) -> bool {
    let parsed = memory::parse("", head);
    let same_id = parsed
        .frontmatter
        .id
        .as_deref()
        .is_none_or(|found| found.trim().eq_ignore_ascii_case(incoming.id.trim()));
    let Ok(serde_json::Value::Object(mut read)) = serde_json::to_value(&parsed.frontmatter) else {
        return false;
    };
    read.remove("id");
    let described: serde_json::Map<String, serde_json::Value> = incoming
        .fields
        .iter()
        .filter(|(k, _)| k != "id")
        .cloned()
        .collect();
    same_id && parsed.body(head).is_empty() && read == described
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::index::Index;
    use crate::ops::{DirectWriter, ServedBy};
    use crate::store::Store;
    use crate::views::Views;

    fn ops() -> (tempfile::TempDir, Operations) {
        let root = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(Store::open(root.path()).expect("store"));
        let index = Index::in_memory(Arc::clone(&store)).expect("index");
        let views = Views::new(index.clone());
        let writer = Arc::new(DirectWriter::new(Arc::clone(&store)).with_index(index.clone()));
        let ops = Operations::new(store, index, views, writer, ServedBy::Local);
        (root, ops)
    }

    fn verbatim(id: &str, path: &str, head: &str, fields: serde_json::Value) -> Verbatim {
        let serde_json::Value::Object(fields) = fields else {
            panic!("fields are an object");
        };
        Verbatim {
            memory: Incoming {
                id: id.into(),
                path: path.into(),
                fields: fields.into_iter().collect(),
                content: "Body\r\n".into(),
            },
            frontmatter_text: Some(head.into()),
            copy: false,
            modified: None,
        }
    }

    fn text(root: &tempfile::TempDir, rel: &str) -> String {
        std::fs::read_to_string(root.path().join(rel)).expect("read")
    }

    #[test]
    fn a_block_is_written_as_it_was_with_an_id_only_where_the_store_would_not_give_it() {
        let (root, ops) = ops();
        let head = "---\r\ntags: [b, a]  # mine\r\n---\r\n";
        let fields = serde_json::json!({"tags": ["b", "a"]});
        let at = StorePath::new("notes/a.md").expect("path");
        let derived = ops.index.derived_id(&at);
        let other = "8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f6aa";
        let placed = ops.import_verbatim(
            &[
                verbatim(&derived, "notes/a.md", head, fields.clone()),
                verbatim(other, "notes/b.md", head, fields.clone()),
            ],
            false,
        );
        assert!(
            placed.iter().all(|p| matches!(p, Placed::Written { .. })),
            "{placed:?}"
        );
        // The path gives the same id: the file is as it was.
        assert_eq!(text(&root, "notes/a.md"), format!("{head}Body\r\n"));
        // It would not: the id goes in, and nothing else changes.
        let b = text(&root, "notes/b.md");
        assert!(b.contains(&format!("id: {other}")), "{b}");
        assert!(b.starts_with("---\r\ntags: [b, a]  # mine\r\n"), "{b}");
        assert!(b.ends_with("---\r\nBody\r\n"), "{b}");

        // Again: the same files are duplicates, whatever id the store shows.
        let again = ops.import_verbatim(
            &[
                verbatim(&derived, "notes/a.md", head, fields.clone()),
                verbatim(other, "notes/b.md", head, fields),
            ],
            false,
        );
        assert!(
            again.iter().all(|p| matches!(p, Placed::Duplicate { .. })),
            "{again:?}"
        );
    }

    #[test]
    fn a_block_that_no_longer_says_what_the_fields_say_is_not_used() {
        let (root, ops) = ops();
        let id = "8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f6bb";
        let head = format!("---\nid: {id}\ntags: [old]\n---\n");
        let edited = serde_json::json!({"tags": ["new"]});
        let other_id = "---\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f6cc\n---\n";
        let placed = ops.import_verbatim(
            &[
                verbatim(id, "notes/edited.md", &head, edited),
                verbatim(
                    id.replace('b', "d").as_str(),
                    "notes/id.md",
                    other_id,
                    serde_json::json!({}),
                ),
            ],
            false,
        );
        assert!(
            placed.iter().all(|p| matches!(p, Placed::Written { .. })),
            "{placed:?}"
        );
        let edited = text(&root, "notes/edited.md");
        assert!(
            edited.contains("- new") && !edited.contains("old"),
            "{edited}"
        );
        let other = text(&root, "notes/id.md");
        assert!(other.contains(&id.replace('b', "d")), "{other}");
    }
}
