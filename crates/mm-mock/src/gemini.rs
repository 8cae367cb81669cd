//! Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` and
//! `:generateContent`): chunks of `candidates[0].content.parts` — `text`,
//! `text` with `thought: true` (and `thoughtSignature` where the script signs
//! it), `functionCall {name, args}` sent whole — the last one with
//! `finishReason` and `usageMetadata`. Without `alt=sse` the stream is a JSON
//! array, as Gemini sends it.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::render::{
    Args, Block, Collected, Ctx, Out, Pending, Splicer, Whole, bytes, cached, leading_stalls, usage,
};
use crate::script::Step;

fn usage_json((prompt, completion, cached): (u64, u64, Option<u64>)) -> Value {
    let mut v = json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "totalTokenCount": prompt + completion,
    });
    if let Some(k) = cached {
        v["cachedContentTokenCount"] = json!(k);
    }
    v
}

/// The usage of a reply with its cached part.
fn with_cached(usage: Option<(u64, u64)>, steps: &[Step]) -> Option<(u64, u64, Option<u64>)> {
    usage.map(|(p, c)| (p, c, cached(steps)))
}

fn chunk(
    ctx: &Ctx,
    parts: Vec<Value>,
    finish: bool,
    usage: Option<(u64, u64, Option<u64>)>,
) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if finish {
        candidate["finishReason"] = json!("STOP");
    }
    let mut v = json!({
        "candidates": [candidate],
        "modelVersion": ctx.model,
        "responseId": format!("mock-{}", ctx.seq),
    });
    if let Some(u) = usage {
        v["usageMetadata"] = usage_json(u);
    }
    v
}

fn thought(text: &str, signature: &Option<String>) -> Value {
    let mut part = json!({"text": text, "thought": true});
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

fn call(sp: &mut Splicer, id: &Option<String>, name: &str, args: &Args) -> Value {
    let mut f = Map::new();
    if let Some(id) = id {
        f.insert("id".into(), json!(id));
    }
    f.insert("name".into(), json!(name));
    f.insert("args".into(), sp.object(args));
    json!({ "functionCall": f })
}

/// SSE events or the elements of one JSON array.
struct Frame {
    sse: bool,
    first: bool,
    outs: Vec<Out>,
}

impl Frame {
    fn push(&mut self, value: &Value, sp: Splicer) {
        let prefix = if self.sse {
            "data: "
        } else if self.first {
            "["
        } else {
            ",\r\n"
        };
        self.first = false;
        let suffix = if self.sse { "\n\n" } else { "" };
        self.outs.extend(sp.render(value, prefix, suffix));
    }

    fn raw(&mut self, line: &str) {
        let end = if self.sse { "\n\n" } else { "\n" };
        self.outs.push(bytes(format!("{line}{end}")));
    }

    fn end(&mut self) {
        if !self.sse {
            self.outs.push(bytes(if self.first { "[]" } else { "]" }));
        }
    }
}

fn pending_parts(sp: &mut Splicer, pending: &mut Pending) -> Vec<Value> {
    let parts = pending
        .calls
        .iter()
        .map(|(_, id, name, args)| call(sp, id, name, args))
        .collect();
    pending.calls.clear();
    parts
}

/// The plan of a streamed reply; `sse` is the `alt=sse` framing.
pub(crate) fn stream(steps: &[Step], ctx: &Ctx, sse: bool) -> Vec<Out> {
    let (outs, rest) = leading_stalls(steps);
    let mut f = Frame {
        sse,
        first: true,
        outs,
    };
    let mut pending = Pending::default();
    for step in rest {
        if pending.take(step) {
            continue;
        }
        let part = match step {
            Step::Text { text } => json!({ "text": text }),
            Step::Reasoning { text, signature } => thought(text, signature),
            Step::Stall { millis } => {
                f.outs.push(Out::Sleep(Duration::from_millis(*millis)));
                continue;
            }
            Step::Drop => {
                f.outs.push(Out::Abort);
                return f.outs;
            }
            Step::Raw { line } => {
                f.raw(line);
                continue;
            }
            _ => continue,
        };
        if !pending.calls.is_empty() {
            let mut sp = Splicer::default();
            let parts = pending_parts(&mut sp, &mut pending);
            f.push(&chunk(ctx, parts, false, None), sp);
        }
        f.push(&chunk(ctx, vec![part], false, None), Splicer::default());
    }
    let mut sp = Splicer::default();
    let mut parts = pending_parts(&mut sp, &mut pending);
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    f.push(
        &chunk(ctx, parts, true, with_cached(usage(steps), steps)),
        sp,
    );
    f.end();
    f.outs
}

/// The `GenerateContentResponse` of `:generateContent`.
pub(crate) fn whole(steps: &[Step], ctx: &Ctx) -> Whole {
    let c = Collected::new(steps);
    let mut sp = Splicer::default();
    let parts: Vec<Value> = c
        .blocks
        .iter()
        .map(|block| match block {
            Block::Text(text) => json!({ "text": text }),
            Block::Reasoning { text, signature } => thought(text, signature),
            Block::Tool { id, name, args, .. } => call(&mut sp, id, name, args),
        })
        .collect();
    let value = chunk(ctx, parts, true, with_cached(c.usage, steps));
    c.finish(&value, sp)
}

/// Google's error object.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        500 => "INTERNAL",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}
