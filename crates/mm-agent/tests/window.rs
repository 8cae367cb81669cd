//! The model's window in force: asked of the server, adopted from an
//! overflow answer, compaction that fits it whatever the history, an
//! Ollama prompt cut silently, and tool results sized to it. Against the
//! mock's simulated window, which refuses (or, on Ollama's wire, cuts) any
//! request longer than the window, as those servers do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Recorder, ask, config};
use mm_agent::ui::TurnOutcome;
use mm_agent::{Agent, PermissionSource};
use mm_config::ContextWindow;
use mm_engine::WindowSource;
use mm_mock::{MockServer, Options, Reply, mock_tokens};
use tokio_util::sync::CancellationToken;

/// `n` words `word0 word1 …`: filler of the size wanted that is not one
/// passage repeated (the answer-loop guard would rightly stop that).
fn varied(word: &str, n: usize) -> String {
    (0..n).map(|i| format!("{word}{i} ")).collect()
}

/// A server with `window` tokens answering every request with `answer`.
async fn server(window: u64, answer: &str) -> MockServer {
    MockServer::start_with(
        vec![Reply::text(answer)],
        Options {
            repeat: true,
            window: Some(window),
            ..Options::default()
        },
    )
    .await
    .unwrap()
}

fn agent_for(provider: &str, mock: &MockServer, dir: &std::path::Path) -> Agent {
    agent_with(provider, mock, dir, |_| {})
}

fn agent_with(
    provider: &str,
    mock: &MockServer,
    dir: &std::path::Path,
    change: impl FnOnce(&mut mm_config::Config),
) -> Agent {
    let mut cfg = config(&mock.url(), dir);
    cfg.model = format!("{provider}/small");
    cfg.base_url = Some(match provider {
        "openai-compatible" => format!("{}/v1", mock.url()),
        _ => mock.url(),
    });
    cfg.context_window = ContextWindow::Auto;
    change(&mut cfg);
    // The test's servers are on 127.0.0.1: no key is needed
    // (docs/design.md#keyless-loopback-servers).
    Agent::new(cfg, dir, PermissionSource::Terminal).unwrap()
}

/// The requests the server took, and whether each fit its window.
fn all_fit(mock: &MockServer, window: u64) -> bool {
    mock.requests()
        .iter()
        .all(|r| mock_tokens(r.body.to_string().len()) <= window + window / 10)
}

#[tokio::test]
async fn five_questions_on_a_small_window_are_all_answered_on_every_wire() {
    let answer = format!("Here is what I found. {}", varied("detail", 180));
    for provider in ["openai-compatible", "anthropic", "gemini", "ollama"] {
        let dir = tempfile::tempdir().unwrap();
        let window = 2048;
        let mock = server(window, &answer).await;
        let mut agent = agent_for(provider, &mock, dir.path());
        let mut notices = Vec::new();
        for i in 1..=5 {
            let (report, sink) = ask(&mut agent, &format!("question {i}: tell me more")).await;
            assert_eq!(report.outcome, TurnOutcome::Done, "{provider} question {i}");
            notices.extend(sink.notices());
        }
        // The window came from the server, not from a guess.
        let w = agent.window();
        assert_eq!(w.tokens, window, "{provider}");
        assert!(matches!(w.source, WindowSource::Server(_)), "{provider}");
        assert!(
            notices.iter().any(|n| n.contains("compacted:")),
            "{provider}: {notices:?}"
        );
        if provider == "ollama" {
            // Ollama never refuses; nothing past the window reached it
            // after the first cut was seen.
            assert!(agent.history().len() < 11, "{provider}");
        }
    }
}

#[tokio::test]
async fn an_overflow_is_one_notice_and_the_request_is_sent_again() {
    // The settings say 8192; the server holds 2048 and says so when a
    // request does not fit.
    let dir = tempfile::tempdir().unwrap();
    let mock = server(2048, &varied("word", 400)).await;
    let mut cfg = config(&mock.url(), dir.path());
    cfg.context_window = ContextWindow::Tokens(8192);
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    let mut seen = Vec::new();
    for i in 1..=5 {
        let (report, sink) = ask(&mut agent, &format!("question {i}")).await;
        assert_eq!(report.outcome, TurnOutcome::Done, "question {i}");
        seen.extend(sink.notices());
    }
    let overflow: Vec<&String> = seen.iter().filter(|n| n.contains("did not fit")).collect();
    assert_eq!(overflow.len(), 1, "{seen:?}");
    assert!(
        overflow[0].contains("did not fit the model's window of 2048; compacted:")
            && overflow[0].ends_with("sending it again"),
        "{}",
        overflow[0]
    );
    // The true window is in force from then on.
    let w = agent.window();
    assert_eq!((w.tokens, w.source), (2048, WindowSource::Overflow));
    // Every request after the refused one fit.
    let refused = mock
        .all_requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .count()
        - mock.requests().len();
    assert_eq!(
        refused, 0,
        "a refused request takes no reply but is recorded"
    );
}

