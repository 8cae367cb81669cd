//! The one place a tool call goes through: find the tool, parse the
//! arguments, plan (preview, no side effect), ask permission, run, redact,
//! cap, record in the loop detector, and tell the Sink at each step.
//!
//! Every failure is text for the model; only the detector's second level
//! ([`CallOutcome::Stop`]) ends the turn. Events, for every call the model
//! made (failed ones included, so a front end can show and close each one):
//! `ToolStart`, then `ToolRunning` only if the tool runs, then `ToolEnd`.
//!
//! Redaction: every output is redacted here (key values → `[redacted]`) and
//! then capped at `max_output` with the bash truncation rule, a safety net
//! for tools that truncate on their own. `bash` also redacts while its
//! output streams (give it the same keys), so that for it redaction happens
//! before truncation as decisions.md 3 asks.
//!
//! Status: `Failed` for unknown tools, bad arguments, plan refusals,
//! rejections, not-run calls and outputs [`is_failure`] recognises; else
//! `Completed`.
//!
//! Texts of the toolbox itself:
//! - `unknown tool "<name>"; available tools: a, b, c`
//! - `invalid arguments for <tool>: …; send a JSON object matching the tool's schema`
//! - `[not run: the turn was stopped]` when the turn was cancelled before the
//!   tool ran (permission dialog cancelled, or cancelled already); decisions.md 5
//! - `[error: the <tool> tool failed unexpectedly: …]` if a tool panics

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;

use futures::FutureExt;
use mm_detector::{Detector, Verdict, loop_detected_text, stop_text};
use mm_ui::{Decision, Event, ToolInfo, ToolKind, ToolStatus};
use serde_json::Value;

use crate::bash::{fit, preview, redact};
use crate::tool::{Plan, Tool, ToolContext, ToolSpec, invalid_args};

/// The result of a call that did not run because the turn stopped first.
pub const NOT_RUN: &str = "[not run: the turn was stopped]";

/// Settings of the toolbox.
#[derive(Debug, Clone)]
pub struct ToolboxSettings {
    /// `maxOutput`: a last cap on every output (tools truncate their own;
    /// this catches whatever a tool or the redaction left longer).
    pub max_output: usize,
    /// `previewLines`: lines of an echoing tool's output put in `ToolEnd`.
    pub preview_lines: usize,
    /// Key VALUES to replace by `[redacted]` in every output (decisions.md 3).
    pub secrets: Vec<String>,
}

/// What the agent loop does with a call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// The text the model receives.
    Output(String),
    /// Loop detector level 2: `output` is the tool's output followed by the
    /// stop sentence on its own line (decisions.md 5: that call DID run);
    /// `error` is the stop sentence. The turn must end.
    Stop { output: String, error: String },
}

impl CallOutcome {
    /// The text that goes into the history for this call.
    pub fn output(&self) -> &str {
        match self {
            CallOutcome::Output(text) => text,
            CallOutcome::Stop { output, .. } => output,
        }
    }
}

/// The tools of one session and its loop detector.
pub struct Toolbox {
    tools: Vec<(String, Box<dyn Tool>)>,
    settings: ToolboxSettings,
    detector: Mutex<Detector>,
}

impl Toolbox {
    pub fn new(tools: Vec<Box<dyn Tool>>, settings: ToolboxSettings) -> Toolbox {
        let tools = tools.into_iter().map(|t| (t.spec().name, t)).collect();
        Toolbox {
            tools,
            settings,
            detector: Mutex::new(Detector::new()),
        }
    }

