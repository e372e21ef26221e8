//! `mnemofs completions` and `mnemofs man` print what their shells and
//! `man` accept.

mod common;

use std::process::{Command, Output};

use common::{COMMAND_TIMEOUT, bin, run_with_timeout};

fn run(cmd: &mut Command) -> Output {
    run_with_timeout(cmd, COMMAND_TIMEOUT).unwrap_or_else(|| panic!("{cmd:?} did not finish"))
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

#[test]
fn bash_completion_parses() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = run(Command::new(bin()).args(["completions", "bash"]));
    assert!(out.status.success(), "{}", text(&out));
    let script = tmp.path().join("mnemofs.bash");
    std::fs::write(&script, &out.stdout).expect("write script");
    assert!(String::from_utf8_lossy(&out.stdout).contains("doctor"));
    let out = run(Command::new("bash").arg("-n").arg(&script));
    assert!(out.status.success(), "bash -n: {}", text(&out));
}

#[test]
fn every_shell_gets_a_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(Command::new(bin()).args(["completions", shell]));
        assert!(out.status.success(), "{shell}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("mount"),
            "{shell}"
        );
    }
    let out = run(Command::new(bin()).args(["completions", "tcsh"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn man_page_renders() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = run(Command::new(bin()).arg("man"));
    assert!(out.status.success(), "{}", text(&out));
    let page = tmp.path().join("mnemofs.1");
    std::fs::write(&page, &out.stdout).expect("write page");
    let rendered = if installed("man") {
        run(Command::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat"))
    } else if installed("groff") {
        run(Command::new("groff")
            .args(["-man", "-Tutf8", "-ww"])
            .arg(&page))
    } else {
        eprintln!("skipped: neither man nor groff is installed to render the page");
        return;
    };
    assert!(rendered.status.success(), "{}", text(&rendered));
    let shown = String::from_utf8_lossy(&rendered.stdout);
    assert!(shown.contains("SUBCOMMANDS"), "{shown}");
    assert!(shown.contains("mnemofs-doctor"), "{shown}");
    assert!(rendered.stderr.is_empty(), "{}", text(&rendered));

    let dir = tmp.path().join("man1");
    std::fs::create_dir(&dir).expect("man dir");
    let out = run(Command::new(bin()).arg("man").arg("--dir").arg(&dir));
    assert!(out.status.success(), "{}", text(&out));
    assert!(dir.join("mnemofs-mount.1").is_file());
}
