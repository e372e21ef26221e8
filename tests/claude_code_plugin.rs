//! The Claude Code plugin (`plugins/claude-code/`) under the real Claude Code
//! CLI, pinned to the release it was written against.
//!
//! The CLI is installed once with npm into `~/.cache/mnemofs-claude-code`
//! (never into the repository) and reused; without node or npm, or when the
//! install fails, the test prints one line and passes. Each `claude` runs
//! in a temp HOME with the plugin installed from the repository as a local
//! marketplace, the debug `mnemofs` first on PATH, and a scripted Messages
//! API (`tests/claude_mock.py`) on 127.0.0.1 that records what the model was
//! shown. Every `claude` runs in a process group of its own under a
//! timeout, and the group is killed when it ends, so no MCP server or hook
//! outlives it.

mod common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The Claude Code release the plugin was checked against.
const CLAUDE_CODE_VERSION: &str = "2.1.197";
/// The prefix Claude Code gives the plugin's MCP tools (`mcp__plugin_<plugin>_<server>`).
const TOOL_PREFIX: &str = "mcp__plugin_mnemofs_mnemofs";
/// The output style's name in settings (`<plugin>:<style>`).
const OUTPUT_STYLE: &str = "mnemofs:mnemofs";
/// The longest a `claude` run may take.
const CLAUDE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest the npm install may take.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn plugin_dir() -> PathBuf {
    repo().join("plugins/claude-code")
}

/// What a finished command left: its exit code (None when killed) and output.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` in a process group of its own with stdout and stderr in files
/// under `dir`, kills the group after `timeout` and once it has ended.
fn run(mut cmd: Command, dir: &Path, name: &str, timeout: Duration) -> Ran {
    let out_path = dir.join(format!("{name}.out"));
    let err_path = dir.join(format!("{name}.err"));
    cmd.stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).expect("stdout file"))
        .stderr(fs::File::create(&err_path).expect("stderr file"))
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: cannot start: {e}"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().expect("wait") {
            Some(status) => break Some(status),
            None if Instant::now() >= deadline => break None,
            None => sleep(Duration::from_millis(50)),
        }
    };
    kill_group(&mut child);
    let ran = Ran {
        code: status.and_then(|s| s.code()),
        stdout: fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: fs::read_to_string(&err_path).unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "{name} took more than {timeout:?}; stdout:\n{}\nstderr:\n{}",
        ran.stdout,
        ran.stderr
    );
    ran
}

fn kill_group(child: &mut Child) {
    // SAFETY: kill(2) on the group the child leads; ESRCH when it is gone.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.wait();
}

/// The `claude` binary of the pinned release, installed if need be, or
/// None (after one printed line) when it cannot be had.
fn claude_code() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let cache = PathBuf::from(home).join(".cache/mnemofs-claude-code");
    let claude = cache.join("node_modules/.bin/claude");
    // One install at a time: a test that ran `claude` while another's npm
    // was still writing it failed with "Text file busy".
    let _lock = common::locked_beside(&cache);
    let installed = || {
        let manifest = cache.join("node_modules/@anthropic-ai/claude-code/package.json");
        let version = fs::read_to_string(manifest)
            .ok()
            .and_then(|m| serde_json::from_str::<Value>(&m).ok())
            .and_then(|m| m["version"].as_str().map(str::to_owned));
        claude.exists() && version.as_deref() == Some(CLAUDE_CODE_VERSION)
    };
    if installed() {
        return Some(claude);
    }
    for tool in ["node", "npm"] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            println!("skipped: no {tool} to install Claude Code {CLAUDE_CODE_VERSION} with");
            return None;
        }
    }
    fs::create_dir_all(&cache).ok()?;
    let mut npm = Command::new("npm");
    npm.arg("install")
        .arg("--prefix")
        .arg(&cache)
        .args(["--no-audit", "--no-fund", "--loglevel=error"])
        .arg(format!("@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"));
    let ran = run(npm, &cache, "npm-install", INSTALL_TIMEOUT);
    if ran.code != Some(0) || !installed() {
        let last = ran.stderr.lines().last().unwrap_or("no output");
        println!("skipped: npm could not install Claude Code {CLAUDE_CODE_VERSION}: {last}");
        return None;
    }
    Some(claude)
}

