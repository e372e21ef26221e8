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

/// Lines that are no JSON-RPC message are each answered with JSON-RPC's
/// error, and the server goes on answering the calls after them.
#[test]
fn a_line_that_is_no_message_is_answered_and_the_next_call_is_too() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&store).expect("store");
    std::fs::write(store.join("tea.md"), "# Tea\nPrefers green tea.\n").expect("a memory");
    let mut child = mcp_on(&store, &state);
    let mut stdin = child.stdin.take().expect("stdin");
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let bad_arguments = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": "tea"}});
    let search = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "tea"}}});
    let input = format!(
        "not json at all\n\n{initialize}\n[1, 2]\n{{\"id\": 9}}\n{initialized}\n{bad_arguments}\n\u{ff}\n{search}"
    );
    stdin.write_all(input.as_bytes()).expect("send");
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read the answers");
    let status = wait_timeout(&mut child, Duration::from_secs(60)).expect("mcp exits at EOF");
    assert!(status.success(), "{status}");
    let answers: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("each answer is one line of JSON"))
        .collect();
    let errors: Vec<(serde_json::Value, i64)> = answers
        .iter()
        .filter(|a| a["error"].is_object())
        .map(|a| (a["id"].clone(), a["error"]["code"].as_i64().unwrap_or(0)))
        .collect();
    let null = serde_json::Value::Null;
    assert_eq!(
        errors,
        [
            (null.clone(), -32700),
            (null.clone(), -32600),
            (serde_json::json!(9), -32600),
            (serde_json::json!(2), -32602),
            (null, -32700),
        ],
        "{out}"
    );
    let found = answers
        .iter()
        .find(|a| a["id"] == 3)
        .expect("the search is answered");
    assert!(
        found["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("green tea")),
        "{found}"
    );
}

/// An MCP client on `mnemofs mcp` over stdio, for calls one at a time.
struct Client {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    next: u64,
}

impl Client {
    /// Started on `store` with `state` and the runtime dir `runtime`,
    /// and initialized.
    fn start(store: &Path, state: &Path, runtime: &Path) -> Client {
        let mut child = Command::new(bin())
            .arg("mcp")
            .arg("--store")
            .arg(store)
            .arg("--state-dir")
            .arg(state)
            .env("XDG_RUNTIME_DIR", runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn mnemofs mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = Client {
            stdin: child.stdin.take(),
            child,
            lines,
            next: 0,
        };
        client.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}),
        );
        client.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: serde_json::Value) {
        let stdin = self.stdin.as_mut().expect("open");
        writeln!(stdin, "{message}").expect("send");
    }

    fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next += 1;
        let id = self.next;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(60)) {
            let message: serde_json::Value = serde_json::from_str(&line).expect("JSON");
            if message["id"] == id {
                return message;
            }
        }
        panic!("{method} was not answered");
    }

    /// A tool's text, `Err` when the tool answered with an error.
    fn tool(&mut self, name: &str, arguments: serde_json::Value) -> Result<String, String> {
        let answer = self.request(
            "tools/call",
            serde_json::json!({"name": name, "arguments": arguments}),
        );
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if answer["result"]["isError"] == true {
            Err(text)
        } else {
            Ok(text)
        }
    }

    /// Closes its stdin and waits for it to end.
    fn close(mut self) {
        drop(self.stdin.take());
        let status = wait_timeout(&mut self.child, Duration::from_secs(60)).expect("mcp exits");
        assert!(status.success(), "mnemofs mcp failed: {status}");
    }
}

/// Two agents' servers on one store: the second goes through the first,
/// which serves the store; when the first ends, the second's next call
/// is answered (it serves the store itself now), and nothing is lost.
#[test]
fn when_the_server_another_went_through_ends_the_next_call_is_answered() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&store).expect("store");
    let mut a = Client::start(&store, &state, tmp.path());
    a.tool(
        "write",
        serde_json::json!({"content": "alpha fact one", "path": "a.md"}),
    )
    .expect("a writes");
    let mut b = Client::start(&store, &state, tmp.path());
    let found = b
        .tool("search", serde_json::json!({"query": "alpha fact"}))
        .expect("b searches through a");
    assert!(found.contains("a.md"), "{found}");
    a.close();
    b.tool(
        "write",
        serde_json::json!({"content": "beta fact two", "path": "b.md"}),
    )
    .expect("b's write after a ended");
    b.tool(
        "write",
        serde_json::json!({"content": "gamma fact three", "path": "c.md"}),
    )
    .expect("b's next write");
    let found = b
        .tool("search", serde_json::json!({"query": "beta gamma"}))
        .expect("b searches");
    assert!(found.contains("b.md") && found.contains("c.md"), "{found}");
    b.close();
    for name in ["a.md", "b.md", "c.md"] {
        assert!(store.join(name).is_file(), "{name} is not in the store");
    }
}

/// An agent's server serves the store while nothing else does; a
/// `mnemofs serve` started then is handed the store, the agent's calls go
/// through it, and once it stops the agent's server serves the store
/// again. No call fails on the way.
#[test]
fn a_daemon_started_beside_an_agents_server_is_handed_the_store() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state) = (tmp.path().join("store"), tmp.path().join("state"));
    std::fs::create_dir(&store).expect("store");
    let mut agent = Client::start(&store, &state, tmp.path());
    let write = |agent: &mut Client, name: &str| {
        agent
            .tool(
                "write",
                serde_json::json!({"content": format!("fact {name}"), "path": name}),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    };
    write(&mut agent, "a.md");
    let daemon = Command::new(bin())
        .arg("serve")
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .env("XDG_RUNTIME_DIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mnemofs serve");
    let mut daemon = common::Stopped(daemon);
    let mut ready = String::new();
    std::io::BufReader::new(daemon.0.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("serve's first line");
    assert!(ready.starts_with("serving "), "{ready:?}");
    write(&mut agent, "b.md");
    let status = agent
        .tool("status", serde_json::json!({}))
        .expect("status through the daemon");
    assert!(status.starts_with("served by daemon"), "{status}");
    // Stopped, and waited for.
    drop(daemon);
    write(&mut agent, "c.md");
    agent.close();
    for name in ["a.md", "b.md", "c.md"] {
        assert!(store.join(name).is_file(), "{name} is not in the store");
    }
}
