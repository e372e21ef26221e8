//! The public socket: JSON-RPC 2.0 for agents that keep a connection open
//! (memory-cli's protocol), and the listener it shares with the control
//! socket.
//!
//! One JSON object per line each way. Methods: `tools/list`, `tools/call`
//! with `{name, arguments}` (or memory-cli's `{name, params}`), and any
//! tool's name as the method itself, its parameters being the arguments.
//! The tools are [`front::tools`]'s table, the one MCP serves, so the two
//! protocols never drift; memory-cli's names (`memory_write`, ...) are
//! accepted too. A `scope` parameter runs the call as that agent's session.
//!
//! Errors are JSON-RPC's: -32700 for a line that is not JSON, -32600 for
//! one that is not a request (or is over 2 MiB, whose rest is skipped),
//! -32601 for an unknown method, -32602 for parameters that do not fit,
//! and the operations' own codes (-32001 not found, -32003 conflict, ...)
//! for a call that fails. The connection stays open after any of them. A
//! notification (no `id`) is run and not answered.
//!
//! Where it is: `$XDG_RUNTIME_DIR/mnemofs/<store key>.sock` (the registry's
//! folder, kept 0700), the socket itself 0600. It is a listener of its own
//! rather than a second protocol on the control socket: the control
//! protocol is private to one build of mnemofs (commands and their daemon
//! are upgraded together) and carries whole files, while this one is
//! public, stable and capped at 2 MiB a line; sharing a port would tie the
//! two together for nothing. Both use [`Listener`]: a thread per
//! connection, so an idle client holds only its own thread and a long
//! call never delays another client.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Map, Value, json};

use crate::front::tools;
use crate::ops::{Operations, Request, Response, Result as OpsResult, rpc};

/// The longest request line accepted.
pub const MAX_LINE: usize = 2 << 20;

/// Connections the public socket serves at once.
const MAX_CLIENTS: usize = 1024;

/// What a listener does when it already serves its most connections.
pub(crate) enum WhenFull {
    /// Let the connection wait in the listen queue.
    Wait,
    /// Answer it with this line and close it.
    Refuse(&'static str),
}

/// A Unix socket served by a thread per connection.
pub(crate) struct Listener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The listening socket, again: shut down to wake the accept when the
    /// socket's file is gone and cannot be connected to.
    wake: UnixListener,
}

