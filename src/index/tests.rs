//! Index tests: RAM indexes over temporary stores, single-threaded writer.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::document::{link_keys, memory_keys, normalize_key, stem};
use super::*;
use crate::memory;

const WAIT: Duration = Duration::from_secs(60);

struct Fixture {
    dir: tempfile::TempDir,
    index: Index,
}

fn sp(rel: &str) -> StorePath {
    StorePath::new(rel).unwrap()
}

fn paths(v: &[&str]) -> Vec<StorePath> {
    v.iter().map(|p| sp(p)).collect()
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let index = Index::in_memory(store).unwrap();
        assert!(index.wait_idle(WAIT));
        Fixture { dir, index }
    }

    fn abs(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: impl AsRef<[u8]>) {
        let path = self.abs(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        self.index.notify_path(&sp(rel));
    }

    fn remove(&self, rel: &str) {
        std::fs::remove_file(self.abs(rel)).unwrap();
        self.index.notify_path(&sp(rel));
    }

    fn rename(&self, from: &str, to: &str) {
        std::fs::create_dir_all(self.abs(to).parent().unwrap()).unwrap();
        std::fs::rename(self.abs(from), self.abs(to)).unwrap();
        self.index.notify_path(&sp(from));
        self.index.notify_path(&sp(to));
    }

    fn sync(&self) {
        assert!(self.index.wait_idle(WAIT), "index did not become idle");
    }

    fn search(&self, q: &str) -> Vec<StorePath> {
        self.index
            .search(q, 50)
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect()
    }

    fn search_sorted(&self, q: &str) -> Vec<StorePath> {
        let mut v = self.search(q);
        v.sort();
        v
    }
}

fn sample() -> Fixture {
    let fx = Fixture::new();
    fx.write(
        "user/preferences.md",
        "---\nid: 11111111-aaaa-bbbb-cccc-000000000001\ntitle: Dark Mode\ncategory: preferences\ntype: memory\ntags: [ui, theme]\nscope: global\naliases: [Night Theme]\ncreated_at: 2025-03-01\nupdated_at: 2025-06-01T10:00:00Z\n---\nThe user prefers dark mode in every editor and terminal.\n",
    );
    fx.write(
        "project/decision.md",
        "---\ntype: decision\nstatus: open\ncategory: decisions\ncreated_at: 2026-02-01\n---\n# Use tantivy\n\nWe decided to index with tantivy; see [[Dark Mode]] and [[preferences]].\n- relates_to [[Night Theme]]\n",
    );
    fx.write(
        "project/closed.md",
        "---\ntype: decision\nstatus: done\ncreated_at: 2024-05-05\n---\nAn old decision about the build and the tests. #ci\n",
    );
    fx.write(
        "zh/偏好.md",
        "---\ncategory: preferences\ntags: [中文]\n---\n我偏好深色模式，也喜欢安静的环境。\n",
    );
    fx.write("notes/todo.txt", "remember to water the plants\n");
    fx.write("data/blob.bin", b"\x00\x01\x02binary plants\x00");
    fx.write(".git/config", "plants in git config\n");
    fx.write("notes/draft.md.swp", "plants in swap\n");
    fx.write("notes/draft.md~", "plants in backup\n");
    fx.sync();
    fx
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Index>();
}

#[test]
fn wait_committed_returns_once_the_changes_notified_are_searchable() {
    let fx = Fixture::new();
    fx.write(
        "notes/petrel.md",
        "# Petrel\n\nstorm petrels skim the waves\n",
    );
    assert!(fx.index.wait_committed(WAIT));
    assert_eq!(fx.search("petrels"), [sp("notes/petrel.md")]);
    fx.remove("notes/petrel.md");
    assert!(fx.index.wait_committed(WAIT));
    assert!(fx.search("petrels").is_empty());
}

#[test]
fn search_finds_a_note() {
    let fx = sample();
    let hits = fx.index.search("dark mode", 10).unwrap();
    assert_eq!(hits[0].path, sp("user/preferences.md"));
    assert_eq!(hits[0].title, "Dark Mode");
    assert_eq!(
        hits[0].id.as_deref(),
        Some("11111111-aaaa-bbbb-cccc-000000000001")
    );
    assert!(hits[0].snippet.contains("dark"), "{:?}", hits[0].snippet);
    assert!(!hits[0].snippet.contains('\n'));
    assert!(fx.index.search("", 10).unwrap().is_empty());
    assert!(fx.index.search("   ", 10).unwrap().is_empty());
    assert_eq!(fx.index.search("dark", usize::MAX).unwrap().len(), 2);
    assert!(fx.index.search("dark", 0).unwrap().is_empty());
    let ranked: Vec<StorePath> = fx.search("dark");
    assert_eq!(fx.index.search_paths("dark", 10).unwrap(), ranked);
    assert!(fx.index.search_paths("", 10).unwrap().is_empty());
    assert_eq!(fx.index.recent(usize::MAX).len(), 4);
}

#[test]
fn text_files_are_indexed_binaries_and_ignored_files_are_not() {
    let fx = sample();
    let hits = fx.index.search("plants", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].path, sp("notes/todo.txt"));
    assert_eq!(hits[0].title, "notes/todo.txt");
    let status = fx.index.status();
    assert_eq!(status.documents, 5);
    assert_eq!(status.pending_changes, 0);
    assert!(!status.reconciling);
    assert!(status.generation > 0);
    assert!(status.last_commit > 0);
}

#[test]
fn a_conflict_copy_ranks_below_the_note_it_is_a_version_of() {
    let fx = agent_memories();
    fx.write(
        "notes/hosting.md",
        "We moved the app to Fly for its hosting.\n",
    );
    fx.write(
        "notes/hosting.conflict-laptop-20250102T030405Z.md",
        "Hosting decision: we decided on Hetzner hosting.\n",
    );
    fx.sync();
    assert_eq!(
        fx.search("what did we decide about hosting"),
        paths(&[
            "notes/hosting.md",
            "notes/hosting.conflict-laptop-20250102T030405Z.md"
        ])
    );
    // Below the note, with nothing between them.
    fx.write("notes/other.md", "Hosting of the team's wiki.\n");
    fx.sync();
    let found = fx.search("hosting");
    let note = found
        .iter()
        .position(|p| p.to_string() == "notes/hosting.md");
    let copy = found
        .iter()
        .position(|p| p.to_string().contains(".conflict-"));
    assert_eq!(copy, note.map(|n| n + 1), "{found:?}");
    // Alone, a copy is found as any memory is.
    assert_eq!(
        fx.search("Hetzner"),
        paths(&["notes/hosting.conflict-laptop-20250102T030405Z.md"])
    );
}

#[test]
fn a_tag_finds_its_nested_tags() {
    let fx = agent_memories();
    fx.write(
        "people/ann.md",
        "---\ntags: [people/colleague]\n---\nAnn reviews code.\n",
    );
    fx.write(
        "people/bo.md",
        "---\ntags: [people]\n---\nBo plays chess.\n",
    );
    fx.write(
        "misc/peoples.md",
        "---\ntags: [peoples-history]\n---\nA book.\n",
    );
    fx.sync();
    assert_eq!(
        fx.search_sorted("tag:people"),
        paths(&["people/ann.md", "people/bo.md"])
    );
    assert_eq!(fx.search("tag:people/colleague"), paths(&["people/ann.md"]));
    assert_eq!(fx.search("tag:people chess"), paths(&["people/bo.md"]));
}

#[test]
fn field_filters() {
    let fx = sample();
    assert_eq!(fx.search("tag:ui"), paths(&["user/preferences.md"]));
    assert_eq!(fx.search("tags:theme"), paths(&["user/preferences.md"]));
    assert_eq!(
        fx.search_sorted("category:preferences"),
        paths(&["user/preferences.md", "zh/偏好.md"])
    );
    assert_eq!(
        fx.search("type:decision AND status:open"),
        paths(&["project/decision.md"])
    );
    assert_eq!(
        fx.search("type:Decision AND status:done"),
        paths(&["project/closed.md"])
    );
    assert_eq!(fx.search("scope:global"), paths(&["user/preferences.md"]));
    assert_eq!(
        fx.search("id:11111111-AAAA-bbbb-cccc-000000000001"),
        paths(&["user/preferences.md"])
    );
    assert_eq!(fx.search("tag:ci"), paths(&["project/closed.md"]));
    // The alias ranks first; the note linking to [[Night Theme]] follows.
    assert_eq!(fx.search("night theme")[0], sp("user/preferences.md"));
}

#[test]
fn date_ranges() {
    let fx = sample();
    assert_eq!(
        fx.search_sorted("created:[2025-01-01 TO 2025-12-31]"),
        paths(&["user/preferences.md"])
    );
    assert_eq!(
        fx.search_sorted("created:>2026-01-01 AND type:decision"),
        paths(&["project/decision.md"])
    );
    assert_eq!(
        fx.search_sorted("created:2024-05-05"),
        paths(&["project/closed.md"])
    );
    assert_eq!(
        fx.search_sorted("updated:[2025-06-01 TO 2025-06-02] AND tag:ui"),
        paths(&["user/preferences.md"])
    );
    // Without frontmatter dates, the file's mtime (now) counts.
    assert_eq!(
        fx.search_sorted("updated:>2020-01-01 AND plants"),
        paths(&["notes/todo.txt"])
    );
    // Days named from today: the note written just now, not the others.
    assert_eq!(
        fx.search_sorted("updated:>7d AND plants"),
        paths(&["notes/todo.txt"])
    );
    assert_eq!(
        fx.search_sorted("updated:>yesterday AND tag:ui"),
        paths(&[])
    );
    assert_eq!(
        fx.search_sorted("updated:[1y TO tomorrow] AND tag:ui"),
        paths(&[])
    );
    assert_eq!(
        fx.search_sorted("updated:[3000d TO tomorrow] AND tag:ui"),
        paths(&["user/preferences.md"])
    );
}

