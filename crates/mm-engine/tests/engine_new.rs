//! Choosing a provider from the settings: the registry, addresses, keys.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mm_engine::{Engine, EngineError, Message};
use mm_mock::Reply;

fn settings(model: &str) -> mm_config::Config {
    mm_config::Config {
        model: model.into(),
        base_url: None,
        api_key_env: None,
        ..mm_config::Config::default()
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn registry_lists_every_provider() {
    assert_eq!(
        mm_engine::known_providers(),
        vec![
            "ollama",
            "openai",
            "openai-compatible",
            "anthropic",
            "gemini"
        ]
    );
}

#[test]
fn unknown_provider_lists_the_known_ones() {
    let err = Engine::with_env(&settings("mistral/large"), no_env).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown provider \"mistral\"; known providers: ollama, openai, openai-compatible, anthropic, gemini"
    );
    assert!(matches!(err, EngineError::UnknownProvider { ref name, .. } if name == "mistral"));
}

#[test]
fn model_must_be_provider_slash_model() {
    for bad in ["qwen3", "ollama/", "/qwen3", ""] {
        let err = Engine::with_env(&settings(bad), no_env).unwrap_err();
        assert_eq!(err, EngineError::BadModel { model: bad.into() });
    }
    // Only the first slash splits: model names may hold more.
    let e = Engine::with_env(&settings("openai-compatible/meta-llama/Llama-3-8B"), |_| {
        None
    });
    assert!(matches!(e, Err(EngineError::MissingBaseUrl { .. })));
    let mut c = settings("openai-compatible/meta-llama/Llama-3-8B");
    c.base_url = Some("http://127.0.0.1:8080/v1/".into());
    let e = Engine::with_env(&c, no_env).unwrap();
    assert_eq!(e.model(), "meta-llama/Llama-3-8B");
    assert_eq!(e.base_url(), "http://127.0.0.1:8080/v1");
}

#[test]
fn defaults_per_provider() {
    let e = Engine::with_env(&settings("ollama/qwen3:8b"), no_env).unwrap();
    assert_eq!(
        (e.provider(), e.model(), e.base_url()),
        ("ollama", "qwen3:8b", "http://localhost:11434")
    );
    assert!(e.secrets().is_empty());

    let e = Engine::with_env(&settings("openai/gpt-5-mini"), env).unwrap();
    assert_eq!(e.base_url(), "https://api.openai.com/v1");
    assert_eq!(e.secrets(), vec![OPENAI_KEY.to_owned()]);

    let e = Engine::with_env(&settings("anthropic/claude-sonnet-4-5"), env).unwrap();
    assert_eq!(e.base_url(), "https://api.anthropic.com");
    assert_eq!(e.secrets(), vec![ANTHROPIC_KEY.to_owned()]);

    let e = Engine::with_env(&settings("gemini/gemini-2.5-flash"), env).unwrap();
    assert_eq!(e.base_url(), "https://generativelanguage.googleapis.com");
    assert_eq!(e.secrets(), vec![GEMINI_KEY.to_owned()]);
    // GOOGLE_API_KEY is the fallback.
    let e = Engine::with_env(&settings("gemini/gemini-2.5-flash"), |v| {
        (v == "GOOGLE_API_KEY").then(|| "g-key".to_owned())
    })
    .unwrap();
    assert_eq!(e.secrets(), vec!["g-key".to_owned()]);
}

#[test]
fn ollama_host_sets_the_default_address() {
    let host = |v: &str| (v == "OLLAMA_HOST").then(|| "10.1.2.3".to_owned());
    let e = Engine::with_env(&settings("ollama/qwen3:8b"), host).unwrap();
    assert_eq!(e.base_url(), "http://10.1.2.3:11434");
    // A configured baseURL wins over it.
    let mut c = settings("ollama/qwen3:8b");
    c.base_url = Some("http://127.0.0.1:9999".into());
    assert_eq!(
        Engine::with_env(&c, host).unwrap().base_url(),
        "http://127.0.0.1:9999"
    );
}

#[test]
fn missing_keys_name_the_variable() {
    for (model, var) in [
        ("openai/gpt-5-mini", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("gemini/gemini-2.5-flash", "GEMINI_API_KEY"),
    ] {
        let err = Engine::with_env(&settings(model), no_env).unwrap_err();
        let provider = model.split('/').next().unwrap();
        assert_eq!(
            err,
            EngineError::MissingKey {
                provider: provider.into(),
                var: var.into()
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "provider {provider} needs an API key: set the environment variable {var} (or name another one with `apiKeyEnv`)"
            )
        );
    }
    // An empty variable counts as missing.
    let err = Engine::with_env(&settings("openai/x"), |_| Some(String::new())).unwrap_err();
    assert!(matches!(err, EngineError::MissingKey { .. }));
    // A configured apiKeyEnv must hold the key.
    let mut c = settings("openai-compatible/x");
    c.base_url = Some("http://127.0.0.1:1/v1".into());
    c.api_key_env = Some("NOT_SET_ANYWHERE".into());
    assert_eq!(
        Engine::with_env(&c, no_env).unwrap_err(),
        EngineError::MissingKey {
            provider: "openai-compatible".into(),
            var: "NOT_SET_ANYWHERE".into()
        }
    );
}

#[test]
fn openai_compatible_needs_a_base_url() {
    let err = Engine::with_env(&settings("openai-compatible/x"), env).unwrap_err();
    assert_eq!(
        err,
        EngineError::MissingBaseUrl {
            provider: "openai-compatible".into()
        }
    );
}

#[test]
fn debug_never_shows_the_key() {
    let e = Engine::with_env(&settings("openai/gpt-5-mini"), env).unwrap();
    let shown = format!("{e:?}");
    assert!(
        shown.contains("openai") && !shown.contains(OPENAI_KEY),
        "{shown}"
    );
}

#[tokio::test]
async fn openai_compatible_sends_a_key_only_when_configured() {
    // Even with OPENAI_API_KEY in the environment, no key goes out.
    let server = mock(vec![Reply::text("a"), Reply::text("b")]).await;
    let c = cfg("openai-compatible", &server.url());
    let e = engine(&c);
    assert!(e.secrets().is_empty());
    run(&e, &[Message::user("hi")], &[]).await.1.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);

    let mut c = cfg("openai-compatible", &server.url());
    c.api_key_env = Some("MY_COMPAT_KEY".into());
    let e = engine(&c);
    assert_eq!(e.secrets(), vec![COMPAT_KEY.to_owned()]);
    run(&e, &[Message::user("hi")], &[]).await.1.unwrap();
    let r = &server.requests()[1];
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {COMPAT_KEY}").as_str())
    );
    assert!(!r.body.to_string().contains(COMPAT_KEY));
}

