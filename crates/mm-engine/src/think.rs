//! Splits reasoning written into the answer text from the answer:
//! `<think>…</think>` at the start (Qwen3, DeepSeek-R1 through plain
//! servers), and gpt-oss's harmony channels when a server passes them
//! through as text (`<|channel|>analysis<|message|>…<|end|>` is reasoning,
//! `<|start|>assistant<|channel|>final<|message|>…` the answer, its
//! `<|return|>` dropped). Chunks may cut a tag at any byte, so partial
//! tags are held back until they can be decided. Any other channel
//! (`commentary`, a tool call's) stays text, as written.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";
/// A harmony message's header starts here...
const CHANNEL: &str = "<|channel|>";
/// ...and ends here, where its text begins.
const MESSAGE: &str = "<|message|>";
/// The end of a harmony message that another follows.
const END: &str = "<|end|>";
/// The end of the final harmony message.
const RETURN: &str = "<|return|>";
/// What may come before the next message's channel.
const START: &str = "<|start|>assistant";
/// The longest harmony header read (`analysis`, `final`,
/// `commentary to=functions.bash <|constrain|>json`).
const MAX_HEADER: usize = 256;

/// A piece of content after splitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Reasoning(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing decided yet: leading whitespace and a possible partial
    /// `<think>`, `<|channel|>` or `<|start|>assistant`.
    Start,
    /// Inside a think block or a harmony analysis message.
    Thinking,
    /// Just after `</think>`: whitespace before the answer is dropped.
    AfterThink,
    /// A harmony header, up to `<|message|>`.
    Header,
    /// The harmony final message: text, its end tokens dropped.
    Final,
    /// Plain answer text; everything passes through.
    Text,
}

/// The streaming splitter: feed content chunks, get text and reasoning.
#[derive(Debug)]
pub struct ThinkSplitter {
    state: State,
    held: String,
    /// What ends the reasoning being read: `</think>` or `<|end|>`.
    close: &'static str,
    /// What came before a harmony header (whitespace, `<|start|>assistant`,
    /// `<|channel|>`): given back as text when the header opens nothing.
    opened: String,
}

impl Default for ThinkSplitter {
    fn default() -> Self {
        ThinkSplitter {
            state: State::Start,
            held: String::new(),
            close: CLOSE,
            opened: String::new(),
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
            State::Start => self.start(chunk, out),
            State::Thinking => self.thinking(chunk, out),
            State::Header => self.header(chunk, out),
            State::Final => self.final_text(chunk, out),
        }
    }

    fn start(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        self.held.push_str(chunk);
        let trimmed = self.held.trim_start();
        let after_start = trimmed.strip_prefix(START).unwrap_or(trimmed);
        if let Some(rest) = trimmed.strip_prefix(OPEN) {
            let rest = rest.to_owned();
            self.held.clear();
            self.state = State::Thinking;
            self.close = CLOSE;
            self.thinking(&rest, out);
        } else if let Some(rest) = after_start.strip_prefix(CHANNEL) {
            let rest = rest.to_owned();
            self.opened = self.held[..self.held.len() - rest.len()].to_owned();
            self.held.clear();
            self.state = State::Header;
            self.header(&rest, out);
        } else if !(OPEN.starts_with(trimmed)
            || START.starts_with(trimmed)
            || (after_start.len() < trimmed.len() && CHANNEL.starts_with(after_start))
            || CHANNEL.starts_with(trimmed))
        {
            // Not reasoning: everything held is answer text.
            self.state = State::Text;
            let held = std::mem::take(&mut self.held);
            out(Piece::Text(&held));
        }
        // else: still a possible prefix of an opener; keep holding.
    }

    fn header(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        self.held.push_str(chunk);
        let Some(pos) = self.held.find(MESSAGE) else {
            if self.held.len() > MAX_HEADER {
                self.header_is_text(out);
            }
            return;
        };
        let channel = self.held[..pos].trim().to_owned();
        let rest = self.held[pos + MESSAGE.len()..].to_owned();
        if channel == "analysis" {
            self.held.clear();
            self.state = State::Thinking;
            self.close = END;
            self.thinking(&rest, out);
        } else if channel == "final" {
            self.held.clear();
            self.state = State::Final;
            self.final_text(&rest, out);
        } else {
            self.header_is_text(out);
        }
    }

    /// A header that opens no reasoning nor the final answer: the whole
    /// message is text, as written.
    fn header_is_text(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        let held = std::mem::take(&mut self.held);
        let opened = std::mem::take(&mut self.opened);
        self.state = State::Text;
        out(Piece::Text(&format!("{opened}{held}")));
    }

