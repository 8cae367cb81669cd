//! The interactive REPL: a banner, a prompt with history and completion,
//! slash commands from the shared table, and one turn per question with
//! Escape/Ctrl-C cancelling it.

use std::path::PathBuf;
use std::sync::Arc;

use mm_agent::Agent;
use mm_agent::commands::{self, Front, Outcome, Parsed};
use mm_ui::Sink;
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config as EditorConfig, Editor};
use tokio_util::sync::CancellationToken;

use crate::complete::MmHelper;
use crate::keys::{Controls, Interrupts, KeyWatch};
use crate::screen::Layout;
use crate::style::Style;
use crate::term::{TermOptions, TermSink};

/// The prompt, after the mode in brackets: `[allow] mm> `.
pub const PROMPT: &str = "mm> ";

/// The prompt in `mode`: the mode is always on screen.
pub fn prompt(mode: mm_ui::AgentMode) -> String {
    format!("[{mode}] {PROMPT}")
}

type Ed = Editor<MmHelper, FileHistory>;

/// One REPL session.
pub struct Repl {
    agent: Agent,
    sink: Arc<TermSink>,
    controls: Arc<Controls>,
    history: PathBuf,
    /// Shift-Tab at the prompt: the line it left, to type on.
    cycled: crate::complete::ModeKey,
    /// `--resume` without an id: open the list of sessions first.
    from_list: bool,
    /// Ctrl-C at the prompt: whether the line was empty.
    ctrl_c: crate::complete::InterruptKey,
    /// When Ctrl-C was last pressed on an empty line (a second one quits).
    armed: Option<std::time::Instant>,
    /// SIGINT outside the line editor.
    interrupts: Option<Interrupts>,
}

/// What a command asks the loop to do next.
enum Next {
    Continue,
    Quit,
}

impl Repl {
    pub fn new(agent: Agent) -> Repl {
        let controls = Arc::new(Controls::default());
        let sink = Arc::new(TermSink::new(
            Layout::Interactive,
            TermOptions::of(agent.config()),
            controls.clone(),
        ));
        Repl {
            agent,
            sink,
            controls,
            history: mm_config::data_dir().join(mm_ui::words::HISTORY_FILE),
            cycled: crate::complete::ModeKey::default(),
            from_list: false,
            ctrl_c: crate::complete::InterruptKey::default(),
            armed: None,
            interrupts: None,
        }
    }

    /// Open the list of sessions before the first prompt (`--resume`
    /// without an id).
    pub fn resume_from_list(mut self, yes: bool) -> Repl {
        self.from_list = yes;
        self
    }

    /// Run until `/quit` or Ctrl-D; returns the exit code. `resumed` is
    /// what to say under the banner about a resumed session.
    pub async fn run(mut self, resumed: Option<String>) -> u8 {
        let code = self.session(resumed).await;
        // Language servers get their shutdown/exit before mm leaves.
        self.agent.shutdown().await;
        code
    }

