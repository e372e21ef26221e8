//! The agent store of `tests/data/agent-store`: 157 notes an agent keeps
//! for one user, in category folders with frontmatter, and 133 questions
//! to them, each naming the notes that answer it (see the data's README).
//!
//! Unlike the LoCoMo memories, the notes go into the store at their own
//! paths and byte for byte, so a hit's path is compared with `expect` as
//! it is. A question is answered when any of its expected notes comes
//! back; its rank is that of the first one that does. The ten questions
//! nothing answers are kept out of hit@k and MRR and measured instead by
//! how high the best score still is, against the questions that have an
//! answer: a system that tells them apart scores them lower.
//!
//! The temporal questions name a month without a year, which the index
//! reads as the latest such month not after today: they are about 2026
//! only until the month comes round in 2027.

use std::error::Error;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use super::score;
use super::systems::{self, Bm25, Hit, Mnemofs};

/// The data, beside the tests that read single notes of it.
pub fn default_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/agent-store")
}

/// A question to the store, as a line of `questions.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct Question {
    /// As an agent would ask it.
    pub q: String,
    /// The notes that answer it, by path; empty when none does.
    pub expect: Vec<String>,
    /// What it tries (`direct`, `paraphrase`, `typo`, ...).
    pub kind: String,
}

impl Question {
    fn answerable(&self) -> bool {
        !self.expect.is_empty()
    }
}

/// The notes, as a store's files, and the questions.
pub struct AgentStore {
    /// Paths relative to `notes/`, with `/` between folders, and the text;
    /// sorted by path.
    pub notes: Vec<(String, String)>,
    /// In the file's order.
    pub questions: Vec<Question>,
}

impl AgentStore {
    /// Reads `notes/` and `questions.jsonl` under `dir`.
    pub fn load(dir: &Path) -> Result<AgentStore, Box<dyn Error>> {
        let root = dir.join("notes");
        let mut notes = Vec::new();
        read_notes(&root, &root, &mut notes)
            .map_err(|e| format!("agent store {}: {e}", root.display()))?;
        notes.sort();
        let path = dir.join("questions.jsonl");
        let mut questions = Vec::new();
        let lines =
            BufReader::new(File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?);
        for (n, line) in lines.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let question: Question = serde_json::from_str(&line)
                .map_err(|e| format!("{} line {}: {e}", path.display(), n + 1))?;
            for expected in &question.expect {
                if notes
                    .binary_search_by(|(p, _)| p.as_str().cmp(expected))
                    .is_err()
                {
                    return Err(
                        format!("{} line {}: no note {expected}", path.display(), n + 1).into(),
                    );
                }
            }
            questions.push(question);
        }
        Ok(AgentStore { notes, questions })
    }

    /// The kinds of the answerable questions, in the order they first come.
    fn kinds(&self) -> Vec<&str> {
        let mut kinds: Vec<&str> = Vec::new();
        for q in self.questions.iter().filter(|q| q.answerable()) {
            if !kinds.contains(&q.kind.as_str()) {
                kinds.push(&q.kind);
            }
        }
        kinds
    }
}

/// Every file below `dir`, at its path relative to `root`.
fn read_notes(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            read_notes(root, &path, out)?;
            continue;
        }
        let relative = path.strip_prefix(root).unwrap_or(&path);
        let key: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        out.push((key.join("/"), std::fs::read_to_string(&path)?));
    }
    Ok(())
}

/// How one system answered one question.
struct Asked {
    /// The rank (from 1) of the first expected note returned.
    first: Option<usize>,
    /// The best score; 0 when nothing came back, the surest "no answer".
    top: f32,
    hits: usize,
    latency: Duration,
    failed: bool,
}

/// The agent store's figures: every system's answer to every question.
pub struct AgentResult {
    notes: usize,
    index_time: Duration,
    names: &'static [&'static str],
    /// Per system, in the order of the store's questions.
    asked: Vec<Vec<Asked>>,
}

/// Builds mnemofs and the baseline on the notes and asks every system
/// every question, alternating between them.
pub fn measure(
    store: &AgentStore,
    model: Option<&Path>,
    mut dump: Option<&mut BufWriter<File>>,
) -> Result<AgentResult, Box<dyn Error>> {
    let t = Instant::now();
    let mnemofs =
        Mnemofs::build(&store.notes, model).map_err(|e| format!("agent store: mnemofs: {e}"))?;
    let index_time = t.elapsed();
    let bm25 = Bm25::build(&store.notes)?;
    let names = systems::names(model.is_some());
    let systems = systems::in_order(&mnemofs, &bm25, model.is_some());
    let mut asked: Vec<Vec<Asked>> = names.iter().map(|_| Vec::new()).collect();
    for question in &store.questions {
        for (i, system) in systems.iter().enumerate() {
            let t = Instant::now();
            let answer = system.search(&question.q);
            let latency = t.elapsed();
            let (hits, error) = match answer {
                Ok(hits) => (hits, None),
                Err(e) => (Vec::new(), Some(e.to_string())),
            };
            let first = hits
                .iter()
                .position(|h| question.expect.contains(&h.path))
                .map(|r| r + 1);
            if let Some(dump) = dump.as_deref_mut() {
                let line = dump_line(names[i], question, &hits, first, latency, error.as_deref());
                writeln!(dump, "{line}")?;
            }
            asked[i].push(Asked {
                first,
                top: hits.first().map_or(0.0, |h| h.score),
                hits: hits.len(),
                latency,
                failed: error.is_some(),
            });
        }
    }
    Ok(AgentResult {
        notes: store.notes.len(),
        index_time,
        names,
        asked,
    })
}

