//! One row per setting: its key, whether the untrusted project file may
//! set it, its range when it is a number, and how `--print-config` shows
//! it. With the field of [`Config`] that holds it, a row is all a new
//! setting needs (as ripgrep has one `Flag` value per flag); tests check
//! the rows against the fields and docs/reference/settings.md.

use crate::print::{KeyInForce, Resolved, mask_url};
use crate::ranges::Range;
use crate::settings::{Config, FALLBACK_WINDOW};

/// Everything mm knows about one setting besides its field in [`Config`].
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Dotted camelCase key (`compact.keepRecent`), as in the files.
    pub key: &'static str,
    /// Whether the untrusted project file may set it
    /// (docs/design.md#untrusted-project-file). A section (`compact`) may
    /// be set there only when every key under it may.
    pub project: bool,
    /// The allowed values of a number, checked for every file, variable
    /// and flag at start.
    pub range: Option<Range>,
    /// The value as `--print-config` shows it, with what `auto` and the
    /// provider's key variable came to; nothing secret.
    pub show: fn(&Config, &Resolved) -> String,
}

/// `(none)` or the items joined with `, `.
fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

const fn row(key: &'static str, project: bool, show: fn(&Config, &Resolved) -> String) -> Setting {
    Setting {
        key,
        project,
        range: None,
        show,
    }
}

const fn number(
    key: &'static str,
    project: bool,
    (min, max): (u64, u64),
    get: fn(&Config) -> Option<u64>,
    show: fn(&Config, &Resolved) -> String,
) -> Setting {
    Setting {
        key,
        project,
        range: Some(Range { min, max, get }),
        show,
    }
}

