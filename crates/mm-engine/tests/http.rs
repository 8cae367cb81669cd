//! Every provider over real HTTP against `mm-mock`: answers, reasoning,
//! parallel tool calls, usage, every misbehaviour, and what was sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use mm_engine::{
    CancellationToken, EngineError, Message, Reasoning, STALL_NOTICE, StreamEvent, ToolCall, Usage,
};
use mm_mock::{Reply, Step};
use serde_json::{Value, json};

/// The whole-call wires: the mock sends a call in one frame.
fn whole_calls(p: &str) -> bool {
    matches!(p, "ollama" | "gemini")
}

/// Providers that send signed reasoning back.
fn signs(p: &str) -> bool {
    matches!(p, "anthropic" | "gemini")
}

/// Anthropic reports usage in every stream (`message_start`), zero when
/// the script gave none: drop that last event after checking it.
fn drop_zero_usage(p: &str, mut events: Vec<StreamEvent>) -> Vec<StreamEvent> {
    if p == "anthropic" {
        assert_eq!(events.pop(), Some(StreamEvent::Usage(Usage::default())));
    }
    events
}

fn is_made_id(id: &str) -> bool {
    id.strip_prefix("call_")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

async fn plain_answer(p: &str) {
    let server = mock(vec![Reply::stream(vec![
        Step::text("Hel"),
        Step::text("lo, world"),
    ])])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let events = drop_zero_usage(p, events);
    let g = r.unwrap();
    assert!(!g.cancelled);
    assert_eq!(g.message, Message::assistant("Hello, world"));
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Hel".into()),
            StreamEvent::Text("lo, world".into())
        ]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, expected_path(p, true));
    assert!(streamed(p, r));
    assert_key_only_in_headers(p, r);
    if p != "gemini" {
        assert_eq!(r.body["model"], "test-model");
    }
    // `thinking: off` asks for nothing.
    for k in ["reasoning_effort", "think", "thinking"] {
        assert!(
            r.body.get(k).is_none(),
            "{k} sent with thinking off: {}",
            r.body
        );
    }
    assert!(r.body["generationConfig"].get("thinkingConfig").is_none());
    // No tools declared: no tools sent.
    assert!(r.body.get("tools").is_none());
}

async fn reasoning(p: &str) {
    let server = mock(vec![Reply::stream(vec![
        Step::reasoning("Let me "),
        Step::Reasoning {
            text: "think.".into(),
            signature: Some("SIG-1".into()),
        },
        Step::text("Answer."),
    ])])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let (events, r) = run(&e, &ask("why?"), &[]).await;
    let events = drop_zero_usage(p, events);
    let g = r.unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::Reasoning("Let me ".into()),
            StreamEvent::Reasoning("think.".into()),
            StreamEvent::Text("Answer.".into()),
        ]
    );
    let signature = signs(p).then(|| "SIG-1".to_owned());
    assert_eq!(
        g.message,
        Message::Assistant {
            content: "Answer.".into(),
            reasoning: vec![Reasoning {
                text: "Let me think.".into(),
                signature,
                redacted: None,
            }],
            tool_calls: vec![],
        }
    );
}

/// Reasoning a server leaves in the answer's text, as `<think>` tags or as
/// gpt-oss's harmony channels, is reasoning on every wire.
async fn reasoning_written_as_text(p: &str) {
    for (pieces, reasoning, answer) in [
        (
            vec!["<thi", "nk>Short.</th", "ink>\n\nFour."],
            "Short.",
            "Four.",
        ),
        (
            vec![
                "<|channel|>analysis<|mes",
                "sage|>2+2 is 4.<|end|><|start|>assistant",
                "<|channel|>final<|message|>Four.<|ret",
                "urn|>",
            ],
            "2+2 is 4.",
            "Four.",
        ),
    ] {
        let server = mock(vec![Reply::stream(
            pieces.iter().map(|t| Step::text(*t)).collect(),
        )])
        .await;
        let e = engine(&cfg(p, &server.url()));
        let (events, r) = run(&e, &ask("2+2?"), &[]).await;
        let g = r.unwrap();
        let shown: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let thought: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Reasoning(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            (shown.as_str(), thought.as_str()),
            (answer, reasoning),
            "{p}"
        );
        assert_eq!(
            g.message,
            Message::Assistant {
                content: answer.into(),
                reasoning: vec![Reasoning {
                    text: reasoning.into(),
                    signature: None,
                    redacted: None,
                }],
                tool_calls: vec![],
            },
            "{p}"
        );
    }
}

