//! OpenAI Chat Completions (`POST …/chat/completions`): SSE chunks of
//! `choices[0].delta`, a finish chunk, a usage chunk when the request asked
//! for `stream_options.include_usage`, then `data: [DONE]`; or one
//! `chat.completion` object when the request does not stream.

use serde_json::{Map, Value, json};

use crate::render::{
    Args, Collected, Ctx, Out, Splicer, Whole, bytes, cached, has_tools, leading_stalls, sse, usage,
};
use crate::script::Step;

fn chunk(ctx: &Ctx, delta: Value, finish: Value) -> Value {
    json!({
        "id": format!("chatcmpl-mock-{}", ctx.seq),
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn tool_delta(index: usize, id: Option<&String>, name: Option<&str>, arguments: Value) -> Value {
    let mut call = Map::new();
    call.insert("index".into(), json!(index));
    if let Some(id) = id {
        call.insert("id".into(), json!(id));
    }
    let mut function = Map::new();
    if let Some(name) = name {
        call.insert("type".into(), json!("function"));
        function.insert("name".into(), json!(name));
    }
    function.insert("arguments".into(), arguments);
    call.insert("function".into(), Value::Object(function));
    json!({ "tool_calls": [call] })
}

fn usage_json(prompt: u64, completion: u64, cached: Option<u64>) -> Value {
    let mut v = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    });
    if let Some(k) = cached {
        v["prompt_tokens_details"] = json!({"cached_tokens": k});
    }
    v
}

/// llama.cpp's `timings` beside the usage: `cache_n` reused, `prompt_n`
/// computed.
fn timings_json(prompt: u64, cached: u64) -> Value {
    json!({"cache_n": cached, "prompt_n": prompt.saturating_sub(cached)})
}

fn finish_reason(steps: &[Step]) -> &'static str {
    if has_tools(steps) {
        "tool_calls"
    } else {
        "stop"
    }
}

/// The SSE plan of a streamed reply.
pub(crate) fn stream(steps: &[Step], ctx: &Ctx) -> Vec<Out> {
    let (mut outs, rest) = leading_stalls(steps);
    outs.push(sse(&chunk(
        ctx,
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )));
    for step in rest {
        let delta = match step {
            Step::Text { text } => json!({ "content": text }),
            Step::Reasoning { text, .. } => json!({ "reasoning_content": text }),
            Step::ToolStart { index, id, name } => {
                tool_delta(*index, id.as_ref(), Some(name), json!(""))
            }
            Step::ToolArgs { index, fragment } => tool_delta(*index, None, None, json!(fragment)),
            Step::ToolCall {
                index,
                id,
                name,
                arguments,
            } => tool_delta(*index, id.as_ref(), Some(name), json!(arguments)),
            Step::Runaway {
                index,
                fragment,
                times,
            } => {
                let one = chunk(
                    ctx,
                    tool_delta(*index, None, None, json!(fragment)),
                    Value::Null,
                );
                if let Out::Bytes(b) = sse(&one) {
                    outs.push(Out::Repeat(b, *times));
                }
                continue;
            }
            Step::Usage { .. } | Step::Cached { .. } => continue,
            Step::Stall { millis } => {
                outs.push(Out::Sleep(std::time::Duration::from_millis(*millis)));
                continue;
            }
            Step::Drop => {
                outs.push(Out::Abort);
                return outs;
            }
            Step::Raw { line } => {
                outs.push(bytes(format!("{line}\n\n")));
                continue;
            }
        };
        outs.push(sse(&chunk(ctx, delta, Value::Null)));
    }
    outs.push(sse(&chunk(ctx, json!({}), json!(finish_reason(steps)))));
    if ctx.include_usage
        && let Some((prompt, completion)) = usage(steps)
    {
        let k = cached(steps);
        let mut last = json!({
            "id": format!("chatcmpl-mock-{}", ctx.seq),
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [],
            "usage": usage_json(prompt, completion, k),
        });
        if let Some(k) = k {
            last["timings"] = timings_json(prompt, k);
        }
        outs.push(sse(&last));
    }
    outs.push(bytes("data: [DONE]\n\n"));
    outs
}

/// The `chat.completion` object of a reply sent whole.
pub(crate) fn whole(steps: &[Step], ctx: &Ctx) -> Whole {
    let c = Collected::new(steps);
    let mut sp = Splicer::default();
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(c.text()));
    if let Some(reasoning) = c.reasoning() {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    let calls: Vec<Value> = c
        .tools()
        .map(|(id, name, args): (&Option<String>, &String, &Args)| {
            let mut call = Map::new();
            if let Some(id) = id {
                call.insert("id".into(), json!(id));
            }
            call.insert("type".into(), json!("function"));
            call.insert(
                "function".into(),
                json!({"name": name, "arguments": sp.string(args)}),
            );
            Value::Object(call)
        })
        .collect();
    if !calls.is_empty() {
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut value = json!({
        "id": format!("chatcmpl-mock-{}", ctx.seq),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish_reason(steps),
        }],
    });
    if let Some((prompt, completion)) = c.usage {
        let k = cached(steps);
        value["usage"] = usage_json(prompt, completion, k);
        if let Some(k) = k {
            value["timings"] = timings_json(prompt, k);
        }
    }
    c.finish(&value, sp)
}

/// OpenAI's error object.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        429 => ("requests", json!("rate_limit_exceeded")),
        401 => ("invalid_request_error", json!("invalid_api_key")),
        500..=599 => ("server_error", Value::Null),
        _ => ("invalid_request_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
