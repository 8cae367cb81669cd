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
    Stream {
        /// The steps, played in order.
        steps: Vec<Step>,
    },
    /// An answer of exactly this status and JSON body (a server's recorded
    /// error answer, say).
    Body {
        /// The HTTP status.
        status: u16,
        /// The JSON body, sent as is.
        body: serde_json::Value,
    },
    /// An HTTP error: status, optional `Retry-After` seconds, body message.
    Status {
        /// The HTTP status.
        status: u16,
        /// Seconds for a `Retry-After` header; `None` sends none.
        #[serde(default)]
        retry_after: Option<u64>,
        /// The error message, put in the endpoint's error format.
        #[serde(default)]
        message: String,
    },
    /// An HTTP error whose `Retry-After` is an HTTP date `seconds` after
    /// the answer is sent (as some servers and proxies give it).
    RetryAt {
        /// The HTTP status.
        status: u16,
        /// How far ahead the date is.
        seconds: u64,
        /// The error message, put in the endpoint's error format.
        #[serde(default)]
        message: String,
    },
}

/// One step of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A chunk of answer text.
    Text {
        /// The chunk, sent as one delta of the stream.
        text: String,
    },
    /// A chunk of reasoning (`reasoning_content`, `thinking`, `thought`…).
    /// `signature` is sent as Anthropic `signature_delta` / Gemini
    /// `thoughtSignature` at the end of the block.
    Reasoning {
        /// The chunk, sent as one reasoning delta.
        text: String,
        /// The block's signature; `None` sends none.
        #[serde(default)]
        signature: Option<String>,
    },
    /// A tool call begins (`index` orders parallel calls; `id` may be
    /// omitted to test servers that send none).
    ToolStart {
        /// Which call this is among the reply's calls, from 0.
        index: usize,
        /// The call's id; `None` sends none.
        #[serde(default)]
        id: Option<String>,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolArgs {
        /// The call the fragment belongs to.
        index: usize,
        /// The text, appended to the call's arguments so far.
        fragment: String,
    },
    /// A complete tool call in one step (start + whole arguments).
    ToolCall {
        /// Which call this is among the reply's calls, from 0.
        index: usize,
        /// The call's id; `None` sends none.
        #[serde(default)]
        id: Option<String>,
        /// The tool's name.
        name: String,
        /// The whole JSON argument text.
        arguments: String,
    },
    /// Endless arguments for a tool call: `fragment` repeated `times` times
    /// (a runaway model).
    Runaway {
        /// Which call this is among the reply's calls, from 0.
        index: usize,
        /// The piece that is repeated.
        fragment: String,
        /// How many times it is sent; played lazily, never held whole.
        times: usize,
    },
    /// Token counts, sent where the format sends them.
    Usage {
        /// Tokens of the prompt, cached ones included.
        prompt: u64,
        /// Tokens of the answer.
        completion: u64,
    },
    /// Of the `Usage` prompt, this many tokens were read from the server's
    /// prompt cache: sent as Anthropic `cache_read_input_tokens` (its
    /// `input_tokens` then counts the rest), OpenAI
    /// `prompt_tokens_details.cached_tokens` with llama.cpp's
    /// `timings.cache_n`, Gemini `cachedContentTokenCount`; Ollama has no
    /// such field.
    Cached {
        /// How many of the prompt's tokens came from the cache.
        tokens: u64,
    },
    /// Send nothing for this many milliseconds (watchdog tests).
    Stall {
        /// The pause, in milliseconds.
        millis: u64,
    },
    /// Close the connection here, mid-stream.
    Drop,
    /// Send this raw line as if it were a stream line (malformed input).
    Raw {
        /// The line, without its ending (the format's separator is added).
        line: String,
    },
}

/// A request the server received, recorded for tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// The HTTP method: `GET`, `POST`...
    pub method: String,
    /// Path with query string, e.g. `/v1beta/models/m:streamGenerateContent?alt=sse`.
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when it was not JSON).
    pub body: serde_json::Value,
}

impl Reply {
    /// A streamed reply made of these steps.
    pub fn stream(steps: Vec<Step>) -> Reply {
        Reply::Stream { steps }
    }

    /// A reply that is one piece of answer text.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Stream {
            steps: vec![Step::text(text)],
        }
    }

    /// A reply that is one complete tool call (index 0).
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Reply {
        Reply::Stream {
            steps: vec![Step::ToolCall {
                index: 0,
                id: Some(id.into()),
                name: name.into(),
                arguments: arguments.into(),
            }],
        }
    }

    /// An HTTP error without `Retry-After`.
    pub fn status(status: u16, message: impl Into<String>) -> Reply {
        Reply::Status {
            status,
            retry_after: None,
            message: message.into(),
        }
    }

    /// An HTTP error whose `Retry-After` is the HTTP date `seconds` ahead.
    pub fn retry_at(status: u16, seconds: u64, message: impl Into<String>) -> Reply {
        Reply::RetryAt {
            status,
            seconds,
            message: message.into(),
        }
    }

    /// An HTTP error with a `Retry-After` header of `seconds`.
    pub fn retry_after(status: u16, seconds: u64, message: impl Into<String>) -> Reply {
        Reply::Status {
            status,
            retry_after: Some(seconds),
            message: message.into(),
        }
    }
}

impl Step {
    /// A chunk of answer text.
    pub fn text(text: impl Into<String>) -> Step {
        Step::Text { text: text.into() }
    }

    /// A chunk of reasoning without a signature.
    pub fn reasoning(text: impl Into<String>) -> Step {
        Step::Reasoning {
            text: text.into(),
            signature: None,
        }
    }

    /// A tool call begins, with an id.
    pub fn tool_start(index: usize, id: impl Into<String>, name: impl Into<String>) -> Step {
        Step::ToolStart {
            index,
            id: Some(id.into()),
            name: name.into(),
        }
    }

    /// A fragment of the arguments of tool call `index`.
    pub fn tool_args(index: usize, fragment: impl Into<String>) -> Step {
        Step::ToolArgs {
            index,
            fragment: fragment.into(),
        }
    }

    /// Send nothing for `millis` milliseconds.
    pub fn stall(millis: u64) -> Step {
        Step::Stall { millis }
    }

    /// A raw line written verbatim into the stream.
    pub fn raw(line: impl Into<String>) -> Step {
        Step::Raw { line: line.into() }
    }
}

impl Recorded {
    /// The first value of header `name` (give it lower-cased).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}
