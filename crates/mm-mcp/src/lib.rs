//! mm-mcp: the Model Context Protocol client behind MCP tools. It starts
//! the servers a session names (child processes over stdio, or
//! streamable-HTTP endpoints), lists their tools, calls them with a timeout
//! and cancellation, and shapes results as text.
//!
//! It must never know the model or the sink: declaring the tools, asking
//! permission and showing calls is the business of the crates above. Every
//! failure is one line that says why, for the model or the user to read.
//!
//! Built on `rmcp`, the official SDK, client side only. Child processes get
//! the treatment of every child of mm (mm-child): their own process group,
//! the parent-death signal, a death guard for what they fork, and
//! [`kill_all`] when mm ends.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod error;
pub mod hub;
mod server;
pub mod shape;
pub mod spec;
mod stdio;

pub use error::McpError;
pub use hub::{Hub, State, Status};
pub use rmcp::model::JsonObject;
pub use server::{Server, Timeouts, ToolDef};
pub use shape::{CallOutput, Picture};
pub use spec::{MIN_SECRET_LEN, ServerSpec, TransportSpec, expand};
pub use stdio::{MAX_LINE, kill_all};

/// `text` with every one of `secrets` replaced by `[redacted]` (longest
/// first, so that a secret containing another goes whole).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut sorted: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_string();
    for s in sorted {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "[redacted]");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn redaction_takes_the_longest_first() {
        let secrets = vec!["abcdefgh".to_string(), "Bearer abcdefgh".to_string()];
        assert_eq!(
            super::redact("h: Bearer abcdefgh; t=abcdefgh", &secrets),
            "h: [redacted]; t=[redacted]"
        );
    }
}
