//! A saved conversation replayed is its live turns played again: the same
//! events a front end got live, less what only a live turn has (the
//! spinner's texts, the running mark, the recap), plus each question.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Recorder, ask, config};
use mm_agent::ui::Event;
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply, Step};

/// What both a live turn and a replay show.
fn shown(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::Text { .. }
                    | Event::Reasoning { .. }
                    | Event::ToolStart { .. }
                    | Event::ToolEnd { .. }
            )
        })
        .collect()
}

#[tokio::test]
async fn a_replay_shows_what_the_live_turns_showed() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::stream(vec![
            Step::reasoning("Let me list them."),
            Step::text("Looking."),
            Step::ToolCall {
                index: 0,
                id: Some("c1".into()),
                name: "bash".into(),
                arguments: r#"{"command":"printf 'a\\nb\\n'"}"#.into(),
            },
        ]),
        Reply::text("Two files."),
        Reply::tool_call("c2", "bash", r#"{"command":"exit 3"}"#),
        Reply::text("It failed."),
    ])
    .await
    .unwrap();
    let cfg = config(&mock.url(), dir.path());
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    let (_, first) = ask(&mut agent, "list the files").await;
    let (_, second) = ask(&mut agent, "now fail").await;
    let mut live = shown(first.events());
    live.extend(shown(second.events()));

    // Another process continues the session and shows it.
    drop(agent);
    let mut again = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    again.resume(None).unwrap();
    let replayed = Recorder::new();
    again.replay(replayed.clone());
    let all = replayed.events();
    let questions: Vec<&Event> = all
        .iter()
        .filter(|e| matches!(e, Event::Question { .. }))
        .collect();
    assert_eq!(
        questions,
        [
            &Event::Question {
                text: "list the files".into()
            },
            &Event::Question {
                text: "now fail".into()
            }
        ]
    );
    assert_eq!(shown(all), live);
}

/// What a front end shows of an event, a subagent's under its parent.
fn shown_with_children(events: Vec<Event>) -> Vec<String> {
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolStart { info } => Some(format!("start {}", info.id)),
            Event::ToolEnd { id, output, .. } => Some(format!("end {id}: {output}")),
            Event::Child { parent, event, .. } => match *event {
                Event::ToolStart { info } => Some(format!("{parent}> start {}", info.id)),
                Event::ToolEnd { id, output, .. } => Some(format!("{parent}> end {id}: {output}")),
                Event::Text { text } => Some(format!("{parent}> text {text}")),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_replay_shows_each_subagents_work_under_its_task_call() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call(
            "t1",
            "task",
            r#"{"description":"look","prompt":"list the files"}"#,
        ),
        Reply::tool_call("c1", "bash", r#"{"command":"echo listed"}"#),
        Reply::text("One file."),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let cfg = config(&mock.url(), dir.path());
    let mut agent = Agent::new(cfg.clone(), dir.path(), PermissionSource::Terminal).unwrap();
    let (_, live) = ask(&mut agent, "look around").await;
    let live = shown_with_children(live.events());
    assert_eq!(
        live,
        [
            "start t1",
            "t1> start c1",
            "t1> end c1: listed\n",
            "t1> text One file.",
            "end t1: One file.",
        ]
    );
    drop(agent);
    let mut again = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    again.resume(None).unwrap();
    let replayed = Recorder::new();
    again.replay(replayed.clone());
    assert_eq!(shown_with_children(replayed.events()), live);
}
