//! The model's window asked of the server (each provider's endpoint, in the
//! shape its server answers), the model list, overflow answers over HTTP,
//! and keyless loopback servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mm_config::ContextWindow;
use mm_engine::{Engine, EngineError, Message, ModelEntry, Window, WindowSource};
use mm_mock::{MockServer, Options, Reply, Route};
use serde_json::{Value, json};

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

/// `provider/model` against `server`, with `contextWindow: auto`.
fn auto(provider: &str, model: &str, server: &MockServer) -> Engine {
    let mut c = cfg(provider, &server.url());
    c.model = format!("{provider}/{model}");
    c.context_window = ContextWindow::Auto;
    engine(&c)
}

fn paths(server: &MockServer) -> Vec<String> {
    server
        .all_requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn from_server(tokens: u64, label: &'static str) -> Window {
    Window {
        tokens,
        source: WindowSource::Server(label),
    }
}

/// llama-server's `/props` as version b11669 answers it (trimmed).
fn props(n_ctx: u64) -> Value {
    json!({
        "default_generation_settings": {"params": {"n_predict": -1}, "n_ctx": n_ctx},
        "total_slots": 1,
        "model_alias": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "build_info": "b11669-Debian",
    })
}

#[tokio::test]
async fn llama_cpp_props_give_the_slot_window() {
    let server = serving(vec![Route::get("/props", props(1024))]).await;
    let e = auto("openai-compatible", "smollm", &server);
    assert_eq!(e.window().source, WindowSource::Fallback);
    assert_eq!(e.discover_window().await, from_server(1024, "/props"));
    // Asked with the model, and without loading it on a router.
    assert_eq!(paths(&server), ["GET /props?model=smollm&autoload=false"]);
    // Once per process: a second engine for the same server and model
    // asks nothing.
    let again = auto("openai-compatible", "smollm", &server);
    assert_eq!(again.discover_window().await, from_server(1024, "/props"));
    assert_eq!(server.all_requests().len(), 1);
    // The engine that takes it sends requests with it.
    assert_eq!(
        e.with_window(from_server(1024, "/props")).window().tokens,
        1024
    );
}

#[tokio::test]
async fn a_router_says_nothing_at_props_and_its_model_list_does() {
    // A llama-server router answers n_ctx 0 for a model it has not
    // loaded; its list then carries the loaded model's `meta.n_ctx`.
    let server = serving(vec![
        Route::get(
            "/props",
            json!({"role": "router", "default_generation_settings": {"params": {}, "n_ctx": 0}}),
        ),
        Route::get(
            "/v1/models",
            json!({"object": "list", "data": [
                {"id": "other", "object": "model", "status": {"value": "unloaded"}},
                {"id": "qwen", "object": "model", "meta": {"n_ctx": 8192, "n_ctx_train": 131072}},
            ]}),
        ),
    ])
    .await;
    let e = auto("openai-compatible", "qwen", &server);
    assert_eq!(e.discover_window().await, from_server(8192, "/models"));
}

#[tokio::test]
async fn vllm_openrouter_and_lm_studio_lists() {
    // vLLM: max_model_len of the one model served.
    let vllm = serving(vec![Route::get("/v1/models", json!({"object": "list", "data": [
        {"id": "Qwen/Qwen3-8B", "object": "model", "owned_by": "vllm", "root": "/m", "parent": null, "max_model_len": 32768}
    ]}))])
    .await;
    let e = auto("openai-compatible", "Qwen/Qwen3-8B", &vllm);
    assert_eq!(e.discover_window().await, from_server(32768, "/models"));
    assert_eq!(
        paths(&vllm),
        [
            "GET /props?model=Qwen%2FQwen3-8B&autoload=false",
            "GET /v1/models"
        ]
    );

    // OpenRouter: context_length, found by id among many.
    let router = serving(vec![Route::get(
        "/v1/models",
        json!({"data": [
            {"id": "a/b", "context_length": 4096},
            {"id": "meta-llama/llama-3.1-8b-instruct", "context_length": 131072},
        ]}),
    )])
    .await;
    let e = auto(
        "openai-compatible",
        "meta-llama/llama-3.1-8b-instruct",
        &router,
    );
    assert_eq!(e.discover_window().await, from_server(131072, "/models"));

    // LM Studio: its OpenAI list says nothing; its own list gives the
    // loaded window first.
    let lms = serving(vec![
        Route::get("/v1/models", json!({"data": [{"id": "qwen3-8b"}, {"id": "gemma"}]})),
        Route::get("/api/v0/models", json!({"object": "list", "data": [
            {"id": "gemma", "state": "not-loaded", "max_context_length": 8192},
            {"id": "qwen3-8b", "state": "loaded", "loaded_context_length": 16384, "max_context_length": 40960},
        ]})),
    ])
    .await;
    let e = auto("openai-compatible", "qwen3-8b", &lms);
    assert_eq!(
        e.discover_window().await,
        from_server(16384, "/api/v0/models")
    );
}

#[tokio::test]
async fn ollama_show_gives_the_modelfile_num_ctx_or_the_trained_window_capped() {
    let with_num_ctx = serving(vec![Route::post("/api/show", json!({
        "parameters": "num_ctx                        8192\nstop                           \"<|im_end|>\"",
        "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
    }))])
    .await;
    let e = auto("ollama", "qwen3:8b", &with_num_ctx);
    assert_eq!(e.discover_window().await, from_server(8192, "/api/show"));
    let asked = &with_num_ctx.all_requests()[0];
    assert_eq!(asked.body, json!({"model": "qwen3:8b"}));

    let trained = serving(vec![Route::post(
        "/api/show",
        json!({
            "parameters": "stop \"<|eot_id|>\"",
            "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
        }),
    )])
    .await;
    let e = auto("ollama", "llama3.1", &trained);
    // num_ctx sizes the memory Ollama reserves: 32768 at most unless a
    // number is set.
    let w = e.discover_window().await;
    assert_eq!(w, from_server(32768, "/api/show"));
    // The window in force is what every request sends as num_ctx.
    let server = mock(vec![Reply::text("hi")]).await;
    let mut c = cfg("ollama", &server.url());
    c.context_window = ContextWindow::Auto;
    let e = engine(&c).with_window(w);
    run(&e, &[Message::user("q")], &[]).await.1.unwrap();
    assert_eq!(
        server.requests()[0].body["options"]["num_ctx"],
        json!(32768)
    );
}

#[tokio::test]
async fn hosted_model_endpoints_and_the_known_table() {
    let anthropic = serving(vec![Route::get(
        "/v1/models/claude-sonnet-4-5",
        json!({"id": "claude-sonnet-4-5", "type": "model", "max_input_tokens": 1000000}),
    )])
    .await;
    let e = auto("anthropic", "claude-sonnet-4-5", &anthropic);
    assert_eq!(e.window().source, WindowSource::KnownModel);
    assert_eq!(e.window().tokens, 200_000);
    assert_eq!(
        e.discover_window().await,
        from_server(1_000_000, "/v1/models")
    );
    let asked = &anthropic.all_requests()[0];
    assert_eq!(asked.header("x-api-key"), Some(ANTHROPIC_KEY));
    assert!(asked.header("anthropic-version").is_some());

    let gemini = serving(vec![Route::get(
        "/v1beta/models/gemini-2.5-flash",
        json!({"name": "models/gemini-2.5-flash", "inputTokenLimit": 1048576, "outputTokenLimit": 65536}),
    )])
    .await;
    let e = auto("gemini", "gemini-2.5-flash", &gemini);
    assert_eq!(
        e.discover_window().await,
        from_server(1_048_576, "/v1beta/models")
    );
    assert_eq!(
        gemini.all_requests()[0].header("x-goog-api-key"),
        Some(GEMINI_KEY)
    );

    // OpenAI's list says nothing of windows: the table, and no request.
    let openai = serving(vec![]).await;
    let e = auto("openai", "gpt-4o-mini", &openai);
    let known = Window {
        tokens: 128_000,
        source: WindowSource::KnownModel,
    };
    assert_eq!(e.window(), known);
    assert_eq!(e.discover_window().await, known);
    assert!(openai.all_requests().is_empty());
}

/// A window no model has: what a field never set holds (u64::MAX).
const GARBAGE: u64 = u64::MAX;

#[tokio::test]
async fn a_window_out_of_range_is_taken_from_no_source() {
    // llama.cpp's /props, the OpenAI-shaped list and LM Studio's: every
    // one out of 1..=100000000, so the fallback, as when nothing answers.
    let llama = serving(vec![
        Route::get("/props", props(GARBAGE)),
        Route::get(
            "/v1/models",
            json!({"data": [{"id": "m", "max_model_len": GARBAGE, "meta": {"n_ctx": 100_000_001u64}}]}),
        ),
        Route::get(
            "/api/v0/models",
            json!({"data": [{"id": "m", "loaded_context_length": "18446744073709551615"}]}),
        ),
    ])
    .await;
    let e = auto("openai-compatible", "m", &llama);
    assert_eq!(
        e.discover_window().await,
        Window {
            tokens: 32768,
            source: WindowSource::Fallback
        }
    );
    // One field out of range does not hide a good one after it.
    let lms = serving(vec![Route::get(
        "/api/v0/models",
        json!({"data": [{"id": "m2", "loaded_context_length": GARBAGE, "max_context_length": 8192}]}),
    )])
    .await;
    let e = auto("openai-compatible", "m2", &lms);
    assert_eq!(
        e.discover_window().await,
        from_server(8192, "/api/v0/models")
    );

    // Ollama's /api/show: a Modelfile num_ctx, then the trained window.
    let ollama = serving(vec![Route::post(
        "/api/show",
        json!({
            "parameters": "num_ctx 18446744073709551615",
            "model_info": {"general.architecture": "llama", "llama.context_length": GARBAGE},
        }),
    )])
    .await;
    let e = auto("ollama", "huge", &ollama);
    assert_eq!(e.discover_window().await.source, WindowSource::Fallback);

    // Anthropic's and Gemini's model endpoints: the known window stays.
    let anthropic = serving(vec![Route::get(
        "/v1/models/claude-huge",
        json!({"id": "claude-huge", "max_input_tokens": GARBAGE}),
    )])
    .await;
    let e = auto("anthropic", "claude-huge", &anthropic);
    assert_eq!(
        e.discover_window().await,
        Window {
            tokens: 200_000,
            source: WindowSource::KnownModel
        }
    );
    let gemini = serving(vec![Route::get(
        "/v1beta/models/gemini-huge",
        json!({"name": "models/gemini-huge", "inputTokenLimit": 0}),
    )])
    .await;
    let e = auto("gemini", "gemini-huge", &gemini);
    assert_eq!(e.discover_window().await.source, WindowSource::KnownModel);

    // The model lists say nothing of such a window either.
    let tags = serving(vec![Route::get(
        "/api/tags",
        json!({"models": [{"name": "huge", "details": {"context_length": GARBAGE}}]}),
    )])
    .await;
    let list = auto("ollama", "huge", &tags).list_models().await.unwrap();
    assert_eq!(
        list,
        [ModelEntry {
            id: "huge".into(),
            window: None
        }]
    );
}

#[tokio::test]
async fn a_number_in_the_settings_wins_without_asking() {
    let server = serving(vec![Route::get("/props", props(1024))]).await;
    let mut c = cfg("openai-compatible", &server.url());
    c.context_window = ContextWindow::Tokens(4096);
    let e = engine(&c);
    let set = Window {
        tokens: 4096,
        source: WindowSource::Setting,
    };
    assert_eq!(e.discover_window().await, set);
    assert_eq!(e.with_window(from_server(1024, "/props")).window(), set);
    assert!(server.all_requests().is_empty());
}

#[tokio::test]
async fn a_server_that_says_nothing_leaves_the_fallback() {
    // Every endpoint 404s (the mock without routes): 32768, remembered.
    let server = serving(vec![]).await;
    let e = auto("openai-compatible", "quiet", &server);
    let w = e.discover_window().await;
    assert_eq!(
        w,
        Window {
            tokens: 32768,
            source: WindowSource::Fallback
        }
    );
    assert_eq!(w.source.to_string(), "default: the server did not say");
    let asked = server.all_requests().len();
    assert_eq!(asked, 3);
    auto("openai-compatible", "quiet", &server)
        .discover_window()
        .await;
    assert_eq!(server.all_requests().len(), asked);

    // Nothing listening: the window in force, and nothing remembered, so
    // that a server started later is asked.
    let mut c = cfg("openai-compatible", "http://127.0.0.1:9");
    c.context_window = ContextWindow::Auto;
    let e = engine(&c);
    assert_eq!(e.discover_window().await.source, WindowSource::Fallback);
}

#[tokio::test]
async fn a_server_that_hangs_costs_at_most_the_bound() {
    // A listener that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let mut c = cfg("openai-compatible", &format!("http://{addr}"));
    c.context_window = ContextWindow::Auto;
    let e = engine(&c);
    let started = std::time::Instant::now();
    let w = e.discover_window().await;
    assert_eq!(w.source, WindowSource::Fallback);
    assert!(
        started.elapsed() <= mm_engine::DISCOVERY_BOUND + std::time::Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn model_lists_of_every_provider() {
    let entry = |id: &str, window: Option<u64>| ModelEntry {
        id: id.into(),
        window,
    };
    let ollama = serving(vec![Route::get("/api/tags", json!({"models": [
        {"name": "qwen3:8b", "model": "qwen3:8b", "details": {"family": "qwen3", "context_length": 40960}},
        {"name": "llama3.1:latest", "model": "llama3.1:latest", "details": {"family": "llama"}},
    ]}))])
    .await;
    assert_eq!(
        auto("ollama", "qwen3:8b", &ollama)
            .list_models()
            .await
            .unwrap(),
        [
            entry("llama3.1:latest", None),
            entry("qwen3:8b", Some(40960))
        ]
    );

    let compat = serving(vec![Route::get(
        "/v1/models",
        json!({"object": "list", "data": [
            {"id": "b-model", "max_model_len": 8192}, {"id": "a-model"}
        ]}),
    )])
    .await;
    assert_eq!(
        auto("openai-compatible", "x", &compat)
            .list_models()
            .await
            .unwrap(),
        [entry("a-model", None), entry("b-model", Some(8192))]
    );

    let anthropic = serving(vec![Route::get("/v1/models", json!({"data": [
        {"id": "claude-sonnet-4-5", "type": "model", "display_name": "Claude Sonnet 4.5", "max_input_tokens": 200000},
    ], "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-sonnet-4-5"}))])
    .await;
    assert_eq!(
        auto("anthropic", "x", &anthropic)
            .list_models()
            .await
            .unwrap(),
        [entry("claude-sonnet-4-5", Some(200_000))]
    );
    assert_eq!(anthropic.all_requests()[0].path, "/v1/models?limit=1000");

    let gemini = serving(vec![Route::get("/v1beta/models", json!({"models": [
        {"name": "models/gemini-2.5-flash", "inputTokenLimit": 1048576, "supportedGenerationMethods": ["generateContent", "countTokens"]},
        {"name": "models/text-embedding-004", "inputTokenLimit": 2048, "supportedGenerationMethods": ["embedContent"]},
    ]}))])
    .await;
    assert_eq!(
        auto("gemini", "x", &gemini).list_models().await.unwrap(),
        [entry("gemini-2.5-flash", Some(1_048_576))]
    );

    // A server that does not list: a clear error naming it.
    let none = serving(vec![]).await;
    let e = auto("openai-compatible", "x", &none)
        .list_models()
        .await
        .unwrap_err();
    assert!(matches!(e, EngineError::Status { status: 404, .. }), "{e}");
    let dead = {
        let mut c = cfg("ollama", "http://127.0.0.1:9");
        c.context_window = ContextWindow::Auto;
        engine(&c)
    };
    assert!(matches!(
        dead.list_models().await.unwrap_err(),
        EngineError::Unreachable { .. }
    ));
}

/// Recorded "prompt too long" answers of each server, over HTTP: each is
/// an overflow with the sizes it names, never a plain failure.
#[tokio::test]
async fn overflow_answers_of_each_server_over_http() {
    // provider, status, body, the window and the prompt size it names
    type Case = (&'static str, u16, Value, Option<u64>, Option<u64>);
    let cases: Vec<Case> = vec![
        (
            "openai-compatible",
            400,
            json!({"error":{"code":400,"message":"request (1042 tokens) exceeds the available context size (1024 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":1042,"n_ctx":1024}}),
            Some(1024),
            Some(1042),
        ),
        (
            "openai",
            400,
            json!({"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}),
            Some(8192),
            Some(8227),
        ),
        (
            "openai-compatible",
            400,
            json!({"error":{"message":"This model's maximum context length is 40960 tokens. However, you requested 0 output tokens and your prompt contains at least 40961 input tokens, for a total of at least 40961 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=40961)","type":"BadRequestError","param":"input_tokens","code":400}}),
            Some(40960),
            Some(40961),
        ),
        (
            "anthropic",
            400,
            json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011C"}),
            Some(200000),
            Some(200251),
        ),
        // llama-server's Anthropic endpoint answers in its own shape.
        (
            "anthropic",
            400,
            json!({"error":{"code":400,"message":"request (1510 tokens) exceeds the available context size (1024 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":1510,"n_ctx":1024}}),
            Some(1024),
            Some(1510),
        ),
        (
            "gemini",
            400,
            json!({"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}),
            Some(131072),
            Some(132478),
        ),
        (
            "ollama",
            400,
            json!({"error":"the input length exceeds the context length"}),
            None,
            None,
        ),
    ];
    for (provider, status, body, window, prompt) in cases {
        let server = mock(vec![Reply::Body {
            status,
            body: body.clone(),
        }])
        .await;
        let e = engine(&cfg(provider, &server.url()));
        let err = run(&e, &[Message::user("q")], &[]).await.1.unwrap_err();
        match err.error {
            EngineError::ContextLength {
                window: w,
                prompt: p,
                ..
            } => assert_eq!((w, p), (window, prompt), "{provider} {body}"),
            other => panic!("{provider}: {other:?}"),
        }
        assert_eq!(server.requests().len(), 1, "an overflow is not retried");
    }
}

#[test]
fn loopback_servers_need_no_key() {
    fn no_env(_: &str) -> Option<String> {
        None
    }
    for (model, url) in [
        ("anthropic/claude-x", "http://127.0.0.1:8080"),
        ("anthropic/claude-x", "http://localhost:8080"),
        ("openai/gpt-x", "http://[::1]:8080/v1"),
        ("gemini/gemini-x", "http://127.0.0.1:9000"),
    ] {
        let c = mm_config::Config {
            model: model.into(),
            base_url: Some(url.into()),
            ..mm_config::Config::default()
        };
        let e = Engine::with_env(&c, no_env).unwrap();
        assert!(e.secrets().is_empty(), "{model} {url}");
    }
    // Anywhere else the key is still required, with the same error.
    let c = mm_config::Config {
        model: "anthropic/claude-x".into(),
        base_url: Some("http://10.1.2.3:8080".into()),
        ..mm_config::Config::default()
    };
    assert_eq!(
        Engine::with_env(&c, no_env).unwrap_err(),
        EngineError::MissingKey {
            provider: "anthropic".into(),
            var: "ANTHROPIC_API_KEY".into()
        }
    );
    // A key that is there is still sent to a loopback server.
    let c = mm_config::Config {
        model: "anthropic/claude-x".into(),
        base_url: Some("http://127.0.0.1:8080".into()),
        ..mm_config::Config::default()
    };
    assert_eq!(
        Engine::with_env(&c, env).unwrap().secrets(),
        [ANTHROPIC_KEY]
    );
}
