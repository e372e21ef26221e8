//! An Obsidian vault and a Logseq graph ingested as a person keeps them,
//! run as the real binary on a store no daemon serves: the folders stay,
//! attachments come along so embeds resolve, templates stay out, each
//! note's day is its own, nothing volatile lands in a file, a rerun
//! changes no byte, and neither `dream --level 3` nor an inbox TTL that
//! has run out takes a note out of search.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, UNIX_EPOCH};

use common::{file_tree, run_with_timeout, seed_files, store_command, succeeded};
use serde_json::Value;

/// `mnemofs ARGS --store STORE`, with its state and config beside it.
fn run(store: &Path, args: &[&str]) -> Output {
    let mut cmd = store_command(store, args);
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

/// The configuration file the commands on `store` read.
fn configure(store: &Path, yaml: &str) {
    let dir = store.with_extension("config").join("mnemofs");
    fs::create_dir_all(&dir).expect("config dir");
    fs::write(dir.join("config.yaml"), yaml).expect("config");
}

/// The paths `mnemofs search QUERY` answers with.
fn search(store: &Path, query: &str) -> Vec<String> {
    succeeded(&run(store, &["search", query, "--json", "--limit", "50"]))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
            v["path"].as_str().expect("path").to_string()
        })
        .collect()
}

