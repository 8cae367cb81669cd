//! Model servers that misbehave, met through `mm-repl -p` against the mock
//! model: keep-alives that say nothing, a window no model has, a
//! `Retry-After` given as a date.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, text};
use mm_mock::{Reply, Route, Step};

/// The config every test here starts from: the mock, `extra` after it.
fn config(w: &World, extra: &str) -> String {
    format!(
        "model: openai-compatible/test\nbaseURL: {}/v1\nlsp:\n  servers: []\n{extra}",
        w.server.url()
    )
}

/// A stream that answers a little, then only keeps the connection open,
/// a `: keep-alive` comment and an empty delta every second, for longer
/// than the test's bound.
fn keeps_alive() -> Reply {
    let mut steps = vec![Step::text("Let me think")];
    for _ in 0..40 {
        steps.push(Step::raw(": keep-alive"));
        steps.push(Step::raw(
            r#"data: {"id":"k","object":"chat.completion.chunk","created":1,"model":"test","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}"#,
        ));
        steps.push(Step::stall(1000));
    }
    steps.push(Step::text(" never"));
    Reply::stream(steps)
}

#[test]
fn keep_alives_do_not_keep_a_stuck_model_running() {
    // The request without streaming, after the cut, meets the same stuck
    // model: the turn ends with the watchdog's line (run() panics if mm
    // is still running at the test's bound).
    let w = World::new(vec![keeps_alive(), keeps_alive()], "");
    w.write_config(&config(&w, "retries: 0\nwatchdog: 2\n"));
    let out = w.run(&["-p", "think hard"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("stream stalled; retrying without streaming"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "error: the openai-compatible stream sent no content for 2s; the retry without \
             streaming failed too: no answer within 10s"
        ),
        "{stderr}"
    );
    assert_eq!(w.chats().len(), 2);
}

#[test]
fn a_window_no_model_has_is_not_taken() {
    // llama-server's /props with a field never set.
    let w = World::serving(
        vec![Reply::text("Hello.")],
        "",
        mm_mock::Options {
            routes: vec![Route::get(
                "/props",
                serde_json::json!({"default_generation_settings": {"n_ctx": u64::MAX}}),
            )],
            ..mm_mock::Options::default()
        },
    );
    let out = w.run(&["--print-config"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(
        printed.contains("contextWindow       = auto: 32768 (default: the server did not say)"),
        "{printed}"
    );
    // A question: the window it reports is the fallback.
    let out = w.run(&["-p", "hi", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let tokens = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "tokens")
        .expect("a tokens line");
    assert_eq!(tokens["window"], 32768, "{tokens}");
}

#[test]
fn a_retry_after_date_is_honoured() {
    let w = World::new(
        vec![Reply::retry_at(429, 2, "slow down"), Reply::text("Done.")],
        "",
    );
    w.write_config(&config(&w, "retries: 2\n"));
    let out = w.run(&["-p", "hi"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "Done.\n");
    assert!(
        stderr.contains("the model server answered 429: slow down; retrying in ")
            && stderr.contains("s, as the server asks (Retry-After)"),
        "{stderr}"
    );

    // A date further than maxRetryWait: one line, no retry.
    let w = World::new(vec![Reply::retry_at(503, 7200, "down for maintenance")], "");
    w.write_config(&config(&w, "retries: 2\nmaxRetryWait: 60\n"));
    let out = w.run(&["-p", "hi"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains(
            "the model server answered 503: down for maintenance; it asks to wait 7200s before \
             a retry (Retry-After), longer than maxRetryWait (60s), so mm does not retry"
        ),
        "{stderr}"
    );
    assert_eq!(w.chats().len(), 1);
}

#[test]
fn a_small_window_never_stops_a_question_before_the_server_sees_it() {
    // mm's own guess puts its prompt and tools alone past 256 tokens; the
    // server, which counts with its own tokenizer, is the one to say.
    let w = World::new(vec![Reply::text("4")], "");
    w.write_config(&config(&w, "retries: 0\ncontextWindow: 256\n"));
    let out = w.run(&["-p", "what is 2+2?"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "4\n");
    assert!(!stderr.contains("does not fit"), "{stderr}");
    let chats = w.chats();
    assert_eq!(chats.len(), 1);
    assert!(
        chats[0].to_string().contains("what is 2+2?"),
        "the question was sent"
    );
}
