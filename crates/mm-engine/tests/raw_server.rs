//! Server behaviours the mock does not script, from a raw HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use mm_engine::{EngineError, Message, StreamEvent};

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
    let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
        : keep-alive\r\n\r\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}";
    let url = serve_raw(vec![sse.to_owned()]).await;
    let e = engine(&cfg("openai-compatible", &url));
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(r.unwrap().message, Message::assistant("ab"));
    assert_eq!(events.len(), 2);
}
