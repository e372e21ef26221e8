//! What a query means: the text a user or an agent typed, turned into
//! the syntax tree tantivy's parser builds a query from.
//!
//! Two steps, each a function here, and what to say when nothing matched
//! ([`nothing_found`]):
//! - [`rewrite_query`] maps friendly field names to schema fields
//!   (`tags:` → `tag:`, `kind:` → `type:`, `created_at:` → `created:`),
//!   dates after `created:` / `updated:` to the RFC 3339 instants tantivy
//!   expects (a bare day `created:2025-03-01` becomes that whole day), and
//!   `prefix*` to the words it stands for; a sentence's apostrophes and
//!   exclamation marks become spaces.
//! - [`meaning`] reads the syntax and decides what each part does. A plain
//!   word is optional and ranks (BM25 over the plain and the stemmed
//!   fields); a stop word ([`is_stop_word`]) is left out unless it is
//!   required (`+the`, `a AND the`); a word joined by punctuation
//!   (`dark-mode`, a run of Chinese) is its words, each optional. A filter
//!   (`tag:`, `type:`, `status:`, `created:>...`, ...) is required and
//!   scores nothing, so `type:decision database` is the decisions ranked
//!   by "database". `+word`, `-word`, `NOT`, `AND`, `OR`, phrases and
//!   boosts keep the meaning tantivy gives them.
//!
//! Subtleties:
//! - A query of stop words only ("the who", "what is it?") is searched
//!   as a phrase: those words together, or nothing.
//! - A `*` that stands in for a value left out (a bad date) matches
//!   everything; beside other words it is dropped, or it would return
//!   every memory.
//! - Query text is untrusted: a query nested deeper than [`MAX_NESTING`]
//!   levels ([`too_deep`]) never reaches the grammar, which would recurse
//!   until the stack ran out, and nothing here recurses deeper.

use tantivy::query_grammar::{Delimiter, Occur, UserInputAst, UserInputLeaf, UserInputLiteral};
use tantivy::time::OffsetDateTime;
use tantivy::time::format_description::well_known::Rfc3339;

use super::schema::names;
use super::tokenizer::{is_stop_word, tokenize};
use crate::memory::parse_timestamp;

/// The schema field a name written in a query means, if it is one we
/// rename or whose value we rewrite.
fn canonical_field(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "tag" | "tags" => names::TAG,
        "category" | "categories" => names::CATEGORY,
        "type" | "kind" => names::TYPE,
        "status" => names::STATUS,
        "scope" => names::SCOPE,
        "phase" => names::PHASE,
        "id" => names::ID,
        "alias" | "aliases" => names::ALIAS,
        "title" => names::TITLE,
        "body" | "text" => names::BODY,
        "link" | "links" => names::LINK,
        "created" | "created_at" => names::CREATED,
        "updated" | "updated_at" => names::UPDATED,
        _ => return None,
    })
}

fn rfc3339(secs: i64) -> Option<String> {
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()?
        .format(&Rfc3339)
        .ok()
}

/// A date as written in a query, as RFC 3339; the token itself if it is
/// not a date.
fn date_literal(token: &str) -> Result<String, String> {
    parse_timestamp(&absolute(token))
        .and_then(rfc3339)
        .ok_or_else(|| token.to_owned())
}

/// Whether `token` is a bare `YYYY-MM-DD` day, or a day named from today.
fn is_day(token: &str) -> bool {
    let day = absolute(token);
    day.len() == 10 && parse_timestamp(&day).is_some()
}

/// `token` with a day named from today (see [`day_from`]) written as
/// that day, `YYYY-MM-DD`, today being the local one.
fn absolute(token: &str) -> std::borrow::Cow<'_, str> {
    match day_from(token, jiff::Zoned::now().date()) {
        Some(day) => day.to_string().into(),
        None => token.into(),
    }
}

/// The day `token` names from `today`: `today`, `yesterday`, `tomorrow`,
/// or that long ago: `7d`, `2w`, `3m` (months), `1y`.
fn day_from(token: &str, today: jiff::civil::Date) -> Option<jiff::civil::Date> {
    use jiff::ToSpan;
    let token = token.to_ascii_lowercase();
    match token.as_str() {
        "today" => return Some(today),
        "yesterday" => return today.yesterday().ok(),
        "tomorrow" => return today.tomorrow().ok(),
        _ => {}
    }
    let mut chars = token.chars();
    let unit = chars.next_back()?;
    let count: i64 = chars
        .as_str()
        .parse()
        .ok()
        .filter(|n| (0..=9999).contains(n))?;
    let back = match unit {
        'd' => count.days(),
        'w' => count.weeks(),
        'm' => count.months(),
        'y' => count.years(),
        _ => return None,
    };
    today.checked_sub(back).ok()
}

/// Length of the value starting at the beginning of `s`: up to whitespace
/// or a closing parenthesis.
fn value_len(s: &str) -> usize {
    s.find(|c: char| c.is_whitespace() || c == ')')
        .unwrap_or(s.len())
}

