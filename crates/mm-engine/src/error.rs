//! Engine errors. Every `Display` is one line a user can act on, and none
//! ever contains a key (docs/design.md#where-keys-go).

use serde_json::Value;

use crate::overflow::Overflow;
use crate::types::Message;

/// How to point mm at another model or server; appended to the lines about
/// a server that cannot be reached, so the user knows what to change.
pub const HOW_TO_CHANGE: &str = "change it with `model`/`baseURL` in your config file \
(~/.config/mm/config.yaml), MM_MODEL / MM_BASE_URL, or --model / --base-url";

/// What went wrong talking to a model server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The provider part of `PROVIDER/MODEL` is not in the registry.
    #[error("unknown provider \"{name}\"; known providers: {}", known.join(", "))]
    UnknownProvider {
        /// The provider as the settings named it.
        name: String,
        /// Every registered provider, to choose from.
        known: Vec<String>,
    },
    /// `model` is not of the form `PROVIDER/MODEL`.
    #[error(
        "model \"{model}\" is not PROVIDER/MODEL (for example ollama/qwen3:8b); {HOW_TO_CHANGE}"
    )]
    BadModel {
        /// The `model` setting as given.
        model: String,
    },
    /// The provider has no default address and none was configured.
    #[error(
        "provider {provider} needs a baseURL (the server's address, e.g. http://localhost:8080/v1); {HOW_TO_CHANGE}"
    )]
    MissingBaseUrl {
        /// The provider's name.
        provider: String,
    },
    /// The provider requires a key and its variable is unset or empty.
    #[error(
        "provider {provider} needs an API key: set the environment variable {var} (or name another one with `apiKeyEnv`)"
    )]
    MissingKey {
        /// The provider's name.
        provider: String,
        /// The environment variable the key is read from.
        var: String,
    },
    /// Nothing answers at the configured address.
    #[error("cannot reach {provider} at {url} (is the server running?); {HOW_TO_CHANGE}")]
    Unreachable {
        /// The provider's name.
        provider: String,
        /// The address that was tried (masked like every URL shown).
        url: String,
    },
    /// The connection failed in another way (reset, TLS, DNS...).
    #[error("the connection to {provider} at {url} failed: {detail}")]
    Connection {
        /// The provider's name.
        provider: String,
        /// The address that was tried (masked like every URL shown).
        url: String,
        /// What the HTTP client said, with its causes.
        detail: String,
    },
    /// The server answered with a redirect, which mm does not follow (the
    /// key would go along); `location` is masked like every URL shown.
    #[error(
        "the model server answered {status} (a redirect to {location}); mm does not follow redirects, so that keys go only to the configured address: set `baseURL` to the new address"
    )]
    Redirect {
        /// The HTTP status (3xx).
        status: u16,
        /// The `Location` the server gave, masked.
        location: String,
    },
    /// The server answered 4xx/5xx; `message` is what its body said.
    #[error("the model server answered {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The error the body gave, on one line (or the status text).
        message: String,
    },
    /// The server said the request is longer than the model's context; the
    /// agent compacts the history and retries. `window` and `prompt` are
    /// the sizes in tokens where the answer gave them.
    #[error("the request is too long for the model's context: {message}")]
    ContextLength {
        /// The server's own words.
        message: String,
        /// The model's context window, in tokens, when the answer gave it.
        window: Option<u64>,
        /// The prompt's length, in tokens, when the answer gave it.
        prompt: Option<u64>,
    },
    /// The watchdog cut the stream and the non-streaming retry failed too.
    #[error(
        "the {provider} stream sent no content for {seconds}s; the retry without streaming failed too: {detail}"
    )]
    Stalled {
        /// The provider's name.
        provider: String,
        /// The watchdog's limit (`watchdog`) in seconds.
        seconds: u64,
        /// Why the non-streaming retry failed.
        detail: String,
    },
    /// The server asked (`Retry-After`) for a longer wait than
    /// `maxRetryWait` allows: the turn fails rather than sleep for hours.
    #[error(
        "{error}; it asks to wait {asked}s before a retry (Retry-After), longer than maxRetryWait ({max}s), so mm does not retry"
    )]
    WaitTooLong {
        /// What the server answered.
        error: Box<EngineError>,
        /// The wait the server asked for, in seconds.
        asked: u64,
        /// The `maxRetryWait` setting, in seconds.
        max: u64,
    },
    /// A tool call's arguments ran away; `text` is the reference's sentence.
    #[error("{text}")]
    Runaway {
        /// The whole sentence for the user, naming the pattern or the size.
        text: String,
    },
    /// The visible answer repeated one passage back to back; `text` is the
    /// answer-loop guard's sentence (docs/design.md#a-looping-answer-stops).
    #[error("{text}")]
    Repeated {
        /// The sentence for the user, naming the passage.
        text: String,
    },
    /// The stream was malformed or broke off.
    #[error("{0}")]
    Stream(String),
    /// The request was cancelled (summaries; `generate` returns `Ok` instead).
    #[error("cancelled")]
    Cancelled,
}

