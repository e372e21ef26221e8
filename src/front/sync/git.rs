//! Every git command sync runs, in one place.
//!
//! Sync drives the git CLI rather than a library, so that the user's
//! credentials (helpers, SSH agents), config (`insteadOf`, proxies) and
//! hooks (`pre-commit`, `pre-push`) apply as they would to a `git push` at
//! the shell. Commands run with `GIT_DIR` and `GIT_WORK_TREE` set, so git
//! never looks above the store for a repository, and with mnemofs's own
//! index file (`.git/mnemofs/index`), so that a round cut short by a crash
//! leaves no `index.lock` in the user's way: only a round, holding the
//! round lock, ever takes the lock of that index.
//!
//! Subtleties:
//! - Paths come and go as bytes (`-z`): a store may hold names that are
//!   not UTF-8.
//! - `core.fileMode=false`: the writers make private files (0600) and
//!   git's executable bit would otherwise flap between machines.
//! - Nothing here prompts unless a person runs the command on a terminal:
//!   a daemon's round that needs a password fails with git's sentence.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The id of the empty tree, which every git knows.
pub(crate) const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// An id that names no commit: "must not exist yet" to `update-ref`.
pub(crate) const NO_COMMIT: &str = "0000000000000000000000000000000000000000";

/// A git command that failed: what was run and git's own words.
#[derive(Debug, thiserror::Error)]
#[error("git {what} failed: {said}")]
pub(crate) struct GitError {
    /// The subcommand.
    pub(crate) what: String,
    /// The first lines git wrote on stderr (or how it could not run).
    pub(crate) said: String,
}

/// A repository whose work tree is a store.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    work_tree: PathBuf,
    git_dir: PathBuf,
    index: Option<PathBuf>,
    identity: Option<(String, String)>,
    prompt: bool,
}

impl Git {
    /// The repository at `work_tree/.git`, if there is one (a folder, or
    /// the file a linked work tree has).
    pub(crate) fn open(work_tree: &Path) -> Result<Option<Git>, GitError> {
        if std::fs::symlink_metadata(work_tree.join(".git")).is_err() {
            return Ok(None);
        }
        let probe = Git::at(work_tree, &work_tree.join(".git"));
        let dir = probe.run(&["rev-parse", "--absolute-git-dir"])?;
        Ok(Some(Git::at(work_tree, Path::new(dir.trim()))))
    }

    /// Makes a repository at `work_tree/.git` whose branch is `branch`.
    pub(crate) fn init(work_tree: &Path, branch: &str) -> Result<Git, GitError> {
        let git = Git::at(work_tree, &work_tree.join(".git"));
        let mut command = Command::new("git");
        command
            .arg("init")
            .arg("-q")
            .arg("-b")
            .arg(branch)
            .arg(work_tree)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
        git.finish("init", command, None)?;
        Ok(git)
    }

    /// Runs `git ls-remote --symref REMOTE HEAD` outside any repository:
    /// whether the remote answers, and its default branch if it has one.
    pub(crate) fn remote_head(work_tree: &Path, remote: &str) -> Result<Option<String>, GitError> {
        let git = Git::at(work_tree, &work_tree.join(".git"));
        let mut command = git.base();
        command
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .current_dir("/")
            .args(["ls-remote", "--symref", remote, "HEAD"]);
        let out = git.finish("ls-remote", command, None)?;
        Ok(String::from_utf8_lossy(&out).lines().find_map(|line| {
            line.strip_prefix("ref: refs/heads/")
                .and_then(|rest| rest.split_once('\t'))
                .map(|(branch, _)| branch.to_owned())
        }))
    }

    fn at(work_tree: &Path, git_dir: &Path) -> Git {
        Git {
            work_tree: work_tree.to_path_buf(),
            git_dir: git_dir.to_path_buf(),
            index: None,
            identity: None,
            prompt: std::io::IsTerminal::is_terminal(&std::io::stdin()),
        }
    }

    /// The repository's git dir.
    pub(crate) fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The same repository, with `index` as its index file.
    pub(crate) fn with_index(mut self, index: PathBuf) -> Git {
        self.index = Some(index);
        self
    }

