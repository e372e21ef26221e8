//! git on the mount: init, add, commit, branch, merge, gc and fsck must work,
//! and with fixed dates the commit ids must equal those made on a plain
//! directory (same trees, same modes, same contents).

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
