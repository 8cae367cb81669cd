//! Google Gemini `streamGenerateContent?alt=sse`: whole `functionCall`
//! parts without ids, `thought: true` parts, `thoughtSignature` sent back,
//! the key in `x-goog-api-key` (never in the URL).

use std::borrow::Cow;

use mm_config::Thinking;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ProviderSettings, window_field};
use crate::error::{EngineError, stream_server_error};
use crate::types::{Message, ToolDecl};
use crate::wire::{
    Delta, DeltaSink, Flow, Framing, ModelEntry, Probe, Provider, WireRequest, arguments_object,
    common_error_message, known_by_prefix, malformed, malformed_body, partial_call_after,
};

#[derive(Debug)]
pub struct Gemini {
    settings: ProviderSettings,
}

impl Gemini {
    pub fn new(settings: ProviderSettings) -> Self {
        Gemini { settings }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.settings.key {
            Some(key) => vec![("x-goog-api-key", key.clone())],
            None => Vec::new(),
        }
    }

    fn thinking_config(&self) -> Option<Value> {
        let budget = match self.settings.thinking {
            Thinking::Off => return None,
            Thinking::On => return Some(json!({"includeThoughts": true})),
            Thinking::Low => 1024,
            Thinking::Medium => 8192,
            Thinking::High => 24576,
        };
        Some(json!({"includeThoughts": true, "thinkingBudget": budget}))
    }
}

fn push_part(turns: &mut Vec<(&'static str, Vec<Value>)>, role: &'static str, part: Value) {
    match turns.last_mut() {
        Some((r, parts)) if *r == role => parts.push(part),
        _ => turns.push((role, vec![part])),
    }
}

/// An `inline_data` part.
fn inline_data(image: &mm_types::Image) -> Value {
    json!({"inline_data": {"mime_type": image.media_type, "data": image.data}})
}

/// The history as Gemini `contents` plus the system instruction text.
pub(crate) fn build_contents(messages: &[Message]) -> (String, Vec<Value>) {
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
                push_part(&mut turns, "user", json!({"text": content}));
                for image in images {
                    push_part(&mut turns, "user", inline_data(image));
                }
            }
            Message::Tool {
                name,
                content,
                images,
                ..
            } => {
                push_part(
                    &mut turns,
                    "user",
                    json!({"functionResponse": {"name": name, "response": {"result": content}}}),
                );
                // A tool's images are parts of the same turn as its result.
                for image in images {
                    push_part(&mut turns, "user", inline_data(image));
                }
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let mut parts: Vec<Value> = Vec::new();
                // A signature without text rode on the answer's first part
                // (the first call, else the text): it goes back there.
                let mut loose_signature: Option<&str> = None;
                for r in reasoning {
                    match (&r.signature, r.text.is_empty()) {
                        (Some(sig), false) => {
                            parts.push(
                                json!({"text": r.text, "thought": true, "thoughtSignature": sig}),
                            );
                        }
                        (Some(sig), true) => loose_signature = loose_signature.or(Some(sig)),
                        (None, _) => {} // unsigned reasoning is never sent back
                    }
                }
                let mut answer: Vec<Value> = Vec::new();
                if !content.is_empty() {
                    answer.push(json!({"text": content}));
                }
                for c in tool_calls {
                    answer.push(json!({"functionCall": {"name": c.name, "args": arguments_object(&c.arguments)}}));
                }
                if let Some(sig) = loose_signature {
                    let at = answer
                        .iter()
                        .position(|p| p.get("functionCall").is_some())
                        .unwrap_or(0);
                    match answer.get_mut(at) {
                        Some(p) => p["thoughtSignature"] = json!(sig),
                        None => answer.push(json!({"text": "", "thoughtSignature": sig})),
                    }
                }
                parts.extend(answer);
                for p in parts {
                    push_part(&mut turns, "model", p);
                }
            }
        }
    }
    let contents = turns
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    (system, contents)
}

