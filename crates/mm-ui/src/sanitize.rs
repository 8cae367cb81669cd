//! Text from outside mm made safe to show on a terminal. A model's answer,
//! a command's output, an MCP server's text or an error body may hold
//! control characters and escape sequences that a terminal would obey:
//! write the clipboard (`ESC ] 52`), clear the screen (`ESC [ 2 J`), retitle
//! the window, move the cursor over earlier lines. Every front end passes
//! such text through [`sanitize`] (or, for text that arrives in pieces, a
//! [`Sanitizer`]) before it adds its own styling, so the only escape
//! sequences that reach the terminal are mm's.
//!
//! What comes out holds no control character but `\n` and `\t`:
//!
//! - escape sequences are removed whole: CSI (`ESC [` … final byte), OSC,
//!   DCS, SOS, PM and APC strings (up to BEL, `ESC \` or the end of the
//!   line: an unterminated string can hide no more than the rest of its
//!   line), and two-character escapes (`ESC 7`, `ESC ( B`); the 8-bit C1
//!   forms (U+009B CSI, U+009D OSC …) likewise;
//! - a carriage return before a line feed is dropped (`\r\n` becomes
//!   `\n`); one followed by more text becomes a line break, so the text
//!   it would have let overwrite a line is shown below it instead (a
//!   progress bar shows its frames one per line), and a final one is
//!   dropped;
//! - every other C0 or C1 control character and DEL is dropped (a
//!   backspace cannot erase what was shown either).
//!
//! What the model receives is never passed through here: only what is
//! shown.

use std::borrow::Cow;

/// Where the parser is in an escape sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    /// Plain text.
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and one or more intermediate bytes (`ESC ( B`).
    EscIntermediate,
    /// In a control sequence: parameters until a final byte.
    Csi,
    /// In an OSC, DCS, SOS, PM or APC string.
    Str,
    /// After ESC inside a string: `\` ends it, anything else starts a new
    /// escape.
    StrEscape,
}

/// A sanitiser for text that arrives in pieces (a streamed answer, a
/// running command's output): an escape sequence split between two pieces
/// is still removed whole, and a carriage return at the end of a piece
/// waits for the next one to know whether a line feed follows.
#[derive(Debug, Clone, Default)]
pub struct Sanitizer {
    state: State,
    /// A carriage return seen and not yet resolved.
    cr: bool,
}

impl Sanitizer {
    /// A sanitiser at the start of a text.
    pub fn new() -> Sanitizer {
        Sanitizer::default()
    }

    /// The safe text of the next piece.
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::with_capacity(piece.len());
        self.push_into(piece, &mut out);
        out
    }

    /// Append the safe text of the next piece to `out`.
    pub fn push_into(&mut self, piece: &str, out: &mut String) {
        for c in piece.chars() {
            self.step(c, out);
        }
    }

    /// The text ended: an unfinished sequence or a final carriage return
    /// is dropped, and the sanitiser is ready for a new text.
    pub fn reset(&mut self) {
        *self = Sanitizer::default();
    }

    fn step(&mut self, c: char, out: &mut String) {
        match self.state {
            State::Ground => self.ground(c, out),
            State::Escape => match c {
                '[' => self.state = State::Csi,
                ']' | 'P' | 'X' | '^' | '_' => self.state = State::Str,
                ' '..='/' => self.state = State::EscIntermediate,
                '0'..='~' => self.state = State::Ground,
                '\x1b' => {}
                _ => self.abort(c, out),
            },
            State::EscIntermediate => match c {
                ' '..='/' => {}
                '0'..='~' => self.state = State::Ground,
                _ => self.abort(c, out),
            },
            State::Csi => match c {
                ' '..='?' => {}
                '@'..='~' => self.state = State::Ground,
                _ => self.abort(c, out),
            },
            State::Str => match c {
                '\x07' | '\u{9c}' => self.state = State::Ground,
                '\x1b' => self.state = State::StrEscape,
                '\n' => self.abort(c, out),
                _ => {}
            },
            State::StrEscape => {
                if c == '\\' {
                    self.state = State::Ground;
                } else {
                    self.state = State::Escape;
                    self.step(c, out);
                }
            }
        }
    }

    /// A character that cannot continue the sequence ends it and is read
    /// as text (a terminal would obey it; here it is shown or dropped).
    fn abort(&mut self, c: char, out: &mut String) {
        self.state = State::Ground;
        self.ground(c, out);
    }

    fn ground(&mut self, c: char, out: &mut String) {
        match c {
            '\x1b' => self.state = State::Escape,
            '\u{9b}' => self.state = State::Csi,
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => self.state = State::Str,
            '\r' => self.cr = true,
            '\n' => {
                self.cr = false;
                out.push('\n');
            }
            c if c.is_control() && c != '\t' => {}
            c => {
                if std::mem::take(&mut self.cr) {
                    out.push('\n');
                }
                out.push(c);
            }
        }
    }
}

