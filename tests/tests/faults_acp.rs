#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The fault suite, `mm-acp` side: a raw JSON-RPC exchange over pipes, the
//! way an editor drives the built binary. Malformed lines get JSON-RPC
//! errors and the agent stays up; a cancel in the middle of a tool call
//! kills the command and answers `cancelled`; a dead model server is a
//! message, not a crash. Every stdout line must be a JSON-RPC message.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Reply};
use mm_tests::child::{built_binary, kill_group, wait_until};
use mm_tests::sandbox::Sandbox;
use serde_json::{Value, json};

const STEP: Duration = Duration::from_secs(20);

fn acp_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built_binary("mm-acp")).clone().unwrap()
}

/// Why a stdout line is not a JSON-RPC 2.0 message, if it is not.
fn not_json_rpc(line: &str) -> Option<String> {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Some(format!("not JSON: {line:?}"));
    };
    if v["jsonrpc"] != "2.0" {
        return Some(format!("no jsonrpc 2.0: {line}"));
    }
    let is_call = v["method"].is_string();
    let is_answer =
        v.get("id").is_some() && (v.get("result").is_some() != v.get("error").is_some());
    (!is_call && !is_answer).then(|| format!("neither a call nor an answer: {line}"))
}

/// A running `mm-acp` with its pipes.
struct Acp {
    /// Reaped with `wait4` by pid (see [`Acp::close`]), never through it.
    _child: std::process::Child,
    pid: libc::pid_t,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Lines of stdout that were not JSON-RPC.
    bad: Arc<Mutex<Vec<String>>>,
    stderr: Receiver<Vec<u8>>,
}

