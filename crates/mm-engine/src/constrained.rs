//! Calls the server enforces (`constrainedCalls`): a reply constrained to
//! a JSON value that is exactly one declared call or an answer, and that
//! value turned back into a native call or the answer's text.
//!
//! A small model whose chat template has no tool-call format describes a
//! command instead of calling it; a local server (llama.cpp, LM Studio,
//! vLLM, Ollama) can hold its output to a JSON Schema, so the model has
//! to pick a call or say it answers. The request is the same as an
//! unconstrained one (same messages, same tool declarations, so the
//! server's prompt cache serves it) plus the schema, and thinking off: a
//! grammar from the first token leaves no room for reasoning.

use mm_types::json::{self, KeyOrder};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::assemble::make_call_id;
use crate::engine::{Engine, Generation};
use crate::error::GenerateError;
use crate::types::{Message, StreamEvent, ToolCall, ToolDecl};

/// The schema of a constrained reply: `oneOf` a branch per declared tool
/// (`{"name": <its name>, "arguments": <its parameters>}`) and an
/// `{"answer": "<text>"}` branch whose text is not empty.
pub fn calls_schema(tools: &[ToolDecl]) -> Value {
    let mut branches: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": {
                    "name": {"const": t.name},
                    "arguments": t.parameters,
                },
                "required": ["name", "arguments"],
            })
        })
        .collect();
    branches.push(json!({
        "type": "object",
        // An empty answer is neither an act nor an answer: a small model
        // took it once in ten seeded runs, so the grammar asks for text.
        "properties": {"answer": {"type": "string", "minLength": 1}},
        "required": ["answer"],
    }));
    json!({"oneOf": branches})
}

/// `schema` as JSON text with every object's `name` key first. A server
/// that turns a schema into a grammar (llama.cpp, Ollama) writes an
/// object's properties in the order they come, and `serde_json` sorts
/// them, which puts a call's `arguments` before its `name`: a small model
/// then starts `{"a` and drifts into the `answer` branch. Measured on
/// SmolLM2-135M with a one-tool probe: 3 calls in 10 with `arguments`
/// first, 10 in 10 with `name` first.
pub fn schema_text(schema: &Value) -> String {
    json::to_text(schema, KeyOrder::NameFirst)
}

/// `body` (a JSON object's text) with `"key":value` added last, `value`
/// given as text (see [`schema_text`]).
pub(crate) fn append_field(mut body: String, key: &str, value: &str) -> String {
    if body.ends_with('}') {
        body.pop();
        if !body.ends_with('{') {
            body.push(',');
        }
        body.push_str(&Value::String(key.to_owned()).to_string());
        body.push(':');
        body.push_str(value);
        body.push('}');
    }
    body
}

