//! The agent: one session's history, its engine and tools, and the turn
//! loop that drives them. Front ends and library users hold an [`Agent`],
//! give it questions with their own [`Sink`], and read its history.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mm_config::Config;
use mm_engine::{
    Engine, EngineError, GenerateError, Generation, Message, StreamEvent, ToolCall, ToolDecl,
    Usage, Window, WindowSource,
};
use mm_store::{Session, SessionInfo, Store};
use mm_tools::todo::Checklist;
use mm_tools::{CallOutcome, Permissions, ToolContext, Toolbox};
use mm_ui::{AgentMode, Counters, Event, FailureKind, PlanItem, Sink, TurnError, TurnOutcome};
use tokio_util::sync::CancellationToken;

use crate::checkpoint::{Direction, Rewind, RewindError, Rewinder};
use crate::commands::{Call, Command, Commands, Front, Outcome, Run, custom};
use crate::instructions::Instructions;
use crate::mcp::{EditorServer, McpSession};
use crate::{checkpoint, compact, history, mention, prompt, tools};

mod answer;
mod replay;
mod sessions;
mod window;

use window::ask_window;

/// The banner's language-server line when none of the servers the user
/// listed is on the PATH.
pub const NO_LSP: &str = "no language server found on the PATH: the lsp tool is not declared";

/// The result every call that is stopped before it ran receives, so the
/// next request is valid for every provider
/// (docs/design.md#every-call-gets-a-result).
pub use mm_tools::NOT_RUN;

/// The result a call has in the session file while it runs: if mm dies
/// before the call ends (`kill -9`, a power cut), that is what the record
/// says on `--continue`, never that the call did not run.
pub const INTERRUPTED: &str =
    "[interrupted: mm stopped while the call was running; its effects may be partial]";

/// Why an agent could not be built or a command failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model server could not be set up or a request failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A session file could not be read or written.
    #[error(transparent)]
    Store(#[from] mm_store::StoreError),
    /// The settings turn session files off.
    #[error("sessions are disabled (sessions.enabled: false)")]
    SessionsDisabled,
    /// `--continue` (or `/resume` without an id) found no session here.
    #[error("no saved session for {}", .0.display())]
    NoSession(PathBuf),
    /// The latest session of the folder is a file that cannot be read; it
    /// is never passed over in silence.
    #[error(
        "the latest session of {} cannot be continued: {why} (the file is left as it is; \
         --resume ID continues another)",
        cwd.display()
    )]
    LatestUnreadable {
        /// The folder whose latest session it is.
        cwd: PathBuf,
        /// What is wrong with the file, naming it.
        why: String,
    },
    /// Every session file of the folder is unreadable.
    #[error("no readable saved session for {}: {} (left as it is)", cwd.display(), why.join("; "))]
    NoneReadable {
        /// The folder whose sessions were read.
        cwd: PathBuf,
        /// What is wrong with each file, one entry per file.
        why: Vec<String>,
    },
    /// `/compact` could not summarise (the reason, for the user).
    #[error("{0}")]
    Compaction(String),
    /// `/fork` before anything was asked.
    #[error("nothing to fork yet: ask a question first")]
    NothingToFork,
    /// A permission rule of the user's settings cannot be read.
    #[error("{0} (in the user's settings file)")]
    Rules(String),
    /// The `hooks` setting names an unknown event, a bad matcher or type.
    #[error("{0} (in the user's settings file)")]
    Hooks(#[from] mm_hooks::HookError),
    /// The builder was given no folder and the process's working
    /// directory cannot be read.
    #[error("cannot read the working directory: {0}")]
    WorkingDir(#[source] std::io::Error),
}

/// Which permission setting applies: the terminal's `permissions` or the
/// editor's `acp.permissions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionSource {
    /// A terminal front end (`mm-repl`, `mm-tui`): `permissions`.
    Terminal,
    /// An editor through ACP (`mm-acp`): `acp.permissions`.
    Editor,
}

/// How a turn ended, with what it counted.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    /// Why the turn ended.
    pub outcome: TurnOutcome,
    /// What the tools did in the turn.
    pub counters: Counters,
    /// The token counts of the turn's requests, added up.
    pub usage: Usage,
    /// Why the session file could not be written, when it could not (the
    /// Sink got the same text as an `Error` event): the turn is not
    /// recorded, which a script must be able to tell.
    pub not_saved: Option<String>,
}

impl TurnReport {
    /// True when the turn ended normally and was recorded (`mm-repl -p`
    /// exits 0 only then).
    pub fn ok(&self) -> bool {
        self.outcome == TurnOutcome::Done && self.not_saved.is_none()
    }
}

/// One session: its settings, engine, tools and history.
pub struct Agent {
    config: Config,
    cwd: PathBuf,
    engine: Engine,
    toolbox: Toolbox,
    lsp: Option<Arc<mm_lsp::Client>>,
    /// Background commands; ended with the session.
    jobs: Arc<mm_tools::bash::jobs::Jobs>,
    mcp: McpSession,
    warnings: Vec<String>,
    /// Those of `warnings` about the user's and the project's files
    /// (commands, instructions).
    file_warnings: Vec<String>,
    decls: Vec<ToolDecl>,
    permissions: Arc<Permissions>,
    system: String,
    history: Vec<Message>,
    store: Option<Store>,
    session: Option<Session>,
    /// Tokens per character, from the last usage the server reported.
    ratio: Option<f64>,
    last_answer: String,
    commands: Commands,
    /// Checkpoints of the project's files around each turn (undo, redo).
    rewinder: Rewinder,
    /// The last save's failure, cleared by a save that works.
    not_saved: Option<String>,
    instructions: Instructions,
    /// The session's token counts so far, kept in its file.
    usage: Usage,
    /// The session's prompt-cache key, kept in its file.
    cache_key: String,
    /// The built-in list's language servers not on the PATH.
    lsp_missing: Vec<String>,
    /// The question to the server about the model's window, started with
    /// the engine so that it runs while the user types.
    window_task: Option<tokio::task::JoinHandle<Window>>,
    /// The window's answer was taken (or asked for) already.
    window_settled: bool,
    /// Why the next request must be compacted first (the server may have
    /// cut the last prompt silently).
    compact_next: bool,
    /// Whether this session's `SessionStart` hooks ran.
    hook_session_started: bool,
    /// Said once, at the first question: a small window keeps only the
    /// core tools declared.
    small_window_notice: Option<String>,
    /// Says once when the server recomputes the whole prompt every turn.
    cache_watch: mm_engine::cache_watch::CacheWatch,
    /// What [`Agent::context_used`] says.
    in_context: u64,
    /// The mode the model was last told of and the declarations follow.
    mode: AgentMode,
    /// The note the next question carries: the mode changed since the
    /// model was last told (the system prompt stays the same).
    mode_note: Option<&'static str>,
    /// The model's last checklist (`todo`), kept in the session file.
    checklist: Checklist,
    /// The `task` tool's agents and the runs that ended.
    subagents: Arc<crate::subagent::Subagents>,
    /// Every subagent's run in this session, kept in its file.
    children: Vec<mm_store::Subagent>,
}

