//! `mm-tui`: flags, settings, then the window (everything is in the lib).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use clap::Parser;
use futures::StreamExt;
use mm_agent::StartError;
use mm_tui::cli::{self, Cli};
use mm_tui::{App, terminal};

/// Kill the tool processes still running (docs/design.md#killing-on-exit).
fn stop_tools() {
    mm_agent::shutdown();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Ok(cwd) = mm_config::cli::current_dir() {
        // SAFETY: no thread exists yet; the runtime starts below.
        unsafe { mm_agent::take_keys(&cli.flags.settings.sources(cwd)) };
    }
    mm_agent::logging::init(&mm_agent::config::state_dir(), "mm-tui");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return cli::fail(StartError::Front(format!("cannot start the runtime: {e}")));
        }
    };
    runtime.block_on(async move {
        let prepared = match cli::prepare(&cli).await {
            Ok(Some(prepared)) => prepared,
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                tracing::error!("{e}");
                return cli::fail(e);
            }
        };
        // The window shows the whole resumed history: no line needed. The
        // demo's model and folder stay until the window closes.
        let cli::Prepared { agent, demo, .. } = prepared;
        tracing::info!(model = %agent.model(), cwd = %agent.cwd().display(), "starting");
        terminal::install_panic_hook(stop_tools);
        let mut term = match terminal::enter(agent.config().mouse) {
            Ok(t) => t,
            Err(e) => return cli::fail(StartError::Front(format!("cannot open the window: {e}"))),
        };
        let mut app = App::new(agent);
        app.use_history_file(&mm_config::data_dir().join(mm_ui::words::HISTORY_FILE));
        // `--resume` without an id: the list of sessions opens first.
        if cli.flags.session.resume_from_list() {
            app.type_line("/resume");
        }
        let events =
            futures::stream::select(crossterm::event::EventStream::new(), interrupts().boxed());
        let caught = Arc::new(AtomicI32::new(0));
        let result = app
            .run(&mut term, events, signals(caught.clone()).boxed())
            .await;
        terminal::leave();
        // The alternate screen is gone: the last exchange stays in the
        // terminal's scrollback (not after a signal: nobody reads it).
        if caught.load(Ordering::SeqCst) == 0
            && let Some(last) = app.last_exchange()
        {
            use std::io::Write;
            let mut out = std::io::stdout();
            let _ = out.write_all(last.as_bytes());
            let _ = out.flush();
        }
        stop_tools();
        drop(demo);
        let signal = caught.load(Ordering::SeqCst);
        match result {
            // Killed by a signal: exit as a shell reports it, like mm-repl.
            Ok(()) if signal != 0 => {
                tracing::info!("signal {signal} received; exiting with {}", 128 + signal);
                ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))
            }
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                // The window ran and broke: not a start-up failure.
                tracing::error!("{e}");
                eprintln!("mm-tui: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// SIGINT as the Ctrl-C key. The window keeps the terminal raw, so Ctrl-C
/// is a key; a SIGINT comes from another process, and means what the key
/// means (stop the turn, clear the draft, twice quits) rather than ending
/// mm with the terminal left in the window's state.
fn interrupts() -> impl futures::Stream<Item = std::io::Result<crossterm::event::Event>> {
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
    use tokio::signal::unix::{SignalKind, signal};
    let sigint = signal(SignalKind::interrupt())
        .map_err(|e| tracing::warn!("cannot watch SIGINT: {e}"))
        .ok();
    futures::stream::unfold(sigint, |sigint| async move {
        let mut sigint = sigint?;
        sigint.recv().await?;
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        Some((Ok(Event::Key(ctrl_c)), Some(sigint)))
    })
}

/// SIGTERM and SIGHUP end the window cleanly; `caught` says which came.
fn signals(caught: Arc<AtomicI32>) -> impl futures::Stream<Item = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let hup = signal(SignalKind::hangup()).ok();
    futures::stream::unfold(
        (term, hup, caught),
        |(mut term, mut hup, caught)| async move {
            let number = tokio::select! {
                Some(()) = async { match &mut term { Some(s) => s.recv().await, None => std::future::pending().await } } => SignalKind::terminate().as_raw_value(),
                Some(()) = async { match &mut hup { Some(s) => s.recv().await, None => std::future::pending().await } } => SignalKind::hangup().as_raw_value(),
            };
            caught.store(number, Ordering::SeqCst);
            Some(((), (term, hup, caught)))
        },
    )
}
