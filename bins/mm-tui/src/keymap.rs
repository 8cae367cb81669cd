//! The key map: which key does what, in each mode of the window. Pure: a
//! key and a little context in, an [`Action`] out; the event loop carries
//! the actions out.
//!
//! | key | action |
//! |---|---|
//! | Enter | send the question (or run the command); on an empty input with a selected entry: fold/unfold it |
//! | Alt-Enter, Shift-Enter, Ctrl-J; Enter after a `\` | new line in the input (the `\` goes) |
//! | Up / Down on the first / last input row | previous / next question from the history |
//! | PageUp / PageDown, mouse wheel | scroll the transcript |
//! | Ctrl-Home / Ctrl-End | top / bottom of the transcript |
//! | Tab | complete the `@path` under the cursor; otherwise select the previous foldable entry (tool call, thinking) |
//! | Shift-Tab | the next mode, allow → ask → plan (between turns); with an entry selected, select the next foldable entry |
//! | Ctrl-O | fold/unfold the selected entry (the last one when none is selected) |
//! | Escape | close the popup; else stop the running turn (queued messages go back to the input); else drop the selection |
//! | Ctrl-C | stop the running turn; else clear the draft; on an empty input twice: quit |
//! | `/` on an empty input | open the command picker (Up/Down choose, Enter/Tab take, Escape closes) |
//! | y / a / Enter, s, n / r | answer a permission prompt: allow once, allow for the session, reject (then a reason for the model, and Enter) |
//! | PageUp / PageDown, Up / Down at a permission prompt | scroll the change inside the prompt |
//! | Ctrl-D on an empty input | quit |
//! | Ctrl-L | redraw the whole screen |
//! | Ctrl-A / Ctrl-E, Ctrl-B / Ctrl-F, Alt-B / Alt-F | start / end of the line, a character, a word back / on |
//! | Ctrl-U / Ctrl-K / Ctrl-W, Ctrl-Y | kill to the start / the end of the line / the word before, yank it back |
//! | Ctrl-R | search the history (again: older; Enter takes it, Esc goes back) |
//! | Ctrl-_ | undo an edit |
//!
//! With `editMode: vi`, Esc (no turn running) enters vi's normal mode: see
//! [`crate::vi`].

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use mm_ui::Decision;

/// Rows one wheel step scrolls.
pub const WHEEL_ROWS: usize = 3;

/// Rows PageUp/PageDown scroll a change inside the permission prompt.
pub const PROMPT_PAGE: i32 = 10;

/// What the window is doing, as far as keys care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// The command picker or the path completions are open.
    Popup,
    /// A permission prompt waits for a/s/r.
    Permission,
    /// After `r`: the reason for the model is typed; Enter rejects.
    Reason,
    /// Ctrl-R: typed keys search the history.
    Search,
}

/// The state a key's meaning depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    pub mode: Mode,
    pub input_empty: bool,
    /// The cursor is on the first / last row of the input.
    pub first_row: bool,
    pub last_row: bool,
    /// The word under the cursor starts with `@`.
    pub at_mention: bool,
    pub has_selection: bool,
    /// The character before the cursor is `\`: Enter continues the input.
    pub after_backslash: bool,
}

/// Everything a key can ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Submit,
    Newline,
    /// Enter after a `\`: the backslash gives way to a line break.
    ContinueLine,
    /// Ctrl-D on an empty input.
    Quit,
    /// Give the key to the input box.
    Edit(KeyEvent),
    /// `/` typed into an empty input: the key goes in and the picker opens.
    OpenPicker(KeyEvent),
    Cancel,
    Interrupt,
    ScrollUp(usize),
    ScrollDown(usize),
    PageUp,
    PageDown,
    Top,
    Bottom,
    HistoryPrev,
    HistoryNext,
    SelectPrev,
    SelectNext,
    /// The next mode: allow → ask → plan (Shift-Tab).
    CycleMode,
    Toggle,
    Complete,
    PopupUp,
    PopupDown,
    PopupAccept,
    /// Put the chosen row in the input without running it (Tab), to type
    /// a command's argument.
    PopupComplete,
    Decide(Decision),
    /// `r` at a permission prompt: type the reason first.
    StartReason,
    /// A key for the reason being typed.
    ReasonKey(KeyEvent),
    /// Scroll the change shown in the permission prompt by rows (up when
    /// negative).
    PromptScroll(i32),
    /// Ctrl-R: search the history (again: an older match).
    SearchHistory,
    /// A key while searching: it edits the query.
    SearchKey(KeyEvent),
    /// Enter while searching: take the match into the input.
    SearchAccept,
    Redraw,
    Nothing,
}

