//! MCP over streamable HTTP: the same server as on stdio
//! ([`mcp`](super::mcp)), for agents that are not local processes.
//!
//! Served at `/mcp` by rmcp's streamable HTTP service, stateless, each
//! answer one JSON body: there is no session to steal or to widen, since
//! every request carries its own token and runs in that token's scope.
//!
//! What a request meets, in order:
//! - a path other than `/mcp`: 404;
//! - an `Origin` header not on the allowed list (empty by default, so a
//!   browser page can never call): 403, as the MCP specification asks of
//!   servers against DNS rebinding; clients that are not browsers send
//!   none;
//! - no `Authorization: Bearer` token, or one the state dir's
//!   [`TokenBook`] does not know: 401;
//! - rmcp's own checks: the `Host` header (loopback names unless the
//!   server listens on another address), the body (at most 4 MiB: 413),
//!   the media types.
//!
//! Limits, so a slow or greedy client blocks nobody: at most 256
//! connections (more wait in the kernel's backlog), a request's head must
//! arrive within 10 s, and at most 16 calls run on the store at once
//! (the others wait without holding a thread). A client that goes away
//! mid-call drops only its answer: the call itself finishes, so a write
//! is whole or absent, never half made.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request as HttpRequest, Response as HttpResponse, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::mcp::{MemoryServer, Runner};
use super::tokens::{Grant, Reach, TokenBook};

/// Where MCP is served.
pub const PATH: &str = "/mcp";

/// The largest request body.
const MAX_BODY: usize = 4 << 20;
/// Connections served at once.
const MAX_CONNECTIONS: usize = 256;
/// How long a request's head may take to arrive.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Who may call.
#[derive(Debug)]
pub enum Access {
    /// Holders of a token in this book.
    Tokens(TokenBook),
    /// Anyone who reaches the port: only on a loopback address.
    Open,
}

/// How to serve.
#[derive(Debug)]
pub struct HttpOptions {
    /// Where to listen; port 0 picks a free one.
    pub addr: SocketAddr,
    /// Who may call.
    pub access: Access,
    /// Browser origins allowed to call (`https://app.example.com`).
    pub origins: Vec<String>,
    /// Host names the server is reached by, beyond the loopback ones.
    pub hosts: Vec<String>,
}

/// MCP over HTTP, served on threads of its own for as long as the value
/// lives.
pub struct HttpServer {
    addr: SocketAddr,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl HttpServer {
    /// Listens on `options.addr` and serves `call` there. Refuses, before
    /// listening, an address others can reach without a token, and a
    /// token book no token can pass.
    pub fn start(options: HttpOptions, call: Arc<Runner>) -> io::Result<HttpServer> {
        let refuse = |why: String| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
        match &options.access {
            Access::Open if !options.addr.ip().is_loopback() => {
                return refuse(format!(
                    "refusing to serve MCP on {} without tokens: only a loopback address may go without",
                    options.addr
                ));
            }
            Access::Tokens(book) => match book.list() {
                Ok(tokens) if tokens.is_empty() => {
                    return refuse(format!(
                        "no token can reach this server yet: make one with `mnemofs token create NAME --scope agent:NAME` (they are kept in {})",
                        book.path().display()
                    ));
                }
                Ok(_) => {}
                Err(e) => return refuse(e.to_string()),
            },
            Access::Open => {}
        }
        let origins = options
            .origins
            .iter()
            .map(|o| normalize_origin(o))
            .collect::<Vec<_>>();
        if let Some(bad) = origins.iter().find(|o| !o.contains("://") && *o != "null") {
            return refuse(format!(
                "{bad:?} is not an origin: give a scheme, a host and a port (https://app.example.com:443)"
            ));
        }
        let listener = std::net::TcpListener::bind(options.addr).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot listen on {}: {e}", options.addr))
        })?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();

        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_origins(origins.clone())
            .enforce_origin_validation();
        config.legacy_session_mode = false;
        config.json_response = true;
        config.sse_keep_alive = None;
        config.max_request_body_bytes = MAX_BODY;
        config.cancellation_token = stop.child_token();
        if !options.hosts.is_empty() {
            let mut hosts = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
            hosts.extend(options.hosts.iter().cloned());
            config = config.with_allowed_hosts(hosts);
        } else if !addr.ip().is_loopback() {
            // Reached by whatever name the network gives it; the token
            // is what keeps a rebinding page out.
            config = config.disable_allowed_hosts();
        }
        let calls = Arc::new(Semaphore::new(super::mcp::MAX_CALLS));
        let service = StreamableHttpService::new(
            move || {
                Ok(MemoryServer::over_http(
                    Arc::clone(&call),
                    Arc::clone(&calls),
                ))
            },
            Arc::new(NeverSessionManager::default()),
            config,
        );
        let gate = Arc::new(Gate {
            access: options.access,
            origins,
            service,
        });

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mcp-http")
            .enable_all()
            .build()?;
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("mcp-http".into())
            .spawn(move || runtime.block_on(accept(listener, gate, stopped)))?;
        Ok(HttpServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("http://{}{PATH}", self.addr)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accepts connections until `stop`, each served on a task of its own.
async fn accept(listener: std::net::TcpListener, gate: Arc<Gate>, stop: CancellationToken) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!("mcp over http: cannot listen: {e}");
            return;
        }
    };
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
            () = stop.cancelled() => return,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, mostly: wait rather than spin.
                    tracing::warn!("mcp over http: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let (gate, stop) = (Arc::clone(&gate), stop.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request| {
                let gate = Arc::clone(&gate);
                async move { Ok::<_, Infallible>(gate.answer(request, peer).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                served = connection => if let Err(e) = served {
                    tracing::debug!("mcp over http: connection from {peer}: {e}");
                },
                () = stop.cancelled() => {}
            }
        });
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// What every request passes before rmcp sees it.
struct Gate {
    access: Access,
    origins: Vec<String>,
    service: StreamableHttpService<MemoryServer, NeverSessionManager>,
}

