//! Pure entry points for the fuzz targets in `fuzz/`: the
//! stream parsers, the think splitter and the recogniser of tool calls
//! written as text, fed bytes directly, without a network or a runtime.
//! Hidden and not an API: it exists so that the parsers themselves can stay
//! private.

use mm_config::Thinking;

use crate::assemble::Assembler;
use crate::frames::Decoder;
use crate::providers::{self, ProviderSettings};
use crate::textcalls::{Out, Recogniser};
use crate::think::{Piece, ThinkSplitter};
use crate::types::{Message, StreamEvent, ToolDecl};
use crate::wire::{Flow, Provider};

/// The wire formats, by registry name (openai-compatible is openai's).
pub const WIRES: &[&str] = &["ollama", "openai", "anthropic", "gemini"];

/// What a response gave: the events in order, the assembled message (as
/// far as it got), and the one-line error that stopped it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub events: Vec<StreamEvent>,
    pub message: Message,
    pub error: Option<String>,
}

fn provider(wire: &str) -> Option<Box<dyn Provider>> {
    let spec = providers::lookup(wire)?;
    Some((spec.build)(ProviderSettings {
        model: "fuzz".to_owned(),
        base_url: "http://127.0.0.1:9".to_owned(),
        key: None,
        max_tokens: 1024,
        context_window: 4096,
        thinking: Thinking::Off,
        cache_control: true,
        cache_key: None,
        output_schema: None,
        constrained_calls: false,
        reasoning_back: false,
        slot: None,
    }))
}

/// Feed a streamed response body, cut into `chunks`, to `wire`'s parser
/// the way the driver does: the framing decoder, the provider's frame
/// parser, and the assembler (tool calls, think tags, runaway guard).
/// `None` for an unknown wire.
pub fn parse_stream(wire: &str, chunks: &[&[u8]]) -> Option<Parsed> {
    parse_stream_with(wire, chunks, &[])
}

/// [`parse_stream`] with tool calls written as text recovered for the
/// declared `tools` (as the engine does unless `textToolCalls: off`).
pub fn parse_stream_with(wire: &str, chunks: &[&[u8]], tools: &[ToolDecl]) -> Option<Parsed> {
    let provider = provider(wire)?;
    let mut events = Vec::new();
    let mut sink = |e: StreamEvent| events.push(e);
    let mut asm = Assembler::new(&mut sink).with_text_calls(tools);
    let mut decoder = Decoder::new(provider.framing());
    let mut fed = Ok(Flow::Continue);
    for chunk in chunks {
        fed = decoder.feed(chunk, &mut |event, data| {
            provider.parse_frame(event, data, &mut asm)
        });
        if !matches!(fed, Ok(Flow::Continue)) {
            break;
        }
    }
    if matches!(fed, Ok(Flow::Continue)) {
        fed = decoder.finish(&mut |event, data| provider.parse_frame(event, data, &mut asm));
    }
    let (message, error) = match fed {
        Ok(_) => (asm.finish().0, None),
        Err(e) => (asm.partial().0, Some(e.to_string())),
    };
    Some(Parsed {
        events,
        message,
        error,
    })
}

/// Feed a whole (non-streaming) response body to `wire`'s parser.
pub fn parse_response(wire: &str, body: &[u8]) -> Option<Parsed> {
    parse_response_with(wire, body, &[])
}

/// [`parse_response`] with tool calls written as text recovered for the
/// declared `tools`.
pub fn parse_response_with(wire: &str, body: &[u8], tools: &[ToolDecl]) -> Option<Parsed> {
    let provider = provider(wire)?;
    let mut events = Vec::new();
    let mut sink = |e: StreamEvent| events.push(e);
    let mut asm = Assembler::new(&mut sink).with_text_calls(tools);
    let (message, error) = match provider.parse_response(body, &mut asm) {
        Ok(()) => (asm.finish().0, None),
        Err(e) => (asm.partial().0, Some(e.to_string())),
    };
    Some(Parsed {
        events,
        message,
        error,
    })
}

/// What the runaway guard sees of a frame still arriving (wires that send a
/// call whole): `(name, argument text so far)`, found in `partial`.
pub fn partial_call<'a>(wire: &str, partial: &'a str) -> Option<(&'a str, &'a str)> {
    provider(wire)?.partial_call(partial)
}

