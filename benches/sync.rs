//! `cargo bench --bench sync`: what one `mnemofs sync` round costs, at
//! 10,000 and 100,000 notes (`MNEMOFS_BENCH_NOTES=10000` for one size),
//! against plain git on the same tree in the same run.
//!
//! Two stores, `a` and `b`, and a bare remote in a temp dir. `b` is a
//! `git clone` of the remote set up with `mnemofs sync init`, so that the
//! benchmark does not wait for 100,000 files to be applied one by one.
//! Every round is a command run without a daemon (`mnemofs sync`), and
//! also, for the no-change round, through `mnemofs serve`, as a mount's
//! rounds run. Each figure is the median of `MNEMOFS_BENCH_RUNS` (5)
//! runs.
//!
//! The rows:
//! - `no change`: nothing to commit, nothing to fetch;
//! - `10 edits, pushed`: `a` commits 10 changed notes and pushes them;
//! - `10 edits, pulled`: `b` fetches them and applies them through its
//!   writer;
//! - the baselines: `git status --porcelain`, `git fetch` with nothing
//!   new, and `git add -A && git commit && git push` of 10 edits.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let sizes: Vec<usize> = match std::env::var("MNEMOFS_BENCH_NOTES") {
        Ok(n) => vec![n.parse().expect("MNEMOFS_BENCH_NOTES is a number")],
        Err(_) => vec![10_000, 100_000],
    };
    let runs: usize = std::env::var("MNEMOFS_BENCH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    for n in sizes {
        bench(n, runs);
    }
}

fn bin() -> PathBuf {
    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/mnemofs");
    assert!(
        release.exists(),
        "build the release binary first (cargo build --release)"
    );
    release
}

struct Bench {
    root: PathBuf,
}

impl Bench {
    fn mnemofs(&self, store: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .arg("--store")
            .arg(self.root.join(store))
            .env("XDG_RUNTIME_DIR", self.root.join(format!("{store}.run")))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("MNEMOFS_LOG", "warn");
        cmd
    }

    fn git(&self, dir: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(self.root.join(dir))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@bench")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@bench");
        cmd
    }

    fn edit(&self, store: &str, round: usize) {
        for i in 0..10 {
            let path = self
                .root
                .join(store)
                .join(format!("f{i:02}/note{:06}.md", 0));
            let mut text = std::fs::read_to_string(&path).unwrap_or_default();
            text.push_str(&format!("edited in round {round}\n"));
            std::fs::write(&path, text).expect("edit");
        }
    }
}

