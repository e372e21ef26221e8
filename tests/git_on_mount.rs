//! git on the mount: init, add, commit, branch, merge, gc and fsck must work,
//! and with fixed dates the commit ids must equal those made on a plain
//! directory (same trees, same modes, same contents).

#![cfg(target_os = "linux")]

mod common;

use common::{Mount, TEST_UMASK, have_program, run_with_timeout, set_umask};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn git(repo: &Path, home: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    cmd.current_dir(repo)
        .args([
            "-c",
            "user.name=Mnemo Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "gc.auto=0",
        ])
        .args(args)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05Z")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05Z")
        .env("LC_ALL", "C");
    let out = run_with_timeout(&mut cmd, Duration::from_secs(120))
        .unwrap_or_else(|| panic!("git {args:?} in {} timed out", repo.display()));
    assert!(
        out.status.success(),
        "git {args:?} in {} failed ({}):\nstdout: {}\nstderr: {}",
        repo.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The whole scenario; returns what must be identical on both sides.
fn scenario(repo: &Path, home: &Path) -> Vec<String> {
    let mut seen = Vec::new();
    git(repo, home, &["init", "-q"]);
    fs::create_dir_all(repo.join("notes/deep")).expect("mkdir");
    fs::write(repo.join("README.md"), "# memory\n").expect("write");
    fs::write(repo.join("notes/a.md"), "---\nid: 1\n---\nalpha\n").expect("write");
    fs::write(repo.join("notes/deep/b.md"), "beta ✓ 中文\n").expect("write");
    let bin: Vec<u8> = (0..70_000u32).map(|i| (i % 256) as u8).collect();
    fs::write(repo.join("blob.bin"), &bin).expect("write");
    let script = repo.join("run.sh");
    fs::write(&script, "#!/bin/sh\necho hi\n").expect("write");
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::os::unix::fs::symlink("notes/a.md", repo.join("link.md")).expect("symlink");

    git(repo, home, &["add", "-A"]);
    git(repo, home, &["commit", "-q", "-m", "first"]);
    seen.push(format!(
        "status after commit: {:?}",
        git(repo, home, &["status", "--porcelain"])
    ));
    seen.push(format!(
        "head: {}",
        git(repo, home, &["rev-parse", "HEAD"]).trim()
    ));
    seen.push(git(repo, home, &["ls-files", "-s"]));

    git(repo, home, &["checkout", "-q", "-b", "topic"]);
    fs::write(repo.join("notes/a.md"), "---\nid: 1\n---\nalpha, edited\n").expect("write");
    fs::remove_file(repo.join("notes/deep/b.md")).expect("rm");
    fs::write(repo.join("notes/c.md"), "gamma\n").expect("write");
    git(repo, home, &["add", "-A"]);
    git(repo, home, &["commit", "-q", "-m", "topic work"]);
    git(repo, home, &["checkout", "-q", "main"]);
    seen.push(format!(
        "b.md back on main: {:?}",
        fs::read_to_string(repo.join("notes/deep/b.md")).ok()
    ));
    git(repo, home, &["merge", "-q", "--ff-only", "topic"]);
    seen.push(format!(
        "status after merge: {:?}",
        git(repo, home, &["status", "--porcelain"])
    ));
    seen.push(git(repo, home, &["log", "--format=%H %s"]));
    git(repo, home, &["gc", "-q", "--prune=now"]);
    git(repo, home, &["fsck", "--full", "--strict", "--no-progress"]);
    seen.push(format!(
        "status after gc: {:?}",
        git(repo, home, &["status", "--porcelain"])
    ));
    seen.push(format!(
        "content: {:?}",
        fs::read_to_string(repo.join("notes/a.md")).ok()
    ));
    seen
}

#[test]
fn git_init_add_commit_gc_fsck_work_on_the_mount_like_on_a_plain_dir() {
    if !have_program("git") {
        println!("SKIPPED: git is not installed");
        return;
    }
    set_umask(TEST_UMASK);
    let m = Mount::start();
    let home = tempfile::tempdir().expect("home");
    let p = m.pair();
    let want = scenario(&p.plain, home.path());
    let got = scenario(&p.mounted, home.path());
    common::assert_same_lines("plain dir", &want, "mount", &got);
    assert!(
        want.iter().any(|l| l == "status after commit: \"\""),
        "sanity: git status after commit should be clean: {want:?}"
    );
    // .git/index records inode numbers and ctimes: compare everything else.
    p.assert_trees_equal_except(&[".git/index"]);
}

/// Seven memories in a few folders, as a store has them.
fn seven_memories() -> Vec<(String, Vec<u8>)> {
    [
        (
            "user/preferences.md",
            "# Preferences\nDark mode everywhere.\n",
        ),
        (
            "user/people/ann.md",
            "---\ntitle: Ann\ntags: [team]\n---\nAnn leads the atlas project.\n",
        ),
        ("projects/atlas/plan.md", "# Atlas\n- relates_to [[Ann]]\n"),
        (
            "projects/atlas/decisions.md",
            "---\ntype: decision\nstatus: open\n---\nUse SQLite.\n",
        ),
        (
            "lessons/rust.md",
            "- [lesson] borrow less, clone less #rust\n",
        ),
        // A bare link: a capture the organizer leaves in the inbox.
        (
            "inbox/idea.md",
            "https://redis.io/docs/latest/develop/use/client-side-caching/\n",
        ),
        ("notes.md", "scratch\n"),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
    .collect()
}

/// Every path below `root` (files, folders, symlinks), relative, sorted.
fn tree_names(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .expect("below")
                .display()
                .to_string();
            if entry.file_type().expect("type").is_dir() {
                todo.push(path);
                out.push(format!("{rel}/"));
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The real tree of seven memories, plus the guide.
fn seven_and_the_guide() -> Vec<String> {
    let mut want: Vec<String> = [
        "MNEMOFS.md",
        "inbox/",
        "inbox/idea.md",
        "lessons/",
        "lessons/rust.md",
        "notes.md",
        "projects/",
        "projects/atlas/",
        "projects/atlas/decisions.md",
        "projects/atlas/plan.md",
        "user/",
        "user/people/",
        "user/people/ann.md",
        "user/preferences.md",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    want.sort();
    want
}

fn run_ok(cmd: &mut Command) -> String {
    let out = run_with_timeout(cmd, Duration::from_secs(120))
        .unwrap_or_else(|| panic!("{cmd:?} timed out"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn git_on_the_mount_root_records_the_real_files_and_the_guide_and_sees_one_edit() {
    if !have_program("git") {
        println!("SKIPPED: git is not installed");
        return;
    }
    set_umask(TEST_UMASK);
    let m = Mount::with_options(common::MountOptions {
        seed: seven_memories(),
        organizer: true,
        ..Default::default()
    });
    // The organizer gives the inbox note its frontmatter at start-up, a
    // real edit: it is waited for, so that git records the note after it.
    // (It then leaves the bare link where it is.)
    let normalized = std::time::Instant::now() + Duration::from_secs(20);
    while !fs::read_to_string(m.m("inbox/idea.md")).is_ok_and(|t| t.starts_with("---\n"))
        && std::time::Instant::now() < normalized
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let home = tempfile::tempdir().expect("home");
    git(&m.mnt, home.path(), &["init", "-q"]);
    git(&m.mnt, home.path(), &["add", "-A"]);
    git(&m.mnt, home.path(), &["commit", "-q", "-m", "memories"]);
    let mut files: Vec<String> = git(&m.mnt, home.path(), &["ls-files"])
        .lines()
        .map(String::from)
        .collect();
    files.sort();
    let want: Vec<String> = seven_and_the_guide()
        .into_iter()
        .filter(|p| !p.ends_with('/'))
        .collect();
    assert_eq!(
        files, want,
        "git recorded more than the real files and the guide"
    );
    // The index commits, the organizer runs: nothing of that shows.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(git(&m.mnt, home.path(), &["status", "--porcelain"]), "");
    fs::write(
        m.m("user/preferences.md"),
        "# Preferences\nLight mode, after all.\n",
    )
    .expect("edit");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        git(&m.mnt, home.path(), &["status", "--porcelain"]),
        " M user/preferences.md\n"
    );
}

#[test]
fn tar_rsync_and_cp_of_the_mount_hold_the_real_files_and_the_guide() {
    set_umask(TEST_UMASK);
    let m = Mount::with_options(common::MountOptions {
        seed: seven_memories(),
        ..Default::default()
    });
    let out = tempfile::tempdir().expect("out");
    let want = seven_and_the_guide();

    let listed = run_ok(
        Command::new("tar")
            .arg("-cf")
            .arg(out.path().join("m.tar"))
            .arg("-C")
            .arg(&m.mnt)
            .arg("."),
    );
    assert_eq!(listed, "");
    let mut in_tar: Vec<String> =
        run_ok(Command::new("tar").arg("-tf").arg(out.path().join("m.tar")))
            .lines()
            .filter_map(|l| l.strip_prefix("./"))
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
    in_tar.sort();
    assert_eq!(in_tar, want, "tar");

    let cp = out.path().join("cp");
    run_ok(Command::new("cp").arg("-a").arg(&m.mnt).arg(&cp));
    assert_eq!(tree_names(&cp), want, "cp -a");
    assert_eq!(
        fs::read(cp.join("user/people/ann.md")).expect("copied"),
        fs::read(m.s("user/people/ann.md")).expect("store")
    );

    if have_program("rsync") {
        let rs = out.path().join("rsync");
        run_ok(
            Command::new("rsync")
                .arg("-a")
                .arg(format!("{}/", m.mnt.display()))
                .arg(&rs),
        );
        assert_eq!(tree_names(&rs), want, "rsync -a");
    } else {
        println!("SKIPPED (rsync part): rsync is not installed");
    }
}

#[test]
fn rsync_of_a_backup_into_a_fresh_mount_exits_0_and_the_guide_stays_read_only() {
    if !have_program("rsync") {
        println!("SKIPPED: rsync is not installed");
        return;
    }
    set_umask(TEST_UMASK);
    let backup = tempfile::tempdir().expect("backup");
    let backup_dir = backup.path().join("b");
    {
        let m = Mount::with_options(common::MountOptions {
            seed: seven_memories(),
            ..Default::default()
        });
        run_ok(
            Command::new("rsync")
                .arg("-a")
                .arg(format!("{}/", m.mnt.display()))
                .arg(&backup_dir),
        );
    }
    let fresh = Mount::start();
    let restore = |extra: &[&str]| {
        run_with_timeout(
            Command::new("rsync")
                .arg("-a")
                .args(extra)
                .arg(format!("{}/", backup_dir.display()))
                .arg(format!("{}/", fresh.mnt.display())),
            Duration::from_secs(120),
        )
        .expect("rsync finished")
    };
    let out = restore(&[]);
    assert!(
        out.status.success(),
        "rsync -a backup/ mount/ failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tree_names(&fresh.mnt), seven_and_the_guide());
    let mut in_store = tree_names(&fresh.store);
    in_store.retain(|p| p != "MNEMOFS.md");
    assert_eq!(
        tree_names(&fresh.store).len(),
        in_store.len(),
        "the guide reached the store"
    );
    for (path, content) in seven_memories() {
        assert_eq!(
            fs::read(fresh.s(&path)).expect("restored"),
            content,
            "{path}"
        );
    }
    // Sent again whatever the times say: writing the guide's own bytes
    // back is a no-op.
    let out = restore(&["--ignore-times"]);
    assert!(
        out.status.success(),
        "rsync -a --ignore-times failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tree_names(&fresh.mnt), seven_and_the_guide());
    // Anything else written to the guide is refused as read-only.
    fs::write(backup_dir.join("MNEMOFS.md"), "my own guide\n").expect("change the copy");
    let out = restore(&[]);
    assert!(!out.status.success(), "a changed guide was accepted");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    assert!(
        fs::read_to_string(fresh.m("MNEMOFS.md"))
            .expect("guide")
            .starts_with("# mnemofs"),
    );
    assert!(!fresh.s("MNEMOFS.md").exists());
}
