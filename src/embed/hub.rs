//! Models from the Hugging Face hub: `mnemofs model pull` downloads one
//! into the cache, and a config that names a model (`owner/name`) finds it
//! there.
//!
//! The hub serves a file at `{endpoint}/{repo}/resolve/{revision}/{file}`;
//! a large file (kept in git LFS) answers with a redirect to a CDN, which
//! the client follows without the token. The file list with checksums
//! comes from `{endpoint}/api/models/{repo}/revision/{revision}?blobs=true`:
//! an LFS file has a SHA-256, any other file its git blob id (the SHA-1 of
//! `blob <len>\0` and the content). Every file is checked against it.
//!
//! Subtleties:
//! - A file is written to a temp file beside it and renamed into place
//!   once its checksum matches, so an interrupted or corrupt download never
//!   leaves a file under the real name. The temp files are named, not
//!   random: a lock on the folder keeps a second pull out, and the next
//!   pull writes over what an interrupted one left.
//! - A file already there with the right checksum is not downloaded again,
//!   so a second pull only reads the disk.
//! - `HF_ENDPOINT` (a mirror, or a test server) and `HF_TOKEN` are the
//!   variables the hub's own tools read.
//! - Nothing here runs at query time: a daemon only reads the folder.

use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// The model `mnemofs model pull` takes when given none: small (90 MB),
/// English, and the one the recall benchmark measures.
pub const DEFAULT_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The hub when `HF_ENDPOINT` names no other.
const ENDPOINT: &str = "https://huggingface.co";

/// The files a model cannot load without (see the module `embed`).
const REQUIRED: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];

/// The files the loader reads when a model has them.
const OPTIONAL: [&str; 4] = [
    "1_Pooling/config.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
];

/// How long connecting, and then any one read, may take: a stalled
/// download fails instead of hanging.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a file is read between two progress reports.
const CHUNK: usize = 256 << 10;

/// A model's name on the hub: `owner/name`, such as
/// `sentence-transformers/all-MiniLM-L6-v2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelName(String);

impl ModelName {
    /// Reads `owner/name`. Each part is letters, digits, `-`, `_` and `.`,
    /// and starts with neither `.` nor `-`, so a name is always two plain
    /// folders under the cache.
    pub fn parse(text: &str) -> Result<ModelName, String> {
        let part_ok = |part: &str| {
            !part.is_empty()
                && part.len() <= 96
                && !part.starts_with(['.', '-'])
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        match text.split_once('/') {
            Some((owner, name)) if part_ok(owner) && part_ok(name) => {
                Ok(ModelName(text.to_owned()))
            }
            _ => Err(format!(
                "`{text}` is not a model's name on the hub, which is owner/name \
                 (such as {DEFAULT_MODEL})"
            )),
        }
    }

    /// The name as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where `mnemofs model pull` puts it:
    /// `$XDG_CACHE_HOME/mnemofs/models/<owner>/<name>`.
    pub fn folder(&self) -> PathBuf {
        models_dir().join(&self.0)
    }
}

impl fmt::Display for ModelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for ModelName {
    type Err = String;

    fn from_str(text: &str) -> Result<ModelName, String> {
        ModelName::parse(text)
    }
}

/// `$XDG_CACHE_HOME/mnemofs/models` (else `~/.cache/mnemofs/models`).
pub fn models_dir() -> PathBuf {
    crate::dirs::cache_home().join("mnemofs").join("models")
}

/// Whether `dir` has every file a model needs. A pull renames each file
/// into place only once it is whole, so a file there is complete.
pub fn is_pulled(dir: &Path) -> bool {
    REQUIRED.iter().all(|file| dir.join(file).is_file())
}

/// Why a pull failed: each one sentence.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// The hub knows no such model (or it is private or gated, and the
    /// token, if any, does not reach it: the hub answers both alike).
    #[error(
        "the hub has no model {name} at revision {revision} \
         (a private or gated model needs HF_TOKEN)"
    )]
    NoSuchModel {
        /// The model.
        name: String,
        /// The revision asked for.
        revision: String,
    },
    /// The model lacks a file mnemofs needs.
    #[error("the model {name} has no {file}, which mnemofs needs")]
    Lacks {
        /// The model.
        name: String,
        /// The file.
        file: String,
    },
    /// A downloaded file is not what the hub's list says it is.
    #[error(
        "the downloaded {file} does not match the hub's checksum, so it was not kept; pull again"
    )]
    Mismatch {
        /// The file.
        file: String,
    },
    /// The file list says nothing a file could be checked against.
    #[error("the hub's file list gives no checksum for {file}")]
    NoChecksum {
        /// The file.
        file: String,
    },
    /// A request failed, or the hub answered with an error.
    #[error("cannot download {url}: {why}")]
    Http {
        /// What was asked.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// The file list is not the JSON the hub gives.
    #[error("cannot read the hub's file list for {name}: {why}")]
    Listing {
        /// The model.
        name: String,
        /// What went wrong.
        why: String,
    },
    /// Writing into the model's folder failed.
    #[error("cannot write {path}: {error}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// Another pull is writing the same folder.
    #[error("another mnemofs model pull is downloading into {dir}")]
    Busy {
        /// The model's folder.
        dir: PathBuf,
    },
}

