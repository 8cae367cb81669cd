//! Ollama native chat (`POST /api/chat`): NDJSON lines of `message`
//! (`content`, `thinking`, `tool_calls`) with `done: false`, then a line
//! with `done: true`, `done_reason` and the token counts. Ollama streams by
//! default (only `"stream": false` sends one object) and sends each tool
//! call whole, with an arguments object and no id.

use serde_json::{Map, Value, json};

use crate::render::{
    Collected, Ctx, Out, Pending, Splicer, Whole, bytes, leading_stalls, ndjson, usage,
};
use crate::script::Step;

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn line(ctx: &Ctx, message: Value) -> Value {
    json!({"model": ctx.model, "created_at": now(), "message": message, "done": false})
}

fn message(content: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert("content".into(), json!(content));
    m
}

fn calls_json(
    sp: &mut Splicer,
    calls: &[(usize, Option<String>, String, crate::render::Args)],
) -> Value {
    Value::Array(
        calls
            .iter()
            .map(|(_, _, name, args)| {
                json!({"function": {"name": name, "arguments": sp.object(args)}})
            })
            .collect(),
    )
}

/// The plan of the line that carries the pending calls (lazy when one of
/// them runs away).
fn flush(ctx: &Ctx, pending: &mut Pending, outs: &mut Vec<Out>) {
    if pending.calls.is_empty() {
        return;
    }
    let mut sp = Splicer::default();
    let mut m = message("");
    m.insert("tool_calls".into(), calls_json(&mut sp, &pending.calls));
    outs.extend(sp.render(&line(ctx, Value::Object(m)), "", "\n"));
    pending.calls.clear();
}

fn done(ctx: &Ctx, steps: &[Step], m: Map<String, Value>) -> Value {
    let mut v = json!({
        "model": ctx.model,
        "created_at": now(),
        "message": m,
        "done": true,
        "done_reason": "stop",
    });
    if let Some((prompt, completion)) = usage(steps) {
        v["prompt_eval_count"] = json!(prompt);
        v["eval_count"] = json!(completion);
    }
    v
}

/// The NDJSON plan of a streamed reply.
pub(crate) fn stream(steps: &[Step], ctx: &Ctx) -> Vec<Out> {
    let (mut outs, rest) = leading_stalls(steps);
    let mut pending = Pending::default();
    for step in rest {
        if pending.take(step) {
            continue;
        }
        match step {
            Step::Text { text } => {
                flush(ctx, &mut pending, &mut outs);
                outs.push(ndjson(&line(ctx, Value::Object(message(text)))));
            }
            Step::Reasoning { text, .. } => {
                flush(ctx, &mut pending, &mut outs);
                let mut m = message("");
                m.insert("thinking".into(), json!(text));
                outs.push(ndjson(&line(ctx, Value::Object(m))));
            }
            Step::Stall { millis } => {
                outs.push(Out::Sleep(std::time::Duration::from_millis(*millis)));
            }
            Step::Drop => {
                outs.push(Out::Abort);
                return outs;
            }
            Step::Raw { line } => outs.push(bytes(format!("{line}\n"))),
            _ => {}
        }
    }
    flush(ctx, &mut pending, &mut outs);
    outs.push(ndjson(&done(ctx, steps, message(""))));
    outs
}

/// The one object of a reply sent whole (`"stream": false`).
pub(crate) fn whole(steps: &[Step], ctx: &Ctx) -> Whole {
    let c = Collected::new(steps);
    let mut sp = Splicer::default();
    let mut m = message(&c.text().unwrap_or_default());
    if let Some(thinking) = c.reasoning() {
        m.insert("thinking".into(), json!(thinking));
    }
    let calls: Vec<Value> = c
        .tools()
        .map(|(_, name, args)| json!({"function": {"name": name, "arguments": sp.object(args)}}))
        .collect();
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    c.finish(&done(ctx, steps, m), sp)
}

/// Ollama's error object.
pub(crate) fn error(_status: u16, message: &str) -> Value {
    json!({ "error": message })
}
