//! mnemofs run as a service: `mount -t mnemofs` and fstab through the
//! mount helper, the systemd unit, and readiness notification.
//!
//! mount(8) looks for helpers only in /sbin, /sbin/fs.d and /sbin/fs, so
//! the helper tests install `mount-helpers/mount.mnemofs` as
//! /sbin/mount.mnemofs (restoring whatever was there) and need root. They
//! hold one lock, because they share that path.

#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use common::{COMMAND_TIMEOUT, bin, force_unmount, is_fuse_mounted, poll_until, run_with_timeout};

const HELPER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/mount-helpers/mount.mnemofs");
const INSTALLED_HELPER: &str = "/sbin/mount.mnemofs";
const EXIT_WAIT: Duration = Duration::from_secs(20);

/// Serializes the tests that own /sbin/mount.mnemofs.
static SBIN: Mutex<()> = Mutex::new(());

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// PATH with the binary under test first, as an installed mnemofs would be.
fn path_with_bin() -> String {
    let dir = Path::new(bin()).parent().expect("binary dir");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// /sbin/mount.mnemofs for the length of a test; the previous one comes back.
struct InstalledHelper {
    previous: Option<Vec<u8>>,
}

impl InstalledHelper {
    fn install() -> Self {
        let previous = fs::read(INSTALLED_HELPER).ok();
        let out = Command::new("install")
            .args(["-m", "0755", HELPER, INSTALLED_HELPER])
            .output()
            .expect("run install");
        assert!(out.status.success(), "install: {}", text(&out));
        InstalledHelper { previous }
    }
}

impl Drop for InstalledHelper {
    fn drop(&mut self) {
        match &self.previous {
            Some(bytes) => {
                let _ = fs::write(INSTALLED_HELPER, bytes);
            }
            None => {
                let _ = fs::remove_file(INSTALLED_HELPER);
            }
        }
    }
}

/// Fresh store, mountpoint and state dir; unmounted on drop.
struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    mnt: PathBuf,
    state: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("mnemofs-service-")
            .tempdir()
            .expect("temp dir");
        let root = tmp.path().canonicalize().expect("temp dir");
        let (store, mnt, state) = (root.join("store"), root.join("mnt"), root.join("state"));
        for dir in [&store, &mnt] {
            fs::create_dir(dir).expect("create dir");
        }
        Dirs {
            _tmp: tmp,
            root,
            store,
            mnt,
            state,
        }
    }

    fn daemon_pid(&self) -> i32 {
        fs::read_to_string(self.state.join("mnemofs.pid"))
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid")
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        force_unmount(&self.mnt);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(cmd: &mut Command) -> Output {
    // mount(8) clears PATH before it runs a helper; MNEMOFS_BIN gets through.
    let cmd = cmd.env("PATH", path_with_bin()).env("MNEMOFS_BIN", bin());
    run_with_timeout(cmd, COMMAND_TIMEOUT).unwrap_or_else(|| panic!("{cmd:?} did not finish"))
}

/// True once `pid` has exited (a zombie nobody reaps counts as exited).
fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// The mount serves the store; `umount` ends it and its daemon.
fn check_mount_then_umount(dirs: &Dirs) {
    assert!(is_fuse_mounted(&dirs.mnt), "not mounted at {:?}", dirs.mnt);
    fs::write(dirs.mnt.join("note.md"), "through the helper\n").expect("write on the mount");
    assert_eq!(
        fs::read_to_string(dirs.store.join("note.md")).expect("read in the store"),
        "through the helper\n"
    );
    let pid = dirs.daemon_pid();
    let out = run(Command::new("umount").arg(&dirs.mnt));
    assert!(out.status.success(), "umount: {}", text(&out));
    assert!(!is_fuse_mounted(&dirs.mnt), "still mounted after umount");
    assert!(
        poll_until(EXIT_WAIT, || process_gone(pid)),
        "the daemon (pid {pid}) did not exit after umount"
    );
    fs::remove_file(dirs.store.join("note.md")).expect("clean the store");
}

#[test]
fn mount_helper_mounts_with_mount_t_and_from_fstab() {
    if !is_root() {
        eprintln!("skipped: mount(8) runs helpers only from /sbin, which needs root");
        return;
    }
    let _sbin = SBIN.lock().unwrap_or_else(|e| e.into_inner());
    let _helper = InstalledHelper::install();
    let dirs = Dirs::new();

    let out = run(Command::new("mount")
        .args(["-t", "mnemofs"])
        .arg(&dirs.store)
        .arg(&dirs.mnt)
        .arg("-o")
        .arg(format!(
            "state_dir={},views=shown,guide=off,no_organizer",
            dirs.state.display()
        )));
    assert!(out.status.success(), "mount -t mnemofs: {}", text(&out));
    // views=shown lists the views; guide=off leaves the guide out.
    let root: Vec<String> = fs::read_dir(&dirs.mnt)
        .expect("list the root")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(root.contains(&"by-tag".to_string()), "{root:?}");
    assert!(!root.contains(&"MNEMOFS.md".to_string()), "{root:?}");
    check_mount_then_umount(&dirs);

    let fstab = dirs.root.join("fstab");
    fs::write(
        &fstab,
        format!(
            "# a test fstab\n{} {} mnemofs defaults,nofail,state_dir={} 0 0\n",
            dirs.store.display(),
            dirs.mnt.display(),
            dirs.state.display()
        ),
    )
    .expect("write fstab");
    let out = run(Command::new("mount")
        .arg("--fstab")
        .arg(&fstab)
        .arg(&dirs.mnt));
    assert!(out.status.success(), "mount --fstab: {}", text(&out));
    check_mount_then_umount(&dirs);
}

#[test]
fn mount_helper_refuses_an_unknown_option_in_one_line() {
    if !is_root() {
        eprintln!("skipped: mount(8) runs helpers only from /sbin, which needs root");
        return;
    }
    let _sbin = SBIN.lock().unwrap_or_else(|e| e.into_inner());
    let _helper = InstalledHelper::install();
    let dirs = Dirs::new();
    let out = run(Command::new("mount")
        .args(["-t", "mnemofs"])
        .arg(&dirs.store)
        .arg(&dirs.mnt)
        .args(["-o", "defaults,colour=blue"]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{}", text(&out));
    assert!(stderr.contains("unknown option 'colour=blue'"), "{stderr}");
    assert!(!is_fuse_mounted(&dirs.mnt));
}

/// The helper itself, without mount(8): what it would run (`-f`), and the
/// options it refuses. Needs no root and no FUSE.
#[test]
fn mount_helper_translates_options() {
    let helper = |args: &[&str]| run(Command::new("sh").arg(HELPER).args(args));
    let out = helper(&[
        "/s",
        "/m",
        "-f",
        "-o",
        "defaults,_netdev,x-systemd.automount,state_dir=/x y,allow_other,views=shown,guide=off,threads=3",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with(
            "mnemofs mount /m --store /s --state-dir /x y --allow-other --views shown --guide off --threads 3\n"
        ),
        "{stderr}"
    );
    for (opts, says) in [
        ("foreground", "makes no sense"),
        ("state_dir", "needs a value"),
        ("allow_other=1", "takes no value"),
        ("ro", "unknown option 'ro'"),
    ] {
        let out = helper(&["/s", "/m", "-f", "-o", opts]);
        assert_eq!(out.status.code(), Some(1), "{opts}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{opts}: {stderr}");
        assert!(stderr.contains(says), "{opts}: {stderr}");
    }
}

/// Runs `mnemofs` with a private HOME and no user session: no systemctl
/// --user call can reach a real user manager.
fn mnemofs_without_session(home: &Path, args: &[&str]) -> Output {
    let runtime = home.join("run");
    fs::create_dir_all(&runtime).expect("runtime dir");
    run(Command::new(bin())
        .args(args)
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("DBUS_SESSION_BUS_ADDRESS"))
}

#[test]
fn systemd_unit_passes_systemd_analyze_verify() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: systemd-analyze is not installed (apt-get install systemd)");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = mnemofs_without_session(tmp.path(), &["install", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    let unit = String::from_utf8(out.stdout.clone()).expect("utf-8 unit");
    assert!(
        unit.contains(&format!(
            "ExecStart={} mount %h/memories --foreground",
            bin()
        )),
        "{unit}"
    );
    assert!(unit.contains("Type=notify"), "{unit}");
    let path = tmp.path().join("mnemofs.service");
    fs::write(&path, &unit).expect("write unit");
    let runtime = tmp.path().join("run");
    let out = run(Command::new("systemd-analyze")
        .args(["--user", "verify"])
        .arg(&path)
        .env("XDG_RUNTIME_DIR", &runtime));
    assert!(
        out.status.success(),
        "systemd-analyze verify: {}",
        text(&out)
    );
    // Other units on the machine may draw warnings; ours must not.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("mnemofs.service"),
        "systemd-analyze warned: {}",
        text(&out)
    );
}

#[test]
fn install_without_a_user_session_writes_the_unit_and_says_what_to_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let unit_path = tmp.path().join(".config/systemd/user/mnemofs.service");

    let out = mnemofs_without_session(tmp.path(), &["install"]);
    assert!(out.status.success(), "{}", text(&out));
    let unit = fs::read_to_string(&unit_path).expect("the unit was written");
    assert!(unit.contains(&format!("ExecStop={} unmount %h/memories", bin())));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "systemctl --user daemon-reload && systemctl --user enable --now mnemofs.service"
        ),
        "{stdout}"
    );

    let out = mnemofs_without_session(tmp.path(), &["uninstall"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !unit_path.exists(),
        "uninstall left {}",
        unit_path.display()
    );
}

