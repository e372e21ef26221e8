//! The session brief: what an agent should know when a session starts.
//!
//! Built from the index at index speed (metadata lookups, never a scan of
//! the store) and a read of the few memories it shows. Sections, each
//! capped and ranked: the user's preferences and feedback, active tasks,
//! open decisions, the latest sessions with their `[next-step]`,
//! `[problem]` and `[decision]` observations, reminders due soon, recent
//! activity that falls under none of those (a task or decision without a
//! status among it); then how to recall more. Memories whose `project`, `cwd` or path matches the
//! session's directory come first, then the most recently changed.
//!
//! The text stays under [`TARGET_CHARS`] (Claude Code cuts a hook's
//! output at 10,000): when it would not, the longest sections lose items
//! first, and every section says how many it left out.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Operations, now_unix};
use crate::memory::{self, Memory};
use crate::store::StorePath;

/// What the brief aims to stay under, in characters.
const TARGET_CHARS: usize = 8_000;
/// Claude Code's cap on a hook's output.
const HARD_CAP_CHARS: usize = 10_000;
/// Memories of one type the brief looks at, at most.
const CANDIDATES: usize = 5_000;
/// Memories of one type the brief reads, at most (those in the session's
/// project folder, then the newest).
const READ_AT_MOST: usize = 150;
/// Recently changed memories looked at for the last section.
const RECENT: usize = 60;
/// Reminders due within this many seconds count as due soon.
const DUE_SOON: i64 = 7 * 86_400;

/// The brief, by section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Brief {
    /// The project the session's directory names, if any.
    pub project: Option<String>,
    /// The sections, in order; empty ones are left out.
    pub sections: Vec<Section>,
    /// Something the reader should know about the brief itself (the index
    /// was still being built, say).
    pub note: Option<String>,
    /// One-line notices the front end adds (the settings, a store that
    /// could not be read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// The last topic of Claude Code's auto-memory for the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_memory: Option<String>,
    /// The project's placement conventions, on one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conventions: Option<String>,
    /// The line that ends the brief.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_prompt: Option<String>,
}

/// One section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Its heading.
    pub title: String,
    /// Its items, best first.
    pub items: Vec<Item>,
    /// How many matching memories were left out.
    pub more: usize,
}

/// One memory in a section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// Relative to the store root.
    pub path: String,
    /// Its id, if it has one.
    pub id: Option<String>,
    /// Its title.
    pub title: String,
    /// Status, due time or the like.
    pub detail: String,
    /// Lines shown under it (a session's next steps and problems).
    pub lines: Vec<String>,
}

/// A memory read for the brief, with what ranks it.
struct Candidate {
    path: StorePath,
    memory: Memory,
    matches_cwd: bool,
    changed: i64,
}

