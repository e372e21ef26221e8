//! The normalizer's background rewrite racing a user who unlinks and
//! renames files and then renames their folder: a rewrite replaces the
//! inode it read, where it is, or gives up; it never brings a file back
//! under its old name. `MNEMOFS_RACE_TRIALS` runs more trials (the short
//! default keeps CI fast).

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use common::{Mount, MountOptions, env_number, poll_until};

/// Every `.md` file under `root`, with its `id:` if it has one.
fn ids(root: &Path) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = fs::read_to_string(&path).unwrap_or_default();
                let id = text
                    .lines()
                    .find_map(|l| l.strip_prefix("id: "))
                    .map(str::to_owned);
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, id);
            }
        }
    }
    out
}

#[test]
fn a_background_rewrite_never_recreates_a_renamed_or_unlinked_file() {
    // A quiet period of 0 leaves the normalizer's own 1.5 s debounce.
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("config.yaml");
    fs::write(
        &config,
        "organizer: { interval: 1h, quiet_period: 0s, grace_period: 1h }\n\
         dream: { idle_after: 0s }\nnotifications: { method: none }\n",
    )
    .unwrap();
    let mut m = Mount::with_options(MountOptions {
        organizer: true,
        extra_args: vec!["--config".into(), config.display().to_string()],
        ..Default::default()
    });
    let n: usize = env_number("MNEMOFS_RACE_TRIALS", 12);
    for t in 0..n {
        let x = m.m(format!("x{t}"));
        fs::create_dir(&x).unwrap();
        for f in 0..3 {
            fs::write(
                x.join(format!("f{f}.md")),
                format!("# Trial {t} file {f}\n"),
            )
            .unwrap();
        }
        // Around the normalizer's 1.5 s debounce, sweeping the window.
        std::thread::sleep(Duration::from_millis(1400 + (t as u64 * 17) % 200));
        fs::remove_file(x.join("f0.md")).unwrap();
        fs::rename(x.join("f1.md"), x.join("g1.md")).unwrap();
        fs::rename(&x, m.m(format!("y{t}"))).unwrap();
    }
    // Let every rewrite that is still due happen.
    std::thread::sleep(Duration::from_secs(4));
    let want = |t: usize| vec![format!("y{t}/f2.md"), format!("y{t}/g1.md")];
    let settled = poll_until(Duration::from_secs(60), || {
        let found = ids(&m.store);
        (0..n).all(|t| {
            want(t)
                .iter()
                .all(|p| found.get(p).is_some_and(Option::is_some))
        })
    });
    let found = ids(&m.store);
    assert!(settled, "not every file was normalized: {found:#?}");
    let expected: Vec<String> = (0..n).flat_map(want).collect();
    let mut names: Vec<String> = found.keys().cloned().collect();
    names.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(names, expected_sorted, "files came back or went missing");
    let mut seen = BTreeMap::new();
    for (path, id) in &found {
        if let Some(previous) = seen.insert(id.clone(), path.clone()) {
            panic!("{path} and {previous} share the id {id:?}");
        }
    }
    let mut temps = Vec::new();
    let mut stack = vec![m.store.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else if entry
                .file_name()
                .to_string_lossy()
                .starts_with(".mnemofs-tmp-")
            {
                temps.push(entry.path());
            }
        }
    }
    assert!(temps.is_empty(), "temp files left: {temps:?}");
    m.stop();
}
