//! No path under the mount reaches outside the store, whatever sequence
//! of symlinks and renames made it: the mount refuses to hand the kernel
//! a link that, followed from where it is now, would leave the store.

#![cfg(target_os = "linux")]

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

use common::Mount;
use mnemofs::fs::{FsOptions, ROOT_INO, Requester, StoreFs};
use mnemofs::store::Store;
use proptest::prelude::*;

#[test]
fn a_chain_of_allowed_links_cannot_reach_outside() {
    let mut m = Mount::start();
    fs::create_dir(m.m("esc")).unwrap();
    symlink("..", m.m("esc/l")).unwrap();
    let mut previous = "esc/l/..".to_string();
    for i in 1..=4 {
        // Each is relative and lexically inside, so each may be made...
        let _ = symlink(&previous, m.m(format!("e{i}")));
        previous = format!("e{i}/..");
    }
    let _ = symlink("e4/etc/passwd", m.m("stolen.md"));
    // ...but none of them leads out.
    let read = fs::read(m.m("stolen.md"));
    assert!(
        read.is_err(),
        "read {:?} through the chain",
        read.map(|b| b.len())
    );
    for i in 1..=4 {
        assert!(
            fs::read_dir(m.m(format!("e{i}/etc"))).is_err(),
            "e{i}/etc listed"
        );
    }
    // `esc/l` itself leads to the mount's root, which is fine.
    assert!(fs::metadata(m.m("esc/l/esc")).is_ok());

    // A folder of `../..` links moved to a shallower place.
    fs::create_dir_all(m.m("a/b")).unwrap();
    fs::write(m.m("top.md"), "top\n").unwrap();
    symlink("../../top.md", m.m("a/b/up.md")).unwrap();
    assert_eq!(fs::read_to_string(m.m("a/b/up.md")).unwrap(), "top\n");
    fs::rename(m.m("a/b"), m.m("b")).unwrap();
    assert!(fs::read(m.m("b/up.md")).is_err(), "a moved link led out");

    // A link followed once, then moved to where it leads out: the kernel
    // must not keep the text it was given where the link was.
    fs::create_dir(m.m("r5")).unwrap();
    symlink("..", m.m("r5/p5")).unwrap();
    assert_eq!(fs::read_link(m.m("r5/p5")).unwrap(), Path::new(".."));
    assert!(fs::read_dir(m.m("r5/p5")).is_ok());
    fs::rename(m.m("r5/p5"), m.m("p5moved")).unwrap();
    assert!(
        fs::read_link(m.m("p5moved")).is_err(),
        "a moved link's text"
    );
    assert!(
        fs::read_dir(m.m("p5moved")).is_err(),
        "a moved link listed the folder the mount is in"
    );
    m.stop();
}

const ME: Requester = Requester { uid: 0, gid: 0 };

#[derive(Clone, Debug)]
enum Op {
    Mkdir(u8, u8),
    Link(u8, u8, Text),
    Rename(u8, u8, u8, u8),
}

/// Folders are made under the first three names, links under the rest;
/// renames use them all.
const NAMES: [&str; 6] = ["a", "b", "c", "l0", "l1", "l2"];

/// A link's text: a few names to walk down (folders or other links), then
/// a few `..`, then maybe a name: the shapes that chain (`a/l0/..`) and
/// that climb (`../../x`).
#[derive(Clone, Debug)]
struct Text {
    down: Vec<u8>,
    up: u8,
    last: Option<u8>,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..4, 0u8..3).prop_map(|(d, n)| Op::Mkdir(d, n)),
        (
            0u8..4,
            3u8..6,
            proptest::collection::vec(0u8..6, 0..3),
            0u8..4,
            proptest::option::of(0u8..6)
        )
            .prop_map(|(d, n, down, up, last)| Op::Link(d, n, Text { down, up, last })),
        (0u8..4, 0u8..6, 0u8..4, 0u8..6).prop_map(|(a, b, c, d)| Op::Rename(a, b, c, d)),
    ]
}

