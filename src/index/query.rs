//! Reading the index: search, the filter views, the link graph.
//!
//! Search is lenient by contract: the text a user typed as a directory
//! name must never make a lookup fail. `meaning.rs` decides what a query
//! means (friendly field names, dates, stop words, filters); if the text
//! is not valid syntax, its words are searched instead. Each word is
//! looked up in the plain fields and, stemmed, in the stemmed ones; after
//! parsing, [`Tuning`] weighs each field and drops the clauses of words no
//! document has, so tantivy can prune; `ranking.rs` collects the best hits
//! and `snippet.rs` picks each hit's excerpt.
//!
//! Subtleties:
//! - A plain question that names a day, a month or a year (`period.rs`)
//!   is searched twice: among the memories written then, which come
//!   first, and among all of them, which follow.
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
    BooleanQuery, BoostQuery, ConstScoreQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query,
    QueryParser, QueryParserError, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Term, Value};
use tantivy::{DocAddress, DocSet, Order, Searcher, TERMINATED, TantivyDocument};

use super::document::{normalize_key, path_from_key};
use super::fusion;
use super::meaning::{
    MAX_LIMIT, MAX_PREFIX_TERMS, Mode, bounded, is_plain_words, meaning, prose, rewrite_query,
    take_mode, too_deep, words_beside_filters, words_of,
};
use super::ranking::{Excluding, TopHits, prunable};
use super::schema::{FLAG_LINT, KIND_MEMORY, KIND_SKIPPED, names};
use super::snippet::SnippetWords;
use super::tokenizer::lone_cjk;
use super::{Hit, Index, IndexError, Side};
use crate::store::StorePath;

/// The memories written within a period a question names: the range
/// query that finds them, and their paths' keys, for the side of meaning,
/// unless there are more than [`MAX_PERIOD_PATHS`].
struct Within {
    range: Box<dyn Query>,
    paths: Option<HashSet<Vec<u8>>>,
}

/// The most memories of a period whose paths are listed so that meaning
/// can be searched among them: a longer period is searched by its words.
const MAX_PERIOD_PATHS: usize = 20_000;

/// How many years back a day or a month named without its year ("in
/// July") is looked for, when no memory was written in the latest one:
/// a store of memories kept for years, or brought in from an older
/// vault, is asked of its own Julys.
const YEARLESS_BACK: i64 = 10;

/// How many of meaning's best a search with filters checks against them.
const FILTERED_DEPTH: usize = 100;

/// Whether a document passes a search's filters (all do when it has none).
struct Passes<'a> {
    searcher: &'a Searcher,
    /// `None`: no filters; `Some(None)`: filters that cannot be checked,
    /// which nothing passes.
    weight: Option<Option<Box<dyn tantivy::query::Weight>>>,
}

impl<'a> Passes<'a> {
    fn new(searcher: &'a Searcher, filter: Option<&dyn Query>) -> Self {
        let scoring = tantivy::query::EnableScoring::disabled_from_searcher(searcher);
        let weight = filter.map(|filter| {
            filter
                .weight(scoring)
                .inspect_err(|e| tracing::warn!("a search's filters: {e}"))
                .ok()
        });
        Passes { searcher, weight }
    }

    fn check(&self, address: DocAddress) -> bool {
        let weight = match &self.weight {
            None => return true,
            Some(None) => return false,
            Some(Some(weight)) => weight,
        };
        let segment = self.searcher.segment_reader(address.segment_ord);
        match weight.scorer(segment, 1.0) {
            Ok(mut scorer) => {
                scorer.doc() == address.doc_id
                    || (scorer.doc() < address.doc_id
                        && scorer.seek(address.doc_id) == address.doc_id)
            }
            Err(_) => false,
        }
    }
}

/// The ranking of what was written within a question's period, `first`,
/// then the rest of `all`, at most `limit`; `first` scores above the rest.
fn first_then(
    first: Vec<(f32, DocAddress, Side)>,
    all: Vec<(f32, DocAddress, Side)>,
    limit: usize,
) -> Vec<(f32, DocAddress, Side)> {
    let above = all.iter().map(|a| a.0).fold(0.0f32, f32::max);
    let mut out: Vec<(f32, DocAddress, Side)> = first
        .into_iter()
        .map(|(s, a, side)| (s + above, a, side))
        .collect();
    for hit in all {
        if !out.iter().any(|o| o.1 == hit.1) {
            out.push(hit);
        }
    }
    out.truncate(limit);
    out
}

/// `top`, then those of `rest` it lacks, below its last and falling, at
/// most `limit`.
fn then_the_rest(
    mut top: Vec<(f32, DocAddress, Side)>,
    rest: Vec<(f32, DocAddress, Side)>,
    limit: usize,
) -> Vec<(f32, DocAddress, Side)> {
    let last = top.last().map_or(1.0, |t| t.0);
    let mut below = 1u16;
    for (_, address, side) in rest {
        if top.len() >= limit {
            break;
        }
        if !top.iter().any(|t| t.1 == address) {
            below = below.saturating_add(1);
            top.push((last / f32::from(below), address, side));
        }
    }
    top
}

