//! mm-engine: the only code that talks to a model server.
//!
//! Owns the provider-neutral messages and tool declarations, the provider
//! registry, streaming, the watchdog, retries, the runaway guard, thinking
//! and summary requests. It never runs a tool, prints, or knows a front end;
//! nothing above it ever sees a provider's JSON.
//!
//! Layout: `providers/*` only build requests and turn their wire format into
//! neutral deltas; `driver` is the one generic loop (streaming, watchdog,
//! retries, fallback, cancellation) for all of them; `assemble` turns deltas
//! into events and the assistant message (tool calls, think tags, guard).

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod answer_loop;
mod assemble;
pub mod cache_watch;
pub mod constrained;
pub mod doctor;
mod driver;
mod engine;
mod error;
mod frames;
#[doc(hidden)]
pub mod fuzzing;
mod overflow;
mod providers;
pub mod runaway;
mod slots;
mod textcalls;
mod think;
pub mod types;
mod window;
mod wire;

#[cfg(test)]
mod fixture_tests;

pub use driver::STALL_NOTICE;
pub use engine::{Engine, Generation};
pub use error::{EngineError, GenerateError, HOW_TO_CHANGE, is_context_length};
pub use overflow::Overflow;
pub use tokio_util::sync::CancellationToken;
pub use types::*;
pub use window::{DISCOVERY_BOUND, Window, WindowSource};
pub use wire::ModelEntry;

/// A fresh prompt-cache key for a new session (random, no user data):
/// see [`Engine::with_cache_key`].
pub fn new_cache_key() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

pub use providers::anthropic::ANSWER_TOOL;
pub use providers::{all_key_vars, key_vars};

/// The names of every registered provider, in registry order.
pub fn known_providers() -> Vec<&'static str> {
    providers::known_providers()
}
