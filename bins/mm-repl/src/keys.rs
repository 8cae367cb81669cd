//! Keys during a turn. The terminal goes to raw mode and a blocking thread
//! reads keys: Escape or Ctrl-C cancel the turn (its token: the stream is
//! dropped, a running command's process group killed; queued messages go
//! back to the input), `y`/`a`/Enter, `s`, `n`/`r` answer a pending
//! permission prompt (`n`/`r` then a reason for the model and Enter, where
//! the sink shows what is typed), Enter queues what was typed as the next
//! message, anything else is kept as type-ahead for the next prompt. The
//! terminal is restored when the watch ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use mm_ui::Decision;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What the sink shows of keys pressed during a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Echo {
    /// `r` was pressed: ask for the reason.
    Start,
    Char(char),
    Backspace,
    /// Enter queued this message for when the turn ends.
    Queued(String),
}

/// Shows a reason as it is typed (the key thread owns no screen).
pub type EchoFn = Arc<dyn Fn(Echo) + Send + Sync>;

/// What the key thread and the sink share.
#[derive(Default)]
pub struct Controls {
    /// True while the terminal is in raw mode (the screen then writes `\r\n`).
    pub raw: Arc<AtomicBool>,
    /// True while a key watch runs, i.e. someone can answer a prompt.
    active: AtomicBool,
    pending: Mutex<Option<oneshot::Sender<Decision>>>,
    typed: Mutex<String>,
    /// While a reason is typed after `r`: the text so far.
    reason: Mutex<Option<String>>,
    /// The reason given with the last rejection, until the sink takes it.
    given: Mutex<Option<String>>,
    /// Shows a reason as it is typed; without it `r` rejects at once.
    echo: Mutex<Option<EchoFn>>,
    /// A call needed permission and nobody could be asked (exit 4).
    unasked: AtomicBool,
    /// Messages sent with Enter during the turn, oldest first.
    queue: Mutex<Vec<String>>,
}

/// What the model reads of a call that needed permission in a run with
/// no terminal to ask.
pub const NO_TERMINAL: &str = "[not run: this call needs permission and there is no terminal to ask; \
     use --permissions or an allow rule]";

/// What a key means during a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    Cancel,
    Answer(Decision),
    Type(char),
    Backspace,
    /// Enter: what was typed waits for the end of the turn.
    Queue,
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
        KeyCode::Enter if asking => KeyAction::Answer(Decision::AllowOnce),
        KeyCode::Char(c) if asking && !ctrl => match mm_ui::words::permission_key(c) {
            Some(d) => KeyAction::Answer(d),
            None => KeyAction::Ignore,
        },
        KeyCode::Char(c) if !ctrl => KeyAction::Type(c),
        KeyCode::Enter => KeyAction::Queue,
        KeyCode::Backspace => KeyAction::Backspace,
        _ => KeyAction::Ignore,
    }
}

impl Controls {
    /// When nobody can answer a prompt: note that a call needed
    /// permission, and give what the model reads. `None` when someone can.
    pub fn cannot_ask(&self) -> Option<String> {
        if self.can_ask() {
            return None;
        }
        self.unasked.store(true, Ordering::SeqCst);
        Some(NO_TERMINAL.to_owned())
    }

    /// Whether a call needed permission with nobody to ask.
    pub fn was_unasked(&self) -> bool {
        self.unasked.load(Ordering::SeqCst)
    }

