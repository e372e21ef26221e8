//! The cost of keeping earlier versions: an editor's save by rename (write
//! a temp file, rename it over the note) through a mount that keeps the
//! replaced content, against the same save on a mount that keeps nothing
//! (`history: { max_size: 0 }`), and against the plain directory.
//!
//! Both mounts run at once on stores of the same notes, and the three
//! sides alternate within each repetition, so drift on a shared machine
//! hits them alike. Each save replaces a different note, so every save
//! keeps a version (a hard link of the replaced inode), and a second save
//! of the same note within the minute also collapses the one before it.
//!
//! A second figure rewrites notes in place (`O_TRUNC`, as the memory
//! tool's handler, Obsidian and `echo >` do): the inode lives on, so the
//! replaced bytes are copied rather than linked.

use std::error::Error;
use std::fs;
use std::path::Path;

use crate::common::{
    Config, Daemon, Measure, Row, Target, Workspace, generate_store, note_path, render_table, time,
};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Saves by rename of `count` notes under `root`, the `round`th time.
fn saves(root: &Path, notes: usize, count: usize, round: usize) -> Result<()> {
    for i in 0..count {
        let note = root.join(note_path(i % notes, notes));
        let tmp = note.with_file_name(format!(".save-{i}.tmp"));
        fs::write(&tmp, format!("# Note {i}\nsaved in round {round}\n"))?;
        fs::rename(&tmp, &note)?;
    }
    Ok(())
}

/// Rewrites in place (an `O_TRUNC` open, then the new bytes) of `count`
/// notes under `root`, the `round`th time.
fn rewrites(root: &Path, notes: usize, count: usize, round: usize) -> Result<()> {
    for i in 0..count {
        let note = root.join(note_path((notes - 1 - i) % notes, notes));
        fs::write(&note, format!("# Note {i}\nrewritten in round {round}\n"))?;
    }
    Ok(())
}

/// Runs the history figures.
pub fn run(cfg: &Config) -> Result<()> {
    let notes = if cfg.quick { 200 } else { 2000 };
    let per_rep = if cfg.quick { 100 } else { 500 };
    println!("\n== history: save by rename, {notes} notes, {per_rep} saves a repetition ==");
    let kept = Workspace::new()?;
    let off = Workspace::new()?;
    for ws in [&kept, &off] {
        generate_store(&ws.store, notes)?;
    }
    generate_store(&kept.plain, notes)?;
    let config = off.plain.join("config.yaml");
    fs::write(&config, "history: { max_size: 0 }\n")?;
    let config = config.to_string_lossy().into_owned();
    let kept_daemon = Daemon::start_with(&kept, &["--no-organizer"])?;
    let off_daemon = Daemon::start_with(&off, &["--no-organizer", "--config", &config])?;

    let mut vs_plain = Row::new(
        format!("{per_rep} saves by rename, history kept (native: plain dir)"),
        Measure::Time,
        Target::Info,
    );
    let mut vs_off = Row::new(
        format!("{per_rep} saves by rename, history kept (baseline: mount keeping nothing)"),
        Measure::Time,
        Target::AtMost(1.5),
    );
    let mut in_place = Row::new(
        format!("{per_rep} rewrites in place, history kept (baseline: mount keeping nothing)"),
        Measure::Time,
        Target::AtMost(1.5),
    );
    for round in 0..cfg.reps {
        let (t, done) = time(|| saves(&kept.plain, notes, per_rep, round));
        done?;
        vs_plain.native.push(t.as_secs_f64());
        let (t, done) = time(|| saves(&off.mnt, notes, per_rep, round));
        done?;
        vs_off.native.push(t.as_secs_f64());
        let (t, done) = time(|| saves(&kept.mnt, notes, per_rep, round));
        done?;
        vs_plain.mount.push(t.as_secs_f64());
        vs_off.mount.push(t.as_secs_f64());
        let (t, done) = time(|| rewrites(&off.mnt, notes, per_rep, round));
        done?;
        in_place.native.push(t.as_secs_f64());
        let (t, done) = time(|| rewrites(&kept.mnt, notes, per_rep, round));
        done?;
        in_place.mount.push(t.as_secs_f64());
    }
    let versions = fs::read_to_string(kept.state.join("history/versions.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let objects = fs::read_dir(kept.state.join("history/objects"))
        .map(|d| d.count())
        .unwrap_or(0);
    drop(kept_daemon);
    drop(off_daemon);
    println!("{}", render_table(&[vs_plain, vs_off, in_place]));
    println!(
        "note: the version log holds {versions} lines and {objects} objects after {} saves \
         and as many rewrites",
        per_rep * cfg.reps
    );
    Ok(())
}
