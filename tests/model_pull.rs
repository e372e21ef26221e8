//! `mnemofs model pull` against a hub served on this machine
//! (`tests/hub_server.py`, over the real all-MiniLM-L6-v2 from PyPI, see
//! `common::minilm`): the files arrive byte for byte, a second pull
//! downloads nothing, a corrupt download is never kept under its name, an
//! unknown model is one sentence, and a config that names the model finds
//! it in the cache, or says how to pull it.

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::{bin, run_with_timeout};

/// The model `mnemofs model pull` takes by default, which the hub serves.
const NAME: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// The files the loader reads, all of which this model has.
const FILES: [&str; 7] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "1_Pooling/config.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
];
/// How long the hub server may take to say its port.
const READY: Duration = Duration::from_secs(30);
/// How long a pull of 90 MB from this machine may take.
const PULL: Duration = Duration::from_secs(300);
/// How long a daemon may take to load the model and embed.
const WAIT: Duration = Duration::from_secs(120);

/// `tests/hub_server.py` serving a model folder, killed when dropped, even
/// when the test panics.
struct Hub {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Hub {
    /// Serves `model` as `repo`, with the server's `extra` arguments.
    fn start(model: &Path, repo: &str, extra: &[&str]) -> Hub {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("requests.log");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hub_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(model)
            .arg(repo)
            .arg("--log")
            .arg(&log)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the hub server");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut hub = Hub {
            child,
            port: 0,
            log,
            _dir: dir,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(READY)
            .expect("the hub server did not say its port in time");
        hub.port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the hub server said {line:?}, not its port"));
        hub
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Each request so far: its path, then its Authorization header or `-`.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mnemofs` with a private HOME, cache and runtime dir in `home`, no
/// token, no proxy, and the hub at `endpoint`.
fn mnemofs(home: &Path, endpoint: &str) -> Command {
    let mut command = Command::new(bin());
    command
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_RUNTIME_DIR", home)
        .env("HF_ENDPOINT", endpoint)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("HF_TOKEN");
    for proxy in ["http_proxy", "https_proxy", "all_proxy"] {
        command
            .env_remove(proxy)
            .env_remove(proxy.to_ascii_uppercase());
    }
    command
}

fn run(command: &mut Command, timeout: Duration) -> Output {
    run_with_timeout(command, timeout).unwrap_or_else(|| panic!("{command:?} did not finish"))
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `mnemofs model pull ARGS` from `hub`.
fn pull(home: &Path, hub: &Hub, args: &[&str]) -> Output {
    run(
        mnemofs(home, &hub.endpoint())
            .args(["model", "pull"])
            .args(args),
        PULL,
    )
}

/// Where a pull puts `name` under `home`'s cache.
fn folder(home: &Path, name: &str) -> PathBuf {
    home.join("cache/mnemofs/models").join(name)
}

/// The temp files of downloads under `dir`.
fn partials(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            found.extend(partials(&path));
        } else if path.to_string_lossy().ends_with(".partial") {
            found.push(path);
        }
    }
    found
}

/// The one line a failed command printed, checked to be one line.
fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", text(out));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{}", text(out));
    stderr.trim_end().to_owned()
}

/// A store with two memories, and a config naming `model`.
fn store_and_config(home: &Path, model: &str) -> (PathBuf, PathBuf, PathBuf) {
    let (store, state) = (home.join("store"), home.join("state"));
    std::fs::create_dir_all(store.join("prefs")).expect("store");
    std::fs::write(
        store.join("prefs/drinks.md"),
        "# Mornings\nPrefers coffee over tea, black, no sugar.\n",
    )
    .expect("seed");
    std::fs::write(store.join("prefs/editor.md"), "# Editor\nUses vim.\n").expect("seed");
    let config = home.join("config.yaml");
    std::fs::write(
        &config,
        format!("search: {{model: {model}}}\nnotifications: {{method: none}}\n"),
    )
    .expect("config");
    (store, state, config)
}

/// `mnemofs serve` on `store` with `config`, its stderr in `log`, once it
/// is registered.
fn serve(home: &Path, store: &Path, state: &Path, config: &Path, log: &Path) -> common::Stopped {
    let daemon = common::Stopped(
        mnemofs(home, "http://127.0.0.1:9")
            .args(["serve", "--store"])
            .arg(store)
            .arg("--state-dir")
            .arg(state)
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log"))
            .spawn()
            .expect("spawn mnemofs serve"),
    );
    let registered = common::poll_until(WAIT, || {
        std::fs::read_dir(home.join("mnemofs")).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
    });
    assert!(registered, "mnemofs serve did not come up");
    daemon
}

#[test]
fn a_pull_brings_the_files_byte_for_byte_and_a_second_pull_downloads_nothing() {
    let source = common::minilm();
    let hub = Hub::start(&source, NAME, &[]);
    let home = tempfile::tempdir().expect("tempdir");

    // The default model, with a token.
    let out = run(
        mnemofs(home.path(), &hub.endpoint())
            .args(["model", "pull"])
            .env("HF_TOKEN", "hf_test"),
        PULL,
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for file in FILES {
        assert!(
            stdout.contains(&format!("{file}: downloaded, ")),
            "{file}: {stdout}"
        );
    }
    assert_eq!(
        stdout.lines().last(),
        Some("search: {model: sentence-transformers/all-MiniLM-L6-v2}"),
        "{stdout}"
    );
    let dir = folder(home.path(), NAME);
    assert!(
        stdout.contains(&format!("{NAME} is in {}", dir.display())),
        "{stdout}"
    );
    for file in FILES {
        let got = std::fs::read(dir.join(file)).unwrap_or_default();
        let want = std::fs::read(source.join(file)).expect("source file");
        assert!(got == want, "{file} differs from the hub's");
    }
    assert_eq!(partials(&dir), Vec::<PathBuf>::new());
    // The token goes to the hub, never to the CDN it redirects to.
    let requests = hub.requests();
    assert!(
        requests.iter().any(|r| r.starts_with("/cdn/")),
        "{requests:?}"
    );
    for request in &requests {
        let expected = if request.starts_with("/cdn/") {
            " -"
        } else {
            " Bearer hf_test"
        };
        assert!(request.ends_with(expected), "{requests:?}");
    }

    // Again: every file checked on disk, none asked for.
    let before = requests.len();
    let out = pull(home.path(), &hub, &[NAME]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for file in FILES {
        assert!(
            stdout.contains(&format!("{file}: already there, checksum matches")),
            "{file}: {stdout}"
        );
    }
    let again = &hub.requests()[before..];
    assert!(
        again.iter().all(|r| r.starts_with("/api/models/")),
        "{again:?}"
    );
}

/// A config that names the model pulled finds it in the cache: the
/// doctor loads it, and a daemon answers a question by meaning.
#[test]
fn a_config_naming_a_pulled_model_searches_by_meaning() {
    let hub = Hub::start(&common::minilm(), NAME, &[]);
    let home = tempfile::tempdir().expect("tempdir");
    let out = pull(home.path(), &hub, &[NAME]);
    assert!(out.status.success(), "{}", text(&out));
    drop(hub);
    let (store, state, config) = store_and_config(home.path(), NAME);

    let out = run(
        mnemofs(home.path(), "http://127.0.0.1:9")
            .args(["doctor", "--store"])
            .arg(&store)
            .arg("--state-dir")
            .arg(&state)
            .arg("--config")
            .arg(&config),
        common::COMMAND_TIMEOUT,
    );
    let doctor = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        doctor.contains("search: by words and meaning, with all-MiniLM-L6-v2 (384 dimensions)"),
        "{}",
        text(&out)
    );

    let daemon = serve(
        home.path(),
        &store,
        &state,
        &config,
        &home.path().join("serve.log"),
    );
    let cli = |args: &[&str]| {
        run(
            mnemofs(home.path(), "http://127.0.0.1:9")
                .args(args)
                .arg("--store")
                .arg(&store),
            common::COMMAND_TIMEOUT,
        )
    };
    let mut status = String::new();
    let embedded = common::poll_until(WAIT, || {
        status = String::from_utf8_lossy(&cli(&["status", "--json"]).stdout).into_owned();
        serde_json::from_str::<serde_json::Value>(&status)
            .is_ok_and(|s| s["meaning"]["embedded"] == 2 && s["meaning"]["backlog"] == 0)
    });
    assert!(embedded, "{status}");
    let out = cli(&["search", "what does the user like to drink?", "--json"]);
    drop(daemon);
    common::assert_first_hit(&out.stdout, "prefs/drinks.md", "meaning");
}

/// A model named in the config but never pulled: the doctor, `status` and
/// the daemon's warning each say, in one sentence, how to pull it; with no
/// model at all, the doctor says how to turn meaning on.
#[test]
fn a_config_naming_a_model_not_pulled_says_how_to_pull_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let (store, state, config) = store_and_config(home.path(), "someone/some-model");
    let how = "the model someone/some-model is not downloaded; \
               run `mnemofs model pull someone/some-model`";
    let doctor = |config: &Path| {
        let out = run(
            mnemofs(home.path(), "http://127.0.0.1:9")
                .args(["doctor", "--store"])
                .arg(&store)
                .arg("--state-dir")
                .arg(&state)
                .arg("--config")
                .arg(config),
            common::COMMAND_TIMEOUT,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = doctor(&config);
    assert!(
        report
            .lines()
            .any(|l| l.ends_with(&format!("search: by words only, as {how}"))),
        "{report}"
    );
    let empty = home.path().join("empty.yaml");
    std::fs::write(&empty, "").expect("config");
    let report = doctor(&empty);
    assert!(
        report.contains("search: by words only; for meaning too, run `mnemofs model pull`"),
        "{report}"
    );

    let log = home.path().join("serve.log");
    let daemon = serve(home.path(), &store, &state, &config, &log);
    let out = run(
        mnemofs(home.path(), "http://127.0.0.1:9")
            .args(["status", "--store"])
            .arg(&store),
        common::COMMAND_TIMEOUT,
    );
    drop(daemon);
    let status = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        status.contains(&format!("by words only, as {how}")),
        "{}",
        text(&out)
    );
    let warnings = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        warnings.contains(&format!(
            "semantic search is off, search is by words: {how}"
        )),
        "{warnings}"
    );
}

/// A file that does not match the hub's checksum, whether kept in git
/// (a blob id) or in LFS (a SHA-256), fails the pull in one line naming
/// it, and nothing is left under its name or as a temp file.
#[test]
fn a_corrupt_download_fails_in_one_line_and_is_never_kept() {
    let source = common::minilm();
    let home = tempfile::tempdir().expect("tempdir");
    let dir = folder(home.path(), NAME);
    for (corrupt, kept) in [
        ("config.json", &[][..]),
        ("model.safetensors", &["config.json"][..]),
    ] {
        let hub = Hub::start(&source, NAME, &["--corrupt", corrupt]);
        let out = pull(home.path(), &hub, &[NAME]);
        let line = one_line_error(&out);
        assert_eq!(
            line,
            format!(
                "mnemofs: the downloaded {corrupt} does not match the hub's checksum, \
                 so it was not kept; pull again"
            )
        );
        assert!(!dir.join(corrupt).exists(), "{corrupt} was kept");
        assert_eq!(partials(&dir), Vec::<PathBuf>::new());
        for file in kept {
            assert_eq!(
                std::fs::read(dir.join(file)).unwrap_or_default(),
                std::fs::read(source.join(file)).expect("source"),
                "{file}"
            );
        }
    }
}

/// A model the hub does not have, one without safetensors weights, and a
/// hub that does not answer: each one sentence, and nothing written.
#[test]
fn a_model_that_cannot_be_pulled_is_one_sentence() {
    let source = common::minilm();
    let hub = Hub::start(&source, NAME, &[]);
    let home = tempfile::tempdir().expect("tempdir");

    let out = pull(home.path(), &hub, &["nobody/nothing"]);
    assert_eq!(
        one_line_error(&out),
        "mnemofs: the hub has no model nobody/nothing at revision main \
         (a private or gated model needs HF_TOKEN)"
    );
    let out = pull(home.path(), &hub, &[NAME, "--revision", "v9"]);
    assert_eq!(
        one_line_error(&out),
        format!(
            "mnemofs: the hub has no model {NAME} at revision v9 \
             (a private or gated model needs HF_TOKEN)"
        )
    );
    drop(hub);

    // Only PyTorch weights, which the loader does not read.
    let pytorch_only = home.path().join("pytorch-only");
    std::fs::create_dir_all(&pytorch_only).expect("folder");
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(source.join(file), pytorch_only.join(file)).expect("copy");
    }
    std::fs::write(pytorch_only.join("pytorch_model.bin"), b"weights").expect("weights");
    let hub = Hub::start(&pytorch_only, "someone/pytorch-only", &[]);
    let out = pull(home.path(), &hub, &["someone/pytorch-only"]);
    assert_eq!(
        one_line_error(&out),
        "mnemofs: the model someone/pytorch-only has no model.safetensors, which mnemofs needs"
    );
    drop(hub);

    // A hub that is not there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let endpoint = format!("http://127.0.0.1:{closed}");
    let out = run(
        mnemofs(home.path(), &endpoint).args(["model", "pull"]),
        PULL,
    );
    let line = one_line_error(&out);
    assert!(
        line.starts_with(&format!(
            "mnemofs: cannot download {endpoint}/api/models/{NAME}/revision/main?blobs=true: "
        )),
        "{line}"
    );
    assert!(
        !home.path().join("cache/mnemofs/models").exists(),
        "a failed pull wrote into the cache"
    );
}
