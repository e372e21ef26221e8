//! A category learned from labeled notes: softmax regression over a
//! note's embedding, one row of weights per category.
//!
//! The head shipped in the binary (`head.all-MiniLM-L6-v2.bin`) was
//! trained on every note of the labeled set (`tests/data/classify/`),
//! embedded by all-MiniLM-L6-v2; the ignored test `train_the_head` in
//! `tests/classification.rs` makes it again, and `cargo bench --bench
//! classify` measures it on each outside author's notes with a head
//! trained without them. A head
//! only means something for the model that embedded its training notes,
//! so it carries that model's vector of one fixed sentence (the first
//! prototype's) and is used only when the loaded model gives the same
//! vector ([`Head::fits`]); any other model falls back to the prototypes.
//!
//! The file: `MNHEAD1\n`, the categories in row order joined by commas
//! and a newline, the dimension as a little-endian u32, then
//! little-endian f32s: the fingerprint (dimension), the weights
//! (categories × dimension) and the biases (categories).

use crate::embed::cosine;
use crate::memory::Category;

/// The head trained for the default model.
const SHIPPED: &[u8] = include_bytes!("head.all-MiniLM-L6-v2.bin");

const MAGIC: &[u8] = b"MNHEAD1\n";

/// The head speaks when its most likely category has at least this
/// probability. Chosen, with [`INVERSE_PENALTY`], by leaving each outside
/// author's notes out of training in turn and filing them
/// (BENCHMARKS.md, "Classification").
pub const FLOOR: f32 = 0.3;

/// Inverse strength of the weights' penalty: the fit minimizes the notes'
/// cross-entropy plus the squared weights over twice this.
pub const INVERSE_PENALTY: f32 = 4.0;

/// How near the loaded model's fingerprint must be to the head's.
const SAME_MODEL: f32 = 0.99;

/// Gradient steps of a fit; each is one pass over the notes.
const STEPS: usize = 1500;

/// A learned head: one row of weights and a bias per category.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    categories: Vec<Category>,
    dim: usize,
    fingerprint: Vec<f32>,
    weights: Vec<f32>,
    bias: Vec<f32>,
}

