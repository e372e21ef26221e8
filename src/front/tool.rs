//! `mnemofs tool`: Anthropic's `memory` tool (`memory_20250818`) on stdin
//! and stdout, for agents that cannot mount.
//!
//! Each input is one tool_use `input` object (`{"command": "view",
//! "path": "/memories"}`), one per line; a single object spread over
//! several lines (pretty-printed) works too. Each gets one line back,
//! `{"content": "...", "is_error": false}`: a tool_result body. `/memories`
//! is the store root.
//!
//! The content is, character for character, what the SDK's reference
//! handler (`BetaLocalFilesystemMemoryTool` in the `anthropic` package)
//! answers under the SDK's tool runner: its text, a `ToolError`'s message,
//! or for any other exception its `repr` cut to 4096 characters (so a
//! missing field gives the `AttributeError` the handler raises, an unknown
//! command its `NotImplementedError`, a file the store refuses the
//! `OSError` an `open` would raise). The views answer as the handler does
//! on a mount: `view /memories/search/<query>` lists the results (links to
//! files are shown as the files, with their sizes) and `view
//! /memories/by-id/<id>.md` shows the memory; `view /memories` lists only
//! real files.
//!
//! Every step is a request of the operations layer, sent as
//! [`Request::Checked`] so that a failure keeps its details across a
//! daemon's socket. Paths are resolved as the handler's `Path.resolve()`
//! does: symlinks (in the store and in the views) followed name by name
//! with `Stat`, `..` taken after them, and the command then works on the
//! path found, so an edit through a link edits its target.
//!
//! Where it differs from the reference, and why:
//! - A symlink with an absolute target leads outside (the store's
//!   sandbox never follows one), even if the target names the store.
//! - Edits keep the file's mode; the reference's atomic write makes it
//!   0600. A file changed or held open for writing meanwhile is not
//!   overwritten: the edit fails and says so (the reference has no such
//!   case).
//! - A rename whose source does not exist makes no folders for its
//!   destination (the reference makes them before it fails), and a
//!   `create` without a string `file_text` makes no file (the reference
//!   leaves an empty one, and the agent's retry then finds it there).
//!   Each answers as the reference does.
//! - A file that is not UTF-8 fails with a `UnicodeDecodeError` that names
//!   the path, not the bytes. Files over the store's size cap are refused.
//! - Writes into a view, or to the guide, fail as on the mount, with
//!   `OSError(30, 'Read-only file system')`.
//! - Python's own quirks are followed where they show: lax int coercion of
//!   `insert_line` and `view_range` (`"2"` is 2), their `TypeError`s, the
//!   `repr` of the unknown command's value. Integers beyond 64 bits, the
//!   key order of an object in that value (JSON objects are read sorted),
//!   and which unassigned code points `repr` escapes, are not.
//!
//! Input that is not JSON gets one `is_error` line, "Invalid JSON input:
//! ...", and the loop goes on. An object left open waits for the lines
//! that close it (that is how a pretty-printed object arrives); it is
//! answered as invalid when a line that is a whole object by itself
//! arrives instead, or at the end of input. Blank lines are skipped.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use serde::Serialize;
use serde_json::{Map, Value};

use super::input::{self, Line};
use crate::ops::{self, Counting, Detail, Entry, EntryKind, Failure, Request, Response, WireError};

/// The root every tool path starts with.
const ROOT: &str = "/memories";
/// The longest file the reference views (in lines).
const MAX_LINES: usize = 999_999;
/// Width of the reference's line numbers.
const LINE_NUMBER_WIDTH: usize = 6;
/// The most of an exception's `repr` the SDK's runner returns.
const ERROR_TEXT_MAX: usize = 4096;
/// Nested symlinks followed before a path counts as a loop.
const MAX_NESTED_LINKS: usize = 64;

/// One answer: a tool_result body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolResult {
    /// The text the model reads.
    pub content: String,
    /// True when the command failed.
    pub is_error: bool,
}

/// Answers the commands read from `input` on `output`, one line each, with
/// `call` running the operations. Ends at the end of input; fails only
/// when reading or writing fails.
pub fn serve(
    mut input: impl BufRead,
    mut output: impl Write,
    call: impl Fn(Request) -> ops::Result<Response>,
) -> io::Result<()> {
    let tool = MemoryTool { call };
    let mut answer = |result: ToolResult| -> io::Result<()> {
        serde_json::to_writer(&mut output, &result)?;
        output.write_all(b"\n")?;
        output.flush()
    };
    let mut pending = Vec::new();
    let mut line = Vec::new();
    let max = input::max_line();
    let too_long = || {
        Parsed::Invalid(format!(
            "the input is longer than {}",
            input::size(max as u64)
        ))
    };
    loop {
        match input::read_line(&mut input, &mut line, max)? {
            Line::End => break,
            Line::Read => {}
            Line::TooLong => {
                pending.clear();
                answer(tool.answer(too_long()))?;
                continue;
            }
        }
        if !pending.is_empty() && pending.len() + line.len() > max {
            // An object left open over more lines than a command holds.
            pending.clear();
            answer(tool.answer(too_long()))?;
        }
        if pending.is_empty() && line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !pending.is_empty() && matches!(parse(&line), Parsed::Value(Value::Object(_))) {
            // An object left open, then a whole one: the first was cut short.
            answer(tool.answer(parse_at_end(&pending)))?;
            pending.clear();
        }
        pending.extend_from_slice(&line);
        match parse(&pending) {
            Parsed::Open(_) => continue,
            parsed => answer(tool.answer(parsed))?,
        }
        pending.clear();
    }
    if !pending.iter().all(u8::is_ascii_whitespace) {
        answer(tool.answer(parse_at_end(&pending)))?;
    }
    Ok(())
}

/// Answers one command (a tool_use `input` object), as [`serve`] answers
/// a line that holds it.
pub fn answer(input: Value, call: impl Fn(Request) -> ops::Result<Response>) -> ToolResult {
    MemoryTool { call }.answer(Parsed::Value(input))
}

