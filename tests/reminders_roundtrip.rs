//! Round trips and reminders, run as the real binary on stores no daemon
//! serves: `export` then `import` into an empty store gives back every
//! file byte for byte (key order, comments, flow lists, CRLF, unicode, no
//! frontmatter, malformed frontmatter), and again adds nothing; memory-cli
//! records with a category are organized; `dream --level 3` makes
//! reminders titled by what their sentence is about, reads dates from
//! when the note was written, makes none for a time already past then,
//! and files the inbox item it made one for.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::{file_tree, run_with_timeout, seed_files, store_command, succeeded};
use serde_json::Value;

/// Reminders in UTC, no desktop notifications, inbox items filed at once.
const CONFIG: &str = "\
timezone: UTC
notifications: { method: none }
organizer: { quiet_period: 0s }
";

const DAY: i64 = 86_400;

/// `mnemofs ARGS --store STORE` with its own state dir, runtime dir and
/// config; `input` goes in as `--input FILE`.
fn run(store: &Path, args: &[&str], input: Option<&str>) -> Output {
    let config = store.with_extension("yaml");
    fs::write(&config, CONFIG).expect("config");
    let mut cmd = store_command(store, args);
    if args.first() == Some(&"dream") {
        cmd.arg("--config").arg(&config);
    }
    if let Some(input) = input {
        let file = store.with_extension("jsonl");
        fs::write(&file, input).expect("input file");
        cmd.arg("--input").arg(&file);
    }
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

fn store(tmp: &Path, name: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let root = tmp.join(name);
    fs::create_dir_all(&root).expect("mkdir");
    seed_files(&root, files);
    root
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

// ---------------------------------------------------------------------------
// Round trips.

/// Frontmatter as people and tools write it.
const VARIED: &[(&str, &[u8])] = &[
    (
        "notes/flow-lists.md",
        b"---\ntags: [work, \"two words\", \xe4\xb8\xad\xe6\x96\x87]\naliases: [Flow]\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f601\ntitle: Flow lists\n---\nA body with [[links]] and #tags.\n",
    ),
    (
        "notes/comments.md",
        b"---\n# kept by hand\ntitle: Comments   # after a value\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f602\n\ncustom:\n  nested: {a: 1, b: [2, 3]}\n  quoted: 'single'\n---\nBody.\n",
    ),
    (
        "notes/key-order.md",
        b"---\nzeta: last but first\ncreated_at: 2025-11-20T10:00:00Z\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f603\nalpha: 1\ntitle: \"Key order\"\n---\n# Key order\n\nNothing sorted.\n",
    ),
    (
        "notes/crlf.md",
        b"---\r\ntitle: Windows\r\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f604\r\ntags:\r\n  - crlf\r\n---\r\nLine one\r\nLine two\r\n",
    ),
    (
        "people/unicode.md",
        "---\ntitle: \"Zoë Ünïcödé — 王小明\"\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f605\n---\n王小明喜欢喝茶 😀\n\nÆsir.\n"
            .as_bytes(),
    ),
    ("notes/no-frontmatter.md", b"Just a body, no frontmatter.\n"),
    (
        "notes/no-newline-at-end.md",
        b"---\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f606\n---\nno newline at the end",
    ),
    (
        "notes/no-id.md",
        b"---\ntitle: Written in an editor\ntags: [draft]\n---\nNo id yet.\n",
    ),
    (
        "notes/malformed.md",
        b"---\ntitle: [never closed\n---\nThe block does not parse.\n",
    ),
    ("notes/empty-block.md", b"---\n---\nAn empty block.\n"),
    // A copy made outside mnemofs, then edited: two memories, one id.
    (
        "notes/flow-lists copy.md",
        b"---\ntags: [work, \"two words\", \xe4\xb8\xad\xe6\x96\x87]\naliases: [Flow]\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f601\ntitle: Flow lists\n---\nA body with [[links]] and #tags, and more in the copy.\n",
    ),
    (
        "inbox/waiting.md",
        b"---\nphase: inbox\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f607\n---\nStill waiting.\n",
    ),
    (
        "archive/expired/old.md",
        b"---\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f608\nphase: archived\narchived_reason: expired\n---\nOld.\n",
    ),
];

/// Files that are not memories: an attachment a note embeds, a text file.
const OTHER_FILES: &[(&str, &[u8])] = &[
    ("notes/diagram.png", b"\x89PNG\r\n\x1a\n\0\xff\xfe binary"),
    ("notes/readme.txt", b"plain text\n"),
];

#[test]
fn export_then_import_into_an_empty_store_gives_every_file_back_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let from = store(tmp.path(), "from", &[VARIED, OTHER_FILES].concat());
    let export = succeeded(&run(&from, &["export"], None));
    let lines_read = VARIED.len() + OTHER_FILES.len();
    assert_eq!(export.lines().count(), lines_read, "{export}");

    let to = store(tmp.path(), "to", &[]);
    let first = succeeded(&run(&to, &["import"], Some(&export)));
    assert!(
        first.starts_with(&format!(
            "read {lines_read}, written {}, duplicates 0, skipped 0, attachments {}",
            VARIED.len(),
            OTHER_FILES.len()
        )),
        "{first}"
    );
    let want = file_tree(&from);
    let got = file_tree(&to);
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &want {
        assert_eq!(
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(&got[path]),
            "{path} changed"
        );
        assert_eq!(bytes, &got[path], "{path} changed");
    }

    // Again: nothing added, nothing changed, the same ids.
    let again = succeeded(&run(&to, &["import"], Some(&export)));
    assert!(
        again.starts_with(&format!(
            "read {lines_read}, written 0, duplicates {}",
            VARIED.len()
        )),
        "{again}"
    );
    assert!(!again.contains("differs"), "{again}");
    assert_eq!(file_tree(&to), want);
    let ids = |text: &str| {
        let mut ids: Vec<(String, String)> = lines(text)
            .iter()
            .filter(|r| r.get("file_base64").is_none())
            .map(|r| (r["path"].to_string(), r["id"].to_string()))
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&export), ids(&succeeded(&run(&to, &["export"], None))));
}

