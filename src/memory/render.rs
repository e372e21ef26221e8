//! Writing a whole frontmatter block from fields, for memories made from
//! a description (an import line, an ingested note) rather than edited.
//!
//! Editing existing files never goes through here (see `edit.rs`, which
//! keeps every byte it does not change); this is only for new files, so
//! the block is serialized whole. Known fields come first, in the order
//! memory-cli writes them, then every other key in the order given.

use serde_yaml::{Mapping, Value};

/// The order memory-cli and mnemofs write their own fields in.
const ORDER: [&str; 20] = [
    "id",
    "title",
    "type",
    "content_hash",
    "phase",
    "category",
    "scope",
    "tags",
    "aliases",
    "source",
    "source_path",
    "status",
    "created_at",
    "updated_at",
    "expires_at",
    "due_at",
    "access_count",
    "links",
    "version",
    "merged_into",
];

/// The frontmatter block (`---` lines included) holding `fields`; null
/// values and empty lists are left out. A value that YAML cannot hold
/// (none that JSON holds) is written as its text.
pub fn render_frontmatter(fields: &[(String, serde_json::Value)]) -> String {
    let rank = |key: &str| ORDER.iter().position(|k| *k == key).unwrap_or(ORDER.len());
    let mut sorted: Vec<&(String, serde_json::Value)> = fields
        .iter()
        .filter(|(_, v)| match v {
            serde_json::Value::Null => false,
            serde_json::Value::Array(a) => !a.is_empty(),
            _ => true,
        })
        .collect();
    sorted.sort_by_key(|(k, _)| rank(k));
    let mut map = Mapping::new();
    for (key, value) in sorted {
        let value =
            serde_yaml::to_value(value).unwrap_or_else(|_| Value::String(value.to_string()));
        map.insert(Value::String(key.clone()), value);
    }
    if map.is_empty() {
        return String::new();
    }
    let yaml = serde_yaml::to_string(&map).unwrap_or_default();
    format!("---\n{yaml}---\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_fields_first_and_the_block_reads_back() {
        let fields = vec![
            ("zeta".to_string(), json!("last")),
            ("tags".to_string(), json!(["a", "b c"])),
            ("id".to_string(), json!("x-1")),
            ("expires_at".to_string(), json!(null)),
            ("title".to_string(), json!("Colon: inside")),
        ];
        let block = render_frontmatter(&fields);
        assert!(block.starts_with("---\nid: x-1\ntitle:"), "{block}");
        assert!(!block.contains("expires_at"), "{block}");
        let parsed = crate::memory::parse("s", &format!("{block}body\n"));
        assert_eq!(parsed.frontmatter.title.as_deref(), Some("Colon: inside"));
        assert_eq!(parsed.frontmatter.tags, vec!["a", "b c"]);
        assert_eq!(
            parsed.frontmatter.extra["zeta"],
            Value::String("last".into())
        );
        assert!(parsed.lint.is_empty(), "{:?}", parsed.lint);
    }

    #[test]
    fn nothing_to_write_is_no_block() {
        assert_eq!(render_frontmatter(&[]), "");
    }
}
