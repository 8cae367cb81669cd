//! `write_file`: create or entirely replace a file with the content given,
//! verbatim; answers a headline and the diff.

use std::path::Path;

use serde::Deserialize;

use super::disk::{self, Content, Existing, Pending};
use super::{
    Outcome, Prepared, absolute, blocking, describe_path, file_change, headline_to, io_failure,
    is_directory, may_write, not_utf8, parse, path_subject, run_write, target_of, unchanged,
    with_diff, write_plan,
};
use crate::tool::{
    Described, Plan, Subject, Tool, ToolContext, ToolOutput, ToolSpec, invalid_args,
};

const NAME: &str = "write_file";

/// `write_file`: what the tool is, for every consumer.
pub const ROW: crate::tool::ToolRow = crate::tool::ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::File,
    kind: mm_types::ToolKind::Edit,
    title_from: Some("path"),
    echoes: false,
    changes_files: true,
    rejection: Some(super::REJECTED),
};

/// The `write_file` tool. Asks permission before writing, kind `edit`.
#[derive(Debug, Default)]
pub struct WriteFile;

impl WriteFile {
    /// The tool; it holds no state.
    pub fn new() -> Self {
        WriteFile
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

impl Args {
    fn parse(args: &serde_json::Value) -> Result<Args, String> {
        let a: Args = parse(NAME, args)?;
        if a.path.is_empty() {
            return Err(invalid_args(NAME, "path is empty"));
        }
        Ok(a)
    }
}

/// Read what is there and work out the headline, the diff and the write.
fn prepare(cwd: &Path, a: Args) -> Result<Prepared, String> {
    let Args { path, content } = a;
    let abs = absolute(cwd, &path);
    let (target, away) = target_of(cwd, &path)?;
    let existing = disk::load(&target).map_err(|e| io_failure("read", &path, &e))?;
    let (kept, old) = match existing {
        Existing::Directory => return Err(is_directory(&path)),
        Existing::Refused(why) => return Err(why.text(&path)),
        Existing::Missing => (None, None),
        Existing::File { bytes, kept } => {
            let old = String::from_utf8(bytes).map_err(|_| not_utf8(&path))?;
            (Some(kept), Some(old))
        }
    };
    if old.as_deref() == Some(content.as_str()) {
        return Ok(Prepared {
            abs,
            away,
            change: None,
            outcome: Outcome::Text(unchanged(&path)),
        });
    }
    let diff = mm_fileedit::diff(old.as_deref().unwrap_or(""), &content);
    let headline = match &old {
        None => format!(
            "created {path} ({} lines)",
            mm_fileedit::line_count(&content)
        ),
        Some(_) => format!("wrote {path}: +{} -{} lines", diff.added, diff.deleted),
    };
    let headline = headline_to(headline, &path, away.as_deref());
    let change = file_change(&abs, old.as_deref(), &content, &diff.text);
    let output = with_diff(headline, &diff.text);
    let before = old.map(String::into_bytes);
    Ok(Prepared {
        abs,
        away,
        change: Some(change),
        outcome: Outcome::Write {
            pending: Pending {
                target,
                before,
                after: Content::Whole(content),
                kept,
                output,
            },
            shown: path,
        },
    })
}

#[async_trait::async_trait]
impl Tool for WriteFile {
    fn row(&self) -> &crate::tool::ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "Create a file or replace all of it; answers the diff.".to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory; parent directories are created."},
                    "content": {"type": "string", "description": "The whole content of the file."}
                },
                "required": ["path", "content"]
            }),
        }
    }

    /// The path, kind `edit`, the absolute path as location.
    fn describe(&self, args: &serde_json::Value, ctx: &ToolContext) -> Described {
        describe_path(&ROW, args, ctx)
    }

    /// The path.
    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        path_subject(args, ctx)
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let a = Args::parse(args)?;
        may_write(ctx, &a.path)?;
        let title = a.path.clone();
        let cwd = ctx.cwd.clone();
        let prepared = blocking(move || prepare(&cwd, a)).await?;
        Ok(write_plan(&ROW, title, prepared))
    }

    async fn run(&self, _args: &serde_json::Value, plan: Plan, ctx: &ToolContext) -> ToolOutput {
        run_write(plan, ctx).await
    }
}