/// The action of `key` in `ctx`.
pub fn key(key: KeyEvent, ctx: &Context) -> Action {
    if key.kind == KeyEventKind::Release {
        return Action::Nothing;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    // Keys that mean the same in every mode.
    let asking = matches!(ctx.mode, Mode::Permission | Mode::Reason);
    match key.code {
        KeyCode::Char('c') if ctrl => return Action::Interrupt,
        KeyCode::Char('l') if ctrl => return Action::Redraw,
        KeyCode::PageUp if asking => return Action::PromptScroll(-PROMPT_PAGE),
        KeyCode::PageDown if asking => return Action::PromptScroll(PROMPT_PAGE),
        KeyCode::PageUp => return Action::PageUp,
        KeyCode::PageDown => return Action::PageDown,
        KeyCode::Home if ctrl => return Action::Top,
        KeyCode::End if ctrl => return Action::Bottom,
        _ => {}
    }
    match ctx.mode {
        Mode::Permission => match key.code {
            KeyCode::Enter if !alt && !shift => Action::Decide(Decision::AllowOnce),
            KeyCode::Char(c) if !ctrl && !alt => match mm_ui::words::permission_key(c) {
                Some(Decision::Reject) => Action::StartReason,
                Some(d) => Action::Decide(d),
                None => Action::Nothing,
            },
            KeyCode::Up => Action::PromptScroll(-1),
            KeyCode::Down => Action::PromptScroll(1),
            KeyCode::Esc => Action::Cancel,
            _ => Action::Nothing,
        },
        Mode::Reason => match key.code {
            KeyCode::Enter => Action::Decide(Decision::Reject),
            KeyCode::Esc => Action::Cancel,
            _ => Action::ReasonKey(key),
        },
        Mode::Search => match key.code {
            KeyCode::Char('r') if ctrl => Action::SearchHistory,
            KeyCode::Char('g') if ctrl => Action::Cancel,
            KeyCode::Esc => Action::Cancel,
            KeyCode::Enter => Action::SearchAccept,
            KeyCode::Char(_) if !ctrl && !alt => Action::SearchKey(key),
            KeyCode::Backspace => Action::SearchKey(key),
            _ => Action::SearchAccept,
        },
        Mode::Popup => match key.code {
            KeyCode::Up => Action::PopupUp,
            KeyCode::Down => Action::PopupDown,
            KeyCode::Enter if !alt && !shift => Action::PopupAccept,
            KeyCode::Tab => Action::PopupComplete,
            KeyCode::Esc => Action::Cancel,
            _ => normal(key, ctx, ctrl, alt, shift),
        },
        Mode::Normal => normal(key, ctx, ctrl, alt, shift),
    }
}

fn normal(key: KeyEvent, ctx: &Context, ctrl: bool, alt: bool, shift: bool) -> Action {
    match key.code {
        KeyCode::Enter if alt || shift => Action::Newline,
        KeyCode::Char('j') if ctrl => Action::Newline,
        KeyCode::Char('d') if ctrl && ctx.input_empty => Action::Quit,
        KeyCode::Enter if ctx.input_empty && ctx.has_selection => Action::Toggle,
        KeyCode::Enter if ctx.after_backslash => Action::ContinueLine,
        KeyCode::Enter => Action::Submit,
        KeyCode::Esc => Action::Cancel,
        KeyCode::Up if ctx.first_row && !ctrl && !alt => Action::HistoryPrev,
        KeyCode::Down if ctx.last_row && !ctrl && !alt => Action::HistoryNext,
        KeyCode::Tab if ctx.at_mention => Action::Complete,
        KeyCode::Tab => Action::SelectPrev,
        KeyCode::BackTab if ctx.has_selection => Action::SelectNext,
        KeyCode::BackTab => Action::CycleMode,
        KeyCode::Char('o') if ctrl => Action::Toggle,
        KeyCode::Char('r') if ctrl => Action::SearchHistory,
        KeyCode::Char('/') if ctx.input_empty && !ctrl && !alt => Action::OpenPicker(key),
        _ => Action::Edit(key),
    }
}

/// The action of a mouse event: only the wheel is used.
pub fn mouse(event: MouseEvent) -> Action {
    match event.kind {
        MouseEventKind::ScrollUp => Action::ScrollUp(WHEEL_ROWS),
        MouseEventKind::ScrollDown => Action::ScrollDown(WHEEL_ROWS),
        _ => Action::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(mode: Mode) -> Context {
        Context {
            mode,
            input_empty: true,
            first_row: true,
            last_row: true,
            at_mention: false,
            has_selection: false,
            after_backslash: false,
        }
    }

    #[test]
    fn ctrl_d_quits_on_an_empty_input_and_enter_after_a_backslash_continues() {
        assert_eq!(key(ctrl('d'), &ctx(Mode::Normal)), Action::Quit);
        let typed = Context {
            input_empty: false,
            ..ctx(Mode::Normal)
        };
        assert!(matches!(key(ctrl('d'), &typed), Action::Edit(_)));
        assert_eq!(key(k(KeyCode::Enter), &typed), Action::Submit);
        let continued = Context {
            after_backslash: true,
            ..typed
        };
        assert_eq!(key(k(KeyCode::Enter), &continued), Action::ContinueLine);
    }

    fn k(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn the_prompt_takes_y_n_enter_a_s_r_and_pages_its_change() {
        let c = ctx(Mode::Permission);
        assert_eq!(
            key(k(KeyCode::Char('a')), &c),
            Action::Decide(Decision::AllowOnce)
        );
        assert_eq!(
            key(k(KeyCode::Char('s')), &c),
            Action::Decide(Decision::AllowAlways)
        );
        // `r` asks for a reason first; Enter then rejects.
        assert_eq!(key(k(KeyCode::Char('r')), &c), Action::StartReason);
        let r = ctx(Mode::Reason);
        assert!(matches!(
            key(k(KeyCode::Char('a')), &r),
            Action::ReasonKey(_)
        ));
        assert_eq!(key(k(KeyCode::Enter), &r), Action::Decide(Decision::Reject));
        assert_eq!(key(k(KeyCode::Esc), &r), Action::Cancel);
        assert_eq!(key(k(KeyCode::Char('x')), &c), Action::Nothing);
        // y / n / Enter as well.
        assert_eq!(
            key(k(KeyCode::Enter), &c),
            Action::Decide(Decision::AllowOnce)
        );
        assert_eq!(
            key(k(KeyCode::Char('y')), &c),
            Action::Decide(Decision::AllowOnce)
        );
        assert_eq!(key(k(KeyCode::Char('n')), &c), Action::StartReason);
        assert_eq!(key(k(KeyCode::Esc), &c), Action::Cancel);
        assert_eq!(key(ctrl('c'), &c), Action::Interrupt);
        // Paging scrolls the change inside the prompt.
        assert_eq!(
            key(k(KeyCode::PageDown), &c),
            Action::PromptScroll(PROMPT_PAGE)
        );
        assert_eq!(key(k(KeyCode::Up), &c), Action::PromptScroll(-1));
        assert_eq!(key(k(KeyCode::PageUp), &ctx(Mode::Normal)), Action::PageUp);
    }

    #[test]
    fn enter_sends_alt_enter_breaks_the_line() {
        let mut c = ctx(Mode::Normal);
        c.input_empty = false;
        assert_eq!(key(k(KeyCode::Enter), &c), Action::Submit);
        assert_eq!(
            key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT), &c),
            Action::Newline
        );
        assert_eq!(key(ctrl('j'), &c), Action::Newline);
        // Empty input and a selection: Enter folds.
        c.input_empty = true;
        c.has_selection = true;
        assert_eq!(key(k(KeyCode::Enter), &c), Action::Toggle);
    }

    #[test]
    fn history_only_from_the_edge_rows() {
        let mut c = ctx(Mode::Normal);
        assert_eq!(key(k(KeyCode::Up), &c), Action::HistoryPrev);
        c.first_row = false;
        assert!(matches!(key(k(KeyCode::Up), &c), Action::Edit(_)));
        assert_eq!(key(k(KeyCode::Down), &c), Action::HistoryNext);
    }

    #[test]
    fn slash_opens_the_picker_only_on_an_empty_input() {
        let mut c = ctx(Mode::Normal);
        assert!(matches!(
            key(k(KeyCode::Char('/')), &c),
            Action::OpenPicker(_)
        ));
        c.input_empty = false;
        assert!(matches!(key(k(KeyCode::Char('/')), &c), Action::Edit(_)));
        let p = ctx(Mode::Popup);
        assert_eq!(key(k(KeyCode::Down), &p), Action::PopupDown);
        assert_eq!(key(k(KeyCode::Enter), &p), Action::PopupAccept);
        assert_eq!(key(k(KeyCode::Tab), &p), Action::PopupComplete);
        assert!(matches!(key(k(KeyCode::Char('c')), &p), Action::Edit(_)));
    }

    #[test]
    fn tab_completes_a_mention_or_selects() {
        let mut c = ctx(Mode::Normal);
        assert_eq!(key(k(KeyCode::Tab), &c), Action::SelectPrev);
        c.at_mention = true;
        assert_eq!(key(k(KeyCode::Tab), &c), Action::Complete);
        assert_eq!(key(k(KeyCode::BackTab), &c), Action::CycleMode);
        c.has_selection = true;
        assert_eq!(key(k(KeyCode::BackTab), &c), Action::SelectNext);
    }

    #[test]
    fn the_wheel_scrolls() {
        let ev = |kind| MouseEvent {
            kind,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        };
        assert_eq!(
            mouse(ev(MouseEventKind::ScrollUp)),
            Action::ScrollUp(WHEEL_ROWS)
        );
        assert_eq!(
            mouse(ev(MouseEventKind::ScrollDown)),
            Action::ScrollDown(WHEEL_ROWS)
        );
        assert_eq!(mouse(ev(MouseEventKind::Moved)), Action::Nothing);
    }
}
