//! The `<think>` splitter: content cut into chunks at any character gives
//! the same answer text and reasoning as the whole content, and both are
//! what the rule says: a `<think>` block at the start
//! (after whitespace) is reasoning up to `</think>`, the answer follows with
//! its leading whitespace dropped; content without one is all answer.
//!
//! Input: byte 0 seeds the cut points, the rest (UTF-8) is the content.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm_engine::fuzzing::split_think;

/// What the rule gives for the whole content: `(text, reasoning)`.
fn oracle(content: &str) -> (String, String) {
    match content.trim_start().strip_prefix("<think>") {
        Some(rest) => match rest.find("</think>") {
            Some(end) => (
                rest[end + "</think>".len()..].trim_start().to_owned(),
                rest[..end].to_owned(),
            ),
            None => (String::new(), rest.to_owned()),
        },
        None => (content.to_owned(), String::new()),
    }
}

fuzz_target!(|data: &[u8]| {
    let [seed, rest @ ..] = data else {
        return;
    };
    let Ok(content) = std::str::from_utf8(rest) else {
        return;
    };
    let whole = split_think(&[content]);
    // gpt-oss's harmony channels have rules of their own (unit tests in
    // mm-engine's think.rs); for them only the cuts are checked below.
    let lead = content.trim_start();
    let harmony = lead
        .strip_prefix("<|start|>assistant")
        .unwrap_or(lead)
        .starts_with("<|channel|>");
    if !harmony {
        assert_eq!(whole, oracle(content), "whole content {content:?}");
    }

    // Cut before characters picked by the seed's bits (cycled), so any
    // split pattern is reachable, one-character chunks included.
    let mut pieces = Vec::new();
    let mut start = 0;
    for (n, (i, _)) in content.char_indices().enumerate() {
        if i > 0 && (seed >> (n % 8)) & 1 == 1 {
            pieces.push(&content[start..i]);
            start = i;
        }
    }
    pieces.push(&content[start..]);
    assert_eq!(split_think(&pieces), whole, "pieces {pieces:?}");
});
