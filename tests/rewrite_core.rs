//! The background rewrite's steps on `StoreFs`, without a kernel: the
//! mount writer exchanges a temp file with the memory, then removes the
//! old inode under the temp name. A writer may reach the daemon holding
//! the old inode at any point of that; whatever it writes must land in
//! the memory, never in the old inode on its way out.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

use mnemofs::fs::{AttrChanges, FsOptions, ROOT_INO, Requester, StoreFs};
use mnemofs::store::{Store, StorePath};

const ME: Requester = Requester { uid: 0, gid: 0 };
const TMP: &str = ".mnemofs-tmp-0123456789abcdef";

fn setup() -> (tempfile::TempDir, Arc<StoreFs>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(dir.path()).expect("store"));
    let fs = StoreFs::new(store, FsOptions::default()).expect("fs");
    (dir, Arc::new(fs))
}

/// Creates `name` at the root with `content` through the filesystem.
fn put(fs: &StoreFs, name: &str, content: &[u8]) -> u64 {
    let (entry, opened) = fs
        .create(ROOT_INO, OsStr::new(name), 0o644, libc::O_WRONLY, ME)
        .expect("create");
    fs.write(opened.fh, 0, content).expect("write");
    fs.release(opened.fh).expect("release");
    entry.ino
}

/// A writer holding `ino` (looked up before the rewrite) appends `line`.
fn append(fs: &StoreFs, ino: u64, line: &[u8]) {
    let opened = fs
        .open(ino, libc::O_WRONLY | libc::O_APPEND, 1)
        .expect("open for append");
    fs.write(opened.fh, 0, line).expect("append");
    fs.release(opened.fh).expect("release");
}

#[test]
fn an_append_to_the_old_inode_between_exchange_and_cleanup_reaches_the_memory() {
    let (dir, fs) = setup();
    let old = put(&fs, "f.md", b"body\n");
    put(&fs, TMP, b"---\nid: x\n---\nbody\n");
    let path = StorePath::new("f.md").unwrap();
    let guard = fs.begin_replace(&path).expect("nobody writes f.md");
    fs.rename(
        ROOT_INO,
        OsStr::new(TMP),
        ROOT_INO,
        OsStr::new("f.md"),
        mnemofs::store::RENAME_EXCHANGE,
    )
    .expect("exchange");
    // The writer arrives with the old inode, now under the temp name,
    // while the rewrite is finishing on another thread.
    let writer = {
        let fs = Arc::clone(&fs);
        std::thread::spawn(move || append(&fs, old, b"appended\n"))
    };
    std::thread::sleep(Duration::from_millis(100));
    fs.unlink(ROOT_INO, OsStr::new(TMP)).expect("cleanup");
    drop(guard);
    writer.join().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.md")).unwrap(),
        "---\nid: x\n---\nbody\nappended\n"
    );
}

#[test]
fn an_append_to_the_old_inode_after_the_rewrite_reaches_the_memory() {
    let (dir, fs) = setup();
    let old = put(&fs, "f.md", b"body\n");
    put(&fs, TMP, b"---\nid: x\n---\nbody\n");
    let path = StorePath::new("f.md").unwrap();
    let guard = fs.begin_replace(&path).expect("nobody writes f.md");
    fs.rename(
        ROOT_INO,
        OsStr::new(TMP),
        ROOT_INO,
        OsStr::new("f.md"),
        mnemofs::store::RENAME_EXCHANGE,
    )
    .expect("exchange");
    fs.unlink(ROOT_INO, OsStr::new(TMP)).expect("cleanup");
    drop(guard);
    // The user then renames the memory; the late writer follows it.
    fs.rename(
        ROOT_INO,
        OsStr::new("f.md"),
        ROOT_INO,
        OsStr::new("g.md"),
        0,
    )
    .expect("rename");
    append(&fs, old, b"appended\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("g.md")).unwrap(),
        "---\nid: x\n---\nbody\nappended\n"
    );
}

#[test]
fn a_truncate_by_path_during_a_rewrite_waits_for_it() {
    let (dir, fs) = setup();
    let old = put(&fs, "f.md", b"body\n");
    put(&fs, TMP, b"---\nid: x\n---\nbody\n");
    let path = StorePath::new("f.md").unwrap();
    let guard = fs.begin_replace(&path).expect("nobody writes f.md");
    // truncate(2) by name, holding no descriptor, while the rewrite runs.
    let truncater = {
        let fs = Arc::clone(&fs);
        std::thread::spawn(move || {
            fs.setattr(
                old,
                AttrChanges {
                    size: Some(0),
                    ..AttrChanges::default()
                },
            )
            .expect("truncate")
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    fs.rename(
        ROOT_INO,
        OsStr::new(TMP),
        ROOT_INO,
        OsStr::new("f.md"),
        mnemofs::store::RENAME_EXCHANGE,
    )
    .expect("exchange");
    fs.unlink(ROOT_INO, OsStr::new(TMP)).expect("cleanup");
    drop(guard);
    truncater.join().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.md")).unwrap(),
        "",
        "the truncation was lost"
    );
}

#[test]
fn a_rewrite_that_gives_up_leaves_late_writers_on_the_inode_they_hold() {
    let (dir, fs) = setup();
    let old = put(&fs, "f.md", b"body\n");
    let path = StorePath::new("f.md").unwrap();
    let guard = fs.begin_replace(&path).expect("nobody writes f.md");
    drop(guard); // the compare failed: nothing was exchanged
    fs.rename(
        ROOT_INO,
        OsStr::new("f.md"),
        ROOT_INO,
        OsStr::new("g.md"),
        0,
    )
    .expect("rename");
    put(&fs, "f.md", b"another file\n");
    append(&fs, old, b"appended\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("g.md")).unwrap(),
        "body\nappended\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.md")).unwrap(),
        "another file\n"
    );
}

#[test]
fn a_writer_that_stopped_waiting_makes_the_exchange_give_up() {
    let (dir, fs) = setup();
    let old = put(&fs, "f.md", b"body\n");
    put(&fs, TMP, b"---\nid: x\n---\nbody\n");
    let path = StorePath::new("f.md").unwrap();
    let guard = fs.begin_replace(&path).expect("nobody writes f.md");
    // The rewrite is slow to swap (its exchange waits for a FUSE worker):
    // the writer's wait runs out and it opens the file it holds.
    let opened = fs
        .open(old, libc::O_WRONLY | libc::O_APPEND, 1)
        .expect("open for append");
    let refused = fs
        .rename(
            ROOT_INO,
            OsStr::new(TMP),
            ROOT_INO,
            OsStr::new("f.md"),
            mnemofs::store::RENAME_EXCHANGE,
        )
        .expect_err("the exchange must give up");
    assert_eq!(refused.errno(), libc::EBUSY);
    fs.unlink(ROOT_INO, OsStr::new(TMP)).expect("cleanup");
    drop(guard);
    fs.write(opened.fh, 0, b"appended\n").expect("append");
    fs.release(opened.fh).expect("release");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.md")).unwrap(),
        "body\nappended\n"
    );
}
