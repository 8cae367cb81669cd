//! Shared helpers for the agent's tests: a config pointed at a mock server,
//! a recording sink, and a compact text rendering of a history.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mm_agent::config::Config;
use mm_agent::{Agent, Message, TurnReport};
pub use mm_test_support::Recorder;
use tokio_util::sync::CancellationToken;

/// Settings for a test: the mock's OpenAI-compatible endpoint, sessions,
/// skills and mm's user folder in `dir`, no retries, a short watchdog.
pub fn config(url: &str, dir: &Path) -> Config {
    let mut c = Config {
        model: "openai-compatible/test".into(),
        base_url: Some(format!("{url}/v1")),
        skills_dir: dir.join("skills"),
        retries: 0,
        watchdog: 5,
        bash_timeout: 10,
        ..Config::default()
    };
    c.sessions.dir = dir.join("sessions");
    // Checkpoints of folders outside git stay in the test's folder too.
    c.checkpoints.dir = dir.join("checkpoints");
    // The global AGENTS.md and the user's commands: never the real HOME's.
    c.user_dir = dir.join("user");
    // Tests of the loop do not depend on which language servers the
    // machine has; the lsp tool has its own tests.
    c.lsp.servers.clear();
    c
}

/// One line per message: `user: …`, `assistant: … [bash {…}]`, `tool bash: …`.
pub fn render(history: &[Message]) -> String {
    history
        .iter()
        .map(|m| match m {
            Message::System { content } => format!("system: {}", first_line(content)),
            Message::User { content, .. } => format!("user: {content}"),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let calls: Vec<String> = tool_calls
                    .iter()
                    .map(|c| format!("[{} {}]", c.name, c.arguments))
                    .collect();
                format!(
                    "assistant: {content}{}{}",
                    if calls.is_empty() { "" } else { " " },
                    calls.join(" ")
                )
            }
            Message::Tool { name, content, .. } => format!("tool {name}: {content}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The same rendering of what a mock request carried (OpenAI wire shape).
pub fn render_request(body: &serde_json::Value) -> String {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let role = m["role"].as_str().unwrap_or("?");
                    let content = m["content"].as_str().unwrap_or("");
                    match role {
                        "system" => format!("system: {}", first_line(content)),
                        "tool" => format!("tool: {content}"),
                        "assistant" => {
                            let calls: Vec<String> = m["tool_calls"]
                                .as_array()
                                .map(|calls| {
                                    calls
                                        .iter()
                                        .map(|c| {
                                            format!(
                                                "[{} {}]",
                                                c["function"]["name"].as_str().unwrap_or(""),
                                                c["function"]["arguments"].as_str().unwrap_or("")
                                            )
                                        })
                                        .collect()
                                })
                                .unwrap_or_default();
                            format!(
                                "assistant: {content}{}{}",
                                if calls.is_empty() { "" } else { " " },
                                calls.join(" ")
                            )
                        }
                        _ => format!("{role}: {content}"),
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// Ask one question with a recording sink, bounded in time.
pub async fn ask(agent: &mut Agent, question: &str) -> (TurnReport, Arc<Recorder>) {
    let sink = Recorder::new();
    let report = tokio::time::timeout(
        Duration::from_secs(30),
        agent.ask(question, sink.clone(), CancellationToken::new()),
    )
    .await
    .expect("the turn finished in time");
    (report, sink)
}