fn frontmatter(store: &Path, rel: &str) -> mnemofs::memory::Frontmatter {
    let text = fs::read_to_string(store.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    mnemofs::memory::parse("", &text).frontmatter
}

/// A PNG header, a PDF's first bytes, a JPEG's: not text.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR atlas architecture";
const PDF: &[u8] = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\nzephyr roadmap\n";
const JPG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0whiteboard";

/// The notes of the vault, each with a word found in it alone.
const NOTES: [(&str, &str, &str); 30] = [
    (
        "People/Alice Nguyen.md",
        "vxalice",
        "---\ntags: [people/colleague]\naliases: [Alice, AN]\n---\nAlice leads the platform team; she owns [[Atlas]] and knows [[Kubernetes]] well. vxalice\n",
    ),
    (
        "People/Bob Martinez.md",
        "vxbob",
        "Bob Martinez is the designer on [[Zephyr]]. Meeting with Bob tomorrow 3pm about the mockups. vxbob\n",
    ),
    (
        "People/Carol.md",
        "vxcarol",
        "#people/colleague\nCarol runs the data team and reviews [[PostgreSQL indexes]]. vxcarol\n",
    ),
    (
        "People/Dan Okafor.md",
        "vxdan",
        "---\ntags: [people/friend]\n---\nDan from the climbing gym; birthday in March. vxdan\n",
    ),
    (
        "Projects/Atlas.md",
        "vxatlas",
        "---\ntags: [project]\naliases: [Project Atlas]\n---\n# Atlas\n\n![[atlas-architecture.png]]\n\nOwner: [[Alice Nguyen]]. Runs on [[Kubernetes]], stores in [[PostgreSQL indexes|Postgres]].\nSee [[Zephyr]] and [[Mobile v3]]. vxatlas\n",
    ),
    (
        "Projects/Zephyr.md",
        "vxzephyr",
        "# Zephyr\n\nRoadmap: ![[zephyr-roadmap.pdf]]\n\nDesign by [[Bob Martinez]], data by [[Carol]]. Related: [[Atlas]]. vxzephyr\n",
    ),
    (
        "Projects/Mobile v3.md",
        "vxmobile",
        "Mobile v3 rewrites the app in Kotlin; beta planned after [[Atlas]] ships. vxmobile\n",
    ),
    (
        "Knowledge/Kubernetes.md",
        "vxkube",
        "Kubernetes schedules pods onto nodes; a Deployment keeps replicas running. vxkube\n",
    ),
    (
        "Knowledge/Rust ownership.md",
        "vxrust",
        "Each value has one owner; borrowing lends it without moving. vxrust\n",
    ),
    (
        "Knowledge/PostgreSQL indexes.md",
        "vxpg",
        "---\naliases: [Postgres]\n---\nA B-tree index speeds up equality and range lookups. vxpg\n",
    ),
    (
        "Knowledge/Tokio runtimes.md",
        "vxtokio",
        "The multi-threaded runtime steals work between threads. vxtokio\n",
    ),
    (
        "Meetings/Planning kickoff.md",
        "vxkickoff",
        "---\ncreated: 2025-10-02 09:30\n---\nKickoff for [[Atlas]] with [[Alice Nguyen]] and [[AN]]. vxkickoff\n",
    ),
    (
        "Meetings/Atlas retro.md",
        "vxretro",
        "---\ndate: 2025-11-14\n---\nRetro: the rollout went well; alerts were noisy. vxretro\n",
    ),
    (
        "Ideas/Reading list.md",
        "vxreading",
        "- Designing Data-Intensive Applications\n- The Rust Book vxreading\n",
    ),
    (
        "Ideas/Home lab.md",
        "vxhomelab",
        "A small [[Kubernetes]] cluster on three mini PCs. vxhomelab\n",
    ),
    (
        "Editor settings.md",
        "vxeditor",
        "I prefer a dark theme and 4-space indentation. vxeditor\n",
    ),
    (
        "Home.md",
        "vxhome",
        "# Home\n\n[[Atlas]] · [[Zephyr]] · [[Mobile v3]] · [[Reading list]] vxhome\n",
    ),
    (
        "笔记/周会纪要.md",
        "周会纪要",
        "本周周会纪要：讨论了 [[Atlas]] 的发布计划，[[Alice Nguyen]] 负责上线。\n",
    ),
    (
        "Daily/2025-11-17.md",
        "vxd17",
        "## Log\nPaired with [[Carol]] on the index migration. vxd17\n",
    ),
    (
        "Daily/2025-11-18.md",
        "vxd18",
        "## Log\nSketched the flow on the whiteboard: ![[whiteboard.jpg]] vxd18\n",
    ),
    (
        "Daily/2025-11-19.md",
        "vxd19",
        "## Log\nRead about #people/colleague feedback. vxd19\n",
    ),
    (
        "Daily/2025-11-20.md",
        "vxd20",
        "## Log\nDecided: ship [[Mobile v3]] beta on Dec 10. vxd20\n",
    ),
    (
        "Daily/2025-11-21.md",
        "vxd21",
        "## Log\nReviewed [[Tokio runtimes]] notes. vxd21\n",
    ),
    (
        "Daily/2025-11-22.md",
        "water the plants",
        "## Tasks\n- [ ] water the plants\n",
    ),
    (
        "Daily/2025-11-23.md",
        "water the plants",
        "## Tasks\n- [ ] water the plants\n",
    ),
    (
        "Daily/2025-11-24.md",
        "vxd24",
        "## Log\nOne-on-one with [[Bob Martinez]]. vxd24\n",
    ),
    (
        "Recipes/Sourdough.md",
        "vxsourdough",
        "75% hydration, overnight proof in the fridge. vxsourdough\n",
    ),
    (
        "Travel/Lisbon trip.md",
        "vxlisbon",
        "Flights booked for May; stay in Alfama. vxlisbon\n",
    ),
    (
        "Health/Running log.md",
        "vxrunning",
        "Ran 10 km in 52 minutes. vxrunning\n",
    ),
    (
        "Finance/Budget 2026.md",
        "vxbudget",
        "Savings target: 20% of income. vxbudget\n",
    ),
];

const ATTACHMENTS: [(&str, &[u8]); 3] = [
    ("attachments/atlas-architecture.png", PNG),
    ("attachments/zephyr-roadmap.pdf", PDF),
    ("Daily/whiteboard.jpg", JPG),
];

/// When the notes without a date of their own were last changed.
const MTIME: u64 = 1_750_000_000;

/// The vault of the issue's shape, in `dir`.
fn obsidian_vault(dir: &Path) -> PathBuf {
    let vault = dir.join("vault");
    let notes: Vec<(&str, &[u8])> = NOTES
        .iter()
        .map(|(rel, _, text)| (*rel, text.as_bytes()))
        .collect();
    seed_files(&vault, &notes);
    seed_files(&vault, &ATTACHMENTS);
    seed_files(
        &vault,
        &[
            (".obsidian/app.json", b"{}"),
            (
                ".obsidian/core-plugins.json",
                br#"["file-explorer","templates","daily-notes"]"#,
            ),
            (".obsidian/templates.json", br#"{"folder": "Templates"}"#),
            (
                ".obsidian/daily-notes.json",
                br#"{"folder": "Daily", "format": "YYYY-MM-DD", "template": "Templates/Daily"}"#,
            ),
            (
                "Templates/Daily.md",
                b"---\ntags: [daily]\n---\n# {{date}}\n## Log\n",
            ),
            (".trash/Old.md", b"thrown away"),
            // Bad input: each skipped with its reason, none a crash.
            ("Broken/yaml.md", b"---\ntags: [unclosed\n---\nbody\n"),
            ("Broken/binary.md", b"\x00\x01\x02binary\x00"),
            ("Broken/latin1.md", b"caf\xe9 cr\xe8me\n"),
        ],
    );
    for (rel, _, _) in NOTES {
        let when = UNIX_EPOCH + Duration::from_secs(MTIME);
        fs::File::options()
            .write(true)
            .open(vault.join(rel))
            .and_then(|f| f.set_modified(when))
            .expect("set mtime");
    }
    vault
}

fn ingest(store: &Path, source: &str, vault: &Path, extra: &[&str]) -> String {
    let vault = vault.to_string_lossy().into_owned();
    let mut args = vec!["ingest", "--source", source, "--path", vault.as_str()];
    args.extend(extra);
    succeeded(&run(store, &args))
}

/// Every note is found by its own word, wherever it is now.
fn assert_all_searchable(store: &Path, when: &str) {
    for (rel, word, _) in NOTES {
        let stem = Path::new(rel)
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let hits = search(store, word);
        assert!(
            hits.iter().any(|h| h.contains(&stem)
                || frontmatter(store, h).title.as_deref() == Some(stem.as_str())),
            "{when}: {rel} not found by {word:?}: {hits:?}"
        );
        assert!(
            hits.iter()
                .all(|h| !h.starts_with("archive/") && store.join(h).is_file()),
            "{when}: {word:?} answers {hits:?}"
        );
    }
}

#[test]
fn an_obsidian_vault_comes_in_with_its_folders_attachments_and_days() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = obsidian_vault(tmp.path());
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");

    let first = ingest(&store, "obsidian", &vault, &[]);
    let mut lines = first.lines();
    assert_eq!(
        lines.next(),
        Some("read 33, written 31, duplicates 0, skipped 5, attachments 3"),
        "{first}"
    );
    for (file, why) in [
        ("Templates/Daily.md", "a template ("),
        ("Broken/yaml.md", "taken in as written"),
        ("Broken/binary.md", "a binary file, not text"),
        ("Broken/latin1.md", "not UTF-8 text"),
        (".obsidian", "Obsidian's settings"),
        (".trash", "Obsidian's trash"),
    ] {
        let shown = vault.join(file).display().to_string();
        assert!(
            first.lines().any(|l| l.contains(why) && l.contains(&shown)),
            "{file}: {why:?} not in\n{first}"
        );
    }

    // The vault's own folders, under obsidian/; nothing in the inbox.
    let store_files = file_tree(&store);
    assert_eq!(
        store_files
            .get("obsidian/Broken/yaml.md")
            .map(Vec::as_slice),
        Some(&b"---\ntags: [unclosed\n---\nbody\n"[..])
    );
    for (rel, _, text) in NOTES {
        let kept = fs::read_to_string(store.join("obsidian").join(rel))
            .unwrap_or_else(|e| panic!("{rel}: {e}"));
        let body = text.rsplit("---\n").next().unwrap_or(text);
        assert!(kept.ends_with(body), "{rel}: the body changed:\n{kept}");
        assert!(!kept.contains("content_hash"), "{rel}:\n{kept}");
        // The note's own frontmatter as written (key order, flow lists),
        // what ingest adds after it.
        if let Some(own) = text
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("---\n"))
            .map(|(own, _)| own)
        {
            assert!(
                kept.starts_with(&format!("---\n{own}")),
                "{rel}: its frontmatter was rewritten:\n{kept}"
            );
        }
    }
    for (rel, bytes) in ATTACHMENTS {
        assert_eq!(
            store_files
                .get(&format!("obsidian/{rel}"))
                .map(Vec::as_slice),
            Some(bytes),
            "{rel} did not come along"
        );
    }
    assert!(!store.join("inbox").exists(), "{store_files:?}");
    assert!(
        store_files
            .iter()
            .all(|(path, bytes)| !path.contains("Templates")
                && !path.contains(".obsidian")
                && !path.contains(".trash")
                && (!path.starts_with("obsidian/Broken") || path == "obsidian/Broken/yaml.md")
                && !String::from_utf8_lossy(bytes).contains("{{date}}")),
        "{:?}",
        store_files.keys().collect::<Vec<_>>()
    );
    assert_eq!(store_files.len(), NOTES.len() + 1 + ATTACHMENTS.len());

    // What the notes say about themselves is kept.
    let alice = frontmatter(&store, "obsidian/People/Alice Nguyen.md");
    assert_eq!(alice.tags, ["people/colleague"]);
    assert_eq!(alice.aliases, ["Alice", "AN"]);
    assert_eq!(alice.source.as_deref(), Some("obsidian"));
    let carol = fs::read_to_string(store.join("obsidian/People/Carol.md")).expect("carol");
    assert!(carol.contains("#people/colleague"), "{carol}");

    // Each note's day: its frontmatter's, its name's, else its file's.
    let created = |rel: &str| frontmatter(&store, &format!("obsidian/{rel}")).created_at;
    for day in 17..=24 {
        assert_eq!(
            created(&format!("Daily/2025-11-{day}.md")).as_deref(),
            Some(format!("2025-11-{day}").as_str())
        );
    }
    assert_eq!(
        created("Meetings/Planning kickoff.md").as_deref(),
        Some("2025-10-02 09:30")
    );
    assert_eq!(
        created("Meetings/Atlas retro.md").as_deref(),
        Some("2025-11-14")
    );
    assert_eq!(
        created("Knowledge/Kubernetes.md"),
        Some(mnemofs::memory::format_timestamp(MTIME as i64))
    );

    // Links resolve by the notes' names in the vault.
    let back = search(&store, "vxatlas");
    assert!(
        back.contains(&"obsidian/Projects/Atlas.md".to_string()),
        "{back:?}"
    );
    let backlinks = succeeded(&run(&store, &["backlinks", "Atlas", "--json"]));
    for linker in ["Alice Nguyen.md", "Zephyr.md", "Home.md", "周会纪要.md"] {
        assert!(backlinks.contains(linker), "{linker} not in {backlinks}");
    }
    let colleagues = search(&store, "tag:people/colleague");
    assert!(
        colleagues.contains(&"obsidian/People/Alice Nguyen.md".to_string())
            && colleagues.contains(&"obsidian/People/Carol.md".to_string()),
        "{colleagues:?}"
    );

    // A rerun adds nothing and changes no byte.
    let again = ingest(&store, "obsidian", &vault, &[]);
    assert!(
        again.starts_with("read 33, written 0, duplicates 31, skipped 5, attachments 3"),
        "{again}"
    );
    assert_eq!(
        file_tree(&store),
        store_files,
        "the rerun changed the store"
    );

    // Embeds name the attachments that came along: none is unresolved.
    let links = run(&store, &["resolve-links"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&links.stdout),
        String::from_utf8_lossy(&links.stderr)
    );
    for (rel, _) in ATTACHMENTS {
        let name = rel.rsplit('/').next().expect("name");
        assert!(!said.contains(&format!("[[{name}]]")), "{said}");
    }

    // The organizer at its deepest, then an inbox TTL run out: every note
    // stays where search finds it.
    succeeded(&run(&store, &["dream", "--level", "3"]));
    assert_all_searchable(&store, "after dream --level 3");
    configure(&store, "lifecycle: { inbox_ttl: 1s }\n");
    std::thread::sleep(Duration::from_millis(1500));
    succeeded(&run(&store, &["dream", "--level", "3"]));
    assert_all_searchable(&store, "after the inbox TTL");
    assert!(
        !store.join("archive").exists(),
        "{:?}",
        file_tree(&store).keys()
    );
    for (rel, _, _) in NOTES {
        assert!(store.join("obsidian").join(rel).is_file(), "{rel} moved");
    }
}

