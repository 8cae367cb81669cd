//! mm-tools: the `Tool` interface and the built-in tools the model can call
//! (bash and its background jobs, read_file, write_file, edit_file, grep,
//! glob, read_skill, lsp) and the tools
//! of MCP servers.
//!
//! Tools return failures as text for the model, flagged as failures in
//! their [`ToolOutput`] (never guessed from the text); only the loop
//! detector's second level ends a turn. Tools never talk to a model server
//! and never print: they emit events into the call's Sink.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod bash;
pub mod files;
pub mod glob;
pub mod grep;
pub mod job;
mod lenient;
pub mod lsp;
pub mod mcp;
pub mod output;
pub mod skill;
pub mod tool;
pub mod toolbox;
mod walk;

pub use bash::kill_all_running;
pub use tool::*;
pub use toolbox::{CallOutcome, NOT_RUN, Toolbox, ToolboxSettings};