    fn thinking(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        self.held.push_str(chunk);
        if let Some(pos) = self.held.find(self.close) {
            let held = std::mem::take(&mut self.held);
            if pos > 0 {
                out(Piece::Reasoning(&held[..pos]));
            }
            let rest = &held[pos + self.close.len()..];
            if self.close == END {
                // The next harmony message (the final one) follows.
                self.state = State::Start;
                self.start(rest, out);
            } else {
                self.state = State::AfterThink;
                self.after_think(rest, out);
            }
            return;
        }
        // Emit all but the longest tail that could start the close tag.
        let keep = partial_suffix(&self.held, self.close);
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

    /// The final harmony message: text, without `<|return|>` or `<|end|>`.
    fn final_text(&mut self, chunk: &str, out: &mut impl FnMut(Piece<'_>)) {
        self.held.push_str(chunk);
        loop {
            let found = [RETURN, END]
                .iter()
                .filter_map(|t| self.held.find(t).map(|at| (at, t.len())))
                .min();
            let Some((at, len)) = found else { break };
            if at > 0 {
                out(Piece::Text(&self.held[..at]));
            }
            self.held.drain(..at + len);
        }
        let keep = partial_suffix(&self.held, RETURN).max(partial_suffix(&self.held, END));
        let emit = self.held.len() - keep;
        if emit > 0 {
            out(Piece::Text(&self.held[..emit]));
            self.held.drain(..emit);
        }
    }

    /// End of content: whatever is held is released as what it most likely is.
    pub fn finish(&mut self, out: &mut impl FnMut(Piece<'_>)) {
        let held = std::mem::take(&mut self.held);
        match self.state {
            State::Start | State::Final => {
                if !held.is_empty() {
                    out(Piece::Text(&held));
                }
            }
            State::Header => {
                let opened = std::mem::take(&mut self.opened);
                out(Piece::Text(&format!("{opened}{held}")));
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
            State::Start | State::Final | State::Header => (&self.held, ""),
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

    /// `input` cut at every pair of places gives `want`.
    fn every_cut(input: &str, want: (&str, &str)) {
        let want = (want.0.to_owned(), want.1.to_owned());
        assert_eq!(run(&[input]), want);
        for i in (0..=input.len()).filter(|i| input.is_char_boundary(*i)) {
            for j in (i..=input.len()).filter(|j| input.is_char_boundary(*j)) {
                assert_eq!(
                    run(&[&input[..i], &input[i..j], &input[j..]]),
                    want,
                    "split at {i},{j}"
                );
            }
        }
    }

    #[test]
    fn harmony_channels_split_at_every_byte_position() {
        // As a server that does not parse harmony passes gpt-oss's output.
        every_cut(
            "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>\
             <|start|>assistant<|channel|>final<|message|>It is **4**.<|return|>",
            ("It is **4**.", "User asks 2+2. Easy."),
        );
        // The final message alone, and one cut off before `<|return|>`.
        every_cut(
            "<|start|>assistant<|channel|>final<|message|>Hi<|end|>",
            ("Hi", ""),
        );
        every_cut(
            "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>Yes",
            ("Yes", "hm"),
        );
        // Reasoning that never ends is reasoning.
        every_cut("<|channel|>analysis<|message|>still <|e", ("", "still <|e"));
    }

    #[test]
    fn a_header_that_opens_nothing_is_given_back_whole() {
        every_cut(" <|channel|>  ", (" <|channel|>  ", ""));
    }

    #[test]
    fn other_channels_and_lookalikes_stay_text() {
        let call = "<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{\"command\":\"ls\"}<|call|>";
        assert_eq!(run(&[call]), (call.to_owned(), String::new()));
        assert_eq!(
            run(&["<|chan", "nel|>final but no message"]),
            ("<|channel|>final but no message".into(), String::new())
        );
        for text in ["<|im_start|>x", "<|start|>user", "<| not a tag", "<|"] {
            assert_eq!(run(&[text]), (text.to_owned(), String::new()), "{text}");
        }
        // Later in the answer, a channel is text.
        assert_eq!(
            run(&["See ", "<|channel|>analysis<|message|>x"]),
            ("See <|channel|>analysis<|message|>x".into(), String::new())
        );
        let long = format!("<|channel|>{}", "a".repeat(300));
        assert_eq!(run(&[&long]), (long.clone(), String::new()));
    }

    #[test]
    fn partial_suffix_lengths() {
        assert_eq!(partial_suffix("abc</thi", CLOSE), 5);
        assert_eq!(partial_suffix("abc<", CLOSE), 1);
        assert_eq!(partial_suffix("abc", CLOSE), 0);
        assert_eq!(partial_suffix("é", CLOSE), 0);
    }
}