/// Longest snippet, in characters.
const SNIPPET_CHARS: usize = 200;

/// Weights of a word found in each field, against 1 for the body as
/// written. A word in the title says more than one in the body; a word
/// as written says more than its stem, and a memory with the exact form
/// has both.
const TITLE_BOOST: f32 = 3.0;
const ALIAS_BOOST: f32 = 2.0;
const TITLE_STEM_BOOST: f32 = 1.5;
const BODY_STEM_BOOST: f32 = 1.0;

/// The weight of a word found in `field`.
fn boost(fields: &super::schema::Fields, field: Field) -> f32 {
    if field == fields.title {
        TITLE_BOOST
    } else if field == fields.alias {
        ALIAS_BOOST
    } else if field == fields.title_stem {
        TITLE_STEM_BOOST
    } else if field == fields.body_stem {
        BODY_STEM_BOOST
    } else {
        1.0
    }
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
///
/// One CJK character alone is indexed only where it stands alone; within
/// a longer run it is in two bigrams. So a term of one such character is
/// searched as itself and as the bigrams that hold it ([`cjk_forms`]):
/// `茶` finds `喝茶偏好`. They are looked up once a character, in the
/// text fields (the stemmed ones hold the same Chinese), for every field
/// the word is searched in.
struct Tuning<'a> {
    searcher: &'a Searcher,
    fields: &'a super::schema::Fields,
    /// The forms of each lone character met so far.
    forms: std::cell::RefCell<Vec<(char, Vec<String>)>>,
}

impl Tuning<'_> {
    /// `query` as it should run, or `None` when it can match nothing.
    fn tune(&self, query: &dyn Query) -> Option<Box<dyn Query>> {
        if let Some(boolean) = query.downcast_ref::<BooleanQuery>() {
            return self.tune_boolean(boolean);
        }
        if let Some(term) = query.downcast_ref::<TermQuery>()
            && let Some(c) = term.term().value().as_str().and_then(lone_cjk)
        {
            let field = term.term().field();
            let forms: Vec<(Occur, Box<dyn Query>)> = self
                .forms_of(c)
                .iter()
                .map(|form| Term::from_field_text(field, form))
                .filter(|term| self.present(term))
                .map(|term| {
                    let query = TermQuery::new(term, IndexRecordOption::WithFreqs);
                    (Occur::Should, Box::new(query) as Box<dyn Query>)
                })
                .collect();
            return match forms.len() {
                0 => None,
                _ => Some(Box::new(BoostQuery::new(
                    Box::new(BooleanQuery::new(forms)),
                    boost(self.fields, field),
                ))),
            };
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
            Some(f) => boost(self.fields, f),
            None => 1.0,
        };
        let boost = match query.downcast_ref::<TermQuery>() {
            Some(term) => boost * self.title_rarity(term.term()),
            None => boost,
        };
        if boost == 1.0 {
            return Some(query.box_clone());
        }
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

    /// For a word of a title or an alias, how rare it is in the whole
    /// store against how rare it is among titles, 0..1 (1 for a word of
    /// another field). BM25 weighs a word by its rarity in its field: the
    /// user's name, in nearly every note's body but in few titles, would
    /// count in a title as a word nobody uses, and "where does Priya
    /// climb?" found the notes titled with her name before the one on
    /// climbing. In a title a word counts as rare as it is in the store.
    fn title_rarity(&self, term: &Term) -> f32 {
        let f = self.fields;
        let field = term.field();
        let body = if field == f.title || field == f.alias {
            f.body
        } else if field == f.title_stem {
            f.body_stem
        } else {
            return 1.0;
        };
        let value = term.value();
        let Some(text) = value.as_str() else {
            return 1.0;
        };
        let freq = |term: &Term| self.searcher.doc_freq(term).unwrap_or(0);
        let in_titles = freq(term);
        let in_bodies = freq(&Term::from_field_text(body, text));
        if in_bodies <= in_titles {
            return 1.0;
        }
        let all = self.searcher.num_docs() as f32;
        let idf = |n: u64| (1.0 + (all - n as f32 + 0.5) / (n as f32 + 0.5)).ln();
        (idf(in_bodies) / idf(in_titles)).clamp(0.0, 1.0)
    }

    /// The forms of the lone character `c` ([`cjk_forms`]), looked up once.
    fn forms_of(&self, c: char) -> Vec<String> {
        if let Some((_, forms)) = self.forms.borrow().iter().find(|(k, _)| *k == c) {
            return forms.clone();
        }
        let forms = cjk_forms(self.searcher, &[self.fields.title, self.fields.body], c);
        self.forms.borrow_mut().push((c, forms.clone()));
        forms
    }
}