/// What a buffer of input holds.
enum Parsed {
    /// A whole JSON value.
    Value(Value),
    /// The start of one, which more lines may complete; the parser's words.
    Open(String),
    /// Not JSON; why.
    Invalid(String),
}

fn parse(bytes: &[u8]) -> Parsed {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => return Parsed::Invalid(format!("the input is not UTF-8 ({e})")),
    };
    match serde_json::from_str(text) {
        Ok(value) => Parsed::Value(value),
        Err(e) if e.is_eof() => Parsed::Open(e.to_string()),
        Err(e) => Parsed::Invalid(e.to_string()),
    }
}

/// Like [`parse`], for input that gets no more lines.
fn parse_at_end(bytes: &[u8]) -> Parsed {
    match parse(bytes) {
        Parsed::Open(why) => Parsed::Invalid(why),
        parsed => parsed,
    }
}

/// Why a command failed, as the reference handler raises it.
#[derive(Debug, PartialEq)]
enum Raised {
    /// A `ToolError`: its message is the content.
    Tool(String),
    /// Any other exception: the content is its `repr`.
    Exception(String),
}

fn tool_error(message: impl Into<String>) -> Raised {
    Raised::Tool(message.into())
}

/// `Class('message')`, as Python shows an exception with one argument.
fn exception(class: &str, message: &str) -> Raised {
    Raised::Exception(format!("{class}({})", py_repr_str(message)))
}

/// An `OSError` with `errno`, as Python shows it: `FileNotFoundError(2,
/// 'No such file or directory')`.
fn os_error(errno: i32) -> Raised {
    let class = match errno {
        libc::EAGAIN | libc::EALREADY | libc::EINPROGRESS => "BlockingIOError",
        libc::ECHILD => "ChildProcessError",
        libc::EPIPE | libc::ESHUTDOWN => "BrokenPipeError",
        libc::ECONNABORTED => "ConnectionAbortedError",
        libc::ECONNREFUSED => "ConnectionRefusedError",
        libc::ECONNRESET => "ConnectionResetError",
        libc::EEXIST => "FileExistsError",
        libc::ENOENT => "FileNotFoundError",
        libc::EINTR => "InterruptedError",
        libc::EISDIR => "IsADirectoryError",
        libc::ENOTDIR => "NotADirectoryError",
        libc::EACCES | libc::EPERM => "PermissionError",
        libc::ESRCH => "ProcessLookupError",
        libc::ETIMEDOUT => "TimeoutError",
        _ => "OSError",
    };
    let sentence = io::Error::from_raw_os_error(errno).to_string();
    let strerror = sentence
        .strip_suffix(&format!(" (os error {errno})"))
        .unwrap_or(&sentence);
    Raised::Exception(format!("{class}({errno}, {})", py_repr_str(strerror)))
}

/// The `AttributeError` of reading `attribute` off a field's value.
fn attribute_error(value: Option<&Value>, attribute: &str) -> Raised {
    exception(
        "AttributeError",
        &format!("'{}' object has no attribute '{attribute}'", py_type(value)),
    )
}

/// Where a name leads in the tool's namespace: `/` holds `memories`, the
/// store, and nothing else there is ever looked at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Place {
    /// In the store: the names below its root.
    Store(Vec<String>),
    /// Elsewhere under `/`: the names below it.
    Outside(Vec<String>),
    /// Where a symlink with an absolute target leads.
    Beyond,
}

impl Place {
    fn parent(self) -> Place {
        match self {
            Place::Store(names) if names.is_empty() => Place::Outside(Vec::new()),
            Place::Store(mut names) => {
                names.pop();
                Place::Store(names)
            }
            Place::Outside(mut names) => {
                names.pop();
                Place::Outside(names)
            }
            Place::Beyond => Place::Beyond,
        }
    }

    fn child(self, name: &str) -> Place {
        match self {
            Place::Store(mut names) => {
                names.push(name.to_string());
                Place::Store(names)
            }
            Place::Outside(names) if names.is_empty() && name == &ROOT[1..] => {
                Place::Store(Vec::new())
            }
            Place::Outside(mut names) => {
                names.push(name.to_string());
                Place::Outside(names)
            }
            Place::Beyond => Place::Beyond,
        }
    }

    /// The path as the tool names it.
    fn shown(&self) -> String {
        match self {
            Place::Store(names) if names.is_empty() => ROOT.to_string(),
            Place::Store(names) => format!("{ROOT}/{}", names.join("/")),
            Place::Outside(names) => format!("/{}", names.join("/")),
            Place::Beyond => "/".to_string(),
        }
    }
}

/// A symlink that leads back into itself: the path where that showed.
struct Loop(String);

/// The memory tool over a way to run operations.
struct MemoryTool<F> {
    call: F,
}

impl<F: Fn(Request) -> ops::Result<Response>> MemoryTool<F> {
    fn answer(&self, parsed: Parsed) -> ToolResult {
        let outcome = match parsed {
            Parsed::Value(input) => self.run(&input),
            Parsed::Open(why) | Parsed::Invalid(why) => {
                Err(tool_error(format!("Invalid JSON input: {why}")))
            }
        };
        match outcome {
            Ok(content) => ToolResult {
                content,
                is_error: false,
            },
            Err(Raised::Tool(content)) => ToolResult {
                content,
                is_error: true,
            },
            Err(Raised::Exception(repr)) => ToolResult {
                content: repr.chars().take(ERROR_TEXT_MAX).collect(),
                is_error: true,
            },
        }
    }

    /// One command, as the handler's `execute` dispatches it.
    fn run(&self, input: &Value) -> Result<String, Raised> {
        let Value::Object(input) = input else {
            return Err(attribute_error(Some(input), "command"));
        };
        let command = input.get("command");
        match command.and_then(Value::as_str) {
            Some("view") => self.view(input),
            Some("create") => self.create(input),
            Some("str_replace") => self.str_replace(input),
            Some("insert") => self.insert(input),
            Some("delete") => self.delete(input),
            Some("rename") => self.rename(input),
            _ => Err(exception(
                "NotImplementedError",
                &format!(
                    "Unknown command: {}",
                    py_str(command.unwrap_or(&Value::Null))
                ),
            )),
        }
    }