#[test]
fn ingested_notes_in_the_inbox_never_expire_but_an_agents_capture_does() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = obsidian_vault(tmp.path());
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let first = ingest(&store, "obsidian", &vault, &["--into-inbox"]);
    assert!(
        first.starts_with("read 33, written 31, duplicates 0, skipped 5, attachments 3"),
        "{first}"
    );
    let inbox = fs::read_dir(store.join("inbox")).expect("inbox").count();
    // The notes, and the one whose frontmatter cannot be read, as written.
    assert_eq!(inbox, NOTES.len() + 1);
    for (rel, bytes) in ATTACHMENTS {
        assert_eq!(
            fs::read(store.join("obsidian").join(rel)).ok().as_deref(),
            Some(bytes)
        );
    }
    let before = file_tree(&store);
    assert!(
        before
            .values()
            .all(|b| !String::from_utf8_lossy(b).contains("content_hash")),
        "content_hash written"
    );
    let again = ingest(&store, "obsidian", &vault, &["--into-inbox"]);
    assert!(
        again.starts_with("read 33, written 0, duplicates 31"),
        "{again}"
    );
    assert_eq!(file_tree(&store), before, "the rerun changed the store");

    succeeded(&run(&store, &["dream", "--level", "3"]));
    assert_all_searchable(&store, "after dream --level 3");
    // An agent's capture, written next to them, does expire; a note a
    // person dropped there by hand does not.
    configure(&store, "lifecycle: { inbox_ttl: 1s }\n");
    succeeded(&run(
        &store,
        &["write", "zxqv fleeting blorp wibble", "--title", "jot"],
    ));
    fs::write(store.join("inbox/by-hand.md"), "qzpx hand-written blorp\n").expect("by hand");
    std::thread::sleep(Duration::from_millis(1500));
    let report = succeeded(&run(&store, &["dream", "--level", "3", "--json"]));
    let report: Value = serde_json::from_str(&report).expect("json");
    assert_all_searchable(&store, "after the inbox TTL");
    let expired: Vec<String> = fs::read_dir(store.join("archive/expired"))
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(expired, ["jot.md"], "{report}");
    assert!(store.join("inbox/by-hand.md").is_file(), "{report}");
    assert!(!store.join("archive/merged").exists(), "{report}");
}

