//! Matrix products with 8-bit weights, for the questions' encoder, and the
//! instructions that run them, chosen when the program starts rather than
//! when it is built: a binary built for any x86-64 still uses the integer
//! dot products of the CPU it runs on.
//!
//! - **Weights** are quantized once, when the model loads: each output
//!   row as signed bytes with one scale, its largest magnitude mapped to
//!   ±[`WEIGHT_MAX`].
//! - **Activations** are quantized per token as they are made: unsigned
//!   bytes from the row's minimum to its maximum, so a row that is mostly
//!   positive (after GELU) loses no half of its range. A product is then
//!   `s_w · (s_x · Σ q_x q_w + min_x · Σ q_w) + bias`, with `Σ q_w` kept
//!   per row.
//! - **Layout**: eight output rows interleaved by four columns, so that one
//!   256-bit register holds four columns of eight rows. A token's four
//!   activations, broadcast against it, add into the eight rows' sums at
//!   once, and no sum is ever added across a register.
//! - **No saturation, so one answer**: AVX2's `vpmaddubsw` adds two
//!   products into 16 bits, saturating. The ranges keep that sum below
//!   2¹⁵ (2 · [`ACTIVATION_MAX`] · [`WEIGHT_MAX`] < 32,768), so it never
//!   saturates and every kernel computes the same integers: the portable
//!   one is the reference the others are tested against.

use std::ops::Range;

/// The largest activation code: a row's maximum.
pub(super) const ACTIVATION_MAX: u8 = 255;

/// The largest weight code in magnitude: a row's largest weight. Seven
/// bits, so that [`ACTIVATION_MAX`] can have eight (see the module's
/// comment); on LoCoMo questions this is closer to the floats than 127
/// with seven-bit activations.
pub(super) const WEIGHT_MAX: i8 = 64;

/// Multiply-adds from which a product is split over two threads: below
/// this, waking the second thread costs more than it saves.
const SPLIT_WORK: usize = 1 << 20;

/// Rows in a group: one register of 32-bit sums.
const GROUP: usize = 8;

/// Columns in a quad: four bytes, one 32-bit lane.
const QUAD: usize = 4;

/// Tokens a kernel call takes at once, and groups: eight sums in
/// registers, with room for the weights and the broadcast.
const TOKENS_AT_ONCE: usize = 4;
const GROUPS_AT_ONCE: usize = 2;

/// The instructions the integer dot products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Plain Rust, for any CPU.
    Portable,
    /// x86-64 with AVX2: `vpmaddubsw` into 16 bits, `vpmaddwd` into 32.
    Avx2,
    /// x86-64 with AVX-VNNI (or AVX-512 VNNI): `vpdpbusd`, both in one.
    Vnni,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub fn best() -> Kernel {
        [Kernel::Vnni, Kernel::Avx2]
            .into_iter()
            .find(|k| k.is_available())
            .unwrap_or(Kernel::Portable)
    }

    /// Whether this CPU runs the kernel.
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Vnni => {
                std::is_x86_feature_detected!("avx2")
                    && (std::is_x86_feature_detected!("avxvnni")
                        || (std::is_x86_feature_detected!("avx512vnni")
                            && std::is_x86_feature_detected!("avx512vl")))
            }
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 | Kernel::Vnni => false,
        }
    }
}

/// A weight matrix, quantized and laid out for the kernels.
pub(super) struct Int8Matrix {
    /// Output rows.
    outputs: usize,
    /// Input columns.
    inputs: usize,
    /// Groups of [`GROUP`] rows (the last padded with zero rows).
    groups: usize,
    /// Quads of [`QUAD`] columns (the last padded with zero columns).
    quads: usize,
    /// Group after group: quad after quad, each [`GROUP`] rows of
    /// [`QUAD`] columns.
    packed: Vec<i8>,
    /// Per row (padded): the factor that turns a code into a weight.
    scales: Vec<f32>,
    /// Per row (padded): the sum of its codes.
    sums: Vec<i32>,
    /// Per row (padded).
    bias: Vec<f32>,
    /// Per column, if any: what its inputs are divided by before they are
    /// quantized (and its weights multiplied by).
    column_scales: Option<Vec<f32>>,
}