/// Rewrites the value of a date field at the start of `rest`; returns the
/// rewritten value and how many bytes of `rest` it replaces, or the first
/// word that is not a date.
fn rewrite_date_value(rest: &str) -> Result<(String, usize), String> {
    if let Some(open) = rest.chars().next().filter(|c| *c == '[' || *c == '{') {
        let Some(close) = rest.find([']', '}']) else {
            return Ok((String::new(), 0));
        };
        let inner = &rest[1..close];
        let mut words = Vec::new();
        for w in inner.split_whitespace() {
            if w == "TO" || w == "*" {
                words.push(w.to_owned());
            } else {
                words.push(date_literal(w)?);
            }
        }
        let closing = &rest[close..=close];
        return Ok((format!("{open}{}{closing}", words.join(" ")), close + 1));
    }
    let op_len = [">=", "<=", ">", "<"]
        .iter()
        .find(|op| rest.starts_with(*op))
        .map_or(0, |op| op.len());
    let after_op = &rest[op_len..];
    let trimmed = after_op.trim_start();
    let skipped = after_op.len() - trimmed.len();
    let len = value_len(trimmed);
    let value = &trimmed[..len];
    let consumed = op_len + skipped + len;
    if op_len == 0 && is_day(value) {
        // A whole day: [day, next day).
        let day = absolute(value);
        if let (Some(from), Some(to)) = (
            parse_timestamp(&day).and_then(rfc3339),
            parse_timestamp(&day).and_then(|s| rfc3339(s + 86_400)),
        ) {
            return Ok((format!("[{from} TO {to}}}"), consumed));
        }
    }
    Ok((
        format!("{}{}", &rest[..op_len], date_literal(value)?),
        consumed,
    ))
}

/// Most indexed words a `prefix*` stands for; the most frequent are kept.
pub(crate) const MAX_PREFIX_TERMS: usize = 64;

/// The words of the index that start with a prefix, for `prefix*`: the
/// field (`None` for the default fields) and the lowercased prefix give
/// the words, and whether some were left out.
pub(crate) type Expand<'a> = &'a dyn Fn(Option<&'static str>, &str) -> (Vec<String>, bool);

/// A query as handed to the parser, and what its author should be told
/// about how it was read.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Rewritten {
    pub(crate) text: String,
    pub(crate) warnings: Vec<String>,
}

/// `prefix*` as an OR of the words it stands for (each as `field:"word"`,
/// or `"word"` over the default fields). With no such word, the prefix
/// itself, which then matches nothing.
fn expansion(field: Option<&'static str>, prefix: &str, expand: Expand<'_>, out: &mut Rewritten) {
    let prefix = prefix.to_lowercase();
    let (words, cut) = expand(field, &prefix);
    let qualified = |w: &str| match field {
        Some(f) => format!("{f}:\"{}\"", w.replace('"', "")),
        None => format!("\"{}\"", w.replace('"', "")),
    };
    if cut {
        out.warnings.push(format!(
            "`{prefix}*` matches more than {MAX_PREFIX_TERMS} words; the {MAX_PREFIX_TERMS} most common were searched"
        ));
    }
    if words.is_empty() {
        out.text.push_str(&qualified(&prefix));
        return;
    }
    let alternatives: Vec<String> = words.iter().map(|w| qualified(w)).collect();
    out.text.push('(');
    out.text.push_str(&alternatives.join(" OR "));
    out.text.push(')');
}

/// `AND NOT`: the parser reads `a AND NOT b` as `a` and a clause that can
/// match nothing, so it is written `a NOT b`. Returns `rest` after `AND`
/// and its spaces when `rest` starts with `AND NOT`.
fn and_not(rest: &str) -> Option<&str> {
    let after = rest.strip_prefix("AND")?;
    let not = after.trim_start();
    if not.len() == after.len() {
        return None;
    }
    let tail = not.strip_prefix("NOT")?;
    tail.starts_with(|c: char| c.is_whitespace() || matches!(c, '(' | '"'))
        .then_some(not)
}

/// The words a Chinese question asks with, longest first, in simplified
/// and traditional characters. Outside a phrase each becomes a space:
/// written without spaces, "喝什么" would otherwise be searched as the
/// bigram "喝什", which no memory holds, where "喝" finds what the user
/// drinks.
const CHINESE_QUESTION_WORDS: &[&str] = &[
    "什么时候",
    "什麼時候",
    "为什么",
    "為什麼",
    "什么",
    "什麼",
    "哪个",
    "哪個",
    "哪些",
    "哪里",
    "哪裡",
    "哪裏",
    "怎么",
    "怎麼",
    "怎样",
    "怎樣",
    "如何",
    "是否",
    "多少",
    "谁",
    "誰",
    "吗",
    "嗎",
    "呢",
];

