//! The `lsp` tool: the model's door to the language servers of `mm-lsp`
//! (docs/reference/tools.md). Navigation (definition, references, hover,
//! symbols, diagnostics) is kind `read` and needs no permission; `rename`
//! is kind `edit`: its plan asks the server for the edits and computes the
//! new contents without writing (docs/design.md#preview-before-permission),
//! and it runs only once allowed (`[rename rejected by the user]`
//! otherwise).
//!
//! The tool is declared only when at least one configured server is on the
//! PATH; the warnings for the others go to the front end.
//!
//! Status: `mm-lsp` answers `Ok(text)` or `Err(LspError)`, whose text the
//! model gets; no text is read to guess it. A rename's files are written
//! by the writer of `write_file` (atomic, mode kept, the sandbox asked
//! again per file), not by mm-lsp.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mm_config::LspServer;
use mm_lsp::{Action, Client, LspError, Query, RenamePlan, ServerConfig};
use mm_types::{FileChange, ToolKind};
use serde::{Deserialize, Deserializer};

use crate::files::PREVIEW_LIMIT;
use crate::lenient;
use crate::tool::{
    Described, Plan, Prepared, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec,
    invalid_args, parse_args, text_field,
};

const NAME: &str = "lsp";

/// What a refused rename gives the model.
pub const REJECTED: &str = "[rename rejected by the user]";

/// `lsp`: reads (a rename edits and asks), echoes the server's answer like
/// a command's output.
pub const ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::Lsp,
    kind: ToolKind::Read,
    title_from: None,
    echoes: true,
    changes_files: true,
    rejection: Some(REJECTED),
};

/// The `lsp` tool of one session (one project root).
pub struct Lsp {
    client: Arc<Client>,
}

impl std::fmt::Debug for Lsp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lsp")
            .field("servers", &self.client.servers_line())
            .finish()
    }
}

impl Lsp {
    /// The tool for the configured servers found on the PATH, and one
    /// warning per server that is not (`[warning: lsp server … skipped]`).
    /// `None` when no server is found: the tool is then not declared.
    pub fn new(servers: Vec<LspServer>, root: PathBuf) -> (Option<Lsp>, Vec<String>) {
        let configs = servers
            .into_iter()
            .map(|s| ServerConfig {
                name: s.name,
                command: s.command,
                args: s.args,
                extensions: s.extensions,
            })
            .collect();
        let client = Client::new(configs, root);
        let warnings = client.warnings().to_vec();
        if client.servers().is_empty() {
            return (None, warnings);
        }
        (
            Some(Lsp {
                client: Arc::new(client),
            }),
            warnings,
        )
    }

    /// The client, for front ends that show or stop the servers.
    pub fn client(&self) -> &Arc<Client> {
        &self.client
    }

    /// Stop every running server (`shutdown`, `exit`, then the process);
    /// front ends call it when mm ends (docs/design.md#killing-on-exit).
    pub async fn shutdown(&self) {
        self.client.shutdown_all().await;
    }
}

/// A line or column the model may also send as a string (`"12"`) or null.
fn lenient_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    lenient::u32_field(d, "a line or column number")
}

#[derive(Deserialize)]
struct Args {
    action: String,
    path: String,
    #[serde(default)]
    symbol: Option<String>,
    #[serde(default, deserialize_with = "lenient_u32")]
    line: u32,
    #[serde(default, deserialize_with = "lenient_u32")]
    column: u32,
    #[serde(default)]
    new_name: Option<String>,
}

/// The query of a call, or the text for the model.
fn query(args: &serde_json::Value) -> Result<Query, String> {
    let a: Args = parse_args(NAME, args)?;
    if a.path.trim().is_empty() {
        return Err(invalid_args(NAME, "path is empty"));
    }
    let action: Action = a.action.parse()?;
    Ok(Query {
        action,
        path: a.path,
        symbol: a.symbol.unwrap_or_default(),
        line: a.line,
        column: a.column,
        new_name: a.new_name.unwrap_or_default(),
    }
    .cleaned())
}

/// The change shown while asking: the first file's contents, and the
/// diffs of every file (each after a `--- path` line when there are
/// several).
fn preview(plan: &RenamePlan) -> Option<FileChange> {
    let first = plan.files.first()?;
    let several = plan.files.len() > 1;
    let mut diff = String::new();
    for f in &plan.files {
        if several {
            diff.push_str(&format!("--- {}\n", f.display));
        }
        diff.push_str(&mm_fileedit::diff(&f.old_text, &f.new_text).text);
    }
    let too_large = first.old_text.len() > PREVIEW_LIMIT || first.new_text.len() > PREVIEW_LIMIT;
    Some(FileChange {
        path: first.path.display().to_string(),
        old_text: (!too_large).then(|| first.old_text.clone()),
        new_text: (!too_large).then(|| first.new_text.clone()),
        diff,
        too_large,
        lines: mm_fileedit::line_count(&first.new_text),
    })
}

/// What the model gets of an answer: the text, failed when it is an error.
fn outcome(answer: Result<String, LspError>) -> ToolOutput {
    match answer {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::fail(e.to_string()),
    }
}

fn absolute(root: &Path, path: &str) -> String {
    let p = Path::new(path);
    if p.is_absolute() {
        p.display().to_string()
    } else {
        root.join(p).display().to_string()
    }
}

