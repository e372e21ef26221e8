//! Front ends that reach the operations layer without the mount.
//!
//! Each translates its own protocol into [`ops`](crate::ops) requests and
//! their answers back, and holds no logic about memories: what a command
//! does to the store is decided a layer down. They take the requests'
//! runner as a function, so they work the same over a daemon's control
//! socket (`daemon::Session`) and on a store opened in-process, and they
//! never import `daemon` (which sits above them).

pub mod mcp;
pub mod tool;
