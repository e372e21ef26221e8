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
use std::time::Duration;

use serde::Deserialize;

use crate::config::{CaptureMode, ClaudeSettings};
use crate::store::StorePath;

/// The recall prompt when the block names none.
pub const DEFAULT_RECALL_PROMPT: &str = "Before answering a question about earlier work \
(what was decided, where things were left off, what the user prefers), search mnemofs first \
(the mnemofs search tool, or `mnemofs search '<query>'`) and cite the ids you use.";

/// The most other stores (secondary and team) a brief reads.
pub const MAX_SECONDARY_STORES: usize = 6;

/// Defaults of the block's folders and timeframe.
const CAPTURE_FOLDER: &str = "sessions";
const PROMOTE_FOLDER: &str = "shared";
const RECALL_TIMEFRAME: &str = "3d";

/// A store notes can be shared into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamTarget {
    /// The store, as resolved.
    pub path: PathBuf,
    /// The folder shared notes go to.
    pub promote_folder: String,
}

/// The project's settings, resolved: every key has its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectSettings {
    /// Where the block came from; `None` when there is none anywhere.
    pub source: Option<String>,
    /// The primary store.
    pub store: Option<PathBuf>,
    /// Stores read for recall only.
    pub secondary_stores: Vec<PathBuf>,
    /// Stores notes are shared into, also read for recall.
    pub team_stores: Vec<TeamTarget>,
    /// Where checkpoints write session notes.
    pub capture_folder: String,
    /// Where `remember` writes.
    pub remember_folder: String,
    /// How far back recent sessions and activity reach, as written.
    pub recall_timeframe: String,
    /// [`ProjectSettings::recall_timeframe`] read.
    pub recall_window: Duration,
    /// The line that ends the brief.
    pub recall_prompt: String,
    /// How a checkpoint writes its note.
    pub capture_mode: CaptureMode,
    /// The project's placement conventions, on one line.
    pub placement_conventions: Option<String>,
    /// Settings that could not be used, one line each.
    pub warnings: Vec<String>,
}

