//! The public socket: JSON-RPC 2.0, one object per line, served by
//! `mnemofs serve` (the organizer and the sockets, no mount), driven here
//! by real clients on `std`'s `UnixStream`. The socket is found through
//! `mnemofs status --json` (key `socket`); bad lines get JSON-RPC errors
//! and the connection goes on; 32 clients are served at once while an
//! idle one holds its connection; and while `serve` holds the store, the
//! other front ends (`mnemofs tool`, `mnemofs mcp`) write through it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use common::{bin, poll_until, run_with_timeout, signal, wait_timeout};

/// A `mnemofs serve` child, stopped (SIGTERM, then SIGKILL) on drop.
struct Served {
    child: Child,
    store: PathBuf,
    socket: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Served {
    fn start() -> Served {
        let tmp = tempfile::tempdir().expect("temp dir");
        let store = tmp.path().join("store");
        let state = tmp.path().join("state");
        std::fs::create_dir(&store).expect("store");
        std::fs::write(store.join("shared.md"), "# Shared plan\n\nplums for all\n").expect("seed");
        let mut child = Command::new(bin())
            .arg("serve")
            .arg("--store")
            .arg(&store)
            .arg("--state-dir")
            .arg(&state)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn mnemofs serve");
        // Its one line on stdout says it is ready.
        let rx = common::stdout_lines(&mut child);
        let mut served = Served {
            child,
            store,
            socket: PathBuf::new(),
            _tmp: tmp,
        };
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("mnemofs serve says it is ready");
        assert!(line.starts_with("serving "), "{line:?}");
        let status = served.status();
        let socket = PathBuf::from(
            status["socket"]
                .as_str()
                .unwrap_or_else(|| panic!("{status}")),
        );
        assert!(
            line.trim_end()
                .ends_with(&format!(" on {}", socket.display())),
            "{line:?} {status}"
        );
        served.socket = socket;
        served
    }

    fn status(&self) -> Value {
        let out = run_with_timeout(
            Command::new(bin())
                .args(["status", "--json", "--store"])
                .arg(&self.store),
            Duration::from_secs(60),
        )
        .expect("status answers");
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    fn client(&self) -> Client {
        Client::connect(&self.socket)
    }
}

impl Served {
    /// Stops the daemon, keeping the store.
    fn stop(&mut self) {
        signal(self.child.id(), libc::SIGTERM);
        if wait_timeout(&mut self.child, Duration::from_secs(30)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One connection: a line out, a line back.
struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        Client {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
        }
    }

    fn send_raw(&mut self, line: &[u8]) -> Value {
        self.writer.write_all(line).expect("send");
        let mut answer = String::new();
        self.reader.read_line(&mut answer).expect("an answer");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
    }

    fn send(&mut self, request: Value) -> Value {
        self.send_raw(format!("{request}\n").as_bytes())
    }

    /// Calls `method`; its result, failing the test on an error.
    fn ok(&mut self, id: u64, method: &str, params: Value) -> Value {
        let answer =
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer.get("error").is_none(), "{method} {params}: {answer}");
        answer["result"].clone()
    }

    /// Calls `method`; its error code and message.
    fn error(&mut self, id: u64, method: &str, params: Value) -> (i64, String) {
        let answer =
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(answer["id"], id, "{answer}");
        let code = answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error: {answer}"));
        (
            code,
            answer["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    }

    fn search_paths(&mut self, query: &str, scope: Option<&str>) -> Vec<String> {
        let mut params = json!({"query": query});
        if let Some(scope) = scope {
            params["scope"] = scope.into();
        }
        let result = self.ok(1, "search", params);
        let mut paths: Vec<String> = result["structuredContent"]["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["path"].as_str().unwrap_or_default().to_string())
            .collect();
        paths.sort();
        paths
    }
}

#[test]
fn agents_speak_json_rpc_on_the_socket() {
    let served = Served::start();
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&served.socket), 0o600, "the socket is private");
    assert_eq!(
        mode(served.socket.parent().expect("its folder")),
        0o700,
        "its folder is private"
    );
    let mut c = served.client();

    let tools = c.ok(1, "tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default())
        .collect();
    for name in [
        "search",
        "read",
        "write",
        "context",
        "unlink",
        "memory",
        "memory_write",
        "memory_smart_search",
        "memory_tag",
    ] {
        assert!(names.contains(&name), "{name} is listed: {names:?}");
    }
    assert!(tools["tools"][0]["inputSchema"]["type"] == "object");

    // memory-cli's call shape, its tool names, tags as a comma string.
    let written = c.ok(
        2,
        "tools/call",
        json!({"name": "memory_write", "params": {
            "content": "Bob prefers plums in the morning.",
            "category": "preferences", "tags": "fruit, morning", "scope": "agent:bob"}}),
    );
    assert_eq!(written["isError"], false, "{written}");
    let id = written["structuredContent"]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    let path = written["structuredContent"]["path"]
        .as_str()
        .expect("a path")
        .to_string();
    assert!(path.starts_with("preferences/"), "{path}");
    let text = std::fs::read_to_string(served.store.join(&path)).expect("written to the store");
    assert!(
        text.contains("scope: agent:bob") && text.contains("  - morning"),
        "{text}"
    );

    let found = poll_until(Duration::from_secs(60), || {
        c.search_paths("plums", None).contains(&path)
    });
    assert!(found, "the write is searchable");
    // MCP's call shape, and a tool's name as the method.
    let read = c.ok(
        3,
        "tools/call",
        json!({"name": "read", "arguments": {"ref": id}}),
    );
    assert_eq!(read["structuredContent"]["path"], path.as_str());
    let read = c.ok(4, "memory_read", json!({"id": id}));
    assert!(
        read["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("plums")
    );
    let hits = c.ok(
        5,
        "memory_search",
        json!({"query": "plums", "tags": ["fruit"]}),
    );
    assert_eq!(
        hits["structuredContent"]["results"][0]["path"],
        path.as_str()
    );
    c.ok(6, "memory_tag", json!({"id": id, "tags": "ripe"}));
    assert!(
        std::fs::read_to_string(served.store.join(&path))
            .expect("tagged")
            .contains("  - ripe\n")
    );

    // A call's scope hides other agents' memories.
    assert_eq!(c.search_paths("plums", Some("agent:alice")), ["shared.md"]);
    assert_eq!(
        c.search_paths("plums", Some("agent:bob")),
        [path.clone(), "shared.md".into()]
    );
    let (code, message) = c.error(
        7,
        "tools/call",
        json!({"name": "read", "arguments": {"ref": id}, "scope": "agent:alice"}),
    );
    assert_eq!(
        (code, message.contains("no memory is named")),
        (-32001, true),
        "{message}"
    );

    // Errors, each on the same connection, which stays usable.
    let answer = c.send_raw(b"{not json\n");
    assert_eq!(
        (answer["error"]["code"].as_i64(), &answer["id"]),
        (Some(-32700), &Value::Null)
    );
    let answer = c.send_raw(b"[1, 2]\n");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = c.send(json!({"id": 8, "params": {}}));
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(c.error(9, "no/such/method", json!({})).0, -32601);
    assert_eq!(c.error(10, "tools/call", json!({"name": "nope"})).0, -32602);
    let (code, message) = c.error(11, "tools/call", json!({"name": "read", "arguments": {}}));
    assert_eq!((code, message.as_str()), (-32602, "missing argument `ref`"));
    assert_eq!(
        c.error(12, "search", json!({"query": "x", "limit": "ten"}))
            .0,
        -32602
    );
    let answer = c.send(json!({"jsonrpc": "2.0", "id": 13, "method": "search", "params": [1]}));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let mut huge = br#"{"jsonrpc":"2.0","id":14,"method":"write","params":{"content":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', 3 << 20));
    huge.extend(b"\"}}\n");
    let answer = c.send_raw(&huge);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("2 MiB")
    );
    // A notification is run, not answered: the next answer is the ping's.
    c.writer
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"status\"}\n")
        .expect("notify");
    assert_eq!(c.ok(15, "ping", json!({})), json!({}));
    let status = c.ok(16, "status", json!({}));
    assert_eq!(status["structuredContent"]["served_by"], "daemon");
}

#[test]
fn many_clients_at_once_and_an_idle_one_blocks_nobody() {
    let served = Served::start();
    // Connected, silent for the whole test.
    let idle = UnixStream::connect(&served.socket).expect("idle client");
    let mut half = UnixStream::connect(&served.socket).expect("a client that stops mid-line");
    half.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"meth")
        .expect("half a line");
    let found = poll_until(Duration::from_secs(60), || {
        served.client().search_paths("plums", None) == ["shared.md"]
    });
    assert!(found, "the seeded memory is searchable");
    let socket = served.socket.clone();
    let clients: Vec<_> = (0..32)
        .map(|n| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(&socket);
                for i in 0..20 {
                    let answer = c.ok(i, "search", json!({"query": "plums", "limit": 5}));
                    assert_eq!(
                        answer["structuredContent"]["results"][0]["path"], "shared.md",
                        "client {n}: {answer}"
                    );
                }
                n
            })
        })
        .collect();
    let mut done: Vec<usize> = clients
        .into_iter()
        .map(|t| t.join().expect("a client thread"))
        .collect();
    done.sort_unstable();
    assert_eq!(done, (0..32).collect::<Vec<_>>());
    drop(half);
    drop(idle);
    assert_eq!(served.client().ok(1, "ping", json!({})), json!({}));
}

