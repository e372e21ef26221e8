//! memory-cli's commands as new processes on a store no daemon serves:
//! `import` of ten times the notes (100k by default) from JSON lines,
//! `ingest --source obsidian` of a vault of the notes (10k), `export` of
//! the imported store, and `write` then `search` finding it, at the notes'
//! count.
//!
//! Baselines from the same run, each the least any tool doing the job
//! must do:
//! - import: writing each line's content to its own file in a plain
//!   folder (no index, no frontmatter, no fsync);
//! - ingest: `cp -r` of the vault;
//! - export: reading every markdown file of the store once;
//! - write then search: writing the file, then `grep -rl` of its word.
//!
//! Each import and ingest repetition starts on a fresh, empty store, so
//! every memory is written, never found a duplicate.

use std::error::Error;
use std::fs;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{Config, Measure, Row, Target, Workspace, generate_store, render_table, time};

/// Runs `mnemofs ARGS --store STORE --state-dir STATE`; its stdout.
fn mnemofs(args: &[&str], store: &Path, state: &Path) -> Result<String, Box<dyn Error>> {
    let out = Command::new(env!("CARGO_BIN_EXE_mnemofs"))
        .args(args)
        .arg("--store")
        .arg(store)
        .arg("--state-dir")
        .arg(state)
        .env("MNEMOFS_LOG", "error")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "mnemofs {args:?}: {} ({})",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A fresh, empty store and state dir under `root`, named `name`.
fn fresh(root: &Path, name: &str) -> Result<(PathBuf, PathBuf), Box<dyn Error>> {
    let store = root.join(format!("{name}-store"));
    let state = root.join(format!("{name}-state"));
    for dir in [&store, &state] {
        if dir.exists() {
            fs::remove_dir_all(dir)?;
        }
        fs::create_dir_all(dir)?;
    }
    Ok((store, state))
}

/// `n` memories as memory-cli exports them, one JSON line each, over a
/// few categories and tags.
fn memory_cli_lines(path: &Path, n: usize) -> std::io::Result<()> {
    const CATEGORIES: &[&str] = &["knowledge", "project", "people", "preferences", "lessons"];
    let mut out = BufWriter::new(fs::File::create(path)?);
    for i in 0..n {
        let category = CATEGORIES[i % CATEGORIES.len()];
        let line = serde_json::json!({
            "id": format!("00000000-0000-4000-8000-{i:012}"),
            "content": format!(
                "Memory {i} about the {category} of the benchmark: the importer writes each \
                 memory to its own file, with its frontmatter, once. See [[Memory {}]].",
                (i + 1) % n
            ),
            "phase": "organized",
            "category": category,
            "scope": "global",
            "tags": [format!("t{}", i % 50), "bench"],
            "source": "memory-cli",
            "created_at": "2026-05-07T10:00:00Z",
            "updated_at": "2026-05-07T10:00:00Z",
            "access_count": i % 4,
            "links": [],
            "version": 1,
        });
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

/// The native import: each line's content as a file of its own.
fn write_contents(lines: &Path, dir: &Path) -> Result<usize, Box<dyn Error>> {
    if dir.exists() {
        fs::remove_dir_all(dir)?;
    }
    fs::create_dir_all(dir)?;
    let text = fs::read_to_string(lines)?;
    let mut n = 0;
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line)?;
        let content = value["content"].as_str().ok_or("no content")?;
        fs::write(dir.join(format!("{n}.md")), content)?;
        n += 1;
    }
    Ok(n)
}

/// Reads every markdown file under `root` once; how many.
fn read_markdown(root: &Path) -> std::io::Result<usize> {
    let mut count = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                std::hint::black_box(fs::read(&path)?);
                count += 1;
            }
        }
    }
    Ok(count)
}

