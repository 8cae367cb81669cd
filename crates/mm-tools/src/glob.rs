//! `glob`: the project's files whose path matches a glob, newest first,
//! found with the walk `grep` uses (crate::walk: ignored and hidden files
//! left out, denied paths never listed).
//!
//! The pattern is matched against the path relative to the folder
//! searched; one without `/` matches the file name at any depth (as in
//! `.gitignore`): `*.rs` finds every Rust file, `src/*.rs` only those
//! directly in `src`, `**/test_*.py` those at any depth. Files with the
//! same modification time are in path order. Past the call's budget whole
//! paths stop and one line says how many were left out. Texts:
//! - `no files match "<pattern>" in <path>`
//! - `[… N more paths left out; narrow the pattern or path]`
//! - `invalid glob "<pattern>": <why>`

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkState;
use serde::Deserialize;

use crate::tool::{
    Plan, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, invalid_args, parse_args,
};
use crate::walk;

const NAME: &str = "glob";

/// `glob`: lists paths, changes nothing, asks nothing; a terminal shows
/// the first paths under it.
pub const ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::File,
    kind: mm_types::ToolKind::Search,
    title_from: Some("pattern"),
    echoes: true,
    changes_files: false,
    rejection: None,
};

/// The `glob` tool.
#[derive(Debug, Default)]
pub struct Glob;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

impl Args {
    fn parse(args: &serde_json::Value) -> Result<Args, String> {
        let a: Args = parse_args(NAME, args)?;
        if a.pattern.trim().is_empty() {
            return Err(invalid_args(NAME, "pattern is empty"));
        }
        Ok(a)
    }
}

#[async_trait::async_trait]
impl Tool for Glob {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "List files matching a glob (e.g. src/**/*.rs), newest first.".to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"}
                },
                "required": ["pattern"]
            }),
        }
    }

    /// The folder searched, so that path rules judge the call.
    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        crate::grep::search_subject(args, ctx)
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let a = Args::parse(args)?;
        walk::plan(&ROW, a.pattern, a.path.as_deref(), &ctx.cwd)
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let a = match Args::parse(args) {
            Ok(a) => a,
            Err(text) => return ToolOutput::fail(text),
        };
        let ctx2 = ctx.clone();
        walk::run_blocking(&ctx.cancel, move |stop| list(&a, &ctx2, stop)).await
    }
}

/// The whole listing of one call, off the async threads.
fn list(a: &Args, ctx: &ToolContext, stop: &AtomicBool) -> Result<String, String> {
    let root = walk::root(&ctx.cwd, a.path.as_deref())?;
    let pattern = a.pattern.trim();
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let anywhere = !pattern.contains('/');
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob \"{}\": {}", a.pattern, e.kind()))?
        .compile_matcher();
    let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    walk::builder(&root, ctx, NAME).build_parallel().run(|| {
        let (found, matcher, root) = (&found, &matcher, &root);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            let hit = if anywhere {
                path.file_name().is_some_and(|n| matcher.is_match(n))
            } else {
                path.strip_prefix(root)
                    .is_ok_and(|rel| matcher.is_match(rel))
            };
            if hit {
                let time = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                found.push((time, entry.into_path()));
            }
            WalkState::Continue
        })
    });
    if stop.load(Ordering::Relaxed) {
        return Err(crate::bash::CANCELLED.to_string());
    }
    let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    if found.is_empty() {
        let shown = a
            .path
            .as_deref()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or(".");
        return Ok(format!("no files match \"{}\" in {shown}", a.pattern));
    }
    found.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    let paths: Vec<String> = found
        .iter()
        .map(|(_, p)| walk::shown(&ctx.cwd, p))
        .collect();
    Ok(render(&paths, ctx.max_output))
}

/// One path a line, within `max` characters.
fn render(paths: &[String], max: usize) -> String {
    let room = max.saturating_sub(70);
    let mut out = String::new();
    let mut chars = 0;
    let mut shown = 0;
    for path in paths {
        let n = path.chars().count() + 1;
        if chars + n > room {
            break;
        }
        chars += n;
        shown += 1;
        out.push_str(path);
        out.push('\n');
    }
    let left = paths.len() - shown;
    if left > 0 {
        out.push_str(&walk::left_out(left as u64, "paths", "pattern or path"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cut_with_a_count() {
        let paths: Vec<String> = (0..100).map(|i| format!("src/file{i:03}.rs")).collect();
        let out = render(&paths, 300);
        assert!(out.chars().count() <= 300, "{out}");
        let shown = out.lines().filter(|l| l.starts_with("src/")).count();
        assert!(shown > 5, "{out}");
        assert!(
            out.ends_with(&format!(
                "[… {} more paths left out; narrow the pattern or path]",
                100 - shown
            )),
            "{out}"
        );
        assert_eq!(render(&paths[..2], 300), "src/file000.rs\nsrc/file001.rs\n");
    }
}
