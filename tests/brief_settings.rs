//! `mnemofs brief` with the Claude Code settings block: the primary store
//! it names, a secondary store's open decisions read without its lock,
//! the recall prompt, the first-run nudge when no block exists, and the
//! last topic of Claude Code's auto-memory. Each run has its own HOME and
//! XDG folders, so no daemon or config of the machine is seen.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{bin, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(120);
const NUDGE: &str = "mnemofs is not configured for this project";

struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        for sub in ["home", "config", "state", "data", "run", "project"] {
            fs::create_dir_all(root.join(sub)).expect("mkdir");
        }
        Home { _dir: dir, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `mnemofs ARGS` in the project, with only this home's folders.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .env("HOME", self.path("home"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_STATE_HOME", self.path("state"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("MNEMOFS_LOG", "warn")
            .current_dir(self.path("project"))
            .stdin(Stdio::null());
        cmd
    }

    fn mnemofs(&self, args: &[&str]) -> String {
        let mut cmd = self.command(args);
        let out = run_with_timeout(&mut cmd, TIMEOUT).expect("mnemofs hung");
        assert_eq!(
            out.status.code(),
            Some(0),
            "mnemofs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn brief(&self) -> String {
        let project = self.path("project");
        let text = self.mnemofs(&["brief", "--cwd", project.to_str().expect("utf-8")]);
        assert!(text.chars().count() < 10_000, "{text}");
        assert!(!text.starts_with('{'), "{text}");
        text
    }

    fn store(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let store = self.path(name);
        for (rel, text) in files {
            let path = store.join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, text).expect("write");
        }
        self.mnemofs(&["reindex", "--store", store.to_str().expect("utf-8")]);
        store
    }

    fn settings(&self, name: &str, text: &str) {
        let dir = self.path("project/.claude");
        fs::create_dir_all(&dir).expect("mkdir");
        fs::write(dir.join(name), text).expect("write settings");
    }
}

fn decision(title: &str) -> String {
    format!("---\ntitle: {title}\ntype: decision\nstatus: open\n---\nTo settle.\n")
}

#[test]
fn brief_reads_the_settings_block_and_the_secondary_stores() {
    let home = Home::new();
    let primary = home.store(
        "primary",
        &[("decisions/engine.md", &decision("Pick the storage engine"))],
    );
    let team = home.store(
        "team",
        &[(
            "decisions/release.md",
            &decision("Choose the release cadence"),
        )],
    );

    // No block anywhere and no store yet: one line, with the nudge.
    let text = home.brief();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("mnemofs: no memory brief"), "{text}");
    assert!(text.contains(NUDGE), "{text}");

    // No block, the default store: the nudge, and the default recall prompt.
    home.store("data/mnemofs/store", &[("notes/a.md", "# A note\n")]);
    let text = home.brief();
    assert!(text.contains(NUDGE), "{text}");
    assert!(text.contains("search mnemofs first"), "{text}");
    assert!(!text.contains("Pick the storage engine"), "{text}");
    // A store named as the plugin names `MNEMOFS_STORE`: no nudge.
    let project = home.path("project");
    let store = home.path("data/mnemofs/store");
    let text = home.mnemofs(&[
        "brief",
        "--cwd",
        project.to_str().expect("utf-8"),
        "--store",
        store.to_str().expect("utf-8"),
    ]);
    assert!(!text.contains(NUDGE), "{text}");

    // The block in the project's settings: its store, its secondary
    // store's decision labelled with the store, its recall prompt.
    home.settings(
        "settings.json",
        &serde_json::json!({
            "mnemofs": {
                "store": primary,
                "secondaryStores": [team, home.path("missing")],
                "recallPrompt": "Search the team store before guessing.",
            }
        })
        .to_string(),
    );
    let text = home.brief();
    assert!(!text.contains(NUDGE), "{text}");
    assert!(text.contains("Pick the storage engine"), "{text}");
    assert!(
        text.contains(&format!("Open decisions in {}", team.display())),
        "{text}"
    );
    assert!(text.contains("Choose the release cadence"), "{text}");
    assert!(
        text.contains(&format!(
            "secondary store {}: not read",
            home.path("missing").display()
        )),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("Search the team store before guessing."),
        "{text}"
    );

    // A local block wins whole; a malformed one is one line, and skipped.
    home.settings("settings.local.json", "{ \"mnemofs\": ");
    let text = home.brief();
    assert!(text.contains("settings.local.json is not usable"), "{text}");
    assert!(text.contains("Choose the release cadence"), "{text}");
    home.settings(
        "settings.local.json",
        &serde_json::json!({ "mnemofs": { "store": primary } }).to_string(),
    );
    let text = home.brief();
    assert!(!text.contains("Choose the release cadence"), "{text}");
    assert!(text.contains("search mnemofs first"), "{text}");
}

