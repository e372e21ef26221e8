//! A newer memory on the same subject goes first.
//!
//! An agent's memory keeps what was true then: "we use SQLite" in
//! February, "we move from SQLite to Postgres" in October. Asked "which
//! database did we decide on?", the older one matches the question's words
//! best ("database" is in its title), but the newer one is the answer. So
//! among the first hits of a search, a memory moves up to just above an
//! older one it supersedes: one of the same category (its `category:`,
//! else the category folder it is in), close to it in meaning, that names
//! what the older one is about (a word of its title, such as "SQLite") or
//! tells of a change ("Moved to Neovim and dropped VS Code" over "Editor
//! setup: VS Code with Vim keys").
//!
//! Subtleties:
//! - A question that names a time ("in February") asks about what held
//!   then: nothing moves (see `Index::ranked`).
//! - A question that names the older memory asks about it: nothing goes
//!   above it. It names it when it holds every stem of its title (two at
//!   least: "what did we agree in the sprint 14 retro?" names "Sprint 14
//!   retro", not the newer "Sprint 15 retro"), unless it asks what holds
//!   now ("now", "currently", "latest"), or a word with a digit that the
//!   older holds and the newer does not ("zebraC3").
//! - Dates and reminders are events, not states: a newer one says nothing
//!   of an older one, and they are left in place. So are notes on people
//!   and projects: each is about its own person or project, and a newer
//!   one that names another ("Hannah, Alice's manager") is not its newer
//!   version. One exception: a question that asks who holds a role now
//!   ("who is my manager now?"), of two people whose titles both name
//!   it, is answered by the newer.
//! - Only memories with vectors are compared; without a model nothing
//!   moves. Hits written a moment ago and still waiting for the worker
//!   are embedded by the search first (a few short ones at most).
//! - A newer memory goes up past two hits at most, the older one
//!   included (events, people and projects passed are not counted): one
//!   the question found far below is not what it asks about, however
//!   alike the two are ([`REACH`]).
//! - A chain (v1, v2, v3) ends newest first, each above the one it
//!   supersedes.
//! - The first hits are ranked [`WINDOW`] deep whatever the limit, so
//!   what comes first never depends on how many hits are asked for.
//! - A moved memory takes the score of the one it goes above, so that
//!   scores never rise down the list.

use std::cell::OnceCell;
use std::collections::BTreeSet;

use tantivy::columnar::Column;
use tantivy::schema::{Term, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument};

use super::Side;
use super::fusion;
use super::schema::{Fields, names};
use super::semantic::Semantic;
use crate::memory::Category;
use crate::store::StorePath;

/// How many of the first hits are compared: the ones an agent reads.
pub(super) const WINDOW: usize = 10;

/// How many hits a newer memory may pass on its way up, the older one
/// it goes above included; events, people and projects, which are no
/// versions of anything (see [`NOT_VERSIONS`]), are not counted. One the
/// question found far below the older is not what it asks about, however
/// alike the two are: the decisions of one project are all alike, and
/// the newest of them, eighth for "which queue did we choose instead of
/// Kafka?", is no newer queue.
const REACH: usize = 2;

/// How alike two memories' first chunks must be (cosine) for the newer to
/// be about the same thing. all-MiniLM-L6-v2 gives "We decided to use
/// SQLite as the app's database" and "we move from SQLite to Postgres"
/// 0.49, two decisions on different subjects (hosting, a frontend
/// framework) 0.16 to 0.23.
const ALIKE: f32 = 0.4;

/// Words that tell of a change: a newer memory holding one (its stem)
/// that is closer still in meaning ([`CHANGED_ALIKE`]) to an older one of
/// its category replaces it, though it names no word of the older one's
/// title.
const CHANGE_WORDS: &str =
    "switched moved migrated replaced dropped stopped abandoned instead changed updated";

/// Words that ask what holds now: a question holding one asks for the
/// newest version even when it names an older one's title. ("now" is a
/// stop word, so the question's own words are looked at.)
const NOW_WORDS: &[&str] = &[
    "now",
    "currently",
    "current",
    "latest",
    "nowadays",
    "anymore",
];

/// Whether `question` asks what holds now.
fn asks_now(question: &str) -> bool {
    question
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| NOW_WORDS.iter().any(|now| word.eq_ignore_ascii_case(now)))
}

