//! One ranking out of two: the memories a question's words find and the
//! ones its meaning finds.
//!
//! Each ranking's best [`DEPTH`] scores are scaled to 0..1 within the
//! ranking (min-max), so that BM25's unbounded scores and cosines close to
//! each other in a store of similar memories weigh alike. Scaling alone
//! forgets how good the best match is: in a small store, a memory that
//! shares only the word "user" with "what does the user like to drink?"
//! would be the words' best and count fully, above the one that says
//! "prefers coffee over tea". So each word hit counts in proportion to
//! its [`words_weights`]: fully once it holds half of the question's
//! words (by rarity) and two of them at least, less below.
//!
//! Subtleties:
//! - Words are counted as stems without stop words, as the stemmed fields
//!   index them; a stem no memory has counts as rarest, so a question
//!   whose words the store lacks leans on meaning.
//! - "user" is not counted: nearly every question to an agent's memory
//!   names the user, and a memory that shares only that word shares
//!   nothing of what is asked. The words' ranking still finds it.
//! - A question of stop words only has no stems: its words then count
//!   fully, as they did before any weighing.
//! - Each hit is weighed by what it holds, not by what the best one
//!   holds: the words' first may be a memory that holds only "user" while
//!   their third holds the question.

use std::collections::BTreeSet;

use tantivy::schema::{IndexRecordOption, Term};
use tantivy::tokenizer::TokenStream;
use tantivy::{DocAddress, DocSet, Searcher};

use super::Side;
use super::schema::Fields;

/// How many of each ranking's best are fused; below them, the ranking
/// by words goes on, then the one by meaning.
pub(super) const DEPTH: usize = 8;

/// The weight of meaning in the fusion, against 1 for words, for a memory
/// embedded whole (see [`Near::weight`] for one cut into chunks). Tuned on
/// LoCoMo (see BENCHMARKS.md): the fused ranking beats words alone on
/// every unit there, where meaning alone loses on two of three.
const MEANING_WEIGHT: f32 = 0.5;

/// Below this cosine with the question, a memory that only meaning finds
/// is left out: it is not like the question, it is merely the least
/// unlike. Asking all-MiniLM-L6-v2 "postgres" of a dozen agent memories
/// gave the one about Postgres 0.46 and the others 0.03 to 0.16; on
/// LoCoMo, of the memories meaning alone put in the fused first five
/// with a cosine under 0.3 (75), none was right. It cannot be higher:
/// "what is the user's job?" is under 0.25 from "Works as a nurse on night
/// shifts at the county hospital", while nonsense ("xyzzyqq plugh") came
/// within 0.21 of two short notes. A model whose cosines run higher is
/// held back less, never more.
const MEANING_FLOOR: f32 = 0.2;

/// The cosine at which meaning's best counts in full. Scaled within its
/// ranking, meaning's best scores 1 however far it is: "relase process"
/// (a typo no memory holds) put a note on a flaky test at a cosine of
/// 0.22 above the release note its words found first. So meaning counts
/// in proportion to its best cosine, from nothing at [`MEANING_FLOOR`]
/// to fully here, as words count by the share of the question they hold.
/// all-MiniLM-L6-v2 gives a question and the memory that answers it 0.3
/// to 0.7 (0.46 for "postgres" and the note about Postgres).
const MEANING_SURE: f32 = 0.4;

/// A memory that meaning found: its cosine with the question (its best
/// chunk's), and how many chunks it was embedded in.
#[derive(Debug, Clone, Copy)]
pub(super) struct Near {
    pub(super) score: f32,
    pub(super) address: DocAddress,
    pub(super) chunks: usize,
}

impl Near {
    /// How much meaning counts for this memory: [`MEANING_WEIGHT`] over
    /// the square root of its chunks. A memory scores its best chunk, and
    /// the more chunks it has, the likelier one of them lands near a
    /// question by chance and the less that one says of the whole; words,
    /// which see the whole memory, are then the better guide.
    fn weight(&self) -> f32 {
        MEANING_WEIGHT / (self.chunks.max(1) as f32).sqrt()
    }
}

/// Below this share of a question's words held by a word hit, the hit
/// counts less (see [`words_weights`]).
const HELD_IN_FULL: f32 = 0.5;