/// Hits as (path, score), for comparing two ways of asking.
fn scored(fx: &Fixture, q: &str) -> Vec<(StorePath, f32)> {
    fx.index
        .search(q, 50)
        .unwrap()
        .into_iter()
        .map(|h| (h.path, h.score))
        .collect()
}

#[test]
fn titles_and_aliases_outrank_bodies_once_words_no_document_has_are_dropped() {
    let fx = Fixture::new();
    fx.write("a.md", "# Kestrel\n\nfalcons nest on the tower\n");
    fx.write(
        "b.md",
        "---\ntitle: Small falcon\naliases: [kestrel]\ntags: [birds]\n---\na small falcon hovering\n",
    );
    fx.write(
        "c.md",
        "---\ntags: [birds]\n---\nwe saw a kestrel over the field today\n",
    );
    fx.write("d.md", "nothing to see about falcons\n");
    fx.sync();
    let ranked = |q: &str| fx.search(q);
    assert_eq!(ranked("kestrel"), paths(&["a.md", "b.md", "c.md"]));
    // Clauses of words no document has drop out without changing the rest.
    assert_eq!(ranked("kestrel OR zzqx"), ranked("kestrel"));
    assert_eq!(scored(&fx, "kestrel OR zzqx"), scored(&fx, "kestrel"));
    assert!(ranked("kestrel AND zzqx").is_empty());
    assert!(ranked("\"kestrel zzqx\"").is_empty());
    assert_eq!(ranked("kestrel -zzqx"), ranked("kestrel"));
    assert!(ranked("zzqx").is_empty());
    // The boosts are the parser's own: a query boosting itself is run as
    // the parser builds it, in the same order, and with the same scores
    // where no word of a title is commoner in bodies (below).
    for q in [
        "kestrel",
        "falcon",
        "kestrel falcon",
        "kestrel OR falcons",
        "\"small falcon\"",
        "tag:birds kestrel",
        "kestrel -tower",
        "title:kestrel OR alias:kestrel",
        "kestrel OR zzqx",
        "tag:birds",
        "hovering OR tower",
        "body:kestrel nest",
    ] {
        let boosted = format!("({q})^1");
        assert!(fx.index.query_warnings(&boosted).is_empty(), "{boosted}");
        let (plain, own) = (scored(&fx, q), scored(&fx, &boosted));
        assert_eq!(plain.len(), own.len(), "{q}: {plain:?} {own:?}");
        let titled = ["kestrel", "falcon"].iter().any(|w| q.contains(w));
        for ((p1, s1), (p2, s2)) in plain.iter().zip(&own) {
            assert_eq!(p1, p2, "{q}: {plain:?} {own:?}");
            assert!(titled || (s1 - s2).abs() < 1e-4, "{q}: {plain:?} {own:?}");
        }
    }
    // The fallback for bad syntax is tuned the same way.
    assert_eq!(ranked("kestrel ("), paths(&["a.md", "b.md", "c.md"]));
    // "falcon" is in one title and three bodies: in the title it counts
    // as rare as it is in the store. A query with boosts of its own is
    // opaque to that, and weighs it by its rarity among titles.
    let title_hit = |q: &str| {
        scored(&fx, q)
            .into_iter()
            .find(|(p, _)| *p == sp("b.md"))
            .map(|(_, s)| s)
    };
    let (plain, own) = (title_hit("falcon"), title_hit("(falcon)^1"));
    assert!(
        plain.zip(own).is_some_and(|(p, o)| p < o),
        "{plain:?} {own:?}"
    );
}

#[test]
fn a_top_ten_over_many_segments_and_hidden_scopes_is_the_full_ranking_cut() {
    let fx = Fixture::new();
    // Several commits: several segments, each pruned against the best of
    // those before it; equal scores abound, so ties are checked too.
    for batch in 0..4 {
        for i in (batch * 80)..(batch * 80 + 80) {
            let scope = if i % 3 == 0 { "agent:b" } else { "global" };
            let title = if i % 7 == 0 {
                "Kestrel sighting"
            } else {
                "Field notes"
            };
            let words = "kestrel ".repeat(1 + i % 5);
            fx.write(
                &format!("n/{i:03}.md"),
                format!("---\ntitle: {title}\nscope: {scope}\n---\n{words}over the field {i}\n"),
            );
        }
        fx.write(&format!("bin/{batch}.bin"), b"\x00\x01kestrel\x00");
        fx.sync();
    }
    let hidden = ["agent:b".to_owned()];
    let hidden_paths: BTreeSet<StorePath> = fx.index.by_scope("agent:b").into_iter().collect();
    assert_eq!(hidden_paths.len(), 107);
    let full = |hide: bool| -> Vec<(StorePath, f32)> {
        fx.index
            .search("kestrel", 1000)
            .unwrap()
            .into_iter()
            .filter(|h| !(hide && hidden_paths.contains(&h.path)))
            .map(|h| (h.path, h.score))
            .collect()
    };
    assert_eq!(full(false).len(), 320);
    for limit in [1, 3, 10, 25, 100] {
        let cut = |hits: Vec<Hit>| -> Vec<(StorePath, f32)> {
            hits.into_iter().map(|h| (h.path, h.score)).collect()
        };
        let top = cut(fx.index.search("kestrel", limit).unwrap());
        assert_eq!(top, full(false)[..limit], "limit {limit}");
        let top = cut(fx.index.search_hiding("kestrel", limit, &hidden).unwrap());
        assert_eq!(top, full(true)[..limit], "limit {limit}, hiding");
    }
}

#[test]
fn a_lone_keyword_query_over_full_blocks_of_postings_is_the_full_ranking_cut() {
    // Keyword fields keep no frequencies, so their postings have no block
    // maxima to prune by: the best hits are in every block.
    let fx = Fixture::new();
    std::fs::create_dir(fx.abs("n")).unwrap();
    for i in 0..400 {
        // Fewer tags (a shorter field, a higher score) further on, so the
        // best hits are in the last blocks.
        let extra: Vec<String> = (0..(400 - i) / 50).map(|t| format!("t{t}")).collect();
        std::fs::write(
            fx.abs(&format!("n/{i:03}.md")),
            format!(
                "---\ntags: [birds, {}]\ncategory: people\n---\nnote {i}\n",
                extra.join(", ")
            ),
        )
        .unwrap();
    }
    // One batch: one segment, with full blocks of postings.
    fx.index.notify_path(&sp("n"));
    fx.sync();
    for q in [
        "tag:birds",
        "category:people",
        "tag:t1",
        "birds",
        "t1 OR birds",
    ] {
        let all = fx.index.search(q, 1000).unwrap();
        assert!(all.len() > 50, "{q}: {}", all.len());
        let all: Vec<(StorePath, f32)> = all.into_iter().map(|h| (h.path, h.score)).collect();
        let top: Vec<(StorePath, f32)> = fx
            .index
            .search(q, 10)
            .unwrap()
            .into_iter()
            .map(|h| (h.path, h.score))
            .collect();
        assert_eq!(top, all[..10], "{q}");
    }
}

#[test]
fn syntax_errors_fall_back_to_words() {
    let fx = sample();
    for q in [
        "\"unclosed dark",
        "AND OR ( dark",
        "dark)))",
        "nosuchfield:dark",
        "created:[2025 TO dark",
    ] {
        let hits = fx.search(q);
        assert!(hits.contains(&sp("user/preferences.md")), "{q}: {hits:?}");
    }
    // Nothing but syntax: the words themselves are searched.
    fx.write("syntax.md", "a tag left unclosed and open");
    fx.sync();
    for q in ["\"unclosed", "tag:", "AND OR ("] {
        assert!(fx.search(q).contains(&sp("syntax.md")), "{q}");
    }
    for q in [
        ":::",
        "[",
        "\\",
        "((((",
        "\"",
        "-",
        "*",
        "created:[x TO",
        "^2",
    ] {
        assert!(fx.index.search(q, 10).is_ok(), "{q}");
    }
}

#[test]
fn chinese_query_finds_chinese_memory() {
    let fx = sample();
    assert_eq!(fx.search("偏好"), paths(&["zh/偏好.md"]));
    assert_eq!(fx.search("深色模式"), paths(&["zh/偏好.md"]));
    assert_eq!(fx.search("tag:中文"), paths(&["zh/偏好.md"]));
    // A run of Chinese is its bigrams, each optional: the memory with
    // the run as written ranks first, one with some of its bigrams after.
    fx.write("zh/other.md", "模式很多");
    fx.sync();
    assert_eq!(fx.search("深色模式"), paths(&["zh/偏好.md", "zh/other.md"]));
    assert!(fx.search("天气很好").is_empty());
    let hits = fx.index.search("安静", 5).unwrap();
    assert!(hits[0].snippet.contains("安静"), "{:?}", hits[0].snippet);
}

#[test]
fn views_by_category_tag_type_id_recent() {
    let fx = sample();
    assert_eq!(
        fx.index.by_category("Preferences"),
        paths(&["user/preferences.md", "zh/偏好.md"])
    );
    assert_eq!(fx.index.by_tag("#UI"), paths(&["user/preferences.md"]));
    assert_eq!(
        fx.index.by_type("decision"),
        paths(&["project/closed.md", "project/decision.md"])
    );
    assert_eq!(fx.index.tags(), ["ci", "theme", "ui", "中文"]);
    assert_eq!(fx.index.types(), ["decision", "memory"]);
    assert_eq!(
        fx.index.by_id("11111111-aaaa-bbbb-cccc-000000000001"),
        Some(sp("user/preferences.md"))
    );
    assert_eq!(fx.index.by_id("nope"), None);
    let recent = fx.index.recent(10);
    assert_eq!(recent.len(), 4, "{recent:?}");
    assert!(recent.windows(2).all(|w| w[0].1 >= w[1].1));

    // Removing the only `ci` memory removes the tag.
    fx.remove("project/closed.md");
    fx.sync();
    assert_eq!(fx.index.tags(), ["theme", "ui", "中文"]);
    assert_eq!(fx.index.types(), ["decision", "memory"]);
}