/// The scripted Messages API, stopped on drop.
struct Mock {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Mock {
    fn start(dir: &Path) -> Mock {
        let log = dir.join("requests.jsonl");
        let port_file = dir.join("mock.port");
        let mut child = Command::new("python3")
            .arg(repo().join("tests/claude_mock.py"))
            .arg(&log)
            .arg(&port_file)
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 runs the mock");
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Ok(port) = fs::read_to_string(&port_file) {
                break port;
            }
            if Instant::now() >= deadline || child.try_wait().ok().flatten().is_some() {
                let _ = child.kill();
                panic!("the mock did not start");
            }
            sleep(Duration::from_millis(50));
        };
        Mock {
            child,
            url: format!("http://127.0.0.1:{}", port.trim()),
            log,
        }
    }

    /// The requests recorded since the last call, and forgets them.
    fn take(&self) -> Vec<Value> {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        fs::write(&self.log, "").expect("clear the mock's log");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("a recorded request"))
            .collect()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temp HOME with the plugin installed, a store, a project and the mock.
struct Session {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    project: PathBuf,
    store: PathBuf,
    claude: PathBuf,
    mock: Mock,
}

impl Session {
    fn new(claude: PathBuf) -> Session {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().to_path_buf();
        let home = root.join("home");
        let project = root.join("project");
        let store = home.join(".local/share/mnemofs/store");
        for dir in [&home, &project, &store, &root.join("runtime")] {
            fs::create_dir_all(dir).expect("mkdir");
        }
        fs::set_permissions(
            root.join("runtime"),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .expect("chmod runtime");
        let mock = Mock::start(&root);
        Session {
            _tmp: tmp,
            root,
            home,
            project,
            store,
            claude,
            mock,
        }
    }

    /// A command with only the environment the session gives it: the temp
    /// HOME and XDG dirs, the debug mnemofs first on PATH, the mock as the API.
    fn command(&self, program: &Path) -> Command {
        let bin_dir = Path::new(common::bin()).parent().expect("bin dir");
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .current_dir(&self.project)
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("XDG_RUNTIME_DIR", self.root.join("runtime"))
            .env("ANTHROPIC_API_KEY", "sk-ant-test-key-for-the-mock")
            .env("ANTHROPIC_BASE_URL", &self.mock.url)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        if let Some(tmpdir) = std::env::var_os("TMPDIR") {
            cmd.env("TMPDIR", tmpdir);
        }
        cmd
    }

    fn claude(&self, name: &str, args: &[&str]) -> Ran {
        self.claude_with(name, args, &[])
    }

    /// [`Session::claude`] with more environment variables.
    fn claude_with(&self, name: &str, args: &[&str], env: &[(&str, &Path)]) -> Ran {
        let mut cmd = self.command(&self.claude);
        cmd.args(args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        let ran = run(cmd, &self.root, name, CLAUDE_TIMEOUT);
        assert_eq!(
            ran.code,
            Some(0),
            "claude {args:?} failed:\n{}\n{}",
            ran.stdout,
            ran.stderr
        );
        ran
    }

    /// `claude -p PROMPT` with stream-json output: its events, and the
    /// requests the model got.
    fn prompt(&self, name: &str, prompt: &str, extra: &[&str]) -> (Vec<Value>, Vec<Value>, Ran) {
        let mut args = vec!["-p", prompt, "--output-format", "stream-json", "--verbose"];
        args.extend_from_slice(extra);
        let ran = self.claude(name, &args);
        let events = ran
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (events, self.mock.take(), ran)
    }

    fn mnemofs(&self, args: &[&str]) -> String {
        let mut cmd = self.command(Path::new(common::bin()));
        cmd.args(args);
        let ran = run(cmd, &self.root, "mnemofs", Duration::from_secs(30));
        assert_eq!(ran.code, Some(0), "mnemofs {args:?}: {}", ran.stderr);
        ran.stdout
    }

    fn project_settings(&self, settings: &Value) {
        fs::create_dir_all(self.project.join(".claude")).expect("mkdir .claude");
        fs::write(
            self.project.join(".claude/settings.json"),
            serde_json::to_string_pretty(settings).expect("json"),
        )
        .expect("write settings");
    }

    /// What accepting the workspace trust dialog once records.
    fn trust_project(&self) {
        let path = self.home.join(".claude.json");
        let mut config: Value = fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!({}));
        let key = self.project.to_str().expect("utf-8 path");
        config["projects"][key]["hasTrustDialogAccepted"] = json!(true);
        fs::write(&path, config.to_string()).expect("write .claude.json");
    }
}

/// The main-loop requests: those offered the plugin's tools.
fn main_requests(requests: &[Value]) -> Vec<&Value> {
    requests
        .iter()
        .filter(|r| !tool_names(r).is_empty())
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with(TOOL_PREFIX))
        .map(str::to_owned)
        .collect()
}

fn system_text(request: &Value) -> String {
    match &request["system"] {
        Value::String(s) => s.clone(),
        other => other
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn init_event(events: &[Value]) -> &Value {
    events
        .iter()
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .expect("an init event")
}

/// The tool results Claude Code sent back to the model, as text, with
/// whether each was an error.
fn tool_results(events: &[Value]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "user")
        .flat_map(|e| {
            e["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (b["is_error"] == json!(true), text)
        })
        .collect()
}

/// A line of the output style's own text, to find in a system prompt.
fn output_style_line() -> String {
    let style = fs::read_to_string(plugin_dir().join("output-styles/mnemofs.md")).expect("style");
    style
        .lines()
        .find(|l| l.starts_with("- **"))
        .expect("a rule in the output style")
        .to_owned()
}

#[test]
fn plugin_in_claude_code() {
    let started = Instant::now();
    let Some(claude) = claude_code() else { return };
    if !Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        println!("skipped: no python3 to run the scripted Messages API");
        return;
    }
    let session = Session::new(claude);

    // The manifests pass the CLI's own validation.
    for dir in [plugin_dir(), repo()] {
        let dir = dir.to_str().expect("utf-8 path");
        let ran = session.claude("validate", &["plugin", "validate", dir]);
        assert!(ran.stdout.contains("Validation passed"), "{}", ran.stdout);
        assert!(!ran.stdout.contains("warning"), "{}", ran.stdout);
    }

    // Installed the way the README says, from the repository as a marketplace.
    session.claude(
        "marketplace",
        &[
            "plugin",
            "marketplace",
            "add",
            repo().to_str().expect("utf-8"),
        ],
    );
    session.claude("install", &["plugin", "install", "mnemofs@mnemofs"]);
    let list = session.claude("list", &["plugin", "list"]);
    assert!(list.stdout.contains("mnemofs@mnemofs"), "{}", list.stdout);

    let decision = "Keep the index in tantivy";
    session.mnemofs(&[
        "write",
        "Chosen for its speed and because it is embedded.",
        "--title",
        decision,
        "--type",
        "decision",
        "--status",
        "open",
    ]);

    // No project settings: the brief, the skills and the tools, no style.
    let (events, requests, _) = session.prompt("plain", "What did we decide?", &[]);
    let main = main_requests(&requests);
    assert!(!main.is_empty(), "no request offered the plugin's tools");
    let first = main[0];
    assert!(
        first["messages"].to_string().contains(decision),
        "the SessionStart brief is not in the model's context: {}",
        first["messages"]
    );
    assert!(
        first["messages"].to_string().contains(NOT_CONFIGURED),
        "the first-run nudge is not in the model's context: {}",
        first["messages"]
    );
    let tools = tool_names(first);
    for tool in [
        "search", "read", "write", "edit", "context", "recent", "list", "brief",
    ] {
        assert!(
            tools.contains(&format!("{TOOL_PREFIX}__{tool}")),
            "{tool} is not offered: {tools:?}"
        );
    }
    let init = init_event(&events);
    for skill in [
        "mnemofs:remember",
        "mnemofs:status",
        "mnemofs:setup",
        "mnemofs:share",
    ] {
        assert!(
            init["skills"]
                .as_array()
                .is_some_and(|s| s.contains(&json!(skill))),
            "{skill} is not offered: {}",
            init["skills"]
        );
    }
    let rule = output_style_line();
    assert!(!system_text(first).contains(&rule));

    // The example settings in a project never trusted: the style is on, but
    // Claude Code ignores the project's permissions, so a call is refused...
    let example: Value = serde_json::from_str(
        &fs::read_to_string(plugin_dir().join("settings.example.json")).expect("example"),
    )
    .expect("settings.example.json is JSON");
    assert_eq!(example["outputStyle"], json!(OUTPUT_STYLE));
    session.project_settings(&example);
    let (events, requests, ran) = session.prompt("untrusted", "CALL-SEARCH tantivy index", &[]);
    assert_eq!(init_event(&events)["output_style"], json!(OUTPUT_STYLE));
    let main = main_requests(&requests);
    assert!(
        system_text(main[0]).contains(&rule),
        "the output style is not in the system prompt"
    );
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(true, text)] if text.contains("haven't granted")),
        "{results:?}"
    );
    assert!(ran.stderr.contains("not been trusted"), "{}", ran.stderr);

    // ...unless the command line allows the tools,
    let allow = ["--allowedTools", TOOL_PREFIX];
    let (events, _, _) = session.prompt("allowed", "CALL-SEARCH tantivy index", &allow);
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains(decision)),
        "{results:?}"
    );

    // or the folder is trusted.
    session.trust_project();
    let (events, _, _) = session.prompt("trusted", "CALL-SEARCH tantivy index", &[]);
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains(decision)),
        "{results:?}"
    );

    // /mnemofs:remember writes the text verbatim into remember/, tagged.
    let text = "Prefer small commits when refactoring the index\nThey are easier to bisect.";
    let (events, requests, _) =
        session.prompt("remember", &format!("/mnemofs:remember {text}"), &[]);
    assert!(
        main_requests(&requests)[0]["messages"]
            .to_string()
            .contains("manual-capture"),
        "the skill's instructions did not reach the model"
    );
    let results = tool_results(&events);
    assert!(matches!(results.as_slice(), [(false, _)]), "{results:?}");
    let note = session
        .store
        .join("remember/prefer-small-commits-when-refactoring-the-index.md");
    let note = fs::read_to_string(&note).unwrap_or_else(|e| panic!("{}: {e}", note.display()));
    assert!(note.contains("manual-capture"), "{note}");
    assert!(note.ends_with(&format!("---\n{text}\n")), "{note}");

    // /mnemofs:status runs `mnemofs status` through the plugin's lookup,
    // allowed by the skill itself.
    let (events, _, _) = session.prompt("status", "/mnemofs:status", &[]);
    let results = tool_results(&events);
    let store = session.store.to_str().expect("utf-8");
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains(store)),
        "{results:?}"
    );

    // A settings block naming a secondary store: its open decision reaches
    // the model, and the nudge is gone.
    let team = session.root.join("team");
    let team_decision = "Release every second Tuesday";
    fs::create_dir_all(team.join("decisions")).expect("mkdir team");
    fs::write(
        team.join("decisions/release.md"),
        format!("---\ntitle: {team_decision}\ntype: decision\nstatus: open\n---\nAgreed.\n"),
    )
    .expect("write the team's decision");
    session.mnemofs(&["reindex", "--store", team.to_str().expect("utf-8")]);
    let mut settings = example.clone();
    settings["mnemofs"] = json!({ "secondaryStores": [team] });
    session.project_settings(&settings);
    let (_, requests, _) = session.prompt("secondary", "What did the team decide?", &[]);
    let context = main_requests(&requests)[0]["messages"].to_string();
    assert!(context.contains(team_decision), "{context}");
    assert!(!context.contains(NOT_CONFIGURED), "{context}");

    setup_then_share(&session, &team);
    compaction_leaves_a_session_note(&session, &example);

    println!("claude code plugin: {:.1?}", started.elapsed());
}