impl Agent {
    /// Start building an agent from merged settings (for a program that
    /// embeds mm, [`Config::isolated`] touches nothing of the user's):
    /// `Agent::builder(config).cwd(dir).build()`.
    pub fn builder(config: Config) -> crate::AgentBuilder {
        crate::AgentBuilder::new(config)
    }

    /// Build an agent for a session rooted at `cwd` from merged settings.
    pub fn new(config: Config, cwd: &Path, source: PermissionSource) -> Result<Agent, AgentError> {
        Agent::with_editor_servers(config, cwd, source, &[])
    }

    /// Like [`Agent::new`], with the MCP servers an editor names for this
    /// session besides those of the settings (the editor's win a name
    /// both use). Servers start now, in the background; the first question
    /// waits for them at most `mcp.startTimeout`.
    pub fn with_editor_servers(
        config: Config,
        cwd: &Path,
        source: PermissionSource,
        editor: &[EditorServer],
    ) -> Result<Agent, AgentError> {
        let cache_key = mm_engine::new_cache_key();
        let engine = Engine::new(&config)?.with_cache_key(&cache_key);
        let window_task = ask_window(&engine);
        let mcp = McpSession::start(&config, cwd, editor);
        let mut secrets = secrets(&config, &engine);
        for s in mcp.secrets() {
            if !secrets.contains(&s) {
                secrets.push(s);
            }
        }
        let tools::Tools {
            toolbox,
            lsp,
            mut warnings,
            lsp_missing,
            checklist,
            jobs,
            subagents,
            agent_warnings,
        } = tools::toolbox(&config, cwd, &secrets);
        let mut commands = Commands::builtin();
        let mut file_warnings = custom::load(&mut commands, &config.user_dir, cwd);
        file_warnings.extend(agent_warnings);
        let (permissions, sandbox_warning) = crate::permissions::build(&config, cwd, source)?;
        let instructions =
            Instructions::gather_with(cwd, &config.user_dir, &config.instructions, &|path| {
                crate::permissions::read_denied(&permissions, cwd, path)
            });
        file_warnings.extend(instructions.skipped.iter().cloned());
        file_warnings.extend(instructions.notice());
        // A sandbox the settings ask for and this machine cannot (wholly)
        // enforce is said to a script too: it ran commands expecting it.
        file_warnings.extend(sandbox_warning);
        warnings.extend(file_warnings.iter().cloned());
        let mode = permissions.mode();
        let decls = tools::declarations(&toolbox, mode);
        let store = config
            .sessions
            .enabled
            .then(|| Store::new(config.sessions.dir.clone()).with_secrets(secrets));
        Ok(Agent {
            system: prompt::system_prompt(cwd, &instructions),
            instructions,
            cwd: cwd.to_path_buf(),
            engine,
            toolbox,
            lsp,
            jobs,
            mcp,
            warnings,
            file_warnings,
            decls,
            permissions: Arc::new(permissions),
            history: Vec::new(),
            store,
            session: None,
            ratio: None,
            last_answer: String::new(),
            commands,
            rewinder: Rewinder::new(&config.checkpoints, cwd),
            not_saved: None,
            usage: Usage::default(),
            cache_key,
            lsp_missing,
            window_task,
            window_settled: false,
            compact_next: false,
            hook_session_started: false,
            small_window_notice: None,
            cache_watch: Default::default(),
            in_context: 0,
            config,
            mode,
            // A session that starts in plan mode says so with its first
            // question; allow and ask need no word.
            mode_note: (mode == AgentMode::Plan).then(|| mm_tools::mode_note(mode)),
            checklist,
            subagents,
            children: Vec::new(),
        })
    }

    /// The mode in force: `allow`, `ask` or `plan`.
    pub fn mode(&self) -> AgentMode {
        self.permissions.mode()
    }

    /// Switch modes (`/mode`, Shift-Tab, an editor's `session/set_mode`):
    /// calls are judged by the new mode from now on, the model reads a
    /// short note with the next question, and `exit_plan` is declared in
    /// plan mode only.
    pub fn set_mode(&mut self, mode: AgentMode) {
        self.permissions.set_mode(mode);
        if mode == self.mode {
            return;
        }
        self.mode = mode;
        self.mode_note = Some(mm_tools::mode_note(mode));
        self.sync_decls();
    }

    /// The declarations that depend on the mode, made to follow it: a tool
    /// the mode hides is dropped, one it offers again goes last (the
    /// earlier declarations, and a server's cache of them, stay).
    fn sync_decls(&mut self) {
        let hidden = self.toolbox.hidden_in(self.mode);
        let mut by_mode: Vec<String> = Vec::new();
        for m in AgentMode::ALL {
            for name in self.toolbox.hidden_in(m) {
                if !by_mode.contains(&name) {
                    by_mode.push(name);
                }
            }
        }
        self.decls.retain(|d| !hidden.contains(&d.name));
        for name in by_mode.iter().filter(|n| !hidden.contains(n)) {
            if self.decls.iter().any(|d| &d.name == name) {
                continue;
            }
            if let Some(s) = self.toolbox.spec(name) {
                self.decls.push(ToolDecl {
                    name: s.name,
                    description: s.description,
                    parameters: s.parameters,
                });
            }
        }
    }

