//! Surgical frontmatter edits.
//!
//! The normalizer adds missing fields (`id`, `created_at`, `phase`,
//! `category`) to files people also edit by hand and keep in git, so an
//! edit must be invisible except for the new lines: existing keys,
//! comments, quoting, order and blank lines stay byte for byte, and so
//! does the body. That rules out "parse, modify, serialize"; instead new
//! `key: value` lines are inserted just before the closing delimiter.
//!
//! Appending at column 0 is not safe for every YAML document (a flow
//! mapping `{a: 1}`, or a document whose keys are all indented), so the
//! edited block is parsed again and must read as the old map plus exactly
//! the new keys; anything else is refused and the caller leaves the file
//! alone.

use serde_yaml::{Mapping, Value};

use super::frontmatter::{Located, YamlProblem, key_name, locate, parse_yaml};

/// Why frontmatter could not be edited. The file must then be left as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The file opens with `---` but has no closing delimiter line.
    #[error("frontmatter opened on line 1 is never closed")]
    UnclosedFrontmatter,
    /// The YAML in the block does not parse.
    #[error("malformed frontmatter: {message}")]
    MalformedFrontmatter {
        /// File line of the error, when known.
        line: Option<usize>,
        /// The YAML parser's message, with file line numbers.
        message: String,
    },
    /// The block parses to something other than a map.
    #[error("frontmatter is {found}, not a map of fields")]
    NotAMapping {
        /// What it is instead ("a list", "a string", ...).
        found: &'static str,
    },
    /// A key to add is not a plain identifier (`[A-Za-z0-9_-]`, not
    /// starting with `-`).
    #[error("`{0}` is not a plain frontmatter key")]
    InvalidKey(String),
    /// Appending lines would change how existing fields read.
    #[error("adding fields would change how the existing frontmatter reads")]
    WouldChangeMeaning,
    /// The file opens with a TOML block (`+++`, as Hugo and Zola write
    /// it): a YAML block above it would break the page for those tools.
    #[error("the file opens with TOML frontmatter (+++), which mnemofs does not read or change")]
    TomlFrontmatter,
}

impl From<YamlProblem> for EditError {
    fn from(problem: YamlProblem) -> Self {
        match problem {
            YamlProblem::Syntax { line, message } => {
                EditError::MalformedFrontmatter { line, message }
            }
            YamlProblem::NotAMapping { found } => EditError::NotAMapping { found },
        }
    }
}

