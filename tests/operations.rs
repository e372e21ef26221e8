//! Core tests of the operations layer (`mnemofs::ops::Operations`): every
//! operation a front end calls, on a temp store written through the
//! store writer (`DirectWriter`) with the index in RAM.
//!
//! No kernel mount and no FUSE: these run anywhere `cargo test` does. The
//! real-mount suites prove the adapter; this file pins the logic: paths,
//! the sandbox, read-only views, text edits, memories, references, the
//! request/response wire format and the error mapping.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mnemofs::config::Config;
use mnemofs::index::Index;
use mnemofs::ops::{
    self, DirectWriter, Entry, EntryKind, Error, NewMemory, Operations, Outcome, Reply, Request,
    Response, ServedBy, WireError, Writer,
};
use mnemofs::store::{Store, StorePath};
use mnemofs::tasks::{OneShot, Setup};
use mnemofs::views::Views;

/// How long the index may take to catch up (never asserted as a timing).
const INDEX_WAIT: Duration = Duration::from_secs(60);

/// A temp store with the operations over it.
struct Fixture {
    root: tempfile::TempDir,
    store: Arc<Store>,
    index: Index,
    views: Views,
    ops: Operations,
}

impl Fixture {
    /// Operations writing straight on the store, telling the index.
    fn new() -> Fixture {
        Fixture::with_writer(|direct| Arc::new(direct))
    }

    /// Operations writing through whatever `wrap` makes of the store writer.
    fn with_writer(wrap: impl FnOnce(DirectWriter) -> Arc<dyn Writer>) -> Fixture {
        let root = tempfile::tempdir().expect("tempdir");
        Fixture::on(root, wrap, |ops| ops)
    }

    fn on(
        root: tempfile::TempDir,
        wrap: impl FnOnce(DirectWriter) -> Arc<dyn Writer>,
        finish: impl FnOnce(Operations) -> Operations,
    ) -> Fixture {
        let store = Arc::new(Store::open(root.path()).expect("open the store"));
        let index = Index::in_memory(Arc::clone(&store)).expect("index in RAM");
        let views = Views::new(index.clone());
        let writer = wrap(DirectWriter::new(Arc::clone(&store)).with_index(index.clone()));
        let ops = finish(Operations::new(
            Arc::clone(&store),
            index.clone(),
            views.clone(),
            writer,
            ServedBy::Local,
        ));
        Fixture {
            root,
            store,
            index,
            views,
            ops,
        }
    }

