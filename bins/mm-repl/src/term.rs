//! The terminal [`Sink`]: turns a turn's events into what a person sees —
//! the answer streamed as it arrives, reasoning dimmed, one line per tool
//! (`🛠️  bash: <command>`) with its preview, a spinner while waiting,
//! notices and errors on stderr, and the counters recap after the turn.
//! It also asks the inline a/s/r permission question.
//!
//! Everything shown is sanitised ([`mm_ui::sanitize()`]) before mm styles
//! it: text that arrives in pieces (reasoning, a running command's
//! output, the answer through the Markdown renderer) through a
//! [`Sanitizer`] that carries a sequence cut between two pieces, the rest
//! by the [`Screen`]. The answer written to a stdout that is not a
//! terminal is the model's text as it came, for scripts.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use futures::future::BoxFuture;
use mm_ui::{
    AgentMode, Counters, Decision, Event, PlanReview, Sanitizer, Sink, ToolFamily, ToolInfo,
    ToolKind, ToolStatus, TurnOutcome, sanitize,
};

use crate::keys::Controls;
use crate::screen::{Layout, Output, Screen, Target};
use crate::style::Style;

/// The question of `permissions: ask`, with the keys that answer it.
pub fn permission_prompt() -> String {
    format!("allow? {} ", mm_ui::words::PERMISSION_KEYS)
}

/// Asked under a plan `exit_plan` presents: the permission keys.
pub fn plan_prompt() -> String {
    format!("carry it out? {} ", mm_ui::words::PLAN_KEYS)
}

/// Whether the checklist is drawn with ASCII marks: the terminal may lack
/// the glyphs (`TERM=dumb`) or the user asked for plain output (`NO_COLOR`).
pub fn ascii_marks() -> bool {
    crate::style::no_color(std::env::var_os("NO_COLOR").as_deref())
        || crate::style::dumb_term(std::env::var_os("TERM").as_deref())
}

/// Asked after `r`: what the model is told with the rejection.
pub const REASON_PROMPT: &str = "why? (told to the model; Enter sends, empty for no reason) ";

/// Shown instead of a preview when a command printed nothing.
pub const NO_OUTPUT: &str = "(no output)";

/// Indentation of preview lines under a tool line.
const INDENT: &str = "   ";

/// What the terminal sink shows; from the settings.
#[derive(Debug, Clone, Copy)]
pub struct TermOptions {
    /// `showThinking`.
    pub show_thinking: bool,
    /// `previewLines`: how many lines of a running command are shown as
    /// they come.
    pub preview_lines: usize,
    /// `notify`: the bell or an OSC 9 notice when a turn ends or a
    /// permission waits ([`notice_kind`]).
    pub notify: mm_agent::config::Notify,
}

impl TermOptions {
    /// The options the settings give.
    pub fn of(config: &mm_agent::config::Config) -> TermOptions {
        TermOptions {
            show_thinking: config.show_thinking,
            preview_lines: config.preview_lines,
            notify: config.notify,
        }
    }
}

/// With `notify: auto` the REPL signals a turn's end or a waiting
/// permission only once the turn has run this long: it cannot know whether
/// the terminal has the focus, and a user who waited this long has likely
/// looked away.
pub const AUTO_NOTIFY_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether the REPL signals after a turn ran for `ran`: `None` for not,
/// else `Some(osc9)` (an OSC 9 notice rather than the bell). `bell` and
/// `osc9` always signal, `off` never, `auto` after [`AUTO_NOTIFY_AFTER`],
/// with OSC 9 where the terminal is known to show it.
pub fn notice_kind(
    notify: mm_agent::config::Notify,
    ran: std::time::Duration,
    osc9_shown: bool,
) -> Option<bool> {
    use mm_agent::config::Notify;
    match notify {
        Notify::Off => None,
        Notify::Bell => Some(false),
        Notify::Osc9 => Some(true),
        Notify::Auto => (ran >= AUTO_NOTIFY_AFTER).then_some(osc9_shown),
    }
}

/// The tool line shown before a call runs: the family's mark, the tool's
/// name and the call's title, sanitised (a title's lines after the first
/// are indented).
pub fn tool_line(info: &ToolInfo) -> String {
    let title = indented(&info.title, INDENT);
    let mark = match info.family {
        ToolFamily::Skill => "📖 ",
        ToolFamily::Lsp => "🔎 ",
        ToolFamily::File => "📝 ",
        ToolFamily::Command | ToolFamily::Mcp | ToolFamily::Other => "🛠️  ",
    };
    format!("{mark}{}: {title}", sanitize(&info.tool))
}

/// `text` sanitised, its lines after the first behind `indent` (a carriage
/// return the sanitiser made a line break included).
fn indented(text: &str, indent: &str) -> String {
    sanitize(text).replace('\n', &format!("\n{indent}"))
}

