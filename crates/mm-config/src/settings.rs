//! The settings struct: every key of docs/reference/settings.md, with its
//! default.
//! YAML keys are camelCase; Rust fields are snake_case.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::dirs::BaseDirs;

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
    /// The model's window in tokens, or `auto`: the window the server
    /// reports (the agent asks it), else the model's known one, else
    /// [`FALLBACK_WINDOW`]. A number wins over what the server says.
    pub context_window: ContextWindow,
    /// The longest answer asked for, in tokens.
    pub max_tokens: u64,
    /// Whether (and how hard) to ask the model for reasoning.
    pub thinking: Thinking,
    /// Whether a terminal prints the model's reasoning.
    pub show_thinking: bool,
    /// Seconds of silence before a stream is cut.
    pub watchdog: u64,
    /// Retries of a request on connection errors, 429 and 5xx.
    pub retries: u32,
    /// Whether tool calls a model writes into its answer as text are
    /// recovered and run like native ones.
    pub text_tool_calls: TextToolCalls,
    /// When a local server is asked to constrain a reply to one of the
    /// declared calls or an answer.
    pub constrained_calls: ConstrainedCalls,
    /// `cacheControl`: help the provider reuse the unchanged start of each
    /// request (Anthropic `cache_control` breakpoints, OpenAI's
    /// `prompt_cache_key`). Not a trust matter: a project file may set it.
    pub cache_control: bool,
    /// Seconds: the longest wait a server's `Retry-After` may ask for;
    /// a longer demand fails the turn.
    pub max_retry_wait: u64,
    /// Model requests per question; the turn stops at this many.
    pub max_turns: u32,
    /// Whether the `bash` tool is declared.
    pub bash_tool: bool,
    /// Seconds.
    pub bash_timeout: u64,
    /// Whether `read_file`, `write_file` and `edit_file` are declared.
    pub edit_tools: bool,
    /// Characters; at least 200.
    pub max_output: usize,
    /// Lines of a tool's output a terminal echoes (0: none).
    pub preview_lines: usize,
    /// How the input line is edited in the REPL and the window.
    pub edit_mode: EditMode,
    /// How a turn's end or a waiting permission is signalled while the
    /// terminal is in the background.
    pub notify: Notify,
    /// The colours of the REPL and the window.
    pub theme: Theme,
    /// Whether the window captures the mouse (wheel scrolling; plain text
    /// selection then needs Shift).
    pub mouse: bool,
    /// Where skills live (user file only).
    pub skills_dir: PathBuf,
    /// `permissions: ask|allow`, or the map of rules (user file only).
    pub permissions: PermissionRules,
    /// Settings for editors (ACP).
    pub acp: AcpSettings,
    /// Session files.
    pub sessions: SessionSettings,
    /// Checkpoints for `/undo`, `/redo` and `/diff`.
    pub checkpoints: CheckpointSettings,
    /// When and how the history is compacted.
    pub compact: CompactSettings,
    /// The language servers the `lsp` tool may start.
    pub lsp: LspSettings,
    /// Project files whose text joins the system prompt when present.
    /// YAML takes one name or a list of names.
    #[serde(deserialize_with = "one_or_many")]
    pub instructions: Vec<String>,
    /// Where `bash` commands may write (user file only).
    pub sandbox: SandboxSetting,
    /// Whether sandboxed commands may open network sockets.
    pub sandbox_network: bool,
    /// MCP servers by name, in the shape of the widespread `mcpServers`
    /// JSON. User file only.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// How MCP servers are started and declared. User file only.
    pub mcp: McpSettings,
    /// How subagents (the `task` tool) run. User file only.
    pub agents: AgentsSettings,
    /// The user's scripts around every step, by event
    /// (docs/reference/hooks.md). User file only: a hook is code that runs.
    pub hooks: BTreeMap<String, Vec<HookGroup>>,
    /// The user's SearXNG instance, for the `web_search` tool (declared
    /// only when set). User file only: every query goes there.
    pub web_search: WebSearchSettings,
    /// Whether the model sees images; unset: what the server or the known
    /// models say, else no.
    pub vision: Option<bool>,

    /// mm's folder of the user's own files, `$XDG_CONFIG_HOME/mm` (else
    /// `~/.config/mm`): the global `AGENTS.md` and the `commands/` folder
    /// live here. Not a setting: it follows the environment, like the
    /// user file's place, so no file can set it.
    #[serde(skip)]
    pub user_dir: PathBuf,
}