fn run(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    let took = start.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn sh(bench: &Bench, dir: &str, script: &str) -> Command {
    let git = bench.git(dir, &[]);
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(script).current_dir(bench.root.join(dir));
    for (key, value) in git.get_envs() {
        if let Some(value) = value {
            sh.env(key, value);
        }
    }
    sh
}

/// Ten edits on `a`, pushed by a round there: the time `b`'s round takes
/// to pull them.
fn pull(bench: &Bench, round: &mut usize) -> Duration {
    *round += 1;
    bench.edit("a", *round);
    run(&mut bench.mnemofs("a", &["sync"]));
    run(&mut bench.mnemofs("b", &["sync"]))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn row(name: &str, took: Duration, base: Option<(&str, Duration)>) {
    let ms = took.as_secs_f64() * 1000.0;
    match base {
        Some((base_name, base)) => println!(
            "  {name:<34} {ms:>9.1} ms   {:>6.1}x {base_name}",
            took.as_secs_f64() / base.as_secs_f64()
        ),
        None => println!("  {name:<34} {ms:>9.1} ms"),
    }
}

/// `mnemofs serve` on store `b`, until dropped.
struct Served(Child);

impl Served {
    fn start(bench: &Bench, store: &str) -> Served {
        let mut child = bench
            .mnemofs(store, &["serve", "--no-organizer"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        while let Some(Ok(line)) = lines.next() {
            if line.contains("ready") || line.contains("serving") {
                break;
            }
        }
        Served(child)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // SAFETY: a signal to the child this bench started.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn bench(n: usize, runs: usize) {
    let tmp = tempfile::Builder::new()
        .prefix("mnemofs-bench-sync-")
        .tempdir()
        .expect("tempdir");
    let bench = Bench {
        root: tmp.path().to_path_buf(),
    };
    println!("sync, {n} notes ({runs} runs each, median)");
    run(Command::new("git").args([
        "init",
        "-q",
        "--bare",
        "-b",
        "main",
        &bench.root.join("remote.git").to_string_lossy(),
    ]));
    let a = bench.root.join("a");
    for i in 0..n {
        let folder = a.join(format!("f{:02}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&folder).expect("mkdir");
        }
        let text = format!(
            "---\ntitle: Note {i}\ntags: [bench]\n---\n# Note {i}\n\nA note of the benchmark, number {i}, \
             with a few sentences so that it weighs what a memory weighs. It mentions \
             otters, tides and the harbour, and links to [[Note {}]].\n",
            (i + 1) % n
        );
        std::fs::write(folder.join(format!("note{:06}.md", i / 100)), text).expect("seed");
    }
    let remote = bench.root.join("remote.git").to_string_lossy().into_owned();
    let first = run(&mut bench.mnemofs("a", &["sync", "init", &remote, "--host", "a"]));
    row("first round (commit and push all)", first, None);
    run(&mut bench.git(".", &["clone", "-q", &remote, "b"]));
    run(&mut bench.git(".", &["clone", "-q", &remote, "c"]));
    run(&mut bench.mnemofs("b", &["sync", "init", "origin", "--host", "b"]));
    // Warm: the index of each store built, git's stat caches filled.
    run(&mut bench.mnemofs("a", &["sync"]));
    run(&mut bench.mnemofs("b", &["sync"]));

    let times = |f: &mut dyn FnMut() -> Duration| median((0..runs).map(|_| f()).collect());
    let status = times(&mut || run(&mut bench.git("a", &["status", "--porcelain"])));
    let fetch = times(&mut || run(&mut bench.git("a", &["fetch", "-q", "origin"])));
    row("git status --porcelain", status, None);
    row("git fetch (nothing new)", fetch, None);
    let baseline = status + fetch;
    let none = times(&mut || run(&mut bench.mnemofs("a", &["sync"])));
    row(
        "no change (command)",
        none,
        Some(("git status + fetch", baseline)),
    );

    let mut round = 0;
    let pushed = times(&mut || {
        round += 1;
        bench.edit("a", round);
        let took = run(&mut bench.mnemofs("a", &["sync"]));
        run(&mut bench.mnemofs("b", &["sync"]));
        took
    });
    let plain = times(&mut || {
        round += 1;
        bench.edit("c", round);
        run(&mut sh(
            &bench,
            "c",
            "git add -A && git commit -qm edits && git push -q origin HEAD:refs/heads/plain",
        ))
    });
    row("git add, commit, push (10 edits)", plain, None);
    row(
        "10 edits, pushed (command)",
        pushed,
        Some(("git add+commit+push", plain)),
    );
    let pulled = times(&mut || pull(&bench, &mut round));
    row(
        "10 edits, pulled (command)",
        pulled,
        Some(("git add+commit+push", plain)),
    );

    let served = Served::start(&bench, "b");
    run(&mut bench.mnemofs("b", &["sync"]));
    let daemon = times(&mut || run(&mut bench.mnemofs("b", &["sync"])));
    row(
        "no change (through mnemofs serve)",
        daemon,
        Some(("git status + fetch", baseline)),
    );
    let pulled = times(&mut || pull(&bench, &mut round));
    row(
        "10 edits, pulled (through serve)",
        pulled,
        Some(("git add+commit+push", plain)),
    );
    drop(served);
    println!();
}
