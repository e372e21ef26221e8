//! The user's config file: `~/.config/mnemofs/config.yaml` or `--config`.
//!
//! Every field has the default a new user should get, so a missing file,
//! an empty file and a file naming one key all work. [`Config::load`] is
//! the only function here that touches the disk (the file itself, and the
//! zoneinfo for a named time zone); everything else is pure and tested
//! from strings with [`Config::from_yaml`].
//!
//! Subtleties a newcomer trips on:
//! - Unknown keys are returned as warnings naming the full key path
//!   (`unknown key lifecycle.expire_aftr (did you mean
//!   lifecycle.inbox_ttl?)`), never ignored silently and never fatal: a
//!   typo must not stop a mount, and must not go unnoticed either. The set
//!   of known keys is derived from what [`Config`] serializes, so it cannot
//!   drift from the struct.
//! - Values that are present but wrong (`interval: soon`) are errors:
//!   silently running with a default the user tried to change is worse
//!   than refusing to start.
//! - A section written with no body (`organizer:`) means "all defaults".
//! - `0` disables `lifecycle.inbox_ttl`, `lifecycle.upgrade_access_count`
//!   and `dream.idle_after`; zero for those would otherwise mean
//!   "immediately", which nobody wants.
//! - Classification rules extend the built-in ones; they cannot remove
//!   them.
//! - `timezone:` is read in two steps: [`Config::from_yaml`] only checks
//!   the spelling (and resolves a fixed offset, which needs no data), and
//!   [`Config::load`] looks a named or local zone up with jiff. jiff reads
//!   the system's zoneinfo (`$TZDIR`, else `/usr/share/zoneinfo`) and falls
//!   back to the tz database compiled into the binary on a machine that
//!   has none. A zone that cannot be found is a warning, and reminders
//!   then use UTC.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::tz::{Offset, TimeZone};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_yaml::Value;

use crate::embed::hub::ModelName;
use crate::memory::Category;
use crate::memory::classify::Rule;
use crate::memory::duration::{HumanDuration, serde_duration};

/// Why the config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists (or was named explicitly) but could not be read.
    #[error("cannot read config {path}: {error}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The file is not valid YAML, or a value has the wrong type or form.
    /// The message names the key and the line.
    #[error("invalid config{origin}: {message}")]
    Parse {
        /// ` <path>` when the text came from a file, else empty.
        origin: String,
        /// What serde_yaml (or our parsers) said.
        message: String,
    },
    /// A value parsed but is not allowed.
    #[error("invalid config value {key}: {reason}")]
    Invalid {
        /// The key path, e.g. `organizer.interval`.
        key: String,
        /// Why it is not allowed.
        reason: String,
    },
}

/// Everything configurable about the daemon's background work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// The inbox organizer.
    #[serde(deserialize_with = "null_as_default")]
    pub organizer: OrganizerConfig,
    /// Expiry, decay and upgrade thresholds.
    #[serde(deserialize_with = "null_as_default")]
    pub lifecycle: LifecycleConfig,
    /// Scheduled dream runs.
    #[serde(deserialize_with = "null_as_default")]
    pub dream: DreamConfig,
    /// Desktop notifications for due reminders.
    #[serde(deserialize_with = "null_as_default")]
    pub notifications: NotificationsConfig,
    /// The zone reminders are read in.
    pub timezone: TimeZoneSetting,
    /// What the normalizer writes into files.
    #[serde(deserialize_with = "null_as_default")]
    pub frontmatter: FrontmatterConfig,
    /// Extra classification rules.
    #[serde(deserialize_with = "null_as_default")]
    pub classification: ClassificationConfig,
    /// How long and how much of what deletes and overwrites take away is
    /// kept.
    #[serde(deserialize_with = "null_as_default")]
    pub history: HistoryConfig,
    /// What the mount root shows (`mnemofs mount --views`, `--guide` win).
    #[serde(deserialize_with = "null_as_default")]
    pub mount: MountSettings,
    /// How search ranks.
    #[serde(deserialize_with = "null_as_default")]
    pub search: SearchSettings,
    /// MCP over HTTP from a daemon (`serve`, `mount`).
    #[serde(deserialize_with = "null_as_default")]
    pub mcp: McpSettings,
    /// A daemon's sync rounds with the store's git remote.
    #[serde(deserialize_with = "null_as_default")]
    pub sync: SyncSettings,
    /// The Claude Code plugin's settings when the project's own
    /// `.claude/settings*.json` have no `mnemofs` block.
    pub claude: Option<ClaudeSettings>,
    /// [`Config::timezone`] resolved: a fixed offset as soon as it is
    /// parsed, a named or local zone by [`Config::load`]. UTC until then,
    /// and when the zone cannot be loaded.
    #[serde(skip)]
    pub resolved_timezone: TimeZone,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            organizer: OrganizerConfig::default(),
            lifecycle: LifecycleConfig::default(),
            dream: DreamConfig::default(),
            notifications: NotificationsConfig::default(),
            timezone: TimeZoneSetting::default(),
            frontmatter: FrontmatterConfig::default(),
            classification: ClassificationConfig::default(),
            history: HistoryConfig::default(),
            mount: MountSettings::default(),
            search: SearchSettings::default(),
            mcp: McpSettings::default(),
            sync: SyncSettings::default(),
            claude: None,
            resolved_timezone: TimeZone::UTC,
        }
    }
}

/// `organizer:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrganizerConfig {
    /// How often the organizer runs (at least 1s).
    #[serde(with = "serde_duration")]
    pub interval: Duration,
    /// How long an inbox item must be untouched before it is moved, so a
    /// file still being written is not moved under its writer.
    #[serde(with = "serde_duration")]
    pub quiet_period: Duration,
    /// How long a moved item's old path keeps resolving (unlisted).
    #[serde(with = "serde_duration")]
    pub grace_period: Duration,
}

impl Default for OrganizerConfig {
    fn default() -> Self {
        OrganizerConfig {
            interval: Duration::from_secs(5 * 60),
            quiet_period: Duration::from_secs(30),
            grace_period: Duration::from_secs(3600),
        }
    }
}

/// How long an agent's capture waits in the inbox unless
/// `lifecycle.inbox_ttl` says otherwise: a week.
pub const DEFAULT_INBOX_TTL: Duration = Duration::from_secs(7 * 86_400);

