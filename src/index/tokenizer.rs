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
//! Subtleties:
//! - Queries go through the same tokenizer, so a one-character CJK query
//!   only finds one-character runs; two characters are the useful minimum.
//! - Tokens longer than [`MAX_WORD_BYTES`] (base64 blobs, hashes pasted
//!   into notes) are dropped: they bloat the term dictionary and nobody
//!   types them as a query.

use tantivy::tokenizer::{LowerCaser, RawTokenizer, TextAnalyzer, Token, TokenStream, Tokenizer};

/// Name under which [`MemoryTextTokenizer`] is registered.
pub(crate) const TEXT_TOKENIZER: &str = "mnemofs_text";
/// Name of the whole-value, lowercased tokenizer used by filter fields.
pub(crate) const KEYWORD_TOKENIZER: &str = "mnemofs_keyword";

/// Longest word kept, in bytes.
const MAX_WORD_BYTES: usize = 80;

/// Registers both tokenizers on an index.
pub(crate) fn register(index: &tantivy::Index) {
    let manager = index.tokenizers();
    manager.register(TEXT_TOKENIZER, TextAnalyzer::from(MemoryTextTokenizer));
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

/// The tokens of one text, computed eagerly.
pub(crate) struct MemoryTokenStream {
    tokens: Vec<Token>,
    /// Index of the current token plus one (0 = before the first).
    next: usize,
    /// Returned by `token()` before the first `advance()`.
    empty: Token,
}

impl Tokenizer for MemoryTextTokenizer {
    type TokenStream<'a> = MemoryTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MemoryTokenStream {
        MemoryTokenStream {
            tokens: tokenize(text),
            next: 0,
            empty: Token::default(),
        }
    }
}

impl TokenStream for MemoryTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        match self.next.checked_sub(1) {
            Some(i) => self.tokens.get(i).unwrap_or(&self.empty),
            None => &self.empty,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.next.checked_sub(1) {
            Some(i) if i < self.tokens.len() => &mut self.tokens[i],
            _ => &mut self.empty,
        }
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
    let mut position = 0;
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        let kind = class(c);
        // Collect the run of characters of the same class.
        let mut run: Vec<(usize, char)> = Vec::new();
        while let Some(&(i, c)) = chars.peek() {
            if class(c) != kind {
                break;
            }
            run.push((i, c));
            chars.next();
        }
        let end = chars.peek().map_or(text.len(), |&(i, _)| i);
        match kind {
            Class::Other => {}
            Class::Word => {
                if end - start <= MAX_WORD_BYTES {
                    tokens.push(token(&text[start..end], start, end, position, true));
                    position += 1;
                }
            }
            Class::Cjk if run.len() == 1 => {
                tokens.push(token(&text[start..end], start, end, position, false));
                position += 1;
            }
            Class::Cjk => {
                for pair in run.windows(2) {
                    let from = pair[0].0;
                    let to = pair[1].0 + pair[1].1.len_utf8();
                    tokens.push(token(&text[from..to], from, to, position, false));
                    position += 1;
                }
            }
        }
    }
    tokens
}

fn token(text: &str, from: usize, to: usize, position: usize, lowercase: bool) -> Token {
    Token {
        offset_from: from,
        offset_to: to,
        position,
        text: if lowercase {
            text.to_lowercase()
        } else {
            text.to_owned()
        },
        position_length: 1,
    }
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
    fn empty_stream_does_not_panic() {
        let mut t = MemoryTextTokenizer;
        let mut s = t.token_stream("  ,, ");
        assert!(!s.advance());
    }
}