/// Maps friendly field names to schema fields, dates to RFC 3339 and
/// `prefix*` to the words it stands for; reports values it had to drop.
/// A Chinese question's own words become spaces
/// ([`CHINESE_QUESTION_WORDS`]).
pub(crate) fn rewrite_query(query: &str, expand: Expand<'_>) -> Rewritten {
    let mut out = Rewritten {
        text: String::with_capacity(query.len() + 16),
        warnings: Vec::new(),
    };
    let mut rest = query;
    let mut at_boundary = true;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            // A phrase is copied as written, with a phrase prefix's `*`.
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            out.text.push_str(&rest[..end]);
            rest = &rest[end..];
            at_boundary = false;
            continue;
        }
        if super::tokenizer::is_cjk(c)
            && let Some(word) = CHINESE_QUESTION_WORDS.iter().find(|w| rest.starts_with(*w))
        {
            out.text.push(' ');
            rest = &rest[word.len()..];
            at_boundary = true;
            continue;
        }
        if !at_boundary {
            out.text.push(plain(c));
            rest = &rest[c.len_utf8()..];
            at_boundary = c.is_whitespace() || matches!(c, '(' | '+' | '-');
            continue;
        }
        if let Some(after) = and_not(rest) {
            rest = after;
            continue;
        }
        let word = &rest[..value_len(rest)];
        if let Some(prefix) = word.strip_suffix('*')
            && !prefix.is_empty()
            && !prefix.contains([':', '*', '"'])
        {
            expansion(None, prefix, expand, &mut out);
            rest = &rest[word.len()..];
            at_boundary = false;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let name_len = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..name_len];
            if rest[name_len..].starts_with(':')
                && let Some(field) = canonical_field(name)
            {
                rewrite_field(field, &rest[name_len..], expand, &mut out, &mut rest);
                at_boundary = false;
                continue;
            }
            out.text.push_str(name);
            rest = &rest[name_len..];
            at_boundary = false;
            continue;
        }
        out.text.push(plain(c));
        rest = &rest[c.len_utf8()..];
        at_boundary = c.is_whitespace() || matches!(c, '(' | '+' | '-');
    }
    out
}

/// `c` as the parser should see it outside a phrase: the apostrophe of
/// "what's", an exclamation mark and a backquote are punctuation in a
/// sentence, not syntax (to the parser they open a quote or fail).
fn plain(c: char) -> char {
    if matches!(c, '\'' | '!' | '`' | '\u{2018}' | '\u{2019}') {
        ' '
    } else {
        c
    }
}

/// Writes `field:value` for a friendly field name; `colon` is the query
/// from the field's colon on, and `rest` is left after the value.
fn rewrite_field<'q>(
    field: &'static str,
    colon: &'q str,
    expand: Expand<'_>,
    out: &mut Rewritten,
    rest: &mut &'q str,
) {
    let value_at = &colon[1..];
    let len = value_len(value_at);
    let value = &value_at[..len];
    if field == names::CREATED || field == names::UPDATED {
        match rewrite_date_value(value_at) {
            Ok((rewritten, consumed)) => {
                out.text.push_str(field);
                out.text.push(':');
                out.text.push_str(&rewritten);
                *rest = &value_at[consumed..];
            }
            Err(bad) => {
                let len = if value.starts_with(['[', '{']) {
                    value_at.find([']', '}']).map_or(len, |close| close + 1)
                } else {
                    len
                };
                // `*` matches everything, so the rest of the query holds.
                out.text.push('*');
                out.warnings.push(format!(
                    "`{field}:{}` was left out: `{bad}` is not a date (write 2026-01-31, 2026-01-31T09:00:00Z, yesterday, 7d, or a range like [2026-01-01 TO 2026-02-01])",
                    &value_at[..len]
                ));
                *rest = &value_at[len..];
            }
        }
        return;
    }
    if !value.starts_with('"')
        && let Some(prefix) = value.strip_suffix('*')
        && !prefix.is_empty()
        && !prefix.contains('*')
    {
        expansion(Some(field), prefix, expand, out);
        *rest = &value_at[len..];
        return;
    }
    // A tag names its nested tags too, as Obsidian's do: `tag:people`
    // finds `people/colleague`.
    if field == names::TAG && !value.is_empty() && !value.starts_with(['"', '(']) {
        let nested = format!("{}/", value.trim_start_matches('#').to_lowercase());
        let (words, _) = expand(Some(field), &nested);
        if !words.is_empty() {
            out.text.push('(');
            out.text.push_str(field);
            out.text.push(':');
            out.text.push_str(value);
            for word in words {
                out.text
                    .push_str(&format!(" OR {field}:\"{}\"", word.replace('"', "")));
            }
            out.text.push(')');
            *rest = &value_at[len..];
            return;
        }
    }
    out.text.push_str(field);
    out.text.push(':');
    if field == names::SCOPE && !value.starts_with('"') && value.contains(':') {
        // `scope:agent:claude`: the second colon is part of the value.
        out.text.push('"');
        out.text.push_str(value);
        out.text.push('"');
        *rest = &value_at[len..];
    } else {
        *rest = value_at;
    }
}

/// `text` read as prose where it cannot be syntax: colons that begin no
/// field's value ([`prose_colons`]) and command-line flags
/// ([`prose_flags`]). A search and its warnings read a query through
/// this.
pub(crate) fn prose(text: &str) -> std::borrow::Cow<'_, str> {
    match prose_colons(text) {
        std::borrow::Cow::Borrowed(text) => prose_flags(text),
        std::borrow::Cow::Owned(text) => std::borrow::Cow::Owned(prose_flags(&text).into_owned()),
    }
}

/// `text` with the dashes of each command-line flag outside quotes taken
/// off: "can I run git push --force?" asks about force, and leaves
/// nothing out (`-word` excludes a word; no syntax starts with `--`).
/// So does a short flag, one dash and one or two letters or digits
/// ("pytest -x", "nox -s lint", "rm -rf"): nobody leaves out a word of
/// two letters.
fn prose_flags(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('-') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    let mut at_boundary = true;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            quoted = !quoted;
        }
        if !quoted
            && at_boundary
            && let Some(flag) = rest
                .strip_prefix("--")
                .filter(|r| r.starts_with(|c: char| c.is_alphanumeric()))
                .or_else(|| rest.strip_prefix('-').filter(|r| is_short_flag(r)))
        {
            rest = flag;
            at_boundary = false;
            continue;
        }
        out.push(c);
        at_boundary = c.is_whitespace() || c == '(';
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `rest`, after a dash, is a short flag: one or two ASCII
/// letters or digits, then the end, a space or punctuation.
fn is_short_flag(rest: &str) -> bool {
    let letters = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric())
        .count();
    (1..=2).contains(&letters)
        && rest[letters..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '?' | '!' | '.' | ',' | ')' | ';'))
}

