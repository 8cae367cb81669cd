//! The answer-loop guard (docs/design.md#a-looping-answer-stops).
//!
//! A small model can fall into repeating one passage of its answer ("I'm
//! here to help you with your coding." for two minutes) until `maxTokens`.
//! The guard watches the visible answer as it streams and trips when one
//! passage repeats back to back:
//!
//! - a block of 1 to [`MAX_BLOCK_LINES`] whole lines, repeated so that the
//!   copies after the first hold at least [`MIN_REPEATED_CHARS`]
//!   characters and there are at least [`MIN_LINE_COPIES`] copies of a
//!   single line or [`MIN_BLOCK_COPIES`] of a longer block;
//! - or, inside one line that never ends, the last [`WINDOW_CHARS`]
//!   characters being one phrase of [`MIN_PHRASE`]–[`MAX_PHRASE`]
//!   characters repeated.
//!
//! A passage only counts when it holds at least [`MIN_LETTERS`] letters or
//! digits: rows of dashes, closing braces and blank lines are never a loop.
//! Rows of a table or items of a list differ from each other, so they never
//! trip it either; a 200-row table is a test.
//!
//! When it trips, [`Verdict::keep`] is the length of the answer to keep:
//! everything before the loop and one copy of the passage.

/// Longest block of lines considered as one passage.
pub const MAX_BLOCK_LINES: usize = 12;
/// Copies of a single repeated line that make a loop.
pub const MIN_LINE_COPIES: usize = 8;
/// Copies of a block of several lines that make a loop.
pub const MIN_BLOCK_COPIES: usize = 4;
/// The copies after the first must hold this many characters.
pub const MIN_REPEATED_CHARS: usize = 200;
/// Letters or digits a passage needs to count.
pub const MIN_LETTERS: usize = 12;
/// Tail of an unfinished line looked at for a phrase loop.
pub const WINDOW_CHARS: usize = 600;
/// Shortest repeated phrase inside a line.
pub const MIN_PHRASE: usize = 8;
/// Longest repeated phrase inside a line.
pub const MAX_PHRASE: usize = 150;

/// Bytes an unfinished line must grow by before it is looked at again.
const PHRASE_STEP: usize = 64;

/// The guard tripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Bytes of the answer to keep: what came before the loop and one copy.
    pub keep: usize,
    /// The repeated passage (its first line, for the notice).
    pub passage: String,
    /// How many copies had arrived.
    pub copies: usize,
}

/// The sentence the user and the history get when the guard trips.
pub fn sentence(v: &Verdict) -> String {
    let first = v
        .passage
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    let shown: String = first.chars().take(60).collect();
    let more = if shown.len() < first.len() { "…" } else { "" };
    format!(
        "[stopped: the answer repeated the same passage {} times (\"{shown}{more}\") — generation stopped; ask again, or try another model]",
        v.copies
    )
}

/// Watches an answer as it grows. Feed it every text chunk; it looks at
/// each completed line once, so a long answer costs no rescans.
#[derive(Debug, Default)]
pub struct Guard {
    text: String,
    /// Byte offsets where each completed line starts, and its end (without
    /// the newline).
    lines: Vec<(usize, usize)>,
    /// Where the unfinished last line starts.
    open: usize,
    /// Length of the text when the unfinished line was last looked at: it
    /// is looked at again only after [`PHRASE_STEP`] more bytes.
    phrase_checked: usize,
    tripped: bool,
}

impl Guard {
    /// A guard for a new answer.
    pub fn new() -> Guard {
        Guard::default()
    }

    /// Feed the next chunk of visible answer text; `Some` once, when the
    /// answer is looping.
    pub fn push(&mut self, chunk: &str) -> Option<Verdict> {
        if self.tripped || chunk.is_empty() {
            return None;
        }
        self.text.push_str(chunk);
        let mut from = self.open;
        let mut verdict = None;
        while let Some(nl) = self.text[from..].find('\n') {
            let end = from + nl;
            self.lines.push((from, end));
            from = end + 1;
            self.open = from;
            if verdict.is_none() {
                verdict = self.check_lines();
            }
        }
        if verdict.is_none() && self.text.len() >= self.phrase_checked + PHRASE_STEP {
            self.phrase_checked = self.text.len();
            verdict = self.check_phrase();
        }
        if verdict.is_some() {
            self.tripped = true;
        }
        verdict
    }

    fn line(&self, i: usize) -> &str {
        let (s, e) = self.lines[i];
        self.text[s..e].trim_end()
    }

    /// A block of the last `k` lines repeated back to back.
    fn check_lines(&self) -> Option<Verdict> {
        let n = self.lines.len();
        for k in 1..=MAX_BLOCK_LINES.min(n / 2) {
            let need = if k == 1 {
                MIN_LINE_COPIES
            } else {
                MIN_BLOCK_COPIES
            };
            // Count copies of the last k lines going backwards.
            let mut copies = 1;
            while (copies + 1) * k <= n
                && (0..k).all(|j| self.line(n - 1 - j) == self.line(n - 1 - j - copies * k))
            {
                copies += 1;
            }
            if copies < need {
                continue;
            }
            let block: Vec<&str> = (n - k..n).map(|i| self.line(i)).collect();
            if letters(&block.join("\n")) < MIN_LETTERS || is_shorter_block(&block) {
                continue;
            }
            let first = n - copies * k;
            let first_copy_end = self.lines[first + k - 1].1;
            let repeated = self.lines[n - 1].1 - first_copy_end;
            if repeated < MIN_REPEATED_CHARS {
                continue;
            }
            return Some(Verdict {
                keep: first_copy_end + 1,
                passage: block.join("\n"),
                copies,
            });
        }
        None
    }