    fn view(&self, input: &Map<String, Value>) -> Result<String, Raised> {
        let (shown, real) = self.resolve(input.get("path"))?;
        let entry = match self.stat(&real) {
            Ok(entry) => entry,
            Err(f) if is_missing(&f) => {
                return Err(tool_error(format!(
                    "The path {shown} does not exist. Please provide a valid path."
                )));
            }
            Err(f) => return Err(self.failure(&f, shown)),
        };
        match entry.kind {
            EntryKind::Folder => Ok(self.view_folder(shown, &real, entry.size)),
            EntryKind::File => self.view_file(shown, &real, input.get("view_range")),
            EntryKind::Link { .. } | EntryKind::Special => {
                Err(tool_error(format!("Unsupported file type for {shown}")))
            }
        }
    }

    fn view_folder(&self, shown: &str, real: &str, size: u64) -> String {
        let mut items = Vec::new();
        self.collect(real, "", 1, &mut items);
        let mut lines = vec![format!("{}\t{shown}", format_file_size(size))];
        lines.extend(
            items
                .into_iter()
                .map(|(size, path)| format!("{size}\t{shown}/{path}")),
        );
        format!(
            "Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:\n{}",
            lines.join("\n")
        )
    }

    /// The listing's entries below `real` (shown as `shown`): names that
    /// start with a dot left out, links followed (those that dangle, loop
    /// or lead out left out), folders entered down to the second level.
    fn collect(&self, real: &str, shown: &str, depth: usize, items: &mut Vec<(String, String)>) {
        let Ok(mut entries) = self.list(real) else {
            return;
        };
        entries.sort_by(|a, b| file_name(&a.path).cmp(file_name(&b.path)));
        for entry in entries {
            let name = file_name(&entry.path);
            if name.starts_with('.') {
                continue;
            }
            let path = match shown {
                "" => name.to_string(),
                _ => format!("{shown}/{name}"),
            };
            let (kind, size, real) = match entry.kind {
                EntryKind::Link { .. } => {
                    let Some(target) = self.follow(&entry.path) else {
                        continue;
                    };
                    (target.kind, target.size, target.path)
                }
                kind => (kind, entry.size, entry.path),
            };
            match kind {
                EntryKind::Folder => {
                    items.push((format_file_size(size), format!("{path}/")));
                    if depth < 2 {
                        self.collect(&real, &path, depth + 1, items);
                    }
                }
                EntryKind::File => items.push((format_file_size(size), path)),
                EntryKind::Link { .. } | EntryKind::Special => {}
            }
        }
    }

    /// What a symlink in the store leads to, if it stays in the store.
    fn follow(&self, link: &str) -> Option<Entry> {
        let (dir, name) = link.rsplit_once('/').unwrap_or(("", link));
        let dir = Place::Store(
            dir.split('/')
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect(),
        );
        let Ok(Place::Store(names)) = self.walk(dir, name, &mut HashMap::new(), 0) else {
            return None;
        };
        self.stat(&names.join("/")).ok()
    }

    fn view_file(&self, shown: &str, real: &str, range: Option<&Value>) -> Result<String, Raised> {
        let text = self.read(real).map_err(|f| self.read_failure(&f, shown))?;
        let lines: Vec<&str> = text.split('\n').collect();
        if lines.len() > MAX_LINES {
            return Err(tool_error(format!(
                "File {shown} exceeds maximum line limit of 999,999 lines."
            )));
        }
        let (start, end) = view_range(range, lines.len())?;
        let numbered: Vec<String> = lines[start..end.max(start)]
            .iter()
            .enumerate()
            .map(|(i, line)| numbered(start + i + 1, line))
            .collect();
        Ok(format!(
            "Here's the content of {shown} with line numbers:\n{}",
            numbered.join("\n")
        ))
    }

    fn create(&self, input: &Map<String, Value>) -> Result<String, Raised> {
        let (shown, real) = self.resolve(input.get("path"))?;
        let exists = || tool_error(format!("File {shown} already exists"));
        if self.stat(&real).is_ok() {
            return Err(exists());
        }
        // The handler creates the file (and its folders) before it reads
        // the text, and leaves it empty when the text is missing; here
        // nothing is made, so that the agent's retry with the text works.
        let content = match input.get("file_text") {
            Some(Value::String(text)) => text.clone(),
            other => return Err(attribute_error(other, "encode")),
        };
        let request = Request::Create {
            path: real,
            content,
            overwrite: false,
        };
        match self.ask(request) {
            Ok(_) => Ok(format!("File created successfully at: {shown}")),
            Err(f) if matches!(f.detail, Detail::Exists { .. }) => Err(exists()),
            Err(f) => Err(self.failure(&f, shown)),
        }
    }

