//! Unit tests of `stat`, `replace` with its two countings, and `Checked`
//! requests, on a temp store with the index in RAM. The rest of the
//! layer is pinned by `tests/operations.rs`.

use std::fs;
use std::sync::Arc;
use std::time::Duration;

use super::*;

struct Fixture {
    root: tempfile::TempDir,
    index: Index,
    ops: Operations,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(Store::open(root.path()).expect("store"));
        let index = Index::in_memory(Arc::clone(&store)).expect("index");
        let views = Views::new(index.clone());
        let writer = Arc::new(DirectWriter::new(Arc::clone(&store)).with_index(index.clone()));
        let ops = Operations::new(store, index.clone(), views, writer, ServedBy::Local);
        Fixture { root, index, ops }
    }

    fn seed(&self, rel: &str, content: &str) {
        let path = self.root.path().join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, content).expect("seed");
    }

    fn text(&self, rel: &str) -> String {
        fs::read_to_string(self.root.path().join(rel)).expect("read")
    }

    fn settle(&self) {
        assert!(self.index.wait_idle(Duration::from_secs(60)), "index idle");
    }
}

fn entry(path: &str, kind: EntryKind, size: u64) -> Entry {
    Entry {
        path: path.into(),
        kind,
        size,
    }
}

#[test]
fn stat_says_what_is_there_without_following_a_symlink() {
    let f = Fixture::new();
    f.seed("notes/a.md", "abc\n");
    std::os::unix::fs::symlink("notes/a.md", f.root.path().join("link.md")).expect("symlink");
    assert_eq!(
        f.ops.stat("notes/a.md").expect("file"),
        entry("notes/a.md", EntryKind::File, 4)
    );
    assert_eq!(
        f.ops.stat("link.md").expect("link"),
        entry(
            "link.md",
            EntryKind::Link {
                target: "notes/a.md".into()
            },
            10
        )
    );
    let folder = f.ops.stat("notes").expect("folder");
    assert_eq!(folder.kind, EntryKind::Folder);
    assert_eq!(f.ops.stat("").expect("the root").kind, EntryKind::Folder);
    assert!(matches!(
        f.ops.stat("notes/b.md"),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        f.ops.stat("notes/a.md/x"),
        Err(Error::NotFolder { .. })
    ));
}