#[test]
fn backlinks_by_every_name() {
    let fx = sample();
    let expected = paths(&["project/decision.md"]);
    for target in [
        "11111111-aaaa-bbbb-cccc-000000000001",
        "Dark Mode",
        "dark mode",
        "preferences",
        "PREFERENCES.md",
        "Night Theme",
        "user/preferences",
    ] {
        assert_eq!(fx.index.backlinks(target), expected, "{target}");
    }
    assert!(fx.index.backlinks("Use tantivy").is_empty());
    assert!(fx.index.backlinks("").is_empty());
}

#[test]
fn backlinks_follow_rename_and_delete_of_target() {
    let fx = Fixture::new();
    fx.write("a.md", "---\nid: id-a\n---\nlinks to [[b]] by stem\n");
    fx.write("c.md", "---\nlinks: [id-b]\n---\nlinks by id\n");
    fx.write("b.md", "---\nid: id-b\n---\n# Bee\nthe target\n");
    fx.sync();
    assert_eq!(fx.index.backlinks("b"), paths(&["a.md", "c.md"]));
    assert_eq!(fx.index.backlinks("Bee"), paths(&["a.md", "c.md"]));

    // Renamed: the stem link no longer resolves to it, the id link does.
    fx.rename("b.md", "sub/renamed.md");
    fx.sync();
    assert_eq!(fx.index.backlinks("renamed"), paths(&["c.md"]));
    assert_eq!(fx.index.backlinks("id-b"), paths(&["c.md"]));
    assert_eq!(
        fx.index.backlinks("b"),
        paths(&["a.md"]),
        "dangling link by name"
    );

    // Renaming the linking note moves its backlink.
    fx.rename("c.md", "d.md");
    fx.sync();
    assert_eq!(fx.index.backlinks("Bee"), paths(&["d.md"]));

    // Target deleted: only links naming it directly remain.
    fx.remove("sub/renamed.md");
    fx.sync();
    assert!(fx.index.backlinks("Bee").is_empty());
    assert_eq!(fx.index.backlinks("id-b"), paths(&["d.md"]));
}

#[test]
fn directory_rename_and_delete() {
    let fx = Fixture::new();
    fx.write("dir/x.md", "alpha [[y]]");
    fx.write("dir/deep/y.md", "beta");
    fx.sync();
    std::fs::rename(fx.abs("dir"), fx.abs("moved")).unwrap();
    fx.index.notify_path(&sp("dir"));
    fx.index.notify_path(&sp("moved"));
    fx.sync();
    assert_eq!(fx.search("alpha"), paths(&["moved/x.md"]));
    assert_eq!(fx.search("beta"), paths(&["moved/deep/y.md"]));
    assert_eq!(fx.index.backlinks("y"), paths(&["moved/x.md"]));
    std::fs::remove_dir_all(fx.abs("moved")).unwrap();
    fx.index.notify_path(&sp("moved"));
    fx.sync();
    assert!(fx.search("alpha").is_empty());
    assert_eq!(fx.index.status().documents, 0);
}

#[test]
fn edits_become_searchable_and_old_text_goes() {
    let fx = Fixture::new();
    fx.write("n.md", "first words");
    fx.sync();
    assert_eq!(fx.search("first"), paths(&["n.md"]));
    // Same size, written within the same mtime tick: still seen.
    fx.write("n.md", "other words");
    fx.sync();
    assert!(fx.search("first").is_empty());
    assert_eq!(fx.search("other"), paths(&["n.md"]));
    // A text file that turns binary drops out of search.
    fx.write("n.md", b"other\0words");
    fx.sync();
    assert!(fx.search("other").is_empty());
    assert_eq!(fx.index.status().documents, 0);
}

#[test]
fn malformed_frontmatter_is_indexed_and_linted() {
    let fx = Fixture::new();
    fx.write(
        "bad.md",
        "---\ntitle: [unclosed\ntags: x\n---\nbody still searchable\n",
    );
    fx.sync();
    assert_eq!(fx.search("searchable"), paths(&["bad.md"]));
    let lint = fx.index.lint();
    assert_eq!(lint.len(), 1, "{lint:?}");
    assert_eq!(lint[0].0, sp("bad.md"));
    fx.write("bad.md", "---\ntitle: fixed\n---\nbody\n");
    fx.sync();
    assert!(fx.index.lint().is_empty());
}

#[test]
fn non_utf8_names_keep_their_exact_bytes() {
    let fx = Fixture::new();
    let name = OsStr::from_bytes(b"caf\xe9.md");
    let rel = StorePath::new(Path::new(name)).unwrap();
    std::fs::write(fx.dir.path().join(name), "latin one [[target]]").unwrap();
    fx.index.notify_path(&rel);
    fx.sync();
    let hits = fx.index.search("latin", 5).unwrap();
    assert_eq!(hits[0].path, rel);
    assert_eq!(fx.index.backlinks("target"), vec![rel.clone()]);
    std::fs::remove_file(fx.dir.path().join(name)).unwrap();
    fx.index.notify_path(&rel);
    fx.sync();
    assert!(fx.search("latin").is_empty());
}

#[test]
fn huge_files_are_indexed_by_their_head() {
    let fx = Fixture::new();
    let mut text = String::from("headword ");
    text.push_str(&"filler ".repeat(1_300_000)); // ~9 MiB
    text.push_str("tailword");
    fx.write("big.md", &text);
    fx.sync();
    assert_eq!(fx.search("headword"), paths(&["big.md"]));
    assert!(fx.search("tailword").is_empty());
}

#[test]
fn reconcile_picks_up_offline_changes() {
    let store_dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = store_dir.path();
    std::fs::write(root.join("keep.md"), "unchanged kiwi").unwrap();
    std::fs::write(root.join("edit.md"), "before mango").unwrap();
    std::fs::write(root.join("gone.md"), "deleted papaya").unwrap();
    let store = Arc::new(Store::open(root).unwrap());
    {
        let index = Index::open(state.path(), Arc::clone(&store)).unwrap();
        assert!(index.wait_idle(WAIT));
        assert_eq!(index.status().documents, 3);
        assert!(matches!(
            Index::open(state.path(), Arc::clone(&store)),
            Err(IndexError::Locked(_))
        ));
        // A read-only reader sees the owner's commits.
        let ro = Index::open_read_only(state.path(), Some(Arc::clone(&store))).unwrap();
        let hits = ro.search("kiwi", 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].snippet, "unchanged kiwi", "cut from the file");
        assert!(matches!(ro.rebuild(), Err(IndexError::ReadOnly)));
        index.shutdown();
    }
    std::fs::write(root.join("edit.md"), "after durian, a longer text").unwrap();
    std::fs::remove_file(root.join("gone.md")).unwrap();
    std::fs::create_dir(root.join("new")).unwrap();
    std::fs::write(root.join("new/added.md"), "fresh lychee").unwrap();
    // An index of an older schema version is cleaned away.
    std::fs::create_dir_all(state.path().join("index/v0")).unwrap();

    let index = Index::open(state.path(), store).unwrap();
    assert!(index.wait_idle(WAIT));
    assert!(!index.status().reconciling);
    let found = |q: &str| -> Vec<StorePath> {
        index
            .search(q, 5)
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect()
    };
    assert_eq!(found("kiwi"), paths(&["keep.md"]));
    assert!(found("mango").is_empty());
    assert_eq!(found("durian"), paths(&["edit.md"]));
    assert!(found("papaya").is_empty());
    assert_eq!(found("lychee"), paths(&["new/added.md"]));
    assert_eq!(index.status().documents, 3);
    assert!(!state.path().join("index/v0").exists());
}

#[test]
fn rebuild_indexes_everything() {
    let fx = sample();
    assert_eq!(fx.index.rebuild().unwrap(), 5);
    assert_eq!(fx.search("偏好"), paths(&["zh/偏好.md"]));
    assert_eq!(fx.index.status().documents, 5);
}

/// A folder of more notes than the writer is handed between two commits,
/// live and in a rebuild: the commits on the way lose nothing.
#[test]
fn a_folder_larger_than_a_commit_is_indexed_whole_live_and_in_a_rebuild() {
    let fx = Fixture::new();
    let n = 2 * super::indexer::REBUILD_UNCOMMITTED_DOCS + 100;
    let dir = fx.abs("many");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..n {
        let text = format!("# Note {i}\n\nword{i} and the shared gannet\n");
        std::fs::write(dir.join(format!("n{i}.md")), text).unwrap();
    }
    fx.index.notify_path(&sp("many"));
    fx.sync();
    assert_eq!(fx.index.status().documents, n as u64);
    assert_eq!(
        fx.search(&format!("word{}", n - 1)),
        [sp(&format!("many/n{}.md", n - 1))]
    );
    assert_eq!(fx.index.rebuild().unwrap(), n);
    assert_eq!(fx.index.status().documents, n as u64);
    assert_eq!(fx.search("word0"), [sp("many/n0.md")]);
}

// ---------------------------------------------------------------------------
// Property test: random note operations against a naive model.

const NAMES: [&str; 6] = ["n0.md", "n1.md", "d/n2.md", "d/n3.md", "e/n4.md", "n5.md"];
const TAGS: [&str; 3] = ["alpha", "beta", "gamma"];
const CATEGORIES: [&str; 3] = ["preferences", "people", "lessons"];

#[derive(Debug, Clone)]
struct NoteSpec {
    id: Option<u8>,
    title: Option<u8>,
    alias: Option<u8>,
    category: Option<u8>,
    tags: Vec<u8>,
    inline_tag: Option<u8>,
    /// (kind, n): 0 = [[title n]], 1 = [[nN]] stem, 2 = id in links:, 3 = [[alias n]]
    links: Vec<(u8, u8)>,
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, NoteSpec),
    Rename(usize, usize),
    Delete(usize),
    RenameDir,
}