    fn str_replace(&self, input: &Map<String, Value>) -> Result<String, Raised> {
        let (shown, real) = self.resolve(input.get("path"))?;
        self.must_be_file(shown, &real)?;
        let (old, new) = match (input.get("old_str"), input.get("new_str")) {
            (Some(Value::String(old)), Some(Value::String(new))) => (old, new),
            (old, new) => return Err(self.str_replace_without_text(shown, &real, old, new)),
        };
        let no_match = || {
            tool_error(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
            ))
        };
        let not_unique = |lines: &[usize]| {
            let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
            tool_error(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                lines.join(", ")
            ))
        };
        let request = Request::Replace {
            path: real,
            old: old.clone(),
            new: new.clone(),
            counting: Counting::Disjoint,
        };
        let (text, line) = match self.ask(request) {
            Ok(Response::Replaced { text, line }) => (text, line),
            Ok(other) => return Err(self.failure(&unexpected(&other), shown)),
            Err(f) => {
                return Err(match &f.detail {
                    Detail::NoMatch { .. } => no_match(),
                    Detail::NotUnique { lines, .. } => not_unique(lines),
                    _ => self.read_failure(&f, shown),
                });
            }
        };
        let lines: Vec<&str> = text.split('\n').collect();
        let snippet: Vec<String> = (line.saturating_sub(2)..(line + 3).min(lines.len()))
            .map(|i| numbered(i + 1, lines[i]))
            .collect();
        Ok(format!(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
            snippet.join("\n")
        ))
    }

    /// A `str_replace` whose texts are not both strings: the handler reads
    /// the file, counts `old_str` in it (a `TypeError` if that is no
    /// string), and fails in `replace()` if it occurs once.
    fn str_replace_without_text(
        &self,
        shown: &str,
        real: &str,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Raised {
        let content = match self.read(real) {
            Ok(content) => content,
            Err(f) => return self.read_failure(&f, shown),
        };
        let Some(Value::String(old)) = old else {
            return exception("TypeError", &format!("must be str, not {}", py_type(old)));
        };
        match content.matches(old.as_str()).count() {
            0 => tool_error(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
            )),
            1 => {
                let new = match new {
                    None | Some(Value::Null) => "None",
                    other => py_type(other),
                };
                exception(
                    "TypeError",
                    &format!("replace() argument 2 must be str, not {new}"),
                )
            }
            _ => {
                let lines: Vec<String> = ops::occurrence_lines(&content, old)
                    .iter()
                    .map(usize::to_string)
                    .collect();
                tool_error(format!(
                    "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                    lines.join(", ")
                ))
            }
        }
    }

    fn insert(&self, input: &Map<String, Value>) -> Result<String, Raised> {
        let (shown, real) = self.resolve(input.get("path"))?;
        self.must_be_file(shown, &real)?;
        let out_of_range = |line: &str, lines: usize| {
            tool_error(format!(
                "Invalid `insert_line` parameter: {line}. It should be within the range [0, {lines}]."
            ))
        };
        let line = lax_int(input.get("insert_line"));
        let text = input.get("insert_text");
        if let (PyNumber::Int(line), Some(Value::String(text))) = (&line, text) {
            let request = Request::Insert {
                path: real,
                line: *line,
                text: text.clone(),
            };
            return match self.ask(request) {
                Ok(_) => Ok(format!("The file {shown} has been edited.")),
                Err(f) => Err(match f.detail {
                    Detail::BadLine { lines, .. } => out_of_range(&line.to_string(), lines),
                    _ => self.read_failure(&f, shown),
                }),
            };
        }
        // Not an int and a string: the handler reads the file, checks the
        // range, then fails on whichever is wrong.
        let content = self.read(&real).map_err(|f| self.read_failure(&f, shown))?;
        let lines = content.split('\n').count()
            - usize::from(content.ends_with('\n') || content.is_empty());
        match line {
            PyNumber::Int(line) if line < 0 || line as u64 > lines as u64 => {
                Err(out_of_range(&line.to_string(), lines))
            }
            PyNumber::Int(_) => Err(attribute_error(text, "rstrip")),
            PyNumber::Float(line) if line < 0.0 || line > lines as f64 => {
                Err(out_of_range(&py_float_repr(line), lines))
            }
            PyNumber::Float(_) => Err(exception(
                "TypeError",
                "'float' object cannot be interpreted as an integer",
            )),
            PyNumber::Other(value) => Err(exception(
                "TypeError",
                &format!(
                    "'<' not supported between instances of '{}' and 'int'",
                    py_type(value)
                ),
            )),
        }
    }

    fn delete(&self, input: &Map<String, Value>) -> Result<String, Raised> {
        let (shown, real) = self.resolve(input.get("path"))?;
        if real.is_empty() {
            return Err(tool_error("Cannot delete the /memories directory itself"));
        }
        let missing = || tool_error(format!("The path {shown} does not exist"));
        match self.stat(&real) {
            Ok(entry) if matches!(entry.kind, EntryKind::File | EntryKind::Folder) => {}
            Ok(_) => return Err(missing()),
            Err(f) if is_missing(&f) => return Err(missing()),
            Err(f) => return Err(self.failure(&f, shown)),
        }
        match self.ask(Request::Delete { path: real }) {
            Ok(_) => Ok(format!("Successfully deleted {shown}")),
            Err(f) if is_missing(&f) => Err(missing()),
            Err(f) => Err(self.failure(&f, shown)),
        }
    }

    fn rename(&self, input: &Map<String, Value>) -> Result<String, Raised> {
        let (old_shown, old_real) = self.resolve(input.get("old_path"))?;
        let (new_shown, new_real) = self.resolve(input.get("new_path"))?;
        if old_real.is_empty() {
            return Err(tool_error("Cannot rename the /memories directory itself"));
        }
        let exists = || tool_error(format!("The destination {new_shown} already exists"));
        if self.stat(&new_real).is_ok() {
            return Err(exists());
        }
        let request = Request::Rename {
            from: old_real,
            to: new_real,
        };
        match self.ask(request) {
            Ok(_) => Ok(format!("Successfully renamed {old_shown} to {new_shown}")),
            Err(f) => Err(match f.detail {
                Detail::NotFound { .. } => {
                    tool_error(format!("The path {old_shown} does not exist"))
                }
                Detail::Exists { .. } => exists(),
                _ => self.failure(&f, old_shown),
            }),
        }
    }

    /// The handler's checks before an edit: the path exists and is a file.
    fn must_be_file(&self, shown: &str, real: &str) -> Result<(), Raised> {
        match self.stat(real) {
            Ok(entry) if entry.kind == EntryKind::File => Ok(()),
            Ok(_) => Err(tool_error(format!("The path {shown} is not a file."))),
            Err(f) if is_missing(&f) => Err(tool_error(format!(
                "The path {shown} does not exist. Please provide a valid path."
            ))),
            Err(f) => Err(self.failure(&f, shown)),
        }
    }

    /// The handler's `_validate_path`: the path as given, and where it
    /// leads in the store ("" for the root).
    fn resolve<'a>(&self, field: Option<&'a Value>) -> Result<(&'a str, String), Raised> {
        let Some(Value::String(path)) = field else {
            return Err(attribute_error(field, "startswith"));
        };
        let Some(relative) = path.strip_prefix(ROOT) else {
            return Err(tool_error(format!(
                "Path must start with /memories, got: {path}"
            )));
        };
        if relative.contains('\0') {
            return Err(exception("ValueError", "embedded null byte"));
        }
        let relative = relative.trim_start_matches('/');
        match self.walk(Place::Store(Vec::new()), relative, &mut HashMap::new(), 0) {
            Ok(Place::Store(names)) => Ok((path, names.join("/"))),
            Ok(_) => Err(tool_error(format!(
                "Path {path} would escape /memories directory"
            ))),
            Err(Loop(at)) => Err(exception(
                "RuntimeError",
                &format!("Symlink loop from {}", py_repr_str(&normalize(&at))),
            )),
        }
    }

    /// Python's `realpath` (`posixpath._joinrealpath`) in the tool's
    /// namespace: `rest`'s names taken from `place` one by one, each
    /// symlink in the store followed where it is met; `seen` holds the
    /// links being followed (`None`) or followed already.
    fn walk(
        &self,
        mut place: Place,
        rest: &str,
        seen: &mut HashMap<Place, Option<Place>>,
        nested: usize,
    ) -> Result<Place, Loop> {
        if rest.starts_with('/') {
            place = Place::Beyond;
        }
        let names: Vec<&str> = rest.split('/').collect();
        for (i, name) in names.iter().enumerate() {
            let after = || names[i + 1..].join("/");
            match *name {
                "" | "." => continue,
                ".." => {
                    place = place.parent();
                    continue;
                }
                _ => {}
            }
            let next = place.clone().child(name);
            let target = match &next {
                Place::Store(names) => self.link_target(&names.join("/")),
                Place::Outside(_) | Place::Beyond => None,
            };
            let Some(target) = target else {
                place = next;
                continue;
            };
            match seen.get(&next) {
                Some(Some(resolved)) => {
                    place = resolved.clone();
                    continue;
                }
                Some(None) => return Err(Loop(format!("{}/{}", next.shown(), after()))),
                None if nested >= MAX_NESTED_LINKS => {
                    return Err(Loop(format!("{}/{}", next.shown(), after())));
                }
                None => {}
            }
            seen.insert(next.clone(), None);
            match self.walk(place, &target, seen, nested + 1) {
                Ok(resolved) => {
                    seen.insert(next, Some(resolved.clone()));
                    place = resolved;
                }
                Err(Loop(at)) => return Err(Loop(format!("{at}/{}", after()))),
            }
        }
        Ok(place)
    }

    /// A symlink's target, if `path` is one.
    fn link_target(&self, path: &str) -> Option<String> {
        match self.stat(path) {
            Ok(Entry {
                kind: EntryKind::Link { target },
                ..
            }) if !path.is_empty() => Some(target),
            _ => None,
        }
    }

    /// How the handler fails when reading a file fails.
    fn read_failure(&self, failure: &Failure, shown: &str) -> Raised {
        match failure.detail {
            Detail::NotFound { .. } => tool_error(format!(
                "The file {shown} no longer exists (may have been deleted or renamed concurrently)."
            )),
            _ => self.failure(failure, shown),
        }
    }

    /// What the handler would raise where an operation failed.
    fn failure(&self, failure: &Failure, shown: &str) -> Raised {
        let errno = || os_error(failure.error.errno);
        match &failure.detail {
            Detail::NotFound { .. }
            | Detail::Exists { .. }
            | Detail::IsFolder { .. }
            | Detail::NotFolder { .. }
            | Detail::InvalidPath { .. }
            | Detail::InvalidInput
            | Detail::NoMatch { .. }
            | Detail::NotUnique { .. }
            | Detail::BadLine { .. }
            | Detail::Io { .. } => errno(),
            // As the mount answers a write into a view.
            Detail::ReadOnly { .. } => os_error(libc::EROFS),
            Detail::NotText { .. } => exception(
                "UnicodeDecodeError",
                &format!("{shown} is not valid UTF-8 text"),
            ),
            Detail::TooBig { limit, .. } if *limit > 0 => tool_error(format!(
                "The file {shown} would be larger than the size cap of {limit} bytes."
            )),
            Detail::TooBig { .. } => errno(),
            Detail::Conflict { .. } => tool_error(format!(
                "The file {shown} changed while it was being edited, or is open for writing; view it again and retry."
            )),
            // mnemofs's own refusals (a scope this session may not give,
            // a folder holding other scopes' memories): the reason, which
            // the reference handler has no case for.
            Detail::OtherScope
            | Detail::Ambiguous { .. }
            | Detail::Unavailable
            | Detail::Index
            | Detail::Remote => tool_error(failure.error.message.clone()),
        }
    }

    /// Runs one request; a failure comes back with its details.
    fn ask(&self, request: Request) -> Result<Response, Failure> {
        let checked = Request::Checked {
            request: Box::new(request),
        };
        match (self.call)(checked) {
            Ok(Response::Checked { result }) => result.map(|response| *response),
            Ok(other) => Err(unexpected(&other)),
            Err(e) => Err(Failure::from(&e)),
        }
    }

    fn stat(&self, path: &str) -> Result<Entry, Failure> {
        match self.ask(Request::Stat { path: path.into() })? {
            Response::Entry { entry } => Ok(entry),
            other => Err(unexpected(&other)),
        }
    }

    fn list(&self, path: &str) -> Result<Vec<Entry>, Failure> {
        let request = Request::List {
            path: path.into(),
            depth: 1,
        };
        match self.ask(request)? {
            Response::Entries { entries } => Ok(entries),
            other => Err(unexpected(&other)),
        }
    }

    fn read(&self, path: &str) -> Result<String, Failure> {
        match self.ask(Request::Read { path: path.into() })? {
            Response::Text { text } => Ok(text),
            other => Err(unexpected(&other)),
        }
    }
}

