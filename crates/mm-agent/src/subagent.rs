//! Subagents: the `task` tool hands a self-contained job to a child agent
//! with a fresh history, so that its reading does not fill the parent's
//! context; only its final answer comes back, as the call's result.
//!
//! The child runs the same loop as its parent on the same engine, with the
//! parent's permissions (mode, rules, sandbox, hooks: never more), a loop
//! detector of its own and the parent's tools minus `task`, `todo` and
//! `exit_plan`, narrowed by its agent: `explore` (the default) reads only,
//! `general` has the rest, an agent file names its own list
//! (docs/reference/agents.md). Its events reach the front end wrapped in
//! [`Event::Child`] under the call's id; its transcript and tokens are
//! handed back to the parent (`Subagents::take_done`) for the session
//! file.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mm_config::Config;
use mm_engine::{Engine, EngineError, GenerateError, Message, StreamEvent, ToolDecl, Usage};

use crate::compact;
use mm_tools::tool::{Described, Plan, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec};
use mm_tools::toolbox::{CallOutcome, Toolbox, ToolboxSettings};
use mm_ui::{Counters, Decision, Event, PlanReview, Sink, ToolInfo, TurnOutcome};
use serde::Deserialize;
use tokio::sync::Semaphore;

/// The tool's name.
pub const NAME: &str = "task";

/// The agent a call without `agent` runs.
pub const DEFAULT_AGENT: &str = "explore";

/// Tools a child never gets: no recursion, and the parent's checklist and
/// mode are the parent's.
const NEVER: [&str; 3] = [NAME, "todo", "exit_plan"];

/// The tools `explore` keeps (its `bash` runs read-only commands only).
const EXPLORE: [&str; 4] = ["read_file", "grep", "glob", "bash"];

/// What every child's system prompt opens with.
pub const PREAMBLE: &str = "You are a subagent of mm, a coding assistant: the main agent gave you one self-contained job. You cannot ask it anything, and it sees nothing of your work but your final answer.
Use the tools to look before you answer; do not invent file contents or command output.
End with one self-contained answer that holds everything the main agent needs: findings, file paths and line numbers, what you changed.";

/// What a child's `bash` says when `explore` refuses a command that may
/// change things.
pub const READ_ONLY: &str =
    "[not run: this subagent only reads; run read-only commands (ls, cat, grep, git log …)]";

/// `task`: runs subagents, asks nothing by itself (its child's calls
/// ask), may change files through `general`'s tools.
pub const ROW: ToolRow = ToolRow {
    name: Cow::Borrowed(NAME),
    family: mm_ui::ToolFamily::Other,
    kind: mm_ui::ToolKind::Think,
    title_from: Some("description"),
    echoes: false,
    changes_files: true,
    rejection: None,
};

/// One agent a `task` call may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    /// Its name.
    pub name: String,
    /// One line, in the tool's description.
    pub description: String,
    /// The tools it may use; `None` for all of its parent's.
    pub tools: Option<Vec<String>>,
    /// Whether its `bash` runs read-only commands only.
    pub read_only: bool,
    /// `PROVIDER/MODEL` it runs on; `None` for its parent's.
    pub model: Option<String>,
    /// Its own instructions (an agent file's body), after the preamble.
    pub prompt: String,
}

