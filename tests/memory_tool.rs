//! A real client: Anthropic's reference `memory` tool handler
//! (`anthropic.tools.memory.BetaLocalFilesystemMemoryTool`) must give the same
//! output on the mount as on a plain directory, errors included. The command
//! sequence and the comparison live in `tests/python/memory_tool_diff.py`;
//! the package goes into a venv the test makes under the target dir.

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