/// The reply a constrained value stands for: a native call of a declared
/// tool (with a fresh id), or the answer's text. A reply that already
/// holds calls (a server that parsed the value itself), or whose text is
/// not such a value (cut off by `maxTokens`), is left as it is.
pub fn to_reply(message: Message, tools: &[ToolDecl]) -> Message {
    let Message::Assistant {
        content,
        reasoning,
        tool_calls,
    } = message
    else {
        return message;
    };
    if !tool_calls.is_empty() {
        return Message::Assistant {
            content,
            reasoning,
            tool_calls,
        };
    }
    let value = serde_json::from_str::<Map<String, Value>>(content.trim()).ok();
    let call = value.as_ref().and_then(|v| {
        let name = v.get("name")?.as_str()?;
        let arguments = v.get("arguments").filter(|a| a.is_object())?;
        tools.iter().any(|t| t.name == name).then(|| ToolCall {
            id: make_call_id(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
        })
    });
    if let Some(call) = call {
        return Message::Assistant {
            content: String::new(),
            reasoning,
            tool_calls: vec![call],
        };
    }
    match value.as_ref().and_then(|v| v.get("answer")?.as_str()) {
        Some(answer) => Message::Assistant {
            content: answer.to_owned(),
            reasoning,
            tool_calls,
        },
        None => Message::Assistant {
            content,
            reasoning,
            tool_calls,
        },
    }
}

/// The notice a retry of a reply that described a command says, once.
pub const RETRY_NOTICE: &str = "the model described a command instead of calling a tool; \
asking once more with its reply held to a declared call or an answer";

/// Code fences whose info string names a shell.
const SHELL_FENCES: &[&str] = &[
    "bash",
    "sh",
    "shell",
    "zsh",
    "console",
    "terminal",
    "shell-session",
    "shellsession",
];

/// Openings of a question about a command rather than a request to run it.
const ASKS_HOW: &[&str] = &["how ", "what ", "why ", "explain", "which ", "show me how"];

/// Whether `reply`, the answer to `messages`, described a command where it
/// should have called `bash` (docs/architecture.md#tool-calls-written-as-text):
/// `bash` is declared, the reply holds no call (native or recovered) but
/// text, the text shows a command (a code fence tagged as a shell, or a
/// line that begins `$ `, or a line that is a command the question wrote
/// in backticks), and the question asked to act, not how (it does not
/// open with how, what, why, which or explain, nor hold "how do", "how to"
/// or "how can").
pub fn describes_command(reply: &Message, messages: &[Message], tools: &[ToolDecl]) -> bool {
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = reply
    else {
        return false;
    };
    if !tool_calls.is_empty()
        || content.trim().is_empty()
        || !tools.iter().any(|t| t.name == "bash")
    {
        return false;
    }
    let Some(question) = messages.iter().rev().find_map(|m| match m {
        Message::User { content, .. } => Some(content.as_str()),
        _ => None,
    }) else {
        return false;
    };
    let asked = question.trim().to_lowercase();
    if ASKS_HOW.iter().any(|w| asked.starts_with(w))
        || ["how do", "how to", "how can"]
            .iter()
            .any(|w| asked.contains(w))
    {
        return false;
    }
    let named = backticked(question);
    let mut in_shell_fence = false;
    let mut in_fence = false;
    for line in content.lines() {
        let t = line.trim();
        if let Some(info) = t.strip_prefix("```") {
            if in_fence {
                in_fence = false;
                in_shell_fence = false;
            } else {
                in_fence = true;
                let info = info.trim().to_lowercase();
                in_shell_fence = SHELL_FENCES.contains(&info.as_str());
            }
            continue;
        }
        if in_shell_fence && !t.is_empty() {
            return true;
        }
        let command = t.strip_prefix("$ ").map(str::trim);
        if command.is_some_and(|c| !c.is_empty()) {
            return true;
        }
        let bare = t.trim_matches('`').trim();
        if !bare.is_empty() && named.contains(&bare) {
            return true;
        }
    }
    false
}

/// The spans of `text` in single backticks.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`')
        .enumerate()
        .filter(|(i, s)| i % 2 == 1 && !s.trim().is_empty())
        .map(|(_, s)| s.trim())
        .collect()
}

/// Reads the text of a constrained reply as it streams and gives back the
/// characters of its top-level `answer` string as they are decoded, so an
/// answer is shown while it arrives. A call's value gives nothing.
#[derive(Debug, Default)]
pub struct AnswerStream {
    /// Object and array nesting; the value itself is depth 1.
    depth: usize,
    in_string: bool,
    escape: bool,
    /// The hex digits of a `\u` escape read so far.
    unicode: Option<String>,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
    /// At depth 1, a key comes next (after `{` or `,`), not a value.
    expect_key: bool,
    /// The string being read is a key at depth 1.
    key: Option<String>,
    /// The last key at depth 1 was `answer` and its value is next.
    answer_next: bool,
    /// The string being read is the answer.
    in_answer: bool,
    /// Everything fed so far.
    pub raw: String,
    /// The answer decoded so far.
    pub answer: String,
}

impl AnswerStream {
    /// Read `text`; returns the answer characters it completed.
    pub fn feed(&mut self, text: &str) -> String {
        self.raw.push_str(text);
        let mut out = String::new();
        for c in text.chars() {
            if self.in_string {
                self.string_char(c, &mut out);
                continue;
            }
            match c {
                '{' | '[' => {
                    self.depth += 1;
                    self.expect_key = self.depth == 1;
                    self.answer_next = false;
                }
                ',' => {
                    self.expect_key = self.depth == 1;
                    self.answer_next = false;
                }
                ':' => {
                    if self.depth == 1 {
                        self.expect_key = false;
                    }
                }
                '}' | ']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.answer_next = false;
                }
                '"' => {
                    self.in_string = true;
                    if self.answer_next {
                        self.in_answer = true;
                        self.answer_next = false;
                    } else if self.depth == 1 && self.expect_key {
                        self.key = Some(String::new());
                    }
                }
                ' ' | '\n' | '\r' | '\t' => {}
                _ => self.answer_next = false,
            }
        }
        self.answer.push_str(&out);
        out
    }

    fn string_char(&mut self, c: char, out: &mut String) {
        if let Some(hex) = &mut self.unicode {
            hex.push(c);
            if hex.len() == 4 {
                let unit = u16::from_str_radix(hex, 16).unwrap_or(0xFFFD);
                self.unicode = None;
                self.push_unit(unit, out);
            }
            return;
        }
        if self.escape {
            self.escape = false;
            let decoded = match c {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'u' => {
                    self.unicode = Some(String::new());
                    return;
                }
                other => other,
            };
            self.push_char(decoded, out);
            return;
        }
        match c {
            '\\' => self.escape = true,
            '"' => {
                self.in_string = false;
                self.in_answer = false;
                if let Some(key) = self.key.take() {
                    self.answer_next = key == "answer";
                }
            }
            other => self.push_char(other, out),
        }
    }

    fn push_unit(&mut self, unit: u16, out: &mut String) {
        if (0xD800..0xDC00).contains(&unit) {
            self.high = Some(unit);
            return;
        }
        let c = match self.high.take() {
            Some(high) if (0xDC00..0xE000).contains(&unit) => char::from_u32(
                0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00),
            ),
            _ => char::from_u32(u32::from(unit)),
        };
        self.push_char(c.unwrap_or('\u{FFFD}'), out);
    }

    fn push_char(&mut self, c: char, out: &mut String) {
        if self.in_answer {
            out.push(c);
        } else if let Some(key) = &mut self.key {
            key.push(c);
        }
    }
}

