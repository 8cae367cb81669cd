//! `edit_file`: exact replacements in an existing text file, all resolved
//! against the original (rules in `mm-fileedit`); `dry_run` shows the
//! result and writes nothing.

use std::path::Path;

use serde::Deserialize;

use super::disk::{self, Content, Existing, Pending};
use super::{
    Outcome, PREVIEW_LIMIT, Prepared, absolute, blocking, describe_path, file_change, headline_to,
    io_failure, is_directory, large_change, may_write, missing, not_utf8, parse, path_subject,
    run_write, target_of, unchanged, with_diff, write_plan,
};
use crate::tool::{
    Described, Plan, Subject, Tool, ToolContext, ToolOutput, ToolSpec, invalid_args,
};

const NAME: &str = "edit_file";

/// `edit_file`: what the tool is, for every consumer.
pub const ROW: crate::tool::ToolRow = crate::tool::ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::File,
    kind: mm_types::ToolKind::Edit,
    title_from: Some("path"),
    echoes: false,
    changes_files: true,
    rejection: Some(super::REJECTED),
};

/// The `edit_file` tool. Asks permission before writing, kind `edit`.
#[derive(Debug, Default)]
pub struct EditFile;

impl EditFile {
    /// The tool; it holds no state.
    pub fn new() -> Self {
        EditFile
    }
}

#[derive(Deserialize)]
struct EditArg {
    old: String,
    new: String,
}

#[derive(Deserialize)]
struct Args {
    path: String,
    edits: Vec<EditArg>,
    #[serde(default, deserialize_with = "crate::lenient::bool_field")]
    dry_run: bool,
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

fn prepare(cwd: &Path, a: Args) -> Result<Prepared, String> {
    let path = a.path;
    let abs = absolute(cwd, &path);
    let (target, away) = target_of(cwd, &path)?;
    let (bytes, kept) = match disk::load(&target).map_err(|e| io_failure("read", &path, &e))? {
        Existing::Missing => return Err(missing(&path)),
        Existing::Directory => return Err(is_directory(&path)),
        Existing::Refused(why) => return Err(why.text(&path)),
        Existing::File { bytes, kept } => (bytes, kept),
    };
    let original = String::from_utf8(bytes).map_err(|_| not_utf8(&path))?;
    let edits: Vec<mm_fileedit::Edit> = a
        .edits
        .into_iter()
        .map(|e| mm_fileedit::Edit::new(e.old, e.new))
        .collect();
    let n = edits.len();
    let applied = mm_fileedit::apply(&original, &edits)
        .map_err(|refusals| mm_fileedit::refusal_text(&refusals, &path, n))?;
    let diff = &applied.diff;
    let Some(first) = diff.first_line else {
        return Ok(Prepared {
            abs,
            away,
            change: None,
            outcome: Outcome::Text(unchanged(&path)),
        });
    };
    let headline = format!(
        "edited {path}: {n} edit(s), +{} -{} lines, first change at line {first}",
        diff.added, diff.deleted
    );
    let headline = headline_to(headline, &path, away.as_deref());
    let output = with_diff(headline, &diff.text);
    if a.dry_run {
        return Ok(Prepared {
            abs,
            away,
            change: None,
            outcome: Outcome::Text(format!("dry run: {output}")),
        });
    }
    // Only a small file's new text is built, for the preview; a big one is
    // left out of it anyway (docs/design.md#large-files-in-previews).
    let new_len = original.len()
        + applied
            .replacements
            .iter()
            .map(|r| r.text.len())
            .sum::<usize>()
        - applied
            .replacements
            .iter()
            .map(|r| r.range.len())
            .sum::<usize>();
    let change = if original.len().max(new_len) > PREVIEW_LIMIT {
        large_change(
            &abs,
            mm_fileedit::line_count(&original) + diff.added - diff.deleted,
            &diff.text,
        )
    } else {
        file_change(&abs, Some(&original), &applied.text(&original), &diff.text)
    };
    Ok(Prepared {
        abs,
        away,
        change: Some(change),
        outcome: Outcome::Write {
            pending: Pending {
                target,
                before: Some(original.into_bytes()),
                after: Content::Edited(applied),
                kept: Some(kept),
                output,
            },
            shown: path,
        },
    })
}

#[async_trait::async_trait]
impl Tool for EditFile {
    fn row(&self) -> &crate::tool::ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "Replace exact text in a file. Each old text must appear exactly once: \
                          add surrounding lines until it is unique. Edits apply to the original \
                          text and must not overlap; if one is refused, nothing is written."
                .to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path of an existing file."},
                    "edits": {
                        "type": "array",
                        "description": "Replacements, all resolved against the original file.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "old": {"type": "string", "description": "Exact text to find, present exactly once."},
                                "new": {"type": "string", "description": "Replacement; empty deletes the matched text."}
                            },
                            "required": ["old", "new"]
                        }
                    },
                    "dry_run": {"type": "boolean", "default": false, "description": "Report what would change, write nothing."}
                },
                "required": ["path", "edits"]
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
        if !a.dry_run {
            may_write(ctx, &a.path)?;
        }
        let title = a.path.clone();
        let cwd = ctx.cwd.clone();
        let prepared = blocking(move || prepare(&cwd, a)).await?;
        Ok(write_plan(&ROW, title, prepared))
    }

    async fn run(&self, _args: &serde_json::Value, plan: Plan, ctx: &ToolContext) -> ToolOutput {
        run_write(plan, ctx).await
    }
}
