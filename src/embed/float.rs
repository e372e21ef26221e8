//! Matrix products in 32-bit floats for the questions' encoder: a few
//! tokens times a linear layer's weights, on AVX2 with FMA when the CPU has
//! them, chosen when the program runs.
//!
//! A question has a few dozen tokens, so a product is skinny, and general
//! matrix kernels (candle's gemm) reach about a third of the CPU's peak on
//! such shapes. Here:
//! - **The weights are packed once**, when the model loads: panels of
//!   [`PANEL`] output rows, each input's sixteen weights side by side, so
//!   that one pass over a panel reads it in order.
//! - **Up to [`TOKENS`] tokens against one panel at a time**: for each
//!   input, the panel's sixteen weights (two registers) are multiplied by
//!   each token's value, broadcast, into that token's sixteen sums. Twelve
//!   sums stay in registers, and no sum is ever added across a register.
//! - **Panels outside, tokens inside**: each panel is read from memory
//!   once per product, fetched ahead while the one before it is
//!   multiplied, and then from the core's cache; a large product is split
//!   by panels over two threads.
//!
//! The sums are those of floats, in another order than candle's: the two
//! encoders' vectors agree to about a millionth (`tests/semantic.rs`).
//!
//! AVX-512 is not used: on the Xeons measured here its fused multiply-adds
//! run at a lower clock for no more work per cycle, and AVX2 was faster.

use std::ops::Range;

/// Output rows in a panel: two registers of eight floats.
const PANEL: usize = 16;

/// Tokens a kernel call takes at most: two sums each, twelve registers,
/// with room for the panel's two and a broadcast.
const TOKENS: usize = 6;

/// Multiply-adds from which a product is split over two threads: below
/// this, waking the second thread costs more than it saves.
const SPLIT_WORK: usize = 1 << 19;

/// Whether this CPU runs the products.
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// A weight matrix, packed for the kernel.
pub(super) struct FloatMatrix {
    outputs: usize,
    inputs: usize,
    /// Panel after panel: per input, [`PANEL`] rows' weights (the last
    /// panel padded with zero rows).
    packed: Vec<f32>,
    bias: Vec<f32>,
}

impl FloatMatrix {
    /// Packs the rows of `weights`, one matrix after another, each row
    /// `inputs` floats (the layout of a linear layer's weight); a bias per
    /// row.
    pub(super) fn new(weights: &[&[f32]], bias: Vec<f32>, inputs: usize) -> FloatMatrix {
        let outputs = bias.len();
        let rows = weights.iter().flat_map(|w| w.chunks_exact(inputs));
        assert_eq!(rows.clone().count(), outputs, "a bias per row");
        let mut packed = vec![0f32; outputs.div_ceil(PANEL) * PANEL * inputs];
        for (r, row) in rows.enumerate() {
            let panel = &mut packed[r / PANEL * PANEL * inputs..][..PANEL * inputs];
            for (slot, w) in panel.chunks_exact_mut(PANEL).zip(row) {
                slot[r % PANEL] = *w;
            }
        }
        FloatMatrix {
            outputs,
            inputs,
            packed,
            bias,
        }
    }

