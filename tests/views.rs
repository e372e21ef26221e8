//! Real-mount tests of the virtual views: search, backlinks, categories,
//! tags, ids, the control folder, walker safety, the root's guide and
//! listing, read-only errors, sizes, archived memories and long names.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    COMMAND_TIMEOUT, Mount, MountOptions, VIEW_FOLDERS, have_program, poll_until, run_with_timeout,
};

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
fn views_show_a_change_through_the_mount_at_once() {
    let m = Mount::start();
    fs::create_dir(m.m("notes")).expect("mkdir");
    for round in 0..10 {
        let word = format!("quokka{round}");
        let note = m.m(format!("notes/n{round}.md"));
        fs::write(&note, format!("# Round {round}\nThe {word} sat still.\n")).expect("write");
        // No waiting: the view answers once the index has the write.
        let search = m.m(format!("search/{word}"));
        assert_eq!(
            results(&search),
            vec![format!("01-n{round}.md")],
            "round {round}"
        );
        let moved = m.m(format!("notes/moved{round}.md"));
        fs::rename(&note, &moved).expect("rename");
        assert_eq!(
            results(&search),
            vec![format!("01-moved{round}.md")],
            "round {round}, after the rename"
        );
        fs::remove_file(&moved).expect("delete");
        assert!(
            results(&search).is_empty(),
            "round {round}, after the delete"
        );
    }
    // A file still open for writing is searched as it stands.
    let mut open = fs::File::create(m.m("notes/open.md")).expect("create");
    io::Write::write_all(&mut open, b"# Open\nA wombat in progress.\n").expect("write");
    assert_eq!(
        results(&m.m("search/wombat")),
        vec!["01-open.md".to_string()]
    );
    io::Write::write_all(&mut open, b"Then a numbat.\n").expect("write more");
    assert_eq!(
        results(&m.m("search/numbat")),
        vec!["01-open.md".to_string()]
    );
    drop(open);
    // A truncate by name, then the recent view and the by-category view.
    fs::write(
        m.m("notes/pref.md"),
        "---\ncategory: preferences\n---\n# Pref\nTabs.\n",
    )
    .expect("write");
    assert_eq!(
        results(&m.m("by-category/preferences")),
        vec!["pref.md".to_string()]
    );
    assert!(
        results(&m.m("recent"))
            .iter()
            .any(|n| n.ends_with("pref.md"))
    );
    // The daemon's other ways in see it at once too.
    fs::write(m.m("notes/cli.md"), "# Cli\nA bilby underfoot.\n").expect("write");
    let out = run_with_timeout(
        Command::new(common::bin())
            .args(["search", "bilby", "--store"])
            .arg(&m.store),
        COMMAND_TIMEOUT,
    )
    .expect("mnemofs search timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("notes/cli.md"), "{stdout}");
}

/// Several writers at once, each listing its own write at once: one
/// writer's view may take in the others' writes, and each still waits
/// until its own is searchable.
#[test]
fn views_show_each_writers_change_at_once_when_several_write() {
    let m = Mount::start();
    fs::create_dir(m.m("notes")).expect("mkdir");
    let missed: Vec<String> = std::thread::scope(|scope| {
        let writers: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|who| {
                let m = &m;
                scope.spawn(move || {
                    let mut missed = Vec::new();
                    for i in 0..20 {
                        let word = format!("zq{who}x{i}");
                        fs::write(m.m(format!("notes/{who}{i}.md")), format!("note {word}\n"))
                            .expect("write");
                        if results(&m.m(format!("search/{word}"))) != [format!("01-{who}{i}.md")] {
                            missed.push(word);
                        }
                    }
                    missed
                })
            })
            .collect();
        writers
            .into_iter()
            .flat_map(|w| w.join().expect("writer"))
            .collect()
    });
    assert!(missed.is_empty(), "not listed at once: {missed:?}");
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

fn erofs<T: std::fmt::Debug>(what: &str, r: io::Result<T>) {
    assert_eq!(
        r.as_ref().map_err(|e| e.raw_os_error()).err(),
        Some(Some(libc::EROFS)),
        "{what}: {r:?}"
    );
}

#[test]
fn categories_are_always_listed_and_views_are_read_only() {
    let m = Mount::with_args(&["--views", "shown"]);
    let cats = names(&m.m("by-category")).expect("list");
    assert_eq!(cats.len(), 14, "{cats:?}");
    assert!(cats.contains(&"preferences".to_string()));
    let root = names(&m.mnt).expect("list root");
    for v in VIEW_FOLDERS {
        assert!(root.contains(&v.to_string()), "{v} missing from {root:?}");
    }
    // Writes into views fail as on a read-only filesystem, never with
    // EEXIST or EPERM (but a name that exists is EEXIST to mkdir, as on
    // any filesystem: the kernel answers that itself).
    assert_eq!(
        fs::create_dir(m.m("search")).unwrap_err().raw_os_error(),
        Some(libc::EEXIST)
    );
    erofs(
        "write by-category/x.md",
        fs::write(m.m("by-category/x.md"), "x"),
    );
    erofs("rmdir recent", fs::remove_dir(m.m("recent")));
    erofs("create search/x.md", fs::write(m.m("search/x.md"), "x"));
    erofs(
        "O_EXCL create search/x.md",
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(m.m("search/x.md")),
    );
    erofs(
        "create backlinks/x.md",
        fs::write(m.m("backlinks/x.md"), "x"),
    );
    erofs("mkdir by-tag/new", fs::create_dir(m.m("by-tag/new")));
    erofs(
        "write .mnemofs/status.json",
        fs::OpenOptions::new()
            .write(true)
            .open(m.m(".mnemofs/status.json")),
    );
    erofs(
        "rename into a view",
        fs::write(m.m("real.md"), "r")
            .and_then(|()| fs::rename(m.m("real.md"), m.m("recent/r.md"))),
    );
    // access(2): readable and searchable, nothing to run. (Whether it is
    // writable is the kernel's answer for a root daemon, which keeps
    // default_permissions; an unprivileged daemon says EROFS.)
    let access = |rel: &str, mode: libc::c_int| {
        let c =
            std::ffi::CString::new(m.m(rel).into_os_string().into_encoded_bytes()).expect("path");
        // SAFETY: valid NUL-terminated path.
        match unsafe { libc::access(c.as_ptr(), mode) } {
            0 => None,
            _ => std::io::Error::last_os_error().raw_os_error(),
        }
    };
    assert_eq!(access("search", libc::R_OK | libc::X_OK), None);
    assert_eq!(access(".mnemofs/status.json", libc::R_OK), None);
    assert_eq!(
        access(".mnemofs/status.json", libc::X_OK),
        Some(libc::EACCES)
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
fn the_root_lists_real_files_and_the_guide_and_views_resolve_by_path() {
    let m = seeded(&[
        ("n.md", "# N\nunlisted views work\n"),
        ("notes/a.md", "---\ntags: [t]\ntype: decision\n---\n# A\n"),
    ]);
    assert_eq!(
        names(&m.mnt).expect("root"),
        vec!["MNEMOFS.md".to_string(), "n.md".into(), "notes".into()]
    );
    // The guide: static, honest about its size, not in the store.
    let guide = fs::read_to_string(m.m("MNEMOFS.md")).expect("guide");
    let meta = fs::metadata(m.m("MNEMOFS.md")).expect("stat guide");
    assert_eq!(meta.len(), guide.len() as u64);
    assert_eq!(meta.permissions().mode() & 0o777, 0o444);
    for needed in [
        "search/",
        "tag:",
        "AND",
        ".mnemofs/brief.md",
        "by-tag/",
        "recent/",
        "backlinks/",
        "category:",
        "- [preference]",
        "relates_to [[",
        "preferences, decisions",
    ] {
        assert!(guide.contains(needed), "the guide lacks {needed:?}");
    }
    assert!(!m.s("MNEMOFS.md").exists());
    erofs("overwrite the guide", fs::write(m.m("MNEMOFS.md"), "mine"));
    erofs("remove the guide", fs::remove_file(m.m("MNEMOFS.md")));
    erofs(
        "chmod the guide",
        fs::set_permissions(m.m("MNEMOFS.md"), fs::Permissions::from_mode(0o644)),
    );
    // Every view resolves by path: stat, listing, open.
    for v in VIEW_FOLDERS {
        assert!(m.m(v).is_dir(), "{v} does not resolve");
        names(&m.m(v)).unwrap_or_else(|e| panic!("cannot list {v}: {e}"));
    }
    wait_for("search", || !results(&m.m("search/unlisted")).is_empty());
    wait_for("tags", || {
        results(&m.m("by-tag/t")) == vec!["a.md".to_string()]
    });
    assert!(fs::read_to_string(m.m(".mnemofs/status.json")).is_ok());
    // find sees the real files and the guide, nothing else.
    let out =
        run_with_timeout(Command::new("find").arg(&m.mnt), COMMAND_TIMEOUT).expect("find finished");
    let mut found: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.strip_prefix(m.mnt.to_str().unwrap())
                .unwrap_or(l)
                .to_string()
        })
        .collect();
    found.sort();
    assert_eq!(found, ["", "/MNEMOFS.md", "/n.md", "/notes", "/notes/a.md"]);
}

#[test]
fn guide_off_shows_exactly_the_real_files() {
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--guide".into(), "off".into()],
        seed: vec![("n.md".into(), b"# N\n".to_vec())],
        ..Default::default()
    });
    assert_eq!(names(&m.mnt).expect("root"), vec!["n.md".to_string()]);
    assert!(!m.m("MNEMOFS.md").exists());
    // The name is an ordinary one then.
    fs::write(m.m("MNEMOFS.md"), "mine\n").expect("write");
    assert_eq!(fs::read(m.s("MNEMOFS.md")).expect("store"), b"mine\n");
    assert!(m.m("by-category").is_dir(), "views still resolve");
}

