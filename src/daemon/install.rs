//! `mnemofs install` and `uninstall`: the systemd user unit that mounts
//! ~/memories at login.
//!
//! The unit is `systemd/mnemofs.service` with `@BINARY@` replaced by the
//! running binary's path, so the unit starts exactly the mnemofs that
//! installed it. Without `systemctl` or a user session (a container, an
//! ssh login without lingering) the file is still written and one line
//! says what to run; that is not an error.

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
    TEMPLATE.replace("@BINARY@", &systemd_quote(&binary.to_string_lossy()))
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

/// Where the user unit goes: `$XDG_CONFIG_HOME/systemd/user/mnemofs.service`.
pub fn unit_path() -> PathBuf {
    super::paths::config_home()
        .join("systemd")
        .join("user")
        .join(UNIT_NAME)
}

/// Writes the unit and enables it (`--dry-run` prints it instead).
pub fn install(dry_run: bool) -> anyhow::Result<()> {
    let binary = std::env::current_exe().context("cannot find the mnemofs binary's path")?;
    let unit = render_unit(&binary);
    if dry_run {
        print!("{unit}");
        return Ok(());
    }
    let path = unit_path();
    let dir = path.parent().expect("the unit path has a parent");
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let temp = path.with_extension("service.tmp");
    std::fs::write(&temp, &unit)
        .and_then(|()| std::fs::rename(&temp, &path))
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
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

/// Stops, disables and removes the unit.
pub fn uninstall() -> anyhow::Result<()> {
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
        assert!(!unit.contains("@BINARY@"));
    }
}
