//! The runaway guard (docs/reference/tools.md#guards,
//! docs/design.md#runaway-pattern-length).
//!
//! Tool-call arguments are not shown while they stream, so a model that
//! derails into repeating itself looks like nothing happening. The guard
//! watches each call's argument text and stops the generation when its last
//! 256 characters are one 4–64-character pattern repeated, or when it passes
//! 256 KiB.

/// Characters of the tail that must be one repeated pattern.
pub const WINDOW_CHARS: usize = 256;
/// Shortest pattern length considered (docs/design.md#runaway-pattern-length).
pub const MIN_PATTERN: usize = 4;
/// Longest pattern length considered.
pub const MAX_PATTERN: usize = 64;
/// The size limit: the reference's "256 KB" is 262,144 bytes of UTF-8.
pub const MAX_ARGUMENT_BYTES: usize = 262_144;

const PREFIX: &str = "[error: the model's tool call ran away: ";
const SUFFIX: &str = " — generation stopped; rephrase the request, or try another model]";

/// The sentence for arguments that repeat a pattern; `chars` counts the
/// characters received, `pattern` is written as a JSON string literal.
pub fn pattern_sentence(chars: usize, pattern: &str) -> String {
    let literal = serde_json::to_string(pattern).unwrap_or_else(|_| format!("\"{pattern}\""));
    format!(
        "{PREFIX}its arguments repeat the same pattern ({chars} characters so far: {literal}){SUFFIX}"
    )
}

/// The sentence for arguments over the size limit.
pub fn size_sentence(bytes: usize) -> String {
    format!("{PREFIX}its arguments passed 256 KiB ({bytes} bytes so far){SUFFIX}")
}

/// Checks one call's argument text as it grows. `chars` is the number of
/// characters in `args` (kept by the caller, so nothing is recounted).
/// Returns the sentence when the guard trips.
pub fn check(args: &str, chars: usize) -> Option<String> {
    if args.len() > MAX_ARGUMENT_BYTES {
        return Some(size_sentence(args.len()));
    }
    if chars < WINDOW_CHARS {
        return None;
    }
    let mut window = ['\0'; WINDOW_CHARS];
    // Fill from the end: the last 256 characters, in order.
    for (slot, c) in window.iter_mut().rev().zip(args.chars().rev()) {
        *slot = c;
    }
    let p = shortest_period(&window)?;
    let pattern: String = window[WINDOW_CHARS - p..].iter().collect();
    Some(pattern_sentence(chars, &pattern))
}

/// The guard run character by character over argument text that arrives
/// inside one growing frame (the whole-call wires, Ollama and Gemini): it
/// trips at the first character where [`check`] would, however the bytes
/// were cut, and looks at each character once (a run of matches per
/// candidate period, so nothing is rescanned as the frame grows).
#[derive(Debug, Clone)]
pub struct Scanner {
    /// The last `MAX_PATTERN` characters, as a ring.
    recent: [char; MAX_PATTERN],
    /// `runs[p - MIN_PATTERN]`: how many characters in a row equal the one
    /// `p` places before them.
    runs: [usize; MAX_PATTERN - MIN_PATTERN + 1],
    chars: usize,
    bytes: usize,
}

/// Where a [`Scanner`] tripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trip {
    /// The reference's sentence, as [`check`] gives it.
    pub sentence: String,
    /// Bytes of argument text up to and including the tripping character.
    pub bytes: usize,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            recent: ['\0'; MAX_PATTERN],
            runs: [0; MAX_PATTERN - MIN_PATTERN + 1],
            chars: 0,
            bytes: 0,
        }
    }
}

impl Scanner {
    /// A scanner that has seen no characters yet.
    pub fn new() -> Self {
        Scanner::default()
    }

    /// Characters seen so far.
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// The character `back` places before the newest (1 = the newest).
    fn before(&self, back: usize) -> char {
        self.recent[(self.chars + MAX_PATTERN - back) % MAX_PATTERN]
    }