/// What a pull reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullEvent<'a> {
    /// `file` is being downloaded: `size` bytes.
    Downloading {
        /// The file, as the hub names it.
        file: &'a str,
        /// Its size.
        size: u64,
    },
    /// So many bytes of the file being downloaded have come.
    Received(u64),
    /// What became of `file`.
    Done {
        /// The file, as the hub names it.
        file: &'a str,
        /// What became of it.
        outcome: Fetched,
    },
}

/// What became of one file of a pull.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetched {
    /// Downloaded and checked: so many bytes.
    Downloaded(u64),
    /// Already in the folder with the right checksum.
    AlreadyThere,
    /// An optional file this model does not have.
    NotInModel,
}

/// The hub's listing of a revision.
#[derive(Debug, Deserialize)]
struct Listing {
    #[serde(default)]
    siblings: Vec<Sibling>,
}

#[derive(Debug, Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<Lfs>,
}

#[derive(Debug, Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

/// What a file must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Checksum {
    /// A git LFS file: the SHA-256 of its content.
    Sha256 { hex: String, size: u64 },
    /// A file kept in git: its blob id.
    GitBlob { hex: String, size: u64 },
}

impl Checksum {
    fn of(sibling: &Sibling) -> Option<Checksum> {
        match (&sibling.lfs, &sibling.blob_id, sibling.size) {
            (Some(lfs), _, _) => Some(Checksum::Sha256 {
                hex: lfs.sha256.to_ascii_lowercase(),
                size: lfs.size,
            }),
            (None, Some(id), Some(size)) => Some(Checksum::GitBlob {
                hex: id.to_ascii_lowercase(),
                size,
            }),
            _ => None,
        }
    }

    fn size(&self) -> u64 {
        match self {
            Checksum::Sha256 { size, .. } | Checksum::GitBlob { size, .. } => *size,
        }
    }

    fn hasher(&self) -> Hasher {
        match self {
            Checksum::Sha256 { .. } => Hasher::Sha256(Sha256::new()),
            Checksum::GitBlob { size, .. } => {
                let mut h = Sha1::new();
                h.update(format!("blob {size}\0").as_bytes());
                Hasher::Sha1(h)
            }
        }
    }

    fn matches(&self, hasher: Hasher, length: u64) -> bool {
        let (Checksum::Sha256 { hex, size } | Checksum::GitBlob { hex, size }) = self;
        length == *size && hasher.hex() == *hex
    }
}

enum Hasher {
    Sha256(Sha256),
    Sha1(Sha1),
}

