//! Running out of space: writers get ENOSPC and nothing is lost; the
//! normalizer's rewrites that failed are retried once space is back, and
//! while the state dir is full `status` says indexing is failing and why,
//! then indexing resumes on its own. Needs root (small tmpfs mounts).

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{Mount, MountOptions, bin, poll_until};

const WAIT: Duration = Duration::from_secs(90);

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs of `size` at `dir`, unmounted on drop.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot mount a tmpfs at {}", dir.display());
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the filesystem of `dir` with one file, until ENOSPC.
fn fill(dir: &Path) -> std::path::PathBuf {
    let filler = dir.join("filler.bin");
    let mut file = fs::File::create(&filler).unwrap();
    let block = vec![7u8; 64 * 1024];
    while std::io::Write::write_all(&mut file, &block).is_ok() {}
    let _ = std::io::Write::write_all(&mut file, &[7u8; 512]);
    filler
}

fn status(m: &Mount) -> serde_json::Value {
    let out = Command::new(bin())
        .args(["status", "--json"])
        .arg(&m.mnt)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_full_store_and_a_full_state_dir_recover_on_their_own() {
    if !is_root() {
        eprintln!("skipped: needs root to mount small tmpfs filesystems");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.yaml");
    fs::write(
        &config,
        "organizer: { interval: 1h, quiet_period: 0s, grace_period: 1h }\n\
         dream: { idle_after: 0s }\nnotifications: { method: none }\n",
    )
    .unwrap();
    let mut m = Mount::with_options(MountOptions {
        organizer: true,
        extra_args: vec!["--config".into(), config.display().to_string()],
        before_start: Some(|_, state| std::mem::forget(Tmpfs::mount(state, "8m"))),
        ..Default::default()
    });
    // Unmounted (lazily) when the test ends.
    let state_fs = Tmpfs(m.state.clone());

    // The store's disk fills right after a note is written: the
    // normalizer's rewrite fails, and is retried once space is back.
    let store_fs = Tmpfs::mount(&m.store.join("small"), "1m");
    fs::write(m.m("small/note.md"), "# Note\nbody\n").unwrap();
    let filler = fill(&store_fs.0);
    let err = fs::write(m.m("small/other.md"), "x".repeat(8192)).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        fs::read_to_string(m.m("small/note.md")).unwrap(),
        "# Note\nbody\n"
    );
    fs::remove_file(&filler).unwrap();
    assert!(
        poll_until(WAIT, || fs::read_to_string(m.m("small/note.md"))
            .is_ok_and(|t| t.starts_with("---\nid: "))),
        "the failed rewrite was never retried"
    );

    // The state dir's disk fills: status says indexing is failing and why,
    // and indexing resumes once space is back.
    let filler = fill(&state_fs.0);
    for i in 0..50 {
        fs::write(
            m.m(format!("later-{i}.md")),
            format!("# Later {i}\nzeppelin\n"),
        )
        .unwrap();
    }
    assert!(
        poll_until(WAIT, || status(&m)["index_failing"].is_string()),
        "status never said indexing fails: {:#}",
        status(&m)
    );
    let why = status(&m)["index_failing"].as_str().unwrap().to_owned();
    assert!(why.to_lowercase().contains("space"), "{why}");
    fs::remove_file(&filler).unwrap();
    assert!(
        poll_until(WAIT, || {
            let s = status(&m);
            s["index_failing"].is_null() && s["pending_changes"] == 0
        }),
        "indexing did not resume: {:#}",
        status(&m)
    );
    let out = Command::new(bin())
        .args(["search", "zeppelin", "--json", "--limit", "100"])
        .arg("--store")
        .arg(&m.mnt)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 50);
    drop(store_fs);
    m.stop();
}