/// `webSearch`: where `web_search` asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebSearchSettings {
    /// A SearXNG `/search` URL answering `format=json`; `None`: no
    /// `web_search` tool.
    pub url: Option<String>,
}

/// `permissions`: the default for calls no rule speaks of, and the rules
/// (`TOOL` or `TOOL(PATTERN)`, read by mm-policy). The plain form
/// `permissions: ask` sets only `default`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionRules {
    /// `allow` or `ask`.
    pub default: PermissionSetting,
    /// Calls that run without asking.
    #[serde(default, deserialize_with = "one_or_many")]
    pub allow: Vec<String>,
    /// Calls that ask even under `default: allow`.
    #[serde(default, deserialize_with = "one_or_many")]
    pub ask: Vec<String>,
    /// Calls that never run.
    #[serde(default, deserialize_with = "one_or_many")]
    pub deny: Vec<String>,
}

impl PermissionRules {
    /// Only a default, no rules.
    pub fn plain(default: PermissionSetting) -> Self {
        PermissionRules {
            default,
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
        }
    }
}

/// `sandbox`: where `bash` commands may write. Deserialized from its name
/// only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxSetting {
    /// No sandbox.
    Off,
    /// Commands write nowhere.
    ReadOnly,
    /// Commands write below the working directory and the temp folder.
    WorkspaceWrite,
}

/// `thinking`: whether (and how hard) to ask for reasoning.
///
/// Deserialized from its name only: figment would otherwise take `1` as the
/// second variant, a silent surprise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Thinking {
    /// Ask for no reasoning.
    Off,
    /// Ask for reasoning at the provider's usual effort (medium where a
    /// level must be named).
    On,
    /// Ask for reasoning at low effort.
    Low,
    /// Ask for reasoning at medium effort.
    Medium,
    /// Ask for reasoning at high effort.
    High,
}

/// `editMode`: the key bindings of the input line. Deserialized from its
/// name only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EditMode {
    /// Readline's keys (Ctrl-A, Ctrl-E, Ctrl-K, Ctrl-U, Ctrl-W, Ctrl-R).
    Emacs,
    /// vi's insert and normal modes (Esc, then h j k l w b 0 $ x i a …).
    Vi,
}

/// `theme`: the colours of both front ends. Deserialized from its name
/// only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Theme {
    /// The terminal's own foreground, dim for secondary parts, colour
    /// accents for a dark background.
    Dark,
    /// Accents dark enough to read on a white background.
    Light,
    /// No dim text; bold, bright accents.
    HighContrast,
}

/// `notify`: how a turn's end, or a permission waiting, is signalled
/// while the terminal is not focused. Deserialized from its name only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    /// OSC 9 on terminals known to show it (iTerm2, kitty, WezTerm,
    /// Ghostty), else the bell.
    Auto,
    /// The bell (`BEL`).
    Bell,
    /// A desktop notice by OSC 9.
    Osc9,
    /// Nothing.
    Off,
}

/// `textToolCalls`: recover tool calls that local models write into their
/// answer as text (`<tool_call>…`, `[TOOL_CALLS]…`) instead of the API's
/// tool-call field. Deserialized from its name only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextToolCalls {
    /// Recover calls of declared tools whose arguments match the schema.
    Auto,
    /// Leave every answer as the text it is.
    Off,
}

/// `constrainedCalls`: whether a local server (llama.cpp, LM Studio,
/// vLLM, Ollama) is asked to constrain a reply that may call a tool to a
/// JSON value that is exactly one declared call or an answer. Small models
/// whose chat template has no tool-call format describe a command instead
/// of calling it; the constraint makes them call. Deserialized from its
/// name only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConstrainedCalls {
    /// Constrain when the server says the model's template cannot render
    /// tool calls (llama.cpp `/props`, Ollama `/api/show`).
    Auto,
    /// Constrain every request that declares tools.
    Always,
    /// Never constrain.
    Off,
}

