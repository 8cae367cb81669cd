//! OpenAI Chat Completions (`openai`) and the same wire for llama.cpp,
//! vLLM, LM Studio, OpenRouter... (`openai-compatible`).

use std::borrow::Cow;

use mm_config::Thinking;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ProviderSettings, window_field};
use crate::constrained::{append_field, schema_text};
use crate::error::{EngineError, stream_server_error};
use crate::types::{Message, ToolDecl};
use crate::wire::{
    Delta, DeltaSink, Flow, Framing, ModelEntry, Probe, Provider, WireRequest,
    common_error_message, known_by_prefix, malformed, malformed_body, model_in_list, url_escape,
};

#[derive(Debug)]
pub struct OpenAi {
    name: &'static str,
    settings: ProviderSettings,
}

impl OpenAi {
    pub fn new(name: &'static str, settings: ProviderSettings) -> Self {
        OpenAi { name, settings }
    }

    fn compatible(&self) -> bool {
        self.name != "openai"
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.settings.key {
            Some(key) => vec![("authorization", format!("Bearer {key}"))],
            None => Vec::new(),
        }
    }

    /// The server's root: the base URL without its `/v1` (llama.cpp's
    /// `/props` and LM Studio's `/api/v0` live there).
    fn root(&self) -> &str {
        let base = &self.settings.base_url;
        base.strip_suffix("/v1").unwrap_or(base)
    }

    fn get<T>(
        &self,
        label: &'static str,
        url: String,
        read: fn(&Value, &str) -> Option<T>,
    ) -> Probe<T> {
        Probe {
            label,
            url,
            headers: self.headers(),
            body: None,
            read,
        }
    }
}

/// OpenAI's models and their windows, by name prefix, longest first: its
/// model list does not say.
const OPENAI_WINDOWS: &[(&str, u64)] = &[
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4", 8_192),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
];

/// llama.cpp's `/props`: the window of a slot. A router (several models)
/// answers 0 unless asked about a loaded model.
pub(crate) fn read_props(v: &Value, _model: &str) -> Option<u64> {
    window_field(v.pointer("/default_generation_settings/n_ctx"))
        .or_else(|| window_field(v.get("n_ctx")))
}

/// llama.cpp's `/props`: whether the model's chat template renders tool
/// declarations and calls (`chat_template_caps.supports_tools`).
pub(crate) fn read_tool_caps(v: &Value) -> Option<bool> {
    v.pointer("/chat_template_caps/supports_tools")?.as_bool()
}

/// The window fields an OpenAI-shaped model entry may carry: vLLM
/// `max_model_len`, OpenRouter `context_length`, Groq `context_window`,
/// llama.cpp `meta.n_ctx` (its `n_ctx_train` is only an upper bound),
/// LM Studio `loaded_context_length` then `max_context_length`.
fn entry_window(m: &Value) -> Option<u64> {
    window_field(m.get("max_model_len"))
        .or_else(|| window_field(m.get("context_length")))
        .or_else(|| window_field(m.get("context_window")))
        .or_else(|| window_field(m.pointer("/meta/n_ctx")))
        .or_else(|| window_field(m.get("loaded_context_length")))
        .or_else(|| window_field(m.get("max_context_length")))
}

fn read_model_window(v: &Value, model: &str) -> Option<u64> {
    model_in_list(v, model).and_then(entry_window)
}

/// LM Studio's own list names every model it has: only the configured one
/// counts.
fn read_lmstudio_window(v: &Value, model: &str) -> Option<u64> {
    v.get("data")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .and_then(entry_window)
}

fn read_models(v: &Value, _model: &str) -> Option<Vec<ModelEntry>> {
    let list = v.get("data")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|m| {
                Some(ModelEntry {
                    id: m.get("id")?.as_str()?.to_owned(),
                    window: entry_window(m),
                })
            })
            .collect(),
    )
}

/// Message history in Chat Completions shape. Reasoning is never sent back
/// (DeepSeek even rejects it); tool results follow their calls by id.
pub(crate) fn messages_json(messages: &[Message]) -> Vec<Value> {
    messages_json_with(messages, false)
}

