//! The walk `grep` and `glob` share: ripgrep's `ignore` walker, so both see
//! the files ripgrep would (`.gitignore`, `.ignore`, `.git/info/exclude`
//! and hidden files skipped; `.gitignore` read outside a git repository
//! too), minus every path a deny rule of the tool or of `read_file` names:
//! such a path is never opened, and a denied folder is not entered
//! (docs/permissions.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use mm_policy::{Call, Verdict};

use crate::tool::{Permissions, ToolContext};

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