/// `text` with the colons that cannot begin a field's value turned into
/// spaces: "when is my 1:1 with my manager?", "what happened at 3:30?",
/// "Reminder: call Bob", "https://example.com". A colon begins a value
/// when it follows a field's name (or a word of letters, which may be a
/// misspelt one, so that it is reported) and something follows it at
/// once: `tag:rust`, `created:>7d`, `catgory:people`.
pub(crate) fn prose_colons(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(':') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    // Inside quotes, or a field's value (`scope:agent:claude`), colons are
    // what was written.
    let (mut quoted, mut value) = (false, false);
    for (at, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() => value = false,
            _ => {}
        }
        if c != ':' || quoted || value || text[..at].ends_with('\\') {
            out.push(c);
            continue;
        }
        let before = &text[..at];
        let name_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| {
                i + before[i..].chars().next().map_or(1, char::len_utf8)
            });
        let name = &before[name_start..];
        let after = &text[at + 1..];
        let known = canonical_field(name).is_some()
            || matches!(
                name.to_ascii_lowercase().as_str(),
                "source" | "mode" | "limit"
            );
        let value_follows = after.chars().next().is_some_and(|c| !c.is_whitespace());
        let field = !name.is_empty()
            && value_follows
            && !after.starts_with("//")
            && (known || name.chars().all(|c| c.is_ascii_alphabetic() || c == '_'));
        value = field;
        out.push(if field { ':' } else { ' ' });
    }
    std::borrow::Cow::Owned(out)
}

/// The plain words of a query that is plain words and filters, nothing
/// else, and has both: "(who does our bookkeeping) category:people
/// created:[2026-01-01 TO *]", as `search --category --from` and MCP's
/// filters write it, is the question "who does our bookkeeping" asked of
/// the memories the filters leave. `None` for anything else (a phrase, an
/// exclusion, a field that ranks such as `title:`).
pub(crate) fn words_beside_filters(text: &str) -> Option<String> {
    if too_deep(text).is_some() {
        return None;
    }
    let (ast, errors) = tantivy::query_grammar::parse_query_lenient(text);
    if !errors.is_empty() {
        return None;
    }
    let UserInputAst::Clause(children) = ast else {
        return None;
    };
    let (mut words, mut filtered) = (Vec::new(), false);
    for (occur, child) in &children {
        match occur {
            None | Some(Occur::Must) if is_filter(child) => filtered = true,
            None | Some(Occur::Should) => words.extend(only_words(child)?),
            _ => return None,
        }
    }
    (filtered && !words.is_empty()).then(|| words.join(" "))
}

/// Most results a query may ask for with `limit:N`.
pub const MAX_LIMIT: usize = 1000;

/// Splits `limit:N` out of a query: the rest of the query, and N (between
/// 1 and [`MAX_LIMIT`]) if the query gives one.
pub fn take_limit(query: &str) -> (String, Option<usize>) {
    let mut limit = None;
    let mut rest = Vec::new();
    for word in query.split_whitespace() {
        match word
            .strip_prefix("limit:")
            .and_then(|n| n.parse::<usize>().ok())
        {
            Some(n) => limit = Some(n.clamp(1, MAX_LIMIT)),
            None => rest.push(word),
        }
    }
    (rest.join(" "), limit)
}

/// Longest query searched, in bytes; the rest is left out, with a note.
pub(crate) const MAX_QUERY_BYTES: usize = 4096;

/// Most words (and operators) a query may have; the rest are left out,
/// with a note. Each word is a clause over six fields: a pasted page would
/// cost a scan of most of the index.
pub(crate) const MAX_QUERY_WORDS: usize = 128;

/// `text` cut to [`MAX_QUERY_BYTES`] and [`MAX_QUERY_WORDS`], and why, if
/// it was.
pub(crate) fn bounded(text: &str) -> (std::borrow::Cow<'_, str>, Option<String>) {
    let mut end = text.len();
    let mut why = None;
    if end > MAX_QUERY_BYTES {
        end = MAX_QUERY_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        why = Some(format!(
            "the query is {} bytes long, so only its first {MAX_QUERY_BYTES} were searched",
            text.len()
        ));
    }
    if let Some((at, _)) = text[..end]
        .split_whitespace()
        .nth(MAX_QUERY_WORDS)
        .map(|w| {
            let at = w.as_ptr() as usize - text.as_ptr() as usize;
            (at, w)
        })
    {
        end = at;
        why = Some(format!(
            "the query has more than {MAX_QUERY_WORDS} words, so only its first {MAX_QUERY_WORDS} were searched"
        ));
    }
    match why {
        None => (std::borrow::Cow::Borrowed(text), None),
        Some(why) => (
            std::borrow::Cow::Owned(text[..end].trim_end().to_string()),
            Some(why),
        ),
    }
}

/// Deepest nesting a query's syntax may have (parentheses, or `NOT`s in
/// a row); deeper, its words are searched instead.
pub(crate) const MAX_NESTING: usize = 32;

