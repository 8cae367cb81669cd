//! Prompt caching through the agent, for every provider, against the mock
//! over real HTTP: the cached part of the input each server reports is
//! read, summed over a turn's requests, given in the turn's report and its
//! `TurnEnd` event, and kept in the session file across `--continue`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Once;

use common::{Recorder, ask, config};
use mm_agent::config::Config;
use mm_agent::ui::{Event, TurnOutcome};
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply, Step};

/// Every provider of the registry.
const PROVIDERS: [&str; 5] = [
    "ollama",
    "openai",
    "openai-compatible",
    "anthropic",
    "gemini",
];

/// The hosted providers need a key; the tests give fake ones. Set once,
/// before any agent of this test binary reads the environment.
fn keys() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: every test calls this first, before it starts anything
        // that reads the environment; `Once` makes the others wait.
        unsafe {
            std::env::set_var("OPENAI_API_KEY", "sk-test-caching-openai");
            std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-test-caching");
            std::env::set_var("GEMINI_API_KEY", "gm-test-caching");
        }
    });
}

/// Settings for `provider` against the mock at `url`, files in `dir`.
fn provider_config(provider: &str, url: &str, dir: &Path) -> Config {
    keys();
    let mut c = config(url, dir);
    c.model = format!("{provider}/test-model");
    c.base_url = Some(match provider {
        "openai" | "openai-compatible" => format!("{url}/v1"),
        _ => url.to_owned(),
    });
    c
}

fn bash_call(id: &str, command: &str) -> Step {
    Step::ToolCall {
        index: 0,
        id: Some(id.into()),
        name: "bash".into(),
        arguments: serde_json::json!({ "command": command }).to_string(),
    }
}

fn usage(prompt: u64, completion: u64, cached: u64) -> [Step; 2] {
    [
        Step::Usage { prompt, completion },
        Step::Cached { tokens: cached },
    ]
}

async fn cached_counts(provider: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut first = vec![bash_call("call_1", "echo hi")];
    first.extend(usage(1000, 20, 0));
    let mut second = vec![Step::text("It says hi.")];
    second.extend(usage(1100, 5, 1000));
    let mut third = vec![Step::text("Still hi.")];
    third.extend(usage(1200, 4, 1100));
    let mock = MockServer::start(vec![
        Reply::stream(first),
        Reply::stream(second),
        Reply::stream(third),
    ])
    .await
    .unwrap();
    let cfg = provider_config(provider, &mock.url(), dir.path());
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    let (report, sink) = ask(&mut agent, "run echo hi").await;
    assert_eq!(report.outcome, TurnOutcome::Done, "{provider}");
    let cached = if provider == "ollama" { 0 } else { 1000 };
    assert_eq!(
        (
            report.usage.prompt_tokens,
            report.usage.completion_tokens,
            report.usage.cached_tokens
        ),
        (2100, 25, cached),
        "{provider}: the turn's two requests summed"
    );
    assert!(
        sink.events().iter().any(|e| matches!(
            e,
            Event::TurnEnd { prompt_tokens: 2100, cached_tokens, .. } if *cached_tokens == cached
        )),
        "{provider}: {:?}",
        sink.events().last()
    );
    assert_eq!(agent.session_usage(), report.usage, "{provider}");

    // The file keeps the counts; a continued session adds to them.
    let id = agent.session_id().unwrap();
    drop(agent);
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    agent.resume(None).unwrap();
    assert_eq!(agent.session_id().as_deref(), Some(id.as_str()));
    assert_eq!(agent.session_usage().prompt_tokens, 2100, "{provider}");
    assert_eq!(agent.session_usage().cached_tokens, cached, "{provider}");
    let (report, _) = ask(&mut agent, "again").await;
    assert_eq!(report.outcome, TurnOutcome::Done, "{provider}");
    let more = if provider == "ollama" { 0 } else { 1100 };
    assert_eq!(report.usage.cached_tokens, more, "{provider}");
    assert_eq!(
        agent.session_usage().cached_tokens,
        cached + more,
        "{provider}"
    );
    let file = agent.sessions().unwrap()[0].path.clone();
    let raw: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(
        raw["usage"]["prompt_tokens"], 3300,
        "{provider}: {}",
        raw["usage"]
    );
    assert_eq!(raw["usage"]["cached_tokens"], cached + more, "{provider}");
}

