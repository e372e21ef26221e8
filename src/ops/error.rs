//! The one error type of the operations layer.
//!
//! Every front end shows the same failure its own way: the mount as an
//! errno, the socket and MCP as a JSON-RPC error code, the CLI and the
//! memory tool as the sentence. So each variant carries enough to give all
//! three, and the maps below (errno, code, and the [`Detail`] that carries
//! its values across the socket) are exhaustive matches: a new variant
//! forces a decision about what each caller sees.

use std::io;

use super::Detail;

/// Why an operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing at the path.
    #[error("{path}: no such file or folder")]
    NotFound {
        /// The path as the caller gave it.
        path: String,
    },
    /// Something is already at the path.
    #[error("{path}: already exists")]
    Exists {
        /// The path as the caller gave it.
        path: String,
    },
    /// A folder where a file was required.
    #[error("{path}: is a folder")]
    IsFolder {
        /// The path as the caller gave it.
        path: String,
    },
    /// A file where a folder was required.
    #[error("{path}: is not a folder")]
    NotFolder {
        /// The path as the caller gave it.
        path: String,
    },
    /// A path that leaves the store or is not a valid name.
    #[error("invalid path {path:?}: {why}")]
    InvalidPath {
        /// The path as the caller gave it.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A request whose arguments make no sense.
    #[error("{0}")]
    InvalidInput(String),
    /// What a scoped session may not do to other scopes' memories (give
    /// one a scope it may not see, move a folder that holds them).
    #[error("{0}")]
    OtherScope(String),
    /// A virtual path (a view), which cannot be written.
    #[error("{path}: read-only ({why})")]
    ReadOnly {
        /// The path as the caller gave it.
        path: String,
        /// Why it is read-only.
        why: &'static str,
    },
    /// A file that is not text.
    #[error("{path}: not a UTF-8 text file")]
    NotText {
        /// The path as the caller gave it.
        path: String,
    },
    /// The file or the request is over the size cap.
    #[error("{path}: larger than the size cap of {limit} bytes")]
    TooBig {
        /// The path as the caller gave it.
        path: String,
        /// The cap.
        limit: u64,
    },
    /// The text to replace does not occur in the file.
    #[error("{path}: the text to replace does not occur in the file")]
    NoMatch {
        /// The path as the caller gave it.
        path: String,
    },
    /// The text to replace occurs more than once.
    #[error("{path}: the text to replace occurs {} times (lines {})", lines.len(), join(lines))]
    NotUnique {
        /// The path as the caller gave it.
        path: String,
        /// The 1-based line of each occurrence.
        lines: Vec<usize>,
    },
    /// A line number outside the file.
    #[error("{path}: line {line} is outside the file (0 to {lines})")]
    BadLine {
        /// The path as the caller gave it.
        path: String,
        /// The line asked for.
        line: i64,
        /// The number of lines in the file.
        lines: usize,
    },
    /// A reference (id, path, title or alias) that names several memories.
    #[error("{reference:?} names {} memories: {}", candidates.len(), candidates.join(", "))]
    Ambiguous {
        /// The reference as given.
        reference: String,
        /// The paths it could mean.
        candidates: Vec<String>,
    },
    /// The file changed, or was open for writing, while the operation ran.
    #[error("{path}: changed while it was being edited; read it again and retry")]
    Conflict {
        /// The path as the caller gave it.
        path: String,
    },
    /// Something the operation needs is not running here.
    #[error("{0}")]
    Unavailable(String),
    /// The daemon that served the store went away before it took the
    /// request: nothing was done, and the request may be sent again to
    /// whoever serves the store now.
    #[error("{0}")]
    Unreached(String),
    /// The search index failed.
    #[error("search index: {0}")]
    Index(String),
    /// The daemon that serves the store refused; as it said.
    #[error("{}", .0.message)]
    Remote(super::WireError),
    /// The store refused; carries the kernel's errno.
    #[error("{path}: {error}")]
    Io {
        /// The path as the caller gave it.
        path: String,
        /// What the kernel said.
        error: io::Error,
    },
}