#[test]
fn brief_shows_the_last_topic_of_claude_codes_auto_memory() {
    let home = Home::new();
    let project = home.path("project");
    let key: String = project
        .to_str()
        .expect("utf-8")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let memory = home.path("home/.claude/projects").join(key).join("memory");
    fs::create_dir_all(&memory).expect("mkdir");
    fs::write(
        memory.join("MEMORY.md"),
        "# Memory\n\n## Build\n- cargo build\n\n## Flaky CI on arm64\n- retry once\n",
    )
    .expect("write MEMORY.md");
    let store = home.store("primary", &[("notes/a.md", "# A note\n")]);
    home.settings(
        "settings.json",
        &serde_json::json!({ "mnemofs": { "store": store } }).to_string(),
    );
    let text = home.brief();
    assert!(
        text.contains("auto-memory (MEMORY.md), last topic: Flaky CI on arm64"),
        "{text}"
    );
}

/// `mnemofs mcp` started in the project, as Claude Code starts it, serves
/// the store the settings block names: the tools and the brief share it.
#[test]
fn mcp_serves_the_store_the_settings_block_names() {
    use std::io::{BufRead, BufReader, Write};
    let home = Home::new();
    let primary = home.store(
        "primary",
        &[("decisions/engine.md", &decision("Pick the storage engine"))],
    );
    home.settings(
        "settings.json",
        &format!(r#"{{"mnemofs": {{"store": "{}"}}}}"#, primary.display()),
    );
    let mut child = Command::new(bin())
        .arg("mcp")
        .env("HOME", home.path("home"))
        .env("XDG_CONFIG_HOME", home.path("config"))
        .env("XDG_STATE_HOME", home.path("state"))
        .env("XDG_DATA_HOME", home.path("data"))
        .env("XDG_RUNTIME_DIR", home.path("run"))
        .env("MNEMOFS_LOG", "warn")
        .current_dir(home.path("project"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mnemofs mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let answer = |stdin: &mut std::process::ChildStdin, request: serde_json::Value| -> String {
        writeln!(stdin, "{request}").expect("send");
        rx.recv_timeout(TIMEOUT).unwrap_or_default()
    };
    let init = answer(
        &mut stdin,
        serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}
        }),
    );
    assert!(init.contains("\"result\""), "{init}");
    writeln!(
        stdin,
        "{}",
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("send");
    let found = answer(
        &mut stdin,
        serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "storage engine"}}
        }),
    );
    drop(stdin);
    let _ = common::wait_timeout(&mut child, TIMEOUT);
    let _ = child.kill();
    assert!(found.contains("decisions/engine.md"), "{found}");
}

