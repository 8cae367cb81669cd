//! The terminal as the sink draws on it: stdout and stderr, where the
//! cursor is (at the start of a line or not), the spinner line, and the
//! newline translation raw mode needs.
//!
//! Everything a turn shows goes through one [`Screen`] behind one mutex, so
//! the spinner is always cleared before any other output and a tool line
//! never lands in the middle of an answer line.
//!
//! Text given to [`Screen::write`], [`Screen::write_styled`] and the
//! spinner is sanitised ([`mm_ui::sanitize()`]): whatever a model, a command
//! or a server said, the only escape sequences written are the screen's
//! own styling. Only [`Screen::write_own`] writes bytes as given.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::style::{self, Style};

/// Where a piece of output belongs; the [`Layout`] maps it to a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The answer text.
    Answer,
    /// Tool lines, previews, reasoning, the recap line, the prompt.
    Info,
    /// Notices and errors: always stderr.
    Alert,
}

/// Which stream each [`Target`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The REPL: answer and info on stdout, alerts on stderr.
    Interactive,
    /// `-p`: only the answer on stdout, everything else on stderr, so that
    /// a script reading stdout gets the answer alone.
    OneShot,
}

impl Layout {
    fn index(self, target: Target) -> usize {
        match (self, target) {
            (_, Target::Answer) => 0,
            (Layout::Interactive, Target::Info) => 0,
            (Layout::OneShot, Target::Info) => 1,
            (_, Target::Alert) => 1,
        }
    }
}

/// One output stream.
pub struct Output {
    pub writer: Box<dyn Write + Send>,
    /// Is a terminal: `\r\n` line ends while raw mode is on.
    pub tty: bool,
    /// Gets color: a terminal, without `NO_COLOR` or `TERM=dumb`.
    pub color: bool,
    /// Gets the spinner and line clearing: a terminal, not `TERM=dumb`.
    pub cursor: bool,
}

impl Output {
    /// The process's stdout, with the terminal and color rules applied.
    pub fn stdout() -> Output {
        use std::io::IsTerminal;
        let tty = std::io::stdout().is_terminal();
        Output {
            writer: Box::new(std::io::stdout()),
            tty,
            color: style::color_for(tty),
            cursor: style::cursor_for(tty),
        }
    }

    /// The process's stderr, with the terminal and color rules applied.
    pub fn stderr() -> Output {
        use std::io::IsTerminal;
        let tty = std::io::stderr().is_terminal();
        Output {
            writer: Box::new(std::io::stderr()),
            tty,
            color: style::color_for(tty),
            cursor: style::cursor_for(tty),
        }
    }
}

struct Spin {
    status: String,
    /// Ticks since the status was set: the frame and the seconds shown.
    tick: u64,
    shown: bool,
    /// Shown after the seconds (`· 195 more lines`); changing it keeps
    /// the count.
    detail: String,
}

/// What the status line says besides the work and its time: the tokens
/// written this turn (an estimate).
#[derive(Debug, Default, Clone, Copy)]
struct Progress {
    tokens: u64,
}

/// The two streams and what is on them.
pub struct Screen {
    layout: Layout,
    outputs: [Output; 2],
    /// Both streams are the same terminal: one cursor.
    shared: bool,
    line_start: [bool; 2],
    spin: Option<Spin>,
    progress: Progress,
    /// Set while the key watcher holds the terminal in raw mode.
    raw: Arc<AtomicBool>,
}

impl Screen {
    pub fn new(layout: Layout, stdout: Output, stderr: Output, raw: Arc<AtomicBool>) -> Screen {
        let shared = stdout.tty && stderr.tty;
        Screen {
            layout,
            outputs: [stdout, stderr],
            shared,
            line_start: [true, true],
            spin: None,
            progress: Progress::default(),
            raw,
        }
    }

    /// Whether `target`'s stream takes color.
    pub fn color(&self, target: Target) -> bool {
        self.outputs[self.layout.index(target)].color
    }

    /// Whether `target`'s stream takes the spinner and line clearing.
    pub fn cursor(&self, target: Target) -> bool {
        self.outputs[self.layout.index(target)].cursor
    }

    /// Whether `target`'s stream is a terminal.
    pub fn is_tty(&self, target: Target) -> bool {
        self.outputs[self.layout.index(target)].tty
    }

    /// Whether the cursor of `target`'s stream is at the start of a line.
    pub fn at_line_start(&self, target: Target) -> bool {
        self.line_start[self.layout.index(target)]
    }

    /// Write `text`, sanitised, to `target` (the spinner stops first).
    pub fn write(&mut self, target: Target, text: &str) {
        self.write_own(target, &mm_ui::sanitize(text));
    }

