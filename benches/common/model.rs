//! Where the benches find their embedding model: `MNEMOFS_MODEL`, else
//! the all-MiniLM-L6-v2 the tests unpack under `target/tmp/`.

use std::path::PathBuf;

/// The model's folder (which may not exist: the tests have not run).
pub fn dir() -> PathBuf {
    std::env::var_os("MNEMOFS_MODEL")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tmp/all-MiniLM-L6-v2")
        })
}
