//! Real-mount tests of the background organizer: the normalizer, inbox
//! moves, the lifecycle (expiry, decay), de-duplication, reminders and the
//! `dream` / `status` commands, with and without a running daemon.
//!
//! Every wait polls with a generous deadline and nothing asserts how long
//! anything took: the scale test proves correctness with many items, the
//! 10k timing is measured by hand with the release binary.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{
    Mount, MountOptions, bin, force_unmount, have_program, is_fuse_mounted, is_mounted, list,
    metadata_with_timeout, poll_until, run_with_timeout, sys, wait_timeout,
};
use serde_json::Value as Json;

/// How long any background effect may take to show.
const WAIT: Duration = Duration::from_secs(20);
/// Upper bound for one CLI run (a dream on a private mount included).
const CLI_TIMEOUT: Duration = Duration::from_secs(120);
const DAY: i64 = 86_400;

/// Fast settings: the organizer runs every few seconds and moves inbox
/// items at once; idle dreams and desktop notifications are off. The
/// interval stays above the normalizer's debounce (about 1.5 s) so the
/// other tests do not depend on the bug that
/// `an_organizer_interval_shorter_than_the_debounce_does_not_starve_the_normalizer`
/// pins.
const FAST: &str = "\
organizer: { interval: 3s, quiet_period: 0s, grace_period: 1h }
dream: { idle_after: 0s }
lifecycle: { inbox_ttl: 7d, decay: { enabled: false } }
notifications: { method: none }
";

/// A mount with the organizer on and a config file of its own.
struct Organized {
    m: Mount,
    config: PathBuf,
    _config_dir: tempfile::TempDir,
}

impl std::ops::Deref for Organized {
    type Target = Mount;
    fn deref(&self) -> &Mount {
        &self.m
    }
}

fn write_config(yaml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("mnemofs-config-")
        .tempdir()
        .expect("config dir");
    let path = dir.path().join("config.yaml");
    fs::write(&path, yaml).expect("write config");
    (dir, path)
}