/// The built-in agents, then the user's (`<user_dir>/agents`), then the
/// project's (`.mm/agents`; a name the user has too is the project's);
/// the files that could not be loaded, one line each.
pub fn agents(user_dir: &Path, cwd: &Path) -> (Vec<AgentDef>, Vec<String>) {
    let mut all = vec![
        AgentDef {
            name: "explore".into(),
            description: "read-only (default)".into(),
            tools: Some(EXPLORE.iter().map(|s| (*s).to_owned()).collect()),
            read_only: true,
            model: None,
            prompt: String::new(),
        },
        AgentDef {
            name: "general".into(),
            description: "all tools".into(),
            tools: None,
            read_only: false,
            model: None,
            prompt: String::new(),
        },
    ];
    let mut warnings = Vec::new();
    for dir in [user_dir.join("agents"), cwd.join(".mm").join("agents")] {
        let found = mm_skills::agents::discover(&dir);
        for p in found.problems {
            warnings.push(format!("[warning: agent file {p} — skipped]"));
        }
        for a in found.agents {
            let def = AgentDef {
                name: a.name,
                description: a.description,
                tools: a.tools,
                read_only: false,
                model: a.model,
                prompt: a.body,
            };
            match all.iter_mut().find(|d| d.name == def.name) {
                Some(slot) => *slot = def,
                None => all.push(def),
            }
        }
    }
    (all, warnings)
}

/// What a child takes from its parent, set before each reply's calls run
/// (the parent's engine and tools may have changed since the last).
#[derive(Clone)]
pub(crate) struct Host {
    pub engine: Engine,
    pub config: Config,
    /// The parent's tools, `task` included (left out here).
    pub tools: Vec<Arc<dyn Tool>>,
    pub settings: ToolboxSettings,
    /// The parent's declarations as they are now (mode, small window).
    pub decls: Vec<ToolDecl>,
    /// The project's instructions, as the parent's prompt holds them.
    pub instructions: String,
    pub cwd: PathBuf,
    /// On llama.cpp with several slots: how many the children share
    /// (slots 1 to N; the parent keeps slot 0).
    pub child_slots: Option<u64>,
}

/// The subagents of one session: the agents, what the next calls run
/// with, and the runs that ended, for the parent to record.
pub struct Subagents {
    agents: Vec<AgentDef>,
    host: Mutex<Option<Host>>,
    limit: Mutex<Arc<Semaphore>>,
    done: Mutex<Vec<mm_store::Subagent>>,
    /// Children started so far: which slot the next one takes.
    started: std::sync::atomic::AtomicU64,
}

