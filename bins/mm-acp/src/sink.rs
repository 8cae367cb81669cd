//! The Sink of one ACP turn: it turns the agent's events into
//! `session/update` notifications and its permission questions into
//! `session/request_permission` requests. This is the only place that
//! knows both the events and the protocol (docs/architecture.md).
//!
//! Rules it keeps (docs/reference/acp.md): one `tool_call` per call, then only
//! `tool_call_update`s; every call finished before the prompt is answered;
//! nothing at all once [`AcpSink::finish`] has run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, Diff, ImageContent, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification,
    SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use futures::future::BoxFuture;
use mm_ui::{Decision, Event, FileChange, PlanReview, Sink, TokenCounts, ToolInfo, ToolStatus};

/// Option ids of the permission dialog.
pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT_ONCE: &str = "reject_once";

/// Where a sink's updates go. A trait so the mapping can be tested without
/// a connection.
pub trait Outlet: Send + Sync {
    fn update(&self, session: &SessionId, update: SessionUpdate);
    fn ask(&self, request: RequestPermissionRequest) -> BoxFuture<'static, Decision>;
}

/// The real outlet: the ACP connection to the editor.
pub struct Connection(pub ConnectionTo<Client>);

impl Outlet for Connection {
    fn update(&self, session: &SessionId, update: SessionUpdate) {
        if let Err(e) = self
            .0
            .send_notification(SessionNotification::new(session.clone(), update))
        {
            tracing::debug!("session/update not sent: {e}");
        }
    }

    fn ask(&self, request: RequestPermissionRequest) -> BoxFuture<'static, Decision> {
        let sent = self.0.send_request(request);
        Box::pin(async move {
            match sent.block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => {
                        decision_for(&selected.option_id.0)
                    }
                    RequestPermissionOutcome::Cancelled => Decision::Cancelled,
                    // A future outcome we cannot read: do not run the tool.
                    _ => Decision::Reject,
                },
                Err(e) => {
                    // The editor could not answer: safer not to run the tool.
                    tracing::warn!("session/request_permission failed: {e}");
                    Decision::Reject
                }
            }
        })
    }
}

/// The decision an option id stands for; an unknown id is a rejection.
pub fn decision_for(option_id: &str) -> Decision {
    match option_id {
        ALLOW_ONCE => Decision::AllowOnce,
        ALLOW_ALWAYS => Decision::AllowAlways,
        _ => Decision::Reject,
    }
}

/// The three options every permission request offers.
pub fn permission_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            "Allow always",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
    ]
}

/// The options of the question whether to carry out a plan: go on asking
/// first (`ask`), go on without asking (`allow`), or keep planning.
pub fn plan_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(
            ALLOW_ONCE,
            "Yes, and ask before commands and edits",
            PermissionOptionKind::AllowOnce,
        ),
        PermissionOption::new(
            ALLOW_ALWAYS,
            "Yes, without asking",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(
            REJECT_ONCE,
            "No, keep planning",
            PermissionOptionKind::RejectOnce,
        ),
    ]
}

