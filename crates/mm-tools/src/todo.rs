//! `todo`: the model's checklist of a multi-step task. The model sends the
//! whole list each time; front ends draw it ([`Event::Plan`]) and the
//! agent keeps the last one in the session file. The model gets a short
//! confirmation, not its list back: it has the list in its own call.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use mm_types::{Event, PlanItem, PlanStatus};
use serde::Deserialize;

use crate::tool::{Plan, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, parse_args};

/// `todo`: changes nothing, asks nothing, echoes nothing.
pub const ROW: ToolRow = ToolRow {
    name: Cow::Borrowed("todo"),
    family: mm_types::ToolFamily::Other,
    kind: mm_types::ToolKind::Other,
    title_from: None,
    echoes: false,
    changes_files: false,
    rejection: None,
};

#[derive(Deserialize)]
struct Args {
    items: Vec<PlanItem>,
}

/// The session's last checklist, shared with the agent that saves it.
pub type Checklist = Arc<Mutex<Vec<PlanItem>>>;

/// The `todo` tool, writing into the session's checklist.
pub struct Todo {
    list: Checklist,
}

impl Todo {
    /// A tool that keeps its list in `list`.
    pub fn new(list: Checklist) -> Todo {
        Todo { list }
    }
}

/// `checklist updated: 4 items, 1 done, 1 in progress`.
fn confirmation(items: &[PlanItem]) -> String {
    let count = |s: PlanStatus| items.iter().filter(|i| i.status == s).count();
    let noun = if items.len() == 1 { "item" } else { "items" };
    format!(
        "checklist updated: {} {noun}, {} done, {} in progress",
        items.len(),
        count(PlanStatus::Completed),
        count(PlanStatus::InProgress)
    )
}

#[async_trait::async_trait]
impl Tool for Todo {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: ROW.name.to_string(),
            description: "Keep a checklist of a multi-step task; send the whole list on each \
                          change."
                .into(),
            parameters: serde_json::json!({"type": "object", "properties": {"items": {
                "type": "array", "items": {"type": "object", "properties": {
                    "text": {"type": "string"},
                    "status": {"enum": ["pending", "in_progress", "completed"]}},
                    "required": ["text", "status"]}}},
                "required": ["items"]}),
        }
    }

    async fn plan(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Result<Plan, String> {
        let a: Args = parse_args(&ROW.name, args)?;
        if a.items.iter().any(|i| i.text.trim().is_empty()) {
            return Err(crate::tool::invalid_args(
                &ROW.name,
                "an item's text is empty",
            ));
        }
        Ok(ROW.plan(ROW.name.to_string()))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let items = match parse_args::<Args>(&ROW.name, args) {
            Ok(a) => a.items,
            Err(text) => return ToolOutput::fail(text),
        };
        *self.list.lock().unwrap_or_else(|e| e.into_inner()) = items.clone();
        let text = confirmation(&items);
        ctx.sink.event(Event::Plan { items });
        ToolOutput::ok(text)
    }
}
