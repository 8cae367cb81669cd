//! The seam between the generic driver and the provider modules.
//!
//! A provider only builds requests and turns its wire format (stream frames
//! or a whole response) into neutral [`Delta`]s. Streaming, the watchdog,
//! retries, the runaway guard, think-tag splitting and cancellation live
//! once, in the driver, for all of them.

use crate::error::EngineError;
use crate::types::{Message, ToolDecl};

/// How a provider's stream is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Server-sent events (`event:` / `data:` lines).
    Sse,
    /// One JSON object per line (Ollama).
    Ndjson,
}

/// One neutral piece of a response, borrowed from the frame it came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta<'a> {
    /// Answer text (think tags are split out later, by the driver).
    Text(&'a str),
    /// Reasoning text, appended to the current reasoning block.
    Reasoning(&'a str),
    /// A new reasoning block begins (Anthropic `thinking` block start).
    ReasoningBlock,
    /// A signature for the current reasoning block (Anthropic
    /// `signature_delta`, Gemini `thoughtSignature`).
    Signature(&'a str),
    /// An Anthropic `redacted_thinking` block, kept and sent back as is.
    Redacted(&'a str),
    /// A streamed tool call begins; `key` is the provider's index.
    ToolStart {
        key: usize,
        id: Option<&'a str>,
        name: &'a str,
    },
    /// A fragment of a streamed tool call's arguments.
    ToolArgs { key: usize, fragment: &'a str },
    /// A streamed tool call is complete.
    ToolEnd { key: usize },
    /// A tool call sent whole (Ollama, Gemini): arguments as JSON text.
    ToolWhole {
        id: Option<&'a str>,
        name: &'a str,
        arguments: &'a str,
    },
    /// The server said the answer is complete (OpenAI `finish_reason`,
    /// Gemini `finishReason`, Anthropic `stop_reason`) but more frames may
    /// follow (usage). A stream that ends without this or [`Flow::Done`]
    /// was cut short.
    End,
    /// Token counts; `None` leaves a count as it was. `cached` is the part
    /// of the prompt the server read from its cache.
    Usage {
        prompt: Option<u64>,
        completion: Option<u64>,
        cached: Option<u64>,
    },
}

/// Whether the stream is over after a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The provider's terminator (OpenAI `[DONE]`, Anthropic
    /// `message_stop`, Ollama `done: true`): the answer is complete.
    Done,
}

/// Receives deltas; an error (the runaway guard) stops parsing at once.
pub trait DeltaSink {
    fn delta(&mut self, delta: Delta<'_>) -> Result<(), EngineError>;
}

/// A request ready to send.
#[derive(Debug, Clone)]
pub struct WireRequest {
    pub url: String,
    /// Extra headers (keys travel only here, docs/design.md#where-keys-go).
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A question put to the server beside the chat endpoint: what window
/// the model has, which models there are. The driver sends it; `read`
/// takes the answer's JSON and the configured model name.
#[derive(Debug, Clone)]
pub struct Probe<T> {
    /// What `--print-config` names as the source: `/props`.
    pub label: &'static str,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    /// `Some`: a POST with this JSON body; `None`: a GET.
    pub body: Option<Vec<u8>>,
    pub read: fn(&serde_json::Value, &str) -> Option<T>,
}

/// One model a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelEntry {
    /// The name to put after `PROVIDER/`.
    pub id: String,
    /// Its window, where the list says.
    pub window: Option<u64>,
}

/// One provider's wire format.
pub trait Provider: Send + Sync + std::fmt::Debug {
    fn framing(&self) -> Framing;
    /// Build the request for this history; `stream` picks the streaming or
    /// the whole-response endpoint/shape.
    fn request(&self, messages: &[Message], tools: &[ToolDecl], stream: bool) -> WireRequest;
    /// Parse one stream frame: an SSE event (`event` name, `data`) or an
    /// NDJSON line (`event` empty).
    fn parse_frame(
        &self,
        event: &str,
        data: &str,
        out: &mut dyn DeltaSink,
    ) -> Result<Flow, EngineError>;
    /// Parse a whole (non-streaming) response body.
    fn parse_response(&self, body: &[u8], out: &mut dyn DeltaSink) -> Result<(), EngineError>;
    /// The human message inside an error body, when the body has the
    /// provider's error shape.
    fn error_message(&self, body: &[u8]) -> Option<String>;
    /// For wires that send tool calls whole in one frame (Ollama, Gemini):
    /// the name and the argument text so far of the last call inside an
    /// incomplete frame, so the runaway guard can watch a call that is still
    /// arriving. Streamed-argument wires need none.
    fn partial_call<'a>(&self, _partial: &'a str) -> Option<(&'a str, &'a str)> {
        None
    }
    /// Questions that may tell the configured model's window, asked in
    /// order until one answers.
    fn window_probes(&self) -> Vec<Probe<u64>> {
        Vec::new()
    }
    /// From the answer to the window probe `label`: whether the server's
    /// template for the model renders tool declarations and calls
    /// (llama.cpp `/props`, Ollama `/api/show`); `None` when it does not say.
    fn renders_tools(&self, _label: &str, _answer: &serde_json::Value) -> Option<bool> {
        None
    }
    /// From the answer to the window probe `label`: whether the model's
    /// template renders the reasoning of earlier turns (llama.cpp
    /// `chat_template_caps.supports_preserve_reasoning`). Only then is it
    /// sent back: elsewhere it would be text the model never saw.
    fn keeps_reasoning(&self, _label: &str, _answer: &serde_json::Value) -> bool {
        false
    }
    /// The window this provider's model is known to have when its server
    /// does not say (hosted models).
    fn known_window(&self) -> Option<u64> {
        None
    }
    /// From the answer to the window probe `label`: whether the model sees
    /// images (Ollama `/api/show` `capabilities`, llama.cpp `/props`
    /// `modalities.vision`); `None` when it does not say.
    fn sees_images(&self, _label: &str, _answer: &serde_json::Value) -> Option<bool> {
        None
    }
    /// Whether this provider's model is known to see images (hosted
    /// models); `None`: not known.
    fn known_vision(&self) -> Option<bool> {
        None
    }
    /// The question that tells the window the loaded model runs with now
    /// (Ollama's `/api/ps`), for `--doctor`.
    fn running_window_probe(&self) -> Option<Probe<u64>> {
        None
    }
    /// The question that tells the model's own (trained) window, where it
    /// differs from the one mm runs it with (Ollama), for `--doctor`.
    fn model_window_probe(&self) -> Option<Probe<u64>> {
        None
    }
    /// The question that lists the server's models.
    fn models_probe(&self) -> Option<Probe<Vec<ModelEntry>>> {
        None
    }
    /// The question that renders `messages` and `tools` with the model's
    /// own chat template, without generating (llama.cpp `/apply-template`):
    /// the first half of an exact count.
    fn template_probe(&self, _messages: &[Message], _tools: &[ToolDecl]) -> Option<Probe<String>> {
        None
    }
    /// The question that counts the tokens of a rendered prompt with the
    /// model's own tokenizer (llama.cpp `/tokenize`).
    fn tokenize_probe(&self, _prompt: &str) -> Option<Probe<u64>> {
        None
    }
}

/// A number in a JSON value, given as a number or as digits in a string
/// (LM Studio, some proxies); zero counts as not given.
pub(crate) fn positive(v: Option<&serde_json::Value>) -> Option<u64> {
    let v = v?;
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .filter(|n| *n > 0)
}

/// The window of the first row whose prefix `model` starts with.
pub(crate) fn known_by_prefix(table: &[(&str, u64)], model: &str) -> Option<u64> {
    table
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|(_, w)| *w)
}

/// `text` made safe for a URL's path segment or query value.
pub(crate) fn url_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The entry of a `data` list of models (OpenAI's shape, followed by
/// vLLM, llama.cpp, LM Studio and OpenRouter) that is `model`: by id,
/// else the only one (a single-model server answers to any name).
pub(crate) fn model_in_list<'v>(
    answer: &'v serde_json::Value,
    model: &str,
) -> Option<&'v serde_json::Value> {
    let list = answer.get("data")?.as_array()?;
    list.iter()
        .find(|m| m.get("id").and_then(serde_json::Value::as_str) == Some(model))
        .or_else(|| (list.len() == 1).then(|| &list[0]))
}

/// The value text after the last `"key":` in a partial JSON text, and the
/// string value of the last `"name":` before it (servers vary in spacing).
pub(crate) fn partial_call_after<'a>(partial: &'a str, key: &str) -> Option<(&'a str, &'a str)> {
    let quoted = format!("\"{key}\"");
    let at = partial.rfind(&quoted)?;
    let rest = partial[at + quoted.len()..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let before = &partial[..at];
    let name = before
        .rfind("\"name\"")
        .and_then(|n| {
            let v = before[n + 6..]
                .trim_start()
                .strip_prefix(':')?
                .trim_start()
                .strip_prefix('"')?;
            v.find('"').map(|end| &v[..end])
        })
        .unwrap_or("");
    Some((name, rest))
}

/// The malformed-frame error, with a short excerpt of what arrived.
pub(crate) fn malformed(provider: &str, data: &str, err: &serde_json::Error) -> EngineError {
    EngineError::Stream(format!(
        "malformed stream data from {provider}: {err}: {}",
        crate::error::one_line(data, 120)
    ))
}

/// The malformed-body error of a whole response.
pub(crate) fn malformed_body(provider: &str, body: &[u8], err: &serde_json::Error) -> EngineError {
    EngineError::Stream(format!(
        "malformed response from {provider}: {err}: {}",
        crate::error::one_line(&String::from_utf8_lossy(body), 120)
    ))
}

/// The usual `{"error": {"message": ...}}` or `{"error": "..."}` shapes.
pub(crate) fn common_error_message(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let err = v.get("error")?;
    if let Some(s) = err.as_str() {
        return Some(s.to_owned());
    }
    err.get("message")
        .and_then(|m| m.as_str())
        .map(str::to_owned)
}

/// Parse tool-call arguments for providers that want a JSON object back.
/// Invalid or non-object arguments become `{}` (the call already got a
/// result telling the model its arguments were invalid).
pub(crate) fn arguments_object(arguments: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_call_finds_name_and_arguments_so_far() {
        // Ollama (Go) writes the name before the arguments.
        let line = r#"{"model":"q","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"write_file","arguments":{"content":"abab"#;
        assert_eq!(
            partial_call_after(line, "arguments"),
            Some(("write_file", r#"{"content":"abab"#))
        );
        // Gemini writes `"key": value` with a space.
        let line = r#"data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "bash","args": {"command": "yes"#;
        assert_eq!(
            partial_call_after(line, "args"),
            Some(("bash", r#"{"command": "yes"#))
        );
        // The last call of several.
        let line = r#"[{"function":{"name":"a","arguments":{}}},{"function":{"name":"b","arguments":{"x":"#;
        assert_eq!(
            partial_call_after(line, "arguments"),
            Some(("b", r#"{"x":"#))
        );
        // A name that comes after the arguments is not known yet.
        let line = r#"{"function":{"arguments":{"x":"1"#;
        assert_eq!(
            partial_call_after(line, "arguments"),
            Some(("", r#"{"x":"1"#))
        );
        assert_eq!(
            partial_call_after(r#"{"message":{"content":"hi"#, "arguments"),
            None
        );
    }

    #[test]
    fn arguments_object_falls_back_to_empty() {
        assert_eq!(arguments_object("{\"a\":1}"), serde_json::json!({"a": 1}));
        assert_eq!(arguments_object("{\"a\":"), serde_json::json!({}));
        assert_eq!(arguments_object("[1]"), serde_json::json!({}));
    }
}