impl Hasher {
    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha1(h) => h.update(bytes),
        }
    }

    fn hex(self) -> String {
        let digest: Vec<u8> = match self {
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha1(h) => h.finalize().to_vec(),
        };
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A hub to pull models from.
pub struct Hub {
    endpoint: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the token.
        f.debug_struct("Hub")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// The hub `HF_ENDPOINT` names (else huggingface.co), with the token
    /// in `HF_TOKEN`, if set.
    pub fn from_env() -> Hub {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Hub::new(
            var("HF_ENDPOINT").as_deref().unwrap_or(ENDPOINT),
            var("HF_TOKEN"),
        )
    }

    /// The hub at `endpoint`, sending `token` as a bearer token.
    pub fn new(endpoint: &str, token: Option<String>) -> Hub {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_per_read(Some(READ_TIMEOUT))
            .user_agent(format!("mnemofs/{}", env!("CARGO_PKG_VERSION")))
            // The token goes to the hub, not to the CDN it redirects to.
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .build()
            .into();
        Hub {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            token: token.map(|t| t.trim().to_owned()),
            agent,
        }
    }

    fn get(&self, url: &str) -> Result<ureq::http::Response<ureq::Body>, PullError> {
        let mut request = self.agent.get(url);
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        request.call().map_err(|e| PullError::Http {
            url: url.to_owned(),
            why: e.to_string(),
        })
    }

    /// Downloads the files of `name` at `revision` that mnemofs reads into
    /// `into`, checking each against the hub's checksum, and skipping
    /// those already there.
    pub fn pull(
        &self,
        name: &ModelName,
        revision: &str,
        into: &Path,
        report: &mut dyn FnMut(PullEvent<'_>),
    ) -> Result<(), PullError> {
        let listing = self.listing(name, revision)?;
        let find = |file: &str| listing.siblings.iter().find(|s| s.rfilename == file);
        // Every required file is known to be there before anything is
        // written.
        for file in REQUIRED {
            if find(file).is_none() {
                return Err(PullError::Lacks {
                    name: name.to_string(),
                    file: file.to_owned(),
                });
            }
        }
        std::fs::create_dir_all(into).map_err(io(into))?;
        let _lock = lock(into)?;
        for file in REQUIRED.iter().chain(&OPTIONAL) {
            let Some(sibling) = find(file) else {
                report(PullEvent::Done {
                    file,
                    outcome: Fetched::NotInModel,
                });
                continue;
            };
            let checksum = Checksum::of(sibling).ok_or_else(|| PullError::NoChecksum {
                file: (*file).to_owned(),
            })?;
            let outcome = self.fetch(name, revision, file, &checksum, into, report)?;
            if outcome == Fetched::NotInModel && REQUIRED.contains(file) {
                return Err(PullError::Lacks {
                    name: name.to_string(),
                    file: (*file).to_owned(),
                });
            }
            report(PullEvent::Done { file, outcome });
        }
        Ok(())
    }

    fn listing(&self, name: &ModelName, revision: &str) -> Result<Listing, PullError> {
        let url = format!(
            "{}/api/models/{name}/revision/{}?blobs=true",
            self.endpoint,
            escape(revision)
        );
        let response = self.get(&url)?;
        match response.status().as_u16() {
            200 => {}
            // The hub answers 401 for a repository it does not show to
            // this caller, whether or not it exists.
            401 | 404 => {
                return Err(PullError::NoSuchModel {
                    name: name.to_string(),
                    revision: revision.to_owned(),
                });
            }
            status => {
                return Err(PullError::Http {
                    url,
                    why: format!("the hub answered {status}"),
                });
            }
        }
        let text = response
            .into_body()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .map_err(|e| PullError::Http {
                url,
                why: e.to_string(),
            })?;
        serde_json::from_str(&text).map_err(|e| PullError::Listing {
            name: name.to_string(),
            why: e.to_string(),
        })
    }

    /// Brings one file into `into`, unless it is there already.
    fn fetch(
        &self,
        name: &ModelName,
        revision: &str,
        file: &str,
        checksum: &Checksum,
        into: &Path,
        report: &mut dyn FnMut(PullEvent<'_>),
    ) -> Result<Fetched, PullError> {
        let dest = into.join(file);
        if already_there(&dest, checksum) {
            return Ok(Fetched::AlreadyThere);
        }
        let url = format!(
            "{}/{name}/resolve/{}/{file}",
            self.endpoint,
            escape(revision)
        );
        let response = self.get(&url)?;
        match response.status().as_u16() {
            200 => {}
            404 => return Ok(Fetched::NotInModel),
            status => {
                return Err(PullError::Http {
                    url,
                    why: format!("the hub answered {status}"),
                });
            }
        }
        let folder = dest.parent().unwrap_or(into);
        std::fs::create_dir_all(folder).map_err(io(folder))?;
        let temp = Partial::create(&dest).map_err(io(&dest))?;
        let size = checksum.size();
        report(PullEvent::Downloading { file, size });
        let mut body = response.into_body().into_reader();
        let mut hasher = checksum.hasher();
        let mut buf = vec![0; CHUNK];
        let mut received = 0u64;
        let mut out = &temp.file;
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(PullError::Http {
                        url,
                        why: e.to_string(),
                    });
                }
            };
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(io(&temp.path))?;
            received += n as u64;
            report(PullEvent::Received(received));
            // More than the list says: it can only be wrong.
            if received > size {
                break;
            }
        }
        if !checksum.matches(hasher, received) {
            return Err(PullError::Mismatch {
                file: file.to_owned(),
            });
        }
        temp.keep(&dest).map_err(io(&dest))?;
        Ok(Fetched::Downloaded(received))
    }
}