/// `permissions` / `acp.permissions`. Deserialized from its name only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionSetting {
    /// Run calls without asking (`deny` and `ask` rules still apply).
    Allow,
    /// Ask the user before a call that needs permission (`bash`, edits).
    Ask,
    /// Read-only: edits and commands that can change things are refused;
    /// reading and read-only commands run.
    Plan,
}

/// `acp`: the settings that apply to editors (ACP) only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcpSettings {
    /// `acp.permissions`: like `permissions`, for editors.
    pub permissions: PermissionSetting,
}

/// `sessions`: where and whether sessions are kept (user file only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionSettings {
    /// Whether session files are written.
    pub enabled: bool,
    /// The folder of session files, one folder per project below it.
    pub dir: PathBuf,
}

// ---- checkpoints (undo) ----

/// `checkpoints`: a checkpoint of the working tree around each turn that
/// may change files, for `/undo`, `/redo` and `/diff`. YAML takes the bare
/// `checkpoints: false` (see `expand_shorthands`) or the mapping
/// `checkpoints: {enabled: true, keep: 50}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Whether checkpoints are taken at all.
    pub enabled: bool,
    /// Turns of a session that can be undone; older checkpoints are
    /// forgotten. At least 1.
    pub keep: u32,
    /// Where checkpoints of folders outside git are kept (one private
    /// repository per folder below it).
    pub dir: PathBuf,
}

/// Default of `checkpoints.keep`.
pub const DEFAULT_CHECKPOINTS_KEEP: u32 = 50;

/// Rewrite the short forms of a file's settings into their mapping, so that
/// layers merge key by key (a user's `checkpoints: false` then keeps the
/// default `keep`, and `--print-config` names the file for
/// `checkpoints.enabled`): `checkpoints: <bool>` is
/// `checkpoints: {enabled: <bool>}`.
pub(crate) fn expand_shorthands(dict: &mut figment::value::Dict) {
    use figment::value::{Dict, Value};
    if let Some(value) = dict.get_mut("checkpoints")
        && let Value::Bool(tag, enabled) = value
    {
        let mut map = Dict::new();
        map.insert("enabled".to_owned(), Value::Bool(*tag, *enabled));
        *value = Value::Dict(*tag, map);
    }
}

// ---- end of checkpoints ----

/// `compact`: when the history is compacted, and how much stays verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompactSettings {
    /// Share of `contextWindow` that triggers automatic compression.
    pub threshold: f64,
    /// Tokens of the latest exchanges kept verbatim (capped at a quarter of
    /// `contextWindow`, docs/design.md#context-window).
    pub keep_recent: u64,
}

/// `lsp`: the language servers (user file only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LspSettings {
    /// The servers, each for its file extensions.
    pub servers: Vec<LspServer>,
}

/// One language server: started for files with one of `extensions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LspServer {
    /// The server's name, as messages show it.
    pub name: String,
    /// The program to start.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// With the dot: `.rs`.
    pub extensions: Vec<String>,
}

// ---- MCP -------------------------------------------------------------

/// One MCP server: a command (stdio) or a URL (streamable HTTP). `env`
/// and `headers` values may hold `${VAR}`, taken from mm's environment
/// when the server starts; they are secrets and never shown.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServer {
    /// `stdio` or `http`; optional (the other keys tell), accepted because
    /// many `mcpServers` files carry it.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The program of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for a stdio server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The endpoint of a streamable-HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to an HTTP server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// The hooks of one event whose matcher matches a call. A file may give
/// several groups of an event; a later layer (the `MM_CONFIG` file) gives
/// the event's groups anew.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookGroup {
    /// A regular expression over tool names (mm's or the other agents':
    /// `Bash`, `Write`); empty or `*`: every call. Only tool events use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands to run.
    pub hooks: Vec<HookCommand>,
}

