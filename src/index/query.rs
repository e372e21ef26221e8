//! Reading the index: search, the filter views, the link graph.
//!
//! Search is lenient by contract: the text a user typed as a directory
//! name must never make a lookup fail. Before parsing, friendly field
//! names are mapped to schema fields (`tags:` → `tag:`, `kind:` →
//! `type:`, `created_at:` → `created:`) and dates after `created:` /
//! `updated:` are turned into the RFC 3339 instants tantivy expects (a
//! bare day `created:2025-03-01` becomes that whole day). If tantivy still
//! reports a syntax error, the query falls back to a plain OR of its words.
//! After parsing, [`Tuning`] boosts title and alias and drops the clauses
//! of words no document has, so tantivy can prune; `ranking.rs` collects
//! the best hits and `snippet.rs` picks each hit's excerpt.
//!
//! Subtleties:
//! - A query with boosts of its own (`word^2`) is run as the parser builds
//!   it, boosts included: the tuning cannot see inside a boosted clause.
//! - Deleted documents stay in term dictionaries until segments merge, so
//!   [`Index::tags`] checks each term's postings against the alive bitset
//!   instead of trusting the dictionary.
//! - Views map documents to paths through the `path` fast field, never the
//!   document store, so a tag with 10k memories costs a column scan.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::{
    BooleanQuery, BoostQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, QueryParser, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Term, Value};
use tantivy::time::OffsetDateTime;
use tantivy::time::format_description::well_known::Rfc3339;
use tantivy::{DocAddress, DocSet, Order, Searcher, TERMINATED, TantivyDocument};

use super::document::{normalize_key, path_from_key};
use super::ranking::{Excluding, TopHits, prunable};
use super::schema::{FLAG_LINT, KIND_MEMORY, KIND_SKIPPED, names};
use super::snippet::SnippetWords;
use super::tokenizer::tokenize;
use super::{Hit, Index, IndexError};
use crate::memory::parse_timestamp;
use crate::store::StorePath;

/// Longest snippet, in characters.
const SNIPPET_CHARS: usize = 200;
const TITLE_BOOST: f32 = 3.0;
const ALIAS_BOOST: f32 = 2.0;

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
    parse_timestamp(token)
        .and_then(rfc3339)
        .ok_or_else(|| token.to_owned())
}

/// Whether `token` is a bare `YYYY-MM-DD` day.
fn is_day(token: &str) -> bool {
    token.len() == 10 && parse_timestamp(token).is_some()
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
        if let (Some(from), Some(to)) = (
            parse_timestamp(value).and_then(rfc3339),
            parse_timestamp(value).and_then(|s| rfc3339(s + 86_400)),
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

/// Maps friendly field names to schema fields, dates to RFC 3339 and
/// `prefix*` to the words it stands for; reports values it had to drop.
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
        if !at_boundary {
            out.text.push(c);
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
        out.text.push(c);
        rest = &rest[c.len_utf8()..];
        at_boundary = c.is_whitespace() || matches!(c, '(' | '+' | '-');
    }
    out
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
                    "`{field}:{}` was left out: `{bad}` is not a date (write 2026-01-31, 2026-01-31T09:00:00Z or a range like [2026-01-01 TO 2026-02-01])",
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

/// Text on one line, whitespace collapsed, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() >= max {
            break;
        }
    }
    match out.char_indices().nth(max) {
        Some((cut, _)) => out[..cut].to_owned(),
        None => out,
    }
}

/// Turns a parsed query into the one tantivy runs fast: title and alias
/// clauses get their boosts here instead of in the parser, and clauses of
/// terms no document has are dropped.
///
/// tantivy skips the blocks of a union of term queries that cannot reach
/// the top (block-max WAND) only when every term of the union has postings
/// with frequencies. One word over the four default fields is a union of
/// four term queries, and a word that is not a tag or an alias anywhere
/// has empty postings there: the union then scored every document that
/// has the word (a common word over 100k notes: all of them).
struct Tuning<'a> {
    searcher: &'a Searcher,
    fields: &'a super::schema::Fields,
}