/// The `plan` update of the model's checklist: each item at medium
/// priority (mm's checklist has none).
pub fn plan_update(items: &[mm_ui::PlanItem]) -> SessionUpdate {
    let entries = items
        .iter()
        .map(|item| {
            let status = match item.status {
                mm_ui::PlanStatus::Pending => PlanEntryStatus::Pending,
                mm_ui::PlanStatus::InProgress => PlanEntryStatus::InProgress,
                mm_ui::PlanStatus::Completed => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.text.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// Tool call ids already shown in a session. The engine's ids are unique per
/// session only as far as the model keeps them so; the editor must never see
/// a second `tool_call` with the same id.
#[derive(Debug, Default)]
pub struct IdBook {
    used: HashSet<String>,
}

impl IdBook {
    /// A fresh ACP id for engine call `id`: the id itself the first time.
    pub fn claim(&mut self, id: &str) -> String {
        let mut candidate = id.to_string();
        let mut n = 2;
        while self.used.contains(&candidate) {
            candidate = format!("{id}-{n}");
            n += 1;
        }
        self.used.insert(candidate.clone());
        candidate
    }
}

/// One call the editor has been told about.
struct Call {
    acp_id: String,
    info: ToolInfo,
    running: bool,
    done: bool,
    /// A `task` call's subagent's steps so far, one line each: the call's
    /// content while it runs.
    steps: Vec<String>,
    /// Pictures the call returned, shown with its result.
    images: Vec<mm_agent::Image>,
}

struct State {
    closed: bool,
    /// Calls of this turn, in order; engine id → index of its latest call.
    calls: Vec<Call>,
    by_engine_id: HashMap<String, usize>,
}

/// The Sink of one turn of one session.
pub struct AcpSink {
    outlet: Arc<dyn Outlet>,
    session: SessionId,
    ids: Arc<Mutex<IdBook>>,
    state: Mutex<State>,
}

impl AcpSink {
    pub fn new(outlet: Arc<dyn Outlet>, session: SessionId, ids: Arc<Mutex<IdBook>>) -> AcpSink {
        AcpSink {
            outlet,
            session,
            ids,
            state: Mutex::new(State {
                closed: false,
                calls: Vec::new(),
                by_engine_id: HashMap::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, state: &State, update: SessionUpdate) {
        if !state.closed {
            self.outlet.update(&self.session, update);
        }
    }

    /// Send a line of text as part of the answer (notices, errors, command
    /// results).
    pub fn message(&self, text: &str) {
        let state = self.state();
        self.send(&state, message_chunk(text));
    }

    /// End the turn: every call still open is marked `failed`, then the
    /// sink goes silent for good (docs/design.md#cancelling-a-prompt).
    pub fn finish(&self) {
        let mut state = self.state();
        if state.closed {
            return;
        }
        let open: Vec<(String, bool)> = state
            .calls
            .iter()
            .filter(|c| !c.done)
            .map(|c| (c.acp_id.clone(), c.running))
            .collect();
        for (acp_id, running) in open {
            let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Failed);
            if !running {
                fields = fields.content(vec![text_content(mm_agent::NOT_RUN)]);
            }
            self.send(
                &state,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(acp_id, fields)),
            );
        }
        for call in &mut state.calls {
            call.done = true;
        }
        state.closed = true;
    }

    fn tool_start(&self, info: ToolInfo) {
        let mut state = self.state();
        if state.closed {
            return;
        }
        let acp_id = self
            .ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .claim(&info.id);
        let call = tool_call(&acp_id, &info);
        self.send(&state, SessionUpdate::ToolCall(call));
        let index = state.calls.len();
        state.by_engine_id.insert(info.id.clone(), index);
        state.calls.push(Call {
            acp_id,
            info,
            running: false,
            done: false,
            steps: Vec::new(),
            images: Vec::new(),
        });
    }

    /// A subagent's event: its steps (tool calls, failures, its end) become
    /// the content of its `task` call, a `think` call, as they come.
    fn child(&self, parent: &str, event: &Event) {
        let step = match event {
            Event::ToolStart { info } => format!("{}: {}", info.tool, info.title),
            Event::ToolEnd {
                status: ToolStatus::Failed,
                output,
                ..
            } => format!("✗ {}", output.lines().next().unwrap_or_default()),
            Event::Notice { text } | Event::Error { text } => text.clone(),
            Event::TurnEnd {
                prompt_tokens,
                completion_tokens,
                ..
            } => format!(
                "done · in {} · out {}",
                mm_ui::short_count(*prompt_tokens),
                mm_ui::short_count(*completion_tokens)
            ),
            _ => return,
        };
        let mut state = self.state();
        let Some(&index) = state.by_engine_id.get(parent) else {
            return;
        };
        if state.calls[index].done {
            return;
        }
        state.calls[index].steps.push(step);
        let content = vec![text_content(&state.calls[index].steps.join("\n"))];
        let update = ToolCallUpdate::new(
            state.calls[index].acp_id.clone(),
            ToolCallUpdateFields::new().content(content),
        );
        self.send(&state, SessionUpdate::ToolCallUpdate(update));
    }

    fn tool_running(&self, id: &str) {
        let mut state = self.state();
        let Some(&index) = state.by_engine_id.get(id) else {
            return;
        };
        if state.calls[index].done || state.calls[index].running {
            return;
        }
        state.calls[index].running = true;
        let update = ToolCallUpdate::new(
            state.calls[index].acp_id.clone(),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        );
        self.send(&state, SessionUpdate::ToolCallUpdate(update));
    }

    fn tool_end(&self, id: &str, status: ToolStatus, output: &str) {
        let mut state = self.state();
        let Some(&index) = state.by_engine_id.get(id) else {
            return;
        };
        if state.calls[index].done {
            return;
        }
        state.calls[index].done = true;
        let call = &state.calls[index];
        let (status, content) = match status {
            ToolStatus::Completed => {
                let mut content: Vec<ToolCallContent> = call
                    .info
                    .change
                    .as_ref()
                    .map(change_content)
                    .into_iter()
                    .collect();
                content.push(text_content(output));
                content.extend(call.images.iter().map(|i| {
                    ToolCallContent::from(ContentBlock::Image(ImageContent::new(
                        i.data.clone(),
                        i.media_type.clone(),
                    )))
                }));
                (ToolCallStatus::Completed, content)
            }
            // A call a saved session has no result for ends with no text.
            ToolStatus::Failed if output.is_empty() => (ToolCallStatus::Failed, Vec::new()),
            ToolStatus::Failed => (ToolCallStatus::Failed, vec![text_content(output)]),
        };
        let mut fields = ToolCallUpdateFields::new().status(status);
        if !content.is_empty() {
            fields = fields.content(content);
        }
        let update = ToolCallUpdate::new(call.acp_id.clone(), fields);
        self.send(&state, SessionUpdate::ToolCallUpdate(update));
    }

    /// The ACP id the editor knows engine call `id` by, if it was shown.
    fn acp_id(&self, id: &str) -> Option<String> {
        let state = self.state();
        if state.closed {
            return None;
        }
        state
            .by_engine_id
            .get(id)
            .map(|&i| state.calls[i].acp_id.clone())
    }
}

impl Sink for AcpSink {
    fn event(&self, event: Event) {
        match event {
            Event::Question { text } => {
                let state = self.state();
                self.send(
                    &state,
                    SessionUpdate::UserMessageChunk(ContentChunk::new(text_block(&text))),
                );
            }
            Event::Text { text } => {
                let state = self.state();
                self.send(&state, message_chunk(&text));
            }
            Event::Reasoning { text } => {
                let state = self.state();
                self.send(&state, thought_chunk(&text));
            }
            Event::ToolStart { info } => self.tool_start(info),
            Event::ToolRunning { id } => self.tool_running(&id),
            Event::ToolImages { id, images } => {
                let mut state = self.state();
                if let Some(&index) = state.by_engine_id.get(&id) {
                    state.calls[index].images = images;
                }
            }
            Event::ToolEnd {
                id, status, output, ..
            } => self.tool_end(&id, status, &output),
            Event::Notice { text } => self.message(&format!("\n\n{text}\n\n")),
            Event::Error { text } => self.message(&format!("\n\nerror: {text}\n\n")),
            Event::Tokens {
                session,
                context,
                window,
            } => {
                let state = self.state();
                self.send(&state, usage_update(session, context, window));
            }
            // Spinner texts and the recap are for terminals; the prompt's
            // answer carries the stop reason.
            // The editor shows what it attached itself.
            // A command's output goes to the editor whole, with its end.
            Event::Plan { items } => {
                let state = self.state();
                self.send(&state, plan_update(&items));
            }
            Event::Mode { mode } => {
                let state = self.state();
                self.send(
                    &state,
                    SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.name())),
                );
            }
            Event::Child { parent, event, .. } => self.child(&parent, &event),
            Event::Status { .. }
            | Event::TurnEnd { .. }
            | Event::Attached { .. }
            | Event::ToolOutput { .. } => {}
        }
    }

    fn review_plan<'a>(&'a self, plan: &'a str) -> BoxFuture<'a, PlanReview> {
        Box::pin(async move {
            // The call that presents the plan is the one running now.
            let running = {
                let state = self.state();
                if state.closed {
                    return PlanReview::Cancelled;
                }
                state
                    .calls
                    .iter()
                    .rev()
                    .find(|c| c.running && !c.done)
                    .map(|c| c.acp_id.clone())
            };
            let Some(acp_id) = running else {
                return PlanReview::Cancelled;
            };
            let call = ToolCallUpdate::new(
                acp_id,
                ToolCallUpdateFields::new()
                    .title("Carry out this plan?")
                    .kind(ToolKind::SwitchMode)
                    .content(vec![text_content(plan)]),
            );
            let request = RequestPermissionRequest::new(self.session.clone(), call, plan_options());
            match self.outlet.ask(request).await {
                Decision::AllowOnce => PlanReview::Proceed(mm_ui::AgentMode::Ask),
                Decision::AllowAlways => PlanReview::Proceed(mm_ui::AgentMode::Allow),
                Decision::Reject => PlanReview::Stay(None),
                Decision::Cancelled => PlanReview::Cancelled,
            }
        })
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let Some(acp_id) = self.acp_id(&info.id) else {
                return Decision::Cancelled;
            };
            let call = ToolCallUpdate::from(tool_call(&acp_id, info));
            let request =
                RequestPermissionRequest::new(self.session.clone(), call, permission_options());
            self.outlet.ask(request).await
        })
    }
}

/// An `agent_message_chunk` of `text`.
pub fn message_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text)))
}

