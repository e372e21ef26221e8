//! The questions' encoder: the BERT of `bert.rs`, for one short text at a
//! time, with its linear layers' products on kernels of its own: in 32-bit
//! floats (`float.rs`, the default), or with the weights in 8 bits
//! (`int8.rs`). Either way the weights are laid out anew for the kernels
//! when the encoder is made.
//!
//! A question is embedded while its caller waits. Through candle a 20-word
//! question took 11 ms on two cores: its general matrix kernels reach
//! about a third of the CPU's peak on a few dozen tokens. The products
//! written for such skinny shapes do the same float arithmetic in under
//! half the time; in 8 bits the weights are a quarter of the bytes, and an
//! integer dot product does two to four times the work of a float one.
//!
//! Subtleties:
//! - One text and no padding, so nothing is masked.
//! - In floats its vectors are the float encoder's to about a millionth;
//!   in 8 bits they are near them, not equal (cosine 0.995 or more, see
//!   `tests/semantic.rs`). Memories stay on candle's encoder, so a
//!   memory's vector never depends on the CPU that made it.
//! - Only the linear layers, nearly all the arithmetic, have kernels of
//!   their own. The embeddings, attention, layer norms and GELU are plain
//!   loops, built twice, for AVX2 with FMA and for any CPU, and one is
//!   chosen at run time, as the scan in `index/vectors.rs` is. GELU's `erf`
//!   and softmax's `exp` are polynomials, which vectorize; the C library's
//!   are one value at a time.

use candle_core::{Device, Result, Tensor};
use candle_nn::{LayerNorm, Linear};

use super::bert::Bert;
use super::dot;
use super::float::FloatMatrix;
use super::int8::{Int8Matrix, Kernel};

/// What the linear layers' products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arithmetic {
    /// 32-bit floats (AVX2 and FMA).
    Floats,
    /// 8-bit weights and activations.
    Int8(Kernel),
}

/// A layer norm's parameters.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

/// A linear layer (or several side by side, sharing their input).
enum Weights {
    Floats(FloatMatrix),
    Int8(Int8Matrix),
}

struct Layer {
    /// Query, key and value side by side: one pass over the input.
    qkv: Weights,
    attention_out: Weights,
    attention_norm: Norm,
    up: Weights,
    down: Weights,
    out_norm: Norm,
}

/// The encoder.
pub(super) struct QuestionEncoder {
    /// The float encoder's tables, shared with it.
    words: Tensor,
    positions: Tensor,
    /// Token type 0's vector: every token's.
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    arithmetic: Arithmetic,
}

fn floats(t: &Tensor) -> Result<Vec<f32>> {
    t.flatten_all()?.to_vec1()
}

fn bias(part: &Linear) -> Result<Vec<f32>> {
    match part.bias() {
        Some(b) => floats(b),
        None => Ok(vec![0.0; part.weight().dim(0)?]),
    }
}

/// The linear layers `parts`, side by side, for `arithmetic`; `input_norm`
/// is the layer norm their inputs come from, if they do.
fn weights(
    parts: &[&Linear],
    input_norm: Option<&Norm>,
    arithmetic: Arithmetic,
) -> Result<Weights> {
    let inputs = parts[0].weight().dim(1)?;
    for part in parts {
        let columns = part.weight().dim(1)?;
        if columns != inputs {
            candle_core::bail!("stacked layers of {columns} and {inputs} inputs");
        }
    }
    let mut biases = Vec::new();
    for part in parts {
        biases.extend(bias(part)?);
    }
    if arithmetic == Arithmetic::Floats {
        // Packed straight from candle's floats: a copy of 42 MB is time a
        // one-shot search pays.
        let guards: Vec<_> = parts
            .iter()
            .map(|p| p.weight().storage_and_layout())
            .collect();
        let mut weights = Vec::with_capacity(parts.len());
        for (storage, layout) in &guards {
            let candle_core::Storage::Cpu(cpu) = &**storage else {
                candle_core::bail!("the weights are not in the CPU's memory");
            };
            let Some((start, end)) = layout.contiguous_offsets() else {
                candle_core::bail!("the weights are not contiguous");
            };
            weights.push(&cpu.as_slice::<f32>()?[start..end]);
        }
        return Ok(Weights::Floats(FloatMatrix::new(&weights, biases, inputs)));
    }
    let mut weight = Vec::new();
    for part in parts {
        weight.extend(floats(part.weight())?);
    }
    let columns = input_norm.map(smoothing);
    Ok(Weights::Int8(Int8Matrix::new(
        &weight,
        &biases,
        biases.len(),
        inputs,
        columns,
    )))
}

