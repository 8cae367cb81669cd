//! `read_file`: lines of a text file, optionally a range, optionally
//! numbered, cut to `maxOutput` on whole lines with a marker that says how
//! to read on (tools-details.md).
//!
//! Key values are redacted from the file's text before the lines are
//! picked and cut (decisions.md 3), so no part of a key reaches the model.
//!
//! `start` past the last line answers
//! `start (S) is past the end of <path> (N lines)`, as a failure.

use std::fs;
use std::io;

use futures::future::BoxFuture;
use mm_ui::ToolKind;
use serde::{Deserialize, Deserializer};

use super::{absolute, blocking, describe_path, io_failure, is_directory, missing, parse};
use crate::bash::redacted;
use crate::lenient;
use crate::tool::{Described, Plan, Tool, ToolContext, ToolOutput, ToolSpec, invalid_args};

const NAME: &str = "read_file";

/// The `read_file` tool. Reads only: no permission, kind `read`.
pub struct ReadFile {
    max_output: usize,
    secrets: Vec<String>,
}

impl ReadFile {
    /// `max_output`: the `maxOutput` setting, in characters.
    pub fn new(max_output: usize) -> Self {
        ReadFile {
            max_output,
            secrets: Vec::new(),
        }
    }

    /// Key values to replace by `[redacted]` before the text is cut
    /// (decisions.md 3): give it the toolbox's secrets.
    pub fn with_secrets(mut self, secrets: &[String]) -> Self {
        self.secrets = secrets.to_vec();
        self
    }
}

fn line_number<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    lenient::u64_field(d, "a line number")
}

#[derive(Deserialize)]
struct Args {
    path: String,
    #[serde(default, deserialize_with = "line_number")]
    start: u64,
    #[serde(default, deserialize_with = "line_number")]
    end: u64,
    #[serde(default, deserialize_with = "lenient::bool_field")]
    numbered: bool,
}

impl Args {
    fn parse(args: &serde_json::Value) -> Result<Args, String> {
        let a: Args = parse(NAME, args)?;
        if a.path.is_empty() {
            return Err(invalid_args(NAME, "path is empty"));
        }
        let (start, end) = (a.start, a.end);
        if start > 0 && end > 0 && start > end {
            return Err(format!("start ({start}) is after end ({end})"));
        }
        Ok(a)
    }
}

impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "Read a text file. start and end (1-based, inclusive; 0 = the start or \
                          the end of the file) pick lines; numbered: true prefixes each line \
                          with its number and a tab. Long output is cut on whole lines and says \
                          how to read on."
                .to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory."},
                    "start": {"type": "integer", "minimum": 0, "default": 0, "description": "First line (1-based); 0 = from the start."},
                    "end": {"type": "integer", "minimum": 0, "default": 0, "description": "Last line (1-based, inclusive); 0 = to the end."},
                    "numbered": {"type": "boolean", "default": false, "description": "Prefix each line with its number."}
                },
                "required": ["path"]
            }),
        }
    }

    /// The path, kind `read`, the absolute path as location.
    fn describe(&self, args: &serde_json::Value, ctx: &ToolContext) -> Described {
        describe_path(NAME, ToolKind::Read, args, ctx)
    }

    fn plan<'a>(
        &'a self,
        args: &'a serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Plan, String>> {
        Box::pin(async move {
            let a = Args::parse(args)?;
            let abs = absolute(&ctx.cwd, &a.path);
            match fs::metadata(&abs) {
                Ok(m) if m.is_dir() => return Err(is_directory(&a.path)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(missing(&a.path)),
                Err(e) => return Err(io_failure("read", &a.path, &e)),
            }
            let mut plan = Plan::simple(a.path, ToolKind::Read);
            plan.locations = vec![abs.display().to_string()];
            Ok(plan)
        })
    }

    fn run<'a>(
        &'a self,
        args: &'a serde_json::Value,
        _plan: Plan,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let a = match Args::parse(args) {
                Ok(a) => a,
                Err(text) => return ToolOutput::fail(text),
            };
            let abs = absolute(&ctx.cwd, &a.path);
            let max = self.max_output;
            let secrets = self.secrets.clone();
            blocking(move || {
                let shown = a.path.as_str();
                let bytes = match fs::read(&abs) {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(missing(shown)),
                    Err(_) if abs.is_dir() => return Err(is_directory(shown)),
                    Err(e) => return Err(io_failure("read", shown, &e)),
                };
                let size = bytes.len();
                let text = String::from_utf8(bytes)
                    .map_err(|_| format!("{shown} is not a text file ({size} bytes)"))?;
                let text = redacted(&text, &secrets);
                render(
                    &text,
                    usize::try_from(a.start).unwrap_or(usize::MAX),
                    usize::try_from(a.end).unwrap_or(usize::MAX),
                    a.numbered,
                    max,
                    shown,
                )
            })
            .await
            .into()
        })
    }
}