/// [`messages_json`], with each answer's reasoning as `reasoning_content`
/// when `reasoning_back` (a template that renders it).
fn messages_json_with(messages: &[Message], reasoning_back: bool) -> Vec<Value> {
    let mut out: Vec<Value> = messages
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content, images } if images.is_empty() => {
                json!({"role": "user", "content": content})
            }
            Message::User { content, images } => {
                let mut parts = vec![json!({"type": "text", "text": content})];
                parts.extend(images.iter().map(image_url));
                json!({"role": "user", "content": parts})
            }
            Message::Assistant {
                content,
                tool_calls,
                reasoning,
            } => {
                let mut v = json!({"role": "assistant"});
                if reasoning_back && !reasoning.is_empty() {
                    let text: String = reasoning.iter().map(|r| r.text.as_str()).collect();
                    v["reasoning_content"] = json!(text);
                }
                if tool_calls.is_empty() {
                    v["content"] = json!(content);
                } else {
                    v["content"] = if content.is_empty() {
                        Value::Null
                    } else {
                        json!(content)
                    };
                    v["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                }
                v
            }
            Message::Tool {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        })
        .collect();
    // Tool messages hold text only: a tool's images follow the results.
    crate::providers::images_after_results(messages, &mut out, |images| {
        let mut parts = vec![json!({"type": "text", "text": crate::providers::RESULT_IMAGES})];
        parts.extend(images.iter().map(image_url));
        json!({"role": "user", "content": parts})
    });
    out
}

/// An `image_url` part holding the image as a data URL.
fn image_url(image: &mm_types::Image) -> Value {
    json!({"type": "image_url", "image_url": {
        "url": format!("data:{};base64,{}", image.media_type, image.data),
    }})
}

pub(crate) fn tools_json(tools: &[ToolDecl]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            })
        })
        .collect()
}

fn effort(thinking: Thinking) -> Option<&'static str> {
    match thinking {
        Thinking::Off => None,
        Thinking::Low => Some("low"),
        Thinking::On | Thinking::Medium => Some("medium"),
        Thinking::High => Some("high"),
    }
}

impl Provider for OpenAi {
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn request(&self, messages: &[Message], tools: &[ToolDecl], stream: bool) -> WireRequest {
        let s = &self.settings;
        let mut body = json!({
            "model": s.model,
            "messages": messages_json_with(messages, s.reasoning_back),
            "stream": stream,
        });
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools_json(tools));
        }
        if self.compatible() {
            body["max_tokens"] = json!(s.max_tokens);
        } else {
            body["max_completion_tokens"] = json!(s.max_tokens);
        }
        if s.constrained_calls {
            // A grammar from the first token leaves no room for reasoning.
            if s.thinking != Thinking::Off {
                body["chat_template_kwargs"] = json!({"enable_thinking": false});
            }
        } else if let Some(e) = effort(s.thinking) {
            body["reasoning_effort"] = json!(e);
        }
        // Set only where the registry row says the server takes it.
        if let Some(k) = &s.cache_key {
            body["prompt_cache_key"] = json!(k);
        }
        if let Some(slot) = s.slot {
            body["id_slot"] = json!(slot);
        }
        let mut constrained = None;
        if let Some(schema) = &s.output_schema
            && s.constrained_calls
        {
            // The tools stay declared: the prompt is the one an
            // unconstrained request renders, so the server's cache serves
            // it. The schema goes in as text, each call's name first.
            constrained = Some(format!(
                r#"{{"type":"json_schema","json_schema":{{"name":"call","schema":{},"strict":true}}}}"#,
                schema_text(schema)
            ));
        } else if let Some(schema) = &s.output_schema {
            body["response_format"] = json!({"type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema}});
            if !tools.is_empty() {
                body["tool_choice"] = json!("none");
            }
        }
        let mut text = body.to_string();
        if let Some(rf) = constrained {
            text = append_field(text, "response_format", &rf);
        }
        WireRequest {
            url: format!("{}/chat/completions", s.base_url),
            headers: self.headers(),
            body: text.into_bytes(),
        }
    }

    fn parse_frame(
        &self,
        _event: &str,
        data: &str,
        out: &mut dyn DeltaSink,
    ) -> Result<Flow, EngineError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk: Chunk<'_> =
            serde_json::from_str(data).map_err(|e| malformed(self.name, data, &e))?;
        if let Some(err) = chunk.error {
            return Err(stream_server_error(self.name, &err));
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                emit_message(delta, out)?;
            }
            // The answer is complete; usage and `[DONE]` may follow.
            if choice.finish_reason.is_some_and(|r| !r.is_empty()) {
                out.delta(Delta::End)?;
            }
        }
        emit_usage(chunk.usage, chunk.timings, out)?;
        Ok(Flow::Continue)
    }

    fn parse_response(&self, body: &[u8], out: &mut dyn DeltaSink) -> Result<(), EngineError> {
        let resp: Whole<'_> =
            serde_json::from_slice(body).map_err(|e| malformed_body(self.name, body, &e))?;
        if let Some(err) = resp.error {
            return Err(stream_server_error(self.name, &err));
        }
        if let Some(choice) = resp.choices.into_iter().next()
            && let Some(message) = choice.message
        {
            emit_message(message, out)?;
        }
        emit_usage(resp.usage, resp.timings, out)?;
        Ok(())
    }

    fn error_message(&self, body: &[u8]) -> Option<String> {
        common_error_message(body)
    }

    fn window_probes(&self) -> Vec<Probe<u64>> {
        if !self.compatible() {
            return Vec::new();
        }
        let root = self.root();
        let model = url_escape(&self.settings.model);
        vec![
            // A router of several models answers about this one only if it
            // is loaded; it must not load it (that may evict another).
            self.get(
                "/props",
                format!("{root}/props?model={model}&autoload=false"),
                read_props,
            ),
            self.get(
                "/models",
                format!("{}/models", self.settings.base_url),
                read_model_window,
            ),
            self.get(
                "/api/v0/models",
                format!("{root}/api/v0/models"),
                read_lmstudio_window,
            ),
        ]
    }

    fn renders_tools(&self, _label: &str, answer: &Value) -> Option<bool> {
        if !self.compatible() {
            return None;
        }
        read_tool_caps(answer)
    }

    fn keeps_reasoning(&self, _label: &str, answer: &Value) -> bool {
        self.compatible()
            && answer
                .pointer("/chat_template_caps/supports_preserve_reasoning")
                .and_then(Value::as_bool)
                == Some(true)
    }

    fn sees_images(&self, _label: &str, answer: &Value) -> Option<bool> {
        if !self.compatible() {
            return None;
        }
        // llama.cpp's /props: the loaded model has a projector or not.
        answer.pointer("/modalities/vision")?.as_bool()
    }

    fn known_vision(&self) -> Option<bool> {
        if self.compatible() {
            return None;
        }
        let m = self.settings.model.as_str();
        let sees = [
            "gpt-4o",
            "gpt-4.1",
            "gpt-4-turbo",
            "gpt-5",
            "o1",
            "o3",
            "o4",
        ];
        Some(sees.iter().any(|p| m.starts_with(p)))
    }

    fn known_window(&self) -> Option<u64> {
        if self.compatible() {
            return None;
        }
        known_by_prefix(OPENAI_WINDOWS, &self.settings.model)
    }

    fn models_probe(&self) -> Option<Probe<Vec<ModelEntry>>> {
        Some(self.get(
            "/models",
            format!("{}/models", self.settings.base_url),
            read_models,
        ))
    }

    fn template_probe(&self, messages: &[Message], tools: &[ToolDecl]) -> Option<Probe<String>> {
        if !self.compatible() {
            return None;
        }
        let mut body = json!({"messages": messages_json(messages)});
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools_json(tools));
        }
        Some(Probe {
            label: "/apply-template",
            url: format!("{}/apply-template", self.root()),
            headers: self.headers(),
            body: serde_json::to_vec(&body).ok(),
            read: |v, _| v.get("prompt")?.as_str().map(str::to_owned),
        })
    }

    fn tokenize_probe(&self, prompt: &str) -> Option<Probe<u64>> {
        if !self.compatible() {
            return None;
        }
        // Special tokens as the server adds them to a prompt (a BOS).
        let body = json!({"content": prompt, "add_special": true});
        Some(Probe {
            label: "/tokenize",
            url: format!("{}/tokenize", self.root()),
            headers: self.headers(),
            body: serde_json::to_vec(&body).ok(),
            read: |v, _| u64::try_from(v.get("tokens")?.as_array()?.len()).ok(),
        })
    }
}

