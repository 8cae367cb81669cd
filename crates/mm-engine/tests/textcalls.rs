//! Tool calls written as text, over every wire: each fixture of
//! `tests/fixtures/textcalls/` (sources in its README) is played as the
//! answer text of a response in the mock's rendering of the OpenAI SSE,
//! Ollama NDJSON, Anthropic and Gemini formats, the body cut at every byte
//! (and sent whole, as the non-streaming fallback gets it), and must give
//! the same text, reasoning and calls every time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use mm_engine::fuzzing::{self, Parsed, WIRES};
use mm_engine::{Message, StreamEvent, ToolDecl};
use mm_mock::{Step, render_body};
use serde_json::{Value, json};

fn tools() -> Vec<ToolDecl> {
    vec![
        ToolDecl {
            name: "bash".into(),
            description: "Run a shell command.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command."}},
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
                    "start": {"type": "integer", "minimum": 0},
                    "numbered": {"type": "boolean"}
                },
                "required": ["path"]
            }),
        },
    ]
}

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/textcalls")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a response gave, with made ids left out.
#[derive(Debug, PartialEq)]
struct Seen {
    content: String,
    reasoning: String,
    calls: Vec<(String, Value)>,
    /// Text events joined: what a front end showed.
    shown: String,
}

fn seen(p: Parsed) -> Seen {
    assert_eq!(p.error, None);
    let Message::Assistant {
        content,
        reasoning,
        tool_calls,
    } = p.message
    else {
        panic!("not an assistant message")
    };
    let mut shown = String::new();
    let (mut started, mut finished) = (0, Vec::new());
    for e in p.events {
        match e {
            StreamEvent::Text(t) => shown.push_str(&t),
            StreamEvent::ToolCallStarted { .. } => started += 1,
            StreamEvent::ToolCallFinished(c) => finished.push(c),
            _ => {}
        }
    }
    // Every recovered call is announced and finished like a native one,
    // with a made id.
    assert_eq!(started, tool_calls.len());
    assert_eq!(finished, tool_calls);
    for c in &tool_calls {
        assert!(c.id.starts_with("call_"), "{}", c.id);
    }
    Seen {
        content,
        reasoning: reasoning.iter().map(|r| r.text.as_str()).collect(),
        calls: tool_calls
            .into_iter()
            .map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap()))
            .collect(),
        shown,
    }
}

/// The answer as text steps of `piece` bytes (markup spread over frames;
/// a step may be longer to end on a character boundary).
fn steps(text: &str, piece: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut n = piece.min(rest.len());
        while !rest.is_char_boundary(n) {
            n += 1;
        }
        out.push(Step::text(&rest[..n]));
        rest = &rest[n..];
    }
    out
}

fn check(file: &str, content: &str, reasoning: &str, calls: Vec<(&str, Value)>) {
    let text = fixture(file);
    let tools = tools();
    let want = Seen {
        content: content.to_owned(),
        reasoning: reasoning.to_owned(),
        calls: calls.into_iter().map(|(n, a)| (n.to_owned(), a)).collect(),
        shown: content.to_owned(),
    };
    for wire in WIRES {
        // A character per frame: the text is cut everywhere once.
        let body = render_body(wire, &steps(&text, 1), true).unwrap();
        let got = seen(fuzzing::parse_stream_with(wire, &[&body], &tools).unwrap());
        assert_eq!(got, want, "{file} over {wire}, a character per frame");
        // Frames of a few characters, the body cut at every byte.
        let body = render_body(wire, &steps(&text, 24), true).unwrap();
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            let got = seen(fuzzing::parse_stream_with(wire, &[a, b], &tools).unwrap());
            assert_eq!(got, want, "{file} over {wire}, cut at byte {cut}");
        }
        // The answer in one frame, and the whole (non-streaming) response.
        let one = render_body(wire, &[Step::text(&text)], true).unwrap();
        let got = seen(fuzzing::parse_stream_with(wire, &[&one], &tools).unwrap());
        assert_eq!(got, want, "{file} over {wire} in one frame");
        let body = render_body(wire, &[Step::text(&text)], false).unwrap();
        let got = seen(fuzzing::parse_response_with(wire, &body, &tools).unwrap());
        assert_eq!(got, want, "{file} over {wire}, whole response");
    }
}

#[test]
fn hermes_qwen25() {
    check(
        "hermes.txt",
        "I will list the files first.\n",
        "",
        vec![("bash", json!({"command": "ls -la"}))],
    );
    check(
        "hermes-two.txt",
        "",
        "",
        vec![
            ("read_file", json!({"path": "src/main.rs", "start": 1})),
            ("bash", json!({"command": "cargo test"})),
        ],
    );
}

#[test]
fn qwen3_coder_xml() {
    check(
        "qwen3-coder.txt",
        "",
        "",
        vec![(
            "read_file",
            json!({"path": "src/main.rs", "start": 10, "numbered": true}),
        )],
    );
    check(
        "qwen3-coder-unclosed.txt",
        "Checking the build.\n\n",
        "",
        vec![("bash", json!({"command": "cargo build 2>&1 | tail -n 20"}))],
    );
}

#[test]
fn llama() {
    check(
        "llama-python-tag.txt",
        "",
        "",
        vec![("bash", json!({"command": "ls"}))],
    );
    check(
        "llama-bare.txt",
        "",
        "",
        vec![("bash", json!({"command": "git status"}))],
    );
    check(
        "llama-function.txt",
        "",
        "",
        vec![("read_file", json!({"path": "README.md"}))],
    );
}

#[test]
fn mistral() {
    check(
        "mistral-v3.txt",
        "",
        "",
        vec![("bash", json!({"command": "ls"}))],
    );
    check(
        "mistral-v11.txt",
        "",
        "",
        vec![
            ("bash", json!({"command": "ls"})),
            ("read_file", json!({"path": "Cargo.toml"})),
        ],
    );
}

#[test]
fn fenced() {
    check(
        "fenced.txt",
        "",
        "",
        vec![("bash", json!({"command": "ls"}))],
    );
    check(
        "fenced-after-text.txt",
        "Let me run the tests.\n",
        "",
        vec![("bash", json!({"command": "cargo test"}))],
    );
}

#[test]
fn not_calls_stay_text() {
    for file in ["undeclared.txt", "broken-json.txt"] {
        let text = fixture(file);
        check(file, &text, "", vec![]);
    }
}

#[test]
fn a_call_inside_reasoning_is_not_run() {
    let text = fixture("in-reasoning.txt");
    let reasoning = text
        .strip_prefix("<think>")
        .unwrap()
        .split("</think>")
        .next()
        .unwrap();
    check(
        "in-reasoning.txt",
        "No tool is needed: the answer is 4.",
        reasoning,
        vec![],
    );
}

#[test]
fn without_declared_tools_every_fixture_is_text() {
    for file in [
        "hermes.txt",
        "qwen3-coder.txt",
        "mistral-v11.txt",
        "llama-bare.txt",
    ] {
        let text = fixture(file);
        for wire in WIRES {
            let body = render_body(wire, &steps(&text, 24), true).unwrap();
            let got = seen(fuzzing::parse_stream_with(wire, &[&body], &[]).unwrap());
            assert_eq!(got.content, text, "{file} over {wire}");
            assert!(got.calls.is_empty());
        }
    }
}
