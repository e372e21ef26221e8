//! English word forms no stemmer reaches: the past tenses and participles
//! of irregular verbs ("went", "bought", "taught"), a few irregular
//! plurals ("children", "feet"), and the nouns of the two verbs an
//! agent's memory is most asked about ("decision", "choice"), each mapped
//! to its base form before the stemmer of the stemmed fields runs. A
//! question asks "what did she buy" of a memory that says "she bought":
//! Snowball leaves "bought" as it is, so without this the two never meet;
//! it stems "decide" and "decision" apart too, so "what did we decide
//! about the database?" missed "Decision: Postgres".
//!
//! Subtleties:
//! - Only the stemmed fields see the mapping; the plain fields keep every
//!   word as written, so a search for "left" still ranks the memory that
//!   says "left" above one that says "leave".
//! - Forms that are mostly other words are left out ("rose", "ground",
//!   "wound", "bit", "lay", "bore"), and so are forms of "be", "have" and
//!   "do", which are stop words.

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Irregular forms and their base forms, sorted by form.
const FORMS: &[(&str, &str)] = &[
    ("arisen", "arise"),
    ("arose", "arise"),
    ("ate", "eat"),
    ("awoke", "awake"),
    ("awoken", "awake"),
    ("beaten", "beat"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bent", "bend"),
    ("bled", "bleed"),
    ("blew", "blow"),
    ("blown", "blow"),
    ("bought", "buy"),
    ("bred", "breed"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("burnt", "burn"),
    ("came", "come"),
    ("caught", "catch"),
    ("children", "child"),
    ("choice", "choose"),
    ("choices", "choose"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("clung", "cling"),
    ("crept", "creep"),
    ("dealt", "deal"),
    ("decision", "decide"),
    ("decisions", "decide"),
    ("drank", "drink"),
    ("drawn", "draw"),
    ("dreamt", "dream"),
    ("drew", "draw"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("drunk", "drink"),
    ("dug", "dig"),
    ("eaten", "eat"),
    ("fallen", "fall"),
    ("fed", "feed"),
    ("feet", "foot"),
    ("fell", "fall"),
    ("felt", "feel"),
    ("fled", "flee"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("flung", "fling"),
    ("forbade", "forbid"),
    ("forbidden", "forbid"),
    ("forgave", "forgive"),
    ("forgiven", "forgive"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("fought", "fight"),
    ("found", "find"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("gave", "give"),
    ("geese", "goose"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("heard", "hear"),
    ("held", "hold"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("knelt", "kneel"),
    ("knew", "know"),
    ("known", "know"),
    ("leant", "lean"),
    ("leapt", "leap"),
    ("learnt", "learn"),
    ("led", "lead"),
    ("left", "leave"),
    ("lent", "lend"),
    ("lost", "lose"),
    ("made", "make"),
    ("meant", "mean"),
    ("men", "man"),
    ("met", "meet"),
    ("mice", "mouse"),
    ("overcame", "overcome"),
    ("paid", "pay"),
    ("proven", "prove"),
    ("ran", "run"),
    ("rang", "ring"),
    ("ridden", "ride"),
    ("rode", "ride"),
    ("rung", "ring"),
    ("said", "say"),
    ("sang", "sing"),
    ("sank", "sink"),
    ("sat", "sit"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("sewn", "sew"),
    ("shaken", "shake"),
    ("shone", "shine"),
    ("shook", "shake"),
    ("shot", "shoot"),
    ("shown", "show"),
    ("shrank", "shrink"),
    ("shrunk", "shrink"),
    ("slept", "sleep"),
    ("slid", "slide"),
    ("sold", "sell"),
    ("sought", "seek"),
    ("spat", "spit"),
    ("sped", "speed"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("sprang", "spring"),
    ("sprung", "spring"),
    ("spun", "spin"),
    ("stank", "stink"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("stood", "stand"),
    ("striven", "strive"),
    ("strode", "stride"),
    ("strove", "strive"),
    ("struck", "strike"),
    ("strung", "string"),
    ("stuck", "stick"),
    ("stung", "sting"),
    ("stunk", "stink"),
    ("sung", "sing"),
    ("sunk", "sink"),
    ("swam", "swim"),
    ("swept", "sweep"),
    ("swollen", "swell"),
    ("swore", "swear"),
    ("sworn", "swear"),
    ("swum", "swim"),
    ("swung", "swing"),
    ("taken", "take"),
    ("taught", "teach"),
    ("teeth", "tooth"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("told", "tell"),
    ("took", "take"),
    ("tore", "tear"),
    ("torn", "tear"),
    ("trod", "tread"),
    ("trodden", "tread"),
    ("undergone", "undergo"),
    ("understood", "understand"),
    ("undertaken", "undertake"),
    ("undertook", "undertake"),
    ("underwent", "undergo"),
    ("went", "go"),
    ("wept", "weep"),
    ("withdrawn", "withdraw"),
    ("withdrew", "withdraw"),
    ("woke", "wake"),
    ("woken", "wake"),
    ("women", "woman"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("wove", "weave"),
    ("woven", "weave"),
    ("written", "write"),
    ("wrote", "write"),
];

/// The base form of `word` (lowercase), if it is an irregular form.
pub(crate) fn base_form(word: &str) -> Option<&'static str> {
    FORMS
        .binary_search_by(|(form, _)| (*form).cmp(word))
        .ok()
        .map(|i| FORMS[i].1)
}

/// The irregular forms whose base form has the English stem `stem`
/// ("bought" for `buy`), for a snippet to find them as the index did.
pub(crate) fn forms_with_stem(stem: &str) -> &'static [&'static str] {
    static BY_STEM: std::sync::OnceLock<std::collections::HashMap<String, Vec<&'static str>>> =
        std::sync::OnceLock::new();
    let by_stem = BY_STEM.get_or_init(|| {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let mut by_stem: std::collections::HashMap<String, Vec<&'static str>> =
            std::collections::HashMap::new();
        for (form, base) in FORMS {
            by_stem
                .entry(stemmer.stem(base).into_owned())
                .or_default()
                .push(form);
        }
        by_stem
    });
    by_stem.get(stem).map_or(&[], Vec::as_slice)
}

/// The token filter that puts irregular forms in their base form.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BaseForms;

impl TokenFilter for BaseForms {
    type Tokenizer<T: Tokenizer> = BaseFormsFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> BaseFormsFilter<T> {
        BaseFormsFilter { tokenizer }
    }
}

/// A tokenizer whose tokens go through [`BaseForms`].
#[derive(Clone)]
pub(crate) struct BaseFormsFilter<T> {
    tokenizer: T,
}

impl<T: Tokenizer> Tokenizer for BaseFormsFilter<T> {
    type TokenStream<'a> = BaseFormsStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        BaseFormsStream {
            tail: self.tokenizer.token_stream(text),
        }
    }
}

/// The token stream of [`BaseFormsFilter`].
pub(crate) struct BaseFormsStream<T> {
    tail: T,
}

impl<T: TokenStream> TokenStream for BaseFormsStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        if let Some(base) = base_form(&self.tail.token().text) {
            let text = &mut self.tail.token_mut().text;
            text.clear();
            text.push_str(base);
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_sorted_unique_and_never_their_own_base() {
        assert!(FORMS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(FORMS.iter().all(|(form, base)| form != base));
        assert!(FORMS.iter().all(|(_, base)| base_form(base).is_none()));
    }

    #[test]
    fn irregular_forms_find_their_base() {
        assert_eq!(base_form("went"), Some("go"));
        assert_eq!(base_form("bought"), Some("buy"));
        assert_eq!(base_form("children"), Some("child"));
        assert_eq!(base_form("walked"), None);
        assert_eq!(forms_with_stem("buy"), ["bought"]);
        assert_eq!(forms_with_stem("walk"), [] as [&str; 0]);
    }
}
