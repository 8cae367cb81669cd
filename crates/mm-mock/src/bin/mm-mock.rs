//! `mm-mock`: serve a script of replies on 127.0.0.1 until Ctrl-C, for trying
//! mm (or any client of the four wire formats) without a model.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use mm_mock::{MockServer, Options, Reply, demo_script};

/// A scripted mock model server (OpenAI, Ollama, Anthropic, Gemini wires).
#[derive(Parser, Debug)]
#[command(name = "mm-mock", version)]
struct Cli {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A JSON array of replies to play instead of the demo conversation.
    #[arg(long, value_name = "FILE.json")]
    script: Option<PathBuf>,
    /// Play the script again from the start whenever it runs out.
    #[arg(long = "loop")]
    repeat: bool,
}

fn load(path: &PathBuf) -> Result<Vec<Reply>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("mm-mock: cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "mm-mock: {} is not a JSON array of replies: {e}",
            path.display()
        )
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let script = match &cli.script {
        Some(path) => match load(path) {
            Ok(script) => script,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        },
        None => demo_script(),
    };
    let options = Options {
        port: cli.port,
        repeat: cli.repeat,
        ..Options::default()
    };
    let server = match MockServer::start_with(script, options).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mm-mock: cannot listen on 127.0.0.1:{}: {e}", cli.port);
            return ExitCode::FAILURE;
        }
    };
    let url = server.url();
    println!("mm-mock listening on {url}");
    let _ = std::io::stdout().flush();
    eprintln!("try mm against it with one of:");
    eprintln!("  MM_MODEL=openai-compatible/mock MM_BASE_URL={url}/v1");
    eprintln!("  MM_MODEL=ollama/mock MM_BASE_URL={url}");
    eprintln!("  MM_MODEL=anthropic/mock MM_BASE_URL={url}");
    eprintln!("  MM_MODEL=gemini/mock MM_BASE_URL={url}");
    eprintln!("Ctrl-C stops it.");
    match tokio::signal::ctrl_c().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mm-mock: cannot wait for Ctrl-C: {e}");
            ExitCode::FAILURE
        }
    }
}
