//! Ollama's native `POST /api/chat`: NDJSON stream, whole tool calls
//! without ids, `message.thinking`, `think`, `options.num_ctx`.

use std::borrow::Cow;

use mm_config::{FALLBACK_WINDOW, Thinking};
use serde::Deserialize;
use serde_json::{Value, json};

use super::openai::tools_json;
use super::{ProviderSettings, in_window_range, window_field};
use crate::constrained::{append_field, schema_text};
use crate::error::{EngineError, stream_server_error};
use crate::types::{Message, ToolDecl};
use crate::wire::{
    Delta, DeltaSink, Flow, Framing, ModelEntry, Probe, Provider, WireRequest, arguments_object,
    common_error_message, malformed, malformed_body, partial_call_after,
};

#[derive(Debug)]
pub struct Ollama {
    settings: ProviderSettings,
}

impl Ollama {
    pub fn new(settings: ProviderSettings) -> Self {
        Ollama { settings }
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        match &self.settings.key {
            Some(key) => vec![("authorization", format!("Bearer {key}"))],
            None => Vec::new(),
        }
    }

    /// `think`: `true`, or an effort level for the models that take one
    /// (gpt-oss); others accept only a boolean.
    fn think(&self) -> Option<Value> {
        let level = match self.settings.thinking {
            Thinking::Off => return None,
            Thinking::On => return Some(json!(true)),
            Thinking::Low => "low",
            Thinking::Medium => "medium",
            Thinking::High => "high",
        };
        if self.settings.model.starts_with("gpt-oss") {
            Some(json!(level))
        } else {
            Some(json!(true))
        }
    }
}

fn messages_json(messages: &[Message]) -> Vec<Value> {
    let images = |images: &[mm_types::Image]| -> Vec<Value> {
        images.iter().map(|i| json!(i.data)).collect()
    };
    let mut out: Vec<Value> = messages
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content, images: pics } => {
                let mut v = json!({"role": "user", "content": content});
                if !pics.is_empty() {
                    v["images"] = Value::Array(images(pics));
                }
                v
            }
            Message::Assistant {
                content, tool_calls, ..
            } => {
                let mut v = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    v["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"function": {"name": c.name, "arguments": arguments_object(&c.arguments)}}))
                        .collect();
                }
                v
            }
            Message::Tool { name, content, .. } => {
                json!({"role": "tool", "content": content, "tool_name": name})
            }
        })
        .collect();
    // A tool's images follow the results as a user message.
    crate::providers::images_after_results(
        messages,
        &mut out,
        |pics| json!({"role": "user", "content": crate::providers::RESULT_IMAGES, "images": images(pics)}),
    );
    out
}

impl Provider for Ollama {
    fn framing(&self) -> Framing {
        Framing::Ndjson
    }

    fn request(&self, messages: &[Message], tools: &[ToolDecl], stream: bool) -> WireRequest {
        let s = &self.settings;
        let mut body = json!({
            "model": s.model,
            "messages": messages_json(messages),
            "stream": stream,
            "options": {"num_ctx": s.context_window, "num_predict": s.max_tokens},
        });
        // A structured answer constrains the whole output: no tool call.
        // Constrained calls keep the tools declared: the prompt is the one
        // an unconstrained request renders.
        if let Some(schema) = &s.output_schema
            && !s.constrained_calls
        {
            body["format"] = schema.clone();
        }
        if !tools.is_empty() && (s.output_schema.is_none() || s.constrained_calls) {
            body["tools"] = Value::Array(tools_json(tools));
        }
        if s.constrained_calls {
            // A grammar from the first token leaves no room for reasoning.
            if s.thinking != Thinking::Off {
                body["think"] = json!(false);
            }
        } else if let Some(think) = self.think() {
            body["think"] = think;
        }
        let mut text = body.to_string();
        if let Some(schema) = &s.output_schema
            && s.constrained_calls
        {
            // As text, each call's name before its arguments.
            text = append_field(text, "format", &schema_text(schema));
        }
        WireRequest {
            url: format!("{}/api/chat", s.base_url),
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
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let line: Line<'_> =
            serde_json::from_str(data).map_err(|e| malformed("ollama", data, &e))?;
        emit_line(line, out)
    }

    fn parse_response(&self, body: &[u8], out: &mut dyn DeltaSink) -> Result<(), EngineError> {
        let line: Line<'_> =
            serde_json::from_slice(body).map_err(|e| malformed_body("ollama", body, &e))?;
        emit_line(line, out).map(|_| ())
    }

    fn error_message(&self, body: &[u8]) -> Option<String> {
        common_error_message(body)
    }

    fn partial_call<'a>(&self, partial: &'a str) -> Option<(&'a str, &'a str)> {
        partial_call_after(partial, "arguments")
    }

