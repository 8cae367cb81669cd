//! Server behaviours the mock does not script, from a raw HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use mm_engine::{EngineError, Message, StreamEvent, ToolCall};
use mm_mock::Reply;

#[tokio::test]
async fn a_whole_json_answer_to_a_streaming_request_is_accepted() {
    let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"<think>hm</think>whole"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
    let url = serve_raw(vec![http_response("200 OK", "application/json", body)]).await;
    let e = engine(&cfg("openai-compatible", &url));
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let g = r.unwrap();
    assert_eq!(common::content(&g.message), "whole");
    assert_eq!(
        events[..2],
        [
            StreamEvent::Reasoning("hm".into()),
            StreamEvent::Text("whole".into())
        ]
    );
}

#[tokio::test]
async fn an_error_object_with_status_200_is_an_error() {
    let body = r#"{"error":{"message":"model is not loaded","type":"server_error"}}"#;
    let url = serve_raw(vec![http_response(
        "200 OK",
        "application/json; charset=utf-8",
        body,
    )])
    .await;
    let e = engine(&cfg("openai-compatible", &url));
    let (_, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(
        r.unwrap_err().error,
        EngineError::Stream(
            "openai-compatible reported an error mid-stream: model is not loaded".into()
        )
    );
}

#[tokio::test]
async fn rate_limit_without_retry_after_uses_the_backoff() {
    let url = serve_raw(vec![
        http_response("429 Too Many Requests", "text/plain", ""),
        http_response("429 Too Many Requests", "text/plain", "try later"),
    ])
    .await;
    let mut c = cfg("openai-compatible", &url);
    c.retries = 1;
    let e = engine(&c);
    let start = Instant::now();
    let (_, r) = run(&e, &ask("hi"), &[]).await;
    let took = start.elapsed();
    // 250 ms of backoff, far less than any Retry-After.
    assert!(
        took >= Duration::from_millis(240) && took < Duration::from_secs(2),
        "{took:?}"
    );
    // A body that is not the provider's error shape is shown as it is.
    assert_eq!(
        r.unwrap_err().error,
        EngineError::Status {
            status: 429,
            message: "try later".into()
        }
    );
}

#[tokio::test]
async fn an_empty_error_body_shows_the_status_reason() {
    let url = serve_raw(vec![http_response("404 Not Found", "text/plain", "")]).await;
    let e = engine(&cfg("ollama", &url));
    let (_, r) = run(&e, &[Message::user("hi")], &[]).await;
    assert_eq!(
        r.unwrap_err().to_string(),
        "the model server answered 404: Not Found"
    );
}

#[tokio::test]
async fn sse_with_crlf_comments_and_no_final_blank_line() {
    // Some servers send no `[DONE]`: the finish_reason ends the answer.
    let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
        : keep-alive\r\n\r\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}";
    let url = serve_raw(vec![sse.to_owned()]).await;
    let e = engine(&cfg("openai-compatible", &url));
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(r.unwrap().message, Message::assistant("ab"));
    assert_eq!(events.len(), 2);
}

const PROVIDERS: [&str; 5] = [
    "ollama",
    "openai",
    "openai-compatible",
    "anthropic",
    "gemini",
];

/// A 200 answer in the provider's stream framing, ending cleanly.
fn stream_response(p: &str, body: &str) -> String {
    let kind = if p == "ollama" {
        "application/x-ndjson"
    } else {
        "text/event-stream"
    };
    http_response("200 OK", kind, body)
}

/// A complete answer "ok", with the provider's end signal.
fn complete_ok(p: &str) -> String {
    match p {
        "ollama" => concat!(
            r#"{"message":{"role":"assistant","content":"ok"},"done":false}"#,
            "\n",
            r#"{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}"#,
            "\n"
        )
        .to_owned(),
        "anthropic" => concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        )
        .to_owned(),
        "gemini" => "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}]}\n\n".to_owned(),
        _ => "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_owned(),
    }
}

/// An answer cut short, cleanly, before its end signal: a tool call half
/// streamed (whole-call wires: some text).
fn cut_short(p: &str) -> String {
    match p {
        "ollama" => concat!(
            r#"{"message":{"role":"assistant","content":"Hel"},"done":false}"#,
            "\n"
        )
        .to_owned(),
        "anthropic" => concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \\\"rm -rf bu\"}}\n\n",
        )
        .to_owned(),
        "gemini" => "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"},\"index\":0}]}\n\n".to_owned(),
        _ => "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\": \\\"rm -rf bu\"}}]},\"finish_reason\":null}]}\n\n".to_owned(),
    }
}

