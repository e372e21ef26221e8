//! `mnemofs tool`, Anthropic's `memory` tool on stdin and stdout, against
//! the SDK's reference handler (`BetaLocalFilesystemMemoryTool`): without a
//! daemon, every answer and every resulting tree must equal the
//! reference's on a plain directory; with a daemon serving the store, the
//! tool must work through it (what it writes is read back through the
//! mount) and answer read-only commands, views included, exactly as the
//! reference does on the mount. The command sequences and comparisons live
//! in `tests/python/memory_tool_cli_diff.py`; the `anthropic` package goes
//! into a venv the tests make under the target dir.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Mount, MountOptions, TEST_UMASK, bin, python_with, run_with_timeout, set_umask};

/// Runs the driver; fails the test with its report unless it exits 0.
fn driver(args: &[&Path]) -> String {
    let python = python_with("anthropic.tools.memory", "anthropic");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/memory_tool_cli_diff.py");
    let out = run_with_timeout(
        Command::new(&python).arg(&script).args(args),
        Duration::from_secs(600),
    )
    .expect("memory_tool_cli_diff.py timed out");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "mnemofs tool and the reference handler differ ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

#[test]
fn tool_answers_as_the_reference_handler_without_a_daemon() {
    set_umask(TEST_UMASK);
    let tmp = tempfile::tempdir().expect("temp dir");
    let (plain, store, state) = (
        tmp.path().join("plain"),
        tmp.path().join("store"),
        tmp.path().join("state"),
    );
    for dir in [&plain, &store] {
        fs::create_dir(dir).expect("mkdir");
    }
    let report = driver(&[Path::new("plain"), &plain, &store, &state, Path::new(bin())]);
    println!("{report}");
    // No daemon: the tool opened the store itself, its index in --state-dir.
    let kept = fs::read_dir(&state).map(|d| d.count()).unwrap_or(0);
    assert!(kept > 0, "nothing in the state dir {}", state.display());
}

#[test]
fn tool_goes_through_a_running_daemon_and_answers_as_the_reference_on_its_mount() {
    set_umask(TEST_UMASK);
    let m = Mount::with_options(MountOptions {
        extra_args: vec!["--views".into(), "hidden".into()],
        ..Default::default()
    });
    let report = driver(&[Path::new("mount"), &m.mnt, &m.store, Path::new(bin())]);
    println!("{report}");
    // The tool wrote through the daemon: the file is on the mount and in
    // the store, and the daemon's index found it.
    let ada = fs::read_to_string(m.m("people/ada.md")).expect("read through the mount");
    assert!(ada.contains("L. F. Menabrea's"), "{ada}");
    assert_eq!(
        fs::read_to_string(m.s("people/ada.md")).expect("read the store"),
        ada
    );
    let by_id = fs::read_to_string(m.m("by-id/7d0c6a52-5d0e-4a39-9f43-3c5f6a1e2b10.md"))
        .expect("by-id through the mount");
    assert_eq!(by_id, ada);
}