/// How much each of `docs` counts by its words, 0..1: the share of
/// `text`'s word stems it holds, each stem weighed by its rarity in the
/// index (BM25's idf), over [`HELD_IN_FULL`], at most 1; a document that
/// holds only one stem of several counts for its share alone.
pub(super) fn words_weights(
    searcher: &Searcher,
    fields: &Fields,
    text: &str,
    docs: &[DocAddress],
) -> Vec<f32> {
    let stems = stems(searcher, fields, text);
    // A lone CJK character is held as itself or in a bigram (see
    // `query::cjk_forms`): each stem as the terms that hold it.
    let stem_fields = [fields.body_stem, fields.title_stem];
    let forms: Vec<Vec<String>> = stems
        .iter()
        .map(|stem| match super::tokenizer::lone_cjk(stem) {
            Some(c) => super::query::cjk_forms(searcher, &stem_fields, c),
            None => vec![stem.clone()],
        })
        .collect();
    let all = searcher.num_docs() as f32;
    let mut weights = Vec::with_capacity(stems.len());
    for forms in &forms {
        let df = stem_fields
            .iter()
            .flat_map(|f| forms.iter().map(|form| (*f, form)))
            .map(|(f, form)| {
                searcher
                    .doc_freq(&Term::from_field_text(f, form))
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0) as f32;
        weights.push((1.0 + (all - df + 0.5) / (df + 0.5)).ln());
    }
    let total: f32 = weights.iter().sum();
    if total <= 0.0 {
        return vec![1.0; docs.len()];
    }
    docs.iter()
        .map(|address| {
            let (held, weight) = forms
                .iter()
                .zip(&weights)
                .filter(|(forms, _)| {
                    forms
                        .iter()
                        .any(|form| holds(searcher, fields, *address, form))
                })
                .fold((0, 0.0f32), |(n, sum), (_, w)| (n + 1, sum + w));
            let share = weight / total;
            // One word in common with a question of several is as likely
            // chance as a match: it counts for its share only.
            if held >= 2 || stems.len() == 1 {
                (share / HELD_IN_FULL).min(1.0)
            } else {
                share
            }
        })
        .collect()
}

/// The distinct stems of `text`, as the stemmed fields index them.
pub(super) fn stems(searcher: &Searcher, fields: &Fields, text: &str) -> BTreeSet<String> {
    stem_tokens(searcher, fields, text)
        .into_iter()
        .map(|(stem, _)| stem)
        .filter(|stem| !SUBJECT_STEMS.contains(&stem.as_str()))
        .collect()
}

/// Each stem of `text`, as the stemmed fields index them, with the span
/// of the words it came from.
fn stem_tokens(
    searcher: &Searcher,
    fields: &Fields,
    text: &str,
) -> Vec<(String, std::ops::Range<usize>)> {
    let mut stems = Vec::new();
    let Ok(mut analyzer) = searcher.index().tokenizer_for_field(fields.body_stem) else {
        return stems;
    };
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        let token = stream.token();
        stems.push((token.text.clone(), token.offset_from..token.offset_to));
    }
    stems
}

/// The words of `text` whose stems no memory holds, in title or body, as
/// written and in order (each once); the stems of [`SUBJECT_STEMS`] and
/// [`ASKING_STEMS`] and [`EVENT_STEMS`] aside. Counted over the whole
/// index.
pub(super) fn words_held_by_none(searcher: &Searcher, fields: &Fields, text: &str) -> Vec<String> {
    let mut absent: Vec<String> = Vec::new();
    for (stem, span) in stem_tokens(searcher, fields, text) {
        if asks_without_naming(&stem) {
            continue;
        }
        let held = [fields.body_stem, fields.title_stem].iter().any(|field| {
            searcher
                .doc_freq(&Term::from_field_text(*field, &stem))
                .is_ok_and(|n| n > 0)
        });
        let word = text.get(span).unwrap_or(&stem).to_lowercase();
        if !held && !absent.contains(&word) {
            absent.push(word);
        }
    }
    absent
}

/// Stems of how a question asks rather than what it asks about ("what
/// does she like to drink?", "do you remember her favorite band?"): a
/// memory that answers seldom holds them.
const ASKING_STEMS: &[&str] = &[
    "like", "love", "prefer", "favorit", "favourit", "think", "know", "rememb", "recal", "tell",
    "said", "say", "mention", "kind", "sort", "thing",
];

/// Stems of what a question asks about a period rather than a subject
/// ("what happened in May?", "where did we go last week?"); a memory
/// that answers seldom holds them either ("what CI do we use?").
const EVENT_STEMS: &[&str] = &[
    "happen", "go", "went", "gone", "get", "got", "make", "made", "came", "come", "write", "wrote",
    "new", "use", "follow",
];

