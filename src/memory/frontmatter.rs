//! Finding and reading the YAML frontmatter block.
//!
//! Reading is lenient on purpose: memories are written by agents and by
//! hand, and one mistyped field must not hide the others. So the YAML is
//! parsed into a generic value first and each known field is decoded on
//! its own; a field of the wrong shape becomes a lint message and `None`,
//! never an error. Only YAML that does not parse at all loses the whole
//! block (the body is still read).
//!
//! Subtleties:
//! - The block is recognized only when the very first line is `---`
//!   (after an optional UTF-8 BOM, with `\r\n` allowed) and a later line is
//!   `---` or `...`. A file that opens with `---` and never closes it is
//!   reported, not guessed at.
//! - serde_yaml reports positions relative to the YAML text; messages here
//!   are rewritten to count lines of the whole file, which is what an
//!   editor shows.
//! - serde_yaml is deprecated upstream. It is used only in this module
//!   and in `edit`, so it can be swapped without touching the rest.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_yaml::{Mapping, Value};

use super::category::{Category, Phase};
use super::date::parse_timestamp;
use super::{LintIssue, LintKind};

/// The fields of a memory's frontmatter that mnemofs understands, plus
/// every other key, kept as-is.
///
/// Dates are kept as the strings written; use
/// [`parse_timestamp`] to compare them.
/// Empty strings are read as absent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Frontmatter {
    /// Stable identity (normally a UUID); `by-id/<id>.md` resolves to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Human title; wins over the first heading and the file stem.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The `type` key: memory, session, decision, task, ...
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Lifecycle phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Classification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    /// `global` or `agent:<name>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Tags as written (trimmed, leading `#` removed, case kept).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Who or what wrote the memory (claude, copilot, logseq, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Free-form status (open, done, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Creation time as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Last update time as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// When the memory should be archived, as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Ids (or `[[Titles]]`) of related memories.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    /// Revision counter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Hash of the content, for de-duplication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// How often the memory was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_count: Option<u64>,
    /// Other names the memory answers to in `[[links]]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Every key not listed above, with its value untouched.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Where the frontmatter block sits in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block<'a> {
    /// From the opening `---` through the closing line's newline.
    pub(crate) span: Range<usize>,
    /// The YAML between the delimiter lines (each line with its newline).
    pub(crate) yaml: &'a str,
    /// Byte offset of the closing delimiter line.
    pub(crate) close_line_start: usize,
    /// Whether the opening line ends in `\r\n`.
    pub(crate) crlf: bool,
}

/// Line number in the file of the first YAML line (the one after `---`).
const FIRST_YAML_LINE: usize = 2;

/// What the start of a file looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Located<'a> {
    /// No frontmatter; the body starts at `body_start` (after any BOM).
    Absent { body_start: usize },
    /// The file opens with `---` but no closing line follows.
    Unclosed { body_start: usize },
    /// A complete block.
    Found(Block<'a>),
}

impl Located<'_> {
    /// Where the body starts: after the block, else after any BOM.
    pub(crate) fn body_start(&self) -> usize {
        match self {
            Located::Absent { body_start } | Located::Unclosed { body_start } => *body_start,
            Located::Found(block) => block.span.end,
        }
    }
}

fn is_delimiter(line: &str, marks: &[&str]) -> bool {
    let t = line.trim_end_matches(['\n', '\r', ' ', '\t']);
    marks.contains(&t)
}

pub(crate) fn locate(text: &str) -> Located<'_> {
    let start = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = text.get(start..).unwrap_or_default();
    let mut lines = rest.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Located::Absent { body_start: start };
    };
    if !is_delimiter(first, &["---"]) {
        return Located::Absent { body_start: start };
    }
    let yaml_start = start + first.len();
    let mut pos = yaml_start;
    for line in lines {
        if is_delimiter(line, &["---", "..."]) {
            return Located::Found(Block {
                span: start..pos + line.len(),
                yaml: text.get(yaml_start..pos).unwrap_or_default(),
                close_line_start: pos,
                crlf: first.ends_with("\r\n"),
            });
        }
        pos += line.len();
    }
    Located::Unclosed { body_start: start }
}