/// `text` safe to show on a terminal (see the module's documentation);
/// borrowed when it holds no control character but `\n` and `\t`.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if is_clean(text) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(Sanitizer::new().push(text))
}

/// Whether `text` holds no control character but `\n` and `\t`: what
/// [`sanitize`] returns unchanged.
pub fn is_clean(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(text: &str) -> String {
        sanitize(text).into_owned()
    }

    #[test]
    fn the_issues_sequences_are_removed_and_the_text_kept() {
        assert_eq!(clean("a\x1b]52;c;aGk=\x07b"), "ab");
        assert_eq!(clean("a\x1b[2Jb"), "ab");
        assert_eq!(clean("\x1b[1;31mred\x1b[0m plain"), "red plain");
        // OSC ended by ST, a window title, a hyperlink.
        assert_eq!(clean("x\x1b]0;title\x1b\\y"), "xy");
        assert_eq!(clean("\x1b]8;;http://e.x\x1b\\link\x1b]8;;\x1b\\"), "link");
        // DCS, APC, PM, SOS strings.
        assert_eq!(clean("a\x1bPq#0;2;0;0;0\x1b\\b"), "ab");
        assert_eq!(
            clean("a\x1b_payload\x1b\\b\x1b^pm\x07c\x1bXsos\x1b\\d"),
            "abcd"
        );
        // Two-character escapes and charset designation.
        assert_eq!(clean("a\x1b7b\x1b8c\x1bcd\x1b(Be"), "abcde");
    }

    #[test]
    fn eight_bit_controls_are_read_as_their_escapes() {
        assert_eq!(clean("a\u{9b}2Jb"), "ab");
        assert_eq!(clean("a\u{9d}52;c;aGk=\u{9c}b"), "ab");
        assert_eq!(clean("a\u{85}b\u{90}dcs\u{9c}c"), "abc");
    }

    #[test]
    fn only_newline_and_tab_survive_of_the_controls() {
        assert_eq!(clean("a\tb\nc"), "a\tb\nc");
        assert_eq!(
            clean("bell\x07 nul\0 bs\x08\x08 del\x7f"),
            "bell nul bs del"
        );
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let out = clean(&format!("x{c}y{c}"));
            assert!(is_clean(&out), "{c:?} left {out:?}");
        }
    }

    #[test]
    fn a_carriage_return_cannot_hide_text() {
        assert_eq!(clean("one\r\ntwo\r\n"), "one\ntwo\n");
        // The text a lone CR would have written over the line comes
        // after it, on a line of its own.
        assert_eq!(clean("secret\rpublic"), "secret\npublic");
        assert_eq!(clean("10%\r20%\r30%\r"), "10%\n20%\n30%");
        assert_eq!(clean("a\r\r\nb"), "a\nb");
        // A progress line's clearing sequence after the CR is removed.
        assert_eq!(clean("10%\r\x1b[K20%"), "10%\n20%");
    }

    #[test]
    fn an_unterminated_string_hides_at_most_the_rest_of_its_line() {
        assert_eq!(clean("seen\x1b]0;never ended\nshown"), "seen\nshown");
        // A broken CSI gives back what is not a parameter.
        assert_eq!(clean("a\x1b[12\nb"), "a\nb");
        assert_eq!(clean("a\x1b[é"), "aé");
        // An ESC inside a string starts a new sequence.
        assert_eq!(clean("a\x1b]0;t\x1b[31mb"), "ab");
    }

    #[test]
    fn a_sequence_split_between_pieces_is_removed_whole() {
        let text = "a\x1b]52;c;aGk=\x07b\x1b[2Jc\r\nd\re";
        let whole = clean(text);
        assert_eq!(whole, "abc\nd\ne");
        // Every way of cutting the text in two, and in single characters.
        let chars: Vec<char> = text.chars().collect();
        for cut in 0..=chars.len() {
            let (x, y): (String, String) =
                (chars[..cut].iter().collect(), chars[cut..].iter().collect());
            let mut s = Sanitizer::new();
            let got = s.push(&x) + &s.push(&y);
            assert_eq!(got, whole, "cut at {cut}");
        }
        let mut s = Sanitizer::new();
        let got: String = chars.iter().map(|c| s.push(&c.to_string())).collect();
        assert_eq!(got, whole);
        // A piece ending in CR shows nothing of it until the next piece.
        let mut s = Sanitizer::new();
        assert_eq!(s.push("50%\r"), "50%");
        assert_eq!(s.push("\n"), "\n");
        // Reset forgets an unfinished sequence.
        let mut s = Sanitizer::new();
        assert_eq!(s.push("a\x1b]52;c;"), "a");
        s.reset();
        assert_eq!(s.push("b"), "b");
    }

    #[test]
    fn clean_text_is_borrowed_and_sanitising_twice_changes_nothing() {
        assert!(matches!(
            sanitize("plain — ünïcode\n\tok"),
            Cow::Borrowed(_)
        ));
        let once = clean("x\x1b[31my\rz\u{9b}1m\x07");
        assert_eq!(clean(&once), once);
        assert!(is_clean(&once));
    }
}