fn note_spec() -> impl Strategy<Value = NoteSpec> {
    (
        proptest::option::of(0u8..4),
        proptest::option::of(0u8..4),
        proptest::option::of(0u8..3),
        proptest::option::of(0u8..3),
        proptest::collection::vec(0u8..3, 0..3),
        proptest::option::of(0u8..3),
        proptest::collection::vec((0u8..4, 0u8..6), 0..4),
    )
        .prop_map(
            |(id, title, alias, category, tags, inline_tag, links)| NoteSpec {
                id,
                title,
                alias,
                category,
                tags,
                inline_tag,
                links,
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NAMES.len(), note_spec()).prop_map(|(i, s)| Op::Write(i, s)),
        2 => (0..NAMES.len(), 0..NAMES.len()).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (0..NAMES.len()).prop_map(Op::Delete),
        1 => Just(Op::RenameDir),
    ]
}

fn render(spec: &NoteSpec) -> String {
    let mut fm = Vec::new();
    if let Some(id) = spec.id {
        fm.push(format!("id: ID-{id}"));
    }
    if let Some(t) = spec.title {
        fm.push(format!("title: Title {t}"));
    }
    if let Some(a) = spec.alias {
        fm.push(format!("aliases: [Alias {a}]"));
    }
    if let Some(c) = spec.category {
        fm.push(format!("category: {}", CATEGORIES[c as usize]));
    }
    if !spec.tags.is_empty() {
        let tags: Vec<&str> = spec.tags.iter().map(|t| TAGS[*t as usize]).collect();
        fm.push(format!("tags: [{}]", tags.join(", ")));
    }
    let ids: Vec<String> = spec
        .links
        .iter()
        .filter(|(k, _)| *k == 2)
        .map(|(_, n)| format!("id-{}", n % 4))
        .collect();
    if !ids.is_empty() {
        fm.push(format!("links: [{}]", ids.join(", ")));
    }
    let mut body = String::from("some body text\n");
    for (kind, n) in &spec.links {
        match kind {
            0 => body.push_str(&format!("see [[Title {}]]\n", n % 4)),
            1 => body.push_str(&format!("- relates_to [[n{n}]]\n")),
            3 => body.push_str(&format!("also [[Alias {}|shown]]\n", n % 3)),
            _ => {}
        }
    }
    if let Some(t) = spec.inline_tag {
        body.push_str(&format!("inline #{}\n", TAGS[t as usize]));
    }
    if fm.is_empty() {
        body
    } else {
        format!("---\n{}\n---\n{body}", fm.join("\n"))
    }
}

/// A memory as the model sees it, read straight from the file.
struct ModelNote {
    keys: BTreeSet<String>,
    links: BTreeSet<String>,
    tags: BTreeSet<String>,
    category: Option<String>,
}

/// The notes under `root` as the model sees them; a note without `id:`
/// answers to the id `index` keeps for it.
fn model(root: &Path, index: &Index) -> BTreeMap<StorePath, ModelNote> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let p = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(p);
                continue;
            }
            let rel = StorePath::new(p.strip_prefix(root).unwrap()).unwrap();
            let text = std::fs::read_to_string(&p).unwrap();
            let m = memory::parse(&stem(&rel), &text);
            let fm = &m.frontmatter;
            let id = fm.id.clone().or_else(|| index.kept_id(&rel));
            out.insert(
                rel.clone(),
                ModelNote {
                    keys: memory_keys(&rel, &m.title, id.as_deref(), &fm.aliases),
                    links: link_keys(&m),
                    tags: m.tags.iter().cloned().collect(),
                    category: fm.category.map(|c| c.as_str().to_owned()),
                },
            );
        }
    }
    out
}

fn model_backlinks(notes: &BTreeMap<StorePath, ModelNote>, target: &str) -> Vec<StorePath> {
    let key = normalize_key(target);
    let mut keys = BTreeSet::from([key.clone()]);
    for n in notes.values().filter(|n| n.keys.contains(&key)) {
        keys.extend(n.keys.iter().cloned());
    }
    notes
        .iter()
        .filter(|(_, n)| !n.links.is_disjoint(&keys))
        .map(|(p, _)| p.clone())
        .collect()
}

fn apply_op(fx: &Fixture, op: &Op) {
    let exists = |rel: &str| fx.abs(rel).exists();
    match op {
        Op::Write(i, spec) => fx.write(NAMES[*i], render(spec)),
        Op::Rename(a, b) if a != b && exists(NAMES[*a]) => fx.rename(NAMES[*a], NAMES[*b]),
        Op::Delete(i) if exists(NAMES[*i]) => fx.remove(NAMES[*i]),
        Op::RenameDir if exists("d") => {
            let to = if exists("e") { "e/d" } else { "e" };
            if to == "e/d" && exists("e/d") {
                return;
            }
            std::fs::create_dir_all(fx.abs(to).parent().unwrap()).unwrap();
            std::fs::rename(fx.abs("d"), fx.abs(to)).unwrap();
            fx.index.notify_path(&sp("d"));
            fx.index.notify_path(&sp(to));
        }
        _ => {}
    }
}

fn check_against_model(fx: &Fixture) -> Result<(), TestCaseError> {
    let notes = model(fx.dir.path(), &fx.index);
    let mut targets: Vec<String> = Vec::new();
    for i in 0..6 {
        targets.push(format!("n{i}"));
        targets.push(format!("Title {i}"));
        targets.push(format!("id-{i}"));
        targets.push(format!("alias {i}"));
    }
    for t in &targets {
        prop_assert_eq!(
            fx.index.backlinks(t),
            model_backlinks(&notes, t),
            "backlinks({})",
            t
        );
    }
    for c in CATEGORIES {
        let expected: Vec<StorePath> = notes
            .iter()
            .filter(|(_, n)| n.category.as_deref() == Some(c))
            .map(|(p, _)| p.clone())
            .collect();
        prop_assert_eq!(fx.index.by_category(c), expected, "by_category({})", c);
    }
    for t in TAGS {
        let expected: Vec<StorePath> = notes
            .iter()
            .filter(|(_, n)| n.tags.contains(t))
            .map(|(p, _)| p.clone())
            .collect();
        prop_assert_eq!(fx.index.by_tag(t), expected, "by_tag({})", t);
    }
    let tags: BTreeSet<String> = notes
        .values()
        .flat_map(|n| n.tags.iter().cloned())
        .collect();
    prop_assert_eq!(fx.index.tags(), tags.into_iter().collect::<Vec<_>>());
    prop_assert_eq!(fx.index.status().documents, notes.len() as u64);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn graph_and_views_match_a_naive_model(ops in proptest::collection::vec(op(), 1..16)) {
        let fx = Fixture::new();
        let half = ops.len() / 2;
        for op in &ops[..half] {
            apply_op(&fx, op);
        }
        fx.sync();
        check_against_model(&fx)?;
        for op in &ops[half..] {
            apply_op(&fx, op);
        }
        fx.sync();
        check_against_model(&fx)?;
    }
}

/// Build, rebuild and reopen a synthetic store; asserts the document counts
/// and prints the times (never asserted: see `cargo bench` for figures).
/// `MNEMOFS_BENCH_NOTES=100000 cargo test --release --lib
/// index::tests::rebuild_reopen_and_search_a_synthetic_store -- --nocapture`
#[test]
fn rebuild_reopen_and_search_a_synthetic_store() {
    let n: usize = std::env::var("MNEMOFS_BENCH_NOTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let store_dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let words = [
        "memory", "agent", "dark", "mode", "project", "deadline", "coffee", "review", "rust",
        "index",
    ];
    for i in 0..n {
        let dir = store_dir.path().join(format!("d{}", i % 50));
        std::fs::create_dir_all(&dir).unwrap();
        let mut body = String::new();
        while body.len() < 4000 {
            body.push_str(words[(body.len() * 7 + i) % words.len()]);
            body.push(' ');
        }
        let text = format!(
            "---\nid: id-{i}\ntitle: Note {i}\ncategory: knowledge\ntags: [t{}, common]\ncreated_at: 2025-01-01\n---\n{body}\nSee [[Note {}]] and [[n{}]].\n",
            i % 20,
            (i + 1) % n,
            (i + 7) % n
        );
        std::fs::write(dir.join(format!("n{i}.md")), text).unwrap();
    }
    let store = Arc::new(Store::open(store_dir.path()).unwrap());
    let t = Instant::now();
    let index = Index::open(state.path(), Arc::clone(&store)).unwrap();
    assert!(index.wait_idle(Duration::from_secs(600)));
    let first = t.elapsed();
    eprintln!(
        "initial reconcile of {n} notes: {first:?} ({:.0} notes/s)",
        n as f64 / first.as_secs_f64()
    );
    assert_eq!(index.status().documents, n as u64);
    let t = Instant::now();
    let count = index.rebuild().unwrap();
    let rebuild = t.elapsed();
    assert_eq!(count, n);
    eprintln!(
        "rebuild of {count} notes: {rebuild:?} ({:.0} notes/s)",
        count as f64 / rebuild.as_secs_f64()
    );
    index.shutdown();
    drop(index);
    let t = Instant::now();
    let index = Index::open(state.path(), Arc::clone(&store)).unwrap();
    let opened = t.elapsed();
    assert!(index.wait_idle(Duration::from_secs(600)));
    eprintln!(
        "reopen: {opened:?}, unchanged reconcile done after {:?}",
        t.elapsed()
    );
    let queries = [
        "dark mode",
        "tag:t3",
        "coffee AND deadline",
        "category:knowledge",
        "Note 77",
    ];
    let time_all = |search: &dyn Fn(&str) -> usize| {
        queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                let hits = search(q);
                (*q, t.elapsed(), hits)
            })
            .collect::<Vec<_>>()
    };
    let searches = time_all(&|q| index.search(q, 50).unwrap().len());
    eprintln!("searches (limit 50): {searches:?}");
    let paths = time_all(&|q| index.search_paths(q, 50).unwrap().len());
    eprintln!("search_paths (limit 50): {paths:?}");
    let t = Instant::now();
    let b = index.backlinks("Note 5");
    eprintln!("backlinks: {:?} ({} hits)", t.elapsed(), b.len());
    let t = Instant::now();
    let c = index.by_tag("common");
    eprintln!("by_tag(common): {:?} ({} paths)", t.elapsed(), c.len());
    let file = store_dir.path().join("d3/n3.md");
    std::fs::write(&file, "---\ntitle: changed\n---\nfreshly written zebra\n").unwrap();
    let t = Instant::now();
    index.notify_path(&StorePath::new("d3/n3.md").unwrap());
    while index.search("zebra", 1).unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(2));
    }
    eprintln!("write to searchable: {:?}", t.elapsed());
}

