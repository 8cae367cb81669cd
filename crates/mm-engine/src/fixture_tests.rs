//! Each provider's documented stream examples (fixtures written after the
//! public API docs, in `crates/mm-mock/fixtures/` and `tests/fixtures/`)
//! replayed through the same decoder → provider → assembler path the
//! driver uses, whole and cut into small chunks.

use std::path::PathBuf;

use mm_config::Thinking;

use crate::assemble::Assembler;
use crate::error::EngineError;
use crate::frames::Decoder;
use crate::providers::{self, ProviderSettings};
use crate::types::{Message, Reasoning, StreamEvent, ToolCall, Usage};
use crate::wire::{Flow, Provider};

fn provider(name: &str) -> Box<dyn Provider> {
    let spec = providers::lookup(name).unwrap();
    (spec.build)(ProviderSettings {
        model: "m".into(),
        base_url: "http://127.0.0.1:1".into(),
        key: None,
        max_tokens: 8192,
        context_window: 32768,
        thinking: Thinking::Off,
        cache_control: true,
        cache_key: None,
        output_schema: None,
        constrained_calls: false,
        reasoning_back: false,
        slot: None,
    })
}

fn read(path: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let full = if let Some(rest) = path.strip_prefix("mock:") {
        dir.join("../mm-mock/fixtures").join(rest)
    } else {
        dir.join("tests/fixtures").join(path)
    };
    std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// Made ids differ per run: replace them by `made-N`.
fn normalise(events: &mut [StreamEvent], message: &mut Message) {
    let mut made = Vec::<String>::new();
    let mut fix = |id: &mut String| {
        let made_here = id
            .strip_prefix("call_")
            .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        if made_here {
            let n = match made.iter().position(|m| m == id) {
                Some(n) => n,
                None => {
                    made.push(id.clone());
                    made.len() - 1
                }
            };
            *id = format!("made-{n}");
        }
    };
    for e in events.iter_mut() {
        match e {
            StreamEvent::ToolCallStarted { id, .. } => fix(id),
            StreamEvent::ToolCallFinished(c) => fix(&mut c.id),
            _ => {}
        }
    }
    if let Message::Assistant { tool_calls, .. } = message {
        for c in tool_calls {
            fix(&mut c.id);
        }
    }
}

type Replayed = (
    Vec<StreamEvent>,
    Message,
    Option<Usage>,
    Option<EngineError>,
);

/// Streams `bytes` in chunks of `chunk` bytes; also says whether the
/// stream carried its end signal (the terminator or the provider's
/// "finished" field), which the driver requires of a complete answer.
fn replay_stream(name: &str, bytes: &[u8], chunk: usize) -> (Replayed, bool) {
    let p = provider(name);
    let mut events = Vec::new();
    let mut sink = |e: StreamEvent| events.push(e);
    let mut asm = Assembler::new(&mut sink);
    let mut dec = Decoder::new(p.framing());
    let mut error = None;
    let mut done = false;
    for piece in bytes.chunks(chunk) {
        match dec.feed(piece, &mut |ev, data| p.parse_frame(ev, data, &mut asm)) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Done) => {
                done = true;
                break;
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    if error.is_none()
        && !done
        && let Err(e) = dec.finish(&mut |ev, data| p.parse_frame(ev, data, &mut asm))
    {
        error = Some(e);
    }
    let ended = done || asm.ended();
    let (mut message, usage) = if error.is_some() {
        asm.partial()
    } else {
        asm.finish()
    };
    normalise(&mut events, &mut message);
    ((events, message, usage, error), ended)
}

fn replay_whole(name: &str, bytes: &[u8]) -> Replayed {
    let p = provider(name);
    let mut events = Vec::new();
    let mut sink = |e: StreamEvent| events.push(e);
    let mut asm = Assembler::new(&mut sink);
    let error = p.parse_response(bytes, &mut asm).err();
    let (mut message, usage) = asm.finish();
    normalise(&mut events, &mut message);
    (events, message, usage, error)
}

/// Replays whole and in 1-, 7- and 64-byte chunks: all must agree. A
/// documented stream that ends without an error ends with its end signal
/// (else the driver would take it for a cut one).
fn stream(name: &str, path: &str) -> Replayed {
    let bytes = read(path);
    let first = replay_stream(name, &bytes, bytes.len().max(1));
    for chunk in [1, 7, 64] {
        assert_eq!(
            replay_stream(name, &bytes, chunk),
            first,
            "{path} in {chunk}-byte chunks"
        );
    }
    let (replayed, ended) = first;
    if replayed.3.is_none() {
        assert!(ended, "{path} has no end signal");
    }
    replayed
}

/// The same stream without its last frames: no end signal.
fn cut(name: &str, path: &str, frames_kept: usize) -> bool {
    let text = String::from_utf8(read(path)).unwrap();
    let sep = if name == "ollama" { "\n" } else { "\n\n" };
    let kept: Vec<&str> = text.split(sep).take(frames_kept).collect();
    let body = format!("{}{sep}", kept.join(sep));
    let ((_, _, _, err), ended) = replay_stream(name, body.as_bytes(), body.len());
    assert_eq!(err, None, "{path}");
    ended
}

#[test]
fn a_stream_cut_before_its_end_signal_has_none() {
    // The frames that end each documented stream, and what comes before.
    assert!(!cut("openai", "mock:openai/stream_tool_calls.sse", 3));
    // finish_reason alone is an end (some servers send no [DONE]); the
    // usage frame follows it.
    assert!(cut("openai", "mock:openai/stream_text.sse", 4));
    assert!(!cut("openai", "mock:openai/stream_text.sse", 3));
    assert!(!cut("anthropic", "mock:anthropic/stream_tool_use.sse", 8));
    // `message_delta` with its stop_reason: every block has stopped.
    assert!(cut("anthropic", "mock:anthropic/stream_tool_use.sse", 15));
    assert!(!cut("anthropic", "mock:anthropic/stream_tool_use.sse", 14));
    assert!(!cut("ollama", "mock:ollama/stream_tool_calls.ndjson", 2));
    assert!(cut("ollama", "mock:ollama/stream_tool_calls.ndjson", 3));
    assert!(!cut("gemini", "mock:gemini/stream_text.sse", 2));
    assert!(cut("gemini", "mock:gemini/stream_text.sse", 3));
}

fn text(t: &str) -> StreamEvent {
    StreamEvent::Text(t.into())
}
fn reasoning(t: &str) -> StreamEvent {
    StreamEvent::Reasoning(t.into())
}
fn started(index: usize, id: &str, name: &str) -> StreamEvent {
    StreamEvent::ToolCallStarted {
        index,
        id: id.into(),
        name: name.into(),
    }
}
fn call(id: &str, name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}
fn finished(id: &str, name: &str, args: &str) -> StreamEvent {
    StreamEvent::ToolCallFinished(call(id, name, args))
}
fn usage(p: u64, c: u64) -> Usage {
    cached(p, c, 0)
}
fn cached(p: u64, c: u64, k: u64) -> Usage {
    Usage {
        prompt_tokens: p,
        completion_tokens: c,
        cached_tokens: k,
    }
}
fn assistant(content: &str, reasoning: Vec<Reasoning>, tool_calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        content: content.into(),
        reasoning,
        tool_calls,
    }
}
fn plain(t: &str) -> Reasoning {
    Reasoning {
        text: t.into(),
        signature: None,
        redacted: None,
    }
}
fn signed(t: &str, sig: &str) -> Reasoning {
    Reasoning {
        text: t.into(),
        signature: Some(sig.into()),
        redacted: None,
    }
}

#[test]
fn openai_text() {
    let (events, message, u, err) = stream("openai", "mock:openai/stream_text.sse");
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            text("Hello"),
            text("! How can I help?"),
            StreamEvent::Usage(usage(9, 12))
        ]
    );
    assert_eq!(message, assistant("Hello! How can I help?", vec![], vec![]));
    assert_eq!(u, Some(usage(9, 12)));
}