impl Gate {
    async fn answer(
        &self,
        mut request: HttpRequest<Incoming>,
        peer: SocketAddr,
    ) -> HttpResponse<Body> {
        if request.uri().path() != PATH {
            return refusal(
                StatusCode::NOT_FOUND,
                &format!("nothing is served here: MCP is at {PATH}"),
            );
        }
        if let Some(origin) = request.headers().get(hyper::header::ORIGIN) {
            let origin = origin.to_str().map(normalize_origin).unwrap_or_default();
            if !self.origins.contains(&origin) {
                tracing::info!("mcp over http: {peer}: origin {origin:?} refused");
                return refusal(
                    StatusCode::FORBIDDEN,
                    &format!("the origin {origin:?} may not call this server"),
                );
            }
        }
        let grant = match &self.access {
            Access::Open => Grant {
                token: String::new(),
                reach: Reach::All,
            },
            Access::Tokens(book) => match bearer(&request).and_then(|token| book.check(token)) {
                Some(grant) => grant,
                None => {
                    let why = if bearer(&request).is_some() {
                        "this token is not valid here (unknown or revoked)"
                    } else {
                        "a bearer token is required (Authorization: Bearer <token>)"
                    };
                    tracing::info!("mcp over http: {peer}: {why}");
                    let mut response = refusal(StatusCode::UNAUTHORIZED, why);
                    response.headers_mut().insert(
                        hyper::header::WWW_AUTHENTICATE,
                        hyper::header::HeaderValue::from_static("Bearer realm=\"mnemofs\""),
                    );
                    return response;
                }
            },
        };
        request.extensions_mut().insert(grant);
        if request.method() != hyper::Method::POST {
            return self.service.handle(request).await;
        }
        // A message that is not JSON-RPC is answered as JSON-RPC answers
        // it, before the transport sees it.
        let (parts, body) = request.into_parts();
        let bytes = match http_body_util::Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the request's body is over {} MiB", MAX_BODY >> 20),
                );
            }
            Err(e) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read the request's body: {e}"),
                );
            }
        };
        if let Some(response) = not_json_rpc(&bytes) {
            return response;
        }
        self.service
            .handle(HttpRequest::from_parts(parts, Full::new(bytes)))
            .await
    }
}

/// JSON-RPC's error answer, with HTTP status 400, to a body that is not a
/// JSON-RPC message or calls a tool with arguments that are not an
/// object (see [`mcp::screen`](super::mcp::screen)). `None` for anything
/// else, which the transport answers.
fn not_json_rpc(body: &[u8]) -> Option<HttpResponse<Body>> {
    let error = super::mcp::screen(body, "the body")?;
    let mut response = HttpResponse::new(Full::new(Bytes::from(error.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Some(response)
}

/// The token of `Authorization: Bearer <token>`.
fn bearer(request: &HttpRequest<Incoming>) -> Option<&str> {
    let value = request
        .headers()
        .get(hyper::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// An origin as compared: lowercase, without a trailing slash.
fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// A refusal: its status, and one sentence as JSON. It closes the
/// connection, and says so: the request's body is never read, and hyper
/// does not keep a connection whose request was not read to its end, so a
/// client that pooled it would send its next request into a closing
/// socket ("server disconnected without sending a response").
fn refusal(status: StatusCode, why: &str) -> HttpResponse<Body> {
    let body = serde_json::json!({ "error": why }).to_string();
    let mut response = HttpResponse::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_without_case_or_a_trailing_slash() {
        assert_eq!(
            normalize_origin(" HTTPS://App.Example.com:443/ "),
            "https://app.example.com:443"
        );
    }
}