/// Whether `body` opens with a TOML frontmatter fence (`+++` alone on the
/// first line).
fn opens_with_toml(body: &str) -> bool {
    let first = body.split('\n').next().unwrap_or_default();
    first.trim_end_matches('\r') == "+++"
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('-')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Adds `key: value` lines for the `fields` whose keys the frontmatter
/// lacks, and returns the new file text.
///
/// Keys already present are left alone even when their value is empty.
/// Values are always written as YAML strings (see [`yaml_scalar`]). With no
/// frontmatter, a new block is put at the top (after a BOM, if any). Line
/// endings follow the file's. `Ok(None)` means there was nothing to add.
pub fn add_missing_fields(
    text: &str,
    fields: &[(&str, String)],
) -> Result<Option<String>, EditError> {
    if let Some((bad, _)) = fields.iter().find(|(k, _)| !is_plain_key(k)) {
        return Err(EditError::InvalidKey((*bad).to_owned()));
    }
    match locate(text) {
        Located::Unclosed { .. } => Err(EditError::UnclosedFrontmatter),
        Located::Absent { body_start } => {
            let missing = missing_fields(&Mapping::new(), fields);
            if missing.is_empty() {
                return Ok(None);
            }
            if opens_with_toml(&text[body_start..]) {
                return Err(EditError::TomlFrontmatter);
            }
            let eol = if first_line_is_crlf(text) {
                "\r\n"
            } else {
                "\n"
            };
            let yaml = render(&missing, eol);
            verify(&Mapping::new(), &yaml, &missing)?;
            let (bom, body) = text.split_at(body_start);
            Ok(Some(format!("{bom}---{eol}{yaml}---{eol}{body}")))
        }
        Located::Found(block) => {
            let existing = parse_yaml(block.yaml)?;
            let missing = missing_fields(&existing, fields);
            if missing.is_empty() {
                return Ok(None);
            }
            let eol = if block.crlf { "\r\n" } else { "\n" };
            let added = render(&missing, eol);
            verify(&existing, &format!("{}{added}", block.yaml), &missing)?;
            let (head, tail) = text.split_at(block.close_line_start);
            Ok(Some(format!("{head}{added}{tail}")))
        }
    }
}

/// Sets each `key: value`, replacing the value of a key that is already a
/// one-line top-level field and adding the others as
/// [`add_missing_fields`] does. Everything else stays byte for byte.
///
/// Used for the few fields the daemon owns (`phase` after a move, the
/// archive note). A key whose current value spans several lines (a block
/// list) is refused with [`EditError::WouldChangeMeaning`].
pub fn set_fields(text: &str, fields: &[(&str, String)]) -> Result<Option<String>, EditError> {
    if let Some((bad, _)) = fields.iter().find(|(k, _)| !is_plain_key(k)) {
        return Err(EditError::InvalidKey((*bad).to_owned()));
    }
    let Located::Found(block) = locate(text) else {
        return add_missing_fields(text, fields);
    };
    let existing = parse_yaml(block.yaml)?;
    let yaml_start = block.close_line_start - block.yaml.len();
    let mut replaced = block.yaml.to_owned();
    let mut absent = Vec::new();
    for (key, value) in fields {
        let wanted = Value::String(value.clone());
        match existing.get(Value::String((*key).to_owned())) {
            Some(current) if *current == wanted => {}
            Some(_) => replaced = replace_line_value(&replaced, key, value)?,
            None => absent.push((*key, value.clone())),
        }
    }
    if replaced == block.yaml && absent.is_empty() {
        return Ok(None);
    }
    let reread = parse_yaml(&replaced).map_err(|_| EditError::WouldChangeMeaning)?;
    let only_values_changed = reread.len() == existing.len()
        && existing.iter().all(|(k, v)| {
            let new = reread.get(k);
            match fields
                .iter()
                .find(|(f, _)| Value::String((*f).to_owned()) == *k)
            {
                Some((_, value)) => new == Some(&Value::String(value.clone())),
                None => new == Some(v),
            }
        });
    if !only_values_changed {
        return Err(EditError::WouldChangeMeaning);
    }
    let edited = format!(
        "{}{replaced}{}",
        &text[..yaml_start],
        &text[block.close_line_start..]
    );
    Ok(Some(
        add_missing_fields(&edited, &absent)?.unwrap_or(edited),
    ))
}

/// Removes the one-line top-level field `key`, every other byte staying
/// as it was. `Ok(None)`: the frontmatter has no such key. A key whose
/// value spans several lines (a block list) is refused with
/// [`EditError::WouldChangeMeaning`], as [`set_fields`] refuses it.
///
/// Used when the organizer files an agent's capture: its `expires_at`
/// was the inbox's, and an organized memory does not expire.
pub fn remove_field(text: &str, key: &str) -> Result<Option<String>, EditError> {
    if !is_plain_key(key) {
        return Err(EditError::InvalidKey(key.to_owned()));
    }
    let Located::Found(block) = locate(text) else {
        return Ok(None);
    };
    let mut existing = parse_yaml(block.yaml)?;
    if existing.remove(Value::String(key.to_owned())).is_none() {
        return Ok(None);
    }
    let mut kept = String::with_capacity(block.yaml.len());
    let mut removed = false;
    for line in block.yaml.split_inclusive('\n') {
        let is_key_line = !removed
            && line
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':'));
        if is_key_line {
            removed = true;
        } else {
            kept.push_str(line);
        }
    }
    let reread = parse_yaml(&kept).map_err(|_| EditError::WouldChangeMeaning)?;
    if !removed || reread != existing {
        return Err(EditError::WouldChangeMeaning);
    }
    let yaml_start = block.close_line_start - block.yaml.len();
    Ok(Some(format!(
        "{}{kept}{}",
        &text[..yaml_start],
        &text[block.close_line_start..]
    )))
}