#[test]
fn openai_reasoning_content() {
    let (events, message, _, err) = stream("openai", "mock:openai/stream_reasoning.sse");
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![reasoning("Okay, the user says hello."), text("Hello!")]
    );
    assert_eq!(
        message,
        assistant("Hello!", vec![plain("Okay, the user says hello.")], vec![])
    );
}

#[test]
fn openai_parallel_tool_calls() {
    let (events, message, _, err) = stream("openai", "mock:openai/stream_tool_calls.sse");
    assert_eq!(err, None);
    let a = (
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "{\"location\": \"Paris, France\"}",
    );
    let b = (
        "call_LkpE3t6dbyW6lLGeJ8sJgHXw",
        "{\"location\": \"Bogotá, Colombia\"}",
    );
    assert_eq!(
        events,
        vec![
            started(0, a.0, "get_weather"),
            started(1, b.0, "get_weather"),
            finished(a.0, "get_weather", a.1),
            finished(b.0, "get_weather", b.1),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "",
            vec![],
            vec![call(a.0, "get_weather", a.1), call(b.0, "get_weather", b.1)]
        )
    );
}

#[test]
fn openai_whole_responses() {
    let (events, message, u, err) = replay_whole("openai", &read("mock:openai/nonstream.json"));
    assert_eq!(err, None);
    let c = call(
        "call_12345xyz",
        "get_weather",
        "{\"location\":\"Paris, France\"}",
    );
    assert_eq!(
        events,
        vec![
            reasoning("The user asks for the weather; call the tool."),
            started(0, "call_12345xyz", "get_weather"),
            StreamEvent::ToolCallFinished(c.clone()),
            StreamEvent::Usage(usage(82, 17)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "",
            vec![plain("The user asks for the weather; call the tool.")],
            vec![c]
        )
    );
    assert_eq!(u, Some(usage(82, 17)));
    let (_, message, u, _) = replay_whole("openai", &read("mock:openai/nonstream_text.json"));
    assert_eq!(
        message,
        assistant("Hello there, how may I assist you today?", vec![], vec![])
    );
    assert_eq!(u, Some(usage(9, 12)));
}

#[test]
fn openai_compatible_think_tags_and_reasoning_field() {
    let (events, message, u, _) = stream("openai-compatible", "openai/think_tags.sse");
    let joined: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(joined, "\nThe user greets me.\n");
    assert_eq!(
        message,
        assistant("Hi there!", vec![plain("\nThe user greets me.\n")], vec![])
    );
    assert_eq!(u, Some(usage(11, 14)));

    let (events, message, u, _) = stream("openai-compatible", "openai/openrouter_reasoning.sse");
    assert_eq!(
        events,
        vec![
            reasoning("Two plus two"),
            reasoning(" is four."),
            text("4"),
            StreamEvent::Usage(usage(12, 30))
        ]
    );
    assert_eq!(
        message,
        assistant("4", vec![plain("Two plus two is four.")], vec![])
    );
    assert_eq!(u, Some(usage(12, 30)));
}

#[test]
fn ollama_streams() {
    let (events, message, _, err) = stream("ollama", "mock:ollama/stream_text.ndjson");
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            text("The"),
            text(" sky"),
            text(" is blue."),
            StreamEvent::Usage(usage(26, 282))
        ]
    );
    assert_eq!(message, assistant("The sky is blue.", vec![], vec![]));

    let (events, message, _, _) = stream("ollama", "mock:ollama/stream_thinking.ndjson");
    assert_eq!(
        events,
        vec![
            reasoning("The user asks how many r letters"),
            reasoning(" are in strawberry: three."),
            text("There are three"),
            text(" r's in strawberry."),
            StreamEvent::Usage(usage(18, 61)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "There are three r's in strawberry.",
            vec![plain(
                "The user asks how many r letters are in strawberry: three."
            )],
            vec![]
        )
    );

    let (events, message, _, _) = stream("ollama", "mock:ollama/stream_tool_calls.ndjson");
    let toronto = "{\"format\":\"celsius\",\"location\":\"Toronto\"}";
    let paris = "{\"format\":\"celsius\",\"location\":\"Paris\"}";
    assert_eq!(
        events,
        vec![
            text("I'll check the weather in both cities."),
            started(0, "made-0", "get_current_weather"),
            finished("made-0", "get_current_weather", toronto),
            started(1, "made-1", "get_current_weather"),
            finished("made-1", "get_current_weather", paris),
            StreamEvent::Usage(usage(215, 48)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "I'll check the weather in both cities.",
            vec![],
            vec![
                call("made-0", "get_current_weather", toronto),
                call("made-1", "get_current_weather", paris)
            ]
        )
    );
}

#[test]
fn ollama_whole_and_error_line() {
    let (events, message, _, err) = replay_whole("ollama", &read("mock:ollama/nonstream.json"));
    assert_eq!(err, None);
    let args = "{\"format\":\"celsius\",\"location\":\"Paris, FR\"}";
    assert_eq!(
        events,
        vec![
            reasoning("Paris weather is asked; use the tool."),
            started(0, "made-0", "get_current_weather"),
            finished("made-0", "get_current_weather", args),
            StreamEvent::Usage(usage(122, 33)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "",
            vec![plain("Paris weather is asked; use the tool.")],
            vec![call("made-0", "get_current_weather", args)]
        )
    );

    let (events, message, _, err) = stream("ollama", "ollama/error_line.ndjson");
    assert_eq!(events, vec![text("Hel")]);
    assert_eq!(message, assistant("Hel", vec![], vec![]));
    assert_eq!(
        err,
        Some(EngineError::Stream(
            "ollama reported an error mid-stream: an error was encountered while running the model: unexpected EOF"
                .into()
        ))
    );
}

#[test]
fn anthropic_text_and_thinking() {
    let (events, message, u, err) = stream("anthropic", "mock:anthropic/stream_text.sse");
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![text("Hello"), text("!"), StreamEvent::Usage(usage(25, 15))]
    );
    assert_eq!(message, assistant("Hello!", vec![], vec![]));
    assert_eq!(u, Some(usage(25, 15)));

    let (events, message, _, _) = stream("anthropic", "mock:anthropic/stream_thinking.sse");
    let t1 = "Let me solve this step by step:\n\n1. First break down 27 * 453";
    let t2 = "\n2. 453 = 400 + 50 + 3";
    assert_eq!(
        events,
        vec![
            reasoning(t1),
            reasoning(t2),
            text("27 * 453 = 12,231"),
            StreamEvent::Usage(usage(42, 93))
        ]
    );
    assert_eq!(
        message,
        assistant(
            "27 * 453 = 12,231",
            vec![signed(
                &format!("{t1}{t2}"),
                "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."
            )],
            vec![]
        )
    );
}

#[test]
fn anthropic_tool_use() {
    let (events, message, _, err) = stream("anthropic", "mock:anthropic/stream_tool_use.sse");
    assert_eq!(err, None);
    let w = (
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        "{\"location\": \"San Francisco, CA\"}",
    );
    let t = (
        "toolu_01ZWBpSQuxWkhsMGNZkKvXzH",
        "{\"timezone\": \"America/Los_Angeles\"}",
    );
    assert_eq!(
        events,
        vec![
            text("Okay"),
            text(", let's check the weather for San Francisco, CA:"),
            started(0, w.0, "get_weather"),
            finished(w.0, "get_weather", w.1),
            started(1, t.0, "get_time"),
            finished(t.0, "get_time", t.1),
            StreamEvent::Usage(usage(472, 89)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "Okay, let's check the weather for San Francisco, CA:",
            vec![],
            vec![call(w.0, "get_weather", w.1), call(t.0, "get_time", t.1)]
        )
    );
}

#[test]
fn anthropic_whole_redacted_and_error_event() {
    let (events, message, u, err) =
        replay_whole("anthropic", &read("mock:anthropic/nonstream.json"));
    assert_eq!(err, None);
    let th = "The user wants the weather; I should call get_weather.";
    let sig =
        "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL....";
    let c = call(
        "toolu_01A09q90qw90lq917835lq9",
        "get_weather",
        "{\"location\":\"San Francisco, CA\"}",
    );
    assert_eq!(
        events,
        vec![
            reasoning(th),
            text("I'll check the current weather in San Francisco for you."),
            started(0, &c.id, "get_weather"),
            StreamEvent::ToolCallFinished(c.clone()),
            StreamEvent::Usage(usage(2095, 503)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "I'll check the current weather in San Francisco for you.",
            vec![signed(th, sig)],
            vec![c]
        )
    );
    assert_eq!(u, Some(usage(2095, 503)));

    let (events, message, u, err) = stream("anthropic", "anthropic/redacted_then_error.sse");
    assert_eq!(events, vec![text("Part")]);
    assert_eq!(
        message,
        assistant(
            "Part",
            vec![Reasoning {
                text: String::new(),
                signature: None,
                redacted: Some(
                    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".into()
                ),
            }],
            vec![]
        )
    );
    // Cached input counts toward the prompt, and is said apart.
    assert_eq!(u, Some(cached(15, 1, 5)));
    assert_eq!(
        err,
        Some(EngineError::Stream(
            "anthropic reported an error mid-stream: Overloaded".into()
        ))
    );
}

#[test]
fn gemini_text_and_thinking() {
    let (events, message, u, err) = stream("gemini", "mock:gemini/stream_text.sse");
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            text("The"),
            text(" sky is blue because of Rayleigh scattering."),
            StreamEvent::Usage(usage(8, 11))
        ]
    );
    assert_eq!(
        message,
        assistant(
            "The sky is blue because of Rayleigh scattering.",
            vec![],
            vec![]
        )
    );
    assert_eq!(u, Some(usage(8, 11)));

    let (events, message, _, _) = stream("gemini", "mock:gemini/stream_thinking.sse");
    let t1 = "**Counting the letters**\n\nI am counting the r letters in strawberry.";
    let t2 = " There are three.";
    let sig = "CiwBVKhc7nRyTi3HmggPD9iQiRc261f5jwuMdw3H/itDH0emsb9ZVo3Nwx9p6wpsAVSoXO5i8fDV4jBSBLoaWxB5zUdlHY6aLZ3Dw/fxxXOcsQ==";
    assert_eq!(
        events,
        vec![
            reasoning(t1),
            reasoning(t2),
            text("There are three r's in strawberry."),
            StreamEvent::Usage(usage(10, 9))
        ]
    );
    assert_eq!(
        message,
        assistant(
            "There are three r's in strawberry.",
            vec![signed(&format!("{t1}{t2}"), sig)],
            vec![]
        )
    );
}

#[test]
fn gemini_function_calls() {
    let (events, message, u, err) = stream("gemini", "mock:gemini/stream_function_call.sse");
    assert_eq!(err, None);
    let london = "{\"location\":\"London\"}";
    let paris = "{\"location\":\"Paris\"}";
    assert_eq!(
        events,
        vec![
            text("Let me look that up."),
            started(0, "made-0", "get_current_temperature"),
            finished("made-0", "get_current_temperature", london),
            started(1, "call-2", "get_current_temperature"),
            finished("call-2", "get_current_temperature", paris),
            StreamEvent::Usage(usage(71, 30)),
        ]
    );
    assert_eq!(
        message,
        assistant(
            "Let me look that up.",
            vec![],
            vec![
                call("made-0", "get_current_temperature", london),
                call("call-2", "get_current_temperature", paris)
            ]
        )
    );
    assert_eq!(u, Some(usage(71, 30)));

    // A signature riding on the call is kept as a signed block without text.
    let (_, message, u, _) = stream("gemini", "gemini/signature_on_call.sse");
    assert_eq!(
        message,
        assistant(
            "",
            vec![signed("", "Ctg1AVSoXO7sig")],
            vec![call("made-0", "read_file", "{\"path\":\"README.md\"}")]
        )
    );
    // Thoughts count toward completion tokens.
    assert_eq!(u, Some(usage(30, 45)));
}

#[test]
fn gemini_whole() {
    let (events, message, u, err) = replay_whole("gemini", &read("mock:gemini/nonstream.json"));
    assert_eq!(err, None);
    let th = "The user wants the temperature in London; call the function.";
    let sig = "CiIBVKhc7oDPpCaXyJKKssjqr4g3JNOSgJ/M2V+1THC1icsWCmwBVKhc7pBABbZ+zR3e9234WnWWS6GFXmf8IVwpnzjd5KYd7vyJbn/4vTorWBGayj/vbd9JPaZQjxdAIXhoE5mX/MDsQ7M9N/b0qJjHm39tYIBvS4sIWkMDHqTJqXGLzhhKtrTkfbV3RbaJEkQKIgFUqFzuFHx7cyTSN3Ipu1g2LH1m6Yq9XHFI2TAK4qqu0Pc=";
    assert_eq!(events.first(), Some(&reasoning(th)));
    assert_eq!(
        message,
        assistant(
            "I'll check the temperature in London.",
            vec![signed(th, sig)],
            vec![
                call(
                    "made-0",
                    "get_current_temperature",
                    "{\"location\":\"London\"}"
                ),
                call(
                    "call-2",
                    "get_current_temperature",
                    "{\"location\":\"Paris\"}"
                )
            ]
        )
    );
    assert_eq!(u, Some(usage(70, 106)));
}

/// The cached part of the prompt, read from each wire's own field; the
/// prompt count stays the whole prompt.
#[test]
fn cached_prompt_tokens_of_every_wire() {
    // Anthropic counts cache reads and writes apart from `input_tokens`.
    let (_, _, u, err) = stream("anthropic", "anthropic/cache_read.sse");
    assert_eq!(err, None);
    assert_eq!(u, Some(cached(3212, 4, 3000)));

    let (_, _, u, err) = stream("openai", "openai/cached_tokens.sse");
    assert_eq!(err, None);
    assert_eq!(u, Some(cached(2006, 3, 1920)));

    // A real llama-server stream (both fields), and an older one's whole
    // answer that states only `timings.cache_n`.
    let (events, message, u, err) = stream("openai-compatible", "openai/llama_cpp_cached.sse");
    assert_eq!(err, None);
    assert_eq!(u, Some(cached(37, 8, 36)));
    assert_eq!(events.last(), Some(&StreamEvent::Usage(cached(37, 8, 36))));
    assert!(matches!(message, Message::Assistant { content, .. } if content.starts_with("The")));
    let (_, _, u, err) = replay_whole(
        "openai-compatible",
        &read("openai/llama_cpp_timings_only.json"),
    );
    assert_eq!(err, None);
    assert_eq!(u, Some(cached(37, 2, 30)));

    let (_, _, u, err) = stream("gemini", "gemini/cached_content.sse");
    assert_eq!(err, None);
    assert_eq!(u, Some(cached(5100, 2, 4096)));

    // Ollama states no cached count: none is made up.
    let (_, _, u, _) = stream("ollama", "mock:ollama/stream_text.ndjson");
    assert_eq!(u.map(|u| u.cached_tokens), Some(0));
}