impl EngineError {
    /// The kind of turn failure this error is, when it ends a turn.
    pub fn kind(&self) -> mm_types::FailureKind {
        use mm_types::FailureKind as K;
        match self {
            EngineError::UnknownProvider { .. }
            | EngineError::BadModel { .. }
            | EngineError::MissingBaseUrl { .. }
            | EngineError::MissingKey { .. } => K::Setup,
            EngineError::Unreachable { .. } | EngineError::Connection { .. } => K::Network,
            EngineError::Redirect { .. }
            | EngineError::Status { .. }
            | EngineError::WaitTooLong { .. } => K::Server,
            EngineError::ContextLength { .. } => K::Overflow,
            EngineError::Stalled { .. }
            | EngineError::Runaway { .. }
            | EngineError::Repeated { .. }
            | EngineError::Stream(_)
            | EngineError::Cancelled => K::Stream,
        }
    }

    /// This error as the failure of a turn.
    pub fn turn_error(&self) -> mm_types::TurnError {
        mm_types::TurnError::new(self.kind(), self.to_string())
    }
}

/// A failed generation: the error and the assistant message as far as it
/// got (for a runaway it holds the runaway call, which the agent answers
/// with the not-run result, docs/design.md#every-call-gets-a-result).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct GenerateError {
    /// What went wrong.
    pub error: EngineError,
    /// The assistant message as far as it got, when anything arrived.
    pub partial: Option<Message>,
}

impl From<EngineError> for GenerateError {
    fn from(error: EngineError) -> Self {
        GenerateError {
            error,
            partial: None,
        }
    }
}

/// Phrases servers use when the prompt does not fit the context window.
const CONTEXT_PHRASES: &[&str] = &[
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "exceeds the context",
    "maximum number of tokens",
    "context size",
    "context limit",
];

/// True when an error message says the context is too long.
pub fn is_context_length(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    CONTEXT_PHRASES.iter().any(|p| lower.contains(p))
}

/// Map an error answer to an error: an overflow (recognised from the
/// body's structure, [`crate::overflow`]) or the status and message.
/// `body` is the answer's JSON (`Null` when it was not JSON).
pub(crate) fn server_error(status: u16, message: String, body: &Value) -> EngineError {
    let overflow = if body.is_null() {
        is_context_length(&message).then(Overflow::default)
    } else {
        crate::overflow::detect(body)
    };
    match overflow {
        Some(o) if (400..500).contains(&status) || status == 200 => EngineError::ContextLength {
            message,
            window: o.window,
            prompt: o.prompt,
        },
        _ => EngineError::Status { status, message },
    }
}

/// An error event inside a 200 stream (`error` is its error object or
/// string): an overflow, or a stream error naming the provider.
pub(crate) fn stream_server_error(provider: &str, error: &Value) -> EngineError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map_or_else(|| error.to_string(), str::to_owned);
    match crate::overflow::detect(error) {
        Some(o) => EngineError::ContextLength {
            message,
            window: o.window,
            prompt: o.prompt,
        },
        None => EngineError::Stream(format!(
            "{provider} reported an error mid-stream: {message}"
        )),
    }
}

/// Cut a server-supplied text to a sane length for one line.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .take(max_chars + 1)
        .collect();
    if flat.chars().count() > max_chars {
        let mut cut: String = flat.chars().take(max_chars).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_length_is_recognised_case_insensitively() {
        assert!(is_context_length(
            "This model's maximum context length is 8192 tokens"
        ));
        assert!(is_context_length(
            "prompt is too long: 210000 tokens > 200000 maximum"
        ));
        assert!(is_context_length("Too many tokens in request"));
        assert!(!is_context_length("invalid model name"));
        assert_eq!(
            server_error(400, "maximum context length exceeded".into(), &Value::Null),
            EngineError::ContextLength {
                message: "maximum context length exceeded".into(),
                window: None,
                prompt: None,
            }
        );
        assert_eq!(
            server_error(500, "context length".into(), &Value::Null),
            EngineError::Status {
                status: 500,
                message: "context length".into()
            }
        );
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("  a\nb  ", 10), "a b");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }

    #[test]
    fn unknown_provider_lists_known_ones() {
        let e = EngineError::UnknownProvider {
            name: "foo".into(),
            known: vec!["ollama".into(), "openai".into()],
        };
        assert_eq!(
            e.to_string(),
            "unknown provider \"foo\"; known providers: ollama, openai"
        );
    }
}
