//! Tokenizers for the index: words for alphabetic scripts, bigrams for CJK.
//!
//! Chinese and Japanese are written without spaces, so a word tokenizer
//! sees a whole sentence as one token and a query for `偏好` never matches
//! `我偏好深色模式`. [`MemoryTextTokenizer`] splits every run of CJK
//! characters into overlapping bigrams (`我偏 偏好 好深 ...`) at
//! consecutive positions, so a two-character query is one term and a
//! longer one is a phrase of bigrams. A run of a single character becomes
//! a unigram. Everything else is split into lowercase runs of Unicode
//! letters and digits.
//!
//! The stemmed fields (`title_stem`, `body_stem`) see the same words with
//! [`STOP_WORDS`] left out and each word cut to its English stem (Snowball:
//! "prefers", "preferred" and "preference" all become `prefer`; irregular
//! forms such as "bought" first become "buy", see `base_forms.rs`), so a
//! question finds a memory that words it another way. The plain fields
//! keep every word as written, for phrases and to rank an exact form above
//! a stem.
//!
//! Subtleties:
//! - Queries go through the same tokenizer, so a one-character CJK query
//!   is one term that only one-character runs have; the query side
//!   searches it as the bigrams that hold it (`query::cjk_forms`).
//! - Full-width letters and digits (`ＪＳＯＮ`, `５０００`, as Chinese input
//!   methods type them) are indexed and searched as ASCII.
//! - Traditional Chinese characters are indexed and searched as their
//!   simplified forms (`張偉` as `张伟`), one character for one, so a note
//!   written in either is found by a question in the other; offsets stay
//!   those of the text as written.
//! - Tokens longer than [`MAX_WORD_BYTES`] (base64 blobs, hashes pasted
//!   into notes) are dropped: they bloat the term dictionary and nobody
//!   types them as a query.

use tantivy::tokenizer::{
    Language, LowerCaser, RawTokenizer, Stemmer, StopWordFilter, TextAnalyzer, Token, TokenStream,
    Tokenizer,
};

use super::base_forms::BaseForms;

/// Name under which [`MemoryTextTokenizer`] is registered.
pub(crate) const TEXT_TOKENIZER: &str = "mnemofs_text";
/// Name of the analyzer of the stemmed fields: [`MemoryTextTokenizer`]
/// without [`STOP_WORDS`], each word cut to its English stem.
pub(crate) const STEM_TOKENIZER: &str = "mnemofs_stem";
/// Name of the whole-value, lowercased tokenizer used by filter fields.
pub(crate) const KEYWORD_TOKENIZER: &str = "mnemofs_keyword";

/// Longest word kept, in bytes.
const MAX_WORD_BYTES: usize = 80;

/// Words that never decide whether a memory matches: the function words
/// of English and the words a question is built from ("what did ... do
/// when"). A query leaves them out of its optional words, and the stemmed
/// fields do not index them. Sorted, for [`is_stop_word`].
pub(crate) const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "may",
    "me",
    "might",
    "more",
    "most",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    // Chinese questions' own words, as their bigrams ("猫叫什么名字" asks
    // about the cat, not about "为什么"), and Chinese words of one
    // character that say nothing alone: where a question's own words are
    // left out, "有什么教训" leaves 有 standing alone, and a character alone
    // is searched as every pair that holds it.
    "与",
    "个",
    "为",
    "为什",
    "也",
    "了",
    "什么",
    "从",
    "他",
    "们",
    "你",
    "到",
    "吗",
    "吧",
    "呢",
    "和",
    "哪个",
    "哪些",
    "啊",
    "在",
    "她",
    "它",
    "对",
    "就",
    "怎么",
    "我",
    "把",
    "是",
    "有",
    "的",
    "着",
    "给",
    "被",
    "让",
    "过",
    "还",
    "这",
    "那",
    "都",
];

/// Whether `word` (lowercase, as the tokenizer gives it) is one of
/// [`STOP_WORDS`].
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Registers the tokenizers on an index.
pub(crate) fn register(index: &tantivy::Index) {
    let manager = index.tokenizers();
    manager.register(TEXT_TOKENIZER, TextAnalyzer::from(MemoryTextTokenizer));
    manager.register(
        STEM_TOKENIZER,
        TextAnalyzer::builder(MemoryTextTokenizer)
            .filter(StopWordFilter::remove(
                STOP_WORDS.iter().map(|w| (*w).to_owned()),
            ))
            .filter(BaseForms)
            .filter(Stemmer::new(Language::English))
            .build(),
    );
    manager.register(
        KEYWORD_TOKENIZER,
        TextAnalyzer::builder(RawTokenizer::default())
            .filter(LowerCaser)
            .build(),
    );
}

