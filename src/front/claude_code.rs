//! What the session brief reads of Claude Code's own files: the `mnemofs`
//! settings block and the last topic of Claude Code's auto-memory.
//!
//! The block is looked for in one order: the project's
//! `.claude/settings.local.json`, then its `.claude/settings.json`, then
//! the `claude:` section of the user's mnemofs config. The first place
//! that has one gives the whole block; keys it lacks take their defaults,
//! never a value from a later place. One rule, so a local block cannot
//! half-inherit a committed one by surprise.
//!
//! Subtleties:
//! - A settings file that is not JSON, or whose `mnemofs` is not an object
//!   or holds a known key of the wrong type, is a warning and is skipped:
//!   the brief must print whatever the user's files hold. A key this
//!   version does not know is a warning too, but the block is used.
//! - Paths are `~/`-expanded; a relative one is taken from the project
//!   (the session's directory), where the settings file lives.
//! - Claude Code names a project's folder under `~/.claude/projects/` by
//!   the project's path with every character that is not an ASCII letter
//!   or digit turned into `-` (`/home/me/app` is `-home-me-app`), cut at
//!   200 characters with a hash of the path added.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::ClaudeSettings;

/// The recall prompt when the block names none.
pub const DEFAULT_RECALL_PROMPT: &str = "Before answering a question about earlier work \
(what was decided, where things were left off, what the user prefers), search mnemofs first \
(the mnemofs search tool, or `mnemofs search '<query>'`) and cite the ids you use.";

/// The most secondary stores a brief reads.
pub const MAX_SECONDARY_STORES: usize = 6;

/// The `mnemofs` block, as written in a Claude Code settings file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Block {
    store: Option<PathBuf>,
    secondary_stores: Vec<PathBuf>,
    recall_prompt: Option<String>,
}

/// The settings a brief uses, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BriefSettings {
    /// Where the block came from; `None` when there is none anywhere.
    pub source: Option<String>,
    /// The primary store.
    pub store: Option<PathBuf>,
    /// Stores read for recall only.
    pub secondary_stores: Vec<PathBuf>,
    /// The line that ends the brief.
    pub recall_prompt: String,
    /// Settings files that could not be read, one line each.
    pub warnings: Vec<String>,
}

impl BriefSettings {
    /// Resolves the block for a session in `project`, with the mnemofs
    /// config's `claude:` section as the last place looked at.
    pub fn resolve(project: Option<&Path>, config: Option<&ClaudeSettings>) -> BriefSettings {
        let mut warnings = Vec::new();
        let mut found: Option<(String, Block)> = None;
        if let Some(project) = project {
            for name in ["settings.local.json", "settings.json"] {
                let path = project.join(".claude").join(name);
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                match block_of(&text) {
                    Ok(Some((block, unknown))) => {
                        if !unknown.is_empty() {
                            warnings.push(format!(
                                "warning: {}: unknown mnemofs keys ignored: {}",
                                path.display(),
                                unknown.join(", ")
                            ));
                        }
                        found = Some((path.display().to_string(), block));
                        break;
                    }
                    Ok(None) => {}
                    Err(e) => warnings.push(format!(
                        "warning: {} is not usable ({e}); its mnemofs settings are skipped",
                        path.display()
                    )),
                }
            }
        }
        if found.is_none()
            && let Some(c) = config
        {
            found = Some((
                "the mnemofs config (claude:)".into(),
                Block {
                    store: c.store.clone(),
                    secondary_stores: c.secondary_stores.clone(),
                    recall_prompt: c.recall_prompt.clone(),
                },
            ));
        }
        let (source, block) = match found {
            Some((source, block)) => (Some(source), block),
            None => (None, Block::default()),
        };
        let place = |p: &Path| resolve_path(p, project);
        BriefSettings {
            source,
            store: block.store.as_deref().map(place),
            secondary_stores: block.secondary_stores.iter().map(|p| place(p)).collect(),
            recall_prompt: block
                .recall_prompt
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| DEFAULT_RECALL_PROMPT.to_string()),
            warnings,
        }
    }
}

/// The `mnemofs` block of a settings file's text, if it has one, and the
/// keys it has that this version does not know (kept out, not fatal: a
/// newer plugin may write more).
fn block_of(text: &str) -> Result<Option<(Block, Vec<String>)>, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let block = match value.get("mnemofs") {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::Object(block)) => block,
        Some(_) => return Err("mnemofs: not an object".into()),
    };
    let mut known = serde_json::Map::new();
    let mut unknown = Vec::new();
    for (key, value) in block {
        if KNOWN_KEYS.contains(&key.as_str()) {
            known.insert(key.clone(), value.clone());
        } else {
            unknown.push(key.clone());
        }
    }
    Block::deserialize(serde_json::Value::Object(known))
        .map(|b| Some((b, unknown)))
        .map_err(|e| format!("mnemofs: {e}"))
}

/// The keys of [`Block`], as written in JSON.
const KNOWN_KEYS: [&str; 3] = ["store", "secondaryStores", "recallPrompt"];

fn resolve_path(path: &Path, project: Option<&Path>) -> PathBuf {
    if let Ok(rest) = path.strip_prefix("~")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    match project {
        Some(project) if path.is_relative() => project.join(path),
        _ => path.to_path_buf(),
    }
}

