//! Bearer tokens for MCP over HTTP.
//!
//! `mnemofs token create` makes one: 32 random bytes, shown once, kept
//! only as their SHA-256 in the state dir's `tokens.json` (0600), with a
//! name and the scope every call made with it runs in. The HTTP server
//! looks a presented token up by its hash and gives its calls that scope,
//! whatever they ask for, so a remote agent cannot widen it. The file is
//! read again whenever it changes, so a revoked token stops working at
//! its next request, without a restart.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ops::Scope;

/// The file in the state dir.
const FILE: &str = "tokens.json";

/// How a token starts, so that it is recognised in a config or a log.
const PREFIX: &str = "mnemofs_";

/// What a token reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Every memory, as the store's owner on this machine.
    All,
    /// What a session in this scope sees (`global` or `agent:NAME`).
    Scope(Scope),
}

impl Reach {
    /// `all`, `global` or `agent:NAME`.
    pub fn parse(text: &str) -> Result<Reach, String> {
        if text.trim().eq_ignore_ascii_case("all") {
            return Ok(Reach::All);
        }
        Scope::parse(text)
            .map(Reach::Scope)
            .map_err(|_| format!("{text:?} is not a token's reach: use agent:NAME, global or all"))
    }

    /// The scope calls run in; none for the owner's.
    pub fn scope(&self) -> Option<&Scope> {
        match self {
            Reach::All => None,
            Reach::Scope(scope) => Some(scope),
        }
    }
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reach::All => f.write_str("all"),
            Reach::Scope(scope) => write!(f, "{scope}"),
        }
    }
}

/// One token as kept: never the token itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TokenRecord {
    /// The first 12 hex digits of the hash: how `list` and `revoke` name it.
    pub id: String,
    /// A name given when it was made.
    pub name: String,
    /// `all`, `global` or `agent:NAME`.
    pub scope: String,
    /// SHA-256 of the token, in hex.
    pub sha256: String,
    /// When it was made (RFC 3339).
    pub created: String,
}

/// What a request carrying a known token may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The token's id.
    pub token: String,
    /// What its calls reach.
    pub reach: Reach,
}

/// The tokens of one store, read from its state dir.
#[derive(Debug)]
pub struct TokenBook {
    path: PathBuf,
    /// The records, and the file's identity when they were read.
    loaded: Mutex<(Option<Stamp>, Vec<TokenRecord>)>,
}

/// Enough of a file's metadata to see that it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        inode: meta.ino(),
    })
}

impl TokenBook {
    /// The tokens kept in `state_dir`.
    pub fn in_state_dir(state_dir: &Path) -> TokenBook {
        TokenBook {
            path: state_dir.join(FILE),
            loaded: Mutex::new((None, Vec::new())),
        }
    }

    /// Where they are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every token, oldest first. A missing file is none; a file that
    /// does not read is an error, not an empty list.
    pub fn list(&self) -> io::Result<Vec<TokenRecord>> {
        let mut loaded = self.loaded.lock();
        let now = stamp(&self.path);
        if now.is_none() || now != loaded.0 {
            loaded.1 = read_records(&self.path)?;
            loaded.0 = now;
        }
        Ok(loaded.1.clone())
    }

