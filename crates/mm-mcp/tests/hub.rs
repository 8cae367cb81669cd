//! The servers of a session: started together, each failure one line, a
//! dead server restarted once, everything ended together.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use mm_mcp::{Hub, State, Timeouts};
use support::*;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

fn settings(start: u64, tool: u64) -> Timeouts {
    Timeouts {
        start: Duration::from_secs(start),
        call: Duration::from_secs(tool),
    }
}

async fn call(
    hub: &Hub,
    server: &str,
    tool: &str,
    args: serde_json::Value,
) -> Result<String, String> {
    timeout(
        LIMIT,
        hub.call(
            server,
            tool,
            args.as_object().cloned(),
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("bounded")
    .map(|o| o.text)
}

#[tokio::test]
async fn servers_start_together_and_failures_are_one_line_each() {
    let hub = Hub::start(
        vec![
            fake("good", &[]),
            fake("mute", &["--silent"]),
            fake("quitter", &["--exit-at-start", "4"]),
            stdio("ghost", "no-such-mcp-server-xyz", &[]),
        ],
        settings(2, 10),
    );
    // A call made while the servers start waits for its server.
    assert_eq!(
        call(&hub, "good", "echo", serde_json::json!({"text": "early"}))
            .await
            .unwrap(),
        "early"
    );
    timeout(LIMIT, hub.wait_started()).await.unwrap();
    let lines: Vec<String> = hub.status().iter().map(|s| s.line()).collect();
    assert_eq!(
        lines[0],
        format!("good: ready, {} tools", hub.tools().await.len())
    );
    assert_eq!(lines[1], "mute: failed: no answer to initialize within 2s");
    assert_eq!(
        lines[2],
        "quitter: failed: the server exited with status 4 (its last stderr line: \
         mm-mcp-fake: exiting at start as asked)"
    );
    assert_eq!(
        lines[3],
        "ghost: failed: cannot start no-such-mcp-server-xyz: not found (is it installed and on PATH?)"
    );
    assert_eq!(
        hub.failures(),
        [
            "mcp server mute: no answer to initialize within 2s",
            "mcp server quitter: the server exited with status 4 (its last stderr line: \
             mm-mcp-fake: exiting at start as asked)",
            "mcp server ghost: cannot start no-such-mcp-server-xyz: not found (is it installed and on PATH?)",
        ]
    );
    // Only the good server's tools are there.
    assert!(hub.tools().await.iter().all(|(s, _)| s == "good"));
    // A server that never started stays down, with its reason.
    assert_eq!(
        call(&hub, "mute", "echo", serde_json::json!({"text": "x"}))
            .await
            .unwrap_err(),
        "the server is not running: no answer to initialize within 2s"
    );
    assert_eq!(
        call(&hub, "nobody", "echo", serde_json::json!({}))
            .await
            .unwrap_err(),
        "there is no MCP server named nobody"
    );
    hub.shutdown().await;
    assert!(hub.status().iter().all(|s| s.state == State::Stopped));
}

#[tokio::test]
async fn a_server_that_dies_is_started_again_on_the_next_call_once() {
    let hub = Hub::start(vec![fake("crashy", &[])], settings(10, 10));
    timeout(LIMIT, hub.wait_started()).await.unwrap();
    let tools = hub.tools().await.len();

    let err = call(&hub, "crashy", "crash", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "the server exited with status 3 (its last stderr line: mm-mcp-fake: crashing on purpose); \
         it will be started again on the next call"
    );
    assert!(matches!(hub.status()[0].state, State::Failed(_)));

    assert_eq!(
        call(&hub, "crashy", "echo", serde_json::json!({"text": "back"}))
            .await
            .unwrap(),
        "back"
    );
    let status = &hub.status()[0];
    assert_eq!(status.state, State::Ready { tools });
    assert!(status.restarted);
    assert_eq!(
        status.line(),
        format!("crashy: ready, {tools} tools (restarted)")
    );

    let err = call(&hub, "crashy", "crash", serde_json::json!({}))
        .await
        .unwrap_err();
    assert!(
        err.ends_with("; it was restarted once already and stays stopped"),
        "{err}"
    );
    let err = call(&hub, "crashy", "echo", serde_json::json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(err.starts_with("the server is not running ("), "{err}");
    assert!(err.ends_with("; it was restarted once already"), "{err}");
    hub.shutdown().await;
}

#[tokio::test]
async fn secrets_never_appear_in_a_line() {
    let mut spec = fake("leaky", &["--exit-at-start", "1"]);
    // The command line of a server is not secret, but its env values are;
    // a server that prints one on stderr has it redacted.
    spec = mm_mcp::ServerSpec {
        transport: match spec.transport {
            mm_mcp::TransportSpec::Stdio {
                cwd, remove_env, ..
            } => mm_mcp::TransportSpec::Stdio {
                command: "sh".into(),
                args: vec![
                    "-c".into(),
                    "echo \"token is $MY_TOKEN\" >&2; exit 1".into(),
                ],
                env: vec![("MY_TOKEN".into(), "tok-1234567890".into())],
                remove_env,
                cwd,
            },
            other => other,
        },
        ..spec
    };
    assert_eq!(spec.secrets(), ["tok-1234567890"]);
    let hub = Hub::start(vec![spec], settings(10, 10));
    timeout(LIMIT, hub.wait_started()).await.unwrap();
    assert_eq!(
        hub.failures(),
        [
            "mcp server leaky: the server exited with status 1 (its last stderr line: token is [redacted])"
        ]
    );
    assert_eq!(hub.secrets(), ["tok-1234567890"]);
}

#[tokio::test]
async fn cancelling_a_call_on_the_hub_cancels_it() {
    let hub = Hub::start(vec![fake("slow", &[])], settings(10, 60));
    timeout(LIMIT, hub.wait_started()).await.unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let err = timeout(
        LIMIT,
        hub.call(
            "slow",
            "sleep",
            serde_json::json!({"seconds": 30}).as_object().cloned(),
            &cancel,
        ),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(err, "cancelled");
    // The server is fine afterwards.
    assert_eq!(
        call(&hub, "slow", "echo", serde_json::json!({"text": "ok"}))
            .await
            .unwrap(),
        "ok"
    );
    hub.shutdown().await;
}