/// Split content fed as `chunks` into `(answer text, reasoning)`, each the
/// concatenation of its pieces.
pub fn split_think(chunks: &[&str]) -> (String, String) {
    let (mut text, mut reasoning) = (String::new(), String::new());
    let mut out = |p: Piece<'_>| match p {
        Piece::Text(t) => text.push_str(t),
        Piece::Reasoning(r) => reasoning.push_str(r),
    };
    let mut splitter = ThinkSplitter::new();
    for chunk in chunks {
        splitter.push(chunk, &mut out);
    }
    splitter.finish(&mut out);
    (text, reasoning)
}

/// What the recogniser of tool calls written as text made of an answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recognised {
    /// The answer text, all pieces joined.
    pub text: String,
    /// Each piece of text as it was released.
    pub pieces: Vec<String>,
    /// The recovered calls: tool name and arguments (JSON object text).
    pub calls: Vec<(String, String)>,
    /// The runaway guard's sentence, when it stopped the answer.
    pub runaway: Option<String>,
}

/// Feed answer text cut into `chunks` to the recogniser of tool calls
/// written as text, for the declared `tools`.
pub fn recognise(tools: &[ToolDecl], chunks: &[&str]) -> Recognised {
    let mut got = Recognised::default();
    let mut take = |o: Out<'_>| match o {
        Out::Text(t) => {
            got.text.push_str(t);
            got.pieces.push(t.to_owned());
        }
        Out::Call(c) => got.calls.push((c.name, c.arguments)),
    };
    let mut r = Recogniser::new(tools);
    let mut runaway = None;
    for chunk in chunks {
        if let Err(trip) = r.push(chunk, &mut take) {
            runaway = Some(trip.sentence);
            break;
        }
    }
    if runaway.is_none() {
        r.finish(&mut take);
    }
    got.runaway = runaway;
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_cut_anywhere_parses_the_same() {
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"<think>hm</think> h\xc3\xa9llo\"}}]}\r\n\r\ndata: [DONE]\n\n";
        let whole = parse_stream("openai", &[body]).unwrap();
        assert_eq!(whole.error, None);
        assert_eq!(
            whole.message,
            Message::Assistant {
                content: "héllo".into(),
                reasoning: vec![crate::types::Reasoning {
                    text: "hm".into(),
                    signature: None,
                    redacted: None
                }],
                tool_calls: vec![],
            }
        );
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(
                parse_stream("openai", &[a, b]).unwrap().message,
                whole.message,
                "cut {cut}"
            );
        }
        assert!(parse_stream("nope", &[body]).is_none());
    }

    /// Found by reading what the stream target's empty chunks exercise:
    /// an empty chunk between a CR and its LF made the LF a second line end,
    /// which dispatched half an event (fixed in `frames::Lines::feed`).
    #[test]
    fn an_empty_chunk_between_cr_and_lf_changes_nothing() {
        // One event whose JSON spans two data lines (joined by LF).
        let body = b"data: {\"choices\":[{\"delta\":\r\ndata: {\"content\":\"a\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
        let whole = parse_stream("openai", &[body]).unwrap();
        let cr = body.iter().position(|b| *b == b'\r').unwrap() + 1;
        let (a, b) = body.split_at(cr);
        let split = parse_stream("openai", &[a, b"", b]).unwrap();
        assert_eq!(split, whole);
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        let parsed = parse_stream("ollama", &[b"{\"message\":\n"]).unwrap();
        assert!(parsed.error.is_some());
        let parsed = parse_response("anthropic", b"not json").unwrap();
        assert!(parsed.error.is_some());
    }

    #[test]
    fn think_tags_split_across_chunks() {
        assert_eq!(
            split_think(&["<thi", "nk>a</th", "ink>  b"]),
            ("b".to_owned(), "a".to_owned())
        );
    }

    #[test]
    fn partial_calls_are_slices_of_the_frame() {
        let frame =
            r#"{"message":{"tool_calls":[{"function":{"name":"bash","arguments":{"command":"ab"#;
        let (name, args) = partial_call("ollama", frame).unwrap();
        assert_eq!(name, "bash");
        assert!(args.starts_with("{\"command\""), "{args}");
    }
}
