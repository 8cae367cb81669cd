//! mm-agent: the turn: system prompt, model, tools, history, compaction,
//! the command table (built-in and custom commands), instructions files,
//! mentions and the version.
//!
//! Front ends (and other Rust programs) build an [`Agent`] from settings,
//! send it questions with their own [`mm_ui::Sink`], and read its history.
//! It never prints: everything a user sees travels as an event.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
mod builder;
pub mod checkpoint;
pub mod commands;
pub mod compact;
pub mod history;
mod hooks;
pub mod instructions;
pub mod keys;
#[cfg(feature = "cli")]
pub mod logging;
pub mod mcp;
pub mod mention;
pub mod permissions;
pub mod prompt;
mod ran;
pub mod schema;
pub mod start;
pub mod subagent;
pub mod tools;
pub mod version;

pub use agent::{
    Agent, AgentError, INTERRUPTED, NOT_RUN, PermissionSource, SessionList, TurnReport, Unreadable,
    list_sessions, scan_sessions,
};
pub use builder::AgentBuilder;
pub use futures::future::BoxFuture;
pub use keys::take_keys;
pub use mcp::EditorServer;
pub use mm_config as config;
pub mod doctor;
pub use mm_engine::{Image, Message, ModelEntry, ToolCall, Usage, Window, WindowSource};
pub use mm_store::{Found, SessionInfo, StoreError};
pub use mm_ui as ui;
pub use mm_ui::{Decision, Event, FailureKind, Sink, ToolInfo, TurnError, TurnOutcome};
pub use schema::OutputSchema;
pub use start::{EXIT_START, StartError};
pub use tokio_util::sync::CancellationToken;
pub use version::version;

/// Kill every running tool process group and MCP server. Front ends call
/// it when mm ends: on exit, SIGTERM, SIGHUP, or ACP's stdin closing.
pub fn shutdown() {
    mm_tools::kill_all_running();
    mm_mcp::kill_all();
}
