//! Property-based reference model: random sequences of file operations on a
//! small namespace run against a plain directory (the reference) and the
//! mount; every result and the final trees must be identical. Small names
//! make collisions (EEXIST, ENOTEMPTY, ENOTDIR, renames over things) common.

#![cfg(target_os = "linux")]

mod common;

use common::sys;
use common::{Mount, TEST_UMASK, Trace, list, set_umask, snapshot, summarize};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::fs;
use std::path::Path;

const PATHS: &[&str] = &["a", "b", "d", "d/a", "d/e", "d/e/a", "e", "e/b"];
/// Relative targets that never climb out of the case directory.
const LINK_TARGETS: &[&str] = &["a", "d", "missing", "e/b"];

#[derive(Debug, Clone)]
enum Op {
    Create {
        p: usize,
        excl: bool,
        trunc: bool,
    },
    Write {
        p: usize,
        off: u32,
        len: u16,
        byte: u8,
        append: bool,
    },
    Truncate {
        p: usize,
        len: u32,
    },
    Read {
        p: usize,
    },
    Unlink {
        p: usize,
    },
    Mkdir {
        p: usize,
    },
    Rmdir {
        p: usize,
    },
    Rename {
        from: usize,
        to: usize,
        flags: u8,
    },
    Symlink {
        target: usize,
        p: usize,
    },
    Chmod {
        p: usize,
        mode: u16,
    },
    Stat {
        p: usize,
    },
    List {
        p: usize,
    },
    SetXattr {
        p: usize,
        value: u8,
    },
    GetXattr {
        p: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let p = || 0..PATHS.len();
    prop_oneof![
        3 => (p(), any::<bool>(), any::<bool>()).prop_map(|(p, excl, trunc)| Op::Create { p, excl, trunc }),
        3 => (p(), 0u32..70_000, 0u16..9000, any::<u8>(), any::<bool>())
            .prop_map(|(p, off, len, byte, append)| Op::Write { p, off, len, byte, append }),
        1 => (p(), 0u32..80_000).prop_map(|(p, len)| Op::Truncate { p, len }),
        2 => p().prop_map(|p| Op::Read { p }),
        2 => p().prop_map(|p| Op::Unlink { p }),
        2 => p().prop_map(|p| Op::Mkdir { p }),
        1 => p().prop_map(|p| Op::Rmdir { p }),
        3 => (p(), p(), 0u8..3).prop_map(|(from, to, flags)| Op::Rename { from, to, flags }),
        1 => (0..LINK_TARGETS.len(), p()).prop_map(|(target, p)| Op::Symlink { target, p }),
        1 => (p(), prop_oneof![Just(0o644u16), Just(0o600), Just(0o755), Just(0o000)])
            .prop_map(|(p, mode)| Op::Chmod { p, mode }),
        2 => p().prop_map(|p| Op::Stat { p }),
        1 => p().prop_map(|p| Op::List { p }),
        1 => (p(), any::<u8>()).prop_map(|(p, value)| Op::SetXattr { p, value }),
        1 => p().prop_map(|p| Op::GetXattr { p }),
    ]
}

fn apply(root: &Path, ops: &[Op]) -> Trace {
    let mut t = Trace::new();
    let at = |i: usize| root.join(PATHS[i]);
    for (n, op) in ops.iter().enumerate() {
        let label = format!("#{n} {op:?}");
        match *op {
            Op::Create { p, excl, trunc } => {
                let mut flags = libc::O_RDWR | libc::O_CREAT;
                if excl {
                    flags |= libc::O_EXCL;
                }
                if trunc {
                    flags |= libc::O_TRUNC;
                }
                t.ok(&label, sys::open(&at(p), flags, 0o644));
            }
            Op::Write {
                p,
                off,
                len,
                byte,
                append,
            } => {
                let flags = if append {
                    libc::O_WRONLY | libc::O_APPEND
                } else {
                    libc::O_WRONLY
                };
                let r = sys::open(&at(p), flags, 0).and_then(|fd| {
                    sys::pwrite_all(&fd, &vec![byte; len as usize], off as i64)?;
                    sys::fstat(&fd).map(|s| s.st_size)
                });
                t.rec(&label, r);
            }
            Op::Truncate { p, len } => {
                t.rec(&label, sys::truncate(&at(p), len as i64));
            }
            Op::Read { p } => {
                t.rec(&label, fs::read(at(p)).map(|c| summarize(&c)));
            }
            Op::Unlink { p } => {
                t.rec(&label, sys::unlink(&at(p)));
            }
            Op::Mkdir { p } => {
                t.rec(&label, sys::mkdir(&at(p), 0o755));
            }
            Op::Rmdir { p } => {
                t.rec(&label, sys::rmdir(&at(p)));
            }
            Op::Rename { from, to, flags } => {
                let flags = match flags {
                    0 => 0,
                    1 => libc::RENAME_NOREPLACE,
                    _ => libc::RENAME_EXCHANGE,
                };
                t.rec(&label, sys::renameat2(&at(from), &at(to), flags));
            }
            Op::Symlink { target, p } => {
                t.rec(
                    &label,
                    sys::symlink(Path::new(LINK_TARGETS[target]), &at(p)),
                );
            }
            Op::Chmod { p, mode } => {
                t.rec(&label, sys::chmod(&at(p), mode as u32));
            }
            Op::Stat { p } => {
                t.stat(&label, &at(p));
            }
            Op::List { p } => {
                t.rec(&label, list(&at(p)));
            }
            Op::SetXattr { p, value } => {
                t.rec(&label, sys::setxattr(&at(p), "user.model", &[value], 0));
            }
            Op::GetXattr { p } => {
                t.rec(&label, sys::getxattr(&at(p), "user.model"));
            }
        }
    }
    t
}

#[test]
fn random_operation_sequences_match_a_plain_directory() {
    set_umask(TEST_UMASK);
    let m = Mount::start();
    let config = Config {
        cases: 96,
        max_shrink_iters: 300,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&vec(op(), 1..40), |ops| {
        let pair = m.pair();
        let want = apply(&pair.plain, &ops);
        let got = apply(&pair.mounted, &ops);
        if want != got {
            let diff: Vec<String> = want
                .0
                .iter()
                .zip(&got.0)
                .filter(|(w, g)| w != g)
                .map(|(w, g)| format!("plain: {w}\nmount: {g}"))
                .collect();
            return Err(TestCaseError::fail(format!(
                "results differ:\n{}",
                diff.join("\n")
            )));
        }
        let (plain, mounted, store) = (
            snapshot(&pair.plain),
            snapshot(&pair.mounted),
            snapshot(&pair.store),
        );
        prop_assert_eq!(&plain, &mounted, "final trees differ (plain vs mount)");
        prop_assert_eq!(&mounted, &store, "mount and store differ");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
