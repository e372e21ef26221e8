//! memory-cli's commands, run as the real binary: on a store no daemon
//! serves (write, read, list, delete, link, unlink, backlinks, search
//! with its filters and scopes, the lifecycle steps, export then import
//! into an empty store and again, memory-cli's own JSON lines, Obsidian,
//! Logseq and Claude trees ingested twice, agent mode, an ambiguous ref,
//! and bad input, each one sentence and a failure), the same where FUSE
//! is unavailable, and every command again through a running daemon,
//! whose mount's watchers see the writes, and through `mnemofs serve`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, run_with_timeout, succeeded as ok};
use serde_json::{Value, json};

fn run(store: &Path, args: &[&str], input: Option<&str>) -> Output {
    let state = store.with_extension("state");
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(&state)
        .env("XDG_RUNTIME_DIR", store.with_extension("run"))
        .env("XDG_CONFIG_HOME", store.with_extension("config"))
        .env("MNEMOFS_LOG", "warn");
    if let Some(input) = input {
        let file = store.with_extension("jsonl");
        fs::write(&file, input).expect("input file");
        cmd.arg("--input").arg(&file);
    }
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

/// `mnemofs ARGS --store STORE` with `stdin` on its standard input, in
/// `env`, found by whatever daemon serves the store.
fn run_env(store: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new("sh");
    // run_with_timeout gives the child /dev/null: redirect from a file.
    cmd.arg("-c")
        .arg("exec \"$0\" \"$@\" < \"$MNEMOFS_TEST_STDIN\"")
        .arg(bin())
        .args(args)
        .arg("--store")
        .arg(store)
        .env("MNEMOFS_LOG", "warn");
    let input = store.with_extension(format!("stdin-{}", common::unique("")));
    fs::write(&input, stdin.unwrap_or("")).expect("stdin file");
    cmd.env("MNEMOFS_TEST_STDIN", &input);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung");
    let _ = fs::remove_file(&input);
    out
}

/// The same as [`run`], with `stdin` on the standard input.
fn run_stdin(store: &Path, args: &[&str], stdin: &str) -> Output {
    let state = store.with_extension("state");
    let runtime = store.with_extension("run");
    let config = store.with_extension("config");
    let mut args: Vec<&str> = args.to_vec();
    let state_text = state.to_string_lossy().into_owned();
    args.extend(["--state-dir", &state_text]);
    run_env(
        store,
        &args,
        Some(stdin),
        &[("XDG_RUNTIME_DIR", &runtime), ("XDG_CONFIG_HOME", &config)],
    )
}

/// A failure told in one sentence on stderr, naming `what`.
fn refused(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "should fail ({what}): {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("mnemofs: ") && stderr.contains(what),
        "{what:?} not in {stderr:?}"
    );
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn paths(lines: &[Value]) -> Vec<String> {
    let mut paths: Vec<String> = lines
        .iter()
        .map(|v| v["path"].as_str().expect("path").to_string())
        .collect();
    paths.sort();
    paths
}

fn new_store(tmp: &Path, name: &str) -> PathBuf {
    let store = tmp.join(name);
    fs::create_dir(&store).expect("mkdir");
    store
}

fn seed(root: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("seed");
    }
}

/// `write -` of a whole note: its frontmatter's fields are the memory's
/// (a flag given wins), its other fields are kept, and frontmatter that
/// cannot be read is refused in one sentence with nothing written.
#[test]
fn writing_a_whole_note_keeps_its_own_frontmatter() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let note = "---\ntitle: Vacation policy\ntags: [hr]\naliases: [PTO]\ncategory: people\ncreated_at: 2025-03-01T09:00:00Z\n---\nThe user has 25 vacation days a year.\n";
    let out = ok(&run_stdin(
        &store,
        &["write", "-", "--category", "knowledge", "--json"],
        note,
    ));
    let written: Value = serde_json::from_str(out.trim()).expect("json");
    assert_eq!(written["path"], "knowledge/vacation-policy.md");
    let text = fs::read_to_string(store.join("knowledge/vacation-policy.md")).expect("read");
    assert!(text.contains("title: Vacation policy\n"), "{text}");
    assert!(
        text.contains("created_at: 2025-03-01T09:00:00Z\n"),
        "{text}"
    );
    assert!(
        text.contains("  - hr\n") && text.contains("aliases:\n- PTO\n"),
        "{text}"
    );
    assert!(!text.contains("category: people"), "{text}");
    assert_eq!(
        text.matches("---\n").count(),
        2,
        "one frontmatter block: {text}"
    );
    assert!(
        text.ends_with("---\nThe user has 25 vacation days a year.\n"),
        "{text}"
    );
    // Its own zone stays: 19:00 in Seattle on the 27th is not the 28th.
    let evening = "---\ntitle: Black Friday\ncreated_at: 2026-11-27T19:00:00-08:00\n---\nBought the dado blade.\n";
    ok(&run_stdin(
        &store,
        &["write", "-", "--category", "date"],
        evening,
    ));
    let text = fs::read_to_string(store.join("date/black-friday.md")).expect("read");
    assert!(
        text.contains("created_at: 2026-11-27T19:00:00-08:00\n"),
        "{text}"
    );
    let broken = run_stdin(&store, &["write", "-"], "---\ntitle: [broken\n---\nbody\n");
    refused(&broken, "frontmatter that cannot be read");
    assert!(!store.join("inbox").exists());
}