/// One answer as a line of the dump.
fn dump_line(
    system: &str,
    question: &Question,
    hits: &[Hit],
    first: Option<usize>,
    latency: Duration,
    error: Option<&str>,
) -> serde_json::Value {
    let results: Vec<_> = hits
        .iter()
        .enumerate()
        .map(|(rank, hit)| {
            json!({
                "rank": rank + 1,
                "path": hit.path,
                "score": hit.score,
                "expected": question.expect.contains(&hit.path),
            })
        })
        .collect();
    let mut line = json!({
        "system": system,
        "unit": "agent",
        "kind": question.kind,
        "question": question.q,
        "expect": question.expect,
        "results": results,
        "first_hit": first,
        "latency_ms": latency.as_secs_f64() * 1e3,
    });
    if let Some(error) = error {
        line["error"] = error.into();
    }
    line
}

/// The middle value (the lower one of an even count), as `p50` elsewhere.
fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> Option<T> {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    values.get(values.len().saturating_sub(1) / 2).copied()
}

/// The answers to the questions `keep` picks by their place in the list.
fn picked<'a>(
    asked: &'a [Asked],
    keep: impl Fn(usize) -> bool + 'a,
) -> impl Iterator<Item = &'a Asked> + 'a {
    asked
        .iter()
        .enumerate()
        .filter(move |(i, _)| keep(*i))
        .map(|(_, a)| a)
}

/// hit@1, hit@5 and MRR of some answers.
fn figures<'a>(answers: impl Iterator<Item = &'a Asked>) -> [f64; 3] {
    let (mut n, mut sums) = (0usize, [0.0f64; 3]);
    for a in answers {
        n += 1;
        if let Some(rank) = a.first {
            sums[0] += f64::from(u8::from(rank == 1));
            sums[1] += f64::from(u8::from(rank <= 5));
            sums[2] += 1.0 / rank as f64;
        }
    }
    sums.map(|s| s / n.max(1) as f64)
}

const FIGURES: [&str; 3] = ["hit@1", "hit@5", "MRR"];

/// The three tables of the agent store: the answerable questions as a
/// whole, by kind, and the best scores of the unanswerable ones.
pub fn print(store: &AgentStore, r: &AgentResult) {
    let answerable: Vec<bool> = store.questions.iter().map(Question::answerable).collect();
    let (n, total) = (answerable.iter().filter(|a| **a).count(), answerable.len());
    println!(
        "{} notes, {n} answerable questions and {} not; mnemofs wrote, indexed (and embedded) them in {:.2} s; p50 over all {total} questions",
        r.notes,
        total - n,
        r.index_time.as_secs_f64(),
    );
    let mut header = vec!["system".to_string()];
    header.extend(FIGURES.map(String::from));
    header.push("p50".into());
    let rows: Vec<Vec<String>> = r
        .names
        .iter()
        .zip(&r.asked)
        .map(|(name, asked)| {
            let mut row = vec![name.to_string()];
            row.extend(figures(picked(asked, |i| answerable[i])).map(|f| format!("{f:.3}")));
            let p50 = median(asked.iter().map(|a| a.latency).collect()).unwrap_or_default();
            row.push(format!("{:.2} ms", p50.as_secs_f64() * 1e3));
            row
        })
        .collect();
    print!("{}", score::render(&header, &rows));
    for (name, asked) in r.names.iter().zip(&r.asked) {
        let failed = asked.iter().filter(|a| a.failed).count();
        if failed > 0 {
            println!("{name}: {failed} questions failed (counted as no result)");
        }
    }

    let kinds = store.kinds();
    let mut header = vec!["agent store by kind".to_string()];
    header.extend(kinds.iter().map(|k| k.to_string()));
    let kind_of = |i: usize| store.questions[i].kind.as_str();
    let mut counts = vec!["(questions)".to_string()];
    counts.extend(kinds.iter().map(|k| {
        (0..total)
            .filter(|&i| answerable[i] && kind_of(i) == *k)
            .count()
            .to_string()
    }));
    let mut rows = vec![counts];
    for (f, figure) in FIGURES.iter().enumerate() {
        for (name, asked) in r.names.iter().zip(&r.asked) {
            let mut row = vec![format!("{figure} {name}")];
            row.extend(kinds.iter().map(|k| {
                let by_kind = figures(picked(asked, |i| answerable[i] && kind_of(i) == *k));
                format!("{:.3}", by_kind[f])
            }));
            rows.push(row);
        }
    }
    println!();
    print!("{}", score::render(&header, &rows));

    let header = [
        "top score, median",
        "answerable",
        "unanswerable",
        "no result (unanswerable)",
    ]
    .map(String::from);
    let rows: Vec<Vec<String>> = r
        .names
        .iter()
        .zip(&r.asked)
        .map(|(name, asked)| {
            let top = |want: bool| {
                let tops = picked(asked, |i| answerable[i] == want)
                    .map(|a| a.top)
                    .collect();
                median(tops).map_or_else(|| "-".into(), |s| format!("{s:.3}"))
            };
            let empty = picked(asked, |i| !answerable[i])
                .filter(|a| a.hits == 0)
                .count();
            vec![
                name.to_string(),
                top(true),
                top(false),
                format!("{empty} of {}", total - n),
            ]
        })
        .collect();
    println!();
    print!("{}", score::render(&header, &rows));
}