impl ProjectSettings {
    /// Resolves the block for a session in `project`, with the mnemofs
    /// config's `claude:` section as the last place looked at.
    pub fn resolve(project: Option<&Path>, config: Option<&ClaudeSettings>) -> ProjectSettings {
        let mut warnings = Vec::new();
        let mut found: Option<(String, ClaudeSettings)> = None;
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
            found = Some(("the mnemofs config (claude:)".into(), c.clone()));
        }
        let (source, block) = match found {
            Some((source, block)) => (Some(source), block),
            None => (None, ClaudeSettings::default()),
        };
        let place = |p: &Path| resolve_path(p, project);
        let mut folder = |key: &str, value: Option<String>, default: &str| -> String {
            match value.map(|v| v.trim().trim_matches('/').to_string()) {
                None => default.to_string(),
                Some(v) if StorePath::new(&v).is_some_and(|p| !p.is_root()) => v,
                Some(v) => {
                    warnings.push(format!(
                        "warning: mnemofs {key} {v:?} is not a folder inside the store; {default:?} is used"
                    ));
                    default.to_string()
                }
            }
        };
        let capture_folder = folder("captureFolder", block.capture_folder, CAPTURE_FOLDER);
        let remember_folder = folder(
            "rememberFolder",
            block.remember_folder,
            crate::ops::REMEMBER_FOLDER,
        );
        let team_stores = block
            .team_stores
            .into_iter()
            .map(|(path, team)| TeamTarget {
                path: place(&path),
                promote_folder: folder("promoteFolder", team.promote_folder, PROMOTE_FOLDER),
            })
            .collect();
        let written = block
            .recall_timeframe
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let (recall_timeframe, recall_window) = match written
            .as_deref()
            .map(|t| (t, crate::memory::duration::parse_duration(t)))
        {
            None => (RECALL_TIMEFRAME.to_string(), default_window()),
            Some((t, Ok(d))) if !d.is_zero() => (t.to_string(), d),
            Some((t, result)) => {
                let why = result
                    .err()
                    .map_or("it is zero".to_string(), |e| e.to_string());
                warnings.push(format!(
                    "warning: mnemofs recallTimeframe {t:?} is not usable ({why}); {RECALL_TIMEFRAME} is used"
                ));
                (RECALL_TIMEFRAME.to_string(), default_window())
            }
        };
        ProjectSettings {
            source,
            store: block.store.as_deref().map(place),
            secondary_stores: block.secondary_stores.iter().map(|p| place(p)).collect(),
            team_stores,
            capture_folder,
            remember_folder,
            recall_timeframe,
            recall_window,
            recall_prompt: block
                .recall_prompt
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| DEFAULT_RECALL_PROMPT.to_string()),
            capture_mode: block.capture_mode.unwrap_or_default(),
            placement_conventions: block
                .placement_conventions
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|c| !c.is_empty()),
            warnings,
        }
    }

    /// The stores read for recall besides the primary: the secondary
    /// stores, then the team stores, each once.
    pub fn recall_stores(&self) -> Vec<PathBuf> {
        let mut stores: Vec<PathBuf> = Vec::new();
        let teams = self.team_stores.iter().map(|t| &t.path);
        for store in self.secondary_stores.iter().chain(teams) {
            if !stores.contains(store) {
                stores.push(store.clone());
            }
        }
        stores
    }

    /// The team store `name` designates: its path as written in the
    /// settings or resolved, or the only one when `name` is `None`.
    pub fn team_store(&self, name: Option<&str>) -> Result<&TeamTarget, String> {
        let listed = || {
            self.team_stores
                .iter()
                .map(|t| t.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match name {
            None => match self.team_stores.as_slice() {
                [only] => Ok(only),
                [] => Err(
                    "no team stores are configured (`teamStores` in the mnemofs settings block)"
                        .into(),
                ),
                _ => Err(format!(
                    "several team stores are configured; name one of: {}",
                    listed()
                )),
            },
            Some(name) => {
                let wanted = Path::new(name);
                self.team_stores
                    .iter()
                    .find(|t| {
                        t.path == wanted
                            || t.path.ends_with(wanted)
                            || t.path.file_name() == Some(wanted.as_os_str())
                    })
                    .ok_or_else(|| format!("{name} is not a team store (configured: {})", listed()))
            }
        }
    }
}

fn default_window() -> Duration {
    Duration::from_secs(3 * 86_400)
}

/// The `mnemofs` block of a settings file's text, if it has one, and the
/// keys it has that this version does not know (kept out, not fatal: a
/// newer plugin may write more).
fn block_of(text: &str) -> Result<Option<(ClaudeSettings, Vec<String>)>, String> {
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
    ClaudeSettings::deserialize(serde_json::Value::Object(known))
        .map(|b| Some((b, unknown)))
        .map_err(|e| format!("mnemofs: {e}"))
}

/// The block's keys, as Claude Code's settings files write them.
const KNOWN_KEYS: [&str; 9] = [
    "store",
    "secondaryStores",
    "teamStores",
    "captureFolder",
    "rememberFolder",
    "recallTimeframe",
    "recallPrompt",
    "captureMode",
    "placementConventions",
];

fn resolve_path(path: &Path, project: Option<&Path>) -> PathBuf {
    let full = if let Ok(rest) = path.strip_prefix("~")
        && let Some(home) = std::env::var_os("HOME")
    {
        PathBuf::from(home).join(rest)
    } else {
        match project {
            Some(project) if path.is_relative() => project.join(path),
            _ => path.to_path_buf(),
        }
    };
    lexical(&full)
}

/// `path` without `.` and with each `..` taking its parent away, as the
/// user means `../team` (the store may not exist yet to canonicalize).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(part);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The plugin's MCP tools, as a `permissions.allow` entry.
pub const TOOLS_PERMISSION: &str = "mcp__plugin_mnemofs_mnemofs";
/// The plugin's output style, as `outputStyle` names it.
pub const OUTPUT_STYLE: &str = "mnemofs:mnemofs";

/// What a setup writes into a project's settings file: the keys of the
/// `mnemofs` block it sets (the others stay as they are), and whether the
/// output style is turned on.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Keys of the block and their values, camelCase as in the file.
    pub block: serde_json::Map<String, serde_json::Value>,
    /// Turn the plugin's output style on.
    pub output_style: bool,
}

