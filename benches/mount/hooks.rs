//! The agent-hook figures: `mnemofs brief` as a new process (as a
//! SessionStart hook runs it), warm and cold, with and without a daemon,
//! and `mnemofs checkpoint` of a 5 MB transcript.
//!
//! Baselines from the same run: for the brief, `grep -rl '^type: task'`
//! over the store, which is what a hook without an index would have to do
//! for just one of the brief's sections; for the checkpoint, `wc -l` of
//! the transcript (reading it once).

use std::error::Error;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{
    Config, Daemon, Measure, Row, Target, Workspace, generate_store, render_table, time,
};

/// Runs of each warm figure.
const RUNS: usize = 20;

/// Typed memories on top of the synthetic notes: tasks, decisions and
/// sessions, a share of them in the session's project.
fn seed_typed(store: &Path, n: usize) -> std::io::Result<()> {
    let dir = store.join("work");
    fs::create_dir_all(&dir)?;
    for i in 0..n {
        let (kind, status, extra) = match i % 4 {
            0 | 1 => ("task", if i % 8 == 0 { "done" } else { "active" }, ""),
            2 => ("decision", "open", ""),
            _ => (
                "session",
                "open",
                "- [next-step] pick up the importer tests\n",
            ),
        };
        let project = if i % 5 == 0 { "bench-app" } else { "other" };
        fs::write(
            dir.join(format!("{kind}-{i:05}.md")),
            format!(
                "---\ntitle: {kind} number {i}\ntype: {kind}\nstatus: {status}\nproject: {project}\n---\n{extra}Body of {kind} {i}.\n"
            ),
        )?;
    }
    Ok(())
}

/// A transcript of about `bytes` in Claude Code's format.
fn transcript(path: &Path, bytes: usize) -> std::io::Result<()> {
    let mut text = String::with_capacity(bytes + 4096);
    let mut i = 0;
    while text.len() < bytes {
        let _ = writeln!(
            text,
            r#"{{"type":"user","timestamp":"2026-11-20T09:00:00Z","message":{{"role":"user","content":"Request {i}: make the importer skip binary files and keep going."}}}}"#
        );
        let _ = writeln!(
            text,
            r#"{{"type":"assistant","timestamp":"2026-11-20T09:00:01Z","message":{{"role":"assistant","content":[{{"type":"text","text":"Looking at it. {} We decided to check NUL bytes {i}."}},{{"type":"tool_use","id":"t{i}","name":"Edit","input":{{"file_path":"/code/importer/src/f{i}.rs","old_string":"a","new_string":"b"}}}}]}}}}"#,
            "Some reasoning about the code. ".repeat(20)
        );
        i += 1;
    }
    text.push_str(
        r#"{"type":"assistant","message":{"content":"Next step: add a test for an empty file."}}"#,
    );
    text.push('\n');
    fs::write(path, text)
}

fn mnemofs(args: &[&str], ws: &Workspace, stdin: &[u8]) -> Result<String, Box<dyn Error>> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemofs"))
        .args(args)
        .arg("--store")
        .arg(&ws.store)
        .arg("--state-dir")
        .arg(&ws.state)
        .env("MNEMOFS_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    child.stdin.take().ok_or("no stdin")?.write_all(stdin)?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!("mnemofs {args:?}: {}", out.status).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn grep_tasks(store: &Path) -> Result<usize, Box<dyn Error>> {
    let out = Command::new("grep")
        .args(["-rl", "--include=*.md", "^type: task"])
        .arg(store)
        .output()?;
    Ok(out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count())
}

/// Drops the whole page cache (root only); false where it cannot.
fn drop_caches() -> bool {
    let _ = Command::new("sync").status();
    fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

const START: &[u8] = br#"{"session_id":"bench","cwd":"/home/u/code/bench-app","hook_event_name":"SessionStart","source":"startup"}"#;

/// Runs the hook figures.
pub fn run(cfg: &Config) -> Result<(), Box<dyn Error>> {
    let n = cfg.notes;
    println!("\n== hooks: brief and checkpoint as new processes, {n} notes ==");
    let ws = Workspace::new()?;
    generate_store(&ws.store, n)?;
    seed_typed(&ws.store, (n / 50).max(40))?;
    let mut notes = Vec::new();
    // Build the index once, outside the figures.
    let (t, _) = time(|| mnemofs(&["reindex"], &ws, b""));
    notes.push(format!("index built in {:.1} s", t.as_secs_f64()));

    let runs = if cfg.quick { 5 } else { RUNS };
    let mut local = Row::new(
        "brief, new process, no daemon, warm (native: grep -rl '^type: task')",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.15);
    let mut size = 0;
    for _ in 0..runs {
        let (t, found) = time(|| grep_tasks(&ws.store));
        found?;
        local.native.push(t.as_secs_f64());
        let (t, text) = time(|| mnemofs(&["brief"], &ws, START));
        size = text?.chars().count();
        local.mount.push(t.as_secs_f64());
    }
    notes.push(format!("the brief is {size} characters (cap 10,000)"));

    let mut cold = Row::new(
        "brief, new process, no daemon, cold page cache (native: grep, cold)",
        Measure::Time,
        Target::Info,
    )
    .with_limit(1.0);
    if drop_caches() {
        for _ in 0..3 {
            drop_caches();
            let (t, found) = time(|| grep_tasks(&ws.store));
            found?;
            cold.native.push(t.as_secs_f64());
            drop_caches();
            let (t, text) = time(|| mnemofs(&["brief"], &ws, START));
            text?;
            cold.mount.push(t.as_secs_f64());
        }
    } else {
        notes.push("cold figure skipped: cannot drop the page cache (not root)".into());
    }

    let transcript_path = ws.plain.join("transcript.jsonl");
    transcript(&transcript_path, 5 << 20)?;
    let pre = format!(
        r#"{{"session_id":"bench-cp","transcript_path":"{}","cwd":"/home/u/code/bench-app","trigger":"auto"}}"#,
        transcript_path.display()
    );
    let mut checkpoint = Row::new(
        "checkpoint of a 5 MB transcript, new process, no daemon (native: wc -l)",
        Measure::Time,
        Target::Info,
    )
    .with_limit(0.5);
    for _ in 0..cfg.reps.min(5) {
        let (t, out) = time(|| Command::new("wc").arg("-l").arg(&transcript_path).output());
        out?;
        checkpoint.native.push(t.as_secs_f64());
        let (t, said) = time(|| mnemofs(&["checkpoint"], &ws, pre.as_bytes()));
        if !said?.contains("session checkpoint in") {
            return Err("the checkpoint wrote no note".into());
        }
        checkpoint.mount.push(t.as_secs_f64());
    }

    let mut served = Row::new(
        "brief, new process, through a daemon (native: grep -rl '^type: task')",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.15);
    let daemon = Daemon::start_with(&ws, &["--no-organizer"])?;
    daemon.wait_idle(Duration::from_secs(600))?;
    for _ in 0..runs {
        let (t, found) = time(|| grep_tasks(&ws.store));
        found?;
        served.native.push(t.as_secs_f64());
        let (t, text) = time(|| mnemofs(&["brief"], &ws, START));
        text?;
        served.mount.push(t.as_secs_f64());
    }
    drop(daemon);

    let mut rows = vec![local];
    if !cold.mount.is_empty() {
        rows.push(cold);
    }
    rows.push(served);
    rows.push(checkpoint);
    println!("{}", render_table(&rows));
    for note in notes {
        println!("note: {note}");
    }
    Ok(())
}