/// `/mnemofs:setup` writes the settings the interview settled on (the mock
/// plays a user who answered ahead), with which the tools are callable;
/// `/mnemofs:share` previews, and copies into the team store only after
/// the user's yes.
fn setup_then_share(session: &Session, team: &Path) {
    // Settings without the plugin's permission: the setup adds it.
    session.project_settings(&json!({ "model": "sonnet" }));
    let primary = session.store.to_str().expect("utf-8");
    let answers = format!(
        "/mnemofs:setup SETUP-ARGS --primary '{primary}' --team '{}=from-me' --output-style",
        team.display()
    );
    let (events, _, _) = session.prompt("setup", &answers, &[]);
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains("wrote")),
        "{results:?}"
    );
    let written: Value = serde_json::from_str(
        &fs::read_to_string(session.project.join(".claude/settings.json")).expect("settings"),
    )
    .expect("json");
    assert_eq!(written["model"], json!("sonnet"));
    assert_eq!(written["mnemofs"]["store"], json!(primary));
    let key = team.to_str().expect("utf-8");
    assert_eq!(
        written["mnemofs"]["teamStores"][key]["promoteFolder"],
        json!("from-me")
    );
    assert_eq!(written["outputStyle"], json!(OUTPUT_STYLE));
    assert_eq!(written["permissions"]["allow"], json!([TOOL_PREFIX]));
    let (events, requests, _) = session.prompt("after-setup", "CALL-SEARCH tantivy index", &[]);
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains(decision_line())),
        "{results:?}"
    );
    let context = main_requests(&requests)[0]["messages"].to_string();
    assert!(!context.contains(NOT_CONFIGURED), "{context}");

    let ask = format!("/mnemofs:share SHARE-NOTE {}", decision_line());
    let (events, _, _) = session.prompt("share", &ask, &[]);
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains("would share")),
        "{results:?}"
    );
    assert!(!team.join("from-me").exists(), "shared before the yes");
    let id = init_event(&events)["session_id"]
        .as_str()
        .expect("a session id")
        .to_owned();
    // The share runs outside the skill's turn: Claude Code asks for it
    // (the user's second yes), as `--allowedTools` grants it here.
    let allow = r#"Bash(sh *mnemofs-run" share *)"#;
    let (events, _, _) = session.prompt("share-no", "yes", &["--resume", &id]);
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(true, text)] if text.contains("requires approval")),
        "{results:?}"
    );
    assert!(!team.join("from-me").exists(), "shared without approval");
    let (events, _, _) = session.prompt(
        "share-yes",
        "yes",
        &["--resume", &id, "--allowedTools", allow],
    );
    let results = tool_results(&events);
    assert!(
        matches!(results.as_slice(), [(false, text)] if text.contains("shared")),
        "{results:?}"
    );
    let copy = fs::read_to_string(team.join("from-me/keep-the-index-in-tantivy.md"))
        .expect("the shared copy");
    assert!(copy.contains("type: decision"), "{copy}");
    assert!(copy.contains("shared_from:"), "{copy}");
}

