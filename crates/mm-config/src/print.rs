//! `--print-config`: every key, its value and its origin, with nothing
//! secret in it. The config holds no keys; `apiKeyEnv` is shown as the
//! variable's name and whether it is set, credentials in URLs are masked,
//! and MCP `env` and `headers` show their names only.

use crate::load::Loaded;
use crate::settings::Config;

/// The window in force under `contextWindow: auto`, and where it came
/// from (`server /props`, `known model`...), for `--print-config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowInForce {
    /// The window's size in tokens.
    pub tokens: u64,
    /// Where it came from, as the engine says it (`server /props`).
    pub source: String,
}

/// The variable the key is read from (`apiKeyEnv`, else the provider's
/// first), and whether one of the provider's is set: the provider's table
/// is the engine's, so the caller says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInForce {
    /// `None`: the provider takes no key.
    pub var: Option<String>,
    /// Whether the variable (or, with no `apiKeyEnv`, any of the provider's)
    /// is set.
    pub set: bool,
}

/// What `--print-config` shows beside the settings, resolved by whoever
/// knows the servers and providers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The window `contextWindow: auto` came to; `None` when the window is
    /// a number or the server was not asked.
    pub window: Option<WindowInForce>,
    /// The key variable in force; `None` when the caller did not resolve it.
    pub key: Option<KeyInForce>,
}

impl Loaded {
    /// One line per key, aligned: `compact.threshold  = 0.8  # default`.
    pub fn print(&self) -> String {
        self.print_with(&Resolved::default())
    }

    /// [`Loaded::print`] with what `auto` and the provider's key variable
    /// came to.
    pub fn print_with(&self, resolved: &Resolved) -> String {
        let rows: Vec<(&str, String, String)> = self
            .origins()
            .map(|(key, origin)| {
                (
                    key,
                    value_text(&self.config, key, resolved),
                    origin.to_string(),
                )
            })
            .collect();
        let width = rows.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
        let mut out = String::new();
        for (key, value, origin) in rows {
            out.push_str(&format!("{key:<width$} = {value}  # {origin}\n"));
        }
        out
    }
}

fn value_text(c: &Config, key: &str, resolved: &Resolved) -> String {
    let window = resolved.window.as_ref();
    let list = |items: &[String]| {
        if items.is_empty() {
            "(none)".to_owned()
        } else {
            items.join(", ")
        }
    };
    match key {
        "model" => c.model.clone(),
        "baseURL" => c
            .base_url
            .as_deref()
            .map_or_else(|| "(the provider's default)".to_owned(), mask_url),
        "apiKeyEnv" => match (&resolved.key, &c.api_key_env) {
            (
                Some(KeyInForce {
                    var: Some(var),
                    set,
                }),
                _,
            ) => {
                format!("{var} ({})", if *set { "set" } else { "not set" })
            }
            (Some(KeyInForce { var: None, .. }), _) => {
                "(none: this provider takes no key)".to_owned()
            }
            (None, Some(var)) => var.clone(),
            (None, None) => "(the provider's)".to_owned(),
        },
        "contextWindow" => match (c.context_window.fixed(), window) {
            (Some(n), _) => n.to_string(),
            (None, Some(w)) => format!("auto: {} ({})", w.tokens, w.source),
            (None, None) => "auto".to_owned(),
        },
        "maxTokens" => c.max_tokens.to_string(),
        "thinking" => c.thinking.to_string(),
        "showThinking" => c.show_thinking.to_string(),
        "watchdog" => c.watchdog.to_string(),
        "retries" => c.retries.to_string(),
        "textToolCalls" => c.text_tool_calls.to_string(),
        "constrainedCalls" => c.constrained_calls.to_string(),
        "cacheControl" => c.cache_control.to_string(),
        "maxRetryWait" => c.max_retry_wait.to_string(),
        "maxTurns" => c.max_turns.to_string(),
        "bashTool" => c.bash_tool.to_string(),
        "bashTimeout" => c.bash_timeout.to_string(),
        "editTools" => c.edit_tools.to_string(),
        "maxOutput" => c.max_output.to_string(),
        "previewLines" => c.preview_lines.to_string(),
        "skillsDir" => c.skills_dir.display().to_string(),
        "permissions.default" => c.permissions.default.to_string(),
        "permissions.allow" => list(&c.permissions.allow),
        "permissions.ask" => list(&c.permissions.ask),
        "permissions.deny" => list(&c.permissions.deny),
        "acp.permissions" => c.acp.permissions.to_string(),
        "sessions.enabled" => c.sessions.enabled.to_string(),
        "sessions.dir" => c.sessions.dir.display().to_string(),
        "checkpoints.enabled" => c.checkpoints.enabled.to_string(),
        "checkpoints.keep" => c.checkpoints.keep.to_string(),
        "checkpoints.dir" => c.checkpoints.dir.display().to_string(),
        "compact.threshold" => c.compact.threshold.to_string(),
        "compact.keepRecent" => {
            let in_force = c
                .context_window
                .fixed()
                .or(window.map(|w| w.tokens))
                .unwrap_or(crate::settings::FALLBACK_WINDOW);
            let used = c.keep_recent_tokens(in_force);
            if used < c.compact.keep_recent {
                format!(
                    "{} (capped at {used}, a quarter of contextWindow)",
                    c.compact.keep_recent
                )
            } else {
                used.to_string()
            }
        }
        "lsp.servers" => {
            let servers: Vec<String> = c
                .lsp
                .servers
                .iter()
                .map(|s| {
                    let mut line = if s.name == s.command {
                        s.command.clone()
                    } else {
                        format!("{}: {}", s.name, s.command)
                    };
                    for arg in &s.args {
                        line.push(' ');
                        line.push_str(arg);
                    }
                    format!("{line} ({})", s.extensions.join(" "))
                })
                .collect();
            if servers.is_empty() {
                "(none)".to_owned()
            } else {
                servers.join("; ")
            }
        }
        "instructions" => list(&c.instructions),
        "sandbox" => c.sandbox.to_string(),
        "sandboxNetwork" => c.sandbox_network.to_string(),
        "mcpServers" => mcp_servers_text(c),
        "mcp.startTimeout" => c.mcp.start_timeout.to_string(),
        "mcp.toolTimeout" => c.mcp.tool_timeout.to_string(),
        "mcp.lazy" => c.mcp.lazy.to_string(),
        _ => String::new(),
    }
}

