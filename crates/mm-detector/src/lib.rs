//! mm-detector: the loop detector: counts identical (tool, input, output)
//! triples in a row and says when to warn and when to stop. It knows nothing
//! of what a tool does.
//!
//! It owns the repeat counter and its two texts
//! (docs/reference/tools.md#guards). It must never run a tool, print, or
//! look inside an output: outputs are compared as opaque text, inputs as
//! canonical JSON so that spacing or key order cannot hide a repeat.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

use mm_types::json::{self, KeyOrder};
use serde_json::Value;

/// Identical calls in a row from which the warning is appended.
pub const WARN_AT: u32 = 3;
/// Identical calls in a row from which the turn is stopped.
pub const STOP_AT: u32 = 6;

/// What the caller must do after recording a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing special.
    Ok,
    /// 3rd to 5th identical call in a row: append [`loop_detected_text`].
    Warn,
    /// 6th identical call in a row (and every later one): the turn ends with
    /// [`stop_text`].
    Stop,
}

/// The text appended to a repeated call's output.
pub fn loop_detected_text() -> &'static str {
    "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. Please try a different approach or provide more information.]"
}

/// The sentence that ends a turn at the 6th identical call; "failing" is
/// kept whatever the output was.
pub fn stop_text(tool: &str) -> String {
    format!(
        "[error: the model repeated the same {tool} call 6 times in a row with the same failing result — turn stopped by the loop detector; rephrase the request, or fix what the tool kept reporting]"
    )
}

/// The call last seen, in the form it is compared in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Triple {
    tool: String,
    input: String,
    output: String,
}

/// Counts identical calls in a row. One per session: `/new` calls
/// [`Detector::reset`], `/compact` does not (a forgotten conversation does not
/// make a repeated command new).
#[derive(Debug, Default)]
pub struct Detector {
    last: Option<Triple>,
    count: u32,
}

impl Detector {
    /// A detector that has seen no call yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one call that ran. `input` is the arguments text as the model
    /// sent it.
    pub fn record(&mut self, tool: &str, input: &str, output: &str) -> Verdict {
        let triple = Triple {
            tool: tool.to_string(),
            input: canonical_input(input),
            output: output.to_string(),
        };
        if self.last.as_ref() == Some(&triple) {
            self.count = self.count.saturating_add(1);
        } else {
            self.last = Some(triple);
            self.count = 1;
        }
        if self.count >= STOP_AT {
            Verdict::Stop
        } else if self.count >= WARN_AT {
            Verdict::Warn
        } else {
            Verdict::Ok
        }
    }

    /// How many identical calls in a row were last recorded.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Forget everything (`/new`).
    pub fn reset(&mut self) {
        self.last = None;
        self.count = 0;
    }
}