impl Int8Matrix {
    /// Quantizes `weight`, `outputs` rows of `inputs` floats (the layout of
    /// a linear layer's weight), with one bias per row; `column_scales`, if
    /// any, move each column's range between inputs and weights.
    pub(super) fn new(
        weight: &[f32],
        bias: &[f32],
        outputs: usize,
        inputs: usize,
        column_scales: Option<Vec<f32>>,
    ) -> Int8Matrix {
        let scaled;
        let weight = match &column_scales {
            Some(c) => {
                scaled = weight
                    .chunks_exact(inputs)
                    .flat_map(|row| row.iter().zip(c).map(|(w, c)| w * c))
                    .collect::<Vec<f32>>();
                &scaled[..]
            }
            None => weight,
        };
        let groups = outputs.div_ceil(GROUP);
        let quads = inputs.div_ceil(QUAD);
        let padded = groups * GROUP;
        let mut codes = vec![0i8; padded * quads * QUAD];
        let mut scales = vec![0f32; padded];
        let mut sums = vec![0i32; padded];
        let mut biases = vec![0f32; padded];
        for (n, row) in weight.chunks_exact(inputs).take(outputs).enumerate() {
            let largest = row.iter().fold(0f32, |m, w| m.max(w.abs()));
            let scale = if largest > 0.0 {
                largest / f32::from(WEIGHT_MAX)
            } else {
                1.0
            };
            let max = f32::from(WEIGHT_MAX);
            let out = &mut codes[n * quads * QUAD..][..inputs];
            for (code, w) in out.iter_mut().zip(row) {
                *code = (w / scale).round().clamp(-max, max) as i8;
            }
            sums[n] = out.iter().map(|&c| i32::from(c)).sum();
            scales[n] = scale;
            biases[n] = bias.get(n).copied().unwrap_or(0.0);
        }
        let mut packed = vec![0i8; codes.len()];
        for g in 0..groups {
            for q in 0..quads {
                for r in 0..GROUP {
                    let from = &codes[(g * GROUP + r) * quads * QUAD + q * QUAD..][..QUAD];
                    packed[((g * quads + q) * GROUP + r) * QUAD..][..QUAD].copy_from_slice(from);
                }
            }
        }
        Int8Matrix {
            outputs,
            inputs,
            groups,
            quads,
            packed,
            scales,
            sums,
            bias: biases,
            column_scales: column_scales.map(|c| c.iter().map(|c| 1.0 / c).collect()),
        }
    }

