//! Claude Code as the summarizer of a session, for `captureMode: summarized`.
//!
//! The checkpoint hook writes its extractive note first, then runs
//! `claude -p` (`$MNEMOFS_CLAUDE`, else `claude` on PATH) to read the
//! session's conversation and answer with a [`SessionSummary`]. The child
//! runs the cheap model (`haiku`), with no tools, no saved session and
//! `--safe-mode`, which leaves out plugins, hooks and MCP servers: a
//! summarizing `claude` that ran the plugin's hooks would checkpoint (and
//! summarize) again. [`CHILD_ENV`], set for the child, makes a `mnemofs
//! brief` or `checkpoint` wired in some other way step aside too.
//!
//! The prompt goes in on stdin (a conversation of 60 KB is past what one
//! argument may hold on some systems), and the answer comes back as the
//! `result` of `--output-format json`. The child has a process group of its
//! own, killed at [`TIMEOUT`] and when it ends, so nothing it started
//! outlives the hook.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::ops::SessionSummary;

/// Set (to `1`) for the summarizing `claude`: a `mnemofs brief` or
/// `mnemofs checkpoint` that sees it is a hook of that child and does
/// nothing.
pub const CHILD_ENV: &str = "MNEMOFS_CHECKPOINT_CHILD";
/// The `claude` binary to run instead of the one on PATH.
pub const CLAUDE_ENV: &str = "MNEMOFS_CLAUDE";
/// The longest the summarizing `claude` may take: well inside the 600 s
/// Claude Code gives a hook.
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// The most conversation, in bytes, the model is shown: the end of it.
pub const CONVERSATION_BYTES: usize = 60 * 1024;
/// The model asked, by Claude Code's alias.
const MODEL: &str = "haiku";

/// The system prompt of the summarizing `claude`, in place of Claude
/// Code's own (which describes tools it will not have).
pub const SYSTEM_PROMPT: &str = "You write mnemofs session notes: the summary of a work session \
between a user and Claude Code that lets the work be picked up later. You answer with one JSON \
object and nothing else.";

/// Whether this process runs as a hook of the summarizing `claude`.
pub fn is_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Why no summary came.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// No `claude` binary to run.
    #[error("no `{0}` to run (install Claude Code, or set {CLAUDE_ENV})")]
    NoClaude(String),
    /// The child did not end in time, and was killed.
    #[error("`claude -p` did not answer within {0:?}")]
    TimedOut(Duration),
    /// The child could not be run, or ended with an error.
    #[error("`claude -p` failed: {0}")]
    Failed(String),
    /// The answer is not a session summary.
    #[error("`claude -p` answered, but not with a session summary: {0}")]
    Unreadable(String),
}

