//! What a user meets in the first minutes at a shell: a readable
//! `status`, read-only commands that create nothing, `mount` that asks
//! before making a store, quiet offline commands, a busy `unmount` that
//! names who holds the mount, and one clear sentence for a bad option.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{Mount, bin, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `mnemofs args` with its XDG folders inside `home`, so defaults
/// land where the test can see them.
fn mnemofs(home: &Path, args: &[&str]) -> Output {
    run_with_timeout(
        Command::new(bin())
            .args(args)
            .env("XDG_STATE_HOME", home.join("state"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env_remove("MNEMOFS_LOG"),
        TIMEOUT,
    )
    .expect("mnemofs timed out")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(root).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn status_reads_as_text_and_as_json() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("notes");
    fs::create_dir(&store).unwrap();
    fs::write(store.join("a.md"), "# A\nhello\n").unwrap();
    let store = store.to_str().unwrap();

    let out = mnemofs(home.path(), &["status", "--store", store]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for label in [
        "store",
        "served by",
        "state dir",
        "index",
        "organizer",
        "stale mounts",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(label)),
            "no `{label}` line:\n{text}"
        );
    }
    assert!(text.contains("1 documents"), "{text}");
    assert!(text.contains("no daemon"), "{text}");
    assert!(!text.trim_start().starts_with('{'), "{text}");

    let out = mnemofs(home.path(), &["status", "--json", "--store", store]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(status["served_by"], "local", "{status:#}");
    assert_eq!(status["documents"], 1, "{status:#}");
    assert!(status["state_dir"].as_str().is_some(), "{status:#}");
    assert!(status["stale_mounts"].is_array(), "{status:#}");
}

#[test]
fn read_only_commands_on_a_missing_store_fail_and_create_nothing() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("no-such-store");
    let missing = missing.to_str().unwrap();
    for args in [
        vec!["search", "x", "--store", missing],
        vec!["status", "--store", missing],
        vec!["status", missing],
    ] {
        let out = mnemofs(home.path(), &args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr(&out).contains("no-such-store"), "{}", stderr(&out));
        assert_eq!(
            tree(home.path()),
            Vec::<String>::new(),
            "{args:?} made files"
        );
    }
}

#[test]
fn the_first_write_makes_the_default_store_and_a_search_before_it_says_why_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("data/mnemofs/store");
    let out = mnemofs(home.path(), &["search", "coffee"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no memories yet"), "{}", stderr(&out));
    assert_eq!(
        tree(home.path()),
        Vec::<String>::new(),
        "a search made files"
    );

    let out = mnemofs(home.path(), &["write", "Prefers coffee over tea"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("created the store"),
        "{}",
        stderr(&out)
    );
    let mode = fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let out = mnemofs(home.path(), &["search", "coffee"]);
    assert!(stdout(&out).contains("coffee"), "{}", stdout(&out));

    // An agent's first tool call, and a first `remember`, on new machines.
    let other = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin())
        .arg("tool")
        .env("XDG_STATE_HOME", other.path().join("state"))
        .env("XDG_DATA_HOME", other.path().join("data"))
        .env("XDG_CONFIG_HOME", other.path().join("config"))
        .env("XDG_RUNTIME_DIR", other.path().join("run"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            br#"{"command": "create", "path": "/memories/tea.md", "file_text": "Green tea"}
"#,
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"is_error\":false"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(other.path().join("data/mnemofs/store/tea.md").is_file());
    let third = tempfile::tempdir().unwrap();
    let out = mnemofs(third.path(), &["remember", "Keep this"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // A store named that does not exist is still an error.
    let named = home.path().join("elsewhere");
    let out = mnemofs(
        home.path(),
        &["write", "x", "--store", named.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(!named.exists());
}

#[test]
fn mount_asks_before_making_a_named_store_and_checks_options_first() {
    let home = tempfile::tempdir().unwrap();
    let mnt = home.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let (mnt, missing) = (mnt.to_str().unwrap(), home.path().join("new-store"));
    let missing = missing.to_str().unwrap();

    let out = mnemofs(home.path(), &["mount", mnt, "--store", missing]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("pass --create"), "{}", stderr(&out));

    let out = mnemofs(
        home.path(),
        &[
            "mount",
            mnt,
            "--store",
            missing,
            "--create",
            "--max-file-size",
            "0",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--max-file-size must be more than 0"),
        "{}",
        stderr(&out)
    );

    let out = mnemofs(
        home.path(),
        &[
            "mount",
            mnt,
            "--store",
            missing,
            "--create",
            "--config",
            "/no/such/config.yaml",
        ],
    );
    assert!(!out.status.success());
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert_eq!(said.matches("No such file").count(), 1, "{said}");
    assert_eq!(tree(home.path()), ["mnt"], "a refused mount made files");

    let out = mnemofs(home.path(), &["mount", mnt, "--store", missing, "--create"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("created the store"),
        "{}",
        stderr(&out)
    );
    assert!(Path::new(missing).is_dir());
    let out = mnemofs(home.path(), &["unmount", mnt]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn offline_commands_are_quiet_unless_asked() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join("notes");
    fs::create_dir(&store).unwrap();
    fs::write(store.join("a.md"), "# A\nhello\n").unwrap();
    let store = store.to_str().unwrap();
    let out = mnemofs(home.path(), &["search", "hello", "--store", store]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "an offline search logged");
    let out = mnemofs(home.path(), &["-v", "search", "hello", "--store", store]);
    assert!(
        stderr(&out).contains("INFO"),
        "-v showed nothing: {}",
        stderr(&out)
    );
}

#[test]
fn unmount_of_a_busy_mount_names_the_holders() {
    let mut m = Mount::start();
    let mut holder = Command::new("sleep")
        .arg("600")
        .current_dir(&m.mnt)
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep");
    let out = run_with_timeout(Command::new(bin()).arg("unmount").arg(&m.mnt), TIMEOUT)
        .expect("unmount timed out");
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!out.status.success(), "a busy mount was unmounted");
    let said = stderr(&out);
    assert!(
        said.contains(&format!("pid {} (sleep)", holder.id())),
        "{said}"
    );
    assert!(said.contains("--lazy"), "{said}");
    m.stop();
}

/// An agent's `mnemofs tool`, talked to line by line; its stderr is left
/// out, and it is ended (stdin closed, waited for) on drop.
struct Agent {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    answers: std::io::BufReader<std::process::ChildStdout>,
}

impl Agent {
    /// `mnemofs tool` on `store` and `state`, with `env` set.
    fn start(store: &Path, state: &Path, env: &[(&str, &Path)]) -> Agent {
        let mut child = Command::new(bin())
            .arg("tool")
            .arg("--store")
            .arg(store)
            .arg("--state-dir")
            .arg(state)
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("mnemofs tool");
        Agent {
            stdin: child.stdin.take(),
            answers: std::io::BufReader::new(child.stdout.take().expect("stdout")),
            child,
        }
    }

    /// Sends `command`; its answer, which must not be an error.
    fn ask(&mut self, command: serde_json::Value) -> String {
        use std::io::{BufRead, Write};
        writeln!(self.stdin.as_mut().expect("stdin"), "{command}").unwrap();
        let mut line = String::new();
        self.answers.read_line(&mut line).expect("an answer");
        assert!(line.contains("\"is_error\":false"), "{command}: {line}");
        line
    }

    /// Creates `/memories/<name>` holding `text`.
    fn create(&mut self, name: &str, text: &str) {
        self.ask(serde_json::json!({
            "command": "create", "path": format!("/memories/{name}"), "file_text": text
        }));
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let ended = common::wait_timeout(&mut self.child, TIMEOUT);
        if ended.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if !std::thread::panicking() {
            assert!(ended.is_some_and(|s| s.success()), "the tool: {ended:?}");
        }
    }
}

/// An agent's `mnemofs tool` serves the store while no mount does. A
/// mount started then is handed the store, the tool goes on through it
/// (so its writes reach the mount's watchers), and serves the store itself
/// again once the mount ends: no call fails on the way.
#[test]
fn a_mount_is_handed_the_store_by_a_tool_serving_it() {
    let mut m = common::Mount::unstarted(&common::MountOptions::default());
    let mut agent = Agent::start(&m.store, &m.state, &[]);
    agent.create("a.md", "Plums in the icebox.\n");

    m.spawn(&[]);
    assert!(
        m.log_text().contains("handed the store over"),
        "{}",
        m.log_text()
    );
    assert_eq!(
        fs::read_to_string(m.m("a.md")).unwrap(),
        "Plums in the icebox.\n"
    );
    agent.create("b.md", "Cherries in the bowl.\n");
    assert_eq!(
        fs::read_to_string(m.m("b.md")).unwrap(),
        "Cherries in the bowl.\n"
    );
    let listed = agent.ask(serde_json::json!({"command": "view", "path": "/memories"}));
    assert!(
        listed.contains("b.md") && listed.contains("a.md"),
        "{listed}"
    );

    m.stop();
    agent.create("c.md", "Pears on the sill.\n");
    assert_eq!(
        fs::read_to_string(m.s("c.md")).unwrap(),
        "Pears on the sill.\n"
    );
}

/// `mnemofs serve` started while an agent's `mnemofs tool` serves the
/// store is handed it too, and the tool goes through the server.
#[test]
fn a_server_is_handed_the_store_by_a_tool_serving_it() {
    use std::io::BufRead;
    let home = tempfile::tempdir().unwrap();
    let (store, state, run) = (
        home.path().join("store"),
        home.path().join("state"),
        home.path().join("run"),
    );
    fs::create_dir(&store).unwrap();
    let mut agent = Agent::start(&store, &state, &[("XDG_RUNTIME_DIR", &run)]);
    agent.create("a.md", "x\n");
    let server = Command::new(bin())
        .args(["serve", "--store"])
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .env("XDG_RUNTIME_DIR", &run)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mnemofs serve");
    let mut server = common::Stopped(server);
    let mut said = String::new();
    std::io::BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut said)
        .expect("serve's first line");
    assert!(said.starts_with("serving "), "{said:?}");
    agent.create("b.md", "x\n");
    let status = Command::new(bin())
        .args(["status", "--json", "--store"])
        .arg(&store)
        .arg("--state-dir")
        .arg(&state)
        .env("XDG_RUNTIME_DIR", &run)
        .output()
        .expect("status");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_eq!(status["pid"], server.0.id(), "{status}");
    assert!(store.join("b.md").is_file());
    drop(server);
    agent.create("c.md", "x\n");
    assert!(store.join("c.md").is_file());
}

/// A tool that handed its store over, and whose taker never came (a mount
/// that failed), serves the store again: its next call is answered.
#[test]
fn a_tool_takes_its_store_back_when_no_daemon_comes() {
    use std::io::{Read, Write};
    let home = tempfile::tempdir().unwrap();
    let (store, state) = (home.path().join("store"), home.path().join("state"));
    fs::create_dir(&store).unwrap();
    let run = home.path().join("run");
    let mut agent = Agent::start(&store, &state, &[("XDG_RUNTIME_DIR", &run)]);
    agent.create("a.md", "x\n");
    let mut asking = std::os::unix::net::UnixStream::connect(state.join("control.sock")).unwrap();
    asking.write_all(b"{\"op\":\"hand_over\"}\n").unwrap();
    let mut reply = String::new();
    asking.read_to_string(&mut reply).unwrap();
    assert_eq!(reply.trim(), r#"{"handed_over":true}"#);
    agent.create("b.md", "x\n");
    assert!(store.join("b.md").is_file());
}

/// A process that serves a store holds its lock a moment before it answers
/// (while it starts) and after (while it stops). A command that comes then
/// waits for it, briefly, instead of giving up at once.
#[test]
fn a_command_waits_out_a_store_lock_held_a_moment() {
    use std::os::fd::AsRawFd;
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("store");
    fs::create_dir(&store).expect("store");
    fs::write(store.join("note.md"), "Plums in the icebox.\n").expect("note");
    let held = fs::File::open(&store).expect("open the store");
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let reader = common::store_command(&store, &["read", "note.md"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mnemofs read");
    std::thread::sleep(Duration::from_millis(700));
    drop(held);
    let out = reader.wait_with_output().expect("mnemofs read");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Plums in the icebox."));
}

/// On a second machine, `sync init` makes the default store and brings
/// the memories in, as the README's "once per machine" says.
#[test]
fn sync_init_on_a_new_machine_makes_the_default_store() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let remote = tmp.path().join("remote.git");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    };
    git(&[
        "init",
        "-q",
        "--bare",
        "-b",
        "main",
        remote.to_str().expect("utf-8"),
    ]);
    let (first, second) = (tmp.path().join("first"), tmp.path().join("second"));
    let remote_arg = remote.to_str().expect("utf-8");
    let out = mnemofs(
        &first,
        &["write", "kept on the first machine", "--path", "a.md"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = mnemofs(&first, &["sync", "init", remote_arg, "--host", "first"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = mnemofs(&second, &["sync", "init", remote_arg, "--host", "second"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let note = fs::read_to_string(second.join("data/mnemofs/store/a.md")).expect("brought in");
    assert!(note.contains("kept on the first machine"), "{note}");
    // A store named for a clone (a team's, read-only) is made too.
    let team = tmp.path().join("team");
    let out = mnemofs(
        &second,
        &[
            "sync",
            "init",
            remote_arg,
            "--store",
            team.to_str().expect("utf-8"),
            "--read-only",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(team.join("a.md").is_file());
}
