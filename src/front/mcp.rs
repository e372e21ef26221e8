//! `mnemofs mcp`: the store as a Model Context Protocol server on stdin
//! and stdout (rmcp), for agents that speak MCP rather than mount.
//!
//! Each tool is a translation: its arguments become one or a few
//! [`Request`]s (a `ref` is first resolved with [`Request::Resolve`], so
//! an id, a path, a title or an alias all work and an ambiguous one is
//! refused with its candidates), and the answer comes back as
//! `structuredContent` plus a short text for models that read only text.
//! A failure, bad input included, is a tool result with `isError` and one
//! sentence; the server never exits because of what a call sent. The
//! `memory` tool is Anthropic's `memory_20250818` and answers exactly as
//! `mnemofs tool` does (the same translation, [`tool::answer`]).
//!
//! The runner may open the store lazily: `initialize` and the listings
//! never call it, so a client is answered at once even when the index
//! still has to be built. Calls run on tokio's blocking pool, one runner
//! shared by all. The protocol version is rmcp's negotiation: the client's
//! own when rmcp knows it (2025-06-18 and 2025-11-25 among them), else the
//! newest rmcp has. stdout carries only the protocol; logs go to stderr.

use std::io;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, JsonObject, ListPromptsResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage, Role, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use super::tool;
use crate::ops::{self, MemoryFilter, NewMemory, Request, Response};

/// What runs the operations: a session's `call`.
pub type Runner = dyn Fn(Request) -> ops::Result<Response> + Send + Sync;

/// The one prompt.
const GUIDE_PROMPT: &str = "memory_guide";

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
        };
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(io::Error::other)?;
        running.waiting().await.map_err(io::Error::other)?;
        Ok(())
    })
}

