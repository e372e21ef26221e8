//! `mnemofs sync`: two stores and a bare remote on this machine, with and
//! without mounts.
//!
//! Every test ends with the same checks: both stores hold the same files,
//! no file holds conflict markers, and every version written along the way
//! is still somewhere, in a file or in the history (git's, or mnemofs's
//! kept versions).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{bin, run_with_timeout, succeeded as ok};
use serde_json::Value;

/// A store on "one machine": its folder, and where a command without a
/// daemon keeps its state.
struct Machine {
    store: PathBuf,
    state: PathBuf,
    /// The registry's folder for commands without a daemon; `None` to find
    /// the test's mounts in the usual one.
    runtime: Option<PathBuf>,
}

impl Machine {
    fn new(root: &Path, name: &str) -> Machine {
        let store = root.join(name);
        fs::create_dir_all(&store).expect("store");
        Machine {
            state: root.join(format!("{name}.state")),
            runtime: Some(root.join(format!("{name}.run"))),
            store,
        }
    }

    /// The store of a mount, reached through its daemon.
    fn mounted(m: &common::Mount) -> Machine {
        Machine {
            store: m.store.clone(),
            state: m.state.clone(),
            runtime: None,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .arg("--store")
            .arg(&self.store)
            .env("MNEMOFS_LOG", "warn")
            // The user's own git config plays no part in the tests.
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        if let Some(runtime) = &self.runtime {
            cmd.arg("--state-dir")
                .arg(&self.state)
                .env("XDG_RUNTIME_DIR", runtime)
                .env("XDG_CONFIG_HOME", runtime.with_extension("config"));
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        run_with_timeout(&mut self.command(args), Duration::from_secs(120)).expect("hung")
    }

    fn ok(&self, args: &[&str]) -> String {
        ok(&self.run(args))
    }

    fn sync(&self) -> String {
        let out = self.ok(&["sync"]);
        eprintln!("{}: {}", self.store.display(), out.trim());
        out
    }

    fn init(&self, remote: &Path, host: &str) -> String {
        let remote = remote.to_string_lossy().into_owned();
        self.ok(&["sync", "init", &remote, "--host", host])
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.store.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.store.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        tree(&self.store)
    }

    /// The id the store gives the memory at `rel`.
    fn id(&self, rel: &str) -> String {
        let out = self.ok(&["read", rel, "--json"]);
        let record: Value = serde_json::from_str(&out).expect("json");
        record["id"].as_str().expect("an id").to_owned()
    }
}

/// Every file below `root` but git's, by relative path.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    common::file_tree_without(root, &[".git"])
}

/// Every blob in the git repository at `git_dir`.
fn blobs(git_dir: &Path) -> BTreeSet<Vec<u8>> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .expect("git cat-file");
    let mut blobs = BTreeSet::new();
    let mut rest = &out.stdout[..];
    while let Some(end) = rest.iter().position(|b| *b == b'\n') {
        let header = String::from_utf8_lossy(&rest[..end]).into_owned();
        let mut parts = header.split(' ');
        let (_, kind, size) = (parts.next(), parts.next(), parts.next());
        let size: usize = size.and_then(|s| s.parse().ok()).expect("size");
        let body = &rest[end + 1..end + 1 + size];
        if kind == Some("blob") {
            blobs.insert(body.to_vec());
        }
        rest = &rest[end + 1 + size + 1..];
    }
    blobs
}

/// A bare remote and two stores set up to sync with it, `a` ("laptop")
/// with `seed`, `b` ("desk") as its clone.
fn two_stores(seed: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, Machine, Machine) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let remote = tmp.path().join("remote.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let a = Machine::new(tmp.path(), "a");
    let b = Machine::new(tmp.path(), "b");
    for (rel, text) in seed {
        a.write(rel, text);
    }
    a.init(&remote, "laptop");
    b.init(&remote, "desk");
    assert_eq!(a.tree(), b.tree(), "b starts as a clone of a");
    (tmp, remote, a, b)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Both stores hold the same files, none with conflict markers, and
/// every text in `written` is in a file or in the history.
fn settled(a: &Machine, b: &Machine, remote: &Path, written: &[String]) {
    let (ta, tb) = (a.tree(), b.tree());
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "the same files"
    );
    assert_eq!(ta, tb, "the same contents");
    for (path, bytes) in &ta {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains("<<<<<<<") && !text.contains(">>>>>>>"),
            "conflict markers in {path}: {text}"
        );
    }
    let mut everywhere: BTreeSet<Vec<u8>> = ta.values().cloned().collect();
    for git_dir in [a.store.join(".git"), b.store.join(".git"), remote.into()] {
        everywhere.extend(blobs(&git_dir));
    }
    for text in written {
        assert!(
            everywhere.contains(text.as_bytes()),
            "lost: {text:?} is in no file and no commit"
        );
    }
}

