//! The wiring: flags → settings → agent → REPL or one turn. `main` only
//! calls [`main`] here.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use mm_agent::StartError;
use mm_agent::start::{Demo, Launch, Terminal};

use crate::cli::{Cli, Command};
use crate::{exit, oneshot, repl};

/// Run `mm-repl` with this process's arguments.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Completions { shell }) = cli.command {
        crate::cli::completions(shell, &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    if let Ok(cwd) = mm_config::cli::current_dir() {
        // SAFETY: no thread exists yet; the runtime starts below.
        unsafe { mm_agent::take_keys(&cli.flags.settings.sources(cwd)) };
    }
    // One thread: the turn is I/O-bound, and startup must be instant.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let error = StartError::Front(format!("cannot start the runtime: {e}"));
            return ExitCode::from(fail(error));
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

/// Say why mm-repl cannot start; returns the exit code.
fn fail(error: StartError) -> u8 {
    eprintln!("mm-repl: {}", mm_ui::sanitize(&error.to_string()));
    error.exit_code()
}

/// This process's peak resident memory (`VmHWM`), in kB.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The whole program after the flags; returns the exit code.
pub async fn run(cli: Cli) -> u8 {
    mm_agent::logging::init(&mm_config::state_dir(), "mm-repl");
    exit::spawn_signal_handler();
    start(cli).await.unwrap_or_else(fail)
}

async fn start(cli: Cli) -> Result<u8, StartError> {
    // The demo's model server and its folder live until the end of `start`.
    let server = match cli.flags.demo.demo {
        true => Some(mm_mock::start_demo().await.map_err(StartError::Demo)?),
        false => None,
    };
    let demo = server.as_ref().map(|s| Demo::new(&s.url())).transpose()?;
    let start = match Terminal::load_with(&cli.flags, demo.as_ref(), &cli.script.run_flags())? {
        Launch::Run(start) => start,
        Launch::Print(settings) => {
            print!("{settings}");
            return Ok(0);
        }
    };
    tracing::info!(model = %start.config.model, cwd = %start.cwd.display(), "starting");
    crate::style::set_theme(start.config.theme);
    if cli.doctor {
        return crate::doctor::run(&start.config, cli.output_format).await;
    }

    let one_shot = cli.prompt.is_some() || !std::io::stdin().is_terminal();
    let question = if one_shot {
        Some(
            question(cli.prompt.as_deref(), tokio::io::stdin())
                .await
                .map_err(StartError::Front)?,
        )
    } else {
        None
    };

    let schema = match &cli.script.output_schema {
        Some(_) if !one_shot => {
            return Err(StartError::Front(
                "--output-schema needs one-shot mode (-p or a question on stdin)".to_owned(),
            ));
        }
        Some(path) => Some(mm_agent::OutputSchema::read(path).map_err(StartError::Front)?),
        None => None,
    };
    if one_shot && cli.flags.session.resume_from_list() {
        return Err(StartError::Front(
            "--resume without an id opens a list to choose from, which one-shot mode cannot: give the session's id (or the start of it), or use --continue".to_owned(),
        ));
    }
    let (mut agent, resumed) = start.agent(&cli.flags, demo.as_ref())?;
    let from_list = cli.flags.session.resume_from_list();
    Ok(match question {
        Some(q) => {
            let run = oneshot::Run {
                format: cli.output_format,
                schema: schema.as_ref(),
            };
            oneshot::run(&mut agent, &q, run).await
        }
        None => {
            repl::Repl::new(agent)
                .resume_from_list(from_list)
                .run(resumed)
                .await
        }
    })
}

/// The most a question read from stdin may hold: far more than any
/// model's context, and a bound on what an endless pipe can cost.
const MAX_STDIN_QUESTION: u64 = 4 << 20;

/// The one-shot question: `-p TEXT`, or `stdin` for `-p -` and when stdin
/// is not a terminal. Read asynchronously, so that SIGTERM is handled
/// while it waits.
async fn question(
    prompt: Option<&str>,
    stdin: impl tokio::io::AsyncRead + Unpin,
) -> Result<String, String> {
    use tokio::io::AsyncReadExt;
    let text = match prompt {
        Some(p) if p != "-" => p.to_owned(),
        _ => {
            let mut bytes = Vec::new();
            stdin
                .take(MAX_STDIN_QUESTION + 1)
                .read_to_end(&mut bytes)
                .await
                .map_err(|e| format!("cannot read the question from stdin: {e}"))?;
            if bytes.len() as u64 > MAX_STDIN_QUESTION {
                return Err(format!(
                    "the question on stdin is larger than {} MiB; give a shorter one \
                     (a long text can go in a file the question names with @path)",
                    MAX_STDIN_QUESTION >> 20
                ));
            }
            String::from_utf8(bytes)
                .map_err(|_| "cannot read the question from stdin: it is not UTF-8".to_owned())?
        }
    };
    let text = text.trim_end_matches(['\n', '\r']).to_owned();
    if text.trim().is_empty() {
        return Err("no question: give one with -p \"…\" or on stdin".to_owned());
    }
    Ok(text)
}
