//! The wiring: flags → settings → agent → REPL or one turn. `main` only
//! calls [`main`] here.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use mm_agent::{Agent, PermissionSource};
use mm_config::{Overrides, Sources};

use crate::cli::{Cli, Command};
use crate::{exit, logging, oneshot, repl};

/// Exit code of a bad start: flags, settings, working directory.
pub const EXIT_START: u8 = 2;

/// Run `mm-repl` with this process's arguments.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Completions { shell }) = cli.command {
        crate::cli::completions(shell, &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    // One thread: the turn is I/O-bound, and startup must be instant.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mm-repl: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_START);
        }
    };
    exit::save_terminal();
    exit::install_panic_hook();
    let code = runtime.block_on(run(cli));
    exit::shutdown();
    if let Some(kb) = peak_rss_kb() {
        // The benchmark reads this line: the process's own high-water mark.
        tracing::info!("exit {code}; peak memory {kb} kB");
    }
    ExitCode::from(code)
}

/// This process's peak resident memory (`VmHWM`), in kB.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The whole program after the flags; returns the exit code.
pub async fn run(cli: Cli) -> u8 {
    logging::init(&mm_config::state_dir());
    exit::spawn_signal_handler();

    let cwd = match working_dir(cli.cwd.as_ref()) {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("mm-repl: {e}");
            return EXIT_START;
        }
    };

    let demo = if cli.demo {
        let options = mm_mock::Options {
            port: 0,
            repeat: true,
        };
        match mm_mock::MockServer::start_with(mm_mock::demo_script(), options).await {
            Ok(server) => Some(server),
            Err(e) => {
                eprintln!("mm-repl: cannot start the demo model: {e}");
                return EXIT_START;
            }
        }
    } else {
        None
    };

    let mut flags = Overrides {
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        ..Overrides::default()
    };
    if let Some(server) = &demo {
        flags.model = Some("openai-compatible/demo".to_owned());
        flags.base_url = Some(format!("{}/v1", server.url()));
    }
    let sources = Sources::from_process(cwd.clone(), cli.config.clone(), flags);
    let loaded = match mm_config::load(&sources) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("mm-repl: {e}");
            return EXIT_START;
        }
    };
    if cli.print_config {
        print!("{}", with_newline(loaded.print()));
        return 0;
    }
    let mut config = loaded.config;
    if demo.is_some() {
        // A scripted conversation is not worth keeping next to real ones.
        config.sessions.enabled = false;
    }
    tracing::info!(model = %config.model, cwd = %cwd.display(), "starting");

    let one_shot = cli.prompt.is_some() || !std::io::stdin().is_terminal();
    let question = if one_shot {
        match question(cli.prompt.as_deref()) {
            Ok(q) => Some(q),
            Err(e) => {
                eprintln!("mm-repl: {e}");
                return EXIT_START;
            }
        }
    } else {
        None
    };

    let show_thinking = config.show_thinking;
    let mut agent = match Agent::new(config, &cwd, PermissionSource::Terminal) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("mm-repl: {e}");
            return EXIT_START;
        }
    };

    let resumed = if cli.continue_session || cli.resume.is_some() {
        match agent.resume(cli.resume.as_deref()) {
            Ok(id) => Some(id),
            Err(e) => {
                eprintln!("mm-repl: cannot resume: {e}");
                return EXIT_START;
            }
        }
    } else {
        None
    };

    match question {
        Some(q) => oneshot::run(&mut agent, &q, cli.output_format, show_thinking).await,
        None => {
            repl::Repl::new(agent, demo.is_some(), show_thinking)
                .run(resumed)
                .await
        }
    }
}

fn with_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The session's root: `--cwd` (which must be a directory) or the process's.
fn working_dir(flag: Option<&PathBuf>) -> Result<PathBuf, String> {
    match flag {
        Some(dir) => {
            let dir =
                std::fs::canonicalize(dir).map_err(|e| format!("--cwd {}: {e}", dir.display()))?;
            if !dir.is_dir() {
                return Err(format!("--cwd {}: not a directory", dir.display()));
            }
            Ok(dir)
        }
        None => {
            std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))
        }
    }
}

/// The one-shot question: `-p TEXT`, or stdin for `-p -` and when stdin is
/// not a terminal.
fn question(prompt: Option<&str>) -> Result<String, String> {
    let text = match prompt {
        Some(p) if p != "-" => p.to_owned(),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the question from stdin: {e}"))?;
            text
        }
    };
    let text = text.trim_end_matches(['\n', '\r']).to_owned();
    if text.trim().is_empty() {
        return Err("no question: give one with -p \"…\" or on stdin".to_owned());
    }
    Ok(text)
}
