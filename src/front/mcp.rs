//! `mnemofs mcp`: the store as a Model Context Protocol server on stdin
//! and stdout (rmcp), for agents that speak MCP rather than mount.
//!
//! The tools are the table in [`tools`](super::tools), which the socket
//! speaks too: here each answer becomes `structuredContent` plus a short
//! text, and each failure, bad input included, a tool result with
//! `isError` and one sentence; the server never exits because of what a
//! call sent. A line that is no JSON-RPC message (not JSON, a batch, an
//! object without a method) is answered with JSON-RPC's error, one line,
//! before rmcp sees it (rmcp would drop it without a word). Memories are
//! also resources, by id (`mnemofs://memory/<id>`, the whole file as
//! markdown), and the `memory_guide` prompt explains the store.
//!
//! The runner may open the store lazily: `initialize` and the listings of
//! tools and prompts never call it, so a client is answered at once even
//! when the index still has to be built. Calls run on tokio's blocking
//! pool, one runner shared by all. When stdin and stdout are pipes (as an
//! MCP client starts a server), they are read and written on tokio's
//! reactor rather than through a blocking thread each (rmcp reopens them
//! on descriptions of their own, so the non-blocking mode stays there).
//! The protocol version is rmcp's
//! negotiation: the client's own when rmcp knows it (2025-06-18 and
//! 2025-11-25 among them), else the newest rmcp has. stdout carries only
//! the protocol; logs go to stderr.

use std::io;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    Prompt, PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::Semaphore;

use super::input::Line;
use super::tokens::Grant;
pub use super::tools::Runner;
use super::tools::{self, TOOLS};
use crate::ops::{self, MemoryFilter, Request, Response};

/// Where a memory is as a resource: this, then its id.
const MEMORY_URI: &str = "mnemofs://memory/";

/// Memories in one page of `resources/list`.
const RESOURCE_PAGE: usize = 200;

/// The one prompt.
const GUIDE_PROMPT: &str = "memory_guide";

/// Calls that run on the store at once; the others wait their turn
/// without holding a thread.
pub(super) const MAX_CALLS: usize = 16;

/// Serves MCP on stdin and stdout until the client closes stdin.
pub fn serve(
    call: impl Fn(Request) -> ops::Result<Response> + Send + Sync + 'static,
) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let server = MemoryServer {
            call: Arc::new(call),
            calls: Arc::new(Semaphore::new(MAX_CALLS)),
            over_http: false,
        };
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let (read, write, answering) = screened(stdin, stdout);
        let running = server
            .serve(
                rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
                    .with_max_line_length(super::input::max_line()),
            )
            .await
            .map_err(io::Error::other)?;
        running.waiting().await.map_err(io::Error::other)?;
        // What the server wrote last reaches stdout before the end.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), answering).await;
        Ok(())
    })
}

