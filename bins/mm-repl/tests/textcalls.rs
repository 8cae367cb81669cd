//! Tool calls a model writes into its answer as text, end to end: the
//! built `mm-repl -p` against the mock over real HTTP. The recovered call
//! runs like a native one, its result goes back as a proper tool message,
//! and stdout never shows the markup; what is not a call of a declared
//! tool stays text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, messages, text};
use mm_mock::{Reply, Step};

/// Hermes / Qwen2.5 form, streamed in small pieces so the markup is cut
/// across frames.
fn hermes_echo() -> Reply {
    let answer = "I will run it.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo hi\"}}\n</tool_call>";
    let steps = answer
        .as_bytes()
        .chunks(7)
        .map(|c| Step::text(std::str::from_utf8(c).unwrap()))
        .collect();
    Reply::stream(steps)
}

#[test]
fn a_call_written_as_text_runs_and_its_result_goes_back_as_a_tool_message() {
    let w = World::new(vec![hermes_echo(), Reply::text("It printed hi.")], "");
    let out = w.run(&["-p", "say hi"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.contains("🛠️  bash: echo hi\n"), "stderr: {stderr}");
    assert!(stdout.contains("I will run it."), "stdout: {stdout}");
    assert!(stdout.contains("It printed hi."), "stdout: {stdout}");
    for markup in ["<tool_call>", "</tool_call>", "\"arguments\""] {
        assert!(!stdout.contains(markup), "stdout shows {markup}: {stdout}");
        assert!(!stderr.contains(markup), "stderr shows {markup}: {stderr}");
    }

    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    let second = messages(&chats[1]);
    let n = second.len();
    // The answer went back as a native call, without its markup...
    let call = &second[n - 2];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["content"], "I will run it.\n");
    let calls = call["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "bash");
    let args: serde_json::Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, serde_json::json!({"command": "echo hi"}));
    let id = calls[0]["id"].as_str().unwrap();
    assert!(!id.is_empty());
    // ...and its result as the tool message paired with it.
    let result = &second[n - 1];
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], id);
    assert_eq!(result["content"], "hi\n");

    // The session file records the same: a native call, no markup.
    let sessions = files_under(&w.root.path().join("data"));
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let stored = std::fs::read_to_string(&sessions[0]).unwrap();
    assert!(!stored.contains("<tool_call>"), "{stored}");
    assert!(stored.contains("\"tool_calls\""), "{stored}");
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            found.push(path);
        }
    }
    found
}

#[test]
fn over_ollama_the_result_follows_the_recovered_call() {
    // Qwen3-Coder XML over Ollama's NDJSON wire.
    let answer = "<tool_call>\n<function=bash>\n<parameter=command>\necho hi\n</parameter>\n</function>\n</tool_call>";
    let w = World::new(vec![Reply::text(answer), Reply::text("Done.")], "");
    w.write_config(&format!(
        "model: ollama/qwen3-coder\nbaseURL: {}\nretries: 0\nwatchdog: 15\nlsp:\n  servers: []\n",
        w.server.url()
    ));
    let out = w.run(&["-p", "say hi"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "Done.\n");
    assert!(stderr.contains("🛠️  bash: echo hi\n"), "stderr: {stderr}");
    let chats: Vec<serde_json::Value> = w
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/chat")
        .map(|r| r.body)
        .collect();
    assert_eq!(chats.len(), 2);
    let second = messages(&chats[1]);
    let n = second.len();
    let call = &second[n - 2];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "bash");
    assert_eq!(
        call["tool_calls"][0]["function"]["arguments"],
        serde_json::json!({"command": "echo hi"})
    );
    assert!(
        !call["content"]
            .as_str()
            .unwrap_or("")
            .contains("<tool_call>"),
        "{call}"
    );
    assert_eq!(second[n - 1]["role"], "tool");
    assert_eq!(second[n - 1]["content"], "hi\n");
}

/// Runs one question whose only answer is `answer`; returns stdout and
/// the number of chat requests made.
fn stays_text(answer: &str, extra: &str) {
    let w = World::new(vec![Reply::text(answer)], extra);
    let out = w.run(&["-p", "go"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, format!("{answer}\n"), "the answer, untouched");
    assert!(!stderr.contains("🛠️"), "nothing ran: {stderr}");
    assert_eq!(w.chats().len(), 1, "no second request");
}

#[test]
fn an_undeclared_tool_stays_text() {
    stays_text(
        "<tool_call>\n{\"name\": \"web_search\", \"arguments\": {\"query\": \"rust\"}}\n</tool_call>",
        "",
    );
}

#[test]
fn broken_json_stays_text() {
    stays_text(
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo hi\"}\n</tool_call>",
        "",
    );
}

#[test]
fn with_text_tool_calls_off_a_call_stays_text() {
    stays_text(
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo hi\"}}\n</tool_call>",
        "textToolCalls: off\n",
    );
}
