//! `--output-schema`'s one retry: a request of its own after the turn,
//! with the schema as the provider's structured output.

use std::sync::Arc;

use mm_engine::{GenerateError, Message, StreamEvent, Usage};
use mm_ui::{Event, Sink};
use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::schema::OutputSchema;

impl Agent {
    /// Tell the model why its answer does not fit `schema` and ask once
    /// more for the answer alone: one request, the schema sent as the
    /// provider's structured output, no tool call allowed. The exchange
    /// goes into the history and the session file like a turn's. Returns
    /// the new answer's text and the request's tokens, or why the request
    /// failed.
    pub async fn answer_in_schema(
        &mut self,
        schema: &OutputSchema,
        why: &str,
        sink: Arc<dyn Sink>,
        cancel: CancellationToken,
    ) -> Result<(String, Usage), String> {
        self.history.push(Message::user(schema.retry_text(why)));
        let mut messages = Vec::with_capacity(self.history.len() + 1);
        messages.push(Message::system(self.system.clone()));
        messages.extend_from_slice(&self.history);
        let engine = self.engine.with_output_schema(schema.schema().clone());
        sink.event(Event::Status {
            text: "Thinking".into(),
        });
        let events = sink.clone();
        let mut on_event = move |event: StreamEvent| match event {
            StreamEvent::Text(text) => events.event(Event::Text { text }),
            StreamEvent::Reasoning(text) => events.event(Event::Reasoning { text }),
            StreamEvent::Notice(text) => events.event(Event::Notice { text }),
            _ => {}
        };
        let generated = engine
            .generate(&messages, &self.decls, &mut on_event, &cancel)
            .await;
        let mut usage = Usage::default();
        let answer = match generated {
            Ok(generation) => {
                if let Some(u) = generation.usage {
                    self.take_usage(u, &mut usage, &sink);
                }
                let answer = answer_text(generation.message);
                self.last_answer.clone_from(&answer);
                self.history.push(Message::assistant(answer.clone()));
                Ok((answer, usage))
            }
            Err(GenerateError { error, .. }) => {
                self.history.pop();
                Err(error.to_string())
            }
        };
        self.save(&sink);
        answer
    }
}

/// The answer a structured reply holds: its text, or the `answer` of the
/// forced [`mm_engine::ANSWER_TOOL`] call (Anthropic). Other calls are
/// dropped: none may run, and a call without a result would break the
/// history.
fn answer_text(message: Message) -> String {
    let Message::Assistant {
        content,
        tool_calls,
        ..
    } = message
    else {
        return String::new();
    };
    let forced = tool_calls
        .iter()
        .find(|c| c.name == mm_engine::ANSWER_TOOL)
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c.arguments).ok())
        .and_then(|mut v| v.get_mut("answer").map(serde_json::Value::take));
    match forced {
        Some(value) if content.trim().is_empty() => value.to_string(),
        _ => content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_engine::ToolCall;

    #[test]
    fn the_forced_tool_call_is_the_answer() {
        let reply = Message::Assistant {
            content: String::new(),
            reasoning: Vec::new(),
            tool_calls: vec![ToolCall {
                id: "t".into(),
                name: mm_engine::ANSWER_TOOL.into(),
                arguments: r#"{"answer": {"count": 2}}"#.into(),
            }],
        };
        assert_eq!(answer_text(reply), r#"{"count":2}"#);
        assert_eq!(answer_text(Message::assistant("{\"a\":1}")), "{\"a\":1}");
    }
}