/// Adds `values` to the list field `key` (creating it), keeping the
/// entries it has. A new or flow-style field is written as one line
/// (`links: [a, b]`); a block list stays one, its new entries added below
/// the others in the same indentation.
pub fn add_to_list_field(
    text: &str,
    key: &str,
    values: &[String],
) -> Result<Option<String>, EditError> {
    edit_list_field(text, key, &|current| {
        let mut merged = current.to_vec();
        for v in values {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        merged
    })
}

/// Removes from the list field `key` every entry `unwanted` says so of,
/// keeping the others in order and the line flow-style as
/// [`add_to_list_field`] writes it. `Ok(None)`: nothing was removed (the
/// field may be absent).
pub fn remove_from_list_field(
    text: &str,
    key: &str,
    unwanted: impl Fn(&str) -> bool,
) -> Result<Option<String>, EditError> {
    if !is_plain_key(key) {
        return Err(EditError::InvalidKey(key.to_owned()));
    }
    let present = match locate(text) {
        Located::Found(block) => {
            parse_yaml(block.yaml)?.contains_key(Value::String(key.to_owned()))
        }
        Located::Absent { .. } => false,
        Located::Unclosed { .. } => return Err(EditError::UnclosedFrontmatter),
    };
    if !present {
        return Ok(None);
    }
    edit_list_field(text, key, &|current| {
        current.iter().filter(|v| !unwanted(v)).cloned().collect()
    })
}

/// Sets the list field `key` to what `edit` makes of its entries.
fn edit_list_field(
    text: &str,
    key: &str,
    edit: &dyn Fn(&[String]) -> Vec<String>,
) -> Result<Option<String>, EditError> {
    if !is_plain_key(key) {
        return Err(EditError::InvalidKey(key.to_owned()));
    }
    let (existing, yaml) = match locate(text) {
        Located::Found(block) => (parse_yaml(block.yaml)?, Some(block)),
        Located::Absent { .. } => (Mapping::new(), None),
        Located::Unclosed { .. } => return Err(EditError::UnclosedFrontmatter),
    };
    let current: Vec<String> = match existing.get(Value::String(key.to_owned())) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(EditError::WouldChangeMeaning),
            })
            .collect::<Result<_, _>>()?,
        Some(Value::String(s)) if s.is_empty() => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(_) => return Err(EditError::WouldChangeMeaning),
    };
    let merged = edit(&current);
    if merged == current {
        return Ok(None);
    }
    let flow = format!(
        "[{}]",
        merged
            .iter()
            .map(|v| yaml_scalar(v))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let block = match yaml {
        Some(block) if existing.contains_key(Value::String(key.to_owned())) => block,
        // Absent: add a new line (or a new block) after the other fields.
        _ => {
            let placeholder = add_missing_fields(text, &[(key, String::new())])?
                .ok_or(EditError::WouldChangeMeaning)?;
            return edit_list_field(&placeholder, key, &|_| merged.clone());
        }
    };
    let yaml_start = block.close_line_start - block.yaml.len();
    let mut replaced = String::with_capacity(block.yaml.len() + flow.len());
    let mut done = false;
    let mut lines = block.yaml.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        let is_key_line = !done
            && line
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':'));
        if !is_key_line {
            replaced.push_str(line);
            continue;
        }
        done = true;
        let eol = &line[line.trim_end_matches(['\r', '\n']).len()..];
        let value = line[..line.len() - eol.len()]
            .split_once(':')
            .map_or("", |(_, v)| v.trim());
        if !value.is_empty() || !lines.peek().is_some_and(|l| is_block_item(l)) {
            replaced.push_str(&format!("{key}: {flow}{eol}"));
            continue;
        }
        // A block list stays one: its lines are kept, those of removed
        // entries dropped, and new entries added in its indentation.
        replaced.push_str(line);
        let mut indent = "";
        let mut kept: Vec<String> = Vec::new();
        while let Some(item) = lines.next_if(|l| is_block_item(l)) {
            indent = &item[..item.len() - item.trim_start().len()];
            let value = block_item_value(item)?;
            if merged.contains(&value) && !kept.contains(&value) {
                replaced.push_str(item);
                kept.push(value);
            }
        }
        for value in merged.iter().filter(|v| !kept.contains(v)) {
            replaced.push_str(&format!("{indent}- {}{eol}", yaml_scalar(value)));
        }
    }
    let reread = parse_yaml(&replaced).map_err(|_| EditError::WouldChangeMeaning)?;
    let expected = Value::Sequence(merged.into_iter().map(Value::String).collect());
    let others_kept = existing
        .iter()
        .all(|(k, v)| k == &Value::String(key.to_owned()) || reread.get(k) == Some(v));
    if !done
        || reread.get(Value::String(key.to_owned())) != Some(&expected)
        || !others_kept
        || reread.len() != existing.len()
    {
        return Err(EditError::WouldChangeMeaning);
    }
    Ok(Some(format!(
        "{}{replaced}{}",
        &text[..yaml_start],
        &text[block.close_line_start..]
    )))
}

