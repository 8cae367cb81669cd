//! The turn's side of the user's hooks (docs/reference/hooks.md): built
//! from the settings with the permissions, and run where only the turn
//! knows the moment: a question submitted, a session's first question,
//! an answer that would end the turn, a summary about to be written, the
//! end of mm. The toolbox runs the call hooks itself.

use std::sync::Arc;

use mm_config::Config;
use mm_hooks::{CommandSetting, Decision, GroupSetting, HookEvent, Hooks};
use mm_ui::{Event, Sink};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::Agent;
use crate::agent::AgentError;

/// How many times `Stop` hooks may send the model on within one turn.
pub(crate) const STOP_LIMIT: usize = 3;

/// The hooks of `config`, checked: an unknown event, a matcher that is
/// not a regular expression or a type other than `command` stops mm.
pub(crate) fn build(config: &Config) -> Result<Hooks, AgentError> {
    let groups: Vec<GroupSetting> = config
        .hooks
        .iter()
        .flat_map(|(event, groups)| {
            groups.iter().map(move |g| GroupSetting {
                event: event.clone(),
                matcher: g.matcher.clone(),
                hooks: g
                    .hooks
                    .iter()
                    .map(|h| CommandSetting {
                        kind: h.kind.clone(),
                        command: h.command.clone(),
                        timeout: h.timeout,
                    })
                    .collect(),
            })
        })
        .collect();
    Ok(Hooks::new(&groups)?)
}

impl Agent {
    fn hooks(&self) -> Arc<Hooks> {
        self.permissions_ref().hooks().clone()
    }

    /// `/hooks`: a line per configured hook.
    pub fn hook_lines(&self) -> Vec<String> {
        self.hooks().listing()
    }

    /// Run the hooks of `event`, the session they are about named, each
    /// run shown in one line.
    pub(crate) async fn run_hooks(
        &self,
        event: HookEvent,
        fields: Value,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) -> Decision {
        let hooks = self.hooks();
        if !hooks.has(event) {
            return Decision::default();
        }
        if let Some((id, path)) = self.session_file() {
            hooks.set_session(&id, &path);
        }
        let decision = hooks.run(event, None, self.cwd(), fields, cancel).await;
        for line in &decision.lines {
            sink.event(Event::Notice { text: line.clone() });
        }
        decision
    }

    /// Before a question goes to the model: `SessionStart` for a
    /// session's first, then `UserPromptSubmit`. `Ok(context)` to add to
    /// the question; `Err(why)` when a hook dropped it.
    pub(crate) async fn question_hooks(
        &mut self,
        question: &str,
        first: bool,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let mut context = Vec::new();
        if first {
            let source = if self.history_is_empty() {
                "startup"
            } else {
                "resume"
            };
            let d = self
                .run_hooks(
                    HookEvent::SessionStart,
                    json!({"source": source}),
                    sink,
                    cancel,
                )
                .await;
            context.push(d.context);
        }
        let d = self
            .run_hooks(
                HookEvent::UserPromptSubmit,
                json!({"prompt": question}),
                sink,
                cancel,
            )
            .await;
        if let Some(why) = d.block {
            return Err(why);
        }
        context.push(d.context);
        context.retain(|c| !c.is_empty());
        Ok(context.join("\n"))
    }

    /// When the model answered without calls: `Some(instruction)` when a
    /// `Stop` hook wants it to go on (`active`: a hook already did).
    pub(crate) async fn stop_hooks(
        &self,
        active: bool,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) -> Option<String> {
        self.run_hooks(
            HookEvent::Stop,
            json!({"stop_reason": "end_turn", "stop_hook_active": active}),
            sink,
            cancel,
        )
        .await
        .block
    }

    /// Before a summary: `PreCompact` (`manual` for `/compact`).
    pub(crate) async fn compact_hooks(
        &self,
        manual: bool,
        sink: &Arc<dyn Sink>,
        cancel: &CancellationToken,
    ) {
        let trigger = if manual { "manual" } else { "auto" };
        self.run_hooks(
            HookEvent::PreCompact,
            json!({"trigger": trigger}),
            sink,
            cancel,
        )
        .await;
    }

    /// At the end: `SessionEnd`, its lines to nobody (mm is leaving).
    pub(crate) async fn end_hooks(&self) {
        let hooks = self.hooks();
        if !hooks.has(HookEvent::SessionEnd) {
            return;
        }
        if let Some((id, path)) = self.session_file() {
            hooks.set_session(&id, &path);
        }
        hooks
            .run(
                HookEvent::SessionEnd,
                None,
                self.cwd(),
                json!({"reason": "exit"}),
                &CancellationToken::new(),
            )
            .await;
    }
}