#[test]
fn edits_on_both_sides_to_different_notes_and_to_the_same_note() {
    let (_tmp, remote, a, b) = two_stores(&[
        ("shared.md", "# Shared\n\nfirst version\n"),
        ("lines.md", "one\ntwo\nthree\nfour\nfive\n"),
        ("notes/a.md", "a's note\n"),
        ("notes/b.md", "b's note\n"),
    ]);
    let texts = [
        ("a", "shared.md", "# Shared\n\nas the laptop has it\n"),
        ("b", "shared.md", "# Shared\n\nas the desk has it\n"),
        ("a", "notes/a.md", "a's note, edited on a\n"),
        ("b", "notes/b.md", "b's note, edited on b\n"),
        ("a", "lines.md", "ONE\ntwo\nthree\nfour\nfive\n"),
        ("b", "lines.md", "one\ntwo\nthree\nfour\nFIVE\n"),
    ];
    for (who, rel, text) in texts {
        if who == "a" { &a } else { &b }.write(rel, text);
    }
    a.sync();
    let report = b.sync();
    assert!(report.contains("conflict"), "{report}");
    a.sync();
    b.sync();

    // Edits to different lines of one note merge; to the same line, the
    // other side's version becomes a copy.
    assert_eq!(b.read("lines.md"), "ONE\ntwo\nthree\nfour\nFIVE\n");
    assert_eq!(b.read("notes/a.md"), "a's note, edited on a\n");
    assert_eq!(b.read("notes/b.md"), "b's note, edited on b\n");
    let copies: Vec<String> = b
        .tree()
        .into_keys()
        .filter(|p| p.starts_with("shared.conflict-laptop-"))
        .collect();
    assert_eq!(copies.len(), 1, "{:?}", b.tree().keys());
    assert!(copies[0].ends_with(".md"), "{copies:?}");
    assert_eq!(b.read(&copies[0]), "# Shared\n\nas the laptop has it\n");
    assert_eq!(b.read("shared.md"), "# Shared\n\nas the desk has it\n");
    let written: Vec<String> = texts.iter().map(|(_, _, t)| t.to_string()).collect();
    settled(&a, &b, &remote, &written);

    // The status and the brief name what is left to resolve.
    let status: Value = serde_json::from_str(&a.ok(&["status", "--json"])).expect("json");
    let conflicts = status["conflicts"].as_array().expect("conflicts");
    assert_eq!(conflicts.len(), 1, "{status}");
    assert_eq!(conflicts[0].as_str(), Some(copies[0].as_str()));
    let brief = a.ok(&["brief"]);
    assert!(
        brief.contains("To resolve") && brief.contains(&copies[0]),
        "{brief}"
    );
    // Resolved (the copy deleted), it is gone from both.
    fs::remove_file(a.store.join(&copies[0])).expect("rm");
    a.sync();
    b.sync();
    assert!(!b.store.join(&copies[0]).exists());
    settled(&a, &b, &remote, &written);
}

