//! Serving agents that are not local processes: `mnemofs token` and the
//! options of MCP over HTTP (`mnemofs mcp --http`).

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{Context, bail};

use super::StoreArgs;
use crate::config::McpSettings;
use crate::front::http::{Access, HttpOptions};
use crate::front::tokens::{Reach, TokenBook};

/// How `mnemofs mcp` listens over HTTP.
#[derive(Debug, clap::Args)]
pub(super) struct HttpArgs {
    /// Serve MCP over streamable HTTP at ADDR (`127.0.0.1:8765`; port 0
    /// picks one) instead of stdin and stdout, until stopped. Every call
    /// needs a bearer token (`mnemofs token create`) and runs in its
    /// scope.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Let a browser page from this origin call
    /// (`https://app.example.com:443`); repeatable. Without it, a request
    /// that carries an Origin header is refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub origins: Vec<String>,
    /// A host name clients reach the server by, beyond the loopback ones;
    /// repeatable. Without it, a server on a loopback address answers only
    /// to loopback names, and one on another address to any name.
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub hosts: Vec<String>,
    /// Serve without tokens: allowed on a loopback address only, where
    /// every local user can then reach the whole store.
    #[arg(long, requires = "http")]
    pub no_auth: bool,
}

impl HttpArgs {
    /// The server's options; tokens come from `state_dir`, and the
    /// config's allowed origins and hosts join the ones given here.
    pub(super) fn options(
        &self,
        addr: SocketAddr,
        state_dir: &Path,
        settings: &McpSettings,
    ) -> HttpOptions {
        let joined = |given: &[String], configured: &[String]| {
            let mut all = given.to_vec();
            all.extend(configured.iter().cloned());
            all
        };
        HttpOptions {
            addr,
            access: if self.no_auth {
                Access::Open
            } else {
                Access::Tokens(TokenBook::in_state_dir(state_dir))
            },
            origins: joined(&self.origins, &settings.allow_origins),
            hosts: joined(&self.hosts, &settings.allow_hosts),
        }
    }
}

/// The token commands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum TokenCommand {
    /// Make a bearer token for MCP over HTTP and print it, once: only its
    /// hash is kept, in the store's state dir.
    Create {
        /// A name to tell it by (`laptop`, `ci`).
        name: String,
        /// What its calls reach: agent:NAME (global memories and that
        /// agent's), global (global memories only) or all (every memory,
        /// as the owner).
        #[arg(long, value_parser = parse_reach)]
        scope: Reach,
        #[command(flatten)]
        at: StoreArgs,
    },
    /// List the tokens: id, name, scope, when made (never the tokens).
    List {
        /// One JSON array.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        at: StoreArgs,
    },
    /// Revoke a token by id or name; a running server refuses it at once.
    Revoke {
        /// Its id (from `list`) or name.
        token: String,
        #[command(flatten)]
        at: StoreArgs,
    },
}

fn parse_reach(text: &str) -> Result<Reach, String> {
    Reach::parse(text)
}

pub(super) fn run(command: TokenCommand) -> anyhow::Result<()> {
    let (TokenCommand::Create { at, .. }
    | TokenCommand::List { at, .. }
    | TokenCommand::Revoke { at, .. }) = &command;
    let state_dir = at.clone().target(None)?.state_dir()?;
    let book = TokenBook::in_state_dir(&state_dir);
    match command {
        TokenCommand::Create { name, scope, .. } => {
            crate::daemon::make_state_dir(&state_dir)?;
            let (record, token) = book
                .create(&name, &scope)
                .with_context(|| format!("cannot make a token in {}", book.path().display()))?;
            eprintln!(
                "token {} ({}), scope {}: shown this once, keep it secret",
                record.id, record.name, record.scope
            );
            println!("{token}");
        }
        TokenCommand::List { json, .. } => {
            let records = book.list()?;
            if json {
                let shown: Vec<_> = records
                    .iter()
                    .map(|r| {
                        serde_json::json!({
                            "id": r.id, "name": r.name, "scope": r.scope, "created": r.created,
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(shown));
            } else if records.is_empty() {
                println!("no tokens");
            } else {
                for r in &records {
                    println!("{}  {}  {}  {}", r.id, r.name, r.scope, r.created);
                }
            }
        }
        TokenCommand::Revoke { token, .. } => match book.revoke(&token) {
            Ok(gone) => println!("revoked {} ({})", gone.id, gone.name),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("{e}"),
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot revoke in {}", book.path().display()));
            }
        },
    }
    Ok(())
}