/// Why a frontmatter block could not be read as a map of fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum YamlProblem {
    /// The YAML does not parse; `message` already counts file lines.
    Syntax {
        line: Option<usize>,
        message: String,
    },
    /// The YAML parses, but to a list or a scalar.
    NotAMapping { found: &'static str },
}

impl YamlProblem {
    pub(crate) fn into_lint(self) -> LintIssue {
        match self {
            YamlProblem::Syntax { line, message } => LintIssue {
                kind: LintKind::MalformedFrontmatter,
                line,
                message: format!("malformed frontmatter: {message}"),
            },
            YamlProblem::NotAMapping { found } => LintIssue {
                kind: LintKind::MalformedFrontmatter,
                line: Some(FIRST_YAML_LINE),
                message: format!("frontmatter is {found}, not a map of fields"),
            },
        }
    }
}

/// How deeply YAML may nest before it is refused unread. The YAML
/// parser's time grows with the square of the depth (a 200 KB file of
/// nested brackets took 52 s), and no frontmatter or config nests this
/// deep.
pub const MAX_YAML_DEPTH: usize = 128;

/// Whether `yaml` nests deeper than [`MAX_YAML_DEPTH`]: flow collections
/// (`[`, `{`) opened and not yet closed outside quotes and comments, plus
/// the block sequences a line opens at once (`- - - x`). A bound, not a
/// parse: brackets inside a plain scalar count too, which only matters
/// past the limit.
pub fn nests_too_deep(yaml: &str) -> bool {
    let mut depth = 0usize;
    for line in yaml.lines() {
        let dashes = line
            .trim_start()
            .as_bytes()
            .chunks(2)
            .take_while(|c| matches!(c, [b'-', b' '] | [b'-']))
            .count();
        if depth + dashes > MAX_YAML_DEPTH {
            return true;
        }
        let mut quote = None;
        let mut previous = ' ';
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '#') if previous.is_whitespace() => break,
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_YAML_DEPTH {
                        return true;
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                _ => {}
            }
            previous = c;
        }
    }
    false
}

/// Parses frontmatter YAML into its top-level map. Empty or comment-only
/// YAML is an empty map.
pub(crate) fn parse_yaml(yaml: &str) -> Result<Mapping, YamlProblem> {
    if yaml.trim().is_empty() {
        return Ok(Mapping::new());
    }
    if nests_too_deep(yaml) {
        return Err(YamlProblem::Syntax {
            line: Some(FIRST_YAML_LINE),
            message: format!("nested more than {MAX_YAML_DEPTH} levels deep"),
        });
    }
    match serde_yaml::from_str::<Value>(yaml) {
        Ok(value) => match untag(value) {
            Value::Mapping(m) => Ok(m),
            Value::Null => Ok(Mapping::new()),
            other => Err(YamlProblem::NotAMapping {
                found: shape(&other),
            }),
        },
        Err(e) => Err(YamlProblem::Syntax {
            line: e.location().map(|l| l.line() + FIRST_YAML_LINE - 1),
            message: shift_line_numbers(&e.to_string(), FIRST_YAML_LINE - 1),
        }),
    }
}