impl Acp {
    fn start(sb: &Sandbox, url: &str) -> Acp {
        let mut cmd = sb.command(&acp_bin(), url);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().unwrap();
        let (tx, lines) = mpsc::channel();
        let bad = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().unwrap();
        let bad_lines = bad.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line).into_owned();
                if let Some(why) = not_json_rpc(&line) {
                    bad_lines.lock().unwrap().push(why);
                    continue;
                }
                let _ = tx.send(serde_json::from_str(&line).unwrap());
            }
        });
        let (etx, stderr) = mpsc::sync_channel(1);
        let mut err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = std::io::Read::read_to_end(&mut err, &mut buf);
            let _ = etx.send(buf);
        });
        Acp {
            pid: child.id() as libc::pid_t,
            stdin: child.stdin.take(),
            _child: child,
            lines,
            bad,
            stderr,
        }
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_bytes(message.to_string().as_bytes());
    }

    /// The next message, or a failure after `limit`.
    fn next(&self, limit: Duration) -> Value {
        match self.lines.recv_timeout(limit) {
            Ok(v) => v,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no message from mm-acp within {limit:?}")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let stderr = self
                    .stderr
                    .recv_timeout(Duration::from_secs(5))
                    .unwrap_or_default();
                panic!(
                    "mm-acp closed its stdout (it exited); stderr: {}",
                    String::from_utf8_lossy(&stderr)
                )
            }
        }
    }

    /// Messages up to the first that matches; returns (those before, it).
    fn until(&self, limit: Duration, want: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
        let deadline = Instant::now() + limit;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.next(left.max(Duration::from_millis(1)));
            if want(&v) {
                return (before, v);
            }
            before.push(v);
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until(STEP, |v| v["id"] == id && v.get("method").is_none())
            .1
    }

    fn initialize(&mut self) {
        let r = self.request(
            1,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    }

    fn new_session(&mut self, id: u64, cwd: &std::path::Path) -> String {
        let r = self.request(id, "session/new", json!({"cwd": cwd, "mcpServers": []}));
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"))
            .to_owned()
    }

    /// Close stdin and wait for the exit; returns the exit code. Fails on
    /// an overrun (after killing the group) or on a non-JSON-RPC line.
    fn close(mut self, limit: Duration) -> Option<i32> {
        drop(self.stdin.take());
        let ended = wait_until(self.pid, Instant::now() + limit).unwrap();
        let Some((status, _)) = ended else {
            kill_group(self.pid);
            let _ = wait_until(self.pid, Instant::now() + limit);
            panic!("mm-acp did not exit within {limit:?} of stdin closing");
        };
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        let bad = self.bad.lock().unwrap().clone();
        assert!(
            bad.is_empty(),
            "stdout carried non-protocol lines: {bad:?}; stderr {}",
            String::from_utf8_lossy(&stderr)
        );
        libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        // A test that failed half-way must not leave the agent running.
        if self.stdin.is_some() {
            kill_group(self.pid);
            let _ = wait_until(self.pid, Instant::now() + Duration::from_secs(5));
        }
    }
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_lines_get_json_rpc_errors_and_the_agent_stays_up() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 5\n").unwrap();
    let server = MockServer::start(vec![]).await.unwrap();
    let url = format!("{}/v1", server.url());
    let work = sb.work.clone();
    tokio::task::spawn_blocking(move || {
        let mut acp = Acp::start(&sb, &url);
        acp.initialize();

        acp.send_bytes(b"this is not json");
        assert_eq!(error_code(&acp.next(STEP)), -32700);
        acp.send_bytes(b"{\"foo\": 1}");
        assert_eq!(error_code(&acp.next(STEP)), -32600);
        acp.send_bytes(b"[]");
        assert_eq!(error_code(&acp.next(STEP)), -32600);

        // A readable id is answered with that id, whatever else is wrong.
        acp.send_bytes(br#"{"jsonrpc":"1.0","id":40,"method":"session/list","params":{}}"#);
        let r = acp.next(STEP);
        assert_eq!(
            (r["id"].clone(), error_code(&r)),
            (json!(40), -32600),
            "{r}"
        );
        acp.send_bytes(br#"{"jsonrpc":"2.0","id":41,"method":"session/list","params":"str"}"#);
        let r = acp.next(STEP);
        assert_eq!(
            (r["id"].clone(), error_code(&r)),
            (json!(41), -32600),
            "{r}"
        );

        let r = acp.request(2, "session/frobnicate", json!({}));
        assert_eq!(error_code(&r), -32601, "{r}");
        let r = acp.request(3, "_mm/unknown", json!({}));
        assert_eq!(error_code(&r), -32601, "{r}");
        // A session/new without mcpServers breaks the schema.
        let r = acp.request(4, "session/new", json!({"cwd": work}));
        assert_eq!(error_code(&r), -32602, "{r}");

        // An unknown notification is ignored: the next answer is the next
        // request's.
        acp.send(&json!({"jsonrpc": "2.0", "method": "mm/nothing", "params": {}}));
        let session = acp.new_session(5, &work);
        assert!(!session.is_empty());
        let r = acp.request(6, "session/list", json!({}));
        assert!(r["result"]["sessions"].is_array(), "{r}");

        assert_eq!(acp.close(STEP), Some(0));
        sb
    })
    .await
    .unwrap()
    .sessions()
    .unwrap();
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_utf8_gets_a_parse_error_and_the_agent_stays_up() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 5\n").unwrap();
    let url = "http://127.0.0.1:9/v1".to_owned();
    tokio::task::spawn_blocking(move || {
        let mut acp = Acp::start(&sb, &url);
        acp.initialize();
        // "one UTF-8 JSON message per line": this line is malformed.
        acp.send_bytes(b"\xff\xfe{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/list\"}");
        assert_eq!(error_code(&acp.next(STEP)), -32700);
        let r = acp.request(3, "session/list", json!({}));
        assert!(r["result"]["sessions"].is_array(), "{r}");
        assert_eq!(acp.close(STEP), Some(0));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_mid_tool_kills_the_command_and_answers_cancelled() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 30\nacp:\n  permissions: allow\n").unwrap();
    let server = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command": "sleep 60"}"#),
        Reply::text("never asked for"),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.url());
    let sb = tokio::task::spawn_blocking(move || {
        let mut acp = Acp::start(&sb, &url);
        acp.initialize();
        let session = acp.new_session(2, &sb.work);
        acp.send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
        );
        let update = |v: &Value, kind: &str| {
            v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == kind
        };
        let (_, running) = acp.until(STEP, |v| {
            update(v, "tool_call_update") && v["params"]["update"]["status"] == "in_progress"
        });
        let call = running["params"]["update"]["toolCallId"].clone();
        let deadline = Instant::now() + STEP;
        while sb.leftovers(&[acp.pid]).is_empty() {
            assert!(Instant::now() < deadline, "the command never started");
            std::thread::sleep(Duration::from_millis(20));
        }

        let cancelled_at = Instant::now();
        acp.send(&json!({"jsonrpc": "2.0", "method": "session/cancel",
            "params": {"sessionId": session}}));
        let (before, answer) = acp.until(STEP, |v| v["id"] == 3);
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(5),
            "the cancel took {:?}",
            cancelled_at.elapsed()
        );
        assert!(
            before.iter().any(|v| update(v, "tool_call_update")
                && v["params"]["update"]["toolCallId"] == call
                && v["params"]["update"]["status"] == "failed"),
            "the open call was not marked failed before the answer: {before:?}"
        );
        // Nothing follows the answer.
        if let Ok(late) = acp.lines.recv_timeout(Duration::from_millis(500)) {
            panic!("a message after the cancelled answer: {late}");
        }
        let grace = Instant::now() + Duration::from_millis(500);
        while !sb.leftovers(&[acp.pid]).is_empty() && Instant::now() < grace {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            sb.leftovers(&[acp.pid]),
            Vec::<i32>::new(),
            "the command survived the cancel"
        );

        assert_eq!(acp.close(STEP), Some(0));
        assert!(sb.leftovers(&[]).is_empty());
        sb
    })
    .await
    .unwrap();
    assert_eq!(
        server.requests().len(),
        1,
        "the model was asked again after the cancel"
    );
    sb.sessions().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_model_server_is_a_message_and_the_turn_ends() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 5\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let sb = tokio::task::spawn_blocking(move || {
        let mut acp = Acp::start(&sb, &url);
        acp.initialize();
        let session = acp.new_session(2, &sb.work);
        let (before, answer) = {
            acp.send(
                &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}),
            );
            acp.until(STEP, |v| v["id"] == 3)
        };
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        let said: String = before
            .iter()
            .filter(|v| v["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|v| v["params"]["update"]["content"]["text"].as_str())
            .collect();
        assert!(
            said.contains(&url),
            "the message does not name {url}: {said:?}"
        );
        // The agent is still up for the next prompt.
        let r = acp.request(4, "session/list", json!({}));
        assert!(r["result"]["sessions"].is_array(), "{r}");
        assert_eq!(acp.close(STEP), Some(0));
        sb
    })
    .await
    .unwrap();
    sb.sessions().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_session_file_is_listed_and_named_on_load_and_left_as_it_is() {
    let sb = Sandbox::new("retries: 1\nwatchdog: 5\n").unwrap();
    let server = MockServer::start(vec![Reply::text("hello")]).await.unwrap();
    let url = format!("{}/v1", server.url());
    tokio::task::spawn_blocking(move || {
        let mut acp = Acp::start(&sb, &url);
        acp.initialize();
        let session = acp.new_session(2, &sb.work);
        acp.send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}),
        );
        let (_, answer) = acp.until(STEP, |v| v["id"] == 3);
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        assert_eq!(acp.close(STEP), Some(0));

        let files = sb.session_files();
        assert_eq!(files.len(), 1);
        let file = &files[0];
        let id = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let bytes = std::fs::read(file).unwrap();
        let broken = &bytes[..bytes.len() / 2];
        std::fs::write(file, broken).unwrap();

        let mut acp = Acp::start(&sb, &url);
        acp.initialize();
        let r = acp.request(4, "session/list", json!({"cwd": sb.work}));
        let listed = r["result"]["sessions"].as_array().unwrap().clone();
        assert_eq!(listed.len(), 1, "{r}");
        assert_eq!(listed[0]["sessionId"], id.as_str());
        let title = listed[0]["title"].as_str().unwrap();
        assert!(
            title.starts_with("unreadable: session file ")
                && title.contains(&file.display().to_string())
                && title.contains("is corrupt"),
            "{title}"
        );
        let r = acp.request(
            5,
            "session/load",
            json!({"sessionId": id, "cwd": sb.work, "mcpServers": []}),
        );
        let said = r["error"]["data"].as_str().unwrap_or_default();
        assert!(
            said.contains(&file.display().to_string()) && said.contains("is corrupt"),
            "{r}"
        );
        assert_eq!(acp.close(STEP), Some(0));
        assert_eq!(std::fs::read(file).unwrap(), broken, "the file was touched");
    })
    .await
    .unwrap();
}

