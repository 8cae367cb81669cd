//! `editMode: vi` in the input box: Esc leaves insert mode (when no turn
//! runs; during a turn it interrupts, as in emacs mode), and normal mode
//! takes a small set of vi's keys. Keys with Ctrl or Alt, Enter, Esc and
//! the arrows keep their usual meaning in both modes.
//!
//! | key (normal mode) | action |
//! |---|---|
//! | h / l, 0 / $, w / b | a character left / right, start / end of the line, a word on / back |
//! | i / a, I / A | insert before / after the cursor, at the start / the end of the line |
//! | x, D, dd | delete the character, to the end of the line, the whole line |
//! | k / j | previous / next question from the history |

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea};

/// The vi state of the input box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vi {
    /// In normal mode (else insert mode).
    pub normal: bool,
    /// `d` was pressed: the next `d` deletes the line.
    pending_d: bool,
}

/// What a key did in normal mode, beyond editing the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The key was vi's; nothing more to do.
    Done,
    /// `k`: the previous question from the history.
    HistoryPrev,
    /// `j`: the next question.
    HistoryNext,
    /// Not vi's: the key keeps its usual meaning.
    Pass,
}

impl Vi {
    /// Esc in insert mode: normal mode, the cursor on the last character
    /// typed (as vi does).
    pub fn escape(&mut self, input: &mut TextArea<'static>) {
        self.normal = true;
        self.pending_d = false;
        input.move_cursor(CursorMove::Back);
    }

    /// Back to insert mode (after a line is sent).
    pub fn insert(&mut self) {
        self.normal = false;
        self.pending_d = false;
    }

    /// A key in normal mode.
    pub fn key(&mut self, key: KeyEvent, input: &mut TextArea<'static>) -> Outcome {
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            self.pending_d = false;
            return Outcome::Pass;
        }
        let KeyCode::Char(c) = key.code else {
            self.pending_d = false;
            return Outcome::Pass;
        };
        let pending_d = std::mem::take(&mut self.pending_d);
        match c {
            'h' => input.move_cursor(CursorMove::Back),
            'l' => input.move_cursor(CursorMove::Forward),
            '0' => input.move_cursor(CursorMove::Head),
            '$' => input.move_cursor(CursorMove::End),
            'w' => input.move_cursor(CursorMove::WordForward),
            'b' => input.move_cursor(CursorMove::WordBack),
            'i' => self.normal = false,
            'a' => {
                input.move_cursor(CursorMove::Forward);
                self.normal = false;
            }
            'I' => {
                input.move_cursor(CursorMove::Head);
                self.normal = false;
            }
            'A' => {
                input.move_cursor(CursorMove::End);
                self.normal = false;
            }
            'x' => {
                input.delete_next_char();
            }
            'D' => {
                input.delete_line_by_end();
            }
            'd' if pending_d => delete_line(input),
            'd' => self.pending_d = true,
            'k' => return Outcome::HistoryPrev,
            'j' => return Outcome::HistoryNext,
            // Other printable keys do nothing in normal mode (they are not
            // typed into the question).
            _ => {}
        }
        Outcome::Done
    }
}

/// `dd`: the cursor's line goes (with its line break when there are more).
fn delete_line(input: &mut TextArea<'static>) {
    let rows = input.lines().len();
    let row = input.cursor().0;
    input.move_cursor(CursorMove::Head);
    input.delete_line_by_end();
    if rows > 1 {
        if row + 1 < rows {
            input.delete_next_char();
        } else {
            input.delete_char();
            input.move_cursor(CursorMove::Head);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn text(t: &TextArea<'static>) -> String {
        t.lines().join("\n")
    }

    #[test]
    fn normal_mode_moves_deletes_and_enters_insert_mode() {
        let mut t = TextArea::default();
        t.insert_str("one two three");
        let mut vi = Vi::default();
        vi.escape(&mut t);
        assert!(vi.normal);
        assert_eq!(t.cursor(), (0, 12));
        for c in ['0', 'w'] {
            assert_eq!(vi.key(k(c), &mut t), Outcome::Done);
        }
        assert_eq!(t.cursor(), (0, 4));
        vi.key(k('x'), &mut t);
        assert_eq!(text(&t), "one wo three");
        vi.key(k('D'), &mut t);
        assert_eq!(text(&t), "one ");
        vi.key(k('b'), &mut t);
        vi.key(k('l'), &mut t);
        vi.key(k('h'), &mut t);
        assert_eq!(t.cursor(), (0, 0));
        vi.key(k('A'), &mut t);
        assert!(!vi.normal);
        assert_eq!(t.cursor(), (0, 4));
        vi.escape(&mut t);
        vi.key(k('d'), &mut t);
        assert_eq!(text(&t), "one ", "one d waits for the second");
        vi.key(k('d'), &mut t);
        assert_eq!(text(&t), "");
        assert_eq!(vi.key(k('k'), &mut t), Outcome::HistoryPrev);
        assert_eq!(
            vi.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), &mut t),
            Outcome::Pass
        );
        assert_eq!(
            vi.key(
                KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                &mut t
            ),
            Outcome::Pass
        );
    }

    #[test]
    fn dd_takes_one_line_of_several() {
        let mut t = TextArea::default();
        t.insert_str("first\nsecond\nthird");
        let mut vi = Vi::default();
        vi.escape(&mut t);
        vi.key(k('d'), &mut t);
        vi.key(k('d'), &mut t);
        assert_eq!(text(&t), "first\nsecond");
        t.move_cursor(CursorMove::Top);
        vi.key(k('d'), &mut t);
        vi.key(k('d'), &mut t);
        assert_eq!(text(&t), "second");
    }
}
