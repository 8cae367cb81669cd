//! Context compression on demand, automatically at the threshold, and after
//! a context-length error; and a resumed session continuing from it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Recorder, ask, config, render_request};
use mm_agent::compact::SUMMARY_PREFIX;
use mm_agent::ui::TurnOutcome;
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

fn last_user(body: &serde_json::Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn compact_on_demand_then_resume_continues_from_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::text("answer one"),
        Reply::text("answer two"),
        Reply::text("answer three"),
        Reply::text("GOAL: test. DONE: three questions."),
        Reply::text("answer four"),
        Reply::text("answer five"),
    ])
    .await
    .unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    cfg.compact.keep_recent = 8; // only the last exchange fits verbatim
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    for q in ["question one", "question two", "question three"] {
        assert_eq!(ask(&mut agent, q).await.0.outcome, TurnOutcome::Done);
    }
    let sink = Recorder::new();
    agent
        .compact(Some("the tests"), sink.clone(), CancellationToken::new())
        .await
        .unwrap();
    let summary_request = &mock.requests()[3].body;
    assert!(
        summary_request.get("tools").is_none()
            || summary_request["tools"].as_array().unwrap().is_empty()
    );
    let instruction = last_user(summary_request);
    assert!(
        instruction.contains("Focus especially on: the tests"),
        "{instruction}"
    );
    assert!(
        render_request(summary_request)
            .contains("user: question one\nassistant: answer one\nuser: question two")
    );
    let notice = sink.notices();
    assert!(
        notice
            .iter()
            .any(|n| n.starts_with("compacted: 4 messages → summary of ")),
        "{notice:?}"
    );

    assert_eq!(
        ask(&mut agent, "question four").await.0.outcome,
        TurnOutcome::Done
    );
    let after = render_request(&mock.requests()[4].body);
    let expected = format!(
        "user: {SUMMARY_PREFIX}GOAL: test. DONE: three questions.\nuser: question three\nassistant: answer three\nuser: question four"
    );
    assert!(after.ends_with(&expected), "{after}");
    let history = agent.history().to_vec();
    drop(agent);

    let mut resumed = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    resumed.resume(None).unwrap();
    assert_eq!(resumed.history(), &history[..]);
    assert_eq!(
        ask(&mut resumed, "question five").await.0.outcome,
        TurnOutcome::Done
    );
    let resumed_request = render_request(&mock.requests()[5].body);
    assert!(
        resumed_request.ends_with(&format!(
            "{expected}\nassistant: answer four\nuser: question five"
        )),
        "{resumed_request}"
    );
    let info = &mm_agent::list_sessions(resumed.config(), Some(dir.path())).unwrap()[0];
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info.path).unwrap()).unwrap();
    assert_eq!(file["compactions"][0]["replaced"], 4);
    assert_eq!(
        file["compactions"][0]["summary"],
        "GOAL: test. DONE: three questions."
    );
}

#[tokio::test]
async fn compaction_runs_by_itself_past_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let big_answer = "x".repeat(6000);
    let mock = MockServer::start(vec![
        Reply::text(big_answer.clone()),
        Reply::text("SUMMARY"),
        Reply::text("small answer"),
    ])
    .await
    .unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    // The old answer must fit a summary request whole (a request keeps a
    // quarter of the window for the summary), and the next request must
    // pass the threshold.
    cfg.context_window = mm_config::ContextWindow::Tokens(3000);
    cfg.compact.threshold = 0.5;
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    assert_eq!(
        ask(&mut agent, "write a lot").await.0.outcome,
        TurnOutcome::Done
    );
    assert_eq!(ask(&mut agent, "short").await.0.outcome, TurnOutcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        render_request(&requests[1].body).contains(&big_answer),
        "the summary request carries the old history"
    );
    let last = render_request(&requests[2].body);
    assert!(
        last.ends_with(&format!("user: {SUMMARY_PREFIX}SUMMARY\nuser: short")),
        "{last}"
    );
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries_once() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::text("first answer"),
        Reply::status(400, "This model's maximum context length is 8192 tokens"),
        Reply::text("SUMMARY"),
        Reply::text("second answer"),
    ])
    .await
    .unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    cfg.compact.keep_recent = 4;
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    assert_eq!(ask(&mut agent, "first").await.0.outcome, TurnOutcome::Done);
    let (report, _) = ask(&mut agent, "second").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    assert_eq!(agent.last_answer(), "second answer");
    let last = render_request(&mock.requests()[3].body);
    assert!(
        last.contains(&format!("user: {SUMMARY_PREFIX}SUMMARY")),
        "{last}"
    );
    assert!(last.ends_with("user: second"), "{last}");
}
