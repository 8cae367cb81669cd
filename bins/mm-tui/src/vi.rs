//! `editMode: vi` in the input box: Esc leaves insert mode (when no turn
//! runs; during a turn it interrupts, as in emacs mode), and normal mode
//! takes vi's keys for one question. Keys with Ctrl or Alt, Enter and the
//! arrows keep their usual meaning in every mode.
//!
//! | key (normal mode) | action |
//! |---|---|
//! | h / l, 0 / ^ / $ | a character left / right; start / first non-blank / end of the line |
//! | w / b / e, f / F / t / T + char, ; / , | a word on / back / to its end; to (or before) a character on the line, forward / back; that search again / reversed |
//! | gg / G | the first / last line (with a count: that line) |
//! | k / j | the line above / below; on the first / last line, the previous / next question from the history |
//! | i / a, I / A, o / O | insert before / after the cursor, at the start / end of the line, on a new line below / above |
//! | x, X, D, s, C, S, r + char, ~ | delete under / before the cursor, to the end of the line; the same then insert; replace; switch case |
//! | d / c / y + motion, dd / cc / yy | delete / change / copy what a motion passes over, or whole lines |
//! | d / c / y + i or a + w W " ' ` ( ) b [ ] { } B < > | a text object: the word, quoted text or bracketed text the cursor is in (i: inside, a: with the quotes, brackets or the space after) |
//! | p / P, u | put what the last delete or copy took after / before the cursor (whole lines below / above), undo |
//! | v | visual mode: motions and text objects select, d x c s y act on the selection, o goes to its other end, v or Esc leaves |
//!
//! A count before a command or a motion repeats it: `3w`, `2dd`, `d2w`,
//! `5x`, `3p`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea};

/// A (row, column) in the box, columns counted in characters.
type Pos = (usize, usize);

/// Counts stop here: a held key makes a number, not a freeze.
const MAX_COUNT: usize = 9999;

/// The vi state of the input box.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vi {
    /// In normal mode (else insert mode).
    pub normal: bool,
    /// In visual mode (a part of normal mode): motions grow a selection.
    pub visual: bool,
    /// The command typed so far.
    pending: Pending,
    /// The last `f`/`F`/`t`/`T` and its character, for `;` and `,`.
    last_find: Option<(char, char)>,
    /// Characters in the copy the last whole-line delete or copy made:
    /// while the copy still has that length, `p` puts lines.
    line_copy: Option<usize>,
    /// The last change was `r` or `~`, two edits of the box (a delete and
    /// an insert): `u` takes both back.
    paired: bool,
}

/// The keys of an unfinished command: `3`, `d`, `d2`, `di`, `f`, `g`, `r`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pending {
    /// The count typed before the command (0: none).
    count: usize,
    /// `d`, `c` or `y`, waiting for what it takes.
    op: Option<char>,
    /// The count typed after the operator (`d2w`).
    op_count: usize,
    /// A key that needs one more: `f` `F` `t` `T` `r` `g`, or `i`/`a`
    /// (a text object after an operator or in visual mode).
    prefix: Option<char>,
}

impl Pending {
    /// How many times the command runs: both counts multiply, as in vi.
    fn times(&self) -> usize {
        (self.count.max(1) * self.op_count.max(1)).min(MAX_COUNT)
    }

    /// A count was typed.
    fn counted(&self) -> bool {
        self.count > 0 || self.op_count > 0
    }
}

/// Where a motion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Motion {
    Left,
    Right,
    Head,
    FirstNonBlank,
    End,
    /// `w` (`W` when true: blank-separated WORDs).
    WordForward(bool),
    /// `b` / `B`.
    WordBack(bool),
    /// `e` / `E`.
    WordEnd(bool),
    /// `f`/`F`/`t`/`T` and the character.
    Find(char, char),
    /// `gg` (and `G` with a count): a line, counted from 1.
    Line(Option<usize>),
    /// `G` without a count.
    LastLine,
    Up,
    Down,
}

impl Motion {
    /// An operator over it takes the character it lands on too.
    fn inclusive(self) -> bool {
        matches!(self, Motion::WordEnd(_))
            || matches!(self, Motion::Find(k, _) if k == 'f' || k == 't')
    }

    /// An operator over it takes whole lines.
    fn linewise(self) -> bool {
        matches!(
            self,
            Motion::Line(_) | Motion::LastLine | Motion::Up | Motion::Down
        )
    }
}

/// What a key did in normal mode, beyond editing the box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The key was vi's; nothing more to do.
    Done,
    /// `k` on the first line: the previous question from the history.
    HistoryPrev,
    /// `j` on the last line: the next question.
    HistoryNext,
    /// Not vi's: the key keeps its usual meaning.
    Pass,
}

impl Vi {
    /// Esc in insert mode: normal mode, the cursor on the last character
    /// typed (as vi does).
    pub fn escape(&mut self, input: &mut TextArea<'static>) {
        self.normal = true;
        // What was typed is the last change now.
        self.paired = false;
        self.leave_visual(input);
        // Never back onto the line above (an empty line keeps column 0).
        if at(input).1 > 0 {
            input.move_cursor(CursorMove::Back);
        }
    }

    /// Back to insert mode (after a line is sent).
    pub fn insert(&mut self) {
        self.normal = false;
        self.visual = false;
        self.pending = Pending::default();
    }