    fn window_probes(&self) -> Vec<Probe<u64>> {
        vec![Probe {
            label: "/api/show",
            url: format!("{}/api/show", self.settings.base_url),
            headers: self.headers(),
            body: Some(
                json!({"model": self.settings.model})
                    .to_string()
                    .into_bytes(),
            ),
            read: read_show,
        }]
    }

    fn sees_images(&self, label: &str, answer: &Value) -> Option<bool> {
        if label != "/api/show" {
            return None;
        }
        let caps = answer.get("capabilities")?.as_array()?;
        Some(caps.iter().any(|c| c.as_str() == Some("vision")))
    }

    fn renders_tools(&self, label: &str, answer: &Value) -> Option<bool> {
        if label != "/api/show" {
            return None;
        }
        let caps = answer.get("capabilities")?.as_array()?;
        Some(caps.iter().any(|c| c.as_str() == Some("tools")))
    }

    fn running_window_probe(&self) -> Option<Probe<u64>> {
        Some(Probe {
            label: "/api/ps",
            url: format!("{}/api/ps", self.settings.base_url),
            headers: self.headers(),
            body: None,
            read: read_ps,
        })
    }

    fn model_window_probe(&self) -> Option<Probe<u64>> {
        let mut probe = self.window_probes().pop()?;
        probe.read = read_trained;
        Some(probe)
    }

    fn models_probe(&self) -> Option<Probe<Vec<ModelEntry>>> {
        Some(Probe {
            label: "/api/tags",
            url: format!("{}/api/tags", self.settings.base_url),
            headers: self.headers(),
            body: None,
            read: read_tags,
        })
    }
}

/// The window to run an Ollama model with, from `/api/show`. mm sends it
/// as `num_ctx`, which sizes the memory Ollama reserves, so it is a choice
/// as much as a fact: a `num_ctx` the model's Modelfile sets, else the
/// model's trained window capped at [`FALLBACK_WINDOW`] (a 128k window on
/// a small machine would not load; a number in `contextWindow` goes
/// higher).
fn read_show(v: &Value, _model: &str) -> Option<u64> {
    let set = v
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|p| {
            p.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        })
        .filter(|n| in_window_range(*n));
    let trained = || {
        let info = v.get("model_info")?;
        let arch = info.get("general.architecture")?.as_str()?;
        window_field(info.get(format!("{arch}.context_length")))
    };
    set.or_else(|| trained().map(|n| n.min(FALLBACK_WINDOW)))
}

/// The model's trained window, from `/api/show`.
fn read_trained(v: &Value, _model: &str) -> Option<u64> {
    let info = v.get("model_info")?;
    let arch = info.get("general.architecture")?.as_str()?;
    window_field(info.get(format!("{arch}.context_length")))
}

/// The `context_length` the loaded `model` runs with, from `/api/ps`
/// (a name without a tag is the `latest` one).
fn read_ps(v: &Value, model: &str) -> Option<u64> {
    let tagged = if model.contains(':') {
        model.to_owned()
    } else {
        format!("{model}:latest")
    };
    v.get("models")?
        .as_array()?
        .iter()
        .find(|m| {
            ["name", "model"]
                .iter()
                .filter_map(|k| m.get(*k).and_then(Value::as_str))
                .any(|n| n == model || n == tagged)
        })
        .and_then(|m| window_field(m.get("context_length")))
}