/// An `agent_thought_chunk` of `text`.
pub fn thought_chunk(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text_block(text)))
}

pub fn text_block(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

pub fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(text_block(text))
}

/// The ACP kind of an mm tool kind.
pub fn kind(kind: mm_ui::ToolKind) -> ToolKind {
    match kind {
        mm_ui::ToolKind::Read => ToolKind::Read,
        mm_ui::ToolKind::Edit => ToolKind::Edit,
        mm_ui::ToolKind::Execute => ToolKind::Execute,
        mm_ui::ToolKind::Search => ToolKind::Search,
        mm_ui::ToolKind::Think => ToolKind::Think,
        mm_ui::ToolKind::Fetch => ToolKind::Fetch,
        mm_ui::ToolKind::Other => ToolKind::Other,
    }
}

/// What an edit changes, as the editor shows it: the whole file before and
/// after, or only the path and a line count for files over 1 MiB
/// (docs/design.md#large-files-in-previews).
pub fn change_content(change: &FileChange) -> ToolCallContent {
    match (&change.new_text, change.too_large) {
        (Some(new_text), false) => ToolCallContent::Diff(
            Diff::new(change.path.clone(), new_text.clone()).old_text(change.old_text.clone()),
        ),
        _ => text_content(&format!(
            "{}: {} lines (too large to show the whole file)",
            change.path, change.lines
        )),
    }
}

