//! `mnemofs model`: the sentence-transformers models that search by
//! meaning uses. `pull` downloads one from the Hugging Face hub into the
//! cache (see `embed::hub`), where a config that names it finds it.
//!
//! One line per file on stdout (downloaded, already there, not in this
//! model), a bar on stderr while a file comes, and at the end the config
//! line that uses the model.

use crate::config::Config;
use crate::embed::hub::{DEFAULT_MODEL, Fetched, Hub, ModelName, PullEvent};
use crate::progress::Progress;

/// The model commands.
#[derive(Debug, clap::Subcommand)]
pub(super) enum ModelCommand {
    /// Download a sentence-transformers model from the Hugging Face hub
    /// ($HF_ENDPOINT, else huggingface.co; $HF_TOKEN for a private or gated
    /// one) into $XDG_CACHE_HOME/mnemofs/models/NAME, each file checked
    /// against the hub's checksum. A file already there with the right
    /// checksum is not downloaded again.
    Pull {
        /// The model: owner/name on the hub.
        #[arg(default_value = DEFAULT_MODEL)]
        name: ModelName,
        /// A branch, tag or commit of the model.
        #[arg(long, default_value = "main")]
        revision: String,
    },
}

pub(super) fn run(command: ModelCommand) -> anyhow::Result<()> {
    match command {
        ModelCommand::Pull { name, revision } => pull(&name, &revision),
    }
}

fn pull(name: &ModelName, revision: &str) -> anyhow::Result<()> {
    let dir = name.folder();
    let mut bar: Option<(Progress, u64)> = None;
    let pulled = Hub::from_env().pull(name, revision, &dir, &mut |event| match event {
        PullEvent::Downloading { file, size } => {
            let mut progress = Progress::bytes(file);
            progress.set(0, size);
            bar = Some((progress, size));
        }
        PullEvent::Received(done) => {
            if let Some((progress, size)) = &mut bar {
                progress.set(done, *size);
            }
        }
        PullEvent::Done { file, outcome } => {
            if let Some((progress, _)) = bar.take() {
                progress.finish();
            }
            match outcome {
                Fetched::Downloaded(bytes) => {
                    println!("{file}: downloaded, {}", indicatif::HumanBytes(bytes));
                }
                Fetched::AlreadyThere => println!("{file}: already there, checksum matches"),
                Fetched::NotInModel => println!("{file}: not in this model"),
            }
        }
    });
    // A failure mid-file leaves no bar above its sentence.
    if let Some((progress, _)) = bar.take() {
        progress.finish();
    }
    pulled?;
    println!("{name} is in {}", dir.display());
    let config = Config::default_path()
        .map(|p| format!(" ({})", p.display()))
        .unwrap_or_default();
    println!("to search by meaning with it, put this line in the config{config}:");
    println!("search: {{model: {name}}}");
    Ok(())
}
