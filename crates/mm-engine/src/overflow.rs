//! Recognising "the prompt does not fit the window" in a server's error
//! answer, from its structure first: each server family says it its own
//! way, and some give the true window, which the agent then adopts.
//!
//! The shapes (each has a recorded body in the tests below):
//! - llama.cpp `llama-server` (both its OpenAI and Anthropic endpoints):
//!   `error.type = "exceed_context_size_error"` with `n_ctx` and
//!   `n_prompt_tokens`.
//! - OpenAI: `error.code = "context_length_exceeded"`; the message gives
//!   the window in older wordings.
//! - vLLM: a 400 `BadRequestError` (flat or under `error`) whose message
//!   names "maximum context length is N tokens" or "context length is only
//!   N tokens"; its wording changes between versions, the numbers do not.
//! - Anthropic: `invalid_request_error` with "prompt is too long: N tokens >
//!   M maximum", or "input length and `max_tokens` exceed context limit".
//! - Gemini: `status = "INVALID_ARGUMENT"` with "The input token count (N)
//!   exceeds the maximum number of tokens allowed (M)".
//! - Ollama: a plain `{"error": "..."}` string, which may wrap a
//!   llama-server body as text.
//! - Anything else: the wording of [`crate::error::is_context_length`].

use serde_json::Value;

/// What an overflow answer said about the sizes, where it said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overflow {
    /// The server's window, in tokens.
    pub window: Option<u64>,
    /// The prompt's size as the server counted it.
    pub prompt: Option<u64>,
}

/// The overflow an error body describes, if it describes one. `body` is
/// the whole JSON answer (or the object of an error event in a stream).
/// A window out of `contextWindow`'s range is not one (it stays `None`).
pub fn detect(body: &Value) -> Option<Overflow> {
    described(body).map(|o| Overflow {
        window: o.window.filter(|w| crate::providers::in_window_range(*w)),
        ..o
    })
}

fn described(body: &Value) -> Option<Overflow> {
    // Gemini's non-SSE stream and some proxies wrap the answer in a list.
    if let Some(first) = body.as_array().and_then(|a| a.first()) {
        return described(first);
    }
    let err = body.get("error").unwrap_or(body);
    // Ollama (and others) give the error as a string, possibly holding a
    // whole llama-server answer as text.
    if let Some(text) = err.as_str() {
        if let Ok(inner) = serde_json::from_str::<Value>(text)
            && inner.is_object()
        {
            return described(&inner);
        }
        return from_text(text);
    }
    let kind = err.get("type").and_then(Value::as_str).unwrap_or("");
    let code = err.get("code").and_then(Value::as_str).unwrap_or("");
    let status = err.get("status").and_then(Value::as_str).unwrap_or("");
    let message = err.get("message").and_then(Value::as_str).unwrap_or("");
    if kind == "exceed_context_size_error" {
        let n = |k: &str| err.get(k).and_then(Value::as_u64);
        let from_words = sizes(message);
        return Some(Overflow {
            window: n("n_ctx").or(from_words.window),
            prompt: n("n_prompt_tokens").or(from_words.prompt),
        });
    }
    if code == "context_length_exceeded" {
        return Some(sizes(message));
    }
    if status == "INVALID_ARGUMENT" && message.contains("input token count") {
        return Some(sizes(message));
    }
    from_text(message)
}

/// An overflow told only in words (vLLM, Anthropic, LM Studio, Ollama).
fn from_text(message: &str) -> Option<Overflow> {
    crate::error::is_context_length(message).then(|| sizes(message))
}

/// The window and prompt sizes in an overflow message, in the wordings
/// servers use. A number that is not found stays `None`.
fn sizes(message: &str) -> Overflow {
    let m = message.to_ascii_lowercase();
    // "prompt is too long: 200251 tokens > 200000 maximum" (Anthropic)
    if let Some(rest) = after(&m, "prompt is too long:") {
        let prompt = first_number(rest);
        let window = after(rest, ">").and_then(first_number);
        return Overflow { window, prompt };
    }
    // "exceed context limit: 189136 + 20000 > 204648" (Anthropic)
    if let Some(rest) = after(&m, "exceed context limit:") {
        let prompt = first_number(rest);
        let window = after(rest, ">").and_then(first_number);
        return Overflow { window, prompt };
    }
    // "The input token count (132478) exceeds the maximum number of tokens
    // allowed (131072)." (Gemini)
    if let Some(rest) = after(&m, "input token count") {
        let prompt = first_number(rest);
        let window = after(rest, "allowed").and_then(first_number);
        return Overflow { window, prompt };
    }
    // "request (1042 tokens) exceeds the available context size (1024
    // tokens)" (llama.cpp)
    if let Some(rest) = after(&m, "request (") {
        let prompt = first_number(rest);
        let window = after(rest, "context size").and_then(first_number);
        return Overflow { window, prompt };
    }
    // "maximum context length is 8192 tokens. However, your messages
    // resulted in 8227 tokens" (OpenAI, vLLM, OpenRouter); "your request
    // has 3000 input tokens", "your prompt contains at least 40961 input
    // tokens" (vLLM).
    let window = after(&m, "maximum context length is")
        .or_else(|| after(&m, "context length is only"))
        .or_else(|| after(&m, "n_ctx:"))
        .or_else(|| after(&m, "context length of only"))
        .and_then(first_number);
    let prompt = after(&m, "resulted in")
        .or_else(|| after(&m, "your request has"))
        .or_else(|| after(&m, "contains at least"))
        .or_else(|| after(&m, "you passed"))
        .and_then(first_number);
    Overflow { window, prompt }
}

fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    text.find(marker).map(|i| &text[i + marker.len()..])
}

/// The first run of digits in `text` (commas inside it allowed, as in
/// "128,000"), if it starts within the next few words.
fn first_number(text: &str) -> Option<u64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    if start > 24 {
        return None;
    }
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sized(window: u64, prompt: u64) -> Option<Overflow> {
        Some(Overflow {
            window: Some(window),
            prompt: Some(prompt),
        })
    }

    #[test]
    fn llama_cpp_gives_both_sizes_as_fields() {
        let body = json!({"error":{"code":400,"message":"request (1042 tokens) exceeds the available context size (1024 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":1042,"n_ctx":1024}});
        assert_eq!(detect(&body), sized(1024, 1042));
        // The older wording, same type and fields.
        let body = json!({"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}});
        assert_eq!(detect(&body), sized(4096, 5000));
        // An error event inside an Anthropic-endpoint stream: no wrapper.
        let body = json!({"code":400,"message":"request (1042 tokens) exceeds the available context size (1024 tokens), try increasing it","type":"exceed_context_size_error"});
        assert_eq!(detect(&body), sized(1024, 1042));
    }

    #[test]
    fn openai_is_known_by_its_code() {
        let body = json!({"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}});
        assert_eq!(detect(&body), sized(8192, 8227));
        // The newer wording names no sizes.
        let body = json!({"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}});
        assert_eq!(detect(&body), Some(Overflow::default()));
    }

    #[test]
    fn vllm_wordings_of_several_versions() {
        let body = json!({"error":{"message":"This model's maximum context length is 40960 tokens. However, you requested 0 output tokens and your prompt contains at least 40961 input tokens, for a total of at least 40961 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=40961)","type":"BadRequestError","param":"input_tokens","code":400}});
        assert_eq!(detect(&body), sized(40960, 40961));
        let body = json!({"object":"error","message":"This model's maximum context length is 2048 tokens. However, your request has 3000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400});
        assert_eq!(detect(&body), sized(2048, 3000));
        let body = json!({"error":{"message":"You passed 3000 input tokens and requested 100 output tokens. However, the model's context length is only 2048 tokens, resulting in a maximum input length of 1948 tokens. Please reduce the length of the input prompt.","type":"BadRequestError","param":"input_tokens","code":400}});
        assert_eq!(detect(&body), sized(2048, 3000));
    }

    #[test]
    fn anthropic_wordings() {
        let body = json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011C"});
        assert_eq!(detect(&body), sized(200_000, 200_251));
        let body = json!({"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, decrease input length or `max_tokens` and try again"}});
        assert_eq!(detect(&body), sized(204_648, 189_136));
    }

    #[test]
    fn gemini_by_status_and_count() {
        let body = json!({"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}});
        assert_eq!(detect(&body), sized(131_072, 132_478));
        // The non-SSE stream wraps it in a list.
        assert_eq!(detect(&json!([body])), sized(131_072, 132_478));
        // Another INVALID_ARGUMENT is not an overflow.
        let body = json!({"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}});
        assert_eq!(detect(&body), None);
    }

    #[test]
    fn ollama_strings_and_the_llama_server_body_they_carry() {
        let body = json!({"error":"{\"error\":{\"code\":400,\"message\":\"request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}}"});
        assert_eq!(detect(&body), sized(4096, 5000));
        let body = json!({"error":"the input length exceeds the context length"});
        assert_eq!(detect(&body), Some(Overflow::default()));
        let body = json!({"error":"the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length"});
        assert_eq!(detect(&body), Some(Overflow::default()));
    }

    #[test]
    fn lm_studio_and_openrouter_in_words() {
        let body = json!({"error":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."});
        assert_eq!(
            detect(&body),
            Some(Overflow {
                window: Some(4096),
                prompt: None
            })
        );
        let body = json!({"error":{"message":"This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input).","code":400}});
        assert_eq!(
            detect(&body),
            Some(Overflow {
                window: Some(32768),
                prompt: None
            })
        );
    }

    #[test]
    fn a_window_out_of_range_is_not_taken() {
        let body = json!({"error":{"code":400,"message":"request (1042 tokens) exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":1042,"n_ctx":18446744073709551615u64}});
        assert_eq!(
            detect(&body),
            Some(Overflow {
                window: None,
                prompt: Some(1042)
            })
        );
    }

    #[test]
    fn other_errors_are_not_overflows() {
        for body in [
            json!({"error":{"message":"model 'x' not found","type":"invalid_request_error","code":400}}),
            json!({"error":"model is required"}),
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
            json!({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}),
            json!("text"),
            json!(null),
        ] {
            assert_eq!(detect(&body), None, "{body}");
        }
    }
}