/// True for a line of a block sequence (`  - item`).
fn is_block_item(line: &str) -> bool {
    let item = line.trim_start();
    item.starts_with("- ") || item.trim_end() == "-"
}

/// The string a block sequence's line holds.
fn block_item_value(line: &str) -> Result<String, EditError> {
    let parsed = parse_yaml(&format!("v:\n{line}")).map_err(|_| EditError::WouldChangeMeaning)?;
    match parsed.get(Value::String("v".into())) {
        Some(Value::Sequence(items)) => match items.as_slice() {
            [Value::String(s)] => Ok(s.clone()),
            _ => Err(EditError::WouldChangeMeaning),
        },
        _ => Err(EditError::WouldChangeMeaning),
    }
}

/// Replaces the value on the single top-level line `key: ...`.
fn replace_line_value(yaml: &str, key: &str, value: &str) -> Result<String, EditError> {
    let mut out = String::with_capacity(yaml.len() + value.len());
    let mut done = false;
    for line in yaml.split_inclusive('\n') {
        let is_key_line = !done
            && line
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start_matches([' ', '\t']).starts_with(':'));
        if is_key_line {
            let eol = if line.ends_with("\r\n") {
                "\r\n"
            } else if line.ends_with('\n') {
                "\n"
            } else {
                ""
            };
            out.push_str(&format!("{key}: {}{eol}", yaml_scalar(value)));
            done = true;
        } else {
            out.push_str(line);
        }
    }
    if done {
        Ok(out)
    } else {
        Err(EditError::WouldChangeMeaning)
    }
}

fn first_line_is_crlf(text: &str) -> bool {
    text.find('\n')
        .is_some_and(|p| p > 0 && text.as_bytes().get(p - 1) == Some(&b'\r'))
}

fn missing_fields<'a>(existing: &Mapping, fields: &'a [(&str, String)]) -> Vec<(&'a str, &'a str)> {
    let present: Vec<String> = existing.keys().filter_map(key_name).collect();
    let mut missing: Vec<(&str, &str)> = Vec::new();
    for (key, value) in fields {
        if !present.iter().any(|p| p == key) && !missing.iter().any(|(k, _)| k == key) {
            missing.push((key, value.as_str()));
        }
    }
    missing
}

fn render(fields: &[(&str, &str)], eol: &str) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{k}: {}{eol}", yaml_scalar(v)))
        .collect()
}

fn verify(existing: &Mapping, new_yaml: &str, added: &[(&str, &str)]) -> Result<(), EditError> {
    let reread = parse_yaml(new_yaml).map_err(|_| EditError::WouldChangeMeaning)?;
    let old_kept = existing.iter().all(|(k, v)| reread.get(k) == Some(v));
    let new_read = added.iter().all(|(k, v)| {
        reread.get(Value::String((*k).to_owned())) == Some(&Value::String((*v).to_owned()))
    });
    if old_kept && new_read && reread.len() == existing.len() + added.len() {
        Ok(())
    } else {
        Err(EditError::WouldChangeMeaning)
    }
}

