//! The MCP servers of one session: started in parallel, each bounded by the
//! start timeout, reported in one line when they fail, restarted once when
//! they die, and all ended together.

use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::JsonObject;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::McpError;
use crate::server::{Server, Timeouts, ToolDef};
use crate::shape::CallOutput;
use crate::spec::ServerSpec;

/// Where one server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Being started.
    Starting,
    /// Connected, with this many tools.
    Ready {
        /// How many tools it offers.
        tools: usize,
    },
    /// Not usable; the line says why.
    Failed(String),
    /// Ended with the session.
    Stopped,
}

/// One server's line in `/mcp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Its name.
    pub name: String,
    /// Its command line or URL (no secret values).
    pub target: String,
    /// Its state.
    pub state: State,
    /// Whether it was started again after it died.
    pub restarted: bool,
}

impl Status {
    /// `time: ready, 2 tools` / `docs: failed: no answer to initialize
    /// within 10s` / `slow: starting`.
    pub fn line(&self) -> String {
        let restarted = if self.restarted { " (restarted)" } else { "" };
        match &self.state {
            State::Starting => format!("{}: starting", self.name),
            State::Ready { tools } => format!(
                "{}: ready, {tools} tool{}{restarted}",
                self.name,
                if *tools == 1 { "" } else { "s" }
            ),
            State::Failed(why) => format!("{}: failed: {why}{restarted}", self.name),
            State::Stopped => format!("{}: stopped", self.name),
        }
    }
}

struct Entry {
    spec: ServerSpec,
    /// The spec's secret values, redacted from every line it produces.
    secrets: Vec<String>,
    slot: Arc<tokio::sync::Mutex<Slot>>,
    status: Mutex<(State, bool)>,
    state_tx: watch::Sender<bool>,
}

#[derive(Default)]
struct Slot {
    server: Option<Arc<Server>>,
    /// The tools of the first successful start: what is declared.
    tools: Vec<ToolDef>,
    /// The one restart was used.
    restarted: bool,
}

impl Entry {
    fn status(&self) -> MutexGuard<'_, (State, bool)> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_state(&self, state: State) {
        let mut s = self.status();
        s.0 = state;
        let settled = !matches!(s.0, State::Starting);
        drop(s);
        self.state_tx.send_replace(settled);
    }

    fn redact(&self, text: String) -> String {
        crate::redact(&text, &self.secrets)
    }
}

/// The servers of one session.
#[derive(Clone)]
pub struct Hub {
    entries: Arc<Vec<Arc<Entry>>>,
    settings: Timeouts,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("servers", &self.entries.len())
            .field("settings", &self.settings)
            .finish()
    }
}

impl Hub {
    /// Start every server at once, in the background; [`Hub::wait_started`]
    /// waits for them. Must be called inside a tokio runtime.
    pub fn start(specs: Vec<ServerSpec>, settings: Timeouts) -> Hub {
        let entries: Vec<Arc<Entry>> = specs
            .into_iter()
            .map(|spec| {
                Arc::new(Entry {
                    secrets: spec.secrets(),
                    spec,
                    slot: Arc::new(tokio::sync::Mutex::new(Slot::default())),
                    status: Mutex::new((State::Starting, false)),
                    state_tx: watch::channel(false).0,
                })
            })
            .collect();
        for entry in &entries {
            let entry = entry.clone();
            // Take the slot before the task runs, so that a call made while
            // the server starts waits for it.
            let Ok(mut slot) = entry.slot.clone().try_lock_owned() else {
                continue;
            };
            tokio::spawn(async move {
                let started = Server::start(&entry.spec, settings).await;
                match started {
                    Ok(server) => {
                        slot.tools = server.tools().to_vec();
                        let tools = slot.tools.len();
                        slot.server = Some(Arc::new(server));
                        drop(slot);
                        entry.set_state(State::Ready { tools });
                    }
                    Err(e) => {
                        drop(slot);
                        entry.set_state(State::Failed(entry.redact(e.to_string())));
                    }
                }
            });
        }
        Hub {
            entries: Arc::new(entries),
            settings,
        }
    }

    /// A hub with no server.
    pub fn empty() -> Hub {
        Hub {
            entries: Arc::new(Vec::new()),
            settings: Timeouts::default(),
        }
    }

    /// Whether it holds no server at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The timeouts in force.
    pub fn settings(&self) -> Timeouts {
        self.settings
    }

    /// Wait until every server is ready or failed. Each start is bounded by
    /// the start timeout, so this is too.
    pub async fn wait_started(&self) {
        for entry in self.entries.iter() {
            let mut rx = entry.state_tx.subscribe();
            let _ = rx.wait_for(|settled| *settled).await;
        }
    }