impl Engine {
    /// Whether this provider's server can be asked to constrain a reply to
    /// a declared call or an answer (`openai-compatible`, `ollama`).
    pub fn can_constrain_calls(&self) -> bool {
        self.inner.spec.constrained_calls
    }

    /// This engine for a constrained reply: its requests carry
    /// [`calls_schema`] of `tools` as the provider's structured output,
    /// with thinking off, and its text is not searched for text-form calls.
    pub fn with_constrained_calls(&self, tools: &[ToolDecl]) -> Engine {
        let mut settings = self.inner.settings.clone();
        settings.output_schema = Some(calls_schema(tools));
        settings.constrained_calls = true;
        self.rebuilt_with(settings, self.inner.window.clone(), false)
    }

    /// One request that should act: sent as usual, and when `retry` is set
    /// on a server that can constrain (`constrainedCalls: auto`), a reply
    /// that [`describes_command`] instead of calling is asked for once
    /// more, the same messages and tools with only the calls schema added
    /// (the server's cache serves the whole prompt), after a notice. The
    /// retry's reply replaces the first; its usage counts both answers.
    pub async fn generate_acting(
        &self,
        messages: &[Message],
        tools: &[ToolDecl],
        retry: bool,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Generation, GenerateError> {
        let first = self.generate(messages, tools, on_event, cancel).await?;
        if !retry
            || first.cancelled
            || !self.can_constrain_calls()
            || !describes_command(&first.message, messages, tools)
        {
            return Ok(first);
        }
        on_event(StreamEvent::Notice(RETRY_NOTICE.to_owned()));
        let mut again = self
            .generate_calls(messages, tools, on_event, cancel)
            .await?;
        if let (Some(u), Some(before)) = (&mut again.usage, first.usage) {
            u.completion_tokens += before.completion_tokens;
        }
        Ok(again)
    }

    /// One constrained request ([`Engine::with_constrained_calls`]): the
    /// answer branch's text streams to `on_event` as it is decoded; the
    /// value comes back as a native call or the answer ([`to_reply`]).
    pub async fn generate_calls(
        &self,
        messages: &[Message],
        tools: &[ToolDecl],
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Generation, GenerateError> {
        let engine = self.with_constrained_calls(tools);
        let mut stream = AnswerStream::default();
        let result = {
            let mut inner = |event: StreamEvent| match event {
                StreamEvent::Text(text) => {
                    let shown = stream.feed(&text);
                    if !shown.is_empty() {
                        on_event(StreamEvent::Text(shown));
                    }
                }
                other => on_event(other),
            };
            engine.generate(messages, tools, &mut inner, cancel).await
        };
        match result {
            Ok(mut g) => {
                g.message = to_reply(g.message, tools);
                if let Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } = &g.message
                    && tool_calls.is_empty()
                    && stream.answer.is_empty()
                    && !content.is_empty()
                {
                    // Not a value of the schema (cut short): shown as written.
                    on_event(StreamEvent::Text(content.clone()));
                }
                Ok(g)
            }
            Err(mut e) => {
                // What was shown of the answer is what is kept.
                if let Some(Message::Assistant { content, .. }) = &mut e.partial {
                    content.clone_from(&stream.answer);
                }
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decls() -> Vec<ToolDecl> {
        vec![ToolDecl {
            name: "bash".into(),
            description: "run".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        }]
    }

    #[test]
    fn the_schema_has_a_branch_per_tool_and_an_answer() {
        let s = calls_schema(&decls());
        let branches = s["oneOf"].as_array().unwrap();
        assert_eq!(branches.len(), 2);
        assert_eq!(branches[0]["properties"]["name"]["const"], "bash");
        assert_eq!(
            branches[0]["properties"]["arguments"]["properties"]["command"]["type"],
            "string"
        );
        assert_eq!(branches[1]["required"], json!(["answer"]));
    }

    fn asked(question: &str, reply: &str) -> bool {
        describes_command(
            &Message::assistant(reply),
            &[Message::system("s"), Message::user(question)],
            &decls(),
        )
    }

    #[test]
    fn a_reply_describes_a_command_only_by_the_rule() {
        // Replies SmolLM2-135M gave to "Run the shell command `ls`.".
        let q = "Run the shell command `ls`.";
        for reply in [
            "Here's a simple shell command:\n\n```bash\nls\n```\n\nThis lists the files.",
            "$ bash ls\n\nI'm ready to assist.",
            "$ sudo bash -c \"ls\"\nThe bash shell is currently running `ls`.",
            "Sure:\n\nls\n",
            "```sh\nls -la\n```",
        ] {
            assert!(asked(q, reply), "{reply:?}");
        }
        for reply in [
            "The `ls` command lists the files of a folder.",
            "```python\nprint(1)\n```",
            "```bash\n```",
            "Cost: $ 5",
            "",
        ] {
            assert!(!asked(q, reply), "{reply:?}");
        }
        // A question about a command is answered, not retried.
        for q in [
            "How do I list files?",
            "what does `ls` do",
            "Explain ls",
            "Show me how to run ls",
        ] {
            assert!(!asked(q, "```bash\nls\n```"), "{q:?}");
        }
        // A call, or no bash declared: nothing to retry.
        let call = Message::Assistant {
            content: "```bash\nls\n```".into(),
            reasoning: vec![],
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }],
        };
        assert!(!describes_command(&call, &[Message::user(q)], &decls()));
        assert!(!describes_command(
            &Message::assistant("```bash\nls\n```"),
            &[Message::user(q)],
            &[]
        ));
    }

    #[test]
    fn the_schema_text_puts_the_name_before_the_arguments() {
        let schema = calls_schema(&decls());
        let text = schema_text(&schema);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, schema);
        let branch = &text[text.find("\"properties\"").unwrap()..];
        assert!(
            branch.find("\"name\"").unwrap() < branch.find("\"arguments\"").unwrap(),
            "{text}"
        );
        assert_eq!(
            append_field("{\"a\":1}".into(), "f", "{\"x\":2}"),
            "{\"a\":1,\"f\":{\"x\":2}}"
        );
        assert_eq!(append_field("{}".into(), "f", "3"), "{\"f\":3}");
    }

    #[test]
    fn a_value_becomes_a_call_or_the_answer() {
        let m = to_reply(
            Message::assistant(r#" {"name":"bash","arguments":{"command":"ls"}} "#),
            &decls(),
        );
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = m
        else {
            panic!()
        };
        assert_eq!(content, "");
        assert_eq!(tool_calls[0].name, "bash");
        assert_eq!(tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert!(tool_calls[0].id.starts_with("call_"));
        assert_eq!(
            to_reply(Message::assistant(r#"{"answer":"hi \"you\""}"#), &decls()),
            Message::assistant("hi \"you\"")
        );
        // An undeclared tool, or text that is no value, stays as written.
        for text in [r#"{"name":"rm","arguments":{}}"#, r#"{"answer":"cut"#] {
            assert_eq!(
                to_reply(Message::assistant(text), &decls()),
                Message::assistant(text)
            );
        }
    }

    #[test]
    fn the_answer_streams_as_it_is_decoded() {
        let text = r#"{ "answer" : "a\"b\n\u00e9\ud83d\ude00 {x}", "k": "no" }"#;
        for piece in [1, 2, 3, 7, 100] {
            let mut s = AnswerStream::default();
            let chars: Vec<char> = text.chars().collect();
            let mut got = String::new();
            for chunk in chars.chunks(piece) {
                got.push_str(&s.feed(&chunk.iter().collect::<String>()));
            }
            assert_eq!(got, "a\"b\né😀 {x}", "{piece}");
        }
        // A call shows nothing, even with an `answer` key in its
        // arguments or `answer` as a value.
        for call in [
            r#"{"name":"bash","arguments":{"answer":"x","command":"ls"}}"#,
            r#"{"name":"answer","arguments":{"command":"ls"}}"#,
        ] {
            assert_eq!(AnswerStream::default().feed(call), "", "{call}");
        }
    }
}
