#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Gemini generateContent / streamGenerateContent as a client reads it.

mod common;

use common::*;
use mm_mock::{MockServer, Reply, Step};
use serde_json::{Value, json};

fn finish(chunks: &[Value]) -> Vec<Value> {
    chunks
        .iter()
        .map(|c| c["candidates"][0]["finishReason"].clone())
        .filter(|f| !f.is_null())
        .collect()
}

#[tokio::test]
async fn streams_text_chunks_with_a_final_finish_reason() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("The"),
        Step::text(" sky"),
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::Gemini, true).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let read = read_sse(resp).await;
    assert!(read.error.is_none());
    let chunks = read.jsons();
    assert_eq!(chunks.len(), read.events.len(), "every event is JSON");
    let text: String = chunks.iter().flat_map(|c| Wire::Gemini.texts(c)).collect();
    assert_eq!(text, "The sky");
    for c in &chunks {
        assert_eq!(c["candidates"][0]["content"]["role"], "model");
        assert_eq!(c["modelVersion"], "gemini-mock");
    }
    assert_eq!(finish(&chunks), vec![json!("STOP")]);
    assert!(chunks.last().unwrap()["candidates"][0]["finishReason"].is_string());
}

#[tokio::test]
async fn thought_parts_carry_the_signature() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::reasoning("counting "),
        Step::Reasoning {
            text: "letters".into(),
            signature: Some("c2ln".into()),
        },
        Step::text("three"),
    ])])
    .await
    .unwrap();
    let chunks = read_sse(post(&server, Wire::Gemini, true).await)
        .await
        .jsons();
    let thoughts: String = chunks
        .iter()
        .flat_map(|c| Wire::Gemini.reasoning(c))
        .collect();
    assert_eq!(thoughts, "counting letters");
    let text: String = chunks.iter().flat_map(|c| Wire::Gemini.texts(c)).collect();
    assert_eq!(text, "three");
    let signed: Vec<Value> = chunks
        .iter()
        .flat_map(parts)
        .filter(|p| p.get("thoughtSignature").is_some())
        .collect();
    assert_eq!(signed.len(), 1);
    assert_eq!(signed[0]["thoughtSignature"], "c2ln");
    assert_eq!(signed[0]["thought"], true);
}

#[tokio::test]
async fn interleaved_fragments_arrive_as_whole_function_calls() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::tool_start(0, "call-1", "bash"),
        Step::ToolStart {
            index: 1,
            id: None,
            name: "read_file".into(),
        },
        Step::tool_args(0, "{\"comm"),
        Step::tool_args(1, "{\"path\":"),
        Step::tool_args(0, "and\":\"ls\"}"),
        Step::tool_args(1, "\"a.txt\"}"),
        Step::Usage {
            prompt: 71,
            completion: 30,
        },
    ])])
    .await
    .unwrap();
    let chunks = read_sse(post(&server, Wire::Gemini, true).await)
        .await
        .jsons();
    let calls: Vec<Value> = chunks
        .iter()
        .flat_map(parts)
        .filter_map(|p| p.get("functionCall").cloned())
        .collect();
    assert_eq!(
        calls,
        vec![
            json!({"id": "call-1", "name": "bash", "args": {"command": "ls"}}),
            json!({"name": "read_file", "args": {"path": "a.txt"}}),
        ]
    );
    let last = chunks.last().unwrap();
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 71, "candidatesTokenCount": 30, "totalTokenCount": 101})
    );
    assert_eq!(finish(&chunks), vec![json!("STOP")]);
}

#[tokio::test]
async fn without_alt_sse_the_stream_is_a_json_array() {
    let server = MockServer::start(vec![Reply::stream(vec![Step::text("a"), Step::text("b")])])
        .await
        .unwrap();
    let url = format!(
        "{}/v1beta/models/gemini-mock:streamGenerateContent",
        server.url()
    );
    let v: Value = client()
        .post(url)
        .json(&Wire::Gemini.body(true))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let chunks = v.as_array().unwrap();
    let text: String = chunks.iter().flat_map(|c| Wire::Gemini.texts(c)).collect();
    assert_eq!(text, "ab");
    assert_eq!(finish(chunks), vec![json!("STOP")]);
}

#[tokio::test]
async fn generate_content_sends_one_response() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::Reasoning {
            text: "hm".into(),
            signature: Some("sig".into()),
        },
        Step::text("Hel"),
        Step::text("lo"),
        Step::tool_start(0, "x", "bash"),
        Step::tool_args(0, "{\"command\":\"ls\"}"),
        Step::Usage {
            prompt: 2,
            completion: 3,
        },
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::Gemini, false).await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        parts(&v),
        vec![
            json!({"text": "hm", "thought": true, "thoughtSignature": "sig"}),
            json!({"text": "Hello"}),
            json!({"functionCall": {"id": "x", "name": "bash", "args": {"command": "ls"}}}),
        ]
    );
    assert_eq!(v["candidates"][0]["finishReason"], "STOP");
    assert_eq!(v["usageMetadata"]["totalTokenCount"], 5);
}

fn full_script() -> Reply {
    Reply::stream(vec![
        Step::Reasoning {
            text: "r".into(),
            signature: Some("s".into()),
        },
        Step::text("t"),
        Step::tool_start(0, "call-1", "bash"),
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
        "gemini/stream_text.sse",
        "gemini/stream_thinking.sse",
        "gemini/stream_function_call.sse",
    ] {
        for e in fixture_sse(file).await {
            add_shape(&mut fixture, &e.name, &e.json());
        }
    }
    let server = MockServer::start(vec![full_script()]).await.unwrap();
    let read = read_sse(post(&server, Wire::Gemini, true).await).await;
    let mut mock = Shape::new();
    for e in &read.events {
        add_shape(&mut mock, &e.name, &e.json());
    }
    assert_same_shape(&mock, &fixture, &[]);
}

#[tokio::test]
async fn whole_shape_matches_the_documented_fixture() {
    let mut fixture = Shape::new();
    add_shape(&mut fixture, "body", &fixture_json("gemini/nonstream.json"));
    let server = MockServer::start(vec![full_script()]).await.unwrap();
    let v: Value = post(&server, Wire::Gemini, false)
        .await
        .json()
        .await
        .unwrap();
    let mut mock = Shape::new();
    add_shape(&mut mock, "body", &v);
    assert_same_shape(&mock, &fixture, &["usageMetadata.thoughtsTokenCount"]);
}
