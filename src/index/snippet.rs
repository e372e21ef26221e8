//! The excerpt shown with a search hit: the stretch of its body, at most
//! [`SNIPPET_CHARS`](super::query) long, with the most of the query's words.
//!
//! This is tantivy's `SnippetGenerator` choice, made again without its
//! costs: it lowercases every word of the body into a new string and
//! looks it up through a boxed tokenizer, and a search makes ten snippets
//! of 4 KB notes, so at 100k notes that was a third of a search's time.
//! Here the body goes through [`MemoryTextTokenizer`]'s spans, compared
//! with the few query words in place: nothing is copied or allocated per
//! word of an ASCII text.
//!
//! Subtleties (kept as tantivy has them, so excerpts do not change):
//! - A fragment starts at a word and grows while its end stays within the
//!   limit counted in bytes from its start; the next word starts a new one.
//! - A word found scores `1 / (1 + documents with it)`, so rare words
//!   weigh more; the best fragment wins, the earliest among equals.
//! - A body with none of the words has no fragment: the caller shows its
//!   beginning instead.
//! - A word also counts when its English stem is one of the query's
//!   (`preference` for a search of "prefers"), or when it is an irregular
//!   form of the query's word ("bought" for "buy"), as the stemmed fields
//!   matched it.

use std::collections::BTreeMap;

use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::tokenizer::Tokenizer;
use tantivy::{Score, Searcher};

use super::tokenizer::MemoryTextTokenizer;

/// The query's words in one field, each with its weight.
#[derive(Debug, Default)]
pub(crate) struct SnippetWords {
    words: BTreeMap<String, Score>,
    /// The query's English stems, each with its weight: a word of the text
    /// whose stem is one of them counts as found.
    stems: BTreeMap<String, Score>,
}

impl SnippetWords {
    /// The words of `query` in `field`, and its stems in `stem_field`,
    /// that some document has.
    pub(crate) fn of(
        searcher: &Searcher,
        query: &dyn Query,
        field: Field,
        stem_field: Field,
    ) -> SnippetWords {
        let mut words = weighed(searcher, query, field);
        let stems = weighed(searcher, query, stem_field);
        for (stem, weight) in &stems {
            for form in super::base_forms::forms_with_stem(stem) {
                words.entry((*form).to_owned()).or_insert(*weight);
            }
        }
        SnippetWords { words, stems }
    }

    /// The best fragment of `text` at most `max_bytes` long, or `""` when
    /// `text` has none of the words.
    pub(crate) fn best<'t>(&self, text: &'t str, max_bytes: usize) -> &'t str {
        if self.words.is_empty() && self.stems.is_empty() {
            return "";
        }
        let mut tokenizer = MemoryTextTokenizer;
        let mut stream = tokenizer.token_stream(text);
        // (score, start, stop) of the fragment being built and the best.
        let mut current = (0.0, 0, 0);
        let mut best: Option<(Score, usize, usize)> = None;
        let mut keep = |fragment: (Score, usize, usize)| {
            if fragment.0 > 0.0 && best.is_none_or(|b| fragment.0 > b.0) {
                best = Some(fragment);
            }
        };
        while let Some((from, to, lowercase)) = stream.next_span() {
            if to - current.1 > max_bytes {
                keep(current);
                current = (0.0, from, from);
            }
            current.2 = to;
            if let Some(score) = self.weight(&text[from..to], lowercase) {
                current.0 += score;
            }
        }
        keep(current);
        best.map_or("", |(_, start, stop)| {
            // The brackets and quotes that close what the last word
            // began ("(max_width = 100)") stay with it; a full stop does
            // not.
            let closing = text[stop..]
                .find(|c: char| {
                    !matches!(
                        c,
                        ')' | ']' | '}' | '"' | '\'' | '”' | '’' | '%' | '）' | '」'
                    )
                })
                .unwrap_or(text.len() - stop);
            &text[start..stop + closing]
        })
    }

    /// The weight of the word `piece` is (lowercased first when
    /// `lowercase`), if it is one of the words.
    fn weight(&self, piece: &str, lowercase: bool) -> Option<Score> {
        self.exact(piece, lowercase)
            .or_else(|| self.stemmed(piece, lowercase))
    }

    /// The weight of `piece`'s English stem, if it is one of the stems.
    /// Only a word whose first three letters are some stem's is stemmed,
    /// so a long body costs about a comparison a word.
    fn stemmed(&self, piece: &str, lowercase: bool) -> Option<Score> {
        if !lowercase {
            return None;
        }
        let word = piece.as_bytes();
        let begins_as = |stem: &String| {
            let n = stem.len().min(3);
            word.len() >= n && word[..n].eq_ignore_ascii_case(&stem.as_bytes()[..n])
        };
        if !self.stems.keys().any(begins_as) {
            return None;
        }
        let lower = piece.to_lowercase();
        let stem = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English).stem(&lower);
        self.stems.get(stem.as_ref()).copied()
    }

    fn exact(&self, piece: &str, lowercase: bool) -> Option<Score> {
        if !piece.is_ascii() {
            let mut folded = String::with_capacity(piece.len());
            super::tokenizer::fold_into(piece, lowercase, &mut folded);
            return self.words.get(folded.as_str()).copied();
        }
        // The words are few: a scan beats lowercasing every word of the text.
        self.words
            .iter()
            .find(|(word, _)| {
                word.len() == piece.len()
                    && if lowercase {
                        word.as_bytes().eq_ignore_ascii_case(piece.as_bytes())
                    } else {
                        word.as_str() == piece
                    }
            })
            .map(|(_, score)| *score)
    }
}