/// Writes `setup` into the settings file at `file` (created if missing):
/// the `mnemofs` block's keys, the plugin's tools in `permissions.allow`,
/// and the output style if asked. Every other setting stays. A file that
/// is not a JSON object is left untouched and refused. Returns the block
/// as written.
pub fn write_setup(file: &Path, setup: &Setup) -> Result<serde_json::Value, String> {
    use serde_json::{Map, Value};
    let mut root = match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Map::new(),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(root)) => root,
            Ok(_) => {
                return Err(format!(
                    "{} is not a JSON object; it was left as it is",
                    file.display()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "{} is not JSON ({e}); it was left as it is",
                    file.display()
                ));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let block = root
        .entry("mnemofs")
        .or_insert_with(|| Value::Object(Map::new()));
    if !block.is_object() {
        *block = Value::Object(Map::new());
    }
    if let Value::Object(block) = block {
        for (key, value) in &setup.block {
            block.insert(key.clone(), value.clone());
        }
    }
    let written = root["mnemofs"].clone();
    // The block must read back: a bad value is refused before writing.
    if let Err(e) = block_of(&serde_json::json!({ "mnemofs": written }).to_string()) {
        return Err(format!("the settings were not written: {e}"));
    }
    let permissions = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(permissions) = permissions {
        let allow = permissions
            .entry("allow")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(allow) = allow
            && !allow.iter().any(|a| a.as_str() == Some(TOOLS_PERMISSION))
        {
            allow.push(Value::String(TOOLS_PERMISSION.into()));
        }
    }
    if setup.output_style {
        root.insert("outputStyle".into(), Value::String(OUTPUT_STYLE.into()));
    }
    let text =
        serde_json::to_string_pretty(&Value::Object(root)).map_err(|e| e.to_string())? + "\n";
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let temp = file.with_extension("json.mnemofs-tmp");
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            format!("cannot write {}: {e}", file.display())
        })?;
    Ok(written)
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
            ..ClaudeSettings::default()
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
        let s = ProjectSettings::resolve(Some(project), Some(&config_block()));
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
        let s = ProjectSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, None);
        assert_eq!(s.secondary_stores[0], project.join("team"));
        assert_eq!(lexical(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert!(!s.secondary_stores[1].starts_with("~"));
        assert_eq!(s.recall_prompt, "ask me");

        std::fs::remove_file(project.join(".claude/settings.json")).unwrap();
        let s = ProjectSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, Some(PathBuf::from("/from/config")));
        assert_eq!(s.recall_prompt, "config prompt");
        assert!(s.source.is_some());
    }

    #[test]
    fn no_block_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let s = ProjectSettings::resolve(Some(dir.path()), None);
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
        let s = ProjectSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("settings.local.json"));
        assert!(s.warnings[1].contains("settings.json"));
        assert!(s.warnings.iter().all(|w| !w.contains('\n')));
        assert_eq!(s.store, Some(PathBuf::from("/from/config")));

        // An unknown key is a warning; the block is still used.
        write(
            project,
            "settings.json",
            r#"{"mnemofs": {"store": "/shared", "autoWrite": true}}"#,
        );
        let s = ProjectSettings::resolve(Some(project), Some(&config_block()));
        assert_eq!(s.store, Some(PathBuf::from("/shared")));
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings[1].contains("autoWrite"), "{:?}", s.warnings);
    }

    #[test]
    fn every_key_of_the_block_is_read_and_bad_values_fall_back() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        write(
            project,
            "settings.json",
            r#"{"mnemofs": {
                "store": "mem", "secondaryStores": ["a", "team"],
                "teamStores": {"team": {"promoteFolder": "from-alice/"}, "/other": {}},
                "captureFolder": "notes/sessions", "rememberFolder": "../out",
                "recallTimeframe": "2w", "captureMode": "summarized",
                "placementConventions": "decisions in decisions/,\n kebab-case names"
            }}"#,
        );
        let s = ProjectSettings::resolve(Some(project), None);
        assert_eq!(s.capture_folder, "notes/sessions");
        assert_eq!(s.remember_folder, "remember");
        assert_eq!(s.recall_timeframe, "2w");
        assert_eq!(s.recall_window, Duration::from_secs(14 * 86_400));
        assert_eq!(s.capture_mode, CaptureMode::Summarized);
        assert_eq!(
            s.placement_conventions.as_deref(),
            Some("decisions in decisions/, kebab-case names")
        );
        assert_eq!(s.team_stores.len(), 2);
        let team = s.team_store(Some("team")).unwrap();
        assert_eq!(team.path, project.join("team"));
        assert_eq!(team.promote_folder, "from-alice");
        assert_eq!(
            s.team_store(Some("/other")).unwrap().promote_folder,
            "shared"
        );
        assert!(s.team_store(None).is_err());
        assert!(s.team_store(Some("nowhere")).is_err());
        // The secondary and team stores are read once each.
        assert_eq!(
            s.recall_stores(),
            vec![
                project.join("a"),
                project.join("team"),
                PathBuf::from("/other")
            ]
        );
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("rememberFolder"));

        write(
            project,
            "settings.json",
            r#"{"mnemofs": {"recallTimeframe": "soon"}}"#,
        );
        let s = ProjectSettings::resolve(Some(project), None);
        assert_eq!(s.recall_window, Duration::from_secs(3 * 86_400));
        assert_eq!(s.capture_mode, CaptureMode::Extractive);
        assert!(
            s.warnings[0].contains("recallTimeframe"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn a_setup_merges_into_the_settings_and_refuses_what_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            r#"{"model": "opus", "permissions": {"allow": ["Bash(ls)"]}, "mnemofs": {"recallPrompt": "kept"}}"#,
        )
        .unwrap();
        let mut setup = Setup {
            output_style: true,
            ..Setup::default()
        };
        setup.block.insert("store".into(), "~/memories".into());
        setup
            .block
            .insert("captureMode".into(), "summarized".into());
        write_setup(&file, &setup).unwrap();
        // Twice: the permission is not added again.
        write_setup(&file, &setup).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(
            v["permissions"]["allow"],
            serde_json::json!(["Bash(ls)", TOOLS_PERMISSION])
        );
        assert_eq!(v["outputStyle"], OUTPUT_STYLE);
        assert_eq!(v["mnemofs"]["recallPrompt"], "kept");
        assert_eq!(v["mnemofs"]["captureMode"], "summarized");

        let mut bad = Setup::default();
        bad.block.insert("captureMode".into(), "loud".into());
        let before = std::fs::read_to_string(&file).unwrap();
        assert!(write_setup(&file, &bad).is_err());
        std::fs::write(&file, "{ broken").unwrap();
        let e = write_setup(&file, &setup).unwrap_err();
        assert!(e.contains("left as it is"), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ broken");
        assert!(before.contains("opus"));
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