/// What `mnemofs` printed and its exit code, whatever it was.
fn run_any(home: &Home, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = home.command(args);
    let out = run_with_timeout(&mut cmd, TIMEOUT).expect("mnemofs hung");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn setup_then_remember_share_and_the_brief_follow_the_block() {
    let home = Home::new();
    let team = home.store("team", &[("notes/readme.md", "Team notes.\n")]);
    let mine = home.path("mine");

    // The setup writes the block, keeping what the file held.
    home.settings("settings.json", r#"{"model": "opus"}"#);
    let out = home.mnemofs(&[
        "setup-claude",
        "--primary",
        "../mine",
        "--team",
        "../team=from-alice",
        "--remember-folder",
        "inbox-of-mine",
        "--recall-timeframe",
        "1d",
        "--conventions",
        "decisions go in decisions/, one per file",
        "--output-style",
    ]);
    assert!(out.contains("\"store\": \"../mine\""), "{out}");
    // The new primary store is made by the setup.
    assert!(out.contains("created the store"), "{out}");
    assert!(mine.is_dir());
    let written = fs::read_to_string(home.path("project/.claude/settings.json")).expect("read");
    let value: serde_json::Value = serde_json::from_str(&written).expect("json");
    assert_eq!(value["model"], "opus");
    assert_eq!(value["outputStyle"], "mnemofs:mnemofs");
    assert_eq!(
        value["permissions"]["allow"],
        serde_json::json!(["mcp__plugin_mnemofs_mnemofs"])
    );
    // A value it cannot use is refused, and the file stays as it was.
    let (code, _, err) = run_any(&home, &["setup-claude", "--capture-mode", "loud"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("loud"), "{err}");
    assert_eq!(
        fs::read_to_string(home.path("project/.claude/settings.json")).expect("read"),
        written
    );

    // remember: verbatim, into the block's folder of the primary store.
    let text = "Ship the CLI before the plugin\nThe plugin needs the CLI's commands.";
    let out = home.mnemofs(&["remember", text]);
    let note = mine.join("inbox-of-mine/ship-the-cli-before-the-plugin.md");
    assert!(
        out.contains("inbox-of-mine/ship-the-cli-before-the-plugin.md"),
        "{out}"
    );
    let saved = fs::read_to_string(&note).expect("remembered note");
    assert!(saved.contains("manual-capture"), "{saved}");
    assert!(saved.ends_with(&format!("---\n{text}\n")), "{saved}");
    // Every command in the project reaches that store, as the agent does;
    // and it is private, as every store mnemofs makes.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(&mine).expect("store").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    let found = home.mnemofs(&["search", "ship the CLI before the plugin"]);
    assert!(
        found.contains("ship-the-cli-before-the-plugin.md"),
        "{found}"
    );
    home.mnemofs(&[
        "write",
        "written from the project's shell",
        "--path",
        "shell.md",
    ]);
    assert!(mine.join("shell.md").is_file());
    let read = home.mnemofs(&["read", "shell.md"]);
    assert!(read.contains("written from the project's shell"), "{read}");

    // share: nothing without --yes; then a copy in the promote folder.
    home.mnemofs(&[
        "write",
        "--store",
        mine.to_str().expect("utf-8"),
        "--type",
        "decision",
        "--status",
        "open",
        "--title",
        "Adopt jiff for dates",
        "Dates go through jiff.",
    ]);
    let preview = home.mnemofs(&["share", "Adopt jiff for dates"]);
    assert!(preview.contains("would share"), "{preview}");
    assert!(!team.join("from-alice").exists());
    let out = home.mnemofs(&["share", "Adopt jiff for dates", "--yes"]);
    assert!(out.contains("from-alice/"), "{out}");
    let copies: Vec<_> = fs::read_dir(team.join("from-alice"))
        .expect("promote folder")
        .collect();
    assert_eq!(copies.len(), 1);
    let copy = fs::read_to_string(team.join("from-alice/adopt-jiff-for-dates.md")).expect("copy");
    assert!(copy.contains("type: decision"), "{copy}");
    assert!(copy.contains("shared_from:"), "{copy}");
    // Sharing again updates the copy instead of adding one.
    home.mnemofs(&["share", "Adopt jiff for dates", "--yes"]);
    assert_eq!(
        fs::read_dir(team.join("from-alice")).expect("dir").count(),
        1
    );
    let (code, _, err) = run_any(&home, &["share", "no such note", "--yes"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no memory is named"), "{err}");

    // A team decision of its own reaches the brief; the shared copy of
    // the primary's own decision is not shown twice.
    fs::write(
        team.join("notes/retire-v1.md"),
        decision("Retire the v1 API"),
    )
    .expect("write");
    home.mnemofs(&["reindex", "--store", team.to_str().expect("utf-8")]);
    let brief = home.brief();
    assert!(!brief.contains(NUDGE), "{brief}");
    assert!(brief.contains("Retire the v1 API"), "{brief}");
    assert_eq!(brief.matches("Adopt jiff for dates").count(), 1, "{brief}");
    assert!(
        brief.contains("Placement conventions: decisions go in decisions/, one per file"),
        "{brief}"
    );
    assert!(brief.contains("Recent activity (last 1d)"), "{brief}");
}