/// `lifecycle:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LifecycleConfig {
    /// How long an agent's capture waits in the inbox: `write` dates its
    /// `expires_at` this far ahead, and once that date has passed and
    /// nobody touched it this long, it goes to `archive/expired/`. What a
    /// person wrote into the inbox carries no such date. `0` never
    /// expires anything.
    #[serde(with = "serde_duration")]
    pub inbox_ttl: Duration,
    /// Moving unused organized memories to `archive/decayed/`.
    #[serde(deserialize_with = "null_as_default")]
    pub decay: DecayConfig,
    /// An inbox item read this many times is organized at once; `0`
    /// disables the upgrade.
    pub upgrade_access_count: u32,
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        LifecycleConfig {
            inbox_ttl: DEFAULT_INBOX_TTL,
            decay: DecayConfig::default(),
            upgrade_access_count: 3,
        }
    }
}

/// `lifecycle.decay:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DecayConfig {
    /// Off by default: archiving memories someone merely has not read in a
    /// while is a choice the user makes.
    pub enabled: bool,
    /// How long unused before a memory decays.
    #[serde(with = "serde_duration")]
    pub after: Duration,
}

impl Default for DecayConfig {
    fn default() -> Self {
        DecayConfig {
            enabled: false,
            after: Duration::from_secs(90 * 86_400),
        }
    }
}

/// `dream:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DreamConfig {
    /// After this long without writes, a deeper dream runs; `0` disables
    /// idle dreams.
    #[serde(with = "serde_duration")]
    pub idle_after: Duration,
    /// The level of the idle dream (1 to 3).
    pub idle_level: u8,
}

impl Default for DreamConfig {
    fn default() -> Self {
        DreamConfig {
            idle_after: Duration::from_secs(10 * 60),
            idle_level: 3,
        }
    }
}

/// `notifications:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct NotificationsConfig {
    /// How due reminders reach the desktop.
    pub method: NotificationMethod,
}

/// How to send a desktop notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotificationMethod {
    /// `osascript` on macOS, `notify-send` elsewhere, if installed.
    #[default]
    Auto,
    /// `notify-send` (libnotify).
    NotifySend,
    /// `osascript -e 'display notification ...'`.
    Osascript,
    /// Only `.mnemofs/pending.md`.
    None,
}

/// `frontmatter:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FrontmatterConfig {
    /// Write `access_count`, `content_hash`, `version` and `updated_at`
    /// into files instead of keeping them in state and xattrs. Off by
    /// default: rewriting files on every read fights editors and git.
    pub write_counters: bool,
}

/// `classification:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ClassificationConfig {
    /// Rules added to the built-in ones.
    #[serde(deserialize_with = "null_as_default")]
    pub rules: Vec<Rule>,
    /// Where the organizer files an inbox note that nothing places. Unset
    /// (the default): the note stays in the inbox.
    #[serde(deserialize_with = "category_or_none")]
    pub default_category: Option<Category>,
}

/// A category by name, or nothing.
fn category_or_none<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Category>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|name| name.parse().map_err(serde::de::Error::custom))
        .transpose()
}

/// `search:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchSettings {
    /// A sentence-transformers model: search then fuses meaning with
    /// words. None: search is by words.
    pub model: Option<ModelSetting>,
    /// How a question is embedded: `exact` (the default) as memories are,
    /// or `fast`, with 8-bit weights on this CPU's integer dot products
    /// (about 4x faster; recall@5 within 0.005 on LoCoMo).
    pub questions: crate::embed::Questions,
}

impl SearchSettings {
    /// The model's folder: a folder as written, `~/` expanded; a model on
    /// the hub, where `mnemofs model pull` puts it.
    pub fn model_dir(&self) -> Option<PathBuf> {
        match self.model.as_ref()? {
            ModelSetting::Folder(path) => match path.strip_prefix("~") {
                Ok(rest) => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(rest)),
                Err(_) => Some(path.clone()),
            },
            ModelSetting::Hub(name) => Some(name.folder()),
        }
    }

    /// The model's name, when it is one on the hub.
    pub fn model_name(&self) -> Option<&ModelName> {
        match self.model.as_ref()? {
            ModelSetting::Hub(name) => Some(name),
            ModelSetting::Folder(_) => None,
        }
    }
}

/// `search.model`: a model's folder, or its name on the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSetting {
    /// A folder with `config.json`, `model.safetensors` and
    /// `tokenizer.json`: absolute, or starting with `~/`, `./` or `../`.
    Folder(PathBuf),
    /// `owner/name` on the Hugging Face hub, downloaded into the cache by
    /// `mnemofs model pull`.
    Hub(ModelName),
}

impl ModelSetting {
    /// Reads a folder (a path that says it is one) or a hub name. Anything
    /// else is an error: a bare `minilm` could be either.
    pub fn parse(text: &str) -> Result<ModelSetting, String> {
        let is_path = text.starts_with('/')
            || ["~", ".", ".."].contains(&text)
            || ["~/", "./", "../"].iter().any(|p| text.starts_with(p));
        if is_path {
            return Ok(ModelSetting::Folder(PathBuf::from(text)));
        }
        ModelName::parse(text).map(ModelSetting::Hub).map_err(|_| {
            format!(
                "`{text}` is neither a model's folder (absolute, or starting with ~/, ./ or ../) \
                 nor a model's name on the hub such as {}",
                crate::embed::hub::DEFAULT_MODEL
            )
        })
    }
}

impl fmt::Display for ModelSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSetting::Folder(path) => write!(f, "{}", path.display()),
            ModelSetting::Hub(name) => write!(f, "{name}"),
        }
    }
}

impl Serialize for ModelSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ModelSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A visitor, so that an error is raised at the value and names
        // its key.
        struct ModelVisitor;

        impl serde::de::Visitor<'_> for ModelVisitor {
            type Value = ModelSetting;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a model's folder or its name on the hub")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ModelSetting, E> {
                ModelSetting::parse(text).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(ModelVisitor)
    }
}

