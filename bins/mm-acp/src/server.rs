//! The ACP methods mm answers (docs/reference/acp.md) and the sessions
//! behind them.
//!
//! Each request that may wait (a turn, a load behind a running turn, file
//! reads) runs in its own tokio task, never in the connection's dispatch
//! loop: `session/cancel` and the answers to `session/request_permission`
//! must be able to arrive while a turn runs. Turns are serialised per
//! process; each session has its own `Agent`, cwd and settings
//! (docs/design.md#session-root) and a cancellation token per turn.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate,
    CancelNotification, ClientCapabilities, ForkSessionRequest, ForkSessionResponse,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionCapabilities,
    SessionConfigOptionValue, SessionForkCapabilities, SessionId, SessionInfo,
    SessionListCapabilities, SessionMode, SessionModeState, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason, UnstructuredCommandInput,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use mm_agent::commands::{Commands, Front, Outcome, Parsed};
use mm_agent::config::Config;
use mm_agent::ui::AgentMode;
use mm_agent::ui::{Sink, TurnOutcome};
use mm_agent::{Agent, AgentError, EditorServer, PermissionSource};
use mm_config::SettingsFlags;
use tokio_util::sync::CancellationToken;

use crate::models::{Choices, MODEL_OPTION};
use crate::sink::{AcpSink, Connection, IdBook, Outlet};

/// How long a cancelled turn may take to unwind before the prompt is
/// answered anyway (the turn still finishes in the background).
const CANCEL_GRACE: Duration = Duration::from_secs(3);
/// How long shutdown waits for cancelled turns to kill their commands.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What the command line chose; every session's settings start from it.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--model`, `--base-url`, `--config`.
    pub settings: SettingsFlags,
}

impl Options {
    /// The settings of a session rooted at `cwd` (its project file, the
    /// user's file, the environment, the flags).
    pub fn config(&self, cwd: &Path) -> Result<Config, String> {
        let mut config = mm_agent::config::load(&self.settings.sources(cwd))
            .map(|loaded| loaded.config)
            .map_err(|e| e.to_string())?;
        // `--permissions` is the editor's default here.
        if let Some(mode) = self.settings.mode() {
            config.acp.permissions = mode;
        }
        Ok(config)
    }
}

/// One ACP session: its agent and what its turns share.
struct Session {
    id: SessionId,
    agent: tokio::sync::Mutex<Agent>,
    /// The agent's commands, advertised to the editor.
    commands: Commands,
    ids: Arc<Mutex<IdBook>>,
    /// Tokens of the turns running or waiting in this session.
    turns: Mutex<HashMap<u64, CancellationToken>>,
    /// The models the editor may choose from.
    choices: Mutex<Choices>,
}

impl Session {
    fn new(id: SessionId, agent: Agent, ids: IdBook) -> Arc<Session> {
        Arc::new(Session {
            id,
            commands: agent.commands().clone(),
            agent: tokio::sync::Mutex::new(agent),
            ids: Arc::new(Mutex::new(ids)),
            turns: Mutex::new(HashMap::new()),
            choices: Mutex::new(Choices::default()),
        })
    }

    fn turns(&self) -> MutexGuard<'_, HashMap<u64, CancellationToken>> {
        self.turns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cancel_all(&self) {
        for token in self.turns().values() {
            token.cancel();
        }
    }
}

/// The agent side of the connection.
pub struct Server {
    options: Options,
    /// `loadSession` is advertised only when sessions are enabled
    /// (docs/design.md#loadsession), by the settings of the process's
    /// directory.
    sessions_enabled: bool,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Saved-session id → ACP id of the live session that holds it.
    saved: Mutex<HashMap<String, String>>,
    /// Serialises turns: the engine is not built for concurrent generations.
    turn_lock: tokio::sync::Mutex<()>,
    next_turn: AtomicU64,
    /// The client's `fs` and `terminal` capabilities, recorded as ACP
    /// asks; mm runs its tools itself, so nothing depends on them yet.
    client: Mutex<Option<ClientCapabilities>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    pub fn new(options: Options, sessions_enabled: bool) -> Arc<Server> {
        Arc::new(Server {
            options,
            sessions_enabled,
            sessions: Mutex::new(HashMap::new()),
            saved: Mutex::new(HashMap::new()),
            turn_lock: tokio::sync::Mutex::new(()),
            next_turn: AtomicU64::new(1),
            client: Mutex::new(None),
        })
    }

