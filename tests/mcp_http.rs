//! `mnemofs mcp --http`: MCP over streamable HTTP, driven by the official
//! Python client (`mcp`, in the tests' venv). The same checks as on stdio
//! (`tests/python/mcp_client.py`: every tool, a token scoped to one agent
//! in place of `--scope`), then what the server refuses and how it holds
//! under load (`tests/python/mcp_http_checks.py`), and what it refuses to
//! start with.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{python_with, run_with_timeout, store_command, succeeded};

/// A server on a free loopback port, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(store: &Path, extra: &[&str]) -> Server {
        let mut args = vec!["mcp", "--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = store_command(store, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn mnemofs mcp --http");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let Some(url) = line.trim().strip_prefix("serving MCP on ") else {
            let _ = child.kill();
            panic!("the server did not say where it listens: {line:?}");
        };
        Server {
            url: url.to_string(),
            child,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Makes a token; returns it.
fn token(store: &Path, name: &str, scope: &str) -> String {
    let out = run_with_timeout(
        &mut store_command(store, &["token", "create", name, "--scope", scope]),
        Duration::from_secs(60),
    )
    .expect("token create timed out");
    succeeded(&out).trim().to_string()
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// Runs a Python check script with the store's environment; panics with
/// its output unless every check passed.
fn run_checks(python: &Path, store: &Path, args: &[&str]) {
    let mut cmd = Command::new(python);
    cmd.args(args)
        .env("XDG_RUNTIME_DIR", store.with_extension("run"))
        .env("XDG_CONFIG_HOME", store.with_extension("config"));
    let out = run_with_timeout(&mut cmd, Duration::from_secs(300)).expect("the checks timed out");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "a check failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_python_client_uses_every_tool_over_http_and_is_refused_what_it_may_not_do() {
    let python = python_with("mcp", "mcp");
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).expect("store");
    let owner = token(&store, "owner", "all");
    let alice = token(&store, "alice", "agent:alice");
    let server = Server::start(&store, &[]);

    let client = script("mcp_client.py");
    run_checks(
        &python,
        &store,
        &[
            client.to_str().unwrap(),
            "--http",
            &server.url,
            &owner,
            &alice,
        ],
    );
    let checks = script("mcp_http_checks.py");
    let state = store.with_extension("state");
    run_checks(
        &python,
        &store,
        &[
            checks.to_str().unwrap(),
            common::bin(),
            &server.url,
            store.to_str().unwrap(),
            state.to_str().unwrap(),
            &owner,
            &alice,
        ],
    );
}

/// Runs `mnemofs mcp ARGS` expecting a refusal; returns what it said.
fn refused(store: &Path, args: &[&str]) -> String {
    let out = run_with_timeout(&mut store_command(store, args), Duration::from_secs(60))
        .expect("mnemofs mcp timed out");
    assert!(!out.status.success(), "{args:?} was served");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_server_nobody_could_reach_safely_is_refused_before_it_listens() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).expect("store");
    let said = refused(&store, &["mcp", "--http", "127.0.0.1:0"]);
    assert!(
        said.contains("no token can reach this server yet"),
        "{said}"
    );
    let said = refused(&store, &["mcp", "--http", "0.0.0.0:0", "--no-auth"]);
    assert!(said.contains("without tokens"), "{said}");
    let said = refused(
        &store,
        &["mcp", "--scope", "agent:a", "--http", "127.0.0.1:0"],
    );
    assert!(said.contains("cannot be used with"), "{said}");
    let said = refused(
        &store,
        &[
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--allow-origin",
            "example.com",
        ],
    );
    assert!(said.contains("is not an origin"), "{said}");
    std::fs::create_dir_all(store.with_extension("state")).expect("state dir");
    std::fs::write(
        store.with_extension("state").join("tokens.json"),
        "{ not json",
    )
    .expect("bad");
    let said = refused(&store, &["mcp", "--http", "127.0.0.1:0"]);
    assert!(said.contains("does not read as tokens"), "{said}");
    let out = run_with_timeout(
        &mut store_command(&store, &["token", "create", "x", "--scope", "all"]),
        Duration::from_secs(60),
    )
    .expect("token create timed out");
    assert!(
        !out.status.success(),
        "a token was added to a file that does not read"
    );
    assert_eq!(
        std::fs::read_to_string(store.with_extension("state").join("tokens.json")).unwrap(),
        "{ not json"
    );
}

#[test]
fn without_tokens_a_loopback_server_answers_anyone() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).expect("store");
    let server = Server::start(&store, &["--no-auth"]);
    let authority = server
        .url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .expect("an http URL");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");
}