/// The one `tool_call` announcing a call (its status is pending, the
/// protocol's default, so it is not written).
pub fn tool_call(acp_id: &str, info: &ToolInfo) -> ToolCall {
    let mut call = ToolCall::new(acp_id.to_string(), info.title.clone())
        .kind(kind(info.kind))
        .raw_input(info.input.clone())
        .locations(
            info.locations
                .iter()
                .map(|p| ToolCallLocation::new(p.clone()))
                .collect(),
        );
    if let Some(change) = &info.change {
        call = call.content(vec![change_content(change)]);
    }
    call
}

/// How full the model's window is (`used` of `size` tokens, what an
/// editor shows as the context gauge), with the session's token counts, the
/// cached part of the input included, under `_meta.mm`.
fn usage_update(session: TokenCounts, context: u64, window: u64) -> SessionUpdate {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "mm".into(),
        serde_json::json!({
            "inputTokens": session.prompt,
            "outputTokens": session.completion,
            "cachedTokens": session.cached,
        }),
    );
    SessionUpdate::UsageUpdate(UsageUpdate::new(context, window).meta(Some(meta)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Records what would have gone to the editor, as JSON.
    #[derive(Default)]
    struct Recorder {
        sent: Mutex<Vec<serde_json::Value>>,
        asked: Mutex<Vec<serde_json::Value>>,
        answer: Mutex<Option<Decision>>,
    }

    impl Outlet for Recorder {
        fn update(&self, _session: &SessionId, update: SessionUpdate) {
            self.sent
                .lock()
                .unwrap()
                .push(serde_json::to_value(update).unwrap());
        }
        fn ask(&self, request: RequestPermissionRequest) -> BoxFuture<'static, Decision> {
            self.asked
                .lock()
                .unwrap()
                .push(serde_json::to_value(request).unwrap());
            let d = self.answer.lock().unwrap().unwrap_or(Decision::AllowOnce);
            Box::pin(async move { d })
        }
    }

    fn sink(rec: &Arc<Recorder>) -> AcpSink {
        AcpSink::new(
            rec.clone(),
            SessionId::new("s1"),
            Arc::new(Mutex::new(IdBook::default())),
        )
    }

    fn bash_info(id: &str) -> ToolInfo {
        ToolInfo {
            id: id.into(),
            tool: "bash".into(),
            family: mm_ui::ToolFamily::Command,
            echoes: true,
            title: "ls -la".into(),
            kind: mm_ui::ToolKind::Execute,
            input: json!({"command": "ls -la"}),
            locations: vec![],
            change: None,
        }
    }

    fn sent(rec: &Recorder) -> Vec<serde_json::Value> {
        rec.sent.lock().unwrap().clone()
    }

    #[test]
    fn text_and_reasoning_become_chunks() {
        let rec = Arc::new(Recorder::default());
        let s = sink(&rec);
        s.event(Event::Reasoning { text: "hm".into() });
        s.event(Event::Text { text: "hi".into() });
        s.event(Event::Status {
            text: "Thinking".into(),
        });
        assert_eq!(
            sent(&rec),
            vec![
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}),
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
            ]
        );
    }

    #[test]
    fn a_tool_call_is_announced_once_then_updated() {
        let rec = Arc::new(Recorder::default());
        let s = sink(&rec);
        s.event(Event::ToolStart {
            info: bash_info("c1"),
        });
        s.event(Event::ToolRunning { id: "c1".into() });
        s.event(Event::ToolRunning { id: "c1".into() });
        s.event(Event::ToolEnd {
            id: "c1".into(),
            tool: "bash".into(),
            status: ToolStatus::Completed,
            output: "total 0".into(),
            preview: vec![],
        });
        s.finish();
        assert_eq!(
            sent(&rec),
            vec![
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls -la",
                       "kind": "execute", "rawInput": {"command": "ls -la"}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "total 0"}}]}),
            ]
        );
    }

    #[test]
    fn a_reused_engine_id_gets_a_fresh_acp_id() {
        let rec = Arc::new(Recorder::default());
        let ids = Arc::new(Mutex::new(IdBook::default()));
        for _ in 0..2 {
            let s = AcpSink::new(rec.clone(), SessionId::new("s"), ids.clone());
            s.event(Event::ToolStart {
                info: bash_info("c1"),
            });
            s.finish();
        }
        let calls: Vec<_> = sent(&rec)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "tool_call")
            .map(|u| u["toolCallId"].clone())
            .collect();
        assert_eq!(calls, vec![json!("c1"), json!("c1-2")]);
    }

    #[test]
    fn finish_fails_open_calls_and_silences_the_sink() {
        let rec = Arc::new(Recorder::default());
        let s = sink(&rec);
        s.event(Event::ToolStart {
            info: bash_info("a"),
        });
        s.event(Event::ToolStart {
            info: bash_info("b"),
        });
        s.event(Event::ToolRunning { id: "b".into() });
        s.finish();
        s.event(Event::Text {
            text: "late".into(),
        });
        s.event(Event::ToolEnd {
            id: "b".into(),
            tool: "bash".into(),
            status: ToolStatus::Completed,
            output: "x".into(),
            preview: vec![],
        });
        let all = sent(&rec);
        assert_eq!(all.len(), 5, "{all:#?}");
        assert_eq!(
            all[3],
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "a", "status": "failed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "[not run: the turn was stopped]"}}]})
        );
        assert_eq!(
            all[4],
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "b", "status": "failed"})
        );
    }

    #[test]
    fn edits_carry_the_whole_file_diff_in_the_call_and_the_end() {
        let rec = Arc::new(Recorder::default());
        let s = sink(&rec);
        let info = ToolInfo {
            id: "e1".into(),
            tool: "edit_file".into(),
            family: mm_ui::ToolFamily::File,
            echoes: false,
            title: "a.txt".into(),
            kind: mm_ui::ToolKind::Edit,
            input: json!({"path": "a.txt"}),
            locations: vec!["/p/a.txt".into()],
            change: Some(FileChange {
                path: "/p/a.txt".into(),
                old_text: Some("hello\n".into()),
                new_text: Some("bye\n".into()),
                diff: String::new(),
                too_large: false,
                lines: 1,
            }),
        };
        s.event(Event::ToolStart { info });
        s.event(Event::ToolEnd {
            id: "e1".into(),
            tool: "edit_file".into(),
            status: ToolStatus::Completed,
            output: "edited a.txt".into(),
            preview: vec![],
        });
        let diff =
            json!({"type": "diff", "path": "/p/a.txt", "oldText": "hello\n", "newText": "bye\n"});
        let all = sent(&rec);
        assert_eq!(all[0]["content"], json!([diff.clone()]));
        assert_eq!(all[0]["locations"], json!([{"path": "/p/a.txt"}]));
        assert_eq!(all[0]["kind"], "edit");
        assert_eq!(
            all[1]["content"],
            json!([diff, {"type": "content", "content": {"type": "text", "text": "edited a.txt"}}])
        );
    }

    #[test]
    fn large_files_show_a_line_count_instead_of_the_text() {
        let change = FileChange {
            path: "/p/big.log".into(),
            old_text: None,
            new_text: None,
            diff: String::new(),
            too_large: true,
            lines: 12345,
        };
        assert_eq!(
            serde_json::to_value(change_content(&change)).unwrap(),
            json!({"type": "content", "content": {"type": "text",
                   "text": "/p/big.log: 12345 lines (too large to show the whole file)"}})
        );
    }

    #[tokio::test]
    async fn permission_asks_with_the_three_options_and_maps_the_answer() {
        let rec = Arc::new(Recorder::default());
        *rec.answer.lock().unwrap() = Some(Decision::AllowAlways);
        let s = sink(&rec);
        let info = bash_info("c9");
        s.event(Event::ToolStart { info: info.clone() });
        assert_eq!(s.permission(&info).await, Decision::AllowAlways);
        let asked = rec.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0]["sessionId"], "s1");
        assert_eq!(asked[0]["toolCall"]["toolCallId"], "c9");
        let ids: Vec<_> = asked[0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["optionId"].clone(), o["kind"].clone()))
            .collect();
        assert_eq!(
            ids,
            vec![
                (json!("allow_once"), json!("allow_once")),
                (json!("allow_always"), json!("allow_always")),
                (json!("reject_once"), json!("reject_once")),
            ]
        );
        assert_eq!(decision_for("reject_once"), Decision::Reject);
        assert_eq!(decision_for("bogus"), Decision::Reject);
        assert_eq!(decision_for("allow_once"), Decision::AllowOnce);
    }
}