/// How alike a newer memory that tells of a change and names nothing of
/// the older one's title must be to it: "Moved to Neovim and dropped VS
/// Code" is 0.51 from "Editor setup: VS Code with Vim keybindings", and
/// 0.43 from "Theme: prefers dark mode in VS Code", which it leaves be.
const CHANGED_ALIKE: f32 = 0.45;

/// Categories whose memories are not versions of one another, so a newer
/// one supersedes nothing: events (dates, reminders, the inbox), and notes
/// each about its own person or project ("Hannah, Alice's manager" is no
/// newer Alice, and a meeting on Atlas no newer Atlas overview).
const NOT_VERSIONS: &[Category] = &[
    Category::Date,
    Category::Reminders,
    Category::Inbox,
    Category::People,
    Category::Project,
];

/// What a hit needs for the comparison.
struct Facts {
    address: DocAddress,
    path: StorePath,
    created: i64,
    title: String,
    /// Its category and its title's stems, looked up when first needed.
    category: OnceCell<Option<Category>>,
    title_stems: OnceCell<BTreeSet<String>>,
}

/// Moves each of the first hits of `top` above the highest older hit it
/// supersedes (see the module's doc).
pub(super) fn newer_first(
    searcher: &Searcher,
    fields: &Fields,
    semantic: &Semantic,
    question: &str,
    top: &mut [(f32, DocAddress, Side)],
) {
    let n = top.len().min(WINDOW);
    if n < 2 {
        return;
    }
    let mut columns = Columns::default();
    let facts: Vec<Option<Facts>> = top[..n]
        .iter()
        .map(|(_, address, _)| columns.facts_of(searcher, fields, *address))
        .collect();
    // Hits written a moment ago may still wait for their vectors.
    let paths: Vec<&StorePath> = facts.iter().flatten().map(|f| &f.path).collect();
    semantic.embed_these(&paths);
    let asked = fusion::stems(searcher, fields, question);
    let change = fusion::stems(searcher, fields, CHANGE_WORDS);
    let compared = Compared {
        searcher,
        fields,
        semantic,
        asked: &asked,
        asks_now: asks_now(question),
        change: &change,
    };
    // The hits' order, as indices into `top` and `facts`.
    let mut order: Vec<usize> = (0..n).collect();
    for at in 1..n {
        let newer = order[at];
        let Some(b) = &facts[newer] else { continue };
        let above = (0..at).find(|&i| {
            // Events, people and projects it passes do not count.
            let passed = order[i..at]
                .iter()
                .filter(|&&o| {
                    facts[o].as_ref().is_none_or(|f| {
                        compared
                            .category(f)
                            .is_none_or(|c| !NOT_VERSIONS.contains(&c))
                    })
                })
                .count();
            passed <= REACH
                && facts[order[i]]
                    .as_ref()
                    .is_some_and(|a| compared.supersedes(b, a))
        });
        if let Some(i) = above {
            let moved = order.remove(at);
            order.insert(i, moved);
        }
    }
    if order.iter().enumerate().all(|(i, &o)| i == o) {
        return;
    }
    let scores: Vec<f32> = top[..n].iter().map(|t| t.0).collect();
    let reordered: Vec<(f32, DocAddress, Side)> = order.iter().map(|&o| top[o]).collect();
    for (i, mut hit) in reordered.into_iter().enumerate() {
        // The score of the place it takes: the list stays in order.
        hit.0 = scores[i];
        top[i] = hit;
    }
}

/// What a pair of hits is compared with: the index, the vectors, and the
/// question's stems.
struct Compared<'a> {
    searcher: &'a Searcher,
    fields: &'a Fields,
    semantic: &'a Semantic,
    asked: &'a BTreeSet<String>,
    /// Whether the question asks what holds now (see [`asks_now`]).
    asks_now: bool,
    /// The stems of [`CHANGE_WORDS`].
    change: &'a BTreeSet<String>,
}

