//! Sandbox tests: the daemon touches nothing outside the store, refuses
//! symlinks that leave the mount and special files, and enforces the file
//! size cap.
//!
//! A subtlety when reading these: the kernel, not the daemon, follows
//! symlinks met while walking a path through the mount. A symlink planted in
//! the store that points to /etc therefore leads a path walk to the host's
//! /etc, exactly as it would on ext4. What the daemon must never do is follow
//! a symlink itself: present a planted link as anything but a link, apply an
//! operation on the link to its target, or resolve a backing path through an
//! intermediate component that has become a symlink.

#![cfg(target_os = "linux")]

mod common;

use common::sys;
use common::{Mount, MountOptions, TEST_UMASK, Trace, errno, errno_name, list, set_umask};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A directory outside the store with a secret in it; removed on drop.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mnemofs-outside-")
            .tempdir()
            .expect("outside dir");
        fs::write(dir.path().join("secret"), b"TOP SECRET").expect("secret");
        fs::create_dir(dir.path().join("sub")).expect("sub");
        fs::create_dir(dir.path().join("b")).expect("b");
        sys::setxattr(
            &dir.path().join("secret"),
            "user.secret",
            b"xattr secret",
            0,
        )
        .expect("xattr on outside file");
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Everything observable about the outside tree.
    fn snapshot(&self) -> Vec<String> {
        let mut s = common::snapshot(self.path());
        let secret = self.path().join("secret");
        let md = fs::symlink_metadata(&secret).expect("stat secret");
        s.push(format!("secret mtime {} {}", md.mtime(), md.mtime_nsec()));
        s.push(format!("secret mode {:o}", md.mode()));
        s.push(format!("secret xattrs {:?}", sys::listxattr_user(&secret)));
        s
    }
}

fn assert_errno_in<T: std::fmt::Debug>(what: &str, r: std::io::Result<T>, allowed: &[i32]) {
    match r {
        Ok(v) => panic!(
            "{what}: succeeded ({v:?}); expected one of {}",
            names(allowed)
        ),
        Err(e) => {
            let n = e.raw_os_error().unwrap_or(0);
            assert!(
                allowed.contains(&n),
                "{what}: failed with {} ({e}); expected one of {}",
                errno_name(n),
                names(allowed)
            );
        }
    }
}