    /// A key in normal mode.
    pub fn key(&mut self, key: KeyEvent, input: &mut TextArea<'static>) -> Outcome {
        let pending = std::mem::take(&mut self.pending);
        // The selection went some other way (an arrow, Ctrl-C, a recalled
        // question): so did visual mode.
        self.visual &= input.is_selecting();
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Outcome::Pass;
        }
        let c = match key.code {
            KeyCode::Char(c) => c,
            // Esc leaves visual mode, or drops a half-typed command.
            KeyCode::Esc if self.visual || pending != Pending::default() => {
                self.leave_visual(input);
                return Outcome::Done;
            }
            _ => return Outcome::Pass,
        };
        let outcome = self.command(c, pending, input);
        if self.normal && self.pending == Pending::default() {
            rest_on_a_character(input);
        }
        outcome
    }

    fn command(&mut self, c: char, mut p: Pending, input: &mut TextArea<'static>) -> Outcome {
        if let Some(prefix) = p.prefix.take() {
            return self.second_key(prefix, c, p, input);
        }
        // A count: `0` is one only after another digit.
        let typed = if p.op.is_some() {
            &mut p.op_count
        } else {
            &mut p.count
        };
        if let Some(d) = c.to_digit(10).filter(|d| *d > 0 || *typed > 0) {
            *typed = (*typed * 10 + d as usize).min(MAX_COUNT);
            self.pending = p;
            return Outcome::Done;
        }
        let motion = match c {
            'h' => Some(Motion::Left),
            'l' | ' ' => Some(Motion::Right),
            '0' => Some(Motion::Head),
            '^' => Some(Motion::FirstNonBlank),
            '$' => Some(Motion::End),
            'w' | 'W' => Some(Motion::WordForward(c == 'W')),
            'b' | 'B' => Some(Motion::WordBack(c == 'B')),
            'e' | 'E' => Some(Motion::WordEnd(c == 'E')),
            'G' if p.counted() => Some(Motion::Line(Some(p.times()))),
            'G' => Some(Motion::LastLine),
            ';' | ',' => self.last_find.map(|(kind, ch)| {
                let kind = if c == ',' { reversed(kind) } else { kind };
                Motion::Find(kind, ch)
            }),
            'k' if p.op.is_some() || self.visual => Some(Motion::Up),
            'j' if p.op.is_some() || self.visual => Some(Motion::Down),
            _ => None,
        };
        if let Some(m) = motion {
            // `;` after `t` must not stay before the same character.
            let again = matches!(c, ';' | ',');
            self.motion(m, p, again, input);
            return Outcome::Done;
        }
        let takes_object = p.op.is_some() || self.visual;
        if matches!(c, 'f' | 'F' | 't' | 'T' | 'g') || (takes_object && matches!(c, 'i' | 'a')) {
            p.prefix = Some(c);
            self.pending = p;
            return Outcome::Done;
        }
        if let Some(op) = p.op {
            // `dd`, `cc`, `yy` take lines; anything else cancels the operator.
            if c == op {
                let row = at(input).0;
                self.take_lines(op, row, row + p.times() - 1, input);
            }
            return Outcome::Done;
        }
        if self.visual {
            self.visual_key(c, input);
            return Outcome::Done;
        }
        self.normal_key(c, p, input)
    }

    /// The key after `f`, `t`, `r`, `g`, or `i`/`a` for a text object.
    fn second_key(
        &mut self,
        prefix: char,
        c: char,
        p: Pending,
        input: &mut TextArea<'static>,
    ) -> Outcome {
        match prefix {
            'f' | 'F' | 't' | 'T' => {
                self.last_find = Some((prefix, c));
                self.motion(Motion::Find(prefix, c), p, false, input);
            }
            'g' if c == 'g' => {
                let line = p.counted().then(|| p.times());
                self.motion(Motion::Line(line), p, false, input);
            }
            'r' => self.paired |= replace(input, c, p.count.max(1)),
            'i' | 'a' => {
                let Some((start, end)) = object(input, c, prefix == 'a', p.times()) else {
                    // `ciw` on an empty line: nothing to take, type there.
                    if p.op == Some('c') && matches!(c, 'w' | 'W') && line_len(input) == 0 {
                        self.normal = false;
                    }
                    return Outcome::Done;
                };
                if let Some(op) = p.op {
                    // `ci{` over whole lines leaves one empty line to type on.
                    let end = if op == 'c' && start.1 == 0 && end.1 == 0 && end.0 > start.0 {
                        (end.0 - 1, line_len_at(input, end.0 - 1))
                    } else {
                        end
                    };
                    if start == end && op == 'c' {
                        // `ci(` on `()`: type inside.
                        jump(input, start);
                        self.normal = false;
                    } else {
                        self.take(op, start, end, input);
                    }
                } else if start != end {
                    // Visual mode: the object becomes the selection.
                    input.cancel_selection();
                    jump(input, start);
                    input.start_selection();
                    jump(input, before(input, end));
                }
            }
            _ => {}
        }
        Outcome::Done
    }

    /// Move, grow the selection, or run the operator over the motion.
    fn motion(&mut self, m: Motion, p: Pending, again: bool, input: &mut TextArea<'static>) {
        let n = p.times();
        let start = at(input);
        let Some(op) = p.op else {
            if let Some(to) = target(input, m, n, again) {
                jump(input, to);
            }
            return;
        };
        if m.linewise() {
            if let Some(to) = target(input, m, n, again) {
                let (a, b) = (start.0.min(to.0), start.0.max(to.0));
                self.take_lines(op, a, b, input);
            }
            return;
        }
        // `cw` changes the word, not the space after it (as vi's `ce`,
        // but a one-letter word is its own end).
        let end = match m {
            Motion::WordForward(big) if op == 'c' && !on_blank(input) => {
                Some(change_word_end(input, n, big))
            }
            // The last word an operator's `w` passes stops at its line's
            // end: `dw` on a line's last word leaves the line break.
            Motion::WordForward(big) => Some(operator_word_end(input, n, big)),
            _ => match target(input, m, n, again) {
                Some(to) if m.inclusive() && to >= start => {
                    Some((to.0, (to.1 + 1).min(line_len_at(input, to.0))))
                }
                to => to,
            },
        };
        if let Some(end) = end {
            self.take(op, start, end, input);
        }
    }

    /// A key of normal mode that is neither a count, a motion nor an
    /// operator's second key.
    fn normal_key(&mut self, c: char, p: Pending, input: &mut TextArea<'static>) -> Outcome {
        let n = p.count.max(1);
        let (row, col) = at(input);
        let len = line_len(input);
        match c {
            // Lines of the question as written (not as wrapped on
            // screen); past the first or the last, the history.
            'k' if row == 0 => return Outcome::HistoryPrev,
            'j' if row + 1 >= input.lines().len() => return Outcome::HistoryNext,
            'k' => jump(input, (row.saturating_sub(n), col)),
            'j' => jump(input, ((row + n).min(input.lines().len() - 1), col)),
            'i' => self.normal = false,
            'a' => {
                // Never onto the next line.
                if col < len {
                    input.move_cursor(CursorMove::Forward);
                }
                self.normal = false;
            }
            'I' => {
                jump(input, (row, first_non_blank(input, row)));
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
            'x' | 's' => {
                self.take('d', (row, col), (row, (col + n).min(len)), input);
                self.normal = c == 'x';
            }
            'X' => self.take('d', (row, col.saturating_sub(n)), (row, col), input),
            'D' | 'C' => {
                // With a count, the lines below go too.
                let last = (row + n - 1).min(input.lines().len() - 1);
                self.take('d', (row, col), (last, line_len_at(input, last)), input);
                self.normal = c == 'D';
            }
            'S' => self.take_lines('c', row, row + n - 1, input),
            'Y' => self.take_lines('y', row, row + n - 1, input),
            '~' => self.paired |= switch_case(input, n),
            'r' => {
                self.pending = Pending {
                    prefix: Some('r'),
                    ..p
                };
            }
            'd' | 'c' | 'y' => {
                self.pending = Pending { op: Some(c), ..p };
            }
            'p' | 'P' => self.put(c == 'p', n, input),
            'u' => {
                if std::mem::take(&mut self.paired) {
                    input.undo();
                }
                for _ in 0..n {
                    input.undo();
                }
            }
            'v' => {
                self.visual = true;
                input.start_selection();
            }
            // Other printable keys do nothing in normal mode (they are not
            // typed into the question).
            _ => {}
        }
        Outcome::Done
    }

    /// A key of visual mode that is not a motion.
    fn visual_key(&mut self, c: char, input: &mut TextArea<'static>) {
        let Some((a, b)) = input.selection_range() else {
            // The selection went (an undo, a click): visual mode ends.
            self.visual = false;
            return;
        };
        // The character under the cursor is selected too, as in vi.
        let end = (b.0, (b.1 + 1).min(line_len_at(input, b.0)));
        match c {
            'd' | 'x' => self.take('d', a, end, input),
            'c' | 's' => self.take('c', a, end, input),
            'y' => self.take('y', a, end, input),
            'o' => {
                // The cursor goes to the selection's other end.
                let cursor = at(input);
                let other = if cursor == a { b } else { a };
                input.cancel_selection();
                jump(input, cursor);
                input.start_selection();
                jump(input, other);
                return;
            }
            'v' => {}
            _ => return,
        }
        self.leave_visual(input);
    }

    /// Delete (`d`, `c`) or copy (`y`) from one position up to another
    /// (either order, the later one excluded).
    fn take(&mut self, op: char, a: Pos, b: Pos, input: &mut TextArea<'static>) {
        let (start, end) = (a.min(b), a.max(b));
        self.paired &= op == 'y';
        input.cancel_selection();
        if start != end {
            jump(input, start);
            input.start_selection();
            jump(input, end);
            if op == 'y' {
                input.copy();
            } else {
                input.cut();
            }
            self.line_copy = None;
            // Whole lines taken (`di{` over lines): `p` puts them as lines.
            if start.1 == 0 && end.1 == 0 && end.0 > start.0 {
                let mut lines = input.yank_text();
                lines.pop();
                self.line_copy = Some(lines.chars().count());
                input.set_yank_text(lines);
            }
        }
        jump(input, start);
        self.visual = false;
        if op == 'c' {
            self.normal = false;
        }
    }

    /// `dd`, `cc`, `yy` and an operator over a line motion: lines
    /// `first..=last` (past the end: to the last line).
    fn take_lines(&mut self, op: char, first: usize, last: usize, input: &mut TextArea<'static>) {
        let rows = input.lines().len();
        let last = last.min(rows - 1);
        let text = input.lines()[first..=last].join("\n");
        let end_of_last = (last, line_len_at(input, last));
        match op {
            'y' => {
                input.cancel_selection();
                self.visual = false;
                jump(input, (first, at(input).1));
            }
            // The lines are emptied into one, which stays.
            'c' => self.take('c', (first, 0), end_of_last, input),
            _ if last + 1 < rows => self.take('d', (first, 0), (last + 1, 0), input),
            _ if first > 0 => {
                self.take(
                    'd',
                    (first - 1, line_len_at(input, first - 1)),
                    end_of_last,
                    input,
                );
                jump(input, (first - 1, 0));
            }
            _ => self.take('d', (0, 0), end_of_last, input),
        }
        if op == 'd' {
            let row = at(input).0;
            jump(input, (row, first_non_blank(input, row)));
        }
        self.line_copy = Some(text.chars().count());
        input.set_yank_text(text);
    }

    /// `p` / `P`: what the last delete or copy took, `n` times.
    fn put(&mut self, after: bool, n: usize, input: &mut TextArea<'static>) {
        self.paired = false;
        let copy = input.yank_text();
        // An empty line copied is still a line to put.
        if copy.is_empty() && self.line_copy != Some(0) {
            return;
        }
        let (row, col) = at(input);
        if self.line_copy == Some(copy.chars().count()) {
            let lines = vec![copy.as_str(); n].join("\n");
            if after {
                jump(input, (row, line_len(input)));
                input.insert_str(format!("\n{lines}"));
                jump(input, (row + 1, first_non_blank(input, row + 1)));
            } else {
                jump(input, (row, 0));
                input.insert_str(format!("{lines}\n"));
                jump(input, (row, first_non_blank(input, row)));
            }
            return;
        }
        // After the cursor's character, as vi puts.
        if after && col < line_len(input) {
            input.move_cursor(CursorMove::Forward);
        }
        input.insert_str(copy.repeat(n));
        // On the last character put.
        input.move_cursor(CursorMove::Back);
    }

    fn leave_visual(&mut self, input: &mut TextArea<'static>) {
        self.visual = false;
        self.pending = Pending::default();
        input.cancel_selection();
    }
}