/// Mounts `seed` (store-relative path, content, age in seconds as mtime)
/// with the organizer on under `yaml`.
fn organized(yaml: &str, seed: &[(&str, &str, i64)]) -> Organized {
    let (dir, config) = write_config(yaml);
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--config".into(), config.display().to_string()],
        seed: seed
            .iter()
            .map(|(p, c, _)| (p.to_string(), c.as_bytes().to_vec()))
            .collect(),
        organizer: true,
        before_start: None,
    });
    // Seeding happens before the mount, and ageing a file does not change
    // its content, so setting the mtime now is the same as before mounting
    // for files the start-up normalization leaves alone (complete ones).
    for (p, _, age) in seed {
        if *age > 0 {
            age_file(&m.s(p), *age);
        }
    }
    Organized {
        m,
        config,
        _config_dir: dir,
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// Sets a store file's atime and mtime to `secs` ago (never through the mount).
fn age_file(store_path: &Path, secs: i64) {
    let t = now() - secs;
    sys::utimens(store_path, (t, 0), (t, 0), 0)
        .unwrap_or_else(|e| panic!("utimensat {}: {e}", store_path.display()));
}

#[track_caller]
fn wait_for(m: &Mount, what: &str, cond: impl FnMut() -> bool) {
    wait_for_within(m, WAIT, what, cond);
}

#[track_caller]
fn wait_for_within(m: &Mount, timeout: Duration, what: &str, cond: impl FnMut() -> bool) {
    assert!(
        poll_until(timeout, cond),
        "timed out after {timeout:?} waiting for {what}\n--- daemon log ---\n{}",
        m.log_text()
    );
}

/// Splits a memory into its frontmatter text and its body bytes. `None`
/// for the frontmatter when the file has no block. Fences may end in CRLF
/// (the daemon writes a block in the file's own line endings).
fn split(bytes: &[u8]) -> (Option<String>, Vec<u8>) {
    let open = if bytes.starts_with(b"---\n") {
        4
    } else if bytes.starts_with(b"---\r\n") {
        5
    } else {
        return (None, bytes.to_vec());
    };
    let mut pos = open;
    while pos < bytes.len() {
        let end = bytes[pos..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |i| pos + i);
        let line = &bytes[pos..end];
        if line.strip_suffix(b"\r").unwrap_or(line) == b"---" {
            let fm = String::from_utf8_lossy(&bytes[open..pos]).into_owned();
            return (Some(fm), bytes[(end + 1).min(bytes.len())..].to_vec());
        }
        pos = end + 1;
    }
    (None, bytes.to_vec())
}

/// The frontmatter fields of a memory as strings (scalars only).
fn fields(bytes: &[u8]) -> BTreeMap<String, String> {
    let Some(fm) = split(bytes).0 else {
        return BTreeMap::new();
    };
    let Ok(serde_yaml::Value::Mapping(map)) = serde_yaml::from_str::<serde_yaml::Value>(&fm) else {
        return BTreeMap::new();
    };
    map.into_iter()
        .filter_map(|(k, v)| {
            let k = k.as_str()?.to_string();
            let v = match v {
                serde_yaml::Value::String(s) => s,
                serde_yaml::Value::Number(n) => n.to_string(),
                serde_yaml::Value::Bool(b) => b.to_string(),
                _ => return None,
            };
            Some((k, v))
        })
        .collect()
}

/// What `stat` says about a file: enough to notice a rewrite or a move.
fn signature(path: &Path) -> Option<(u64, u64, i64, i64)> {
    let md = fs::symlink_metadata(path).ok()?;
    Some((md.ino(), md.size(), md.mtime(), md.mtime_nsec()))
}

/// Waits until the file at `path` satisfies `pred` and returns its bytes.
/// It reads the file only when `stat` shows a change: the daemon's store
/// watcher takes every read for a change (see the starvation regression
/// tests), so polling by reading would delay what it waits for.
#[track_caller]
fn wait_content(
    m: &Mount,
    path: &Path,
    what: &str,
    mut pred: impl FnMut(&[u8]) -> bool,
) -> Vec<u8> {
    let deadline = Instant::now() + WAIT;
    let mut seen = None;
    let mut last = Vec::new();
    loop {
        let now = signature(path);
        if now.is_some() && now != seen {
            seen = now;
            if let Ok(bytes) = fs::read(path) {
                if pred(&bytes) {
                    return bytes;
                }
                last = bytes;
            }
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {WAIT:?} waiting for {what} in {}; last content ({:?}):\n{}\n--- daemon log ---\n{}",
            path.display(),
            String::from_utf8_lossy(&last),
            String::from_utf8_lossy(&last),
            m.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn has_id(bytes: &[u8]) -> bool {
    fields(bytes).contains_key("id")
}

fn field(path: &Path, key: &str) -> Option<String> {
    fs::read(path).ok().and_then(|b| fields(&b).remove(key))
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Unix seconds of an RFC 3339 timestamp (`2026-01-02T15:04:05Z` or with
/// an offset like `+08:00`).
fn parse_rfc3339(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// Every regular file below `root` (relative paths), skipping dot-folders.
fn files_below(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let child = rel.join(&name);
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(child),
                Ok(t) if t.is_file() => out.push(child),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// The `.md` files in the store whose content contains `needle`.
fn holders(store: &Path, needle: &str) -> Vec<PathBuf> {
    files_below(store)
        .into_iter()
        .filter(|p| p.extension() == Some(OsStr::new("md")))
        .filter(|p| {
            fs::read(store.join(p))
                .map(|b| String::from_utf8_lossy(&b).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// Runs the CLI; panics (with the daemon log) if it hangs.
fn cli(m: Option<&Mount>, args: &[&OsStr]) -> Output {
    run_with_timeout(Command::new(bin()).args(args), CLI_TIMEOUT).unwrap_or_else(|| {
        panic!(
            "`mnemofs {args:?}` did not finish in {CLI_TIMEOUT:?}\n--- daemon log ---\n{}",
            m.map(Mount::log_text).unwrap_or_default()
        )
    })
}

fn json_of(out: &Output, what: &str) -> Json {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what} did not print JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `mnemofs dream --level N` against the running daemon; its report.
fn dream(o: &Organized, level: u8) -> Json {
    let level = level.to_string();
    let out = cli(
        Some(&o.m),
        &[
            "dream".as_ref(),
            "--json".as_ref(),
            "--level".as_ref(),
            level.as_ref(),
            "--store".as_ref(),
            o.store.as_os_str(),
            "--state-dir".as_ref(),
            o.state.as_os_str(),
            "--config".as_ref(),
            o.config.as_os_str(),
        ],
    );
    json_of(&out, "mnemofs dream")
}

fn count(report: &Json, key: &str) -> u64 {
    report[key]
        .as_u64()
        .unwrap_or_else(|| panic!("report has no number {key}: {report:#}"))
}

fn text(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| format!("<{}: {e}>", path.display()))
}

// ---------------------------------------------------------------------------
// Inbox: classify, move, keep old paths and ids working.

#[test]
fn an_inbox_item_is_classified_and_moved_with_its_body_unchanged_and_by_id_follows_it() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.m("inbox")).expect("mkdir inbox");
    // Bytes a careless rewrite would disturb: CR, trailing blanks, tabs,
    // a rule that looks like a frontmatter fence, no final newline.
    let body: &[u8] =
        b"I prefer dark mode.\r\n\n  indented, trailing blanks   \n\ttab\n---\nno final newline";
    fs::write(o.m("inbox/ui.md"), body).expect("write the inbox item");

    let moved = o.m("preferences/ui.md");
    wait_content(&o, &o.s("preferences/ui.md"), "an organized memory", |b| {
        let f = fields(b);
        f.get("phase").map(String::as_str) == Some("organized") && f.contains_key("id")
    });
    let content = fs::read(&moved).expect("read the moved memory");
    let (fm, moved_body) = split(&content);
    assert!(fm.is_some(), "no frontmatter block:\n{}", text(&moved));
    assert_eq!(
        String::from_utf8_lossy(&moved_body),
        String::from_utf8_lossy(body),
        "the body changed"
    );
    assert_eq!(moved_body, body, "the body's bytes changed");
    let f = fields(&content);
    let id = f.get("id").cloned().expect("id");
    assert!(is_uuid(&id), "id is not a UUID: {id}");
    assert!(
        f.get("created_at").and_then(|c| parse_rfc3339(c)).is_some(),
        "created_at missing or not a timestamp: {f:?}"
    );
    assert_eq!(f.get("phase").map(String::as_str), Some("organized"));
    assert_eq!(f.get("category").map(String::as_str), Some("preferences"));
    // The store agrees with the mount.
    assert_eq!(
        fs::read(o.s("preferences/ui.md")).expect("store copy"),
        content
    );
    assert!(
        !o.s("inbox/ui.md").exists(),
        "the store still has the inbox copy"
    );

    // The old path still resolves during the grace period, and is listed
    // as the symlink it is: a create of that name fails (it exists), so
    // the folder must not look empty.
    let old = o.m("inbox/ui.md");
    assert_eq!(
        fs::read(&old).expect("read the old path"),
        content,
        "the old path does not read the moved memory"
    );
    assert!(
        list(&o.m("inbox"))
            .expect("ls inbox")
            .contains(&"ui.md".to_string()),
        "the old path is not listed in inbox/"
    );
    assert_eq!(
        fs::read_link(&old).expect("the old path is a symlink"),
        Path::new("../preferences/ui.md")
    );
    assert!(
        !o.s("inbox/ui.md").exists(),
        "the listing reached the store"
    );

    // by-id resolves to it, and follows a later manual rename.
    let by_id = o.m(format!("by-id/{id}.md"));
    // Not through the old path's redirect: that ends with the grace period.
    wait_for(&o, "by-id to point at the memory's new place", || {
        fs::read_link(&by_id).is_ok_and(|t| t.ends_with("preferences/ui.md"))
            && fs::read(&by_id).ok().as_deref() == Some(&content[..])
    });
    fs::rename(&moved, o.m("preferences/dark-mode.md")).expect("rename through the mount");
    wait_for(&o, "by-id to follow the rename", || {
        fs::read_link(&by_id).is_ok_and(|t| t.ends_with("preferences/dark-mode.md"))
            && fs::read(&by_id).ok().as_deref() == Some(&content[..])
    });
}

#[test]
fn an_unclassifiable_inbox_item_stays_in_the_inbox_with_category_inbox() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.m("inbox")).expect("mkdir inbox");
    let item = o.m("inbox/zxqv.md");
    fs::write(&item, "zxqv blorp wibble frobnicate\n").expect("write");
    wait_content(&o, &o.s("inbox/zxqv.md"), "an id", has_id);
    // Two full organizer passes that we know finished.
    dream(&o, 1);
    let report = dream(&o, 1);
    assert_eq!(count(&report, "organized"), 0, "{report:#}");
    let f = fs::read(o.s("inbox/zxqv.md"))
        .map(|b| fields(&b))
        .expect("the item left the inbox");
    assert_eq!(
        f.get("category").map(String::as_str),
        Some("inbox"),
        "{f:?}"
    );
    assert_eq!(f.get("phase").map(String::as_str), Some("inbox"), "{f:?}");
    assert!(list(&o.m("inbox")).expect("ls").contains(&"zxqv.md".into()));
    assert_eq!(
        split(&fs::read(&item).expect("read")).1,
        b"zxqv blorp wibble frobnicate\n"
    );
}

/// Regression: the store watcher reports the organizer's own reads (open,
/// close-nowrite) as changes, and each change restarts the normalizer's
/// debounce, so with an interval below the debounce an inbox item was
/// read again before it ever became due and was never normalized.
#[test]
fn an_organizer_interval_shorter_than_the_debounce_does_not_starve_the_normalizer() {
    let o = organized(&FAST.replace("interval: 3s", "interval: 1s"), &[]);
    fs::create_dir_all(o.m("inbox")).expect("mkdir inbox");
    let item = o.m("inbox/zxqv.md");
    fs::write(&item, "zxqv blorp wibble frobnicate\n").expect("write");
    wait_content(&o, &o.s("inbox/zxqv.md"), "an id", has_id);
    // Through the mount the new content shows once the rewrite's exchange
    // has returned; seeing the store change first, a read of the mount can
    // still be inside it and reach the old inode.
    wait_content(&o, &item, "the phase through the mount", |b| {
        fields(b).get("phase").map(String::as_str) == Some("inbox")
    });
}

/// Regression: every read of a memory through the mount reaches the store
/// watcher as a change and restarts the normalizer's debounce, so a memory
/// someone reads more often than every 1.5 s (an agent polling it, an
/// editor re-reading it) is never normalized.
#[test]
fn a_memory_read_often_through_the_mount_is_still_normalized() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.m("notes")).expect("mkdir");
    let note = o.m("notes/read-often.md");
    fs::write(&note, "read often body\n").expect("write");
    wait_for(
        &o,
        "the memory to be normalized while it is read every 300 ms",
        || {
            let normalized = fs::read(&note).is_ok_and(|b| has_id(&b));
            if !normalized {
                std::thread::sleep(Duration::from_millis(300));
            }
            normalized
        },
    );
}

/// A git repository kept among the memories is the user's: its files get
/// no frontmatter (the work tree stays clean), while a note beside it
/// does.
#[test]
fn files_in_a_git_repository_inside_the_store_are_not_normalized() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.m("projects/tool/.git")).expect("mkdir");
    fs::write(o.m("projects/tool/.git/HEAD"), "ref: refs/heads/main\n").expect("write");
    fs::create_dir_all(o.m("projects/tool/docs")).expect("mkdir");
    let readme = o.m("projects/tool/README.md");
    let nested = o.m("projects/tool/docs/usage.md");
    fs::write(&readme, "# Tool\nplain readme\n").expect("write");
    fs::write(&nested, "# Usage\nrun it\n").expect("write");
    let note = o.m("projects/notes.md");
    fs::write(&note, "notes beside the repository\n").expect("write");
    wait_for(&o, "the note beside it to be normalized", || {
        fs::read(&note).is_ok_and(|b| has_id(&b))
    });
    // The note was rewritten after the repository's files were written:
    // theirs would have been too by now.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        fs::read_to_string(&readme).expect("read"),
        "# Tool\nplain readme\n"
    );
    assert_eq!(
        fs::read_to_string(&nested).expect("read"),
        "# Usage\nrun it\n"
    );
}

// ---------------------------------------------------------------------------
// The normalizer never loses a concurrent writer's update.

/// Appends `line` with open(O_APPEND), write, close.
fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().append(true).open(path)?;
    f.write_all(line.as_bytes())
}

/// The numbered lines `tag-N` in `text`, in file order.
fn numbered(text: &str, tag: &str) -> Vec<usize> {
    text.lines()
        .filter_map(|l| l.strip_prefix(tag)?.strip_prefix('-')?.parse().ok())
        .collect()
}

#[test]
fn appends_racing_the_normalizer_are_never_lost() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.m("notes")).expect("mkdir");
    const FILES: usize = 6;
    const ROUNDS: usize = 6;
    const BURST: usize = 25;
    let paths: Vec<PathBuf> = (0..FILES)
        .map(|i| o.m(format!("notes/hammer-{i}.md")))
        .collect();
    for p in &paths {
        fs::write(p, "# Hammered\n").expect("create");
    }
    // The normalizer runs once a file has been quiet for its debounce
    // (about 1.5 s), so each writer pauses for about that long and then
    // appends in a burst, to land inside the rewrite. The pauses differ
    // between files and rounds to sweep the window.
    let writers: Vec<_> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let p = p.clone();
            std::thread::spawn(move || -> io::Result<usize> {
                let mut n = 0;
                for round in 0..ROUNDS {
                    for _ in 0..BURST {
                        append_line(&p, &format!("line-{n}\n"))?;
                        n += 1;
                    }
                    let pause = 1450 + ((i * 17 + round * 29) % 120) as u64;
                    std::thread::sleep(Duration::from_millis(pause));
                }
                for _ in 0..BURST {
                    append_line(&p, &format!("line-{n}\n"))?;
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    let written: Vec<usize> = writers
        .into_iter()
        .map(|t| t.join().expect("writer thread").expect("append"))
        .collect();
    for (p, n) in paths.iter().zip(written) {
        let rel = p.strip_prefix(&o.mnt).expect("below the mount");
        wait_content(&o, &o.s(rel), "an id", has_id);
        let content = text(p);
        let expected: Vec<usize> = (0..n).collect();
        assert_eq!(
            numbered(&content, "line"),
            expected,
            "{}: lines lost, duplicated or reordered:\n{content}",
            p.display()
        );
        let body = split(content.as_bytes()).1;
        assert!(
            body.starts_with(b"# Hammered\nline-0\n"),
            "{}: the body does not start as written:\n{content}",
            p.display()
        );
        assert_eq!(
            fs::read(p).expect("mount"),
            fs::read(o.s(p.strip_prefix(&o.mnt).unwrap())).expect("store")
        );
    }
}

#[test]
fn a_file_open_for_writing_is_not_rewritten_until_it_is_closed() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.m("notes")).expect("mkdir");
    let p = o.m("notes/held.md");
    let store = o.s("notes/held.md");
    // A write session ends: the normalizer is now due in about 1.5 s ...
    fs::write(&p, "first line\n").expect("create");
    // ... and a second writer holds the file open through that moment.
    let mut held = fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .expect("open for writing");
    held.write_all(b"second line\n").expect("write");
    let ino = fs::metadata(&store).expect("stat").ino();
    let size = fs::metadata(&store).expect("stat").len();
    // Only stat while it is held: a read would restart the debounce and
    // make this pass for the wrong reason.
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let md = fs::metadata(&store).expect("stat the store file");
        assert_eq!(
            (md.ino(), md.len()),
            (ino, size),
            "the file was replaced or rewritten while open for writing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!fs::read(&store).expect("read").starts_with(b"---"));
    held.write_all(b"third line\n").expect("write after 3 s");
    drop(held);
    wait_content(&o, &store, "an id after close", has_id);
    assert_eq!(
        split(&fs::read(&p).expect("read")).1,
        b"first line\nsecond line\nthird line\n"
    );
}

// ---------------------------------------------------------------------------
// Malformed frontmatter.

#[test]
fn malformed_frontmatter_is_left_byte_for_byte_and_reported_in_lint() {
    // Bad YAML, and a block that never closes; the bodies differ so that
    // merging duplicates is not part of this test.
    let bad_yaml = |body: &str| format!("---\ntitle: [unclosed\ntags: x\n---\n{body}\n");
    let unclosed = "---\ntitle: never closed\nI prefer coffee but the block never ends\n";
    let seeded_bad = bad_yaml("I prefer tea, seeded outside the inbox.");
    let inbox_bad = bad_yaml("I prefer tea, written to the inbox.");
    let notes_bad = bad_yaml("I prefer tea, written outside the inbox.");
    let o = organized(
        FAST,
        &[
            ("notes/seeded-bad.md", &seeded_bad, 0),
            ("inbox/seeded-unclosed.md", unclosed, 0),
        ],
    );
    fs::create_dir_all(o.m("inbox")).expect("mkdir");
    fs::write(o.m("inbox/bad.md"), &inbox_bad).expect("write");
    fs::write(o.m("notes/bad.md"), &notes_bad).expect("write");
    let cases = [
        ("notes/seeded-bad.md", seeded_bad.as_str()),
        ("inbox/seeded-unclosed.md", unclosed),
        ("inbox/bad.md", inbox_bad.as_str()),
        ("notes/bad.md", notes_bad.as_str()),
    ];
    let lint = o.m(".mnemofs/lint");
    wait_for(&o, "every malformed file in .mnemofs/lint", || {
        let l = text(&lint);
        cases.iter().all(|(p, _)| l.contains(p))
    });
    // Give the normalizer its chance on the files written through the
    // mount (it runs about 1.5 s after close), then run the organizer.
    std::thread::sleep(Duration::from_secs(3));
    let report = dream(&o, 2);
    assert_eq!(count(&report, "organized"), 0, "{report:#}");
    for (p, content) in cases {
        assert_eq!(
            fs::read_to_string(o.s(p)).unwrap_or_else(|e| format!("<gone: {e}>")),
            content,
            "{p} was changed or moved"
        );
    }
    let l = text(&lint);
    for line in l
        .lines()
        .filter(|l| cases.iter().any(|(p, _)| l.contains(p)))
    {
        assert!(
            line.len() > line.find(": ").map_or(0, |i| i + 2),
            "lint gives no reason: {line}"
        );
    }
}

/// Regression: merging duplicates moved a memory whose frontmatter is
/// malformed into `archive/merged/`, where `merged_into`, `archived_reason`
/// and `archived_at` cannot be written (the YAML does not parse), so the
/// file left its path with no note of why.
#[test]
fn a_duplicate_with_malformed_frontmatter_is_not_merged() {
    let good = complete(
        "00000000-0000-4000-8000-0000000000dd",
        "organized",
        "knowledge",
        "The deploy key is in the vault.\n",
    );
    let bad = "---\ntitle: [unclosed\n---\nThe deploy key is in the vault.\n";
    let o = organized(
        FAST,
        &[
            // The well-formed copy is older, so it is the one kept.
            ("notes/key.md", &good, 3600),
            ("notes/key-copy.md", bad, 60),
        ],
    );
    dream(&o, 2);
    assert_eq!(
        fs::read_to_string(o.s("notes/key-copy.md")).unwrap_or_else(|e| format!("<gone: {e}>")),
        bad,
        "the malformed copy was moved or changed; archive/merged/ holds {:?}",
        list(&o.s("archive/merged")).unwrap_or_default()
    );
    assert_eq!(fs::read_to_string(o.s("notes/key.md")).expect("kept"), good);
}

// ---------------------------------------------------------------------------
// Background changes reach inotify watchers on the mount.

struct Watcher {
    child: Child,
    log: PathBuf,
}

impl Watcher {
    fn start(dir: &Path, log: PathBuf) -> Watcher {
        let err = log.with_extension("err");
        let mut child = Command::new("inotifywait")
            .args(["-m", "-r", "-e", "create,moved_to,moved_from,close_write"])
            .args(["--format", "%w%f %e"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("watch log"))
            .stderr(fs::File::create(&err).expect("watch err"))
            .spawn()
            .expect("spawn inotifywait");
        let ready = poll_until(WAIT, || text(&err).contains("Watches established"));
        if !ready {
            let _ = child.kill();
            panic!("inotifywait did not start: {}", text(&err));
        }
        Watcher { child, log }
    }

    fn events(&self) -> Vec<String> {
        text(&self.log).lines().map(String::from).collect()
    }

    fn saw(&self, path: &Path, kinds: &[&str]) -> bool {
        self.count(path, kinds) > 0
    }

    fn count(&self, path: &Path, kinds: &[&str]) -> usize {
        let prefix = format!("{} ", path.display());
        self.events()
            .iter()
            .filter(|l| {
                l.strip_prefix(&prefix)
                    .is_some_and(|e| e.split(',').any(|k| kinds.contains(&k)))
            })
            .count()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = wait_timeout(&mut self.child, Duration::from_secs(5));
    }
}

#[test]
fn an_inotify_watcher_on_the_mount_sees_the_normalizer_rewrite_and_the_organizer_move() {
    if !have_program("inotifywait") {
        eprintln!("SKIPPED: inotifywait is not installed (apt-get install inotify-tools)");
        return;
    }
    let o = organized(FAST, &[]);
    // inotifywait -r can miss events in a folder it has just started
    // watching, so every folder involved exists first.
    for d in ["inbox", "preferences", "notes"] {
        fs::create_dir_all(o.m(d)).expect("mkdir");
    }
    let w = Watcher::start(&o.mnt, o.state.join("inotify.log"));

    // A rewrite alone: a memory outside the inbox gets its frontmatter.
    let note = o.m("notes/plain.md");
    fs::write(&note, "plain note body\n").expect("write");
    wait_content(&o, &o.s("notes/plain.md"), "an id", has_id);
    wait_for(
        &o,
        "the watcher to see the rewrite of notes/plain.md",
        || w.saw(&note, &["MOVED_TO", "CLOSE_WRITE"]) && w.count(&note, &["MOVED_TO"]) >= 1,
    );

    // A move (and its rewrites): an inbox item goes to preferences/.
    let item = o.m("inbox/theme.md");
    let moved = o.m("preferences/theme.md");
    fs::write(&item, "I prefer the solarized theme\n").expect("write");
    wait_content(
        &o,
        &o.s("preferences/theme.md"),
        "an organized memory",
        |b| {
            let f = fields(b);
            f.contains_key("id") && f.get("phase").map(String::as_str) == Some("organized")
        },
    );
    wait_for(&o, "the watcher to see the move", || {
        w.saw(&item, &["MOVED_FROM"]) && w.saw(&moved, &["MOVED_TO", "CREATE"])
    });
    // The item was rewritten at least once (it gained frontmatter) besides
    // being moved: two arrivals at its name in all, inbox or final.
    wait_for(&o, "the watcher to see the item's rewrite", || {
        w.count(&item, &["MOVED_TO"]) + w.count(&moved, &["MOVED_TO"]) >= 2
    });
    let events = w.events();
    assert!(
        !events.is_empty(),
        "no events at all: {}",
        text(&o.state.join("inotify.err"))
    );
}

// ---------------------------------------------------------------------------
// Lifecycle: expiry and decay move to the archive, nothing is deleted.

fn complete(id: &str, phase: &str, category: &str, body: &str) -> String {
    format!(
        "---\nid: {id}\ncreated_at: 2020-01-01T00:00:00Z\nphase: {phase}\ncategory: {category}\n---\n{body}"
    )
}

#[test]
fn expired_inbox_items_and_decayed_memories_go_to_the_archive_and_nothing_is_deleted() {
    let yaml = FAST.replace(
        "decay: { enabled: false }",
        "decay: { enabled: true, after: 30d }",
    );
    // Two agents' captures, each with the date `write` gave it to expire.
    let old_inbox = complete(
        "00000000-0000-4000-8000-000000000001",
        "inbox",
        "inbox",
        "zxqv old blorp wibble\n",
    )
    .replacen("---\nid:", "---\nexpires_at: 2020-01-08T00:00:00Z\nid:", 1);
    let stale = complete(
        "00000000-0000-4000-8000-000000000002",
        "organized",
        "knowledge",
        "qwfp stale organized memory\n",
    );
    let fresh = complete(
        "00000000-0000-4000-8000-000000000003",
        "organized",
        "knowledge",
        "arst fresh organized memory\n",
    );
    let o = organized(
        &yaml,
        &[
            ("inbox/old.md", &old_inbox, 8 * DAY),
            ("notes/stale.md", &stale, 40 * DAY),
            ("notes/fresh.md", &fresh, 0),
            ("inbox/young.md", "zhrk young blorp wibble\n", 0),
            // Aged after its normalization, below.
            (
                "inbox/late.md",
                "---\nexpires_at: 2020-01-08T00:00:00Z\n---\nwxyv late blorp wibble\n",
                0,
            ),
        ],
    );
    let bodies = [
        "zxqv old blorp wibble",
        "qwfp stale organized memory",
        "arst fresh organized memory",
        "zhrk young blorp wibble",
        "wxyv late blorp wibble",
    ];
    wait_content(&o, &o.s("inbox/late.md"), "an id", has_id);
    age_file(&o.s("inbox/late.md"), 8 * DAY);

    wait_for(&o, "two expired items and one decayed memory", || {
        list(&o.s("archive/expired")).is_ok_and(|l| l.len() == 2)
            && list(&o.s("archive/decayed")).is_ok_and(|l| l.len() == 1)
    });
    let now = now();
    for (file, folder, why) in [
        ("old.md", "expired", "expired"),
        ("late.md", "expired", "expired"),
        ("stale.md", "decayed", "decayed"),
    ] {
        let p = o.m(format!("archive/{folder}/{file}"));
        wait_for(&o, "the archive note", || {
            field(&p, "phase").as_deref() == Some("archived")
        });
        let f = fields(&fs::read(&p).expect("read the archived file"));
        assert!(
            f.get("archived_reason").is_some_and(|r| r.contains(why)),
            "{file}: archived_reason missing or wrong: {f:?}"
        );
        let at = f
            .get("archived_at")
            .and_then(|t| parse_rfc3339(t))
            .unwrap_or_else(|| panic!("{file}: archived_at missing: {f:?}"));
        assert!(
            (now - at).abs() < DAY,
            "{file}: archived_at {at} is not now"
        );
    }
    assert!(o.s("inbox/young.md").exists(), "a young inbox item moved");
    assert!(o.s("notes/fresh.md").exists(), "a fresh memory decayed");
    for b in bodies {
        assert_eq!(
            holders(&o.store, b).len(),
            1,
            "{b:?} is not in exactly one file"
        );
    }
    // Archived memories stay archived: another pass changes nothing.
    let report = dream(&o, 2);
    assert_eq!(count(&report, "expired") + count(&report, "decayed"), 0);
    for b in bodies {
        assert_eq!(
            holders(&o.store, b).len(),
            1,
            "{b:?} is not in exactly one file"
        );
    }
}

// ---------------------------------------------------------------------------
// Level 2: duplicates.

#[test]
fn dream_level_2_merges_duplicates_and_redirects_links_to_the_copy_kept() {
    let kept_id = "00000000-0000-4000-8000-0000000000aa";
    let dup_id = "00000000-0000-4000-8000-0000000000bb";
    let kept = complete(
        kept_id,
        "organized",
        "knowledge",
        "The build cache lives in /var/cache/build.\n",
    );
    let dup = complete(
        dup_id,
        "organized",
        "knowledge",
        "The  build cache\nlives in   /var/cache/build.\n\n",
    );
    let linker = complete(
        "00000000-0000-4000-8000-0000000000cc",
        "organized",
        "knowledge",
        "See [[dup-stem]] for where the cache is, and [[dup-stem|the cache note]].\n",
    );
    let o = organized(
        FAST,
        &[
            // The older copy is the one kept.
            ("notes/dup-kept.md", &kept, 3600),
            ("notes/dup-stem.md", &dup, 60),
            ("notes/linker.md", &linker, 60),
        ],
    );
    wait_for(&o, "the index to know the link", || {
        list(&o.m("backlinks/dup-stem")).is_ok_and(|l| l.iter().any(|n| n.contains("linker")))
    });
    let report = dream(&o, 2);
    assert_eq!(count(&report, "merged"), 1, "{report:#}");
    // Asked at once, a search through the daemon finds the copy kept,
    // where it is, and not the archived one (unless asked for).
    let search = |query: &str| -> Vec<String> {
        let out = cli(
            Some(&o.m),
            &[
                "search".as_ref(),
                "--json".as_ref(),
                query.as_ref(),
                "--store".as_ref(),
                o.store.as_os_str(),
                "--state-dir".as_ref(),
                o.state.as_os_str(),
            ],
        );
        assert!(
            out.status.success(),
            "search: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<Json>(l).expect("a JSON line")["path"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    };
    let found = search("build cache");
    assert_eq!(found[0], "notes/dup-kept.md", "{found:?}");
    assert!(!found.iter().any(|p| p.contains("dup-stem")), "{found:?}");
    assert_eq!(
        search("build cache phase:archived"),
        ["archive/merged/dup-stem.md"]
    );
    assert!(
        o.s("notes/dup-kept.md").exists(),
        "the older copy was not kept"
    );
    assert!(!o.s("notes/dup-stem.md").exists(), "the duplicate stayed");
    let merged = o.m("archive/merged/dup-stem.md");
    let f = fields(&fs::read(&merged).expect("the duplicate is in archive/merged/"));
    assert_eq!(
        f.get("merged_into").map(String::as_str),
        Some(kept_id),
        "{f:?}"
    );
    assert_eq!(
        f.get("phase").map(String::as_str),
        Some("archived"),
        "{f:?}"
    );
    assert!(f.contains_key("archived_reason") && f.contains_key("archived_at"));
    assert_eq!(
        split(&fs::read(&merged).expect("read")).1,
        b"The  build cache\nlives in   /var/cache/build.\n\n",
        "the merged copy's body changed"
    );
    let l = text(&o.m("notes/linker.md"));
    assert!(
        l.contains("[[dup-kept]]") && l.contains("[[dup-kept|the cache note]]"),
        "links not redirected:\n{l}"
    );
    assert!(
        !l.contains("[[dup-stem"),
        "a link still points at the copy:\n{l}"
    );
    // Nothing was lost, and a second run merges nothing more.
    assert_eq!(holders(&o.store, "build cache").len(), 2);
    let again = dream(&o, 2);
    assert_eq!(count(&again, "merged"), 0, "{again:#}");
}

// ---------------------------------------------------------------------------
// Level 3: reminders; status.

#[test]
fn a_reminder_already_due_is_pending_from_the_mount_on() {
    let reminder = "---\nid: 00000000-0000-4000-8000-0000000000e1\ntitle: \"Reminder: call Ann\"\n\
                    phase: organized\ncategory: reminders\ncreated_at: 2020-01-01T00:00:00Z\n\
                    due_at: 2020-01-02T09:00:00Z\n---\nCall Ann.\n";
    // The organizer's interval is an hour: only the start can show it.
    let o = organized(
        "organizer:\n  interval: 1h\nnotifications: { method: none }\n",
        &[("reminders/call-ann.md", reminder, 0)],
    );
    let pending = o.m(".mnemofs/pending.md");
    wait_for_within(&o.m, Duration::from_secs(20), "the due reminder", || {
        fs::read_to_string(&pending).is_ok_and(|t| t.contains("call Ann"))
    });
}

#[test]
fn dream_level_3_extracts_reminders_in_english_and_chinese_once_and_status_reports_it() {
    let o = organized(
        FAST,
        &[
            (
                "notes/call.md",
                "Call Ann tomorrow 3pm about the contract.\n",
                0,
            ),
            (
                "notes/report.md",
                "The report has a deadline on 2099-12-01.\n",
                0,
            ),
            ("notes/meeting.md", "明天下午三点开会\n", 0),
        ],
    );
    let first = dream(&o, 3);
    assert!(count(&first, "reminders") >= 3, "{first:#}");
    let reminders = || -> Vec<(String, BTreeMap<String, String>)> {
        list(&o.m("reminders"))
            .unwrap_or_default()
            .into_iter()
            .map(|n| {
                let f = fs::read(o.m("reminders").join(&n))
                    .map(|b| fields(&b))
                    .unwrap_or_default();
                (n, f)
            })
            .collect()
    };
    let found = reminders();
    let now = now();
    for source in ["notes/call.md", "notes/report.md", "notes/meeting.md"] {
        let mine: Vec<_> = found
            .iter()
            .filter(|(_, f)| f.get("source").map(String::as_str) == Some(source))
            .collect();
        assert_eq!(mine.len(), 1, "reminders for {source}: {found:#?}");
        let (name, f) = mine[0];
        for key in ["due_at", "expires_at"] {
            let at = f
                .get(key)
                .and_then(|t| parse_rfc3339(t))
                .unwrap_or_else(|| panic!("{name}: no {key}: {f:?}"));
            assert!(at > now, "{name}: {key} {at} is not in the future");
        }
        let due = &f["due_at"];
        match source {
            "notes/report.md" => assert!(due.starts_with("2099-12-01"), "{name}: {due}"),
            // Tomorrow at 15:00 local time, in both languages.
            _ => {
                assert!(due.get(10..19) == Some("T15:00:00"), "{name}: {due}");
                let at = parse_rfc3339(due).expect("due_at");
                assert!(at - now <= 2 * DAY, "{name}: {due} is not tomorrow");
            }
        }
    }
    let second = dream(&o, 3);
    assert_eq!(count(&second, "reminders"), 0, "{second:#}");
    assert_eq!(
        reminders().len(),
        found.len(),
        "the second run added reminders"
    );

    let out = cli(
        Some(&o.m),
        &[
            "status".as_ref(),
            "--json".as_ref(),
            "--store".as_ref(),
            o.store.as_os_str(),
            "--state-dir".as_ref(),
            o.state.as_os_str(),
        ],
    );
    let status = json_of(&out, "mnemofs status");
    let last = &status["tasks"]["dream-3"];
    assert_eq!(last["level"].as_u64(), Some(3), "{status:#}");
    assert_eq!(last["reminders"].as_u64(), Some(0), "{status:#}");
    assert!(
        last["finished_at"]
            .as_i64()
            .is_some_and(|t| (now - t).abs() < DAY)
    );
}

// ---------------------------------------------------------------------------
// Dream without a daemon.

/// A foreground mount started by hand on an existing store; unmounted on drop.
struct PlainMount {
    child: Child,
    mnt: PathBuf,
}

impl Drop for PlainMount {
    fn drop(&mut self) {
        force_unmount(&self.mnt);
        common::signal(self.child.id(), libc::SIGTERM);
        if wait_timeout(&mut self.child, Duration::from_secs(10)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn dream_without_a_daemon_organizes_the_store_and_releases_its_lock() {
    let (dir, config) = write_config(FAST);
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    let mnt = dir.path().join("mnt");
    for d in [&store, &state, &mnt] {
        fs::create_dir_all(d).expect("mkdir");
    }
    fs::create_dir(store.join("inbox")).expect("mkdir inbox");
    fs::write(store.join("inbox/ui.md"), "I prefer dark mode\n").expect("seed");
    age_file(&store.join("inbox/ui.md"), 120);
    let args = |level: &'static str| -> Vec<&OsStr> {
        vec![
            "dream".as_ref(),
            "--json".as_ref(),
            "--level".as_ref(),
            level.as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
        ]
    };
    let report = json_of(&cli(None, &args("1")), "offline dream");
    assert_eq!(count(&report, "organized"), 1, "{report:#}");
    // Without --json, the counts in a line.
    let text_args: Vec<&OsStr> = args("1").into_iter().filter(|a| *a != "--json").collect();
    let out = cli(None, &text_args);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "dreamed (level 1): nothing to do\n"
    );
    let moved = fs::read(store.join("preferences/ui.md")).expect("the item moved");
    assert_eq!(split(&moved).1, b"I prefer dark mode\n");
    let f = fields(&moved);
    assert_eq!(
        f.get("phase").map(String::as_str),
        Some("organized"),
        "{f:?}"
    );
    assert!(f.contains_key("id"), "{f:?}");
    assert!(!store.join("inbox/ui.md").exists());
    let private = state.join("dream-mount");
    assert!(!is_mounted(&private), "the private mount was left behind");

    // The lock is free: another offline run and then a mount both work.
    json_of(&cli(None, &args("2")), "second offline dream");
    let child = Command::new(bin())
        .arg("mount")
        .arg(&mnt)
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .args(["--foreground", "--no-organizer"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(dir.path().join("mount.log")).expect("log"))
        .spawn()
        .expect("spawn mount");
    let guard = PlainMount {
        child,
        mnt: mnt.clone(),
    };
    assert!(
        poll_until(WAIT, || is_fuse_mounted(&mnt)),
        "the store could not be mounted after an offline dream: {}",
        text(&dir.path().join("mount.log"))
    );
    assert!(poll_until(WAIT, || {
        fs::read(mnt.join("preferences/ui.md")).ok().as_deref() == Some(&moved[..])
    }));
    drop(guard);
}

// ---------------------------------------------------------------------------
// Scale.

const KINDS: [(&str, &str); 8] = [
    (
        "preferences",
        "I prefer dark themes and tabs over spaces in every editor.",
    ),
    (
        "lessons",
        "Lesson learned: never deploy on a Friday afternoon.",
    ),
    (
        "decisions",
        "We decided to use Postgres instead of MySQL for billing.",
    ),
    ("habits", "Every morning I run five kilometres before work."),
    (
        "skills",
        "Good at SQL query tuning and reading execution plans.",
    ),
    (
        "people",
        "My colleague Tom Baker leads the platform team and lives in Leeds.",
    ),
    (
        "feedback",
        "Feedback from review: the error messages should say what to do next.",
    ),
    (
        "project",
        "The billing-service repo deploys to production from the main branch.",
    ),
];

/// An inbox item of about 1 KB: a classifiable sentence, a unique token,
/// and the sentence again until the note is long enough.
fn scale_item(i: usize) -> (String, String) {
    let (category, cue) = KINDS[i % KINDS.len()];
    let token = format!("tok{i:05}x");
    let mut body = format!("{cue} {token}\n\n");
    while body.len() < 1000 {
        body.push_str(cue);
        body.push(' ');
    }
    body.push('\n');
    (category.to_string(), body)
}

#[test]
fn a_thousand_inbox_items_are_all_organized_none_lost_while_the_mount_stays_responsive() {
    const N: usize = 1000;
    const UNSORTABLE: usize = 20;
    let mut seed: Vec<(String, String)> = (0..N)
        .map(|i| (format!("inbox/item-{i:05}.md"), scale_item(i).1))
        .collect();
    for j in 0..UNSORTABLE {
        seed.push((
            format!("inbox/odd-{j:03}.md"),
            format!("zqxj odd{j:03}q blorp wibble\n"),
        ));
    }
    let seed_refs: Vec<(&str, &str, i64)> = seed
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str(), 0))
        .collect();
    let o = organized(FAST, &seed_refs);

    // Writers keep going while the organizer works.
    let stop = Arc::new(AtomicBool::new(false));
    let live = {
        let stop = Arc::clone(&stop);
        let inbox = o.m("inbox");
        std::thread::spawn(move || -> io::Result<usize> {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) && n < 200 {
                let (_, body) = scale_item(N + n);
                fs::write(inbox.join(format!("live-{n:04}.md")), body)?;
                n += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(n)
        })
    };
    // The mount answers while the organizer works through the pile.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut probes = 0;
    loop {
        let probe = metadata_with_timeout(&o.mnt, Duration::from_secs(10));
        assert!(
            matches!(probe, Some(Ok(_))),
            "stat of the mount root hung or failed while organizing"
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let root = o.mnt.clone();
        std::thread::spawn(move || {
            let _ = tx.send(list(&root));
        });
        let listing = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("ls of the mount root hung while organizing");
        assert!(listing.is_ok(), "ls of the mount root failed: {listing:?}");
        probes += 1;
        let left = list(&o.s("inbox")).map(|l| l.len()).unwrap_or(0);
        if live.is_finished() && left <= UNSORTABLE {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{left} items still in the inbox after 300 s\n--- daemon log ---\n{}",
            o.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    stop.store(true, Ordering::Relaxed);
    let live_n = live.join().expect("writer").expect("live writes");
    assert!(probes > 0);

    let left = list(&o.s("inbox")).expect("ls inbox");
    assert!(
        left.iter().all(|n| n.starts_with("odd-")),
        "classifiable items left in the inbox: {left:?}"
    );
    assert_eq!(left.len(), UNSORTABLE, "unsortable items moved: {left:?}");
    // Every item is in exactly one file, in its category, body intact.
    let mut by_token: BTreeMap<String, PathBuf> = BTreeMap::new();
    for rel in files_below(&o.store) {
        let Ok(b) = fs::read(o.store.join(&rel)) else {
            continue;
        };
        let t = String::from_utf8_lossy(&b);
        if let Some(i) = t.find(" tok") {
            let token = t[i + 1..i + 10].to_string();
            if let Some(prev) = by_token.insert(token.clone(), rel.clone()) {
                panic!(
                    "{token} is in both {} and {}",
                    prev.display(),
                    rel.display()
                );
            }
        }
    }
    for i in 0..N + live_n {
        let (category, body) = scale_item(i);
        let token = format!("tok{i:05}x");
        let rel = by_token
            .get(&token)
            .unwrap_or_else(|| panic!("item {i} ({token}) was lost"));
        assert!(
            rel.starts_with(&category),
            "item {i} went to {} instead of {category}/",
            rel.display()
        );
        let content = fs::read(o.store.join(rel)).expect("read");
        assert_eq!(
            split(&content).1,
            body.as_bytes(),
            "item {i}: body changed in {}",
            rel.display()
        );
    }
}

// ---------------------------------------------------------------------------
// Commands find the daemon.

/// Slow settings: nothing moves on its own during a test, so whatever
/// moves was moved by the command under test.
const QUIET: &str = "\
organizer: { interval: 1h, quiet_period: 1h, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
";

#[test]
fn dream_given_only_the_store_reaches_a_daemon_with_its_own_state_dir_and_classifies_a_fresh_item()
{
    if !have_program("inotifywait") {
        eprintln!("SKIPPED: inotifywait is not installed (apt-get install inotify-tools)");
        return;
    }
    let o = organized(QUIET, &[]);
    for d in ["inbox", "preferences"] {
        fs::create_dir_all(o.m(d)).expect("mkdir");
    }
    let w = Watcher::start(&o.mnt, o.state.join("inotify.log"));
    fs::write(o.m("inbox/ui.md"), "I prefer dark mode in every editor\n").expect("write");
    std::thread::sleep(Duration::from_secs(2));

    // No --state-dir: the daemon was started with its own, and is found by
    // the store alone. The item is 2 s old, inside the 1 h quiet period:
    // an explicit dream classifies it anyway.
    let out = cli(
        Some(&o.m),
        &[
            "dream".as_ref(),
            "--json".as_ref(),
            "--store".as_ref(),
            o.store.as_os_str(),
        ],
    );
    let report = json_of(&out, "mnemofs dream --store");
    assert_eq!(count(&report, "organized"), 1, "{report:#}");
    assert!(o.s("preferences/ui.md").exists(), "{report:#}");
    assert!(!o.s("inbox/ui.md").exists());
    wait_for(&o, "the watcher on the mount to see the move", || {
        w.saw(&o.m("inbox/ui.md"), &["MOVED_FROM"])
            && w.saw(&o.m("preferences/ui.md"), &["MOVED_TO"])
    });

    // status says who answered, given the store or the mountpoint.
    for target in [o.store.as_os_str(), o.mnt.as_os_str()] {
        let out = cli(Some(&o.m), &["status".as_ref(), "--json".as_ref(), target]);
        let status = json_of(&out, "mnemofs status");
        assert_eq!(status["served_by"], "daemon", "{status:#}");
        assert_eq!(
            status["pid"].as_u64(),
            Some(u64::from(o.pid())),
            "{status:#}"
        );
        let store = fs::canonicalize(&o.store).expect("store");
        assert_eq!(status["store"], store.display().to_string(), "{status:#}");
        assert!(status["tasks"]["dream-1"].is_object(), "{status:#}");
    }

    // --store pointing at the mount is the mount's store: no second index.
    let out = cli(
        Some(&o.m),
        &[
            "search".as_ref(),
            "dark".as_ref(),
            "--json".as_ref(),
            "--store".as_ref(),
            o.mnt.as_os_str(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hits = String::from_utf8_lossy(&out.stdout);
    assert!(hits.contains("preferences/ui.md"), "{hits}");
}

#[test]
fn without_a_daemon_status_says_it_worked_on_the_store_and_the_skipped_items_say_why() {
    let (dir, config) = write_config(QUIET);
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    fs::create_dir_all(store.join("inbox")).expect("mkdir");
    fs::write(store.join("inbox/misc.md"), "zxqv plorb\n").expect("seed");
    let common = |cmd: &'static str| -> Vec<&OsStr> {
        vec![
            cmd.as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
        ]
    };
    let mut args = common("dream");
    args.extend(["--json".as_ref(), "--config".as_ref(), config.as_os_str()]);
    let report = json_of(&cli(None, &args), "dream without a daemon");
    let skipped = report["skipped"].as_array().expect("skipped list");
    assert!(
        skipped.iter().any(|s| s["path"] == "inbox/misc.md"
            && s["reason"]
                .as_str()
                .is_some_and(|r| r.contains("no category"))),
        "{report:#}"
    );
    let mut args = common("status");
    args.push("--json".as_ref());
    let status = json_of(&cli(None, &args), "status without a daemon");
    assert_eq!(status["served_by"], "local", "{status:#}");
    assert!(status["pid"].is_null(), "{status:#}");
    assert!(status["tasks"]["dream-1"].is_object(), "{status:#}");
    assert!(
        status["writer"]
            .as_str()
            .is_some_and(|w| w.starts_with("directly on")),
        "{status:#}"
    );
}

#[test]
fn on_the_schedule_an_inbox_item_moves_once_its_quiet_period_has_passed_not_at_the_next_tick() {
    // The interval is an hour: only the quiet-period wake-up can move it.
    let o = organized(
        "\
organizer: { interval: 1h, quiet_period: 2s, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
",
        &[],
    );
    fs::create_dir_all(o.m("inbox")).expect("mkdir");
    fs::write(o.m("inbox/theme.md"), "I prefer the solarized theme\n").expect("write");
    wait_for(&o, "the item to move after its quiet period", || {
        o.s("preferences/theme.md").exists()
    });
    assert!(!o.s("inbox/theme.md").exists());
    wait_for(&o, "the inbox run to be recorded", || {
        text(&o.state.join("tasks.json")).contains("\"inbox\"")
    });
}

/// `cp a.md b.md` through the mount: the copy gets an id of its own once
/// writes have stopped, whether the original had its id already or gets
/// it at the same moment, and lint names neither afterwards.
#[test]
fn a_copy_through_the_mount_gets_its_own_id() {
    let o = organized(
        FAST,
        &[(
            "a.md",
            "---\nid: 11111111-1111-4111-8111-111111111111\n---\n# A note\nhello there\n",
            0,
        )],
    );
    fs::copy(o.m("a.md"), o.m("b.md")).expect("cp");
    fs::write(o.m("c.md"), "# C note\nnew here\n").expect("write");
    fs::copy(o.m("c.md"), o.m("d.md")).expect("cp at once");
    let ids = || -> Vec<Option<String>> {
        ["a.md", "b.md", "c.md", "d.md"]
            .iter()
            .map(|p| field(&o.s(p), "id"))
            .collect()
    };
    let distinct = poll_until(Duration::from_secs(30), || {
        let ids = ids();
        let mut set: Vec<&String> = ids.iter().flatten().collect();
        set.sort();
        set.dedup();
        ids.iter().all(Option::is_some) && set.len() == 4
    });
    assert!(distinct, "{:?}", ids());
    assert_eq!(
        field(&o.s("a.md"), "id").as_deref(),
        Some("11111111-1111-4111-8111-111111111111"),
        "the original keeps its id"
    );
}

/// `cp a.md b.md`, then the original is edited before the copy is: the
/// original still keeps its id and the copy gets a new one, although the
/// original's status changed last.
#[test]
fn an_original_edited_after_its_copy_keeps_its_id() {
    const ID: &str = "22222222-2222-4222-8222-222222222222";
    let o = organized(
        "\
organizer: { interval: 1s, quiet_period: 4s, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
",
        &[(
            "a.md",
            &format!("---\nid: {ID}\n---\n# A note\nhello there\n"),
            0,
        )],
    );
    // As a copy is made, well after its original was seen.
    wait_for(&o, "the original to be indexed", || {
        o.m(format!("by-id/{ID}.md")).exists()
    });
    fs::copy(o.m("a.md"), o.m("b.md")).expect("cp");
    // Long enough for the copy to be read again (a change within 2 s of
    // its reading is), short of the quiet period.
    std::thread::sleep(Duration::from_millis(2500));
    let mut a = fs::OpenOptions::new()
        .append(true)
        .open(o.m("a.md"))
        .expect("open a.md");
    a.write_all(b"and more\n").expect("append");
    drop(a);
    let renewed = poll_until(Duration::from_secs(30), || {
        field(&o.s("b.md"), "id").is_some_and(|id| id != ID)
    });
    assert!(renewed, "b.md: {:?}", field(&o.s("b.md"), "id"));
    assert_eq!(field(&o.s("a.md"), "id").as_deref(), Some(ID));
    assert!(text(&o.s("a.md")).ends_with("and more\n"));
}

/// A program behind the mount that holds a note open for appending (a
/// logger) keeps its writes: the note is not rewritten while it is open,
/// and gets its frontmatter once closed.
#[test]
fn a_note_held_open_for_writing_behind_the_mount_keeps_later_writes() {
    let o = organized(FAST, &[]);
    fs::create_dir_all(o.s("held")).expect("mkdir");
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(o.s("held/log.md"))
        .expect("open behind the mount");
    log.write_all(b"line 1\n").expect("write");
    log.flush().expect("flush");
    // Several organizer rounds (every 3 s) while it is held.
    std::thread::sleep(Duration::from_secs(8));
    log.write_all(b"line 2\n").expect("write");
    drop(log);
    assert!(
        field(&o.s("held/log.md"), "id").is_none(),
        "rewritten while held open:\n{}",
        text(&o.s("held/log.md"))
    );
    wait_for(&o, "the note to be normalized once closed", || {
        field(&o.s("held/log.md"), "id").is_some()
    });
    assert!(
        text(&o.s("held/log.md")).ends_with("line 1\nline 2\n"),
        "{}",
        text(&o.s("held/log.md"))
    );
}
