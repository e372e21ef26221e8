//! The tools an agent calls: one table, spoken by two protocols (MCP in
//! [`mcp`](super::mcp), JSON-RPC on a Unix socket in the daemon).
//!
//! Each tool is a translation: its arguments become one or a few
//! [`Request`]s (a `ref` is first resolved with [`Request::Resolve`], so
//! an id, a path, a title or an alias all work and an ambiguous one is
//! refused with its candidates), and the answer comes back as a structured
//! value plus a short text for models that read only text. A failure is
//! one sentence with a JSON-RPC code: `-32602` for arguments that do not
//! fit the schema, the operations layer's own code otherwise. The `memory`
//! tool is Anthropic's `memory_20250818` and answers exactly as `mnemofs
//! tool` does (the same translation, [`tool::answer`]).
//!
//! Two arguments mean the same to every tool: `scope` runs the call in a
//! session of that scope (an agent sees global memories and its own; a
//! session already scoped cannot leave its scope), and `expected_version`
//! makes a writing tool fail with a conflict, writing nothing, if the
//! memory changed since `read` gave that version.
//!
//! memory-cli's tool names (`memory_write`, `memory_search`, ...) are
//! [`ALIASES`]: each rewrites its arguments into one of the tools here.

use serde_json::{Map, Value, json};

use super::tool;
use crate::ops::{self, MemoryFilter, NewMemory, Request, Response, rpc};

/// A tool's arguments: a JSON object.
pub type Args = Map<String, Value>;

/// What runs the operations: a session's `call`.
pub type Runner = dyn Fn(Request) -> ops::Result<Response> + Send + Sync;

/// A runner borrowed for one call.
type Call<'a> = dyn Fn(Request) -> ops::Result<Response> + 'a;

/// A tool: its name, what it does, its input schema.
#[derive(Debug)]
pub struct ToolSpec {
    /// The name a call uses.
    pub name: &'static str,
    /// What it does, for the model.
    pub description: &'static str,
    schema: fn() -> Args,
}

impl ToolSpec {
    /// Its arguments' JSON schema (an object).
    pub fn input_schema(&self) -> Args {
        (self.schema)()
    }
}

/// A tool's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The result as data (MCP's `structuredContent`).
    pub structured: Value,
    /// A short rendering for models that read only text.
    pub text: String,
    /// True for the `memory` tool's error answers, which are results
    /// (as its reference handler gives them), not failures.
    pub is_error: bool,
}

/// Why a tool call failed: a sentence and a JSON-RPC code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail {
    /// The JSON-RPC error code.
    pub code: i32,
    /// One sentence.
    pub message: String,
}

impl Fail {
    /// Arguments that do not fit the tool.
    pub fn invalid(message: impl Into<String>) -> Fail {
        Fail {
            code: rpc::INVALID_PARAMS,
            message: message.into(),
        }
    }

    fn internal(message: impl Into<String>) -> Fail {
        Fail {
            code: rpc::INTERNAL,
            message: message.into(),
        }
    }

    fn from_ops(e: &ops::Error) -> Fail {
        Fail {
            code: e.rpc_code(),
            message: e.to_string(),
        }
    }
}

/// How many filed and how many skipped notes a `dream` answer lists.
const LISTED: usize = 50;