#[test]
fn write_read_list_delete_export_import_without_a_daemon() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let id = ok(&run(
        &store,
        &[
            "write",
            "I prefer dark mode",
            "--category",
            "preferences",
            "--tags",
            "ui,dark",
        ],
        None,
    ));
    let id = id.trim();
    assert!(store.join("preferences/i-prefer-dark-mode.md").is_file());
    let record: serde_json::Value =
        serde_json::from_str(&ok(&run(&store, &["read", id, "--json"], None))).expect("json");
    assert_eq!(record["id"], id);
    assert_eq!(record["category"], "preferences");
    assert_eq!(record["scope"], "global");
    assert_eq!(record["tags"], serde_json::json!(["ui", "dark"]));
    ok(&run(&store, &["write", "a second note"], None));
    let listed = ok(&run(&store, &["list", "--category", "preferences"], None));
    assert_eq!(listed.lines().count(), 1, "{listed}");

    let export = ok(&run(&store, &["export"], None));
    assert_eq!(export.lines().count(), 2, "{export}");
    let other = tmp.path().join("t");
    fs::create_dir(&other).expect("mkdir");
    let first = ok(&run(&other, &["import"], Some(&export)));
    assert!(
        first.starts_with("read 2, written 2, duplicates 0"),
        "{first}"
    );
    let again = ok(&run(&other, &["import"], Some(&export)));
    assert!(
        again.starts_with("read 2, written 0, duplicates 2"),
        "{again}"
    );
    let set = |text: &str| {
        let mut v: Vec<(String, String, String)> = text
            .lines()
            .map(|l| {
                let r: serde_json::Value = serde_json::from_str(l).expect("a line");
                (
                    r["id"].to_string(),
                    r["path"].to_string(),
                    r["content"].to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(set(&export), set(&ok(&run(&other, &["export"], None))));

    ok(&run(&store, &["delete", id], None));
    assert!(!store.join("preferences/i-prefer-dark-mode.md").exists());
    let missing = run(&store, &["read", id], None);
    assert!(!missing.status.success());
    assert_eq!(String::from_utf8_lossy(&missing.stderr).lines().count(), 1);
    let empty = run(&store, &["write", "  "], None);
    assert!(!empty.status.success());
}

#[test]
fn memory_cli_lines_import_and_a_malformed_line_is_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("s");
    fs::create_dir(&store).expect("mkdir");
    let lines = "{\"ID\":\"m-1\",\"Content\":\"user prefers tabs\",\"Phase\":\"organized\",\"Category\":\"preferences\",\"Tags\":[\"editor\"]}\nnot json\n{\"id\":\"m-2\",\"content\":\"new idea\",\"phase\":\"inbox\",\"category\":\"inbox\"}\n";
    // The rest goes in; the line that is not JSON is named, and fails the
    // command.
    let out = run(&store, &["import"], Some(lines));
    refused(&out, "line 2: not JSON");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("read 3, written 2"), "{stdout}");
    assert!(store.join("preferences/user-prefers-tabs.md").is_file());
    assert!(store.join("inbox/new-idea.md").is_file());
}

#[test]
fn an_obsidian_vault_ingested_twice_adds_nothing_the_second_time() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("s");
    let vault = tmp.path().join("vault");
    fs::create_dir(&store).expect("mkdir");
    for (rel, text) in [
        (
            "Projects/Alpha.md",
            "---\ntags: [work]\naliases: [A]\n---\nSee [[Beta]].\n",
        ),
        ("Beta.md", "Beta is the second project.\n"),
        (".obsidian/app.json", "{}"),
        (".trash/Old.md", "old"),
        ("img/pic.png", "png"),
    ] {
        let p = vault.join(rel);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("seed");
    }
    let vault_arg = vault.to_string_lossy().into_owned();
    let args = [
        "ingest",
        "--source",
        "obsidian",
        "--path",
        &vault_arg,
        "--keep-folders",
    ];
    let first = ok(&run(&store, &args, None));
    assert!(
        first.starts_with("read 2, written 2, duplicates 0"),
        "{first}"
    );
    let alpha = fs::read_to_string(store.join("obsidian/Projects/Alpha.md")).expect("ingested");
    assert!(
        alpha.contains("source: obsidian") && alpha.contains("[[Beta]]"),
        "{alpha}"
    );
    let second = ok(&run(&store, &args, None));
    assert!(
        second.starts_with("read 2, written 0, duplicates 2"),
        "{second}"
    );
    // The wikilink was kept, so Beta's backlinks name Alpha.
    let backlinks = ok(&run(&store, &["backlinks", "Beta"], None));
    assert!(
        backlinks.contains("obsidian/Projects/Alpha.md"),
        "{backlinks}"
    );
    let missing = run(
        &store,
        &[
            "ingest",
            "--source",
            "logseq",
            "--path",
            "/nonexistent/graph",
        ],
        None,
    );
    assert!(!missing.status.success());
}

#[test]
fn link_records_both_ways_unlink_takes_both_away_and_backlinks_follow() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let a = ok(&run(
        &store,
        &["write", "Alpha plan", "--category", "project"],
        None,
    ));
    let b = ok(&run(
        &store,
        &["write", "Beta plan", "--category", "project"],
        None,
    ));
    let (a, b) = (a.trim(), b.trim());
    // By id and by title.
    let linked = ok(&run(&store, &["link", a, "Beta plan"], None));
    assert_eq!(
        linked.trim(),
        "linked project/alpha-plan.md and project/beta-plan.md"
    );
    let record = |r: &str| -> Value {
        serde_json::from_str(&ok(&run(&store, &["read", r, "--json"], None))).expect("json")
    };
    assert_eq!(record(a)["links"], json!([b]));
    assert_eq!(record(b)["links"], json!([a]));
    // Linking again adds nothing.
    ok(&run(&store, &["link", b, a], None));
    assert_eq!(record(a)["links"], json!([b]));
    let back = json_lines(&ok(&run(&store, &["backlinks", a, "--json"], None)));
    assert_eq!(paths(&back), ["project/beta-plan.md"]);
    let back = json_lines(&ok(&run(&store, &["backlinks", b, "--json"], None)));
    assert_eq!(paths(&back), ["project/alpha-plan.md"]);

    let unlinked = ok(&run(&store, &["unlink", "project/beta-plan.md", a], None));
    assert_eq!(
        unlinked.trim(),
        "unlinked project/beta-plan.md and project/alpha-plan.md"
    );
    assert_eq!(record(a)["links"], json!([]));
    assert_eq!(record(b)["links"], json!([]));
    assert_eq!(ok(&run(&store, &["backlinks", a], None)), "");
    let again = ok(&run(&store, &["unlink", a, b, "--json"], None));
    assert_eq!(
        serde_json::from_str::<Value>(&again).expect("json")["removed"],
        false
    );
    refused(&run(&store, &["link", a, a], None), "cannot link to itself");
}

