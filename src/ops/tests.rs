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
        // Written behind the index's back, after its start-up walk may
        // have passed: tell it, as the store watcher would.
        if let Some(p) = crate::store::StorePath::new(rel) {
            self.index.notify_path(&p);
        }
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

impl Fixture {
    /// Seeds memories and waits until the index has them all.
    fn seed_indexed(&self, files: &[(&str, &str)]) {
        for (rel, content) in files {
            self.seed(rel, content);
            self.index
                .notify_path(&StorePath::new(rel).expect("a store path"));
        }
        self.settle();
    }
}

#[test]
fn read_memory_splits_frontmatter_from_the_body() {
    let f = Fixture::new();
    f.seed_indexed(&[(
        "notes/kiwi.md",
        "---\nid: k-1\ntitle: Kiwi\ntags: [fruit]\nmood: sunny\n---\nGreen inside.\n",
    )]);
    for reference in ["k-1", "notes/kiwi.md", "Kiwi"] {
        let m = f.ops.read_memory_text(reference).expect(reference);
        assert_eq!(m.path, "notes/kiwi.md");
        assert_eq!(m.id.as_deref(), Some("k-1"));
        assert_eq!(m.content, "Green inside.\n");
        assert_eq!(m.frontmatter["title"], "Kiwi");
        assert_eq!(m.frontmatter["tags"][0], "fruit");
        assert_eq!(m.frontmatter["mood"], "sunny", "unknown keys are kept");
    }
    assert!(matches!(
        f.ops.read_memory_text("nothing here"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn backlinks_list_the_memories_that_link_to_a_reference() {
    let f = Fixture::new();
    f.seed_indexed(&[
        ("a.md", "---\nid: a-1\ntitle: Alpha\n---\nSee [[Beta]].\n"),
        ("b.md", "---\nid: b-1\ntitle: Beta\n---\nNothing.\n"),
        ("c.md", "# Gamma\n\n- relates_to [[b]]\n"),
    ]);
    let found = f.ops.backlinks("b-1", 50).expect("backlinks");
    let paths: Vec<&str> = found.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["a.md", "c.md"]);
    assert_eq!(found[0].id.as_deref(), Some("a-1"));
    assert_eq!(found[1].title, "Gamma");
    assert_eq!(f.ops.backlinks("Beta", 1).expect("limited").len(), 1);
    assert!(f.ops.backlinks("Alpha", 50).expect("none").is_empty());
    assert!(matches!(
        f.ops.backlinks("Omega", 50),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn memories_match_every_filter_given() {
    let f = Fixture::new();
    f.seed_indexed(&[
        (
            "people/ann.md",
            "---\ncategory: people\ntype: memory\ntags: [team]\n---\nAnn.\n",
        ),
        (
            "people/bob.md",
            "---\ncategory: people\ntype: decision\n---\nBob. #team\n",
        ),
        ("notes/x.md", "---\ntags: [team]\n---\nX.\n"),
    ]);
    let paths = |filter: MemoryFilter| -> Vec<String> {
        let found = f.ops.memories(&filter).expect("memories");
        found.into_iter().map(|m| m.path).collect()
    };
    let all = MemoryFilter::default();
    assert_eq!(
        paths(all.clone()),
        ["notes/x.md", "people/ann.md", "people/bob.md"]
    );
    let team = MemoryFilter {
        tag: Some("#Team".into()),
        ..all.clone()
    };
    assert_eq!(
        paths(team.clone()),
        ["notes/x.md", "people/ann.md", "people/bob.md"]
    );
    let people_team = MemoryFilter {
        category: Some("people".into()),
        ..team.clone()
    };
    assert_eq!(
        paths(people_team.clone()),
        ["people/ann.md", "people/bob.md"]
    );
    let decisions = MemoryFilter {
        kind: Some("decision".into()),
        ..people_team
    };
    assert_eq!(paths(decisions), ["people/bob.md"]);
    let in_notes = MemoryFilter {
        path: Some("notes/".into()),
        ..team
    };
    assert_eq!(paths(in_notes), ["notes/x.md"]);
    let one = MemoryFilter { limit: 1, ..all };
    assert_eq!(paths(one), ["notes/x.md"]);
    let bad = MemoryFilter {
        category: Some("nonsense".into()),
        ..MemoryFilter::default()
    };
    assert!(matches!(f.ops.memories(&bad), Err(Error::InvalidInput(_))));
    let outside = MemoryFilter {
        path: Some("../etc".into()),
        ..MemoryFilter::default()
    };
    assert!(matches!(
        f.ops.memories(&outside),
        Err(Error::InvalidPath { .. })
    ));
}

#[test]
fn recent_lists_the_latest_changed_first_and_requests_reach_them() {
    let f = Fixture::new();
    f.seed("old.md", "Old.\n");
    let file = fs::File::options()
        .write(true)
        .open(f.root.path().join("old.md"))
        .expect("open");
    file.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .expect("set mtime");
    drop(file);
    f.index
        .notify_path(&StorePath::new("old.md").expect("path"));
    f.seed_indexed(&[("new.md", "# New one\n")]);
    let recent = f.ops.recent(10);
    let paths: Vec<&str> = recent.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["new.md", "old.md"]);
    assert_eq!(recent[0].title, "New one");
    assert!(recent[0].changed.is_some());
    let Ok(Response::Memories { memories }) = f.ops.handle(Request::Recent {
        limit: 1,
        since: None,
        kind: None,
    }) else {
        panic!("recent over a request");
    };
    assert_eq!(memories.len(), 1);
    let request: Request =
        serde_json::from_str(r#"{"op": "memories", "tag": "x", "type": "task"}"#).expect("json");
    assert_eq!(
        request,
        Request::Memories(MemoryFilter {
            tag: Some("x".into()),
            kind: Some("task".into()),
            ..MemoryFilter::default()
        })
    );
}

#[test]
fn insert_in_body_counts_lines_below_the_frontmatter() {
    let f = Fixture::new();
    f.seed("a.md", "---\ntitle: A\n---\none\ntwo\n");
    f.seed("plain.md", "one\n");
    f.ops.insert_in_body("a.md", 0, "top").expect("at the top");
    assert_eq!(f.text("a.md"), "---\ntitle: A\n---\ntop\none\ntwo\n");
    f.ops.insert_in_body("a.md", 3, "end").expect("at the end");
    assert_eq!(f.text("a.md"), "---\ntitle: A\n---\ntop\none\ntwo\nend\n");
    assert!(matches!(
        f.ops.insert_in_body("a.md", 5, "x"),
        Err(Error::BadLine { lines: 4, .. })
    ));
    f.ops
        .insert_in_body("plain.md", 0, "zero")
        .expect("no frontmatter");
    assert_eq!(f.text("plain.md"), "zero\none\n");
}

/// Four memories: one without scope, one global, one per agent. Each
/// links to the unscoped one.
fn scoped_fixture() -> Fixture {
    let f = Fixture::new();
    f.seed_indexed(&[
        ("plain.md", "---\nid: p-1\ntitle: Plain\n---\nshared note\n"),
        (
            "global.md",
            "---\nid: g-1\ntitle: Global\nscope: global\n---\nshared note, see [[Plain]]\n",
        ),
        (
            "alice.md",
            "---\nid: a-1\ntitle: Alice\nscope: agent:alice\n---\nalice note, see [[Plain]]\n",
        ),
        (
            "bob/secret.md",
            "---\nid: b-1\ntitle: Secret\nscope: agent:Bob\n---\nbob note, see [[Plain]]\n",
        ),
    ]);
    f
}

fn scope(text: &str) -> Option<Scope> {
    Some(Scope::parse(text).expect("scope"))
}

fn summary_paths(list: &[MemorySummary]) -> Vec<&str> {
    list.iter().map(|m| m.path.as_str()).collect()
}

#[test]
fn an_agent_sees_global_memories_and_its_own_never_another_agents() {
    let f = scoped_fixture();
    let alice = f.ops.scoped(scope("agent:alice"));
    for visible in ["plain.md", "global.md", "alice.md"] {
        alice.read(visible).expect(visible);
    }
    let hidden = |e: Result<_>| matches!(e, Err(Error::NotFound { .. }));
    assert!(hidden(alice.read("bob/secret.md").map(drop)));
    assert!(hidden(alice.stat("bob/secret.md").map(drop)));
    assert!(hidden(alice.read_memory_text("Secret").map(drop)));
    assert!(hidden(alice.read_memory_text("b-1").map(drop)));
    assert!(hidden(alice.resolve("bob/secret.md").map(drop)));
    assert!(hidden(alice.delete("bob/secret.md")));
    assert!(hidden(alice.rename("bob/secret.md", "mine.md")));
    assert!(hidden(
        alice.str_replace("bob/secret.md", "bob", "eve").map(drop)
    ));
    assert!(hidden(alice.link("alice.md", "Secret").map(drop)));
    assert!(f.text("bob/secret.md").contains("bob note"), "untouched");

    let listed = alice.list("", 2).expect("list");
    assert_eq!(
        paths_of(&listed),
        ["alice.md", "bob", "global.md", "plain.md"],
        "the folder shows, not what it holds"
    );
    let hits = alice.search("note", 20).expect("search");
    let mut found: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    found.sort();
    assert_eq!(found, ["alice.md", "global.md", "plain.md"]);
    assert_eq!(
        summary_paths(&alice.backlinks("Plain", 50).expect("backlinks")),
        ["alice.md", "global.md"]
    );
    let mut recent = summary_paths(&alice.recent(10))
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    recent.sort();
    assert_eq!(recent, ["alice.md", "global.md", "plain.md"]);
    assert_eq!(
        summary_paths(&alice.memories(&MemoryFilter::default()).expect("all")),
        ["alice.md", "global.md", "plain.md"]
    );
    let around = alice.context("Plain", 1, 20).expect("context");
    let mut related: Vec<&str> = around.related.iter().map(|r| r.path.as_str()).collect();
    related.sort();
    assert_eq!(related, ["alice.md", "global.md"]);

    // Views: the link to the hidden memory is gone, and so is its target.
    let view = alice.list("search/bob", 1).expect("search view");
    assert!(
        view.iter()
            .all(|e| !matches!(e.kind, EntryKind::Link { .. })),
        "{view:?}"
    );
    assert!(hidden(alice.read("by-id/b-1.md").map(drop)));
    // The summary leaves it out too; the brief, which lists every scope,
    // is refused.
    let summary = alice.read("search/bob/summary.md").expect("summary");
    assert!(!summary.contains("bob.md"), "{summary}");
    assert!(matches!(
        alice.read(".mnemofs/brief.md"),
        Err(Error::Unavailable(_))
    ));
    assert!(matches!(alice.delete("bob"), Err(Error::OtherScope(_))));

    // Its status counts what it may see.
    assert_eq!(alice.status().documents, f.ops.status().documents - 1);

    // The whole store for an unscoped session; only global ones for `global`.
    assert_eq!(f.ops.search("note", 20).expect("all").len(), 4);
    let global = f.ops.scoped(scope("global"));
    let mut seen: Vec<String> = global
        .search("note", 20)
        .expect("global")
        .into_iter()
        .map(|h| h.path)
        .collect();
    seen.sort();
    assert_eq!(seen, ["global.md", "plain.md"]);
    assert!(hidden(global.read("alice.md").map(drop)));
}

fn paths_of(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn an_agents_writes_get_its_scope_and_never_another_agents() {
    let f = scoped_fixture();
    let alice = f.ops.scoped(scope("Agent:Alice"));
    let (path, _) = alice
        .write_memory(&NewMemory {
            content: "likes tea\n".into(),
            ..NewMemory::default()
        })
        .expect("write");
    assert!(f.text(&path.to_string()).contains("\nscope: agent:alice\n"));
    let (path, _) = alice
        .write_memory(&NewMemory {
            content: "everyone's\n".into(),
            scope: Some("global".into()),
            ..NewMemory::default()
        })
        .expect("global write");
    assert!(f.text(&path.to_string()).contains("\nscope: global\n"));
    assert!(matches!(
        alice.write_memory(&NewMemory {
            content: "sneaky\n".into(),
            scope: Some("agent:bob".into()),
            ..NewMemory::default()
        }),
        Err(Error::OtherScope(_))
    ));
    // Files made whole (the memory tool's create) get it too, markdown only.
    alice
        .create("notes/tool.md", "# Tool\nbody\n", false)
        .expect("md");
    assert_eq!(
        f.text("notes/tool.md"),
        "---\nscope: agent:alice\n---\n# Tool\nbody\n"
    );
    alice
        .create("notes/data.json", "{}\n", false)
        .expect("json");
    assert_eq!(f.text("notes/data.json"), "{}\n");
    assert!(matches!(
        alice.create("bob/secret.md", "mine now\n", true),
        Err(Error::Exists { .. })
    ));
    // Through a request, as front ends send it.
    let answer = f.ops.handle(Request::Scoped {
        scope: Some("agent:alice".into()),
        request: Box::new(Request::Read {
            path: "bob/secret.md".into(),
        }),
    });
    assert!(matches!(answer, Err(Error::NotFound { .. })));
    let answer = f.ops.handle(Request::Scoped {
        scope: Some("alice".into()),
        request: Box::new(Request::Status),
    });
    assert!(matches!(answer, Err(Error::InvalidInput(_))));
}

#[test]
fn a_scope_that_cannot_be_read_hides_the_memory_from_other_scopes() {
    let f = scoped_fixture();
    f.seed_indexed(&[
        (
            "bob/broken.md",
            "---\ntitle: broken\nscope: agent:bob\ntags: [unclosed\n---\nkumquat\n",
        ),
        ("bob/listed.md", "---\nscope: [agent:bob]\n---\nkumquat\n"),
        ("bob/unclosed.md", "---\nscope: agent:bob\nkumquat\n"),
        (
            "bob/spaced.md",
            "---\nscope: \"agent: bob\"\n---\nkumquat\n",
        ),
        ("open.md", "---\ntags: [unclosed\n---\nkumquat for all\n"),
    ]);
    let alice = f.ops.scoped(scope("agent:alice"));
    for hidden in [
        "bob/broken.md",
        "bob/listed.md",
        "bob/unclosed.md",
        "bob/spaced.md",
    ] {
        assert!(
            matches!(alice.read(hidden), Err(Error::NotFound { .. })),
            "{hidden}"
        );
        assert!(
            matches!(
                alice.str_replace(hidden, "kumquat", "mine"),
                Err(Error::NotFound { .. })
            ),
            "{hidden}"
        );
    }
    let found: Vec<String> = alice
        .search("kumquat", 20)
        .expect("search")
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(found, ["open.md"], "broken YAML naming no scope is global");
    let bob = f.ops.scoped(scope("agent:bob"));
    bob.read("bob/broken.md").expect("its own");
    bob.read("bob/listed.md").expect("its own, in a list");
}

#[test]
fn an_edit_never_gives_a_memory_a_scope_the_session_may_not_see() {
    let f = scoped_fixture();
    let alice = f.ops.scoped(scope("agent:alice"));
    let refused = |e: Result<()>| matches!(e, Err(Error::OtherScope(m)) if m.contains("agent:bob"));
    assert!(refused(
        alice
            .str_replace("global.md", "scope: global", "scope: agent:bob")
            .map(drop)
    ));
    assert!(refused(
        alice
            .str_replace("alice.md", "agent:alice", "agent:bob")
            .map(drop)
    ));
    assert!(refused(
        alice.insert("plain.md", 1, "scope: agent:bob").map(drop)
    ));
    assert!(f.text("global.md").contains("scope: global\n"));
    assert!(f.text("plain.md").starts_with("---\nid: p-1\n"));
    // Its own, or everyone's, it may give.
    alice
        .str_replace(
            "plain.md",
            "title: Plain",
            "title: Plain\nscope: agent:alice",
        )
        .expect("its own");
    alice
        .str_replace("alice.md", "agent:alice", "global")
        .expect("everyone's");
}

#[test]
fn a_hidden_memorys_names_are_no_backlinks_target() {
    let f = scoped_fixture();
    f.seed_indexed(&[(
        "mention.md",
        "---\nid: m-1\ntitle: Mention\n---\nsee [[Secret]]\n",
    )]);
    let alice = f.ops.scoped(scope("agent:alice"));
    let listed = |who: &Operations, dir: &str| -> Vec<String> {
        who.list(dir, 1)
            .expect(dir)
            .into_iter()
            .filter(|e| matches!(e.kind, EntryKind::Link { .. }))
            .map(|e| e.path)
            .collect()
    };
    // By its id, the hidden memory's other names are not followed.
    assert!(listed(&alice, "backlinks/b-1").is_empty());
    assert_eq!(
        listed(&f.ops, "backlinks/b-1"),
        ["backlinks/b-1/mention.md"]
    );
    // A link that writes the name itself is the text's own.
    assert_eq!(
        listed(&alice, "backlinks/Secret"),
        ["backlinks/Secret/mention.md"]
    );
}

/// Two agents editing one note at once: each edit lands, after the other
/// one's, instead of failing as a conflict.
#[test]
fn edits_of_one_note_at_once_all_land() {
    let f = Fixture::new();
    f.seed_indexed(&[("log.md", "---\nid: log-1\n---\n")]);
    std::thread::scope(|s| {
        for who in ["a", "b"] {
            let ops = &f.ops;
            s.spawn(move || {
                for i in 0..25 {
                    ops.insert_in_body("log.md", 0, &format!("{who}{i}"))
                        .expect("insert");
                }
            });
        }
    });
    let text = f.text("log.md");
    for who in ["a", "b"] {
        for i in 0..25 {
            assert!(
                text.lines().any(|l| l == format!("{who}{i}")),
                "{who}{i}:\n{text}"
            );
        }
    }
}

#[test]
fn a_write_expecting_an_old_version_is_a_conflict_and_writes_nothing() {
    let f = Fixture::new();
    f.seed_indexed(&[
        ("a.md", "---\nid: a-1\ntitle: Alpha\n---\none\n"),
        ("b.md", "---\nid: b-1\ntitle: Beta\n---\ntwo\n"),
    ]);
    let read = f.ops.read_memory_text("a-1").expect("read");
    assert_eq!(read.version, version_of(f.text("a.md").as_bytes()));
    let stale = f.ops.expecting(Some(read.version.clone()));
    stale
        .str_replace("a.md", "one", "uno")
        .expect("still current");
    let before = f.text("a.md");
    let conflict = |e: Result<()>| matches!(e, Err(Error::Conflict { .. }));
    assert!(conflict(stale.str_replace("a.md", "uno", "eins").map(drop)));
    assert!(conflict(stale.insert_in_body("a.md", 0, "zero").map(drop)));
    assert!(conflict(stale.link("a.md", "b.md").map(drop)));
    assert!(conflict(stale.unlink("a.md", "b.md").map(drop)));
    assert!(conflict(stale.rename("a.md", "c.md")));
    assert!(conflict(stale.delete("a.md")));
    assert!(conflict(stale.create("a.md", "new\n", true)));
    assert_eq!(f.text("a.md"), before, "nothing written");

    let current = f.ops.read_memory_text("a.md").expect("again").version;
    let answer = f.ops.handle(Request::Expecting {
        version: Some(current),
        request: Box::new(Request::WriteMemory(NewMemory {
            content: "replaced\n".into(),
            path: Some("a.md".into()),
            title: Some("Alpha".into()),
            ..NewMemory::default()
        })),
    });
    assert!(matches!(answer, Ok(Response::Memory { .. })), "{answer:?}");
    assert!(f.text("a.md").ends_with("---\nreplaced\n"));
    // A version `read` never gives is refused as such, not as a conflict.
    for made_up in ["garbage", "", "fnv1a64:12"] {
        let answer = f.ops.handle(Request::Expecting {
            version: Some(made_up.into()),
            request: Box::new(Request::Delete {
                path: "a.md".into(),
            }),
        });
        assert!(
            matches!(&answer, Err(Error::InvalidInput(m)) if m.contains("not a version")),
            "{made_up}: {answer:?}"
        );
    }
    assert!(f.text("a.md").ends_with("---\nreplaced\n"));
    assert!(matches!(
        f.ops
            .expecting(Some("fnv1a64:0".into()))
            .write_memory(&NewMemory {
                content: "x".into(),
                ..NewMemory::default()
            }),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn unlink_takes_the_recorded_link_away_both_ways_and_keeps_body_links() {
    let f = Fixture::new();
    f.seed_indexed(&[
        (
            "a.md",
            "---\nid: a-1\ntitle: Alpha\nlinks: [b-1, c-1]\n---\nSee [[Beta]].\n",
        ),
        (
            "b.md",
            "---\nid: b-1\ntitle: Beta\nlinks: ['[[Alpha]]']\n---\nx\n",
        ),
        ("c.md", "---\nid: c-1\ntitle: Gamma\n---\ny\n"),
    ]);
    let (path, removed) = f.ops.unlink("Alpha", "b-1").expect("unlink");
    assert_eq!((path.to_string().as_str(), removed), ("a.md", true));
    assert_eq!(
        f.text("a.md"),
        "---\nid: a-1\ntitle: Alpha\nlinks: [c-1]\n---\nSee [[Beta]].\n"
    );
    assert_eq!(
        f.text("b.md"),
        "---\nid: b-1\ntitle: Beta\nlinks: []\n---\nx\n"
    );
    let (_, removed) = f.ops.unlink("a.md", "b.md").expect("again");
    assert!(!removed, "nothing left to take away");
    // What link records, unlink takes away; here a's entry for c goes too.
    f.ops.link("c.md", "a.md").expect("link");
    let answer = f.ops.handle(Request::Unlink {
        from: "c.md".into(),
        to: "a.md".into(),
    });
    assert_eq!(
        answer.expect("request"),
        Response::Unlinked {
            path: "c.md".into(),
            removed: true
        }
    );
    assert!(f.text("c.md").contains("links: []\n"));
    assert!(f.text("a.md").contains("links: []\n"));
}

#[test]
fn context_walks_links_both_ways_as_many_hops_as_asked() {
    let f = Fixture::new();
    f.seed_indexed(&[
        ("a.md", "---\nid: a-1\ntitle: Alpha\n---\nSee [[Beta]].\n"),
        ("b.md", "---\nid: b-1\ntitle: Beta\nlinks: [c-1]\n---\nx\n"),
        ("c.md", "---\nid: c-1\ntitle: Gamma\n---\ny\n"),
        ("d.md", "# Delta\n\n- relates_to [[Alpha]]\n"),
        ("e.md", "# Epsilon\n\nalone\n"),
    ]);
    let one = f.ops.context("Alpha", 1, 20).expect("depth 1");
    assert_eq!(one.memory.path, "a.md");
    let found: Vec<(&str, usize, Direction, &str)> = one
        .related
        .iter()
        .map(|r| (r.path.as_str(), r.depth, r.direction, r.via.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("b.md", 1, Direction::Outgoing, "a.md"),
            ("d.md", 1, Direction::Incoming, "a.md"),
        ]
    );
    let two = f.ops.context("a-1", 2, 20).expect("depth 2");
    let last = two.related.last().expect("c");
    assert_eq!(
        (last.path.as_str(), last.depth, last.via.as_str()),
        ("c.md", 2, "b.md")
    );
    assert_eq!(last.title, "Gamma");
    assert_eq!(
        f.ops.context("Alpha", 3, 1).expect("limit").related.len(),
        1
    );
    assert!(matches!(
        f.ops.context("Omega", 1, 20),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn lists_filter_by_phase_and_source_and_recent_by_time_and_type() {
    let f = Fixture::new();
    f.seed_indexed(&[
        (
            "inbox/a.md",
            "---\nphase: inbox\nsource: cli\ntype: task\n---\na\n",
        ),
        (
            "notes/b.md",
            "---\nphase: organized\nsource: claude\ntype: task\n---\nb\n",
        ),
        ("notes/c.md", "---\nphase: organized\nsource: cli\n---\nc\n"),
    ]);
    let list = |filter: MemoryFilter| {
        f.ops
            .memories(&filter)
            .expect("list")
            .into_iter()
            .map(|m| m.path)
            .collect::<Vec<_>>()
    };
    let cli = MemoryFilter {
        source: Some("cli".into()),
        ..MemoryFilter::default()
    };
    assert_eq!(list(cli.clone()), ["inbox/a.md", "notes/c.md"]);
    let organized_cli = MemoryFilter {
        phase: Some("organized".into()),
        ..cli
    };
    assert_eq!(list(organized_cli), ["notes/c.md"]);

    let recent = |since: Option<&str>, kind: Option<&str>| {
        let mut paths: Vec<String> = f
            .ops
            .recent_filtered(10, since, kind)
            .expect("recent")
            .into_iter()
            .map(|m| m.path)
            .collect();
        paths.sort();
        paths
    };
    assert_eq!(recent(None, Some("task")), ["inbox/a.md", "notes/b.md"]);
    assert_eq!(recent(Some("1h"), None).len(), 3, "changed just now");
    assert!(recent(Some("2999-01-01"), None).is_empty());
    assert!(matches!(
        f.ops.recent_filtered(10, Some("soon"), None),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_capture_dropped_in_the_inbox_says_when_it_expires_and_nothing_else_does() {
    let f = Fixture::new();
    let ops = f.ops.clone().with_inbox_ttl(Duration::from_secs(86_400));
    let written = |new: NewMemory| {
        let (path, _) = ops.write_memory(&new).expect("write");
        let text = f.text(&path.to_string());
        let fm = crate::memory::parse("", &text).frontmatter;
        (path.to_string(), fm)
    };
    let (path, fm) = written(NewMemory {
        content: "zxqv a fleeting thought\n".into(),
        ..NewMemory::default()
    });
    assert!(path.starts_with("inbox/"), "{path}");
    let created = fm
        .created_at
        .as_deref()
        .and_then(crate::memory::parse_timestamp);
    let expires = fm
        .expires_at
        .as_deref()
        .and_then(crate::memory::parse_timestamp);
    assert_eq!(expires, created.map(|c| c + 86_400), "{fm:?}");
    // Filed, or put somewhere on purpose: no date to expire.
    for new in [
        NewMemory {
            content: "likes tea\n".into(),
            category: Some("preferences".into()),
            ..NewMemory::default()
        },
        NewMemory {
            content: "kept where asked\n".into(),
            path: Some("inbox/asked.md".into()),
            ..NewMemory::default()
        },
    ] {
        let (path, fm) = written(new);
        assert_eq!(fm.expires_at, None, "{path}");
    }
    // With expiry off, not even a capture.
    let off = f.ops.clone().with_inbox_ttl(Duration::ZERO);
    let (path, _) = off
        .write_memory(&NewMemory {
            content: "another thought\n".into(),
            ..NewMemory::default()
        })
        .expect("write");
    assert!(!f.text(&path.to_string()).contains("expires_at"));
}

#[test]
fn a_category_is_listed_by_any_of_its_names() {
    let f = Fixture::new();
    f.seed(
        "people/bob.md",
        "---\ncategory: people\n---\nBob is a colleague\n",
    );
    f.seed("habits/run.md", "---\ncategory: habits\n---\nRuns at six\n");
    let listed = |category: &str| -> Vec<String> {
        let filter = RecordFilter {
            category: Some(category.into()),
            ..RecordFilter::default()
        };
        f.ops
            .records(&filter, None, 10)
            .expect("records")
            .records
            .into_iter()
            .map(|r| r.path)
            .collect()
    };
    for name in ["people", "People", "person", "人物"] {
        assert_eq!(listed(name), ["people/bob.md"], "{name}");
    }
    assert_eq!(listed("习惯"), ["habits/run.md"]);
}

#[test]
fn a_write_to_a_folder_says_it_is_one() {
    let f = Fixture::new();
    f.seed("people/bob.md", "Bob\n");
    for path in ["people", "people/", "people/ "] {
        let written = f.ops.write_memory(&NewMemory {
            content: "x\n".into(),
            path: Some(path.into()),
            ..NewMemory::default()
        });
        assert!(
            matches!(&written, Err(Error::InvalidInput(m)) if m.contains("is a folder")),
            "{path}: {written:?}"
        );
    }
}

#[test]
fn a_memory_written_again_as_it_is_is_the_one_already_there() {
    let f = Fixture::new();
    let write = |content: &str, tags: &[&str]| {
        let answer = f.ops.handle(Request::WriteMemory(NewMemory {
            content: content.into(),
            title: Some("Deploy freeze".into()),
            tags: tags.iter().map(ToString::to_string).collect(),
            ..NewMemory::default()
        }));
        match answer {
            Ok(Response::Memory { path, id }) => (path, id.expect("an id")),
            other => panic!("{other:?}"),
        }
    };
    let first = write("The freeze starts Dec 18.\n", &["ops"]);
    // Whitespace aside, the same: the same memory, nothing written.
    assert_eq!(write("The freeze  starts\nDec 18.", &[]), first);
    assert_eq!(write("The freeze starts Dec 18.\n", &["ops"]), first);
    // Another body, or a tag the first lacks: a memory of its own.
    let other = write("The freeze starts Dec 19.\n", &[]);
    assert_ne!(other.0, first.0);
    let tagged = write("The freeze starts Dec 18.\n", &["release"]);
    assert_ne!(tagged.0, first.0);
    // Once archived, it is no answer.
    f.ops
        .rename(&first.0, "archive/freeze.md")
        .expect("archive it");
    let again = write("The freeze starts Dec 18.\n", &["ops"]);
    assert!(
        again.1 != first.1 && !again.0.starts_with("archive/"),
        "{again:?}"
    );
    let files = fs::read_dir(f.root.path().join("inbox")).unwrap().count();
    assert_eq!(files, 3, "one file per memory written, the first archived");
}
