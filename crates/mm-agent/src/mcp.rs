//! The MCP servers of a session, as the turn sees them: started with the
//! agent, waited for (at most `mcp.startTimeout`) before the first request,
//! their tools added to the toolbox and declared — in full, or behind the
//! one `mcp` tool, whose reveals are appended to the declarations so that
//! the start of every earlier request stays the same.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mm_config::{Config, McpServer};
use mm_engine::ToolDecl;
use mm_mcp::{Hub, State, Timeouts};
use mm_tools::Toolbox;
use mm_tools::mcp::{Catalog, SpecSource, server_spec};
use mm_ui::{Event, Sink};
use tokio_util::sync::CancellationToken;

/// An MCP server an editor names for one session (ACP `mcpServers`), in
/// the shape of the settings; its values are used as given (no `${VAR}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditorServer {
    /// The editor's name for it (made valid for tool names).
    pub name: String,
    /// Its command or URL.
    pub server: McpServer,
}

/// The session's MCP servers and their tools.
pub(crate) struct McpSession {
    hub: Hub,
    mode: mm_config::McpLazy,
    catalog: Option<Arc<Catalog>>,
    /// Servers that could not even be described (a `${VAR}` not set).
    warnings: Vec<String>,
    /// The start-up lines were shown (once, before the first request).
    reported: bool,
}

impl McpSession {
    /// Start the servers of the settings and of the editor, in parallel.
    /// Without a tokio runtime (a library user calling from plain code)
    /// no server starts, and a warning says so.
    pub(crate) fn start(config: &Config, cwd: &Path, editor: &[EditorServer]) -> McpSession {
        let env = |name: &str| mm_redact::keys::var(name);
        let remove_env = crate::tools::key_vars(config);
        let source = SpecSource {
            env: &env,
            remove_env,
            cwd: cwd.to_path_buf(),
        };
        let mut specs = Vec::new();
        let mut warnings = Vec::new();
        let mut servers: Vec<(String, &McpServer, bool)> = config
            .mcp_servers
            .iter()
            .filter(|(name, _)| !editor.iter().any(|e| e.name == **name))
            .map(|(name, s)| (name.clone(), s, true))
            .collect();
        servers.extend(editor.iter().map(|e| (e.name.clone(), &e.server, false)));
        for (name, server, expand) in servers {
            match server_spec(&name, server, &source, expand) {
                Ok(spec) => specs.push(spec),
                Err(line) => warnings.push(line),
            }
        }
        let timeouts = Timeouts {
            start: Duration::from_secs(config.mcp.start_timeout.max(1)),
            call: Duration::from_secs(config.mcp.tool_timeout.max(1)),
        };
        let hub = if specs.is_empty() {
            Hub::empty()
        } else if tokio::runtime::Handle::try_current().is_err() {
            warnings.push("mcp servers not started: no async runtime".to_string());
            Hub::empty()
        } else {
            Hub::start(specs, timeouts)
        };
        McpSession {
            hub,
            mode: config.mcp.lazy,
            catalog: None,
            warnings,
            reported: false,
        }
    }

    /// The `env` and `headers` values of every server, for redaction.
    pub(crate) fn secrets(&self) -> Vec<String> {
        self.hub.secrets()
    }

    /// Before the first request: wait for the servers (each bounded by the
    /// start timeout), report each failure in one line, add the tools and
    /// declare them. Does nothing after the first time.
    pub(crate) async fn prepare(
        &mut self,
        toolbox: &mut Toolbox,
        decls: &mut Vec<ToolDecl>,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) {
        if self.catalog.is_some() {
            return;
        }
        if self.hub.is_empty() {
            if !self.reported {
                self.reported = true;
                for line in &self.warnings {
                    tracing::warn!("{line}");
                    sink.event(Event::Notice { text: line.clone() });
                }
            }
            return;
        }
        if self.hub.status().iter().any(|s| s.state == State::Starting) {
            sink.event(Event::Status {
                text: "Starting MCP servers".into(),
            });
            tokio::select! {
                () = self.hub.wait_started() => {}
                () = cancel.cancelled() => return,
            }
        }
        self.reported = true;
        for line in self.warnings.iter().cloned().chain(self.hub.failures()) {
            tracing::warn!("{line}");
            sink.event(Event::Notice { text: line });
        }
        let catalog = Catalog::new(self.hub.clone(), self.mode).await;
        toolbox.add(catalog.tools());
        for name in catalog.declared_first() {
            declare(toolbox, decls, &name);
        }
        self.catalog = Some(catalog);
    }

    /// After a tool call: declare what the `mcp` tool revealed, at the end.
    pub(crate) fn reveal(&self, toolbox: &Toolbox, decls: &mut Vec<ToolDecl>) {
        if let Some(catalog) = &self.catalog {
            for name in catalog.take_revealed() {
                declare(toolbox, decls, &name);
            }
        }
    }

    /// `/mcp`: one line per server, with its state and tool count.
    pub(crate) fn status_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.hub.status().iter().map(|s| s.line()).collect();
        lines.extend(self.warnings.iter().cloned());
        if let Some(c) = &self.catalog
            && c.is_lazy()
        {
            lines.push(format!(
                "{} MCP tools declared on request through the mcp tool (mcp.lazy)",
                c.len()
            ));
        }
        lines
    }

    /// End every server (stdin closed, then the group killed).
    pub(crate) async fn shutdown(&self) {
        self.hub.shutdown().await;
    }
}

fn declare(toolbox: &Toolbox, decls: &mut Vec<ToolDecl>, name: &str) {
    if decls.iter().any(|d| d.name == name) {
        return;
    }
    if let Some(spec) = toolbox.spec(name) {
        decls.push(ToolDecl {
            name: spec.name,
            description: spec.description,
            parameters: spec.parameters,
        });
    }
}
