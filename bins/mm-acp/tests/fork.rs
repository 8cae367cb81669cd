#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `session/fork` (unstable in ACP; agent-client-protocol 5.2 with the
//! `unstable_session_fork` feature, schema 1.17) through the SDK's own
//! client: a live session and a saved one, each copied under a new id
//! while the original file stays byte for byte as it was.

mod common;

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{ForkSessionRequest, StopReason};
use common::*;
use mm_mock::{MockServer, Reply};

/// Session files of the project, oldest first (time-ordered ids).
fn session_files(env: &Env) -> Vec<PathBuf> {
    let root = env.root().join("data/mm/sessions");
    let mut files = Vec::new();
    for project in std::fs::read_dir(root).unwrap().filter_map(Result::ok) {
        for f in std::fs::read_dir(project.path())
            .unwrap()
            .filter_map(Result::ok)
        {
            let name = f.file_name().into_string().unwrap();
            if name.ends_with(".json") && !name.starts_with('.') {
                files.push(f.path());
            }
        }
    }
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_copies_a_live_and_a_saved_session_and_leaves_the_original() {
    let mock = MockServer::start(vec![
        Reply::text("Noted: 7"),
        Reply::text("In the fork: 7"),
        Reply::text("In the second fork: 7"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "acp:\n  permissions: allow\n");
    let original = std::sync::Mutex::new((PathBuf::new(), Vec::new()));
    run(&env, vec![], async |ctx| {
        let caps = ctx.initialize().await.agent_capabilities;
        assert!(caps.session_capabilities.fork.is_some(), "fork advertised");
        let id = ctx.start().await;
        assert_eq!(
            ctx.prompt(&id, "remember the number 7").await.stop_reason,
            StopReason::EndTurn
        );
        let file = session_files(&env).remove(0);
        let before = std::fs::read(&file).unwrap();
        let forked = ctx
            .cx
            .send_request(ForkSessionRequest::new(id.clone(), ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        assert_ne!(forked.session_id, id);
        assert_eq!(
            ctx.prompt(&forked.session_id, "what was it?")
                .await
                .stop_reason,
            StopReason::EndTurn
        );
        assert_eq!(std::fs::read(&file).unwrap(), before, "original untouched");
        *original.lock().unwrap() = (file, before);
    })
    .await;
    let requests = mock.requests();
    let second = content_text(messages(&requests[1].body).iter().rev().nth(2).unwrap());
    assert_eq!(second, "remember the number 7", "the fork held the history");
    assert_eq!(session_files(&env).len(), 2);

    // A saved session, not live in this process, forks too.
    let (file, before) = original.lock().unwrap().clone();
    let saved_id = file.file_stem().unwrap().to_string_lossy().into_owned();
    run(&env, vec![], async |ctx| {
        ctx.initialize().await;
        let forked = ctx
            .cx
            .send_request(ForkSessionRequest::new(
                saved_id.clone(),
                ctx.project.clone(),
            ))
            .block_task()
            .await
            .unwrap();
        assert_eq!(
            ctx.prompt(&forked.session_id, "and now?").await.stop_reason,
            StopReason::EndTurn
        );
        let err = ctx
            .cx
            .send_request(ForkSessionRequest::new(
                "no-such-session",
                ctx.project.clone(),
            ))
            .block_task()
            .await
            .unwrap_err();
        assert_eq!(i32::from(err.code), -32002);
    })
    .await;
    assert_eq!(std::fs::read(&file).unwrap(), before, "still untouched");
    assert_eq!(session_files(&env).len(), 3);
    let third = mock.requests();
    assert!(
        messages(&third[2].body)
            .iter()
            .any(|m| content_text(m) == "remember the number 7")
    );
}