/// `;` reversed: `,`.
fn reversed(kind: char) -> char {
    match kind {
        'f' => 'F',
        'F' => 'f',
        't' => 'T',
        _ => 't',
    }
}

/// Where motion `m` taken `n` times from the cursor lands; `None` when it
/// cannot (an `f` whose character is not there).
fn target(input: &TextArea<'static>, m: Motion, n: usize, again: bool) -> Option<Pos> {
    let (row, col) = at(input);
    let rows = input.lines().len();
    let line: Vec<char> = input.lines()[row].chars().collect();
    let pos = match m {
        Motion::Left => (row, col.saturating_sub(n)),
        // `l` stays on the line (the cursor then rests on its last
        // character; `dl` there takes it).
        Motion::Right => (row, (col + n).min(line.len())),
        Motion::Head => (row, 0),
        Motion::FirstNonBlank => (row, first_non_blank(input, row)),
        // One past the last character: an operator takes to the end; the
        // cursor itself then rests on the last one.
        Motion::End => {
            let last = (row + n - 1).min(rows - 1);
            (last, line_len_at(input, last))
        }
        Motion::WordForward(big) | Motion::WordBack(big) | Motion::WordEnd(big) => {
            let text = joined(input);
            let mut i = index_of(input, (row, col));
            for _ in 0..n {
                i = match m {
                    Motion::WordForward(_) => word_forward(&text, i, big),
                    Motion::WordBack(_) => word_back(&text, i, big),
                    _ => word_end(&text, i, big),
                };
            }
            position(&text, i)
        }
        Motion::Find(kind, ch) => (row, find(&line, col, kind, ch, n, again)?),
        Motion::Line(line) => {
            let r = line.unwrap_or(1).clamp(1, rows) - 1;
            (r, first_non_blank(input, r))
        }
        Motion::LastLine => (rows - 1, first_non_blank(input, rows - 1)),
        Motion::Up => (row.checked_sub(n)?, col),
        Motion::Down => (Some(row + n).filter(|r| *r < rows)?, col),
    };
    Some(pos)
}

