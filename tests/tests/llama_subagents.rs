#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A subagent on a real llama.cpp `llama-server` with two slots (`-np 2`):
//! the session's cached prompt survives the subagent, because mm pins the
//! session to slot 0 and its children to the others. With one slot
//! (`-np 1`) the children run one after the other on the session's slot,
//! and the session's next request is read again: printed, not asserted.
//!
//! A model of 135M parameters does not reliably call a tool, so the test
//! stands between mm and the server: the session's first request goes to
//! the server (which caches its prompt) but mm is answered with a `task`
//! call; every other request goes to the server unchanged. Skips, loudly,
//! without `.ci/install-llama`; in CI it is required.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mm_tests::child::{Running, built_binary};
use mm_tests::llama::{Install, Server};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RUN_LIMIT: Duration = Duration::from_secs(600);

/// One chat request that went through, and the server's `timings`.
#[derive(Debug, Clone)]
struct Seen {
    body: Value,
    /// `cache_n`, `prompt_n` of the server's answer.
    timings: Option<(u64, u64)>,
}

/// Read one HTTP request (headers, then a `content-length` body).
async fn read_request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

/// Send the request to the server (closing after it) and read the whole
/// answer.
async fn forward(port: u16, head: &str, body: &[u8]) -> Vec<u8> {
    let mut up = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let head: String = head
        .split("\r\n")
        .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
        .collect::<Vec<_>>()
        .join("\r\n");
    let head = head.trim_end().to_owned() + "\r\nConnection: close\r\n\r\n";
    up.write_all(head.as_bytes()).await.unwrap();
    up.write_all(body).await.unwrap();
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer).await;
    answer
}

/// The last `timings` of an answer: `(cache_n, prompt_n)`.
fn timings(answer: &[u8]) -> Option<(u64, u64)> {
    let text = String::from_utf8_lossy(answer);
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim_start_matches("data: ")).ok())
        .filter_map(|v| {
            let t = v.get("timings")?;
            Some((t["cache_n"].as_u64()?, t["prompt_n"].as_u64()?))
        })
        .next_back()
}

/// The scripted answer to the session's first request: one `task` call.
fn task_call() -> Vec<u8> {
    let args =
        serde_json::json!({"description": "look", "prompt": "Say hello in one word."}).to_string();
    let first = serde_json::json!({"choices": [{"index": 0, "delta": {"role": "assistant",
        "tool_calls": [{"index": 0, "id": "t1", "type": "function",
            "function": {"name": "task", "arguments": args}}]}, "finish_reason": null}]});
    let last =
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n\
         data: {first}\n\ndata: {last}\n\ndata: [DONE]\n\n"
    )
    .into_bytes()
}

/// A proxy in front of the server on `port`; its port and what it saw.
async fn proxy(port: u16) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let own = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let Some((head, body)) = read_request(&mut s).await else {
                    return;
                };
                let chat = head.contains("/chat/completions");
                let answer = forward(port, &head, &body).await;
                if !chat {
                    let _ = s.write_all(&answer).await;
                    return;
                }
                let first = {
                    let mut seen = log.lock().unwrap();
                    seen.push(Seen {
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                        timings: timings(&answer),
                    });
                    seen.len() == 1
                };
                let reply = if first { task_call() } else { answer };
                let _ = s.write_all(&reply).await;
            });
        }
    });
    (own, seen)
}

/// One session with a subagent on a server of `slots` slots: the
/// requests the server got, in order.
fn session_with_a_subagent(install: &Install, slots: u32) -> Vec<Seen> {
    let server = Server::start_slots(install, 2048 * slots, slots).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (port, seen) = rt.block_on(proxy(server.port));
    let sb = Sandbox::new("maxTurns: 3\nmaxTokens: 48\nretries: 0\n").unwrap();
    let mut cmd = sb.command(
        &built_binary("mm-repl").unwrap(),
        &format!("http://127.0.0.1:{port}/v1"),
    );
    cmd.args([
        "--output-format",
        "json",
        "-p",
        "Where is the main function?",
    ]);
    let done = Running::spawn(&mut cmd).unwrap().wait(RUN_LIMIT).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.len() >= 3,
        "{}\n{}",
        done.describe(),
        server.log_text()
    );
    seen
}

fn is_child(s: &Seen) -> bool {
    s.body["messages"][0]["content"]
        .as_str()
        .is_some_and(|t| t.starts_with("You are a subagent"))
}

/// One test, one server at a time: two cores and a model that reads ~100
/// tokens a second leave no room for two.
#[test]
fn the_sessions_cache_survives_a_subagent_on_two_slots_and_not_on_one() {
    let Some(install) = Install::or_skip("the_sessions_cache_survives_a_subagent") else {
        return;
    };
    let seen = session_with_a_subagent(&install, 2);
    let (_, prefix) = seen[0].timings.expect("the first request's timings");
    let children: Vec<&Seen> = seen.iter().filter(|s| is_child(s)).collect();
    assert!(!children.is_empty(), "{seen:#?}");
    for child in &children {
        assert_eq!(child.body["id_slot"], 1, "{:?}", child.body);
    }
    let next = seen
        .iter()
        .skip(1)
        .find(|s| !is_child(s))
        .expect("the session's request after the subagent");
    assert_eq!(next.body["id_slot"], 0);
    let (cached, read) = next.timings.unwrap();
    eprintln!("-np 2: the session's next request: {cached} cached, {read} read; prefix {prefix}");
    assert!(
        cached * 10 >= prefix * 9,
        "only {cached} of the {prefix} prefix tokens came from the cache"
    );

    // One slot: nothing is pinned, the child takes the session's slot, and
    // the session's prompt is read again (noted, not asserted).
    let seen = session_with_a_subagent(&install, 1);
    assert!(seen.iter().all(|s| s.body.get("id_slot").is_none()));
    let (_, prefix) = seen[0].timings.unwrap();
    let next = seen.iter().skip(1).find(|s| !is_child(s)).unwrap();
    let (cached, read) = next.timings.unwrap();
    eprintln!("-np 1: the session's next request: {cached} cached, {read} read; prefix {prefix}");
}