#[test]
fn a_real_file_under_the_guide_name_is_shadowed_not_touched() {
    let m = seeded(&[("MNEMOFS.md", "my own notes\n")]);
    assert_eq!(names(&m.mnt).expect("root"), vec!["MNEMOFS.md".to_string()]);
    assert!(
        fs::read_to_string(m.m("MNEMOFS.md"))
            .expect("read")
            .starts_with("# mnemofs")
    );
    assert_eq!(
        fs::read(m.s("MNEMOFS.md")).expect("store"),
        b"my own notes\n"
    );
}

#[test]
fn generated_files_report_their_real_size() {
    let m = seeded(&[("a.md", "# Alpha\nzebra crossing notes\n")]);
    let summary = m.m("search/zebra/summary.md");
    wait_for("a hit", || !results(&m.m("search/zebra")).is_empty());
    for file in [
        summary.clone(),
        m.m(".mnemofs/brief.md"),
        m.m(".mnemofs/status.json"),
        m.m(".mnemofs/GUIDE.md"),
        m.m("search/GUIDE.md"),
    ] {
        let text = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let size = fs::metadata(&file).expect("stat").len();
        assert!(size > 0, "{} says it is empty", file.display());
        assert_eq!(size, text.len() as u64, "{}", file.display());
    }
}