/// The summarizer's system prompt, as `mnemofs checkpoint` gives it.
const SUMMARIZER: &str = "You write mnemofs session notes";

/// `/compact` runs the plugin's PreCompact and PostCompact hooks: the
/// session's note lands in the project's captureFolder; with captureMode
/// summarized, the hook's own `claude -p` (the mock plays haiku) adds the
/// summary sections to the same note.
fn compaction_leaves_a_session_note(session: &Session, example: &Value) {
    let mut settings = example.clone();
    settings["mnemofs"] = json!({ "captureFolder": "notes/sessions" });
    session.project_settings(&settings);
    // The search makes two answers of the model: the fewest `/compact` takes.
    let ask = "Make the importer skip binary files. We decided to look for NUL bytes.\nCALL-SEARCH importer";
    let (id, _) = session.compacted("extractive", ask, &[]);
    let note = session.session_note("notes/sessions", &id);
    assert!(!session.store.join("sessions").exists());
    for want in [
        "type: session",
        "capture: extractive",
        "SCRIPTED-COMPACT: the importer skips binary files.",
        "- [decision] We decided to look for NUL bytes.",
    ] {
        assert!(note.contains(want), "{want:?} missing:\n{note}");
    }
    assert!(!note.contains("## Next steps"), "{note}");

    settings["mnemofs"]["captureMode"] = json!("summarized");
    session.project_settings(&settings);
    let ask = "Make the exporter skip binary files too.\nCALL-SEARCH exporter";
    let claude = session.claude.clone();
    let (id, requests) = session.compacted("summarized", ask, &[("MNEMOFS_CLAUDE", &claude)]);
    let summarizing: Vec<&Value> = requests
        .iter()
        .filter(|r| system_text(r).contains(SUMMARIZER))
        .collect();
    assert_eq!(
        summarizing.len(),
        1,
        "one summary for PreCompact, none for PostCompact"
    );
    let asked = summarizing[0];
    assert!(
        asked["model"].as_str().is_some_and(|m| m.contains("haiku")),
        "{}",
        asked["model"]
    );
    assert!(
        asked["tools"].as_array().is_none_or(Vec::is_empty),
        "{}",
        asked["tools"]
    );
    let shown = asked["messages"].to_string();
    assert!(
        shown.contains("User: Make the exporter skip binary files too."),
        "{shown}"
    );
    assert!(
        !shown.contains(decision_line()),
        "the search's result is not the user's words: {shown}"
    );
    assert!(
        !shown.contains("mnemofs is"),
        "a hook ran in the summarizer: {shown}"
    );
    let note = session.session_note("notes/sessions", &id);
    for want in [
        "capture: summarized",
        "## Summary\nSCRIPTED-SUMMARY: the importer now skips binary files",
        "## Decisions\n- [decision] Look for NUL bytes instead of trusting file extensions.",
        "## Next steps\n- [next-step] Add a test for an empty file.",
        "## Problems\nNone.",
        "## Observations\n- [asked] Make the exporter skip binary files too.",
    ] {
        assert!(note.contains(want), "{want:?} missing:\n{note}");
    }

    // --safe-mode alone keeps the plugin's hooks out of the summarizing
    // `claude`: no brief reaches it, even without MNEMOFS_CHECKPOINT_CHILD.
    session.claude(
        "safe-mode",
        &[
            "-p",
            "hello",
            "--safe-mode",
            "--tools",
            "",
            "--no-session-persistence",
        ],
    );
    let requests = session.mock.take();
    assert!(!requests.is_empty());
    for request in &requests {
        let shown = request["messages"].to_string();
        assert!(
            !shown.contains("mnemofs"),
            "a hook ran under --safe-mode: {shown}"
        );
    }
}