/// The server's ends of a pipe between it and `stdin` and `stdout`: each
/// line of `stdin` that [`screen`] finds to be no JSON-RPC message (or
/// longer than a request may be) is answered on `stdout` with JSON-RPC's
/// error, one line, and the server never sees it; the server's lines are
/// written as they come. The task ends once the server's side is closed
/// and every line is written.
fn screened(
    stdin: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    mut stdout: impl tokio::io::AsyncWrite + Send + Unpin + 'static,
) -> (
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<()>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    const PIPE: usize = 64 * 1024;
    let (server_read, mut to_server) = tokio::io::duplex(PIPE);
    let (server_write, from_server) = tokio::io::duplex(PIPE);
    let (errors, mut refused) = tokio::sync::mpsc::unbounded_channel::<serde_json::Value>();
    tokio::spawn(async move {
        let mut input = BufReader::new(stdin);
        let max = super::input::max_line();
        let mut line = Vec::new();
        for number in 1usize.. {
            let error = match read_line(&mut input, &mut line, max).await {
                Ok(Line::End) | Err(_) => break,
                Ok(Line::TooLong) => Some(error_answer(
                    serde_json::Value::Null,
                    -32700,
                    format!(
                        "line {number} is longer than {}",
                        super::input::size(max as u64)
                    ),
                )),
                // A blank line is no message, and asks for no answer.
                Ok(Line::Read) if line.trim_ascii().is_empty() => continue,
                Ok(Line::Read) => screen(&line, &format!("line {number}")),
            };
            match error {
                Some(error) => {
                    if errors.send(error).is_err() {
                        break;
                    }
                }
                None => {
                    if line.last() != Some(&b'\n') {
                        line.push(b'\n');
                    }
                    if to_server.write_all(&line).await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping the pipe tells the server that input ended.
    });
    let answering = tokio::spawn(async move {
        let mut answers = BufReader::new(from_server);
        let mut line = Vec::new();
        let (mut server_open, mut errors_open) = (true, true);
        while server_open || errors_open {
            let written = tokio::select! {
                read = answers.read_until(b'\n', &mut line), if server_open => match read {
                    Ok(0) | Err(_) => {
                        server_open = false;
                        Ok(())
                    }
                    Ok(_) => {
                        let written = stdout.write_all(&line).await;
                        line.clear();
                        written
                    }
                },
                error = refused.recv(), if errors_open => match error {
                    Some(error) => stdout.write_all(format!("{error}\n").as_bytes()).await,
                    None => {
                        errors_open = false;
                        Ok(())
                    }
                },
            };
            if written.and(stdout.flush().await).is_err() {
                break;
            }
        }
    });
    (server_read, server_write, answering)
}

/// [`input::read_line`](super::input::read_line) on an async reader: the
/// next line into `line` (cleared first), at most `max` bytes kept; a
/// longer one is read through and dropped.
async fn read_line(
    input: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    use tokio::io::AsyncBufReadExt;
    line.clear();
    let (mut any, mut over) = (false, false);
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(super::input::read(line, any, over));
        }
        any = true;
        let (taken, ended) = super::input::take_part(buffer, line, max, &mut over);
        input.consume(taken);
        if ended {
            return Ok(super::input::read(line, true, over));
        }
    }
}

/// JSON-RPC's error answer.
fn error_answer(id: serde_json::Value, code: i32, message: String) -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
}

/// JSON-RPC's error answer to `message` (named `what` in it: "the body",
/// "line 3") when it is not a JSON-RPC message: not UTF-8 or not JSON
/// (-32700), JSON that is not a JSON-RPC 2.0 message, or a batch
/// (-32600), or a `tools/call` whose `arguments` are not an object
/// (-32602), which rmcp would answer as an unknown method. `None` for a
/// message the server should have.
pub(super) fn screen(message: &[u8], what: &str) -> Option<serde_json::Value> {
    use serde_json::Value;
    let message: Value = match serde_json::from_slice(message) {
        Ok(message) => message,
        Err(e) => {
            return Some(error_answer(
                Value::Null,
                -32700,
                format!("{what} is not JSON: {e}"),
            ));
        }
    };
    if message.is_array() {
        return Some(error_answer(
            Value::Null,
            -32600,
            "a batch is not answered: send one JSON-RPC message at a time".into(),
        ));
    }
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .unwrap_or_default();
    let is_message = message.get("jsonrpc").and_then(|v| v.as_str()) == Some("2.0")
        && (message.get("method").is_some_and(|m| m.is_string())
            || (message.get("id").is_some()
                && (message.get("result").is_some() || message.get("error").is_some())));
    if !is_message {
        return Some(error_answer(
            id,
            -32600,
            format!(
                "{what} is not a JSON-RPC 2.0 message: an object with \"jsonrpc\": \"2.0\" and a \"method\" name"
            ),
        ));
    }
    let arguments = message.get("params").and_then(|p| p.get("arguments"));
    (message.get("method").and_then(|m| m.as_str()) == Some("tools/call")
        && arguments.is_some_and(|a| !a.is_object() && !a.is_null()))
    .then(|| {
        error_answer(
            id,
            -32602,
            "a tool's arguments are an object of named values".into(),
        )
    })
}

/// The MCP server over a runner.
pub(super) struct MemoryServer {
    call: Arc<Runner>,
    /// Leave to run a call on the store.
    calls: Arc<Semaphore>,
    /// Served over HTTP: each call runs in its token's scope.
    over_http: bool,
}

impl MemoryServer {
    /// The server for one HTTP request, whose token's grant the request
    /// carries (see [`http`](super::http)).
    pub(super) fn over_http(call: Arc<Runner>, calls: Arc<Semaphore>) -> MemoryServer {
        MemoryServer {
            call,
            calls,
            over_http: true,
        }
    }

    /// The runner for a request: over HTTP, in the scope of the token it
    /// came with, and a request without one is refused (the HTTP layer
    /// lets none through; this holds if that ever changes).
    fn runner(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Runner>, McpError> {
        if !self.over_http {
            return Ok(Arc::clone(&self.call));
        }
        let grant = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Grant>())
            .ok_or_else(|| McpError::invalid_request("this request carries no token", None))?;
        Ok(match grant.reach.scope() {
            None => Arc::clone(&self.call),
            Some(scope) => {
                let call = Arc::clone(&self.call);
                Arc::new(super::in_scope(Some(scope.clone()), move |request| {
                    call(request)
                }))
            }
        })
    }