    /// The model's last checklist (`todo`); empty when it kept none.
    pub fn checklist(&self) -> Vec<PlanItem> {
        self.checklist
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_checklist(&self, items: Vec<PlanItem>) {
        *self.checklist.lock().unwrap_or_else(|e| e.into_inner()) = items;
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The session's root.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// `PROVIDER/MODEL` in use.
    pub fn model(&self) -> String {
        format!("{}/{}", self.engine.provider(), self.engine.model())
    }

    /// The model server's address.
    pub fn base_url(&self) -> &str {
        self.engine.base_url()
    }

    /// The `PROVIDER` part of the model in use.
    pub fn provider(&self) -> &str {
        self.engine.provider()
    }

    /// The models the server offers (`/model` without a name; an
    /// editor's model choice). The request does not hold the agent: a
    /// front end may ask it while a turn runs.
    pub fn server_models(
        &self,
    ) -> impl Future<Output = Result<Vec<mm_engine::ModelEntry>, AgentError>> + Send + 'static {
        let engine = self.engine.clone();
        async move { Ok(engine.list_models().await?) }
    }

    /// What `/permissions` shows: the default, the rules of the settings,
    /// the rules added for this session, and the sandbox.
    pub fn permission_lines(&self) -> Vec<String> {
        crate::permissions::lines(&self.permissions)
    }

    /// The names of the declared tools.
    pub fn tool_names(&self) -> Vec<String> {
        let hidden = self.toolbox.hidden_in(self.mode());
        let mut names = self.toolbox.names();
        names.retain(|n| !hidden.contains(n));
        names
    }

    /// The instructions files the system prompt holds, outermost first.
    pub fn instructions(&self) -> &Instructions {
        &self.instructions
    }

    /// Start-up warnings to show the user: language servers not found,
    /// command files not loaded, instructions cut to their size limit.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Put `text` first among the start-up warnings, those a script sees
    /// too (the demo's notice).
    pub(crate) fn warn_first(&mut self, text: &str) {
        self.warnings.insert(0, text.to_owned());
        self.file_warnings.insert(0, text.to_owned());
    }

    /// The start-up warnings about files the user or the project wrote
    /// (command files not loaded, instructions cut or skipped), a sandbox
    /// that cannot be wholly enforced, and the demo's notice:
    /// the ones a script needs to see too, where the language-server lines
    /// would be noise.
    pub fn file_warnings(&self) -> &[String] {
        &self.file_warnings
    }

    /// The language servers the `lsp` tool can start, as
    /// `clangd (.c .h), pyright (.py)`; `None` when the tool is not declared.
    pub fn lsp_servers(&self) -> Option<String> {
        self.lsp.as_ref().map(|c| c.servers_line())
    }

    /// What a front end shows when a session starts, a line each: the
    /// model and its server, the folder, the tools, the skills, the
    /// language servers (those of the built-in list that are missing
    /// named once, here) and the instructions files.
    pub fn banner(&self) -> Vec<String> {
        let tools = self.tool_names();
        let skills = self.skills().len();
        let mut lsp = self.lsp_servers().unwrap_or_else(|| NO_LSP.to_owned());
        if !self.lsp_missing.is_empty() {
            let missing = self.lsp_missing.join(", ");
            lsp = match self.lsp_servers() {
                Some(found) => format!("{found}; not found: {missing}"),
                None => format!("none of {missing} is on the PATH: the lsp tool is not declared"),
            };
        }
        vec![
            format!("model   {} at {}", self.model(), self.base_url()),
            format!("cwd     {}", self.cwd.display()),
            format!(
                "tools   {}",
                if tools.is_empty() {
                    "none".to_owned()
                } else {
                    tools.join(", ")
                }
            ),
            format!(
                "skills  {} in {}",
                if skills == 0 {
                    "none".to_owned()
                } else {
                    skills.to_string()
                },
                self.config.skills_dir.display()
            ),
            format!("lsp     {lsp}"),
            self.instructions.banner_line(),
            self.mode().banner_line(),
        ]
    }

    /// Stop this session's background jobs and language servers
    /// (`shutdown`, `exit`, then the process). Call it when the session
    /// ends; dropping the agent kills them without the goodbye.
    pub async fn shutdown(&self) {
        self.end_hooks().await;
        self.jobs.kill_all();
        if let Some(client) = &self.lsp {
            client.shutdown_all().await;
        }
        self.mcp.shutdown().await;
    }

    /// `/mcp`: one line per MCP server (state, tool count); empty when the
    /// session has none.
    pub fn mcp_status(&self) -> Vec<String> {
        self.mcp.status_lines()
    }

    /// This agent's slash commands: the built-in ones and any added.
    pub fn commands(&self) -> &Commands {
        &self.commands
    }

    /// Add commands of this agent's own (loaded from files, say).
    pub fn commands_mut(&mut self) -> &mut Commands {
        &mut self.commands
    }

    /// Run `command` with `argument` for `front`, whatever it needs; the
    /// front end renders the outcome.
    pub async fn run_command(
        &mut self,
        command: &Command,
        argument: &str,
        front: Front,
        sink: Arc<dyn Sink>,
        cancel: CancellationToken,
    ) -> Outcome {
        let commands = self.commands.clone();
        let call = Call {
            argument,
            front,
            commands: &commands,
        };
        match command.run() {
            Run::Free(f) => f(&call),
            Run::Now(f) => f(self, &call),
            Run::Task(f) => f(self, call, sink, cancel).await,
        }
    }

    /// Run `command` now if it needs no waiting; `None` when it takes time
    /// (then give it to [`Agent::run_command`] where a turn would run).
    pub fn run_command_now(
        &mut self,
        command: &Command,
        argument: &str,
        front: Front,
    ) -> Option<Outcome> {
        let commands = self.commands.clone();
        let call = Call {
            argument,
            front,
            commands: &commands,
        };
        match command.run() {
            Run::Free(f) => Some(f(&call)),
            Run::Now(f) => Some(f(self, &call)),
            Run::Task(_) => None,
        }
    }

    /// The system prompt sent first in every request.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// The declarations sent with every request.
    pub fn tool_declarations(&self) -> &[ToolDecl] {
        &self.decls
    }

    /// The conversation so far (without the system prompt).
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The last answer's text (for `/copy`); never the reasoning.
    pub fn last_answer(&self) -> &str {
        &self.last_answer
    }

    /// The tokens this session used so far, over every turn (and every
    /// process, for a continued session): what its file records.
    pub fn session_usage(&self) -> Usage {
        self.usage
    }

    /// [`Event::Tokens`] of now: what a front end shows of the session's
    /// tokens (and sends once more when a session starts or is resumed).
    pub fn tokens_event(&self) -> Event {
        Event::Tokens {
            session: mm_ui::TokenCounts {
                prompt: self.usage.prompt_tokens,
                completion: self.usage.completion_tokens,
                cached: self.usage.cached_tokens,
            },
            context: self.in_context,
            window: self.engine.window().tokens,
        }
    }

    pub(crate) fn permissions_ref(&self) -> &Permissions {
        &self.permissions
    }

    pub(crate) fn history_is_empty(&self) -> bool {
        self.history.is_empty()
    }

    /// Forget the conversation but keep writing the same session file, so
    /// an editor's session id stays valid (ACP `/new`). Resets the loop
    /// detector like `/new`.
    pub fn clear_conversation(&mut self) {
        self.hook_session_started = false;
        self.history.clear();
        self.set_checklist(Vec::new());
        self.last_answer.clear();
        self.ratio = None;
        self.usage = Usage::default();
        self.in_context = 0;
        self.toolbox.reset_detector();
        self.jobs.kill_all();
        self.rewinder.clear();
        self.children.clear();
        if let Some(session) = self.session.as_mut() {
            session.data.messages.clear();
            session.data.plan.clear();
            session.data.subagents.clear();
            session.data.usage = Usage::default();
            session.data.checkpoints = self.rewinder.log.clone();
            if let Err(e) = session.save() {
                tracing::warn!("session not saved: {e}");
            }
        }
    }

    /// Give every tool call without a result the not-run result. For a
    /// caller that dropped a turn before it finished
    /// (docs/design.md#every-call-gets-a-result).
    pub fn close_open_calls(&mut self) {
        self.history = history::close_open_calls(&self.history);
    }

    /// The skills `read_skill` offers, by name.
    pub fn skills(&self) -> Vec<String> {
        mm_skills::discover(&self.config.skills_dir)
            .into_iter()
            .map(|s| s.name)
            .collect()
    }

    /// The session's background commands (`/jobs`).
    pub fn jobs(&self) -> &Arc<mm_tools::bash::jobs::Jobs> {
        &self.jobs
    }

    /// `/model PROVIDER/MODEL` (or a bare `MODEL` of the provider in use):
    /// switch models, keeping the history.
    pub fn set_model(&mut self, model: &str) -> Result<(), AgentError> {
        let mut config = self.config.clone();
        let provider = |m: &str| m.split('/').next().unwrap_or("").to_string();
        // A bare name (`qwen3:8b`, or `org/name` of a server that lists
        // such ids) is a model of the provider in use.
        let qualified;
        let model = if mm_engine::known_providers().contains(&provider(model).as_str()) {
            model
        } else {
            qualified = format!("{}/{model}", provider(&config.model));
            &qualified
        };
        if provider(model) != provider(&config.model) {
            // The old server's address and key variable belong to the old
            // provider: a key must never travel to another provider's server.
            config.base_url = None;
            config.api_key_env = None;
        }
        config.model = model.to_string();
        // The same session: the same prompt-cache key.
        self.engine = Engine::new(&config)?.with_cache_key(&self.cache_key);
        // Another model, perhaps another server: its window is asked anew.
        if let Some(task) = self.window_task.take() {
            task.abort();
        }
        self.window_task = ask_window(&self.engine);
        self.window_settled = false;
        self.config = config;
        Ok(())
    }

    /// `/undo` (or `/redo`): bring the files the last turn changed back to
    /// where they were before it (or forward again). Files changed after
    /// the turn are not overwritten unless `force`: they come back as
    /// [`Rewind::Conflicts`] and nothing is written. When files were
    /// restored the history gets one line saying so, for the model.
    pub async fn rewind(
        &mut self,
        direction: Direction,
        force: bool,
        sink: &Arc<dyn Sink>,
    ) -> Result<Rewind, RewindError> {
        let outcome = self.rewinder.rewind(direction, force).await?;
        if let Rewind::Done { question, changes } = &outcome {
            self.history.push(Message::user(checkpoint::history_line(
                direction, question, changes,
            )));
            self.save(sink);
        }
        Ok(outcome)
    }

    /// `/diff`: a unified diff (no colour) of the project's files since the
    /// session's first checkpoint; empty when nothing changed.
    pub async fn diff(&mut self) -> Result<String, RewindError> {
        self.rewinder.diff().await
    }

    /// Ask one question: the whole turn, tool calls included, with events
    /// sent to `sink`. The history is kept whatever happens; only a question
    /// that got no answer at all is dropped.
    pub async fn ask(
        &mut self,
        question: &str,
        sink: Arc<dyn Sink>,
        cancel: CancellationToken,
    ) -> TurnReport {
        self.ask_with(question, mention::Extra::default(), sink, cancel)
            .await
    }

    /// [`Agent::ask`] with what an editor sends besides the text: paths
    /// attached as mentions are (`resource_link`) and pictures.
    pub async fn ask_with(
        &mut self,
        question: &str,
        extra: mention::Extra,
        sink: Arc<dyn Sink>,
        cancel: CancellationToken,
    ) -> TurnReport {
        let first = !self.hook_session_started;
        self.hook_session_started = true;
        let mut counters = Counters::default();
        let mut usage = Usage::default();
        let context = match self.question_hooks(question, first, &sink, &cancel).await {
            Ok(context) => context,
            Err(why) => {
                // Dropped before the model saw it: nothing is kept.
                let outcome = TurnOutcome::Failed(TurnError::new(
                    FailureKind::Blocked,
                    format!("a UserPromptSubmit hook refused the question: {why}"),
                ));
                if let TurnOutcome::Failed(e) = &outcome {
                    sink.event(Event::Error {
                        text: e.to_string(),
                    });
                }
                sink.event(Event::TurnEnd {
                    outcome: outcome.clone(),
                    counters,
                    prompt_tokens: 0,
                    completion_tokens: 0,
                    cached_tokens: 0,
                });
                return TurnReport {
                    outcome,
                    counters,
                    usage,
                    not_saved: self.not_saved.clone(),
                };
            }
        };
        self.rewinder.start_turn(question);
        if !extra.paths.is_empty()
            || !extra.images.is_empty()
            || !mention::attached(question, &self.cwd).is_empty()
        {
            // The window in force sets the budget, and the server's answer
            // says whether the model sees.
            self.settle_window().await;
        }
        let sees = self.engine.sees_images();
        let attachments = mention::attachments(
            question,
            &extra.paths,
            &self.cwd,
            self.output_budget(),
            sees,
        );
        // Said once, here, for every front end.
        for a in &attachments {
            sink.event(Event::Attached {
                path: a.path.clone(),
                size: a.size.clone(),
            });
        }
        let mut images: Vec<mm_engine::Image> =
            attachments.iter().filter_map(|a| a.image.clone()).collect();
        images.extend(extra.images);
        let mut question = mention::expand_with(question, &attachments);
        if !context.is_empty() {
            question = format!("{question}\n\n{context}");
        }
        // After the question: its first line still titles the session.
        let noted = self.mode_note.take().is_some_and(|note| {
            question = format!("{question}\n\n{note}");
            true
        });
        self.history
            .push(Message::user_with_images(question.clone(), images));
        let mut outcome = self
            .run_turn(&sink, &cancel, &mut counters, &mut usage)
            .await;
        // A Stop hook that exits 2 sends the model on, a few times at most.
        let mut stops = 0;
        while outcome == TurnOutcome::Done && stops < crate::hooks::STOP_LIMIT {
            let Some(next) = self.stop_hooks(stops > 0, &sink, &cancel).await else {
                break;
            };
            stops += 1;
            self.history
                .push(Message::user(format!("[a Stop hook says] {next}")));
            outcome = self
                .run_turn(&sink, &cancel, &mut counters, &mut usage)
                .await;
        }
        if matches!(outcome, TurnOutcome::Failed(_) | TurnOutcome::Cancelled)
            && matches!(self.history.last(), Some(Message::User { content, .. }) if *content == question)
        {
            // Nothing at all answered it: drop it
            // (docs/architecture.md#the-history-is-kept).
            self.history.pop();
            if noted {
                // The model never read the mode's note: the next question
                // carries it.
                self.mode_note = Some(mm_tools::mode_note(self.mode));
            }
        }
        if let Some(text) = self.rewinder.after_turn().await {
            sink.event(Event::Notice { text });
        }
        if let TurnOutcome::Failed(error) = &outcome {
            sink.event(Event::Error {
                text: error.to_string(),
            });
            // The error is recorded even when this was the first question.
            self.save(&sink);
            self.record_error(&error.message);
        }
        if let TurnOutcome::Repeated(text) = &outcome {
            sink.event(Event::Notice { text: text.clone() });
            self.record_error(text);
        }
        self.save(&sink);
        sink.event(self.tokens_event());
        sink.event(Event::TurnEnd {
            outcome: outcome.clone(),
            counters,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.cached_tokens,
        });
        TurnReport {
            outcome,
            counters,
            usage,
            not_saved: self.not_saved.clone(),
        }
    }

    async fn run_turn(
        &mut self,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
        counters: &mut Counters,
        usage: &mut Usage,
    ) -> TurnOutcome {
        self.mcp
            .prepare(&mut self.toolbox, &mut self.decls, sink, cancel)
            .await;
        self.settle_window().await;
        if let Some(text) = self.small_window_notice.take() {
            sink.event(Event::Notice { text });
        }
        // No request is refused on mm's own estimate (docs/design.md#overflow):
        // only the server's overflow answer says a request does not fit.
        let max_turns = self.config.max_turns.max(1);
        let mut compacted_for_length = false;
        // The history before this turn's first compaction, made while
        // nothing had answered the question yet: if the server still
        // refuses the request, the question stays unanswered and must not
        // stay folded into a summary.
        let mut before_compaction: Option<Vec<Message>> = None;
        let mut request = 0;
        while request < max_turns {
            if cancel.is_cancelled() {
                return TurnOutcome::Cancelled;
            }
            if self.compact_next || self.over_threshold() {
                self.compact_next = false;
                if request == 0 && before_compaction.is_none() {
                    before_compaction = Some(self.history.clone());
                }
                self.compact_hooks(false, sink, cancel).await;
                match self.compact_inner(None, sink, cancel).await {
                    Ok(text) => sink.event(Event::Notice { text }),
                    Err(text) => sink.event(Event::Notice {
                        text: format!("automatic compaction failed: {text}"),
                    }),
                }
            }
            request += 1;
            sink.event(Event::Status {
                text: "Thinking".into(),
            });
            let generation = match self.generate(sink, cancel).await {
                Ok(g) => g,
                Err(GenerateError {
                    error: EngineError::ContextLength { window, prompt, .. },
                    ..
                }) => {
                    // An overflow never ends the session: take the true
                    // window, compact, send again once
                    // (docs/design.md#overflow).
                    let (prompt, window) = self.learn_overflow(window, prompt);
                    let compacted = compacted_for_length;
                    if !compacted_for_length {
                        compacted_for_length = true;
                        if request == 1 && before_compaction.is_none() {
                            before_compaction = Some(self.history.clone());
                        }
                        if let Ok(done) = self.compact_inner(None, sink, cancel).await {
                            request -= 1;
                            sink.event(Event::Notice {
                                text: format!(
                                    "the request ({prompt} tokens) did not fit the model's \
                                     window of {window}; {done}; sending it again"
                                ),
                            });
                            continue;
                        }
                    }
                    if let Some(before) = before_compaction {
                        self.history = before;
                    }
                    return self.fail(
                        None,
                        TurnError::new(
                            FailureKind::Overflow,
                            too_long_text(prompt, window, compacted),
                        ),
                    );
                }
                Err(GenerateError {
                    error: EngineError::Repeated { text },
                    partial,
                }) => {
                    // The answer so far (before the loop, one copy) is kept
                    // like any partial reply; the turn has its own outcome.
                    self.fail(partial, TurnError::new(FailureKind::Stream, text.clone()));
                    return TurnOutcome::Repeated(text);
                }
                Err(GenerateError { error, partial }) => {
                    return self.fail(partial, error.turn_error());
                }
            };
            // Something answered: the turn's history is kept from here on.
            before_compaction = None;
            if let Some(mut u) = generation.usage {
                // A stopped answer is not counted as written: what the
                // user stopped adds no output tokens to the session.
                if generation.cancelled {
                    u.completion_tokens = 0;
                }
                self.take_usage(u, usage, sink);
            }
            if let Some(text) = self.cache_watch.observe(&self.engine, &generation) {
                sink.event(Event::Notice { text });
            }
            let cancelled = generation.cancelled;
            let calls = self.keep_reply(generation);
            if cancelled {
                self.close_calls(&calls, 0);
                return TurnOutcome::Cancelled;
            }
            if calls.is_empty() {
                return TurnOutcome::Done;
            }
            if request >= max_turns {
                self.close_calls(&calls, 0);
                sink.event(Event::Notice {
                    text: format!("[stopped: maxTurns ({max_turns}) reached]"),
                });
                return TurnOutcome::MaxTurns;
            }
            let ended = self.run_calls(&calls, sink, cancel, counters).await;
            self.absorb_children(usage);
            if let Some(ended) = ended {
                return ended;
            }
            self.save(sink);
        }
        TurnOutcome::MaxTurns
    }

    /// Put a reply in the history (not an empty one the user cut off) and
    /// return the calls it asked for.
    fn keep_reply(&mut self, generation: Generation) -> Vec<ToolCall> {
        let calls = match &generation.message {
            Message::Assistant {
                tool_calls,
                content,
                ..
            } => {
                if !content.is_empty() {
                    self.last_answer = content.clone();
                }
                tool_calls.clone()
            }
            _ => Vec::new(),
        };
        if !(generation.cancelled && is_empty(&generation.message)) {
            self.history.push(generation.message);
        }
        calls
    }

    /// Run a reply's calls in order, each result into the history; a run
    /// of `task` calls side by side runs at the same time (at most
    /// `agents.parallel`), their results in the reply's order. `Some`
    /// when the turn ends here (cancelled, or the loop detector stopped
    /// it); the calls left get not-run results.
    async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
        counters: &mut Counters,
    ) -> Option<TurnOutcome> {
        let ran = crate::ran::RanSink::new(sink.clone());
        let ctx = ToolContext {
            cwd: self.cwd.clone(),
            sink: ran.clone(),
            cancel: cancel.clone(),
            permissions: self.permissions.clone(),
            max_output: self.output_budget(),
            call_id: String::new(),
        };
        let is_task = |c: &ToolCall| c.name == crate::subagent::NAME;
        if calls.iter().any(is_task) {
            self.prepare_subagents().await;
        }
        let mut i = 0;
        while i < calls.len() {
            if cancel.is_cancelled() {
                self.close_calls(calls, i);
                return Some(TurnOutcome::Cancelled);
            }
            let end = if is_task(&calls[i]) {
                i + calls[i..].iter().take_while(|c| is_task(c)).count()
            } else {
                i + 1
            };
            let group = &calls[i..end];
            if group.iter().any(|c| self.toolbox.may_change_files(&c.name)) {
                if self.rewinder.will_record() {
                    sink.event(Event::Status {
                        text: checkpoint::RECORDING.into(),
                    });
                }
                if let Some(text) = self.rewinder.before_change(cancel).await {
                    sink.event(Event::Notice { text });
                }
                // Esc while the files were being recorded: nothing runs.
                if cancel.is_cancelled() {
                    self.close_calls(calls, i);
                    return Some(TurnOutcome::Cancelled);
                }
            }
            // On disk while they run: the calls as started.
            self.save_running(sink, group);
            // The call's hooks name the session, which exists from here.
            if let Some((id, path)) = self.session_file() {
                self.permissions.hooks().set_session(&id, &path);
            }
            let outcomes = if let [call] = group {
                vec![
                    self.toolbox
                        .call(&call.id, &call.name, &call.arguments, &ctx)
                        .await,
                ]
            } else {
                let toolbox = &self.toolbox;
                futures::future::join_all(
                    group
                        .iter()
                        .map(|c| toolbox.call(&c.id, &c.name, &c.arguments, &ctx)),
                )
                .await
            };
            let mut ended = None;
            for (call, outcome) in group.iter().zip(outcomes) {
                if ran.ran(&call.id) {
                    counters.count(self.toolbox.family(&call.name));
                }
                let mut result = Message::tool_result(
                    &call.id,
                    &call.name,
                    outcome.output().to_owned(),
                    outcome.failed(),
                );
                if let Message::Tool { images, .. } = &mut result {
                    *images = outcome.images().to_vec();
                }
                self.history.push(result);
                if ended.is_none() {
                    ended = self.after_call(outcome, sink);
                }
            }
            self.mcp.reveal(&self.toolbox, &mut self.decls);
            if let Some((ended, answer)) = ended {
                self.close_calls(calls, end);
                if let Some(answer) = answer {
                    self.history.push(Message::assistant(answer));
                }
                return Some(ended);
            }
            if cancel.is_cancelled() {
                self.close_calls(calls, end);
                return Some(TurnOutcome::Cancelled);
            }
            i = end;
        }
        None
    }

