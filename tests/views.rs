//! Real-mount tests of the virtual views: search, backlinks, categories,
//! ids, the control folder, walker safety and hidden mode.

mod common;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{COMMAND_TIMEOUT, Mount, MountOptions, have_program, poll_until, run_with_timeout};

const SEARCHABLE: Duration = Duration::from_secs(10);

fn names(dir: &Path) -> io::Result<Vec<String>> {
    let mut out: Vec<String> = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<io::Result<_>>()?;
    out.sort();
    Ok(out)
}

/// Result names in a view folder, in listing (rank) order, without the summary.
fn results(dir: &Path) -> Vec<String> {
    names(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n != "summary.md")
        .collect()
}

fn seeded(files: &[(&str, &str)]) -> Mount {
    Mount::with_options(MountOptions {
        seed: files
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect(),
        ..Default::default()
    })
}

fn wait_for(what: &str, cond: impl FnMut() -> bool) {
    assert!(poll_until(SEARCHABLE, cond), "timed out waiting for {what}");
}

#[test]
fn search_finds_a_just_written_note_and_results_link_to_it() {
    let m = Mount::start();
    fs::create_dir(m.m("prefs")).expect("mkdir");
    fs::write(
        m.m("prefs/ui.md"),
        "---\ntags: [ui]\ncategory: preferences\n---\n# UI\nThe user prefers dark mode in every editor.\n",
    )
    .expect("write");
    let q = m.m("search/dark mode");
    wait_for("the note to be searchable", || !results(&q).is_empty());
    let hits = results(&q);
    assert_eq!(hits, vec!["01-ui.md".to_string()]);
    let link = q.join(&hits[0]);
    assert_eq!(
        fs::read_link(&link).expect("readlink"),
        PathBuf::from("../../prefs/ui.md")
    );
    let via_link = fs::read_to_string(&link).expect("read through the result");
    assert!(via_link.contains("dark mode"));
    let summary = fs::read_to_string(q.join("summary.md")).expect("summary");
    assert!(summary.contains("prefs/ui.md"), "{summary}");
    // Field filters and the category view agree.
    wait_for("tag filter", || !results(&m.m("search/tag:ui")).is_empty());
    wait_for("category view", || {
        results(&m.m("by-category/preferences")) == vec!["ui.md".to_string()]
    });
}

#[test]
fn a_query_with_bad_syntax_still_lists_results() {
    let m = seeded(&[("n.md", "# Note\nunclosed quotes are fine\n")]);
    for q in [
        "search/\"unclosed",
        "search/quotes AND OR (",
        "search/quotes tag:",
    ] {
        wait_for(q, || !results(&m.m(q)).is_empty());
    }
}

#[test]
fn backlinks_follow_a_rename_of_the_linking_note() {
    let m = seeded(&[
        (
            "target.md",
            "---\nid: 7d6c1c56-0000-4000-8000-000000000001\n---\n# Target Note\n",
        ),
        ("a.md", "# A\nsee [[Target Note]]\n"),
        ("b.md", "# B\nrelated: [[target]]\n"),
    ]);
    let by_title = m.m("backlinks/target note");
    wait_for("backlinks by title", || results(&by_title).len() == 2);
    assert_eq!(results(&m.m("backlinks/target")).len(), 2, "by stem");
    assert_eq!(
        results(&m.m("backlinks/7d6c1c56-0000-4000-8000-000000000001")).len(),
        2,
        "by id"
    );
    fs::create_dir(m.m("moved")).expect("mkdir");
    fs::rename(m.m("a.md"), m.m("moved/a2.md")).expect("rename");
    wait_for("backlinks after rename", || {
        results(&by_title) == vec!["a2.md".to_string(), "b.md".to_string()]
    });
    let link = fs::read_link(by_title.join("a2.md")).expect("readlink");
    assert_eq!(link, PathBuf::from("../../moved/a2.md"));
    // by-id follows the target wherever it goes.
    let by_id = m.m("by-id/7d6c1c56-0000-4000-8000-000000000001.md");
    wait_for("by-id", || fs::read_link(&by_id).is_ok());
    fs::rename(m.m("target.md"), m.m("moved/target.md")).expect("rename target");
    wait_for("by-id to follow the move", || {
        fs::read_link(&by_id).is_ok_and(|t| t == Path::new("../moved/target.md"))
    });
    assert!(
        fs::read_to_string(&by_id)
            .expect("read by id")
            .contains("Target Note")
    );
}

