//! What every tool's output goes through before the model gets it: the
//! head/tail truncation that keeps a result within its budget
//! (docs/design.md#truncation), collected in bounded memory however much
//! arrives, and the first lines a terminal echoes.

/// The marker line's text (without its newline).
pub fn omitted_marker(omitted: u64) -> String {
    format!("[… {omitted} characters omitted …]")
}

/// Keeps what the model may see of an output of any size: the first
/// `max` characters and at least the last `max` characters, counting the
/// rest. Memory stays O(`max`) whatever passes through.
#[derive(Debug)]
pub(crate) struct Collector {
    max: usize,
    head: String,
    head_chars: usize,
    /// Text after the head; trimmed at the front to the last `keep` bytes
    /// (which hold at least `max` characters) whenever it doubles.
    tail: String,
    keep: usize,
    total: u64,
    last: Option<char>,
}

impl Collector {
    pub(crate) fn new(max: usize) -> Self {
        Collector {
            max,
            head: String::new(),
            head_chars: 0,
            tail: String::new(),
            keep: max.saturating_mul(4).saturating_add(4),
            total: 0,
            last: None,
        }
    }

    pub(crate) fn push(&mut self, mut text: &str) {
        if text.is_empty() {
            return;
        }
        self.last = text.chars().next_back();
        if self.head_chars < self.max {
            let room = self.max - self.head_chars;
            let (split, taken) = match text.char_indices().nth(room) {
                Some((at, _)) => (at, room),
                None => (text.len(), text.chars().count()),
            };
            self.head.push_str(&text[..split]);
            self.head_chars += taken;
            self.total += taken as u64;
            text = &text[split..];
            if text.is_empty() {
                return;
            }
        }
        self.total += text.chars().count() as u64;
        if text.len() >= self.keep {
            self.tail.clear();
            self.tail
                .push_str(&text[ceil_boundary(text, text.len() - self.keep)..]);
        } else {
            self.tail.push_str(text);
            if self.tail.len() > self.keep.saturating_mul(2) {
                let cut = ceil_boundary(&self.tail, self.tail.len() - self.keep);
                self.tail.drain(..cut);
            }
        }
    }

    /// The result: the output, then `suffix` on its own line; cut in the
    /// middle when the whole would pass `max` characters.
    pub(crate) fn finish(self, suffix: &str) -> String {
        let suffix_chars = suffix.chars().count() as u64;
        let sep = !suffix.is_empty() && self.total > 0 && self.last != Some('\n');
        let max = self.max as u64;
        if self.total + u64::from(sep) + suffix_chars <= max {
            // Everything is in the head: total ≤ max.
            let mut out = self.head;
            out.push_str(&self.tail);
            push_suffix(&mut out, sep, suffix);
            return out;
        }
        let (head_n, tail_n, omitted) = halves(self.total, self.max, suffix);
        let mut out = String::new();
        out.push_str(first_chars(&self.head, head_n));
        out.push_str(&omitted_marker(omitted));
        out.push('\n');
        let tail_chars = self.tail.chars().count();
        let tail_start = out.len();
        if tail_chars >= tail_n {
            out.push_str(last_chars(&self.tail, tail_n));
        } else {
            // Nothing was dropped: the tail reaches back into the head.
            out.push_str(last_chars(&self.head, tail_n - tail_chars));
            out.push_str(&self.tail);
        }
        let tail_part = &out[tail_start..];
        let sep = !suffix.is_empty() && !tail_part.is_empty() && !tail_part.ends_with('\n');
        push_suffix(&mut out, sep, suffix);
        out
    }
}

fn push_suffix(out: &mut String, sep: bool, suffix: &str) {
    if sep {
        out.push('\n');
    }
    out.push_str(suffix);
}

/// The halves of docs/design.md#truncation: budget = max − (marker + its
/// newline) − (suffix + its newline); head = ⌊budget / 2⌋, tail = the
/// rest. The marker's length depends on the count it shows, hence the
/// fixed point (digits only grow).
fn halves(total: u64, max: usize, suffix: &str) -> (usize, usize, u64) {
    let suffix_cost = if suffix.is_empty() {
        0
    } else {
        suffix.chars().count() + 1
    };
    let mut digits = 1;
    loop {
        let marker_cost = omitted_marker(0).chars().count() - 1 + digits + 1;
        let budget = max.saturating_sub(marker_cost + suffix_cost);
        let budget = budget.min(usize::try_from(total).unwrap_or(usize::MAX));
        let head = budget / 2;
        let tail = budget - head;
        let omitted = total - budget as u64;
        let shown = omitted.to_string().len();
        if shown <= digits {
            return (head, tail, omitted);
        }
        digits = shown;
    }
}

/// Public form of the same truncation, for text already in memory: `text`
/// then `suffix` on its own line, cut per docs/design.md#truncation to at
/// most `max` characters.
pub fn fit(text: &str, suffix: &str, max: usize) -> String {
    let mut c = Collector::new(max);
    c.push(text);
    c.finish(suffix)
}

fn ceil_boundary(s: &str, mut at: usize) -> usize {
    while at < s.len() && !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

fn first_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((at, _)) => &s[at..],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_keeps_bounded_memory() {
        let mut c = Collector::new(300);
        let chunk = "0123456789".repeat(10_000);
        for _ in 0..100 {
            c.push(&chunk);
            assert!(c.tail.len() <= 2 * c.keep, "{}", c.tail.len());
        }
        assert_eq!(c.total, 10_000_000);
        let out = c.finish("");
        assert_eq!(out.chars().count(), 300);
    }

    #[test]
    fn halves_fixed_point_accounts_for_marker_digits() {
        // budget = 1000 - (marker + 1); omitted has 4 digits here.
        let (h, t, o) = halves(5000, 1000, "");
        let marker = omitted_marker(o).chars().count();
        assert_eq!(h + t, 1000 - marker - 1);
        assert_eq!(h, (1000 - marker - 1) / 2);
        assert_eq!(o as usize, 5000 - h - t);
    }
}
