//! The one place a tool call goes through: find the tool, parse the
//! arguments, judge it by the permission rules (a denied call is not even
//! planned), plan (preview, no side effect), ask permission when the rules
//! say so, run, redact, cap, record in the loop detector, and tell the Sink
//! at each step.
//!
//! Every failure is text for the model; only the detector's second level
//! ([`CallOutcome::Stop`]) ends the turn. Events, for every call the model
//! made (failed ones included, so a front end can show and close each one):
//! `ToolStart`, then `ToolRunning` only if the tool runs, then `ToolEnd`.
//!
//! Redaction: every event's call info (title, arguments, locations, the
//! change's texts and diff) and every output is redacted here (key values →
//! `[redacted]`); outputs are then capped at `max_output` with the bash
//! truncation rule, a safety net
//! for tools that truncate on their own. The tools that truncate (`bash`
//! while its output streams, `read_file`, `read_skill`) redact first
//! themselves, so that no half of a key survives a cut
//! (docs/design.md#keys-stay-out-of-tools): give them the same keys
//! (`BashSettings::secrets`, `with_secrets`).
//!
//! Status: `Failed` for unknown tools, bad arguments, plan refusals,
//! rejections, not-run calls, panics, the detector's stop, and outputs the
//! tool itself flagged as failed ([`ToolOutput::failed`]); else
//! `Completed`. The text is never read to guess it. A call refused before
//! it has a plan is shown with [`Tool::describe`]'s title, kind and
//! locations.
//!
//! Texts of the toolbox itself:
//! - `unknown tool "<name>"; available tools: a, b, c`
//! - `invalid arguments for <tool>: …; send a JSON object matching the tool's schema`
//! - `[not run: the turn was stopped]` when the turn was cancelled before the
//!   tool ran (permission dialog cancelled, or cancelled already; see
//!   docs/design.md#every-call-gets-a-result)
//! - `[error: the <tool> tool failed unexpectedly: …]` if a tool panics
//! - `the working directory <cwd> is gone (deleted or moved while mm ran);
//!   mm will not re-create it`, checked before the plan and again before the
//!   run ([`ToolContext::cwd_gone`])
//! - `[denied by rule "<rule>"]` for a call a deny rule refuses
//! - [`PLAN_MODE`] for a call that would change things in plan mode
//! - `[call rejected by the user]` when the user refuses a call of a tool
//!   with no refusal text of its own (one that only a rule made ask)
//! - the notice `session rule added: bash(git status *)` after "allow for
//!   the session" (mm-policy records the command's prefix, not the tool)

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use mm_detector::{Detector, loop_detected_text, stop_text};
use mm_hooks::{HookEvent, Permission};
use mm_policy::{Call, Verdict};
use mm_types::{Decision, Event, FileChange, ToolFamily, ToolInfo, ToolStatus};
use serde_json::{Value, json};

use crate::output::fit;
use crate::tool::{
    Described, Plan, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, invalid_args,
};
use mm_redact::redact;

/// The result of a call that did not run because the turn stopped first.
pub const NOT_RUN: &str = "[not run: the turn was stopped]";

/// What the model gets when the user refuses a call of a tool that has no
/// refusal text of its own (one a rule made ask).
pub const REJECTED: &str = "[call rejected by the user]";

/// What the model gets for a call plan mode refused.
pub const PLAN_MODE: &str = "[not run: plan mode is on — only reading and read-only commands run; \
     present your plan with exit_plan]";

/// What the model gets for a call a deny rule refused: `[denied by rule
/// "bash(rm -rf *)"]`.
pub fn denied_text(rule: &str) -> String {
    format!("[denied by rule \"{rule}\"]")
}

/// A rejection and what the user said with it, on the line after the
/// rejection text (which stays as it is: models and scripts know it).
pub fn rejection_with_reason(rejection: &str, why: &str) -> String {
    format!("{rejection}\nThe user says: {}", why.trim())
}

/// The notice after "allow for the session": `session rule added:
/// bash(git status *)`.
pub fn session_rule_text(rules: &[String]) -> String {
    let noun = if rules.len() == 1 { "rule" } else { "rules" };
    format!("session {noun} added: {}", rules.join(", "))
}