/// The column an `f`/`F`/`t`/`T` for `ch` reaches from `col` on `line`.
fn find(line: &[char], col: usize, kind: char, ch: char, n: usize, again: bool) -> Option<usize> {
    let forward = matches!(kind, 'f' | 't');
    let till = matches!(kind, 't' | 'T');
    // Repeating a `t` must pass the character it stopped before.
    let skip = usize::from(till && again);
    let mut at = col;
    for i in 0..n {
        let from = if i == 0 { skip } else { 0 };
        at = if forward {
            (at + 1 + from..line.len()).find(|&c| line[c] == ch)?
        } else {
            (0..at.checked_sub(from)?).rev().find(|&c| line[c] == ch)?
        };
    }
    Some(match (forward, till) {
        (true, true) => at - 1,
        (false, true) => at + 1,
        _ => at,
    })
}

/// The exclusive end of `cw` with count `n`: the end of the word (or run
/// of punctuation) under the cursor, then of the next `n - 1` ones.
fn change_word_end(input: &TextArea<'static>, n: usize, big: bool) -> Pos {
    let (row, col) = at(input);
    let line: Vec<char> = input.lines()[row].chars().collect();
    let mut end = col;
    for i in 0..n {
        if i > 0 {
            while end < line.len() && line[end].is_whitespace() {
                end += 1;
            }
        }
        let Some(&first) = line.get(end) else { break };
        let kind = word_kind(first, big);
        while end < line.len() && word_kind(line[end], big) == kind {
            end += 1;
        }
    }
    (row, end)
}

/// A character's class for words: 0 space, 1 word characters, 2 others.
fn class(c: char) -> u8 {
    if c.is_whitespace() {
        0
    } else if c.is_alphanumeric() || c == '_' {
        1
    } else {
        2
    }
}

/// A character's class for `w` (`class`) or for `W` (0 blank, 1 else).
fn word_kind(c: char, big: bool) -> u8 {
    match class(c) {
        0 => 0,
        _ if big => 1,
        k => k,
    }
}

/// vi's `w` from index `i` of the box's text: past the word (or run of
/// punctuation) under the cursor, then past blanks and line breaks; an
/// empty line is a stop of its own.
fn word_forward(t: &[char], mut i: usize, big: bool) -> usize {
    let Some(&c) = t.get(i) else { return t.len() };
    let k = word_kind(c, big);
    if k != 0 {
        while i < t.len() && word_kind(t[i], big) == k {
            i += 1;
        }
    }
    while i < t.len() && word_kind(t[i], big) == 0 {
        if t[i] == '\n' && t.get(i + 1) == Some(&'\n') {
            return i + 1;
        }
        i += 1;
    }
    i
}

/// vi's `e`: to the last character of this word, or of the next one.
fn word_end(t: &[char], i: usize, big: bool) -> usize {
    let mut i = i + 1;
    while i < t.len() && word_kind(t[i], big) == 0 {
        i += 1;
    }
    let Some(&c) = t.get(i) else {
        return t.len().saturating_sub(1);
    };
    let k = word_kind(c, big);
    while i + 1 < t.len() && word_kind(t[i + 1], big) == k {
        i += 1;
    }
    i
}

/// vi's `b`: to the first character of this word, or of the one before;
/// an empty line is a stop of its own.
fn word_back(t: &[char], i: usize, big: bool) -> usize {
    let Some(mut i) = i.checked_sub(1) else {
        return 0;
    };
    while i > 0 && word_kind(t[i], big) == 0 {
        if t[i] == '\n' && t[i - 1] == '\n' {
            return i;
        }
        i -= 1;
    }
    let k = word_kind(t[i], big);
    while i > 0 && word_kind(t[i - 1], big) == k {
        i -= 1;
    }
    i
}

/// Where an operator's `w` (`dw`, `y3w`) ends: `n - 1` words on, then
/// past one more word and the blanks after it, but never past the end of
/// that word's line.
fn operator_word_end(input: &TextArea<'static>, n: usize, big: bool) -> Pos {
    let text = joined(input);
    let mut i = index_of(input, at(input));
    for _ in 1..n {
        i = word_forward(&text, i, big);
    }
    if let Some(&c) = text.get(i) {
        let k = word_kind(c, big);
        if k != 0 {
            while i < text.len() && word_kind(text[i], big) == k {
                i += 1;
            }
        }
        while i < text.len() && text[i] != '\n' && word_kind(text[i], big) == 0 {
            i += 1;
        }
    }
    position(&text, i)
}

/// The box's text, lines joined by line breaks.
fn joined(input: &TextArea<'static>) -> Vec<char> {
    input.lines().join("\n").chars().collect()
}

/// The index in [`joined`] text of a (row, column).
fn index_of(input: &TextArea<'static>, (row, col): Pos) -> usize {
    input.lines()[..row]
        .iter()
        .map(|l| l.chars().count() + 1)
        .sum::<usize>()
        + col
}