impl Operations {
    /// The brief for a session started in `cwd` (if known); its recent
    /// sessions and activity go back `within`, if given (the newest
    /// session shows whatever its age: it says where work was left).
    pub fn brief(&self, cwd: Option<&str>, within: Option<Duration>) -> Brief {
        let cwd = cwd.map(str::trim).filter(|c| !c.is_empty());
        let project = cwd
            .and_then(|c| Path::new(c).file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let status = self.index.status();
        let mut brief = Brief {
            project: project.clone(),
            note: status.reconciling.then(|| {
                "the index is still being built; this brief may miss recent memories".into()
            }),
            ..Brief::default()
        };
        let now = now_unix();
        let since = within.map_or(i64::MIN, |w| {
            now.saturating_sub(i64::try_from(w.as_secs()).unwrap_or(i64::MAX))
        });
        let conflicts = self.conflicts();
        if !conflicts.is_empty() {
            brief.notices.push(format!(
                "To resolve: {} ({}), each another machine's version \
                 of a memory changed on both; keep what you want in the memory, then delete \
                 the copy.",
                super::sync::counted(conflicts.len(), "sync conflict copy"),
                conflicts.join(", ")
            ));
        }
        let mut shown: Vec<String> = Vec::new();

        let project = project.as_deref();
        // How the user wants things done applies from the first answer on.
        let wishes: Vec<StorePath> = [memory::Category::Preferences, memory::Category::Feedback]
            .into_iter()
            .flat_map(|c| self.index.by_category(c.as_str()))
            .collect();
        let wishes = self.newest(wishes, cwd, project);
        brief.push(
            "Preferences and feedback",
            wishes,
            8,
            &mut shown,
            category_of,
        );

        let tasks = self.typed("task", &["active", "in-progress", "open"], cwd, project);
        brief.push("Active tasks", tasks, 10, &mut shown, |c| {
            (status_of(&c.memory), Vec::new())
        });

        let decisions = self.typed("decision", &["open"], cwd, project);
        brief.push("Open decisions", decisions, 8, &mut shown, |_| {
            ("open".into(), Vec::new())
        });

        let (mut sessions, _) = self.typed("session", &[], cwd, project);
        let newest = sessions.iter().map(|c| c.changed).max();
        sessions.retain(|c| c.changed >= since || Some(c.changed) == newest);
        let count = sessions.len();
        brief.push("Latest sessions", (sessions, count), 3, &mut shown, |c| {
            let lines = c
                .memory
                .observations
                .iter()
                .filter(|o| matches!(o.category.as_str(), "next-step" | "problem" | "decision"))
                .take(6)
                .map(|o| format!("[{}] {}", o.category, o.text))
                .collect();
            let when = field(&c.memory, "ended_or_compacted")
                .or_else(|| field(&c.memory, "started"))
                .unwrap_or_default();
            (when, lines)
        });

        let mut reminders: Vec<(i64, Candidate)> = self
            .likely_due(now + DUE_SOON, project)
            .into_iter()
            .filter_map(|path| self.candidate(path, cwd, project))
            .filter_map(|c| {
                let due = field(&c.memory, "due_at")
                    .or_else(|| c.memory.frontmatter.expires_at.clone())
                    .and_then(|d| memory::parse_timestamp(&d))?;
                (due <= now + DUE_SOON).then_some((due, c))
            })
            .collect();
        reminders.sort_by_key(|(due, c)| (!c.matches_cwd, *due));
        let reminders: Vec<Candidate> = reminders.into_iter().map(|(_, c)| c).collect();
        let due = reminders.len();
        brief.push("Reminders due soon", (reminders, due), 8, &mut shown, |c| {
            let due = field(&c.memory, "due_at").unwrap_or_default();
            let past = memory::parse_timestamp(&due).is_some_and(|d| d < now);
            let when = if past { "overdue since" } else { "due" };
            (format!("{when} {due}"), Vec::new())
        });

        let mut recent: Vec<Candidate> = self
            .index
            .recent(RECENT)
            .into_iter()
            .filter(|(p, _)| !shown.contains(&p.to_string()))
            .filter_map(|(path, _)| self.candidate(path, cwd, project))
            .filter(|c| c.changed >= since)
            .filter(|c| {
                // A task or decision without a status is in no section of
                // its own: it shows here.
                let sectioned = match c.memory.frontmatter.kind.as_deref() {
                    Some("task" | "decision") => !status_of(&c.memory).is_empty(),
                    Some("session" | "reminder") => true,
                    _ => false,
                };
                !sectioned
                    && c.memory.frontmatter.category != Some(memory::Category::Reminders)
                    && c.memory.frontmatter.phase != Some(memory::Phase::Archived)
            })
            .collect();
        recent.sort_by_key(|c| (!c.matches_cwd, -c.changed));
        let count = recent.len();
        let title = match within {
            Some(w) => format!(
                "Recent activity (last {})",
                memory::duration::format_duration(w)
            ),
            None => "Recent activity".to_string(),
        };
        brief.push(&title, (recent, count), 8, &mut shown, category_of);
        brief.fit();
        brief
    }

    /// The reminders worth reading, at most [`READ_AT_MOST`]: those whose
    /// file name starts with a due date (as the organizer names them) up
    /// to `until`, latest first, then the others, project and newest first.
    fn likely_due(&self, until: i64, project: Option<&str>) -> Vec<StorePath> {
        let mut dated = Vec::new();
        let mut other = Vec::new();
        for path in self
            .index
            .by_category("reminders")
            .into_iter()
            .take(CANDIDATES)
        {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match name.get(..10).and_then(memory::parse_timestamp) {
                Some(day) if day <= until => dated.push((day, path)),
                Some(_) => {}
                None => {
                    if let Ok(st) = self.store.stat(&path) {
                        other.push((in_project(&path, project), st.mtime.sec, path));
                    }
                }
            }
        }
        dated.sort_by_key(|(day, _)| -day);
        other.sort_by_key(|(mine, changed, _)| (!*mine, -changed));
        dated
            .into_iter()
            .map(|(_, p)| p)
            .chain(other.into_iter().map(|(_, _, p)| p))
            .take(READ_AT_MOST)
            .collect()
    }

    /// Memories of one `type` (and one of `statuses`, if any), ranked,
    /// and how many matched in all. Only the best [`READ_AT_MOST`] by
    /// folder and age are read: at 100k notes a type can have thousands.
    fn typed(
        &self,
        kind: &str,
        statuses: &[&str],
        cwd: Option<&str>,
        project: Option<&str>,
    ) -> (Vec<Candidate>, usize) {
        let paths = if statuses.is_empty() {
            self.index.by_type(kind)
        } else {
            let any: Vec<String> = statuses.iter().map(|s| format!("status:\"{s}\"")).collect();
            let query = format!("type:\"{kind}\" AND ({})", any.join(" OR "));
            self.index
                .search_paths(&query, CANDIDATES)
                .unwrap_or_default()
        };
        let (mut found, total) = self.newest(paths, cwd, project);
        found.retain(|c| statuses.is_empty() || statuses.contains(&status_of(&c.memory).as_str()));
        (found, total)
    }

    /// The memories of `paths` worth showing, at most [`READ_AT_MOST`]
    /// read: those of the session's project first, then the newest;
    /// archived ones left out. Also how many `paths` there were.
    fn newest(
        &self,
        paths: Vec<StorePath>,
        cwd: Option<&str>,
        project: Option<&str>,
    ) -> (Vec<Candidate>, usize) {
        let total = paths.len();
        let mut dated: Vec<(bool, i64, StorePath)> = paths
            .into_iter()
            .take(CANDIDATES)
            .filter_map(|path| {
                let changed = self.store.stat(&path).ok()?.mtime.sec;
                Some((in_project(&path, project), changed, path))
            })
            .collect();
        dated.sort_by_key(|(mine, changed, _)| (!*mine, -changed));
        let mut found: Vec<Candidate> = dated
            .into_iter()
            .take(READ_AT_MOST)
            .filter_map(|(_, _, path)| self.candidate(path, cwd, project))
            .filter(|c| c.memory.frontmatter.phase != Some(memory::Phase::Archived))
            .collect();
        // Newest by when each was written (its `created_at`, else its
        // file's time): a preference written after another on the same
        // subject comes first, even when both files were touched since.
        found.sort_by_key(|c| {
            let written = c
                .memory
                .frontmatter
                .created_at
                .as_deref()
                .and_then(memory::parse_timestamp)
                .unwrap_or(c.changed);
            (!c.matches_cwd, -written)
        });
        (found, total)
    }

    fn candidate(
        &self,
        path: StorePath,
        cwd: Option<&str>,
        project: Option<&str>,
    ) -> Option<Candidate> {
        let st = self.store.stat(&path).ok()?;
        let (_, _, text) = self.read_memory(&path).ok()?;
        let stem = Path::new(path.as_path())
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut memory = memory::parse(&stem, &text);
        if memory.frontmatter.id.is_none() {
            memory.frontmatter.id = self.untouched_id(&path);
        }
        let matches_cwd = matches_session(&memory, &path, cwd, project);
        Some(Candidate {
            path,
            memory,
            matches_cwd,
            changed: st.mtime.sec,
        })
    }
}

/// An item's aside: its category.
fn category_of(c: &Candidate) -> (String, Vec<String>) {
    let category = c.memory.frontmatter.category;
    (
        category.map(|k| k.as_str().to_string()).unwrap_or_default(),
        Vec::new(),
    )
}

/// True if a folder on the path is the project's.
fn in_project(path: &StorePath, project: Option<&str>) -> bool {
    project.is_some_and(|p| {
        path.as_path()
            .iter()
            .any(|c| c.to_string_lossy().eq_ignore_ascii_case(p))
    })
}

/// True if the memory belongs to the session's directory: its `cwd` is
/// that directory or above it, its `project` is the directory's name, or
/// its path has a folder of that name.
fn matches_session(m: &Memory, path: &StorePath, cwd: Option<&str>, project: Option<&str>) -> bool {
    let cwd_matches = match (field(m, "cwd"), cwd) {
        (Some(mine), Some(cwd)) => {
            let mine = mine.trim_end_matches('/');
            !mine.is_empty() && (cwd == mine || cwd.starts_with(&format!("{mine}/")))
        }
        _ => false,
    };
    let project_matches = in_project(path, project)
        || project
            .is_some_and(|p| field(m, "project").is_some_and(|mine| mine.eq_ignore_ascii_case(p)));
    cwd_matches || project_matches
}

/// A frontmatter field as text (scalars only).
fn field(m: &Memory, key: &str) -> Option<String> {
    match m.frontmatter.extra.get(key)? {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn status_of(m: &Memory) -> String {
    m.frontmatter
        .status
        .as_deref()
        .unwrap_or_default()
        .trim()
        .to_lowercase()
}

impl Brief {
    /// Adds a section of at most `cap` of `found`, if any.
    fn push(
        &mut self,
        title: &str,
        (found, total): (Vec<Candidate>, usize),
        cap: usize,
        shown: &mut Vec<String>,
        describe: impl Fn(&Candidate) -> (String, Vec<String>),
    ) {
        if found.is_empty() {
            return;
        }
        let more = total.max(found.len()) - found.len().min(cap);
        let items = found
            .into_iter()
            .take(cap)
            .map(|c| {
                let (detail, lines) = describe(&c);
                shown.push(c.path.to_string());
                Item {
                    path: c.path.to_string(),
                    id: c.memory.frontmatter.id.clone(),
                    title: c.memory.title.clone(),
                    detail,
                    lines,
                }
            })
            .collect();
        self.sections.push(Section {
            title: title.into(),
            items,
            more,
        });
    }

    /// Drops items, from the longest section first, until the text fits.
    pub fn fit(&mut self) {
        while self.to_text().chars().count() > TARGET_CHARS {
            let Some(longest) = self
                .sections
                .iter_mut()
                .filter(|s| !s.items.is_empty())
                .max_by_key(|s| s.items.len())
            else {
                return;
            };
            longest.items.pop();
            longest.more += 1;
        }
    }

    /// The brief as plain text for a hook's stdout (never starts with `{`).
    pub fn to_text(&self) -> String {
        let mut out = String::from("mnemofs: what you remember for this session");
        if let Some(p) = &self.project {
            out.push_str(&format!(" (project {p})"));
        }
        out.push_str("\n\n");
        if let Some(note) = &self.note {
            out.push_str(&format!("Note: {note}.\n\n"));
        }
        for notice in &self.notices {
            out.push_str(&format!("{}\n", one_line(notice, 300)));
        }
        if !self.notices.is_empty() {
            out.push('\n');
        }
        if self.sections.is_empty() {
            out.push_str("No active tasks, open decisions, sessions or recent memories yet.\n\n");
        }
        for section in &self.sections {
            out.push_str(&format!("## {}\n", section.title));
            for item in &section.items {
                out.push_str(&format!("- {}", one_line(&item.title, 120)));
                if !item.detail.is_empty() {
                    out.push_str(&format!(" ({})", one_line(&item.detail, 40)));
                }
                out.push_str(&format!(" — {}", item.path));
                if let Some(id) = &item.id {
                    out.push_str(&format!(" [id {id}]"));
                }
                out.push('\n');
                for line in &item.lines {
                    out.push_str(&format!("  {}\n", one_line(line, 160)));
                }
            }
            if section.more > 0 {
                out.push_str(&format!("- … and {} more\n", section.more));
            }
            out.push('\n');
        }
        if let Some(topic) = &self.auto_memory {
            out.push_str(&format!(
                "Claude Code's auto-memory (MEMORY.md), last topic: {}\n\n",
                one_line(topic, 160)
            ));
        }
        if let Some(conventions) = &self.conventions {
            out.push_str(&format!(
                "Placement conventions: {}\n\n",
                one_line(conventions, 400)
            ));
        }
        out.push_str(RECALL);
        if let Some(prompt) = &self.recall_prompt {
            out.push_str(&format!("\n{}\n", one_line(prompt, 600)));
        }
        truncate(out, HARD_CAP_CHARS)
    }

    /// The brief as a markdown document (`.mnemofs/brief.md`).
    pub fn to_markdown(&self) -> String {
        let text = self.to_text();
        let body = text
            .split_once("\n\n")
            .map_or(text.as_str(), |(_, rest)| rest);
        let mut out = String::from("# Session brief");
        if let Some(p) = &self.project {
            out.push_str(&format!(" — {p}"));
        }
        out.push_str("\n\n");
        out.push_str(body);
        out
    }
}

/// How to recall more, with and without the mount.
const RECALL: &str = "\
## Recall more
On the mount: `search/<query>/` lists matching memories (words, \"phrases\", \
tag:x, type:task, status:open, created:>2026-01-01), `backlinks/<id or title>/` \
what links to a memory, `by-id/<id>.md` a memory by its id. Without the mount: \
`mnemofs search '<query>'`, or the memory tools (search, read, backlinks). \
Before answering \"what did we decide\" or \"where did we leave off\", search first.
";

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

fn truncate(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let mut cut: String = text.chars().take(max - 2).collect();
    cut.push_str("…\n");
    cut
}
