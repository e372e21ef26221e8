//! Folders renamed and exchanged through the mount while other threads
//! work inside them through descriptors they hold open (`openat`,
//! `fstatat`, `renameat`, `unlinkat`): a held folder is the same folder
//! whatever it is called now, so none of that work may fail. The daemon
//! reaches the store by path, so this checks that no request acts on a
//! path a concurrent folder move made stale. `MNEMOFS_MOVES_SECS` runs
//! longer.

#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Mount, cstr, cvt, env_number, errno_name};

fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    fs::File::open(path).map(OwnedFd::from)
}

/// One round of work inside the folder held by `dir`; the name of the
/// step that failed, with its errno.
fn work(dir: &OwnedFd, name: &str) -> Result<(), (&'static str, i32)> {
    let fd = dir.as_raw_fd();
    let at = |step: &'static str, ret: libc::c_int| {
        cvt(ret).map_err(|e| (step, e.raw_os_error().unwrap_or(0)))
    };
    let file = CString::new(name).unwrap();
    let kept = CString::new(format!("{name}.bak")).unwrap();
    let content = b"---\ntitle: t\n---\nbody\n";
    // SAFETY: valid descriptors and NUL-terminated names throughout.
    unsafe {
        let f = at(
            "create",
            libc::openat(
                fd,
                file.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o644,
            ),
        )?;
        libc::write(f, content.as_ptr().cast(), content.len());
        libc::close(f);
        let mut st: libc::stat = std::mem::zeroed();
        at("stat", libc::fstatat(fd, file.as_ptr(), &mut st, 0))?;
        let f = at(
            "truncate",
            libc::openat(
                fd,
                file.as_ptr(),
                libc::O_RDWR | libc::O_TRUNC | libc::O_CLOEXEC,
            ),
        )?;
        libc::close(f);
        at(
            "rename",
            libc::renameat(fd, file.as_ptr(), fd, kept.as_ptr()),
        )?;
        at("unlink", libc::unlinkat(fd, kept.as_ptr(), 0))?;
    }
    Ok(())
}

#[test]
fn work_inside_held_folders_never_fails_while_they_move() {
    let m = Mount::start();
    for d in ["x", "p", "q"] {
        fs::create_dir(m.m(d)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mover = {
        let (root, stop) = (m.mnt.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let (x, y, p, q) = (
                cstr(&root.join("x")),
                cstr(&root.join("y")),
                cstr(&root.join("p")),
                cstr(&root.join("q")),
            );
            let mut moves = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (from, to) = if moves.is_multiple_of(2) {
                    (&x, &y)
                } else {
                    (&y, &x)
                };
                // SAFETY: NUL-terminated paths.
                unsafe {
                    cvt(libc::rename(from.as_ptr(), to.as_ptr())).expect("rename a folder");
                    cvt(libc::syscall(
                        libc::SYS_renameat2,
                        libc::AT_FDCWD,
                        p.as_ptr(),
                        libc::AT_FDCWD,
                        q.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    ) as libc::c_int)
                    .expect("exchange two folders");
                }
                moves += 1;
            }
            moves
        })
    };
    // Each worker holds the three folders open for the whole run.
    let held: Vec<Arc<OwnedFd>> = ["x", "p", "q"]
        .iter()
        .map(|d| Arc::new(open_dir(&m.m(d)).unwrap()))
        .collect();
    let until = Instant::now() + Duration::from_secs(env_number("MNEMOFS_MOVES_SECS", 3));
    let workers: Vec<_> = (0..3)
        .map(|w| {
            let held = held.clone();
            std::thread::spawn(move || {
                let mut failed: BTreeMap<(&'static str, i32), u32> = BTreeMap::new();
                let mut rounds = 0u32;
                while Instant::now() < until {
                    for (k, dir) in held.iter().enumerate() {
                        if let Err(step) = work(dir, &format!("w{w}-{k}-{rounds}.md")) {
                            *failed.entry(step).or_default() += 1;
                        }
                    }
                    rounds += 1;
                }
                (rounds, failed)
            })
        })
        .collect();
    let mut failed = BTreeMap::new();
    let mut rounds = 0;
    for w in workers {
        let (r, f) = w.join().expect("worker");
        rounds += r;
        for (step, n) in f {
            *failed.entry(step).or_insert(0) += n;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let moves = mover.join().expect("mover");
    assert!(moves > 10 && rounds > 10, "{moves} moves, {rounds} rounds");
    let failed: Vec<String> = failed
        .iter()
        .map(|((step, errno), n)| format!("{step}: {} x{n}", errno_name(*errno)))
        .collect();
    assert!(
        failed.is_empty(),
        "{rounds} rounds against {moves} moves; failed: {failed:?}"
    );
    // Everything made was removed: the three folders are empty.
    let folders: Vec<_> = ["x", "y", "p", "q"]
        .into_iter()
        .filter(|d| m.m(d).exists())
        .collect();
    assert_eq!(folders.len(), 3, "{folders:?}");
    for d in folders {
        assert_eq!(fs::read_dir(m.m(d)).unwrap().count(), 0, "{d}");
    }
}
