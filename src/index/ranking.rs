//! Collecting a search's best hits: tantivy's `TopDocs`, with two things
//! it does not do that keep a search over 100k notes from scoring every
//! note that has the word.
//!
//! - [`TopHits`] carries the score to beat from one segment to the next.
//!   `TopDocs` starts every segment at nothing, so an index of fifteen
//!   segments found fifteen top tens, each from scratch; here a segment
//!   prunes (block-max WAND) against the best hits of those before it.
//! - [`Excluding`] leaves out documents (skipped files, hidden scopes)
//!   inside tantivy's pruning loop. A `MustNot` clause makes the query a
//!   boolean one that tantivy scores document by document, without
//!   skipping anything.
//!
//! Subtleties:
//! - The results are exactly `TopDocs`'s, ties included: segments are
//!   collected in order (the searcher's executor is single-threaded) and
//!   tantivy breaks ties by address, so a later document that only equals
//!   the score to beat would rank below the hits already held, and pruning
//!   passes only documents strictly above it.
//! - Pruning hands documents in increasing order within a segment, so the
//!   exclusions are one forward-moving cursor per segment.
//! - tantivy prunes a lone term query by the best score its postings
//!   record for each block, and postings without frequencies (the
//!   keyword fields: `tag:`, `category:`, ...) record none: it would skip
//!   every full block once it held `limit` hits. [`prunable`] keeps such
//!   a query out of that path.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use parking_lot::Mutex;
use tantivy::collector::{Collector, TopDocs, TopNComputer};
use tantivy::query::{
    BoostQuery, EnableScoring, Exclude, Explanation, Query, Scorer, TermQuery, Weight,
};
use tantivy::schema::Schema;
use tantivy::{DocAddress, DocId, DocSet, Score, SegmentOrdinal, SegmentReader, Term};

/// A score ordered totally, for the heap of best scores.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ordered(Score);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The best `limit` scores seen so far, lowest on top.
#[derive(Clone, Debug, Default)]
struct BestScores {
    limit: usize,
    heap: BinaryHeap<Reverse<Ordered>>,
}

impl BestScores {
    fn push(&mut self, score: Score) {
        if self.heap.len() < self.limit {
            self.heap.push(Reverse(Ordered(score)));
        } else if let Some(mut lowest) = self.heap.peek_mut()
            && score > lowest.0.0
        {
            *lowest = Reverse(Ordered(score));
        }
    }

    /// The score a document must beat to enter, once `limit` are held.
    fn to_beat(&self) -> Score {
        match self.heap.peek() {
            Some(lowest) if self.heap.len() >= self.limit => lowest.0.0,
            _ => Score::MIN,
        }
    }
}

/// The `limit` best documents, as [`TopDocs::with_limit`] finds them.
pub(crate) struct TopHits {
    top: TopDocs,
    best: Mutex<BestScores>,
}

impl TopHits {
    /// Collects the `limit` best (`limit` > 0).
    pub(crate) fn with_limit(limit: usize) -> TopHits {
        TopHits {
            top: TopDocs::with_limit(limit),
            best: Mutex::new(BestScores {
                limit,
                heap: BinaryHeap::new(),
            }),
        }
    }
}

impl Collector for TopHits {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = <TopDocs as Collector>::Child;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        self.top.for_segment(segment, reader)
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        self.top.merge_fruits(fruits)
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment: u32,
        reader: &SegmentReader,
    ) -> tantivy::Result<Self::Fruit> {
        let mut best = self.best.lock().clone();
        let mut top: TopNComputer<Score, DocId> = TopNComputer::new(best.limit);
        let alive = reader.alive_bitset();
        let mut to_beat = best.to_beat();
        weight.for_each_pruning(to_beat, reader, &mut |doc, score| {
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                return to_beat;
            }
            top.push(score, doc);
            best.push(score);
            to_beat = best.to_beat();
            to_beat
        })?;
        *self.best.lock() = best;
        Ok(top
            .into_sorted_vec()
            .into_iter()
            .map(|hit| {
                (
                    hit.feature,
                    DocAddress {
                        segment_ord: segment,
                        doc_id: hit.doc,
                    },
                )
            })
            .collect())
    }
}

/// `query`, safe to prune: a lone term query on a field indexed without
/// frequencies is wrapped (a boost of 1 scores the same and is pruned
/// document by document, without the block maxima it lacks).
pub(crate) fn prunable(query: Box<dyn Query>, schema: &Schema) -> Box<dyn Query> {
    let without_freqs = query.downcast_ref::<TermQuery>().is_some_and(|term| {
        schema
            .get_field_entry(term.term().field())
            .field_type()
            .get_index_record_option()
            .is_none_or(|option| !option.has_freq())
    });
    if without_freqs {
        Box::new(BoostQuery::new(query, 1.0))
    } else {
        query
    }
}

/// `query` without the documents any of `excluded` matches.
#[derive(Debug)]
pub(crate) struct Excluding {
    query: Box<dyn Query>,
    excluded: Box<dyn Query>,
}

impl Excluding {
    /// `query` without the documents that have one of `terms`.
    pub(crate) fn new(query: Box<dyn Query>, terms: Vec<Term>) -> Excluding {
        Excluding {
            query,
            excluded: Box::new(tantivy::query::TermSetQuery::new(terms)),
        }
    }
}

impl Clone for Excluding {
    fn clone(&self) -> Excluding {
        Excluding {
            query: self.query.box_clone(),
            excluded: self.excluded.box_clone(),
        }
    }
}

impl Query for Excluding {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let excluded = self
            .excluded
            .weight(EnableScoring::disabled_from_schema(scoring.schema()))?;
        Ok(Box::new(ExcludingWeight {
            weight: self.query.weight(scoring)?,
            excluded,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.query.query_terms(visitor);
    }
}

struct ExcludingWeight {
    weight: Box<dyn Weight>,
    excluded: Box<dyn Weight>,
}

impl Weight for ExcludingWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(Exclude::new(
            self.weight.scorer(reader, boost)?,
            self.excluded.scorer(reader, 1.0)?,
        )))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.weight.explain(reader, doc)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let mut excluded = self.excluded.scorer(reader, 1.0)?;
        let mut to_beat = threshold;
        self.weight
            .for_each_pruning(threshold, reader, &mut |doc, score| {
                if excluded.doc() <= doc && excluded.seek(doc) == doc {
                    return to_beat;
                }
                to_beat = callback(doc, score);
                to_beat
            })
    }
}
