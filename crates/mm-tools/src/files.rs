//! The file tools: `read_file`, `write_file`, `edit_file`.
//!
//! Paths are relative to the call's `cwd` (absolute ones allowed) and every
//! message names the path as the model gave it. Writes are previewed in
//! `plan` (the diff), then `run` checks that the file did not change on disk
//! since, and replaces it atomically (temp file in the same folder, fsync,
//! rename) keeping its mode and, where allowed, its owner; a file with
//! several hard links is rewritten in place instead, so that every name
//! sees the change; a symlink stays a symlink and its target is written
//! (docs/design.md#preview-before-permission,
//! docs/design.md#symlinks-and-modes). The editing rules live in
//! `mm-fileedit`.
//!
//! Only regular files are read or written: a device, FIFO or socket is
//! refused before it is opened (a FIFO would block the call, a rename
//! would replace a device), and so is a file mm may not write in place
//! (a rename would get round its mode).
//!
//! Numbers and booleans in the arguments are read leniently (`"2"`,
//! `"true"`), as `lsp` reads them.

mod disk;
mod edit;
mod read;
mod write;

pub use edit::EditFile;
pub use read::ReadFile;
pub use write::WriteFile;

use std::path::{Component, Path, PathBuf};

use mm_types::FileChange;
use serde::de::DeserializeOwned;

use crate::tool::{
    Described, Plan, Prepared as Planned, Subject, ToolContext, ToolOutput, invalid_args,
    text_field,
};
use disk::Pending;

/// What the model gets when the user refuses a write.
const REJECTED: &str = "[edit rejected by the user]";

/// Contents above this are left out of a previewed change
/// (docs/design.md#large-files-in-previews); `lsp rename` uses it too.
pub(crate) const PREVIEW_LIMIT: usize = 1 << 20;

fn missing(path: &str) -> String {
    format!("{path} does not exist. Create it with write_file")
}

fn is_directory(path: &str) -> String {
    format!("{path} is a directory")
}

fn not_utf8(path: &str) -> String {
    format!("{path} is not UTF-8 text; write_file and edit_file only write text")
}

/// A device, FIFO or socket: `tools` is who refuses ("read_file reads").
fn not_regular(path: &str, kind: &str, tools: &str) -> String {
    format!("{path} is {kind}, not a regular file; {tools} only regular files")
}

/// A file mm may not write in place is refused, never replaced by a rename.
fn read_only(path: &str, mode: u32) -> String {
    format!(
        "{path} is read-only (mode {mode:04o}); write_file and edit_file do not replace a file mm may not write"
    )
}

fn changed_on_disk(path: &str) -> String {
    format!("{path} changed on disk since it was read; read it again")
}

fn unchanged(path: &str) -> String {
    format!("{path} unchanged: the content is identical, nothing written")
}

fn io_failure(verb: &str, path: &str, err: &std::io::Error) -> String {
    format!("cannot {verb} {path}: {err}")
}

/// A headline, then the diff on the lines below (none when it is empty).
fn with_diff(headline: String, diff: &str) -> String {
    if diff.is_empty() {
        headline
    } else {
        format!("{headline}\n{diff}")
    }
}

/// Like [`crate::parse_args`] but deserialises from the borrowed value, so
/// a 50 MB `content` is copied once, not twice.
fn parse<T: DeserializeOwned>(tool: &str, args: &serde_json::Value) -> Result<T, String> {
    if !args.is_object() {
        return Err(invalid_args(tool, "the arguments are not a JSON object"));
    }
    T::deserialize(args).map_err(|e| invalid_args(tool, &e.to_string()))
}

/// The path the model gave, resolved against `cwd` and cleaned of `.` and
/// `..` (lexically: a symlink is followed only when the file is opened).
pub(crate) fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `Err` when the sandbox keeps mm from writing `path`: a file tool writes
/// only where a sandboxed command could, once every symlink on the path is
/// followed, a dangling one included.
fn may_write(ctx: &ToolContext, path: &str) -> Result<(), String> {
    ctx.permissions
        .sandbox()
        .may_write(&ctx.cwd, Path::new(path))
}

/// The file a write of `path` lands in, every symlink on the way followed
/// (a dangling last one too: the target is written, the link stays), and,
/// when a link takes it out of the working directory, that target: a write
/// there is never silent.
fn target_of(cwd: &Path, path: &str) -> Result<(PathBuf, Option<PathBuf>), String> {
    let real = mm_policy::sandbox::real_path(cwd, Path::new(path))
        .map_err(|e| io_failure("read", path, &e))?;
    let home = mm_policy::sandbox::real_path(Path::new("/"), cwd).unwrap_or_else(|_| cwd.into());
    let linked = real != absolute(&home, path);
    let away = (linked && !real.starts_with(&home)).then(|| real.clone());
    Ok((real, away))
}

/// A headline that says where a link took the write, if out of the
/// working directory.
fn headline_to(headline: String, path: &str, away: Option<&Path>) -> String {
    match away {
        None => headline,
        Some(real) => format!(
            "{headline}; {path} leads through a symlink to {}, outside the working directory",
            real.display()
        ),
    }
}

/// The absolute path a file tool's call names, for the permission rules.
fn path_subject(args: &serde_json::Value, ctx: &ToolContext) -> Subject {
    match text_field(args, "path") {
        Some(path) => Subject::Path(absolute(&ctx.cwd, path)),
        None => Subject::None,
    }
}