/// What the model is asked, with the conversation's end.
pub fn prompt(conversation: &str) -> String {
    let headings = crate::ops::SUMMARY_SECTIONS
        .iter()
        .map(|(h, _)| format!("## {h}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Summarize the work session below for its session note. Answer with one JSON object \
and nothing else, of this shape:\n{shape}\n\nThe note's sections ({headings}) are made from it. \
Use [] for a list with nothing in it; at most 10 items a list, one sentence an item. Write in \
the language of the conversation, and say only what the conversation says.\n\n\
<conversation>\n{conversation}\n</conversation>\n",
        shape = SessionSummary::SHAPE,
    )
}

/// The `claude` to run: `$MNEMOFS_CLAUDE`, else `claude` on PATH.
fn claude_binary() -> Result<PathBuf, SummaryError> {
    if let Some(bin) = std::env::var_os(CLAUDE_ENV).filter(|b| !b.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("claude"))
        .find(|file| is_executable(file))
        .ok_or_else(|| SummaryError::NoClaude("claude".into()))
}

fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Asks `claude -p` for the summary of `conversation`, run in `cwd`.
pub fn summarize(conversation: &str, cwd: Option<&Path>) -> Result<SessionSummary, SummaryError> {
    let bin = claude_binary()?;
    let mut cmd = Command::new(&bin);
    cmd.args(["-p", "--model", MODEL, "--output-format", "json"])
        .args(["--tools", "", "--safe-mode", "--no-session-persistence"])
        .args(["--disable-slash-commands", "--system-prompt", SYSTEM_PROMPT])
        .env(CHILD_ENV, "1")
        // Claude Code tells its children they run inside it; this one is
        // a session of its own.
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_CODE_ENTRYPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = cwd.filter(|c| c.is_dir()) {
        cmd.current_dir(cwd);
    }
    let stdout = run(cmd, &bin, prompt(conversation), TIMEOUT)?;
    let answer = result_text(&stdout)?;
    SessionSummary::from_answer(&answer).map_err(SummaryError::Unreadable)
}

/// Runs `cmd` with `input` on stdin; its stdout, once it ended well.
fn run(
    mut cmd: Command,
    bin: &Path,
    input: String,
    timeout: Duration,
) -> Result<String, SummaryError> {
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => SummaryError::NoClaude(bin.display().to_string()),
        _ => SummaryError::Failed(format!("cannot run {}: {e}", bin.display())),
    })?;
    let group = child.id() as libc::pid_t;
    let kill_group = || {
        // SAFETY: kill(2) on the group the child leads; ESRCH once gone.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    };
    let mut stdin = child.stdin.take();
    let writer = std::thread::Builder::new()
        .name("claude-stdin".into())
        .spawn(move || {
            if let Some(stdin) = stdin.as_mut() {
                // A child that ends without reading all is told by its status.
                let _ = stdin.write_all(input.as_bytes());
            }
        });
    let reader = |pipe: Option<Box<dyn Read + Send>>, name: &str| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut text = String::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_string(&mut text);
                }
                text
            })
    };
    let out = reader(
        child.stdout.take().map(|p| Box::new(p) as _),
        "claude-stdout",
    );
    let err = reader(
        child.stderr.take().map(|p| Box::new(p) as _),
        "claude-stderr",
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                kill_group();
                let _ = child.wait();
                return Err(SummaryError::Failed(format!("cannot wait for it: {e}")));
            }
        }
    };
    // Whatever the child left running goes with it, and the pipes close.
    kill_group();
    let _ = child.wait();
    let joined = |handle: std::io::Result<std::thread::JoinHandle<String>>| {
        handle.ok().and_then(|h| h.join().ok()).unwrap_or_default()
    };
    if let Ok(writer) = writer {
        let _ = writer.join();
    }
    let stdout = joined(out);
    let stderr = joined(err);
    match status {
        None => Err(SummaryError::TimedOut(timeout)),
        Some(s) if s.success() => Ok(stdout),
        Some(s) => {
            let said = stderr
                .lines()
                .chain(stdout.lines())
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("no output")
                .trim()
                .to_string();
            Err(SummaryError::Failed(format!("{s}: {said}")))
        }
    }
}

/// The model's text in the single result `--output-format json` prints.
fn result_text(stdout: &str) -> Result<String, SummaryError> {
    let result: serde_json::Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        SummaryError::Unreadable(format!("not the JSON of --output-format json: {e}"))
    })?;
    let text = result["result"].as_str().unwrap_or_default().to_string();
    if result["is_error"] == serde_json::Value::Bool(true) {
        let text = if text.is_empty() {
            result["subtype"].as_str().unwrap_or("error").to_string()
        } else {
            text
        };
        return Err(SummaryError::Failed(text));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_holds_the_shape_and_the_conversation() {
        let p = prompt("User: ship it");
        assert!(p.contains(SessionSummary::SHAPE));
        assert!(p.contains("## Summary, ## Decisions, ## Next steps, ## Problems"));
        assert!(p.ends_with("<conversation>\nUser: ship it\n</conversation>\n"));
    }

    #[test]
    fn the_result_of_json_output_is_read_and_its_errors_said() {
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"{\"summary\":\"x\"}"}"#;
        assert_eq!(result_text(ok).unwrap(), r#"{"summary":"x"}"#);
        let failed =
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key"}"#;
        assert!(
            matches!(result_text(failed), Err(SummaryError::Failed(m)) if m == "Invalid API key")
        );
        assert!(matches!(
            result_text("oops"),
            Err(SummaryError::Unreadable(_))
        ));
    }

    #[test]
    fn a_child_that_hangs_is_killed_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("(sleep 2; touch {}) & sleep 30", marker.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let started = Instant::now();
        let ran = run(
            cmd,
            Path::new("/bin/sh"),
            String::new(),
            Duration::from_millis(300),
        );
        assert!(matches!(ran, Err(SummaryError::TimedOut(_))), "{ran:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_secs(3));
        assert!(!marker.exists(), "a grandchild outlived the timeout");
    }

    #[test]
    fn a_child_that_fails_is_told_by_its_last_line() {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("cat >/dev/null; echo first >&2; echo 'it broke' >&2; exit 3")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let ran = run(
            cmd,
            Path::new("/bin/sh"),
            "x".repeat(200_000),
            Duration::from_secs(10),
        );
        assert!(
            matches!(&ran, Err(SummaryError::Failed(m)) if m.ends_with("it broke")),
            "{ran:?}"
        );
        let missing = run(
            Command::new("/nonexistent/claude"),
            Path::new("/nonexistent/claude"),
            String::new(),
            Duration::from_secs(1),
        );
        assert!(
            matches!(missing, Err(SummaryError::NoClaude(_))),
            "{missing:?}"
        );
    }
}
