//! mm-engine: the only code that talks to a model server.
//!
//! Owns the provider-neutral messages and tool declarations, the provider
//! registry, streaming, the watchdog, retries, the runaway guard, thinking
//! and summary requests. It never runs a tool, prints, or knows a front end.

pub mod types;

pub use types::*;
