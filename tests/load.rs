//! Mixed load on a mount with the organizer on: writers create, truncate,
//! replace by rename, append, move across folders, unlink, make and remove
//! and rename folders, while readers walk the tree (as `grep -r` does) and
//! list search results. Each writer keeps a model of its own files; once
//! the background work is idle the store must equal the models byte for
//! byte (allowing for the frontmatter the normalizer adds), with no temp
//! files, no duplicates, no shared ids, and the daemon's memory bounded.
//!
//! Short by default so CI stays fast; `MNEMOFS_LOAD_SECS=120` runs longer.

#![cfg(target_os = "linux")]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Mount, MountOptions, bin, env_number, poll_until};

const WRITERS: usize = 4;
/// Most resident memory the daemon may hold at the end, in MiB.
const RSS_BOUND_MIB: u64 = 300;
/// How much more than a fresh mount of the same store the daemon may hold
/// once idle after the load, in MiB.
const IDLE_SLACK_MIB: u64 = 64;

/// A small deterministic generator (xorshift), one per writer.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One writer's files, relative to the mount, and its folders.
#[derive(Default)]
struct Model {
    files: BTreeMap<PathBuf, Vec<u8>>,
    folders: BTreeSet<PathBuf>,
}

fn text(rng: &mut Rng, i: u64) -> Vec<u8> {
    format!(
        "# Note {i}\n\nzeppelin {} {}\n",
        rng.next(),
        "words ".repeat(rng.below(40) as usize)
    )
    .into_bytes()
}

/// Runs one writer until `stop`; returns its model.
fn writer(mnt: PathBuf, k: usize, stop: Arc<AtomicBool>) -> Model {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (k as u64 + 1));
    let mut model = Model::default();
    let root = PathBuf::from(format!("w{k}"));
    fs::create_dir(mnt.join(&root)).unwrap();
    model.folders.insert(root.clone());
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let folders: Vec<PathBuf> = model.folders.iter().cloned().collect();
        let files: Vec<PathBuf> = model.files.keys().cloned().collect();
        let folder = folders[rng.below(folders.len() as u64) as usize].clone();
        let pick = |rng: &mut Rng| {
            files
                .get(rng.below(files.len().max(1) as u64) as usize)
                .cloned()
        };
        match rng.below(10) {
            0 | 1 => {
                let p = folder.join(format!("n{n}.md"));
                let t = text(&mut rng, n);
                fs::write(mnt.join(&p), &t).unwrap();
                model.files.insert(p, t);
            }
            2 => {
                if let Some(p) = pick(&mut rng) {
                    let t = text(&mut rng, n);
                    fs::write(mnt.join(&p), &t).unwrap(); // truncate and rewrite
                    model.files.insert(p, t);
                }
            }
            3 => {
                if let Some(p) = pick(&mut rng) {
                    // An editor's save: a temp file renamed over the file.
                    let t = text(&mut rng, n);
                    let tmp = p.with_file_name(format!(".save-{n}.tmp"));
                    fs::write(mnt.join(&tmp), &t).unwrap();
                    fs::rename(mnt.join(&tmp), mnt.join(&p)).unwrap();
                    model.files.insert(p, t);
                }
            }
            4 => {
                if let Some(p) = pick(&mut rng) {
                    let line = format!("appended {n}\n");
                    let mut f = fs::OpenOptions::new()
                        .append(true)
                        .open(mnt.join(&p))
                        .unwrap();
                    std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
                    model
                        .files
                        .get_mut(&p)
                        .unwrap()
                        .extend_from_slice(line.as_bytes());
                }
            }
            5 => {
                if let Some(p) = pick(&mut rng) {
                    let to = folder.join(p.file_name().unwrap());
                    if !model.files.contains_key(&to) {
                        fs::rename(mnt.join(&p), mnt.join(&to)).unwrap();
                        let t = model.files.remove(&p).unwrap();
                        model.files.insert(to, t);
                    }
                }
            }
            6 => {
                if let Some(p) = pick(&mut rng) {
                    fs::remove_file(mnt.join(&p)).unwrap();
                    model.files.remove(&p);
                }
            }
            7 => {
                if model.folders.len() < 6 {
                    let d = folder.join(format!("d{n}"));
                    fs::create_dir(mnt.join(&d)).unwrap();
                    model.folders.insert(d);
                }
            }
            8 => {
                // Remove an empty folder (not the writer's own root).
                let empty = folders.iter().find(|d| {
                    **d != root
                        && !model.files.keys().any(|f| f.starts_with(d))
                        && !model.folders.iter().any(|o| o != *d && o.starts_with(d))
                });
                if let Some(d) = empty.cloned() {
                    fs::remove_dir(mnt.join(&d)).unwrap();
                    model.folders.remove(&d);
                }
            }
            _ => {
                // Rename a folder, with everything in it.
                let Some(d) = folders.iter().find(|d| **d != root).cloned() else {
                    continue;
                };
                let to = d.with_file_name(format!("r{n}"));
                fs::rename(mnt.join(&d), mnt.join(&to)).unwrap();
                let move_path = |p: &PathBuf| match p.strip_prefix(&d) {
                    Ok(rest) => to.join(rest),
                    Err(_) => p.clone(),
                };
                model.files = std::mem::take(&mut model.files)
                    .into_iter()
                    .map(|(p, t)| (move_path(&p), t))
                    .collect();
                model.folders = std::mem::take(&mut model.folders)
                    .iter()
                    .map(move_path)
                    .collect();
            }
        }
    }
    model
}