/// The dimmed lines shown under a tool line once the call ended.
///
/// Tools whose row echoes (`bash`, `lsp`, a server's tool) show their first `previewLines` lines, then
/// `… N more lines` when cut, or `(no output)`; a failed call that never ran (invalid
/// arguments, not run) has no preview, so it shows the first line of its
/// output, the reason. `read_skill` echoes nothing (the reference: the
/// content is not echoed) unless it failed; `read_file` says how much it
/// read; the other tools show their headline, the first line of their
/// output (an edit's diff follows it, coloured: [`diff_lines`]).
pub fn result_lines(
    info: &ToolInfo,
    status: ToolStatus,
    output: &str,
    preview: &[String],
) -> Vec<String> {
    let first = || {
        output
            .lines()
            .next()
            .map(str::to_owned)
            .into_iter()
            .collect::<Vec<_>>()
    };
    let completed = status == ToolStatus::Completed;
    match (info.family, info.kind) {
        _ if info.echoes => {
            if output.is_empty() {
                vec![NO_OUTPUT.to_owned()]
            } else if preview.is_empty() && status == ToolStatus::Failed {
                first()
            } else {
                preview.to_vec()
            }
        }
        (ToolFamily::Skill, _) if completed => Vec::new(),
        (ToolFamily::File, ToolKind::Read) if completed => {
            let n = output.lines().count();
            vec![format!("read {n} line{}", if n == 1 { "" } else { "s" })]
        }
        _ => first(),
    }
}

/// The diff shown under an edit that went through, folded to
/// `previewLines` by the tools (docs/design.md#repl-diff-display); nothing
/// when it was shown already while asking.
pub fn diff_lines<'a>(info: &ToolInfo, preview: &'a [String], asked: bool) -> &'a [String] {
    if info.family == ToolFamily::File && info.change.is_some() && !asked {
        preview
    } else {
        &[]
    }
}

/// The dimmed lines after a turn: the recap line, which holds the non-zero
/// counters alone (docs/design.md#notices), then the session's tokens and
/// how full the model's window is (`context 13% of 32k · session in 4.1k · out 210`) on a
/// line of their own; either is left out when it has nothing to say.
pub fn after_turn_lines(counters: &Counters, tokens: Option<String>) -> Vec<String> {
    let recap = counters.recap();
    [Some(recap).filter(|r| !r.is_empty()), tokens]
        .into_iter()
        .flatten()
        .collect()
}

struct State {
    screen: Screen,
    /// The answer being rendered as Markdown (stdout is a terminal);
    /// `None` writes it as it comes (a pipe gets the model's own text).
    answer: Option<mm_ui::markdown::Stream>,
    /// Inside a block of reasoning (dimmed) not yet followed by answer text.
    reasoning: bool,
    /// Sanitises the block of reasoning as its pieces come.
    thought: Sanitizer,
    /// The calls started and not ended, by id, to style their `ToolEnd`.
    tools: HashMap<String, ToolInfo>,
    /// The session's token line from the last `Tokens`, for the recap.
    tokens: Option<String>,
    /// Calls whose diff was shown while asking, not to show it twice.
    asked: HashSet<String>,
    /// What running commands showed of their output so far, by call id.
    live: HashMap<String, Live>,
    /// Reasons given with rejections, by call id, until the tools ask.
    reasons: HashMap<String, String>,
    /// The reason's prompt is on screen (after `r`).
    reason_open: bool,
    /// Characters the model streamed this turn, for the status line.
    turn_chars: usize,
    /// What each subagent (by its `task` call's id) wrote of its answer
    /// so far: its last line is the live line.
    children: HashMap<String, String>,
}

/// Shows a rejection's reason as the key thread takes it.
fn reason_echo(state: Arc<Mutex<State>>) -> crate::keys::EchoFn {
    use crate::keys::Echo;
    Arc::new(move |echo| {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if echo == Echo::Start {
            s.reason_open = true;
        }
        let screen = &mut s.screen;
        match echo {
            Echo::Queued(text) => {
                let line = mm_ui::words::queued_line(&text);
                screen.write_above_spinner(
                    Target::Info,
                    Style::Dim,
                    &format!("{line} ({})\n", mm_ui::words::QUEUE_HINT),
                );
            }
            Echo::Start => {
                screen.ensure_line_start(Target::Info);
                screen.write_styled(Target::Info, Style::Yellow, REASON_PROMPT);
            }
            Echo::Char(c) => screen.write(Target::Info, c.encode_utf8(&mut [0; 4])),
            Echo::Backspace => screen.write_own(Target::Info, "\x08 \x08"),
        }
    })
}

/// A running command's output as the REPL shows it: its first
/// `previewLines` lines as they come, then a count in the spinner.
#[derive(Default)]
struct Live {
    /// The line being received, up to [`LIVE_LINE_MAX`] bytes.
    partial: String,
    /// Lines shown so far.
    shown: usize,
    /// Whole lines received past those shown.
    more: usize,
    /// Sanitises the output as it comes: a sequence, or a CR LF, may be
    /// cut between two pieces.
    clean: Sanitizer,
}

/// The most of one line kept while it streams: a preview line is short,
/// a command printing megabytes without a line break costs no more.
const LIVE_LINE_MAX: usize = 4096;

impl Live {
    /// Take `text`; the lines to show now, at most `room` in all.
    fn take(&mut self, text: &str, room: usize) -> Vec<String> {
        let text = self.clean.push(text);
        let mut shown = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find('\n') {
            self.push_partial(&rest[..at]);
            let line = std::mem::take(&mut self.partial);
            if self.shown < room {
                self.shown += 1;
                shown.push(line);
            } else {
                self.more += 1;
            }
            rest = &rest[at + 1..];
        }
        self.push_partial(rest);
        shown
    }

    fn push_partial(&mut self, piece: &str) {
        let room = LIVE_LINE_MAX.saturating_sub(self.partial.len());
        if room > 0 {
            let mut end = piece.len().min(room);
            while !piece.is_char_boundary(end) {
                end -= 1;
            }
            self.partial.push_str(&piece[..end]);
        }
    }
}

