//! Wikilinks, embeds and relation lines.
//!
//! A link names its target the way the writer did (`[[Title]]`,
//! `[[stem]]`, `[[folder/stem]]`, an id from `links:`); resolving that to a
//! memory is the index's job, because only the index knows every title,
//! stem and alias. Subtleties:
//! - A relation is the short run of plain words between a list marker and
//!   the link (`- part_of [[Y]]`, `- depends on [[Z]]`). It is only taken
//!   when nothing but an optional `(context)` or `#tags` follows the link,
//!   so prose such as `- I met [[Ann]] at the fair` stays a plain link.
//! - Inside tables the pipe must be escaped (`[[Target\|alias]]`); the
//!   trailing backslash is not part of the target.
//! - `[[#Heading]]` points into the same file and yields no link, but its
//!   span is still reported so the tag scanner does not read `#Heading` as
//!   a tag.

use std::ops::Range;

use super::markdown::list_item_content_start;

/// How a link was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// `[[Target]]` anywhere in the body.
    Wiki,
    /// `![[Target]]`: the target's content is shown inline.
    Embed,
    /// The first link of a relation line such as `- relates_to [[Target]]`.
    Relation,
    /// An entry of the frontmatter `links:` list (normally a memory id).
    FrontmatterId,
}

/// One outgoing link of a memory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Link {
    /// What the link points at, as written: a title, a stem, a path or an id.
    pub target: String,
    /// Display text after `|`, if any.
    pub alias: Option<String>,
    /// The heading (or `^block` reference) after `#`, if any.
    pub heading: Option<String>,
    /// The relation named before the link on a relation line.
    pub relation: Option<String>,
    /// How the link was written.
    pub kind: LinkKind,
}

impl Link {
    /// A link taken from the frontmatter `links:` list. Entries written as
    /// `"[[Title]]"` (Obsidian's property style) are unwrapped.
    pub(crate) fn from_frontmatter(entry: &str) -> Option<Link> {
        let entry = entry.trim();
        let inner = entry
            .strip_prefix("[[")
            .and_then(|e| e.strip_suffix("]]"))
            .unwrap_or(entry);
        let parts = split_inner(inner);
        (!parts.target.is_empty()).then_some(Link {
            target: parts.target,
            alias: parts.alias,
            heading: parts.heading,
            relation: None,
            kind: LinkKind::FrontmatterId,
        })
    }
}

/// A `[[...]]` or `![[...]]` found on one (masked) line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WikiSpan {
    /// Bytes of the whole link, including `!` and brackets.
    pub(crate) range: Range<usize>,
    pub(crate) embed: bool,
    target: String,
    heading: Option<String>,
    alias: Option<String>,
}