/// Whether some document has `term` (true when the searcher cannot tell).
fn some_document_has(searcher: &Searcher, term: &Term) -> bool {
    searcher.doc_freq(term).map_or(true, |n| n > 0)
}

/// The terms of `fields` in which the CJK character `c` is indexed: itself
/// (where it stood alone) and the bigrams that hold it, the most frequent
/// first, at most [`MAX_PREFIX_TERMS`]. Only the part of the dictionary
/// past ASCII and the Latin scripts is read (terms from U+1000 on).
pub(super) fn cjk_forms(searcher: &Searcher, fields: &[Field], c: char) -> Vec<String> {
    let mut frequency: BTreeMap<String, u64> = BTreeMap::new();
    for segment in searcher.segment_readers() {
        for &field in fields {
            let result = (|| -> tantivy::Result<()> {
                let inverted = segment.inverted_index(field)?;
                let mut stream = inverted.terms().range().ge([0xE1u8]).into_stream()?;
                while stream.advance() {
                    let Ok(word) = std::str::from_utf8(stream.key()) else {
                        continue;
                    };
                    let mut chars = word.chars();
                    let holds = match (chars.next(), chars.next(), chars.next()) {
                        (Some(a), None, None) => a == c,
                        (Some(a), Some(b), None) => a == c || b == c,
                        _ => false,
                    };
                    if holds && stream.value().doc_freq > 0 {
                        *frequency.entry(word.to_owned()).or_default() +=
                            u64::from(stream.value().doc_freq);
                    }
                }
                Ok(())
            })();
            if let Err(e) = result {
                tracing::warn!("cannot look up the words that hold {c}: {e}");
            }
        }
    }
    let mut words: Vec<(String, u64)> = frequency.into_iter().collect();
    words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    words.truncate(MAX_PREFIX_TERMS);
    words.into_iter().map(|(w, _)| w).collect()
}

impl Index {
    fn searcher(&self) -> Searcher {
        self.caught_up();
        self.inner.core.reader.searcher()
    }

    /// The query parser over the default fields, each word optional;
    /// with `boosted`, it weighs the fields itself (see [`Tuning`] for the
    /// other way).
    fn parser(&self, boosted: bool) -> QueryParser {
        let f = &self.inner.core.fields;
        let mut parser = QueryParser::for_index(&self.inner.core.index, f.ranked().to_vec());
        if boosted {
            for field in f.ranked() {
                parser.set_field_boost(field, boost(f, field));
            }
        }
        parser
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
        let snippets = SnippetWords::of(&searcher, &*query, f.body, f.body_stem);
        let mut hits = Vec::with_capacity(top.len());
        for (score, address, matched) in top {
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
            let date_of = |field: &str| {
                searcher
                    .segment_reader(address.segment_ord)
                    .fast_fields()
                    .date(field)
                    .ok()
                    .and_then(|column| column.first(address.doc_id))
                    .map(|d| d.into_timestamp_secs())
            };
            let created = date_of(names::CREATED);
            let day = date_of(names::DAY).and_then(|secs| {
                crate::memory::format_timestamp(secs)
                    .get(..10)
                    .map(str::to_owned)
            });
            hits.push(Hit {
                path,
                title,
                score,
                snippet,
                id,
                created,
                day,
                matched,
            });
        }
        Ok((hits, warnings))
    }

