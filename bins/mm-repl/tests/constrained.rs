//! Calls the server enforces (`constrainedCalls`), end to end: the built
//! `mm-repl -p` against the mock over real HTTP. A constrained value
//! naming a declared tool runs as a native call, its result goes back as a
//! tool message, and an `answer` value is the answer, never its JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, messages, text};
use mm_mock::{Options, Reply, Route, Step};
use serde_json::json;

/// `text` streamed in small pieces.
fn streamed(text: &str) -> Reply {
    let chars: Vec<char> = text.chars().collect();
    Reply::stream(
        chars
            .chunks(5)
            .map(|c| Step::text(c.iter().collect::<String>()))
            .collect(),
    )
}

fn call_then_answer() -> Vec<Reply> {
    vec![
        streamed(r#"{"name":"bash","arguments":{"command":"echo hi"}}"#),
        streamed(r#"{"answer":"It printed \"hi\"."}"#),
    ]
}

#[test]
fn always_turns_the_value_into_a_call_that_runs_and_an_answer() {
    let w = World::new(call_then_answer(), "constrainedCalls: always\n");
    let out = w.run(&["-p", "Run the shell command echo hi"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "It printed \"hi\".\n");
    assert!(stderr.contains("🛠️  bash: echo hi\n"), "stderr: {stderr}");

    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        let rf = &chat["response_format"];
        assert_eq!(rf["type"], "json_schema", "{chat}");
        let branches = rf["json_schema"]["schema"]["oneOf"].as_array().unwrap();
        let names: Vec<&str> = branches
            .iter()
            .filter_map(|b| b["properties"]["name"]["const"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "bash",
                "read_file",
                "write_file",
                "edit_file",
                "grep",
                "glob",
                "job_output",
                "job_kill",
                "web_fetch",
                "todo",
                "task"
            ]
        );
        assert_eq!(
            branches.last().unwrap()["required"],
            json!(["answer"]),
            "the answer branch"
        );
        // The tools stay declared: the prompt is the unconstrained one.
        assert_eq!(chat["tools"].as_array().unwrap().len(), 11);
    }
    // The call is a native one in the history, and its result goes back.
    let second = messages(&chats[1]);
    let call = &second[second.len() - 2];
    assert_eq!(call["role"], "assistant");
    let tc = &call["tool_calls"][0];
    assert_eq!(tc["function"]["name"], "bash");
    assert_eq!(tc["function"]["arguments"], r#"{"command":"echo hi"}"#);
    let id = tc["id"].as_str().unwrap();
    assert!(id.starts_with("call_"), "{id}");
    let result = second.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], id);
    assert_eq!(result["content"], "hi\n");
}

#[test]
fn json_output_streams_the_answer_not_its_json() {
    let w = World::new(
        vec![streamed(r#"{"answer": "Paris is the capital."}"#)],
        "constrainedCalls: always\n",
    );
    let out = w.run(&["--output-format", "json", "-p", "capital?"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown: String = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(shown, "Paris is the capital.");
    // Shown in pieces as it was decoded, not once at the end.
    let pieces = stdout
        .lines()
        .filter(|l| l.contains(r#""type":"text""#))
        .count();
    assert!(pieces > 1, "{stdout}");
    assert!(!stdout.contains(r#"{\"answer\""#), "{stdout}");
}

/// A world whose server's `/props` says whether its template renders tools.
fn with_caps(supports_tools: bool, extra: &str) -> World {
    let props = json!({
        "default_generation_settings": {"n_ctx": 8192},
        "chat_template_caps": {"supports_tools": supports_tools},
    });
    World::serving(
        call_then_answer(),
        extra,
        Options {
            routes: vec![Route::get("/props", props)],
            ..Options::default()
        },
    )
}

#[test]
fn auto_constrains_when_the_template_cannot_render_tools() {
    let w = with_caps(false, "");
    let out = w.run(&["-p", "Run the shell command echo hi"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "It printed \"hi\".\n");
    assert!(w.chats().iter().all(|c| c.get("response_format").is_some()));
}

#[test]
fn auto_leaves_a_template_that_renders_tools_alone_and_off_never_constrains() {
    for (caps, extra) in [(true, ""), (false, "constrainedCalls: off\n")] {
        let w = with_caps(caps, extra);
        let out = w.run(&["-p", "Run the shell command echo hi"], None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let chat = &w.chats()[0];
        assert!(chat.get("response_format").is_none(), "{extra}: {chat}");
    }
}

/// A reply that describes the command in a shell fence, then (the retry)
/// the constrained call, then the answer.
fn prose_then_call() -> Vec<Reply> {
    vec![
        Reply::text("Here is the command:\n\n```bash\necho hi\n```\n"),
        streamed(r#"{"name":"bash","arguments":{"command":"echo hi"}}"#),
        Reply::text("It printed hi."),
    ]
}

#[test]
fn auto_asks_again_constrained_when_the_reply_describes_a_command() {
    let w = with_script(prose_then_call(), true, "");
    let out = w.run(&["-p", "Run the shell command `echo hi`"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stdout.ends_with("It printed hi.\n"), "{stdout}");
    assert!(
        stderr.contains("the model described a command instead of calling a tool"),
        "{stderr}"
    );
    assert!(stderr.contains("🛠️  bash: echo hi\n"), "stderr: {stderr}");

    let chats = w.chats();
    assert_eq!(chats.len(), 3, "{chats:?}");
    let (first, retry) = (&chats[0], &chats[1]);
    assert!(first.get("response_format").is_none());
    assert_eq!(retry["response_format"]["type"], "json_schema");
    // The prompt is byte for byte the first one's: only the schema added.
    assert_eq!(first["messages"].to_string(), retry["messages"].to_string());
    assert_eq!(first["tools"].to_string(), retry["tools"].to_string());
    let mut rest = retry.as_object().unwrap().clone();
    rest.remove("response_format");
    assert_eq!(&serde_json::Value::Object(rest), first);
    // The retry's call ran, and only it is in the history: not the prose.
    let third = messages(&chats[2]);
    let result = third.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["content"], "hi\n");
    assert!(!chats[2].to_string().contains("Here is the command"));
    // The answer after the call is not constrained.
    assert!(chats[2].get("response_format").is_none());
}

#[test]
fn no_retry_for_a_how_question_or_with_off() {
    // A question about a command is answered as it came.
    let w = with_script(prose_then_call(), true, "");
    let out = w.run(&["-p", "How do I print hi in the shell?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(w.chats().len(), 1);
    // constrainedCalls: off never asks again.
    let w = with_script(prose_then_call(), true, "constrainedCalls: off\n");
    let out = w.run(&["-p", "Run the shell command `echo hi`"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(w.chats().len(), 1);
    assert!(!text(&out.stderr).contains("described a command"));
}

/// [`with_caps`] with its own script.
fn with_script(script: Vec<Reply>, supports_tools: bool, extra: &str) -> World {
    let props = json!({
        "default_generation_settings": {"n_ctx": 8192},
        "chat_template_caps": {"supports_tools": supports_tools},
    });
    World::serving(
        script,
        extra,
        Options {
            routes: vec![Route::get("/props", props)],
            ..Options::default()
        },
    )
}
