//! One turn without a prompt, for scripts: `mm-repl -p "question"`.
//! stdout holds only the answer (or, with `--output-format json`, one JSON
//! event per line, the first naming the session); tool lines, notices and
//! errors go to stderr. The exit code says how the turn ended.
//!
//! A question naming a command that runs in one-shot mode runs it: a custom
//! command (`-p "/review src/lib.rs"`) becomes the question, `/undo`,
//! `/export` and `/diff` run here; any other line starting with `/` is sent
//! as text, as typed.
//!
//! Exit codes (docs/reference/json.md): 0 an answer; 1 the turn failed (or
//! was not recorded); 2 a bad start; 3 the turn limit ended it; 4 a call
//! needed permission and there was no terminal to ask; 5 the answer did
//! not fit `--output-schema`; 130 cancelled.

use std::sync::Arc;

use futures::future::BoxFuture;
use mm_agent::commands::{Command, Front, Outcome, Parsed};
use mm_agent::{Agent, Message, OutputSchema, Usage};
use mm_ui::{Decision, Event, Sink, ToolInfo, TurnOutcome, sanitize};
use tokio_util::sync::CancellationToken;

use crate::cli::OutputFormat;
use crate::json::{JsonSink, session_event};
use crate::keys::{Controls, KeyWatch};
use crate::screen::Layout;
use crate::term::{TermOptions, TermSink};

/// Exit code of a cancelled turn (as a shell reports Ctrl-C).
pub const EXIT_CANCELLED: u8 = 130;
/// Exit code of a turn that failed, or whose session was not recorded.
pub const EXIT_FAILED: u8 = 1;
/// Exit code of a turn the turn limit (`--max-turns`, `maxTurns`) ended.
pub const EXIT_MAX_TURNS: u8 = 3;
/// Exit code of a run where a call needed permission and there was no
/// terminal to ask.
pub const EXIT_NO_TERMINAL: u8 = 4;
/// Exit code of a run whose answer did not fit `--output-schema`, asked
/// twice.
pub const EXIT_SCHEMA: u8 = 5;

/// How a one-shot run is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// Text or JSON lines.
    pub format: OutputFormat,
    /// `--output-schema`: what the final answer must be.
    pub schema: Option<&'a OutputSchema>,
}

/// How a one-shot run ended: the `outcome` of its `result` line and its
/// exit code.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The turn ended with an answer (that fits the schema, if one).
    Done,
    /// The turn failed: why.
    Failed(String),
    /// The answer looped and was stopped: the guard's sentence.
    Repeated(String),
    /// The user cancelled.
    Cancelled,
    /// The turn limit ended the turn.
    MaxTurns,
    /// A call needed permission and nobody could be asked.
    NeedsPermission,
    /// The answer did not fit `--output-schema`, asked twice: why.
    Schema(String),
    /// The answer came but the session file could not be written: why.
    NotSaved(String),
}

impl Ending {
    /// How a turn ended, `unasked` when a call needed permission with
    /// nobody to ask. A failure or a cancel says most; then a call left
    /// unasked (the script's settings must change), then the limit.
    pub fn of(outcome: &TurnOutcome, unasked: bool) -> Ending {
        match outcome {
            TurnOutcome::Cancelled => Ending::Cancelled,
            TurnOutcome::Failed(why) => Ending::Failed(why.to_string()),
            TurnOutcome::Repeated(why) => Ending::Repeated(why.clone()),
            _ if unasked => Ending::NeedsPermission,
            TurnOutcome::MaxTurns => Ending::MaxTurns,
            TurnOutcome::Done => Ending::Done,
        }
    }