#[tokio::test]
async fn cached_counts_ollama() {
    cached_counts(PROVIDERS[0]).await;
}
#[tokio::test]
async fn cached_counts_openai() {
    cached_counts(PROVIDERS[1]).await;
}
#[tokio::test]
async fn cached_counts_openai_compatible() {
    cached_counts(PROVIDERS[2]).await;
}
#[tokio::test]
async fn cached_counts_anthropic() {
    cached_counts(PROVIDERS[3]).await;
}
#[tokio::test]
async fn cached_counts_gemini() {
    cached_counts(PROVIDERS[4]).await;
}

/// Every `cache_control` marker of an Anthropic request body, as the path
/// of the object that carries it.
fn markers(body: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, path: String, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(c) = m.get("cache_control") {
                    assert_eq!(c, &serde_json::json!({"type": "ephemeral"}), "{path}");
                    out.push(path.clone());
                }
                for (k, v) in m {
                    walk(v, format!("{path}.{k}"), out);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(v, format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, String::new(), &mut out);
    out
}

#[tokio::test]
async fn anthropic_breakpoints_sit_where_they_belong_with_thinking_and_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let signed = |text: &str, sig: &str| Step::Reasoning {
        text: text.into(),
        signature: Some(sig.into()),
    };
    let mock = MockServer::start(vec![
        Reply::stream(vec![
            signed("look first", "sig-1"),
            bash_call("call_1", "echo hi"),
        ]),
        Reply::stream(vec![
            signed("and again", "sig-2"),
            bash_call("call_2", "echo ho"),
        ]),
        Reply::stream(vec![Step::text("It said hi and ho.")]),
        Reply::text("Sure."),
    ])
    .await
    .unwrap();
    let mut cfg = provider_config("anthropic", &mock.url(), dir.path());
    cfg.thinking = mm_agent::config::Thinking::On;
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    let (report, _) = ask(&mut agent, "run echo hi then echo ho").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    let (report, _) = ask(&mut agent, "thanks").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    let bodies: Vec<serde_json::Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 4);
    let last_tool = bodies[0]["tools"].as_array().unwrap().len() - 1;
    let fixed = [".system[0]".to_string(), format!(".tools[{last_tool}]")];
    // The first request: one user turn, marked once.
    let mut want = vec![".messages[0].content[0]".to_string()];
    want.extend(fixed.iter().cloned());
    let mut got = markers(&bodies[0]);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(bodies[0]["system"][0]["text"], agent.system_prompt());
    for (n, body) in bodies.iter().enumerate() {
        let got = markers(body);
        assert!(got.len() <= 4, "request {n}: {got:?}");
        let msgs = body["messages"].as_array().unwrap();
        let last = msgs.len() - 1;
        let last_block = msgs[last]["content"].as_array().unwrap().len() - 1;
        assert!(
            got.contains(&format!(".messages[{last}].content[{last_block}]")),
            "request {n}: the last block of the last turn: {got:?}"
        );
        for f in &fixed {
            assert!(got.contains(f), "request {n}: {f} in {got:?}");
        }
        // Never on a thinking block; the thinking stays first in its turn.
        for m in msgs {
            for b in m["content"].as_array().unwrap() {
                if b["type"] == "thinking" {
                    assert!(b.get("cache_control").is_none(), "request {n}: {b}");
                }
            }
            if m["role"] == "assistant" && m["content"][0]["type"] != "text" {
                assert_eq!(m["content"][0]["type"], "thinking", "request {n}: {m}");
            }
        }
    }
    // The third request: tool results last; the second marker sits where
    // the previous request's last one did.
    let got = markers(&bodies[2]);
    let msgs = bodies[2]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 5, "{msgs:?}");
    assert_eq!(msgs[4]["content"][0]["type"], "tool_result");
    assert!(
        got.contains(&".messages[4].content[0]".to_string()),
        "{got:?}"
    );
    assert!(
        got.contains(&".messages[2].content[0]".to_string()),
        "{got:?}"
    );
    let prev = markers(&bodies[1]);
    assert!(
        prev.contains(&".messages[2].content[0]".to_string()),
        "{prev:?}"
    );

    // cacheControl: false sends none of it.
    let mock = MockServer::start(vec![Reply::text("ok")]).await.unwrap();
    let mut off = provider_config("anthropic", &mock.url(), dir.path());
    off.cache_control = false;
    off.thinking = mm_agent::config::Thinking::On;
    let mut agent = Agent::new(off, dir.path(), PermissionSource::Terminal).unwrap();
    ask(&mut agent, "run echo hi then echo ho").await;
    let body = &mock.requests()[0].body;
    assert!(markers(body).is_empty(), "{body}");
    assert_eq!(body["system"], agent.system_prompt());
}

