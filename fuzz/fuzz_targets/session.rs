//! The session-file loader on arbitrary bytes (`mm_store::fuzzing`, the
//! parsers `Store::open` and the listing use), then what `--continue` does
//! with the history (`mm_agent::history::close_open_calls`): no panic; a
//! file that opens is listed with the same id and message count, saves and
//! opens again the same, and after closing every tool call has its result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm_agent::Message;
use mm_agent::history::close_open_calls;
use mm_store::fuzzing::{list_bytes, open_bytes};

fuzz_target!(|data: &[u8]| {
    let opened = open_bytes(data);
    let listed = list_bytes(data);
    let Ok(session) = opened else {
        if let Err(e) = opened {
            assert!(!e.to_string().is_empty());
        }
        return;
    };
    let (id, count) = listed.expect("a file that opens is listed");
    assert_eq!(id, session.id);
    assert_eq!(count, session.messages.len());

    let bytes = serde_json::to_vec(&session).expect("a loaded session encodes");
    assert_eq!(open_bytes(&bytes).expect("opens again"), session);

    let closed = close_open_calls(&session.messages);
    let mut open: Vec<&str> = Vec::new();
    for m in &closed {
        match m {
            Message::Tool { call_id, .. } => open.retain(|id| id != call_id),
            _ => assert!(open.is_empty(), "a call left without its result: {open:?}"),
        }
        if let Message::Assistant { tool_calls, .. } = m {
            open.extend(tool_calls.iter().map(|c| c.id.as_str()));
        }
    }
    assert!(open.is_empty(), "calls left without results: {open:?}");
});
