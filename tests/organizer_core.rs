//! Core tests of the organizer: `tasks::OneShot` (a requested dream, run
//! on the caller's thread) over a temp store, writing through the store
//! writer (`DirectWriter`), wrapped where a test must see or steer what
//! the organizer asks of its writer (redirects, busy files, a lost
//! compare-and-swap). The index is in RAM.
//!
//! No kernel mount and no FUSE: these run anywhere `cargo test` does.
//! They pin what each dream level does to the files (classification and
//! moves, expiry, duplicates, links, reminders, malformed frontmatter);
//! `tests/organizer.rs` proves the same through a real mount and daemon.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mnemofs::config::Config;
use mnemofs::index::Index;
use mnemofs::memory::reminders::format_rfc3339;
use mnemofs::ops::{DirectWriter, Organizer, Outcome, Report, Skipped, Writer};
use mnemofs::store::counters::CounterStore;
use mnemofs::store::{Store, StorePath};
use mnemofs::tasks::{OneShot, Setup};
use mnemofs::views::{TaskOutputs, Views};

const DAY: u64 = 86_400;

/// Settings for every test: no desktop notifications, reminders in UTC.
const BASE: &str = "\
notifications: { method: none }
timezone: UTC
";

/// The store writer, recording what the organizer asks of it and, on
/// request, reporting files as open for writing or rewrites as lost.
#[derive(Debug)]
struct Recording {
    inner: DirectWriter,
    /// Paths `is_busy` reports as open for writing.
    busy: Mutex<HashSet<StorePath>>,
    /// When set, every `replace` loses its compare-and-swap.
    refuse_replace: AtomicBool,
    redirects: Mutex<Vec<(StorePath, StorePath, Duration)>>,
    removed: Mutex<Vec<StorePath>>,
    replaced: Mutex<Vec<StorePath>>,
}

impl Recording {
    fn new(inner: DirectWriter) -> Recording {
        Recording {
            inner,
            busy: Mutex::default(),
            refuse_replace: AtomicBool::new(false),
            redirects: Mutex::default(),
            removed: Mutex::default(),
            replaced: Mutex::default(),
        }
    }
}

impl Writer for Recording {
    fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
        if self.refuse_replace.load(Ordering::SeqCst) {
            return Ok(Outcome::Busy);
        }
        let outcome = self.inner.replace(path, expected, new)?;
        if outcome == Outcome::Done {
            self.replaced.lock().expect("lock").push(path.clone());
        }
        Ok(outcome)
    }
    fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        self.inner.write(path, content)
    }
    fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        self.inner.create(path, content)
    }
    fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
        if self.is_busy(from) {
            return Ok(Outcome::Busy);
        }
        self.inner.move_to(from, to)
    }
    fn remove_file(&self, path: &StorePath) -> io::Result<()> {
        self.removed.lock().expect("lock").push(path.clone());
        self.inner.remove_file(path)
    }
    fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
        self.removed.lock().expect("lock").push(path.clone());
        self.inner.remove_folder(path)
    }
    fn is_busy(&self, path: &StorePath) -> bool {
        self.busy.lock().expect("lock").contains(path)
    }
    fn redirect(&self, old: &StorePath, new: &StorePath, grace: Duration) {
        self.redirects
            .lock()
            .expect("lock")
            .push((old.clone(), new.clone(), grace));
    }
    fn describe(&self) -> String {
        "recording".into()
    }
}

/// A seeded temp store with a one-shot organizer over it.
struct Fixture {
    root: tempfile::TempDir,
    writer: Arc<Recording>,
    organizer: OneShot,
    outputs: TaskOutputs,
    _index: Index,
}

/// A file to seed: store path, bytes, age (seconds, as its mtime).
type Seed<'a> = (&'a str, &'a [u8], u64);