    /// The `outcome` word of the `result` line.
    pub fn word(&self) -> &'static str {
        match self {
            Ending::Done => "done",
            Ending::Failed(_) => "failed",
            Ending::Repeated(_) => "repeated",
            Ending::Cancelled => "cancelled",
            Ending::MaxTurns => "max_turns",
            Ending::NeedsPermission => "needs_permission",
            Ending::Schema(_) => "schema_failed",
            Ending::NotSaved(_) => "not_saved",
        }
    }

    /// The process's exit code.
    pub fn code(&self) -> u8 {
        match self {
            Ending::Done => 0,
            Ending::Failed(_) | Ending::NotSaved(_) | Ending::Repeated(_) => EXIT_FAILED,
            Ending::Cancelled => EXIT_CANCELLED,
            Ending::MaxTurns => EXIT_MAX_TURNS,
            Ending::NeedsPermission => EXIT_NO_TERMINAL,
            Ending::Schema(_) => EXIT_SCHEMA,
        }
    }

    /// What a person is told on stderr; `None` for an answer.
    pub fn error(&self) -> Option<String> {
        match self {
            Ending::Done => None,
            Ending::Failed(why) | Ending::NotSaved(why) | Ending::Repeated(why) => {
                Some(why.clone())
            }
            Ending::Cancelled => Some("the turn was cancelled".into()),
            Ending::MaxTurns => Some("the turn limit (--max-turns, maxTurns) was reached".into()),
            Ending::NeedsPermission => Some(
                "a call needed permission and there was no terminal to ask; \
                 use --permissions or an allow rule (--allowed-tools)"
                    .into(),
            ),
            Ending::Schema(why) => Some(format!(
                "the answer does not fit --output-schema, asked twice: {why}"
            )),
        }
    }
}

/// Ask `question`, print the turn, return the exit code. A question that
/// names a command run in one-shot mode runs that command instead (a
/// custom command writes the question); other commands are sent as text.
pub async fn run(agent: &mut Agent, question: &str, run: Run<'_>) -> u8 {
    let commands = agent.commands().clone();
    let mut asked = question.to_string();
    if let Parsed::Command { command, argument } = commands.parse(question, Front::Repl)
        && command.runs_in_one_shot()
    {
        // A command that only writes a question (a custom one) needs no
        // agent: its question is asked as one turn like a typed one.
        match command.run_free(argument, Front::Repl, &commands) {
            Some(Outcome::Ask(question)) => asked = question,
            _ => match run_command(agent, command, argument, run.format).await {
                Ok(code) => return code,
                Err(question) => return ask(agent, &question, run, false).await,
            },
        }
    }
    ask(agent, &asked, run, true).await
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

/// The last JSON line: how the run ended, the answer (and the schema's
/// value), the tokens, and the session.
fn result_event(
    agent: &Agent,
    ending: &Ending,
    answer: &str,
    value: Option<&serde_json::Value>,
    usage: Usage,
) -> serde_json::Value {
    let mut result = serde_json::json!({
        "type": "result",
        "outcome": ending.word(),
        "exit_code": ending.code(),
        "answer": answer,
        "session_id": agent.session_id(),
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cached_tokens": usage.cached_tokens,
        },
    });
    if let Some(value) = value {
        result["value"] = value.clone();
    }
    if let Some(error) = ending.error() {
        result["error"] = serde_json::Value::from(error);
    }
    result
}

/// Run a one-shot command: its reply on stdout (errors on stderr), or a
/// `command` JSON line and the `result` line; exit 0 unless it failed.
/// `Err(question)` when the command asks the model instead.
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
        // A script gets the diff itself, not a Markdown block of it.
        Outcome::Diff(diff) => (true, diff.trim_end_matches('\n').to_owned()),
        other => (true, other.text().unwrap_or_default()),
    };
    let ending = match ok {
        true => Ending::Done,
        false => Ending::Failed(text.clone()),
    };
    match format {
        OutputFormat::Text if ok => println!("{}", sanitize(&text)),
        OutputFormat::Text => eprintln!("error: {}", sanitize(&text)),
        OutputFormat::Json => {
            let json = JsonSink::new(Arc::new(Controls::default()));
            json.line(&serde_json::json!({
                "type": "command",
                "name": command.name(),
                "ok": ok,
                "text": text,
            }));
            let answer = if ok { text.as_str() } else { "" };
            json.line(&result_event(
                agent,
                &ending,
                answer,
                None,
                Usage::default(),
            ));
        }
    }
    Ok(ending.code())
}

