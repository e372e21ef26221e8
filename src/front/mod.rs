//! Front ends that reach the operations layer without the mount.
//!
//! Each translates its own protocol into [`ops`](crate::ops) requests and
//! their answers back, and holds no logic about memories: what a command
//! does to the store is decided a layer down. They take the requests'
//! runner as a function, so they work the same over a daemon's control
//! socket (`daemon::Session`) and on a store opened in-process, and they
//! never import `daemon` (which sits above them).

pub mod agent;
pub mod batch;
pub mod claude_code;
pub mod claude_summary;
pub mod http;
pub mod ingest;
pub mod input;
pub mod jsonl;
pub mod mcp;
pub mod sync;
pub mod tokens;
pub mod tool;
pub mod tools;
mod vault;

use crate::ops::{self, Request, Response, Scope};

/// A runner whose every request runs in `scope` (none: as `call` runs it).
pub fn in_scope(
    scope: Option<Scope>,
    call: impl Fn(Request) -> ops::Result<Response>,
) -> impl Fn(Request) -> ops::Result<Response> {
    move |request| match &scope {
        Some(scope) => call(Request::Scoped {
            scope: Some(scope.to_string()),
            request: Box::new(request),
        }),
        None => call(request),
    }
}