/// Folder `d` of the four the ops use: the root, `a`, `a/b`, `a/b/c`
/// (looked up by name; `None` when it is missing or not a folder).
fn folder(fs: &StoreFs, d: u8) -> Option<u64> {
    let mut ino = ROOT_INO;
    for name in &NAMES[..d as usize] {
        let entry = fs.lookup(ino, OsStr::new(name)).ok()?;
        if entry.attr.kind != fuser::FileType::Directory {
            return None;
        }
        ino = entry.ino;
    }
    Some(ino)
}

fn link_text(t: &Text) -> String {
    let mut parts: Vec<&str> = t.down.iter().map(|n| NAMES[*n as usize]).collect();
    parts.extend(std::iter::repeat_n("..", t.up as usize));
    parts.extend(t.last.map(|n| NAMES[n as usize]));
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// Where a symlink's text leads, read in folder `at` (inode numbers from
/// the root), as the kernel would walk it with only what the filesystem
/// answers (lookup, readlink): `Err(())` if a `..` climbs above the root,
/// `Ok(None)` if the walk stops (a missing name, a refused link),
/// `Ok(Some(folder))` where it ends.
fn walk(fs: &StoreFs, at: Vec<u64>, text: &[u8], budget: &mut u32) -> Result<Option<Vec<u64>>, ()> {
    let mut at = at;
    for component in Path::new(OsStr::from_bytes(text)).components() {
        use std::path::Component::*;
        match component {
            RootDir | Prefix(_) => return Err(()),
            CurDir => {}
            ParentDir => {
                if at.len() == 1 {
                    return Err(());
                }
                at.pop();
            }
            Normal(name) => {
                let Ok(entry) = fs.lookup(*at.last().unwrap(), name) else {
                    return Ok(None);
                };
                match entry.attr.kind {
                    fuser::FileType::Directory => at.push(entry.ino),
                    fuser::FileType::Symlink => {
                        let Ok(inner) = fs.readlink(entry.ino) else {
                            return Ok(None); // refused: the walk stops here
                        };
                        if *budget == 0 {
                            return Ok(None);
                        }
                        *budget -= 1;
                        match walk(fs, at.clone(), &inner, budget)? {
                            Some(there) => at = there,
                            None => return Ok(None),
                        }
                    }
                    _ => return Ok(None),
                }
            }
        }
    }
    Ok(Some(at))
}

/// Runs `ops`, then follows every link from where it is now; the first
/// link that leads out, if any.
fn first_escape(ops: &[Op]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let fs = StoreFs::new(
        Arc::new(Store::open(dir.path()).unwrap()),
        FsOptions::default(),
    )
    .unwrap();
    for op in ops {
        match op {
            Op::Mkdir(d, n) => {
                if let Some(p) = folder(&fs, *d) {
                    let _ = fs.mkdir(p, OsStr::new(NAMES[*n as usize]), 0o755, ME);
                }
            }
            Op::Link(d, n, t) => {
                if let Some(p) = folder(&fs, *d) {
                    let _ = fs.symlink(
                        p,
                        OsStr::new(NAMES[*n as usize]),
                        Path::new(&link_text(t)),
                        ME,
                    );
                }
            }
            Op::Rename(a, b, c, d) => {
                if let (Some(from), Some(to)) = (folder(&fs, *a), folder(&fs, *c)) {
                    let _ = fs.rename(
                        from,
                        OsStr::new(NAMES[*b as usize]),
                        to,
                        OsStr::new(NAMES[*d as usize]),
                        0,
                    );
                }
            }
        }
    }
    let mut stack = vec![vec![ROOT_INO]];
    while let Some(at) = stack.pop() {
        let here = *at.last().unwrap();
        for name in NAMES {
            let Ok(entry) = fs.lookup(here, OsStr::new(name)) else {
                continue;
            };
            match entry.attr.kind {
                fuser::FileType::Directory if at.len() < 6 => {
                    let mut deeper = at.clone();
                    deeper.push(entry.ino);
                    stack.push(deeper);
                }
                fuser::FileType::Symlink => {
                    if let Ok(text) = fs.readlink(entry.ino) {
                        let mut budget = 40;
                        if walk(&fs, at.clone(), &text, &mut budget).is_err() {
                            return Some(format!("{name} -> {}", String::from_utf8_lossy(&text)));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[test]
fn the_known_chains_do_not_lead_out() {
    let up = |n| Text {
        down: vec![],
        up: n,
        last: None,
    };
    // a/l0 -> ..; l1 -> a/l0/.. (the kernel follows l0 first).
    let chain = [
        Op::Mkdir(0, 0),
        Op::Link(1, 3, up(1)),
        Op::Link(
            0,
            4,
            Text {
                down: vec![0, 3],
                up: 1,
                last: None,
            },
        ),
    ];
    assert_eq!(first_escape(&chain), None);
    // a/b/l0 -> ../../l1, then a/b moved to the root as b.
    let moved = [
        Op::Mkdir(0, 0),
        Op::Mkdir(1, 1),
        Op::Link(
            2,
            3,
            Text {
                down: vec![],
                up: 2,
                last: Some(4),
            },
        ),
        Op::Rename(1, 1, 0, 1),
    ];
    assert_eq!(first_escape(&moved), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn no_sequence_of_links_and_renames_leads_out(ops in proptest::collection::vec(op(), 1..14)) {
        let escape = first_escape(&ops);
        prop_assert!(escape.is_none(), "{} leads out after {ops:?}", escape.unwrap_or_default());
    }
}

#[test]
fn a_folder_swapped_for_a_symlink_behind_the_mount_never_gives_eio() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("f.md"), "outside\n").unwrap();
    let mut m = Mount::with_args(&["--cache-ttl", "1"]);
    fs::create_dir(m.m("d")).unwrap();
    fs::write(m.m("d/f.md"), "inside\n").unwrap();
    assert_eq!(fs::read_to_string(m.m("d/f.md")).unwrap(), "inside\n");
    fs::rename(m.s("d"), m.s("d2")).unwrap();
    symlink(outside.path(), m.s("d")).unwrap();
    let start = std::time::Instant::now();
    // Across the attribute and entry lifetime (1 s here) and beyond.
    while start.elapsed() < std::time::Duration::from_secs(3) {
        for result in [
            fs::read_dir(m.m("d")).map(drop),
            fs::read_to_string(m.m("d/f.md")).map(drop),
            fs::write(m.m("d/new.md"), "x").map(drop),
        ] {
            if let Err(e) = result {
                let errno = e.raw_os_error();
                assert!(
                    [Some(libc::ELOOP), Some(libc::ENOENT), Some(libc::EACCES)].contains(&errno),
                    "{e}"
                );
            } else {
                panic!("reached the folder the symlink names");
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!outside.path().join("new.md").exists());
    m.stop();
}

#[test]
fn an_open_folder_swapped_for_a_symlink_behind_the_mount_is_gone_not_eio() {
    let outside = tempfile::tempdir().unwrap();
    // A short attribute lifetime, so the kernel asks again within the test.
    let mut m = Mount::with_args(&["--cache-ttl", "1"]);
    fs::create_dir(m.m("d")).unwrap();
    let held = fs::File::open(m.m("d")).unwrap();
    fs::rename(m.s("d"), m.s("d2")).unwrap();
    symlink(outside.path(), m.s("d")).unwrap();
    // Past the attribute lifetime, so the kernel asks the daemon again:
    // a change of type in the answer would mark the inode bad (EIO).
    std::thread::sleep(std::time::Duration::from_millis(1300));
    let e = held.metadata().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
    assert_eq!(fs::read_dir(m.m("d2")).unwrap().count(), 0);
    drop(held);
    m.stop();
}