impl Weights {
    fn outputs(&self) -> usize {
        match self {
            Weights::Floats(m) => m.outputs(),
            Weights::Int8(m) => m.outputs(),
        }
    }

    /// `x` (rows of inputs) times the weights, plus the bias, into `y`
    /// (rows of [`outputs`](Self::outputs)).
    #[inline(always)]
    fn forward(&self, x: &[f32], arithmetic: Arithmetic, y: &mut [f32]) -> Result<()> {
        match (self, arithmetic) {
            (Weights::Floats(m), Arithmetic::Floats) => m.forward(x, y),
            (Weights::Int8(m), Arithmetic::Int8(kernel)) => m.forward(x, kernel, y),
            _ => candle_core::bail!("weights made for other arithmetic"),
        }
        Ok(())
    }
}

/// Per column of a layer norm's output, a factor that moves part of its
/// range into the weights. BERT's layer norms have a few columns whose
/// weight or bias is tens of times the others'; quantized per token, they
/// would leave the other columns a few codes each. Divided by the square
/// root of their size (and their weights multiplied by it), inputs and
/// weights share the range (SmoothQuant, with α = ½).
fn smoothing(norm: &Norm) -> Vec<f32> {
    norm.weight
        .iter()
        .zip(&norm.bias)
        .map(|(w, b)| (w * w + b * b).powf(SMOOTHING / 2.0).max(1e-3))
        .collect()
}

const SMOOTHING: f32 = 0.5;

fn norm(n: &LayerNorm, eps: f64) -> Result<Norm> {
    let weight = floats(n.weight())?;
    let bias = match n.bias() {
        Some(b) => floats(b)?,
        None => vec![0.0; weight.len()],
    };
    Ok(Norm {
        weight,
        bias,
        eps: eps as f32,
    })
}

impl QuestionEncoder {
    /// The encoder of `bert` for `arithmetic`, its weights copied: packed
    /// for the float kernel, or quantized, which takes about as long as
    /// loading them.
    pub(super) fn new(bert: &Bert, arithmetic: Arithmetic) -> Result<QuestionEncoder> {
        use rayon::prelude::*;
        let first_norm = norm(&bert.norm, bert.eps)?;
        // Layer by layer on the caller's pool: laying out 42 MB of weights
        // is mostly the page faults of the new copy, which two threads take
        // in half the time.
        let layers = (0..bert.layers.len())
            .into_par_iter()
            .map(|i| {
                let l = &bert.layers[i];
                let input_norm = match i {
                    0 => bert.norm.clone(),
                    _ => bert.layers[i - 1].out_norm.clone(),
                };
                let input_norm = norm(&input_norm, bert.eps)?;
                let attention_norm = norm(&l.attention_norm, bert.eps)?;
                Ok(Layer {
                    qkv: weights(&[&l.query, &l.key, &l.value], Some(&input_norm), arithmetic)?,
                    attention_out: weights(&[&l.attention_out], None, arithmetic)?,
                    up: weights(&[&l.up], Some(&attention_norm), arithmetic)?,
                    attention_norm,
                    down: weights(&[&l.down], None, arithmetic)?,
                    out_norm: norm(&l.out_norm, bert.eps)?,
                })
            })
            .collect::<Result<Vec<Layer>>>()?;
        let words = bert.words.embeddings().clone();
        let hidden = words.dim(1)?;
        Ok(QuestionEncoder {
            words,
            positions: bert.positions.embeddings().clone(),
            token_type: floats(&bert.token_types.embeddings().get(0)?)?,
            norm: first_norm,
            layers,
            heads: bert.heads,
            hidden,
            arithmetic,
        })
    }

    /// What the products run on.
    pub(super) fn arithmetic(&self) -> Arithmetic {
        self.arithmetic
    }

