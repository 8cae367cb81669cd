//! A server of our own that misbehaves on demand: each failure is one line
//! that says what happened, and nothing is left running.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use mm_mcp::{McpError, Server, ServerSpec, Timeouts, TransportSpec};
use support::*;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

async fn start(spec: &ServerSpec, secs: u64) -> Result<Server, McpError> {
    start_with(spec, secs, 60).await
}

async fn start_with(spec: &ServerSpec, secs: u64, call: u64) -> Result<Server, McpError> {
    let timeouts = Timeouts {
        start: Duration::from_secs(secs),
        call: Duration::from_secs(call),
    };
    timeout(LIMIT, Server::start(spec, timeouts))
        .await
        .expect("start is bounded by its own timeout")
}

fn args(json: serde_json::Value) -> Option<mm_mcp::JsonObject> {
    json.as_object().cloned()
}

async fn call(
    server: &Server,
    tool: &str,
    a: serde_json::Value,
) -> Result<mm_mcp::CallOutput, McpError> {
    timeout(LIMIT, server.call(tool, args(a), &CancellationToken::new()))
        .await
        .expect("calls are bounded by their own timeout")
}

#[tokio::test]
async fn a_good_server_lists_its_tools_and_answers() {
    let server = start(&fake("fake", &[]), 10).await.unwrap();
    let names: Vec<&str> = server.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"sleep"),
        "{names:?}"
    );
    let echo = server.tools().iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.description, "Echoes the text back");
    assert_eq!(echo.input_schema["required"], serde_json::json!(["text"]));
    assert_eq!(server.server_info().as_deref(), Some("mm-mcp-fake 1.0"));

    let out = call(&server, "echo", serde_json::json!({"text": "hi there"}))
        .await
        .unwrap();
    assert_eq!(out.text, "hi there");
    assert!(!out.is_error);

    let out = call(&server, "image", serde_json::json!({})).await.unwrap();
    assert_eq!(out.text, "[image: image/png, 8 bytes]");
    assert_eq!(out.pictures.len(), 1);
    assert_eq!(out.pictures[0].data, "iVBORw0KGgo=");
    let out = call(&server, "fail", serde_json::json!({})).await.unwrap();
    assert_eq!(out.text, "it failed on purpose");
    assert!(out.is_error);

    let err = call(&server, "nope", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server answered error -32602: unknown tool nope"
    );
    assert!(!server.is_gone());
    server.close().await;
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_times_out_in_one_line() {
    let err = start(&fake("mute", &["--silent"]), 1).await.unwrap_err();
    assert_eq!(err.to_string(), "no answer to initialize within 1s");
}

#[tokio::test]
async fn a_server_that_answers_initialize_with_junk_says_so() {
    let err = start(&fake("junky", &["--junk-at-start"]), 1)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no answer to initialize within 1s (it wrote 1 line that is not JSON-RPC, \
         the first: \"{\\\"jsonrpc\\\": \\\"2.0\\\", \\\"id\\\": oops\")"
    );
}

#[tokio::test]
async fn a_server_that_exits_at_start_gives_its_status_and_stderr() {
    let err = start(&fake("quitter", &["--exit-at-start", "5"]), 10)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server exited with status 5 (its last stderr line: \
         mm-mcp-fake: exiting at start as asked)"
    );
    assert!(err.is_gone());
}

#[tokio::test]
async fn a_missing_program_is_named() {
    let err = start(&stdio("ghost", "no-such-mcp-server-xyz", &[]), 10)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot start no-such-mcp-server-xyz: not found (is it installed and on PATH?)"
    );
}

