#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The server itself: the request log, the script queue, stopping, and the
//! `mm-mock` binary.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use mm_mock::{MockServer, Options, Reply, Step, demo_script};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn url_has_no_trailing_slash_and_is_local() {
    let server = MockServer::start(vec![]).await.unwrap();
    let url = server.url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(!url.ends_with('/'));
    assert_ne!(server.addr().port(), 0);
}

#[tokio::test]
async fn records_method_path_query_headers_and_body_in_order() {
    let server = MockServer::start(vec![Reply::text("a"), Reply::text("b")])
        .await
        .unwrap();
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    client()
        .post(format!(
            "{}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            server.url()
        ))
        .header("x-goog-api-key", "k-123")
        .header("X-Custom-Thing", "Value")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    client()
        .post(format!("{}/api/chat", server.url()))
        .body("not json")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let log = server.requests();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].method, "POST");
    assert_eq!(
        log[0].path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(log[0].header("x-goog-api-key"), Some("k-123"));
    assert_eq!(log[0].header("x-custom-thing"), Some("Value"));
    assert_eq!(log[0].header("content-type"), Some("application/json"));
    assert!(log[0].headers.iter().all(|(n, _)| *n == n.to_lowercase()));
    assert_eq!(log[0].body, body);
    assert_eq!(log[1].path, "/api/chat");
    assert_eq!(log[1].body, Value::Null);
}

#[tokio::test]
async fn a_request_is_recorded_before_its_reply_is_sent() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::stall(2_000),
        Step::text("x"),
    ])])
    .await
    .unwrap();
    let resp = client()
        .post(format!("{}/v1/messages", server.url()))
        .json(&json!({"model": "m", "stream": true, "messages": [], "max_tokens": 1}))
        .send()
        .await
        .unwrap();
    // Headers are here, the body is still stalled: the log already has it.
    let log = server.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].body["model"], "m");
    drop(resp);
}

#[tokio::test]
async fn push_and_remaining_follow_the_queue() {
    let server = MockServer::start(vec![Reply::text("one")]).await.unwrap();
    assert_eq!(server.remaining(), 1);
    server.push(Reply::text("two"));
    assert_eq!(server.remaining(), 2);
    for want in ["one", "two"] {
        let v: Value = post(&server, Wire::Ollama, false)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(v["message"]["content"], want);
    }
    assert_eq!(server.remaining(), 0);
}

