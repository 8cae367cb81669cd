//! mm-lsp: the language-server client behind the `lsp` tool. It owns
//! starting the configured servers (on first use, in the project root, kept
//! for the session, restarted after a crash, shut down at the end), syncing
//! files from disk, asking for definition, references, hover, symbols,
//! diagnostics and rename, and shaping the answers as the texts of the
//! `lsp` tool (docs/reference/tools.md).
//!
//! It must never know the model or the sink: front ends and the tool decide
//! what to show. A call answers `Ok(text)` or `Err(`[`LspError`]`)`, whose
//! text is the model's, never a panic or an error that ends a turn. It
//! writes no file for the tool: a rename is planned here and written by
//! the caller's writer ([`Client::apply_rename_with`]).
//!
//! Built on `async-lsp` (client main loop) and `lsp-types`. Positions are
//! 1-based characters at this crate's boundary and 0-based UTF-16 on the
//! wire.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod client;
mod edit;
mod error;
mod format;
mod frame;
mod server;
mod text;

use std::fmt;
use std::str::FromStr;

pub use client::{Client, RenameFile, RenamePlan};
pub use error::LspError;
pub use text::{clean_symbol_and_name, clean_word};

/// How long `diagnostics` waits for the server's publication.
pub const DIAGNOSTICS_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What a rename without a new name answers.
pub const RENAME_NEEDS_NEW_NAME: &str = "[lsp: rename needs new_name — call lsp again with {\"action\": \"rename\", \"path\": …, \"symbol\": …, \"new_name\": \"<the new identifier>\"}; do not use edit_file for a rename]";

/// One configured language server (`lsp.servers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's name, as messages show it.
    pub name: String,
    /// The program, looked up on the `PATH` unless it holds a `/`.
    pub command: String,
    /// The program's arguments.
    pub args: Vec<String>,
    /// With the dot: `.rs`.
    pub extensions: Vec<String>,
}

impl ServerConfig {
    /// `name (.a .b)`, as the description and the failures list servers.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.extensions.join(" "))
    }
}

/// The six actions of the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Where the symbol is defined.
    Definition,
    /// Where the symbol is used.
    References,
    /// What the server says about the symbol: its type, its docs.
    Hover,
    /// The symbols a file defines.
    Symbols,
    /// The errors and warnings the server reports for a file.
    Diagnostics,
    /// Rename the symbol everywhere the server knows of (the one action that
    /// writes files).
    Rename,
}

impl Action {
    /// Every action, in the order messages list them.
    pub const ALL: [Action; 6] = [
        Action::Definition,
        Action::References,
        Action::Hover,
        Action::Symbols,
        Action::Diagnostics,
        Action::Rename,
    ];