/// Rewrites every `line N` in a serde_yaml message to `line N+shift`.
fn shift_line_numbers(message: &str, shift: usize) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(p) = rest.find("line ") {
        let (before, after) = rest.split_at(p + "line ".len());
        out.push_str(before);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match after.get(..digits).and_then(|d| d.parse::<usize>().ok()) {
            Some(n) => out.push_str(&(n + shift).to_string()),
            None => out.push_str(after.get(..digits).unwrap_or_default()),
        }
        rest = after.get(digits..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

fn untag(value: Value) -> Value {
    match value {
        Value::Tagged(t) => untag(t.value),
        v => v,
    }
}

fn shape(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a map",
        Value::Tagged(t) => shape(&t.value),
    }
}

/// A mapping key as the name a person would type, if it is a scalar.
pub(crate) fn key_name(key: &Value) -> Option<String> {
    match key {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Tagged(t) => key_name(&t.value),
        Value::Null | Value::Sequence(_) | Value::Mapping(_) => None,
    }
}

/// Reads a located block into a [`Frontmatter`], recording every problem.
pub(crate) fn decode(block: &Block<'_>, lint: &mut Vec<LintIssue>) -> Frontmatter {
    decode_and_inspect(block, lint, |_| ())
}

/// [`decode`], showing the parsed mapping to `inspect` first (the
/// schemas read the same fields without parsing the YAML again).
pub(crate) fn decode_and_inspect(
    block: &Block<'_>,
    lint: &mut Vec<LintIssue>,
    inspect: impl FnOnce(&Mapping),
) -> Frontmatter {
    match parse_yaml(block.yaml) {
        Ok(map) => {
            inspect(&map);
            Decoder {
                yaml: block.yaml,
                lint,
            }
            .decode(map)
        }
        Err(problem) => {
            let mut issue = problem.into_lint();
            // "title: Decision: use Postgres" is the commonest slip: its
            // fields are read as meant, so search keeps its title and
            // dates. The file stays malformed: nothing rewrites it.
            if let Some((yaml, keys)) = quoting_colons(block.yaml)
                && let Ok(map) = parse_yaml(&yaml)
            {
                issue.message.push_str(&format!(
                    "; read as if the value of {} were quoted",
                    keys.join(", ")
                ));
                lint.push(issue);
                inspect(&map);
                let mut frontmatter = Decoder { yaml: &yaml, lint }.decode(map);
                if frontmatter.scope.is_none() {
                    frontmatter.scope = scope_as_written(block.yaml);
                }
                return frontmatter;
            }
            lint.push(issue);
            Frontmatter {
                scope: scope_as_written(block.yaml),
                ..Frontmatter::default()
            }
        }
    }
}

/// `yaml` with each top-level plain value that holds `": "` quoted, and
/// the keys quoted; `None` if there is none. YAML reads
/// `title: Decision: use Postgres` as a map inside a map, and refuses it.
fn quoting_colons(yaml: &str) -> Option<(String, Vec<String>)> {
    let mut keys = Vec::new();
    let mut out = String::with_capacity(yaml.len() + 16);
    for line in yaml.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let quoted = (!body.starts_with([' ', '\t', '#', '-']))
            .then(|| body.split_once(": "))
            .flatten()
            .filter(|(key, value)| {
                let value = value.trim_start();
                !key.is_empty()
                    && !key.contains(['"', '\'', '[', '{', '#'])
                    && value.contains(": ")
                    && !value.starts_with(['"', '\'', '[', '{', '|', '>', '&', '*', '!', '#'])
            });
        match quoted {
            Some((key, value)) => {
                let value = value.trim();
                out.push_str(key);
                out.push_str(": ");
                out.push_str(&serde_json::to_string(value).unwrap_or_default());
                out.push_str(&line[body.len()..]);
                keys.push(format!("`{key}`"));
            }
            None => out.push_str(line),
        }
    }
    (!keys.is_empty()).then_some((out, keys))
}

/// The `scope:` that frontmatter YAML could not read names, found by its
/// lines: a memory whose scope cannot be read stays hidden from the
/// sessions of other scopes (see `ops/scope.rs`), never shown to all.
/// Quotes and brackets around it are dropped; an empty one is no scope.
pub(crate) fn scope_as_written(yaml: &str) -> Option<String> {
    yaml.lines()
        .filter_map(|line| {
            let line = line.trim_start_matches([' ', '\t']);
            let unquoted = line
                .strip_prefix(['"', '\''])
                .and_then(|l| l.strip_prefix("scope"))
                .and_then(|l| l.strip_prefix(['"', '\'']));
            unquoted
                .or_else(|| line.strip_prefix("scope"))?
                .trim_start_matches([' ', '\t'])
                .strip_prefix(':')
        })
        .map(|value| {
            value
                .split(" #")
                .next()
                .unwrap_or_default()
                .trim_matches(|c: char| c.is_whitespace() || "\"'[]{}-".contains(c))
                .to_owned()
        })
        .find(|value| !value.is_empty())
}

struct Decoder<'a> {
    yaml: &'a str,
    lint: &'a mut Vec<LintIssue>,
}

