#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Misbehaviour on demand, checked in all four wire formats.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::StreamExt;
use mm_mock::{MockServer, Reply, Step};
use serde_json::{Value, json};

fn texts(wire: Wire, read: &Read) -> Vec<(String, Instant)> {
    read.events
        .iter()
        .flat_map(|e| wire.texts(&e.json()).into_iter().map(|t| (t, e.at)))
        .collect()
}

#[tokio::test]
async fn stall_mid_stream_sends_nothing_for_that_long() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::stream(vec![
            Step::text("before"),
            Step::stall(400),
            Step::text("after"),
        ])])
        .await
        .unwrap();
        let read = read(wire, post(&server, wire, true).await).await;
        assert!(read.error.is_none(), "{wire:?}");
        let t = texts(wire, &read);
        assert_eq!(t.len(), 2, "{wire:?}: {t:?}");
        assert_eq!((t[0].0.as_str(), t[1].0.as_str()), ("before", "after"));
        let gap = t[1].1 - t[0].1;
        assert!(gap >= Duration::from_millis(350), "{wire:?}: gap {gap:?}");
        assert!(gap < Duration::from_secs(5), "{wire:?}: gap {gap:?}");
    }
}

#[tokio::test]
async fn stall_first_delays_the_first_byte_after_the_headers() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::stream(vec![
            Step::stall(800),
            Step::text("late"),
        ])])
        .await
        .unwrap();
        let started = Instant::now();
        let resp = post(&server, wire, true).await;
        let headers_after = started.elapsed();
        assert_eq!(resp.status(), 200);
        assert!(
            headers_after < Duration::from_millis(600),
            "{wire:?}: headers took {headers_after:?}"
        );
        let mut body = resp.bytes_stream();
        let first = tokio::time::timeout(BOUND, body.next()).await.unwrap();
        let first_after = started.elapsed();
        assert!(!first.unwrap().unwrap().is_empty());
        assert!(
            first_after >= Duration::from_millis(750),
            "{wire:?}: first byte after {first_after:?}"
        );
    }
}

#[tokio::test]
async fn drop_cuts_the_stream_with_an_error() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::stream(vec![
            Step::text("partial"),
            Step::Drop,
            Step::text("never"),
        ])])
        .await
        .unwrap();
        let read = read(wire, post(&server, wire, true).await).await;
        let t: Vec<String> = texts(wire, &read).into_iter().map(|(t, _)| t).collect();
        assert_eq!(t, vec!["partial".to_owned()], "{wire:?}");
        assert!(read.error.is_some(), "{wire:?}: the stream ended cleanly");
        // Nothing that ends a message was sent.
        assert!(read.events.iter().all(|e| e.data != "[DONE]"
            && e.name != "message_stop"
            && e.json()["done"] != true
            && e.json()["candidates"][0]["finishReason"].is_null()));
    }
}

#[tokio::test]
async fn drop_cuts_a_whole_body_too() {
    for wire in ALL {
        let server =
            MockServer::start(vec![Reply::stream(vec![Step::text("partial"), Step::Drop])])
                .await
                .unwrap();
        let resp = post(&server, wire, false).await;
        assert_eq!(resp.status(), 200);
        assert!(resp.bytes().await.is_err(), "{wire:?}");
    }
}

#[tokio::test]
async fn raw_lines_arrive_verbatim_in_place() {
    for wire in ALL {
        let raw = if wire == Wire::Ollama {
            "{\"message\": broken"
        } else {
            "data: {\"broken"
        };
        let server = MockServer::start(vec![Reply::stream(vec![
            Step::text("a"),
            Step::raw(raw),
            Step::text("b"),
        ])])
        .await
        .unwrap();
        let read = read(wire, post(&server, wire, true).await).await;
        assert!(read.error.is_none());
        let want = raw.trim_start_matches("data: ");
        let at = read
            .events
            .iter()
            .position(|e| e.data == want)
            .unwrap_or_else(|| panic!("{wire:?}: raw line missing"));
        assert!(serde_json::from_str::<Value>(&read.events[at].data).is_err());
        let before: String = read.events[..at]
            .iter()
            .flat_map(|e| wire.texts(&e.json()))
            .collect();
        let after: String = read.events[at + 1..]
            .iter()
            .flat_map(|e| wire.texts(&e.json()))
            .collect();
        assert_eq!((before.as_str(), after.as_str()), ("a", "b"), "{wire:?}");
    }
}

#[tokio::test]
async fn raw_line_replaces_a_whole_body() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::text("a"),
        Step::raw("{not json"),
    ])])
    .await
    .unwrap();
    let body = post(&server, Wire::OpenAi, false)
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(body, "{not json\n");
}

