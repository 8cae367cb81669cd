#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Anthropic Messages as a client reads it: named SSE events.

mod common;

use std::collections::BTreeMap;

use common::*;
use mm_mock::{MockServer, Reply, Step};
use serde_json::{Value, json};

fn names(read: &Read) -> Vec<String> {
    read.events.iter().map(|e| e.name.clone()).collect()
}

/// Every event's `type` equals its SSE event name (documented).
fn check_types(read: &Read) {
    for e in &read.events {
        assert_eq!(e.json()["type"], e.name.as_str(), "{}", e.data);
    }
}

/// Blocks assembled by index: start block + concatenated deltas.
#[derive(Debug, Default)]
struct Blk {
    start: Value,
    text: String,
    thinking: String,
    json: String,
    signature: Option<String>,
    stopped: bool,
}

fn blocks(read: &Read) -> BTreeMap<u64, Blk> {
    let mut out: BTreeMap<u64, Blk> = BTreeMap::new();
    for e in &read.events {
        let v = e.json();
        let Some(i) = v["index"].as_u64() else {
            continue;
        };
        let b = out.entry(i).or_default();
        match e.name.as_str() {
            "content_block_start" => b.start = v["content_block"].clone(),
            "content_block_delta" => {
                assert!(!b.stopped, "delta after stop");
                let d = &v["delta"];
                match d["type"].as_str().unwrap() {
                    "text_delta" => b.text.push_str(d["text"].as_str().unwrap()),
                    "thinking_delta" => b.thinking.push_str(d["thinking"].as_str().unwrap()),
                    "input_json_delta" => b.json.push_str(d["partial_json"].as_str().unwrap()),
                    "signature_delta" => b.signature = d["signature"].as_str().map(str::to_owned),
                    other => panic!("unknown delta {other}"),
                }
            }
            "content_block_stop" => b.stopped = true,
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn streams_text_with_the_documented_event_flow() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("Hello"),
        Step::text("!"),
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::Anthropic, true).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let read = read_sse(resp).await;
    assert!(read.error.is_none());
    check_types(&read);
    assert_eq!(
        names(&read),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start = read.events[0].json();
    assert_eq!(start["message"]["model"], "claude-mock");
    assert_eq!(start["message"]["content"], json!([]));
    let b = blocks(&read);
    assert_eq!(b[&0].start, json!({"type": "text", "text": ""}));
    assert_eq!(b[&0].text, "Hello!");
    assert!(b[&0].stopped);
    let delta = read.events[6].json();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn thinking_block_is_signed_at_its_end() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::reasoning("step one; "),
        Step::Reasoning {
            text: "step two".into(),
            signature: Some("sig-123".into()),
        },
        Step::text("answer"),
    ])])
    .await
    .unwrap();
    let read = read_sse(post(&server, Wire::Anthropic, true).await).await;
    check_types(&read);
    let b = blocks(&read);
    assert_eq!(b[&0].start["type"], "thinking");
    assert_eq!(b[&0].thinking, "step one; step two");
    assert_eq!(b[&0].signature.as_deref(), Some("sig-123"));
    assert_eq!(b[&1].start["type"], "text");
    assert_eq!(b[&1].text, "answer");
    // The signature is the last delta of the thinking block.
    let deltas: Vec<Value> = read
        .events
        .iter()
        .map(Ev::json)
        .filter(|v| v["type"] == "content_block_delta" && v["index"] == 0)
        .collect();
    assert_eq!(deltas.last().unwrap()["delta"]["type"], "signature_delta");
    // Block 0 stops before block 1 starts.
    let stop0 = read
        .events
        .iter()
        .position(|e| e.name == "content_block_stop" && e.json()["index"] == 0)
        .unwrap();
    let start1 = read
        .events
        .iter()
        .position(|e| e.name == "content_block_start" && e.json()["index"] == 1)
        .unwrap();
    assert!(stop0 < start1);
}