/// `time: python3 -m mcp_server_time (env TZ); docs: http://… (headers
/// Authorization)`: names of `env` and `headers`, never their values.
fn mcp_servers_text(c: &Config) -> String {
    if c.mcp_servers.is_empty() {
        return "(none)".to_owned();
    }
    let names = |keys: Vec<&String>| {
        keys.iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    c.mcp_servers
        .iter()
        .map(|(name, s)| {
            let mut line = format!("{name}: ");
            if let Some(command) = &s.command {
                line.push_str(command);
                for arg in &s.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                if !s.env.is_empty() {
                    line.push_str(&format!(" (env {})", names(s.env.keys().collect())));
                }
            } else if let Some(url) = &s.url {
                line.push_str(&mask_url(url));
                if !s.headers.is_empty() {
                    line.push_str(&format!(" (headers {})", names(s.headers.keys().collect())));
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// `url` with anything that looks like a credential replaced by `***`: the
/// password of `user:password@` (a lone `token@` entirely) and the values
/// of query parameters named like keys (`key`, `token`, `secret`, ...).
pub fn mask_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (userinfo, host) = authority.split_at(at);
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***{host}"),
                None => format!("***{host}"),
            }
        }
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            let masked: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((name, _)) if secret_name(name) => format!("{name}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            let mut t = format!("{path}?{}", masked.join("&"));
            if let Some(f) = fragment {
                t.push('#');
                t.push_str(f);
            }
            t
        }
        None => tail.to_owned(),
    };
    format!("{scheme}{authority}{tail}")
}

fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "auth",
        "sig",
        "credential",
    ]
    .iter()
    .any(|s| name.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_credentials_in_urls() {
        assert_eq!(
            mask_url("https://user:pa55@host:8080/v1"),
            "https://user:***@host:8080/v1"
        );
        assert_eq!(mask_url("https://sk-abc@host/v1"), "https://***@host/v1");
        assert_eq!(
            mask_url("https://host/v1?api_key=abc&mode=x&token=t#frag"),
            "https://host/v1?api_key=***&mode=x&token=***#frag"
        );
        assert_eq!(mask_url("http://localhost:11434"), "http://localhost:11434");
        assert_eq!(mask_url("https://host/a@b"), "https://host/a@b");
    }
}
