//! The project's deliberate captures: `remember` (a text kept verbatim in
//! the primary store) and `share` (a note copied into a team store).
//!
//! Both read the project's `mnemofs` settings block from the current
//! directory, as the plugin's hooks and MCP server do: the primary store,
//! `rememberFolder`, and the `teamStores` with their `promoteFolder`.
//!
//! Sharing is the only write into another store, and never happens by
//! itself: without `--yes`, `share` says what it would write and writes
//! nothing, so an agent has to show the user and ask first.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{StoreArgs, absolute, session};
use crate::config::Config;
use crate::front::claude_code::ProjectSettings;
use crate::ops::{Request, Response};

/// The project's settings, from the current directory.
fn project_settings() -> ProjectSettings {
    let config = Config::load(None).map(|(c, _)| c).unwrap_or_default();
    let project = std::env::current_dir().ok();
    let settings = ProjectSettings::resolve(project.as_deref(), config.claude.as_ref());
    for warning in &settings.warnings {
        eprintln!("mnemofs: {warning}");
    }
    settings
}

/// The primary store the settings block of the current directory's
/// `.claude/` names, if any: what `status` and `doctor` look at when no
/// store is named, as the hooks and the MCP server do there. (The
/// config's `claude:` section is not looked at: outside a project these
/// commands keep to the default store.)
pub(super) fn project_store() -> Option<PathBuf> {
    let project = std::env::current_dir().ok();
    ProjectSettings::resolve(project.as_deref(), None).store
}

/// `mnemofs remember`: the text (`-` reads stdin) into the remember folder.
pub(super) fn remember(
    text: String,
    folder: Option<String>,
    at: StoreArgs,
    json: bool,
) -> anyhow::Result<()> {
    let text = if text == "-" {
        crate::front::input::read_text(
            std::io::stdin(),
            crate::ops::DEFAULT_MAX_FILE_SIZE,
            "the text on stdin",
        )?
    } else {
        text
    };
    let settings = project_settings();
    let folder = folder.unwrap_or(settings.remember_folder);
    let session = session(&at.or_store(settings.store).target_made(None)?, None)?;
    let Response::Memory { path, id } = session.call(Request::Remember {
        text,
        folder: Some(folder),
    })?
    else {
        bail!("unexpected answer to remember");
    };
    super::memories::settle(&session, [&path]);
    if json {
        println!("{}", serde_json::json!({"id": id, "path": path}));
    } else {
        println!("remembered {path}{}", id_suffix(id.as_deref()));
    }
    Ok(())
}

fn id_suffix(id: Option<&str>) -> String {
    id.map(|id| format!(" [id {id}]")).unwrap_or_default()
}

/// `mnemofs share`: a note of the primary store into a team store's
/// promote folder, with `shared_from` saying where it came from.
pub(super) fn share(
    reference: String,
    to: Option<String>,
    yes: bool,
    at: StoreArgs,
) -> anyhow::Result<()> {
    let settings = project_settings();
    let team = settings
        .team_store(to.as_deref())
        .map_err(anyhow::Error::msg)?
        .clone();
    let primary = at.or_store(settings.store).target(None)?;
    if !team.path.is_dir() {
        bail!("the team store {} does not exist", team.path.display());
    }
    if same_dir(&team.path, &primary.path) {
        bail!(
            "the team store {} is the primary store: nothing to share",
            team.path.display()
        );
    }
    let from = session(&primary, None)?;
    let record = match from.call(Request::Record {
        reference: reference.clone(),
    }) {
        Ok(Response::Record { record }) => record,
        Ok(_) => bail!("unexpected answer to read"),
        Err(e) if e.errno() == libc::ENOENT => {
            bail!("no memory is named {reference:?} (by id, path, title or alias)")
        }
        Err(e) => return Err(e.into()),
    };
    let Response::Text { text } = from.call(Request::Read {
        path: record.path.clone(),
    })?
    else {
        bail!("unexpected answer to read");
    };
    let origin = format!(
        "{}/{}",
        primary.path.display(),
        record.id.as_deref().unwrap_or(&record.path)
    );
    let stamp = crate::memory::format_timestamp(crate::ops::now_unix());
    let fields = [("shared_from", origin.clone()), ("shared_at", stamp)];
    let copy = crate::memory::set_fields(&text, &fields)
        .map_err(|e| anyhow::anyhow!("cannot mark {} as shared: {e}", record.path))?
        .unwrap_or(text);
    let name = Path::new(&record.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "shared.md".into());
    let what = format!(
        "{:?}{} from {}/{}",
        record.title,
        record
            .kind
            .as_deref()
            .map(|k| format!(" (type {k})"))
            .unwrap_or_default(),
        primary.path.display(),
        record.path
    );
    if !yes {
        println!(
            "would share {what} into {}/{}/{name}\nnothing is written without --yes: confirm with the user, then run again with --yes",
            team.path.display(),
            team.promote_folder
        );
        return Ok(());
    }
    let to = session(
        &crate::daemon::Target {
            path: team.path.clone(),
            state_dir: None,
        },
        None,
    )?;
    let path = free_name(&to, &team.promote_folder, &name, &origin)?;
    to.call(Request::Create {
        path: path.clone(),
        content: copy,
        overwrite: true,
    })?;
    super::memories::settle(&to, [&path]);
    println!("shared {what} into {}/{path}", team.path.display());
    Ok(())
}

