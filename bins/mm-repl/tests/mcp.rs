//! MCP servers through `mm-repl -p` against the mock model: the model calls
//! a real server's tool and gets its result in the next request; a broken
//! server is one line and the session goes on; the lazy `mcp` tool; no
//! server outlives mm.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{World, expect, messages, run_bounded, text, type_line, wait_for};
use expectrl::Expect;
use mm_mock::{Reply, Step};
use mm_test_support::{mcp, procs};

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn time_server(python: &std::path::Path, mark: &str) -> String {
    format!(
        "mcpServers:\n  time:\n    command: {}\n    args: [\"-m\", \"mcp_server_time\"]\n    env: {{MM_TEST_MARK: {mark}}}\nmcp:\n  startTimeout: 30\n",
        python.display()
    )
}

#[test]
fn the_model_calls_mcp_time_and_gets_the_result_in_the_next_request() {
    let Some(python) = mcp::installed("python3", "the_model_calls_mcp_time") else {
        return;
    };
    let mark = format!("time-{}", std::process::id());
    let w = World::new(
        vec![
            Reply::tool_call(
                "call_1",
                "mcp__time__get_current_time",
                r#"{"timezone":"Etc/UTC"}"#,
            ),
            Reply::text("It is now."),
        ],
        &time_server(&python, &mark),
    );
    let out = w.run(&["-p", "what time is it?"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "It is now.\n");
    assert!(
        stderr.contains(
            "mcp__time__get_current_time: time/get_current_time {\"timezone\":\"Etc/UTC\"}"
        ),
        "the tool line: {stderr}"
    );

    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    // The first request declares the server's tool with its own schema,
    // after the built-in tools.
    let names = tool_names(&chats[0]);
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
            "task",
            "mcp__time__get_current_time",
            "mcp__time__convert_time"
        ]
    );
    let decl = &chats[0]["tools"][11]["function"];
    assert_eq!(
        decl["description"],
        "Get current time in a specific timezone"
    );
    assert_eq!(
        decl["parameters"]["required"],
        serde_json::json!(["timezone"])
    );
    // The result went back to the model.
    let second = messages(&chats[1]);
    let result = second.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], "call_1");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("\"timezone\": \"Etc/UTC\"")
            || content.contains("\"timezone\":\"Etc/UTC\""),
        "{content}"
    );
    assert!(content.contains("datetime"), "{content}");
    // mm is gone, and so is the server.
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "a server outlived mm: {:?}",
        procs::with_env("MM_TEST_MARK", &mark)
    );
}

#[test]
fn broken_servers_are_one_line_each_and_the_session_goes_on() {
    let mark = format!("broken-{}", std::process::id());
    let w = World::new(
        vec![Reply::text("Fine anyway.")],
        &format!(
            "mcpServers:\n  mute:\n    command: sh\n    args: [\"-c\", \"read x; sleep 100\"]\n    env: {{MM_TEST_MARK: {mark}}}\n  quitter:\n    command: sh\n    args: [\"-c\", \"echo boom >&2; exit 3\"]\n  ghost:\n    command: no-such-mcp-server-xyz\n  docs:\n    url: http://127.0.0.1:9/mcp\n    headers: {{Authorization: \"Bearer ${{MM_NOT_SET_TOKEN}}\"}}\nmcp:\n  startTimeout: 1\n"
        ),
    );
    let out = w.run(&["-p", "hello"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "Fine anyway.\n");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("mcp server "))
        .collect();
    assert_eq!(
        lines,
        [
            "mcp server docs: MM_NOT_SET_TOKEN is not set",
            "mcp server ghost: cannot start no-such-mcp-server-xyz: not found (is it installed and on PATH?)",
            "mcp server mute: no answer to initialize within 1s",
            "mcp server quitter: the server exited with status 3 (its last stderr line: boom)",
        ],
        "stderr: {stderr}"
    );
    // No MCP tool was declared, and the question was answered.
    let names = tool_names(&w.chats()[0]);
    assert!(names.iter().all(|n| !n.starts_with("mcp")), "{names:?}");
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "the mute server outlived mm"
    );
}