    /// The engine for a side request (a compaction's summaries): on
    /// llama.cpp with several slots the session keeps slot 0 and the side
    /// request takes the last, so the session's cached prompt (system
    /// prompt and tools, which the compacted history still begins with)
    /// survives it. With one slot there is no other place: the server
    /// reads the prompt again after a compaction (docs/design.md).
    async fn side_engine(&mut self) -> Engine {
        if self.engine.provider() == "ollama" {
            return self.engine.clone();
        }
        match self.engine.server_slots().await {
            Some(n) if n >= 2 => {
                if self.engine.slot().is_none() {
                    self.engine = self.engine.with_slot(0);
                }
                self.engine.with_slot(n - 1)
            }
            _ => self.engine.clone(),
        }
    }

    /// Give the `task` tool what its children run with now: the engine,
    /// the tools and declarations in force, and how many may run at once.
    /// A local server with one slot runs them one after the other; on
    /// llama.cpp with several, the session keeps slot 0 and the children
    /// take the others, so the session's cached prompt survives them.
    async fn prepare_subagents(&mut self) {
        let slots = self.engine.server_slots().await;
        let mut parallel = u64::from(self.config.agents.parallel);
        let mut child_slots = None;
        match slots {
            Some(n) if n >= 2 && self.engine.provider() != "ollama" => {
                if self.engine.slot().is_none() {
                    self.engine = self.engine.with_slot(0);
                }
                parallel = parallel.min(n - 1);
                child_slots = Some(n - 1);
            }
            Some(_) => parallel = 1,
            None => {}
        }
        self.subagents.prepare(
            crate::subagent::Host {
                engine: self.engine.clone(),
                config: self.config.clone(),
                tools: self.toolbox.shared(),
                settings: self.toolbox.settings().clone(),
                decls: self.decls.clone(),
                instructions: self.instructions.prompt_text(),
                cwd: self.cwd.clone(),
                child_slots,
            },
            usize::try_from(parallel).unwrap_or(1),
        );
    }

