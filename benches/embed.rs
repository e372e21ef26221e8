//! `cargo bench --bench embed`: semantic search on this machine's CPU,
//! each figure beside its baseline from the same run.
//!
//! - **A question's embedding** (20 words), p50 and p99, after the
//!   model's load (what a cold process pays first), on a pool of one
//!   and of two threads: in floats on the questions' own kernels (the
//!   default) and with 8-bit weights on each integer kernel this CPU runs,
//!   beside candle's float encoder that memories go through; a one-word
//!   question too, whose
//!   time is mostly reading the weights; then while a backlog is embedded, on the
//!   worker's pool (where it would wait behind the backlog) and on the
//!   queries' own pool (where mnemofs puts it). Baseline: the same question
//!   searched by words alone.
//! - **Throughput**: the memories per second one and two threads embed;
//!   then a store of `MNEMOFS_EMBED_NOTES` memories (default 10,000)
//!   embedded by the index's worker, beside the time the index took for
//!   their words.
//! - **Search at `MNEMOFS_EMBED_SCAN` memories** (default 100,000): fused,
//!   by words, by meaning, p50 and p99 over questions that never repeat
//!   within the cache of recent queries, and fused with a word of the
//!   question misspelt (searched as the word the index holds); and the
//!   memory the vectors take.
//!   Fused with the question in floats (the default), then in 8 bits
//!   (the index reopened on the same state).
//!   Embedding that many memories would take most of an hour, so their
//!   vectors are written to the vectors file the daemon keeps between runs,
//!   as if it had made them: each memory gets the vector of one of a few
//!   hundred texts embedded for real, which costs the scan the same.
//! - **A daemon's memory at that size**: `mnemofs serve --no-organizer`
//!   started on the same store and vectors, resident after 20 searches
//!   through it and at its peak, beside the same daemon without a model.
//!
//! `MNEMOFS_MODEL` names the model's folder (default: the
//! all-MiniLM-L6-v2 the tests unpack under `target/tmp/`). Without one, the
//! bench says so and exits 0. A measurement, not a test: nothing fails on
//! a slow figure.

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemofs::embed::{Embedder, Kernel};
use mnemofs::index::Index;
use mnemofs::store::Store;

#[path = "common/model.rs"]
mod model;

/// A question as an agent asks it: 20 words.
const QUESTION: &str = "What did the user say about how they prefer their code to be \
     formatted before a pull request is merged?";

/// How long the index may take to take in a store, or the worker to embed
/// it.
const WAIT: Duration = Duration::from_secs(3600);

