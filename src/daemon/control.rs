//! The daemon's control socket: `<state-dir>/control.sock`.
//!
//! CLI commands that need the running daemon to do something and report
//! back (`mnemofs dream`, `mnemofs status`) talk to it here: one JSON
//! request line, one JSON reply line. The socket is created 0600 in the
//! state dir, so only the user who mounted can use it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::index::Index;
use crate::tasks::Tasks;

/// The socket's file name in the state dir.
pub(crate) const SOCKET: &str = "control.sock";

/// How long a dream run may take before the caller gives up waiting.
pub(crate) const DREAM_TIMEOUT: Duration = Duration::from_secs(1800);

/// The listening side, in the daemon.
pub(crate) struct ControlServer {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlServer {
    /// Listens on the state dir's socket, replacing a stale one.
    pub(crate) fn start(
        state_dir: &Path,
        tasks: Option<Arc<Tasks>>,
        index: Index,
    ) -> anyhow::Result<Self> {
        let path = state_dir.join(SOCKET);
        // We hold the store lock, so a socket file left here is stale.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("mnemofs-control".into())
                .spawn(move || serve(&listener, tasks.as_deref(), &index, &stop))?
        };
        Ok(ControlServer {
            path,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(listener: &UnixListener, tasks: Option<&Tasks>, index: &Index, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = handle(stream, tasks, index) {
                    log::warn!("control request failed: {e:#}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => {
                log::warn!("control socket: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

fn handle(stream: UnixStream, tasks: Option<&Tasks>, index: &Index) -> anyhow::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let request: Value = serde_json::from_str(&line).context("request is not JSON")?;
    let reply = match request.get("cmd").and_then(Value::as_str) {
        Some("dream") => {
            let level = request
                .get("level")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 3) as u8;
            match tasks.map(|t| t.dream(level, DREAM_TIMEOUT)) {
                Some(Some(report)) => json!({ "ok": true, "report": report }),
                Some(None) => json!({ "ok": false, "error": "the dream run did not finish" }),
                None => json!({ "ok": false, "error": "the organizer is off (--no-organizer)" }),
            }
        }
        Some("status") => json!({ "ok": true, "status": status_json(index, tasks) }),
        other => json!({ "ok": false, "error": format!("unknown command {other:?}") }),
    };
    let mut stream = stream;
    writeln!(stream, "{reply}")?;
    Ok(())
}

/// The index status and the last run of each task, as JSON.
pub(crate) fn status_json(index: &Index, tasks: Option<&Tasks>) -> Value {
    let s = index.status();
    json!({
        "index": {
            "documents": s.documents,
            "pending_changes": s.pending_changes,
            "reconciling": s.reconciling,
            "last_commit_ms": s.last_commit,
        },
        "organizer": tasks.is_some(),
        "tasks": tasks.map(Tasks::last_reports),
    })
}

/// Sends one request to the daemon serving `state_dir` and returns its
/// reply, or `None` if no daemon listens there.
pub(crate) fn request(
    state_dir: &Path,
    request: &Value,
    timeout: Duration,
) -> anyhow::Result<Option<Value>> {
    let path = state_dir.join(SOCKET);
    let mut stream = match UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot connect to {}", path.display())),
    };
    stream.set_read_timeout(Some(timeout))?;
    writeln!(stream, "{request}")?;
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    let reply: Value = serde_json::from_str(&line).context("the daemon's reply is not JSON")?;
    if reply.get("ok") != Some(&Value::Bool(true)) {
        bail!(
            "the daemon refused: {}",
            reply
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
        );
    }
    Ok(Some(reply))
}