    /// The name the model uses for the action.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Definition => "definition",
            Action::References => "references",
            Action::Hover => "hover",
            Action::Symbols => "symbols",
            Action::Diagnostics => "diagnostics",
            Action::Rename => "rename",
        }
    }

    /// Whether the action works on one symbol (and so needs a position).
    pub fn needs_position(self) -> bool {
        matches!(
            self,
            Action::Definition | Action::References | Action::Hover | Action::Rename
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Action {
    /// The text for the model.
    type Err = String;

    fn from_str(s: &str) -> Result<Action, String> {
        let want = s.trim().to_ascii_lowercase();
        Action::ALL
            .into_iter()
            .find(|a| a.as_str() == want)
            .ok_or_else(|| {
                format!(
                    "[lsp: unknown action \"{s}\" — use definition, references, hover, symbols, diagnostics or rename]"
                )
            })
    }
}

/// One call, as the tool receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// What to ask.
    pub action: Action,
    /// Relative to the project root, or absolute.
    pub path: String,
    /// The identifier to look for in the file (on `line` only, when one is
    /// given); empty when a line and a column say where, and for `symbols`
    /// and `diagnostics`.
    pub symbol: String,
    /// 1-based; 0 when not given.
    pub line: u32,
    /// 1-based, in characters; 0 when not given.
    pub column: u32,
    /// For `rename`: the new identifier; empty otherwise.
    pub new_name: String,
}

impl Query {
    /// A query of `action` on the file at `path`, with no symbol, position or
    /// new name.
    pub fn new(action: Action, path: impl Into<String>) -> Query {
        Query {
            action,
            path: path.into(),
            symbol: String::new(),
            line: 0,
            column: 0,
            new_name: String::new(),
        }
    }

    /// The query with `symbol` set.
    pub fn symbol(mut self, symbol: impl Into<String>) -> Query {
        self.symbol = symbol.into();
        self
    }

    /// The query with `line` and `column` set (1-based).
    pub fn at(mut self, line: u32, column: u32) -> Query {
        self.line = line;
        self.column = column;
        self
    }

    /// The query with `new_name` set.
    pub fn new_name(mut self, new_name: impl Into<String>) -> Query {
        self.new_name = new_name.into();
        self
    }

    /// The query with `symbol` and `new_name` cleaned (quotes, punctuation,
    /// `receiver.` prefixes) and the multi-word heuristic applied.
    pub fn cleaned(&self) -> Query {
        let (symbol, new_name) =
            clean_symbol_and_name(&self.symbol, &self.new_name, self.action == Action::Rename);
        Query {
            symbol,
            new_name,
            path: self.path.trim().to_string(),
            ..self.clone()
        }
    }

    /// The line a front end shows: `definition main.go greet`,
    /// `hover main.go:9:14`, `rename main.go greet → hello`.
    pub fn title(&self) -> String {
        let q = self.cleaned();
        let mut title = if !q.symbol.is_empty() || !q.action.needs_position() {
            let mut t = format!("{} {}", q.action, q.path);
            if !q.symbol.is_empty() {
                t.push(' ');
                t.push_str(&q.symbol);
            }
            t
        } else if q.line > 0 && q.column > 0 {
            format!("{} {}:{}:{}", q.action, q.path, q.line, q.column)
        } else if q.line > 0 {
            format!("{} {}:{}", q.action, q.path, q.line)
        } else {
            format!("{} {}", q.action, q.path)
        };
        if q.action == Action::Rename && !q.new_name.is_empty() {
            title.push_str(" → ");
            title.push_str(&q.new_name);
        }
        title
    }
}

/// The warning for a listed server whose command is not on the `PATH`.
pub fn not_found_warning(server: &ServerConfig) -> String {
    format!(
        "[warning: lsp server {} ({}) not found on the PATH — skipped]",
        server.name, server.command
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_follow_the_reference() {
        let q = Query::new(Action::Definition, "main.go").symbol("greet");
        assert_eq!(q.title(), "definition main.go greet");
        let q = Query::new(Action::Hover, "main.go").at(9, 14);
        assert_eq!(q.title(), "hover main.go:9:14");
        let q = Query::new(Action::Rename, "main.go")
            .symbol("greet")
            .new_name("hello");
        assert_eq!(q.title(), "rename main.go greet → hello");
        // The small-model form gives the same title.
        let q = Query::new(Action::Rename, "main.go").symbol("greet 1 12 hello");
        assert_eq!(q.title(), "rename main.go greet → hello");
        let q = Query::new(Action::Symbols, "main.go");
        assert_eq!(q.title(), "symbols main.go");
    }

    #[test]
    fn actions_parse_and_unknown_ones_are_named() {
        assert_eq!("Hover".parse::<Action>(), Ok(Action::Hover));
        assert_eq!(
            "jump".parse::<Action>(),
            Err("[lsp: unknown action \"jump\" — use definition, references, hover, symbols, diagnostics or rename]".to_string())
        );
    }

    #[test]
    fn warning_text_is_the_references() {
        let s = ServerConfig {
            name: "gopls".into(),
            command: "gopls".into(),
            args: vec![],
            extensions: vec![".go".into()],
        };
        assert_eq!(
            not_found_warning(&s),
            "[warning: lsp server gopls (gopls) not found on the PATH — skipped]"
        );
        assert_eq!(s.label(), "gopls (.go)");
    }
}
