//! The event sink every front end supplies. The agent loop and the tools
//! emit [`Event`]s into the [`Sink`] that travels with each turn; they never
//! print. The sink knows nothing about a protocol or a widget: a front end
//! turns events into lines, JSON-RPC notifications or transcript entries.

use futures::future::BoxFuture;
use serde::Serialize;

/// The family a tool call belongs to, as an editor groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Reads files or other state without changing anything.
    Read,
    /// Changes files.
    Edit,
    /// Runs a command.
    Execute,
    /// Searches (no tool of mm's says it today; kept for the ACP kind of the
    /// same name).
    Search,
    /// Thinks: a subagent working on a job (`task`), the ACP kind `think`.
    Think,
    /// Reads a web page (`web_fetch`, `web_search`).
    Fetch,
    /// Anything else.
    Other,
}

/// Which family a tool belongs to: what a front end counts it as and how
/// it shows it. Each tool says its own; nothing above the tools decides by
/// a tool's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFamily {
    /// Runs a command (`bash`).
    Command,
    /// Reads or writes a file (`read_file`, `write_file`, `edit_file`).
    File,
    /// Reads a skill (`read_skill`).
    Skill,
    /// Asks a language server (`lsp`).
    Lsp,
    /// Calls an MCP server's tool.
    Mcp,
    /// Anything else (a tool the session does not know).
    #[default]
    Other,
}

/// What a tool will change, computed before it runs so that a front end
/// can show it while it asks for permission
/// (docs/design.md#preview-before-permission).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// Absolute path of the file.
    pub path: String,
    /// The whole file before, `None` for a new file. `None` too, with
    /// `too_large`, when the file passes 1 MiB
    /// (docs/design.md#large-files-in-previews).
    pub old_text: Option<String>,
    /// The whole file after.
    pub new_text: Option<String>,
    /// A unified diff with line numbers, as the model will see it.
    pub diff: String,
    /// Set when the contents were left out for size; `lines` says how many.
    pub too_large: bool,
    /// Lines of the new text, whether or not it is included.
    pub lines: usize,
}

/// A tool call as a front end shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolInfo {
    /// The engine's call id (unique in the session).
    pub id: String,
    /// The tool's name (`bash`, `edit_file` …).
    pub tool: String,
    /// The tool's family: how a front end counts and shows the call.
    pub family: ToolFamily,
    /// Whether a terminal shows the head of the output under the call (the
    /// tool's row says it; `ToolEnd`'s `preview` then holds those lines).
    /// Not in the JSON events: their `preview` says it already.
    #[serde(skip)]
    pub echoes: bool,
    /// What to show: the command line, `path`, `definition main.go greet` …
    pub title: String,
    /// What kind of call it is, as an editor shows it.
    pub kind: ToolKind,
    /// The arguments as the model sent them (parsed JSON where valid).
    pub input: serde_json::Value,
    /// Absolute paths the call touches.
    pub locations: Vec<String>,
    /// For edits: the change the call will make.
    pub change: Option<FileChange>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool ran and succeeded.
    Completed,
    /// The tool failed, was rejected, or did not run.
    Failed,
}

/// Per-turn counters, shown after a turn (docs/reference/tools.md#counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// `bash` calls.
    pub commands: u32,
    /// `read_file`, `write_file` and `edit_file` calls.
    pub file_ops: u32,
    /// `read_skill` calls.
    pub skills: u32,
    /// `lsp` calls.
    pub lsp_calls: u32,
}

impl Counters {
    /// The recap line: non-zero counters, two spaces apart.
    /// Empty when nothing ran.
    pub fn recap(&self) -> String {
        let mut parts = Vec::new();
        if self.commands > 0 {
            parts.push(format!("⚙ {} command(s)", self.commands));
        }
        if self.file_ops > 0 {
            parts.push(format!("📝 {} file op(s)", self.file_ops));
        }
        if self.skills > 0 {
            parts.push(format!("📖 {} skill(s)", self.skills));
        }
        if self.lsp_calls > 0 {
            parts.push(format!("🔎 {} lsp call(s)", self.lsp_calls));
        }
        parts.join("  ")
    }

