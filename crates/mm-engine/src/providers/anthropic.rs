//! Anthropic Messages API: SSE with named events, signed thinking blocks
//! that must be sent back, `x-api-key` + `anthropic-version`.

use std::borrow::Cow;

use mm_config::Thinking;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ProviderSettings, window_field};
use crate::error::{EngineError, stream_server_error};
use crate::types::{Message, ToolDecl};
use crate::wire::{
    Delta, DeltaSink, Flow, Framing, ModelEntry, Probe, Provider, WireRequest, arguments_object,
    common_error_message, known_by_prefix, malformed, malformed_body, url_escape,
};

/// The API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

#[derive(Debug)]
pub struct Anthropic {
    settings: ProviderSettings,
}

impl Anthropic {
    pub fn new(settings: ProviderSettings) -> Self {
        Anthropic { settings }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned())];
        if let Some(key) = &self.settings.key {
            headers.push(("x-api-key", key.clone()));
        }
        headers
    }

    /// The thinking budget for the setting: at least 1024 tokens (the API's
    /// minimum) and at most half of `max_tokens`, so the answer keeps room.
    fn budget(&self) -> Option<u64> {
        let wanted: u64 = match self.settings.thinking {
            Thinking::Off => return None,
            Thinking::Low => 2048,
            Thinking::On | Thinking::Medium => 4096,
            Thinking::High => 16384,
        };
        let cap = self.settings.max_tokens / 2;
        (cap >= 1024).then(|| wanted.min(cap))
    }
}

/// Anthropic wants alternating user/assistant turns: consecutive messages of
/// one role (several tool results, a result then a question) are merged.
fn push_block(turns: &mut Vec<(&'static str, Vec<Value>)>, role: &'static str, block: Value) {
    match turns.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => turns.push((role, vec![block])),
    }
}

/// Breakpoints on the messages, two at most (the last tool and the system
/// prompt take two more of Anthropic's four): the last message, which moves
/// forward as the conversation grows, and the user turn the previous
/// request ended with, where that request's breakpoint was, so its cached
/// prefix is read however many blocks the answer and the tool results
/// added since. Thinking blocks cannot carry a marker: the last other block
/// of the turn does.
fn mark_messages(msgs: &mut [Value]) {
    let Some(last) = msgs.len().checked_sub(1) else {
        return;
    };
    mark_turn(&mut msgs[last]);
    let previous_user = msgs[..last].iter().rposition(|m| m["role"] == "user");
    if let Some(i) = previous_user {
        mark_turn(&mut msgs[i]);
    }
}

fn mark_turn(turn: &mut Value) {
    let Some(blocks) = turn["content"].as_array_mut() else {
        return;
    };
    let markable = blocks.iter_mut().rev().find(|b| {
        let thinking = matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"));
        let empty_text = b["type"] == "text" && b["text"].as_str().is_some_and(str::is_empty);
        !(thinking || empty_text)
    });
    if let Some(b) = markable {
        b["cache_control"] = ephemeral();
    }
}

/// The breakpoint marker: the prefix up to and including the marked block
/// may be cached (five minutes, renewed by each hit).
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// An `image` block with a base64 source.
fn image_block(image: &mm_types::Image) -> Value {
    json!({"type": "image", "source": {
        "type": "base64", "media_type": image.media_type, "data": image.data,
    }})
}

pub(crate) fn build_messages(messages: &[Message]) -> (String, Vec<Value>) {
    let mut system = String::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in messages {
        match m {
            Message::System { content } => {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(content);
            }
            Message::User { content, images } => {
                push_block(&mut turns, "user", json!({"type": "text", "text": content}));
                for image in images {
                    push_block(&mut turns, "user", image_block(image));
                }
            }
            Message::Tool {
                call_id,
                content,
                images,
                ..
            } => {
                // Images ride inside the result.
                let content = if images.is_empty() {
                    json!(content)
                } else {
                    let mut blocks = vec![json!({"type": "text", "text": content})];
                    blocks.extend(images.iter().map(image_block));
                    Value::Array(blocks)
                };
                push_block(
                    &mut turns,
                    "user",
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content}),
                );
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                for r in reasoning {
                    // Only signed (or redacted) blocks go back; plain
                    // reasoning never does.
                    if let Some(data) = &r.redacted {
                        blocks.push(json!({"type": "redacted_thinking", "data": data}));
                    } else if let Some(sig) = &r.signature {
                        blocks.push(
                            json!({"type": "thinking", "thinking": r.text, "signature": sig}),
                        );
                    }
                }
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                for c in tool_calls {
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.name,
                        "input": arguments_object(&c.arguments),
                    }));
                }
                for b in blocks {
                    push_block(&mut turns, "assistant", b);
                }
            }
        }
    }
    let messages = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    (system, messages)
}