/// Why `text` is too deeply nested to parse, if it is: tantivy's grammar
/// recurses once per level, so a query of a thousand `(` would exhaust
/// the stack of the thread that parses it.
pub(crate) fn too_deep(text: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut in_phrase = false;
    for c in text.chars() {
        match c {
            '"' => in_phrase = !in_phrase,
            '(' if !in_phrase => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' if !in_phrase => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let mut nots = 0usize;
    for word in text.split_whitespace() {
        if word == "NOT" {
            nots += 1;
            deepest = deepest.max(nots);
        } else {
            nots = 0;
        }
    }
    (deepest > MAX_NESTING).then(|| {
        format!(
            "the query nests {deepest} levels deep (at most {MAX_NESTING}), so its words were searched instead"
        )
    })
}

/// Fields whose values restrict a search and do not rank it.
fn is_filter_field(name: &str) -> bool {
    use names::*;
    matches!(
        canonical_field(name).unwrap_or(name),
        TAG | CATEGORY
            | TYPE
            | STATUS
            | SCOPE
            | SOURCE
            | PHASE
            | ID
            | LINK
            | KEY
            | KIND
            | FLAG
            | CREATED
            | UPDATED
    )
}

/// Whether `ast` only restricts: a filter field's value, a range, or a
/// group of those.
fn is_filter(ast: &UserInputAst) -> bool {
    match ast {
        UserInputAst::Leaf(leaf) => match leaf.as_ref() {
            UserInputLeaf::Literal(literal) => {
                literal.field_name.as_deref().is_some_and(is_filter_field)
            }
            UserInputLeaf::Range { .. } | UserInputLeaf::Set { .. } => true,
            UserInputLeaf::Exists { field } => is_filter_field(field),
            UserInputLeaf::All => false,
        },
        UserInputAst::Boost(inner, _) => is_filter(inner),
        UserInputAst::Clause(children) => {
            !children.is_empty() && children.iter().all(|(_, c)| is_filter(c))
        }
    }
}

/// The words of an unquoted literal over the default fields (`None` for
/// anything else: a phrase, a field, a prefix, a fuzzy or sloppy term).
fn plain_words(ast: &UserInputAst) -> Option<Vec<String>> {
    let UserInputAst::Leaf(leaf) = ast else {
        return None;
    };
    match leaf.as_ref() {
        UserInputLeaf::Literal(UserInputLiteral {
            field_name: None,
            phrase,
            delimiter: Delimiter::None,
            slop: 0,
            prefix: false,
        }) => Some(tokenize(phrase).into_iter().map(|t| t.text).collect()),
        _ => None,
    }
}

/// `text` over the default fields: a word with [`Delimiter::None`], a
/// phrase with [`Delimiter::DoubleQuotes`].
fn literal(text: String, delimiter: Delimiter) -> UserInputAst {
    UserInputAst::from(UserInputLeaf::Literal(UserInputLiteral {
        field_name: None,
        phrase: text,
        delimiter,
        slop: 0,
        prefix: false,
    }))
}

/// Optional words as one clause: each ranks, none is required. `None`
/// when every word is a stop word.
fn optional_words(words: Vec<String>) -> Option<UserInputAst> {
    any_of(words.into_iter().filter(|w| !is_stop_word(w)).collect())
}

/// Any of `words`; `None` when there are none.
fn any_of(words: Vec<String>) -> Option<UserInputAst> {
    let mut words: Vec<UserInputAst> = words
        .into_iter()
        .map(|w| literal(w, Delimiter::None))
        .collect();
    match words.len() {
        0 => None,
        1 => words.pop(),
        _ => Some(UserInputAst::Clause(
            words
                .into_iter()
                .map(|w| (Some(Occur::Should), w))
                .collect(),
        )),
    }
}

/// The optional words of `text`, how a query that is not valid syntax
/// is searched; all of them when all are stop words.
pub(crate) fn words_of(text: &str) -> Option<UserInputAst> {
    let mut words: Vec<String> = tokenize(text).into_iter().map(|t| t.text).collect();
    let mut seen = std::collections::HashSet::new();
    words.retain(|w| seen.insert(w.clone()));
    optional_words(words.clone()).or_else(|| any_of(words))
}

/// What a query (as [`rewrite_query`] left it) means; see the module
/// documentation. `Ok(None)` when nothing is left to search, `Err(())`
/// when `text` is not valid syntax.
pub(crate) fn meaning(text: &str) -> Result<Option<UserInputAst>, ()> {
    if too_deep(text).is_some() {
        return Err(());
    }
    // The lenient grammar: the strict one takes time exponential in the
    // nesting of parentheses.
    let (ast, errors) = tantivy::query_grammar::parse_query_lenient(text);
    if !errors.is_empty() {
        return Err(());
    }
    let only_words = only_words(&ast);
    Ok(shape(ast, 0).or_else(|| only_words.filter(|w| !w.is_empty()).map(phrase)))
}

/// Whether `text` is plain words only, with no syntax (filters, `+`,
/// `-`, phrases, prefixes, boosts): such a query is searched by meaning as
/// well as by words. A query with syntax asks for exactly what it says.
pub(crate) fn is_plain_words(text: &str) -> bool {
    if too_deep(text).is_some() {
        return false;
    }
    let (ast, errors) = tantivy::query_grammar::parse_query_lenient(text);
    errors.is_empty() && only_words(&ast).is_some_and(|w| !w.is_empty())
}

/// How a search ranks: words and meaning fused (the default), or one of
/// them alone (`mode:words`, `mode:meaning` in the query, for comparing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Fused,
    Words,
    Meaning,
}

/// The query without its `mode:` option, and the mode it asks for.
pub(crate) fn take_mode(query: &str) -> (std::borrow::Cow<'_, str>, Mode) {
    if !query.contains("mode:") {
        return (std::borrow::Cow::Borrowed(query), Mode::Fused);
    }
    let mut mode = Mode::Fused;
    let mut rest = Vec::new();
    for word in query.split_whitespace() {
        match word {
            "mode:words" => mode = Mode::Words,
            "mode:meaning" => mode = Mode::Meaning,
            "mode:fused" => mode = Mode::Fused,
            _ => rest.push(word),
        }
    }
    (std::borrow::Cow::Owned(rest.join(" ")), mode)
}

/// The words of a query that is nothing but optional plain words.
fn only_words(ast: &UserInputAst) -> Option<Vec<String>> {
    if let Some(words) = plain_words(ast) {
        return Some(words);
    }
    let UserInputAst::Clause(children) = ast else {
        return None;
    };
    let mut words = Vec::new();
    for (occur, child) in children {
        if occur.is_some_and(|o| o != Occur::Should) {
            return None;
        }
        words.extend(plain_words(child)?);
    }
    Some(words)
}

/// `words` as one phrase: how a query of stop words only ("the who") is
/// searched, so that it finds those words together or nothing.
fn phrase(words: Vec<String>) -> UserInputAst {
    literal(words.join(" "), Delimiter::DoubleQuotes)
}

/// `ast` in optional position: words that rank.
fn shape(ast: UserInputAst, depth: usize) -> Option<UserInputAst> {
    if depth > MAX_NESTING {
        return None;
    }
    if let Some(words) = plain_words(&ast) {
        return optional_words(words);
    }
    match ast {
        UserInputAst::Clause(children) => shape_clause(children, depth),
        UserInputAst::Boost(inner, boost) => {
            shape(*inner, depth + 1).map(|inner| UserInputAst::Boost(Box::new(inner), boost))
        }
        leaf => Some(leaf),
    }
}

fn shape_clause(
    children: Vec<(Option<Occur>, UserInputAst)>,
    depth: usize,
) -> Option<UserInputAst> {
    let ranked = children
        .iter()
        .filter(|(occur, c)| *occur != Some(Occur::MustNot) && !is_filter(c))
        .count();
    let mut out = Vec::with_capacity(children.len());
    for (occur, child) in children {
        let is_all = matches!(&child, UserInputAst::Leaf(l) if **l == UserInputLeaf::All);
        match occur {
            // Exclusions and required parts mean what they say; inside a
            // required group, words are still optional among themselves.
            Some(Occur::MustNot) => out.push((occur, child)),
            Some(Occur::Must) if plain_words(&child).is_some() => out.push((occur, child)),
            Some(Occur::Must) => {
                if let Some(c) = shape(child, depth + 1) {
                    out.push((occur, c));
                }
            }
            None if is_filter(&child) && ranked > 0 => {
                out.push((Some(Occur::Must), UserInputAst::Boost(Box::new(child), 0.0)));
            }
            None if is_filter(&child) => out.push((Some(Occur::Must), child)),
            _ if is_all && ranked > 1 => {}
            _ => {
                if let Some(c) = shape(child, depth + 1) {
                    out.push((occur, c));
                }
            }
        }
    }
    if out.iter().all(|(occur, _)| *occur == Some(Occur::MustNot)) {
        // Nothing left that matches: the exclusions alone exclude from
        // nothing.
        return None;
    }
    Some(UserInputAst::Clause(out))
}

/// What to tell the author of `query` when it found nothing: what was
/// searched for and how to search more broadly.
pub fn nothing_found(query: &str) -> String {
    let none = |_: Option<&'static str>, p: &str| (vec![p.to_owned()], false);
    let (text, _) = take_limit(query);
    let (text, _) = take_mode(&text);
    let rewritten = rewrite_query(&prose_flags(&text), &none).text;
    let mut words = Vec::new();
    let mut filters = Vec::new();
    match meaning(&rewritten) {
        Ok(Some(ast)) => parts(&ast, &mut words, &mut filters),
        Ok(None) => {}
        Err(()) => {
            if let Some(ast) = words_of(&text) {
                parts(&ast, &mut words, &mut filters);
            }
        }
    }
    let mut out = format!("No memory matched {:?}.", text.trim());
    if words.is_empty() && filters.is_empty() {
        out.push_str(" It has no words to search for: ask in plain words, such as \"what does the user prefer for formatting\".");
        return out;
    }
    if !words.is_empty() {
        out.push_str(&format!(
            " Searched for any of: {} (common words such as \"what\" and \"the\" are left out; other forms of a word match too).",
            words.join(", ")
        ));
    }
    if !filters.is_empty() {
        out.push_str(&format!(
            " Only among memories with {}.",
            filters.join(" and ")
        ));
    }
    out.push_str(" Try other words for the same thing, a prefix (`deploy*`)");
    if filters.is_empty() {
        out.push_str(", or fewer quoted phrases and required `+words`.");
    } else {
        out.push_str(", or the query without its filters.");
    }
    out
}

/// The words and the filters of a meaning, as its author wrote them.
fn parts(ast: &UserInputAst, words: &mut Vec<String>, filters: &mut Vec<String>) {
    match ast {
        UserInputAst::Clause(children) => {
            for (occur, child) in children {
                if *occur != Some(Occur::MustNot) {
                    parts(child, words, filters);
                }
            }
        }
        UserInputAst::Boost(inner, _) => parts(inner, words, filters),
        UserInputAst::Leaf(leaf) => {
            let shown = match leaf.as_ref() {
                UserInputLeaf::Literal(l) if l.delimiter != Delimiter::None => {
                    format!("\"{}\"", l.phrase)
                }
                _ => format!("{leaf:?}").replace('"', ""),
            };
            if is_filter(ast) {
                filters.push(format!("`{shown}`"));
            } else if !words.contains(&shown) {
                words.push(shown);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_and_its_filters_come_apart() {
        for (query, words) in [
            (
                "(who does our bookkeeping) category:people created:[2026-01-01 TO *]",
                "who does our bookkeeping",
            ),
            (
                "who does our bookkeeping created:>=2026-01-01 tags:\"ui\"",
                "who does our bookkeeping",
            ),
        ] {
            assert_eq!(
                words_beside_filters(query).as_deref(),
                Some(words),
                "{query}"
            );
        }
        for whole in [
            "who does our bookkeeping",
            "category:people",
            "title:carol bookkeeping",
            "\"our bookkeeping\" tag:x",
            "bookkeeping -tag:x",
        ] {
            assert_eq!(words_beside_filters(whole), None, "{whole}");
        }
    }

    #[test]
    fn colons_in_prose_are_not_fields() {
        assert_eq!(
            prose_colons("when is my 1:1 with my manager?"),
            "when is my 1 1 with my manager?"
        );
        assert_eq!(
            prose_colons("what happened at 3:30 yesterday"),
            "what happened at 3 30 yesterday"
        );
        assert_eq!(prose_colons("Reminder: call Bob"), "Reminder  call Bob");
        assert_eq!(
            prose_colons("see https://example.com"),
            "see https //example.com"
        );
        assert_eq!(prose_colons("email: bob"), "email  bob");
        // Fields, and a misspelt one (reported), stay as written.
        for query in [
            "tag:rust",
            "created:>7d db",
            "catgory:people",
            "mode:words x",
            "limit:5 x",
            "scope:agent:claude",
            "scope:\"agent:claude\" and \"at 3:30\"",
            "scope:agent\\:claude",
        ] {
            assert_eq!(prose_colons(query), query);
        }
        assert_eq!(prose_colons("日程：3:30"), "日程：3 30");
    }

    fn rewrite(query: &str) -> String {
        let none = |_: Option<&'static str>, _: &str| (Vec::new(), false);
        rewrite_query(query, &none).text
    }

    #[test]
    fn rewrites_friendly_names_and_dates() {
        assert_eq!(rewrite("tags:ui dark"), "tag:ui dark");
        assert_eq!(
            rewrite("created:[2025-01-01 TO 2025-12-31]"),
            "created:[2025-01-01T00:00:00Z TO 2025-12-31T00:00:00Z]"
        );
        assert_eq!(
            rewrite("updated:>2026-01-01 x"),
            "updated:>2026-01-01T00:00:00Z x"
        );
        assert_eq!(
            rewrite("created:2025-03-01"),
            "created:[2025-03-01T00:00:00Z TO 2025-03-02T00:00:00Z}"
        );
        assert_eq!(rewrite("(kind:decision)"), "(type:decision)");
        assert_eq!(rewrite("mytag:x"), "mytag:x");
        assert_eq!(rewrite("created:[2025-01-01 TO"), "created:[2025-01-01 TO");
        assert_eq!(rewrite("scope:agent:x y"), "scope:\"agent:x\" y");
        assert_eq!(rewrite("source:claude"), "source:claude");
    }

    #[test]
    fn days_named_from_today() {
        let today = jiff::civil::date(2026, 11, 27);
        let day = |t: &str| day_from(t, today).map(|d| d.to_string());
        assert_eq!(day("yesterday").as_deref(), Some("2026-11-26"));
        assert_eq!(day("Today").as_deref(), Some("2026-11-27"));
        assert_eq!(day("tomorrow").as_deref(), Some("2026-11-28"));
        assert_eq!(day("7d").as_deref(), Some("2026-11-20"));
        assert_eq!(day("2w").as_deref(), Some("2026-11-13"));
        assert_eq!(day("3m").as_deref(), Some("2026-08-27"));
        assert_eq!(day("1y").as_deref(), Some("2025-11-27"));
        for not in [
            "d",
            "7x",
            "-3d",
            "99999d",
            "10000y",
            "soon",
            "2026-01-01",
            "7🡳",
            "🡳d",
        ] {
            assert_eq!(day(not), None, "{not}");
        }
        // In a query: after the start of yesterday; a day named alone is
        // that whole day.
        let yesterday = jiff::Zoned::now().date().yesterday().unwrap();
        assert_eq!(
            rewrite("created:>yesterday x"),
            format!("created:>{yesterday}T00:00:00Z x")
        );
        assert!(
            rewrite("updated:yesterday")
                .starts_with(&format!("updated:[{yesterday}T00:00:00Z TO "))
        );
        assert_eq!(
            rewrite("created:[30d TO today]"),
            format!(
                "created:[{}T00:00:00Z TO {}T00:00:00Z]",
                yesterday
                    .tomorrow()
                    .unwrap()
                    .checked_sub(jiff::ToSpan::days(30))
                    .unwrap(),
                yesterday.tomorrow().unwrap()
            )
        );
    }

    #[test]
    fn and_not_is_read_as_not() {
        assert_eq!(rewrite("a AND NOT tag:x"), "a NOT tag:x");
        assert_eq!(rewrite("a AND NOT (b OR c)"), "a NOT (b OR c)");
        assert_eq!(rewrite("a AND NOTE"), "a AND NOTE");
        assert_eq!(rewrite("\"a AND NOT b\""), "\"a AND NOT b\"");
    }

    #[test]
    fn bad_dates_are_left_out_and_reported() {
        let none = |_: Option<&'static str>, _: &str| (Vec::new(), false);
        let r = rewrite_query("apple created:>notadate pie", &none);
        assert_eq!(r.text, "apple * pie");
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("`notadate` is not a date"), "{r:?}");
        let r = rewrite_query("created:[2025-01-01 TO soon] x", &none);
        assert_eq!(r.text, "* x");
        assert!(r.warnings[0].contains("`soon`"), "{r:?}");
    }

    #[test]
    fn prefixes_become_the_words_they_stand_for() {
        let words = |field: Option<&'static str>, prefix: &str| match (field, prefix) {
            (None, "zeph") => (vec!["zephyr".to_owned(), "zephyrs".to_owned()], false),
            (Some("tag"), "pro") => (vec!["project".to_owned()], true),
            _ => (Vec::new(), false),
        };
        let r = rewrite_query("Zeph* AND tag:pro* nothing*", &words);
        assert_eq!(
            r.text,
            "(\"zephyr\" OR \"zephyrs\") AND (tag:\"project\") \"nothing\""
        );
        assert_eq!(r.warnings.len(), 1, "{r:?}");
        assert_eq!(rewrite("\"big bad wo\"* x"), "\"big bad wo\"* x");
    }

    /// The query `text` means, as tantivy's grammar prints it.
    fn meant(text: &str) -> String {
        match meaning(&rewrite(text)) {
            Ok(Some(ast)) => format!("{ast:?}"),
            Ok(None) => "nothing".to_owned(),
            Err(()) => "not valid syntax".to_owned(),
        }
    }

    #[test]
    fn a_question_is_its_content_words_each_optional() {
        assert_eq!(
            meant("What does the user prefer for code formatting?"),
            "(*user *prefer *code *formatting)"
        );
        assert_eq!(meant("what's Caroline's plan"), "(*caroline *plan)");
        assert_eq!(meant("what is it?"), "\"what is it\"");
        assert_eq!(meant("dark-mode settings"), "(*(?dark ?mode) *settings)");
    }

    #[test]
    fn required_and_excluded_words_keep_their_meaning() {
        assert_eq!(meant("+the band"), "(+the *band)");
        assert_eq!(meant("band -the"), "(*band -the)");
        assert_eq!(meant("cats AND dogs"), "(+cats +dogs)");
        assert_eq!(meant("\"the band\" x"), "(*\"the band\" *x)");
        assert_eq!(meant("-the"), "nothing");
    }

    #[test]
    fn filters_are_required_and_score_nothing_beside_words() {
        assert_eq!(
            meant("type:decision database"),
            "(+(\"type\":decision)^0 *database)"
        );
        assert_eq!(meant("type:decision"), "\"type\":decision");
        assert_eq!(meant("tag:a the"), "(+(\"tag\":a)^0)");
        assert_eq!(
            meant("(tag:a OR tag:b) db"),
            "(+((?\"tag\":a ?\"tag\":b))^0 *db)"
        );
    }

    #[test]
    fn a_star_left_for_a_bad_date_does_not_match_everything_beside_words() {
        assert_eq!(meant("apple created:>notadate pie"), "(*apple *pie)");
    }

    #[test]
    fn nothing_found_says_what_was_searched() {
        let note = nothing_found("When does the billing deploy freeze start?");
        assert!(
            note.contains("any of: billing, deploy, freeze, start ("),
            "{note}"
        );
        let note = nothing_found("type:decision zebra limit:5");
        assert!(note.contains("any of: zebra ("), "{note}");
        assert!(note.contains("with `type:decision`"), "{note}");
        assert!(note.contains("without its filters"), "{note}");
        assert!(nothing_found("  ").contains("no words"));
        // `mode:` chooses a ranking; it is not a word searched for.
        let note = nothing_found("mode:words zebra");
        assert!(
            note.contains("matched \"zebra\"") && !note.contains("mode"),
            "{note}"
        );
    }

    #[test]
    fn deep_nesting_is_too_deep_to_parse() {
        let deep = format!("{}word{}", "(".repeat(1000), ")".repeat(1000));
        assert!(too_deep(&deep).expect("too deep").contains("1000 levels"));
        assert_eq!(meaning(&deep), Err(()));
        let nots = format!("{}word", "NOT ".repeat(5000));
        assert!(too_deep(&nots).is_some());
        assert_eq!(too_deep("(a (b)) \"((((\" NOT x"), None);
        // Thirty-two levels parse, at once.
        let ok = format!("{}word{}", "(".repeat(32), ")".repeat(32));
        assert!(matches!(meaning(&ok), Ok(Some(_))));
    }
}