    fn session(&self, id: &SessionId) -> Option<Arc<Session>> {
        lock(&self.sessions).get(id.0.as_ref()).cloned()
    }

    /// The live session `id`, or the protocol's "session not found".
    fn live(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        self.session(id).ok_or_else(|| not_found(id))
    }

    /// The `available_commands_update` of session `id`: the editor slice of
    /// its agent's commands.
    pub fn commands_update(&self, id: &SessionId) -> SessionUpdate {
        let commands = self
            .session(id)
            .map(|s| s.commands.clone())
            .unwrap_or_default();
        commands_update(&commands)
    }

    /// `initialize`: protocol 1 and what mm offers; the client's
    /// capabilities are recorded (mm runs its tools itself).
    pub fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        tracing::debug!(
            fs_read = request.client_capabilities.fs.read_text_file,
            fs_write = request.client_capabilities.fs.write_text_file,
            terminal = request.client_capabilities.terminal,
            "client capabilities"
        );
        *lock(&self.client) = Some(request.client_capabilities);
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(self.sessions_enabled)
                    .prompt_capabilities(
                        PromptCapabilities::new()
                            .image(true)
                            .audio(false)
                            .embedded_context(true),
                    )
                    // Streamable HTTP works; the old SSE transport is not
                    // supported.
                    .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
                    .session_capabilities(
                        SessionCapabilities::new()
                            .list(SessionListCapabilities::new())
                            // `session/fork` copies a saved session: only
                            // with sessions on, like `loadSession`.
                            .fork(self.sessions_enabled.then(SessionForkCapabilities::new)),
                    ),
            )
            .auth_methods(Vec::new())
            .agent_info(
                agent_client_protocol::v1::schema::Implementation::new("mm", mm_agent::version())
                    .title("mm"),
            )
    }

    /// `session/new`: an agent rooted at `cwd` with that directory's settings
    /// and the editor's `mcpServers` (started now, waited for before the
    /// first request). The caller answers, then sends
    /// [`Server::commands_update`].
    pub fn new_session(&self, request: NewSessionRequest) -> Result<NewSessionResponse, Error> {
        let cwd = checked_cwd(&request.cwd)?;
        let servers = crate::mcp::editor_servers(&request.mcp_servers);
        let mut agent = self.build_agent(&cwd, &servers)?;
        // The store names the session, so the editor can load it later
        // from any process; without sessions an id of our own serves.
        let saved = agent.start_session().map_err(|e| internal(e.to_string()))?;
        let id = SessionId::new(saved.clone().unwrap_or_else(new_id));
        if let Some(saved) = saved {
            lock(&self.saved).insert(saved.clone(), saved);
        }
        let model = Choices::default().option(&agent.model());
        let modes = modes(agent.mode());
        let session = Session::new(id.clone(), agent, IdBook::default());
        lock(&self.sessions).insert(id.0.to_string(), session);
        Ok(NewSessionResponse::new(id)
            .config_options(Some(vec![model]))
            .modes(modes))
    }

    /// After a session is answered: ask its server for the models and, when
    /// it lists any, tell the editor (`config_option_update`). A server
    /// that cannot list them leaves the model in use as the only choice.
    pub async fn offer_models(&self, id: &SessionId, outlet: &dyn Outlet) {
        let Some(session) = self.session(id) else {
            return;
        };
        let (asking, provider) = {
            let agent = session.agent.lock().await;
            (agent.server_models(), agent.provider().to_owned())
        };
        let models = match asking.await {
            Ok(models) if !models.is_empty() => models,
            Ok(_) => return,
            Err(e) => {
                tracing::info!("the server's models cannot be listed: {e}");
                return;
            }
        };
        let choices = Choices::of(&provider, models);
        let current = session.agent.lock().await.model();
        outlet.update(id, choices.update(&current));
        *lock(&session.choices) = choices;
    }

    /// `session/set_config_option`: the editor chose a model (the only
    /// option mm offers). It takes effect from the next request; a turn
    /// running now ends first.
    pub async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let session = self.live(&request.session_id)?;
        if request.config_id.0.as_ref() != MODEL_OPTION {
            return Err(Error::invalid_params().data(format!(
                "unknown config option {:?}; mm offers {MODEL_OPTION:?}",
                request.config_id.0
            )));
        }
        let SessionConfigOptionValue::ValueId { value } = request.value else {
            return Err(Error::invalid_params().data("the model is a PROVIDER/MODEL value"));
        };
        let mut agent = session.agent.lock().await;
        agent
            .set_model(&value.0)
            .map_err(|e| Error::invalid_params().data(e.to_string()))?;
        let option = lock(&session.choices).option(&agent.model());
        Ok(SetSessionConfigOptionResponse::new(vec![option]))
    }

    /// `session/set_mode`: allow, ask or plan, from the next call judged
    /// (a running turn ends first: the agent is its until then).
    pub async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self.live(&request.session_id)?;
        let Some(mode) = AgentMode::from_name(&request.mode_id.0) else {
            return Err(Error::invalid_params().data(format!(
                "unknown mode {:?}; mm has allow, ask and plan",
                request.mode_id.0
            )));
        };
        session.agent.lock().await.set_mode(mode);
        Ok(SetSessionModeResponse::new())
    }

    fn build_agent(&self, cwd: &Path, servers: &[EditorServer]) -> Result<Agent, Error> {
        let config = self.options.config(cwd).map_err(internal)?;
        let agent = Agent::with_editor_servers(config, cwd, PermissionSource::Editor, servers)
            .map_err(|e| internal(e.to_string()))?;
        // Human output goes to stderr in ACP mode, never stdout.
        for warning in agent.warnings() {
            tracing::warn!("{warning}");
        }
        Ok(agent)
    }

    /// `session/load`: continue a saved session, replaying its whole history
    /// into `outlet` before the answer. The caller answers, then sends
    /// [`Server::commands_update`].
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
        outlet: Arc<dyn Outlet>,
    ) -> Result<LoadSessionResponse, Error> {
        let cwd = checked_cwd(&request.cwd)?;
        let wanted = request.session_id.0.to_string();

        // Held by a live session of this process: show that one again.
        let live = {
            let saved = lock(&self.saved).get(&wanted).cloned();
            let sessions = lock(&self.sessions);
            saved
                .and_then(|acp| sessions.get(&acp).cloned())
                .or_else(|| sessions.get(&wanted).cloned())
        };
        let session = match live {
            Some(session) => session,
            None => {
                let config = self.options.config(&cwd).map_err(internal)?;
                if !config.sessions.enabled {
                    return Err(
                        Error::invalid_request().data(AgentError::SessionsDisabled.to_string())
                    );
                }
                let known = mm_agent::scan_sessions(&config, Some(&cwd))
                    .map_err(|e| internal(e.to_string()))?;
                if !known.sessions.iter().any(|s| s.id == wanted) {
                    // A file that is there but cannot be read is named,
                    // with what is wrong, and left as it is.
                    if let Some(broken) = known.unreadable.iter().find(|u| u.id == wanted) {
                        return Err(Error::invalid_request().data(broken.text.clone()));
                    }
                    return Err(not_found(&request.session_id));
                }
                let servers = crate::mcp::editor_servers(&request.mcp_servers);
                let mut agent =
                    Agent::with_editor_servers(config, &cwd, PermissionSource::Editor, &servers)
                        .map_err(|e| internal(e.to_string()))?;
                agent
                    .resume(Some(&wanted))
                    .map_err(|e| internal(e.to_string()))?;
                let session = Session::new(request.session_id.clone(), agent, IdBook::default());
                lock(&self.sessions).insert(wanted.clone(), session.clone());
                lock(&self.saved).insert(wanted.clone(), wanted.clone());
                session
            }
        };
        if session.id != request.session_id {
            // The same session under the id the editor now uses.
            lock(&self.sessions).insert(wanted.clone(), session.clone());
        }
        // The history as the editor would have seen it live, through the
        // same sink as a live turn.
        let agent = session.agent.lock().await;
        let sink = Arc::new(AcpSink::new(
            outlet,
            request.session_id.clone(),
            session.ids.clone(),
        ));
        agent.replay(sink);
        let model = lock(&session.choices).option(&agent.model());
        let modes = modes(agent.mode());
        Ok(LoadSessionResponse::new()
            .config_options(Some(vec![model]))
            .modes(modes))
    }

    /// `session/fork` (unstable in the protocol): a new session rooted at
    /// `cwd` holding a copy of session `session_id` (live in this process,
    /// or saved), whose own file is left as it is. The caller answers, then
    /// sends [`Server::commands_update`].
    pub async fn fork_session(
        &self,
        request: ForkSessionRequest,
    ) -> Result<ForkSessionResponse, Error> {
        let cwd = checked_cwd(&request.cwd)?;
        let wanted = request.session_id.0.to_string();
        let servers = crate::mcp::editor_servers(&request.mcp_servers);
        let mut agent = self.build_agent(&cwd, &servers)?;
        if !agent.config().sessions.enabled {
            return Err(Error::invalid_request().data(AgentError::SessionsDisabled.to_string()));
        }
        let live = {
            let saved = lock(&self.saved).get(&wanted).cloned();
            let sessions = lock(&self.sessions);
            saved
                .and_then(|acp| sessions.get(&acp).cloned())
                .or_else(|| sessions.get(&wanted).cloned())
        };
        let not_found = || not_found(&request.session_id);
        let forked = match live {
            // A turn of the original runs to its end first.
            Some(session) => agent.fork_from(&*session.agent.lock().await),
            None => match agent.resume(Some(&wanted)) {
                Ok(_) => agent.fork(None).map(|(new, _)| new),
                Err(AgentError::Store(mm_agent::StoreError::NotFound { .. })) => {
                    return Err(not_found());
                }
                Err(e) => Err(e),
            },
        };
        let id = forked.map_err(|e| Error::invalid_request().data(e.to_string()))?;
        let session_id = SessionId::new(id.clone());
        lock(&self.saved).insert(id.clone(), id.clone());
        let model = Choices::default().option(&agent.model());
        let session = Session::new(session_id.clone(), agent, IdBook::default());
        lock(&self.sessions).insert(id, session);
        Ok(ForkSessionResponse::new(session_id).config_options(Some(vec![model])))
    }

    /// `session/list`: the saved sessions of `cwd` (all without it), most
    /// recently updated first, then the files of `cwd` that cannot be read.
    pub fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        let base = match &request.cwd {
            Some(cwd) => checked_cwd(cwd)?,
            None => std::env::current_dir().map_err(|e| internal(e.to_string()))?,
        };
        let config = self.options.config(&base).map_err(internal)?;
        let found = mm_agent::scan_sessions(&config, request.cwd.as_deref())
            .map_err(|e| internal(e.to_string()))?;
        // Files that cannot be read are listed too, under their id, the
        // title saying what is wrong (for one project, whose folder is
        // known; across projects their folder is not).
        let broken: Vec<SessionInfo> = match &request.cwd {
            Some(cwd) => found
                .unreadable
                .iter()
                .map(|u| {
                    SessionInfo::new(u.id.clone(), cwd.clone())
                        .title(Some(format!("unreadable: {}", u.text)))
                })
                .collect(),
            None => Vec::new(),
        };
        let sessions = found
            .sessions
            .into_iter()
            .map(|s| {
                let title = (!s.title.is_empty()).then(|| s.title.clone());
                SessionInfo::new(s.id.clone(), s.cwd.clone())
                    .title(title)
                    .updated_at(
                        s.updated_at
                            .format(&time::format_description::well_known::Rfc3339)
                            .ok(),
                    )
            })
            .chain(broken)
            .collect();
        Ok(ListSessionsResponse::new(sessions))
    }

    /// `session/cancel`: cancel every turn of the session, running or
    /// waiting. The turn kills its command group and answers `cancelled`.
    pub fn cancel(&self, notification: CancelNotification) {
        match self.session(&notification.session_id) {
            Some(session) => session.cancel_all(),
            None => tracing::debug!("cancel for unknown session {}", notification.session_id),
        }
    }

    /// `session/prompt`: one turn, answered through `responder`. The turn's
    /// token is registered here, in the dispatch loop, so that a
    /// `session/cancel` dispatched right after it is never lost; the turn
    /// itself runs in its own task (see the module doc).
    pub fn prompt(
        self: Arc<Self>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let Some(session) = self.session(&request.session_id) else {
            let _ = responder.respond_with_error(not_found(&request.session_id));
            return;
        };
        let turn = self.next_turn.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        session.turns().insert(turn, cancel.clone());
        let outlet: Arc<dyn Outlet> = Arc::new(Connection(cx));
        tokio::spawn(async move {
            self.turn(&session, &request, &cancel, outlet, responder)
                .await;
            session.turns().remove(&turn);
        });
    }

    async fn turn(
        &self,
        session: &Arc<Session>,
        request: &PromptRequest,
        cancel: &CancellationToken,
        outlet: Arc<dyn Outlet>,
        responder: Responder<PromptResponse>,
    ) {
        let sink = Arc::new(AcpSink::new(
            outlet.clone(),
            request.session_id.clone(),
            session.ids.clone(),
        ));
        let answer = |sink: &AcpSink, responder: Responder<PromptResponse>, stop: StopReason| {
            // Open calls are closed before the answer; nothing follows it.
            sink.finish();
            if let Err(e) = responder.respond(PromptResponse::new(stop)) {
                tracing::debug!("prompt answer not sent: {e}");
            }
        };

        let _serial = tokio::select! {
            guard = self.turn_lock.lock() => guard,
            _ = cancel.cancelled() => return answer(&sink, responder, StopReason::Cancelled),
        };
        let mut agent = session.agent.lock().await;
        if cancel.is_cancelled() {
            return answer(&sink, responder, StopReason::Cancelled);
        }
        let dyn_sink: Arc<dyn Sink> = sink.clone();
        let stop = match editor_question(&mut agent, request, &sink, cancel).await {
            None => StopReason::EndTurn,
            Some((question, extra)) => {
                let mut run = Box::pin(agent.ask_with(&question, extra, dyn_sink, cancel.clone()));
                let grace = async {
                    cancel.cancelled().await;
                    tokio::time::sleep(CANCEL_GRACE).await;
                };
                let report = tokio::select! {
                    report = &mut run => Some(report),
                    _ = grace => None,
                };
                match report {
                    Some(report) => stop_reason(&report.outcome),
                    None => {
                        // Answer now; let the turn unwind (and keep its
                        // history) before the next one starts.
                        answer(&sink, responder, StopReason::Cancelled);
                        unwind(run).await;
                        // A dropped turn can leave a call without its
                        // result; the next request must still be valid
                        // (docs/design.md#every-call-gets-a-result).
                        agent.close_open_calls();
                        self.remember_saved(session, &agent);
                        return;
                    }
                }
            }
        };
        // The protocol requires `cancelled` after a cancel, whatever the
        // engine made of it.
        let stop = if cancel.is_cancelled() {
            StopReason::Cancelled
        } else {
            stop
        };
        self.remember_saved(session, &agent);
        answer(&sink, responder, stop);
    }

    /// Note which saved session a live one now writes to, so that loading
    /// it again in this process finds the live one.
    fn remember_saved(&self, session: &Session, agent: &Agent) {
        if let Some(saved) = agent.session_id() {
            lock(&self.saved).insert(saved, session.id.0.to_string());
        }
    }

    /// Cancel every turn (their commands' process groups are killed) and
    /// wait, bounded, for them to stop.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        for session in &sessions {
            session.cancel_all();
        }
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.turn_lock.lock()).await;
        // Language and MCP servers get their goodbye; whatever does not
        // end in time is killed by the caller's mm_agent::shutdown.
        let ends = sessions.iter().map(|session| async move {
            if let Ok(agent) = tokio::time::timeout(SHUTDOWN_GRACE, session.agent.lock()).await {
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, agent.shutdown()).await;
            }
        });
        futures::future::join_all(ends).await;
    }
}