fn names(errnos: &[i32]) -> String {
    errnos
        .iter()
        .map(|n| errno_name(*n))
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn absolute_symlink_targets_are_refused_with_eperm() {
    let m = Mount::start();
    for target in ["/etc/passwd", "/etc", "/", "/tmp/x"] {
        let link = m.m(format!("abs-{}", target.replace('/', "_")));
        assert_eq!(
            errno(sys::symlink(Path::new(target), &link)),
            Some(libc::EPERM),
            "symlink -> {target}"
        );
    }
    // Even an absolute path that happens to point into the mount itself.
    fs::write(m.m("inside.md"), b"x").expect("write");
    assert_eq!(
        errno(sys::symlink(&m.m("inside.md"), &m.m("abs-inside"))),
        Some(libc::EPERM),
        "absolute symlink into the mount"
    );
    assert_eq!(list(&m.store).expect("list store"), vec!["inside.md"]);
}

#[test]
fn relative_symlinks_that_climb_out_are_refused_inside_ones_work() {
    let m = Mount::start();
    fs::create_dir_all(m.m("a/b")).expect("mkdir");
    fs::write(m.m("top.md"), b"top").expect("write");
    let refused = [
        ("esc1", ".."),
        ("esc2", "../x"),
        ("a/esc3", "../../x"),
        ("a/b/esc4", "../../../etc/passwd"),
        ("esc5", "a/../../x"),
        ("esc6", "a/b/../../../x"),
        ("a/esc7", "b/../../.."),
    ];
    for (link, target) in refused {
        assert_eq!(
            errno(sys::symlink(Path::new(target), &m.m(link))),
            Some(libc::EPERM),
            "symlink {link} -> {target} climbs out of the mount"
        );
        assert!(
            fs::symlink_metadata(m.s(link)).is_err(),
            "refused link {link} exists in the store"
        );
    }
    let allowed = [
        ("ok1", "top.md", "top.md"),
        ("a/ok2", "../top.md", "top.md"),
        ("a/b/ok3", "../../top.md", "top.md"),
        ("ok4", "a/../top.md", "top.md"),
        ("ok5", "./top.md", "top.md"),
        ("a/b/ok6", "../../a/b/../../top.md", "top.md"),
        ("ok7", "not-yet-there.md", ""),
        ("a/ok8", "..", ""),
    ];
    for (link, target, reads) in allowed {
        sys::symlink(Path::new(target), &m.m(link))
            .unwrap_or_else(|e| panic!("symlink {link} -> {target} stays inside: {e}"));
        assert_eq!(
            sys::readlink(&m.m(link)).expect("readlink"),
            target.as_bytes(),
            "readlink {link}"
        );
        assert_eq!(
            fs::read_link(m.s(link))
                .expect("link in store")
                .as_os_str()
                .as_bytes(),
            target.as_bytes(),
            "the store holds the link verbatim"
        );
        if !reads.is_empty() {
            assert_eq!(fs::read(m.m(link)).expect("read via link"), b"top");
        }
    }
}

#[test]
fn planted_symlinks_are_shown_as_links_and_never_followed_by_the_daemon() {
    let outside = Outside::new();
    let before = outside.snapshot();
    let secret = outside.path().join("secret");
    let m = Mount::with_options(MountOptions::default());
    // Planted while mounted (as git checkout or a sync tool would).
    std::os::unix::fs::symlink(&secret, m.s("passwd-link")).expect("plant");
    std::os::unix::fs::symlink(outside.path(), m.s("dir-link")).expect("plant");
    std::os::unix::fs::symlink("/etc", m.s("etc-link")).expect("plant");
    let rel_escape: PathBuf = Path::new("..").join("..").join("..").join("etc");
    std::os::unix::fs::symlink(&rel_escape, m.s("rel-escape")).expect("plant");
    std::os::unix::fs::symlink(&secret, m.s("passwd-link2")).expect("plant");

    for name in ["passwd-link", "dir-link", "etc-link", "rel-escape"] {
        let p = m.m(name);
        // Poll: the planted entry may take a moment to show up (watcher/TTL).
        common::poll_until(std::time::Duration::from_secs(5), || {
            fs::symlink_metadata(&p).is_ok()
        });
        let st = sys::lstat(&p).unwrap_or_else(|e| panic!("lstat {name}: {e}"));
        assert_eq!(
            st.st_mode & libc::S_IFMT,
            libc::S_IFLNK,
            "{name} must be presented as a symlink, not as its target"
        );
        // Each leads out of the store: the mount does not hand the kernel
        // its text, so nothing under the mount reaches outside.
        assert_errno_in(
            &format!("readlink {name}"),
            sys::readlink(&p),
            &[libc::EACCES],
        );
        assert!(
            fs::read(&p).is_err(),
            "{name} was followed out of the store"
        );
        assert_errno_in(
            &format!("open {name} O_NOFOLLOW"),
            sys::open(&p, libc::O_RDONLY | libc::O_NOFOLLOW, 0),
            &[libc::ELOOP],
        );
        assert_errno_in(
            &format!("open {name} O_NOFOLLOW|O_CREAT"),
            sys::open(&p, libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW, 0o644),
            &[libc::ELOOP],
        );
    }

    // Operations that act on the link itself must not reach the target.
    let link = m.m("passwd-link");
    assert!(
        sys::getxattr(&link, "user.secret").is_err(),
        "lgetxattr on a planted link returned the outside file's xattr"
    );
    assert!(
        sys::setxattr(&link, "user.pwned", b"1", 0).is_err(),
        "lsetxattr on a symlink must fail (ext4: EPERM), not tag the target"
    );
    let _ = sys::utimens(&link, (1, 0), (2, 0), libc::AT_SYMLINK_NOFOLLOW);
    // unlink and rename act on the link, never on the target.
    sys::rename(&m.m("passwd-link2"), &m.m("renamed-link")).expect("rename planted link");
    sys::unlink(&m.m("renamed-link")).expect("unlink planted link");
    assert!(fs::symlink_metadata(m.s("renamed-link")).is_err());
    assert_eq!(
        outside.snapshot(),
        before,
        "the outside tree changed through operations on planted links"
    );
    assert_eq!(fs::read(&secret).expect("secret"), b"TOP SECRET");
}

/// The kernel caches a directory inode; the store then swaps the directory
/// for a symlink to the outside. Work through the cached inode must fail
/// rather than land outside.
#[test]
fn directory_swapped_for_outside_symlink_after_lookup_is_not_followed() {
    let outside = Outside::new();
    let before = outside.snapshot();
    let m = Mount::start();
    fs::create_dir(m.m("dir")).expect("mkdir dir");
    fs::create_dir_all(m.m("a/b")).expect("mkdir a/b");
    let dirfd = sys::open(&m.m("dir"), libc::O_RDONLY | libc::O_DIRECTORY, 0).expect("open dir");
    let bfd = sys::open(&m.m("a/b"), libc::O_RDONLY | libc::O_DIRECTORY, 0).expect("open a/b");

    // Swap behind the daemon's back: the leaf dir, and an intermediate one.
    fs::remove_dir(m.s("dir")).expect("rmdir in store");
    std::os::unix::fs::symlink(outside.path(), m.s("dir")).expect("plant dir");
    fs::remove_dir(m.s("a/b")).expect("rmdir b");
    fs::remove_dir(m.s("a")).expect("rmdir a");
    // outside/b exists, so a path-based daemon resolving a/b would find it.
    std::os::unix::fs::symlink(outside.path(), m.s("a")).expect("plant a");
    let store_before = common::snapshot(&m.store);

    let allowed = [libc::ELOOP, libc::ENOENT, libc::ENOTDIR, libc::ESTALE];
    for (label, fd) in [("dir", &dirfd), ("a/b", &bfd)] {
        assert_errno_in(
            &format!("create {label}/x through the cached inode"),
            sys::openat(
                fd,
                Path::new("x"),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                0o644,
            ),
            &allowed,
        );
        assert_errno_in(
            &format!("mkdir {label}/newdir through the cached inode"),
            sys::mkdirat(fd, Path::new("newdir"), 0o755),
            &allowed,
        );
        let read = sys::openat(fd, Path::new("secret"), libc::O_RDONLY, 0)
            .and_then(|f| sys::read_all_at0(&f));
        assert_errno_in(
            &format!("read {label}/secret through the cached inode"),
            read,
            &allowed,
        );
        let sym = {
            let c = common::cstr(Path::new("s"));
            let t = common::cstr(Path::new("secret"));
            // SAFETY: valid fd and C strings.
            common::cvt(unsafe {
                libc::symlinkat(t.as_ptr(), std::os::fd::AsRawFd::as_raw_fd(fd), c.as_ptr())
            })
        };
        assert_errno_in(
            &format!("symlink in {label} through the cached inode"),
            sym,
            &allowed,
        );
    }
    assert_eq!(
        outside.snapshot(),
        before,
        "the outside directory was modified"
    );
    assert_eq!(
        common::snapshot(&m.store),
        store_before,
        "the store changed"
    );
}

const CAP: usize = 1_048_576;

fn capped() -> Mount {
    set_umask(TEST_UMASK);
    Mount::with_args(&["--max-file-size", "1048576"])
}

#[test]
fn writes_beyond_the_size_cap_get_efbig_and_leave_the_file_unchanged() {
    let m = capped();
    let f = m.m("big.bin");
    let data: Vec<u8> = (0..CAP).map(|i| (i % 249) as u8).collect();
    let fd = sys::open(&f, libc::O_RDWR | libc::O_CREAT, 0o644).expect("create");
    sys::pwrite_all(&fd, &data, 0).expect("writing exactly the cap succeeds");
    sys::fsync(&fd).expect("fsync");
    assert_eq!(
        errno(sys::pwrite(&fd, b"x", CAP as i64)),
        Some(libc::EFBIG),
        "one byte past the cap"
    );
    assert_eq!(
        errno(sys::pwrite(&fd, b"far", 10 * CAP as i64)),
        Some(libc::EFBIG),
        "far past the cap"
    );
    assert_eq!(
        errno(sys::lseek(&fd, 0, libc::SEEK_END).and_then(|_| sys::write(&fd, b"more"))),
        Some(libc::EFBIG),
        "sequential write at the cap"
    );
    drop(fd);
    let app = sys::open(&f, libc::O_WRONLY | libc::O_APPEND, 0).expect("open append");
    assert_eq!(
        errno(sys::write(&app, b"z")),
        Some(libc::EFBIG),
        "append at the cap"
    );
    drop(app);
    assert_eq!(
        errno(sys::truncate(&f, CAP as i64 + 1)),
        Some(libc::EFBIG),
        "truncate past cap"
    );
    let fd = sys::open(&f, libc::O_RDWR, 0).expect("open");
    assert_eq!(
        errno(sys::ftruncate(&fd, 2 * CAP as i64)),
        Some(libc::EFBIG),
        "ftruncate past cap"
    );
    drop(fd);
    assert_eq!(fs::metadata(&f).expect("stat").len(), CAP as u64);
    assert_eq!(
        fs::read(&f).expect("read mount"),
        data,
        "content through the mount"
    );
    assert_eq!(
        fs::read(m.s("big.bin")).expect("read store"),
        data,
        "content in the store"
    );
    // Truncating to exactly the cap, and shrinking, still work.
    sys::truncate(&f, CAP as i64).expect("truncate to the cap");
    sys::truncate(&f, 10).expect("shrink");
    assert_eq!(fs::read(&f).expect("read"), &data[..10]);
}

#[test]
fn a_write_straddling_the_cap_never_extends_past_it() {
    let m = capped();
    let f = m.m("edge.bin");
    fs::write(&f, vec![b'a'; CAP - 5]).expect("write");
    let fd = sys::open(&f, libc::O_RDWR, 0).expect("open");
    match sys::pwrite(&fd, b"0123456789", (CAP - 5) as i64) {
        // ext4 under RLIMIT_FSIZE does a short write up to the limit.
        Ok(n) => assert_eq!(n, 5, "a straddling write may only fill up to the cap"),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EFBIG), "straddling write: {e}"),
    }
    drop(fd);
    let len = fs::metadata(&f).expect("stat").len() as usize;
    assert!(len <= CAP, "file grew past the cap: {len}");
    let content = fs::read(m.s("edge.bin")).expect("store");
    assert!(content.len() <= CAP);
    assert!(content[..CAP - 5].iter().all(|b| *b == b'a'));
    // A fresh file larger than the cap in one write_all (cp of a big file).
    let r = fs::write(m.m("copy.bin"), vec![7u8; CAP + 4096]);
    assert_eq!(
        errno(r),
        Some(libc::EFBIG),
        "writing a file larger than the cap"
    );
    let len = fs::metadata(m.s("copy.bin"))
        .map(|md| md.len())
        .unwrap_or(0);
    assert!(len <= CAP as u64, "store file grew past the cap: {len}");
}