/// Brought back through a running daemon, an export is the same files
/// too: its normalizer leaves what came in as it came.
#[test]
fn an_import_through_a_daemon_is_left_as_it_came() {
    use std::process::Stdio;
    let tmp = tempfile::tempdir().expect("tempdir");
    let files: &[(&str, &[u8])] = &[
        ("notes/plain.md", b"No frontmatter at all.\n"),
        ("notes/some.md", b"---\ntags: [x]\n---\nSome frontmatter.\n"),
    ];
    let from = store(tmp.path(), "from", files);
    let export = succeeded(&run(&from, &["export"], None));
    let to = store(tmp.path(), "to", &[]);
    let config = tmp.path().join("daemon.yaml");
    fs::write(&config, CONFIG).expect("config");
    let mut daemon = common::Stopped(
        store_command(&to, &["serve"])
            .env("MNEMOFS_CONFIG", &config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mnemofs serve"),
    );
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(daemon.0.stdout.take().expect("stdout")),
        &mut ready,
    )
    .expect("ready");
    assert!(ready.starts_with("serving "), "{ready:?}");
    let imported = succeeded(&run(&to, &["import"], Some(&export)));
    assert!(imported.contains("written 2"), "{imported}");
    // Past the normalizer's quiet period and debounce.
    std::thread::sleep(Duration::from_secs(4));
    let got = file_tree(&to);
    for (path, bytes) in files {
        assert_eq!(
            String::from_utf8_lossy(&got[*path]),
            String::from_utf8_lossy(bytes),
            "{path} changed"
        );
    }
}

#[test]
fn a_record_whose_fields_were_edited_is_written_from_its_fields() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let from = store(
        tmp.path(),
        "from",
        &[(
            "notes/a.md",
            b"---\ntags: [x]\nid: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f611\n---\nBody.\n",
        )],
    );
    let export = succeeded(&run(&from, &["export"], None));
    let mut record: Value = serde_json::from_str(export.trim()).expect("a record");
    record["frontmatter"]["tags"] = serde_json::json!(["y"]);
    let to = store(tmp.path(), "to", &[]);
    succeeded(&run(&to, &["import"], Some(&record.to_string())));
    let text = fs::read_to_string(to.join("notes/a.md")).expect("imported");
    assert!(text.contains("- y") && !text.contains("[x]"), "{text}");
    assert!(text.contains("id: 8d3f1c2a-5b6e-4f70-9a81-b2c3d4e5f611"));
    assert!(text.ends_with("---\nBody.\n"), "{text}");

    // An export made before records carried their block still imports.
    record
        .as_object_mut()
        .expect("object")
        .remove("frontmatter_text");
    let older = store(tmp.path(), "older", &[]);
    succeeded(&run(&older, &["import"], Some(&record.to_string())));
    assert!(older.join("notes/a.md").is_file());
}

