//! A note's letters and words as features for the learned head
//! ([`super::head`]): the runs of one to three characters inside each of
//! its words, and its words and pairs of neighbouring words, each weighed
//! by tf-idf.
//!
//! Runs of characters because they need no word list and no stemmer:
//! "decided", "decision" and "decide" share "dec" and "eci"; Chinese,
//! written without spaces, is read as its characters and their pairs
//! ("决定", "教训"), which an English encoder cannot read. Words and their
//! pairs beside them because what a note is often shows in a phrase the
//! runs cut apart ("we agreed", "turns out", "note to self"): with them,
//! eighteen outside authors, each filed by heads trained without them,
//! were filed 88.7% right with a model (85.5% on runs alone) and 87.3%
//! without one (82.8%).
//!
//! Subtleties:
//! - Each word is read with a space on each side, so a run can say that
//!   a word starts or ends there (" un", "ed ").
//! - A word is a run of letters, digits and apostrophes; each Chinese
//!   character is a word of its own. Words are kept with a tab before
//!   them, which no run holds, so the two never meet.
//! - Only runs and words that at least [`MIN_NOTES`] training notes hold
//!   are kept: what one note has teaches nothing about the next author.
//! - A count is damped (1 + ln n) and weighed by its rarity (smoothed
//!   idf); a note's runs, and apart from them its words, then each have
//!   length [`WEIGHT`].

use std::collections::{BTreeMap, HashMap};

/// The shortest and longest runs of characters read.
const SHORTEST: usize = 1;
/// See [`SHORTEST`].
const LONGEST: usize = 3;

/// A run is kept when at least this many training notes hold it.
pub const MIN_NOTES: usize = 2;

/// The length of a note's features, against the unit length of its
/// embedding beside them: chosen with the head's penalty by leaving
/// each outside author out (BENCHMARKS.md, "Classification").
pub const WEIGHT: f32 = 3.0;

/// What marks a word (or a pair of words) among the runs.
const WORD: char = '\t';

/// The runs and words a head reads, and how rare each was in its
/// training notes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Grams {
    runs: Vec<String>,
    index: HashMap<String, u32>,
    idf: Vec<f32>,
}

impl Grams {
    /// The runs of `texts` held by at least [`MIN_NOTES`] of them, in
    /// sorted order (so the same notes always give the same features).
    pub fn learn(texts: &[&str]) -> Grams {
        let mut notes_holding: BTreeMap<String, usize> = BTreeMap::new();
        for text in texts {
            for run in counts(text).into_keys() {
                *notes_holding.entry(run).or_default() += 1;
            }
        }
        let n = texts.len() as f32;
        let (runs, idf): (Vec<String>, Vec<f32>) = notes_holding
            .into_iter()
            .filter(|(_, df)| *df >= MIN_NOTES)
            .map(|(run, df)| (run, ((1.0 + n) / (1.0 + df as f32)).ln() + 1.0))
            .unzip();
        Grams::new(runs, idf)
    }

    /// Runs with their idf, as [`Grams::parts`] gave them; `None` if the
    /// lengths differ.
    pub fn from_parts(runs: Vec<String>, idf: Vec<f32>) -> Option<Grams> {
        (runs.len() == idf.len()).then(|| Grams::new(runs, idf))
    }

    fn new(runs: Vec<String>, idf: Vec<f32>) -> Grams {
        let index = runs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i as u32))
            .collect();
        Grams { runs, index, idf }
    }

    /// The runs and their idf, in feature order.
    pub fn parts(&self) -> (&[String], &[f32]) {
        (&self.runs, &self.idf)
    }

    /// How many features a note has.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether no run is read.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// `text`'s features: (feature, value) for each known run or word it
    /// holds, in feature order; its runs together have length [`WEIGHT`],
    /// and so do its words (none if it holds no known one).
    pub fn features(&self, text: &str) -> Vec<(u32, f32)> {
        let mut out: Vec<(u32, f32)> = counts(text)
            .into_iter()
            .filter_map(|(run, n)| {
                let i = *self.index.get(&run)?;
                Some((i, (1.0 + (n as f32).ln()) * self.idf[i as usize]))
            })
            .collect();
        out.sort_unstable_by_key(|(i, _)| *i);
        let is_word = |i: u32| self.runs[i as usize].starts_with(WORD);
        for words in [true, false] {
            let norm = out
                .iter()
                .filter(|(i, _)| is_word(*i) == words)
                .map(|(_, v)| v * v)
                .sum::<f32>()
                .sqrt();
            if norm > 0.0 {
                out.iter_mut()
                    .filter(|(i, _)| is_word(*i) == words)
                    .for_each(|(_, v)| *v *= WEIGHT / norm);
            }
        }
        out
    }
}