    /// Take in the subagents' runs that ended: their tokens count in the
    /// turn's and the session's, their transcripts go to the session file.
    fn absorb_children(&mut self, usage: &mut Usage) {
        for child in self.subagents.take_done() {
            usage.add(child.usage);
            self.usage.add(child.usage);
            self.children.push(child);
        }
    }

    /// What a call's result does to the turn (its result is in the
    /// history): an accepted plan switches modes, a plan nobody could
    /// review is the answer (given back, for the history after the
    /// reply's results), the loop detector's stop ends the turn.
    fn after_call(
        &mut self,
        outcome: CallOutcome,
        sink: &Arc<dyn Sink>,
    ) -> Option<(TurnOutcome, Option<String>)> {
        match outcome {
            CallOutcome::Output(_) => {
                // An accepted plan switched modes: the call's result told
                // the model; the declarations follow.
                let now = self.permissions.mode();
                if now != self.mode {
                    self.mode = now;
                    self.mode_note = None;
                    self.sync_decls();
                }
                if let Some(answer) = self.permissions.take_turn_end() {
                    // Nobody could review the plan: it is the answer.
                    sink.event(Event::Text {
                        text: answer.clone(),
                    });
                    self.last_answer = answer.clone();
                    return Some((TurnOutcome::Done, Some(answer)));
                }
                None
            }
            CallOutcome::Stop { error, .. } => Some((
                TurnOutcome::Failed(TurnError::new(FailureKind::Loop, error)),
                None,
            )),
        }
    }

