//! `editMode: vi` in the input box: Esc leaves insert mode (when no turn
//! runs; during a turn it interrupts, as in emacs mode), and normal mode
//! takes a small set of vi's keys. Keys with Ctrl or Alt, Enter, Esc and
//! the arrows keep their usual meaning in both modes.
//!
//! | key (normal mode) | action |
//! |---|---|
//! | h / l, 0 / $, w / b / e | a character left / right, start / end of the line, a word on / back / to its end |
//! | i / a, I / A, o / O | insert before / after the cursor, at the start / the end of the line, on a new line below / above |
//! | x, D, dd | delete the character, to the end of the line, the whole line |
//! | d with w, b, e, $, 0 | delete a word on / back / to its end, to the end / the start of the line |
//! | s, C, S or cc, c with a motion | delete like x, D, dd or d, then insert |
//! | p, u | put what the last delete took, undo |
//! | k / j | previous / next question from the history |

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea};

/// The vi state of the input box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vi {
    /// In normal mode (else insert mode).
    pub normal: bool,
    /// `d` or `c` was pressed: the next key says what it takes.
    pending: Option<char>,
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
        self.pending = None;
        // Never back onto the line above (an empty line keeps column 0).
        if input.cursor().1 > 0 {
            input.move_cursor(CursorMove::Back);
        }
    }

    /// Back to insert mode (after a line is sent).
    pub fn insert(&mut self) {
        self.normal = false;
        self.pending = None;
    }

    /// A key in normal mode.
    pub fn key(&mut self, key: KeyEvent, input: &mut TextArea<'static>) -> Outcome {
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            self.pending = None;
            return Outcome::Pass;
        }
        let KeyCode::Char(c) = key.code else {
            self.pending = None;
            return Outcome::Pass;
        };
        if let Some(op) = self.pending.take() {
            // The second key of `dd`, `cc`, `dw`, `c$` …; anything else
            // cancels the operator.
            match c {
                'd' | 'c' if c == op && op == 'c' => clear_line(input),
                'd' if op == 'd' => delete_line(input),
                // `cw` changes the word, not the space after it (as vi's `ce`).
                'w' if op == 'c' => delete_over(input, CursorMove::WordEnd, true),
                'w' => delete_over(input, CursorMove::WordForward, false),
                'e' => delete_over(input, CursorMove::WordEnd, true),
                'b' => delete_over(input, CursorMove::WordBack, false),
                '$' => _ = input.delete_line_by_end(),
                '0' => _ = input.delete_line_by_head(),
                _ => return Outcome::Done,
            }
            if op == 'c' {
                self.normal = false;
            }
            return Outcome::Done;
        }
        match c {
            // h and l stay on the line, as in vi.
            'h' if input.cursor().1 > 0 => input.move_cursor(CursorMove::Back),
            'l' if input.cursor().1 + 1 < line_len(input) => input.move_cursor(CursorMove::Forward),
            '0' => input.move_cursor(CursorMove::Head),
            '$' => {
                // On the last character, as vi's normal mode has it.
                input.move_cursor(CursorMove::End);
                if input.cursor().1 > 0 {
                    input.move_cursor(CursorMove::Back);
                }
            }
            'w' => input.move_cursor(CursorMove::WordForward),
            'b' => input.move_cursor(CursorMove::WordBack),
            'e' => input.move_cursor(CursorMove::WordEnd),
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
            'o' => {
                input.move_cursor(CursorMove::End);
                input.insert_newline();
                self.normal = false;
            }
            'O' => {
                input.move_cursor(CursorMove::Head);
                input.insert_newline();
                input.move_cursor(CursorMove::Up);
                self.normal = false;
            }
            'x' => {
                input.delete_next_char();
            }
            's' => {
                input.delete_next_char();
                self.normal = false;
            }
            'D' => {
                input.delete_line_by_end();
            }
            'C' => {
                input.delete_line_by_end();
                self.normal = false;
            }
            'S' => {
                clear_line(input);
                self.normal = false;
            }
            'd' | 'c' => self.pending = Some(c),
            'p' => {
                // After the cursor's character, as vi puts.
                if input.cursor().1 < line_len(input) {
                    input.move_cursor(CursorMove::Forward);
                }
                input.paste();
            }
            'u' => {
                input.undo();
            }
            'k' => return Outcome::HistoryPrev,
            'j' => return Outcome::HistoryNext,
            // Other printable keys do nothing in normal mode (they are not
            // typed into the question).
            _ => {}
        }
        Outcome::Done
    }
}

/// Characters on the cursor's line.
fn line_len(input: &TextArea<'static>) -> usize {
    input
        .lines()
        .get(input.cursor().0)
        .map_or(0, |l| l.chars().count())
}

/// `dw`, `de`, `db`: what the cursor passes over on `motion` goes (with
/// the character it lands on when `inclusive`, as vi's `e`), and becomes
/// what `p` puts.
fn delete_over(input: &mut TextArea<'static>, motion: CursorMove, inclusive: bool) {
    let start = input.cursor();
    input.start_selection();
    input.move_cursor(motion);
    if inclusive {
        input.move_cursor(CursorMove::Forward);
    }
    if input.cursor() == start {
        input.cancel_selection();
    } else {
        input.cut();
    }
}

/// `S`, `cc`: the cursor's line is emptied, the line itself stays.
fn clear_line(input: &mut TextArea<'static>) {
    input.move_cursor(CursorMove::Head);
    input.delete_line_by_end();
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
    fn operators_with_motions_change_put_and_undo() {
        let keys = |vi: &mut Vi, t: &mut TextArea<'static>, ks: &str| {
            for c in ks.chars() {
                vi.key(k(c), t);
            }
        };
        let mut t = TextArea::default();
        t.insert_str("one two three");
        let mut vi = Vi::default();
        vi.escape(&mut t);
        keys(&mut vi, &mut t, "0dw");
        assert_eq!(text(&t), "two three");
        keys(&mut vi, &mut t, "de");
        assert_eq!(text(&t), " three");
        keys(&mut vi, &mut t, "u");
        assert_eq!(text(&t), "two three", "u takes the last change back");
        keys(&mut vi, &mut t, "$d0");
        assert_eq!(text(&t), "e");
        keys(&mut vi, &mut t, "u0");
        assert!(vi.normal);
        keys(&mut vi, &mut t, "cw");
        assert!(!vi.normal, "c leaves normal mode");
        t.insert_str("2");
        assert_eq!(text(&t), "2 three", "cw keeps the space after the word");
        vi.escape(&mut t);
        keys(&mut vi, &mut t, "$p");
        assert_eq!(text(&t), "2 threetwo", "p puts what the last delete took");
        keys(&mut vi, &mut t, "S");
        assert!(!vi.normal);
        assert_eq!(text(&t), "");
        t.insert_str("ask");
        vi.escape(&mut t);
        keys(&mut vi, &mut t, "o");
        assert!(!vi.normal);
        assert_eq!(text(&t), "ask\n");
        vi.escape(&mut t);
        keys(&mut vi, &mut t, "dz");
        assert_eq!(text(&t), "ask\n", "an unknown second key cancels d");
        assert_eq!(t.cursor(), (1, 0), "Esc on an empty line stays on it");
        keys(&mut vi, &mut t, "hO");
        assert_eq!(text(&t), "ask\n\n", "O opens a line above");
        assert_eq!(t.cursor(), (1, 0));
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
