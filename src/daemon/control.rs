//! The daemon's control socket: `<state-dir>/control.sock`, private to
//! mnemofs's own commands (agents use the public socket, [`super::socket`]).
//!
//! Commands run by the user who started the daemon talk to it here: one
//! JSON [`Request`] per line, one JSON [`Reply`] line each, as many as they
//! like on one connection. Every connection has a thread of its own, so
//! a long `dream` never holds up a `status`. The socket is created 0600,
//! so only that user can connect. Bad input (not JSON, an unknown
//! operation, a line over the size cap) gets an error reply, never a
//! dropped daemon.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::socket::{Listener, WhenFull};
use crate::ops::{self, Operations, Reply, Request, Response, WireError};

/// The socket's file name in the state dir.
pub(crate) const SOCKET: &str = "control.sock";

/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 64;

/// The line a starting mount sends to a process that serves the store for
/// its agent (`mnemofs mcp`, `mnemofs tool`), asking it to let go of the
/// store; [`HANDED_OVER`] is the answer once it has.
const HAND_OVER: &str = r#"{"op":"hand_over"}"#;
/// The answer to [`HAND_OVER`] once the store's lock is free.
const HANDED_OVER: &str = r#"{"handed_over":true}"#;

/// What a process serving the store for its agent does when a mount asks
/// for the store: `Err` says why it keeps it.
pub(crate) type HandOver = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The listening side, in the daemon.
pub(crate) struct ControlServer {
    listener: Listener,
}

impl ControlServer {
    /// Listens on the state dir's socket, replacing a stale one.
    /// With `hand_over`, a mount that asks for the store is given it.
    pub(crate) fn start(
        state_dir: &Path,
        ops: Arc<Operations>,
        hand_over: Option<HandOver>,
    ) -> anyhow::Result<Self> {
        let listener = Listener::start(
            state_dir.join(SOCKET),
            "control",
            MAX_CONNECTIONS,
            WhenFull::Wait,
            move |stream| serve_connection(stream, &ops, hand_over.as_ref()),
        )?;
        Ok(ControlServer { listener })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        self.listener.path()
    }
}

fn serve_connection(
    stream: UnixStream,
    ops: &Operations,
    hand_over: Option<&HandOver>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let max = crate::ops::max_request_line(ops.max_file_size());
    loop {
        let mut line = Vec::new();
        let n = (&mut reader).take(max + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        if line.trim_ascii() == HAND_OVER.as_bytes() {
            let given = match hand_over {
                Some(hand_over) => hand_over(),
                None => Err("it serves the store for as long as it runs".into()),
            };
            match given {
                Ok(()) => writer.write_all(format!("{HANDED_OVER}\n").as_bytes())?,
                Err(why) => {
                    let e = ops::Error::Unavailable(why);
                    write_reply(&mut writer, &Reply::Error(WireError::from(&e)))?;
                }
            }
            return Ok(());
        }
        let reply = if n as u64 > max {
            // The rest of the line cannot be parsed: answer and hang up.
            let e = ops::Error::InvalidInput(format!(
                "request larger than {} MiB, more than a memory of the store's size cap ({} MiB) needs",
                max >> 20,
                ops.max_file_size() >> 20
            ));
            write_reply(&mut writer, &Reply::Error(WireError::from(&e)))?;
            return Ok(());
        } else {
            answer(&line, ops)
        };
        write_reply(&mut writer, &reply)?;
    }
}

fn answer(line: &[u8], ops: &Operations) -> Reply {
    if line.iter().all(u8::is_ascii_whitespace) {
        let e = ops::Error::InvalidInput("empty request".into());
        return Reply::Error(WireError::from(&e));
    }
    let request: Request = match serde_json::from_slice(line) {
        Ok(r) => r,
        Err(e) => {
            let e = ops::Error::InvalidInput(format!("not a valid request: {e}"));
            return Reply::Error(WireError::from(&e));
        }
    };
    match ops.handle(request) {
        Ok(response) => Reply::Ok(response),
        Err(e) => {
            if e.is_routine() {
                tracing::debug!("request failed: {e}");
            } else {
                tracing::warn!("request failed: {e}");
            }
            Reply::Error(WireError::from(&e))
        }
    }
}

fn write_reply(writer: &mut UnixStream, reply: &Reply) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    writer.write_all(&bytes)
}

