//! mm-acp: the ACP server editors spawn. Flags, logging to stderr, stdout
//! kept for the protocol alone, signals; everything else is in the library.

use std::io::Write;
use std::os::fd::AsFd;
use std::process::ExitCode;

use clap::Parser;
use mm_acp::{Options, Server};
use mm_agent::{EXIT_START, StartError};
use mm_config::SettingsFlags;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// The Agent Client Protocol server of mm. An editor starts it and speaks
/// ACP over stdin/stdout; logs go to stderr (RUST_LOG sets the level).
/// `--help`, `--version` and `--print-config` print to stdout and exit
/// without running the protocol.
#[derive(Debug, Parser)]
#[command(name = "mm-acp", disable_version_flag = true)]
struct Cli {
    #[command(flatten)]
    settings: SettingsFlags,
    /// Print the version and exit.
    #[arg(short = 'V', long)]
    version: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // No protocol runs then: `--help` goes to stdout like every
            // binary's, a flag error to stderr.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_START)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if cli.version {
        println!("mm-acp {}", mm_agent::version());
        return ExitCode::SUCCESS;
    }
    match start(cli) {
        Ok(code) => {
            let _ = std::io::stderr().flush();
            // The stdin reader thread would block a graceful runtime shutdown.
            std::process::exit(code);
        }
        Err(e) => {
            eprintln!("mm-acp: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Everything up to serving the protocol; returns the exit code of the
/// served connection (or of `--print-config`).
fn start(cli: Cli) -> Result<i32, StartError> {
    let options = Options {
        settings: cli.settings,
    };
    let cwd = mm_config::cli::current_dir().map_err(StartError::WorkingDir)?;
    // SAFETY: no thread exists yet; the runtime starts below.
    unsafe { mm_agent::take_keys(&options.settings.sources(&cwd)) };
    if options.settings.print_config {
        let loaded = mm_agent::config::load(&options.settings.sources(&cwd))?;
        // The same flag, and output, on every binary.
        print!("{}", mm_agent::start::config_text(&loaded));
        return Ok(0);
    }

    init_logging();
    install_panic_hook();
    let protocol_out =
        take_stdout().map_err(|e| StartError::Front(format!("cannot set up stdout: {e}")))?;
    // A broken config is reported per session (the editor shows it);
    // sessions are on unless the settings say otherwise.
    let sessions_enabled = match options.config(&cwd) {
        Ok(config) => config.sessions.enabled,
        Err(e) => {
            tracing::error!("{e}");
            true
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| StartError::Front(format!("cannot start the runtime: {e}")))?;
    Ok(runtime.block_on(run(options, sessions_enabled, protocol_out)))
}

/// Serve until stdin closes or a signal arrives, then stop every running
/// command (docs/design.md#killing-on-exit).
async fn run(options: Options, sessions_enabled: bool, out: std::fs::File) -> i32 {
    let server = Server::new(options, sessions_enabled);
    let output = tokio::fs::File::from_std(out).compat_write();
    let input = tokio::io::stdin().compat();
    let serve = mm_acp::serve(server.clone(), output, input);
    let (mut term, mut hup, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(t), Ok(h), Ok(i)) => (t, h, i),
        _ => {
            tracing::error!("cannot install signal handlers");
            return 2;
        }
    };
    let code = tokio::select! {
        result = serve => match result {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!("connection failed: {e}");
                1
            }
        },
        _ = term.recv() => 0,
        _ = hup.recv() => 0,
        _ = int.recv() => 0,
    };
    server.shutdown().await;
    mm_agent::shutdown();
    code
}

/// A panic that ends mm kills the running tool process groups first
/// (docs/design.md#killing-on-exit); the report goes to stderr (the
/// default hook writes to fd 2, and fd 1 is pointed at stderr as well),
/// never to the protocol's stdout. Only the main thread's panic ends the
/// process: a panic in a request's task is caught by tokio and the other
/// sessions go on, so their commands are left running.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    let main = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == main {
            mm_agent::shutdown();
        }
        default(info);
    }));
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,agent_client_protocol=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// The protocol's own handle on stdout; fd 1 is then pointed at stderr, so
/// a stray print or a child that inherits fd 1 writes to stderr instead of
/// corrupting the protocol. The handle is close-on-exec: no child gets it.
fn take_stdout() -> std::io::Result<std::fs::File> {
    let stdout = std::io::stdout();
    let _ = stdout.lock().flush();
    let protocol = stdout.as_fd().try_clone_to_owned()?;
    // SAFETY: dup2 only changes the descriptor table; fds 1 and 2 are open
    // for the life of the process.
    let rc = unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(std::fs::File::from(protocol))
}
