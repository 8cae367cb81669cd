//! The history records each call's status as its tool reported it
//! (`Message::Tool::failed`), so a replay never has to guess it from text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Recorder, config};
use mm_agent::ui::{Event, ToolStatus, TurnOutcome};
use mm_agent::{Agent, Message, NOT_RUN, PermissionSource};
use mm_mock::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

fn statuses(history: &[Message]) -> Vec<(String, bool)> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                content, failed, ..
            } => Some((content.clone(), *failed)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn tool_results_carry_the_status_the_tool_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo x; exit 3"}"#),
        Reply::tool_call("c2", "bash", r#"{"command":"printf '[error: y]\\n'"}"#),
        Reply::tool_call("c3", "read_file", r#"{"path":"missing.txt"}"#),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let sink = Recorder::new();
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        agent.ask("go", sink.clone(), CancellationToken::new()),
    )
    .await
    .expect("the turn finished in time");
    assert_eq!(report.outcome, TurnOutcome::Done);
    assert_eq!(
        statuses(agent.history()),
        vec![
            ("x\n[exit code: exit status 3]".to_string(), true),
            // Text that looks like an error from a command that succeeded.
            ("[error: y]\n".to_string(), false),
            (
                "missing.txt does not exist. Create it with write_file".to_string(),
                true
            ),
        ]
    );
    // The live status said the same.
    let live: Vec<ToolStatus> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolEnd { status, .. } => Some(status),
            _ => None,
        })
        .collect();
    assert_eq!(
        live,
        [
            ToolStatus::Failed,
            ToolStatus::Completed,
            ToolStatus::Failed
        ]
    );
    // Providers never see the flag.
    let sent = &mock.requests()[3].body["messages"];
    for m in sent.as_array().unwrap() {
        assert!(m.get("failed").is_none(), "{m}");
    }
}

#[tokio::test]
async fn calls_left_unrun_are_recorded_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::tool_call(
        "c1",
        "bash",
        r#"{"command":"echo 1"}"#,
    )])
    .await
    .unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    cfg.max_turns = 1;
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        agent.ask("go", Recorder::new(), CancellationToken::new()),
    )
    .await
    .expect("the turn finished in time");
    assert_eq!(report.outcome, TurnOutcome::MaxTurns);
    assert_eq!(statuses(agent.history()), vec![(NOT_RUN.to_string(), true)]);
}
