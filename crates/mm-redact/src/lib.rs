//! mm-redact: keeping key values out of text (docs/design.md#keys-stay-out-of-tools).
//! One redactor for every place text leaves mm's hands: a command's
//! output as it streams, a tool's result, a session file's strings.
//! Every occurrence of a key becomes [`REDACTED`]; where two keys start at
//! one place the longer wins, so that a key holding another is removed
//! whole.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

use serde_json::Value;

pub mod keys;

/// What a redacted key value becomes.
pub const REDACTED: &str = "[redacted]";

/// Replaces key values by [`REDACTED`] in a stream of text. Holds back the
/// last (longest secret − 1) bytes so that a key split between two reads is
/// still caught.
#[derive(Debug)]
pub struct Redactor {
    secrets: Vec<String>,
    hold: usize,
    pending: String,
}

impl Redactor {
    /// A redactor for `secrets`; empty strings are ignored, and with none
    /// left the text passes through untouched.
    pub fn new(secrets: &[String]) -> Self {
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
    pub fn push(&mut self, text: &str, emit: &mut impl FnMut(&str)) {
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

    /// End of the stream: redact and emit what is held back.
    pub fn finish(&mut self, emit: &mut impl FnMut(&str)) {
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
pub fn redacted<'a>(text: &'a str, secrets: &[String]) -> std::borrow::Cow<'a, str> {
    if secrets
        .iter()
        .any(|s| !s.is_empty() && text.contains(s.as_str()))
    {
        std::borrow::Cow::Owned(redact(text, secrets))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Replace every key in every string value of `v` (whatever shape the
/// value has: a session's messages); whether anything changed.
pub fn redact_json(v: &mut Value, secrets: &[String]) -> bool {
    match v {
        Value::String(s) => match redacted(s, secrets) {
            std::borrow::Cow::Owned(clean) => {
                *s = clean;
                true
            }
            std::borrow::Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| redact_json(item, secrets) | changed),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |changed, item| redact_json(item, secrets) | changed),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn every_string_of_a_value_is_searched_and_longest_first() {
        let secrets = vec!["sk-1".to_string(), String::new(), "sk-12345".to_string()];
        let mut v = json!({"a": ["x sk-12345 y", {"b": "sk-1sk-1"}], "n": 3, "k": "clean"});
        assert!(redact_json(&mut v, &secrets));
        assert_eq!(
            v,
            json!({"a": ["x [redacted] y", {"b": "[redacted][redacted]"}], "n": 3, "k": "clean"})
        );
        assert!(!redact_json(&mut v, &secrets));
    }
}