    /// Feed the next piece of argument text; stops at the first character
    /// that trips the guard (the rest of `text` is not looked at).
    pub fn feed(&mut self, text: &str) -> Option<Trip> {
        for c in text.chars() {
            for (i, run) in self.runs.iter_mut().enumerate() {
                let p = i + MIN_PATTERN;
                *run = if self.chars >= p && self.recent[(self.chars - p) % MAX_PATTERN] == c {
                    *run + 1
                } else {
                    0
                };
            }
            self.recent[self.chars % MAX_PATTERN] = c;
            self.chars += 1;
            self.bytes += c.len_utf8();
            if self.bytes > MAX_ARGUMENT_BYTES {
                return Some(self.trip(size_sentence(self.bytes)));
            }
            // The window of the last 256 characters has period p when its
            // last 256 - p characters each equal the one p before.
            let period = (MIN_PATTERN..=MAX_PATTERN)
                .find(|&p| self.runs[p - MIN_PATTERN] >= WINDOW_CHARS - p);
            if let Some(p) = period {
                let pattern: String = (1..=p).rev().map(|back| self.before(back)).collect();
                return Some(self.trip(pattern_sentence(self.chars, &pattern)));
            }
        }
        None
    }

    fn trip(&self, sentence: String) -> Trip {
        Trip {
            sentence,
            bytes: self.bytes,
        }
    }
}