/// The tool an Anthropic request forces for a structured answer: its
/// input's `answer` is the value (`--output-schema`).
pub const ANSWER_TOOL: &str = "final_answer";

impl Provider for Anthropic {
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn request(&self, messages: &[Message], tools: &[ToolDecl], stream: bool) -> WireRequest {
        let s = &self.settings;
        let (system, mut msgs) = build_messages(messages);
        if s.cache_control {
            mark_messages(&mut msgs);
        }
        let mut body = json!({
            "model": s.model,
            "max_tokens": s.max_tokens,
            "messages": msgs,
            "stream": stream,
        });
        if !system.is_empty() {
            body["system"] = if s.cache_control {
                json!([{"type": "text", "text": system, "cache_control": ephemeral()}])
            } else {
                json!(system)
            };
        }
        if !tools.is_empty() {
            let mut decls: Vec<Value> = tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            if s.cache_control
                && let Some(last) = decls.last_mut()
            {
                last["cache_control"] = ephemeral();
            }
            body["tools"] = Value::Array(decls);
        }
        if let Some(schema) = &s.output_schema {
            // The answer is the input of a tool the request forces (a forced
            // tool admits no thinking); `answer` holds the value.
            let answer = json!({"name": ANSWER_TOOL, "description": "Give the final answer.",
                "input_schema": {"type": "object", "properties": {"answer": schema},
                                 "required": ["answer"]}});
            match body["tools"].as_array_mut() {
                Some(decls) => decls.push(answer),
                None => body["tools"] = json!([answer]),
            }
            body["tool_choice"] = json!({"type": "tool", "name": ANSWER_TOOL});
        } else if let Some(budget) = self.budget() {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        WireRequest {
            url: format!("{}/v1/messages", s.base_url),
            headers: self.headers(),
            body: body.to_string().into_bytes(),
        }
    }

    fn parse_frame(
        &self,
        _event: &str,
        data: &str,
        out: &mut dyn DeltaSink,
    ) -> Result<Flow, EngineError> {
        // The event name is repeated in the data's `type`; use that.
        let ev: Event<'_> =
            serde_json::from_str(data).map_err(|e| malformed("anthropic", data, &e))?;
        match ev.kind.as_ref() {
            "message_start" => {
                if let Some(u) = ev.message.and_then(|m| m.usage) {
                    out.delta(Delta::Usage {
                        prompt: u.prompt(),
                        completion: u.output_tokens,
                        cached: u.cache_read_input_tokens,
                    })?;
                }
            }
            "content_block_start" => {
                let key = ev.index.unwrap_or(0);
                if let Some(b) = ev.content_block {
                    block_start(key, &b, out)?;
                }
            }
            "content_block_delta" => {
                let key = ev.index.unwrap_or(0);
                if let Some(d) = ev.delta {
                    match d.kind.as_deref() {
                        Some("text_delta") => {
                            if let Some(t) = d.text.as_deref().filter(|t| !t.is_empty()) {
                                out.delta(Delta::Text(t))?;
                            }
                        }
                        Some("thinking_delta") => {
                            if let Some(t) = d.thinking.as_deref().filter(|t| !t.is_empty()) {
                                out.delta(Delta::Reasoning(t))?;
                            }
                        }
                        Some("signature_delta") => {
                            if let Some(s) = d.signature.as_deref() {
                                out.delta(Delta::Signature(s))?;
                            }
                        }
                        Some("input_json_delta") => {
                            if let Some(p) = d.partial_json.as_deref().filter(|p| !p.is_empty()) {
                                out.delta(Delta::ToolArgs { key, fragment: p })?;
                            }
                        }
                        _ => {}
                    }
                }
            }
            "content_block_stop" => {
                out.delta(Delta::ToolEnd {
                    key: ev.index.unwrap_or(0),
                })?;
            }
            "message_delta" => {
                if let Some(u) = ev.usage {
                    out.delta(Delta::Usage {
                        prompt: None,
                        completion: u.output_tokens,
                        cached: u.cache_read_input_tokens,
                    })?;
                }
                // Every block has stopped; only `message_stop` follows.
                if ev
                    .delta
                    .as_ref()
                    .and_then(|d| d.stop_reason.as_deref())
                    .is_some_and(|r| !r.is_empty())
                {
                    out.delta(Delta::End)?;
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => {
                let unknown = Value::String("unknown error".into());
                return Err(stream_server_error(
                    "anthropic",
                    ev.error.as_ref().unwrap_or(&unknown),
                ));
            }
            _ => {} // ping and future events
        }
        Ok(Flow::Continue)
    }

    fn parse_response(&self, body: &[u8], out: &mut dyn DeltaSink) -> Result<(), EngineError> {
        let resp: WholeMessage<'_> =
            serde_json::from_slice(body).map_err(|e| malformed_body("anthropic", body, &e))?;
        for (key, b) in resp.content.iter().enumerate() {
            block_start(key, b, out)?;
            out.delta(Delta::ToolEnd { key })?;
        }
        if let Some(u) = resp.usage {
            out.delta(Delta::Usage {
                prompt: u.prompt(),
                completion: u.output_tokens,
                cached: u.cache_read_input_tokens,
            })?;
        }
        Ok(())
    }

    fn error_message(&self, body: &[u8]) -> Option<String> {
        common_error_message(body)
    }

    fn window_probes(&self) -> Vec<Probe<u64>> {
        let mut probes = vec![Probe {
            label: "/v1/models",
            url: format!(
                "{}/v1/models/{}",
                self.settings.base_url,
                url_escape(&self.settings.model)
            ),
            headers: self.headers(),
            body: None,
            read: |v, _| window_field(v.get("max_input_tokens")),
        }];
        // An Anthropic endpoint on this machine is most likely llama.cpp's
        // llama-server, whose window is in `/props`.
        if crate::engine::is_loopback(&self.settings.base_url) {
            probes.push(Probe {
                label: "/props",
                url: format!("{}/props", self.settings.base_url),
                headers: self.headers(),
                body: None,
                read: super::openai::read_props,
            });
        }
        probes
    }

    fn known_window(&self) -> Option<u64> {
        known_by_prefix(&[("claude", 200_000)], &self.settings.model)
    }

    fn known_vision(&self) -> Option<bool> {
        // Every Claude model from the third generation on sees images.
        self.settings.model.starts_with("claude").then_some(true)
    }

    fn models_probe(&self) -> Option<Probe<Vec<ModelEntry>>> {
        Some(Probe {
            label: "/v1/models",
            url: format!("{}/v1/models?limit=1000", self.settings.base_url),
            headers: self.headers(),
            body: None,
            read: |v, _| {
                let list = v.get("data")?.as_array()?;
                Some(
                    list.iter()
                        .filter_map(|m| {
                            Some(ModelEntry {
                                id: m.get("id")?.as_str()?.to_owned(),
                                window: window_field(m.get("max_input_tokens")),
                            })
                        })
                        .collect(),
                )
            },
        })
    }
}

/// A block as it starts in a stream, or whole in a response.
fn block_start(key: usize, b: &Block<'_>, out: &mut dyn DeltaSink) -> Result<(), EngineError> {
    match b.kind.as_ref() {
        "text" => {
            if let Some(t) = b.text.as_deref().filter(|t| !t.is_empty()) {
                out.delta(Delta::Text(t))?;
            }
        }
        "thinking" => {
            out.delta(Delta::ReasoningBlock)?;
            if let Some(t) = b.thinking.as_deref().filter(|t| !t.is_empty()) {
                out.delta(Delta::Reasoning(t))?;
            }
            if let Some(s) = b.signature.as_deref().filter(|s| !s.is_empty()) {
                out.delta(Delta::Signature(s))?;
            }
        }
        "redacted_thinking" => {
            if let Some(d) = b.data.as_deref() {
                out.delta(Delta::Redacted(d))?;
            }
        }
        "tool_use" => {
            out.delta(Delta::ToolStart {
                key,
                id: b.id.as_deref(),
                name: b.name.as_deref().unwrap_or(""),
            })?;
            // A whole response carries the input object; a stream starts
            // with `{}` and sends the text as input_json_delta.
            if let Some(input) = &b.input {
                let is_empty_object = input.as_object().is_some_and(|o| o.is_empty());
                if !is_empty_object {
                    out.delta(Delta::ToolArgs {
                        key,
                        fragment: &input.to_string(),
                    })?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    content_block: Option<Block<'a>>,
    #[serde(default, borrow)]
    delta: Option<BlockDelta<'a>>,
    #[serde(default)]
    message: Option<StartMessage>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    usage: Option<UsageJson>,
}

#[derive(Deserialize)]
struct WholeMessage<'a> {
    #[serde(default, borrow)]
    content: Vec<Block<'a>>,
    #[serde(default)]
    usage: Option<UsageJson>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    data: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    /// In `message_delta`.
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UsageJson {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl UsageJson {
    /// Cached input counts toward the prompt too.
    fn prompt(&self) -> Option<u64> {
        self.input_tokens.map(|i| {
            i + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0)
        })
    }
}
