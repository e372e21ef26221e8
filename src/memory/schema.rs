//! Frontmatter schemas: what fields a memory of a given `type` should have.
//!
//! A schema lists fields with a type (`string`, `list`, `date`, `number`,
//! `boolean`, `uuid`), whether it is required, and optionally the values it
//! may take. Checking only ever produces warnings for `.mnemofs/lint`; a
//! write is never blocked. The `memory` schema applies to every memory;
//! a memory whose `type:` has a schema of its own is checked against that
//! too. The built-in schemas are the files in the repository's `schemas/`
//! folder; users add or override them with YAML files of the same shape.
//!
//! A schema may also name the `## ` sections a body must have. Only a check
//! of a whole file ([`SchemaSet::check`]) looks at them, as the checkpoint
//! does for the note it wrote; the index's lint reads frontmatter alone,
//! so a hand-written note is not flagged for its headings.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_yaml::{Mapping, Value};

use super::frontmatter::{Located, locate, parse_yaml};

/// The kinds of value a field may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    /// A scalar read as text.
    String,
    /// A sequence (or a single scalar, read as one item).
    List,
    /// A date or date-time (RFC 3339, `YYYY-MM-DD`, ...).
    Date,
    /// An integer or decimal number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A UUID such as the ids the normalizer writes.
    Uuid,
}

/// The rule for one field.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRule {
    /// What the value must look like.
    #[serde(rename = "type")]
    pub kind: FieldType,
    /// Warn when the field is missing.
    #[serde(default)]
    pub required: bool,
    /// The values allowed, if limited.
    #[serde(default)]
    pub values: Vec<String>,
}

/// The schema of one memory type.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// The `type:` value it applies to (`memory` applies to all).
    #[serde(rename = "type")]
    pub kind: String,
    /// Field rules by key.
    #[serde(default)]
    pub fields: BTreeMap<String, FieldRule>,
    /// Headings of `## ` sections the body must have, as written after
    /// the `## `.
    #[serde(default)]
    pub sections: Vec<String>,
}

impl Schema {
    /// Reads a schema file.
    pub fn from_yaml(text: &str) -> Result<Schema, String> {
        serde_yaml::from_str(text).map_err(|e| format!("invalid schema: {e}"))
    }

    fn check(&self, fields: &Mapping, out: &mut Vec<String>) {
        for (key, rule) in &self.fields {
            match fields.get(Value::String(key.clone())) {
                None | Some(Value::Null) if rule.required => {
                    out.push(format!(
                        "{} schema: missing required field `{key}`",
                        self.kind
                    ));
                }
                None | Some(Value::Null) => {}
                Some(value) => {
                    if let Some(problem) = rule.problem(value) {
                        out.push(format!("{} schema: field `{key}` {problem}", self.kind));
                    }
                }
            }
        }
    }

    fn check_sections(&self, body: &str, out: &mut Vec<String>) {
        for section in &self.sections {
            if !headings(body).any(|h| h == section) {
                out.push(format!(
                    "{} schema: missing section `## {section}`",
                    self.kind
                ));
            }
        }
    }
}

/// The `## ` headings of a body, outside fenced code blocks, trimmed.
pub fn headings(body: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    body.lines().filter_map(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        line.strip_prefix("## ").filter(|_| !fenced).map(str::trim)
    })
}