/// The arguments as canonical JSON (parsed, object keys sorted, no spaces);
/// text that is not valid JSON is compared raw.
pub fn canonical_input(input: &str) -> String {
    match serde_json::from_str::<Value>(input) {
        Ok(value) => json::to_text(&value, KeyOrder::Sorted),
        Err(_) => input.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOP: &str = "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. Please try a different approach or provide more information.]";

    fn verdicts(d: &mut Detector, n: usize, tool: &str, input: &str, output: &str) -> Vec<Verdict> {
        (0..n).map(|_| d.record(tool, input, output)).collect()
    }

    #[test]
    fn texts_are_the_references() {
        assert_eq!(loop_detected_text(), LOOP);
        assert_eq!(
            stop_text("edit_file"),
            "[error: the model repeated the same edit_file call 6 times in a row with the same failing result — turn stopped by the loop detector; rephrase the request, or fix what the tool kept reporting]"
        );
        assert_eq!(
            stop_text("bash"),
            "[error: the model repeated the same bash call 6 times in a row with the same failing result — turn stopped by the loop detector; rephrase the request, or fix what the tool kept reporting]"
        );
    }

    #[test]
    fn warns_from_the_third_and_stops_at_the_sixth() {
        let mut d = Detector::new();
        let v = verdicts(&mut d, 7, "bash", r#"{"command":"ls"}"#, "a\n");
        use Verdict::*;
        assert_eq!(v, vec![Ok, Ok, Warn, Warn, Warn, Stop, Stop]);
        assert_eq!(d.count(), 7);
    }

    #[test]
    fn a_different_call_restarts_the_count() {
        use Verdict::*;
        let mut d = Detector::new();
        assert_eq!(
            verdicts(&mut d, 4, "bash", "{\"command\":\"ls\"}", "x"),
            vec![Ok, Ok, Warn, Warn]
        );
        // A different output is a different call.
        assert_eq!(d.record("bash", "{\"command\":\"ls\"}", "y"), Ok);
        assert_eq!(d.count(), 1);
        assert_eq!(
            verdicts(&mut d, 2, "bash", "{\"command\":\"ls\"}", "y"),
            vec![Ok, Warn]
        );
        // A different tool with the same input and output.
        assert_eq!(d.record("read_file", "{\"command\":\"ls\"}", "y"), Ok);
        // A different input.
        assert_eq!(d.record("read_file", "{\"command\":\"pwd\"}", "y"), Ok);
        assert_eq!(d.record("read_file", "{\"command\":\"pwd\"}", "y"), Ok);
        assert_eq!(d.record("read_file", "{\"command\":\"pwd\"}", "y"), Warn);
    }

    #[test]
    fn interleaved_calls_never_warn() {
        let mut d = Detector::new();
        for _ in 0..10 {
            assert_eq!(d.record("bash", "{\"command\":\"a\"}", "o"), Verdict::Ok);
            assert_eq!(d.record("bash", "{\"command\":\"b\"}", "o"), Verdict::Ok);
        }
    }

    #[test]
    fn reset_forgets_the_last_call() {
        let mut d = Detector::new();
        assert_eq!(d.record("bash", "{}", "o"), Verdict::Ok);
        assert_eq!(d.record("bash", "{}", "o"), Verdict::Ok);
        d.reset();
        assert_eq!(d.count(), 0);
        assert_eq!(d.record("bash", "{}", "o"), Verdict::Ok);
        assert_eq!(d.record("bash", "{}", "o"), Verdict::Ok);
        assert_eq!(d.record("bash", "{}", "o"), Verdict::Warn);
    }

    #[test]
    fn spacing_and_key_order_do_not_hide_a_repeat() {
        use Verdict::*;
        let mut d = Detector::new();
        assert_eq!(
            d.record(
                "edit_file",
                r#"{"path":"a","edits":[{"old":"x","new":"y"}]}"#,
                "o"
            ),
            Ok
        );
        assert_eq!(
            d.record(
                "edit_file",
                r#"{ "edits" : [ { "new":"y", "old":"x" } ], "path":"a" }"#,
                "o"
            ),
            Ok
        );
        assert_eq!(
            d.record(
                "edit_file",
                "{\n\"path\": \"a\",\n\"edits\": [{\"new\": \"y\",\"old\": \"x\"}]}",
                "o"
            ),
            Warn
        );
        assert_eq!(d.count(), 3);
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        assert_eq!(
            canonical_input(r#"{ "b": {"z": 1, "a": [ {"d": null, "c": true} ]}, "a": "x\"y" }"#),
            r#"{"a":"x\"y","b":{"a":[{"c":true,"d":null}],"z":1}}"#
        );
        // Array order is meaningful and kept.
        assert_ne!(canonical_input("[1,2]"), canonical_input("[2,1]"));
    }

    #[test]
    fn invalid_json_is_compared_raw() {
        assert_eq!(canonical_input("{\"a\": "), "{\"a\": ");
        let mut d = Detector::new();
        assert_eq!(d.record("bash", "{oops", "o"), Verdict::Ok);
        // Raw comparison: different spacing is a different call.
        assert_eq!(d.record("bash", "{ oops", "o"), Verdict::Ok);
        assert_eq!(d.count(), 1);
        assert_eq!(d.record("bash", "{ oops", "o"), Verdict::Ok);
        assert_eq!(d.record("bash", "{ oops", "o"), Verdict::Warn);
    }
}