fn main() {
    let dir = model::dir();
    let load = || match Embedder::load(&dir) {
        Ok(e) => Some(e),
        Err(e) => {
            println!("embed bench skipped: {e} (set MNEMOFS_MODEL, or run the tests once)");
            None
        }
    };
    let Some(mut embedder) = load() else {
        return;
    };
    let notes = count("MNEMOFS_EMBED_NOTES", 10_000);
    let scan = count("MNEMOFS_EMBED_SCAN", 100_000);
    println!(
        "embed bench: {} ({} dimensions), {} threads on this machine",
        embedder.name(),
        embedder.dims(),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let tmp = tempfile::tempdir().expect("a temp dir");
    println!("\n## A question's embedding (20 words)\n");
    println!("| how | p50 | p99 |\n|---|---|---|");
    // What a process that starts cold pays before its first question.
    let loads = sample(10, |_| {
        load();
    });
    row("the model loaded (a cold process's first cost)", &loads);
    let default = embedder.kernel();
    let best = Some(Kernel::best());
    let mut encoders = vec![None];
    for kernel in [Kernel::Vnni, Kernel::Avx2, Kernel::Portable] {
        if embedder.set_kernel(Some(kernel)) {
            encoders.push(Some(kernel));
        }
    }
    let name = |kernel: Option<Kernel>| match kernel {
        Some(k) if Some(k) == best => format!("8-bit weights, {k:?} (this CPU's best)"),
        Some(k) => format!("8-bit weights, {k:?}"),
        None => "floats, the questions' kernels (the default)".to_owned(),
    };
    for threads in [1, 2] {
        let times = pool(threads).install(|| {
            sample(200, |_| {
                embedder.embed(&[QUESTION]).expect("embed");
            })
        });
        row(
            &format!(
                "baseline: floats through candle, as memories are embedded, {threads} thread(s)"
            ),
            &times,
        );
    }
    for &kernel in &encoders {
        embedder.set_kernel(kernel);
        for threads in [1, 2] {
            // The portable kernel is slow: fewer samples.
            let n = if kernel == Some(Kernel::Portable) {
                20
            } else {
                200
            };
            let times = pool(threads).install(|| {
                sample(n, |_| {
                    embedder.embed_query(QUESTION).expect("embed");
                })
            });
            row(&format!("{}, {threads} thread(s)", name(kernel)), &times);
        }
    }
    for kernel in [best, None] {
        embedder.set_kernel(kernel);
        let times = pool(2).install(|| {
            sample(200, |_| {
                embedder.embed_query("coffee").expect("embed");
            })
        });
        row(&format!("one word: {}, 2 threads", name(kernel)), &times);
    }
    let times = pool(2).install(|| {
        sample(200, |_| {
            embedder.embed(&["coffee"]).expect("embed");
        })
    });
    row("one word: floats through candle, 2 threads", &times);
    embedder.set_kernel(default);

    // The store whose embedding the backlog figures run beside.
    let store_dir = tmp.path().join("store");
    write_store(&store_dir, notes, 1);
    let store = Arc::new(Store::open(&store_dir).expect("store"));
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let started = Instant::now();
    let index = Index::open(&state, Arc::clone(&store)).expect("index");
    assert!(index.wait_idle(WAIT), "the index never took in the store");
    let words_took = started.elapsed();
    let words = sample(200, |i| {
        index
            .search(&format!("mode:words {}", question(i)), 10)
            .expect("search");
    });
    row("baseline: searched by words, no model", &words);

    println!("\n## Throughput\n");
    let texts: Vec<String> = (0..480).map(note_text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!("| how | memories/s | 10,000 memories |\n|---|---|---|");
    for threads in [1, 2] {
        let started = Instant::now();
        pool(threads).install(|| {
            for batch in refs.chunks(16) {
                embedder.embed(batch).expect("embed");
            }
        });
        let rate = refs.len() as f64 / started.elapsed().as_secs_f64();
        println!(
            "| embedded, {threads} thread(s) | {rate:.0} | {:.0} s |",
            10_000.0 / rate
        );
    }
    println!("\n## The same store, embedded by the index\n");
    let started = Instant::now();
    let kept = state.join("vectors.bin");
    index
        .enable_semantic(embedder, Some(kept.clone()))
        .expect("semantic search");
    // A second copy of the model, for questions asked beside the worker.
    let Some(asking) = load() else {
        return;
    };
    let global = sample(50, |i| {
        // Outside any pool: the matrix products go to the worker's pool.
        asking.embed_query(&question(i)).expect("embed");
    });
    let own = pool(2).install(|| {
        sample(50, |i| {
            asking.embed_query(&question(i + 50)).expect("embed");
        })
    });
    println!("| how | p50 | p99 |\n|---|---|---|");
    row(
        "a question during the backlog, on the worker's pool",
        &global,
    );
    row(
        "a question during the backlog, on the queries' own pool",
        &own,
    );
    println!("\n| how | memories/s | 10,000 memories |\n|---|---|---|");

    assert!(index.wait_embedded(WAIT), "the worker never caught up");
    let embedding_took = started.elapsed();
    println!(
        "| the index's worker: {notes} memories embedded (background priority) | {:.0} | {:.0} s |",
        notes as f64 / embedding_took.as_secs_f64(),
        10_000.0 * embedding_took.as_secs_f64() / notes as f64
    );
    println!(
        "| baseline: the index took in their words | {:.0} | {:.1} s |",
        notes as f64 / words_took.as_secs_f64(),
        10_000.0 * words_took.as_secs_f64() / notes as f64
    );
    index.shutdown();
    drop(index);

    println!("\n## `mnemofs search` without a daemon, {notes} memories\n");
    // The model named in a config of its own; the vectors are those the
    // index just kept, as a daemon keeps them.
    let home = tmp.path().join("config-home");
    std::fs::create_dir_all(home.join("mnemofs")).expect("config home");
    std::fs::write(
        home.join("mnemofs/config.yaml"),
        format!("search:\n  model: {}\n", dir.display()),
    )
    .expect("config");
    let empty_home = tmp.path().join("no-config");
    println!("| how | p50 | p99 |\n|---|---|---|");
    for (how, config, mode) in [
        ("fused, the model loaded by the command", &home, ""),
        (
            "baseline: by words (the same command)",
            &home,
            "mode:words ",
        ),
        ("baseline: no model configured", &empty_home, ""),
    ] {
        let times = sample(20, |i| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemofs"))
                .arg("search")
                .arg(format!("{mode}{}", question(2000 + i)))
                .arg("--json")
                .arg("--store")
                .arg(&store_dir)
                .arg("--state-dir")
                .arg(&state)
                .env("XDG_CONFIG_HOME", config)
                .output()
                .expect("run mnemofs search");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        });
        row(how, &times);
    }
    let _ = std::fs::remove_file(&kept);

    println!("\n## Search at {scan} memories\n");
    let big_dir = tmp.path().join("big");
    write_store(&big_dir, scan, 7);
    let big_state = tmp.path().join("big-state");
    std::fs::create_dir_all(&big_state).expect("state dir");
    let vectors = big_state.join("vectors.bin");
    write_vectors(&vectors, &big_dir, &asking);
    let big = Arc::new(Store::open(&big_dir).expect("store"));
    let index = Index::open(&big_state, big).expect("index");
    assert!(index.wait_idle(WAIT), "the index never took in the store");
    let before = rss_kib();
    let Some(mut embedder) = load() else {
        return;
    };
    embedder.set_kernel(None);
    index
        .enable_semantic(embedder, Some(vectors))
        .expect("semantic search");
    let after = rss_kib();
    let embedded = index.status().embedded;
    if embedded != scan as u64 {
        println!(
            "only {embedded} of {scan} memories took their vectors from the file: \
             its format changed; update write_vectors in benches/embed.rs"
        );
        return;
    }
    println!("| how | p50 | p99 |\n|---|---|---|");
    for (how, mode) in [
        ("fused (the default: the question in floats)", ""),
        ("baseline: by words", "mode:words "),
        ("by meaning", "mode:meaning "),
    ] {
        // 100 questions, never one of the last 32 again: each is embedded.
        let times = sample(100, |i| {
            index
                .search(&format!("{mode}{}", question(1000 + i)), 10)
                .expect("search");
        });
        row(how, &times);
    }
    // A misspelt word is looked up in the index's words before the search.
    let times = sample(100, |i| {
        index
            .search(&misspelt(&question(2000 + i)), 10)
            .expect("search");
    });
    row("fused, a word of the question misspelt", &times);
    let semantic_search_rss = (before, after);
    // The same, with the question in 8 bits: the index reopened on the
    // same state and vectors.
    index.shutdown();
    drop(index);
    let big = Arc::new(Store::open(&big_dir).expect("store"));
    let index = Index::open(&big_state, big).expect("index");
    assert!(index.wait_idle(WAIT), "the index never took in the store");
    let Some(mut fast) = load() else {
        return;
    };
    fast.set_kernel(best);
    index
        .enable_semantic(fast, Some(big_state.join("vectors.bin")))
        .expect("semantic search");
    // The reopened index checks its memories against the vectors kept: not
    // while it is measured.
    assert!(index.wait_embedded(WAIT), "the worker never caught up");
    if index.status().embedded == scan as u64 {
        let times = sample(100, |i| {
            index.search(&question(3000 + i), 10).expect("search");
        });
        row("fused, the question in 8 bits", &times);
    }
    let (before, after) = semantic_search_rss;
    println!(
        "\nsemantic search turned on at {scan} memories (their vectors as 8-bit rows, {} bytes \
         each, and the paths the worker seeds from the index): {:.0} MiB more resident; \
         {:.0} MiB in all, with a second copy of the model that a daemon would not hold",
        asking.dims(),
        after.saturating_sub(before) as f64 / 1024.0,
        after as f64 / 1024.0
    );
    index.shutdown();
    drop(index);

    println!("\n## A daemon serving {scan} memories (`mnemofs serve --no-organizer`)\n");
    println!("| how | resident after 20 searches | peak |\n|---|---|---|");
    for (how, model) in [
        ("with the model and every memory's vectors", Some(&dir)),
        ("baseline: no model", None),
    ] {
        match daemon_memory(&big_dir, &big_state, &empty_home, model, scan) {
            Ok((rss, peak)) => println!(
                "| {how} | {:.0} MiB | {:.0} MiB |",
                rss as f64 / 1024.0,
                peak as f64 / 1024.0
            ),
            Err(e) => println!("| {how} | not measured: {e} | |"),
        }
    }
}

/// The resident memory of a daemon serving `store` (KiB, after 20
/// searches through it) and its peak since it started. With a `model`,
/// it waits until every one of the `memories` has its vectors (from the
/// vectors file in `state`) before it asks.
fn daemon_memory(
    store: &Path,
    state: &Path,
    config_home: &Path,
    model: Option<&std::path::PathBuf>,
    memories: usize,
) -> Result<(u64, u64), String> {
    let command = |verb: &str| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_mnemofs"));
        c.env("XDG_CONFIG_HOME", config_home)
            .arg(verb)
            .arg("--store")
            .arg(store);
        c
    };
    // What it says goes to a file: a pipe nobody reads could fill.
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut serve = command("serve");
    serve
        .arg("--no-organizer")
        .arg("--state-dir")
        .arg(state)
        .stdout(std::process::Stdio::null())
        .stderr(log.reopen().map_err(|e| e.to_string())?);
    if let Some(model) = model {
        serve.arg("--model-dir").arg(model);
    }
    let mut child = serve.spawn().map_err(|e| format!("cannot start: {e}"))?;
    let pid = child.id();
    let result = (|| {
        let started = Instant::now();
        loop {
            if let Ok(Some(exit)) = child.try_wait() {
                let said = std::fs::read_to_string(log.path()).unwrap_or_default();
                return Err(format!("the daemon stopped ({exit}): {}", said.trim()));
            }
            if started.elapsed() > Duration::from_secs(300) {
                return Err("the daemon was not ready in 5 minutes".to_owned());
            }
            std::thread::sleep(Duration::from_millis(50));
            // Asked before the daemon holds the store, `status` would
            // serve it itself, and the daemon would find it taken.
            if !state.join("control.sock").exists() {
                continue;
            }
            let out = command("status")
                .arg("--json")
                .output()
                .map_err(|e| e.to_string())?;
            let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let served = status["pid"].as_u64() == Some(u64::from(pid));
            let ready = match model {
                Some(_) => status["meaning"]["embedded"].as_u64() == Some(memories as u64),
                None => status["documents"].as_u64() == Some(memories as u64),
            };
            if served && ready {
                break;
            }
        }
        for i in 0..20 {
            let out = command("search")
                .arg(question(4000 + i))
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).into_owned());
            }
        }
        let process = pid.to_string();
        Ok((
            status_kib(&process, "VmRSS:"),
            status_kib(&process, "VmHWM:"),
        ))
    })();
    // SIGTERM, as a service manager stops it; the daemon keeps its state.
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
    let _ = child.wait();
    result
}