#[test]
fn a_note_in_a_category_folder_is_of_that_category() {
    let fx = Fixture::new();
    fx.write("decisions/db.md", "We use Postgres.\n");
    fx.write(
        "decisions/named.md",
        "---\ncategory: lessons\n---\nA lesson kept here.\n",
    );
    fx.write("notes/decisions.md", "Not a decision.\n");
    fx.write("decisions.md", "At the root.\n");
    fx.sync();
    assert_eq!(
        fx.index.by_category("decisions"),
        paths(&["decisions/db.md"])
    );
    assert_eq!(
        fx.index.by_category("lessons"),
        paths(&["decisions/named.md"])
    );
    assert_eq!(
        fx.search("category:decisions postgres"),
        paths(&["decisions/db.md"])
    );
}

#[test]
fn agent_scopes_can_be_filtered() {
    let fx = Fixture::new();
    fx.write("a.md", "---\nscope: agent:claude\n---\nscoped note\n");
    fx.write("b.md", "---\nscope: global\n---\nglobal note\n");
    fx.sync();
    assert_eq!(fx.search("scope:\"agent:claude\""), paths(&["a.md"]));
    assert_eq!(fx.search("scope:agent\\:claude"), paths(&["a.md"]));
    assert_eq!(fx.search("scope:agent:claude"), paths(&["a.md"]));
    assert_eq!(fx.search("scope:agent:Claude AND scoped"), paths(&["a.md"]));
}

#[test]
fn and_not_excludes_instead_of_matching_nothing() {
    let fx = Fixture::new();
    fx.write("a.md", "---\ntags: [x]\n---\n# A\nzephyr apple\n");
    fx.write("b.md", "---\ntags: [y]\n---\n# B\nzephyr banana\n");
    fx.sync();
    assert_eq!(fx.search("zephyr AND NOT tag:x"), paths(&["b.md"]));
    assert_eq!(fx.search("zephyr NOT tag:x"), paths(&["b.md"]));
    assert_eq!(
        fx.search_sorted("zephyr AND NOT tag:z"),
        paths(&["a.md", "b.md"])
    );
}

#[test]
fn source_is_a_field() {
    let fx = Fixture::new();
    fx.write("a.md", "---\nsource: claude\n---\nzephyr\n");
    fx.write("b.md", "---\nsource: obsidian\n---\nzephyr\n");
    fx.sync();
    assert_eq!(fx.search("source:claude"), paths(&["a.md"]));
    assert_eq!(fx.search("zephyr AND NOT source:claude"), paths(&["b.md"]));
}

#[test]
fn prefix_queries_find_words_and_tags() {
    let fx = Fixture::new();
    fx.write("a.md", "---\ntags: [project/alpha]\n---\nZephyr winds\n");
    fx.write("b.md", "zephyrus and zeppelins\n");
    fx.write("c.md", "---\ntags: [personal]\n---\nnothing here\n");
    fx.sync();
    assert_eq!(fx.search_sorted("zeph*"), paths(&["a.md", "b.md"]));
    assert_eq!(fx.search_sorted("ZEP*"), paths(&["a.md", "b.md"]));
    assert_eq!(fx.search("zeph* AND winds"), paths(&["a.md"]));
    assert_eq!(fx.search("tag:proj*"), paths(&["a.md"]));
    assert!(fx.search("qqq*").is_empty());
    assert!(fx.index.query_warnings("zeph*").is_empty());
}

#[test]
fn bad_field_values_are_reported_not_searched_as_words() {
    let fx = Fixture::new();
    fx.write("a.md", "---\ncreated_at: 2026-01-05\n---\napple notadate\n");
    fx.write("b.md", "---\ncreated_at: 2026-01-05\n---\ncherry\n");
    fx.sync();
    // The bad condition is left out, not turned into the word `notadate`.
    assert_eq!(fx.search("cherry created:>notadate"), paths(&["b.md"]));
    let warnings = fx.index.query_warnings("cherry created:>notadate");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("`notadate` is not a date"),
        "{warnings:?}"
    );
    let warnings = fx.index.query_warnings("colour:blue cherry");
    assert!(
        warnings[0].contains("`colour:` is not a field"),
        "{warnings:?}"
    );
    // `limit:` is no field: its value was no count.
    for bad in ["limit:-1 cherry", "limit:abc cherry"] {
        let warnings = fx.index.query_warnings(bad);
        assert_eq!(warnings.len(), 1, "{bad}: {warnings:?}");
        assert!(
            warnings[0].contains("`limit:` takes a number of results"),
            "{warnings:?}"
        );
    }
    assert!(
        fx.index
            .query_warnings("cherry created:>2026-01-01")
            .is_empty()
    );
    // `mode:` is an option of the search, not a field.
    assert!(fx.index.query_warnings("mode:words cherry").is_empty());
}

#[test]
fn a_file_cut_for_the_index_says_so_in_lint() {
    let fx = Fixture::new();
    let mut text = String::from("# Big\n");
    text.push_str(&"filler words here\n".repeat(5_000_000 / 18));
    text.push_str("middlemarker\n");
    text.push_str(&"more filler\n".repeat(6_000_000 / 12));
    text.push_str("tailmarker\n");
    fx.write("big.md", &text);
    fx.write("small.md", "# Small\nmiddlemarker\n");
    fx.sync();
    assert_eq!(
        fx.search_sorted("middlemarker"),
        paths(&["big.md", "small.md"])
    );
    assert!(fx.search("tailmarker").is_empty());
    let lint = fx.index.lint();
    assert_eq!(lint.len(), 1, "{lint:?}");
    assert_eq!(lint[0].0, sp("big.md"));
    assert!(
        lint[0]
            .1
            .contains("only the first 8 MiB of its 11 MiB are indexed"),
        "{lint:?}"
    );
}

#[test]
fn copies_sharing_an_id_are_reported_in_lint() {
    let fx = Fixture::new();
    let text = "---\nid: same-id-1\n---\n# A\n";
    fx.write("a.md", text);
    fx.write("b.md", text);
    fx.write("c.md", "---\nid: other\n---\n# C\n");
    fx.sync();
    assert_eq!(
        fx.index.duplicate_ids(),
        [("same-id-1".to_owned(), paths(&["a.md", "b.md"]))]
    );
    let lint: Vec<_> = fx
        .index
        .lint()
        .into_iter()
        .filter(|(_, m)| m.contains("is also the id of"))
        .collect();
    assert_eq!(lint.len(), 2, "{lint:?}");
    assert!(lint[0].1.contains("also the id of b.md"), "{lint:?}");
    fx.remove("b.md");
    fx.sync();
    assert!(fx.index.duplicate_ids().is_empty());
}

#[test]
fn a_memory_without_an_id_gets_one_that_follows_moves_and_survives_a_rebuild() {
    let f = Fixture::new();
    f.write("notes/plain.md", "# Plain\n\nno frontmatter here\n");
    f.write("notes/own.md", "---\nid: my-own-id\n---\nbody\n");
    f.sync();
    let id = f.index.kept_id(&sp("notes/plain.md")).expect("an id kept");
    assert_eq!(f.index.by_id(&id), Some(sp("notes/plain.md")));
    assert_eq!(f.index.kept_id(&sp("notes/own.md")), None);
    let hits = f.index.search("frontmatter", 10).unwrap();
    assert_eq!(hits[0].id.as_deref(), Some(id.as_str()));
    // A link by that id resolves.
    assert_eq!(f.index.resolve(&id), paths(&["notes/plain.md"]));
    // A link by a path the note has left resolves by its name.
    assert_eq!(
        f.index.resolve_link("Projects/Old Folder/plain"),
        paths(&["notes/plain.md"])
    );
    assert_eq!(f.index.resolve("Projects/Old Folder/plain"), paths(&[]));
    assert_eq!(f.index.resolve_link("Projects/nothing-here"), paths(&[]));

    f.rename("notes/plain.md", "moved/plain.md");
    f.sync();
    assert_eq!(f.index.by_id(&id), Some(sp("moved/plain.md")));
    assert_eq!(f.index.kept_id(&sp("moved/plain.md")), Some(id.clone()));

    // A folder renamed: still the same id.
    f.rename("moved", "elsewhere");
    f.sync();
    assert_eq!(f.index.by_id(&id), Some(sp("elsewhere/plain.md")));

    // A copy gets an id of its own.
    std::fs::copy(f.abs("elsewhere/plain.md"), f.abs("elsewhere/copy.md")).unwrap();
    f.index.notify_path(&sp("elsewhere/copy.md"));
    f.sync();
    let copy = f.index.kept_id(&sp("elsewhere/copy.md")).unwrap();
    assert_ne!(copy, id);
    assert_eq!(f.index.by_id(&id), Some(sp("elsewhere/plain.md")));

    f.index.rebuild().unwrap();
    assert_eq!(f.index.by_id(&id), Some(sp("elsewhere/plain.md")));
    assert_eq!(f.index.by_id(&copy), Some(sp("elsewhere/copy.md")));
}