/// The lines `start..=end` of `text` (0 = open), as the model sees them;
/// `Err` (a failure) when `start` is past the last line.
fn render(
    text: &str,
    start: usize,
    end: usize,
    numbered: bool,
    max: usize,
    shown: &str,
) -> Result<String, String> {
    let total = mm_fileedit::line_count(text);
    let first = start.max(1);
    if first > total.max(1) {
        return Err(format!(
            "start ({start}) is past the end of {shown} ({total} lines)"
        ));
    }
    if total == 0 {
        return Ok(String::new());
    }
    let last = if end == 0 { total } else { end.min(total) };
    let to_eof = last == total;
    // Pieces are built only until the budget is passed: reading the head of
    // a 50 MB file costs the head.
    let mut pieces: Vec<(String, usize)> = Vec::new();
    let mut chars = 0;
    let mut over = false;
    for (i, line) in text
        .split_inclusive('\n')
        .enumerate()
        .skip(first - 1)
        .take(last + 1 - first)
    {
        let n = i + 1;
        let (body, had_newline) = match line.strip_suffix('\n') {
            Some(b) => (b, true),
            None => (line, false),
        };
        // A giant line only ever shows its first `max` characters.
        let body = match body.char_indices().nth(max + 1) {
            Some((cut, _)) => &body[..cut],
            None => body,
        };
        let mut piece = if numbered {
            format!("{n}\t{body}")
        } else {
            body.to_string()
        };
        if had_newline && (n < last || to_eof) {
            piece.push('\n');
        }
        let count = piece.chars().count();
        chars += count;
        pieces.push((piece, count));
        if chars > max {
            over = true;
            break;
        }
    }
    if !over {
        return Ok(pieces.into_iter().map(|(p, _)| p).collect());
    }
    let marker = |b: usize| {
        format!("[… truncated: lines {first}–{b} of {total} shown; ask for start/end to read more]")
    };
    let (mut kept, mut k) = (0, 0);
    while k < pieces.len() {
        let with = kept + pieces[k].1;
        if with + marker(first + k).chars().count() > max {
            break;
        }
        kept = with;
        k += 1;
    }
    if k == 0 {
        let marker = format!("[… truncated inside line {first}; ask for start/end to read more]");
        let room = max.saturating_sub(marker.chars().count() + 1);
        let head: String = pieces[0].0.chars().take(room).collect();
        return Ok(format!("{head}\n{marker}"));
    }
    let mut out: String = pieces[..k].iter().map(|(p, _)| p.as_str()).collect();
    out.push_str(&marker(first + k - 1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str, start: usize, end: usize, numbered: bool) -> String {
        render(text, start, end, numbered, 10_000, "f").unwrap_or_else(|e| e)
    }

    #[test]
    fn final_newline_only_with_the_end_of_the_file() {
        let t = "a\nb\nc\n";
        assert_eq!(r(t, 0, 0, false), "a\nb\nc\n");
        assert_eq!(r(t, 1, 2, false), "a\nb");
        assert_eq!(r(t, 2, 0, false), "b\nc\n");
        assert_eq!(r(t, 3, 3, false), "c\n");
        assert_eq!(r("a\nb", 0, 0, false), "a\nb");
        assert_eq!(r(t, 2, 99, false), "b\nc\n");
    }

    #[test]
    fn numbered_lines() {
        assert_eq!(r("a\nb\nc\n", 2, 3, true), "2\tb\n3\tc\n");
        assert_eq!(r("x\ny", 0, 0, true), "1\tx\n2\ty");
    }

    #[test]
    fn empty_file_and_start_past_the_end() {
        assert_eq!(r("", 0, 0, false), "");
        assert_eq!(r("", 1, 0, false), "");
        assert_eq!(
            render("a\nb\n", 5, 0, false, 10_000, "f"),
            Err("start (5) is past the end of f (2 lines)".to_string())
        );
    }

    #[test]
    fn truncation_keeps_whole_lines_within_max() {
        let t: String = (1..=100).map(|i| format!("line {i:03}\n")).collect();
        let max = 200;
        let out = render(&t, 0, 0, false, max, "f").unwrap();
        // 14 lines of 9 characters and the 70-character marker: 196.
        let marker = "[… truncated: lines 1–14 of 100 shown; ask for start/end to read more]";
        let expected: String = (1..=14)
            .map(|i| format!("line {i:03}\n"))
            .collect::<String>()
            + marker;
        assert_eq!(out, expected);
        assert_eq!(out.chars().count(), 196);
    }

    #[test]
    fn truncation_inside_the_first_line() {
        let t = format!("{}\nsecond\n", "é".repeat(500));
        let out = render(&t, 0, 0, false, 200, "f").unwrap();
        let marker = "[… truncated inside line 1; ask for start/end to read more]";
        let head = "é".repeat(200 - marker.chars().count() - 1);
        assert_eq!(out, format!("{head}\n{marker}"));
        assert_eq!(out.chars().count(), 200);
    }

    #[test]
    fn truncation_of_a_range_names_its_lines() {
        let t: String = (1..=100).map(|i| format!("{i}\n")).collect();
        let out = render(&t, 50, 0, true, 200, "f").unwrap();
        assert!(out.starts_with("50\t50\n51\t51\n"), "{out}");
        assert!(
            out.ends_with(" of 100 shown; ask for start/end to read more]"),
            "{out}"
        );
        assert!(out.contains("[… truncated: lines 50–"), "{out}");
        assert!(out.chars().count() <= 200);
    }
}
