//! Configuration errors: one line each, naming where (file, variable or
//! flag), the key, and what was expected: never a silent default.

use std::path::PathBuf;

use figment::error::{Actual, Kind};

use crate::load::Origin;

/// Everything that stops mm from starting because of its settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file that exists (or was named by `MM_CONFIG`/`--config`) but cannot be read.
    #[error("{}: cannot read the file: {source}", .path.display())]
    Read {
        /// The file, as it was found or named.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// Not YAML at all.
    #[error("{}: YAML syntax error{}: {message}", .path.display(), at_line(*.line, *.column))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based, when the parser knows it.
        line: Option<usize>,
        /// 1-based, when the parser knows it.
        column: Option<usize>,
        /// The parser's message, without its own position suffix.
        message: String,
    },
    /// YAML, but not a mapping of keys at the top.
    #[error("{}: expected a mapping of keys to values, found {found}", .path.display())]
    NotAMapping {
        /// The file.
        path: PathBuf,
        /// What the top is instead, as the message says it: a list, a
        /// string, or a single value.
        found: String,
    },
    /// A key no setting has.
    #[error("{}: unknown key \"{key}\" (expected one of: {})", .path.display(), .expected.join(", "))]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// Dotted: `compact.keep`.
        key: String,
        /// The keys allowed at that level.
        expected: Vec<String>,
    },
    /// A key the untrusted project file may not set
    /// (docs/design.md#untrusted-project-file).
    #[error("{}: {key} may not be set in a project file; set it in {user_file}", .path.display())]
    ForbiddenInProject {
        /// The project file.
        path: PathBuf,
        /// Dotted camelCase key, as written.
        key: String,
        /// The user's file, as shown to the user (`~/.config/mm/config.yaml`).
        user_file: String,
    },
    /// A value of the wrong type or out of range.
    #[error("{}", bad_value(.at, .key, .problem))]
    BadValue {
        /// Where the value came from: a file, a variable or a flag.
        at: Origin,
        /// Dotted camelCase key: `compact.threshold`, `lsp.servers[0].command`.
        key: String,
        /// `expected an unsigned integer, found a string "ten"`.
        problem: String,
    },
    /// Neither HOME nor the XDG variables say where the user's files are.
    #[error("cannot find the home directory: set HOME (or XDG_CONFIG_HOME and XDG_DATA_HOME)")]
    NoHome,
    /// A figment failure that is none of the above (should not happen).
    #[error("configuration error: {0}")]
    Other(String),
}

