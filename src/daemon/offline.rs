//! CLI commands on the index, with or without a daemon serving the store.
//!
//! The daemon owns the index writer while it runs, so these never take the
//! writer then: `search` reads the daemon's index read-only, and `reindex`
//! asks the daemon (SIGUSR1) to rebuild. With no daemon, the command opens
//! the index itself (holding the store lock so a mount cannot race it),
//! brings it up to date with the store, and answers.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use super::lock::{StoreLock, holder_pid};
use super::{MountConfig, control};
use crate::index::{Hit, Index};
use crate::store::Store;
use crate::tasks::Report;

/// How long an offline command waits for the index to catch up with the store.
const CATCH_UP: Duration = Duration::from_secs(600);

fn open_offline(store: &Path, state_dir: &Path) -> anyhow::Result<Index> {
    std::fs::create_dir_all(state_dir)
        .with_context(|| format!("cannot create state dir {}", state_dir.display()))?;
    let store = Arc::new(
        Store::open(store).with_context(|| format!("cannot open store {}", store.display()))?,
    );
    let index = Index::open(state_dir, store).context("cannot open the search index")?;
    if !index.wait_idle(CATCH_UP) {
        bail!("the index did not catch up with the store in time");
    }
    Ok(index)
}

/// Searches the store's index.
pub fn search(
    store: &Path,
    state_dir: &Path,
    query: &str,
    limit: usize,
) -> anyhow::Result<Vec<Hit>> {
    match StoreLock::try_acquire(store)? {
        Some(_lock) => {
            let index = open_offline(store, state_dir)?;
            let hits = index.search(query, limit)?;
            index.shutdown();
            Ok(hits)
        }
        None => {
            let index = Index::open_read_only(state_dir).with_context(|| {
                format!(
                    "a daemon serves {} but its index in {} cannot be read (pass the daemon's --state-dir)",
                    store.display(),
                    state_dir.display()
                )
            })?;
            Ok(index.search(query, limit)?)
        }
    }
}

/// Rebuilds the index, or asks the serving daemon to.
pub fn reindex(store: &Path, state_dir: &Path) -> anyhow::Result<String> {
    match StoreLock::try_acquire(store)? {
        Some(_lock) => {
            let index = open_offline(store, state_dir)?;
            let count = index.rebuild()?;
            index.shutdown();
            Ok(format!("indexed {count} files"))
        }
        None => {
            let Some(pid) = holder_pid(store, state_dir) else {
                bail!("a daemon serves {} but its pid is unknown", store.display());
            };
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid as i32, libc::SIGUSR1) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("cannot signal the daemon (pid {pid})"));
            }
            Ok(format!(
                "asked the daemon (pid {pid}) to rebuild the index; see .mnemofs/status.json"
            ))
        }
    }
}

/// Runs a dream level: in the daemon when one serves the store, else on a
/// private mount of the store made just for this run (so the same code,
/// with the same safety rules, does the work either way).
pub fn dream(config: &MountConfig, level: u8) -> anyhow::Result<Report> {
    let request = serde_json::json!({ "cmd": "dream", "level": level });
    if let Some(reply) = control::request(&config.state_dir, &request, control::DREAM_TIMEOUT)? {
        return serde_json::from_value(reply["report"].clone())
            .context("unexpected reply from the daemon");
    }
    let Some(_lock) = StoreLock::try_acquire(&config.store)? else {
        bail!(
            "a daemon serves {} but has no control socket in {} (pass the daemon's --state-dir)",
            config.store.display(),
            config.state_dir.display()
        );
    };
    std::fs::create_dir_all(&config.mountpoint)
        .with_context(|| format!("cannot create {}", config.mountpoint.display()))?;
    let result = dream_on_private_mount(config, level);
    let _ = std::fs::remove_dir(&config.mountpoint);
    result
}

fn dream_on_private_mount(config: &MountConfig, level: u8) -> anyhow::Result<Report> {
    let mounted = super::mount_store(config)?;
    let (tasks, watcher) = super::start_tasks(config, &mounted)?;
    let super::Mounted { index, session, .. } = mounted;
    let background = session.spawn().context("cannot start the FUSE session")?;
    let report = tasks
        .as_ref()
        .and_then(|t| t.dream(level, control::DREAM_TIMEOUT));
    drop(watcher);
    drop(tasks);
    index.shutdown();
    background
        .umount_and_join()
        .context("cannot unmount the private mount")?;
    report.context("the dream run did not finish")
}

/// The daemon's status, or the last recorded one when no daemon runs.
pub fn status(state_dir: &Path) -> anyhow::Result<serde_json::Value> {
    let request = serde_json::json!({ "cmd": "status" });
    if let Some(reply) = control::request(state_dir, &request, Duration::from_secs(10))? {
        let mut status = reply["status"].clone();
        status["daemon"] = serde_json::Value::Bool(true);
        return Ok(status);
    }
    let tasks = std::fs::read(state_dir.join(crate::tasks::REPORTS_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    Ok(serde_json::json!({ "daemon": false, "tasks": tasks }))
}