#[test]
fn lazy_declarations_reveal_a_tool_and_append_it() {
    let Some(everything) = mcp::installed("mcp-server-everything", "lazy_declarations") else {
        return;
    };
    let w = World::new(
        vec![
            Reply::tool_call("call_1", "mcp", r#"{"tool":"everything/echo"}"#),
            Reply::tool_call("call_2", "mcp__everything__echo", r#"{"message":"hi"}"#),
            Reply::text("Echoed."),
        ],
        &format!(
            "mcpServers:\n  everything:\n    command: {}\n    args: [stdio]\nmcp:\n  startTimeout: 30\n",
            everything.display()
        ),
    );
    let out = w.run(&["-p", "echo hi"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    let chats = w.chats();
    assert_eq!(chats.len(), 3);
    // auto: the everything server's declarations pass 4 KB, so one `mcp`
    // tool lists them.
    let first = tool_names(&chats[0]);
    assert_eq!(
        first,
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
            "task",
            "mcp"
        ]
    );
    let listing = chats[0]["tools"][11]["function"]["description"]
        .as_str()
        .unwrap();
    assert!(
        listing.contains("\neverything/echo — Echoes back the input string"),
        "{listing}"
    );
    assert!(listing.contains("\neverything/get-sum — "), "{listing}");
    // The reveal: the schema comes back, and the tool is declared from the
    // next request on, appended so the earlier declarations stay as they were.
    let reveal = messages(&chats[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reveal.starts_with("mcp__everything__echo is declared from now on"),
        "{reveal}"
    );
    assert!(reveal.contains("\"message\""), "{reveal}");
    let second = tool_names(&chats[1]);
    assert_eq!(
        second,
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
            "task",
            "mcp",
            "mcp__everything__echo"
        ]
    );
    assert_eq!(
        chats[1]["tools"].as_array().unwrap()[..10],
        chats[0]["tools"].as_array().unwrap()[..10],
        "the prefix changed"
    );
    let third = messages(&chats[2]);
    assert_eq!(third.last().unwrap()["content"], "Echo: hi");
    assert_eq!(tool_names(&chats[2]), second);
}

#[test]
fn mcp_lazy_never_declares_everything_in_full() {
    let Some(everything) = mcp::installed("mcp-server-everything", "mcp_lazy_never") else {
        return;
    };
    let w = World::new(
        vec![Reply::text("ok")],
        &format!(
            "mcpServers:\n  everything:\n    command: {}\n    args: [stdio]\nmcp:\n  startTimeout: 30\n  lazy: never\n",
            everything.display()
        ),
    );
    let out = w.run(&["-p", "hi"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names = tool_names(&w.chats()[0]);
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcp__everything__get-sum".to_string()),
        "{names:?}"
    );
    assert!(!names.contains(&"mcp".to_string()), "{names:?}");
}

#[test]
fn a_killed_mm_leaves_no_server_behind() {
    let Some(python) = mcp::installed("python3", "a_killed_mm_leaves_no_server_behind") else {
        return;
    };
    let mark = format!("killed-{}", std::process::id());
    // A server that forks before it runs: the guard must take the
    // grandchild too, not only the process mm started.
    let w = World::new(
        vec![Reply::stream(vec![Step::stall(30_000), Step::text("late")])],
        &format!(
            "mcpServers:\n  forks:\n    command: sh\n    args: [\"-c\", \"sleep 300 & exec {} -m mcp_server_time\"]\n    env: {{MM_TEST_MARK: {mark}}}\nmcp:\n  startTimeout: 30\n",
            python.display()
        ),
    );
    let mut child = w
        .command(&["-p", "wait"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The model request is under way: the server started and listed its tools.
    assert!(
        wait_for(Duration::from_secs(30), || !w.chats().is_empty()),
        "no request reached the model"
    );
    assert!(
        procs::with_env("MM_TEST_MARK", &mark).len() >= 2,
        "the server is not running"
    );
    // SIGKILL: mm runs no code at all.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "processes outlived a killed mm: {:?}",
        procs::with_env("MM_TEST_MARK", &mark)
    );
}

const PROMPT: &str = "mm> ";

#[test]
fn in_ask_mode_an_mcp_tool_asks_like_bash_and_slash_mcp_lists_the_server() {
    let Some(python) = mcp::installed("python3", "in_ask_mode_an_mcp_tool_asks") else {
        return;
    };
    let mark = format!("ask-{}", std::process::id());
    let call = |id: &str| {
        Reply::tool_call(
            id,
            "mcp__time__get_current_time",
            r#"{"timezone":"Etc/UTC"}"#,
        )
    };
    let w = World::new(
        vec![
            call("c1"),
            Reply::text("Rejected, fine."),
            call("c2"),
            Reply::text("Allowed for the session."),
            call("c3"),
            Reply::text("No question this time."),
        ],
        &format!("permissions: ask\n{}", time_server(&python, &mark)),
    );
    let ask = "allow? [y/a/Enter] allow once · [s] allow for this session · [n/r] reject";
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);

    type_line(&mut s, "what time is it?");
    let shown = expect(&mut s, ask);
    assert!(
        shown.contains("time/get_current_time {\"timezone\":\"Etc/UTC\"}"),
        "the call is shown before the question: {shown:?}"
    );
    // `r`, then Enter: no reason.
    s.send("r\r").unwrap();
    expect(&mut s, "Rejected, fine.");
    expect(&mut s, PROMPT);

    type_line(&mut s, "and now?");
    expect(&mut s, ask);
    s.send("s").unwrap();
    expect(&mut s, "Allowed for the session.");
    expect(&mut s, PROMPT);

    type_line(&mut s, "and now?");
    let turn = expect(&mut s, "No question this time.");
    assert!(
        !turn.contains("allow?"),
        "allowed for the session: {turn:?}"
    );
    expect(&mut s, PROMPT);

    type_line(&mut s, "/mcp");
    expect(&mut s, "time: ready, 2 tools");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/quit");
    assert!(
        wait_for(Duration::from_secs(10), || !s
            .get_process()
            .is_alive()
            .unwrap_or(false)),
        "mm-repl did not quit"
    );

    let chats = w.chats();
    let result = |i: usize| {
        messages(&chats[i]).last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(result(1), "[tool call rejected by the user]");
    assert!(result(3).contains("Etc/UTC"), "{}", result(3));
    assert!(result(5).contains("Etc/UTC"), "{}", result(5));
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "the server outlived mm"
    );
}

#[test]
fn results_are_redacted_keys_stay_out_and_images_reach_the_model() {
    let Some(everything) = mcp::installed("mcp-server-everything", "results_are_redacted") else {
        return;
    };
    let secret = "s3cret-token-value-42";
    let key = "sk-provider-key-value-77";
    let w = World::new(
        vec![
            Reply::tool_call("c1", "mcp__everything__get-env", "{}"),
            Reply::tool_call("c2", "mcp__everything__get-tiny-image", "{}"),
            Reply::text("Seen."),
        ],
        &format!(
            "vision: true\nmcpServers:\n  everything:\n    command: {}\n    args: [stdio]\n    env: {{MM_TEST_SECRET: {secret}}}\nmcp:\n  startTimeout: 30\n  lazy: never\n",
            everything.display()
        ),
    );
    let out = run_bounded(
        {
            let mut cmd = w.command(&["-p", "show me"]);
            cmd.env("OPENAI_API_KEY", key);
            cmd
        },
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chats = w.chats();
    assert_eq!(chats.len(), 3);
    let env = messages(&chats[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    // The server's own env value is a secret: redacted before the model
    // sees it. The provider key never reached the server at all.
    assert!(env.contains("\"MM_TEST_SECRET\": \"[redacted]\""), "{env}");
    assert!(!env.contains(secret), "{env}");
    assert!(!env.contains("OPENAI_API_KEY"), "{env}");
    assert!(!env.contains(key), "{env}");
    // The picture: a line in the tool's result, then the picture itself
    // in the user message that follows the results.
    let third = messages(&chats[2]);
    let n = third.len();
    let line = third[n - 2]["content"].as_str().unwrap().to_string();
    assert_eq!(third[n - 2]["role"], "tool");
    assert!(
        line.lines()
            .any(|l| l.starts_with("[image: image/png, ") && l.ends_with(" bytes]")),
        "{line}"
    );
    assert!(line.len() < 1000, "{line}");
    assert_eq!(third[n - 1]["role"], "user");
    let url = third[n - 1]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap_or_default();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{:#}",
        third[n - 1]
    );
}

/// An embedded resource in a result reaches the model as its text, under a
/// line naming it: the everything server's text resource and its blob one
/// (base64 of text, `text/plain`).
#[test]
fn embedded_resources_reach_the_model_as_their_text() {
    let Some(everything) = mcp::installed("mcp-server-everything", "embedded_resources") else {
        return;
    };
    let w = World::new(
        vec![
            Reply::tool_call(
                "c1",
                "mcp__everything__get-resource-reference",
                r#"{"resourceType":"Text","resourceId":2}"#,
            ),
            Reply::tool_call(
                "c2",
                "mcp__everything__get-resource-reference",
                r#"{"resourceType":"Blob","resourceId":3}"#,
            ),
            Reply::text("Read."),
        ],
        &format!(
            "mcpServers:\n  everything:\n    command: {}\n    args: [stdio]\nmcp:\n  startTimeout: 30\n  lazy: never\n",
            everything.display()
        ),
    );
    let out = run_bounded(w.command(&["-p", "read them"]), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = tool_results(&w);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains(
            "[resource: demo://resource/dynamic/text/2]\nResource 2: This is a plaintext resource"
        ),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains(
            "[resource: demo://resource/dynamic/blob/3]\nResource 3: This is a base64 blob"
        ),
        "{}",
        results[1]
    );
    assert!(
        !results.iter().any(|r| r.contains("not shown")),
        "{results:?}"
    );
}

/// The byte size of a request's `tools` and of the whole body.
fn sizes(body: &serde_json::Value) -> (usize, usize) {
    (body["tools"].to_string().len(), body.to_string().len())
}

fn first_request(servers: &str) -> serde_json::Value {
    let w = World::new(vec![Reply::text("ok")], servers);
    let out = w.run(&["-p", "hi"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    w.chats().remove(0)
}

/// The first request with no server, the time server and the everything
/// server, eager and lazy; the figures go to stderr (`--nocapture`).
#[test]
fn first_request_sizes_eager_and_lazy() {
    let (Some(python), Some(everything)) = (
        mcp::installed("python3", "first_request_sizes"),
        mcp::installed("mcp-server-everything", "first_request_sizes"),
    ) else {
        return;
    };
    let time = |lazy: &str| {
        format!(
            "mcpServers:\n  time:\n    command: {}\n    args: [\"-m\", \"mcp_server_time\"]\nmcp:\n  startTimeout: 30\n  lazy: {lazy}\n",
            python.display()
        )
    };
    let all = |lazy: &str| {
        format!(
            "mcpServers:\n  everything:\n    command: {}\n    args: [stdio]\nmcp:\n  startTimeout: 30\n  lazy: {lazy}\n",
            everything.display()
        )
    };
    let none = sizes(&first_request(""));
    let time_auto = first_request(&time("auto"));
    let time_lazy = sizes(&first_request(&time("always")));
    let all_eager = sizes(&first_request(&all("never")));
    let all_auto = first_request(&all("auto"));
    for (what, (tools, body)) in [
        ("no MCP server", none),
        ("time, eager (auto)", sizes(&time_auto)),
        ("time, lazy (always)", time_lazy),
        ("everything, eager (never)", all_eager),
        ("everything, lazy (auto)", sizes(&all_auto)),
    ] {
        eprintln!("first request, {what}: tools {tools} B, body {body} B");
    }
    // Under 4 KB of MCP declarations auto is eager; past it, lazy.
    assert!(tool_names(&time_auto).contains(&"mcp__time__get_current_time".to_string()));
    assert_eq!(tool_names(&all_auto).last().unwrap(), "mcp");
    let all_auto = sizes(&all_auto);
    assert!(all_eager.0 - none.0 > 4096, "{all_eager:?} vs {none:?}");
    assert!(all_auto.0 < all_eager.0, "{all_auto:?} vs {all_eager:?}");
}

/// What the model got back for each tool call of the run, in order.
fn tool_results(w: &World) -> Vec<String> {
    let chats = w.chats();
    messages(chats.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn permission_rules_name_mcp_tools() {
    let Some(python) = mcp::installed("python3", "permission_rules_name_mcp_tools") else {
        return;
    };
    let now = || {
        Reply::tool_call(
            "c1",
            "mcp__time__get_current_time",
            r#"{"timezone":"Etc/UTC"}"#,
        )
    };
    let convert = || {
        Reply::tool_call(
            "c2",
            "mcp__time__convert_time",
            r#"{"source_timezone":"Etc/UTC","time":"12:00","target_timezone":"Europe/Paris"}"#,
        )
    };
    // A deny rule refuses that tool and only that one.
    let mark = format!("deny-{}", std::process::id());
    let w = World::new(
        vec![now(), convert(), Reply::text("done")],
        &format!(
            "permissions:\n  default: allow\n  deny: [mcp__time__get_current_time]\n{}",
            time_server(&python, &mark)
        ),
    );
    let out = w.run(&["-p", "what time is it?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = tool_results(&w);
    assert_eq!(
        results[0],
        "[denied by rule \"mcp__time__get_current_time\"]"
    );
    assert!(results[1].contains("Europe/Paris"), "{}", results[1]);
    assert!(
        text(&out.stderr).contains("[denied by rule \"mcp__time__get_current_time\"]"),
        "the terminal shows the rule: {}",
        text(&out.stderr)
    );

    // In ask mode without a terminal, an allow rule lets that tool run
    // while the other one, which would ask, is rejected.
    let mark = format!("allow-{}", std::process::id());
    let w = World::new(
        vec![now(), convert(), Reply::text("done")],
        &format!(
            "permissions:\n  default: ask\n  allow: [mcp__time__get_current_time]\n{}",
            time_server(&python, &mark)
        ),
    );
    let out = w.run(&["-p", "what time is it?"], None);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let results = tool_results(&w);
    assert!(results[0].contains("Etc/UTC"), "{}", results[0]);
    assert_eq!(
        results[1],
        "[not run: this call needs permission and there is no terminal to ask; use --permissions or an allow rule]"
    );
    assert!(text(&out.stderr).contains("no terminal to ask"));
}

#[test]
fn a_server_that_dies_is_started_again_on_the_next_call_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("received.jsonl");
    let mark = format!("restart-{}", std::process::id());
    let call = |id: &str, tool: &str, args: &str| Reply::tool_call(id, tool, args);
    let w = World::new(
        vec![
            call("c1", "mcp__fake__crash", "{}"),
            call("c2", "mcp__fake__echo", r#"{"text":"back"}"#),
            call("c3", "mcp__fake__crash", "{}"),
            call("c4", "mcp__fake__echo", r#"{"text":"again"}"#),
            call("c5", "bash", r#"{"command":"echo still here"}"#),
            Reply::text("done"),
        ],
        &format!(
            "mcpServers:\n  fake:\n    command: {}\n    args: [\"--log\", \"{}\"]\n    env: {{MM_TEST_MARK: {mark}}}\nmcp:\n  startTimeout: 20\n",
            mcp::fake_server().display(),
            log.display()
        ),
    );
    let out = w.run(&["-p", "go"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "done\n");
    let died = "[error: mcp server fake: the server exited with status 3 \
                (its last stderr line: mm-mcp-fake: crashing on purpose)";
    assert_eq!(
        tool_results(&w),
        [
            format!("{died}; it will be started again on the next call]"),
            "back".to_string(),
            format!("{died}; it was restarted once already and stays stopped]"),
            "[error: mcp server fake: the server is not running (the server exited with \
             status 3 (its last stderr line: mm-mcp-fake: crashing on purpose)); it was \
             restarted once already]"
                .to_string(),
            "still here\n".to_string(),
        ]
    );
    // Started twice: at the session's start and once on the call after
    // its first death; never a third time.
    let received = std::fs::read_to_string(&log).unwrap();
    let starts = received
        .lines()
        .filter(|l| l.contains("\"method\":\"initialize\""))
        .count();
    assert_eq!(starts, 2, "{received}");
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "a server outlived mm"
    );
}
