//! A category learned from labeled notes: softmax regression over what a
//! note's letters and words show ([`Grams`]) and, where a model is loaded, its
//! embedding; one row of weights per category.
//!
//! Two heads ship in the binary, both trained on every note of the
//! labeled set (`tests/data/classify/`):
//! - `head.words.bin` reads the letters and words alone: the organizer's head
//!   without a model;
//! - `head.all-MiniLM-L6-v2.bin` reads them and the note's
//!   embedding by all-MiniLM-L6-v2: the head with that model.
//!
//! `MNEMOFS_WRITE_HEADS=1 cargo bench --bench classify` makes both
//! again; the same bench measures them on each outside author's notes
//! with heads trained without them. A head that
//! reads embeddings only means something for the model that embedded its
//! training notes, so it carries that model's vector of one fixed
//! sentence (the first prototype's) and is used only when the loaded
//! model gives the same vector ([`Head::fits`]).
//!
//! The file: `MNHEAD3\n`, the categories in row order joined by commas
//! and a newline, then little-endian u32s: the embedding's dimension
//! (0 for letters alone), the number of runs and the byte length of the
//! runs joined by newlines, those bytes, then little-endian f32s: the
//! fingerprint (dimension) and the runs' idf; then the weights
//! (categories × (dimension + runs)) as little-endian f16s, which nearly
//! halves the file and moved none of the bench's 11,504 filings (it
//! measures heads read back from their bytes); then the biases
//! (categories) as f32s.

use std::sync::LazyLock;

use half::f16;

use super::Category;
use super::classify::Note;
use super::grams::Grams;

/// The head that reads a note's letters alone.
static WORDS: LazyLock<Option<Head>> =
    LazyLock::new(|| Head::from_bytes(include_bytes!("head.words.bin")));

/// The head trained for all-MiniLM-L6-v2's embeddings.
static MINILM: LazyLock<Option<Head>> =
    LazyLock::new(|| Head::from_bytes(include_bytes!("head.all-MiniLM-L6-v2.bin")));

const MAGIC: &[u8] = b"MNHEAD3\n";

/// Under this probability the head's likeliest category gives way to the
/// note's keywords, if they vote for one; it is taken when they do not.
/// A note the head finds most like a fragment stays in the inbox, whatever
/// the keywords say. With thirty-four outside authors, each filed by a
/// head trained without them, this order filed 90.8% of their notes;
/// with twenty-six, 89.7%; with eighteen, 88.7% (85.5% with heads of letters alone); with
/// fourteen, 85.1% (85.7% with a bar of 0.3, which let "We decided to
/// ship on Friday" go to `date`), against 83.9% when the examples and the
/// keywords spoke wherever the head was under 0.3 sure or found a
/// fragment (BENCHMARKS.md, "Classification").
pub const FLOOR: f32 = 0.4;

/// Inverse strength of the weights' penalty: the fit minimizes the notes'
/// cross-entropy plus the squared weights over twice this.
pub const INVERSE_PENALTY: f32 = 16.0;

/// How near the loaded model's fingerprint must be to the head's.
const SAME_MODEL: f32 = 0.99;

/// Gradient steps of a fit; each is one pass over the notes.
const STEPS: usize = 1500;

/// How much of a note is read: its title and this many words...
pub const NOTE_WORDS: usize = 150;
/// ...or this many characters, whichever is shorter.
pub const NOTE_CHARS: usize = 600;

/// The text a note is read from, by its letters and by a model: its
/// title, then the start of its body.
pub fn note_text(note: &Note<'_>) -> String {
    let mut text = String::new();
    let title = note.title.trim();
    if !title.is_empty() {
        text.push_str(title);
        text.push('\n');
    }
    for word in note.body.split_whitespace().take(NOTE_WORDS) {
        if text.chars().count() + word.chars().count() > NOTE_CHARS {
            let room = NOTE_CHARS.saturating_sub(text.chars().count());
            text.extend(word.chars().take(room));
            break;
        }
        text.push_str(word);
        text.push(' ');
    }
    text.trim_end().to_owned()
}

/// How many [`nonsense`] fragments a head learns from beside the
/// labeled notes.
pub const NONSENSE: usize = 60;

