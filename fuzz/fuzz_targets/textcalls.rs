//! The recogniser of tool calls written as text (`<tool_call>…`,
//! `<function=…>`, `<|python_tag|>…`, `[TOOL_CALLS]…`, a bare JSON object,
//! any of them in a Markdown fence), fed answer text whole and cut at any
//! characters, with `bash` and `read_file` declared:
//! - nothing panics;
//! - every cut gives the text, the calls and the runaway verdict of the
//!   whole;
//! - text with no call recovered comes out exactly as it went in;
//! - the text is the input with pieces taken out (markup, never added or
//!   reordered), and each call names a declared tool with a JSON object of
//!   arguments.
//!
//! Input: byte 0 seeds the cut points, the rest (UTF-8) is the answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm_engine::ToolDecl;
use mm_engine::fuzzing::recognise;
use serde_json::json;

fn tools() -> Vec<ToolDecl> {
    vec![
        ToolDecl {
            name: "bash".into(),
            description: "Run a shell command.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
        },
        ToolDecl {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start": {"type": "integer"},
                    "numbered": {"type": "boolean"}
                },
                "required": ["path"]
            }),
        },
    ]
}

/// Whether `small` is `big` with some pieces deleted.
fn is_subsequence(small: &str, big: &str) -> bool {
    let mut rest = big.chars();
    small.chars().all(|c| rest.any(|b| b == c))
}

fuzz_target!(|data: &[u8]| {
    let [seed, rest @ ..] = data else {
        return;
    };
    let Ok(answer) = std::str::from_utf8(rest) else {
        return;
    };
    let tools = tools();
    let whole = recognise(&tools, &[answer]);

    // Cut before characters picked by the seed's bits (cycled), so any
    // split pattern is reachable, one-character chunks included.
    let mut pieces = Vec::new();
    let mut start = 0;
    for (n, (i, _)) in answer.char_indices().enumerate() {
        if i > 0 && (seed >> (n % 8)) & 1 == 1 {
            pieces.push(&answer[start..i]);
            start = i;
        }
    }
    pieces.push(&answer[start..]);
    let split = recognise(&tools, &pieces);
    assert_eq!(
        (&split.text, &split.calls, &split.runaway),
        (&whole.text, &whole.calls, &whole.runaway),
        "pieces {pieces:?}"
    );

    if whole.runaway.is_some() {
        return;
    }
    if whole.calls.is_empty() {
        assert_eq!(whole.text, answer, "text without calls is untouched");
    } else {
        assert!(is_subsequence(&whole.text, answer), "{:?}", whole.text);
    }
    for (name, args) in &whole.calls {
        assert!(tools.iter().any(|t| &t.name == name), "{name}");
        let v: serde_json::Value = serde_json::from_str(args).expect("arguments are JSON");
        assert!(v.is_object(), "{args}");
    }
    for piece in &whole.pieces {
        assert!(!piece.is_empty(), "empty text piece");
    }
});
