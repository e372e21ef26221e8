//! Tests of the whole parse, and fuzzing that it never panics.

use proptest::prelude::*;

use super::*;

const EXAMPLE: &str = "---
title: User Preferences
type: memory
category: preferences
tags: [user, Preferences]
links:
  - 550e8400-e29b-41d4-a716-446655440000
---
# Ignored Heading

## Observations
- [communication] Prefers concise responses #style (no preamble)
- [ ] not an observation #todo
- [technical] Works in Python with `#type` hints #coding

## Relations
- relates_to [[Basic Memory Project]]
- informs [[Response Style Guidelines|style]]

```sh
echo \"#not-a-tag [[Not A Link]]\"
```
See ![[diagram.png]] and #USER again.
";

#[test]
fn a_full_memory() {
    let m = parse("prefs", EXAMPLE);
    assert!(m.lint.is_empty(), "{:?}", m.lint);
    assert_eq!(m.title, "User Preferences");
    assert_eq!(m.frontmatter.category, Some(Category::Preferences));
    assert_eq!(m.tags, ["user", "preferences", "style", "todo", "coding"]);
    let targets: Vec<_> = m
        .links
        .iter()
        .map(|l| (l.target.as_str(), l.kind, l.relation.as_deref()))
        .collect();
    assert_eq!(
        targets,
        [
            (
                "550e8400-e29b-41d4-a716-446655440000",
                LinkKind::FrontmatterId,
                None
            ),
            (
                "Basic Memory Project",
                LinkKind::Relation,
                Some("relates_to")
            ),
            (
                "Response Style Guidelines",
                LinkKind::Relation,
                Some("informs")
            ),
            ("diagram.png", LinkKind::Embed, None),
        ]
    );
    assert_eq!(m.links[2].alias.as_deref(), Some("style"));
    assert_eq!(m.observations.len(), 2);
    assert_eq!(m.observations[0].category, "communication");
    assert_eq!(m.observations[0].context.as_deref(), Some("no preamble"));
    assert_eq!(m.observations[1].text, "Works in Python with `#type` hints");
    let span = m.frontmatter_span.clone().unwrap_or_default();
    assert_eq!(&EXAMPLE[span.clone()], &EXAMPLE[..span.end]);
    assert!(EXAMPLE[..span.end].ends_with("---\n"));
    assert!(m.body(EXAMPLE).starts_with("# Ignored Heading\n"));
}

