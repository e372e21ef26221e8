//! The questions' encoder: the BERT of `bert.rs` with its linear layers'
//! weights in 8 bits (`int8.rs`), for one short text at a time.
//!
//! A question is embedded while its caller waits. In 32-bit floats a
//! 20-word question took 11 ms on two cores: about half reading the 42 MB
//! of weights, the rest multiplying them at the float kernels' peak. In
//! 8 bits the weights are a quarter of the bytes, and an integer dot
//! product does two to four times the work of a float one per instruction.
//!
//! Subtleties:
//! - Only the linear layers, nearly all the arithmetic, are quantized. The
//!   embeddings, attention, layer norms and GELU stay in floats: for a
//!   short text they are cheap.
//! - One text and no padding, so nothing is masked.
//! - Its vectors are near the float encoder's, not equal to them (cosine
//!   0.99 or more, see `tests/semantic.rs`). Memories stay on the float
//!   encoder, so a memory's vector never depends on the CPU that made it.
//! - The float parts are built twice, for AVX2 with FMA and for any CPU,
//!   and one is chosen at run time, as the scan in `index/vectors.rs` is.
//!   GELU's `erf` and softmax's `exp` are polynomials, which vectorize;
//!   the C library's are one value at a time.

use candle_core::{Device, Result, Tensor};
use candle_nn::{LayerNorm, Linear};

use super::bert::Bert;
use super::dot;
use super::int8::{Int8Matrix, Kernel};

/// A layer norm's parameters.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

struct Layer {
    /// Query, key and value as one matrix: one pass over the input.
    qkv: Int8Matrix,
    attention_out: Int8Matrix,
    attention_norm: Norm,
    up: Int8Matrix,
    down: Int8Matrix,
    out_norm: Norm,
}

/// The encoder, with 8-bit linear layers.
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
    kernel: Kernel,
}

fn floats(t: &Tensor) -> Result<Vec<f32>> {
    t.flatten_all()?.to_vec1()
}

/// The linear layers `parts`, their rows one after another, quantized;
/// `input_norm` is the layer norm their inputs come from, if they do.
fn quantize(parts: &[&Linear], input_norm: Option<&Norm>) -> Result<Int8Matrix> {
    let inputs = parts[0].weight().dim(1)?;
    let mut weight = Vec::new();
    let mut bias = Vec::new();
    for part in parts {
        let (rows, columns) = part.weight().dims2()?;
        if columns != inputs {
            candle_core::bail!("stacked layers of {columns} and {inputs} inputs");
        }
        weight.extend(floats(part.weight())?);
        match part.bias() {
            Some(b) => bias.extend(floats(b)?),
            None => bias.extend(std::iter::repeat_n(0.0, rows)),
        }
    }
    let columns = input_norm.map(smoothing);
    Ok(Int8Matrix::new(&weight, &bias, bias.len(), inputs, columns))
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
    /// Quantizes `bert`'s linear layers, for `kernel`.
    pub(super) fn new(bert: &Bert, kernel: Kernel) -> Result<QuestionEncoder> {
        let first_norm = norm(&bert.norm, bert.eps)?;
        let mut layers: Vec<Layer> = Vec::with_capacity(bert.layers.len());
        for l in &bert.layers {
            let input_norm = layers.last().map_or(&first_norm, |l| &l.out_norm);
            let attention_norm = norm(&l.attention_norm, bert.eps)?;
            layers.push(Layer {
                qkv: quantize(&[&l.query, &l.key, &l.value], Some(input_norm))?,
                attention_out: quantize(&[&l.attention_out], None)?,
                up: quantize(&[&l.up], Some(&attention_norm))?,
                attention_norm,
                down: quantize(&[&l.down], None)?,
                out_norm: norm(&l.out_norm, bert.eps)?,
            });
        }
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
            kernel,
        })
    }

    /// The kernel the products run on.
    pub(super) fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Uses `kernel` from now on, if this CPU runs it.
    pub(super) fn set_kernel(&mut self, kernel: Kernel) -> bool {
        let available = kernel.is_available();
        if available {
            self.kernel = kernel;
        }
        available
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
            return Ok(unsafe { self.encode_avx2(x) });
        }
        Ok(self.encode_portable(x))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn encode_avx2(&self, x: Vec<f32>) -> Vec<f32> {
        self.encode_portable(x)
    }

    /// The layers, from the embeddings `x` (one row per token).
    #[inline(always)]
    fn encode_portable(&self, mut x: Vec<f32>) -> Vec<f32> {
        let h = self.hidden;
        let tokens = x.len() / h;
        self.norm.apply(&mut x);
        let mut qkv = Vec::new();
        let mut attended = vec![0f32; tokens * h];
        let mut a = vec![0f32; tokens * h];
        let mut up = Vec::new();
        for layer in &self.layers {
            qkv.resize(tokens * layer.qkv.outputs(), 0.0);
            layer.qkv.forward(&x, self.kernel, &mut qkv);
            attention(&qkv, h, self.heads, &mut attended);
            layer.attention_out.forward(&attended, self.kernel, &mut a);
            add(&mut a, &x);
            layer.attention_norm.apply(&mut a);
            up.resize(tokens * layer.up.outputs(), 0.0);
            layer.up.forward(&a, self.kernel, &mut up);
            gelu(&mut up);
            layer.down.forward(&up, self.kernel, &mut x);
            add(&mut x, &a);
            layer.out_norm.apply(&mut x);
        }
        x
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
/// its query, key and value, `hidden` floats each) into `out`.
#[inline(always)]
fn attention(qkv: &[f32], hidden: usize, heads: usize, out: &mut [f32]) {
    let tokens = qkv.len() / (3 * hidden);
    let d = hidden / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let at = |token: usize, part: usize, head: usize| {
        &qkv[(token * 3 + part) * hidden + head * d..][..d]
    };
    let mut weights = vec![0f32; tokens];
    out.fill(0.0);
    for head in 0..heads {
        for i in 0..tokens {
            let q = at(i, 0, head);
            for (j, w) in weights.iter_mut().enumerate() {
                *w = dot(q, at(j, 1, head)) * scale;
            }
            let largest = weights.iter().fold(f32::NEG_INFINITY, |m, &w| m.max(w));
            for w in weights.iter_mut() {
                *w = exp(*w - largest);
            }
            let total = sum(&weights);
            let o = &mut out[i * hidden + head * d..][..d];
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
