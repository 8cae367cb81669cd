//! `exit_plan`: declared only in plan mode. The model presents its plan
//! (Markdown); the user reads it and chooses to leave plan mode (for
//! `allow` or `ask`) and go on, or to stay with a comment. Where nobody can
//! answer (`mm-repl -p`), the plan is the turn's answer and the turn ends.

use std::borrow::Cow;

use mm_types::{AgentMode, Event, PlanReview};
use serde::Deserialize;

use crate::tool::{Plan, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, parse_args};

/// `exit_plan`: changes no file and asks through its own review.
pub const ROW: ToolRow = ToolRow {
    name: Cow::Borrowed("exit_plan"),
    family: mm_types::ToolFamily::Other,
    kind: mm_types::ToolKind::Other,
    title_from: None,
    echoes: false,
    changes_files: false,
    rejection: None,
};

/// What the model reads after the user kept plan mode without a comment.
pub const STAY: &str = "The user keeps plan mode: nothing may change yet. Refine the plan and \
                        present it again with exit_plan.";

/// What the model reads when the plan became the turn's answer.
pub const ANSWERED: &str = "[the plan is the answer: the turn ends here]";

#[derive(Deserialize)]
struct Args {
    plan: String,
}

/// The `exit_plan` tool.
pub struct ExitPlan;

/// What the model reads after the user accepted the plan in `mode`.
pub fn accepted_text(mode: AgentMode) -> String {
    format!(
        "The user accepted the plan and left plan mode. {} Carry the plan out.",
        crate::mode_note(mode)
    )
}

#[async_trait::async_trait]
impl Tool for ExitPlan {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: ROW.name.to_string(),
            description: "Present your finished plan (Markdown) to the user, who may let you \
                          carry it out."
                .into(),
            parameters: serde_json::json!({"type": "object",
                "properties": {"plan": {"type": "string"}}, "required": ["plan"]}),
        }
    }

    fn declared_in(&self, mode: AgentMode) -> bool {
        mode == AgentMode::Plan
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let a: Args = parse_args(&ROW.name, args)?;
        if a.plan.trim().is_empty() {
            return Err(crate::tool::invalid_args(&ROW.name, "the plan is empty"));
        }
        if ctx.permissions.mode() != AgentMode::Plan {
            return Err(format!(
                "plan mode is off (mode: {}): carry the plan out",
                ctx.permissions.mode()
            ));
        }
        Ok(ROW.plan(ROW.name.to_string()))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let plan = match parse_args::<Args>(&ROW.name, args) {
            Ok(a) => a.plan,
            Err(text) => return ToolOutput::fail(text),
        };
        let review = tokio::select! {
            r = ctx.sink.review_plan(&plan) => r,
            _ = ctx.cancel.cancelled() => PlanReview::Cancelled,
        };
        match review {
            PlanReview::Proceed(mode) => {
                let mode = if mode == AgentMode::Plan {
                    AgentMode::Ask
                } else {
                    mode
                };
                ctx.permissions.set_mode(mode);
                ctx.sink.event(Event::Mode { mode });
                ToolOutput::ok(accepted_text(mode))
            }
            PlanReview::Stay(comment) => ToolOutput::ok(match comment {
                Some(c) if !c.trim().is_empty() => {
                    format!("{STAY}\nThe user says: {}", c.trim())
                }
                _ => STAY.to_owned(),
            }),
            PlanReview::Cancelled => {
                ctx.cancel.cancel();
                ToolOutput::fail(crate::NOT_RUN)
            }
            PlanReview::Unavailable => {
                ctx.permissions.end_turn_with(plan);
                ToolOutput::ok(ANSWERED)
            }
        }
    }
}
