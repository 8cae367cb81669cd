//! One running language server: the child process, the async-lsp client
//! main loop, what the server told us (diagnostics, progress, readiness),
//! and the documents it has open.
//!
//! The child runs in its own process group (a terminal's Ctrl-C must not
//! reach it), gets a parent-death signal (docs/design.md#parent-death-signal)
//! and is killed with its group when the connection is dropped.

use std::collections::{HashMap, HashSet};
use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_lsp::router::Router;
use async_lsp::{ErrorCode, MainLoop, ServerSocket};
use lsp_types::notification::{
    DidChangeTextDocument, DidOpenTextDocument, Exit, Initialized, Progress, PublishDiagnostics,
};
use lsp_types::request::{Initialize, Request, Shutdown};
use lsp_types::{
    ClientCapabilities, ClientInfo, Diagnostic, DidChangeTextDocumentParams,
    DidOpenTextDocumentParams, DocumentSymbolClientCapabilities,
    DynamicRegistrationClientCapabilities, GeneralClientCapabilities, GotoCapability,
    HoverClientCapabilities, InitializeParams, InitializedParams, MarkupKind, NumberOrString,
    PositionEncodingKind, ProgressParamsValue, PublishDiagnosticsClientCapabilities,
    RenameClientCapabilities, TextDocumentClientCapabilities, TextDocumentContentChangeEvent,
    TextDocumentItem, TextDocumentSyncClientCapabilities, Url, VersionedTextDocumentIdentifier,
    WindowClientCapabilities, WorkDoneProgress, WorkspaceClientCapabilities,
    WorkspaceEditClientCapabilities, WorkspaceFolder,
};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::ServerConfig;

/// Bound on `initialize`: a server that does not answer is not usable.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How a request that timed out starts its failure text.
pub const NO_ANSWER: &str = "no answer within";

/// Why a request to a language server got no result. Callers branch on
/// the kind; the text is for the model, made at the tool's edge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The server did not answer in time.
    #[error("{NO_ANSWER} {0}s")]
    Timeout(u64),
    /// The server went away (its process ended, its pipe closed).
    #[error("{0}")]
    Stopped(String),
    /// The server answered with an error.
    #[error("{0}")]
    Refused(String),
    /// The request could not be made.
    #[error("{0}")]
    Failed(String),
}

impl RequestError {
    /// Whether other spots are worth trying after this: not when the
    /// server is gone or too slow.
    pub fn ends_the_call(&self) -> bool {
        matches!(self, RequestError::Timeout(_) | RequestError::Stopped(_))
    }
}
/// Bound on one request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on the graceful part of a shutdown, per step.
const SHUTDOWN_STEP: Duration = Duration::from_secs(2);
/// How much of the server's stderr is kept, to explain a failed start.
const STDERR_KEEP: usize = 2048;

/// A diagnostics publication.
#[derive(Debug, Clone)]
pub struct Published {
    /// Order of arrival among all the server's publications and progress.
    pub seq: u64,
    pub version: Option<i32>,
    pub items: Vec<Diagnostic>,
}

/// What the server told us, written by the main loop's handlers.
#[derive(Debug, Default)]
struct Shared {
    seq: u64,
    diagnostics: HashMap<Url, Published>,
    /// Work-done progress tokens begun and not yet ended.
    progress: HashSet<String>,
    /// rust-analyzer's `experimental/serverStatus`: `Some(false)` while it
    /// loads the workspace (its answers are empty until then).
    quiescent: Option<bool>,
    /// pyright: `Some(false)` until it logged that it found the workspace's
    /// source files; before that a rename or references search sees only
    /// the open files.
    scanned: Option<bool>,
}

impl Shared {
    fn busy(&self) -> bool {
        self.quiescent == Some(false) || self.scanned == Some(false) || !self.progress.is_empty()
    }
}

/// pyright's log line after the workspace scan: `Found 2 source files`,
/// `No source files found.`
fn is_scan_log(message: &str) -> bool {
    (message.starts_with("Found ") && message.contains(" source file"))
        || message.starts_with("No source files found")
}

