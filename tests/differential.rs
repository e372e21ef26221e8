//! Differential tests: every sequence of operations runs on a plain directory
//! and on the mount, and the results (contents, errno, listings, sizes,
//! modes) must be identical. The plain directory sits on the same backing
//! filesystem as the store, so it is the ext4 behaviour we promise.

#![cfg(target_os = "linux")]

mod common;

use common::sys;
use common::{Mount, TEST_UMASK, Trace, list, set_umask, summarize};
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};

fn setup() -> Mount {
    set_umask(TEST_UMASK);
    Mount::start()
}

const RW: libc::c_int = libc::O_RDWR;
const CREAT: libc::c_int = libc::O_CREAT;

#[test]
fn create_excl_trunc_and_append_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("a.md");
        let fd = t.ok("create", sys::open(&f, RW | CREAT | libc::O_EXCL, 0o644));
        if let Some(fd) = &fd {
            t.rec("write", sys::write(fd, b"hello world"));
        }
        drop(fd);
        t.ok(
            "create excl again",
            sys::open(&f, RW | CREAT | libc::O_EXCL, 0o644),
        );
        t.ok("create without excl", sys::open(&f, RW | CREAT, 0o644));
        t.rec("content", fs::read(&f));
        // O_EXCL without O_CREAT is ignored for regular files.
        t.ok("excl without creat", sys::open(&f, RW | libc::O_EXCL, 0));
        let fd = t.ok(
            "open append",
            sys::open(&f, libc::O_WRONLY | libc::O_APPEND, 0),
        );
        if let Some(fd) = &fd {
            t.rec("append", sys::write(fd, b"!!"));
            // Linux appends even for pwrite on an O_APPEND descriptor.
            t.rec("pwrite at 0 on append fd", sys::pwrite(fd, b"XY", 0));
            t.rec("offset after append", sys::lseek(fd, 0, libc::SEEK_CUR));
        }
        drop(fd);
        t.rec("content after append", fs::read(&f));
        let fd = t.ok("open trunc", sys::open(&f, RW | libc::O_TRUNC, 0));
        t.stat("stat after trunc", &f);
        if let Some(fd) = &fd {
            t.rec("write after trunc", sys::write(fd, b"new"));
        }
        drop(fd);
        t.rec("content after trunc", fs::read(&f));
        t.ok(
            "append to missing",
            sys::open(&d.join("missing"), libc::O_WRONLY | libc::O_APPEND, 0),
        );
        t.ok(
            "create excl in missing dir",
            sys::open(&d.join("no/x"), RW | CREAT | libc::O_EXCL, 0o644),
        );
        t.ok(
            "creat excl dir name",
            sys::open(d, RW | CREAT | libc::O_EXCL, 0o644),
        );
        t.ok("open dir for writing", sys::open(d, libc::O_WRONLY, 0));
        t.ok("file as dir", sys::open(&f.join("x"), libc::O_RDONLY, 0));
        t.ok(
            "O_DIRECTORY on file",
            sys::open(&f, libc::O_RDONLY | libc::O_DIRECTORY, 0),
        );
        let fd = t.ok("read-only fd", sys::open(&f, libc::O_RDONLY, 0));
        if let Some(fd) = &fd {
            t.rec("write to read-only fd", sys::write(fd, b"x"));
        }
        let fd = t.ok("write-only fd", sys::open(&f, libc::O_WRONLY, 0));
        if let Some(fd) = &fd {
            t.rec("read from write-only fd", sys::read(fd, 4));
        }
        t.stat("final stat", &f);
        t
    });
}

#[test]
fn reads_and_writes_at_offsets_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("offsets.bin");
        let fd = sys::open(&f, RW | CREAT, 0o644).expect("create");
        t.rec("pwrite 0", sys::pwrite(&fd, b"0123456789", 0));
        t.rec("pwrite 5 overlap", sys::pwrite(&fd, b"abc", 5));
        t.rec("pwrite past end (hole)", sys::pwrite(&fd, b"tail", 100));
        t.stat("stat", &f);
        t.rec("pread 0..20", sys::pread(&fd, 20, 0));
        t.rec("pread in hole", sys::pread(&fd, 8, 50));
        t.rec("pread across end", sys::pread(&fd, 50, 90));
        t.rec("pread at eof", sys::pread(&fd, 10, 104));
        t.rec("pread past eof", sys::pread(&fd, 10, 5000));
        t.rec("seek end", sys::lseek(&fd, 0, libc::SEEK_END));
        t.rec("write at end", sys::write(&fd, b"++"));
        t.rec("seek set", sys::lseek(&fd, 3, libc::SEEK_SET));
        t.rec("read 4", sys::read(&fd, 4));
        t.rec("seek cur", sys::lseek(&fd, 0, libc::SEEK_CUR));
        t.rec("seek negative", sys::lseek(&fd, -1, libc::SEEK_SET));
        t.rec("pread negative", sys::pread(&fd, 1, -1));
        // A large write that spans many pages and FUSE requests.
        let big: Vec<u8> = (0..(3 * 1024 * 1024 + 17))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        t.rec("big pwrite", sys::pwrite_all(&fd, &big, 4093));
        t.rec("fsync", sys::fsync(&fd));
        drop(fd);
        t.stat("stat after big", &f);
        t.rec("whole content", fs::read(&f).map(|c| summarize(&c)));
        t
    });
}

