//! The event loop: the one place that draws. It waits for a key, a wake-up
//! from the Sink, the end of a turn, a tick or a signal, changes state, and
//! draws the next frame from the transcript's current state.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use futures::{Stream, StreamExt};
use mm_agent::commands::{self, Command, Commands, Front, Outcome, Parsed};
use mm_agent::config::Config;
use mm_agent::{Agent, PermissionSource};
use mm_ui::{Decision, Sink};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::keymap::{self, Action, Context, Mode};
use crate::painter;
use crate::popup::{self, Kind};
use crate::sink::{Shared, WindowSink};
use crate::transcript::{EntryKind, Transcript};
use crate::ui::Ui;
use crate::view::{self, Scroll};

/// Shortest time between two frames (about 60 per second).
pub const FRAME: Duration = Duration::from_millis(16);
/// Spinner and clock tick while something runs.
pub const TICK: Duration = Duration::from_millis(100);
/// A second Ctrl-C on an empty input within this quits.
pub const QUIT_WINDOW: Duration = mm_ui::words::QUIT_WINDOW;

/// Why the window stopped early.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("terminal: {0}")]
    Terminal(String),
}

/// What a turn's task gives back: the agent, and a command's outcome.
type Finished = (Box<Agent>, Option<Outcome>);

/// The agent, or the task that has it during a turn.
enum Slot {
    Idle(Box<Agent>),
    Busy {
        task: JoinHandle<Finished>,
        cancel: CancellationToken,
    },
    /// Only while switching between the two.
    Empty,
}

/// The window: state and the loop that drives it.
pub struct App {
    shared: Arc<Shared>,
    ui: Ui,
    slot: Slot,
    /// The agent's commands, for what works while its turn runs.
    commands: Commands,
    config: Config,
    cwd: PathBuf,
    quit: bool,
    ctrl_c: Option<Instant>,
    clear: bool,
    /// The list a command opened (`/resume`, `/model`), while it is open.
    pick: Option<mm_agent::commands::Pick>,
    /// The terminal has the focus (focus reporting; true until told).
    focused: bool,
    /// A permission question was up at the last look, for `notify`.
    was_asking: bool,
    /// The project's files for the `@` list, walked when it first opens.
    files: Option<Vec<String>>,
}

impl App {
    pub fn new(agent: Agent) -> App {
        let cwd = agent.cwd().to_path_buf();
        let config = agent.config().clone();
        let ui = Ui::new(&agent.model(), &home_short(&cwd), mm_agent::version());
        let shared = Shared::new();
        let banner = start_notice(&agent);
        let warnings = agent.warnings().to_vec();
        shared.update(|t| {
            t.push(EntryKind::Notice(banner));
            for text in warnings {
                t.apply(
                    mm_agent::ui::Event::Notice { text },
                    std::time::Instant::now(),
                );
            }
        });
        let mut ui = ui;
        ui.theme = config.theme;
        if config.edit_mode == mm_agent::config::EditMode::Vi {
            ui.vi = Some(crate::vi::Vi::default());
        }
        let app = App {
            shared,
            ui,
            commands: agent.commands().clone(),
            slot: Slot::Idle(Box::new(agent)),
            config,
            cwd,
            quit: false,
            ctrl_c: None,
            clear: false,
            pick: None,
            focused: true,
            was_asking: false,
            files: None,
        };
        if let Slot::Idle(agent) = &app.slot {
            if !agent.history().is_empty() {
                replay(agent, &app.shared);
            }
            show_tokens(agent, &app.shared);
        }
        app
    }

