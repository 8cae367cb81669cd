//! mm-repl: the terminal front end of mm — the line REPL and the one-shot
//! mode for scripts (`mm-repl -p "question"`).
//!
//! It owns the flags, the terminal [`Sink`](mm_ui::Sink) (what a person sees:
//! streamed answers, `🛠️  bash:` lines, previews, the spinner, the a/s/r
//! permission prompt), the JSON event stream, the key watcher that cancels a
//! turn, and the REPL loop with its history and completion.
//!
//! It stands only on `mm-agent`, `mm-ui` and `mm-config` (plus `mm-mock` for
//! `--demo`). It must never reach into a provider or a tool's internals, and
//! never write human text to stdout in one-shot mode except the answer.

pub mod cli;
pub mod complete;
pub mod doctor;
pub mod exit;
pub mod json;
pub mod keys;
pub mod oneshot;
pub mod picker;
pub mod repl;
pub mod run;
pub mod screen;
pub mod style;
pub mod term;