/// A line of the decision the test stores first, as the brief shows it.
fn decision_line() -> &'static str {
    "Keep the index in tantivy"
}

impl Session {
    /// A session that says `ask`, then `/compact` on it: its id and the
    /// requests the model got during the compaction.
    fn compacted(&self, name: &str, ask: &str, env: &[(&str, &Path)]) -> (String, Vec<Value>) {
        let args = ["-p", ask, "--output-format", "stream-json", "--verbose"];
        let ran = self.claude_with(&format!("{name}-session"), &args, env);
        let events: Vec<Value> = ran
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let id = init_event(&events)["session_id"]
            .as_str()
            .expect("a session id")
            .to_owned();
        self.mock.take();
        let args = ["-p", "/compact", "--resume", id.as_str()];
        let ran = self.claude_with(&format!("{name}-compact"), &args, env);
        let requests = self.mock.take();
        assert!(
            requests.iter().any(|r| r["messages"]
                .to_string()
                .contains("detailed summary of the conversation")),
            "no compaction request: {}\n{}",
            ran.stdout,
            ran.stderr
        );
        (id, requests)
    }

    /// The text of the one session note of session `id` in `folder`.
    fn session_note(&self, folder: &str, id: &str) -> String {
        let dir = self.store.join(folder);
        let notes: Vec<String> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| fs::read_to_string(e.ok()?.path()).ok())
            .filter(|t| t.contains(&format!("claude_session_id: {id}")))
            .collect();
        assert_eq!(
            notes.len(),
            1,
            "notes of session {id} in {folder}: {notes:?}"
        );
        notes.into_iter().next().unwrap_or_default()
    }
}