/// How the rules judge a call of `name` about `subject` (`changes`: the
/// call would change something).
fn judge(name: &str, subject: &Subject, changes: bool, ctx: &ToolContext) -> Verdict {
    ctx.permissions.policy().check(&Call {
        tool: name,
        subject: subject.as_policy(),
        changes,
        cwd: &ctx.cwd,
    })
}

/// A call with a plan, ready to be asked for and run.
struct Ready<'t> {
    tool: &'t dyn Tool,
    args: Value,
    plan: Plan,
    subject: Subject,
}

/// A call refused before it had a plan: how to show it, what the model
/// reads.
struct Unplanned {
    shown: Described,
    text: String,
}

/// What the rules and the user said of a planned call.
enum Consent {
    Go,
    /// It fails with this text (denied, rejected, folder gone).
    Refused(String),
    /// The turn was cancelled: the call gets the not-run result.
    NotRun,
}

/// Settings of the toolbox.
#[derive(Debug, Clone)]
pub struct ToolboxSettings {
    /// `previewLines`: lines of an echoing tool's output put in `ToolEnd`.
    pub preview_lines: usize,
    /// Key VALUES to replace by `[redacted]` in every output.
    pub secrets: Vec<String>,
}

/// What the agent loop does with a call's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// The text the model receives and whether the call failed (as the
    /// `ToolEnd` status said).
    Output(ToolOutput),
    /// Loop detector level 2: `output` is the tool's output followed by the
    /// stop sentence on its own line (that call DID run:
    /// docs/design.md#every-call-gets-a-result); `error` is the stop
    /// sentence. The turn must end; the call failed.
    Stop {
        /// The history's text: the tool's output, then the stop sentence.
        output: String,
        /// The stop sentence, which ends the turn.
        error: String,
    },
}

impl CallOutcome {
    /// The text that goes into the history for this call.
    pub fn output(&self) -> &str {
        match self {
            CallOutcome::Output(out) => &out.text,
            CallOutcome::Stop { output, .. } => output,
        }
    }

    /// The pictures the call returned (`read_file` of an image), which go
    /// into the history with its result.
    pub fn images(&self) -> &[mm_types::Image] {
        match self {
            CallOutcome::Output(out) => &out.images,
            CallOutcome::Stop { .. } => &[],
        }
    }

    /// Whether the call failed: what the history records with its result.
    pub fn failed(&self) -> bool {
        match self {
            CallOutcome::Output(out) => out.failed,
            CallOutcome::Stop { .. } => true,
        }
    }
}

/// What a terminal echoes under a call once it ended.
enum Echo {
    /// The head of the output (bash, lsp).
    Output,
    /// An edit's diff, already folded; shown when the edit went through.
    Diff(Vec<String>),
    /// Nothing (a read, a skill).
    Nothing,
}

/// The tools of one session and its loop detector.
pub struct Toolbox {
    tools: Vec<(String, Arc<dyn Tool>)>,
    settings: ToolboxSettings,
    detector: Mutex<Detector>,
}

impl Toolbox {
    /// A toolbox of `tools`, each known by the name its spec gives, with a
    /// fresh loop detector.
    pub fn new(tools: Vec<Box<dyn Tool>>, settings: ToolboxSettings) -> Toolbox {
        Toolbox::shared_from(tools.into_iter().map(Arc::from).collect(), settings)
    }

    /// A toolbox of tools another toolbox holds too (a subagent's, which
    /// has a loop detector of its own), with a fresh loop detector.
    pub fn shared_from(tools: Vec<Arc<dyn Tool>>, settings: ToolboxSettings) -> Toolbox {
        let tools = tools
            .into_iter()
            .map(|t| (t.row().name.to_string(), t))
            .collect();
        Toolbox {
            tools,
            settings,
            detector: Mutex::new(Detector::new()),
        }
    }

    /// The tools, shared, in declaration order: what a subagent's toolbox
    /// is made of.
    pub fn shared(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.iter().map(|(_, t)| t.clone()).collect()
    }

    /// The settings the toolbox was made with.
    pub fn settings(&self) -> &ToolboxSettings {
        &self.settings
    }

    /// Add tools that became known after the session began (MCP servers
    /// that finished starting). A name already taken is skipped.
    pub fn add(&mut self, tools: Vec<Box<dyn Tool>>) {
        for tool in tools {
            let name = tool.row().name.to_string();
            if !self.tools.iter().any(|(n, _)| *n == name) {
                self.tools.push((name, Arc::from(tool)));
            }
        }
    }

