#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Ollama native chat as a client reads it: NDJSON lines.

mod common;

use common::*;
use mm_mock::{MockServer, Reply, Step};
use serde_json::{Value, json};

#[tokio::test]
async fn streams_text_lines_then_done() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("The"),
        Step::text(" sky"),
    ])])
    .await
    .unwrap();
    // Ollama streams unless told not to.
    let resp = client()
        .post(Wire::Ollama.url(&server.url(), true))
        .json(&json!({"model": "qwen3:8b", "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let read = read_ndjson(resp).await;
    assert!(read.error.is_none());
    let lines = read.jsons();
    assert_eq!(lines.len(), read.events.len(), "every line is JSON");
    let text: String = lines.iter().flat_map(|l| Wire::Ollama.texts(l)).collect();
    assert_eq!(text, "The sky");
    for l in &lines {
        assert_eq!(l["model"], "qwen3:8b");
        assert_eq!(l["message"]["role"], "assistant");
        assert!(l["created_at"].as_str().unwrap().contains('T'));
    }
    let (last, rest) = lines.split_last().unwrap();
    assert!(rest.iter().all(|l| l["done"] == false));
    assert_eq!(last["done"], true);
    assert_eq!(last["done_reason"], "stop");
}

#[tokio::test]
async fn streams_thinking() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::reasoning("let me "),
        Step::reasoning("see"),
        Step::text("ok"),
    ])])
    .await
    .unwrap();
    let lines = read_ndjson(post(&server, Wire::Ollama, true).await)
        .await
        .jsons();
    let thinking: String = lines
        .iter()
        .flat_map(|l| Wire::Ollama.reasoning(l))
        .collect();
    assert_eq!(thinking, "let me see");
    let text: String = lines.iter().flat_map(|l| Wire::Ollama.texts(l)).collect();
    assert_eq!(text, "ok");
}

#[tokio::test]
async fn interleaved_tool_fragments_arrive_as_whole_calls() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("Checking."),
        Step::tool_start(0, "ignored", "bash"),
        Step::tool_start(1, "ignored", "read_file"),
        Step::tool_args(0, "{\"comm"),
        Step::tool_args(1, "{\"path\":"),
        Step::tool_args(0, "and\":\"ls\"}"),
        Step::tool_args(1, "\"a.txt\"}"),
    ])])
    .await
    .unwrap();
    let lines = read_ndjson(post(&server, Wire::Ollama, true).await)
        .await
        .jsons();
    let with_calls: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"]["tool_calls"].is_array())
        .collect();
    assert_eq!(with_calls.len(), 1, "both calls travel together, whole");
    let calls = with_calls[0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(
        calls,
        &vec![
            json!({"function": {"name": "bash", "arguments": {"command": "ls"}}}),
            json!({"function": {"name": "read_file", "arguments": {"path": "a.txt"}}}),
        ]
    );
    // The text came first, the calls after it, then the done line.
    assert_eq!(Wire::Ollama.texts(&lines[0]), vec!["Checking.".to_owned()]);
    assert_eq!(lines.last().unwrap()["done"], true);
}

#[tokio::test]
async fn done_line_carries_the_token_counts() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::Usage {
            prompt: 26,
            completion: 282,
        },
        Step::text("x"),
    ])])
    .await
    .unwrap();
    let lines = read_ndjson(post(&server, Wire::Ollama, true).await)
        .await
        .jsons();
    let done = lines.last().unwrap();
    assert_eq!(done["prompt_eval_count"], 26);
    assert_eq!(done["eval_count"], 282);
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.get("eval_count").is_none())
    );
}

#[tokio::test]
async fn stream_false_sends_one_object() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::reasoning("hm"),
        Step::text("Hel"),
        Step::text("lo"),
        Step::tool_start(0, "x", "bash"),
        Step::tool_args(0, "{\"command\":\"ls\"}"),
        Step::Usage {
            prompt: 1,
            completion: 2,
        },
    ])])
    .await
    .unwrap();
    let resp = post(&server, Wire::Ollama, false).await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["done"], true);
    assert_eq!(v["done_reason"], "stop");
    assert_eq!(v["message"]["content"], "Hello");
    assert_eq!(v["message"]["thinking"], "hm");
    assert_eq!(
        v["message"]["tool_calls"],
        json!([{"function": {"name": "bash", "arguments": {"command": "ls"}}}])
    );
    assert_eq!(v["prompt_eval_count"], 1);
    assert_eq!(v["eval_count"], 2);
}

fn group(line: &Value) -> &'static str {
    if line["done"] == true {
        "done"
    } else {
        "chunk"
    }
}

const OPTIONAL: [&str; 4] = [
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
];

fn full_script() -> Reply {
    Reply::stream(vec![
        Step::reasoning("r"),
        Step::text("t"),
        Step::tool_start(0, "a", "bash"),
        Step::tool_args(0, "{\"command\":\"ls\"}"),
        Step::tool_start(1, "b", "bash"),
        Step::tool_args(1, "{\"command\":\"pwd\"}"),
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
        "ollama/stream_text.ndjson",
        "ollama/stream_thinking.ndjson",
        "ollama/stream_tool_calls.ndjson",
    ] {
        for line in fixture_ndjson(file) {
            add_shape(&mut fixture, group(&line), &line);
        }
    }
    let server = MockServer::start(vec![full_script()]).await.unwrap();
    let mut mock = Shape::new();
    for line in read_ndjson(post(&server, Wire::Ollama, true).await)
        .await
        .jsons()
    {
        add_shape(&mut mock, group(&line), &line);
    }
    assert_same_shape(&mock, &fixture, &OPTIONAL);
}

#[tokio::test]
async fn whole_shape_matches_the_documented_fixture() {
    let mut fixture = Shape::new();
    add_shape(&mut fixture, "body", &fixture_json("ollama/nonstream.json"));
    let server = MockServer::start(vec![full_script()]).await.unwrap();
    let v: Value = post(&server, Wire::Ollama, false)
        .await
        .json()
        .await
        .unwrap();
    let mut mock = Shape::new();
    add_shape(&mut mock, "body", &v);
    assert_same_shape(&mock, &fixture, &OPTIONAL);
}
