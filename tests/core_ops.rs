//! Core tests: drive `StoreFs` directly, without a kernel mount.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::Arc;

use mnemofs::fs::{AttrChanges, FsOptions, ROOT_INO, Requester, StoreFs};
use mnemofs::store::Store;

fn setup(max: u64) -> (tempfile::TempDir, StoreFs) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Store::open(dir.path()).expect("store"));
    let fs = StoreFs::new(
        store,
        FsOptions {
            max_file_size: max,
            ..FsOptions::default()
        },
    )
    .expect("fs");
    (dir, fs)
}

const ME: Requester = Requester { uid: 0, gid: 0 };

fn list(fs: &StoreFs, ino: u64) -> Vec<(u64, OsString)> {
    let fh = fs.opendir(ino).expect("opendir");
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let mut batch = Vec::new();
        fs.readdir(ino, fh, offset, false, &mut |item| {
            batch.push((item.next_offset, item.ino, item.name.to_os_string()));
            batch.len() == 3
        })
        .expect("readdir");
        if batch.is_empty() {
            break;
        }
        offset = batch.last().map(|b| b.0).unwrap_or(offset);
        out.extend(batch.into_iter().map(|(_, ino, name)| (ino, name)));
    }
    fs.releasedir(fh).expect("releasedir");
    out
}

#[test]
fn create_write_read_rename_unlink() {
    let (dir, fs) = setup(1 << 20);
    let (entry, opened) = fs
        .create(ROOT_INO, OsStr::new("a.md"), 0o644, libc::O_RDWR, ME)
        .expect("create");
    assert_eq!(fs.write(opened.fh, 0, b"hello world").expect("write"), 11);
    assert_eq!(fs.read(opened.fh, 6, 100).expect("read"), b"world");
    fs.release(opened.fh).expect("release");
    let again = fs
        .create(
            ROOT_INO,
            OsStr::new("a.md"),
            0o644,
            libc::O_RDWR | libc::O_EXCL,
            ME,
        )
        .expect_err("O_EXCL");
    assert_eq!(again.errno(), libc::EEXIST);
    fs.rename(
        ROOT_INO,
        OsStr::new("a.md"),
        ROOT_INO,
        OsStr::new("b.md"),
        0,
    )
    .expect("rename");
    assert_eq!(
        fs.lookup(ROOT_INO, OsStr::new("b.md")).expect("lookup").ino,
        entry.ino
    );
    assert_eq!(
        std::fs::read(dir.path().join("b.md")).expect("store"),
        b"hello world"
    );
    fs.unlink(ROOT_INO, OsStr::new("b.md")).expect("unlink");
    assert_eq!(
        fs.lookup(ROOT_INO, OsStr::new("b.md")).unwrap_err().errno(),
        libc::ENOENT
    );
}

#[test]
fn size_cap_cuts_writes_short_then_refuses() {
    let (dir, fs) = setup(10);
    let (_, opened) = fs
        .create(ROOT_INO, OsStr::new("big"), 0o644, libc::O_WRONLY, ME)
        .expect("create");
    assert_eq!(
        fs.write(opened.fh, 0, b"0123456789abc")
            .expect("short write"),
        10
    );
    assert_eq!(
        fs.write(opened.fh, 10, b"x").unwrap_err().errno(),
        libc::EFBIG
    );
    let grow = AttrChanges {
        size: Some(11),
        ..AttrChanges::default()
    };
    let ino = fs.lookup(ROOT_INO, OsStr::new("big")).expect("lookup").ino;
    assert_eq!(fs.setattr(ino, grow).unwrap_err().errno(), libc::EFBIG);
    fs.release(opened.fh).expect("release");
    assert_eq!(
        std::fs::read(dir.path().join("big")).expect("store"),
        b"0123456789"
    );
}

#[test]
fn escaping_symlinks_hard_links_and_special_files_are_refused() {
    let (dir, fs) = setup(1 << 20);
    let sub = fs
        .mkdir(ROOT_INO, OsStr::new("d"), 0o755, ME)
        .expect("mkdir")
        .ino;
    for target in ["/etc/passwd", "../../x", "../.."] {
        let err = fs
            .symlink(sub, OsStr::new("l"), Path::new(target), ME)
            .expect_err(target);
        assert_eq!(err.errno(), libc::EPERM, "{target}");
    }
    fs.symlink(sub, OsStr::new("ok"), Path::new("../d/x"), ME)
        .expect("inside link");
    assert_eq!(fs.link().unwrap_err().errno(), libc::EPERM);
    assert_eq!(fs.mknod().unwrap_err().errno(), libc::EPERM);
    assert!(!dir.path().join("d/l").exists());
}

