//! `grep`: the lines of the project's files that match a regular
//! expression, searched in-process with ripgrep's own crates (`ignore`
//! walks, `grep-searcher` reads and skips binary files, `grep-regex`
//! matches), so the files searched are those ripgrep would search
//! (crate::walk).
//!
//! Output: `path:N: text` for a matching line, `path-N- text` for a line of
//! context and `--` between blocks that do not touch; files sorted by
//! path, lines in file order. Lines are redacted before anything is cut
//! (docs/design.md#keys-stay-out-of-tools) and shown up to
//! [`LINE_LIMIT`] characters. Past the call's budget (`maxOutput`, or less
//! on a small window) whole lines stop and one line says how many matching
//! lines were left out. Texts besides the lines:
//! - `no matches for "<pattern>" in <path>`
//! - `[… N more matches left out; narrow the pattern, path or glob]`
//! - `invalid pattern: <why>` / `invalid glob "<glob>": <why>`
//! - `<path> does not exist`

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::{Deserialize, Deserializer};

use crate::lenient;
use crate::tool::{
    Plan, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, invalid_args, parse_args,
};
use crate::walk;

const NAME: &str = "grep";

/// `grep`: reads only, never asks, titled by its pattern; a terminal shows
/// the first matches under it.
pub const ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::File,
    kind: mm_types::ToolKind::Search,
    title_from: Some("pattern"),
    echoes: true,
    changes_files: false,
    rejection: None,
};

/// The most characters of one line shown; a longer line (minified code)
/// ends with `…`.
pub const LINE_LIMIT: usize = 300;

/// The most lines of context asked for around a match.
const MAX_CONTEXT: u64 = 5;

/// Room kept at the end of a full result for the left-out line.
const MARKER_ROOM: usize = 90;

/// The `grep` tool.
#[derive(Debug, Default)]
pub struct Grep {
    secrets: Vec<String>,
}

impl Grep {
    /// The tool; its output is cut to the call's `max_output`.
    pub fn new() -> Self {
        Grep::default()
    }

    /// Key values to replace by `[redacted]` before lines are cut: give it
    /// the toolbox's secrets.
    pub fn with_secrets(mut self, secrets: &[String]) -> Self {
        self.secrets = secrets.to_vec();
        self
    }
}

fn context_lines<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    lenient::u64_field(d, "a number of lines (0 to 5)")
}

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default, deserialize_with = "lenient::bool_field")]
    ignore_case: bool,
    #[serde(default, deserialize_with = "context_lines")]
    context: u64,
}

impl Args {
    fn parse(args: &serde_json::Value) -> Result<Args, String> {
        let a: Args = parse_args(NAME, args)?;
        if a.pattern.is_empty() {
            return Err(invalid_args(NAME, "pattern is empty"));
        }
        Ok(a)
    }
}

#[async_trait::async_trait]
impl Tool for Grep {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "Search files for a regex (ripgrep syntax); skips ignored and binary \
                          files. path: file or folder; glob: e.g. *.rs; context: lines around."
                .to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"},
                    "glob": {"type": "string"},
                    "ignore_case": {"type": "boolean"},
                    "context": {"type": "integer", "maximum": 5}
                },
                "required": ["pattern"]
            }),
        }
    }

    /// The folder or file searched, so that path rules judge the call.
    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        search_subject(args, ctx)
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
        let secrets = self.secrets.clone();
        walk::run_blocking(&ctx.cancel, move |stop| search(&a, &ctx2, &secrets, stop)).await
    }
}

/// The folder or file a `grep` or `glob` call names (the working directory
/// without one), for the permission rules.
pub(crate) fn search_subject(args: &serde_json::Value, ctx: &ToolContext) -> Subject {
    match crate::tool::text_field(args, "path") {
        Some(path) => Subject::Path(crate::files::absolute(&ctx.cwd, path)),
        None => Subject::Path(ctx.cwd.clone()),
    }
}

/// One line kept of a file.
enum Kept {
    Match(u64, String),
    Context(u64, String),
    Break,
}

/// What one file gave.
struct FileHits {
    path: PathBuf,
    lines: Vec<Kept>,
    /// Matching lines, kept or not.
    matches: u64,
}

/// Collects one file's lines: all matches counted, lines kept only while
/// they could still be shown; a file found binary is dropped whole.
struct Collect<'a> {
    lines: Vec<Kept>,
    matches: u64,
    kept_chars: usize,
    room: usize,
    binary: bool,
    secrets: &'a [String],
    stop: &'a AtomicBool,
}