/// How a scalar list given as one string is split.
#[derive(Clone, Copy)]
enum Split {
    /// `tags: a, b c` — tags cannot contain spaces.
    CommasAndSpaces,
    /// `links: a, b` — a `[[Title]]` may contain spaces.
    Commas,
    /// `aliases: Smith, John` is one alias.
    Never,
}

impl Decoder<'_> {
    fn decode(mut self, map: Mapping) -> Frontmatter {
        let mut fm = Frontmatter::default();
        for (key, value) in map {
            let Some(name) = key_name(&key) else {
                self.warn(
                    None,
                    format!("ignored a frontmatter key that is {}", shape(&key)),
                );
                continue;
            };
            let value = untag(value);
            match name.as_str() {
                "id" => fm.id = self.string(&name, &value),
                "title" => fm.title = self.string(&name, &value),
                "type" => fm.kind = self.string(&name, &value),
                "source" => fm.source = self.string(&name, &value),
                "status" => fm.status = self.string(&name, &value),
                "content_hash" => fm.content_hash = self.string(&name, &value),
                "scope" => fm.scope = self.scope(&name, &value),
                "phase" => fm.phase = self.named(&name, &value),
                "category" => fm.category = self.named(&name, &value),
                "created_at" => fm.created_at = self.date(&name, &value),
                "updated_at" => fm.updated_at = self.date(&name, &value),
                "expires_at" => fm.expires_at = self.date(&name, &value),
                "version" => fm.version = self.count(&name, &value),
                "access_count" => fm.access_count = self.count(&name, &value),
                // `tag` and `alias` are Obsidian's older spellings.
                "tags" | "tag" => {
                    let tags = self.list(&name, &value, Split::CommasAndSpaces);
                    fm.tags.extend(tags.into_iter().filter_map(|t| {
                        let t = t.trim();
                        let t = t.strip_prefix('#').unwrap_or(t).trim();
                        (!t.is_empty()).then(|| t.to_owned())
                    }));
                }
                "aliases" | "alias" => fm.aliases.extend(self.list(&name, &value, Split::Never)),
                "links" => fm.links = self.list(&name, &value, Split::Commas),
                _ => {
                    fm.extra.insert(name, value);
                }
            }
        }
        fm
    }

    fn warn(&mut self, line: Option<usize>, message: String) {
        self.lint.push(LintIssue {
            kind: LintKind::InvalidField,
            line,
            message,
        });
    }

    fn warn_field(&mut self, name: &str, message: String) {
        let line = key_line(self.yaml, name);
        self.warn(line, format!("field `{name}` {message}"));
    }

    fn string(&mut self, name: &str, value: &Value) -> Option<String> {
        match scalar_text(value) {
            Ok(s) => s.filter(|s| !s.trim().is_empty()),
            Err(found) => {
                self.warn_field(name, format!("should be text, found {found}; ignored"));
                None
            }
        }
    }

    fn scope(&mut self, name: &str, value: &Value) -> Option<String> {
        // A list or a map is no scope, but it names one: as written, so
        // that no other scope's session sees the memory.
        if let Err(found) = scalar_text(value) {
            self.warn_field(
                name,
                format!("should be `global` or `agent:<name>`, found {found}"),
            );
            let written = serde_yaml::to_string(value).unwrap_or_default();
            return scope_as_written(&format!("scope: {}", written.replace('\n', " ")))
                .or_else(|| Some(found.to_owned()));
        }
        let scope = self.string(name, value)?;
        let valid = scope == "global"
            || scope
                .strip_prefix("agent:")
                .is_some_and(|a| !a.trim().is_empty());
        if !valid {
            self.warn_field(
                name,
                format!("should be `global` or `agent:<name>`, found `{scope}`"),
            );
        }
        Some(scope)
    }

    fn named<T: std::str::FromStr<Err = super::category::UnknownName>>(
        &mut self,
        name: &str,
        value: &Value,
    ) -> Option<T> {
        let text = self.string(name, value)?;
        match text.parse::<T>() {
            Ok(v) => Some(v),
            Err(e) => {
                self.warn_field(name, format!("has {e}; ignored"));
                None
            }
        }
    }

    fn date(&mut self, name: &str, value: &Value) -> Option<String> {
        let text = self.string(name, value)?;
        if parse_timestamp(&text).is_none() {
            self.warn_field(
                name,
                format!("is not a date (YYYY-MM-DD or RFC 3339): `{text}`"),
            );
        }
        Some(text)
    }

    fn count(&mut self, name: &str, value: &Value) -> Option<u64> {
        let parsed = match value {
            Value::Null => return None,
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        if parsed.is_none() {
            let found = match value {
                Value::Number(n) => format!("`{n}`"),
                Value::String(s) => format!("`{s}`"),
                other => shape(other).to_owned(),
            };
            self.warn_field(
                name,
                format!("should be a whole number, found {found}; ignored"),
            );
        }
        parsed
    }

    fn list(&mut self, name: &str, value: &Value, split: Split) -> Vec<String> {
        let mut out = Vec::new();
        match value {
            Value::Sequence(items) => {
                let mut skipped = None;
                for item in items {
                    match scalar_text(&untag(item.clone())) {
                        Ok(Some(s)) if !s.trim().is_empty() => out.push(s.trim().to_owned()),
                        Ok(_) => {}
                        Err(found) => skipped = Some(found),
                    }
                }
                if let Some(found) = skipped {
                    self.warn_field(name, format!("has an entry that is {found}; skipped"));
                }
            }
            Value::Mapping(_) => {
                self.warn_field(name, "should be a list, found a map; ignored".to_owned());
            }
            scalar => {
                if let Ok(Some(s)) = scalar_text(scalar) {
                    let pieces: Vec<&str> = match split {
                        Split::CommasAndSpaces => {
                            s.split(|c: char| c == ',' || c.is_whitespace()).collect()
                        }
                        Split::Commas => s.split(',').collect(),
                        Split::Never => vec![s.as_str()],
                    };
                    out.extend(
                        pieces
                            .into_iter()
                            .map(str::trim)
                            .filter(|p| !p.is_empty())
                            .map(str::to_owned),
                    );
                }
            }
        }
        out
    }
}

