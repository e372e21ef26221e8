//! Volatile counters: kept in state, shown as `user.mnemofs.*` attributes.

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