async fn parallel_tool_calls(p: &str) {
    let server = mock(vec![Reply::stream(vec![
        Step::text("Checking."),
        Step::tool_start(0, "call-a", "read_file"),
        Step::tool_start(1, "call-b", "bash"),
        Step::tool_args(0, "{\"path\":"),
        Step::tool_args(1, "{\"command\":"),
        Step::tool_args(0, "\"a.txt\"}"),
        Step::tool_args(1, "\"ls -l\"}"),
        Step::Usage {
            prompt: 21,
            completion: 13,
        },
    ])])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let (events, r) = run(&e, &ask("look"), &tools()).await;
    let g = r.unwrap();
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = &g.message
    else {
        panic!()
    };
    assert_eq!(content, "Checking.");
    assert_eq!(tool_calls.len(), 2, "{tool_calls:?}");
    let (a, b) = (&tool_calls[0], &tool_calls[1]);
    if p == "ollama" {
        // Ollama sends no ids: the engine makes unique ones.
        assert!(is_made_id(&a.id) && is_made_id(&b.id), "{a:?} {b:?}");
        assert_ne!(a.id, b.id);
    } else {
        assert_eq!((a.id.as_str(), b.id.as_str()), ("call-a", "call-b"));
    }
    assert_eq!(
        (a.name.as_str(), a.arguments.as_str()),
        ("read_file", "{\"path\":\"a.txt\"}")
    );
    assert_eq!(
        (b.name.as_str(), b.arguments.as_str()),
        ("bash", "{\"command\":\"ls -l\"}")
    );
    assert_eq!(
        g.usage,
        Some(Usage {
            prompt_tokens: 21,
            completion_tokens: 13,
            cached_tokens: 0,
        })
    );

    // Events: the text, each call started (in index order) and finished
    // whole, usage last.
    assert_eq!(events[0], StreamEvent::Text("Checking.".into()));
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { index, id, name } => {
                Some((*index, id.clone(), name.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        vec![
            (0, a.id.clone(), "read_file".to_owned()),
            (1, b.id.clone(), "bash".to_owned())
        ]
    );
    let finished: Vec<ToolCall> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallFinished(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(&finished, tool_calls);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Usage(Usage {
            prompt_tokens: 21,
            completion_tokens: 13,
            cached_tokens: 0,
        }))
    );

    // The tool declarations went out in the provider's shape.
    let body = &server.requests()[0].body;
    let names: Vec<&str> = match p {
        "openai" | "openai-compatible" | "ollama" => body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect(),
        "anthropic" => {
            assert_eq!(
                body["tools"][0]["input_schema"]["required"],
                json!(["path"])
            );
            body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect()
        }
        _ => body["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect(),
    };
    assert_eq!(names, vec!["read_file", "bash"]);
}

fn history() -> Vec<Message> {
    vec![
        Message::system("sys"),
        Message::user("q1"),
        Message::Assistant {
            content: String::new(),
            reasoning: vec![Reasoning {
                text: "secret musing".into(),
                signature: None,
                redacted: None,
            }],
            tool_calls: vec![
                ToolCall {
                    id: "call-a".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a.txt\"}".into(),
                },
                ToolCall {
                    id: "call-b".into(),
                    name: "bash".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                },
            ],
        },
        Message::tool("call-a", "read_file", "A-CONTENT"),
        Message::tool("call-b", "bash", "B-OUTPUT"),
        Message::Assistant {
            content: "Both done.".into(),
            reasoning: vec![Reasoning {
                text: "signed musing".into(),
                signature: Some("SIG-XYZ".into()),
                redacted: None,
            }],
            tool_calls: vec![],
        },
        Message::user("q2"),
    ]
}

async fn history_sent(p: &str) {
    let server = mock(vec![Reply::text("ok")]).await;
    let e = engine(&cfg(p, &server.url()));
    let (_, r) = run(&e, &history(), &tools()).await;
    r.unwrap();
    let req = &server.requests()[0];
    let body = &req.body;
    let text = body.to_string();
    assert!(
        !text.contains("secret musing"),
        "unsigned reasoning sent back: {text}"
    );
    assert_eq!(text.contains("signed musing"), signs(p), "{text}");
    assert_key_only_in_headers(p, req);
    match p {
        "openai" | "openai-compatible" => {
            assert_eq!(
                body["messages"],
                json!([
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "q1"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call-a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                        {"id": "call-b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call-a", "content": "A-CONTENT"},
                    {"role": "tool", "tool_call_id": "call-b", "content": "B-OUTPUT"},
                    {"role": "assistant", "content": "Both done."},
                    {"role": "user", "content": "q2"},
                ])
            );
            assert_eq!(body["stream_options"], json!({"include_usage": true}));
            let max = if p == "openai" {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            assert_eq!(body[max], 4321);
        }
        "ollama" => {
            assert_eq!(
                body["messages"],
                json!([
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "q1"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"function": {"name": "read_file", "arguments": {"path": "a.txt"}}},
                        {"function": {"name": "bash", "arguments": {"command": "ls"}}},
                    ]},
                    {"role": "tool", "content": "A-CONTENT", "tool_name": "read_file"},
                    {"role": "tool", "content": "B-OUTPUT", "tool_name": "bash"},
                    {"role": "assistant", "content": "Both done."},
                    {"role": "user", "content": "q2"},
                ])
            );
            assert_eq!(body["options"]["num_ctx"], 12345);
            assert_eq!(body["options"]["num_predict"], 4321);
        }
        "anthropic" => {
            // With cacheControl on (the default): breakpoints on the
            // system prompt, the last turn and the user turn before it.
            let cached = json!({"type": "ephemeral"});
            assert_eq!(
                body["system"],
                json!([{"type": "text", "text": "sys", "cache_control": cached}])
            );
            assert_eq!(body["max_tokens"], 4321);
            assert_eq!(
                body["messages"],
                json!([
                    {"role": "user", "content": [{"type": "text", "text": "q1"}]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "call-a", "name": "read_file", "input": {"path": "a.txt"}},
                        {"type": "tool_use", "id": "call-b", "name": "bash", "input": {"command": "ls"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call-a", "content": "A-CONTENT"},
                        {"type": "tool_result", "tool_use_id": "call-b", "content": "B-OUTPUT", "cache_control": cached},
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "signed musing", "signature": "SIG-XYZ"},
                        {"type": "text", "text": "Both done."},
                    ]},
                    {"role": "user", "content": [{"type": "text", "text": "q2", "cache_control": cached}]},
                ])
            );
        }
        "gemini" => {
            assert_eq!(
                body["systemInstruction"],
                json!({"parts": [{"text": "sys"}]})
            );
            assert_eq!(body["generationConfig"]["maxOutputTokens"], 4321);
            assert_eq!(
                body["contents"],
                json!([
                    {"role": "user", "parts": [{"text": "q1"}]},
                    {"role": "model", "parts": [
                        {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}},
                        {"functionCall": {"name": "bash", "args": {"command": "ls"}}},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "read_file", "response": {"result": "A-CONTENT"}}},
                        {"functionResponse": {"name": "bash", "response": {"result": "B-OUTPUT"}}},
                    ]},
                    {"role": "model", "parts": [
                        {"text": "signed musing", "thought": true, "thoughtSignature": "SIG-XYZ"},
                        {"text": "Both done."},
                    ]},
                    {"role": "user", "parts": [{"text": "q2"}]},
                ])
            );
        }
        _ => unreachable!(),
    }
}

