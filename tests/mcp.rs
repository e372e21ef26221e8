//! `mnemofs mcp`, the MCP server on stdio, driven by the official Python
//! client (`tests/python/mcp_client.py`, the `mcp` package in a venv the
//! tests make under the target dir), and by hand for the handshake: the
//! server must answer `initialize` before it opens the store, so a client
//! is not kept waiting while a new index is built.

mod common;

use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, python_with, run_with_timeout, wait_timeout};

#[test]
fn the_python_client_uses_every_tool() {
    let python = python_with("mcp", "mcp");
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&store).expect("store");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_client.py");
    let out = run_with_timeout(
        Command::new(&python)
            .arg(&script)
            .arg(bin())
            .arg(&store)
            .arg(&state),
        Duration::from_secs(300),
    )
    .expect("mcp_client.py timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client found a mismatch ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
}

/// `mnemofs mcp` on `store`, its stdin and stdout piped.
fn mcp_on(store: &Path, state: &Path) -> std::process::Child {
    Command::new(bin())
        .arg("mcp")
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn mnemofs mcp")
}

/// Sends `initialize` offering `version` on a store with no index yet;
/// returns the one line answered, and whether the state dir exists after.
fn initialize(version: &str) -> (serde_json::Value, bool) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&store).expect("store");
    std::fs::write(store.join("note.md"), "# A note\n").expect("a memory");
    let mut child = mcp_on(&store, &state);
    let request = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}
        }
    });
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{request}").expect("send initialize");
    // Read the answer while stdin stays open, as a client waits for it.
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stdout);
        let mut first = String::new();
        let _ = reader.read_line(&mut first);
        let _ = tx.send(first);
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        let _ = tx.send(rest);
    });
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("an answer to initialize");
    let state_made = state.exists();
    drop(stdin);
    let status = wait_timeout(&mut child, Duration::from_secs(60)).expect("mcp exits at EOF");
    assert!(status.success(), "mnemofs mcp failed: {status}");
    let rest = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("stdout closed");
    assert_eq!(rest, "", "nothing else on stdout");
    let answer = serde_json::from_str(&first).expect("the answer is JSON");
    (answer, state_made)
}

#[test]
fn initialize_is_answered_before_the_index_exists() {
    for version in ["2025-11-25", "2025-06-18"] {
        let (answer, state_made) = initialize(version);
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
        assert_eq!(answer["result"]["serverInfo"]["name"], "mnemofs");
        assert!(answer["result"]["capabilities"]["tools"].is_object());
        assert!(answer["result"]["capabilities"]["prompts"].is_object());
        assert!(answer["result"]["capabilities"]["resources"].is_object());
        assert!(
            !state_made,
            "initialize alone must not open the store or build its index"
        );
    }
}

/// A write larger than the store's size cap is answered, as a tool error
/// that says so: the transport's own line limit (16 MiB) would drop the
/// request unanswered, and the client would wait for ever.
#[test]
fn a_write_over_the_size_cap_is_answered() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&store).expect("store");
    let mut child = mcp_on(&store, &state);
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let send = |stdin: &mut std::process::ChildStdin, message: serde_json::Value| {
        writeln!(stdin, "{message}").expect("send");
    };
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
    );
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let content = "y".repeat(65 << 20);
    send(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "write", "arguments": {"content": content, "category": "knowledge"}}}),
    );
    let mut answer = None;
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(120)) {
        let message: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        if message["id"] == 2 {
            answer = Some(message);
            break;
        }
    }
    drop(stdin);
    let _ = wait_timeout(&mut child, Duration::from_secs(60));
    let answer = answer.expect("the write is answered");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("size cap")),
        "{answer}"
    );
    assert!(!store.join("knowledge").exists());
}
