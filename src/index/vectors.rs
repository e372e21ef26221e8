//! The memories' vectors in one block, read in order by a search.
//!
//! A search compares the question with every chunk of every memory: at
//! 100,000 memories that is the whole table, each time, and the time goes
//! to reading it from memory, not to the arithmetic. So each chunk's vector
//! is kept as 8-bit integers with one scale (the largest component maps to
//! ±127), a quarter of the floats' bytes, and all chunks sit in one block
//! rather than one allocation per memory; the cosine moves by about 0.002
//! at most, below the gaps that order memories. The question is put in
//! 16-bit integers with one scale (its largest component ±16,383, a
//! hundred times finer than the rows), so each row's product is a sum of
//! integers: exact, the same on every CPU, and with AVX2 two instructions
//! for sixteen components where floats took six.
//!
//! A memory's chunks are rows `start..start + count`. A memory changed or
//! removed leaves dead rows behind, squeezed out once they are a quarter
//! of the block.

use std::collections::HashMap;

use crate::store::StorePath;

/// A row whose memory is gone.
const DEAD: u32 = u32::MAX;

/// Rows from which a scan is split in two.
const SPLIT_ROWS: usize = 16_384;

/// One memory's place in the block.
#[derive(Clone)]
struct Entry {
    path: StorePath,
    /// Its `scope:`, lowercase, if it has one.
    scope: Option<String>,
    start: usize,
    count: usize,
}

/// Every memory's chunk vectors, quantized.
#[derive(Clone)]
pub(crate) struct VectorTable {
    dims: usize,
    /// Row after row, `dims` values each.
    values: Vec<i8>,
    /// Per row: the factor that turns its values back into floats.
    scales: Vec<f32>,
    /// Per row: its entry, or [`DEAD`].
    owners: Vec<u32>,
    entries: Vec<Option<Entry>>,
    by_path: HashMap<StorePath, u32>,
    dead: usize,
}

impl VectorTable {
    pub(crate) fn new(dims: usize) -> VectorTable {
        VectorTable {
            dims,
            values: Vec::new(),
            scales: Vec::new(),
            owners: Vec::new(),
            entries: Vec::new(),
            by_path: HashMap::new(),
            dead: 0,
        }
    }

    /// The length of every vector.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Memories with vectors.
    pub(crate) fn len(&self) -> usize {
        self.by_path.len()
    }

    /// Memories kept with no vectors: the model cannot read them.
    pub(crate) fn unread(&self) -> usize {
        self.entries
            .iter()
            .flatten()
            .filter(|e| e.count == 0)
            .count()
    }

    /// Whether `path` was embedded with no vectors (see [`unread`](Self::unread)).
    pub(crate) fn is_unread(&self, path: &StorePath) -> bool {
        self.by_path
            .get(path)
            .and_then(|&slot| self.entries[slot as usize].as_ref())
            .is_some_and(|e| e.count == 0)
    }

    pub(crate) fn contains(&self, path: &StorePath) -> bool {
        self.by_path.contains_key(path)
    }

    /// Sets the vectors of `path` (its chunks' vectors one after another,
    /// unit length), replacing any it had.
    pub(crate) fn insert(&mut self, path: StorePath, scope: Option<String>, data: &[f32]) {
        self.remove(&path);
        let Ok(slot) = u32::try_from(self.entries.len()) else {
            return;
        };
        if slot == DEAD {
            return;
        }
        let start = self.scales.len();
        for row in data.chunks_exact(self.dims) {
            let largest = row.iter().fold(0f32, |m, x| m.max(x.abs()));
            let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            self.values.extend(
                row.iter()
                    .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
            );
            self.scales.push(scale);
            self.owners.push(slot);
        }
        let count = self.scales.len() - start;
        self.entries.push(Some(Entry {
            path: path.clone(),
            scope,
            start,
            count,
        }));
        self.by_path.insert(path, slot);
    }

    /// Forgets the vectors of `path`.
    pub(crate) fn remove(&mut self, path: &StorePath) {
        let Some(slot) = self.by_path.remove(path) else {
            return;
        };
        if let Some(entry) = self.entries[slot as usize].take() {
            for owner in &mut self.owners[entry.start..entry.start + entry.count] {
                *owner = DEAD;
            }
            self.dead += entry.count;
        }
        if self.dead > 1024 && self.dead * 4 > self.owners.len() {
            self.squeeze();
        }
    }

