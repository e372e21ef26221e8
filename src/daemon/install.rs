//! `mnemofs install` and `uninstall`: the service that mounts ~/memories
//! at login: a systemd user unit on Linux, a launchd LaunchAgent on macOS.
//!
//! The unit is `systemd/mnemofs.service` with `@BINARY@` replaced by the
//! running binary's path, so the unit starts exactly the mnemofs that
//! installed it. Without `systemctl` or a user session (a container, an
//! ssh login without lingering) the file is still written and one line
//! says what to run; that is not an error. The LaunchAgent is
//! `launchd/com.mnemofs.mount.plist` with `@BINARY@` and `@HOME@` filled
//! in the same way.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

/// The unit template; `@BINARY@` stands for the mnemofs binary.
const TEMPLATE: &str = include_str!("../../systemd/mnemofs.service");
/// The unit's file name, which is also its name for systemctl.
pub const UNIT_NAME: &str = "mnemofs.service";

/// The template with `binary` filled in, quoted for a systemd command line.
pub fn render_unit(binary: &Path) -> String {
    let binary = systemd_quote(&binary.to_string_lossy());
    // The comment's instructions for filling the template by hand stay as
    // they are.
    fill_lines(
        TEMPLATE,
        |line, _| line.starts_with('#'),
        &[("@BINARY@", &binary)],
    )
}

/// `template` with each `(placeholder, value)` filled in, except on the
/// lines `in_comment` says are a comment (given the line and whether the
/// lines before left a comment open).
fn fill_lines(
    template: &str,
    in_comment: impl Fn(&str, bool) -> bool,
    values: &[(&str, &str)],
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut open = false;
    for line in template.split_inclusive('\n') {
        let comment = in_comment(line, open);
        open = comment && !line.contains("-->");
        if comment {
            out.push_str(line);
        } else {
            let mut filled = line.to_string();
            for (placeholder, value) in values {
                filled = filled.replace(placeholder, value);
            }
            out.push_str(&filled);
        }
    }
    out
}

/// Quotes a word for `ExecStart=`: `%` starts a specifier and `$` a
/// variable, and whitespace splits words unless quoted.
fn systemd_quote(word: &str) -> String {
    let escaped = word.replace('%', "%%").replace('$', "$$");
    if escaped
        .chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\'' || c == '\\')
    {
        format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        escaped
    }
}

/// The LaunchAgent template; `@BINARY@` and `@HOME@` are filled in.
const PLIST_TEMPLATE: &str = include_str!("../../launchd/com.mnemofs.mount.plist");
/// The LaunchAgent's label, which is also its file name's stem.
pub const AGENT_LABEL: &str = "com.mnemofs.mount";

/// The service manager that starts mnemofs at login.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Manager {
    /// A systemd user unit (Linux).
    Systemd,
    /// A launchd LaunchAgent (macOS).
    Launchd,
}

impl Manager {
    /// This platform's own.
    pub fn native() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        }
    }
}

