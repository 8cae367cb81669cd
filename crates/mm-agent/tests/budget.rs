//! The first request's fixed part (system prompt + tool declarations, as
//! sent on the wire) fits the 6 KB budget small local models need
//! (docs/design.md#first-request-budget: without AGENTS.md text and the
//! skills catalogue).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{Recorder, config};
use mm_agent::{Agent, PermissionSource};
use mm_mock::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn system_prompt_and_tool_declarations_fit_in_6_kb() {
    let dir = tempfile::tempdir().unwrap();
    // The worst case: every default language server is on the PATH, so the
    // lsp tool is declared and its description names all five.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mock = MockServer::start(vec![Reply::text("ok")]).await.unwrap();
    let mut cfg = config(&mock.url(), dir.path());
    cfg.lsp = mm_agent::config::Config::default().lsp;
    for server in &cfg.lsp.servers {
        let path = bin.join(&server.command);
        std::fs::write(&path, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // SAFETY: this test binary holds this one test; nothing else reads the
    // environment at the same time.
    unsafe { std::env::set_var("PATH", path) };
    let mut agent = Agent::new(cfg, dir.path(), PermissionSource::Terminal).unwrap();
    assert!(agent.warnings().is_empty(), "{:?}", agent.warnings());
    assert!(
        agent.tool_names().contains(&"lsp".to_string()),
        "{:?}",
        agent.tool_names()
    );
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
    // The checklist tool's share, and that plan mode's tool is not sent.
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap_or_default())
        .collect();
    assert!(names.contains(&"todo"), "{names:?}");
    assert!(!names.contains(&"exit_plan"), "{names:?}");
    let todo = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "todo")
        .unwrap()
        .to_string();
    println!("of which the todo tool {} B", todo.len() + 1);
    // web_fetch's share is at most 260 B of the budget.
    let web = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "web_fetch")
        .unwrap()
        .to_string();
    assert!(web.len() < 260, "web_fetch takes {} B", web.len() + 1);
    for tool in body["tools"].as_array().unwrap() {
        println!(
            "  {} {} B",
            tool["function"]["name"],
            tool.to_string().len() + 1
        );
        if std::env::var_os("MM_SHOW_TOOLS").is_some() {
            println!("{tool}");
        }
    }
    println!(
        "first request: system prompt {} B + tools {} B = {total} B",
        system.len(),
        tools.len()
    );
    // The task tool, with only the built-in agents, keeps to its share.
    let task = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap()
        .to_string();
    assert!(task.len() < 340, "the task tool takes {} B", task.len() + 1);
    assert!(
        total <= 6 * 1024,
        "{total} bytes: system {} + tools {}",
        system.len(),
        tools.len()
    );
}
