//! The first request's fixed part (system prompt + tool declarations, as
//! sent on the wire) fits the 6 KB budget small local models need
//! (decisions.md 24: without AGENTS.md text and the skills catalogue).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Recorder, config};
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn system_prompt_and_tool_declarations_fit_in_6_kb() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![Reply::text("ok")]).await.unwrap();
    let mut agent = Agent::new(
        config(&mock.url(), dir.path()),
        dir.path(),
        PermissionSource::Terminal,
    )
    .unwrap();
    tokio::time::timeout(
        Duration::from_secs(20),
        agent.ask("hi", Recorder::new(), CancellationToken::new()),
    )
    .await
    .unwrap();
    let body = &mock.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    let tools = body["tools"].to_string();
    let total = system.len() + tools.len();
    println!(
        "first request: system prompt {} B + tools {} B = {total} B",
        system.len(),
        tools.len()
    );
    assert!(
        total <= 6 * 1024,
        "{total} bytes: system {} + tools {}",
        system.len(),
        tools.len()
    );
}