/// `claude:` settings: the Claude Code plugin's `mnemofs` block, for
/// projects whose `.claude/settings*.json` have none. The same type reads
/// that block: each key also answers to its camelCase name, as Claude
/// Code's settings files write keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ClaudeSettings {
    /// The primary store (the brief's and the checkpoint's).
    pub store: Option<PathBuf>,
    /// Stores whose open decisions the brief shows, read only.
    #[serde(alias = "secondaryStores")]
    pub secondary_stores: Vec<PathBuf>,
    /// Stores `mnemofs share` copies notes into, by path; read for recall
    /// too.
    #[serde(alias = "teamStores")]
    pub team_stores: std::collections::BTreeMap<PathBuf, TeamStore>,
    /// Where checkpoints write session notes (default `sessions`).
    #[serde(alias = "captureFolder")]
    pub capture_folder: Option<String>,
    /// Where `remember` writes (default `remember`).
    #[serde(alias = "rememberFolder")]
    pub remember_folder: Option<String>,
    /// How far back the brief's recent sessions and activity reach
    /// (default `3d`).
    #[serde(alias = "recallTimeframe")]
    pub recall_timeframe: Option<String>,
    /// The line that ends the brief.
    #[serde(alias = "recallPrompt")]
    pub recall_prompt: Option<String>,
    /// How a checkpoint writes its note.
    #[serde(alias = "captureMode")]
    pub capture_mode: Option<CaptureMode>,
    /// Where and how notes are written in this project, in a line: the
    /// brief shows it, the output style follows it.
    #[serde(alias = "placementConventions")]
    pub placement_conventions: Option<String>,
}

/// A team store in the `claude:` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TeamStore {
    /// The folder shared notes go to (default `shared`).
    #[serde(alias = "promoteFolder")]
    pub promote_folder: Option<String>,
}

/// How a checkpoint writes its session note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaptureMode {
    /// What the transcript says, digested by mnemofs (the default).
    #[default]
    Extractive,
    /// The extractive note first, then enriched with a summary Claude Code
    /// writes (`claude -p`).
    Summarized,
}

/// `mcp:` settings: MCP over streamable HTTP, for agents that are not
/// local processes. Every call needs a bearer token (`mnemofs token
/// create`) and runs in its scope.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct McpSettings {
    /// Where a daemon (`serve`, `mount`) serves MCP over HTTP
    /// (`127.0.0.1:8765`); unset, it does not. `--mcp-http` wins.
    pub http: Option<std::net::SocketAddr>,
    /// Browser origins allowed to call (`https://app.example.com:443`);
    /// a request with any other Origin header is refused.
    pub allow_origins: Vec<String>,
    /// Host names clients reach the server by, beyond the loopback ones.
    pub allow_hosts: Vec<String>,
}

/// `sync:` settings: a daemon keeping its store in step with a git
/// remote (`mnemofs sync`). The config is read by every daemon that uses
/// it, so `remote` belongs in the config of the one store it is for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncSettings {
    /// The remote (a URL, a path or a remote's name) that a store not yet
    /// set up for sync is set up with when its daemon starts, as `mnemofs
    /// sync init` would. Set, the daemon syncs every `interval`.
    pub remote: Option<String>,
    /// How often the daemon runs a round (default 5m when `remote` is
    /// set). Set alone, it syncs a store set up with `mnemofs sync init`.
    #[serde(with = "optional_duration")]
    pub interval: Option<Duration>,
    /// Set up as a read-only clone (a team or secondary store): fetch and
    /// merge, never push.
    pub read_only: bool,
}

impl SyncSettings {
    /// How often the daemon syncs, if it does.
    pub fn schedule(&self) -> Option<Duration> {
        const DEFAULT_INTERVAL: Duration = Duration::from_secs(5 * 60);
        match (self.interval, &self.remote) {
            (Some(every), _) => Some(every.max(Duration::from_secs(1))),
            (None, Some(_)) => Some(DEFAULT_INTERVAL),
            (None, None) => None,
        }
    }
}

/// An optional duration, as [`serde_duration`] writes one.
mod optional_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        d: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::serde_duration::serialize(d, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super::serde_duration")] Duration);
        Ok(Option::<Wrapped>::deserialize(deserializer)?.map(|Wrapped(d)| d))
    }
}

/// `mount:` settings: what the root of the mount shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MountSettings {
    /// `hidden` (the default) keeps the view folders out of the root's
    /// listing; `shown` lists them. They resolve by path either way.
    pub views: ViewsListing,
    /// `on` (the default) shows the guide file at the root; `off` shows
    /// exactly the real files.
    pub guide: Switch,
}

/// Whether the view folders are listed at the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ViewsListing {
    /// Not listed; they resolve by path.
    #[default]
    Hidden,
    /// Listed at the root.
    Shown,
}

/// `on` or `off` (YAML's `true` and `false` too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Switch {
    /// On.
    #[default]
    On,
    /// Off.
    Off,
}

impl Switch {
    /// True for `on`.
    pub fn is_on(self) -> bool {
        self == Switch::On
    }
}

impl Serialize for Switch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(if self.is_on() { "on" } else { "off" })
    }
}

impl<'de> Deserialize<'de> for Switch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Switch::On),
            Value::Bool(false) => Ok(Switch::Off),
            Value::String(s) if s.eq_ignore_ascii_case("on") => Ok(Switch::On),
            Value::String(s) if s.eq_ignore_ascii_case("off") => Ok(Switch::Off),
            other => Err(serde::de::Error::custom(format!(
                "expected on or off, found {}",
                serde_yaml::to_string(&other).unwrap_or_default().trim_end()
            ))),
        }
    }
}

/// `history:` settings: earlier versions kept in the state dir.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryConfig {
    /// How long a deleted or overwritten version is kept.
    #[serde(with = "serde_duration")]
    pub keep: Duration,
    /// The most space kept versions take (`500MiB`, `2GiB`, or bytes); the
    /// oldest go first. `0` keeps nothing.
    #[serde(with = "serde_size")]
    pub max_size: u64,
    /// Versions of one file kept within this long of each other collapse
    /// to the first and the latest; `0` keeps every version.
    #[serde(with = "serde_duration")]
    pub collapse: Duration,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        let defaults = crate::store::history::HistorySettings::default();
        HistoryConfig {
            keep: defaults.keep,
            max_size: defaults.max_bytes,
            collapse: defaults.collapse,
        }
    }
}

