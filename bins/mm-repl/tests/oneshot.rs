//! One-shot mode end to end: the built binary against the mock model over
//! real HTTP, with isolated HOME/XDG directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, messages, text};
use mm_mock::Reply;

fn echo_hi_script() -> Vec<Reply> {
    vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"echo hi"}"#),
        Reply::text("It printed hi."),
    ]
}

#[test]
fn stdout_is_the_answer_and_tool_lines_go_to_stderr() {
    let w = World::new(echo_hi_script(), "");
    std::fs::write(w.cwd.join("AGENTS.md"), "Always run the tests.\n").unwrap();
    let out = w.run(&["-p", "say hi"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "It printed hi.\n");
    assert!(stderr.contains("🛠️  bash: echo hi\n"), "stderr: {stderr}");
    assert!(stderr.contains("   hi\n"), "the preview line: {stderr}");
    assert!(stderr.contains("⚙ 1 command(s)"), "the recap: {stderr}");

    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    // What the model saw first: the agent's system prompt (with AGENTS.md
    // and the working directory), the question, and the declared tools.
    let first = messages(&chats[0]);
    assert_eq!(first[0]["role"], "system");
    let instructions = mm_agent::instructions::Instructions::gather(
        &w.cwd,
        &w.user.path().join("config/mm"),
        &["AGENTS.md".to_owned()],
    );
    let expected_prompt = mm_agent::prompt::system_prompt(&w.cwd, &instructions);
    assert_eq!(first[0]["content"].as_str().unwrap(), expected_prompt);
    assert!(
        expected_prompt.ends_with("Project instructions from AGENTS.md:\nAlways run the tests.")
    );
    assert_eq!(first[1]["role"], "user");
    assert_eq!(first[1]["content"], "say hi");
    let tools: Vec<&str> = chats[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
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
    for tool in chats[0]["tools"].as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["parameters"]["type"], "object");
        assert!(!tool["function"]["description"].as_str().unwrap().is_empty());
    }
    // The bash result the model got back: exactly the command's output.
    let second = messages(&chats[1]);
    let result = second.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], "call_1");
    assert_eq!(result["content"], "hi\n");
}