/// `mnemofs mcp`: initialize, then one tool call; returns its result.
fn mcp_call(store: &Path, name: &str, arguments: Value) -> Value {
    let mut child = Command::new(bin())
        .args(["mcp", "--store"])
        .arg(store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn mnemofs mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}),
    ];
    for line in lines {
        writeln!(stdin, "{line}").expect("send");
    }
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            if let Ok(answer) = serde_json::from_str::<Value>(&line)
                && answer["id"] == 2
            {
                let _ = tx.send(answer);
                return;
            }
            line.clear();
        }
    });
    let answer = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("mnemofs mcp answers the call");
    drop(stdin);
    wait_timeout(&mut child, Duration::from_secs(60)).expect("mcp exits at EOF");
    answer["result"].clone()
}

#[test]
fn every_front_end_writes_through_the_serving_daemon() {
    let served = Served::start();
    // Without the daemon, these would need the store lock `serve` holds.
    let status = mcp_call(&served.store, "status", json!({}));
    assert_eq!(
        status["structuredContent"]["served_by"], "daemon",
        "{status}"
    );
    let written = mcp_call(
        &served.store,
        "write",
        json!({"content": "via mcp", "path": "notes/mcp.md"}),
    );
    assert_eq!(
        written["structuredContent"]["path"], "notes/mcp.md",
        "{written}"
    );

    let mut tool = Command::new(bin())
        .args(["tool", "--store"])
        .arg(&served.store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn mnemofs tool");
    tool.stdin
        .take()
        .expect("stdin")
        .write_all(br#"{"command": "create", "path": "/memories/notes/tool.md", "file_text": "via tool\n"}"#)
        .expect("send");
    let out = tool.wait_with_output().expect("mnemofs tool ran");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one answer");
    assert_eq!(answer["is_error"], false, "{answer}");

    let mut c = served.client();
    // A scope crosses the control socket with the request it wraps.
    c.ok(
        1,
        "write",
        json!({"content": "bob's", "path": "notes/bob.md", "scope": "agent:bob"}),
    );
    let mut tool = Command::new(bin())
        .args(["tool", "--scope", "agent:alice", "--store"])
        .arg(&served.store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn mnemofs tool --scope");
    tool.stdin
        .take()
        .expect("stdin")
        .write_all(br#"{"command": "view", "path": "/memories/notes/bob.md"}"#)
        .expect("send");
    let out = tool.wait_with_output().expect("mnemofs tool ran");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one answer");
    assert_eq!(
        answer["is_error"], true,
        "alice cannot see bob's memory: {answer}"
    );
    for (path, body) in [("notes/mcp.md", "via mcp"), ("notes/tool.md", "via tool")] {
        let read = c.ok(1, "read", json!({"ref": path}));
        assert!(
            read["structuredContent"]["content"]
                .as_str()
                .unwrap_or_default()
                .contains(body),
            "{read}"
        );
    }
    let status = served.status();
    assert_eq!(status["served_by"], "daemon", "{status}");
    assert!(status["mountpoint"].is_null(), "serve mounts nothing");
}

#[test]
#[cfg(target_os = "linux")]
fn the_mount_daemon_listens_too_and_writes_through_its_mount() {
    let m = common::Mount::with_options(common::MountOptions::default());
    let out = run_with_timeout(
        Command::new(bin())
            .args(["status", "--json", "--store"])
            .arg(&m.store),
        Duration::from_secs(60),
    )
    .expect("status answers");
    let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    let socket = PathBuf::from(
        status["socket"]
            .as_str()
            .unwrap_or_else(|| panic!("{status}")),
    );
    let mut c = Client::connect(&socket);
    // Watch the mount: a write through the socket must reach inotify there.
    std::fs::create_dir(m.m("notes")).expect("a folder on the mount");
    // SAFETY: plain syscalls on a descriptor this test owns.
    let inotify = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    assert!(inotify >= 0, "inotify_init1");
    let folder = common::cstr(&m.m("notes"));
    let mask = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE;
    // SAFETY: a valid descriptor and a NUL-terminated path.
    assert!(unsafe { libc::inotify_add_watch(inotify, folder.as_ptr(), mask) } >= 0);
    let written = c.ok(
        1,
        "write",
        json!({"content": "through the mount", "path": "notes/socket.md"}),
    );
    assert_eq!(written["structuredContent"]["path"], "notes/socket.md");
    assert!(
        std::fs::read_to_string(m.m("notes/socket.md"))
            .expect("read through the mount")
            .contains("through the mount")
    );
    let mut events = [0u8; 4096];
    let seen = poll_until(Duration::from_secs(30), || {
        // SAFETY: reads into a buffer of the length given.
        let n = unsafe { libc::read(inotify, events.as_mut_ptr().cast(), events.len()) };
        n > 0
    });
    // SAFETY: closes the descriptor opened above.
    unsafe { libc::close(inotify) };
    assert!(seen, "a watcher on the mount saw the socket's write");
    let status = c.ok(2, "status", json!({}));
    assert!(
        status["structuredContent"]["writer"]
            .as_str()
            .unwrap_or_default()
            .contains(&m.mnt.display().to_string()),
        "the daemon writes through its mount: {status}"
    );
}

/// A long-running `mnemofs mcp`, driven line by line.
struct McpSession {
    child: Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl McpSession {
    fn start(store: &Path) -> McpSession {
        let mut child = Command::new(bin())
            .args(["mcp", "--store"])
            .arg(store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn mnemofs mcp");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut session = McpSession {
            child,
            input,
            output,
            id: 0,
        };
        session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        writeln!(
            session.input,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .expect("send");
        session
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let request = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.input, "{request}").expect("send");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.output.read_line(&mut line).expect("read") > 0,
                "mnemofs mcp exited"
            );
            let answer: Value = serde_json::from_str(&line).expect("JSON");
            if answer["id"] == self.id {
                return answer["result"].clone();
            }
        }
    }

    fn served_by(&mut self) -> Option<String> {
        let result = self.request("tools/call", json!({"name": "status", "arguments": {}}));
        result["structuredContent"]["served_by"]
            .as_str()
            .map(str::to_string)
    }
}

impl Drop for McpSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_mcp_server_outlives_the_daemon_it_went_through() {
    let mut served = Served::start();
    let mut mcp = McpSession::start(&served.store);
    assert_eq!(mcp.served_by().as_deref(), Some("daemon"));
    served.stop();
    // The call that finds the daemon gone fails; the next opens the store.
    let after: Vec<Option<String>> = (0..2).map(|_| mcp.served_by()).collect();
    assert_eq!(
        after.last().cloned().flatten().as_deref(),
        Some("local"),
        "{after:?}"
    );
}
