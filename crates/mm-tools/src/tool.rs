//! The `Tool` interface every built-in tool implements, and the context a
//! call runs in. The [`crate::Toolbox`] drives a call through its steps:
//! parse → plan (preview, no side effect) → permission → run → detector.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use mm_policy::{Policy, Sandbox};
use mm_types::{AgentMode, FileChange, Sink, ToolFamily, ToolKind};
use tokio_util::sync::CancellationToken;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls the tool by (`bash`, `read_file` …).
    pub name: String,
    /// What the tool does and when to use it, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// What a tool is, said once: every consumer (the toolbox live and on
/// replay, the agent's checkpoints and counters, the front ends through
/// [`mm_types::ToolInfo`]) reads these facts here and none decides them again
/// by the tool's name or family. A built-in tool keeps its row in a
/// `const` next to its code (helix's `TypableCommand` row); an MCP tool
/// builds one with the name the server gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRow {
    /// The name the model calls the tool by (`bash`, `read_file` …).
    pub name: Cow<'static, str>,
    /// What its calls count as and how front ends mark them.
    pub family: ToolFamily,
    /// The ACP kind of its calls (a plan may say otherwise for one call:
    /// an `lsp` rename edits).
    pub kind: ToolKind,
    /// The argument whose text is a call's title (`command`, `path`); the
    /// tool's name when it is `None` or the call lacks it.
    pub title_from: Option<&'static str>,
    /// Whether a terminal shows the head of a call's output under it
    /// (`previewLines`), live and on replay alike.
    pub echoes: bool,
    /// Whether a call may change files (the agent takes a checkpoint of the
    /// project before the first such call of a turn, for `/undo`); false
    /// only for tools that just read.
    pub changes_files: bool,
    /// What the model gets when the user refuses a call that asked
    /// (docs/design.md#rejection-texts); `None` for a tool that never asks
    /// by itself (a rule making it ask gives the toolbox's
    /// `[call rejected by the user]`).
    pub rejection: Option<&'static str>,
}

impl ToolRow {
    /// The title of a call with arguments `args`: its
    /// [`title_from`](ToolRow::title_from) argument, or the tool's name.
    pub fn title(&self, args: &serde_json::Value) -> String {
        self.title_from
            .and_then(|key| text_field(args, key))
            .unwrap_or(&self.name)
            .to_string()
    }

    /// A call of this tool with that title, the row's kind, no location or
    /// state, asking permission when the row has a refusal text.
    pub fn plan(&self, title: impl Into<String>) -> Plan {
        let mut plan = Plan::simple(title, self.kind);
        plan.rejection = self.rejection;
        plan
    }
}

/// Whether tools that change things ask first when no rule speaks
/// (`permissions.default`).
pub use mm_policy::Mode as PermissionMode;

/// What the calls of one session may do: the permission rules (with the
/// rules "allow for the session" adds) and the sandbox of `bash` commands,
/// whose writable folders the file tools obey too.
#[derive(Debug)]
pub struct Permissions {
    policy: Policy,
    sandbox: Sandbox,
    /// The user's `PreToolUse`, `PostToolUse` and `Notification` hooks.
    hooks: Arc<mm_hooks::Hooks>,
    /// The answer a call asked the turn to end with (`exit_plan` when
    /// nobody can review the plan).
    ending: std::sync::Mutex<Option<String>>,
}

impl Permissions {
    /// No rules, this default, no sandbox.
    pub fn new(mode: PermissionMode) -> Self {
        Permissions::with(Policy::with_default(mode), Sandbox::off())
    }

    /// These rules and this sandbox.
    pub fn with(policy: Policy, sandbox: Sandbox) -> Self {
        Permissions {
            policy,
            sandbox,
            hooks: Arc::new(mm_hooks::Hooks::none()),
            ending: std::sync::Mutex::new(None),
        }
    }

    /// These permissions with the user's hooks run around each call.
    pub fn with_hooks(self, hooks: Arc<mm_hooks::Hooks>) -> Self {
        Permissions { hooks, ..self }
    }

    /// The hooks run around each call.
    pub fn hooks(&self) -> &Arc<mm_hooks::Hooks> {
        &self.hooks
    }

    /// The mode in force (the rules' default).
    pub fn mode(&self) -> AgentMode {
        match self.policy.default_mode() {
            PermissionMode::Allow => AgentMode::Allow,
            PermissionMode::Ask => AgentMode::Ask,
            PermissionMode::Plan => AgentMode::Plan,
        }
    }

