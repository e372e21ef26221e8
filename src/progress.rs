//! Progress of long commands (`reindex`, an offline `dream`, `ingest`,
//! `import`, `model pull`) on a terminal, drawn by `indicatif` on stderr.
//! When stderr is not a terminal nothing is drawn, so piped output holds
//! only the command's own lines.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// How often a bar or spinner redraws on its own.
const TICK: Duration = Duration::from_millis(100);

/// A bar counting `unit`s towards a total set later ([`Progress::set`]);
/// a spinner with `message` until then.
pub struct Progress {
    bar: ProgressBar,
    unit: Unit,
    counting: bool,
}

/// What a bar counts.
#[derive(Clone, Copy)]
enum Unit {
    /// Things, named so.
    Items(&'static str),
    /// Bytes, shown as KiB, MiB... with the rate.
    Bytes,
}

impl Progress {
    /// Starts a spinner that says `message` (nothing off a terminal).
    pub fn start(message: &str, unit: &'static str) -> Progress {
        Progress::spinner(message, Unit::Items(unit))
    }

    /// [`Progress::start`] for a bar that counts bytes (a download).
    pub fn bytes(message: &str) -> Progress {
        Progress::spinner(message, Unit::Bytes)
    }

    fn spinner(message: &str, unit: Unit) -> Progress {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            // A fixed template: the fallback is never used.
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message.to_owned());
        bar.enable_steady_tick(TICK);
        Progress {
            bar,
            unit,
            counting: false,
        }
    }

    /// `done` of `total` units: the spinner becomes a bar.
    pub fn set(&mut self, done: u64, total: u64) {
        if !self.counting {
            self.counting = true;
            let template = match self.unit {
                Unit::Items(unit) => {
                    format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{eta}} left)")
                }
                Unit::Bytes => "{msg} [{bar:30}] {bytes}/{total_bytes} \
                                ({bytes_per_sec}, {eta} left)"
                    .to_owned(),
            };
            self.bar.set_style(
                // The unit is plain text: the fallback is never used.
                ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
        }
        self.bar.set_length(total);
        self.bar.set_position(done);
    }

    /// Says what is being done now.
    pub fn say(&self, message: &str) {
        self.bar.set_message(message.to_owned());
    }

    /// Clears the bar; the command then prints its own summary.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }

    /// Whether anything is drawn (stderr is a terminal).
    pub fn is_drawn(&self) -> bool {
        !self.bar.is_hidden()
    }
}
