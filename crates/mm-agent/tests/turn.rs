//! The turn loop driven against the scripted mock model server over real
//! HTTP, with real tools (bash, files) in a temp project.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Recorder, ask, config, render, render_request};
use mm_agent::ui::{Event, TurnOutcome};
use mm_agent::{Agent, Message, NOT_RUN, PermissionSource};
use mm_mock::{MockServer, Reply, Step};
use tokio_util::sync::CancellationToken;

const LOOP: &str = "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. Please try a different approach or provide more information.]";

fn call(index: usize, id: &str, command: &str) -> Step {
    Step::ToolCall {
        index,
        id: Some(id.into()),
        name: "bash".into(),
        arguments: serde_json::json!({ "command": command }).to_string(),
    }
}

#[tokio::test]
async fn a_text_answer_streams_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::stream(vec![
        Step::text("Hel"),
        Step::text("lo!"),
    ])])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, sink) = ask(&mut agent, "hi").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    assert_eq!(sink.text(), "Hello!");
    assert_eq!(render(agent.history()), "user: hi\nassistant: Hello!");
    assert_eq!(agent.last_answer(), "Hello!");
    let sent = &mock.requests()[0].body;
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["messages"][0]["content"], agent.system_prompt());
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "grep",
            "glob",
            "job_output",
            "job_kill",
            "web_fetch",
            "todo",
            "task"
        ]
    );
    assert!(matches!(
        sink.events().last(),
        Some(Event::TurnEnd {
            outcome: TurnOutcome::Done,
            ..
        })
    ));
}

#[tokio::test]
async fn a_tool_call_runs_and_its_result_goes_back_paired() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo hi"}"#),
        Reply::text("It printed hi."),
    ])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, _) = ask(&mut agent, "run echo hi").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    assert_eq!(report.counters.commands, 1);
    assert_eq!(
        render(agent.history()),
        "user: run echo hi\nassistant:  [bash {\"command\":\"echo hi\"}]\ntool bash: hi\n\nassistant: It printed hi."
    );
    let second = &mock.requests()[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "c1");
    assert_eq!(messages[3]["content"], "hi\n");
}

#[tokio::test]
async fn two_tool_calls_in_one_reply_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::stream(vec![call(0, "a", "echo one"), call(1, "b", "echo two")]),
        Reply::text("both ran"),
    ])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, sink) = ask(&mut agent, "run both").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    assert_eq!(report.counters.commands, 2);
    let ends: Vec<String> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolEnd { id, output, .. } => Some(format!("{id}={output}")),
            _ => None,
        })
        .collect();
    assert_eq!(ends, ["a=one\n", "b=two\n"]);
    let sent = render_request(&mock.requests()[1].body);
    assert!(sent.ends_with("assistant:  [bash {\"command\":\"echo one\"}] [bash {\"command\":\"echo two\"}]\ntool: one\n\ntool: two\n"), "{sent}");
}

#[tokio::test]
async fn max_turns_stops_with_a_notice_and_leaves_no_call_unanswered() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo 1"}"#),
        Reply::tool_call("c2", "bash", r#"{"command":"echo 2"}"#),
        Reply::text("never asked"),
    ])
    .await
    .unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    cfg.max_turns = 2;
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    let (report, sink) = ask(&mut agent, "loop").await;
    assert_eq!(report.outcome, TurnOutcome::MaxTurns);
    assert!(
        sink.notices()
            .contains(&"[stopped: maxTurns (2) reached]".to_string())
    );
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(
        render(agent.history()),
        format!(
            "user: loop\nassistant:  [bash {{\"command\":\"echo 1\"}}]\ntool bash: 1\n\nassistant:  [bash {{\"command\":\"echo 2\"}}]\ntool bash: {NOT_RUN}"
        )
    );
}

#[tokio::test]
async fn a_server_dying_mid_turn_keeps_the_history_and_the_next_question_works() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo ran"}"#),
        Reply::stream(vec![Step::text("half an ans"), Step::Drop]),
        Reply::text("recovered"),
    ])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, sink) = ask(&mut agent, "first").await;
    assert!(
        matches!(report.outcome, TurnOutcome::Failed(_)),
        "{:?}",
        report.outcome
    );
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(e, Event::Error { .. }))
    );
    let kept = render(agent.history());
    assert!(
        kept.starts_with(
            "user: first\nassistant:  [bash {\"command\":\"echo ran\"}]\ntool bash: ran\n"
        ),
        "{kept}"
    );
    let (report, sink) = ask(&mut agent, "again").await;
    assert_eq!(report.outcome, TurnOutcome::Done);
    assert_eq!(sink.text(), "recovered");
    let third = render_request(&mock.requests()[2].body);
    assert!(
        third.contains("user: first\nassistant:  [bash {\"command\":\"echo ran\"}]\ntool: ran\n"),
        "{third}"
    );
    assert!(third.ends_with("user: again"), "{third}");
}

