//! One turn without a prompt, for scripts: `mm-repl -p "question"`.
//! stdout holds only the answer (or, with `--output-format json`, one JSON
//! event per line, the first naming the session); tool lines, notices and
//! errors go to stderr. The exit code says how the turn ended.
//!
//! A question naming a command that runs in one-shot mode runs it: a custom
//! command (`-p "/review src/lib.rs"`) becomes the question, `/undo` runs
//! here; any other line starting with `/` is sent as text, as typed.

use std::sync::Arc;

use mm_agent::Agent;
use mm_agent::commands::{Command, Front, Outcome, Parsed};
use mm_ui::{Event, Sink, TurnOutcome, sanitize};
use tokio_util::sync::CancellationToken;

use crate::cli::OutputFormat;
use crate::json::{JsonSink, session_event};
use crate::keys::{Controls, KeyWatch};
use crate::screen::Layout;
use crate::term::{TermOptions, TermSink};

/// Exit code of a cancelled turn (as a shell reports Ctrl-C).
pub const EXIT_CANCELLED: u8 = 130;
/// Exit code of a turn that failed or was stopped.
pub const EXIT_FAILED: u8 = 1;

/// The exit code for how a turn ended.
pub fn exit_code(outcome: &TurnOutcome) -> u8 {
    match outcome {
        TurnOutcome::Done => 0,
        TurnOutcome::Cancelled => EXIT_CANCELLED,
        TurnOutcome::MaxTurns | TurnOutcome::Failed(_) | TurnOutcome::Repeated(_) => EXIT_FAILED,
    }
}

/// Ask `question`, print the turn, return the exit code. A question that
/// names a command run in one-shot mode runs that command instead (a
/// custom command writes the question); other commands are sent as text.
pub async fn run(agent: &mut Agent, question: &str, format: OutputFormat) -> u8 {
    let commands = agent.commands().clone();
    let mut asked = question.to_string();
    if let Parsed::Command { command, argument } = commands.parse(question, Front::Repl)
        && command.runs_in_one_shot()
    {
        // A command that only writes a question (a custom one) needs no
        // agent: its question is asked as one turn like a typed one.
        match command.run_free(argument, Front::Repl, &commands) {
            Some(Outcome::Ask(question)) => asked = question,
            _ => match run_command(agent, command, argument, format).await {
                Ok(code) => return code,
                Err(question) => return ask(agent, &question, format, false).await,
            },
        }
    }
    ask(agent, &asked, format, true).await
}

/// What a run says before anything else: with JSON, the `session` line
/// (`id` is the session the run is recorded in, `None` when there is
/// none), so a script can `--resume` it; then the start-up warnings about
/// the user's and the project's files (a command file refused,
/// instructions cut) where notices go.
fn preamble(agent: &Agent, id: Option<String>, json: Option<&JsonSink>, sink: &dyn Sink) {
    if let Some(json) = json {
        json.line(&session_event(agent, id));
    }
    for text in agent.file_warnings() {
        sink.event(Event::Notice { text: text.clone() });
    }
}

/// Run a one-shot command: its reply on stdout (errors on stderr), or one
/// `command` JSON line; exit 0 unless it failed. `Err(question)` when the
/// command asks the model instead.
async fn run_command(
    agent: &mut Agent,
    command: &Command,
    argument: &str,
    format: OutputFormat,
) -> Result<u8, String> {
    let controls = Arc::new(Controls::default());
    let sink: Arc<dyn Sink> = match format {
        OutputFormat::Text => Arc::new(TermSink::new(
            Layout::OneShot,
            TermOptions {
                show_thinking: false,
                ..TermOptions::of(agent.config())
            },
            controls,
        )),
        OutputFormat::Json => {
            let json = JsonSink::new(controls);
            // No session is started for a command: it names the one it
            // works on (--continue, --resume), if any.
            preamble(agent, agent.session_id(), Some(&json), &json);
            Arc::new(json)
        }
    };
    if format == OutputFormat::Text {
        preamble(agent, None, None, sink.as_ref());
    }
    let outcome = agent
        .run_command(
            command,
            argument,
            Front::Repl,
            sink.clone(),
            CancellationToken::new(),
        )
        .await;
    if let Outcome::Ask(question) = outcome {
        return Err(question);
    }
    agent.shutdown().await;
    let (ok, text) = match &outcome {
        Outcome::Error(text) => (false, text.clone()),
        other => (true, other.text().unwrap_or_default()),
    };
    match format {
        OutputFormat::Text if ok => println!("{}", sanitize(&text)),
        OutputFormat::Text => eprintln!("error: {}", sanitize(&text)),
        OutputFormat::Json => {
            JsonSink::new(Arc::new(Controls::default())).line(&serde_json::json!({
                "type": "command",
                "name": command.name(),
                "ok": ok,
                "text": text,
            }))
        }
    }
    Ok(if ok { 0 } else { EXIT_FAILED })
}

/// Ask `question` as one turn; `announce` says the preamble first (not yet
/// said by a command that asked this question).
async fn ask(agent: &mut Agent, question: &str, format: OutputFormat, announce: bool) -> u8 {
    let controls = Arc::new(Controls::default());
    let cancel = CancellationToken::new();
    // With a terminal on stdin, Escape/Ctrl-C and a/s/r work as in the
    // REPL; without one, SIGINT cancels the turn.
    let keys = KeyWatch::start(&controls, cancel.clone());
    if keys.is_none() {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
    }
    let (term, sink): (Option<Arc<TermSink>>, Arc<dyn Sink>) = match format {
        OutputFormat::Text => {
            let term = Arc::new(TermSink::new(
                Layout::OneShot,
                TermOptions::of(agent.config()),
                controls.clone(),
            ));
            (Some(term.clone()), term)
        }
        OutputFormat::Json => {
            let json = JsonSink::new(controls.clone());
            if announce {
                // Named before the turn (the file exists from now on), so a
                // script can `--resume` it whatever happens next. A file
                // that cannot be written is the turn's to report (its save
                // fails too, and so does the run).
                let id = agent.start_session().ok().flatten();
                preamble(agent, id, Some(&json), &json);
            }
            (None, Arc::new(json))
        }
    };
    if announce && format == OutputFormat::Text {
        preamble(agent, None, None, sink.as_ref());
    }
    let report = agent.ask(question, sink, cancel).await;
    agent.shutdown().await;
    drop(keys);
    match &term {
        Some(term) => term.finish_answer(),
        // JSON goes to a program; a person watching stderr still sees why.
        None => {
            match &report.outcome {
                TurnOutcome::Failed(text) => eprintln!("error: {}", sanitize(text)),
                TurnOutcome::MaxTurns => eprintln!("error: the turn was stopped at maxTurns"),
                TurnOutcome::Cancelled => eprintln!("error: the turn was cancelled"),
                TurnOutcome::Repeated(text) => eprintln!("{}", sanitize(text)),
                TurnOutcome::Done => {}
            }
            if let Some(text) = &report.not_saved {
                eprintln!("error: {}", sanitize(text));
            }
        }
    }
    match exit_code(&report.outcome) {
        // The answer came but was not recorded: a script must know.
        0 if report.not_saved.is_some() => EXIT_FAILED,
        code => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_finished_turn_exits_zero() {
        assert_eq!(exit_code(&TurnOutcome::Done), 0);
        assert_eq!(exit_code(&TurnOutcome::MaxTurns), 1);
        assert_eq!(exit_code(&TurnOutcome::Failed("x".into())), 1);
        assert_eq!(exit_code(&TurnOutcome::Cancelled), 130);
    }
}