    /// Switch modes for the calls judged from now on.
    pub fn set_mode(&self, mode: AgentMode) {
        self.policy.set_default_mode(match mode {
            AgentMode::Allow => PermissionMode::Allow,
            AgentMode::Ask => PermissionMode::Ask,
            AgentMode::Plan => PermissionMode::Plan,
        });
    }

    /// Ask the agent to end the turn after this call, with `answer` as its
    /// answer.
    pub fn end_turn_with(&self, answer: String) {
        *self.ending.lock().unwrap_or_else(|e| e.into_inner()) = Some(answer);
    }

    /// The answer a call asked the turn to end with, once.
    pub fn take_turn_end(&self) -> Option<String> {
        self.ending.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The rules.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The sandbox.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }
}

/// What the permission rules of a call are matched against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Subject {
    /// Nothing: only rules without a pattern apply.
    #[default]
    None,
    /// A `bash` command line.
    Command(String),
    /// The absolute path a file tool reads or writes.
    Path(PathBuf),
    /// The host of the URL `web_fetch` reads (`domain:` rules).
    Domain(String),
}

impl Subject {
    /// The form mm-policy judges.
    pub fn as_policy(&self) -> mm_policy::Subject<'_> {
        match self {
            Subject::None => mm_policy::Subject::None,
            Subject::Command(c) => mm_policy::Subject::Command(c),
            Subject::Path(p) => mm_policy::Subject::Path(p),
            Subject::Domain(h) => mm_policy::Subject::Domain(h),
        }
    }
}

/// What a tool call runs with. Travels with each call: no global state,
/// so one process can hold several sessions.
#[derive(Clone)]
pub struct ToolContext {
    /// The session's root: relative paths resolve here, `bash` runs here.
    pub cwd: PathBuf,
    /// Where the call's events go.
    pub sink: Arc<dyn Sink>,
    /// Cancelled by Escape, Ctrl-C or ACP `session/cancel`: a running command
    /// is killed at once.
    pub cancel: CancellationToken,
    /// The session's permission rules and sandbox.
    pub permissions: Arc<Permissions>,
    /// The most characters this call's result may hold: `maxOutput`, or
    /// less when the model's window is small
    /// (docs/design.md#tool-result-budget). Tools cut their own output to
    /// it with the usual truncation texts (docs/design.md#truncation).
    pub max_output: usize,
    /// The id of the call being run, for the events it sends while it runs
    /// ([`Event::ToolOutput`](mm_types::Event::ToolOutput)); set by
    /// `Toolbox::call`, empty outside a call.
    pub call_id: String,
}

impl ToolContext {
    /// `Some(text)` when the working directory no longer exists (deleted or
    /// moved while mm ran): no tool runs there then, and none re-creates it.
    pub fn cwd_gone(&self) -> Option<String> {
        match std::fs::metadata(&self.cwd) {
            Ok(m) if m.is_dir() => None,
            _ => Some(format!(
                "the working directory {} is gone (deleted or moved while mm ran); mm will not \
                 re-create it",
                self.cwd.display()
            )),
        }
    }
}

/// What a call will do, computed before it does anything
/// (docs/design.md#preview-before-permission).
pub struct Plan {
    /// The line a front end shows (`ls -la`, `src/main.rs`, `definition main.go greet`).
    pub title: String,
    /// What kind of call it is, as an editor shows it.
    pub kind: ToolKind,
    /// Absolute paths the call touches.
    pub locations: Vec<String>,
    /// For edits, the change to show while asking.
    pub change: Option<FileChange>,
    /// `Some(text)` when the call needs permission; `text` is what the model
    /// gets when the user refuses: the row's
    /// [`rejection`](ToolRow::rejection) (docs/design.md#rejection-texts).
    pub rejection: Option<&'static str>,
    /// What the tool prepared while planning, for `run` to carry out.
    pub(crate) state: Option<Prepared>,
}

/// What `plan` prepared and `run` carries out, typed: the write of a
/// `write_file` or `edit_file` call, the edits of an `lsp` rename.
pub(crate) enum Prepared {
    Write(crate::files::Outcome),
    Rename(mm_lsp::RenamePlan),
}

impl Plan {
    /// A plan that needs no permission and carries no state.
    pub fn simple(title: impl Into<String>, kind: ToolKind) -> Self {
        Plan {
            title: title.into(),
            kind,
            locations: Vec::new(),
            change: None,
            rejection: None,
            state: None,
        }
    }
}