#[test]
fn scopes_show_an_agent_the_global_memories_and_its_own() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    ok(&run(
        &store,
        &["write", "shared owl fact", "--category", "knowledge"],
        None,
    ));
    ok(&run(
        &store,
        &[
            "write",
            "explicitly global owl",
            "--category",
            "knowledge",
            "--scope",
            "global",
        ],
        None,
    ));
    ok(&run(
        &store,
        &[
            "write",
            "claude owl secret",
            "--category",
            "knowledge",
            "--scope",
            "agent:claude",
        ],
        None,
    ));
    ok(&run(
        &store,
        &[
            "write",
            "copilot owl secret",
            "--category",
            "knowledge",
            "--scope",
            "agent:copilot",
        ],
        None,
    ));
    let claude_sees = vec![
        "knowledge/claude-owl-secret.md".to_string(),
        "knowledge/explicitly-global-owl.md".to_string(),
        "knowledge/shared-owl-fact.md".to_string(),
    ];
    let listed = json_lines(&ok(&run(
        &store,
        &["list", "--scope", "agent:claude", "--json"],
        None,
    )));
    assert_eq!(paths(&listed), claude_sees);
    let found = json_lines(&ok(&run(
        &store,
        &["search", "owl", "--scope", "agent:claude", "--json"],
        None,
    )));
    assert_eq!(paths(&found), claude_sees);
    let global = json_lines(&ok(&run(
        &store,
        &["list", "--scope", "global", "--json"],
        None,
    )));
    assert_eq!(paths(&global), claude_sees[1..]);
    // Without a scope, everything; scope: in the query is an exact filter.
    let all = json_lines(&ok(&run(&store, &["list", "--json"], None)));
    assert_eq!(all.len(), 4);
    let exact = json_lines(&ok(&run(
        &store,
        &["search", "owl scope:agent:copilot", "--json"],
        None,
    )));
    assert_eq!(paths(&exact), ["knowledge/copilot-owl-secret.md"]);
    let export = ok(&run(&store, &["export", "--scope", "agent:claude"], None));
    assert_eq!(paths(&json_lines(&export)), claude_sees);
    refused(
        &run(&store, &["list", "--scope", "claude"], None),
        "not a scope",
    );
}

#[test]
fn search_filters_narrow_the_query() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    seed(
        &store,
        &[
            (
                "knowledge/old.md",
                "---\nid: k-old\ncategory: knowledge\ntags: [rust, cli]\nsource: claude\ncreated_at: 2025-03-01T10:00:00Z\n---\nkestrel notes from March\n",
            ),
            (
                "knowledge/new.md",
                "---\nid: k-new\ncategory: knowledge\ntags: [rust]\nsource: logseq\ncreated_at: 2026-01-15T10:00:00Z\n---\nkestrel notes from January\n",
            ),
            (
                "people/ann.md",
                "---\nid: p-ann\ncategory: people\ntags: [cli]\ncreated_at: 2026-01-31T23:00:00Z\n---\nAnn watches a kestrel\n",
            ),
            (
                "inbox/loose.md",
                "---\nid: i-loose\nphase: inbox\ncreated_at: 2026-02-01T00:30:00Z\n---\nkestrel seen again\n",
            ),
        ],
    );
    let search = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["search", "kestrel", "--json"];
        args.extend(extra);
        paths(&json_lines(&ok(&run(&store, &args, None))))
    };
    assert_eq!(search(&[]).len(), 4);
    assert_eq!(search(&["--tags", "rust,cli"]), ["knowledge/old.md"]);
    assert_eq!(
        search(&["--tags", "cli"]),
        ["knowledge/old.md", "people/ann.md"]
    );
    assert_eq!(search(&["--category", "people"]), ["people/ann.md"]);
    assert_eq!(search(&["--phase", "inbox"]), ["inbox/loose.md"]);
    assert_eq!(search(&["--source", "logseq"]), ["knowledge/new.md"]);
    // --to takes its whole day; --from starts at its midnight.
    assert_eq!(
        search(&["--from", "2026-01-01", "--to", "2026-01-31"]),
        ["knowledge/new.md", "people/ann.md"]
    );
    assert_eq!(search(&["--to", "2025-12-31"]), ["knowledge/old.md"]);
    assert_eq!(search(&["--limit", "1"]).len(), 1);
    refused(
        &run(&store, &["search", "kestrel", "--from", "March"], None),
        "\"March\" is not a date for `from`",
    );
    refused(
        &run(&store, &["search", "kestrel", "--category", "birds"], None),
        "birds",
    );
}

#[test]
fn agent_lists_memory_clis_seven_tools_and_runs_each_call() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let tools = json_lines(&ok(&run(
        &store,
        &["agent", "--list-tools", "--json"],
        None,
    )));
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "memory_write",
            "memory_read",
            "memory_delete",
            "memory_list",
            "memory_search",
            "memory_smart_search",
            "memory_tag"
        ]
    );
    for tool in &tools {
        assert_eq!(tool["parameters"]["type"], "object", "{tool}");
    }
    assert_eq!(tools[0]["parameters"]["required"], json!(["content"]));
    let text = ok(&run(&store, &["agent", "--list-tools"], None));
    assert!(text.contains("memory_smart_search: "), "{text}");

    let calls = json!([
        {"name": "memory_write", "params": {"content": "user prefers dark mode", "category": "preferences", "tags": "ui,theme"}},
        {"name": "memory_search", "params": {"query": "dark mode", "tags": ["ui"]}},
        {"name": "memory_list", "params": {"category": "preferences"}},
        {"name": "memory_tag", "params": {"id": "preferences/user-prefers-dark-mode.md", "tags": ["display"]}},
        {"name": "memory_smart_search", "params": {"query": "dark", "tags": "display"}},
        {"name": "memory_read", "params": {"id": "user prefers dark mode"}},
    ]);
    let out = json_lines(&ok(&run_stdin(&store, &["agent"], &calls.to_string())));
    assert_eq!(out.len(), 6, "{out:?}");
    for (result, call) in out.iter().zip(calls.as_array().expect("calls")) {
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["name"], call["name"]);
    }
    let id = out[0]["result"]["id"].as_str().expect("id").to_string();
    assert_eq!(
        out[1]["result"]["results"][0]["id"],
        id.as_str(),
        "{}",
        out[1]
    );
    assert_eq!(
        out[4]["result"]["results"][0]["id"],
        id.as_str(),
        "{}",
        out[4]
    );
    let memories = out[2]["result"]["memories"].as_array().expect("memories");
    assert_eq!(memories.len(), 1);
    let record: Value =
        serde_json::from_str(&ok(&run(&store, &["read", &id, "--json"], None))).expect("json");
    assert_eq!(record["tags"], json!(["ui", "theme", "display"]));

    // One call alone; a failed call is a result, and fails the command.
    let one = json!({"name": "memory_delete", "params": {"id": id}});
    let out = json_lines(&ok(&run_stdin(&store, &["agent"], &one.to_string())));
    assert_eq!(out[0]["result"]["deleted"], true, "{:?}", out);
    let batch = json!([
        {"name": "memory_read", "params": {"id": id}},
        {"name": "memory_write", "params": {"content": "still written"}},
    ]);
    let failed = run_stdin(&store, &["agent"], &batch.to_string());
    refused(&failed, "1 of 2 tool calls failed");
    let out = json_lines(&String::from_utf8_lossy(&failed.stdout));
    assert_eq!(out[0]["ok"], false);
    assert!(
        out[0]["error"]["message"]
            .as_str()
            .expect("message")
            .contains(&id),
        "{}",
        out[0]
    );
    assert_eq!(out[1]["ok"], true);
    assert!(store.join("inbox/still-written.md").is_file());
    // A scoped agent writes in its scope.
    let scoped = json!({"name": "memory_write", "params": {"content": "mine only", "category": "knowledge"}});
    ok(&run_stdin(
        &store,
        &["agent", "--scope", "agent:claude"],
        &scoped.to_string(),
    ));
    let text = fs::read_to_string(store.join("knowledge/mine-only.md")).expect("written");
    assert!(text.contains("scope: agent:claude"), "{text}");
    // An empty memory is refused, and nothing is written.
    let before = common::file_tree(&store);
    let empty = json!({"name": "memory_write", "params": {"content": "  \n"}});
    let failed = run_stdin(&store, &["agent"], &empty.to_string());
    refused(&failed, "1 of 1 tool calls failed");
    let out = json_lines(&String::from_utf8_lossy(&failed.stdout));
    assert!(
        out[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("content is empty")),
        "{}",
        out[0]
    );
    assert_eq!(common::file_tree(&store), before);
}