#[test]
fn a_logseq_graph_keeps_its_folders_properties_journal_days_and_assets() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let graph = tmp.path().join("graph");
    seed_files(
        &graph,
        &[
            (
                "logseq/config.edn",
                b"{:meta/version 1\n ;; :hidden [\"pages\"]\n :hidden [\"/pages/private\"]\n :default-templates {:journals \"daily\"}}\n",
            ),
            ("logseq/custom.css", b""),
            ("logseq/bak/pages/Project Alpha/2025-11-01.md", b"- an old backup\n"),
            (
                "pages/Project Alpha.md",
                b"tags:: work, [[rust lang]]\nalias:: PA\ntype:: project\n\n- Alpha depends on [[Beta]]\n- ![diagram](../assets/diagram_1700.png)\n",
            ),
            (
                "pages/project___beta.md",
                b"- Beta is the storage layer of [[Project Alpha]], since [[Nov 20th, 2025]]\n",
            ),
            (
                "pages/Templates.md",
                b"- Daily\n  template:: daily\n  template-including-parent:: false\n\t- ## Morning\n\t- ## Evening\n",
            ),
            ("pages/private/Diary.md", b"- hidden from Logseq itself\n"),
            ("journals/2025_11_20.md", b"- Met the [[Project Alpha]] team\n"),
            (
                "journals/2025_11_21.md",
                b"created:: 2025-11-01\n\n- a property says otherwise\n",
            ),
            ("assets/diagram_1700.png", PNG),
        ],
    );
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let first = ingest(&store, "logseq", &graph, &[]);
    assert!(
        first.starts_with("read 5, written 4, duplicates 0, skipped 1, attachments 1"),
        "{first}"
    );
    assert!(
        first.contains(&format!(
            "a template (template:: daily, a default in logseq/config.edn): {}",
            graph.join("pages/Templates.md").display()
        )),
        "{first}"
    );
    let stored = file_tree(&store);
    assert_eq!(
        stored.keys().collect::<Vec<_>>(),
        [
            "logseq/assets/diagram_1700.png",
            "logseq/journals/2025_11_20.md",
            "logseq/journals/2025_11_21.md",
            "logseq/pages/Project Alpha.md",
            "logseq/pages/project___beta.md",
        ]
    );
    assert!(
        stored
            .values()
            .all(|b| !String::from_utf8_lossy(b).contains("content_hash")),
        "content_hash written"
    );
    let alpha = frontmatter(&store, "logseq/pages/Project Alpha.md");
    assert_eq!(alpha.tags, ["work", "rust lang"]);
    assert_eq!(alpha.aliases, ["PA"]);
    assert_eq!(alpha.kind.as_deref(), Some("project"));
    let text = String::from_utf8_lossy(&stored["logseq/pages/Project Alpha.md"]).into_owned();
    assert!(
        !text.contains("tags::") && text.contains("../assets/diagram_1700.png"),
        "{text}"
    );
    let beta = frontmatter(&store, "logseq/pages/project___beta.md");
    assert_eq!(beta.title.as_deref(), Some("project/beta"));
    let day = frontmatter(&store, "logseq/journals/2025_11_20.md");
    assert_eq!(day.title.as_deref(), Some("2025-11-20"));
    assert_eq!(day.aliases, ["Nov 20th, 2025"]);
    assert_eq!(day.created_at.as_deref(), Some("2025-11-20"));
    let other = frontmatter(&store, "logseq/journals/2025_11_21.md");
    assert_eq!(other.created_at.as_deref(), Some("2025-11-01"));

    let again = ingest(&store, "logseq", &graph, &[]);
    assert!(
        again.starts_with("read 5, written 0, duplicates 4, skipped 1, attachments 1"),
        "{again}"
    );
    assert_eq!(file_tree(&store), stored, "the rerun changed the store");
    let backlinks = succeeded(&run(&store, &["backlinks", "Project Alpha", "--json"]));
    assert!(
        backlinks.contains("logseq/journals/2025_11_20.md")
            && backlinks.contains("logseq/pages/project___beta.md"),
        "{backlinks}"
    );
    // Logseq links a journal by its page title.
    let to_the_day = succeeded(&run(&store, &["backlinks", "Nov 20th, 2025", "--json"]));
    assert!(
        to_the_day.contains("logseq/pages/project___beta.md"),
        "{to_the_day}"
    );
}