/// A text object around the cursor, as a range (the end excluded): `w`/`W`
/// (a word or WORD), a quote, or a bracket pair (`count` levels out).
fn object(input: &TextArea<'static>, kind: char, around: bool, count: usize) -> Option<(Pos, Pos)> {
    let (row, col) = at(input);
    let line: Vec<char> = input.lines()[row].chars().collect();
    match kind {
        'w' | 'W' => {
            let big = kind == 'W';
            let k = |i: usize| word_kind(line[i], big);
            // The run of one kind (word, punctuation, blanks) at `i`.
            let start_of = |i: usize| {
                let mut a = i;
                while a > 0 && k(a - 1) == k(i) {
                    a -= 1;
                }
                a
            };
            let end_of = |i: usize| {
                let mut b = i;
                while b < line.len() && k(b) == k(i) {
                    b += 1;
                }
                b
            };
            if line.is_empty() {
                return None;
            }
            let col = col.min(line.len() - 1);
            let mut a = start_of(col);
            let mut b = col;
            if !around {
                // `iw`: the run, and with a count the runs after it.
                for _ in 0..count {
                    if b < line.len() {
                        b = end_of(b);
                    }
                }
                return Some(((row, a), (row, b)));
            }
            // `aw`: a word and the blanks after it (from blanks: the
            // blanks and the word after them), `count` times.
            let from_blank = k(col) == 0;
            for _ in 0..count {
                if b >= line.len() {
                    break;
                }
                b = end_of(b);
                if b < line.len() && (from_blank || k(b) == 0) {
                    b = end_of(b);
                }
            }
            // A word with no blank after it takes the blanks before it.
            if !from_blank && k(b - 1) != 0 && a > 0 && k(a - 1) == 0 {
                a = start_of(a - 1);
            }
            Some(((row, a), (row, b)))
        }
        '"' | '\'' | '`' => {
            let quotes: Vec<usize> = (0..line.len()).filter(|&i| line[i] == kind).collect();
            let before = quotes.iter().filter(|&&q| q < col).count();
            let on = line.get(col) == Some(&kind);
            // The pair the cursor is in, or on, or the first after it.
            let (open, close) = if on && before % 2 == 1 {
                (quotes[before - 1], col)
            } else if on || before % 2 == 0 {
                let open = *quotes.get(before)?;
                (open, *quotes.get(before + 1)?)
            } else {
                (quotes[before - 1], *quotes.get(before)?)
            };
            if around {
                let mut end = close + 1;
                while end < line.len() && line[end].is_whitespace() {
                    end += 1;
                }
                Some(((row, open), (row, end)))
            } else {
                Some(((row, open + 1), (row, close)))
            }
        }
        _ => {
            let (open, close) = match kind {
                '(' | ')' | 'b' => ('(', ')'),
                '[' | ']' => ('[', ']'),
                '{' | '}' | 'B' => ('{', '}'),
                '<' | '>' => ('<', '>'),
                _ => return None,
            };
            bracketed(input, open, close, count, around)
        }
    }
}

/// The `count`-th bracket pair around the cursor, over lines.
fn bracketed(
    input: &TextArea<'static>,
    open: char,
    close: char,
    count: usize,
    around: bool,
) -> Option<(Pos, Pos)> {
    let text = joined(input);
    let at = index_of(input, at(input));
    // On an opening bracket, that pair; else the open one before.
    let mut start = if text.get(at) == Some(&open) {
        at + 1
    } else {
        at
    };
    let mut pair = None;
    for _ in 0..count {
        let o = unmatched(&text, (0..start).rev(), open, close)?;
        let c = unmatched(&text, o + 1..text.len(), close, open)?;
        pair = Some((o, c));
        start = o;
    }
    let (o, c) = pair?;
    let (a, b) = if around {
        (o, c + 1)
    } else {
        // A block written over lines (`{` ending its line, `}` alone on
        // its own): the lines inside, whole, as vim takes them.
        let last_break = text[o + 1..c].iter().rposition(|ch| *ch == '\n');
        match last_break.map(|i| o + 1 + i) {
            Some(nl)
                if text[o + 1] == '\n'
                    && nl > o + 1
                    && text[nl + 1..c].iter().all(|ch| ch.is_whitespace()) =>
            {
                (o + 2, nl + 1)
            }
            _ => (o + 1, c),
        }
    };
    Some((position(&text, a), position(&text, b)))
}

/// The first `want` over `indices` that no `nested` before it pairs
/// with: the bracket that closes (or opens) the one the search left.
fn unmatched(
    text: &[char],
    indices: impl Iterator<Item = usize>,
    want: char,
    nested: char,
) -> Option<usize> {
    let mut depth = 0usize;
    for i in indices {
        if text[i] == nested {
            depth += 1;
        } else if text[i] == want {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        }
    }
    None
}

/// The (row, column) of a character index in the box's joined text.
fn position(text: &[char], index: usize) -> Pos {
    let before = &text[..index.min(text.len())];
    let row = before.iter().filter(|c| **c == '\n').count();
    let col = before.iter().rev().take_while(|c| **c != '\n').count();
    (row, col)
}

/// The position just before `pos` on its line (a selection's last character).
fn before(input: &TextArea<'static>, pos: Pos) -> Pos {
    if pos.1 > 0 {
        (pos.0, pos.1 - 1)
    } else if pos.0 > 0 {
        (pos.0 - 1, line_len_at(input, pos.0 - 1))
    } else {
        pos
    }
}

/// `r`: the `n` characters from the cursor become `ch` (none when the
/// line is shorter, as in vi); whether they did.
fn replace(input: &mut TextArea<'static>, ch: char, n: usize) -> bool {
    let (row, col) = at(input);
    if col + n > line_len(input) {
        return false;
    }
    overwrite(input, (row, col), col + n, &ch.to_string().repeat(n));
    jump(input, (row, col + n - 1));
    true
}

/// `~`: the case of `n` characters switches, the cursor passes them;
/// whether any did.
fn switch_case(input: &mut TextArea<'static>, n: usize) -> bool {
    let (row, col) = at(input);
    let line: Vec<char> = input.lines()[row].chars().collect();
    let end = (col + n).min(line.len());
    if col >= end {
        return false;
    }
    let switched: String = line[col..end]
        .iter()
        .flat_map(|c| {
            if c.is_uppercase() {
                c.to_lowercase().collect::<Vec<_>>()
            } else {
                c.to_uppercase().collect()
            }
        })
        .collect();
    overwrite(input, (row, col), end, &switched);
    jump(input, (row, end.min(line.len() - 1)));
    true
}

