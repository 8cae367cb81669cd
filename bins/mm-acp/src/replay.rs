//! `session/load`: the saved history replayed as the updates the editor
//! would have seen live (docs/reference/acp.md): questions as
//! `user_message_chunk`, reasoning as `agent_thought_chunk`, answers as
//! `agent_message_chunk`, each tool call as one `tool_call` and its final
//! `tool_call_update`.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentChunk, SessionUpdate, ToolCall, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use mm_agent::Message;
use serde_json::Value;

use crate::prompt::absolute;
use crate::sink::{IdBook, message_chunk, text_block, text_content, thought_chunk};

/// The updates that replay `history`; tool call ids are claimed in `ids` so
/// that later turns never reuse one.
pub fn updates(history: &[Message], cwd: &Path, ids: &mut IdBook) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    // Engine call id → the ACP id it was replayed under.
    let mut shown: HashMap<String, String> = HashMap::new();
    for message in history {
        match message {
            Message::System { .. } => {}
            Message::User { content } => {
                out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                    text_block(content),
                )));
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let thought: String = reasoning.iter().map(|r| r.text.as_str()).collect();
                if !thought.is_empty() {
                    out.push(thought_chunk(&thought));
                }
                if !content.is_empty() {
                    out.push(message_chunk(content));
                }
                for call in tool_calls {
                    let acp_id = ids.claim(&call.id);
                    shown.insert(call.id.clone(), acp_id.clone());
                    out.push(SessionUpdate::ToolCall(tool_call(
                        &acp_id,
                        &call.name,
                        &call.arguments,
                        cwd,
                    )));
                }
            }
            Message::Tool {
                call_id,
                content,
                failed,
                ..
            } => {
                let Some(acp_id) = shown.remove(call_id) else {
                    continue;
                };
                // The status the tool reported when it ran, never a guess
                // from the text.
                let status = if *failed {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    acp_id,
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(vec![text_content(content)]),
                )));
            }
        }
    }
    // A call without a result (a file cut short) is closed too.
    let mut left: Vec<String> = shown.into_values().collect();
    left.sort();
    for acp_id in left {
        out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            acp_id,
            ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
        )));
    }
    out
}

/// A saved call as the editor shows it: the title and kind its tool would
/// have given it live, its arguments and the file it touched.
fn tool_call(acp_id: &str, name: &str, arguments: &str, cwd: &Path) -> ToolCall {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::String(arguments.into()));
    let field = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let path = field("path");
    let (title, kind) = match name {
        "bash" => (field("command"), ToolKind::Execute),
        "read_file" => (path.clone(), ToolKind::Read),
        "write_file" | "edit_file" => (path.clone(), ToolKind::Edit),
        "read_skill" => (field("name"), ToolKind::Read),
        "lsp" => {
            let action = field("action").unwrap_or_default();
            let kind = if action == "rename" {
                ToolKind::Edit
            } else {
                ToolKind::Read
            };
            let title = [Some(action), path.clone(), field("symbol")]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            (Some(title), kind)
        }
        _ => (None, ToolKind::Other),
    };
    let locations = match (name, &path) {
        ("bash", _) | (_, None) => Vec::new(),
        (_, Some(p)) => vec![ToolCallLocation::new(absolute(cwd, p))],
    };
    ToolCall::new(
        acp_id.to_string(),
        title
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| name.to_string()),
    )
    .kind(kind)
    .raw_input(args)
    .locations(locations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_agent::ToolCall as EngineCall;
    use serde_json::json;

    #[test]
    fn a_history_replays_in_order_with_closed_tool_calls() {
        let history = vec![
            Message::system("sys"),
            Message::user("list files"),
            Message::Assistant {
                content: "Let me look.".into(),
                reasoning: Vec::new(),
                tool_calls: vec![EngineCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            },
            Message::tool("c1", "bash", "a.txt\n"),
            Message::Assistant {
                content: String::new(),
                reasoning: Vec::new(),
                tool_calls: vec![EngineCall {
                    id: "c2".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a.txt"}"#.into(),
                }],
            },
            Message::tool_result("c2", "read_file", "[command rejected by the user]", true),
            Message::Assistant {
                content: String::new(),
                reasoning: Vec::new(),
                tool_calls: vec![EngineCall {
                    id: "c3".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"cat log"}"#.into(),
                }],
            },
            // A file whose last line reads like an error is still a success.
            Message::tool("c3", "bash", "ok\n[error: 30s timeout exceeded]\n"),
            Message::assistant("There is a.txt."),
        ];
        let mut ids = IdBook::default();
        let got: Vec<Value> = updates(&history, Path::new("/p"), &mut ids)
            .into_iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let text = |kind: &str, t: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": t}});
        assert_eq!(
            got,
            vec![
                text("user_message_chunk", "list files"),
                text("agent_message_chunk", "Let me look."),
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls", "kind": "execute",
                       "rawInput": {"command": "ls"}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "a.txt\n"}}]}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "a.txt", "kind": "read",
                       "rawInput": {"path": "a.txt"}, "locations": [{"path": "/p/a.txt"}]}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "failed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "[command rejected by the user]"}}]}),
                json!({"sessionUpdate": "tool_call", "toolCallId": "c3", "title": "cat log", "kind": "execute",
                       "rawInput": {"command": "cat log"}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c3", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "ok\n[error: 30s timeout exceeded]\n"}}]}),
                text("agent_message_chunk", "There is a.txt."),
            ]
        );
        // The ids are taken: a live call `c1` later gets a fresh one.
        assert_eq!(ids.claim("c1"), "c1-2");
    }
}