#[tokio::test]
async fn openai_gets_one_prompt_cache_key_per_session_and_compatible_servers_none() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"echo hi"}"#),
        Reply::text("hi"),
        Reply::text("again"),
        Reply::text("other model"),
        Reply::text("new session"),
    ])
    .await
    .unwrap();
    let cfg = provider_config("openai", &mock.url(), dir.path());
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    ask(&mut agent, "run echo hi").await;
    drop(agent);
    // --continue in a new process keeps the key; so does /model.
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    agent.resume(None).unwrap();
    ask(&mut agent, "again").await;
    agent.set_model("openai/other-model").unwrap();
    ask(&mut agent, "and you?").await;
    agent.new_session();
    ask(&mut agent, "fresh").await;
    let keys: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r.body["prompt_cache_key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 5);
    assert!(keys[0].len() >= 16, "{keys:?}");
    assert!(keys[..4].iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_ne!(keys[4], keys[0], "/new starts another session: {keys:?}");

    // Servers of the OpenAI-compatible family (llama.cpp, vLLM…) never get
    // it, and cacheControl: false keeps it from OpenAI too.
    let mock = MockServer::start(vec![Reply::text("a"), Reply::text("b")])
        .await
        .unwrap();
    let mut agent = Agent::new(
        provider_config("openai-compatible", &mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    ask(&mut agent, "hi").await;
    let mut off = provider_config("openai", &mock.url(), dir.path());
    off.cache_control = false;
    let mut agent = Agent::new(off, dir.path(), PermissionSource::Terminal).unwrap();
    ask(&mut agent, "hi").await;
    for r in mock.requests() {
        assert!(r.body.get("prompt_cache_key").is_none(), "{}", r.body);
    }
}

/// A request split into the part that must never change within a session
/// (system prompt, tool declarations) and its list of turns, with the
/// breakpoint markers taken out: they move forward by design and are not
/// part of what a provider caches.
fn prefix_parts(
    provider: &str,
    body: &serde_json::Value,
) -> (serde_json::Value, Vec<serde_json::Value>) {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("cache_control");
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut body = body.clone();
    strip(&mut body);
    let (fixed, turns) = match provider {
        "anthropic" => (
            serde_json::json!([body["system"], body["tools"]]),
            &body["messages"],
        ),
        "gemini" => (
            serde_json::json!([body["systemInstruction"], body["tools"]]),
            &body["contents"],
        ),
        _ => (serde_json::json!([body["tools"]]), &body["messages"]),
    };
    (fixed, turns.as_array().cloned().unwrap_or_default())
}

/// Consecutive requests of one session side by side: each one's fixed part
/// is the one before's, and its turns start with all of the one before's,
/// byte for byte. Fails naming the request and the first turn that changed.
fn assert_prefix_kept(provider: &str, bodies: &[serde_json::Value]) {
    for (n, pair) in bodies.windows(2).enumerate() {
        let (fixed_a, turns_a) = prefix_parts(provider, &pair[0]);
        let (fixed_b, turns_b) = prefix_parts(provider, &pair[1]);
        assert_eq!(
            fixed_a,
            fixed_b,
            "{provider}: the system prompt or the tools changed between requests {n} and {}",
            n + 1
        );
        assert!(
            turns_b.len() > turns_a.len(),
            "{provider}: request {} is not longer than request {n}",
            n + 1
        );
        for (i, (a, b)) in turns_a.iter().zip(&turns_b).enumerate() {
            assert_eq!(
                a,
                b,
                "{provider}: turn {i} of request {n} was rewritten in request {}",
                n + 1
            );
        }
    }
}

async fn prefix_unchanged(provider: &str) {
    let dir = tempfile::tempdir().unwrap();
    let signed = |text: &str| Step::Reasoning {
        text: text.into(),
        signature: Some(format!("sig-{text}")),
    };
    let mock = MockServer::start(vec![
        // A turn with a tool call.
        Reply::stream(vec![signed("plan"), bash_call("call_1", "echo hi")]),
        Reply::stream(vec![Step::text("It said hi.")]),
        // A turn cancelled once its answer began.
        Reply::stream(vec![
            Step::text("partial "),
            Step::stall(3000),
            Step::text("never seen"),
        ]),
        // --continue in a new agent, then /model.
        Reply::stream(vec![Step::text("Resumed.")]),
        Reply::stream(vec![bash_call("call_2", "echo ho")]),
        Reply::stream(vec![Step::text("Other model.")]),
    ])
    .await
    .unwrap();
    let mut cfg = provider_config(provider, &mock.url(), dir.path());
    cfg.thinking = mm_agent::config::Thinking::On;
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    let (report, _) = ask(&mut agent, "run echo hi").await;
    assert_eq!(report.outcome, TurnOutcome::Done, "{provider}");

    let cancel = tokio_util::sync::CancellationToken::new();
    // Cancels the turn at its first piece of answer text.
    let on_text = cancel.clone();
    let sink = Recorder::with_hook(move |e| {
        if matches!(e, Event::Text { .. }) {
            on_text.cancel();
        }
    });
    let report = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        agent.ask("tell me more", sink, cancel),
    )
    .await
    .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Cancelled, "{provider}");
    drop(agent);

    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    agent.resume(None).unwrap();
    let (report, _) = ask(&mut agent, "go on").await;
    assert_eq!(report.outcome, TurnOutcome::Done, "{provider}");
    agent
        .set_model(&format!("{provider}/another-model"))
        .unwrap();
    let (report, _) = ask(&mut agent, "run echo ho").await;
    assert_eq!(report.outcome, TurnOutcome::Done, "{provider}");

    let bodies: Vec<serde_json::Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 6, "{provider}");
    // The requests are what the scenario says: the cancelled answer's
    // part goes on after --continue, and /model took effect.
    assert!(
        bodies[3].to_string().contains("partial "),
        "{provider}: {}",
        bodies[3]
    );
    let paths: Vec<String> = mock.requests().into_iter().map(|r| r.path).collect();
    let model_of = |i: usize| match provider {
        "gemini" => paths[i].clone(),
        _ => bodies[i]["model"].to_string(),
    };
    assert!(model_of(3).contains("test-model"), "{provider}");
    assert!(model_of(4).contains("another-model"), "{provider}");
    assert_prefix_kept(provider, &bodies);

    // And the check itself fails when an earlier part is rewritten.
    let mut changed = bodies.clone();
    let key = match provider {
        "gemini" => "contents",
        _ => "messages",
    };
    let first = &mut changed[5][key][1];
    *first = serde_json::json!({"rewritten": true});
    let caught = std::panic::catch_unwind(|| assert_prefix_kept(provider, &changed));
    assert!(
        caught.is_err(),
        "{provider}: a rewritten turn went unnoticed"
    );
    let mut changed = bodies;
    changed[2]["tools"] = serde_json::json!([]);
    let caught = std::panic::catch_unwind(|| assert_prefix_kept(provider, &changed));
    assert!(caught.is_err(), "{provider}: changed tools went unnoticed");
}

#[tokio::test]
async fn prefix_unchanged_ollama() {
    prefix_unchanged(PROVIDERS[0]).await;
}
#[tokio::test]
async fn prefix_unchanged_openai() {
    prefix_unchanged(PROVIDERS[1]).await;
}
#[tokio::test]
async fn prefix_unchanged_openai_compatible() {
    prefix_unchanged(PROVIDERS[2]).await;
}
#[tokio::test]
async fn prefix_unchanged_anthropic() {
    prefix_unchanged(PROVIDERS[3]).await;
}
#[tokio::test]
async fn prefix_unchanged_gemini() {
    prefix_unchanged(PROVIDERS[4]).await;
}
