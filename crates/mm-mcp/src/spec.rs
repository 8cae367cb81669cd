//! What to start: one MCP server's name and transport, as the settings or
//! an editor describe it, with `${VAR}` taken from mm's environment.
//!
//! The values of `env` and `headers` are secrets like API keys: `Debug`
//! never shows them, and [`ServerSpec::secrets`] lists them for redaction.

use std::fmt;
use std::path::PathBuf;

use crate::error::McpError;

/// Values shorter than this are not redacted from tool results: a secret is
/// longer, and replacing `UTC` or `1` in every result would garble them.
pub const MIN_SECRET_LEN: usize = 8;

/// One MCP server to start.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name the user gave it; tools are declared as `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
}

/// How a server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum TransportSpec {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// The program (looked up on `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, on top of mm's environment (values expanded).
        env: Vec<(String, String)>,
        /// Variables removed from the inherited environment (the provider
        /// key variables: a server gets a key only when `env` names it).
        remove_env: Vec<String>,
        /// Where it runs: the session's root.
        cwd: PathBuf,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// `http://` or `https://` address of the MCP endpoint.
        url: String,
        /// Headers sent with every request (values expanded).
        headers: Vec<(String, String)>,
    },
}

impl ServerSpec {
    /// The values mm must never show: every `env` and `headers` value, and
    /// the value of every variable expanded into one, of at least
    /// [`MIN_SECRET_LEN`] characters, longest first (so that a value that
    /// contains another is replaced whole).
    pub fn secrets(&self) -> Vec<String> {
        let values: Vec<&String> = match &self.transport {
            TransportSpec::Stdio { env, .. } => env.iter().map(|(_, v)| v).collect(),
            TransportSpec::Http { headers, .. } => headers.iter().map(|(_, v)| v).collect(),
        };
        let mut out: Vec<String> = Vec::new();
        for value in values {
            let mut parts = vec![value.trim().to_string()];
            // `Bearer <token>`: the token alone is the secret part.
            parts.extend(value.split_whitespace().map(str::to_string));
            for part in parts {
                if part.chars().count() >= MIN_SECRET_LEN && !out.contains(&part) {
                    out.push(part);
                }
            }
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out
    }

    /// What the server is, for a status line: the command line or the URL
    /// (no `env` or header values).
    pub fn target(&self) -> String {
        match &self.transport {
            TransportSpec::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for a in args {
                    line.push(' ');
                    line.push_str(a);
                }
                line
            }
            TransportSpec::Http { url, .. } => url.clone(),
        }
    }
}

impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSpec")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .finish()
    }
}

impl fmt::Debug for TransportSpec {
    /// Names only: the values are secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |pairs: &[(String, String)]| -> Vec<String> {
            pairs.iter().map(|(k, _)| format!("{k}=***")).collect()
        };
        match self {
            TransportSpec::Stdio {
                command,
                args,
                env,
                remove_env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .field("remove_env", remove_env)
                .field("cwd", cwd)
                .finish(),
            TransportSpec::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &names(headers))
                .finish(),
        }
    }
}

/// `text` with every `${NAME}` (and `${NAME:-default}`) replaced by the
/// variable's value from `lookup`; other `$` signs stay as they are. A
/// variable that is not set (or empty) and has no default is an error
/// naming it.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, McpError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: not a reference.
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if !is_var_name(name) {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            match (lookup(name).filter(|v| !v.is_empty()), default) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(McpError::VarNotSet {
                        name: name.to_string(),
                    });
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t-t0ken".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_are_expanded() {
        assert_eq!(
            expand("Bearer ${TOKEN}", &env).unwrap(),
            "Bearer s3cr3t-t0ken"
        );
        assert_eq!(
            expand("${MISSING:-x}/${TOKEN}", &env).unwrap(),
            "x/s3cr3t-t0ken"
        );
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        // Not references: kept as written.
        assert_eq!(expand("$TOKEN ${1x} ${", &env).unwrap(), "$TOKEN ${1x} ${");
        assert_eq!(
            expand("a ${MISSING} b", &env).unwrap_err().to_string(),
            "MISSING is not set"
        );
        assert_eq!(
            expand("${EMPTY}", &env).unwrap_err().to_string(),
            "EMPTY is not set"
        );
    }

    #[test]
    fn secrets_are_values_long_enough_and_debug_hides_them() {
        let spec = ServerSpec {
            name: "docs".into(),
            transport: TransportSpec::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![
                    ("Authorization".into(), "Bearer s3cr3t-t0ken".into()),
                    ("X-Short".into(), "abc".into()),
                ],
            },
        };
        assert_eq!(spec.secrets(), ["Bearer s3cr3t-t0ken", "s3cr3t-t0ken"]);
        let shown = format!("{spec:?}");
        assert!(shown.contains("Authorization=***"), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(!shown.contains("abc"), "{shown}");
    }
}
