//! `cargo bench --bench mount`: the mount against its own backing directory,
//! then the index figures (`mount/search.rs`).
//!
//! Builds a synthetic store, mounts it, and prints one table in which every
//! figure sits next to its native baseline from the same run, with the ratio
//! and the target from the spine issue (issue 3 for the index figures). A miss is reported, not fatal: this
//! is a measurement, not a test (STYLE.md rule 6).
//!
//! Environment:
//! - `MNEMOFS_BENCH_NOTES` notes in the store (default 10000);
//! - `MNEMOFS_BENCH_QUICK=1` smoke run: 1000 notes, 8 MiB file, 1 repetition;
//! - `MNEMOFS_BENCH_REPS` repetitions per figure (default 5);
//! - `MNEMOFS_BENCH_ONLY=mount|search|dream|hooks|tools|history|load|cli|all` which figure
//!   groups run (default all): `mount` is this file's spine figures,
//!   `search` the index figures of `mount/search.rs`, `dream` the organizer
//!   figures of `mount/dream.rs`, `hooks` the brief and checkpoint of
//!   `mount/hooks.rs`, `tools` the MCP server, `mnemofs tool` and the
//!   socket of `mount/tools.rs`, `history` the cost of keeping earlier
//!   versions on save by rename (`mount/history.rs`), `load` the daemon's
//!   memory under a mixed load and once idle (`mount/load.rs`), `cli`
//!   memory-cli's commands as new processes without a daemon
//!   (`mount/cli.rs`: import, export, obsidian ingest, write then search),
//!   each group on its own store and mount.
//!
//! Native and mount samples alternate within each repetition, so drift on a
//! shared machine hits both sides alike. Each figure checks that the mount
//! returned the same bytes or entry counts as the native side, because a fast
//! wrong answer is not a result.
//!
//! New groups of figures belong in their own module under `benches/mount/`
//! (a `.rs` file directly in `benches/` would become a bench target of its
//! own), as functions returning `Row`s.

#[path = "mount/cli.rs"]
mod cli;
mod common;
#[path = "mount/dream.rs"]
mod dream;
#[path = "mount/history.rs"]
mod history;
#[path = "mount/hooks.rs"]
mod hooks;
#[path = "mount/load.rs"]
mod load;
#[path = "mount/search.rs"]
mod search;
#[path = "mount/tools.rs"]
mod tools;

use std::error::Error;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use common::nullfs::NullMount;
use common::{
    Config, Daemon, Measure, MemorySampler, Row, Target, Workspace, drop_file_cache,
    generate_store, note_dirs, note_path, note_text, read_sequential, render_table,
    sync_filesystem, time, write_big_file,
};

/// Seed for the notes the write figure creates (distinct from the store's).
const WRITE_SEED: u64 = 0x7772_6974_6573;

/// A mounted synthetic store. Field order matters: the daemon is dropped
/// (unmounted) before the workspace directories are removed.
struct Bench {
    daemon: Daemon,
    ws: Workspace,
    cfg: Config,
    /// Note paths relative to the store root.
    notes: Vec<PathBuf>,
    /// The sequential-read file, relative to the store root.
    big: PathBuf,
    /// Lines printed under the table: what was seen but has no target here.
    observations: Vec<String>,
    /// The daemon's memory, sampled through the run.
    memory: MemorySampler,
}

impl Bench {
    /// How long the index may take to settle after a batch of changes.
    fn idle_timeout(&self) -> Duration {
        Duration::from_secs(60 + self.cfg.notes as u64 / 100)
    }

    /// Waits for the index to settle; a timeout becomes an observation.
    fn settle(&mut self, after: &str) -> Duration {
        match self.daemon.wait_idle(self.idle_timeout()) {
            Ok(d) => d,
            Err(e) => {
                self.observations.push(format!("after {after}: {e}"));
                self.idle_timeout()
            }
        }
    }
}

