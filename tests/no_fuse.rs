//! Everything but `mount` works where FUSE does not.
//!
//! Each command runs in a private mount namespace (`unshare -m`) in which
//! `/dev/fuse` is `/dev/null`, as in a container without the device. There
//! `dream`, `search`, `status` and `reindex` must work on the store
//! directly and give what a daemon gives for the same store, and `mount`
//! must fail at once with one sentence that names FUSE.
//!
//! Needs root (for the namespace). Real mounts are used only for the
//! comparison run.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use common::{Mount, MountOptions, bin, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(180);

/// Nothing moves on its own: only the commands under test change the store.
const CONFIG: &str = "\
organizer: { interval: 1h, quiet_period: 1h, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
";

/// Memories outside the inbox carry complete frontmatter, so a daemon's
/// start-up normalization leaves them as they are.
fn complete(id: &str, category: &str, body: &str) -> String {
    format!(
        "---\nid: {id}\ncreated_at: 2026-01-0{}T00:00:00Z\nphase: organized\ncategory: {category}\n---\n{body}",
        id.len() % 9 + 1
    )
}

fn seed(store: &Path) {
    let files: Vec<(&str, String)> = vec![
        (
            "inbox/dark.md",
            "I prefer dark mode in every editor\n".into(),
        ),
        ("inbox/zh.md", "用户偏好深色模式\n".into()),
        ("inbox/odd.md", "zxqv plorb\n".into()),
        (
            "knowledge/rust-a.md",
            complete("a1", "knowledge", "Rust has no garbage collector.\n"),
        ),
        (
            "knowledge/rust-b.md",
            complete("b22", "knowledge", "Rust  has no garbage\ncollector.\n"),
        ),
        (
            // Written now: "tomorrow" counts from the note's own date.
            "knowledge/call.md",
            complete(
                "c333",
                "knowledge",
                "Call Ann tomorrow 3pm about the contract.\n",
            )
            .replacen(
                "created_at: 2026-01-05T00:00:00Z",
                &format!(
                    "created_at: {}",
                    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ")
                ),
                1,
            ),
        ),
    ];
    let base = SystemTime::now() - Duration::from_secs(3600);
    for (i, (rel, content)) in files.iter().enumerate() {
        let path = store.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, content).expect("seed");
        // Distinct, fixed ages: the older duplicate is the one kept.
        let file = fs::File::options().write(true).open(&path).expect("open");
        file.set_modified(base + Duration::from_secs(i as u64))
            .expect("mtime");
    }
}

/// Runs the CLI with `/dev/fuse` masked in a private mount namespace.
fn without_fuse(args: &[&OsStr]) -> Output {
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-m",
        "sh",
        "-c",
        "mount --bind /dev/null /dev/fuse && exec \"$@\"",
        "sh",
    ])
    .arg(bin())
    .args(args)
    .env("MNEMOFS_LOG", "warn");
    run_with_timeout(&mut cmd, TIMEOUT).expect("the command hung")
}