    /// A phrase repeated inside the unfinished last line.
    fn check_phrase(&self) -> Option<Verdict> {
        let line = &self.text[self.open..];
        let chars: Vec<char> = line.chars().rev().take(WINDOW_CHARS).collect();
        if chars.len() < WINDOW_CHARS {
            return None;
        }
        // chars is the window reversed; a period p means chars[i] == chars[i + p].
        let p = (MIN_PHRASE..=MAX_PHRASE)
            .find(|&p| (0..WINDOW_CHARS - p).all(|i| chars[i] == chars[i + p]))?;
        let phrase: String = chars[..p].iter().rev().collect();
        if letters(&phrase) < MIN_LETTERS.min(p / 2) || !phrase.contains(char::is_whitespace) {
            return None;
        }
        // Keep up to the first copy: walk back over whole copies.
        let phrase_bytes = phrase.len();
        let mut start = self.text.len() - phrase_bytes;
        let mut copies = 1;
        while start >= self.open + phrase_bytes
            && self.text[start - phrase_bytes..start] == phrase[..]
        {
            start -= phrase_bytes;
            copies += 1;
        }
        Some(Verdict {
            keep: start + phrase_bytes,
            passage: phrase.trim().to_owned(),
            copies,
        })
    }
}

/// Letters and digits in `text`.
fn letters(text: &str) -> usize {
    text.chars().filter(|c| c.is_alphanumeric()).count()
}

/// A block that is itself several copies of a shorter one: the shorter
/// block is the passage (and was checked first).
fn is_shorter_block(block: &[&str]) -> bool {
    let k = block.len();
    (1..k).any(|d| k.is_multiple_of(d) && (d..k).all(|i| block[i] == block[i - d]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(text: &str, chunk: usize) -> Option<(Verdict, String)> {
        let mut g = Guard::new();
        let chars: Vec<char> = text.chars().collect();
        let mut sent = String::new();
        for piece in chars.chunks(chunk) {
            let piece: String = piece.iter().collect();
            sent.push_str(&piece);
            if let Some(v) = g.push(&piece) {
                return Some((v, sent));
            }
        }
        None
    }

    #[test]
    fn one_line_repeated_stops_after_the_first_copy_is_kept() {
        let intro = "Sure.\n";
        let line = "I'm here to help you with your coding.\n";
        let text = format!("{intro}{}", line.repeat(40));
        for chunk in [1, 3, 17, 1000] {
            let (v, sent) = feed(&text, chunk).expect("a loop");
            assert_eq!(&sent[..v.keep], format!("{intro}{line}"), "chunk {chunk}");
            assert!(v.copies >= MIN_LINE_COPIES);
            assert_eq!(v.passage, line.trim_end());
        }
    }

    #[test]
    fn a_paragraph_repeated_stops() {
        let para = "The function reads the file.\nThen it parses each line.\n\n";
        let text = format!("Answer:\n\n{}", para.repeat(10));
        let (v, sent) = feed(&text, 7).expect("a loop");
        // The passage may be taken as starting at the blank line: what is
        // kept is the same text, before the loop and one copy.
        assert_eq!(
            sent[..v.keep].trim_end(),
            format!("Answer:\n\n{para}").trim_end()
        );
        // The notice names the passage by its first line with words.
        assert!(sentence(&v).contains("(\"The function reads the file.\")"));
    }

    #[test]
    fn a_phrase_repeated_inside_one_line_stops() {
        let text = format!("Well, {}", "help me please ".repeat(100));
        let (v, sent) = feed(&text, 5).expect("a loop");
        assert_eq!(sent[..v.keep].trim_end(), "Well, help me please");
        assert!(sentence(&v).contains("help me please"));
    }

    #[test]
    fn a_table_of_200_rows_is_not_a_loop() {
        let mut text = String::from("| id | name | status |\n|---|---|---|\n");
        for i in 0..200 {
            text.push_str(&format!("| {i} | item-{i} | ok |\n"));
        }
        assert_eq!(feed(&text, 13), None);
    }

    #[test]
    fn similar_list_items_and_code_are_not_a_loop() {
        let mut text = String::new();
        for i in 0..100 {
            text.push_str(&format!("- check the file src/mod{i}.rs for errors\n"));
        }
        text.push_str("```rust\n");
        for _ in 0..30 {
            text.push_str("    }\n");
        }
        text.push_str("```\n");
        for _ in 0..40 {
            text.push_str("----------------------------------------\n\n");
        }
        // A few identical lines, as a user may ask for.
        text.push_str(&"Hello, world!\n".repeat(5));
        assert_eq!(feed(&text, 11), None);
    }

    #[test]
    fn a_long_line_of_varied_prose_is_not_a_loop() {
        let text: String = (0..400).map(|i| format!("word{i} ")).collect();
        assert_eq!(feed(&text, 9), None);
        // A separator drawn with a repeated short motif has no words.
        assert_eq!(feed(&"=-".repeat(800), 9), None);
    }
}
