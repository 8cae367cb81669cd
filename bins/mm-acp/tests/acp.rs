#![allow(clippy::unwrap_used, clippy::expect_used)]
//! End to end: the built `mm-acp` against the mock model server, driven by
//! the ACP SDK's own client. Every test also checks that each line the
//! agent wrote to stdout is JSON-RPC 2.0 and that it exits when its stdin
//! closes.

mod common;

use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, EmbeddedResource, EmbeddedResourceResource, ImageContent,
    ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest, ResourceLink,
    SessionConfigOptionValue, SessionId, SessionUpdate, SetSessionConfigOptionRequest, StopReason,
    TextResourceContents,
};
use common::*;
use mm_mock::{MockServer, Reply, Step};
use mm_test_support::git::git;
use mm_test_support::procs;
use mm_test_support::wait::eventually;
use serde_json::{Value, json};

fn kind_of(u: &SessionUpdate) -> String {
    serde_json::to_value(u).unwrap()["sessionUpdate"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Updates about tool call `id`, as JSON.
fn about(updates: &[SessionUpdate], id: &str) -> Vec<Value> {
    as_json(updates)
        .into_iter()
        .filter(|u| u["toolCallId"] == id)
        .collect()
}

/// Index of the first wire line matching `f`.
fn line_index(wire: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    wire.iter()
        .position(f)
        .unwrap_or_else(|| panic!("no such line in {wire:#?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn initialize_advertises_what_mm_implements() {
    let mock = MockServer::start(vec![]).await.unwrap();
    let env = Env::new(&mock, "");
    let wire = run(&env, vec![], async |ctx| {
        let response = ctx.initialize().await;
        assert_eq!(
            response.protocol_version,
            agent_client_protocol::schema::ProtocolVersion::V1
        );
    })
    .await;
    let lines = wire_json(&wire);
    let result = &lines[0]["result"];
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["agentInfo"]["name"], "mm");
    assert_eq!(result["agentInfo"]["title"], "mm");
    assert_eq!(result["agentInfo"]["version"], mm_agent::version());
    assert_eq!(result["authMethods"], json!([]));
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(
        caps["promptCapabilities"],
        json!({"image": true, "audio": false, "embeddedContext": true})
    );
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": false}));
    assert_eq!(caps["sessionCapabilities"]["list"], json!({}));
}

#[tokio::test(flavor = "multi_thread")]
async fn load_session_is_not_advertised_when_sessions_are_off() {
    let mock = MockServer::start(vec![]).await.unwrap();
    let env = Env::new(&mock, "sessions:\n  enabled: false\n");
    run(&env, vec![], async |ctx| {
        let response = ctx.initialize().await;
        assert!(!response.agent_capabilities.load_session);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_session_offers_the_editor_commands() {
    let mock = MockServer::start(vec![]).await.unwrap();
    let env = Env::new(&mock, "");
    let wire = run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let mut seen = Vec::new();
        let update = ctx
            .wait_for(&mut seen, |u| kind_of(u) == "available_commands_update")
            .await;
        let v = serde_json::to_value(update).unwrap();
        let expected: Vec<Value> = mm_agent::commands::for_front(mm_agent::commands::Front::Editor)
            .map(|c| {
                let mut cmd = json!({"name": c.name(), "description": c.description()});
                if let Some(hint) = c.argument() {
                    cmd["input"] = json!({"hint": hint});
                }
                cmd
            })
            .collect();
        assert_eq!(v["availableCommands"], Value::Array(expected));
        let names: Vec<_> = v["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "new",
                "compact",
                "undo",
                "redo",
                "diff",
                "mcp",
                "hooks",
                "permissions"
            ]
        );
        assert!(!id.0.is_empty());

        // A session/new that breaks the schema (no mcpServers) is -32602.
        let raw = serde_json::json!({"cwd": ctx.project});
        let err = ctx
            .cx
            .send_request(agent_client_protocol::UntypedMessage::new("session/new", raw).unwrap())
            .block_task()
            .await
            .unwrap_err();
        assert_eq!(i32::from(err.code), -32602, "{err:?}");
        // A relative cwd too.
        let err = ctx
            .cx
            .send_request(NewSessionRequest::new("relative/dir"))
            .block_task()
            .await
            .unwrap_err();
        assert_eq!(i32::from(err.code), -32602, "{err:?}");
    })
    .await;
    // The command list follows the answer to session/new.
    let lines = wire_json(&wire);
    let answer = line_index(&lines, |l| l["result"]["sessionId"].is_string());
    let commands = line_index(&lines, |l| {
        l["params"]["update"]["sessionUpdate"] == "available_commands_update"
    });
    assert!(answer < commands);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_streams_reasoning_and_text() {
    let mock = MockServer::start(vec![Reply::stream(vec![
        Step::reasoning("Let me think"),
        Step::reasoning(" about it."),
        Step::text("Hello"),
        Step::text(", world"),
    ])])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let response = ctx.prompt(&id, "say hello").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let updates = ctx.drain();
        assert_eq!(
            chunks(&updates, "agent_thought_chunk"),
            "Let me think about it."
        );
        assert_eq!(chunks(&updates, "agent_message_chunk"), "Hello, world");
        // Reasoning streams before the answer.
        let first_thought = updates
            .iter()
            .position(|u| kind_of(u) == "agent_thought_chunk")
            .unwrap();
        let first_text = updates
            .iter()
            .position(|u| kind_of(u) == "agent_message_chunk")
            .unwrap();
        assert!(first_thought < first_text);
    })
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let user = messages(&requests[0].body)
        .into_iter()
        .rfind(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(content_text(&user), "say hello");
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_allowed_once_is_asked_before_every_call() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"echo out; echo err >&2"}"#),
        Reply::tool_call("call_2", "bash", r#"{"command":"echo again"}"#),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    let wire = run(&env, vec!["allow_once", "allow_once"], async |mut ctx| {
        let id = ctx.start().await;
        let response = ctx.prompt(&id, "run it").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let updates = ctx.drain();
        let one = about(&updates, "call_1");
        assert_eq!(one.len(), 3, "{one:#?}");
        assert_eq!(one[0]["sessionUpdate"], "tool_call");
        assert_eq!(one[0]["kind"], "execute");
        assert_eq!(one[0]["title"], "echo out; echo err >&2");
        assert_eq!(
            one[0]["rawInput"],
            json!({"command": "echo out; echo err >&2"})
        );
        assert!(one[0].get("status").is_none_or(|s| s == "pending"));
        assert_eq!(one[1]["status"], "in_progress");
        assert_eq!(one[2]["status"], "completed");
        let output = one[2]["content"][0]["content"]["text"].as_str().unwrap();
        assert!(output.contains("out") && output.contains("err"), "{output}");
        let two = about(&updates, "call_2");
        assert_eq!(two.last().unwrap()["status"], "completed");
        // Asked once per call, with the call and the three options.
        let asked = ctx.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2);
        let first = serde_json::to_value(&asked[0]).unwrap();
        assert_eq!(first["toolCall"]["toolCallId"], "call_1");
        let options: Vec<_> = first["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
        assert_eq!(chunks(&updates, "agent_message_chunk"), "done");
    })
    .await;
    // On the wire: tool_call, then the question, then in_progress, then completed.
    let lines = wire_json(&wire);
    let call = line_index(&lines, |l| {
        l["params"]["update"]["sessionUpdate"] == "tool_call"
            && l["params"]["update"]["toolCallId"] == "call_1"
    });
    let asked = line_index(&lines, |l| {
        l["method"] == "session/request_permission"
            && l["params"]["toolCall"]["toolCallId"] == "call_1"
    });
    let running = line_index(&lines, |l| {
        l["params"]["update"]["toolCallId"] == "call_1"
            && l["params"]["update"]["status"] == "in_progress"
    });
    let done = line_index(&lines, |l| {
        l["params"]["update"]["toolCallId"] == "call_1"
            && l["params"]["update"]["status"] == "completed"
    });
    assert!(call < asked && asked < running && running < done);
    // The model saw the command's output (stdout and stderr, never our stdout).
    let requests = mock.requests();
    let tool = messages(&requests[1].body)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(content_text(&tool), "out\nerr\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_allowed_always_records_the_command_prefix_for_the_session() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"echo one"}"#),
        Reply::tool_call("call_2", "bash", r#"{"command":"echo one two"}"#),
        Reply::text("done"),
        Reply::tool_call("call_3", "bash", r#"{"command":"echo one three"}"#),
        Reply::tool_call("call_4", "bash", r#"{"command":"printf four"}"#),
        Reply::text("done again"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec!["allow_always"], async |mut ctx| {
        let id = ctx.start().await;
        assert_eq!(
            ctx.prompt(&id, "first").await.stop_reason,
            StopReason::EndTurn
        );
        assert_eq!(
            ctx.prompt(&id, "second").await.stop_reason,
            StopReason::EndTurn
        );
        let updates = ctx.drain();
        for (call, out) in [
            ("call_1", "one\n"),
            ("call_2", "one two\n"),
            ("call_3", "one three\n"),
            ("call_4", "four"),
        ] {
            let last = about(&updates, call).pop().unwrap();
            assert_eq!(last["status"], "completed", "{call}");
            assert_eq!(last["content"][0]["content"]["text"], out, "{call}");
        }
        // Asked for the first call and for the other command only.
        let asked: Vec<String> = ctx
            .asked
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.tool_call.tool_call_id.0.to_string())
            .collect();
        assert_eq!(asked, ["call_1", "call_4"]);
        assert!(
            chunks(&updates, "agent_message_chunk")
                .contains("session rule added: bash(echo one *)"),
            "{updates:#?}"
        );
        // /permissions lists the session's rule.
        ctx.prompt(&id, "/permissions").await;
        let listed = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(
            listed.contains("allowed for this session: bash(echo one *)"),
            "{listed}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_call_fails_with_the_rule_and_is_never_asked() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"ls && rm -rf victim"}"#),
        Reply::text("ok"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "permissions:\n  deny: [\"bash(rm -rf *)\"]\n");
    std::fs::create_dir(env.project.join("victim")).unwrap();
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        assert_eq!(
            ctx.prompt(&id, "clean").await.stop_reason,
            StopReason::EndTurn
        );
        let updates = ctx.drain();
        let call = about(&updates, "call_1");
        let last = call.last().unwrap();
        assert_eq!(last["status"], "failed");
        assert_eq!(
            last["content"][0]["content"]["text"],
            "[denied by rule \"bash(rm -rf *)\"]"
        );
        assert!(ctx.asked.lock().unwrap().is_empty());
    })
    .await;
    assert!(env.project.join("victim").exists());
}

/// The user's `PreToolUse` guard holds in an editor too: the call fails
/// with the hook's words as its content, without asking, and the file
/// stays.
#[tokio::test(flavor = "multi_thread")]
async fn a_pre_tool_use_hook_refuses_the_call_in_an_editor() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"rm notes.txt"}"#),
        Reply::text("ok"),
    ])
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let guard = dir.path().join("guard.sh");
    std::fs::write(
        &guard,
        "#!/bin/sh\ncase \"$(cat)\" in *'rm '*) echo 'no rm: use trash/' >&2; exit 2;; esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = Env::new(
        &mock,
        &format!(
            "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - {{type: command, command: \"{}\"}}\n",
            guard.display()
        ),
    );
    std::fs::write(env.project.join("notes.txt"), "keep").unwrap();
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        assert_eq!(
            ctx.prompt(&id, "clean").await.stop_reason,
            StopReason::EndTurn
        );
        let updates = ctx.drain();
        let call = about(&updates, "call_1");
        let last = call.last().unwrap();
        assert_eq!(last["status"], "failed");
        assert_eq!(last["content"][0]["content"]["text"], "no rm: use trash/");
        assert!(ctx.asked.lock().unwrap().is_empty());
    })
    .await;
    assert!(env.project.join("notes.txt").exists());
}