    /// Declarations for the model, in declaration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(_, t)| t.spec()).collect()
    }

    /// Tool names, in declaration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(n, _)| n.clone()).collect()
    }

    /// `/new`: forget the repeats seen so far (`/compact` does not).
    pub fn reset_detector(&self) {
        self.detector().reset();
    }

    fn detector(&self) -> std::sync::MutexGuard<'_, Detector> {
        self.detector.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs one call end to end; never panics, never returns Err for
    /// ordinary failures.
    pub async fn call(
        &self,
        call_id: &str,
        name: &str,
        arguments: &str,
        ctx: &ToolContext,
    ) -> CallOutcome {
        let parsed = parse_arguments(arguments);
        let input = match &parsed {
            Ok(v) => v.clone(),
            Err(_) => Value::String(arguments.to_string()),
        };
        let fallback_info = |kind| ToolInfo {
            id: call_id.to_string(),
            tool: name.to_string(),
            title: name.to_string(),
            kind,
            input: input.clone(),
            locations: Vec::new(),
            change: None,
        };

        let Some(tool) = self.tools.iter().find(|(n, _)| n == name).map(|(_, t)| t) else {
            let mut names = self.names();
            names.sort();
            let text = format!(
                "unknown tool \"{name}\"; available tools: {}",
                names.join(", ")
            );
            ctx.sink.event(Event::ToolStart {
                info: fallback_info(ToolKind::Other),
            });
            return self.finish(call_id, name, arguments, text, true, false, ctx);
        };

        let args = match parsed {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                let text = invalid_args(name, "the arguments are not a JSON object");
                ctx.sink.event(Event::ToolStart {
                    info: fallback_info(ToolKind::Other),
                });
                return self.finish(call_id, name, arguments, text, true, false, ctx);
            }
            Err(e) => {
                let text = invalid_args(name, &format!("the arguments are not valid JSON ({e})"));
                ctx.sink.event(Event::ToolStart {
                    info: fallback_info(ToolKind::Other),
                });
                return self.finish(call_id, name, arguments, text, true, false, ctx);
            }
        };

        let planned = AssertUnwindSafe(tool.plan(&args, ctx)).catch_unwind().await;
        let plan: Plan = match planned {
            Ok(Ok(plan)) => plan,
            Ok(Err(text)) => {
                ctx.sink.event(Event::ToolStart {
                    info: fallback_info(ToolKind::Other),
                });
                return self.finish(call_id, name, arguments, text, true, false, ctx);
            }
            Err(panic) => {
                ctx.sink.event(Event::ToolStart {
                    info: fallback_info(ToolKind::Other),
                });
                let text = panic_text(name, panic.as_ref());
                return self.finish(call_id, name, arguments, text, true, false, ctx);
            }
        };

        let info = ToolInfo {
            id: call_id.to_string(),
            tool: name.to_string(),
            title: plan.title.clone(),
            kind: plan.kind,
            input,
            locations: plan.locations.clone(),
            change: plan.change.clone(),
        };
        ctx.sink.event(Event::ToolStart { info: info.clone() });
        let echo = plan.echo;

        if let Some(rejection) = plan.rejection
            && ctx.permissions.must_ask(name)
        {
            let decision = tokio::select! {
                d = ctx.sink.permission(&info) => d,
                _ = ctx.cancel.cancelled() => Decision::Cancelled,
            };
            match decision {
                Decision::AllowOnce => {}
                Decision::AllowAlways => ctx.permissions.allow_always(name),
                Decision::Reject => {
                    return self.finish(
                        call_id,
                        name,
                        arguments,
                        rejection.to_string(),
                        true,
                        echo,
                        ctx,
                    );
                }
                Decision::Cancelled => return self.not_run(call_id, name, ctx),
            }
        }
        if ctx.cancel.is_cancelled() {
            return self.not_run(call_id, name, ctx);
        }

        ctx.sink.event(Event::ToolRunning {
            id: call_id.to_string(),
        });
        let ran = AssertUnwindSafe(tool.run(&args, plan, ctx))
            .catch_unwind()
            .await;
        let output = match ran {
            Ok(text) => text,
            Err(panic) => panic_text(name, panic.as_ref()),
        };
        let failed = is_failure(name, &output);
        self.finish(call_id, name, arguments, output, failed, echo, ctx)
    }

    /// Redact, cap, record, append the detector's text, emit `ToolEnd`.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        call_id: &str,
        name: &str,
        arguments: &str,
        output: String,
        failed: bool,
        echo: bool,
        ctx: &ToolContext,
    ) -> CallOutcome {
        let mut output = redact(&output, &self.settings.secrets);
        if output.chars().count() > self.settings.max_output {
            output = fit(&output, "", self.settings.max_output);
        }
        let verdict = self.detector().record(name, arguments, &output);
        let (outcome, failed) = match verdict {
            Verdict::Ok => (CallOutcome::Output(output), failed),
            Verdict::Warn => {
                push_line(&mut output, loop_detected_text());
                (CallOutcome::Output(output), failed)
            }
            Verdict::Stop => {
                let error = stop_text(name);
                push_line(&mut output, &error);
                (CallOutcome::Stop { output, error }, true)
            }
        };
        let text = outcome.output().to_string();
        let preview = if echo {
            preview(&text, self.settings.preview_lines)
        } else {
            Vec::new()
        };
        ctx.sink.event(Event::ToolEnd {
            id: call_id.to_string(),
            tool: name.to_string(),
            status: if failed {
                ToolStatus::Failed
            } else {
                ToolStatus::Completed
            },
            output: text,
            preview,
        });
        outcome
    }

    /// The turn stopped before the call ran: not recorded in the detector.
    fn not_run(&self, call_id: &str, name: &str, ctx: &ToolContext) -> CallOutcome {
        ctx.sink.event(Event::ToolEnd {
            id: call_id.to_string(),
            tool: name.to_string(),
            status: ToolStatus::Failed,
            output: NOT_RUN.to_string(),
            preview: Vec::new(),
        });
        CallOutcome::Output(NOT_RUN.to_string())
    }
}