    /// The same repository, committing as `name <email>` when the user's
    /// config names nobody.
    pub(crate) fn with_fallback_identity(mut self, name: &str, email: &str) -> Git {
        let has_identity = self.run(&["var", "GIT_COMMITTER_IDENT"]).is_ok()
            && self.run(&["var", "GIT_AUTHOR_IDENT"]).is_ok();
        if !has_identity {
            self.identity = Some((name.to_owned(), email.to_owned()));
        }
        self
    }

    fn base(&self) -> Command {
        let mut command = Command::new("git");
        command
            .arg("-c")
            .arg("core.fileMode=false")
            .arg("-c")
            .arg("core.quotePath=false")
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("LC_ALL", "C")
            .current_dir(&self.work_tree)
            .stdin(Stdio::null());
        if let Some(index) = &self.index {
            command.env("GIT_INDEX_FILE", index);
        }
        if let Some((name, email)) = &self.identity {
            for (key, value) in [
                ("GIT_AUTHOR_NAME", name),
                ("GIT_AUTHOR_EMAIL", email),
                ("GIT_COMMITTER_NAME", name),
                ("GIT_COMMITTER_EMAIL", email),
            ] {
                command.env(key, value);
            }
        }
        if !self.prompt {
            command.env("GIT_TERMINAL_PROMPT", "0");
        }
        die_with_parent(&mut command);
        command
    }

