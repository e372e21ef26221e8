//! Volatile counters: kept in state, shown as `user.mnemofs.*` attributes.

#![cfg(target_os = "linux")]

mod common;

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use common::{Mount, MountOptions, poll_until};

fn getxattr(path: &Path, name: &str) -> Result<String, i32> {
    let p = CString::new(path.as_os_str().as_bytes()).expect("path");
    let n = CString::new(name).expect("name");
    let mut buf = vec![0u8; 256];
    // SAFETY: NUL-terminated strings and a buffer of buf.len() bytes.
    let len = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if len < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
    }
    buf.truncate(len as usize);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn listxattr(path: &Path) -> Vec<String> {
    let p = CString::new(path.as_os_str().as_bytes()).expect("path");
    let mut buf = vec![0u8; 4096];
    // SAFETY: NUL-terminated path and a buffer of buf.len() bytes.
    let len = unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    assert!(len >= 0, "listxattr failed");
    buf.truncate(len as usize);
    buf.split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

#[test]
fn reads_by_other_processes_are_counted_and_shown_as_xattrs() {
    let m = Mount::start();
    let note = m.m("note.md");
    fs::write(&note, "# Note\nbody\n").expect("write");
    for _ in 0..3 {
        let out = Command::new("cat").arg(&note).output().expect("cat");
        assert!(out.status.success());
    }
    assert_eq!(getxattr(&note, "user.mnemofs.access_count"), Ok("3".into()));
    // Readable by name, but not listed: listings match the store's.
    let names = listxattr(&note);
    assert!(
        !names.iter().any(|n| n.starts_with("user.mnemofs.")),
        "{names:?}"
    );
    // The daemon owns these attributes.
    let p = CString::new(note.as_os_str().as_bytes()).expect("path");
    let n = CString::new("user.mnemofs.access_count").expect("name");
    // SAFETY: NUL-terminated strings and a one-byte value.
    let ret = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), b"9".as_ptr().cast(), 1, 0) };
    assert_eq!(ret, -1);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EPERM)
    );
    // The counters follow a rename, and nothing was written into the file.
    fs::rename(&note, m.m("renamed.md")).expect("rename");
    assert_eq!(
        getxattr(&m.m("renamed.md"), "user.mnemofs.access_count"),
        Ok("3".into())
    );
    assert_eq!(
        fs::read_to_string(m.s("renamed.md")).expect("store"),
        "# Note\nbody\n"
    );
}

#[test]
fn write_sessions_update_version_and_content_hash() {
    let m = Mount::with_options(MountOptions {
        organizer: true,
        ..Default::default()
    });
    let note = m.m("plain.txt");
    fs::write(&note, "one").expect("write");
    assert!(
        poll_until(std::time::Duration::from_secs(10), || {
            getxattr(&note, "user.mnemofs.version") == Ok("1".into())
        }),
        "version after one write session: {:?}",
        getxattr(&note, "user.mnemofs.version")
    );
    let first = getxattr(&note, "user.mnemofs.content_hash").expect("hash");
    assert!(first.starts_with("fnv1a64:"), "{first}");
    fs::write(&note, "two").expect("write again");
    assert!(poll_until(std::time::Duration::from_secs(10), || {
        getxattr(&note, "user.mnemofs.version") == Ok("2".into())
    }));
    assert_ne!(
        getxattr(&note, "user.mnemofs.content_hash").expect("hash"),
        first
    );
    assert!(getxattr(&note, "user.mnemofs.updated_at").is_ok_and(|t| t.ends_with('Z')));
}

/// `access_count` of `rel` on the mount (0 when none was recorded).
fn access_count(m: &Mount, rel: &str) -> u64 {
    match getxattr(&m.m(rel), "user.mnemofs.access_count") {
        Ok(n) => n.parse().expect("a number"),
        Err(libc::ENODATA) => 0,
        Err(e) => panic!("getxattr {rel}: errno {e}"),
    }
}