async fn stall_then_whole(p: &str) {
    let server = mock(vec![
        Reply::stream(vec![
            Step::text("partial "),
            Step::stall(8000),
            Step::text("never"),
        ]),
        Reply::text("whole answer"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.watchdog = 1;
    let e = engine(&c);
    let start = Instant::now();
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let took = start.elapsed();
    let events = drop_zero_usage(p, events);
    let g = r.unwrap();
    // The streamed part is discarded; the whole answer replaces it.
    assert_eq!(g.message, Message::assistant("whole answer"));
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("partial ".into()),
            StreamEvent::Notice(STALL_NOTICE.into()),
            StreamEvent::Text("whole answer".into()),
        ]
    );
    assert_eq!(STALL_NOTICE, "stream stalled; retrying without streaming");
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_secs(6), // cut long before the 8 s stall ends
        "{took:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(streamed(p, &reqs[0]));
    assert!(!streamed(p, &reqs[1]));
    assert_eq!(reqs[1].path, expected_path(p, false));
    assert_eq!(reqs[1].body["messages"], reqs[0].body["messages"]);
    assert_eq!(reqs[1].body["contents"], reqs[0].body["contents"]);
}

/// What a server sends to keep a connection open without saying
/// anything: a comment, a ping, an empty delta.
fn keep_alives(p: &str) -> Vec<&'static str> {
    match p {
        "ollama" => vec![
            r#"{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":false}"#,
        ],
        "anthropic" => vec!["event: ping\ndata: {\"type\": \"ping\"}"],
        "gemini" => vec![": keep-alive"],
        _ => vec![
            ": keep-alive",
            r#"data: {"id":"k","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}"#,
        ],
    }
}

