//! mnemofs: an agent's long-term memory, mounted as an ordinary directory tree.
//!
//! The crate is split by responsibility (see ARCHITECTURE.md):
//! `store` owns the backing directory, `memory` parses memory files,
//! `fs` adapts the store to FUSE, `daemon` runs a mount's lifecycle and
//! `cli` is the command-line front end. Only `fs` and `daemon` know FUSE.

#![warn(missing_docs, unreachable_pub, rust_2018_idioms)]

pub mod alloc;
pub mod background;
pub mod cli;
pub mod config;
pub mod daemon;
mod dirs;
pub mod embed;
pub mod front;
pub mod fs;
pub mod index;
pub mod memory;
pub mod ops;
pub mod process;
pub mod progress;
pub mod store;
pub mod tasks;
pub mod views;