    /// Runs `work` with the runner on tokio's blocking pool, once a call
    /// may run.
    async fn run_blocking<T: Send + 'static>(
        &self,
        context: &RequestContext<RoleServer>,
        what: &str,
        work: impl FnOnce(&Runner) -> T + Send + 'static,
    ) -> Result<T, McpError> {
        let call = self.runner(context)?;
        let _turn = self
            .calls
            .acquire()
            .await
            .map_err(|_| McpError::internal_error("the server is stopping", None))?;
        tokio::task::spawn_blocking(move || work(&*call))
            .await
            .map_err(|e| McpError::internal_error(format!("{what} failed: {e}"), None))
    }
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("mnemofs", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "An agent's long-term memory: markdown files with YAML frontmatter. \
             `search` finds memories (ask in plain words or as a question), `read` shows one, `write` adds one, `edit` changes one, \
             `context` shows what links to and from one; a `ref` is an id, a path, a title or an alias. \
             Give `read`'s version back as `expected_version` to write only if nobody changed the memory since. \
             Memories are also resources, mnemofs://memory/<id>. \
             The `memory_guide` prompt explains the store and the query language.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if tools::find(&name).is_none() {
            return Err(McpError::invalid_params(
                format!("there is no tool named {name:?}"),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let result = self
            .run_blocking(&context, "the tool call", move |call| {
                run(call, &name, &args)
            })
            .await?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        let offset = match cursor.as_deref() {
            None => 0,
            Some(c) => c.parse::<usize>().map_err(|_| {
                McpError::invalid_params(format!("{c:?} is not a cursor of this server"), None)
            })?,
        };
        let filter = MemoryFilter {
            limit: offset + RESOURCE_PAGE + 1,
            ..MemoryFilter::default()
        };
        let answer = self
            .run_blocking(&context, "listing", move |call| {
                call(Request::Memories(filter))
            })
            .await?;
        let Ok(Response::Memories { memories }) = answer
            .map_err(|e| McpError::internal_error(format!("cannot list the memories: {e}"), None))
        else {
            return Err(McpError::internal_error(
                "the store gave an unexpected answer",
                None,
            ));
        };
        let more = memories.len() > offset + RESOURCE_PAGE;
        let resources = memories
            .into_iter()
            .skip(offset)
            .take(RESOURCE_PAGE)
            .filter_map(|m| {
                let id = m.id?;
                Some(
                    Resource::new(format!("{MEMORY_URI}{id}"), m.title)
                        .with_description(m.path)
                        .with_mime_type("text/markdown"),
                )
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        if more {
            result.next_cursor = Some((offset + RESOURCE_PAGE).to_string());
        }
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(format!("{MEMORY_URI}{{id}}"), "memory")
                .with_description(
                    "A memory by id (a path, title or alias works too): the whole file.",
                )
                .with_mime_type("text/markdown"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let Some(reference) = uri.strip_prefix(MEMORY_URI).filter(|r| !r.is_empty()) else {
            return Err(McpError::invalid_params(
                format!("{uri:?} is not a memory here (they are {MEMORY_URI}<id>)"),
                None,
            ));
        };
        let reference = reference.to_string();
        let text = self
            .run_blocking(&context, "the read", move |call| {
                read_whole(call, &reference)
            })
            .await?
            .map_err(|e| match e.errno() {
                libc::ENOENT => McpError::resource_not_found(format!("no memory at {uri}"), None),
                _ => McpError::internal_error(e.to_string(), None),
            })?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/markdown"),
        ])
        .into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            GUIDE_PROMPT,
            Some(
                "How this memory store works: layout, frontmatter, links, the query language and the tools.",
            ),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != GUIDE_PROMPT {
            return Err(McpError::invalid_params(
                format!("there is no prompt named {:?}", request.name),
                None,
            ));
        }
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, guide())])
                .with_description("How to use the mnemofs memory store")
                .into(),
        )
    }
}