/// Asks the process listening at `socket` to hand the store over, waiting
/// at most `within` for its answer: `Ok` once the store's lock is free,
/// else why not, in its words.
pub(crate) fn ask_to_hand_over(socket: &Path, within: std::time::Duration) -> Result<(), String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(within))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(format!("{HAND_OVER}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .map_err(|e| format!("no answer: {e}"))?;
    if answer.trim() == HANDED_OVER {
        return Ok(());
    }
    match serde_json::from_str::<Reply>(&answer) {
        Ok(Reply::Error(e)) => Err(e.message),
        _ => Err(format!("an answer not understood: {}", answer.trim())),
    }
}

/// A connection to a daemon's control socket.
#[derive(Debug)]
pub(crate) struct ControlClient {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// False once a call lost its way (the connection broke, or a reply
    /// was not understood): the next call must not read what is left.
    sound: bool,
    /// Whether the last request's line was all written: a request whose
    /// line was not never ran.
    delivered: bool,
}

impl ControlClient {
    /// Connects, or `None` if nothing listens at `socket`.
    pub(crate) fn connect(socket: &Path) -> std::io::Result<Option<ControlClient>> {
        let stream = match UnixStream::connect(socket) {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        Ok(Some(ControlClient {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            sound: true,
            delivered: false,
        }))
    }

    /// Sends one request and waits for its reply.
    pub(crate) fn call(&mut self, request: &Request) -> ops::Result<Response> {
        let line =
            serde_json::to_vec(request).map_err(|e| ops::Error::InvalidInput(e.to_string()))?;
        let reply = self.exchange(line);
        self.sound &= reply.is_ok();
        match serde_json::from_str::<Reply>(&reply?) {
            Ok(Reply::Ok(response)) => Ok(response),
            Ok(Reply::Error(e)) => Err(ops::Error::Remote(e)),
            Err(e) => {
                self.sound = false;
                Err(ops::Error::Unavailable(format!(
                    "the daemon's reply is not understood: {e}"
                )))
            }
        }
    }

    /// Writes a request's line and reads its reply's.
    fn exchange(&mut self, mut line: Vec<u8>) -> ops::Result<String> {
        let lost = |e: std::io::Error| {
            ops::Error::Unavailable(format!("lost the connection to the daemon: {e}"))
        };
        line.push(b'\n');
        self.delivered = false;
        if let Err(e) = self.writer.write_all(&line) {
            // The daemon may have refused the request and hung up before
            // reading it all: its answer says why.
            let mut reply = String::new();
            return match self.reader.read_line(&mut reply) {
                Ok(n) if n > 0 => Ok(reply),
                _ => Err(lost(e)),
            };
        }
        self.delivered = true;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply).map_err(lost)? == 0 {
            return Err(ops::Error::Unavailable(
                "the daemon closed the connection without answering".into(),
            ));
        }
        Ok(reply)
    }
}

/// Idle connections kept for the next calls; more are opened while calls
/// overlap, and closed after. Each idle one holds one of the daemon's
/// [`MAX_CONNECTIONS`] threads, so a process keeps only a few.
const KEPT_IDLE: usize = 4;

/// A process's connections to a daemon: a call takes an idle one, or opens
/// another while the others are busy, so calls made from several threads
/// at once (`mcp --http`'s clients) are answered side by side, each on a
/// daemon thread of its own.
pub(crate) struct ControlPool {
    socket: PathBuf,
    idle: Mutex<Vec<ControlClient>>,
}

impl ControlPool {
    /// A pool on `socket`, starting with `first`, already connected.
    pub(crate) fn new(socket: PathBuf, first: ControlClient) -> ControlPool {
        ControlPool {
            socket,
            idle: Mutex::new(vec![first]),
        }
    }

    /// Sends one request on a free connection and waits for its reply.
    /// A kept connection whose daemon has gone takes no request: it is
    /// sent once more on a new connection, and when nothing listens any
    /// more, the answer is [`ops::Error::Unreached`] (nothing was done).
    pub(crate) fn call(&self, request: &Request) -> ops::Result<Response> {
        let taken = self.idle.lock().pop();
        let kept = taken.is_some();
        let mut client = match taken {
            Some(client) => client,
            None => self.connect()?,
        };
        let mut result = client.call(request);
        if result.is_err() && !client.delivered && kept {
            self.idle.lock().clear();
            client = self.connect()?;
            result = client.call(request);
        }
        if result.is_err() && !client.delivered {
            result = result.map_err(|e| ops::Error::Unreached(e.to_string()));
        }
        let mut idle = self.idle.lock();
        if client.sound && idle.len() < KEPT_IDLE {
            idle.push(client);
        }
        result
    }

    /// A new connection to the daemon; [`ops::Error::Unreached`] when
    /// nothing listens.
    fn connect(&self) -> ops::Result<ControlClient> {
        match ControlClient::connect(&self.socket) {
            Ok(Some(client)) => Ok(client),
            Ok(None) => Err(ops::Error::Unreached(
                "the daemon serving the store has stopped: start it again (mnemofs mount or serve), or start this session again to serve the store itself".into(),
            )),
            Err(e) => Err(ops::Error::Unreached(format!(
                "cannot reach the daemon at {}: {e}",
                self.socket.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Index;
    use crate::ops::{DirectWriter, Organizer, Report, ServedBy};
    use crate::store::Store;
    use crate::views::Views;
    use std::collections::HashMap;
    use std::time::Duration;

    /// An organizer whose dream runs until the test lets it finish.
    struct Blocking {
        started: crossbeam_channel::Sender<()>,
        release: crossbeam_channel::Receiver<()>,
    }

    impl Organizer for Blocking {
        fn dream(&self, level: u8) -> ops::Result<Report> {
            let _ = self.started.send(());
            let _ = self.release.recv();
            Ok(Report {
                level,
                ..Report::default()
            })
        }

        fn last_reports(&self) -> HashMap<String, Report> {
            HashMap::new()
        }
    }

    type Gate = (
        crossbeam_channel::Receiver<()>,
        crossbeam_channel::Sender<()>,
    );

    /// A server whose organizer blocks; the gate says when a dream started
    /// and lets it finish.
    fn server() -> (tempfile::TempDir, ControlServer, Gate) {
        server_handing_over(|_| None)
    }

    /// [`server`], whose hand-over `hand_over` makes from its operations.
    fn server_handing_over(
        hand_over: impl FnOnce(Arc<Operations>) -> Option<HandOver>,
    ) -> (tempfile::TempDir, ControlServer, Gate) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("store")).unwrap();
        let store = Arc::new(Store::open(&dir.path().join("store")).unwrap());
        let index = Index::in_memory(Arc::clone(&store)).unwrap();
        let (started_tx, started) = crossbeam_channel::unbounded();
        let (release, release_rx) = crossbeam_channel::unbounded();
        let ops = Operations::new(
            Arc::clone(&store),
            index.clone(),
            Views::new(index),
            Arc::new(DirectWriter::new(store)),
            ServedBy::Daemon,
        )
        .with_organizer(Arc::new(Blocking {
            started: started_tx,
            release: release_rx,
        }));
        let ops = Arc::new(ops);
        let hand_over = hand_over(Arc::clone(&ops));
        let server = ControlServer::start(dir.path(), ops, hand_over).unwrap();
        (dir, server, (started, release))
    }

    #[test]
    fn a_hand_over_waits_for_the_running_request_then_takes_no_more() {
        let (_dir, server, (started, release)) = server_handing_over(|ops| {
            Some(Arc::new(move || {
                ops.close(Duration::from_secs(30))
                    .then_some(())
                    .ok_or_else(|| "busy".to_string())
            }))
        });
        let socket = server.path().to_path_buf();
        let dreamer = std::thread::spawn(move || {
            let mut client = ControlClient::connect(&socket).unwrap().unwrap();
            client.call(&Request::Dream { level: 2 })
        });
        started.recv_timeout(Duration::from_secs(30)).unwrap();
        let socket = server.path().to_path_buf();
        let asking = std::thread::spawn(move || ask_to_hand_over(&socket, Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(200));
        assert!(!asking.is_finished(), "handed over under a running dream");
        release.send(()).unwrap();
        assert_eq!(asking.join().unwrap(), Ok(()));
        assert!(matches!(
            dreamer.join().unwrap().unwrap(),
            Response::Report { .. }
        ));
        let mut client = ControlClient::connect(server.path()).unwrap().unwrap();
        let err = client.call(&Request::Status).unwrap_err();
        assert!(err.to_string().contains("handed the store"), "{err}");
    }

    #[test]
    fn a_daemon_keeps_its_store_when_asked_for_it() {
        let (_dir, server, _gate) = server();
        let why = ask_to_hand_over(server.path(), Duration::from_secs(30)).unwrap_err();
        assert!(why.contains("for as long as it runs"), "{why}");
        let mut client = ControlClient::connect(server.path()).unwrap().unwrap();
        assert!(matches!(
            client.call(&Request::Status).unwrap(),
            Response::Status { .. }
        ));
    }

    #[test]
    fn a_long_dream_does_not_hold_up_status_on_another_connection() {
        let (_dir, server, (started, release)) = server();
        let socket = server.path().to_path_buf();
        let dreamer = std::thread::spawn(move || {
            let mut client = ControlClient::connect(&socket).unwrap().unwrap();
            client.call(&Request::Dream { level: 2 })
        });
        started.recv_timeout(Duration::from_secs(30)).unwrap();
        // The dream is running and will not finish until released.
        let mut client = ControlClient::connect(server.path()).unwrap().unwrap();
        let Response::Status { status } = client.call(&Request::Status).unwrap() else {
            panic!("not a status");
        };
        assert_eq!(status.served_by, "daemon");
        assert!(!dreamer.is_finished());
        release.send(()).unwrap();
        let Response::Report { report } = dreamer.join().unwrap().unwrap() else {
            panic!("not a report");
        };
        assert_eq!(report.level, 2);
    }

    #[test]
    fn a_pool_answers_a_status_while_its_other_call_dreams() {
        let (_dir, server, (started, release)) = server();
        let first = ControlClient::connect(server.path()).unwrap().unwrap();
        let pool = Arc::new(ControlPool::new(server.path().to_path_buf(), first));
        let dreamer = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.call(&Request::Dream { level: 2 }))
        };
        started.recv_timeout(Duration::from_secs(30)).unwrap();
        // The pool's one connection is busy with the dream: a second call
        // gets a connection of its own, and kept afterwards.
        for _ in 0..3 {
            assert!(matches!(
                pool.call(&Request::Status).unwrap(),
                Response::Status { .. }
            ));
        }
        assert!(!dreamer.is_finished());
        release.send(()).unwrap();
        assert!(matches!(
            dreamer.join().unwrap().unwrap(),
            Response::Report { .. }
        ));
        assert_eq!(pool.idle.lock().len(), 2);
    }

    #[test]
    fn bad_lines_get_one_error_each_and_the_connection_stays_usable() {
        let (_dir, server, _gate) = server();
        let stream = UnixStream::connect(server.path()).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        for bad in [
            "not json\n",
            "{\"op\":\"no_such_op\"}\n",
            "{\"op\":\"read\"}\n",
            "\n",
            "{\"op\":\"read\",\"path\":\"../etc/passwd\"}\n",
        ] {
            writer.write_all(bad.as_bytes()).unwrap();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let reply: Reply = serde_json::from_str(&line).unwrap();
            let Reply::Error(e) = reply else {
                panic!("{bad:?} was accepted: {line}");
            };
            assert!(!e.message.is_empty() && !e.message.contains('\n'), "{e:?}");
        }
        writer.write_all(b"{\"op\":\"status\"}\n").unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(matches!(
            serde_json::from_str::<Reply>(&line).unwrap(),
            Reply::Ok(Response::Status { .. })
        ));
    }
}
