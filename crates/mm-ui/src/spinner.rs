//! The terminal's "still working" indicator. The frame text is a pure
//! function of the label and the tick ([`frame`]), so it is tested without a
//! terminal; [`Spinner`] only draws it with `\r` from one thread that stops
//! (and is joined) when the spinner is dropped.

use std::io::Write;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::output::Output;

/// The glyphs, one per tick: one turn per second.
pub const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Time between two frames.
pub const TICK: Duration = Duration::from_millis(100);

/// Erases the spinner's line: back to column 0, clear to the end of line.
pub const CLEAR: &str = "\r\x1b[K";

/// The spinner's text `tick` ticks after `label` was shown: a glyph, the
/// label, and the seconds waited once there is at least one, so a slow
/// local model visibly is still working.
pub fn frame(label: &str, tick: u64) -> String {
    let glyph = FRAMES[(tick % FRAMES.len() as u64) as usize];
    let secs = tick * TICK.as_millis() as u64 / 1000;
    if secs == 0 {
        format!("{glyph} {label}")
    } else {
        format!("{glyph} {label} ({secs}s)")
    }
}

struct State {
    label: Option<String>,
    tick: u64,
    drawn: bool,
    out: Box<dyn Write + Send>,
}

impl State {
    fn draw(&mut self) {
        if let Some(label) = &self.label {
            let text = format!("\r{}\x1b[K", frame(label, self.tick));
            // A terminal that went away is not worth an error mid-turn.
            let _ = self.out.write_all(text.as_bytes());
            let _ = self.out.flush();
            self.drawn = true;
        }
    }

    fn erase(&mut self) {
        if self.drawn {
            let _ = self.out.write_all(CLEAR.as_bytes());
            let _ = self.out.flush();
            self.drawn = false;
        }
    }
}

/// A spinner on one stream. A disabled spinner (not a terminal, ACP mode)
/// has no thread and ignores every call.
pub struct Spinner {
    inner: Option<Running>,
}

struct Running {
    state: Arc<Mutex<State>>,
    /// Dropping it wakes and ends the thread at once.
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Spinner {
    /// A spinner that never draws.
    pub fn disabled() -> Self {
        Spinner { inner: None }
    }

    /// The spinner for the human output stream, disabled in ACP mode and
    /// when that stream is not a terminal.
    pub fn for_output(output: Output) -> Self {
        if output.spinner_allowed() {
            Spinner::new(output.writer())
        } else {
            Spinner::disabled()
        }
    }

    /// A spinner drawing on `out` whatever it is (tests use a buffer).
    pub fn new(out: impl Write + Send + 'static) -> Self {
        let state = Arc::new(Mutex::new(State {
            label: None,
            tick: 0,
            drawn: false,
            out: Box::new(out),
        }));
        let (stop, rx) = mpsc::channel::<()>();
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("mm-spinner".into())
            .spawn(move || {
                // A message or a dropped sender both mean stop.
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(TICK) {
                    let mut s = lock(&shared);
                    if s.label.is_some() {
                        s.tick += 1;
                        s.draw();
                    }
                }
            });
        match thread {
            Ok(thread) => Spinner {
                inner: Some(Running {
                    state,
                    stop: Some(stop),
                    thread: Some(thread),
                }),
            },
            // No thread, no spinner: the turn goes on without one.
            Err(_) => Spinner::disabled(),
        }
    }

    /// Whether this spinner draws at all.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Show `label` (`Thinking`, `Composing a tool call` …), drawn at once.
    /// The seconds count restarts when the label changes.
    pub fn set(&self, label: &str) {
        if let Some(r) = &self.inner {
            let mut s = lock(&r.state);
            if s.label.as_deref() != Some(label) {
                s.label = Some(label.to_string());
                s.tick = 0;
            }
            s.draw();
        }
    }

    /// Erase the spinner and stop drawing until the next [`Spinner::set`].
    pub fn clear(&self) {
        if let Some(r) = &self.inner {
            let mut s = lock(&r.state);
            s.erase();
            s.label = None;
        }
    }

    /// Erase the spinner, run `f` (which prints), and let the spinner come
    /// back on its next tick. No frame can be drawn while `f` runs, and `f`
    /// must not call this spinner (it holds the spinner's lock).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.inner {
            Some(r) => {
                let mut s = lock(&r.state);
                s.erase();
                f()
            }
            None => f(),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(mut r) = self.inner.take() {
            drop(r.stop.take());
            if let Some(t) = r.thread.take() {
                let _ = t.join();
            }
            lock(&r.state).erase();
        }
    }
}

impl std::fmt::Debug for Spinner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spinner")
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn frames_turn_and_count_seconds() {
        assert_eq!(frame("Thinking", 0), "⠋ Thinking");
        assert_eq!(frame("Thinking", 1), "⠙ Thinking");
        assert_eq!(frame("Thinking", 9), "⠏ Thinking");
        assert_eq!(
            frame("Composing a tool call", 10),
            "⠋ Composing a tool call (1s)"
        );
        assert_eq!(frame("Thinking", 125), "⠴ Thinking (12s)");
    }

    #[test]
    fn draws_with_carriage_return_and_clears_before_output() {
        let buf = Buf::default();
        let spinner = Spinner::new(buf.clone());
        assert!(spinner.is_enabled());
        spinner.set("Thinking");
        assert_eq!(buf.text(), "\r⠋ Thinking\x1b[K");

        // The thread ticks: a second frame arrives, bounded wait.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !buf.text().contains("⠙ Thinking") {
            assert!(
                Instant::now() < deadline,
                "no second frame: {:?}",
                buf.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }

        let printed = spinner.suspend(|| {
            let t = buf.text();
            assert!(t.ends_with(CLEAR), "not cleared before output: {t:?}");
            42
        });
        assert_eq!(printed, 42);

        spinner.clear();
        let after_clear = buf.text();
        assert!(after_clear.ends_with(CLEAR));
        std::thread::sleep(TICK * 3);
        assert_eq!(buf.text(), after_clear, "drew after clear");

        // A new label restarts at the first glyph.
        spinner.set("Composing a tool call");
        assert!(buf.text().ends_with("\r⠋ Composing a tool call\x1b[K"));
    }

    #[test]
    fn drop_stops_and_joins_the_thread_and_erases() {
        let buf = Buf::default();
        let spinner = Spinner::new(buf.clone());
        spinner.set("Thinking");
        assert_eq!(Arc::strong_count(&buf.0), 2);
        drop(spinner);
        // The thread's handle on the writer is gone: it has ended.
        assert_eq!(Arc::strong_count(&buf.0), 1);
        let t = buf.text();
        assert!(t.ends_with(CLEAR), "{t:?}");
        std::thread::sleep(TICK * 3);
        assert_eq!(buf.text(), t);
    }

    #[test]
    fn disabled_spinner_draws_nothing() {
        let spinner = Spinner::disabled();
        spinner.set("Thinking");
        spinner.clear();
        assert!(!spinner.is_enabled());
        assert_eq!(spinner.suspend(|| 7), 7);
        // ACP mode never gets a spinner, whatever the terminal.
        assert!(!Spinner::for_output(Output::acp()).is_enabled());
    }
}