/// The editor slice of a session's command table, names without the slash.
pub fn commands_update(commands: &Commands) -> SessionUpdate {
    let commands = commands
        .for_front(Front::Editor)
        .map(|c| {
            AvailableCommand::new(c.name(), c.description()).input(c.argument().map(|hint| {
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint))
            }))
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

/// A command's reply, as an agent message: an editor shows every outcome
/// as text.
fn show(sink: &AcpSink, outcome: Outcome) {
    if let Some(text) = outcome.text() {
        sink.message(&text);
    }
}

/// The session root must be an existing absolute directory.
/// The modes a session offers, `current` in force.
pub fn modes(current: AgentMode) -> SessionModeState {
    let available = AgentMode::ALL
        .into_iter()
        .map(|m| {
            let name = match m {
                AgentMode::Allow => "Allow",
                AgentMode::Ask => "Ask",
                AgentMode::Plan => "Plan",
            };
            SessionMode::new(m.name(), name).description(m.meaning().to_owned())
        })
        .collect();
    SessionModeState::new(current.name(), available)
}

fn checked_cwd(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params()
            .data(format!("cwd must be an absolute path: {}", cwd.display())));
    }
    if !cwd.is_dir() {
        return Err(
            Error::invalid_params().data(format!("cwd is not a directory: {}", cwd.display()))
        );
    }
    Ok(cwd.to_path_buf())
}

