//! The agents' front ends: the MCP server's `search` and `read` round
//! trips (on stdio, and `search` over HTTP), `mnemofs tool` as a one-shot
//! process, and the public socket under 32 concurrent clients.
//!
//! Baselines from the same run: `rg -l` (else `grep -rl`) over the store for
//! a search, the same searches over stdio for HTTP, reading the file for a
//! `read`, `cat` as a new process for the
//! one-shot tool, and one client alone on the socket for the 32 clients.
//! Basic Memory's MCP search (140–754 ms warm, as published) cannot run
//! here; the targets are the absolute ones of the issue.

use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::{
    Config, Measure, Row, Target, VOCABULARY, Workspace, generate_store, note_path, render_table,
    time,
};

/// Searches per client on the socket.
const SOCKET_SEARCHES: usize = 1000;
/// Clients at once on the socket.
const SOCKET_CLIENTS: usize = 32;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// `mnemofs mcp` driven by hand over its stdio.
struct Mcp {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Mcp {
    fn start(ws: &Workspace) -> Result<Mcp> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemofs"))
            .arg("mcp")
            .arg("--store")
            .arg(&ws.store)
            .arg("--state-dir")
            .arg(&ws.state)
            .env("MNEMOFS_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let input = child.stdin.take().ok_or("no stdin")?;
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut mcp = Mcp {
            child,
            input,
            output,
            next_id: 1,
        };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        writeln!(
            mcp.input,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )?;
        Ok(mcp)
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(
            self.input,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.output.read_line(&mut line)? == 0 {
                return Err("mnemofs mcp closed its output".into());
            }
            let answer: Value = serde_json::from_str(&line)?;
            if answer["id"] == id {
                if answer.get("error").is_some() {
                    return Err(format!("{method}: {answer}").into());
                }
                return Ok(answer["result"].clone());
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Result<Value> {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        if result["isError"] == true {
            return Err(format!("{tool}: {result}").into());
        }
        Ok(result["structuredContent"].clone())
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mnemofs mcp --http` with a token, driven over one kept-alive HTTP/1.1
/// connection, as a remote agent's client does.
struct HttpMcp {
    child: Child,
    stream: BufReader<std::net::TcpStream>,
    authority: String,
    token: String,
    next_id: u64,
}

impl HttpMcp {
    fn start(ws: &Workspace) -> Result<HttpMcp> {
        let mnemofs = |args: &[&str]| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemofs"));
            cmd.args(args)
                .arg("--store")
                .arg(&ws.store)
                .arg("--state-dir")
                .arg(&ws.state)
                .env("MNEMOFS_LOG", "error");
            cmd
        };
        let made = mnemofs(&["token", "create", "bench", "--scope", "all"]).output()?;
        if !made.status.success() {
            return Err(format!("token create: {}", String::from_utf8_lossy(&made.stderr)).into());
        }
        let token = String::from_utf8(made.stdout)?.trim().to_string();
        let mut child = mnemofs(&["mcp", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
        let authority = line
            .trim()
            .strip_prefix("serving MCP on http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .ok_or_else(|| format!("mnemofs mcp --http did not start: {line:?}"))?
            .to_string();
        let stream = std::net::TcpStream::connect(&authority)?;
        stream.set_nodelay(true)?;
        Ok(HttpMcp {
            child,
            stream: BufReader::new(stream),
            authority,
            token,
            next_id: 1,
        })
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}})
        .to_string();
        write!(
            self.stream.get_mut(),
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
            self.authority,
            self.token,
            body.len()
        )?;
        let mut length = None;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stream.read_line(&mut line)? == 0 {
                return Err("the HTTP server closed the connection".into());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = Some(value.trim().parse::<usize>()?);
            }
        }
        let mut body = vec![0; length.ok_or("an answer without Content-Length")?];
        std::io::Read::read_exact(&mut self.stream, &mut body)?;
        let answer: Value = serde_json::from_slice(&body)?;
        let result = &answer["result"];
        if answer.get("error").is_some() || result["isError"] == true {
            return Err(format!("{tool} over HTTP: {answer}").into());
        }
        Ok(result["structuredContent"].clone())
    }
}

impl Drop for HttpMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `rg -l -F` over the store (or `grep -rlF` without rg): files listed.
fn scan(store: &Path, word: &str) -> Result<usize> {
    let rg = Command::new("rg")
        .args(["-l", "-F", "--no-messages", "--", word])
        .arg(store)
        .stderr(Stdio::null())
        .output();
    let out = match rg {
        Ok(out) => out,
        Err(_) => Command::new("grep")
            .args(["-rlF", "--", word])
            .arg(store)
            .stderr(Stdio::null())
            .output()?,
    };
    Ok(out
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count())
}

/// Query words: the vocabulary's, without the connecting words the
/// search figures also leave out.
fn words(n: usize) -> Vec<&'static str> {
    const CONNECTING: &[&str] = &["with", "after", "before", "because", "when"];
    VOCABULARY
        .iter()
        .copied()
        .filter(|w| w.len() > 3 && !CONNECTING.contains(w))
        .take(n)
        .collect()
}

/// `mnemofs serve` on the workspace, stopped on drop.
struct Served {
    child: Child,
    socket: PathBuf,
}

impl Served {
    fn start(ws: &Workspace) -> Result<Served> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemofs"))
            .args(["serve", "--no-organizer", "--store"])
            .arg(&ws.store)
            .arg("--state-dir")
            .arg(&ws.state)
            .env("MNEMOFS_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
        let socket = line
            .trim_end()
            .rsplit_once(" on ")
            .map(|(_, s)| PathBuf::from(s))
            .ok_or_else(|| format!("mnemofs serve did not start: {line:?}"))?;
        Ok(Served { child, socket })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: signals our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// One socket client doing `n` searches; each round trip's seconds.
fn socket_client(socket: &Path, n: usize, offset: usize) -> Result<Vec<f64>> {
    let stream = UnixStream::connect(socket)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let words = words(40);
    let mut samples = Vec::with_capacity(n);
    let mut line = String::new();
    for i in 0..n {
        let word = words[(i + offset) % words.len()];
        let request = json!({"jsonrpc": "2.0", "id": i, "method": "search",
                             "params": {"query": word, "limit": 10}});
        let start = Instant::now();
        writeln!(writer, "{request}")?;
        line.clear();
        reader.read_line(&mut line)?;
        samples.push(start.elapsed().as_secs_f64());
        if !line.contains("\"result\"") {
            return Err(format!("search {word}: {line}").into());
        }
    }
    Ok(samples)
}

/// Runs the front-end figures.
pub fn run(cfg: &Config) -> Result<()> {
    let n = cfg.notes;
    println!("\n== tools: MCP, the one-shot memory tool and the socket, {n} notes ==");
    let ws = Workspace::new()?;
    generate_store(&ws.store, n)?;
    let mut notes = Vec::new();
    let queries = words(if cfg.quick { 5 } else { 30 });
    let reads = if cfg.quick { 20 } else { 200 };

    // MCP: the first call opens the store and builds the index.
    let mut mcp = Mcp::start(&ws)?;
    let (t, _) = time(|| mcp.call("status", json!({})));
    notes.push(format!(
        "MCP: first call (opens the store, builds the index) {:.1} s",
        t.as_secs_f64()
    ));
    let mut search = Row::new(
        "MCP search round trip, p50 (native: rg -l over the store)",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.005);
    mcp.call("search", json!({"query": queries[0]}))?;
    for word in &queries {
        let (t, hits) = time(|| mcp.call("search", json!({"query": word, "limit": 10})));
        if hits?["results"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("MCP search {word:?} found nothing").into());
        }
        search.mount.push(t.as_secs_f64());
        let (t, found) = time(|| scan(&ws.store, word));
        found?;
        search.native.push(t.as_secs_f64());
    }
    // An agent asks in sentences: four content words of the notes among
    // the words a question is built from, each optional and ranked.
    let mut question = Row::new(
        "MCP search of a question, p50 (native: rg -l of its first word)",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.005);
    for (i, four) in queries.chunks(4).filter(|c| c.len() == 4).enumerate() {
        let asked = format!(
            "what did the {} say about {} when {} was {}?",
            four[(i) % 4],
            four[(i + 1) % 4],
            four[(i + 2) % 4],
            four[(i + 3) % 4]
        );
        let (t, hits) = time(|| mcp.call("search", json!({"query": asked, "limit": 10})));
        if hits?["results"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("MCP search {asked:?} found nothing").into());
        }
        question.mount.push(t.as_secs_f64());
        let (t, found) = time(|| scan(&ws.store, four[i % 4]));
        found?;
        question.native.push(t.as_secs_f64());
    }
    let mut read = Row::new(
        "MCP read of one memory, p50 (native: read the file)",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.001);
    for i in 0..reads {
        let path = note_path((i * 7919) % n, n);
        let rel = path.to_string_lossy().into_owned();
        let (t, memory) = time(|| mcp.call("read", json!({"ref": rel})));
        if memory?["path"] != rel.as_str() {
            return Err(format!("MCP read {rel} answered another memory").into());
        }
        read.mount.push(t.as_secs_f64());
        let (t, bytes) = time(|| std::fs::read(ws.store.join(&path)));
        bytes?;
        read.native.push(t.as_secs_f64());
    }
    // A write returns once the index has it (read your writes): its cost
    // against writing and syncing the same bytes natively.
    let mut write = Row::new(
        "MCP write of a memory, searchable on return, p50 (native: write+fsync)",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50);
    let scratch = tempfile::tempdir()?;
    for i in 0..reads.min(50) {
        let content = format!("A note written by the benchmark, number {i}, about zanzibar{i}.\n");
        let (t, answer) = time(|| {
            mcp.call(
                "write",
                json!({"content": content, "title": format!("Bench write {i}")}),
            )
        });
        answer?;
        write.mount.push(t.as_secs_f64());
        let native = scratch.path().join(format!("w{i}.md"));
        let (t, done) = time(|| -> std::io::Result<()> {
            let mut file = std::fs::File::create(&native)?;
            std::io::Write::write_all(&mut file, content.as_bytes())?;
            file.sync_all()
        });
        done?;
        write.native.push(t.as_secs_f64());
    }

    // The same searches over HTTP, next to stdio's from the same run.
    let rounds = if cfg.quick { 2 } else { 10 };
    let mut stdio_searches = Vec::new();
    for word in queries.iter().cycle().take(queries.len() * rounds) {
        let (t, hits) = time(|| mcp.call("search", json!({"query": word, "limit": 10})));
        hits?;
        stdio_searches.push(t.as_secs_f64());
    }
    drop(mcp);
    let mut http = HttpMcp::start(&ws)?;
    let (t, _) = time(|| http.call("status", json!({})));
    notes.push(format!(
        "MCP over HTTP: first call (opens the store) {:.1} s",
        t.as_secs_f64()
    ));
    let mut http_searches = Vec::new();
    for word in queries.iter().cycle().take(queries.len() * rounds) {
        let (t, hits) = time(|| http.call("search", json!({"query": word, "limit": 10})));
        if hits?["results"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("MCP search over HTTP {word:?} found nothing").into());
        }
        http_searches.push(t.as_secs_f64());
    }
    drop(http);
    let mut http_p50 = Row::new(
        "MCP over HTTP search round trip, p50 (native: the same over stdio)",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.003);
    http_p50.mount = http_searches.clone();
    http_p50.native = stdio_searches.clone();
    let mut http_p99 = Row::new(
        "MCP over HTTP search round trip, p99 (native: the same over stdio)",
        Measure::Time,
        Target::Info,
    )
    .with_percentile(99);
    http_p99.mount = http_searches;
    http_p99.native = stdio_searches;

    // `mnemofs tool`: one process, one command, on the store itself.
    let one_shot = |rel: &str| -> Result<()> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mnemofs"))
            .arg("tool")
            .arg("--store")
            .arg(&ws.store)
            .arg("--state-dir")
            .arg(&ws.state)
            .env("MNEMOFS_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let command = json!({"command": "view", "path": format!("/memories/{rel}")});
        child
            .stdin
            .take()
            .ok_or("no stdin")?
            .write_all(command.to_string().as_bytes())?;
        let out = child.wait_with_output()?;
        if !String::from_utf8_lossy(&out.stdout).contains("\"is_error\":false") {
            return Err(format!("mnemofs tool view {rel} failed").into());
        }
        Ok(())
    };
    let cat = |rel: &str| -> Result<()> {
        Command::new("cat")
            .arg(ws.store.join(rel))
            .stdout(Stdio::null())
            .status()?;
        Ok(())
    };
    let mut tool_local = Row::new(
        "mnemofs tool, one process, one view, no daemon (native: cat)",
        Measure::Time,
        Target::Info,
    )
    .with_limit(0.030);
    let mut tool_served = Row::new(
        "mnemofs tool, one process, one view, through mnemofs serve (native: cat)",
        Measure::Time,
        Target::Info,
    )
    .with_limit(0.030);
    let runs = if cfg.quick { 3 } else { 10 };
    for i in 0..runs {
        let rel = note_path((i * 104_729) % n, n)
            .to_string_lossy()
            .into_owned();
        let (t, done) = time(|| cat(&rel));
        done?;
        tool_local.native.push(t.as_secs_f64());
        let (t, done) = time(|| one_shot(&rel));
        done?;
        tool_local.mount.push(t.as_secs_f64());
    }

    // The socket, served by `mnemofs serve`.
    let served = Served::start(&ws)?;
    for i in 0..runs {
        let rel = note_path((i * 15_485_863) % n, n)
            .to_string_lossy()
            .into_owned();
        let (t, done) = time(|| cat(&rel));
        done?;
        tool_served.native.push(t.as_secs_f64());
        let (t, done) = time(|| one_shot(&rel));
        done?;
        tool_served.mount.push(t.as_secs_f64());
    }
    let per_client = if cfg.quick { 50 } else { SOCKET_SEARCHES };
    socket_client(&served.socket, 20, 0)?;
    let (alone_time, alone) = time(|| socket_client(&served.socket, per_client, 0));
    let alone = alone?;
    let socket = served.socket.clone();
    let (all_time, all) = time(|| {
        let clients: Vec<_> = (0..SOCKET_CLIENTS)
            .map(|c| {
                let socket = socket.clone();
                std::thread::spawn(move || {
                    socket_client(&socket, per_client, c).map_err(|e| e.to_string())
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|t| t.join().map_err(|_| "a client panicked".to_string())?)
            .collect::<std::result::Result<Vec<Vec<f64>>, String>>()
    });
    let all: Vec<f64> = all?.into_iter().flatten().collect();
    drop(served);
    let mut throughput = Row::new(
        format!(
            "socket: {SOCKET_CLIENTS} clients x {per_client} searches, searches/s (native: 1 client alone)"
        ),
        Measure::Rate("searches"),
        Target::Info,
    );
    throughput
        .mount
        .push(all.len() as f64 / all_time.as_secs_f64());
    throughput
        .native
        .push(alone.len() as f64 / alone_time.as_secs_f64());
    let mut p99 = Row::new(
        format!(
            "socket: search round trip p99 under {SOCKET_CLIENTS} clients (native: 1 client alone)"
        ),
        Measure::Time,
        Target::Info,
    )
    .with_percentile(99);
    p99.mount = all;
    p99.native = alone;
    notes.push(format!(
        "socket: the {SOCKET_CLIENTS} clients took {:.1} s in all",
        all_time.as_secs_f64()
    ));

    println!(
        "{}",
        render_table(&[
            search,
            question,
            read,
            write,
            http_p50,
            http_p99,
            tool_local,
            tool_served,
            throughput,
            p99
        ])
    );
    for note in notes {
        println!("note: {note}");
    }
    Ok(())
}
