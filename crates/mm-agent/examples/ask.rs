//! Embedding mm in another Rust program: build an agent from settings, ask
//! a question with your own Sink, read the history.
//!
//! `cargo run -p mm-agent --example ask` runs it against the scripted mock
//! model server, so no model server is needed; point `model`/`base_url` at
//! a real one (e.g. `ollama/qwen3:8b`) to use it for real.

use std::sync::Arc;

use futures::future::BoxFuture;
use mm_agent::config::Config;
use mm_agent::ui::{Decision, Event, Sink, ToolInfo};
use mm_agent::{Agent, Message, PermissionSource};
use mm_mock::{MockServer, Reply};
use tokio_util::sync::CancellationToken;

/// Print answer text as it streams and say which tools ran.
struct Printer;

impl Sink for Printer {
    fn event(&self, event: Event) {
        match event {
            Event::Text { text } => print!("{text}"),
            Event::ToolStart { info } => println!("[tool {}: {}]", info.tool, info.title),
            Event::TurnEnd { .. } => println!(),
            _ => {}
        }
    }

    fn permission<'a>(&'a self, _info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::AllowOnce })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"echo hello from bash"}"#),
        Reply::text("The command printed: hello from bash."),
    ])
    .await?;
    let dir = std::env::temp_dir().join(format!("mm-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    let mut config = Config {
        model: "openai-compatible/example".into(),
        base_url: Some(format!("{}/v1", mock.url())),
        ..Config::default()
    };
    config.sessions.enabled = false;

    let mut agent = Agent::new(config, &dir, PermissionSource::Terminal)?;
    let report = agent
        .ask("run echo", Arc::new(Printer), CancellationToken::new())
        .await;
    println!("outcome: {:?}, {}", report.outcome, report.counters.recap());
    for message in agent.history() {
        if let Message::Tool { name, content, .. } = message {
            println!("{name} returned {content:?}");
        }
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