#[test]
fn truncate_and_ftruncate_grow_and_shrink_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("t.txt");
        fs::write(&f, b"abcdefghijklmnopqrstuvwxyz").expect("write");
        t.rec("truncate shrink", sys::truncate(&f, 10));
        t.rec("content", fs::read(&f));
        t.rec("truncate grow", sys::truncate(&f, 20));
        t.rec("content", fs::read(&f));
        let fd = sys::open(&f, RW, 0).expect("open");
        t.rec("ftruncate shrink", sys::ftruncate(&fd, 3));
        t.rec("fstat size", sys::fstat(&fd).map(|s| s.st_size));
        t.rec("read after shrink", sys::pread(&fd, 100, 0));
        t.rec("ftruncate grow", sys::ftruncate(&fd, 70000));
        t.rec(
            "read after grow",
            sys::read_all_at0(&fd).map(|c| summarize(&c)),
        );
        t.rec("write into grown", sys::pwrite(&fd, b"Z", 69999));
        t.rec("ftruncate zero", sys::ftruncate(&fd, 0));
        t.rec("read empty", sys::pread(&fd, 10, 0));
        t.rec("ftruncate negative", sys::ftruncate(&fd, -1));
        drop(fd);
        let ro = sys::open(&f, libc::O_RDONLY, 0).expect("open ro");
        t.rec("ftruncate read-only fd", sys::ftruncate(&ro, 5));
        t.rec("truncate missing", sys::truncate(&d.join("missing"), 0));
        t.rec("truncate dir", sys::truncate(d, 0));
        t.stat("final", &f);
        t
    });
}

#[test]
fn modes_and_chmod_match_ext4_under_umask() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        for (name, mode) in [("a", 0o666), ("b", 0o600), ("c", 0o777), ("d", 0o000)] {
            let p = d.join(name);
            t.ok(
                &format!("create {name}"),
                sys::open(&p, RW | CREAT | libc::O_EXCL, mode),
            );
            t.stat(&format!("stat {name}"), &p);
        }
        for (name, mode) in [("da", 0o777), ("db", 0o700), ("dc", 0o1777)] {
            let p = d.join(name);
            t.rec(&format!("mkdir {name}"), sys::mkdir(&p, mode));
            t.stat(&format!("stat {name}"), &p);
        }
        let a = d.join("a");
        for mode in [0o600, 0o4755, 0o2750, 0o000, 0o7777, 0o644] {
            t.rec(&format!("chmod {mode:o}"), sys::chmod(&a, mode));
            t.stat("after chmod", &a);
        }
        let fd = sys::open(&a, RW, 0).expect("open");
        t.rec("fchmod 640", sys::fchmod(&fd, 0o640));
        t.rec(
            "fstat mode",
            sys::fstat(&fd).map(|s| format!("{:o}", s.st_mode)),
        );
        t.rec("chmod dir 700", sys::chmod(&d.join("da"), 0o700));
        t.stat("dir after chmod", &d.join("da"));
        t.rec("chmod missing", sys::chmod(&d.join("missing"), 0o600));
        t
    });
}

#[test]
fn utimens_sets_exact_times_like_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("times.md");
        fs::write(&f, b"x").expect("write");
        let times = |p: &Path| {
            sys::lstat(p).map(|s| (s.st_atime, s.st_atime_nsec, s.st_mtime, s.st_mtime_nsec))
        };
        t.rec(
            "set both",
            sys::utimens(
                &f,
                (1_000_000_000, 123_456_789),
                (1_200_000_000, 987_654_321),
                0,
            ),
        );
        t.rec("times", times(&f));
        t.rec(
            "omit atime",
            sys::utimens(&f, (0, libc::UTIME_OMIT), (1_300_000_000, 1), 0),
        );
        t.rec("times", times(&f));
        t.rec(
            "omit mtime",
            sys::utimens(&f, (5, 5), (0, libc::UTIME_OMIT), 0),
        );
        t.rec("times", times(&f));
        t.rec("pre-epoch", sys::utimens(&f, (-1, 0), (-86_400, 500), 0));
        t.rec("times", times(&f));
        t.rec(
            "invalid nsec",
            sys::utimens(&f, (0, 1_000_000_000), (0, 0), 0),
        );
        let dir = d.join("sub");
        fs::create_dir(&dir).expect("mkdir");
        t.rec("dir", sys::utimens(&dir, (7, 0), (8, 0), 0));
        t.rec("dir times", times(&dir));
        let link = d.join("link");
        sys::symlink(Path::new("times.md"), &link).expect("symlink");
        t.rec(
            "symlink nofollow",
            sys::utimens(&link, (11, 0), (12, 0), libc::AT_SYMLINK_NOFOLLOW),
        );
        t.rec("link times", times(&link));
        t.rec("target untouched", times(&f));
        t.rec("missing", sys::utimens(&d.join("nope"), (1, 0), (1, 0), 0));
        // Writing moves mtime forward: compare "changed", not the value.
        let before = times(&f).expect("times");
        fs::write(&f, b"changed").expect("write");
        let after = times(&f).expect("times");
        t.note(
            "write advanced mtime",
            (after.2, after.3) > (before.2, before.3),
        );
        t
    });
}

#[test]
fn mkdir_rmdir_unlink_errors_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let dir = d.join("dir");
        t.rec("mkdir", sys::mkdir(&dir, 0o755));
        t.rec("mkdir again", sys::mkdir(&dir, 0o755));
        t.rec("mkdir nested missing", sys::mkdir(&d.join("a/b"), 0o755));
        fs::write(dir.join("f"), b"1").expect("write");
        t.rec("mkdir over file", sys::mkdir(&dir.join("f"), 0o755));
        t.rec("mkdir under file", sys::mkdir(&dir.join("f/g"), 0o755));
        t.rec("rmdir non-empty", sys::rmdir(&dir));
        t.rec("unlink dir", sys::unlink(&dir));
        t.rec("rmdir file", sys::rmdir(&dir.join("f")));
        t.rec("unlink missing", sys::unlink(&dir.join("missing")));
        t.rec("rmdir missing", sys::rmdir(&dir.join("missing")));
        t.rec("unlink under file", sys::unlink(&dir.join("f/x")));
        t.rec("rmdir dot", sys::rmdir(&dir.join(".")));
        t.rec("list", list(&dir));
        t.rec("unlink file", sys::unlink(&dir.join("f")));
        t.rec("unlink file again", sys::unlink(&dir.join("f")));
        t.rec("list empty", list(&dir));
        t.rec("rmdir empty", sys::rmdir(&dir));
        t.rec("stat removed", sys::lstat(&dir).map(|_| ()));
        t.rec("mkdir deep", fs::create_dir_all(d.join("x/y/z")));
        t.rec("rmdir middle", sys::rmdir(&d.join("x/y")));
        t.rec("remove_dir_all", fs::remove_dir_all(d.join("x")));
        t.rec("list root", list(d));
        t
    });
}