#[tokio::test]
async fn error_lines_never_show_url_credentials() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut c = cfg("ollama", "unused");
    c.base_url = Some(format!("http://user:hunter2@127.0.0.1:{port}"));
    let e = engine(&c);
    let err = run(&e, &[Message::user("hi")], &[]).await.1.unwrap_err();
    let line = err.to_string();
    assert!(
        line.starts_with(&format!(
            "cannot reach ollama at http://user:***@127.0.0.1:{port} "
        )),
        "{line}"
    );
    assert!(!line.contains("hunter2"));

    // A key in the query string (proxies that take `?api_key=`) is masked
    // too, and other parameters stay readable.
    c.base_url = Some(format!(
        "http://127.0.0.1:{port}/v1?api_key=sk-query-secret&mode=x"
    ));
    let e = engine(&c);
    let err = run(&e, &[Message::user("hi")], &[]).await.1.unwrap_err();
    let line = err.to_string();
    assert!(
        line.starts_with(&format!(
            "cannot reach ollama at http://127.0.0.1:{port}/v1?api_key=***&mode=x "
        )),
        "{line}"
    );
    assert!(!line.contains("sk-query-secret"), "{line}");
    assert_eq!(
        err.error,
        EngineError::Unreachable {
            provider: "ollama".into(),
            url: format!("http://127.0.0.1:{port}/v1?api_key=***&mode=x"),
        }
    );
}

#[test]
fn keys_are_read_from_each_providers_row() {
    // Every candidate variable of every provider is read, in order.
    for p in mm_engine::known_providers() {
        let vars = mm_engine::key_vars(p);
        for (i, var) in vars.iter().enumerate() {
            let mut c = settings(&format!("{p}/m"));
            c.base_url = Some("http://127.0.0.1:1".into());
            let key = format!("key-{i}");
            let e = Engine::with_env(&c, |v| (v == *var).then(|| key.clone())).unwrap();
            assert_eq!(e.secrets(), vec![key.clone()], "{p} {var}");
            // An earlier candidate wins over a later one.
            let e = Engine::with_env(&c, |v| {
                vars.iter()
                    .position(|x| *x == v)
                    .map(|at| format!("key-{at}"))
            })
            .unwrap();
            assert_eq!(e.secrets(), vec!["key-0".to_owned()], "{p}");
        }
    }
    assert_eq!(
        mm_engine::key_vars("gemini"),
        ["GEMINI_API_KEY", "GOOGLE_API_KEY"]
    );
}

#[test]
fn engine_and_its_futures_can_move_between_threads() {
    fn send_sync<T: Send + Sync + Clone>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let e = Engine::with_env(&settings("ollama/qwen3:8b"), no_env).unwrap();
    send_sync(&e);
    let cancel = mm_engine::CancellationToken::new();
    let messages = [Message::user("hi")];
    let mut sink = |_e: mm_engine::StreamEvent| {};
    let generate = e.generate(&messages, &[], &mut sink, &cancel);
    send(&generate);
    drop(generate);
    let summarize = e.summarize(&messages, "sum up", &cancel);
    send(&summarize);
}

#[tokio::test]
async fn a_cancelled_summary_is_an_error() {
    let server = mock(vec![Reply::text("never")]).await;
    let e = engine(&cfg("openai", &server.url()));
    let cancel = mm_engine::CancellationToken::new();
    cancel.cancel();
    let err = e
        .summarize(&[Message::user("hi")], "sum up", &cancel)
        .await
        .unwrap_err();
    assert_eq!(err.error, EngineError::Cancelled);
}