/// The arguments a client assembles for call 0, and how many deltas
/// carried exactly `fragment`.
fn runaway_args(wire: Wire, read: &Read, fragment: &str) -> (String, usize) {
    let mut args = String::new();
    let mut count = 0;
    for e in &read.events {
        let v = e.json();
        let piece = match wire {
            Wire::OpenAi => v["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .map(str::to_owned),
            Wire::Anthropic if v["delta"]["type"] == "input_json_delta" => {
                v["delta"]["partial_json"].as_str().map(str::to_owned)
            }
            Wire::Anthropic => None,
            Wire::Ollama => v["message"]["tool_calls"][0]["function"]["arguments"]
                .as_object()
                .map(|o| Value::Object(o.clone()).to_string()),
            Wire::Gemini => parts(&v)
                .iter()
                .find_map(|p| p["functionCall"]["args"].as_object().cloned())
                .map(|o| Value::Object(o).to_string()),
        };
        if let Some(p) = piece {
            if p == fragment {
                count += 1;
            }
            args.push_str(&p);
        }
    }
    (args, count)
}

#[tokio::test]
async fn runaway_streams_the_fragment_many_times() {
    const TIMES: usize = 20_000;
    for wire in ALL {
        let server = MockServer::start(vec![Reply::stream(vec![
            Step::tool_start(0, "call_r", "bash"),
            Step::tool_args(0, "{\"command\":\""),
            Step::Runaway {
                index: 0,
                fragment: "abcd".into(),
                times: TIMES,
            },
            Step::tool_args(0, "\"}"),
        ])])
        .await
        .unwrap();
        let read = read(wire, post(&server, wire, true).await).await;
        assert!(read.error.is_none(), "{wire:?}: {:?}", read.error);
        let (args, count) = runaway_args(wire, &read, "abcd");
        let v: Value = serde_json::from_str(&args).unwrap();
        assert_eq!(v["command"], "abcd".repeat(TIMES), "{wire:?}");
        match wire {
            // Delta formats: one delta per repetition.
            Wire::OpenAi | Wire::Anthropic => assert_eq!(count, TIMES, "{wire:?}"),
            // Whole-call formats: one enormous call.
            Wire::Ollama | Wire::Gemini => assert_eq!(count, 0),
        }
    }
}

#[tokio::test]
async fn endless_runaway_is_lazy_and_stops_when_the_client_hangs_up() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::stream(vec![
            Step::tool_start(0, "call_r", "bash"),
            Step::Runaway {
                index: 0,
                fragment: "abcd".into(),
                // Far more than any machine could hold.
                times: 1 << 40,
            },
        ])])
        .await
        .unwrap();
        let resp = post(&server, wire, true).await;
        let mut body = resp.bytes_stream();
        let mut got = 0usize;
        tokio::time::timeout(BOUND, async {
            while got < 2 * 1024 * 1024 {
                got += body.next().await.unwrap().unwrap().len();
            }
        })
        .await
        .unwrap();
        assert!(server.open_streams() >= 1);
        drop(body);
        tokio::time::timeout(BOUND, async {
            while server.open_streams() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{wire:?}: the server kept writing"));
    }
}

#[tokio::test]
async fn status_429_with_retry_after_in_each_error_shape() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::retry_after(429, 7, "slow down")])
            .await
            .unwrap();
        let resp = post(&server, wire, true).await;
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()["retry-after"], "7");
        assert_eq!(resp.headers()["content-type"], "application/json");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            wire.error_message(&body).as_deref(),
            Some("slow down"),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn status_500_without_retry_after() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::status(500, "boom")])
            .await
            .unwrap();
        let resp = post(&server, wire, false).await;
        assert_eq!(resp.status(), 500);
        assert!(resp.headers().get("retry-after").is_none());
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            wire.error_message(&body).as_deref(),
            Some("boom"),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn error_bodies_have_each_providers_shape() {
    let shapes = [
        (
            Wire::OpenAi,
            json!({"error": {"message": "no", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        ),
        (Wire::Ollama, json!({"error": "no"})),
        (
            Wire::Anthropic,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "no"}}),
        ),
        (
            Wire::Gemini,
            json!({"error": {"code": 429, "message": "no", "status": "RESOURCE_EXHAUSTED"}}),
        ),
    ];
    for (wire, want) in shapes {
        let server = MockServer::start(vec![Reply::status(429, "no")])
            .await
            .unwrap();
        let body: Value = post(&server, wire, true).await.json().await.unwrap();
        assert_eq!(body, want, "{wire:?}");
    }
}

#[tokio::test]
async fn exhausted_script_answers_500() {
    for wire in ALL {
        let server = MockServer::start(vec![Reply::text("only one")])
            .await
            .unwrap();
        let first = post(&server, wire, false).await;
        assert_eq!(first.status(), 200);
        let resp = post(&server, wire, true).await;
        assert_eq!(resp.status(), 500);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            wire.error_message(&body).as_deref(),
            Some("mock script exhausted"),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn stall_in_a_whole_answer_delays_the_response() {
    let server = MockServer::start(vec![Reply::stream(vec![
        Step::stall(400),
        Step::text("late"),
    ])])
    .await
    .unwrap();
    let started = Instant::now();
    let v: Value = post(&server, Wire::Anthropic, false)
        .await
        .json()
        .await
        .unwrap();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(390), "{took:?}");
    assert!(took < Duration::from_secs(5));
    assert_eq!(v["content"][0]["text"], "late");
}