/// Claude Code's name for a project's folder under `~/.claude/projects/`.
/// A name longer than [`PROJECT_KEY_MAX`] is cut there and given a hash
/// of the path, which [`auto_memory_topic`] matches by its prefix.
pub fn project_key(project: &Path) -> String {
    project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Where Claude Code cuts a project folder's name.
const PROJECT_KEY_MAX: usize = 200;

/// The last topic of Claude Code's auto-memory for `project`: the last
/// heading of its `MEMORY.md`, else its last non-empty line.
pub fn auto_memory_topic(claude_home: &Path, project: &Path) -> Option<String> {
    let projects = claude_home.join("projects");
    let key = project_key(project);
    let folder = if key.len() <= PROJECT_KEY_MAX {
        projects.join(key)
    } else {
        let prefix = format!("{}-", &key[..PROJECT_KEY_MAX]);
        std::fs::read_dir(&projects)
            .ok()?
            .filter_map(Result::ok)
            .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))?
            .path()
    };
    let text = std::fs::read_to_string(folder.join("memory").join("MEMORY.md")).ok()?;
    last_topic(&text)
}

fn last_topic(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .rev()
        .find(|l| l.starts_with('#'))
        .or(lines.last())?;
    let topic = line.trim_start_matches('#').trim();
    (!topic.is_empty()).then(|| topic.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(project: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(project.join(".claude").join(name), text).unwrap();
    }

    fn config_block() -> ClaudeSettings {
        ClaudeSettings {
            store: Some("/from/config".into()),
            secondary_stores: vec!["/team".into()],
            recall_prompt: Some("config prompt".into()),
        }
    }

    #[test]
    fn local_settings_win_whole_over_shared_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        write(
            project,
            "settings.local.json",
            r#"{"mnemofs": {"store": "/local"}}"#,
        );
        write(
            project,
            "settings.json",
            r#"{"mnemofs": {"store": "/shared", "secondaryStores": ["/s"], "recallPrompt": "shared"}}"#,
        );
        let s = BriefSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, Some(PathBuf::from("/local")));
        // The whole block wins: nothing comes from the later places.
        assert!(s.secondary_stores.is_empty());
        assert_eq!(s.recall_prompt, DEFAULT_RECALL_PROMPT);
        assert!(s.source.unwrap().ends_with("settings.local.json"));
    }

    #[test]
    fn shared_settings_then_config() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        write(project, "settings.local.json", r#"{"permissions": {}}"#);
        write(
            project,
            "settings.json",
            r#"{"mnemofs": {"secondaryStores": ["team", "~/x"], "recallPrompt": "ask me"}}"#,
        );
        let s = BriefSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, None);
        assert_eq!(s.secondary_stores[0], project.join("team"));
        assert!(!s.secondary_stores[1].starts_with("~"));
        assert_eq!(s.recall_prompt, "ask me");

        std::fs::remove_file(project.join(".claude/settings.json")).unwrap();
        let s = BriefSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, Some(PathBuf::from("/from/config")));
        assert_eq!(s.recall_prompt, "config prompt");
        assert!(s.source.is_some());
    }

    #[test]
    fn no_block_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let s = BriefSettings::resolve(Some(dir.path()), None);
        assert_eq!(s.source, None);
        assert_eq!(s.recall_prompt, DEFAULT_RECALL_PROMPT);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn malformed_settings_are_one_warning_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        write(project, "settings.local.json", "{ not json");
        write(project, "settings.json", r#"{"mnemofs": {"store": 1}}"#);
        let s = BriefSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("settings.local.json"));
        assert!(s.warnings[1].contains("settings.json"));
        assert!(s.warnings.iter().all(|w| !w.contains('\n')));
        assert_eq!(s.store, Some(PathBuf::from("/from/config")));

        // An unknown key is a warning; the block is still used.
        write(
            project,
            "settings.json",
            r#"{"mnemofs": {"store": "/shared", "teamStores": []}}"#,
        );
        let s = BriefSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, Some(PathBuf::from("/shared")));
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings[1].contains("teamStores"), "{:?}", s.warnings);
    }

    #[test]
    fn project_keys_as_claude_code_names_them() {
        assert_eq!(project_key(Path::new("/home/me/app")), "-home-me-app");
        assert_eq!(project_key(Path::new("/tmp/a.b_c")), "-tmp-a-b-c");
    }

    #[test]
    fn auto_memory_of_a_long_path_is_found_by_its_prefix() {
        let home = tempfile::tempdir().unwrap();
        let project = PathBuf::from(format!("/{}", "deep/".repeat(60)));
        let key = project_key(&project);
        let folder = home
            .path()
            .join("projects")
            .join(format!("{}-1x2y3z", &key[..PROJECT_KEY_MAX]))
            .join("memory");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("MEMORY.md"), "## Long paths\n").unwrap();
        assert_eq!(
            auto_memory_topic(home.path(), &project).as_deref(),
            Some("Long paths")
        );
    }

    #[test]
    fn auto_memory_topic_is_the_last_heading_or_line() {
        assert_eq!(
            last_topic("# Memory\n\n## Build\n- cargo\n## Deploy steps\n- ssh\n").as_deref(),
            Some("Deploy steps")
        );
        assert_eq!(last_topic("- one\n- two\n\n").as_deref(), Some("- two"));
        assert_eq!(last_topic("\n\n"), None);
    }
}