#[test]
fn unknown_tags_and_types_do_not_exist_and_nested_tags_nest() {
    let m = seeded(&[
        ("a.md", "---\ntags: [area/sub, area]\n---\n# A\n"),
        ("b.md", "# B\nsome text #area/sub/deep\n"),
        ("c.md", "---\ntype: decision\n---\n# C\n"),
    ]);
    // Each of the three indexed: b.md's inline tag is the deepest.
    wait_for("nested tags", || {
        names(&m.m("by-tag")).is_ok_and(|n| n == vec!["area".to_string()])
            && names(&m.m("by-tag/area/sub")).is_ok_and(|n| n.contains(&"deep".to_string()))
            && names(&m.m("by-type")).is_ok_and(|n| !n.is_empty())
    });
    assert_eq!(
        names(&m.m("by-tag/area")).expect("area"),
        vec!["a.md".to_string(), "sub".into()]
    );
    assert_eq!(
        names(&m.m("by-tag/area/sub")).expect("area/sub"),
        vec!["a.md".to_string(), "deep".into()]
    );
    assert_eq!(
        names(&m.m("by-tag/area/sub/deep")).expect("deep"),
        vec!["b.md".to_string()]
    );
    assert_eq!(
        fs::read_link(m.m("by-tag/area/sub/deep/b.md")).expect("link"),
        PathBuf::from("../../../../b.md")
    );
    assert_eq!(
        fs::read_to_string(m.m("by-tag/area/sub/deep/b.md")).expect("read"),
        "# B\nsome text #area/sub/deep\n"
    );
    for missing in ["by-tag/nosuchtag", "by-tag/area/nope", "by-type/nosuchtype"] {
        assert_eq!(
            fs::metadata(m.m(missing))
                .map(drop)
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOENT),
            "{missing}"
        );
    }
    wait_for("types", || {
        results(&m.m("by-type/decision")) == vec!["c.md".to_string()]
    });
}

