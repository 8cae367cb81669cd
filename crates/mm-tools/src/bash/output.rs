//! Turning a command's byte stream into the text the model receives, with
//! bounded memory: lossy UTF-8 decoding across chunk boundaries, streaming
//! redaction of key values, and the head/tail truncation
//! (docs/design.md#truncation).

/// What a redacted key value becomes.
pub const REDACTED: &str = "[redacted]";

/// Decodes a byte stream as UTF-8 the way `String::from_utf8_lossy` decodes
/// the whole of it: a character split between two reads is joined again, and
/// each maximal invalid sequence becomes one U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct LossyDecoder {
    /// The start of a character whose other bytes have not arrived (≤ 3 bytes).
    pending: Vec<u8>,
}

impl LossyDecoder {
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut String) {
        let joined;
        let data: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            self.pending.extend_from_slice(bytes);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        let mut chunks = data.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            out.push_str(chunk.valid());
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            let at_end = chunks.peek().is_none();
            let incomplete =
                matches!(std::str::from_utf8(invalid), Err(e) if e.error_len().is_none());
            if at_end && incomplete {
                self.pending = invalid.to_vec();
            } else {
                out.push(char::REPLACEMENT_CHARACTER);
            }
        }
    }

    /// The stream ended: an unfinished character is one U+FFFD.
    pub(crate) fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            self.pending.clear();
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
}

/// Replaces key values by [`REDACTED`] in a stream of text. Holds back the
/// last (longest secret − 1) bytes so that a key split between two reads is
/// still caught.
#[derive(Debug)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
    hold: usize,
    pending: String,
}

impl Redactor {
    pub(crate) fn new(secrets: &[String]) -> Self {
        let mut secrets: Vec<String> = secrets.iter().filter(|s| !s.is_empty()).cloned().collect();
        // Longest first, so that a key containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let hold = secrets.first().map_or(0, |s| s.len().saturating_sub(1));
        Redactor {
            secrets,
            hold,
            pending: String::new(),
        }
    }

    /// Feed `text`; what can no longer be part of a key goes to `emit`.
    pub(crate) fn push(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
        if self.secrets.is_empty() {
            emit(text);
            return;
        }
        self.pending.push_str(text);
        // Matches starting before `safe` can be decided: the longest key
        // starting there fits in what has arrived.
        let mut safe = self.pending.len().saturating_sub(self.hold);
        while !self.pending.is_char_boundary(safe) {
            safe -= 1;
        }
        let (out, used) = scan(&self.pending, safe, &self.secrets);
        if used > 0 {
            emit(&out);
            self.pending.drain(..used);
        }
    }

    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(&str)) {
        if !self.pending.is_empty() {
            let (out, _) = scan(&self.pending, self.pending.len(), &self.secrets);
            emit(&out);
            self.pending.clear();
        }
    }
}

/// Redacts the keys of `secrets` (longest first) that start before `safe`;
/// returns the text and how many bytes of `text` it covers.
fn scan(text: &str, safe: usize, secrets: &[String]) -> (String, usize) {
    let mut out = String::with_capacity(safe);
    let mut i = 0;
    while i < safe {
        // The leftmost match; at one position the longest key (they are
        // sorted longest first and only a strictly earlier start replaces).
        let mut best: Option<(usize, usize)> = None;
        for secret in secrets {
            if let Some(at) = text[i..].find(secret.as_str()) {
                let at = i + at;
                if best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, secret.len()));
                }
            }
        }
        match best {
            Some((at, len)) if at < safe => {
                out.push_str(&text[i..at]);
                out.push_str(REDACTED);
                i = at + len;
            }
            _ => {
                out.push_str(&text[i..safe]);
                i = safe;
            }
        }
    }
    (out, i)
}

/// Every occurrence of every non-empty value in `secrets` replaced by
/// `[redacted]`, the longest key winning where two start at one place.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let r = Redactor::new(secrets);
    if r.secrets.is_empty() {
        return text.to_string();
    }
    scan(text, text.len(), &r.secrets).0
}

/// [`redact`] that copies only when a key occurs: a big file without a key
/// costs one scan per key, no copy.
pub(crate) fn redacted<'a>(text: &'a str, secrets: &[String]) -> std::borrow::Cow<'a, str> {
    if secrets
        .iter()
        .any(|s| !s.is_empty() && text.contains(s.as_str()))
    {
        std::borrow::Cow::Owned(redact(text, secrets))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

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

/// The first `n` lines of `text`, for a terminal's preview.
pub fn preview(text: &str, n: usize) -> Vec<String> {
    text.lines().take(n).map(str::to_string).collect()
}

/// Decodes `chunks` as one stream.
#[cfg(test)]
fn decode_all(chunks: &[&[u8]]) -> String {
    let mut d = LossyDecoder::default();
    let mut out = String::new();
    for c in chunks {
        d.push(c, &mut out);
    }
    d.finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoder_joins_split_characters_and_matches_lossy() {
        let text = "aé€😀b".as_bytes();
        for cut in 0..=text.len() {
            assert_eq!(
                decode_all(&[&text[..cut], &text[cut..]]),
                "aé€😀b",
                "cut at {cut}"
            );
        }
        let bad: &[u8] = b"x\xff\xfey\xe2\x82z\xf0\x9f";
        let lossy = String::from_utf8_lossy(bad).into_owned();
        for cut in 0..=bad.len() {
            assert_eq!(
                decode_all(&[&bad[..cut], &bad[cut..]]),
                lossy,
                "cut at {cut}"
            );
        }
        // Byte by byte.
        let singles: Vec<&[u8]> = bad.chunks(1).collect();
        assert_eq!(decode_all(&singles), lossy);
    }

    #[test]
    fn redactor_catches_keys_split_between_reads() {
        let secrets = vec!["sk-SECRET-123".to_string(), "sk-SECRET".to_string()];
        let text = "a sk-SECRET-123 b sk-SECRET c é";
        for cut in 0..=text.len() {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let mut r = Redactor::new(&secrets);
            let mut out = String::new();
            r.push(&text[..cut], &mut |s: &str| out.push_str(s));
            r.push(&text[cut..], &mut |s: &str| out.push_str(s));
            r.finish(&mut |s: &str| out.push_str(s));
            assert_eq!(out, "a [redacted] b [redacted] c é", "cut at {cut}");
        }
        assert_eq!(redact(text, &secrets), "a [redacted] b [redacted] c é");
        assert_eq!(redact("abc", &[String::new()]), "abc");
    }

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
