//! `/mode [allow|ask|plan]`: show the mode, or switch it.

use mm_ui::AgentMode;

use super::{Call, Outcome};
use crate::Agent;

/// `/mode`: the mode in force and what it means; `/mode NAME` switches.
pub(super) fn mode(agent: &mut Agent, call: &Call<'_>) -> Outcome {
    let Some(name) = call.argument() else {
        return Outcome::Say(line(agent.mode()));
    };
    match AgentMode::from_name(name) {
        Some(mode) => {
            agent.set_mode(mode);
            Outcome::Say(line(mode))
        }
        None => Outcome::Error(format!(
            "unknown mode {name:?}; the modes are allow, ask and plan"
        )),
    }
}

/// `mode: plan — read-only: plans, changes nothing`.
fn line(mode: AgentMode) -> String {
    format!("mode: {} — {}", mode.name(), mode.meaning())
}