impl Collect<'_> {
    fn keep(&mut self, bytes: &[u8]) -> Option<String> {
        if self.kept_chars > self.room {
            return None;
        }
        let text = line_text(bytes, self.secrets);
        self.kept_chars += text.chars().count() + 16;
        Some(text)
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        let n = m.line_number().unwrap_or(0);
        if let Some(text) = self.keep(m.bytes()) {
            self.lines.push(Kept::Match(n, text));
        }
        Ok(!self.stop.load(Ordering::Relaxed))
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        let n = c.line_number().unwrap_or(0);
        if let Some(text) = self.keep(c.bytes()) {
            self.lines.push(Kept::Context(n, text));
        }
        Ok(!self.stop.load(Ordering::Relaxed))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.kept_chars <= self.room {
            self.lines.push(Kept::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as shown: without its line ending, decoded lossily, redacted,
/// at most [`LINE_LIMIT`] characters.
fn line_text(bytes: &[u8], secrets: &[String]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    let text = mm_redact::redacted(&text, secrets);
    match text.char_indices().nth(LINE_LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

/// The whole search of one call, off the async threads.
fn search(
    a: &Args,
    ctx: &ToolContext,
    secrets: &[String],
    stop: &AtomicBool,
) -> Result<String, String> {
    let root = walk::root(&ctx.cwd, a.path.as_deref())?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(a.ignore_case)
        .line_terminator(Some(b'\n'))
        .build(&a.pattern)
        .map_err(|e| format!("invalid pattern: {}", one_line(&e.to_string())))?;
    let context = usize::try_from(a.context.min(MAX_CONTEXT)).unwrap_or(0);
    let mut walker = walk::builder(&root, ctx, NAME);
    if let Some(glob) = a.glob.as_deref().filter(|g| !g.trim().is_empty()) {
        let mut globs = OverrideBuilder::new(&root);
        let bad =
            |e: ignore::Error| format!("invalid glob \"{glob}\": {}", one_line(&e.to_string()));
        globs.add(glob).map_err(bad)?;
        walker.overrides(globs.build().map_err(bad)?);
    }
    let room = ctx.max_output.saturating_sub(MARKER_ROOM);
    let found: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    walker.build_parallel().run(|| {
        let matcher = matcher.clone();
        let found = &found;
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .build();
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
            let mut sink = Collect {
                lines: Vec::new(),
                matches: 0,
                kept_chars: 0,
                room,
                binary: false,
                secrets,
                stop,
            };
            if searcher
                .search_path(&matcher, entry.path(), &mut sink)
                .is_ok()
                && sink.matches > 0
                && !sink.binary
            {
                let hits = FileHits {
                    path: entry.into_path(),
                    lines: sink.lines,
                    matches: sink.matches,
                };
                found.lock().unwrap_or_else(|e| e.into_inner()).push(hits);
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
        return Ok(format!("no matches for \"{}\" in {shown}", a.pattern));
    }
    found.sort_by(|x, y| x.path.cmp(&y.path));
    Ok(render(&ctx.cwd, &found, context > 0, ctx.max_output))
}

/// The result of the files found, sorted, within `max` characters.
fn render(cwd: &Path, found: &[FileHits], separate: bool, max: usize) -> String {
    let room = max.saturating_sub(MARKER_ROOM);
    let total: u64 = found.iter().map(|f| f.matches).sum();
    let mut out = String::new();
    let mut chars = 0usize;
    let mut shown_matches = 0u64;
    'files: for (i, file) in found.iter().enumerate() {
        let path = walk::shown(cwd, &file.path);
        let mut lines: Vec<(String, bool)> = Vec::new();
        if separate && i > 0 {
            lines.push(("--".to_string(), false));
        }
        for kept in &file.lines {
            lines.push(match kept {
                Kept::Match(n, text) => (format!("{path}:{n}: {text}"), true),
                Kept::Context(n, text) => (format!("{path}-{n}- {text}"), false),
                Kept::Break => ("--".to_string(), false),
            });
        }
        for (line, is_match) in lines {
            let n = line.chars().count() + 1;
            if chars + n > room {
                break 'files;
            }
            chars += n;
            out.push_str(&line);
            out.push('\n');
            shown_matches += u64::from(is_match);
        }
    }
    let left = total - shown_matches;
    if left > 0 {
        out.push_str(&walk::left_out(left, "matches", "pattern, path or glob"));
    }
    out
}

/// An error text on one line (the regex parser's are drawn over several).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(path: &str, n: u64) -> FileHits {
        FileHits {
            path: PathBuf::from("/p").join(path),
            lines: (1..=n).map(|i| Kept::Match(i, format!("m{i}"))).collect(),
            matches: n,
        }
    }

    #[test]
    fn lines_are_grouped_per_file_and_cut_with_a_count() {
        let found = [hits("a.rs", 2), hits("b/c.rs", 1)];
        assert_eq!(
            render(Path::new("/p"), &found, false, 1000),
            "a.rs:1: m1\na.rs:2: m2\nb/c.rs:1: m1\n"
        );
        let found = [hits("a.rs", 100)];
        let out = render(Path::new("/p"), &found, false, 200);
        assert!(out.chars().count() <= 200, "{out}");
        assert!(out.starts_with("a.rs:1: m1\n"), "{out}");
        let shown = out.lines().filter(|l| l.starts_with("a.rs:")).count() as u64;
        assert!(
            out.ends_with(&format!(
                "[… {} more matches left out; narrow the pattern, path or glob]",
                100 - shown
            )),
            "{out}"
        );
    }

    #[test]
    fn long_lines_are_cut_and_line_endings_dropped() {
        assert_eq!(line_text(b"abc\r\n", &[]), "abc");
        let long = "x".repeat(LINE_LIMIT + 10);
        assert_eq!(
            line_text(long.as_bytes(), &[]),
            format!("{}…", "x".repeat(LINE_LIMIT))
        );
        assert_eq!(
            line_text(b"key=sk-123\n", &["sk-123".to_string()]),
            "key=[redacted]"
        );
    }
}
