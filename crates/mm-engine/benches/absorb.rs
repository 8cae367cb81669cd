//! How many streamed tokens per second the engine absorbs from a fast
//! local OpenAI-style SSE stream, against reading the same bytes raw with
//! reqwest in the same run. The goal: mm is never the bottleneck (over a
//! million tokens per second on one core). Tools are declared, as in a real
//! session, so the recogniser of tool calls written as text runs on the
//! answer; the same stream with `textToolCalls: off` is its baseline.
//!
//! The server is a tiny raw TCP server on 127.0.0.1 in its own thread; the
//! client side runs on a single-threaded runtime, so its rate is per core.
//! Run: `cargo bench -p mm-engine --bench absorb` (optionally `-- TOKENS`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use mm_engine::{CancellationToken, Engine, Message, StreamEvent, ToolDecl};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The answer's text deltas: lines of words, each line ending with its own
/// number, so that no passage repeats (the answer-loop guard would stop a
/// stream of identical lines, as it should).
fn deltas(tokens: usize) -> Vec<String> {
    let words = [
        "the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog",
    ];
    (0..tokens)
        .map(|i| match words.get(i % (words.len() + 1)) {
            Some(w) => (*w).to_owned(),
            None => format!(" {i}.\n"),
        })
        .collect()
}

/// The SSE body: `tokens` text deltas in OpenAI chunk shape, a usage chunk
/// and `[DONE]`.
fn body(tokens: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(tokens * 160);
    out.extend_from_slice(b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n");
    for word in deltas(tokens) {
        let w = serde_json::to_string(&word).unwrap();
        out.extend_from_slice(
            format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{w}}},\"finish_reason\":null}}]}}\n\n"
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    out.extend_from_slice(
        format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{{\"prompt_tokens\":10,\"completion_tokens\":{tokens},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n", tokens + 10)
            .as_bytes(),
    );
    out
}

/// Serves `body` to every request on its own thread and runtime.
fn serve(body: Vec<u8>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let body = std::sync::Arc::new(body);
            loop {
                let Ok((mut sock, _)) = listener.accept().await else { return };
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let mut seen = Vec::new();
                    // Read the request head and its Content-Length body.
                    loop {
                        let n = match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        seen.extend_from_slice(&buf[..n]);
                        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
                            let len: usize = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse().ok())
                                .unwrap_or(0);
                            if seen.len() >= end + 4 + len {
                                break;
                            }
                        }
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    if sock.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = sock.write_all(&body).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
    });
    let addr = rx.recv().unwrap();
    format!("http://{addr}/v1")
}

