//! Cancellation mid-stream and mid-tool: the turn ends at once, the history
//! keeps what happened, and no process of the command survives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Recorder, config, render};
use mm_agent::ui::{Event, TurnOutcome};
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply, Step};
use mm_test_support::procs;
use tokio_util::sync::CancellationToken;

async fn wait_for(sink: &Recorder, what: impl Fn(&Event) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sink.events().iter().any(&what) {
        assert!(Instant::now() < deadline, "timed out waiting for an event");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn cancelling_mid_stream_keeps_the_partial_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::stream(vec![
        Step::text("the first half"),
        Step::stall(20_000),
        Step::text(" never"),
    ])])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let sink = Recorder::new();
    let cancel = CancellationToken::new();
    let (s, c) = (sink.clone(), cancel.clone());
    let canceller = tokio::spawn(async move {
        wait_for(&s, |e| matches!(e, Event::Text { .. })).await;
        c.cancel();
    });
    let started = Instant::now();
    let report = tokio::time::timeout(
        Duration::from_secs(10),
        agent.ask("talk", sink.clone(), cancel),
    )
    .await
    .unwrap();
    canceller.await.unwrap();
    assert_eq!(report.outcome, TurnOutcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        render(agent.history()),
        "user: talk\nassistant: the first half"
    );
}

#[tokio::test]
async fn cancelling_mid_tool_kills_the_command_and_keeps_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "sleep 31.4159";
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", format!(r#"{{"command":"{marker}"}}"#)),
        Reply::text("unused"),
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
    let cancel = CancellationToken::new();
    let (s, c) = (sink.clone(), cancel.clone());
    let canceller = tokio::spawn(async move {
        wait_for(&s, |e| matches!(e, Event::ToolRunning { .. })).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let started = Instant::now();
    let report = tokio::time::timeout(
        Duration::from_secs(10),
        agent.ask("sleep", sink.clone(), cancel),
    )
    .await
    .unwrap();
    canceller.await.unwrap();
    assert_eq!(report.outcome, TurnOutcome::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(mock.requests().len(), 1, "no request after the cancel");
    let history = render(agent.history());
    assert!(
        history.starts_with(&format!(
            "user: sleep\nassistant:  [bash {{\"command\":\"{marker}\"}}]\ntool bash: "
        )),
        "{history}"
    );
    assert_eq!(agent.history().len(), 3, "{history}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        procs::with_cmdline(marker),
        Vec::<String>::new(),
        "the command's process group survived"
    );
}