#[test]
fn archived_memories_stay_out_of_views_unless_asked_for() {
    let m = seeded(&[
        (
            "live.md",
            "---\ntags: [kiwi]\ncategory: knowledge\n---\n# Live\nkiwi fruit\n",
        ),
        (
            "archive/old.md",
            "---\nphase: archived\ntags: [kiwi]\ncategory: knowledge\n---\n# Old\nkiwi fruit\n",
        ),
    ]);
    wait_for("search", || {
        results(&m.m("search/kiwi")) == vec!["01-live.md".to_string()]
    });
    let summary = fs::read_to_string(m.m("search/kiwi/summary.md")).expect("summary");
    assert!(!summary.contains("old.md"), "{summary}");
    assert_eq!(results(&m.m("by-tag/kiwi")), vec!["live.md".to_string()]);
    assert_eq!(
        results(&m.m("by-category/knowledge")),
        vec!["live.md".to_string()]
    );
    assert_eq!(results(&m.m("recent")), vec!["01-live.md".to_string()]);
    assert_eq!(
        results(&m.m("search/kiwi phase:archived")),
        vec!["01-old.md".to_string()]
    );
}

#[test]
fn names_in_views_stay_within_255_bytes() {
    let long = format!("{}.md", "é".repeat(125));
    assert_eq!(long.len(), 253);
    let m = seeded(&[
        (
            &format!("a/{long}"),
            "---\ntags: [long]\n---\nlongname words\n",
        ),
        (
            &format!("b/{long}"),
            "---\ntags: [long]\n---\nlongname words\n",
        ),
    ]);
    wait_for("search", || results(&m.m("search/longname")).len() == 2);
    for dir in ["search/longname", "by-tag/long"] {
        let listed = results(&m.m(dir));
        assert_eq!(listed.len(), 2, "{dir}: {listed:?}");
        for name in &listed {
            assert!(name.len() <= 255, "{dir}: {} bytes", name.len());
            assert!(name.ends_with(".md"), "{name}");
            let target = fs::read_link(m.m(dir).join(name)).expect("readlink");
            assert!(target.to_string_lossy().ends_with(&long), "{target:?}");
            assert!(
                fs::read_to_string(m.m(dir).join(name))
                    .expect("read")
                    .contains("longname")
            );
        }
    }
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

/// On a mount other users may use, the views are the owner's: they show
/// memories' text, titles and paths whatever the files' modes. Other users
/// get the real tree, as the files' modes allow, and never the index.
#[test]
fn with_allow_other_other_users_see_only_what_the_files_let_them() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: acting as another user needs root");
        return;
    }
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--allow-other".into()],
        seed: vec![
            (
                "public.md".into(),
                b"# Public\ntopsecretword in the open\n".to_vec(),
            ),
            (
                "secret600.md".into(),
                b"# Secret\ntopsecretword hidden\n".to_vec(),
            ),
            (
                "private/plan.md".into(),
                b"# Plan\ntopsecretword plan\n".to_vec(),
            ),
        ],
        ..Default::default()
    });
    let chmod = |p: &Path, mode: u32| {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).expect("chmod")
    };
    chmod(m.mnt.parent().expect("parent"), 0o755);
    chmod(&m.store, 0o755);
    chmod(&m.s("secret600.md"), 0o600);
    chmod(&m.s("private"), 0o700);
    chmod(&m.s("private/plan.md"), 0o600);
    wait_for("the owner's search", || {
        results(&m.m("search/topsecretword")).len() == 3
    });
    let as_nobody = |program: &str, path: &Path| {
        run_with_timeout(
            Command::new(program).arg(path).uid(65534).gid(65534),
            COMMAND_TIMEOUT,
        )
        .expect("timed out")
    };
    let public = as_nobody("cat", &m.m("public.md"));
    assert!(public.status.success(), "{public:?}");
    for private in [
        m.m("secret600.md"),
        m.m("private"),
        m.m("search/topsecretword/summary.md"),
        m.m("search/topsecretword"),
        m.m("recent"),
        m.m("by-tag"),
        m.m(".mnemofs/brief.md"),
    ] {
        let program = if private.extension().is_some() {
            "cat"
        } else {
            "ls"
        };
        let out = as_nobody(program, &private);
        assert!(
            !out.status.success(),
            "{} was readable: {out:?}",
            private.display()
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("topsecretword"),
            "{}",
            private.display()
        );
    }
    // The guide at the root is the same text for everyone.
    assert!(as_nobody("cat", &m.m("MNEMOFS.md")).status.success());
    // The state dir, which holds the whole text indexed, stays private
    // whatever the umask.
    assert_eq!(fs::metadata(&m.state).expect("state").mode() & 0o777, 0o700);
}
