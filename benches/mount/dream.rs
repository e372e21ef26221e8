//! The organizer figures: `mnemofs dream --level 1` over a full inbox, on
//! the store directly (no daemon: the command opens and builds the index
//! itself) and through a running daemon.
//!
//! The baseline, measured in the same run on a copy of the same inbox, is
//! the file work a dream cannot avoid, done natively: read each item,
//! write its new content to a temp file with fsync, rename it into its
//! category folder, fsync the folder. What the dream adds on top is
//! classification, the index and the safety checks.

use std::error::Error;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Config, Daemon, Measure, Row, Target, Workspace, render_table, time};

/// Phrases the built-in rules classify (English and Chinese), and one
/// they do not, so the run meets every path of level 1.
const PHRASES: &[&str] = &[
    "I prefer dark mode in every editor",
    "Lesson: always pin the toolchain before a release",
    "The user prefers short answers without preamble",
    "用户偏好深色模式",
    "Remind me to call the bank about the card",
    "I learned that fsync on the folder matters after a rename",
    "zxqv plorb wibble",
];

/// Nothing moves on its own: only the timed command does the work.
const CONFIG: &str = "\
organizer: { interval: 1h, quiet_period: 1h, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
";

fn item(i: usize) -> String {
    format!(
        "{} (item {i})\n\nMore words so the note looks like a memory: {}.\n",
        PHRASES[i % PHRASES.len()],
        "context ".repeat(20).trim_end()
    )
}

fn fill_inbox(root: &Path, n: usize) -> io::Result<()> {
    let inbox = root.join("inbox");
    fs::create_dir_all(&inbox)?;
    for i in 0..n {
        fs::write(inbox.join(format!("item-{i:05}.md")), item(i))?;
    }
    Ok(())
}

/// The native file work: read, write a temp file with fsync, rename into
/// a folder, fsync the folder.
fn native_moves(root: &Path) -> io::Result<usize> {
    let inbox = root.join("inbox");
    let target = root.join("sorted");
    fs::create_dir_all(&target)?;
    let mut moved = 0;
    for entry in fs::read_dir(&inbox)? {
        let path = entry?.path();
        let text = fs::read(&path)?;
        let tmp = target.join(".tmp");
        let mut file = fs::File::create(&tmp)?;
        file.write_all(b"---\nphase: organized\n---\n")?;
        file.write_all(&text)?;
        file.sync_all()?;
        fs::rename(&tmp, target.join(path.file_name().unwrap_or_default()))?;
        fs::remove_file(&path)?;
        fs::File::open(&target)?.sync_all()?;
        moved += 1;
    }
    Ok(moved)
}

fn dream(ws: &Workspace, config: &Path, state_dir: bool) -> Result<serde_json::Value, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemofs"));
    cmd.args(["dream", "--level", "1", "--store"])
        .arg(&ws.store)
        .arg("--config")
        .arg(config);
    if state_dir {
        cmd.arg("--state-dir").arg(&ws.state);
    }
    let out = cmd
        .env("MNEMOFS_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("mnemofs dream: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mnemofs dream: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("mnemofs dream printed no JSON: {e}"))
}

/// A fresh workspace with the same inbox in the store and in the plain
/// folder, and the config file; times the native baseline into `row`.
fn prepared(n: usize, row: &mut Row) -> Result<(Workspace, PathBuf), Box<dyn Error>> {
    let ws = Workspace::new()?;
    let config = ws.state.with_file_name("config.yaml");
    fs::write(&config, CONFIG)?;
    fill_inbox(&ws.plain, n)?;
    fill_inbox(&ws.store, n)?;
    let (t, moved) = time(|| native_moves(&ws.plain));
    if moved? != n {
        return Err("the native baseline lost items".into());
    }
    row.native.push(t.as_secs_f64());
    Ok((ws, config))
}

/// Runs the organizer figures.
pub fn run(cfg: &Config) -> Result<(), Box<dyn Error>> {
    let n = cfg.notes;
    println!("\n== dream: the organizer over an inbox of {n} items ==");
    let mut local = Row::new(
        format!("dream --level 1, {n} inbox items, no daemon, index build included (native: the file work)"),
        Measure::Time,
        Target::Info,
    )
    .with_limit(10.0 * n as f64 / 10_000.0);
    let mut served = Row::new(
        format!("dream --level 1, {n} inbox items, through a daemon (native: the file work)"),
        Measure::Time,
        Target::Info,
    )
    .with_limit(n as f64 / 1000.0);
    let mut notes = Vec::new();
    for rep in 0..cfg.reps.min(3) {
        let (ws, config) = prepared(n, &mut local)?;
        let (t, report) = time(|| dream(&ws, &config, true));
        let report = report?;
        local.mount.push(t.as_secs_f64());
        if rep == 0 {
            notes.push(format!(
                "no daemon: organized {}, skipped {}, errors {}",
                report["organized"],
                report["skipped"].as_array().map_or(0, Vec::len),
                report["errors"].as_array().map_or(0, Vec::len)
            ));
        }

        let (ws, config) = prepared(n, &mut served)?;
        let config_arg = config.display().to_string();
        let daemon = Daemon::start_with(&ws, &["--config", &config_arg])?;
        // The start-up normalization and index build are not the dream's.
        daemon.wait_idle(Duration::from_secs(600))?;
        // No --state-dir: the daemon is found by its store.
        let (t, report) = time(|| dream(&ws, &config, false));
        let report = report?;
        served.mount.push(t.as_secs_f64());
        let organized = report["organized"].as_u64().unwrap_or(0);
        notes.push(format!(
            "through the daemon: {organized} organized in {:.2} s = {:.0} items/s (target >= 1000/s)",
            t.as_secs_f64(),
            organized as f64 / t.as_secs_f64()
        ));
        drop(daemon);
    }
    println!("{}", render_table(&[local, served]));
    for note in notes {
        println!("note: {note}");
    }
    Ok(())
}
