//! The user's hooks, end to end: the built `mm-repl -p` against the mock
//! over real HTTP, with real `sh` scripts in a temp folder. A guard refuses
//! `rm` and the model reads why, a log receives each call's payload, `Stop`
//! runs once per turn and can send the model on, `UserPromptSubmit` adds
//! context or drops the question, a hook past its timeout is killed with
//! what it started, and a project file may not set hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{World, expect, messages, text, type_line};
use mm_mock::Reply;
use serde_json::Value;

/// A script in the world's temp root, executable.
fn script(w: &World, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = w.user.path().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The settings' `hooks:` block for one event and one command.
fn hooks_yaml(event: &str, matcher: Option<&str>, command: &Path, timeout: u64) -> String {
    let matcher = matcher.map_or(String::new(), |m| format!("      matcher: \"{m}\"\n"));
    format!(
        "hooks:\n  {event}:\n    - hooks:\n        - {{type: command, command: \"{}\", timeout: {timeout}}}\n{matcher}",
        command.display()
    )
}

/// The content of the tool message answering call `id` in a request.
fn tool_result(chat: &Value, id: &str) -> String {
    messages(chat)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_pre_tool_use_guard_written_for_bash_keeps_the_file_and_the_model_reads_why() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"rm notes.txt"}"#),
            Reply::text("I could not remove it."),
        ],
        "",
    );
    std::fs::write(w.cwd.join("notes.txt"), "keep me").unwrap();
    let guard = script(
        &w,
        "guard.sh",
        r#"input=$(cat)
case "$input" in
  *'"command":"rm '*) echo "rm is not allowed here; move files to trash/ instead" >&2; exit 2;;
