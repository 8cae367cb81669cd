//! The walk `grep` and `glob` share: ripgrep's `ignore` walker, so both see
//! the files ripgrep would (`.gitignore`, `.ignore`, `.git/info/exclude`
//! and hidden files skipped; `.gitignore` read outside a git repository
//! too), minus every path a deny rule of the tool or of `read_file` names:
//! such a path is never opened, and a denied folder is not entered
//! (docs/permissions.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ignore::WalkBuilder;
use mm_policy::{Call, Verdict};

use crate::tool::{Permissions, Plan, ToolContext, ToolOutput, ToolRow};

/// The plan of a search: its pattern as the title, the folder or file
/// searched as the location.
pub(crate) fn plan(
    row: &ToolRow,
    pattern: String,
    path: Option<&str>,
    cwd: &Path,
) -> Result<Plan, String> {
    let root = root(cwd, path)?;
    let mut plan = row.plan(pattern);
    plan.locations = vec![root.display().to_string()];
    Ok(plan)
}

/// Run `work` (a walk) off the async threads; a cancelled turn sets the
/// flag `work` watches, so the walk stops at its next entry.
pub(crate) async fn run_blocking(
    cancel: &tokio_util::sync::CancellationToken,
    work: impl FnOnce(&AtomicBool) -> Result<String, String> + Send + 'static,
) -> ToolOutput {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let work = tokio::task::spawn_blocking(move || work(&stop2));
    tokio::select! {
        done = work => done.unwrap_or_else(|e| Err(format!("internal error: {e}"))).into(),
        _ = cancel.cancelled() => {
            stop.store(true, Ordering::Relaxed);
            ToolOutput::fail(crate::bash::CANCELLED)
        }
    }
}

/// A walk of `root` (a folder or a file) for tool `tool`, with the
/// session's deny rules as a filter.
pub(crate) fn builder(root: &Path, ctx: &ToolContext, tool: &'static str) -> WalkBuilder {
    let mut walk = WalkBuilder::new(root);
    walk.standard_filters(true)
        .require_git(false)
        .follow_links(false);
    if !ctx.permissions.policy().listing().deny.is_empty() {
        let permissions = ctx.permissions.clone();
        let cwd = ctx.cwd.clone();
        walk.filter_entry(move |entry| !denied(&permissions, &cwd, tool, entry.path()));
    }
    walk
}

/// Whether a deny rule of `tool` or of `read_file` names `path`: what a
/// rule keeps from the model's reading is not searched either.
pub(crate) fn denied(permissions: &Arc<Permissions>, cwd: &Path, tool: &str, path: &Path) -> bool {
    [tool, "read_file"].iter().any(|name| {
        matches!(
            permissions.policy().check(&Call {
                tool: name,
                subject: mm_policy::Subject::Path(path),
                changes: false,
                cwd,
            }),
            Verdict::Deny(_)
        )
    })
}

/// `path` as the model is shown it: relative to the working directory
/// when inside it, else absolute.
pub(crate) fn shown(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// The folder or file a call searches: `path` (relative to the working
/// directory) or the working directory itself; `Err` with the text the
/// model gets when it does not exist.
pub(crate) fn root(cwd: &Path, path: Option<&str>) -> Result<PathBuf, String> {
    let Some(path) = path.filter(|p| !p.trim().is_empty()) else {
        return Ok(cwd.to_path_buf());
    };
    let abs = crate::files::absolute(cwd, path);
    match std::fs::metadata(&abs) {
        Ok(_) => Ok(abs),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("{path} does not exist")),
        Err(e) => Err(format!("cannot read {path}: {e}")),
    }
}

/// The marker that ends a cut result: `[… N more matches left out; …]`.
pub(crate) fn left_out(n: u64, what: &str, narrow: &str) -> String {
    format!("[… {n} more {what} left out; narrow the {narrow}]")
}