/// One hook: a command run by `sh -c`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookCommand {
    /// `command`, the only type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The command line.
    pub command: String,
    /// Seconds before it is killed with its group (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

impl fmt::Debug for McpServer {
    /// Names of `env` and `headers`, never their values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("type", &self.kind)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// `agents`: how the `task` tool's subagents run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsSettings {
    /// How many subagents of one reply run at the same time (a local
    /// server with one slot runs them one after the other anyway).
    pub parallel: u32,
}

/// `mcp`: bounds and the declaration mode of MCP tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpSettings {
    /// Seconds a server may take to start and list its tools.
    pub start_timeout: u64,
    /// Seconds one tool call may take.
    pub tool_timeout: u64,
    /// Whether MCP tools are declared in full or behind one `mcp` tool.
    pub lazy: McpLazy,
}

/// `mcp.lazy`: `auto` declares MCP tools behind one `mcp` tool when all
/// their declarations together pass 4 KB; `always` and `never` decide
/// regardless of size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpLazy {
    /// Lazy when the declarations pass 4 KB.
    Auto,
    /// Always behind the `mcp` tool.
    Always,
    /// Always in full.
    Never,
}

impl McpLazy {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["auto", "always", "never"];

    /// The YAML name.
    pub fn as_str(self) -> &'static str {
        match self {
            McpLazy::Auto => "auto",
            McpLazy::Always => "always",
            McpLazy::Never => "never",
        }
    }

    fn from_name(name: &str) -> Option<McpLazy> {
        match name {
            "auto" => Some(McpLazy::Auto),
            "always" => Some(McpLazy::Always),
            "never" => Some(McpLazy::Never),
            _ => None,
        }
    }
}

/// Why `name` cannot name an MCP server, or `None` when it can: letters,
/// digits, `-` and `_`, at most 32 characters, no `__` (tools are declared
/// as `mcp__<server>__<tool>`, and providers accept only those characters
/// in tool names).
pub fn mcp_server_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a server name may not be empty".to_owned());
    }
    if name.len() > 32 {
        return Some(format!("server name {name:?} is longer than 32 characters"));
    }
    if name.contains("__") {
        return Some(format!("server name {name:?} may not contain \"__\""));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Some(format!(
            "server name {name:?} may hold only letters, digits, - and _"
        ));
    }
    None
}

/// A server name from elsewhere (an editor's `mcpServers`) made valid:
/// other characters become `_`, runs of `_` shrink to one and none is left
/// at either end, at most 32 characters; nothing left becomes `server`.
pub fn sanitize_mcp_server_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
        if out.len() == 32 {
            break;
        }
    }
    let out = out.trim_matches('_');
    if out.is_empty() {
        "server".to_owned()
    } else {
        out.to_owned()
    }
}

impl Default for Config {
    /// The defaults (docs/reference/settings.md), with the XDG directories
    /// of this process.
    fn default() -> Self {
        Config::defaults_in(&BaseDirs::from_process())
    }
}

impl Config {
    /// The defaults with every folder under `dir`: the user's
    /// instructions, commands and skills are looked for there, sessions and
    /// checkpoints are kept there, and nothing of the user's own folders
    /// (`~/.config/mm`, the data folder) is read or written. For programs
    /// that embed mm and for tests.
    pub fn isolated(dir: &std::path::Path) -> Config {
        Config::defaults_in(&BaseDirs {
            config: dir.join("config"),
            data: dir.join("data"),
            state: dir.join("state"),
            home: None,
        })
    }

