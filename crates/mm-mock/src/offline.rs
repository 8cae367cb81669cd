//! A reply rendered to bytes without a server: the exact body the server
//! would send, for tests that feed a wire parser directly (cut at every
//! byte, say) and still want the mock's rendering of each format.

use crate::render::{Ctx, Out, Whole};
use crate::script::Step;
use crate::{anthropic, gemini, ollama, openai};

/// The body of `steps` in the format of `wire` (`openai`, `ollama`,
/// `anthropic` or `gemini`; Gemini streams as SSE), streamed or whole.
/// Stalls are left out and a `Drop` ends the body where it stands; `None`
/// for an unknown wire.
pub fn render_body(wire: &str, steps: &[Step], stream: bool) -> Option<Vec<u8>> {
    let ctx = Ctx {
        model: "mock".to_owned(),
        seq: 1,
        created: 0,
        include_usage: true,
    };
    let outs = match (wire, stream) {
        ("openai", true) => openai::stream(steps, &ctx),
        ("ollama", true) => ollama::stream(steps, &ctx),
        ("anthropic", true) => anthropic::stream(steps, &ctx),
        ("gemini", true) => gemini::stream(steps, &ctx, true),
        ("openai", false) => whole(openai::whole(steps, &ctx)),
        ("ollama", false) => whole(ollama::whole(steps, &ctx)),
        ("anthropic", false) => whole(anthropic::whole(steps, &ctx)),
        ("gemini", false) => whole(gemini::whole(steps, &ctx)),
        _ => return None,
    };
    let mut body = Vec::new();
    for out in outs {
        match out {
            Out::Bytes(b) => body.extend_from_slice(&b),
            Out::Repeat(b, times) => {
                for _ in 0..times {
                    body.extend_from_slice(&b);
                }
            }
            Out::Sleep(_) => {}
            Out::Abort => break,
        }
    }
    Some(body)
}

fn whole(w: Whole) -> Vec<Out> {
    w.outs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wire_renders_text_steps() {
        let steps = [Step::text("<tool_"), Step::text("call>")];
        for wire in ["openai", "ollama", "anthropic", "gemini"] {
            for stream in [true, false] {
                let body = String::from_utf8(render_body(wire, &steps, stream).unwrap()).unwrap();
                assert!(body.contains("<tool_"), "{wire} {stream}: {body}");
            }
        }
        assert!(render_body("nope", &steps, true).is_none());
    }
}