/// The LaunchAgent with the binary and the home folder filled in.
pub fn render_plist(binary: &Path, home: &Path) -> String {
    let (binary, home) = (
        xml_escape(&binary.to_string_lossy()),
        xml_escape(&home.to_string_lossy()),
    );
    fill_lines(
        PLIST_TEMPLATE,
        |line, open| open || line.trim_start().starts_with("<!--"),
        &[("@BINARY@", &binary), ("@HOME@", &home)],
    )
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Where the LaunchAgent goes: `~/Library/LaunchAgents/com.mnemofs.mount.plist`.
pub fn plist_path() -> PathBuf {
    super::paths::home()
        .join("Library")
        .join("LaunchAgents")
        .join(format!("{AGENT_LABEL}.plist"))
}

/// Where the user unit goes: `$XDG_CONFIG_HOME/systemd/user/mnemofs.service`.
pub fn unit_path() -> PathBuf {
    super::paths::config_home()
        .join("systemd")
        .join("user")
        .join(UNIT_NAME)
}

/// Whether `binary` lies in a cargo build folder (`target/debug`,
/// `target/release`, ...).
fn in_build_dir(binary: &Path) -> bool {
    let parts: Vec<_> = binary.components().map(|c| c.as_os_str()).collect();
    parts
        .windows(2)
        .any(|w| w[0] == "target" && (w[1] == "debug" || w[1] == "release"))
}

/// Writes `text` to `path` through a temporary file beside it.
fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent folder", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, path))
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Writes the service file and enables it (`--dry-run` prints it instead).
pub fn install(manager: Manager, dry_run: bool) -> anyhow::Result<()> {
    let binary = std::env::current_exe().context("cannot find the mnemofs binary's path")?;
    if in_build_dir(&binary) && !dry_run {
        eprintln!(
            "mnemofs: warning: the service will run {}, a build in a cargo target folder that the next build or `cargo clean` replaces; run `cargo install --path .` and then `mnemofs install` from ~/.cargo/bin",
            binary.display()
        );
    }
    if manager == Manager::Launchd {
        let plist = render_plist(&binary, &super::paths::home());
        if dry_run {
            print!("{plist}");
            return Ok(());
        }
        let path = plist_path();
        write_file(&path, &plist)?;
        let loaded = launchctl(&["bootstrap", &gui_domain(), &path.to_string_lossy()]);
        match loaded {
            Ok(()) => println!("loaded {AGENT_LABEL}: the store is mounted at ~/memories"),
            Err(why) => println!(
                "{why}; at the next login it loads, or run: launchctl bootstrap {} {}",
                gui_domain(),
                path.display()
            ),
        }
        return Ok(());
    }
    let unit = render_unit(&binary);
    if dry_run {
        print!("{unit}");
        return Ok(());
    }
    let path = unit_path();
    write_file(&path, &unit)?;
    let enabled =
        systemctl(&["daemon-reload"]).and_then(|()| systemctl(&["enable", "--now", UNIT_NAME]));
    match enabled {
        Ok(()) => println!("enabled and started {UNIT_NAME}: the store is mounted at ~/memories"),
        Err(why) => println!(
            "{why}; once a user session runs, run: systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}"
        ),
    }
    Ok(())
}

/// Stops, disables and removes the unit (or unloads and removes the
/// LaunchAgent).
pub fn uninstall(manager: Manager) -> anyhow::Result<()> {
    if manager == Manager::Launchd {
        let path = plist_path();
        if !path.exists() {
            println!(
                "{AGENT_LABEL} is not installed ({} does not exist)",
                path.display()
            );
            return Ok(());
        }
        let unloaded = launchctl(&["bootout", &format!("{}/{AGENT_LABEL}", gui_domain())]);
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        println!("removed {}", path.display());
        if let Err(why) = unloaded {
            println!(
                "{why}; if it still runs, run: launchctl bootout {}/{AGENT_LABEL}",
                gui_domain()
            );
        }
        return Ok(());
    }
    let path = unit_path();
    if !path.exists() {
        println!(
            "{UNIT_NAME} is not installed ({} does not exist)",
            path.display()
        );
        return Ok(());
    }
    let disabled = systemctl(&["disable", "--now", UNIT_NAME]);
    std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    println!("removed {}", path.display());
    match disabled.and_then(|()| systemctl(&["daemon-reload"])) {
        Ok(()) => println!("stopped and disabled {UNIT_NAME}"),
        Err(why) => println!(
            "{why}; if it still runs, run: systemctl --user stop {UNIT_NAME} && systemctl --user daemon-reload"
        ),
    }
    Ok(())
}

/// Whether the unit is enabled, when a user session can tell.
pub fn is_enabled() -> Result<bool, String> {
    let out = Command::new("systemctl")
        .args(["--user", "is-enabled", UNIT_NAME])
        .output()
        .map_err(|e| describe_spawn_error(&e))?;
    let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match state.as_str() {
        "enabled" | "enabled-runtime" | "linked" | "linked-runtime" => Ok(true),
        "disabled" | "static" | "indirect" | "masked" | "masked-runtime" | "not-found" => Ok(false),
        _ => Err(no_session(&out.stderr)),
    }
}

/// Runs `systemctl --user ARGS`; the error says why in a few words.
fn systemctl(args: &[&str]) -> Result<(), String> {
    let out = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .output()
        .map_err(|e| describe_spawn_error(&e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(no_session(&out.stderr))
    }
}

/// The launchd domain of the user's login session.
fn gui_domain() -> String {
    // SAFETY: getuid has no preconditions.
    format!("gui/{}", unsafe { libc::getuid() })
}

/// Runs `launchctl ARGS`; the error says why in a few words.
fn launchctl(args: &[&str]) -> Result<(), String> {
    let out = Command::new("launchctl").args(args).output().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            "launchctl is not installed (it comes with macOS)".to_owned()
        } else {
            format!("cannot run launchctl: {e}")
        }
    })?;
    if out.status.success() {
        Ok(())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(format!("launchctl failed ({})", said.trim()))
    }
}