/// An answer that does not fit the request, as a failure.
fn unexpected(response: &Response) -> Failure {
    let e = ops::Error::Unavailable(format!("unexpected answer: {response:?}"));
    Failure {
        error: WireError::from(&e),
        detail: e.detail(),
    }
}

/// Nothing there, as Python's `exists()` sees it.
fn is_missing(failure: &Failure) -> bool {
    matches!(
        failure.detail,
        Detail::NotFound { .. } | Detail::NotFolder { .. }
    )
}

fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, name)| name)
}

/// A line as the handler numbers it.
fn numbered(number: usize, line: &str) -> String {
    format!("{number:>LINE_NUMBER_WIDTH$}\t{line}")
}

/// The handler's `_format_file_size`: `0B`, `512B`, `4K`, `1.5K`, `2.3M`.
fn format_file_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".into();
    }
    let units = ["B", "K", "M", "G"];
    let i = ((63 - bytes.leading_zeros()) / 10).min(3);
    let size = bytes as f64 / 1024f64.powi(i as i32);
    let unit = units[i as usize];
    if size == size.trunc() {
        format!("{}{unit}", size as u64)
    } else {
        format!("{size:.1}{unit}")
    }
}

/// `lines[start:end]` for the handler's `view_range`: `[first, last]`,
/// 1-based, `-1` for the end; Python's slicing and its `TypeError`s.
fn view_range(range: Option<&Value>, lines: usize) -> Result<(usize, usize), Raised> {
    let whole = Ok((0, lines));
    let (first, last) = match range {
        None | Some(Value::Null) => return whole,
        Some(Value::Array(items)) if items.len() != 2 => return whole,
        Some(Value::Array(items)) => match (lax_int(Some(&items[0])), lax_int(Some(&items[1]))) {
            (PyNumber::Int(a), PyNumber::Int(b)) => (PyNumber::Int(a), PyNumber::Int(b)),
            _ => (py_number(&items[0]), py_number(&items[1])),
        },
        Some(Value::String(s)) if s.chars().count() == 2 => {
            return Err(exception(
                "TypeError",
                "'>' not supported between instances of 'str' and 'int'",
            ));
        }
        Some(Value::String(_)) => return whole,
        Some(Value::Object(map)) if map.len() == 2 => {
            return Err(Raised::Exception("KeyError(0)".into()));
        }
        Some(Value::Object(_)) => return whole,
        Some(Value::Bool(false)) => return whole,
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => return whole,
        Some(value @ (Value::Bool(true) | Value::Number(_))) => {
            return Err(exception(
                "TypeError",
                &format!("object of type '{}' has no len()", py_type(Some(value))),
            ));
        }
    };
    let slice_error = || {
        exception(
            "TypeError",
            "slice indices must be integers or None or have an __index__ method",
        )
    };
    // max(1, first) - 1
    let start = match first {
        PyNumber::Int(a) => a.max(1) - 1,
        PyNumber::Float(a) if a <= 1.0 => 0,
        PyNumber::Float(_) => return Err(slice_error()),
        PyNumber::Other(value) => {
            return Err(exception(
                "TypeError",
                &format!(
                    "'>' not supported between instances of '{}' and 'int'",
                    py_type(value)
                ),
            ));
        }
    };
    let end = match last {
        PyNumber::Int(-1) => lines as i64,
        PyNumber::Int(b) if b < 0 => (lines as i64 + b).max(0),
        PyNumber::Int(b) => b,
        PyNumber::Other(None | Some(Value::Null)) => lines as i64,
        PyNumber::Float(_) | PyNumber::Other(_) => return Err(slice_error()),
    };
    let clamp = |i: i64| usize::try_from(i).unwrap_or(0).min(lines);
    Ok((clamp(start), clamp(end)))
}