#[test]
fn a_memory_cli_record_with_a_category_and_no_phase_is_organized_in_its_folder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let to = store(tmp.path(), "to", &[]);
    let records = "\
{\"ID\":\"c-1\",\"Content\":\"Retry flaky deploys with backoff\",\"Category\":\"lessons\"}
{\"id\":\"c-2\",\"content\":\"Prefers tabs\",\"phase\":\"inbox\",\"category\":\"preferences\"}
{\"id\":\"c-3\",\"content\":\"Unsorted thought\"}
";
    succeeded(&run(&to, &["import"], Some(records)));
    let got: Vec<String> = file_tree(&to).into_keys().collect();
    assert_eq!(
        got,
        [
            "inbox/unsorted-thought.md",
            "lessons/retry-flaky-deploys-with-backoff.md",
            "preferences/prefers-tabs.md",
        ]
    );
    let lesson =
        fs::read_to_string(to.join("lessons/retry-flaky-deploys-with-backoff.md")).expect("lesson");
    assert!(lesson.contains("phase: organized\n"), "{lesson}");
    assert!(lesson.contains("category: lessons\n"), "{lesson}");
}

// ---------------------------------------------------------------------------
// Reminders.

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

/// `YYYY-MM-DD` in UTC of `days` after now.
fn day(days: i64) -> String {
    jiff::Timestamp::from_second(now() + days * DAY)
        .expect("instant")
        .strftime("%Y-%m-%d")
        .to_string()
}

/// Every reminder memory: title, due_at, source and body, by file name.
fn reminders(store: &Path) -> Vec<BTreeMap<String, String>> {
    let dir = store.join("reminders");
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<BTreeMap<String, String>> = entries
        .map(|e| {
            let path = e.expect("entry").path();
            let text = fs::read_to_string(&path).expect("read");
            let mut fields = BTreeMap::new();
            fields.insert(
                "file".to_string(),
                path.file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned(),
            );
            if let Some(rest) = text.strip_prefix("---\n")
                && let Some((yaml, body)) = rest.split_once("\n---\n")
            {
                let map: BTreeMap<String, serde_yaml::Value> =
                    serde_yaml::from_str(yaml).expect("yaml");
                for (k, v) in map {
                    if let Some(s) = v.as_str() {
                        fields.insert(k, s.to_string());
                    }
                }
                fields.insert("body".into(), body.to_string());
            }
            fields
        })
        .collect();
    // By file name (which starts with the due day), not by the first
    // field that differs: the bodies' weekday names would order them
    // differently from one date to the next.
    out.sort_by(|a, b| a.get("file").cmp(&b.get("file")));
    out
}

fn dream3(store: &Path) -> Value {
    serde_json::from_str(&succeeded(&run(
        store,
        &["dream", "--level", "3", "--json"],
        None,
    )))
    .expect("a report")
}

/// The reminders whose body quotes `sentence`.
fn quoting<'a>(
    all: &'a [BTreeMap<String, String>],
    sentence: &str,
) -> Vec<&'a BTreeMap<String, String>> {
    all.iter()
        .filter(|r| r.get("body").is_some_and(|b| b.contains(sentence)))
        .collect()
}