fn main() -> ExitCode {
    if let Some(mountpoint) = std::env::var_os(common::nullfs::SERVE_ENV) {
        let backing = std::env::var_os(common::nullfs::BACKING_ENV).map(PathBuf::from);
        return match common::nullfs::serve(Path::new(&mountpoint), backing) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("floor server: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(user) = std::env::var_os(AS_ENV) {
        return match run_as(&user.to_string_lossy()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("benchmark as {user:?}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            let mut source = e.source();
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}

/// `MNEMOFS_BENCH_AS=<user>` runs the whole benchmark, the daemon and the
/// FUSE floor included, as that user: the way a systemd user unit runs the
/// daemon, without CAP_SYS_ADMIN and so without FUSE passthrough.
const AS_ENV: &str = "MNEMOFS_BENCH_AS";

/// Runs this benchmark again as the user named `name`.
fn run_as(name: &str) -> Result<ExitCode, Box<dyn Error>> {
    use std::os::unix::process::CommandExt;
    let user = nix::unistd::User::from_name(name)?.ok_or_else(|| format!("no user {name}"))?;
    // The standard library drops supplementary groups when root sets a uid.
    let status = std::process::Command::new(std::env::current_exe()?)
        .args(std::env::args_os().skip(1))
        .env_remove(AS_ENV)
        .env("HOME", &user.dir)
        .env("USER", name)
        .current_dir("/")
        .gid(user.gid.as_raw())
        .uid(user.uid.as_raw())
        .status()?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

fn run() -> Result<(), Box<dyn Error>> {
    let cfg = Config::from_env();
    let ws = Workspace::new()?;
    print_environment(&cfg, &ws);
    if cfg.only.mount() {
        run_mount(cfg.clone(), ws)?;
    } else {
        drop(ws);
    }
    if cfg.only.search() {
        search::run(&cfg)?;
    }
    if cfg.only.dream() {
        dream::run(&cfg)?;
    }
    if cfg.only.hooks() {
        hooks::run(&cfg)?;
    }
    if cfg.only.tools() {
        tools::run(&cfg)?;
    }
    if cfg.only.history() {
        history::run(&cfg)?;
    }
    if cfg.only.load() {
        load::run(&cfg)?;
    }
    if cfg.only.cli() {
        cli::run(&cfg)?;
    }
    Ok(())
}

/// The spine figures: the mount against its own backing directory.
fn run_mount(cfg: Config, ws: Workspace) -> Result<(), Box<dyn Error>> {
    println!("\n== mount: the mount against its backing directory ==");

    let (gen_time, notes) = time(|| generate_store(&ws.store, cfg.notes));
    let notes = notes?;
    let big = PathBuf::from(format!(
        "big/sequential-{}MiB.bin",
        cfg.big_file_bytes >> 20
    ));
    write_big_file(&ws.store.join(&big), cfg.big_file_bytes)?;
    sync_filesystem(&ws.store)?;
    println!(
        "store:    {} notes in {} dirs + one {} MiB file, generated in {:.1} s, at {}",
        notes.len(),
        note_dirs(cfg.notes).len(),
        cfg.big_file_bytes >> 20,
        gen_time.as_secs_f64(),
        ws.store.display()
    );

    // The filesystem figures measure the mount itself: without the
    // organizer, which would rewrite every note the benchmark creates.
    println!("mount:    --no-organizer (filesystem figures)");
    println!(
        "floors:   the FUSE floor keeps no data (an in-memory FUSE filesystem with the same \
         mount options); the storing floor is the same, keeping its files on the store's disk"
    );
    let (start_time, daemon) = time(|| Daemon::start_with(&ws, &["--no-organizer"]));
    let daemon = daemon?;
    let memory = daemon.sample_memory("the initial index");
    let mut bench = Bench {
        daemon,
        ws,
        cfg,
        notes,
        big,
        observations: Vec::new(),
        memory,
    };
    let index_time = bench.settle("mount");
    bench.observations.push(format!(
        "mount ready in {:.2} s; daemon quiet (initial index of {} notes done) {:.1} s later (pid {})",
        start_time.as_secs_f64(),
        bench.cfg.notes,
        index_time.as_secs_f64(),
        bench.daemon.pid()
    ));
    println!(
        "repetitions per figure: {} (median shown)\n",
        bench.cfg.reps
    );

    let mut rows = Vec::new();
    let mut cpu = Vec::new();
    let mut figure = |bench: &mut Bench,
                      f: &dyn Fn(&mut Bench) -> io::Result<Vec<Row>>,
                      what: &str|
     -> io::Result<()> {
        bench.memory.phase(what);
        let before = bench.daemon.cpu_seconds();
        let new = f(bench)?;
        if let (Some(a), Some(b)) = (before, bench.daemon.cpu_seconds()) {
            cpu.push(format!("{} {:.2} s", new[0].figure, b - a));
        }
        rows.extend(new);
        Ok(())
    };
    figure(&mut bench, &|b| sequential_read(b), "sequential read")?;
    figure(&mut bench, &|b| Ok(vec![stat_walk(b)?]), "stat walk")?;
    figure(&mut bench, &|b| Ok(vec![stat_known_paths(b)?]), "lstat")?;
    let floors = floor_notes(&bench)?;
    figure(&mut bench, &|b| cat_notes(b, &floors), "cat")?;
    figure(&mut bench, &|b| open_close_notes(b, &floors), "open+close")?;
    drop(floors);
    figure(&mut bench, &|b| create_small_files(b), "create+write")?;
    bench.observations.push(format!(
        "daemon CPU time per figure (all passes incl. warm-up): {}",
        cpu.join("; ")
    ));

    let status = |field: &str| {
        bench
            .daemon
            .proc_status_kib(field)
            .map(|k| k as f64 / 1024.0)
    };
    if let (Some(rss), Some(anon), Some(file), Some(peak)) = (
        status("VmRSS"),
        status("RssAnon"),
        status("RssFile"),
        status("VmHWM"),
    ) {
        // Mapped index pages are page cache the kernel can take back at
        // will; the heap is what the daemon holds.
        bench.observations.push(format!(
            "daemon VmRSS at the end: {rss:.0} MiB ({anon:.0} MiB heap and stacks, \
             {file:.0} MiB mapped files: binary and index); peak (VmHWM) {peak:.0} MiB"
        ));
    }
    let peak = bench.memory.peak();
    let mib = |k: u64| k as f64 / 1024.0;
    bench.observations.push(format!(
        "daemon peak RSS (sampled every 20 ms) {:.0} MiB during {}: {:.0} MiB heap and stacks, \
         {:.0} MiB mapped files; the largest heap was {:.0} MiB, during {}",
        mib(peak.rss_kib),
        peak.phase,
        mib(peak.anon_kib),
        mib(peak.file_kib),
        mib(peak.max_anon_kib),
        peak.max_anon_phase
    ));
    println!("{}", render_table(&rows));
    for o in &bench.observations {
        println!("note: {o}");
    }
    Ok(())
}

fn print_environment(cfg: &Config, ws: &Workspace) {
    let read = |p: &str| fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let mem_gib = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or("?".into(), |kib| format!("{:.1}", kib / (1024.0 * 1024.0)));
    let daemon = env!("CARGO_BIN_EXE_mnemofs");
    println!(
        "mnemofs mount benchmark{}",
        if cfg.quick {
            " (QUICK smoke run: numbers are not a measurement)"
        } else {
            ""
        }
    );
    println!("kernel:   {}", read("/proc/sys/kernel/osrelease").trim());
    println!(
        "cpu:      {} cores ({cpu}), {mem_gib} GiB RAM",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "build:    bench {}, daemon {} ({daemon})",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        if daemon.contains("/release/") {
            "release"
        } else {
            "debug"
        },
    );
    println!(
        "fs:       {} for {}",
        filesystem_of(&ws.store),
        ws.store.display()
    );
    let uid = nix::unistd::geteuid();
    println!(
        "user:     uid {uid}{} (daemon and floor)",
        if uid.is_root() {
            ", root: FUSE passthrough on"
        } else {
            ", not root: no FUSE passthrough"
        }
    );
}

/// The type and source of the filesystem holding `path` (longest mount prefix).
fn filesystem_of(path: &Path) -> String {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let mp = *fields.get(4)?;
            let dash = fields.iter().position(|f| *f == "-")?;
            if !path.starts_with(mp) {
                return None;
            }
            let (fstype, source) = (fields.get(dash + 1)?, fields.get(dash + 2)?);
            Some((mp.len(), format!("{fstype} ({source})")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, d)| d)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Figure 1: one large file read front to back with a 1 MiB buffer.
/// Cold means the page cache of the file was dropped (both the mount's and
/// the backing file's) just before; warm is the read right after that.
fn sequential_read(b: &Bench) -> io::Result<Vec<Row>> {
    let native = b.ws.store.join(&b.big);
    let mount = b.ws.mnt.join(&b.big);
    let size = b.cfg.big_file_bytes;
    let read = |p: &Path| -> io::Result<f64> {
        let (t, n) = time(|| read_sequential(p));
        let n = n?;
        if n != size {
            return Err(invalid(format!(
                "{}: read {n} bytes, want {size}",
                p.display()
            )));
        }
        Ok(size as f64 / t.as_secs_f64())
    };
    let mb = size >> 20;
    let mut cold = row(
        format!("seq read {mb} MiB, cold"),
        Measure::Throughput,
        Target::Info,
    );
    let mut warm = row(
        format!("seq read {mb} MiB, warm"),
        Measure::Throughput,
        Target::AtLeast(0.8),
    );
    for _ in 0..b.cfg.reps {
        drop_file_cache(&native)?;
        cold.native.push(read(&native)?);
        warm.native.push(read(&native)?);
        drop_file_cache(&mount)?;
        drop_file_cache(&native)?;
        cold.mount.push(read(&mount)?);
        warm.mount.push(read(&mount)?);
    }
    Ok(vec![cold, warm])
}

/// Readdir plus `symlink_metadata` of every entry below `dir`; returns the
/// number of entries.
fn walk_lstat(dir: &Path) -> io::Result<usize> {
    let mut count = 0;
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let meta = fs::symlink_metadata(&path)?;
        count += 1;
        if meta.is_dir() {
            count += walk_lstat(&path)?;
        }
    }
    Ok(count)
}

/// Figure 2: stat every file of the note tree, warm: one untimed walk, then
/// timed walks (readdir + lstat, as `find` or `ls -lR` do).
fn stat_walk(b: &Bench) -> io::Result<Row> {
    let native = b.ws.store.join("notes");
    let mount = b.ws.mnt.join("notes");
    let expected = walk_lstat(&native)?;
    let got = walk_lstat(&mount)?;
    if got != expected {
        return Err(invalid(format!(
            "mount walk saw {got} entries, native {expected}"
        )));
    }
    let mut r = row(
        format!("stat walk {expected} entries, warm"),
        Measure::Rate("stat"),
        Target::AtLeast(0.5),
    );
    for _ in 0..b.cfg.reps {
        for (side, dir) in [(&mut r.native, &native), (&mut r.mount, &mount)] {
            let (t, n) = time(|| walk_lstat(dir));
            if n? != expected {
                return Err(invalid(format!("{}: entry count changed", dir.display())));
            }
            side.push(expected as f64 / t.as_secs_f64());
        }
    }
    Ok(r)
}

/// Info next to figure 2: `symlink_metadata` of known paths, no readdir, so
/// lookup and getattr are measured alone.
fn stat_known_paths(b: &Bench) -> io::Result<Row> {
    let stat_all = |root: &Path| -> io::Result<f64> {
        let (t, r) = time(|| {
            b.notes
                .iter()
                .try_for_each(|p| fs::symlink_metadata(root.join(p)).map(drop))
        });
        r?;
        Ok(b.notes.len() as f64 / t.as_secs_f64())
    };
    stat_all(&b.ws.store)?;
    stat_all(&b.ws.mnt)?;
    let mut r = row(
        format!("lstat {} known paths, warm", b.notes.len()),
        Measure::Rate("stat"),
        Target::Info,
    );
    for _ in 0..b.cfg.reps {
        r.native.push(stat_all(&b.ws.store)?);
        r.mount.push(stat_all(&b.ws.mnt)?);
    }
    Ok(r)
}

/// Info next to figure 4: open and close every note without reading, to
/// tell the per-open cost apart from the read.
fn open_close_notes(b: &mut Bench, floors: &[Floor]) -> io::Result<Vec<Row>> {
    let open_all = |root: &Path| -> io::Result<f64> {
        let (t, r) = time(|| {
            b.notes
                .iter()
                .try_for_each(|p| fs::File::open(root.join(p)).map(drop))
        });
        r?;
        Ok(b.notes.len() as f64 / t.as_secs_f64())
    };
    open_all(&b.ws.store)?;
    open_all(&b.ws.mnt)?;
    for floor in floors {
        open_all(&floor.notes())?;
    }
    let mut r = row(
        format!("open+close {} notes, warm", b.notes.len()),
        Measure::Rate("file"),
        Target::Info,
    );
    let mut on_floors = vec![OnFloor::default(); floors.len()];
    let mut cpu = 0.0;
    for _ in 0..b.cfg.reps {
        r.native.push(open_all(&b.ws.store)?);
        let before = b.daemon.cpu_seconds();
        r.mount.push(open_all(&b.ws.mnt)?);
        cpu += cpu_since(b, before);
        for (floor, on) in floors.iter().zip(&mut on_floors) {
            on.record(floor, || open_all(&floor.notes()))?;
        }
    }
    let opens = (b.cfg.reps * b.notes.len()) as f64;
    b.observations.push(format!(
        "open+close: daemon CPU {:.0} µs per open; {}",
        cpu / opens * 1e6,
        floors_cpu(floors, &on_floors, opens)
    ));
    Ok(with_floors(b, r, floors, on_floors, "open+close"))
}

/// Daemon CPU seconds since `before` (0 where /proc cannot tell).
fn cpu_since(b: &Bench, before: Option<f64>) -> f64 {
    seconds_between(before, b.daemon.cpu_seconds())
}

fn seconds_between(before: Option<f64>, now: Option<f64>) -> f64 {
    match (before, now) {
        (Some(a), Some(z)) => z - a,
        _ => 0.0,
    }
}

/// A floor filesystem, mounted for a figure or two. Unmounts on drop.
struct Floor {
    /// What the observations call it, and its rows' label.
    name: &'static str,
    label: &'static str,
    server: NullMount,
    mountpoint: PathBuf,
}

impl Floor {
    /// Where the read figures put the notes on it.
    fn notes(&self) -> PathBuf {
        self.mountpoint.join("notes")
    }
}

/// Mounts the FUSE floor and the storing floor.
fn start_floors(ws: &Workspace) -> io::Result<Vec<Floor>> {
    Ok(vec![
        Floor {
            name: "FUSE floor",
            label: "FUSE floor (nullfs)",
            server: NullMount::start(&ws.floor)?,
            mountpoint: ws.floor.clone(),
        },
        Floor {
            name: "storing floor",
            label: "storing floor",
            server: NullMount::start_storing(&ws.stored_floor, &ws.stored_floor_data)?,
            mountpoint: ws.stored_floor.clone(),
        },
    ])
}

/// One floor's samples in a figure (rates or times, as the figure's),
/// and its server's CPU seconds over them.
#[derive(Clone, Default)]
struct OnFloor {
    samples: Vec<f64>,
    cpu: f64,
}

impl OnFloor {
    /// Runs one timed pass on `floor`; keeps its sample and the CPU its
    /// server used meanwhile.
    fn record(&mut self, floor: &Floor, pass: impl FnOnce() -> io::Result<f64>) -> io::Result<()> {
        let before = floor.server.cpu_seconds();
        self.samples.push(pass()?);
        self.cpu += seconds_between(before, floor.server.cpu_seconds());
        Ok(())
    }
}

/// The floors' servers' CPU per item, for an observation.
fn floors_cpu(floors: &[Floor], on_floors: &[OnFloor], items: f64) -> String {
    floors
        .iter()
        .zip(on_floors)
        .map(|(f, on)| format!("the {}'s server {:.0} µs", f.name, on.cpu / items * 1e6))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `r` and a row per floor with its figures for the same work, compared
/// with the same native passes; notes how many times the floors' time
/// mnemofs took.
fn with_floors(
    b: &mut Bench,
    r: Row,
    floors: &[Floor],
    on_floors: Vec<OnFloor>,
    what: &str,
) -> Vec<Row> {
    let mut rows = vec![];
    let mut ratios = vec![];
    for (f, on) in floors.iter().zip(on_floors) {
        let mut floor = row(
            format!("  same on the {}", f.label),
            r.measure,
            Target::Info,
        );
        floor.mount = on.samples;
        floor.native = r.native.clone();
        if !r.mount.is_empty() && !floor.mount.is_empty() {
            let times = match r.measure {
                Measure::Time => r.mount_value() / floor.mount_value(),
                // Rates: the time taken is the inverse.
                _ => floor.mount_value() / r.mount_value(),
            };
            ratios.push(format!("{times:.2}x the time of the {}", f.name));
        }
        rows.push(floor);
    }
    if !ratios.is_empty() {
        b.observations
            .push(format!("{what}: mnemofs took {}", ratios.join(", ")));
    }
    rows.insert(0, r);
    rows
}

/// The notes again on the FUSE floor (same paths and sizes; it keeps no
/// data) and on the storing floor, for the read figures' floor rows.
/// Unmounts on drop.
fn floor_notes(b: &Bench) -> io::Result<Vec<Floor>> {
    let floors = start_floors(&b.ws)?;
    for p in &b.notes {
        let text = fs::read(b.ws.store.join(p))?;
        for floor in &floors {
            let to = floor.notes().join(p);
            if let Some(dir) = to.parent() {
                fs::create_dir_all(dir)?;
            }
            fs::write(&to, &text)?;
        }
    }
    Ok(floors)
}

/// Figure 4: read every note whole, warm (one untimed pass first).
fn cat_notes(b: &mut Bench, floors: &[Floor]) -> io::Result<Vec<Row>> {
    let cat_all = |root: &Path| -> io::Result<(f64, u64)> {
        let (t, r) = time(|| {
            b.notes.iter().try_fold(0u64, |sum, p| {
                Ok::<_, io::Error>(sum + fs::read(root.join(p))?.len() as u64)
            })
        });
        Ok((b.notes.len() as f64 / t.as_secs_f64(), r?))
    };
    let (_, native_bytes) = cat_all(&b.ws.store)?;
    let (_, mount_bytes) = cat_all(&b.ws.mnt)?;
    if native_bytes != mount_bytes {
        return Err(invalid(format!(
            "cat read {mount_bytes} bytes through the mount, {native_bytes} natively"
        )));
    }
    for floor in floors {
        let (_, floor_bytes) = cat_all(&floor.notes())?;
        if floor_bytes != native_bytes {
            return Err(invalid(format!(
                "cat read {floor_bytes} bytes on the {}, {native_bytes} natively",
                floor.name
            )));
        }
    }
    let mut r = row(
        format!("cat {} notes, warm", b.notes.len()),
        Measure::Rate("file"),
        Target::Info,
    );
    let mut on_floors = vec![OnFloor::default(); floors.len()];
    let mut cpu = 0.0;
    for _ in 0..b.cfg.reps {
        r.native.push(cat_all(&b.ws.store)?.0);
        let before = b.daemon.cpu_seconds();
        r.mount.push(cat_all(&b.ws.mnt)?.0);
        cpu += cpu_since(b, before);
        for (floor, on) in floors.iter().zip(&mut on_floors) {
            on.record(floor, || Ok(cat_all(&floor.notes())?.0))?;
        }
    }
    let files = (b.cfg.reps * b.notes.len()) as f64;
    b.observations.push(format!(
        "cat: daemon CPU {:.0} µs per file read whole; {}",
        cpu / files * 1e6,
        floors_cpu(floors, &on_floors, files)
    ));
    Ok(with_floors(b, r, floors, on_floors, "cat"))
}

/// Creates the note dirs under `base` and writes every file; the timed part.
fn write_tree(base: &Path, dirs: &[PathBuf], files: &[(PathBuf, String)]) -> io::Result<()> {
    fs::create_dir(base)?;
    for d in dirs {
        fs::create_dir_all(base.join(d))?;
    }
    for (p, text) in files {
        fs::write(base.join(p), text)?;
    }
    Ok(())
}

/// Figure 3: create and write N small notes (mkdir included) into a fresh
/// directory per repetition; native goes to a plain dir outside the store.
/// A second row times the same work on the FUSE floor (`common::nullfs`):
/// what any FUSE filesystem pays on this machine before doing any work. A
/// third times it on the storing floor, which also creates and writes each
/// file in a backing directory on the store's filesystem: what any FUSE
/// filesystem that keeps its files on a local disk pays.
fn create_small_files(b: &mut Bench) -> io::Result<Vec<Row>> {
    let n = b.cfg.notes;
    let dirs = note_dirs(n);
    let files: Vec<(PathBuf, String)> = (0..n)
        .map(|i| (note_path(i, n), note_text(i, n, WRITE_SEED)))
        .collect();
    let mut r = row(
        format!("create+write {n} files"),
        Measure::Time,
        Target::AtMost(4.0),
    );
    let floors = start_floors(&b.ws)?;
    let mut on_floors = vec![OnFloor::default(); floors.len()];
    // Deleting between repetitions made the next native pass up to 10x
    // slower on ext4 with online discard, so written trees stay until the
    // end, and every timed pass starts after a syncfs.
    let mut catch_up = Vec::new();
    let mut written = Vec::new();
    let mut on_mount = Vec::new();
    let mut create_cpu = 0.0;
    // Pass 0 is an untimed warm-up: the first pass of a run was an outlier
    // on both sides, in either direction, from one run to the next.
    for rep in 0..=b.cfg.reps {
        let native = b.ws.plain.join(format!("write-{rep}"));
        sync_filesystem(&b.ws.plain)?;
        let (t, res) = time(|| write_tree(&native, &dirs, &files));
        res?;
        if rep > 0 {
            r.native.push(t.as_secs_f64());
        }

        b.settle("the previous figure");
        sync_filesystem(&b.ws.plain)?;
        let mount = b.ws.mnt.join(format!("bench-write-{rep}"));
        let before = b.daemon.cpu_seconds();
        let (t, res) = time(|| write_tree(&mount, &dirs, &files));
        res?;
        catch_up.push(b.settle("writing files").as_secs_f64());
        if rep > 0 {
            r.mount.push(t.as_secs_f64());
            create_cpu += cpu_since(b, before);
        }

        for (floor, on) in floors.iter().zip(&mut on_floors) {
            sync_filesystem(&b.ws.plain)?;
            let to = floor.mountpoint.join(format!("write-{rep}"));
            let pass = || {
                let (t, res) = time(|| write_tree(&to, &dirs, &files));
                res.map(|()| t.as_secs_f64())
            };
            if rep > 0 {
                on.record(floor, pass)?;
            } else {
                pass()?;
            }
        }
        written.push(native);
        on_mount.push(mount);
    }
    b.memory.phase("removing the written files");
    for dir in written {
        fs::remove_dir_all(&dir)?;
    }
    for entry in fs::read_dir(&b.ws.stored_floor_data)? {
        fs::remove_dir_all(entry?.path())?;
    }
    let removed = (on_mount.len() * n) as f64;
    let before = b.daemon.cpu_seconds();
    for dir in on_mount {
        fs::remove_dir_all(&dir)?;
    }
    b.settle("removing written files");
    let remove_cpu = cpu_since(b, before);
    let created = (b.cfg.reps * n) as f64;
    b.observations.push(format!(
        "create+write: daemon CPU {:.0} µs per new file (create, write and index, until the \
         daemon is idle again); removing them through the mount, {:.0} µs per file (unlink, \
         the kept version and the index)",
        create_cpu / created * 1e6,
        remove_cpu / removed * 1e6
    ));
    b.observations.push(format!(
        "create+write: CPU per new file: {}",
        floors_cpu(&floors, &on_floors, created)
    ));
    b.observations.push(format!(
        "after each mount write pass (warm-up first) the daemon stayed busy for {} s (incl. a 0.25 s quiet window)",
        catch_up
            .iter()
            .map(|s| format!("{s:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(with_floors(b, r, &floors, on_floors, "create+write"))
}

fn row(figure: String, measure: Measure, target: Target) -> Row {
    Row::new(figure, measure, target)
}