/// The state the router's handlers see. Holds a socket so that the main
/// loop's channel never closes while the loop runs.
struct Handler {
    shared: Arc<Mutex<Shared>>,
    wake: Arc<Notify>,
    folders: Vec<WorkspaceFolder>,
    _socket: ServerSocket,
}

/// An open document as the server has it.
#[derive(Debug)]
struct Doc {
    version: i32,
    text: String,
    /// `Shared::seq` when it was last sent: a publication with a larger seq
    /// came after the server saw this content.
    synced_seq: u64,
}

/// What a sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Synced {
    /// The content was sent now (`didOpen` or `didChange`).
    pub sent: bool,
    pub version: i32,
    pub synced_seq: u64,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

fn token_key(token: &NumberOrString) -> String {
    match token {
        NumberOrString::Number(n) => format!("#{n}"),
        NumberOrString::String(s) => s.clone(),
    }
}

/// A running server.
pub struct Conn {
    pub name: String,
    socket: ServerSocket,
    child: Child,
    pgid: i32,
    shared: Arc<Mutex<Shared>>,
    wake: Arc<Notify>,
    alive: Arc<AtomicBool>,
    stderr: Arc<Mutex<String>>,
    /// Why the frame guard ended the connection, if it did.
    broken: crate::frame::Broken,
    docs: HashMap<Url, Doc>,
    main_loop: JoinHandle<()>,
    /// Kills the server's whole group if mm dies without dropping this
    /// (an exit, SIGKILL): the parent-death signal reaches only the server
    /// itself, not what it started.
    guard: Option<mm_child::DeathGuard>,
    /// False until the first request went out: the first one may wait for
    /// the server to settle.
    pub(crate) settled: bool,
    killed: bool,
    /// When a document content was last sent.
    last_change: Option<Instant>,
}

impl Conn {
    /// Start the server in `root` and initialize it.
    pub async fn start(cfg: &ServerConfig, root: &Path) -> Result<Conn, String> {
        let root_uri = Url::from_directory_path(root)
            .map_err(|()| format!("{} is not an absolute directory", root.display()))?;
        let folders = vec![WorkspaceFolder {
            uri: root_uri.clone(),
            name: root
                .file_name()
                .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned()),
        }];
        let shared = Arc::new(Mutex::new(Shared::default()));
        let named = |what: &str| cfg.name.contains(what) || cfg.command.contains(what);
        if named("rust-analyzer") {
            lock(&shared).quiescent = Some(false);
        }
        if named("pyright") {
            lock(&shared).scanned = Some(false);
        }
        let wake = Arc::new(Notify::new());

        let (main_loop, socket) = {
            let shared = shared.clone();
            let wake = wake.clone();
            let folders = folders.clone();
            MainLoop::new_client(move |socket| {
                router(Handler {
                    shared,
                    wake,
                    folders,
                    _socket: socket,
                })
            })
        };

