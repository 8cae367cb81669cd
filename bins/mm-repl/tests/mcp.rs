//! MCP servers through `mm-repl -p` against the mock model: the model calls
//! a real server's tool and gets its result in the next request; a broken
//! server is one line and the session goes on; the lazy `mcp` tool; no
//! server outlives mm.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{World, messages, text, wait_for};
use mm_mock::{Reply, Step};

/// Where `.ci/install-mcp` put the servers.
fn mcp_bin(name: &str, test: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("MM_MCP_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/mm-ci/mcp")
        }
    };
    let path = dir.join("bin").join(name);
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{} is not installed but CI is set: run .ci/install-mcp",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: {} is not installed (bash .ci/install-mcp installs it)",
        path.display()
    );
    None
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Live processes whose environment holds `VAR=value`.
fn processes_with_env(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}").into_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == needle.as_slice()) {
            found.push(pid);
        }
    }
    found
}

fn time_server(python: &std::path::Path, mark: &str) -> String {
    format!(
        "mcpServers:\n  time:\n    command: {}\n    args: [\"-m\", \"mcp_server_time\"]\n    env: {{MM_TEST_MARK: {mark}}}\nmcp:\n  startTimeout: 30\n",
        python.display()
    )
}

#[test]
fn the_model_calls_mcp_time_and_gets_the_result_in_the_next_request() {
    let Some(python) = mcp_bin("python3", "the_model_calls_mcp_time") else {
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
            "mcp__time__get_current_time",
            "mcp__time__convert_time"
        ]
    );
    let decl = &chats[0]["tools"][4]["function"];
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
        wait_for(Duration::from_secs(5), || processes_with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "a server outlived mm: {:?}",
        processes_with_env("MM_TEST_MARK", &mark)
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
        wait_for(Duration::from_secs(5), || processes_with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "the mute server outlived mm"
    );
}

#[test]
fn lazy_declarations_reveal_a_tool_and_append_it() {
    let Some(everything) = mcp_bin("mcp-server-everything", "lazy_declarations") else {
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
        ["bash", "read_file", "write_file", "edit_file", "mcp"]
    );
    let listing = chats[0]["tools"][4]["function"]["description"]
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
            "mcp",
            "mcp__everything__echo"
        ]
    );
    assert_eq!(
        chats[1]["tools"].as_array().unwrap()[..5],
        chats[0]["tools"].as_array().unwrap()[..5],
        "the prefix changed"
    );
    let third = messages(&chats[2]);
    assert_eq!(third.last().unwrap()["content"], "Echo: hi");
    assert_eq!(tool_names(&chats[2]), second);
}

#[test]
fn mcp_lazy_never_declares_everything_in_full() {
    let Some(everything) = mcp_bin("mcp-server-everything", "mcp_lazy_never") else {
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
    let Some(python) = mcp_bin("python3", "a_killed_mm_leaves_no_server_behind") else {
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
        processes_with_env("MM_TEST_MARK", &mark).len() >= 2,
        "the server is not running"
    );
    // SIGKILL: mm runs no code at all.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || processes_with_env(
            "MM_TEST_MARK",
            &mark
        )
        .is_empty()),
        "processes outlived a killed mm: {:?}",
        processes_with_env("MM_TEST_MARK", &mark)
    );
}