    /// The defaults (docs/reference/settings.md), with the given base
    /// directories (the
    /// loader passes the ones of its `Sources`, so tests need no real HOME).
    pub fn defaults_in(dirs: &BaseDirs) -> Config {
        Config {
            model: "ollama/qwen3:8b".to_owned(),
            base_url: None,
            api_key_env: None,
            context_window: ContextWindow::Auto,
            max_tokens: 8192,
            thinking: Thinking::Off,
            show_thinking: true,
            watchdog: 120,
            retries: 3,
            text_tool_calls: TextToolCalls::Auto,
            constrained_calls: ConstrainedCalls::Auto,
            cache_control: true,
            max_retry_wait: 60,
            max_turns: 100,
            bash_tool: true,
            bash_timeout: 30,
            edit_tools: true,
            max_output: 30000,
            preview_lines: 5,
            edit_mode: EditMode::Emacs,
            notify: Notify::Auto,
            theme: Theme::Dark,
            mouse: false,
            skills_dir: dirs.config.join("mm").join("skills"),
            permissions: PermissionRules::plain(PermissionSetting::Allow),
            acp: AcpSettings {
                permissions: PermissionSetting::Ask,
            },
            sessions: SessionSettings {
                enabled: true,
                dir: dirs.data.join("mm").join("sessions"),
            },
            checkpoints: CheckpointSettings {
                enabled: true,
                keep: DEFAULT_CHECKPOINTS_KEEP,
                dir: dirs.data.join("mm").join("checkpoints"),
            },
            compact: CompactSettings {
                threshold: 0.8,
                keep_recent: 4000,
            },
            lsp: LspSettings {
                servers: default_lsp_servers(),
            },
            instructions: vec!["AGENTS.md".to_owned()],
            sandbox: SandboxSetting::Off,
            sandbox_network: false,
            mcp_servers: BTreeMap::new(),
            hooks: BTreeMap::new(),
            web_search: WebSearchSettings { url: None },
            vision: None,
            mcp: McpSettings {
                start_timeout: 10,
                tool_timeout: 60,
                lazy: McpLazy::Auto,
            },
            agents: AgentsSettings { parallel: 3 },
            user_dir: dirs.config.join("mm"),
        }
    }

    /// `compact.keepRecent` capped at a quarter of `window`, the window
    /// in force (docs/design.md#context-window). The stored value stays as
    /// the user wrote it, so `--print-config` shows what was configured.
    pub fn keep_recent_tokens(&self, window: u64) -> u64 {
        self.compact.keep_recent.min(window / 4)
    }

    /// The `PROVIDER` part of `model` (`ollama` in `ollama/qwen3:8b`).
    pub fn provider(&self) -> &str {
        self.model.split_once('/').map_or("", |(p, _)| p)
    }

    /// The `MODEL` part of `model` (`qwen3:8b` in `ollama/qwen3:8b`).
    pub fn model_name(&self) -> &str {
        self.model.split_once('/').map_or(&self.model, |(_, m)| m)
    }
}

/// The default language servers (docs/reference/settings.md).
pub fn default_lsp_servers() -> Vec<LspServer> {
    let server = |name: &str, command: &str, args: &[&str], extensions: &[&str]| LspServer {
        name: name.to_owned(),
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        extensions: extensions.iter().map(|e| (*e).to_owned()).collect(),
    };
    vec![
        server("rust-analyzer", "rust-analyzer", &[], &[".rs"]),
        server("gopls", "gopls", &[], &[".go"]),
        server(
            "clangd",
            "clangd",
            &[],
            &[".c", ".h", ".cc", ".cpp", ".hpp"],
        ),
        server("pyright", "pyright-langserver", &["--stdio"], &[".py"]),
        server(
            "typescript-language-server",
            "typescript-language-server",
            &["--stdio"],
            &[".ts", ".tsx", ".js", ".jsx"],
        ),
    ]
}

impl Thinking {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["off", "on", "low", "medium", "high"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            Thinking::Off => "off",
            Thinking::On => "on",
            Thinking::Low => "low",
            Thinking::Medium => "medium",
            Thinking::High => "high",
        }
    }

    fn from_name(name: &str) -> Option<Thinking> {
        Some(match name {
            "off" => Thinking::Off,
            "on" => Thinking::On,
            "low" => Thinking::Low,
            "medium" => Thinking::Medium,
            "high" => Thinking::High,
            _ => return None,
        })
    }
}