#[test]
fn readdir_offsets_survive_changes_between_calls() {
    let (dir, fs) = setup(1 << 20);
    for i in 0..20 {
        std::fs::write(dir.path().join(format!("f{i:02}")), b"").expect("seed");
    }
    let fh = fs.opendir(ROOT_INO).expect("opendir");
    let mut seen = Vec::new();
    let mut offset = 0;
    let mut first = true;
    loop {
        let mut batch = Vec::new();
        fs.readdir(ROOT_INO, fh, offset, false, &mut |item| {
            batch.push((item.next_offset, item.name.to_os_string()));
            batch.len() == 4
        })
        .expect("readdir");
        if batch.is_empty() {
            break;
        }
        if first {
            // Change the directory mid-listing: the snapshot must not shift.
            std::fs::remove_file(dir.path().join("f00")).expect("rm");
            std::fs::write(dir.path().join("new"), b"").expect("add");
            first = false;
        }
        offset = batch.last().map(|b| b.0).unwrap_or(offset);
        seen.extend(batch.into_iter().map(|b| b.1));
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "no entry twice: {seen:?}");
    assert_eq!(seen.len(), 22, "., .. and the 20 original files: {seen:?}");
    // A fresh listing shows the new state, with inode numbers that match lookup.
    let now = list(&fs, ROOT_INO);
    assert!(now.iter().any(|(_, n)| n == "new"));
    assert!(!now.iter().any(|(_, n)| n == "f00"));
    let (ino, _) = now.iter().find(|(_, n)| n == "f01").expect("f01");
    assert_eq!(
        fs.lookup(ROOT_INO, OsStr::new("f01")).expect("lookup").ino,
        *ino
    );
}

#[test]
fn an_unlinked_open_file_stays_readable() {
    let (_dir, fs) = setup(1 << 20);
    let (entry, opened) = fs
        .create(ROOT_INO, OsStr::new("tmp"), 0o600, libc::O_RDWR, ME)
        .expect("create");
    fs.write(opened.fh, 0, b"still here").expect("write");
    fs.unlink(ROOT_INO, OsStr::new("tmp")).expect("unlink");
    assert_eq!(fs.read(opened.fh, 0, 64).expect("read"), b"still here");
    assert_eq!(fs.getattr(entry.ino, None).expect("getattr").size, 10);
    fs.release(opened.fh).expect("release");
    fs.forget(entry.ino, 1);
    assert_eq!(
        fs.getattr(entry.ino, None).unwrap_err().errno(),
        libc::ESTALE
    );
}

/// The kernel creates a name it believes free, but a file made behind the
/// mount holds it: the file is kept in the history before it is
/// truncated, and a name that really is free is created without a trace.
#[test]
fn creating_over_a_file_made_behind_the_mount_keeps_it() {
    use mnemofs::store::StorePath;
    use mnemofs::store::history::{History, HistorySettings, Why};

    let dir = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("state");
    let store = Arc::new(Store::open(dir.path()).expect("store"));
    let history =
        Arc::new(History::open(state.path(), HistorySettings::default()).expect("history"));
    let fs = StoreFs::new(store, FsOptions::default())
        .expect("fs")
        .with_history(Arc::clone(&history));
    std::fs::create_dir(dir.path().join("notes")).expect("folder");
    let notes = fs
        .lookup(ROOT_INO, OsStr::new("notes"))
        .expect("lookup")
        .ino;
    std::fs::write(dir.path().join("notes/a.md"), "behind the mount\n").expect("write");
    let create = |name: &str| {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let (_, opened) = fs
            .create(notes, OsStr::new(name), 0o644, flags, ME)
            .expect("create");
        fs.write(opened.fh, 0, b"new\n").expect("write");
        fs.release(opened.fh).expect("release");
    };

    create("a.md");
    create("b.md");

    let read = |name: &str| std::fs::read(dir.path().join("notes").join(name)).expect("read");
    assert_eq!(read("a.md"), b"new\n");
    assert_eq!(read("b.md"), b"new\n");
    let kept = history.versions_of(Some(&StorePath::new("notes/a.md").expect("path")), None);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].why, Why::Truncated);
    assert_eq!(
        history.read(&kept[0]).expect("version"),
        b"behind the mount\n"
    );
    assert!(
        history
            .versions_of(Some(&StorePath::new("notes/b.md").expect("path")), None)
            .is_empty()
    );
}