/// A scalar as text (`Ok(None)` for null), or the shape it has instead.
fn scalar_text(value: &Value) -> Result<Option<String>, &'static str> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Tagged(t) => scalar_text(&t.value),
        Value::Sequence(_) | Value::Mapping(_) => Err(shape(value)),
    }
}

/// The file line on which top-level `key:` is written, for lint messages.
fn key_line(yaml: &str, key: &str) -> Option<usize> {
    yaml.lines()
        .position(|line| {
            let unquoted = line
                .strip_prefix(['"', '\''])
                .and_then(|l| l.strip_prefix(key))
                .and_then(|l| l.strip_prefix(['"', '\'']));
            unquoted
                .or_else(|| line.strip_prefix(key))
                .is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':'))
        })
        .map(|i| i + FIRST_YAML_LINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Frontmatter, Vec<LintIssue>) {
        let mut lint = Vec::new();
        let fm = match locate(text) {
            Located::Found(block) => decode(&block, &mut lint),
            _ => Frontmatter::default(),
        };
        (fm, lint)
    }

    #[test]
    fn locate_plain_bom_crlf_and_dots() {
        let text = "---\ntitle: x\n---\nbody";
        let Located::Found(b) = locate(text) else {
            panic!("not found")
        };
        assert_eq!(
            (b.span.clone(), b.yaml, b.crlf),
            (0..17, "title: x\n", false)
        );
        assert_eq!(&text[b.span.end..], "body");

        let text = "\u{feff}---\r\ntitle: x\r\n...\r\nbody";
        let Located::Found(b) = locate(text) else {
            panic!("not found")
        };
        assert_eq!((b.span.start, b.yaml, b.crlf), (3, "title: x\r\n", true));
        assert_eq!(&text[b.span.end..], "body");
    }

    #[test]
    fn locate_edge_cases() {
        assert_eq!(locate(""), Located::Absent { body_start: 0 });
        assert_eq!(locate("\u{feff}# hi"), Located::Absent { body_start: 3 });
        assert_eq!(locate("--- \nx\n"), Located::Unclosed { body_start: 0 });
        assert_eq!(locate("----\nx\n---\n"), Located::Absent { body_start: 0 });
        assert_eq!(
            locate("text\n---\na: 1\n---\n"),
            Located::Absent { body_start: 0 }
        );
        let Located::Found(b) = locate("---\n---") else {
            panic!("not found")
        };
        assert_eq!((b.span, b.yaml), (0..7, ""));
    }

    #[test]
    fn all_known_fields() {
        let (fm, lint) = read(
            "---\nid: 550e8400-e29b-41d4-a716-446655440000\ntitle: Dark mode\ntype: memory\n\
             phase: Organized\ncategory: preferences\nscope: agent:claude\ntags:\n  - ui\n  - '#Pref'\n\
             source: claude\nstatus: open\ncreated_at: 2026-05-07T10:00:00Z\nupdated_at: 2026-05-08\n\
             expires_at: null\nlinks: [7f8d9e00, '[[Other Note]]']\nversion: 3\ncontent_hash: abc\n\
             access_count: '7'\naliases: [dm, Dunkel]\ncustom: {a: 1}\n---\n",
        );
        assert!(lint.is_empty(), "{lint:?}");
        assert_eq!(
            fm.id.as_deref(),
            Some("550e8400-e29b-41d4-a716-446655440000")
        );
        assert_eq!(fm.title.as_deref(), Some("Dark mode"));
        assert_eq!(fm.kind.as_deref(), Some("memory"));
        assert_eq!(fm.phase, Some(Phase::Organized));
        assert_eq!(fm.category, Some(Category::Preferences));
        assert_eq!(fm.scope.as_deref(), Some("agent:claude"));
        assert_eq!(fm.tags, ["ui", "Pref"]);
        assert_eq!(fm.source.as_deref(), Some("claude"));
        assert_eq!(fm.status.as_deref(), Some("open"));
        assert_eq!(fm.created_at.as_deref(), Some("2026-05-07T10:00:00Z"));
        assert_eq!(fm.updated_at.as_deref(), Some("2026-05-08"));
        assert_eq!(fm.expires_at, None);
        assert_eq!(fm.links, ["7f8d9e00", "[[Other Note]]"]);
        assert_eq!(fm.version, Some(3));
        assert_eq!(fm.content_hash.as_deref(), Some("abc"));
        assert_eq!(fm.access_count, Some(7));
        assert_eq!(fm.aliases, ["dm", "Dunkel"]);
        assert_eq!(fm.extra.len(), 1);
        assert!(fm.extra.contains_key("custom"));
    }

    #[test]
    fn tags_in_every_shape() {
        for yaml in [
            "tags: foo",
            "tags: [foo, bar]",
            "tags:\n- foo\n- bar",
            "tags: foo, bar",
            "tags: foo bar",
            "tag: '#foo, #bar'",
        ] {
            let (fm, lint) = read(&format!("---\n{yaml}\n---\n"));
            assert!(lint.is_empty(), "{yaml}: {lint:?}");
            assert_eq!(fm.tags.first().map(String::as_str), Some("foo"), "{yaml}");
            assert!(fm.tags.len() <= 2 && fm.tags.iter().all(|t| t == "foo" || t == "bar"));
        }
        let (fm, _) = read("---\ntags: 2024\n---\n");
        assert_eq!(fm.tags, ["2024"]);
    }

    #[test]
    fn wrongly_typed_fields_are_lint_not_failure() {
        let (fm, lint) = read(
            "---\ntitle: [a, b]\ntags: {a: 1}\nversion: -2\naccess_count: many\n\
             category: work\nphase: done\ncreated_at: yesterday\nscope: everyone\nsource: ok\n---\n",
        );
        assert_eq!(fm.title, None);
        assert!(fm.tags.is_empty());
        assert_eq!((fm.version, fm.access_count), (None, None));
        assert_eq!((fm.category, fm.phase), (None, None));
        // Kept despite the warning: dates and scopes are stored as written.
        assert_eq!(fm.created_at.as_deref(), Some("yesterday"));
        assert_eq!(fm.scope.as_deref(), Some("everyone"));
        assert_eq!(fm.source.as_deref(), Some("ok"));
        let messages: Vec<_> = lint.iter().map(|l| (l.line, l.message.as_str())).collect();
        assert_eq!(
            messages,
            [
                (
                    Some(2),
                    "field `title` should be text, found a list; ignored"
                ),
                (
                    Some(3),
                    "field `tags` should be a list, found a map; ignored"
                ),
                (
                    Some(4),
                    "field `version` should be a whole number, found `-2`; ignored"
                ),
                (
                    Some(5),
                    "field `access_count` should be a whole number, found `many`; ignored"
                ),
                (
                    Some(6),
                    "field `category` has unknown category `work`; ignored"
                ),
                (Some(7), "field `phase` has unknown phase `done`; ignored"),
                (
                    Some(8),
                    "field `created_at` is not a date (YYYY-MM-DD or RFC 3339): `yesterday`"
                ),
                (
                    Some(9),
                    "field `scope` should be `global` or `agent:<name>`, found `everyone`"
                ),
            ]
        );
        assert!(lint.iter().all(|l| l.kind == LintKind::InvalidField));
    }

    #[test]
    fn scalars_of_other_types_become_text() {
        let (fm, lint) = read("---\ntitle: 2024\nid: 42\nstatus: true\n---\n");
        assert!(lint.is_empty());
        assert_eq!(fm.title.as_deref(), Some("2024"));
        assert_eq!(fm.id.as_deref(), Some("42"));
        assert_eq!(fm.status.as_deref(), Some("true"));
    }

    #[test]
    fn list_entries_of_the_wrong_shape_are_skipped() {
        let (fm, lint) = read("---\ntags: [a, [b], {c: 1}, 3]\n---\n");
        assert_eq!(fm.tags, ["a", "3"]);
        assert_eq!(lint.len(), 1);
    }

    #[test]
    fn malformed_yaml_reports_file_lines() {
        let (fm, lint) = read("---\ntitle: 'unclosed\nid: 3\n---\n");
        assert_eq!(fm, Frontmatter::default());
        assert_eq!(lint.len(), 1);
        assert_eq!(lint[0].kind, LintKind::MalformedFrontmatter);
        assert_eq!(lint[0].line, Some(4));
        assert_eq!(
            lint[0].message,
            "malformed frontmatter: found unexpected end of stream at line 4 column 1, \
             while scanning a quoted scalar at line 2 column 8"
        );

        let (_, lint) = read("---\ntitle: x\n\tid: 3\n---\n");
        assert_eq!(lint[0].line, Some(3));
        assert!(lint[0].message.contains("tab"), "{}", lint[0].message);
    }

    #[test]
    fn a_list_or_scalar_is_not_frontmatter() {
        let (fm, lint) = read("---\n- a\n- b\n---\n");
        assert_eq!(fm, Frontmatter::default());
        assert_eq!(
            lint[0].message,
            "frontmatter is a list, not a map of fields"
        );
        let (_, lint) = read("---\njust words\n---\n");
        assert_eq!(
            lint[0].message,
            "frontmatter is a string, not a map of fields"
        );
    }

    #[test]
    fn empty_and_comment_only_blocks_are_empty_maps() {
        assert_eq!(read("---\n---\n").1, []);
        assert_eq!(read("---\n# nothing yet\n\n---\n").1, []);
    }

    #[test]
    fn non_string_keys_are_kept_as_names_or_reported() {
        let (fm, lint) = read("---\n1: one\n? [a]\n: list key\n---\n");
        assert!(fm.extra.contains_key("1"));
        assert_eq!(lint.len(), 1);
    }

    #[test]
    fn empty_strings_are_absent() {
        let (fm, lint) = read("---\ntitle: ''\nid:\n---\n");
        assert_eq!((fm.title, fm.id), (None, None));
        assert!(lint.is_empty());
    }

    #[test]
    fn shifted_line_numbers() {
        assert_eq!(
            shift_line_numbers("x at line 3 column 1, y at line 10", 1),
            "x at line 4 column 1, y at line 11"
        );
        assert_eq!(shift_line_numbers("line x", 1), "line x");
    }
}
