//! mm-store: per-project session files on disk, `<dir>/<project>/<id>.json`,
//! written whole and atomically, locked while a process holds them, with key
//! values redacted. A file that cannot be read is reported, never silently
//! overwritten.
//!
//! It knows the engine's message types and nothing of any front end: it
//! never prints and never decides what a session means.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod data;
mod error;
mod fsio;
mod pathform;
mod project;
mod store;

pub use data::{
    CheckpointLog, Compaction, SessionData, Subagent, TurnCheckpoint, TurnError, VERSION,
    title_from, title_given,
};
pub use error::StoreError;
pub use mm_redact::REDACTED;
pub use project::project_folder_name;
pub use store::{Found, Listing, Session, SessionInfo, Store, fuzzing};
