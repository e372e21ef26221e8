//! The daemon's memory under a mixed load and after it: resident memory
//! at the start, its peak during the load, and what is left once the
//! daemon is idle, against a fresh mount of the store the load left
//! behind (the idle figure for that store size).
//!
//! The load runs with the organizer on, as a user's mount does: four
//! writers create, overwrite, save by rename, append to and delete notes
//! all over the store, while one reader walks the tree as `grep -r` does
//! and another lists search results.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::{
    Config, Daemon, Measure, Rng, Row, Target, Workspace, generate_store, render_table,
};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const WRITERS: usize = 4;
/// How much more than a fresh mount the idle daemon may hold.
const IDLE_SLACK: f64 = 64.0 * 1024.0 * 1024.0;
/// The most the daemon may hold under load at 10k notes.
const PEAK_LIMIT: f64 = 300.0 * 1024.0 * 1024.0;

/// One writer's loop: its own new notes, and any of the store's.
fn writer(root: PathBuf, notes: Vec<PathBuf>, k: usize, stop: &AtomicBool, ops: &AtomicU64) {
    let mut rng = Rng::new(0x6c6f_6164 + k as u64);
    let mine = root.join(format!("load-{k}"));
    let _ = fs::create_dir_all(&mine);
    let mut created: Vec<PathBuf> = Vec::new();
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let text = format!("# Load {k} {n}\n\nzeppelin {} words\n", rng.next_u64());
        let done = match rng.below(6) {
            0 | 1 => {
                let p = mine.join(format!("n{n}.md"));
                let r = fs::write(&p, &text);
                created.push(p);
                r
            }
            2 => fs::write(root.join(&notes[rng.below(notes.len())]), &text),
            3 => {
                let note = root.join(&notes[rng.below(notes.len())]);
                let tmp = note.with_file_name(format!(".save-{k}-{n}.tmp"));
                fs::write(&tmp, &text).and_then(|()| fs::rename(&tmp, &note))
            }
            4 => fs::OpenOptions::new()
                .append(true)
                .open(root.join(&notes[rng.below(notes.len())]))
                .and_then(|mut f| std::io::Write::write_all(&mut f, b"appended\n")),
            _ if !created.is_empty() => {
                let p = created.swap_remove(rng.below(created.len()));
                fs::remove_file(p)
            }
            _ => Ok(()),
        };
        if done.is_ok() {
            ops.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Resident memory in bytes, 0 when unreadable.
fn rss(daemon: &Daemon) -> f64 {
    daemon.vm_rss_kib().unwrap_or(0) as f64 * 1024.0
}

fn anon_mib(daemon: &Daemon) -> u64 {
    daemon.proc_status_kib("RssAnon").unwrap_or(0) / 1024
}

/// Runs the mixed load for `secs` seconds; returns the peak RSS and the
/// operations done.
fn load(daemon: &Daemon, mnt: &Path, notes: &[PathBuf], secs: u64) -> (f64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    for k in 0..WRITERS {
        let (root, notes) = (mnt.to_path_buf(), notes.to_vec());
        let (stop, ops) = (Arc::clone(&stop), Arc::clone(&ops));
        threads.push(std::thread::spawn(move || {
            writer(root, notes, k, &stop, &ops);
        }));
    }
    for r in 0..2 {
        let (root, stop) = (mnt.to_path_buf(), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if r == 0 {
                    let _ = std::process::Command::new("grep")
                        .args(["-rqs", "no-such-word"])
                        .arg(&root)
                        .status();
                } else if let Ok(entries) = fs::read_dir(root.join("search/zeppelin")) {
                    for e in entries.flatten().take(50) {
                        let _ = fs::read(e.path());
                    }
                }
            }
        }));
    }
    let start = Instant::now();
    let mut peak: f64 = 0.0;
    while start.elapsed() < Duration::from_secs(secs) {
        peak = peak.max(rss(daemon));
        std::thread::sleep(Duration::from_millis(250));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    (peak.max(rss(daemon)), ops.load(Ordering::Relaxed))
}

/// Runs the load figures.
pub fn run(cfg: &Config) -> Result<()> {
    let secs = if cfg.quick { 10 } else { 60 };
    println!(
        "\n== load: the daemon's memory under {secs} s of mixed load on {} notes, organizer on ==",
        cfg.notes
    );
    let ws = Workspace::new()?;
    let notes = generate_store(&ws.store, cfg.notes)?;
    let idle_timeout = Duration::from_secs(120 + cfg.notes as u64 / 50);
    let daemon = Daemon::start_with(&ws, &[])?;
    daemon.wait_idle(idle_timeout)?;
    let start = rss(&daemon);
    let start_anon = anon_mib(&daemon);
    let (peak, ops) = load(&daemon, &ws.mnt, &notes, secs);
    let loaded = Instant::now();
    daemon.wait_idle(idle_timeout)?;
    let settled = loaded.elapsed();
    std::thread::sleep(Duration::from_secs(60).saturating_sub(loaded.elapsed()));
    let after = rss(&daemon);
    let after_anon = anon_mib(&daemon);
    drop(daemon);

    // The baseline: the same store, freshly mounted and idle.
    let daemon = Daemon::start_with(&ws, &[])?;
    daemon.wait_idle(idle_timeout)?;
    std::thread::sleep(Duration::from_secs(10));
    let fresh = rss(&daemon);
    let fresh_anon = anon_mib(&daemon);
    drop(daemon);

    let mut at_start = Row::new(
        "daemon RSS before the load (baseline: fresh mount after it)",
        Measure::Bytes,
        Target::Info,
    );
    at_start.mount.push(start);
    at_start.native.push(fresh);
    let mut at_peak = Row::new(
        "daemon RSS, peak under the load",
        Measure::Bytes,
        Target::Info,
    );
    if cfg.notes <= 10_000 {
        at_peak = at_peak.with_limit(PEAK_LIMIT);
    }
    at_peak.mount.push(peak);
    at_peak.native.push(fresh);
    let mut idle = Row::new(
        "daemon RSS a minute after the load (baseline: fresh mount; limit: +64 MiB)",
        Measure::Bytes,
        Target::Info,
    )
    .with_limit(fresh + IDLE_SLACK);
    idle.mount.push(after);
    idle.native.push(fresh);
    println!("{}", render_table(&[at_start, at_peak, idle]));
    println!(
        "note: {ops} operations by {WRITERS} writers beside grep -r and search listings; \
         idle {:.1} s after the load; anonymous memory {start_anon} MiB before, \
         {after_anon} MiB a minute after, {fresh_anon} MiB on the fresh mount",
        settled.as_secs_f64()
    );
    Ok(())
}