    /// Keep the input history in `path`, the file the REPL keeps its own
    /// in: what was sent before (in either) comes back with Up and Ctrl-R.
    pub fn use_history_file(&mut self, path: &std::path::Path) {
        self.ui.history = crate::ui::History::load(path);
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The last question and the text of its answer, sanitised, for the
    /// terminal's own scrollback once the window has closed (the alternate
    /// screen leaves nothing behind). `None` before the first question.
    pub fn last_exchange(&self) -> Option<String> {
        let t = self.shared.lock();
        let entries = t.entries();
        let at = entries
            .iter()
            .rposition(|e| matches!(e.kind, EntryKind::Question(_)))?;
        let mut out = String::new();
        if let EntryKind::Question(q) = &entries[at].kind {
            out.push_str(&format!("› {}\n", mm_ui::sanitize(q.trim_end())));
        }
        let answer: String = entries[at + 1..]
            .iter()
            .filter_map(|e| match &e.kind {
                EntryKind::Answer(a) => Some(a.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        if !answer.trim().is_empty() {
            out.push('\n');
            out.push_str(mm_ui::sanitize(answer.trim_end()).as_ref());
            out.push('\n');
        }
        Some(out)
    }

    /// Run until the user quits or `events` ends.
    pub async fn run<B, S>(
        &mut self,
        terminal: &mut Terminal<B>,
        mut events: S,
        mut stop: impl Stream<Item = ()> + Unpin,
    ) -> Result<(), AppError>
    where
        B: Backend,
        S: Stream<Item = std::io::Result<TermEvent>> + Unpin,
    {
        let mut dirty = true;
        let mut last_draw = Instant::now() - FRAME;
        loop {
            if self.clear {
                self.clear = false;
                terminal
                    .clear()
                    .map_err(|e| AppError::Terminal(e.to_string()))?;
                dirty = true;
            }
            if dirty {
                self.draw(terminal)?;
                last_draw = Instant::now();
                dirty = false;
            }
            if self.quit {
                break;
            }
            let animating = self.shared.lock().is_busy() || self.ui.hint.is_some();
            let busy = matches!(self.slot, Slot::Busy { .. });
            tokio::select! {
                ev = events.next() => match ev {
                    Some(Ok(ev)) => {
                        self.on_event(ev);
                        dirty = true;
                    }
                    Some(Err(e)) => return Err(AppError::Terminal(e.to_string())),
                    None => break,
                },
                () = self.shared.changed() => {
                    // Many events, one frame: wait out the frame time.
                    tokio::time::sleep_until((last_draw + FRAME).into()).await;
                    dirty = true;
                }
                agent = wait(&mut self.slot), if busy => {
                    self.finished(agent);
                    dirty = true;
                }
                () = tokio::time::sleep(TICK), if animating => {
                    self.ui.tick += 1;
                    if self.ctrl_c.is_some_and(|at| at.elapsed() > QUIT_WINDOW) {
                        self.ctrl_c = None;
                        self.ui.hint = None;
                    }
                    dirty = true;
                }
                _ = stop.next() => {
                    self.quit = true;
                }
            }
        }
        self.shutdown().await;
        Ok(())
    }

    /// Tell a user who looks elsewhere (`notify`) that a turn ended or a
    /// permission waits: the bell, or an OSC 9 desktop notice.
    fn notify(&self, text: &str) {
        use mm_agent::config::Notify;
        use std::io::Write;
        if self.focused {
            return;
        }
        let osc9 = match self.config.notify {
            Notify::Off => return,
            Notify::Bell => false,
            Notify::Osc9 => true,
            Notify::Auto => mm_ui::words::shows_osc9(
                std::env::var("TERM_PROGRAM").ok().as_deref(),
                std::env::var("TERM").ok().as_deref(),
            ),
        };
        let mut out = std::io::stdout();
        let _ = out.write_all(mm_ui::words::notice_sequence(osc9, text).as_bytes());
        let _ = out.flush();
    }

    /// Draw one frame now.
    pub fn draw<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<(), AppError> {
        self.ui.now = Instant::now();
        let asking = self.shared.lock().permission.is_some();
        if asking && !self.was_asking {
            self.notify(mm_ui::words::NOTICE_ASKING);
        }
        self.was_asking = asking;
        // The mode on the status bar: the agent's when idle (after /mode),
        // an accepted plan's during a turn.
        match &self.slot {
            Slot::Idle(agent) => self.ui.mode = agent.mode(),
            _ => {
                if let Some(mode) = self.shared.lock().mode.take() {
                    self.ui.mode = mode;
                }
            }
        }
        let shared = self.shared.clone();
        let ui = &mut self.ui;
        terminal
            .draw(|frame| {
                let t = shared.lock();
                painter::draw(frame, &t, ui);
            })
            .map_err(|e| AppError::Terminal(e.to_string()))?;
        Ok(())
    }

    /// Cancel a running turn and wait (bounded) for the agent to come back.
    async fn shutdown(&mut self) {
        self.ui.queued.clear();
        if let Slot::Busy { cancel, .. } = &self.slot {
            cancel.cancel();
            if let Ok(agent) =
                tokio::time::timeout(Duration::from_secs(2), wait(&mut self.slot)).await
            {
                self.finished(agent);
            }
        }
        // Language servers get their shutdown/exit before the window closes.
        if let Slot::Idle(agent) = &self.slot {
            agent.shutdown().await;
        }
    }

    fn finished(&mut self, result: Result<Finished, tokio::task::JoinError>) {
        let (agent, outcome) = match result {
            Ok(done) => done,
            Err(e) => {
                // The turn panicked and took the agent along: start afresh.
                let why = if e.is_panic() {
                    "it panicked"
                } else {
                    "it was cancelled"
                };
                self.shared.update(|t| {
                    t.push(EntryKind::Error(format!(
                        "the turn ended unexpectedly ({why}); the conversation starts over"
                    )))
                });
                self.clear = true;
                match Agent::new(self.config.clone(), &self.cwd, PermissionSource::Terminal) {
                    Ok(agent) => (Box::new(agent), None),
                    Err(e) => {
                        self.shared.update(|t| {
                            t.push(EntryKind::Error(format!(
                                "cannot start the agent again: {e}"
                            )))
                        });
                        self.quit = true;
                        self.shared.update(Transcript::end_busy);
                        return;
                    }
                }
            }
        };
        self.ui.model = agent.model();
        self.commands = agent.commands().clone();
        self.slot = Slot::Idle(agent);
        self.shared.update(|t| {
            // A cancelled prompt or a lost TurnEnd must not leave it busy.
            t.permission = None;
            t.end_busy();
        });
        if let Some(outcome) = outcome {
            self.show(outcome);
        }
        self.send_queued();
        if !self.busy() {
            self.notify(mm_ui::words::NOTICE_DONE);
        }
    }

    /// Send what was queued during the turn, in order, while nothing runs
    /// (a command that needs no turn leaves the next one free to go).
    fn send_queued(&mut self) {
        while !self.busy() && !self.quit && !self.ui.queued.is_empty() {
            let text = self.ui.queued.remove(0);
            self.dispatch(text);
        }
    }

    /// Handle one terminal event.
    pub fn on_event(&mut self, ev: TermEvent) {
        match ev {
            TermEvent::Key(key) => {
                let ctx = self.context();
                if ctx.mode == Mode::Normal && self.vi_key(key) {
                    return;
                }
                let action = keymap::key(key, &ctx);
                self.act(action);
            }
            TermEvent::Mouse(m) => self.act(keymap::mouse(m)),
            TermEvent::FocusGained => self.focused = true,
            TermEvent::FocusLost => self.focused = false,
            TermEvent::Paste(text) => {
                self.ui
                    .input
                    .insert_str(text.replace("\r\n", "\n").replace('\r', "\n"));
                self.refresh_popup();
            }
            _ => {}
        }
    }

    /// `editMode: vi`: Esc into normal mode (when no turn runs) and the
    /// keys of normal mode. True when the key was taken.
    fn vi_key(&mut self, key: KeyEvent) -> bool {
        use crate::vi::Outcome;
        if key.kind == crossterm::event::KeyEventKind::Release {
            return false;
        }
        let busy = self.busy();
        let Some(vi) = self.ui.vi.as_mut() else {
            return false;
        };
        if !vi.normal {
            let esc = key.code == KeyCode::Esc && key.modifiers.is_empty();
            if esc && !busy {
                vi.escape(&mut self.ui.input);
                self.ui.selected = None;
                self.ui.hint = None;
                self.ctrl_c = None;
                return true;
            }
            return false;
        }
        match vi.key(key, &mut self.ui.input) {
            Outcome::Pass => false,
            Outcome::Done => {
                self.ctrl_c = None;
                self.ui.hint = None;
                self.refresh_popup();
                true
            }
            Outcome::HistoryPrev => {
                self.act(Action::HistoryPrev);
                true
            }
            Outcome::HistoryNext => {
                self.act(Action::HistoryNext);
                true
            }
        }
    }

    fn context(&self) -> Context {
        let t = self.shared.lock();
        let mode = if t.permission.as_ref().is_some_and(|p| p.reason.is_some()) {
            Mode::Reason
        } else if t.permission.is_some() {
            Mode::Permission
        } else if self.ui.search.is_some() {
            Mode::Search
        } else if self.ui.popup.is_some() {
            Mode::Popup
        } else {
            Mode::Normal
        };
        let lines = self.ui.input.lines();
        let cursor = self.ui.input.cursor();
        let (row, col) = (cursor.0, cursor.1);
        let line = lines.get(row).map(String::as_str).unwrap_or("");
        Context {
            mode,
            input_empty: lines.iter().all(String::is_empty),
            first_row: row == 0,
            last_row: row + 1 >= lines.len(),
            at_mention: popup::mention_at(line, col).is_some(),
            has_selection: self.ui.selected.is_some(),
            after_backslash: line[..line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)]
                .ends_with('\\'),
        }
    }

    fn busy(&self) -> bool {
        matches!(self.slot, Slot::Busy { .. })
    }

    /// Carry out one action.
    pub fn act(&mut self, action: Action) {
        if action != Action::Interrupt && action != Action::Nothing {
            self.ctrl_c = None;
            self.ui.hint = None;
        }
        let rows = usize::from(self.ui.transcript_rows.max(1));
        match action {
            Action::Nothing => {}
            Action::Submit => self.submit(),
            Action::Newline => self.ui.input.insert_newline(),
            Action::ContinueLine => {
                self.ui.input.delete_char();
                self.ui.input.insert_newline();
            }
            Action::Quit => self.quit = true,
            Action::Edit(key) => self.edit(key),
            Action::OpenPicker(key) => {
                self.ui.input.input(key);
                self.ui.popup = popup::picker_for(&self.ui.text(), &self.commands);
            }
            Action::Cancel => self.cancel(),
            Action::Interrupt => self.interrupt(),
            Action::PageUp => self.scroll_up(rows.saturating_sub(1).max(1)),
            Action::PageDown => self.scroll_down(rows.saturating_sub(1).max(1)),
            Action::ScrollUp(n) => self.scroll_up(n),
            Action::ScrollDown(n) => self.scroll_down(n),
            Action::Top => self.ui.scroll = Scroll::At { entry: 0, row: 0 },
            Action::Bottom => self.ui.scroll = Scroll::Bottom,
            Action::HistoryPrev => {
                let current = self.ui.text();
                if let Some(older) = self.ui.history.older(&current).map(str::to_string) {
                    self.ui.set_text(&older);
                }
            }
            Action::HistoryNext => {
                if let Some(newer) = self.ui.history.newer() {
                    self.ui.set_text(&newer);
                }
            }
            Action::SelectPrev => self.select(true, rows),
            Action::SelectNext => self.select(false, rows),
            Action::CycleMode => self.cycle_mode(),
            Action::Toggle => self.toggle(),
            Action::Complete => self.complete(),
            Action::PopupUp => {
                if let Some(p) = &mut self.ui.popup {
                    p.up();
                }
            }
            Action::PopupDown => {
                if let Some(p) = &mut self.ui.popup {
                    p.down();
                }
            }
            Action::PopupAccept => self.accept(true),
            Action::PopupComplete => self.accept(false),
            Action::Decide(d) => {
                self.shared.answer(d);
            }
            Action::StartReason => self.shared.update(|t| {
                if let Some(p) = t.permission.as_mut() {
                    p.reason = Some(String::new());
                }
            }),
            Action::ReasonKey(key) => self.reason_key(key),
            Action::PromptScroll(n) => {
                self.ui.prompt_scroll = if n < 0 {
                    self.ui
                        .prompt_scroll
                        .saturating_sub(n.unsigned_abs() as usize)
                } else {
                    self.ui.prompt_scroll.saturating_add(n as usize)
                };
            }
            Action::Redraw => self.clear = true,
            Action::SearchHistory => self.search_history(),
            Action::SearchKey(key) => self.search_key(key),
            Action::SearchAccept => self.end_search(true),
        }
        if let Some(s) = &self.ui.search {
            self.ui.hint = Some(match s.found {
                Some(_) => format!(
                    "history search: {} (Ctrl-R older · Enter take · Esc back)",
                    s.query
                ),
                None if s.query.is_empty() => {
                    "history search: type to search (Ctrl-R older · Esc back)".to_string()
                }
                None => format!("history search: no match for {}", s.query),
            });
        }
    }

    /// Ctrl-R: start searching the history, or find an older match.
    fn search_history(&mut self) {
        match &mut self.ui.search {
            None => {
                self.ui.search = Some(crate::ui::Search {
                    draft: self.ui.text(),
                    ..Default::default()
                });
            }
            Some(s) => {
                if let Some(i) = self.ui.history.search(&s.query, s.found) {
                    s.found = Some(i);
                }
            }
        }
        self.show_search();
    }

    /// A key typed into the search: the newest entry holding the query.
    fn search_key(&mut self, key: KeyEvent) {
        if let Some(s) = &mut self.ui.search {
            match key.code {
                KeyCode::Backspace => {
                    s.query.pop();
                }
                KeyCode::Char(c) => s.query.push(c),
                _ => {}
            }
            s.found = self.ui.history.search(&s.query, None);
        }
        self.show_search();
    }

    /// Show the match (or the draft) in the input.
    fn show_search(&mut self) {
        let Some(s) = &self.ui.search else { return };
        let text = match s.found {
            Some(i) => self.ui.history.items().get(i).cloned().unwrap_or_default(),
            None => s.draft.clone(),
        };
        self.ui.set_text(&text);
    }

    /// Leave the search: with the match in the input (`take`), or the
    /// input as it was.
    fn end_search(&mut self, take: bool) {
        if let Some(s) = self.ui.search.take() {
            if !take || s.found.is_none() {
                self.ui.set_text(&s.draft);
            }
            self.ui.hint = None;
        }
    }

    /// Esc: close the picker, else stop the turn (and its question),
    /// else drop the selection.
    /// Shift-Tab: the next mode, between turns (a turn's calls keep the
    /// mode they started in).
    fn cycle_mode(&mut self) {
        match &mut self.slot {
            Slot::Idle(agent) => {
                let mode = agent.mode().next();
                agent.set_mode(mode);
                self.ui.mode = mode;
                self.shared
                    .update(|t| t.push(EntryKind::Notice(mode.banner_line())));
            }
            _ => self.ui.hint = Some("the mode changes between turns".into()),
        }
    }

    fn cancel(&mut self) {
        if self.ui.search.is_some() {
            self.end_search(false);
        } else if let Some(p) = self.ui.popup.take() {
            if p.kind == Kind::Pick {
                self.pick = None;
                self.ui.take_text();
            }
        } else if self.busy() {
            self.stop_turn();
        } else {
            self.ui.selected = None;
        }
    }

    /// Stop the running turn (and its question); what was queued comes
    /// back into the input, before the draft, to send again or edit.
    fn stop_turn(&mut self) {
        if let Slot::Busy { cancel, .. } = &self.slot {
            cancel.cancel();
            self.shared.answer(Decision::Cancelled);
        }
        if !self.ui.queued.is_empty() {
            let n = self.ui.queued.len();
            let mut back = std::mem::take(&mut self.ui.queued);
            let draft = self.ui.text();
            if !draft.trim().is_empty() {
                back.push(draft);
            }
            self.ui.set_text(&back.join("\n"));
            self.notice(mm_ui::words::unqueued_line(n));
        }
    }

    /// Ctrl-C: stop a running turn; else clear the draft; on an empty
    /// input, the second within [`QUIT_WINDOW`] quits.
    fn interrupt(&mut self) {
        // A turn whose end is in (its task still handing the agent back)
        // is over for the user: the key goes to the input.
        if self.busy() && self.shared.lock().is_busy() {
            self.ctrl_c = None;
            self.stop_turn();
        } else if !self.ui.text().is_empty() || self.ui.popup.is_some() {
            self.ctrl_c = None;
            self.ui.popup = None;
            self.ui.take_text();
        } else if self.ctrl_c.is_some_and(|at| at.elapsed() <= QUIT_WINDOW) {
            self.quit = true;
        } else {
            self.ctrl_c = Some(Instant::now());
            self.ui.hint = Some(mm_ui::words::QUIT_HINT.into());
        }
    }

    /// Tab / Shift-Tab: select the next foldable block and scroll to it.
    fn select(&mut self, back: bool, rows: usize) {
        let t = self.shared.lock();
        self.ui.select(&t, back);
        if let Some(i) = self.ui.selected {
            let look = self.ui.look();
            self.ui.scroll = view::reveal(&t, &mut self.ui.cache, &look, rows, self.ui.scroll, i);
        }
    }

    /// Unfold or fold the selected block, or the last foldable one.
    fn toggle(&mut self) {
        let target = self.ui.selected.or_else(|| {
            let t = self.shared.lock();
            t.entries().iter().rposition(|e| e.kind.foldable())
        });
        if let Some(i) = target {
            self.shared.update(|t| t.toggle(i));
        }
    }

    /// A key typed into a rejection's reason.
    fn reason_key(&mut self, key: KeyEvent) {
        self.shared.update(|t| {
            if let Some(why) = t.permission.as_mut().and_then(|p| p.reason.as_mut()) {
                match key.code {
                    KeyCode::Backspace => {
                        why.pop();
                    }
                    KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                        why.push(c)
                    }
                    _ => {}
                }
            }
        });
    }

    fn scroll_up(&mut self, n: usize) {
        let t = self.shared.lock();
        let look = self.ui.look();
        let rows = usize::from(self.ui.transcript_rows);
        self.ui.scroll = view::up(&t, &mut self.ui.cache, &look, rows, self.ui.scroll, n);
    }

    fn scroll_down(&mut self, n: usize) {
        let t = self.shared.lock();
        let look = self.ui.look();
        let rows = usize::from(self.ui.transcript_rows);
        self.ui.scroll = view::down(&t, &mut self.ui.cache, &look, rows, self.ui.scroll, n);
    }

    /// A key for the input box: readline's keys first (the box's own
    /// bindings differ: its Ctrl-U undoes, its Ctrl-R redoes).
    fn edit(&mut self, key: KeyEvent) {
        use ratatui_textarea::CursorMove;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let input = &mut self.ui.input;
        match key.code {
            KeyCode::Char('a') if ctrl => input.move_cursor(CursorMove::Head),
            KeyCode::Char('e') if ctrl => input.move_cursor(CursorMove::End),
            KeyCode::Char('b') if ctrl => input.move_cursor(CursorMove::Back),
            KeyCode::Char('f') if ctrl => input.move_cursor(CursorMove::Forward),
            KeyCode::Char('b') if alt => input.move_cursor(CursorMove::WordBack),
            KeyCode::Char('f') if alt => input.move_cursor(CursorMove::WordForward),
            KeyCode::Char('u') if ctrl => {
                input.delete_line_by_head();
            }
            KeyCode::Char('k') if ctrl => {
                input.delete_line_by_end();
            }
            KeyCode::Char('w') if ctrl => {
                input.delete_word();
            }
            KeyCode::Char('y') if ctrl => {
                input.paste();
            }
            KeyCode::Char('_' | '7') if ctrl => {
                input.undo();
            }
            _ => {
                input.input(key);
            }
        }
        self.refresh_popup();
    }

    /// Keep the open list in step with what is typed.
    fn refresh_popup(&mut self) {
        match self.ui.popup.as_ref().map(|p| p.kind) {
            Some(Kind::Commands | Kind::Paths) | None => {
                self.ui.popup =
                    popup::picker_for(&self.ui.text(), &self.commands).or_else(|| self.file_list());
            }
            Some(Kind::Pick) => {
                if let Some(pick) = &self.pick {
                    self.ui.popup = Some(popup::pick_popup(pick, &self.ui.text()));
                }
            }
        }
    }

    /// The `@` list for the mention under the cursor, if one is typed there.
    fn file_list(&mut self) -> Option<popup::Popup> {
        let (row, col) = {
            let c = self.ui.input.cursor();
            (c.0, c.1)
        };
        let line = self.ui.input.lines().get(row)?;
        let m = popup::mention_at(line, col)?;
        let cwd = &self.cwd;
        let files = self
            .files
            .get_or_insert_with(|| mm_ui::files::project_files(cwd));
        popup::file_popup(files, &m.partial)
    }

    /// The `@path` under the cursor: complete it as far as it is certain,
    /// and list the choices when there are several.
    fn complete(&mut self) {
        let (row, col) = {
            let c = self.ui.input.cursor();
            (c.0, c.1)
        };
        let line = self.ui.input.lines().get(row).cloned().unwrap_or_default();
        let Some(m) = popup::mention_at(&line, col) else {
            return;
        };
        let found = popup::paths(&self.cwd, &m.partial);
        match found.len() {
            0 => self.ui.hint = Some(format!("no path starts with {}", m.partial)),
            1 => {
                self.replace_mention(m.len, &popup::mention_text(&found[0]));
                self.ui.popup = None;
            }
            _ => {
                let common = popup::common_prefix(&found);
                if common.chars().count() > m.partial.chars().count() {
                    self.replace_mention(m.len, &popup::mention_text(&common));
                }
                self.ui.popup = Some(popup::path_popup(&found));
            }
        }
    }

    fn replace_mention(&mut self, len: usize, with: &str) {
        for _ in 0..len {
            self.ui.input.delete_char();
        }
        self.ui.input.insert_str(with);
    }

    /// Take the chosen row: a command runs when `run` (Enter) and it can
    /// run without an argument, else it is put in the input for one.
    fn accept(&mut self, run: bool) {
        let Some(p) = self.ui.popup.take() else {
            return;
        };
        let Some(item) = p.chosen().cloned() else {
            return;
        };
        match p.kind {
            Kind::Commands => {
                if run && item.run {
                    // As if typed and sent: a turn still ending queues it.
                    self.ui.set_text(item.insert.trim_end());
                    self.submit();
                } else {
                    self.ui.set_text(&item.insert);
                }
            }
            Kind::Pick => {
                self.pick = None;
                self.ui.take_text();
                if run {
                    self.dispatch(item.insert);
                }
            }
            Kind::Paths => {
                let (row, col) = {
                    let c = self.ui.input.cursor();
                    (c.0, c.1)
                };
                let line = self.ui.input.lines().get(row).cloned().unwrap_or_default();
                if let Some(m) = popup::mention_at(&line, col) {
                    self.replace_mention(m.len, &item.insert);
                }
            }
        }
    }

    fn submit(&mut self) {
        let text = self.ui.text();
        if text.trim().is_empty() {
            return;
        }
        // A command that needs no agent (`/quit`, `/help`) works during a turn.
        let works_while_busy = matches!(
            self.commands.parse(&text, Front::Window),
            Parsed::Command { command, .. } if !command.needs_agent()
        );
        self.ui.take_text();
        self.ui.history.push(&text);
        if let Some(vi) = &mut self.ui.vi {
            vi.insert();
        }
        self.ui.popup = None;
        self.ui.selected = None;
        self.ui.scroll = Scroll::Bottom;
        // While a turn runs (or hands the agent back) the line waits its
        // turn, shown above the input.
        if self.busy() && !works_while_busy {
            self.ui.queued.push(text);
            return;
        }
        self.dispatch(text);
    }

    /// `text` as if typed and sent.
    pub fn type_line(&mut self, text: &str) {
        self.dispatch(text.to_owned());
    }

    /// Run a command line or ask a question.
    fn dispatch(&mut self, text: String) {
        let commands = self.commands.clone();
        match commands.parse(&text, Front::Window) {
            Parsed::NotCommand => self.ask(text),
            Parsed::Unknown(name) => self.show(commands.unknown(name, Front::Window)),
            Parsed::Command { command, argument } => self.command(command, argument),
        }
    }

    fn notice(&self, text: String) {
        self.shared.update(|t| t.push(EntryKind::Notice(text)));
    }

    fn error(&self, text: String) {
        self.shared.update(|t| t.push(EntryKind::Error(text)));
    }

    fn sink(&self) -> Arc<dyn Sink> {
        Arc::new(WindowSink::new(self.shared.clone()))
    }

    fn ask(&mut self, question: String) {
        let Slot::Idle(mut agent) = std::mem::replace(&mut self.slot, Slot::Empty) else {
            return;
        };
        let cancel = CancellationToken::new();
        self.shared
            .update(|t| t.start_turn(&question, Instant::now()));
        let sink = self.sink();
        let token = cancel.clone();
        let task = tokio::spawn(async move {
            agent.ask(&question, sink, token).await;
            (agent, None)
        });
        self.slot = Slot::Busy { task, cancel };
    }

    /// Run a command: at once when it needs no agent, on the idle agent when
    /// it is quick, in the background (busy, cancellable) when it takes time.
    fn command(&mut self, command: &Command, argument: &str) {
        if let Some(outcome) = command.run_free(argument, Front::Window, &self.commands) {
            return self.show(outcome);
        }
        if self.busy() {
            self.ui.queued.push(
                format!("/{} {argument}", command.name())
                    .trim_end()
                    .to_string(),
            );
            return;
        }
        let Slot::Idle(agent) = &mut self.slot else {
            return;
        };
        match agent.run_command_now(command, argument, Front::Window) {
            Some(outcome) => {
                self.ui.model = agent.model();
                self.show(outcome);
            }
            None => self.background(command.clone(), argument.to_string()),
        }
    }

    /// A command that takes time runs in a task, like a turn.
    fn background(&mut self, command: Command, argument: String) {
        let Slot::Idle(mut agent) = std::mem::replace(&mut self.slot, Slot::Empty) else {
            return;
        };
        let cancel = CancellationToken::new();
        let label = format!("/{}", command.name());
        self.shared.update(|t| t.start_busy(&label, Instant::now()));
        let sink = self.sink();
        let token = cancel.clone();
        let task = tokio::spawn(async move {
            let outcome = agent
                .run_command(&command, &argument, Front::Window, sink, token)
                .await;
            (agent, Some(outcome))
        });
        self.slot = Slot::Busy { task, cancel };
    }

    /// Show what a command did.
    fn show(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Done => {}
            Outcome::Say(text) => self.notice(text),
            Outcome::Error(text) => self.error(text),
            Outcome::List(rows) => self.notice(rows.join("\n")),
            Outcome::Help(text) => {
                let vi = if self.ui.vi.is_some() {
                    format!("\n{VI_KEYS_HELP}")
                } else {
                    String::new()
                };
                self.notice(format!("{text}\n\n{KEYS_HELP}{vi}"))
            }
            Outcome::Copy(text) => self.show(commands::copy(&text)),
            Outcome::Diff(diff) => {
                self.shared
                    .update(|t| t.push(EntryKind::Diff(diff.trim_end().to_string())));
            }
            Outcome::Ask(question) => {
                if self.busy() {
                    self.ui.queued.insert(0, question);
                } else {
                    self.ask(question);
                }
            }
            Outcome::Fresh(text) => {
                self.ui.selected = None;
                self.ui.scroll = Scroll::Bottom;
                self.shared.update(|t| {
                    t.clear();
                    t.push(EntryKind::Notice(text));
                });
                if let Slot::Idle(agent) = &self.slot {
                    show_tokens(agent, &self.shared);
                }
            }
            Outcome::Resumed(text) => {
                self.ui.selected = None;
                self.ui.scroll = Scroll::Bottom;
                self.shared.update(|t| t.clear());
                if let Slot::Idle(agent) = &self.slot {
                    replay(agent, &self.shared);
                    show_tokens(agent, &self.shared);
                }
                self.shared.update(|t| t.push(EntryKind::Notice(text)));
            }
            Outcome::Quit => self.quit = true,
            // The title above, the rows in the list; typing filters them.
            Outcome::Pick(pick) => {
                self.notice(pick.title.clone());
                self.ui.take_text();
                self.ui.popup = Some(popup::pick_popup(&pick, ""));
                self.pick = Some(pick);
            }
        }
    }
}

/// The first entry of the window: what mm-repl's banner says — the model,
/// the folder, the tools declared, the skills found, the language servers
/// (or why `lsp` is missing) and the instructions files read, so the window
/// hides none of it.
pub fn start_notice(agent: &Agent) -> String {
    let mut lines = agent.banner();
    lines.push(format!(
        "/help lists the commands · {}",
        mm_ui::words::INTERRUPT_KEYS
    ));
    lines.join("\n")
}

/// Keys, for `/help` (the full table is in keymap.rs).
pub const KEYS_HELP: &str = "Enter send (during a turn: queue) · Alt-Enter or \\ then Enter new line · Up/Down history · PgUp/PgDn scroll · Tab select a tool call or thinking, Enter/Ctrl-O unfold · Shift-Tab next mode (allow, ask, plan) · @ then Tab complete a path · Esc or Ctrl-C stop a turn · Ctrl-C clears the line · Ctrl-D or Ctrl-C twice on an empty input quit";

/// The keys of `editMode: vi`, after [`KEYS_HELP`] in `/help`.
pub const VI_KEYS_HELP: &str = "vi mode: Esc normal mode (during a turn: stop it) · h/l 0/^/$ w/b/e f/t/F/T ; , gg/G move · i/a/I/A o/O insert · x X D s C S r ~ · d/c/y with a motion, a line (dd) or a text object (iw, a\", i(…) · p/P put, u undo · v visual · counts (3w, 2dd) · k/j lines, then history";

/// Wait for the turn's task; only called while busy.
async fn wait(slot: &mut Slot) -> Result<Finished, tokio::task::JoinError> {
    match slot {
        Slot::Busy { task, .. } => task.await,
        _ => std::future::pending().await,
    }
}

/// `~/project` for a folder under the home directory.
fn home_short(path: &std::path::Path) -> String {
    let full = path.display().to_string();
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && full.starts_with(&home) && home != "/" => {
            format!("~{}", &full[home.len()..])
        }
        _ => full,
    }
}