    async fn session(&mut self, resumed: Option<String>) -> u8 {
        self.interrupts = Interrupts::watch();
        self.banner();
        if let Some(line) = resumed {
            self.say_resumed(&line);
        }
        if self.from_list {
            let _ = self.line("/resume").await;
        }
        let mut editor = match self.editor() {
            Ok(ed) => Some(ed),
            Err(e) => {
                self.sink
                    .error(&format!("cannot start the line editor: {e}"));
                return 1;
            }
        };
        loop {
            // A SIGINT between two reads was a Ctrl-C at the prompt.
            if self.interrupts.as_ref().is_some_and(Interrupts::take) && self.interrupted(true) {
                return 0;
            }
            let Some(ed) = editor.take() else {
                return 1;
            };
            let typed = match self.cycled.take_line() {
                Some(kept) => kept,
                None => self.controls.take_typed(),
            };
            let prompt = prompt(self.agent.mode());
            let read = tokio::task::spawn_blocking(move || {
                let mut ed = ed;
                let line = ed.readline_with_initial(&prompt, (&typed, ""));
                (ed, line)
            })
            .await;
            let Ok((mut ed, line)) = read else {
                self.sink.error("the line editor stopped");
                return 1;
            };
            // A signal sent while the line was read was not a key of it
            // (the editor's terminal is raw: Ctrl-C there is a key).
            if let Some(interrupts) = &self.interrupts {
                interrupts.take();
            }
            match line {
                Ok(line) => {
                    self.armed = None;
                    let line = crate::complete::joined(line.trim());
                    if line.is_empty() {
                        editor = Some(ed);
                        continue;
                    }
                    let _ = ed.add_history_entry(line.as_str());
                    self.save_history(&mut ed);
                    if let Next::Quit = self.line(&line).await {
                        return 0;
                    }
                    // Messages queued with Enter during the turn, in order,
                    // each shown after the prompt as if typed.
                    while let Some(next) = self.controls.pop_queued() {
                        self.sink
                            .say(&format!("{}{next}", self::prompt(self.agent.mode())));
                        let _ = ed.add_history_entry(next.as_str());
                        self.save_history(&mut ed);
                        if let Next::Quit = self.line(&next).await {
                            return 0;
                        }
                    }
                    editor = Some(ed);
                }
                // Shift-Tab: the next mode, the line kept.
                Err(ReadlineError::Interrupted) if self.cycled.pressed() => {
                    let mode = self.agent.mode().next();
                    self.agent.set_mode(mode);
                    self.sink.say_dim(&mode.banner_line());
                    editor = Some(ed);
                }
                // Ctrl-C at the prompt clears the line; on an empty line,
                // a second one soon after quits.
                Err(ReadlineError::Interrupted) => {
                    if self.interrupted(self.ctrl_c.take_was_empty()) {
                        return 0;
                    }
                    editor = Some(ed);
                }
                // Ctrl-D quits.
                Err(ReadlineError::Eof) => return 0,
                Err(e) => {
                    self.sink.error(&format!("reading the line: {e}"));
                    return 1;
                }
            }
        }
    }

    /// Ctrl-C at the prompt: on an empty line the first arms the quit and
    /// says so, a second soon after quits (true); on a draft it disarms.
    fn interrupted(&mut self, empty_line: bool) -> bool {
        if !empty_line {
            self.armed = None;
            return false;
        }
        let window = mm_ui::words::QUIT_WINDOW;
        if self.armed.is_some_and(|at| at.elapsed() <= window) {
            return true;
        }
        self.armed = Some(std::time::Instant::now());
        self.sink.say_dim(mm_ui::words::QUIT_HINT);
        false
    }

    /// Until dropped, a SIGINT stops `cancel`'s work.
    fn stop_on_interrupt(
        &self,
        cancel: &CancellationToken,
    ) -> Option<crate::keys::StopOnInterrupt> {
        self.interrupts.as_ref().map(|i| i.stop_on(cancel.clone()))
    }

    fn editor(&self) -> rustyline::Result<Ed> {
        let mode = match self.agent.config().edit_mode {
            mm_agent::config::EditMode::Vi => rustyline::EditMode::Vi,
            mm_agent::config::EditMode::Emacs => rustyline::EditMode::Emacs,
        };
        let config = EditorConfig::builder()
            .edit_mode(mode)
            .auto_add_history(false)
            .completion_type(CompletionType::List)
            .max_history_size(2000)?
            .build();
        let mut ed: Ed = match &self.interrupts {
            Some(interrupts) => interrupts.keep(|| Editor::with_config(config))?,
            None => Editor::with_config(config)?,
        };
        ed.set_helper(Some(MmHelper {
            cwd: self.agent.cwd().to_path_buf(),
            commands: self.agent.commands().clone(),
        }));
        crate::complete::bind_multiline(&mut ed);
        crate::complete::bind_mode_key(&mut ed, self.cycled.clone());
        crate::complete::bind_interrupt_key(&mut ed, self.ctrl_c.clone());
        // A first start has no history yet.
        let _ = ed.load_history(&self.history);
        Ok(ed)
    }

    fn save_history(&self, ed: &mut Ed) {
        if let Some(dir) = self.history.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Appended, after what the window (or another REPL) added since.
        if let Err(e) = ed.append_history(&self.history) {
            tracing::warn!("history not saved to {}: {e}", self.history.display());
        }
    }

    fn banner(&self) {
        let agent = &self.agent;
        let s = &self.sink;
        s.styled(Style::Bold, &format!("mm {}", mm_agent::version()));
        s.say("");
        let mut lines = agent.banner().into_iter();
        // The banner's lines, with the warnings after the skills line.
        for line in lines.by_ref().take(4) {
            s.say_dim(&line);
        }
        for warning in agent.warnings() {
            s.notice(warning);
        }
        for line in lines {
            s.say_dim(&line);
        }
        s.say_dim(&format!(
            "/help lists the commands · {}",
            mm_ui::words::INTERRUPT_KEYS
        ));
    }