#[test]
fn rename_file_over_existing_file_matches_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        fs::write(d.join("a"), b"AAA").expect("write");
        fs::write(d.join("b"), b"BBBBBB").expect("write");
        t.rec("rename over", sys::rename(&d.join("a"), &d.join("b")));
        t.rec("b", fs::read(d.join("b")));
        t.rec("a gone", sys::lstat(&d.join("a")).map(|_| ()));
        t.rec("rename missing", sys::rename(&d.join("a"), &d.join("c")));
        t.rec("rename to itself", sys::rename(&d.join("b"), &d.join("b")));
        t.rec(
            "into missing dir",
            sys::rename(&d.join("b"), &d.join("no/b")),
        );
        fs::create_dir(d.join("sub")).expect("mkdir");
        t.rec("into subdir", sys::rename(&d.join("b"), &d.join("sub/b2")));
        t.rec("list", list(d));
        t.rec("list sub", list(&d.join("sub")));
        t.rec("content moved", fs::read(d.join("sub/b2")));
        t
    });
}

#[test]
fn rename_directories_matches_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        fs::create_dir_all(d.join("src/inner")).expect("mkdir");
        fs::write(d.join("src/inner/note.md"), b"note").expect("write");
        fs::create_dir(d.join("empty")).expect("mkdir");
        fs::create_dir(d.join("full")).expect("mkdir");
        fs::write(d.join("full/x"), b"x").expect("write");
        fs::write(d.join("file"), b"f").expect("write");
        t.rec(
            "dir over non-empty dir",
            sys::rename(&d.join("src"), &d.join("full")),
        );
        t.rec(
            "dir over file",
            sys::rename(&d.join("src"), &d.join("file")),
        );
        t.rec(
            "file over dir",
            sys::rename(&d.join("file"), &d.join("empty")),
        );
        t.rec(
            "dir into itself",
            sys::rename(&d.join("src"), &d.join("src/inner/x")),
        );
        t.rec(
            "dir over empty dir",
            sys::rename(&d.join("src"), &d.join("empty")),
        );
        t.rec("note via new name", fs::read(d.join("empty/inner/note.md")));
        t.rec(
            "move dir into other",
            sys::rename(&d.join("empty"), &d.join("full/moved")),
        );
        t.rec("deep read", fs::read(d.join("full/moved/inner/note.md")));
        t.rec(
            "rename inner up",
            sys::rename(&d.join("full/moved/inner"), &d.join("top")),
        );
        t.rec("read after up", fs::read(d.join("top/note.md")));
        t.rec(
            "old path gone",
            sys::lstat(&d.join("full/moved/inner")).map(|_| ()),
        );
        t.rec("list", list(d));
        t.rec("list full", list(&d.join("full")));
        t
    });
}

#[test]
fn renameat2_noreplace_and_exchange_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        fs::write(d.join("a"), b"AAA").expect("write");
        fs::write(d.join("b"), b"BB").expect("write");
        fs::create_dir(d.join("dir")).expect("mkdir");
        fs::write(d.join("dir/inside"), b"i").expect("write");
        t.rec(
            "noreplace onto existing",
            sys::renameat2(&d.join("a"), &d.join("b"), libc::RENAME_NOREPLACE),
        );
        t.rec("b unchanged", fs::read(d.join("b")));
        t.rec(
            "noreplace onto new",
            sys::renameat2(&d.join("a"), &d.join("c"), libc::RENAME_NOREPLACE),
        );
        t.rec("list", list(d));
        t.rec(
            "exchange files",
            sys::renameat2(&d.join("b"), &d.join("c"), libc::RENAME_EXCHANGE),
        );
        t.rec("b", fs::read(d.join("b")));
        t.rec("c", fs::read(d.join("c")));
        t.rec(
            "exchange file and dir",
            sys::renameat2(&d.join("b"), &d.join("dir"), libc::RENAME_EXCHANGE),
        );
        t.rec("b is now dir", list(&d.join("b")));
        t.rec("dir is now file", fs::read(d.join("dir")));
        t.rec(
            "exchange with missing",
            sys::renameat2(&d.join("c"), &d.join("nope"), libc::RENAME_EXCHANGE),
        );
        t.rec(
            "both flags",
            sys::renameat2(
                &d.join("c"),
                &d.join("dir"),
                libc::RENAME_EXCHANGE | libc::RENAME_NOREPLACE,
            ),
        );
        t.rec("list end", list(d));
        t
    });
}

#[test]
fn relative_symlinks_and_readlink_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        fs::create_dir(d.join("notes")).expect("mkdir");
        fs::write(d.join("notes/a.md"), b"alpha").expect("write");
        t.rec(
            "symlink file",
            sys::symlink(Path::new("notes/a.md"), &d.join("la")),
        );
        t.rec(
            "symlink dir",
            sys::symlink(Path::new("notes"), &d.join("ln")),
        );
        t.rec(
            "symlink up",
            sys::symlink(Path::new("../la"), &d.join("notes/up")),
        );
        t.rec(
            "dangling",
            sys::symlink(Path::new("nowhere"), &d.join("dangle")),
        );
        t.rec("existing", sys::symlink(Path::new("x"), &d.join("la")));
        t.rec("readlink la", sys::readlink(&d.join("la")));
        t.rec("readlink up", sys::readlink(&d.join("notes/up")));
        t.rec("readlink file", sys::readlink(&d.join("notes/a.md")));
        t.rec("readlink missing", sys::readlink(&d.join("missing")));
        t.stat("lstat la", &d.join("la"));
        t.stat("lstat dangle", &d.join("dangle"));
        t.rec("read via link", fs::read(d.join("la")));
        t.rec("read via chain", fs::read(d.join("notes/up")));
        t.rec("read via dir link", fs::read(d.join("ln/a.md")));
        t.rec("read dangling", fs::read(d.join("dangle")));
        t.ok(
            "open nofollow",
            sys::open(&d.join("la"), libc::O_RDONLY | libc::O_NOFOLLOW, 0),
        );
        t.rec("write via link", fs::write(d.join("la"), b"beta"));
        t.rec("target changed", fs::read(d.join("notes/a.md")));
        t.rec("create via dangling", fs::write(d.join("dangle"), b"made"));
        t.rec("made", fs::read(d.join("nowhere")));
        t.rec("unlink link", sys::unlink(&d.join("la")));
        t.rec("target still there", fs::read(d.join("notes/a.md")));
        t.rec("rename link", sys::rename(&d.join("ln"), &d.join("ln2")));
        t.rec("readlink renamed", sys::readlink(&d.join("ln2")));
        t.rec("list", list(d));
        t
    });
}