/// A sandbox whose `.fake` files go to a language server that starts a
/// child of its own and never answers `initialize`.
fn hanging_language_server() -> Sandbox {
    let sb = Sandbox::new("").unwrap();
    std::fs::write(sb.work.join("a.fake"), "x\n").unwrap();
    let script = sb.home.join("server.sh");
    std::fs::write(&script, "sleep 300 &\nexec sleep 300\n").unwrap();
    std::fs::write(
        sb.user_config(),
        format!(
            "retries: 1\nwatchdog: 30\nlsp:\n  servers:\n    - {{name: fake, command: bash, \
             args: ['{}'], extensions: ['.fake']}}\n",
            script.display()
        ),
    )
    .unwrap();
    sb
}

/// Start a prompt whose model calls `lsp` on the hanging server; returns
/// once the server and its child both run.
fn prompt_into_the_hanging_server(acp: &mut Acp, sb: &Sandbox) -> String {
    acp.initialize();
    let session = acp.new_session(2, &sb.work);
    acp.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );
    let deadline = Instant::now() + STEP;
    while sb.leftovers(&[acp.pid]).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the server never started: {:?}",
            sb.leftovers(&[acp.pid])
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    session
}

/// Wait (bounded) until nothing the sandbox started is left but `not`.
fn assert_all_gone(sb: &Sandbox, not: &[libc::pid_t], what: &str) {
    let grace = Instant::now() + Duration::from_secs(5);
    while !sb.leftovers(not).is_empty() && Instant::now() < grace {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sb.leftovers(not), Vec::<i32>::new(), "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_while_a_language_server_starts_kills_its_whole_group() {
    let server = MockServer::start(vec![
        Reply::tool_call("c1", "lsp", r#"{"action": "symbols", "path": "a.fake"}"#),
        Reply::text("never asked for"),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.url());
    tokio::task::spawn_blocking(move || {
        let sb = hanging_language_server();
        let mut acp = Acp::start(&sb, &url);
        prompt_into_the_hanging_server(&mut acp, &sb);
        let pid = acp.pid;
        assert_eq!(acp.close(STEP), Some(0));
        assert_all_gone(&sb, &[pid], "the server's child outlived mm-acp");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_a_language_server_starts_kills_its_whole_group() {
    let server = MockServer::start(vec![
        Reply::tool_call("c1", "lsp", r#"{"action": "symbols", "path": "a.fake"}"#),
        Reply::text("never asked for"),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.url());
    tokio::task::spawn_blocking(move || {
        let sb = hanging_language_server();
        let mut acp = Acp::start(&sb, &url);
        let session = prompt_into_the_hanging_server(&mut acp, &sb);
        acp.send(&json!({"jsonrpc": "2.0", "method": "session/cancel",
            "params": {"sessionId": session}}));
        let (_, answer) = acp.until(STEP, |v| v["id"] == 3);
        assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        assert_all_gone(
            &sb,
            &[acp.pid],
            "the server or its child survived the cancel",
        );
        assert_eq!(acp.close(STEP), Some(0));
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_ends_a_background_job_that_outlived_its_turn() {
    let server = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            r#"{"command": "sleep 300; true", "background": true}"#,
        ),
        Reply::text("started"),
    ])
    .await
    .unwrap();
    let url = format!("{}/v1", server.url());
    tokio::task::spawn_blocking(move || {
        let sb = Sandbox::new("retries: 1\nwatchdog: 30\nacp:\n  permissions: allow\n").unwrap();
        let mut acp = Acp::start(&sb, &url);
        acp.initialize();
        let session = acp.new_session(2, &sb.work);
        acp.send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
        );
        let (_, answer) = acp.until(STEP, |v| v["id"] == 3);
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        // The turn is over and the job still runs: bash and its sleep.
        assert!(
            sb.leftovers(&[acp.pid]).len() >= 2,
            "the job did not outlive its turn: {:?}",
            sb.leftovers(&[acp.pid])
        );
        let pid = acp.pid;
        assert_eq!(acp.close(STEP), Some(0));
        assert_all_gone(&sb, &[pid], "the background job outlived mm-acp");
    })
    .await
    .unwrap();
}
