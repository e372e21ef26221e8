//! `cargo bench --bench recall`: how often search finds what answers a
//! question, on the public LoCoMo conversations, for mnemofs and for plain
//! BM25 measured in the same run over the same memories.
//!
//! The protocol is the one in the data's README: one store per
//! conversation and per unit (a dialog turn, a whole session, or an
//! observation fact per memory), the questions of categories 1 to 4 whose
//! evidence some memory of the unit covers, asked exactly as written, the
//! top 10 memories of each system scored by the evidence turns they cover
//! (recall@1, @5, @10 and hit@5; recall@5 per category). Latency is per
//! question, p50 and p99. This is a measurement, not a test: nothing here
//! fails on a low figure.
//!
//! A second table asks the same systems about the agent store in
//! `tests/data/agent-store`: 157 notes at their own paths in category
//! folders, and 133 questions of nine kinds, each naming the notes that
//! answer it. It gives hit@1, hit@5 and MRR by kind, and for the ten
//! questions nothing answers, how high the best score still comes.
//!
//! Environment:
//! - `MNEMOFS_LOCOMO`: the data file (default
//!   `../shared/data/locomo/locomo5.json` beside the crate; the full
//!   `locomo10.json` works too). Absent, the bench says so and skips
//!   LoCoMo; the data's licence keeps it out of this repository.
//! - `MNEMOFS_RECALL_UNITS=turn,session,observation,agent`: which units
//!   run (`agent` is the agent store).
//! - `MNEMOFS_RECALL_DUMP=path`: every answer as a JSON line (system,
//!   unit, question, category, answer, evidence and its text, each
//!   returned memory with its score, turns and, but for sessions, text;
//!   recall, hit@5 and the rank of the first hit), for reading the misses.
//!   The agent store's lines have unit `agent`, the question's kind and
//!   expected paths, each returned path with its score, and the rank of
//!   the first expected one.
//! - `MNEMOFS_RECALL_QUESTIONS=fast`: questions embedded in 8 bits, as
//!   `search: {questions: fast}` asks.
//!
//! Modules live under `benches/recall/` (a `.rs` file directly in
//! `benches/` would become a bench target of its own).

#[path = "recall/agent.rs"]
mod agent;
#[path = "recall/locomo.rs"]
mod locomo;
#[path = "recall/score.rs"]
mod score;
#[path = "recall/systems.rs"]
mod systems;

use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use locomo::{Conversation, Memory, Oddities, Question, Unit};
use score::{Scored, Tally};
use systems::{Bm25, Hit, Mnemofs};

/// What a run measures, from the environment.
struct Config {
    data: PathBuf,
    units: Vec<Unit>,
    /// Whether the agent store runs.
    agent: bool,
    dump: Option<PathBuf>,
    model: Option<PathBuf>,
}

impl Config {
    fn from_env() -> Result<Config, String> {
        let data = std::env::var_os("MNEMOFS_LOCOMO")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/locomo/locomo5.json")
            });
        let (mut units, mut agent) = (Vec::new(), false);
        let list = std::env::var("MNEMOFS_RECALL_UNITS").unwrap_or_default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match Unit::parse(name) {
                Some(unit) => units.push(unit),
                None if name == "agent" => agent = true,
                None => {
                    return Err(format!(
                        "MNEMOFS_RECALL_UNITS: {name:?} is not one of turn, session, observation, agent"
                    ));
                }
            }
        }
        if units.is_empty() && !agent {
            (units, agent) = (Unit::ALL.to_vec(), true);
        }
        let dump = std::env::var_os("MNEMOFS_RECALL_DUMP")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        // The model the tests unpack, unless another is named.
        let model = std::env::var_os("MNEMOFS_MODEL")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                let tests =
                    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tmp/all-MiniLM-L6-v2");
                tests.join("model.safetensors").is_file().then_some(tests)
            });
        Ok(Config {
            data,
            units,
            agent,
            dump,
            model,
        })
    }
}

/// One unit's figures.
struct UnitResult {
    unit: Unit,
    memories: usize,
    stores: usize,
    index_time: Duration,
    tallies: Vec<Tally>,
    names: &'static [&'static str],
}