    /// A failed request: keep the partial answer, with not-run results for
    /// its calls (`ask` drops the question when nothing answered it).
    fn fail(&mut self, partial: Option<Message>, error: TurnError) -> TurnOutcome {
        if let Some(mut message) = partial.filter(|m| !is_empty(m)) {
            // A call cut off mid-stream (a runaway's quarter megabyte of
            // repeats, say) stays in the history, but not its broken
            // arguments: they would be sent again with every request.
            if let Message::Assistant { tool_calls, .. } = &mut message {
                for call in tool_calls.iter_mut() {
                    if serde_json::from_str::<serde_json::Value>(&call.arguments).is_err() {
                        call.arguments = "{}".into();
                    }
                }
            }
            let calls = match &message {
                Message::Assistant { tool_calls, .. } => tool_calls.clone(),
                _ => Vec::new(),
            };
            self.history.push(message);
            self.close_calls(&calls, 0);
        }
        TurnOutcome::Failed(error)
    }

    /// Give every call from `from` on the not-run result.
    fn close_calls(&mut self, calls: &[ToolCall], from: usize) {
        for call in calls.iter().skip(from) {
            self.history
                .push(Message::tool_result(&call.id, &call.name, NOT_RUN, true));
        }
    }

    async fn generate(
        &self,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) -> Result<mm_engine::Generation, GenerateError> {
        let mut messages = Vec::with_capacity(self.history.len() + 1);
        messages.push(Message::system(self.system.clone()));
        messages.extend_from_slice(&self.history);
        let sink = sink.clone();
        let mut on_event = move |event: StreamEvent| match event {
            StreamEvent::Text(text) => sink.event(Event::Text { text }),
            StreamEvent::Reasoning(text) => sink.event(Event::Reasoning { text }),
            StreamEvent::ToolCallStarted { .. } => sink.event(Event::Status {
                text: "Composing a tool call".into(),
            }),
            StreamEvent::Notice(text) => sink.event(Event::Notice { text }),
            StreamEvent::ToolCallFinished(_) | StreamEvent::Usage(_) => {}
        };
        if self.constrains_calls() {
            return self
                .engine
                .generate_calls(&messages, &self.decls, &mut on_event, cancel)
                .await;
        }
        // `auto`: a reply that describes a command is asked for once more,
        // constrained (docs/architecture.md#tool-calls-written-as-text).
        let retry = self.config.constrained_calls == mm_config::ConstrainedCalls::Auto;
        self.engine
            .generate_acting(&messages, &self.decls, retry, &mut on_event, cancel)
            .await
    }