#[test]
fn user_xattrs_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("x.md");
        fs::write(&f, b"x").expect("write");
        fs::create_dir(d.join("dir")).expect("mkdir");
        t.rec("list empty", sys::listxattr_user(&f));
        t.rec("get missing", sys::getxattr(&f, "user.nope"));
        t.rec("set", sys::setxattr(&f, "user.color", b"blue", 0));
        t.rec(
            "set binary",
            sys::setxattr(&f, "user.bin", &[0, 1, 2, 255], 0),
        );
        t.rec("set empty", sys::setxattr(&f, "user.empty", b"", 0));
        t.rec("get", sys::getxattr(&f, "user.color"));
        t.rec("get binary", sys::getxattr(&f, "user.bin"));
        t.rec("get empty", sys::getxattr(&f, "user.empty"));
        t.rec("small buffer", sys::getxattr_sized(&f, "user.color", 2));
        t.rec(
            "create existing",
            sys::setxattr(&f, "user.color", b"red", libc::XATTR_CREATE),
        );
        t.rec(
            "replace missing",
            sys::setxattr(&f, "user.other", b"1", libc::XATTR_REPLACE),
        );
        t.rec(
            "replace existing",
            sys::setxattr(&f, "user.color", b"green", libc::XATTR_REPLACE),
        );
        t.rec("get replaced", sys::getxattr(&f, "user.color"));
        t.rec("list", sys::listxattr_user(&f));
        t.rec("remove", sys::removexattr(&f, "user.color"));
        t.rec("remove again", sys::removexattr(&f, "user.color"));
        t.rec("list after remove", sys::listxattr_user(&f));
        t.rec("on dir", sys::setxattr(&d.join("dir"), "user.d", b"dv", 0));
        t.rec("get on dir", sys::getxattr(&d.join("dir"), "user.d"));
        t.rec(
            "on missing",
            sys::setxattr(&d.join("missing"), "user.a", b"1", 0),
        );
        let big = vec![b'v'; 4000];
        t.rec("large value", sys::setxattr(&f, "user.big", &big, 0));
        t.rec("get large", sys::getxattr(&f, "user.big").map(|v| v.len()));
        // Survives a rename (same inode).
        t.rec("rename", sys::rename(&f, &d.join("y.md")));
        t.rec("after rename", sys::getxattr(&d.join("y.md"), "user.bin"));
        t
    });
}

#[test]
fn unlinked_open_file_stays_readable_until_closed() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("doomed.md");
        fs::write(&f, b"still here").expect("write");
        let fd = sys::open(&f, RW, 0).expect("open");
        t.rec("unlink", sys::unlink(&f));
        t.rec("gone from listing", list(d));
        t.rec("stat path", sys::lstat(&f).map(|_| ()));
        t.rec("read after unlink", sys::pread(&fd, 100, 0));
        t.rec("write after unlink", sys::pwrite(&fd, b"STILL", 0));
        t.rec("read back", sys::pread(&fd, 100, 0));
        t.rec("fstat", sys::fstat(&fd).map(|s| (s.st_size, s.st_nlink)));
        t.rec("ftruncate after unlink", sys::ftruncate(&fd, 4));
        t.rec("read truncated", sys::pread(&fd, 100, 0));
        // A new file under the same name is a different file.
        fs::write(&f, b"new").expect("recreate");
        t.rec("old fd unaffected", sys::pread(&fd, 100, 0));
        t.rec("new file", fs::read(&f));
        drop(fd);
        t.rec("list after close", list(d));
        t
    });
}

#[test]
fn mmap_reads_match_file_contents() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("mapped.bin");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        fs::write(&f, &data).expect("write");
        let fd = sys::open(&f, libc::O_RDONLY, 0).expect("open");
        for flags in [libc::MAP_SHARED, libc::MAP_PRIVATE] {
            // SAFETY: mapping a regular file read-only; length is the file size.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    data.len(),
                    libc::PROT_READ,
                    flags,
                    fd.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(
                p,
                libc::MAP_FAILED,
                "mmap failed: {}",
                std::io::Error::last_os_error()
            );
            // SAFETY: the mapping is data.len() bytes long and readable.
            let mapped = unsafe { std::slice::from_raw_parts(p as *const u8, data.len()) };
            t.note("mapped equals written", mapped == &data[..]);
            t.note("mapped summary", summarize(mapped));
            // SAFETY: p/len are exactly the mapping created above.
            unsafe { libc::munmap(p, data.len()) };
        }
        // A write through the fd is visible to a fresh shared mapping.
        let w = sys::open(&f, RW, 0).expect("open rw");
        sys::pwrite(&w, b"CHANGED", 4096).expect("pwrite");
        // SAFETY: as above.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: 8192 readable bytes.
        let mapped = unsafe { std::slice::from_raw_parts(p as *const u8, 8192) };
        t.note(
            "after write",
            String::from_utf8_lossy(&mapped[4096..4103]).into_owned(),
        );
        // SAFETY: exactly the mapping above.
        unsafe { libc::munmap(p, 8192) };
        t
    });
}