    /// Every server's status, in the order they were given.
    pub fn status(&self) -> Vec<Status> {
        self.entries
            .iter()
            .map(|e| {
                let s = e.status();
                Status {
                    name: e.spec.name.clone(),
                    target: e.spec.target(),
                    state: s.0.clone(),
                    restarted: s.1,
                }
            })
            .collect()
    }

    /// The servers that failed to start, as one line each:
    /// `mcp server docs: no answer to initialize within 10s`.
    pub fn failures(&self) -> Vec<String> {
        self.status()
            .into_iter()
            .filter_map(|s| match s.state {
                State::Failed(why) => Some(format!("mcp server {}: {why}", s.name)),
                _ => None,
            })
            .collect()
    }

    /// The tools of every ready server, as `(server, tool)`, in the servers'
    /// order: what was listed at the first start (a restarted server keeps
    /// its declarations).
    pub async fn tools(&self) -> Vec<(String, ToolDef)> {
        let mut out = Vec::new();
        for entry in self.entries.iter() {
            let slot = entry.slot.lock().await;
            for tool in &slot.tools {
                out.push((entry.spec.name.clone(), tool.clone()));
            }
        }
        out
    }

    /// Every secret value of every server (for redaction of results).
    pub fn secrets(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for e in self.entries.iter() {
            for s in &e.secrets {
                if !all.contains(s) {
                    all.push(s.clone());
                }
            }
        }
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        all
    }

    /// Call `tool` on `server`. A server that died since its last call is
    /// started again first, once per session; a server that is not running
    /// gives its reason. Errors are one line, secrets redacted.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, String> {
        let Some(entry) = self.entries.iter().find(|e| e.spec.name == server) else {
            return Err(format!("there is no MCP server named {server}"));
        };
        let running = self.running(entry, cancel).await?;
        let result = running.call(tool, arguments, cancel).await;
        match result {
            Ok(out) => Ok(out),
            Err(e) => {
                if e.is_gone() {
                    let restarted = entry.status().1;
                    let why = entry.redact(e.to_string());
                    let next = if restarted {
                        "it was restarted once already and stays stopped"
                    } else {
                        "it will be started again on the next call"
                    };
                    entry.set_state(State::Failed(why.clone()));
                    return Err(format!("{why}; {next}"));
                }
                Err(entry.redact(e.to_string()))
            }
        }
    }

    /// The running server of `entry`, started again when it died and its
    /// one restart is unused.
    async fn running(
        &self,
        entry: &Arc<Entry>,
        cancel: &CancellationToken,
    ) -> Result<Arc<Server>, String> {
        let mut slot = tokio::select! {
            slot = entry.slot.lock() => slot,
            () = cancel.cancelled() => return Err(McpError::Cancelled.to_string()),
        };
        if let Some(server) = &slot.server
            && !server.is_gone()
        {
            return Ok(server.clone());
        }
        if slot.server.is_none() && !slot.restarted {
            // It never started: its failure stands (it was reported).
            let why = match entry.status().0.clone() {
                State::Failed(why) => why,
                _ => "it stopped".to_string(),
            };
            return Err(format!("the server is not running: {why}"));
        }
        if slot.restarted {
            let why = match entry.status().0.clone() {
                State::Failed(why) => why,
                _ => "it stopped".to_string(),
            };
            return Err(format!(
                "the server is not running ({why}); it was restarted once already"
            ));
        }
        // The one restart.
        slot.restarted = true;
        if let Some(old) = slot.server.take()
            && let Some(old) = Arc::into_inner(old)
        {
            old.close().await;
        }
        {
            let mut s = entry.status();
            s.1 = true;
        }
        entry.set_state(State::Starting);
        let started = tokio::select! {
            s = Server::start(&entry.spec, self.settings) => s,
            () = cancel.cancelled() => {
                entry.set_state(State::Failed("its restart was cancelled".to_string()));
                return Err(McpError::Cancelled.to_string());
            }
        };
        match started {
            Ok(server) => {
                let server = Arc::new(server);
                let tools = slot.tools.len().max(server.tools().len());
                slot.server = Some(server.clone());
                entry.set_state(State::Ready { tools });
                Ok(server)
            }
            Err(e) => {
                let why = entry.redact(e.to_string());
                entry.set_state(State::Failed(why.clone()));
                Err(format!("the server could not be started again: {why}"))
            }
        }
    }

    /// End every server: close its input, then kill its group. Waits for
    /// starts still under way (each bounded).
    pub async fn shutdown(&self) {
        let closing = self.entries.iter().map(|entry| async move {
            let mut slot = entry.slot.lock().await;
            // A call that still holds the server kills it when it drops it.
            if let Some(server) = slot.server.take().and_then(Arc::into_inner) {
                server.close().await;
            }
            entry.set_state(State::Stopped);
        });
        futures::future::join_all(closing).await;
    }
}