impl HistoryConfig {
    /// The settings the history store takes.
    pub fn settings(&self) -> crate::store::history::HistorySettings {
        crate::store::history::HistorySettings {
            keep: self.keep,
            max_bytes: self.max_size,
            collapse: self.collapse,
        }
    }
}

/// Sizes as `123`, `64KiB`, `500MiB`, `2GiB` (powers of 1024; `K`, `M`,
/// `G`, `KB`... mean the same).
pub mod serde_size {
    use serde::de::{self, Deserializer, Visitor};
    use serde::ser::Serializer;
    use std::fmt;

    /// Writes the size with the largest unit that divides it.
    pub fn serialize<S: Serializer>(size: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        let text = match *size {
            0 => "0".to_string(),
            n if n % (1 << 30) == 0 => format!("{}GiB", n >> 30),
            n if n % (1 << 20) == 0 => format!("{}MiB", n >> 20),
            n if n % (1 << 10) == 0 => format!("{}KiB", n >> 10),
            n => n.to_string(),
        };
        serializer.serialize_str(&text)
    }

    /// Reads a size string or a number of bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        deserializer.deserialize_any(SizeVisitor)
    }

    /// Parses a size string.
    pub fn parse(text: &str) -> Result<u64, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (digits, unit) = text.split_at(split);
        let n: u64 = digits
            .parse()
            .map_err(|_| format!("`{text}` is not a size such as 500MiB or 2GiB"))?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            other => return Err(format!("unknown size unit `{other}` (use KiB, MiB or GiB)")),
        };
        n.checked_mul(1 << shift)
            .ok_or_else(|| format!("size too large: `{text}`"))
    }

    struct SizeVisitor;

    impl Visitor<'_> for SizeVisitor {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a size such as `500MiB`, `2GiB` or a number of bytes")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom("sizes cannot be negative"))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            parse(v).map_err(E::custom)
        }
    }
}

/// The `timezone:` value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TimeZoneSetting {
    /// The system's zone (`$TZ`, else `/etc/localtime`).
    #[default]
    Local,
    /// A fixed offset such as `+08:00` or `UTC`.
    Fixed(Offset),
    /// An IANA zone such as `Asia/Shanghai`, looked up in the tz database.
    Named(String),
}

impl TimeZoneSetting {
    /// Reads `local`, an offset (`+08:00`, `UTC`) or an IANA name.
    pub fn parse(s: &str) -> Result<TimeZoneSetting, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("local") || t.is_empty() {
            return Ok(TimeZoneSetting::Local);
        }
        if let Some(offset) = parse_offset(t) {
            return Ok(TimeZoneSetting::Fixed(offset));
        }
        let valid_name = t.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_+-".contains(&b))
        }) && t.as_bytes()[0].is_ascii_alphabetic();
        if valid_name {
            Ok(TimeZoneSetting::Named(t.to_owned()))
        } else {
            Err(format!(
                "`{t}` is not a time zone (write `local`, an offset like `+08:00`, or a name like `Asia/Shanghai`)"
            ))
        }
    }

    /// Looks the zone up (the only I/O a setting needs). `Err` is the
    /// warning to show: reminders then use UTC.
    fn load(&self) -> Result<TimeZone, String> {
        match self {
            TimeZoneSetting::Fixed(offset) => Ok(TimeZone::fixed(*offset)),
            TimeZoneSetting::Named(name) => TimeZone::get(name)
                .map_err(|e| format!("timezone {name}: cannot load ({e}); reminders use UTC")),
            // jiff follows `TZ` (a name, a path or a POSIX rule) and then
            // /etc/localtime, as every other program does.
            TimeZoneSetting::Local => TimeZone::try_system()
                .map_err(|e| format!("timezone local: cannot load ({e}); reminders use UTC")),
        }
    }
}

/// Reads `UTC`, `Z`, `GMT`, `+08:00`, `+0800`, `+8`, `-05:30`, and the same
/// after a `UTC`/`GMT` prefix (`UTC+8`, meaning eight hours east, as people
/// write it and unlike a POSIX `TZ` rule). `None` for anything else.
fn parse_offset(s: &str) -> Option<Offset> {
    let upper = s.trim().to_ascii_uppercase();
    if upper.is_empty() {
        return None;
    }
    let rest = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
        .unwrap_or(&upper);
    if rest.is_empty() || rest == "Z" {
        return Some(Offset::UTC);
    }
    let (sign, digits) = if let Some(digits) = rest.strip_prefix('+') {
        (1, digits)
    } else if let Some(digits) = rest.strip_prefix('-') {
        (-1, digits)
    } else {
        return None;
    };
    if !digits.bytes().all(|b| b.is_ascii_digit() || b == b':') {
        return None;
    }
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) if m.len() == 2 => (h, m),
        Some(_) => return None,
        None if digits.len() == 4 => (&digits[..2], &digits[2..]),
        None => (digits, "0"),
    };
    let all_digits =
        |x: &str| !x.is_empty() && x.len() <= 2 && x.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(h) || !all_digits(m) {
        return None;
    }
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    if h > 23 || m > 59 {
        return None;
    }
    Offset::from_seconds(sign * (h * 3600 + m * 60)).ok()
}

impl fmt::Display for TimeZoneSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeZoneSetting::Local => f.write_str("local"),
            TimeZoneSetting::Fixed(o) if *o == Offset::UTC => f.write_str("UTC"),
            // Always `+HH:MM`: jiff's own display shortens `+08:00` to
            // `+08`. Parsed offsets have no seconds.
            TimeZoneSetting::Fixed(o) => {
                let sign = if o.is_negative() { '-' } else { '+' };
                let minutes = o.seconds().unsigned_abs() / 60;
                write!(f, "{sign}{:02}:{:02}", minutes / 60, minutes % 60)
            }
            TimeZoneSetting::Named(n) => f.write_str(n),
        }
    }
}