#[test]
fn write_only_writers_are_seen_by_open_readers_and_mappings() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("shared.md");
        fs::write(&f, vec![b'A'; 20_000]).expect("write");
        let r = sys::open(&f, libc::O_RDONLY, 0).expect("open reader");
        let read_all = |len| {
            sys::pread(&r, len, 0)
                .map(|b| summarize(&b))
                .map_err(|e| e.raw_os_error())
        };
        t.note("first read", read_all(20_000));
        // SAFETY: a read-only shared mapping of the whole file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                20_000,
                libc::PROT_READ,
                libc::MAP_SHARED,
                r.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: 20_000 readable bytes, unmapped below.
        let mapped = unsafe { std::slice::from_raw_parts(p as *const u8, 20_000) };
        t.note("mapped before", summarize(mapped));
        let w = sys::open(&f, libc::O_WRONLY, 0).expect("open writer");
        sys::pwrite(&w, &[b'B'; 5000], 3000).expect("pwrite");
        t.note("read while writer open", read_all(20_000));
        t.note("mapped while writer open", summarize(mapped));
        drop(w);
        let a = sys::open(&f, libc::O_WRONLY | libc::O_APPEND, 0).expect("open appender");
        sys::write(&a, b"tail").expect("append");
        drop(a);
        t.note("read after append", read_all(30_000));
        t.note("mapped after", summarize(mapped));
        t.note(
            "fresh open",
            fs::read(&f)
                .map(|b| summarize(&b))
                .map_err(|e| e.raw_os_error()),
        );
        // SAFETY: exactly the mapping above.
        unsafe { libc::munmap(p, 20_000) };
        t
    });
}

#[test]
fn unprivileged_writes_clear_setuid_and_setgid_like_ext4() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: switching to another user needs root");
        return;
    }
    set_umask(TEST_UMASK);
    let m = Mount::with_args(&["--allow-other"]);
    // The temp root is private; the other user must reach both sides.
    let root = m.mnt.parent().expect("temp root");
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).expect("chmod root");
    m.pair().same(|d| {
        let mut t = Trace::new();
        for (name, mode, open_mode) in [
            ("suid-append", 0o4777, ">>"),
            ("sgid-exec-truncate", 0o2777, ">"),
            ("sgid-noexec-append", 0o2767, ">>"),
            ("both-read-write", 0o6777, "1<>"),
        ] {
            let f = d.join(name);
            fs::write(&f, b"x").expect("write");
            fs::set_permissions(&f, fs::Permissions::from_mode(mode)).expect("chmod");
            let status = Command::new("sh")
                .arg("-c")
                .arg(format!("printf y {open_mode} \"$1\""))
                .arg("sh")
                .arg(&f)
                .uid(65534)
                .gid(65534)
                .status()
                .map(|s| s.code());
            t.note(
                &format!("{name}: writer exit"),
                status.map_err(|e| e.raw_os_error()),
            );
            t.rec(
                &format!("{name}: mode after"),
                sys::lstat(&f).map(|s| s.st_mode & 0o7777),
            );
        }
        t
    });
}

#[test]
fn large_directory_listing_matches_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        for i in 0..500 {
            fs::write(d.join(format!("note-{i:04}.md")), format!("{i}")).expect("write");
        }
        fs::create_dir(d.join("sub")).expect("mkdir");
        t.rec("list", list(d).map(|l| (l.len(), l)));
        let names = sys::readdir_names_with(d, |_| {}).expect("getdents");
        t.note("getdents count", names.len());
        t
    });
}

/// Entries that exist during the whole listing must appear exactly once;
/// nothing may appear twice, however the directory changes between calls.
fn check_readdir_under_churn(d: &Path) {
    for i in 0..500 {
        fs::write(d.join(format!("f{i:04}")), b"").expect("write");
    }
    let mut added = 0;
    let names = sys::readdir_names_with(d, |batch| {
        // Delete some odd-numbered entries and add new ones between batches.
        for k in 0..5 {
            let victim = (batch * 37 + k * 2 + 1) % 500;
            if victim % 2 == 1 {
                let _ = fs::remove_file(d.join(format!("f{victim:04}")));
            }
            let _ = fs::write(d.join(format!("new{added:04}")), b"");
            added += 1;
        }
    })
    .expect("getdents");
    let mut seen = std::collections::HashMap::new();
    for n in &names {
        *seen.entry(n.clone()).or_insert(0) += 1;
    }
    let dups: Vec<_> = seen
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    assert!(
        dups.is_empty(),
        "{}: entries returned twice: {dups:?}",
        d.display()
    );
    // Even-numbered originals were never touched.
    for i in (0..500).step_by(2) {
        let name = format!("f{i:04}").into_bytes();
        assert_eq!(
            seen.get(&name).copied().unwrap_or(0),
            1,
            "{}: untouched entry f{i:04} missing from the listing",
            d.display()
        );
    }
}

#[test]
fn readdir_while_directory_changes_never_skips_or_repeats() {
    let m = setup();
    let p = m.pair();
    check_readdir_under_churn(&p.plain);
    check_readdir_under_churn(&p.mounted);
    // How many batches a listing takes differs between ext4 and FUSE, so the
    // churn (and the final trees) differ too; the store must still match.
    common::assert_same_lines(
        "mount",
        &common::snapshot(&p.mounted),
        "store",
        &common::snapshot(&p.store),
    );
}

#[test]
fn hidden_files_and_folders_are_ordinary() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        t.rec("mkdir .obsidian", sys::mkdir(&d.join(".obsidian"), 0o755));
        t.rec(
            "workspace",
            fs::write(d.join(".obsidian/workspace.json"), b"{\"a\":1}"),
        );
        t.rec("mkdir .git", sys::mkdir(&d.join(".git"), 0o755));
        t.rec(
            "HEAD",
            fs::write(d.join(".git/HEAD"), b"ref: refs/heads/main\n"),
        );
        t.rec("swap", fs::write(d.join(".note.md.swp"), b"swap"));
        t.rec("tmp", fs::write(d.join(".tmp-1234-abcd"), b"tmp"));
        t.rec("dotfile", fs::write(d.join(".hidden"), b"h"));
        t.rec("list", list(d));
        t.rec("list .obsidian", list(&d.join(".obsidian")));
        t.rec("read swap", fs::read(d.join(".note.md.swp")));
        t.rec(
            "rename tmp",
            sys::rename(&d.join(".tmp-1234-abcd"), &d.join("note.md")),
        );
        t.rec("unlink swap", sys::unlink(&d.join(".note.md.swp")));
        t.rec("list after", list(d));
        t
    });
}