/// The guide the mount shows as `.mnemofs/GUIDE.md`, and how its folders
/// map to the tools here.
fn guide() -> String {
    format!(
        "{}\n## Over MCP\n\n\
         The same store through tools: `search` is `search/<query>/` (same query \
         language), `read` reads a memory by id, path, title or alias, `write` adds \
         one with frontmatter (no category: it lands in `inbox/` and the organizer \
         files it), `edit` replaces a unique text or inserts after a line, `move`, \
         `delete`, `link`, `unlink` and `tag` change the tree, `context` is a memory \
         with what links to and from it (`depth` hops out), `backlinks`, `recent` and `list` are \
         the `backlinks/`, `recent/` and `by-*/` folders, `brief` is \
         `.mnemofs/brief.md`, `status` is `.mnemofs/status.json`, `dream` runs the \
         organizer now. `memory` is Anthropic's memory tool, with `/memories` as \
         the store root.\n\n\
         Every writing tool takes `expected_version` (the version `read` gave): if \
         the memory changed since, the call fails with a conflict and writes \
         nothing; read it again and retry. A session in a scope (`agent:NAME`) \
         sees global memories and its own, and what it writes gets its scope.\n",
        crate::views::AGENT_GUIDE
    )
}

fn tools() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|t| Tool::new(t.name, t.description, Arc::new(t.input_schema())))
        .collect()
}

/// The whole text of the memory `reference` names.
fn read_whole(call: &Runner, reference: &str) -> ops::Result<String> {
    let Response::Memory { path, .. } = call(Request::Resolve {
        reference: reference.into(),
    })?
    else {
        return Err(ops::Error::Unavailable(
            "the store gave an unexpected answer".into(),
        ));
    };
    match call(Request::Read { path })? {
        Response::Text { text } => Ok(text),
        _ => Err(ops::Error::Unavailable(
            "the store gave an unexpected answer".into(),
        )),
    }
}

/// Runs one tool call; every failure is an `isError` result.
fn run(call: &Runner, name: &str, args: &JsonObject) -> CallToolResult {
    match tools::call(call, name, args) {
        Ok(answer) if answer.is_error => {
            let mut result = CallToolResult::error(vec![ContentBlock::text(answer.text)]);
            result.structured_content = Some(answer.structured);
            result
        }
        Ok(answer) => {
            let mut result = CallToolResult::structured(answer.structured);
            result.content = vec![ContentBlock::text(answer.text)];
            result
        }
        Err(fail) => CallToolResult::error(vec![ContentBlock::text(fail.message)]),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn args(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    fn error_text(result: &CallToolResult) -> Option<String> {
        (result.is_error == Some(true)).then(|| {
            result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect()
        })
    }

    /// A runner that must not be reached.
    fn unreachable_runner(request: Request) -> ops::Result<Response> {
        Err(ops::Error::InvalidInput(format!("unexpected {request:?}")))
    }

    #[test]
    fn bad_arguments_are_refused_before_any_request() {
        let cases = [
            ("read", json!({}), "missing argument `ref`"),
            (
                "read",
                json!({"ref": 1}),
                "`ref` must be a string, not a number",
            ),
            (
                "search",
                json!({"query": "x", "limit": -1}),
                "`limit` must not be negative",
            ),
            (
                "write",
                json!({"content": "x", "tags": "a"}),
                "`tags` must be a list of strings, not a string",
            ),
        ];
        for (tool, input, said) in cases {
            let result = run(&unreachable_runner, tool, &args(input));
            assert_eq!(error_text(&result).as_deref(), Some(said), "{tool}");
        }
    }

    #[test]
    fn an_ambiguous_ref_lists_its_candidates_and_a_missing_one_is_named() {
        let runner = |request: Request| match request {
            Request::Resolve { reference } if reference == "Kiwi" => Err(ops::Error::Ambiguous {
                reference,
                candidates: vec!["a/kiwi.md".into(), "b/kiwi.md".into()],
            }),
            Request::Resolve { reference } => Err(ops::Error::NotFound { path: reference }),
            other => unreachable_runner(other),
        };
        let result = run(&runner, "delete", &args(json!({"ref": "Kiwi"})));
        assert_eq!(
            error_text(&result).as_deref(),
            Some("\"Kiwi\" names 2 memories: a/kiwi.md, b/kiwi.md")
        );
        let result = run(&runner, "edit", &args(json!({"ref": "Plum"})));
        assert_eq!(
            error_text(&result).as_deref(),
            Some("no memory is named \"Plum\" (by id, path, title or alias)")
        );
    }

    #[test]
    fn every_tool_has_an_object_schema() {
        for tool in tools() {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        }
        assert!(guide().starts_with(crate::views::AGENT_GUIDE));
    }
}