fn main() -> ExitCode {
    let started = Instant::now();
    let cfg = match Config::from_env() {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("recall: {e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&cfg, started) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("recall: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cfg: &Config, started: Instant) -> Result<(), Box<dyn Error>> {
    let mut dump = match &cfg.dump {
        Some(path) => {
            Some(BufWriter::new(File::create(path).map_err(|e| {
                format!("MNEMOFS_RECALL_DUMP {}: {e}", path.display())
            })?))
        }
        None => None,
    };
    match &cfg.model {
        Some(model) => println!("model: {} (fused, words and meaning rows)", model.display()),
        None => println!(
            "model: none (set MNEMOFS_MODEL, or run the tests once to unpack all-MiniLM-L6-v2): words only"
        ),
    }
    if !cfg.units.is_empty() {
        if cfg.data.exists() {
            run_locomo(cfg, dump.as_mut())?;
        } else {
            println!(
                "recall: no LoCoMo data at {} (set MNEMOFS_LOCOMO); LoCoMo skipped",
                cfg.data.display()
            );
        }
    }
    if cfg.agent {
        let store = agent::AgentStore::load(&agent::default_dir())?;
        println!(
            "\nrecall on the agent store: {}; top {} notes per question",
            agent::default_dir().display(),
            systems::TOP,
        );
        let result = agent::measure(&store, cfg.model.as_deref(), dump.as_mut())?;
        agent::print(&store, &result);
    }
    if let Some(mut dump) = dump {
        dump.flush()?;
        if let Some(path) = &cfg.dump {
            println!("answers written to {}", path.display());
        }
    }
    println!("wall time {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The LoCoMo tables: every unit of `cfg`, then recall@5 by category.
fn run_locomo(cfg: &Config, mut dump: Option<&mut BufWriter<File>>) -> Result<(), Box<dyn Error>> {
    let (conversations, odd) = locomo::load(&cfg.data)?;
    println!(
        "recall on LoCoMo: {} ({} conversations); top {} memories per question",
        cfg.data.display(),
        conversations.len(),
        systems::TOP,
    );
    print_oddities(&odd);
    let mut results = Vec::new();
    for &unit in &cfg.units {
        let result = measure_unit(
            unit,
            &conversations,
            cfg.model.as_deref(),
            dump.as_deref_mut(),
        )?;
        print_unit(&result);
        results.push(result);
    }
    print_categories(&results);
    Ok(())
}

/// Builds both systems on each conversation's store of `unit` and asks
/// them every answerable question, alternating between them.
fn measure_unit(
    unit: Unit,
    conversations: &[Conversation],
    model: Option<&std::path::Path>,
    mut dump: Option<&mut BufWriter<File>>,
) -> Result<UnitResult, Box<dyn Error>> {
    let names = systems::names(model.is_some());
    let mut result = UnitResult {
        unit,
        memories: 0,
        stores: 0,
        index_time: Duration::ZERO,
        tallies: names.iter().map(|_| Tally::default()).collect(),
        names,
    };
    for conversation in conversations {
        let memories = conversation.memories(unit);
        let questions = locomo::answerable(&conversation.questions, &memories);
        if memories.is_empty() || questions.is_empty() {
            continue;
        }
        result.memories += memories.len();
        result.stores += 1;
        let files = systems::memory_files(&memories);
        let t = Instant::now();
        let mnemofs = Mnemofs::build(&files, model)
            .map_err(|e| format!("{} {}: mnemofs: {e}", conversation.id, unit.name()))?;
        result.index_time += t.elapsed();
        // The baseline reads the bodies alone: a memory's date, which
        // mnemofs reads from its frontmatter, is no words of it.
        let bodies: Vec<(String, String)> = files
            .iter()
            .zip(&memories)
            .map(|((path, _), memory)| (path.clone(), memory.body.clone()))
            .collect();
        let bm25 = Bm25::build(&bodies)?;
        let systems = systems::in_order(&mnemofs, &bm25, model.is_some());
        for question in questions {
            for (i, system) in systems.iter().enumerate() {
                let t = Instant::now();
                let answer = system.search(&question.text);
                let latency = t.elapsed();
                let tally = &mut result.tallies[i];
                let (hits, scored, error) = match answer {
                    Ok(hits) => {
                        let scored = score::score(&question.evidence, &hits, &memories);
                        tally.add(question.category, &scored, hits.len(), latency);
                        (hits, scored, None)
                    }
                    Err(e) => {
                        tally.failed(question.category, latency);
                        let nothing = score::score(&question.evidence, &[], &memories);
                        (Vec::new(), nothing, Some(e.to_string()))
                    }
                };
                if let Some(dump) = dump.as_deref_mut() {
                    let line = Answer {
                        system: result.names[i],
                        unit,
                        conversation,
                        question,
                        memories: &memories,
                        hits: &hits,
                        scored: &scored,
                        latency,
                        error,
                    }
                    .to_json();
                    writeln!(dump, "{line}")?;
                }
            }
        }
    }
    Ok(result)
}

/// One answer as a line of the dump.
struct Answer<'a> {
    system: &'a str,
    unit: Unit,
    conversation: &'a Conversation,
    question: &'a Question,
    memories: &'a [Memory],
    hits: &'a [Hit],
    scored: &'a Scored,
    latency: Duration,
    error: Option<String>,
}

impl Answer<'_> {
    fn to_json(&self) -> Value {
        let q = self.question;
        let evidence_text: serde_json::Map<String, Value> = q
            .evidence
            .iter()
            .map(|t| {
                let line = self.conversation.line(*t).map_or(Value::Null, Value::from);
                (t.to_string(), line)
            })
            .collect();
        let results: Vec<Value> = self
            .hits
            .iter()
            .enumerate()
            .map(|(rank, hit)| {
                let covers = hit.memory.map_or(&[][..], |m| &self.memories[m].covers[..]);
                let evidence: Vec<String> = covers
                    .iter()
                    .filter(|t| q.evidence.contains(t))
                    .map(ToString::to_string)
                    .collect();
                let mut result = json!({
                    "rank": rank + 1,
                    "path": hit.path,
                    "score": hit.score,
                    "turns": covers.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "evidence": evidence,
                });
                // A session is too long to repeat ten times a line.
                if self.unit != Unit::Session
                    && let Some(m) = hit.memory
                {
                    result["text"] = Value::from(self.memories[m].body.as_str());
                }
                result
            })
            .collect();
        let mut line = json!({
            "system": self.system,
            "unit": self.unit.name(),
            "conversation": self.conversation.id,
            "category": q.category,
            "question": q.text,
            "answer": q.answer,
            "evidence": q.evidence.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "evidence_text": evidence_text,
            "results": results,
            "recall@1": self.scored.recall[0],
            "recall@5": self.scored.recall[1],
            "recall@10": self.scored.recall[2],
            "hit@5": self.scored.hit5,
            "first_hit": self.scored.first_hit,
            "latency_ms": self.latency.as_secs_f64() * 1e3,
        });
        if let Some(error) = &self.error {
            line["error"] = Value::from(error.as_str());
        }
        line
    }
}

fn print_oddities(odd: &Oddities) {
    let mut notes = Vec::new();
    if odd.joined_evidence > 0 {
        notes.push(format!(
            "{} evidence strings hold several ids (split)",
            odd.joined_evidence
        ));
    }
    if odd.nested_evidence > 0 {
        notes.push(format!(
            "{} observations cite a nested list (flattened)",
            odd.nested_evidence
        ));
    }
    if !odd.malformed_evidence.is_empty() {
        notes.push(format!(
            "malformed evidence dropped: {}",
            odd.malformed_evidence.join(", ")
        ));
    }
    if odd.no_evidence > 0 {
        notes.push(format!(
            "{} questions of categories 1-4 have no evidence (left out)",
            odd.no_evidence
        ));
    }
    if !odd.missing_turns.is_empty() {
        notes.push(format!(
            "{} evidence turns are not in their conversation (counted, never covered)",
            odd.missing_turns.len()
        ));
    }
    if odd.uncited_facts > 0 {
        notes.push(format!(
            "{} observation facts cite no turn (kept, cover nothing)",
            odd.uncited_facts
        ));
    }
    if odd.unreadable_dates > 0 {
        notes.push(format!(
            "{} session dates unreadable (no created_at)",
            odd.unreadable_dates
        ));
    }
    if !notes.is_empty() {
        println!("data: {}", notes.join("; "));
    }
}

fn print_unit(r: &UnitResult) {
    let questions = r.tallies[0].questions();
    println!(
        "\n{}: {} memories in {} stores, {} questions; mnemofs wrote, indexed (and embedded) them in {:.2} s",
        r.unit.name(),
        r.memories,
        r.stores,
        questions,
        r.index_time.as_secs_f64(),
    );
    let rows: Vec<Vec<String>> = r
        .names
        .iter()
        .zip(&r.tallies)
        .map(|(name, tally)| {
            let mut row = vec![name.to_string()];
            row.extend(tally.cells());
            row
        })
        .collect();
    print!("{}", score::render(&score::unit_header(), &rows));
    for (name, tally) in r.names.iter().zip(&r.tallies) {
        if tally.errors() > 0 {
            println!(
                "{name}: {} questions failed (counted as no result)",
                tally.errors()
            );
        }
    }
}

fn print_categories(results: &[UnitResult]) {
    if results.is_empty() {
        return;
    }
    let mut rows = Vec::new();
    for r in results {
        let mut counts = vec![format!("{} (questions)", r.unit.name())];
        counts.extend(r.tallies[0].category_counts());
        rows.push(counts);
        for (name, tally) in r.names.iter().zip(&r.tallies) {
            let mut row = vec![format!("{} {name}", r.unit.name())];
            row.extend(tally.category_cells());
            rows.push(row);
        }
    }
    println!();
    print!("{}", score::render(&score::category_header(), &rows));
}
