//! Provider-neutral conversation types. Everything above the engine speaks
//! these; no provider JSON ever leaves mm-engine.

use serde::{Deserialize, Serialize};

/// One message of the history. Serialised as-is into session files, so the
/// shape is part of the session format (`mm-store` carries a `version`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The system prompt; at most one, first.
    System {
        /// The whole prompt text.
        content: String,
    },
    /// A question (or a compaction summary) from the user side.
    User {
        /// The question as sent (mentions expanded), or the summary.
        content: String,
        /// Pictures sent with it (`@shot.png`, an editor's image block),
        /// after the text. Absent in older files.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// What the model answered: text, reasoning kept for the record (and sent
    /// back only where the provider requires it) and tool calls.
    Assistant {
        /// The answer's text; empty when the model only called tools.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
        /// The reasoning blocks, in the order they came.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
        /// The calls the model asked for, in order; each gets exactly one
        /// `Tool` message in reply.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, paired with it by `call_id`. `failed`
    /// is the status the tool reported, kept for front ends that replay a
    /// session; providers never send it. Absent (false) in older files.
    Tool {
        /// The id of the [`ToolCall`] this answers.
        call_id: String,
        /// The tool's name, as the call gave it.
        name: String,
        /// What the model receives: the tool's output or error text.
        content: String,
        /// The tool reported a failure.
        #[serde(default, skip_serializing_if = "is_false")]
        failed: bool,
        /// Pictures the tool returned (`read_file` of a PNG): inside the
        /// result where the wire allows, else in a user message after the
        /// results. Absent in older files.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}

/// A picture a message carries, as every wire sends it: its media type and
/// its bytes in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// Where it came from (a path, a URI), for the line a model that
    /// cannot see reads instead.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

impl Image {
    /// The line a model that cannot see images reads in the image's place.
    pub fn unseen_line(&self) -> String {
        let what = if self.source.is_empty() {
            "an image".to_owned()
        } else {
            format!("the image {}", self.source)
        };
        format!("[{what} is not shown: this model cannot see images]")
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
            images: Vec::new(),
        }
    }

    /// A user message with pictures after its text.
    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Message::User {
            content: content.into(),
            images,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A plain assistant text answer.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: content.into(),
            reasoning: Vec::new(),
            tool_calls: Vec::new(),
        }
    }

    /// A tool result of a call that succeeded.
    pub fn tool(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self::tool_result(call_id, name, content, false)
    }

    /// A tool result with the status the tool reported.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        failed: bool,
    ) -> Self {
        Message::Tool {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            failed,
            images: Vec::new(),
        }
    }
}

/// A block of reasoning. `signature` is set for blocks a provider signs
/// (Anthropic `thinking`, Gemini `thoughtSignature`): those are sent back
/// verbatim; unsigned reasoning is never sent back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning text as the model wrote it.
    pub text: String,
    /// The provider's signature; set means the block is sent back verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Anthropic `redacted_thinking` payload, sent back as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
}

/// A complete tool call. `arguments` is the raw JSON text the model wrote
/// (it may be invalid JSON: the tool layer answers that as text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id: the server's, made distinct within one reply, or one mm
    /// made (`call_…`) when the server gave none.
    pub id: String,
    /// The tool's name as the model wrote it (it may name no tool).
    pub name: String,
    /// The raw JSON text of the arguments.
    pub arguments: String,
}

/// A tool as declared to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDecl {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Token counts a server reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// The whole prompt, cached part included.
    pub prompt_tokens: u64,
    /// Tokens the model generated.
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those the server read from its prompt cache
    /// instead of computing them again (Anthropic `cache_read_input_tokens`,
    /// OpenAI `prompt_tokens_details.cached_tokens`, Gemini
    /// `cachedContentTokenCount`, llama.cpp `timings.cache_n`). Zero when
    /// the server does not say (Ollama), and in older session files.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    /// Add another request's counts to these.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
    }

    /// Nothing counted.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// What a generation streams, in order, to whoever drives it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A piece of the answer.
    Text(String),
    /// A piece of reasoning.
    Reasoning(String),
    /// The model began composing a tool call (its arguments follow, unshown).
    ToolCallStarted {
        /// The call's position among this reply's calls, from 0.
        index: usize,
        /// The call's id, as [`ToolCall::id`] will have it.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A tool call is complete.
    ToolCallFinished(ToolCall),
    /// Token counts.
    Usage(Usage),
    /// A notice for the user (e.g. `stream stalled; retrying without streaming`).
    Notice(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_status_is_optional_in_session_files() {
        let ok = Message::tool("c1", "bash", "hi\n");
        let json = serde_json::to_value(&ok).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"role": "tool", "call_id": "c1", "name": "bash", "content": "hi\n"})
        );
        // A file written before the flag existed reads as a success.
        assert_eq!(serde_json::from_value::<Message>(json).unwrap(), ok);
        let failed = Message::tool_result("c2", "bash", "x\n[exit code: exit status 1]", true);
        let json = serde_json::to_value(&failed).unwrap();
        assert_eq!(json["failed"], serde_json::json!(true));
        assert_eq!(serde_json::from_value::<Message>(json).unwrap(), failed);
    }
}