/// Every setting, in the order of the table in
/// docs/reference/settings.md. Bounds: a day (86400 s) for waits, a week
/// for a command; counts far beyond any real use but well inside the
/// arithmetic done on them.
pub const SETTINGS: &[Setting] = &[
    row("model", true, |c, _| c.model.clone()),
    row("baseURL", false, |c, _| {
        c.base_url
            .as_deref()
            .map_or_else(|| "(the provider's default)".to_owned(), mask_url)
    }),
    row("apiKeyEnv", false, show_api_key_env),
    number(
        "contextWindow",
        true,
        (1, 100_000_000),
        |c| c.context_window.fixed(),
        |c, r| match (c.context_window.fixed(), &r.window) {
            (Some(n), _) => n.to_string(),
            (None, Some(w)) => format!("auto: {} ({})", w.tokens, w.source),
            (None, None) => "auto".to_owned(),
        },
    ),
    number(
        "maxTokens",
        true,
        (1, 10_000_000),
        |c| Some(c.max_tokens),
        |c, _| c.max_tokens.to_string(),
    ),
    row("thinking", true, |c, _| c.thinking.to_string()),
    row("showThinking", true, |c, _| c.show_thinking.to_string()),
    // 0 = never cut.
    number(
        "watchdog",
        true,
        (0, 86_400),
        |c| Some(c.watchdog),
        |c, _| c.watchdog.to_string(),
    ),
    number(
        "retries",
        true,
        (0, 100),
        |c| Some(u64::from(c.retries)),
        |c, _| c.retries.to_string(),
    ),
    row("textToolCalls", true, |c, _| c.text_tool_calls.to_string()),
    row("constrainedCalls", true, |c, _| {
        c.constrained_calls.to_string()
    }),
    row("cacheControl", true, |c, _| c.cache_control.to_string()),
    number(
        "maxRetryWait",
        true,
        (0, 86_400),
        |c| Some(c.max_retry_wait),
        |c, _| c.max_retry_wait.to_string(),
    ),
    number(
        "maxTurns",
        true,
        (1, 1_000_000),
        |c| Some(u64::from(c.max_turns)),
        |c, _| c.max_turns.to_string(),
    ),
    row("bashTool", true, |c, _| c.bash_tool.to_string()),
    number(
        "bashTimeout",
        true,
        (1, 604_800),
        |c| Some(c.bash_timeout),
        |c, _| c.bash_timeout.to_string(),
    ),
    row("editTools", true, |c, _| c.edit_tools.to_string()),
    number(
        "maxOutput",
        true,
        (200, 100_000_000),
        |c| u64::try_from(c.max_output).ok(),
        |c, _| c.max_output.to_string(),
    ),
    number(
        "previewLines",
        true,
        (0, 100_000),
        |c| u64::try_from(c.preview_lines).ok(),
        |c, _| c.preview_lines.to_string(),
    ),
    // The person's own habits and screen: a project cannot choose them.
    row("editMode", false, |c, _| c.edit_mode.to_string()),
    row("notify", false, |c, _| c.notify.to_string()),
    row("theme", false, |c, _| c.theme.to_string()),
    row("mouse", false, |c, _| c.mouse.to_string()),
    row("skillsDir", false, |c, _| {
        c.skills_dir.display().to_string()
    }),
    row("permissions.default", false, |c, _| {
        c.permissions.default.to_string()
    }),
    row("permissions.allow", false, |c, _| {
        list(&c.permissions.allow)
    }),
    row("permissions.ask", false, |c, _| list(&c.permissions.ask)),
    row("permissions.deny", false, |c, _| list(&c.permissions.deny)),
    row("acp.permissions", false, |c, _| {
        c.acp.permissions.to_string()
    }),
    row("sessions.enabled", false, |c, _| {
        c.sessions.enabled.to_string()
    }),
    row("sessions.dir", false, |c, _| {
        c.sessions.dir.display().to_string()
    }),
    row("checkpoints.enabled", false, |c, _| {
        c.checkpoints.enabled.to_string()
    }),
    number(
        "checkpoints.keep",
        false,
        (1, 100_000),
        |c| Some(u64::from(c.checkpoints.keep)),
        |c, _| c.checkpoints.keep.to_string(),
    ),
    row("checkpoints.dir", false, |c, _| {
        c.checkpoints.dir.display().to_string()
    }),
    row("compact.threshold", true, |c, _| {
        c.compact.threshold.to_string()
    }),
    number(
        "compact.keepRecent",
        true,
        (0, 100_000_000),
        |c| Some(c.compact.keep_recent),
        show_keep_recent,
    ),
    row("lsp.servers", false, show_lsp_servers),
    row("instructions", true, |c, _| list(&c.instructions)),
    row("sandbox", false, |c, _| c.sandbox.to_string()),
    row("sandboxNetwork", false, |c, _| {
        c.sandbox_network.to_string()
    }),
    row("mcpServers", false, show_mcp_servers),
    number(
        "mcp.startTimeout",
        false,
        (1, 86_400),
        |c| Some(c.mcp.start_timeout),
        |c, _| c.mcp.start_timeout.to_string(),
    ),
    number(
        "mcp.toolTimeout",
        false,
        (1, 86_400),
        |c| Some(c.mcp.tool_timeout),
        |c, _| c.mcp.tool_timeout.to_string(),
    ),
    row("mcp.lazy", false, |c, _| c.mcp.lazy.to_string()),
    number(
        "agents.parallel",
        false,
        (1, 16),
        |c| Some(u64::from(c.agents.parallel)),
        |c, _| c.agents.parallel.to_string(),
    ),
    row("hooks", false, show_hooks),
    row("webSearch.url", false, |c, _| {
        c.web_search
            .url
            .as_deref()
            .map_or_else(|| "(none)".to_owned(), mask_url)
    }),
    row("vision", true, |c, _| match c.vision {
        Some(v) => v.to_string(),
        None => "auto".to_owned(),
    }),
];

/// The row of `key` (dotted camelCase).
pub fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// Whether the project file may set the top-level key `top`: every
/// setting under it may, and there is at least one.
pub fn project_may_set(top: &str) -> bool {
    let mut under = SETTINGS
        .iter()
        .filter(|s| s.key.split('.').next() == Some(top))
        .peekable();
    under.peek().is_some() && under.all(|s| s.project)
}

fn show_api_key_env(c: &Config, r: &Resolved) -> String {
    match (&r.key, &c.api_key_env) {
        (
            Some(KeyInForce {
                var: Some(var),
                set,
            }),
            _,
        ) => {
            format!("{var} ({})", if *set { "set" } else { "not set" })
        }
        (Some(KeyInForce { var: None, .. }), _) => "(none: this provider takes no key)".to_owned(),
        (None, Some(var)) => var.clone(),
        (None, None) => "(the provider's)".to_owned(),
    }
}