impl Tuning<'_> {
    /// `query` as it should run, or `None` when it can match nothing.
    fn tune(&self, query: &dyn Query) -> Option<Box<dyn Query>> {
        if let Some(boolean) = query.downcast_ref::<BooleanQuery>() {
            return self.tune_boolean(boolean);
        }
        let field = if let Some(term) = query.downcast_ref::<TermQuery>() {
            if !self.present(term.term()) {
                return None;
            }
            Some(term.term().field())
        } else if let Some(phrase) = query.downcast_ref::<PhraseQuery>() {
            if !phrase.phrase_terms().iter().all(|t| self.present(t)) {
                return None;
            }
            Some(phrase.field())
        } else {
            query
                .downcast_ref::<PhrasePrefixQuery>()
                .map(PhrasePrefixQuery::field)
        };
        let boost = match field {
            Some(f) if f == self.fields.title => TITLE_BOOST,
            Some(f) if f == self.fields.alias => ALIAS_BOOST,
            _ => return Some(query.box_clone()),
        };
        Some(Box::new(BoostQuery::new(query.box_clone(), boost)))
    }

    fn tune_boolean(&self, boolean: &BooleanQuery) -> Option<Box<dyn Query>> {
        let minimum = boolean.get_minimum_number_should_match();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (occur, clause) in boolean.clauses() {
            match self.tune(clause.as_ref()) {
                Some(tuned) => clauses.push((*occur, tuned)),
                // A required clause that matches nothing: nothing matches.
                None if *occur == Occur::Must => return None,
                // An optional clause or an exclusion of nothing: no effect.
                None => {}
            }
        }
        let count = |wanted: Occur| clauses.iter().filter(|(o, _)| *o == wanted).count();
        let (should, must) = (count(Occur::Should), count(Occur::Must));
        if should < minimum || should + must == 0 {
            return None;
        }
        if clauses.len() == 1 && minimum <= 1 {
            // The clause alone matches and scores the same documents.
            return clauses.pop().map(|(_, q)| q);
        }
        Some(Box::new(BooleanQuery::with_minimum_required_clauses(
            clauses, minimum,
        )))
    }

    fn present(&self, term: &Term) -> bool {
        some_document_has(self.searcher, term)
    }
}

/// Whether some document has `term` (true when the searcher cannot tell).
fn some_document_has(searcher: &Searcher, term: &Term) -> bool {
    searcher.doc_freq(term).map_or(true, |n| n > 0)
}

impl Index {
    fn searcher(&self) -> Searcher {
        self.caught_up();
        self.inner.core.reader.searcher()
    }

    /// The query parser over the default fields; with `boosted`, it
    /// boosts title and alias itself (see [`Tuning`] for the other way).
    fn parser(&self, boosted: bool) -> QueryParser {
        let f = &self.inner.core.fields;
        let mut parser = QueryParser::for_index(
            &self.inner.core.index,
            vec![f.title, f.body, f.tag, f.alias],
        );
        if boosted {
            parser.set_field_boost(f.title, TITLE_BOOST);
            parser.set_field_boost(f.alias, ALIAS_BOOST);
        }
        parser.set_conjunction_by_default();
        parser
    }

    /// An OR of the query's words over the default fields, unboosted.
    fn plain_terms(&self, query: &str) -> Option<Box<dyn Query>> {
        let f = &self.inner.core.fields;
        let mut words: Vec<String> = tokenize(query).into_iter().map(|t| t.text).collect();
        words.sort();
        words.dedup();
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in &words {
            for field in [f.title, f.body, f.alias, f.tag] {
                let term = TermQuery::new(
                    Term::from_field_text(field, word),
                    IndexRecordOption::WithFreqs,
                );
                clauses.push((Occur::Should, Box::new(term)));
            }
        }
        (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
    }

    /// Ranked full-text search. Never fails on query syntax: an invalid
    /// query is searched as plain words; an empty one has no hits.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, IndexError> {
        self.search_hiding(query, limit, &[])
    }