#[tokio::test]
async fn parallel_tool_uses_with_interleaved_input_deltas() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("Let me check."),
        Step::tool_start(0, "toolu_a", "bash"),
        Step::tool_start(1, "toolu_b", "read_file"),
        Step::tool_args(0, "{\"comm"),
        Step::tool_args(1, "{\"path\":"),
        Step::tool_args(0, "and\":\"ls\"}"),
        Step::tool_args(1, "\"a.txt\"}"),
    ])])
    .await
    .unwrap();
    let read = read_sse(post(&server, Wire::Anthropic, true).await).await;
    check_types(&read);
    let b = blocks(&read);
    assert_eq!(b.len(), 3);
    assert_eq!(b[&0].text, "Let me check.");
    assert_eq!(
        b[&1].start,
        json!({"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {}})
    );
    assert_eq!(
        b[&2].start,
        json!({"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}})
    );
    let a: Value = serde_json::from_str(&b[&1].json).unwrap();
    let c: Value = serde_json::from_str(&b[&2].json).unwrap();
    assert_eq!(a, json!({"command": "ls"}));
    assert_eq!(c, json!({"path": "a.txt"}));
    assert!(b.values().all(|b| b.stopped));
    let order: Vec<u64> = read
        .events
        .iter()
        .map(Ev::json)
        .filter(|v| v["delta"]["type"] == "input_json_delta")
        .map(|v| v["index"].as_u64().unwrap())
        .collect();
    assert_eq!(order, vec![1, 2, 1, 2]);
    let md = read
        .events
        .iter()
        .find(|e| e.name == "message_delta")
        .unwrap()
        .json();
    assert_eq!(md["delta"]["stop_reason"], "tool_use");
    assert_eq!(names(&read).last().unwrap(), "message_stop");
}

#[tokio::test]
async fn usage_in_message_start_and_message_delta() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("x"),
        Step::Usage {
            prompt: 25,
            completion: 15,
        },
    ])])
    .await
    .unwrap();
    let read = read_sse(post(&server, Wire::Anthropic, true).await).await;
    let start = read
        .events
        .iter()
        .find(|e| e.name == "message_start")
        .unwrap()
        .json();
    assert_eq!(start["message"]["usage"]["input_tokens"], 25);
    let md = read
        .events
        .iter()
        .find(|e| e.name == "message_delta")
        .unwrap()
        .json();
    assert_eq!(md["usage"]["output_tokens"], 15);
}

#[tokio::test]
async fn not_streaming_sends_one_message() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::Reasoning {
            text: "hm".into(),
            signature: Some("sig".into()),
        },
        Step::text("Hel"),
        Step::text("lo"),
        Step::tool_start(0, "toolu_1", "bash"),
        Step::tool_args(0, "{\"command\":"),
        Step::tool_args(0, "\"ls\"}"),
        Step::Usage {
            prompt: 5,
            completion: 6,
        },
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::Anthropic, false).await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(
        v["content"],
        json!([
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "text", "text": "Hello"},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
        ])
    );
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["usage"], json!({"input_tokens": 5, "output_tokens": 6}));
}

fn full_script() -> Reply {
    Reply::stream(vec![
        Step::Reasoning {
            text: "r".into(),
            signature: Some("s".into()),
        },
        Step::text("t"),
        Step::tool_start(0, "toolu_a", "bash"),
        Step::tool_args(0, "{}"),
        Step::Usage {
            prompt: 1,
            completion: 2,
        },
    ])
}

#[tokio::test]
async fn stream_shape_matches_the_documented_fixtures() {
    let mut fixture = Shape::new();
    for file in [
        "anthropic/stream_text.sse",
        "anthropic/stream_tool_use.sse",
        "anthropic/stream_thinking.sse",
    ] {
        for e in fixture_sse(file).await {
            assert_eq!(e.json()["type"], e.name.as_str(), "{file}");
            add_shape(&mut fixture, &e.name, &e.json());
        }
    }
    let server = MockServer::start(vec![full_script()]).await.unwrap();
    let read = read_sse(post(&server, Wire::Anthropic, true).await).await;
    let mut mock = Shape::new();
    for e in &read.events {
        add_shape(&mut mock, &e.name, &e.json());
    }
    assert_same_shape(&mock, &fixture, &[]);
}

#[tokio::test]
async fn whole_shape_matches_the_documented_fixture() {
    let mut fixture = Shape::new();
    add_shape(
        &mut fixture,
        "body",
        &fixture_json("anthropic/nonstream.json"),
    );
    let server = MockServer::start(vec![full_script()]).await.unwrap();
    let v: Value = post(&server, Wire::Anthropic, false)
        .await
        .json()
        .await
        .unwrap();
    let mut mock = Shape::new();
    add_shape(&mut mock, "body", &v);
    assert_same_shape(&mock, &fixture, &[]);
}
