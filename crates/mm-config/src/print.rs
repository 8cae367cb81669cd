//! `--print-config`: every key, its value and its origin, with nothing
//! secret in it. The config holds no keys; `apiKeyEnv` is shown as the
//! variable's name and whether it is set, credentials in URLs are masked,
//! and MCP `env` and `headers` show their names only.

use crate::load::Loaded;
use crate::table::setting;

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
                let value =
                    setting(key).map_or_else(String::new, |s| (s.show)(&self.config, resolved));
                (key, value, origin.to_string())
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