    /// Output rows.
    pub(super) fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x` (rows of its inputs) times this matrix transposed, plus the
    /// bias, into `y` (rows of [`outputs`](Self::outputs) floats). A large
    /// product is split by output rows over two threads of the caller's
    /// rayon pool.
    #[inline(always)]
    pub(super) fn forward(&self, x: &[f32], kernel: Kernel, y: &mut [f32]) {
        let x = &Int8Rows::new(x, self.inputs, self.column_scales.as_deref());
        let mut rows: Vec<&mut [f32]> = y.chunks_exact_mut(self.outputs).collect();
        let work = x.rows() * self.outputs * self.inputs;
        if work < SPLIT_WORK || self.groups < 2 || rayon::current_num_threads() < 2 {
            self.product(x, kernel, 0..self.groups, &mut rows);
            return;
        }
        let middle = self.groups / 2;
        let (mut left, mut right): (Vec<&mut [f32]>, Vec<&mut [f32]>) = rows
            .into_iter()
            .map(|row| row.split_at_mut(middle * GROUP))
            .unzip();
        rayon::join(
            || self.product(x, kernel, 0..middle, &mut left),
            || self.product(x, kernel, middle..self.groups, &mut right),
        );
    }

    /// [`forward`](Self::forward) for the rows of `groups`, written to
    /// `out` (per token, the outputs from the first group's).
    fn product(&self, x: &Int8Rows, kernel: Kernel, groups: Range<usize>, out: &mut [&mut [f32]]) {
        let first = groups.start * GROUP;
        let panel_len = self.quads * GROUP * QUAD;
        let mut g = groups.start;
        while g < groups.end {
            let group_count = (groups.end - g).min(GROUPS_AT_ONCE);
            let panel = &self.packed[g * panel_len..(g + group_count) * panel_len];
            let mut t = 0;
            while t < x.rows() {
                let token_count = (x.rows() - t).min(TOKENS_AT_ONCE);
                let mut dots = [[0i32; GROUP * GROUPS_AT_ONCE]; TOKENS_AT_ONCE];
                let mut tokens: [&[u8]; TOKENS_AT_ONCE] = [&[]; TOKENS_AT_ONCE];
                for (i, token) in tokens.iter_mut().take(token_count).enumerate() {
                    *token = x.row(t + i);
                }
                dots_in(
                    kernel,
                    token_count,
                    group_count,
                    &tokens,
                    panel,
                    self.quads,
                    &mut dots,
                );
                for (i, sums) in dots.iter().take(token_count).enumerate() {
                    let (scale, min) = (x.scales[t + i], x.mins[t + i]);
                    let row = &mut out[t + i];
                    for (r, &dot) in sums.iter().take(group_count * GROUP).enumerate() {
                        let n = g * GROUP + r;
                        if n >= self.outputs {
                            break;
                        }
                        row[n - first] = self.scales[n]
                            * (scale * dot as f32 + min * self.sums[n] as f32)
                            + self.bias[n];
                    }
                }
                t += token_count;
            }
            g += group_count;
        }
    }
}

/// Rows of activations, quantized (see the module's comment).
struct Int8Rows {
    /// Bytes per row: the columns, padded to a whole quad with zeros.
    width: usize,
    values: Vec<u8>,
    /// Per row: the factor that turns a code back into a float.
    scales: Vec<f32>,
    /// Per row: its smallest value, which code 0 stands for.
    mins: Vec<f32>,
}

impl Int8Rows {
    /// Quantizes `x`, rows of `columns` floats, each multiplied by its
    /// column's factor if there are any.
    #[inline(always)]
    fn new(x: &[f32], columns: usize, factors: Option<&[f32]>) -> Int8Rows {
        let width = columns.div_ceil(QUAD) * QUAD;
        let rows = x.len() / columns;
        let mut values = vec![0u8; rows * width];
        let mut scales = Vec::with_capacity(rows);
        let mut mins = Vec::with_capacity(rows);
        let max_code = f32::from(ACTIVATION_MAX);
        let mut scaled = Vec::new();
        for (row, out) in x.chunks_exact(columns).zip(values.chunks_exact_mut(width)) {
            let row = match factors {
                Some(f) => {
                    scaled.clear();
                    scaled.extend(row.iter().zip(f).map(|(x, f)| x * f));
                    &scaled[..]
                }
                None => row,
            };
            let (min, max) = row
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let range = max - min;
            let scale = if range > 0.0 { range / max_code } else { 1.0 };
            let inverse = 1.0 / scale;
            for (code, &v) in out.iter_mut().zip(row) {
                // In [0, max_code] but for rounding; the cast truncates and
                // saturates, so +0.5 rounds to nearest.
                *code = ((v - min) * inverse + 0.5).min(max_code) as u8;
            }
            scales.push(scale);
            mins.push(min);
        }
        Int8Rows {
            width,
            values,
            scales,
            mins,
        }
    }

    fn rows(&self) -> usize {
        self.scales.len()
    }

    fn row(&self, i: usize) -> &[u8] {
        &self.values[i * self.width..(i + 1) * self.width]
    }
}

/// Sums per token and row: `out[t][8·g + r]` is token `t`'s dot product
/// with row `r` of group `g` of `panel` (`group_count` groups of `quads`
/// quads), for the first `token_count` of `tokens`.
fn dots_in(
    kernel: Kernel,
    token_count: usize,
    group_count: usize,
    tokens: &[&[u8]; TOKENS_AT_ONCE],
    panel: &[i8],
    quads: usize,
    out: &mut Dots,
) {
    // The kernels read with raw pointers: these bounds are what makes that
    // sound.
    assert!(
        (1..=TOKENS_AT_ONCE).contains(&token_count)
            && (1..=GROUPS_AT_ONCE).contains(&group_count)
            && panel.len() >= group_count * quads * GROUP * QUAD
            && tokens[..token_count]
                .iter()
                .all(|t| t.len() >= quads * QUAD)
    );
    macro_rules! shaped {
        ($f:ident) => {
            match (group_count, token_count) {
                (1, 1) => $f::<1, 1>(tokens, panel, quads, out),
                (1, 2) => $f::<2, 1>(tokens, panel, quads, out),
                (1, 3) => $f::<3, 1>(tokens, panel, quads, out),
                (1, _) => $f::<4, 1>(tokens, panel, quads, out),
                (_, 1) => $f::<1, 2>(tokens, panel, quads, out),
                (_, 2) => $f::<2, 2>(tokens, panel, quads, out),
                (_, 3) => $f::<3, 2>(tokens, panel, quads, out),
                (_, _) => $f::<4, 2>(tokens, panel, quads, out),
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    match kernel {
        // SAFETY: the CPU has the kernel's features (a kernel is only
        // chosen when available), and the bounds are checked above.
        Kernel::Vnni if kernel.is_available() => return unsafe { shaped!(dots_vnni) },
        Kernel::Avx2 if kernel.is_available() => return unsafe { shaped!(dots_avx2) },
        _ => {}
    }
    let _ = kernel;
    shaped!(dots_portable)
}

type Dots = [[i32; GROUP * GROUPS_AT_ONCE]; TOKENS_AT_ONCE];

/// The reference kernel.
fn dots_portable<const T: usize, const G: usize>(
    tokens: &[&[u8]; TOKENS_AT_ONCE],
    panel: &[i8],
    quads: usize,
    out: &mut Dots,
) {
    for t in 0..T {
        for g in 0..G {
            let mut sums = [0i32; GROUP];
            let weights = &panel[g * quads * GROUP * QUAD..][..quads * GROUP * QUAD];
            for (a, w) in tokens[t]
                .chunks_exact(QUAD)
                .zip(weights.chunks_exact(GROUP * QUAD))
            {
                for (sum, w) in sums.iter_mut().zip(w.chunks_exact(QUAD)) {
                    for (&a, &w) in a.iter().zip(w) {
                        *sum += i32::from(a) * i32::from(w);
                    }
                }
            }
            out[t][g * GROUP..][..GROUP].copy_from_slice(&sums);
        }
    }
}

/// The body of the x86 kernels: `$step` adds the products of four bytes of
/// `$a` (activations) and `$w` (weights) per 32-bit lane into `$acc`.
#[cfg(target_arch = "x86_64")]
macro_rules! x86_dots {
    ($tokens:ident, $panel:ident, $quads:ident, $out:ident,
     |$acc:ident, $a:ident, $w:ident| $step:expr) => {{
        let mut acc = [[_mm256_setzero_si256(); G]; T];
        let stride = $quads * GROUP * QUAD;
        for q in 0..$quads {
            let mut w = [_mm256_setzero_si256(); G];
            for (g, w) in w.iter_mut().enumerate() {
                // SAFETY: inside the panel (checked by the caller).
                *w = unsafe {
                    _mm256_loadu_si256($panel.as_ptr().add(g * stride + q * GROUP * QUAD).cast())
                };
            }
            for t in 0..T {
                // SAFETY: inside the token's row (checked by the caller).
                let four = unsafe {
                    $tokens[t]
                        .as_ptr()
                        .add(q * QUAD)
                        .cast::<i32>()
                        .read_unaligned()
                };
                let a = _mm256_set1_epi32(four);
                for g in 0..G {
                    let ($acc, $a, $w) = (acc[t][g], a, w[g]);
                    acc[t][g] = $step;
                }
            }
        }
        for t in 0..T {
            for g in 0..G {
                // SAFETY: 8 lanes into 8 of the 16 sums of a token.
                unsafe { _mm256_storeu_si256($out[t][g * GROUP..].as_mut_ptr().cast(), acc[t][g]) };
            }
        }
    }};
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_avx2<const T: usize, const G: usize>(
    tokens: &[&[u8]; TOKENS_AT_ONCE],
    panel: &[i8],
    quads: usize,
    out: &mut Dots,
) {
    use std::arch::x86_64::*;
    let ones = _mm256_set1_epi16(1);
    x86_dots!(tokens, panel, quads, out, |acc, a, w| {
        _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones))
    });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avxvnni")]
fn dots_avx_vnni<const T: usize, const G: usize>(
    tokens: &[&[u8]; TOKENS_AT_ONCE],
    panel: &[i8],
    quads: usize,
    out: &mut Dots,
) {
    use std::arch::x86_64::*;
    x86_dots!(tokens, panel, quads, out, |acc, a, w| {
        _mm256_dpbusd_avx_epi32(acc, a, w)
    });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,avx512vnni,avx512vl")]
fn dots_avx512_vnni<const T: usize, const G: usize>(
    tokens: &[&[u8]; TOKENS_AT_ONCE],
    panel: &[i8],
    quads: usize,
    out: &mut Dots,
) {
    use std::arch::x86_64::*;
    x86_dots!(tokens, panel, quads, out, |acc, a, w| {
        _mm256_dpbusd_epi32(acc, a, w)
    });
}

/// `vpdpbusd` on 256 bits: AVX-VNNI where the CPU has it (Alder Lake,
/// Sapphire Rapids, Zen 5), else the AVX-512 form (Ice Lake, Zen 4).
///
/// # Safety
/// The CPU has AVX2 and one of the two.
#[cfg(target_arch = "x86_64")]
unsafe fn dots_vnni<const T: usize, const G: usize>(
    tokens: &[&[u8]; TOKENS_AT_ONCE],
    panel: &[i8],
    quads: usize,
    out: &mut Dots,
) {
    // SAFETY: the caller checked the features; the detection is cached.
    unsafe {
        if std::is_x86_feature_detected!("avxvnni") {
            dots_avx_vnni::<T, G>(tokens, panel, quads, out)
        } else {
            dots_avx512_vnni::<T, G>(tokens, panel, quads, out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::noise;

    fn reference(x: &[f32], w: &[f32], b: &[f32], n: usize, k: usize) -> Vec<f32> {
        x.chunks_exact(k)
            .flat_map(|row| {
                (0..n).map(move |j| {
                    row.iter()
                        .zip(&w[j * k..(j + 1) * k])
                        .map(|(a, b)| a * b)
                        .sum::<f32>()
                        + b[j]
                })
            })
            .collect()
    }

    #[test]
    fn every_kernel_computes_the_same_integers_and_they_are_near_the_floats() {
        // Shapes that leave partial groups, quads and token blocks.
        for (m, n, k) in [(1, 8, 4), (7, 21, 30), (27, 40, 384), (5, 1536, 64)] {
            let x: Vec<f32> = noise(1, m * k).iter().map(|v| v * 3.0 + 0.5).collect();
            let w = noise(2, n * k);
            let b = noise(3, n);
            let columns = (m % 2 == 1).then(|| noise(7, k).iter().map(|c| c + 1.5).collect());
            let matrix = Int8Matrix::new(&w, &b, n, k, columns);
            let mut expected = vec![0f32; m * n];
            matrix.forward(&x, Kernel::Portable, &mut expected);
            for kernel in [Kernel::Avx2, Kernel::Vnni] {
                if kernel.is_available() {
                    let mut y = vec![0f32; m * n];
                    matrix.forward(&x, kernel, &mut y);
                    assert_eq!(y, expected, "{kernel:?} at {m}×{n}×{k}");
                }
            }
            // Off by at most 3% of the products' size (root mean square).
            let exact = reference(&x, &w, &b, n, k);
            let error: f32 = exact
                .iter()
                .zip(&expected)
                .map(|(a, b)| (a - b).powi(2))
                .sum();
            let size: f32 = exact.iter().map(|v| v * v).sum();
            assert!(error < 1e-3 * size, "{error} of {size} at {m}×{n}×{k}");
        }
    }

    #[test]
    fn the_largest_codes_do_not_saturate_the_sixteen_bit_pairs() {
        // Every activation at its largest code against weights at ±max:
        // vpmaddubsw would clip a pair past 32,767.
        let k = 64;
        let w: Vec<f32> = (0..8 * k)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let matrix = Int8Matrix::new(&w, &[0.0; 8], 8, k, None);
        let mut x = vec![1.0f32; k];
        let mut x2 = x.clone();
        x[k - 1] = 0.0;
        x2[0] = 0.0;
        let rows = [x, x2].concat();
        let mut expected = vec![0f32; 16];
        matrix.forward(&rows, Kernel::Portable, &mut expected);
        for kernel in [Kernel::Avx2, Kernel::Vnni] {
            if kernel.is_available() {
                let mut y = vec![0f32; 16];
                matrix.forward(&rows, kernel, &mut y);
                assert_eq!(y, expected, "{kernel:?}");
            }
        }
        assert_eq!(
            2 * i32::from(ACTIVATION_MAX) * i32::from(WEIGHT_MAX),
            32_640
        );
    }

    #[test]
    fn a_product_split_over_two_threads_is_the_same() {
        let (m, n, k) = (27, 384, 384);
        let x = noise(4, m * k);
        let matrix = Int8Matrix::new(&noise(5, n * k), &noise(6, n), n, k, None);
        let rows = x;
        let mut alone = vec![0f32; m * n];
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        one.install(|| matrix.forward(&rows, Kernel::best(), &mut alone));
        let mut split = vec![0f32; m * n];
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        two.install(|| matrix.forward(&rows, Kernel::best(), &mut split));
        assert_eq!(alone, split);
    }
}