    /// The query `text` means, or `None` when it has nothing to search,
    /// and what its author should be told about how it was read.
    fn prepare(&self, searcher: &Searcher, text: &str) -> (Option<Box<dyn Query>>, Vec<String>) {
        let expand =
            |field: Option<&'static str>, prefix: &str| self.prefix_terms(searcher, field, prefix);
        let mut warnings = Vec::new();
        let (text, cut) = bounded(text);
        let text: &str = &text;
        warnings.extend(cut);
        let tuning = Tuning {
            searcher,
            fields: &self.inner.core.fields,
            forms: Default::default(),
        };
        let words = || {
            words_of(text).and_then(|ast| {
                let (parsed, _) = self
                    .parser(false)
                    .build_query_from_user_input_ast_lenient(ast);
                tuning.tune(&*parsed)
            })
        };
        if let Some(note) = too_deep(text) {
            warnings.push(note);
            return (words(), warnings);
        }
        let rewritten = rewrite_query(text, &expand);
        warnings.extend(rewritten.warnings);
        // A query with boosts of its own (`word^2`) is run as the parser
        // builds it: a boosted clause is opaque to the tuning, which would
        // leave the fields inside it unweighed.
        let own_boosts = rewritten.text.contains('^');
        let parser = self.parser(own_boosts);
        let errors = match meaning(&rewritten.text) {
            Ok(None) => return (None, warnings),
            Ok(Some(ast)) => {
                let (parsed, errors) = parser.build_query_from_user_input_ast_lenient(ast);
                // Exclusions alone mean everything but them: not an error.
                let errors: Vec<_> = errors
                    .into_iter()
                    .filter(|e| !matches!(e, QueryParserError::AllButQueryForbidden))
                    .collect();
                if errors.is_empty() {
                    if own_boosts {
                        return (Some(parsed), warnings);
                    }
                    return (tuning.tune(&*parsed), warnings);
                }
                errors
            }
            Err(()) => Vec::new(),
        };
        tracing::debug!(
            "query {text:?} is not valid syntax ({:?}); searching its words",
            errors.first()
        );
        let unknown: Vec<String> = errors
            .iter()
            .filter_map(|e| match e {
                QueryParserError::FieldDoesNotExist(name) if name != "limit" => {
                    Some(format!("`{name}:`"))
                }
                _ => None,
            })
            .collect();
        // `limit:` is read before the query; here, its value was no count.
        let bad_limit = errors
            .iter()
            .any(|e| matches!(e, QueryParserError::FieldDoesNotExist(name) if name == "limit"));
        if bad_limit {
            warnings.push(format!(
                "`limit:` takes a number of results from 1 to {MAX_LIMIT}, so it was searched as words"
            ));
            if unknown.is_empty() {
                return (words(), warnings);
            }
        }
        warnings.push(if unknown.is_empty() {
            "the query is not valid syntax, so its words were searched instead".to_owned()
        } else {
            format!(
                "{} is not a field (fields: tag, category, type, status, scope, source, phase, id, alias, title, body, link, created, updated), so the query's words were searched instead",
                unknown.join(", ")
            )
        });
        (words(), warnings)
    }