        let mut child = spawn(cfg, root).map_err(|e| format!("could not start: {e}"))?;
        let pgid = child.id().map_or(0, |id| id as i32);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("could not start: no pipes to the server".to_string());
        };
        let tail = Arc::new(Mutex::new(String::new()));
        tokio::spawn(keep_tail(stderr, tail.clone()));
        // While the server has not been waited for, its group exists for
        // the guard to join.
        let guard = if pgid > 1 {
            mm_child::DeathGuard::spawn(pgid)
                .map_err(|e| tracing::warn!("lsp: no death guard for {}: {e}", cfg.name))
                .ok()
        } else {
            None
        };

        let alive = Arc::new(AtomicBool::new(true));
        let broken = crate::frame::Broken::default();
        let input = crate::frame::guard(stdout, broken.clone());
        let main_loop = {
            let alive = alive.clone();
            let wake = wake.clone();
            tokio::spawn(async move {
                let ret = main_loop
                    .run_buffered(input.compat(), stdin.compat_write())
                    .await;
                if let Err(e) = ret {
                    tracing::debug!("language server main loop ended: {e}");
                }
                alive.store(false, Ordering::SeqCst);
                wake.notify_waiters();
            })
        };

        let mut conn = Conn {
            name: cfg.name.clone(),
            socket,
            child,
            pgid,
            shared,
            wake,
            alive,
            stderr: tail,
            broken,
            docs: HashMap::new(),
            main_loop,
            guard,
            settled: false,
            killed: false,
            last_change: None,
        };
        #[allow(deprecated)]
        let params = InitializeParams {
            process_id: Some(std::process::id()),
            root_path: Some(root.display().to_string()),
            root_uri: Some(root_uri),
            capabilities: capabilities(),
            workspace_folders: Some(folders),
            client_info: Some(ClientInfo {
                name: "mm".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            ..InitializeParams::default()
        };
        match conn.request::<Initialize>(params, INIT_TIMEOUT).await {
            Ok(_) => {}
            Err(e) => {
                // Give the server a moment to write why it stopped.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let why = conn.stderr_last_line();
                conn.kill();
                return Err(match why {
                    Some(line) => format!("initialize failed: {e}: {line}"),
                    None => format!("initialize failed: {e}"),
                });
            }
        }
        conn.socket
            .notify::<Initialized>(InitializedParams {})
            .map_err(|e| format!("initialize failed: {e}"))?;
        Ok(conn)
    }

    /// The last non-empty line the server wrote on stderr.
    fn stderr_last_line(&self) -> Option<String> {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        tail.lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    }

    /// False once the process ended or the connection broke.
    pub fn is_alive(&mut self) -> bool {
        if !self.alive.load(Ordering::SeqCst) {
            return false;
        }
        !matches!(self.child.try_wait(), Ok(Some(_)) | Err(_))
    }

    /// False once the connection broke (the main loop ended).
    pub fn connected(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Send a request and wait for its answer, bounded. A server that says
    /// its content changed under it (rust-analyzer while it loads) is asked
    /// again a few times.
    pub async fn request<R: Request>(
        &self,
        params: R::Params,
        limit: Duration,
    ) -> Result<R::Result, RequestError>
    where
        R::Params: Clone,
    {
        let deadline = Instant::now() + limit;
        let mut retries = 0;
        loop {
            let ask = self.socket.request::<R>(params.clone());
            let ret = match tokio::time::timeout_at(deadline, ask).await {
                Err(_) => return Err(RequestError::Timeout(limit.as_secs())),
                Ok(ret) => ret,
            };
            match ret {
                Ok(v) => return Ok(v),
                Err(async_lsp::Error::Response(r))
                    if retries < 5
                        && (r.code == ErrorCode::CONTENT_MODIFIED
                            || r.code == ErrorCode::SERVER_CANCELLED) =>
                {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(async_lsp::Error::Response(r)) => return Err(RequestError::Refused(r.message)),
                Err(async_lsp::Error::ServiceStopped | async_lsp::Error::Eof) => {
                    // Known dead from here on, even before the main loop
                    // ends and says so: the caller starts it again.
                    self.alive.store(false, Ordering::SeqCst);
                    return Err(RequestError::Stopped(stopped(&self.broken)));
                }
                Err(e) => return Err(RequestError::Failed(e.to_string())),
            }
        }
    }

    /// Make the server's copy of `path` equal `text`: `didOpen` the first
    /// time, a whole-document `didChange` when it moved.
    pub fn sync(&mut self, path: &Path, text: &str, language: &str) -> Result<Synced, String> {
        let uri = file_url(path)?;
        let unchanged = self.docs.get(&uri).is_some_and(|d| d.text == text);
        if !unchanged {
            self.last_change = Some(Instant::now());
        }
        let seq = lock(&self.shared).seq;
        match self.docs.get_mut(&uri) {
            Some(doc) if doc.text == text => Ok(Synced {
                sent: false,
                version: doc.version,
                synced_seq: doc.synced_seq,
            }),
            Some(doc) => {
                doc.version += 1;
                doc.text = text.to_string();
                doc.synced_seq = seq;
                let version = doc.version;
                self.socket
                    .notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
                        text_document: VersionedTextDocumentIdentifier { uri, version },
                        content_changes: vec![TextDocumentContentChangeEvent {
                            range: None,
                            range_length: None,
                            text: text.to_string(),
                        }],
                    })
                    .map_err(|_| stopped(&self.broken))?;
                Ok(Synced {
                    sent: true,
                    version,
                    synced_seq: seq,
                })
            }
            None => {
                self.socket
                    .notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
                        text_document: TextDocumentItem {
                            uri: uri.clone(),
                            language_id: language.to_string(),
                            version: 1,
                            text: text.to_string(),
                        },
                    })
                    .map_err(|_| stopped(&self.broken))?;
                self.docs.insert(
                    uri,
                    Doc {
                        version: 1,
                        text: text.to_string(),
                        synced_seq: seq,
                    },
                );
                Ok(Synced {
                    sent: true,
                    version: 1,
                    synced_seq: seq,
                })
            }
        }
    }

    /// True when some document changed within `window`: the server may
    /// still answer from its older state.
    pub fn changed_within(&self, window: Duration) -> bool {
        self.last_change.is_some_and(|t| t.elapsed() < window)
    }

    /// The files the server has open, with their extensions (with the dot).
    pub fn open_paths(&self) -> Vec<(std::path::PathBuf, String)> {
        self.docs
            .keys()
            .filter_map(|u| u.to_file_path().ok())
            .map(|p| {
                let ext = p
                    .extension()
                    .map(|e| format!(".{}", e.to_string_lossy()))
                    .unwrap_or_default();
                (p, ext)
            })
            .collect()
    }

    /// True once the server published diagnostics for any file: before
    /// that it may still be loading (pyright's first check reads its whole
    /// standard library stubs).
    pub fn published_any(&self) -> bool {
        !lock(&self.shared).diagnostics.is_empty()
    }

    /// The last publication for `path`, if any.
    pub fn last_published(&self, path: &Path) -> Option<Published> {
        let uri = file_url(path).ok()?;
        lock(&self.shared).diagnostics.get(&uri).cloned()
    }

    /// Wait until `done` holds for what the server told us, the server
    /// ends, or `limit` passes. Returns whether `done` held.
    async fn wait_for(&self, limit: Duration, mut done: impl FnMut(&Shared) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done(&lock(&self.shared)) {
                return true;
            }
            if !self.alive.load(Ordering::SeqCst) {
                return false;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return done(&lock(&self.shared));
            }
        }
    }

    /// Wait for a publication for `path` that came after `after_seq` and is
    /// not for an older version than `version`.
    pub async fn wait_diagnostics(
        &self,
        path: &Path,
        after_seq: u64,
        version: i32,
        limit: Duration,
    ) -> Option<Published> {
        let uri = file_url(path).ok()?;
        let fresh = |s: &Shared| {
            s.diagnostics
                .get(&uri)
                .is_some_and(|p| p.seq > after_seq && p.version.is_none_or(|v| v >= version))
        };
        if self.wait_for(limit, fresh).await {
            lock(&self.shared).diagnostics.get(&uri).cloned()
        } else {
            None
        }
    }

    /// True while the server reports work in progress or says it is not
    /// ready.
    pub fn busy(&self) -> bool {
        lock(&self.shared).busy()
    }

    /// Wait (bounded) until the server reports no work in progress.
    pub async fn wait_idle(&self, limit: Duration) {
        self.wait_for(limit, |s| !s.busy()).await;
    }

    /// The first request of a new server waits until it has settled: no
    /// progress under way and nothing heard from it for a short quiet
    /// spell (servers start indexing a moment after the first file opens,
    /// and log while they look at the workspace), bounded by `limit`.
    pub async fn settle(&mut self, quiet: Duration, limit: Duration) {
        if self.settled {
            return;
        }
        self.settled = true;
        let deadline = Instant::now() + limit;
        loop {
            self.wait_idle(deadline.saturating_duration_since(Instant::now()))
                .await;
            let seq = lock(&self.shared).seq;
            // Quiet spell: nothing new arrives, or we are out of time.
            let moved = self
                .wait_for(
                    quiet.min(deadline.saturating_duration_since(Instant::now())),
                    |s| s.seq != seq,
                )
                .await;
            if !moved || Instant::now() >= deadline {
                return;
            }
        }
    }

    /// `shutdown`, `exit`, then the process: gracefully when the server
    /// answers, by SIGKILL to its group when it does not.
    pub async fn shutdown(mut self) {
        if self.is_alive() {
            let _ = self.request::<Shutdown>((), SHUTDOWN_STEP).await;
            let _ = self.socket.notify::<Exit>(());
            let _ = tokio::time::timeout(SHUTDOWN_STEP, self.child.wait()).await;
        }
        self.kill();
    }

    /// SIGKILL the server's group and stop the main loop.
    fn kill(&mut self) {
        if self.killed {
            return;
        }
        self.killed = true;
        if self.pgid > 1 {
            // SAFETY: killpg has no memory effects; a gone group gives ESRCH.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        self.main_loop.abort();
        // Killed with the group; reaped in the background.
        if let Some(guard) = self.guard.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(guard.reap());
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.kill();
    }
}