/// Lookups below the top of the store: a missing name, a file, a folder
/// and a symlink (never followed) each answer as `lstat` would.
#[test]
fn lookups_in_folders_answer_as_lstat() {
    use std::os::unix::fs::MetadataExt;

    let (dir, fs) = setup(1 << 20);
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/b")).expect("folders");
    std::fs::write(root.join("a/b/note.md"), "note").expect("write");
    std::os::unix::fs::symlink("../../../outside", root.join("a/b/link")).expect("symlink");
    let a = fs.lookup(ROOT_INO, OsStr::new("a")).expect("a").ino;
    let b = fs.lookup(a, OsStr::new("b")).expect("b").ino;

    assert_eq!(
        fs.lookup(b, OsStr::new("missing")).unwrap_err().errno(),
        libc::ENOENT
    );
    for name in ["note.md", "link"] {
        let attr = fs.lookup(b, OsStr::new(name)).expect(name).attr;
        let meta = std::fs::symlink_metadata(root.join("a/b").join(name)).expect("lstat");
        assert_eq!(u32::from(attr.perm), meta.mode() & 0o7777, "{name}");
        assert_eq!(
            attr.kind == fuser::FileType::Symlink,
            meta.is_symlink(),
            "{name}"
        );
        assert_eq!(attr.size, meta.size(), "{name}");
    }
    let folder = fs.lookup(a, OsStr::new("b")).expect("b again").attr;
    assert_eq!(folder.kind, fuser::FileType::Directory);
}

/// Requests inside a folder, by the folder's inode, while another thread
/// renames the folder back and forth: each finds its files where the
/// folder is now, and none fails for a path the rename made stale.
#[test]
fn requests_inside_a_folder_never_miss_while_it_is_renamed() {
    let (_dir, fs) = setup(1 << 20);
    let fs = Arc::new(fs);
    let folder = fs
        .mkdir(ROOT_INO, OsStr::new("x"), 0o755, ME)
        .expect("mkdir")
        .ino;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mover = {
        let (fs, stop) = (Arc::clone(&fs), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut moves = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (a, b) = if moves.is_multiple_of(2) {
                    ("x", "y")
                } else {
                    ("y", "x")
                };
                fs.rename(ROOT_INO, OsStr::new(a), ROOT_INO, OsStr::new(b), 0)
                    .expect("rename the folder");
                moves += 1;
            }
            moves
        })
    };
    for i in 0..2000 {
        let name = format!("n{i}.md");
        let name = OsStr::new(&name);
        let (entry, opened) = fs
            .create(folder, name, 0o644, libc::O_RDWR | libc::O_EXCL, ME)
            .unwrap_or_else(|e| panic!("create {i}: {e:?}"));
        fs.write(opened.fh, 0, b"note").expect("write");
        fs.release(opened.fh).expect("release");
        fs.lookup(folder, name)
            .unwrap_or_else(|e| panic!("lookup {i}: {e:?}"));
        fs.getattr(entry.ino, None)
            .unwrap_or_else(|e| panic!("getattr {i}: {e:?}"));
        let reopened = fs
            .open(entry.ino, libc::O_RDONLY, 0)
            .unwrap_or_else(|e| panic!("open {i}: {e:?}"));
        fs.release(reopened.fh).expect("release");
        fs.unlink(folder, name)
            .unwrap_or_else(|e| panic!("unlink {i}: {e:?}"));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let moves = mover.join().expect("mover");
    assert!(moves > 0, "the folder never moved");
    let left: Vec<OsString> = list(&fs, folder)
        .into_iter()
        .map(|(_, name)| name)
        .filter(|name| name != "." && name != "..")
        .collect();
    assert!(left.is_empty(), "left in the folder: {left:?}");
}

/// The kernel keeps a file's cached pages across opens only while the
/// file is the same: a rewrite behind the mount that keeps the size and
/// sets the mtime back (`rsync --inplace`, `touch -r`) drops them.
#[test]
fn a_rewrite_behind_the_mount_that_sets_the_mtime_back_drops_the_cache() {
    let (dir, fs) = setup(1 << 20);
    let path = dir.path().join("a.md");
    std::fs::write(&path, "pangolin\n").expect("write");
    let ino = fs.lookup(ROOT_INO, OsStr::new("a.md")).expect("lookup").ino;
    let open = || {
        let opened = fs.open(ino, libc::O_RDONLY, 0).expect("open");
        fs.release(opened.fh).expect("release");
        opened.keep_cache
    };
    open();
    assert!(open(), "unchanged: the cache is kept");
    let mtime = std::fs::metadata(&path)
        .expect("stat")
        .modified()
        .expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, "aardvark\n").expect("rewrite");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .expect("open behind")
        .set_modified(mtime)
        .expect("set mtime back");
    assert!(!open(), "rewritten: the cache is dropped");
}