#[test]
fn lifecycle_commands_run_one_organizer_step_each() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    seed(
        &store.with_extension("config"),
        &[(
            "mnemofs/config.yaml",
            "lifecycle:\n  decay:\n    enabled: true\n    after: 30d\nnotifications:\n  method: none\n",
        )],
    );
    seed(
        &store,
        &[
            (
                "knowledge/old.md",
                "---\nid: old-1\ncategory: knowledge\ncreated_at: 2020-01-01T00:00:00Z\n---\nAn old fact nobody reads.\n",
            ),
            (
                "knowledge/dup1.md",
                "---\nid: dup-1\ncategory: knowledge\n---\nThe build uses cargo and rustc, version one point eighty.\n",
            ),
            (
                "knowledge/dup2.md",
                "---\nid: dup-2\ncategory: knowledge\n---\nThe build uses cargo and rustc, version one point eighty.\n",
            ),
            (
                "inbox/tabs.md",
                "I prefer tabs over spaces in every editor.\n",
            ),
            (
                "knowledge/linker.md",
                "---\nid: w-1\n---\nSee [[Target Note]] for more.\n",
            ),
            (
                "knowledge/target.md",
                "---\nid: t-1\ntitle: Target Note\n---\nThe target.\n",
            ),
            (
                "reminders/passport.md",
                "---\nid: r-1\ntitle: Renew the passport\ntype: reminder\ncategory: reminders\ndue_at: 2020-05-01T09:00:00Z\n---\nRenew the passport.\n",
            ),
        ],
    );
    // The file's own time is old too: nothing has used it since.
    let old = fs::File::options()
        .write(true)
        .open(store.join("knowledge/old.md"))
        .expect("open");
    old.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_577_836_800))
        .expect("mtime");
    drop(old);

    let up = ok(&run(&store, &["upgrade", "inbox/tabs.md"], None));
    assert_eq!(up.trim(), "upgrade: moved to preferences/tabs.md");
    assert!(store.join("preferences/tabs.md").is_file());
    refused(
        &run(&store, &["upgrade", "knowledge/target.md"], None),
        "only inbox memories are upgraded",
    );
    let decay = ok(&run(&store, &["decay"], None));
    assert_eq!(decay.trim(), "decay: 1 decayed");
    assert!(store.join("archive/decayed/old.md").is_file());
    let consolidate: Value =
        serde_json::from_str(&ok(&run(&store, &["consolidate", "--json"], None))).expect("json");
    assert_eq!(consolidate["step"], "consolidate");
    assert_eq!(consolidate["report"]["merged"], 1, "{consolidate}");
    assert!(store.join("archive/merged/dup2.md").is_file());
    assert!(store.join("knowledge/dup1.md").is_file());
    let resolved = ok(&run(&store, &["resolve-links"], None));
    assert_eq!(resolved.trim(), "resolve-links: 1 links resolved");
    let linker = fs::read_to_string(store.join("knowledge/linker.md")).expect("linker");
    assert!(linker.contains("links: [t-1]"), "{linker}");
    let notify = ok(&run(&store, &["notify"], None));
    // When, as the reader's clock shows it (the date may differ by zone).
    assert!(
        notify.lines().any(|l| l.starts_with("due 20")
            && l.ends_with("  Renew the passport  (reminders/passport.md)")),
        "{notify}"
    );
}

