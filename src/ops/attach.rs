//! Putting a file that is not a memory into the store: the images, PDFs
//! and other attachments an ingested note embeds (`![[diagram.png]]`).
//!
//! The counterpart of `import` for bytes: never over anything, and
//! idempotent, so a rerun of an ingest changes nothing. The same bytes
//! already at the path are a duplicate; different bytes there are left
//! alone and the answer says so (an ingest never overwrites what is in
//! the store). Markdown goes through `import`, which gives it an id.

use std::io;

use super::{Error, Operations, Placed, Result};

impl Operations {
    /// Creates `path` with `bytes` unless a file is there; what became of it.
    pub fn attach(&self, path: &str, bytes: &[u8]) -> Placed {
        self.try_attach(path, bytes)
            .unwrap_or_else(|e| Placed::Failed {
                reason: e.to_string(),
            })
    }

    fn try_attach(&self, path: &str, bytes: &[u8]) -> Result<Placed> {
        if path.ends_with(".md") {
            return Err(Error::InvalidPath {
                path: path.into(),
                why: "a markdown file is a memory: import it",
            });
        }
        let real = self.writable(path)?;
        self.check_size(path, bytes.len())?;
        let there = |real| match self.store.read(real) {
            Ok(found) if found == bytes => Ok(Some(Placed::Duplicate {
                path: path.into(),
                differs: false,
            })),
            Ok(_) => Err(Error::InvalidInput(format!(
                "{path}: a different file is already there (left as it is)"
            ))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        };
        if let Some(placed) = there(&real)? {
            return Ok(placed);
        }
        match self.writer.create(&real, bytes) {
            Ok(()) => Ok(Placed::Written { path: path.into() }),
            // Someone put it there meanwhile: the same file, or not.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                there(&real)?.ok_or_else(|| Error::Exists { path: path.into() })
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }
}