impl PermissionSetting {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["allow", "ask", "plan"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionSetting::Allow => "allow",
            PermissionSetting::Ask => "ask",
            PermissionSetting::Plan => "plan",
        }
    }

    fn from_name(name: &str) -> Option<PermissionSetting> {
        match name {
            "allow" => Some(PermissionSetting::Allow),
            "ask" => Some(PermissionSetting::Ask),
            "plan" => Some(PermissionSetting::Plan),
            _ => None,
        }
    }
}

impl SandboxSetting {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["off", "read-only", "workspace-write"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxSetting::Off => "off",
            SandboxSetting::ReadOnly => "read-only",
            SandboxSetting::WorkspaceWrite => "workspace-write",
        }
    }

    fn from_name(name: &str) -> Option<SandboxSetting> {
        match name {
            "off" => Some(SandboxSetting::Off),
            "read-only" => Some(SandboxSetting::ReadOnly),
            "workspace-write" => Some(SandboxSetting::WorkspaceWrite),
            _ => None,
        }
    }
}

impl EditMode {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["emacs", "vi"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            EditMode::Emacs => "emacs",
            EditMode::Vi => "vi",
        }
    }

    fn from_name(name: &str) -> Option<EditMode> {
        match name {
            "emacs" => Some(EditMode::Emacs),
            "vi" => Some(EditMode::Vi),
            _ => None,
        }
    }
}

impl Theme {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["dark", "light", "high-contrast"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::Dark => "dark",
            Theme::Light => "light",
            Theme::HighContrast => "high-contrast",
        }
    }

    fn from_name(name: &str) -> Option<Theme> {
        match name {
            "dark" => Some(Theme::Dark),
            "light" => Some(Theme::Light),
            "high-contrast" => Some(Theme::HighContrast),
            _ => None,
        }
    }
}

impl Notify {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["auto", "bell", "osc9", "off"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            Notify::Auto => "auto",
            Notify::Bell => "bell",
            Notify::Osc9 => "osc9",
            Notify::Off => "off",
        }
    }

    fn from_name(name: &str) -> Option<Notify> {
        match name {
            "auto" => Some(Notify::Auto),
            "bell" => Some(Notify::Bell),
            "osc9" => Some(Notify::Osc9),
            "off" => Some(Notify::Off),
            _ => None,
        }
    }
}

impl TextToolCalls {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["auto", "off"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            TextToolCalls::Auto => "auto",
            TextToolCalls::Off => "off",
        }
    }

    fn from_name(name: &str) -> Option<TextToolCalls> {
        match name {
            "auto" => Some(TextToolCalls::Auto),
            "off" => Some(TextToolCalls::Off),
            _ => None,
        }
    }
}

impl ConstrainedCalls {
    /// The YAML names, in the order error messages list them.
    pub const NAMES: &'static [&'static str] = &["auto", "always", "off"];

    /// The YAML name of this value.
    pub fn as_str(self) -> &'static str {
        match self {
            ConstrainedCalls::Auto => "auto",
            ConstrainedCalls::Always => "always",
            ConstrainedCalls::Off => "off",
        }
    }

    fn from_name(name: &str) -> Option<ConstrainedCalls> {
        match name {
            "auto" => Some(ConstrainedCalls::Auto),
            "always" => Some(ConstrainedCalls::Always),
            "off" => Some(ConstrainedCalls::Off),
            _ => None,
        }
    }
}

/// A name that is not one of an enum's names; its text is the one config
/// errors use: `"hgh" is not one of off, on, low, medium, high`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{given}\" is not one of {}", .names.join(", "))]
pub struct NotOneOf {
    /// The name that was given.
    pub given: String,
    /// The names allowed, in the order messages list them.
    pub names: &'static [&'static str],
}

macro_rules! named_enum {
    ($ty:ident) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = NotOneOf;
            fn from_str(s: &str) -> Result<Self, NotOneOf> {
                $ty::from_name(s).ok_or_else(|| NotOneOf {
                    given: s.to_owned(),
                    names: $ty::NAMES,
                })
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct NameVisitor;
                impl Visitor<'_> for NameVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "one of {}", $ty::NAMES.join(", "))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        $ty::from_name(v).ok_or_else(|| E::unknown_variant(v, $ty::NAMES))
                    }
                }
                d.deserialize_str(NameVisitor)
            }
        }
    };
}