#[test]
fn statfs_reports_real_numbers() {
    let m = setup();
    let st = sys::statvfs(&m.mnt).expect("statvfs on the mount");
    assert!(st.f_blocks > 0, "f_blocks is 0");
    assert!(st.f_bsize > 0, "f_bsize is 0");
    assert!(st.f_namemax > 0, "f_namemax is 0");
    assert!(st.f_files > 0, "f_files is 0");
    let plain = sys::statvfs(&m.plain).expect("statvfs");
    assert_eq!(
        st.f_namemax, plain.f_namemax,
        "name length limit differs from the backing fs"
    );
    assert_eq!(
        st.f_blocks as u128 * st.f_frsize as u128,
        plain.f_blocks as u128 * plain.f_frsize as u128,
        "total size differs from the backing filesystem"
    );
}

#[test]
fn editor_style_save_replaces_content_and_inode() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("note.md");
        fs::write(&f, b"version 1\n").expect("write");
        let ino_before = fs::metadata(&f).expect("stat").ino();
        let reader = sys::open(&f, libc::O_RDONLY, 0).expect("open reader");
        let tmp = d.join(".note.md.tmp-save");
        let fd = sys::open(&tmp, libc::O_WRONLY | CREAT | libc::O_EXCL, 0o644).expect("tmp");
        t.rec(
            "write tmp",
            sys::write(&fd, b"version 2, longer than before\n"),
        );
        t.rec("fsync tmp", sys::fsync(&fd));
        drop(fd);
        t.rec("rename over", sys::rename(&tmp, &f));
        let dirfd = sys::open(d, libc::O_RDONLY | libc::O_DIRECTORY, 0).expect("dir");
        t.rec("fsync dir", sys::fsync(&dirfd));
        t.rec("new content", fs::read(&f));
        t.stat("stat", &f);
        let ino_after = fs::metadata(&f).expect("stat").ino();
        t.note("inode changed", ino_before != ino_after);
        t.rec("old reader sees old content", sys::pread(&reader, 100, 0));
        t.rec("list", list(d));
        t
    });
}

#[test]
fn rename_over_open_file_keeps_old_content_for_open_handle() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let target = d.join("target.md");
        fs::write(&target, b"old content").expect("write");
        fs::write(d.join("incoming.md"), b"new content!").expect("write");
        let old = sys::open(&target, RW, 0).expect("open");
        t.rec("read before", sys::pread(&old, 100, 0));
        t.rec("rename over", sys::rename(&d.join("incoming.md"), &target));
        t.rec("old handle", sys::pread(&old, 100, 0));
        t.rec(
            "fstat old",
            sys::fstat(&old).map(|s| (s.st_size, s.st_nlink)),
        );
        t.rec("path has new", fs::read(&target));
        t.rec("write old handle", sys::pwrite(&old, b"OLD", 0));
        t.rec("path unaffected", fs::read(&target));
        t.rec("old handle after write", sys::pread(&old, 100, 0));
        drop(old);
        t.rec("list", list(d));
        t
    });
}

#[test]
fn o_excl_race_has_exactly_one_winner() {
    let m = setup();
    m.pair().same(|d| {
        const THREADS: usize = 8;
        const ROUNDS: usize = 25;
        let mut outcomes = Vec::new();
        for round in 0..ROUNDS {
            let path = d.join(format!("race-{round}"));
            let barrier = Arc::new(Barrier::new(THREADS));
            let handles: Vec<_> = (0..THREADS)
                .map(|i| {
                    let path = path.clone();
                    let barrier = barrier.clone();
                    std::thread::spawn(move || {
                        barrier.wait();
                        match sys::open(&path, libc::O_WRONLY | CREAT | libc::O_EXCL, 0o644) {
                            Ok(fd) => {
                                sys::write(&fd, format!("winner {i}").as_bytes()).expect("write");
                                Ok(i)
                            }
                            Err(e) => Err(e.raw_os_error()),
                        }
                    })
                })
                .collect();
            let results: Vec<_> = handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect();
            let winners: Vec<usize> = results
                .iter()
                .filter_map(|r| r.as_ref().ok().copied())
                .collect();
            let losers_eexist = results
                .iter()
                .filter(|r| matches!(r, Err(Some(libc::EEXIST))))
                .count();
            let content = fs::read_to_string(&path).expect("read");
            let content_is_winner =
                winners.len() == 1 && content == format!("winner {}", winners[0]);
            outcomes.push((winners.len(), losers_eexist, content_is_winner));
            // Normalise the content so the final trees compare equal.
            fs::write(&path, b"done").expect("write");
        }
        outcomes
    });
}

#[test]
fn concurrent_writers_to_different_files_all_land() {
    let m = setup();
    m.pair().same(|d| {
        const THREADS: usize = 8;
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let path = d.join(format!("w{i}.bin"));
                std::thread::spawn(move || {
                    let fd = sys::open(&path, libc::O_WRONLY | CREAT | libc::O_APPEND, 0o644)
                        .expect("open");
                    for chunk in 0..64 {
                        let buf = vec![(i * 31 + chunk) as u8; 4096 + i];
                        let n = sys::write(&fd, &buf).expect("write");
                        assert_eq!(n, buf.len(), "short append");
                    }
                    sys::fsync(&fd).expect("fsync");
                })
            })
            .collect();
        for h in handles {
            h.join().expect("writer thread");
        }
        let mut t = Trace::new();
        for i in 0..THREADS {
            let expected: Vec<u8> = (0..64)
                .flat_map(|chunk| vec![(i * 31 + chunk) as u8; 4096 + i])
                .collect();
            let got = fs::read(d.join(format!("w{i}.bin"))).expect("read");
            t.note(&format!("w{i} as expected"), got == expected);
        }
        t
    });
}