/// Words for alphabetic scripts, overlapping bigrams for CJK runs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemoryTextTokenizer;

/// The tokens of one text, found one at a time in a token buffer that is
/// reused, so indexing a note allocates nothing per word.
pub(crate) struct MemoryTokenStream<'a> {
    text: &'a str,
    /// Where scanning resumes, in bytes.
    pos: usize,
    /// Inside a CJK run: where the last bigram's second character starts.
    cjk_prev: Option<usize>,
    /// Positions handed out so far.
    count: usize,
    token: Token,
}

impl Tokenizer for MemoryTextTokenizer {
    type TokenStream<'a> = MemoryTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MemoryTokenStream<'a> {
        MemoryTokenStream {
            text,
            pos: 0,
            cjk_prev: None,
            count: 0,
            token: Token::default(),
        }
    }
}

impl MemoryTokenStream<'_> {
    fn next_char(&self, at: usize) -> Option<char> {
        self.text[at..].chars().next()
    }

    /// Sets the current token to `text[from..to]`.
    fn emit(&mut self, from: usize, to: usize, lowercase: bool) {
        let piece = &self.text[from..to];
        let t = &mut self.token;
        t.offset_from = from;
        t.offset_to = to;
        t.position = self.count;
        t.position_length = 1;
        t.text.clear();
        fold_into(piece, lowercase, &mut t.text);
        self.count += 1;
    }
}

/// Appends to `out` a span of [`MemoryTokenStream::next_span`] as the
/// index holds it: a word (`lowercase`) lowercased, its full-width forms
/// made ASCII; CJK in simplified characters.
pub(crate) fn fold_into(piece: &str, lowercase: bool, out: &mut String) {
    if !lowercase {
        out.extend(piece.chars().map(crate::memory::hanzi::simplified));
    } else if piece.is_ascii() {
        out.push_str(piece);
        out.make_ascii_lowercase();
    } else if piece.chars().any(is_full_width) {
        let narrow: String = piece.chars().map(narrow).collect();
        out.push_str(&narrow.to_lowercase());
    } else {
        // str::to_lowercase knows word-final sigma; char's does not.
        out.push_str(&piece.to_lowercase());
    }
}

impl MemoryTokenStream<'_> {
    /// The next token's byte range in the text, and whether its text is
    /// the lowercased range (words) or the range as is (CJK), without
    /// building the token: for a caller that only compares words.
    pub(crate) fn next_span(&mut self) -> Option<(usize, usize, bool)> {
        loop {
            if let Some(prev) = self.cjk_prev {
                // Inside a CJK run: the next bigram, or the run's end.
                match self.next_char(self.pos) {
                    Some(c) if is_cjk(c) => {
                        let end = self.pos + c.len_utf8();
                        self.cjk_prev = Some(self.pos);
                        self.pos = end;
                        return Some((prev, end, false));
                    }
                    _ => self.cjk_prev = None,
                }
            }
            let start = self.pos;
            let first = *self.text.as_bytes().get(start)?;
            let (kind, mut end) = if first.is_ascii() {
                // Most of any note, without decoding a char.
                let kind = if first.is_ascii_alphanumeric() {
                    Class::Word
                } else {
                    Class::Other
                };
                (kind, start + 1)
            } else {
                let c = self.next_char(start)?;
                (class(c), start + c.len_utf8())
            };
            match kind {
                Class::Other | Class::Word => {
                    let bytes = self.text.as_bytes();
                    loop {
                        // ASCII, most of any note, without decoding.
                        match bytes.get(end) {
                            None => break,
                            Some(&b) if b.is_ascii() => {
                                if b.is_ascii_alphanumeric() != (kind == Class::Word) {
                                    break;
                                }
                                end += 1;
                            }
                            Some(_) => match self.next_char(end) {
                                Some(c) if class(c) == kind => end += c.len_utf8(),
                                _ => break,
                            },
                        }
                    }
                    self.pos = end;
                    if kind == Class::Word && end - start <= MAX_WORD_BYTES {
                        return Some((start, end, true));
                    }
                }
                Class::Cjk => {
                    self.pos = end;
                    return Some(match self.next_char(end) {
                        // A run of two or more: overlapping bigrams.
                        Some(next) if is_cjk(next) => {
                            let to = end + next.len_utf8();
                            self.cjk_prev = Some(end);
                            self.pos = to;
                            (start, to, false)
                        }
                        // A run of one: a unigram.
                        _ => (start, end, false),
                    });
                }
            }
        }
    }
}

