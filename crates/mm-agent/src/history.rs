//! Keeping a history valid for every provider: each tool call is followed
//! by its result (docs/design.md#every-call-gets-a-result).

use mm_engine::Message;

use crate::NOT_RUN;

/// `messages` with a not-run result added after every tool call that has
/// none (a process killed mid-tool leaves such calls in its session file).
/// The results go right after the call's existing results, before the next
/// message, so the history stays in the order providers require.
pub fn close_open_calls(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut open: Vec<(String, String)> = Vec::new();
    let flush = |out: &mut Vec<Message>, open: &mut Vec<(String, String)>| {
        for (id, name) in open.drain(..) {
            out.push(Message::tool_result(id, name, NOT_RUN, true));
        }
    };
    for message in messages {
        match message {
            Message::Tool { call_id, .. } => {
                open.retain(|(id, _)| id != call_id);
            }
            _ => flush(&mut out, &mut open),
        }
        out.push(message.clone());
        if let Message::Assistant { tool_calls, .. } = message {
            open.extend(tool_calls.iter().map(|c| (c.id.clone(), c.name.clone())));
        }
    }
    flush(&mut out, &mut open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_engine::ToolCall;

    fn calls(ids: &[&str]) -> Message {
        Message::Assistant {
            content: String::new(),
            reasoning: Vec::new(),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: id.to_string(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_call_killed_mid_tool_gets_the_not_run_result() {
        let history = vec![Message::user("q"), calls(&["a"])];
        let fixed = close_open_calls(&history);
        assert_eq!(fixed.len(), 3);
        assert_eq!(fixed[2], Message::tool_result("a", "bash", NOT_RUN, true));
    }

    #[test]
    fn missing_results_go_before_the_next_message() {
        let history = vec![
            Message::user("q"),
            calls(&["a", "b"]),
            Message::tool("a", "bash", "ran"),
            Message::user("next"),
        ];
        let fixed = close_open_calls(&history);
        assert_eq!(
            fixed,
            vec![
                Message::user("q"),
                calls(&["a", "b"]),
                Message::tool("a", "bash", "ran"),
                Message::tool_result("b", "bash", NOT_RUN, true),
                Message::user("next"),
            ]
        );
    }

    #[test]
    fn a_whole_history_is_left_alone() {
        let history = vec![
            Message::user("q"),
            calls(&["a"]),
            Message::tool("a", "bash", "ok"),
            Message::assistant("done"),
        ];
        assert_eq!(close_open_calls(&history), history);
    }
}