/// Models send `""` for "no arguments": that is `{}`, so that the tool can
/// name the missing field.
fn parse_arguments(arguments: &str) -> Result<Value, serde_json::Error> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(arguments)
}

/// `text` on its own line after `output`.
fn push_line(output: &mut String, text: &str) {
    if !output.is_empty() && !output.ends_with('\n') {
        output.push('\n');
    }
    output.push_str(text);
}

fn panic_text(tool: &str, panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string());
    format!("[error: the {tool} tool failed unexpectedly: {what}]")
}

/// Whether an output that ran is a failure, for the `ToolEnd` status
/// (tools return plain text, so this reads the reference's texts):
/// - any tool: a last line `[exit code: …]` or `[error: …]`, or a rejection
///   (`[… rejected by the user]`);
/// - `write_file`/`edit_file`: anything but their success headlines
///   (`created `, `wrote `, `edited `, `dry run: `, `<path> unchanged: …`);
/// - `read_file`: the one-line refusals (missing, directory, not text,
///   start after end); `read_skill`: the unknown-name text.
pub fn is_failure(tool: &str, output: &str) -> bool {
    let last = output
        .trim_end_matches('\n')
        .rsplit('\n')
        .next()
        .unwrap_or("");
    if last.starts_with("[exit code: ") || last.starts_with("[error: ") {
        return true;
    }
    if output.starts_with('[')
        && output.ends_with(" rejected by the user]")
        && !output.contains('\n')
    {
        return true;
    }
    match tool {
        "write_file" | "edit_file" => {
            let first = output.split('\n').next().unwrap_or("");
            !(first.starts_with("created ")
                || first.starts_with("wrote ")
                || first.starts_with("edited ")
                || first.starts_with("dry run: ")
                || first.ends_with(" unchanged: the content is identical, nothing written"))
        }
        "read_file" => {
            !output.contains('\n')
                && (output.ends_with(" does not exist. Create it with write_file")
                    || output.ends_with(" is a directory")
                    || (output.contains(" is not a text file (") && output.ends_with(" bytes)"))
                    || (output.starts_with("start (") && output.contains(") is after end (")))
        }
        "read_skill" => output.starts_with("No skill named \""),
        "lsp" => output.starts_with("[lsp: "),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_classification() {
        assert!(is_failure("bash", "x\n[exit code: exit status 1]"));
        assert!(is_failure("bash", "[error: 1s timeout exceeded]"));
        assert!(is_failure("bash", "[command rejected by the user]"));
        assert!(!is_failure("bash", "hi\n"));
        assert!(!is_failure("bash", ""));
        assert!(is_failure("lsp", "[lsp: \"foo\" not found in main.go]"));
        assert!(!is_failure("lsp", "main.go:3:6  func foo() {"));
        assert!(is_failure("edit_file", "old text not found in a.txt"));
        assert!(is_failure(
            "edit_file",
            "a.txt changed on disk since it was read; read it again"
        ));
        assert!(!is_failure(
            "edit_file",
            "edited a.txt: 1 edit(s), +1 -1 lines, first change at line 2\n@@"
        ));
        assert!(!is_failure(
            "write_file",
            "a.txt unchanged: the content is identical, nothing written"
        ));
        assert!(!is_failure("write_file", "created a.txt (3 lines)\n+a"));
        assert!(is_failure(
            "read_file",
            "a.txt does not exist. Create it with write_file"
        ));
        assert!(is_failure(
            "read_file",
            "a.bin is not a text file (12 bytes)"
        ));
        assert!(is_failure("read_file", "start (5) is after end (2)"));
        assert!(!is_failure("read_file", "line one\nsrc is a directory"));
        assert!(is_failure(
            "read_skill",
            "No skill named \"x\". Available skills: a"
        ));
    }

    #[test]
    fn own_line_rule() {
        let mut s = String::from("hi\n");
        push_line(&mut s, "X");
        assert_eq!(s, "hi\nX");
        let mut s = String::from("hi");
        push_line(&mut s, "X");
        assert_eq!(s, "hi\nX");
        let mut s = String::new();
        push_line(&mut s, "X");
        assert_eq!(s, "X");
    }
}
