//! The command-line front end.
//!
//! Two stages, as in ripgrep: clap only checks what the user typed, then
//! `resolve` turns it into absolute paths and validated settings before
//! anything is opened. `anyhow` lives here and in `daemon`, nowhere else.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{CommandFactory, Parser, Subcommand};

use crate::config::Config;
use crate::daemon::{self, MountConfig};
use crate::fs::FsOptions;
use crate::ops::{Request, Response};

mod memories;
mod model;
mod project;
mod remote;
mod sync;

/// An agent's long-term memory, mounted as a directory.
#[derive(Debug, Parser)]
#[command(name = "mnemofs", version, about)]
struct Cli {
    /// Log more: -v for what the daemon and the index do, -vv for details
    /// (MNEMOFS_LOG, as in RUST_LOG, overrides both).
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    #[command(flatten)]
    Memories(memories::MemoryCommand),
    /// Mount a memory store at MOUNTPOINT.
    Mount {
        /// Where the store appears (an existing, empty directory).
        mountpoint: PathBuf,
        /// The backing directory [default: $XDG_DATA_HOME/mnemofs/store,
        /// made on first use].
        #[arg(long)]
        store: Option<PathBuf>,
        /// Make the --store directory if it does not exist.
        #[arg(long)]
        create: bool,
        /// Where derived state lives [default: $XDG_STATE_HOME/mnemofs/<store>].
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Stay in the foreground (for systemd, launchd and tests).
        #[arg(long, short = 'f')]
        foreground: bool,
        /// FUSE worker threads.
        #[arg(long, default_value_t = default_threads())]
        threads: usize,
        /// Let other users use the mount (permissions still apply).
        #[arg(long)]
        allow_other: bool,
        /// Largest file size allowed through the mount (e.g. 64MiB, 1048576).
        #[arg(long, default_value = "64MiB", value_parser = parse_size)]
        max_file_size: u64,
        /// Seconds the kernel may cache attributes and names of real files
        /// (a change behind the mount is invalidated as the watcher sees it;
        /// views keep theirs for at most a second).
        #[arg(long, default_value_t = 10.0)]
        cache_ttl: f64,
        /// `shown` lists the virtual folders (search/, by-tag/, ...) at the
        /// root; by default they are unlisted and resolve by path
        /// [default: config `mount.views`, else hidden].
        #[arg(long, value_enum)]
        views: Option<ViewsMode>,
        /// `off` leaves the guide file (MNEMOFS.md) out of the root, which
        /// then shows exactly the real files [default: config
        /// `mount.guide`, else on].
        #[arg(long, value_enum)]
        guide: Option<GuideMode>,
        /// Configuration file [default: ~/.config/mnemofs/config.yaml].
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        model: ModelArgs,
        /// Serve the files only: no background normalizing or organizing.
        #[arg(long)]
        no_organizer: bool,
        /// Read every file through the daemon, never with FUSE passthrough.
        #[arg(long)]
        no_passthrough: bool,
        /// Serve MCP over HTTP at ADDR too (`127.0.0.1:8765`), every call
        /// with a token from `mnemofs token create` [default: config
        /// `mcp.http`, else not].
        #[arg(long, value_name = "ADDR")]
        mcp_http: Option<std::net::SocketAddr>,
    },
    /// Serve the store without mounting it: the organizer, and the
    /// sockets that commands and agents use (JSON-RPC for agents; its path
    /// is in `mnemofs status --json`, key `socket`). Stays in the
    /// foreground until SIGINT or SIGTERM.
    Serve {
        #[command(flatten)]
        at: StoreArgs,
        /// Make the --store directory if it does not exist.
        #[arg(long)]
        create: bool,
        /// Configuration file [default: ~/.config/mnemofs/config.yaml].
        #[arg(long)]
        config: Option<PathBuf>,
        #[command(flatten)]
        model: ModelArgs,
        /// Serve the files only: no background normalizing or organizing.
        #[arg(long)]
        no_organizer: bool,
        /// Serve MCP over HTTP at ADDR too (`127.0.0.1:8765`), every call
        /// with a token from `mnemofs token create` [default: config
        /// `mcp.http`, else not].
        #[arg(long, value_name = "ADDR")]
        mcp_http: Option<std::net::SocketAddr>,
    },
    /// Search the store's memories (works with or without a running daemon).
    Search {
        /// The query: words, "phrases", tag:x, category:x, type:x, scope:x,
        /// created:>2026-01-01. Several arguments are one query, as if
        /// quoted together (`mnemofs search what does the user drink`).
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        /// Only memories with every one of these tags (comma-separated).
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// What agent:NAME may see: global memories and its own (`global`:
        /// only global ones). For an exact filter, put scope:x in the query.
        #[arg(long)]
        scope: Option<String>,
        /// Only this phase: inbox, organized or archived.
        #[arg(long)]
        phase: Option<String>,
        /// Only this category.
        #[arg(long)]
        category: Option<String>,
        /// Only memories from this source.
        #[arg(long)]
        source: Option<String>,
        /// Only memories created on or after this day (YYYY-MM-DD).
        #[arg(long)]
        from: Option<String>,
        /// Only memories created on or before this day (YYYY-MM-DD).
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
        /// Most results to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Run the organizer now: `--level 1` (the default) sorts the inbox and
    /// archives what expired; `--level 2` also merges duplicates and
    /// resolves links; `--level 3` also extracts reminders. Every inbox
    /// item not open for writing is classified.
    Dream {
        /// How deep to go (1, 2 or 3).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=3))]
        level: u8,
        #[command(flatten)]
        at: StoreArgs,
        /// Configuration file, used when no daemon serves the store
        /// [default: ~/.config/mnemofs/config.yaml].
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print the whole report as JSON instead of its counts.
        #[arg(long)]
        json: bool,
    },
    /// Say who serves the store (a daemon, or this command on the store
    /// itself), and how its index and background tasks are doing.
    Status {
        /// A mountpoint or a store (instead of --store).
        target: Option<PathBuf>,
        #[command(flatten)]
        at: StoreArgs,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the earlier versions of a memory, newest first: what deletes,
    /// overwrites and truncations took away (kept 30 days by default).
    History {
        /// The memory: a path, id or title; for a deleted memory, the
        /// path or id it had. A path on the mount (absolute, or relative to
        /// the working directory) works too, and then finds the store.
        reference: String,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Bring back an earlier version of a memory (the newest kept unless
    /// --version): over its content if it exists, else at the path it had.
    /// What it replaces is kept in turn.
    Restore {
        /// The memory: a path, id or title; for a deleted memory, the
        /// path or id it had. A path on the mount (absolute, or relative to
        /// the working directory) works too, and then finds the store.
        #[arg(required_unless_present = "all_deleted")]
        reference: Option<String>,
        /// The version to bring back, as `mnemofs history` numbers them.
        #[arg(long)]
        version: Option<u64>,
        /// Bring back every memory in the trash, each at the path it had.
        #[arg(long, conflicts_with_all = ["reference", "version"])]
        all_deleted: bool,
        #[command(flatten)]
        at: StoreArgs,
    },
    /// Keep the store in step with a git remote: `sync init REMOTE` once,
    /// then `sync` runs a round (commit local changes, fetch and merge,
    /// apply through the daemon when one serves the store, push).
    /// Conflicts are kept as copies, never as markers.
    Sync(sync::SyncArgs),
    /// List the memories deleted and not back, newest first.
    Trash {
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
        /// Most memories to list.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Write the missing frontmatter (id, created_at, phase, category)
    /// into memories now, notes nobody wrote since the mount included,
    /// each with the id `by-id/` already shows for it. Through the daemon
    /// when one serves the store; every rewrite is kept in the history.
    Normalize {
        /// The memories: paths in the store, ids or titles.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        memories: Vec<String>,
        /// Every memory outside archive/.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        at: StoreArgs,
        /// Configuration file, used when no daemon serves the store
        /// [default: ~/.config/mnemofs/config.yaml].
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Rebuild the search index from the store.
    Reindex {
        #[command(flatten)]
        at: StoreArgs,
    },
    /// Print the session brief (for a SessionStart hook): active tasks,
    /// open decisions, where the last sessions left off, reminders due
    /// soon, recent activity; the open decisions of the secondary stores
    /// and the recall prompt of the project's `mnemofs` settings block
    /// (.claude/settings.local.json, .claude/settings.json, then the
    /// config's `claude:`). Reads the hook's JSON on stdin (optional);
    /// always exits 0.
    Brief {
        #[command(flatten)]
        at: StoreArgs,
        /// The session's directory [default: the hook's `cwd`, else the
        /// current directory].
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// How to print it.
        #[arg(long, value_enum, default_value_t = BriefFormat::Text)]
        format: BriefFormat,
    },
    /// Record what a session is about to forget (for a PreCompact hook):
    /// reads the hook's JSON on stdin, digests the transcript it names and
    /// writes or updates the session's note in `sessions/`. When none can
    /// be written it says why in one line and exits 1, so that the hook's
    /// failure shows instead of the checkpoint being lost in silence.
    Checkpoint {
        #[command(flatten)]
        at: StoreArgs,
    },
    /// Keep a text verbatim as a note (`-` reads stdin): in the project's
    /// remember folder (the `mnemofs` settings block's `rememberFolder`,
    /// default `remember/`), titled by its first line, tagged
    /// manual-capture. Prints its path and id
    Remember {
        /// The text ("-" reads stdin); it may start with "-" or "---".
        #[arg(allow_hyphen_values = true)]
        text: String,
        /// The folder, relative to the store [default: the settings'
        /// rememberFolder, else remember].
        #[arg(long)]
        folder: Option<String>,
        #[command(flatten)]
        at: StoreArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the project's `mnemofs` settings block (what the plugin's
    /// setup skill asked): into .claude/settings.json, or
    /// .claude/settings.local.json with --local. Only the keys given
    /// change; the plugin's tools are added to permissions.allow. Prints
    /// the block as written
    SetupClaude(project::SetupArgs),
    /// Copy a note of the primary store into a team store (the `mnemofs`
    /// settings block's `teamStores`), in its promoteFolder, with
    /// `shared_from` saying where it came from. Without --yes it only says
    /// what it would write
    Share {
        /// The note (by id, path, title or alias).
        reference: String,
        /// The team store (its path, or its folder's name) [default: the
        /// only one configured].
        #[arg(long)]
        to: Option<String>,
        /// Write it (after the user agreed).
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        at: StoreArgs,
    },
    /// Anthropic's `memory` tool (memory_20250818) on stdin and stdout,
    /// for agents that cannot mount: each line a tool_use input such as
    /// {"command": "view", "path": "/memories"}, each answer one line
    /// {"content": ..., "is_error": ...}, as the reference handler gives.
    /// `/memories` is the store.
    Tool {
        #[command(flatten)]
        at: StoreArgs,
        /// Act as this agent (agent:NAME): see global memories and its own,
        /// and give new memories its scope.
        #[arg(long, value_parser = parse_scope)]
        scope: Option<crate::ops::Scope>,
        /// `off` leaves the guide file (MNEMOFS.md) out of `/memories`
        /// when this process serves the store itself [default: config
        /// `mount.guide`, else on].
        #[arg(long, value_enum)]
        guide: Option<GuideMode>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Serve the store over the Model Context Protocol on stdin and stdout
    /// (for Claude Code, Claude Desktop and other MCP clients), or over
    /// HTTP with --http: tools to search, read, write, edit and organize
    /// memories, and Anthropic's `memory` tool. The store is opened on the
    /// first tool call.
    Mcp {
        #[command(flatten)]
        at: StoreArgs,
        #[command(flatten)]
        http: remote::HttpArgs,
        /// Act as this agent (agent:NAME): see global memories and its own,
        /// and give new memories its scope. Over HTTP, each token's scope
        /// does this instead.
        #[arg(long, value_parser = parse_scope, conflicts_with = "http")]
        scope: Option<crate::ops::Scope>,
        /// `off` leaves the guide file (MNEMOFS.md) out of `/memories`
        /// when this process serves the store itself [default: config
        /// `mount.guide`, else on].
        #[arg(long, value_enum)]
        guide: Option<GuideMode>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Check what mounting needs (FUSE, fusermount3, the store, the state
    /// dir, the index, stale mounts, the service unit, the config) and say
    /// how to fix what is wrong. Exits 1 if a check failed.
    Doctor {
        #[command(flatten)]
        at: StoreArgs,
        /// Configuration file [default: ~/.config/mnemofs/config.yaml].
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print a shell completion script, e.g.
    /// `mnemofs completions bash > /etc/bash_completion.d/mnemofs`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g.
    /// `mnemofs man > /usr/local/share/man/man1/mnemofs.1`.
    Man {
        /// Write mnemofs.1 and a page per command (mnemofs-mount.1, ...)
        /// into this directory instead.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Install the service that mounts ~/memories at login (a systemd
    /// user unit; a launchd LaunchAgent on macOS), and enable it.
    Install {
        /// Print the service file instead of writing it.
        #[arg(long)]
        dry_run: bool,
        /// The service manager [default: systemd on Linux, launchd on macOS].
        #[arg(long, value_enum)]
        manager: Option<daemon::install::Manager>,
    },
    /// Stop, disable and remove the service that mounts at login.
    Uninstall {
        /// The service manager [default: systemd on Linux, launchd on macOS].
        #[arg(long, value_enum)]
        manager: Option<daemon::install::Manager>,
    },
    /// Unmount a mnemofs mount.
    Unmount {
        /// The mountpoint.
        mountpoint: PathBuf,
        /// Detach now even if files are open; finish when they close.
        #[arg(long, short = 'z')]
        lazy: bool,
    },
    /// The models search by meaning uses: `mnemofs model pull` downloads
    /// one.
    Model {
        #[command(subcommand)]
        command: model::ModelCommand,
    },
    /// Bearer tokens for MCP over HTTP (`mnemofs mcp --http`): create,
    /// list, revoke.
    Token {
        #[command(subcommand)]
        command: remote::TokenCommand,
    },
}

/// Says `ready` on stdout (whoever started the process waits for it),
/// then waits for SIGINT, SIGTERM or SIGHUP.
fn wait_for_stop(ready: &str) -> anyhow::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])?;
    tracing::info!("{ready}");
    println!("{ready}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let signal = signals.forever().next();
    tracing::info!("stopping on signal {signal:?}");
    Ok(())
}

/// The model of a process that serves the store.
#[derive(Debug, clap::Args)]
struct ModelArgs {
    /// Search by meaning with the sentence-transformers model in this
    /// folder (config.json, model.safetensors, tokenizer.json)
    /// [default: config `search.model`].
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
}

impl ModelArgs {
    /// `settings` with the model this names, if it names one.
    fn apply(&self, settings: &mut Config) -> anyhow::Result<()> {
        if let Some(dir) = &self.model_dir {
            // Absolute: a mount's daemon works from `/`.
            settings.search.model = Some(crate::config::ModelSetting::Folder(absolute(dir)?));
        }
        Ok(())
    }
}

/// Which store a command works on.
#[derive(Debug, Clone, clap::Args)]
struct StoreArgs {
    /// The backing directory, or a mountpoint of it [default: $XDG_DATA_HOME/mnemofs/store].
    #[arg(long)]
    store: Option<PathBuf>,
    /// Where derived state lives when no daemon serves the store
    /// [default: $XDG_STATE_HOME/mnemofs/<store>]. A serving daemon is
    /// found whatever state dir it was started with.
    #[arg(long)]
    state_dir: Option<PathBuf>,
}

impl StoreArgs {
    /// These, with `store` when none was named.
    fn or_store(self, store: Option<PathBuf>) -> StoreArgs {
        StoreArgs {
            store: self.store.or(store),
            state_dir: self.state_dir,
        }
    }

    /// [`target`](Self::target) for a command that writes or serves an
    /// agent: the default store is made on first use (0700), as `mount`
    /// makes it, so that a first `write`, `remember`, `tool` or `mcp` on a
    /// new machine works. A store named that does not exist stays an
    /// error.
    fn target_made(self, positional: Option<PathBuf>) -> anyhow::Result<daemon::Target> {
        let default = positional.is_none() && self.store.is_none();
        let target = self.target(positional)?;
        if default && !target.path.exists() {
            make_store(&target.path)?;
        }
        Ok(target)
    }

    /// What the user named; if nothing, the primary store of the project
    /// in the current folder (its `.claude/` settings block, as the hooks
    /// and the MCP server read it), so that every command in a project
    /// reaches the store its agent uses; else the default store.
    fn target(self, positional: Option<PathBuf>) -> anyhow::Result<daemon::Target> {
        let path = match positional.or(self.store) {
            Some(p) => absolute(&p)?,
            None => project::project_store().unwrap_or_else(daemon::default_store_dir),
        };
        Ok(daemon::Target {
            path,
            state_dir: self.state_dir.as_deref().map(absolute).transpose()?,
        })
    }
}

/// Opens a session on the store (through its daemon if one serves it).
fn session(target: &daemon::Target, config: Option<&Path>) -> anyhow::Result<daemon::Session> {
    daemon::Session::open(target, &settings(config)?)
}

/// The configuration file's settings: the one given, or the default file
/// if it reads (a command without a daemon must not fail on it).
fn settings(config: Option<&Path>) -> anyhow::Result<Config> {
    Ok(match config {
        Some(path) => load_config(Some(path))?,
        // A file `MNEMOFS_CONFIG` names was named on purpose.
        None if std::env::var_os("MNEMOFS_CONFIG").is_some_and(|v| !v.is_empty()) => {
            load_config(None)?
        }
        None => Config::load(None).map(|(c, _)| c).unwrap_or_default(),
    })
}

/// The session of a process that stays while an agent talks to it: it
/// serves the store to the other processes when no daemon does.
fn serving_session(
    target: &daemon::Target,
    guide: Option<GuideMode>,
    model: &ModelArgs,
) -> anyhow::Result<daemon::Session> {
    let mut config = settings(None)?;
    model.apply(&mut config)?;
    let guide = match guide {
        Some(guide) => guide == GuideMode::On,
        None => config.mount.guide.is_on(),
    };
    daemon::Session::open_serving(target, &config, guide)
}

/// The session of a process that stays while an agent talks to it,
/// opened again when the daemon it went through goes away, or when it
/// handed the store it served to a mount: a request not taken is sent
/// once more through the new session (which serves the store itself, or
/// goes through whoever does now), so the agent's call is answered, not
/// lost.
#[derive(Default)]
struct Reopening {
    current: parking_lot::Mutex<Option<std::sync::Arc<daemon::Session>>>,
}

impl Reopening {
    /// Already open on `session`.
    fn new(session: daemon::Session) -> Reopening {
        Reopening {
            current: parking_lot::Mutex::new(Some(std::sync::Arc::new(session))),
        }
    }

    /// Runs `request` on the session, opening it with `open` first when
    /// there is none.
    fn call(
        &self,
        request: Request,
        open: impl Fn() -> anyhow::Result<daemon::Session>,
    ) -> crate::ops::Result<Response> {
        use crate::ops::Error;
        let session = self.session(&open)?;
        let again = session.may_be_replaced().then(|| request.clone());
        let answer = session.call(request);
        match (&answer, again) {
            (Err(Error::Unreached(_)), Some(request)) => {
                self.forget(&session);
                self.session(&open)?.call(request)
            }
            // A daemon that went away (restarted, unmounted) leaves the
            // session useless: the next call opens a new one.
            (Err(Error::Unavailable(_)), Some(_)) if session.through_daemon() => {
                self.forget(&session);
                answer
            }
            _ => answer,
        }
    }

    /// The session, opened now if there is none.
    fn session(
        &self,
        open: &impl Fn() -> anyhow::Result<daemon::Session>,
    ) -> crate::ops::Result<std::sync::Arc<daemon::Session>> {
        let mut current = self.current.lock();
        if let Some(session) = &*current {
            return Ok(std::sync::Arc::clone(session));
        }
        let opened = std::sync::Arc::new(open().map_err(|e| {
            tracing::error!("cannot open the store: {e:#}");
            crate::ops::Error::Unavailable(format!("cannot open the store: {e:#}"))
        })?);
        *current = Some(std::sync::Arc::clone(&opened));
        Ok(opened)
    }

    /// Drops `session`, unless another call has opened a new one since.
    fn forget(&self, session: &std::sync::Arc<daemon::Session>) {
        let mut current = self.current.lock();
        if current
            .as_ref()
            .is_some_and(|c| std::sync::Arc::ptr_eq(c, session))
        {
            *current = None;
        }
    }
}

/// How `mnemofs brief` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BriefFormat {
    /// Plain text, as a hook's stdout.
    Text,
    /// A markdown document.
    Markdown,
    /// One JSON object.
    Json,
}

/// The most of a hook's stdin read (PostCompact's carries Claude Code's
/// whole summary).
const HOOK_INPUT_MAX: u64 = 16 << 20;
/// The largest transcript a checkpoint reads (from its end).
const TRANSCRIPT_MAX: u64 = 64 << 20;
/// How long a brief lets an index without a daemon catch up.
const BRIEF_CATCH_UP: Duration = Duration::from_millis(600);

/// A hook's JSON on stdin, if any: empty, missing or not JSON is `Null`.
fn hook_input() -> serde_json::Value {
    hook_input_said().0
}

/// [`hook_input`], and what was wrong with it when it is not an object:
/// one sentence, for a hook that cannot go on without it.
fn hook_input_said() -> (serde_json::Value, Option<String>) {
    use std::io::{IsTerminal, Read};
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return (
            serde_json::Value::Null,
            Some("no hook input: Claude Code gives it on stdin".into()),
        );
    }
    let mut bytes = Vec::new();
    if let Err(e) = stdin
        .lock()
        .take(HOOK_INPUT_MAX + 1)
        .read_to_end(&mut bytes)
    {
        return (
            serde_json::Value::Null,
            Some(format!("cannot read the hook's input on stdin: {e}")),
        );
    }
    let problem = if bytes.len() as u64 > HOOK_INPUT_MAX {
        format!(
            "the hook's input on stdin is over {} MiB",
            HOOK_INPUT_MAX >> 20
        )
    } else if bytes.iter().all(u8::is_ascii_whitespace) {
        "the hook's input on stdin is empty".into()
    } else {
        match std::str::from_utf8(&bytes) {
            Err(e) => format!("the hook's input on stdin is not UTF-8 ({e})"),
            Ok(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(value) if value.is_object() => return (value, None),
                Ok(_) => "the hook's input on stdin is not a JSON object".into(),
                Err(e) => format!("the hook's input on stdin is not JSON ({e})"),
            },
        }
    };
    (serde_json::Value::Null, Some(problem))
}

fn hook_str(input: &serde_json::Value, key: &str) -> Option<String> {
    input
        .get(key)
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

/// `mnemofs brief`: never fails a session; a problem becomes one line.
fn brief(at: StoreArgs, cwd: Option<PathBuf>, format: BriefFormat) -> anyhow::Result<()> {
    use crate::front::claude_code::{self, ProjectSettings};
    let input = hook_input();
    let cwd = cwd
        .map(|c| c.display().to_string())
        .or_else(|| hook_str(&input, "cwd"))
        .or_else(|| {
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string())
        });
    let config = Config::load(None).map(|(c, _)| c).unwrap_or_default();
    let project = cwd.as_deref().map(Path::new);
    let settings = ProjectSettings::resolve(project, config.claude.as_ref());
    // A store named on the command line (the plugin passes
    // `MNEMOFS_STORE` so) is a configuration too: no nudge then.
    let unconfigured = settings.source.is_none() && at.store.is_none();
    let at = at.or_store(settings.store.clone());
    // Started first: they run while the primary store answers.
    let others = settings.recall_stores();
    let secondaries = SecondaryReads::start(&others, cwd.as_deref());
    let answer = at.target(None).and_then(|target| {
        let session = daemon::Session::open_within(&target, &config, BRIEF_CATCH_UP)?;
        let within = Some(settings.recall_window.as_secs());
        match session.call(Request::Brief {
            cwd: cwd.clone(),
            within,
        })? {
            Response::Brief { mut brief } => {
                brief.notices.extend(session.changed_since_indexed());
                Ok(brief)
            }
            _ => bail!("unexpected answer to brief"),
        }
    });
    match answer {
        Ok(mut brief) => {
            brief.notices.extend(settings.warnings.iter().cloned());
            if unconfigured {
                brief.notices.push(NOT_CONFIGURED.into());
            }
            let listed = others.len();
            if listed > claude_code::MAX_SECONDARY_STORES {
                brief.notices.push(format!(
                    "{listed} secondary and team stores are listed; the first {} are read",
                    claude_code::MAX_SECONDARY_STORES
                ));
            }
            secondaries.finish(&mut brief);
            brief.auto_memory = project.and_then(|p| {
                claude_home().and_then(|home| claude_code::auto_memory_topic(&home, p))
            });
            brief.conventions = settings.placement_conventions.clone();
            brief.recall_prompt = Some(settings.recall_prompt.clone());
            brief.fit();
            match format {
                BriefFormat::Text => print!("{}", brief.to_text()),
                BriefFormat::Markdown => print!("{}", brief.to_markdown()),
                BriefFormat::Json => println!("{}", serde_json::to_string(&brief)?),
            }
        }
        Err(e) => {
            eprintln!("mnemofs: {e:#}");
            // One line still, with the nudge: a first run has no store.
            let nudge = if unconfigured {
                format!(" {NOT_CONFIGURED}")
            } else {
                String::new()
            };
            println!("mnemofs: no memory brief this session ({e}).{nudge}");
        }
    }
    Ok(())
}

/// The brief's first-run nudge, when no settings block exists anywhere.
const NOT_CONFIGURED: &str = "mnemofs is not configured for this project: run /mnemofs:setup \
(about 3 minutes), or copy the plugin's settings.example.json into .claude/settings.json.";

/// How long a brief waits for each secondary store.
const SECONDARY_TIMEOUT: Duration = Duration::from_secs(2);

/// Claude Code's folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn claude_home() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

/// The open decisions of the secondary stores, each read in its own
/// thread, read-only, under [`SECONDARY_TIMEOUT`]. A thread still running
/// at the deadline is left behind: the process ends after the brief.
struct SecondaryReads {
    started: std::time::Instant,
    reads: Vec<(
        String,
        std::sync::mpsc::Receiver<anyhow::Result<Option<crate::ops::BriefSection>>>,
    )>,
}

impl SecondaryReads {
    fn start(stores: &[PathBuf], cwd: Option<&str>) -> SecondaryReads {
        let reads = stores
            .iter()
            .take(crate::front::claude_code::MAX_SECONDARY_STORES)
            .map(|store| {
                let (send, receive) = std::sync::mpsc::channel();
                let target = daemon::Target {
                    path: store.clone(),
                    state_dir: None,
                };
                let cwd = cwd.map(str::to_string);
                let spawned = std::thread::Builder::new()
                    .name("mnemofs-secondary".into())
                    .spawn(move || {
                        let _ = send.send(open_decisions(&target, cwd));
                    });
                if let Err(e) = spawned {
                    let (send, failed) = std::sync::mpsc::channel();
                    let _ = send.send(Err(e.into()));
                    return (store.display().to_string(), failed);
                }
                (store.display().to_string(), receive)
            })
            .collect();
        SecondaryReads {
            started: std::time::Instant::now(),
            reads,
        }
    }

    /// Adds a section per store with open decisions, a notice per store
    /// that could not be read.
    /// A note shared from the primary store (same id) is shown once.
    fn finish(self, brief: &mut crate::ops::Brief) {
        let deadline = self.started + SECONDARY_TIMEOUT;
        let mut seen: std::collections::HashSet<String> = brief
            .sections
            .iter()
            .flat_map(|s| s.items.iter().filter_map(|i| i.id.clone()))
            .collect();
        for (label, receive) in self.reads {
            let wait = deadline.saturating_duration_since(std::time::Instant::now());
            match receive.recv_timeout(wait) {
                Ok(Ok(Some(mut section))) => {
                    section.title = format!("Open decisions in {label} (read-only)");
                    section
                        .items
                        .retain(|i| i.id.as_ref().is_none_or(|id| seen.insert(id.clone())));
                    if !section.items.is_empty() || section.more > 0 {
                        brief.sections.push(section);
                    }
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => brief
                    .notices
                    .push(format!("secondary store {label}: not read ({e:#})")),
                Err(_) => brief.notices.push(format!(
                    "secondary store {label}: not read (no answer within {}s)",
                    SECONDARY_TIMEOUT.as_secs()
                )),
            }
        }
    }
}

/// A store's open decisions, from its brief, read without its lock.
fn open_decisions(
    target: &daemon::Target,
    cwd: Option<String>,
) -> anyhow::Result<Option<crate::ops::BriefSection>> {
    let session = daemon::Session::open_read_only(target)?;
    match session.call(Request::Brief { cwd, within: None })? {
        Response::Brief { brief } => Ok(brief
            .sections
            .into_iter()
            .find(|s| s.title == "Open decisions")),
        _ => bail!("unexpected answer to brief"),
    }
}

/// `mnemofs checkpoint`: never blocks compaction. A checkpoint it cannot
/// write is one line on stderr and exit status 1, which Claude Code shows
/// the user while compaction goes on.
fn checkpoint(at: StoreArgs) -> anyhow::Result<()> {
    use crate::config::CaptureMode;
    use crate::front::claude_summary;
    if claude_summary::is_child() {
        return Ok(());
    }
    let (input, input_problem) = hook_input_said();
    let config = Config::load(None).map(|(c, _)| c).unwrap_or_default();
    let cwd = hook_str(&input, "cwd");
    let settings = crate::front::claude_code::ProjectSettings::resolve(
        cwd.as_deref().map(Path::new),
        config.claude.as_ref(),
    );
    let target = at.or_store(settings.store.clone()).target_made(None);
    let mut transcript = String::new();
    let result = (|| -> anyhow::Result<(String, String)> {
        if let Some(problem) = &input_problem {
            bail!("{problem}");
        }
        let Some(session_id) = hook_str(&input, "session_id") else {
            bail!("no session_id in the hook's input on stdin");
        };
        let summary = hook_str(&input, "compact_summary");
        if let Some(path) = hook_str(&input, "transcript_path") {
            match read_tail(Path::new(&path)) {
                Ok(text) => transcript = text,
                // Claude Code's own summary is worth a note on its own.
                Err(e) if summary.is_some() => {
                    eprintln!("mnemofs: {e:#}; the checkpoint keeps Claude Code's summary alone");
                }
                Err(e) => return Err(e),
            }
        }
        let checkpoint = crate::ops::Checkpoint {
            session_id,
            cwd: cwd.clone(),
            trigger: hook_str(&input, "trigger"),
            summary,
            digest: crate::memory::transcript::digest(&transcript),
            folder: settings.capture_folder.clone(),
            summarized: None,
        };
        let session = daemon::Session::open(target.as_ref().map_err(clone_error)?, &config)?;
        let path = checkpoint_call(&session, checkpoint)?;
        let text = note_text(&session, &path)?;
        Ok((path, text))
    })();
    let (path, text) = result.map_err(|e| anyhow::anyhow!("no checkpoint written: {e:#}"))?;
    println!("mnemofs: session checkpoint in {path}");
    // PostCompact follows a PreCompact that summarized the same transcript.
    let summarize = settings.capture_mode == CaptureMode::Summarized
        && hook_str(&input, "hook_event_name").as_deref() != Some("PostCompact");
    if !summarize {
        report_note_problems(&path, &text, false);
        return Ok(());
    }
    // The store is let go meanwhile: without a daemon, this process holds
    // its lock while a session is open.
    let conversation =
        crate::memory::transcript::conversation(&transcript, claude_summary::CONVERSATION_BYTES);
    if conversation.is_empty() {
        eprintln!(
            "mnemofs: no conversation in the transcript to summarize; {path} stays extractive"
        );
        report_note_problems(&path, &text, false);
        return Ok(());
    }
    let summary = match claude_summary::summarize(&conversation, cwd.as_deref().map(Path::new)) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("mnemofs: no summary for {path}, its extractive note stands: {e}");
            report_note_problems(&path, &text, false);
            return Ok(());
        }
    };
    let enriched = (|| -> anyhow::Result<(String, String)> {
        let checkpoint = crate::ops::Checkpoint {
            session_id: hook_str(&input, "session_id").unwrap_or_default(),
            cwd: cwd.clone(),
            trigger: hook_str(&input, "trigger"),
            folder: settings.capture_folder.clone(),
            summarized: Some(Box::new(summary)),
            ..Default::default()
        };
        let session = daemon::Session::open(target.as_ref().map_err(clone_error)?, &config)?;
        let path = checkpoint_call(&session, checkpoint)?;
        let text = note_text(&session, &path)?;
        Ok((path, text))
    })();
    match enriched {
        Ok((path, text)) => {
            println!("mnemofs: session summary in {path}");
            report_note_problems(&path, &text, true);
        }
        Err(e) => {
            eprintln!(
                "mnemofs: the summary of {path} was not written, its extractive note stands: {e:#}"
            );
            report_note_problems(&path, &text, false);
        }
    }
    Ok(())
}

fn clone_error(e: &anyhow::Error) -> anyhow::Error {
    anyhow::anyhow!("{e:#}")
}

fn checkpoint_call(
    session: &daemon::Session,
    checkpoint: crate::ops::Checkpoint,
) -> anyhow::Result<String> {
    match session.call(Request::Checkpoint(checkpoint))? {
        Response::Memory { path, .. } => Ok(path),
        _ => bail!("unexpected answer to checkpoint"),
    }
}

fn note_text(session: &daemon::Session, path: &str) -> anyhow::Result<String> {
    match session.call(Request::Read { path: path.into() })? {
        Response::Text { text } => Ok(text),
        _ => bail!("unexpected answer to read"),
    }
}

/// One line on stderr when the session note a checkpoint wrote does not fit
/// the session schema (the user's `schemas/` beside the config file
/// included); the note stays as written.
fn report_note_problems(path: &str, text: &str, summarized: bool) {
    if let Some(dir) = Config::default_path().and_then(|p| p.parent().map(|d| d.join("schemas"))) {
        crate::memory::schema::install(crate::config::load_schemas(&dir).0);
    }
    let problems = crate::ops::note_problems(text, summarized);
    if !problems.is_empty() {
        eprintln!(
            "mnemofs: the session note {path} does not fit the session schema: {}",
            problems.join("; ")
        );
    }
}

/// The text of a transcript, at most its last [`TRANSCRIPT_MAX`] bytes
/// (a cut first line is skipped by the digest).
fn read_tail(path: &Path) -> anyhow::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let cannot = || format!("cannot read the transcript {}", path.display());
    // Not blocking on open: a FIFO or a device would wait for a writer.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(cannot)?;
    let metadata = file.metadata().with_context(cannot)?;
    if !metadata.is_file() {
        anyhow::bail!(
            "cannot read the transcript {}: not a regular file",
            path.display()
        );
    }
    let len = metadata.len();
    if len > TRANSCRIPT_MAX {
        file.seek(SeekFrom::Start(len - TRANSCRIPT_MAX))
            .with_context(cannot)?;
    }
    let mut bytes = Vec::new();
    file.take(TRANSCRIPT_MAX)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    // Bytes that are not UTF-8 are dropped, not carried into the note as
    // replacement characters.
    Ok(String::from_utf8_lossy(&bytes).replace('\u{FFFD}', ""))
}

/// Whether the virtual folders appear in the root listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ViewsMode {
    Shown,
    Hidden,
}

/// Whether the root shows the guide file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum GuideMode {
    On,
    Off,
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// Parses `123`, `64K`, `64KiB`, `1M`, `2GiB` (powers of 1024).
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("not a size: {text:?}"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("unknown size unit {other:?} (use K, M or G)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("size too large: {text:?}"))
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("invalid path {}", path.display()))
}

/// Creates the store directory (0700) if needed and returns its real path.
/// The store to mount: `--store`, which must exist unless `create`, or
/// the default store, made on first use.
fn resolve_store(store: Option<PathBuf>, create: bool) -> anyhow::Result<PathBuf> {
    let (store, named) = match store {
        Some(s) => (absolute(&s)?, true),
        None => (daemon::default_store_dir(), false),
    };
    if !store.exists() {
        if named && !create {
            bail!(
                "store {} does not exist; pass --create to make it",
                store.display()
            );
        }
        make_store(&store)?;
    }
    let store = std::fs::canonicalize(&store)
        .with_context(|| format!("cannot open store {}", store.display()))?;
    if !store.is_dir() {
        bail!("store {} is not a directory", store.display());
    }
    Ok(store)
}

/// Makes the store directory `store` (0700), and says so on stderr.
fn make_store(store: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(store)
        .with_context(|| format!("cannot create store {}", store.display()))?;
    eprintln!("mnemofs: created the store {}", store.display());
    Ok(())
}

/// Reads the configuration (the default file if `path` is `None`) and
/// prints its warnings, such as unknown keys.
fn load_config(path: Option<&Path>) -> anyhow::Result<Config> {
    let (config, mut warnings) = Config::load(path)?;
    let schema_dir = path
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .or_else(|| Config::default_path().and_then(|p| p.parent().map(Path::to_path_buf)))
        .map(|dir| dir.join("schemas"));
    if let Some(dir) = schema_dir {
        let (schemas, problems) = crate::config::load_schemas(&dir);
        warnings.extend(problems);
        crate::memory::schema::install(schemas);
    }
    for warning in warnings {
        eprintln!("mnemofs: warning: {warning}");
    }
    Ok(config)
}

fn resolve_store_and_state(
    store: Option<PathBuf>,
    create: bool,
    state_dir: Option<PathBuf>,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let store = resolve_store(store, create)?;
    let state_dir = match state_dir {
        Some(dir) => absolute(&dir)?,
        None => daemon::default_state_dir(&store),
    };
    Ok((store, state_dir))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Mount {
            mountpoint,
            store,
            create,
            state_dir,
            foreground,
            threads,
            allow_other,
            max_file_size,
            cache_ttl,
            views,
            guide,
            config,
            model,
            no_organizer,
            no_passthrough,
            mcp_http,
        } => {
            if !(0.0..=3600.0).contains(&cache_ttl) {
                bail!("--cache-ttl must be between 0 and 3600 seconds");
            }
            if max_file_size == 0 {
                bail!("--max-file-size must be more than 0 (e.g. 64MiB)");
            }
            // Checked before anything is made on disk.
            let mut settings = load_config(config.as_deref())?;
            model.apply(&mut settings)?;
            settings.mcp.http = mcp_http.or(settings.mcp.http);
            let (store, state_dir) = resolve_store_and_state(store, create, state_dir)?;
            let mountpoint = absolute(&mountpoint)?;
            if mountpoint.starts_with(&store) {
                bail!(
                    "mountpoint {} is inside the store {}",
                    mountpoint.display(),
                    store.display()
                );
            }
            let config = MountConfig {
                mountpoint,
                store,
                state_dir,
                foreground,
                threads,
                allow_other,
                fs: FsOptions {
                    max_file_size,
                    ttl: Duration::from_secs_f64(cache_ttl),
                    passthrough: !no_passthrough,
                    // Who checks permissions is decided when mounting.
                    ..FsOptions::default()
                },
                views_hidden: match views {
                    Some(views) => views == ViewsMode::Hidden,
                    None => settings.mount.views == crate::config::ViewsListing::Hidden,
                },
                guide: match guide {
                    Some(guide) => guide == GuideMode::On,
                    None => settings.mount.guide.is_on(),
                },
                config: settings,
                organizer: !no_organizer,
            };
            daemon::mount(&config)
        }
        Command::Serve {
            at,
            create,
            config,
            model,
            no_organizer,
            mcp_http,
        } => {
            let mut settings = load_config(config.as_deref())?;
            model.apply(&mut settings)?;
            settings.mcp.http = mcp_http.or(settings.mcp.http);
            let guide = settings.mount.guide.is_on();
            let (store, state_dir) = resolve_store_and_state(at.store, create, at.state_dir)?;
            daemon::serve::serve(&daemon::serve::ServeConfig {
                store,
                state_dir,
                config: settings,
                organizer: !no_organizer,
                served_by: crate::ops::ServedBy::Daemon,
                guide,
            })
        }
        Command::Doctor { at, config } => {
            // Looks only: unlike the other commands, creates no store.
            let at = at.or_store(project::project_store());
            let store = match at.store {
                Some(s) => absolute(&s)?,
                None => daemon::default_store_dir(),
            };
            let store = std::fs::canonicalize(&store).unwrap_or(store);
            let state_dir = match at.state_dir {
                Some(dir) => absolute(&dir)?,
                None => daemon::default_state_dir(&store),
            };
            let config = config.as_deref().map(absolute).transpose()?;
            daemon::doctor::run(&daemon::doctor::Subject {
                store,
                state_dir,
                config,
            })
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "mnemofs",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Man { dir: None } => clap_mangen::Man::new(Cli::command())
            .render(&mut std::io::stdout())
            .context("cannot print the man page"),
        Command::Man { dir: Some(dir) } => clap_mangen::generate_to(Cli::command(), &dir)
            .with_context(|| format!("cannot write the man pages into {}", dir.display())),
        Command::Install { dry_run, manager } => daemon::install::install(
            manager.unwrap_or_else(daemon::install::Manager::native),
            dry_run,
        ),
        Command::Uninstall { manager } => {
            daemon::install::uninstall(manager.unwrap_or_else(daemon::install::Manager::native))
        }
        Command::Unmount { mountpoint, lazy } => daemon::unmount(&absolute(&mountpoint)?, lazy),
        Command::Search {
            query,
            tags,
            scope,
            phase,
            category,
            source,
            from,
            to,
            at,
            json,
            limit,
        } => {
            let query = crate::ops::SearchFilter {
                tags,
                phase,
                category,
                source,
                kind: None,
                from,
                to,
            }
            .apply(&query.join(" "))?;
            let scope = memories::parse_scope(scope.as_deref())?;
            let session = session(&at.target(None)?, None)?;
            let Response::Hits {
                hits,
                warnings,
                hint,
            } = session.call(memories::scoped(
                scope.as_ref(),
                Request::Search { query, limit },
            ))?
            else {
                bail!("unexpected answer to a search");
            };
            for warning in &warnings {
                eprintln!("warning: {warning}");
            }
            for (rank, hit) in hits.iter().enumerate() {
                if json {
                    let mut line = serde_json::json!({
                        "rank": rank + 1,
                        "path": hit.path,
                        "title": hit.title,
                        "score": hit.score,
                        "id": hit.id,
                        "snippet": hit.snippet,
                        "created": hit.created,
                        "day": hit.day,
                        "matched": hit.matched,
                    });
                    if let Some(bytes) = &hit.path_bytes {
                        // Exact, for a name that is not UTF-8.
                        line["path_bytes"] = serde_json::json!(bytes);
                    }
                    println!("{line}");
                } else {
                    let day = hit.day.as_deref();
                    println!(
                        "{:>3}. {}  ({})  {}{:.2}",
                        rank + 1,
                        hit.title,
                        hit.path,
                        day.map(|d| format!("{d}  ")).unwrap_or_default(),
                        hit.score
                    );
                    if !hit.snippet.is_empty() {
                        println!("     {}", hit.snippet.replace('\n', " "));
                    }
                }
            }
            // With --json too: stdout keeps its JSON lines (none), and
            // stderr says what was searched.
            if hits.is_empty() {
                eprintln!(
                    "{}",
                    hint.unwrap_or_else(|| "no memories matched".to_owned())
                );
            }
            Ok(())
        }
        Command::Dream {
            level,
            at,
            config,
            json,
        } => {
            let progress = crate::progress::Progress::start("opening the store", "items");
            let session = session(&at.target(None)?, config.as_deref())?;
            progress.say(&format!("dreaming (level {level})"));
            let answer = session.call(Request::Dream { level });
            progress.finish();
            let Response::Report { report } = answer? else {
                bail!("unexpected answer to dream");
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("dreamed (level {level}): {}", report.summary());
                for filed in &report.filed {
                    println!("filed {} -> {}: {}", filed.from, filed.to, filed.by);
                }
                for error in &report.errors {
                    eprintln!("mnemofs: {error}");
                }
            }
            for skipped in &report.skipped {
                eprintln!("mnemofs: skipped {}: {}", skipped.path, skipped.reason);
            }
            Ok(())
        }
        Command::Status { target, at, json } => {
            let at = match target {
                Some(_) => at,
                None => at.or_store(project::project_store()),
            };
            let target = at.target(target)?;
            let found = daemon::find(&target)?;
            let session = session(&target, None)?;
            let overview = daemon::status::Overview::gather(&target, &found, &session)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&overview)?);
            } else {
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                print!("{}", overview.render(now_ms));
            }
            Ok(())
        }
        Command::Tool {
            at,
            scope,
            guide,
            model,
        } => {
            let target = at.target_made(None)?;
            // Opened now, so that a store that cannot be opened is said
            // at once, and again when the daemon it went through ends.
            let session = Reopening::new(serving_session(&target, guide, &model)?);
            let (stdin, stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
            let call = crate::front::in_scope(scope, |request| {
                session.call(request, || serving_session(&target, guide, &model))
            });
            crate::front::tool::serve(stdin, stdout, call)
                .context("the memory tool's input or output failed")
        }
        Command::Mcp {
            at,
            http,
            scope,
            guide,
            model,
        } => {
            // Claude Code starts its servers in the project: without
            // --store, the store its settings block names, as for the
            // hooks, so that the tools and the brief share one store.
            let config = Config::load(None).map(|(c, _)| c).unwrap_or_default();
            let project = std::env::current_dir().ok();
            let settings = crate::front::claude_code::ProjectSettings::resolve(
                project.as_deref(),
                config.claude.as_ref(),
            );
            for warning in &settings.warnings {
                tracing::warn!("{warning}");
            }
            let target = at.or_store(settings.store).target_made(None)?;
            let remember_folder = settings.remember_folder;
            let recall_window = settings.recall_window.as_secs();
            let project = project.map(|p| p.display().to_string());
            let tokens_at = match http.http {
                Some(_) => Some(target.state_dir()?),
                None => None,
            };
            // Opened on the first call; a call runs without holding the
            // lock, so calls over HTTP run side by side.
            let session = Reopening::default();
            let call = move |request| {
                // `remember` without a folder: the project's.
                let request = match request {
                    Request::Remember { text, folder: None } => Request::Remember {
                        text,
                        folder: Some(remember_folder.clone()),
                    },
                    // The brief of the project it was started in, as the
                    // session-start hook gives it.
                    Request::Brief { cwd: None, within } => Request::Brief {
                        cwd: project.clone(),
                        within: within.or(Some(recall_window)),
                    },
                    other => other,
                };
                session.call(request, || serving_session(&target, guide, &model))
            };
            let call = crate::front::in_scope(scope, call);
            match (http.http, tokens_at) {
                (Some(addr), Some(state_dir)) => {
                    let server = crate::front::http::HttpServer::start(
                        http.options(addr, &state_dir, &config.mcp),
                        std::sync::Arc::new(call),
                    )?;
                    wait_for_stop(&format!("serving MCP on {}", server.url()))
                }
                _ => crate::front::mcp::serve(call)
                    .context("the MCP server's input or output failed"),
            }
        }
        Command::Token { command } => remote::run(command),
        Command::History {
            reference,
            at,
            json,
        } => {
            let (target, references) = versions_of(&reference, at)?;
            let session = session(&target, None)?;
            let Response::Versions { versions } = first_found(&references, |reference| {
                session.call(Request::History { reference })
            })?
            else {
                bail!("unexpected answer to history");
            };
            print_versions(&versions, json)?;
            if versions.is_empty() && !json {
                eprintln!("no earlier version kept");
            }
            Ok(())
        }
        Command::Trash { at, json, limit } => {
            let session = session(&at.target(None)?, None)?;
            let Response::Versions { versions } = session.call(Request::Trash { limit })? else {
                bail!("unexpected answer to trash");
            };
            print_versions(&versions, json)?;
            if versions.is_empty() && !json {
                eprintln!("the trash is empty");
            }
            Ok(())
        }
        Command::Restore {
            reference,
            version,
            all_deleted,
            at,
        } => {
            let (session, answer) = match reference {
                Some(reference) if !all_deleted => {
                    let (target, references) = versions_of(&reference, at)?;
                    let session = session(&target, None)?;
                    let answer = first_found(&references, |reference| {
                        session.call(Request::Restore { reference, version })
                    });
                    (session, answer)
                }
                _ => {
                    let session = session(&at.target(None)?, None)?;
                    let answer = session.call(Request::RestoreTrash);
                    (session, answer)
                }
            };
            let Response::Restored { restored } = answer? else {
                bail!("unexpected answer to restore");
            };
            for r in &restored {
                println!("restored version {} at {}", r.version, r.path);
            }
            if all_deleted
                && let Response::Versions { versions } =
                    session.call(Request::Trash { limit: usize::MAX })?
                && !versions.is_empty()
            {
                eprintln!(
                    "{} left in the trash (their paths are taken or cannot be written): \
                     `mnemofs trash` lists them",
                    versions.len()
                );
            } else if restored.is_empty() {
                eprintln!("nothing to restore");
            }
            Ok(())
        }
        Command::Brief { .. } if crate::front::claude_summary::is_child() => Ok(()),
        Command::Brief { at, cwd, format } => brief(at, cwd, format),
        Command::Checkpoint { at } => checkpoint(at),
        Command::Remember {
            text,
            folder,
            at,
            json,
        } => project::remember(text, folder, at, json),
        Command::SetupClaude(args) => project::setup_claude(args),
        Command::Share {
            reference,
            to,
            yes,
            at,
        } => project::share(reference, to, yes, at),
        Command::Reindex { at } => reindex(at),
        Command::Sync(args) => sync::run(args),
        Command::Memories(command) => memories::run(command),
        Command::Model { command } => model::run(command),
        Command::Normalize {
            memories,
            all,
            at,
            config,
        } => {
            let session = session(&at.target(None)?, config.as_deref())?;
            let answer = session.call(Request::Normalize {
                paths: memories,
                all,
            });
            let Response::Report { report } = answer? else {
                bail!("unexpected answer to normalize");
            };
            let noun = if report.normalized == 1 {
                "memory"
            } else {
                "memories"
            };
            println!("normalized {} {noun}", report.normalized);
            if report.malformed > 0 {
                eprintln!(
                    "mnemofs: {} left alone: malformed frontmatter (see .mnemofs/lint on the mount)",
                    report.malformed
                );
            }
            for skipped in &report.skipped {
                eprintln!("mnemofs: skipped {}: {}", skipped.path, skipped.reason);
            }
            for error in &report.errors {
                eprintln!("mnemofs: {error}");
            }
            if !report.errors.is_empty() {
                bail!("{} memories could not be normalized", report.errors.len());
            }
            Ok(())
        }
    }
}

/// The store `history` and `restore` work on, and the ways `reference`
/// may name a memory there, best first. A reference that is a path on a
/// mount of the store or in the store itself (absolute, or relative to the
/// working directory, as `rm` took it) first becomes that path within the
/// store, even when the file is gone; and without `--store`, a mount above
/// it is the store's. Then the reference as typed: a path in the store, an
/// id or a title.
fn versions_of(reference: &str, at: StoreArgs) -> anyhow::Result<(daemon::Target, Vec<String>)> {
    let typed = Path::new(reference);
    let on_disk = std::path::absolute(typed)
        .ok()
        .map(|p| lexically_normal(&p));
    let mount_above = || {
        let path = on_disk.as_deref()?;
        path.ancestors()
            .skip(1)
            .find(|dir| daemon::registry::by_mountpoint(dir).is_some())
            .map(Path::to_path_buf)
    };
    let target = match (&at.store, mount_above()) {
        (None, Some(mountpoint)) => daemon::Target {
            path: mountpoint,
            state_dir: at.state_dir.as_deref().map(absolute).transpose()?,
        },
        _ => at.target(None)?,
    };
    let found = daemon::find(&target)?;
    let roots = [
        found.daemon.as_ref().and_then(|d| d.mountpoint.clone()),
        Some(found.store.clone()),
    ];
    let within = on_disk.as_deref().and_then(|path| {
        roots
            .iter()
            .flatten()
            .find_map(|root| path.strip_prefix(root).ok())
            .filter(|rest| !rest.as_os_str().is_empty())
            .map(|rest| rest.to_string_lossy().into_owned())
    });
    let mut references: Vec<String> = within.into_iter().collect();
    if !references.iter().any(|r| r == reference) {
        references.push(reference.to_string());
    }
    Ok((target, references))
}

/// `path` without `.` and with each `..` taking the component before it,
/// as the kernel would for folders that are not symlinks (those of a
/// deleted file may be gone, so nothing is resolved on disk).
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Asks with each reference in turn until one names something.
fn first_found(
    references: &[String],
    mut ask: impl FnMut(String) -> crate::ops::Result<Response>,
) -> crate::ops::Result<Response> {
    let mut answer = Err(crate::ops::Error::NotFound {
        path: references.first().cloned().unwrap_or_default(),
    });
    for reference in references {
        answer = ask(reference.clone());
        match &answer {
            Err(e) if e.errno() == libc::ENOENT => continue,
            _ => break,
        }
    }
    answer
}

/// Prints kept versions as a table, or as JSON lines.
fn print_versions(versions: &[crate::ops::VersionInfo], json: bool) -> anyhow::Result<()> {
    for v in versions {
        if json {
            println!("{}", serde_json::to_string(v)?);
        } else {
            let title = v.title.as_deref().unwrap_or("");
            println!(
                "{:>6}  {}  {:<11}  {}  ({} bytes)  {title}",
                v.version, v.at, v.why, v.path, v.size
            );
        }
    }
    Ok(())
}

fn parse_scope(text: &str) -> Result<crate::ops::Scope, String> {
    crate::ops::Scope::parse(text).map_err(|e| e.to_string())
}

/// `mnemofs reindex`, with a progress bar on a terminal: the rebuild's
/// progress is read from `status` on a second connection (or, without a
/// daemon, from the same operations on another thread).
fn reindex(at: StoreArgs) -> anyhow::Result<()> {
    let target = at.target(None)?;
    let mut progress = crate::progress::Progress::start("opening the index", "files");
    let session = session(&target, None)?;
    progress.say("reindexing");
    let poller = if progress.is_drawn() && session.through_daemon() {
        Some(self::session(&target, None)?)
    } else {
        None
    };
    let finished = std::sync::atomic::AtomicBool::new(false);
    let answer = std::thread::scope(|scope| {
        if progress.is_drawn() {
            let poller = poller.as_ref().unwrap_or(&session);
            let (progress, finished) = (&mut progress, &finished);
            scope.spawn(move || {
                while !finished.load(std::sync::atomic::Ordering::Acquire) {
                    if let Ok(Response::Status { status }) = poller.call(Request::Status)
                        && let Some(r) = status.rebuilding
                    {
                        progress.set(r.done, r.total);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
        }
        let answer = session.call(Request::Reindex);
        finished.store(true, std::sync::atomic::Ordering::Release);
        answer
    });
    progress.finish();
    let Response::Reindexed { files } = answer? else {
        bail!("unexpected answer to reindex");
    };
    let by = if session.through_daemon() {
        "the daemon"
    } else {
        "this command"
    };
    println!("indexed {files} files ({by})");
    // Their vectors are made again in the background, at low priority.
    if let Ok(Response::Status { status }) = session.call(Request::Status)
        && let Some(meaning) = status.meaning
        && meaning.backlog > 0
    {
        if session.through_daemon() {
            println!(
                "{} memories are being embedded again by {} (`mnemofs status` shows the backlog; \
                 until then they are found by their words)",
                meaning.backlog, meaning.model
            );
        } else {
            println!(
                "{} memories wait for their vectors from {}: a daemon embeds them (a mount, \
                 `mnemofs serve` or `mnemofs mcp`), each search here the newest few; until then \
                 they are found by their words",
                meaning.backlog, meaning.model
            );
        }
    }
    Ok(())
}

/// The log filter: `MNEMOFS_LOG` if set, else by `-v`. A daemon logs its
/// own INFO lines (to its log file, or the journal under systemd); a
/// command run at a terminal shows only warnings unless asked. rmcp's own
/// lines (an MCP client that hung up mid-call, a tool's error answer,
/// which the client is told) show only with -vv; tantivy's warnings only
/// in a daemon's log or with -v.
fn log_filter(daemon: bool, verbose: u8) -> tracing_subscriber::EnvFilter {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("MNEMOFS_LOG") {
        return filter;
    }
    let level = match (daemon, verbose) {
        (_, 2..) => "debug",
        (true, _) | (false, 1) => "info",
        (false, 0) => "warn",
    };
    let rmcp = if verbose >= 2 { "debug" } else { "off" };
    // tantivy's warnings (a merge that lost a race with a commit and is
    // dropped, harmlessly) say nothing a person at a terminal can act on.
    let tantivy = if daemon || verbose >= 1 {
        "warn"
    } else {
        "error"
    };
    tracing_subscriber::EnvFilter::new(format!(
        "warn,fuser=error,rmcp={rmcp},tantivy={tantivy},mnemofs={level}"
    ))
}

/// Sends logs to stderr: the terminal, the daemon's log file (its stderr
/// is the file), or the journal under systemd, which stamps lines itself.
/// A command that prints and ends (`terse`) says its warnings as
/// sentences, without a time or a module's name.
fn init_logs(daemon: bool, terse: bool, verbose: u8) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(log_filter(daemon, verbose))
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let result = if terse && verbose == 0 && std::env::var_os("MNEMOFS_LOG").is_none() {
        builder.without_time().with_target(false).try_init()
    } else if std::env::var_os("JOURNAL_STREAM").is_some() {
        builder.without_time().try_init()
    } else {
        builder.try_init()
    };
    if let Err(e) = result {
        eprintln!("mnemofs: cannot set up logging: {e}");
    }
}

/// Whether `command` only prints and ends (`search`, `brief`, `status`,
/// ...), as opposed to serving or talking a protocol over stdio.
fn prints_and_ends(command: &Command) -> bool {
    !matches!(
        command,
        Command::Mount { .. }
            | Command::Serve { .. }
            | Command::Mcp { .. }
            | Command::Tool { .. }
            | Command::Memories(memories::MemoryCommand::Agent {
                list_tools: false,
                ..
            })
    )
}

/// Entry point: parses arguments, runs, prints the whole error chain.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if prints_and_ends(&cli.command) {
        // A reader that stops early (`mnemofs brief | head`) ends the
        // command quietly, as it ends `cat`, instead of making its next
        // print panic on the broken pipe.
        // SAFETY: restoring a signal's default action has no preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    init_logs(
        matches!(cli.command, Command::Mount { .. } | Command::Serve { .. }),
        prints_and_ends(&cli.command),
        cli.verbose,
    );
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mnemofs: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
    }
}
