//! The SSE / NDJSON stream parsers of every wire, as the engine drives them
//! (framing decoder, the provider's frame parser, the assembler and its
//! runaway guard), fed arbitrary bytes:
//! - nothing panics, whole or streamed response;
//! - a body cut into chunks anywhere parses exactly as the whole body;
//! - the text events add up to the message's content;
//! - the runaway guard's view of a frame still arriving lies inside it.
//!
//! Input: byte 0 picks the wire, byte 1 seeds the cut points, the rest is
//! the response body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm_engine::fuzzing::{self, Parsed, WIRES};
use mm_engine::{Message, StreamEvent, runaway};

/// Cut points from `seed` (0 to 7 of them, sorted; repeats give empty
/// chunks, and so does the seed's high bit after every cut).
fn cuts(seed: u8, len: usize) -> Vec<usize> {
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut out: Vec<usize> = (0..seed % 8)
        .map(|_| {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (state >> 8) as usize % (len + 1)
        })
        .collect();
    out.sort_unstable();
    out
}

/// The message without the ids the engine makes up for servers that send
/// none (fresh on every parse).
fn comparable(m: &Message) -> Message {
    let mut m = m.clone();
    if let Message::Assistant { tool_calls, .. } = &mut m {
        for c in tool_calls {
            if c.id.starts_with("call_") {
                c.id.clear();
            }
        }
    }
    m
}

fn text_of(p: &Parsed) -> String {
    p.events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [w, seed, body @ ..] = data else {
        return;
    };
    let wire = WIRES[usize::from(*w) % WIRES.len()];

    let whole = fuzzing::parse_stream(wire, &[body]).expect("known wire");
    let mut pieces = Vec::new();
    let mut at = 0;
    for cut in cuts(*seed, body.len()) {
        pieces.push(&body[at..cut]);
        // Servers (and HTTP layers) may hand over empty chunks too.
        if seed & 0x80 != 0 {
            pieces.push(&[]);
        }
        at = cut;
    }
    pieces.push(&body[at..]);
    let split = fuzzing::parse_stream(wire, &pieces).expect("known wire");
    assert_eq!(
        comparable(&whole.message),
        comparable(&split.message),
        "{wire}: cut at {:?}",
        cuts(*seed, body.len())
    );
    assert_eq!(whole.error, split.error, "{wire}");
    // (A stream stopped by an error keeps held-back text it never showed.)
    if let (Message::Assistant { content, .. }, None) = (&whole.message, &whole.error) {
        assert_eq!(&text_of(&whole), content, "{wire}: events vs message");
    }

    let _ = fuzzing::parse_response(wire, body);

    if let Ok(text) = std::str::from_utf8(body) {
        let range = text.as_ptr() as usize..text.as_ptr() as usize + text.len();
        if let Some((name, args)) = fuzzing::partial_call(wire, text) {
            for part in [name, args] {
                let p = part.as_ptr() as usize;
                assert!(
                    part.is_empty() || (range.contains(&p) && p + part.len() <= range.end),
                    "{wire}: partial call outside the frame"
                );
            }
            let _ = runaway::check(args, args.chars().count());
        }
    }
});
