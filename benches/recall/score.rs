//! Scoring the recall benchmark's answers and printing its tables.
//!
//! A question's recall@k is the share of its evidence turns that the top k
//! memories cover between them (a session memory covers all its turns, an
//! observation the turns it cites), so a memory that covers two evidence
//! turns counts twice and a second memory covering the same turn adds
//! nothing. The denominator is every evidence turn the question names,
//! including one that no memory of the unit covers: such a question still
//! counts, with a ceiling below 1.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::Duration;

use super::locomo::{CATEGORIES, Memory, TurnId};
use super::systems::Hit;

/// The k of recall@k, as printed.
pub const KS: [usize; 3] = [1, 5, 10];

/// How one answer scored.
#[derive(Debug, Clone, Copy)]
pub struct Scored {
    /// recall@1, @5, @10.
    pub recall: [f64; 3],
    /// At least one evidence turn covered in the top 5.
    pub hit5: bool,
    /// The rank (from 1) of the first memory covering an evidence turn.
    pub first_hit: Option<usize>,
}

/// Scores `hits` against the question's `evidence`.
pub fn score(evidence: &[TurnId], hits: &[Hit], memories: &[Memory]) -> Scored {
    let wanted: HashSet<TurnId> = evidence.iter().copied().collect();
    let mut found: HashSet<TurnId> = HashSet::new();
    let mut found_at = Vec::with_capacity(hits.len());
    let mut first_hit = None;
    for (rank, hit) in hits.iter().enumerate() {
        let covers = hit.memory.map_or(&[][..], |m| &memories[m].covers[..]);
        for turn in covers {
            if wanted.contains(turn) {
                found.insert(*turn);
                first_hit.get_or_insert(rank + 1);
            }
        }
        found_at.push(found.len());
    }
    let within = |k: usize| match k.min(found_at.len()) {
        0 => 0,
        n => found_at[n - 1],
    };
    let share = |k: usize| within(k) as f64 / wanted.len().max(1) as f64;
    Scored {
        recall: KS.map(share),
        hit5: within(5) > 0,
        first_hit,
    }
}

/// One system's figures on one unit.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    questions: usize,
    recall: [f64; 3],
    hit5: usize,
    empty: usize,
    errors: usize,
    latencies: Vec<Duration>,
    /// Per category 1 to 4: summed recall@5 and questions.
    by_category: [(f64, usize); 4],
}

impl Tally {
    /// Counts one answered question.
    pub fn add(&mut self, category: u8, scored: &Scored, hits: usize, latency: Duration) {
        self.questions += 1;
        for (sum, r) in self.recall.iter_mut().zip(scored.recall) {
            *sum += r;
        }
        self.hit5 += usize::from(scored.hit5);
        self.empty += usize::from(hits == 0);
        self.latencies.push(latency);
        let slot = &mut self.by_category[usize::from(category.clamp(1, 4)) - 1];
        slot.0 += scored.recall[1];
        slot.1 += 1;
    }

    /// Counts a question the system failed on (as no result).
    pub fn failed(&mut self, category: u8, latency: Duration) {
        let nothing = Scored {
            recall: [0.0; 3],
            hit5: false,
            first_hit: None,
        };
        self.add(category, &nothing, 0, latency);
        self.errors += 1;
    }

    /// Questions asked.
    pub fn questions(&self) -> usize {
        self.questions
    }

    /// Questions that failed with an error.
    pub fn errors(&self) -> usize {
        self.errors
    }

    fn mean(&self, sum: f64) -> f64 {
        sum / self.questions.max(1) as f64
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        let rank = ((p * sorted.len() as f64).ceil() as usize).max(1);
        sorted.get(rank - 1).copied().unwrap_or_default()
    }

    /// The cells of the unit table: recall@1, @5, @10, hit@5, no result,
    /// p50, p99.
    pub fn cells(&self) -> Vec<String> {
        let mut cells: Vec<String> = self
            .recall
            .iter()
            .map(|&s| format!("{:.3}", self.mean(s)))
            .collect();
        cells.push(format!(
            "{:.3}",
            self.hit5 as f64 / self.questions.max(1) as f64
        ));
        cells.push(self.empty.to_string());
        cells.push(millis(self.percentile(0.50)));
        cells.push(millis(self.percentile(0.99)));
        cells
    }

    /// recall@5 of each category, with its question count.
    pub fn category_cells(&self) -> Vec<String> {
        self.by_category
            .iter()
            .map(|&(sum, n)| {
                if n == 0 {
                    "-".into()
                } else {
                    format!("{:.3}", sum / n as f64)
                }
            })
            .collect()
    }

    /// Questions in each category.
    pub fn category_counts(&self) -> Vec<String> {
        self.by_category.iter().map(|c| c.1.to_string()).collect()
    }
}

/// The header of the unit table.
pub fn unit_header() -> Vec<String> {
    let mut header = vec!["system".to_string()];
    header.extend(KS.map(|k| format!("recall@{k}")));
    header.extend(["hit@5", "no result", "p50", "p99"].map(String::from));
    header
}

/// The header of the category table.
pub fn category_header() -> Vec<String> {
    let mut header = vec!["recall@5 by category".to_string()];
    header.extend(CATEGORIES.map(|(n, name)| format!("{n} {name}")));
    header
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// A plain table: the first column left-aligned, the others right-aligned.
pub fn render(header: &[String], rows: &[Vec<String>]) -> String {
    let mut widths = vec![0usize; header.len()];
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            if i == 0 {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
