//! An MCP server with thousands of tools, through `mm-repl -p` against the
//! mock model: the question is answered, the first request stays small,
//! and the model finds and uses a tool the first request did not list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, messages, text};
use mm_mock::Reply;
use mm_test_support::mcp;

#[test]
fn two_thousand_mcp_tools_neither_fail_the_question_nor_fill_the_window() {
    // The model searches, reveals the tool it found, and calls it.
    let w = World::serving(
        vec![
            Reply::tool_call("c1", "mcp", r#"{"query":"filler_1999"}"#),
            Reply::tool_call("c2", "mcp", r#"{"tool":"big/filler_1999"}"#),
            Reply::tool_call("c3", "mcp__big__filler_1999", r#"{"value":"x"}"#),
            Reply::text("Found it."),
        ],
        &format!(
            "mcpServers:\n  big:\n    command: {}\n    args: [\"--fillers\", \"2000\"]\nmcp:\n  startTimeout: 30\n",
            mcp::fake_server().display()
        ),
        // A server of 32768 tokens, which refuses any request longer.
        mm_mock::Options {
            window: Some(32768),
            ..mm_mock::Options::default()
        },
    );
    let out = w.run(&["-p", "use the big server"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "Found it.\n");
    assert!(!stderr.contains("did not fit"), "{stderr}");

    let chats = w.chats();
    assert_eq!(chats.len(), 4, "{stderr}");
    // The first request: mm's prompt and tools and a bounded listing.
    let first = chats[0].to_string();
    assert!(
        first.len() < 14 * 1024,
        "first request of {} bytes",
        first.len()
    );
    let tools = chats[0]["tools"].as_array().unwrap();
    let mcp = &tools.last().unwrap()["function"];
    assert_eq!(mcp["name"], "mcp");
    let listing = mcp["description"].as_str().unwrap();
    assert!(listing.len() < 3 * 1024, "{listing}");
    assert!(
        listing.contains("\nbig/echo — Echoes the text back"),
        "{listing}"
    );
    assert!(
        listing.contains(" more: call with {\"query\": "),
        "{listing}"
    );
    assert!(!listing.contains("filler_1999"), "{listing}");

    let results: Vec<String> = messages(&chats[3])
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results[0].starts_with("MCP tools 1–1 of 1 matching \"filler_1999\":\nbig/filler_1999 — "),
        "{}",
        results[0]
    );
    assert!(
        results[1].starts_with("mcp__big__filler_1999 is declared from now on"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("filler_1999"), "{}", results[2]);
    // Every request stayed well inside the window.
    for (i, c) in chats.iter().enumerate() {
        let size = c.to_string().len();
        assert!(size < 16 * 1024, "request {i} of {size} bytes");
    }
}
