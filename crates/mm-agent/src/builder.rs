//! Building an [`Agent`] step by step: what a program that embeds mm
//! writes (`Agent::builder(config).cwd(dir).build()`), with the choices a
//! front end makes spelled out as defaults.

use std::path::PathBuf;

use mm_config::Config;

use crate::agent::{Agent, AgentError, PermissionSource};
use crate::mcp::EditorServer;

/// The steps of [`Agent::builder`]. Defaults: the process's working
/// directory, the terminal's permission rules (`permissions`), no MCP
/// servers besides those of the settings.
#[derive(Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct AgentBuilder {
    config: Config,
    cwd: Option<PathBuf>,
    source: PermissionSource,
    editor_servers: Vec<EditorServer>,
}

impl AgentBuilder {
    pub(crate) fn new(config: Config) -> AgentBuilder {
        AgentBuilder {
            config,
            cwd: None,
            source: PermissionSource::Terminal,
            editor_servers: Vec::new(),
        }
    }

    /// The session's root: every tool, path, language server and
    /// instructions file of the session uses it.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> AgentBuilder {
        self.cwd = Some(dir.into());
        self
    }

    /// Which permission default applies: the terminal's `permissions` (the
    /// default) or an editor's `acp.permissions`. The rules and the
    /// sandbox of the settings apply either way.
    pub fn permissions(mut self, source: PermissionSource) -> AgentBuilder {
        self.source = source;
        self
    }

    /// MCP servers an editor names for this session, besides those of the
    /// settings.
    pub fn editor_servers(mut self, servers: Vec<EditorServer>) -> AgentBuilder {
        self.editor_servers = servers;
        self
    }

    /// The agent. Its MCP servers start in the background, so call it
    /// inside a tokio runtime when the settings name any.
    pub fn build(self) -> Result<Agent, AgentError> {
        let cwd = match self.cwd {
            Some(dir) => dir,
            None => std::env::current_dir().map_err(AgentError::WorkingDir)?,
        };
        Agent::with_editor_servers(self.config, &cwd, self.source, &self.editor_servers)
    }
}