fn run_ok(cmd: &mut Command) {
    let out = common::run_with_timeout(cmd, std::time::Duration::from_secs(120))
        .unwrap_or_else(|| panic!("{cmd:?} timed out"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Walkers (grep -r, tar, find -exec cat, git add) read every memory and
/// count nothing; a single cat, a read through `by-id/` and a read through
/// `mnemofs tool` each count one.
#[test]
fn walks_of_the_tree_are_not_counted_but_single_reads_are() {
    let notes = [
        (
            "notes/a.md",
            "---\nid: aaaaaaaa-0000-4000-8000-000000000001\n---\nalpha walker\n",
        ),
        ("notes/b.md", "beta walker\n"),
        ("notes/deep/c.md", "gamma walker\n"),
        ("d.md", "delta walker\n"),
    ];
    let m = Mount::with_options(MountOptions {
        seed: notes
            .iter()
            .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
            .collect(),
        ..Default::default()
    });
    let total = |m: &Mount| notes.iter().map(|(p, _)| access_count(m, p)).sum::<u64>();
    run_ok(Command::new("grep").arg("-r").arg("walker").arg(&m.mnt));
    assert_eq!(total(&m), 0, "grep -r was counted");
    run_ok(
        Command::new("tar")
            .arg("cf")
            .arg(m.plain.join("backup.tar"))
            .arg("-C")
            .arg(&m.mnt)
            .arg("."),
    );
    assert_eq!(total(&m), 0, "tar was counted");
    run_ok(
        Command::new("find")
            .arg(&m.mnt)
            .args(["-name", "*.md", "-exec", "cat", "{}", ";"]),
    );
    assert_eq!(total(&m), 0, "find -exec cat was counted");
    if common::have_program("rsync") {
        run_ok(
            Command::new("rsync")
                .arg("-a")
                .arg(format!("{}/", m.mnt.display()))
                .arg(m.plain.join("copy")),
        );
        assert_eq!(total(&m), 0, "rsync was counted");
    }
    if common::have_program("git") {
        let git = |args: &[&str]| {
            run_ok(
                Command::new("git")
                    .arg("-C")
                    .arg(&m.mnt)
                    .args(["-c", "user.name=t", "-c", "user.email=t@e"])
                    .args(args),
            )
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        assert_eq!(total(&m), 0, "git add was counted");
    }
    // Past the walks' window, so nothing is left of them.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    run_ok(Command::new("cat").arg(m.m("notes/b.md")));
    assert_eq!(access_count(&m, "notes/b.md"), 1, "a single cat");
    run_ok(Command::new("cat").arg(m.m("by-id/aaaaaaaa-0000-4000-8000-000000000001.md")));
    assert_eq!(access_count(&m, "notes/a.md"), 1, "a read through by-id/");
    let mut tool = Command::new(common::bin());
    tool.arg("tool")
        .arg("--store")
        .arg(&m.store)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = tool.spawn().expect("mnemofs tool");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(stdin, r#"{{"command": "view", "path": "/memories/d.md"}}"#).expect("send");
    }
    let out = child.wait_with_output().expect("tool");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("delta walker"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        access_count(&m, "d.md"),
        1,
        "a read through the memory tool"
    );
    assert_eq!(access_count(&m, "notes/deep/c.md"), 0);
}

/// A walker whose list of files was made by another process (`find |
/// xargs cat`) counts at most eight files of a folder; a read through a
/// search result counts one.
#[test]
fn a_list_read_by_another_process_counts_at_most_eight_files_a_folder() {
    let mut seed: Vec<(String, Vec<u8>)> = (0..20)
        .map(|i| {
            (
                format!("log/{i:02}.md"),
                format!("entry {i} of the ledger\n").into_bytes(),
            )
        })
        .collect();
    seed.push((
        "people/ada.md".to_string(),
        b"# Ada\nAda keeps the quasicrystal notes.\n".to_vec(),
    ));
    let m = Mount::with_options(MountOptions {
        seed,
        ..Default::default()
    });
    let log_total = |m: &Mount| {
        (0..20)
            .map(|i| access_count(m, &format!("log/{i:02}.md")))
            .sum::<u64>()
    };
    run_ok(
        Command::new("sh")
            .arg("-c")
            .arg("find \"$1\" -name '*.md' -print0 | xargs -0 cat > /dev/null")
            .arg("sh")
            .arg(m.m("log")),
    );
    let counted = log_total(&m);
    assert!(
        (1..=8).contains(&counted),
        "find | xargs cat over 20 files counted {counted}"
    );

    // A search result: the listed folder is the view, not the memory's.
    let results = m.m("search/quasicrystal");
    let mut found = None;
    assert!(
        poll_until(std::time::Duration::from_secs(30), || {
            found = fs::read_dir(&results).ok().and_then(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|x| x == "md") && p.is_symlink())
            });
            found.is_some()
        }),
        "the search never found the memory"
    );
    let result = found.expect("a result");
    run_ok(Command::new("cat").arg(&result));
    assert_eq!(access_count(&m, "people/ada.md"), 1, "a search result read");
}