#[test]
fn kept_ids_survive_a_new_index_and_a_move_made_while_none_ran() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path()).unwrap());
    std::fs::write(dir.path().join("a.md"), "alpha note\n").unwrap();
    let index = Index::open(state.path(), Arc::clone(&store)).unwrap();
    assert!(index.wait_idle(WAIT));
    let id = index.kept_id(&sp("a.md")).unwrap();
    index.shutdown();
    drop(index);
    // Moved while nothing ran, and the index thrown away.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::rename(dir.path().join("a.md"), dir.path().join("sub/b.md")).unwrap();
    std::fs::remove_dir_all(state.path().join("index")).unwrap();
    let index = Index::open(state.path(), Arc::clone(&store)).unwrap();
    assert!(index.wait_idle(WAIT));
    assert_eq!(index.by_id(&id), Some(sp("sub/b.md")));
}

#[test]
fn a_memory_whose_id_line_is_taken_out_keeps_that_id() {
    let f = Fixture::new();
    f.write("a.md", "---\nid: written-id-1\n---\nbody words\n");
    f.sync();
    // A version from before the id was written, restored.
    f.write("a.md", "body words, restored\n");
    f.sync();
    assert_eq!(
        f.index.kept_id(&sp("a.md")).as_deref(),
        Some("written-id-1")
    );
    assert_eq!(f.index.by_id("written-id-1"), Some(sp("a.md")));
}

#[test]
fn the_reader_follows_a_merge_that_ends_after_the_last_commit() {
    let fx = Fixture::new();
    // One commit per note: the eighth segment makes the merge policy
    // merge all eight in the background, after that last commit.
    for i in 0..8 {
        fx.write(&format!("m/{i:02}.md"), format!("merge note {i}\n"));
        fx.sync();
    }
    let core = &fx.index.inner.core;
    let ids = |mut v: Vec<tantivy::index::SegmentId>| {
        v.sort();
        v
    };
    let served = || {
        ids(core
            .reader
            .searcher()
            .segment_readers()
            .iter()
            .map(|r| r.segment_id())
            .collect())
    };
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let committed = ids(core.index.searchable_segment_ids().unwrap());
        if committed.len() < 8 && served() == committed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reader serves {:?}, the index holds {committed:?}",
            served()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(fx.search_sorted("merge").len(), 8);
}

#[test]
fn a_folder_of_more_notes_than_one_read_chunk_is_indexed_whole() {
    let fx = Fixture::new();
    let n = 2 * indexer::READ_CHUNK + 3;
    std::fs::create_dir_all(fx.abs("big")).unwrap();
    for i in 0..n {
        std::fs::write(
            fx.abs(&format!("big/{i:04}.md")),
            format!("chunked note {i}\n"),
        )
        .unwrap();
    }
    // The folder alone: the indexer finds the notes under it.
    fx.index.notify_path(&sp("big"));
    fx.sync();
    let found: BTreeSet<StorePath> = fx
        .index
        .search("chunked", 10_000)
        .unwrap()
        .into_iter()
        .map(|h| h.path)
        .collect();
    assert_eq!(found.len(), n);
    assert!(found.contains(&sp(&format!("big/{:04}.md", n - 1))));
}

#[test]
fn snippets_are_cut_from_the_file_as_it_is_now() {
    let fx = Fixture::new();
    fx.write(
        "notes/heron.md",
        "---\nid: heron-1\ntags: [birds]\n---\n\n# Heron\n\nthe grey heron waits by the pond\n",
    );
    assert!(fx.index.wait_committed(WAIT));
    let hits = fx.index.search("heron pond", 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].snippet.contains("pond"), "{:?}", hits[0].snippet);
    assert!(
        !hits[0].snippet.contains("heron-1") && !hits[0].snippet.contains("---"),
        "the frontmatter is not body: {:?}",
        hits[0].snippet
    );
    // Gone behind the index's back: still a hit until the index hears of
    // it, with nothing to cut a snippet from.
    std::fs::remove_file(fx.abs("notes/heron.md")).unwrap();
    let hits = fx.index.search("heron pond", 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snippet, "");
}

proptest! {
    /// The body a snippet is cut from is the body the index was built
    /// with, found without parsing the frontmatter.
    #[test]
    fn the_body_without_a_parse_is_the_parsed_body(
        text in "(\u{feff})?(---\r?\n)?([a-z: \\[\\]]{0,12}\r?\n){0,4}(---|\\.\\.\\.)?\r?\n?[a-z #\n-]{0,40}"
    ) {
        let parsed = memory::parse("stem", &text);
        prop_assert_eq!(memory::body_of(&text), parsed.body(&text));
    }
}

#[test]
fn a_walk_finds_every_file_of_a_tree_and_of_a_flat_or_empty_folder() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut expected = BTreeSet::new();
    for d in 0..6 {
        for e in 0..3 {
            let folder = root.join(format!("deep/d{d}/e{e}"));
            std::fs::create_dir_all(&folder).unwrap();
            for f in 0..4 {
                std::fs::write(folder.join(format!("n{f}.md")), "x").unwrap();
                expected.insert(format!("deep/d{d}/e{e}/n{f}.md"));
            }
        }
    }
    for f in 0..5 {
        std::fs::create_dir_all(root.join("flat")).unwrap();
        std::fs::write(root.join(format!("flat/n{f}.md")), "x").unwrap();
    }
    std::fs::create_dir(root.join("empty")).unwrap();
    std::os::unix::fs::symlink("flat", root.join("deep/link")).unwrap();
    let store = Store::open(root).unwrap();
    let names = |dir: &str| -> Vec<String> {
        indexer::walk(&store, &sp(dir))
            .into_iter()
            .map(|(p, _)| p.to_string())
            .collect()
    };

    let deep = names("deep");
    assert_eq!(deep, expected.iter().cloned().collect::<Vec<_>>());
    assert_eq!(names("flat").len(), 5);
    assert!(names("flat").windows(2).all(|w| w[0] < w[1]));
    assert!(names("empty").is_empty());
    assert_eq!(names("").len(), expected.len() + 5);
}

/// A file renamed over another of the same size and mtime (`cp -p`, then
/// `mv`), and a file rewritten in place with its mtime set back (`rsync
/// --inplace`): each is read again, though size and mtime did not change.
#[test]
fn a_file_put_in_place_of_another_with_the_same_size_and_mtime_is_read_again() {
    let fx = Fixture::new();
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    let set_mtime = |rel: &str| {
        std::fs::File::options()
            .write(true)
            .open(fx.abs(rel))
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        fx.index.notify_path(&sp(rel));
    };
    fx.write("a.md", "pangolin notes\n");
    fx.write("b.md", "narwhal  notes\n");
    set_mtime("a.md");
    set_mtime("b.md");
    fx.sync();
    assert_eq!(fx.search("pangolin"), paths(&["a.md"]));

    fx.rename("b.md", "a.md");
    fx.sync();
    assert_eq!(fx.search("narwhal"), paths(&["a.md"]));
    assert!(fx.search("pangolin").is_empty());

    std::fs::write(fx.abs("a.md"), "aardvark notes\n").unwrap();
    set_mtime("a.md");
    fx.sync();
    assert_eq!(fx.search("aardvark"), paths(&["a.md"]));
}

/// The store of the query-semantics tests: memories as an agent writes
/// them.
fn agent_memories() -> Fixture {
    let fx = Fixture::new();
    fx.write(
        "user/formatting.md",
        "---\ntitle: Code formatting\ntype: memory\ntags: [style]\n---\nThe user prefers rustfmt defaults and 100-column lines.\n",
    );
    fx.write(
        "ops/freeze.md",
        "---\ntitle: Billing deploy freeze\ntype: decision\nstatus: open\n---\nThe billing deploy freeze starts on Friday at noon.\n",
    );
    fx.write(
        "ops/db.md",
        "---\ntype: decision\nstatus: done\n---\nWe chose Postgres as the database for billing.\n",
    );
    fx.write(
        "notes/db-talk.md",
        "A talk about the database migrations of the billing team.\n",
    );
    fx.write(
        "notes/reviews.md",
        "Pull requests need two reviews before merging.\n",
    );
    fx.write(
        "people/caroline.md",
        "Caroline went to the LGBTQ support group on 7 May.\n",
    );
    fx.write("zh/偏好.md", "我偏好深色模式，也喜欢安静的环境。\n");
    fx.sync();
    fx
}

#[test]
fn a_question_finds_its_memory() {
    let fx = agent_memories();
    for (question, memory) in [
        (
            "What does the user prefer for code formatting?",
            "user/formatting.md",
        ),
        (
            "when does the billing deploy freeze start?",
            "ops/freeze.md",
        ),
        (
            "When did Caroline go to the support group?",
            "people/caroline.md",
        ),
        (
            "how many reviews does a pull request need",
            "notes/reviews.md",
        ),
    ] {
        let hits = fx.search(question);
        assert_eq!(hits.first(), Some(&sp(memory)), "{question}: {hits:?}");
    }
}

#[test]
fn a_chinese_questions_own_words_match_nothing() {
    let fx = agent_memories();
    fx.write("zh/猫.md", "宠物：家里的猫叫团子。\n");
    fx.write("zh/为什么.md", "我们为什么选了 Postgres：并发写入。\n");
    fx.sync();
    assert_eq!(fx.search("猫叫什么名字"), paths(&["zh/猫.md"]));
    assert_eq!(fx.search("怎么部署"), Vec::<StorePath>::new());
    // Written without spaces, a question word no longer glues the word
    // before it into a bigram nothing holds ("叫什"), nor one after it.
    assert_eq!(fx.search("团子是谁"), paths(&["zh/猫.md"]));
    assert_eq!(fx.search("家里养了什么"), paths(&["zh/猫.md"]));
    // Within quotes, the words are searched as written.
    assert_eq!(fx.search("\"为什么\""), paths(&["zh/为什么.md"]));
}

