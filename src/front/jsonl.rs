//! `mnemofs export` and `mnemofs import`: memories as JSON lines.
//!
//! An export line is a memory's record, exactly what `read --json`
//! prints: memory-cli's `Memory` fields (`id`, `content`, `content_hash`,
//! `phase`, `category`, `scope`, `tags`, `source`, `created_at`,
//! `updated_at`, `expires_at`, `access_count`, `links`, `version`) plus
//! `path`, `title`, `type` and the whole `frontmatter`.
//!
//! An export of the whole store then has a line for each of its other
//! files (attachments, text files): its `path` and its bytes in base64
//! (`file_base64`), put back byte for byte by import, never over a file
//! that is there.
//!
//! Import reads such lines back: the memory goes to its `path` with its
//! `frontmatter` and `content`, and keeps its `id`; its file is written
//! back byte for byte from `frontmatter_text` and `content` (see
//! [`ops::Verbatim`]), or, from an export made before that field, with
//! the frontmatter rendered from `frontmatter`. A line of memory-cli's
//! own export has no `path` or `frontmatter`; its fields become the
//! frontmatter (memory-cli's Go field names, `ContentHash` and the like,
//! are read too) and it is placed as memory-cli would file it: in its
//! category's folder (organized) when it names one, in `archive/` when
//! archived, else in `inbox/`.
//! Volatile counters (`access_count`, `version`, `content_hash`,
//! `updated_at`) are not written into files from memory-cli's fields: in
//! mnemofs they live in the state dir. A memory without an id gets one
//! derived from its content, so importing the same file twice adds
//! nothing either way.

use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use anyhow::Context;

use super::batch::{Batcher, Summary};
use super::input::{self, Line};
use crate::ops::{self, Incoming, RecordFilter, Request, Response, Verbatim};

/// Records per request when exporting.
const PAGE: usize = 500;

/// Writes every record matching `filter` to `out`, one per line, then,
/// if `files`, every file of the store that is not a memory (an
/// attachment) as a line of its `path` and its bytes in base64
/// (`file_base64`); returns how many memories and how many files.
/// `keep` filters the records further (a scope, say).
pub fn export(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    filter: &RecordFilter,
    keep: &dyn Fn(&ops::MemoryRecord) -> bool,
    files: bool,
    out: &mut dyn Write,
) -> anyhow::Result<(usize, usize)> {
    let count = export_records(call, filter, keep, out)?;
    let files = if files { export_files(call, out)? } else { 0 };
    out.flush()?;
    Ok((count, files))
}

fn export_records(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    filter: &RecordFilter,
    keep: &dyn Fn(&ops::MemoryRecord) -> bool,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    let mut count = 0;
    let request = |after| Request::Records {
        filter: filter.clone(),
        after,
        limit: PAGE,
    };
    each_page(call, request, |answer| {
        let Response::Records { page } = answer else {
            anyhow::bail!("unexpected answer to an export");
        };
        for record in page.records.iter().filter(|r| keep(r)) {
            serde_json::to_writer(&mut *out, record)?;
            out.write_all(b"\n")?;
            count += 1;
        }
        Ok(page.next)
    })?;
    Ok(count)
}

/// The key of an exported file's bytes.
const FILE_KEY: &str = "file_base64";

fn export_files(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    out: &mut dyn Write,
) -> anyhow::Result<usize> {
    use base64::Engine;
    let mut count = 0;
    let request = |after| Request::Files { after, limit: PAGE };
    each_page(call, request, |answer| {
        let Response::Files { page } = answer else {
            anyhow::bail!("unexpected answer to an export of files");
        };
        for file in &page.files {
            let line = serde_json::json!({
                "path": file.path,
                FILE_KEY: base64::engine::general_purpose::STANDARD.encode(&file.bytes),
            });
            serde_json::to_writer(&mut *out, &line)?;
            out.write_all(b"\n")?;
            count += 1;
        }
        Ok(page.next)
    })?;
    Ok(count)
}