    /// Count one response of a tool of `family` (MCP tools and unknown
    /// ones have no counter of their own).
    pub fn count(&mut self, family: ToolFamily) {
        match family {
            ToolFamily::Command => self.commands += 1,
            ToolFamily::File => self.file_ops += 1,
            ToolFamily::Skill => self.skills += 1,
            ToolFamily::Lsp => self.lsp_calls += 1,
            ToolFamily::Mcp | ToolFamily::Other => {}
        }
    }
}

/// Tokens counted by the model server: the prompts sent, the answers
/// written, and of the prompts the part read from the server's cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TokenCounts {
    /// Prompt tokens, the cached part included.
    pub prompt: u64,
    /// Answer tokens.
    pub completion: u64,
    /// Of `prompt`, those the server read from its prompt cache.
    pub cached: u64,
}

impl TokenCounts {
    /// The one line every terminal front end shows of a session's tokens:
    /// `in 4.1k (3.9k cached) · out 210 · 13% of 32k`, the share being how
    /// full the model's window (`window` tokens) is with `context` tokens;
    /// no share while the window is not known (0).
    pub fn line(&self, context: u64, window: u64) -> String {
        let cached = if self.cached > 0 {
            format!(" ({} cached)", short_count(self.cached))
        } else {
            String::new()
        };
        let share = match context.saturating_mul(100).checked_div(window) {
            Some(p) => format!(" · {}% of {}", p.min(100), short_count(window)),
            None => String::new(),
        };
        format!(
            "in {}{cached} · out {}{share}",
            short_count(self.prompt),
            short_count(self.completion),
        )
    }
}

/// A count as people read it at a glance: `950`, `1.2k`, `34k`, `1.5M`.
pub fn short_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => tenths(n / 1000, (n % 1000) / 100, "k"),
        10_000..1_000_000 => format!("{}k", n / 1000),
        _ => tenths(n / 1_000_000, (n % 1_000_000) / 100_000, "M"),
    }
}

/// `1.2k`, or `1k` when the tenth is 0.
fn tenths(whole: u64, tenth: u64, unit: &str) -> String {
    if tenth == 0 {
        format!("{whole}{unit}")
    } else {
        format!("{whole}.{tenth}{unit}")
    }
}

/// The line every front end shows for [`Event::Attached`].
pub fn attached_line(path: &str, size: &str) -> String {
    format!("attached {path} ({size})")
}

/// The line every front end shows after a cancelled turn.
pub const CANCELLED_LINE: &str = "[cancelled]";

/// What kind of failure ended a turn, for a caller that branches on it
/// (retry later, fix the settings, start a new session); the sentence of a
/// [`TurnError`] says the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The settings cannot reach a model: unknown provider, a model that is
    /// not `PROVIDER/MODEL`, no base URL, no key.
    Setup,
    /// Nothing answered, or the connection broke.
    Network,
    /// The server answered with an error status (or asked for a longer
    /// wait than `maxRetryWait`).
    Server,
    /// The request did not fit the model's window and compaction could not
    /// cure it.
    Overflow,
    /// The stream stalled, broke off, or a call's arguments ran away.
    Stream,
    /// The loop detector's second level: the same call over and over.
    Loop,
    /// A hook of the user's refused the question (`UserPromptSubmit`).
    Blocked,
}

/// Why a turn failed: its kind and the sentence a user reads (what
/// `Display` prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnError {
    /// What kind of failure.
    pub kind: FailureKind,
    /// The whole sentence, naming the server, the limit or the call.
    pub message: String,
}

impl TurnError {
    /// A failure of `kind` that reads `message`.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> TurnError {
        TurnError {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TurnError {}

/// Why a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model answered without asking for more tools.
    Done,
    /// The user (or the editor) cancelled.
    Cancelled,
    /// `maxTurns` requests were made.
    MaxTurns,
    /// An error ended the turn (server down, loop detector stop, runaway…).
    Failed(TurnError),
    /// The answer repeated one passage back to back and was stopped; what
    /// came before the loop and one copy are kept. The guard's sentence.
    Repeated(String),
}

/// Where an item of the model's checklist (the `todo` tool) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the model's checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PlanItem {
    /// What is to be done, as the model wrote it.
    pub text: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// What the agent may do without asking (`permissions.default`, `/mode`,
/// Shift-Tab): always on screen in a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    /// Commands and edits run without asking (rules still apply).
    Allow,
    /// The user is asked before commands, edits, MCP tools and fetches.
    Ask,
    /// Read-only: edits and commands that can change things are refused.
    Plan,
}

