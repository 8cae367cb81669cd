//! What a script gets from `mm-repl -p`: the turn limit, a final answer in
//! a JSON Schema, rules for one run, the `result` line and an exit code
//! for each way a run ends (docs/reference/json.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, all_text, messages, text};
use mm_mock::Reply;
use serde_json::{Value, json};

const NOT_RUN: &str = "[not run: this call needs permission and there is no terminal to ask; \
     use --permissions or an allow rule]";

fn json_lines(out: &std::process::Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A model that never stops calling tools.
fn endless_calls() -> Vec<Reply> {
    (0..6)
        .map(|i| Reply::tool_call(format!("c{i}"), "bash", r#"{"command":"echo again"}"#))
        .collect()
}

/// The tool results the model was sent, in order, from the last request.
fn results(w: &World) -> Vec<String> {
    let chats = w.chats();
    messages(chats.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn max_turns_ends_with_exit_3_and_a_result_saying_so() {
    let w = World::new(endless_calls(), "");
    let out = w.run(
        &["-p", "loop", "--max-turns", "2", "--output-format", "json"],
        None,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(w.chats().len(), 2, "two requests, no third");
    let lines = json_lines(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result", "{result}");
    assert_eq!(result["outcome"], "max_turns");
    assert_eq!(result["exit_code"], 3);
    assert!(result["session_id"].is_string(), "{result}");
    assert_eq!(
        lines[0]["session_id"], result["session_id"],
        "the session the first line named"
    );
    assert!(result["usage"]["prompt_tokens"].is_u64(), "{result}");
    // In text mode too, with the reason on stderr.
    let w = World::new(endless_calls(), "");
    let out = w.run(&["-p", "loop", "--max-turns", "1"], None);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("turn limit"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(w.chats().len(), 1);
}

#[test]
fn the_result_line_carries_the_whole_answer() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"echo hi"}"#),
            Reply::stream(vec![
                mm_mock::Step::text("It said "),
                mm_mock::Step::text("hi."),
            ]),
        ],
        "",
    );
    let out = w.run(&["-p", "say hi", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = json_lines(&out).pop().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["outcome"], "done");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["answer"], "It said hi.");
    assert!(result.get("error").is_none(), "{result}");
}

fn count_schema(w: &World) -> (std::path::PathBuf, Value) {
    let schema = json!({
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
        "additionalProperties": false
    });
    let path = w.user.path().join("schema.json");
    std::fs::write(&path, schema.to_string()).unwrap();
    (path, schema)
}

#[test]
fn output_schema_retries_once_with_the_schema_and_prints_the_value() {
    let w = World::new(
        vec![
            Reply::text("There are three files."),
            Reply::text("{\"count\": 3}"),
        ],
        "",
    );
    let (path, schema) = count_schema(&w);
    let out = w.run(
        &[
            "-p",
            "how many files?",
            "--output-schema",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"count\":3}\n", "just the value");
    let chats = w.chats();
    assert_eq!(chats.len(), 2, "one retry");
    // The question asked for the schema; the retry carried it as the
    // server's structured output, said what was wrong, and allowed no tool.
    assert!(all_text(&chats[0]).contains("\"count\""), "{}", chats[0]);
    assert_eq!(chats[1]["response_format"]["type"], "json_schema");
    assert_eq!(chats[1]["response_format"]["json_schema"]["schema"], schema);
    assert_eq!(chats[1]["tool_choice"], "none");
    let told = messages(&chats[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(told.contains("not JSON"), "{told}");
}

#[test]
fn an_answer_that_fits_at_once_needs_no_retry() {
    let w = World::new(vec![Reply::text("{\"count\": 2}")], "");
    let (path, _) = count_schema(&w);
    let out = w.run(
        &[
            "-p",
            "how many?",
            "--output-schema",
            path.to_str().unwrap(),
            "--output-format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(w.chats().len(), 1);
    let result = json_lines(&out).pop().unwrap();
    assert_eq!(result["value"], json!({"count": 2}));
}

#[test]
fn output_schema_not_met_twice_exits_5() {
    let w = World::new(
        vec![Reply::text("three"), Reply::text("{\"count\": \"three\"}")],
        "",
    );
    let (path, _) = count_schema(&w);
    let out = w.run(
        &["-p", "how many?", "--output-schema", path.to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "no value, no answer text");
    assert!(
        text(&out.stderr).contains("does not fit --output-schema"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(w.chats().len(), 2, "one retry only");
}

#[test]
fn a_bad_schema_file_is_a_start_error() {
    let w = World::new(vec![], "");
    let path = w.user.path().join("bad.json");
    std::fs::write(&path, r#"{"type": "no-such-type"}"#).unwrap();
    let out = w.run(
        &["-p", "x", "--output-schema", path.to_str().unwrap()],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--output-schema"));
    assert!(w.chats().is_empty());
}

#[test]
fn a_call_needing_permission_without_a_terminal_exits_4() {
    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"touch made-it"}"#),
        Reply::text("I could not."),
    ];
    let w = World::new(script, "");
    let out = w.run(
        &[
            "-p",
            "make a file",
            "--permissions",
            "ask",
            "--output-format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(!w.cwd.join("made-it").exists());
    assert_eq!(results(&w), [NOT_RUN]);
    let lines = json_lines(&out);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "permission" && l["decision"] == "no_terminal"),
        "{lines:?}"
    );
    let result = lines.last().unwrap();
    assert_eq!(result["outcome"], "needs_permission");
    assert_eq!(result["exit_code"], 4);
}

#[test]
fn allowed_and_disallowed_tools_add_rules_for_one_run() {
    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo hi"}"#),
        Reply::tool_call("c2", "read_file", r#"{"path":"a.txt"}"#),
        Reply::text("done"),
    ];
    let w = World::new(script, "");
    std::fs::write(w.cwd.join("a.txt"), "a\n").unwrap();
    let out = w.run(
        &[
            "-p",
            "go",
            "--permissions",
            "ask",
            "--allowed-tools",
            "bash(echo *),read_file",
            "--disallowed-tools",
            "read_file(a.txt)",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        results(&w),
        ["hi\n", "[denied by rule \"read_file(a.txt)\"]"],
        "allowed, then denied (deny wins)"
    );
    // The rules were for that run only.
    let w2 = World::new(vec![Reply::text("x")], "");
    let out = w2.run(&["-p", "x", "--allowed-tools", "bash(rm -rf"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--allowed-tools"),
        "{}",
        text(&out.stderr)
    );
}