/// The tools.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "memory",
        description: "Anthropic's memory tool (memory_20250818) on this store; /memories is the store root. \
                      Commands: view, create, str_replace, insert, delete, rename.",
        schema: memory_schema,
    },
    ToolSpec {
        name: "search",
        description: "Searches memories, best first. Ask in plain words or as a question \
                      (\"what does the user prefer for formatting?\"): every word is optional and ranks, \
                      common words are left out, other forms of a word match. A question that names a \
                      day, month or year (\"what did we decide last week?\", \"on 3 June 2023\") ranks \
                      the memories written then first; each result says the day it was written. \
                      Also \"exact phrases\", \
                      +required, -excluded, prefix*, and filters that restrict without ranking: \
                      tag:x, category:x, type:x, status:x, scope:x, created:>2026-01-01; or as \
                      arguments (category, tags, type, phase, source, from, to).",
        schema: search_filter_schema,
    },
    ToolSpec {
        name: "read",
        description: "Reads one memory: its frontmatter, its body and its version.",
        schema: || object(json!({"ref": reference(), "scope": scope()}), &["ref"]),
    },
    ToolSpec {
        name: "write",
        description: "Writes a new memory with frontmatter. Without a path it goes to <category>/<slug>.md, \
                      or inbox/ without a category, where the organizer files it; one nothing files is archived \
                      after its expires_at. Without a path, a memory already there with the same title, content \
                      and tags is returned instead of a copy. With a path and expected_version it replaces the \
                      memory there.",
        schema: || {
            object(
                json!({
                    "content": string("The markdown body."),
                    "path": string("Where it goes, relative to the store (optional)."),
                    "title": string("title: (default: its first words)."),
                    "category": string("category: soul, character, people, project, date, knowledge, feedback, preferences, decisions, lessons, habits, skills, inbox or reminders."),
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "tags:"},
                    "type": string("type: memory, session, decision, task, ..."),
                    "status": string("status: for a task (open, active, blocked, done) or a decision (open, proposed, accepted, rejected); the brief lists open ones."),
                    "scope": string("scope: global or agent:NAME (default: the session's)."),
                    "source": string("source: who wrote it."),
                    "expected_version": expected_version(),
                }),
                &["content"],
            )
        },
    },
    ToolSpec {
        name: "remember",
        description: "Keeps a text exactly as given (when the user asks you to remember something): \
                      a note in the project's remember folder, titled by the text's first line and \
                      tagged manual-capture. Never summarize or reword the text.",
        schema: || {
            object(
                json!({
                    "text": string("The text, verbatim."),
                    "folder": string("The folder, relative to the store (default: the project's rememberFolder, else remember)."),
                    "scope": scope(),
                }),
                &["text"],
            )
        },
    },
    ToolSpec {
        name: "edit",
        description: "Edits a memory's body (the content `read` shows): replaces old_str (which must occur \
                      exactly once there) by new_str, or inserts insert_text after line insert_line of the body \
                      (0: at the top).",
        schema: || {
            object(
                json!({
                    "ref": reference(),
                    "old_str": string("The text to replace."),
                    "new_str": string("What replaces it."),
                    "insert_line": integer("The line of the body (the content `read` shows) after which to insert; 0: at the top, just below the frontmatter."),
                    "insert_text": string("The text to insert."),
                    "set": {"type": "object", "description": "Frontmatter fields to set, instead of a text edit: {\"status\": \"accepted\"}. Each is replaced in place or added; nothing else changes.", "additionalProperties": {"type": ["string", "number", "boolean"]}},
                    "expected_version": expected_version(),
                }),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "move",
        description: "Moves or renames a memory; never replaces an existing file. The id is kept.",
        schema: || {
            object(
                json!({
                    "ref": reference(),
                    "to": string("The new path, relative to the store."),
                    "expected_version": expected_version(),
                }),
                &["ref", "to"],
            )
        },
    },
    ToolSpec {
        name: "delete",
        description: "Deletes a memory; its content is kept for a while (`restore` brings it back).",
        schema: || {
            object(
                json!({"ref": reference(), "expected_version": expected_version()}),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "link",
        description: "Records in memory `from`'s links: that it links to memory `to` (by id); \
                      with both, in `to`'s links: too.",
        schema: || {
            object(
                json!({
                    "from": reference(),
                    "to": reference(),
                    "both": {"type": "boolean", "description": "Record the link back in `to`'s links: too (default false)."},
                    "expected_version": expected_version(),
                }),
                &["from", "to"],
            )
        },
    },
    ToolSpec {
        name: "unlink",
        description: "Takes away the link recorded in links: between two memories, both ways \
                      (links written in the body stay).",
        schema: || {
            object(
                json!({"from": reference(), "to": reference(), "expected_version": expected_version()}),
                &["from", "to"],
            )
        },
    },
    ToolSpec {
        name: "tag",
        description: "Adds tags to a memory's tags:.",
        schema: || {
            object(
                json!({
                    "ref": reference(),
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "The tags to add."},
                    "expected_version": expected_version(),
                }),
                &["ref", "tags"],
            )
        },
    },
    ToolSpec {
        name: "context",
        description: "A memory with the memories linked to or from it, `depth` hops out: \
                      what to read around it.",
        schema: || {
            object(
                json!({
                    "ref": reference(),
                    "depth": {"type": "integer", "minimum": 1, "maximum": ops::MAX_CONTEXT_DEPTH, "description": "Hops out (default 1)."},
                    "limit": integer("Most related memories (default 20)."),
                    "scope": scope(),
                }),
                &["ref"],
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
                json!({"ref": reference(), "limit": integer("Most results (default 50)."), "scope": scope()}),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "recent",
        description: "The most recently changed memories, newest first.",
        schema: || {
            object(
                json!({
                    "limit": integer("Most results (default 20)."),
                    "since": string("Only those changed since: a date (2026-01-31), a timestamp, or a duration back from now (7d, 12h)."),
                    "type": string("Only this type."),
                    "scope": scope(),
                }),
                &[],
            )
        },
    },
    ToolSpec {
        name: "list",
        description: "Lists memories by path, filtered by folder, category, tag, type, phase and source (all given must match).",
        schema: || {
            object(
                json!({
                    "path": string("Only memories in this folder."),
                    "category": string("Only this category."),
                    "tag": string("Only this tag."),
                    "type": string("Only this type."),
                    "phase": string("Only this phase: inbox, organized or archived."),
                    "source": string("Only memories from this source."),
                    "limit": integer("Most results (default 50)."),
                    "scope": scope(),
                }),
                &[],
            )
        },
    },
    ToolSpec {
        name: "history",
        description: "Lists the earlier versions of a memory, newest first: what deletes, overwrites and \
                      truncations took away. A deleted memory is named by the path or id it had.",
        schema: || {
            object(
                json!({"ref": string("The memory: its id, path, title or alias; for a deleted memory, the path or id it had."), "scope": scope()}),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "restore",
        description: "Brings back an earlier version of a memory (the newest unless `version`): over its \
                      content if it exists, else at the path it had. What it replaces is kept in turn.",
        schema: || {
            object(
                json!({
                    "ref": string("The memory: its id, path, title or alias; for a deleted memory, the path or id it had."),
                    "version": integer("The version, as `history` numbers them (default: the newest)."),
                    "scope": scope(),
                }),
                &["ref"],
            )
        },
    },
    ToolSpec {
        name: "trash",
        description: "Lists the memories deleted and not back, newest first; `restore` brings one back.",
        schema: || {
            object(
                json!({"limit": integer("Most results (default 50)."), "scope": scope()}),
                &[],
            )
        },
    },
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// memory-cli's name for a tool, and how its arguments become ours.
#[derive(Debug)]
pub struct Alias {
    /// memory-cli's name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    schema: fn() -> Args,
    translate: fn(&Args) -> Result<(&'static str, Args), Fail>,
}

impl Alias {
    /// Its arguments' JSON schema (an object), as memory-cli names them.
    pub fn input_schema(&self) -> Args {
        (self.schema)()
    }
}

/// memory-cli's seven tools.
pub const ALIASES: &[Alias] = &[
    Alias {
        name: "memory_write",
        description: "Writes a new memory: into <category>/ with a category, else into the inbox (archived after its expires_at if nothing files it); tags, scope and source go into its frontmatter. Answers its id and path.",
        schema: || {
            object(
                json!({
                    "content": string("The body."),
                    "category": string("Its category."),
                    "tags": {"description": "A list, or a comma-separated string."},
                    "scope": string("global or agent:NAME."),
                    "source": string("Who wrote it."),
                }),
                &["content"],
            )
        },
        translate: |args| {
            let mut out = args.clone();
            if let Some(tags) = args.get("tags") {
                out.insert("tags".into(), Value::from(tag_list(tags)?));
            }
            Ok(("write", out))
        },
    },
    Alias {
        name: "memory_read",
        description: "Reads one memory by id (a path, title or alias works too): its frontmatter, body and version.",
        schema: || object(json!({"id": string("The memory's id.")}), &["id"]),
        translate: |args| Ok(("read", renamed(args, "id", "ref"))),
    },
    Alias {
        name: "memory_delete",
        description: "Deletes one memory by id (a path, title or alias works too); its content is kept for a while, so it can be restored.",
        schema: || object(json!({"id": string("The memory's id.")}), &["id"]),
        translate: |args| Ok(("delete", renamed(args, "id", "ref"))),
    },
    Alias {
        name: "memory_list",
        description: "Lists the memories matching every filter given (category, tags, type, phase, source, folder), by path.",
        schema: filter_schema,
        translate: |args| {
            let tags = tag_list(args.get("tags").unwrap_or(&Value::Null))?;
            if tags.len() > 1 {
                let mut out = keep(args, &["limit", "scope"]);
                out.insert("query".into(), with_filters("", args)?.into());
                return Ok(("search", out));
            }
            let mut out = args.clone();
            out.remove("tags");
            if let Some(tag) = tags.into_iter().next() {
                out.insert("tag".into(), tag.into());
            }
            Ok(("list", out))
        },
    },
    Alias {
        name: "memory_search",
        description: "Searches memories for a query in plain words or a question, best first (ranked full text: every word optional, common words left out, other forms of a word match), narrowed by tags, category, phase, source and creation dates.",
        schema: search_filter_schema,
        translate: search_alias,
    },
    Alias {
        name: "memory_smart_search",
        description: "memory_search under memory-cli's other name: every search here is ranked full-text search, with the same filters.",
        schema: search_filter_schema,
        translate: search_alias,
    },
    Alias {
        name: "memory_tag",
        description: "Adds tags to a memory by id (a path, title or alias works too).",
        schema: || {
            object(
                json!({"id": string("The memory's id."), "tags": {"description": "A list, or a comma-separated string."}}),
                &["id", "tags"],
            )
        },
        translate: |args| {
            let mut out = renamed(args, "id", "ref");
            let tags = tag_list(args.get("tags").unwrap_or(&Value::Null))?;
            out.insert("tags".into(), Value::from(tags));
            Ok(("tag", out))
        },
    },
];

/// The alias named `name`.
pub fn find_alias(name: &str) -> Option<&'static Alias> {
    ALIASES.iter().find(|a| a.name == name)
}

fn search_alias(args: &Args) -> Result<(&'static str, Args), Fail> {
    let query = match args.get("query") {
        Some(Value::String(q)) => q.clone(),
        None | Some(Value::Null) => return Err(Fail::invalid("missing argument `query`")),
        Some(other) => {
            return Err(Fail::invalid(format!(
                "`query` must be a string, not {}",
                kind(other)
            )));
        }
    };
    let mut out = keep(args, &["limit", "scope"]);
    out.insert("query".into(), with_filters(&query, args)?.into());
    Ok(("search", out))
}

/// `query` narrowed by memory-cli's filters, in the query language (the
/// operations' [`SearchFilter`](ops::SearchFilter), which the CLI's
/// `search` uses too).
fn with_filters(query: &str, args: &Args) -> Result<String, Fail> {
    let text = |key: &str| -> Result<Option<String>, Fail> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(other) => Err(Fail::invalid(format!(
                "`{key}` must be a string, not {}",
                kind(other)
            ))),
        }
    };
    let mut tags = tag_list(args.get("tags").unwrap_or(&Value::Null))?;
    tags.extend(text("tag")?);
    let filter = ops::SearchFilter {
        tags,
        phase: text("phase")?,
        category: text("category")?,
        source: text("source")?,
        kind: text("type")?,
        from: text("from")?,
        to: text("to")?,
    };
    if query.trim().is_empty() && filter == ops::SearchFilter::default() {
        return Err(Fail::invalid("give a query or at least one filter"));
    }
    filter
        .apply(query)
        .map_err(|e| Fail::invalid(e.to_string()))
}

/// Tags given as a list or as one comma-separated string.
fn tag_list(value: &Value) -> Result<Vec<String>, Fail> {
    let tags = match value {
        Value::Null => Vec::new(),
        Value::String(s) => s.split(',').map(str::to_string).collect(),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(Fail::invalid(format!(
                    "`tags` must hold strings, not {}",
                    kind(other)
                ))),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(Fail::invalid(format!(
                "`tags` must be a list or a comma-separated string, not {}",
                kind(other)
            )));
        }
    };
    Ok(tags
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect())
}

fn renamed(args: &Args, from: &str, to: &str) -> Args {
    let mut out = args.clone();
    if let Some(value) = out.remove(from) {
        out.insert(to.into(), value);
    }
    out
}

fn keep(args: &Args, keys: &[&str]) -> Args {
    args.iter()
        .filter(|(k, _)| keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn filter_schema() -> Args {
    object(
        json!({
            "category": string("Only this category."),
            "tags": {"description": "Only memories with these tags: a list, or a comma-separated string."},
            "tag": string("Only this tag."),
            "type": string("Only this type."),
            "phase": string("inbox, organized or archived."),
            "source": string("Only memories from this source."),
            "path": string("Only memories in this folder."),
            "scope": scope(),
            "limit": integer("Most results."),
        }),
        &[],
    )
}

fn search_filter_schema() -> Args {
    let mut schema = filter_schema();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert("query".into(), string("The query."));
        properties.insert("from".into(), string("Created on or after (YYYY-MM-DD)."));
        properties.insert("to".into(), string("Created on or before (YYYY-MM-DD)."));
        properties.remove("path");
    }
    schema.insert("required".into(), json!(["query"]));
    schema
}

/// Runs the tool `name` (or memory-cli's alias of one) with `args`.
pub fn call(call: &Call<'_>, name: &str, args: &Args) -> Result<Answer, Fail> {
    let (name, args) = match find_alias(name) {
        Some(alias) => {
            let (name, args) = (alias.translate)(args)?;
            (name, std::borrow::Cow::Owned(args))
        }
        None => (name, std::borrow::Cow::Borrowed(args)),
    };
    if find(name).is_none() {
        return Err(Fail {
            code: rpc::METHOD_NOT_FOUND,
            message: format!("there is no tool named {name:?}"),
        });
    }
    let scope = match args.get("scope") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(other) => {
            return Err(Fail::invalid(format!(
                "`scope` must be a string, not {}",
                kind(other)
            )));
        }
    };
    let scoped;
    let call: &Call<'_> = match scope {
        Some(scope) => {
            scoped = move |request: Request| {
                call(Request::Scoped {
                    scope: Some(scope.clone()),
                    request: Box::new(request),
                })
            };
            &scoped
        }
        None => call,
    };
    if name == "memory" {
        let mut input = args.into_owned();
        input.remove("scope");
        let answer = tool::answer(Value::Object(input), call);
        return Ok(Answer {
            structured: json!({"content": answer.content, "is_error": answer.is_error}),
            text: answer.content,
            is_error: answer.is_error,
        });
    }
    let (structured, text) = Tools { call, args: &args }.run(name)?;
    Ok(Answer {
        structured,
        text,
        is_error: false,
    })
}

/// A tool's answer: the structured result and its short text.
type Outcome = Result<(Value, String), Fail>;

/// The tools other than `memory`, over one call's arguments.
struct Tools<'a> {
    call: &'a Call<'a>,
    args: &'a Args,
}

impl Tools<'_> {
    fn run(&self, name: &str) -> Outcome {
        match name {
            "search" => self.search(),
            "read" => self.read(),
            "write" => self.write(),
            "remember" => {
                let request = Request::Remember {
                    text: self.string("text")?,
                    folder: self.optional_string("folder")?,
                };
                let Response::Memory { path, id } = self.ask_write(request)? else {
                    return Err(unexpected());
                };
                Ok(written("remembered", path, id))
            }
            "edit" => self.edit(),
            "move" => self.move_to(),
            "delete" => self.delete(),
            "link" => self.link(),
            "unlink" => self.unlink(),
            "tag" => self.tag(),
            "context" => self.context(),
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
                let answer = self.ask(Request::Recent {
                    limit,
                    since: self.optional_string("since")?,
                    kind: self.optional_string("type")?,
                })?;
                self.memories(answer, "no memories yet")
            }
            "list" => {
                let filter = MemoryFilter {
                    path: self.optional_string("path")?,
                    category: self.optional_string("category")?,
                    tag: self.optional_string("tag")?,
                    kind: self.optional_string("type")?,
                    phase: self.optional_string("phase")?,
                    source: self.optional_string("source")?,
                    limit: self.limit(50)?,
                };
                let answer = self.ask(Request::Memories(filter))?;
                self.memories(answer, "no memory matches")
            }
            "history" => {
                let reference = self.string("ref")?;
                let answer = self.ask_about(
                    &reference,
                    Request::History {
                        reference: reference.clone(),
                    },
                )?;
                versions(answer, "no earlier version kept")
            }
            "trash" => {
                let answer = self.ask(Request::Trash {
                    limit: self.limit(50)?,
                })?;
                versions(answer, "the trash is empty")
            }
            "restore" => {
                let reference = self.string("ref")?;
                let version = match self.args.get("version") {
                    None | Some(Value::Null) => None,
                    Some(_) => Some(
                        u64::try_from(self.integer("version")?)
                            .map_err(|_| Fail::invalid("`version` must not be negative"))?,
                    ),
                };
                let Response::Restored { restored } = self.ask_about(
                    &reference,
                    Request::Restore {
                        reference: reference.clone(),
                        version,
                    },
                )?
                else {
                    return Err(unexpected());
                };
                let text = restored
                    .iter()
                    .map(|r| format!("restored version {} at {}", r.version, r.path))
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok((json!({"restored": restored}), text))
            }
            _ => Err(Fail {
                code: rpc::METHOD_NOT_FOUND,
                message: format!("there is no tool named {name:?}"),
            }),
        }
    }

    fn search(&self) -> Outcome {
        // Filters given as arguments become the query's own filters.
        let query = with_filters(&self.string("query")?, self.args)?;
        let limit = self.limit(20)?;
        let Response::Hits {
            hits,
            warnings,
            hint,
        } = self.ask(Request::Search { query, limit })?
        else {
            return Err(unexpected());
        };
        let notes: String = warnings.iter().map(|w| format!("note: {w}\n")).collect();
        let text = notes
            + &if hits.is_empty() {
                hint.clone().unwrap_or_else(|| "no results".to_string())
            } else {
                hits.iter()
                    .enumerate()
                    .map(|(i, h)| {
                        format!(
                            "{}. {} ({}{}{}, score {:.2})\n   {}\n",
                            i + 1,
                            h.title,
                            h.path,
                            h.id.as_deref()
                                .map(|id| format!(", id {id}"))
                                .unwrap_or_default(),
                            written_on(h.day.as_deref()),
                            h.score,
                            h.snippet
                        )
                    })
                    .collect()
            };
        let mut value = json!({"results": hits, "warnings": warnings});
        if let Some(hint) = hint {
            value["hint"] = json!(hint);
        }
        Ok((value, text))
    }

    fn read(&self) -> Outcome {
        let reference = self.string("ref")?;
        let request = Request::ReadMemory {
            reference: reference.clone(),
        };
        let Response::MemoryText { memory } = self.ask_about(&reference, request)? else {
            return Err(unexpected());
        };
        let text = format!(
            "{} (version {})\n\n{}{}",
            memory.path,
            memory.version,
            frontmatter_lines(&memory.frontmatter),
            memory.content
        );
        let value = serde_json::to_value(&memory).map_err(|e| Fail::internal(e.to_string()))?;
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
            status: self.optional_string("status")?,
        };
        let taken = |fail: Fail| match fail.code {
            rpc::EXISTS => Fail {
                message: format!(
                    "{}; to replace it, `read` it and pass its version as `expected_version`, or `edit` it",
                    fail.message
                ),
                ..fail
            },
            _ => fail,
        };
        let Response::Memory { path, id } = self
            .ask_write(Request::WriteMemory(memory))
            .map_err(taken)?
        else {
            return Err(unexpected());
        };
        Ok(written("wrote", path, id))
    }

    fn edit(&self) -> Outcome {
        let (path, id) = self.resolve("ref")?;
        let replace = (self.args.get("old_str"), self.args.get("new_str"));
        let insert = (self.args.get("insert_line"), self.args.get("insert_text"));
        if let Some(set) = self.args.get("set") {
            if replace != (None, None) || insert != (None, None) {
                return Err(Fail::invalid(
                    "give `set` alone: fields in one call, text in another",
                ));
            }
            let Value::Object(set) = set else {
                return Err(Fail::invalid(
                    "`set` is an object of fields, such as {\"status\": \"accepted\"}",
                ));
            };
            let mut fields = Vec::with_capacity(set.len());
            for (key, value) in set {
                let value = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(_) | Value::Bool(_) => value.to_string(),
                    _ => {
                        return Err(Fail::invalid(format!(
                            "`set.{key}` must be a string, a number or a boolean"
                        )));
                    }
                };
                fields.push((key.clone(), value));
            }
            self.ask_write(Request::SetFields {
                reference: path.clone(),
                fields,
            })?;
            return Ok(written("edited", path, id));
        }
        let request = match (replace, insert) {
            ((Some(_), Some(_)), (None, None)) => Request::Replace {
                path: path.clone(),
                old: self.string("old_str")?,
                new: self.string("new_str")?,
                counting: ops::Counting::InBody,
            },
            ((None, None), (Some(_), Some(_))) => Request::InsertInBody {
                path: path.clone(),
                line: self.integer("insert_line")?,
                text: self.string("insert_text")?,
            },
            _ => {
                return Err(Fail::invalid(
                    "give old_str and new_str, insert_line and insert_text, or set (frontmatter fields)",
                ));
            }
        };
        self.ask_write(request)?;
        Ok(written("edited", path, id))
    }

    fn move_to(&self) -> Outcome {
        let (from, id) = self.resolve("ref")?;
        let to = self.string("to")?;
        self.ask_write(Request::Rename {
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
        self.ask_write(Request::Delete { path: path.clone() })?;
        Ok((
            json!({"id": id, "path": path, "deleted": true}),
            format!("deleted {path}"),
        ))
    }

    fn link(&self) -> Outcome {
        let (from, _) = self.resolve("from")?;
        let (to, to_id) = self.resolve("to")?;
        let both = match self.args.get("both") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(Fail::invalid(format!(
                    "`both` must be true or false, not {}",
                    kind(other)
                )));
            }
        };
        self.ask_write(Request::Link {
            from: from.clone(),
            to: to.clone(),
            both,
        })?;
        let text = if both {
            format!("{from} and {to} now link to each other")
        } else {
            format!("{from} now links to {to}")
        };
        Ok((
            json!({"from": from, "to": to, "to_id": to_id, "both": both}),
            text,
        ))
    }

    fn unlink(&self) -> Outcome {
        let (from, _) = self.resolve("from")?;
        let (to, _) = self.resolve("to")?;
        let Response::Unlinked { removed, .. } = self.ask_write(Request::Unlink {
            from: from.clone(),
            to: to.clone(),
        })?
        else {
            return Err(unexpected());
        };
        let text = if removed {
            format!("{from} and {to} no longer link in links:")
        } else {
            format!("{from} and {to} had no link in links:")
        };
        Ok((json!({"from": from, "to": to, "removed": removed}), text))
    }

    fn tag(&self) -> Outcome {
        let (path, id) = self.resolve("ref")?;
        let tags = self.strings("tags")?;
        self.ask_write(Request::Tag {
            reference: path.clone(),
            tags: tags.clone(),
        })?;
        let text = format!("tagged {path}: {}", tags.join(", "));
        Ok((json!({"id": id, "path": path, "tags": tags}), text))
    }

    fn context(&self) -> Outcome {
        let reference = self.string("ref")?;
        let depth = match self.args.get("depth") {
            None | Some(Value::Null) => 1,
            Some(_) => usize::try_from(self.integer("depth")?)
                .ok()
                .filter(|d| (1..=ops::MAX_CONTEXT_DEPTH).contains(d))
                .ok_or_else(|| {
                    Fail::invalid(format!("`depth` must be 1 to {}", ops::MAX_CONTEXT_DEPTH))
                })?,
        };
        let limit = self.limit(20)?;
        let request = Request::Context {
            reference: reference.clone(),
            depth,
            limit,
        };
        let Response::Context { context } = self.ask_about(&reference, request)? else {
            return Err(unexpected());
        };
        let mut text = format!("{}\n\n{}", context.memory.path, context.memory.content);
        if context.related.is_empty() {
            text.push_str("\nno linked memories\n");
        } else {
            text.push_str("\nlinked:\n");
            for r in &context.related {
                let how = match r.direction {
                    ops::Direction::Outgoing => "linked from",
                    ops::Direction::Incoming => "links to",
                };
                text.push_str(&format!(
                    "{}{} {} ({}) {how} {}\n",
                    "  ".repeat(r.depth - 1),
                    r.depth,
                    r.title,
                    r.path,
                    r.via
                ));
            }
        }
        let value = serde_json::to_value(&context).map_err(|e| Fail::internal(e.to_string()))?;
        Ok((value, text))
    }

    fn dream(&self) -> Outcome {
        let level = match self.args.get("level") {
            None | Some(Value::Null) => 1,
            Some(_) => u8::try_from(self.integer("level")?)
                .map_err(|_| Fail::invalid("dream level must be 1, 2 or 3"))?,
        };
        let Response::Report { mut report } = self.ask(Request::Dream { level })? else {
            return Err(unexpected());
        };
        // An agent's context is no place for a whole inbox's moves.
        let unlisted =
            report.filed.len().saturating_sub(LISTED) + report.skipped.len().saturating_sub(LISTED);
        report.filed.truncate(LISTED);
        report.skipped.truncate(LISTED);
        let mut value = serde_json::to_value(&report).map_err(|e| Fail::internal(e.to_string()))?;
        let mut text = format!(
            "dream level {}: {} organized, {} expired, {} decayed, {} merged, {} links resolved, {} reminders",
            report.level,
            report.organized,
            report.expired,
            report.decayed,
            report.merged,
            report.links_resolved,
            report.reminders
        );
        if unlisted > 0 {
            value["unlisted"] = Value::from(unlisted);
            text.push_str(&format!(
                " (the first {LISTED} filed and {LISTED} skipped notes are listed, {unlisted} more are not)"
            ));
        }
        Ok((value, text))
    }

    fn status(&self) -> Outcome {
        let Response::Status { status } = self.ask(Request::Status)? else {
            return Err(unexpected());
        };
        let value = serde_json::to_value(&status).map_err(|e| Fail::internal(e.to_string()))?;
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
        let Response::Brief { brief } = self.ask(Request::Brief { cwd, within: None })? else {
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
    fn resolve(&self, key: &str) -> Result<(String, Option<String>), Fail> {
        let reference = self.string(key)?;
        let request = Request::Resolve {
            reference: reference.clone(),
        };
        let Response::Memory { path, id } = self.ask_about(&reference, request)? else {
            return Err(unexpected());
        };
        // A path may name a folder; every tool that takes a ref means one memory.
        match self.ask(Request::Stat { path: path.clone() })? {
            Response::Entry { entry } if entry.kind == ops::EntryKind::Folder => {
                Err(Fail::invalid(format!(
                    "{path} is a folder, not a memory; name one memory by id, path, title or alias"
                )))
            }
            _ => Ok((path, id)),
        }
    }

    /// Runs a request about the memory `reference` names; a reference
    /// that names nothing is said so.
    fn ask_about(&self, reference: &str, request: Request) -> Result<Response, Fail> {
        (self.call)(request).map_err(|e| {
            if e.errno() == libc::ENOENT {
                Fail {
                    code: rpc::NOT_FOUND,
                    message: format!(
                        "no memory is named {reference:?} (by id, path, title or alias)"
                    ),
                }
            } else {
                Fail::from_ops(&e)
            }
        })
    }

    fn ask(&self, request: Request) -> Result<Response, Fail> {
        (self.call)(request).map_err(|e| Fail::from_ops(&e))
    }

    /// Runs a write, compared first with `expected_version` if given.
    fn ask_write(&self, request: Request) -> Result<Response, Fail> {
        match self.optional_string("expected_version")? {
            Some(version) => self.ask(Request::Expecting {
                version: Some(version),
                request: Box::new(request),
            }),
            None => self.ask(request),
        }
    }

    fn string(&self, key: &str) -> Result<String, Fail> {
        self.optional_string(key)?
            .ok_or_else(|| Fail::invalid(format!("missing argument `{key}`")))
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>, Fail> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Fail::invalid(format!(
                "`{key}` must be a string, not {}",
                kind(other)
            ))),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, Fail> {
        match self.args.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(Fail::invalid(format!(
                        "`{key}` must hold strings, not {}",
                        kind(other)
                    ))),
                })
                .collect(),
            Some(other) => Err(Fail::invalid(format!(
                "`{key}` must be a list of strings, not {}",
                kind(other)
            ))),
        }
    }

    fn integer(&self, key: &str) -> Result<i64, Fail> {
        match self.args.get(key) {
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| Fail::invalid(format!("`{key}` must be a whole number"))),
            None | Some(Value::Null) => Err(Fail::invalid(format!("missing argument `{key}`"))),
            Some(other) => Err(Fail::invalid(format!(
                "`{key}` must be an integer, not {}",
                kind(other)
            ))),
        }
    }

    fn limit(&self, default: usize) -> Result<usize, Fail> {
        match self.args.get("limit") {
            None | Some(Value::Null) => Ok(default),
            Some(_) => usize::try_from(self.integer("limit")?)
                .map_err(|_| Fail::invalid("`limit` must not be negative")),
        }
    }
}