struct InnerParts {
    target: String,
    heading: Option<String>,
    alias: Option<String>,
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

fn split_inner(inner: &str) -> InnerParts {
    let (before_alias, alias) = match inner.split_once('|') {
        Some((b, a)) => (b.strip_suffix('\\').unwrap_or(b), non_empty(a)),
        None => (inner, None),
    };
    let (target, heading) = match before_alias.split_once('#') {
        Some((t, h)) => (t, non_empty(h)),
        None => (before_alias, None),
    };
    InnerParts {
        target: target.trim().to_owned(),
        heading,
        alias,
    }
}

/// Every wikilink on a line, left to right. A link never spans lines and
/// never contains `[` or `]`; on `[[[x]]` the innermost opening wins.
pub(crate) fn wikilinks(line: &str) -> Vec<WikiSpan> {
    let b = line.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(p) = find(b, i, b"[[") {
        let Some(q) = find(b, p + 2, b"]]") else {
            break;
        };
        i = q + 2;
        // Every `[[` between p and q would close at q, so only the last one
        // can be a link; looking no further keeps long bracket runs linear.
        let last_bracket = b
            .get(p..q)
            .and_then(|s| s.iter().rposition(|&c| c == b'['))
            .map(|r| p + r);
        let Some(open) = last_bracket.and_then(|r| r.checked_sub(1)) else {
            continue;
        };
        if b.get(open) != Some(&b'[') {
            continue;
        }
        let inner_start = open + 2;
        let inner = b.get(inner_start..q).unwrap_or_default();
        if inner.is_empty() || inner.contains(&b']') {
            continue;
        }
        let embed = open > 0 && b.get(open - 1) == Some(&b'!');
        if let Some(parts) = line.get(inner_start..q).map(split_inner) {
            spans.push(WikiSpan {
                range: if embed { open - 1 } else { open }..q + 2,
                embed,
                target: parts.target,
                heading: parts.heading,
                alias: parts.alias,
            });
        }
    }
    spans
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The links of one masked body line, given its wikilink spans.
pub(crate) fn line_links(line: &str, spans: &[WikiSpan], out: &mut Vec<Link>) {
    let relation = relation_of(line, spans);
    for (n, span) in spans.iter().enumerate() {
        if span.target.is_empty() {
            continue;
        }
        let relation = if n == 0 { relation.clone() } else { None };
        let kind = if relation.is_some() {
            LinkKind::Relation
        } else if span.embed {
            LinkKind::Embed
        } else {
            LinkKind::Wiki
        };
        out.push(Link {
            target: span.target.clone(),
            alias: span.alias.clone(),
            heading: span.heading.clone(),
            relation,
            kind,
        });
    }
}

/// Relations are at most this many words; longer runs are prose.
const MAX_RELATION_WORDS: usize = 3;

fn relation_of(line: &str, spans: &[WikiSpan]) -> Option<String> {
    let first = spans.first()?;
    let start = list_item_content_start(line)?;
    let words = line.get(start..first.range.start)?;
    let mut tokens = Vec::new();
    for token in words.split_whitespace() {
        let mut chars = token.chars();
        let starts_with_letter = chars.next().is_some_and(char::is_alphabetic);
        if !starts_with_letter || !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            return None;
        }
        tokens.push(token);
    }
    if tokens.is_empty() || tokens.len() > MAX_RELATION_WORDS {
        return None;
    }
    let after = line.get(first.range.end..)?.trim();
    if !(after.is_empty() || after.starts_with('(') || after.starts_with('#')) {
        return None;
    }
    Some(tokens.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links_of(line: &str) -> Vec<Link> {
        let mut out = Vec::new();
        line_links(line, &wikilinks(line), &mut out);
        out
    }

    fn link(target: &str, kind: LinkKind) -> Link {
        Link {
            target: target.to_owned(),
            alias: None,
            heading: None,
            relation: None,
            kind,
        }
    }

    #[test]
    fn plain_alias_heading_and_both() {
        let got = links_of("see [[A]], [[B|bee]], [[C#Setup]] and [[D#Use it|here]]");
        assert_eq!(
            got,
            vec![
                link("A", LinkKind::Wiki),
                Link {
                    alias: Some("bee".into()),
                    ..link("B", LinkKind::Wiki)
                },
                Link {
                    heading: Some("Setup".into()),
                    ..link("C", LinkKind::Wiki)
                },
                Link {
                    heading: Some("Use it".into()),
                    alias: Some("here".into()),
                    ..link("D", LinkKind::Wiki)
                },
            ]
        );
    }

    #[test]
    fn embeds() {
        assert_eq!(
            links_of("![[diagram.png]]"),
            vec![link("diagram.png", LinkKind::Embed)]
        );
    }

    #[test]
    fn escaped_pipe_in_tables() {
        let got = links_of("| [[Target\\|alias]] |");
        assert_eq!(got[0].target, "Target");
        assert_eq!(got[0].alias.as_deref(), Some("alias"));
    }

    #[test]
    fn same_file_heading_links_are_spans_but_not_links() {
        let line = "jump to [[#Setup]]";
        assert_eq!(wikilinks(line).len(), 1);
        assert!(links_of(line).is_empty());
    }

    #[test]
    fn malformed_brackets() {
        assert!(links_of("[[]] [[ ]] [[open").is_empty());
        assert_eq!(links_of("[[[x]]"), vec![link("x", LinkKind::Wiki)]);
        assert_eq!(links_of("[[a]b]] [[c]]"), vec![link("c", LinkKind::Wiki)]);
        assert_eq!(
            links_of("[[中文笔记]]"),
            vec![link("中文笔记", LinkKind::Wiki)]
        );
    }

    #[test]
    fn relation_lines() {
        let rel = |line: &str| links_of(line).first().and_then(|l| l.relation.clone());
        assert_eq!(rel("- relates_to [[Target]]"), Some("relates_to".into()));
        assert_eq!(
            rel("  * implements [[X]] (since v2)"),
            Some("implements".into())
        );
        assert_eq!(rel("1. part_of [[Y]] #arch"), Some("part_of".into()));
        assert_eq!(rel("- depends on [[Z]]"), Some("depends on".into()));
        assert_eq!(rel("- I met [[Ann]] at the fair"), None);
        assert_eq!(rel("- [[Ann]]"), None);
        assert_eq!(rel("relates_to [[Target]]"), None);
        assert_eq!(rel("- see: [[Target]]"), None);
        assert_eq!(rel("- a b c d [[T]]"), None);
        assert_eq!(rel("- 2 [[T]]"), None);
        assert_eq!(rel("- [tech] uses [[T]]"), None);
    }

    #[test]
    fn only_the_first_link_of_a_relation_line_carries_the_relation() {
        let got = links_of("- relates_to [[A]] #x [[B]]");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].kind, LinkKind::Relation);
        assert_eq!(got[1].kind, LinkKind::Wiki);
        assert_eq!(got[1].relation, None);
    }

    #[test]
    fn frontmatter_entries() {
        let l = Link::from_frontmatter(" [[Some Title]] ");
        assert_eq!(l.map(|l| l.target), Some("Some Title".into()));
        let l = Link::from_frontmatter("550e8400-e29b-41d4-a716-446655440000");
        assert_eq!(l.map(|l| l.kind), Some(LinkKind::FrontmatterId));
        assert_eq!(Link::from_frontmatter("  "), None);
    }
}
