//! Whether a sweep for temp files a crash left is needed: a file in the
//! state dir, `clean-exit`, that exists only while no process holding the
//! store lock may have left a temp file of its own in the store.
//!
//! The sweep is a walk of every folder of the store (a thousand folders
//! for 100k notes: most of a one-shot command's time), and it finds
//! nothing unless a writer died between writing a temp file and renaming
//! it. So a process under the store lock forgets the clean exit before its
//! first temp file ([`Store::before_first_temp`](super::Store::before_first_temp))
//! and records it again when it ends cleanly; a command that starts and
//! finds the record skips the sweep. A command that never writes leaves
//! the record as it found it.
//!
//! Subtleties:
//! - Forgetting is durable (unlink, then fsync of the state dir) before
//!   the temp file exists: after a power cut the record is gone whenever
//!   the temp file survived.
//! - No record means "sweep": a new state dir, an older mnemofs, a daemon
//!   (which sweeps at its own start and never records), a crash, or a
//!   panic all lead to one sweep at the next start.
//! - The record is per state dir: a daemon started with another
//!   `--state-dir` forgets its own record, not this one.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// Name of the record in the state dir.
pub const CLEAN_EXIT_FILE: &str = "clean-exit";

/// The clean-exit record of one state dir.
#[derive(Debug, Clone)]
pub struct CleanExit {
    path: PathBuf,
}

impl CleanExit {
    /// The record in `state_dir` (which must exist to record).
    pub fn in_state_dir(state_dir: &Path) -> CleanExit {
        CleanExit {
            path: state_dir.join(CLEAN_EXIT_FILE),
        }
    }

    /// Whether the last process under the store lock with this state dir
    /// ended without leaving temp files of its own.
    pub fn recorded(&self) -> bool {
        self.path.exists()
    }

    /// Forgets the record, durably: call before writing a temp file.
    pub fn forget(&self) -> io::Result<()> {
        match fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
        match self.path.parent() {
            Some(dir) => File::open(dir)?.sync_all(),
            None => Ok(()),
        }
    }

    /// Records a clean end: every temp file this process made is gone, and
    /// so is every one a sweep looked for.
    pub fn record(&self) -> io::Result<()> {
        File::create(&self.path).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_until_forgotten_and_forgetting_twice_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let record = CleanExit::in_state_dir(dir.path());
        assert!(!record.recorded());
        record.record().unwrap();
        assert!(record.recorded());
        record.forget().unwrap();
        assert!(!record.recorded());
        record.forget().unwrap();
    }
}
