//! Notes nobody wrote through the mount have ids all the same: kept by
//! the daemon, not written into the files, shown by `by-id/` and search,
//! the same after a remount, a reindex and a move (behind the mount or
//! through it), written into the file as they are when it is next
//! written, and by `mnemofs normalize --all`, which history can undo.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{Mount, MountOptions, poll_until};

const QUIET: &str = "\
organizer: { interval: 1h, quiet_period: 5s, grace_period: 1h }
dream: { idle_after: 0s }
notifications: { method: none }
";

const WAIT: Duration = Duration::from_secs(60);

/// Notes of an existing vault, each with a word of its own to find it by.
const VAULT: [(&str, &str, &str); 3] = [
    (
        "daily/2026-11-20.md",
        "alphaword",
        "# Friday\n\n- shipped the alphaword thing\n",
    ),
    (
        "projects/atlas.md",
        "bravoword",
        "Atlas notes without frontmatter, bravoword.\n",
    ),
    (
        "people/ada.md",
        "charlieword",
        "---\ntags: [friend]\n---\nAda, charlieword.\n",
    ),
];

fn mount(config_dir: &Path) -> Mount {
    let config = config_dir.join("config.yaml");
    fs::write(&config, QUIET).unwrap();
    Mount::with_options(MountOptions {
        organizer: true,
        seed: VAULT
            .iter()
            .map(|(p, _, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect(),
        extra_args: vec!["--config".into(), config.display().to_string()],
        before_start: None,
    })
}

fn mnemofs(args: &[&str], store: &Path, state: Option<&Path>) -> Output {
    let mut cmd = Command::new(common::bin());
    cmd.args(args).arg("--store").arg(store);
    if let Some(state) = state {
        cmd.arg("--state-dir").arg(state);
    }
    let out = common::run_with_timeout(&mut cmd, Duration::from_secs(120))
        .unwrap_or_else(|| panic!("mnemofs {args:?} did not finish"));
    assert!(
        out.status.success(),
        "mnemofs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The (path, id) search shows for the one note with `word`, once it does.
fn found(store: &Path, state: Option<&Path>, word: &str) -> Option<(String, String)> {
    let out = mnemofs(&["search", word, "--json"], store, state);
    let text = String::from_utf8(out.stdout).unwrap();
    let hit: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
    Some((
        hit["path"].as_str()?.to_string(),
        hit["id"].as_str()?.to_string(),
    ))
}

/// Each note's id, once search shows all of them.
fn all_ids(store: &Path, state: Option<&Path>) -> BTreeMap<&'static str, String> {
    let mut ids = BTreeMap::new();
    for (_, word, _) in VAULT {
        let mut seen = None;
        assert!(
            poll_until(WAIT, || {
                seen = found(store, state, word);
                seen.is_some()
            }),
            "no id shown for the note with {word}"
        );
        ids.insert(word, seen.unwrap().1);
    }
    ids
}

fn id_in(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
}

/// Where `by-id/<id>.md` leads, relative to the mount root.
fn by_id(m: &Mount, id: &str) -> Option<String> {
    let target = fs::read_link(m.m(format!("by-id/{id}.md"))).ok()?;
    Some(
        target
            .to_string_lossy()
            .trim_start_matches("../")
            .to_string(),
    )
}

fn assert_vault_untouched(m: &Mount, paths: &BTreeMap<&str, String>) {
    for (_, word, text) in VAULT {
        let path = &paths[word];
        assert_eq!(
            fs::read_to_string(m.s(path)).unwrap(),
            text,
            "{path} was rewritten"
        );
    }
}

#[test]
fn an_untouched_notes_id_is_kept_through_remounts_reindexes_and_moves() {
    let config = tempfile::tempdir().unwrap();
    let mut m = mount(config.path());
    let ids = all_ids(&m.store, None);
    let distinct: std::collections::BTreeSet<_> = ids.values().collect();
    assert_eq!(distinct.len(), VAULT.len(), "{ids:?}");
    let mut paths: BTreeMap<&str, String> =
        VAULT.iter().map(|(p, w, _)| (*w, p.to_string())).collect();
    for (_, word, text) in VAULT {
        let id = &ids[word];
        assert_eq!(by_id(&m, id).as_deref(), Some(paths[word].as_str()));
        // `mnemofs read <id>` finds it, and says that id.
        let read = mnemofs(&["read", id, "--json"], &m.store, None);
        let record: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
        assert_eq!(record["id"].as_str(), Some(id.as_str()), "{record}");
        assert_eq!(
            record["path"].as_str(),
            Some(paths[word].as_str()),
            "{record}"
        );
        assert_eq!(
            fs::read_to_string(m.m(format!("by-id/{id}.md"))).unwrap(),
            text
        );
    }
    // Past the quiet period: nothing was written into the notes.
    std::thread::sleep(Duration::from_secs(7));
    assert_vault_untouched(&m, &paths);

    // Moved behind the mount, into a new folder.
    fs::create_dir(m.s("moved")).unwrap();
    fs::rename(m.s("projects/atlas.md"), m.s("moved/atlas.md")).unwrap();
    paths.insert("bravoword", "moved/atlas.md".into());
    assert!(
        poll_until(WAIT, || by_id(&m, &ids["bravoword"]).as_deref()
            == Some("moved/atlas.md")),
        "by-id lost the note moved behind the mount: {:?}",
        by_id(&m, &ids["bravoword"])
    );
    // Moved through the mount, and a folder renamed through it.
    fs::rename(m.m("daily/2026-11-20.md"), m.m("friday.md")).unwrap();
    paths.insert("alphaword", "friday.md".into());
    fs::rename(m.m("people"), m.m("friends")).unwrap();
    paths.insert("charlieword", "friends/ada.md".into());
    for word in ["alphaword", "charlieword"] {
        assert!(
            poll_until(WAIT, || by_id(&m, &ids[word]).as_deref()
                == Some(paths[word].as_str())),
            "by-id lost the note moved through the mount: {:?}",
            by_id(&m, &ids[word])
        );
    }

    // A reindex, then a remount: the same ids.
    mnemofs(&["reindex"], &m.store, None);
    assert_eq!(all_ids(&m.store, None), ids, "after a reindex");
    m.stop();
    m.spawn(&[
        "--config".into(),
        config.path().join("config.yaml").display().to_string(),
    ]);
    assert_eq!(all_ids(&m.store, None), ids, "after a remount");
    for (word, id) in &ids {
        assert_eq!(by_id(&m, id).as_deref(), Some(paths[word].as_str()));
    }
    std::thread::sleep(Duration::from_secs(7));
    assert_vault_untouched(&m, &paths);

    // Moved while nothing was mounted (a vault edited on its own).
    m.stop();
    fs::rename(m.s("friends/ada.md"), m.s("ada.md")).unwrap();
    paths.insert("charlieword", "ada.md".into());
    m.spawn(&[
        "--config".into(),
        config.path().join("config.yaml").display().to_string(),
    ]);
    assert!(
        poll_until(WAIT, || by_id(&m, &ids["charlieword"]).as_deref()
            == Some("ada.md")),
        "by-id lost the note moved while unmounted: {:?}",
        by_id(&m, &ids["charlieword"])
    );
    assert_eq!(all_ids(&m.store, None), ids, "after a move while unmounted");

    // A copy through the mount is another note, with another id.
    fs::copy(m.m("friday.md"), m.m("friday-copy.md")).unwrap();
    let mut copy_id = None;
    assert!(
        poll_until(WAIT, || {
            copy_id = fs::read_to_string(m.s("friday-copy.md"))
                .ok()
                .and_then(|t| id_in(&t));
            copy_id.is_some()
        }),
        "the copy was never normalized"
    );
    let copy_id = copy_id.unwrap();
    assert_ne!(copy_id, ids["alphaword"]);
    assert_eq!(by_id(&m, &copy_id).as_deref(), Some("friday-copy.md"));
    assert_eq!(by_id(&m, &ids["alphaword"]).as_deref(), Some("friday.md"));

    // Written through the mount: the normalizer writes that same id.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(m.m("moved/atlas.md"))
        .unwrap();
    f.write_all(b"One more line.\n").unwrap();
    drop(f);
    let mut written = None;
    assert!(
        poll_until(WAIT, || {
            written = fs::read_to_string(m.s("moved/atlas.md"))
                .ok()
                .and_then(|t| id_in(&t));
            written.is_some()
        }),
        "the edited note was never normalized"
    );
    assert_eq!(written.unwrap(), ids["bravoword"]);
    assert_eq!(
        by_id(&m, &ids["bravoword"]).as_deref(),
        Some("moved/atlas.md")
    );

    // Deleted through the mount: its history is found by that id too.
    let ada = VAULT[2].2;
    fs::remove_file(m.m("ada.md")).unwrap();
    let history = mnemofs(&["history", &ids["charlieword"]], &m.store, None);
    let listed = String::from_utf8_lossy(&history.stdout);
    assert!(
        listed.contains("deleted") && listed.contains("ada.md"),
        "{listed}"
    );
    mnemofs(&["restore", &ids["charlieword"]], &m.store, None);
    assert_eq!(fs::read_to_string(m.s("ada.md")).unwrap(), ada);
    assert!(
        poll_until(WAIT, || by_id(&m, &ids["charlieword"]).as_deref()
            == Some("ada.md")),
        "the restored note lost its id"
    );
    m.stop();
}

#[test]
fn normalize_all_writes_the_ids_by_id_showed_and_history_undoes_it() {
    let config = tempfile::tempdir().unwrap();
    let mut m = mount(config.path());
    let ids = all_ids(&m.store, None);
    let kept = || {
        let out = mnemofs(&["status", "--json"], &m.store, None);
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        status["kept_ids"].as_u64().unwrap()
    };
    assert_eq!(kept(), 3);

    let out = mnemofs(&["normalize", "--all"], &m.store, None);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "normalized 3 memories\n"
    );
    for (path, word, text) in VAULT {
        let now = fs::read_to_string(m.s(path)).unwrap();
        assert_eq!(id_in(&now).as_ref(), Some(&ids[word]), "{now}");
        assert!(now.ends_with(text.rsplit("---\n").next().unwrap()), "{now}");
        assert_eq!(by_id(&m, &ids[word]).as_deref(), Some(path));
    }
    let out = mnemofs(&["normalize", "--all"], &m.store, None);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "normalized 0 memories\n"
    );
    assert!(
        poll_until(WAIT, || kept() == 0),
        "ids still kept after normalize"
    );

    // Undone: the bytes from before come back, and stay.
    let (path, word, text) = VAULT[1];
    let history = mnemofs(&["history", path], &m.store, None);
    assert!(
        String::from_utf8_lossy(&history.stdout).contains("overwritten"),
        "{}",
        String::from_utf8_lossy(&history.stdout)
    );
    mnemofs(&["restore", path], &m.store, None);
    assert_eq!(fs::read_to_string(m.s(path)).unwrap(), text);
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        fs::read_to_string(m.s(path)).unwrap(),
        text,
        "the normalizer rewrote a restored note"
    );
    assert_eq!(found(&m.store, None, word).unwrap().1, ids[word]);
    m.stop();
}

#[test]
fn normalize_all_without_a_daemon_works_on_the_store() {
    let store = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for (path, _, text) in VAULT {
        let p = store.path().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    let ids = all_ids(store.path(), Some(state.path()));
    let out = mnemofs(&["normalize", "--all"], store.path(), Some(state.path()));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "normalized 3 memories\n"
    );
    for (path, word, _) in VAULT {
        let now = fs::read_to_string(store.path().join(path)).unwrap();
        assert_eq!(id_in(&now).as_ref(), Some(&ids[word]), "{now}");
    }
    let out = mnemofs(&["normalize", "--all"], store.path(), Some(state.path()));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "normalized 0 memories\n"
    );
    let (path, _, text) = VAULT[0];
    mnemofs(&["restore", path], store.path(), Some(state.path()));
    assert_eq!(fs::read_to_string(store.path().join(path)).unwrap(), text);
}
