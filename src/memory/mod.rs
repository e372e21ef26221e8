//! Parsing memory files: markdown with optional YAML frontmatter.
//!
//! Everything mnemofs knows about a memory (its title, category, tags,
//! links and observations) comes from here, and nothing here touches the
//! disk: callers hand in bytes and get a [`Memory`] back, so the index,
//! the views and the background tasks all read files the same way.
//!
//! Parsing never fails and never panics. Memory files are written by
//! agents, editors and people, and a broken field must not make a memory
//! disappear from search. Problems become [`LintIssue`]s (shown in
//! `.mnemofs/lint`) and parsing carries on with what it could read.
//!
//! Subtleties a newcomer trips on:
//! - Byte offsets ([`Memory::frontmatter_span`], [`Memory::body_offset`])
//!   index the text that was parsed. [`parse_bytes`] decodes invalid UTF-8
//!   lossily, so for such files offsets past the first bad byte are not
//!   offsets into the original bytes; it says so in the lint.
//! - Links, tags and observations are never read from fenced code blocks
//!   or inline code spans: agents paste shell snippets full of `#`.
//! - The only write operation, [`add_missing_fields`], edits text rather
//!   than re-serializing YAML, so comments, key order and the body's bytes
//!   survive; see `edit.rs`.

mod category;
pub mod classify;
pub mod conflict;
mod date;
pub mod duration;
mod edit;
mod frontmatter;
pub mod grams;
pub mod hanzi;
pub mod head;
mod links;
mod markdown;
mod observations;
pub mod prototypes;
pub mod reminders;
mod render;
pub mod schema;
mod tags;
pub mod transcript;

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

pub use category::{Category, Phase, UnknownName};
pub use date::{format_timestamp, parse_timestamp, written_day};
pub use edit::{
    EditError, add_missing_fields, add_to_list_field, remove_field, remove_from_list_field,
    set_fields, yaml_scalar,
};
pub use frontmatter::{Frontmatter, MAX_YAML_DEPTH, nests_too_deep};
pub use links::{Link, LinkKind};
pub use observations::Observation;
pub use render::render_frontmatter;

use frontmatter::Located;

/// A parsed memory file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Memory {
    /// The frontmatter fields; all default when there is no (readable)
    /// frontmatter.
    pub frontmatter: Frontmatter,
    /// Bytes of the whole frontmatter block, from the opening `---` through
    /// the newline of the closing line. A BOM before it is not included.
    pub frontmatter_span: Option<Range<usize>>,
    /// Where the body starts: after the frontmatter block, else after any
    /// BOM, else 0.
    pub body_offset: usize,
    /// Frontmatter `title`, else the first `# Heading` of the body, else
    /// the file stem.
    pub title: String,
    /// Outgoing links: frontmatter `links:` first, then the body's in order.
    /// Repeated links are kept (each occurrence counts as a mention).
    pub links: Vec<Link>,
    /// Frontmatter tags then inline tags, lowercased, without duplicates,
    /// in first-seen order.
    pub tags: Vec<String>,
    /// The body's `- [category] text` lines.
    pub observations: Vec<Observation>,
    /// Everything that looked wrong, in file order as far as known.
    pub lint: Vec<LintIssue>,
    /// What the frontmatter schemas in force ([`schema::active`]) warn
    /// about: for `.mnemofs/lint`, never a reason to refuse the file.
    pub schema_warnings: Vec<String>,
}

impl Memory {
    /// The body of `text`, the same text this memory was parsed from.
    pub fn body<'a>(&self, text: &'a str) -> &'a str {
        text.get(self.body_offset..).unwrap_or_default()
    }

    /// Whether the frontmatter is unreadable, so the file must not be
    /// rewritten by background tasks.
    pub fn has_malformed_frontmatter(&self) -> bool {
        self.frontmatter_problem().is_some()
    }

    /// What makes the frontmatter unreadable, if anything does.
    pub fn frontmatter_problem(&self) -> Option<&LintIssue> {
        self.lint.iter().find(|l| {
            matches!(
                l.kind,
                LintKind::MalformedFrontmatter | LintKind::UnclosedFrontmatter
            )
        })
    }
}