/// `count` fragments of random letters (a few made-up words, some with
/// digits), always the same: a head learns them as notes nothing places
/// (`inbox`), so that letters it never saw leave a note where it is
/// instead of leaning on whichever runs they happen to share. Without
/// them, 7 of 25 such fragments ("zqxj odd006q blorp wibble") were filed
/// somewhere; with them none, and the labeled notes are filed as well
/// as before (BENCHMARKS.md, "Classification"). Every third has one of
/// [`NONSENSE_TITLES`] above it, as a note written to be sorted later
/// has: learned untitled only, made-up words under "capture" or
/// "scratch" were filed under `skills`.
pub fn nonsense(count: usize) -> Vec<String> {
    // A fixed linear congruential sequence: the same fragments each time.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % below
    };
    (0..count)
        .map(|_| {
            let words: Vec<String> = (0..1 + next(6))
                .map(|_| {
                    let mut word: String = (0..2 + next(8))
                        .map(|_| char::from(b'a' + next(26) as u8))
                        .collect();
                    if next(10) < 3 {
                        word.push_str(&next(1000).to_string());
                    }
                    word
                })
                .collect();
            words.join(" ")
        })
        .enumerate()
        .map(|(i, fragment)| match i % 3 {
            2 => {
                let title = NONSENSE_TITLES[(i / 3) % NONSENSE_TITLES.len()];
                format!("{title}\n{fragment}")
            }
            _ => fragment,
        })
        .collect()
}

/// The titles some [`nonsense`] fragments carry: what a note says of
/// itself when it says only that it was put down to be sorted later.
pub const NONSENSE_TITLES: [&str; 10] = [
    "scratch",
    "capture",
    "fleeting",
    "misc",
    "draft",
    "untitled",
    "temp",
    "随手记",
    "草稿",
    "临时",
];

/// A labeled note to learn from: its category, its unit vector (empty
/// for a head of letters alone) and its [`note_text`].
pub type Example = (Category, Vec<f32>, String);

/// A learned head: one row of weights and a bias per category.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    categories: Vec<Category>,
    fingerprint: Vec<f32>,
    grams: Grams,
    weights: Vec<f32>,
    bias: Vec<f32>,
}

