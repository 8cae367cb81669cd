//! The cached part of the input, end to end: the built binary against the
//! mock over real HTTP says it on the tokens line after a turn and in the
//! JSON `usage` and `turn_end` lines, summed over the turn's requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, text};
use mm_mock::{Reply, Step};

fn script() -> Vec<Reply> {
    vec![
        Reply::stream(vec![
            Step::ToolCall {
                index: 0,
                id: Some("call_1".into()),
                name: "bash".into(),
                arguments: r#"{"command":"echo hi"}"#.into(),
            },
            Step::Usage {
                prompt: 1000,
                completion: 20,
            },
            Step::Cached { tokens: 0 },
        ]),
        Reply::stream(vec![
            Step::text("It printed hi."),
            Step::Usage {
                prompt: 1100,
                completion: 5,
            },
            Step::Cached { tokens: 1000 },
        ]),
    ]
}

/// `anthropic` (cache reads apart from `input_tokens`) and
/// `openai-compatible` (llama.cpp's fields) over the mock.
fn world(provider: &str) -> World {
    let w = World::new(script(), "");
    let base = match provider {
        "anthropic" => w.server.url(),
        _ => format!("{}/v1", w.server.url()),
    };
    w.write_config(&format!(
        "model: {provider}/test\nbaseURL: {base}\nretries: 0\nwatchdog: 15\nlsp:\n  servers: []\n"
    ));
    w
}

#[test]
fn the_recap_line_says_the_session_tokens_and_the_cached_part() {
    for provider in ["anthropic", "openai-compatible"] {
        let w = world(provider);
        let mut cmd = w.command(&["-p", "say hi"]);
        cmd.env("ANTHROPIC_API_KEY", "sk-ant-test-caching");
        let out = common::run_bounded(cmd, None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{provider}: {stderr}");
        assert_eq!(text(&out.stdout), "It printed hi.\n", "{provider}");
        assert!(
            stderr.contains(
                "⚙ 1 command(s)\ncontext 3% of 32k · session in 2.1k (1k cached) · out 25\n"
            ),
            "{provider}: {stderr}"
        );
    }
}

#[test]
fn json_usage_and_turn_end_carry_cached_tokens() {
    for provider in ["anthropic", "openai-compatible"] {
        let w = world(provider);
        let mut cmd = w.command(&["-p", "say hi", "--output-format", "json"]);
        cmd.env("ANTHROPIC_API_KEY", "sk-ant-test-caching");
        let out = common::run_bounded(cmd, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let events: Vec<serde_json::Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let usage = events.iter().find(|e| e["type"] == "usage").unwrap();
        assert_eq!(
            (
                &usage["prompt_tokens"],
                &usage["completion_tokens"],
                &usage["cached_tokens"]
            ),
            (
                &serde_json::json!(2100),
                &serde_json::json!(25),
                &serde_json::json!(1000)
            ),
            "{provider}: {usage}"
        );
        let tokens = events.iter().find(|e| e["type"] == "tokens").unwrap();
        assert_eq!(
            tokens,
            &serde_json::json!({"type": "tokens",
                "session": {"prompt": 2100, "completion": 25, "cached": 1000},
                "context": 1105, "window": 32768}),
            "{provider}"
        );
        let end = &events[events.len() - 2];
        assert_eq!(end["type"], "turn_end");
        assert_eq!(end["cached_tokens"], 1000, "{provider}: {end}");
        // The run's result, last, carries them too.
        let result = events.last().unwrap();
        assert_eq!(result["type"], "result");
        assert_eq!(
            result["usage"]["cached_tokens"], 1000,
            "{provider}: {result}"
        );
    }
}

#[test]
fn a_server_that_says_nothing_cached_gives_zero_and_no_mention() {
    let w = World::new(
        vec![Reply::stream(vec![
            Step::text("hi"),
            Step::Usage {
                prompt: 30,
                completion: 2,
            },
        ])],
        "",
    );
    let out = w.run(&["-p", "hi"], None);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("context 0% of 32k · session in 30 · out 2\n"),
        "{stderr}"
    );
    assert!(!stderr.contains("cached"), "{stderr}");
    let w = World::new(
        vec![Reply::stream(vec![
            Step::text("hi"),
            Step::Usage {
                prompt: 30,
                completion: 2,
            },
        ])],
        "",
    );
    let out = w.run(&["-p", "hi", "--output-format", "json"], None);
    let usage: serde_json::Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "usage")
        .unwrap();
    assert_eq!(usage["cached_tokens"], 0, "{usage}");
}

/// Three requests of one turn whose prompts grow, the server reading
/// `cached[i]` tokens of each from its cache.
fn growing(cached: [u64; 3]) -> Vec<Reply> {
    let call = |n: usize, prompt: u64, cached: u64| {
        Reply::stream(vec![
            Step::ToolCall {
                index: 0,
                id: Some(format!("call_{n}")),
                name: "bash".into(),
                arguments: r#"{"command":"echo hi"}"#.into(),
            },
            Step::Usage {
                prompt,
                completion: 20,
            },
            Step::Cached { tokens: cached },
        ])
    };
    vec![
        call(1, 1000, cached[0]),
        call(2, 1500, cached[1]),
        Reply::stream(vec![
            Step::text("It printed hi twice."),
            Step::Usage {
                prompt: 2000,
                completion: 5,
            },
            Step::Cached { tokens: cached[2] },
        ]),
    ]
}

const RECOMPUTED: &str = "the model server computed the whole prompt again";

#[test]
fn a_server_that_recomputes_the_prompt_every_request_is_told_once_with_its_fix() {
    let w = World::new(growing([0, 0, 0]), "");
    let out = w.run(&["-p", "run echo hi twice"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches(RECOMPUTED).count(), 1, "{stderr}");
    assert!(stderr.contains("read 0 of the 1500 tokens"), "{stderr}");
    assert!(stderr.contains("--swa-full"), "{stderr}");
    assert!(stderr.contains("--cache-reuse"), "{stderr}");

    // A cache that serves each prompt's start says nothing.
    let w = World::new(growing([0, 990, 1490]), "");
    let out = w.run(&["-p", "run echo hi twice"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(RECOMPUTED), "{stderr}");
}