/// How a file tool's call is shown: the path as the model gave it (the
/// tool's name without one), the row's kind, and the absolute path as location.
fn describe_path(
    row: &crate::tool::ToolRow,
    args: &serde_json::Value,
    ctx: &ToolContext,
) -> Described {
    let kind = row.kind;
    match text_field(args, "path") {
        Some(path) => Described {
            title: path.to_string(),
            kind,
            locations: vec![absolute(&ctx.cwd, path).display().to_string()],
        },
        None => Described {
            title: row.name.to_string(),
            kind,
            locations: Vec::new(),
        },
    }
}

/// Replace the text file at `path` (symlinks followed) from `before` to
/// `after` with the writer of `write_file` and `edit_file`: only where the
/// sandbox lets a command write, not when it changed since `before` was
/// read, atomically (in place for a file with hard links), its mode and
/// owner kept. `shown` is the path as messages give it. For the other
/// tools that change files (an `lsp` rename).
pub(crate) fn rewrite(
    ctx: &ToolContext,
    path: &Path,
    before: &str,
    after: &str,
    shown: &str,
) -> Result<(), String> {
    ctx.permissions.sandbox().may_write(&ctx.cwd, path)?;
    let target =
        mm_policy::sandbox::real_path(&ctx.cwd, path).map_err(|e| io_failure("read", shown, &e))?;
    let pending = Pending {
        target,
        before: Some(before.as_bytes().to_vec()),
        after: disk::Content::Whole(after.to_string()),
        kept: None,
        output: String::new(),
    };
    disk::commit(pending, shown).map(drop)
}

/// The change of a file over [`PREVIEW_LIMIT`]: the diff and a line count,
/// no contents.
fn large_change(abs: &Path, lines: usize, diff: &str) -> FileChange {
    FileChange {
        path: abs.display().to_string(),
        old_text: None,
        new_text: None,
        diff: diff.to_string(),
        too_large: true,
        lines,
    }
}

/// The change a front end shows while asking, without the texts past
/// `PREVIEW_LIMIT` (docs/design.md#large-files-in-previews).
fn file_change(abs: &Path, old: Option<&str>, new: &str, diff: &str) -> FileChange {
    let too_large = old.map_or(0, str::len) > PREVIEW_LIMIT || new.len() > PREVIEW_LIMIT;
    if too_large {
        return large_change(abs, mm_fileedit::line_count(new), diff);
    }
    FileChange {
        path: abs.display().to_string(),
        old_text: old.map(str::to_string),
        new_text: Some(new.to_string()),
        diff: diff.to_string(),
        too_large: false,
        lines: mm_fileedit::line_count(new),
    }
}

/// What `plan` worked out for a write_file or edit_file call.
struct Prepared {
    abs: PathBuf,
    /// Where a symlink takes the write, when out of the working directory.
    away: Option<PathBuf>,
    change: Option<FileChange>,
    outcome: Outcome,
}

/// Either a write to make, or a text to answer without writing (identical
/// content, dry run).
pub(crate) enum Outcome {
    Text(String),
    Write { pending: Pending, shown: String },
}

/// The plan of a write: the row's kind (edit), permission asked only when something
/// will be written; the outcome travels to `run` in the state. A write a
/// link takes out of the working directory names its target in the title
/// and as location, so the user sees it before allowing it.
fn write_plan(row: &crate::tool::ToolRow, title: String, prepared: Prepared) -> Plan {
    let writes = matches!(prepared.outcome, Outcome::Write { .. });
    let (title, location) = match &prepared.away {
        Some(real) => (format!("{title} → {}", real.display()), real),
        None => (title, &prepared.abs),
    };
    Plan {
        title,
        kind: row.kind,
        locations: vec![location.display().to_string()],
        change: prepared.change,
        rejection: row.rejection.filter(|_| writes),
        state: Some(Planned::Write(prepared.outcome)),
    }
}

/// The run of write_file and edit_file alike: what their plan prepared,
/// the sandbox asked again about the very file to write (a folder on its
/// way may have become a link while the user was asked).
async fn run_write(plan: Plan, ctx: &ToolContext) -> ToolOutput {
    match plan.state {
        Some(Planned::Write(Outcome::Text(text))) => ToolOutput::ok(text),
        Some(Planned::Write(Outcome::Write { pending, shown })) => {
            let sandbox = ctx.permissions.sandbox();
            if let Err(text) = sandbox.may_write_as(&ctx.cwd, &pending.target, &shown) {
                return ToolOutput::fail(text);
            }
            blocking(move || disk::commit(pending, &shown)).await.into()
        }
        // Only a plan of this tool reaches its run (the toolbox holds it).
        _ => ToolOutput::fail("internal error: the write was not planned"),
    }
}

/// Run blocking file work off the async threads; a panic there becomes text.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(format!("internal error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_cleans_dots_lexically() {
        let cwd = Path::new("/work/p");
        assert_eq!(absolute(cwd, "a/./b"), PathBuf::from("/work/p/a/b"));
        assert_eq!(absolute(cwd, "../q/x"), PathBuf::from("/work/q/x"));
        assert_eq!(absolute(cwd, "/etc/hosts"), PathBuf::from("/etc/hosts"));
    }

    #[test]
    fn file_change_leaves_big_contents_out() {
        let big = "x\n".repeat(PREVIEW_LIMIT);
        let c = file_change(Path::new("/f"), Some("a\n"), &big, "@@");
        assert!(c.too_large);
        assert_eq!((c.old_text, c.new_text), (None, None));
        assert_eq!(c.lines, PREVIEW_LIMIT);
        let c = file_change(Path::new("/f"), None, "a\nb\n", "@@");
        assert!(!c.too_large);
        assert_eq!((c.old_text, c.new_text.as_deref()), (None, Some("a\nb\n")));
        assert_eq!(c.lines, 2);
    }
}
