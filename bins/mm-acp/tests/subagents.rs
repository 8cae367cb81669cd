//! A subagent through the SDK's client: the `task` call is a `tool_call`
//! of kind `think`, the child's steps arrive as its content, a permission
//! the child needs is asked under the task call and names the agent, and
//! the child's answer is the call's result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mm_mock::{MockServer, Reply};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn a_task_call_is_a_think_call_with_the_childs_steps_as_content() {
    let mock = MockServer::start(vec![
        Reply::tool_call(
            "t1",
            "task",
            json!({"description": "make a file", "prompt": "make it", "agent": "general"})
                .to_string(),
        ),
        Reply::tool_call("b1", "bash", r#"{"command":"touch made"}"#),
        Reply::text("CHILD: made it."),
        Reply::text("PARENT: done."),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec!["allow_once"], async |mut ctx| {
        ctx.initialize().await;
        let id = ctx.start().await;
        ctx.prompt(&id, "make the file").await;
        let json = as_json(&ctx.drain());
        let start = json
            .iter()
            .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "t1")
            .expect("no tool_call for the task");
        assert_eq!(start["kind"], "think", "{start}");
        // The child's call is not a call of the editor's own: it is a step
        // in the task call's content.
        assert!(!json.iter().any(|u| u["toolCallId"] == "b1"), "{json:#?}");
        let steps: Vec<&Value> = json
            .iter()
            .filter(|u| {
                u["toolCallId"] == "t1" && u["content"].to_string().contains("bash: touch made")
            })
            .collect();
        assert!(!steps.is_empty(), "{json:#?}");
        let end = json
            .iter()
            .rev()
            .find(|u| u["toolCallId"] == "t1" && u["status"] == "completed")
            .expect("the task call completed");
        assert!(end.to_string().contains("CHILD: made it."), "{end}");
        {
            let asked = ctx.asked.lock().unwrap();
            assert_eq!(asked.len(), 1, "the child's command asked");
            let call = serde_json::to_value(&asked[0].tool_call).unwrap();
            assert_eq!(call["toolCallId"], "t1");
            assert!(
                call["title"]
                    .as_str()
                    .unwrap()
                    .contains("[subagent general]"),
                "{call}"
            );
        }
        assert!(ctx.project.join("made").exists());
    })
    .await;
}
