//! `--output-format json`: one JSON object per line on stdout for every
//! event of the turn, for scripts and CI (docs/reference/json.md). Every
//! line has a `type`:
//!
//! - first, `session` `{session_id, model, cwd, version}`: the session the
//!   turn is recorded in (`session_id` is null when sessions are off), so a
//!   script can `--resume` it;
//! - `attached` `{path, size}`: what an `@` mention attached;
//! - `text`, `reasoning`, `status` `{"text"}`; `notice`, `error` `{"text"}`;
//! - `tool_start` `{"info": {id, tool, family, title, kind, input,
//!   locations, change}}`, `tool_running` `{"id"}`, `tool_end` `{id, tool, status:
//!   "completed"|"failed", output, preview}`;
//! - `permission` `{id, tool, decision: "allow_once"|"allow_always"|
//!   "reject"|"cancelled"}`: how a permission question was answered (asked
//!   on the terminal when there is one, else rejected);
//! - at the end of the turn, `tokens` `{session: {prompt, completion,
//!   cached}, context, window}` (the session's counts and how full the
//!   model's window is), `usage` `{prompt_tokens, completion_tokens,
//!   cached_tokens}` (`cached_tokens`: the part of `prompt_tokens` the
//!   provider read from its prompt cache, 0 when it does not say), then,
//!   last, `turn_end` `{outcome: "done"|"cancelled"|"max_turns"|"failed",
//!   error?: "why it failed" (only with "failed"), counters: {commands,
//!   file_ops, skills, lsp_calls}, prompt_tokens, completion_tokens,
//!   cached_tokens}`.
//!
//! `outcome` is always a string, so a script can compare it directly.
//!
//! A subagent's events (a `task` call's child) are the same lines with
//! `parent` (the `task` call's id) and `agent` added; its end is
//! `subagent_end` `{outcome, error?, counters, prompt_tokens,
//! completion_tokens, cached_tokens, parent, agent}`.
//!
//! A command run as the question (`-p /undo`) prints one line instead:
//! `command` `{name, ok: true|false, text}`.

use std::io::Write;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mm_agent::Agent;
use mm_ui::{Decision, Event, Sink, ToolInfo, TurnOutcome, sanitize};

use crate::keys::Controls;
use crate::term::permission_prompt;

/// Writes each event as one line of JSON.
pub struct JsonSink {
    out: Mutex<Box<dyn Write + Send>>,
    controls: Arc<Controls>,
}

impl JsonSink {
    /// A sink writing to this process's stdout.
    pub fn new(controls: Arc<Controls>) -> JsonSink {
        JsonSink::with_writer(Box::new(std::io::stdout()), controls)
    }

    pub fn with_writer(out: Box<dyn Write + Send>, controls: Arc<Controls>) -> JsonSink {
        JsonSink {
            out: Mutex::new(out),
            controls,
        }
    }

    /// Write one JSON value as a line.
    pub fn line(&self, value: &serde_json::Value) {
        self.write(value.to_string());
    }

    fn write(&self, mut line: String) {
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }

    async fn ask(&self, info: &ToolInfo) -> Decision {
        let decision = if self.controls.can_ask() {
            let rx = self.controls.ask();
            let mut err = std::io::stderr();
            // The prompt is for a person on a terminal: sanitised.
            let (tool, title) = (sanitize(&info.tool), sanitize(&info.title));
            let _ = write!(err, "{tool}: {title}\r\n{}", permission_prompt());
            let _ = err.flush();
            let d = rx.await.unwrap_or(Decision::Cancelled);
            let _ = write!(err, "\r\n");
            d
        } else {
            Decision::Reject
        };
        self.line(&serde_json::json!({
            "type": "permission",
            "id": info.id,
            "tool": info.tool,
            "decision": decision,
        }));
        decision
    }
}

/// The first line: the session this run is recorded in (`id`, `None` when
/// sessions are off), the model, the working directory and mm's version.
pub fn session_event(agent: &Agent, id: Option<String>) -> serde_json::Value {
    serde_json::json!({
        "type": "session",
        "session_id": id,
        "model": agent.model(),
        "cwd": agent.cwd().display().to_string(),
        "version": mm_agent::version(),
    })
}

/// The `outcome` word of a `turn_end` line, and the reason of a failure.
pub fn outcome_fields(outcome: &TurnOutcome) -> (&'static str, Option<&str>) {
    match outcome {
        TurnOutcome::Done => ("done", None),
        TurnOutcome::Cancelled => ("cancelled", None),
        TurnOutcome::MaxTurns => ("max_turns", None),
        TurnOutcome::Failed(why) => ("failed", Some(&why.message)),
        TurnOutcome::Repeated(why) => ("repeated", Some(why)),
    }
}

/// A subagent's event as a line: the event's own, with `parent` (the
/// `task` call's id) and `agent`; its end is a `subagent_end` line.
fn child_line(parent: &str, agent: &str, event: &Event) -> Option<serde_json::Value> {
    let mut value = match event {
        Event::ToolOutput { .. } => return None,
        Event::TurnEnd {
            outcome,
            counters,
            prompt_tokens,
            completion_tokens,
            cached_tokens,
        } => end_line(
            "subagent_end",
            outcome,
            counters,
            [*prompt_tokens, *completion_tokens, *cached_tokens],
        ),
        other => serde_json::to_value(other).ok()?,
    };
    value["parent"] = serde_json::Value::from(parent);
    value["agent"] = serde_json::Value::from(agent);
    Some(value)
}