/// The error for a failed write of `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PullError {
    let path = path.to_path_buf();
    move |error| PullError::Io { path, error }
}

/// A revision as one path segment (`refs/pr/1` has slashes).
fn escape(revision: &str) -> String {
    revision
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Whether `dest` is there with the right size and checksum.
fn already_there(dest: &Path, checksum: &Checksum) -> bool {
    let Ok(mut file) = File::open(dest) else {
        return false;
    };
    if file.metadata().map(|m| m.len()).ok() != Some(checksum.size()) {
        return false;
    }
    let mut hasher = checksum.hasher();
    let mut buf = vec![0; CHUNK];
    let mut length = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                length += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    checksum.matches(hasher, length)
}

/// An exclusive lock on the model's folder while a pull writes it.
fn lock(dir: &Path) -> Result<nix::fcntl::Flock<File>, PullError> {
    let path = dir.join(".pull.lock");
    let file = File::create(&path).map_err(io(&path))?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).map_err(
        |(_, errno)| match errno {
            nix::errno::Errno::EWOULDBLOCK => PullError::Busy {
                dir: dir.to_path_buf(),
            },
            errno => PullError::Io {
                path,
                error: errno.into(),
            },
        },
    )
}

/// A download in progress: `.<name>.partial` beside the file it becomes,
/// removed unless kept.
struct Partial {
    path: PathBuf,
    file: File,
    kept: bool,
}

impl Partial {
    fn create(dest: &Path) -> std::io::Result<Partial> {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = dest.with_file_name(format!(".{name}.partial"));
        let file = File::create(&path)?;
        Ok(Partial {
            path,
            file,
            kept: false,
        })
    }

    /// Makes the download durable and gives it its real name.
    fn keep(mut self, dest: &Path) -> std::io::Result<()> {
        self.file.sync_all()?;
        std::fs::rename(&self.path, dest)?;
        self.kept = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_owner_and_name() {
        let name = ModelName::parse("sentence-transformers/all-MiniLM-L6-v2").unwrap();
        assert_eq!(name.as_str(), "sentence-transformers/all-MiniLM-L6-v2");
        assert!(
            name.folder()
                .ends_with("mnemofs/models/sentence-transformers/all-MiniLM-L6-v2")
        );
        assert!(ModelName::parse("BAAI/bge-small-en-v1.5").is_ok());
        for bad in [
            "",
            "minilm",
            "/abs",
            "a/",
            "/b",
            "a/b/c",
            "../x",
            "a/..",
            "a/.hidden",
            "-a/b",
            "a b/c",
            "a/b\0",
        ] {
            assert!(ModelName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_git_blob_id_is_the_sha1_of_its_header_and_content() {
        // `printf 'hello\n' | git hash-object --stdin`
        let checksum = Checksum::GitBlob {
            hex: "ce013625030ba8dba906f756967f9e9ca394464a".into(),
            size: 6,
        };
        let mut h = checksum.hasher();
        h.update(b"hello\n");
        assert!(checksum.matches(h, 6));
        let mut h = checksum.hasher();
        h.update(b"hellO\n");
        assert!(!checksum.matches(h, 6));
    }

    #[test]
    fn revisions_are_one_path_segment() {
        assert_eq!(escape("main"), "main");
        assert_eq!(escape("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(escape("v1.0"), "v1.0");
    }
}
