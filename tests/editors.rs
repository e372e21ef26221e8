//! Editors and existing vaults are left alone: mounting a vault rewrites
//! none of its notes, an empty new file stays empty, a file being saved
//! again and again is rewritten only once writes stop for the quiet
//! period, and a copied memory gets an id of its own.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::time::Duration;

use common::{Mount, MountOptions, poll_until};

const QUIET: &str = "\
organizer: { interval: 1h, quiet_period: 5s, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
";

const WAIT: Duration = Duration::from_secs(60);

fn mount(seed: Vec<(String, Vec<u8>)>) -> (Mount, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    fs::write(&config, QUIET).unwrap();
    let m = Mount::with_options(MountOptions {
        organizer: true,
        seed,
        extra_args: vec!["--config".into(), config.display().to_string()],
        before_start: None,
    });
    (m, dir)
}

fn id_of(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
}

#[test]
fn mounting_a_vault_rewrites_none_of_its_notes() {
    let notes = [
        ("daily/2026-11-20.md", "# Friday\n\n- shipped the thing\n"),
        ("projects/atlas.md", "Atlas notes without frontmatter.\n"),
        ("people/ada.md", "---\ntags: [friend]\n---\nAda.\n"),
    ];
    let (mut m, _config) = mount(
        notes
            .iter()
            .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect(),
    );
    // Reading them through the mount is not writing them.
    for (p, _) in &notes {
        fs::read(m.m(p)).unwrap();
    }
    // The start-up pass and the watcher's first batch are done well
    // within the quiet period; give them that long.
    std::thread::sleep(Duration::from_secs(7));
    for (p, text) in &notes {
        assert_eq!(
            &fs::read_to_string(m.s(p)).unwrap(),
            text,
            "{p} was rewritten"
        );
    }
    m.stop();
}

#[test]
fn empty_files_stay_empty_and_saves_wait_for_the_quiet_period() {
    let (mut m, _config) = mount(Vec::new());
    fs::create_dir(m.m("notes")).unwrap();
    fs::write(m.m("notes/Untitled.md"), "").unwrap();

    // An editor autosaving every second for a while.
    let draft = m.m("notes/draft.md");
    let mut text = String::from("# Draft\n");
    for i in 0..6 {
        text.push_str(&format!("line {i}\n"));
        fs::write(&draft, &text).unwrap();
        std::thread::sleep(Duration::from_secs(1));
    }
    // The last save was just now: the quiet period has not passed since.
    assert_eq!(
        fs::read_to_string(&draft).unwrap(),
        text,
        "rewritten while being saved"
    );
    assert!(
        poll_until(WAIT, || id_of(&fs::read_to_string(&draft).unwrap())
            .is_some()),
        "never normalized once the saves stopped"
    );
    assert_eq!(
        fs::read(m.m("notes/Untitled.md")).unwrap(),
        b"",
        "an empty file got frontmatter"
    );
    m.stop();
}

#[test]
fn a_copied_memory_gets_an_id_of_its_own() {
    let original = "---\nid: 3f1c0f7e-1111-4222-8333-944445555666\ncreated_at: 2026-01-01T00:00:00Z\nphase: organized\ncategory: knowledge\n---\n# Original\n";
    let (mut m, _config) = mount(vec![("notes/a.md".into(), original.as_bytes().to_vec())]);
    // Let the index see the original first.
    std::thread::sleep(Duration::from_secs(2));
    fs::copy(m.m("notes/a.md"), m.m("notes/b.md")).unwrap();
    let copy_id = || id_of(&fs::read_to_string(m.m("notes/b.md")).unwrap());
    assert!(
        poll_until(WAIT, || copy_id()
            .is_some_and(|id| id != "3f1c0f7e-1111-4222-8333-944445555666")),
        "the copy kept the original's id: {:?}",
        copy_id()
    );
    assert_eq!(
        fs::read_to_string(m.s("notes/a.md")).unwrap(),
        original,
        "the original changed"
    );
    m.stop();
}

#[test]
fn status_counts_the_organizers_backlog() {
    let (mut m, _config) = mount(Vec::new());
    for i in 0..20 {
        fs::write(m.m(format!("note-{i}.md")), format!("# Note {i}\n")).unwrap();
    }
    let queue = || {
        let out = std::process::Command::new(common::bin())
            .args(["status", "--json"])
            .arg(&m.mnt)
            .output()
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        status["organizer_queue"].as_u64().unwrap()
    };
    // The closes reach the organizer within moments, and within the 5 s
    // quiet period nothing has been normalized yet.
    assert!(
        poll_until(Duration::from_secs(4), || queue() > 0),
        "a backlog of 20 writes does not show"
    );
    assert!(
        poll_until(WAIT, || queue() == 0),
        "the backlog never drained"
    );
    m.stop();
}
