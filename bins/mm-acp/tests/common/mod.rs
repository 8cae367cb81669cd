//! The harness of the end-to-end tests: a temp HOME with a user config that
//! points at a mock model server, the built `mm-acp` spawned in a project
//! folder, and a real ACP client (the SDK's client side) whose transport
//! records every line the agent wrote to stdout.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionNotification, SessionUpdate, TextContent,
};
use agent_client_protocol::{Agent, Client, Lines};
use futures::StreamExt;
use mm_mock::MockServer;
use mm_test_support::User;
use mm_test_support::user::mock_config;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;

/// Every test must finish well within this.
pub const LIMIT: Duration = Duration::from_secs(90);

/// A user in a temp folder (HOME and the XDG folders) and a project folder.
pub struct Env {
    pub user: User,
    pub project: PathBuf,
}

impl Env {
    /// A user config for `mock` plus `extra` YAML lines.
    pub fn new(mock: &MockServer, extra: &str) -> Env {
        let user = User::new();
        user.write_config(&format!(
            "{}lsp:\n  servers: []\n{extra}",
            mock_config(&mock.url(), "mock", 20)
        ));
        Env {
            project: user.work.clone(),
            user,
        }
    }

    pub fn root(&self) -> PathBuf {
        self.user.root.clone()
    }

    /// Start `mm-acp` in the project folder with this HOME.
    pub fn spawn(&self) -> (Child, ChildStdin, ChildStdout) {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mm-acp"));
        self.user.apply(&mut cmd);
        let mut child = Command::from(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        (child, stdin, stdout)
    }
}

/// Every line the agent wrote to stdout, in order.
pub type Wire = Arc<Mutex<Vec<String>>>;

/// Fail unless every line is a JSON-RPC 2.0 message.
pub fn assert_jsonrpc(wire: &Wire) {
    let lines = wire.lock().unwrap().clone();
    assert!(!lines.is_empty(), "the agent wrote nothing");
    for line in &lines {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "not JSON-RPC 2.0: {line}");
        let is_call = v.get("method").is_some_and(Value::is_string);
        let is_answer =
            v.get("id").is_some() && (v.get("result").is_some() ^ v.get("error").is_some());
        assert!(is_call || is_answer, "neither a call nor an answer: {line}");
    }
}

/// Wire lines parsed.
pub fn wire_json(wire: &Wire) -> Vec<Value> {
    wire.lock()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// How the test client answers permission requests, in order; when the
/// queue is empty it allows once.
pub type Answers = Arc<Mutex<VecDeque<&'static str>>>;

/// What a test body gets.
pub struct Ctx {
    pub cx: ConnectionTo<Agent>,
    pub updates: mpsc::UnboundedReceiver<SessionNotification>,
    pub asked: Arc<Mutex<Vec<RequestPermissionRequest>>>,
    pub wire: Wire,
    pub project: PathBuf,
    /// The agent's process id.
    pub pid: u32,
}

impl Ctx {
    pub async fn initialize(&self) -> InitializeResponse {
        self.cx
            .send_request(InitializeRequest::new(
                agent_client_protocol::schema::ProtocolVersion::V1,
            ))
            .block_task()
            .await
            .unwrap()
    }

    /// Initialize and open a session in the project.
    pub async fn start(&self) -> SessionId {
        self.initialize().await;
        self.cx
            .send_request(NewSessionRequest::new(self.project.clone()))
            .block_task()
            .await
            .unwrap()
            .session_id
    }

    pub async fn prompt(&self, session: &SessionId, text: &str) -> PromptResponse {
        self.cx
            .send_request(PromptRequest::new(session.clone(), vec![text_block(text)]))
            .block_task()
            .await
            .unwrap()
    }

    /// The updates that have arrived so far (all of a turn's, once its
    /// prompt is answered: they are dispatched before the answer).
    pub fn drain(&mut self) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        while let Ok(n) = self.updates.try_recv() {
            out.push(n.update);
        }
        out
    }

    /// Wait (bounded) for an update that matches.
    pub async fn wait_for(
        &mut self,
        seen: &mut Vec<SessionUpdate>,
        what: impl Fn(&SessionUpdate) -> bool,
    ) -> SessionUpdate {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let n = tokio::time::timeout_at(deadline, self.updates.recv())
                .await
                .expect("timed out waiting for an update")
                .expect("the update channel closed");
            seen.push(n.update.clone());
            if what(&n.update) {
                return n.update;
            }
        }
    }
}

pub fn text_block(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

/// The text of message chunks of one kind, concatenated.
pub fn chunks(updates: &[SessionUpdate], kind: &str) -> String {
    updates
        .iter()
        .filter_map(|u| {
            let v = serde_json::to_value(u).unwrap();
            (v["sessionUpdate"] == kind)
                .then(|| v["content"]["text"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

/// Updates as JSON, for exact comparisons.
pub fn as_json(updates: &[SessionUpdate]) -> Vec<Value> {
    updates
        .iter()
        .map(|u| serde_json::to_value(u).unwrap())
        .collect()
}

/// Spawn `mm-acp` for `env`, connect a real ACP client, run `body`, then
/// close stdin and check that the agent exits and that every stdout line
/// was JSON-RPC 2.0.
pub async fn run<F, Fut>(env: &Env, answers: Vec<&'static str>, body: F) -> Wire
where
    F: FnOnce(Ctx) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (mut child, stdin, stdout) = env.spawn();
    let pid = child.id().unwrap();
    let wire: Wire = Arc::new(Mutex::new(Vec::new()));
    let transport = transport(stdin, stdout, wire.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let answers: Answers = Arc::new(Mutex::new(answers.into_iter().collect()));
    let project = env.project.clone();
    let wire_for_body = wire.clone();
    let asked_for_handler = asked.clone();
    let asked_for_body = asked.clone();

    let session = Client
        .v1()
        .name("mm-acp-tests")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                let _ = tx.send(n);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                asked_for_handler.lock().unwrap().push(request);
                let option = answers.lock().unwrap().pop_front().unwrap_or("allow_once");
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx| {
            body(Ctx {
                cx,
                updates: rx,
                asked: asked_for_body,
                wire: wire_for_body,
                project,
                pid,
            })
            .await;
            Ok(())
        });
    tokio::time::timeout(LIMIT, session)
        .await
        .expect("the test took too long")
        .expect("the client connection failed");
    // The transport is gone: the agent's stdin is closed, it must exit.
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("mm-acp did not exit after stdin closed")
        .unwrap();
    assert!(status.success(), "mm-acp exited with {status}");
    assert_jsonrpc(&wire);
    wire
}

/// The client's transport: lines to the agent's stdin, lines from its
/// stdout, each recorded (a tee).
fn transport(
    stdin: ChildStdin,
    stdout: ChildStdout,
    wire: Wire,
) -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let outgoing = Box::pin(futures::sink::unfold(
        stdin,
        |mut stdin, line: String| async move {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>(stdin)
        },
    ));
    let reader = BufReader::new(stdout).lines();
    let incoming = futures::stream::unfold((reader, wire), |(mut reader, wire)| async move {
        match reader.next_line().await {
            Ok(Some(line)) => {
                wire.lock().unwrap().push(line.clone());
                Some((Ok(line), (reader, wire)))
            }
            Ok(None) => None,
            Err(e) => Some((Err(e), (reader, wire))),
        }
    })
    .boxed();
    Lines::new(outgoing, incoming)
}

/// The messages of a recorded OpenAI-style request.
pub fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The text of a message's content (a string, or text parts).
pub fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

pub fn path_string(p: &Path) -> String {
    p.display().to_string()
}