named_enum!(Thinking);
named_enum!(PermissionSetting);
named_enum!(SandboxSetting);
named_enum!(McpLazy);
named_enum!(TextToolCalls);
named_enum!(EditMode);
named_enum!(Notify);
named_enum!(Theme);
named_enum!(ConstrainedCalls);

/// The window used when neither the settings, the server nor the table
/// of known models gives one.
pub const FALLBACK_WINDOW: u64 = 32768;

/// `contextWindow`: `auto` or a number of tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextWindow {
    /// Ask the server (docs/design.md#context-window).
    Auto,
    /// This many tokens, whatever the server says.
    Tokens(u64),
}

impl ContextWindow {
    /// The number the user set, if any.
    pub fn fixed(self) -> Option<u64> {
        match self {
            ContextWindow::Auto => None,
            ContextWindow::Tokens(n) => Some(n),
        }
    }
}

impl fmt::Display for ContextWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContextWindow::Auto => f.write_str("auto"),
            ContextWindow::Tokens(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for ContextWindow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContextWindow::Auto => s.serialize_str("auto"),
            ContextWindow::Tokens(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> Deserialize<'de> for ContextWindow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct WindowVisitor;
        impl Visitor<'_> for WindowVisitor {
            type Value = ContextWindow;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of tokens or auto")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ContextWindow, E> {
                Ok(ContextWindow::Tokens(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ContextWindow, E> {
                u64::try_from(v)
                    .map(ContextWindow::Tokens)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ContextWindow, E> {
                if v == "auto" {
                    Ok(ContextWindow::Auto)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }
        d.deserialize_any(WindowVisitor)
    }
}

/// `instructions: AGENTS.md` and `instructions: [A.md, B.md]` both work.
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct OneOrMany;
    impl<'de> Visitor<'de> for OneOrMany {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a file name or a list of file names")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<String>, E> {
            Ok(vec![v.to_owned()])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut names = Vec::new();
            while let Some(name) = seq.next_element::<String>()? {
                names.push(name);
            }
            Ok(names)
        }
    }
    d.deserialize_any(OneOrMany)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_server_names() {
        assert_eq!(mcp_server_name_problem("time"), None);
        assert_eq!(mcp_server_name_problem("my-docs_2"), None);
        assert!(mcp_server_name_problem("").is_some());
        assert_eq!(
            mcp_server_name_problem("a__b").as_deref(),
            Some("server name \"a__b\" may not contain \"__\"")
        );
        assert!(mcp_server_name_problem("a b").is_some());
        assert!(mcp_server_name_problem(&"x".repeat(33)).is_some());
        assert_eq!(sanitize_mcp_server_name("My Server!"), "My_Server");
        assert_eq!(sanitize_mcp_server_name("a__b"), "a_b");
        assert_eq!(sanitize_mcp_server_name("  "), "server");
        assert_eq!(sanitize_mcp_server_name(&"é".repeat(50)), "server");
        for odd in ["ab cd".repeat(20), "x.y/z".to_owned(), "__a__".to_owned()] {
            let clean = sanitize_mcp_server_name(&odd);
            assert_eq!(mcp_server_name_problem(&clean), None, "{odd} -> {clean}");
        }
    }

    #[test]
    fn mcp_server_debug_hides_values() {
        let server = McpServer {
            url: Some("http://127.0.0.1:1/mcp".into()),
            headers: [("Authorization".to_owned(), "Bearer sk-secret".to_owned())].into(),
            env: [("TOKEN".to_owned(), "tok-secret".to_owned())].into(),
            ..McpServer::default()
        };
        let shown = format!("{server:?}");
        assert!(
            shown.contains("Authorization") && shown.contains("TOKEN"),
            "{shown}"
        );
        assert!(!shown.contains("secret"), "{shown}");
    }
}