    /// Whether a prompt can be answered now (a key watch runs).
    pub fn can_ask(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// Wait for the next a/s/r (or a cancel). A second prompt replaces the
    /// first, whose waiter then sees `Cancelled`.
    pub fn ask(&self) -> oneshot::Receiver<Decision> {
        let (tx, rx) = oneshot::channel();
        *lock(&self.reason) = None;
        *lock(&self.given) = None;
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

    /// The oldest message queued during the turn, once.
    pub fn pop_queued(&self) -> Option<String> {
        let mut q = lock(&self.queue);
        (!q.is_empty()).then(|| q.remove(0))
    }

    /// Queue `text` as if typed and sent with Enter during a turn.
    pub fn queue(&self, text: &str) {
        lock(&self.queue).push(text.to_owned());
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

    /// Let `r` take a reason, shown by `echo` as it is typed.
    pub fn set_echo(&self, echo: EchoFn) {
        *lock(&self.echo) = Some(echo);
    }

    /// The reason given with the last rejection, once.
    pub fn take_reason(&self) -> Option<String> {
        lock(&self.given).take()
    }

    fn echo(&self, what: Echo) {
        let echo = lock(&self.echo).clone();
        if let Some(echo) = echo {
            echo(what);
        }
    }

    /// A key while a reason is typed: Enter rejects with it (none when
    /// empty), Escape and Ctrl-C cancel the turn.
    fn reason_key(&self, key: &KeyEvent, cancel: &CancellationToken) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.cancel(cancel),
            KeyCode::Char('c' | 'C') if ctrl => self.cancel(cancel),
            KeyCode::Enter => {
                let why = lock(&self.reason).take().unwrap_or_default();
                *lock(&self.given) = Some(why).filter(|w| !w.trim().is_empty());
                self.answer(Decision::Reject);
            }
            KeyCode::Backspace => {
                let popped = lock(&self.reason).as_mut().and_then(String::pop);
                if popped.is_some() {
                    self.echo(Echo::Backspace);
                }
            }
            KeyCode::Char(c) if !ctrl => {
                if let Some(why) = lock(&self.reason).as_mut() {
                    why.push(c);
                }
                self.echo(Echo::Char(c));
            }
            _ => {}
        }
    }

    fn cancel(&self, cancel: &CancellationToken) {
        *lock(&self.reason) = None;
        cancel.cancel();
        self.answer(Decision::Cancelled);
        // What was queued comes back as the next prompt's text, to send
        // again or edit.
        let queued = std::mem::take(&mut *lock(&self.queue));
        if !queued.is_empty() {
            let mut typed = lock(&self.typed);
            let mut back = queued.join(" ");
            if !typed.is_empty() {
                back.push(' ');
                back.push_str(&typed);
            }
            *typed = back;
        }
    }

    /// Apply one key.
    pub fn handle(&self, key: &KeyEvent, cancel: &CancellationToken) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        if self.asking() && lock(&self.reason).is_some() {
            self.reason_key(key, cancel);
            return;
        }
        match classify(key, self.asking()) {
            KeyAction::Cancel => self.cancel(cancel),
            KeyAction::Answer(Decision::Reject) if lock(&self.echo).is_some() => {
                *lock(&self.reason) = Some(String::new());
                self.echo(Echo::Start);
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
            KeyAction::Queue => {
                let text = std::mem::take(&mut *lock(&self.typed));
                let text = text.trim().to_owned();
                if !text.is_empty() {
                    self.queue(&text);
                    self.echo(Echo::Queued(text));
                }
            }
            KeyAction::Ignore => {}
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

/// SIGINT as a signal. While the line editor reads or a turn's key watch
/// runs, the terminal is raw and Ctrl-C is a key; a Ctrl-C pressed in the
/// instant between two reads, or a signal another process sends, comes as
/// SIGINT. It counts as Ctrl-C: it stops what runs, and between two reads
/// it arms the quit like Ctrl-C on an empty line.
pub struct Interrupts {
    /// A SIGINT came that nothing has acted on yet.
    pending: Arc<AtomicBool>,
    /// Wakes the task that stops what runs.
    arrived: Arc<tokio::sync::Notify>,
}

impl Interrupts {
    /// Catch SIGINT from now on; `None` when it cannot be (then it ends mm,
    /// as before).
    pub fn watch() -> Option<Interrupts> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut sigint = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot watch SIGINT: {e}");
                return None;
            }
        };
        let pending = Arc::new(AtomicBool::new(false));
        let arrived = Arc::new(tokio::sync::Notify::new());
        let (p, a) = (pending.clone(), arrived.clone());
        tokio::spawn(async move {
            while sigint.recv().await.is_some() {
                p.store(true, Ordering::SeqCst);
                a.notify_one();
            }
        });
        Some(Interrupts { pending, arrived })
    }

    /// Build the line editor with `make`, then take SIGINT back: the editor
    /// installs a handler of its own for its whole life, which holds the
    /// signal until the next read and turns it into a stray interrupt
    /// there (a Ctrl-C between two reads was lost that way, and a turn
    /// could not be stopped with a signal).
    ///
    /// An editor that installs none (a terminal it does not drive, such as
    /// `TERM=dumb`) reads lines cooked, where Ctrl-C comes only as SIGINT
    /// and would wait unseen until the line ends: there SIGINT gets its
    /// default back and ends mm, as a cooked program's Ctrl-C does.
    pub fn keep<T>(&self, make: impl FnOnce() -> T) -> T {
        // SAFETY: sigaction reads and writes zeroed structs of its own
        // type; what is put back is an action read here, or the default.
        let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
        let read = unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut ours) } == 0;
        let made = make();
        let mut theirs: libc::sigaction = unsafe { std::mem::zeroed() };
        let read_again =
            unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut theirs) } == 0;
        if read && read_again {
            let mut back = ours;
            if theirs.sa_sigaction == ours.sa_sigaction {
                back.sa_sigaction = libc::SIG_DFL;
            }
            // SAFETY: as above.
            unsafe { libc::sigaction(libc::SIGINT, &back, std::ptr::null_mut()) };
        }
        made
    }

    /// Whether a SIGINT came since the last look, once.
    pub fn take(&self) -> bool {
        self.pending.swap(false, Ordering::SeqCst)
    }

    /// Until the guard drops, a SIGINT cancels `cancel` (and is used up);
    /// so does one that came since the line was read (a Ctrl-C pressed
    /// just after Enter, before the turn's key watch took the terminal).
    pub fn stop_on(&self, cancel: CancellationToken) -> StopOnInterrupt {
        let (pending, arrived) = (self.pending.clone(), self.arrived.clone());
        StopOnInterrupt(tokio::spawn(async move {
            loop {
                // One that came before the wait is not missed: its permit waits.
                arrived.notified().await;
                if pending.swap(false, Ordering::SeqCst) {
                    cancel.cancel();
                }
            }
        }))
    }
}

