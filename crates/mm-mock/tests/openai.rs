#![allow(clippy::unwrap_used, clippy::expect_used)]
//! OpenAI Chat Completions as a client reads it.

mod common;

use common::*;
use mm_mock::{MockServer, Reply, Step};
use serde_json::{Value, json};

fn delta(v: &Value) -> &Value {
    &v["choices"][0]["delta"]
}

/// Tool calls assembled by index, the way the OpenAI docs describe it.
fn assemble(chunks: &[Value]) -> Vec<(Option<String>, String, String)> {
    let mut calls: Vec<(Option<String>, String, String)> = Vec::new();
    for c in chunks {
        for tc in delta(c)["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().unwrap() as usize;
            while calls.len() <= i {
                calls.push((None, String::new(), String::new()));
            }
            if let Some(id) = tc["id"].as_str() {
                calls[i].0 = Some(id.to_owned());
            }
            if let Some(name) = tc["function"]["name"].as_str() {
                calls[i].1.push_str(name);
            }
            if let Some(args) = tc["function"]["arguments"].as_str() {
                calls[i].2.push_str(args);
            }
        }
    }
    calls
}

#[tokio::test]
async fn streams_plain_text_then_done() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("Hel"),
        Step::text("lo"),
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::OpenAi, true).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let read = read_sse(resp).await;
    assert!(read.error.is_none(), "{:?}", read.error);
    assert_eq!(read.events.last().unwrap().data, "[DONE]");
    let chunks = read.jsons();
    let text: String = chunks.iter().flat_map(|c| Wire::OpenAi.texts(c)).collect();
    assert_eq!(text, "Hello");
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "gpt-mock");
    }
    assert_eq!(delta(&chunks[0])["role"], "assistant");
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, vec![&json!("stop")]);
}

#[tokio::test]
async fn streams_reasoning_content_before_the_answer() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::reasoning("think "),
        Step::reasoning("hard"),
        Step::text("answer"),
    ])])
    .await
    .unwrap();
    let chunks = read_sse(post(&server, Wire::OpenAi, true).await)
        .await
        .jsons();
    let reasoning: String = chunks
        .iter()
        .flat_map(|c| Wire::OpenAi.reasoning(c))
        .collect();
    assert_eq!(reasoning, "think hard");
    let first_text = chunks
        .iter()
        .position(|c| !Wire::OpenAi.texts(c).is_empty())
        .unwrap();
    let last_reasoning = chunks
        .iter()
        .rposition(|c| !Wire::OpenAi.reasoning(c).is_empty())
        .unwrap();
    assert!(last_reasoning < first_text);
}

#[tokio::test]
async fn interleaved_parallel_tool_calls_assemble_by_index() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::tool_start(0, "call_a", "bash"),
        Step::tool_start(1, "call_b", "read_file"),
        Step::tool_args(0, "{\"comm"),
        Step::tool_args(1, "{\"path\":"),
        Step::tool_args(0, "and\":\"ls\"}"),
        Step::tool_args(1, "\"a.txt\"}"),
    ])])
    .await
    .unwrap();
    let chunks = read_sse(post(&server, Wire::OpenAi, true).await)
        .await
        .jsons();
    let order: Vec<u64> = chunks
        .iter()
        .flat_map(|c| {
            delta(c)["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|tc| tc.get("id").is_none())
        .map(|tc| tc["index"].as_u64().unwrap())
        .collect();
    assert_eq!(order, vec![0, 1, 0, 1], "argument deltas interleave");
    let calls = assemble(&chunks);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0.as_deref(), Some("call_a"));
    assert_eq!(calls[0].1, "bash");
    let a: Value = serde_json::from_str(&calls[0].2).unwrap();
    assert_eq!(a, json!({"command": "ls"}));
    assert_eq!(calls[1].0.as_deref(), Some("call_b"));
    assert_eq!(calls[1].1, "read_file");
    let b: Value = serde_json::from_str(&calls[1].2).unwrap();
    assert_eq!(b, json!({"path": "a.txt"}));
    for c in &chunks {
        for tc in delta(c)["tool_calls"].as_array().into_iter().flatten() {
            if tc.get("id").is_some() {
                assert_eq!(tc["type"], "function");
            }
        }
    }
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, vec![&json!("tool_calls")]);
}

#[tokio::test]
async fn a_call_without_id_sends_no_id() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::ToolStart {
            index: 0,
            id: None,
            name: "bash".into(),
        },
        Step::tool_args(0, "{}"),
    ])])
    .await
    .unwrap();
    let chunks = read_sse(post(&server, Wire::OpenAi, true).await)
        .await
        .jsons();
    let calls = assemble(&chunks);
    assert_eq!(calls, vec![(None, "bash".to_owned(), "{}".to_owned())]);
}