/// The start of the brief's line when no settings block exists.
const NOT_CONFIGURED: &str = "mnemofs is not configured for this project";

/// The lookup the hooks and the MCP server go through: a missing binary is
/// one sentence, in the brief's place; found in ~/.cargo/bin off PATH.
#[test]
fn plugin_finds_mnemofs_or_says_it_is_missing() {
    let script = plugin_dir().join("bin/mnemofs-run");
    let home = tempfile::tempdir().expect("temp dir");
    let run_script = |args: &[&str]| {
        let out = Command::new("/bin/sh")
            .arg(&script)
            .args(args)
            .env_clear()
            .env("PATH", "/nonexistent")
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .expect("sh runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (code, stdout, stderr) = run_script(&["brief"]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("mnemofs is not installed"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert_eq!(stderr, "");
    assert_eq!(
        run_script(&["checkpoint"]),
        (Some(0), String::new(), String::new())
    );
    let (code, stdout, stderr) = run_script(&["mcp"]);
    assert_eq!(code, Some(127));
    assert_eq!(stdout, "");
    assert!(stderr.starts_with("mnemofs is not installed"), "{stderr}");

    let cargo_bin = home.path().join(".cargo/bin");
    fs::create_dir_all(&cargo_bin).expect("mkdir");
    std::os::unix::fs::symlink(common::bin(), cargo_bin.join("mnemofs")).expect("symlink");
    let (code, stdout, stderr) = run_script(&["--version"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("mnemofs "), "{stdout}");
}

/// Claude Code reaches `mnemofs mcp --http` as a remote MCP server, with
/// the token as a header (`claude mcp add --transport http`), and fails to
/// connect with a wrong one.
#[test]
fn claude_code_connects_over_http_with_a_token() {
    let Some(claude) = claude_code() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let (store, home, project) = (
        tmp.path().join("store"),
        tmp.path().join("home"),
        tmp.path().join("project"),
    );
    for dir in [&store, &home, &project] {
        fs::create_dir_all(dir).expect("mkdir");
    }
    let made = common::store_command(
        &store,
        &["token", "create", "claude", "--scope", "agent:claude"],
    )
    .output()
    .expect("token create");
    let token = common::succeeded(&made).trim().to_string();
    let mut server = common::store_command(&store, &["mcp", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("mnemofs mcp --http");
    let line = common::stdout_lines(&mut server)
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_default();
    let url = line.strip_prefix("serving MCP on ").map(str::to_owned);
    let claude_says = |args: &[&str], name: &str| {
        let mut cmd = Command::new(&claude);
        cmd.args(args)
            .current_dir(&project)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        run(cmd, tmp.path(), name, Duration::from_secs(120))
    };
    let url = url.unwrap_or_else(|| {
        kill_group(&mut server);
        panic!("the server did not say where it listens: {line:?}");
    });
    let bearer = format!("Authorization: Bearer {token}");
    let added = claude_says(
        &[
            "mcp",
            "add",
            "--transport",
            "http",
            "mnemofs",
            &url,
            "--header",
            &bearer,
        ],
        "mcp-add",
    );
    let wrong = claude_says(
        &[
            "mcp",
            "add",
            "--transport",
            "http",
            "wrong",
            &url,
            "--header",
            "Authorization: Bearer mnemofs_0000",
        ],
        "mcp-add-wrong",
    );
    let listed = claude_says(&["mcp", "list"], "mcp-list");
    kill_group(&mut server);
    assert_eq!(added.code, Some(0), "{}{}", added.stdout, added.stderr);
    assert_eq!(wrong.code, Some(0), "{}{}", wrong.stdout, wrong.stderr);
    let line_of = |name: &str| {
        listed
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line_of("mnemofs").contains("Connected"),
        "{}{}",
        listed.stdout,
        listed.stderr
    );
    assert!(
        !line_of("wrong").contains("Connected") && !line_of("wrong").is_empty(),
        "{}",
        listed.stdout
    );
}
