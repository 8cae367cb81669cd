//! Prompt caching through the agent, for every provider, against the mock
//! over real HTTP: the cached part of the input each server reports is
//! read, summed over a turn's requests, given in the turn's report and its
//! `TurnEnd` event, and kept in the session file across `--continue`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Once;

use common::{ask, config};
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
