//! memory-cli's commands over the operations layer: write, read, delete,
//! list, link, unlink, backlinks, the lifecycle steps, ingest, export and
//! import, and agent mode (`search` sits with mnemofs's own commands in
//! `cli.rs`, which it predates). Each parses, sends its request through a
//! `Session` (a daemon, or the store under its lock) and prints the
//! answer: text, or `--json` (one object, or JSON lines for lists).
//!
//! Through a daemon, a command that writes returns once the daemon's index
//! has the change (`Request::Settle`), so the next command finds it.

use std::path::PathBuf;

use anyhow::{Context, bail};

use super::{StoreArgs, session};
use crate::front::{agent, ingest, jsonl};
use crate::ops::{NewMemory, RecordFilter, Request, Response, Scope, Step};

/// memory-cli's commands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum MemoryCommand {
    /// Write a new memory and print its id.
    Write {
        /// The content ("-" reads stdin). A whole note may open with its own frontmatter: its title, tags, category, type, status, scope, source and created_at count where no flag names them, and its other fields are kept.
        #[arg(allow_hyphen_values = true)]
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
        /// Its status (open, active, done, accepted, ...).
        #[arg(long)]
        status: Option<String>,
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
        /// What agent:NAME may see: global memories and its own (`global`:
        /// only global ones).
        #[arg(long)]
        scope: Option<String>,
        /// Most memories listed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[command(flatten)]
        at: StoreArgs,
        /// JSON lines of records.
        #[arg(long)]
        json: bool,
    },
    /// Link two memories both ways: each one's id goes into the other's
    /// `links:`.
    Link {
        /// One memory (id, path, title or alias).
        a: String,
        /// The other.
        b: String,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Take away the link between two memories, both ways (from `links:`;
    /// [[wikilinks]] in the text stay).
    Unlink {
        /// One memory (id, path, title or alias).
        a: String,
        /// The other.
        b: String,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the memories that link to a memory ([[wikilinks]], relation
    /// lines, ids in `links:`).
    Backlinks {
        /// The memory (id, path, title or alias).
        reference: String,
        /// Most memories listed.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[command(flatten)]
        at: StoreArgs,
        /// JSON lines.
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
        /// Put notes in <source>/<path in the source> (Obsidian's and
        /// Logseq's default).
        #[arg(long, conflicts_with = "into_inbox")]
        keep_folders: bool,
        /// Put notes in inbox/ for the organizer to file (memory-cli's way;
        /// the default of claude, car-agent and fingersaver).
        #[arg(long)]
        into_inbox: bool,
        /// Take the source's text for notes already in the store whose
        /// text differs (edited in the source since they came in); the
        /// store's earlier text is kept in the history.
        #[arg(long)]
        update: bool,
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
        /// What agent:NAME may see: global memories and its own (`global`:
        /// only global ones).
        #[arg(long)]
        scope: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
        /// With --output, print how many were exported as JSON (the
        /// export itself is always JSON lines).
        #[arg(long)]
        json: bool,
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
    /// memory-cli's agent mode: run the tool calls on stdin (one JSON
    /// object such as {"name":"memory_write","params":{"content":"x"}},
    /// or an array of them) and print one result per call, a JSON line
    /// each.
    Agent {
        /// Print memory-cli's seven tools with their JSON schemas instead.
        #[arg(long)]
        list_tools: bool,
        /// Act as this agent (agent:NAME): see global memories and its own,
        /// and give new memories its scope.
        #[arg(long)]
        scope: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
        /// With --list-tools: JSON lines.
        #[arg(long)]
        json: bool,
    },
}

/// A `--scope` as the user typed it, checked (after parsing, so that a
/// wrong one is one sentence like every other failure).
pub(super) fn parse_scope(scope: Option<&str>) -> anyhow::Result<Option<Scope>> {
    Ok(scope.map(Scope::parse).transpose()?)
}

/// `request` as a session in `scope` sees it (none: sees everything).
pub(super) fn scoped(scope: Option<&Scope>, request: Request) -> Request {
    match scope {
        Some(scope) => Request::Scoped {
            scope: Some(scope.to_string()),
            request: Box::new(request),
        },
        None => request,
    }
}

/// Through a daemon, returns once `paths` are searchable there: its index
/// hears of changes made through its mount only when its store watcher
/// reports them, so a search run right after could miss them. Without a
/// daemon the next command's index catches up as it opens.
pub(super) fn settle<'a>(
    session: &crate::daemon::Session,
    paths: impl IntoIterator<Item = &'a String>,
) {
    if session.through_daemon() {
        let paths = paths.into_iter().cloned().collect();
        if let Err(e) = session.call(Request::Settle { paths }) {
            tracing::debug!("settle: {e}");
        }
    }
}

/// The memory `reference` names: its path and id. A reference that names
/// nothing is said so in memory-cli's words.
fn resolve(
    session: &crate::daemon::Session,
    reference: &str,
) -> anyhow::Result<(String, Option<String>)> {
    let answer = session.call(Request::Resolve {
        reference: reference.to_string(),
    });
    match about(reference, answer)? {
        Response::Memory { path, id } => Ok((path, id)),
        _ => bail!("unexpected answer to resolve"),
    }
}

/// An answer about the memory `reference` names, with "not found" said in
/// memory-cli's words.
fn about(reference: &str, answer: crate::ops::Result<Response>) -> anyhow::Result<Response> {
    match answer {
        Err(e) if e.errno() == libc::ENOENT => {
            bail!("no memory is named {reference:?} (by id, path, title or alias)")
        }
        other => Ok(other?),
    }
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
            status,
            at,
            json,
        } => {
            let content = if content == "-" {
                crate::front::input::read_text(
                    std::io::stdin(),
                    crate::ops::DEFAULT_MAX_FILE_SIZE,
                    "the text on stdin",
                )?
            } else {
                content
            };
            if content.trim().is_empty() {
                bail!("nothing to write: the content is empty");
            }
            let session = session(&at.target_made(None)?, None)?;
            let Response::Memory { path, id } = session.call(Request::WriteMemory(NewMemory {
                content,
                path,
                title,
                category,
                tags,
                scope,
                source,
                kind,
                status,
            }))?
            else {
                bail!("unexpected answer to write");
            };
            settle(&session, [&path]);
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
            let answer = session.call(Request::Record {
                reference: reference.clone(),
            });
            let Response::Record { record } = about(&reference, answer)? else {
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
            let answer = session.call(Request::DeleteMemory {
                reference: reference.clone(),
            });
            let Response::Memory { path, id } = about(&reference, answer)? else {
                bail!("unexpected answer to delete");
            };
            settle(&session, [&path]);
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
            scope,
            limit,
            at,
            json,
        } => {
            let scope = parse_scope(scope.as_deref())?;
            let session = session(&at.target(None)?, None)?;
            let request = Request::Records {
                filter: RecordFilter {
                    phase,
                    category,
                    tag,
                    kind,
                    source,
                },
                after: None,
                limit,
            };
            let Response::Records { page } = session.call(scoped(scope.as_ref(), request))? else {
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
            if page.next.is_some() && !json {
                eprintln!(
                    "mnemofs: listed the first {limit}; more may match (--limit N lists more)"
                );
            }
        }
        MemoryCommand::Link { a, b, at, json } => {
            let session = session(&at.target(None)?, None)?;
            let ((a_path, a_id), (b_path, b_id)) = (resolve(&session, &a)?, resolve(&session, &b)?);
            session.call(Request::Link {
                from: a_path.clone(),
                to: b_path.clone(),
                both: true,
            })?;
            settle(&session, [&a_path, &b_path]);
            if json {
                println!(
                    "{}",
                    serde_json::json!({"a": {"path": a_path, "id": a_id}, "b": {"path": b_path, "id": b_id}, "linked": true})
                );
            } else {
                println!("linked {a_path} and {b_path}");
            }
        }
        MemoryCommand::Unlink { a, b, at, json } => {
            let session = session(&at.target(None)?, None)?;
            let ((a_path, a_id), (b_path, b_id)) = (resolve(&session, &a)?, resolve(&session, &b)?);
            let Response::Unlinked { removed, .. } = session.call(Request::Unlink {
                from: a_path.clone(),
                to: b_path.clone(),
            })?
            else {
                bail!("unexpected answer to unlink");
            };
            settle(&session, [&a_path, &b_path]);
            if json {
                println!(
                    "{}",
                    serde_json::json!({"a": {"path": a_path, "id": a_id}, "b": {"path": b_path, "id": b_id}, "removed": removed})
                );
            } else if removed {
                println!("unlinked {a_path} and {b_path}");
            } else {
                println!("{a_path} and {b_path} had no link in links:");
            }
        }
        MemoryCommand::Backlinks {
            reference,
            limit,
            at,
            json,
        } => {
            let session = session(&at.target(None)?, None)?;
            let answer = session.call(Request::Backlinks {
                reference: reference.clone(),
                limit,
            });
            let Response::Memories { memories } = about(&reference, answer)? else {
                bail!("unexpected answer to backlinks");
            };
            for m in &memories {
                if json {
                    println!("{}", serde_json::to_string(m)?);
                } else {
                    println!(
                        "{}  {}  {}",
                        m.id.as_deref().unwrap_or("-"),
                        m.path,
                        m.title
                    );
                }
            }
            if memories.is_empty() && !json {
                eprintln!("no memory links to it");
            }
        }
        MemoryCommand::Upgrade {
            reference,
            category,
            at,
            json,
        } => {
            let session = session(&at.target(None)?, None)?;
            let answer = session.call(Request::Upgrade {
                reference: reference.clone(),
                category,
            });
            print_step(about(&reference, answer)?, json)?;
        }
        MemoryCommand::Decay { at, json } => step(at, Step::Decay, json)?,
        MemoryCommand::Consolidate { at, json } => step(at, Step::Consolidate, json)?,
        MemoryCommand::ResolveLinks { at, json } => step(at, Step::ResolveLinks, json)?,
        MemoryCommand::Notify { at, json } => step(at, Step::Notify, json)?,
        MemoryCommand::Ingest {
            source,
            path,
            keep_folders,
            into_inbox,
            update,
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
            let target = at.target_made(None)?;
            let found = crate::daemon::find(&target)?;
            let mut skip = vec![found.store.clone(), target.state_dir()?];
            skip.extend(found.daemon.and_then(|d| d.mountpoint));
            let skip = skip
                .into_iter()
                .filter_map(|dir| std::fs::canonicalize(dir).ok())
                .collect();
            let session = session(&target, None)?;
            let mut progress = crate::progress::Progress::start("reading notes", "notes");
            let summary = ingest::ingest(
                &|r| session.call(r),
                &ingest::Plan {
                    sources,
                    path,
                    layout: ingest::Layout::chosen(keep_folders, into_inbox),
                    home,
                    skip,
                    update,
                },
                &mut |done, total| progress.set(done, total),
            );
            progress.finish();
            print_summary(&summary?, json)?;
        }
        MemoryCommand::Export {
            output,
            category,
            scope,
            at,
            json,
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
            let scope = parse_scope(scope.as_deref())?;
            let call = |r| session.call(scoped(scope.as_ref(), r));
            // The store's other files (attachments) come along when the
            // whole store is exported.
            let whole = filter == RecordFilter::default() && scope.is_none();
            let (count, files) = jsonl::export(&call, &filter, &|_| true, whole, &mut out)?;
            match &output {
                Some(file) if json => println!(
                    "{}",
                    serde_json::json!({"exported": count, "files": files, "output": file})
                ),
                Some(_) if files > 0 => eprintln!(
                    "exported {} and {}",
                    counted(count, "memory", "memories"),
                    counted(files, "other file", "other files")
                ),
                Some(_) => eprintln!("exported {}", counted(count, "memory", "memories")),
                None => {}
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
            let session = session(&at.target_made(None)?, None)?;
            let progress = crate::progress::Progress::start("importing", "lines");
            let summary = jsonl::import(&|r| session.call(r), &mut reader, &mut |s| {
                progress.say(&format!("importing: {}", s.line()))
            });
            progress.finish();
            let summary = summary?;
            print_summary(&summary, json)?;
            // Every line was meant as a memory: one that is not is a failure,
            // after the rest went in.
            if let Some(first) = summary.skipped.first() {
                bail!(
                    "{} of {} lines not imported ({}: {})",
                    summary.skipped.len(),
                    summary.read,
                    first.item,
                    first.reason
                );
            }
        }
        MemoryCommand::Agent {
            list_tools,
            scope,
            at,
            json,
        } => {
            if list_tools {
                for tool in agent::list_tools() {
                    if json {
                        println!("{tool}");
                    } else {
                        println!(
                            "{}: {}",
                            tool["name"].as_str().unwrap_or_default(),
                            tool["description"].as_str().unwrap_or_default()
                        );
                        println!("  {}", tool["parameters"]);
                    }
                }
                return Ok(());
            }
            let scope = parse_scope(scope.as_deref())?;
            let input = crate::front::input::read_text(
                std::io::stdin(),
                crate::front::input::max_line() as u64,
                "the tool calls on stdin",
            )?;
            let calls = agent::parse_calls(&input).map_err(anyhow::Error::msg)?;
            let session = session(&at.target_made(None)?, None)?;
            let call = crate::front::in_scope(scope, |r| session.call(r));
            let mut failed = 0;
            let mut changed = Vec::new();
            for input in &calls {
                if !changed.is_empty() && agent::reads_the_index(input) {
                    // What the calls before wrote is searchable by this one.
                    let paths = std::mem::take(&mut changed);
                    call(Request::Settle { paths })?;
                }
                let result = agent::run(&call, input);
                if result["ok"] != true {
                    failed += 1;
                }
                changed.extend(agent::changed_paths(&result));
                println!("{result}");
            }
            if failed > 0 {
                bail!("{failed} of {} tool calls failed", calls.len());
            }
        }
    }
    Ok(())
}

/// A timestamp as the reader's clock shows it (`2026-11-28 18:59 +08:00`),
/// or as written when it cannot be read.
fn local_time(timestamp: &str) -> String {
    crate::memory::parse_timestamp(timestamp)
        .and_then(|secs| jiff::Timestamp::from_second(secs).ok())
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M %:z")
                .to_string()
        })
        .unwrap_or_else(|| timestamp.to_string())
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
        None => {
            println!("{}: {}", report.step, report.report.summary());
            for filed in &report.report.filed {
                println!("filed {} -> {}: {}", filed.from, filed.to, filed.by);
            }
        }
    }
    for due in &report.due {
        println!(
            "due {}  {}  ({})",
            local_time(&due.due_at),
            due.title,
            due.path
        );
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
        if let Some(line) = summary.differing_line() {
            println!("{line}");
        }
        if let Some(line) = summary.updated_line() {
            println!("{line}");
        }
        if let Some(line) = summary.as_written_line() {
            println!("{line}");
        }
    }
    Ok(())
}

/// `1 memory`, `3 memories`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
