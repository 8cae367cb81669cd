//! mm-tools: the `Tool` interface and the built-in tools the model can call
//! (bash and its background jobs, read_file, write_file, edit_file, grep,
//! glob, read_skill, lsp, web_fetch, web_search) and the tools
//! of MCP servers.
//!
//! Tools return failures as text for the model, flagged as failures in
//! their [`ToolOutput`] (never guessed from the text); only the loop
//! detector's second level ends a turn. Tools never talk to a model server
//! and never print: they emit events into the call's Sink.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod bash;
pub mod exit_plan;
pub mod files;
pub mod glob;
pub mod grep;
pub mod image;
pub mod job;
mod lenient;
pub mod lsp;
pub mod mcp;
pub mod output;
pub mod skill;
pub mod todo;
pub mod tool;
pub mod toolbox;
mod walk;
pub mod web;

pub use bash::kill_all_running;
pub use tool::*;
pub use toolbox::{CallOutcome, NOT_RUN, PLAN_MODE, Toolbox, ToolboxSettings};

/// The note the model reads when the mode changes (added to the
/// conversation, never to the system prompt, which stays the same).
pub fn mode_note(mode: mm_types::AgentMode) -> &'static str {
    match mode {
        mm_types::AgentMode::Allow => "[mode: allow — commands and edits run without asking]",
        mm_types::AgentMode::Ask => "[mode: ask — the user is asked before commands and edits run]",
        mm_types::AgentMode::Plan => {
            "[mode: plan — read-only: edits and commands that change things are refused. Read, \
             search and plan; present the plan with exit_plan]"
        }
    }
}