#[tokio::test]
async fn a_question_that_got_no_answer_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut agent = Agent::new(
        config(&format!("http://127.0.0.1:{port}"), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, _) = ask(&mut agent, "anyone there?").await;
    match report.outcome {
        TurnOutcome::Failed(error) => {
            // Nothing listens there: a network failure a caller can branch on.
            assert_eq!(error.kind, mm_agent::FailureKind::Network);
            let text = error.to_string();
            assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
            assert_eq!(text.lines().count(), 1, "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(agent.history().is_empty());
}

#[tokio::test]
async fn the_loop_detector_warns_then_stops_and_the_session_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let script: Vec<Reply> = (1..=6)
        .map(|i| Reply::tool_call(format!("c{i}"), "bash", r#"{"command":"echo same"}"#))
        .collect();
    let mock = MockServer::start(script).await.unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, _) = ask(&mut agent, "repeat").await;
    let stop = "[error: the model repeated the same bash call 6 times in a row with the same failing result — turn stopped by the loop detector; rephrase the request, or fix what the tool kept reporting]";
    assert_eq!(
        report.outcome,
        TurnOutcome::Failed(mm_agent::TurnError::new(mm_agent::FailureKind::Loop, stop))
    );
    let results: Vec<&str> = agent
        .history()
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 6);
    assert_eq!(results[1], "same\n");
    assert_eq!(results[2], format!("same\n{LOOP}"));
    assert_eq!(results[4], format!("same\n{LOOP}"));
    assert_eq!(results[5], format!("same\n{stop}"));
    let info = &mm_agent::list_sessions(agent.config(), Some(dir.path())).unwrap()[0];
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info.path).unwrap()).unwrap();
    assert_eq!(file["errors"][0]["where"], "generation");
    assert_eq!(file["errors"][0]["message"], stop);
}

#[tokio::test]
async fn switching_provider_drops_the_old_servers_address() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![]).await.unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    // Same provider: the configured address stays.
    agent.set_model("openai-compatible/other").unwrap();
    assert_eq!(agent.base_url(), format!("{}/v1", mock.url()));
    // Another provider: its own default address, never the old server's.
    agent.set_model("ollama/qwen3:8b").unwrap();
    assert_ne!(agent.base_url(), format!("{}/v1", mock.url()));
    assert_eq!(agent.model(), "ollama/qwen3:8b");
}

#[tokio::test]
async fn an_error_on_the_first_question_is_recorded_in_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo x"}"#),
        Reply::stream(vec![Step::raw("data: {not json")]),
    ])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let (report, _) = ask(&mut agent, "first").await;
    let TurnOutcome::Failed(error) = report.outcome else {
        panic!("{:?}", report.outcome)
    };
    let text = error.message;
    let info = &mm_agent::list_sessions(agent.config(), Some(dir.path())).unwrap()[0];
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info.path).unwrap()).unwrap();
    assert_eq!(file["errors"][0]["message"], text.as_str());
    assert_eq!(file["errors"][0]["where"], "generation");
}

#[tokio::test]
async fn a_cancelled_question_that_got_nothing_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::stream(vec![
        Step::stall(20_000),
        Step::text("late"),
    ])])
    .await
    .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.cancel();
    });
    let report = tokio::time::timeout(
        Duration::from_secs(10),
        agent.ask("hello?", Recorder::new(), cancel),
    )
    .await
    .unwrap();
    assert_eq!(report.outcome, TurnOutcome::Cancelled);
    assert!(agent.history().is_empty(), "{}", render(agent.history()));
}

#[tokio::test]
async fn a_failed_resume_keeps_the_current_session() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::text("one"), Reply::text("two")])
        .await
        .unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    ask(&mut agent, "q1").await;
    let id = agent.session_id().unwrap();
    assert!(agent.resume(Some("no-such-session")).is_err());
    ask(&mut agent, "q2").await;
    assert_eq!(agent.session_id().unwrap(), id);
    let sessions = mm_agent::list_sessions(agent.config(), Some(dir.path())).unwrap();
    assert_eq!(sessions.len(), 1, "no second file");
    assert_eq!(sessions[0].messages, 4);
}

#[tokio::test]
async fn a_session_left_mid_tool_resumes_with_every_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::text("continuing")])
        .await
        .unwrap();
    let cfg = config(&mock.url(), dir.path());
    // What a process killed during `sleep` leaves on disk.
    let store = mm_store::Store::new(cfg.sessions.dir.clone());
    let mut session = store.create(dir.path(), "openai-compatible/test").unwrap();
    session.data.messages = vec![
        Message::user("sleep"),
        Message::Assistant {
            content: String::new(),
            reasoning: vec![],
            tool_calls: vec![mm_agent::ToolCall {
                id: "s1".into(),
                name: "bash".into(),
                arguments: r#"{"command":"sleep 20"}"#.into(),
            }],
        },
    ];
    session.save().unwrap();
    let id = session.data.id.clone();
    drop(session);
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    agent.resume(Some(&id)).unwrap();
    ask(&mut agent, "next").await;
    let sent = render_request(&mock.requests()[0].body);
    assert!(
        sent.ends_with(&format!(
            "assistant:  [bash {{\"command\":\"sleep 20\"}}]\ntool: {NOT_RUN}\nuser: next"
        )),
        "{sent}"
    );
}