    /// The backing path of a store path.
    fn p(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// Writes a file straight into the backing directory (not through ops).
    fn seed(&self, rel: &str, content: &str) {
        let path = self.p(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, content).expect("seed");
    }

    fn bytes(&self, rel: &str) -> Vec<u8> {
        fs::read(self.p(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    fn text(&self, rel: &str) -> String {
        String::from_utf8(self.bytes(rel)).expect("utf-8")
    }

    #[track_caller]
    fn settle(&self) {
        assert!(
            self.index.wait_idle(INDEX_WAIT),
            "the index did not catch up"
        );
    }
}

/// Every file below `root` (relative paths), temp files included.
fn files_below(root: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).expect("below the base");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Splits a memory into its frontmatter YAML and its body.
fn split(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else {
        return (None, text);
    };
    match rest.find("\n---\n") {
        Some(i) => (Some(&rest[..i + 1]), &rest[i + 5..]),
        None => (None, text),
    }
}

/// The frontmatter of a memory as a YAML mapping (empty if none).
fn frontmatter(text: &str) -> BTreeMap<String, serde_yaml::Value> {
    let Some(yaml) = split(text).0 else {
        return BTreeMap::new();
    };
    serde_yaml::from_str(yaml).unwrap_or_else(|e| panic!("bad frontmatter {yaml:?}: {e}"))
}

fn scalar(text: &str, key: &str) -> Option<String> {
    frontmatter(text)
        .get(key)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
}

fn list_field(text: &str, key: &str) -> Vec<String> {
    frontmatter(text)
        .get(key)
        .and_then(|v| v.as_sequence())
        .map(|s| {
            s.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn paths(entries: &[Entry]) -> Vec<&str> {
    entries.iter().map(|e| e.path.as_str()).collect()
}

fn memory(content: &str, title: &str) -> NewMemory {
    NewMemory {
        content: content.into(),
        title: Some(title.into()),
        ..NewMemory::default()
    }
}

/// Calls the agents' tool `name` (MCP's and the socket's table) with
/// `args`, a JSON object, on `ops`.
fn tool(
    ops: &Operations,
    name: &str,
    args: serde_json::Value,
) -> Result<mnemofs::front::tools::Answer, mnemofs::front::tools::Fail> {
    let serde_json::Value::Object(args) = args else {
        panic!("tool arguments are an object: {args}");
    };
    mnemofs::front::tools::call(&|request| ops.handle(request), name, &args)
}

// ---------------------------------------------------------------------------
// Files: create, read, list.

#[test]
fn create_makes_a_new_file_and_its_folders_and_read_returns_it() {
    let f = Fixture::new();
    f.ops
        .create("notes/deep/a.md", "hello\n", false)
        .expect("create");
    assert_eq!(f.text("notes/deep/a.md"), "hello\n");
    assert_eq!(f.ops.read("notes/deep/a.md").expect("read"), "hello\n");
    // The store writer leaves no temp files behind.
    assert_eq!(files_below(f.root.path()), ["notes/deep/a.md"]);
}

#[test]
fn create_over_an_existing_file_fails_with_exists_unless_overwrite() {
    let f = Fixture::new();
    f.ops.create("a.md", "first\n", false).expect("create");
    let e = f.ops.create("a.md", "second\n", false).unwrap_err();
    assert!(
        matches!(&e, Error::Exists { path } if path == "a.md"),
        "{e:?}"
    );
    assert_eq!(e.errno(), libc::EEXIST);
    assert_eq!(f.text("a.md"), "first\n");
    f.ops.create("a.md", "second\n", true).expect("overwrite");
    assert_eq!(f.text("a.md"), "second\n");
}

#[test]
fn create_refuses_the_root_a_folder_and_the_temp_file_prefix() {
    let f = Fixture::new();
    f.seed("notes/a.md", "a\n");
    let e = f.ops.create("", "x", true).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    let e = f.ops.create("notes", "x", true).unwrap_err();
    assert!(matches!(e, Error::IsFolder { .. }), "{e:?}");
    let e = f
        .ops
        .create("notes/.mnemofs-tmp-x", "x", false)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidPath { .. }), "{e:?}");
    assert_eq!(files_below(f.root.path()), ["notes/a.md"]);
}

#[test]
fn read_of_a_folder_or_a_missing_file_names_the_problem() {
    let f = Fixture::new();
    f.seed("notes/a.md", "a\n");
    let e = f.ops.read("notes").unwrap_err();
    assert!(matches!(e, Error::IsFolder { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::EISDIR);
    let e = f.ops.read("notes/missing.md").unwrap_err();
    assert!(matches!(&e, Error::NotFound { path } if path == "notes/missing.md"));
    assert_eq!(e.errno(), libc::ENOENT);
    let e = f.ops.list("notes/a.md", 1).unwrap_err();
    assert!(matches!(e, Error::NotFolder { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::ENOTDIR);
}

#[test]
fn read_of_a_file_that_is_not_utf8_is_not_text() {
    let f = Fixture::new();
    fs::write(f.p("blob.md"), [0xff, 0xfe, 0x00, 0x80]).expect("seed");
    let e = f.ops.read("blob.md").unwrap_err();
    assert!(matches!(e, Error::NotText { .. }), "{e:?}");
}

#[test]
fn list_goes_as_deep_as_asked_and_leaves_out_dot_names_and_view_names() {
    let f = Fixture::new();
    f.seed("a.md", "a\n");
    f.seed("notes/b.md", "bb\n");
    f.seed("notes/sub/c.md", "ccc\n");
    f.seed(".hidden.md", "x\n");
    f.seed(".git/config", "x\n");
    f.seed("notes/.draft.md", "x\n");
    // A real folder with a view's name is shadowed by the view.
    f.seed("search/real.md", "x\n");

    let one = f.ops.list("", 1).expect("list depth 1");
    assert_eq!(paths(&one), ["a.md", "notes"]);
    assert_eq!(one[0].kind, EntryKind::File);
    assert_eq!(one[0].size, 2);
    assert_eq!(one[1].kind, EntryKind::Folder);

    // Depth 0 means 1: a listing always shows the folder's own entries.
    assert_eq!(f.ops.list("", 0).expect("depth 0"), one);

    let two = f.ops.list("", 2).expect("list depth 2");
    assert_eq!(paths(&two), ["a.md", "notes", "notes/b.md", "notes/sub"]);
    let three = f.ops.list("", 3).expect("list depth 3");
    assert_eq!(
        paths(&three),
        ["a.md", "notes", "notes/b.md", "notes/sub", "notes/sub/c.md"]
    );
    let notes = f.ops.list("notes", 1).expect("list notes");
    assert_eq!(paths(&notes), ["notes/b.md", "notes/sub"]);
    assert_eq!(notes[0].size, 3);
}

// ---------------------------------------------------------------------------
// str_replace.

#[test]
fn str_replace_changes_the_one_occurrence_and_returns_its_zero_based_line() {
    let f = Fixture::new();
    f.seed("a.md", "one\ntwo\nthree\n");
    let (text, line) = f.ops.str_replace("a.md", "two", "2").expect("replace");
    assert_eq!(text, "one\n2\nthree\n");
    assert_eq!(line, 1);
    assert_eq!(f.text("a.md"), "one\n2\nthree\n");
    // Multi-line text, and replacing by nothing.
    let (text, line) = f
        .ops
        .str_replace("a.md", "2\nthree\n", "")
        .expect("replace");
    assert_eq!((text.as_str(), line), ("one\n", 1));
    assert_eq!(f.text("a.md"), "one\n");
}

#[test]
fn str_replace_without_a_match_is_no_match_and_changes_nothing() {
    let f = Fixture::new();
    f.seed("a.md", "one\ntwo\n");
    let e = f.ops.str_replace("a.md", "three", "3").unwrap_err();
    assert!(
        matches!(&e, Error::NoMatch { path } if path == "a.md"),
        "{e:?}"
    );
    assert_eq!(e.errno(), libc::EINVAL);
    let e = f.ops.str_replace("a.md", "", "x").unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e:?}");
    assert_eq!(f.text("a.md"), "one\ntwo\n");
}

#[test]
fn str_replace_of_text_found_several_times_names_every_line_one_based() {
    let f = Fixture::new();
    f.seed("a.md", "intro\nfoo\nbar foo\nbaz\nfoo\n");
    let e = f.ops.str_replace("a.md", "foo", "x").unwrap_err();
    match &e {
        Error::NotUnique { path, lines } => {
            assert_eq!(path, "a.md");
            assert_eq!(lines, &[2, 3, 5]);
        }
        other => panic!("expected NotUnique, got {other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "a.md: the text to replace occurs 3 times (lines 2, 3, 5)"
    );
    assert_eq!(f.text("a.md"), "intro\nfoo\nbar foo\nbaz\nfoo\n");
}

#[test]
fn str_replace_counts_overlapping_occurrences_in_the_lines_it_reports() {
    let f = Fixture::new();
    f.seed("a.md", "x\naaaa\n");
    let e = f.ops.str_replace("a.md", "aa", "b").unwrap_err();
    assert!(
        matches!(&e, Error::NotUnique { lines, .. } if lines == &[2, 2, 2]),
        "{e:?}"
    );
    assert_eq!(f.text("a.md"), "x\naaaa\n");
}

/// "aa" occurs twice in "aaa" (at 0 and 1): which one to replace is
/// ambiguous, as the overlapping count in `NotUnique` itself says.
#[test]
fn str_replace_of_text_that_overlaps_itself_once_is_not_unique() {
    let f = Fixture::new();
    f.seed("a.md", "aaa\n");
    let e = f.ops.str_replace("a.md", "aa", "b");
    assert!(
        matches!(&e, Err(Error::NotUnique { lines, .. }) if lines == &[1, 1]),
        "{e:?}"
    );
    assert_eq!(f.text("a.md"), "aaa\n", "the file was changed");
}

// ---------------------------------------------------------------------------
// insert.

#[test]
fn insert_at_line_zero_goes_before_the_first_line() {
    let f = Fixture::new();
    f.seed("a.md", "a\nb\n");
    let new = f.ops.insert("a.md", 0, "top").expect("insert");
    assert_eq!(new, "top\na\nb\n");
    assert_eq!(f.text("a.md"), "top\na\nb\n");
}

#[test]
fn insert_after_the_last_line_appends_and_the_file_ends_with_a_newline() {
    let f = Fixture::new();
    // No final newline: the result gets one, and no blank line appears.
    f.seed("a.md", "a\nb");
    let new = f.ops.insert("a.md", 2, "c").expect("insert");
    assert_eq!(new, "a\nb\nc\n");
    assert_eq!(f.text("a.md"), "a\nb\nc\n");
    // A trailing newline on the text does not make an extra line.
    f.ops.insert("a.md", 1, "x\n").expect("insert");
    assert_eq!(f.text("a.md"), "a\nx\nb\nc\n");
    // Several lines at once.
    f.ops.insert("a.md", 4, "y\nz").expect("insert");
    assert_eq!(f.text("a.md"), "a\nx\nb\nc\ny\nz\n");
}

#[test]
fn insert_into_an_empty_file_makes_one_line() {
    let f = Fixture::new();
    f.seed("empty.md", "");
    f.ops.insert("empty.md", 0, "only").expect("insert");
    assert_eq!(f.text("empty.md"), "only\n");
}

#[test]
fn insert_outside_the_file_is_bad_line_and_changes_nothing() {
    let f = Fixture::new();
    f.seed("a.md", "a\nb\n");
    for line in [3, -1, i64::MAX] {
        let e = f.ops.insert("a.md", line, "x").unwrap_err();
        match &e {
            Error::BadLine {
                path,
                line: asked,
                lines,
            } => {
                assert_eq!((path.as_str(), *asked, *lines), ("a.md", line, 2));
            }
            other => panic!("line {line}: expected BadLine, got {other:?}"),
        }
        assert_eq!(e.errno(), libc::EINVAL);
    }
    assert_eq!(f.text("a.md"), "a\nb\n");
}

// ---------------------------------------------------------------------------
// rename and delete.

#[test]
fn rename_moves_a_file_into_new_folders() {
    let f = Fixture::new();
    f.seed("a.md", "a\n");
    f.ops.rename("a.md", "deep/er/b.md").expect("rename");
    assert_eq!(f.text("deep/er/b.md"), "a\n");
    assert!(!f.p("a.md").exists());
}

#[test]
fn rename_never_replaces_an_existing_file() {
    let f = Fixture::new();
    f.seed("a.md", "a\n");
    f.seed("b.md", "b\n");
    let e = f.ops.rename("a.md", "b.md").unwrap_err();
    assert!(
        matches!(&e, Error::Exists { path } if path == "b.md"),
        "{e:?}"
    );
    assert_eq!(f.text("a.md"), "a\n");
    assert_eq!(f.text("b.md"), "b\n");
}

#[test]
fn rename_of_a_folder_into_itself_is_refused() {
    let f = Fixture::new();
    f.seed("notes/a.md", "a\n");
    for to in ["notes/sub", "notes/sub/deeper", "notes"] {
        let e = f.ops.rename("notes", to).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{to}: {e:?}");
    }
    assert_eq!(files_below(f.root.path()), ["notes/a.md"]);
    // A sibling whose name merely starts the same is not inside.
    f.ops
        .rename("notes", "notes2")
        .expect("rename to a sibling");
    assert_eq!(files_below(f.root.path()), ["notes2/a.md"]);
}

#[test]
fn rename_of_a_missing_file_is_not_found() {
    let f = Fixture::new();
    let e = f.ops.rename("gone.md", "b.md").unwrap_err();
    assert!(
        matches!(&e, Error::NotFound { path } if path == "gone.md"),
        "{e:?}"
    );
}

#[test]
fn delete_removes_a_file() {
    let f = Fixture::new();
    f.seed("notes/a.md", "a\n");
    f.seed("notes/b.md", "b\n");
    f.ops.delete("notes/a.md").expect("delete");
    assert_eq!(files_below(f.root.path()), ["notes/b.md"]);
    let e = f.ops.delete("notes/a.md").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
}

#[test]
fn delete_of_a_folder_removes_the_whole_tree() {
    let f = Fixture::new();
    f.seed("keep.md", "k\n");
    f.seed("notes/a.md", "a\n");
    f.seed("notes/sub/b.md", "b\n");
    f.seed("notes/sub/deeper/c.md", "c\n");
    f.seed("notes/.hidden", "h\n");
    fs::create_dir_all(f.p("notes/empty")).expect("mkdir");
    f.ops.delete("notes").expect("delete the tree");
    assert!(!f.p("notes").exists());
    assert_eq!(files_below(f.root.path()), ["keep.md"]);
}

#[test]
fn the_store_root_cannot_be_deleted_or_renamed() {
    let f = Fixture::new();
    f.seed("a.md", "a\n");
    assert!(matches!(f.ops.delete(""), Err(Error::InvalidInput(_))));
    assert!(matches!(f.ops.rename("", "x"), Err(Error::InvalidInput(_))));
    assert_eq!(files_below(f.root.path()), ["a.md"]);
}

// ---------------------------------------------------------------------------
// The sandbox.

#[test]
fn paths_that_leave_the_store_or_are_absolute_are_invalid() {
    let f = Fixture::new();
    let outside = tempfile::tempdir().expect("outside");
    let abs = outside.path().join("x.md");
    let abs = abs.to_str().expect("utf-8 path");
    for path in ["../x.md", "notes/../../x.md", "/etc/passwd", abs] {
        for (what, result) in [
            ("read", f.ops.read(path).map(drop)),
            ("create", f.ops.create(path, "x", true)),
            ("delete", f.ops.delete(path)),
            ("list", f.ops.list(path, 1).map(drop)),
            ("rename from", f.ops.rename(path, "y.md")),
            ("rename to", f.ops.rename("y.md", path)),
        ] {
            let e = result.expect_err(what);
            assert!(
                matches!(e, Error::InvalidPath { .. }),
                "{what} {path}: {e:?}"
            );
            assert_eq!(e.errno(), libc::EINVAL);
            assert_eq!(e.rpc_code(), ops::rpc::INVALID_PARAMS);
        }
    }
    assert!(files_below(outside.path()).is_empty());
    assert!(files_below(f.root.path()).is_empty());
}

#[test]
fn a_symlink_that_leads_outside_the_store_is_not_followed_for_reads_or_writes() {
    let top = tempfile::tempdir().expect("tempdir");
    let store_dir = top.path().join("store");
    let outside = top.path().join("outside");
    fs::create_dir_all(&store_dir).expect("mkdir store");
    fs::create_dir_all(&outside).expect("mkdir outside");
    let secret = outside.join("secret.md");
    fs::write(&secret, "secret\n").expect("seed outside");
    let root = tempfile::TempDir::new_in(&store_dir).expect("store root");
    std::os::unix::fs::symlink(&secret, root.path().join("abs.md")).expect("symlink");
    std::os::unix::fs::symlink("../../outside/secret.md", root.path().join("rel.md"))
        .expect("symlink");
    std::os::unix::fs::symlink(&outside, root.path().join("out")).expect("symlink");
    let f = Fixture::on(root, |d| Arc::new(d), |ops| ops);

    for link in ["abs.md", "rel.md"] {
        let e = f.ops.read(link).unwrap_err();
        assert!(matches!(e, Error::InvalidPath { .. }), "read {link}: {e:?}");
        let e = f.ops.str_replace(link, "secret", "leak").unwrap_err();
        assert!(matches!(e, Error::InvalidPath { .. }), "edit {link}: {e:?}");
        let e = f.ops.insert(link, 0, "leak").unwrap_err();
        assert!(
            matches!(e, Error::InvalidPath { .. }),
            "insert {link}: {e:?}"
        );
    }
    // Through a symlinked folder: nothing is read or made outside.
    assert!(f.ops.read("out/secret.md").is_err());
    assert!(f.ops.create("out/new.md", "x", false).is_err());
    assert!(f.ops.create("out/secret.md", "x", true).is_err());
    assert!(f.ops.list("out", 1).is_err());
    // Overwriting a link replaces the link, never its target.
    let _ = f.ops.create("abs.md", "replaced\n", true);
    let _ = f.ops.create("rel.md", "replaced\n", true);
    // Deleting the link to a folder removes the link, not the folder's
    // files; so does deleting a folder that holds such a link.
    f.ops.delete("out").expect("delete the link");
    assert!(fs::symlink_metadata(f.p("out")).is_err());
    fs::create_dir_all(f.p("notes")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, f.p("notes/out")).expect("symlink");
    f.ops.delete("notes").expect("delete the folder");
    assert!(!f.p("notes").exists());

    assert_eq!(fs::read_to_string(&secret).expect("secret"), "secret\n");
    assert_eq!(files_below(&outside), ["secret.md"]);
}

/// A file written over a symlink must get the store's private mode, not
/// the symlink's `0777` permission bits.
#[test]
fn overwriting_a_symlink_makes_a_private_file() {
    let f = Fixture::new();
    f.seed("target.md", "t\n");
    std::os::unix::fs::symlink("target.md", f.p("link.md")).expect("symlink");
    f.ops
        .create("link.md", "own\n", true)
        .expect("overwrite the link");
    let md = fs::symlink_metadata(f.p("link.md")).expect("stat");
    assert!(md.file_type().is_file(), "the link was not replaced");
    assert_eq!(f.text("link.md"), "own\n");
    assert_eq!(f.text("target.md"), "t\n");
    let mode = md.permissions().mode() & 0o7777;
    assert_eq!(
        mode,
        ops::NEW_FILE_MODE,
        "the new file has mode {mode:o}, copied from the symlink"
    );
}

#[test]
fn a_symlink_inside_the_store_is_followed_once_for_reads() {
    let f = Fixture::new();
    f.seed("notes/target.md", "inside\n");
    std::os::unix::fs::symlink("notes/target.md", f.p("link.md")).expect("symlink");
    assert_eq!(f.ops.read("link.md").expect("read"), "inside\n");
    let root = f.ops.list("", 1).expect("list");
    let link = root.iter().find(|e| e.path == "link.md").expect("listed");
    assert_eq!(
        link.kind,
        EntryKind::Link {
            target: "notes/target.md".into()
        }
    );
}

/// `read` follows a symlink inside the store, so an edit of what was read
/// either lands in the target or is refused for good; `Conflict` would
/// tell the caller to read again and retry, which can never succeed.
#[test]
fn an_edit_through_a_symlink_inside_the_store_is_not_an_endless_conflict() {
    let f = Fixture::new();
    f.seed("notes/target.md", "one\ntwo\n");
    std::os::unix::fs::symlink("notes/target.md", f.p("link.md")).expect("symlink");
    for attempt in 0..2 {
        match f.ops.str_replace("link.md", "two", "2") {
            Ok((text, _)) => {
                assert_eq!(text, "one\n2\n");
                assert_eq!(f.text("notes/target.md"), "one\n2\n");
                assert!(
                    fs::symlink_metadata(f.p("link.md"))
                        .expect("stat")
                        .file_type()
                        .is_symlink(),
                    "the link was replaced by a file"
                );
                return;
            }
            Err(e) => {
                assert!(
                    !matches!(e, Error::Conflict { .. }),
                    "attempt {attempt}: {e:?} (retrying cannot help)"
                );
                assert_eq!(f.text("notes/target.md"), "one\ntwo\n");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Views are read-only.

#[test]
fn writes_under_a_view_are_read_only_with_erofs() {
    let f = Fixture::new();
    let (_, id) = f
        .ops
        .write_memory(&memory("I prefer dark mode.\n", "Dark mode"))
        .expect("write");
    f.settle();
    let before = files_below(f.root.path());
    let by_id = format!("by-id/{id}.md");
    let attempts: Vec<(&str, ops::Result<()>)> = vec![
        (
            "create in search",
            f.ops.create("search/dark/new.md", "x", false),
        ),
        ("create a query", f.ops.create("search/dark", "x", true)),
        ("create in by-id", f.ops.create("by-id/x.md", "x", false)),
        ("overwrite by-id", f.ops.create(&by_id, "x", true)),
        (
            "create in .mnemofs",
            f.ops.create(".mnemofs/lint", "x", true),
        ),
        ("delete by-id", f.ops.delete(&by_id)),
        ("delete search", f.ops.delete("search")),
        ("delete recent", f.ops.delete("recent")),
        ("rename from by-id", f.ops.rename(&by_id, "notes/x.md")),
        (
            "rename into search",
            f.ops.rename("inbox/dark-mode.md", "search/dark/x.md"),
        ),
        (
            "rename into by-category",
            f.ops.rename("inbox/dark-mode.md", "by-category/x.md"),
        ),
        (
            "edit by-id",
            f.ops.str_replace(&by_id, "dark", "light").map(drop),
        ),
        ("insert by-id", f.ops.insert(&by_id, 0, "x").map(drop)),
    ];
    for (what, result) in attempts {
        let e = result.expect_err(what);
        assert!(matches!(e, Error::ReadOnly { .. }), "{what}: {e:?}");
        assert_eq!(e.errno(), libc::EROFS, "{what}");
        assert_eq!(e.rpc_code(), ops::rpc::READ_ONLY, "{what}");
    }
    assert_eq!(files_below(f.root.path()), before);
}

#[test]
fn read_of_by_id_returns_the_memory() {
    let f = Fixture::new();
    let (path, id) = f
        .ops
        .write_memory(&memory("I prefer dark mode.\n", "Dark mode"))
        .expect("write");
    f.settle();
    let through_view = f.ops.read(&format!("by-id/{id}.md")).expect("by-id");
    assert_eq!(through_view, f.text(&path.to_string()));
    let e = f.ops.read("by-id/no-such-id.md").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
}

#[test]
fn list_of_a_search_folder_lists_the_hits_after_the_index_caught_up() {
    let f = Fixture::new();
    f.ops
        .create(
            "notes/zebra.md",
            "The zebra crossing is on Elm street.\n",
            false,
        )
        .expect("create");
    f.ops
        .create("notes/other.md", "Nothing about that animal.\n", false)
        .expect("create");
    f.settle();
    let hits = f.ops.list("search/zebra", 1).expect("list the search");
    assert_eq!(
        paths(&hits),
        ["search/zebra/01-zebra.md", "search/zebra/summary.md"]
    );
    assert_eq!(
        hits[0].kind,
        EntryKind::Link {
            target: "../../notes/zebra.md".into()
        }
    );
    assert_eq!(hits[1].kind, EntryKind::File);
    // The hit reads as the memory; the summary names it.
    assert_eq!(
        f.ops.read("search/zebra/01-zebra.md").expect("read a hit"),
        "The zebra crossing is on Elm street.\n"
    );
    let summary = f.ops.read("search/zebra/summary.md").expect("summary");
    assert!(summary.contains("notes/zebra.md"), "{summary}");
    // search() agrees with the view.
    let found = f.ops.search("zebra", 10).expect("search");
    assert_eq!(
        found.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["notes/zebra.md"]
    );
    // A view folder is not a file.
    let e = f.ops.read("search/zebra").unwrap_err();
    assert!(matches!(e, Error::IsFolder { .. }), "{e:?}");
}

#[test]
fn the_control_folder_lists_and_reads_its_generated_files() {
    let f = Fixture::new();
    f.settle();
    let entries = f.ops.list(".mnemofs", 1).expect("list .mnemofs");
    let names = paths(&entries);
    for name in [
        ".mnemofs/status.json",
        ".mnemofs/lint",
        ".mnemofs/pending.md",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let status = f.ops.read(".mnemofs/status.json").expect("status.json");
    let json: serde_json::Value = serde_json::from_str(&status).expect("json");
    assert!(json["documents"].is_u64(), "{json}");
    assert!(
        f.ops
            .read(".mnemofs/pending.md")
            .expect("pending")
            .contains("Nothing is due")
    );
}

// ---------------------------------------------------------------------------
// write_memory.

#[test]
fn write_memory_without_a_category_goes_to_the_inbox_with_its_fields() {
    let f = Fixture::new();
    let new = NewMemory {
        content: "I prefer dark mode in every editor.".into(),
        title: Some("Dark mode".into()),
        tags: vec!["ui".into(), " #theme ".into(), "#".into()],
        scope: Some("agent:coder".into()),
        source: Some("chat 2026-01-01".into()),
        kind: Some("note".into()),
        ..NewMemory::default()
    };
    let (path, id) = f.ops.write_memory(&new).expect("write");
    assert_eq!(path.to_string(), "inbox/dark-mode.md");
    let text = f.text("inbox/dark-mode.md");
    let fm = frontmatter(&text);
    assert_eq!(scalar(&text, "id").as_deref(), Some(id.as_str()));
    assert!(uuid_like(&id), "{id}");
    assert_eq!(scalar(&text, "title").as_deref(), Some("Dark mode"));
    assert_eq!(scalar(&text, "type").as_deref(), Some("note"));
    assert_eq!(scalar(&text, "scope").as_deref(), Some("agent:coder"));
    assert_eq!(scalar(&text, "source").as_deref(), Some("chat 2026-01-01"));
    assert_eq!(scalar(&text, "phase").as_deref(), Some("inbox"));
    assert!(fm.contains_key("created_at"), "{text}");
    assert!(!fm.contains_key("category"), "{text}");
    assert_eq!(list_field(&text, "tags"), ["ui", "theme"]);
    // The body is the content, with a final newline added.
    assert_eq!(split(&text).1, "I prefer dark mode in every editor.\n");
}

fn uuid_like(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

#[test]
fn write_memory_with_a_category_goes_to_its_folder_as_organized() {
    let f = Fixture::new();
    let new = NewMemory {
        category: Some("Preferences".into()),
        ..memory("I prefer tea.\n", "Tea")
    };
    let (path, _) = f.ops.write_memory(&new).expect("write");
    assert_eq!(path.to_string(), "preferences/tea.md");
    let text = f.text("preferences/tea.md");
    assert_eq!(scalar(&text, "category").as_deref(), Some("preferences"));
    assert_eq!(scalar(&text, "phase").as_deref(), Some("organized"));
}

#[test]
fn write_memory_honours_an_explicit_path() {
    let f = Fixture::new();
    let new = NewMemory {
        path: Some("projects/mnemofs/plan.md".into()),
        ..memory("Ship the ops layer.\n", "Plan")
    };
    let (path, id) = f.ops.write_memory(&new).expect("write");
    assert_eq!(path.to_string(), "projects/mnemofs/plan.md");
    let text = f.text("projects/mnemofs/plan.md");
    assert_eq!(scalar(&text, "id"), Some(id));
    // The path is taken: the second write fails instead of renaming.
    let e = f.ops.write_memory(&new).unwrap_err();
    assert!(matches!(e, Error::Exists { .. }), "{e:?}");
    // And a view is no place for a memory.
    let into_view = NewMemory {
        path: Some("search/plan.md".into()),
        ..new
    };
    let e = f.ops.write_memory(&into_view).unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e:?}");
    assert_eq!(files_below(f.root.path()), ["projects/mnemofs/plan.md"]);
}

#[test]
fn write_memory_with_a_title_already_taken_gets_a_numbered_name() {
    let f = Fixture::new();
    let (a, id_a) = f
        .ops
        .write_memory(&memory("one\n", "Same title"))
        .expect("1");
    let (b, id_b) = f
        .ops
        .write_memory(&memory("two\n", "Same title"))
        .expect("2");
    let (c, _) = f
        .ops
        .write_memory(&memory("three\n", "Same title"))
        .expect("3");
    assert_eq!(a.to_string(), "inbox/same-title.md");
    assert_eq!(b.to_string(), "inbox/same-title-2.md");
    assert_eq!(c.to_string(), "inbox/same-title-3.md");
    assert_ne!(id_a, id_b);
    assert_eq!(split(&f.text("inbox/same-title.md")).1, "one\n");
    assert_eq!(split(&f.text("inbox/same-title-2.md")).1, "two\n");
}

#[test]
fn write_memory_without_a_title_takes_the_first_words() {
    let f = Fixture::new();
    let (path, _) = f
        .ops
        .write_memory(&NewMemory {
            content: "\n# Deploy notes\nThe key is in the vault.\n".into(),
            ..NewMemory::default()
        })
        .expect("write");
    assert_eq!(path.to_string(), "inbox/deploy-notes.md");
    let text = f.text("inbox/deploy-notes.md");
    assert_eq!(scalar(&text, "title").as_deref(), Some("Deploy notes"));
}

#[test]
fn write_memory_with_an_unknown_category_is_invalid_input_and_writes_nothing() {
    let f = Fixture::new();
    let new = NewMemory {
        category: Some("work".into()),
        ..memory("x\n", "X")
    };
    let e = f.ops.write_memory(&new).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("work")),
        "{e:?}"
    );
    assert_eq!(e.rpc_code(), ops::rpc::INVALID_PARAMS);
    assert!(files_below(f.root.path()).is_empty());
}

// ---------------------------------------------------------------------------
// resolve and link.

#[test]
fn resolve_finds_a_memory_by_id_path_and_title() {
    let f = Fixture::new();
    let (path, id) = f
        .ops
        .write_memory(&memory("I prefer dark mode.\n", "Dark mode"))
        .expect("write");
    f.ops
        .write_memory(&memory("Unrelated.\n", "Something else"))
        .expect("write");
    f.settle();
    assert_eq!(f.ops.resolve(&id).expect("by id"), path);
    assert_eq!(f.ops.resolve("inbox/dark-mode.md").expect("by path"), path);
    assert_eq!(f.ops.resolve("Dark mode").expect("by title"), path);
    assert_eq!(f.ops.resolve("  Dark mode ").expect("trimmed"), path);
    let e = f.ops.resolve("Nothing of that name").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
}

#[test]
fn resolve_of_a_title_two_memories_share_is_ambiguous_and_lists_both() {
    let f = Fixture::new();
    let (a, _) = f
        .ops
        .write_memory(&memory("one\n", "Shared title"))
        .expect("1");
    let (b, _) = f
        .ops
        .write_memory(&memory("two\n", "Shared title"))
        .expect("2");
    f.settle();
    let e = f.ops.resolve("Shared title").unwrap_err();
    match &e {
        Error::Ambiguous {
            reference,
            candidates,
        } => {
            assert_eq!(reference, "Shared title");
            let mut found = candidates.clone();
            found.sort();
            let mut wanted = vec![a.to_string(), b.to_string()];
            wanted.sort();
            assert_eq!(found, wanted);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert_eq!(e.rpc_code(), ops::rpc::AMBIGUOUS);
    assert!(e.to_string().contains("inbox/shared-title-2.md"), "{e}");
}

#[test]
fn link_records_the_target_id_in_links_and_leaves_the_body_alone() {
    let f = Fixture::new();
    let body = "See the other note.\r\ntrailing   \n";
    let (from, _) = f.ops.write_memory(&memory(body, "Source")).expect("from");
    let (to, to_id) = f
        .ops
        .write_memory(&memory("Target body.\n", "Target"))
        .expect("to");
    f.settle();
    let linked = f.ops.link("Source", &to.to_string()).expect("link");
    assert_eq!(linked, from);
    let text = f.text(&from.to_string());
    assert_eq!(list_field(&text, "links"), [to_id.as_str()]);
    assert_eq!(split(&text).1, body, "the body changed");
    // Linking again adds nothing.
    f.ops.link(&from.to_string(), &to_id).expect("link again");
    assert_eq!(f.text(&from.to_string()), text);
}

#[test]
fn link_to_a_memory_without_an_id_records_the_id_the_index_shows() {
    let f = Fixture::new();
    let (from, _) = f.ops.write_memory(&memory("x\n", "Source")).expect("from");
    f.seed("notes/plain.md", "no frontmatter\n");
    let shown = f
        .ops
        .read_memory_text("notes/plain.md")
        .expect("read")
        .id
        .expect("an id shown");
    f.ops
        .link(&from.to_string(), "notes/plain.md")
        .expect("link");
    assert_eq!(
        list_field(&f.text(&from.to_string()), "links"),
        [shown.as_str()]
    );
    // The target is not rewritten, and the link resolves to it.
    assert_eq!(f.text("notes/plain.md"), "no frontmatter\n");
    f.index
        .notify_path(&StorePath::new("notes/plain.md").unwrap());
    f.settle();
    assert_eq!(
        f.ops.resolve(&shown).expect("resolve").to_string(),
        "notes/plain.md"
    );
}

#[test]
fn link_both_records_each_id_in_the_other_and_refuses_before_writing_anything() {
    let f = Fixture::new();
    let (a, a_id) = f
        .ops
        .write_memory(&memory("A body.\n", "Alpha"))
        .expect("a");
    let (b, b_id) = f.ops.write_memory(&memory("B body.\n", "Beta")).expect("b");
    f.settle();
    assert_eq!(f.ops.link_both("Alpha", "Beta").expect("link"), a);
    assert_eq!(
        list_field(&f.text(&a.to_string()), "links"),
        [b_id.as_str()]
    );
    assert_eq!(
        list_field(&f.text(&b.to_string()), "links"),
        [a_id.as_str()]
    );
    // Unlink takes both away.
    let (_, removed) = f.ops.unlink(&b.to_string(), &a_id).expect("unlink");
    assert!(removed);
    assert!(list_field(&f.text(&a.to_string()), "links").is_empty());
    assert!(list_field(&f.text(&b.to_string()), "links").is_empty());
    // A memory without an id gets one, its body unchanged.
    f.seed("notes/plain.md", "no frontmatter\n");
    f.settle();
    let shown = f
        .ops
        .read_memory_text("notes/plain.md")
        .expect("read")
        .id
        .expect("an id shown before it is written");
    f.ops
        .link_both(&a.to_string(), "notes/plain.md")
        .expect("link a plain note");
    let plain = f.text("notes/plain.md");
    let plain_id = list_field(&f.text(&a.to_string()), "links");
    assert_eq!(plain_id, [shown.as_str()], "{plain}");
    assert!(plain.contains(&format!("id: {}", plain_id[0])), "{plain}");
    assert_eq!(list_field(&plain, "links"), [a_id.as_str()]);
    assert_eq!(split(&plain).1, "no frontmatter\n");
    // The same memory twice, or a file that is not markdown: nothing written.
    f.seed("notes/data.txt", "numbers\n");
    f.settle();
    let before = f.text(&a.to_string());
    assert!(f.ops.link_both(&a_id, &a.to_string()).is_err());
    assert!(f.ops.link_both(&a_id, "notes/data.txt").is_err());
    assert_eq!(f.text(&a.to_string()), before);
    assert_eq!(f.text("notes/data.txt"), "numbers\n");
}

#[test]
fn records_page_through_the_store_in_path_order_without_repeats() {
    let f = Fixture::new();
    let mut want: Vec<String> = [
        "a.md",
        "a-b.md",
        "a/x.md",
        "a/y/z.md",
        "a b/c.md",
        "archive/old.md",
        "b/c/d.md",
        "b.md",
        "inbox/new.md",
        "zz.md",
    ]
    .iter()
    .map(|p| p.to_string())
    .collect();
    for path in &want {
        f.seed(path, "---\ntitle: t\n---\nbody\n");
    }
    f.seed("a/notes.txt", "not a memory\n");
    f.seed(".git/x.md", "not a memory either\n");
    want.sort();
    for limit in [1, 2, 3, 100] {
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = f
                .ops
                .records(&ops::RecordFilter::default(), after.as_deref(), limit)
                .expect("a page");
            assert!(page.records.len() <= limit);
            seen.extend(page.records.into_iter().map(|r| r.path));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, want, "pages of {limit}");
    }
}

// ---------------------------------------------------------------------------
// Requests and responses.

/// Serializes `request`, parses it back, and runs it.
fn over_the_wire(f: &Fixture, request: Request) -> Result<Response, WireError> {
    let line = serde_json::to_string(&request).expect("serialize the request");
    let parsed: Request = serde_json::from_str(&line).expect("parse the request");
    assert_eq!(parsed, request, "{line}");
    let reply = match f.ops.handle(parsed) {
        Ok(response) => Reply::Ok(response),
        Err(e) => Reply::Error(WireError::from(&e)),
    };
    let line = serde_json::to_string(&reply).expect("serialize the reply");
    match serde_json::from_str::<Reply>(&line).expect("parse the reply") {
        Reply::Ok(response) => Ok(response),
        Reply::Error(e) => Err(e),
    }
}

#[test]
fn handle_runs_requests_that_went_through_json() {
    let f = Fixture::new();
    let done = over_the_wire(
        &f,
        Request::Create {
            path: "notes/a.md".into(),
            content: "alpha\nbeta\n".into(),
            overwrite: false,
        },
    );
    assert_eq!(done, Ok(Response::Done));
    let replaced = over_the_wire(
        &f,
        Request::StrReplace {
            path: "notes/a.md".into(),
            old: "beta".into(),
            new: "gamma".into(),
        },
    );
    assert_eq!(replaced, Ok(Response::Done));
    assert_eq!(
        over_the_wire(
            &f,
            Request::Insert {
                path: "notes/a.md".into(),
                line: 0,
                text: "top".into(),
            }
        ),
        Ok(Response::Done)
    );
    assert_eq!(
        over_the_wire(
            &f,
            Request::Read {
                path: "notes/a.md".into()
            }
        ),
        Ok(Response::Text {
            text: "top\nalpha\ngamma\n".into()
        })
    );
    let listed = over_the_wire(
        &f,
        Request::List {
            path: "".into(),
            depth: 2,
        },
    );
    match listed {
        Ok(Response::Entries { entries }) => assert_eq!(paths(&entries), ["notes", "notes/a.md"]),
        other => panic!("{other:?}"),
    }
    let written = over_the_wire(
        &f,
        Request::WriteMemory(NewMemory {
            category: Some("knowledge".into()),
            ..memory("Water boils at 100 C.\n", "Boiling")
        }),
    );
    let Ok(Response::Memory { path, id: Some(id) }) = written else {
        panic!("{written:?}");
    };
    assert_eq!(path, "knowledge/boiling.md");
    f.settle();
    assert_eq!(
        over_the_wire(
            &f,
            Request::Resolve {
                reference: "Boiling".into()
            }
        ),
        Ok(Response::Memory {
            path: path.clone(),
            id: Some(id),
        })
    );
    assert_eq!(
        over_the_wire(
            &f,
            Request::Rename {
                from: "notes/a.md".into(),
                to: "notes/b.md".into(),
            }
        ),
        Ok(Response::Done)
    );
    assert_eq!(
        over_the_wire(
            &f,
            Request::Delete {
                path: "notes".into()
            }
        ),
        Ok(Response::Done)
    );
    assert!(!f.p("notes").exists());
    let status = over_the_wire(&f, Request::Status);
    let Ok(Response::Status { status }) = status else {
        panic!("{status:?}");
    };
    assert_eq!(status.served_by, "local");
    assert_eq!(status.pid, None);
    assert!(!status.organizer);
    assert_eq!(status.store, f.root.path().display().to_string());
}

#[test]
fn a_failed_request_crosses_the_wire_with_its_errno_and_code() {
    let f = Fixture::new();
    let e = over_the_wire(
        &f,
        Request::Read {
            path: "missing.md".into(),
        },
    )
    .unwrap_err();
    assert_eq!(
        e,
        WireError {
            message: "missing.md: no such file or folder".into(),
            errno: libc::ENOENT,
            code: ops::rpc::NOT_FOUND,
        }
    );
}

#[test]
fn requests_parse_from_the_documented_json_with_defaults() {
    let parse = |json: &str| serde_json::from_str::<Request>(json);
    assert_eq!(
        parse(r#"{"op": "read", "path": "notes/a.md"}"#).expect("read"),
        Request::Read {
            path: "notes/a.md".into()
        }
    );
    assert_eq!(
        parse(r#"{"op": "list", "path": ""}"#).expect("list"),
        Request::List {
            path: "".into(),
            depth: 1
        }
    );
    assert_eq!(
        parse(r#"{"op": "search", "query": "dark"}"#).expect("search"),
        Request::Search {
            query: "dark".into(),
            limit: 20
        }
    );
    assert_eq!(
        parse(r#"{"op": "create", "path": "a.md", "content": "x"}"#).expect("create"),
        Request::Create {
            path: "a.md".into(),
            content: "x".into(),
            overwrite: false
        }
    );
    assert_eq!(
        parse(r#"{"op": "dream"}"#).expect("dream"),
        Request::Dream { level: 1 }
    );
    assert_eq!(
        parse(r#"{"op": "status"}"#).expect("status"),
        Request::Status
    );
    assert_eq!(
        parse(r#"{"op": "write_memory", "content": "x", "type": "note"}"#).expect("memory"),
        Request::WriteMemory(NewMemory {
            content: "x".into(),
            kind: Some("note".into()),
            ..NewMemory::default()
        })
    );
    // Typos are refused, not ignored.
    assert!(parse(r#"{"op": "read", "pth": "a.md"}"#).is_err());
    assert!(parse(r#"{"op": "read", "path": "a.md", "extra": 1}"#).is_err());
    assert!(parse(r#"{"op": "write_memory", "content": "x", "tag": ["a"]}"#).is_err());
    assert!(parse(r#"{"op": "frobnicate"}"#).is_err());
}

// ---------------------------------------------------------------------------
// Errors and limits.

#[test]
fn errors_map_to_the_errno_and_rpc_code_each_front_end_shows() {
    let f = Fixture::new();
    f.seed("a.md", "a a\n");
    f.seed("notes/b.md", "b\n");
    let cases: Vec<(ops::Result<()>, i32, i32)> = vec![
        (
            f.ops.read("nope.md").map(drop),
            libc::ENOENT,
            ops::rpc::NOT_FOUND,
        ),
        (
            f.ops.create("a.md", "x", false),
            libc::EEXIST,
            ops::rpc::EXISTS,
        ),
        (
            f.ops.read("notes").map(drop),
            libc::EISDIR,
            ops::rpc::INVALID_PARAMS,
        ),
        (
            f.ops.list("a.md", 1).map(drop),
            libc::ENOTDIR,
            ops::rpc::INVALID_PARAMS,
        ),
        (
            f.ops.read("../x").map(drop),
            libc::EINVAL,
            ops::rpc::INVALID_PARAMS,
        ),
        (
            f.ops.create("search/x/y.md", "x", false),
            libc::EROFS,
            ops::rpc::READ_ONLY,
        ),
        (
            f.ops.str_replace("a.md", "z", "y").map(drop),
            libc::EINVAL,
            ops::rpc::INVALID_PARAMS,
        ),
        (
            f.ops.str_replace("a.md", "a", "y").map(drop),
            libc::EINVAL,
            ops::rpc::INVALID_PARAMS,
        ),
        (
            f.ops.insert("a.md", 9, "y").map(drop),
            libc::EINVAL,
            ops::rpc::INVALID_PARAMS,
        ),
        (
            f.ops.dream(1).map(drop),
            libc::ENOTSUP,
            ops::rpc::UNAVAILABLE,
        ),
    ];
    for (i, (result, errno, code)) in cases.into_iter().enumerate() {
        let e = result.expect_err("an error");
        assert_eq!((e.errno(), e.rpc_code()), (errno, code), "case {i}: {e:?}");
        let wire = WireError::from(&e);
        assert_eq!((wire.errno, wire.code), (errno, code));
        assert_eq!(wire.message, e.to_string());
    }
    let io = Error::io("x.md", io::Error::from_raw_os_error(libc::ENOSPC));
    assert_eq!(
        (io.errno(), io.rpc_code()),
        (libc::ENOSPC, ops::rpc::INTERNAL)
    );
    assert!(!io.is_routine());
    let conflict = Error::Conflict { path: "x".into() };
    assert_eq!(
        (conflict.errno(), conflict.rpc_code()),
        (libc::EAGAIN, ops::rpc::CONFLICT)
    );
    assert!(conflict.is_routine());
}

#[test]
fn the_size_cap_refuses_big_writes_and_big_reads_with_too_big() {
    let root = tempfile::tempdir().expect("tempdir");
    let f = Fixture::on(root, |d| Arc::new(d), |ops| ops.with_max_file_size(10));
    f.ops
        .create("ten.md", "0123456789", false)
        .expect("at the cap");
    let e = f.ops.create("eleven.md", "0123456789a", false).unwrap_err();
    assert!(
        matches!(&e, Error::TooBig { path, limit: 10 } if path == "eleven.md"),
        "{e:?}"
    );
    assert_eq!(
        (e.errno(), e.rpc_code()),
        (libc::EFBIG, ops::rpc::INVALID_PARAMS)
    );
    assert!(!f.p("eleven.md").exists());
    f.seed("big.md", "0123456789abcdef");
    let e = f.ops.read("big.md").unwrap_err();
    assert!(matches!(e, Error::TooBig { limit: 10, .. }), "{e:?}");
    // An edit that would grow the file past the cap changes nothing.
    let e = f.ops.str_replace("ten.md", "9", "9ab").unwrap_err();
    assert!(matches!(e, Error::TooBig { .. }), "{e:?}");
    let e = f.ops.insert("ten.md", 1, "more").unwrap_err();
    assert!(matches!(e, Error::TooBig { .. }), "{e:?}");
    assert_eq!(f.text("ten.md"), "0123456789");
}

// ---------------------------------------------------------------------------
// Compare-and-swap.

/// The store writer, except that one path is always open for writing.
#[derive(Debug)]
struct BusyOn {
    inner: DirectWriter,
    busy: StorePath,
}

impl Writer for BusyOn {
    fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
        if *path == self.busy {
            return Ok(Outcome::Busy);
        }
        self.inner.replace(path, expected, new)
    }
    fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        self.inner.write(path, content)
    }
    fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
        self.inner.create(path, content)
    }
    fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
        if *from == self.busy {
            return Ok(Outcome::Busy);
        }
        self.inner.move_to(from, to)
    }
    fn remove_file(&self, path: &StorePath) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
        self.inner.remove_folder(path)
    }
    fn is_busy(&self, path: &StorePath) -> bool {
        *path == self.busy
    }
    fn describe(&self) -> String {
        format!("busy on {}", self.busy)
    }
}

#[test]
fn an_edit_of_a_file_open_for_writing_is_a_conflict_and_changes_nothing() {
    let f = Fixture::with_writer(|inner| {
        Arc::new(BusyOn {
            inner,
            busy: StorePath::new("notes/a.md").expect("path"),
        })
    });
    f.seed("notes/a.md", "one\ntwo\n");
    f.seed("notes/b.md", "one\ntwo\n");
    let e = f.ops.str_replace("notes/a.md", "two", "2").unwrap_err();
    assert!(
        matches!(&e, Error::Conflict { path } if path == "notes/a.md"),
        "{e:?}"
    );
    assert_eq!(
        (e.errno(), e.rpc_code()),
        (libc::EAGAIN, ops::rpc::CONFLICT)
    );
    let e = f.ops.insert("notes/a.md", 0, "zero").unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e:?}");
    let e = f.ops.rename("notes/a.md", "notes/c.md").unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e:?}");
    assert_eq!(f.bytes("notes/a.md"), b"one\ntwo\n");
    assert!(!f.p("notes/c.md").exists());
    // Another file is edited as usual.
    f.ops
        .str_replace("notes/b.md", "two", "2")
        .expect("replace");
    assert_eq!(f.text("notes/b.md"), "one\n2\n");
    assert!(f.ops.status().writer.contains("busy on notes/a.md"));
}

#[test]
fn an_edit_of_a_file_changed_since_it_was_read_is_a_conflict() {
    // The store writer's compare-and-swap itself: a writer that changes
    // the file between every read and replace. The edit is run again on
    // the file as it is then, a few times, and is then a conflict.
    #[derive(Debug)]
    struct ChangesUnderfoot {
        inner: DirectWriter,
        root: PathBuf,
    }
    impl Writer for ChangesUnderfoot {
        fn replace(&self, path: &StorePath, expected: &[u8], new: &[u8]) -> io::Result<Outcome> {
            let file = self.root.join(path.as_path());
            let mut now = fs::read(&file)?;
            now.extend_from_slice(b"someone else\n");
            fs::write(&file, now)?;
            self.inner.replace(path, expected, new)
        }
        fn write(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
            self.inner.write(path, content)
        }
        fn create(&self, path: &StorePath, content: &[u8]) -> io::Result<()> {
            self.inner.create(path, content)
        }
        fn move_to(&self, from: &StorePath, to: &StorePath) -> io::Result<Outcome> {
            self.inner.move_to(from, to)
        }
        fn remove_file(&self, path: &StorePath) -> io::Result<()> {
            self.inner.remove_file(path)
        }
        fn remove_folder(&self, path: &StorePath) -> io::Result<()> {
            self.inner.remove_folder(path)
        }
        fn is_busy(&self, path: &StorePath) -> bool {
            self.inner.is_busy(path)
        }
        fn describe(&self) -> String {
            self.inner.describe()
        }
    }
    let root = tempfile::tempdir().expect("tempdir");
    let at = root.path().to_path_buf();
    let f = Fixture::on(
        root,
        |inner| Arc::new(ChangesUnderfoot { inner, root: at }),
        |ops| ops,
    );
    f.seed("a.md", "mine\n");
    let e = f.ops.str_replace("a.md", "mine", "ours").unwrap_err();
    assert!(matches!(e, Error::Conflict { .. }), "{e:?}");
    assert!(
        f.text("a.md").starts_with("mine\nsomeone else\n"),
        "{}",
        f.text("a.md")
    );
    assert_eq!(files_below(f.root.path()), ["a.md"], "a temp file was left");
}

// ---------------------------------------------------------------------------
// dream, reindex and status through the operations.

fn organized_fixture() -> Fixture {
    let root = tempfile::tempdir().expect("tempdir");
    let mut organizer = None;
    let f = Fixture::on(
        root,
        |d| {
            let writer: Arc<dyn Writer> = Arc::new(d);
            organizer = Some(Arc::clone(&writer));
            writer
        },
        |ops| ops,
    );
    let writer = organizer.expect("the writer");
    let (config, warnings) =
        Config::from_yaml("notifications: { method: none }\n").expect("config");
    assert!(warnings.is_empty(), "{warnings:?}");
    let one_shot = OneShot::new(Setup {
        writer: Arc::clone(&writer),
        store: Arc::clone(&f.store),
        index: f.index.clone(),
        counters: None,
        config,
        outputs: f.views.task_outputs(),
        state_dir: None,
        history: None,
    });
    let ops = Operations::new(
        Arc::clone(&f.store),
        f.index.clone(),
        f.views.clone(),
        writer,
        ServedBy::Local,
    )
    .with_organizer(Arc::new(one_shot));
    Fixture { ops, ..f }
}

#[test]
fn dream_through_the_operations_runs_the_organizer_and_reports() {
    let f = organized_fixture();
    f.seed("inbox/ui.md", "I prefer dark mode\n");
    for level in [0, 4] {
        let e = f.ops.dream(level).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "level {level}: {e:?}");
    }
    let report = over_the_wire(&f, Request::Dream { level: 1 });
    let Ok(Response::Report { report }) = report else {
        panic!("{report:?}");
    };
    assert_eq!((report.level, report.organized), (1, 1), "{report:?}");
    assert!(f.p("preferences/ui.md").exists());
    assert!(!f.p("inbox/ui.md").exists());
    let status = f.ops.status();
    assert!(status.organizer);
    assert_eq!(status.tasks["dream-1"].organized, 1);
}

#[test]
fn reindex_counts_the_files_written_behind_the_operations() {
    let f = Fixture::new();
    f.settle();
    f.seed("notes/a.md", "alpha quokka\n");
    f.seed("notes/b.md", "beta\n");
    assert_eq!(f.ops.reindex().expect("reindex"), 2);
    let hits = f.ops.search("quokka", 10).expect("search");
    assert_eq!(
        hits.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(),
        ["notes/a.md"]
    );
    assert_eq!(f.ops.status().documents, 2);
}

#[test]
fn reads_of_memories_are_counted_and_listings_are_not() {
    let counters = Arc::new(mnemofs::store::counters::CounterStore::in_memory());
    let root = tempfile::tempdir().expect("tempdir");
    let shared = Arc::clone(&counters);
    let f = Fixture::on(
        root,
        |direct| Arc::new(direct),
        move |ops| ops.with_counters(shared),
    );
    f.seed("notes/a.md", "---\ntitle: Alpha\n---\nbody\n");
    f.index
        .notify_paths(&[StorePath::new("notes/a.md").expect("path")]);
    f.settle();
    let count = || {
        counters
            .get(&StorePath::new("notes/a.md").expect("path"))
            .access_count
    };
    f.ops.list("notes", 2).expect("list");
    f.ops.search("body", 10).expect("search");
    assert_eq!(count(), 0, "listing and searching are not reads");
    f.ops.read("notes/a.md").expect("read");
    f.ops.read_memory_text("Alpha").expect("read by title");
    assert_eq!(count(), 2);
}

#[test]
fn a_search_request_answers_hits_and_how_its_query_was_read() {
    let f = Fixture::new();
    f.seed(
        "notes/quokka.md",
        "# Quokka\n\nA quokka smiled at the camera.\n",
    );
    // Written behind the index's back: the start-up reconcile may have
    // walked the store before the file was there, so it is told, as a
    // daemon's store watcher would tell it.
    f.index
        .notify_paths(&[StorePath::new("notes/quokka.md").expect("path")]);
    f.settle();
    let search = |query: &str| match f
        .ops
        .handle(Request::Search {
            query: query.into(),
            limit: 10,
        })
        .expect("search")
    {
        Response::Hits { hits, warnings, .. } => (
            hits.into_iter().map(|h| h.path).collect::<Vec<_>>(),
            warnings,
        ),
        other => panic!("not hits: {other:?}"),
    };
    assert_eq!(
        search("quokka"),
        (vec!["notes/quokka.md".to_string()], vec![])
    );
    let (hits, warnings) = search("nosuchfield:x quokka limit:5");
    assert_eq!(hits, ["notes/quokka.md"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("`nosuchfield:`"), "{warnings:?}");
    let (_, warnings) = search("quokka created:>notadate");
    assert!(
        warnings[0].contains("`notadate` is not a date"),
        "{warnings:?}"
    );
}

// ---------------------------------------------------------------------------
// Read your writes: the next request sees what the last one changed.

#[test]
fn every_change_is_seen_by_the_very_next_request() {
    let f = Fixture::new();
    let search = |query: &str| -> Vec<String> {
        match f.ops.handle(Request::Search {
            query: query.into(),
            limit: 10,
        }) {
            Ok(Response::Hits { hits, .. }) => hits.into_iter().map(|h| h.path).collect(),
            other => panic!("not hits: {other:?}"),
        }
    };
    let read = |reference: &str| {
        f.ops.handle(Request::ReadMemory {
            reference: reference.into(),
        })
    };
    for round in 0..8 {
        let word = format!("quasar{round}");
        let Response::Memory { path, id } = f
            .ops
            .handle(Request::WriteMemory(memory(
                &format!("The {word} note."),
                &format!("Round {round}"),
            )))
            .expect("write")
        else {
            panic!("not a memory");
        };
        let id = id.expect("an id");
        assert!(read(&id).is_ok(), "read by id {id} at once");
        assert!(read(&format!("Round {round}")).is_ok(), "read by title");
        assert_eq!(search(&word), std::slice::from_ref(&path), "search at once");
        let moved = format!("moved/round-{round}.md");
        f.ops
            .handle(Request::Rename {
                from: path.clone(),
                to: moved.clone(),
            })
            .expect("move");
        assert_eq!(
            search(&word),
            std::slice::from_ref(&moved),
            "search after the move"
        );
        assert!(read(&id).is_ok(), "read by id after the move");
        f.ops
            .handle(Request::Delete {
                path: moved.clone(),
            })
            .expect("delete");
        assert!(search(&word).is_empty(), "search after the delete");
        assert!(read(&id).is_err(), "read by id after the delete");
    }
    // A link, then its backlinks.
    for (content, title) in [("Alpha body.", "Alpha"), ("Beta body.", "Beta")] {
        f.ops
            .handle(Request::WriteMemory(memory(content, title)))
            .expect("write");
    }
    f.ops
        .handle(Request::Link {
            from: "Beta".into(),
            to: "Alpha".into(),
            both: false,
        })
        .expect("link");
    let answer = f
        .ops
        .handle(Request::Backlinks {
            reference: "Alpha".into(),
            limit: 10,
        })
        .expect("backlinks");
    assert!(format!("{answer:?}").contains("beta"), "{answer:?}");
}

#[test]
fn a_decision_written_with_its_status_is_in_the_brief() {
    let f = Fixture::new();
    f.ops
        .handle(Request::WriteMemory(NewMemory {
            kind: Some("decision".into()),
            status: Some("open".into()),
            ..memory(
                "Postgres or SQLite for the importer?",
                "Pick the importer's database",
            )
        }))
        .expect("write");
    let text = match f
        .ops
        .handle(Request::Brief {
            cwd: None,
            within: None,
        })
        .expect("brief")
    {
        Response::Brief { brief } => brief.to_markdown(),
        other => panic!("not a brief: {other:?}"),
    };
    assert!(text.contains("Pick the importer's database"), "{text}");
}

/// One step an agent takes through the tools (MCP's and the socket's
/// table), on the memory numbered `0` modulo how many exist.
#[derive(Clone, Debug)]
enum ToolStep {
    Write,
    Edit(usize),
    Move(usize),
    Delete(usize),
}

fn tool_step() -> impl proptest::strategy::Strategy<Value = ToolStep> {
    use proptest::prelude::*;
    prop_oneof![
        3 => Just(ToolStep::Write),
        2 => any::<usize>().prop_map(ToolStep::Edit),
        2 => any::<usize>().prop_map(ToolStep::Move),
        1 => any::<usize>().prop_map(ToolStep::Delete),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]

    /// Whatever the tools change, the very next request through the
    /// operations (as the CLI and the mount's control socket ask) sees:
    /// every memory found by its word and read by its id where it is now,
    /// every deleted one gone, with no wait between the two.
    #[test]
    fn what_the_tools_change_the_next_request_sees(steps in proptest::collection::vec(tool_step(), 1..14)) {
        let f = Fixture::new();
        let tool = |name: &str, args: serde_json::Value| {
            tool(&f.ops, name, args).expect("the tool answers")
        };
        // id -> (path, word); and the words of deleted memories.
        let mut live: BTreeMap<String, (String, String)> = BTreeMap::new();
        let mut gone: Vec<String> = Vec::new();
        for (n, step) in steps.iter().enumerate() {
            let pick = |i: usize| live.keys().nth(i % live.len().max(1)).cloned();
            match step {
                ToolStep::Write => {
                    let word = format!("kumquat{n}x");
                    let answer = tool("write", serde_json::json!({
                        "content": format!("A note about {word}."),
                        "title": format!("Note {n}"),
                    }));
                    let id = answer.structured["id"].as_str().expect("an id").to_owned();
                    let path = answer.structured["path"].as_str().expect("a path").to_owned();
                    live.insert(id, (path, word));
                }
                ToolStep::Edit(i) => {
                    let Some(id) = pick(*i) else { continue };
                    let word = format!("loquat{n}x");
                    let old = live[&id].1.clone();
                    tool("edit", serde_json::json!({"ref": id, "old_str": old, "new_str": word}));
                    gone.push(old);
                    live.get_mut(&id).expect("live").1 = word;
                }
                ToolStep::Move(i) => {
                    let Some(id) = pick(*i) else { continue };
                    let to = format!("moved/step-{n}.md");
                    tool("move", serde_json::json!({"ref": id, "to": to}));
                    live.get_mut(&id).expect("live").0 = to;
                }
                ToolStep::Delete(i) => {
                    let Some(id) = pick(*i) else { continue };
                    tool("delete", serde_json::json!({"ref": id}));
                    let (_, word) = live.remove(&id).expect("live");
                    gone.push(word);
                }
            }
            for (id, (path, word)) in &live {
                let hits = match f.ops.handle(Request::Search { query: word.clone(), limit: 10 }) {
                    Ok(Response::Hits { hits, .. }) => hits,
                    other => panic!("not hits: {other:?}"),
                };
                let found: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
                proptest::prop_assert_eq!(found, vec![path.as_str()], "search {} after {:?}", word, step);
                let read = f.ops.handle(Request::ReadMemory { reference: id.clone() });
                proptest::prop_assert!(
                    matches!(&read, Ok(Response::MemoryText { memory }) if memory.path == *path),
                    "read {} after {:?}: {:?}", id, step, read
                );
            }
            for word in &gone {
                let hits = match f.ops.handle(Request::Search { query: word.clone(), limit: 10 }) {
                    Ok(Response::Hits { hits, .. }) => hits,
                    other => panic!("not hits: {other:?}"),
                };
                proptest::prop_assert!(hits.is_empty(), "{} still found after {:?}: {:?}", word, step, hits);
            }
        }
    }
}

#[test]
fn errors_name_their_fix() {
    let f = Fixture::new();
    // A category that is not one lists the categories.
    let err = f
        .ops
        .handle(Request::WriteMemory(NewMemory {
            category: Some("work".into()),
            ..memory("x", "X")
        }))
        .expect_err("not a category");
    let message = err.to_string();
    assert!(message.contains("unknown category `work`"), "{message}");
    assert!(message.contains("decisions, lessons"), "{message}");
    // The write tool on a taken path says how to replace it.
    let write = serde_json::json!({"content": "one", "path": "notes/a.md"});
    tool(&f.ops, "write", write.clone()).expect("first write");
    let fail = tool(&f.ops, "write", write).expect_err("taken");
    assert!(
        fail.message.contains("expected_version"),
        "{}",
        fail.message
    );
}

#[test]
fn the_tools_edit_the_body_that_read_shows_and_read_shows_the_frontmatter() {
    let f = Fixture::new();
    let call = |name: &str, v: serde_json::Value| tool(&f.ops, name, v);
    // No title given: the first words of the content become it.
    let written = call(
        "write",
        serde_json::json!({"content": "Ship the importer on Friday.\n", "type": "task", "status": "open"}),
    )
    .expect("write");
    let id = written.structured["id"].as_str().expect("id").to_owned();
    let read = call("read", serde_json::json!({"ref": id})).expect("read");
    assert!(read.text.contains("---\n"), "{}", read.text);
    assert!(read.text.contains("status: open"), "{}", read.text);
    assert!(
        read.text.contains("Ship the importer on Friday."),
        "{}",
        read.text
    );
    // The phrase is in the title too; in the body it is once.
    call(
        "edit",
        serde_json::json!({"ref": id, "old_str": "on Friday", "new_str": "on Monday"}),
    )
    .expect("edit the body");
    let read = call("read", serde_json::json!({"ref": id})).expect("read");
    assert!(
        read.text.contains("Ship the importer on Monday."),
        "{}",
        read.text
    );
}

#[test]
fn the_edit_tool_sets_frontmatter_fields_by_name() {
    let f = Fixture::new();
    let call = |name: &str, v: serde_json::Value| tool(&f.ops, name, v);
    let written = call(
        "write",
        serde_json::json!({"content": "Postgres or SQLite?\n", "title": "Pick the database", "type": "decision", "status": "open"}),
    )
    .expect("write");
    let id = written.structured["id"].as_str().expect("id").to_owned();
    call(
        "edit",
        serde_json::json!({"ref": id, "set": {"status": "accepted", "priority": 2}}),
    )
    .expect("set");
    let read = call("read", serde_json::json!({"ref": id})).expect("read");
    assert_eq!(read.structured["frontmatter"]["status"], "accepted");
    assert!(read.text.contains("priority: 2"), "{}", read.text);
    assert!(read.text.contains("Postgres or SQLite?"), "{}", read.text);
    let refused = call("edit", serde_json::json!({"ref": id, "set": {"id": "x"}}));
    assert!(refused.is_err(), "{refused:?}");
}

// ---------------------------------------------------------------------------
// Scopes are a wall: nothing of another agent's is readable, inferable or
// changeable.

fn scope(name: &str) -> Option<ops::Scope> {
    Some(ops::Scope::parse(name).expect("scope"))
}

/// Operations keeping earlier versions, as a daemon does.
fn fixture_with_history() -> (Fixture, tempfile::TempDir) {
    use mnemofs::store::history::{History, HistorySettings};
    let state = tempfile::tempdir().expect("state");
    let history =
        Arc::new(History::open(state.path(), HistorySettings::default()).expect("history"));
    let root = tempfile::tempdir().expect("tempdir");
    let kept = Arc::clone(&history);
    let f = Fixture::on(
        root,
        |d| Arc::new(d.with_history(kept)),
        |ops| ops.with_history(history),
    );
    (f, state)
}

#[test]
fn a_scoped_restore_never_replaces_a_memory_the_caller_cannot_see() {
    let (f, _state) = fixture_with_history();
    let (alice, bob) = (
        f.ops.scoped(scope("agent:alice")),
        f.ops.scoped(scope("agent:bob")),
    );
    for (first, second, first_words, second_words) in [
        (&bob, &alice, "bob's draft", "alice's plan"),
        (&alice, &bob, "alice's draft", "bob's plan"),
    ] {
        first
            .create("shared/todo.md", &format!("# Todo\n{first_words}\n"), false)
            .expect("the first agent writes");
        first.delete("shared/todo.md").expect("and deletes");
        second
            .create(
                "shared/todo.md",
                &format!("# Todo\n{second_words}\n"),
                false,
            )
            .expect("the second agent writes the same path");
        f.settle();
        let e = first.restore("shared/todo.md", None).unwrap_err();
        assert!(matches!(e, Error::Exists { .. }), "{e:?}");
        let text = second
            .read("shared/todo.md")
            .expect("still there for its owner");
        assert!(text.contains(second_words), "{text}");
        assert!(!f.text("shared/todo.md").contains(first_words));
        // Whichever version it names.
        for version in first.history("shared/todo.md").expect("its own versions") {
            assert!(
                first
                    .restore("shared/todo.md", Some(version.version))
                    .is_err()
            );
        }
        assert!(f.text("shared/todo.md").contains(second_words));
        second.delete("shared/todo.md").expect("clean up");
        f.settle();
    }
}

#[test]
fn hidden_matches_leave_no_gap_in_ranks_and_no_trace_in_views() {
    let f = Fixture::new();
    f.seed(
        "01-alice-note.md",
        "---\nscope: agent:alice\ntags: [orchard]\ntype: secretplan\n---\n# Alice\npineapplesecret curious\n",
    );
    f.seed(
        "02-bob-note.md",
        "---\nscope: agent:bob\n---\n# Bob\ncurious and open\n",
    );
    f.index.notify_path(&StorePath::root());
    f.settle();
    let bob = f.ops.scoped(scope("agent:bob"));
    let listed = |path: &str| -> Vec<String> {
        bob.list(path, 1)
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.path)
            .collect()
    };
    for query in ["pineapplesecret OR curious", "curious"] {
        let hits = listed(&format!("search/{query}"));
        assert_eq!(
            hits,
            [
                format!("search/{query}/01-02-bob-note.md"),
                format!("search/{query}/summary.md")
            ],
            "{query}"
        );
        let summary = bob
            .read(&format!("search/{query}/summary.md"))
            .expect("summary");
        assert!(!summary.contains("alice"), "{summary}");
    }
    assert_eq!(listed("recent"), ["recent/01-02-bob-note.md"]);
    assert!(!listed("by-tag").iter().any(|t| t.contains("orchard")));
    assert!(!listed("by-type").iter().any(|t| t.contains("secretplan")));
    assert!(bob.list("by-tag/orchard", 1).is_err());
    // Unscoped, both are there.
    let all = f.ops.list("search/curious", 1).expect("list");
    assert_eq!(all.len(), 3, "{all:?}");
}

#[test]
fn merging_duplicates_never_crosses_scopes() {
    let f = organized_fixture();
    let body = "The kickoff is on Monday at nine, in room four.\n";
    f.seed(
        "notes/kickoff.md",
        &format!("---\nid: 11111111-1111-4111-8111-111111111111\nscope: agent:alice\n---\n{body}"),
    );
    f.seed(
        "notes/bob-kickoff.md",
        &format!("---\nid: 22222222-2222-4222-8222-222222222222\nscope: agent:bob\n---\n{body}"),
    );
    f.index.notify_path(&StorePath::root());
    f.settle();
    let report = f.ops.dream(2).expect("dream");
    assert_eq!(report.merged, 0, "{report:?}");
    assert!(f.p("notes/kickoff.md").is_file());
    assert!(f.p("notes/bob-kickoff.md").is_file());
    assert!(!f.text("notes/bob-kickoff.md").contains("merged_into"));
}

#[test]
fn a_scoped_delete_of_a_folder_holding_hidden_memories_says_why_and_keeps_them() {
    let f = Fixture::new();
    f.seed(
        "notes/a.md",
        "---\nscope: agent:alice\n---\n# Alice\nsecret\n",
    );
    f.seed("notes/g.md", "# Open\nshared\n");
    f.index.notify_path(&StorePath::root());
    f.settle();
    let bob = f.ops.scoped(scope("agent:bob"));
    let answer = tool(
        &bob,
        "memory",
        serde_json::json!({"command": "delete", "path": "/memories/notes"}),
    );
    let text = format!("{answer:?}");
    assert!(text.contains("holds memories of other scopes"), "{text}");
    assert!(f.p("notes/a.md").is_file() && f.p("notes/g.md").is_file());
    // Nor may it hand the open memory to another agent, and it says why.
    let answer = tool(
        &bob,
        "memory",
        serde_json::json!({"command": "str_replace", "path": "/memories/notes/g.md",
            "old_str": "# Open", "new_str": "---\nscope: agent:alice\n---\n# Open"}),
    );
    let text = format!("{answer:?}");
    assert!(
        text.contains("cannot write a memory scoped to agent:alice"),
        "{text}"
    );
    assert_eq!(f.text("notes/g.md"), "# Open\nshared\n");
}

#[test]
fn a_path_too_long_for_the_system_is_refused_before_any_folder_is_made() {
    let f = Fixture::new();
    let path = format!("{}x.md", "a/".repeat(2048));
    let e = f.ops.create(&path, "hi\n", false).unwrap_err();
    assert_eq!(e.errno(), libc::ENAMETOOLONG, "{e:?}");
    assert!(!f.p("a").exists(), "a folder was made on the way");
    let answer = tool(
        &f.ops,
        "memory",
        serde_json::json!({"command": "create", "path": format!("/memories/{path}"), "file_text": "hi"}),
    );
    assert!(
        format!("{answer:?}").contains("File name too long"),
        "{answer:?}"
    );
    assert!(!f.p("a").exists());
    // Short enough, but deeper than mnemofs follows: refused too.
    let deep = format!("{}x.md", "d/".repeat(101));
    let e = f.ops.create(&deep, "hi\n", false).unwrap_err();
    assert!(e.to_string().contains("more than 100 folders deep"), "{e}");
    assert!(!f.p("d").exists());
    f.ops
        .create(&format!("{}x.md", "d/".repeat(100)), "hi\n", false)
        .expect("100 deep");
    // A tree made deeper on disk is not walked below the limit.
    let mut below = f.p(&"d/".repeat(100));
    for _ in 0..50 {
        below.push("e");
    }
    std::fs::create_dir_all(&below).expect("deeper on disk");
    std::fs::write(below.join("y.md"), "deeper\n").expect("file");
    // Made there by another program, it is read as any file is.
    let deeper = format!("{}{}y.md", "d/".repeat(100), "e/".repeat(50));
    assert_eq!(f.ops.read(&deeper).expect("read"), "deeper\n");
    f.index.notify_path(&StorePath::root());
    f.settle();
    assert!(f.ops.search("deeper", 10).expect("search").is_empty());
    assert_eq!(f.ops.search("hi", 10).expect("search").len(), 1);
}

/// Two agents share a store. Through every tool the agents' front ends
/// offer (MCP's and the socket's table, the memory tool), bob can neither
/// read, infer nor change alice's memory, by any name it has: its path,
/// id, title or alias. Each answer is the one a memory that does not exist
/// at all gets, and alice's file is left byte for byte.
#[test]
fn scope_suite_nothing_of_another_agent_is_readable_inferable_or_changeable() {
    let (f, _state) = fixture_with_history();
    let secret = "---\nid: aaaaaaaa-1111-4111-8111-111111111111\ntitle: Alice Orchard Plan\naliases: [hushplan]\ntags: [orchard]\nscope: agent:alice\n---\npineapplesecret grows here, see [[Shared Board]]\n";
    f.seed("notes/plan.md", secret);
    f.seed(
        "notes/board.md",
        "---\nid: bbbbbbbb-2222-4222-8222-222222222222\ntitle: Shared Board\n---\ncurious things for everyone\n",
    );
    f.index.notify_path(&StorePath::root());
    f.settle();
    let bob = f.ops.scoped(scope("agent:bob"));
    // The same name shapes, for a memory that does not exist.
    let names = [
        ("notes/plan.md", "notes/absent.md"),
        (
            "aaaaaaaa-1111-4111-8111-111111111111",
            "cccccccc-3333-4333-8333-333333333333",
        ),
        ("Alice Orchard Plan", "Nobody Wrote This"),
        ("hushplan", "nosuchalias"),
    ];
    let calls = |name: &str| -> Vec<(&'static str, serde_json::Value)> {
        vec![
            ("read", serde_json::json!({"ref": name})),
            (
                "edit",
                serde_json::json!({"ref": name, "old_str": "pineapplesecret", "new_str": "x"}),
            ),
            (
                "edit",
                serde_json::json!({"ref": name, "set": {"status": "done"}}),
            ),
            (
                "move",
                serde_json::json!({"ref": name, "to": "notes/stolen.md"}),
            ),
            ("delete", serde_json::json!({"ref": name})),
            (
                "link",
                serde_json::json!({"from": "Shared Board", "to": name}),
            ),
            (
                "link",
                serde_json::json!({"from": name, "to": "Shared Board"}),
            ),
            (
                "unlink",
                serde_json::json!({"from": name, "to": "Shared Board"}),
            ),
            ("tag", serde_json::json!({"ref": name, "tags": ["mine"]})),
            ("context", serde_json::json!({"ref": name})),
            ("backlinks", serde_json::json!({"ref": name})),
            ("history", serde_json::json!({"ref": name})),
            ("restore", serde_json::json!({"ref": name})),
            ("memory_read", serde_json::json!({"id": name})),
            ("memory_delete", serde_json::json!({"id": name})),
        ]
    };
    let shown =
        |r: &Result<mnemofs::front::tools::Answer, mnemofs::front::tools::Fail>| format!("{r:?}");
    for (hidden, absent) in names {
        for ((tool_name, args), (_, absent_args)) in calls(hidden).into_iter().zip(calls(absent)) {
            let got = shown(&tool(&bob, tool_name, args.clone()));
            let baseline = shown(&tool(&bob, tool_name, absent_args)).replace(absent, hidden);
            assert!(
                baseline.contains("Err")
                    || baseline.contains("is_error: true")
                    || tool_name == "backlinks"
                    || tool_name == "history",
                "{tool_name}: {baseline}"
            );
            assert_eq!(
                got, baseline,
                "{tool_name} {args}: answered unlike a missing memory"
            );
            for leak in [
                "pineapplesecret",
                "Alice Orchard Plan",
                "aaaaaaaa-1111",
                "orchard",
            ] {
                if !hidden.contains(leak) && !leak.contains(hidden) {
                    assert!(
                        !got.contains(leak),
                        "{tool_name} {args} leaked {leak}: {got}"
                    );
                }
            }
            assert_eq!(
                f.text("notes/plan.md"),
                secret,
                "{tool_name} {args} changed it"
            );
        }
    }
    // Lists and searches never show it, nor leave a gap or count for it.
    for (tool_name, args) in [
        (
            "search",
            serde_json::json!({"query": "pineapplesecret OR curious"}),
        ),
        ("list", serde_json::json!({})),
        ("recent", serde_json::json!({})),
        ("backlinks", serde_json::json!({"ref": "Shared Board"})),
        ("context", serde_json::json!({"ref": "Shared Board"})),
        ("trash", serde_json::json!({})),
        (
            "memory_search",
            serde_json::json!({"query": "pineapplesecret"}),
        ),
        ("memory_list", serde_json::json!({})),
        (
            "memory",
            serde_json::json!({"command": "view", "path": "/memories/notes"}),
        ),
        (
            "memory",
            serde_json::json!({"command": "view", "path": "/memories/search/pineapplesecret OR curious"}),
        ),
        (
            "memory",
            serde_json::json!({"command": "view", "path": "/memories/by-tag"}),
        ),
    ] {
        let got = shown(&tool(&bob, tool_name, args.clone()));
        for leak in [
            "pineapplesecret",
            "Alice Orchard Plan",
            "aaaaaaaa-1111",
            "plan.md",
            "orchard",
            "02-",
        ] {
            // A word of the query itself is echoed back, as for any query.
            if args.to_string().contains(leak) {
                continue;
            }
            assert!(
                !got.contains(leak),
                "{tool_name} {args} leaked {leak}: {got}"
            );
        }
    }
    // Writing onto its path: taken, as any path is; nothing changes.
    let wrote = shown(&tool(
        &bob,
        "write",
        serde_json::json!({"path": "notes/plan.md", "content": "mine"}),
    ));
    let taken = shown(&tool(
        &bob,
        "write",
        serde_json::json!({"path": "notes/board.md", "content": "mine"}),
    ));
    assert!(taken.contains("already exists"), "{taken}");
    assert_eq!(
        wrote.replace("plan.md", "X"),
        taken.replace("board.md", "X")
    );
    assert_eq!(f.text("notes/plan.md"), secret);
}
