//! `/export [path]`: the conversation as Markdown, to share or keep: each
//! question, each answer, each tool call with its input and its output
//! (folded: a long one shows its first lines), and the change each edit
//! made as a diff.

use std::path::{Path, PathBuf};

use mm_engine::{Message, ToolCall};
use serde_json::Value;

use super::fenced;
use crate::compact::SUMMARY_PREFIX;

/// How many lines of a tool's output the export shows before folding.
pub const OUTPUT_LINES: usize = 60;

/// What the export's heading says about the session.
#[derive(Debug, Clone)]
pub struct Heading<'a> {
    /// The session's title; empty when it has none.
    pub title: &'a str,
    /// The session's id, when it was saved.
    pub id: Option<&'a str>,
    /// `PROVIDER/MODEL`.
    pub model: &'a str,
    /// The project's folder.
    pub cwd: &'a Path,
}

/// The Markdown of `history` under `heading`.
pub fn markdown(heading: &Heading<'_>, history: &[Message]) -> String {
    let title = if heading.title.is_empty() {
        "mm session"
    } else {
        heading.title
    };
    let mut out = format!("# {}\n\n", one_line(title));
    if let Some(id) = heading.id {
        out.push_str(&format!("- session: `{id}`\n"));
    }
    out.push_str(&format!("- model: `{}`\n", heading.model));
    out.push_str(&format!("- folder: `{}`\n", heading.cwd.display()));
    let mut asked = 0;
    // A reply's calls wait for their results, so each shows with its own.
    let mut open: Vec<&ToolCall> = Vec::new();
    for message in history {
        if !matches!(message, Message::Tool { .. }) {
            for call in open.drain(..) {
                tool_call(&mut out, call, None);
            }
        }
        match message {
            Message::System { .. } => {}
            Message::User { content, .. } if content.starts_with(SUMMARY_PREFIX) => {
                out.push_str("\n## Summary of the earlier conversation\n\n");
                out.push_str(content[SUMMARY_PREFIX.len()..].trim());
                out.push('\n');
            }
            Message::User { content, .. } => {
                asked += 1;
                out.push_str(&format!(
                    "\n## Question {asked}\n\n{}\n",
                    crate::agent::without_mode_note(content).trim_end()
                ));
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.trim().is_empty() {
                    out.push_str(&format!("\n### Answer\n\n{}\n", content.trim_end()));
                }
                open.extend(tool_calls);
            }
            Message::Tool {
                call_id,
                content,
                failed,
                ..
            } => match open.iter().position(|c| &c.id == call_id) {
                Some(at) => {
                    let call = open.remove(at);
                    tool_call(&mut out, call, Some((content, *failed)));
                }
                None => output(&mut out, content, *failed),
            },
        }
    }
    for call in open {
        tool_call(&mut out, call, None);
    }
    out
}

/// One call: its name, its input, an edit's diff, and its output.
fn tool_call(out: &mut String, call: &ToolCall, result: Option<(&String, bool)>) {
    let input: Value =
        serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments.clone()));
    out.push_str(&format!("\n### Tool call: `{}`\n\n", call.name));
    let pretty = serde_json::to_string_pretty(&input).unwrap_or_else(|_| call.arguments.clone());
    out.push_str(&fenced("json", &pretty));
    out.push('\n');
    if let Some(diff) = edit_diff(&call.name, &input) {
        out.push('\n');
        out.push_str(&fenced("diff", &diff));
        out.push('\n');
    }
    match result {
        Some((content, failed)) => output(out, content, failed),
        None => out.push_str("\n(no result recorded)\n"),
    }
}

/// A tool's output, folded in a `<details>` block after
/// [`OUTPUT_LINES`] lines.
fn output(out: &mut String, content: &str, failed: bool) {
    let lines = content.lines().count();
    let label = match (failed, lines) {
        (true, _) => format!("output, failed ({})", count(lines)),
        (false, _) => format!("output ({})", count(lines)),
    };
    let shown = mm_ui::fold::head(content, OUTPUT_LINES).join("\n");
    out.push_str(&format!(
        "\n<details><summary>{label}</summary>\n\n{}\n\n</details>\n",
        fenced("text", &shown)
    ));
}

fn count(lines: usize) -> String {
    match lines {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    }
}