fn describe_spawn_error(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::NotFound {
        "systemctl is not installed".into()
    } else {
        format!("cannot run systemctl: {e}")
    }
}

fn no_session(stderr: &[u8]) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    match stderr.lines().next().map(str::trim) {
        Some(line) if !line.is_empty() => format!("systemctl --user failed ({line})"),
        _ => "systemctl --user failed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_path_is_quoted_for_systemd() {
        let unit = render_unit(Path::new("/opt/my tools/100%/mnemofs"));
        assert!(
            unit.contains(
                "ExecStart=\"/opt/my tools/100%%/mnemofs\" mount %h/memories --foreground"
            ),
            "{unit}"
        );
        let unit = render_unit(Path::new("/usr/local/bin/mnemofs"));
        assert!(unit.contains("ExecStop=/usr/local/bin/mnemofs unmount %h/memories"));
        // Filled in where systemd reads it, not in the comment's
        // instructions for filling it by hand.
        let filled: Vec<&str> = unit.lines().filter(|l| l.contains("@BINARY@")).collect();
        assert!(
            !filled.is_empty() && filled.iter().all(|l| l.starts_with('#')),
            "{unit}"
        );
        let plist = render_plist(Path::new("/opt/mnemofs"), Path::new("/Users/me"));
        let left: Vec<&str> = plist
            .lines()
            .filter(|l| l.contains("@BINARY@") || l.contains("@HOME@"))
            .collect();
        assert!(
            !left.is_empty() && left.iter().all(|l| l.contains("sed -e")),
            "{plist}"
        );
        assert!(
            plist.contains("<string>/Users/me/memories</string>"),
            "{plist}"
        );
    }

    #[test]
    fn builds_in_a_target_folder_are_recognized() {
        assert!(in_build_dir(Path::new("/src/mnemofs/target/debug/mnemofs")));
        assert!(in_build_dir(Path::new("/x/target/release/mnemofs")));
        assert!(!in_build_dir(Path::new("/home/a/.cargo/bin/mnemofs")));
        assert!(!in_build_dir(Path::new("/usr/local/bin/mnemofs")));
    }

    #[test]
    fn the_launch_agent_names_the_binary_and_home() {
        let plist = render_plist(Path::new("/Users/a&b/bin/mnemofs"), Path::new("/Users/a&b"));
        assert!(
            plist.contains("<string>/Users/a&amp;b/bin/mnemofs</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("<string>/Users/a&amp;b/memories</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("/Users/a&amp;b/Library/Logs/mnemofs.log"),
            "{plist}"
        );
        // Every placeholder is filled but in the comment's instructions.
        assert!(
            plist
                .lines()
                .filter(|l| l.contains('@'))
                .all(|l| l.contains("sed -e")),
            "{plist}"
        );
    }
}