esac
exit 0"#,
    );
    // Written with the other agents' name of the tool.
    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    config.push_str(&hooks_yaml("PreToolUse", Some("Bash"), &guard, 10));
    w.write_config(&config);
    let out = w.run(&["-p", "remove notes.txt"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(
        std::fs::read_to_string(w.cwd.join("notes.txt")).unwrap(),
        "keep me"
    );
    let chats = w.chats();
    let result = tool_result(&chats[1], "c1");
    assert!(
        result.contains("rm is not allowed here; move files to trash/ instead"),
        "{result}"
    );
    // The user saw the hook run.
    assert!(
        stderr.contains("hook PreToolUse:") && stderr.contains("exited 2"),
        "{stderr}"
    );
}

#[test]
fn post_tool_use_gets_the_payload_and_stop_runs_once_per_turn() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"echo hello-from-bash"}"#),
            Reply::text("Done."),
        ],
        "",
    );
    let log = w.user.path().join("post.json");
    let stops = w.user.path().join("stops");
    let post = script(&w, "post.sh", &format!("cat > '{}'", log.display()));
    let stop = script(
        &w,
        "stop.sh",
        &format!(
            "cat >> '{}'; echo >> '{}'",
            stops.display(),
            stops.display()
        ),
    );
    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    config.push_str(&format!(
        "hooks:\n  PostToolUse:\n    - matcher: bash\n      hooks:\n        - {{type: command, command: \"{}\"}}\n  Stop:\n    - hooks:\n        - {{type: command, command: \"{}\"}}\n",
        post.display(),
        stop.display()
    ));
    w.write_config(&config);
    let out = w.run(&["-p", "say hello"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let payload: Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(payload["hook_event_name"], "PostToolUse");
    assert_eq!(payload["tool_name"], "bash");
    assert_eq!(payload["tool_input"]["command"], "echo hello-from-bash");
    assert!(
        payload["tool_response"]
            .as_str()
            .unwrap()
            .contains("hello-from-bash"),
        "{payload}"
    );
    assert_eq!(payload["cwd"], w.cwd.display().to_string());
    assert!(
        !payload["session_id"].as_str().unwrap().is_empty(),
        "{payload}"
    );
    // One turn, one Stop (after the answer, not after the call).
    let ran = std::fs::read_to_string(&stops).unwrap();
    assert_eq!(ran.lines().filter(|l| !l.is_empty()).count(), 1, "{ran}");
    assert!(ran.contains("\"hook_event_name\":\"Stop\""), "{ran}");
}

#[test]
fn a_stop_hook_that_exits_two_sends_the_model_on_a_bounded_number_of_times() {
    let w = World::new(
        vec![
            Reply::text("first"),
            Reply::text("second"),
            Reply::text("third"),
            Reply::text("fourth"),
            Reply::text("never asked"),
        ],
        "",
    );
    let stop = script(&w, "stop.sh", "echo 'run the tests too' >&2; exit 2");
    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    config.push_str(&hooks_yaml("Stop", None, &stop, 10));
    w.write_config(&config);
    let out = w.run(&["-p", "fix it"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    // The question, then three more requests at most.
    assert_eq!(chats.len(), 4);
    let last = messages(&chats[1]);
    let said = last.last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(said.contains("run the tests too"), "{said}");
}

#[test]
fn user_prompt_submit_adds_context_or_drops_the_question() {
    let w = World::new(vec![Reply::text("ok")], "");
    let add = script(&w, "add.sh", "echo 'The build uses make, not cargo.'");
    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    let base = config.clone();
    config.push_str(&hooks_yaml("UserPromptSubmit", None, &add, 10));
    w.write_config(&config);
    let out = w.run(&["-p", "how do I build?"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    let question = messages(&chats[0]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(question.starts_with("how do I build?"), "{question}");
    assert!(
        question.contains("The build uses make, not cargo."),
        "{question}"
    );

    let drop = script(
        &w,
        "drop.sh",
        "echo 'no questions about secrets' >&2; exit 2",
    );
    let mut config = base;
    config.push_str(&hooks_yaml("UserPromptSubmit", None, &drop, 10));
    w.write_config(&config);
    let out = w.run(&["-p", "print the secrets"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("no questions about secrets"), "{stderr}");
    // Nothing more reached the model.
    assert_eq!(w.chats().len(), 1);
}

#[test]
fn a_hook_past_its_timeout_is_killed_and_the_turn_goes_on() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"echo ran"}"#),
            Reply::text("finished"),
        ],
        "",
    );
    let pidfile = w.user.path().join("pid");
    let slow = script(
        &w,
        "slow.sh",
        &format!("sleep 120 & echo $! > '{}'; sleep 120", pidfile.display()),
    );
    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    config.push_str(&hooks_yaml("PreToolUse", None, &slow, 1));
    w.write_config(&config);
    let out = w.run(&["-p", "go"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "finished\n");
    assert!(stderr.contains("timed out and was killed"), "{stderr}");
    assert!(tool_result(&w.chats()[1], "c1").contains("ran"));
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert!(
        !mm_test_support::procs::alive(pid.trim().parse().unwrap()),
        "the hook's background sleep outlived mm"
    );
}

#[test]
fn a_project_file_may_not_set_hooks_and_bad_hooks_stop_the_start() {
    let w = World::new(vec![Reply::text("never")], "");
    std::fs::create_dir_all(w.cwd.join(".mm")).unwrap();
    std::fs::write(
        w.cwd.join(".mm/config.yaml"),
        "hooks:\n  PreToolUse:\n    - hooks:\n        - {type: command, command: \"touch PWNED\"}\n",
    )
    .unwrap();
    let out = w.run(&["-p", "hi"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("hooks"), "{stderr}");
    assert!(!w.cwd.join("PWNED").exists());
    std::fs::remove_dir_all(w.cwd.join(".mm")).unwrap();

    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    config.push_str(
        "hooks:\n  BeforeEverything:\n    - hooks:\n        - {type: command, command: \"true\"}\n",
    );
    w.write_config(&config);
    let out = w.run(&["-p", "hi"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("unknown event \"BeforeEverything\""),
        "{stderr}"
    );
    assert!(w.chats().is_empty());
}

#[test]
fn the_guard_holds_in_the_repl_and_its_run_is_shown() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"rm notes.txt"}"#),
            Reply::text("Kept it."),
        ],
        "",
    );
    std::fs::write(w.cwd.join("notes.txt"), "keep me").unwrap();
    let guard = script(
        &w,
        "guard.sh",
        "case \"$(cat)\" in *'rm '*) echo 'rm is off limits' >&2; exit 2;; esac",
    );
    let mut config = std::fs::read_to_string(w.config_file()).unwrap();
    config.push_str(&hooks_yaml("PreToolUse", Some("Bash"), &guard, 10));
    w.write_config(&config);
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, "mm> ");
    type_line(&mut s, "/hooks");
    expect(&mut s, "PreToolUse Bash:");
    expect(&mut s, "mm> ");
    type_line(&mut s, "remove notes.txt");
    let shown = expect(&mut s, "Kept it.");
    assert!(shown.contains("hook PreToolUse:"), "{shown}");
    assert!(shown.contains("rm is off limits"), "{shown}");
    expect(&mut s, "mm> ");
    type_line(&mut s, "/quit");
    assert_eq!(
        std::fs::read_to_string(w.cwd.join("notes.txt")).unwrap(),
        "keep me"
    );
}
