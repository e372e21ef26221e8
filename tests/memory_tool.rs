//! A real client: Anthropic's reference `memory` tool handler
//! (`anthropic.tools.memory.BetaLocalFilesystemMemoryTool`) must give the same
//! output on the mount as on a plain directory, errors included. The command
//! sequence and the comparison live in `tests/python/memory_tool_diff.py`;
//! the package goes into a venv the test makes under the target dir.

#![cfg(target_os = "linux")]

mod common;

use common::{Mount, TEST_UMASK, python_with, run_with_timeout, set_umask};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn anthropic_memory_tool_behaves_identically_on_the_mount() {
    let python = python_with("anthropic.tools.memory", "anthropic");
    set_umask(TEST_UMASK);
    let m = Mount::start();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/memory_tool_diff.py");
    let out = run_with_timeout(
        Command::new(&python).arg(&script).arg(&m.plain).arg(&m.mnt),
        Duration::from_secs(300),
    )
    .expect("memory_tool_diff.py timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "memory tool results differ between a plain dir and the mount ({}):\n{stdout}\n{stderr}",
        out.status
    );
    println!("{stdout}");
}

/// The SDK's own tests of its handler (from the source package of the
/// installed version, run by `tests/python/anthropic_suite.py`), with the
/// mount as the directory each test works in. `--guide off`: the tests
/// compare directory snapshots, so the root must show exactly the real
/// files. Only the tests that plant absolute or escaping symlinks are
/// skipped.
#[test]
fn anthropics_own_memory_tool_tests_pass_on_the_mount_with_the_guide_off() {
    let python = python_with("anthropic.tools.memory", "anthropic");
    python_with("pytest_asyncio", "pytest-asyncio");
    let m = Mount::with_args(&["--guide", "off"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/anthropic_suite.py");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("anthropic-suite");
    let out = run_with_timeout(
        Command::new(&python).arg(&script).arg(&m.mnt).arg(&work),
        Duration::from_secs(600),
    )
    .expect("the SDK's tests timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDK's memory tool tests failed on the mount ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // Every skip is one of the symlink tests.
    for line in stdout.lines().filter(|l| l.starts_with("SKIPPED")) {
        assert!(line.contains("symlink"), "an unexpected skip: {line}");
    }
    println!("{stdout}");
}

/// With the guide on (the default), an agent's first `view /memories`
/// shows the real files and the guide, with its real size, and nothing
/// else.
#[test]
fn view_memories_shows_the_real_files_and_the_guide() {
    let python = python_with("anthropic.tools.memory", "anthropic");
    let seed: Vec<(String, Vec<u8>)> = (0..5)
        .map(|i| (format!("note-{i}.md"), format!("# Note {i}\n").into_bytes()))
        .collect();
    let m = common::Mount::with_options(common::MountOptions {
        seed,
        ..Default::default()
    });
    let holder = tempfile::tempdir().expect("holder");
    std::os::unix::fs::symlink(&m.mnt, holder.path().join("memories")).expect("symlink");
    let out = run_with_timeout(
        Command::new(&python)
            .args([
                "-c",
                "import sys\n\
             from anthropic.tools.memory import BetaLocalFilesystemMemoryTool as T\n\
             print(T(base_path=sys.argv[1]).call({'command': 'view', 'path': '/memories'}))",
            ])
            .arg(holder.path()),
        Duration::from_secs(120),
    )
    .expect("view timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    let entries: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p))
        .filter(|p| p.starts_with("/memories/"))
        .collect();
    assert_eq!(
        entries,
        [
            "/memories/MNEMOFS.md",
            "/memories/note-0.md",
            "/memories/note-1.md",
            "/memories/note-2.md",
            "/memories/note-3.md",
            "/memories/note-4.md",
        ],
        "{stdout}"
    );
    // The header, the folder itself, N files and the guide.
    assert_eq!(lines.len(), 1 + 1 + 5 + 1, "{stdout}");
    let guide = lines
        .iter()
        .find(|l| l.ends_with("/MNEMOFS.md"))
        .expect("guide line");
    assert!(!guide.starts_with("0B"), "the guide looks empty: {guide}");
}