fn show_keep_recent(c: &Config, r: &Resolved) -> String {
    let in_force = c
        .context_window
        .fixed()
        .or(r.window.as_ref().map(|w| w.tokens))
        .unwrap_or(FALLBACK_WINDOW);
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

fn show_lsp_servers(c: &Config, _: &Resolved) -> String {
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

/// `time: python3 -m mcp_server_time (env TZ); docs: http://… (headers
/// Authorization)`: names of `env` and `headers`, never their values.
fn show_mcp_servers(c: &Config, _: &Resolved) -> String {
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

/// `PreToolUse: 2; Stop: 1`: the events and how many commands each runs.
fn show_hooks(c: &Config, _: &Resolved) -> String {
    if c.hooks.is_empty() {
        return "(none)".to_owned();
    }
    c.hooks
        .iter()
        .map(|(event, groups)| {
            let n: usize = groups.iter().map(|g| g.hooks.len()).sum();
            format!("{event}: {n}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every leaf of `Config`'s serialized form, dotted.
    fn leaves() -> Vec<String> {
        fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                // An empty mapping (no MCP server) is one setting.
                serde_json::Value::Object(map) if map.is_empty() => out.push(prefix.to_owned()),
                serde_json::Value::Object(map) => {
                    for (k, v) in map {
                        let key = if prefix.is_empty() {
                            k.clone()
                        } else {
                            format!("{prefix}.{k}")
                        };
                        walk(&key, v, out);
                    }
                }
                _ => out.push(prefix.to_owned()),
            }
        }
        let mut found = Vec::new();
        walk(
            "",
            &serde_json::to_value(Config::default()).unwrap(),
            &mut found,
        );
        found
    }

    #[test]
    fn a_row_per_field_and_a_field_per_row() {
        let mut found = leaves();
        found.sort();
        let mut listed: Vec<String> = SETTINGS.iter().map(|s| s.key.to_owned()).collect();
        listed.sort();
        assert_eq!(found, listed);
    }

    #[test]
    fn every_integer_has_a_range_and_the_defaults_are_inside() {
        let defaults = Config::default();
        assert_eq!(crate::ranges::first_out_of_range(&defaults), None);
        let value = serde_json::to_value(&defaults).unwrap();
        for key in leaves() {
            let mut v = &value;
            for part in key.split('.') {
                v = &v[part];
            }
            if v.is_u64() {
                let row = setting(&key).unwrap();
                assert!(row.range.is_some(), "{key} has no range");
            }
        }
        for s in SETTINGS {
            if let Some(r) = s.range {
                assert!(r.min <= r.max, "{}", s.key);
            }
        }
    }

    #[test]
    fn the_project_file_may_set_safe_keys_only() {
        for forbidden in [
            "baseURL",
            "apiKeyEnv",
            "lsp",
            "permissions",
            "acp",
            "skillsDir",
            "sessions",
            "sandbox",
            "sandboxNetwork",
            "mcpServers",
            "mcp",
            "checkpoints",
            "hooks",
            "webSearch",
        ] {
            assert!(!project_may_set(forbidden), "{forbidden}");
        }
        for allowed in [
            "model",
            "compact",
            "instructions",
            "constrainedCalls",
            "vision",
        ] {
            assert!(project_may_set(allowed), "{allowed}");
        }
        assert!(!project_may_set("nonsense"));
    }

    #[test]
    fn the_reference_table_lists_every_row_in_order() {
        let all = include_str!("../../../docs/reference/settings.md");
        // The first table: from its header to the blank line after it.
        let start = all.find("| key |").unwrap();
        let doc = &all[start..all[start..].find("\n\n").map_or(all.len(), |e| start + e)];
        let keys: Vec<&str> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .collect();
        // The table's `permissions` row stands for its four keys.
        let mut expected: Vec<&str> = Vec::new();
        for s in SETTINGS {
            let shown = if s.key.starts_with("permissions.") {
                "permissions"
            } else {
                s.key
            };
            if expected.last() != Some(&shown) {
                expected.push(shown);
            }
        }
        assert_eq!(keys, expected);
        for s in SETTINGS {
            let line = doc
                .lines()
                .find(|l| {
                    l.starts_with(&format!("| `{}`", s.key))
                        || (s.key.starts_with("permissions.") && l.starts_with("| `permissions`"))
                })
                .unwrap();
            let may = line.trim_end_matches(" |").rsplit("| ").next().unwrap();
            assert_eq!(may.starts_with("yes"), s.project, "{}: {line}", s.key);
            if let Some(r) = s.range {
                assert!(line.contains(&r.max.to_string()), "{}: {line}", s.key);
            }
        }
    }
}