#[test]
fn logseq_and_claude_trees_are_ingested_once_with_a_report() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let home = tmp.path().join("home");
    let project = home.join("proj");
    seed(
        &home,
        &[
            (
                ".claude/CLAUDE.md",
                "# Global rules\nAlways run the tests.\n",
            ),
            (
                ".claude/projects/-home-proj/memory/MEMORY.md",
                "The user's build uses cargo nextest.\n",
            ),
            ("proj/CLAUDE.md", "# Project rules\nUse jiff for dates.\n"),
            (".claude/settings.json", "{}"),
        ],
    );
    fs::write(
        home.join(".claude.json"),
        json!({"projects": {project.to_string_lossy(): {}}}).to_string(),
    )
    .expect("claude.json");
    let graph = tmp.path().join("graph");
    seed(
        &graph,
        &[
            (
                "pages/Project Alpha.md",
                "tags:: work, rust\nalias:: PA\n\n- Alpha depends on [[Beta]]\n",
            ),
            ("pages/Beta.md", "- Beta is the storage layer\n"),
            (
                "journals/2026_01_02.md",
                "- Met the [[Project Alpha]] team\n",
            ),
            ("logseq/config.edn", "{}"),
        ],
    );
    fs::write(graph.join("pages/Broken.md"), b"\xff\xfe not text").expect("broken");

    let env = [
        ("HOME", home.as_path()),
        ("XDG_RUNTIME_DIR", &store.with_extension("run")),
        ("XDG_CONFIG_HOME", &store.with_extension("config")),
    ];
    let claude = |json: bool| {
        let mut args = vec!["ingest", "--source", "claude"];
        if json {
            args.push("--json");
        }
        ok(&run_env(&store, &args, None, &env))
    };
    assert_eq!(
        claude(false).trim(),
        "read 3, written 3, duplicates 0, skipped 0"
    );
    let again: Value = serde_json::from_str(&claude(true)).expect("json");
    assert_eq!(
        again,
        json!({"read": 3, "written": 0, "duplicates": 3, "skipped": []})
    );
    let mut ingested: Vec<String> = fs::read_dir(store.join("inbox"))
        .expect("inbox")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    ingested.sort();
    assert_eq!(
        ingested,
        ["claude-md-global.md", "claude-md-of-proj.md", "memory.md"]
    );
    let memory = fs::read_to_string(store.join("inbox/memory.md")).expect("auto memory");
    assert!(
        memory.contains("source: claude") && memory.contains("cargo nextest"),
        "{memory}"
    );

    let graph_arg = graph.to_string_lossy().into_owned();
    let logseq = [
        "ingest",
        "--source",
        "logseq",
        "--path",
        graph_arg.as_str(),
        "--into-inbox",
    ];
    let first = ok(&run_env(&store, &logseq, None, &env));
    let broken = graph.join("pages/Broken.md");
    assert_eq!(
        first,
        format!(
            "read 4, written 3, duplicates 0, skipped 1\nskipped not UTF-8 text: {}\n",
            broken.display()
        )
    );
    let second = ok(&run_env(&store, &logseq, None, &env));
    assert!(
        second.starts_with("read 4, written 0, duplicates 3, skipped 1"),
        "{second}"
    );
    let alpha = fs::read_to_string(store.join("inbox/project-alpha.md")).expect("page");
    for want in [
        "title: Project Alpha",
        "- work",
        "- rust",
        "- PA",
        "source: logseq",
        "[[Beta]]",
    ] {
        assert!(alpha.contains(want), "{want:?} not in {alpha}");
    }
    assert!(!alpha.contains("tags::"), "{alpha}");
    let back = json_lines(&ok(&run_env(
        &store,
        &["backlinks", "Project Alpha", "--json"],
        None,
        &env,
    )));
    assert_eq!(paths(&back), ["inbox/2026-01-02.md"]);
    let back = json_lines(&ok(&run_env(
        &store,
        &["backlinks", "Beta", "--json"],
        None,
        &env,
    )));
    assert_eq!(paths(&back), ["inbox/project-alpha.md"]);
}

#[test]
fn car_agent_and_fingersaver_notes_come_in_cut_at_5000_characters_with_all() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let home = tmp.path().join("home");
    let long = "é".repeat(6000) + "\n";
    seed(
        &home,
        &[
            (".car-agent/notes/long.md", long.as_str()),
            (".car-agent/short.md", "A short car-agent note.\n"),
            (".fingersaver/chat.md", "user: remember the blue door\n"),
            (".fingersaver/other.md", "not the chat log\n"),
        ],
    );
    let env = [
        ("HOME", home.as_path()),
        ("XDG_RUNTIME_DIR", &store.with_extension("run")),
        ("XDG_CONFIG_HOME", &store.with_extension("config")),
    ];
    let report = ok(&run_env(&store, &["ingest", "--source", "all"], None, &env));
    let mut lines = report.lines();
    assert_eq!(
        lines.next(),
        Some("read 3, written 3, duplicates 0, skipped 3"),
        "{report}"
    );
    assert!(report.contains("not found here: claude"), "{report}");
    assert!(
        report.contains("--source obsidian --path VAULT"),
        "{report}"
    );
    let record: Value = serde_json::from_str(&ok(&run_env(
        &store,
        &["read", "inbox/long.md", "--json"],
        None,
        &env,
    )))
    .expect("json");
    // Cut on a character (not a byte) boundary; the file ends its line.
    let content = record["content"].as_str().expect("content");
    assert_eq!(content.trim_end(), "é".repeat(5000));
    assert_eq!(record["source"], "car-agent");
    let chat = fs::read_to_string(store.join("inbox/chat.md")).expect("chat");
    assert!(
        chat.contains("source: fingersaver") && chat.contains("blue door"),
        "{chat}"
    );
    assert!(!store.join("inbox/other.md").exists());
    let again = ok(&run_env(&store, &["ingest", "--source", "all"], None, &env));
    assert!(
        again.starts_with("read 3, written 0, duplicates 3"),
        "{again}"
    );
}

#[test]
fn bad_input_is_one_sentence_and_a_failure() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let id = ok(&run(
        &store,
        &["write", "a memory", "--category", "knowledge"],
        None,
    ));
    let id = id.trim();
    refused(
        &run(&store, &["write", "  \n"], None),
        "the content is empty",
    );
    refused(
        &run(&store, &["write", "x", "--scope", "claude"], None),
        "\"claude\" is not a scope: use global or agent:NAME",
    );
    for args in [
        vec!["read", "no-such-memory"],
        vec!["delete", "no-such-memory"],
        vec!["backlinks", "no-such-memory"],
        vec!["upgrade", "no-such-memory"],
        vec!["link", id, "no-such-memory"],
        vec!["unlink", "no-such-memory", id],
    ] {
        refused(
            &run(&store, &args, None),
            "no memory is named \"no-such-memory\"",
        );
    }
    for outside in [
        "../escape.md",
        "/etc/escape.md",
        "knowledge/../../escape.md",
    ] {
        refused(
            &run(&store, &["write", "x", "--path", outside], None),
            "invalid path",
        );
    }
    assert!(!tmp.path().join("escape.md").exists());
    refused(
        &run(
            &store,
            &[
                "ingest",
                "--source",
                "obsidian",
                "--path",
                "/nonexistent/vault",
            ],
            None,
        ),
        "/nonexistent/vault",
    );
    refused(
        &run(
            &store,
            &["import"],
            Some("{\"content\": \"fine\"}\n{oops\n"),
        ),
        "line 2: not JSON",
    );
    refused(
        &run_stdin(&store, &["agent"], "write x"),
        "stdin is not JSON",
    );
    refused(&run_stdin(&store, &["agent"], ""), "no tool call on stdin");
    // Input that never ends costs a bounded buffer and one sentence.
    for (args, what) in [
        (&["write", "-"][..], "the text on stdin is over 64 MiB"),
        (&["remember", "-"][..], "the text on stdin is over 64 MiB"),
        (&["agent"][..], "the tool calls on stdin is over"),
    ] {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("exec \"$0\" \"$@\" < /dev/zero")
            .arg(bin())
            .args(args)
            .arg("--store")
            .arg(&store)
            .env("XDG_RUNTIME_DIR", store.with_extension("run"))
            .env("XDG_CONFIG_HOME", store.with_extension("config"))
            .env("MNEMOFS_LOG", "warn");
        let out = run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung");
        refused(&out, what);
    }
    // A line too long to be a memory is named and skipped; the rest go in.
    let long = format!(
        "{{\"content\": \"{}\"}}\n{{\"content\": \"after the long line\"}}\n",
        "x".repeat(400 << 20)
    );
    let out = run(&store, &["import"], Some(&long));
    refused(&out, "line 1: longer than");
    assert!(
        ok(&run(&store, &["search", "after the long line"], None)).contains("after the long line")
    );
    let missing = store.with_extension("absent.jsonl");
    let out = run(
        &store,
        &["import", "--input", &missing.to_string_lossy()],
        None,
    );
    refused(&out, "cannot read");
    // Nothing was lost along the way.
    let record: Value =
        serde_json::from_str(&ok(&run(&store, &["read", id, "--json"], None))).expect("json");
    assert_eq!(record["content"], "a memory\n");
}