    /// Output rows.
    pub(super) fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x` (rows of its inputs, one per token) times this matrix
    /// transposed, plus the bias, into `y` (rows of
    /// [`outputs`](Self::outputs) floats). The CPU must have AVX2 and FMA
    /// ([`available`]).
    pub(super) fn forward(&self, x: &[f32], y: &mut [f32]) {
        let tokens = x.len() / self.inputs;
        assert!(available(), "the float products need AVX2 and FMA");
        assert_eq!(y.len(), tokens * self.outputs, "an output row per token");
        let panels = self.outputs.div_ceil(PANEL);
        let out = Out {
            ptr: y.as_mut_ptr(),
            outputs: self.outputs,
        };
        let work = tokens * self.outputs * self.inputs;
        if work < SPLIT_WORK || panels < 2 || rayon::current_num_threads() < 2 {
            self.run(x, 0..panels, &out);
            return;
        }
        let middle = panels / 2;
        rayon::join(
            || self.run(x, 0..middle, &out),
            || self.run(x, middle..panels, &out),
        );
    }

    fn run(&self, x: &[f32], panels: Range<usize>, out: &Out) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `forward` checked that the CPU has AVX2 and FMA.
        unsafe {
            self.run_avx2(x, panels, out)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (x, panels, out);
    }

    /// The panels `panels` against every token, [`TOKENS`] at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn run_avx2(&self, x: &[f32], panels: Range<usize>, out: &Out) {
        let k = self.inputs;
        let tokens = x.len() / k;
        let mut sums = [[0f32; PANEL]; TOKENS];
        for p in panels {
            let panel = &self.packed[p * PANEL * k..][..PANEL * k];
            let first = p * PANEL;
            let rows = (self.outputs - first).min(PANEL);
            let mut t = 0;
            while t < tokens {
                let count = (tokens - t).min(TOKENS);
                let x = &x[t * k..(t + count) * k];
                match count {
                    6 => sums_avx2::<6>(x, panel, &mut sums),
                    5 => sums_avx2::<5>(x, panel, &mut sums),
                    4 => sums_avx2::<4>(x, panel, &mut sums),
                    3 => sums_avx2::<3>(x, panel, &mut sums),
                    2 => sums_avx2::<2>(x, panel, &mut sums),
                    _ => sums_avx2::<1>(x, panel, &mut sums),
                }
                for (i, sums) in sums.iter().take(count).enumerate() {
                    for (r, s) in sums.iter().take(rows).enumerate() {
                        // SAFETY: token t + i and output first + r are in
                        // range, and this thread alone writes this panel's.
                        unsafe { out.set(t + i, first + r, s + self.bias[first + r]) };
                    }
                }
                t += count;
            }
        }
    }
}

/// Where outputs go. Two threads write through it at once, each to its own
/// panels' outputs (columns) of every token's row.
struct Out {
    ptr: *mut f32,
    outputs: usize,
}

// SAFETY: the threads that share it write disjoint elements (their own
// panels' outputs), and the slice it points into outlives them (`forward`
// joins them before it returns).
unsafe impl Sync for Out {}

impl Out {
    /// Stores output `n` of token `t`.
    ///
    /// # Safety
    /// `t` is one of the product's tokens and `n` one of its outputs, and
    /// no other thread writes the same pair.
    #[inline(always)]
    unsafe fn set(&self, t: usize, n: usize, v: f32) {
        // SAFETY: in bounds (`forward` checked `y`'s length); disjoint, as
        // the caller promises.
        unsafe { *self.ptr.add(t * self.outputs + n) = v };
    }
}

/// The sums of `T` tokens (`x`, their rows one after another) against one
/// panel, into `sums`' first `T` rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn sums_avx2<const T: usize>(x: &[f32], panel: &[f32], sums: &mut [[f32; PANEL]; TOKENS]) {
    use std::arch::x86_64::*;
    let k = panel.len() / PANEL;
    assert!(T <= TOKENS && x.len() == T * k);
    let mut rows = [x.as_ptr(); T];
    for (i, row) in rows.iter_mut().enumerate() {
        *row = x[i * k..].as_ptr();
    }
    let mut acc = [[_mm256_setzero_ps(); 2]; T];
    for (j, w) in panel.chunks_exact(PANEL).enumerate() {
        // The same line of the next panel (panels lie one after another),
        // asked for ahead: while the first tokens go through this panel,
        // the next one streams in behind it. A hint: past the matrix's end
        // it is ignored.
        _mm_prefetch::<_MM_HINT_T0>(w.as_ptr().wrapping_add(panel.len()).cast());
        // SAFETY: a chunk holds PANEL = 16 floats, two registers' worth.
        let (w0, w1) = unsafe {
            (
                _mm256_loadu_ps(w.as_ptr()),
                _mm256_loadu_ps(w.as_ptr().add(8)),
            )
        };
        for i in 0..T {
            // SAFETY: j < k, the length of every row.
            let v = _mm256_broadcast_ss(unsafe { &*rows[i].add(j) });
            acc[i][0] = _mm256_fmadd_ps(v, w0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(v, w1, acc[i][1]);
        }
    }
    for (sums, acc) in sums.iter_mut().zip(&acc) {
        // SAFETY: sixteen floats into sixteen.
        unsafe {
            _mm256_storeu_ps(sums.as_mut_ptr(), acc[0]);
            _mm256_storeu_ps(sums.as_mut_ptr().add(8), acc[1]);
        }
    }
}

#[cfg(test)]
#[cfg(target_arch = "x86_64")]
mod tests {
    use super::*;
    use crate::embed::noise;

    #[test]
    fn the_products_are_those_of_floats() {
        if !available() {
            return;
        }
        // Shapes that leave partial panels and token blocks; the last is
        // split over two threads.
        for (m, n, k) in [
            (1, 1, 1),
            (1, 7, 20),
            (5, 13, 37),
            (27, 40, 384),
            (29, 1536, 384),
        ] {
            let x = noise(1, m * k);
            let w = noise(2, n * k);
            let b = noise(3, n);
            let matrix = FloatMatrix::new(&[&w[..n / 2 * k], &w[n / 2 * k..]], b.clone(), k);
            let mut y = vec![f32::NAN; m * n];
            let two = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap();
            two.install(|| matrix.forward(&x, &mut y));
            for t in 0..m {
                for j in 0..n {
                    let exact = (0..k)
                        .map(|i| f64::from(x[t * k + i]) * f64::from(w[j * k + i]))
                        .sum::<f64>()
                        + f64::from(b[j]);
                    let got = f64::from(y[t * n + j]);
                    assert!(
                        (got - exact).abs() < 1e-5 * (k as f64).sqrt(),
                        "{m}×{n}×{k}, token {t} output {j}: {got} for {exact}"
                    );
                }
            }
        }
    }
}
