//! Taking the terminal over and giving it back: raw mode, the alternate
//! screen, mouse and bracketed paste on entry; all of it undone on exit and
//! from the panic hook, so a crash never leaves a broken shell behind.

use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Set while the window owns the terminal.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Enter the window; the mouse is captured only when `mouse` (the
/// `mouse` setting: off, the terminal's own text selection works).
/// Focus changes are reported, for `notify`.
pub fn enter(mouse: bool) -> io::Result<Terminal<CrosstermBackend<Stdout>>> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    let mut result = execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        crossterm::event::EnableFocusChange,
        cursor::Hide
    );
    if mouse && result.is_ok() {
        result = execute!(out, EnableMouseCapture);
    }
    if let Err(e) = result {
        leave();
        return Err(e);
    }
    match Terminal::new(CrosstermBackend::new(io::stdout())) {
        Ok(t) => Ok(t),
        Err(e) => {
            leave();
            Err(e)
        }
    }
}

/// Give the terminal back as it was. Safe to call twice, and from a panic.
pub fn leave() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        crossterm::event::DisableFocusChange,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Restore the terminal before a panic of the event loop's thread is
/// printed (and run `on_panic`, which kills tool processes). A panic in a
/// turn's task is caught by its join handle and shown in the window, so it
/// must not tear the screen down: those are not printed over the window.
pub fn install_panic_hook(on_panic: fn()) {
    let previous = std::panic::take_hook();
    let main = std::thread::current().id();
    std::panic::set_hook(Box::new(move |info| {
        let fatal = std::thread::current().id() == main || !ACTIVE.load(Ordering::SeqCst);
        if fatal {
            leave();
            on_panic();
            previous(info);
        }
    }));
}