#[test]
fn one_chinese_character_finds_the_words_that_hold_it() {
    let fx = agent_memories();
    fx.write("zh/茶.md", "喝茶偏好：喜欢龙井，下午不喝咖啡。\n");
    fx.write("zh/猫.md", "宠物：家里的猫叫团子。\n");
    fx.sync();
    assert_eq!(fx.search("茶"), paths(&["zh/茶.md"]));
    assert_eq!(fx.search("猫"), paths(&["zh/猫.md"]));
    assert_eq!(fx.search("喝什么"), paths(&["zh/茶.md"]));
    assert_eq!(fx.search("+猫 团子"), paths(&["zh/猫.md"]));
    assert_eq!(fx.search("狗"), Vec::<StorePath>::new());
    // A character that says nothing alone is no word of the question.
    fx.write("zh/反馈.md", "反馈：这个建议很有用。\n");
    fx.write("zh/教训.md", "教训：上线前要备份。\n");
    fx.sync();
    assert_eq!(fx.search("有什么教训"), paths(&["zh/教训.md"]));
}

#[test]
fn traditional_and_simplified_chinese_find_each_other() {
    let fx = agent_memories();
    fx.write("zh/張偉.md", "張偉是我們後端組的負責人，喜歡喝烏龍茶。\n");
    fx.write("zh/李娜.md", "李娜负责设计，她的生日是十二月三日。\n");
    fx.sync();
    // Both have 负责; the one that is 张伟's comes first.
    assert_eq!(
        fx.search("张伟负责什么"),
        paths(&["zh/張偉.md", "zh/李娜.md"])
    );
    assert_eq!(fx.search("后端"), paths(&["zh/張偉.md"]));
    assert_eq!(fx.search("茶"), paths(&["zh/張偉.md"]));
    assert_eq!(
        fx.search("李娜負責什麼"),
        paths(&["zh/李娜.md", "zh/張偉.md"])
    );
    assert_eq!(fx.search("設計"), paths(&["zh/李娜.md"]));
    // The excerpt is the note as written.
    let hits = fx.index.search("后端负责人", 5).unwrap();
    assert!(
        hits[0].snippet.contains("後端組的負責人"),
        "{:?}",
        hits[0].snippet
    );
}

#[test]
fn one_unknown_word_does_not_empty_a_result() {
    let fx = agent_memories();
    assert_eq!(
        fx.search("freeze zebra").first(),
        Some(&sp("ops/freeze.md"))
    );
    assert_eq!(fx.search("dark zebra"), Vec::<StorePath>::new());
    // Only stop words: searched as a phrase, so nothing here.
    assert!(fx.search("what is it?").is_empty());
}

#[test]
fn word_forms_match_both_ways_and_the_exact_form_ranks_first() {
    let fx = agent_memories();
    // "prefer" finds "prefers"; "migration" finds "migrations"; the plural
    // "pull requests" is found by the singular.
    assert_eq!(fx.search("prefer"), paths(&["user/formatting.md"]));
    assert_eq!(fx.search("migration"), paths(&["notes/db-talk.md"]));
    assert_eq!(fx.search("preferred"), paths(&["user/formatting.md"]));
    fx.write(
        "notes/starting.md",
        "Starting the freeze of the deploy train.\n",
    );
    fx.write("notes/started.md", "The freeze starts: deploys paused.\n");
    fx.sync();
    // Both have a form of "start"; the one with the form asked for, as
    // written, ranks first.
    let first_note = |q: &str| {
        fx.search(q)
            .into_iter()
            .find(|p| p.as_path().starts_with("notes"))
    };
    assert_eq!(first_note("starts"), Some(sp("notes/started.md")));
    assert_eq!(first_note("starting"), Some(sp("notes/starting.md")));
}

#[test]
fn a_filter_restricts_and_does_not_rank() {
    let fx = agent_memories();
    // The decisions that say "database": the note about databases is not
    // a decision, and a decision that does not say it (the freeze) is no
    // answer to the words.
    let hits = scored(&fx, "type:decision database");
    let found: Vec<&StorePath> = hits.iter().map(|(p, _)| p).collect();
    assert_eq!(found, [&sp("ops/db.md")]);
    // The filter alone lists them all.
    assert_eq!(
        fx.search_sorted("type:decision"),
        paths(&["ops/db.md", "ops/freeze.md"])
    );
    // Same ranking and scores as the words alone, among the decisions.
    let alone = scored(&fx, "database");
    let db = alone.iter().find(|(p, _)| *p == sp("ops/db.md")).unwrap();
    assert!((hits[0].1 - db.1).abs() < 1e-4, "{hits:?} {alone:?}");
    assert_eq!(fx.search_sorted("status:open"), paths(&["ops/freeze.md"]));
}

#[test]
fn explicit_operators_keep_their_meaning() {
    let fx = agent_memories();
    // `+` requires, `-` and NOT exclude, AND requires both, OR either,
    // a phrase needs its words together.
    assert_eq!(fx.search("+postgres billing"), paths(&["ops/db.md"]));
    assert!(!fx.search("billing -postgres").contains(&sp("ops/db.md")));
    assert!(!fx.search("billing NOT postgres").contains(&sp("ops/db.md")));
    assert_eq!(fx.search("billing AND freeze"), paths(&["ops/freeze.md"]));
    assert_eq!(
        fx.search_sorted("postgres OR rustfmt"),
        paths(&["ops/db.md", "user/formatting.md"])
    );
    assert_eq!(fx.search("\"deploy freeze\""), paths(&["ops/freeze.md"]));
    assert!(fx.search("\"freeze deploy\"").is_empty());
    assert_eq!(fx.search("rustf*"), paths(&["user/formatting.md"]));
    assert_eq!(fx.search("tag:style"), paths(&["user/formatting.md"]));
    // A command-line flag is a word of the question, not an exclusion.
    fx.write(
        "feedback/force.md",
        "Ask before any git push --force on shared branches.\n",
    );
    fx.sync();
    assert_eq!(
        fx.search("can I run git push --force?").first(),
        Some(&sp("feedback/force.md"))
    );
    assert_eq!(fx.search("--force"), paths(&["feedback/force.md"]));
    // So is a short one; a longer word after a dash is still left out.
    fx.write(
        "knowledge/lint.md",
        "Run the linters with nox -s lint before pushing; pytest -x stops at the first failure.\n",
    );
    fx.sync();
    assert_eq!(
        fx.search("nox -s lint").first(),
        Some(&sp("knowledge/lint.md"))
    );
    assert_eq!(
        fx.search("how do I use pytest -x?").first(),
        Some(&sp("knowledge/lint.md"))
    );
    assert!(fx.search("nox -lint").is_empty());
}

#[test]
fn a_chinese_question_finds_the_chinese_memory() {
    let fx = agent_memories();
    assert_eq!(fx.search("深色模式"), paths(&["zh/偏好.md"]));
    assert_eq!(fx.search("用户偏好什么模式？"), paths(&["zh/偏好.md"]));
}

#[test]
fn a_query_nested_a_thousand_deep_is_searched_as_words() {
    let fx = agent_memories();
    let deep = format!("{}freeze{}", "(".repeat(1000), ")".repeat(1000));
    assert_eq!(fx.search(&deep), paths(&["ops/freeze.md"]));
    assert!(fx.index.query_warnings(&deep)[0].contains("1000 levels deep"));
    // Unclosed, and a thousand NOTs: searched as words too.
    let open = format!("{}freeze", "(".repeat(1000));
    assert_eq!(fx.search(&open), paths(&["ops/freeze.md"]));
    let nots = format!("freeze {}", "NOT ".repeat(5000));
    assert_eq!(fx.search(&nots), paths(&["ops/freeze.md"]));
    // Past 4 KiB or 128 words, the rest is left out, with a note.
    let long = format!("freeze OR {}", "x".repeat(5000));
    assert_eq!(fx.search(&long), paths(&["ops/freeze.md"]));
    assert!(fx.index.query_warnings(&long)[0].contains("only its first 4096"));
    let wordy = format!("freeze {}", "word ".repeat(200));
    assert_eq!(fx.search(&wordy), paths(&["ops/freeze.md"]));
    assert!(fx.index.query_warnings(&wordy)[0].contains("more than 128 words"));
    let signs = format!("{}freeze", "+-".repeat(5000));
    assert!(fx.index.search(&signs, 10).is_ok());
    // Twenty parentheses deep, unclosed: the grammar that is exponential
    // in them is not the one used.
    let unclosed = format!("{}freeze", "(".repeat(20));
    assert_eq!(fx.search(&unclosed), paths(&["ops/freeze.md"]));
}

/// Pieces of query syntax, for queries no agent would write on purpose.
fn query_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "(",
            ")",
            "\"",
            "NOT",
            "AND",
            "OR",
            "+",
            "-",
            "*",
            "^2",
            "~2",
            ":",
            "[",
            "]",
            "{",
            "}",
            "\\",
            "tag:",
            "type:decision",
            "created:>",
            "created:>2026-01-01",
            "updated:<",
            "limit:5",
            "limit:999999",
            "scope:agent:x",
            "id:",
            "freeze",
            "été",
            "深色模式",
            " ",
            "  ",
            "\t",
            "\n",
            "TO",
            "*:*",
            "title:",
            "body:\"",
            "'",
        ])
        .prop_map(str::to_string),
        "[a-z]{1,8}",
        any::<String>(),
    ]
}

