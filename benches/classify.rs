//! How well the organizer files notes by authors it never learned from.
//!
//! `cargo bench --bench classify` runs the labeled set
//! (`tests/data/classify/labeled.jsonl`) through the organizer's order
//! with all-MiniLM-L6-v2 (`MNEMOFS_MODEL`, else the copy the tests unpack
//! under `target/tmp/`). The shipped head is trained on every labeled
//! note, so it cannot be measured on them; instead each outside author's
//! part (`unseen`, `unseen-2`, ...: notes written from the categories'
//! one-line definitions by someone who never saw the classifier) is filed
//! with a head trained on every other note, as a new user's notes would
//! be. Beside it, from the same run: the rules alone, and the rules with
//! the categories' example sentences (no head). Two heads are measured:
//! the one that reads letters alone (the organizer's without a model)
//! and the one that reads letters and the note's embedding, at several
//! penalties, the shipped one's marked; the bar a head must clear is the
//! shipped one's (`head::FLOOR`). Heads are measured as the build reads
//! them back from their bytes (weights in half precision), beside a count
//! of the notes the heads as trained would have filed elsewhere. Authors
//! are measured one per core (rayon's threads), a head per author taking
//! a minute or two.
//!
//! `MNEMOFS_WRITE_HEADS=1` also trains both heads on every labeled note
//! and writes them where the build takes them from
//! (`src/memory/head.words.bin`, `src/memory/head.all-MiniLM-L6-v2.bin`):
//! run it after changing the labeled set, the heads' fit or the first
//! prototype sentence.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;

use mnemofs::embed::Embedder;
use mnemofs::memory::classify::{self, Note};
use mnemofs::memory::head::{self, Example, Head, INVERSE_PENALTY, NONSENSE};
use mnemofs::memory::{self, Category};
use mnemofs::tasks::meaning::{self, CategoryPrototypes, Meaning};

#[path = "common/model.rs"]
mod model;

const LABELED: &str = include_str!("../tests/data/classify/labeled.jsonl");

/// The inverse penalties a head that reads embeddings is trained with:
/// the shipped one alone, as each costs a head per author (8 and 32 were
/// within a point of it with eight authors; see BENCHMARKS.md).
const PENALTIES: [f32; 1] = [16.0];

#[derive(serde::Deserialize)]
struct Labeled {
    expected: String,
    split: String,
    path: String,
    text: String,
    #[serde(default)]
    linked_from: usize,
}

/// Hits and notes per category, and where each label went.
#[derive(Default, Clone)]
struct Tally(
    BTreeMap<Category, (usize, usize)>,
    BTreeMap<(Category, Category), usize>,
);

impl Tally {
    fn add(&mut self, expected: Category, got: Category) {
        let e = self.0.entry(expected).or_default();
        e.0 += usize::from(expected == got);
        e.1 += 1;
        *self.1.entry((expected, got)).or_default() += 1;
    }

    fn total(&self) -> (usize, usize) {
        self.0
            .values()
            .fold((0, 0), |(h, n), (hh, nn)| (h + hh, n + nn))
    }

    fn merge(&mut self, other: &Tally) {
        for (c, (h, n)) in &other.0 {
            let e = self.0.entry(*c).or_default();
            e.0 += h;
            e.1 += n;
        }
        for (pair, n) in &other.1 {
            *self.1.entry(*pair).or_default() += n;
        }
    }
}

fn percent((hits, total): (usize, usize)) -> String {
    if total == 0 {
        return "-".into();
    }
    format!("{:.1}%", 100.0 * hits as f64 / total as f64)
}

