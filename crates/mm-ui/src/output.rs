//! Where human-facing text goes. In ACP mode stdout belongs to JSON-RPC, so
//! every line meant for a person goes to stderr; a binary that picks its
//! stream through [`Output`] cannot get this wrong.

use std::io::{self, IsTerminal, Write};

/// How the process was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The REPL or the window: the person reads stdout.
    Terminal,
    /// An editor speaks JSON-RPC on stdout: people read stderr.
    Acp,
}

/// One of the two standard streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    /// Whether a terminal is attached to this stream.
    pub fn is_terminal(self) -> bool {
        match self {
            Stream::Stdout => io::stdout().is_terminal(),
            Stream::Stderr => io::stderr().is_terminal(),
        }
    }

    /// A writer on this stream.
    pub fn writer(self) -> Box<dyn Write + Send> {
        match self {
            Stream::Stdout => Box::new(io::stdout()),
            Stream::Stderr => Box::new(io::stderr()),
        }
    }
}

/// The chooser of the human output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    mode: Mode,
}

impl Output {
    /// The chooser for a process started in `mode`.
    pub fn new(mode: Mode) -> Self {
        Output { mode }
    }

    /// Human text on stdout.
    pub fn terminal() -> Self {
        Output::new(Mode::Terminal)
    }

    /// Human text on stderr; stdout is left to the protocol.
    pub fn acp() -> Self {
        Output::new(Mode::Acp)
    }

    /// How the process was started.
    pub fn mode(self) -> Mode {
        self.mode
    }

    /// The stream human text goes to.
    pub fn stream(self) -> Stream {
        match self.mode {
            Mode::Terminal => Stream::Stdout,
            Mode::Acp => Stream::Stderr,
        }
    }

    /// A writer for human text.
    pub fn writer(self) -> Box<dyn Write + Send> {
        self.stream().writer()
    }

    /// Whether a spinner may be drawn: never in ACP mode, and only when the
    /// human stream is a terminal (a pipe or a file gets no `\r` frames).
    pub fn spinner_allowed(self) -> bool {
        self.mode == Mode::Terminal && self.stream().is_terminal()
    }

    /// Write `text` and a newline to the human stream, flushed.
    pub fn line(self, text: &str) -> io::Result<()> {
        let mut w = self.writer();
        w.write_all(text.as_bytes())?;
        w.write_all(b"\n")?;
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acp_never_routes_human_text_to_stdout() {
        assert_eq!(Output::acp().stream(), Stream::Stderr);
        assert_eq!(Output::terminal().stream(), Stream::Stdout);
        assert!(!Output::acp().spinner_allowed());
    }
}