/// A rayon pool of `threads` threads, at the caller's priority.
fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool")
}

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Words to build memories and questions from.
const PEOPLE: [&str; 8] = [
    "Caroline",
    "the user",
    "Melanie",
    "John",
    "my manager",
    "Evan",
    "Sam",
    "the team",
];
const DOING: [&str; 12] = [
    "prefers",
    "asked about",
    "decided on",
    "is worried about",
    "wrote down",
    "wants to change",
    "complained about",
    "forgot",
    "recommended",
    "is learning",
    "booked",
    "cancelled",
];
const THINGS: [&str; 16] = [
    "tabs over spaces in the billing service",
    "a deploy freeze before the holidays",
    "dark mode in every editor",
    "the adoption agency in the city",
    "weekly pottery classes",
    "the camping trip to the lake",
    "reviews before merging pull requests",
    "the database migration to the new cluster",
    "coffee over tea in the morning",
    "a road trip to the mountains",
    "the flight to Lisbon in May",
    "the LGBTQ support group meeting",
    "rust for the new command line tool",
    "short answers without bullet points",
    "the charity run for the shelter",
    "the dentist appointment on Friday",
];

/// A small, fixed pseudo-random number from `i` and `salt`.
fn pick(i: usize, salt: usize, n: usize) -> usize {
    let x = (i as u64 ^ (salt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_mul(0x2545_F491_4F6C_DD1D);
    ((x >> 33) % n as u64) as usize
}

/// The text of memory `i`: a title and three sentences, about 50 words.
fn note_text(i: usize) -> String {
    let mut text = format!(
        "# {} {}\n\n",
        PEOPLE[pick(i, 1, PEOPLE.len())],
        THINGS[pick(i, 2, THINGS.len())]
    );
    for s in 0..3 {
        let _ = write!(
            text,
            "{} {} {} (note {i}, part {s}). ",
            PEOPLE[pick(i, 3 + s, PEOPLE.len())],
            DOING[pick(i, 7 + s, DOING.len())],
            THINGS[pick(i, 11 + s, THINGS.len())]
        );
    }
    text.push('\n');
    text
}

/// `question` with two letters of its longest word swapped ("appointment"
/// as "appoitnment"), as a hurried hand types it.
fn misspelt(question: &str) -> String {
    let longest = question
        .split(|c: char| !c.is_ascii_alphabetic())
        .max_by_key(|w| w.len())
        .unwrap_or_default();
    let Some(at) = question.find(longest).filter(|_| longest.len() >= 5) else {
        return question.to_owned();
    };
    let mut bytes = question.as_bytes().to_vec();
    bytes.swap(at + 3, at + 4);
    String::from_utf8(bytes).unwrap_or_else(|_| question.to_owned())
}

/// Question `i`: each different from the 32 before it.
fn question(i: usize) -> String {
    format!(
        "What did {} say about {}, number {i}?",
        PEOPLE[i % PEOPLE.len()],
        THINGS[(i / PEOPLE.len()) % THINGS.len()]
    )
}

/// `n` memories in folders of 1,000.
fn write_store(dir: &Path, n: usize, salt: usize) {
    for i in 0..n {
        let folder = dir.join(format!("f{:03}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&folder).expect("folder");
        }
        std::fs::write(
            folder.join(format!("m{i:06}.md")),
            note_text(i * salt % 1_000_003),
        )
        .expect("write a memory");
    }
}

/// The daemon's vectors file (see `src/index/semantic.rs`) for every
/// memory under `dir`: each memory gets the vector of one of 256 texts.
fn write_vectors(file: &Path, dir: &Path, embedder: &Embedder) {
    use std::io::Write;
    let texts: Vec<String> = (0..256).map(note_text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors: Vec<Vec<f32>> = pool(2).install(|| {
        refs.chunks(16)
            .flat_map(|batch| embedder.embed(batch).expect("embed"))
            .collect()
    });
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).expect("vectors file"));
    let mut put = |bytes: &[u8]| out.write_all(bytes).expect("write the vectors file");
    put(b"MNVEC02\n");
    let name = embedder.name().as_bytes();
    put(&(name.len() as u32).to_le_bytes());
    put(name);
    put(&(embedder.dims() as u32).to_le_bytes());
    let mut n = 0;
    for folder in std::fs::read_dir(dir).expect("store") {
        let folder = folder.expect("entry").path();
        if !folder.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&folder).expect("folder") {
            let path = entry.expect("entry").path();
            let st = std::fs::metadata(&path).expect("stat");
            let key = path.strip_prefix(dir).expect("in the store");
            let key = key.as_os_str().as_encoded_bytes();
            put(&(key.len() as u32).to_le_bytes());
            put(key);
            put(&st.size().to_le_bytes());
            put(&st.mtime().to_le_bytes());
            put(&st.mtime_nsec().to_le_bytes());
            put(&0u32.to_le_bytes());
            let vector = &vectors[n % vectors.len()];
            put(&(vector.len() as u32).to_le_bytes());
            for x in vector {
                put(&x.to_le_bytes());
            }
            n += 1;
        }
    }
    out.flush().expect("write the vectors file");
}

/// This process's resident memory, KiB.
fn rss_kib() -> u64 {
    status_kib("self", "VmRSS:")
}

/// A `/proc/<process>/status` figure in KiB (`VmRSS:`, `VmHWM:`); 0 if
/// it cannot be read.
fn status_kib(process: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn sample(n: usize, mut f: impl FnMut(usize)) -> Vec<Duration> {
    f(n);
    let mut times: Vec<Duration> = (0..n)
        .map(|i| {
            let start = Instant::now();
            f(i);
            start.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn row(how: &str, sorted: &[Duration]) {
    let at = |p: usize| sorted[(sorted.len() * p / 100).min(sorted.len() - 1)];
    println!(
        "| {how} | {:.2} ms | {:.2} ms |",
        at(50).as_secs_f64() * 1000.0,
        at(99).as_secs_f64() * 1000.0
    );
}