impl Subagents {
    /// The subagents of a session with these agents.
    pub fn new(agents: Vec<AgentDef>) -> Subagents {
        Subagents {
            agents,
            host: Mutex::new(None),
            limit: Mutex::new(Arc::new(Semaphore::new(1))),
            done: Mutex::new(Vec::new()),
            started: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The agents a call may name.
    pub fn agents(&self) -> &[AgentDef] {
        &self.agents
    }

    /// Set what the next calls run with, and how many children may run at
    /// once.
    pub(crate) fn prepare(&self, host: Host, parallel: usize) {
        *lock(&self.host) = Some(host);
        *lock(&self.limit) = Arc::new(Semaphore::new(parallel.max(1)));
    }

    /// The runs that ended since the last call, oldest first.
    pub(crate) fn take_done(&self) -> Vec<mm_store::Subagent> {
        std::mem::take(&mut *lock(&self.done))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `task` tool.
pub struct Task {
    subagents: Arc<Subagents>,
}

impl Task {
    /// The tool, running the agents of `subagents`.
    pub fn new(subagents: Arc<Subagents>) -> Task {
        Task { subagents }
    }
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    description: String,
    prompt: String,
    #[serde(default)]
    agent: Option<String>,
}

impl Task {
    fn agent(&self, name: Option<&str>) -> Result<&AgentDef, String> {
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or(DEFAULT_AGENT);
        self.subagents
            .agents
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .subagents
                    .agents
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect();
                format!("unknown agent \"{name}\"; agents: {}", names.join(", "))
            })
    }
}

#[async_trait::async_trait]
impl Tool for Task {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Give a subagent a self-contained prompt; only its answer returns. Agents:",
        );
        for a in &self.subagents.agents {
            description.push_str(&format!("\n{}: {}", a.name, a.description));
        }
        ToolSpec {
            name: NAME.to_owned(),
            description,
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "prompt": {"type": "string"},
                    "agent": {"type": "string"}
                },
                "required": ["prompt"]
            }),
        }
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let args: Args = mm_tools::tool::parse_args(NAME, args)?;
        if args.prompt.trim().is_empty() {
            return Err(mm_tools::tool::invalid_args(NAME, "the prompt is empty"));
        }
        let agent = self.agent(args.agent.as_deref())?;
        let _ = ctx;
        let title = if args.description.trim().is_empty() {
            agent.name.clone()
        } else {
            format!("{} ({})", args.description.trim(), agent.name)
        };
        Ok(ROW.plan(title))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let args: Args = match mm_tools::tool::parse_args(NAME, args) {
            Ok(a) => a,
            Err(e) => return ToolOutput::fail(e),
        };
        let agent = match self.agent(args.agent.as_deref()) {
            Ok(a) => a.clone(),
            Err(e) => return ToolOutput::fail(e),
        };
        let Some(host) = lock(&self.subagents.host).clone() else {
            return ToolOutput::fail("[error: subagents are not available here]");
        };
        let limit = lock(&self.subagents.limit).clone();
        let sink: Arc<dyn Sink> = Arc::new(ChildSink {
            parent: ctx.sink.clone(),
            call: ctx.call_id.clone(),
            agent: agent.name.clone(),
        });
        sink.event(Event::Status {
            text: "Waiting for a free slot".into(),
        });
        let _permit = tokio::select! {
            p = limit.acquire_owned() => p.ok(),
            _ = ctx.cancel.cancelled() => return ToolOutput::fail(mm_tools::NOT_RUN),
        };
        let slot = host.child_slots.map(|n| {
            let k = self
                .subagents
                .started
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            1 + k % n.max(1)
        });
        let run = run_child(&host, &agent, &args.prompt, slot, ctx, &sink).await;
        sink.event(Event::TurnEnd {
            outcome: run.outcome.clone(),
            counters: run.counters,
            prompt_tokens: run.usage.prompt_tokens,
            completion_tokens: run.usage.completion_tokens,
            cached_tokens: run.usage.cached_tokens,
        });
        lock(&self.subagents.done).push(mm_store::Subagent {
            call_id: ctx.call_id.clone(),
            agent: agent.name.clone(),
            messages: run.messages,
            usage: run.usage,
        });
        if run.outcome == TurnOutcome::Done {
            ToolOutput::ok(run.answer)
        } else {
            ToolOutput::fail(run.answer)
        }
    }
}

/// A child's run: its answer (or why it has none), how it ended, its
/// conversation and tokens.
struct Run {
    answer: String,
    outcome: TurnOutcome,
    counters: Counters,
    messages: Vec<Message>,
    usage: Usage,
}

/// The child's system prompt: the preamble, its agent's own text, the
/// working directory and the project's instructions.
fn system_prompt(agent: &AgentDef, host: &Host) -> String {
    let mut system = String::from(PREAMBLE);
    if !agent.prompt.is_empty() {
        system.push_str("\n\n");
        system.push_str(&agent.prompt);
    }
    system.push_str("\nWorking directory: ");
    system.push_str(&host.cwd.display().to_string());
    system.push_str(&host.instructions);
    system
}

/// The child's toolbox and declarations: the parent's, minus what a
/// child never gets, narrowed to the agent's list (never wider).
fn child_tools(agent: &AgentDef, host: &Host) -> (Toolbox, Vec<ToolDecl>) {
    let keeps = |name: &str| {
        !NEVER.contains(&name)
            && agent
                .tools
                .as_ref()
                .is_none_or(|list| list.iter().any(|t| t == name))
    };
    let tools: Vec<Arc<dyn Tool>> = host
        .tools
        .iter()
        .filter(|t| keeps(&t.row().name))
        .map(|t| {
            if agent.read_only && t.row().changes_files {
                Arc::new(ReadOnly(t.clone())) as Arc<dyn Tool>
            } else {
                t.clone()
            }
        })
        .collect();
    let decls = host
        .decls
        .iter()
        .filter(|d| keeps(&d.name))
        .cloned()
        .collect();
    (Toolbox::shared_from(tools, host.settings.clone()), decls)
}

