//! memory-cli's commands over the operations layer: write, read, delete,
//! list, the lifecycle steps, ingest, export and import. Each parses,
//! sends its request through a `Session` (a daemon, or the store under
//! its lock) and prints the answer: text, or `--json` (one object, or
//! JSON lines for lists).

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::{StoreArgs, session};
use crate::front::{ingest, jsonl};
use crate::ops::{NewMemory, RecordFilter, Request, Response, Step};

/// memory-cli's commands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum MemoryCommand {
    /// Write a new memory and print its id.
    Write {
        /// The content ("-" reads stdin).
        content: String,
        /// Its category (it then goes to <category>/).
        #[arg(long)]
        category: Option<String>,
        /// Tags, comma-separated.
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// global or agent:NAME.
        #[arg(long)]
        scope: Option<String>,
        /// Who wrote it.
        #[arg(long)]
        source: Option<String>,
        /// Its title.
        #[arg(long)]
        title: Option<String>,
        /// Where it goes, relative to the store.
        #[arg(long)]
        path: Option<String>,
        /// Its type (memory, decision, task, ...).
        #[arg(long = "type")]
        kind: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a memory (by id, path, title or alias).
    Read {
        /// The memory.
        reference: String,
        #[command(flatten)]
        at: StoreArgs,
        /// memory-cli's Memory object plus path, title, type and frontmatter.
        #[arg(long)]
        json: bool,
    },
    /// Delete a memory (by id, path, title or alias).
    Delete {
        /// The memory.
        reference: String,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List memories matching every filter given, by path.
    List {
        /// inbox, organized or archived.
        #[arg(long)]
        phase: Option<String>,
        /// A category.
        #[arg(long)]
        category: Option<String>,
        /// A source.
        #[arg(long)]
        source: Option<String>,
        /// A tag.
        #[arg(long)]
        tag: Option<String>,
        /// A type.
        #[arg(long = "type")]
        kind: Option<String>,
        /// Most memories listed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[command(flatten)]
        at: StoreArgs,
        /// JSON lines of records.
        #[arg(long)]
        json: bool,
    },
    /// Move an inbox memory into its category now.
    Upgrade {
        /// The memory.
        reference: String,
        /// The category [default: its frontmatter's, else the classifier's].
        #[arg(long)]
        category: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Archive organized memories unused past the decay threshold, now.
    Decay {
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the interval's organizer tasks once (inbox, expiry, upgrades,
    /// decay), then merge duplicates.
    Consolidate {
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record [[wikilinks]] by id; report those that name nothing.
    ResolveLinks {
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Announce the reminders that are due, and list them.
    Notify {
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bring in notes from claude, logseq, obsidian, car-agent,
    /// fingersaver, or all; running it again adds nothing.
    Ingest {
        /// The source.
        #[arg(long, value_parser = ["claude", "logseq", "obsidian", "car-agent", "fingersaver", "all"])]
        source: String,
        /// The source's folder (or file) instead of its usual place.
        #[arg(long)]
        path: Option<PathBuf>,
        /// Keep the source's folders (<source>/<path>) instead of inbox/.
        #[arg(long)]
        keep_folders: bool,
        #[command(flatten)]
        at: StoreArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write every memory as a JSON line (the records `read --json` prints).
    Export {
        /// The file [default: stdout].
        #[arg(long)]
        output: Option<PathBuf>,
        /// Only this category.
        #[arg(long)]
        category: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
    },
    /// Read JSON lines (mnemofs's export or memory-cli's) into the store;
    /// importing again adds nothing.
    Import {
        /// The file [default: stdin].
        #[arg(long)]
        input: Option<PathBuf>,
        #[command(flatten)]
        at: StoreArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs one of memory-cli's commands.
pub(super) fn run(command: MemoryCommand) -> anyhow::Result<()> {
    match command {
        MemoryCommand::Write {
            content,
            category,
            tags,
            scope,
            source,
            title,
            path,
            kind,
            at,
            json,
        } => {
            let content = if content == "-" {
                std::io::read_to_string(std::io::stdin()).context("cannot read stdin")?
            } else {
                content
            };
            if content.trim().is_empty() {
                bail!("nothing to write: the content is empty");
            }
            let session = session(&at.target(None)?, None)?;
            let Response::Memory { path, id } = session.call(Request::WriteMemory(NewMemory {
                content,
                path,
                title,
                category,
                tags,
                scope,
                source,
                kind,
            }))?
            else {
                bail!("unexpected answer to write");
            };
            if json {
                println!("{}", serde_json::json!({"id": id, "path": path}));
            } else {
                println!("{}", id.unwrap_or(path));
            }
        }
        MemoryCommand::Read {
            reference,
            at,
            json,
        } => {
            let session = session(&at.target(None)?, None)?;
            let Response::Record { record } = session.call(Request::Record { reference })? else {
                bail!("unexpected answer to read");
            };
            if json {
                println!("{}", serde_json::to_string(&record)?);
            } else {
                print!("{}", record.content);
            }
        }
        MemoryCommand::Delete {
            reference,
            at,
            json,
        } => {
            let session = session(&at.target(None)?, None)?;
            let Response::Memory { path, id } =
                session.call(Request::DeleteMemory { reference })?
            else {
                bail!("unexpected answer to delete");
            };
            if json {
                println!("{}", serde_json::json!({"deleted": path, "id": id}));
            } else {
                println!("deleted {path}");
            }
        }
        MemoryCommand::List {
            phase,
            category,
            source,
            tag,
            kind,
            limit,
            at,
            json,
        } => {
            let session = session(&at.target(None)?, None)?;
            let Response::Records { page } = session.call(Request::Records {
                filter: RecordFilter {
                    phase,
                    category,
                    tag,
                    kind,
                    source,
                },
                after: None,
                limit,
            })?
            else {
                bail!("unexpected answer to list");
            };
            for record in &page.records {
                if json {
                    println!("{}", serde_json::to_string(record)?);
                } else {
                    println!(
                        "{}  {}  {}",
                        record.id.as_deref().unwrap_or("-"),
                        record.path,
                        record.title
                    );
                }
            }
        }
        MemoryCommand::Upgrade {
            reference,
            category,
            at,
            json,
        } => {
            let session = session(&at.target(None)?, None)?;
            print_step(
                session.call(Request::Upgrade {
                    reference,
                    category,
                })?,
                json,
            )?;
        }
        MemoryCommand::Decay { at, json } => step(at, Step::Decay, json)?,
        MemoryCommand::Consolidate { at, json } => step(at, Step::Consolidate, json)?,
        MemoryCommand::ResolveLinks { at, json } => step(at, Step::ResolveLinks, json)?,
        MemoryCommand::Notify { at, json } => step(at, Step::Notify, json)?,
        MemoryCommand::Ingest {
            source,
            path,
            keep_folders,
            at,
            json,
        } => {
            let sources = if source == "all" {
                if path.is_some() {
                    bail!("--path names one source's folder; use it with one --source");
                }
                ingest::Source::ALL.to_vec()
            } else {
                ingest::Source::ALL
                    .into_iter()
                    .filter(|s| s.name() == source)
                    .collect()
            };
            let path = path.map(|p| std::path::absolute(&p)).transpose()?;
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .context("HOME is not set")?;
            let session = session(&at.target(None)?, None)?;
            let mut progress = crate::progress::Progress::start("reading notes", "notes");
            let summary = ingest::ingest(
                &|r| session.call(r),
                &ingest::Plan {
                    sources,
                    path,
                    keep_folders,
                    home,
                },
                &mut |done, total| progress.set(done, total),
            );
            progress.finish();
            print_summary(&summary?, json)?;
        }
        MemoryCommand::Export {
            output,
            category,
            at,
        } => {
            let session = session(&at.target(None)?, None)?;
            let filter = RecordFilter {
                category,
                ..RecordFilter::default()
            };
            let mut out: Box<dyn std::io::Write> = match &output {
                Some(file) => Box::new(std::io::BufWriter::new(
                    std::fs::File::create(file)
                        .with_context(|| format!("cannot write {}", file.display()))?,
                )),
                None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            };
            let count = jsonl::export(&|r| session.call(r), &filter, &|_| true, &mut out)?;
            if output.is_some() {
                eprintln!("exported {count} memories");
            }
        }
        MemoryCommand::Import { input, at, json } => {
            let mut reader: Box<dyn std::io::BufRead> = match &input {
                Some(file) => Box::new(std::io::BufReader::new(
                    std::fs::File::open(file)
                        .with_context(|| format!("cannot read {}", file.display()))?,
                )),
                None => Box::new(std::io::BufReader::new(std::io::stdin().lock())),
            };
            let session = session(&at.target(None)?, None)?;
            let progress = crate::progress::Progress::start("importing", "lines");
            let summary = jsonl::import(&|r| session.call(r), &mut reader, &mut |s| {
                progress.say(&format!("importing: {}", s.line()))
            });
            progress.finish();
            print_summary(&summary?, json)?;
        }
    }
    Ok(())
}

fn step(at: StoreArgs, step: Step, json: bool) -> anyhow::Result<()> {
    let session = session(&at.target(None)?, None)?;
    print_step(session.call(Request::Step { step })?, json)
}

fn print_step(answer: Response, json: bool) -> anyhow::Result<()> {
    let Response::Step { report } = answer else {
        bail!("unexpected answer to a lifecycle step");
    };
    if json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    match &report.path {
        Some(path) => println!("{}: moved to {path}", report.step),
        None => println!("{}: {}", report.step, report.report.summary()),
    }
    for due in &report.due {
        println!("due {}  {}  ({})", due.due_at, due.title, due.path);
    }
    for skipped in &report.report.skipped {
        println!("skipped {}: {}", skipped.path, skipped.reason);
    }
    for note in &report.notes {
        eprintln!("mnemofs: {note}");
    }
    for error in &report.report.errors {
        eprintln!("mnemofs: error: {error}");
    }
    Ok(())
}

fn print_summary(summary: &crate::front::batch::Summary, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(summary)?);
    } else {
        println!("{}", summary.line());
        for reason in summary.reasons() {
            println!("skipped {reason}");
        }
    }
    Ok(())
}
