//! `mnemofs mcp --http`: MCP over streamable HTTP, driven by the official
//! Python client (`mcp`, in the tests' venv). The same checks as on stdio
//! (`tests/python/mcp_client.py`: every tool, a token scoped to one agent
//! in place of `--scope`), then what the server refuses and how it holds
//! under load (`tests/python/mcp_http_checks.py`), and what it refuses to
//! start with.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{python_with, run_with_timeout, stdout_lines, store_command, succeeded};

/// A server on a free loopback port, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(store: &Path, extra: &[&str]) -> Server {
        let mut args = vec!["mcp", "--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Server::start_as(store, &args)
    }

    /// `mnemofs ARGS`, once it says where it serves MCP.
    fn start_as(store: &Path, args: &[&str]) -> Server {
        let mut child = store_command(store, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn mnemofs");
        let lines = stdout_lines(&mut child);
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let url = loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                let _ = child.kill();
                panic!("mnemofs {args:?} did not say where it serves MCP");
            };
            if let Some(url) = line.trim().strip_prefix("serving MCP on ") {
                break url.to_string();
            }
        };
        Server { url, child }
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

/// A new store (in a temp dir, kept while the first value lives), with
/// a token for its owner and one scoped to `agent:alice`.
fn store_with_tokens() -> (tempfile::TempDir, PathBuf, String, String) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).expect("store");
    let owner = token(&store, "owner", "all");
    let alice = token(&store, "alice", "agent:alice");
    (tmp, store, owner, alice)
}

/// `tests/python/mcp_http_checks.py` against the server at `url`, with
/// an owner's token and one scoped to `agent:alice`.
fn http_checks(python: &Path, store: &Path, url: &str, owner: &str, alice: &str) {
    let checks = script("mcp_http_checks.py");
    let state = store.with_extension("state");
    run_checks(
        python,
        store,
        &[
            checks.to_str().unwrap(),
            common::bin(),
            url,
            store.to_str().unwrap(),
            state.to_str().unwrap(),
            owner,
            alice,
        ],
    );
}

#[test]
fn the_python_client_uses_every_tool_over_http_and_is_refused_what_it_may_not_do() {
    let python = python_with("mcp", "mcp");
    let (_tmp, store, owner, alice) = store_with_tokens();
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
    http_checks(&python, &store, &server.url, &owner, &alice);
}

/// `mnemofs mcp --http` on a store a daemon serves: its calls go to the
/// daemon, side by side, and every check holds as when it serves the
/// store itself (32 clients at once among them).
#[test]
fn beside_a_daemon_the_server_answers_through_it() {
    let python = python_with("mcp", "mcp");
    let (_tmp, store, owner, alice) = store_with_tokens();
    let daemon = Server::start_as(&store, &["serve", "--mcp-http", "127.0.0.1:0"]);
    let server = Server::start(&store, &[]);
    let out = run_with_timeout(
        &mut store_command(&store, &["status", "--json"]),
        Duration::from_secs(60),
    )
    .expect("status timed out");
    let status: serde_json::Value = serde_json::from_str(&succeeded(&out)).expect("status json");
    assert_eq!(status["served_by"], "daemon", "{status}");

    http_checks(&python, &store, &server.url, &owner, &alice);
    drop(server);
    drop(daemon);
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
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).expect("store");
    let server = Server::start(&store, &["--no-auth"]);
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}
    });
    // Whatever token it carries, none is asked for.
    let (status, answer) = post(&server.url, "anything", &initialize);
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
}

/// Posts one JSON-RPC message to an MCP URL with a token; returns the
/// status line and the body.
fn post(url: &str, token: &str, message: &serde_json::Value) -> (String, serde_json::Value) {
    post_bytes(url, token, message.to_string().as_bytes())
}

/// [`post`] of any bytes as the body.
fn post_bytes(url: &str, token: &str, body: &[u8]) -> (String, serde_json::Value) {
    use std::io::{Read, Write};
    let authority = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .expect("an http URL");
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .expect("send");
    stream.write_all(body).expect("send the body");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("answer");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap_or_default().to_string();
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

fn write_call(path: &str, content: &str) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "write", "arguments": {"content": content, "path": path}}
    })
}