/// The change an `edit_file` call asked for, as a diff of each edit's old
/// and new text (the session records the call, not the file around it).
fn edit_diff(tool: &str, input: &Value) -> Option<String> {
    if tool != "edit_file" {
        return None;
    }
    let path = input.get("path")?.as_str()?;
    let edits = input.get("edits")?.as_array()?;
    let mut diff = format!("--- {path}\n+++ {path}\n");
    for edit in edits {
        let old = edit.get("old").and_then(Value::as_str).unwrap_or("");
        let new = edit.get("new").and_then(Value::as_str).unwrap_or("");
        diff.push_str("@@\n");
        for line in old.lines() {
            diff.push_str(&format!("-{line}\n"));
        }
        for line in new.lines() {
            diff.push_str(&format!("+{line}\n"));
        }
    }
    Some(diff)
}

/// A title on one line, so it stays the heading.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where `/export` writes: `path` taken from `cwd` when relative, else
/// `mm-session-<the id's first 8 characters>.md` in `cwd`.
pub fn target(cwd: &Path, path: Option<&str>, id: Option<&str>) -> PathBuf {
    match path {
        Some(p) => {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                cwd.join(p)
            }
        }
        None => {
            let short: String = id.unwrap_or("unsaved").chars().take(8).collect();
            cwd.join(format!("mm-session-{short}.md"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_answers_calls_outputs_and_diffs() {
        let history = vec![
            Message::user("fix a.txt"),
            Message::Assistant {
                content: "Looking.".into(),
                reasoning: Vec::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "c1".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"cat a.txt"}"#.into(),
                    },
                    ToolCall {
                        id: "c2".into(),
                        name: "edit_file".into(),
                        arguments: r#"{"path":"a.txt","edits":[{"old":"a\n","new":"b\n"}]}"#.into(),
                    },
                ],
            },
            Message::tool_result("c1", "bash", "a\n```\n[exit code: exit status 0]", false),
            Message::tool_result("c2", "edit_file", "edited a.txt", false),
            Message::assistant("Fixed."),
        ];
        let cwd = Path::new("/p");
        let md = markdown(
            &Heading {
                title: "fix\na",
                id: Some("0193"),
                model: "ollama/q",
                cwd,
            },
            &history,
        );
        assert!(md.starts_with("# fix a\n\n- session: `0193`\n"), "{md}");
        assert!(md.contains("## Question 1\n\nfix a.txt\n"), "{md}");
        assert!(md.contains("### Answer\n\nLooking.\n"), "{md}");
        assert!(md.contains("### Tool call: `bash`"), "{md}");
        assert!(md.contains("\"command\": \"cat a.txt\""), "{md}");
        // Output holding a fence gets a longer one.
        assert!(md.contains("````text\na\n```\n[exit code"), "{md}");
        assert!(
            md.contains("```diff\n--- a.txt\n+++ a.txt\n@@\n-a\n+b\n```"),
            "{md}"
        );
        assert!(md.contains("### Answer\n\nFixed.\n"), "{md}");
        let bash = md.find("`bash`").unwrap();
        let bash_out = md.find("[exit code").unwrap();
        let edit = md.find("`edit_file`").unwrap();
        assert!(
            bash < bash_out && bash_out < edit,
            "each call with its output"
        );
    }

    #[test]
    fn a_long_output_is_folded() {
        let long: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let history = vec![
            Message::user("go"),
            Message::Assistant {
                content: String::new(),
                reasoning: Vec::new(),
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::tool_result("c", "bash", long, false),
        ];
        let heading = Heading {
            title: "",
            id: None,
            model: "m",
            cwd: Path::new("/p"),
        };
        let md = markdown(&heading, &history);
        assert!(md.contains("<summary>output (100 lines)</summary>"), "{md}");
        assert!(md.contains("line 60\n… 40 more lines"), "{md}");
        assert!(!md.contains("line 61"), "{md}");
    }

    #[test]
    fn the_default_file_is_named_by_the_session() {
        let cwd = Path::new("/p");
        assert_eq!(
            target(cwd, None, Some("0193abcd-1234")),
            Path::new("/p/mm-session-0193abcd.md")
        );
        assert_eq!(
            target(cwd, Some("out/s.md"), None),
            Path::new("/p/out/s.md")
        );
        assert_eq!(target(cwd, Some("/tmp/s.md"), None), Path::new("/tmp/s.md"));
    }
}