#[test]
fn the_default_cap_is_64_mib() {
    let m = Mount::start();
    let f = m.m("default-cap.bin");
    let fd = sys::open(&f, libc::O_RDWR | libc::O_CREAT, 0o644).expect("create");
    let cap = 64 * 1024 * 1024i64;
    sys::pwrite(&fd, b"x", cap - 1).expect("last byte under the default cap");
    assert_eq!(errno(sys::pwrite(&fd, b"y", cap)), Some(libc::EFBIG));
    assert_eq!(errno(sys::ftruncate(&fd, cap + 1)), Some(libc::EFBIG));
    drop(fd);
    assert_eq!(fs::metadata(&f).expect("stat").len(), cap as u64);
}

#[test]
fn hard_links_device_nodes_fifos_and_sockets_are_refused_with_eperm() {
    let m = Mount::start();
    fs::write(m.m("a.md"), b"a").expect("write");
    assert_eq!(
        errno(sys::link(&m.m("a.md"), &m.m("hard.md"))),
        Some(libc::EPERM),
        "link"
    );
    assert_eq!(
        errno(sys::mkfifo(&m.m("fifo"), 0o644)),
        Some(libc::EPERM),
        "mkfifo"
    );
    assert_eq!(
        errno(sys::mknod(&m.m("fifo2"), libc::S_IFIFO | 0o644, 0)),
        Some(libc::EPERM),
        "mknod fifo"
    );
    assert_eq!(
        errno(sys::mknod(
            &m.m("null"),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, 3)
        )),
        Some(libc::EPERM),
        "mknod char device"
    );
    assert_eq!(
        errno(sys::mknod(
            &m.m("blk"),
            libc::S_IFBLK | 0o666,
            libc::makedev(7, 0)
        )),
        Some(libc::EPERM),
        "mknod block device"
    );
    assert_eq!(
        errno(sys::mknod(&m.m("sock"), libc::S_IFSOCK | 0o666, 0)),
        Some(libc::EPERM),
        "mknod socket"
    );
    let bound = std::os::unix::net::UnixListener::bind(m.m("bound.sock"));
    assert_eq!(errno(bound), Some(libc::EPERM), "bind a unix socket");
    assert_eq!(
        list(&m.store).expect("list store"),
        vec!["a.md"],
        "nothing was created"
    );
    assert_eq!(fs::read(m.m("a.md")).expect("read"), b"a");
}

