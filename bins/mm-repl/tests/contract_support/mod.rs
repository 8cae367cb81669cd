//! Helpers of the contract tests: play tool calls through `mm-repl -p`,
//! read back what the model received in the next request, and compute the
//! texts the rules prescribe (truncation, runaway sentences) from them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use mm_mock::{Reply, Step};
use serde_json::Value;

use crate::common::{World, messages, text};

/// The question every contract run asks.
pub const QUESTION: &str = "do the task";

/// The stop sentence of the loop detector for `tool`.
pub fn stop_sentence(tool: &str) -> String {
    format!(
        "[error: the model repeated the same {tool} call 6 times in a row with the same failing result — turn stopped by the loop detector; rephrase the request, or fix what the tool kept reporting]"
    )
}

/// The loop detector's warning (docs/reference/tools.md#guards).
pub const LOOP_DETECTED: &str = "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. Please try a different approach or provide more information.]";

/// The result of a call that never ran
/// (docs/design.md#every-call-gets-a-result).
pub const NOT_RUN: &str = "[not run: the turn was stopped]";

/// The invalid-arguments sentence's fixed end.
pub const INVALID_END: &str = "; send a JSON object matching the tool's schema";

/// A run of the binary, with its outputs as text.
pub struct Run {
    pub out: Output,
    pub stdout: String,
    /// stderr with terminal styling removed.
    pub stderr: String,
}

impl Run {
    pub fn new(out: Output) -> Run {
        Run {
            stdout: text(&out.stdout),
            stderr: strip_ansi(&text(&out.stderr)),
            out,
        }
    }

    pub fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    /// The run ended by itself with exit code 0.
    pub fn assert_ok(&self) {
        assert_eq!(
            self.code(),
            Some(0),
            "exit code; stdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
    }

    /// The run ended by itself with a non-zero exit code (a stopped turn).
    pub fn assert_stopped(&self) {
        let code = self.code();
        assert!(
            code.is_some() && code != Some(0),
            "expected a non-zero exit, got {code:?}; stderr: {}",
            self.stderr
        );
    }

    /// Whether stderr has a line that is exactly `line`.
    pub fn stderr_has_line(&self, line: &str) -> bool {
        self.stderr.lines().any(|l| l == line)
    }
}

/// Removes CSI escape sequences (colours, cursor moves) and carriage returns.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
            continue;
        }
        if c == '\r' {
            continue;
        }
        out.push(c);
    }
    out
}

/// Arguments as JSON text.
pub fn args(v: Value) -> String {
    v.to_string()
}

/// A reply that is one complete call `id` of `tool`.
pub fn call(id: &str, tool: &str, arguments: &str) -> Reply {
    Reply::tool_call(id, tool, arguments)
}

/// A reply with several complete calls, in this order.
pub fn calls(list: &[(&str, &str, &str)]) -> Reply {
    Reply::stream(
        list.iter()
            .enumerate()
            .map(|(index, (id, tool, arguments))| Step::ToolCall {
                index,
                id: Some((*id).to_owned()),
                name: (*tool).to_owned(),
                arguments: (*arguments).to_owned(),
            })
            .collect(),
    )
}

/// One reply per call (ids `c1`, `c2`, …), then a final answer.
pub fn script(list: &[(&str, String)]) -> Vec<Reply> {
    let mut replies: Vec<Reply> = list
        .iter()
        .enumerate()
        .map(|(i, (tool, arguments))| call(&format!("c{}", i + 1), tool, arguments))
        .collect();
    replies.push(Reply::text("done"));
    replies
}

/// A world that plays `list` (see [`script`]) with `extra` settings.
pub fn world(list: &[(&str, String)], extra: &str) -> World {
    World::new(script(list), extra)
}

/// `mm-repl -p QUESTION`, bounded.
pub fn ask(w: &World) -> Run {
    Run::new(w.run(&["-p", QUESTION], None))
}

/// `mm-repl -p QUESTION` with extra environment variables.
pub fn ask_with_env(w: &World, env: &[(&str, &str)], stdin: Option<&str>) -> Run {
    let mut cmd = w.command(&["-p", QUESTION]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Run::new(crate::common::run_bounded(cmd, stdin))
}

/// `mm-repl --continue -p "go on"`: the saved history goes out again, so the
/// next request shows what a stopped turn left in it.
pub fn continue_session(w: &World) -> Run {
    Run::new(w.run(&["--continue", "-p", "go on"], None))
}

/// The `tool` messages of a request: `(tool_call_id, content)`, in order.
pub fn tool_messages(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                content_text(&m["content"]),
            )
        })
        .collect()
}

/// A message's content as text (a string, or text parts joined).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<String>(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The content the model received for call `id` in request `body`.
pub fn result_of(body: &Value, id: &str) -> String {
    let found: Vec<String> = tool_messages(body)
        .into_iter()
        .filter(|(i, _)| i == id)
        .map(|(_, c)| c)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one result for {id} in {:#}",
        body["messages"]
    );
    found.into_iter().next().unwrap()
}