/// Whether `text` asks about nothing but when: each of its stems is one
/// of how a question asks ([`ASKING_STEMS`], [`EVENT_STEMS`],
/// [`SUBJECT_STEMS`]).
pub(super) fn asks_of_a_time_alone(searcher: &Searcher, fields: &Fields, text: &str) -> bool {
    stem_tokens(searcher, fields, text)
        .iter()
        .all(|(stem, _)| asks_without_naming(stem))
}

/// Whether `stem` is of how a question asks, not of what it asks about
/// ([`ASKING_STEMS`], [`EVENT_STEMS`], [`SUBJECT_STEMS`]).
fn asks_without_naming(stem: &str) -> bool {
    [ASKING_STEMS, EVENT_STEMS, SUBJECT_STEMS]
        .iter()
        .any(|list| list.contains(&stem))
}

/// Stems that name whom an agent's memories are about: nearly every
/// question has one, and a memory that shares only it with a question
/// shares nothing of what is asked.
const SUBJECT_STEMS: &[&str] = &["user"];

/// Whether the document at `address` has `stem` in its title or body.
pub(super) fn holds(searcher: &Searcher, fields: &Fields, address: DocAddress, stem: &str) -> bool {
    [fields.body_stem, fields.title_stem]
        .iter()
        .any(|field| has_term(searcher, &Term::from_field_text(*field, stem), address))
}

/// Whether the document at `address` holds `term`.
pub(super) fn has_term(searcher: &Searcher, term: &Term, address: DocAddress) -> bool {
    let segment = searcher.segment_reader(address.segment_ord);
    let Ok(index) = segment.inverted_index(term.field()) else {
        return false;
    };
    match index.read_postings(term, IndexRecordOption::Basic) {
        // `seek` only goes forward from the first document.
        Ok(Some(mut postings)) => {
            postings.doc() == address.doc_id
                || (postings.doc() < address.doc_id
                    && postings.seek(address.doc_id) == address.doc_id)
        }
        _ => false,
    }
}