#[test]
fn the_launch_agent_is_a_valid_plist_with_the_real_paths() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = mnemofs_without_session(
        tmp.path(),
        &["install", "--dry-run", "--manager", "launchd"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let plist = tmp.path().join("agent.plist");
    fs::write(&plist, &out.stdout).expect("write plist");
    // plistlib is Python's reader of Apple property lists, as launchd reads them.
    let read = run(Command::new("python3")
        .arg("-c")
        .arg(
            "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))",
        )
        .arg(&plist));
    assert!(read.status.success(), "plistlib: {}", text(&read));
    let agent: serde_json::Value = serde_json::from_slice(&read.stdout).expect("JSON");
    let home = tmp.path().display().to_string();
    assert_eq!(agent["Label"], "com.mnemofs.mount");
    assert_eq!(
        agent["ProgramArguments"],
        serde_json::json!([bin(), "mount", format!("{home}/memories"), "--foreground"])
    );
    assert_eq!(agent["RunAtLoad"], true);
    assert_eq!(agent["KeepAlive"]["SuccessfulExit"], false);
    assert_eq!(
        agent["StandardErrorPath"],
        format!("{home}/Library/Logs/mnemofs.log")
    );

    // Without launchctl (this is Linux) the file is written, one line says
    // what to run, and uninstall removes it.
    let path = tmp
        .path()
        .join("Library/LaunchAgents/com.mnemofs.mount.plist");
    let out = mnemofs_without_session(tmp.path(), &["install", "--manager", "launchd"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        fs::read(&path).expect("the agent was written"),
        fs::read(&plist).unwrap()
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("launchctl bootstrap gui/"));
    let out = mnemofs_without_session(tmp.path(), &["uninstall", "--manager", "launchd"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!path.exists(), "uninstall left {}", path.display());
}

#[test]
fn foreground_mount_notifies_readiness_and_exits_cleanly_on_sigterm() {
    if !Path::new("/dev/fuse").exists() {
        eprintln!("skipped: /dev/fuse does not exist");
        return;
    }
    let dirs = Dirs::new();
    let socket_path = dirs.root.join("notify.sock");
    let log = dirs.root.join("daemon.log");
    let log_text = || fs::read_to_string(&log).unwrap_or_default();
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).expect("bind");
    // A bound on the wait, not a timing assertion.
    socket
        .set_read_timeout(Some(common::READY_TIMEOUT))
        .expect("timeout");
    let mut child = Command::new(bin())
        .arg("mount")
        .arg(&dirs.mnt)
        .arg("--store")
        .arg(&dirs.store)
        .arg("--state-dir")
        .arg(&dirs.state)
        .args(["--foreground", "--no-organizer"])
        .env("NOTIFY_SOCKET", &socket_path)
        .stdin(std::process::Stdio::null())
        .stderr(fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("spawn mnemofs");
    let mut buf = [0u8; 256];
    let received = socket.recv(&mut buf);
    let message = received
        .as_ref()
        .map(|n| String::from_utf8_lossy(&buf[..*n]).into_owned());
    if message.is_err() {
        common::signal(child.id(), libc::SIGKILL);
        let _ = child.wait();
    }
    let message = message.unwrap_or_else(|e| panic!("no readiness message ({e}):\n{}", log_text()));
    assert!(message.lines().any(|l| l == "READY=1"), "{message:?}");
    assert!(
        is_fuse_mounted(&dirs.mnt),
        "READY=1 before the mount was live:\n{}",
        log_text()
    );

    common::signal(child.id(), libc::SIGTERM);
    let status = common::wait_timeout(&mut child, EXIT_WAIT).unwrap_or_else(|| {
        common::signal(child.id(), libc::SIGKILL);
        panic!("mnemofs did not exit after SIGTERM:\n{}", log_text())
    });
    assert!(status.success(), "exit status {status}:\n{}", log_text());
    assert!(!is_fuse_mounted(&dirs.mnt), "still mounted after SIGTERM");
}