/// What kind of problem a [`LintIssue`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LintKind {
    /// The frontmatter YAML does not parse, or is not a map; its fields were
    /// all ignored.
    MalformedFrontmatter,
    /// The file starts with `---` but no closing `---` line follows; the
    /// whole file was read as body.
    UnclosedFrontmatter,
    /// One frontmatter field has the wrong shape or an unknown value; the
    /// other fields were read.
    InvalidField,
    /// The file is not valid UTF-8 past its first few KiB; bad bytes were
    /// replaced with U+FFFD.
    InvalidUtf8,
}

/// One problem found while parsing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LintIssue {
    /// What kind of problem.
    pub kind: LintKind,
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
    /// A lowercase, human-readable description.
    pub message: String,
}

impl fmt::Display for LintIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The body of a memory's `text`: what follows its frontmatter (the
/// [`Memory::body`] that [`parse`] finds, without parsing the rest).
pub fn body_of(text: &str) -> &str {
    text.get(frontmatter::locate(text).body_start()..)
        .unwrap_or_default()
}

/// The body of `text` with runs of whitespace collapsed: two memories
/// whose bodies this makes equal say the same thing.
pub fn normalized_body(text: &str) -> String {
    body_of(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fields of the frontmatter `text` opens with, and its body after
/// it: `Ok(None)` when it opens with none (a `---` line that nothing
/// closes is a rule, not frontmatter); `Err` (one sentence) when the
/// block is not a map of fields.
pub fn own_frontmatter(text: &str) -> Result<Option<(serde_yaml::Mapping, &str)>, String> {
    match frontmatter::locate(text) {
        frontmatter::Located::Absent { .. } | frontmatter::Located::Unclosed { .. } => Ok(None),
        frontmatter::Located::Found(block) => match frontmatter::parse_yaml(block.yaml) {
            Ok(fields) => Ok(Some((
                fields,
                text.get(block.span.end..).unwrap_or_default(),
            ))),
            Err(problem) => Err(format!(
                "the text opens with frontmatter that cannot be read ({})",
                problem.into_lint()
            )),
        },
    }
}

/// Parses a memory file. `stem` is the file name without `.md`, used as
/// the title of last resort.
pub fn parse(stem: &str, text: &str) -> Memory {
    let mut lint = Vec::new();
    let mut schema_warnings = Vec::new();
    let (frontmatter, frontmatter_span, body_offset) = match frontmatter::locate(text) {
        Located::Absent { body_start } => (Frontmatter::default(), None, body_start),
        Located::Unclosed { body_start } => {
            lint.push(LintIssue {
                kind: LintKind::UnclosedFrontmatter,
                line: Some(1),
                message: "frontmatter opened on line 1 is never closed; read the file as body"
                    .to_owned(),
            });
            // A scope it names still hides the memory from other scopes.
            let opened: String = text.lines().skip(1).take(64).collect::<Vec<_>>().join("\n");
            let frontmatter = Frontmatter {
                scope: frontmatter::scope_as_written(&opened),
                ..Frontmatter::default()
            };
            (frontmatter, None, body_start)
        }
        Located::Found(block) => {
            let fm = frontmatter::decode_and_inspect(&block, &mut lint, |map| {
                schema_warnings = schema::active().check_fields(map);
            });
            (fm, Some(block.span.clone()), block.span.end)
        }
    };

    let mut tags = tags::TagList::default();
    for tag in frontmatter
        .tags
        .iter()
        .filter_map(|t| tags::normalize_tag(t))
    {
        tags.push(tag);
    }
    let mut links: Vec<Link> = frontmatter
        .links
        .iter()
        .filter_map(|entry| Link::from_frontmatter(entry))
        .collect();

    let body = text.get(body_offset..).unwrap_or_default();
    let masked = markdown::mask_code(body);
    let mut heading = None;
    let mut observations = Vec::new();
    for (raw, masked) in body.split('\n').zip(masked.split('\n')) {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let masked = masked.strip_suffix('\r').unwrap_or(masked);
        if heading.is_none() {
            heading = first_level_heading(raw, masked);
        }
        let spans = links::wikilinks(masked);
        links::line_links(masked, &spans, &mut links);
        let mut skip = tags::link_destinations(masked);
        skip.extend(spans.iter().map(|s| s.range.clone()));
        let skip = tags::merge_ranges(skip);
        tags::inline_tags(masked, &skip, &mut tags);
        observations.extend(observations::observation(raw, masked, &skip));
    }

    let title = title_of(&frontmatter, heading, stem);

    Memory {
        frontmatter,
        frontmatter_span,
        body_offset,
        title,
        links,
        tags: tags.into_vec(),
        observations,
        lint,
        schema_warnings,
    }
}

/// A memory's title: its frontmatter's, else its first level-1 heading,
/// else its file name.
fn title_of(frontmatter: &Frontmatter, heading: Option<&str>, stem: &str) -> String {
    frontmatter
        .title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .or(heading)
        .unwrap_or(stem)
        .to_owned()
}

/// The id and title [`parse_bytes`] gives a file, or `None` if it looks
/// binary, without reading its links, tags and observations: the body is
/// read only as far as the first heading, and only when the frontmatter
/// has no title.
pub fn id_and_title(stem: &str, bytes: &[u8]) -> Option<(Option<String>, String)> {
    if is_probably_binary(bytes) {
        return None;
    }
    let text = String::from_utf8_lossy(bytes);
    let located = frontmatter::locate(&text);
    let body_offset = located.body_start();
    let frontmatter = match located {
        Located::Found(block) => frontmatter::decode(&block, &mut Vec::new()),
        _ => Frontmatter::default(),
    };
    let has_title = frontmatter
        .title
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty());
    let mut heading = None;
    if !has_title {
        let body = text.get(body_offset..).unwrap_or_default();
        let masked = markdown::mask_code(body);
        heading = body
            .split('\n')
            .zip(masked.split('\n'))
            .find_map(|(raw, masked)| {
                let raw = raw.strip_suffix('\r').unwrap_or(raw);
                first_level_heading(raw, masked.strip_suffix('\r').unwrap_or(masked))
            });
    }
    let title = title_of(&frontmatter, heading, stem);
    Some((frontmatter.id, title))
}

/// The text of a level-1 ATX heading. The mask decides whether the line is
/// a heading (not one inside a fence); the raw line gives the words, so a
/// code span at the end of the heading is not trimmed away as blank.
fn first_level_heading<'a>(raw: &'a str, masked: &str) -> Option<&'a str> {
    let (1, _) = markdown::atx_heading(masked)? else {
        return None;
    };
    let (_, range) = markdown::atx_heading(raw)?;
    let text = raw.get(range)?.trim();
    (!text.is_empty()).then_some(text)
}