    /// Whether this turn's requests ask the server to hold the reply to one
    /// declared call or an answer (`constrainedCalls`): `always` on a
    /// server that can, `auto` when the server said the model's template
    /// cannot render tools (docs/reference/settings.md).
    fn constrains_calls(&self) -> bool {
        !self.decls.is_empty() && self.engine.constrains_calls(self.config.constrained_calls)
    }

    /// `/compact [focus]`: summarise the history now.
    pub async fn compact(
        &mut self,
        focus: Option<&str>,
        sink: Arc<dyn Sink>,
        cancel: CancellationToken,
    ) -> Result<(), AgentError> {
        self.settle_window().await;
        self.compact_hooks(true, &sink, &cancel).await;
        let result = self.compact_inner(focus, &sink, &cancel).await;
        if let Ok(text) = &result {
            sink.event(Event::Notice { text: text.clone() });
        }
        self.save(&sink);
        result.map(|_| ()).map_err(AgentError::Compaction)
    }

    /// Summarise the history but its latest exchanges; the notice line
    /// that says what was done, or why nothing was. The summary requests
    /// fit the window in force however long the history is: the older part
    /// is summarised piece by piece, oldest first, each piece with the
    /// summary so far, old tool output cut short; each summary is asked to
    /// be, and is cut to, at most a quarter of the window.
    async fn compact_inner(
        &mut self,
        focus: Option<&str>,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        if self.history.is_empty() {
            return Err("nothing to compact yet".into());
        }
        let window = self.engine.window().tokens;
        let cut = compact::cut_index(&self.history, self.keep_tokens(), self.ratio);
        if !compact::shortens(&self.history, cut) {
            return Err("the conversation is already short".into());
        }
        let budget = compact::Budget {
            window,
            history_room: self.history_room(),
            max_tokens: self.config.max_tokens,
            ratio: self.ratio,
        };
        let summary = if budget.summary_tokens() >= compact::MIN_SUMMARY_TOKENS {
            sink.event(Event::Status {
                text: "Compacting".into(),
            });
            let engine = self.side_engine().await;
            let history = &self.history;
            compact::summarise(&engine, history, cut, &self.system, focus, budget, cancel).await?
        } else {
            None
        };
        let Some(summary) = summary else {
            // No room for a summary beside the system prompt and the tools:
            // the older messages go, the question stays.
            self.history = compact::rebuild_without_summary(&self.history, cut);
            self.in_context = compact::estimate_tokens(self.request_chars(), self.ratio);
            if let Some(session) = self.session.as_mut() {
                session.record_compaction(cut, "");
            }
            return Ok(format!(
                "compacted: {cut} messages dropped; the model's window ({window} tokens) leaves \
                 no room for a summary beside mm's prompt and tools (about {} tokens)",
                compact::estimate_tokens(self.fixed_chars(), self.ratio)
            ));
        };
        self.history = compact::rebuild(&self.history, cut, &summary);
        self.in_context = compact::estimate_tokens(self.request_chars(), self.ratio);
        let tokens = compact::estimate_tokens(summary.len(), self.ratio);
        if let Some(session) = self.session.as_mut() {
            session.record_compaction(cut, &summary);
        }
        Ok(format!(
            "compacted: {cut} messages → summary of {tokens} tokens"
        ))
    }
}