#[tokio::test]
async fn usage_chunk_only_when_the_request_asks() {
    let script = || {
        Reply::stream(vec![
            Step::text("x"),
            Step::Usage {
                prompt: 9,
                completion: 12,
            },
        ])
    };
    let server = MockServer::start(vec![script(), script()]).await.unwrap();
    let chunks = read_sse(post(&server, Wire::OpenAi, true).await)
        .await
        .jsons();
    let usage: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["usage"])
        .filter(|u| !u.is_null())
        .collect();
    assert_eq!(
        usage,
        vec![&json!({"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21})]
    );
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));

    let resp = client()
        .post(Wire::OpenAi.url(&server.url(), true))
        .json(&json!({"model": "m", "stream": true, "messages": []}))
        .send()
        .await
        .unwrap();
    let chunks = read_sse(resp).await.jsons();
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(Wire::OpenAi.texts(&chunks[1]), vec!["x".to_owned()]);
}

#[tokio::test]
async fn not_streaming_sends_one_completion() {
    let server = MockServer::start(vec![
        Reply::stream(vec![
            Step::reasoning("hm"),
            Step::text("Hel"),
            Step::text("lo"),
            Step::Usage {
                prompt: 3,
                completion: 4,
            },
        ]),
        Reply::stream(vec![
            Step::tool_start(0, "call_1", "bash"),
            Step::tool_args(0, "{\"command\":"),
            Step::tool_args(0, "\"ls\"}"),
        ]),
    ])
    .await
    .unwrap();
    // No "stream" field: OpenAI does not stream.
    let resp = post(&server, Wire::OpenAi, false).await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    let m = &v["choices"][0]["message"];
    assert_eq!(m["role"], "assistant");
    assert_eq!(m["content"], "Hello");
    assert_eq!(m["reasoning_content"], "hm");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["total_tokens"], 7);

    let resp = client()
        .post(Wire::OpenAi.url(&server.url(), false))
        .json(&json!({"model": "m", "stream": false, "messages": []}))
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    let m = &v["choices"][0]["message"];
    assert!(m["content"].is_null());
    assert_eq!(m["tool_calls"][0]["id"], "call_1");
    assert_eq!(m["tool_calls"][0]["type"], "function");
    assert_eq!(m["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(
        m["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"ls\"}"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
}

fn full_script() -> Vec<Reply> {
    vec![Reply::stream(vec![
        Step::reasoning("r"),
        Step::text("t"),
        Step::tool_start(0, "c0", "bash"),
        Step::tool_args(0, "{}"),
        Step::tool_start(1, "c1", "bash"),
        Step::tool_args(1, "{}"),
        Step::Usage {
            prompt: 1,
            completion: 2,
        },
    ])]
}

#[tokio::test]
async fn stream_shape_matches_the_documented_fixtures() {
    let mut fixture = Shape::new();
    for file in [
        "openai/stream_text.sse",
        "openai/stream_tool_calls.sse",
        "openai/stream_reasoning.sse",
    ] {
        let events = fixture_sse(file).await;
        assert_eq!(events.last().unwrap().data, "[DONE]", "{file}");
        for e in &events[..events.len() - 1] {
            add_shape(&mut fixture, &e.name, &e.json());
        }
    }
    let server = MockServer::start(full_script()).await.unwrap();
    let read = read_sse(post(&server, Wire::OpenAi, true).await).await;
    assert_eq!(read.events.last().unwrap().data, "[DONE]");
    let mut mock = Shape::new();
    for e in &read.events[..read.events.len() - 1] {
        add_shape(&mut mock, &e.name, &e.json());
    }
    assert_same_shape(
        &mock,
        &fixture,
        &["system_fingerprint", "choices[].logprobs"],
    );
}

#[tokio::test]
async fn whole_shape_matches_the_documented_fixtures() {
    let mut fixture = Shape::new();
    add_shape(&mut fixture, "body", &fixture_json("openai/nonstream.json"));
    add_shape(
        &mut fixture,
        "body",
        &fixture_json("openai/nonstream_text.json"),
    );
    let server = MockServer::start(full_script()).await.unwrap();
    let v: Value = post(&server, Wire::OpenAi, false)
        .await
        .json()
        .await
        .unwrap();
    let mut mock = Shape::new();
    add_shape(&mut mock, "body", &v);
    assert_same_shape(
        &mock,
        &fixture,
        &[
            "system_fingerprint",
            "service_tier",
            "choices[].logprobs",
            "choices[].message.refusal",
        ],
    );
}