/// The `read N, written M` of an import or ingest report.
fn written(report: &str) -> usize {
    report
        .split(", ")
        .find_map(|part| part.strip_prefix("written "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Runs the command-line figures.
pub fn run(cfg: &Config) -> Result<(), Box<dyn Error>> {
    let imported = cfg.notes * 10;
    let notes = cfg.notes;
    println!(
        "\n== cli: memory-cli's commands as new processes, no daemon ({imported} imported, {notes} notes) =="
    );
    let ws = Workspace::new()?;
    let reps = if cfg.quick { 1 } else { cfg.reps.min(3) };
    let mut observations = Vec::new();

    // import, into an empty store each time.
    let lines = ws.plain.join("memory-cli.jsonl");
    memory_cli_lines(&lines, imported)?;
    let lines_arg = lines.to_string_lossy().into_owned();
    let mut import = Row::new(
        format!("import of {imported} memories from JSON lines (native: a file per line)"),
        Measure::Time,
        Target::Info,
    )
    .with_limit(imported as f64 / 5000.0);
    let mut kept = None;
    for rep in 0..reps {
        let (t, n) = time(|| write_contents(&lines, &ws.plain.join("native-import")));
        if n? != imported {
            return Err("the native import wrote the wrong count".into());
        }
        import.native.push(t.as_secs_f64());
        let (store, state) = fresh(&ws.plain, &format!("import{rep}"))?;
        let (t, report) = time(|| mnemofs(&["import", "--input", &lines_arg], &store, &state));
        let report = report?;
        if written(&report) != imported {
            return Err(format!("import wrote too little: {report}").into());
        }
        import.mount.push(t.as_secs_f64());
        // Only the last store is kept, for the export figure.
        if let Some((old_store, old_state)) = kept.replace((store, state)) {
            fs::remove_dir_all(old_store)?;
            fs::remove_dir_all(old_state)?;
        }
    }
    observations.push(format!(
        "import: the limit is 5,000 memories/s; the best run made {:.0}/s",
        imported as f64 / import.mount.iter().copied().fold(f64::INFINITY, f64::min)
    ));
    let (import_store, import_state) = kept.ok_or("no import ran")?;

    // export of what was imported.
    let mut export = Row::new(
        format!("export of {imported} memories (native: read every file once)"),
        Measure::Time,
        Target::Info,
    )
    .with_limit(10.0);
    let out = ws.plain.join("export.jsonl");
    let out_arg = out.to_string_lossy().into_owned();
    for _ in 0..reps {
        let (t, n) = time(|| read_markdown(&import_store));
        n?;
        export.native.push(t.as_secs_f64());
        let (t, done) = time(|| {
            mnemofs(
                &["export", "--output", &out_arg],
                &import_store,
                &import_state,
            )
        });
        done?;
        export.mount.push(t.as_secs_f64());
        let lines = fs::read_to_string(&out)?.lines().count();
        if lines != imported {
            return Err(format!("export wrote {lines} lines, not {imported}").into());
        }
    }

    // obsidian ingest of a vault of the synthetic notes.
    let vault = ws.plain.join("vault");
    generate_store(&vault, notes)?;
    fs::create_dir_all(vault.join(".obsidian"))?;
    fs::write(vault.join(".obsidian/app.json"), "{}")?;
    let vault_arg = vault.to_string_lossy().into_owned();
    let mut ingest = Row::new(
        format!("ingest --source obsidian of {notes} notes (native: cp -r)"),
        Measure::Time,
        Target::Info,
    )
    .with_limit(notes as f64 / 2000.0);
    for rep in 0..reps {
        let copy = ws.plain.join("vault-copy");
        if copy.exists() {
            fs::remove_dir_all(&copy)?;
        }
        let (t, status) = time(|| Command::new("cp").arg("-r").arg(&vault).arg(&copy).status());
        if !status?.success() {
            return Err("cp -r failed".into());
        }
        ingest.native.push(t.as_secs_f64());
        let (store, state) = fresh(&ws.plain, &format!("ingest{rep}"))?;
        let (t, report) = time(|| {
            mnemofs(
                &[
                    "ingest",
                    "--source",
                    "obsidian",
                    "--path",
                    &vault_arg,
                    "--keep-folders",
                ],
                &store,
                &state,
            )
        });
        let report = report?;
        if written(&report) != notes {
            return Err(format!("ingest wrote too little: {report}").into());
        }
        ingest.mount.push(t.as_secs_f64());
    }

    // write, then search finding it, each a new process, at `notes` notes.
    let (store, state) = fresh(&ws.plain, "search")?;
    generate_store(&store, notes)?;
    let (t, built) = time(|| mnemofs(&["reindex"], &store, &state));
    built?;
    observations.push(format!("search store indexed in {:.1} s", t.as_secs_f64()));
    let native_dir = ws.plain.join("search-native");
    fs::create_dir_all(&native_dir)?;
    let runs = if cfg.quick { 3 } else { 20 };
    let mut round = Row::new(
        format!(
            "write then search finding it, new processes, {notes} notes (native: write + grep -rl)"
        ),
        Measure::Time,
        Target::Info,
    )
    .with_percentile(50)
    .with_limit(0.1);
    for i in 0..runs {
        let word = format!("zqxbench{i}");
        let (t, found) = time(|| -> Result<usize, Box<dyn Error>> {
            fs::write(
                native_dir.join(format!("{word}.md")),
                format!("{word} native\n"),
            )?;
            let out = Command::new("grep")
                .args(["-rl", "--include=*.md", &word])
                .arg(&store)
                .arg(&native_dir)
                .output()?;
            Ok(out
                .stdout
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count())
        });
        if found? == 0 {
            return Err("grep found nothing".into());
        }
        round.native.push(t.as_secs_f64());
        let text = format!("A note about {word}");
        let (t, hits) = time(|| -> Result<String, Box<dyn Error>> {
            mnemofs(&["write", &text, "--category", "knowledge"], &store, &state)?;
            mnemofs(&["search", &word, "--json"], &store, &state)
        });
        if !hits?.contains(&word) {
            return Err(format!("search did not find {word}").into());
        }
        round.mount.push(t.as_secs_f64());
    }

    println!("{}", render_table(&[import, export, ingest, round]));
    for o in observations {
        println!("note: {o}");
    }
    Ok(())
}