#[test]
fn concurrent_writers_to_one_file_at_disjoint_ranges_all_land() {
    let m = setup();
    m.pair().same(|d| {
        const THREADS: usize = 8;
        const CHUNK: usize = 10_000; // deliberately not page aligned
        const CHUNKS_PER_THREAD: usize = 24;
        let path = d.join("shared.bin");
        fs::write(&path, b"").expect("create");
        let handles: Vec<_> = (0..THREADS)
            .map(|tid| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let fd = sys::open(&path, libc::O_WRONLY, 0).expect("open");
                    for k in 0..CHUNKS_PER_THREAD {
                        let idx = k * THREADS + tid;
                        let buf = vec![(idx % 251) as u8 + 1; CHUNK];
                        sys::pwrite_all(&fd, &buf, (idx * CHUNK) as i64).expect("pwrite");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("writer thread");
        }
        let expected: Vec<u8> = (0..THREADS * CHUNKS_PER_THREAD)
            .flat_map(|idx| vec![(idx % 251) as u8 + 1; CHUNK])
            .collect();
        let got = fs::read(&path).expect("read");
        let first_diff = got.iter().zip(&expected).position(|(a, b)| a != b);
        (got.len(), expected.len(), first_diff)
    });
}

#[test]
fn link_counts_and_directory_nlink_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        fs::create_dir_all(d.join("a/b")).expect("mkdir");
        fs::create_dir(d.join("a/c")).expect("mkdir");
        fs::write(d.join("a/f"), b"f").expect("write");
        for p in ["a", "a/b", "a/f"] {
            t.rec(p, sys::lstat(&d.join(p)).map(|s| s.st_nlink));
        }
        t.rec("rmdir", sys::rmdir(&d.join("a/c")));
        t.rec(
            "a after rmdir",
            sys::lstat(&d.join("a")).map(|s| s.st_nlink),
        );
        t
    });
}

#[test]
fn access_and_chown_match_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("f");
        fs::write(&f, b"x").expect("write");
        let access = |p: &Path, mode: libc::c_int| {
            let c = common::cstr(p);
            // SAFETY: valid C string.
            common::cvt(unsafe { libc::access(c.as_ptr(), mode) })
        };
        for mode in [0o644, 0o000, 0o755, 0o100] {
            sys::chmod(&f, mode).expect("chmod");
            for (name, bits) in [
                ("F", libc::F_OK),
                ("R", libc::R_OK),
                ("W", libc::W_OK),
                ("X", libc::X_OK),
            ] {
                t.rec(&format!("access {mode:o} {name}"), access(&f, bits));
            }
        }
        t.rec("access missing", access(&d.join("missing"), libc::F_OK));
        let chown = |p: &Path, uid: u32, gid: u32| {
            let c = common::cstr(p);
            // SAFETY: valid C string.
            common::cvt(unsafe { libc::lchown(c.as_ptr(), uid, gid) })
        };
        let owner = |p: &Path| sys::lstat(p).map(|s| (s.st_uid, s.st_gid));
        t.rec("chown", chown(&f, 1234, 5678));
        t.rec("owner", owner(&f));
        t.rec("chown gid only", chown(&f, u32::MAX, 4321));
        t.rec("owner", owner(&f));
        sys::chmod(&f, 0o6755).expect("chmod");
        t.rec("chown clears setuid", chown(&f, 1111, u32::MAX));
        t.stat("mode after chown", &f);
        sys::symlink(Path::new("f"), &d.join("l")).expect("symlink");
        t.rec("lchown link", chown(&d.join("l"), 42, 43));
        t.rec("link owner", owner(&d.join("l")));
        t.rec("target owner", owner(&f));
        t
    });
}

#[test]
fn inode_numbers_are_stable_across_rename_and_cache_eviction() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        fs::create_dir(d.join("dir")).expect("mkdir");
        fs::write(d.join("dir/f"), b"x").expect("write");
        let ino = |p: &Path| fs::symlink_metadata(p).map(|md| md.ino());
        let (f0, d0) = (
            ino(&d.join("dir/f")).expect("ino"),
            ino(&d.join("dir")).expect("ino"),
        );
        t.note(
            "same on second stat",
            ino(&d.join("dir/f")).ok() == Some(f0),
        );
        sys::rename(&d.join("dir/f"), &d.join("g")).expect("rename");
        t.note(
            "file keeps inode over rename",
            ino(&d.join("g")).ok() == Some(f0),
        );
        sys::rename(&d.join("dir"), &d.join("dir2")).expect("rename dir");
        t.note(
            "dir keeps inode over rename",
            ino(&d.join("dir2")).ok() == Some(d0),
        );
        // Make the kernel forget what it can (root only; best effort), so the
        // next stat goes through lookup again.
        let _ = fs::write("/proc/sys/vm/drop_caches", b"2");
        t.note(
            "file inode after eviction",
            ino(&d.join("g")).ok() == Some(f0),
        );
        t.note(
            "dir inode after eviction",
            ino(&d.join("dir2")).ok() == Some(d0),
        );
        let fd = sys::open(&d.join("g"), libc::O_RDONLY, 0).expect("open");
        t.note(
            "fstat agrees with stat",
            sys::fstat(&fd).map(|s| s.st_ino).ok() == Some(f0),
        );
        t
    });
}

#[test]
fn fallocate_matches_ext4() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let f = d.join("alloc.bin");
        fs::write(&f, b"abc").expect("write");
        let fd = sys::open(&f, RW, 0).expect("open");
        let falloc = |mode: libc::c_int, off: i64, len: i64| {
            // SAFETY: plain syscall on an owned fd.
            common::cvt(unsafe { libc::fallocate(fd.as_raw_fd(), mode, off, len) })
        };
        t.rec("grow", falloc(0, 0, 10_000));
        t.rec("size", sys::fstat(&fd).map(|s| s.st_size));
        t.rec(
            "keep size",
            falloc(libc::FALLOC_FL_KEEP_SIZE, 10_000, 50_000),
        );
        t.rec("size", sys::fstat(&fd).map(|s| s.st_size));
        t.rec("content", sys::read_all_at0(&fd).map(|c| summarize(&c)));
        t.rec(
            "punch hole",
            falloc(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, 0, 2),
        );
        t.rec("content after punch", sys::pread(&fd, 4, 0));
        t.rec("invalid len", falloc(0, 0, 0));
        t
    });
}