#[test]
fn an_attachment_that_differs_from_the_one_in_the_store_is_left_alone() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("vault");
    seed_files(&vault, &[("Note.md", b"![[pic.png]]\n"), ("pic.png", PNG)]);
    let store = tmp.path().join("s");
    seed_files(&store, &[("obsidian/pic.png", b"the user's own picture")]);
    let first = ingest(&store, "obsidian", &vault, &[]);
    assert!(
        first.starts_with("read 1, written 1, duplicates 0, skipped 1"),
        "{first}"
    );
    assert!(
        first.contains("a different file is already there"),
        "{first}"
    );
    assert_eq!(
        fs::read(store.join("obsidian/pic.png")).expect("pic"),
        b"the user's own picture"
    );
}

#[test]
fn what_a_note_says_of_its_own_origin_and_id_is_kept_and_properties_alone_are_a_note() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("V");
    let graph = tmp.path().join("L");
    seed_files(
        &vault,
        &[
            (
                "Kindle.md",
                b"---\nsource: kindle\nsource_path: books/x.pdf\n---\nhighlight\n",
            ),
            ("Props.md", b"---\ntitle: Props\ncreated: 2021-01-01\n---\n"),
            // A daily note named as the vault's settings say.
            (
                ".obsidian/daily-notes.json",
                b"{\"format\": \"DD-MM-YYYY\"}",
            ),
            ("Daily/05-03-2024.md", b"- standup\n"),
        ],
    );
    seed_files(
        &graph,
        &[
            (
                "pages/p.md",
                b"id:: 11111111-2222-4333-8444-555555555555\nfoo:: bar\n\n- x\n",
            ),
            // A day as Logseq links it.
            (
                "pages/kickoff.md",
                b"date:: [[Nov 1st, 2023]]\n\n- kicked off\n",
            ),
        ],
    );
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let first = ingest(&store, "obsidian", &vault, &[]);
    assert!(
        first.starts_with("read 3, written 3, duplicates 0, skipped 1"),
        "{first}"
    );
    let kindle = frontmatter(&store, "obsidian/Kindle.md");
    assert_eq!(kindle.source.as_deref(), Some("kindle"));
    let path = kindle.extra.get("source_path").and_then(|v| v.as_str());
    assert_eq!(path, Some("books/x.pdf"));
    let props = frontmatter(&store, "obsidian/Props.md");
    assert_eq!(props.created_at.as_deref(), Some("2021-01-01"));
    assert_eq!(props.source.as_deref(), Some("obsidian"));
    let daily = frontmatter(&store, "obsidian/Daily/05-03-2024.md");
    assert_eq!(daily.created_at.as_deref(), Some("2024-03-05"));
    let again = ingest(&store, "obsidian", &vault, &[]);
    assert!(
        again.starts_with("read 3, written 0, duplicates 3"),
        "{again}"
    );
    // Words given as several arguments are one query.
    let found = succeeded(&run(
        &store,
        &["search", "the", "kindle", "highlight", "--json"],
    ));
    assert!(found.contains("obsidian/Kindle.md"), "{found}");

    ingest(&store, "logseq", &graph, &[]);
    let page = frontmatter(&store, "logseq/pages/p.md");
    assert_eq!(
        page.id.as_deref(),
        Some("11111111-2222-4333-8444-555555555555")
    );
    let kickoff = frontmatter(&store, "logseq/pages/kickoff.md");
    assert_eq!(kickoff.created_at.as_deref(), Some("2023-11-01"));
}

