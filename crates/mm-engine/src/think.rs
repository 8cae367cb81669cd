//! Splits `<think>…</think>` at the start of the answer into reasoning.
//! Models such as Qwen3 and DeepSeek-R1 write their
//! reasoning in the content through plain servers; chunks may cut a tag at
//! any byte, so partial tags are held back until they can be decided.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// A piece of content after splitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Reasoning(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing decided yet: leading whitespace and a possible partial `<think>`.
    Start,
    /// Inside the think block.
    Thinking,
    /// Just after `</think>`: whitespace before the answer is dropped.
    AfterThink,
    /// Plain answer text; everything passes through.
    Text,
}

/// The streaming splitter: feed content chunks, get text and reasoning.
#[derive(Debug)]
pub struct ThinkSplitter {
    state: State,
    held: String,
}

impl Default for ThinkSplitter {
    fn default() -> Self {
        ThinkSplitter {
            state: State::Start,
            held: String::new(),
        }
    }
}

impl ThinkSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one chunk of content.
    pub fn push(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        match self.state {
            State::Text => {
                if !chunk.is_empty() {
                    out(Piece::Text(chunk));
                }
            }
            State::AfterThink => self.after_think(chunk, out),
            State::Start => {
                self.held.push_str(chunk);
                let trimmed = self.held.trim_start();
                if let Some(rest) = trimmed.strip_prefix(OPEN) {
                    let rest = rest.to_owned();
                    self.held.clear();
                    self.state = State::Thinking;
                    self.thinking(&rest, out);
                } else if !OPEN.starts_with(trimmed) {
                    // Not a think block: everything held is answer text.
                    self.state = State::Text;
                    let held = std::mem::take(&mut self.held);
                    out(Piece::Text(&held));
                }
                // else: still a possible prefix of `<think>`; keep holding.
            }
            State::Thinking => self.thinking(chunk, out),
        }
    }

    fn thinking(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        self.held.push_str(chunk);
        if let Some(pos) = self.held.find(CLOSE) {
            let held = std::mem::take(&mut self.held);
            if pos > 0 {
                out(Piece::Reasoning(&held[..pos]));
            }
            self.state = State::AfterThink;
            self.after_think(&held[pos + CLOSE.len()..], out);
            return;
        }
        // Emit all but the longest tail that could start `</think>`.
        let keep = partial_suffix(&self.held, CLOSE);
        let emit = self.held.len() - keep;
        if emit > 0 {
            out(Piece::Reasoning(&self.held[..emit]));
            self.held.drain(..emit);
        }
    }

    fn after_think(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        let rest = chunk.trim_start();
        if !rest.is_empty() {
            self.state = State::Text;
            out(Piece::Text(rest));
        }
    }

    /// End of content: whatever is held is released as what it most likely is.
    pub fn finish(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        let held = std::mem::take(&mut self.held);
        match self.state {
            State::Start => {
                if !held.is_empty() {
                    out(Piece::Text(&held));
                }
            }
            State::Thinking => {
                if !held.is_empty() {
                    out(Piece::Reasoning(&held));
                }
            }
            State::AfterThink | State::Text => {}
        }
        self.state = State::Text;
    }

    /// What is held back right now, as (text, reasoning): used for the
    /// partial message of a cancelled or failed generation.
    pub fn held(&self) -> (&str, &str) {
        match self.state {
            State::Start => (&self.held, ""),
            State::Thinking => ("", &self.held),
            _ => ("", ""),
        }
    }
}

/// Length of the longest proper suffix of `s` that is a prefix of `tag`.
/// `tag` is ASCII, so the cut is always at a character boundary.
fn partial_suffix(s: &str, tag: &str) -> usize {
    let max = (tag.len() - 1).min(s.len());
    (1..=max)
        .rev()
        .find(|&n| s.is_char_boundary(s.len() - n) && tag.starts_with(&s[s.len() - n..]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (String, String) {
        let mut text = String::new();
        let mut reasoning = String::new();
        let mut s = ThinkSplitter::new();
        let mut take = |p: Piece<'_>| match p {
            Piece::Text(t) => {
                assert!(!t.is_empty());
                text.push_str(t)
            }
            Piece::Reasoning(r) => {
                assert!(!r.is_empty());
                reasoning.push_str(r)
            }
        };
        for c in chunks {
            s.push(c, &mut take);
        }
        s.finish(&mut take);
        (text, reasoning)
    }

    #[test]
    fn splits_at_every_byte_position() {
        let input = "<think>\nI should say hi → politely.\n</think>\n\nHello, <b>world</b>!";
        let want = (
            "Hello, <b>world</b>!".to_owned(),
            "\nI should say hi → politely.\n".to_owned(),
        );
        assert_eq!(run(&[input]), want);
        for i in 0..=input.len() {
            if !input.is_char_boundary(i) {
                continue;
            }
            assert_eq!(run(&[&input[..i], &input[i..]]), want, "split at {i}");
            for j in i..=input.len() {
                if input.is_char_boundary(j) {
                    assert_eq!(
                        run(&[&input[..i], &input[i..j], &input[j..]]),
                        want,
                        "split at {i},{j}"
                    );
                }
            }
        }
        // One character per chunk.
        let chars: Vec<String> = input.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(&refs), want);
    }

    #[test]
    fn no_think_block_passes_through() {
        assert_eq!(
            run(&["Hello", " world"]),
            ("Hello world".into(), String::new())
        );
        assert_eq!(
            run(&["<thi", "nk not really"]),
            ("<think not really".into(), String::new())
        );
        assert_eq!(
            run(&["  <b>bold</b>"]),
            ("  <b>bold</b>".into(), String::new())
        );
        // A think tag later in the answer is answer text.
        assert_eq!(
            run(&["Use ", "<think>", " tags"]),
            ("Use <think> tags".into(), String::new())
        );
        assert_eq!(run(&[]), (String::new(), String::new()));
        assert_eq!(run(&["<thi"]), ("<thi".into(), String::new()));
    }

    #[test]
    fn leading_whitespace_before_the_tag_is_dropped() {
        assert_eq!(
            run(&["\n", " <think>r</think>", "a"]),
            ("a".into(), "r".into())
        );
    }

    #[test]
    fn unterminated_think_is_reasoning() {
        assert_eq!(
            run(&["<think>still thinking </th"]),
            (String::new(), "still thinking </th".into())
        );
    }

    #[test]
    fn close_tag_prefix_inside_reasoning_is_kept() {
        assert_eq!(
            run(&["<think>a </", "b> c </thi", "nk>done"]),
            ("done".into(), "a </b> c ".into())
        );
    }

    #[test]
    fn partial_suffix_lengths() {
        assert_eq!(partial_suffix("abc</thi", CLOSE), 5);
        assert_eq!(partial_suffix("abc<", CLOSE), 1);
        assert_eq!(partial_suffix("abc", CLOSE), 0);
        assert_eq!(partial_suffix("é", CLOSE), 0);
    }
}