impl AgentMode {
    /// Every mode, in Shift-Tab's order.
    pub const ALL: [AgentMode; 3] = [AgentMode::Allow, AgentMode::Ask, AgentMode::Plan];

    /// `allow`, `ask` or `plan`.
    pub fn name(self) -> &'static str {
        match self {
            AgentMode::Allow => "allow",
            AgentMode::Ask => "ask",
            AgentMode::Plan => "plan",
        }
    }

    /// The mode by its name.
    pub fn from_name(name: &str) -> Option<AgentMode> {
        AgentMode::ALL.into_iter().find(|m| m.name() == name.trim())
    }

    /// What the mode means, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            AgentMode::Allow => "commands and edits run without asking",
            AgentMode::Ask => "asks before commands and edits",
            AgentMode::Plan => "read-only: plans, changes nothing",
        }
    }

    /// The next mode Shift-Tab chooses: allow → ask → plan → allow.
    pub fn next(self) -> AgentMode {
        match self {
            AgentMode::Allow => AgentMode::Ask,
            AgentMode::Ask => AgentMode::Plan,
            AgentMode::Plan => AgentMode::Allow,
        }
    }

    /// The banner's line: `mode: allow — commands and edits run without
    /// asking; Shift-Tab to change`.
    pub fn banner_line(self) -> String {
        format!(
            "mode: {} — {}; Shift-Tab to change",
            self.name(),
            self.meaning()
        )
    }
}

impl std::fmt::Display for AgentMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The user's answer to a plan the model presented (`exit_plan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanReview {
    /// Leave plan mode for this mode and carry the plan out.
    Proceed(AgentMode),
    /// Stay in plan mode; what the user said about the plan, for the model.
    Stay(Option<String>),
    /// The turn was cancelled while asking.
    Cancelled,
    /// Nobody can answer here (a script): the plan is the turn's answer.
    Unavailable,
}

/// Everything a front end is told.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A question of a saved conversation being replayed (a live turn does
    /// not send its own: the front end has it already).
    Question {
        /// The question, as the session recorded it.
        text: String,
    },
    /// A file the question mentioned (`@path`) is attached: a front end
    /// says so, the model reads it.
    Attached {
        /// The path as the question wrote it.
        path: String,
        /// How big it is, for the user: `12 lines`, `a directory`….
        size: String,
    },
    /// A piece of the answer.
    Text {
        /// The piece's text, to append to the answer so far.
        text: String,
    },
    /// A piece of reasoning.
    Reasoning {
        /// The piece's text, to append to the reasoning so far.
        text: String,
    },
    /// What the agent is waiting for (`Thinking`, `Composing a tool call`);
    /// a terminal shows it in its spinner.
    Status {
        /// What is waited for.
        text: String,
    },
    /// A tool call is about to be considered (before permission).
    ToolStart {
        /// The call, as the front end shows it.
        info: ToolInfo,
    },
    /// A tool call runs (after permission).
    ToolRunning {
        /// The call's id, as [`ToolInfo::id`] gave it.
        id: String,
    },
    /// A tool call ended. `output` is what the model receives; `preview` the
    /// first `previewLines` lines for a terminal to echo.
    ToolEnd {
        /// The call's id, as [`ToolInfo::id`] gave it.
        id: String,
        /// The tool's name.
        tool: String,
        /// Whether the call succeeded.
        status: ToolStatus,
        /// The result text, as the model receives it.
        output: String,
        /// Lines to echo; empty for tools whose output is not echoed.
        preview: Vec<String>,
    },
    /// Pictures a call returned for the model (`read_file` of a PNG), sent
    /// just before its `ToolEnd`: an editor shows them with the call.
    ToolImages {
        /// The call's id.
        id: String,
        /// The pictures, as the model receives them.
        images: Vec<crate::message::Image>,
    },
    /// A piece of a running call's output as it arrives (`bash`), already
    /// redacted, for a front end to show progress. What the model gets is
    /// `ToolEnd`'s `output`, unchanged by these.
    ToolOutput {
        /// The call's id.
        id: String,
        /// The new text; not cut at line ends.
        text: String,
    },
    /// The session's tokens so far and how full the model's window is,
    /// sent as each turn ends (before `TurnEnd`).
    Tokens {
        /// The session's counts, over every turn and process.
        session: TokenCounts,
        /// Tokens the window holds now (the last request and its answer).
        context: u64,
        /// The window in force, in tokens.
        window: u64,
    },
    /// A line for the user (`compacted: …`, `[stopped: maxTurns (N) reached]`).
    Notice {
        /// The text to show the user.
        text: String,
    },
    /// A failure the user must see.
    Error {
        /// What went wrong, for the user.
        text: String,
    },
    /// The model's checklist changed (the `todo` tool), or a loaded
    /// session brings its last one back: the whole list.
    Plan {
        /// Every item, in the model's order.
        items: Vec<PlanItem>,
    },
    /// The mode changed from inside a turn (the user accepted a plan).
    Mode {
        /// The mode now in force.
        mode: AgentMode,
    },
    /// An event of a subagent, under the `task` call that runs it: a
    /// front end shows it in that call's block (JSON mode writes the inner
    /// event with a `parent` field). A child's `TurnEnd` says how it ended
    /// and the tokens it used.
    Child {
        /// The id of the `task` call the subagent runs for.
        parent: String,
        /// The subagent's name (`explore`, `general`, a file's).
        agent: String,
        /// What the subagent did.
        event: Box<Event>,
    },
    /// The turn ended.
    TurnEnd {
        /// Why the turn ended.
        outcome: TurnOutcome,
        /// What the tools did in the turn.
        counters: Counters,
        /// Prompt tokens of the turn's requests, added up.
        prompt_tokens: u64,
        /// Tokens the model generated in the turn.
        completion_tokens: u64,
        /// Of `prompt_tokens`, those the server read from its prompt cache.
        cached_tokens: u64,
    },
}