/// The result of each call of a [`script`] run, each read from the request
/// that came right after it (the last message of that request).
pub fn results(w: &World, run: &Run, n: usize) -> Vec<String> {
    let chats = w.chats();
    assert_eq!(
        chats.len(),
        n + 1,
        "one request per call plus the final one; stderr: {}",
        run.stderr
    );
    (0..n)
        .map(|i| {
            let next = &chats[i + 1];
            let last = messages(next).last().cloned().unwrap();
            assert_eq!(last["role"], "tool", "request {}: {last:#}", i + 1);
            assert_eq!(last["tool_call_id"], format!("c{}", i + 1));
            content_text(&last["content"])
        })
        .collect()
}

/// Run `list` as one call per reply and return the results; the run must
/// end normally.
pub fn run_calls(list: &[(&str, String)], extra: &str, setup: impl FnOnce(&World)) -> Vec<String> {
    let w = world(list, extra);
    setup(&w);
    let run = ask(&w);
    run.assert_ok();
    results(&w, &run, list.len())
}

/// One call and its result; the run must end normally.
pub fn one(tool: &str, arguments: String, extra: &str, setup: impl FnOnce(&World)) -> String {
    run_calls(&[(tool, arguments)], extra, setup)
        .into_iter()
        .next()
        .unwrap()
}

/// Every session file of the world, parsed.
pub fn session_files(w: &World) -> Vec<Value> {
    let mut found = Vec::new();
    let mut stack = vec![w.user.path().join("data")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    found.push(v);
                }
            }
        }
    }
    found
}

/// The content of every tool result stored in the world's session files.
pub fn session_tool_results(w: &World) -> Vec<String> {
    session_files(w)
        .iter()
        .filter_map(|s| s["messages"].as_array())
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| content_text(&m["content"]))
        .collect()
}

/// The raw text of every file under the world's data directory.
pub fn data_text(w: &World) -> String {
    let mut all = String::new();
    let mut stack = vec![w.user.path().join("data")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                all.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    all
}

/// The user's skills folder (the default `skillsDir`).
pub fn skills_dir(w: &World) -> PathBuf {
    w.user.path().join("config/mm/skills")
}

/// Write `text` at `rel` under `dir`, creating folders.
pub fn put(dir: &Path, rel: &str, text: &[u8]) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The names of the tools declared in request `body`.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The truncation of docs/design.md#truncation, found by brute force: the
/// omitted count N whose marker makes budget = max − (marker + newline) −
/// (suffix + newline) agree with what was left out; head = ⌊budget / 2⌋
/// characters, tail the rest.
/// Returns `(result, head)`.
pub fn bash_truncation(output: &str, suffix: &str, max: usize) -> (String, String) {
    let chars: Vec<char> = output.chars().collect();
    let total = chars.len();
    let suffix_cost = if suffix.is_empty() {
        0
    } else {
        suffix.chars().count() + 1
    };
    for n in 1..=total {
        let marker = format!("[… {n} characters omitted …]");
        let budget = max - (marker.chars().count() + 1) - suffix_cost;
        if total - budget != n {
            continue;
        }
        let head_n = budget / 2;
        let tail_n = budget - head_n;
        let head: String = chars[..head_n].iter().collect();
        let tail: String = chars[total - tail_n..].iter().collect();
        let mut s = format!("{head}{marker}\n{tail}");
        if !suffix.is_empty() {
            if !tail.is_empty() && !tail.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(suffix);
        }
        return (s, head);
    }
    panic!("no consistent omitted count");
}

/// What the runaway guard reports, by its rule
/// (docs/design.md#runaway-pattern-length): after each fragment, the size
/// limit (262,144 bytes), then whether the last 256 characters are one
/// pattern of 4–64 characters repeated (the shortest).
pub fn runaway_sentence<'a>(fragments: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut args = String::new();
    for fragment in fragments {
        args.push_str(fragment);
        if args.len() > 262_144 {
            return Some(format!(
                "[error: the model's tool call ran away: its arguments passed 256 KiB ({} bytes so far) — generation stopped; rephrase the request, or try another model]",
                args.len()
            ));
        }
        let chars: Vec<char> = args.chars().collect();
        if chars.len() < 256 {
            continue;
        }
        let window = &chars[chars.len() - 256..];
        if let Some(p) = (4..=64).find(|&p| (p..256).all(|i| window[i] == window[i - p])) {
            let pattern: String = window[256 - p..].iter().collect();
            return Some(format!(
                "[error: the model's tool call ran away: its arguments repeat the same pattern ({} characters so far: {}) — generation stopped; rephrase the request, or try another model]",
                chars.len(),
                serde_json::to_string(&pattern).unwrap()
            ));
        }
    }
    None
}