/// The session's tokens and window as the agent has them now (a session
/// started, resumed or begun afresh), through the same event as a turn's.
fn show_tokens(agent: &Agent, shared: &Arc<Shared>) {
    let event = agent.tokens_event();
    shared.update(|t| t.apply(event, Instant::now()));
}

/// Show a saved conversation: the agent plays it to the window's sink as
/// its turns went live; the window settles as after a turn.
fn replay(agent: &Agent, shared: &Arc<Shared>) {
    agent.replay(Arc::new(WindowSink::new(shared.clone())));
    shared.update(|t| t.status = None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ToolState;
    use crossterm::event::{KeyCode, KeyModifiers};
    use mm_agent::config::{Sources, load};
    use mm_agent::{Message, ToolCall};

    /// An app over an agent with default settings in a temp world (no
    /// request is made: these tests only use local commands and keys).
    fn app(dir: &std::path::Path) -> App {
        App::new(agent(dir))
    }

    /// `messages` shown in the window as a resumed conversation is.
    fn load_history(app: &App, messages: &[Message]) {
        let Slot::Idle(agent) = &app.slot else {
            panic!("busy")
        };
        agent.replay_messages(messages, Arc::new(WindowSink::new(app.shared.clone())));
    }

    fn agent(dir: &std::path::Path) -> Agent {
        let mut env = std::collections::BTreeMap::new();
        env.insert("HOME".to_string(), dir.join("home").display().to_string());
        let sources = Sources {
            cwd: dir.to_path_buf(),
            env,
            ..Sources::default()
        };
        let mut config = load(&sources).unwrap().config;
        // Which language servers this machine has must not move entries.
        config.lsp.servers.clear();
        config.skills_dir = dir.join("skills");
        Agent::new(config, dir, PermissionSource::Terminal).unwrap()
    }

    #[test]
    fn the_window_starts_with_what_the_repl_banner_says() {
        let dir = tempfile::tempdir().unwrap();
        let skills = dir.path().join("skills");
        std::fs::create_dir(&skills).unwrap();
        std::fs::write(skills.join("deploy.md"), "# Deploy").unwrap();
        std::fs::create_dir(skills.join("review")).unwrap();
        std::fs::write(skills.join("review/SKILL.md"), "# Review").unwrap();
        let app = app(dir.path());
        let first = app.shared.lock().entries()[0].kind.clone();
        let EntryKind::Notice(text) = first else {
            panic!("{first:?}")
        };
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("model   "), "{text}");
        assert_eq!(lines[1], format!("cwd     {}", dir.path().display()));
        assert_eq!(
            lines[2],
            "tools   bash, read_file, write_file, edit_file, grep, glob, job_output, job_kill, \
             read_skill, web_fetch, todo, task"
        );
        assert_eq!(lines[3], format!("skills  2 in {}", skills.display()));
        assert_eq!(
            lines[4],
            "lsp     no language server found on the PATH: the lsp tool is not declared"
        );
        assert_eq!(lines[5], "instructions  none (AGENTS.md not found)");
    }

    fn key(app: &mut App, code: KeyCode) {
        app.on_event(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }

    fn typed(app: &mut App, text: &str) {
        for c in text.chars() {
            key(app, KeyCode::Char(c));
        }
    }

    fn last(app: &App) -> EntryKind {
        app.shared.lock().entries().last().unwrap().kind.clone()
    }

    #[test]
    fn the_picker_runs_a_command_and_history_recalls_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        typed(&mut app, "/");
        assert_eq!(
            app.ui.popup.as_ref().unwrap().items.len(),
            commands::for_front(Front::Window).count()
        );
        typed(&mut app, "he");
        assert_eq!(app.ui.popup.as_ref().unwrap().items.len(), 1);
        key(&mut app, KeyCode::Enter);
        let EntryKind::Notice(help) = last(&app) else {
            panic!("{:?}", last(&app))
        };
        assert!(help.starts_with(&commands::help(Front::Window)), "{help}");
        assert!(app.ui.popup.is_none());
        assert_eq!(app.ui.text(), "");
        key(&mut app, KeyCode::Up);
        assert_eq!(app.ui.text(), "/help");
    }

    #[test]
    fn a_commands_list_opens_filters_as_typed_and_runs_the_chosen_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        let row = |label: &str, command: &str| commands::PickRow {
            label: label.into(),
            command: command.into(),
        };
        let pick = commands::Pick {
            title: "Which mode?".into(),
            rows: vec![
                row("ask first", "/mode ask"),
                row("plan only", "/mode plan"),
            ],
        };
        app.show(Outcome::Pick(pick.clone()));
        assert_eq!(last(&app), EntryKind::Notice("Which mode?".into()));
        assert_eq!(app.ui.popup.as_ref().unwrap().items.len(), 2);
        typed(&mut app, "pl");
        let items = &app.ui.popup.as_ref().unwrap().items;
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].label, "plan only");
        key(&mut app, KeyCode::Enter);
        assert!(app.ui.popup.is_none());
        assert_eq!(app.ui.text(), "");
        let mode = |app: &App| match &app.slot {
            Slot::Idle(agent) => agent.mode(),
            _ => panic!("busy"),
        };
        assert_eq!(mode(&app), mm_ui::AgentMode::Plan);
        // Esc leaves a list without running anything, and empties the filter.
        app.show(Outcome::Pick(pick));
        typed(&mut app, "as");
        key(&mut app, KeyCode::Esc);
        assert!(app.ui.popup.is_none());
        assert_eq!(app.ui.text(), "");
        assert_eq!(mode(&app), mm_ui::AgentMode::Plan);
    }

    #[test]
    fn tab_in_the_picker_puts_a_command_in_the_input_for_its_argument() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        typed(&mut app, "/mod");
        key(&mut app, KeyCode::Tab);
        assert_eq!(app.ui.text(), "/model ");
        assert!(app.ui.popup.is_none());
        // Enter on a command whose argument may be left out runs it: the
        // input is emptied, nothing is left for the next line to join.
        app.ui.set_text("");
        typed(&mut app, "/new");
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.ui.text(), "");
        assert_eq!(last(&app), EntryKind::Notice("new session".into()));
    }

    #[test]
    fn an_unknown_command_is_an_error_and_new_clears_the_screen() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        typed(&mut app, "/frobnicate now");
        key(&mut app, KeyCode::Enter);
        assert_eq!(
            last(&app),
            EntryKind::Error("unknown command /frobnicate; /help lists the commands".into())
        );
        typed(&mut app, "/new");
        app.ui.popup = None;
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.shared.lock().len(), 1);
        assert_eq!(last(&app), EntryKind::Notice("new session".into()));
    }

    #[test]
    fn ctrl_c_clears_a_draft_and_twice_on_an_empty_input_quits() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        let ctrl_c = TermEvent::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        app.on_event(ctrl_c.clone());
        assert!(!app.quit);
        assert_eq!(app.ui.hint.as_deref(), Some("Press Ctrl-C again to quit"));
        // Another key disarms it; Ctrl-C on the draft clears it.
        typed(&mut app, "x");
        assert!(app.ui.hint.is_none());
        app.on_event(ctrl_c.clone());
        assert!(!app.quit);
        assert_eq!(app.ui.text(), "");
        assert!(app.ui.hint.is_none(), "clearing a draft does not arm");
        app.on_event(ctrl_c.clone());
        assert!(!app.quit);
        app.on_event(ctrl_c);
        assert!(app.quit);
    }

    fn ctrl(app: &mut App, c: char) {
        app.on_event(TermEvent::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::CONTROL,
        )));
    }

    #[test]
    fn readline_keys_edit_the_input_and_ctrl_r_searches_the_shared_history() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data/mm/repl_history");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        // What a REPL left, in its file's format.
        std::fs::write(&file, "#V2\nfirst question\nlist the files\n").unwrap();
        let mut app = app(dir.path());
        app.use_history_file(&file);
        typed(&mut app, "hello big world");
        ctrl(&mut app, 'w');
        assert_eq!(app.ui.text(), "hello big ");
        ctrl(&mut app, 'a');
        ctrl(&mut app, 'k');
        assert_eq!(app.ui.text(), "");
        ctrl(&mut app, 'y');
        assert_eq!(app.ui.text(), "hello big ", "Ctrl-Y yanks it back");
        ctrl(&mut app, 'u');
        assert_eq!(app.ui.text(), "", "Ctrl-U kills the line");
        // Ctrl-R, a few letters: the newest entry that holds them.
        typed(&mut app, "draft");
        ctrl(&mut app, 'r');
        typed(&mut app, "s");
        assert_eq!(app.ui.text(), "list the files");
        ctrl(&mut app, 'r');
        assert_eq!(app.ui.text(), "first question", "older match");
        assert!(
            app.ui
                .hint
                .as_deref()
                .unwrap()
                .starts_with("history search: s")
        );
        key(&mut app, KeyCode::Esc);
        assert_eq!(app.ui.text(), "draft", "Esc goes back to the draft");
        ctrl(&mut app, 'r');
        typed(&mut app, "first");
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.ui.text(), "first question");
        assert!(app.ui.search.is_none());
        // What is sent goes to the shared file.
        app.ui.set_text("/help");
        key(&mut app, KeyCode::Enter);
        let saved = std::fs::read_to_string(&file).unwrap();
        assert!(saved.ends_with("list the files\n/help\n"), "{saved:?}");
    }

    #[test]
    fn vi_mode_esc_enters_normal_mode_and_its_keys_edit_and_recall() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history");
        std::fs::write(&file, "#V2\nolder question\n").unwrap();
        let mut a = agent(dir.path());
        let mut config = a.config().clone();
        config.edit_mode = mm_agent::config::EditMode::Vi;
        a = Agent::new(config, dir.path(), PermissionSource::Terminal).unwrap();
        let mut app = App::new(a);
        app.use_history_file(&file);
        typed(&mut app, "fix the bug now");
        key(&mut app, KeyCode::Esc);
        assert!(app.ui.vi.unwrap().normal, "Esc: normal mode");
        assert!(!app.quit);
        // Letters are commands now, not text.
        typed(&mut app, "0wx");
        assert_eq!(app.ui.text(), "fix he bug now");
        typed(&mut app, "D");
        assert_eq!(app.ui.text(), "fix ");
        typed(&mut app, "Ado it");
        assert!(!app.ui.vi.unwrap().normal, "A: insert mode at the end");
        assert_eq!(app.ui.text(), "fix do it");
        key(&mut app, KeyCode::Esc);
        typed(&mut app, "dd");
        assert_eq!(app.ui.text(), "");
        typed(&mut app, "k");
        assert_eq!(app.ui.text(), "older question");
        typed(&mut app, "j");
        assert_eq!(app.ui.text(), "");
        typed(&mut app, "i/help");
        key(&mut app, KeyCode::Enter);
        assert!(!app.ui.vi.unwrap().normal);
        let EntryKind::Notice(help) = last(&app) else {
            panic!("{:?}", last(&app))
        };
        assert!(help.contains(VI_KEYS_HELP), "{help}");
        // The status bar shows the mode.
        key(&mut app, KeyCode::Esc);
        let backend = ratatui::backend::TestBackend::new(100, 20);
        let mut terminal = Terminal::new(backend).unwrap();
        app.draw(&mut terminal).unwrap();
        let screen = format!("{:?}", terminal.backend().buffer());
        assert!(screen.contains("-- NORMAL --"), "{screen}");
        // A text object, then visual mode, through the window's keys.
        typed(&mut app, "ifix the bug");
        key(&mut app, KeyCode::Esc);
        typed(&mut app, "ciwtypo");
        assert_eq!(app.ui.text(), "fix the typo");
        key(&mut app, KeyCode::Esc);
        typed(&mut app, "0ve");
        app.draw(&mut terminal).unwrap();
        let screen = format!("{:?}", terminal.backend().buffer());
        assert!(screen.contains("-- VISUAL --"), "{screen}");
        key(&mut app, KeyCode::Esc);
        assert!(!app.quit);
        assert!(app.ui.vi.unwrap().normal && !app.ui.vi.unwrap().visual);
        typed(&mut app, "0ved");
        assert_eq!(app.ui.text(), " the typo");
    }

    #[test]
    fn typing_at_opens_the_file_list_and_it_filters_fuzzily() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/mod.rs"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join("build/out.rs"), "").unwrap();
        let mut app = app(dir.path());
        let labels = |app: &App| -> Vec<String> {
            app.ui
                .popup
                .as_ref()
                .map(|p| p.items.iter().map(|i| i.label.clone()).collect())
                .unwrap_or_default()
        };
        typed(&mut app, "read @");
        assert_eq!(labels(&app), ["src/main.rs", "src/mod.rs"]);
        typed(&mut app, "smd");
        assert_eq!(labels(&app), ["src/mod.rs"]);
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.ui.text(), "read @src/mod.rs ");
        assert!(app.ui.popup.is_none());
        typed(&mut app, "and");
        assert!(
            app.ui.popup.is_none(),
            "the list stays closed after the mention"
        );
        // Esc closes it; nothing matching closes it too.
        typed(&mut app, " @ma");
        assert_eq!(labels(&app), ["src/main.rs"]);
        key(&mut app, KeyCode::Esc);
        assert!(app.ui.popup.is_none());
        typed(&mut app, "qqq");
        assert!(app.ui.popup.is_none());
    }

    #[test]
    fn tab_completes_a_path_and_lists_choices() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/mod.rs"), "").unwrap();
        let mut app = app(dir.path());
        // With the `@` list closed (Esc), Tab completes by folder.
        app.ui.set_text("read @sr");
        key(&mut app, KeyCode::Tab);
        assert_eq!(app.ui.text(), "read @src/");
        key(&mut app, KeyCode::Tab);
        assert_eq!(app.ui.text(), "read @src/m");
        let labels: Vec<String> = app
            .ui
            .popup
            .as_ref()
            .unwrap()
            .items
            .iter()
            .map(|i| i.label.clone())
            .collect();
        assert_eq!(labels, ["src/main.rs", "src/mod.rs"]);
        key(&mut app, KeyCode::Down);
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.ui.text(), "read @src/mod.rs");
        assert!(app.ui.popup.is_none());
    }

    #[test]
    fn a_resumed_call_shows_how_it_ended() {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path());
        let call = |id: &str| Message::Assistant {
            content: String::new(),
            reasoning: Vec::new(),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls"}"#.into(),
            }],
        };
        let messages = vec![
            Message::user("q"),
            call("ok"),
            Message::tool("ok", "bash", "out\n"),
            call("no"),
            Message::tool_result("no", "bash", "[command rejected by the user]", true),
        ];
        load_history(&app, &messages);
        let states: Vec<ToolState> = app
            .shared
            .lock()
            .entries()
            .iter()
            .filter_map(|e| match &e.kind {
                EntryKind::Tool(tool) => Some(tool.state),
                _ => None,
            })
            .collect();
        assert_eq!(states, [ToolState::Done, ToolState::Failed]);
    }

    #[test]
    fn tab_and_enter_unfold_the_last_tool_call() {
        let dir = tempfile::tempdir().unwrap();
        let mut app = app(dir.path());
        let messages = vec![
            Message::user("q"),
            Message::Assistant {
                content: String::new(),
                reasoning: Vec::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            },
            Message::tool("c1", "bash", "out\n"),
        ];
        load_history(&app, &messages);
        let tool_index = app.shared.lock().len() - 1;
        key(&mut app, KeyCode::Tab);
        assert_eq!(app.ui.selected, Some(tool_index));
        key(&mut app, KeyCode::Enter);
        let EntryKind::Tool(tool) = last(&app) else {
            panic!()
        };
        assert!(tool.expanded);
        key(&mut app, KeyCode::Enter);
        let EntryKind::Tool(tool) = last(&app) else {
            panic!()
        };
        assert!(!tool.expanded);
        // Escape drops the selection when nothing runs.
        key(&mut app, KeyCode::Esc);
        assert_eq!(app.ui.selected, None);
    }

    #[test]
    fn a_resumed_history_becomes_entries() {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path());
        app.shared.update(|t| t.clear());
        let messages = vec![
            Message::user("list files"),
            Message::Assistant {
                content: "Let me look.".into(),
                reasoning: Vec::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls -la"}"#.into(),
                }],
            },
            Message::tool("c1", "bash", "a\nb\n"),
            Message::assistant("Two files."),
        ];
        load_history(&app, &messages);
        let t = app.shared.lock();
        let kinds: Vec<&EntryKind> = t.entries().iter().map(|e| &e.kind).collect();
        assert_eq!(kinds.len(), 4);
        assert_eq!(kinds[0], &EntryKind::Question("list files".into()));
        assert_eq!(kinds[1], &EntryKind::Answer("Let me look.".into()));
        let EntryKind::Tool(tool) = kinds[2] else {
            panic!("{kinds:?}")
        };
        assert_eq!(
            (tool.title.as_str(), tool.output.as_str(), tool.state),
            ("ls -la", "a\nb\n", ToolState::Done)
        );
        assert_eq!(kinds[3], &EntryKind::Answer("Two files.".into()));
    }

    /// A resumed call is titled by its tool, from its arguments, as it was
    /// live; arguments that are not JSON give the tool's name, as live.
    #[test]
    fn titles_come_from_the_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let title_of = |name: &str, arguments: &str| {
            // The lsp tool is declared when a server is on the PATH (it
            // is never started here).
            let mut agent = agent(dir.path());
            let mut config = agent.config().clone();
            config.lsp.servers = vec![mm_agent::config::LspServer {
                name: "fake".into(),
                command: "bash".into(),
                args: Vec::new(),
                extensions: vec![".go".into()],
            }];
            agent = Agent::new(config, dir.path(), PermissionSource::Terminal).unwrap();
            let app = App::new(agent);
            let messages = vec![
                Message::user("q"),
                Message::Assistant {
                    content: String::new(),
                    reasoning: Vec::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: name.into(),
                        arguments: arguments.into(),
                    }],
                },
            ];
            load_history(&app, &messages);
            let EntryKind::Tool(tool) = last(&app) else {
                panic!()
            };
            tool.title
        };
        assert_eq!(title_of("bash", r#"{"command":"echo hi"}"#), "echo hi");
        assert_eq!(
            title_of("edit_file", r#"{"path":"a.rs","edits":[]}"#),
            "a.rs"
        );
        assert_eq!(
            title_of("lsp", r#"{"action":"hover","path":"m.go","symbol":"x"}"#),
            "hover m.go x"
        );
        assert_eq!(title_of("bash", "not json"), "bash");
    }
}