#[test]
fn a_store_kept_inside_the_vault_is_not_taken_in_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("vault");
    seed_files(
        &vault,
        &[("Note.md", b"See ![[pic.png]]\n"), ("pic.png", PNG)],
    );
    let store = vault.join("store");
    fs::create_dir_all(&store).expect("store");
    let first = ingest(&store, "obsidian", &vault, &[]);
    assert!(first.contains("mnemofs's own store"), "{first}");
    let tree = file_tree(&store);
    for _ in 0..2 {
        let again = ingest(&store, "obsidian", &vault, &[]);
        assert!(again.contains("written 0"), "{again}");
        assert_eq!(file_tree(&store), tree, "a rerun changed the store");
    }
    assert!(tree.keys().all(|path| !path.contains("store/")), "{tree:?}");
    // Nor is the store ingested into itself.
    let itself = ingest(&store, "obsidian", &store, &[]);
    assert!(itself.contains("read 0, written 0"), "{itself}");
    assert_eq!(file_tree(&store), tree);
}

#[test]
fn a_note_edited_in_the_vault_since_it_came_in_is_named_on_a_rerun() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("vault");
    seed_files(&vault, &[("a.md", b"First text\n"), ("b.md", b"Other\n")]);
    let store = tmp.path().join("s");
    fs::create_dir_all(&store).expect("store");
    ingest(&store, "obsidian", &vault, &[]);
    let again = ingest(&store, "obsidian", &vault, &[]);
    assert!(!again.contains("differs"), "{again}");
    fs::write(vault.join("a.md"), "First text, edited\n").expect("edit");
    let tree = file_tree(&store);
    let edited = ingest(&store, "obsidian", &vault, &[]);
    assert!(
        edited.contains("whose text differs from the source's") && edited.contains("obsidian/a.md"),
        "{edited}"
    );
    assert!(!edited.contains("b.md"), "{edited}");
    // The store's copy stays as it was.
    assert_eq!(file_tree(&store), tree);
}