    /// Makes a token; returns its record and the token, which is not kept.
    pub fn create(&self, name: &str, reach: &Reach) -> io::Result<(TokenRecord, String)> {
        let name = name.trim();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a token's name must be a line of text",
            ));
        }
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(io::Error::other)?;
        let token = format!("{PREFIX}{}", hex(&secret));
        let sha256 = hex(&Sha256::digest(token.as_bytes()));
        let record = TokenRecord {
            id: sha256[..12].to_string(),
            name: name.to_string(),
            scope: reach.to_string(),
            sha256,
            created: jiff::Timestamp::now()
                .round(jiff::Unit::Second)
                .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string()),
        };
        let _lock = self.lock_file()?;
        let mut records = read_records(&self.path)?;
        if records.iter().any(|r| r.name == record.name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("a token is already named {:?}", record.name),
            ));
        }
        records.push(record.clone());
        self.save(&records)?;
        Ok((record, token))
    }

    /// Revokes the token with this id or name; returns its record.
    pub fn revoke(&self, which: &str) -> io::Result<TokenRecord> {
        let _lock = self.lock_file()?;
        let mut records = read_records(&self.path)?;
        let Some(at) = records
            .iter()
            .position(|r| r.id == which || r.name == which)
        else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no token has the id or name {which:?}"),
            ));
        };
        let gone = records.remove(at);
        self.save(&records)?;
        Ok(gone)
    }

    /// What a presented token may do; none if it is not one of these.
    /// A file that does not read grants nothing.
    pub fn check(&self, presented: &str) -> Option<Grant> {
        let hash = hex(&Sha256::digest(presented.as_bytes()));
        let records = match self.list() {
            Ok(records) => records,
            Err(e) => {
                tracing::error!("{}: {e}; every token is refused", self.path.display());
                return None;
            }
        };
        // Every record is compared in full, so the time taken says nothing
        // about how much of a hash matched.
        let mut found = None;
        for record in &records {
            if same(record.sha256.as_bytes(), hash.as_bytes()) {
                found = Some(record);
            }
        }
        let record = found?;
        match Reach::parse(&record.scope) {
            Ok(reach) => Some(Grant {
                token: record.id.clone(),
                reach,
            }),
            Err(e) => {
                tracing::error!("token {}: {e}; refused", record.id);
                None
            }
        }
    }

    fn save(&self, records: &[TokenRecord]) -> io::Result<()> {
        let mut text = serde_json::to_string_pretty(records).map_err(io::Error::other)?;
        text.push('\n');
        crate::store::counters::write_atomically(&self.path, text.as_bytes())
    }

    /// Holds `tokens.json.lock` while a change is read, made and written.
    fn lock_file(&self) -> io::Result<fs::File> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir)?;
        }
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.path.with_extension("json.lock"))?;
        // SAFETY: a valid descriptor; the lock goes with the file.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(lock)
    }
}

fn read_records(path: &Path) -> io::Result<Vec<TokenRecord>> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} does not read as tokens: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Equal bytes, in a time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_hashed_and_checks_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let book = TokenBook::in_state_dir(dir.path());
        let reach = Reach::parse("agent:alice").unwrap();
        let (record, token) = book.create("laptop", &reach).unwrap();
        assert!(token.starts_with(PREFIX) && token.len() == PREFIX.len() + 64);
        let kept = fs::read_to_string(book.path()).unwrap();
        assert!(!kept.contains(&token[PREFIX.len()..]), "{kept}");
        assert!(kept.contains(&record.sha256));
        let grant = book.check(&token).unwrap();
        assert_eq!(grant.reach, reach);
        assert_eq!(grant.token, record.id);
        assert_eq!(book.check("mnemofs_0000"), None);
        assert_eq!(book.check(""), None);
        // Another process's book sees the revocation at once.
        let other = TokenBook::in_state_dir(dir.path());
        assert_eq!(other.revoke("laptop").unwrap().id, record.id);
        assert_eq!(book.check(&token), None);
        assert!(book.revoke("laptop").is_err());
    }

    #[test]
    fn names_and_reaches_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let book = TokenBook::in_state_dir(dir.path());
        assert!(book.create(" ", &Reach::All).is_err());
        book.create("ci", &Reach::All).unwrap();
        assert_eq!(
            book.create("ci", &Reach::All).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(Reach::parse("ALL"), Ok(Reach::All));
        assert!(Reach::parse("agent:").is_err());
        assert!(Reach::parse("everyone").is_err());
        assert_eq!(book.list().unwrap().len(), 1);
    }

    #[test]
    fn a_file_that_does_not_read_grants_nothing_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let book = TokenBook::in_state_dir(dir.path());
        fs::write(book.path(), "{ not json").unwrap();
        assert_eq!(book.check("mnemofs_x"), None);
        assert!(book.create("x", &Reach::All).is_err());
        assert_eq!(fs::read_to_string(book.path()).unwrap(), "{ not json");
    }
}