impl Provider for Gemini {
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn request(&self, messages: &[Message], tools: &[ToolDecl], stream: bool) -> WireRequest {
        let s = &self.settings;
        let (system, contents) = build_contents(messages);
        let mut generation = json!({"maxOutputTokens": s.max_tokens});
        if let Some(tc) = self.thinking_config() {
            generation["thinkingConfig"] = tc;
        }
        // Gemini takes no response schema beside function declarations.
        let tools = match &s.output_schema {
            Some(schema) => {
                generation["responseMimeType"] = json!("application/json");
                generation["responseJsonSchema"] = schema.clone();
                &[]
            }
            None => tools,
        };
        let mut body = json!({"contents": contents, "generationConfig": generation});
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if !tools.is_empty() {
            let decls: Vec<Value> = tools
                .iter()
                .map(|t| {
                    json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters})
                })
                .collect();
            body["tools"] = json!([{"functionDeclarations": decls}]);
        }
        let headers = self.headers();
        let url = if stream {
            format!(
                "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
                s.base_url, s.model
            )
        } else {
            format!("{}/v1beta/models/{}:generateContent", s.base_url, s.model)
        };
        WireRequest {
            url,
            headers,
            body: body.to_string().into_bytes(),
        }
    }

    fn parse_frame(
        &self,
        _event: &str,
        data: &str,
        out: &mut dyn DeltaSink,
    ) -> Result<Flow, EngineError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk: Response<'_> =
            serde_json::from_str(data).map_err(|e| malformed("gemini", data, &e))?;
        emit_response(chunk, out)?;
        Ok(Flow::Continue)
    }

    fn parse_response(&self, body: &[u8], out: &mut dyn DeltaSink) -> Result<(), EngineError> {
        let resp: Response<'_> =
            serde_json::from_slice(body).map_err(|e| malformed_body("gemini", body, &e))?;
        emit_response(resp, out)
    }

    fn error_message(&self, body: &[u8]) -> Option<String> {
        common_error_message(body)
    }

    fn partial_call<'a>(&self, partial: &'a str) -> Option<(&'a str, &'a str)> {
        partial_call_after(partial, "args")
    }

    fn window_probes(&self) -> Vec<Probe<u64>> {
        // The model name goes into the path as the chat request puts it.
        vec![Probe {
            label: "/v1beta/models",
            url: format!(
                "{}/v1beta/models/{}",
                self.settings.base_url, self.settings.model
            ),
            headers: self.headers(),
            body: None,
            read: |v, _| window_field(v.get("inputTokenLimit")),
        }]
    }

    fn known_window(&self) -> Option<u64> {
        known_by_prefix(&[("gemini", 1_048_576)], &self.settings.model)
    }

    fn known_vision(&self) -> Option<bool> {
        self.settings.model.starts_with("gemini").then_some(true)
    }

    fn models_probe(&self) -> Option<Probe<Vec<ModelEntry>>> {
        Some(Probe {
            label: "/v1beta/models",
            url: format!("{}/v1beta/models?pageSize=1000", self.settings.base_url),
            headers: self.headers(),
            body: None,
            read: read_models,
        })
    }
}

/// Gemini's list holds embedding and other models too: only those that
/// generate content, named without the `models/` prefix.
fn read_models(v: &Value, _model: &str) -> Option<Vec<ModelEntry>> {
    let list = v.get("models")?.as_array()?;
    Some(
        list.iter()
            .filter(|m| {
                m.get("supportedGenerationMethods")
                    .and_then(Value::as_array)
                    .is_none_or(|methods| {
                        methods
                            .iter()
                            .any(|x| x.as_str() == Some("generateContent"))
                    })
            })
            .filter_map(|m| {
                let name = m.get("name")?.as_str()?;
                Some(ModelEntry {
                    id: name.strip_prefix("models/").unwrap_or(name).to_owned(),
                    window: window_field(m.get("inputTokenLimit")),
                })
            })
            .collect(),
    )
}

fn emit_response(resp: Response<'_>, out: &mut dyn DeltaSink) -> Result<(), EngineError> {
    if let Some(err) = resp.error {
        return Err(stream_server_error("gemini", &err));
    }
    let mut finished = false;
    if let Some(c) = resp.candidates.into_iter().next() {
        finished = c.finish_reason.is_some_and(|r| !r.is_empty());
        for part in c.content.map(|c| c.parts).unwrap_or_default() {
            if let Some(fc) = &part.function_call {
                let args = match &fc.args {
                    Some(a) => a.to_string(),
                    None => "{}".to_owned(),
                };
                if let Some(sig) = part.thought_signature.as_deref() {
                    out.delta(Delta::ReasoningBlock)?;
                    out.delta(Delta::Signature(sig))?;
                    out.delta(Delta::ReasoningBlock)?;
                }
                out.delta(Delta::ToolWhole {
                    id: fc.id.as_deref(),
                    name: &fc.name,
                    arguments: &args,
                })?;
                continue;
            }
            let text = part.text.as_deref().unwrap_or("");
            if part.thought {
                if !text.is_empty() {
                    out.delta(Delta::Reasoning(text))?;
                }
                if let Some(sig) = part.thought_signature.as_deref() {
                    out.delta(Delta::Signature(sig))?;
                }
            } else {
                if let Some(sig) = part.thought_signature.as_deref() {
                    out.delta(Delta::ReasoningBlock)?;
                    out.delta(Delta::Signature(sig))?;
                    out.delta(Delta::ReasoningBlock)?;
                }
                if !text.is_empty() {
                    out.delta(Delta::Text(text))?;
                }
            }
        }
    }
    if let Some(u) = resp.usage_metadata {
        let completion = match (u.candidates_token_count, u.thoughts_token_count) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        out.delta(Delta::Usage {
            prompt: u.prompt_token_count,
            completion,
            cached: u.cached_content_token_count,
        })?;
    }
    // Gemini has no terminator event: the last chunk carries the reason.
    if finished {
        out.delta(Delta::End)?;
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<UsageJson>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: bool,
    #[serde(default, borrow)]
    thought_signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function_call: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageJson {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    /// The part of `promptTokenCount` read from the (implicit) cache.
    #[serde(default)]
    cached_content_token_count: Option<u64>,
}