fn join(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// JSON-RPC error codes. The standard ones, and the server range
/// (-32000 to -32099) for what the standard does not name.
pub mod rpc {
    /// The line is not JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON is not a JSON-RPC request.
    pub const INVALID_REQUEST: i32 = -32600;
    /// No such method (or tool).
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// The request's parameters are invalid.
    pub const INVALID_PARAMS: i32 = -32602;
    /// The server failed.
    pub const INTERNAL: i32 = -32603;
    /// Nothing at the path or reference.
    pub const NOT_FOUND: i32 = -32001;
    /// The path is taken.
    pub const EXISTS: i32 = -32002;
    /// Retry: the file changed meanwhile.
    pub const CONFLICT: i32 = -32003;
    /// The path cannot be written.
    pub const READ_ONLY: i32 = -32004;
    /// The reference names several memories.
    pub const AMBIGUOUS: i32 = -32005;
    /// Not available on this server.
    pub const UNAVAILABLE: i32 = -32006;
}

impl Error {
    /// The errno a filesystem caller sees.
    pub fn errno(&self) -> i32 {
        match self {
            Error::NotFound { .. } => libc::ENOENT,
            Error::Exists { .. } => libc::EEXIST,
            Error::IsFolder { .. } => libc::EISDIR,
            Error::NotFolder { .. } => libc::ENOTDIR,
            Error::InvalidPath { .. } => libc::EINVAL,
            Error::InvalidInput(_) => libc::EINVAL,
            Error::OtherScope(_) => libc::EPERM,
            Error::ReadOnly { .. } => libc::EROFS,
            Error::NotText { .. } => libc::EINVAL,
            Error::TooBig { .. } => libc::EFBIG,
            Error::NoMatch { .. } => libc::EINVAL,
            Error::NotUnique { .. } => libc::EINVAL,
            Error::BadLine { .. } => libc::EINVAL,
            Error::Ambiguous { .. } => libc::EINVAL,
            Error::Conflict { .. } => libc::EAGAIN,
            Error::Unavailable(_) | Error::Unreached(_) => libc::ENOTSUP,
            Error::Index(_) => libc::EIO,
            Error::Remote(e) => e.errno,
            Error::Io { error, .. } => error.raw_os_error().unwrap_or(libc::EIO),
        }
    }

    /// The JSON-RPC error code a socket or MCP caller sees.
    pub fn rpc_code(&self) -> i32 {
        match self {
            Error::NotFound { .. } => rpc::NOT_FOUND,
            Error::Exists { .. } => rpc::EXISTS,
            Error::IsFolder { .. } => rpc::INVALID_PARAMS,
            Error::NotFolder { .. } => rpc::INVALID_PARAMS,
            Error::InvalidPath { .. } => rpc::INVALID_PARAMS,
            Error::InvalidInput(_) | Error::OtherScope(_) => rpc::INVALID_PARAMS,
            Error::ReadOnly { .. } => rpc::READ_ONLY,
            Error::NotText { .. } => rpc::INVALID_PARAMS,
            Error::TooBig { .. } => rpc::INVALID_PARAMS,
            Error::NoMatch { .. } => rpc::INVALID_PARAMS,
            Error::NotUnique { .. } => rpc::INVALID_PARAMS,
            Error::BadLine { .. } => rpc::INVALID_PARAMS,
            Error::Ambiguous { .. } => rpc::AMBIGUOUS,
            Error::Conflict { .. } => rpc::CONFLICT,
            Error::Unavailable(_) | Error::Unreached(_) => rpc::UNAVAILABLE,
            Error::Index(_) => rpc::INTERNAL,
            Error::Remote(e) => e.code,
            Error::Io { error, .. } => match error.raw_os_error() {
                Some(libc::ENOENT) => rpc::NOT_FOUND,
                Some(libc::EEXIST) => rpc::EXISTS,
                Some(libc::EROFS) => rpc::READ_ONLY,
                Some(libc::EINVAL | libc::ENAMETOOLONG | libc::EISDIR | libc::ENOTDIR) => {
                    rpc::INVALID_PARAMS
                }
                _ => rpc::INTERNAL,
            },
        }
    }

    /// The variant and its values, as data that crosses the socket.
    pub fn detail(&self) -> Detail {
        match self {
            Error::NotFound { path } => Detail::NotFound { path: path.clone() },
            Error::Exists { path } => Detail::Exists { path: path.clone() },
            Error::IsFolder { path } => Detail::IsFolder { path: path.clone() },
            Error::NotFolder { path } => Detail::NotFolder { path: path.clone() },
            Error::InvalidPath { path, .. } => Detail::InvalidPath { path: path.clone() },
            Error::InvalidInput(_) => Detail::InvalidInput,
            Error::OtherScope(_) => Detail::OtherScope,
            Error::ReadOnly { path, .. } => Detail::ReadOnly { path: path.clone() },
            Error::NotText { path } => Detail::NotText { path: path.clone() },
            Error::TooBig { path, limit } => Detail::TooBig {
                path: path.clone(),
                limit: *limit,
            },
            Error::NoMatch { path } => Detail::NoMatch { path: path.clone() },
            Error::NotUnique { path, lines } => Detail::NotUnique {
                path: path.clone(),
                lines: lines.clone(),
            },
            Error::BadLine { path, line, lines } => Detail::BadLine {
                path: path.clone(),
                line: *line,
                lines: *lines,
            },
            Error::Ambiguous {
                reference,
                candidates,
            } => Detail::Ambiguous {
                reference: reference.clone(),
                candidates: candidates.clone(),
            },
            Error::Conflict { path } => Detail::Conflict { path: path.clone() },
            Error::Unavailable(_) | Error::Unreached(_) => Detail::Unavailable,
            Error::Index(_) => Detail::Index,
            Error::Remote(_) => Detail::Remote,
            Error::Io { path, .. } => Detail::Io { path: path.clone() },
        }
    }

    /// An error from the store at `path`, named by the errno where a
    /// variant says it better than the kernel's words.
    pub fn io(path: impl std::fmt::Display, source: io::Error) -> Error {
        let path = path.to_string();
        match source.raw_os_error() {
            Some(libc::ENOENT) => Error::NotFound { path },
            Some(libc::EEXIST) => Error::Exists { path },
            Some(libc::EISDIR) => Error::IsFolder { path },
            Some(libc::ENOTDIR) => Error::NotFolder { path },
            Some(libc::EFBIG) => Error::TooBig { path, limit: 0 },
            _ => Error::Io {
                path,
                error: source,
            },
        }
    }

    /// True for outcomes callers cause all the time (logged at debug).
    pub fn is_routine(&self) -> bool {
        !matches!(
            self,
            Error::Io { .. }
                | Error::Index(_)
                | Error::Unavailable(_)
                | Error::Unreached(_)
                | Error::Remote(_)
        )
    }
}

/// Result of an operation.
pub type Result<T> = std::result::Result<T, Error>;

/// The category `name` names, or an error that lists the categories.
pub(crate) fn category(name: &str) -> Result<crate::memory::Category> {
    name.parse().map_err(|e: crate::memory::UnknownName| {
        let all: Vec<&str> = crate::memory::Category::ALL
            .iter()
            .map(|c| c.as_str())
            .collect();
        Error::InvalidInput(format!("{e}; the categories are {}", all.join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_keep_their_errno_and_get_a_code() {
        let e = Error::io("a.md", io::Error::from_raw_os_error(libc::ENOENT));
        assert!(matches!(e, Error::NotFound { .. }));
        assert_eq!((e.errno(), e.rpc_code()), (libc::ENOENT, rpc::NOT_FOUND));
        let e = Error::io("a.md", io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!((e.errno(), e.rpc_code()), (libc::EACCES, rpc::INTERNAL));
        assert_eq!(e.to_string(), "a.md: Permission denied (os error 13)");
    }

    #[test]
    fn views_are_read_only_file_systems() {
        let e = Error::ReadOnly {
            path: "search/x".into(),
            why: "a view",
        };
        assert_eq!((e.errno(), e.rpc_code()), (libc::EROFS, rpc::READ_ONLY));
    }

    #[test]
    fn messages_are_one_sentence() {
        let e = Error::NotUnique {
            path: "a.md".into(),
            lines: vec![2, 7],
        };
        assert_eq!(
            e.to_string(),
            "a.md: the text to replace occurs 2 times (lines 2, 7)"
        );
    }
}
