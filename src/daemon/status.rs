//! `mnemofs status`: who serves a store, where its files are, and how its
//! index and organizer are doing; as text for a person, or one JSON
//! object (`--json`) for a program.

use std::path::Path;

use serde::Serialize;

use super::{Found, Session, Target, default_state_dir};
use crate::ops::{self, Request, Response};

/// What `status` reports: the operations' own status plus what only the
/// command can see (the registry, the state dir, other mounts).
#[derive(Debug, Serialize)]
pub struct Overview {
    /// The operations' status (served by, writer, index, tasks).
    #[serde(flatten)]
    pub status: ops::Status,
    /// Where the store is mounted, when a daemon mounts it.
    pub mountpoint: Option<String>,
    /// The state dir in use.
    pub state_dir: String,
    /// The daemon's log file, when there is one.
    pub log_file: Option<String>,
    /// The daemon's control socket.
    pub control_socket: Option<String>,
    /// The pid of the process that answered through that socket: the
    /// daemon, or an `mnemofs mcp` or `tool` serving the store for its agent.
    pub served_from: Option<u32>,
    /// The daemon's public socket (JSON-RPC for agents).
    pub socket: Option<String>,
    /// mnemofs mounts whose daemon has died.
    pub stale_mounts: Vec<String>,
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

impl Overview {
    /// Asks `session` for its status and adds what the registry and the
    /// mount table say.
    pub fn gather(target: &Target, found: &Found, session: &Session) -> anyhow::Result<Overview> {
        let Response::Status { status } = session.call(Request::Status)? else {
            anyhow::bail!("unexpected answer to status");
        };
        let daemon = found.daemon.as_ref().filter(|_| session.through_daemon());
        let state_dir = match (daemon, &target.state_dir) {
            (Some(entry), _) => entry.state_dir.clone(),
            (None, Some(dir)) => dir.clone(),
            (None, None) => default_state_dir(&found.store),
        };
        let log = state_dir.join("mnemofs.log");
        let stale_mounts = super::registry::mnemofs_mounts()
            .into_iter()
            .filter(|m| super::doctor::answers(m) == Some(false))
            .map(|m| shown(&m))
            .collect();
        Ok(Overview {
            status: *status,
            mountpoint: daemon.and_then(|e| e.mountpoint.as_deref()).map(shown),
            state_dir: shown(&state_dir),
            log_file: log.is_file().then(|| shown(&log)),
            control_socket: daemon.map(|e| shown(&e.socket)),
            served_from: daemon.map(|e| e.pid),
            socket: daemon.and_then(|e| e.rpc_socket.as_deref()).map(shown),
            stale_mounts,
        })
    }