    /// What [`Index::search`] would say about how it read `query`: fields
    /// it does not know, values that are not dates, prefixes cut short.
    pub fn query_warnings(&self, query: &str) -> Vec<String> {
        let (text, _) = take_mode(query.trim());
        let text = prose(text.trim());
        let text = text.trim();
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

    /// The parsed (or fallback) query and its top `limit` documents, each
    /// with the side that found it; what its author should be told goes to
    /// `warnings`. With a model, a query of plain words is also searched by
    /// meaning, and the two rankings are fused.
    #[allow(clippy::type_complexity)]
    fn ranked(
        &self,
        query: &str,
        limit: usize,
        hidden_scopes: &[String],
        warnings: &mut Vec<String>,
    ) -> Result<Option<(Searcher, Box<dyn Query>, Vec<(f32, DocAddress, Side)>)>, IndexError> {
        let (text, mode) = take_mode(query.trim());
        let text = prose(text.trim());
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        let searcher = self.searcher();
        // A misspelt word is searched as the word the memories hold. The
        // model tells a word from a misspelling; a search by words alone
        // asks it only if it is loaded, and does not load it for that.
        let vocabulary = || match mode {
            Mode::Words => self.inner.core.semantic.get(),
            _ => self.semantic(),
        };
        let respelt = (hidden_scopes.is_empty() && is_plain_words(text))
            .then(vocabulary)
            .flatten()
            .and_then(|semantic| {
                let known = |word: &str| semantic.knows_word(word);
                super::spelling::respelt(&searcher, &self.inner.core.fields, text, &known)
            });
        let text = respelt.as_ref().map_or(text, |r| r.text.as_str());
        let (query, noted) = self.prepare(&searcher, text);
        *warnings = noted;
        if let Some(respelt) = &respelt {
            warnings.splice(0..0, respelt.notes.iter().cloned());
        }
        // A question with filters is asked of what the filters leave, by
        // its words and its meaning both. The whole query is the filter:
        // its words are optional beside the filters it requires.
        let split = words_beside_filters(text).zip(query.as_deref());
        let (plain, filter) = match &split {
            Some((words, query)) => (words.as_str(), Some(*query)),
            None => (text, None),
        };
        // The limit comes from user text: never size buffers by it.
        let wanted = limit.min(searcher.num_docs() as usize);
        if wanted == 0 {
            return Ok(None);
        }
        // Ranked as deep as a newer memory may move up from, whatever is
        // asked for: the first hits never depend on how many are wanted.
        let limit = wanted
            .max(super::supersede::WINDOW)
            .min(searcher.num_docs() as usize);
        // A question that names a day, a month or a year asks first of all
        // about what was written then. The rest of its words are what it
        // asks about the period: they alone are searched, on both sides,
        // and one embedding serves both searches. A period no memory was
        // written in says nothing of this store ("last year" in notes of
        // long ago): the question is then searched as it is.
        let now = jiff::Zoned::now();
        let named = is_plain_words(plain)
            .then(|| super::period::named_period(plain, &now))
            .flatten();
        let period = named.clone().and_then(|p| {
            let within = self.written_within(&searcher, &p, hidden_scopes, filter)?;
            Some((p, within))
        });
        // "in July" of a store with nothing from this July is its latest
        // July with memories, as far back as YEARLESS_BACK years.
        let period = period.or_else(|| {
            named.as_ref().filter(|p| p.yearless)?;
            (1..=YEARLESS_BACK).find_map(|years| {
                let then = now.checked_sub(jiff::Span::new().years(years)).ok()?;
                let p = super::period::named_period(plain, &then).filter(|p| p.yearless)?;
                let within = self.written_within(&searcher, &p, hidden_scopes, filter)?;
                Some((p, within))
            })
        });
        if let (Some(p), None) = (&named, &period) {
            warnings.push(format!(
                "no memory was written {}: the question is searched in all of them",
                p.described()
            ));
        }
        let (asked, rest) = match &period {
            Some((p, _)) => {
                let rest = self.prepare(&searcher, &p.rest).0.map(|rest| match filter {
                    Some(filter) => Box::new(BooleanQuery::new(vec![
                        (Occur::Must, rest),
                        (
                            Occur::Must,
                            Box::new(ConstScoreQuery::new(filter.box_clone(), 0.0)),
                        ),
                    ])),
                    None => rest,
                });
                (p.rest.as_str(), rest)
            }
            None => (plain, None),
        };
        let words = if period.is_some() {
            rest.as_deref()
        } else {
            query.as_deref()
        };
        let mut top = self.rank(
            &searcher,
            asked,
            words,
            mode,
            limit,
            hidden_scopes,
            None,
            filter,
        )?;
        if let Some((named, within)) = &period {
            // What the rest of the question finds among the memories of
            // the period comes first, then everything else. The period's
            // others, the latest first, come before everything else when
            // the period is days (what else was written on the day a
            // question names is likelier its answer than a note of
            // another day), or when the rest asks nothing but when ("what
            // happened last month?"). Otherwise they come after it: "what
            // is the book club reading in November?" asks of the book
            // club's note before the unrelated ones of November.
            let first = match &rest {
                Some(rest) => self.rank(
                    &searcher,
                    asked,
                    Some(&**rest),
                    mode,
                    limit,
                    hidden_scopes,
                    Some(within),
                    filter,
                )?,
                None => Vec::new(),
            };
            let lowest = first.iter().map(|f| f.0).fold(1.0f32, f32::min);
            let others: Vec<(f32, DocAddress, Side)> = self
                .latest(&searcher, within, limit, hidden_scopes)
                .into_iter()
                .filter(|(_, address, _)| !first.iter().any(|f| f.1 == *address))
                .map(|(score, address, side)| (score * lowest / 2.0, address, side))
                .collect();
            let alone = rest.is_none()
                || super::fusion::asks_of_a_time_alone(&searcher, &self.inner.core.fields, asked);
            top = if alone || named.is_days() {
                let mut first = first;
                first.extend(others);
                first_then(first, top, limit)
            } else {
                let top = first_then(first, top, limit);
                then_the_rest(top, others, limit)
            };
        }
        // A newer memory on the same subject goes above the older one,
        // unless the question asks about a time of its own.
        if mode == Mode::Fused
            && period.is_none()
            && let Some(semantic) = self.inner.core.semantic.get()
        {
            super::supersede::newer_first(
                &searcher,
                &self.inner.core.fields,
                semantic,
                text,
                &mut top,
            );
        }
        copies_after_originals(&searcher, &mut top);
        top.truncate(wanted);
        // What answers a question the store has no words for is only
        // near it: said, so an agent does not take it for the answer.
        // Not to a session some memories are hidden from, whose words it
        // must not learn of.
        // A question about a period is answered by when, not by words.
        if !top.is_empty() && period.is_none() && hidden_scopes.is_empty() && is_plain_words(asked)
        {
            // Of a Chinese question, only its words in Latin letters
            // ("Kafka"): its characters are read in pairs, which span
            // words.
            let cjk = super::tokenizer::mostly_cjk(asked);
            let absent: Vec<String> =
                super::fusion::words_held_by_none(&searcher, &self.inner.core.fields, asked)
                    .into_iter()
                    .filter(|w| !cjk || w.chars().all(|c| c.is_ascii_alphanumeric()))
                    .collect();
            if !absent.is_empty() {
                let quoted: Vec<String> = absent.iter().map(|w| format!("\"{w}\"")).collect();
                warnings.push(format!(
                    "no memory holds {}: what is found shares the question's other words or its meaning, not these",
                    or_list(&quoted)
                ));
            }
        }
        if top.is_empty() && query.is_none() {
            return Ok(None);
        }
        let query = query.unwrap_or_else(|| Box::new(tantivy::query::AllQuery));
        Ok(Some((searcher, query, top)))
    }

    /// The top `limit` documents for the plain or parsed `text` (`query`),
    /// by its words, and by its meaning too when a model is at hand and
    /// `mode` asks for it; only those `within` a period, if given.
    #[allow(clippy::too_many_arguments)]
    fn rank(
        &self,
        searcher: &Searcher,
        text: &str,
        query: Option<&dyn Query>,
        mode: Mode,
        limit: usize,
        hidden_scopes: &[String],
        within: Option<&Within>,
        filter: Option<&dyn Query>,
    ) -> Result<Vec<(f32, DocAddress, Side)>, IndexError> {
        // Asked first: a model loaded on demand is loaded only for a search
        // that ranks by meaning.
        // A Chinese question, to a model that cannot read it, is like
        // every Chinese memory: it is searched by its words alone.
        let semantic = (mode != Mode::Words && is_plain_words(text))
            .then(|| self.semantic())
            .flatten()
            .filter(|s| !super::tokenizer::mostly_cjk(text) || s.reads_chinese());
        let Some(semantic) = semantic else {
            let Some(query) = query else {
                return Ok(Vec::new());
            };
            let top = self.lexical(searcher, query, limit, hidden_scopes, within)?;
            return Ok(top
                .into_iter()
                .filter(|(s, _)| filter.is_none() || *s > 0.0)
                .map(|(s, a)| (s, a, Side::Words))
                .collect());
        };
        let depth = limit.max(fusion::DEPTH);
        let f = self.inner.core.fields;
        // By words on one of the queries' threads while the question is
        // embedded and the vectors scanned on the other: the embedding
        // takes both back when the words are done.
        let by_words = || -> Result<_, IndexError> {
            let words = match (query, mode) {
                (Some(query), Mode::Fused) => {
                    let mut words = self.lexical(searcher, query, depth, hidden_scopes, within)?;
                    // What only the filters matched is not an answer.
                    if filter.is_some() {
                        words.retain(|(score, _)| *score > 0.0);
                    }
                    words
                }
                _ => Vec::new(),
            };
            let head: Vec<DocAddress> = words.iter().take(fusion::DEPTH).map(|w| w.1).collect();
            let weights = fusion::words_weights(searcher, &f, text, &head);
            // What the model cannot read, meaning cannot judge.
            let unread: Vec<bool> = head
                .iter()
                .map(|address| {
                    path_at(searcher, *address)
                        .ok()
                        .flatten()
                        .is_some_and(|p| semantic.is_unread(&p))
                })
                .collect();
            Ok((words, weights, unread))
        };
        let by_meaning = || -> Vec<fusion::Near> {
            semantic.embed_waiting();
            let keep = |path: &StorePath| match within {
                None => true,
                Some(Within {
                    paths: Some(paths), ..
                }) => paths.contains(super::document::path_key(path)),
                Some(_) => false,
            };
            // A period too long to list is searched by its words alone.
            let listed = within.is_none_or(|w| w.paths.is_some());
            // Filters are checked on meaning's best, so it looks deeper.
            let deep = if filter.is_some() {
                depth.max(FILTERED_DEPTH)
            } else {
                depth
            };
            let passes = Passes::new(searcher, filter);
            listed
                .then(|| semantic.embed_query(text))
                .flatten()
                .map(|v| semantic.nearest(&v, deep, hidden_scopes, &keep))
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(path, score, chunks)| {
                    let key = super::document::path_key(&path);
                    let query = TermQuery::new(
                        Term::from_field_bytes(f.path, key),
                        IndexRecordOption::Basic,
                    );
                    let top = searcher.search(&query, &TopDocs::with_limit(1)).ok()?;
                    top.first().map(|(_, address)| fusion::Near {
                        score,
                        address: *address,
                        chunks,
                    })
                })
                .filter(|near| passes.check(near.address))
                .take(depth)
                .collect()
        };
        let (meaning, words) = super::semantic::beside(by_meaning, by_words);
        let (words, weights, unread) = words?;
        Ok(fusion::fuse(&words, &weights, &unread, &meaning, limit))
    }

