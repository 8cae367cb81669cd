//! `mm-tui`: flags, settings, then the window (everything is in the lib).

use std::process::ExitCode;

use clap::Parser;
use futures::StreamExt;
use mm_tui::cli::{self, Cli};
use mm_tui::{App, terminal};

/// Kill the tool processes still running (decisions.md 13).
fn stop_tools() {
    mm_agent::shutdown();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return cli::fail(&format!("cannot start the runtime: {e}"), 1),
    };
    runtime.block_on(async move {
        let agent = match cli::prepare(&cli) {
            Ok(Some(agent)) => agent,
            Ok(None) => return ExitCode::SUCCESS,
            Err((message, code)) => return cli::fail(&message, code),
        };
        terminal::install_panic_hook(stop_tools);
        let mut term = match terminal::enter() {
            Ok(t) => t,
            Err(e) => return cli::fail(&format!("cannot open the window: {e}"), 1),
        };
        let mut app = App::new(agent);
        let events = crossterm::event::EventStream::new();
        let result = app.run(&mut term, events, signals().boxed()).await;
        terminal::leave();
        stop_tools();
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => cli::fail(&e.to_string(), 1),
        }
    })
}

/// SIGTERM and SIGHUP end the window cleanly.
fn signals() -> impl futures::Stream<Item = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate()).ok();
    let hup = signal(SignalKind::hangup()).ok();
    futures::stream::unfold((term, hup), |(mut term, mut hup)| async move {
        tokio::select! {
            Some(()) = async { match &mut term { Some(s) => s.recv().await, None => std::future::pending().await } } => {}
            Some(()) = async { match &mut hup { Some(s) => s.recv().await, None => std::future::pending().await } } => {}
        }
        Some(((), (term, hup)))
    })
}
