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