impl FieldRule {
    fn problem(&self, value: &Value) -> Option<String> {
        let text = match value {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        let fits = match self.kind {
            FieldType::String => text.is_some(),
            FieldType::List => matches!(value, Value::Sequence(_)) || text.is_some(),
            FieldType::Number => matches!(value, Value::Number(_)),
            FieldType::Boolean => matches!(value, Value::Bool(_)),
            FieldType::Date => text
                .as_deref()
                .is_some_and(|t| super::parse_timestamp(t).is_some()),
            FieldType::Uuid => text.as_deref().is_some_and(is_uuid),
        };
        if !fits {
            return Some(format!("should be a {:?}", self.kind).to_lowercase());
        }
        match (&text, self.values.is_empty()) {
            (Some(t), false) if !self.values.contains(t) => Some(format!(
                "is `{t}`, expected one of: {}",
                self.values.join(", ")
            )),
            _ => None,
        }
    }
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The schemas in force, by type.
#[derive(Clone, Debug, Default)]
pub struct SchemaSet {
    schemas: BTreeMap<String, Schema>,
}

const BUILTIN: [&str; 4] = [
    include_str!("../../schemas/memory.yaml"),
    include_str!("../../schemas/session.yaml"),
    include_str!("../../schemas/decision.yaml"),
    include_str!("../../schemas/task.yaml"),
];

impl SchemaSet {
    /// The schemas shipped in `schemas/`.
    pub fn builtin() -> SchemaSet {
        let mut set = SchemaSet::default();
        for text in BUILTIN {
            if let Ok(schema) = Schema::from_yaml(text) {
                set.add(schema);
            }
        }
        set
    }

    /// Adds (or replaces) the schema for its type.
    pub fn add(&mut self, schema: Schema) {
        self.schemas.insert(schema.kind.clone(), schema);
    }

    /// Warnings for a memory file's text, its sections included. Files
    /// without frontmatter, or with malformed frontmatter (reported
    /// elsewhere), give none.
    pub fn check(&self, text: &str) -> Vec<String> {
        let Located::Found(block) = locate(text) else {
            return Vec::new();
        };
        let Ok(fields) = parse_yaml(block.yaml) else {
            return Vec::new();
        };
        let mut out = self.check_fields(&fields);
        let body = text.get(block.span.end..).unwrap_or_default();
        for schema in self.applying(&fields) {
            schema.check_sections(body, &mut out);
        }
        out
    }

    /// Warnings for a memory's frontmatter, already read into `fields`.
    pub(crate) fn check_fields(&self, fields: &Mapping) -> Vec<String> {
        let mut out = Vec::new();
        for schema in self.applying(fields) {
            schema.check(fields, &mut out);
        }
        out
    }

    /// The schemas a memory with these fields answers to: `memory`, then
    /// its type's own.
    fn applying<'a>(&'a self, fields: &Mapping) -> impl Iterator<Item = &'a Schema> {
        let kind = fields
            .get(Value::String("type".into()))
            .and_then(Value::as_str);
        let own = kind
            .filter(|k| *k != "memory")
            .and_then(|k| self.schemas.get(k));
        self.schemas.get("memory").into_iter().chain(own)
    }
}

static ACTIVE: OnceLock<SchemaSet> = OnceLock::new();

/// Installs the schema set used from now on (once, at start-up).
pub fn install(set: SchemaSet) {
    let _ = ACTIVE.set(set);
}

/// The schema set in force: what [`install`] set, else the built-in one.
pub fn active() -> &'static SchemaSet {
    ACTIVE.get_or_init(SchemaSet::builtin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_schemas_parse() {
        let set = SchemaSet::builtin();
        assert_eq!(set.schemas.len(), 4);
    }

    #[test]
    fn warnings_name_the_field_and_never_block() {
        let set = SchemaSet::builtin();
        assert!(set.check("no frontmatter\n").is_empty());
        assert!(set.check("---\ntitle: T\nphase: inbox\n---\n").is_empty());
        let w = set.check("---\ntype: decision\nstatus: maybe\nid: nope\n---\n");
        assert!(w.iter().any(|m| m.contains("`title`")), "{w:?}");
        assert!(w.iter().any(|m| m.contains("`status` is `maybe`")), "{w:?}");
        assert!(
            w.iter().any(|m| m.contains("`id` should be a uuid")),
            "{w:?}"
        );
        let ok = set.check(
            "---\ntype: task\ntitle: T\nstatus: in-progress\ndue_at: 2026-12-01\nid: 7d6c1c56-0000-4000-8000-000000000001\n---\n",
        );
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn user_schemas_extend_and_override() {
        let mut set = SchemaSet::builtin();
        set.add(
            Schema::from_yaml(
                "type: recipe\nfields:\n  serves: { type: number, required: true }\n",
            )
            .unwrap(),
        );
        let w = set.check("---\ntype: recipe\nserves: many\n---\n");
        assert_eq!(
            w,
            vec!["recipe schema: field `serves` should be a number".to_string()]
        );
        assert!(Schema::from_yaml("type: x\nfields:\n  a: { type: colour }\n").is_err());
    }

    #[test]
    fn sections_are_checked_in_a_whole_file_only() {
        let set = SchemaSet::builtin();
        let front = "---\nid: 7d6c1c56-0000-4000-8000-000000000001\ntitle: S\ntype: session\nstatus: open\nstarted: 2026-11-20T09:00:00Z\nended_or_compacted: 2026-11-20T10:00:00Z\n---\n";
        let ok = set.check(&format!("{front}# S\n\n## Observations\n- [asked] x\n"));
        assert!(ok.is_empty(), "{ok:?}");
        let fenced = set.check(&format!("{front}```\n## Observations\n```\n"));
        assert_eq!(
            fenced,
            vec!["session schema: missing section `## Observations`".to_string()]
        );
        let text = format!("{front}no sections\n");
        let Located::Found(block) = locate(&text) else {
            panic!("frontmatter");
        };
        let fields = parse_yaml(block.yaml).unwrap();
        assert!(set.check_fields(&fields).is_empty());
        let bare = set.check("---\ntype: session\ntitle: S\n---\n");
        for field in ["id", "status", "started", "ended_or_compacted"] {
            assert!(
                bare.iter().any(|w| w.contains(&format!("`{field}`"))),
                "{field}: {bare:?}"
            );
        }
    }
}