/// Ask `question` as one turn; `announce` says the preamble first (not yet
/// said by a command that asked this question). With a schema, the answer
/// is checked and asked for once more when it does not fit.
async fn ask(agent: &mut Agent, question: &str, run: Run<'_>, announce: bool) -> u8 {
    let format = run.format;
    let controls = Arc::new(Controls::default());
    let cancel = CancellationToken::new();
    // With a terminal on stdin, Escape/Ctrl-C and a/s/r work as in the
    // REPL; SIGINT (without a terminal, or sent by another process)
    // cancels the turn, which then ends as cancelled (exit 130) after
    // mm's own shutdown.
    let keys = KeyWatch::start(&controls, cancel.clone());
    {
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
            let sink: Arc<dyn Sink> = match run.schema {
                // stdout holds just the JSON value, printed at the end.
                Some(_) => Arc::new(NoAnswerText(term.clone())),
                None => term.clone(),
            };
            (Some(term), sink)
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
    let question = match run.schema {
        Some(schema) => format!("{question}{}", schema.instruction()),
        None => question.to_owned(),
    };
    let report = agent.ask(&question, sink.clone(), cancel.clone()).await;
    let mut usage = report.usage;
    let mut ending = Ending::of(&report.outcome, controls.was_unasked());
    let mut answer = last_answer(agent.history());
    let mut value = None;
    if let (Ending::Done, Some(schema)) = (&ending, run.schema) {
        match schema.check(&answer) {
            Ok(v) => value = Some(v),
            Err(why) => {
                sink.event(Event::Notice {
                    text: format!("the answer does not fit the schema ({why}); asking once more"),
                });
                match agent
                    .answer_in_schema(schema, &why, sink.clone(), cancel.clone())
                    .await
                {
                    Ok((text, more)) => {
                        usage.add(more);
                        answer = text;
                        match schema.check(&answer) {
                            Ok(v) => value = Some(v),
                            Err(why) => ending = Ending::Schema(why),
                        }
                    }
                    Err(_) if cancel.is_cancelled() => ending = Ending::Cancelled,
                    Err(why) => ending = Ending::Failed(why),
                }
            }
        }
    }
    if let (Ending::Done, Some(why)) = (&ending, &report.not_saved) {
        // The answer came but was not recorded: a script must know.
        ending = Ending::NotSaved(why.clone());
    }
    agent.shutdown().await;
    drop(keys);
    match &term {
        Some(term) => {
            term.finish_answer();
            if let Some(value) = &value {
                println!("{value}");
            }
            // The turn's own errors were shown as they came.
            if matches!(
                ending,
                Ending::NeedsPermission | Ending::Schema(_) | Ending::MaxTurns
            ) && let Some(text) = ending.error()
            {
                eprintln!("error: {}", sanitize(&text));
            }
        }
        // JSON goes to a program; a person watching stderr still sees why.
        None => {
            if let Some(text) = ending.error() {
                eprintln!("error: {}", sanitize(&text));
            }
            JsonSink::new(Arc::new(Controls::default())).line(&result_event(
                agent,
                &ending,
                &answer,
                value.as_ref(),
                usage,
            ));
        }
    }
    ending.code()
}

/// The answer to the last question: the last text of a reply after it.
fn last_answer(history: &[Message]) -> String {
    for message in history.iter().rev() {
        match message {
            Message::User { .. } => break,
            Message::Assistant { content, .. } if !content.trim().is_empty() => {
                return content.clone();
            }
            _ => {}
        }
    }
    String::new()
}

/// A sink that passes on everything but the answer's text: with
/// `--output-schema` stdout holds only the value, printed at the end.
struct NoAnswerText(Arc<TermSink>);

impl Sink for NoAnswerText {
    fn event(&self, event: Event) {
        if !matches!(event, Event::Text { .. }) {
            self.0.event(event);
        }
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        self.0.permission(info)
    }

    fn rejection_reason(&self, id: &str) -> Option<String> {
        self.0.rejection_reason(id)
    }

    fn cannot_ask(&self, info: &ToolInfo) -> Option<String> {
        self.0.cannot_ask(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ending_has_its_code() {
        assert_eq!(Ending::of(&TurnOutcome::Done, false).code(), 0);
        let failed = mm_agent::TurnError::new(mm_agent::FailureKind::Server, "x");
        assert_eq!(Ending::of(&TurnOutcome::Failed(failed), true).code(), 1);
        assert_eq!(Ending::of(&TurnOutcome::MaxTurns, false).code(), 3);
        assert_eq!(Ending::of(&TurnOutcome::Done, true).code(), 4);
        assert_eq!(Ending::of(&TurnOutcome::MaxTurns, true).code(), 4);
        assert_eq!(Ending::Schema("x".into()).code(), 5);
        assert_eq!(Ending::of(&TurnOutcome::Cancelled, true).code(), 130);
        assert_eq!(Ending::NotSaved("x".into()).code(), 1);
    }

    #[test]
    fn the_answer_is_the_last_text_after_the_last_question() {
        let history = vec![
            Message::user("old"),
            Message::assistant("old answer"),
            Message::user("new"),
            Message::assistant("first part"),
            Message::assistant(""),
        ];
        assert_eq!(last_answer(&history), "first part");
        assert_eq!(last_answer(&history[..3]), "");
    }
}
