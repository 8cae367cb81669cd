//! `job_output` and `job_kill`: the model's side of background commands
//! (`bash` with `"background": true`; the jobs live in
//! [`crate::bash::jobs::Jobs`]).
//!
//! Texts: `[job N running for 12s]`, `[job N ended: exit status 0]` (with
//! `; no new output` inside the brackets when nothing arrived since the
//! last look), `[job N had already ended: …]`, and for an id no job has
//! `no job 7; jobs: 1 (running), 2 (ended)`.

use std::sync::Arc;

use serde::{Deserialize, Deserializer};

use crate::bash::jobs::Jobs;
use crate::tool::{Described, Plan, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, parse_args};

/// `job_output`: reads a job's new output; asks nothing, changes nothing.
pub const OUTPUT_ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed("job_output"),
    family: mm_types::ToolFamily::Command,
    kind: mm_types::ToolKind::Read,
    title_from: None,
    echoes: true,
    changes_files: false,
    rejection: None,
};

/// `job_kill`: ends a job the session started; asks nothing (starting it
/// did), changes no file.
pub const KILL_ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed("job_kill"),
    family: mm_types::ToolFamily::Command,
    kind: mm_types::ToolKind::Execute,
    title_from: None,
    echoes: true,
    changes_files: false,
    rejection: None,
};

/// A job number as models send it: `1`, `"1"`, `"%1"`, `"job 1"`.
fn job_id<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    let n = match &v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s
            .trim()
            .trim_start_matches("job")
            .trim()
            .trim_start_matches('%')
            .parse()
            .ok(),
        _ => None,
    };
    n.and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| serde::de::Error::custom(format!("expected a job number, got {v}")))
}

#[derive(Deserialize)]
struct Args {
    #[serde(deserialize_with = "job_id")]
    id: u32,
}

fn id_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "required": ["id"]
    })
}

/// The title of a call: `job 1`; the tool's name while the id is unreadable.
fn title(row: &ToolRow, args: &serde_json::Value) -> String {
    match Args::deserialize(args) {
        Ok(a) => format!("job {}", a.id),
        Err(_) => row.name.to_string(),
    }
}

fn plan_of(row: &ToolRow, args: &serde_json::Value) -> Result<Plan, String> {
    parse_args::<Args>(&row.name, args)?;
    Ok(row.plan(title(row, args)))
}

fn describe_call(row: &ToolRow, args: &serde_json::Value) -> Described {
    Described {
        title: title(row, args),
        kind: row.kind,
        locations: Vec::new(),
    }
}

/// What a job tool does with the job it names.
#[derive(Debug, Clone, Copy)]
enum Which {
    Output,
    Kill,
}

/// `job_output` or `job_kill`: one tool shape, two rows.
#[derive(Debug)]
pub struct JobTool {
    jobs: Arc<Jobs>,
    which: Which,
}

impl JobTool {
    /// `job_output` over the session's jobs.
    pub fn output(jobs: Arc<Jobs>) -> Self {
        JobTool {
            jobs,
            which: Which::Output,
        }
    }

    /// `job_kill` over the session's jobs.
    pub fn kill(jobs: Arc<Jobs>) -> Self {
        JobTool {
            jobs,
            which: Which::Kill,
        }
    }
}

#[async_trait::async_trait]
impl Tool for JobTool {
    fn row(&self) -> &ToolRow {
        match self.which {
            Which::Output => &OUTPUT_ROW,
            Which::Kill => &KILL_ROW,
        }
    }

    fn spec(&self) -> ToolSpec {
        let description = match self.which {
            Which::Output => "New output of a background job, and whether it still runs.",
            Which::Kill => "Stop a background job.",
        };
        ToolSpec {
            name: self.row().name.to_string(),
            description: description.to_string(),
            parameters: id_schema(),
        }
    }

    /// `job N`, live and on replay.
    fn describe(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Described {
        describe_call(self.row(), args)
    }

    async fn plan(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Result<Plan, String> {
        plan_of(self.row(), args)
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, _ctx: &ToolContext) -> ToolOutput {
        match (parse_args::<Args>(&self.row().name, args), self.which) {
            (Ok(a), Which::Output) => self.jobs.output(a.id),
            (Ok(a), Which::Kill) => self.jobs.kill(a.id).await,
            (Err(text), _) => ToolOutput::fail(text),
        }
    }
}