    /// The memories written within `period`, or naming a day in it ahead
    /// of when they were written; `None` when there are none.
    fn written_within(
        &self,
        searcher: &Searcher,
        period: &super::period::Period,
        hidden_scopes: &[String],
        filter: Option<&dyn Query>,
    ) -> Option<Within> {
        let f = self.inner.core.fields;
        // Written then (on the day it says, in its own zone), or naming a
        // day then that was ahead when it was written.
        let range_of = |field: Field, (start, end): (i64, i64)| -> (Occur, Box<dyn Query>) {
            let date = |secs: i64| {
                Term::from_field_date(field, tantivy::DateTime::from_timestamp_secs(secs))
            };
            let range = tantivy::query::RangeQuery::new(
                std::ops::Bound::Included(date(start)),
                std::ops::Bound::Excluded(date(end)),
            );
            (Occur::Should, Box::new(range))
        };
        let mut range: Box<dyn Query> = Box::new(BooleanQuery::new(
            period
                .ranges
                .iter()
                .flat_map(|r| [range_of(f.day, *r), range_of(f.mentioned, *r)])
                .collect(),
        ));
        if let Some(filter) = filter {
            range = Box::new(BooleanQuery::new(vec![
                (Occur::Must, range),
                (Occur::Must, filter.box_clone()),
            ]));
        }
        let count = |query: Box<dyn Query>| {
            searcher
                .search(&*self.visible(searcher, query, hidden_scopes), &Count)
                .unwrap_or(0)
        };
        let within = count(range.box_clone());
        if within == 0 {
            return None;
        }
        if within > MAX_PERIOD_PATHS {
            return Some(Within { range, paths: None });
        }
        let docs = searcher
            .search(
                &*self.visible(searcher, range.box_clone(), hidden_scopes),
                &DocSetCollector,
            )
            .ok()?;
        let mut paths = HashSet::with_capacity(docs.len());
        for address in &docs {
            let segment = searcher.segment_reader(address.segment_ord);
            let column = segment.fast_fields().bytes(names::PATH).ok()??;
            let mut key = Vec::new();
            if let Some(ord) = column.term_ords(address.doc_id).next()
                && column.ord_to_bytes(ord, &mut key).ok()?
            {
                paths.insert(key);
            }
        }
        Some(Within {
            range,
            paths: Some(paths),
        })
    }