impl Head {
    /// The head shipped for all-MiniLM-L6-v2.
    pub fn shipped() -> Option<Head> {
        Head::from_bytes(SHIPPED)
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
        let dim = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let floats: Vec<f32> = rest[4..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let k = categories.len();
        if dim == 0 || rest[4..].len() % 4 != 0 || floats.len() != dim + k * dim + k {
            return None;
        }
        let (fingerprint, rest) = floats.split_at(dim);
        let (weights, bias) = rest.split_at(k * dim);
        Some(Head {
            categories,
            dim,
            fingerprint: fingerprint.to_vec(),
            weights: weights.to_vec(),
            bias: bias.to_vec(),
        })
    }

    /// The head as [`Head::from_bytes`] reads it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let names: Vec<&str> = self.categories.iter().map(|c| c.as_str()).collect();
        out.extend_from_slice(names.join(",").as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        for x in self
            .fingerprint
            .iter()
            .chain(&self.weights)
            .chain(&self.bias)
        {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// Whether the model that gave `fingerprint` (its unit vector of the
    /// first prototype sentence) is the one this head was trained for.
    pub fn fits(&self, fingerprint: &[f32]) -> bool {
        fingerprint.len() == self.dim && cosine(fingerprint, &self.fingerprint) >= SAME_MODEL
    }

    /// Each category's probability for a note's unit vector, likeliest
    /// first. Empty if the vector has another dimension.
    pub fn probabilities(&self, note: &[f32]) -> Vec<(Category, f32)> {
        if note.len() != self.dim {
            return Vec::new();
        }
        let logits: Vec<f32> = self.logits(note);
        let mut out: Vec<(Category, f32)> = self
            .categories
            .iter()
            .copied()
            .zip(softmax(&logits))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    /// The likeliest category and its probability, if that reaches
    /// [`FLOOR`]. `Inbox`: the note is most like the fragments nothing
    /// places.
    pub fn decide(&self, note: &[f32]) -> Option<(Category, f32)> {
        let (category, p) = *self.probabilities(note).first()?;
        (p >= FLOOR).then_some((category, p))
    }

    fn logits(&self, note: &[f32]) -> Vec<f32> {
        self.weights
            .chunks_exact(self.dim)
            .zip(&self.bias)
            .map(|(row, b)| row.iter().zip(note).map(|(w, x)| w * x).sum::<f32>() + b)
            .collect()
    }

    /// Fits a head to `notes` (a category and a unit vector each, all of
    /// one dimension), for the model whose fingerprint is `fingerprint`:
    /// multinomial logistic regression with the weights penalized as
    /// [`INVERSE_PENALTY`] says, by Nesterov's accelerated gradient from
    /// zero, so the same notes always give the same head. `None` without
    /// notes, or with vectors of different dimensions.
    pub fn train(notes: &[(Category, Vec<f32>)], fingerprint: Vec<f32>) -> Option<Head> {
        Head::train_penalized(notes, fingerprint, INVERSE_PENALTY)
    }

    /// [`Head::train`] with another inverse penalty: for choosing one.
    pub fn train_penalized(
        notes: &[(Category, Vec<f32>)],
        fingerprint: Vec<f32>,
        inverse_penalty: f32,
    ) -> Option<Head> {
        let dim = fingerprint.len();
        if notes.is_empty() || notes.iter().any(|(_, v)| v.len() != dim) {
            return None;
        }
        let categories = Category::ALL.to_vec();
        let k = categories.len();
        let n = notes.len() as f32;
        let labels: Vec<usize> = notes
            .iter()
            .map(|(c, _)| categories.iter().position(|x| x == c).unwrap_or(0))
            .collect();
        // The mean loss's gradient changes by at most half the largest
        // squared norm of a note with its bias input (2 for unit vectors)
        // per unit of weight: the step is the inverse of that bound.
        let penalty = 1.0 / (inverse_penalty * n);
        let step = 1.0 / (1.0 + penalty);
        let size = k * dim + k;
        let mut theta = vec![0.0f32; size];
        let mut previous = theta.clone();
        let mut grad = vec![0.0f32; size];
        for t in 0..STEPS {
            let momentum = t as f32 / (t as f32 + 3.0);
            let look: Vec<f32> = theta
                .iter()
                .zip(&previous)
                .map(|(x, p)| x + momentum * (x - p))
                .collect();
            let head = Head {
                categories: categories.clone(),
                dim,
                fingerprint: Vec::new(),
                weights: look[..k * dim].to_vec(),
                bias: look[k * dim..].to_vec(),
            };
            grad.iter_mut().for_each(|g| *g = 0.0);
            for ((_, x), &label) in notes.iter().zip(&labels) {
                let p = softmax(&head.logits(x));
                for (j, pj) in p.iter().enumerate() {
                    let err = (pj - if j == label { 1.0 } else { 0.0 }) / n;
                    for (g, xi) in grad[j * dim..(j + 1) * dim].iter_mut().zip(x) {
                        *g += err * xi;
                    }
                    grad[k * dim + j] += err;
                }
            }
            for (g, w) in grad[..k * dim].iter_mut().zip(&look) {
                *g += penalty * w;
            }
            previous = std::mem::replace(
                &mut theta,
                look.iter().zip(&grad).map(|(x, g)| x - step * g).collect(),
            );
        }
        let bias = theta.split_off(k * dim);
        Some(Head {
            categories,
            dim,
            fingerprint,
            weights: theta,
            bias,
        })
    }
}

fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::MIN, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.iter().map(|e| e / sum).collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::axis;
    use super::*;

    fn trained() -> Head {
        let notes: Vec<(Category, Vec<f32>)> = Category::ALL
            .iter()
            .enumerate()
            .flat_map(|(i, &c)| {
                let next = (i + 1) % Category::ALL.len();
                [(c, axis(i, i, 0.0)), (c, axis(i, next, 0.3))]
            })
            .collect();
        Head::train(&notes, axis(0, 0, 0.0)).expect("trained")
    }

    #[test]
    fn a_head_learns_its_notes_and_speaks_only_when_sure() {
        let head = trained();
        for (i, &c) in Category::ALL.iter().enumerate() {
            assert_eq!(head.decide(&axis(i, i, 0.1)).map(|d| d.0), Some(c), "{c}");
        }
        // Like every category at once: no category is likely enough.
        let flat = vec![1.0 / (Category::ALL.len() as f32).sqrt(); Category::ALL.len()];
        assert_eq!(head.decide(&flat), None);
        // Another model's vectors: nothing to say.
        assert!(head.probabilities(&[1.0, 0.0]).is_empty());
        assert_eq!(head.decide(&[1.0, 0.0]), None);
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
        assert_eq!(Head::from_bytes(&bytes), Some(head));
        assert_eq!(Head::from_bytes(&bytes[..bytes.len() - 1]), None);
        assert_eq!(Head::from_bytes(b"MNHEAD1\nsoul,nothing\n\x01\0\0\0"), None);
        assert_eq!(Head::from_bytes(b"not a head"), None);
        assert!(Head::train(&[], vec![1.0]).is_none());
    }

    #[test]
    fn the_shipped_head_reads() {
        let head = Head::shipped().expect("the shipped head reads");
        assert_eq!(head.categories, Category::ALL.to_vec());
        assert_eq!(head.dim, 384);
    }
}