/// Frames that show nothing, then a clean end without the end signal.
fn nothing_then_end(p: &str) -> String {
    match p {
        "ollama" => String::new(),
        "anthropic" => "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n".to_owned(),
        "gemini" => ": nothing yet\n\n".to_owned(),
        _ => "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n".to_owned(),
    }
}

#[tokio::test]
async fn a_stream_ending_before_its_end_signal_is_broken_and_its_call_not_finished() {
    for p in PROVIDERS {
        let url = serve_raw(vec![
            stream_response(p, &cut_short(p)),
            stream_response(p, &complete_ok(p)),
        ])
        .await;
        let mut c = cfg(p, &url);
        c.retries = 2;
        let e = engine(&c);
        let (events, r) = run(&e, &ask("clean up"), &tools()).await;
        let err = r.unwrap_err();
        assert_eq!(
            err.error,
            EngineError::Stream(format!(
                "the {p} stream broke off: it ended before the answer was complete (what was received is kept)"
            )),
            "{p}"
        );
        // The partial is kept as it is; the half call was never finished,
        // so nothing runs it.
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolCallFinished(_))),
            "{p}: {events:?}"
        );
        let partial = err.partial.unwrap();
        match p {
            "ollama" | "gemini" => assert_eq!(partial, Message::assistant("Hel"), "{p}"),
            _ => {
                let id = if p == "anthropic" {
                    "toolu_1"
                } else {
                    "call_1"
                };
                assert_eq!(
                    *last_call(&partial),
                    ToolCall {
                        id: id.into(),
                        name: "bash".into(),
                        arguments: "{\"command\": \"rm -rf bu".into(),
                    },
                    "{p}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_stream_ending_before_anything_was_shown_is_retried() {
    for p in PROVIDERS {
        let url = serve_raw(vec![
            stream_response(p, &nothing_then_end(p)),
            stream_response(p, &complete_ok(p)),
        ])
        .await;
        let mut c = cfg(p, &url);
        c.retries = 1;
        let e = engine(&c);
        let (events, r) = run(&e, &ask("hi"), &[]).await;
        assert_eq!(r.unwrap().message, Message::assistant("ok"), "{p}");
        assert_eq!(texts(&events), "ok", "{p}");

        // Without retries left it is the same broken-stream error.
        let url = serve_raw(vec![stream_response(p, &nothing_then_end(p))]).await;
        let e = engine(&cfg(p, &url));
        let (_, r) = run(&e, &ask("hi"), &[]).await;
        assert_eq!(
            r.unwrap_err().error,
            EngineError::Stream(format!(
                "the {p} stream broke off: it ended before the answer was complete"
            )),
            "{p}"
        );
    }
}

#[tokio::test]
async fn redirects_are_not_followed_and_no_key_leaves() {
    for p in ["anthropic", "gemini", "openai"] {
        // The other server records whatever reaches it.
        let elsewhere = mock(vec![Reply::text("stolen")]).await;
        let path = expected_path(p, true);
        let sep = if path.contains('?') { '&' } else { '?' };
        let location = format!("{}{path}{sep}key=from-the-redirect", elsewhere.url());
        let url = serve_raw(vec![format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )])
        .await;
        let e = engine(&cfg(p, &url));
        let (events, r) = run(&e, &ask("hi"), &[]).await;
        // Followed, the request would carry `x-api-key` / `x-goog-api-key`
        // there (reqwest strips only `authorization` across hosts).
        assert!(
            elsewhere.requests().is_empty(),
            "{p}: the request followed the redirect with {:?}",
            elsewhere.requests()[0].headers
        );
        assert!(events.is_empty(), "{p}");
        let err = r.unwrap_err();
        let masked = format!("{}{path}{sep}key=***", elsewhere.url());
        assert_eq!(
            err.error,
            EngineError::Redirect {
                status: 307,
                location: masked.clone()
            },
            "{p}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "the model server answered 307 (a redirect to {masked}); mm does not follow redirects, so that keys go only to the configured address: set `baseURL` to the new address"
            )
        );
    }
}