impl TokenStream for MemoryTokenStream<'_> {
    fn advance(&mut self) -> bool {
        match self.next_span() {
            Some((from, to, lowercase)) => {
                self.emit(from, to, lowercase);
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// Whether `c` belongs to a script written without spaces between words
/// (Han, kana, Hangul, and their compatibility and extension blocks).
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF        // Hangul Jamo
        | 0x2E80..=0x2FDF      // CJK radicals, Kangxi radicals
        | 0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3100..=0x312F      // Bopomofo
        | 0x3130..=0x318F      // Hangul compatibility Jamo
        | 0x31F0..=0x31FF      // Katakana phonetic extensions
        | 0x3400..=0x4DBF      // CJK extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0xF900..=0xFAFF      // CJK compatibility ideographs
        | 0xFF66..=0xFF9F      // half-width Katakana
        | 0x20000..=0x3FFFF    // CJK extensions B and later
    )
}

/// The one CJK character `word` is, if it is one.
pub(crate) fn lone_cjk(word: &str) -> Option<char> {
    let mut chars = word.chars();
    let c = chars.next()?;
    (chars.next().is_none() && is_cjk(c)).then_some(c)
}

/// Whether `text` is mostly CJK: it has more CJK characters than words
/// in other scripts (a Chinese character is about a word's worth), so
/// "决定：缓存层换成 Redis Cluster" is, and "the staging server, 用户名
/// deploy" is not.
pub(crate) fn mostly_cjk(text: &str) -> bool {
    let (cjk, words) = cjk_and_words(text);
    cjk > words
}

/// How many CJK characters `text` has, and how many words in other
/// scripts (see [`mostly_cjk`]).
pub(crate) fn cjk_and_words(text: &str) -> (usize, usize) {
    let (mut cjk, mut words, mut in_word) = (0usize, 0usize, false);
    for c in text.chars() {
        match class(c) {
            Class::Cjk => {
                cjk += 1;
                in_word = false;
            }
            Class::Word => {
                if !in_word {
                    words += 1;
                }
                in_word = true;
            }
            Class::Other => in_word = false,
        }
    }
    (cjk, words)
}

/// Whether `c` is a full-width form of an ASCII character (`Ｊ`, `５`),
/// as Chinese and Japanese input methods type them.
fn is_full_width(c: char) -> bool {
    matches!(c as u32, 0xFF01..=0xFF5E)
}

/// `c` as ASCII if it is a full-width form of it, else `c`: `ＪＳＯＮ` is
/// indexed and searched as `json`, `５０００` as `5000`.
fn narrow(c: char) -> char {
    if is_full_width(c) {
        char::from_u32(c as u32 - 0xFEE0).unwrap_or(c)
    } else {
        c
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Word,
    Cjk,
    Other,
}

fn class(c: char) -> Class {
    if is_cjk(c) {
        Class::Cjk
    } else if c.is_alphanumeric() {
        Class::Word
    } else {
        Class::Other
    }
}

/// Splits `text` into tokens; see the module documentation.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut tokenizer = MemoryTextTokenizer;
    let mut stream = tokenizer.token_stream(text);
    while stream.advance() {
        tokens.push(stream.token().clone());
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        tokenize(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn words_are_lowercased_alphanumeric_runs() {
        assert_eq!(
            texts("Dark-Mode, v2 café_au_lait"),
            ["dark", "mode", "v2", "café", "au", "lait"]
        );
    }

    #[test]
    fn a_text_is_mostly_cjk_when_it_has_more_characters_than_other_words() {
        assert!(mostly_cjk("决定：缓存层从 Memcached 换成 Redis Cluster"));
        assert!(mostly_cjk("咖啡"));
        assert!(!mostly_cjk(
            "Remember: the staging server is staging.xinghe.internal, 用户名 deploy。"
        ));
        assert!(!mostly_cjk("prefers coffee"));
        assert!(!mostly_cjk(""));
    }

    #[test]
    fn full_width_letters_and_digits_are_ascii() {
        assert_eq!(
            texts("用ＪＳＯＮ格式，预算５０００元"),
            ["用", "json", "格式", "预算", "5000", "元"]
        );
        assert_eq!(texts("Ｄａｒｋ mode"), ["dark", "mode"]);
    }

    #[test]
    fn traditional_characters_are_indexed_as_simplified_with_their_own_offsets() {
        assert_eq!(texts("張偉負責"), ["张伟", "伟负", "负责"]);
        assert_eq!(texts("後端"), texts("后端"));
        // Characters that are the same in both, kana and Hangul stay.
        assert_eq!(
            texts("咖啡かな한국"),
            ["咖啡", "啡か", "かな", "な한", "한국"]
        );
        let tokens = tokenize("用戶：張偉");
        assert_eq!(
            tokens
                .iter()
                .map(|t| (t.offset_from, t.offset_to))
                .collect::<Vec<_>>(),
            [(0, 6), (9, 15)]
        );
    }

    #[test]
    fn cjk_runs_become_overlapping_bigrams() {
        assert_eq!(texts("我偏好深色"), ["我偏", "偏好", "好深", "深色"]);
        assert_eq!(texts("好 ok"), ["好", "ok"]);
        assert_eq!(texts("用dark模式"), ["用", "dark", "模式"]);
        let toks = tokenize("我偏好");
        assert_eq!(toks[1].position, 1);
        assert_eq!(&"我偏好"[toks[1].offset_from..toks[1].offset_to], "偏好");
    }

    #[test]
    fn overlong_words_are_dropped() {
        let long = "a".repeat(200);
        assert_eq!(texts(&format!("x {long} y")), ["x", "y"]);
    }

    #[test]
    fn mixed_scripts_keep_offsets_and_positions() {
        let text = "Σίσυφος 我偏好 ÉTÉ x 好";
        let toks = tokenize(text);
        let got: Vec<(&str, String, usize)> = toks
            .iter()
            .map(|t| {
                (
                    &text[t.offset_from..t.offset_to],
                    t.text.clone(),
                    t.position,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("Σίσυφος", "σίσυφος".to_owned(), 0),
                ("我偏", "我偏".to_owned(), 1),
                ("偏好", "偏好".to_owned(), 2),
                ("ÉTÉ", "été".to_owned(), 3),
                ("x", "x".to_owned(), 4),
                ("好", "好".to_owned(), 5),
            ]
        );
    }

    /// The rules of the module documentation, written plainly.
    fn reference(text: &str) -> Vec<(usize, usize, String)> {
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let kind = class(chars[i].1);
            let mut j = i;
            while j < chars.len() && class(chars[j].1) == kind {
                j += 1;
            }
            let at = |k: usize| chars.get(k).map_or(text.len(), |c| c.0);
            match kind {
                Class::Other => {}
                Class::Word if at(j) - at(i) <= MAX_WORD_BYTES => {
                    out.push((at(i), at(j), text[at(i)..at(j)].to_lowercase()));
                }
                Class::Word => {}
                Class::Cjk if j - i == 1 => out.push((at(i), at(j), text[at(i)..at(j)].into())),
                Class::Cjk => {
                    for k in i..j - 1 {
                        out.push((at(k), at(k + 2), text[at(k)..at(k + 2)].into()));
                    }
                }
            }
            i = j;
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn streaming_matches_the_plain_rules(text in "[a-zA-Z0-9 ,.éÉΣς_\\-我偏好深色かなり한국\\n]{0,60}") {
            let got: Vec<(usize, usize, String)> = tokenize(&text)
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    assert_eq!(t.position, i);
                    (t.offset_from, t.offset_to, t.text)
                })
                .collect();
            proptest::prop_assert_eq!(got, reference(&text));
        }
    }

    #[test]
    fn stop_words_are_sorted_lowercase_and_unique() {
        assert!(
            STOP_WORDS.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert!(
            STOP_WORDS.iter().all(|w| texts(w) == [*w]),
            "each is one token"
        );
        assert!(is_stop_word("when") && is_stop_word("the") && !is_stop_word("user"));
    }

    #[test]
    fn the_stem_analyzer_drops_stop_words_and_stems() {
        let index = tantivy::Index::create_in_ram(tantivy::schema::Schema::builder().build());
        register(&index);
        let mut analyzer = index.tokenizers().get(STEM_TOKENIZER).unwrap();
        let mut stream =
            analyzer.token_stream("The user Prefers preferences, migrations, bought 我偏好");
        let mut got = Vec::new();
        while stream.advance() {
            got.push(stream.token().text.clone());
        }
        assert_eq!(
            got,
            ["user", "prefer", "prefer", "migrat", "buy", "我偏", "偏好"]
        );
    }

    #[test]
    fn empty_stream_does_not_panic() {
        let mut t = MemoryTextTokenizer;
        let mut s = t.token_stream("  ,, ");
        assert!(!s.advance());
    }
}