impl Head {
    /// The shipped head that reads letters alone.
    pub fn words() -> Option<&'static Head> {
        WORDS.as_ref()
    }

    /// The shipped head for all-MiniLM-L6-v2.
    pub fn shipped() -> Option<Head> {
        MINILM.clone()
    }

    /// The embedding's dimension (0: letters alone).
    pub fn dim(&self) -> usize {
        self.fingerprint.len()
    }

    fn width(&self) -> usize {
        self.dim() + self.grams.len()
    }

    /// A head read back from [`Head::to_bytes`]; `None` if the bytes are
    /// not one, or name a category this build does not know.
    pub fn from_bytes(bytes: &[u8]) -> Option<Head> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let line_end = rest.iter().position(|&b| b == b'\n')?;
        let names = std::str::from_utf8(&rest[..line_end]).ok()?;
        let categories = names
            .split(',')
            .map(|n| n.parse().ok())
            .collect::<Option<Vec<Category>>>()?;
        let rest = &rest[line_end + 1..];
        let u32_at = |at: usize| -> Option<usize> {
            Some(u32::from_le_bytes(rest.get(at..at + 4)?.try_into().ok()?) as usize)
        };
        let (dim, count, length) = (u32_at(0)?, u32_at(4)?, u32_at(8)?);
        let joined = std::str::from_utf8(rest.get(12..12 + length)?).ok()?;
        let runs: Vec<String> = if count == 0 {
            Vec::new()
        } else {
            joined.split('\n').map(str::to_owned).collect()
        };
        let k = categories.len();
        let (lead, wide) = (dim + count, k * (dim + count));
        let floats = &rest[12 + length..];
        if floats.len() != 4 * lead + 2 * wide + 4 * k || runs.len() != count {
            return None;
        }
        let f32s = |bytes: &[u8]| -> Vec<f32> {
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let (lead, rest) = floats.split_at(4 * lead);
        let (weights, bias) = rest.split_at(2 * wide);
        let lead = f32s(lead);
        let (fingerprint, idf) = lead.split_at(dim);
        let weights: Vec<f32> = weights
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        let bias = f32s(bias);
        Some(Head {
            categories,
            fingerprint: fingerprint.to_vec(),
            grams: Grams::from_parts(runs, idf.to_vec())?,
            weights,
            bias,
        })
    }

    /// The head as [`Head::from_bytes`] reads it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let names: Vec<&str> = self.categories.iter().map(|c| c.as_str()).collect();
        out.extend_from_slice(names.join(",").as_bytes());
        out.push(b'\n');
        let (runs, idf) = self.grams.parts();
        let joined = runs.join("\n");
        for n in [self.dim(), runs.len(), joined.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(joined.as_bytes());
        for x in self.fingerprint.iter().chain(idf) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for x in &self.weights {
            out.extend_from_slice(&f16::from_f32(*x).to_le_bytes());
        }
        for x in &self.bias {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// Whether the model that gave `fingerprint` (its unit vector of the
    /// first prototype sentence) is the one this head was trained for.
    pub fn fits(&self, fingerprint: &[f32]) -> bool {
        self.dim() > 0
            && fingerprint.len() == self.dim()
            && dot(fingerprint, &self.fingerprint) >= SAME_MODEL
    }

    /// Each category's probability for a note (its [`note_text`], and its
    /// unit vector when the head reads embeddings), likeliest first.
    /// Empty if the head needs a vector of another dimension.
    pub fn probabilities(&self, vector: Option<&[f32]>, text: &str) -> Vec<(Category, f32)> {
        let vector = vector.unwrap_or(&[]);
        if vector.len() != self.dim() {
            return Vec::new();
        }
        let grams = self.grams.features(text);
        let logits = self.logits(vector, &grams);
        let mut out: Vec<(Category, f32)> = self
            .categories
            .iter()
            .copied()
            .zip(softmax(&logits))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    /// The likeliest category and its probability, however sure; `None`
    /// if the head needs a vector of another dimension. `Inbox`: the
    /// note is most like the fragments nothing places.
    pub fn likeliest(&self, vector: Option<&[f32]>, text: &str) -> Option<(Category, f32)> {
        self.probabilities(vector, text).first().copied()
    }

    fn logits(&self, vector: &[f32], grams: &[(u32, f32)]) -> Vec<f32> {
        logits(&self.weights, &self.bias, self.width(), vector, grams)
    }

    /// Fits a head to `examples` (vectors all of `fingerprint`'s
    /// dimension, which may be 0 for letters alone): multinomial logistic
    /// regression with the weights penalized as [`INVERSE_PENALTY`] says,
    /// by Nesterov's accelerated gradient from zero, so the same notes
    /// always give the same head. `None` without examples, or with
    /// vectors of another dimension.
    pub fn train(examples: &[Example], fingerprint: Vec<f32>) -> Option<Head> {
        Head::train_penalized(examples, fingerprint, INVERSE_PENALTY)
    }

    /// [`Head::train`] with another inverse penalty: for choosing one.
    pub fn train_penalized(
        examples: &[Example],
        fingerprint: Vec<f32>,
        inverse_penalty: f32,
    ) -> Option<Head> {
        let dim = fingerprint.len();
        if examples.is_empty() || examples.iter().any(|(_, v, _)| v.len() != dim) {
            return None;
        }
        let texts: Vec<&str> = examples.iter().map(|(_, _, t)| t.as_str()).collect();
        let grams = Grams::learn(&texts);
        let features: Vec<Vec<(u32, f32)>> = texts.iter().map(|t| grams.features(t)).collect();
        let categories = Category::ALL.to_vec();
        let k = categories.len();
        let width = dim + grams.len();
        let n = examples.len() as f32;
        let labels: Vec<usize> = examples
            .iter()
            .map(|(c, _, _)| categories.iter().position(|x| x == c).unwrap_or(0))
            .collect();
        // The mean loss's gradient changes by at most half the largest
        // squared norm of a note's inputs with its bias input per unit of
        // weight: the step is the inverse of that bound.
        let penalty = 1.0 / (inverse_penalty * n);
        let largest = examples
            .iter()
            .zip(&features)
            .map(|((_, v, _), g)| {
                1.0 + v.iter().map(|x| x * x).sum::<f32>()
                    + g.iter().map(|(_, x)| x * x).sum::<f32>()
            })
            .fold(1.0f32, f32::max);
        let step = 1.0 / (0.5 * largest + penalty);
        let size = k * width + k;
        let mut theta = vec![0.0f32; size];
        let mut previous = theta.clone();
        let mut look = theta.clone();
        let mut grad = vec![0.0f32; size];
        for t in 0..STEPS {
            let momentum = t as f32 / (t as f32 + 3.0);
            for ((l, x), p) in look.iter_mut().zip(&theta).zip(&previous) {
                *l = x + momentum * (x - p);
            }
            grad.iter_mut().for_each(|g| *g = 0.0);
            let (weights, bias) = look.split_at(k * width);
            for (((_, vector, _), grams), &label) in examples.iter().zip(&features).zip(&labels) {
                let p = softmax(&logits(weights, bias, width, vector, grams));
                for (j, pj) in p.iter().enumerate() {
                    let err = (pj - if j == label { 1.0 } else { 0.0 }) / n;
                    let row = &mut grad[j * width..(j + 1) * width];
                    for (g, xi) in row.iter_mut().zip(vector) {
                        *g += err * xi;
                    }
                    for &(i, xi) in grams {
                        row[dim + i as usize] += err * xi;
                    }
                    grad[k * width + j] += err;
                }
            }
            for (g, w) in grad[..k * width].iter_mut().zip(&look) {
                *g += penalty * w;
            }
            std::mem::swap(&mut previous, &mut theta);
            for ((x, l), g) in theta.iter_mut().zip(&look).zip(&grad) {
                *x = l - step * g;
            }
        }
        let bias = theta.split_off(k * width);
        Some(Head {
            categories,
            fingerprint,
            grams,
            weights: theta,
            bias,
        })
    }
}

/// Each row's score for a note's `vector` (the first inputs) and its
/// sparse `grams` (the rest).
fn logits(
    weights: &[f32],
    bias: &[f32],
    width: usize,
    vector: &[f32],
    grams: &[(u32, f32)],
) -> Vec<f32> {
    let dim = vector.len();
    weights
        .chunks_exact(width)
        .zip(bias)
        .map(|(row, b)| {
            dot(&row[..dim], vector)
                + grams
                    .iter()
                    .map(|&(i, x)| row[dim + i as usize] * x)
                    .sum::<f32>()
                + b
        })
        .collect()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::MIN, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A unit vector along axis `i` of a space with one axis per
    /// category, tilted towards axis `j` by `tilt`.
    pub(crate) fn axis(i: usize, j: usize, tilt: f32) -> Vec<f32> {
        let mut v = vec![0.0; Category::ALL.len()];
        v[i] = 1.0;
        v[j] += tilt;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    fn trained() -> Head {
        let examples: Vec<Example> = Category::ALL
            .iter()
            .enumerate()
            .flat_map(|(i, &c)| {
                let next = (i + 1) % Category::ALL.len();
                [
                    (c, axis(i, i, 0.0), String::new()),
                    (c, axis(i, next, 0.3), String::new()),
                ]
            })
            .collect();
        Head::train(&examples, axis(0, 0, 0.0)).expect("trained")
    }

    #[test]
    fn a_head_learns_its_notes_and_is_as_sure_as_they_let_it_be() {
        let head = trained();
        for (i, &c) in Category::ALL.iter().enumerate() {
            let (got, p) = head
                .likeliest(Some(&axis(i, i, 0.1)), "")
                .expect("a category");
            assert_eq!(got, c, "{c}");
            assert!(p > 0.5, "{c}: {p}");
        }
        // Like every category at once: none is much likelier than another.
        let flat = vec![1.0 / (Category::ALL.len() as f32).sqrt(); Category::ALL.len()];
        let (_, p) = head.likeliest(Some(&flat), "").expect("a category");
        assert!(p < 0.3, "{p}");
        // Another model's vectors, or none: nothing to say.
        assert!(head.probabilities(Some(&[1.0, 0.0]), "").is_empty());
        assert_eq!(head.likeliest(None, "anything"), None);
    }

    #[test]
    fn a_head_of_letters_learns_the_words_of_its_notes() {
        let examples: Vec<Example> = [
            (Category::Lessons, "lesson learned: always back up first"),
            (Category::Lessons, "learned the hard way, a lesson"),
            (Category::Lessons, "吸取教训：先备份"),
            (Category::Lessons, "这次的教训"),
            (Category::Decisions, "we decided to use postgres"),
            (Category::Decisions, "decided: ship on friday"),
            (Category::Decisions, "决定：周五发布"),
            (Category::Decisions, "最后决定用它"),
        ]
        .into_iter()
        .map(|(c, t)| (c, Vec::new(), t.to_owned()))
        .collect();
        let head = Head::train(&examples, Vec::new()).expect("trained");
        assert_eq!(head.dim(), 0);
        let first = |text: &str| head.probabilities(None, text)[0].0;
        assert_eq!(first("A lesson I learned"), Category::Lessons);
        assert_eq!(first("We decided on tabs"), Category::Decisions);
        assert_eq!(first("新的教训"), Category::Lessons);
        assert_eq!(first("我们决定了"), Category::Decisions);
        // A head of letters alone fits no model and needs no vector.
        assert!(!head.fits(&axis(0, 0, 0.0)));
        assert!(head.probabilities(Some(&[1.0]), "x").is_empty());
    }

    #[test]
    fn a_head_fits_only_the_model_it_was_trained_for() {
        let head = trained();
        assert!(head.fits(&axis(0, 0, 0.0)));
        assert!(!head.fits(&axis(1, 1, 0.0)));
        assert!(!head.fits(&[1.0, 0.0]));
    }

    #[test]
    fn a_head_is_read_back_as_written_and_bad_bytes_are_none() {
        let head = trained();
        let bytes = head.to_bytes();
        let read = Head::from_bytes(&bytes).expect("read back");
        // The weights come back to within f16's precision, and as the same
        // bytes once rounded.
        for (a, b) in read.weights.iter().zip(&head.weights) {
            assert!((a - b).abs() <= b.abs() / 1024.0 + 1e-7, "{a} from {b}");
        }
        assert_eq!(read.to_bytes(), bytes);
        assert_eq!(
            (&read.categories, &read.fingerprint, &read.bias),
            (&head.categories, &head.fingerprint, &head.bias)
        );
        assert_eq!(Head::from_bytes(&bytes[..bytes.len() - 1]), None);
        assert_eq!(
            Head::from_bytes(b"MNHEAD3\nsoul,nothing\n\x01\0\0\0\0\0\0\0\0\0\0\0"),
            None
        );
        assert_eq!(Head::from_bytes(b"not a head"), None);
        assert!(Head::train(&[], vec![1.0]).is_none());
    }

    #[test]
    fn the_shipped_heads_read() {
        let head = Head::shipped().expect("the shipped head reads");
        assert_eq!(head.categories, Category::ALL.to_vec());
        assert_eq!(head.dim(), 384);
        assert!(!head.grams.is_empty());
        let words = Head::words().expect("the head of letters reads");
        assert_eq!(words.dim(), 0);
        assert!(!words.grams.is_empty());
    }

    #[test]
    fn nonsense_is_always_the_same_made_up_words() {
        let made = nonsense(NONSENSE);
        assert_eq!(made, nonsense(NONSENSE));
        assert_eq!(made.len(), NONSENSE);
        assert!(
            made.iter()
                .all(|f| !f.is_empty() && f.split(' ').count() <= 6)
        );
        let titled = made.iter().filter(|f| f.contains('\n')).count();
        assert_eq!(titled, NONSENSE / 3);
        let distinct: std::collections::BTreeSet<&String> = made.iter().collect();
        assert_eq!(distinct.len(), NONSENSE);
    }

    #[test]
    fn the_shipped_heads_leave_made_up_words_alone() {
        let words = Head::words().expect("shipped");
        for j in 0..20 {
            let fragment = format!("zqxj odd{j:03}q blorp wibble");
            let said = words.likeliest(None, &fragment);
            assert!(
                matches!(said, Some((Category::Inbox, _))),
                "{fragment}: {said:?}"
            );
        }
        // Under a title that says only that it is to be sorted later,
        // one the head learned or not.
        for title in ["capture", "scratch", "jot", "notes", "stuff", "待整理"] {
            let fragment = format!("{title}\nzxqv fleeting blorp wibble");
            let said = words.likeliest(None, &fragment);
            assert!(
                matches!(said, Some((Category::Inbox, _))),
                "{fragment:?}: {said:?}"
            );
        }
    }

    #[test]
    fn a_note_is_read_from_its_title_and_first_words() {
        let body = "w ".repeat(400);
        let note = Note::text("Title", &body);
        let text = note_text(&note);
        assert!(text.starts_with("Title\nw w"));
        assert_eq!(text.split_whitespace().count(), 1 + NOTE_WORDS);
        let chinese = "汉".repeat(2000);
        let note = Note::text("", &chinese);
        assert_eq!(note_text(&note).chars().count(), NOTE_CHARS);
    }
}