/// The MCP server over a runner.
struct MemoryServer {
    call: Arc<Runner>,
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("mnemofs", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "An agent's long-term memory: markdown files with YAML frontmatter. \
             `search` finds memories, `read` shows one, `write` adds one, `edit` changes one; \
             a `ref` is an id, a path, a title or an alias. \
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
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if !TOOLS.iter().any(|t| t.name == name) {
            return Err(McpError::invalid_params(
                format!("there is no tool named {name:?}"),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let call = Arc::clone(&self.call);
        let result = tokio::task::spawn_blocking(move || run(&*call, &name, &args))
            .await
            .map_err(|e| McpError::internal_error(format!("the tool call failed: {e}"), None))?;
        Ok(result.into())
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
         `delete` and `link` change the tree, `backlinks`, `recent` and `list` are \
         the `backlinks/`, `recent/` and `by-*/` folders, `brief` is \
         `.mnemofs/brief.md`, `status` is `.mnemofs/status.json`, `dream` runs the \
         organizer now. `memory` is Anthropic's memory tool, with `/memories` as \
         the store root.\n",
        crate::views::AGENT_GUIDE
    )
}

/// A tool: its name, what it does, its input schema.
struct ToolSpec {
    name: &'static str,
    description: &'static str,
    schema: fn() -> JsonObject,
}

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "memory",
        description: "Anthropic's memory tool (memory_20250818) on this store; /memories is the store root. \
                      Commands: view, create, str_replace, insert, delete, rename.",
        schema: memory_schema,
    },
    ToolSpec {
        name: "search",
        description: "Full-text search over memories, best first. Query language: words, \"phrases\", \
                      tag:x, category:x, type:x, status:x, scope:x, created:>2026-01-01.",
        schema: || {
            object(
                json!({"query": string("The query."), "limit": integer("Most results (default 20).")}),
                &["query"],
            )
        },
    },
    ToolSpec {
        name: "read",
        description: "Reads one memory: its frontmatter and its body.",
        schema: || object(json!({"ref": reference()}), &["ref"]),
    },
    ToolSpec {
        name: "write",
        description: "Writes a new memory with frontmatter. Without a path it goes to <category>/<slug>.md, \
                      or inbox/ without a category.",
        schema: || {
            object(
                json!({
                    "content": string("The markdown body."),
                    "path": string("Where it goes, relative to the store (optional)."),
                    "title": string("title: (default: its first words)."),
                    "category": string("category: soul, character, people, project, date, knowledge, feedback, preferences, decisions, lessons, habits, skills, inbox or reminders."),
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "tags:"},
                    "type": string("type: memory, session, decision, task, ..."),
                    "scope": string("scope: global or agent:NAME."),
                    "source": string("source: who wrote it."),
                }),
                &["content"],
            )
        },
    },
    ToolSpec {
        name: "edit",
        description: "Edits a memory: replaces old_str (which must occur exactly once) by new_str, \
                      or inserts insert_text after line insert_line of the body (0: at the top).",
        schema: || {
            object(
                json!({
                    "ref": reference(),
                    "old_str": string("The text to replace."),
                    "new_str": string("What replaces it."),
                    "insert_line": integer("The line of the body (the content `read` shows) after which to insert; 0: at the top, just below the frontmatter."),
                    "insert_text": string("The text to insert."),
                }),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "move",
        description: "Moves or renames a memory; never replaces an existing file.",
        schema: || {
            object(
                json!({"ref": reference(), "to": string("The new path, relative to the store.")}),
                &["ref", "to"],
            )
        },
    },
    ToolSpec {
        name: "delete",
        description: "Deletes a memory (a daemon keeps its previous content for `mnemofs restore`).",
        schema: || object(json!({"ref": reference()}), &["ref"]),
    },
    ToolSpec {
        name: "link",
        description: "Records in memory `from`'s links: that it links to memory `to` (by id).",
        schema: || {
            object(
                json!({"from": reference(), "to": reference()}),
                &["from", "to"],
            )
        },
    },
    ToolSpec {
        name: "dream",
        description: "Runs the organizer now: 1 sorts the inbox and archives what expired; \
                      2 also merges duplicates and resolves links; 3 also extracts reminders.",
        schema: || {
            object(
                json!({"level": {"type": "integer", "minimum": 1, "maximum": 3, "description": "1, 2 or 3 (default 1)."}}),
                &[],
            )
        },
    },
    ToolSpec {
        name: "status",
        description: "Who serves the store and how its index and background tasks are doing.",
        schema: || object(json!({}), &[]),
    },
    ToolSpec {
        name: "brief",
        description: "The session brief: active tasks, open decisions, where the last sessions left off, \
                      reminders due soon, recent activity.",
        schema: || {
            object(
                json!({"cwd": string("The session's working directory (optional).")}),
                &[],
            )
        },
    },
    ToolSpec {
        name: "backlinks",
        description: "The memories that link to a memory.",
        schema: || {
            object(
                json!({"ref": reference(), "limit": integer("Most results (default 50).")}),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "recent",
        description: "The most recently changed memories, newest first.",
        schema: || object(json!({"limit": integer("Most results (default 20).")}), &[]),
    },
    ToolSpec {
        name: "list",
        description: "Lists memories by path, filtered by folder, category, tag and type (all given must match).",
        schema: || {
            object(
                json!({
                    "path": string("Only memories in this folder."),
                    "category": string("Only this category."),
                    "tag": string("Only this tag."),
                    "type": string("Only this type."),
                    "limit": integer("Most results (default 50)."),
                }),
                &[],
            )
        },
    },
];

fn tools() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|t| Tool::new(t.name, t.description, Arc::new((t.schema)())))
        .collect()
}

fn object(properties: Value, required: &[&str]) -> JsonObject {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), json!(required));
    schema
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn integer(description: &str) -> Value {
    json!({"type": "integer", "description": description})
}

fn reference() -> Value {
    string("The memory: its id, its path relative to the store, its title or an alias.")
}

/// `memory_20250818`'s input, as Anthropic's SDK declares it.
fn memory_schema() -> JsonObject {
    object(
        json!({
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"]},
            "path": string("A path under /memories."),
            "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
            "file_text": string("create: the file's content."),
            "old_str": string("str_replace: the text to replace."),
            "new_str": string("str_replace: what replaces it."),
            "insert_line": integer("insert: the line after which to insert."),
            "insert_text": string("insert: the text."),
            "old_path": string("rename: where it is."),
            "new_path": string("rename: where it goes."),
        }),
        &["command"],
    )
}

/// A tool's answer: the structured result and its short text, or why it
/// failed, in one sentence.
type Outcome = Result<(Value, String), String>;

/// Runs one tool call; every failure is an `isError` result.
fn run(call: &Runner, name: &str, args: &JsonObject) -> CallToolResult {
    let outcome = match name {
        "memory" => {
            let answer = tool::answer(Value::Object(args.clone()), call);
            let text = vec![ContentBlock::text(answer.content.clone())];
            let mut result = if answer.is_error {
                CallToolResult::error(text)
            } else {
                CallToolResult::success(text)
            };
            result.structured_content =
                Some(json!({"content": answer.content, "is_error": answer.is_error}));
            return result;
        }
        _ => Tools { call, args }.run(name),
    };
    match outcome {
        Ok((structured, text)) => {
            let mut result = CallToolResult::structured(structured);
            result.content = vec![ContentBlock::text(text)];
            result
        }
        Err(sentence) => CallToolResult::error(vec![ContentBlock::text(sentence)]),
    }
}

/// The tools other than `memory`, over one call's arguments.
struct Tools<'a> {
    call: &'a Runner,
    args: &'a JsonObject,
}