async fn keep_alives_do_not_feed_the_watchdog(p: &str) {
    // Text, then only keep-alives, one every 300 ms, for longer than the
    // watchdog's second: the stream is cut as if it were silent.
    let mut steps = vec![Step::text("partial ")];
    for _ in 0..12 {
        for line in keep_alives(p) {
            steps.push(Step::raw(line));
        }
        steps.push(Step::stall(300));
    }
    steps.push(Step::text("never"));
    let server = mock(vec![Reply::stream(steps), Reply::text("whole answer")]).await;
    let mut c = cfg(p, &server.url());
    c.watchdog = 1;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let events = drop_zero_usage(p, events);
    assert_eq!(r.unwrap().message, Message::assistant("whole answer"));
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("partial ".into()),
            StreamEvent::Notice(STALL_NOTICE.into()),
            StreamEvent::Text("whole answer".into()),
        ]
    );
    assert_eq!(server.requests().len(), 2);
}

async fn first_token_stall(p: &str) {
    let server = mock(vec![
        Reply::stream(vec![Step::stall(8000), Step::text("late")]),
        Reply::text("on time"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.watchdog = 1;
    let e = engine(&c);
    let start = Instant::now();
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert!(start.elapsed() < Duration::from_secs(6));
    let events = drop_zero_usage(p, events);
    assert_eq!(r.unwrap().message, Message::assistant("on time"));
    assert_eq!(
        events,
        vec![
            StreamEvent::Notice(STALL_NOTICE.into()),
            StreamEvent::Text("on time".into())
        ]
    );
}

async fn stall_and_retry_fails(p: &str) {
    let server = mock(vec![
        Reply::stream(vec![Step::stall(8000)]),
        Reply::status(500, "boom"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.watchdog = 1;
    c.retries = 3;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let err = r.unwrap_err();
    assert_eq!(
        err.error,
        EngineError::Stalled {
            provider: p.into(),
            seconds: 1,
            detail: "the model server answered 500: boom".into(),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "the {p} stream sent no content for 1s; the retry without streaming failed too: the model server answered 500: boom"
        )
    );
    assert_eq!(events, vec![StreamEvent::Notice(STALL_NOTICE.into())]);
    // One non-streaming retry only.
    assert_eq!(server.requests().len(), 2);
}

async fn mid_stream_drop(p: &str) {
    let server = mock(vec![
        Reply::stream(vec![Step::text("part"), Step::Drop]),
        Reply::text("never"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.retries = 2;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let err = r.unwrap_err();
    match &err.error {
        EngineError::Stream(m) => assert_eq!(
            m,
            &format!(
                "the {p} server closed the connection in the middle of the answer (what was received is kept)"
            )
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(err.partial, Some(Message::assistant("part")));
    assert_eq!(events, vec![StreamEvent::Text("part".into())]);
    // Text was shown: a retry would repeat it, so there is none.
    assert_eq!(server.requests().len(), 1);
}

async fn early_drop_is_retried(p: &str) {
    let server = mock(vec![Reply::stream(vec![Step::Drop]), Reply::text("ok")]).await;
    let mut c = cfg(p, &server.url());
    c.retries = 1;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let events = drop_zero_usage(p, events);
    assert_eq!(r.unwrap().message, Message::assistant("ok"));
    assert_eq!(events, vec![StreamEvent::Text("ok".into())]);
    assert_eq!(server.requests().len(), 2);
}

async fn malformed_line(p: &str) {
    let raw = if p == "ollama" {
        "{not json"
    } else {
        "data: {not json"
    };
    let server = mock(vec![Reply::stream(vec![
        Step::text("ok"),
        Step::raw(raw),
        Step::text("never"),
    ])])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let err = r.unwrap_err();
    match &err.error {
        EngineError::Stream(m) => {
            assert!(
                m.starts_with(&format!("malformed stream data from {p}: ")),
                "{m}"
            );
            assert!(m.ends_with(": {not json"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.partial, Some(Message::assistant("ok")));
    assert_eq!(events, vec![StreamEvent::Text("ok".into())]);
}

async fn rate_limited_then_ok(p: &str) {
    let server = mock(vec![
        Reply::retry_after(429, 1, "slow down"),
        Reply::text("ok"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.retries = 2;
    let e = engine(&c);
    let start = Instant::now();
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let took = start.elapsed();
    assert_eq!(r.unwrap().message, Message::assistant("ok"));
    // Retry-After: 1 is honoured (the own backoff would wait 250 ms).
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(server.requests().len(), 2);
    // And said, in one line: how long and why.
    assert_eq!(
        events.first(),
        Some(&StreamEvent::Notice(
            "the model server answered 429: slow down; retrying in 1s, as the server asks \
             (Retry-After)"
                .into()
        ))
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_max_retry_wait_fails_at_once() {
    let server = mock(vec![
        Reply::retry_after(429, 100_000, "slow down"),
        Reply::text("never asked for"),
    ])
    .await;
    let mut c = cfg("openai", &server.url());
    c.retries = 3;
    c.max_retry_wait = 60;
    let e = engine(&c);
    let start = Instant::now();
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert!(start.elapsed() < Duration::from_secs(5));
    let err = r.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the model server answered 429: slow down; it asks to wait 100000s before a retry \
         (Retry-After), longer than maxRetryWait (60s), so mm does not retry"
    );
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(server.requests().len(), 1);
}

async fn rate_limited_until_a_date(p: &str) {
    let server = mock(vec![
        Reply::retry_at(429, 2, "slow down"),
        Reply::text("ok"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.retries = 2;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(r.unwrap().message, Message::assistant("ok"));
    assert_eq!(server.requests().len(), 2);
    // The date is a wait the server chose: said, like one in seconds.
    let Some(StreamEvent::Notice(notice)) = events.first() else {
        panic!("{events:?}")
    };
    let wait = notice
        .strip_prefix("the model server answered 429: slow down; retrying in ")
        .and_then(|rest| rest.strip_suffix("s, as the server asks (Retry-After)"))
        .unwrap_or_else(|| panic!("{notice}"));
    assert!(["0", "1", "2"].contains(&wait), "{notice}");
}

#[tokio::test]
async fn a_retry_after_date_past_max_retry_wait_fails_at_once() {
    let server = mock(vec![
        Reply::retry_at(503, 3600, "busy"),
        Reply::text("never asked for"),
    ])
    .await;
    let mut c = cfg("openai-compatible", &server.url());
    c.retries = 3;
    c.max_retry_wait = 60;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(
        r.unwrap_err().to_string(),
        "the model server answered 503: busy; it asks to wait 3600s before a retry \
         (Retry-After), longer than maxRetryWait (60s), so mm does not retry"
    );
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(server.requests().len(), 1);
}

async fn server_errors_exhausted(p: &str) {
    let server = mock(vec![
        Reply::status(500, "boom"),
        Reply::status(503, "boom"),
        Reply::status(500, "boom"),
        Reply::text("never"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.retries = 2;
    let e = engine(&c);
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    let err = r.unwrap_err();
    assert_eq!(
        err.error,
        EngineError::Status {
            status: 500,
            message: "boom".into()
        }
    );
    assert_eq!(err.to_string(), "the model server answered 500: boom");
    assert!(events.is_empty());
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.remaining(), 1);
}

async fn client_errors(p: &str) {
    let server = mock(vec![
        Reply::status(400, "bad thing"),
        Reply::status(400, "This model's maximum context length is 8192 tokens"),
        Reply::text("never"),
    ])
    .await;
    let mut c = cfg(p, &server.url());
    c.retries = 3;
    let e = engine(&c);
    let (_, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(
        r.unwrap_err().error,
        EngineError::Status {
            status: 400,
            message: "bad thing".into()
        }
    );
    assert_eq!(server.requests().len(), 1, "4xx is not retried");
    let (_, r) = run(&e, &ask("hi"), &[]).await;
    assert_eq!(
        r.unwrap_err().error,
        EngineError::ContextLength {
            message: "This model's maximum context length is 8192 tokens".into(),
            window: Some(8192),
            prompt: None,
        }
    );
    assert_eq!(server.requests().len(), 2);
}

/// The argument text a runaway script produces, as far as `n` characters.
fn runaway_text(prefix: &str, fragment: &str, n: usize) -> String {
    let mut s = prefix.to_owned();
    while s.chars().count() < n {
        s.push_str(fragment);
    }
    s.chars().take(n).collect()
}

/// The runaway call's name. A whole-call frame caught while still arriving
/// has its name only when the server writes it before the arguments: real
/// Ollama and Gemini do (wire unit tests check that), the mock sorts JSON
/// keys and writes `arguments`/`args` first.
fn assert_name(p: &str, name: &str) {
    if whole_calls(p) {
        assert!(name == "write_file" || name.is_empty(), "{name}");
    } else {
        assert_eq!(name, "write_file");
    }
}

async fn wait_closed(server: &mm_mock::MockServer) {
    let start = Instant::now();
    while server.open_streams() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the stream was not dropped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn runaway_pattern(p: &str) {
    let prefix = "{\"content\":\"";
    let server = mock(vec![Reply::stream(vec![
        Step::tool_start(0, "run-0", "write_file"),
        Step::tool_args(0, prefix),
        Step::Runaway {
            index: 0,
            fragment: "ab12".into(),
            times: 1_000_000,
        },
    ])])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let start = Instant::now();
    let (_, r) = run(&e, &ask("write"), &tools()).await;
    assert!(start.elapsed() < Duration::from_secs(10));
    let err = r.unwrap_err();
    let EngineError::Runaway { text } = &err.error else {
        panic!("{:?}", err.error)
    };
    // 12 characters of prefix, then 64 repeats fill the 256-character
    // window. A whole-call wire sends the call in one frame that is still
    // arriving: the guard reads it character by character and stops at the
    // same point, however the bytes were cut.
    assert_eq!(
        text,
        "[error: the model's tool call ran away: its arguments repeat the same pattern (268 characters so far: \"ab12\") — generation stopped; rephrase the request, or try another model]"
    );
    let n = 268;
    let so_far = runaway_text(prefix, "ab12", n);
    let tail: String = so_far.chars().skip(n - 4).collect();
    assert_eq!(
        text,
        &format!(
            "[error: the model's tool call ran away: its arguments repeat the same pattern ({n} characters so far: {}) — generation stopped; rephrase the request, or try another model]",
            serde_json::to_string(&tail).unwrap()
        )
    );
    assert_eq!(err.to_string(), *text);
    // The runaway call is in the partial message with its text so far.
    let call = last_call(err.partial.as_ref().unwrap());
    assert_name(p, &call.name);
    assert_eq!(call.arguments, so_far);
    if !whole_calls(p) {
        assert_eq!(call.id, "run-0");
    }
    wait_closed(&server).await;
}

async fn runaway_size(p: &str) {
    let prefix = "{\"content\":\"";
    // 100 characters without a shorter period: only the size limit trips.
    let fragment: String = (0..100u32)
        .map(|i| {
            char::from(
                b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                    [((i * i + 7 * i) % 62) as usize],
            )
        })
        .collect();
    assert!(mm_engine::runaway::check(&fragment.repeat(5), 500).is_none());
    let server = mock(vec![Reply::stream(vec![
        Step::tool_start(0, "big-0", "write_file"),
        Step::tool_args(0, prefix),
        Step::Runaway {
            index: 0,
            fragment: fragment.clone(),
            times: 100_000,
        },
    ])])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let (_, r) = run(&e, &ask("write"), &tools()).await;
    let err = r.unwrap_err();
    let EngineError::Runaway { text } = &err.error else {
        panic!("{:?}", err.error)
    };
    let n = runaway_count(text);
    if whole_calls(p) {
        // Read character by character: the first one past the limit.
        assert_eq!(n, 262_145);
    } else {
        // Checked per fragment: 12 + 100 k > 262,144 first at k = 2622.
        assert_eq!(n, 262_212);
    }
    assert_eq!(
        text,
        &format!(
            "[error: the model's tool call ran away: its arguments passed 256 KiB ({n} bytes so far) — generation stopped; rephrase the request, or try another model]"
        )
    );
    let call = last_call(err.partial.as_ref().unwrap());
    assert_name(p, &call.name);
    assert_eq!(call.arguments, runaway_text(prefix, &fragment, n));
    wait_closed(&server).await;
}

/// After a runaway the agent answers the call with the not-run result; the
/// next request must pair them (Anthropic needs the broken input as an
/// object).
async fn history_after_runaway(p: &str) {
    let server = mock(vec![
        Reply::stream(vec![
            Step::tool_start(0, "run-0", "write_file"),
            Step::tool_args(0, "{\"content\":\""),
            Step::Runaway {
                index: 0,
                fragment: "la ".into(),
                times: 100_000,
            },
        ]),
        Reply::text("sorry"),
    ])
    .await;
    let e = engine(&cfg(p, &server.url()));
    let (_, r) = run(&e, &ask("write"), &tools()).await;
    let partial = r.unwrap_err().partial.unwrap();
    let id = last_call(&partial).id.clone();
    let mut next = ask("write");
    next.push(partial);
    next.push(Message::tool(
        id.clone(),
        "write_file",
        "[not run: the turn was stopped]",
    ));
    let (_, r) = run(&e, &next, &tools()).await;
    assert_eq!(r.unwrap().message, Message::assistant("sorry"));
    let body = &server.requests()[1].body;
    match p {
        "openai" | "openai-compatible" => {
            assert_eq!(body["messages"][2]["tool_calls"][0]["id"], json!(id));
            assert_eq!(body["messages"][3]["tool_call_id"], json!(id));
            assert_eq!(
                body["messages"][3]["content"],
                "[not run: the turn was stopped]"
            );
        }
        "ollama" => {
            assert_eq!(
                body["messages"][2]["tool_calls"][0]["function"]["arguments"],
                json!({})
            );
            assert_eq!(body["messages"][3]["tool_name"], "write_file");
        }
        "anthropic" => {
            let call = &body["messages"][1]["content"][0];
            assert_eq!(call["type"], "tool_use");
            assert_eq!(call["id"], json!(id));
            assert_eq!(call["input"], json!({}));
            assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], json!(id));
        }
        "gemini" => {
            assert_eq!(
                body["contents"][1]["parts"][0]["functionCall"]["args"],
                json!({})
            );
            assert_eq!(
                body["contents"][2]["parts"][0]["functionResponse"]["response"]["result"],
                "[not run: the turn was stopped]"
            );
        }
        _ => unreachable!(),
    }
}

async fn cancel_keeps_partial(p: &str) {
    let server = mock(vec![Reply::stream(vec![
        Step::text("part"),
        Step::stall(10_000),
        Step::text("never"),
    ])])
    .await;
    let mut c = cfg(p, &server.url());
    c.watchdog = 30;
    let e = engine(&c);
    let cancel = CancellationToken::new();
    let trip = cancel.clone();
    let mut events = Vec::new();
    let mut on_event = |ev: StreamEvent| {
        if matches!(ev, StreamEvent::Text(_)) {
            trip.cancel();
        }
        events.push(ev);
    };
    let start = Instant::now();
    let g = tokio::time::timeout(BOUND, e.generate(&ask("hi"), &[], &mut on_event, &cancel))
        .await
        .unwrap()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(g.cancelled);
    assert_eq!(g.message, Message::assistant("part"));
    assert_eq!(events, vec![StreamEvent::Text("part".into())]);
    wait_closed(&server).await;

    // Cancelled before anything: an empty partial, no request waits.
    let pre = CancellationToken::new();
    pre.cancel();
    let mut ignore = |_e: StreamEvent| {};
    let g = e
        .generate(&ask("hi"), &[], &mut ignore, &pre)
        .await
        .unwrap();
    assert!(g.cancelled);
    assert_eq!(g.message, Message::assistant(""));
}

async fn summarize(p: &str) {
    let server = mock(vec![Reply::text("SUMMARY")]).await;
    let e = engine(&cfg(p, &server.url()));
    let s = tokio::time::timeout(
        BOUND,
        e.summarize(&history(), "Summarize now.", &CancellationToken::new()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(s, "SUMMARY");
    let req = &server.requests()[0];
    let text = req.body.to_string();
    assert!(req.body.get("tools").is_none(), "{text}");
    for wire_key in [
        "tool_calls",
        "tool_use",
        "tool_result",
        "functionCall",
        "functionResponse",
        "tool_call_id",
    ] {
        assert!(
            !text.contains(wire_key),
            "{wire_key} in a summary request: {text}"
        );
    }
    assert!(text.contains("Summarize now."));
    assert!(
        text.contains("[tool result of read_file]\\nA-CONTENT"),
        "{text}"
    );
    assert!(
        text.contains("[tool call bash: {\\\"command\\\":\\\"ls\\\"}]"),
        "{text}"
    );
}

async fn thinking_setting(p: &str) {
    let server = mock(vec![Reply::text("ok")]).await;
    let mut c = cfg(p, &server.url());
    c.thinking = mm_config::Thinking::High;
    let e = engine(&c);
    run(&e, &ask("hi"), &[]).await.1.unwrap();
    let body = &server.requests()[0].body;
    match p {
        "openai" | "openai-compatible" => assert_eq!(body["reasoning_effort"], "high"),
        // Not a gpt-oss model: Ollama takes only a boolean.
        "ollama" => assert_eq!(body["think"], Value::Bool(true)),
        // 16384 wanted, capped at half of maxTokens (4321).
        "anthropic" => assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2160})
        ),
        "gemini" => assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({"includeThoughts": true, "thinkingBudget": 24576})
        ),
        _ => unreachable!(),
    }
}

async fn unreachable_server(p: &str) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}");
    let mut c = cfg(p, &url);
    c.retries = 1;
    let e = engine(&c);
    let start = Instant::now();
    let (events, r) = run(&e, &ask("hi"), &[]).await;
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(events.is_empty());
    let err = r.unwrap_err();
    let base = c.base_url.clone().unwrap();
    assert_eq!(
        err.error,
        EngineError::Unreachable {
            provider: p.into(),
            url: base.clone()
        }
    );
    let line = err.to_string();
    assert_eq!(
        line,
        format!(
            "cannot reach {p} at {base} (is the server running?); change it with `model`/`baseURL` in your config file (~/.config/mm/config.yaml), MM_MODEL / MM_BASE_URL, or --model / --base-url"
        )
    );
    assert!(!line.contains('\n'));
    if let Some(k) = key_of(p) {
        assert!(!line.contains(k));
    }
}

macro_rules! per_provider {
    ($($module:ident => $provider:literal),* $(,)?) => {$(
        mod $module {
            const P: &str = $provider;
            #[tokio::test] async fn plain_answer() { super::plain_answer(P).await }
            #[tokio::test] async fn reasoning() { super::reasoning(P).await }
            #[tokio::test] async fn reasoning_written_as_text() { super::reasoning_written_as_text(P).await }
            #[tokio::test] async fn parallel_tool_calls_and_usage() { super::parallel_tool_calls(P).await }
            #[tokio::test] async fn history_sent() { super::history_sent(P).await }
            #[tokio::test] async fn stall_then_whole() { super::stall_then_whole(P).await }
            #[tokio::test] async fn first_token_stall() { super::first_token_stall(P).await }
            #[tokio::test] async fn keep_alives_do_not_feed_the_watchdog() { super::keep_alives_do_not_feed_the_watchdog(P).await }
            #[tokio::test] async fn stall_and_retry_fails() { super::stall_and_retry_fails(P).await }
            #[tokio::test] async fn mid_stream_drop() { super::mid_stream_drop(P).await }
            #[tokio::test] async fn early_drop_is_retried() { super::early_drop_is_retried(P).await }
            #[tokio::test] async fn malformed_line() { super::malformed_line(P).await }
            #[tokio::test] async fn rate_limited_then_ok() { super::rate_limited_then_ok(P).await }
            #[tokio::test] async fn rate_limited_until_a_date() { super::rate_limited_until_a_date(P).await }
            #[tokio::test] async fn server_errors_exhausted() { super::server_errors_exhausted(P).await }
            #[tokio::test] async fn client_errors() { super::client_errors(P).await }
            #[tokio::test] async fn runaway_pattern() { super::runaway_pattern(P).await }
            #[tokio::test] async fn runaway_size() { super::runaway_size(P).await }
            #[tokio::test] async fn history_after_runaway() { super::history_after_runaway(P).await }
            #[tokio::test] async fn cancel_keeps_partial() { super::cancel_keeps_partial(P).await }
            #[tokio::test] async fn summarize() { super::summarize(P).await }
            #[tokio::test] async fn thinking_setting() { super::thinking_setting(P).await }
            #[tokio::test] async fn unreachable_server() { super::unreachable_server(P).await }
        }
    )*};
}

per_provider! {
    ollama => "ollama",
    openai => "openai",
    openai_compatible => "openai-compatible",
    anthropic => "anthropic",
    gemini => "gemini",
}