#[test]
fn reminders_are_titled_by_what_their_sentence_is_about() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let s = store(
        tmp.path(),
        "s",
        &[
            ("notes/dentist.md", b"Dentist appointment, tomorrow 3pm.\n"),
            (
                "notes/plumber.md",
                b"---\ntitle: Call the plumber\n---\nnext Tuesday\n",
            ),
            (
                "notes/chinese.md",
                "---\ntitle: 看牙\n---\n明天下午三点\n\n明天上午十点和王医生见面。\n".as_bytes(),
            ),
            (
                "notes/offsite.md",
                b"---\nid: offsite-1\n---\nTeam offsite tomorrow.\n",
            ),
            // A person's note says "he": the reminder says who.
            (
                "people/tom-becker.md",
                b"---\ntitle: Tom Becker\ncategory: people\n---\nTom does the frontend. He is on leave tomorrow.\n",
            ),
            // A habit recurs: no one-off reminder of it.
            (
                "habits/running.md",
                b"The user runs on Tuesday and Thursday mornings.\n",
            ),
            (
                "notes/gym.md",
                b"---\ncategory: habits\n---\nGym every Monday at 7am.\n",
            ),
        ],
    );
    let report = dream3(&s);
    assert_eq!(report["reminders"].as_u64(), Some(6), "{report:#}");
    let all = reminders(&s);
    let title = |sentence: &str| -> String {
        let found = quoting(&all, sentence);
        assert_eq!(found.len(), 1, "{sentence}: {all:#?}");
        found[0].get("title").cloned().unwrap_or_default()
    };
    assert_eq!(
        title("Dentist appointment, tomorrow 3pm."),
        "Reminder: Dentist appointment"
    );
    assert_eq!(title("next Tuesday"), "Reminder: Call the plumber");
    // In the note's own language.
    assert_eq!(title("明天下午三点\n"), "提醒：看牙");
    assert_eq!(title("明天上午十点和王医生见面。"), "提醒：和王医生见面");
    assert_eq!(
        title("He is on leave tomorrow."),
        "Reminder: Tom Becker is on leave"
    );
    for r in &all {
        let t = r.get("title").map(String::as_str).unwrap_or_default();
        assert!(
            ![
                "Reminder: tomorrow 3pm",
                "Reminder: next Tuesday",
                "提醒：明天下午三点"
            ]
            .contains(&t),
            "{r:#?}"
        );
    }
    let dentist = &quoting(&all, "Dentist")[0];
    assert_eq!(
        dentist.get("due_at").map(String::as_str),
        Some(format!("{}T15:00:00+00:00", day(1)).as_str())
    );
    assert_eq!(
        dentist.get("source").map(String::as_str),
        Some("notes/dentist.md")
    );

    // A second run changes no byte: each reminder's link to its note was
    // recorded when it was made.
    let before = file_tree(&s);
    let again = dream3(&s);
    assert_eq!(again["reminders"].as_u64(), Some(0), "{again:#}");
    assert_eq!(reminders(&s).len(), all.len());
    assert_eq!(file_tree(&s), before, "a second dream changed the store");
}

#[test]
fn dates_are_read_from_when_the_note_was_written_and_past_ones_make_no_reminder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let last_year: i64 = day(0)[..4].parse::<i64>().expect("year") - 1;
    let meeting = format!(
        "---\ntitle: Mobile sync\ncreated_at: {last_year}-11-20T10:00:00Z\n---\nDecided: ship Mobile v3 beta on Dec 10\n"
    );
    let yesterday = format!("journals/{}.md", day(-1).replace('-', "_"));
    let last_week = format!("journals/{}.md", day(-7));
    let s = store(
        tmp.path(),
        "s",
        &[
            ("decisions/mobile-sync.md", meeting.as_bytes()),
            (&yesterday, b"Standup review tomorrow 10am\n"),
            (&last_week, b"Call Alice tomorrow 10am\n"),
            ("notes/outage.md", b"The outage was on 2020-03-01.\n"),
            (
                "sessions/s.md",
                format!(
                    "---\ntype: session\nstarted: {}T08:00:00Z\ncreated_at: {}T08:00:00Z\n---\nWe ship the fix tomorrow 9am.\n",
                    day(-1),
                    day(0)
                )
                .as_bytes(),
            ),
        ],
    );
    dream3(&s);
    let all = reminders(&s);
    // Dec 10 of the year the note was written: long past, so none at all
    // (read against today it would have been next Dec 10).
    assert!(quoting(&all, "Mobile v3").is_empty(), "{all:#?}");
    assert!(quoting(&all, "outage").is_empty(), "{all:#?}");
    // Last week's "tomorrow" is long past.
    assert!(quoting(&all, "Call Alice").is_empty(), "{all:#?}");
    // Yesterday's journal: its "tomorrow" is today.
    let standup = quoting(&all, "Standup review");
    assert_eq!(standup.len(), 1, "{all:#?}");
    assert_eq!(
        standup[0].get("due_at").map(String::as_str),
        Some(format!("{}T10:00:00+00:00", day(0)).as_str())
    );
    assert_eq!(
        standup[0].get("title").map(String::as_str),
        Some("Reminder: Standup review")
    );
    // A session's "tomorrow" counts from when it started.
    let fix = quoting(&all, "ship the fix");
    assert_eq!(fix.len(), 1, "{all:#?}");
    assert_eq!(
        fix[0].get("due_at").map(String::as_str),
        Some(format!("{}T09:00:00+00:00", day(0)).as_str())
    );
    assert_eq!(all.len(), 2, "{all:#?}");
}

