//! Anthropic Messages (`POST /v1/messages`): named SSE events —
//! `message_start`, `ping`, per block `content_block_start` / `_delta` /
//! `_stop` (text, thinking with its `signature_delta`, tool_use with
//! `input_json_delta`), `message_delta` with the stop reason and output
//! tokens, `message_stop`; or one `message` object when not streaming.
//!
//! Blocks are numbered in the order they open. Tool blocks stay open until
//! the model writes text again or the message ends, so argument fragments of
//! parallel calls may interleave (each delta names its block).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::render::{
    Block, Collected, Ctx, Out, Splicer, Whole, bytes, cached, has_tools, leading_stalls,
    sse_event, usage,
};
use crate::script::Step;

fn stop_reason(steps: &[Step]) -> &'static str {
    if has_tools(steps) {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn tool_id(id: &Option<String>, index: usize) -> String {
    // Anthropic always names its tool calls.
    id.clone().unwrap_or_else(|| format!("toolu_mock_{index}"))
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Thinking,
}

/// The streaming state: which blocks are open.
struct Blocks {
    next: usize,
    /// The open text or thinking block, with the thinking signature so far.
    current: Option<(usize, Kind, Option<String>)>,
    /// Open tool blocks: (tool index, block index).
    tools: Vec<(usize, usize)>,
    outs: Vec<Out>,
}

impl Blocks {
    fn event(&mut self, name: &str, value: Value) {
        self.outs.push(sse_event(name, &value));
    }

    fn delta(&mut self, block: usize, delta: Value) {
        self.event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": block, "delta": delta}),
        );
    }

    fn stop(&mut self, block: usize) {
        self.event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": block}),
        );
    }

    fn open(&mut self, content_block: Value) -> usize {
        let block = self.next;
        self.next += 1;
        self.event(
            "content_block_start",
            json!({"type": "content_block_start", "index": block, "content_block": content_block}),
        );
        block
    }

    fn close_current(&mut self) {
        if let Some((block, kind, signature)) = self.current.take() {
            if let (Kind::Thinking, Some(signature)) = (kind, signature) {
                self.delta(
                    block,
                    json!({"type": "signature_delta", "signature": signature}),
                );
            }
            self.stop(block);
        }
    }

    fn close_tools(&mut self) {
        for (_, block) in std::mem::take(&mut self.tools) {
            self.stop(block);
        }
    }

    /// The open text/thinking block of `kind`, opening it when needed.
    fn current(&mut self, kind: Kind) -> usize {
        if let Some((block, k, _)) = &self.current
            && *k == kind
        {
            return *block;
        }
        self.close_current();
        self.close_tools();
        let block = match kind {
            Kind::Text => self.open(json!({"type": "text", "text": ""})),
            Kind::Thinking => self.open(json!({"type": "thinking", "thinking": ""})),
        };
        self.current = Some((block, kind, None));
        block
    }

    fn start_tool(&mut self, index: usize, id: &Option<String>, name: &str) -> usize {
        self.close_current();
        let block = self.open(json!({
            "type": "tool_use",
            "id": tool_id(id, index),
            "name": name,
            "input": {},
        }));
        self.tools.push((index, block));
        block
    }

    fn tool(&mut self, index: usize) -> usize {
        match self.tools.iter().rev().find(|(i, _)| *i == index) {
            Some((_, block)) => *block,
            None => self.start_tool(index, &None, ""),
        }
    }
}

fn args_delta(fragment: &str) -> Value {
    json!({"type": "input_json_delta", "partial_json": fragment})
}

/// The SSE plan of a streamed reply.
pub(crate) fn stream(steps: &[Step], ctx: &Ctx) -> Vec<Out> {
    let (outs, rest) = leading_stalls(steps);
    let (prompt, completion) = usage(steps).unwrap_or((0, 0));
    let input = input_usage(prompt, cached(steps));
    let mut b = Blocks {
        next: 0,
        current: None,
        tools: Vec::new(),
        outs,
    };
    b.event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{}", ctx.seq),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": with_output(input, 1),
        }}),
    );
    b.event("ping", json!({"type": "ping"}));
    for step in rest {
        match step {
            Step::Text { text } => {
                let block = b.current(Kind::Text);
                b.delta(block, json!({"type": "text_delta", "text": text}));
            }
            Step::Reasoning { text, signature } => {
                let block = b.current(Kind::Thinking);
                b.delta(block, json!({"type": "thinking_delta", "thinking": text}));
                if let (Some(sig), Some((_, _, slot))) = (signature, b.current.as_mut()) {
                    *slot = Some(sig.clone());
                }
            }
            Step::ToolStart { index, id, name } => {
                b.start_tool(*index, id, name);
            }
            Step::ToolArgs { index, fragment } => {
                let block = b.tool(*index);
                b.delta(block, args_delta(fragment));
            }
            Step::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                let block = b.start_tool(*index, id, name);
                if !arguments.is_empty() {
                    b.delta(block, args_delta(arguments));
                }
            }
            Step::Runaway {
                index,
                fragment,
                times,
            } => {
                let block = b.tool(*index);
                let one = json!({"type": "content_block_delta", "index": block, "delta": args_delta(fragment)});
                if let Out::Bytes(bytes) = sse_event("content_block_delta", &one) {
                    b.outs.push(Out::Repeat(bytes, *times));
                }
            }
            Step::Usage { .. } | Step::Cached { .. } => {}
            Step::Stall { millis } => b.outs.push(Out::Sleep(Duration::from_millis(*millis))),
            Step::Drop => {
                b.outs.push(Out::Abort);
                return b.outs;
            }
            Step::Raw { line } => b.outs.push(bytes(format!("{line}\n\n"))),
        }
    }
    b.close_current();
    b.close_tools();
    b.event(
        "message_delta",
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(steps), "stop_sequence": null},
            "usage": {"output_tokens": completion}}),
    );
    b.event("message_stop", json!({"type": "message_stop"}));
    b.outs
}

/// The `message` object of a reply sent whole.
pub(crate) fn whole(steps: &[Step], ctx: &Ctx) -> Whole {
    let c = Collected::new(steps);
    let mut sp = Splicer::default();
    let content: Vec<Value> = c
        .blocks
        .iter()
        .map(|block| match block {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::Reasoning { text, signature } => {
                let mut m = Map::new();
                m.insert("type".into(), json!("thinking"));
                m.insert("thinking".into(), json!(text));
                if let Some(signature) = signature {
                    m.insert("signature".into(), json!(signature));
                }
                Value::Object(m)
            }
            Block::Tool {
                index,
                id,
                name,
                args,
            } => json!({
                "type": "tool_use",
                "id": tool_id(id, *index),
                "name": name,
                "input": sp.object(args),
            }),
        })
        .collect();
    let (prompt, completion) = c.usage.unwrap_or((0, 0));
    let input = input_usage(prompt, cached(steps));
    let value = json!({
        "id": format!("msg_mock_{}", ctx.seq),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason(steps),
        "stop_sequence": null,
        "usage": with_output(input, completion),
    });
    c.finish(&value, sp)
}

/// The input part of Anthropic's usage: `input_tokens` counts only what
/// was not read from the cache.
fn input_usage(prompt: u64, cached: Option<u64>) -> Value {
    match cached {
        Some(k) => json!({
            "input_tokens": prompt.saturating_sub(k),
            "cache_read_input_tokens": k,
            "cache_creation_input_tokens": 0,
        }),
        None => json!({"input_tokens": prompt}),
    }
}

fn with_output(mut input: Value, output: u64) -> Value {
    input["output_tokens"] = json!(output);
    input
}

/// Anthropic's error object.
pub(crate) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
