//! A question's misspelt word read as the word the memories hold:
//! "dentist apointment" asks for "appointment", "postgers" for
//! "postgres".
//!
//! A word no memory holds, by its form or its stem, and that the model
//! does not know whole, is looked up in the words the index holds (titles
//! and bodies, as written) within one edit, or two for a word of nine
//! letters or more: a letter added, dropped, changed, or two side by side
//! swapped. The nearest one, the most common of the nearest, replaces it
//! in the question, for its words and for its meaning (the model reads a
//! misspelling as unrelated word pieces), and the search says so.
//!
//! Subtleties:
//! - The model's vocabulary is what tells a misspelling from a word the
//!   memories happen not to hold: "status", asked of a conversation that
//!   never says it, is a word (all-MiniLM-L6-v2 has it whole), and read as
//!   "statue" it lost LoCoMo questions; "cofee" and "apointment" are not.
//!   Without a model nothing is respelt: there is no vocabulary to ask.
//! - Only words of five letters or more, letters only: a short word is
//!   within one edit of too many others ("July" of "jury"), and a word
//!   with digits is a name or a number, not a misspelling.
//! - A word the memories hold is never changed, however rare.
//! - Not for a search some memories are hidden from: which word is
//!   nearest would tell of the hidden memories' words.
//! - The index's words include those of memories deleted since its last
//!   merge: the question may be read as a word no memory holds any more,
//!   which then finds nothing, as the misspelling did.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use levenshtein_automata::{DFA, Distance, LevenshteinAutomatonBuilder, SINK_STATE};
use tantivy::Searcher;

use super::schema::Fields;

/// The shortest word read as a misspelling.
const SHORTEST: usize = 5;

/// From this length on, a word may be two edits from the one meant.
const TWO_EDITS_FROM: usize = 9;

/// A question with its misspellings replaced.
pub(super) struct Respelt {
    /// The question as searched.
    pub(super) text: String,
    /// What the search says of it.
    pub(super) notes: Vec<String>,
}

/// `text` with each word no memory holds and `known` does not know
/// replaced by the nearest one that some memory holds, if any is near
/// enough; `None` if none is.
pub(super) fn respelt(
    searcher: &Searcher,
    fields: &Fields,
    text: &str,
    known: &dyn Fn(&str) -> bool,
) -> Option<Respelt> {
    let absent = super::fusion::words_held_by_none(searcher, fields, text);
    let mut out = String::with_capacity(text.len());
    let mut notes = Vec::new();
    let mut last = 0;
    for (start, word) in words(text) {
        if known(word) || !absent.contains(&word.to_lowercase()) {
            continue;
        }
        let Some(meant) = nearest(searcher, fields, word) else {
            continue;
        };
        out.push_str(&text[last..start]);
        out.push_str(&meant);
        last = start + word.len();
        notes.push(format!(
            "no memory holds \"{word}\": searched for \"{meant}\" instead"
        ));
    }
    if notes.is_empty() {
        return None;
    }
    out.push_str(&text[last..]);
    Some(Respelt { text: out, notes })
}

/// The words of `text` that may be misspelt: runs of letters of
/// [`SHORTEST`] or more, with their byte offsets, not CJK (read in pairs
/// of characters, not spelt).
fn words(text: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let letter = c.is_alphabetic() && !super::tokenizer::is_cjk(c);
        match (start, letter) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                // A word touching a digit or an underscore is a name.
                let touches = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                let before = text[..s].chars().next_back();
                if text[s..i].chars().count() >= SHORTEST && !touches(before) && !touches(Some(c)) {
                    words.push((s, &text[s..i]));
                }
                start = None;
            }
            _ => {}
        }
    }
    words
}

/// The word some memory holds that `word`, which none holds, is likeliest
/// a misspelling of: the nearest, then the most common, then the first in
/// order; `None` if none is near enough.
fn nearest(searcher: &Searcher, fields: &Fields, word: &str) -> Option<String> {
    let lower = word.to_lowercase();
    let edits = if lower.chars().count() >= TWO_EDITS_FROM {
        2
    } else {
        1
    };
    let dfa = builder(edits).build_dfa(&lower);
    // Each near word, its distance and its documents in every segment and
    // field.
    let mut near: BTreeMap<String, (u8, u64)> = BTreeMap::new();
    for segment in searcher.segment_readers() {
        for field in [fields.title, fields.body] {
            let Ok(inverted) = segment.inverted_index(field) else {
                continue;
            };
            let Ok(mut stream) = inverted.terms().search(Automaton(&dfa)).into_stream() else {
                continue;
            };
            while stream.advance() {
                let Ok(term) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                if !term.chars().all(char::is_alphabetic) {
                    continue;
                }
                let Distance::Exact(distance) = dfa.eval(term) else {
                    continue;
                };
                let count = u64::from(stream.value().doc_freq);
                near.entry(term.to_owned()).or_insert((distance, 0)).1 += count;
            }
        }
    }
    near.into_iter()
        .min_by_key(|(term, (distance, count))| {
            (*distance, std::cmp::Reverse(*count), term.clone())
        })
        .map(|(term, _)| term)
}

/// The automaton builder for `edits` edits, a swap of two letters side by
/// side counting as one; built once (a table of every edit's effect).
fn builder(edits: u8) -> &'static LevenshteinAutomatonBuilder {
    static ONE: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    static TWO: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    let cell = if edits >= 2 { &TWO } else { &ONE };
    cell.get_or_init(|| LevenshteinAutomatonBuilder::new(edits.min(2), true))
}

/// A Levenshtein automaton as the term dictionary walks one.
struct Automaton<'a>(&'a DFA);

impl tantivy_fst::Automaton for Automaton<'_> {
    type State = u32;

    fn start(&self) -> u32 {
        self.0.initial_state()
    }

    fn is_match(&self, state: &u32) -> bool {
        matches!(self.0.distance(*state), Distance::Exact(_))
    }

    fn can_match(&self, state: &u32) -> bool {
        *state != SINK_STATE
    }

    fn accept(&self, state: &u32, byte: u8) -> u32 {
        self.0.transition(*state, byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_words_of_letters_long_enough_may_be_misspelt() {
        let found: Vec<&str> =
            words("Meeras piano recitle: kubernets v2, k8s_nodes and 缓存策略 July")
                .into_iter()
                .map(|(_, w)| w)
                .collect();
        assert_eq!(found, ["Meeras", "piano", "recitle", "kubernets"]);
        let text = "what cofee, Priya?";
        let (at, word) = words(text)[0];
        assert_eq!(&text[at..at + word.len()], "cofee");
    }
}
