#![allow(clippy::unwrap_used, clippy::expect_used)]
//! MCP servers the editor names in `session/new` (and `session/load`):
//! started for that session, their tools called with permission like
//! `bash` (kind `other`, server and tool in the title), `/mcp` lists them,
//! a cancelled turn cancels the server's open call, and closing stdin
//! leaves none of them behind.

mod common;

use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    CancelNotification, EnvVariable, LoadSessionRequest, McpServer, McpServerStdio,
    NewSessionRequest, PromptRequest, StopReason,
};
use common::*;
use mm_mock::{MockServer, Reply};
use mm_test_support::wait::eventually;
use mm_test_support::{mcp, procs};
use serde_json::{Value, json};

fn time_server(python: &std::path::Path, mark: &str) -> McpServer {
    McpServer::Stdio(
        McpServerStdio::new("time", python)
            .args(vec!["-m".into(), "mcp_server_time".into()])
            .env(vec![EnvVariable::new("MM_TEST_MARK", mark)]),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_supplied_server_is_called_with_permission_and_leaves_nothing_behind() {
    let Some(python) = mcp::installed("python3", "an_editor_supplied_server") else {
        return;
    };
    let mark = format!("acp-time-{}", std::process::id());
    let mock = MockServer::start(vec![
        Reply::tool_call(
            "call_1",
            "mcp__time__get_current_time",
            r#"{"timezone":"Etc/UTC"}"#,
        ),
        Reply::text("It is now."),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "mcp:\n  startTimeout: 30\n");
    let server = time_server(&python, &mark);
    let mark_in_body = mark.clone();
    run(&env, vec!["allow_once"], async move |mut ctx| {
        ctx.initialize().await;
        let id = ctx
            .cx
            .send_request(NewSessionRequest::new(ctx.project.clone()).mcp_servers(vec![server]))
            .block_task()
            .await
            .unwrap()
            .session_id;
        // The server runs for the session, before any prompt.
        let started = eventually(Duration::from_secs(10), || {
            !procs::with_env("MM_TEST_MARK", &mark_in_body).is_empty()
        })
        .await;
        assert!(
            started,
            "the editor's server did not start with the session"
        );
        let response = ctx.prompt(&id, "what time is it?").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let updates = ctx.drain();
        let call: Vec<Value> = as_json(&updates)
            .into_iter()
            .filter(|u| u["toolCallId"] == "call_1")
            .collect();
        assert_eq!(call[0]["sessionUpdate"], "tool_call");
        // `other` is the schema's default kind, which the SDK leaves out.
        assert!(
            call[0].get("kind").is_none_or(|k| k == "other"),
            "{}",
            call[0]
        );
        assert_eq!(
            call[0]["title"],
            "time/get_current_time {\"timezone\":\"Etc/UTC\"}"
        );
        assert_eq!(call[0]["rawInput"], json!({"timezone": "Etc/UTC"}));
        assert_eq!(call.last().unwrap()["status"], "completed");
        // Asked like bash.
        let asked = ctx.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        let first = serde_json::to_value(&asked[0]).unwrap();
        assert_eq!(first["toolCall"]["toolCallId"], "call_1");
        assert_eq!(chunks(&updates, "agent_message_chunk"), "It is now.");

        // `/mcp` lists the server.
        let response = ctx.prompt(&id, "/mcp").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let said = chunks(&ctx.drain(), "agent_message_chunk");
        assert_eq!(said, "time: ready, 2 tools");
    })
    .await;
    // The model saw the declaration and got the result.
    let requests = mock.requests();
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__time__get_current_time"), "{names:?}");
    let tool = messages(&requests[1].body)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        content_text(&tool).contains("Etc/UTC"),
        "{}",
        content_text(&tool)
    );
    // stdin closed, mm-acp exited (run checked that): nothing of the
    // server is left.
    assert!(
        eventually(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty())
        .await,
        "left behind: {:?}",
        procs::with_env("MM_TEST_MARK", &mark)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_editor_server_is_one_line_and_the_turn_goes_on() {
    let mock = MockServer::start(vec![Reply::text("Fine anyway.")])
        .await
        .unwrap();
    let env = Env::new(&mock, "mcp:\n  startTimeout: 1\n");
    run(&env, vec![], async |mut ctx| {
        ctx.initialize().await;
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("mute", "sh")
                    .args(vec!["-c".into(), "read x; sleep 100".into()]),
            ),
            McpServer::Sse(agent_client_protocol::v1::schema::McpServerSse::new(
                "old",
                "http://127.0.0.1:9/sse",
            )),
        ];
        let id = ctx
            .cx
            .send_request(NewSessionRequest::new(ctx.project.clone()).mcp_servers(servers))
            .block_task()
            .await
            .unwrap()
            .session_id;
        let response = ctx.prompt(&id, "hello").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let text = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(
            text.contains(
                "mcp server old: the SSE transport is not supported; use a streamable-HTTP url"
            ),
            "{text}"
        );
        assert!(
            text.contains("mcp server mute: no answer to initialize within 1s"),
            "{text}"
        );
        assert!(text.ends_with("Fine anyway."), "{text}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_load_starts_the_editors_servers_too() {
    let Some(python) = mcp::installed("python3", "session_load_starts") else {
        return;
    };
    let mark = format!("acp-load-{}", std::process::id());
    let mock = MockServer::start(vec![Reply::text("first"), Reply::text("second")])
        .await
        .unwrap();
    let env = Env::new(&mock, "mcp:\n  startTimeout: 30\n");
    // A first process makes a saved session.
    let saved = {
        let cell = std::sync::Arc::new(std::sync::Mutex::new(None));
        let out = cell.clone();
        run(&env, vec![], async move |ctx| {
            let id = ctx.start().await;
            ctx.prompt(&id, "hi").await;
            *out.lock().unwrap() = Some(id);
        })
        .await;
        cell.lock().unwrap().clone().unwrap()
    };
    let server = time_server(&python, &mark);
    let mark_in_body = mark.clone();
    run(&env, vec![], async move |mut ctx| {
        ctx.initialize().await;
        ctx.cx
            .send_request(
                LoadSessionRequest::new(saved.clone(), ctx.project.clone())
                    .mcp_servers(vec![server]),
            )
            .block_task()
            .await
            .unwrap();
        ctx.drain();
        let response = ctx.prompt(&saved, "/mcp").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let said = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(said.starts_with("time: "), "{said}");
        // `starting` is said as soon as the start is under way: the
        // process may appear a moment later.
        let started = eventually(Duration::from_secs(5), || {
            !procs::with_env("MM_TEST_MARK", &mark_in_body).is_empty()
        })
        .await;
        assert!(started, "no process of the editor's server ({said})");
    })
    .await;
    assert!(
        eventually(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty())
        .await,
        "left behind: {:?}",
        procs::with_env("MM_TEST_MARK", &mark)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn session_cancel_cancels_the_servers_open_call_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let mark = format!("acp-cancel-{}", std::process::id());
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "mcp__slow__sleep", r#"{"seconds":60}"#),
        Reply::tool_call("call_2", "mcp__slow__echo", r#"{"text":"still here"}"#),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "mcp:\n  startTimeout: 20\n");
    // --grandchild: the server starts a `sleep 300` of its own, which must
    // not outlive mm either.
    let server = McpServer::Stdio(
        McpServerStdio::new("slow", mcp::fake_server())
            .args(vec![
                "--log".into(),
                log.display().to_string(),
                "--grandchild".into(),
            ])
            .env(vec![EnvVariable::new("MM_TEST_MARK", &mark)]),
    );
    let log_in_body = log.clone();
    let mark_in_body = mark.clone();
    run(
        &env,
        vec!["allow_once", "allow_once"],
        async move |mut ctx| {
            ctx.initialize().await;
            let id = ctx
                .cx
                .send_request(NewSessionRequest::new(ctx.project.clone()).mcp_servers(vec![server]))
                .block_task()
                .await
                .unwrap()
                .session_id;
            let pending = ctx
                .cx
                .send_request(PromptRequest::new(id.clone(), vec![text_block("wait")]));
            let mut seen = Vec::new();
            ctx.wait_for(&mut seen, |u| {
                let v = serde_json::to_value(u).unwrap();
                v["toolCallId"] == "call_1" && v["status"] == "in_progress"
            })
            .await;
            // The server has the call.
            let read = || std::fs::read_to_string(&log_in_body).unwrap_or_default();
            let deadline = Instant::now() + Duration::from_secs(10);
            while !read().contains("\"tools/call\"") {
                assert!(
                    Instant::now() < deadline,
                    "the call never reached the server"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let started = Instant::now();
            ctx.cx
                .send_notification(CancelNotification::new(id.clone()))
                .unwrap();
            let response = tokio::time::timeout(Duration::from_secs(10), pending.block_task())
                .await
                .expect("cancel was not answered")
                .unwrap();
            assert_eq!(response.stop_reason, StopReason::Cancelled);
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
            seen.extend(ctx.drain());
            let call: Vec<Value> = as_json(&seen)
                .into_iter()
                .filter(|u| u["toolCallId"] == "call_1")
                .collect();
            assert_eq!(call.last().unwrap()["status"], "failed", "{call:#?}");
            // The server was told, about that very request.
            let deadline = Instant::now() + Duration::from_secs(5);
            while !read().contains("notifications/cancelled") {
                assert!(
                    Instant::now() < deadline,
                    "no cancellation reached the server:\n{}",
                    read()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let received = read();
            let line = |needle: &str| -> Value {
                serde_json::from_str(received.lines().find(|l| l.contains(needle)).unwrap())
                    .unwrap()
            };
            assert_eq!(
                line("notifications/cancelled")["params"]["requestId"],
                line("\"tools/call\"")["id"]
            );
            // The server is still the session's: the next turn uses it.
            let response = ctx.prompt(&id, "again").await;
            assert_eq!(response.stop_reason, StopReason::EndTurn);
            assert_eq!(chunks(&ctx.drain(), "agent_message_chunk"), "done");
            assert!(!procs::with_env("MM_TEST_MARK", &mark_in_body).is_empty());
        },
    )
    .await;
    let requests = mock.requests();
    let tool = messages(&requests.last().unwrap().body)
        .into_iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(content_text(&tool), "still here");
    // mm-acp exited: neither the server nor its own child is left.
    assert!(
        eventually(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty())
        .await,
        "left behind: {:?}",
        procs::with_env("MM_TEST_MARK", &mark)
    );
}