/// The counts of a chunk or a whole answer. The cached part of the prompt
/// is `prompt_tokens_details.cached_tokens` (OpenAI, vLLM, recent
/// llama.cpp), else llama.cpp's `timings.cache_n`.
fn emit_usage(
    usage: Option<UsageJson>,
    timings: Option<Timings>,
    out: &mut dyn DeltaSink,
) -> Result<(), EngineError> {
    let cached = usage
        .as_ref()
        .and_then(|u| u.prompt_tokens_details.as_ref())
        .and_then(|d| d.cached_tokens)
        .or_else(|| timings.as_ref().and_then(|t| t.cache_n));
    let (prompt, completion) = usage
        .as_ref()
        .map_or((None, None), |u| (u.prompt_tokens, u.completion_tokens));
    if prompt.is_none() && completion.is_none() && cached.is_none() {
        return Ok(());
    }
    out.delta(Delta::Usage {
        prompt,
        completion,
        cached,
    })
}

/// A streamed delta or a whole message: the same fields.
fn emit_message(m: MessageDelta<'_>, out: &mut dyn DeltaSink) -> Result<(), EngineError> {
    // Servers that send both fields (vLLM) send the same text twice: the
    // first that has text is the reasoning.
    let reasoning = [&m.reasoning_content, &m.reasoning]
        .into_iter()
        .find_map(|r| r.as_deref().filter(|r| !r.is_empty()));
    if let Some(r) = reasoning {
        out.delta(Delta::Reasoning(r))?;
    }
    if let Some(c) = &m.content
        && !c.is_empty()
    {
        out.delta(Delta::Text(c))?;
    }
    for (pos, tc) in m.tool_calls.iter().flatten().enumerate() {
        let key = tc.index.unwrap_or(pos);
        let (name, args) = match &tc.function {
            Some(f) => (f.name.as_deref(), f.arguments.as_deref()),
            None => (None, None),
        };
        if tc.id.is_some() || name.is_some() {
            out.delta(Delta::ToolStart {
                key,
                id: tc.id.as_deref(),
                name: name.unwrap_or(""),
            })?;
        }
        if let Some(a) = args
            && !a.is_empty()
        {
            out.delta(Delta::ToolArgs { key, fragment: a })?;
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<MessageDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Whole<'a> {
    #[serde(default, borrow)]
    choices: Vec<WholeChoice<'a>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WholeChoice<'a> {
    #[serde(default, borrow)]
    message: Option<MessageDelta<'a>>,
}

#[derive(Deserialize)]
struct MessageDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "string_or_skip")]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UsageJson {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// llama.cpp's `timings`: `cache_n` prompt tokens reused from its cache
/// (the usage's `prompt_tokens` counts them too).
#[derive(Deserialize)]
struct Timings {
    #[serde(default)]
    cache_n: Option<u64>,
}

/// `reasoning` is a string on most servers; some send an object. Only
/// strings are reasoning text.
fn string_or_skip<'de: 'a, 'a, D>(d: D) -> Result<Option<Cow<'a, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either<'a> {
        S(#[serde(borrow)] Cow<'a, str>),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Option::<Either<'a>>::deserialize(d)? {
        Some(Either::S(s)) => Some(s),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<String>);

    impl DeltaSink for Collect {
        fn delta(&mut self, delta: Delta<'_>) -> Result<(), EngineError> {
            self.0.push(format!("{delta:?}"));
            Ok(())
        }
    }

    fn openai() -> OpenAi {
        OpenAi::new(
            "openai-compatible",
            ProviderSettings {
                model: "m".into(),
                base_url: "http://127.0.0.1:1/v1".into(),
                key: None,
                max_tokens: 100,
                context_window: 2048,
                thinking: Thinking::Off,
                cache_control: true,
                cache_key: None,
                output_schema: None,
                constrained_calls: false,
                reasoning_back: false,
                slot: None,
            },
        )
    }

    fn frame(data: &str) -> (Flow, Vec<String>) {
        let mut out = Collect::default();
        let flow = openai().parse_frame("message", data, &mut out).unwrap();
        (flow, out.0)
    }

    #[test]
    fn reasoning_in_both_fields_is_emitted_once() {
        let (_, got) = frame(
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":"hm"}}]}"#,
        );
        assert_eq!(got, vec![r#"Reasoning("hm")"#]);
        // An empty first field does not hide the second.
        let (_, got) =
            frame(r#"{"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"ok"}}]}"#);
        assert_eq!(got, vec![r#"Reasoning("ok")"#]);
    }

    #[test]
    fn a_constrained_request_writes_each_calls_name_before_its_arguments() {
        let tools = vec![ToolDecl {
            name: "bash".into(),
            description: "run".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }];
        let mut p = openai();
        p.settings.output_schema = Some(crate::constrained::calls_schema(&tools));
        p.settings.constrained_calls = true;
        let body = String::from_utf8(p.request(&[Message::user("ls")], &tools, true).body).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["response_format"]["json_schema"]["strict"], true);
        assert_eq!(v["tools"][0]["function"]["name"], "bash");
        // The unconstrained request's text is the start of the constrained
        // one's: the same prompt, the schema added last.
        let mut plain = openai();
        plain.settings.output_schema = None;
        plain.settings.constrained_calls = false;
        let plain =
            String::from_utf8(plain.request(&[Message::user("ls")], &tools, true).body).unwrap();
        assert!(
            body.starts_with(plain.strip_suffix('}').unwrap()),
            "{plain}\n{body}"
        );
        let schema = &body[body.find("\"oneOf\"").unwrap()..];
        assert!(
            schema.find("\"name\"").unwrap() < schema.find("\"arguments\"").unwrap(),
            "{schema}"
        );
    }

    #[test]
    fn finish_reason_and_done_end_the_answer() {
        let (flow, got) =
            frame(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#);
        assert_eq!((flow, got), (Flow::Continue, vec!["End".to_owned()]));
        let (flow, got) =
            frame(r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}"#);
        assert_eq!(
            (flow, got),
            (Flow::Continue, vec![r#"Text("a")"#.to_owned()])
        );
        assert_eq!(frame("[DONE]"), (Flow::Done, vec![]));
    }
}