/// No query, however malformed, panics or hangs a search: it answers
/// with results or an error. One store serves every case, and is removed
/// after them.
#[test]
fn any_query_is_answered_without_a_panic() {
    let fx = agent_memories();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &proptest::collection::vec(query_piece(), 0..300),
            |pieces| {
                let query: String = pieces.concat();
                let _ = fx.index.search(&query, 10);
                let _ = fx.index.query_warnings(&query);
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn a_question_that_names_a_day_asks_first_about_what_was_written_then() {
    let fx = Fixture::new();
    fx.write(
        "a.md",
        "---\ncreated_at: 2023-06-03T18:00:00Z\n---\nMaria started volunteering at a dog shelter once a month.\n",
    );
    fx.write(
        "b.md",
        "---\ncreated_at: 2023-05-01T10:00:00Z\n---\nMaria started a new activity she loves: aerial yoga, her new activity of the year.\n",
    );
    fx.write(
        "c.md",
        "---\ncreated_at: 2023-06-20\n---\nJohn started a new job at the city council.\n",
    );
    fx.write(
        "d.md",
        "---\ncreated_at: 2023-01-01\n---\nJohn likes kickboxing.\n",
    );
    fx.sync();
    let asked = "What new activity did Maria start, as mentioned on 3 June, 2023?";
    assert_eq!(fx.search(asked)[0], sp("a.md"));
    // The rest still follow, by their words.
    assert!(fx.search(asked).contains(&sp("b.md")));
    // Without the day, the words decide.
    assert_eq!(
        fx.search("What new activity did Maria start?")[0],
        sp("b.md")
    );
    // A date without its zone is on its own day.
    assert_eq!(
        fx.search("who started a job on 20 June 2023")[0],
        sp("c.md")
    );
    // A day nothing was written on changes nothing.
    assert_eq!(
        fx.search("What new activity did Maria start on 9 June 2023?")[0],
        sp("b.md")
    );
    // Asked of a period alone, what was written then is the answer, the
    // latest first.
    assert_eq!(fx.search("what happened on 3 June 2023?"), [sp("a.md")]);
    let hits = fx.index.search("what happened on 3 June 2023?", 5).unwrap();
    assert_eq!(hits[0].matched, crate::index::Side::Period);
    assert_eq!(
        fx.search("what happened in June 2023?"),
        [sp("c.md"), sp("a.md")]
    );
    let yesterday = jiff::Zoned::now()
        .yesterday()
        .unwrap()
        .with()
        .time(jiff::civil::time(12, 0, 0, 0))
        .build()
        .unwrap();
    fx.write(
        "e.md",
        format!(
            "---\ncreated_at: {}\n---\nPaired on the flaky login test.\n",
            yesterday.timestamp()
        ),
    );
    fx.sync();
    assert_eq!(fx.search("what did we do yesterday?")[0], sp("e.md"));
}

#[test]
fn a_question_about_a_day_finds_the_memories_that_name_it_ahead() {
    let fx = Fixture::new();
    fx.write(
        "dentist.md",
        "---\ncreated_at: 2023-05-20T10:00:00Z\n---\nBooked the dentist for June 3, 2023 at 3pm.\n",
    );
    fx.write(
        "past.md",
        "---\ncreated_at: 2023-07-01T10:00:00Z\n---\nThe dentist on June 3 went fine.\n",
    );
    fx.write(
        "gym.md",
        "---\ncreated_at: 2023-05-21T10:00:00Z\n---\nJoined the gym; first class next Monday.\n",
    );
    fx.write("other.md", "---\ncreated_at: 2023-01-01\n---\nLikes tea.\n");
    fx.sync();
    // Named ahead of the day: found by the day.
    assert_eq!(fx.search("what is on 3 June 2023?"), [sp("dentist.md")]);
    // "next Monday", written on Sunday 21 May 2023, is 22 May.
    assert_eq!(fx.search("what happened on 22 May 2023?")[0], sp("gym.md"));
    // The day a memory was written is the one its `created_at` says, in
    // its own zone.
    fx.write(
        "late.md",
        "---\ncreated_at: 2023-02-28T23:00:00-05:00\n---\nShipped the billing fix.\n",
    );
    fx.write(
        "early.md",
        "---\ncreated_at: 2023-03-01T00:30:00+08:00\n---\nStarted the audit.\n",
    );
    fx.sync();
    assert_eq!(
        fx.search("what happened on 28 February 2023?"),
        [sp("late.md")]
    );
    assert_eq!(
        fx.search("what happened on 1 March 2023?"),
        [sp("early.md")]
    );
    // A day named after it passed is not a time ahead: its memory is
    // found by its words, after what was written or planned for then.
    let dentist = fx.search("the dentist on 3 June 2023");
    assert_eq!(dentist[0], sp("dentist.md"), "{dentist:?}");
}

#[test]
fn the_memories_of_a_period_come_before_the_rest() {
    let fx = Fixture::new();
    fx.write(
        "shelter.md",
        "---\ncreated_at: 2023-06-03T09:00:00Z\n---\nMaria started volunteering at a dog shelter.\n",
    );
    fx.write(
        "bike.md",
        "---\ncreated_at: 2023-06-03T18:00:00Z\n---\nBought a bike.\n",
    );
    fx.write(
        "job.md",
        "---\ncreated_at: 2023-06-20T09:00:00Z\n---\nJohn started a new job at the council.\n",
    );
    fx.sync();
    // What the question asks, among what was written that day; that day's
    // others; then the rest.
    assert_eq!(
        fx.search("who started a new job on 3 June 2023?"),
        [sp("shelter.md"), sp("bike.md"), sp("job.md")]
    );
    // Two days apart are two days, not all between them.
    assert_eq!(
        fx.search("what happened on 3 June 2023 and 20 June 2023?"),
        [sp("job.md"), sp("bike.md"), sp("shelter.md")]
    );
}

#[test]
fn a_month_named_without_its_year_is_the_latest_one_with_memories() {
    let f = Fixture::new();
    f.write(
        "lake.md",
        "---\ncreated_at: 2022-07-16T10:00:00Z\n---\nWent camping at the lake with the kids.\n",
    );
    f.write(
        "mountains.md",
        "---\ncreated_at: 2022-09-03T10:00:00Z\n---\nWhere next? Camping in the mountains: we went camping \
         there twice, the best camping spot we know.\n",
    );
    f.sync();
    // No memory was written this July or last: "in July" is July 2022,
    // the store's latest, and its memory comes first.
    let (hits, warnings) = f
        .index
        .search_noting("where did we go camping in July?", 10, &[])
        .unwrap();
    assert_eq!(hits[0].path, sp("lake.md"), "{hits:?}");
    assert!(warnings.is_empty(), "{warnings:?}");
    // A month no year of the store has is still said to be empty, and a
    // time said from today does not look back a year; both questions are
    // then searched in every memory.
    for question in [
        "where did we go camping in February?",
        "where did we go camping last week?",
    ] {
        let (hits, warnings) = f.index.search_noting(question, 10, &[]).unwrap();
        assert_eq!(hits.len(), 2, "{question}");
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("no memory was written from ")),
            "{question}: {warnings:?}"
        );
    }
}

#[test]
fn a_question_about_a_day_nothing_was_written_on_says_so() {
    let f = Fixture::new();
    f.write(
        "notes/ledger.md",
        "---\ncreated_at: 2020-01-05T10:00:00Z\n---\nThe ledger job re-reads yesterday's statements.\n",
    );
    f.sync();
    let (hits, warnings) = f
        .index
        .search_noting("what did I write yesterday?", 10, &[])
        .unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("no memory was written on ")),
        "{warnings:?}"
    );
    // The question is still searched in every memory.
    assert_eq!(hits.len(), 1);
    let (_, warnings) = f
        .index
        .search_noting("what did I write in January 2020?", 10, &[])
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_question_with_a_verb_finds_the_memory_that_names_its_noun() {
    let f = Fixture::new();
    f.write("a.md", "Decision on the database: Postgres.\n");
    f.write(
        "b.md",
        "Database notes: the database has three database replicas.\n",
    );
    f.write("c.md", "Offsite choices: Lisbon or Porto.\n");
    f.write(
        "d.md",
        "Offsite notes: the offsite agenda for the offsite week.\n",
    );
    f.sync();
    assert_eq!(
        f.search("what did we decide on the database?")
            .first()
            .cloned(),
        Some(sp("a.md"))
    );
    assert_eq!(
        f.search("what did the user choose for the offsite?")
            .first()
            .cloned(),
        Some(sp("c.md"))
    );
}

#[test]
fn a_question_with_words_no_memory_holds_names_them() {
    let f = Fixture::new();
    f.write(
        "people/arjun.md",
        "Arjun is Priya's husband; he teaches physics.\n",
    );
    f.write("coffee.md", "Priya drinks a dark roast every morning.\n");
    f.sync();
    let (hits, warnings) = f
        .index
        .search_noting("what is Priya's blood type?", 10, &[])
        .unwrap();
    assert!(!hits.is_empty());
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("no memory holds \"blood\" or \"type\":")),
        "{warnings:?}"
    );
    // How a question asks is not what it asks about.
    let (_, warnings) = f
        .index
        .search_noting("what does Priya like to drink in the morning?", 10, &[])
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // A session some memories are hidden from learns nothing of them.
    let (_, warnings) = f
        .index
        .search_noting("what is Priya's blood type?", 10, &["agent:other".into()])
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // Of a Chinese question, its words in Latin letters.
    f.write("zh/cache.md", "我们的缓存层用 Redis，不用 Memcached。\n");
    f.sync();
    let (_, warnings) = f
        .index
        .search_noting("我们用的是哪个 Kafka 集群？", 10, &[])
        .unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("no memory holds \"kafka\":")),
        "{warnings:?}"
    );
    let (_, warnings) = f
        .index
        .search_noting("缓存层用的是 Redis 吗？", 10, &[])
        .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn a_name_in_every_body_counts_as_little_in_a_title() {
    let fx = Fixture::new();
    // The user's name is in every note; few titles hold it.
    fx.write(
        "people/priya.md",
        "---\ntitle: Priya Raman\n---\nPriya is a staff engineer. Priya lives in Portland.\n",
    );
    fx.write(
        "knowledge/title.md",
        "---\ntitle: Priya's job title\n---\nPriya is a senior engineer on the ledger team.\n",
    );
    fx.write(
        "habits/climbing.md",
        "---\ntitle: Bouldering on Tuesdays\n---\nPriya goes climbing at the Circuit gym every Tuesday evening.\n",
    );
    for i in 0..12 {
        fx.write(
            &format!("notes/n{i}.md"),
            format!("---\ntitle: Note {i}\n---\nPriya wrote note {i} about the week.\n"),
        );
    }
    fx.sync();
    let first = fx.search("where does Priya climb? mode:words")[0].clone();
    assert_eq!(first, sp("habits/climbing.md"));
    // A title word rare in the store keeps its weight.
    assert_eq!(fx.search("bouldering")[0], sp("habits/climbing.md"));
}