impl Fixture {
    /// Seeds the store, then starts the index (its start-up reconcile
    /// indexes the seed) and the organizer under `BASE` plus `yaml`.
    fn new(yaml: &str, seed: &[Seed<'_>]) -> Fixture {
        Fixture::with_state(yaml, seed, None)
    }

    fn with_state(yaml: &str, seed: &[Seed<'_>], state_dir: Option<PathBuf>) -> Fixture {
        let root = tempfile::tempdir().expect("tempdir");
        for (rel, bytes, age) in seed {
            let path = root.path().join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, bytes).expect("seed");
            if *age > 0 {
                set_age(&path, *age);
            }
        }
        let (config, warnings) = Config::from_yaml(&format!("{BASE}{yaml}")).expect("config");
        assert!(warnings.is_empty(), "{warnings:?}");
        let store = Arc::new(Store::open(root.path()).expect("store"));
        let index = Index::in_memory(Arc::clone(&store)).expect("index");
        let views = Views::new(index.clone());
        let writer = Arc::new(Recording::new(
            DirectWriter::new(Arc::clone(&store)).with_index(index.clone()),
        ));
        let outputs = views.task_outputs();
        let organizer = OneShot::new(Setup {
            writer: Arc::clone(&writer) as Arc<dyn Writer>,
            store,
            index: index.clone(),
            counters: Some(Arc::new(CounterStore::in_memory())),
            config,
            outputs: outputs.clone(),
            state_dir,
            history: None,
        });
        Fixture {
            root,
            writer,
            organizer,
            outputs,
            _index: index,
        }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn bytes(&self, rel: &str) -> Vec<u8> {
        fs::read(self.p(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    fn dream(&self, level: u8) -> Report {
        let report = self.organizer.dream(level).expect("dream");
        assert_eq!(report.level, level);
        assert!(report.errors.is_empty(), "{report:#?}");
        report
    }

    fn files(&self) -> Vec<String> {
        files_below(self.root.path())
    }

    /// The files in one folder of the store (names only).
    fn names_in(&self, rel: &str) -> Vec<String> {
        files_below(&self.p(rel))
    }
}

/// Sets a file's mtime to `secs` ago.
fn set_age(path: &Path, secs: u64) {
    let when = SystemTime::now() - Duration::from_secs(secs);
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("set the mtime of {}: {e}", path.display()));
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// Every file below `root` (relative paths, sorted), temp files included.
fn files_below(root: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().expect("file type").is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).expect("below the base");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Splits a memory into its frontmatter text and its body bytes. Fences
/// may end in CRLF (a block is written in the file's own line endings).
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

fn yaml(bytes: &[u8]) -> BTreeMap<String, serde_yaml::Value> {
    let Some(fm) = split(bytes).0 else {
        return BTreeMap::new();
    };
    serde_yaml::from_str(&fm).unwrap_or_else(|e| panic!("bad frontmatter {fm:?}: {e}"))
}

/// The scalar frontmatter fields of a memory, as strings.
fn fields(bytes: &[u8]) -> BTreeMap<String, String> {
    yaml(bytes)
        .into_iter()
        .filter_map(|(k, v)| {
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

fn list_field(bytes: &[u8], key: &str) -> Vec<String> {
    yaml(bytes)
        .get(key)
        .and_then(|v| v.as_sequence())
        .map(|s| {
            s.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<usize> = s.split('-').map(str::len).collect();
    parts == [8, 4, 4, 4, 12] && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

/// A memory with complete frontmatter, so nothing but the test's subject
/// changes it.
fn complete(id: &str, title: &str, body: &str) -> String {
    format!(
        "---\nid: {id}\ntitle: {title}\ncreated_at: 2020-01-01T00:00:00Z\nphase: organized\ncategory: knowledge\n---\n{body}"
    )
}

fn skipped(report: &Report, path: &str) -> Vec<String> {
    report
        .skipped
        .iter()
        .filter(|s| s.path == path)
        .map(|s| s.reason.clone())
        .collect()
}

// ---------------------------------------------------------------------------
// Level 1: classify and move.

/// Inbox items in English (one per category cue) and Chinese, simplified
/// and traditional.
const CLASSIFIED: [(&str, &str, &str); 12] = [
    ("inbox/ui.md", "I prefer dark mode\n", "preferences"),
    (
        "inbox/rm.md",
        "Lesson learned: never run rm -rf in a hurry\n",
        "lessons",
    ),
    (
        "inbox/db.md",
        "We decided to use Postgres for the store\n",
        "decisions",
    ),
    ("inbox/run.md", "Every morning I go for a run\n", "habits"),
    (
        "inbox/bisect.md",
        "How to bisect a regression with git\n",
        "skills",
    ),
    (
        "inbox/ann.md",
        "Ann Lee is my manager; she joined the company in 2021\n",
        "people",
    ),
    (
        "inbox/review.md",
        "Feedback from review: split the module\n",
        "feedback",
    ),
    (
        "inbox/ci.md",
        "In the project we ship the mobile beta next sprint\n",
        "project",
    ),
    ("inbox/深色主题.md", "我更喜欢用深色主题\n", "preferences"),
    ("inbox/坑.md", "踩坑：升级前一定要备份数据库\n", "lessons"),
    ("inbox/教訓.md", "教訓：上線前一定要備份資料庫\n", "lessons"),
    ("inbox/張偉.md", "張偉是我們後端組的負責人\n", "people"),
];

#[test]
fn a_requested_dream_moves_english_and_chinese_inbox_items_to_their_category() {
    let seed: Vec<Seed<'_>> = CLASSIFIED
        .iter()
        .map(|(p, body, _)| (*p, body.as_bytes(), 0))
        .collect();
    let f = Fixture::new("", &seed);
    let report = f.dream(1);
    assert_eq!(report.organized, CLASSIFIED.len(), "{report:#?}");
    assert!(report.skipped.is_empty(), "{report:#?}");
    for (inbox, body, category) in CLASSIFIED {
        let name = Path::new(inbox).file_name().expect("name");
        let moved = format!("{category}/{}", name.to_string_lossy());
        assert!(!f.p(inbox).exists(), "{inbox} is still in the inbox");
        let bytes = f.bytes(&moved);
        assert_eq!(
            split(&bytes).1,
            body.as_bytes(),
            "{moved}: the body changed"
        );
        let fm = fields(&bytes);
        assert_eq!(
            fm.get("category").map(String::as_str),
            Some(category),
            "{moved}"
        );
        assert_eq!(
            fm.get("phase").map(String::as_str),
            Some("organized"),
            "{moved}"
        );
        assert!(
            fm.get("id").is_some_and(|id| is_uuid(id)),
            "{moved}: {fm:?}"
        );
        assert!(fm.contains_key("created_at"), "{moved}: {fm:?}");
    }
    assert!(f.names_in("inbox").is_empty());
    assert_eq!(f.files().len(), CLASSIFIED.len(), "{:?}", f.files());
}

#[test]
fn a_moved_inbox_item_keeps_every_byte_of_its_body() {
    // Bytes a careless rewrite would disturb: CR, trailing blanks, tabs,
    // a rule that looks like a frontmatter fence, no final newline.
    let body: &[u8] =
        b"I prefer dark mode.\r\n\n  indented, trailing blanks   \n\ttab\n---\nno final newline";
    let f = Fixture::new("", &[("inbox/ui.md", body, 0)]);
    let report = f.dream(1);
    assert_eq!(report.organized, 1, "{report:#?}");
    let bytes = f.bytes("preferences/ui.md");
    let (fm, moved_body) = split(&bytes);
    assert!(fm.is_some(), "no frontmatter block");
    assert_eq!(
        String::from_utf8_lossy(&moved_body),
        String::from_utf8_lossy(body)
    );
    assert_eq!(moved_body, body, "the body's bytes changed");
    let fm = fields(&bytes);
    assert_eq!(fm.get("phase").map(String::as_str), Some("organized"));
    assert_eq!(fm.get("category").map(String::as_str), Some("preferences"));
    assert!(fm.get("id").is_some_and(|id| is_uuid(id)), "{fm:?}");
}

#[test]
fn an_inbox_item_with_frontmatter_keeps_its_fields_and_its_id() {
    let id = "00000000-0000-4000-8000-000000000042";
    let text = format!("---\nid: {id}\ntitle: Theme\ntags: [ui]\n---\nI prefer dark mode\n");
    let f = Fixture::new("", &[("inbox/theme.md", text.as_bytes(), 0)]);
    f.dream(1);
    let bytes = f.bytes("preferences/theme.md");
    let fm = fields(&bytes);
    assert_eq!(fm.get("id").map(String::as_str), Some(id));
    assert_eq!(fm.get("title").map(String::as_str), Some("Theme"));
    assert_eq!(list_field(&bytes, "tags"), ["ui"]);
    assert_eq!(fm.get("phase").map(String::as_str), Some("organized"));
    assert_eq!(split(&bytes).1, b"I prefer dark mode\n");
}

#[test]
fn an_explicit_category_wins_over_the_keywords() {
    let text = "---\ncategory: project\n---\nI prefer dark mode\n";
    let f = Fixture::new("", &[("inbox/x.md", text.as_bytes(), 0)]);
    f.dream(1);
    assert!(f.p("project/x.md").exists(), "{:?}", f.files());
}

#[test]
fn an_unclassifiable_inbox_item_is_skipped_with_a_reason_and_stays() {
    let odd: &[u8] = b"zxqv blorp wibble frobnicate\n";
    let f = Fixture::new(
        "",
        &[
            ("inbox/zxqv.md", odd, 0),
            ("inbox/ui.md", b"I prefer dark mode\n", 0),
        ],
    );
    let report = f.dream(1);
    assert_eq!(report.organized, 1, "{report:#?}");
    assert_eq!(
        report.skipped,
        [Skipped {
            path: "inbox/zxqv.md".into(),
            reason: "no category matched; stays in the inbox".into(),
        }]
    );
    assert_eq!(f.bytes("inbox/zxqv.md"), odd);
    assert!(f.p("preferences/ui.md").exists());
}

#[test]
fn a_freshly_written_inbox_item_is_classified_by_a_requested_dream() {
    // A quiet period of an hour: the schedule would wait; a request does not.
    let f = Fixture::new("organizer: { quiet_period: 1h }\n", &[]);
    f.writer
        .create(
            &StorePath::new("inbox/fresh.md").expect("path"),
            b"We decided to ship on Friday\n",
        )
        .expect("write the item");
    let report = f.dream(1);
    assert_eq!(report.organized, 1, "{report:#?}");
    assert!(report.skipped.is_empty(), "{report:#?}");
    assert_eq!(
        split(&f.bytes("decisions/fresh.md")).1,
        b"We decided to ship on Friday\n"
    );
    assert!(!f.p("inbox/fresh.md").exists());
}

#[test]
fn every_move_asks_the_writer_to_redirect_the_old_path_for_the_grace_period() {
    let f = Fixture::new(
        "organizer: { grace_period: 90m }\n",
        &[
            ("inbox/a.md", b"I prefer tea\n", 0),
            ("inbox/b.md", b"Every morning I stretch\n", 0),
            ("inbox/odd.md", b"zxqv plorb\n", 0),
        ],
    );
    f.dream(1);
    let mut redirects = f.writer.redirects.lock().expect("lock").clone();
    redirects.sort();
    let p = |s: &str| StorePath::new(s).expect("path");
    let grace = Duration::from_secs(90 * 60);
    assert_eq!(
        redirects,
        [
            (p("inbox/a.md"), p("preferences/a.md"), grace),
            (p("inbox/b.md"), p("habits/b.md"), grace),
        ]
    );
}

#[test]
fn a_moved_item_takes_a_free_name_when_its_name_is_taken_in_the_category() {
    let kept = complete(
        "00000000-0000-4000-8000-000000000001",
        "Tea",
        "Green tea.\n",
    );
    let f = Fixture::new(
        "",
        &[
            ("preferences/tea.md", kept.as_bytes(), 0),
            ("inbox/tea.md", b"I prefer black tea\n", 0),
        ],
    );
    let report = f.dream(1);
    assert_eq!(report.organized, 1, "{report:#?}");
    assert_eq!(f.bytes("preferences/tea.md"), kept.as_bytes());
    assert_eq!(
        split(&f.bytes("preferences/tea-2.md")).1,
        b"I prefer black tea\n"
    );
}

#[test]
fn an_inbox_item_open_for_writing_is_skipped_and_not_moved() {
    let f = Fixture::new(
        "",
        &[
            ("inbox/busy.md", b"I prefer tea\n", 0),
            ("inbox/idle.md", b"I prefer coffee\n", 0),
        ],
    );
    f.writer
        .busy
        .lock()
        .expect("lock")
        .insert(StorePath::new("inbox/busy.md").expect("path"));
    let report = f.dream(1);
    assert_eq!(report.organized, 1, "{report:#?}");
    assert_eq!(skipped(&report, "inbox/busy.md"), ["open for writing"]);
    assert_eq!(f.bytes("inbox/busy.md"), b"I prefer tea\n");
    assert!(!f.p("preferences/busy.md").exists());
    assert!(f.p("preferences/idle.md").exists());
    // Once closed, the next request moves it.
    f.writer.busy.lock().expect("lock").clear();
    assert_eq!(f.dream(1).organized, 1);
    assert_eq!(split(&f.bytes("preferences/busy.md")).1, b"I prefer tea\n");
}

#[test]
fn a_rewrite_that_loses_the_compare_and_swap_is_counted_and_changes_no_bytes() {
    let linker = complete(
        "00000000-0000-4000-8000-0000000000c1",
        "Linker",
        "See [[Target Note]].\n",
    );
    let target = complete(
        "00000000-0000-4000-8000-0000000000c2",
        "Target Note",
        "The target.\n",
    );
    let f = Fixture::new(
        "",
        &[
            ("inbox/tea.md", b"I prefer tea\n", 0),
            ("notes/linker.md", linker.as_bytes(), 0),
            ("notes/target.md", target.as_bytes(), 0),
        ],
    );
    f.writer.refuse_replace.store(true, Ordering::SeqCst);
    let report = f.dream(2);
    // The move itself is no rewrite; annotating the moved file and
    // recording the link are, and both lose.
    assert_eq!(report.organized, 1, "{report:#?}");
    assert!(report.retried >= 2, "{report:#?}");
    assert_eq!(report.links_resolved, 0, "{report:#?}");
    assert_eq!(f.bytes("preferences/tea.md"), b"I prefer tea\n");
    assert_eq!(f.bytes("notes/linker.md"), linker.as_bytes());
    assert_eq!(f.bytes("notes/target.md"), target.as_bytes());
    assert!(f.writer.replaced.lock().expect("lock").is_empty());
    // No temp file of a lost rewrite is left behind.
    assert_eq!(
        f.files(),
        ["notes/linker.md", "notes/target.md", "preferences/tea.md"]
    );
}

// ---------------------------------------------------------------------------
// Level 1: lifecycle.

#[test]
fn an_expired_inbox_item_goes_to_archive_expired_with_a_reason() {
    let f = Fixture::new(
        "lifecycle: { inbox_ttl: 7d }\n",
        &[
            // An agent's capture: `write` gave it a date to expire.
            (
                "inbox/old.md",
                b"---\nexpires_at: 2020-01-08T00:00:00Z\n---\nzxqv old blorp wibble\n",
                8 * DAY,
            ),
            (
                "inbox/young.md",
                b"---\nexpires_at: 2020-01-08T00:00:00Z\n---\nzhrk young blorp wibble\n",
                0,
            ),
            // Its date not yet come, although nobody touched it for a week.
            (
                "inbox/not-yet.md",
                b"---\nexpires_at: 2999-01-01T00:00:00Z\n---\nvbnm later blorp wibble\n",
                8 * DAY,
            ),
            // What a person wrote into the inbox never expires.
            ("inbox/by-hand.md", b"qzpx hand-written blorp\n", 400 * DAY),
            // Classifiable items are organized, however old, and what
            // was the inbox's date to expire goes with the inbox.
            (
                "inbox/old-tea.md",
                b"---\nexpires_at: 2020-01-08T00:00:00Z\n---\nI prefer tea\n",
                8 * DAY,
            ),
        ],
    );
    let before = f.files().len();
    let report = f.dream(1);
    assert_eq!((report.expired, report.organized), (1, 1), "{report:#?}");
    let bytes = f.bytes("archive/expired/old.md");
    assert_eq!(split(&bytes).1, b"zxqv old blorp wibble\n");
    for kept in ["inbox/not-yet.md", "inbox/by-hand.md"] {
        assert!(f.p(kept).exists(), "{kept} expired: {report:#?}");
    }
    let tea = fields(&f.bytes("preferences/old-tea.md"));
    assert_eq!(tea.get("phase").map(String::as_str), Some("organized"));
    assert!(!tea.contains_key("expires_at"), "{tea:?}");
    let fm = fields(&bytes);
    assert_eq!(fm.get("phase").map(String::as_str), Some("archived"));
    let reason = fm.get("archived_reason").cloned().unwrap_or_default();
    assert!(
        reason.contains("expired") && reason.contains("7 days"),
        "{fm:?}"
    );
    let at = fm
        .get("archived_at")
        .and_then(|t| mnemofs::memory::parse_timestamp(t))
        .unwrap_or_else(|| panic!("archived_at missing: {fm:?}"));
    assert!(
        (now() - at).abs() < DAY as i64,
        "archived_at {at} is not now"
    );
    assert!(!f.p("inbox/old.md").exists());
    assert_eq!(
        f.bytes("inbox/young.md"),
        b"---\nexpires_at: 2020-01-08T00:00:00Z\n---\nzhrk young blorp wibble\n"
    );
    assert_eq!(f.files().len(), before, "a file was lost: {:?}", f.files());
    assert!(f.writer.removed.lock().expect("lock").is_empty());
    // Archived stays archived.
    let again = f.dream(1);
    assert_eq!(again.expired, 0, "{again:#?}");
    assert!(f.p("archive/expired/old.md").exists());
}

#[test]
fn an_inbox_ttl_of_zero_never_expires_anything() {
    let f = Fixture::new(
        "lifecycle: { inbox_ttl: 0s }\n",
        &[(
            "inbox/old.md",
            b"---\nexpires_at: 2020-01-08T00:00:00Z\n---\nzxqv old blorp wibble\n",
            400 * DAY,
        )],
    );
    let report = f.dream(1);
    assert_eq!(report.expired, 0, "{report:#?}");
    assert!(f.p("inbox/old.md").exists(), "{report:#?}");
}

#[test]
fn an_unused_memory_decays_into_the_archive_only_when_decay_is_on() {
    let stale = complete(
        "00000000-0000-4000-8000-000000000002",
        "Stale",
        "qwfp stale organized memory\n",
    );
    let fresh = complete(
        "00000000-0000-4000-8000-000000000003",
        "Fresh",
        "arst fresh organized memory\n",
    );
    let seed: [Seed<'_>; 2] = [
        ("notes/stale.md", stale.as_bytes(), 40 * DAY),
        ("notes/fresh.md", fresh.as_bytes(), 0),
    ];
    let off = Fixture::new("", &seed);
    assert_eq!(off.dream(1).decayed, 0);
    assert_eq!(off.bytes("notes/stale.md"), stale.as_bytes());

    let on = Fixture::new(
        "lifecycle: { decay: { enabled: true, after: 30d } }\n",
        &seed,
    );
    let report = on.dream(1);
    assert_eq!(report.decayed, 1, "{report:#?}");
    let bytes = on.bytes("archive/decayed/stale.md");
    let fm = fields(&bytes);
    assert!(
        fm.get("archived_reason")
            .is_some_and(|r| r.contains("decayed")),
        "{fm:?}"
    );
    assert_eq!(split(&bytes).1, b"qwfp stale organized memory\n");
    assert_eq!(on.bytes("notes/fresh.md"), fresh.as_bytes());
}

// ---------------------------------------------------------------------------
// Level 2: duplicates and links.

#[test]
fn dream_level_2_archives_an_exact_duplicate_and_redirects_links_to_the_copy_kept() {
    let kept_id = "00000000-0000-4000-8000-0000000000aa";
    let kept = complete(
        kept_id,
        "Build cache",
        "The build cache lives in /var/cache/build.\n",
    );
    let dup_body = "The  build cache\nlives in   /var/cache/build.\n\n";
    let dup = complete(
        "00000000-0000-4000-8000-0000000000bb",
        "Cache copy",
        dup_body,
    );
    let linker = complete(
        "00000000-0000-4000-8000-0000000000cc",
        "Linker",
        "See [[dup-stem]] for where the cache is, and [[dup-stem|the cache note]].\n",
    );
    let f = Fixture::new(
        "",
        &[
            // The older copy is the one kept.
            ("notes/dup-kept.md", kept.as_bytes(), 3600),
            ("notes/dup-stem.md", dup.as_bytes(), 60),
            ("notes/linker.md", linker.as_bytes(), 60),
        ],
    );
    let before = f.files().len();
    let report = f.dream(2);
    assert_eq!(report.merged, 1, "{report:#?}");
    assert_eq!(report.links_redirected, 2, "{report:#?}");
    assert_eq!(f.bytes("notes/dup-kept.md"), kept.as_bytes());
    assert!(!f.p("notes/dup-stem.md").exists(), "the duplicate stayed");
    let merged = f.bytes("archive/merged/dup-stem.md");
    let fm = fields(&merged);
    assert_eq!(fm.get("merged_into").map(String::as_str), Some(kept_id));
    assert_eq!(fm.get("phase").map(String::as_str), Some("archived"));
    assert_eq!(
        fm.get("archived_reason").map(String::as_str),
        Some("duplicate of notes/dup-kept.md")
    );
    assert!(fm.contains_key("archived_at"), "{fm:?}");
    assert_eq!(
        split(&merged).1,
        dup_body.as_bytes(),
        "the copy's body changed"
    );
    let l = String::from_utf8(f.bytes("notes/linker.md")).expect("utf-8");
    assert!(
        l.contains("See [[dup-kept]] for") && l.contains("[[dup-kept|the cache note]]"),
        "links not redirected:\n{l}"
    );
    assert!(!l.contains("[[dup-stem"), "{l}");
    // Nothing was deleted: the copy moved.
    assert_eq!(f.files().len(), before, "{:?}", f.files());
    assert!(f.writer.removed.lock().expect("lock").is_empty());
    let again = f.dream(2);
    assert_eq!(again.merged, 0, "{again:#?}");
    assert_eq!(f.files().len(), before);
}

/// `backlinks` finds every memory that links to the archived copy by any
/// of its names (title, path, stem with `.md`), so every such link must
/// be pointed at the copy kept, not only `[[stem]]` links.
#[test]
fn a_merge_redirects_links_that_name_the_archived_copy_by_title_or_path() {
    let kept_id = "00000000-0000-4000-8000-0000000000a1";
    let dup_id = "00000000-0000-4000-8000-0000000000b1";
    let body = "The build cache lives in /var/cache/build.\n";
    let kept = complete(kept_id, "Build cache", body);
    let dup = complete(dup_id, "Cache copy", body);
    let linker = complete(
        "00000000-0000-4000-8000-0000000000c1",
        "Linker",
        "By title [[Cache copy]], by path [[notes/dup-stem]], with the extension [[dup-stem.md]].\n",
    );
    let f = Fixture::new(
        "",
        &[
            ("notes/dup-kept.md", kept.as_bytes(), 3600),
            ("notes/dup-stem.md", dup.as_bytes(), 60),
            ("notes/linker.md", linker.as_bytes(), 60),
        ],
    );
    let report = f.dream(2);
    assert_eq!(report.merged, 1, "{report:#?}");
    assert!(f.p("archive/merged/dup-stem.md").exists());
    let l = String::from_utf8(f.bytes("notes/linker.md")).expect("utf-8");
    for stale in ["[[Cache copy]]", "[[notes/dup-stem]]", "[[dup-stem.md]]"] {
        assert!(
            !l.contains(stale),
            "{stale} still names the archived copy ({} links redirected):\n{l}",
            report.links_redirected
        );
    }
    assert_eq!(report.links_redirected, 3, "{report:#?}");
    // Once the index has caught up, the links resolve to the copy kept.
    f.dream(2);
    let links = list_field(&f.bytes("notes/linker.md"), "links");
    assert!(
        links.contains(&kept_id.to_string()) && !links.contains(&dup_id.to_string()),
        "{links:?}"
    );
}

#[test]
fn memories_that_merely_look_alike_are_not_merged() {
    let a = complete(
        "00000000-0000-4000-8000-0000000000a1",
        "A",
        "Deploy on Monday.\n",
    );
    let b = complete(
        "00000000-0000-4000-8000-0000000000a2",
        "B",
        "Deploy on Tuesday.\n",
    );
    let f = Fixture::new(
        "",
        &[
            ("notes/a.md", a.as_bytes(), 60),
            ("notes/b.md", b.as_bytes(), 0),
        ],
    );
    assert_eq!(f.dream(2).merged, 0);
    assert_eq!(f.files(), ["notes/a.md", "notes/b.md"]);
}

#[test]
fn dream_level_2_records_wikilink_targets_by_id_and_reports_unresolved_links() {
    let other_id = "00000000-0000-4000-8000-0000000000d1";
    let other = complete(other_id, "Other Note", "The other note.\n");
    let body = "See [[Other Note]] and [[Nowhere At All]].\r\ntrailing  \n";
    let source = complete("00000000-0000-4000-8000-0000000000d2", "Source", body);
    let f = Fixture::new(
        "",
        &[
            ("notes/other.md", other.as_bytes(), 0),
            ("notes/source.md", source.as_bytes(), 0),
        ],
    );
    let report = f.dream(2);
    assert_eq!(report.links_resolved, 1, "{report:#?}");
    assert_eq!(report.links_unresolved, 1, "{report:#?}");
    let bytes = f.bytes("notes/source.md");
    assert_eq!(list_field(&bytes, "links"), [other_id]);
    assert_eq!(split(&bytes).1, body.as_bytes(), "the body changed");
    assert_eq!(f.bytes("notes/other.md"), other.as_bytes());
    let lint = f.outputs.lint.lock().clone();
    assert_eq!(
        lint,
        [(
            StorePath::new("notes/source.md").expect("path"),
            "unresolved link [[Nowhere At All]]".to_string()
        )]
    );
    // Recorded once: a second run adds nothing.
    let again = f.dream(2);
    assert_eq!(again.links_resolved, 0, "{again:#?}");
    assert_eq!(f.bytes("notes/source.md"), bytes);
}

#[test]
fn a_link_to_another_scopes_memory_is_not_recorded_by_its_id() {
    let scoped = |id: &str, title: &str, scope: &str, body: &str| {
        format!(
            "---\nid: {id}\ntitle: {title}\nphase: organized\ncategory: knowledge\n\
             scope: {scope}\ncreated_at: 2025-01-01T00:00:00Z\n---\n{body}"
        )
    };
    let secret_id = "00000000-0000-4000-8000-0000000000b1";
    let secret = scoped(secret_id, "Bob Secret", "agent:bob", "hunter2\n");
    let bobs = scoped(
        "00000000-0000-4000-8000-0000000000b2",
        "Bob Notes",
        "agent:bob",
        "See [[Bob Secret]].\n",
    );
    let alices = scoped(
        "00000000-0000-4000-8000-0000000000a1",
        "Alice Notes",
        "agent:alice",
        "See [[Bob Secret]].\n",
    );
    let global = complete(
        "00000000-0000-4000-8000-0000000000c1",
        "Everyone",
        "See [[Bob Secret]].\n",
    );
    let f = Fixture::new(
        "",
        &[
            ("bob/secret.md", secret.as_bytes(), 0),
            ("bob/notes.md", bobs.as_bytes(), 0),
            ("alice/notes.md", alices.as_bytes(), 0),
            ("everyone.md", global.as_bytes(), 0),
        ],
    );
    let report = f.dream(2);
    assert_eq!(report.links_resolved, 1, "{report:#?}");
    assert_eq!(list_field(&f.bytes("bob/notes.md"), "links"), [secret_id]);
    assert_eq!(f.bytes("alice/notes.md"), alices.as_bytes());
    assert_eq!(f.bytes("everyone.md"), global.as_bytes());
}

// ---------------------------------------------------------------------------
// Level 3: reminders.

/// The UTC date `days` after the unix time `at`, as `YYYY-MM-DD`.
fn utc_date(at: i64, days: i64) -> String {
    format_rfc3339(at + days * DAY as i64, &jiff::tz::TimeZone::UTC)[..10].to_string()
}

#[test]
fn dream_level_3_turns_a_time_in_a_memory_into_one_reminder_once() {
    let f = Fixture::new(
        "",
        &[
            (
                "notes/dentist.md",
                b"Call the dentist tomorrow at 3pm.\n",
                0,
            ),
            (
                "notes/report.md",
                b"The report has a deadline on 2099-12-01.\n",
                0,
            ),
            ("notes/plain.md", b"Nothing to remember here.\n", 0),
        ],
    );
    let start = now();
    let first = f.dream(3);
    let end = now();
    assert_eq!(first.reminders, 2, "{first:#?}");
    let reminders = f.names_in("reminders");
    assert_eq!(reminders.len(), 2, "{reminders:?}");
    let by_source: BTreeMap<String, BTreeMap<String, String>> = reminders
        .iter()
        .map(|name| {
            let fm = fields(&f.bytes(&format!("reminders/{name}")));
            (fm.get("source").cloned().unwrap_or_default(), fm)
        })
        .collect();
    let dentist = by_source
        .get("notes/dentist.md")
        .unwrap_or_else(|| panic!("no reminder for the dentist: {by_source:#?}"));
    let due = dentist.get("due_at").cloned().unwrap_or_default();
    // Tomorrow (in UTC, the configured zone) at 15:00.
    let tomorrow = [utc_date(start, 1), utc_date(end, 1)];
    assert!(
        tomorrow.contains(&due[..10.min(due.len())].to_string()),
        "{due}"
    );
    assert_eq!(due.get(10..19), Some("T15:00:00"), "{due}");
    assert_eq!(dentist.get("expires_at"), Some(&due));
    assert_eq!(dentist.get("type").map(String::as_str), Some("reminder"));
    assert_eq!(
        dentist.get("category").map(String::as_str),
        Some("reminders")
    );
    assert!(
        dentist.get("id").is_some_and(|id| is_uuid(id)),
        "{dentist:?}"
    );
    let report = by_source
        .get("notes/report.md")
        .unwrap_or_else(|| panic!("no reminder for the report: {by_source:#?}"));
    assert!(
        report
            .get("due_at")
            .is_some_and(|d| d.starts_with("2099-12-01")),
        "{report:?}"
    );
    // The sources are left as they were.
    assert_eq!(
        f.bytes("notes/dentist.md"),
        b"Call the dentist tomorrow at 3pm.\n"
    );

    let second = f.dream(3);
    assert_eq!(second.reminders, 0, "{second:#?}");
    assert_eq!(f.names_in("reminders"), reminders);
}

#[test]
fn a_memory_filed_under_reminders_gets_its_due_time_from_its_own_text() {
    let f = Fixture::new(
        "",
        &[("reminders/rent.md", b"Pay the rent on 2099-12-01.\n", 0)],
    );
    let report = f.dream(3);
    assert_eq!(report.reminders, 1, "{report:#?}");
    let bytes = f.bytes("reminders/rent.md");
    let fm = fields(&bytes);
    assert!(
        fm.get("due_at")
            .is_some_and(|d| d.starts_with("2099-12-01")),
        "{fm:?}"
    );
    assert_eq!(fm.get("expires_at"), fm.get("due_at"));
    assert_eq!(split(&bytes).1, b"Pay the rent on 2099-12-01.\n");
    assert_eq!(f.names_in("reminders"), ["rent.md"]);
    assert_eq!(f.dream(3).reminders, 0);
}

// ---------------------------------------------------------------------------
// Malformed frontmatter.

#[test]
fn malformed_frontmatter_is_left_byte_for_byte_and_never_archived() {
    let bad_yaml = |body: &str| format!("---\ntitle: [unclosed\ntags: x\n---\n{body}\n");
    let unclosed = "---\ntitle: never closed\nI prefer coffee but the block never ends\n";
    let inbox_bad = bad_yaml("I prefer tea, written to the inbox.");
    let notes_bad = bad_yaml("I prefer tea, written outside the inbox.");
    let good_key = complete(
        "00000000-0000-4000-8000-0000000000dd",
        "Key",
        "The deploy key is in the vault.\n",
    );
    let bad_key = "---\ntitle: [unclosed\n---\nThe deploy key is in the vault.\n";
    let cases: [(&str, &str, u64); 5] = [
        // Old enough to expire or decay, were they well-formed.
        ("inbox/bad.md", &inbox_bad, 8 * DAY),
        ("inbox/unclosed.md", unclosed, 8 * DAY),
        ("notes/bad.md", &notes_bad, 40 * DAY),
        // A duplicate of a well-formed memory, younger so it would go.
        ("notes/key-copy.md", bad_key, 60),
        ("notes/key.md", &good_key, 3600),
    ];
    let seed: Vec<Seed<'_>> = cases
        .iter()
        .map(|(p, text, age)| (*p, text.as_bytes(), *age))
        .collect();
    let f = Fixture::new(
        "lifecycle: { inbox_ttl: 7d, decay: { enabled: true, after: 30d } }\n",
        &seed,
    );
    let first = f.dream(1);
    assert_eq!(
        first.organized + first.expired + first.decayed,
        0,
        "{first:#?}"
    );
    assert!(first.malformed >= 3, "{first:#?}");
    // The reason says what is wrong, and where.
    for (inbox, said) in [
        ("inbox/bad.md", "malformed frontmatter, line "),
        ("inbox/unclosed.md", "never closed"),
    ] {
        let why = skipped(&first, inbox);
        assert!(
            why.len() == 1 && why[0].contains("malformed") && why[0].contains(said),
            "{inbox}: {why:?}"
        );
    }
    let deeper = f.dream(3);
    assert_eq!(deeper.merged, 0, "{deeper:#?}");
    for (p, text, _) in cases {
        assert_eq!(
            fs::read_to_string(f.p(p)).unwrap_or_else(|e| format!("<gone: {e}>")),
            text,
            "{p} was changed or moved"
        );
    }
    assert!(f.names_in("archive").is_empty(), "{:?}", f.files());
}

// ---------------------------------------------------------------------------
// Reports.

#[test]
fn the_last_report_of_each_level_is_kept_and_saved_in_the_state_dir() {
    let state = tempfile::tempdir().expect("state dir");
    let f = Fixture::with_state(
        "",
        &[("inbox/ui.md", b"I prefer dark mode\n", 0)],
        Some(state.path().to_path_buf()),
    );
    let report = f.dream(1);
    let last = f.organizer.last_reports();
    assert_eq!(last.get("dream-1"), Some(&report));
    assert!(report.finished_at > 0);
    let saved: BTreeMap<String, Report> = serde_json::from_slice(
        &fs::read(state.path().join(mnemofs::tasks::REPORTS_FILE)).expect("tasks.json"),
    )
    .expect("parse tasks.json");
    assert_eq!(saved.get("dream-1"), Some(&report));
    // A new organizer on the same state dir knows the last run.
    drop(f);
    let again = Fixture::with_state("", &[], Some(state.path().to_path_buf()));
    assert_eq!(again.organizer.last_reports().get("dream-1"), Some(&report));
}

#[test]
fn a_conflict_copy_is_left_as_sync_made_it() {
    let copy = "inbox/plan.conflict-laptop-20250102T030405Z.md";
    let original = complete(
        "00000000-0000-4000-8000-0000000000f1",
        "Plan",
        "We decided to ship on Friday.\n",
    );
    let f = Fixture::new(
        "",
        &[
            ("notes/plan.md", original.as_bytes(), 0),
            (copy, b"We decided to ship on Friday.\n", 0),
        ],
    );
    assert!(f._index.wait_idle(Duration::from_secs(20)));
    let report = f.organizer.normalize(None).expect("normalize");
    assert_eq!(report.normalized, 0, "{report:#?}");
    let report = f.dream(3);
    assert_eq!((report.organized, report.merged), (0, 0), "{report:#?}");
    assert_eq!(f.bytes(copy), b"We decided to ship on Friday.\n");
    assert_eq!(f.bytes("notes/plan.md"), original.as_bytes());
}

#[test]
fn normalize_writes_the_ids_the_index_shows_and_leaves_busy_files_for_later() {
    let f = Fixture::new(
        "",
        &[
            ("notes/plain.md", b"Plain words.\n", 0),
            ("notes/other.md", b"Other words.\n", 0),
            ("notes/empty.md", b"", 0),
            ("archive/old.md", b"Archived.\n", 0),
        ],
    );
    assert!(f._index.wait_idle(Duration::from_secs(20)));
    let plain = StorePath::new("notes/plain.md").unwrap();
    let shown = f
        ._index
        .kept_id(&plain)
        .expect("an id shown before any write");

    // Files open for writing are left for later, and said so.
    f.writer.refuse_replace.store(true, Ordering::SeqCst);
    let report = f.organizer.normalize(None).expect("normalize");
    assert_eq!((report.normalized, report.retried), (0, 2), "{report:#?}");
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, ["notes/other.md", "notes/plain.md"]);
    f.writer.refuse_replace.store(false, Ordering::SeqCst);

    let report = f.organizer.normalize(Some(vec![plain])).expect("normalize");
    assert_eq!(report.normalized, 1, "{report:#?}");
    let text = String::from_utf8(f.bytes("notes/plain.md")).unwrap();
    assert!(text.contains(&format!("id: {shown}\n")), "{text}");
    assert!(text.ends_with("---\nPlain words.\n"), "{text}");
    assert_eq!(f.bytes("notes/other.md"), b"Other words.\n");

    let report = f.organizer.normalize(None).expect("normalize");
    assert_eq!(report.normalized, 1, "{report:#?}");
    assert_eq!(f.bytes("notes/empty.md"), b"");
    assert_eq!(f.bytes("archive/old.md"), b"Archived.\n");
    let report = f.organizer.normalize(None).expect("normalize");
    assert_eq!(report.normalized, 0, "{report:#?}");
}