/// The two rankings as one, at most `limit`: the head, each document
/// scoring 1 plus its words' scaled score times its `words_weights`
/// (in the words' order) and meaning's scaled score times its
/// [`Near::weight`]; then the rest of each ranking under 1 and falling.
/// A word hit the model could not read (`unread`, in the words' order:
/// Chinese to an English model) has no meaning to be judged by, and
/// counts its words' share for meaning too, as if meaning agreed, so an
/// English word in a Chinese note is not outranked by every English note
/// meaning finds. A ranking may be empty: the other is then kept as it
/// is, with its own scores.
pub(super) fn fuse(
    words: &[(f32, DocAddress)],
    words_weights: &[f32],
    unread: &[bool],
    meaning: &[Near],
    limit: usize,
) -> Vec<(f32, DocAddress, Side)> {
    // Each ranking as (score, document, weight).
    let words: Vec<(f32, DocAddress, f32)> = words
        .iter()
        .enumerate()
        .map(|(i, (s, a))| {
            let weight = words_weights.get(i).copied().unwrap_or(1.0);
            let unread = unread.get(i).copied().unwrap_or(false);
            (
                *s,
                *a,
                if unread {
                    weight * (1.0 + MEANING_WEIGHT)
                } else {
                    weight
                },
            )
        })
        .collect();
    let best = meaning.iter().map(|n| n.score).fold(f32::MIN, f32::max);
    let sure = ((best - MEANING_FLOOR) / (MEANING_SURE - MEANING_FLOOR)).clamp(0.0, 1.0);
    let meaning: Vec<(f32, DocAddress, f32)> = meaning
        .iter()
        .map(|n| (n.score, n.address, n.weight() * sure))
        .collect();
    // What only meaning finds must be like the question.
    let kept = |side: Side, score: f32| side == Side::Words || score >= MEANING_FLOOR;
    if meaning.is_empty() || words.is_empty() {
        let (alone, side) = if meaning.is_empty() {
            (&words, Side::Words)
        } else {
            (&meaning, Side::Meaning)
        };
        return alone
            .iter()
            .filter(|(s, _, _)| kept(side, *s))
            .take(limit)
            .map(|(s, a, _)| (*s, *a, side))
            .collect();
    }
    let mut fused: Vec<(f32, DocAddress, Side)> = Vec::new();
    let mut add = |list: &[(f32, DocAddress, f32)], side: Side| {
        let head = &list[..list.len().min(DEPTH)];
        let top = head.iter().map(|h| h.0).fold(f32::MIN, f32::max);
        let bottom = head.iter().map(|h| h.0).fold(f32::MAX, f32::min);
        for (score, address, weight) in head {
            let scaled = if top > bottom {
                (score - bottom) / (top - bottom)
            } else {
                1.0
            };
            let value = weight * scaled;
            match fused.iter_mut().find(|f| f.1 == *address) {
                Some(f) => {
                    f.0 += value;
                    f.2 = Side::Both;
                }
                None if kept(side, *score) => fused.push((value, *address, side)),
                None => {}
            }
        }
    };
    add(&words, Side::Words);
    add(&meaning, Side::Meaning);
    fused.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.segment_ord.cmp(&b.1.segment_ord))
            .then(a.1.doc_id.cmp(&b.1.doc_id))
    });
    // The head scores 1 and up, so that its last (0 once scaled) is not
    // shown as worthless; each ranking's rest comes below, under 1 and
    // falling.
    for f in &mut fused {
        f.0 += 1.0;
    }
    let mut below = 0u16;
    for (list, side) in [(&words, Side::Words), (&meaning, Side::Meaning)] {
        for (score, address, _) in list.iter().skip(DEPTH) {
            if fused.len() >= limit {
                break;
            }
            if kept(side, *score) && !fused.iter().any(|f| f.1 == *address) {
                below = below.saturating_add(1);
                fused.push((1.0 / f32::from(below + 1), *address, side));
            }
        }
    }
    fused.truncate(limit);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(chunks: usize) -> Vec<u32> {
        let (a, b, c) = (
            DocAddress::new(0, 1),
            DocAddress::new(0, 2),
            DocAddress::new(0, 3),
        );
        let words = [(10.0, a), (9.0, b), (0.0, c)];
        let near = |score, address| Near {
            score,
            address,
            chunks,
        };
        let meaning = [near(0.9, c), near(0.5, b), near(0.1, a)];
        fuse(&words, &[1.0; 3], &[], &meaning, 3)
            .into_iter()
            .map(|(_, address, _)| address.doc_id)
            .collect()
    }

    /// Three documents of one segment.
    fn three() -> [DocAddress; 3] {
        [1, 2, 3].map(|id| DocAddress::new(0, id))
    }

    /// What meaning found, embedded whole.
    fn near(score: f32, address: DocAddress) -> Near {
        Near {
            score,
            address,
            chunks: 1,
        }
    }

    #[test]
    fn what_only_meaning_finds_and_barely_resembles_is_left_out() {
        let [a, b, c] = three();
        // c is far from the question; a, found by words too, keeps its
        // place however little meaning sees in it.
        let meaning = [near(0.46, b), near(0.16, c), near(0.05, a)];
        let ids = |fused: Vec<(f32, DocAddress, Side)>| -> Vec<u32> {
            fused.into_iter().map(|f| f.1.doc_id).collect()
        };
        assert_eq!(ids(fuse(&[(4.0, a)], &[1.0], &[], &meaning, 5)), [1, 2]);
        assert_eq!(ids(fuse(&[], &[], &[], &meaning, 5)), [2]);
    }

    #[test]
    fn a_word_hit_the_model_cannot_read_is_not_outranked_for_it() {
        let [zh, en, other] = three();
        // The Chinese note holds the question's words best; meaning sees
        // only the English ones.
        let words = [(29.0, zh), (18.5, en), (2.0, other)];
        let meaning = [near(0.5, en), near(0.3, other)];
        let first = |unread: &[bool]| fuse(&words, &[1.0; 3], unread, &meaning, 3)[0].1;
        assert_eq!(first(&[]), en);
        assert_eq!(first(&[true, false, false]), zh);
    }

    #[test]
    fn meaning_unsure_of_its_best_does_not_outweigh_words() {
        let [release, flaky, other] = three();
        let words = [(12.0, release), (10.0, flaky), (2.0, other)];
        let first = |best: f32| {
            let meaning = [near(best, flaky), near(best - 0.2, release)];
            fuse(&words, &[1.0; 3], &[], &meaning, 3)[0].1
        };
        // Sure of its best, meaning lifts it above the words' first.
        assert_eq!(first(0.6), flaky);
        // Barely over the floor, it leaves the words' order.
        assert_eq!(first(0.22), release);
    }

    #[test]
    fn meaning_counts_less_for_a_memory_seen_in_many_chunks() {
        // Embedded whole, meaning lifts the words' second above their first.
        assert_eq!(order(1), [2, 1, 3]);
        // In sixteen chunks each, the words' order stands.
        assert_eq!(order(16), [1, 2, 3]);
    }
}