#[test]
fn a_delete_on_one_side_and_an_edit_on_the_other() {
    let (_tmp, remote, a, b) = two_stores(&[
        ("gone.md", "deleted on a, untouched on b\n"),
        ("contested.md", "deleted on a, edited on b\n"),
        ("folder/only.md", "the only file of its folder\n"),
    ]);
    fs::remove_file(a.store.join("gone.md")).expect("rm");
    fs::remove_file(a.store.join("contested.md")).expect("rm");
    fs::remove_dir_all(a.store.join("folder")).expect("rm");
    b.write("contested.md", "deleted on a, edited on b: the edit\n");
    a.sync();
    let report = b.sync();
    assert!(report.contains("kept"), "{report}");
    a.sync();

    // The delete propagates, the edit wins over the delete.
    assert!(!b.store.join("gone.md").exists());
    assert!(
        !b.store.join("folder").exists(),
        "an emptied folder goes too"
    );
    assert_eq!(
        a.read("contested.md"),
        "deleted on a, edited on b: the edit\n"
    );
    settled(&a, &b, &remote, &["deleted on a, untouched on b\n".into()]);

    // A delete that came through sync is undone like any other.
    let restored = b.ok(&["restore", "gone.md"]);
    assert!(restored.contains("gone.md"), "{restored}");
    assert_eq!(b.read("gone.md"), "deleted on a, untouched on b\n");
    b.sync();
    a.sync();
    assert_eq!(a.read("gone.md"), "deleted on a, untouched on b\n");
    settled(&a, &b, &remote, &[]);
}

#[test]
fn a_rename_on_one_side_and_an_edit_on_the_other() {
    let (_tmp, remote, a, b) = two_stores(&[(
        "plain.md",
        "Otters\n\nA note without frontmatter about otters.\n",
    )]);
    let id = b.id("plain.md");
    fs::create_dir(a.store.join("animals")).expect("mkdir");
    fs::rename(a.store.join("plain.md"), a.store.join("animals/otters.md")).expect("mv");
    let edited = "Otters\n\nA note without frontmatter about otters.\nThey hold hands asleep.\n";
    b.write("plain.md", edited);
    a.sync();
    b.sync();
    a.sync();

    assert!(!b.store.join("plain.md").exists());
    assert_eq!(b.read("animals/otters.md"), edited);
    // The move reached b as a move: the memory keeps its id there.
    assert_eq!(b.id("animals/otters.md"), id);
    settled(&a, &b, &remote, &[edited.into()]);
}

#[test]
fn a_sync_killed_with_sigkill_is_finished_by_the_next_one() {
    let (_tmp, remote, a, b) = two_stores(&[("both.md", "edited by both, again and again\n")]);
    let mut written = Vec::new();
    // Kill at several points of the round: before anything, while it
    // commits, while it applies a few hundred files, and after.
    for (round, delay_ms) in [0u64, 30, 80, 150, 250, 400].into_iter().enumerate() {
        for i in 0..120 {
            a.write(
                &format!("r{round}/n{i}.md"),
                &format!("note {i} of round {round}\n"),
            );
        }
        if round > 0 {
            fs::remove_file(a.store.join(format!("r{}/n0.md", round - 1))).expect("rm");
            fs::rename(
                a.store.join(format!("r{}/n1.md", round - 1)),
                a.store.join(format!("r{}/moved.md", round - 1)),
            )
            .expect("mv");
        }
        let on_a = format!("both.md as a wrote it in round {round}\n");
        let on_b = format!("both.md as b wrote it in round {round}\n");
        a.write("both.md", &on_a);
        b.write("both.md", &on_b);
        b.write(&format!("b{round}.md"), &format!("b's own note {round}\n"));
        written.extend([on_a, on_b, format!("b's own note {round}\n")]);
        a.sync();

        let mut child = b.command(&["sync"]).spawn().expect("spawn");
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        b.sync();
        a.sync();
        b.sync();
        settled(&a, &b, &remote, &written);
    }
}