/// What a call gives the model, and whether it failed. Tools say so
/// themselves: a status guessed from the text would call a `cat` whose last
/// line reads `[error: …]` a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model receives.
    pub text: String,
    /// The call did not do what it was asked (ToolEnd status `Failed`,
    /// recorded in the history); the text says why.
    pub failed: bool,
    /// Pictures for the model (`read_file` of a PNG), after the text.
    pub images: Vec<mm_types::Image>,
}

impl ToolOutput {
    /// A call that did its job.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            failed: false,
            images: Vec::new(),
        }
    }

    /// A call that failed; `text` tells the model why.
    pub fn fail(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            failed: true,
            images: Vec::new(),
        }
    }
}

impl From<Result<String, String>> for ToolOutput {
    /// `Err` is a failure, the way `plan` refuses.
    fn from(r: Result<String, String>) -> Self {
        match r {
            Ok(text) => ToolOutput::ok(text),
            Err(text) => ToolOutput::fail(text),
        }
    }
}

/// How a front end shows a call that has no plan (refused while planning,
/// bad arguments): the title, kind and locations the reference gives the
/// tool, read from whatever arguments arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// The line a front end shows for the call.
    pub title: String,
    /// What kind of call it is, as an editor shows it.
    pub kind: ToolKind,
    /// Absolute paths the call names.
    pub locations: Vec<String>,
}

impl Described {
    /// A call shown by its tool's name alone: for a name no tool has, or
    /// a tool whose `describe` failed.
    pub fn bare(name: &str) -> Described {
        Described {
            title: name.to_string(),
            kind: ToolKind::Other,
            locations: Vec::new(),
        }
    }

    /// A plan that shows what `self` describes, needs no permission and
    /// carries no state.
    pub fn into_plan(self) -> Plan {
        let mut plan = Plan::simple(self.title, self.kind);
        plan.locations = self.locations;
        plan
    }
}

/// A built-in tool. Ordinary failures are text for the model: `plan`
/// returns `Err(text)` for a call that must not run (bad arguments, missing
/// file); `run` always returns a [`ToolOutput`] and says whether it failed.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// What the tool is: name, family, kind, echo, whether it changes
    /// files, its refusal text. Adding a tool is its module and one
    /// registration; nothing above decides by the tool's name.
    fn row(&self) -> &ToolRow;

    /// The tool's description and argument schema, as declared to the
    /// model, under the row's name.
    fn spec(&self) -> ToolSpec;

    /// Whether the model is offered the tool in `mode`; every mode by
    /// default (`exit_plan` only in plan mode).
    fn declared_in(&self, mode: AgentMode) -> bool {
        let _ = mode;
        true
    }

    /// Title, kind and locations of a call from its raw arguments (which
    /// may be incomplete or not even an object), so that a call refused
    /// before it has a plan is still shown as what it is. The default is
    /// the row's: its title argument (or the tool's name), its kind, no
    /// location.
    fn describe(&self, args: &serde_json::Value, ctx: &ToolContext) -> Described {
        let _ = ctx;
        let row = self.row();
        Described {
            title: row.title(args),
            kind: row.kind,
            locations: Vec::new(),
        }
    }

    /// What the permission rules judge a call by, from its arguments (an
    /// object): the command line of `bash`, the path of a file tool. The
    /// default is nothing: only rules without a pattern apply. Asked before
    /// `plan`, so a denied call costs no planning.
    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        let _ = (args, ctx);
        Subject::None
    }

    /// Work out what a call will do without doing it: the preview, whether it
    /// needs permission, and what `run` carries out. `Err(text)` refuses the
    /// call; the text is what the model gets.
    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String>;

    /// Carry out a call with the plan `plan` made for it, after permission
    /// was given (or not needed).
    async fn run(&self, args: &serde_json::Value, plan: Plan, ctx: &ToolContext) -> ToolOutput;
}

/// The string field `key` of the arguments, when it is one and not blank:
/// what [`Tool::describe`] builds titles from.
pub(crate) fn text_field<'a>(args: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// Parse a tool's arguments into its typed form, or give the reference's
/// bad-arguments text.
pub fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: &serde_json::Value,
) -> Result<T, String> {
    if !args.is_object() {
        return Err(invalid_args(tool, "the arguments are not a JSON object"));
    }
    serde_json::from_value(args.clone()).map_err(|e| invalid_args(tool, &e.to_string()))
}

/// `invalid arguments for <tool>: <what>; send a JSON object matching the tool's schema`
pub fn invalid_args(tool: &str, what: &str) -> String {
    format!("invalid arguments for {tool}: {what}; send a JSON object matching the tool's schema")
}