/// A question as the user wrote it: without the mode note mm put after
/// it for the model.
pub(crate) fn without_mode_note(question: &str) -> &str {
    match question.rfind("\n\n[mode: ") {
        Some(at) if question.ends_with(']') => &question[..at],
        _ => question,
    }
}

/// The one line of a request the server refused as too long, after the
/// compaction that could not cure it (or with nothing to compact).
fn too_long_text(prompt: u64, window: u64, compacted: bool) -> String {
    let even = if compacted {
        ", even with the conversation compacted"
    } else {
        ""
    };
    format!(
        "the request ({prompt} tokens) does not fit the model's window of {window} \
         tokens{even}; ask a shorter question, or give the model server a larger window"
    )
}

/// Every key value mm holds or may switch to with `/model`: the engine's,
/// and the values of every provider key variable (and `apiKeyEnv`) in the
/// environment. Redacted from tool results and session files
/// (docs/design.md#keys-stay-out-of-tools).
fn secrets(config: &Config, engine: &Engine) -> Vec<String> {
    let mut all = engine.secrets();
    for var in tools::key_vars(config) {
        if let Some(value) = mm_redact::keys::var(&var)
            && !value.trim().is_empty()
            && !all.contains(&value)
        {
            all.push(value);
        }
    }
    all
}

fn is_empty(message: &Message) -> bool {
    match message {
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => content.is_empty() && reasoning.is_empty() && tool_calls.is_empty(),
        _ => false,
    }
}

/// The id of the session `--continue` means: the latest readable one of
/// the project at `cwd`. A newer file that cannot be read is never passed
/// over in silence: it is the error, named with what is wrong.
fn latest_session(listing: &mm_store::Listing, cwd: &Path) -> Result<String, AgentError> {
    fn modified(p: &Path) -> Option<std::time::SystemTime> {
        std::fs::metadata(p).and_then(|m| m.modified()).ok()
    }
    let newest_broken = listing
        .skipped
        .iter()
        .max_by_key(|e| e.path().and_then(modified));
    match (listing.sessions.first(), newest_broken) {
        (Some(info), Some(e)) if e.path().and_then(modified) > modified(&info.path) => {
            Err(AgentError::LatestUnreadable {
                cwd: cwd.to_path_buf(),
                why: e.to_string(),
            })
        }
        (Some(info), _) => Ok(info.id.clone()),
        (None, Some(_)) => Err(AgentError::NoneReadable {
            cwd: cwd.to_path_buf(),
            why: listing.skipped.iter().map(ToString::to_string).collect(),
        }),
        (None, None) => Err(AgentError::NoSession(cwd.to_path_buf())),
    }
}

/// A session file that cannot be read, left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The session id its name gives.
    pub id: String,
    /// What is wrong, naming the file.
    pub text: String,
}

impl Unreadable {
    fn of(listing: &mm_store::Listing) -> Vec<Unreadable> {
        listing
            .skipped
            .iter()
            .map(|e| Unreadable {
                id: e
                    .path()
                    .and_then(|p| p.file_stem())
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                text: e.to_string(),
            })
            .collect()
    }
}

/// Saved sessions, most recent first, and the files that cannot be read.
#[derive(Debug, Clone, Default)]
pub struct SessionList {
    /// The sessions that could be read, most recent first.
    pub sessions: Vec<SessionInfo>,
    /// The session files that could not be read, left as they are.
    pub unreadable: Vec<Unreadable>,
}

/// The sessions of `cwd` (all projects' when `None`) and the files that
/// could not be read, for `session/list` and `session/load`.
pub fn scan_sessions(config: &Config, cwd: Option<&Path>) -> Result<SessionList, AgentError> {
    if !config.sessions.enabled {
        return Ok(SessionList::default());
    }
    let listing = Store::new(config.sessions.dir.clone()).scan(cwd)?;
    Ok(SessionList {
        unreadable: Unreadable::of(&listing),
        sessions: listing.sessions,
    })
}

/// Saved sessions of `cwd` (all projects' when `None`), most recent first,
/// without building an agent (for `session/list`, `/sessions`).
pub fn list_sessions(config: &Config, cwd: Option<&Path>) -> Result<Vec<SessionInfo>, AgentError> {
    if !config.sessions.enabled {
        return Ok(Vec::new());
    }
    Ok(Store::new(config.sessions.dir.clone()).list(cwd)?)
}

#[cfg(test)]
mod mode_note_tests {
    use super::without_mode_note;

    #[test]
    fn the_note_after_a_question_is_left_out_when_it_is_shown() {
        let noted = format!(
            "fix it\n\nsecond line\n\n{}",
            mm_tools::mode_note(mm_ui::AgentMode::Plan)
        );
        assert_eq!(without_mode_note(&noted), "fix it\n\nsecond line");
        assert_eq!(without_mode_note("plain [mode: x]"), "plain [mode: x]");
        assert_eq!(without_mode_note("plain"), "plain");
    }
}