/// A JSON value where Python expects an int.
#[derive(Debug, PartialEq)]
enum PyNumber<'a> {
    Int(i64),
    Float(f64),
    /// Anything else (`None` for a missing field).
    Other(Option<&'a Value>),
}

/// The value as Python has it (a bool is an int).
fn py_number(value: &Value) -> PyNumber<'_> {
    match value {
        Value::Bool(b) => PyNumber::Int(i64::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => PyNumber::Int(i),
            (None, Some(_), _) => PyNumber::Int(i64::MAX),
            (None, None, Some(f)) => PyNumber::Float(f),
            (None, None, None) => PyNumber::Other(Some(value)),
        },
        other => PyNumber::Other(Some(other)),
    }
}

/// The value as the SDK's lax model construction hands an int field over:
/// integral floats and numeric strings become ints.
fn lax_int(value: Option<&Value>) -> PyNumber<'_> {
    let Some(value) = value else {
        return PyNumber::Other(None);
    };
    match py_number(value) {
        PyNumber::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => PyNumber::Int(f as i64),
        PyNumber::Other(Some(Value::String(s))) => {
            let s = s.trim();
            let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
            let underscores_between_digits = !digits.starts_with('_')
                && !digits.ends_with('_')
                && !digits.contains("__")
                && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
            if underscores_between_digits && let Ok(i) = s.replace('_', "").parse::<i64>() {
                return PyNumber::Int(i);
            }
            match s.parse::<f64>() {
                Ok(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => PyNumber::Int(f as i64),
                _ => PyNumber::Other(Some(value)),
            }
        }
        number => number,
    }
}

/// Python's type name for a JSON value (a missing field is `None`).
fn py_type(value: Option<&Value>) -> &'static str {
    match value {
        None | Some(Value::Null) => "NoneType",
        Some(Value::Bool(_)) => "bool",
        Some(Value::Number(n)) if n.is_f64() => "float",
        Some(Value::Number(_)) => "int",
        Some(Value::String(_)) => "str",
        Some(Value::Array(_)) => "list",
        Some(Value::Object(_)) => "dict",
    }
}