    async fn line(&mut self, line: &str) -> Next {
        let mut line = line.to_owned();
        loop {
            match self.outcome(&line).await {
                None => return Next::Continue,
                // A list to choose from: the chosen row's command runs next.
                Some(Outcome::Pick(list)) => {
                    let picked = tokio::task::spawn_blocking(move || crate::picker::pick(&list))
                        .await
                        .unwrap_or(crate::picker::Picked::Left);
                    match picked {
                        crate::picker::Picked::Run(command) => line = command,
                        _ => return Next::Continue,
                    }
                }
                Some(outcome) => return self.render(outcome).await,
            }
        }
    }

    /// What `line` does: `None` when it was a question (the turn ran).
    async fn outcome(&mut self, line: &str) -> Option<Outcome> {
        let commands = self.agent.commands().clone();
        let outcome = match commands.parse(line, Front::Repl) {
            Parsed::NotCommand => {
                self.turn(line).await;
                return None;
            }
            Parsed::Unknown(name) => commands.unknown(name, Front::Repl),
            Parsed::Command { command, argument } => {
                let cancel = CancellationToken::new();
                // Only a command that takes time can be stopped with a key.
                let keys = command
                    .takes_time()
                    .then(|| KeyWatch::start(&self.controls, cancel.clone()));
                let signal = self.stop_on_interrupt(&cancel);
                let sink: Arc<dyn Sink> = self.sink.clone();
                let outcome = self
                    .agent
                    .run_command(command, argument, Front::Repl, sink, cancel)
                    .await;
                drop((keys, signal));
                outcome
            }
        };
        Some(outcome)
    }

    async fn turn(&mut self, question: &str) {
        let cancel = CancellationToken::new();
        let keys = KeyWatch::start(&self.controls, cancel.clone());
        let signal = self.stop_on_interrupt(&cancel);
        let sink: Arc<dyn Sink> = self.sink.clone();
        self.sink.turn_running(true);
        self.agent.ask(question, sink, cancel).await;
        drop((keys, signal));
        self.sink.turn_running(false);
        self.sink.say("");
    }

    /// Carry out what a command did.
    async fn render(&mut self, outcome: Outcome) -> Next {
        match outcome {
            Outcome::Quit => return Next::Quit,
            Outcome::Ask(question) => self.turn(&question).await,
            other => self.show(other),
        }
        Next::Continue
    }

    /// That a session was resumed, and a recap of its last exchange: the
    /// REPL does not print the conversation again.
    fn say_resumed(&self, line: &str) {
        self.sink.say(line);
        for recap in commands::recap(self.agent.history()) {
            self.sink.say_dim(&format!("  {recap}"));
        }
        // The model's last checklist comes back with the session.
        let items = self.agent.checklist();
        if !items.is_empty() {
            self.sink.event(mm_ui::Event::Plan { items });
        }
    }

    /// Show a command's reply.
    fn show(&self, outcome: Outcome) {
        match outcome {
            Outcome::Say(text) | Outcome::Fresh(text) => self.sink.say(&text),
            Outcome::Resumed(text) => self.say_resumed(&text),
            Outcome::Error(text) => self.sink.error(&text),
            Outcome::List(rows) => {
                for row in rows {
                    self.sink.say(&row);
                }
            }
            Outcome::Help(text) => {
                self.sink.say(&text);
                self.sink.say_dim(
                    &format!(
                        "@path attaches a file · \\ then Enter, or Alt-Enter, continues on a new line · Shift-Tab next mode (allow, ask, plan) · Enter during a turn queues a message · {}",
                        mm_ui::words::INTERRUPT_KEYS
                    ),
                );
            }
            Outcome::Copy(text) => self.show(commands::copy(&text)),
            Outcome::Diff(diff) => self.sink.diff(&diff),
            // Chosen in `line`; shown as rows where it gets here.
            Outcome::Pick(list) => {
                self.sink.say(&list.title);
                for row in list.rows {
                    self.sink.say(&format!("  {}", row.label));
                }
            }
            Outcome::Done | Outcome::Ask(_) | Outcome::Quit => {}
        }
    }
}