/// Stops watching SIGINT for one turn when dropped.
pub struct StopOnInterrupt(tokio::task::JoinHandle<()>);

impl Drop for StopOnInterrupt {
    fn drop(&mut self) {
        self.0.abort();
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
        assert_eq!(
            classify(&k('y'), true),
            KeyAction::Answer(Decision::AllowOnce)
        );
        assert_eq!(classify(&k('n'), true), KeyAction::Answer(Decision::Reject));
        assert_eq!(
            classify(&key(KeyCode::Enter, KeyModifiers::NONE), true),
            KeyAction::Answer(Decision::AllowOnce)
        );
        assert_eq!(
            classify(&key(KeyCode::Enter, KeyModifiers::NONE), false),
            KeyAction::Queue
        );
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
    fn r_takes_a_reason_when_the_sink_can_show_it() {
        let controls = Controls::default();
        let cancel = CancellationToken::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let echoed = seen.clone();
        controls.set_echo(Arc::new(move |e| echoed.lock().unwrap().push(e)));
        let k = |c| key(KeyCode::Char(c), KeyModifiers::NONE);
        let mut rx = controls.ask();
        controls.handle(&k('r'), &cancel);
        assert!(rx.try_recv().is_err(), "r waits for the reason");
        for c in "use rgx".chars() {
            controls.handle(&k(c), &cancel);
        }
        controls.handle(&key(KeyCode::Backspace, KeyModifiers::NONE), &cancel);
        // `a` and `s` are letters of the reason now.
        controls.handle(&k('s'), &cancel);
        controls.handle(&key(KeyCode::Enter, KeyModifiers::NONE), &cancel);
        assert_eq!(rx.try_recv().unwrap(), Decision::Reject);
        assert_eq!(controls.take_reason().as_deref(), Some("use rgs"));
        assert_eq!(controls.take_reason(), None);
        assert_eq!(seen.lock().unwrap()[0], Echo::Start);
        assert!(seen.lock().unwrap().contains(&Echo::Backspace));

        // Enter at once: rejected, no reason; Escape cancels the turn.
        let mut rx = controls.ask();
        controls.handle(&k('r'), &cancel);
        controls.handle(&key(KeyCode::Enter, KeyModifiers::NONE), &cancel);
        assert_eq!(rx.try_recv().unwrap(), Decision::Reject);
        assert_eq!(controls.take_reason(), None);
        let mut rx = controls.ask();
        controls.handle(&k('r'), &cancel);
        controls.handle(&key(KeyCode::Esc, KeyModifiers::NONE), &cancel);
        assert_eq!(rx.try_recv().unwrap(), Decision::Cancelled);
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn without_an_echo_r_rejects_at_once() {
        let controls = Controls::default();
        let mut rx = controls.ask();
        let k = key(KeyCode::Char('r'), KeyModifiers::NONE);
        controls.handle(&k, &CancellationToken::new());
        assert_eq!(rx.try_recv().unwrap(), Decision::Reject);
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

    #[test]
    fn enter_queues_and_escape_puts_the_queue_back() {
        let controls = Controls::default();
        let cancel = CancellationToken::new();
        let type_in = |text: &str| {
            for c in text.chars() {
                controls.handle(&key(KeyCode::Char(c), KeyModifiers::NONE), &cancel);
            }
        };
        type_in("one");
        controls.handle(&key(KeyCode::Enter, KeyModifiers::NONE), &cancel);
        type_in("two");
        controls.handle(&key(KeyCode::Enter, KeyModifiers::NONE), &cancel);
        assert_eq!(controls.pop_queued().as_deref(), Some("one"));
        type_in("three");
        controls.handle(&key(KeyCode::Esc, KeyModifiers::NONE), &cancel);
        assert!(cancel.is_cancelled());
        assert_eq!(controls.pop_queued(), None, "Esc clears the queue");
        assert_eq!(controls.take_typed(), "two three");
    }
}