/// Where the copy goes: `<folder>/<name>`, or the same name with `-2`,
/// `-3`, ... when a note of another origin has it. A note this one was
/// shared as before is replaced: sharing again brings the copy up to date.
fn free_name(
    to: &crate::daemon::Session,
    folder: &str,
    name: &str,
    origin: &str,
) -> anyhow::Result<String> {
    let (stem, extension) = name.rsplit_once('.').unwrap_or((name, "md"));
    for n in 1..=100 {
        let path = if n == 1 {
            format!("{folder}/{name}")
        } else {
            format!("{folder}/{stem}-{n}.{extension}")
        };
        match to.call(Request::Read { path: path.clone() }) {
            Err(e) if e.errno() == libc::ENOENT => return Ok(path),
            Err(e) => return Err(e.into()),
            Ok(Response::Text { text }) if shared_from(&text).as_deref() == Some(origin) => {
                return Ok(path);
            }
            Ok(_) => {}
        }
    }
    bail!("{folder}/ already holds 100 notes named like {name}")
}

/// The `shared_from:` of a note's frontmatter.
fn shared_from(text: &str) -> Option<String> {
    let memory = crate::memory::parse("", text);
    memory
        .frontmatter
        .extra
        .get("shared_from")
        .and_then(|v| v.as_str().map(str::to_string))
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    canonical(a) == canonical(b)
}

/// What `mnemofs setup-claude` sets.
#[derive(Debug, clap::Args)]
pub(super) struct SetupArgs {
    /// The project [default: the current directory].
    #[arg(long)]
    pub(super) project: Option<PathBuf>,
    /// Write .claude/settings.local.json (kept out of git) instead.
    #[arg(long)]
    pub(super) local: bool,
    /// The primary store (where captures go).
    #[arg(long = "primary")]
    pub(super) primary: Option<String>,
    /// A store read for recall, read-only (repeatable).
    #[arg(long = "secondary")]
    pub(super) secondary: Vec<String>,
    /// A team store to share into, as PATH or PATH=PROMOTE_FOLDER
    /// (repeatable).
    #[arg(long = "team")]
    pub(super) team: Vec<String>,
    /// extractive or summarized.
    #[arg(long)]
    pub(super) capture_mode: Option<String>,
    /// Where checkpoints write session notes.
    #[arg(long)]
    pub(super) capture_folder: Option<String>,
    /// Where `remember` writes.
    #[arg(long)]
    pub(super) remember_folder: Option<String>,
    /// How far back the brief's recent sessions and activity reach
    /// (e.g. 3d).
    #[arg(long)]
    pub(super) recall_timeframe: Option<String>,
    /// The project's placement conventions, one line.
    #[arg(long)]
    pub(super) conventions: Option<String>,
    /// Turn on the plugin's output style.
    #[arg(long)]
    pub(super) output_style: bool,
}

/// `mnemofs setup-claude`: the block into the project's settings file.
pub(super) fn setup_claude(args: SetupArgs) -> anyhow::Result<()> {
    let SetupArgs {
        project,
        local,
        primary,
        secondary,
        team,
        capture_mode,
        capture_folder,
        remember_folder,
        recall_timeframe,
        conventions,
        output_style,
    } = args;
    use serde_json::Value;
    let mut setup = crate::front::claude_code::Setup {
        output_style,
        ..Default::default()
    };
    let mut set = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            setup.block.insert(key.into(), Value::String(v));
        }
    };
    set("store", primary);
    set("captureMode", capture_mode);
    set("captureFolder", capture_folder);
    set("rememberFolder", remember_folder);
    set("recallTimeframe", recall_timeframe);
    set("placementConventions", conventions);
    if !secondary.is_empty() {
        setup
            .block
            .insert("secondaryStores".into(), secondary.into());
    }
    if !team.is_empty() {
        let teams: serde_json::Map<String, Value> = team
            .iter()
            .map(|t| match t.rsplit_once('=') {
                Some((path, folder)) => (
                    path.to_string(),
                    serde_json::json!({"promoteFolder": folder}),
                ),
                None => (t.clone(), serde_json::json!({})),
            })
            .collect();
        setup
            .block
            .insert("teamStores".into(), Value::Object(teams));
    }
    let project = match project {
        Some(p) => absolute(&p)?,
        None => std::env::current_dir()?,
    };
    let name = if local {
        "settings.local.json"
    } else {
        "settings.json"
    };
    let file = project.join(".claude").join(name);
    let block =
        crate::front::claude_code::write_setup(&file, &setup).map_err(anyhow::Error::msg)?;
    println!("wrote {}:", file.display());
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({ "mnemofs": block }))?
    );
    let config = Config::load(None).map(|(c, _)| c).unwrap_or_default();
    let settings =
        crate::front::claude_code::ProjectSettings::resolve(Some(&project), config.claude.as_ref());
    for warning in &settings.warnings {
        println!("{warning}");
    }
    // The primary store is where captures go from the next session on: a
    // new one is made now, not at the first brief (which only reads).
    if let Some(store) = settings.store.as_deref().filter(|s| !s.exists()) {
        // Private, as every store mnemofs makes.
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(store)
            .with_context(|| format!("cannot create the store {}", store.display()))?;
        println!("created the store {}", store.display());
    }
    if local && !project.join(".claude/settings.json").exists() {
        println!(
            "settings.local.json is yours alone; commit a .claude/settings.json to share the block"
        );
    }
    Ok(())
}