    /// The overview as aligned lines.
    pub fn render(&self, now_ms: i64) -> String {
        let s = &self.status;
        let mut lines: Vec<(&str, String)> = vec![("store", s.store.clone())];
        let served = match (s.served_by.as_str(), s.pid, &self.mountpoint) {
            ("daemon", Some(pid), Some(m)) => format!("a daemon (pid {pid}), mounted at {m}"),
            ("daemon", Some(pid), None) => format!("a daemon (pid {pid}), not mounted"),
            ("daemon", None, _) => "a daemon".to_owned(),
            _ if let Some(pid) = self.served_from => {
                format!("no daemon: mnemofs mcp or tool (pid {pid}) serves the store for its agent")
            }
            _ => "no daemon: this command opened the store itself".to_owned(),
        };
        lines.push(("served by", served));
        lines.push(("state dir", self.state_dir.clone()));
        if let Some(log) = &self.log_file {
            lines.push(("log file", log.clone()));
        }
        if let Some(socket) = &self.control_socket {
            lines.push(("control", socket.clone()));
        }
        if let Some(socket) = &self.socket {
            lines.push(("socket", socket.clone()));
        }
        let freshness = if let Some(why) = &s.index_failing {
            format!(
                "INDEXING IS FAILING ({why}); {} changes not yet searchable, retried on its own",
                s.pending_changes
            )
        } else if let Some(r) = s.rebuilding {
            format!("rebuilding, {} of {} files read", r.done, r.total)
        } else if s.reconciling {
            "catching up with changes made while nothing watched".to_owned()
        } else if s.pending_changes > 0 {
            format!("{} changes not yet searchable", s.pending_changes)
        } else {
            "every change searchable".to_owned()
        };
        let committed = if s.last_commit_ms > 0 {
            format!(
                "; last commit {} ago",
                ago((now_ms - s.last_commit_ms).max(0) / 1000)
            )
        } else {
            String::new()
        };
        lines.push((
            "index",
            format!("{} documents, {freshness}{committed}", s.documents),
        ));
        lines.push((
            "search",
            match &s.meaning {
                Some(m) if s.served_by == "local" && self.served_from.is_none() && m.backlog > 0 => format!(
                    "by words and meaning ({}; {} memories embedded{}, {} waiting: a daemon embeds \
                     them (a mount, `mnemofs serve` or `mnemofs mcp`), each search here the newest \
                     few; until then they are found by their words)",
                    m.model,
                    m.embedded,
                    unread(m.unread),
                    m.backlog
                ),
                Some(m) => format!(
                    "by words and meaning ({}; {} memories embedded{}, {} waiting)",
                    m.model,
                    m.embedded,
                    unread(m.unread),
                    m.backlog
                ),
                None => match &s.meaning_off {
                    Some(why) => format!("by words only, as {why}"),
                    None => "by words only; for meaning too, run `mnemofs model pull` and \
                             put the line it prints in the config"
                        .to_owned(),
                },
            },
        ));
        if s.kept_ids > 0 {
            let notes = match s.kept_ids {
                1 => "1 note".to_owned(),
                n => format!("{n} notes"),
            };
            lines.push((
                "ids",
                format!(
                    "{notes} without id: in the file, kept here until written \
                     (mnemofs normalize --all writes them)"
                ),
            ));
        }
        let mut tasks: Vec<_> = s.tasks.iter().collect();
        tasks.sort_by_key(|(_, r)| std::cmp::Reverse(r.finished_at));
        let queue = match s.organizer_queue {
            0 => String::new(),
            n => format!("{n} changes queued; "),
        };
        let organizer = if !s.organizer {
            "not running here".to_owned()
        } else if let Some((name, report)) = tasks.first() {
            format!(
                "{queue}last run {name} {} ago: {}",
                ago((now_ms / 1000 - report.finished_at).max(0)),
                report.summary()
            )
        } else {
            format!("{queue}no run yet")
        };
        lines.push(("organizer", organizer));
        if let Some(h) = &s.history {
            let trash = match h.deleted {
                0 => "the trash is empty".to_owned(),
                1 => "1 memory in the trash (mnemofs trash)".to_owned(),
                n => format!("{n} memories in the trash (mnemofs trash)"),
            };
            lines.push((
                "history",
                format!(
                    "{} earlier versions, {} of {}; {trash}",
                    h.versions,
                    bytes(h.bytes),
                    bytes(h.max_bytes)
                ),
            ));
        }
        if let Some(sync) = &s.sync {
            let when = ago((now_ms - sync.finished_ms).max(0) / 1000);
            let said = match &sync.error {
                Some(e) => format!("last round {when} ago failed: {e}"),
                None => format!("last round {when} ago: {}", sync.summary()),
            };
            lines.push(("sync", said));
        }
        if !s.conflicts.is_empty() {
            lines.push((
                "conflicts",
                format!(
                    "{} to resolve: {}",
                    crate::ops::counted(s.conflicts.len(), "sync conflict copy"),
                    s.conflicts.join(", ")
                ),
            ));
        }
        lines.push((
            "stale mounts",
            if self.stale_mounts.is_empty() {
                "none".to_owned()
            } else {
                format!(
                    "{} (their daemon died: mnemofs unmount --lazy <mountpoint>)",
                    self.stale_mounts.join(", ")
                )
            },
        ));
        let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        lines
            .into_iter()
            .map(|(k, v)| format!("{k:<width$}  {v}\n"))
            .collect()
    }
}

/// A size as a person says it: `512 B`, `3.4 KiB`, `1 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let shown = format!("{value:.1}");
    let shown = shown.strip_suffix(".0").unwrap_or(&shown);
    format!("{shown} {}", UNITS[unit])
}

/// Seconds as a person says them: `42 s`, `5 min`, `3 h`, `2 days`.
fn ago(secs: i64) -> String {
    match secs {
        ..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

/// ", 23 of them unread by the model: found by their words alone", or
/// nothing when the model read them all.
fn unread(unread: u64) -> String {
    if unread == 0 {
        return String::new();
    }
    format!(
        ", {} of them unread by the model (Chinese to an English one, or next to no letters): found by their words alone",
        unread
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(ago(5), "5 s");
        assert_eq!(ago(300), "5 min");
        assert_eq!(ago(7200), "2 h");
        assert_eq!(ago(3 * 86_400), "3 days");
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3482), "3.4 KiB");
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(1536 << 20), "1.5 GiB");
    }
}