#[test]
fn bad_input_is_one_sentence_and_leaves_the_store_as_it_was() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = Machine::new(tmp.path(), "a");
    a.write("note.md", "a note\n");
    let before = a.tree();

    let said = |out: &Output, what: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "should fail: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
        assert!(stderr.contains(what), "{what:?} not in {stderr:?}");
    };
    // A remote that does not exist: nothing is made.
    let missing = tmp.path().join("nowhere.git");
    let out = a.run(&["sync", "init", &missing.to_string_lossy()]);
    said(&out, "cannot reach");
    assert!(!a.store.join(".git").exists());
    assert_eq!(a.tree(), before);
    // A store never set up.
    said(&a.run(&["sync"]), "sync init");

    // A merge the user left unfinished.
    git(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    a.init(&tmp.path().join("remote.git"), "laptop");
    git(&a.store, &["checkout", "-q", "-b", "side"]);
    a.write("note.md", "a note, on a side branch\n");
    git(&a.store, &["commit", "-qam", "side"]);
    git(&a.store, &["checkout", "-q", "main"]);
    a.write("note.md", "a note, on main\n");
    git(&a.store, &["commit", "-qam", "main"]);
    git(&a.store, &["merge", "-q", "side"]);
    assert!(a.store.join(".git/MERGE_HEAD").exists());
    let before = a.tree();
    said(&a.run(&["sync"]), "middle of a merge");
    assert_eq!(a.tree(), before);
    git(&a.store, &["merge", "--abort"]);

    // No way to the remote: the local change stays, committed.
    git(
        &a.store,
        &["remote", "set-url", "origin", &missing.to_string_lossy()],
    );
    a.write("note.md", "written while the remote is away\n");
    let before = a.tree();
    said(&a.run(&["sync"]), "1 local change committed here");
    let out = a.run(&["sync", "--json"]);
    assert!(!out.status.success());
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON on failure too");
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot reach origin")),
        "{answer}"
    );
    assert_eq!(a.tree(), before);
    let log = git(&a.store, &["log", "-1", "--format=%s"]);
    assert!(log.contains("1 change on laptop"), "{log}");
    // Back in reach, the next round pushes that commit, and says so.
    git(
        &a.store,
        &[
            "remote",
            "set-url",
            "origin",
            &tmp.path().join("remote.git").to_string_lossy(),
        ],
    );
    let report = a.sync();
    assert!(report.contains("2 earlier commits pushed"), "{report}");
    assert!(!report.contains("nothing to do"), "{report}");
}

/// A symlink another machine pushed is left alone here, and stays on the
/// remote: rounds here never push its deletion.
#[test]
fn what_another_machine_pushed_and_this_one_does_not_sync_stays_on_the_remote() {
    let (tmp, remote, a, _b) = two_stores(&[("notes/seed.md", "seed\n")]);
    let other = tmp.path().join("other");
    git(
        tmp.path(),
        &["clone", "-q", &remote.to_string_lossy(), "other"],
    );
    std::os::unix::fs::symlink("/etc/passwd", other.join("notes/passwd.md")).expect("symlink");
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-qm", "a symlink"]);
    git(&other, &["push", "-q", "origin", "HEAD:main"]);
    let remote_has_it =
        || git(&remote, &["ls-tree", "-r", "main", "--", "notes/passwd.md"]).contains("120000");
    assert!(remote_has_it());
    a.sync();
    assert!(!a.store.join("notes/passwd.md").exists(), "left alone here");
    a.write("notes/new.md", "written on a\n");
    a.sync();
    a.sync();
    assert!(remote_has_it(), "a's rounds pushed its deletion");
    assert!(git(&remote, &["ls-tree", "-r", "main"]).contains("notes/new.md"));
}

#[test]
fn a_git_repository_inside_the_store_is_said_to_be_left_out() {
    let (_tmp, _remote, a, _b) = two_stores(&[("notes/seed.md", "seed\n")]);
    let nested = a.store.join("thoughts");
    std::fs::create_dir_all(&nested).expect("mkdir");
    std::fs::write(nested.join("idea.md"), "an idea\n").expect("note");
    git(&nested, &["init", "-q"]);
    git(&nested, &["add", "-A"]);
    git(
        &nested,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "own",
        ],
    );
    let report = a.sync();
    assert!(
        report.contains("left out: thoughts/ is a git repository of its own"),
        "{report}"
    );
}

#[test]
fn a_read_only_clone_follows_and_never_pushes() {
    let (tmp, remote, a, b) = two_stores(&[("team.md", "the team's note\n")]);
    let c = Machine::new(tmp.path(), "c");
    let remote_text = remote.to_string_lossy().into_owned();
    c.ok(&[
        "sync",
        "init",
        &remote_text,
        "--read-only",
        "--host",
        "reader",
    ]);
    assert_eq!(c.read("team.md"), "the team's note\n");

    a.write("team.md", "the team's note, updated\n");
    a.sync();
    c.write("mine.md", "the reader's own note\n");
    let head = git(&remote, &["rev-parse", "main"]);
    let report = c.sync();
    assert!(report.contains("read-only"), "{report}");
    assert_eq!(c.read("team.md"), "the team's note, updated\n");
    assert_eq!(git(&remote, &["rev-parse", "main"]), head, "nothing pushed");
    b.sync();
    assert!(!b.store.join("mine.md").exists());
}

