//! Calls the server enforces (`constrainedCalls`): each local server's
//! constraint parameters, the prompt otherwise byte-identical to an
//! unconstrained request's, thinking off, the value turned into a native
//! call or a streamed answer, and the template caps read from the
//! window question.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mm_config::{ContextWindow, Thinking};
use mm_engine::{Engine, Message, StreamEvent, constrained::calls_schema};
use mm_mock::{MockServer, Options, Reply, Route, Step};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn constrained(
    e: &Engine,
    messages: &[Message],
) -> (
    Vec<StreamEvent>,
    Result<mm_engine::Generation, mm_engine::GenerateError>,
) {
    let mut events = Vec::new();
    let mut on_event = |ev: StreamEvent| events.push(ev);
    let r = e
        .generate_calls(messages, &tools(), &mut on_event, &CancellationToken::new())
        .await;
    (events, r)
}

/// A request body without the keys a constraint may add or change.
fn without(body: &Value, keys: &[&str]) -> Value {
    let mut b = body.clone();
    for k in keys {
        b.as_object_mut().unwrap().remove(*k);
    }
    b
}

#[tokio::test]
async fn each_local_server_gets_the_schema_and_the_same_prompt() {
    let schema = calls_schema(&tools());
    for p in ["openai-compatible", "ollama"] {
        for thinking in [Thinking::Off, Thinking::On] {
            let call = r#"{"name":"bash","arguments":{"command":"ls"}}"#;
            let server = mock(vec![Reply::text("plain"), Reply::text(call)]).await;
            let mut c = cfg(p, &server.url());
            c.thinking = thinking;
            let e = engine(&c);
            assert!(e.can_constrain_calls(), "{p}");
            let (_, plain) = run(&e, &ask("list"), &tools()).await;
            plain.unwrap();
            let (_, r) = constrained(&e, &ask("list")).await;
            let g = r.unwrap();
            let Message::Assistant {
                tool_calls,
                content,
                ..
            } = &g.message
            else {
                panic!()
            };
            assert_eq!(content, "", "{p}");
            assert_eq!(tool_calls.len(), 1, "{p}");
            assert_eq!(tool_calls[0].name, "bash");
            assert_eq!(tool_calls[0].arguments, r#"{"command":"ls"}"#);
            let reqs = server.requests();
            let (before, body) = (&reqs[0].body, &reqs[1].body);
            let changed: &[&str] = match p {
                "ollama" => {
                    assert_eq!(body["format"], schema, "{p}");
                    if thinking == Thinking::On {
                        assert_eq!(body["think"], false);
                        assert_eq!(before["think"], true);
                    } else {
                        assert!(body.get("think").is_none());
                    }
                    &["format", "think"]
                }
                _ => {
                    let rf = &body["response_format"];
                    assert_eq!(rf["type"], "json_schema", "{p}");
                    assert_eq!(rf["json_schema"]["schema"], schema);
                    assert_eq!(rf["json_schema"]["strict"], true);
                    assert!(body.get("tool_choice").is_none(), "{body}");
                    if thinking == Thinking::On {
                        assert_eq!(body["chat_template_kwargs"]["enable_thinking"], false);
                        assert!(body.get("reasoning_effort").is_none());
                        assert!(before.get("reasoning_effort").is_some());
                    } else {
                        assert!(body.get("chat_template_kwargs").is_none());
                    }
                    &[
                        "response_format",
                        "chat_template_kwargs",
                        "reasoning_effort",
                    ]
                }
            };
            // The tools stay declared; everything else is byte for byte
            // the unconstrained request, so the server's cache serves it.
            assert!(
                body["tools"].as_array().is_some_and(|t| t.len() == 2),
                "{p}"
            );
            assert_eq!(
                without(before, changed).to_string(),
                without(body, changed).to_string(),
                "{p}"
            );
        }
    }
}

#[tokio::test]
async fn hosted_providers_are_never_constrained() {
    for p in ["openai", "anthropic", "gemini"] {
        let server = mock(vec![]).await;
        assert!(!engine(&cfg(p, &server.url())).can_constrain_calls(), "{p}");
    }
}

#[tokio::test]
async fn the_answer_streams_as_it_is_decoded() {
    let pieces = [r#"{"ans"#, r#"wer": "Hel"#, r#"lo \"wor"#, r#"ld\""}"#];
    let server = mock(vec![Reply::stream(
        pieces.iter().map(|p| Step::text(*p)).collect(),
    )])
    .await;
    let e = engine(&cfg("openai-compatible", &server.url()));
    let (events, r) = constrained(&e, &ask("hi")).await;
    let g = r.unwrap();
    assert_eq!(g.message, Message::assistant("Hello \"world\""));
    let shown: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(shown, ["Hel", "lo \"wor", "ld\""]);
}

#[tokio::test]
async fn text_that_is_no_value_is_shown_as_written() {
    let server = mock(vec![Reply::text(r#"{"name": "bash", "argu"#)]).await;
    let e = engine(&cfg("ollama", &server.url()));
    let (events, r) = constrained(&e, &ask("hi")).await;
    assert_eq!(
        r.unwrap().message,
        Message::assistant(r#"{"name": "bash", "argu"#)
    );
    assert_eq!(texts(&events), r#"{"name": "bash", "argu"#);
}

async fn serving(routes: Vec<Route>) -> MockServer {
    MockServer::start_with(
        vec![],
        Options {
            routes,
            ..Options::default()
        },
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn the_window_question_tells_whether_the_template_renders_tools() {
    let props = |tools: bool| {
        json!({
            "default_generation_settings": {"n_ctx": 2048},
            "chat_template_caps": {"supports_tools": tools, "supports_preserve_reasoning": false},
        })
    };
    let show =
        |caps: Value| json!({"model_info": {"llama.context_length": 2048}, "capabilities": caps});
    let cases = [
        (
            "openai-compatible",
            "m1",
            Route::get("/props", props(false)),
            Some(false),
        ),
        (
            "openai-compatible",
            "m2",
            Route::get("/props", props(true)),
            Some(true),
        ),
        (
            "ollama",
            "m3",
            Route::post("/api/show", show(json!(["completion"]))),
            Some(false),
        ),
        (
            "ollama",
            "m4",
            Route::post("/api/show", show(json!(["completion", "tools"]))),
            Some(true),
        ),
        (
            "ollama",
            "m5",
            Route::post("/api/show", json!({"model_info": {}})),
            None,
        ),
    ];
    for (p, model, route, want) in cases {
        let server = serving(vec![route]).await;
        let mut c = cfg(p, &server.url());
        c.model = format!("{p}/{model}");
        c.context_window = ContextWindow::Auto;
        let e = engine(&c);
        assert_eq!(e.renders_tools(), None, "{model}: not asked yet");
        e.discover_window().await;
        assert_eq!(e.renders_tools(), want, "{model}");
    }
}