fn ok_stdout(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(out: &Output, what: &str) -> serde_json::Value {
    let text = ok_stdout(out, what);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {text}"))
}

/// What the organizer decides, per file: path, body, and the fields it
/// sets (ids and times differ between runs and are left out).
fn outcome(store: &Path) -> BTreeMap<String, (String, BTreeMap<String, String>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in fs::read_dir(store.join(&rel)).expect("read_dir").flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let child = rel.join(&name);
            if entry.file_type().expect("type").is_dir() {
                stack.push(child);
                continue;
            }
            let text = fs::read_to_string(store.join(&child)).expect("read");
            let (fm, body) = match text
                .strip_prefix("---\n")
                .and_then(|t| t.split_once("\n---\n"))
            {
                Some((fm, body)) => (fm.to_string(), body.to_string()),
                None => (String::new(), text.clone()),
            };
            let map: BTreeMap<String, serde_yaml::Value> =
                serde_yaml::from_str(&fm).unwrap_or_default();
            let kept: BTreeMap<String, String> = map
                .into_iter()
                .filter(|(k, _)| {
                    [
                        "phase",
                        "category",
                        "type",
                        "archived_reason",
                        "merged_into",
                        "due_at",
                        "expires_at",
                        "source",
                    ]
                    .contains(&k.as_str())
                })
                .map(|(k, v)| (k, serde_yaml::to_string(&v).unwrap_or_default()))
                .collect();
            let body = if child.starts_with("reminders") {
                // A reminder's text names when it was made.
                String::new()
            } else {
                body
            };
            out.insert(child.display().to_string(), (body, kept));
        }
    }
    out
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn without_fuse_dream_search_status_and_reindex_work_and_match_a_daemon() {
    if !is_root() {
        eprintln!("SKIPPED: a private mount namespace needs root");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("mnemofs-nofuse-")
        .tempdir()
        .expect("tempdir");
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    let config = dir.path().join("config.yaml");
    fs::write(&config, CONFIG).expect("config");
    seed(&store);
    let at = |cmd: &'static str| -> Vec<&OsStr> {
        vec![
            cmd.as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--state-dir".as_ref(),
            state.as_os_str(),
        ]
    };

    // mount: one sentence naming FUSE, nothing left behind.
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).expect("mkdir mnt");
    let mut args = at("mount");
    args.insert(1, mnt.as_os_str());
    let out = without_fuse(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "mount succeeded without FUSE: {err}");
    assert_eq!(err.trim().lines().count(), 1, "not one sentence: {err}");
    assert!(err.contains("FUSE is not available"), "{err}");
    assert!(err.contains("fuse3"), "the fix is not named: {err}");

    // dream --level 3 on the store itself.
    let mut args = at("dream");
    args.extend::<[&OsStr; 5]>([
        "--json".as_ref(),
        "--level".as_ref(),
        "3".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    let report = json(&without_fuse(&args), "dream --level 3 without FUSE");
    assert_eq!(report["organized"], 2, "{report:#}");
    // Each filed note with what placed it.
    let filed = report["filed"].as_array().expect("filed");
    assert_eq!(filed.len(), 2, "{report:#}");
    assert!(
        filed.iter().all(
            |f| f["from"].as_str().is_some_and(|p| p.starts_with("inbox/"))
                && f["to"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("preferences/"))
                && f["by"].as_str().is_some_and(|b| !b.is_empty())
        ),
        "{report:#}"
    );
    assert_eq!(report["merged"], 1, "{report:#}");
    assert!(report["reminders"].as_u64() >= Some(1), "{report:#}");
    let local = outcome(&store);
    assert!(local.contains_key("preferences/dark.md"), "{local:#?}");
    assert!(local.contains_key("preferences/zh.md"), "{local:#?}");
    assert!(local.contains_key("inbox/odd.md"), "{local:#?}");
    let merged = &local["archive/merged/rust-b.md"].1;
    assert!(merged.contains_key("merged_into"), "{merged:?}");
    let reminder = local
        .iter()
        .find(|(p, _)| p.starts_with("reminders/"))
        .unwrap_or_else(|| panic!("no reminder: {local:#?}"));
    for key in ["due_at", "expires_at"] {
        assert!(reminder.1.1.contains_key(key), "{reminder:?}");
    }

    // search, status, reindex.
    let mut args = at("search");
    args.extend::<[&OsStr; 2]>(["dark".as_ref(), "--json".as_ref()]);
    let hits = ok_stdout(&without_fuse(&args), "search without FUSE");
    assert!(hits.contains("preferences/dark.md"), "{hits}");
    // Each hit says when its memory was written.
    assert!(hits.contains("\"created\":\""), "{hits}");
    let mut args = at("search");
    args.extend::<[&OsStr; 2]>(["深色".as_ref(), "--json".as_ref()]);
    let hits = ok_stdout(&without_fuse(&args), "Chinese search without FUSE");
    assert!(hits.contains("preferences/zh.md"), "{hits}");
    let mut args = at("status");
    args.push("--json".as_ref());
    let status = json(&without_fuse(&args), "status without FUSE");
    assert_eq!(status["served_by"], "local", "{status:#}");
    assert!(status["tasks"]["dream-3"].is_object(), "{status:#}");
    let said = ok_stdout(&without_fuse(&at("reindex")), "reindex without FUSE");
    assert!(said.starts_with("indexed "), "{said}");

    // The same store through a daemon gives the same outcome.
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--config".into(), config.display().to_string()],
        seed: Vec::new(),
        organizer: true,
        before_start: None,
    });
    seed_into_mount(&m);
    let out = run_with_timeout(
        Command::new(bin())
            .args(["dream", "--json", "--level", "3", "--store"])
            .arg(&m.store),
        TIMEOUT,
    )
    .expect("dream through the daemon hung");
    let report = json(&out, "dream --level 3 through the daemon");
    assert_eq!(report["organized"], 2, "{report:#}");
    let daemon = outcome(&m.store);
    assert_eq!(
        local, daemon,
        "the store organized without FUSE differs from the one a daemon organized"
    );
}

/// Seeds the mount's store behind its back, as `seed` does, and waits for
/// the daemon's index to see it.
fn seed_into_mount(m: &Mount) {
    seed(&m.store);
    let want = 6;
    let seen = common::poll_until(Duration::from_secs(30), || {
        fs::read_to_string(m.m(".mnemofs/status.json"))
            .ok()
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
            .and_then(|v| v["documents"].as_u64())
            .is_some_and(|n| n >= want)
    });
    assert!(seen, "the daemon's index did not see the seeded store");
}