fn main() {
    let model = match Embedder::load(&model::dir()) {
        Ok(model) => model,
        Err(e) => {
            println!("classify bench skipped: {e} (set MNEMOFS_MODEL, or run the tests once)");
            return;
        }
    };
    let items: Vec<Labeled> = LABELED
        .lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1))
        })
        .collect();
    let expected: Vec<Category> = items
        .iter()
        .map(|i| {
            i.expected
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e}", i.path))
        })
        .collect();
    let parsed: Vec<memory::Memory> = items
        .iter()
        .map(|i| {
            let stem = Path::new(&i.path)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            memory::parse(&stem, &i.text)
        })
        .collect();
    let notes: Vec<Note<'_>> = items
        .iter()
        .zip(&parsed)
        .map(|(i, m)| Note::of(m, &i.text, &i.path, i.linked_from))
        .collect();

    // Every note embedded on its own, as the organizer embeds one.
    let started = Instant::now();
    let texts: Vec<String> = notes.iter().map(meaning::note_text).collect();
    let texts = &texts;
    let vectors: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| model.embed(&[t.as_str()]).expect("embedded").remove(0))
        .collect();
    let by_text: std::collections::HashMap<&str, &Vec<f32>> =
        texts.iter().map(String::as_str).zip(&vectors).collect();
    let embed = |text: &str| by_text.get(text).map(|v| (*v).clone());
    let prototypes = CategoryPrototypes::new(|texts| model.embed(texts).ok())
        .expect("prototypes embedded")
        .without_head();
    let fingerprint = model
        .embed(&[CategoryPrototypes::sentences()[0].1])
        .expect("embedded")
        .remove(0);
    println!(
        "classify bench: {} labeled notes embedded in {:.1} s with {}",
        items.len(),
        started.elapsed().as_secs_f64(),
        model.name()
    );

    let mut authors: Vec<&str> = items
        .iter()
        .map(|i| i.split.as_str())
        .filter(|s| s.starts_with("unseen"))
        .collect();
    // By their numbers: `unseen`, `unseen-2`, ..., `unseen-10`.
    authors.sort_by_key(|s| {
        s.strip_prefix("unseen-")
            .map_or(1, |n| n.parse::<u32>().unwrap_or(u32::MAX))
    });
    authors.dedup();
    // With `prototypes`, the order with a model; without, the order
    // without one, with `words` as its head.
    let file = |prototypes: Option<&CategoryPrototypes>, words: Option<&Head>, i: usize| {
        let got = match prototypes {
            None => classify::filing_with(&notes[i], &[], words).map(|f| f.0),
            Some(prototypes) => meaning::classify_note(
                &notes[i],
                &[],
                Some(Meaning {
                    prototypes,
                    embed: &embed,
                }),
            ),
        };
        got.unwrap_or(Category::Inbox)
    };
    // Made-up words beside the labeled notes, learned as fragments.
    let nonsense = head::nonsense(NONSENSE);
    let nonsense_vectors: Vec<Vec<f32>> = nonsense
        .iter()
        .map(|t| model.embed(&[t.as_str()]).expect("embedded").remove(0))
        .collect();
    let examples = |keep: &dyn Fn(usize) -> bool, with_vectors: bool| -> Vec<Example> {
        let vector = |v: &Vec<f32>| if with_vectors { v.clone() } else { Vec::new() };
        (0..items.len())
            .filter(|&i| keep(i))
            .map(|i| (expected[i], vector(&vectors[i]), texts[i].clone()))
            .chain(
                nonsense
                    .iter()
                    .zip(&nonsense_vectors)
                    .map(|(t, v)| (Category::Inbox, vector(v), t.clone())),
            )
            .collect()
    };

    // Columns: rules, rules with examples, the head of letters, then a
    // head that reads embeddings per penalty.
    let columns = 3 + PENALTIES.len();
    // One author at a time per core: each is measured on its own.
    // Heads are measured as they ship: written and read back, weights in
    // half precision. Beside them, how many notes the heads as trained
    // would have filed elsewhere.
    let measure = |author: &str| -> (Vec<Tally>, Vec<f64>, usize) {
        let theirs: Vec<usize> = (0..items.len())
            .filter(|&i| items[i].split == author)
            .collect();
        let others = |i: usize| items[i].split != author;
        let mut tallies = vec![Tally::default(); columns];
        let mut training = Vec::new();
        let started = Instant::now();
        let trained = Head::train(&examples(&others, false), Vec::new()).expect("trained");
        training.push(started.elapsed().as_secs_f64());
        let words = as_shipped(&trained);
        let mut moved = 0;
        for &i in &theirs {
            moved += usize::from(file(None, Some(&words), i) != file(None, Some(&trained), i));
            tallies[0].add(expected[i], file(None, None, i));
            tallies[1].add(expected[i], file(Some(&prototypes), None, i));
            tallies[2].add(expected[i], file(None, Some(&words), i));
        }
        let others = examples(&others, true);
        for (column, penalty) in PENALTIES.iter().enumerate() {
            let started = Instant::now();
            let head =
                Head::train_penalized(&others, fingerprint.clone(), *penalty).expect("trained");
            training.push(started.elapsed().as_secs_f64());
            let unrounded = prototypes.clone().with_head(head.clone());
            let with_head = prototypes.clone().with_head(as_shipped(&head));
            assert!(with_head.has_model_head(), "the head fits its model");
            for &i in &theirs {
                let got = file(Some(&with_head), None, i);
                moved += usize::from(got != file(Some(&unrounded), None, i));
                tallies[3 + column].add(expected[i], got);
            }
        }
        (tallies, training, moved)
    };
    let measured: Vec<_> = authors.par_iter().map(|author| measure(author)).collect();
    let mut rows: Vec<(&str, Vec<Tally>)> = Vec::new();
    let mut training = Vec::new();
    let mut moved = 0;
    for (author, (tallies, times, by_rounding)) in authors.iter().zip(measured) {
        rows.push((author, tallies));
        training.extend(times);
        moved += by_rounding;
    }

    let mut pooled = vec![Tally::default(); columns];
    for (_, tallies) in &rows {
        for (p, t) in pooled.iter_mut().zip(tallies) {
            p.merge(t);
        }
    }
    let heads: Vec<String> = PENALTIES
        .iter()
        .map(|c| {
            let shipped = if *c == INVERSE_PENALTY {
                ", shipped"
            } else {
                ""
            };
            format!("letters and meaning, C = {c}{shipped}")
        })
        .collect();
    println!(
        "\nEach outside author's notes, filed with heads trained on every other note:\n\n\
         | author | notes | rules only (baseline) | rules, examples, words (baseline) | \
         letters, no model | {} |\n\
         |---|---|---|---|---|{}",
        heads.join(" | "),
        "---|".repeat(heads.len())
    );
    for (author, tallies) in rows
        .iter()
        .chain([("all outside authors", pooled.clone())].iter())
    {
        let cells: Vec<String> = tallies.iter().map(|t| percent(t.total())).collect();
        println!(
            "| {author} | {} | {} |",
            tallies[0].total().1,
            cells.join(" | ")
        );
    }
    let shipped = 3 + PENALTIES
        .iter()
        .position(|c| *c == INVERSE_PENALTY)
        .expect("the shipped penalty is measured");
    println!("\nPer category, every outside author together:\n");
    println!(
        "| category | notes | rules only | rules, examples, words | letters, no model | \
         letters and meaning |\n|---|---|---|---|---|---|"
    );
    for c in Category::ALL {
        let cell = |t: &Tally| percent(t.0.get(&c).copied().unwrap_or_default());
        let n = pooled[0].0.get(&c).map_or(0, |(_, n)| *n);
        println!(
            "| {c} | {n} | {} | {} | {} | {} |",
            cell(&pooled[0]),
            cell(&pooled[1]),
            cell(&pooled[2]),
            cell(&pooled[shipped])
        );
    }
    print_confusion("letters and meaning", &pooled[shipped]);
    training.sort_by(f64::total_cmp);
    if std::env::var_os("MNEMOFS_WRITE_HEADS").is_some() {
        let everyone = |_: usize| true;
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/memory");
        let trained: Vec<Head> = [false, true]
            .par_iter()
            .map(|with_vectors| {
                let fingerprint = if *with_vectors {
                    fingerprint.clone()
                } else {
                    Vec::new()
                };
                Head::train(&examples(&everyone, *with_vectors), fingerprint).expect("trained")
            })
            .collect();
        for (name, head) in ["head.words.bin", "head.all-MiniLM-L6-v2.bin"]
            .iter()
            .zip(trained)
        {
            let path = dir.join(name);
            std::fs::write(&path, head.to_bytes()).expect("head written");
            println!("wrote {}", path.display());
        }
    }
    println!(
        "\nheads in half precision filed {moved} of {} filings elsewhere than as trained",
        rows.iter().map(|(_, t)| t[0].total().1).sum::<usize>() * (1 + PENALTIES.len())
    );
    println!(
        "\na head trained on about {} notes in {:.1} s (median of {})",
        items.len() - items.len() / authors.len().max(1),
        training[training.len() / 2],
        training.len()
    );
}

/// `head` as the build reads it back from its file.
fn as_shipped(head: &Head) -> Head {
    Head::from_bytes(&head.to_bytes()).expect("a head reads back")
}

/// Where each outside author's notes went (rows: the label).
fn print_confusion(name: &str, tally: &Tally) {
    println!("\nConfusion, {name} (rows: the label, columns: where it was filed):\n");
    let names: Vec<&str> = Category::ALL.iter().map(|c| &c.as_str()[..4]).collect();
    println!(
        "| | {} |\n|---|{}",
        names.join(" | "),
        "---|".repeat(names.len())
    );
    for expected in Category::ALL {
        let cells: Vec<String> = Category::ALL
            .iter()
            .map(|got| {
                let n = tally.1.get(&(expected, *got)).copied().unwrap_or(0);
                match (n, expected == *got) {
                    (0, _) => String::new(),
                    (n, true) => format!("**{n}**"),
                    (n, false) => n.to_string(),
                }
            })
            .collect();
        println!(
            "| **{}** | {} |",
            &expected.as_str()[..4],
            cells.join(" | ")
        );
    }
}
