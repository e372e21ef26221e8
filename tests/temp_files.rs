//! mnemofs's own temp files (`.mnemofs-tmp-*`, written beside a file that
//! is replaced atomically) stay out of the user's way: never listed or
//! found through the mount, removed with a folder the user empties, and
//! swept at start-up when a crash left them behind.

#![cfg(target_os = "linux")]

mod common;

use std::fs;

use common::{Mount, MountOptions};

const LEFT_BEHIND: &str = ".mnemofs-tmp-0123456789abcdef";

#[test]
fn temp_files_are_hidden_removed_with_their_folder_and_swept_at_start() {
    let mut m = Mount::with_options(MountOptions {
        seed: vec![
            (
                format!("crashed/{LEFT_BEHIND}"),
                b"a half-written copy".to_vec(),
            ),
            ("notes/a.md".into(), b"# A\n".to_vec()),
        ],
        ..Default::default()
    });
    // Swept when the daemon started.
    assert!(!m.s(format!("crashed/{LEFT_BEHIND}")).exists());

    // One appears behind the mount while it runs (a write interrupted by
    // a folder rename): not listed, not found, and no obstacle to rmdir.
    fs::write(m.s(format!("notes/{LEFT_BEHIND}")), "stale copy").unwrap();
    let names: Vec<_> = fs::read_dir(m.m("notes"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a.md"], "a temp file is listed");
    let err = fs::metadata(m.m(format!("notes/{LEFT_BEHIND}"))).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    fs::remove_file(m.m("notes/a.md")).unwrap();
    fs::remove_dir(m.m("notes")).expect("rmdir of a folder the user emptied");
    assert!(!m.s("notes").exists());
    m.stop();
}