/// The text from `start` to column `end` of its line becomes `text`,
/// leaving what `p` puts alone (vi's `r` and `~` copy nothing).
fn overwrite(input: &mut TextArea<'static>, start: Pos, end: usize, text: &str) {
    input.cancel_selection();
    jump(input, start);
    input.start_selection();
    jump(input, (start.0, end));
    input.insert_str(text);
}

/// The cursor's (row, column).
fn at(input: &TextArea<'static>) -> Pos {
    let c = input.cursor();
    (c.0, c.1)
}

/// The cursor to a (row, column), clamped to the text. `Jump` counts in
/// `u16`: on a longer line (a pasted minified file) a column past that is
/// reached from the line's end when it is near it (the end itself, `$`,
/// what `D` and `dd` take); elsewhere the cursor stops at column 65,535,
/// since each step of the box costs the whole line.
fn jump(input: &mut TextArea<'static>, (row, col): Pos) {
    let row = u16::try_from(row).unwrap_or(u16::MAX);
    let Ok(short) = u16::try_from(col) else {
        input.move_cursor(CursorMove::Jump(row, 0));
        let back = line_len(input).saturating_sub(col);
        if back <= 64 {
            input.move_cursor(CursorMove::End);
            for _ in 0..back {
                input.move_cursor(CursorMove::Back);
            }
        } else {
            input.move_cursor(CursorMove::Jump(row, u16::MAX));
        }
        return;
    };
    input.move_cursor(CursorMove::Jump(row, short));
}

/// Normal mode rests on a character, never past the last one.
fn rest_on_a_character(input: &mut TextArea<'static>) {
    let (row, col) = at(input);
    let len = line_len(input);
    if len > 0 && col >= len && !input.is_selecting() {
        jump(input, (row, len - 1));
    }
}

/// Whether the cursor is on a space (or past the line's end).
fn on_blank(input: &TextArea<'static>) -> bool {
    let (row, col) = at(input);
    input.lines()[row]
        .chars()
        .nth(col)
        .is_none_or(char::is_whitespace)
}

/// The column of the first non-blank character of `row` (its length when
/// it is all blank).
fn first_non_blank(input: &TextArea<'static>, row: usize) -> usize {
    input
        .lines()
        .get(row)
        .map_or(0, |l| l.chars().take_while(|c| c.is_whitespace()).count())
}

/// Characters on the cursor's line.
fn line_len(input: &TextArea<'static>) -> usize {
    line_len_at(input, at(input).0)
}

