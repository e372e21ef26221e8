//! `mnemofs sync`: set a store up for sync with a git remote, and run a
//! round, through the daemon when one serves the store.

use std::path::PathBuf;

use anyhow::bail;

use super::StoreArgs;
use crate::daemon;
use crate::front::sync::{InitOptions, init};
use crate::ops::{Request, Response, SyncReport};

/// `mnemofs sync` and its subcommand.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct SyncArgs {
    #[command(subcommand)]
    command: Option<SyncCommand>,
    #[command(flatten)]
    round: RoundArgs,
}

/// Where a round runs and how it reports.
#[derive(Debug, clap::Args)]
struct RoundArgs {
    #[command(flatten)]
    at: StoreArgs,
    /// Configuration file, used when no daemon serves the store
    /// [default: ~/.config/mnemofs/config.yaml].
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print the round's report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum SyncCommand {
    /// Keep the store in step with REMOTE (a URL, a path, or the name of
    /// a remote its repository has), then run a first round. Makes the
    /// store's repository (`.git` in the store) unless it has one.
    Init {
        /// The git remote.
        remote: String,
        /// A read-only clone (a team's or another machine's store): fetch
        /// and merge, never push.
        #[arg(long)]
        read_only: bool,
        /// This machine's name in commits and conflict copies [default:
        /// the host name].
        #[arg(long)]
        host: Option<String>,
        #[command(flatten)]
        round: RoundArgs,
    },
}

/// Runs `mnemofs sync`.
pub(super) fn run(args: SyncArgs) -> anyhow::Result<()> {
    match args.command {
        Some(SyncCommand::Init {
            remote,
            read_only,
            host,
            round: then,
        }) => {
            let target = then.at.clone().target_made(None)?;
            // A store named for a clone (a team's, read-only) is made here
            // as the default one is: the remote fills it.
            if !target.path.exists() {
                super::make_store(&target.path)?;
            }
            let found = daemon::find(&target)?;
            let options = InitOptions {
                remote: remote.clone(),
                read_only,
                host,
            };
            let name = init(&found.store, &options)?;
            let kind = if read_only {
                "a read-only clone of"
            } else {
                "kept in step with"
            };
            eprintln!(
                "mnemofs: {} is {kind} {} (its git remote {name})",
                found.store.display(),
                crate::front::sync::without_credentials(&remote)
            );
            round(then)
        }
        None => round(args.round),
    }
}

fn round(args: RoundArgs) -> anyhow::Result<()> {
    let RoundArgs { at, config, json } = args;
    let session = super::session(&at.target(None)?, config.as_deref())?;
    let answer = session.call(Request::Sync);
    // Asked for JSON, a round that fails answers in JSON too.
    if json && let Err(e) = &answer {
        println!("{}", serde_json::json!({ "error": e.to_string() }));
    }
    let Response::Synced { report } = answer? else {
        bail!("unexpected answer to sync");
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

fn print_report(report: &SyncReport) {
    println!("{}", report.summary());
    for copy in &report.conflicts {
        println!("conflict: the other side's version is kept as {copy}");
    }
    for kept in &report.kept {
        println!("kept: {kept}");
    }
    for waiting in &report.waiting {
        println!("waiting: {waiting}");
    }
    for left in &report.left_out {
        println!("left out: {left}");
    }
    if !report.conflicts.is_empty() {
        eprintln!(
            "mnemofs: keep what you want of each copy in its memory, then delete the copy \
             (`.mnemofs/lint` and `mnemofs status` list the copies left)"
        );
    }
}
