//! The script a mock server plays: one [`Reply`] per request, in order.
//! A reply is wire-neutral; the server renders it in the format of the
//! endpoint that was called (OpenAI, Ollama, Anthropic, Gemini).

use serde::{Deserialize, Serialize};

/// What the server does for one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    /// A normal answer, streamed (or sent whole when the request does not
    /// stream), made of steps.
    Stream { steps: Vec<Step> },
    /// An HTTP error: status, optional `Retry-After` seconds, body message.
    Status {
        status: u16,
        #[serde(default)]
        retry_after: Option<u64>,
        #[serde(default)]
        message: String,
    },
}

/// One step of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A chunk of answer text.
    Text { text: String },
    /// A chunk of reasoning (`reasoning_content`, `thinking`, `thought`…).
    /// `signature` is sent as Anthropic `signature_delta` / Gemini
    /// `thoughtSignature` at the end of the block.
    Reasoning {
        text: String,
        #[serde(default)]
        signature: Option<String>,
    },
    /// A tool call begins (`index` orders parallel calls; `id` may be
    /// omitted to test servers that send none).
    ToolStart {
        index: usize,
        #[serde(default)]
        id: Option<String>,
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolArgs { index: usize, fragment: String },
    /// A complete tool call in one step (start + whole arguments).
    ToolCall {
        index: usize,
        #[serde(default)]
        id: Option<String>,
        name: String,
        arguments: String,
    },
    /// Endless arguments for a tool call: `fragment` repeated `times` times
    /// (a runaway model).
    Runaway {
        index: usize,
        fragment: String,
        times: usize,
    },
    /// Token counts, sent where the format sends them.
    Usage { prompt: u64, completion: u64 },
    /// Send nothing for this many milliseconds (watchdog tests).
    Stall { millis: u64 },
    /// Close the connection here, mid-stream.
    Drop,
    /// Send this raw line as if it were a stream line (malformed input).
    Raw { line: String },
}

/// A request the server received, recorded for tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    pub method: String,
    /// Path with query string, e.g. `/v1beta/models/m:streamGenerateContent?alt=sse`.
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when it was not JSON).
    pub body: serde_json::Value,
}
