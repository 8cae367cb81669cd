//! Where the answer text released so far stands, in Markdown terms: at the
//! start of a line or not, inside a blockquote, inside a fenced code block.
//! A call written as text counts only at the start of a line outside both;
//! markup anywhere else is the model quoting it.
//!
//! Fed the released text in order, however it was cut: its state depends on
//! the text alone.

/// Deepest indent of a line that still starts a block (four spaces make an
/// indented code block).
const MAX_INDENT: usize = 3;

/// The state after the text fed so far.
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    head: Head,
    /// The paragraph is a blockquote: a line began with `>`, and no blank
    /// line followed (later lines continue it, as Markdown reads them).
    quote: bool,
    /// Inside a fenced code block: its fence byte and length.
    code: Option<(u8, usize)>,
}

/// What the current line holds so far.
#[derive(Debug, Clone, Copy)]
enum Head {
    /// Only whitespace: `spaces` spaces, and `other` when anything else
    /// (a tab, a carriage return) came too.
    Lead { spaces: usize, other: bool },
    /// A run of fence bytes after the indent, then (once `run_over`) the
    /// rest of the line: whether it is blank and whether it holds a
    /// backtick (a backtick fence's info string may not).
    Fence {
        byte: u8,
        len: usize,
        run_over: bool,
        blank: bool,
        backtick: bool,
    },
    /// Anything else: the rest of the line does not matter.
    Other,
}

impl Default for Lines {
    fn default() -> Self {
        Lines {
            head: Head::Lead {
                spaces: 0,
                other: false,
            },
            quote: false,
            code: None,
        }
    }
}

impl Lines {
    /// The spaces the current line holds when it holds nothing else and a
    /// block may still start on it.
    pub(crate) fn indent(&self) -> Option<usize> {
        match self.head {
            Head::Lead {
                spaces,
                other: false,
            } if spaces <= MAX_INDENT => Some(spaces),
            _ => None,
        }
    }

    /// Inside a blockquote or a fenced code block: text here is quoted.
    pub(crate) fn quoted(&self) -> bool {
        self.quote || self.code.is_some()
    }

    /// Inside a fenced code block (a fence line here closes it).
    pub(crate) fn in_code(&self) -> bool {
        self.code.is_some()
    }

    /// Follow `text`.
    pub(crate) fn feed(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if let Head::Other = self.head {
                match memchr::memchr(b'\n', &bytes[i..]) {
                    Some(at) => {
                        i += at + 1;
                        self.end_line();
                        continue;
                    }
                    None => return,
                }
            }
            let b = bytes[i];
            i += 1;
            if b == b'\n' {
                self.end_line();
                continue;
            }
            self.head = match self.head {
                Head::Lead { spaces, other } => match b {
                    b' ' => Head::Lead {
                        spaces: spaces + 1,
                        other,
                    },
                    b'\t' | b'\r' | 0x0b | 0x0c => Head::Lead {
                        spaces,
                        other: true,
                    },
                    _ if other || spaces > MAX_INDENT => Head::Other,
                    b'`' | b'~' => Head::Fence {
                        byte: b,
                        len: 1,
                        run_over: false,
                        blank: true,
                        backtick: false,
                    },
                    b'>' if self.code.is_none() => {
                        self.quote = true;
                        Head::Other
                    }
                    _ => Head::Other,
                },
                Head::Fence {
                    byte,
                    len,
                    run_over: false,
                    ..
                } if b == byte => Head::Fence {
                    byte,
                    len: len + 1,
                    run_over: false,
                    blank: true,
                    backtick: false,
                },
                Head::Fence { len, .. } if len < 3 => Head::Other,
                Head::Fence {
                    byte,
                    len,
                    blank,
                    backtick,
                    ..
                } => Head::Fence {
                    byte,
                    len,
                    run_over: true,
                    blank: blank && b.is_ascii_whitespace(),
                    backtick: backtick || b == b'`',
                },
                Head::Other => Head::Other,
            };
        }
    }

    /// A line ended: a blank line ends a blockquote, a fence line opens
    /// or closes a code block.
    fn end_line(&mut self) {
        match self.head {
            Head::Lead { .. } => self.quote = false,
            Head::Fence {
                byte,
                len,
                blank,
                backtick,
                ..
            } if len >= 3 => match self.code {
                Some((open, open_len)) => {
                    if open == byte && len >= open_len && blank {
                        self.code = None;
                    }
                }
                None if byte == b'`' && backtick => {}
                None => {
                    self.code = Some((byte, len));
                    self.quote = false;
                }
            },
            _ => {}
        }
        self.head = Head::Lead {
            spaces: 0,
            other: false,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(text: &str) -> Lines {
        let mut l = Lines::default();
        l.feed(text);
        // The same, a byte at a time.
        let mut one = Lines::default();
        for c in text.chars() {
            one.feed(&c.to_string());
        }
        assert_eq!(
            (l.indent(), l.quote, l.code),
            (one.indent(), one.quote, one.code),
            "{text:?}"
        );
        l
    }

    #[test]
    fn line_starts_and_indents() {
        assert_eq!(after("").indent(), Some(0));
        assert_eq!(after("text\n  ").indent(), Some(2));
        assert_eq!(after("text\n    ").indent(), None);
        assert_eq!(after("text\n\t").indent(), None);
        assert_eq!(after("text").indent(), None);
    }

    #[test]
    fn blockquotes_last_until_a_blank_line() {
        assert!(after("> a\n").quoted());
        assert!(after("> a\nlazy\n").quoted());
        assert!(!after("> a\n\n").quoted());
        assert!(!after("a > b\n").quoted());
    }

    #[test]
    fn fences_open_and_close() {
        assert!(after("```rust\nfn\n").in_code());
        assert!(!after("```rust\nfn\n```\n").in_code());
        // An info string does not close; a shorter run does not close.
        assert!(after("````\n```\n").in_code());
        assert!(after("```\n```xml\n").in_code());
        assert!(!after("~~~\n~~~~\n").in_code());
        // Backticks in a backtick fence's info: inline code, not a fence.
        assert!(!after("```a`b\n").in_code());
        assert!(!after("text ```\n").in_code());
        assert!(!after("``\n").in_code());
        assert!(!after("> a\n```\n").quote);
    }
}