/// The child's engine: the parent's (on its own slot when it has one), or
/// the agent's own model's.
fn child_engine(agent: &AgentDef, host: &Host, slot: Option<u64>) -> Result<Engine, String> {
    let Some(model) = &agent.model else {
        return Ok(match slot {
            Some(slot) => host.engine.with_slot(slot),
            None => host.engine.clone(),
        });
    };
    let mut config = host.config.clone();
    let provider = |m: &str| m.split('/').next().unwrap_or("").to_owned();
    if provider(model) != provider(&config.model) {
        // The parent's server and key belong to its provider.
        config.base_url = None;
        config.api_key_env = None;
    }
    config.model.clone_from(model);
    Engine::new(&config).map_err(|e| format!("[error: agent {}: {e}]", agent.name))
}

/// The child's loop: ask, run the calls, until it answers without calls,
/// `maxTurns`, a failure, the loop detector's stop or cancellation.
async fn run_child(
    host: &Host,
    agent: &AgentDef,
    prompt: &str,
    slot: Option<u64>,
    ctx: &ToolContext,
    sink: &Arc<dyn Sink>,
) -> Run {
    let mut run = Run {
        answer: String::new(),
        outcome: TurnOutcome::Done,
        counters: Counters::default(),
        messages: vec![Message::user(prompt.to_owned())],
        usage: Usage::default(),
    };
    let engine = match child_engine(agent, host, slot) {
        Ok(e) => e,
        Err(text) => {
            run.answer.clone_from(&text);
            run.outcome =
                TurnOutcome::Failed(mm_ui::TurnError::new(mm_ui::FailureKind::Setup, text));
            return run;
        }
    };
    let (toolbox, decls) = child_tools(agent, host);
    let system = system_prompt(agent, host);
    let retry = host.config.constrained_calls == mm_config::ConstrainedCalls::Auto;
    let constrained = !decls.is_empty() && engine.constrains_calls(host.config.constrained_calls);
    let ran = crate::ran::RanSink::new(sink.clone());
    let child_ctx = ToolContext {
        sink: ran.clone(),
        call_id: String::new(),
        ..ctx.clone()
    };
    let cancel = &ctx.cancel;
    let max_turns = host.config.max_turns.max(1);
    let fit = Fit {
        engine: &engine,
        system: &system,
        decls: &decls,
        config: &host.config,
        cancel,
        sink,
    };
    let mut compacted_for_length = false;
    let mut request = 0;
    while request < max_turns {
        request += 1;
        if cancel.is_cancelled() {
            return cancelled(run);
        }
        if request > 1
            && let Some(text) = fit.compact(&mut run, false).await
        {
            sink.event(Event::Notice { text });
        }
        sink.event(Event::Status {
            text: "Thinking".into(),
        });
        let mut messages = Vec::with_capacity(run.messages.len() + 1);
        messages.push(Message::system(system.clone()));
        messages.extend_from_slice(&run.messages);
        let events = sink.clone();
        let mut on_event = move |event: StreamEvent| match event {
            StreamEvent::Text(text) => events.event(Event::Text { text }),
            StreamEvent::Reasoning(text) => events.event(Event::Reasoning { text }),
            StreamEvent::Notice(text) => events.event(Event::Notice { text }),
            StreamEvent::ToolCallStarted { .. }
            | StreamEvent::ToolCallFinished(_)
            | StreamEvent::Usage(_) => {}
        };
        let generated = if constrained {
            engine
                .generate_calls(&messages, &decls, &mut on_event, cancel)
                .await
        } else {
            engine
                .generate_acting(&messages, &decls, retry, &mut on_event, cancel)
                .await
        };
        let generation = match generated {
            Ok(g) => g,
            Err(GenerateError {
                error: EngineError::ContextLength { .. },
                ..
            }) if !compacted_for_length && let Some(text) = fit.compact(&mut run, true).await => {
                // Once, like the session: the request did not fit, so the
                // older steps are summarised and it is sent again.
                compacted_for_length = true;
                request -= 1;
                sink.event(Event::Notice {
                    text: format!(
                        "the request did not fit the model's window; {text}; sending it again"
                    ),
                });
                continue;
            }
            Err(e) => {
                let error = e.error.turn_error();
                run.answer = format!("[subagent {} failed: {error}]", agent.name);
                run.outcome = TurnOutcome::Failed(error);
                return run;
            }
        };
        if let Some(u) = generation.usage {
            run.usage.add(u);
        }
        let (content, calls) = match &generation.message {
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => (content.clone(), tool_calls.clone()),
            _ => (String::new(), Vec::new()),
        };
        run.messages.push(generation.message);
        if generation.cancelled {
            close(&mut run.messages, &calls);
            return cancelled(run);
        }
        if calls.is_empty() {
            run.answer = if content.trim().is_empty() {
                format!("[subagent {} gave no answer]", agent.name)
            } else {
                content
            };
            return run;
        }
        if request == max_turns {
            close(&mut run.messages, &calls);
            break;
        }
        for (i, call) in calls.iter().enumerate() {
            if cancel.is_cancelled() {
                close(&mut run.messages, &calls[i..]);
                return cancelled(run);
            }
            let outcome = toolbox
                .call(&call.id, &call.name, &call.arguments, &child_ctx)
                .await;
            if ran.ran(&call.id) {
                run.counters.count(toolbox.family(&call.name));
            }
            let failed = outcome.failed();
            run.messages.push(Message::tool_result(
                &call.id,
                &call.name,
                outcome.output().to_owned(),
                failed,
            ));
            if let CallOutcome::Stop { error, .. } = outcome {
                close(&mut run.messages, &calls[i + 1..]);
                run.answer = format!("[subagent {} stopped: {error}]", agent.name);
                run.outcome =
                    TurnOutcome::Failed(mm_ui::TurnError::new(mm_ui::FailureKind::Loop, error));
                return run;
            }
        }
    }
    run.answer = format!(
        "[subagent {} stopped: maxTurns ({max_turns}) reached before it answered]",
        agent.name
    );
    run.outcome = TurnOutcome::MaxTurns;
    run
}