/// A user's answer to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run this call.
    AllowOnce,
    /// Run this call and every later call of the same tool in the session.
    AllowAlways,
    /// Do not run it; the model is told.
    Reject,
    /// The turn was cancelled while asking.
    Cancelled,
}

/// Receives a turn's events and answers permission requests.
pub trait Sink: Send + Sync {
    /// Take one event. Must not block for long: it is called from the stream.
    fn event(&self, event: Event);

    /// Ask whether `info` may run. Called only when the policy says to ask.
    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision>;

    /// Why nobody can answer a permission question here (a run without a
    /// terminal), as the model is to read it; `None`, the default, when
    /// [`Sink::permission`] can ask. A call this answers for is not run
    /// and `permission` is not called.
    fn cannot_ask(&self, info: &ToolInfo) -> Option<String> {
        let _ = info;
        None
    }

    /// What the user said with their rejection of call `id`, for the
    /// model (asked once, right after `permission` answered `Reject`).
    /// A front end without a way to say it keeps the default.
    fn rejection_reason(&self, id: &str) -> Option<String> {
        let _ = id;
        None
    }

    /// Show the plan the model presented (Markdown) and ask whether to
    /// leave plan mode. The default, for a front end with nobody to ask,
    /// makes the plan the turn's answer.
    fn review_plan<'a>(&'a self, plan: &'a str) -> BoxFuture<'a, PlanReview> {
        let _ = plan;
        Box::pin(async { PlanReview::Unavailable })
    }
}

/// A sink that drops every event and allows everything: for library users
/// who only want the history, and for tests of lower layers.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl Sink for NullSink {
    fn event(&self, _event: Event) {}

    fn permission<'a>(&'a self, _info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::AllowOnce })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_at_a_glance() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1k"),
            (1234, "1.2k"),
            (9999, "9.9k"),
            (32768, "32k"),
            (131072, "131k"),
            (1_000_000, "1M"),
            (1_500_000, "1.5M"),
        ];
        for (n, text) in cases {
            assert_eq!(short_count(n), text, "{n}");
        }
    }

    #[test]
    fn the_token_line_says_how_full_the_window_is() {
        let t = TokenCounts {
            prompt: 4100,
            completion: 210,
            cached: 3900,
        };
        assert_eq!(
            t.line(4310, 32768),
            "in 4.1k (3.9k cached) · out 210 · 13% of 32k"
        );
        // Nothing cached is not mentioned; an over-full window says 100%.
        let t = TokenCounts { cached: 0, ..t };
        assert_eq!(t.line(50_000, 32768), "in 4.1k · out 210 · 100% of 32k");
        // A window not known yet is not made up.
        assert_eq!(TokenCounts::default().line(0, 0), "in 0 · out 0");
    }
}