/// The shortest P in 4..=64 for which the window repeats with period P.
fn shortest_period(window: &[char; WINDOW_CHARS]) -> Option<usize> {
    (MIN_PATTERN..=MAX_PATTERN)
        .find(|&p| window[p..].iter().zip(window.iter()).all(|(a, b)| a == b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_str(s: &str) -> Option<String> {
        check(s, s.chars().count())
    }

    #[test]
    fn exact_pattern_sentence() {
        let args = format!("{{\"content\":\"{}", "ab12".repeat(70));
        let n = args.chars().count();
        assert_eq!(
            check_str(&args).unwrap(),
            format!(
                "[error: the model's tool call ran away: its arguments repeat the same pattern ({n} characters so far: \"ab12\") — generation stopped; rephrase the request, or try another model]"
            )
        );
    }

    #[test]
    fn exact_size_sentence() {
        // Size is checked first, so even periodic text over the limit reports
        // the size sentence.
        let args = "abcd".repeat(70_000);
        assert_eq!(
            check_str(&args).unwrap(),
            "[error: the model's tool call ran away: its arguments passed 256 KiB (280000 bytes so far) — generation stopped; rephrase the request, or try another model]"
        );
    }

    #[test]
    fn size_limit_is_strictly_over_262144_bytes() {
        // A non-repeating text: decimal numbers in sequence.
        let mut s = String::new();
        let mut i = 0u64;
        while s.len() < MAX_ARGUMENT_BYTES {
            s.push_str(&i.to_string());
            s.push(',');
            i += 1;
        }
        s.truncate(MAX_ARGUMENT_BYTES);
        assert_eq!(check_str(&s), None);
        s.push('9');
        assert_eq!(check_str(&s), Some(size_sentence(MAX_ARGUMENT_BYTES + 1)));
    }

    #[test]
    fn shortest_repeating_length_of_at_least_four() {
        // "aaaa…" has period 1; the pattern reported is 4 characters.
        let s = "a".repeat(300);
        assert!(
            check_str(&s)
                .unwrap()
                .contains("(300 characters so far: \"aaaa\")")
        );
        // Period 2 -> 4 characters.
        let s = "xy".repeat(200);
        assert!(check_str(&s).unwrap().contains("\"xyxy\")"));
        // Period 6.
        let s = "abcdef".repeat(50);
        assert!(
            check_str(&s)
                .unwrap()
                .contains("(300 characters so far: \"abcdef\")")
        );
        // Period 64 is still caught; 65 is not.
        let p64: String = (0..64).map(|i| char::from(b'!' + i as u8)).collect();
        assert!(check_str(&p64.repeat(5)).is_some());
        let p65: String = (0..65).map(|i| char::from(b'!' + i as u8)).collect();
        assert_eq!(check_str(&p65.repeat(5)), None);
    }

    #[test]
    fn pattern_is_the_last_p_characters_as_json() {
        // The tail ends mid-pattern: the reported pattern is the last P chars.
        let s = format!("{}\"a", "\"abc\\n".repeat(60));
        let out = check_str(&s).unwrap();
        // last 6 chars: `bc\n"a` -> JSON: "bc\\n\"a"
        assert!(
            out.contains(r#"(362 characters so far: "bc\\n\"a")"#),
            "{out}"
        );
    }

    #[test]
    fn needs_the_whole_window_repeating() {
        // 255 repeating characters after a distinct prefix: not yet.
        let s = format!("{{\"k\":\"{}", "abcd".repeat(63));
        assert_eq!(check_str(&s), None);
        let mut normal = String::from("{\"path\":\"src/main.rs\",\"content\":\"");
        normal.push_str(
            "fn main() {\n    println!(\"hello, world\");\n}\n"
                .repeat(3)
                .as_str(),
        );
        normal.push_str("// the end of the file, with text that does not repeat at all here.\"}");
        assert_eq!(check_str(&normal), None);
    }

    /// The scanner trips exactly where `check` on every prefix first does,
    /// with the same sentence, whatever the pieces.
    fn scan_agrees(text: &str) {
        let mut want = None;
        let mut so_far = String::new();
        for c in text.chars() {
            so_far.push(c);
            if let Some(sentence) = check_str(&so_far) {
                want = Some(Trip {
                    sentence,
                    bytes: so_far.len(),
                });
                break;
            }
        }
        for piece in [1, 3, 50, 1000, usize::MAX] {
            let mut s = Scanner::new();
            let mut got = None;
            let mut rest = text;
            while !rest.is_empty() && got.is_none() {
                let mut cut = piece.min(rest.len());
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                got = s.feed(&rest[..cut]);
                rest = &rest[cut..];
            }
            assert_eq!(got, want, "pieces of {piece}");
        }
    }

    #[test]
    fn scanner_trips_where_check_does() {
        scan_agrees(&format!("{{\"content\":\"{}", "ab12".repeat(100)));
        scan_agrees(&"a".repeat(300));
        scan_agrees(&"xy".repeat(200));
        scan_agrees(&format!("{}\"a", "\"abc\\n".repeat(60)));
        scan_agrees(&"é→🙂x".repeat(80));
        // A period that changes: first 5, then 7.
        scan_agrees(&format!("{}{}", "abcde".repeat(40), "qrstuvw".repeat(60)));
        let p64: String = (0..64).map(|i| char::from(b'!' + i as u8)).collect();
        scan_agrees(&p64.repeat(5));
        // Never trips: period 65, and ordinary text.
        let p65: String = (0..65).map(|i| char::from(b'!' + i as u8)).collect();
        scan_agrees(&p65.repeat(5));
        scan_agrees(&"fn main() {\n    println!(\"hello\");\n}\n// the end.".repeat(3));
    }

    #[test]
    fn scanner_trips_on_size() {
        let mut s = String::new();
        let mut i = 0u64;
        while s.len() < MAX_ARGUMENT_BYTES + 10 {
            s.push_str(&i.to_string());
            s.push(',');
            i += 1;
        }
        let mut scanner = Scanner::new();
        let trip = scanner.feed(&s).unwrap();
        assert_eq!(
            trip,
            Trip {
                sentence: size_sentence(MAX_ARGUMENT_BYTES + 1),
                bytes: MAX_ARGUMENT_BYTES + 1
            }
        );
        assert_eq!(scanner.chars(), MAX_ARGUMENT_BYTES + 1);
    }

    #[test]
    fn counts_characters_not_bytes() {
        let s = "é→🙂x".repeat(80);
        let out = check_str(&s).unwrap();
        assert!(out.contains("(320 characters so far: \"é→🙂x\")"), "{out}");
    }
}