#[test]
fn a_note_whose_frontmatter_cannot_be_read_comes_in_as_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("vault");
    let broken: &[u8] = b"---\ntitle: 'unclosed\ntags: [a\n---\n# Quarterly plan\nThe zqplan budget is due in March.\n";
    let tabbed: &[u8] = b"---\ntitle: x\n\tid: 1\n---\nzqtabbed notes\n";
    seed_files(
        &vault,
        &[
            ("Plans/Quarterly.md", broken),
            ("Tabbed.md", tabbed),
            ("Fine.md", b"---\ntags: [ok]\n---\nzqfine\n"),
        ],
    );
    let store = tmp.path().join("s");
    fs::create_dir_all(&store).expect("store");
    let first = ingest(&store, "obsidian", &vault, &[]);
    assert!(first.contains("written 3"), "{first}");
    assert!(
        first.contains("taken in as written") && first.contains("Quarterly.md"),
        "{first}"
    );
    // Byte for byte, where the vault keeps it, and found.
    assert_eq!(
        fs::read(store.join("obsidian/Plans/Quarterly.md")).expect("the note"),
        broken
    );
    assert_eq!(
        fs::read(store.join("obsidian/Tabbed.md")).expect("the note"),
        tabbed
    );
    assert_eq!(search(&store, "zqplan"), ["obsidian/Plans/Quarterly.md"]);
    assert_eq!(search(&store, "zqtabbed"), ["obsidian/Tabbed.md"]);
    // The organizer leaves it alone; a rerun adds and changes nothing.
    succeeded(&run(&store, &["dream", "--level", "3"]));
    assert_eq!(
        fs::read(store.join("obsidian/Plans/Quarterly.md")).expect("the note"),
        broken
    );
    let tree = file_tree(&store);
    let again = ingest(&store, "obsidian", &vault, &[]);
    assert!(again.contains("written 0, duplicates 3"), "{again}");
    assert!(
        !again.contains("as written") && !again.contains("differs"),
        "{again}"
    );
    assert_eq!(file_tree(&store), tree);
    // Into the inbox too, as memory-cli files notes.
    let inbox = tmp.path().join("inbox-store");
    fs::create_dir_all(&inbox).expect("store");
    let first = ingest(&inbox, "obsidian", &vault, &["--into-inbox"]);
    assert!(first.contains("written 3"), "{first}");
    assert_eq!(
        fs::read(inbox.join("inbox/quarterly-plan.md")).expect("the note"),
        broken
    );
    let again = ingest(&inbox, "obsidian", &vault, &["--into-inbox"]);
    assert!(again.contains("written 0, duplicates 3"), "{again}");
}

#[test]
fn an_empty_page_of_a_vault_comes_in_so_links_to_it_resolve() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("vault");
    seed_files(
        &vault,
        &[
            ("Placeholder.md", b""),
            ("Hub.md", b"See [[Placeholder]] later.\n"),
        ],
    );
    let store = tmp.path().join("s");
    fs::create_dir_all(&store).expect("store");
    let report = ingest(&store, "obsidian", &vault, &[]);
    assert!(report.contains("written 2"), "{report}");
    let page = fs::read_to_string(store.join("obsidian/Placeholder.md")).expect("the page");
    assert!(page.contains("title: Placeholder"), "{page}");
    let again = ingest(&store, "obsidian", &vault, &[]);
    assert!(again.contains("written 0"), "{again}");
}