impl Tools<'_> {
    fn run(&self, name: &str) -> Outcome {
        match name {
            "search" => self.search(),
            "read" => self.read(),
            "write" => self.write(),
            "edit" => self.edit(),
            "move" => self.move_to(),
            "delete" => self.delete(),
            "link" => self.link(),
            "dream" => self.dream(),
            "status" => self.status(),
            "brief" => self.brief(),
            "backlinks" => {
                let reference = self.string("ref")?;
                let limit = self.limit(50)?;
                let request = Request::Backlinks {
                    reference: reference.clone(),
                    limit,
                };
                let answer = self.ask_about(&reference, request)?;
                self.memories(answer, "no memory links to it")
            }
            "recent" => {
                let limit = self.limit(20)?;
                let answer = self.ask(Request::Recent { limit })?;
                self.memories(answer, "no memories yet")
            }
            "list" => {
                let filter = MemoryFilter {
                    path: self.optional_string("path")?,
                    category: self.optional_string("category")?,
                    tag: self.optional_string("tag")?,
                    kind: self.optional_string("type")?,
                    limit: self.limit(50)?,
                };
                let answer = self.ask(Request::Memories(filter))?;
                self.memories(answer, "no memory matches")
            }
            _ => Err(format!("there is no tool named {name:?}")),
        }
    }

    fn search(&self) -> Outcome {
        let query = self.string("query")?;
        let limit = self.limit(20)?;
        let Response::Hits { hits, warnings } = self.ask(Request::Search { query, limit })? else {
            return Err(unexpected());
        };
        let notes: String = warnings.iter().map(|w| format!("note: {w}\n")).collect();
        let text = notes
            + &if hits.is_empty() {
                "no results".to_string()
            } else {
                hits.iter()
                    .enumerate()
                    .map(|(i, h)| {
                        format!(
                            "{}. {} ({}, score {:.2})\n   {}\n",
                            i + 1,
                            h.title,
                            h.path,
                            h.score,
                            h.snippet
                        )
                    })
                    .collect()
            };
        Ok((json!({"results": hits, "warnings": warnings}), text))
    }

    fn read(&self) -> Outcome {
        let reference = self.string("ref")?;
        let request = Request::ReadMemory {
            reference: reference.clone(),
        };
        let Response::MemoryText { memory } = self.ask_about(&reference, request)? else {
            return Err(unexpected());
        };
        let text = format!("{}\n\n{}", memory.path, memory.content);
        let value = serde_json::to_value(&memory).map_err(|e| e.to_string())?;
        Ok((value, text))
    }

    fn write(&self) -> Outcome {
        let memory = NewMemory {
            content: self.string("content")?,
            path: self.optional_string("path")?,
            title: self.optional_string("title")?,
            category: self.optional_string("category")?,
            tags: self.strings("tags")?,
            scope: self.optional_string("scope")?,
            source: self.optional_string("source")?,
            kind: self.optional_string("type")?,
        };
        let Response::Memory { path, id } = self.ask(Request::WriteMemory(memory))? else {
            return Err(unexpected());
        };
        Ok(written("wrote", path, id))
    }

    fn edit(&self) -> Outcome {
        let (path, id) = self.resolve("ref")?;
        let replace = (self.args.get("old_str"), self.args.get("new_str"));
        let insert = (self.args.get("insert_line"), self.args.get("insert_text"));
        let request = match (replace, insert) {
            ((Some(_), Some(_)), (None, None)) => Request::Replace {
                path: path.clone(),
                old: self.string("old_str")?,
                new: self.string("new_str")?,
                counting: ops::Counting::Overlapping,
            },
            ((None, None), (Some(_), Some(_))) => Request::InsertInBody {
                path: path.clone(),
                line: self.integer("insert_line")?,
                text: self.string("insert_text")?,
            },
            _ => {
                return Err(
                    "give either old_str and new_str, or insert_line and insert_text".into(),
                );
            }
        };
        self.ask(request)?;
        Ok(written("edited", path, id))
    }

    fn move_to(&self) -> Outcome {
        let (from, id) = self.resolve("ref")?;
        let to = self.string("to")?;
        self.ask(Request::Rename {
            from: from.clone(),
            to: to.clone(),
        })?;
        Ok((
            json!({"id": id, "path": to, "from": from}),
            format!("moved {from} to {to}"),
        ))
    }

    fn delete(&self) -> Outcome {
        let (path, id) = self.resolve("ref")?;
        self.ask(Request::Delete { path: path.clone() })?;
        Ok((
            json!({"id": id, "path": path, "deleted": true}),
            format!("deleted {path}"),
        ))
    }

    fn link(&self) -> Outcome {
        let (from, _) = self.resolve("from")?;
        let (to, to_id) = self.resolve("to")?;
        self.ask(Request::Link {
            from: from.clone(),
            to: to.clone(),
        })?;
        Ok((
            json!({"from": from, "to": to, "to_id": to_id}),
            format!("{from} now links to {to}"),
        ))
    }

    fn dream(&self) -> Outcome {
        let level = match self.args.get("level") {
            None | Some(Value::Null) => 1,
            Some(_) => u8::try_from(self.integer("level")?)
                .map_err(|_| "dream level must be 1, 2 or 3".to_string())?,
        };
        let Response::Report { report } = self.ask(Request::Dream { level })? else {
            return Err(unexpected());
        };
        let value = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        let text = format!(
            "dream level {}: {} organized, {} expired, {} decayed, {} merged, {} links resolved, {} reminders",
            report.level,
            report.organized,
            report.expired,
            report.decayed,
            report.merged,
            report.links_resolved,
            report.reminders
        );
        Ok((value, text))
    }

    fn status(&self) -> Outcome {
        let Response::Status { status } = self.ask(Request::Status)? else {
            return Err(unexpected());
        };
        let value = serde_json::to_value(&status).map_err(|e| e.to_string())?;
        let text = format!(
            "served by {} ({}); {} documents, {} changes pending{}",
            status.served_by,
            status.writer,
            status.documents,
            status.pending_changes,
            if status.reconciling {
                ", reconciling"
            } else {
                ""
            }
        );
        Ok((value, text))
    }

    fn brief(&self) -> Outcome {
        let cwd = self.optional_string("cwd")?;
        let Response::Brief { brief } = self.ask(Request::Brief { cwd })? else {
            return Err(unexpected());
        };
        let text = brief.to_text();
        Ok((json!({"text": text, "brief": brief}), text))
    }

    fn memories(&self, answer: Response, empty: &str) -> Outcome {
        let Response::Memories { memories } = answer else {
            return Err(unexpected());
        };
        let text = if memories.is_empty() {
            empty.to_string()
        } else {
            memories
                .iter()
                .map(|m| format!("{} ({})\n", m.title, m.path))
                .collect()
        };
        Ok((json!({"memories": memories}), text))
    }

    /// The path and id of the memory the argument `key` names.
    fn resolve(&self, key: &str) -> Result<(String, Option<String>), String> {
        let reference = self.string(key)?;
        let request = Request::Resolve {
            reference: reference.clone(),
        };
        let Response::Memory { path, id } = self.ask_about(&reference, request)? else {
            return Err(unexpected());
        };
        // A path may name a folder; every tool that takes a ref means one memory.
        match self.ask(Request::Stat { path: path.clone() })? {
            Response::Entry { entry } if entry.kind == ops::EntryKind::Folder => Err(format!(
                "{path} is a folder, not a memory; name one memory by id, path, title or alias"
            )),
            _ => Ok((path, id)),
        }
    }

    /// Runs a request about the memory `reference` names; a reference
    /// that names nothing is said so.
    fn ask_about(&self, reference: &str, request: Request) -> Result<Response, String> {
        (self.call)(request).map_err(|e| {
            if e.errno() == libc::ENOENT {
                format!("no memory is named {reference:?} (by id, path, title or alias)")
            } else {
                sentence(&e)
            }
        })
    }

    fn ask(&self, request: Request) -> Result<Response, String> {
        (self.call)(request).map_err(|e| sentence(&e))
    }

    fn string(&self, key: &str) -> Result<String, String> {
        self.optional_string(key)?
            .ok_or_else(|| format!("missing argument `{key}`"))
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("`{key}` must be a string, not {}", kind(other))),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(format!("`{key}` must hold strings, not {}", kind(other))),
                })
                .collect(),
            Some(other) => Err(format!(
                "`{key}` must be a list of strings, not {}",
                kind(other)
            )),
        }
    }

    fn integer(&self, key: &str) -> Result<i64, String> {
        match self.args.get(key) {
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| format!("`{key}` must be a whole number")),
            None | Some(Value::Null) => Err(format!("missing argument `{key}`")),
            Some(other) => Err(format!("`{key}` must be an integer, not {}", kind(other))),
        }
    }

    fn limit(&self, default: usize) -> Result<usize, String> {
        match self.args.get("limit") {
            None | Some(Value::Null) => Ok(default),
            Some(_) => usize::try_from(self.integer("limit")?)
                .map_err(|_| "`limit` must not be negative".to_string()),
        }
    }
}

fn written(verb: &str, path: String, id: Option<String>) -> (Value, String) {
    let text = format!("{verb} {path}");
    (json!({"id": id, "path": path}), text)
}

/// An error as one sentence.
fn sentence(e: &ops::Error) -> String {
    e.to_string()
}

fn unexpected() -> String {
    "the store gave an unexpected answer".into()
}

/// A JSON value's type, as a schema names it.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
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