#[test]
fn names_with_invalid_utf8_work_like_on_a_plain_dir() {
    set_umask(TEST_UMASK);
    let m = Mount::start();
    m.pair().same(|d| {
        let mut t = Trace::new();
        let raw: &[&[u8]] = &[b"caf\xe9.md", b"\xff\xfe", b"ok-\x80-\xc3", b"tab\there"];
        for name in raw {
            let p = d.join(OsStr::from_bytes(name));
            t.rec(&format!("create {name:?}"), fs::write(&p, name));
            t.stat(&format!("stat {name:?}"), &p);
            t.rec(&format!("read {name:?}"), fs::read(&p));
        }
        t.rec(
            "mkdir",
            sys::mkdir(&d.join(OsStr::from_bytes(b"dir\xe9")), 0o755),
        );
        t.rec(
            "file in dir",
            fs::write(d.join(OsStr::from_bytes(b"dir\xe9/inner\xff")), b"in"),
        );
        let mut names: Vec<Vec<u8>> = fs::read_dir(d)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().as_bytes().to_vec())
            .collect();
        names.sort();
        t.note("listing bytes", names);
        t.rec(
            "rename",
            sys::rename(
                &d.join(OsStr::from_bytes(b"caf\xe9.md")),
                &d.join(OsStr::from_bytes(b"caf\xe9-renamed.md")),
            ),
        );
        t.rec(
            "unlink",
            sys::unlink(&d.join(OsStr::from_bytes(b"\xff\xfe"))),
        );
        t.rec(
            "unlink again",
            sys::unlink(&d.join(OsStr::from_bytes(b"\xff\xfe"))),
        );
        t.rec("list", list(d));
        t
    });
}