#[test]
fn stat_and_list_call_a_fifo_special() {
    let f = Fixture::new();
    nix::unistd::mkfifo(
        &f.root.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    assert_eq!(f.ops.stat("pipe").expect("stat").kind, EntryKind::Special);
    assert_eq!(f.ops.list("", 1).expect("list")[0].kind, EntryKind::Special);
}

#[test]
fn stat_of_views_answers_as_the_mount() {
    let f = Fixture::new();
    f.seed("notes/a.md", "---\nid: abc-123\n---\nkiwi\n");
    f.settle();
    assert_eq!(
        f.ops.stat("search").expect("view root"),
        entry("search", EntryKind::Folder, 0)
    );
    assert_eq!(
        f.ops.stat("search/kiwi").expect("a query"),
        entry("search/kiwi", EntryKind::Folder, 0)
    );
    assert_eq!(
        f.ops.stat("search/kiwi/summary.md").expect("summary").kind,
        EntryKind::File
    );
    assert_eq!(
        f.ops.stat("by-id/abc-123.md").expect("by-id"),
        entry(
            "by-id/abc-123.md",
            EntryKind::Link {
                target: "../notes/a.md".into()
            },
            13
        )
    );
    assert!(matches!(
        f.ops.stat("by-id/nothing.md"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn disjoint_counting_replaces_what_str_matches_finds_once() {
    let f = Fixture::new();
    f.seed("a.md", "x\naaa\n");
    // Overlapping, "aa" is at 2 and 3: ambiguous.
    let e = f.ops.replace("a.md", "aa", "b", Counting::Overlapping);
    assert!(
        matches!(&e, Err(Error::NotUnique { lines, .. }) if lines == &[2, 2]),
        "{e:?}"
    );
    // Disjoint, it occurs once, at 2.
    let (text, line) = f
        .ops
        .replace("a.md", "aa", "b", Counting::Disjoint)
        .expect("replace");
    assert_eq!((text.as_str(), line), ("x\nba\n", 1));
    assert_eq!(f.text("a.md"), "x\nba\n");
}

#[test]
fn disjoint_counting_reports_every_start_when_not_unique() {
    let f = Fixture::new();
    f.seed("a.md", "aaaa\nb\n");
    let e = f.ops.replace("a.md", "aa", "b", Counting::Disjoint);
    assert!(
        matches!(&e, Err(Error::NotUnique { lines, .. }) if lines == &[1, 1, 1]),
        "{e:?}"
    );
    assert!(matches!(
        f.ops.replace("a.md", "zz", "b", Counting::Disjoint),
        Err(Error::NoMatch { .. })
    ));
    assert_eq!(f.text("a.md"), "aaaa\nb\n");
}

#[test]
fn an_empty_text_is_at_every_character_boundary_when_disjoint() {
    let f = Fixture::new();
    f.seed("a.md", "é\n");
    let e = f.ops.replace("a.md", "", "x", Counting::Disjoint);
    assert!(
        matches!(&e, Err(Error::NotUnique { lines, .. }) if lines == &[1, 1, 2]),
        "{e:?}"
    );
    assert!(matches!(
        f.ops.replace("a.md", "", "x", Counting::Overlapping),
        Err(Error::InvalidInput(_))
    ));
    // An empty file holds the empty text once.
    f.seed("empty.md", "");
    let (text, line) = f
        .ops
        .replace("empty.md", "", "now\n", Counting::Disjoint)
        .expect("replace");
    assert_eq!((text.as_str(), line), ("now\n", 0));
}

#[test]
fn occurrence_lines_count_overlapping_starts() {
    assert_eq!(occurrence_lines("a\naaa\na", "aa"), [2, 2]);
    assert_eq!(occurrence_lines("ab", ""), [1, 1, 1]);
    assert!(occurrence_lines("abc", "x").is_empty());
}

#[test]
fn a_checked_failure_keeps_its_details_across_the_wire() {
    let f = Fixture::new();
    f.seed("a.md", "one\ntwo\none\n");
    let request = Request::Checked {
        request: Box::new(Request::Replace {
            path: "a.md".into(),
            old: "one".into(),
            new: "1".into(),
            counting: Counting::Disjoint,
        }),
    };
    let line = serde_json::to_string(&request).expect("serialize");
    let parsed: Request = serde_json::from_str(&line).expect("parse");
    assert_eq!(parsed, request);
    let answer = f.ops.handle(parsed).expect("a checked request answers");
    let line = serde_json::to_string(&Reply::Ok(answer)).expect("serialize");
    let Reply::Ok(Response::Checked { result }) = serde_json::from_str(&line).expect("parse")
    else {
        panic!("{line}");
    };
    let failure = result.expect_err("two occurrences");
    assert_eq!(
        failure.detail,
        Detail::NotUnique {
            path: "a.md".into(),
            lines: vec![1, 3]
        }
    );
    assert_eq!(failure.error.errno, libc::EINVAL);

    let answer = f.ops.handle(Request::Checked {
        request: Box::new(Request::Insert {
            path: "a.md".into(),
            line: 9,
            text: "x".into(),
        }),
    });
    let Ok(Response::Checked {
        result: Err(failure),
    }) = answer
    else {
        panic!("{answer:?}");
    };
    assert_eq!(
        failure.detail,
        Detail::BadLine {
            path: "a.md".into(),
            line: 9,
            lines: 3
        }
    );
}

#[test]
fn a_checked_success_is_the_plain_answer() {
    let f = Fixture::new();
    f.seed("a.md", "one\n");
    let answer = f.ops.handle(Request::Checked {
        request: Box::new(Request::Replace {
            path: "a.md".into(),
            old: "one".into(),
            new: "two".into(),
            counting: Counting::Disjoint,
        }),
    });
    assert_eq!(
        answer.expect("checked"),
        Response::Checked {
            result: Ok(Box::new(Response::Replaced {
                text: "two\n".into(),
                line: 0
            }))
        }
    );
}