/// Where `name` (a file name) is now, below `root`.
fn find(root: &Path, name: &str) -> Vec<String> {
    file_tree(root)
        .into_keys()
        .filter(|p| Path::new(p).file_name().is_some_and(|n| n == name))
        .collect()
}

/// The due time of the reminder for `sentence`: a reminder memory that
/// quotes it, or the note itself when it was filed as a reminder.
fn due_for(root: &Path, sentence: &str) -> Vec<String> {
    reminders(root)
        .iter()
        .filter(|r| r.get("body").is_some_and(|b| b.contains(sentence)))
        .filter_map(|r| r.get("due_at").cloned())
        .collect()
}

#[test]
fn an_inbox_item_whose_reminder_was_made_is_filed_and_a_task_is_never_a_date() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let s = store(
        tmp.path(),
        "s",
        &[
            ("inbox/bob.md", b"Meeting with Bob tomorrow 3pm\n"),
            (
                "inbox/passport.md",
                b"---\ntype: task\nstatus: open\n---\n- [ ] Renew the passport on 2099-03-01\n",
            ),
        ],
    );
    dream3(&s);
    let bob = find(&s, "bob.md");
    assert_eq!(bob.len(), 1, "{bob:?}");
    assert!(!bob[0].starts_with("inbox/"), "still in the inbox: {bob:?}");
    assert_eq!(
        due_for(&s, "Meeting with Bob"),
        [format!("{}T15:00:00+00:00", day(1))]
    );
    for r in reminders(&s) {
        if r.get("title").is_some_and(|t| t.starts_with("Reminder: ")) {
            let source = r.get("source").cloned().unwrap_or_default();
            assert!(s.join(&source).is_file(), "{r:#?} names a moved note");
        }
    }

    let passport = find(&s, "passport.md");
    assert_eq!(passport.len(), 1, "{passport:?}");
    assert!(!passport[0].starts_with("date/"), "{passport:?}");
    assert_eq!(
        due_for(&s, "Renew the passport"),
        ["2099-03-01T09:00:00+00:00"]
    );

    let before = file_tree(&s);
    let again = dream3(&s);
    assert_eq!(again["reminders"].as_u64(), Some(0), "{again:#}");
    assert_eq!(file_tree(&s).len(), before.len());
}

#[test]
fn two_reminders_of_one_sentence_stay_two_and_a_dismissed_one_stays_dismissed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (talk, rehearsal) = (day(20), day(17));
    let sentence =
        format!("Conference talk on {talk} at 15:00, rehearsal on {rehearsal} at 10:00.");
    let s = store(
        tmp.path(),
        "s",
        &[("notes/talk.md", format!("{sentence}\n").as_bytes())],
    );
    let first = dream3(&s);
    assert_eq!(first["reminders"].as_u64(), Some(2), "{first:#}");
    let made = reminders(&s);
    assert_eq!(made.len(), 2, "{made:#?}");
    for (r, when) in made.iter().zip([&rehearsal, &talk]) {
        let body = r.get("body").cloned().unwrap_or_default();
        assert!(body.contains(&sentence) && body.contains("Due "), "{body}");
        assert!(
            r.get("due_at")
                .is_some_and(|d| d.starts_with(when.as_str())),
            "{r:?}"
        );
    }
    // Again and again: nothing merged, nothing made, nothing archived.
    for _ in 0..2 {
        let again = dream3(&s);
        assert_eq!(again["reminders"].as_u64(), Some(0), "{again:#}");
        assert_eq!(again["merged"].as_u64(), Some(0), "{again:#}");
    }
    assert!(!s.join("archive").exists(), "{:?}", file_tree(&s).keys());
    assert_eq!(reminders(&s), made);

    // One deleted, the other moved out of reminders/ (done with): neither
    // is made again, and the moved one is no new note to remind of.
    let [early, late] = [&made[0]["file"], &made[1]["file"]];
    succeeded(&run(&s, &["delete", &format!("reminders/{early}")], None));
    fs::create_dir_all(s.join("done")).expect("mkdir");
    fs::rename(s.join("reminders").join(late), s.join("done").join(late)).expect("move");
    let after = dream3(&s);
    assert_eq!(after["reminders"].as_u64(), Some(0), "{after:#}");
    assert!(reminders(&s).is_empty(), "{:?}", file_tree(&s).keys());
}