#[test]
fn id_and_title_read_as_the_whole_parse_does() {
    let cases: [&[u8]; 7] = [
        EXAMPLE.as_bytes(),
        b"---\nid: a-1\ntitle: \"  \"\n---\n```\n# not this\n```\n# This one\r\n",
        b"---\nid: a-2\n---\nno heading here\n",
        b"---\nid: [unclosed\n# Heading after an unclosed list\n",
        b"---\ntitle: open frontmatter\n# Heading\n",
        b"# Caf\xc3\xa9 \xff\n",
        b"\0binary",
    ];
    for bytes in cases {
        let whole = parse_bytes("stem", bytes).map(|(_, m)| (m.frontmatter.id, m.title));
        assert_eq!(
            id_and_title("stem", bytes),
            whole,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    assert_eq!(
        id_and_title("stem", b"---\nid: a-2\n---\nno heading here\n"),
        Some((Some("a-2".to_owned()), "stem".to_owned()))
    );
}

#[test]
fn title_falls_back_to_first_h1_then_stem() {
    assert_eq!(
        parse("s", "intro\n## Two\n# One `x`\n# Later").title,
        "One `x`"
    );
    assert_eq!(parse("s", "```\n# In code\n```\n## Two\n").title, "s");
    assert_eq!(parse("s", "---\ntitle: '  '\n---\n# H\n").title, "H");
    assert_eq!(parse("my-stem", "").title, "my-stem");
    assert_eq!(parse("s", "#\n# 中文标题\n").title, "中文标题");
}

#[test]
fn cjk_memory() {
    let text = "---\ntitle: 咖啡偏好\ntags: [饮料]\n---\n用户喜欢喝咖啡 #咖啡 #饮料，参见[[早晨习惯]]。\n\
                - [偏好] 不加糖 #口味\n";
    let m = parse("coffee", text);
    assert_eq!(m.title, "咖啡偏好");
    assert_eq!(m.tags, ["饮料", "咖啡", "口味"]);
    assert_eq!(m.links[0].target, "早晨习惯");
    assert_eq!(m.observations[0].text, "不加糖");
}

#[test]
fn bom_and_crlf() {
    let text = "\u{feff}---\r\ntitle: T\r\ntags: [a]\r\n---\r\n# H\r\n- relates_to [[X]]\r\n#b\r\n";
    let m = parse("s", text);
    assert_eq!(m.frontmatter_span, Some(3..34));
    assert_eq!(m.body(text), "# H\r\n- relates_to [[X]]\r\n#b\r\n");
    assert_eq!(m.title, "T");
    assert_eq!(m.tags, ["a", "b"]);
    assert_eq!(m.links[0].relation.as_deref(), Some("relates_to"));
    assert_eq!(parse("s", "\u{feff}# Hi\r\n").title, "Hi");
    assert_eq!(parse("s", "\u{feff}# Hi\r\n").body_offset, 3);
}

#[test]
fn malformed_yaml_keeps_the_body() {
    for (yaml, line) in [
        ("title: 'unclosed\nid: 1\n", 4),
        ("title: x\n\tid: 1\n", 3),
        ("title: [a, b\n", 3),
    ] {
        let text = format!("---\n{yaml}---\n# Body #tag\n- part_of [[P]]\n");
        let m = parse("s", &text);
        assert_eq!(m.frontmatter, Frontmatter::default(), "{yaml:?}");
        assert!(m.has_malformed_frontmatter());
        assert_eq!(m.lint.len(), 1, "{yaml:?}");
        assert_eq!(m.lint[0].line, Some(line), "{yaml:?}: {}", m.lint[0]);
        assert!(m.lint[0].message.starts_with("malformed frontmatter: "));
        assert_eq!(m.title, "Body #tag");
        assert_eq!(m.tags, ["tag"]);
        assert_eq!(m.links.len(), 1);
        assert_eq!(m.body(&text), "# Body #tag\n- part_of [[P]]\n");
    }
}

#[test]
fn a_title_with_a_colon_unquoted_is_read_as_meant_and_still_reported() {
    let text = "---\ntitle: Decision: NATS over Kafka\ncreated_at: 2026-03-10T15:00:00Z\ncategory: decisions\ntags: [queue, nats]\n---\nWe chose NATS.\n";
    let m = parse("queue", text);
    assert_eq!(m.title, "Decision: NATS over Kafka");
    assert_eq!(m.frontmatter.category, Some(Category::Decisions));
    assert_eq!(m.frontmatter.tags, ["queue", "nats"]);
    assert!(m.frontmatter.created_at.is_some(), "{:?}", m.frontmatter);
    // Still malformed: the background tasks leave the file as it is.
    assert!(m.has_malformed_frontmatter());
    assert_eq!(m.lint.len(), 1, "{:?}", m.lint);
    assert_eq!(m.lint[0].line, Some(2), "{}", m.lint[0]);
    assert!(
        m.lint[0]
            .message
            .ends_with("read as if the value of `title` were quoted"),
        "{}",
        m.lint[0]
    );
    assert_eq!(m.body(text), "We chose NATS.\n");
    // What quoting does not mend stays unread.
    let m = parse("s", "---\ntitle: a: b\nid: [x\n---\nBody\n");
    assert_eq!(m.frontmatter, Frontmatter::default());
    assert!(!m.lint[0].message.contains("read as if"), "{}", m.lint[0]);
}

#[test]
fn yaml_nested_past_the_limit_is_malformed_at_once_and_below_it_parses() {
    let deep = 200_000;
    for yaml in [
        format!("tags: {}{}\n", "[".repeat(deep), "]".repeat(deep)),
        format!("tags: {}\n", "{a: ".repeat(deep)),
        format!("tags:\n  {}x\n", "- ".repeat(deep)),
    ] {
        let text = format!("---\n{yaml}---\nBody\n");
        // Minutes if the parser read it; the scan refuses it at once.
        let m = parse("s", &text);
        assert!(m.has_malformed_frontmatter());
        assert!(
            m.lint[0].message.contains("nested more than"),
            "{}",
            m.lint[0]
        );
        assert_eq!(m.body(&text), "Body\n");
    }
    let depth = super::MAX_YAML_DEPTH - 1;
    let yaml = format!("tags: {}x{}\n", "[".repeat(depth), "]".repeat(depth));
    let text = format!("---\n{yaml}---\nBody\n");
    assert!(!parse("s", &text).has_malformed_frontmatter());
    // Brackets in quotes and comments do not nest.
    let quoted = format!("title: '{}'  # {}\n", "[".repeat(500), "{".repeat(500));
    assert!(!super::nests_too_deep(&quoted));
}

#[test]
fn a_list_where_a_map_is_expected() {
    let m = parse("s", "---\n- title: x\n- id: y\n---\nbody");
    assert!(m.has_malformed_frontmatter());
    assert_eq!(
        m.lint[0].to_string(),
        "line 2: frontmatter is a list, not a map of fields"
    );
    assert_eq!(m.title, "s");
}

#[test]
fn unclosed_frontmatter_is_read_as_body_and_reported() {
    let m = parse("s", "---\ntitle: x\n# Heading #t\n");
    assert_eq!(m.frontmatter_span, None);
    assert_eq!(m.body_offset, 0);
    assert_eq!(m.lint[0].kind, LintKind::UnclosedFrontmatter);
    assert!(m.has_malformed_frontmatter());
    assert_eq!(m.title, "Heading #t");
}

#[test]
fn code_is_ignored_for_links_and_tags() {
    let text = "Use `[[Not]]` and `#nope`.\n~~~\n[[AlsoNot]] #nope2\n~~~\n  ```\n  #nope3\n  ```\n[[Yes]] #yes";
    let m = parse("s", text);
    assert_eq!(m.tags, ["yes"]);
    assert_eq!(m.links.len(), 1);
    assert_eq!(m.links[0].target, "Yes");
}

#[test]
fn heading_links_do_not_become_tags() {
    let m = parse("s", "[[#Local]] [[Other#Part]] [x](#anchor) #real");
    assert_eq!(m.tags, ["real"]);
    assert_eq!(m.links.len(), 1);
    assert_eq!(m.links[0].heading.as_deref(), Some("Part"));
}

#[test]
fn binary_detection() {
    assert!(!is_probably_binary(b""));
    assert!(!is_probably_binary("plain 中文".as_bytes()));
    assert!(is_probably_binary(b"PNG\0\x01"));
    assert!(is_probably_binary(b"\xff\xfeh\0i\0"));
    assert!(is_probably_binary(b"abc\xc3\x28 more"));
    // A character cut by the end of the 8 KiB window is not a problem.
    let mut cut = vec![b'a'; 8191];
    cut.extend_from_slice("中".as_bytes());
    assert!(!is_probably_binary(&cut));
    assert!(parse_bytes("s", b"\0").is_none());
}

#[test]
fn invalid_utf8_after_the_window_is_lint() {
    let mut bytes = b"# Title\n".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', 9000));
    bytes.extend_from_slice(b"\n\xff #tag\n");
    let (_, m) = parse_bytes("s", &bytes).unwrap_or_default();
    assert_eq!(m.title, "Title");
    assert_eq!(m.tags, ["tag"]);
    assert_eq!(m.lint.len(), 1);
    assert_eq!(m.lint[0].kind, LintKind::InvalidUtf8);
    assert_eq!(m.lint[0].line, Some(3));
}

#[test]
fn add_missing_fields_then_parse() {
    let text = "---\ntitle: T # keep\n---\n\n# T\nbody bytes \r\n";
    let new = add_missing_fields(
        text,
        &[
            ("id", "550e8400-e29b-41d4-a716-446655440000".to_owned()),
            ("phase", "inbox".to_owned()),
            ("created_at", "2026-05-07T10:00:00Z".to_owned()),
            ("category", "inbox".to_owned()),
        ],
    );
    let new = new.ok().flatten().unwrap_or_default();
    let m = parse("s", &new);
    assert!(m.lint.is_empty(), "{:?}", m.lint);
    assert_eq!(m.frontmatter.phase, Some(Phase::Inbox));
    assert_eq!(m.frontmatter.category, Some(Category::Inbox));
    assert_eq!(m.body(&new), "\n# T\nbody bytes \r\n");
    assert!(new.starts_with("---\ntitle: T # keep\nid: "));
}

fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("---\n".to_owned()),
        Just("...\n".to_owned()),
        Just("\u{feff}".to_owned()),
        Just("\r\n".to_owned()),
        Just("\n".to_owned()),
        Just("```".to_owned()),
        Just("`".to_owned()),
        Just("~~~\n".to_owned()),
        Just("[[".to_owned()),
        Just("]]".to_owned()),
        Just("![[".to_owned()),
        Just("|".to_owned()),
        Just("#".to_owned()),
        Just("# ".to_owned()),
        Just("- ".to_owned()),
        Just("- [".to_owned()),
        Just("]".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just("](".to_owned()),
        Just("relates_to ".to_owned()),
        Just("title: ".to_owned()),
        Just("tags: ".to_owned()),
        Just("links: ".to_owned()),
        Just("'".to_owned()),
        Just("\t".to_owned()),
        Just("中文".to_owned()),
        Just("&#".to_owned()),
        Just("http://x/#".to_owned()),
        "[a-z0-9 ]{0,6}",
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

/// Whether `new` is `old` with one run of bytes inserted somewhere.
fn is_single_insertion(old: &str, new: &str) -> bool {
    let prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let suffix = old
        .bytes()
        .rev()
        .zip(new.bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    new.len() > old.len() && prefix + suffix >= old.len()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn id_and_title_agree_with_the_whole_parse(text in markdownish()) {
        let whole = parse_bytes("stem", text.as_bytes()).map(|(_, m)| (m.frontmatter.id, m.title));
        prop_assert_eq!(id_and_title("stem", text.as_bytes()), whole);
    }

    #[test]
    fn parse_never_panics_on_markdownish_text(text in markdownish()) {
        let m = parse("stem", &text);
        prop_assert!(m.body_offset <= text.len());
        prop_assert!(text.is_char_boundary(m.body_offset));
        if let Some(span) = &m.frontmatter_span {
            prop_assert_eq!(span.end, m.body_offset);
        }
        prop_assert!(!m.title.is_empty());
    }

    #[test]
    fn parse_never_panics_on_any_string(text in any::<String>()) {
        let _ = parse("stem", &text);
    }

    #[test]
    fn parse_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_bytes("stem", &bytes);
    }

    #[test]
    fn yaml_scalar_reads_back_as_the_same_string(s in any::<String>()) {
        let doc = format!("k: {}", yaml_scalar(&s));
        let back: Result<serde_yaml::Mapping, _> = serde_yaml::from_str(&doc);
        prop_assert_eq!(
            back.ok().and_then(|m| m.get("k").cloned()),
            Some(serde_yaml::Value::String(s))
        );
    }

    #[test]
    fn add_missing_fields_only_inserts_lines(text in markdownish(), value in any::<String>()) {
        let before = parse("s", &text);
        let fields = [("id", value.clone()), ("phase", "inbox".to_owned())];
        match add_missing_fields(&text, &fields) {
            Ok(Some(new)) => {
                prop_assert!(is_single_insertion(&text, &new));
                let after = parse("s", &new);
                prop_assert!(!after.has_malformed_frontmatter());
                prop_assert_eq!(before.body(&text), after.body(&new));
                let written = Some(value.clone()).filter(|v| !v.trim().is_empty());
                prop_assert!(after.frontmatter.id == before.frontmatter.id || after.frontmatter.id == written);
            }
            Ok(None) => prop_assert!(before.frontmatter_span.is_some()),
            Err(_) => prop_assert!(before.frontmatter_span.is_some() || before.has_malformed_frontmatter()),
        }
    }
}

fn yamlish_block() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("title: T"),
        Just("# a comment"),
        Just(""),
        Just("tags:"),
        Just("- a"),
        Just("  - b"),
        Just("notes: |"),
        Just("notes: >-"),
        Just("  folded text"),
        Just("meta:"),
        Just("  nested: 1"),
        Just("flow: {a: 1, b: [2, 3]}"),
        Just("list: [x, y]"),
        Just("id:"),
        Just("phase: organized"),
        Just("quoted: 'it''s'"),
        Just("multi: \"a"),
        Just("  b\""),
        Just("anchor: &x 1"),
        Just("ref: *x"),
        Just("\tbad: tab"),
        Just("{a: 1}"),
        Just("  indented: 1"),
    ];
    (
        proptest::collection::vec(line, 0..8),
        prop_oneof![Just("\n"), Just("\r\n")],
        prop_oneof![Just("---"), Just("...")],
        "[a-z #\\[\\]\n]{0,20}",
    )
        .prop_map(|(lines, eol, close, body)| {
            let mut text = format!("---{eol}");
            for l in lines {
                text.push_str(l);
                text.push_str(eol);
            }
            format!("{text}{close}{eol}{body}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn add_missing_fields_on_varied_yaml(text in yamlish_block()) {
        let before = parse("s", &text);
        let fields = [("id", "x-1".to_owned()), ("created_at", "2026-05-07".to_owned())];
        match add_missing_fields(&text, &fields) {
            Ok(Some(new)) => {
                prop_assert!(is_single_insertion(&text, &new), "{:?} -> {:?}", text, new);
                let after = parse("s", &new);
                prop_assert!(after.lint.iter().all(|l| before.lint.iter().any(|b| b.message == l.message)));
                prop_assert_eq!(&after.frontmatter.title, &before.frontmatter.title);
                prop_assert_eq!(&after.frontmatter.extra, &before.frontmatter.extra);
                prop_assert_eq!(before.body(&text), after.body(&new));
                prop_assert_eq!(after.frontmatter.created_at.is_some(), true);
            }
            Ok(None) => {}
            Err(EditError::MalformedFrontmatter { .. } | EditError::NotAMapping { .. }) => {
                prop_assert!(before.has_malformed_frontmatter());
            }
            Err(e) => prop_assert!(e == EditError::WouldChangeMeaning, "{e}"),
        }
    }
}

/// Inputs that make naive scanners quadratic. No timing assertion: a
/// regression shows up as this test hanging.
#[test]
fn pathological_lines_stay_linear() {
    let n = 200_000;
    let inputs = [
        "`".to_owned() + &"a``".repeat(n / 3),
        "[".repeat(n) + "]]",
        "[[a".repeat(n / 3) + "]]",
        "- [o] x ".to_owned() + &(0..n / 8).map(|i| format!("#t{i} ")).collect::<String>(),
        (0..n / 8)
            .map(|i| format!("[[l{i}]] #x "))
            .collect::<String>(),
        "](".repeat(n / 2),
        "#".repeat(n),
    ];
    for text in inputs {
        let m = parse("s", &text);
        assert!(m.tags.len() <= n);
    }
}