/// A `turn_end` or `subagent_end` line: how it ended (and why, when it
/// failed) and its counts; `tokens` are prompt, completion and cached.
fn end_line(
    kind: &str,
    outcome: &TurnOutcome,
    counters: &mm_ui::Counters,
    tokens: [u64; 3],
) -> serde_json::Value {
    let (word, error) = outcome_fields(outcome);
    let mut end = serde_json::json!({
        "type": kind,
        "outcome": word,
        "counters": counters,
        "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1],
        "cached_tokens": tokens[2],
    });
    if let Some(error) = error {
        end["error"] = serde_json::Value::from(error);
    }
    end
}

impl Sink for JsonSink {
    fn event(&self, event: Event) {
        // A running command's output as it comes: `tool_end` carries it
        // whole, and a command printing gigabytes must not print them twice.
        // Pictures a tool returned: `tool_end`'s text names them; their
        // bytes are the model's, not the script's.
        if let Event::ToolOutput { .. } | Event::ToolImages { .. } = event {
            return;
        }
        if let Event::Child {
            parent,
            agent,
            event,
        } = &event
        {
            if let Some(line) = child_line(parent, agent, event) {
                self.line(&line);
            }
            return;
        }
        if let Event::TurnEnd {
            outcome,
            counters,
            prompt_tokens,
            completion_tokens,
            cached_tokens,
        } = &event
        {
            self.line(&serde_json::json!({
                "type": "usage",
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "cached_tokens": cached_tokens,
            }));
            let end = end_line(
                "turn_end",
                outcome,
                counters,
                [*prompt_tokens, *completion_tokens, *cached_tokens],
            );
            self.line(&end);
            return;
        }
        match serde_json::to_string(&event) {
            Ok(line) => self.write(line),
            Err(e) => tracing::error!("event not serialisable: {e}"),
        }
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(self.ask(info))
    }

    fn cannot_ask(&self, info: &ToolInfo) -> Option<String> {
        let text = self.controls.cannot_ask()?;
        self.line(&serde_json::json!({
            "type": "permission",
            "id": info.id,
            "tool": info.tool,
            "decision": "no_terminal",
        }));
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::tests::Buffer;
    use mm_ui::{Counters, ToolKind, TurnOutcome};

    #[tokio::test]
    async fn events_are_lines_of_json_and_rejections_are_reported() {
        let buf = Buffer::default();
        let sink = JsonSink::with_writer(Box::new(buf.clone()), Arc::new(Controls::default()));
        sink.event(Event::Text {
            text: "hi\n".into(),
        });
        let info = ToolInfo {
            id: "c1".into(),
            tool: "bash".into(),
            family: mm_ui::ToolFamily::Command,
            echoes: true,
            title: "ls".into(),
            kind: ToolKind::Execute,
            input: serde_json::json!({"command": "ls"}),
            locations: vec![],
            change: None,
        };
        assert_eq!(sink.permission(&info).await, Decision::Reject);
        sink.event(Event::TurnEnd {
            outcome: TurnOutcome::Done,
            counters: Counters::default(),
            prompt_tokens: 1,
            completion_tokens: 2,
            cached_tokens: 1,
        });
        let lines: Vec<serde_json::Value> = buf
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"type": "text", "text": "hi\n"})
        );
        assert_eq!(
            lines[1],
            serde_json::json!({"type": "permission", "id": "c1", "tool": "bash", "decision": "reject"})
        );
        assert_eq!(
            lines[2],
            serde_json::json!({"type": "usage", "prompt_tokens": 1, "completion_tokens": 2, "cached_tokens": 1})
        );
        assert_eq!(
            lines[3],
            serde_json::json!({
                "type": "turn_end",
                "outcome": "done",
                "counters": {"commands": 0, "file_ops": 0, "skills": 0, "lsp_calls": 0},
                "prompt_tokens": 1,
                "completion_tokens": 2,
                "cached_tokens": 1,
            })
        );
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn every_outcome_is_a_string_and_a_failure_says_why() {
        let buf = Buffer::default();
        let sink = JsonSink::with_writer(Box::new(buf.clone()), Arc::new(Controls::default()));
        let mut counters = Counters::default();
        counters.count(mm_ui::ToolFamily::Command);
        for outcome in [
            TurnOutcome::Failed(mm_agent::TurnError::new(
                mm_agent::FailureKind::Network,
                "the model server is down",
            )),
            TurnOutcome::Cancelled,
            TurnOutcome::MaxTurns,
        ] {
            sink.event(Event::TurnEnd {
                outcome,
                counters,
                prompt_tokens: 7,
                completion_tokens: 0,
                cached_tokens: 0,
            });
        }
        let ends: Vec<serde_json::Value> = buf
            .text()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["type"] == "turn_end")
            .collect();
        assert_eq!(ends.len(), 3);
        assert_eq!(ends[0]["outcome"], "failed");
        assert_eq!(ends[0]["error"], "the model server is down");
        assert_eq!(ends[0]["counters"]["commands"], 1);
        assert_eq!(ends[1]["outcome"], "cancelled");
        assert!(ends[1].get("error").is_none(), "{}", ends[1]);
        assert_eq!(ends[2]["outcome"], "max_turns");
        assert!(ends[2].get("error").is_none(), "{}", ends[2]);
    }
}