/// Kept versions as a tool's answer: the list, and one line each.
fn versions(answer: Response, none: &str) -> Outcome {
    let Response::Versions { versions } = answer else {
        return Err(unexpected());
    };
    let text = if versions.is_empty() {
        none.to_string()
    } else {
        versions
            .iter()
            .map(|v| {
                format!(
                    "version {}: {} {} at {} ({} bytes)",
                    v.version, v.path, v.why, v.at, v.size
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok((json!({"versions": versions}), text))
}

fn written(verb: &str, path: String, id: Option<String>) -> (Value, String) {
    // The id in the text too: a client may hand the model the text alone.
    let text = match &id {
        Some(id) => format!("{verb} {path} (id {id})"),
        None => format!("{verb} {path}"),
    };
    (json!({"id": id, "path": path}), text)
}

/// A memory's frontmatter fields between `---` lines, one `key: value`
/// a line, for the text a model reads (the data carries them as JSON).
fn frontmatter_lines(fields: &Value) -> String {
    let Value::Object(fields) = fields else {
        return String::new();
    };
    if fields.is_empty() {
        return String::new();
    }
    let mut out = String::from("---\n");
    for (key, value) in fields {
        let shown = match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => other.to_string(),
        };
        out.push_str(&format!("{key}: {shown}\n"));
    }
    out.push_str("---\n");
    out
}

/// ", written DAY" for a hit written on `day`: the day is what a question
/// about when needs.
fn written_on(day: Option<&str>) -> String {
    day.map(|day| format!(", written {day}"))
        .unwrap_or_default()
}

fn unexpected() -> Fail {
    Fail::internal("the store gave an unexpected answer")
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

fn object(properties: Value, required: &[&str]) -> Args {
    let mut schema = Args::new();
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

fn scope() -> Value {
    string(
        "Run as a session of this scope: agent:NAME sees global memories and its own, global only the global ones.",
    )
}

fn expected_version() -> Value {
    string(
        "The version `read` gave: if the memory changed since, nothing is written and the call fails with a conflict.",
    )
}

/// `memory_20250818`'s input, as Anthropic's SDK declares it.
fn memory_schema() -> Args {
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

/// The tools as data (for a socket's `tools/list`): name, description and
/// input schema of each tool, then of each of memory-cli's names.
pub fn listing(with_aliases: bool) -> Vec<Value> {
    let tools = TOOLS
        .iter()
        .map(|t| (t.name, t.description, t.input_schema()));
    let aliases = ALIASES
        .iter()
        .filter(|_| with_aliases)
        .map(|a| (a.name, a.description, a.input_schema()));
    tools
        .chain(aliases)
        .map(|(name, description, schema)| {
            json!({"name": name, "description": description, "inputSchema": schema})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Runs `name` with `args` on a runner that records each request and
    /// answers the few kinds a translation needs.
    fn requests(name: &str, args: Value) -> (Result<Answer, Fail>, Vec<Request>) {
        let seen = Mutex::new(Vec::new());
        let runner = |request: Request| {
            seen.lock().expect("lock").push(request.clone());
            let mut inner = &request;
            while let Request::Scoped { request, .. } | Request::Expecting { request, .. } = inner {
                inner = request;
            }
            Ok(match inner {
                Request::Search { .. } => Response::Hits {
                    hits: Vec::new(),
                    warnings: Vec::new(),
                    hint: None,
                },
                Request::Resolve { reference } => Response::Memory {
                    path: format!("{reference}.md"),
                    id: Some(reference.clone()),
                },
                Request::History { .. } | Request::Trash { .. } => Response::Versions {
                    versions: vec![ops::VersionInfo {
                        version: 7,
                        path: "gone.md".into(),
                        why: "deleted".into(),
                        at: "2026-01-01T00:00:00Z".into(),
                        size: 3,
                        id: None,
                        title: None,
                    }],
                },
                Request::Restore { reference, version } => Response::Restored {
                    restored: vec![ops::Restored {
                        path: reference.clone(),
                        version: version.unwrap_or(7),
                    }],
                },
                Request::Dream { level } => Response::Report {
                    report: ops::Report {
                        level: *level,
                        organized: 120,
                        filed: (0..120)
                            .map(|i| ops::Filed {
                                from: format!("inbox/{i}.md"),
                                to: format!("knowledge/{i}.md"),
                                by: "its words".into(),
                            })
                            .collect(),
                        skipped: (0..3)
                            .map(|i| ops::Skipped {
                                path: format!("inbox/odd-{i}.md"),
                                reason: "no category matched".into(),
                            })
                            .collect(),
                        ..ops::Report::default()
                    },
                },
                Request::Stat { path } => Response::Entry {
                    entry: ops::Entry {
                        path: path.clone(),
                        kind: ops::EntryKind::File,
                        size: 1,
                    },
                },
                _ => Response::Memory {
                    path: "x.md".into(),
                    id: None,
                },
            })
        };
        let Value::Object(args) = args else {
            panic!("arguments are an object");
        };
        let answer = call(&runner, name, &args);
        (answer, seen.into_inner().expect("lock"))
    }

    #[test]
    fn dream_lists_the_first_filed_and_skipped_notes_and_counts_the_rest() {
        let (answer, _) = requests("dream", json!({"level": 1}));
        let answer = answer.expect("dream answers");
        assert_eq!(answer.structured["organized"], 120);
        assert_eq!(
            answer.structured["filed"].as_array().map(Vec::len),
            Some(LISTED)
        );
        assert_eq!(
            answer.structured["skipped"].as_array().map(Vec::len),
            Some(3)
        );
        assert_eq!(answer.structured["unlisted"], 70);
        assert!(answer.text.contains("70 more are not"), "{}", answer.text);
    }

    #[test]
    fn link_records_one_way_unless_both_is_asked() {
        for (args, both) in [
            (json!({"from": "a", "to": "b"}), false),
            (json!({"from": "a", "to": "b", "both": true}), true),
        ] {
            let (answer, seen) = requests("link", args);
            assert!(answer.is_ok(), "{answer:?}");
            assert_eq!(
                seen.last(),
                Some(&Request::Link {
                    from: "a.md".into(),
                    to: "b.md".into(),
                    both,
                })
            );
        }
        let (answer, _) = requests("link", json!({"from": "a", "to": "b", "both": "yes"}));
        assert!(answer.is_err(), "{answer:?}");
    }

    #[test]
    fn memory_cli_filters_become_the_query_language() {
        let (answer, seen) = requests(
            "memory_search",
            json!({"query": "dark mode", "tags": "ui, theme", "category": "preferences",
                   "from": "2026-01-01", "limit": 3}),
        );
        assert!(answer.is_ok(), "{answer:?}");
        assert_eq!(
            seen,
            [Request::Search {
                query:
                    "(dark mode) tag:ui tag:theme category:preferences created:[2026-01-01 TO *]"
                        .into(),
                limit: 3,
            }]
        );
    }

    #[test]
    fn a_filter_that_is_not_a_category_or_a_date_is_refused() {
        let (answer, seen) = requests("memory_search", json!({"query": "x", "category": "birds"}));
        assert!(answer.is_err() && seen.is_empty(), "{answer:?}");
        let (answer, _) = requests("memory_search", json!({"query": "x", "to": "soon"}));
        let message = answer.expect_err("refused").message;
        assert!(
            message.contains("\"soon\" is not a date for `to`"),
            "{message}"
        );
        let (answer, seen) = requests("memory_list", json!({"tags": ["a", "b"], "type": "task"}));
        assert!(answer.is_ok(), "{answer:?}");
        assert_eq!(
            seen,
            [Request::Search {
                query: "tag:a tag:b type:\"task\"".into(),
                limit: 20,
            }]
        );
    }

    #[test]
    fn memory_cli_names_map_onto_the_tools() {
        let (_, seen) = requests("memory_write", json!({"content": "x", "tags": "a, b,"}));
        let [Request::WriteMemory(memory)] = seen.as_slice() else {
            panic!("{seen:?}");
        };
        assert_eq!(memory.tags, ["a", "b"]);
        let (_, seen) = requests("memory_tag", json!({"id": "k-1", "tags": ["c"]}));
        assert_eq!(
            seen.last(),
            Some(&Request::Tag {
                reference: "k-1.md".into(),
                tags: vec!["c".into()],
            })
        );
        let (_, seen) = requests("memory_list", json!({"tags": ["t"], "phase": "inbox"}));
        let [Request::Memories(filter)] = seen.as_slice() else {
            panic!("{seen:?}");
        };
        assert_eq!(
            (filter.tag.as_deref(), filter.phase.as_deref()),
            (Some("t"), Some("inbox"))
        );
    }

    #[test]
    fn searchs_filters_given_as_arguments_narrow_the_query() {
        let (_, seen) = requests(
            "search",
            json!({"query": "ledger", "category": "people", "from": "2026-11-20"}),
        );
        let [Request::Search { query, .. }] = &seen[..] else {
            panic!("{seen:?}");
        };
        assert!(
            query.contains("ledger") && query.contains("category:people"),
            "{query}"
        );
        assert!(query.contains("2026-11-20"), "{query}");
        let (answer, _) = requests("search", json!({"query": "x", "category": "nope"}));
        assert!(answer.is_err());
    }

    #[test]
    fn scope_and_expected_version_wrap_the_requests() {
        let (_, seen) = requests("search", json!({"query": "x", "scope": "agent:a"}));
        assert!(
            matches!(&seen[..], [Request::Scoped { scope: Some(s), .. }] if s == "agent:a"),
            "{seen:?}"
        );
        let (answer, seen) = requests("restore", json!({"ref": "gone.md", "version": 3}));
        assert_eq!(
            seen,
            [Request::Restore {
                reference: "gone.md".into(),
                version: Some(3)
            }]
        );
        assert_eq!(
            answer.expect("restored").text,
            "restored version 3 at gone.md"
        );
        let (answer, seen) = requests("trash", json!({}));
        assert_eq!(seen, [Request::Trash { limit: 50 }]);
        assert!(answer.expect("trash").text.contains("gone.md deleted"));
        let (answer, _) = requests("restore", json!({"ref": "x", "version": -1}));
        assert_eq!(
            answer.map(drop).map_err(|f| f.code),
            Err(rpc::INVALID_PARAMS)
        );
        let (_, seen) = requests("delete", json!({"ref": "k", "expected_version": "v1"}));
        assert!(
            matches!(seen.last(), Some(Request::Expecting { version: Some(v), request })
                if v == "v1" && **request == Request::Delete { path: "k.md".into() }),
            "{seen:?}"
        );
        let (answer, seen) = requests("nope", json!({}));
        assert_eq!(
            answer.map(drop).map_err(|f| f.code),
            Err(rpc::METHOD_NOT_FOUND)
        );
        assert!(seen.is_empty());
    }
}