#[test]
fn serve_answers_mcp_over_http_beside_its_sockets() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).expect("store");
    let owner = token(&store, "owner", "all");
    let daemon = Server::start_as(&store, &["serve", "--mcp-http", "127.0.0.1:0"]);
    let url = daemon.url.clone();
    let (status, answer) = post(&url, &owner, &write_call("notes/over-http.md", "Plums.\n"));
    assert!(status.contains("200"), "{status} {answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // The same store the daemon's other clients see.
    let out = run_with_timeout(
        &mut store_command(&store, &["read", "notes/over-http.md"]),
        Duration::from_secs(60),
    )
    .expect("cat timed out");
    assert!(succeeded(&out).contains("Plums."));
    // What is not JSON-RPC is answered as JSON-RPC answers it.
    let deep = format!("{}{}", "[".repeat(2000), "]".repeat(2000));
    for body in [&b"{not json"[..], b"", b"\xff\xfe", deep.as_bytes()] {
        let (status, answer) = post_bytes(&url, &owner, body);
        assert!(status.contains("400"), "{status} {answer}");
        assert_eq!(answer["error"]["code"], -32700, "{answer}");
    }
    for body in [
        &b"{}"[..],
        b"5",
        b"null",
        br#"{"jsonrpc":"2.0","id":3,"method":5}"#,
        br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
    ] {
        let (status, answer) = post_bytes(&url, &owner, body);
        assert!(status.contains("400"), "{status} {answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
    }
    let (_, answer) = post_bytes(&url, &owner, br#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#);
    assert_eq!(answer["id"], 9, "{answer}");
    let mut bad_arguments = write_call("notes/y.md", "y\n");
    bad_arguments["params"]["arguments"] = serde_json::json!("x");
    let (status, answer) = post(&url, &owner, &bad_arguments);
    assert!(status.contains("400"), "{status} {answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["id"], 7, "{answer}");
    let (status, _) = post(&url, "mnemofs_wrong", &write_call("notes/x.md", "x\n"));
    assert!(status.contains("401"), "{status}");
    drop(daemon);
}

/// Makes a token in a mount's state dir before it starts; it is written
/// to `token` beside the store.
fn token_before_mount(store: &Path, state: &Path) {
    let out = Command::new(common::bin())
        .args(["token", "create", "owner", "--scope", "all", "--store"])
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .output()
        .expect("token create");
    std::fs::write(store.with_file_name("token"), succeeded(&out).trim()).expect("keep the token");
}

#[test]
fn a_mount_answers_mcp_over_http_and_its_readers_see_the_writes() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mount = common::Mount::with_options(common::MountOptions {
        extra_args: vec!["--mcp-http".into(), format!("127.0.0.1:{port}")],
        before_start: Some(token_before_mount),
        ..Default::default()
    });
    let owner = std::fs::read_to_string(mount.store.with_file_name("token")).expect("token");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (status, answer) = post(&url, &owner, &write_call("notes/remote.md", "From afar.\n"));
    assert!(status.contains("200"), "{status} {answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let seen =
        std::fs::read_to_string(mount.mnt.join("notes/remote.md")).expect("read on the mount");
    assert!(seen.ends_with("From afar.\n"), "{seen}");
}

/// A mount whose MCP server cannot start (no token yet) fails at once,
/// saying why, and leaves no mount behind, though its organizer had an
/// inbox note to file through the mount meanwhile.
#[test]
fn a_mount_whose_mcp_server_cannot_start_fails_at_once_and_unmounts() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, state, mnt) = (
        tmp.path().join("store"),
        tmp.path().join("state"),
        tmp.path().join("mnt"),
    );
    std::fs::create_dir_all(store.join("inbox")).expect("store");
    std::fs::create_dir(&mnt).expect("mountpoint");
    std::fs::write(store.join("inbox/raw.md"), "x\n").expect("inbox note");
    for foreground in [true, false] {
        let mut cmd = Command::new(common::bin());
        cmd.arg("mount")
            .arg(&mnt)
            .arg("--store")
            .arg(&store)
            .arg("--state-dir")
            .arg(&state)
            .args(["--mcp-http", "127.0.0.1:0"])
            .env("XDG_RUNTIME_DIR", tmp.path())
            .stdin(Stdio::null());
        if foreground {
            cmd.arg("--foreground");
        }
        let out = run_with_timeout(&mut cmd, Duration::from_secs(30));
        let mounted = common::is_mounted(&mnt);
        if mounted {
            let _ = Command::new("fusermount3").arg("-uz").arg(&mnt).status();
        }
        let out = out.expect("the mount hung");
        assert!(!out.status.success(), "foreground {foreground}: it served");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("no token can reach this server yet"),
            "foreground {foreground}: {said}"
        );
        assert!(!mounted, "foreground {foreground}: left mounted");
    }
}