/// Every file below `root`, relative to it.
fn files_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(root).expect("below");
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_import_killed_midway_finishes_on_a_rerun_without_duplicates() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    const N: usize = 3000;
    const CATEGORIES: [&str; 3] = ["knowledge", "project", "people"];
    let lines: String = (0..N)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("m-{i}"), "content": format!("memory number {i}"),
                       "phase": "organized", "category": CATEGORIES[i % 3]})
            )
        })
        .collect();
    let input = tmp.path().join("in.jsonl");
    fs::write(&input, &lines).expect("input");
    let mut child = Command::new(bin())
        .args(["import", "--input"])
        .arg(&input)
        .arg("--store")
        .arg(&store)
        .arg("--state-dir")
        .arg(store.with_extension("state"))
        .env("XDG_RUNTIME_DIR", store.with_extension("run"))
        .env("MNEMOFS_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn import");
    // Killed once some memories are in (or after it finished: the rerun
    // must hold either way).
    common::poll_until(Duration::from_secs(60), || {
        fs::read_dir(store.join("knowledge")).is_ok_and(|d| d.count() > 50)
    });
    let _ = child.kill();
    let _ = child.wait();
    let rerun = ok(&run(
        &store,
        &["import", "--input", &input.to_string_lossy()],
        None,
    ));
    let counts: Vec<usize> = rerun
        .trim()
        .split(", ")
        .map(|part| {
            part.rsplit(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("a count")
        })
        .collect();
    eprintln!("rerun after the kill: {rerun}");
    assert_eq!(counts[0], N, "{rerun}");
    assert_eq!(
        counts[1] + counts[2],
        N,
        "every memory written or already there: {rerun}"
    );
    let files = files_below(&store);
    assert_eq!(
        files.len(),
        N,
        "no duplicate and no temp file left: {:?}",
        &files[..5]
    );
    assert!(files.iter().all(|f| f.ends_with(".md")), "{files:?}");
    let again = ok(&run(
        &store,
        &["import", "--input", &input.to_string_lossy()],
        None,
    ));
    assert_eq!(
        again.trim(),
        format!("read {N}, written 0, duplicates {N}, skipped 0")
    );
}

#[test]
fn an_ambiguous_ref_lists_its_candidates() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    seed(
        &store,
        &[
            (
                "people/ann.md",
                "---\nid: p-1\ntitle: Ann\n---\nAnn from work.\n",
            ),
            (
                "project/ann.md",
                "---\nid: p-2\ntitle: Ann\n---\nThe Ann project.\n",
            ),
        ],
    );
    refused(
        &run(&store, &["read", "Ann"], None),
        "\"Ann\" names 2 memories: people/ann.md, project/ann.md",
    );
    assert_eq!(
        ok(&run(&store, &["read", "project/ann.md"], None)),
        "The Ann project.\n"
    );
}

/// Runs the binary in a private mount namespace whose `/dev/fuse` is
/// `/dev/null`, as in a container without the device.
#[cfg(target_os = "linux")]
fn without_fuse(store: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let input = store.with_extension("nofuse-stdin");
    fs::write(&input, stdin.unwrap_or("")).expect("stdin file");
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-m",
        "sh",
        "-c",
        "mount --bind /dev/null /dev/fuse && exec \"$@\" < \"$MNEMOFS_TEST_STDIN\"",
        "sh",
    ])
    .arg(bin())
    .args(args)
    .arg("--store")
    .arg(store)
    .arg("--state-dir")
    .arg(store.with_extension("state"))
    .env("MNEMOFS_TEST_STDIN", &input)
    .env("XDG_RUNTIME_DIR", store.with_extension("run"))
    .env("XDG_CONFIG_HOME", store.with_extension("config"))
    .env("MNEMOFS_LOG", "warn");
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

#[test]
#[cfg(target_os = "linux")]
fn the_commands_work_where_fuse_is_unavailable() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: a private mount namespace needs root");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let a = ok(&without_fuse(
        &store,
        &["write", "Puffins nest on cliffs", "--category", "knowledge"],
        None,
    ));
    let b = ok(&without_fuse(
        &store,
        &["write", "Cliffs erode", "--category", "knowledge"],
        None,
    ));
    ok(&without_fuse(&store, &["link", a.trim(), b.trim()], None));
    let back = json_lines(&ok(&without_fuse(
        &store,
        &["backlinks", b.trim(), "--json"],
        None,
    )));
    assert_eq!(paths(&back), ["knowledge/puffins-nest-on-cliffs.md"]);
    let hits = json_lines(&ok(&without_fuse(
        &store,
        &["search", "cliffs", "--category", "knowledge", "--json"],
        None,
    )));
    assert_eq!(hits.len(), 2);
    let call = json!({"name": "memory_search", "params": {"query": "puffins"}});
    let out = json_lines(&ok(&without_fuse(
        &store,
        &["agent"],
        Some(&call.to_string()),
    )));
    assert_eq!(
        out[0]["result"]["results"][0]["path"],
        "knowledge/puffins-nest-on-cliffs.md"
    );
    let export = ok(&without_fuse(&store, &["export"], None));
    assert_eq!(json_lines(&export).len(), 2);
    let other = new_store(tmp.path(), "t");
    let file = tmp.path().join("export.jsonl");
    fs::write(&file, &export).expect("export file");
    let file = file.to_string_lossy().into_owned();
    let report = ok(&without_fuse(&other, &["import", "--input", &file], None));
    assert!(report.starts_with("read 2, written 2"), "{report}");
    ok(&without_fuse(&store, &["consolidate"], None));
    ok(&without_fuse(&store, &["delete", b.trim()], None));
    assert!(!store.join("knowledge/cliffs-erode.md").exists());
}