/// The protocol's "session not found" for `id`.
fn not_found(id: &SessionId) -> Error {
    agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
}

fn internal(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, message.into())
}

/// A session id for the editor when sessions are disabled.
fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The question of an editor's prompt and what it attaches besides its
/// text, or `None` when it was a command that answered by itself (shown
/// to the editor as it ran).
async fn editor_question(
    agent: &mut Agent,
    request: &PromptRequest,
    sink: &Arc<AcpSink>,
    cancel: &CancellationToken,
) -> Option<(String, mm_agent::mention::Extra)> {
    let crate::prompt::Prompt {
        text: question,
        extra,
    } = crate::prompt::question(&request.prompt);
    let commands = agent.commands().clone();
    match commands.parse(&question, Front::Editor) {
        Parsed::NotCommand => Some((question, extra)),
        Parsed::Unknown(name) => {
            show(sink, commands.unknown(name, Front::Editor));
            None
        }
        Parsed::Command { command, argument } => {
            let dyn_sink: Arc<dyn Sink> = sink.clone();
            let outcome = agent
                .run_command(command, argument, Front::Editor, dyn_sink, cancel.clone())
                .await;
            match outcome {
                Outcome::Ask(question) => Some((question, extra)),
                other => {
                    show(sink, other);
                    None
                }
            }
        }
    }
}

/// How a finished turn is reported to the editor.
fn stop_reason(outcome: &TurnOutcome) -> StopReason {
    match outcome {
        TurnOutcome::Done | TurnOutcome::Failed(_) | TurnOutcome::Repeated(_) => {
            StopReason::EndTurn
        }
        TurnOutcome::MaxTurns => StopReason::MaxTurnRequests,
        TurnOutcome::Cancelled => StopReason::Cancelled,
    }
}

/// Let a cancelled turn that outlived its grace unwind, for at most 30 s,
/// then drop it.
async fn unwind<F: std::future::Future>(mut run: std::pin::Pin<Box<F>>) {
    if tokio::time::timeout(Duration::from_secs(30), &mut run)
        .await
        .is_err()
    {
        tracing::warn!("a cancelled turn did not stop within 30s; dropped");
    }
}