/// The terms of `query` in `field` that some document has, each weighed
/// `1 / (1 + documents with it)`.
fn weighed(searcher: &Searcher, query: &dyn Query, field: Field) -> BTreeMap<String, Score> {
    let mut terms = Vec::new();
    query.query_terms(&mut |term, _| {
        if term.field() == field {
            terms.push(term.clone());
        }
    });
    let mut words = BTreeMap::new();
    for term in terms {
        let value = term.value();
        let Some(text) = value.as_str() else {
            continue;
        };
        if words.contains_key(text) {
            continue;
        }
        match searcher.doc_freq(&term) {
            Ok(0) => {}
            Ok(n) => {
                words.insert(text.to_owned(), 1.0 / (1.0 + n as Score));
            }
            Err(e) => tracing::debug!("no snippet weight for {text:?}: {e}"),
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[(&str, Score)]) -> SnippetWords {
        SnippetWords {
            words: list.iter().map(|(w, s)| (w.to_string(), *s)).collect(),
            stems: BTreeMap::new(),
        }
    }

    #[test]
    fn a_bracket_or_quote_closed_after_the_last_word_stays() {
        let w = words(&[("width", 1.0)]);
        assert_eq!(
            w.best("Lines are short (rustfmt max_width = 100).", 1000),
            "Lines are short (rustfmt max_width = 100)"
        );
        assert_eq!(
            w.best("They said \"max width\".", 1000),
            "They said \"max width\""
        );
    }

    #[test]
    fn a_word_counts_by_its_stem_too() {
        let w = SnippetWords {
            words: BTreeMap::new(),
            stems: [("prefer".to_owned(), 0.5)].into(),
        };
        let text = "a long preamble about nothing. Their preference: tabs.";
        assert_eq!(w.best(text, 30), "Their preference: tabs");
        let w = SnippetWords {
            words: [("bought".to_owned(), 0.5)].into(),
            stems: [("buy".to_owned(), 0.5)].into(),
        };
        let text = "nothing here at all. She bought a kayak.";
        assert!(w.best(text, 25).contains("bought"), "{}", w.best(text, 25));
    }

    #[test]
    fn the_fragment_with_the_most_weight_wins_and_the_earliest_among_equals() {
        let text = "alpha beta gamma. delta kernel epsilon. kernel mount zeta. kernel mount eta.";
        let w = words(&[("kernel", 0.5), ("mount", 0.25)]);
        assert_eq!(w.best(text, 20), "kernel mount zeta");
        assert_eq!(w.best(text, 1000), text.trim_end_matches('.'));
        assert_eq!(words(&[("kernel", 0.5)]).best(text, 18), "delta kernel");
    }

    #[test]
    fn words_are_found_whatever_their_case_and_none_found_is_empty() {
        let w = words(&[("dark", 0.5)]);
        assert_eq!(w.best("Prefers DARK themes.", 200), "Prefers DARK themes");
        assert_eq!(w.best("light only", 200), "");
        assert_eq!(words(&[]).best("dark", 200), "");
    }

    #[test]
    fn cjk_words_are_bigrams_as_in_the_index() {
        let w = words(&[("偏好", 0.5)]);
        assert_eq!(w.best("我偏好深色模式", 200), "我偏好深色模式");
    }
}