/// "the server stopped", with the reason when mm ended the connection (a
/// frame past the guard's bounds).
fn stopped(broken: &crate::frame::Broken) -> String {
    match &*broken.lock().unwrap_or_else(|e| e.into_inner()) {
        Some(why) => format!("the server stopped: {why}"),
        None => "the server stopped".to_string(),
    }
}

/// A file URL, or the reason there is none.
pub fn file_url(path: &Path) -> Result<Url, String> {
    Url::from_file_path(path).map_err(|()| format!("{} is not an absolute path", path.display()))
}

/// Start the server process: piped stdio, own process group, killed with
/// mm (docs/design.md#parent-death-signal).
fn spawn(cfg: &ServerConfig, root: &Path) -> io::Result<Child> {
    let mut cmd = mm_child::piped(&cfg.command);
    cmd.args(&cfg.args).current_dir(root);
    cmd.spawn()
}

/// Keep the last [`STDERR_KEEP`] bytes of the server's stderr (and drain
/// it, so a chatty server never blocks on a full pipe).
async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        t.push_str(&line);
        t.push('\n');
        if t.len() > STDERR_KEEP {
            let mut cut = t.len() - STDERR_KEEP;
            while !t.is_char_boundary(cut) {
                cut += 1;
            }
            t.drain(..cut);
        }
    }
}