    fn finish(
        &self,
        what: &str,
        mut command: Command,
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let out = self.output(what, &mut command, input)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(GitError {
                what: what.to_owned(),
                said: first_lines(&out.stderr, &out.stdout),
            })
        }
    }

    fn output(
        &self,
        what: &str,
        command: &mut Command,
        input: Option<&[u8]>,
    ) -> Result<std::process::Output, GitError> {
        let cannot = |e: std::io::Error| GitError {
            what: what.to_owned(),
            said: format!("cannot run git ({e}); is git installed?"),
        };
        tracing::debug!("git {what}");
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        if input.is_some() {
            command.stdin(Stdio::piped());
        }
        let mut child = command.spawn().map_err(cannot)?;
        let writer = match (input, child.stdin.take()) {
            (Some(bytes), Some(mut stdin)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || stdin.write_all(&bytes)))
            }
            _ => None,
        };
        let out = child.wait_with_output().map_err(cannot)?;
        if let Some(writer) = writer {
            // A command that stops reading early says why on stderr.
            let _ = writer.join();
        }
        Ok(out)
    }

    /// Runs `git ARGS`; its stdout as text.
    pub(crate) fn run(&self, args: &[&str]) -> Result<String, GitError> {
        self.run_bytes(args, None)
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    /// Runs `git ARGS` with `input` on stdin; its stdout.
    pub(crate) fn run_bytes(
        &self,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, GitError> {
        let mut command = self.base();
        command.args(args);
        self.finish(args.first().copied().unwrap_or("git"), command, input)
    }

    /// Runs `git ARGS`: its exit code, stdout and what it said on
    /// stderr, whatever the code.
    pub(crate) fn run_code(&self, args: &[&str]) -> Result<(i32, Vec<u8>, String), GitError> {
        let what = args.first().copied().unwrap_or("git");
        let mut command = self.base();
        command.args(args);
        let out = self.output(what, &mut command, None)?;
        match out.status.code() {
            Some(code) => Ok((
                code,
                out.stdout.clone(),
                first_lines(&out.stderr, &out.stdout),
            )),
            None => Err(GitError {
                what: what.to_owned(),
                said: "killed by a signal".into(),
            }),
        }
    }

    /// A config value of the repository, if set.
    pub(crate) fn config(&self, key: &str) -> Option<String> {
        self.run(&["config", "--get", key])
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// Sets a config value in the repository's own config.
    pub(crate) fn set_config(&self, key: &str, value: &str) -> Result<(), GitError> {
        self.run(&["config", "--local", key, value]).map(drop)
    }

    /// The commit (or other object) `name` names, if it exists.
    pub(crate) fn rev(&self, name: &str) -> Option<String> {
        self.run(&["rev-parse", "--verify", "-q", name])
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// True if commit `a` is an ancestor of (or is) commit `b`.
    pub(crate) fn is_ancestor(&self, a: &str, b: &str) -> Result<bool, GitError> {
        match self.run_code(&["merge-base", "--is-ancestor", a, b])? {
            (0, ..) => Ok(true),
            (1, ..) => Ok(false),
            (code, ..) => Err(GitError {
                what: "merge-base".into(),
                said: format!("exit code {code}"),
            }),
        }
    }

    /// Reads blobs one at a time from one `git cat-file --batch`.
    pub(crate) fn blobs(&self) -> Result<Blobs, GitError> {
        let mut command = self.base();
        command
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().map_err(|e| GitError {
            what: "cat-file".into(),
            said: format!("cannot run git ({e})"),
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(GitError {
                what: "cat-file".into(),
                said: "no pipes".into(),
            });
        };
        Ok(Blobs {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        })
    }
}

/// Makes the git a command starts die with the process that started it:
/// a round killed with SIGKILL must not leave a `git fetch` or a `git
/// commit` running beside the round that finishes it.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: prctl, getppid and _exit are async-signal-safe, and nothing
    // else runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The parent died before the line above: go with it.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Elsewhere git outlives a killed round, which the next one waits out
/// or finds as lock files.
#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// A running `git cat-file --batch`.
pub(crate) struct Blobs {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Blobs {
    /// The content of blob `oid`.
    pub(crate) fn get(&mut self, oid: &str) -> std::io::Result<Vec<u8>> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("cat-file closed"))?;
        stdin.write_all(oid.as_bytes())?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
        let mut header = String::new();
        self.stdout.read_line(&mut header)?;
        // "<oid> blob <size>", or "<oid> missing".
        let mut parts = header.split_whitespace();
        let (_, kind, size) = (parts.next(), parts.next(), parts.next());
        let size: usize = match (kind, size.and_then(|s| s.parse().ok())) {
            (Some("blob"), Some(size)) => size,
            _ => {
                return Err(std::io::Error::other(format!(
                    "git has no blob {oid} ({})",
                    header.trim()
                )));
            }
        };
        let mut content = vec![0; size];
        self.stdout.read_exact(&mut content)?;
        let mut newline = [0; 1];
        self.stdout.read_exact(&mut newline)?;
        Ok(content)
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// One entry of `git diff-tree --raw -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChange {
    pub(crate) old_mode: String,
    pub(crate) new_mode: String,
    pub(crate) old_oid: String,
    pub(crate) new_oid: String,
    /// `A`, `M`, `D`, `R`, `T`...
    pub(crate) status: char,
    /// The path (the old one of a rename).
    pub(crate) path: PathBuf,
    /// The new path of a rename.
    pub(crate) to: Option<PathBuf>,
}

/// Parses `git diff-tree -r -z --raw` output.
pub(crate) fn parse_raw(out: &[u8]) -> Vec<RawChange> {
    let mut fields = out.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let Some(head) = fields.next() {
        let Some(head) = head.strip_prefix(b":") else {
            continue;
        };
        let head = String::from_utf8_lossy(head);
        let parts: Vec<&str> = head.split(' ').collect();
        if parts.len() < 5 {
            continue;
        }
        let status = parts[4].chars().next().unwrap_or('?');
        let Some(path) = fields.next() else { break };
        let path = PathBuf::from(OsStr::from_bytes(path));
        let to = if matches!(status, 'R' | 'C') {
            fields.next().map(|p| PathBuf::from(OsStr::from_bytes(p)))
        } else {
            None
        };
        changes.push(RawChange {
            old_mode: parts[0].to_owned(),
            new_mode: parts[1].to_owned(),
            old_oid: parts[2].to_owned(),
            new_oid: parts[3].to_owned(),
            status,
            path,
            to,
        });
    }
    changes
}

/// One conflicted stage from `git merge-tree --write-tree -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stage {
    pub(crate) mode: String,
    pub(crate) oid: String,
    /// 1 base, 2 ours, 3 theirs.
    pub(crate) stage: u8,
    pub(crate) path: Vec<u8>,
}

/// Parses `git merge-tree --write-tree -z --no-messages`: the merged
/// tree, and the conflicted stages.
pub(crate) fn parse_merge_tree(out: &[u8]) -> Option<(String, Vec<Stage>)> {
    let mut fields = out.split(|b| *b == 0);
    let tree = String::from_utf8_lossy(fields.next()?).trim().to_owned();
    if tree.is_empty() {
        return None;
    }
    let mut stages = Vec::new();
    for field in fields {
        if field.is_empty() {
            break;
        }
        let tab = field.iter().position(|b| *b == b'\t')?;
        let head = String::from_utf8_lossy(&field[..tab]);
        let mut parts = head.split(' ');
        let (mode, oid, stage) = (parts.next()?, parts.next()?, parts.next()?);
        stages.push(Stage {
            mode: mode.to_owned(),
            oid: oid.to_owned(),
            stage: stage.parse().ok()?,
            path: field[tab + 1..].to_vec(),
        });
    }
    Some((tree, stages))
}

/// `text` with the credentials of every URL in it masked: the user and
/// password of `scheme://user:password@host`, and the whole user part of
/// an `http(s)://` URL (where it is often a token). What git says, and
/// the remote as the user named it, can reach a terminal or a journal.
pub(crate) fn without_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
            .map_or(0, |i| i + 1);
        let scheme = rest[scheme_start..at].to_ascii_lowercase();
        let authority_start = at + 3;
        let authority_len = rest[authority_start..]
            .find(|c: char| {
                c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '\'' || c == '"'
            })
            .unwrap_or(rest.len() - authority_start);
        let authority = &rest[authority_start..authority_start + authority_len];
        out.push_str(&rest[..authority_start]);
        match authority.rfind('@') {
            Some(user_end) if authority[..user_end].contains(':') || scheme.starts_with("http") => {
                out.push_str("***");
                out.push_str(&authority[user_end..]);
            }
            _ => out.push_str(authority),
        }
        rest = &rest[authority_start + authority_len..];
    }
    out.push_str(rest);
    out
}

/// What git said, in a line or two.
fn first_lines(stderr: &[u8], stdout: &[u8]) -> String {
    let text = if stderr.iter().any(|b| !b.is_ascii_whitespace()) {
        stderr
    } else {
        stdout
    };
    let text = String::from_utf8_lossy(text);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("hint:"))
        .map(|l| {
            l.trim_start_matches("fatal: ")
                .trim_start_matches("error: ")
        })
        .take(2)
        .collect();
    if lines.is_empty() {
        "no reason given".to_owned()
    } else {
        without_credentials(&lines.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_urls_are_masked() {
        for (text, shown) in [
            (
                "cannot reach http://user:ghp_SECRET@host/repo.git: refused",
                "cannot reach http://***@host/repo.git: refused",
            ),
            (
                "'https://ghp_TOKEN@github.com/me/mem.git/' not found",
                "'https://***@github.com/me/mem.git/' not found",
            ),
            ("ssh://git@host:22/r.git", "ssh://git@host:22/r.git"),
            ("ssh://me:pw@host/r.git", "ssh://***@host/r.git"),
            ("git@github.com:me/r.git", "git@github.com:me/r.git"),
            (
                "/srv/remote.git and https://h/x",
                "/srv/remote.git and https://h/x",
            ),
            ("https://a:b@h", "https://***@h"),
        ] {
            assert_eq!(without_credentials(text), shown, "{text}");
        }
    }

    #[test]
    fn raw_diffs_carry_renames_and_odd_names() {
        let out = b":100644 100644 aaa bbb M\0a.md\0:100644 100644 ccc ddd R086\0old.md\0new \xff.md\0:000000 100644 000 eee A\0n.md\0";
        let changes = parse_raw(out);
        assert_eq!(changes.len(), 3);
        assert_eq!(changes[1].status, 'R');
        assert_eq!(changes[1].path, PathBuf::from("old.md"));
        assert_eq!(
            changes[1].to.as_deref().map(|p| p.as_os_str().as_bytes()),
            Some(&b"new \xff.md"[..])
        );
        assert_eq!(changes[2].new_oid, "eee");
    }

    #[test]
    fn merge_tree_output_gives_the_tree_and_the_stages() {
        let out = b"t1\x00100644 o1 2\tx.md\x00100644 o2 3\tx.md\0\0";
        let (tree, stages) = parse_merge_tree(out).unwrap();
        assert_eq!(tree, "t1");
        assert_eq!(stages.len(), 2);
        assert_eq!(stages[1].stage, 3);
        assert_eq!(stages[1].path, b"x.md");
    }

    #[test]
    fn git_says_why_in_a_line() {
        assert_eq!(
            first_lines(
                b"fatal: '/nowhere' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure",
                b""
            ),
            "'/nowhere' does not appear to be a git repository; Could not read from remote repository."
        );
    }
}