#[async_trait::async_trait]
impl Tool for Lsp {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: format!(
                "Ask a language server about the code: definition, references, hover, symbols, \
                 diagnostics, rename (use it, not edit_file, to rename an identifier). \
                 Servers available: {}.",
                self.client.servers_line()
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["definition", "references", "hover", "symbols", "diagnostics", "rename"],
                        "description": "definition, references, hover, symbols, diagnostics or rename."
                    },
                    "path": {"type": "string", "description": "File path, relative to the working directory. Its extension picks the server."},
                    "symbol": {"type": "string", "description": "The identifier, as written in the code. For definition, references, hover, rename."},
                    "line": {"type": "integer", "description": "1-based line. With symbol: restricts the search to that line. With column: the exact position."},
                    "column": {"type": "integer", "description": "1-based column, in characters, pointing inside the identifier. Only needed without symbol."},
                    "new_name": {"type": "string", "description": "The new identifier, for rename."}
                },
                "required": ["action", "path"]
            }),
        }
    }

    /// The file the call is about.
    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        match text_field(args, "path") {
            Some(path) => Subject::Path(PathBuf::from(absolute(&ctx.cwd, path))),
            None => Subject::None,
        }
    }

    /// The title the plan would give (`definition main.go greet`), kind
    /// `edit` for `rename` and `read` otherwise, the file as location.
    fn describe(&self, args: &serde_json::Value, ctx: &ToolContext) -> Described {
        let action = text_field(args, "action").unwrap_or_default();
        let rename = action.trim().eq_ignore_ascii_case("rename");
        let title = match query(args) {
            Ok(q) => q.title(),
            Err(_) => {
                let parts: Vec<&str> = [
                    Some(action),
                    text_field(args, "path"),
                    text_field(args, "symbol"),
                ]
                .into_iter()
                .flatten()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
                if parts.is_empty() {
                    NAME.to_string()
                } else {
                    parts.join(" ")
                }
            }
        };
        Described {
            title,
            kind: if rename { ToolKind::Edit } else { ROW.kind },
            locations: text_field(args, "path")
                .map(|p| vec![absolute(&ctx.cwd, p.trim())])
                .unwrap_or_default(),
        }
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let q = query(args)?;
        let title = q.title();
        let location = absolute(&ctx.cwd, &q.path);
        if q.action != Action::Rename {
            // Navigation only reads: no permission asked.
            let mut plan = Plan::simple(title, ROW.kind);
            plan.locations = vec![location];
            return Ok(plan);
        }
        // A cancel ends the wait for the server at once; dropping the
        // call kills a server that was still starting, with its group.
        let rename = tokio::select! {
            rename = self.client.prepare_rename(&q) => rename.map_err(|e| e.to_string())?,
            _ = ctx.cancel.cancelled() => return Err(crate::bash::CANCELLED.to_string()),
        };
        let sandbox = ctx.permissions.sandbox();
        for f in &rename.files {
            sandbox.may_write(&ctx.cwd, &f.path)?;
        }
        Ok(Plan {
            title,
            kind: ToolKind::Edit,
            locations: rename
                .files
                .iter()
                .map(|f| f.path.display().to_string())
                .collect(),
            change: preview(&rename),
            rejection: ROW.rejection,
            state: Some(Prepared::Rename(rename)),
        })
    }

    async fn run(&self, args: &serde_json::Value, plan: Plan, ctx: &ToolContext) -> ToolOutput {
        // Not cancellable: the files are written, then the server told.
        if let Some(Prepared::Rename(rename)) = plan.state {
            let write = |f: &mm_lsp::RenameFile| {
                crate::files::rewrite(ctx, &f.path, &f.old_text, &f.new_text, &f.display)
                    .map_err(LspError::Write)
            };
            return outcome(self.client.apply_rename_with(&rename, write).await);
        }
        match query(args) {
            Ok(q) => {
                tokio::select! {
                    answer = self.client.call(&q) => outcome(answer),
                    _ = ctx.cancel.cancelled() => ToolOutput::fail(crate::bash::CANCELLED),
                }
            }
            Err(text) => ToolOutput::fail(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_accept_numbers_strings_and_null() {
        let q = query(
            &serde_json::json!({"action": "hover", "path": "a.py", "line": "3", "column": 7}),
        )
        .unwrap();
        assert_eq!((q.line, q.column), (3, 7));
        let q =
            query(&serde_json::json!({"action": "hover", "path": "a.py", "line": null})).unwrap();
        assert_eq!((q.line, q.column), (0, 0));
        let err = query(&serde_json::json!({"action": "hover", "path": "a.py", "line": "three"}))
            .err()
            .unwrap();
        assert!(
            err.starts_with("invalid arguments for lsp: expected a line or column number"),
            "{err}"
        );
    }

    #[test]
    fn unknown_actions_and_empty_paths_are_refused() {
        assert_eq!(
            query(&serde_json::json!({"action": "jump", "path": "a.py"})).err(),
            Some("[lsp: unknown action \"jump\" — use definition, references, hover, symbols, diagnostics or rename]".to_string())
        );
        assert_eq!(
            query(&serde_json::json!({"action": "hover", "path": " "})).err(),
            Some("invalid arguments for lsp: path is empty; send a JSON object matching the tool's schema".to_string())
        );
    }
}