#[test]
fn the_declarations_sent_are_the_agents() {
    let w = World::new(vec![Reply::text("ok")], "");
    let out = w.run(&["-p", "hello"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sent = w.chats()[0]["tools"].as_array().unwrap().clone();

    // Build the same agent in-process from the same settings file.
    let env = w.user.env_map();
    let sources = mm_config::Sources {
        cwd: w.cwd.clone(),
        env,
        config_file: None,
        flags: mm_config::Overrides::default(),
    };
    let config = mm_config::load(&sources).unwrap().config;
    let agent = mm_agent::Agent::new(config, &w.cwd, mm_agent::PermissionSource::Terminal).unwrap();
    let decls = agent.tool_declarations();
    assert_eq!(sent.len(), decls.len());
    for (sent, decl) in sent.iter().zip(decls) {
        assert_eq!(sent["function"]["name"], decl.name.as_str());
        assert_eq!(sent["function"]["description"], decl.description.as_str());
        assert_eq!(sent["function"]["parameters"], decl.parameters);
    }
}

#[test]
fn server_down_is_one_line_on_stderr_and_non_zero() {
    let w = World::new(vec![], "");
    // A port nobody listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = w.run(&["-p", "hello", "--base-url", &url], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert_eq!(text(&out.stdout), "");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {stderr:?}");
    assert!(
        lines[0].starts_with("error: cannot reach openai-compatible at "),
        "{stderr}"
    );
    assert!(
        lines[0].contains(&format!("127.0.0.1:{port}")),
        "names the URL: {stderr}"
    );
}

#[test]
fn max_turns_stops_the_turn_non_zero() {
    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo one"}"#),
        Reply::tool_call("c2", "bash", r#"{"command":"echo two"}"#),
    ];
    let w = World::new(script, "maxTurns: 1\n");
    let out = w.run(&["-p", "loop"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {stderr}");
    assert!(
        stderr.contains("[stopped: maxTurns (1) reached]"),
        "{stderr}"
    );
    assert_eq!(w.chats().len(), 1, "no second request after maxTurns");
}

#[test]
fn json_events_parse_and_come_in_order() {
    let w = World::new(echo_hi_script(), "");
    let out = w.run(&["-p", "say hi", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let mut events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds[0], "session", "{kinds:?}");
    let pos = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert!(pos("tool_start") < pos("tool_running"));
    assert!(pos("tool_running") < pos("tool_end"));
    assert!(pos("tool_end") < pos("text"));
    // The turn's end, then the run's result last.
    assert_eq!(*kinds.last().unwrap(), "result");
    assert_eq!(kinds[kinds.len() - 2], "turn_end");
    let result = events.pop().unwrap();
    assert_eq!(result["answer"], "It printed hi.");
    assert_eq!(result["exit_code"], 0);
    let start = &events[pos("tool_start")];
    assert_eq!(start["info"]["tool"], "bash");
    assert_eq!(start["info"]["title"], "echo hi");
    let end = &events[pos("tool_end")];
    assert_eq!(end["output"], "hi\n");
    assert_eq!(end["status"], "completed");
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "It printed hi.");
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "done");
    assert!(last.get("error").is_none(), "{last}");
    assert_eq!(last["counters"]["commands"], 1);
    // The tokens of the turn, on a `usage` line just before the end.
    let usage = &events[events.len() - 2];
    assert_eq!(usage["type"], "usage", "{kinds:?}");
    assert!(usage["prompt_tokens"].is_u64(), "{usage}");
    assert!(usage["completion_tokens"].is_u64(), "{usage}");
    assert_eq!(usage["prompt_tokens"], last["prompt_tokens"]);
    // The session's tokens and the window before them.
    let tokens = &events[events.len() - 3];
    assert_eq!(tokens["type"], "tokens", "{kinds:?}");
    assert_eq!(tokens["session"]["prompt"], last["prompt_tokens"]);
    assert_eq!(tokens["window"], 32768, "{tokens}");
}

#[test]
fn json_turn_end_outcomes_are_strings_with_the_error_beside() {
    let w = World::new(vec![Reply::status(400, "no such model")], "");
    let out = w.run(&["-p", "hi", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for last in [&lines[lines.len() - 2], &lines[lines.len() - 1]] {
        assert_eq!(last["outcome"], "failed", "{last}");
        let error = last["error"].as_str().unwrap_or_else(|| panic!("{last}"));
        assert!(error.contains("no such model"), "{last}");
    }
    assert_eq!(lines[lines.len() - 2]["type"], "turn_end");
    assert_eq!(lines[lines.len() - 1]["type"], "result");

    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo one"}"#),
        Reply::tool_call("c2", "bash", r#"{"command":"echo two"}"#),
    ];
    let w = World::new(script, "maxTurns: 1\n");
    let out = w.run(&["-p", "loop", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let end = lines.iter().find(|l| l["type"] == "turn_end").unwrap();
    assert_eq!(end["outcome"], "max_turns", "{end}");
    assert!(end.get("error").is_none(), "{end}");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result", "{last}");
    assert_eq!(last["outcome"], "max_turns", "{last}");
    assert_eq!(last["exit_code"], 3, "{last}");
}

#[test]
fn the_question_can_come_on_stdin() {
    let w = World::new(vec![Reply::text("first"), Reply::text("second")], "");
    let out = w.run(&[], Some("what is up?\n"));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "first\n");
    let out = w.run(&["-p", "-"], Some("and now?"));
    assert_eq!(text(&out.stdout), "second\n");
    let chats = w.chats();
    assert_eq!(messages(&chats[0])[1]["content"], "what is up?");
    assert_eq!(messages(&chats[1]).last().unwrap()["content"], "and now?");
}

#[test]
fn an_empty_question_is_a_start_error() {
    let w = World::new(vec![], "");
    let out = w.run(&[], Some("\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no question"),
        "{}",
        text(&out.stderr)
    );
    assert!(w.chats().is_empty());
}

#[test]
fn without_a_terminal_ask_mode_rejects_and_the_model_is_told() {
    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"touch made-it"}"#),
        Reply::text("understood"),
    ];
    let w = World::new(script, "permissions: ask\n");
    let out = w.run(&["-p", "make a file"], None);
    assert_eq!(out.status.code(), Some(4), "stderr: {}", text(&out.stderr));
    assert!(
        !w.cwd.join("made-it").exists(),
        "the command must not have run"
    );
    assert!(
        text(&out.stderr).contains("no terminal to ask"),
        "{}",
        text(&out.stderr)
    );
    let chats = w.chats();
    assert_eq!(
        messages(&chats[1]).last().unwrap()["content"],
        "[not run: this call needs permission and there is no terminal to ask; use --permissions or an allow rule]"
    );
}

#[test]
fn the_demo_says_it_is_scripted_and_runs_the_loop() {
    let w = World::new(vec![], "");
    let out = w.run(&["--demo", "-p", "what is here?"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stderr.contains("🛠️  bash: ls"), "{stderr}");
    assert!(stdout.contains("This was a demo"), "{stdout}");
    assert!(
        stderr.starts_with(mm_agent::start::DEMO_NOTICE),
        "the demo says so first: {stderr}"
    );
    assert!(
        w.chats().is_empty(),
        "the demo talks to its own in-process model"
    );
}

#[test]
fn resume_continues_a_one_shot_session() {
    let w = World::new(vec![Reply::text("noted"), Reply::text("it was 42")], "");
    assert_eq!(w.run(&["-p", "remember 42"], None).status.code(), Some(0));
    let out = w.run(&["--continue", "-p", "what was it?"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let second = &w.chats()[1];
    let contents: Vec<String> = messages(second)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(contents[1..], ["remember 42", "noted", "what was it?"]);
}

#[test]
fn resume_by_id_and_a_bad_id() {
    let w = World::new(vec![Reply::text("noted"), Reply::text("again")], "");
    assert_eq!(
        w.run(&["-p", "the colour is teal"], None).status.code(),
        Some(0)
    );
    let project = std::fs::read_dir(w.user.path().join("data/mm/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let ids: Vec<String> = std::fs::read_dir(project)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|name| name.strip_suffix(".json").map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = ids[0].clone();
    let out = w.run(&["--resume", &id, "-p", "which colour?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(common::all_text(&w.chats()[1]).contains("the colour is teal"));

    let out = w.run(&["--resume", "no-such-session", "-p", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot resume"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        w.chats().len(),
        2,
        "no request for a session that does not exist"
    );
}

#[test]
fn reasoning_is_shown_on_stderr_unless_show_thinking_is_off() {
    let reply = || {
        Reply::stream(vec![
            mm_mock::Step::reasoning("pondering deeply"),
            mm_mock::Step::text("The answer."),
        ])
    };
    let w = World::new(vec![reply()], "");
    let out = w.run(&["-p", "think"], None);
    assert_eq!(
        text(&out.stdout),
        "The answer.\n",
        "reasoning never joins the answer"
    );
    assert!(
        text(&out.stderr).contains("pondering deeply"),
        "{}",
        text(&out.stderr)
    );

    let w = World::new(vec![reply()], "showThinking: false\n");
    let out = w.run(&["-p", "think"], None);
    assert_eq!(text(&out.stdout), "The answer.\n");
    assert!(
        !text(&out.stderr).contains("pondering"),
        "{}",
        text(&out.stderr)
    );
}

/// A user command in the isolated config folder and a project command.
fn with_commands(w: &World) {
    let user = w.user.path().join("config/mm/commands");
    std::fs::create_dir_all(user.join("git")).unwrap();
    std::fs::write(
        user.join("review.md"),
        "---\ndescription: Review one file\nargument-hint: <path>\n---\nReview @$1 and list the bugs.",
    )
    .unwrap();
    std::fs::write(user.join("git/log.md"), "Summarise: $ARGUMENTS").unwrap();
    let project = w.cwd.join(".mm/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("new.md"), "clashes with /new").unwrap();
    std::fs::create_dir_all(w.cwd.join("src")).unwrap();
    std::fs::write(w.cwd.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
}

#[test]
fn a_custom_command_runs_as_the_one_shot_question() {
    let w = World::new(
        vec![Reply::text("No bugs."), Reply::text("Two commits.")],
        "",
    );
    with_commands(&w);
    let out = w.run(&["-p", "/review src/lib.rs"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(text(&out.stdout), "No bugs.\n");
    let first = messages(&w.chats()[0]);
    assert_eq!(
        first[1]["content"],
        "Review @src/lib.rs and list the bugs.\n\n[attached file: src/lib.rs]\n```\npub fn f() {}\n```"
    );
    // The clash is refused at start, naming the file.
    let clash = std::fs::canonicalize(w.cwd.join(".mm/commands/new.md")).unwrap();
    assert!(
        stderr.contains(&format!(
            "command file {} not loaded: /new is a built-in command",
            clash.display()
        )),
        "stderr: {stderr}"
    );
    let out = w.run(&["-p", "/git:log the last week"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        messages(&w.chats()[1]).last().unwrap()["content"],
        "Summarise: the last week"
    );
}

#[test]
fn built_in_and_unknown_commands_are_sent_as_text_in_one_shot_mode() {
    let w = World::new(
        vec![Reply::text("a"), Reply::text("b"), Reply::text("c")],
        "",
    );
    with_commands(&w);
    for line in ["/compact", "/new", "/nosuch thing"] {
        let out = w.run(&["-p", line], None);
        assert_eq!(out.status.code(), Some(0), "{line}: {}", text(&out.stderr));
    }
    let sent: Vec<serde_json::Value> = w
        .chats()
        .iter()
        .map(|c| messages(c).last().unwrap()["content"].clone())
        .collect();
    assert_eq!(sent, ["/compact", "/new", "/nosuch thing"]);
}

#[test]
fn json_starts_with_the_session_event_and_a_script_can_resume_it() {
    let w = World::new(vec![Reply::text("noted"), Reply::text("teal")], "");
    let out = w.run(
        &["-p", "the colour is teal", "--output-format", "json"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    let id = first["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    assert_eq!(
        first,
        serde_json::json!({
            "type": "session",
            "session_id": id,
            "model": "openai-compatible/test",
            "cwd": w.cwd.display().to_string(),
            "version": mm_agent::version(),
        })
    );
    let out = w.run(
        &[
            "--resume",
            &id,
            "-p",
            "which colour?",
            "--output-format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let again: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(again["session_id"], id.as_str());
    let contents: Vec<String> = messages(&w.chats()[1])
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        contents[1..],
        ["the colour is teal", "noted", "which colour?"]
    );

    // Without sessions the id is null, and the event still comes first.
    let w = World::new(vec![Reply::text("ok")], "sessions:\n  enabled: false\n");
    let out = w.run(&["-p", "hi", "--output-format", "json"], None);
    let first: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "session");
    assert!(first["session_id"].is_null(), "{first}");
}

/// A clipboard write and a screen clear, as a model or a command may send.
const OSC52: &str = "\x1b]52;c;aGk=\x07";
const CLEAR: &str = "\x1b[2J";

/// Escapes in the answer, the command line and the command's output.
fn hostile_script() -> Vec<Reply> {
    let command = format!("printf 'A{OSC52}B{CLEAR}C\\n'");
    vec![
        Reply::tool_call(
            "c1",
            "bash",
            serde_json::json!({ "command": command }).to_string(),
        ),
        Reply::text(format!("Done{OSC52}{CLEAR} here.")),
    ]
}

#[test]
fn a_piped_answer_is_the_models_text_and_stderr_is_sanitised() {
    let w = World::new(hostile_script(), "");
    let out = w.run(&["-p", "go"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // A script reading stdout gets what the model wrote, byte for byte.
    assert_eq!(stdout, format!("Done{OSC52}{CLEAR} here.\n"));
    // The lines for a person hold no control character at all.
    assert!(
        !stderr.contains(|c: char| c.is_control() && c != '\n'),
        "{stderr:?}"
    );
    assert!(stderr.contains("🛠️  bash: printf 'ABC\\n'\n"), "{stderr}");
    assert!(stderr.contains("   ABC\n"), "{stderr}");
}

#[test]
fn json_escapes_control_characters_and_keeps_them() {
    let w = World::new(hostile_script(), "");
    let out = w.run(&["-p", "go", "--output-format", "json"], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!stdout.contains(['\x1b', '\x07']), "{stdout:?}");
    assert!(stdout.contains("\\u001b]52;c;aGk=\\u0007"), "{stdout}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answer: String = lines
        .iter()
        .filter(|l| l["type"] == "text")
        .map(|l| l["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(answer, format!("Done{OSC52}{CLEAR} here."));
    let end = lines.iter().find(|l| l["type"] == "tool_end").unwrap();
    assert_eq!(end["output"], format!("A{OSC52}B{CLEAR}C\n"));
}

#[test]
fn a_server_error_body_is_shown_sanitised() {
    let w = World::new(
        vec![Reply::status(
            500,
            format!("overloaded{OSC52}{CLEAR} try later"),
        )],
        "",
    );
    let out = w.run(&["-p", "go"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("overloaded try later"), "{stderr}");
    assert!(
        !stderr.contains(|c: char| c.is_control() && c != '\n'),
        "{stderr:?}"
    );
}

/// On a small window the fixed part leaves room for the conversation: only
/// the core tools are declared (bash without background jobs, whose tools
/// are left out), from the first request on, and mm says so once.
#[test]
fn a_small_window_declares_only_the_core_tools_and_says_so() {
    let w = World::serving(
        vec![Reply::text("hi")],
        "",
        mm_mock::Options {
            window: Some(2048),
            ..mm_mock::Options::default()
        },
    );
    let out = w.run(&["-p", "hello"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let chat = &w.chats()[0];
    let tools = chat["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["bash", "read_file", "write_file", "edit_file"],
        "{stderr}"
    );
    let bash = &tools[0]["function"];
    assert!(bash["parameters"]["properties"].get("background").is_none());
    assert!(!bash["description"].as_str().unwrap().contains("background"));
    // Short descriptions: the first clause; the fields keep theirs.
    let descriptions: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["description"].as_str().unwrap())
        .collect();
    assert_eq!(
        descriptions,
        [
            "Run `bash -c` in the working directory, no stdin.",
            "Read a text file, or some of its lines.",
            "Create a file or replace all of it.",
            "Replace exact text in a file.",
        ]
    );
    assert_eq!(
        tools[3]["function"]["parameters"]["properties"]["path"]["description"],
        "Path of an existing file."
    );
    assert!(
        stderr.contains("the model's window (2048 tokens) is small: only bash, read_file, write_file, edit_file are declared (grep, glob, job_output, job_kill, web_fetch, todo, task left out)"),
        "{stderr}"
    );
    // The mock cannot count tokens: the estimate decided, and no exact
    // count was asked of a server that cannot give one beyond one try.
    let counted = w
        .server
        .all_requests()
        .iter()
        .filter(|r| r.path == "/apply-template")
        .count();
    assert!(counted <= 1, "{counted}");
}

/// Where the server counts exactly (llama.cpp renders the fixed part with
/// the model's template, which may drop the declarations), its count
/// decides: a fixed part it counts small keeps every tool, whatever the
/// estimate says.
#[test]
fn the_servers_exact_count_of_the_fixed_part_decides_on_a_small_window() {
    let w = World::serving(
        vec![Reply::text("hi")],
        "",
        mm_mock::Options {
            window: Some(2048),
            routes: vec![
                mm_mock::Route::post(
                    "/apply-template",
                    serde_json::json!({"prompt": "<|im_start|>system\nYou are mm.<|im_end|>\n"}),
                ),
                mm_mock::Route::post(
                    "/tokenize",
                    serde_json::json!({"tokens": (0..150).collect::<Vec<u32>>()}),
                ),
            ],
            ..mm_mock::Options::default()
        },
    );
    let out = w.run(&["-p", "hello"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let names: Vec<String> = w.chats()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"grep".to_owned()), "{names:?}");
    assert!(names.contains(&"todo".to_owned()), "{names:?}");
    assert!(!stderr.contains("is small"), "{stderr}");
    // What was counted: the system prompt and the declarations as sent.
    let asked: Vec<serde_json::Value> = w
        .server
        .all_requests()
        .into_iter()
        .filter(|r| r.path == "/apply-template")
        .map(|r| r.body)
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["messages"][0]["role"], "system");
    assert_eq!(asked[0]["tools"], w.chats()[0]["tools"]);
}

/// A template that renders earlier reasoning (llama.cpp
/// `supports_preserve_reasoning`) gets each answer's reasoning back as
/// `reasoning_content`, so the prompt is the one the model saw; any other
/// server never sees reasoning it did not render.
#[test]
fn earlier_reasoning_goes_back_only_to_a_template_that_keeps_it() {
    for keeps in [true, false] {
        let w = World::serving(
            vec![
                Reply::stream(vec![
                    mm_mock::Step::reasoning("list first"),
                    mm_mock::Step::tool_start(0, "c1", "bash"),
                    mm_mock::Step::tool_args(0, r#"{"command":"true"}"#),
                ]),
                Reply::text("done"),
            ],
            "",
            mm_mock::Options {
                routes: vec![mm_mock::Route::get(
                    "/props",
                    serde_json::json!({
                        "default_generation_settings": {"n_ctx": 8192},
                        "chat_template_caps": {
                            "supports_tools": true,
                            "supports_preserve_reasoning": keeps
                        }
                    }),
                )],
                ..mm_mock::Options::default()
            },
        );
        let out = w.run(&["-p", "go"], None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let chats = w.chats();
        let answer = &chats[1]["messages"][2];
        assert_eq!(answer["role"], "assistant", "{answer}");
        if keeps {
            assert_eq!(answer["reasoning_content"], "list first", "{answer}");
        } else {
            assert!(answer.get("reasoning_content").is_none(), "{answer}");
        }
    }
}