impl Serialize for TimeZoneSetting {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimeZoneSetting {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = Option::<String>::deserialize(deserializer)?.unwrap_or_default();
        TimeZoneSetting::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Lets `section:` with nothing after it mean "defaults".
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl Config {
    /// Where the config lives when no path is given: `$MNEMOFS_CONFIG`,
    /// else `$XDG_CONFIG_HOME/mnemofs/config.yaml`, else
    /// `$HOME/.config/mnemofs/config.yaml`.
    pub fn default_path() -> Option<PathBuf> {
        // One file for every command of a shell or a service.
        if let Some(path) = std::env::var_os("MNEMOFS_CONFIG").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(path));
        }
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".config"))
            })?;
        Some(base.join("mnemofs").join("config.yaml"))
    }

    /// Reads the config from `path`, or from [`Config::default_path`] when
    /// `None` (a missing default file means all defaults; a missing
    /// explicit file is an error), and looks up the time zone.
    ///
    /// Returns the config and the warnings to show the user.
    pub fn load(path: Option<&Path>) -> Result<(Config, Vec<String>), ConfigError> {
        let (text, origin) = match path {
            Some(p) => (
                std::fs::read_to_string(p).map_err(|error| ConfigError::Read {
                    path: p.to_owned(),
                    error,
                })?,
                Some(p.to_owned()),
            ),
            None => match Config::default_path() {
                Some(p) => match std::fs::read_to_string(&p) {
                    Ok(text) => (text, Some(p)),
                    // Only a file named on purpose must be there.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            && std::env::var_os("MNEMOFS_CONFIG").is_none_or(|v| v.is_empty()) =>
                    {
                        (String::new(), None)
                    }
                    Err(error) => return Err(ConfigError::Read { path: p, error }),
                },
                None => (String::new(), None),
            },
        };
        let (mut config, mut warnings) = Config::parse(&text, origin.as_deref())?;
        match config.timezone.load() {
            Ok(zone) => config.resolved_timezone = zone,
            Err(warning) => warnings.push(warning),
        }
        Ok((config, warnings))
    }

    /// Parses config text. Unknown keys become warnings.
    pub fn from_yaml(text: &str) -> Result<(Config, Vec<String>), ConfigError> {
        Config::parse(text, None)
    }

    fn parse(text: &str, origin: Option<&Path>) -> Result<(Config, Vec<String>), ConfigError> {
        let parse_error = |message: String| ConfigError::Parse {
            origin: origin
                .map(|p| format!(" {}", p.display()))
                .unwrap_or_default(),
            message,
        };
        if crate::memory::nests_too_deep(text) {
            return Err(parse_error(format!(
                "nested more than {} levels deep",
                crate::memory::MAX_YAML_DEPTH
            )));
        }
        let tree: Value = serde_yaml::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        let mut config: Config = match &tree {
            Value::Null => Config::default(),
            Value::Mapping(_) => {
                serde_yaml::from_str(text).map_err(|e| parse_error(e.to_string()))?
            }
            _ => {
                return Err(parse_error(
                    "the top level must be a mapping of keys".into(),
                ));
            }
        };
        if let TimeZoneSetting::Fixed(offset) = config.timezone {
            config.resolved_timezone = TimeZone::fixed(offset);
        }
        let mut warnings = Vec::new();
        unknown_keys(&tree, &known_shape(), "", &mut warnings);
        config.validate(&mut warnings)?;
        Ok((config, warnings))
    }

    /// Rejects values that parse but cannot work; warns about ones that
    /// merely do nothing.
    fn validate(&self, warnings: &mut Vec<String>) -> Result<(), ConfigError> {
        if self.organizer.interval < Duration::from_secs(1) {
            return Err(ConfigError::Invalid {
                key: "organizer.interval".into(),
                reason: format!(
                    "{} is too short, use at least 1s",
                    HumanDuration(self.organizer.interval)
                ),
            });
        }
        if !(1..=3).contains(&self.dream.idle_level) {
            return Err(ConfigError::Invalid {
                key: "dream.idle_level".into(),
                reason: format!("{} is not a dream level (1, 2 or 3)", self.dream.idle_level),
            });
        }
        if self.classification.default_category == Some(Category::Inbox) {
            warnings.push(
                "classification.default_category: inbox is where unplaced notes stay anyway".into(),
            );
        }
        for (i, rule) in self.classification.rules.iter().enumerate() {
            let key = format!("classification.rules[{i}]");
            if rule.category == Category::Inbox {
                warnings.push(format!(
                    "{key}: rules for category inbox are ignored (unmatched items stay in the inbox anyway)"
                ));
            }
            let usable = rule
                .keywords
                .iter()
                .chain(&rule.patterns)
                .any(|k| !k.trim().is_empty());
            if !usable {
                warnings.push(format!("{key}: rule has no keywords or patterns"));
            }
        }
        Ok(())
    }
}

/// The known key tree: the default config, serialized, with one sample
/// of each list or map item so the keys of an item are known too.
fn known_shape() -> Value {
    let mut sample = Config::default();
    sample.search.model = Some(ModelSetting::Folder(PathBuf::new()));
    // A team store's key is the user's path: `*` stands for any key.
    let team = TeamStore {
        promote_folder: Some(String::new()),
    };
    sample.claude = Some(ClaudeSettings {
        store: Some(PathBuf::new()),
        secondary_stores: vec![PathBuf::new()],
        team_stores: [(PathBuf::from("*"), team)].into(),
        capture_folder: Some(String::new()),
        remember_folder: Some(String::new()),
        recall_timeframe: Some(String::new()),
        recall_prompt: Some(String::new()),
        capture_mode: Some(CaptureMode::Extractive),
        placement_conventions: Some(String::new()),
    });
    sample.classification.rules.push(Rule {
        category: Category::Project,
        keywords: vec![String::new()],
        patterns: vec![String::new()],
    });
    serde_yaml::to_value(&sample).unwrap_or(Value::Null)
}