#[tokio::test]
async fn a_question_too_long_alone_is_sent_and_fails_on_the_servers_word() {
    let dir = tempfile::tempdir().unwrap();
    let mock = server(2048, "short answer").await;
    let mut agent = agent_for("openai-compatible", &mock, dir.path());
    assert_eq!(ask(&mut agent, "hello").await.0.outcome, TurnOutcome::Done);
    let huge = "please read this: ".to_owned() + &"lorem ipsum ".repeat(1500);
    let (report, _sink) = ask(&mut agent, &huge).await;
    let TurnOutcome::Failed(error) = &report.outcome else {
        panic!("{:?}", report.outcome)
    };
    assert_eq!(error.kind, mm_agent::FailureKind::Overflow);
    let text = &error.message;
    // mm sent it (it never refuses on its own estimate); the server's
    // refusal ends the turn, naming the server's count and window.
    let sent: Vec<u64> = mock
        .all_requests()
        .iter()
        .filter(|r| r.body["tools"].is_array() && r.body.to_string().contains("lorem"))
        .map(|r| mock_tokens(r.body.to_string().len()))
        .collect();
    let last = sent.last().expect("the question was sent");
    assert!(
        text.starts_with(&format!(
            "the request ({last} tokens) does not fit the model's window of 2048 tokens"
        )),
        "{text} ({sent:?})"
    );
    // The question that did not fit is not kept; the next one is answered.
    assert!(!agent.history().iter().any(
        |m| matches!(m, mm_agent::Message::User { content, .. } if content.contains("lorem"))
    ));
    assert_eq!(
        ask(&mut agent, "and now?").await.0.outcome,
        TurnOutcome::Done
    );
    assert_eq!(agent.last_answer(), "short answer");
}