/// Asks `request(after)` page after page, from the first, handing each
/// answer to `take`, which says where the next page starts (`None`: that
/// was the last).
fn each_page(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    request: impl Fn(Option<String>) -> Request,
    mut take: impl FnMut(Response) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<()> {
    let mut after = None;
    loop {
        after = take(call(request(after))?)?;
        if after.is_none() {
            return Ok(());
        }
    }
}

/// The file a line of an export carries (an attachment): its path and
/// bytes. `None` for a line that is a memory; an error for one whose bytes
/// cannot be read.
fn carried_file(line: &str) -> Option<Result<(String, Vec<u8>), String>> {
    use base64::Engine;
    if !line.contains(FILE_KEY) {
        return None;
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line.trim()) else {
        return None;
    };
    let encoded = object.get(FILE_KEY)?;
    let path = match object.get("path") {
        Some(Value::String(path)) if !path.trim().is_empty() => path.clone(),
        _ => return Some(Err(format!("a `{FILE_KEY}` without a `path`"))),
    };
    let bytes = encoded
        .as_str()
        .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok());
    Some(
        bytes
            .map(|b| (path, b))
            .ok_or_else(|| format!("`{FILE_KEY}` is not base64")),
    )
}

/// Reads JSON lines from `input` and puts each memory into the store;
/// `progress` is told the lines read so far. A line that is not a memory
/// is skipped and named in the summary with its number.
pub fn import(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    input: &mut dyn BufRead,
    progress: &mut dyn FnMut(&Summary),
) -> anyhow::Result<Summary> {
    let mut batcher = Batcher::new(call);
    let mut bytes = Vec::new();
    let mut number = 0;
    let max = input::max_line();
    loop {
        let read = input::read_line(input, &mut bytes, max);
        number += 1;
        match read.context("cannot read the input")? {
            Line::End => break,
            Line::Read => {}
            Line::TooLong => {
                batcher.read();
                let why = format!("longer than {}", input::size(max as u64));
                batcher.skip(format!("line {number}"), why);
                continue;
            }
        }
        let Ok(line) = std::str::from_utf8(&bytes) else {
            batcher.read();
            batcher.skip(format!("line {number}"), "not UTF-8 text");
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        batcher.read();
        match carried_file(line) {
            Some(Ok((path, bytes))) => attach(call, &mut batcher, number, path, bytes),
            Some(Err(why)) => batcher.skip(format!("line {number}"), why),
            None => match described(line) {
                Ok(memory) => batcher.push_verbatim(format!("line {number}"), memory)?,
                Err(why) => batcher.skip(format!("line {number}"), why),
            },
        }
        if number % 1024 == 0 {
            progress(batcher.summary());
        }
    }
    let summary = batcher.finish()?;
    progress(&summary);
    Ok(summary)
}

/// Puts a file an export carried at its path, unless it is there.
fn attach(
    call: &dyn Fn(Request) -> ops::Result<Response>,
    batcher: &mut Batcher<'_>,
    number: usize,
    path: String,
    bytes: Vec<u8>,
) {
    let shown = format!("line {number} ({path})");
    match call(Request::Attach { path, bytes }) {
        Ok(Response::Imported { placed }) => match placed.into_iter().next() {
            Some(
                ops::Placed::Written { .. }
                | ops::Placed::Updated { .. }
                | ops::Placed::Duplicate { .. },
            ) => batcher.attached(),
            Some(ops::Placed::Failed { reason }) => batcher.skip(shown, reason),
            None => batcher.skip(shown, "not copied"),
        },
        Ok(_) => batcher.skip(shown, "unexpected answer to an attachment"),
        Err(e) => batcher.skip(shown, e.to_string()),
    }
}

/// A key as memory-cli might spell it (`ContentHash`, `content_hash`),
/// reduced to compare: lowercase, no underscores.
fn loose(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The memory one line describes, or why it describes none.
pub fn incoming(line: &str) -> Result<Incoming, String> {
    described(line).map(|v| v.memory)
}

/// The memory one line describes with the frontmatter block its file had,
/// when the line carries it (`frontmatter_text`), or why it describes none.
pub fn described(line: &str) -> Result<Verbatim, String> {
    let value: Value = serde_json::from_str(line.trim()).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".into());
    };
    let mut fields: Map<String, Value> = Map::new();
    // Fields a record has beyond memory-cli's and mnemofs's own, as
    // spelled: they go into the frontmatter rather than be lost.
    let mut others: Vec<(String, Value)> = Vec::new();
    for (key, value) in object {
        let known = loose(&key);
        if !RECORD_KEYS.contains(&known.as_str()) && !value.is_null() {
            others.push((key, value.clone()));
        }
        fields.insert(known, value);
    }
    let text = |key: &str| -> Option<String> {
        match fields.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        }
    };
    let content = match fields.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("`content` is not a string".into()),
        None => return Err("no `content`".into()),
    };
    let path = text("path");
    let frontmatter = match fields.get("frontmatter") {
        Some(Value::Object(map)) => Some(map.clone()),
        None | Some(Value::Null) => None,
        Some(_) => return Err("`frontmatter` is not an object".into()),
    };
    let id = text("id")
        .or_else(|| {
            frontmatter
                .as_ref()
                .and_then(|f| f.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| content_id(&format!("{}\n{content}", path.as_deref().unwrap_or(""))));
    let frontmatter_text = match fields.get("frontmattertext") {
        Some(Value::String(s)) => Some(s.clone()),
        None | Some(Value::Null) => None,
        Some(_) => return Err("`frontmatter_text` is not a string".into()),
    };
    match (path, frontmatter) {
        (Some(path), Some(frontmatter)) => {
            // mnemofs's own export: the frontmatter as it was.
            let fields = frontmatter.into_iter().filter(|(k, _)| k != "id").collect();
            Ok(Verbatim {
                memory: Incoming {
                    id,
                    path,
                    fields,
                    content,
                },
                frontmatter_text,
                copy: false,
                modified: None,
            })
        }
        (path, None) => memory_cli(id, content, &fields, others, path).map(|memory| Verbatim {
            memory,
            frontmatter_text: None,
            copy: false,
            modified: None,
        }),
        (None, Some(_)) => Err("a `frontmatter` without a `path`".into()),
    }
}

/// The fields of a record that mean something to import, as [`loose`]
/// spells them: memory-cli's `Memory`, and what mnemofs's export adds.
const RECORD_KEYS: &[&str] = &[
    "id",
    "content",
    "contenthash",
    "phase",
    "category",
    "scope",
    "tags",
    "source",
    "createdat",
    "updatedat",
    "expiresat",
    "accesscount",
    "links",
    "version",
    "path",
    "title",
    "frontmatter",
    "frontmattertext",
    "filebase64",
];

/// A line of memory-cli's export (its `Memory` object), placed as
/// memory-cli files it, or at `path` when the line names one; `others`
/// are its fields that neither memory-cli nor mnemofs defines, kept in
/// the frontmatter as spelled.
fn memory_cli(
    id: String,
    content: String,
    fields: &Map<String, Value>,
    others: Vec<(String, Value)>,
    path: Option<String>,
) -> Result<Incoming, String> {
    // A content that opens with frontmatter (a whole note): its fields
    // count where the record names none, and its body is the content.
    let mut own_fields: Vec<(String, Value)> = Vec::new();
    let (content, fields) = match crate::memory::own_frontmatter(&content)? {
        Some((own, body)) => {
            let mut merged = fields.clone();
            for (key, value) in own {
                let (Some(key), Ok(value)) = (key.as_str(), serde_json::to_value(&value)) else {
                    continue;
                };
                merged.entry(loose(key)).or_insert(value.clone());
                own_fields.push((key.to_string(), value));
            }
            (body.to_string(), merged)
        }
        None => (content, fields.clone()),
    };
    let fields = &fields;
    let text = |key: &str| -> Option<String> {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    use crate::memory::{Category, Phase};
    let category = match text("category") {
        Some(c) => Some(c.parse::<Category>().map_err(|e| e.to_string())?),
        None => None,
    };
    let phase = match text("phase") {
        Some(p) => p.parse::<Phase>().map_err(|e| e.to_string())?,
        None => Phase::Inbox,
    };
    // A record that names its category is filed there, whatever phase it
    // was in: only a record without one waits in the inbox.
    let (phase, folder) = match (phase, category) {
        (Phase::Archived, _) => (Phase::Archived, "archive".to_string()),
        (_, None | Some(Category::Inbox)) => (Phase::Inbox, "inbox".to_string()),
        (_, Some(c)) => (Phase::Organized, c.as_str().to_string()),
    };
    let category = category.map(|c| c.as_str());
    let title = text("title").unwrap_or_else(|| crate::ops::first_words(&content));
    let mut out: Vec<(String, Value)> = vec![
        ("title".into(), Value::from(title.clone())),
        ("phase".into(), Value::from(phase.as_str())),
    ];
    if let Some(c) = category {
        out.push(("category".into(), Value::from(c)));
    }
    for (key, name) in [
        ("scope", "scope"),
        ("source", "source"),
        ("createdat", "created_at"),
        ("expiresat", "expires_at"),
    ] {
        if let Some(v) = text(key) {
            out.push((name.into(), Value::from(v)));
        }
    }
    for (key, name) in [("tags", "tags"), ("links", "links")] {
        match fields.get(key) {
            Some(Value::Array(items)) => {
                let items: Vec<Value> = items
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(Value::from)
                    .collect();
                out.push((name.into(), Value::Array(items)));
            }
            None | Some(Value::Null) => {}
            Some(_) => return Err(format!("`{name}` is not a list")),
        }
    }
    // The note's other fields, as written; never its volatile counters.
    for (key, value) in own_fields.into_iter().chain(others) {
        let volatile = ["id", "contenthash", "accesscount", "version", "updatedat"]
            .contains(&loose(&key).as_str());
        if !volatile && !out.iter().any(|(k, _)| loose(k) == loose(&key)) {
            out.push((key, value));
        }
    }
    let stem = crate::ops::slug(&title);
    let stem = if stem.is_empty() {
        "memory".into()
    } else {
        stem
    };
    let path = match path {
        Some(path) => {
            // Where it goes says its category: a phase or a title the
            // record did not give is left for the store to derive (from
            // the folder, and the file's name or heading).
            out.retain(|(k, _)| {
                (k != "phase" || text("phase").is_some())
                    && (k != "title" || text("title").is_some())
            });
            path
        }
        None => format!("{folder}/{stem}.md"),
    };
    Ok(Incoming {
        id,
        path,
        fields: out,
        content,
    })
}

/// An id derived from text, UUID-shaped, so describing the same memory
/// twice gives the same id.
pub fn content_id(text: &str) -> String {
    let hash = ops::content_sha256(text);
    let mut bytes = [0u8; 16];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hash[2 * i..2 * i + 2], 16).unwrap_or(0);
    }
    uuid::Builder::from_custom_bytes(bytes)
        .into_uuid()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_cli_line_whose_content_is_a_whole_note_keeps_its_fields() {
        let line = r#"{"id":"mc-6","content":"---\ntitle: T\ntags: [a, b]\naliases: [tee]\n---\nbody","category":"skills"}"#;
        let m = incoming(line).expect("a memory");
        assert_eq!(m.content, "body");
        assert_eq!(m.path, "skills/t.md");
        let field = |k: &str| {
            m.fields
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(field("title"), Some(Value::from("T")));
        assert_eq!(field("tags"), Some(serde_json::json!(["a", "b"])));
        assert_eq!(field("category"), Some(Value::from("skills")));
        assert_eq!(field("aliases"), Some(serde_json::json!(["tee"])));
        let bad = r#"{"content":"---\ntitle: [\n---\nbody"}"#;
        assert!(incoming(bad).unwrap_err().contains("cannot be read"));
    }

    #[test]
    fn a_memory_cli_line_with_go_names_is_placed_by_category() {
        let line = r#"{"ID":"a-1","Content":"prefers dark mode","ContentHash":"x","Phase":"organized","Category":"preferences","Scope":"global","Tags":["ui"],"Source":"claude","CreatedAt":"2026-05-07T10:00:00Z","AccessCount":3,"Links":[],"Version":1}"#;
        let m = incoming(line).expect("a memory");
        assert_eq!(m.id, "a-1");
        assert_eq!(m.path, "preferences/prefers-dark-mode.md");
        let keys: Vec<&str> = m.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"tags") && keys.contains(&"created_at"));
        assert!(!keys.contains(&"access_count") && !keys.contains(&"version"));
    }

    #[test]
    fn an_inbox_line_goes_to_the_inbox_and_bad_lines_say_why() {
        let m = incoming(r#"{"content":"hello","phase":"inbox","category":"inbox"}"#)
            .expect("a memory");
        assert_eq!(m.path, "inbox/hello.md");
        assert_eq!(m.id, incoming(r#"{"content":"hello"}"#).expect("again").id);
        assert!(incoming("{oops").unwrap_err().starts_with("not JSON"));
        assert_eq!(incoming("[1]").unwrap_err(), "not a JSON object");
        assert_eq!(incoming(r#"{"id":"x"}"#).unwrap_err(), "no `content`");
        assert!(incoming(r#"{"content":"x","category":"nope"}"#).is_err());
    }

    #[test]
    fn a_memory_cli_line_with_a_category_and_no_phase_is_organized_there() {
        let m = incoming(r#"{"id":"l-1","content":"retry with backoff","category":"lessons"}"#)
            .expect("a memory");
        assert_eq!(m.path, "lessons/retry-with-backoff.md");
        let phase = m.fields.iter().find(|(k, _)| k == "phase");
        assert_eq!(phase.map(|(_, v)| v.as_str()), Some(Some("organized")));
        let m =
            incoming(r#"{"content":"x","phase":"inbox","category":"Lessons"}"#).expect("a memory");
        assert!(m.path.starts_with("lessons/"), "{}", m.path);
        let m = incoming(r#"{"content":"x","phase":"archived","category":"lessons"}"#)
            .expect("a memory");
        assert!(m.path.starts_with("archive/"), "{}", m.path);
    }

    #[test]
    fn a_record_keeps_fields_import_does_not_know_and_its_path_keeps_its_fields() {
        let line = r#"{"content":"x","category":"knowledge","type":"fact","Extra_Field":"keep","metadata":{"a":1},"gone":null,"access_count":3}"#;
        let m = incoming(line).expect("a memory");
        let keys: Vec<&str> = m.fields.iter().map(|(k, _)| k.as_str()).collect();
        for kept in ["type", "Extra_Field", "metadata", "category"] {
            assert!(keys.contains(&kept), "{kept} in {keys:?}");
        }
        assert!(!keys.contains(&"gone") && !keys.contains(&"access_count"));
        // A path without a `frontmatter`: the record's fields still count.
        let m = incoming(r#"{"path":"k/z.md","content":"hi","title":"Z","tags":["a"]}"#)
            .expect("a memory");
        assert_eq!(m.path, "k/z.md");
        let keys: Vec<&str> = m.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["title", "tags"]);
        let m = incoming(r#"{"path":"k/w.md","content":"no title"}"#).expect("a memory");
        assert!(m.fields.is_empty(), "{:?}", m.fields);
        assert!(incoming(r#"{"content":"x","frontmatter":{}}"#).is_err());
    }

    #[test]
    fn an_export_line_carries_its_frontmatter_block_and_an_older_one_does_not() {
        let line = r#"{"id":"a","path":"n.md","content":"body\n","frontmatter":{"id":"a"},"frontmatter_text":"---\nid: a # mine\n---\n"}"#;
        let v = described(line).expect("a memory");
        assert_eq!(
            v.frontmatter_text.as_deref(),
            Some("---\nid: a # mine\n---\n")
        );
        assert_eq!(v.memory.path, "n.md");
        let old = r#"{"id":"a","path":"n.md","content":"body\n","frontmatter":{"id":"a"}}"#;
        assert_eq!(described(old).expect("a memory").frontmatter_text, None);
        let bad = r#"{"id":"a","path":"n.md","content":"","frontmatter_text":3}"#;
        assert!(described(bad).is_err());
    }
}