/// How many leading bytes [`is_probably_binary`] inspects.
const SNIFF_LEN: usize = 8192;

/// Whether `bytes` look like a binary file rather than text: a NUL byte,
/// or invalid UTF-8, within the first 8 KiB. A multi-byte character cut
/// off by the end of that window does not count.
pub fn is_probably_binary(bytes: &[u8]) -> bool {
    let window = bytes.get(..SNIFF_LEN).unwrap_or(bytes);
    if window.contains(&0) {
        return true;
    }
    match std::str::from_utf8(window) {
        Ok(_) => false,
        // `error_len() == None` means the window ends inside a character.
        Err(e) => e.error_len().is_some(),
    }
}

/// Parses a file's bytes, or returns `None` if they look binary; with the
/// text it parsed, which borrows `bytes` unless some had to be replaced.
///
/// Invalid UTF-8 after the sniffed window is replaced with U+FFFD and
/// reported as [`LintKind::InvalidUtf8`].
pub fn parse_bytes<'a>(stem: &str, bytes: &'a [u8]) -> Option<(Cow<'a, str>, Memory)> {
    if is_probably_binary(bytes) {
        return None;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Some((Cow::Borrowed(text), parse(stem, text))),
        Err(e) => {
            let text = String::from_utf8_lossy(bytes);
            let mut memory = parse(stem, &text);
            let valid = bytes.get(..e.valid_up_to()).unwrap_or_default();
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            memory.lint.push(LintIssue {
                kind: LintKind::InvalidUtf8,
                line: Some(line),
                message: format!(
                    "invalid utf-8 at byte {}; bad bytes were read as U+FFFD",
                    e.valid_up_to()
                ),
            });
            Some((text, memory))
        }
    }
}

#[cfg(test)]
mod tests;