/// How often each run of [`SHORTEST`] to [`LONGEST`] characters occurs
/// within `text`'s words, lowercased, each word with a space either side;
/// and how often each of its [`words`] and pairs of neighbouring words
/// does, after a [`WORD`] mark.
fn counts(text: &str) -> HashMap<String, u32> {
    let mut counts = HashMap::new();
    let words = words(text);
    for (i, word) in words.iter().enumerate() {
        *counts.entry(format!("{WORD}{word}")).or_default() += 1;
        if let Some(next) = words.get(i + 1) {
            *counts.entry(format!("{WORD}{word} {next}")).or_default() += 1;
        }
    }
    for word in text.split_whitespace() {
        let padded: Vec<char> = std::iter::once(' ')
            .chain(word.chars().flat_map(char::to_lowercase))
            .chain(std::iter::once(' '))
            .collect();
        for n in SHORTEST..=LONGEST {
            for run in padded.windows(n) {
                *counts.entry(run.iter().collect::<String>()).or_default() += 1;
            }
        }
    }
    counts
}

/// `text`'s words, lowercased: runs of letters, digits and apostrophes,
/// each Chinese character a word of its own.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        let han = is_han(c);
        if !han && (c.is_alphanumeric() || c == '\'') {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if han {
            words.push(c.to_string());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Whether `c` is a Chinese character (the unified ideographs, their
/// first extension and the compatibility block).
fn is_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{f900}'..='\u{faff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_read_within_words_with_their_edges() {
        let c = counts("Go ok");
        for run in [
            " ", "g", "o", " g", "go", "o ", " go", "go ", " o", "ok", "k ",
        ] {
            assert!(c.contains_key(run), "{run:?} in {c:?}");
        }
        assert!(!c.contains_key("o o"), "no run crosses a space");
        assert_eq!(c["o"], 2);
        let c = counts("决定用它");
        assert!(c.contains_key("决定") && c.contains_key("决定用"));
    }

    #[test]
    fn words_and_their_pairs_are_read_beside_the_runs() {
        assert_eq!(
            words("We agreed: the user's API v2, 决定用它."),
            [
                "we", "agreed", "the", "user's", "api", "v2", "决", "定", "用", "它"
            ]
        );
        let c = counts("Turns out it's fine");
        for word in ["\tturns", "\tturns out", "\tit's fine", "\tfine"] {
            assert_eq!(c.get(word), Some(&1), "{word:?} in {c:?}");
        }
        assert!(!c.contains_key("\tturns it's"), "only neighbours pair");
        assert!(
            counts("a\tb")
                .keys()
                .all(|k| !k.starts_with(WORD) || !k[1..].contains(WORD)),
            "a tab in the text is never a word's mark"
        );
    }

    #[test]
    fn only_runs_two_notes_share_are_learned_and_features_have_the_weight() {
        let grams = Grams::learn(&["we decided", "decided again", "zebra"]);
        assert!(grams.index.contains_key("dec"));
        assert!(!grams.index.contains_key("zeb"), "one note's run");
        assert!(grams.index.contains_key("\tdecided"));
        assert!(!grams.index.contains_key("\tzebra"), "one note's word");
        let f = grams.features("Decided!");
        for words in [true, false] {
            let norm = f
                .iter()
                .filter(|(i, _)| grams.runs[*i as usize].starts_with(WORD) == words)
                .map(|(_, v)| v * v)
                .sum::<f32>()
                .sqrt();
            assert!((norm - WEIGHT).abs() < 1e-4, "{norm}");
        }
        assert!(f.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(grams.features("").is_empty());
        let (runs, idf) = grams.parts();
        assert_eq!(
            Grams::from_parts(runs.to_vec(), idf.to_vec()),
            Some(grams.clone())
        );
    }
}
