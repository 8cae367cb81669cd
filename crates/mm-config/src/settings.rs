//! The settings struct: every key of config.md, with its default.
//! YAML keys are camelCase; Rust fields are snake_case.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// All of mm's settings, merged from every source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// `PROVIDER/MODEL`.
    pub model: String,
    /// Model server address; `None` = the provider's default.
    #[serde(rename = "baseURL")]
    pub base_url: Option<String>,
    /// Name of the variable holding the key; `None` = the provider's default.
    pub api_key_env: Option<String>,
    pub context_window: u64,
    pub max_tokens: u64,
    pub thinking: Thinking,
    pub show_thinking: bool,
    /// Seconds of silence before a stream is cut.
    pub watchdog: u64,
    pub retries: u32,
    pub max_turns: u32,
    pub bash_tool: bool,
    /// Seconds.
    pub bash_timeout: u64,
    pub edit_tools: bool,
    /// Characters; at least 200.
    pub max_output: usize,
    pub preview_lines: usize,
    pub skills_dir: PathBuf,
    pub permissions: PermissionSetting,
    pub acp: AcpSettings,
    pub sessions: SessionSettings,
    pub compact: CompactSettings,
    pub lsp: LspSettings,
    /// Project files whose text joins the system prompt when present.
    pub instructions: Vec<String>,
}

/// `thinking`: whether (and how hard) to ask for reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    Off,
    On,
    Low,
    Medium,
    High,
}

/// `permissions` / `acp.permissions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionSetting {
    Allow,
    Ask,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcpSettings {
    pub permissions: PermissionSetting,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionSettings {
    pub enabled: bool,
    pub dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactSettings {
    /// Share of `contextWindow` that triggers automatic compression.
    pub threshold: f64,
    /// Tokens of the latest exchanges kept verbatim (capped at a quarter of
    /// `contextWindow`, decisions.md 23).
    pub keep_recent: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LspSettings {
    pub servers: Vec<LspServer>,
}

/// One language server: started for files with one of `extensions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LspServer {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// With the dot: `.rs`.
    pub extensions: Vec<String>,
}