fn read_tags(v: &Value, _model: &str) -> Option<Vec<ModelEntry>> {
    let list = v.get("models")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|m| {
                Some(ModelEntry {
                    id: m
                        .get("name")
                        .or_else(|| m.get("model"))?
                        .as_str()?
                        .to_owned(),
                    window: window_field(m.pointer("/details/context_length")),
                })
            })
            .collect(),
    )
}

fn emit_line(line: Line<'_>, out: &mut dyn DeltaSink) -> Result<Flow, EngineError> {
    if let Some(err) = line.error {
        return Err(stream_server_error(
            "ollama",
            &serde_json::Value::String(err.into_owned()),
        ));
    }
    if let Some(m) = line.message {
        if let Some(t) = &m.thinking
            && !t.is_empty()
        {
            out.delta(Delta::Reasoning(t))?;
        }
        if let Some(c) = &m.content
            && !c.is_empty()
        {
            out.delta(Delta::Text(c))?;
        }
        for call in m.tool_calls.iter().flatten() {
            // Arguments arrive as an object; some versions send a string.
            let text = match &call.function.arguments {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_owned(),
                other => other.to_string(),
            };
            out.delta(Delta::ToolWhole {
                id: call.id.as_deref(),
                name: &call.function.name,
                arguments: &text,
            })?;
        }
    }
    if line.done {
        // Ollama does not say how much of the prompt its cache held.
        out.delta(Delta::Usage {
            prompt: line.prompt_eval_count,
            completion: line.eval_count,
            cached: None,
        })?;
        return Ok(Flow::Done);
    }
    Ok(Flow::Continue)
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    message: Option<LineMessage<'a>>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct LineMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<OllamaCall<'a>>>,
}

#[derive(Deserialize)]
struct OllamaCall<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: OllamaFunction<'a>,
}

#[derive(Deserialize)]
struct OllamaFunction<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ollama(model: &str, thinking: Thinking) -> Ollama {
        Ollama::new(ProviderSettings {
            model: model.into(),
            base_url: "http://127.0.0.1:1".into(),
            key: None,
            max_tokens: 100,
            context_window: 2048,
            thinking,
            cache_control: true,
            cache_key: None,
            output_schema: None,
            constrained_calls: false,
            reasoning_back: false,
            slot: None,
        })
    }

    #[test]
    fn the_running_window_is_the_loaded_models() {
        let ps = json!({"models": [
            {"name": "other:1b", "model": "other:1b", "context_length": 2048},
            {"name": "qwen3:latest", "model": "qwen3:latest", "context_length": 8192},
        ]});
        assert_eq!(read_ps(&ps, "qwen3"), Some(8192));
        assert_eq!(read_ps(&ps, "other:1b"), Some(2048));
        assert_eq!(read_ps(&ps, "absent"), None);
        let show =
            json!({"model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}});
        assert_eq!(read_trained(&show, "qwen3"), Some(40960));
    }

    #[test]
    fn think_takes_effort_levels_only_where_ollama_does() {
        assert_eq!(ollama("qwen3:8b", Thinking::Off).think(), None);
        assert_eq!(ollama("qwen3:8b", Thinking::On).think(), Some(json!(true)));
        assert_eq!(ollama("qwen3:8b", Thinking::Low).think(), Some(json!(true)));
        assert_eq!(
            ollama("gpt-oss:20b", Thinking::Low).think(),
            Some(json!("low"))
        );
        assert_eq!(
            ollama("gpt-oss:20b", Thinking::High).think(),
            Some(json!("high"))
        );
        assert_eq!(
            ollama("gpt-oss:20b", Thinking::On).think(),
            Some(json!(true))
        );
    }
}