#[test]
fn copying_files_in_and_out_of_the_mount_matches_ext4() {
    let m = setup();
    let outside = tempfile::tempdir().expect("outside");
    let src = outside.path().join("src.bin");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 256) as u8).collect();
    fs::write(&src, &data).expect("write");
    m.pair().same(|d| {
        let mut t = Trace::new();
        // std::fs::copy uses copy_file_range where it can.
        t.rec("copy in", fs::copy(&src, d.join("in.bin")));
        t.rec(
            "copy within",
            fs::copy(d.join("in.bin"), d.join("within.bin")),
        );
        let out = outside.path().join("out.bin");
        t.rec("copy out", fs::copy(d.join("within.bin"), &out));
        t.rec("out content", fs::read(&out).map(|c| c == data));
        let _ = fs::remove_file(&out);
        t.rec(
            "within content",
            fs::read(d.join("within.bin")).map(|c| c == data),
        );
        let cp = std::process::Command::new("cp")
            .arg(d.join("in.bin"))
            .arg(d.join("cp.bin"))
            .status()
            .map(|s| s.success());
        t.rec("cp", cp);
        t.rec("cp content", fs::read(d.join("cp.bin")).map(|c| c == data));
        t
    });
}

/// Paths with their permission bits.
type Modes = Vec<(String, u32)>;

/// Every entry below `dir` (not `dir` itself) with its permission bits.
fn modes_below(dir: &Path) -> Modes {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).expect("read_dir").flatten() {
            // A temporary file may be renamed away between the listing
            // and its lstat: what is gone made nothing readable.
            let md = match fs::symlink_metadata(entry.path()) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                md => md.expect("lstat"),
            };
            if md.file_type().is_symlink() {
                continue;
            }
            if md.is_dir() {
                todo.push(entry.path());
            }
            let rel = entry
                .path()
                .strip_prefix(dir)
                .expect("below")
                .display()
                .to_string();
            out.push((rel, md.mode() & 0o7777));
        }
    }
    out.sort();
    out
}

/// What the daemon itself makes: reminders (a folder and a file made by
/// the organizer through the mount) and its state (index, counters,
/// tasks.json), under the mount's umask; the kernel's modes for files
/// that users create are untouched (see `modes_and_chmod_match_ext4_under_umask`).
fn daemon_made_modes(allow_other: bool) -> (Modes, Modes, u32) {
    set_umask(TEST_UMASK);
    let config = tempfile::NamedTempFile::new().expect("config");
    fs::write(
        config.path(),
        "organizer: { interval: 1h, quiet_period: 0s }\nnotifications: { method: none }\n",
    )
    .expect("write config");
    let mut args = vec!["--config".to_string(), config.path().display().to_string()];
    if allow_other {
        args.push("--allow-other".into());
    }
    let m = Mount::with_options(common::MountOptions {
        extra_args: args,
        seed: vec![(
            "notes/call.md".into(),
            b"Call Ann tomorrow 3pm about the contract.\n".to_vec(),
        )],
        organizer: true,
        ..Default::default()
    });
    let status = fs::read_to_string(format!("/proc/{}/status", m.pid())).expect("status");
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        .expect("Umask line");
    let out = common::run_with_timeout(
        Command::new(common::bin())
            .args(["dream", "--level", "3", "--store"])
            .arg(&m.store)
            .arg("--state-dir")
            .arg(&m.state)
            .arg("--config")
            .arg(config.path()),
        common::COMMAND_TIMEOUT,
    )
    .expect("dream finished");
    assert!(
        out.status.success(),
        "dream failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        m.s("reminders").is_dir(),
        "no reminder was made: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        modes_below(&m.s("reminders"))
            .into_iter()
            .chain([(
                "reminders/".into(),
                fs::metadata(m.s("reminders")).expect("stat").mode() & 0o7777,
            )])
            .collect(),
        modes_below(&m.state),
        umask,
    )
}

#[test]
fn a_private_mounts_daemon_makes_nothing_others_can_read() {
    let (made, state, umask) = daemon_made_modes(false);
    assert_eq!(umask, 0o077);
    assert!(made.len() >= 2, "{made:?}");
    for (path, mode) in &made {
        let want = if path.ends_with('/') { 0o700 } else { 0o600 };
        assert_eq!(*mode, want, "{path}: {mode:o}");
    }
    assert!(
        state.iter().any(|(p, _)| p.contains("tasks.json")),
        "{state:?}"
    );
    for (path, mode) in &state {
        assert_eq!(mode & 0o077, 0, "state {path}: {mode:o}");
    }
}

#[test]
fn with_allow_other_the_daemon_uses_the_users_umask() {
    let (made, state, umask) = daemon_made_modes(true);
    assert_eq!(umask, TEST_UMASK);
    for (path, mode) in &made {
        let want = if path.ends_with('/') { 0o755 } else { 0o644 };
        assert_eq!(*mode, want, "{path}: {mode:o}");
    }
    for (path, mode) in &state {
        assert_eq!(
            mode & 0o022,
            0,
            "state {path} is writable by others: {mode:o}"
        );
    }
}

#[test]
fn access_answers_like_ext4_for_every_mode() {
    let m = setup();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let masks = [
            ("F_OK", libc::F_OK),
            ("R_OK", libc::R_OK),
            ("W_OK", libc::W_OK),
            ("X_OK", libc::X_OK),
            ("RWX", libc::R_OK | libc::W_OK | libc::X_OK),
        ];
        for mode in [0o000, 0o400, 0o200, 0o100, 0o010, 0o644, 0o755] {
            let f = d.join(format!("f{mode:o}"));
            fs::write(&f, b"x").expect("write");
            fs::set_permissions(&f, fs::Permissions::from_mode(mode)).expect("chmod");
            let sub = d.join(format!("d{mode:o}"));
            fs::create_dir(&sub).expect("mkdir");
            fs::set_permissions(&sub, fs::Permissions::from_mode(mode)).expect("chmod");
            for (name, mask) in masks {
                t.rec(&format!("file {mode:o} {name}"), sys::access(&f, mask));
                t.rec(&format!("dir {mode:o} {name}"), sys::access(&sub, mask));
            }
        }
        t.rec("missing", sys::access(&d.join("missing"), libc::F_OK));
        t.rec("below a file", sys::access(&d.join("f644/x"), libc::F_OK));
        t
    });
}