#[tokio::test]
async fn a_first_question_is_sent_whatever_mm_guesses_of_the_window() {
    // A window far smaller than mm's own prompt and tools by its estimate
    // of four characters a token: the server, which counts its own way,
    // answers, so mm must ask it.
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start_with(
        vec![Reply::text("fine")],
        Options {
            repeat: true,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    cfg.context_window = ContextWindow::Tokens(256);
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    for q in ["what is in this folder?", "and then?"] {
        let (report, _sink) = ask(&mut agent, q).await;
        assert_eq!(report.outcome, TurnOutcome::Done, "{q}");
    }
    assert_eq!(agent.last_answer(), "fine");
    assert!(mock.requests().len() >= 2);
}

#[tokio::test]
async fn compaction_of_a_history_five_times_the_window_fits_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let window = 2048;
    // A session built on a server with room: twelve exchanges of ~4 KB
    // each, about 12,000 tokens, more than five times the small server's
    // window.
    let roomy = MockServer::start_with(
        vec![Reply::text(format!("answer {}", varied("text", 800)))],
        Options {
            repeat: true,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    let mut cfg = config(&roomy.url(), dir.path());
    cfg.context_window = ContextWindow::Tokens(100_000);
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    for i in 0..12 {
        assert_eq!(
            ask(&mut agent, &format!("question {i}")).await.0.outcome,
            TurnOutcome::Done
        );
    }
    let history_tokens = mock_tokens(serde_json::to_string(agent.history()).unwrap().len());
    assert!(history_tokens > 5 * window, "{history_tokens}");

    // The same session, continued against a server of 2048 tokens (by
    // another agent, as after a restart: the first lets its file go).
    drop(agent);
    let small = server(window, "SUMMARY: the user asked ten questions.").await;
    let mut cfg = config(&small.url(), dir.path());
    cfg.context_window = ContextWindow::Auto;
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    agent.resume(None).unwrap();
    let sink = Recorder::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        agent.compact(None, sink.clone(), CancellationToken::new()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(agent.window().tokens, window);
    let summaries = small.requests().len();
    assert!(summaries >= 5, "the older part went in pieces: {summaries}");
    assert!(all_fit(&small, window), "every summary request fit");
    let refused = small.all_requests().len() - summaries;
    // /props (the window, then the slots a summary may use) and the
    // exact-count question (which this server cannot answer) are the only
    // other requests: none was refused.
    assert_eq!(
        refused,
        3,
        "{:?}",
        small
            .all_requests()
            .iter()
            .map(|r| &r.path)
            .collect::<Vec<_>>()
    );
    // The next question fits too.
    assert_eq!(ask(&mut agent, "go on").await.0.outcome, TurnOutcome::Done);
}

#[tokio::test]
async fn ollama_cutting_a_prompt_silently_is_said_and_compacted() {
    let dir = tempfile::tempdir().unwrap();
    // Answers of short lines: mm's estimate of a request (characters / 4
    // of what it holds) falls short of the server's count (here the
    // mock's, bytes / 4 of the JSON, where a newline takes two), and with
    // compaction only at the full window the server cuts first.
    let mock = server(2048, &"a\n".repeat(600)).await;
    let mut agent = agent_with("ollama", &mock, dir.path(), |c| c.compact.threshold = 1.0);
    let mut said = Vec::new();
    for i in 1..=8 {
        let (report, sink) = ask(&mut agent, &format!("question {i}")).await;
        assert_eq!(report.outcome, TurnOutcome::Done);
        said.extend(sink.notices());
    }
    let cut = said
        .iter()
        .position(|n| n.contains("the server may have cut its start"));
    let cut = cut.unwrap_or_else(|| panic!("{said:?}"));
    assert!(said[cut].starts_with("the prompt filled the model's window (2048 of 2048 tokens)"));
    assert!(
        said[cut + 1..].iter().any(|n| n.starts_with("compacted:")),
        "{said:?}"
    );
    // num_ctx is the window in force, the same in every request.
    for r in mock.requests() {
        assert_eq!(r.body["options"]["num_ctx"], 2048);
    }
}

#[tokio::test]
async fn tool_results_are_sized_to_a_small_window() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start_with(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"seq 1 5000"}"#),
            Reply::text("done"),
        ],
        Options {
            window: Some(4096),
            ..Options::default()
        },
    )
    .await
    .unwrap();
    let mut agent = agent_for("openai-compatible", &mock, dir.path());
    assert_eq!(ask(&mut agent, "count").await.0.outcome, TurnOutcome::Done);
    let result = agent
        .history()
        .iter()
        .find_map(|m| match m {
            mm_agent::Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    // A quarter of 4096 tokens at four characters each
    // (docs/design.md#tool-result-budget).
    assert_eq!(agent.output_budget(), 4096);
    assert_eq!(result.chars().count(), 4096);
    assert!(result.contains("characters omitted"), "{result}");
    assert!(result.starts_with("1\n2\n") && result.ends_with("5000\n"));
}

/// A compaction's summaries are side requests: on llama.cpp with two
/// slots they go to the last slot and the session keeps slot 0, so its
/// cached prompt survives them; with one slot nothing is pinned.
#[tokio::test]
async fn a_compactions_summaries_leave_the_sessions_slot_alone() {
    for slots in [2u64, 1] {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockServer::start_with(
            vec![Reply::text(format!("answer {}", varied("w", 300)))],
            Options {
                repeat: true,
                routes: vec![mm_mock::Route::get(
                    "/props",
                    serde_json::json!({
                        "total_slots": slots,
                        "default_generation_settings": {"n_ctx": 8192}
                    }),
                )],
                ..Options::default()
            },
        )
        .await
        .unwrap();
        let mut cfg = config(&mock.url(), dir.path());
        cfg.context_window = ContextWindow::Auto;
        let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
        for i in 0..8 {
            ask(&mut agent, &format!("question {i}")).await;
        }
        let before = mock.requests().len();
        tokio::time::timeout(
            std::time::Duration::from_secs(30),
            agent.compact(None, Recorder::new(), CancellationToken::new()),
        )
        .await
        .unwrap()
        .unwrap();
        let summaries = mock.requests().len() - before;
        assert!(summaries >= 1, "slots {slots}");
        ask(&mut agent, "after").await;
        let bodies: Vec<serde_json::Value> = mock.requests().into_iter().map(|r| r.body).collect();
        let slot = |b: &serde_json::Value| b.get("id_slot").and_then(|v| v.as_u64());
        let side: Vec<Option<u64>> = bodies[before..before + summaries]
            .iter()
            .map(slot)
            .collect();
        let next = slot(bodies.last().unwrap());
        if slots == 2 {
            assert!(side.iter().all(|s| *s == Some(1)), "{side:?}");
            assert_eq!(next, Some(0));
        } else {
            assert!(side.iter().all(Option::is_none), "{side:?}");
            assert_eq!(next, None);
        }
    }
}