/// What a child's compaction works with: its engine, system prompt and
/// declarations, the settings, and its turn's cancel and sink.
struct Fit<'a> {
    engine: &'a Engine,
    system: &'a str,
    decls: &'a [ToolDecl],
    config: &'a Config,
    cancel: &'a tokio_util::sync::CancellationToken,
    sink: &'a Arc<dyn Sink>,
}

impl Fit<'_> {
    /// Compact the child's history, like the session's, when its next
    /// request passes `compact.threshold` of the window, or at once when
    /// `force` (the server refused a request as too long): the older steps
    /// summarised on the child's own engine, the latest ones and its task
    /// kept; without room for a summary, or when the summary fails, the
    /// older steps are dropped. The notice line, or `None` when nothing
    /// would shorten.
    async fn compact(&self, run: &mut Run, force: bool) -> Option<String> {
        let window = self.engine.window().tokens;
        let fixed = compact::fixed_chars(self.system, self.decls);
        let history: usize = run.messages.iter().map(compact::message_chars).sum();
        let estimate = compact::estimate_tokens(fixed + history, None);
        if !force && estimate as f64 <= self.config.compact.threshold * window as f64 {
            return None;
        }
        let history_room = compact::Budget::history_room(window, fixed, None);
        let keep = self.config.keep_recent_tokens(window).min(history_room / 2);
        let cut = compact::cut_index(&run.messages, keep, None);
        if !compact::shortens(&run.messages, cut) {
            return None;
        }
        let budget = compact::Budget {
            window,
            history_room,
            max_tokens: self.config.max_tokens,
            ratio: None,
        };
        self.sink.event(Event::Status {
            text: "Compacting".into(),
        });
        let history = &run.messages;
        let summary = compact::summarise(
            self.engine,
            history,
            cut,
            self.system,
            None,
            budget,
            self.cancel,
        )
        .await;
        Some(match summary {
            Ok(Some(summary)) => {
                run.messages = compact::rebuild(&run.messages, cut, &summary);
                format!("compacted: {cut} messages → a summary")
            }
            Ok(None) | Err(_) => {
                run.messages = compact::rebuild_without_summary(&run.messages, cut);
                format!("compacted: {cut} messages dropped")
            }
        })
    }
}