    /// The block again without its dead rows.
    fn squeeze(&mut self) {
        let mut values = Vec::with_capacity(self.values.len() - self.dead * self.dims);
        let mut scales = Vec::with_capacity(self.scales.len() - self.dead);
        let mut owners = Vec::with_capacity(scales.capacity());
        let mut entries = Vec::with_capacity(self.by_path.len());
        for mut entry in self.entries.drain(..).flatten() {
            let slot = entries.len() as u32;
            let rows = entry.start..entry.start + entry.count;
            values.extend_from_slice(&self.values[rows.start * self.dims..rows.end * self.dims]);
            entry.start = scales.len();
            scales.extend_from_slice(&self.scales[rows]);
            owners.extend(std::iter::repeat_n(slot, entry.count));
            self.by_path.insert(entry.path.clone(), slot);
            entries.push(Some(entry));
        }
        self.values = values;
        self.scales = scales;
        self.owners = owners;
        self.entries = entries;
        self.dead = 0;
    }

    /// The `limit` memories nearest to `query` (by their best chunk), with
    /// their cosine and how many chunks they have, best first; memories of
    /// `hidden_scopes` left out.
    #[cfg(test)]
    pub(crate) fn nearest(
        &self,
        query: &[f32],
        limit: usize,
        hidden_scopes: &[String],
    ) -> Vec<(StorePath, f32, usize)> {
        self.nearest_kept(query, limit, hidden_scopes, &|_| true)
    }

    /// [`nearest`](Self::nearest) among the memories `keep` keeps.
    pub(crate) fn nearest_kept(
        &self,
        query: &[f32],
        limit: usize,
        hidden_scopes: &[String],
        keep: &dyn Fn(&StorePath) -> bool,
    ) -> Vec<(StorePath, f32, usize)> {
        if query.len() != self.dims || self.dims == 0 {
            return Vec::new();
        }
        let best = self.best_per_entry(query);
        let mut scored: Vec<(f32, u32)> = best
            .iter()
            .enumerate()
            .filter(|(_, score)| score.is_finite())
            .map(|(slot, &score)| (score, slot as u32))
            .collect();
        let visible = |slot: u32| {
            let entry = self.entries[slot as usize].as_ref()?;
            let hidden = entry
                .scope
                .as_ref()
                .is_some_and(|s| hidden_scopes.iter().any(|h| h == s));
            (!hidden && keep(&entry.path)).then_some(entry)
        };
        // Only the best are put in order: a few more than asked for, and
        // more again while hidden memories leave too few.
        let mut wanted = limit.saturating_add(8);
        loop {
            let k = wanted.min(scored.len());
            if k == 0 {
                return Vec::new();
            }
            scored.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut found: Vec<(f32, &Entry)> = scored[..k]
                .iter()
                .filter_map(|&(score, slot)| Some((score, visible(slot)?)))
                .collect();
            if found.len() >= limit || k == scored.len() {
                found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.path.cmp(&b.1.path)));
                found.truncate(limit);
                return found
                    .into_iter()
                    .map(|(score, entry)| (entry.path.clone(), score, entry.count))
                    .collect();
            }
            wanted = wanted.saturating_mul(4);
        }
    }

    /// Each entry's best cosine with `query` (`-inf` for an empty slot):
    /// the scan every search makes. A large table is read in two halves
    /// at once, on the caller's rayon pool: the scan waits on memory more
    /// than on arithmetic, and two cores draw more of it than one.
    fn best_per_entry(&self, query: &[f32]) -> Vec<f32> {
        let query = &Codes::new(query);
        let rows = self.scales.len();
        if rows < SPLIT_ROWS || rayon::current_num_threads() < 2 {
            return self.best_in(query, 0..rows);
        }
        let (mut best, other) = rayon::join(
            || self.best_in(query, 0..rows / 2),
            || self.best_in(query, rows / 2..rows),
        );
        for (b, o) in best.iter_mut().zip(other) {
            *b = b.max(o);
        }
        best
    }

    /// [`best_per_entry`](Self::best_per_entry) over `rows`, with AVX2 on
    /// an x86-64 that has it (about twice as fast as the baseline's), the
    /// same integers either way.
    fn best_in(&self, query: &Codes, rows: std::ops::Range<usize>) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, just checked.
            return unsafe { self.best_in_avx2(query, rows) };
        }
        self.best_with(query, rows, dot)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn best_in_avx2(&self, query: &Codes, rows: std::ops::Range<usize>) -> Vec<f32> {
        self.best_with(query, rows, |q, r| {
            // SAFETY: this function runs only where the CPU has AVX2.
            unsafe { dot_avx2(q, r) }
        })
    }

    #[inline(always)]
    fn best_with(
        &self,
        query: &Codes,
        rows: std::ops::Range<usize>,
        dot: impl Fn(&[i16], &[i8]) -> i32,
    ) -> Vec<f32> {
        let mut best = vec![f32::NEG_INFINITY; self.entries.len()];
        let values = &self.values[rows.start * self.dims..rows.end * self.dims];
        for ((row, &scale), &owner) in values
            .chunks_exact(self.dims)
            .zip(&self.scales[rows.clone()])
            .zip(&self.owners[rows])
        {
            if owner != DEAD {
                let score = scale * query.scale * dot(&query.values, row) as f32;
                let slot = &mut best[owner as usize];
                *slot = slot.max(score);
            }
        }
        best
    }

    /// The cosine of two memories' first chunks (their titles and
    /// opening words); `None` if either has no vectors.
    pub(crate) fn likeness(&self, a: &StorePath, b: &StorePath) -> Option<f32> {
        let row = |path: &StorePath| {
            let entry = self.entries[*self.by_path.get(path)? as usize]
                .as_ref()
                .filter(|e| e.count > 0)?;
            let at = entry.start;
            Some((
                &self.values[at * self.dims..(at + 1) * self.dims],
                self.scales[at],
            ))
        };
        let ((a, sa), (b, sb)) = (row(a)?, row(b)?);
        let dot: i32 = a
            .iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        Some(dot as f32 * sa * sb)
    }

    /// Each memory: its path, scope and vectors (as floats again).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&StorePath, Option<&str>, Vec<f32>)> {
        self.entries.iter().flatten().map(|entry| {
            let rows = entry.start..entry.start + entry.count;
            let data = self.values[rows.start * self.dims..rows.end * self.dims]
                .chunks_exact(self.dims)
                .zip(&self.scales[rows])
                .flat_map(|(row, &scale)| row.iter().map(move |&v| f32::from(v) * scale))
                .collect();
            (&entry.path, entry.scope.as_deref(), data)
        })
    }
}