fn at_line(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

/// Files say `path: key: problem`; a variable or a flag names only one key,
/// so it stands alone: `MM_PERMISSIONS: problem`, `--model: problem`.
fn bad_value(at: &Origin, key: &str, problem: &str) -> String {
    match at {
        Origin::Env(var) => format!("{var}: {problem}"),
        Origin::Flag(flag) => format!("{flag}: {problem}"),
        other => match other.file() {
            Some(path) => format!("{}: {key}: {problem}", path.display()),
            None => format!("{other}: {key}: {problem}"),
        },
    }
}

/// Figment's key path (`["lsp", "servers", "0", "command"]`) as the user
/// reads it: `lsp.servers[0].command`.
/// Line breaks and other control characters in a key (YAML allows them)
/// are shown escaped (`\n`), so that an error stays one line.
pub(crate) fn dotted(path: &[String]) -> String {
    let mut out = String::new();
    for part in path {
        let part = &one_line(part);
        if part.parse::<usize>().is_ok() && !out.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

/// `text` with its control characters escaped, on one line.
pub(crate) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Re-words one figment error as our error. The value's provider is found
/// through the metadata figment attached to the error (its name is the
/// origin's text, see `load`), `fallback` when figment does not know it.
pub(crate) fn from_figment(
    err: figment::Error,
    origins: &[Origin],
    fallback: &Origin,
) -> ConfigError {
    let at = err
        .metadata
        .as_ref()
        .and_then(|m| origins.iter().find(|o| o.to_string() == m.name))
        .filter(|o| **o != Origin::Default)
        .unwrap_or(fallback)
        .clone();
    let key = dotted(&err.path);
    match err.kind {
        Kind::UnknownField(field, expected) => match at.file() {
            Some(path) => ConfigError::UnknownKey {
                path: path.to_path_buf(),
                key,
                expected: expected.iter().map(|e| (*e).to_owned()).collect(),
            },
            None => ConfigError::Other(format!("unknown key \"{}\"", one_line(&field))),
        },
        Kind::UnknownVariant(given, names) => ConfigError::BadValue {
            at,
            key,
            problem: format!(
                "\"{}\" is not one of {}",
                one_line(&given),
                names.join(", ")
            ),
        },
        Kind::InvalidType(actual, expected) => ConfigError::BadValue {
            at,
            key,
            problem: format!(
                "expected {}, found {}",
                expected_text(&expected),
                found_text(&actual)
            ),
        },
        Kind::InvalidValue(actual, expected) => ConfigError::BadValue {
            at,
            key,
            problem: format!(
                "expected {}, found {}",
                range_text(&expected, &actual),
                found_text(&actual)
            ),
        },
        Kind::MissingField(field) => ConfigError::BadValue {
            at,
            key,
            problem: format!("missing key \"{field}\""),
        },
        Kind::DuplicateField(field) => ConfigError::BadValue {
            at,
            key,
            problem: format!("key \"{field}\" given twice"),
        },
        other => ConfigError::BadValue {
            at,
            key,
            problem: figment::Error::from(other).to_string(),
        },
    }
}

/// Serde's names for what it wanted, in words.
fn expected_text(serde_expected: &str) -> String {
    match serde_expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "an unsigned integer".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "path string" => "a path".to_owned(),
        "a sequence" => "a list".to_owned(),
        s if s.starts_with("struct ") => "a mapping of keys to values".to_owned(),
        s => s.to_owned(),
    }
}

/// An integer that does not fit: say the bounds.
fn range_text(serde_expected: &str, actual: &Actual) -> String {
    let max = match serde_expected {
        "u8" => u8::MAX as u128,
        "u16" => u16::MAX as u128,
        "u32" => u32::MAX as u128,
        "u64" | "usize" => u64::MAX as u128,
        _ => return expected_text(serde_expected),
    };
    match actual {
        Actual::Unsigned(_) => format!("an unsigned integer no larger than {max}"),
        _ => expected_text(serde_expected),
    }
}

/// What the file held, in words.
fn found_text(actual: &Actual) -> String {
    match actual {
        Actual::Bool(b) => format!("a boolean {b}"),
        Actual::Unsigned(n) => format!("an integer {n}"),
        Actual::Signed(n) => format!("an integer {n}"),
        Actual::Float(x) => format!("a number {x}"),
        Actual::Char(c) => format!("a string \"{c}\""),
        Actual::Str(s) => format!("a string {s:?}"),
        Actual::Unit | Actual::Option => "nothing (null)".to_owned(),
        Actual::Seq => "a list".to_owned(),
        Actual::Map => "a mapping".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_paths_show_list_indices() {
        let p = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            dotted(&p(&["lsp", "servers", "0", "command"])),
            "lsp.servers[0].command"
        );
        assert_eq!(dotted(&p(&["compact", "threshold"])), "compact.threshold");
        assert_eq!(dotted(&p(&["instructions", "1"])), "instructions[1]");
    }

    #[test]
    fn env_and_flag_errors_stand_alone() {
        let e = ConfigError::BadValue {
            at: Origin::Env("MM_PERMISSIONS".to_owned()),
            key: "permissions".to_owned(),
            problem: "\"x\" is not one of allow, ask, plan".to_owned(),
        };
        assert_eq!(
            e.to_string(),
            "MM_PERMISSIONS: \"x\" is not one of allow, ask, plan"
        );
        let e = ConfigError::BadValue {
            at: Origin::Flag("--model".to_owned()),
            key: "model".to_owned(),
            problem: "p".to_owned(),
        };
        assert_eq!(e.to_string(), "--model: p");
    }
}