#[test]
fn through_mounts_pulled_changes_reach_watchers_the_index_and_ids() {
    let tmp = tempfile::tempdir().expect("tempdir");
    git(
        tmp.path(),
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    );
    let remote = tmp.path().join("remote.git");
    // b's daemon syncs on its own every second, once b is set up.
    let config = tmp.path().join("config.yaml");
    fs::write(&config, "sync:\n  interval: 1s\n").expect("config");
    let ma = common::Mount::start();
    let mb = common::Mount::with_args(&["--config", &config.to_string_lossy()]);
    let (a, b) = (Machine::mounted(&ma), Machine::mounted(&mb));
    a.init(&remote, "laptop");
    b.init(&remote, "desk");

    // A note written on a's mount reaches b's mount: watchers there see
    // it, and b's index finds it.
    let watcher = common::InotifyWatcher::new(&mb.mnt);
    fs::write(ma.m("otters.md"), "Otters\n\nThey hold hands asleep.\n").expect("write");
    a.sync();
    assert!(
        common::poll_until(Duration::from_secs(30), || mb.m("otters.md").exists()),
        "b's schedule pulled the note"
    );
    assert!(watcher.saw_something(), "an inotify watcher on b's mount");
    let found = b.ok(&["search", "hold hands"]);
    assert!(found.contains("otters.md"), "{found}");
    let id = b.id("otters.md");
    assert_eq!(a.id("otters.md"), id);

    // A move on a: b's copy moves too, and keeps its id.
    fs::create_dir(ma.m("animals")).expect("mkdir");
    fs::rename(ma.m("otters.md"), ma.m("animals/otters.md")).expect("mv");
    a.sync();
    assert!(
        common::poll_until(Duration::from_secs(30), || {
            mb.m("animals/otters.md").exists() && !mb.m("otters.md").exists()
        }),
        "the move reached b"
    );
    assert_eq!(b.id("animals/otters.md"), id);
    let link = fs::read_link(mb.m(format!("by-id/{id}.md"))).expect("by-id");
    assert!(link.ends_with("animals/otters.md"), "{}", link.display());

    // Both edit it: b's mount shows a conflict copy, and its lint names it.
    fs::write(ma.m("animals/otters.md"), "Otters, as a has them\n").expect("write");
    fs::write(mb.m("animals/otters.md"), "Otters, as b has them\n").expect("write");
    a.sync();
    b.sync();
    a.sync();
    let lint = fs::read_to_string(mb.m(".mnemofs/lint")).expect("lint");
    assert!(
        lint.contains("animals/otters.conflict-laptop-") && lint.contains("sync conflict"),
        "{lint}"
    );
    // The schedule may still be running a round: wait for the trees to
    // agree rather than for a time.
    assert!(common::poll_until(Duration::from_secs(30), || {
        tree(&ma.store) == tree(&mb.store)
    }));
    settled(
        &a,
        &b,
        &remote,
        &[
            "Otters, as a has them\n".into(),
            "Otters, as b has them\n".into(),
        ],
    );
}

/// A note written on one machine and stamped by each machine's normalizer
/// on its own (its own file time as `created_at`) is one note, the same
/// on both, not a conflict; a body edited on both sides still is one.
#[test]
fn a_note_stamped_on_both_machines_is_no_conflict() {
    let (_tmp, remote, a, b) = two_stores(&[("otter.md", "plain note\n")]);
    let stamped = |at: &str| {
        format!(
            "---\nid: 0b6f3c1e-2d4a-4f70-9a81-b2c3d4e5f6a7\ncreated_at: {at}\nphase: organized\n---\nplain note\n"
        )
    };
    a.write("otter.md", &stamped("2026-11-28T04:44:11Z"));
    b.write("otter.md", &stamped("2026-11-28T04:44:04Z"));
    a.sync();
    let report = b.sync();
    assert!(!report.contains("conflict"), "{report}");
    a.sync();
    b.sync();
    // The earlier stamp, on both.
    assert_eq!(a.read("otter.md"), stamped("2026-11-28T04:44:04Z"));
    assert_eq!(a.tree().len(), 1, "{:?}", a.tree().keys());
    settled(&a, &b, &remote, &[]);
}