/// The editor server reads a line as the terminal does (the shared
/// policy): a spelling of a denied command is denied without asking, and a
/// line that makes bash evaluate a variable's value asks although `echo`
/// is allowed.
#[tokio::test(flavor = "multi_thread")]
async fn the_rules_read_hostile_lines_as_the_terminal_does() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"{rm,-rf,victim}"}"#),
        Reply::tool_call(
            "call_2",
            "bash",
            r#"{"command":"for x in 'a[$(touch E1)]'; do echo ${!x}; done"}"#,
        ),
        Reply::text("ok"),
    ])
    .await
    .unwrap();
    let env = Env::new(
        &mock,
        "permissions:\n  allow: [\"bash(echo *)\"]\n  deny: [\"bash(rm -rf *)\"]\n",
    );
    std::fs::create_dir(env.project.join("victim")).unwrap();
    run(&env, vec!["reject_once"], async |mut ctx| {
        let id = ctx.start().await;
        assert_eq!(ctx.prompt(&id, "go").await.stop_reason, StopReason::EndTurn);
        let updates = ctx.drain();
        let denied = about(&updates, "call_1");
        assert_eq!(
            denied.last().unwrap()["content"][0]["content"]["text"],
            "[denied by rule \"bash(rm -rf *)\"]"
        );
        let asked = ctx.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        let asked = serde_json::to_value(&asked[0]).unwrap();
        assert_eq!(asked["toolCall"]["toolCallId"], "call_2");
        assert_eq!(
            about(&updates, "call_2").last().unwrap()["status"],
            "failed"
        );
    })
    .await;
    assert!(env.project.join("victim").exists());
    assert!(!env.project.join("E1").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_rejected_tells_the_model_and_does_not_run() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"touch made-by-bash"}"#),
        Reply::text("ok, I will not"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec!["reject_once"], async |mut ctx| {
        let id = ctx.start().await;
        let response = ctx.prompt(&id, "make a file").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let updates = ctx.drain();
        let call = about(&updates, "call_1");
        assert_eq!(call.len(), 2, "straight from pending to failed: {call:#?}");
        assert_eq!(
            call[1],
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "failed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "[command rejected by the user]"}}]})
        );
        assert!(!ctx.project.join("made-by-bash").exists());
        assert_eq!(chunks(&updates, "agent_message_chunk"), "ok, I will not");
    })
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let tool = messages(&requests[1].body)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(content_text(&tool), "[command rejected by the user]");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_travels_as_a_whole_file_diff() {
    let mock = MockServer::start(vec![
        Reply::tool_call(
            "call_1",
            "edit_file",
            r#"{"path":"notes.txt","edits":[{"old":"hello","new":"goodbye"}]}"#,
        ),
        Reply::text("edited"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    std::fs::write(env.project.join("notes.txt"), "hello world\nsecond line\n").unwrap();
    let path = env.project.join("notes.txt").display().to_string();
    run(&env, vec!["allow_once"], async |mut ctx| {
        let id = ctx.start().await;
        let response = ctx.prompt(&id, "edit notes").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let diff = json!({"type": "diff", "path": path, "oldText": "hello world\nsecond line\n",
                          "newText": "goodbye world\nsecond line\n"});
        let updates = ctx.drain();
        let call = about(&updates, "call_1");
        assert_eq!(call[0]["sessionUpdate"], "tool_call");
        assert_eq!(call[0]["kind"], "edit");
        assert_eq!(call[0]["locations"], json!([{"path": path}]));
        assert_eq!(call[0]["content"], json!([diff.clone()]));
        // The dialog shows the diff too.
        let asked = serde_json::to_value(&ctx.asked.lock().unwrap()[0]).unwrap();
        assert_eq!(asked["toolCall"]["content"], json!([diff.clone()]));
        let last = call.last().unwrap();
        assert_eq!(last["status"], "completed");
        assert_eq!(last["content"][0], diff);
        assert_eq!(last["content"][1]["type"], "content");
        assert_eq!(
            std::fs::read_to_string(ctx.project.join("notes.txt")).unwrap(),
            "goodbye world\nsecond line\n"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_kills_the_command_group_and_answers_cancelled() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_1", "bash", r#"{"command":"sleep 37"}"#),
        Reply::text("never needed"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    let wire = run(&env, vec!["allow_once"], async |mut ctx| {
        let id = ctx.start().await;
        let pending = ctx
            .cx
            .send_request(PromptRequest::new(id.clone(), vec![text_block("wait")]));
        let mut seen = Vec::new();
        ctx.wait_for(&mut seen, |u| {
            let v = serde_json::to_value(u).unwrap();
            v["toolCallId"] == "call_1" && v["status"] == "in_progress"
        })
        .await;
        // The command is running: find its process group.
        let pgrp = running_sleep("37").await;
        let started = Instant::now();
        ctx.cx
            .send_notification(CancelNotification::new(id.clone()))
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(10), pending.block_task())
            .await
            .expect("cancel was not answered")
            .unwrap();
        assert_eq!(response.stop_reason, StopReason::Cancelled);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        // The whole group is gone.
        assert_group_dies(pgrp).await;
        // The call was closed as failed before the answer; nothing follows.
        seen.extend(ctx.drain());
        let call = about(&seen, "call_1");
        assert_eq!(call.last().unwrap()["status"], "failed", "{call:#?}");
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(ctx.drain().is_empty(), "updates after the cancelled answer");
    })
    .await;
    let lines = wire_json(&wire);
    let answer = line_index(&lines, |l| l["result"]["stopReason"] == "cancelled");
    let failed = line_index(&lines, |l| {
        l["params"]["update"]["toolCallId"] == "call_1"
            && l["params"]["update"]["status"] == "failed"
    });
    assert!(failed < answer);
    assert!(
        lines[answer + 1..]
            .iter()
            .all(|l| l["method"] != "session/update"),
        "an update followed the cancelled answer"
    );
    // The model was not asked again after the cancel.
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn load_replays_a_saved_session_and_list_finds_it() {
    let mock = MockServer::start(vec![
        Reply::stream(vec![
            Step::reasoning("I should check."),
            Step::ToolCall {
                index: 0,
                id: Some("call_1".into()),
                name: "bash".into(),
                arguments: r#"{"command":"echo seven"}"#.into(),
            },
        ]),
        Reply::text("Noted: 7"),
        Reply::text("It was 7."),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "acp:\n  permissions: allow\n");
    // First process: one turn, saved.
    let first_id = std::sync::Mutex::new(String::new());
    run(&env, vec![], async |ctx| {
        let id = ctx.start().await;
        *first_id.lock().unwrap() = id.0.to_string();
        assert_eq!(
            ctx.prompt(&id, "remember the number 7").await.stop_reason,
            StopReason::EndTurn
        );
        assert!(
            ctx.asked.lock().unwrap().is_empty(),
            "acp.permissions: allow must not ask"
        );
    })
    .await;
    let other = env.root().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    // Second process: list, load, continue.
    run(&env, vec![], async |mut ctx| {
        assert!(ctx.initialize().await.agent_capabilities.load_session);
        let listed = ctx
            .cx
            .send_request(ListSessionsRequest::new().cwd(ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        assert_eq!(listed.sessions.len(), 1, "{listed:?}");
        let info = &listed.sessions[0];
        assert_eq!(info.session_id.0.to_string(), *first_id.lock().unwrap(), "session/new's id is the saved one");
        assert_eq!(info.cwd, ctx.project);
        assert_eq!(info.title.as_deref(), Some("remember the number 7"));
        let updated = info.updated_at.clone().expect("updatedAt");
        assert!(time::OffsetDateTime::parse(&updated, &time::format_description::well_known::Rfc3339).is_ok());
        let all = ctx.cx.send_request(ListSessionsRequest::new()).block_task().await.unwrap();
        assert!(all.sessions.iter().any(|s| s.session_id == info.session_id));
        let none = ctx
            .cx
            .send_request(ListSessionsRequest::new().cwd(other.clone()))
            .block_task()
            .await
            .unwrap();
        assert!(none.sessions.is_empty());

        // An unknown id is -32002.
        let err = ctx
            .cx
            .send_request(LoadSessionRequest::new("no-such-session", ctx.project.clone()))
            .block_task()
            .await
            .unwrap_err();
        assert_eq!(i32::from(err.code), -32002);

        let id = info.session_id.clone();
        ctx.cx
            .send_request(LoadSessionRequest::new(id.clone(), ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        // Everything was replayed before the answer.
        let replay: Vec<_> = ctx
            .drain()
            .into_iter()
            .filter(|u| kind_of(u) != "available_commands_update")
            .collect();
        let text = |kind: &str, t: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": t}});
        assert_eq!(
            as_json(&replay),
            vec![
                text("user_message_chunk", "remember the number 7"),
                text("agent_thought_chunk", "I should check."),
                json!({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "echo seven",
                       "kind": "execute", "rawInput": {"command": "echo seven"}}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "seven\n"}}]}),
                text("agent_message_chunk", "Noted: 7"),
            ]
        );
        // The loaded session goes on with its history.
        assert_eq!(ctx.prompt(&id, "what was it?").await.stop_reason, StopReason::EndTurn);
        assert_eq!(chunks(&ctx.drain(), "agent_message_chunk"), "It was 7.");
    })
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let history: Vec<String> = messages(&requests[2].body)
        .iter()
        .map(content_text)
        .collect();
    assert!(
        history.iter().any(|m| m == "remember the number 7"),
        "{history:?}"
    );
    assert!(history.iter().any(|m| m == "Noted: 7"), "{history:?}");
    assert_eq!(history.last().unwrap(), "what was it?");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_prompts_at_once_run_one_after_the_other() {
    let mock = MockServer::start(vec![
        Reply::stream(vec![Step::stall(1500), Step::text("first answer")]),
        Reply::text("second answer"),
        Reply::stream(vec![Step::stall(700), Step::text("third answer")]),
        Reply::text("fourth answer"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    let wire = run(&env, vec![], async |mut ctx| {
        // Two sessions: turns are serialised per process, not per session.
        let a = ctx.start().await;
        let b = ctx
            .cx
            .send_request(NewSessionRequest::new(ctx.project.clone()))
            .block_task()
            .await
            .unwrap()
            .session_id;
        let pa = ctx.cx.send_request(PromptRequest::new(
            a.clone(),
            vec![text_block("question A")],
        ));
        let pb = ctx.cx.send_request(PromptRequest::new(
            b.clone(),
            vec![text_block("question B")],
        ));
        // While the first generation stalls, the other turn has not asked
        // the model anything.
        tokio::time::sleep(Duration::from_millis(900)).await;
        assert_eq!(mock.requests().len(), 1, "two generations ran at once");
        let (ra, rb) = futures::join!(pa.block_task(), pb.block_task());
        assert_eq!(ra.unwrap().stop_reason, StopReason::EndTurn);
        assert_eq!(rb.unwrap().stop_reason, StopReason::EndTurn);
        assert_eq!(mock.requests().len(), 2);

        // The same session twice: the second turn sees the first one's answer.
        let p3 = ctx.cx.send_request(PromptRequest::new(
            a.clone(),
            vec![text_block("question C")],
        ));
        let p4 = ctx.cx.send_request(PromptRequest::new(
            a.clone(),
            vec![text_block("question D")],
        ));
        let (r3, r4) = futures::join!(p3.block_task(), p4.block_task());
        assert_eq!(r3.unwrap().stop_reason, StopReason::EndTurn);
        assert_eq!(r4.unwrap().stop_reason, StopReason::EndTurn);
        let texts = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(texts.ends_with("third answerfourth answer"), "{texts}");
    })
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let fourth: Vec<String> = messages(&requests[3].body)
        .iter()
        .map(content_text)
        .collect();
    assert!(fourth.iter().any(|m| m == "third answer"), "{fourth:?}");
    // On the wire, the first turn is answered before the second one speaks.
    let lines = wire_json(&wire);
    let first_end = line_index(&lines, |l| l["result"]["stopReason"].is_string());
    let second_text = line_index(&lines, |l| {
        l["params"]["update"]["content"]["text"] == "second answer"
    });
    assert!(first_end < second_text);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_session_runs_in_its_own_cwd() {
    let mock = MockServer::start(vec![
        Reply::tool_call("call_a", "bash", r#"{"command":"pwd"}"#),
        Reply::text("a"),
        Reply::tool_call("call_b", "bash", r#"{"command":"pwd"}"#),
        Reply::text("b"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "acp:\n  permissions: allow\n");
    let second = env.root().join("second");
    std::fs::create_dir_all(&second).unwrap();
    run(&env, vec![], async |mut ctx| {
        let a = ctx.start().await;
        let b = ctx
            .cx
            .send_request(NewSessionRequest::new(second.clone()))
            .block_task()
            .await
            .unwrap()
            .session_id;
        assert_ne!(a, b);
        ctx.prompt(&a, "where?").await;
        ctx.prompt(&b, "where?").await;
        let updates = ctx.drain();
        let out =
            |id: &str| about(&updates, id).pop().unwrap()["content"][0]["content"]["text"].clone();
        assert_eq!(out("call_a"), format!("{}\n", ctx.project.display()));
        assert_eq!(out("call_b"), format!("{}\n", second.display()));
    })
    .await;
}

/// A 1×1 PNG in base64.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[tokio::test(flavor = "multi_thread")]
async fn an_image_prompt_reaches_the_model_and_a_read_image_reaches_the_editor() {
    let mock = MockServer::start(vec![
        Reply::text("A dot."),
        Reply::tool_call("c1", "read_file", r#"{"path": "dot.png"}"#),
        Reply::text("Read it."),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "vision: true\npermissions:\n  allow: [read_file]\n");
    use base64_png::bytes;
    std::fs::write(env.project.join("dot.png"), bytes()).unwrap();
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let prompt = vec![
            text_block("what is this?"),
            ContentBlock::Image(ImageContent::new(PNG_B64, "image/png")),
        ];
        let response = ctx
            .cx
            .send_request(PromptRequest::new(id.clone(), prompt))
            .block_task()
            .await
            .unwrap();
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        ctx.prompt(&id, "read dot.png").await;
        let updates = as_json(&ctx.drain());
        let ended = updates
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
            .unwrap_or_else(|| panic!("{updates:#?}"));
        assert_eq!(
            ended["content"][1],
            json!({"type": "content", "content": {"type": "image", "data": PNG_B64, "mimeType": "image/png"}}),
            "{ended:#}"
        );
    })
    .await;
    let user = &messages(&mock.requests()[0].body)[1];
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}}
        ])
    );
}

/// The PNG of [`PNG_B64`] as bytes.
mod base64_png {
    pub fn bytes() -> Vec<u8> {
        vec![
            137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1,
            8, 6, 0, 0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 248,
            207, 80, 15, 0, 3, 134, 1, 128, 90, 52, 125, 107, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66,
            96, 130,
        ]
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn links_and_embedded_files_reach_the_model() {
    let mock = MockServer::start(vec![Reply::text("seen")]).await.unwrap();
    let env = Env::new(&mock, "");
    std::fs::write(env.project.join("a file.txt"), "A\n").unwrap();
    let linked = env.project.join("a file.txt").display().to_string();
    let embedded = env.project.join("b.rs").display().to_string();
    run(&env, vec![], async |ctx| {
        let id = ctx.start().await;
        let prompt = vec![
            text_block("compare "),
            ContentBlock::ResourceLink(ResourceLink::new(
                "a file.txt",
                format!("file://{}", linked.replace(' ', "%20")),
            )),
            text_block(" with the other"),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn b() {}\n",
                    format!("file://{embedded}"),
                )),
            )),
        ];
        let response = ctx
            .cx
            .send_request(PromptRequest::new(id, prompt))
            .block_task()
            .await
            .unwrap();
        assert_eq!(response.stop_reason, StopReason::EndTurn);
    })
    .await;
    let user = messages(&mock.requests()[0].body)
        .into_iter()
        .rfind(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        content_text(&user),
        format!(
            "compare  with the other\n\n[attached file: {embedded}]\n```\nfn b() {{}}\n```\n\n[attached file: {linked}]\n```\nA\n```"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_engine_failure_is_a_message_and_ends_the_turn() {
    let mock = MockServer::start(vec![Reply::status(500, "the server broke")])
        .await
        .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let response = ctx.prompt(&id, "hello?").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let text = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(text.contains("error: "), "{text:?}");
        assert!(text.contains("500"), "{text:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn max_turns_stops_with_max_turn_requests() {
    let mock = MockServer::start(vec![Reply::tool_call(
        "call_1",
        "bash",
        r#"{"command":"echo x"}"#,
    )])
    .await
    .unwrap();
    let env = Env::new(&mock, "maxTurns: 1\n");
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let response = ctx.prompt(&id, "loop").await;
        assert_eq!(response.stop_reason, StopReason::MaxTurnRequests);
        let updates = ctx.drain();
        assert!(
            chunks(&updates, "agent_message_chunk").contains("[stopped: maxTurns (1) reached]")
        );
        // The calls of the last reply are not run, so never shown.
        assert!(about(&updates, "call_1").is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn slash_commands_of_the_editor_slice_run_without_the_model() {
    let mock = MockServer::start(vec![Reply::text("after new")])
        .await
        .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        assert_eq!(
            ctx.prompt(&id, "/compact").await.stop_reason,
            StopReason::EndTurn
        );
        assert_eq!(
            chunks(&ctx.drain(), "agent_message_chunk"),
            "nothing to compact yet"
        );
        assert_eq!(
            ctx.prompt(&id, "/copy").await.stop_reason,
            StopReason::EndTurn
        );
        assert_eq!(
            chunks(&ctx.drain(), "agent_message_chunk"),
            "unknown command /copy; the commands here are /new, /compact, /undo, /redo, /diff, /mcp, /hooks, /permissions"
        );
        assert_eq!(
            ctx.prompt(&id, "/new").await.stop_reason,
            StopReason::EndTurn
        );
        assert_eq!(
            chunks(&ctx.drain(), "agent_message_chunk"),
            "Started a new session."
        );
        assert_eq!(ctx.prompt(&id, "hi").await.stop_reason, StopReason::EndTurn);
    })
    .await;
    // Only the real question reached the model.
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn new_keeps_the_session_id_and_load_replays_what_followed() {
    let mock = MockServer::start(vec![
        Reply::text("before answer"),
        Reply::text("after answer"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    let first_id = std::sync::Mutex::new(String::new());
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        *first_id.lock().unwrap() = id.0.to_string();
        ctx.prompt(&id, "before new").await;
        assert_eq!(
            ctx.prompt(&id, "/new").await.stop_reason,
            StopReason::EndTurn
        );
        assert_eq!(
            ctx.prompt(&id, "after new").await.stop_reason,
            StopReason::EndTurn
        );
        ctx.drain();
    })
    .await;
    // The model did not see the conversation before /new.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let history: Vec<String> = messages(&requests[1].body)
        .iter()
        .map(content_text)
        .collect();
    assert!(!history.iter().any(|m| m == "before new"), "{history:?}");
    assert_eq!(history.last().unwrap(), "after new");

    // Another process: the editor's id still names the session, and it
    // holds what came after /new.
    run(&env, vec![], async |mut ctx| {
        ctx.initialize().await;
        let id = SessionId::new(first_id.lock().unwrap().clone());
        let listed = ctx
            .cx
            .send_request(ListSessionsRequest::new().cwd(ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        let ids: Vec<String> = listed
            .sessions
            .iter()
            .map(|s| s.session_id.0.to_string())
            .collect();
        assert_eq!(
            ids,
            [id.0.to_string()],
            "/new must not start another session file"
        );
        ctx.cx
            .send_request(LoadSessionRequest::new(id.clone(), ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        let replay = ctx.drain();
        assert_eq!(chunks(&replay, "user_message_chunk"), "after new");
        assert_eq!(chunks(&replay, "agent_message_chunk"), "after answer");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_lines_get_errors_and_the_agent_stays_up() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mock = MockServer::start(vec![]).await.unwrap();
    let env = Env::new(&mock, "");
    let (mut child, mut stdin, stdout) = env.spawn();
    let mut lines = BufReader::new(stdout).lines();
    let mut wire: Vec<String> = Vec::new();
    let mut send = async |line: &[u8]| {
        stdin.write_all(line).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    };
    let project = env.project.display().to_string();
    send(b"this is not json").await;
    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#
            .as_bytes(),
    )
    .await;
    // A client waits for `initialize` before anything else (requests sent
    // while it is in flight are refused by the protocol).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut early = Vec::new();
    loop {
        let line = tokio::time::timeout_at(deadline, lines.next_line())
            .await
            .expect("no answer to initialize")
            .unwrap()
            .expect("the agent closed stdout");
        wire.push(line.clone());
        let v: Value = serde_json::from_str(&line).unwrap();
        let done = v["id"] == 1;
        early.push(v);
        if done {
            break;
        }
    }
    send(r#"[]"#.as_bytes()).await;
    // Bytes that are not UTF-8 are a malformed line too, not the end.
    send(b"\xff\xfe garbage").await;
    send(r#"{"jsonrpc":"2.0","id":2,"method":7}"#.as_bytes()).await;
    send(r#"{"jsonrpc":"2.0","id":3,"method":"session/frobnicate","params":{}}"#.as_bytes()).await;
    send(r#"{"jsonrpc":"2.0","id":4,"method":"_mm/unknown","params":{}}"#.as_bytes()).await;
    send(
        format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"session/new","params":{{"cwd":"{project}"}}}}"#
        )
        .as_bytes(),
    )
    .await;
    send(r#"{"jsonrpc":"2.0","method":"_mm/some_notification","params":{}}"#.as_bytes()).await;
    send(r#"{"jsonrpc":"2.0","method":"session/frobnicated","params":{}}"#.as_bytes()).await;
    send(r#"{"jsonrpc":"2.0","id":6,"method":"session/list","params":{}}"#.as_bytes()).await;
    send(format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"session/new","params":{{"cwd":"{project}","mcpServers":[]}}}}"#
    ).as_bytes())
    .await;

    // Read until every request has its answer: ids 1 and 3..=7, plus four
    // errors without an id (`"method": 7` has an unreadable shape, so its
    // id is not trusted either).
    let mut by_id = std::collections::BTreeMap::new();
    let mut null_errors = Vec::new();
    let mut pending: std::collections::VecDeque<Value> = early.into();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while by_id.len() < 6 || null_errors.len() < 4 {
        let v = match pending.pop_front() {
            Some(v) => v,
            None => {
                let line = tokio::time::timeout_at(deadline, lines.next_line())
                    .await
                    .expect("the agent stopped answering")
                    .unwrap()
                    .expect("the agent closed stdout");
                wire.push(line.clone());
                serde_json::from_str(&line).unwrap()
            }
        };
        match &v["id"] {
            Value::Number(n) => {
                by_id.insert(n.as_i64().unwrap(), v);
            }
            Value::Null if v.get("error").is_some() => null_errors.push(v),
            _ => {}
        }
    }
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap();
    let mut nulls: Vec<i64> = null_errors.iter().map(code).collect();
    nulls.sort();
    // `this is not json` and the bytes that are not UTF-8 → parse error;
    // `[]` (a batch) and `"method": 7` →
    // invalid request (answered without an id when none can be read).
    assert!(nulls.contains(&-32700), "{null_errors:?}");
    assert!(
        nulls.iter().filter(|c| **c == -32600).count() >= 1,
        "{null_errors:?}"
    );
    assert_eq!(by_id[&1]["result"]["protocolVersion"], 1);
    assert!(!by_id.contains_key(&2), "{:?}", by_id.get(&2));
    assert_eq!(nulls, [-32700, -32700, -32600, -32600], "{null_errors:?}");
    assert_eq!(code(&by_id[&3]), -32601);
    assert_eq!(code(&by_id[&4]), -32601);
    assert_eq!(code(&by_id[&5]), -32602);
    assert!(
        by_id[&6]["result"]["sessions"].is_array(),
        "{:?}",
        by_id[&6]
    );
    assert!(
        by_id[&7]["result"]["sessionId"].is_string(),
        "{:?}",
        by_id[&7]
    );

    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("mm-acp did not exit after stdin closed")
        .unwrap();
    assert!(status.success());
    while let Ok(Some(line)) = lines.next_line().await {
        wire.push(line);
    }
    let recorded: Wire = std::sync::Arc::new(std::sync::Mutex::new(wire));
    assert_jsonrpc(&recorded);
}

#[test]
fn version_and_print_config_flags() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mm-acp"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("mm-acp {}\n", mm_agent::version())
    );

    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mm-acp"))
        .arg("--print-config")
        .arg("--model")
        .arg("openai-compatible/x")
        .current_dir(home.path())
        .env_clear()
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // No protocol runs: the same output, on stdout, as every binary's.
    let text = String::from_utf8(out.stdout).unwrap();
    let model = text.lines().find(|l| l.starts_with("model ")).unwrap();
    assert!(
        model.contains("openai-compatible/x") && model.contains("--model"),
        "{model}"
    );
    assert!(text.contains("acp.permissions"));

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mm-acp"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("--print-config")
    );

    // A flag error is not output: stderr and exit 2.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mm-acp"))
        .arg("--no-such-flag")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("--no-such-flag")
    );
}

/// Wait (bounded) until the running `sleep <secs>` shows up; its group.
async fn running_sleep(secs: &str) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(&(_, pgrp)) = procs::with_argv(&["sleep", secs]).first() {
            return pgrp;
        }
        assert!(Instant::now() < deadline, "sleep {secs} never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn assert_group_dies(pgrp: i32) {
    assert!(
        eventually(Duration::from_secs(5), || procs::group_members(pgrp)
            .is_empty())
        .await,
        "group {pgrp} still alive: {:?}",
        procs::group_members(pgrp)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_stdin_kills_the_running_command_and_exits() {
    let mock = MockServer::start(vec![Reply::tool_call(
        "call_1",
        "bash",
        r#"{"command":"sleep 38"}"#,
    )])
    .await
    .unwrap();
    let env = Env::new(&mock, "acp:\n  permissions: allow\n");
    let mut pgrp = 0;
    // `run` closes stdin when the body returns, then waits for the exit.
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let _pending = ctx
            .cx
            .send_request(PromptRequest::new(id, vec![text_block("wait")]));
        let mut seen = Vec::new();
        ctx.wait_for(&mut seen, |u| {
            serde_json::to_value(u).unwrap()["status"] == "in_progress"
        })
        .await;
        pgrp = running_sleep("38").await;
    })
    .await;
    assert_group_dies(pgrp).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_kills_the_running_command_and_exits() {
    let mock = MockServer::start(vec![Reply::tool_call(
        "call_1",
        "bash",
        r#"{"command":"sleep 39"}"#,
    )])
    .await
    .unwrap();
    let env = Env::new(&mock, "acp:\n  permissions: allow\n");
    let mut pgrp = 0;
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let pending = ctx
            .cx
            .send_request(PromptRequest::new(id, vec![text_block("wait")]));
        let mut seen = Vec::new();
        ctx.wait_for(&mut seen, |u| {
            serde_json::to_value(u).unwrap()["status"] == "in_progress"
        })
        .await;
        pgrp = running_sleep("39").await;
        // SAFETY: kill(2) on the child we spawned.
        let rc = unsafe { libc::kill(ctx.pid as i32, libc::SIGTERM) };
        assert_eq!(rc, 0);
        // The connection ends with the process; the prompt gets no answer.
        let answer = tokio::time::timeout(Duration::from_secs(10), pending.block_task())
            .await
            .expect("the connection did not end");
        assert!(answer.is_err());
    })
    .await;
    assert_group_dies(pgrp).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn loading_a_session_that_is_live_in_this_process_reuses_it() {
    let mock = MockServer::start(vec![Reply::text("one"), Reply::text("two")])
        .await
        .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec![], async |mut ctx| {
        let live = ctx.start().await;
        ctx.prompt(&live, "first question").await;
        ctx.drain();
        let listed = ctx
            .cx
            .send_request(ListSessionsRequest::new().cwd(ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        assert_eq!(listed.sessions.len(), 1);
        let saved = listed.sessions[0].session_id.clone();
        ctx.cx
            .send_request(LoadSessionRequest::new(saved.clone(), ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        let replay = ctx.drain();
        assert_eq!(chunks(&replay, "user_message_chunk"), "first question");
        assert_eq!(chunks(&replay, "agent_message_chunk"), "one");
        // Continuing under the saved id goes on with the same conversation.
        assert_eq!(
            ctx.prompt(&saved, "second question").await.stop_reason,
            StopReason::EndTurn
        );
    })
    .await;
    let history: Vec<String> = messages(&mock.requests()[1].body)
        .iter()
        .map(content_text)
        .collect();
    assert!(history.iter().any(|m| m == "first question"), "{history:?}");
    assert!(history.iter().any(|m| m == "one"), "{history:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_stops_the_stream_and_a_waiting_prompt() {
    let mock = MockServer::start(vec![
        Reply::stream(vec![
            Step::text("partial "),
            Step::stall(5000),
            Step::text("never"),
        ]),
        Reply::text("not asked"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec![], async |mut ctx| {
        let id = ctx.start().await;
        let first = ctx
            .cx
            .send_request(PromptRequest::new(id.clone(), vec![text_block("one")]));
        let second = ctx
            .cx
            .send_request(PromptRequest::new(id.clone(), vec![text_block("two")]));
        let mut seen = Vec::new();
        ctx.wait_for(&mut seen, |u| kind_of(u) == "agent_message_chunk")
            .await;
        let started = Instant::now();
        ctx.cx
            .send_notification(CancelNotification::new(id.clone()))
            .unwrap();
        let (a, b) = futures::join!(first.block_task(), second.block_task());
        assert_eq!(a.unwrap().stop_reason, StopReason::Cancelled);
        assert_eq!(b.unwrap().stop_reason, StopReason::Cancelled);
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
        seen.extend(ctx.drain());
        assert_eq!(chunks(&seen, "agent_message_chunk"), "partial ");
    })
    .await;
    assert_eq!(mock.requests().len(), 1);
}
#[tokio::test(flavor = "multi_thread")]
async fn undo_redo_and_diff_run_from_a_prompt() {
    let mock = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "edit_file",
            json!({"path": "a.txt", "edits": [{"old": "a\n", "new": "a edited\n"}]}).to_string(),
        ),
        Reply::tool_call("c2", "bash", r#"{"command":"rm b.txt; echo x > c.txt"}"#),
        Reply::text("Done."),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    let project = env.project.clone();
    std::fs::write(project.join("a.txt"), "a\n").unwrap();
    std::fs::write(project.join("b.txt"), "b\n").unwrap();
    git(&project, &["init", "-q"]);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "start"]);
    let status = git(&project, &["status", "--porcelain"]);
    let index = std::fs::read(project.join(".git/index")).unwrap();
    let read = |name: &str| std::fs::read_to_string(project.join(name)).ok();
    let first_id = std::sync::Mutex::new(None);
    run(&env, vec!["allow_once", "allow_once"], async |mut ctx| {
        let id = ctx.start().await;
        *first_id.lock().unwrap() = Some(id.clone());
        let response = ctx.prompt(&id, "edit a, remove b, make c").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        ctx.drain();
        assert_eq!(read("c.txt").as_deref(), Some("x\n"));

        ctx.prompt(&id, "/diff").await;
        let diff = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(
            diff.starts_with("```diff\ndiff --git a/a.txt b/a.txt\n"),
            "{diff}"
        );
        assert!(diff.contains("-a\n+a edited\n"), "{diff}");
        assert!(diff.ends_with("+x\n```"), "{diff}");

        let response = ctx.prompt(&id, "/undo").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        assert_eq!(
            chunks(&ctx.drain(), "agent_message_chunk"),
            "undid \"edit a, remove b, make c\": a.txt restored, b.txt recreated, c.txt removed"
        );
        assert_eq!(read("a.txt").as_deref(), Some("a\n"));
        assert_eq!(read("b.txt").as_deref(), Some("b\n"));
        assert_eq!(read("c.txt"), None);
        assert_eq!(git(&project, &["status", "--porcelain"]), status);
        assert_eq!(std::fs::read(project.join(".git/index")).unwrap(), index);

        ctx.prompt(&id, "/redo").await;
        let said = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(said.starts_with("redid "), "{said}");
        assert_eq!(read("a.txt").as_deref(), Some("a edited\n"));
        assert_eq!(read("b.txt"), None);
    })
    .await;
    // The checkpoints are in the session file: another process loads the
    // session and undoes the turn again.
    let id = first_id.lock().unwrap().clone().unwrap();
    run(&env, vec![], async |mut ctx| {
        ctx.initialize().await;
        ctx.cx
            .send_request(LoadSessionRequest::new(id.clone(), ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        ctx.drain();
        let response = ctx.prompt(&id, "/undo").await;
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let said = chunks(&ctx.drain(), "agent_message_chunk");
        assert!(said.starts_with("undid "), "{said}");
        assert_eq!(read("a.txt").as_deref(), Some("a\n"));
        assert_eq!(read("b.txt").as_deref(), Some("b\n"));
        assert_eq!(read("c.txt"), None);
        assert_eq!(git(&project, &["status", "--porcelain"]), status);
        assert_eq!(std::fs::read(project.join(".git/index")).unwrap(), index);
    })
    .await;
    assert_eq!(mock.requests().len(), 3, "the commands asked no model");
}

/// The `availableCommands` of an `available_commands_update`, as JSON.
fn offered(update: &SessionUpdate) -> Vec<Value> {
    serde_json::to_value(update).unwrap()["availableCommands"]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_commands_are_offered_with_their_hint_and_run_from_a_prompt() {
    let mock = MockServer::start(vec![Reply::text("fixing"), Reply::text("reviewed")])
        .await
        .unwrap();
    let env = Env::new(&mock, "");
    let user = env.root().join("config/mm");
    std::fs::create_dir_all(user.join("commands/git")).unwrap();
    std::fs::write(
        user.join("commands/review.md"),
        "---\ndescription: Review one file\nargument-hint: <path>\n---\nReview @$1 and list the bugs.\n",
    )
    .unwrap();
    std::fs::write(user.join("commands/git/log.md"), "Summarise the git log.\n").unwrap();
    std::fs::write(user.join("AGENTS.md"), "Global rules.\n").unwrap();
    // The project: a repository whose package is the second session's cwd.
    let project = env.project.clone();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join("AGENTS.md"), "Root rules.\n").unwrap();
    let commands = project.join(".mm/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("fix.md"),
        "---\nargument-hint: <issue> <title>\n---\nFix issue $1: $2. All: $ARGUMENTS\n",
    )
    .unwrap();
    // A clash with a built-in, and a project file naming a user command.
    std::fs::write(commands.join("new.md"), "not /new\n").unwrap();
    std::fs::write(commands.join("review.md"), "not the user's review\n").unwrap();
    let pkg = project.join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(pkg.join("AGENTS.md"), "Package rules.\n").unwrap();
    std::fs::write(pkg.join("src/lib.rs"), "pub fn f() {}\n").unwrap();

    let builtin: Vec<Value> = mm_agent::commands::for_front(mm_agent::commands::Front::Editor)
        .map(|c| {
            let mut cmd = json!({"name": c.name(), "description": c.description()});
            if let Some(hint) = c.argument() {
                cmd["input"] = json!({"hint": hint});
            }
            cmd
        })
        .collect();
    let review = json!({"name": "review", "description": "Review one file (user)", "input": {"hint": "<path>"}});
    // No front matter: the body's first line describes it.
    let log = json!({"name": "git:log", "description": "Summarise the git log. (user)"});
    let fix = json!({"name": "fix", "description": "Fix issue $1: $2. All: $ARGUMENTS (project)", "input": {"hint": "<issue> <title>"}});

    run(&env, vec![], async |mut ctx| {
        let root = ctx.start().await;
        let mut seen = Vec::new();
        let update = ctx
            .wait_for(&mut seen, |u| kind_of(u) == "available_commands_update")
            .await;
        let mut expected = builtin.clone();
        // User commands first, each folder's by name, then the project's.
        expected.extend([log.clone(), review.clone(), fix.clone()]);
        assert_eq!(offered(&update), expected);

        // Each session's cwd is its root: the package has no .mm/commands.
        let inner = ctx
            .cx
            .send_request(NewSessionRequest::new(pkg.clone()))
            .block_task()
            .await
            .unwrap()
            .session_id;
        let update = ctx
            .wait_for(&mut seen, |u| kind_of(u) == "available_commands_update")
            .await;
        let mut expected = builtin.clone();
        expected.extend([log.clone(), review.clone()]);
        assert_eq!(offered(&update), expected);

        let answer = ctx.prompt(&root, "/fix 42 \"the title\"").await;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert_eq!(chunks(&ctx.drain(), "agent_message_chunk"), "fixing");
        let answer = ctx.prompt(&inner, "/review src/lib.rs").await;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert_eq!(chunks(&ctx.drain(), "agent_message_chunk"), "reviewed");
    })
    .await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let last_user = |i: usize| {
        content_text(
            &messages(&requests[i].body)
                .into_iter()
                .rfind(|m| m["role"] == "user")
                .unwrap(),
        )
    };
    assert_eq!(
        last_user(0),
        "Fix issue 42: the title. All: 42 \"the title\""
    );
    assert_eq!(
        last_user(1),
        "Review @src/lib.rs and list the bugs.\n\n[attached file: src/lib.rs]\n```\npub fn f() {}\n```"
    );
    // The instructions: global, then the repository root's, then the
    // package's, each session from its own cwd.
    let system = |i: usize| content_text(&messages(&requests[i].body)[0]);
    assert!(
        system(0).ends_with(&format!(
            "User instructions from {}:\nGlobal rules.\n\nProject instructions from AGENTS.md:\nRoot rules.",
            user.join("AGENTS.md").display()
        )),
        "{}",
        system(0)
    );
    assert!(
        system(1).ends_with(&format!(
            "User instructions from {}:\nGlobal rules.\n\nProject instructions from ../AGENTS.md:\nRoot rules.\n\nProject instructions from AGENTS.md:\nPackage rules.",
            user.join("AGENTS.md").display()
        )),
        "{}",
        system(1)
    );
    // Nothing about the commands reached the model before one was used.
    assert!(!system(0).contains("review"), "{}", system(0));
}

/// The session's model is a choice the editor offers: session/new names
/// the model in use, the server's list follows as a config_option_update,
/// and session/set_config_option switches the model of the next request.
#[tokio::test]
async fn the_editor_chooses_the_model_from_the_servers_list() {
    let mock = MockServer::start_with(
        vec![Reply::text("Hi from the other model.")],
        mm_mock::Options {
            routes: vec![mm_mock::Route::get(
                "/v1/models",
                json!({"object": "list", "data": [
                    {"id": "mock", "max_model_len": 8192},
                    {"id": "coder", "max_model_len": 32768},
                ]}),
            )],
            ..mm_mock::Options::default()
        },
    )
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec![], |mut ctx| async move {
        ctx.initialize().await;
        let created = ctx
            .cx
            .send_request(NewSessionRequest::new(ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        let options = serde_json::to_value(&created.config_options).unwrap();
        assert_eq!(options[0]["id"], "model");
        assert_eq!(options[0]["category"], "model");
        assert_eq!(options[0]["currentValue"], "openai-compatible/mock");
        let session = created.session_id;

        let mut seen = Vec::new();
        let listed = ctx
            .wait_for(&mut seen, |u| {
                matches!(u, SessionUpdate::ConfigOptionUpdate(_))
            })
            .await;
        let listed = serde_json::to_value(&listed).unwrap();
        let values: Vec<&str> = listed["configOptions"][0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].as_str().unwrap())
            .collect();
        assert_eq!(
            values,
            ["openai-compatible/coder", "openai-compatible/mock"]
        );
        assert_eq!(
            listed["configOptions"][0]["options"][0]["description"],
            "32768 tokens"
        );

        let set = ctx
            .cx
            .send_request(SetSessionConfigOptionRequest::new(
                session.clone(),
                "model",
                SessionConfigOptionValue::value_id("openai-compatible/coder"),
            ))
            .block_task()
            .await
            .unwrap();
        let set = serde_json::to_value(&set).unwrap();
        assert_eq!(
            set["configOptions"][0]["currentValue"],
            "openai-compatible/coder"
        );

        // An option mm does not have is an error, and the session goes on.
        let wrong = ctx
            .cx
            .send_request(SetSessionConfigOptionRequest::new(
                session.clone(),
                "mode",
                SessionConfigOptionValue::value_id("fast"),
            ))
            .block_task()
            .await;
        assert!(wrong.is_err());

        ctx.prompt(&session, "hello").await;
        assert!(chunks(&ctx.drain(), "agent_message_chunk").contains("Hi from the other model."));
    })
    .await;
    assert_eq!(mock.requests()[0].body["model"], "coder");
}

/// After each turn the editor gets how full the window is and the
/// session's token counts, the cached part of the input included; a
/// loaded session goes on from its counts.
#[tokio::test]
async fn usage_and_the_cached_input_reach_the_editor() {
    let turn = |text: &str| {
        Reply::stream(vec![
            Step::text(text),
            Step::Usage {
                prompt: 5200,
                completion: 80,
            },
            Step::Cached { tokens: 4800 },
        ])
    };
    let mock = MockServer::start_with(
        vec![turn("One."), turn("Two.")],
        mm_mock::Options {
            window: Some(32000),
            ..mm_mock::Options::default()
        },
    )
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    let usage = |updates: &[SessionUpdate]| -> Value {
        as_json(updates)
            .into_iter()
            .rfind(|u| u["sessionUpdate"] == "usage_update")
            .unwrap_or_else(|| panic!("no usage_update in {updates:?}"))
    };
    let saved = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = saved.clone();
    run(&env, vec![], |mut ctx| async move {
        let session = ctx.start().await;
        ctx.prompt(&session, "first").await;
        let u = usage(&ctx.drain());
        assert_eq!(u["used"], 5280);
        assert_eq!(u["size"], 32000, "the window the server reports");
        assert_eq!(
            u["_meta"]["mm"],
            json!({"inputTokens": 5200, "outputTokens": 80, "cachedTokens": 4800})
        );
        keep.lock().unwrap().push_str(&session.0);
    })
    .await;
    let saved = saved.lock().unwrap().clone();
    run(&env, vec![], |mut ctx| async move {
        ctx.initialize().await;
        ctx.cx
            .send_request(LoadSessionRequest::new(
                SessionId::new(saved.clone()),
                ctx.project.clone(),
            ))
            .block_task()
            .await
            .unwrap();
        let id = SessionId::new(saved.clone());
        ctx.prompt(&id, "second").await;
        let u = usage(&ctx.drain());
        assert_eq!(
            u["_meta"]["mm"],
            json!({"inputTokens": 10400, "outputTokens": 160, "cachedTokens": 9600})
        );
    })
    .await;
}