/// Every file under `dir` (relative), with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(
                    e.path().strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(e.path()).unwrap(),
                );
            }
        }
    }
    out
}

/// The body after frontmatter the normalizer may have added.
fn without_added_frontmatter(bytes: &[u8]) -> &[u8] {
    if !bytes.starts_with(b"---\n") {
        return bytes;
    }
    let text = &bytes[4..];
    match text.windows(5).position(|w| w == b"\n---\n") {
        Some(end) => &text[end + 5..],
        None => bytes,
    }
}

fn status(m: &Mount) -> serde_json::Value {
    let out = std::process::Command::new(bin())
        .args(["status", "--json"])
        .arg(&m.mnt)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

fn rss_mib(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}

/// VmRSS split into anonymous and file-backed memory, in MiB.
fn rss_detail(pid: u32) -> String {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
            / 1024
    };
    format!(
        "{} MiB ({} MiB anonymous, {} MiB file-backed)",
        field("VmRSS:"),
        field("RssAnon:"),
        field("RssFile:")
    )
}

#[test]
fn mixed_load_leaves_the_store_equal_to_the_writers_models() {
    let config = tempfile::tempdir().unwrap();
    let config_file = config.path().join("config.yaml");
    fs::write(
        &config_file,
        "organizer: { interval: 1h, quiet_period: 0s, grace_period: 1h }\n\
         dream: { idle_after: 0s }\nnotifications: { method: none }\n",
    )
    .unwrap();
    let mut m = Mount::with_options(MountOptions {
        organizer: true,
        extra_args: vec!["--config".into(), config_file.display().to_string()],
        ..Default::default()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|k| {
            let (mnt, stop) = (m.mnt.clone(), Arc::clone(&stop));
            std::thread::spawn(move || writer(mnt, k, stop))
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (mnt, stop) = (m.mnt.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if r == 0 {
                        // grep -r: read every file; files come and go.
                        let _ = std::process::Command::new("grep")
                            .args(["-rqs", "no-such-word"])
                            .arg(&mnt)
                            .status();
                    } else if let Ok(entries) = fs::read_dir(mnt.join("search/zeppelin")) {
                        for e in entries.flatten() {
                            let _ = fs::read(e.path());
                        }
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    let mut peak = 0;
    while start.elapsed() < Duration::from_secs(env_number("MNEMOFS_LOAD_SECS", 12)) {
        peak = peak.max(rss_mib(m.pid()));
        std::thread::sleep(Duration::from_millis(250));
    }
    stop.store(true, Ordering::Relaxed);
    let models: Vec<Model> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    for r in readers {
        r.join().unwrap();
    }

    // Idle: nothing queued, nothing unindexed, for a few checks in a row.
    let mut quiet = 0;
    assert!(
        poll_until(Duration::from_secs(120), || {
            let s = status(&m);
            if s["organizer_queue"] == 0 && s["pending_changes"] == 0 {
                quiet += 1;
            } else {
                quiet = 0;
            }
            quiet >= 8
        }),
        "the daemon never became idle: {:#}",
        status(&m)
    );

    let store = tree(&m.store);
    let mut ids = BTreeMap::new();
    for (k, model) in models.iter().enumerate() {
        let mine: BTreeMap<&PathBuf, &Vec<u8>> = store
            .iter()
            .filter(|(p, _)| p.starts_with(format!("w{k}")))
            .collect();
        let want: BTreeSet<&PathBuf> = model.files.keys().collect();
        let have: BTreeSet<&PathBuf> = mine.keys().copied().collect();
        assert_eq!(have, want, "writer {k}: files differ from its model");
        for (p, bytes) in &model.files {
            let got = mine[p];
            assert_eq!(
                String::from_utf8_lossy(without_added_frontmatter(got)),
                String::from_utf8_lossy(bytes),
                "writer {k}: {} differs",
                p.display()
            );
            if let Some(id) = String::from_utf8_lossy(got)
                .lines()
                .find_map(|l| l.strip_prefix("id: ").map(str::to_owned))
                && let Some(other) = ids.insert(id.clone(), p.clone())
            {
                panic!("{} and {} share the id {id}", p.display(), other.display());
            }
        }
    }
    let temps: Vec<_> = store
        .keys()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".mnemofs-tmp-"))
        })
        .collect();
    assert!(temps.is_empty(), "temp files left: {temps:?}");
    let end = rss_mib(m.pid());
    eprintln!(
        "daemon RSS: peak {peak} MiB, at the end {end} MiB; files: {}",
        store.len()
    );
    assert!(
        peak <= RSS_BOUND_MIB,
        "the daemon held {peak} MiB under load"
    );
    // Once idle the daemon gives back what the load took: it holds about
    // what a fresh mount of the same store does.
    std::thread::sleep(Duration::from_secs(10));
    let after = rss_mib(m.pid());
    eprintln!("daemon RSS 10 s after the load: {}", rss_detail(m.pid()));
    m.stop();
    m.spawn(&[]);
    assert!(poll_until(Duration::from_secs(120), || {
        let s = status(&m);
        s["pending_changes"] == 0 && s["reconciling"] != true
    }));
    std::thread::sleep(Duration::from_secs(10));
    let fresh = rss_mib(m.pid());
    eprintln!(
        "daemon RSS on a fresh mount of the same store: {}",
        rss_detail(m.pid())
    );
    assert!(
        after <= fresh + IDLE_SLACK_MIB,
        "idle after the load the daemon held {after} MiB, a fresh mount of the store {fresh} MiB"
    );
    m.stop();
}