impl Compared<'_> {
    /// The category of a hit: its `category:`, else the category folder
    /// it is in (the index reads both).
    fn category(&self, facts: &Facts) -> Option<Category> {
        *facts
            .category
            .get_or_init(|| category_of(self.searcher, self.fields, facts.address))
    }

    /// Whether `newer` supersedes `older`.
    fn supersedes(&self, newer: &Facts, older: &Facts) -> bool {
        let (searcher, fields) = (self.searcher, self.fields);
        let category = |facts: &Facts| self.category(facts);
        let title = older
            .title_stems
            .get_or_init(|| fusion::stems(searcher, fields, &older.title));
        let holds = |stem: &String| fusion::holds(searcher, fields, newer.address, stem);
        let Some(cosine) = self.semantic.likeness(&newer.path, &older.path) else {
            return false;
        };
        newer.created > older.created
            && cosine >= ALIKE
            && category(newer).is_some_and(|c| {
                category(older) == Some(c)
                    && (!NOT_VERSIONS.contains(&c)
                        || (c == Category::People && self.same_role(newer, title)))
            })
            && (title.iter().any(holds)
                || (cosine >= CHANGED_ALIKE && self.change.iter().any(holds)))
            && !self.names(title, newer, older)
    }

    /// Whether a question that asks what holds now asks of a role that
    /// the titles of two people's notes both name: "who is Priya's
    /// manager now?" of "Marcus Oyelaran - engineering manager" and the
    /// newer "Elena Vasquez - new manager". A note on someone else who
    /// merely names the older one ("Hannah, Alice's manager") is no newer
    /// holder of anything the question asks of.
    fn same_role(&self, newer: &Facts, older_title: &BTreeSet<String>) -> bool {
        if !self.asks_now {
            return false;
        }
        let newer_title = newer
            .title_stems
            .get_or_init(|| fusion::stems(self.searcher, self.fields, &newer.title));
        older_title
            .intersection(newer_title)
            .any(|stem| self.asked.contains(stem))
    }

    /// Whether the question names `older` rather than `newer`: it holds
    /// every stem of the older's title (two at least) and the newer lacks
    /// one of them, unless it asks what holds now ("which metadata
    /// database does Atlas use now?"); or it holds a word with a digit
    /// that the older holds and the newer does not.
    fn names(&self, title: &BTreeSet<String>, newer: &Facts, older: &Facts) -> bool {
        let holds = |facts: &Facts, stem: &str| {
            fusion::holds(self.searcher, self.fields, facts.address, stem)
        };
        let whole_title = title.len() >= 2
            && !self.asks_now
            && title.iter().all(|stem| self.asked.contains(stem))
            && title.iter().any(|stem| !holds(newer, stem));
        whole_title
            || self.asked.iter().any(|stem| {
                stem.chars().any(|c| c.is_ascii_digit())
                    && holds(older, stem)
                    && !holds(newer, stem)
            })
    }
}

/// The category of the document at `address`, if it has one.
fn category_of(searcher: &Searcher, fields: &Fields, address: DocAddress) -> Option<Category> {
    Category::ALL.into_iter().find(|c| {
        let term = Term::from_field_text(fields.category, c.as_str());
        fusion::has_term(searcher, &term, address)
    })
}

/// The columns of creation times, opened once per segment.
#[derive(Default)]
struct Columns {
    open: Vec<(u32, Column<tantivy::DateTime>)>,
}

impl Columns {
    /// The path, title and creation time of the document at `address`.
    /// Its stored document is read here: the search's results are read
    /// from the same blocks next, from the store reader's cache.
    fn facts_of(
        &mut self,
        searcher: &Searcher,
        fields: &Fields,
        address: DocAddress,
    ) -> Option<Facts> {
        let at = match self.open.iter().position(|c| c.0 == address.segment_ord) {
            Some(at) => at,
            None => {
                let columns = searcher.segment_reader(address.segment_ord).fast_fields();
                self.open
                    .push((address.segment_ord, columns.date(names::CREATED).ok()?));
                self.open.len() - 1
            }
        };
        let created = self.open[at].1.first(address.doc_id)?.into_timestamp_secs();
        let doc: TantivyDocument = searcher.doc(address).ok()?;
        let path = doc
            .get_first(fields.path)
            .and_then(|v| v.as_bytes())
            .and_then(super::document::path_from_key)?;
        let title = doc
            .get_first(fields.title)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned();
        Some(Facts {
            address,
            path,
            created,
            title,
            category: OnceCell::new(),
            title_stems: OnceCell::new(),
        })
    }
}