/// Walks `value` beside `shape` and reports keys the shape lacks.
fn unknown_keys(value: &Value, shape: &Value, path: &str, warnings: &mut Vec<String>) {
    match (value, shape) {
        (Value::Mapping(map), Value::Mapping(known)) => {
            for (key, child) in map {
                let name = match key {
                    Value::String(s) => s.clone(),
                    other => serde_yaml::to_string(other)
                        .map(|s| s.trim().to_owned())
                        .unwrap_or_default(),
                };
                let full = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path}.{name}")
                };
                match known.get(key).or_else(|| known.get("*")) {
                    Some(known_child) => unknown_keys(child, known_child, &full, warnings),
                    None => {
                        let siblings = known.keys().filter_map(Value::as_str);
                        let hint = closest(&name, siblings)
                            .map(|s| {
                                let prefix = if path.is_empty() {
                                    String::new()
                                } else {
                                    format!("{path}.")
                                };
                                format!(" (did you mean {prefix}{s}?)")
                            })
                            .unwrap_or_default();
                        warnings.push(format!("unknown key {full}{hint}"));
                    }
                }
            }
        }
        (Value::Sequence(items), Value::Sequence(known)) => {
            if let Some(item_shape) = known.first() {
                for (i, item) in items.iter().enumerate() {
                    unknown_keys(item, item_shape, &format!("{path}[{i}]"), warnings);
                }
            }
        }
        // Type mismatches are reported by the typed parse.
        _ => {}
    }
}