#[tokio::test]
async fn a_crash_in_the_middle_of_a_call_is_one_line() {
    let server = start(&fake("crashy", &[]), 10).await.unwrap();
    let err = call(&server, "crash", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the server exited with status 3 (its last stderr line: mm-mcp-fake: crashing on purpose)"
    );
    assert!(err.is_gone());
    assert!(server.is_gone());
    let err = call(&server, "echo", serde_json::json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(err.is_gone(), "{err}");
}

#[tokio::test]
async fn ten_megabytes_arrive_whole() {
    let server = start(&fake("big", &[]), 10).await.unwrap();
    let out = call(&server, "big", serde_json::json!({"bytes": 10_000_000}))
        .await
        .unwrap();
    assert_eq!(out.text.len(), 10_000_000);
    assert!(out.text.ends_with("END!"));
    // The connection is still good.
    let out = call(&server, "echo", serde_json::json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(out.text, "after");
    server.close().await;
}

#[tokio::test]
async fn a_message_over_the_line_bound_ends_the_connection_with_a_reason() {
    let server = start(&fake("huge", &[]), 10).await.unwrap();
    let err = call(
        &server,
        "big",
        serde_json::json!({"bytes": mm_mcp::MAX_LINE + 10}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "the server sent a message over 16 MiB");
    assert!(err.is_gone());
    server.close().await;
}

#[tokio::test]
async fn a_reply_that_is_not_json_is_named_when_the_call_times_out() {
    let server = start_with(&fake("junk", &[]), 10, 1).await.unwrap();
    let err = call(&server, "junk", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no answer within 1s (it wrote 1 line that is not JSON-RPC, the first: \"this line is not JSON\")"
    );
    // The server still answers what it can.
    let out = call(&server, "echo", serde_json::json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(out.text, "still here");
    server.close().await;
}

#[tokio::test]
async fn cancelling_a_call_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let server = start(&fake("slow", &["--log", log.to_str().unwrap()]), 10)
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    let trigger = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        })
    };
    let err = timeout(
        LIMIT,
        server.call("sleep", args(serde_json::json!({"seconds": 30})), &cancel),
    )
    .await
    .unwrap()
    .unwrap_err();
    trigger.await.unwrap();
    assert_eq!(err, McpError::Cancelled);
    let sent = eventually(|| read(&log).contains("notifications/cancelled")).await;
    assert!(sent, "no cancellation reached the server:\n{}", read(&log));
    // The cancelled request is the one named.
    let log_text = read(&log);
    let call_line = log_text.lines().find(|l| l.contains("tools/call")).unwrap();
    let call: serde_json::Value = serde_json::from_str(call_line).unwrap();
    let cancel_line = log_text
        .lines()
        .find(|l| l.contains("notifications/cancelled"))
        .unwrap();
    let cancelled: serde_json::Value = serde_json::from_str(cancel_line).unwrap();
    assert_eq!(cancelled["params"]["requestId"], call["id"]);
    server.close().await;
}

#[tokio::test]
async fn a_call_that_times_out_is_cancelled_too() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let server = start_with(&fake("slow", &["--log", log.to_str().unwrap()]), 10, 1)
        .await
        .unwrap();
    let err = call(&server, "sleep", serde_json::json!({"seconds": 30}))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "no answer within 1s");
    assert!(eventually(|| read(&log).contains("notifications/cancelled")).await);
    server.close().await;
}

#[tokio::test]
async fn the_environment_is_the_given_one_minus_the_removed_variables() {
    let mut spec = fake("env", &[]);
    if let TransportSpec::Stdio {
        env, remove_env, ..
    } = &mut spec.transport
    {
        env.push(("MM_FAKE_GIVEN".into(), "given-value".into()));
        // PATH is surely in the environment the tests run with.
        remove_env.push("PATH".into());
    }
    let server = start(&spec, 10).await.unwrap();
    let value = |name: &str| {
        let server = &server;
        let name = name.to_string();
        async move {
            call(server, "env", serde_json::json!({"name": name}))
                .await
                .unwrap()
                .text
        }
    };
    assert_eq!(value("MM_FAKE_GIVEN").await, "given-value");
    assert_eq!(value("PATH").await, "(unset)");
    server.close().await;
}

#[tokio::test]
async fn closing_kills_the_whole_group() {
    let server = start(&fake("parent", &["--grandchild"]), 10).await.unwrap();
    let pid: u32 = call(&server, "grandchild", serde_json::json!({}))
        .await
        .unwrap()
        .text
        .parse()
        .unwrap();
    assert!(running(pid));
    server.close().await;
    assert!(
        eventually(|| !running(pid)).await,
        "the grandchild {pid} survived"
    );
}