    /// The latest `limit` memories `within` a period, by `created`, scored
    /// from 1 down (1/2, 1/3, ...).
    fn latest(
        &self,
        searcher: &Searcher,
        within: &Within,
        limit: usize,
        hidden_scopes: &[String],
    ) -> Vec<(f32, DocAddress, Side)> {
        let collector = TopDocs::with_limit(limit)
            .order_by_fast_field::<tantivy::DateTime>(names::CREATED, Order::Desc);
        let query = self.visible(searcher, within.range.box_clone(), hidden_scopes);
        match searcher.search(&*query, &collector) {
            Ok(top) => top
                .into_iter()
                .enumerate()
                .map(|(i, (_, address))| (1.0 / (i + 1) as f32, address, Side::Period))
                .collect(),
            Err(e) => {
                tracing::warn!("the memories of a period: {e}");
                Vec::new()
            }
        }
    }

    /// The top `limit` documents `query` matches by its words, without the
    /// skipped ones and those of `hidden_scopes`.
    fn lexical(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
        hidden_scopes: &[String],
        within: Option<&Within>,
    ) -> Result<Vec<(f32, DocAddress)>, IndexError> {
        let query = match within {
            // The period restricts and scores nothing.
            Some(within) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, query.box_clone()),
                (
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(within.range.box_clone(), 0.0)),
                ),
            ])),
            None => prunable(query.box_clone(), searcher.schema()),
        };
        let collector = TopHits::with_limit(limit);
        Ok(searcher.search(&*self.visible(searcher, query, hidden_scopes), &collector)?)
    }

    /// `query` without the skipped files and the memories of
    /// `hidden_scopes`. The exclusions are only for terms some document
    /// has, left out inside tantivy's pruning (see `ranking.rs`).
    fn visible(
        &self,
        searcher: &Searcher,
        query: Box<dyn Query>,
        hidden_scopes: &[String],
    ) -> Box<dyn Query> {
        let f = self.inner.core.fields;
        let excluded: Vec<Term> = std::iter::once(Term::from_field_text(f.kind, KIND_SKIPPED))
            .chain(
                hidden_scopes
                    .iter()
                    .map(|scope| Term::from_field_text(f.scope, scope)),
            )
            .filter(|term| some_document_has(searcher, term))
            .collect();
        if excluded.is_empty() {
            query
        } else {
            Box::new(Excluding::new(query, excluded))
        }
    }

    /// The paths [`Index::search`] would return, in rank order, without
    /// loading documents or making snippets (for directory listings).
    pub fn search_paths(&self, query: &str, limit: usize) -> Result<Vec<StorePath>, IndexError> {
        let Some((searcher, _, top)) = self.ranked(query, limit, &[], &mut Vec::new())? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(top.len());
        for (_, address, _) in top {
            out.extend(path_at(&searcher, address)?);
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

    /// [`resolve`](Self::resolve) for a wikilink: one by path
    /// (`[[Projects/Atlas/Atlas Overview]]`) to a note since filed
    /// elsewhere resolves by its name alone, as long as nothing is at the
    /// path. (A command given a path that is not there never acts on
    /// another file of the same name.)
    pub fn resolve_link(&self, target: &str) -> Vec<StorePath> {
        let found = self.resolve(target);
        match target.trim().rsplit_once('/') {
            Some((_, last)) if found.is_empty() && !last.trim().is_empty() => self.resolve(last),
            _ => found,
        }
    }

    /// Memories whose links point at `target`: an id, title, file stem,
    /// path or alias, compared case-insensitively. When `target` names
    /// existing memories, links to any of their names count.
    pub fn backlinks(&self, target: &str) -> Vec<StorePath> {
        self.backlinks_seen(target, &HashSet::new())
    }

    /// [`backlinks`](Self::backlinks) for a session that may not see the
    /// memories `hidden`: their names are not the target's, so a name of
    /// theirs (an id, an alias) is only a link's text.
    pub fn backlinks_seen(&self, target: &str, hidden: &HashSet<StorePath>) -> Vec<StorePath> {
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
                Ok(doc) if stored_path(&doc, f.path).is_some_and(|p| hidden.contains(&p)) => {}
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
    /// claim it, the first by path that is not a sync's conflict copy
    /// (which keeps the id of the memory it is a version of).
    pub fn by_id(&self, id: &str) -> Option<StorePath> {
        let f = self.inner.core.fields;
        let id = id.trim().to_lowercase();
        if id.is_empty() {
            return None;
        }
        self.paths_matching(&self.term_query(f.id, &id))
            .into_iter()
            .min_by_key(|p| crate::memory::conflict::is_conflict(&p.to_string()))
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

    /// Memories (markdown files that are not binary).
    pub(crate) fn memories(&self) -> u64 {
        let f = self.inner.core.fields;
        self.searcher()
            .search(&self.term_query(f.kind, KIND_MEMORY), &Count)
            .unwrap_or(0) as u64
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
/// A sync's conflict copy found with the note it is a version of goes
/// just below it: the note is the one to read, the copy what to reconcile
/// it with. Paths come from the fast field, not the documents.
fn copies_after_originals<T>(searcher: &Searcher, top: &mut Vec<(f32, DocAddress, T)>) {
    let path_of = |address: DocAddress| -> Option<String> {
        let column = searcher
            .segment_reader(address.segment_ord)
            .fast_fields()
            .bytes(names::PATH)
            .ok()??;
        let ord = column.term_ords(address.doc_id).next()?;
        let mut key = Vec::new();
        column.ord_to_bytes(ord, &mut key).ok()?;
        path_from_key(&key).map(|p| p.to_string())
    };
    let paths: Vec<Option<String>> = top.iter().map(|t| path_of(t.1)).collect();
    let mut order: Vec<usize> = (0..top.len()).collect();
    for (i, path) in paths.iter().enumerate() {
        let Some(original) = path
            .as_deref()
            .and_then(crate::memory::conflict::parse)
            .map(|c| c.original)
        else {
            continue;
        };
        let at = |k: usize| order.iter().position(|&o| o == k);
        if let (Some(copy), Some(j)) = (
            at(i),
            paths.iter().position(|p| p.as_deref() == Some(&original)),
        ) && let Some(note) = at(j)
            && copy != note + 1
        {
            let moved = order.remove(copy);
            // Just below the note, wherever it was.
            let note = if note > copy { note - 1 } else { note };
            order.insert(note + 1, moved);
        }
    }
    if order.iter().enumerate().any(|(k, &o)| k != o) {
        let mut taken: Vec<Option<(f32, DocAddress, T)>> = top.drain(..).map(Some).collect();
        top.extend(order.into_iter().filter_map(|o| taken[o].take()));
        // Scores stay in rank order: the copy scores as its note does.
        for k in 1..top.len() {
            if top[k].0 > top[k - 1].0 {
                top[k].0 = top[k - 1].0;
            }
        }
    }
}

fn stored_path(doc: &TantivyDocument, field: Field) -> Option<StorePath> {
    doc.get_first(field)
        .and_then(|v| v.as_bytes())
        .and_then(path_from_key)
}

/// The path of the document at `address`, read from its fast field
/// (no stored document is loaded).
fn path_at(searcher: &Searcher, address: DocAddress) -> Result<Option<StorePath>, IndexError> {
    let Some(column) = searcher
        .segment_reader(address.segment_ord)
        .fast_fields()
        .bytes(names::PATH)?
    else {
        return Ok(None);
    };
    let Some(ord) = column.term_ords(address.doc_id).next() else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    Ok(matches!(column.ord_to_bytes(ord, &mut buf), Ok(true))
        .then(|| path_from_key(&buf))
        .flatten())
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

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} or {last}", head.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_and_clips() {
        assert_eq!(one_line("a\n b\t\tc", 200), "a b c");
        assert_eq!(one_line(&"é".repeat(300), 200).chars().count(), 200);
    }
}
