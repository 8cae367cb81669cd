//! Why a server could not start or a call did not complete. Each error is
//! one line that says why; the caller names the server in front of it
//! (`mcp server time: no answer to initialize within 10s`).

use std::time::Duration;

/// A failure of an MCP server or of one call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// A `${VAR}` in `env` or `headers` names a variable that is not set.
    #[error("{name} is not set")]
    VarNotSet {
        /// The variable.
        name: String,
    },
    /// The settings describe no usable server (a bad URL, a bad header).
    #[error("{0}")]
    BadSpec(String),
    /// The program could not be started.
    #[error("cannot start {command}: {reason}")]
    Spawn {
        /// The program as configured.
        command: String,
        /// The system's reason (`No such file or directory`).
        reason: String,
    },
    /// `initialize` got no answer in time.
    #[error("no answer to initialize within {}{}", secs(*.after), .detail)]
    StartTimeout {
        /// The bound in force (`mcp.startTimeout`).
        after: Duration,
        /// What else is known (` (it wrote 1 line that is not JSON-RPC: …)`).
        detail: String,
    },
    /// The handshake failed: the server refused, closed, or answered
    /// something that is not an `initialize` result.
    #[error("initialize failed: {0}")]
    Initialize(String),
    /// A call got no answer in time; the server was sent a cancellation.
    #[error("no answer within {}{}", secs(*.after), .detail)]
    CallTimeout {
        /// The bound in force (`mcp.toolTimeout`).
        after: Duration,
        /// What else is known, as for [`McpError::StartTimeout`].
        detail: String,
    },
    /// The user cancelled the call; the server was sent a cancellation.
    #[error("cancelled")]
    Cancelled,
    /// The connection ended: the process exited, the pipe closed, or the
    /// HTTP endpoint went away. The server may be started again.
    #[error("{0}")]
    Gone(String),
    /// The server answered the request with a JSON-RPC error.
    #[error("the server answered error {code}: {message}")]
    Rpc {
        /// JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The server answered something this client cannot use.
    #[error("{0}")]
    Protocol(String),
}

impl McpError {
    /// Whether the connection is gone, so that the next call may start the
    /// server again.
    pub fn is_gone(&self) -> bool {
        matches!(self, McpError::Gone(_))
    }
}

/// `10s`, `1.5s`, `250ms`.
pub(crate) fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(
            McpError::StartTimeout {
                after: Duration::from_secs(10),
                detail: String::new()
            }
            .to_string(),
            "no answer to initialize within 10s"
        );
        assert_eq!(
            McpError::CallTimeout {
                after: Duration::from_millis(1500),
                detail: " (x)".into()
            }
            .to_string(),
            "no answer within 1.5s (x)"
        );
        assert_eq!(secs(Duration::from_millis(250)), "250ms");
    }
}