/// The known name nearest to a typo, if it is near enough to be a typo.
fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The built-in schemas plus every `*.yaml` in `dir` (a user's own types,
/// or overrides of the built-in ones). Unreadable or invalid files are
/// returned as warnings; a missing folder is simply none.
pub fn load_schemas(dir: &Path) -> (crate::memory::schema::SchemaSet, Vec<String>) {
    let mut set = crate::memory::schema::SchemaSet::builtin();
    let mut warnings = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (set, warnings);
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    for file in files {
        match std::fs::read_to_string(&file)
            .map_err(|e| e.to_string())
            .and_then(|t| crate::memory::schema::Schema::from_yaml(&t))
        {
            Ok(schema) => set.add(schema),
            Err(e) => warnings.push(format!("schema {}: {e}", file.display())),
        }
    }
    (set, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> (Config, Vec<String>) {
        Config::from_yaml(text).unwrap()
    }

    /// Seconds east of UTC of the config's resolved zone at `instant`.
    fn offset_at(config: &Config, instant: &str) -> i32 {
        let instant: jiff::Timestamp = instant.parse().unwrap();
        config.resolved_timezone.to_offset(instant).seconds()
    }

    /// Loads `text` as a config file.
    fn load(text: &str) -> (Config, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, text).unwrap();
        Config::load(Some(&path)).unwrap()
    }

    #[test]
    fn empty_and_missing_configs_are_the_defaults() {
        for text in ["", "# just a comment\n", "{}", "organizer:\nlifecycle:\n"] {
            let (config, warnings) = parse(text);
            assert_eq!(config, Config::default(), "{text:?}");
            assert!(warnings.is_empty(), "{text:?}: {warnings:?}");
        }
    }

    #[test]
    fn history_keeps_thirty_days_and_reads_sizes() {
        let c = Config::default();
        assert_eq!(c.history.keep, Duration::from_secs(30 * 86_400));
        assert_eq!(c.history.max_size, 1 << 30);
        assert_eq!(c.history.collapse, Duration::from_secs(60));
        let (c, warnings) = parse("history:\n  keep: 7d\n  max_size: 500MiB\n  collapse: 0\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.history.keep, Duration::from_secs(7 * 86_400));
        assert_eq!(c.history.max_size, 500 << 20);
        assert_eq!(c.history.collapse, Duration::ZERO);
        let (c, _) = parse("history:\n  max_size: 4096\n");
        assert_eq!(c.history.max_size, 4096);
        let err = Config::from_yaml("history:\n  max_size: lots\n").unwrap_err();
        assert!(err.to_string().contains("max_size"), "{err}");
        let (_, warnings) = parse("history:\n  kep: 1d\n");
        assert_eq!(
            warnings,
            ["unknown key history.kep (did you mean history.keep?)"]
        );
    }

    #[test]
    fn defaults_are_what_a_new_user_gets() {
        let c = Config::default();
        assert_eq!(c.organizer.interval, Duration::from_secs(300));
        assert_eq!(c.organizer.quiet_period, Duration::from_secs(30));
        assert_eq!(c.organizer.grace_period, Duration::from_secs(3600));
        assert_eq!(c.lifecycle.inbox_ttl, Duration::from_secs(7 * 86_400));
        assert!(!c.lifecycle.decay.enabled);
        assert_eq!(c.lifecycle.decay.after, Duration::from_secs(90 * 86_400));
        assert_eq!(c.lifecycle.upgrade_access_count, 3);
        assert_eq!(c.dream.idle_after, Duration::from_secs(600));
        assert_eq!(c.dream.idle_level, 3);
        assert_eq!(c.notifications.method, NotificationMethod::Auto);
        assert_eq!(c.timezone, TimeZoneSetting::Local);
        assert!(!c.frontmatter.write_counters);
        assert!(c.classification.rules.is_empty());
    }

    #[test]
    fn a_full_config() {
        let (c, warnings) = parse(
            r#"
organizer:
  interval: 1m
  quiet_period: 90        # plain seconds
  grace_period: 2h
lifecycle:
  inbox_ttl: 14d
  decay:
    enabled: true
    after: 30d
  upgrade_access_count: 5
dream:
  idle_after: 1h30m
  idle_level: 2
notifications:
  method: notify-send
timezone: "+08:00"
frontmatter:
  write_counters: true
classification:
  rules:
    - category: project
      keywords: [mnemofs, fuse]
    - category: People
      keywords: [alice]
      patterns: ["@*"]
"#,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.organizer.interval, Duration::from_secs(60));
        assert_eq!(c.organizer.quiet_period, Duration::from_secs(90));
        assert_eq!(c.organizer.grace_period, Duration::from_secs(7200));
        assert_eq!(c.lifecycle.inbox_ttl, Duration::from_secs(14 * 86_400));
        assert!(c.lifecycle.decay.enabled);
        assert_eq!(c.lifecycle.decay.after, Duration::from_secs(30 * 86_400));
        assert_eq!(c.lifecycle.upgrade_access_count, 5);
        assert_eq!(c.dream.idle_after, Duration::from_secs(5400));
        assert_eq!(c.dream.idle_level, 2);
        assert_eq!(c.notifications.method, NotificationMethod::NotifySend);
        assert_eq!(offset_at(&c, "2026-01-15T12:00:00Z"), 8 * 3600);
        assert!(c.frontmatter.write_counters);
        assert_eq!(c.classification.rules.len(), 2);
        assert_eq!(c.classification.rules[0].category, Category::Project);
        assert_eq!(c.classification.rules[1].category, Category::People);
        assert_eq!(c.classification.rules[1].patterns, ["@*"]);
    }

    #[test]
    fn unknown_keys_are_warnings_with_their_path() {
        let (c, warnings) = parse(
            "lifecycle:\n  expire_aftr: 3d\n  inbox_tl: 1d\norganiser:\n  interval: 1m\n\
             classification:\n  rules:\n    - category: project\n      keywords: [x]\n      weight: 2\n",
        );
        assert_eq!(
            warnings,
            [
                "unknown key lifecycle.expire_aftr",
                "unknown key lifecycle.inbox_tl (did you mean lifecycle.inbox_ttl?)",
                "unknown key organiser (did you mean organizer?)",
                "unknown key classification.rules[0].weight",
            ]
        );
        // Known keys beside them still apply.
        assert_eq!(c.classification.rules.len(), 1);
        assert_eq!(c.organizer, OrganizerConfig::default());
    }

    #[test]
    fn mount_settings_read_on_and_off_and_listings() {
        let (c, warnings) = load("mount:\n  views: shown\n  guide: off\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.mount.views, ViewsListing::Shown);
        assert_eq!(c.mount.guide, Switch::Off);
        let (c, _) = load("mount:\n  guide: false\n");
        assert_eq!(c.mount.guide, Switch::Off);
        let (c, _) = load("mount:\n");
        assert_eq!(c.mount, MountSettings::default());
        assert!(c.mount.guide.is_on());
        assert_eq!(c.mount.views, ViewsListing::Hidden);
        assert!(Config::from_yaml("mount:\n  guide: maybe\n").is_err());
    }

    #[test]
    fn search_settings_name_a_model_folder_with_the_home_expanded() {
        let (c, warnings) = load("search:\n  model: /models/minilm\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.search.model_dir(), Some(PathBuf::from("/models/minilm")));
        let (c, warnings) = load("search:\n  model: ~/models/x\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        assert_eq!(c.search.model_dir(), Some(home.join("models/x")));
        assert_eq!(load("").0.search.model_dir(), None);
        let (c, warnings) = load("search:\n  model: ../models/x\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.search.model_dir(), Some(PathBuf::from("../models/x")));
        assert_eq!(c.search.model_name(), None);
    }

    #[test]
    fn questions_are_exact_unless_asked_fast() {
        assert_eq!(load("").0.search.questions, crate::embed::Questions::Exact);
        let (c, warnings) = load("search:\n  questions: fast\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.search.questions, crate::embed::Questions::Fast);
        let msg = Config::from_yaml("search:\n  questions: quick\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("questions"), "{msg}");
    }

    #[test]
    fn search_settings_name_a_model_on_the_hub_pulled_into_the_cache() {
        let (c, warnings) = load("search: {model: sentence-transformers/all-MiniLM-L6-v2}\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        let name = c.search.model_name().expect("a hub name");
        assert_eq!(name.as_str(), "sentence-transformers/all-MiniLM-L6-v2");
        let dir = c.search.model_dir().expect("a folder");
        assert_eq!(dir, name.folder());
        assert!(
            dir.ends_with(".cache/mnemofs/models/sentence-transformers/all-MiniLM-L6-v2")
                || dir.ends_with("mnemofs/models/sentence-transformers/all-MiniLM-L6-v2"),
            "{}",
            dir.display()
        );
        // Written back as it was read.
        let text = serde_yaml::to_string(&c.search).unwrap();
        assert_eq!(
            text,
            "model: sentence-transformers/all-MiniLM-L6-v2\nquestions: exact\n"
        );
        // Neither a folder nor a name: an error naming the key.
        for bad in ["minilm", "models/mini/lm", "a/.b"] {
            let msg = Config::from_yaml(&format!("search:\n  model: {bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains("search.model") && msg.contains("is neither a model's folder"),
                "{msg}"
            );
        }
    }

    #[test]
    fn the_claude_section_holds_the_plugins_block() {
        let (c, warnings) = parse(
            "claude:\n  store: ~/memories\n  secondary_stores: [/srv/team]\n  recall_prompt: Ask first.\n",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let claude = c.claude.expect("a claude section");
        assert_eq!(claude.store, Some(PathBuf::from("~/memories")));
        assert_eq!(claude.secondary_stores, [PathBuf::from("/srv/team")]);
        assert_eq!(claude.recall_prompt.as_deref(), Some("Ask first."));
        let (_, warnings) = parse("claude:\n  secondaryStores: [/x]\n");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(parse("claude:\n").0.claude, None);
    }

    #[test]
    fn the_known_key_tree_matches_the_struct() {
        let Value::Mapping(shape) = known_shape() else {
            panic!("shape is not a mapping");
        };
        let top: Vec<_> = shape.keys().filter_map(Value::as_str).collect();
        assert_eq!(
            top,
            [
                "organizer",
                "lifecycle",
                "dream",
                "notifications",
                "timezone",
                "frontmatter",
                "classification",
                "history",
                "mount",
                "search",
                "mcp",
                "sync",
                "claude"
            ]
        );
        // Serializing the defaults and reading them back is lossless and
        // warning-free.
        let text = serde_yaml::to_string(&Config::default()).unwrap();
        let (back, warnings) = parse(&text);
        assert_eq!(back, Config::default());
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn bad_values_are_errors_naming_the_key() {
        let err = Config::from_yaml("organizer:\n  interval: soon\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("organizer.interval"), "{msg}");
        assert!(msg.contains("invalid duration `soon`"), "{msg}");

        let msg = Config::from_yaml("notifications:\n  method: pigeon\n")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("notifications.method"), "{msg}");

        let msg = Config::from_yaml(
            "classification:\n  rules:\n    - category: work\n      keywords: [x]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(msg.contains("unknown category `work`"), "{msg}");

        let msg = Config::from_yaml("timezone: 'not a zone!'")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("is not a time zone"), "{msg}");

        let msg = Config::from_yaml("organizer:\n  interval: 0s\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "invalid config value organizer.interval: 0s is too short, use at least 1s"
        );

        assert!(Config::from_yaml("dream:\n  idle_level: 4\n").is_err());
        assert!(Config::from_yaml("- a\n- b\n").is_err());
        assert!(Config::from_yaml("organizer: [\n").is_err());
        assert!(Config::from_yaml("lifecycle:\n  upgrade_access_count: -1\n").is_err());
    }

    #[test]
    fn a_default_category_is_read_by_name() {
        let (c, warnings) = parse("classification:\n  default_category: Knowledge\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.classification.default_category, Some(Category::Knowledge));
        assert_eq!(Config::default().classification.default_category, None);
        assert!(Config::from_yaml("classification:\n  default_category: work\n").is_err());
        let (_, warnings) = parse("classification:\n  default_category: inbox\n");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn questionable_rules_are_warnings() {
        let (_, warnings) = parse(
            "classification:\n  rules:\n    - category: inbox\n      keywords: [x]\n    - category: skills\n",
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("classification.rules[0]: rules for category inbox"));
        assert_eq!(
            warnings[1],
            "classification.rules[1]: rule has no keywords or patterns"
        );
    }

    #[test]
    fn timezones() {
        let tz = |s: &str| TimeZoneSetting::parse(s);
        let fixed = |seconds| TimeZoneSetting::Fixed(Offset::from_seconds(seconds).unwrap());
        assert_eq!(tz("local"), Ok(TimeZoneSetting::Local));
        assert_eq!(tz("UTC"), Ok(TimeZoneSetting::Fixed(Offset::UTC)));
        assert_eq!(tz("-05:30"), Ok(fixed(-19_800)));
        assert_eq!(
            tz("Asia/Shanghai"),
            Ok(TimeZoneSetting::Named("Asia/Shanghai".into()))
        );
        assert_eq!(
            tz("America/Argentina/Buenos_Aires"),
            Ok(TimeZoneSetting::Named(
                "America/Argentina/Buenos_Aires".into()
            ))
        );
        for bad in [
            "../etc/passwd",
            "/etc/localtime",
            "Asia//X",
            "Asia/..",
            "+25:00x",
            "日本",
        ] {
            assert!(tz(bad).is_err(), "{bad}");
        }
        let (c, _) = parse("timezone: UTC\n");
        assert_eq!(c.resolved_timezone, TimeZone::UTC);
        let (c, _) = parse("timezone: '-05:30'\n");
        assert_eq!(offset_at(&c, "2026-07-01T00:00:00Z"), -19_800);
        // Parsing does no I/O: a named zone stays UTC until loaded.
        let (c, _) = parse("timezone: Asia/Shanghai\n");
        assert_eq!(c.resolved_timezone, TimeZone::UTC);
        // Round trip through Display.
        for s in ["local", "UTC", "+08:00", "-05:30", "Europe/Berlin"] {
            assert_eq!(tz(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn offsets_parse_as_people_write_them() {
        let p = |s: &str| parse_offset(s).map(Offset::seconds);
        assert_eq!(p("+08:00"), Some(28_800));
        assert_eq!(p("+0800"), Some(28_800));
        assert_eq!(p("+8"), Some(28_800));
        assert_eq!(p("-05:30"), Some(-19_800));
        assert_eq!(p("UTC"), Some(0));
        assert_eq!(p("utc"), Some(0));
        assert_eq!(p("Z"), Some(0));
        assert_eq!(p("UTC+8"), Some(28_800));
        assert_eq!(p("GMT-3"), Some(-10_800));
        for bad in [
            "",
            "8",
            "+",
            "+24:00",
            "+08:60",
            "+8:0",
            "Asia/Shanghai",
            "+123",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn load_reads_an_explicit_file_and_its_zone() {
        let dir = std::env::temp_dir().join(format!("mnemofs-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        std::fs::write(&path, "timezone: Asia/Shanghai\nbogus: 1\n").unwrap();
        let (c, warnings) = Config::load(Some(&path)).unwrap();
        assert!(
            warnings.iter().any(|w| w == "unknown key bogus"),
            "{warnings:?}"
        );
        // The tz database is bundled, so this holds without zoneinfo too.
        assert_eq!(offset_at(&c, "2027-01-15T08:00:00Z"), 8 * 3600);
        std::fs::write(&path, "organizer:\n  interval: x\n").unwrap();
        let msg = Config::load(Some(&path)).unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("invalid config {}:", path.display())),
            "{msg}"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            Config::load(Some(&path)),
            Err(ConfigError::Read { .. })
        ));
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn a_named_zone_follows_daylight_saving_time() {
        let (c, warnings) = load("timezone: Europe/Berlin\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(offset_at(&c, "2026-01-15T12:00:00Z"), 3600);
        assert_eq!(offset_at(&c, "2026-07-15T12:00:00Z"), 2 * 3600);
        // Southern hemisphere: summer time in January.
        let (c, _) = load("timezone: Australia/Sydney\n");
        assert_eq!(offset_at(&c, "2026-01-15T12:00:00Z"), 11 * 3600);
        assert_eq!(offset_at(&c, "2026-07-15T12:00:00Z"), 10 * 3600);
    }

    #[test]
    fn a_zone_that_cannot_be_loaded_is_a_warning_and_utc() {
        let (c, warnings) = load("timezone: Mars/Olympus_Mons\n");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("timezone Mars/Olympus_Mons: cannot load (")
                && warnings[0].ends_with("); reminders use UTC"),
            "{warnings:?}"
        );
        assert_eq!(c.resolved_timezone, TimeZone::UTC);
        // A fixed offset is resolved the same by parsing and by loading.
        let (c, warnings) = load("timezone: '+05:30'\n");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c, parse("timezone: '+05:30'\n").0);
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("interval", "interval"), 0);
        assert_eq!(
            closest("intervall", ["interval", "quiet_period"].into_iter()),
            Some("interval")
        );
        assert_eq!(closest("zzz", ["interval"].into_iter()), None);
    }

    proptest! {
        #[test]
        fn arbitrary_yaml_never_panics(text in "\\PC{0,200}") {
            let _ = Config::from_yaml(&text);
        }

        #[test]
        fn arbitrary_keys_never_panic(key in "[a-z_]{1,12}", sub in "[a-z_]{1,12}") {
            let text = format!("{key}:\n  {sub}: 1\nlifecycle:\n  {sub}: 2\n");
            let _ = Config::from_yaml(&text);
        }
    }
}