#[tokio::test]
async fn unknown_endpoints_get_404_and_keep_the_script() {
    let server = MockServer::start(vec![Reply::text("kept")]).await.unwrap();
    let resp = client()
        .post(format!("{}/v1/embeddings", server.url()))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let resp = client()
        .get(format!("{}/api/chat", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(server.remaining(), 1);
    assert_eq!(server.all_requests().len(), 2, "404s are recorded too");
    assert!(server.requests().is_empty(), "they are not chat requests");
}

#[tokio::test]
async fn openai_compatible_base_without_v1_is_served() {
    let server = MockServer::start(vec![Reply::text("hi")]).await.unwrap();
    let v: Value = client()
        .post(format!("{}/chat/completions", server.url()))
        .json(&json!({"model": "m", "messages": []}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "hi");
}

#[tokio::test]
async fn repeat_plays_the_script_again() {
    let server = MockServer::start_with(
        vec![Reply::text("a"), Reply::text("b")],
        Options {
            port: 0,
            repeat: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    for _ in 0..5 {
        let v: Value = post(&server, Wire::OpenAi, false)
            .await
            .json()
            .await
            .unwrap();
        got.push(
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(got, ["a", "b", "a", "b", "a"]);
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = MockServer::start(vec![Reply::text("x")]).await.unwrap();
    let addr = server.addr();
    assert!(tokio::net::TcpStream::connect(addr).await.is_ok());
    drop(server);
    let refused = tokio::time::timeout(BOUND, async {
        loop {
            if tokio::net::TcpStream::connect(addr).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(refused.is_ok(), "still accepting after drop");
}

#[tokio::test]
async fn dropping_the_server_cuts_a_stream_in_flight() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("a"),
        Step::stall(60_000),
        Step::text("b"),
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::OpenAi, true).await;
    let reading = tokio::spawn(read_sse(resp));
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(server);
    let read = tokio::time::timeout(BOUND, reading).await.unwrap().unwrap();
    assert!(
        read.error.is_some(),
        "the cut must not look like a clean end"
    );
}

#[tokio::test]
async fn demo_script_plays_a_tool_call_then_an_answer() {
    let server = MockServer::start(demo_script()).await.unwrap();
    let first: Value = post(&server, Wire::Ollama, false)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        first["message"]["tool_calls"],
        json!([{"function": {"name": "bash", "arguments": {"command": "ls"}}}])
    );
    assert!(!first["message"]["thinking"].as_str().unwrap().is_empty());
    let second: Value = post(&server, Wire::Ollama, false)
        .await
        .json()
        .await
        .unwrap();
    assert!(second["message"]["tool_calls"].is_null());
    assert!(!second["message"]["content"].as_str().unwrap().is_empty());
    assert!(!second["message"]["thinking"].as_str().unwrap().is_empty());
}

#[test]
fn replies_round_trip_as_json() {
    let script = demo_script();
    let text = serde_json::to_string(&script).unwrap();
    let back: Vec<Reply> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, script);
    let hand: Vec<Reply> = serde_json::from_value(json!([
        {"kind": "stream", "steps": [{"step": "text", "text": "hi"}, {"step": "drop"}]},
        {"kind": "status", "status": 429, "retry_after": 2}
    ]))
    .unwrap();
    assert_eq!(
        hand,
        vec![
            Reply::stream(vec![Step::text("hi"), Step::Drop]),
            Reply::Status {
                status: 429,
                retry_after: Some(2),
                message: String::new()
            }
        ]
    );
}

/// Starts the binary and returns it with the URL it printed.
async fn spawn_bin(args: &[&str]) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mm-mock"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(BOUND, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line
        .strip_prefix("mm-mock listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (child, url)
}

#[tokio::test]
async fn binary_serves_a_script_file_in_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    std::fs::write(
        &path,
        json!([{"kind": "stream", "steps": [{"step": "text", "text": "from file"}]}]).to_string(),
    )
    .unwrap();
    let (mut child, url) =
        spawn_bin(&["--port", "0", "--script", path.to_str().unwrap(), "--loop"]).await;
    assert!(url.starts_with("http://127.0.0.1:"));
    for _ in 0..2 {
        let v: Value = client()
            .post(format!("{url}/v1/chat/completions"))
            .json(&json!({"model": "m", "messages": []}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "from file");
    }
    child.kill().await.unwrap();
}

#[tokio::test]
async fn binary_plays_the_demo_by_default() {
    let (mut child, url) = spawn_bin(&[]).await;
    let v: Value = client()
        .post(format!("{url}/api/chat"))
        .json(&json!({"model": "m", "stream": false, "messages": []}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["message"]["tool_calls"][0]["function"]["name"], "bash");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn binary_rejects_a_bad_script_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, "{\"not\": \"a list\"}").unwrap();
    let out = tokio::time::timeout(
        BOUND,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_mm-mock"))
            .args(["--script", path.to_str().unwrap()])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a JSON array of replies"), "{err}");
}

#[tokio::test]
async fn routes_and_exact_bodies_answer_as_given() {
    let server = MockServer::start_with(
        vec![Reply::Body {
            status: 400,
            body: json!({"error": {"type": "exceed_context_size_error", "n_ctx": 8}}),
        }],
        Options {
            routes: vec![mm_mock::Route::get("/props", json!({"n_ctx": 8}))],
            ..Options::default()
        },
    )
    .await
    .unwrap();
    let props: Value = client()
        .get(format!("{}/props?model=x", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(props, json!({"n_ctx": 8}));
    let resp = post(&server, Wire::OpenAi, true).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["n_ctx"], 8);
    assert_eq!(server.requests().len(), 1, "the chat request");
    assert_eq!(server.all_requests().len(), 2, "and /props");
}

#[tokio::test]
async fn a_simulated_window_refuses_each_wire_its_own_way_and_ollama_cuts() {
    let window = 5; // tokens: every request body is longer
    let options = || Options {
        window: Some(window),
        ..Options::default()
    };
    for wire in [Wire::OpenAi, Wire::Anthropic, Wire::Gemini] {
        let server = MockServer::start_with(vec![Reply::text("kept")], options())
            .await
            .unwrap();
        let resp = post(&server, wire, false).await;
        assert_eq!(resp.status(), 400, "{wire:?}");
        let body: Value = resp.json().await.unwrap();
        let text = body.to_string();
        assert!(
            text.contains("exceed_context_size_error")
                || text.contains("prompt is too long")
                || text.contains("INVALID_ARGUMENT"),
            "{wire:?}: {text}"
        );
        assert_eq!(server.remaining(), 1, "{wire:?}: no reply used");
    }
    // Ollama answers, reporting the window as the prompt's size.
    let server = MockServer::start_with(vec![Reply::text("cut")], options())
        .await
        .unwrap();
    let read = read(Wire::Ollama, post(&server, Wire::Ollama, true).await).await;
    let last = read.jsons().last().unwrap().to_string();
    assert!(
        last.contains(&format!("\"prompt_eval_count\":{window}")),
        "{last}"
    );
    // Each wire's discovery endpoint tells the window.
    let props: Value = client()
        .get(format!("{}/props", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(props["default_generation_settings"]["n_ctx"], window);
}