/// Runs a command against a store a daemon serves (its registry is found
/// through the same runtime dir the daemon uses).
fn run_served(store: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .arg("--store")
        .arg(store)
        .env("MNEMOFS_LOG", "warn");
    run_with_timeout(&mut cmd, Duration::from_secs(180)).expect("the command hung")
}

#[test]
#[cfg(target_os = "linux")]
fn every_command_goes_through_a_running_daemon() {
    let config_dir = tempfile::tempdir().expect("tempdir");
    let config = config_dir.path().join("config.yaml");
    // The organizer runs (the lifecycle steps need it), but leaves the
    // inbox to the commands for the length of the test.
    fs::write(
        &config,
        "organizer:\n  quiet_period: 1h\n  interval: 1h\nlifecycle:\n  decay:\n    enabled: true\n    after: 30d\nnotifications:\n  method: none\n",
    )
    .expect("config");
    let m = common::Mount::with_options(common::MountOptions {
        organizer: true,
        extra_args: vec!["--config".into(), config.to_string_lossy().into_owned()],
        seed: vec![(
            "reminders/passport.md".into(),
            b"---\nid: r-1\ntitle: Renew the passport\ntype: reminder\ncategory: reminders\ndue_at: 2020-05-01T09:00:00Z\n---\nRenew it.\n".to_vec(),
        )],
        ..Default::default()
    });
    let served = |args: &[&str]| ok(&run_served(&m.store, args));
    fs::create_dir(m.m("project")).expect("a folder on the mount");
    let watcher = common::InotifyWatcher::new(&m.m("project"));
    let a: Value = serde_json::from_str(&served(&[
        "write",
        "Alpha note on gannets",
        "--category",
        "project",
        "--json",
    ]))
    .expect("json");
    let path = a["path"].as_str().expect("path").to_string();
    // Written through the mount: a watcher there sees it.
    assert!(
        watcher.saw_something(),
        "a watcher on the mount saw the CLI's write"
    );
    assert!(m.m(&path).is_file(), "{path} not on the mount");
    let a = a["id"].as_str().expect("id").to_string();
    let b = served(&[
        "write",
        "Beta note on gannets",
        "--category",
        "project",
        "--tags",
        "birds",
    ]);
    let b = b.trim().to_string();
    served(&[
        "write",
        "Claude's own gannets",
        "--category",
        "project",
        "--scope",
        "agent:claude",
    ]);
    // A write returns once the daemon's index has it: ids resolve and
    // searches find it at once.
    assert_eq!(
        json_lines(&served(&["search", "gannets", "--json"])).len(),
        3
    );
    served(&["read", &b]);
    let record: Value = serde_json::from_str(&served(&["read", &a, "--json"])).expect("json");
    assert_eq!(record["path"], path.as_str());
    let listed = json_lines(&served(&["list", "--category", "project", "--json"]));
    assert_eq!(listed.len(), 3);
    let copilot = json_lines(&served(&["list", "--scope", "agent:copilot", "--json"]));
    assert!(
        copilot.iter().all(|r| r["scope"] == "global"),
        "{copilot:?}"
    );
    let hits = json_lines(&served(&[
        "search",
        "gannets",
        "--tags",
        "birds",
        "--category",
        "project",
        "--scope",
        "agent:copilot",
        "--json",
    ]));
    assert_eq!(paths(&hits), ["project/beta-note-on-gannets.md"]);

    served(&["link", &a, &b]);
    let a_text = fs::read_to_string(m.m(&path)).expect("a");
    assert!(a_text.contains(&b), "{a_text}");
    let back = json_lines(&served(&["backlinks", &a, "--json"]));
    assert_eq!(paths(&back), ["project/beta-note-on-gannets.md"]);
    assert_eq!(
        served(&["unlink", &a, &b])
            .lines()
            .next()
            .unwrap_or_default(),
        format!("unlinked {path} and project/beta-note-on-gannets.md")
    );
    assert!(!fs::read_to_string(m.m(&path)).expect("a").contains(&b));

    let inbox = served(&["write", "I prefer tabs over spaces in every editor"]);
    let up = served(&["upgrade", inbox.trim(), "--category", "preferences"]);
    assert!(up.starts_with("upgrade: moved to preferences/"), "{up}");
    for step in ["decay", "consolidate", "resolve-links", "notify"] {
        let out = served(&[step]);
        assert!(out.starts_with(&format!("{step}: ")), "{out}");
    }
    assert!(served(&["notify"]).contains("Renew the passport"));

    let vault = config_dir.path().join("vault");
    seed(
        &vault,
        &[
            ("Ideas/Gull.md", "Gulls follow [[Gannet]].\n"),
            ("Gannet.md", "The gannet dives.\n"),
        ],
    );
    let vault = vault.to_string_lossy().into_owned();
    let ingest = [
        "ingest",
        "--source",
        "obsidian",
        "--path",
        vault.as_str(),
        "--keep-folders",
    ];
    assert!(served(&ingest).starts_with("read 2, written 2, duplicates 0"));
    assert!(m.m("obsidian/Ideas/Gull.md").is_file());
    assert!(served(&ingest).starts_with("read 2, written 0, duplicates 2"));

    let export = json_lines(&served(&["export"]));
    assert!(export.len() >= 7, "{export:?}");
    let lines = config_dir.path().join("memory-cli.jsonl");
    fs::write(&lines, "{\"ID\":\"m-1\",\"Content\":\"user prefers tea\",\"Phase\":\"organized\",\"Category\":\"preferences\"}\n").expect("lines");
    let lines = lines.to_string_lossy().into_owned();
    assert!(served(&["import", "--input", &lines]).starts_with("read 1, written 1"));
    assert!(m.m("preferences/user-prefers-tea.md").is_file());

    // In one batch, a search finds what the write before it wrote.
    let calls = json!([
        {"name": "memory_write", "params": {"content": "agents write through the daemon", "category": "knowledge"}},
        {"name": "memory_search", "params": {"query": "agents daemon"}},
    ]);
    let out = json_lines(&ok(&run_env(
        &m.store,
        &["agent"],
        Some(&calls.to_string()),
        &[],
    )));
    assert!(out.iter().all(|r| r["ok"] == true), "{out:?}");
    assert_eq!(
        out[1]["result"]["results"][0]["path"], "knowledge/agents-write-through-the-daemon.md",
        "{out:?}"
    );
    assert!(
        m.m("knowledge/agents-write-through-the-daemon.md")
            .is_file()
    );

    served(&["delete", &b]);
    assert!(!m.m("project/beta-note-on-gannets.md").exists());
    refused(&run_served(&m.store, &["read", &b]), "no memory is named");
}

