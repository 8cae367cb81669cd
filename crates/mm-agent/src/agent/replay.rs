//! Showing a saved conversation again, as it went live: questions,
//! answers, reasoning and every call with its result. A child of the
//! agent's module.

use super::*;

impl Agent {
    /// Show the conversation so far to `sink` as its turns went live: each
    /// question (`Event::Question`), the reasoning and the answer of each
    /// reply, each tool call's start and end with the result the session
    /// recorded. A front end that shows a resumed or loaded session has
    /// one path for what it shows, live or not.
    pub fn replay(&self, sink: Arc<dyn Sink>) {
        self.replay_messages(&self.history, sink);
    }

    /// [`Agent::replay`] of `messages` (a conversation of this agent's
    /// tools, saved elsewhere): what a live turn would have shown of it.
    pub fn replay_messages(&self, messages: &[Message], sink: Arc<dyn Sink>) {
        self.replay_conversation(messages, &sink);
        let items = self.checklist();
        if !items.is_empty() {
            sink.event(Event::Plan { items });
        }
    }

    /// The events of `messages` as they went live, a `task` call's
    /// subagent's own (from the session's records) under the call.
    fn replay_conversation(&self, messages: &[Message], sink: &Arc<dyn Sink>) {
        let ctx = ToolContext {
            cwd: self.cwd.clone(),
            sink: sink.clone(),
            cancel: CancellationToken::new(),
            permissions: self.permissions.clone(),
            max_output: self.output_budget(),
            call_id: String::new(),
        };
        // The calls of the last reply, until their results come.
        let mut open: Vec<&ToolCall> = Vec::new();
        let call = |call: &ToolCall, result: Option<(&str, bool)>| {
            self.toolbox
                .replay_start(&call.id, &call.name, &call.arguments, &ctx);
            if let Some(child) = self.children.iter().find(|c| c.call_id == call.id) {
                let sink = crate::subagent::child_sink(sink.clone(), &call.id, &child.agent);
                self.replay_conversation(&child.messages, &sink);
                sink.event(Event::TurnEnd {
                    outcome: TurnOutcome::Done,
                    counters: Counters::default(),
                    prompt_tokens: child.usage.prompt_tokens,
                    completion_tokens: child.usage.completion_tokens,
                    cached_tokens: child.usage.cached_tokens,
                });
            }
            self.toolbox.replay_end(&call.id, &call.name, result, &ctx);
        };
        let close = |open: &mut Vec<&ToolCall>| {
            for c in open.drain(..) {
                call(c, None);
            }
        };
        for message in messages {
            match message {
                Message::System { .. } => {}
                Message::User { content, .. } => {
                    close(&mut open);
                    sink.event(Event::Question {
                        text: without_mode_note(content).to_owned(),
                    });
                }
                Message::Assistant {
                    content,
                    reasoning,
                    tool_calls,
                } => {
                    close(&mut open);
                    // Each reply is a request of its own, as live.
                    sink.event(Event::Status {
                        text: "Thinking".into(),
                    });
                    let thought: Vec<&str> = reasoning
                        .iter()
                        .map(|r| r.text.as_str())
                        .filter(|t| !t.is_empty())
                        .collect();
                    if !thought.is_empty() {
                        sink.event(Event::Reasoning {
                            text: thought.join("\n"),
                        });
                    }
                    if !content.is_empty() {
                        sink.event(Event::Text {
                            text: content.clone(),
                        });
                    }
                    open.extend(tool_calls);
                }
                Message::Tool {
                    call_id,
                    content,
                    failed,
                    ..
                } => {
                    if let Some(at) = open.iter().position(|c| &c.id == call_id) {
                        call(open.remove(at), Some((content, *failed)));
                    }
                }
            }
        }
        close(&mut open);
    }
}