/// What mm tells servers it can do: markdown hover, hierarchical symbols,
/// versioned diagnostics, links for definitions, work-done progress, and
/// UTF-16 positions.
fn capabilities() -> ClientCapabilities {
    ClientCapabilities {
        text_document: Some(TextDocumentClientCapabilities {
            synchronization: Some(TextDocumentSyncClientCapabilities {
                dynamic_registration: Some(false),
                will_save: Some(false),
                will_save_wait_until: Some(false),
                did_save: Some(false),
            }),
            hover: Some(HoverClientCapabilities {
                dynamic_registration: Some(false),
                content_format: Some(vec![MarkupKind::Markdown, MarkupKind::PlainText]),
            }),
            definition: Some(GotoCapability {
                dynamic_registration: Some(false),
                link_support: Some(true),
            }),
            references: Some(DynamicRegistrationClientCapabilities {
                dynamic_registration: Some(false),
            }),
            document_symbol: Some(DocumentSymbolClientCapabilities {
                hierarchical_document_symbol_support: Some(true),
                ..DocumentSymbolClientCapabilities::default()
            }),
            rename: Some(RenameClientCapabilities {
                dynamic_registration: Some(false),
                prepare_support: Some(false),
                ..RenameClientCapabilities::default()
            }),
            publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                version_support: Some(true),
                ..PublishDiagnosticsClientCapabilities::default()
            }),
            ..TextDocumentClientCapabilities::default()
        }),
        workspace: Some(WorkspaceClientCapabilities {
            workspace_edit: Some(WorkspaceEditClientCapabilities {
                document_changes: Some(true),
                ..WorkspaceEditClientCapabilities::default()
            }),
            workspace_folders: Some(true),
            configuration: Some(true),
            ..WorkspaceClientCapabilities::default()
        }),
        window: Some(WindowClientCapabilities {
            work_done_progress: Some(true),
            ..WindowClientCapabilities::default()
        }),
        general: Some(GeneralClientCapabilities {
            position_encodings: Some(vec![PositionEncodingKind::UTF16]),
            ..GeneralClientCapabilities::default()
        }),
        experimental: Some(serde_json::json!({ "serverStatusNotification": true })),
    }
}

