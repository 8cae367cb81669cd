//! Modes and the checklist through the SDK's client: `session/new` and
//! `session/load` offer allow, ask and plan (ask current by default), the
//! `todo` tool's list arrives as a `plan` update, `session/set_mode`
//! switches to plan mode where a changing command is refused without a
//! question, and `exit_plan` asks through `session/request_permission`
//! with the plan as content, then reports the new mode with
//! `current_mode_update`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agent_client_protocol::v1::schema::{
    LoadSessionRequest, NewSessionRequest, SetSessionModeRequest,
};
use common::*;
use mm_mock::{MockServer, Reply};
use serde_json::{Value, json};

fn kind_of(u: &agent_client_protocol::v1::schema::SessionUpdate) -> String {
    serde_json::to_value(u).unwrap()["sessionUpdate"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn modes_plan_updates_set_mode_and_the_exit_plan_question() {
    let plan = "## Plan\n\n1. Make `made`.";
    let mock = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "todo",
            json!({"items": [{"text": "look", "status": "in_progress"},
                             {"text": "make", "status": "pending"}]})
            .to_string(),
        ),
        Reply::text("listed"),
        Reply::tool_call("c2", "bash", r#"{"command":"touch refused"}"#),
        Reply::tool_call("c3", "exit_plan", json!({ "plan": plan }).to_string()),
        Reply::tool_call("c4", "bash", r#"{"command":"touch made"}"#),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let env = Env::new(&mock, "");
    run(&env, vec!["allow_always"], async |mut ctx| {
        ctx.initialize().await;
        let created = ctx
            .cx
            .send_request(NewSessionRequest::new(ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        let modes = serde_json::to_value(created.modes.as_ref().unwrap()).unwrap();
        assert_eq!(modes["currentModeId"], "ask");
        let ids: Vec<&str> = modes["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["allow", "ask", "plan"]);
        let id = created.session_id;

        ctx.prompt(&id, "list the steps").await;
        let updates = ctx.drain();
        let plans: Vec<Value> = as_json(&updates)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == "plan")
            .collect();
        assert_eq!(
            plans,
            [json!({"sessionUpdate": "plan", "entries": [
                {"content": "look", "priority": "medium", "status": "in_progress"},
                {"content": "make", "priority": "medium", "status": "pending"}]})]
        );

        ctx.cx
            .send_request(SetSessionModeRequest::new(id.clone(), "plan"))
            .block_task()
            .await
            .unwrap();
        let bad = ctx
            .cx
            .send_request(SetSessionModeRequest::new(id.clone(), "yolo"))
            .block_task()
            .await;
        assert!(bad.is_err());
        ctx.prompt(&id, "now do it").await;
        let updates = ctx.drain();
        let json = as_json(&updates);
        // The changing command was refused with no question asked; the
        // plan was the one question.
        let refused = json
            .iter()
            .find(|u| u["toolCallId"] == "c2" && u["status"] == "failed")
            .expect("c2 failed");
        assert!(refused.to_string().contains("plan mode is on"), "{refused}");
        assert!(!ctx.project.join("refused").exists());
        {
            let asked = ctx.asked.lock().unwrap();
            assert_eq!(asked.len(), 1, "only the plan is asked about");
            let call = serde_json::to_value(&asked[0].tool_call).unwrap();
            assert_eq!(call["toolCallId"], "c3");
            assert_eq!(call["content"][0]["content"]["text"], plan);
        }
        let switched = updates
            .iter()
            .position(|u| kind_of(u) == "current_mode_update")
            .expect("no current_mode_update");
        assert_eq!(json[switched]["currentModeId"], "allow");
        // In allow mode the next command ran without a question.
        assert!(ctx.project.join("made").exists());

        let loaded = ctx
            .cx
            .send_request(LoadSessionRequest::new(id.clone(), ctx.project.clone()))
            .block_task()
            .await
            .unwrap();
        let modes = serde_json::to_value(loaded.modes.as_ref().unwrap()).unwrap();
        assert_eq!(modes["currentModeId"], "allow");
        // The loaded session's checklist comes back.
        let replayed = as_json(&ctx.drain());
        assert!(
            replayed.iter().any(|u| u["sessionUpdate"] == "plan"),
            "{replayed:?}"
        );
    })
    .await;
    let requests = mock.requests();
    let results: Vec<String> = messages(&requests.last().unwrap().body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(content_text)
        .collect();
    assert!(results[0].starts_with("checklist updated"), "{results:?}");
    assert!(results[1].contains("plan mode is on"), "{results:?}");
    assert!(
        results[2].starts_with("The user accepted the plan"),
        "{results:?}"
    );
}