/// Python's `str()` of a JSON value.
fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr()` of a JSON value.
fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => py_float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => py_repr_str(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// Python's `repr()` of a float: the shortest digits that round-trip,
/// positional from 1e-4 up to 1e16, else with an exponent (`1e+16`).
fn py_float_repr(f: f64) -> String {
    if !f.is_finite() {
        return match (f.is_nan(), f > 0.0) {
            (true, _) => "nan".into(),
            (false, true) => "inf".into(),
            (false, false) => "-inf".into(),
        };
    }
    let scientific = format!("{:e}", f.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let point = exponent + 1;
    if !(-3..=16).contains(&point) {
        let mantissa = match digits.split_at(1) {
            (first, "") => first.to_string(),
            (first, rest) => format!("{first}.{rest}"),
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs());
    }
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    };
    format!("{sign}{body}")
}

/// Python's `repr()` of a string.
fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if py_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character: not a control, format,
/// private-use or separator character (space aside). Unassigned code
/// points, which Python escapes too, are not known here.
fn py_printable(c: char) -> bool {
    let n = c as u32;
    let format = matches!(
        n,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private = matches!(n, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let noncharacter = n & 0xFFFE == 0xFFFE || (0xFDD0..=0xFDEF).contains(&n);
    c == ' ' || !(c.is_control() || c.is_whitespace() || format || private || noncharacter)
}

/// `os.path.normpath` of a tool path, as `Path.resolve()` reports a loop.
fn normalize(path: &str) -> String {
    let mut names: Vec<&str> = Vec::new();
    for name in path.split('/') {
        match name {
            "" | "." => {}
            ".." => {
                names.pop();
            }
            name => names.push(name),
        }
    }
    format!("/{}", names.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The answers `serve` gives to `input`, with `call` for the operations.
    fn answers(input: &[u8], call: impl Fn(Request) -> ops::Result<Response>) -> Vec<Value> {
        let mut out = Vec::new();
        serve(input, &mut out, call).expect("serve");
        String::from_utf8(out)
            .expect("utf-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
            .collect()
    }

    fn no_store(_: Request) -> ops::Result<Response> {
        Err(ops::Error::Unavailable("no store here".into()))
    }

    fn error(content: &str) -> Value {
        json!({"content": content, "is_error": true})
    }

    #[test]
    fn every_line_gets_one_answer_and_bad_ones_do_not_stop_the_loop() {
        let got = answers(
            b"garbage\n\n[1]\n{\"command\": \"frob\"}\n\xff\n{\"command\": 5}",
            no_store,
        );
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(
            got[0],
            error("Invalid JSON input: expected value at line 1 column 1")
        );
        assert_eq!(
            got[1],
            error("AttributeError(\"'list' object has no attribute 'command'\")")
        );
        assert_eq!(
            got[2],
            error("NotImplementedError('Unknown command: frob')")
        );
        assert!(
            got[3]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Invalid JSON input: "))
        );
        assert_eq!(got[4], error("NotImplementedError('Unknown command: 5')"));
    }

    #[test]
    fn an_object_may_span_lines_and_one_cut_short_is_answered_when_the_next_arrives() {
        let pretty = b"{\n  \"command\": \"frob\",\n  \"path\": \"/memories\"\n}";
        assert_eq!(
            answers(pretty, no_store),
            [error("NotImplementedError('Unknown command: frob')")]
        );
        let got = answers(
            b"{\"command\": \"view\", \"path\": \n{\"command\": \"x\"}\n{",
            no_store,
        );
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(
            got[0]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Invalid JSON input: "))
        );
        assert_eq!(got[1], error("NotImplementedError('Unknown command: x')"));
        assert!(
            got[2]["content"]
                .as_str()
                .is_some_and(|c| c.contains("EOF"))
        );
        assert!(answers(b"", no_store).is_empty());
        assert!(answers(b"\n \n", no_store).is_empty());
    }

    #[test]
    fn paths_are_checked_before_anything_is_asked() {
        let got = answers(
            br#"{"command": "view", "path": "/etc/passwd"}
{"command": "view"}
{"command": "delete", "path": "/memories/a\u0000b"}
{"command": "view", "path": "/memories/../x"}
"#,
            |request| panic!("nothing to ask: {request:?}"),
        );
        assert_eq!(
            got,
            [
                error("Path must start with /memories, got: /etc/passwd"),
                error("AttributeError(\"'NoneType' object has no attribute 'startswith'\")"),
                error("ValueError('embedded null byte')"),
                error("Path /memories/../x would escape /memories directory"),
            ]
        );
    }

    #[test]
    fn a_failure_to_reach_the_store_is_said() {
        assert_eq!(
            answers(
                br#"{"command": "view", "path": "/memories/a.md"}"#,
                no_store
            ),
            [error("no store here")]
        );
    }

    /// Operations on a temp store, the index in RAM.
    fn store_with(files: &[(&str, &str)]) -> (tempfile::TempDir, ops::Operations) {
        use std::sync::Arc;
        let root = tempfile::tempdir().expect("tempdir");
        for (path, text) in files {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("seed");
        }
        let store = Arc::new(crate::store::Store::open(root.path()).expect("store"));
        let index = crate::index::Index::in_memory(Arc::clone(&store)).expect("index");
        assert!(index.wait_idle(std::time::Duration::from_secs(60)));
        let views = crate::views::Views::new(index.clone());
        let writer = Arc::new(ops::DirectWriter::new(Arc::clone(&store)).with_index(index.clone()));
        let ops = ops::Operations::new(store, index, views, writer, ops::ServedBy::Local);
        (root, ops)
    }

    #[test]
    fn symlinks_and_views_are_followed_as_path_resolve_follows_them() {
        let (root, ops) = store_with(&[
            ("notes/a.md", "---\nid: n-1\n---\nalpha\n"),
            ("notes/b.md", "beta\n"),
        ]);
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, root.path().join(name)).expect("symlink")
        };
        link("notes", "shortcut");
        link("loop", "loop");
        link("/etc", "out");
        let got = answers(
            br#"{"command": "view", "path": "/memories"}
{"command": "view", "path": "/memories/by-id/n-1.md", "view_range": [4, 4]}
{"command": "view", "path": "/memories/shortcut/../shortcut/b.md"}
{"command": "view", "path": "/memories/loop/x"}
{"command": "view", "path": "/memories/out"}
{"command": "str_replace", "path": "/memories/by-id/n-1.md", "old_str": "alpha", "new_str": "ALPHA"}
"#,
            |request| ops.handle(request),
        );
        let size = |path: &str| {
            format_file_size(
                std::fs::metadata(root.path().join(path))
                    .expect("stat")
                    .len(),
            )
        };
        let (top, notes) = (size(""), size("notes"));
        let listing = format!(
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n\
             {top}\t/memories\n{notes}\t/memories/notes/\n22B\t/memories/notes/a.md\n5B\t/memories/notes/b.md\n\
             {notes}\t/memories/shortcut/\n22B\t/memories/shortcut/a.md\n5B\t/memories/shortcut/b.md"
        );
        let ok = |content: &str| json!({"content": content, "is_error": false});
        assert_eq!(
            got,
            [
                ok(&listing),
                ok(
                    "Here's the content of /memories/by-id/n-1.md with line numbers:\n     4\talpha"
                ),
                ok(
                    "Here's the content of /memories/shortcut/../shortcut/b.md with line numbers:\n     1\tbeta\n     2\t"
                ),
                error("RuntimeError(\"Symlink loop from '/memories/loop/x'\")"),
                error("Path /memories/out would escape /memories directory"),
                ok(
                    "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     2\tid: n-1\n     3\t---\n     4\tALPHA\n     5\t"
                ),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.path().join("notes/a.md")).expect("read"),
            "---\nid: n-1\n---\nALPHA\n"
        );
    }

    #[test]
    fn file_sizes_are_written_as_the_reference_writes_them() {
        let cases = [
            (0, "0B"),
            (1, "1B"),
            (1023, "1023B"),
            (1024, "1K"),
            (1280, "1.2K"),
            (1536, "1.5K"),
            (4096, "4K"),
            (1 << 20, "1M"),
            (1_148_576, "1.1M"),
            (3 << 30, "3G"),
            (1 << 40, "1024G"),
        ];
        for (bytes, shown) in cases {
            assert_eq!(format_file_size(bytes), shown, "{bytes}");
        }
    }

    #[test]
    fn values_are_shown_as_python_shows_them() {
        assert_eq!(py_repr_str("plain"), "'plain'");
        assert_eq!(py_repr_str("it's"), "\"it's\"");
        assert_eq!(py_repr_str("a\"b'c"), "'a\"b\\'c'");
        assert_eq!(
            py_repr_str("\\\n\t\0é\u{200b}\u{a0}🙂"),
            "'\\\\\\n\\t\\x00é\\u200b\\xa0🙂'"
        );
        for (f, shown) in [
            (1.5e20, "1.5e+20"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (2.5, "2.5"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (-1.25e-5, "-1.25e-05"),
        ] {
            assert_eq!(py_float_repr(f), shown, "{f}");
        }
        assert_eq!(
            py_repr(&json!([null, true, 3, "x", {"k": [1.0]}])),
            "[None, True, 3, 'x', {'k': [1.0]}]"
        );
        assert_eq!(py_type(Some(&json!(1.0))), "float");
        assert_eq!(py_type(None), "NoneType");
    }

    #[test]
    fn int_fields_are_coerced_as_the_sdk_coerces_them() {
        let lax = |v: Value| match lax_int(Some(&v)) {
            PyNumber::Int(i) => Some(i),
            _ => None,
        };
        assert_eq!(lax(json!("2")), Some(2));
        assert_eq!(lax(json!(" -2 ")), Some(-2));
        assert_eq!(lax(json!("1_000")), Some(1000));
        assert_eq!(lax(json!("2.0")), Some(2));
        assert_eq!(lax(json!(3.0)), Some(3));
        assert_eq!(lax(json!(true)), Some(1));
        assert_eq!(lax(json!("0x10")), None);
        assert_eq!(lax(json!(1.5)), None);
        assert_eq!(lax_int(None), PyNumber::Other(None));
    }

    #[test]
    fn view_ranges_slice_as_python_slices() {
        let range = |v: Value| view_range(Some(&v), 5).ok();
        assert_eq!(view_range(None, 5).ok(), Some((0, 5)));
        assert_eq!(range(json!([2, 3])), Some((1, 3)));
        assert_eq!(range(json!([2, -1])), Some((1, 5)));
        assert_eq!(range(json!([0, 1])), Some((0, 1)));
        assert_eq!(range(json!([-3, -2])), Some((0, 3)));
        assert_eq!(range(json!([9, 20])), Some((5, 5)));
        assert_eq!(range(json!(["2", "3"])), Some((1, 3)));
        assert_eq!(range(json!([2, null])), Some((1, 5)));
        assert_eq!(range(json!([1, 2, 3])), Some((0, 5)));
        assert_eq!(range(json!("123")), Some((0, 5)));
        assert_eq!(
            view_range(Some(&json!([2, "x"])), 5),
            Err(exception(
                "TypeError",
                "slice indices must be integers or None or have an __index__ method"
            ))
        );
        assert_eq!(
            view_range(Some(&json!("12")), 5),
            Err(exception(
                "TypeError",
                "'>' not supported between instances of 'str' and 'int'"
            ))
        );
        assert_eq!(
            view_range(Some(&json!(true)), 5),
            Err(exception("TypeError", "object of type 'bool' has no len()"))
        );
    }

    #[test]
    fn os_errors_are_shown_as_python_raises_them() {
        let repr = |errno| match os_error(errno) {
            Raised::Exception(repr) => repr,
            Raised::Tool(m) => panic!("{m}"),
        };
        assert_eq!(
            repr(libc::ENOENT),
            "FileNotFoundError(2, 'No such file or directory')"
        );
        assert_eq!(
            repr(libc::ENOTDIR),
            "NotADirectoryError(20, 'Not a directory')"
        );
        assert_eq!(
            repr(libc::EACCES),
            "PermissionError(13, 'Permission denied')"
        );
        assert_eq!(repr(libc::EINVAL), "OSError(22, 'Invalid argument')");
    }
}