/// The client side of the protocol: record diagnostics and progress,
/// answer the server's requests with harmless defaults, ignore the rest.
fn router(handler: Handler) -> Router<Handler> {
    let mut router = Router::new(handler);
    router
        .notification::<PublishDiagnostics>(|h, params| {
            let mut s = lock(&h.shared);
            s.seq += 1;
            let seq = s.seq;
            s.diagnostics.insert(
                params.uri,
                Published {
                    seq,
                    version: params.version,
                    items: params.diagnostics,
                },
            );
            drop(s);
            h.wake.notify_waiters();
            ControlFlow::Continue(())
        })
        .notification::<Progress>(|h, params| {
            let ProgressParamsValue::WorkDone(work) = params.value;
            let key = token_key(&params.token);
            let mut s = lock(&h.shared);
            s.seq += 1;
            match work {
                WorkDoneProgress::Begin(_) => {
                    s.progress.insert(key);
                }
                WorkDoneProgress::End(_) => {
                    s.progress.remove(&key);
                }
                WorkDoneProgress::Report(_) => {}
            }
            drop(s);
            h.wake.notify_waiters();
            ControlFlow::Continue(())
        })
        .unhandled_notification(|h, notif| {
            // Every notification counts as activity for `settle` (pyright
            // logs while it enumerates the workspace, and answers from a
            // partial one until then).
            let mut s = lock(&h.shared);
            s.seq += 1;
            match notif.method.as_str() {
                "experimental/serverStatus" => {
                    s.quiescent = notif
                        .params
                        .get("quiescent")
                        .and_then(serde_json::Value::as_bool);
                }
                "window/logMessage" if s.scanned == Some(false) => {
                    let message = notif
                        .params
                        .get("message")
                        .and_then(serde_json::Value::as_str);
                    if message.is_some_and(is_scan_log) {
                        s.scanned = Some(true);
                    }
                }
                _ => {}
            }
            drop(s);
            h.wake.notify_waiters();
            ControlFlow::Continue(())
        })
        .unhandled_request(|h, req| {
            let answer = match req.method.as_str() {
                "workspace/configuration" => {
                    let n = req
                        .params
                        .get("items")
                        .and_then(serde_json::Value::as_array)
                        .map_or(0, Vec::len);
                    Ok(serde_json::Value::Array(vec![serde_json::Value::Null; n]))
                }
                "workspace/workspaceFolders" => {
                    Ok(serde_json::to_value(&h.folders).unwrap_or(serde_json::Value::Null))
                }
                "window/workDoneProgress/create"
                | "client/registerCapability"
                | "client/unregisterCapability"
                | "window/showMessageRequest"
                | "window/showDocument"
                | "workspace/diagnostic/refresh"
                | "workspace/semanticTokens/refresh"
                | "workspace/inlayHint/refresh"
                | "workspace/codeLens/refresh" => Ok(serde_json::Value::Null),
                // mm applies edits itself, after asking; never behind the
                // user's back.
                "workspace/applyEdit" => Ok(serde_json::json!({ "applied": false })),
                other => Err(async_lsp::ResponseError::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("mm does not handle {other}"),
                )),
            };
            std::future::ready(answer)
        })
        .unhandled_event(|_, _| ControlFlow::Continue(()));
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyright_scan_log_lines_are_recognised() {
        assert!(is_scan_log("Found 2 source files"));
        assert!(is_scan_log("Found 1 source file"));
        assert!(is_scan_log("No source files found."));
        assert!(!is_scan_log("Found configuration file"));
        assert!(!is_scan_log("Starting service instance"));
    }

    #[test]
    fn busy_while_progress_or_loading() {
        let mut s = Shared::default();
        assert!(!s.busy());
        s.progress.insert("index".into());
        assert!(s.busy());
        s.progress.clear();
        s.scanned = Some(false);
        assert!(s.busy());
        s.scanned = Some(true);
        s.quiescent = Some(false);
        assert!(s.busy());
        s.quiescent = Some(true);
        assert!(!s.busy());
    }
}