    /// Write `text`, sanitised, in `style` (when the stream takes color).
    pub fn write_styled(&mut self, target: Target, style: Style, text: &str) {
        let painted = style::paint(self.color(target), style, &mm_ui::sanitize(text));
        self.write_own(target, &painted);
    }

    /// Write `text` as given: mm's own styling around text sanitised
    /// already (a rendered answer), an echo's backspaces, or the answer
    /// on a stdout that is not a terminal (the model's text, for a script).
    pub fn write_own(&mut self, target: Target, text: &str) {
        self.erase_spinner();
        self.raw_write(self.layout.index(target), text);
        // The status line stays the whole turn: drawn again under what
        // was written, once that ends a line.
        if self.spin.is_some() {
            self.draw_spinner();
        }
    }

    /// The tokens the model wrote this turn, for the status line.
    pub fn set_tokens(&mut self, tokens: u64) {
        self.progress.tokens = tokens;
    }

    /// Clear the status line from the screen; it is drawn again on the
    /// next tick or write.
    fn erase_spinner(&mut self) {
        if let Some(spin) = &mut self.spin
            && spin.shown
        {
            spin.shown = false;
            let i = self.layout.index(Target::Info);
            self.raw_write(i, "\r\x1b[K");
        }
    }

    /// Start a new line on `target` unless the cursor is at one already.
    pub fn ensure_line_start(&mut self, target: Target) {
        if !self.at_line_start(target) {
            self.write(target, "\n");
        }
    }

    /// Show `status` in the spinner (on the info stream, when it is a
    /// terminal that is not `TERM=dumb`; elsewhere a spinner would only
    /// litter a log).
    pub fn set_status(&mut self, status: &str) {
        if !self.cursor(Target::Info) {
            return;
        }
        let status = &*one_line(status);
        if let Some(spin) = &mut self.spin {
            if spin.status != status {
                spin.status = status.to_owned();
                spin.tick = 0;
                spin.detail.clear();
            }
        } else {
            self.ensure_line_start(Target::Info);
            self.spin = Some(Spin {
                status: status.to_owned(),
                tick: 0,
                shown: false,
                detail: String::new(),
            });
        }
        self.draw_spinner();
    }

    /// Advance the spinner one frame (called by the spinner thread every
    /// [`mm_ui::spinner::TICK`]).
    pub fn tick(&mut self) {
        if let Some(spin) = &mut self.spin {
            spin.tick += 1;
            self.draw_spinner();
        }
    }

    /// Set what the spinner shows after its seconds; its count goes on.
    pub fn set_detail(&mut self, detail: &str) {
        let detail = &*one_line(detail);
        if let Some(spin) = &mut self.spin
            && spin.detail != detail
        {
            spin.detail = detail.to_owned();
            self.draw_spinner();
        }
    }

    /// Write whole lines (`text` ends with a line break) in `style` above
    /// the spinner, which stays and keeps its count: a running command's
    /// output as it comes.
    pub fn write_above_spinner(&mut self, target: Target, style: Style, text: &str) {
        self.write_styled(target, style, text);
    }

    /// Whether a spinner is running.
    pub fn spinning(&self) -> bool {
        self.spin.is_some()
    }

    /// Clear the spinner line and forget the status (the turn ended, or
    /// a question waits for a key).
    pub fn stop_spinner(&mut self) {
        self.erase_spinner();
        self.spin = None;
    }

    fn draw_spinner(&mut self) {
        let i = self.layout.index(Target::Info);
        // Only on a line of its own: never over a line being written or
        // a question waiting for its answer.
        if !self.line_start[i] {
            return;
        }
        let tokens = self.progress.tokens;
        let Some(spin) = &mut self.spin else {
            return;
        };
        let glyph =
            mm_ui::spinner::FRAMES[(spin.tick % mm_ui::spinner::FRAMES.len() as u64) as usize];
        let secs = spin.tick * mm_ui::spinner::TICK.as_millis() as u64 / 1000;
        let mut status = spin.status.clone();
        if !spin.detail.is_empty() {
            status.push_str(" · ");
            status.push_str(&spin.detail);
        }
        let text = format!(
            "{glyph} {}",
            mm_ui::words::status_line(&status, secs, tokens)
        );
        spin.shown = true;
        let painted = style::paint(self.outputs[i].color, Style::Dim, &text);
        let line = format!("\r{painted}\x1b[K");
        let out = &mut self.outputs[i];
        let _ = out.writer.write_all(line.as_bytes());
        let _ = out.writer.flush();
    }