#[test]
fn update_takes_in_notes_edited_in_the_vault_and_keeps_the_earlier_text() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let vault = tmp.path().join("vault");
    seed_files(
        &vault,
        &[
            ("a.md", b"---\ntags: [x]\n---\nFirst text\n"),
            ("b.md", b"Other\n"),
        ],
    );
    let store = tmp.path().join("s");
    fs::create_dir_all(&store).expect("store");
    ingest(&store, "obsidian", &vault, &[]);
    fs::write(
        vault.join("a.md"),
        "---\ntags: [x, y]\n---\nFirst text, zqedited\n",
    )
    .expect("edit");
    let updated = ingest(&store, "obsidian", &vault, &["--update"]);
    assert!(updated.contains("written 0, duplicates 2"), "{updated}");
    assert!(
        updated.contains("updated 1") && updated.contains("obsidian/a.md"),
        "{updated}"
    );
    let text = fs::read_to_string(store.join("obsidian/a.md")).expect("a");
    assert!(
        text.starts_with("---\ntags: [x, y]\n") && text.ends_with("\n---\nFirst text, zqedited\n"),
        "{text}"
    );
    assert_eq!(search(&store, "zqedited"), ["obsidian/a.md"]);
    // The earlier text is kept.
    let history = succeeded(&run(&store, &["history", "obsidian/a.md", "--json"]));
    let kept: Vec<Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).expect("a version"))
        .collect();
    assert!(kept.iter().any(|v| v["why"] == "overwritten"), "{history}");
    // Nothing more to take in.
    let tree = file_tree(&store);
    let again = ingest(&store, "obsidian", &vault, &["--update"]);
    assert!(!again.contains("updated"), "{again}");
    assert_eq!(file_tree(&store), tree);

    // Edited in the store after its vault file was: the store's stays.
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(vault.join("b.md"))
        .and_then(|f| f.set_modified(an_hour_ago))
        .expect("age the vault's note");
    let stored = fs::read_to_string(store.join("obsidian/b.md")).expect("b");
    fs::write(store.join("obsidian/b.md"), format!("{stored}zqstore\n")).expect("edit");
    let kept = ingest(&store, "obsidian", &vault, &["--update"]);
    assert!(!kept.contains("updated"), "{kept}");
    assert!(
        fs::read_to_string(store.join("obsidian/b.md"))
            .expect("b")
            .ends_with("zqstore\n")
    );
    // Edited in the vault later: taken, with the id and date the store had.
    let before = fs::read_to_string(store.join("obsidian/b.md")).expect("b");
    let field = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_owned))
    };
    fs::write(vault.join("b.md"), "Other, zqvault\n").expect("vault edit");
    fs::File::options()
        .write(true)
        .open(vault.join("b.md"))
        .and_then(|f| {
            f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        })
        .expect("a later save");
    let taken = ingest(&store, "obsidian", &vault, &["--update"]);
    assert!(taken.contains("updated 1"), "{taken}");
    let after = fs::read_to_string(store.join("obsidian/b.md")).expect("b");
    assert!(after.ends_with("Other, zqvault\n"), "{after}");
    assert_eq!(field(&after, "id"), field(&before, "id"), "{after}");
    assert_eq!(
        field(&after, "created_at"),
        field(&before, "created_at"),
        "{after}"
    );

    // A note the organizer has filed since keeps where it went and what
    // it was given; only its text changes.
    let notes = tmp.path().join("notes");
    seed_files(
        &notes,
        &[("pref.md", b"I prefer dark mode in every editor.\n")],
    );
    let inbox = tmp.path().join("inbox-store");
    fs::create_dir_all(&inbox).expect("store");
    ingest(&inbox, "obsidian", &notes, &["--into-inbox"]);
    succeeded(&run(&inbox, &["dream", "--level", "3"]));
    let filed: Vec<String> = file_tree(&inbox)
        .into_keys()
        .filter(|p| p.ends_with(".md") && !p.starts_with("inbox/"))
        .collect();
    assert_eq!(filed.len(), 1, "{filed:?}");
    let before = fs::read_to_string(inbox.join(&filed[0])).expect("filed");
    fs::write(
        notes.join("pref.md"),
        "I prefer dark mode in every editor, zqdark.\n",
    )
    .expect("edit");
    let updated = ingest(&inbox, "obsidian", &notes, &["--into-inbox", "--update"]);
    assert!(updated.contains("updated 1"), "{updated}");
    let after = fs::read_to_string(inbox.join(&filed[0])).expect("still there");
    let head = |t: &str| t[..t.len() - mnemofs::memory::body_of(t).len()].to_string();
    assert_eq!(head(&after), head(&before));
    assert!(after.ends_with("zqdark.\n"), "{after}");
}