    /// Like [`search`](Self::search), leaving out the memories whose
    /// `scope` is one of `hidden` (as [`scopes`](Self::scopes) names them).
    pub fn search_hiding(
        &self,
        query: &str,
        limit: usize,
        hidden: &[String],
    ) -> Result<Vec<Hit>, IndexError> {
        self.search_noting(query, limit, hidden)
            .map(|(hits, _)| hits)
    }

    /// [`search_hiding`](Self::search_hiding), and what
    /// [`query_warnings`](Self::query_warnings) says of the query, from
    /// one reading of it.
    pub fn search_noting(
        &self,
        query: &str,
        limit: usize,
        hidden: &[String],
    ) -> Result<(Vec<Hit>, Vec<String>), IndexError> {
        let f = self.inner.core.fields;
        let mut warnings = Vec::new();
        let Some((searcher, query, top)) = self.ranked(query, limit, hidden, &mut warnings)? else {
            return Ok((Vec::new(), warnings));
        };
        let snippets = SnippetWords::of(&searcher, &*query, f.body);
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address)?;
            let Some(path) = stored_path(&doc, f.path) else {
                continue;
            };
            let title = doc
                .get_first(f.title)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned();
            let id = doc
                .get_first(f.id)
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            // Cut from the file as it is now: the index keeps no copy.
            let body = self
                .inner
                .core
                .store
                .as_deref()
                .and_then(|store| super::document::body_of(store, &path))
                .unwrap_or_default();
            let body = body.trim();
            let fragment = snippets.best(body, SNIPPET_CHARS);
            let snippet = if fragment.trim().is_empty() {
                one_line(body, SNIPPET_CHARS)
            } else {
                one_line(fragment, SNIPPET_CHARS)
            };
            hits.push(Hit {
                path,
                title,
                score,
                snippet,
                id,
            });
        }
        Ok((hits, warnings))
    }

    /// The query `text` means, or `None` when it has no words, and what
    /// its author should be told about how it was read.
    fn prepare(&self, searcher: &Searcher, text: &str) -> (Option<Box<dyn Query>>, Vec<String>) {
        let expand =
            |field: Option<&'static str>, prefix: &str| self.prefix_terms(searcher, field, prefix);
        let rewritten = rewrite_query(text, &expand);
        let mut warnings = rewritten.warnings;
        // A query with boosts of its own (`word^2`) is run as the parser
        // builds it: a boosted clause is opaque to the tuning, which would
        // leave the title and alias inside it unboosted.
        let own_boosts = rewritten.text.contains('^');
        let (parsed, errors) = self.parser(own_boosts).parse_query_lenient(&rewritten.text);
        let tuning = Tuning {
            searcher,
            fields: &self.inner.core.fields,
        };
        if errors.is_empty() {
            if own_boosts {
                return (Some(parsed), warnings);
            }
            return (tuning.tune(&*parsed), warnings);
        }
        tracing::debug!(
            "query {text:?} is not valid syntax ({:?}); searching its words",
            errors.first()
        );
        let unknown: Vec<String> = errors
            .iter()
            .filter_map(|e| match e {
                tantivy::query::QueryParserError::FieldDoesNotExist(name) => {
                    Some(format!("`{name}:`"))
                }
                _ => None,
            })
            .collect();
        warnings.push(if unknown.is_empty() {
            "the query is not valid syntax, so its words were searched instead".to_owned()
        } else {
            format!(
                "{} is not a field (fields: tag, category, type, status, scope, source, phase, id, alias, title, body, link, created, updated), so the query's words were searched instead",
                unknown.join(", ")
            )
        });
        let plain = self.plain_terms(text).and_then(|q| tuning.tune(&*q));
        (plain, warnings)
    }

    /// What [`Index::search`] would say about how it read `query`: fields
    /// it does not know, values that are not dates, prefixes cut short.
    pub fn query_warnings(&self, query: &str) -> Vec<String> {
        let text = query.trim();
        if text.is_empty() {
            return Vec::new();
        }
        self.prepare(&self.searcher(), text).1
    }

    /// The words of `field` (or of the default fields) that start with
    /// `prefix`, most frequent first, at most [`MAX_PREFIX_TERMS`]; and
    /// whether some were left out.
    fn prefix_terms(
        &self,
        searcher: &Searcher,
        field: Option<&'static str>,
        prefix: &str,
    ) -> (Vec<String>, bool) {
        let f = &self.inner.core.fields;
        let fields = match field {
            None => vec![f.title, f.body, f.alias, f.tag],
            Some(name) => match self.inner.core.index.schema().get_field(name) {
                Ok(field) if field != f.created && field != f.updated => vec![field],
                _ => return (Vec::new(), false),
            },
        };
        let mut upper = prefix.as_bytes().to_vec();
        upper.push(0xff);
        let mut frequency: BTreeMap<String, u64> = BTreeMap::new();
        for segment in searcher.segment_readers() {
            for &field in &fields {
                let result = (|| -> tantivy::Result<()> {
                    let inverted = segment.inverted_index(field)?;
                    let mut stream = inverted
                        .terms()
                        .range()
                        .ge(prefix.as_bytes())
                        .lt(&upper)
                        .into_stream()?;
                    while stream.advance() {
                        if let Ok(word) = std::str::from_utf8(stream.key()) {
                            *frequency.entry(word.to_owned()).or_default() +=
                                u64::from(stream.value().doc_freq);
                        }
                    }
                    Ok(())
                })();
                if let Err(e) = result {
                    tracing::warn!("cannot expand {prefix}*: {e}");
                }
            }
        }
        let cut = frequency.len() > MAX_PREFIX_TERMS;
        let mut words: Vec<(String, u64)> = frequency.into_iter().collect();
        words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        words.truncate(MAX_PREFIX_TERMS);
        (words.into_iter().map(|(w, _)| w).collect(), cut)
    }

    /// The parsed (or fallback) query and its top `limit` documents; what
    /// its author should be told goes to `warnings`.
    #[allow(clippy::type_complexity)]
    fn ranked(
        &self,
        query: &str,
        limit: usize,
        hidden_scopes: &[String],
        warnings: &mut Vec<String>,
    ) -> Result<Option<(Searcher, Box<dyn Query>, Vec<(f32, DocAddress)>)>, IndexError> {
        let text = query.trim();
        if text.is_empty() {
            return Ok(None);
        }
        let f = self.inner.core.fields;
        let searcher = self.searcher();
        let (query, noted) = self.prepare(&searcher, text);
        *warnings = noted;
        let Some(query) = query else {
            return Ok(None);
        };
        // The limit comes from user text: never size buffers by it.
        let limit = limit.min(searcher.num_docs() as usize);
        if limit == 0 {
            return Ok(None);
        }
        // Exclusions only for terms some document has, left out inside
        // tantivy's pruning (see `ranking.rs`).
        let excluded: Vec<Term> = std::iter::once(Term::from_field_text(f.kind, KIND_SKIPPED))
            .chain(
                hidden_scopes
                    .iter()
                    .map(|scope| Term::from_field_text(f.scope, scope)),
            )
            .filter(|term| some_document_has(&searcher, term))
            .collect();
        let collector = TopHits::with_limit(limit);
        let pruned = prunable(query.box_clone(), searcher.schema());
        let top = if excluded.is_empty() {
            searcher.search(&*pruned, &collector)?
        } else {
            searcher.search(&Excluding::new(pruned, excluded), &collector)?
        };
        Ok(Some((searcher, query, top)))
    }

    /// The paths [`Index::search`] would return, in rank order, without
    /// loading documents or making snippets (for directory listings).
    pub fn search_paths(&self, query: &str, limit: usize) -> Result<Vec<StorePath>, IndexError> {
        let Some((searcher, _, top)) = self.ranked(query, limit, &[], &mut Vec::new())? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(top.len());
        let mut buf = Vec::new();
        for (_, address) in top {
            let Some(column) = searcher
                .segment_reader(address.segment_ord)
                .fast_fields()
                .bytes(names::PATH)?
            else {
                continue;
            };
            if let Some(ord) = column.term_ords(address.doc_id).next() {
                buf.clear();
                if matches!(column.ord_to_bytes(ord, &mut buf), Ok(true))
                    && let Some(p) = path_from_key(&buf)
                {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }

    fn term_query(&self, field: Field, value: &str) -> TermQuery {
        TermQuery::new(
            Term::from_field_text(field, value),
            IndexRecordOption::Basic,
        )
    }

    /// Paths of every document `query` matches, sorted.
    fn paths_matching(&self, query: &dyn Query) -> Vec<StorePath> {
        let searcher = self.searcher();
        match self.try_paths_matching(&searcher, query) {
            Ok(paths) => paths,
            Err(e) => {
                tracing::warn!("index lookup failed: {e}");
                Vec::new()
            }
        }
    }

    fn try_paths_matching(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
    ) -> Result<Vec<StorePath>, IndexError> {
        paths_matching_in(searcher, query)
    }

    /// The memories a link target names: by id, title, file stem, path or
    /// alias, case-insensitively. More than one means the name is ambiguous.
    pub fn resolve(&self, name: &str) -> Vec<StorePath> {
        let key = normalize_key(name);
        if key.is_empty() {
            return Vec::new();
        }
        self.paths_matching(&self.term_query(self.inner.core.fields.key, &key))
    }

    /// Memories whose links point at `target`: an id, title, file stem,
    /// path or alias, compared case-insensitively. When `target` names
    /// existing memories, links to any of their names count.
    pub fn backlinks(&self, target: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        let key = normalize_key(target);
        if key.is_empty() {
            return Vec::new();
        }
        let searcher = self.searcher();
        let mut keys = BTreeSet::from([key.clone()]);
        let targets: HashSet<DocAddress> = searcher
            .search(&self.term_query(f.key, &key), &DocSetCollector)
            .unwrap_or_default();
        for address in targets {
            match searcher.doc::<TantivyDocument>(address) {
                Ok(doc) => keys.extend(
                    doc.get_all(f.key)
                        .filter_map(|v| v.as_str())
                        .map(str::to_owned),
                ),
                Err(e) => tracing::warn!("cannot read a link target: {e}"),
            }
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = keys
            .iter()
            .map(|k| {
                (
                    Occur::Should,
                    Box::new(self.term_query(f.link, k)) as Box<dyn Query>,
                )
            })
            .collect();
        self.paths_matching(&BooleanQuery::new(clauses))
    }

    /// Memories whose frontmatter `category` is `category`.
    pub fn by_category(&self, category: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        self.paths_matching(&self.term_query(f.category, &category.trim().to_lowercase()))
    }

    /// Memories tagged `tag` (frontmatter or inline; without `#`).
    pub fn by_tag(&self, tag: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        let tag = tag.trim().trim_start_matches('#').to_lowercase();
        self.paths_matching(&self.term_query(f.tag, &tag))
    }

    /// Memories whose frontmatter `type` is `kind`.
    pub fn by_type(&self, kind: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        self.paths_matching(&self.term_query(f.kind_type, &kind.trim().to_lowercase()))
    }

    /// Memories whose frontmatter `phase` is `phase` (inbox, organized,
    /// archived).
    pub fn by_phase(&self, phase: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        self.paths_matching(&self.term_query(f.phase, &phase.trim().to_lowercase()))
    }

    /// Every tag some memory has, sorted.
    pub fn tags(&self) -> Vec<String> {
        self.live_terms(self.inner.core.fields.tag)
    }

    /// Every `scope` some memory has, sorted, as the index keeps them
    /// (lowercase).
    pub fn scopes(&self) -> Vec<String> {
        self.live_terms(self.inner.core.fields.scope)
    }

    /// Memories whose frontmatter `scope` is `scope` (any case).
    pub fn by_scope(&self, scope: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        self.paths_matching(&self.term_query(f.scope, &scope.trim().to_lowercase()))
    }

    /// Every `type` some memory has, sorted.
    pub fn types(&self) -> Vec<String> {
        self.live_terms(self.inner.core.fields.kind_type)
    }

    /// Terms of `field` that at least one live document has.
    fn live_terms(&self, field: Field) -> Vec<String> {
        let searcher = self.searcher();
        let mut out = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let result = (|| -> tantivy::Result<()> {
                let inverted = segment.inverted_index(field)?;
                let alive = segment.alive_bitset();
                let mut stream = inverted.terms().stream()?;
                while stream.advance() {
                    let Ok(term) = std::str::from_utf8(stream.key()) else {
                        continue;
                    };
                    if out.contains(term) {
                        continue;
                    }
                    let live = match alive {
                        None => true,
                        Some(alive) => {
                            let mut postings = inverted.read_postings_from_terminfo(
                                stream.value(),
                                IndexRecordOption::Basic,
                            )?;
                            let mut found = false;
                            while postings.doc() != TERMINATED {
                                if alive.is_alive(postings.doc()) {
                                    found = true;
                                    break;
                                }
                                postings.advance();
                            }
                            found
                        }
                    };
                    if live {
                        out.insert(term.to_owned());
                    }
                }
                Ok(())
            })();
            if let Err(e) = result {
                tracing::warn!("cannot list index terms: {e}");
            }
        }
        out.into_iter().filter(|t| !t.is_empty()).collect()
    }

    /// The memory with frontmatter `id` (case-insensitive); if several
    /// claim it, the first by path.
    pub fn by_id(&self, id: &str) -> Option<StorePath> {
        let f = self.inner.core.fields;
        let id = id.trim().to_lowercase();
        if id.is_empty() {
            return None;
        }
        self.paths_matching(&self.term_query(f.id, &id))
            .into_iter()
            .next()
    }

    /// Every document whose `id` is `id` (more than one when a memory was
    /// copied), sorted.
    pub fn paths_with_id(&self, id: &str) -> Vec<StorePath> {
        let f = self.inner.core.fields;
        let id = id.trim().to_lowercase();
        if id.is_empty() {
            return Vec::new();
        }
        self.paths_matching(&self.term_query(f.id, &id))
    }

    /// The `limit` most recently changed memories, newest first, with the
    /// later of their `updated` time and mtime (unix seconds).
    pub fn recent(&self, limit: usize) -> Vec<(StorePath, i64)> {
        if limit == 0 {
            return Vec::new();
        }
        let f = self.inner.core.fields;
        let searcher = self.searcher();
        let limit = limit.min(searcher.num_docs() as usize);
        if limit == 0 {
            return Vec::new();
        }
        let collector =
            TopDocs::with_limit(limit).order_by_fast_field::<i64>(names::CHANGED, Order::Desc);
        let top = match searcher.search(&self.term_query(f.kind, KIND_MEMORY), &collector) {
            Ok(top) => top,
            Err(e) => {
                tracing::warn!("recent: {e}");
                return Vec::new();
            }
        };
        let mut out = Vec::with_capacity(top.len());
        let mut buf = Vec::new();
        for (changed, address) in top {
            let Ok(Some(column)) = searcher
                .segment_reader(address.segment_ord)
                .fast_fields()
                .bytes(names::PATH)
            else {
                continue;
            };
            if let Some(ord) = column.term_ords(address.doc_id).next() {
                buf.clear();
                if let Ok(true) = column.ord_to_bytes(ord, &mut buf)
                    && let Some(p) = path_from_key(&buf)
                {
                    out.push((p, changed));
                }
            }
        }
        out
    }

    /// Searchable documents (binary files excluded).
    pub(crate) fn documents(&self) -> u64 {
        let f = self.inner.core.fields;
        let searcher = self.searcher();
        let skipped = searcher
            .search(&self.term_query(f.kind, KIND_SKIPPED), &Count)
            .unwrap_or(0) as u64;
        searcher.num_docs().saturating_sub(skipped)
    }

    /// Problems found in each file's last parse (malformed frontmatter,
    /// invalid fields, bad UTF-8), sorted by path.
    pub fn lint(&self) -> Vec<(StorePath, String)> {
        let f = self.inner.core.fields;
        let searcher = self.searcher();
        let addresses = match searcher.search(&self.term_query(f.flag, FLAG_LINT), &DocSetCollector)
        {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("lint: {e}");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for address in addresses {
            let Ok(doc) = searcher.doc::<TantivyDocument>(address) else {
                continue;
            };
            let Some(path) = stored_path(&doc, f.path) else {
                continue;
            };
            for message in doc.get_all(f.lint).filter_map(|v| v.as_str()) {
                out.push((path.clone(), message.to_owned()));
            }
        }
        for (id, paths) in self.duplicate_ids() {
            for path in &paths {
                let others: Vec<String> = paths
                    .iter()
                    .filter(|p| *p != path)
                    .map(ToString::to_string)
                    .collect();
                out.push((
                    path.clone(),
                    format!(
                        "id {id} is also the id of {}: a copy gets a new id when it is next written",
                        others.join(", ")
                    ),
                ));
            }
        }
        out.sort();
        out
    }

    /// Ids that more than one document has (a memory copied with `cp`),
    /// with their paths.
    pub fn duplicate_ids(&self) -> Vec<(String, Vec<StorePath>)> {
        let f = self.inner.core.fields;
        let searcher = self.searcher();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for segment in searcher.segment_readers() {
            let Ok(inverted) = segment.inverted_index(f.id) else {
                continue;
            };
            let Ok(mut stream) = inverted.terms().stream() else {
                continue;
            };
            while stream.advance() {
                if let Ok(id) = std::str::from_utf8(stream.key()) {
                    *counts.entry(id.to_owned()).or_default() += u64::from(stream.value().doc_freq);
                }
            }
        }
        // Term counts include deleted documents: confirm with live ones.
        counts
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .filter_map(|(id, _)| {
                let paths = self.paths_with_id(&id);
                (paths.len() > 1).then_some((id, paths))
            })
            .collect()
    }
}

/// The store path kept in a document's stored `path` field.
fn stored_path(doc: &TantivyDocument, field: Field) -> Option<StorePath> {
    doc.get_first(field)
        .and_then(|v| v.as_bytes())
        .and_then(path_from_key)
}

/// The id the document at `key` had when last indexed (its `id:`, or one
/// the index kept for it).
pub(super) fn indexed_id_in(
    searcher: &Searcher,
    f: &super::schema::Fields,
    key: &[u8],
) -> Option<String> {
    let query = TermQuery::new(
        Term::from_field_bytes(f.path, key),
        IndexRecordOption::Basic,
    );
    let top = searcher.search(&query, &TopDocs::with_limit(1)).ok()?;
    let (_, address) = top.first()?;
    let doc: TantivyDocument = searcher.doc(*address).ok()?;
    doc.get_first(f.id)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

/// Paths of every document `query` matches in `searcher`, sorted.
pub(super) fn paths_matching_in(
    searcher: &Searcher,
    query: &dyn Query,
) -> Result<Vec<StorePath>, IndexError> {
    let addresses = searcher.search(query, &DocSetCollector)?;
    let mut by_segment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for a in addresses {
        by_segment.entry(a.segment_ord).or_default().push(a.doc_id);
    }
    let mut paths = Vec::new();
    for (segment, docs) in by_segment {
        let Some(column) = searcher
            .segment_reader(segment)
            .fast_fields()
            .bytes(names::PATH)?
        else {
            continue;
        };
        // One sequential pass over the dictionary instead of a block
        // lookup per document: large views (a tag on 10k memories) stay
        // cheap.
        let mut ords: Vec<u64> = docs.iter().flat_map(|&d| column.term_ords(d)).collect();
        ords.sort_unstable();
        ords.dedup();
        let complete = column
            .dictionary()
            .sorted_ords_to_term_cb(ords.into_iter(), |bytes| {
                if let Some(p) = path_from_key(bytes) {
                    paths.push(p);
                }
                Ok(())
            });
        if let Err(e) = complete {
            tracing::warn!("cannot read paths of a segment: {e}");
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn one_line_collapses_and_clips() {
        assert_eq!(one_line("a\n b\t\tc", 200), "a b c");
        assert_eq!(one_line(&"é".repeat(300), 200).chars().count(), 200);
    }
}