#[test]
fn categories_are_always_listed_and_reserved_names_refused() {
    let m = Mount::start();
    let cats = names(&m.m("by-category")).expect("list");
    assert_eq!(cats.len(), 14, "{cats:?}");
    assert!(cats.contains(&"preferences".to_string()));
    let root = names(&m.mnt).expect("list root");
    for v in [
        "search",
        "backlinks",
        "by-category",
        "by-tag",
        "by-type",
        "by-id",
        "recent",
        ".mnemofs",
    ] {
        assert!(root.contains(&v.to_string()), "{v} missing from {root:?}");
    }
    assert_eq!(
        fs::create_dir(m.m("search")).unwrap_err().raw_os_error(),
        Some(libc::EEXIST)
    );
    assert_eq!(
        fs::write(m.m("by-category/x.md"), "x")
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EPERM)
    );
    assert_eq!(
        fs::remove_dir(m.m("recent")).unwrap_err().raw_os_error(),
        Some(libc::EPERM)
    );
    assert!(!m.s("search").exists(), "nothing reached the store");
    let status = fs::read_to_string(m.m(".mnemofs/status.json")).expect("status");
    let json: serde_json::Value = serde_json::from_str(&status).expect("json");
    for key in ["documents", "pending_changes", "reconciling"] {
        assert!(json.get(key).is_some(), "{key} missing: {status}");
    }
    assert!(
        fs::read_to_string(m.m(".mnemofs/GUIDE.md"))
            .expect("guide")
            .contains("search/")
    );
}

#[test]
fn malformed_frontmatter_is_reported_in_lint_and_still_searchable() {
    let m = seeded(&[("bad.md", "---\ntitle: [unclosed\n---\nbody words zebra\n")]);
    wait_for("lint", || {
        fs::read_to_string(m.m(".mnemofs/lint")).is_ok_and(|l| l.contains("bad.md"))
    });
    wait_for("body search", || !results(&m.m("search/zebra")).is_empty());
    assert_eq!(
        fs::read(m.s("bad.md")).expect("store"),
        b"---\ntitle: [unclosed\n---\nbody words zebra\n"
    );
}

#[test]
fn chinese_queries_find_chinese_memories() {
    let m = seeded(&[("zh.md", "# 偏好\n我偏好深色模式。\n")]);
    wait_for("CJK search", || {
        !results(&m.m("search/深色模式")).is_empty()
    });
}

#[test]
fn walkers_terminate_and_read_each_real_file_once() {
    let mut files = Vec::new();
    for i in 0..40 {
        files.push((
            format!("d{}/n{i}.md", i % 4),
            format!(
                "---\ntags: [t{}]\n---\n# N{i}\nneedle [[n{}]]\n",
                i % 3,
                (i + 1) % 40
            ),
        ));
    }
    let m = Mount::with_options(MountOptions {
        seed: files
            .iter()
            .map(|(p, c)| (p.clone(), c.clone().into_bytes()))
            .collect(),
        ..Default::default()
    });
    wait_for("indexing", || results(&m.m("by-tag/t0")).len() == 14);
    let count_lines = |out: &[u8]| String::from_utf8_lossy(out).lines().count();
    let out = run_with_timeout(
        Command::new("grep")
            .args(["-r", "-l", "needle"])
            .arg(&m.mnt),
        COMMAND_TIMEOUT,
    )
    .expect("grep -r finished");
    assert_eq!(
        count_lines(&out.stdout),
        40,
        "grep -r reads each real file once"
    );
    let out =
        run_with_timeout(Command::new("find").arg(&m.mnt), COMMAND_TIMEOUT).expect("find finished");
    assert!(out.status.success());
    if have_program("rg") {
        let out = run_with_timeout(
            Command::new("rg").args(["-l", "needle"]).arg(&m.mnt),
            COMMAND_TIMEOUT,
        )
        .expect("rg finished");
        assert_eq!(count_lines(&out.stdout), 40);
    }
    // A two-level listing of every folder, as a file tree view does.
    for top in names(&m.mnt).expect("root") {
        let p = m.m(&top);
        if p.is_dir() {
            for sub in names(&p).unwrap_or_default() {
                let _ = fs::symlink_metadata(p.join(sub));
            }
        }
    }
}

#[test]
fn hidden_views_are_unlisted_but_resolve() {
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--views".into(), "hidden".into()],
        seed: vec![("n.md".into(), b"# N\nhidden views work\n".to_vec())],
        ..Default::default()
    });
    let root = names(&m.mnt).expect("root");
    assert_eq!(root, vec!["n.md".to_string()]);
    wait_for("search while hidden", || {
        !results(&m.m("search/hidden")).is_empty()
    });
    assert_eq!(names(&m.m("by-category")).expect("list").len(), 14);
}

#[test]
fn schema_problems_are_warned_in_lint_and_never_block_the_write() {
    let m = Mount::start();
    let text = "---\ntype: decision\nstatus: maybe\n---\nWe might.\n";
    fs::write(m.m("d.md"), text).expect("the write is never blocked");
    wait_for("schema warnings", || {
        fs::read_to_string(m.m(".mnemofs/lint")).is_ok_and(|l| {
            l.contains("d.md: decision schema: missing required field `title`")
                && l.contains("`status` is `maybe`")
        })
    });
    assert_eq!(fs::read_to_string(m.s("d.md")).expect("store"), text);
}