/// Characters on line `row`.
fn line_len_at(input: &TextArea<'static>, row: usize) -> usize {
    input.lines().get(row).map_or(0, |l| l.chars().count())
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

    /// A box holding `text`, in normal mode with the cursor at (0, 0).
    fn normal(text: &str) -> (Vi, TextArea<'static>) {
        let mut t = TextArea::default();
        t.insert_str(text);
        let mut vi = Vi::default();
        vi.escape(&mut t);
        t.move_cursor(CursorMove::Jump(0, 0));
        (vi, t)
    }

    fn keys(vi: &mut Vi, t: &mut TextArea<'static>, ks: &str) {
        for c in ks.chars() {
            vi.key(k(c), t);
        }
    }

    #[test]
    fn counts_repeat_motions_deletes_and_operators() {
        let (mut vi, mut t) = normal("one two three four five");
        keys(&mut vi, &mut t, "2w");
        assert_eq!(t.cursor(), (0, 8));
        keys(&mut vi, &mut t, "3x");
        assert_eq!(text(&t), "one two ee four five");
        keys(&mut vi, &mut t, "0d2w");
        assert_eq!(text(&t), "ee four five");
        keys(&mut vi, &mut t, "2dw");
        assert_eq!(text(&t), "five");
        keys(&mut vi, &mut t, "dw");
        assert_eq!(text(&t), "", "dw on the last word takes it, not a line");
        let (mut vi, mut t) = normal("a\nb\nc\nd");
        keys(&mut vi, &mut t, "2dd");
        assert_eq!(text(&t), "c\nd");
        keys(&mut vi, &mut t, "ugg10x");
        assert_eq!(
            text(&t),
            "\nb\nc\nd",
            "a count past the line takes the line"
        );
        let (mut vi, mut t) = normal("abc");
        keys(&mut vi, &mut t, "$dl");
        assert_eq!(text(&t), "ab", "dl on the last character takes it");
        keys(&mut vi, &mut t, "99999999l");
        assert_eq!(t.cursor(), (0, 1), "a huge count stays on the line");
    }

    #[test]
    fn find_on_the_line_and_repeat_it() {
        let (mut vi, mut t) = normal("a,b,c,d");
        keys(&mut vi, &mut t, "f,");
        assert_eq!(t.cursor(), (0, 1));
        keys(&mut vi, &mut t, ";");
        assert_eq!(t.cursor(), (0, 3));
        keys(&mut vi, &mut t, ",");
        assert_eq!(t.cursor(), (0, 1));
        keys(&mut vi, &mut t, "0t,;");
        assert_eq!(
            t.cursor(),
            (0, 2),
            "; after t passes the character it stopped at"
        );
        keys(&mut vi, &mut t, "0dt,");
        assert_eq!(text(&t), ",b,c,d");
        keys(&mut vi, &mut t, "df,");
        assert_eq!(text(&t), "c,d");
        keys(&mut vi, &mut t, "fz");
        assert_eq!(t.cursor(), (0, 0), "a missing character moves nothing");
        keys(&mut vi, &mut t, "$dF,");
        assert_eq!(text(&t), "cd");
        keys(&mut vi, &mut t, "0cT,");
        assert_eq!(text(&t), "cd", "T with nothing to find changes nothing");
        let (mut vi, mut t) = normal("a,b,c,d");
        keys(&mut vi, &mut t, "d2f,");
        assert_eq!(text(&t), "c,d", "a count finds the n-th");
    }

    #[test]
    fn text_objects_words_quotes_and_brackets() {
        let (mut vi, mut t) = normal("fix the  bug now");
        keys(&mut vi, &mut t, "wllciw");
        assert!(!vi.normal);
        t.insert_str("a");
        assert_eq!(text(&t), "fix a  bug now");
        vi.escape(&mut t);
        keys(&mut vi, &mut t, "wdaw");
        assert_eq!(text(&t), "fix a  now");
        keys(&mut vi, &mut t, "$daw");
        assert_eq!(text(&t), "fix a", "the last word takes the space before it");
        let (mut vi, mut t) = normal(r#"say "hello there" now"#);
        keys(&mut vi, &mut t, "di\"");
        assert_eq!(text(&t), r#"say "" now"#, "the first pair after the cursor");
        keys(&mut vi, &mut t, "u");
        keys(&mut vi, &mut t, "fhda\"");
        assert_eq!(text(&t), "say now");
        let (mut vi, mut t) = normal("call(a, f(b), c)");
        keys(&mut vi, &mut t, "fbdi(");
        assert_eq!(text(&t), "call(a, f(), c)");
        keys(&mut vi, &mut t, "u");
        keys(&mut vi, &mut t, "0fbd2i(");
        assert_eq!(text(&t), "call()", "a count reaches the outer pair");
        keys(&mut vi, &mut t, "ci(");
        assert!(!vi.normal, "ci( on an empty pair types inside");
        t.insert_str("x");
        assert_eq!(text(&t), "call(x)");
        vi.escape(&mut t);
        let (mut vi, mut t) = normal("fn f() {\n    body();\n}");
        keys(&mut vi, &mut t, "jwyiBGp");
        assert_eq!(
            text(&t),
            "fn f() {\n    body();\n}\n    body();",
            "yiB copies the lines inside the braces, p puts them below"
        );
        let (mut vi, mut t) = normal("fn f() {\n    a();\n    b();\n}");
        keys(&mut vi, &mut t, "jdi{");
        assert_eq!(text(&t), "fn f() {\n}", "di{{ takes the inner lines whole");
        let (mut vi, mut t) = normal("fn f() {\n    a();\n}");
        keys(&mut vi, &mut t, "jci{");
        assert!(!vi.normal);
        t.insert_str("x");
        assert_eq!(text(&t), "fn f() {\nx\n}", "ci{{ leaves a line to type on");
        let (mut vi, mut t) = normal("fn f() {\n    body();\n}");
        keys(&mut vi, &mut t, "jda{");
        assert_eq!(text(&t), "fn f() ");
    }

    #[test]
    fn lines_copy_put_and_move() {
        let (mut vi, mut t) = normal("first\nsecond\nthird");
        keys(&mut vi, &mut t, "yyjp");
        assert_eq!(
            text(&t),
            "first\nsecond\nfirst\nthird",
            "p puts a line below"
        );
        assert_eq!(t.cursor(), (2, 0));
        keys(&mut vi, &mut t, "ggddp");
        assert_eq!(
            text(&t),
            "second\nfirst\nfirst\nthird",
            "ddp swaps two lines"
        );
        keys(&mut vi, &mut t, "GP");
        assert_eq!(
            text(&t),
            "second\nfirst\nfirst\nfirst\nthird",
            "P puts above"
        );
        keys(&mut vi, &mut t, "2GdG");
        assert_eq!(text(&t), "second");
        keys(&mut vi, &mut t, "yw$p");
        assert_eq!(text(&t), "secondsecond", "a word copy puts inside the line");
        keys(&mut vi, &mut t, "0ylP");
        assert_eq!(text(&t), "ssecondsecond");
        keys(&mut vi, &mut t, "cc");
        assert!(!vi.normal);
        t.insert_str("new");
        assert_eq!(text(&t), "new");
    }

    #[test]
    fn replace_switch_case_and_delete_before() {
        let (mut vi, mut t) = normal("abcd");
        keys(&mut vi, &mut t, "yl");
        keys(&mut vi, &mut t, "2rx");
        assert_eq!(text(&t), "xxcd");
        assert_eq!(t.cursor(), (0, 1));
        keys(&mut vi, &mut t, "09rz");
        assert_eq!(text(&t), "xxcd", "r past the line's end does nothing");
        keys(&mut vi, &mut t, "0~~");
        assert_eq!(text(&t), "XXcd");
        keys(&mut vi, &mut t, "0P");
        assert_eq!(text(&t), "aXXcd", "r and ~ leave the copy alone");
        keys(&mut vi, &mut t, "$2X");
        assert_eq!(text(&t), "aXd");
    }

    #[test]
    fn k_and_j_move_between_lines_before_the_history() {
        let (mut vi, mut t) = normal("one\ntwo");
        assert_eq!(vi.key(k('j'), &mut t), Outcome::Done);
        assert_eq!(t.cursor(), (1, 0));
        assert_eq!(vi.key(k('j'), &mut t), Outcome::HistoryNext);
        assert_eq!(vi.key(k('k'), &mut t), Outcome::Done);
        assert_eq!(vi.key(k('k'), &mut t), Outcome::HistoryPrev);
    }

    #[test]
    fn visual_mode_selects_and_acts() {
        let (mut vi, mut t) = normal("one two three");
        keys(&mut vi, &mut t, "wve");
        assert!(vi.visual);
        keys(&mut vi, &mut t, "d");
        assert!(!vi.visual);
        assert_eq!(
            text(&t),
            "one  three",
            "the cursor's character is selected too"
        );
        keys(&mut vi, &mut t, "$vbhy");
        assert_eq!(text(&t), "one  three");
        assert_eq!(t.yank_text(), " three");
        keys(&mut vi, &mut t, "0vlloc");
        assert!(!vi.normal);
        assert_eq!(text(&t), "  three", "o then c changes the selection");
        vi.escape(&mut t);
        keys(&mut vi, &mut t, "wviwy");
        assert_eq!(t.yank_text(), "three");
        keys(&mut vi, &mut t, "v");
        assert!(vi.visual);
        assert_eq!(
            vi.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), &mut t),
            Outcome::Done
        );
        assert!(!vi.visual && vi.normal, "Esc leaves visual mode");
        assert_eq!(
            vi.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), &mut t),
            Outcome::Pass,
            "then Esc is the window's again"
        );
        keys(&mut vi, &mut t, "3");
        assert_eq!(
            vi.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), &mut t),
            Outcome::Done,
            "Esc drops a half-typed command"
        );
        keys(&mut vi, &mut t, "x");
        assert_eq!(text(&t), "  hree", "the count went with it");
    }

    /// Thousands of seeded random key runs over awkward texts: no key
    /// sequence panics, and the cursor always stays inside the text.
    #[test]
    fn random_keys_never_panic_or_leave_the_text() {
        // Whole commands as often as single keys, so that runs such as
        // `v$iw` or `d2f(` come up.
        const KEYS: &[&str] = &[
            "h",
            "l",
            "j",
            "k",
            "0",
            "^",
            "$",
            "w",
            "b",
            "e",
            "f(",
            "F\"",
            "t)",
            "T ",
            ";",
            ",",
            "gg",
            "G",
            "3G",
            "i",
            "a",
            "I",
            "A",
            "o",
            "O",
            "x",
            "X",
            "D",
            "s",
            "C",
            "S",
            "rz",
            "~",
            "d",
            "c",
            "y",
            "Y",
            "dd",
            "yy",
            "p",
            "P",
            "u",
            "v",
            "2",
            "9",
            "iw",
            "aw",
            "i(",
            "a)",
            "i[",
            "iB",
            "a{",
            "i<",
            "i\"",
            "a'",
            "i`",
            "ib",
            "é",
            "\u{1F600}",
            " ",
            "\x1b",
        ];
        const TEXTS: &[&str] = &[
            "",
            "x",
            "one two  three",
            "call(a, f(b), [c]) \"q\" 'r' `s`",
            "fn f() {\n    body();\n}\n",
            "\n\n",
            "  ünïcødé 😀 wörds\n(((\n)))",
            "\"unclosed 'quotes and (brackets",
        ];
        // xorshift: the same runs every time.
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for run in 0..4000 {
            let mut t = TextArea::default();
            t.insert_str(TEXTS[run % TEXTS.len()]);
            let mut vi = Vi::default();
            vi.escape(&mut t);
            for _ in 0..40 {
                let command = KEYS[(next() % KEYS.len() as u64) as usize];
                for c in command.chars() {
                    if c == '\x1b' {
                        if vi.normal {
                            vi.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), &mut t);
                        } else {
                            vi.escape(&mut t);
                        }
                    } else if vi.normal {
                        vi.key(k(c), &mut t);
                    } else {
                        t.insert_char(c);
                    }
                }
                let (row, col) = at(&t);
                assert!(row < t.lines().len(), "run {run}: row {row}");
                assert!(
                    col <= t.lines()[row].chars().count(),
                    "run {run}: column {col} past {:?}",
                    t.lines()[row]
                );
            }
        }
    }

    /// The cases a review against vim found.
    #[test]
    fn words_lines_and_undo_as_vim_has_them() {
        let (mut vi, mut t) = normal("fix the bug, please");
        keys(&mut vi, &mut t, "2wdaw");
        assert_eq!(
            text(&t),
            "fix the, please",
            "aw takes blanks, not the comma"
        );
        let (mut vi, mut t) = normal("call(foo)");
        keys(&mut vi, &mut t, "fodaw");
        assert_eq!(text(&t), "call()");
        let (mut vi, mut t) = normal("one two three four");
        keys(&mut vi, &mut t, "d2aw");
        assert_eq!(text(&t), "three four", "a count takes more words");
        let (mut vi, mut t) = normal("foo.bar baz");
        keys(&mut vi, &mut t, "dW");
        assert_eq!(text(&t), "baz", "W is blank-separated");
        let (mut vi, mut t) = normal("one two\nthree");
        keys(&mut vi, &mut t, "jb");
        assert_eq!(t.cursor(), (0, 4), "b goes to the start of the word before");
        let (mut vi, mut t) = normal("x\n    body");
        keys(&mut vi, &mut t, "w");
        assert_eq!(t.cursor(), (1, 4), "w skips the next line's indent");
        let (mut vi, mut t) = normal("a b\nc d e");
        keys(&mut vi, &mut t, "d3w");
        assert_eq!(text(&t), "d e", "an operator's w crosses lines");
        let (mut vi, mut t) = normal("abcd");
        keys(&mut vi, &mut t, "rxu");
        assert_eq!(text(&t), "abcd", "one u takes r back");
        keys(&mut vi, &mut t, "~u");
        assert_eq!(text(&t), "abcd", "and ~");
        let (mut vi, mut t) = normal("1\n2\n3\n4\n5");
        keys(&mut vi, &mut t, "3j");
        assert_eq!(t.cursor(), (3, 0), "a count moves that many lines");
        keys(&mut vi, &mut t, "2k");
        assert_eq!(t.cursor(), (1, 0));
        let (mut vi, mut t) = normal("a\n\nc");
        keys(&mut vi, &mut t, "jyyp");
        assert_eq!(text(&t), "a\n\n\nc", "an empty line copied is put");
        let (mut vi, mut t) = normal("a\n\nc");
        keys(&mut vi, &mut t, "ja");
        t.insert_str("X");
        assert_eq!(text(&t), "a\nX\nc", "a on an empty line stays on it");
        let (mut vi, mut t) = normal("");
        keys(&mut vi, &mut t, "ciw");
        assert!(!vi.normal, "ciw on an empty line types there");
    }

    #[test]
    fn k_and_j_count_lines_as_written_not_as_wrapped() {
        let long = "x".repeat(50);
        let (mut vi, mut t) = normal(&format!("{long}\n{long}"));
        t.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(20, 10)).unwrap();
        terminal.draw(|f| f.render_widget(&t, f.area())).unwrap();
        keys(&mut vi, &mut t, "j$");
        assert_eq!(t.cursor(), (1, 49));
        keys(&mut vi, &mut t, "k");
        assert_eq!(t.cursor(), (0, 49));
    }

    #[test]
    fn a_line_longer_than_a_u16_is_deleted_whole() {
        let long = "y".repeat(70_000);
        let (mut vi, mut t) = normal(&format!("a\n{long}"));
        keys(&mut vi, &mut t, "jdd");
        assert_eq!(text(&t), "a");
        let (mut vi, mut t) = normal(&long);
        keys(&mut vi, &mut t, "D");
        assert_eq!(text(&t), "");
        let (mut vi, mut t) = normal(&long);
        keys(&mut vi, &mut t, "$x");
        assert_eq!(t.lines()[0].len(), 69_999);
    }

    #[test]
    fn visual_mode_ends_when_its_selection_went_another_way() {
        let (mut vi, mut t) = normal("one two");
        keys(&mut vi, &mut t, "vl");
        assert!(vi.visual);
        // Ctrl-C cleared the draft's selection in the window.
        t.cancel_selection();
        keys(&mut vi, &mut t, "l");
        assert!(!vi.visual);
        keys(&mut vi, &mut t, "0d$");
        assert_eq!(text(&t), "", "d waits for a motion again");
    }
}