/// The terminal sink: one per front end, shared by its turns.
pub struct TermSink {
    state: Arc<Mutex<State>>,
    options: TermOptions,
    /// When the running turn started, for `notify: auto`.
    turn_started: Mutex<Option<std::time::Instant>>,
    controls: Arc<Controls>,
    stop: Arc<AtomicBool>,
    spinner: Mutex<Option<JoinHandle<()>>>,
}

impl TermSink {
    /// A sink on this process's stdout and stderr.
    pub fn new(layout: Layout, options: TermOptions, controls: Arc<Controls>) -> TermSink {
        TermSink::with_outputs(
            layout,
            Output::stdout(),
            Output::stderr(),
            options,
            controls,
        )
    }

    /// A sink on given streams (tests pass buffers).
    pub fn with_outputs(
        layout: Layout,
        stdout: Output,
        stderr: Output,
        options: TermOptions,
        controls: Arc<Controls>,
    ) -> TermSink {
        let screen = Screen::new(layout, stdout, stderr, controls.raw.clone());
        let spin = screen.cursor(Target::Info);
        let answer = screen
            .is_tty(Target::Answer)
            .then(|| mm_ui::markdown::Stream::new(terminal_width()));
        let state = Arc::new(Mutex::new(State {
            screen,
            answer,
            reasoning: false,
            thought: Sanitizer::new(),
            tools: HashMap::new(),
            tokens: None,
            asked: HashSet::new(),
            live: HashMap::new(),
            reasons: HashMap::new(),
            reason_open: false,
            turn_chars: 0,
            children: HashMap::new(),
        }));
        controls.set_echo(reason_echo(state.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let spinner = spin
            .then(|| spawn_spinner(state.clone(), stop.clone()))
            .flatten();
        TermSink {
            state,
            options,
            turn_started: Mutex::new(None),
            controls,
            stop,
            spinner: Mutex::new(spinner),
        }
    }

    /// A turn starts now (for `notify`); `false` when it ended.
    pub fn turn_running(&self, running: bool) {
        let mut started = self.turn_started.lock().unwrap_or_else(|e| e.into_inner());
        if !running && let Some(at) = *started {
            self.notice_if_away(at.elapsed(), mm_ui::words::NOTICE_DONE);
        }
        *started = running.then(std::time::Instant::now);
    }

    /// The bell or an OSC 9 notice, as `notify` and [`notice_kind`] say.
    fn notice_if_away(&self, ran: std::time::Duration, text: &str) {
        let osc9_shown = mm_ui::words::shows_osc9(
            std::env::var("TERM_PROGRAM").ok().as_deref(),
            std::env::var("TERM").ok().as_deref(),
        );
        if let Some(osc9) = notice_kind(self.options.notify, ran, osc9_shown) {
            let mut s = self.lock();
            if s.screen.is_tty(Target::Info) {
                s.screen
                    .write_own(Target::Info, &mm_ui::words::notice_sequence(osc9, text));
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned screen still draws: losing output is worse than a torn line.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Print a line for the user outside a turn (command results).
    pub fn say(&self, text: &str) {
        let mut s = self.lock();
        s.screen.ensure_line_start(Target::Info);
        s.screen.write(Target::Info, &format!("{text}\n"));
    }

    /// Print a unified diff outside a turn (`/diff`), coloured by line.
    pub fn diff(&self, diff: &str) {
        let mut s = self.lock();
        s.screen.ensure_line_start(Target::Info);
        for line in diff.lines() {
            show_diff_line(&mut s.screen, line, "");
        }
    }

    /// Print a dimmed line outside a turn.
    pub fn say_dim(&self, text: &str) {
        let mut s = self.lock();
        s.screen.ensure_line_start(Target::Info);
        s.screen.write_styled(Target::Info, Style::Dim, text);
        s.screen.write(Target::Info, "\n");
    }

    /// Print a notice on stderr.
    pub fn notice(&self, text: &str) {
        let mut s = self.lock();
        notice(&mut s.screen, text);
    }

    /// Print an error on stderr.
    pub fn error(&self, text: &str) {
        let mut s = self.lock();
        error(&mut s.screen, text);
    }

    /// Print the styled text as given (banner pieces).
    pub fn styled(&self, style: Style, text: &str) {
        let mut s = self.lock();
        s.screen.write_styled(Target::Info, style, text);
    }

    /// End the answer's line if it is open (one-shot: stdout ends with a
    /// newline).
    pub fn finish_answer(&self) {
        let mut s = self.lock();
        flush_answer(&mut s);
        s.screen.ensure_line_start(Target::Answer);
    }

    fn show(&self, event: Event) {
        let mut s = self.lock();
        let st = &mut *s;
        match event {
            Event::Text { text } => {
                st.count(&text);
                st.answer_text(&text);
            }
            Event::Reasoning { text } => {
                st.count(&text);
                if self.options.show_thinking {
                    st.reasoning_text(&text);
                }
            }
            Event::Status { text } => st.screen.set_status(&text),
            // A replayed conversation's questions: the REPL shows only
            // live turns, whose question is on the screen already.
            Event::Question { .. } => {}
            Event::Attached { path, size } => {
                end_block(st);
                st.screen.write_styled(
                    Target::Info,
                    Style::Dim,
                    &mm_ui::attached_line(&path, &size),
                );
                st.screen.write(Target::Info, "\n");
            }
            Event::ToolStart { info } => {
                end_block(st);
                st.screen
                    .write(Target::Info, &format!("{}\n", tool_line(&info)));
                st.tools.insert(info.id.clone(), info);
            }
            Event::ToolRunning { id } => {
                let tool = st
                    .tools
                    .get(&id)
                    .map(|i| i.tool.clone())
                    .unwrap_or_default();
                st.screen.set_status(&format!("Running {tool}"));
            }
            Event::ToolOutput { id, text } => {
                st.live_output(id, &text, self.options.preview_lines);
            }
            // The result's text names the picture; a terminal shows that.
            Event::ToolImages { .. } => {}
            Event::ToolEnd {
                id,
                tool,
                status,
                output,
                preview,
            } => st.tool_end(id, tool, status, &output, &preview),
            Event::Notice { text } => {
                end_block(st);
                notice(&mut st.screen, &text);
            }
            Event::Error { text } => {
                end_block(st);
                error(&mut st.screen, &text);
            }
            Event::Tokens {
                session,
                context,
                window,
            } => {
                // A session that has not spent a token has nothing to say.
                st.tokens = (session.prompt + session.completion > 0)
                    .then(|| mm_ui::words::tokens_line(&session, context, window));
            }
            Event::Plan { items } => {
                end_block(st);
                for line in mm_ui::checklist_lines(&items, ascii_marks()) {
                    st.screen.write(Target::Info, &format!("{INDENT}{line}\n"));
                }
            }
            Event::Mode { mode } => {
                end_block(st);
                notice(
                    &mut st.screen,
                    &format!("mode: {} — {}", mode.name(), mode.meaning()),
                );
            }
            Event::Child {
                parent,
                agent,
                event,
            } => show_child(st, &parent, &agent, *event),
            Event::TurnEnd {
                outcome, counters, ..
            } => {
                end_block(st);
                st.screen.stop_spinner();
                st.turn_chars = 0;
                st.screen.set_tokens(0);
                if outcome == TurnOutcome::Cancelled {
                    notice(&mut st.screen, mm_ui::CANCELLED_LINE);
                }
                for line in after_turn_lines(&counters, st.tokens.take()) {
                    st.screen.write_styled(Target::Info, Style::Dim, &line);
                    st.screen.write(Target::Info, "\n");
                }
            }
        }
    }

    /// The plan `exit_plan` presents, as Markdown, then the question
    /// whether to leave plan mode, answered with the permission keys.
    async fn review(&self, plan: &str) -> PlanReview {
        let rx = {
            let mut s = self.lock();
            let st = &mut *s;
            end_block(st);
            st.screen.stop_spinner();
            if !self.controls.can_ask() {
                return PlanReview::Unavailable;
            }
            let lines = mm_ui::markdown::render(plan, terminal_width());
            write_markdown(&mut st.screen, &lines);
            st.screen.ensure_line_start(Target::Info);
            let rx = self.controls.ask();
            st.screen
                .write_styled(Target::Info, Style::Yellow, &plan_prompt());
            rx
        };
        let decision = rx.await.unwrap_or(Decision::Cancelled);
        let (review, word) = match decision {
            Decision::AllowOnce => (PlanReview::Proceed(AgentMode::Ask), "go on, asking first"),
            Decision::AllowAlways => (PlanReview::Proceed(AgentMode::Allow), "go on"),
            Decision::Reject => (
                PlanReview::Stay(self.controls.take_reason()),
                "plan mode stays",
            ),
            Decision::Cancelled => (PlanReview::Cancelled, "cancelled"),
        };
        let mut s = self.lock();
        if std::mem::take(&mut s.reason_open) {
            s.screen.write(Target::Info, "\n");
        }
        s.screen.write(Target::Info, &format!("{word}\n"));
        review
    }

    async fn ask(&self, info: &ToolInfo) -> Decision {
        let waited = self
            .turn_started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|at| at.elapsed());
        if let Some(ran) = waited
            && self.controls.can_ask()
        {
            self.notice_if_away(ran, mm_ui::words::NOTICE_ASKING);
        }
        let rx = {
            let mut s = self.lock();
            let st = &mut *s;
            end_block(st);
            st.screen.stop_spinner();
            if !self.controls.can_ask() {
                notice(
                    &mut st.screen,
                    &format!(
                        "{} needs permission, but there is no terminal to ask: rejected",
                        info.tool
                    ),
                );
                return Decision::Reject;
            }
            if let Some(change) = &info.change {
                for line in change.diff.lines() {
                    show_diff_line(&mut st.screen, line, INDENT);
                }
                st.asked.insert(info.id.clone());
            }
            // Listen before asking: a key pressed the moment the prompt
            // shows must answer it, not land in the next question.
            let rx = self.controls.ask();
            st.screen
                .write_styled(Target::Info, Style::Yellow, &permission_prompt());
            rx
        };
        let decision = rx.await.unwrap_or(Decision::Cancelled);
        let word = match decision {
            Decision::AllowOnce => "allowed once",
            Decision::AllowAlways => "allowed for the session",
            Decision::Reject => "rejected",
            Decision::Cancelled => "cancelled",
        };
        let mut s = self.lock();
        if decision == Decision::Reject
            && let Some(why) = self.controls.take_reason()
        {
            s.reasons.insert(info.id.clone(), why);
        }
        // The word ends the prompt's line, or follows the reason's.
        if std::mem::take(&mut s.reason_open) {
            s.screen.write(Target::Info, "\n");
        }
        s.screen.write(Target::Info, &format!("{word}\n"));
        decision
    }
}

/// Close an open answer or reasoning line before a block of other output.
/// The mark before every line of reasoning: it tells reasoning from the
/// answer and from tool output without color too.
pub const REASONING_GUTTER: &str = "┊ ";

/// Reasoning, dimmed, each line behind [`REASONING_GUTTER`].
fn write_reasoning(screen: &mut Screen, text: &str) {
    for (i, piece) in text.split('\n').enumerate() {
        if i > 0 {
            screen.write(Target::Info, "\n");
        }
        if piece.is_empty() {
            continue;
        }
        if screen.at_line_start(Target::Info) {
            screen.write_styled(Target::Info, Style::Dim, REASONING_GUTTER);
        }
        screen.write_styled(Target::Info, Style::Dim, piece);
    }
}

/// Write the rest of the answer being rendered.
impl State {
    /// Count what the model wrote, for the status line's tokens.
    fn count(&mut self, text: &str) {
        self.turn_chars += text.chars().count();
        self.screen
            .set_tokens(mm_ui::words::estimate_tokens(self.turn_chars));
    }

    /// A chunk of the answer: Markdown on a terminal, line by line as it
    /// comes; as it comes on a pipe; a blank line first when reasoning came
    /// before it.
    fn answer_text(&mut self, text: &str) {
        if self.reasoning {
            self.reasoning = false;
            self.screen.ensure_line_start(Target::Info);
            self.screen.write(Target::Info, "\n");
        }
        match &mut self.answer {
            Some(stream) => {
                if !text.is_empty() {
                    self.screen.set_status("Writing");
                }
                if stream.is_empty() {
                    // A new answer wraps at the terminal's width now: the
                    // user may have resized it since the last one.
                    *stream = mm_ui::markdown::Stream::new(terminal_width());
                }
                let lines = stream.push(text);
                write_markdown(&mut self.screen, &lines);
            }
            // Not a terminal: the model's text as it came, for a script.
            None => self.screen.write_own(Target::Answer, text),
        }
    }

    /// A chunk of reasoning, behind its gutter; the answer so far is
    /// flushed first.
    fn reasoning_text(&mut self, text: &str) {
        if !self.reasoning {
            flush_answer(self);
            self.reasoning = true;
            self.thought.reset();
            self.screen.ensure_line_start(Target::Answer);
            self.screen.ensure_line_start(Target::Info);
        }
        let text = self.thought.push(text);
        write_reasoning(&mut self.screen, &text);
    }

    /// A running command's output: its first `room` lines above the
    /// spinner, the rest counted in it.
    fn live_output(&mut self, id: String, text: &str, room: usize) {
        let live = self.live.entry(id).or_default();
        let lines = live.take(text, room);
        let more = live.more;
        for line in lines {
            self.screen
                .write_above_spinner(Target::Info, Style::Dim, &format!("{INDENT}{line}\n"));
        }
        if more > 0 {
            let detail = mm_ui::fold::more_lines(more);
            self.screen.set_detail(detail.trim_start_matches("… "));
        }
    }

    /// A call ended: its result's preview (without the lines shown while
    /// it ran, which are its first ones) and an edit's diff (unless the
    /// permission prompt showed it).
    fn tool_end(
        &mut self,
        id: String,
        tool: String,
        status: ToolStatus,
        output: &str,
        preview: &[String],
    ) {
        end_block(self);
        let shown = self.live.remove(&id).map_or(0, |l| l.shown);
        let asked = self.asked.remove(&id);
        let info = self.tools.remove(&id).unwrap_or_else(|| ToolInfo {
            id,
            tool,
            family: ToolFamily::Other,
            echoes: false,
            title: String::new(),
            kind: ToolKind::Other,
            input: serde_json::Value::Null,
            locations: Vec::new(),
            change: None,
        });
        for line in result_lines(&info, status, output, preview)
            .into_iter()
            .skip(shown)
        {
            let line = indented(&line, INDENT);
            self.screen
                .write_styled(Target::Info, Style::Dim, &format!("{INDENT}{line}"));
            self.screen.write(Target::Info, "\n");
        }
        for line in diff_lines(&info, preview, asked) {
            show_diff_line(&mut self.screen, line, INDENT);
        }
        // As the window marks it: a failed call says so in red.
        if status == ToolStatus::Failed {
            self.screen.write_styled(
                Target::Info,
                Style::Red,
                &format!("{INDENT}✗ {}", failure_mark(output)),
            );
            self.screen.write(Target::Info, "\n");
        }
    }
}

/// How a failed call ended, in two words: `exit 3`, `killed by signal 9
/// (SIGKILL)`, else `failed`.
pub fn failure_mark(output: &str) -> String {
    output
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("[exit code: ")?.strip_suffix(']'))
        .map_or_else(
            || "failed".to_string(),
            |how| how.replace("exit status ", "exit "),
        )
}

fn flush_answer(st: &mut State) {
    if let Some(stream) = &mut st.answer
        && !stream.is_empty()
    {
        let lines = stream.finish();
        write_markdown(&mut st.screen, &lines);
    }
}

/// Rendered answer lines, styled when stdout takes color.
fn write_markdown(screen: &mut Screen, lines: &[mm_ui::markdown::Line]) {
    let color = screen.color(Target::Answer);
    for line in lines {
        let mut text = crate::style::heading_mark(color, line);
        for span in &line.spans {
            text.push_str(&crate::style::markdown_span(color, span));
        }
        text.push('\n');
        // The renderer sanitised the spans; the styling is mm's.
        screen.write_own(Target::Answer, &text);
    }
}

/// The terminal's width in columns (80 when it cannot be read).
fn terminal_width() -> usize {
    crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w).max(20))
}

/// A subagent's event, under its `task` call: its tool calls as indented
/// dim lines, the last line of its answer so far as the spinner's status,
/// and when it ends, the tokens it used.
fn show_child(st: &mut State, parent: &str, agent: &str, event: Event) {
    let agent = sanitize(agent);
    let line = |st: &mut State, text: &str| {
        end_block(st);
        st.screen.write_styled(
            Target::Info,
            Style::Dim,
            &format!("{INDENT}↳ {agent}: {text}"),
        );
        st.screen.write(Target::Info, "\n");
    };
    match event {
        Event::ToolStart { info } => line(st, &tool_line(&info)),
        Event::ToolEnd {
            status: ToolStatus::Failed,
            output,
            ..
        } => {
            let first = output.lines().next().unwrap_or_default().to_owned();
            line(st, &format!("✗ {}", sanitize(&first)));
        }
        Event::Text { text } => {
            let so_far = st.children.entry(parent.to_owned()).or_default();
            so_far.push_str(&text);
            let last = so_far
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default()
                .to_owned();
            st.screen.set_status(&format!("{agent}: {last}"));
        }
        Event::Status { text } => st.screen.set_status(&format!("{agent}: {text}")),
        Event::Notice { text } | Event::Error { text } => line(st, &sanitize(&text)),
        Event::TurnEnd {
            prompt_tokens,
            completion_tokens,
            ..
        } => {
            st.children.remove(parent);
            line(
                st,
                &format!(
                    "done · in {} · out {}",
                    mm_ui::short_count(prompt_tokens),
                    mm_ui::short_count(completion_tokens)
                ),
            );
        }
        _ => {}
    }
}

fn end_block(st: &mut State) {
    flush_answer(st);
    st.reasoning = false;
    st.screen.ensure_line_start(Target::Answer);
    st.screen.ensure_line_start(Target::Info);
}

fn notice(screen: &mut Screen, text: &str) {
    screen.ensure_line_start(Target::Alert);
    screen.write_styled(Target::Alert, Style::Yellow, text);
    screen.write(Target::Alert, "\n");
}

fn error(screen: &mut Screen, text: &str) {
    screen.ensure_line_start(Target::Alert);
    screen.write_styled(Target::Alert, Style::Red, &format!("error: {text}"));
    screen.write(Target::Alert, "\n");
}

/// A line of a unified diff, coloured by its sign, after `indent`.
fn show_diff_line(screen: &mut Screen, line: &str, indent: &str) {
    let line = &indented(line, indent);
    let header = ["+++", "---", "diff "].iter().any(|h| line.starts_with(h));
    let style = if header {
        Style::Bold
    } else if line.starts_with('+') {
        Style::Green
    } else if line.starts_with('-') {
        Style::Red
    } else if line.starts_with("@@") {
        Style::Cyan
    } else {
        Style::Dim
    };
    screen.write_styled(Target::Info, style, &format!("{indent}{line}"));
    screen.write(Target::Info, "\n");
}

fn spawn_spinner(state: Arc<Mutex<State>>, stop: Arc<AtomicBool>) -> Option<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("mm-spinner".into())
        .spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(mm_ui::spinner::TICK);
                if let Ok(mut s) = state.lock() {
                    s.screen.tick();
                }
            }
        })
        .ok()
}

