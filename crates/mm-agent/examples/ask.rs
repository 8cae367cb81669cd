//! Embedding mm in another Rust program: build an agent from settings,
//! ask a question with your own Sink, read the history.
//!
//! `cargo run -p mm-agent --example ask` runs it against the scripted mock
//! model server, so no model server is needed; point `model`/`base_url` at
//! a real one (e.g. `ollama/qwen3:8b`) to use it for real. Everything the
//! agent keeps (sessions, checkpoints) goes to a temporary folder:
//! `Config::isolated` reads and writes nothing of the user's own folders.

use std::sync::Arc;

use mm_agent::config::Config;
use mm_agent::{Agent, BoxFuture, CancellationToken, Decision, Event, Message, Sink, ToolInfo};
use mm_mock::{MockServer, Reply};

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
    let home = tempfile::tempdir()?;
    let project = home.path().join("project");
    std::fs::create_dir_all(&project)?;

    let config = Config {
        model: "openai-compatible/example".into(),
        base_url: Some(format!("{}/v1", mock.url())),
        ..Config::isolated(home.path())
    };
    let mut agent = Agent::builder(config).cwd(&project).build()?;
    let report = agent
        .ask("run echo", Arc::new(Printer), CancellationToken::new())
        .await;
    println!("outcome: {:?}, {}", report.outcome, report.counters.recap());
    for message in agent.history() {
        if let Message::Tool { name, content, .. } = message {
            println!("{name} returned {content:?}");
        }
    }
    agent.shutdown().await;
    Ok(())
}
