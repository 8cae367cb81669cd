//! `--output-format json`: one JSON object per line on stdout for every
//! event of the turn (`mm_ui::Event` as it serialises: `{"type":"text",
//! "text":…}`, `tool_start`, `tool_end`, `turn_end` with the tokens …), for
//! scripts and CI. Permission questions are answered like the text mode's
//! (asked on the terminal when there is one, else rejected) and reported as
//! a `permission` line.

use std::io::Write;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mm_ui::{Decision, Event, Sink, ToolInfo};

use crate::keys::Controls;
use crate::term::PERMISSION_PROMPT;

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
            let _ = write!(err, "{}: {}\r\n{PERMISSION_PROMPT}", info.tool, info.title);
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

impl Sink for JsonSink {
    fn event(&self, event: Event) {
        match serde_json::to_string(&event) {
            Ok(line) => self.write(line),
            Err(e) => tracing::error!("event not serialisable: {e}"),
        }
    }

    fn permission<'a>(&'a self, info: &'a ToolInfo) -> BoxFuture<'a, Decision> {
        Box::pin(self.ask(info))
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
        assert_eq!(lines[2]["type"], "turn_end");
        assert_eq!(lines[2]["outcome"], "done");
        assert_eq!(lines[2]["prompt_tokens"], 1);
        assert_eq!(lines.len(), 3);
    }
}
