//! Keys during a turn. The terminal goes to raw mode and a blocking thread
//! reads keys: Escape or Ctrl-C cancel the turn (its token: the stream is
//! dropped, a running command's process group killed), `a`/`s`/`r` answer
//! a pending permission prompt, anything else is kept as type-ahead for the
//! next prompt. The terminal is restored when the watch ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use mm_ui::Decision;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What the key thread and the sink share.
#[derive(Default)]
pub struct Controls {
    /// True while the terminal is in raw mode (the screen then writes `\r\n`).
    pub raw: Arc<AtomicBool>,
    /// True while a key watch runs, i.e. someone can answer a prompt.
    active: AtomicBool,
    pending: Mutex<Option<oneshot::Sender<Decision>>>,
    typed: Mutex<String>,
}

/// What a key means during a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    Cancel,
    Answer(Decision),
    Type(char),
    Backspace,
    Ignore,
}

/// The meaning of `key`; `asking` is true while a permission prompt waits.
pub fn classify(key: &KeyEvent, asking: bool) -> KeyAction {
    if key.kind == KeyEventKind::Release {
        return KeyAction::Ignore;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Esc => KeyAction::Cancel,
        KeyCode::Char('c') | KeyCode::Char('C') if ctrl => KeyAction::Cancel,
        KeyCode::Char(c) if asking && !ctrl => match c.to_ascii_lowercase() {
            'a' => KeyAction::Answer(Decision::AllowOnce),
            's' => KeyAction::Answer(Decision::AllowAlways),
            'r' => KeyAction::Answer(Decision::Reject),
            _ => KeyAction::Ignore,
        },
        KeyCode::Char(c) if !ctrl => KeyAction::Type(c),
        KeyCode::Backspace => KeyAction::Backspace,
        _ => KeyAction::Ignore,
    }
}

impl Controls {
    /// Whether a prompt can be answered now (a key watch runs).
    pub fn can_ask(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// Wait for the next a/s/r (or a cancel). A second prompt replaces the
    /// first, whose waiter then sees `Cancelled`.
    pub fn ask(&self) -> oneshot::Receiver<Decision> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut slot) = self.pending.lock() {
            *slot = Some(tx);
        }
        rx
    }

    /// Whether a prompt waits for an answer.
    pub fn asking(&self) -> bool {
        self.pending.lock().map(|p| p.is_some()).unwrap_or(false)
    }

    /// Answer the waiting prompt, if any.
    pub fn answer(&self, decision: Decision) -> bool {
        let tx = self.pending.lock().ok().and_then(|mut p| p.take());
        match tx {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// Take the keys typed during the turn (for the next prompt).
    pub fn take_typed(&self) -> String {
        self.typed
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default()
    }

    /// Mark a watch as running (tests of the prompt without a terminal).
    #[cfg(test)]
    pub fn set_active_for_tests(&self, on: bool) {
        self.active.store(on, Ordering::SeqCst);
    }

    /// Apply one key.
    pub fn handle(&self, key: &KeyEvent, cancel: &CancellationToken) {
        match classify(key, self.asking()) {
            KeyAction::Cancel => {
                cancel.cancel();
                self.answer(Decision::Cancelled);
            }
            KeyAction::Answer(d) => {
                self.answer(d);
            }
            KeyAction::Type(c) => {
                if let Ok(mut t) = self.typed.lock() {
                    t.push(c);
                }
            }
            KeyAction::Backspace => {
                if let Ok(mut t) = self.typed.lock() {
                    t.pop();
                }
            }
            KeyAction::Ignore => {}
        }
    }
}

/// A running key watch; dropping it stops the thread and restores the
/// terminal.
pub struct KeyWatch {
    controls: Arc<Controls>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl KeyWatch {
    /// Put the terminal in raw mode and watch keys for `cancel`. `None` when
    /// stdin is not a terminal (then nobody can press a key).
    pub fn start(controls: &Arc<Controls>, cancel: CancellationToken) -> Option<KeyWatch> {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            return None;
        }
        if let Err(e) = crossterm::terminal::enable_raw_mode() {
            tracing::warn!("raw mode unavailable: {e}");
            return None;
        }
        controls.raw.store(true, Ordering::SeqCst);
        controls.active.store(true, Ordering::SeqCst);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (controls, stop) = (controls.clone(), stop.clone());
            std::thread::Builder::new()
                .name("mm-keys".into())
                .spawn(move || watch(&controls, &stop, &cancel))
                .ok()
        };
        Some(KeyWatch {
            controls: controls.clone(),
            stop,
            thread,
        })
    }
}

fn watch(controls: &Controls, stop: &AtomicBool, cancel: &CancellationToken) {
    while !stop.load(Ordering::SeqCst) {
        match event::poll(Duration::from_millis(30)) {
            Ok(true) => match event::read() {
                Ok(Event::Key(key)) => controls.handle(&key, cancel),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("reading keys: {e}");
                    return;
                }
            },
            Ok(false) => {}
            Err(e) => {
                tracing::warn!("polling keys: {e}");
                return;
            }
        }
    }
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.controls.active.store(false, Ordering::SeqCst);
        // A prompt nobody can answer any more must not wait forever.
        self.controls.answer(Decision::Cancelled);
        let _ = crossterm::terminal::disable_raw_mode();
        self.controls.raw.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn escape_and_ctrl_c_cancel() {
        assert_eq!(
            classify(&key(KeyCode::Esc, KeyModifiers::NONE), false),
            KeyAction::Cancel
        );
        assert_eq!(
            classify(&key(KeyCode::Char('c'), KeyModifiers::CONTROL), true),
            KeyAction::Cancel
        );
        assert_eq!(
            classify(&key(KeyCode::Char('c'), KeyModifiers::NONE), false),
            KeyAction::Type('c')
        );
    }

    #[test]
    fn a_s_r_answer_only_while_asking() {
        let k = |c| key(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(
            classify(&k('a'), true),
            KeyAction::Answer(Decision::AllowOnce)
        );
        assert_eq!(
            classify(&k('S'), true),
            KeyAction::Answer(Decision::AllowAlways)
        );
        assert_eq!(classify(&k('r'), true), KeyAction::Answer(Decision::Reject));
        assert_eq!(classify(&k('x'), true), KeyAction::Ignore);
        assert_eq!(classify(&k('a'), false), KeyAction::Type('a'));
    }

    #[test]
    fn a_prompt_gets_the_key_and_cancel_cancels_both() {
        let controls = Controls::default();
        let cancel = CancellationToken::new();
        let mut rx = controls.ask();
        assert!(controls.asking());
        controls.handle(&key(KeyCode::Char('s'), KeyModifiers::NONE), &cancel);
        assert_eq!(rx.try_recv().unwrap(), Decision::AllowAlways);
        assert!(!cancel.is_cancelled());

        let mut rx = controls.ask();
        controls.handle(&key(KeyCode::Esc, KeyModifiers::NONE), &cancel);
        assert_eq!(rx.try_recv().unwrap(), Decision::Cancelled);
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn type_ahead_is_kept_for_the_next_prompt() {
        let controls = Controls::default();
        let cancel = CancellationToken::new();
        for c in "lsx".chars() {
            controls.handle(&key(KeyCode::Char(c), KeyModifiers::NONE), &cancel);
        }
        controls.handle(&key(KeyCode::Backspace, KeyModifiers::NONE), &cancel);
        assert_eq!(controls.take_typed(), "ls");
        assert_eq!(controls.take_typed(), "");
    }
}