/// The largest code of a question's component in magnitude: with a
/// row's ±127, a sum of up to 4,096 products per 32-bit lane cannot
/// overflow (4,096 · 16,383 · 127 < 2³¹).
const QUESTION_MAX: f32 = 16_383.0;

/// A question's vector as integers, and the factor that turns them back
/// into floats.
struct Codes {
    values: Vec<i16>,
    scale: f32,
}

impl Codes {
    fn new(query: &[f32]) -> Codes {
        let largest = query.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if largest > 0.0 && largest.is_finite() {
            largest / QUESTION_MAX
        } else {
            1.0
        };
        let values = query
            .iter()
            .map(|x| (x / scale).round().clamp(-QUESTION_MAX, QUESTION_MAX) as i16)
            .collect();
        Codes { values, scale }
    }
}

/// The dot product of a question's codes and a row, in integers.
#[inline(always)]
fn dot(query: &[i16], row: &[i8]) -> i32 {
    query
        .iter()
        .zip(row)
        .map(|(&q, &r)| i32::from(q) * i32::from(r))
        .sum()
}

/// [`dot`] with AVX2: sixteen components widened to 16 bits, multiplied
/// and added in pairs into eight 32-bit sums (`vpmaddwd`), in two
/// registers so that the additions do not wait on each other.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn dot_avx2(query: &[i16], row: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    const LANES: usize = 16;
    let n = query.len().min(row.len());
    let whole = n / LANES * LANES;
    // SAFETY (each load): k + 16 ≤ n, sixteen bytes of the row and
    // sixteen codes of the question.
    let product = |k: usize| unsafe {
        _mm256_madd_epi16(
            _mm256_cvtepi8_epi16(_mm_loadu_si128(row.as_ptr().add(k).cast())),
            _mm256_loadu_si256(query.as_ptr().add(k).cast()),
        )
    };
    let mut sums = [_mm256_setzero_si256(); 2];
    let mut k = 0;
    while k + 2 * LANES <= whole {
        sums[0] = _mm256_add_epi32(sums[0], product(k));
        sums[1] = _mm256_add_epi32(sums[1], product(k + LANES));
        k += 2 * LANES;
    }
    if k < whole {
        sums[0] = _mm256_add_epi32(sums[0], product(k));
    }
    let v = _mm256_add_epi32(sums[0], sums[1]);
    let v = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
    let v = _mm_add_epi32(v, _mm_shuffle_epi32::<0b10_11_00_01>(v));
    _mm_cvtsi128_si32(v) + dot(&query[whole..n], &row[whole..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> StorePath {
        StorePath::new(s).unwrap()
    }

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn quantized_cosines_stay_close_to_the_floats() {
        let mut table = VectorTable::new(40);
        let a = unit(
            &(0..40)
                .map(|i| ((i * 7 % 11) as f32) - 5.0)
                .collect::<Vec<_>>(),
        );
        let b = unit(
            &(0..40)
                .map(|i| ((i * 3 % 13) as f32) - 6.0)
                .collect::<Vec<_>>(),
        );
        table.insert(p("a.md"), None, &a);
        table.insert(p("b.md"), None, &b);
        let found = table.nearest(&a, 2, &[]);
        assert_eq!(found[0].0, p("a.md"));
        assert!((found[0].1 - 1.0).abs() < 0.002, "{}", found[0].1);
        let exact = crate::embed::cosine(&a, &b);
        assert!(
            (found[1].1 - exact).abs() < 0.002,
            "{} vs {exact}",
            found[1].1
        );
        // Read back as floats: the same to within a quantum.
        let back: Vec<f32> = table.iter().find(|e| *e.0 == p("b.md")).unwrap().2;
        assert!(back.iter().zip(&b).all(|(x, y)| (x - y).abs() < 0.01));
    }

    #[test]
    fn the_scan_computes_the_same_integers_on_every_cpu() {
        // Codes at their extremes, and lengths that leave a tail.
        for n in [1, 15, 16, 17, 40, 384, 1024] {
            let query: Vec<i16> = (0..n)
                .map(|i| match i % 3 {
                    0 => QUESTION_MAX as i16,
                    1 => -(QUESTION_MAX as i16),
                    _ => (i * 37 % 2001) as i16 - 1000,
                })
                .collect();
            let row: Vec<i8> = (0..n)
                .map(|i| {
                    if i % 5 == 0 {
                        -127
                    } else {
                        (i * 11 % 255) as i8
                    }
                })
                .collect();
            let expected: i64 = query
                .iter()
                .zip(&row)
                .map(|(&q, &r)| i64::from(q) * i64::from(r))
                .sum();
            assert_eq!(i64::from(dot(&query, &row)), expected, "{n}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                assert_eq!(
                    i64::from(unsafe { dot_avx2(&query, &row) }),
                    expected,
                    "{n}"
                );
            }
        }
    }

    #[test]
    fn a_memory_scores_its_best_chunk_and_hidden_scopes_leave_no_gap() {
        let mut table = VectorTable::new(2);
        table.insert(p("two.md"), None, &[1.0, 0.0, 0.0, 1.0]);
        table.insert(p("secret.md"), Some("work".into()), &[0.0, 1.0]);
        table.insert(p("far.md"), None, &[-1.0, 0.0]);
        let found = table.nearest(&[0.0, 1.0], 2, &["work".into()]);
        let paths: Vec<_> = found.iter().map(|f| f.0.clone()).collect();
        assert_eq!(paths, [p("two.md"), p("far.md")]);
        assert!((found[0].1 - 1.0).abs() < 0.01);
        // Many hidden memories ahead of the visible ones.
        for i in 0..40 {
            table.insert(p(&format!("s{i}.md")), Some("work".into()), &[0.1, 1.0]);
        }
        let found = table.nearest(&[0.0, 1.0], 2, &["work".into()]);
        let paths: Vec<_> = found.iter().map(|f| f.0.clone()).collect();
        assert_eq!(paths, [p("two.md"), p("far.md")]);
        assert_eq!(table.nearest(&[0.0, 1.0], 50, &[]).len(), 43);
    }

    #[test]
    fn a_scan_in_two_halves_finds_what_one_finds() {
        let mut table = VectorTable::new(2);
        for i in 0..SPLIT_ROWS + 100 {
            let angle = i as f32 * 0.001;
            table.insert(p(&format!("m{i}.md")), None, &[angle.cos(), angle.sin()]);
        }
        let query = unit(&[0.3, 0.7]);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let alone = one.install(|| table.nearest(&query, 5, &[]));
        let halves = two.install(|| table.nearest(&query, 5, &[]));
        assert_eq!(alone, halves);
        assert_eq!(alone.len(), 5);
    }

    #[test]
    fn replaced_and_removed_memories_are_squeezed_out() {
        let mut table = VectorTable::new(2);
        for round in 0..3000 {
            let path = p(&format!("m{}.md", round % 100));
            table.insert(path, None, &[1.0, 0.0, 0.0, 1.0]);
        }
        assert_eq!(table.len(), 100);
        // Replaced rows were dead, and squeezed out on the way.
        assert!(table.owners.len() < 100 * 2 * 4 + 1024 * 4);
        for i in 0..100 {
            table.remove(&p(&format!("m{i}.md")));
        }
        assert_eq!(table.len(), 0);
        assert!(table.nearest(&[1.0, 0.0], 5, &[]).is_empty());
        table.insert(p("back.md"), None, &[0.0, 1.0]);
        assert_eq!(table.nearest(&[0.0, 1.0], 5, &[])[0].0, p("back.md"));
        assert!(table.contains(&p("back.md")));
    }
}