/// Writes `s` as a YAML scalar that reads back as exactly the string `s`.
///
/// Plain when that is unambiguous, because that is what people write
/// (`phase: inbox`, `created_at: 2026-05-07T10:00:00Z`); single-quoted when
/// plain would read as something else (a number, `null`, `yes`, a leading
/// indicator, `: ` or ` #` inside); double-quoted with escapes when `s`
/// holds characters single quotes cannot carry (line breaks, controls).
/// YAML 1.1 words such as `yes`/`off` are quoted too, since other tools
/// reading the store may still treat them as booleans.
pub fn yaml_scalar(s: &str) -> String {
    if s.chars().any(needs_escape) {
        return double_quoted(s);
    }
    if is_safe_plain(s) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "''"))
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn is_safe_plain(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if s.trim() != s
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || looks_like_a_non_string(s)
    {
        return false;
    }
    // The parser is the final arbiter for anything the rules above missed.
    matches!(
        serde_yaml::from_str::<Value>(&format!("k: {s}")),
        Ok(Value::Mapping(m)) if m.get("k") == Some(&Value::String(s.to_owned()))
    )
}

fn looks_like_a_non_string(s: &str) -> bool {
    const WORDS: [&str; 11] = [
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", "=",
    ];
    let lower = s.to_ascii_lowercase();
    let bare = lower.trim_start_matches(['+', '-']).replace('_', "");
    WORDS.contains(&lower.as_str())
        || bare.parse::<f64>().is_ok()
        || [".inf", ".nan", "0x", "0o", "0b"]
            .iter()
            .any(|p| bare.starts_with(p))
        // YAML 1.1 sexagesimal numbers such as `1:30`.
        || (bare.contains(':') && bare.bytes().all(|b| b.is_ascii_digit() || b == b':' || b == b'.'))
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if needs_escape(c) => {
                let code = u32::from(c);
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02x}"));
                } else {
                    out.push_str(&format!("\\u{code:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Hugo or Zola page keeps its TOML block alone at the top.
    #[test]
    fn a_toml_block_gets_no_yaml_block_above_it() {
        let id = [("id", "x-1".to_owned())];
        for text in [
            "+++\ntitle = \"Hi\"\n+++\nbody\n",
            "\u{feff}+++\r\ntitle = 1\r\n+++\r\n",
        ] {
            assert_eq!(
                add_missing_fields(text, &id),
                Err(EditError::TomlFrontmatter)
            );
            assert_eq!(set_fields(text, &id), Err(EditError::TomlFrontmatter));
        }
        assert!(
            add_missing_fields("++ not a fence\n", &id)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn a_removed_field_takes_its_line_and_nothing_else() {
        let text = "---\r\nid: a\r\n# kept\r\nexpires_at: 2026-12-04T10:00:00Z\r\ntags: [x, y]\r\n---\r\nbody\r\n";
        assert_eq!(
            remove_field(text, "expires_at").unwrap().as_deref(),
            Some("---\r\nid: a\r\n# kept\r\ntags: [x, y]\r\n---\r\nbody\r\n")
        );
        assert_eq!(remove_field(text, "phase").unwrap(), None);
        assert_eq!(remove_field("no frontmatter\n", "id").unwrap(), None);
        let block = "---\ntags:\n  - a\n  - b\nid: x\n---\n";
        assert_eq!(
            remove_field(block, "tags"),
            Err(EditError::WouldChangeMeaning)
        );
        assert_eq!(
            remove_field(block, "a: b"),
            Err(EditError::InvalidKey("a: b".into()))
        );
    }

    #[test]
    fn list_fields_grow_in_place() {
        let text = "---\ntitle: T\nlinks: [a]\n---\nbody\n";
        let out = add_to_list_field(text, "links", &["b".into(), "a".into()])
            .unwrap()
            .unwrap();
        assert_eq!(out, "---\ntitle: T\nlinks: [a, b]\n---\nbody\n");
        assert_eq!(
            add_to_list_field(&out, "links", &["b".into()]).unwrap(),
            None
        );
        let fresh = add_to_list_field("---\ntitle: T\n---\nx\n", "links", &["id-1".into()])
            .unwrap()
            .unwrap();
        assert_eq!(fresh, "---\ntitle: T\nlinks: [id-1]\n---\nx\n");
        let none = add_to_list_field("x\n", "links", &["id-1".into()])
            .unwrap()
            .unwrap();
        assert_eq!(none, "---\nlinks: [id-1]\n---\nx\n");
        let block = "---\nlinks:\n  - a\n# kept\n---\n";
        assert_eq!(
            add_to_list_field(block, "links", &["b c".into()]).unwrap(),
            Some("---\nlinks:\n  - a\n  - b c\n# kept\n---\n".into())
        );
    }

    #[test]
    fn list_fields_shrink_in_place() {
        let flow = "---\nlinks: [a, b, a]\n---\nbody\n";
        let out = remove_from_list_field(flow, "links", |v| v == "a").unwrap();
        assert_eq!(out.as_deref(), Some("---\nlinks: [b]\n---\nbody\n"));
        let block = "---\ntags:\n- x\n- 'y'\ntitle: T\n---\n";
        let out = remove_from_list_field(block, "tags", |v| v == "y").unwrap();
        assert_eq!(out.as_deref(), Some("---\ntags:\n- x\ntitle: T\n---\n"));
        assert_eq!(
            remove_from_list_field(block, "tags", |v| v == "z"),
            Ok(None)
        );
        assert_eq!(remove_from_list_field(block, "links", |_| true), Ok(None));
        let nested = "---\ntags:\n  - - x\n---\n";
        assert_eq!(
            remove_from_list_field(nested, "tags", |_| true),
            Err(EditError::WouldChangeMeaning)
        );
    }

    #[test]
    fn set_fields_replaces_one_line_values_and_keeps_the_rest() {
        let text = "---\n# keep me\ntitle: T\nphase: inbox\ntags: [a]\n---\nbody: x\n";
        let out = set_fields(
            text,
            &[
                ("phase", "organized".into()),
                ("archived_reason", "expired".into()),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            out,
            "---\n# keep me\ntitle: T\nphase: organized\ntags: [a]\narchived_reason: expired\n---\nbody: x\n"
        );
        assert_eq!(
            set_fields(&out, &[("phase", "organized".into())]).unwrap(),
            None
        );
        let block_list = "---\nphase:\n  - a\n---\n";
        assert_eq!(
            set_fields(block_list, &[("phase", "b".into())]),
            Err(EditError::WouldChangeMeaning)
        );
        assert_eq!(
            set_fields("no frontmatter\n", &[("phase", "inbox".into())])
                .unwrap()
                .unwrap(),
            "---\nphase: inbox\n---\nno frontmatter\n"
        );
    }

    fn fields(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
        pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
    }

    fn add(text: &str, pairs: &[(&'static str, &str)]) -> Result<Option<String>, EditError> {
        add_missing_fields(text, &fields(pairs))
    }

    #[test]
    fn appends_before_the_closing_line_and_keeps_everything_else() {
        let text = "---\n# my notes\ntitle:   \"Dark  mode\"   # quoted on purpose\n\
                    tags: [ui,  pref]\n\nid:\n---\n# Body\n\n- [x] keep   me\n";
        let out = add(
            text,
            &[
                ("id", "new"),
                ("phase", "inbox"),
                ("category", "preferences"),
            ],
        );
        let expected = "---\n# my notes\ntitle:   \"Dark  mode\"   # quoted on purpose\n\
                        tags: [ui,  pref]\n\nid:\nphase: inbox\ncategory: preferences\n---\n\
                        # Body\n\n- [x] keep   me\n";
        assert_eq!(out, Ok(Some(expected.to_owned())));
    }

    #[test]
    fn nothing_to_add_is_none() {
        assert_eq!(add("---\nid: ''\n---\nx", &[("id", "new")]), Ok(None));
        assert_eq!(add("anything", &[]), Ok(None));
    }

    #[test]
    fn without_frontmatter_a_block_is_prepended() {
        assert_eq!(
            add("body\n", &[("id", "a"), ("id", "b")]),
            Ok(Some("---\nid: a\n---\nbody\n".into()))
        );
        assert_eq!(
            add("", &[("id", "a")]),
            Ok(Some("---\nid: a\n---\n".into()))
        );
        assert_eq!(
            add("\u{feff}body\r\nmore\n", &[("id", "a")]),
            Ok(Some("\u{feff}---\r\nid: a\r\n---\r\nbody\r\nmore\n".into()))
        );
    }

    #[test]
    fn crlf_files_get_crlf_lines() {
        let text = "---\r\ntitle: x\r\n---\r\nbody\r\n";
        assert_eq!(
            add(text, &[("phase", "inbox")]),
            Ok(Some(
                "---\r\ntitle: x\r\nphase: inbox\r\n---\r\nbody\r\n".into()
            ))
        );
    }

    #[test]
    fn dots_closing_line_and_empty_block() {
        assert_eq!(
            add("---\na: 1\n...\nb", &[("id", "x")]),
            Ok(Some("---\na: 1\nid: x\n...\nb".into()))
        );
        assert_eq!(
            add("---\n---", &[("id", "x")]),
            Ok(Some("---\nid: x\n---".into()))
        );
    }

    #[test]
    fn block_scalars_and_lists_at_the_end_are_closed_properly() {
        let text = "---\nnotes: |\n  line one\n  line two\ntags:\n- a\n---\n";
        let out = add(text, &[("id", "x")]);
        assert_eq!(
            out,
            Ok(Some(
                "---\nnotes: |\n  line one\n  line two\ntags:\n- a\nid: x\n---\n".into()
            ))
        );
    }

    #[test]
    fn malformed_frontmatter_is_refused() {
        assert!(matches!(
            add("---\ntitle: 'oops\n---\n", &[("id", "x")]),
            Err(EditError::MalformedFrontmatter { line: Some(_), .. })
        ));
        assert_eq!(
            add("---\n- a\n---\n", &[("id", "x")]),
            Err(EditError::NotAMapping { found: "a list" })
        );
        assert_eq!(
            add("---\ntitle: x\n", &[("id", "x")]),
            Err(EditError::UnclosedFrontmatter)
        );
    }

    #[test]
    fn edits_that_would_change_meaning_are_refused() {
        assert_eq!(
            add("---\n{a: 1}\n---\n", &[("id", "x")]),
            Err(EditError::WouldChangeMeaning)
        );
        assert_eq!(
            add("---\n  a: 1\n---\n", &[("id", "x")]),
            Err(EditError::WouldChangeMeaning)
        );
    }

    #[test]
    fn bad_keys_are_refused() {
        for key in ["", "a b", "a:b", "-x", "#c"] {
            assert_eq!(
                add_missing_fields("x", &[(key, "v".to_owned())]),
                Err(EditError::InvalidKey(key.to_owned()))
            );
        }
    }

    #[test]
    fn values_are_quoted_when_needed() {
        let cases = [
            ("inbox", "inbox"),
            ("2026-05-07T10:00:00Z", "2026-05-07T10:00:00Z"),
            (
                "550e8400-e29b-41d4-a716-446655440000",
                "550e8400-e29b-41d4-a716-446655440000",
            ),
            ("agent:claude", "agent:claude"),
            ("中文", "中文"),
            ("", "''"),
            ("yes", "'yes'"),
            ("Null", "'Null'"),
            ("42", "'42'"),
            ("1e3", "'1e3'"),
            ("0x1F", "'0x1F'"),
            ("1:30", "'1:30'"),
            ("-5", "'-5'"),
            (".inf", "'.inf'"),
            ("a: b", "'a: b'"),
            ("a #b", "'a #b'"),
            ("#tag", "'#tag'"),
            ("it's", "it's"),
            ("'q'", "'''q'''"),
            (" pad", "' pad'"),
            ("[x]", "'[x]'"),
            ("two\nlines", "\"two\\nlines\""),
            ("tab\there \"q\" \\", "\"tab\\there \\\"q\\\" \\\\\""),
            ("bell\u{7}", "\"bell\\x07\""),
            ("\u{2028}", "\"\\u2028\""),
        ];
        for (input, want) in cases {
            assert_eq!(yaml_scalar(input), want, "{input:?}");
            let doc = format!("k: {}", yaml_scalar(input));
            let back: Result<Mapping, _> = serde_yaml::from_str(&doc);
            assert_eq!(
                back.ok().and_then(|m| m.get("k").cloned()),
                Some(Value::String(input.to_owned())),
                "{doc:?}"
            );
        }
    }
}