#[test]
fn a_capture_with_a_time_is_filed_as_its_own_reminder_and_a_task_does_not_expire() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let s = store(tmp.path(), "s", &[]);
    for (text, kind) in [
        ("Send the invoice in two weeks", None),
        ("Send the contract in two weeks", Some("task")),
    ] {
        let mut args = vec!["write", text];
        if let Some(kind) = kind {
            args.extend(["--type", kind]);
        }
        succeeded(&run(&s, &args, None));
    }
    let report = dream3(&s);
    assert_eq!(report["reminders"].as_u64(), Some(2), "{report:#}");
    // Both are what they say, reminders: each is filed under reminders/
    // and is its own reminder, due when its text says (no second one).
    let filed = report["filed"].as_array().expect("filed");
    assert_eq!(filed.len(), 2, "{report:#}");
    assert_eq!(reminders(&s).len(), 2, "{:?}", file_tree(&s).keys());
    assert!(
        report["skipped"].as_array().is_none_or(Vec::is_empty),
        "{report:#}"
    );
    let invoice =
        fs::read_to_string(s.join("reminders/send-the-invoice-in-two-weeks.md")).expect("filed");
    assert!(invoice.contains("due_at: "), "{invoice}");
    assert!(invoice.contains("expires_at: "), "{invoice}");
    // The task is due then, and stays until it is done.
    let task =
        fs::read_to_string(s.join("reminders/send-the-contract-in-two-weeks.md")).expect("filed");
    assert!(task.contains("due_at: "), "{task}");
    assert!(!task.contains("expires_at"), "{task}");
    // Again: nothing new.
    let again = dream3(&s);
    assert_eq!(again["reminders"].as_u64(), Some(0), "{again:#}");
}

#[test]
fn a_note_filed_as_a_reminder_keeps_its_first_time_and_its_others_become_reminders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (first, second) = (day(3), day(9));
    let text =
        format!("Remind me: dentist on {first} at 15:00, and the haircut on {second} at 10:00.\n");
    let s = store(
        tmp.path(),
        "s",
        &[("reminders/errands.md", text.as_bytes())],
    );
    let report = dream3(&s);
    assert_eq!(report["reminders"].as_u64(), Some(2), "{report:#}");
    let all = reminders(&s);
    let note = all
        .iter()
        .find(|r| r["file"] == "errands.md")
        .expect("the note stays");
    assert!(
        note["due_at"].starts_with(&format!("{first}T15:00")),
        "{note:?}"
    );
    let other: Vec<_> = all.iter().filter(|r| r["file"] != "errands.md").collect();
    assert_eq!(other.len(), 1, "{all:#?}");
    assert!(
        other[0]["due_at"].starts_with(&format!("{second}T10:00")),
        "{other:?}"
    );
    let again = dream3(&s);
    assert_eq!(again["reminders"].as_u64(), Some(0), "{again:#}");
    assert_eq!(reminders(&s).len(), 2);
}

#[test]
fn a_due_note_with_neither_title_nor_heading_is_shown_by_what_it_is_about() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let s = store(
        tmp.path(),
        "s",
        &[
            (
                "reminders/e01.md",
                b"---\ndue_at: 2020-01-01T00:00:00Z\n---\nRemind me: call the dentist about the crown\n",
            ),
            (
                "reminders/w1.md",
                b"---\ndue_at: 2020-01-02T00:00:00Z\n---\n# Pay the gas bill\nfrom the app\n",
            ),
        ],
    );
    let out = succeeded(&run(&s, &["notify", "--json"], None));
    let titles: Vec<String> = serde_json::from_str::<Value>(&out).expect("json")["due"]
        .as_array()
        .expect("due")
        .iter()
        .filter_map(|d| d["title"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        titles,
        ["Call the dentist about the crown", "Pay the gas bill"]
    );
}

#[test]
fn a_reminder_a_person_wrote_without_a_time_gets_it_from_its_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let when = day(4);
    let text = format!("---\ntype: reminder\n---\nDentist on {when} at 15:00\n");
    let s = store(
        tmp.path(),
        "s",
        &[("reminders/dentist.md", text.as_bytes())],
    );
    let report = dream3(&s);
    assert_eq!(report["reminders"].as_u64(), Some(1), "{report:#}");
    let all = reminders(&s);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert!(
        all[0]["due_at"].starts_with(&format!("{when}T15:00")),
        "{all:?}"
    );
}