    /// Uses the 8-bit `kernel` from now on, if the weights are in 8 bits
    /// and this CPU runs it.
    pub(super) fn set_kernel(&mut self, kernel: Kernel) -> bool {
        let usable = kernel.is_available() && matches!(self.arithmetic, Arithmetic::Int8(_));
        if usable {
            self.arithmetic = Arithmetic::Int8(kernel);
        }
        usable
    }

    /// The last hidden states of the tokens `ids`, one row of
    /// `hidden_size` floats per token.
    pub(super) fn forward(&self, ids: &[u32]) -> Result<Vec<f32>> {
        let h = self.hidden;
        let mut x = floats(
            &self
                .words
                .index_select(&Tensor::new(ids, &Device::Cpu)?, 0)?,
        )?;
        let positions = floats(&self.positions.narrow(0, 0, ids.len())?)?;
        for (row, position) in x.chunks_exact_mut(h).zip(positions.chunks_exact(h)) {
            for ((v, p), t) in row.iter_mut().zip(position).zip(&self.token_type) {
                *v = (*v + p) + t;
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has both features, just checked.
            return unsafe { self.encode_avx2(x) };
        }
        self.encode_portable(x)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn encode_avx2(&self, x: Vec<f32>) -> Result<Vec<f32>> {
        self.encode_portable(x)
    }

    /// The layers, from the embeddings `x` (one row per token).
    #[inline(always)]
    fn encode_portable(&self, mut x: Vec<f32>) -> Result<Vec<f32>> {
        let h = self.hidden;
        let tokens = x.len() / h;
        let arithmetic = self.arithmetic;
        self.norm.apply(&mut x);
        let mut qkv = Vec::new();
        let mut attended = vec![0f32; tokens * h];
        let mut a = vec![0f32; tokens * h];
        let mut up = Vec::new();
        for layer in &self.layers {
            qkv.resize(tokens * layer.qkv.outputs(), 0.0);
            layer.qkv.forward(&x, arithmetic, &mut qkv)?;
            attention_split(&qkv, h, self.heads, &mut attended);
            layer.attention_out.forward(&attended, arithmetic, &mut a)?;
            add(&mut a, &x);
            layer.attention_norm.apply(&mut a);
            up.resize(tokens * layer.up.outputs(), 0.0);
            layer.up.forward(&a, arithmetic, &mut up)?;
            gelu(&mut up);
            layer.down.forward(&up, arithmetic, &mut x)?;
            add(&mut x, &a);
            layer.out_norm.apply(&mut x);
        }
        Ok(x)
    }
}

impl Norm {
    #[inline(always)]
    fn apply(&self, x: &mut [f32]) {
        let n = self.weight.len();
        for row in x.chunks_exact_mut(n) {
            let mean = sum(row) / n as f32;
            for v in row.iter_mut() {
                *v -= mean;
            }
            let variance = dot(row, row) / n as f32;
            let inverse = 1.0 / (variance + self.eps).sqrt();
            for ((v, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *v = *v * inverse * w + b;
            }
        }
    }
}

/// Self-attention of every token over every other, from `qkv` (per token,
/// its query, key and value, `hidden` floats each) into `out`; the tokens'
/// queries in two halves at once on the caller's rayon pool when there are
/// enough of them.
fn attention_split(qkv: &[f32], hidden: usize, heads: usize, out: &mut [f32]) {
    let tokens = out.len() / hidden;
    if tokens < SPLIT_TOKENS || rayon::current_num_threads() < 2 {
        attention(qkv, hidden, heads, 0, out);
        return;
    }
    let middle = tokens / 2;
    let (first, second) = out.split_at_mut(middle * hidden);
    rayon::join(
        || attention(qkv, hidden, heads, 0, first),
        || attention(qkv, hidden, heads, middle, second),
    );
}

/// Tokens from which attention is split over two threads.
const SPLIT_TOKENS: usize = 12;

/// The attention of the tokens from `first` on, as many as `out` has rows.
fn attention(qkv: &[f32], hidden: usize, heads: usize, first: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has both features, just checked.
        return unsafe { attention_avx2(qkv, hidden, heads, first, out) };
    }
    attention_portable(qkv, hidden, heads, first, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn attention_avx2(qkv: &[f32], hidden: usize, heads: usize, first: usize, out: &mut [f32]) {
    attention_portable(qkv, hidden, heads, first, out)
}

#[inline(always)]
fn attention_portable(qkv: &[f32], hidden: usize, heads: usize, first: usize, out: &mut [f32]) {
    let tokens = qkv.len() / (3 * hidden);
    let d = hidden / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let at = |token: usize, part: usize, head: usize| {
        &qkv[(token * 3 + part) * hidden + head * d..][..d]
    };
    let mut weights = vec![0f32; tokens];
    out.fill(0.0);
    for head in 0..heads {
        for (i, row) in out.chunks_exact_mut(hidden).enumerate() {
            let q = at(first + i, 0, head);
            for (j, w) in weights.iter_mut().enumerate() {
                *w = dot(q, at(j, 1, head)) * scale;
            }
            let largest = weights.iter().fold(f32::NEG_INFINITY, |m, &w| m.max(w));
            for w in weights.iter_mut() {
                *w = exp(*w - largest);
            }
            let total = sum(&weights);
            let o = &mut row[head * d..][..d];
            for (j, &w) in weights.iter().enumerate() {
                let w = w / total;
                for (o, v) in o.iter_mut().zip(at(j, 2, head)) {
                    *o += w * v;
                }
            }
        }
    }
}

#[inline(always)]
fn add(x: &mut [f32], y: &[f32]) {
    for (x, y) in x.iter_mut().zip(y) {
        *x += y;
    }
}

#[inline(always)]
fn sum(a: &[f32]) -> f32 {
    const LANES: usize = 16;
    let (lanes, rest) = a.as_chunks::<LANES>();
    let mut sums = [0f32; LANES];
    for x in lanes {
        for i in 0..LANES {
            sums[i] += x[i];
        }
    }
    sums.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// GELU, exactly as BERT's (`x · Φ(x)`, with `erf`), in place.
#[inline(always)]
fn gelu(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `erf`, within 4e-7 of the true value: a rational approximation on
/// [-4, 4] (outside it `erf` is ±1 in 32 bits), as Eigen's.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10f32;
    for c in [
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ] {
        p = p * x2 + c;
    }
    let mut q = -1.456_607_2e-5f32;
    for c in [-2.133_740_6e-4, -1.682_827e-3, -7.373_329e-3, -1.426_474e-2] {
        q = q * x2 + c;
    }
    x * p / q
}

/// `eˣ`, within 1e-6 relatively: `2ⁿ · eᶠ`, with `n` an integer and `eᶠ`
/// a polynomial on [-½ ln 2, ½ ln 2].
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Adding and subtracting 1.5 · 2²³ rounds to an integer.
    const ROUND: f32 = 12_582_912.0;
    // ln 2 in two parts, the first exact in few bits, so that `n · ln 2`
    // loses nothing to rounding (Cody and Waite).
    const LN_2_HIGH: f32 = 0.693_145_75;
    const LN_2_LOW: f32 = 1.428_606_8e-6;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let f = (x - n * LN_2_HIGH) - n * LN_2_LOW;
    let mut p = 1.0 / 720.0;
    for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p * f + c;
    }
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `erf` by its Taylor series, in 64 bits: exact enough below 4.
    fn erf_series(x: f64) -> f64 {
        let mut term = x;
        let mut total = x;
        for n in 1..200 {
            term *= -x * x / n as f64;
            total += term / (2 * n + 1) as f64;
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_within_a_millionth_of_the_true_value() {
        for i in -4000..=4000 {
            let x = i as f64 / 1000.0;
            let error = (f64::from(erf(x as f32)) - erf_series(x)).abs();
            assert!(error < 1e-6, "erf({x}): off by {error}");
        }
        assert!((erf(9.0) - 1.0).abs() < 1e-6 && (erf(-9.0) + 1.0).abs() < 1e-6);
    }

    #[test]
    fn exp_is_within_a_millionth_relatively() {
        for i in -8700..=0 {
            let x = i as f32 / 100.0;
            let exact = f64::from(x).exp();
            let error = ((f64::from(exp(x)) - exact) / exact).abs();
            assert!(error < 1e-6, "exp({x}): off by {error}");
        }
        assert_eq!(exp(-1000.0), exp(-87.0));
    }
}