fn cancelled(mut run: Run) -> Run {
    run.answer = mm_tools::NOT_RUN.to_owned();
    run.outcome = TurnOutcome::Cancelled;
    run
}

/// Not-run results for `calls`, so the child's record is a valid
/// conversation.
fn close(messages: &mut Vec<Message>, calls: &[mm_engine::ToolCall]) {
    for call in calls {
        messages.push(Message::tool_result(
            &call.id,
            &call.name,
            mm_tools::NOT_RUN,
            true,
        ));
    }
}

/// A tool of `explore`: the same tool, but a command that may change
/// things is refused before it is planned.
struct ReadOnly(Arc<dyn Tool>);

#[async_trait::async_trait]
impl Tool for ReadOnly {
    fn row(&self) -> &ToolRow {
        self.0.row()
    }

    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }

    fn describe(&self, args: &serde_json::Value, ctx: &ToolContext) -> Described {
        self.0.describe(args, ctx)
    }

    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        self.0.subject(args, ctx)
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let reads = match self.0.subject(args, ctx) {
            Subject::Command(line) => {
                mm_policy::readonly::read_only(&mm_policy::shell::analyse(&line, &ctx.cwd))
            }
            _ => false,
        };
        if reads {
            self.0.plan(args, ctx).await
        } else {
            Err(READ_ONLY.to_owned())
        }
    }

    async fn run(&self, args: &serde_json::Value, plan: Plan, ctx: &ToolContext) -> ToolOutput {
        self.0.run(args, plan, ctx).await
    }
}

/// Where a child's events go: its parent's sink, each wrapped in
/// [`Event::Child`]; a permission it asks names the agent.
struct ChildSink {
    parent: Arc<dyn Sink>,
    call: String,
    agent: String,
}

impl ChildSink {
    /// A question about the child's call as its parent's front end asks
    /// it: under the `task` call's id (the call the front end knows),
    /// titled with the agent's name.
    fn named(&self, info: &ToolInfo) -> ToolInfo {
        let mut info = info.clone();
        info.id.clone_from(&self.call);
        info.title = format!("[subagent {}] {}", self.agent, info.title);
        info
    }
}

impl Sink for ChildSink {
    fn event(&self, event: Event) {
        self.parent.event(Event::Child {
            parent: self.call.clone(),
            agent: self.agent.clone(),
            event: Box::new(event),
        });
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let named = self.named(info);
            self.parent.permission(&named).await
        })
    }

    fn cannot_ask(&self, info: &ToolInfo) -> Option<String> {
        self.parent.cannot_ask(&self.named(info))
    }

    fn rejection_reason(&self, _id: &str) -> Option<String> {
        self.parent.rejection_reason(&self.call)
    }

    fn review_plan<'a>(&'a self, plan: &'a str) -> BoxFuture<'a, PlanReview> {
        let _ = plan;
        Box::pin(async { PlanReview::Unavailable })
    }
}

/// A sink that shows a saved child's events under its call, for replay.
pub(crate) fn child_sink(parent: Arc<dyn Sink>, call: &str, agent: &str) -> Arc<dyn Sink> {
    Arc::new(ChildSink {
        parent,
        call: call.to_owned(),
        agent: agent.to_owned(),
    })
}