async fn raw(client: &reqwest::Client, url: &str) -> (usize, Duration) {
    let start = Instant::now();
    let resp = client
        .post(format!("{url}/chat/completions"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    let mut s = resp.bytes_stream();
    let mut n = 0;
    while let Some(chunk) = s.next().await {
        n += chunk.unwrap().len();
    }
    (n, start.elapsed())
}

/// Two declarations shaped like mm's own.
fn tools() -> Vec<ToolDecl> {
    let decl = |name: &str, props: serde_json::Value, required: &[&str]| ToolDecl {
        name: name.to_owned(),
        description: format!("The {name} tool."),
        parameters: serde_json::json!({"type": "object", "properties": props, "required": required}),
    };
    vec![
        decl(
            "bash",
            serde_json::json!({"command": {"type": "string"}}),
            &["command"],
        ),
        decl(
            "read_file",
            serde_json::json!({"path": {"type": "string"}, "start": {"type": "integer"}}),
            &["path"],
        ),
    ]
}

async fn engine_run(engine: &Engine, tools: &[ToolDecl]) -> (usize, usize, Duration) {
    let start = Instant::now();
    let mut texts = 0usize;
    let mut chars = 0usize;
    let mut on_event = |e: StreamEvent| {
        if let StreamEvent::Text(t) = e {
            texts += 1;
            chars += t.len();
        }
    };
    let g = engine
        .generate(
            &[Message::user("go")],
            tools,
            &mut on_event,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let elapsed = start.elapsed();
    assert!(!g.cancelled);
    (texts, chars, elapsed)
}

fn main() {
    let tokens: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200_000);
    let body = body(tokens);
    let url = serve(body.clone());

    let cfg = mm_config::Config {
        model: "openai-compatible/bench".into(),
        base_url: Some(url.clone()),
        watchdog: 30,
        retries: 0,
        ..mm_config::Config::default()
    };
    let engine = Engine::with_env(&cfg, |_| None).unwrap();
    let off = mm_config::Config {
        text_tool_calls: mm_config::TextToolCalls::Off,
        ..cfg.clone()
    };
    let engine_off = Engine::with_env(&off, |_| None).unwrap();
    let tools = tools();
    let client = reqwest::Client::new();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Warm up every path once.
        let _ = raw(&client, &url).await;
        let _ = engine_run(&engine, &tools).await;
        let _ = engine_run(&engine_off, &tools).await;

        let mut best_raw = Duration::MAX;
        let mut best_engine = Duration::MAX;
        let mut best_off = Duration::MAX;
        let mut raw_bytes = 0;
        for _ in 0..5 {
            let (n, t) = raw(&client, &url).await;
            raw_bytes = n;
            best_raw = best_raw.min(t);
            let (texts, _chars, t) = engine_run(&engine, &tools).await;
            assert_eq!(texts, tokens, "every delta must reach the sink");
            best_engine = best_engine.min(t);
            let (texts, _chars, t) = engine_run(&engine_off, &tools).await;
            assert_eq!(texts, tokens, "every delta must reach the sink");
            best_off = best_off.min(t);
        }
        assert_eq!(raw_bytes, body.len());
        let raw_rate = tokens as f64 / best_raw.as_secs_f64();
        let engine_rate = tokens as f64 / best_engine.as_secs_f64();
        println!("stream: {tokens} tokens, {} bytes (best of 5)", body.len());
        println!(
            "raw reqwest read : {:>8.1} ms  {:>12.0} tokens/s  {:>8.1} MB/s",
            best_raw.as_secs_f64() * 1e3,
            raw_rate,
            body.len() as f64 / best_raw.as_secs_f64() / 1e6
        );
        println!(
            "engine generate  : {:>8.1} ms  {:>12.0} tokens/s  {:>8.1} MB/s",
            best_engine.as_secs_f64() * 1e3,
            engine_rate,
            body.len() as f64 / best_engine.as_secs_f64() / 1e6
        );
        let off_rate = tokens as f64 / best_off.as_secs_f64();
        println!(
            "textToolCalls off: {:>8.1} ms  {:>12.0} tokens/s  {:>8.1} MB/s",
            best_off.as_secs_f64() * 1e3,
            off_rate,
            body.len() as f64 / best_off.as_secs_f64() / 1e6
        );
        println!(
            "ratio engine/raw : {:.2} (engine absorbs at {:.0}% of raw read speed)",
            engine_rate / raw_rate,
            100.0 * engine_rate / raw_rate
        );
        println!(
            "ratio on/off     : {:.2} (the text-call recogniser costs {:.1}% of throughput)",
            engine_rate / off_rate,
            100.0 * (1.0 - engine_rate / off_rate)
        );
        // The answer-loop guard is always on inside the engine: time it
        // alone on the same deltas, as its share of the engine's time.
        let texts = deltas(tokens);
        let mut best_guard = Duration::MAX;
        for _ in 0..5 {
            let start = Instant::now();
            let mut guard = mm_engine::answer_loop::Guard::new();
            for t in &texts {
                assert!(guard.push(t).is_none(), "no passage repeats");
            }
            best_guard = best_guard.min(start.elapsed());
        }
        println!(
            "answer-loop guard: {:>8.1} ms  {:>12.0} tokens/s  ({:.1}% of the engine's time; engine without it ≈ {:.2}× faster)",
            best_guard.as_secs_f64() * 1e3,
            tokens as f64 / best_guard.as_secs_f64(),
            100.0 * best_guard.as_secs_f64() / best_engine.as_secs_f64(),
            best_engine.as_secs_f64() / (best_engine - best_guard.min(best_engine)).as_secs_f64().max(1e-9)
        );
    });
}