impl Listener {
    /// Listens at `path` (0600, replacing a stale socket) and serves each
    /// connection with `serve` on a thread of its own, at most `max` at once.
    pub(crate) fn start(
        path: PathBuf,
        name: &str,
        max: usize,
        when_full: WhenFull,
        serve: impl Fn(UnixStream) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> anyhow::Result<Listener> {
        // The caller holds the store lock, so a socket file left here is stale.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let wake = listener.try_clone()?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            let serve: Arc<dyn Fn(UnixStream) -> std::io::Result<()> + Send + Sync> =
                Arc::new(serve);
            let name = name.to_string();
            std::thread::Builder::new()
                .name(format!("mnemofs-{name}"))
                .spawn(move || accept(&listener, &name, max, &when_full, &serve, &stop))?
        };
        Ok(Listener {
            path,
            stop,
            thread: Some(thread),
            wake,
        })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the blocking accept: shut the socket down (it then fails at
        // once), and connect too where that does not wake it.
        // SAFETY: `wake` is a listening socket this listener owns.
        unsafe {
            libc::shutdown(std::os::fd::AsRawFd::as_raw_fd(&self.wake), libc::SHUT_RDWR);
        }
        let _ = UnixStream::connect(&self.path);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

type Serve = Arc<dyn Fn(UnixStream) -> std::io::Result<()> + Send + Sync>;

fn accept(
    listener: &UnixListener,
    name: &str,
    max: usize,
    when_full: &WhenFull,
    serve: &Serve,
    stop: &AtomicBool,
) {
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut stream = match stream {
            Ok(s) => s,
            Err(_) if stop.load(Ordering::Relaxed) => return,
            Err(e) => {
                tracing::warn!("{name} socket: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if active.load(Ordering::Acquire) >= max {
            match when_full {
                WhenFull::Wait => {
                    while active.load(Ordering::Acquire) >= max {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
                WhenFull::Refuse(line) => {
                    tracing::warn!("{name} socket: {max} connections already; one refused");
                    let _ = stream.write_all(line.as_bytes());
                    continue;
                }
            }
        }
        active.fetch_add(1, Ordering::AcqRel);
        let (serve, done, label) = (Arc::clone(serve), Arc::clone(&active), name.to_string());
        let spawned = std::thread::Builder::new()
            .name(format!("mnemofs-{name}-client"))
            .spawn(move || {
                if let Err(e) = serve(stream) {
                    tracing::debug!("{label} connection ended: {e}");
                }
                done.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot serve a {name} connection: {e}");
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Where the public socket of `store`'s daemon listens.
pub fn path_for(store: &Path) -> PathBuf {
    super::registry::dir().join(format!("{}.sock", super::paths::store_key(store)))
}

/// The public JSON-RPC socket of a daemon.
pub(crate) struct RpcServer {
    listener: Listener,
}

impl RpcServer {
    /// Listens at [`path_for`]`(store)`, in a folder made (or kept) 0700.
    pub(crate) fn start(store: &Path, ops: Arc<Operations>) -> anyhow::Result<RpcServer> {
        let path = path_for(store);
        if let Some(dir) = path.parent() {
            super::paths::make_private_dir(dir)
                .with_context(|| format!("cannot use {}", dir.display()))?;
        }
        let listener = Listener::start(
            path,
            "rpc",
            MAX_CLIENTS,
            WhenFull::Refuse(
                "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"the server has too many connections; retry later\"}}\n",
            ),
            move |stream| serve_connection(stream, &|request| ops.handle(request)),
        )?;
        Ok(RpcServer { listener })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        self.listener.path()
    }
}

/// Answers one connection's requests until it closes.
fn serve_connection(
    stream: UnixStream,
    call: &(dyn Fn(Request) -> OpsResult<Response> + Sync),
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let mut line = Vec::new();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        let answer = if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            if !skip_line(&mut reader)? {
                return Ok(());
            }
            Some(error(
                Value::Null,
                rpc::INVALID_REQUEST,
                format!("the request is over {} MiB", MAX_LINE >> 20),
            ))
        } else {
            answer(&line, call)
        };
        if let Some(answer) = answer {
            let mut bytes = serde_json::to_vec(&answer).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            writer.write_all(&bytes)?;
        }
    }
}

/// Skips the rest of a line; false if the connection closed first.
fn skip_line(reader: &mut impl BufRead) -> std::io::Result<bool> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(false);
        }
        match buf.iter().position(|b| *b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(true);
            }
            None => {
                let len = buf.len();
                reader.consume(len);
            }
        }
    }
}

fn error(id: Value, code: i32, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The answer to one line, or `None` for a notification or a blank line.
pub(crate) fn answer(
    line: &[u8],
    call: &(dyn Fn(Request) -> OpsResult<Response> + Sync),
) -> Option<Value> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let request: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(error(
                Value::Null,
                rpc::PARSE_ERROR,
                format!("not JSON: {e}"),
            ));
        }
    };
    let Value::Object(request) = request else {
        return Some(error(
            Value::Null,
            rpc::INVALID_REQUEST,
            "a request is one JSON object (batches are not supported)".into(),
        ));
    };
    let id = request.get("id").cloned();
    let reply_id = id.clone().unwrap_or(Value::Null);
    let invalid = |message: &str| {
        Some(error(
            reply_id.clone(),
            rpc::INVALID_REQUEST,
            message.into(),
        ))
    };
    if !matches!(
        id,
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    ) {
        return invalid("`id` must be a string, a number or null");
    }
    if request
        .get("jsonrpc")
        .is_some_and(|v| v != &Value::from("2.0"))
    {
        return invalid("`jsonrpc` must be \"2.0\"");
    }
    let Some(Value::String(method)) = request.get("method") else {
        return invalid("`method` must be a string");
    };
    let params = match request.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(_) => {
            return Some(error(
                reply_id,
                rpc::INVALID_PARAMS,
                "`params` must be an object".into(),
            ));
        }
    };
    let outcome = run(method, &params, call);
    id.map(|id| match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error(id, code, message),
    })
}

/// Runs a method: its result, or its error code and message.
fn run(
    method: &str,
    params: &Map<String, Value>,
    call: &(dyn Fn(Request) -> OpsResult<Response> + Sync),
) -> Result<Value, (i32, String)> {
    match method {
        "tools/list" => Ok(json!({"tools": tools::listing(true)})),
        "ping" => Ok(json!({})),
        "tools/call" => {
            let name = match params.get("name") {
                Some(Value::String(name)) => name.as_str(),
                _ => return Err((rpc::INVALID_PARAMS, "`name` must name a tool".into())),
            };
            if tools::find(name).is_none() && tools::find_alias(name).is_none() {
                return Err((
                    rpc::INVALID_PARAMS,
                    format!("there is no tool named {name:?}"),
                ));
            }
            let mut arguments = match params.get("arguments").or_else(|| params.get("params")) {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(args)) => args.clone(),
                Some(_) => {
                    return Err((rpc::INVALID_PARAMS, "`arguments` must be an object".into()));
                }
            };
            if let Some(scope) = params.get("scope")
                && !arguments.contains_key("scope")
            {
                arguments.insert("scope".into(), scope.clone());
            }
            call_tool(name, &arguments, call)
        }
        name if tools::find(name).is_some() || tools::find_alias(name).is_some() => {
            call_tool(name, params, call)
        }
        _ => Err((
            rpc::METHOD_NOT_FOUND,
            format!("there is no method {method:?} (tools/list, tools/call, or a tool's name)"),
        )),
    }
}

fn call_tool(
    name: &str,
    arguments: &Map<String, Value>,
    call: &(dyn Fn(Request) -> OpsResult<Response> + Sync),
) -> Result<Value, (i32, String)> {
    match tools::call(call, name, arguments) {
        Ok(answer) => Ok(json!({
            "content": [{"type": "text", "text": answer.text}],
            "structuredContent": answer.structured,
            "isError": answer.is_error,
        })),
        Err(fail) => Err((fail.code, fail.message)),
    }
}