    /// The declaration of tool `name`, if it is one.
    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        self.tools
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.spec())
    }

    /// Declarations for the model, in declaration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(_, t)| t.spec()).collect()
    }

    /// The names of the tools not offered in `mode` (`exit_plan` outside
    /// plan mode).
    pub fn hidden_in(&self, mode: mm_types::AgentMode) -> Vec<String> {
        self.tools
            .iter()
            .filter(|(_, t)| !t.declared_in(mode))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Tool names, in declaration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The row of tool `name`, if it is one: what every consumer reads of
    /// a tool.
    pub fn row(&self, name: &str) -> Option<&ToolRow> {
        self.tools
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.row())
    }

    /// The family of tool `name`; `Other` for a name no tool has.
    pub fn family(&self, name: &str) -> ToolFamily {
        self.row(name).map_or(ToolFamily::Other, |r| r.family)
    }

    /// Whether a call of `name` may change files; false for a name no
    /// tool has (such a call does not run).
    pub fn may_change_files(&self, name: &str) -> bool {
        self.row(name).is_some_and(|r| r.changes_files)
    }

    /// Whether a terminal echoes the output of a call of `name`; false for
    /// a name no tool has.
    fn echoes(&self, name: &str) -> bool {
        self.row(name).is_some_and(|r| r.echoes)
    }

    /// `/new`: forget the repeats seen so far (`/compact` does not).
    pub fn reset_detector(&self) {
        self.detector().reset();
    }

    fn detector(&self) -> std::sync::MutexGuard<'_, Detector> {
        self.detector.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs one call end to end; never panics, never returns Err for
    /// ordinary failures. The steps: `prepare` (find, parse,
    /// judge, plan), `ToolStart`, `consent` (the rules, the
    /// user), then the run and `finish`.
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
        let Ready {
            tool,
            args,
            plan,
            subject,
        } = match self.prepare(name, parsed, &input, ctx).await {
            Ok(ready) => ready,
            Err(Unplanned { shown, text }) => {
                // A call that ends before it has a plan still gets a
                // ToolStart (and its ToolEnd) so that every front end can
                // show and close it.
                ctx.sink.event(Event::ToolStart {
                    info: self.redacted(ToolInfo {
                        id: call_id.to_string(),
                        tool: name.to_string(),
                        family: self.family(name),
                        echoes: self.echoes(name),
                        title: shown.title,
                        kind: shown.kind,
                        input,
                        locations: shown.locations,
                        change: None,
                    }),
                });
                let out = ToolOutput::fail(text);
                return self.finish(call_id, name, arguments, out, &Echo::Nothing, ctx);
            }
        };

        let info = self.redacted(ToolInfo {
            id: call_id.to_string(),
            tool: name.to_string(),
            family: tool.row().family,
            echoes: tool.row().echoes,
            title: plan.title.clone(),
            kind: plan.kind,
            input,
            locations: plan.locations.clone(),
            change: plan.change.clone(),
        });
        ctx.sink.event(Event::ToolStart { info: info.clone() });
        // From the redacted change: no key value reaches a preview.
        let echo = self.echo(info.echoes, info.change.as_ref());
        let hooks = ctx.permissions.hooks().clone();
        let pre = hooks
            .run(
                HookEvent::PreToolUse,
                Some(name),
                &ctx.cwd,
                json!({"tool_name": name, "tool_input": &info.input}),
                &ctx.cancel,
            )
            .await;
        for line in &pre.lines {
            ctx.sink.event(Event::Notice { text: line.clone() });
        }
        if let Some(why) = pre.block {
            // The model reads the hook's own words as the call's result.
            let out = ToolOutput::fail(why);
            return self.finish(call_id, name, arguments, out, &echo, ctx);
        }
        match self
            .consent(&info, &subject, plan.rejection, pre.permission, ctx)
            .await
        {
            Consent::Go => {}
            Consent::Refused(text) => {
                let out = ToolOutput::fail(text);
                return self.finish(call_id, name, arguments, out, &echo, ctx);
            }
            Consent::NotRun => return self.not_run(call_id, name, ctx),
        }

        ctx.sink.event(Event::ToolRunning {
            id: call_id.to_string(),
        });
        let ctx = &ToolContext {
            call_id: call_id.to_string(),
            ..ctx.clone()
        };
        let ran = AssertUnwindSafe(tool.run(&args, plan, ctx))
            .catch_unwind()
            .await;
        let mut output = match ran {
            Ok(output) => output,
            Err(panic) => ToolOutput::fail(panic_text(name, panic.as_ref())),
        };
        if hooks.has(HookEvent::PostToolUse) {
            let post = hooks
                .run(
                    HookEvent::PostToolUse,
                    Some(name),
                    &ctx.cwd,
                    json!({
                        "tool_name": name,
                        "tool_input": &info.input,
                        "tool_response": redact(&output.text, &self.settings.secrets),
                    }),
                    &ctx.cancel,
                )
                .await;
            for line in &post.lines {
                ctx.sink.event(Event::Notice { text: line.clone() });
            }
            // Exit 2 after the fact: the model reads what the hook said.
            if let Some(why) = post.block {
                push_line(&mut output.text, &format!("[hook: {why}]"));
            }
        }
        self.finish(call_id, name, arguments, output, &echo, ctx)
    }

    /// How a call of `name` is shown without a plan: its tool's
    /// [`Tool::describe`], or the name alone.
    fn describe(&self, name: &str, input: &Value, ctx: &ToolContext) -> Described {
        self.tools
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, tool)| {
                std::panic::catch_unwind(AssertUnwindSafe(|| tool.describe(input, ctx))).ok()
            })
            .unwrap_or_else(|| Described::bare(name))
    }

    /// Everything before a call is shown as planned: find the tool, check
    /// the arguments and the working folder, refuse what a deny rule
    /// names (a denied call is not even planned), then plan. A refusal
    /// says how to show the call and what to tell the model.
    async fn prepare<'t>(
        &'t self,
        name: &str,
        parsed: Result<Value, serde_json::Error>,
        input: &Value,
        ctx: &ToolContext,
    ) -> Result<Ready<'t>, Unplanned> {
        let mode = ctx.permissions.mode();
        // A tool the mode does not offer (exit_plan outside plan mode) is
        // no tool at all to the model.
        let found = self
            .tools
            .iter()
            .find(|(n, t)| n == name && t.declared_in(mode))
            .map(|(_, t)| t);
        let Some(tool) = found else {
            let hidden = self.hidden_in(mode);
            let mut names = self.names();
            names.retain(|n| !hidden.contains(n));
            names.sort();
            return Err(Unplanned {
                shown: Described::bare(name),
                text: format!(
                    "unknown tool \"{name}\"; available tools: {}",
                    names.join(", ")
                ),
            });
        };
        let refuse = |text: String| Unplanned {
            shown: self.describe(name, input, ctx),
            text,
        };
        let args = match parsed {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                return Err(refuse(invalid_args(
                    name,
                    "the arguments are not a JSON object",
                )));
            }
            Err(e) => {
                return Err(refuse(invalid_args(
                    name,
                    &format!("the arguments are not valid JSON ({e})"),
                )));
            }
        };
        if let Some(text) = ctx.cwd_gone() {
            return Err(refuse(text));
        }
        // The rules judge the call by its subject.
        let subject = std::panic::catch_unwind(AssertUnwindSafe(|| tool.subject(&args, ctx)))
            .unwrap_or_default();
        if let Verdict::Deny(rule) = judge(name, &subject, true, ctx) {
            return Err(refuse(denied_text(&rule)));
        }
        match AssertUnwindSafe(tool.plan(&args, ctx)).catch_unwind().await {
            Ok(Ok(plan)) => Ok(Ready {
                tool: tool.as_ref(),
                args,
                plan,
                subject,
            }),
            Ok(Err(text)) => Err(refuse(text)),
            Err(panic) => Err(refuse(panic_text(name, panic.as_ref()))),
        }
    }

    /// Whether a planned call may run: the rules decide, or the user when
    /// they say ask (`rejection` is the plan's own rejection text, set for
    /// a call that changes something). Checked again after asking: a
    /// cancelled turn runs nothing, nor does a working folder gone
    /// meanwhile.
    async fn consent(
        &self,
        info: &ToolInfo,
        subject: &Subject,
        rejection: Option<&'static str>,
        hook: Option<Permission>,
        ctx: &ToolContext,
    ) -> Consent {
        let name = info.tool.as_str();
        let verdict = match (judge(name, subject, rejection.is_some(), ctx), hook) {
            // A deny rule wins over any hook; the sandbox applies anyway.
            (Verdict::Deny(rule), _) => Verdict::Deny(rule),
            (_, Some(Permission::Deny(why))) => return Consent::Refused(why),
            (Verdict::Allow, Some(Permission::Ask)) => Verdict::Ask(mm_policy::AskReason::Default),
            (Verdict::Ask(_), Some(Permission::Allow)) => Verdict::Allow,
            (v, _) => v,
        };
        match verdict {
            Verdict::Allow => {}
            Verdict::Deny(rule) => return Consent::Refused(denied_text(&rule)),
            Verdict::PlanMode => return Consent::Refused(PLAN_MODE.to_string()),
            Verdict::Ask(_) => {
                // Nobody to ask (a script): not run, and the model is told why.
                if let Some(text) = ctx.sink.cannot_ask(info) {
                    return Consent::Refused(text);
                }
                let hooks = ctx.permissions.hooks().clone();
                if hooks.has(HookEvent::Notification) {
                    // Told while the question is on screen, not before it.
                    let (cwd, cancel) = (ctx.cwd.clone(), ctx.cancel.clone());
                    let message = format!("mm needs your permission to use {name}");
                    tokio::spawn(async move {
                        hooks
                            .run(
                                HookEvent::Notification,
                                None,
                                &cwd,
                                json!({"message": message}),
                                &cancel,
                            )
                            .await;
                    });
                }
                let decision = tokio::select! {
                    d = ctx.sink.permission(info) => d,
                    _ = ctx.cancel.cancelled() => Decision::Cancelled,
                };
                match decision {
                    Decision::AllowOnce => {}
                    Decision::AllowAlways => {
                        let added = ctx.permissions.policy().allow_for_session(&Call {
                            tool: name,
                            subject: subject.as_policy(),
                            changes: true,
                            cwd: &ctx.cwd,
                        });
                        if !added.is_empty() {
                            ctx.sink.event(Event::Notice {
                                text: session_rule_text(&added),
                            });
                        }
                    }
                    Decision::Reject => {
                        let rejection = rejection.unwrap_or(REJECTED);
                        return Consent::Refused(match ctx.sink.rejection_reason(&info.id) {
                            Some(why) => rejection_with_reason(rejection, &why),
                            None => rejection.to_string(),
                        });
                    }
                    // ACP: an outcome `cancelled` means the turn was cancelled.
                    Decision::Cancelled => {
                        ctx.cancel.cancel();
                        return Consent::NotRun;
                    }
                }
            }
        }
        if ctx.cancel.is_cancelled() {
            return Consent::NotRun;
        }
        // Gone while the user was asked: still nothing runs there.
        match ctx.cwd_gone() {
            Some(text) => Consent::Refused(text),
            None => Consent::Go,
        }
    }

    /// A call of a saved conversation, shown as it went live: its
    /// `ToolStart`, described from its arguments (nothing is planned or
    /// run), then its `ToolEnd` with the result the session recorded and
    /// the preview a terminal echoes. `result` is `None` for a call the
    /// record has no result for: it ends failed, with no output.
    pub fn replay(
        &self,
        call_id: &str,
        name: &str,
        arguments: &str,
        result: Option<(&str, bool)>,
        ctx: &ToolContext,
    ) {
        self.replay_start(call_id, name, arguments, ctx);
        self.replay_end(call_id, name, result, ctx);
    }

    /// The `ToolStart` half of [`Toolbox::replay`] (what a call did in
    /// between, a subagent's work, is shown before [`Toolbox::replay_end`]).
    pub fn replay_start(&self, call_id: &str, name: &str, arguments: &str, ctx: &ToolContext) {
        let input = parse_arguments(arguments).unwrap_or_else(|_| Value::String(arguments.into()));
        let echoes = self.echoes(name);
        let shown = self.describe(name, &input, ctx);
        ctx.sink.event(Event::ToolStart {
            info: self.redacted(ToolInfo {
                id: call_id.to_string(),
                tool: name.to_string(),
                family: self.family(name),
                echoes,
                title: shown.title,
                kind: shown.kind,
                input,
                locations: shown.locations,
                change: None,
            }),
        });
    }

    /// The `ToolEnd` half of [`Toolbox::replay`].
    pub fn replay_end(
        &self,
        call_id: &str,
        name: &str,
        result: Option<(&str, bool)>,
        ctx: &ToolContext,
    ) {
        let echoes = self.echoes(name);
        let (output, failed) = result.unwrap_or(("", true));
        ctx.sink.event(Event::ToolEnd {
            id: call_id.to_string(),
            tool: name.to_string(),
            status: if failed {
                ToolStatus::Failed
            } else {
                ToolStatus::Completed
            },
            output: output.to_string(),
            preview: if echoes {
                mm_types::fold::head(output, self.settings.preview_lines)
            } else {
                Vec::new()
            },
        });
    }

    /// What a terminal shows under the call once it ended: the head of the
    /// output (when the tool's row echoes), or the diff of an edit folded to `previewLines`
    /// (docs/design.md#repl-diff-display), computed before the plan goes to
    /// `run`.
    fn echo(&self, output: bool, change: Option<&FileChange>) -> Echo {
        let n = self.settings.preview_lines;
        match change {
            _ if output => Echo::Output,
            Some(change) if !change.diff.is_empty() && n > 0 => {
                let folded = mm_fileedit::fold(&change.diff, n);
                let mut lines = folded.lines;
                if folded.hidden > 0 {
                    lines.push(mm_types::fold::more_lines(folded.hidden));
                }
                Echo::Diff(lines)
            }
            _ => Echo::Nothing,
        }
    }

    /// `info` as every front end may show it: no key value anywhere in it.
    fn redacted(&self, mut info: ToolInfo) -> ToolInfo {
        let secrets = &self.settings.secrets;
        if secrets.is_empty() {
            return info;
        }
        let text = |s: &mut String| {
            if secrets.iter().any(|k| s.contains(k.as_str())) {
                *s = redact(s, secrets);
            }
        };
        text(&mut info.title);
        info.locations.iter_mut().for_each(text);
        redact_json(&mut info.input, &text);
        if let Some(change) = info.change.as_mut() {
            text(&mut change.path);
            text(&mut change.diff);
            change.old_text.iter_mut().for_each(text);
            change.new_text.iter_mut().for_each(text);
        }
        info
    }

    /// Redact, cap, record, append the detector's text, emit `ToolEnd`.
    fn finish(
        &self,
        call_id: &str,
        name: &str,
        arguments: &str,
        output: ToolOutput,
        echo: &Echo,
        ctx: &ToolContext,
    ) -> CallOutcome {
        let ToolOutput {
            text: output,
            failed,
            images,
        } = output;
        if !images.is_empty() {
            ctx.sink.event(Event::ToolImages {
                id: call_id.to_string(),
                images: images.clone(),
            });
        }
        let mut output = redact(&output, &self.settings.secrets);
        // A last cap (tools cut their own output; this catches whatever a
        // tool or the redaction left longer).
        if output.chars().count() > ctx.max_output {
            output = fit(&output, "", ctx.max_output);
        }
        let verdict = self.detector().record(name, arguments, &output);
        let outcome = match verdict {
            mm_detector::Verdict::Ok => CallOutcome::Output(ToolOutput {
                text: output,
                failed,
                images,
            }),
            mm_detector::Verdict::Warn => {
                push_line(&mut output, loop_detected_text());
                CallOutcome::Output(ToolOutput {
                    text: output,
                    failed,
                    images,
                })
            }
            mm_detector::Verdict::Stop => {
                let error = stop_text(name);
                push_line(&mut output, &error);
                CallOutcome::Stop { output, error }
            }
        };
        let failed = outcome.failed();
        let text = outcome.output().to_string();
        let preview = match echo {
            Echo::Output => mm_types::fold::head(&text, self.settings.preview_lines),
            Echo::Diff(lines) if !failed => lines.clone(),
            Echo::Diff(_) | Echo::Nothing => Vec::new(),
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
        CallOutcome::Output(ToolOutput::fail(NOT_RUN))
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

/// Apply `text` to every string of `v`, keys of objects included.
fn redact_json(v: &mut Value, text: &impl Fn(&mut String)) {
    match v {
        Value::String(s) => text(s),
        Value::Array(items) => items.iter_mut().for_each(|i| redact_json(i, text)),
        Value::Object(map) => {
            let taken = std::mem::take(map);
            for (mut key, mut value) in taken {
                text(&mut key);
                redact_json(&mut value, text);
                map.insert(key, value);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