impl Drop for TermSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.spinner.lock().ok().and_then(|mut t| t.take()) {
            let _ = thread.join();
        }
        self.lock().screen.stop_spinner();
    }
}

impl Sink for TermSink {
    fn event(&self, event: Event) {
        self.show(event);
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(self.ask(info))
    }

    fn rejection_reason(&self, id: &str) -> Option<String> {
        self.lock().reasons.remove(id)
    }

    fn review_plan<'a>(&'a self, plan: &'a str) -> BoxFuture<'a, PlanReview> {
        Box::pin(self.review(plan))
    }

    fn cannot_ask(&self, info: &ToolInfo) -> Option<String> {
        let text = self.controls.cannot_ask()?;
        let mut s = self.lock();
        let st = &mut *s;
        end_block(st);
        notice(
            &mut st.screen,
            &format!(
                "{} needs permission, but there is no terminal to ask: not run \
                 (use --permissions or an allow rule)",
                sanitize(&info.tool)
            ),
        );
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_auto_waits_ten_seconds_in_the_repl() {
        use mm_agent::config::Notify;
        let short = std::time::Duration::from_secs(2);
        assert_eq!(notice_kind(Notify::Auto, short, true), None);
        assert_eq!(
            notice_kind(Notify::Auto, AUTO_NOTIFY_AFTER, false),
            Some(false)
        );
        assert_eq!(
            notice_kind(Notify::Auto, AUTO_NOTIFY_AFTER, true),
            Some(true)
        );
        assert_eq!(notice_kind(Notify::Bell, short, true), Some(false));
        assert_eq!(notice_kind(Notify::Osc9, short, false), Some(true));
        assert_eq!(notice_kind(Notify::Off, AUTO_NOTIFY_AFTER, true), None);
        assert_eq!(failure_mark("x\n[exit code: exit status 3]"), "exit 3");
        assert_eq!(failure_mark("[command rejected by the user]"), "failed");
    }
    use crate::screen::tests::{Buffer, output};
    use mm_ui::{FileChange, ToolKind};
    use std::time::Duration;

    fn sink(layout: Layout, show_thinking: bool) -> (TermSink, Buffer, Buffer, Arc<Controls>) {
        let (out, err) = (Buffer::default(), Buffer::default());
        let controls = Arc::new(Controls::default());
        let s = TermSink::with_outputs(
            layout,
            output(&out, false),
            output(&err, false),
            TermOptions {
                show_thinking,
                preview_lines: 5,
                notify: mm_agent::config::Notify::Off,
            },
            controls.clone(),
        );
        (s, out, err, controls)
    }

    fn info(tool: &str, title: &str) -> ToolInfo {
        call(tool, title)
    }

    fn end(tool: &str, output: &str, preview: &[&str]) -> Event {
        Event::ToolEnd {
            id: "c1".into(),
            tool: tool.into(),
            status: ToolStatus::Completed,
            output: output.into(),
            preview: preview.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A call of `tool` titled `title`, as its tool describes it.
    fn call(tool: &str, title: &str) -> ToolInfo {
        // What these tools' rows say (mm-tools).
        let (family, kind, echoes) = match tool {
            "bash" => (ToolFamily::Command, ToolKind::Execute, true),
            "read_skill" => (ToolFamily::Skill, ToolKind::Read, false),
            "lsp" => (ToolFamily::Lsp, ToolKind::Read, true),
            "read_file" => (ToolFamily::File, ToolKind::Read, false),
            "write_file" | "edit_file" => (ToolFamily::File, ToolKind::Edit, false),
            _ => (ToolFamily::Other, ToolKind::Other, false),
        };
        ToolInfo {
            id: "c1".into(),
            tool: tool.into(),
            family,
            echoes,
            title: title.into(),
            kind,
            input: serde_json::Value::Null,
            locations: vec![],
            change: None,
        }
    }

    fn tool_line(tool: &str, title: &str) -> String {
        super::tool_line(&call(tool, title))
    }

    fn result_lines(
        tool: &str,
        status: ToolStatus,
        output: &str,
        preview: &[String],
    ) -> Vec<String> {
        super::result_lines(&call(tool, ""), status, output, preview)
    }

    #[test]
    fn tool_lines_follow_the_reference() {
        assert_eq!(tool_line("bash", "echo hi"), "🛠️  bash: echo hi");
        assert_eq!(tool_line("read_skill", "deploy"), "📖 read_skill: deploy");
        assert_eq!(
            tool_line("lsp", "definition main.go greet"),
            "🔎 lsp: definition main.go greet"
        );
        assert_eq!(tool_line("edit_file", "src/a.rs"), "📝 edit_file: src/a.rs");
    }

    #[test]
    fn previews_and_no_output() {
        assert_eq!(
            result_lines("bash", ToolStatus::Completed, "", &[]),
            ["(no output)"]
        );
        let preview: Vec<String> = ["1", "2"].iter().map(|s| s.to_string()).collect();
        // Up to previewLines lines, and not one more.
        assert_eq!(
            result_lines("bash", ToolStatus::Completed, "1\n2\n3\n4\n", &preview),
            ["1", "2"]
        );
        // A call that failed without running says why.
        let invalid = "invalid arguments for bash: missing field `command`; send a JSON object matching the tool's schema";
        assert_eq!(
            result_lines("bash", ToolStatus::Failed, invalid, &[]),
            [invalid]
        );
        assert_eq!(
            result_lines(
                "lsp",
                ToolStatus::Failed,
                "[not run: the turn was stopped]",
                &[]
            ),
            ["[not run: the turn was stopped]"]
        );
        assert_eq!(
            result_lines("bash", ToolStatus::Completed, "1\n2\n", &preview),
            ["1", "2"]
        );
        assert_eq!(
            result_lines(
                "edit_file",
                ToolStatus::Completed,
                "edited a: 1 edit(s), +1 -1 lines, first change at line 2\n@@",
                &[]
            ),
            ["edited a: 1 edit(s), +1 -1 lines, first change at line 2"]
        );
        assert!(result_lines("read_skill", ToolStatus::Completed, "# skill\ntext", &[]).is_empty());
        assert_eq!(
            result_lines("read_file", ToolStatus::Completed, "a\nb\n", &[]),
            ["read 2 lines"]
        );
    }

    #[test]
    fn interactive_turn_shows_tools_answer_and_recap() {
        let (s, out, err, _) = sink(Layout::Interactive, true);
        s.event(Event::Reasoning { text: "hmm".into() });
        s.event(Event::Text {
            text: "Let me look.".into(),
        });
        s.event(Event::ToolStart {
            info: info("bash", "echo hi"),
        });
        s.event(Event::ToolRunning { id: "c1".into() });
        s.event(end("bash", "hi\n", &["hi"]));
        s.event(Event::Text {
            text: "It says hi.".into(),
        });
        let mut counters = Counters::default();
        counters.count(ToolFamily::Command);
        s.event(Event::Tokens {
            session: mm_ui::TokenCounts {
                prompt: 10,
                completion: 3,
                cached: 0,
            },
            context: 13,
            window: 32768,
        });
        s.event(Event::TurnEnd {
            outcome: TurnOutcome::Done,
            counters,
            prompt_tokens: 10,
            completion_tokens: 3,
            cached_tokens: 0,
        });
        assert_eq!(
            out.text(),
            "┊ hmm\n\nLet me look.\n🛠️  bash: echo hi\n   hi\nIt says hi.\n⚙ 1 command(s)\ncontext 0% of 32k · session in 10 · out 3\n"
        );
        assert_eq!(err.text(), "");
    }

    #[test]
    fn the_recap_line_holds_only_the_counters_and_the_tokens_follow() {
        let mut counters = Counters::default();
        counters.count(ToolFamily::Command);
        counters.count(ToolFamily::Command);
        counters.count(ToolFamily::File);
        let tokens = mm_ui::TokenCounts {
            prompt: 5200,
            completion: 80,
            cached: 4800,
        };
        let tokens = mm_ui::words::tokens_line(&tokens, 5280, 32768);
        assert_eq!(
            tokens,
            "context 16% of 32k · session in 5.2k (4.8k cached) · out 80"
        );
        assert_eq!(
            after_turn_lines(&counters, Some(tokens.clone())),
            ["⚙ 2 command(s)  📝 1 file op(s)", tokens.as_str()]
        );
        assert_eq!(
            after_turn_lines(&counters, None),
            ["⚙ 2 command(s)  📝 1 file op(s)"]
        );
        assert_eq!(
            after_turn_lines(&Counters::default(), Some(tokens.clone())),
            [tokens.as_str()]
        );
        assert!(after_turn_lines(&Counters::default(), None).is_empty());
    }

    #[test]
    fn output_cut_mid_sequence_is_shown_clean_and_a_cr_starts_a_line() {
        let (s, out, _err, _) = sink(Layout::Interactive, true);
        s.event(Event::ToolStart {
            info: info("bash", "x\x1b[2J"),
        });
        for piece in ["A\x1b]52;c;a", "Gk=\x07B\r", "\nC\rD\n"] {
            s.event(Event::ToolOutput {
                id: "c1".into(),
                text: piece.into(),
            });
        }
        s.event(Event::Reasoning {
            text: "so \x1b[".into(),
        });
        s.event(Event::Reasoning {
            text: "2Jwhat".into(),
        });
        assert_eq!(out.text(), "🛠️  bash: x\n   AB\n   C\n   D\n┊ so what");
    }

    #[test]
    fn one_shot_puts_only_the_answer_on_stdout() {
        let (s, out, err, _) = sink(Layout::OneShot, true);
        s.event(Event::Reasoning {
            text: "thinking".into(),
        });
        s.event(Event::ToolStart {
            info: info("bash", "ls"),
        });
        s.event(end("bash", "", &[]));
        s.event(Event::Notice {
            text: "[stopped: maxTurns (1) reached]".into(),
        });
        s.event(Event::Text {
            text: "done".into(),
        });
        s.event(Event::Error {
            text: "boom".into(),
        });
        s.finish_answer();
        assert_eq!(out.text(), "done\n");
        assert_eq!(
            err.text(),
            "┊ thinking\n🛠️  bash: ls\n   (no output)\n[stopped: maxTurns (1) reached]\nerror: boom\n"
        );
    }

    #[test]
    fn hidden_thinking_is_not_printed() {
        let (s, out, err, _) = sink(Layout::Interactive, false);
        s.event(Event::Reasoning {
            text: "secret".into(),
        });
        s.event(Event::Text {
            text: "answer".into(),
        });
        assert_eq!(out.text(), "answer");
        assert_eq!(err.text(), "");
    }

    #[test]
    fn cancelled_turn_says_so() {
        let (s, _out, err, _) = sink(Layout::Interactive, true);
        s.event(Event::TurnEnd {
            outcome: TurnOutcome::Cancelled,
            counters: Counters::default(),
            prompt_tokens: 0,
            completion_tokens: 0,
            cached_tokens: 0,
        });
        assert_eq!(err.text(), format!("{}\n", mm_ui::CANCELLED_LINE));
    }

    #[tokio::test]
    async fn permission_without_a_terminal_rejects() {
        let (s, _out, err, _) = sink(Layout::OneShot, true);
        let d = s.permission(&info("bash", "rm -rf x")).await;
        assert_eq!(d, Decision::Reject);
        assert_eq!(
            err.text(),
            "bash needs permission, but there is no terminal to ask: rejected\n"
        );
    }

    #[tokio::test]
    async fn permission_shows_the_diff_and_waits_for_the_key() {
        let (s, out, _err, controls) = sink(Layout::Interactive, true);
        controls.set_active_for_tests(true);
        let mut i = info("edit_file", "a.txt");
        i.change = Some(FileChange {
            path: "/p/a.txt".into(),
            old_text: Some("one\n".into()),
            new_text: Some("uno\n".into()),
            diff: "@@ -1 +1 @@\n-one\n+uno\n".into(),
            too_large: false,
            lines: 1,
        });
        let s = Arc::new(s);
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move { s.permission(&i).await })
        };
        for _ in 0..100 {
            if controls.asking() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(controls.answer(Decision::AllowAlways));
        let d = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(d, Decision::AllowAlways);
        assert_eq!(
            out.text(),
            format!(
                "   @@ -1 +1 @@\n   -one\n   +uno\n{}allowed for the session\n",
                permission_prompt()
            )
        );
    }
}