    fn raw_write(&mut self, i: usize, text: &str) {
        if text.is_empty() {
            return;
        }
        let out = &mut self.outputs[i];
        let result = if out.tty && self.raw.load(Ordering::SeqCst) {
            out.writer.write_all(text.replace('\n', "\r\n").as_bytes())
        } else {
            out.writer.write_all(text.as_bytes())
        };
        // A closed pipe must not end the turn: the agent still saves the session.
        let _ = result.and_then(|()| out.writer.flush());
        let at_start = text.ends_with('\n') || (text.ends_with("\x1b[K") && text.starts_with('\r'));
        if self.shared {
            self.line_start = [at_start; 2];
        } else {
            self.line_start[i] = at_start;
        }
    }
}

/// `text` sanitised and on one line: the spinner's line is redrawn in
/// place, a line break would leave copies of it behind.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    match mm_ui::sanitize(text) {
        clean if clean.contains(['\n', '\t']) => clean.replace(['\n', '\t'], " ").into(),
        clean => clean,
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A writer whose bytes a test can read back.
    #[derive(Clone, Default)]
    pub struct Buffer(pub Arc<Mutex<Vec<u8>>>);

    impl Buffer {
        pub fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    pub fn output(buf: &Buffer, tty: bool) -> Output {
        Output {
            writer: Box::new(buf.clone()),
            tty,
            color: false,
            cursor: tty,
        }
    }

    #[test]
    fn one_shot_keeps_stdout_for_the_answer() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let mut s = Screen::new(
            Layout::OneShot,
            output(&out, false),
            output(&err, false),
            Arc::default(),
        );
        s.write(Target::Answer, "answer");
        s.write(Target::Info, "tool line\n");
        s.write(Target::Alert, "notice\n");
        assert_eq!(out.text(), "answer");
        assert_eq!(err.text(), "tool line\nnotice\n");
    }

    #[test]
    fn line_state_is_shared_on_one_terminal() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let mut s = Screen::new(
            Layout::Interactive,
            output(&out, true),
            output(&err, true),
            Arc::default(),
        );
        s.write(Target::Answer, "partial");
        assert!(!s.at_line_start(Target::Alert));
        s.ensure_line_start(Target::Alert);
        assert_eq!(err.text(), "\n");
        assert!(s.at_line_start(Target::Answer));
    }

    #[test]
    fn raw_mode_writes_carriage_returns_on_a_terminal_only() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let raw = Arc::new(AtomicBool::new(true));
        let mut s = Screen::new(
            Layout::OneShot,
            output(&out, false),
            output(&err, true),
            raw.clone(),
        );
        s.write(Target::Answer, "a\nb\n");
        s.write(Target::Info, "c\n");
        raw.store(false, Ordering::SeqCst);
        s.write(Target::Info, "d\n");
        assert_eq!(out.text(), "a\nb\n");
        assert_eq!(err.text(), "c\r\nd\n");
    }

    #[test]
    fn spinner_is_cleared_before_other_output_and_starts_on_its_own_line() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let mut s = Screen::new(
            Layout::Interactive,
            output(&out, true),
            output(&err, true),
            Arc::default(),
        );
        s.write(Target::Answer, "Let me look.");
        s.set_status("Composing a tool call");
        assert!(s.spinning());
        s.tick();
        s.write(Target::Info, "🛠️  bash: ls\n");
        // The status line stays under what was written.
        assert!(s.spinning());
        assert_eq!(
            out.text(),
            "Let me look.\n\r⠋ Composing a tool call · Esc to interrupt\x1b[K\r⠙ Composing a tool call · Esc to interrupt\x1b[K\r\x1b[K🛠️  bash: ls\n\r⠙ Composing a tool call · Esc to interrupt\x1b[K"
        );
        s.stop_spinner();
        assert!(!s.spinning());
    }

    #[test]
    fn no_spinner_off_a_terminal() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let mut s = Screen::new(
            Layout::OneShot,
            output(&out, false),
            output(&err, false),
            Arc::default(),
        );
        s.set_status("Thinking");
        assert!(!s.spinning());
        assert_eq!(err.text(), "");
    }

    #[test]
    fn a_new_status_restarts_the_count() {
        let (out, err) = (Buffer::default(), Buffer::default());
        let mut s = Screen::new(
            Layout::Interactive,
            output(&out, true),
            output(&err, true),
            Arc::default(),
        );
        s.set_status("Thinking");
        for _ in 0..23 {
            s.tick();
        }
        assert!(
            out.text()
                .ends_with("\r⠸ Thinking 2s · Esc to interrupt\x1b[K"),
            "{:?}",
            out.text()
        );
        s.set_status("Running bash");
        assert!(
            out.text()
                .ends_with("\r⠋ Running bash · Esc to interrupt\x1b[K"),
            "{:?}",
            out.text()
        );
    }
}