/// `mnemofs serve` on `store`, once it says it is ready.
fn serve(store: &Path, state: &Path) -> common::Stopped {
    use std::io::BufRead;
    let mut child = Command::new(bin())
        .args(["serve", "--store"])
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .env("MNEMOFS_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn mnemofs serve");
    let stdout = child.stdout.take().expect("stdout");
    let serving = common::Stopped(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("mnemofs serve says it is ready");
    assert!(line.starts_with("serving "), "{line:?}");
    serving
}

/// `MNEMOFS_CONFIG` names the configuration of every command; a file it
/// names that is not there is said, not taken for the defaults.
#[test]
fn the_config_named_by_the_environment_is_read_by_every_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let missing = tmp.path().join("nowhere.yaml");
    let mut cmd = Command::new(bin());
    cmd.args(["search", "anything", "--store"])
        .arg(&store)
        .env("MNEMOFS_CONFIG", &missing);
    let out = run_with_timeout(&mut cmd, Duration::from_secs(60)).expect("search hung");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot read config"), "{said}");
    let config = tmp.path().join("c.yaml");
    fs::write(&config, "search: { model: /nowhere/model }\n").expect("config");
    let mut cmd = Command::new(bin());
    cmd.args(["status", "--store"])
        .arg(&store)
        .env("MNEMOFS_CONFIG", &config);
    let out = run_with_timeout(&mut cmd, Duration::from_secs(60)).expect("status hung");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("/nowhere/model"),
        "the model it names: {said}"
    );
    // And the status says why search is by words only.
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("by words only, as the model in /nowhere/model"),
        "{shown}"
    );
}

/// A daemon whose socket file was removed (by hand, or a cleaner of
/// `/run/user`) still stops at SIGTERM.
#[test]
fn a_daemon_whose_socket_file_is_gone_still_stops_on_sigterm() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let state = tmp.path().join("state");
    let mut daemon = serve(&store, &state);
    let status = run_served(&store, &["status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).expect("status json");
    let socket = status["socket"].as_str().expect("socket").to_owned();
    fs::remove_file(&socket).expect("remove the socket file");
    common::signal(daemon.0.id(), libc::SIGTERM);
    assert!(
        common::wait_timeout(&mut daemon.0, Duration::from_secs(30)).is_some(),
        "still running 30 s after SIGTERM"
    );
}

/// A long-lived session (the memory tool here, MCP alike) outlives the
/// daemon it was served by: once another serves the store, its next call
/// goes there.
#[test]
fn a_tool_session_reaches_the_daemon_that_serves_the_store_after_a_restart() {
    use std::io::{BufRead, Write};
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let state = tmp.path().join("state");
    let first = serve(&store, &state);
    let mut tool = Command::new(bin())
        .args(["tool", "--store"])
        .arg(&store)
        .env("MNEMOFS_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn mnemofs tool");
    let mut input = tool.stdin.take().expect("stdin");
    let mut output = std::io::BufReader::new(tool.stdout.take().expect("stdout"));
    let mut ask = |call: Value| -> Value {
        writeln!(input, "{call}").expect("send");
        input.flush().expect("flush");
        let mut line = String::new();
        output.read_line(&mut line).expect("answer");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    };
    let made = ask(json!({"command": "create", "path": "/memories/a.md", "file_text": "one\n"}));
    assert_eq!(made["is_error"], false, "{made}");
    drop(first);
    let _second = serve(&store, &state);
    let seen = ask(json!({"command": "view", "path": "/memories/a.md"}));
    assert_eq!(seen["is_error"], false, "{seen}");
    assert!(
        seen["content"].as_str().is_some_and(|c| c.contains("one")),
        "{seen}"
    );
    drop(input);
    let _ = common::wait_timeout(&mut tool, Duration::from_secs(30));
}

#[test]
fn the_commands_go_through_mnemofs_serve_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = new_store(tmp.path(), "s");
    let serving = serve(&store, &tmp.path().join("state"));
    let served = |args: &[&str]| ok(&run_served(&store, args));
    let a = served(&["write", "Terns migrate far", "--category", "knowledge"]);
    let b = served(&[
        "write",
        "Arctic summers",
        "--category",
        "knowledge",
        "--scope",
        "agent:claude",
    ]);
    let (a, b) = (a.trim(), b.trim());
    let hits = json_lines(&served(&["search", "terns", "--json"]));
    assert_eq!(paths(&hits), ["knowledge/terns-migrate-far.md"]);
    served(&["link", a, b]);
    let back = json_lines(&served(&["backlinks", a, "--json"]));
    assert_eq!(paths(&back), ["knowledge/arctic-summers.md"]);
    let copilot = json_lines(&served(&["list", "--scope", "agent:copilot", "--json"]));
    assert_eq!(paths(&copilot), ["knowledge/terns-migrate-far.md"]);
    let call = json!([
        {"name": "memory_write", "params": {"content": "Skuas chase terns", "category": "knowledge"}},
        {"name": "memory_search", "params": {"query": "skuas"}},
    ]);
    let out = json_lines(&ok(&run_env(
        &store,
        &["agent"],
        Some(&call.to_string()),
        &[],
    )));
    assert_eq!(
        out[1]["result"]["results"][0]["path"],
        "knowledge/skuas-chase-terns.md"
    );
    let status: Value = serde_json::from_str(&served(&["status", "--json"])).expect("json");
    assert_eq!(status["served_by"], "daemon", "{status}");
    served(&["unlink", a, b]);
    served(&["delete", b]);
    assert!(!store.join("knowledge/arctic-summers.md").exists());
    // A dream files the inbox; a search right after it finds the note
    // where it now is.
    served(&[
        "write",
        "Lesson learned: petrels taught us to check the weather before a trip.",
    ]);
    served(&["dream"]);
    let hits = json_lines(&served(&["search", "petrels", "--json"]));
    let found = paths(&hits);
    assert_eq!(found.len(), 1, "{hits:?}");
    assert!(store.join(&found[0]).is_file(), "a path gone: {found:?}");
    // A memory within the size cap whose JSON is much longer (control
    // characters are six bytes each there) is written, as without a daemon.
    let control = "\u{1}".repeat(15 << 20);
    ok(&run_env(
        &store,
        &["write", "-", "--path", "notes/control.md"],
        Some(&control),
        &[],
    ));
    let written = fs::read(store.join("notes/control.md")).expect("read");
    assert!(
        written.ends_with(format!("{control}\n").as_bytes()),
        "the memory's body changed"
    );
    drop(serving);
}
