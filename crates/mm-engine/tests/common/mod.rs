//! Helpers for the engine's HTTP tests against `mm-mock`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mm_config::Config;
use mm_engine::{
    CancellationToken, Engine, GenerateError, Generation, Message, StreamEvent, ToolDecl,
};
use mm_mock::{MockServer, Recorded, Reply};
use serde_json::{Value, json};

/// No test waits longer than this for one generation.
pub const BOUND: Duration = Duration::from_secs(30);

pub const OPENAI_KEY: &str = "sk-test-openai-0123456789";
pub const ANTHROPIC_KEY: &str = "sk-ant-test-0123456789";
pub const GEMINI_KEY: &str = "gm-test-key-0123456789";
pub const COMPAT_KEY: &str = "compat-secret-0123456789";

/// A fake environment holding test keys (no process env is touched).
pub fn env(name: &str) -> Option<String> {
    match name {
        "OPENAI_API_KEY" => Some(OPENAI_KEY.into()),
        "ANTHROPIC_API_KEY" => Some(ANTHROPIC_KEY.into()),
        "GEMINI_API_KEY" => Some(GEMINI_KEY.into()),
        "MY_COMPAT_KEY" => Some(COMPAT_KEY.into()),
        _ => None,
    }
}

/// The key a provider is expected to send (and never put in a body or URL).
pub fn key_of(provider: &str) -> Option<&'static str> {
    match provider {
        "openai" => Some(OPENAI_KEY),
        "anthropic" => Some(ANTHROPIC_KEY),
        "gemini" => Some(GEMINI_KEY),
        _ => None,
    }
}

/// Settings for `provider` against the mock at `url`: watchdog 5 s,
/// no retries unless a test asks.
pub fn cfg(provider: &str, url: &str) -> Config {
    Config {
        model: format!("{provider}/test-model"),
        base_url: Some(match provider {
            "openai" | "openai-compatible" => format!("{url}/v1"),
            _ => url.to_owned(),
        }),
        api_key_env: None,
        watchdog: 5,
        retries: 0,
        context_window: mm_config::ContextWindow::Tokens(12345),
        max_tokens: 4321,
        thinking: mm_config::Thinking::Off,
        ..Config::default()
    }
}

pub fn engine(c: &Config) -> Engine {
    Engine::with_env(c, env).unwrap()
}

pub async fn mock(script: Vec<Reply>) -> MockServer {
    MockServer::start(script).await.unwrap()
}

/// One generation, bounded; returns the events and the result.
pub async fn run(
    engine: &Engine,
    messages: &[Message],
    tools: &[ToolDecl],
) -> (Vec<StreamEvent>, Result<Generation, GenerateError>) {
    let mut events = Vec::new();
    let mut on_event = |e: StreamEvent| events.push(e);
    let cancel = CancellationToken::new();
    let r = tokio::time::timeout(
        BOUND,
        engine.generate(messages, tools, &mut on_event, &cancel),
    )
    .await
    .expect("generation must end within the bound");
    (events, r)
}

pub fn ask(q: &str) -> Vec<Message> {
    vec![Message::system("You are a test."), Message::user(q)]
}

pub fn tools() -> Vec<ToolDecl> {
    vec![
        ToolDecl {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        ToolDecl {
            name: "bash".into(),
            description: "Run a command".into(),
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        },
    ]
}

pub fn content(m: &Message) -> &str {
    match m {
        Message::Assistant { content, .. } => content,
        _ => panic!("not an assistant message: {m:?}"),
    }
}

pub fn texts(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub fn reasonings(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether the recorded request asked for a stream.
pub fn streamed(provider: &str, r: &Recorded) -> bool {
    match provider {
        "gemini" => r.path.contains(":streamGenerateContent"),
        _ => r.body["stream"] == Value::Bool(true),
    }
}

/// The path a provider posts to.
pub fn expected_path(provider: &str, stream: bool) -> &'static str {
    match (provider, stream) {
        ("openai" | "openai-compatible", _) => "/v1/chat/completions",
        ("ollama", _) => "/api/chat",
        ("anthropic", _) => "/v1/messages",
        ("gemini", true) => "/v1beta/models/test-model:streamGenerateContent?alt=sse",
        ("gemini", false) => "/v1beta/models/test-model:generateContent",
        _ => unreachable!(),
    }
}

/// Keys travel in the provider's header only: never in the URL or the
/// body; openai-compatible and ollama send none by default.
pub fn assert_key_only_in_headers(provider: &str, r: &Recorded) {
    let body = r.body.to_string();
    for k in [OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY, COMPAT_KEY] {
        assert!(!body.contains(k), "key in the body: {body}");
        assert!(!r.path.contains(k), "key in the URL: {}", r.path);
    }
    match provider {
        "openai" => assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {OPENAI_KEY}").as_str())
        ),
        "anthropic" => {
            assert_eq!(r.header("x-api-key"), Some(ANTHROPIC_KEY));
            assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(r.header("authorization"), None);
        }
        "gemini" => {
            assert_eq!(r.header("x-goog-api-key"), Some(GEMINI_KEY));
            assert_eq!(r.header("authorization"), None);
        }
        "ollama" | "openai-compatible" => {
            assert_eq!(r.header("authorization"), None);
            assert_eq!(r.header("x-api-key"), None);
        }
        _ => unreachable!(),
    }
}

/// The argument text so far of the last tool call in a partial message.
pub fn last_call(m: &Message) -> &mm_engine::ToolCall {
    match m {
        Message::Assistant { tool_calls, .. } => tool_calls.last().expect("a tool call"),
        _ => panic!("not an assistant message"),
    }
}

/// Parse `N` out of a runaway sentence (`(N characters so far` / `(N bytes so far`).
pub fn runaway_count(sentence: &str) -> usize {
    let start = sentence.find('(').unwrap() + 1;
    let digits: String = sentence[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

/// A raw HTTP server on 127.0.0.1 answering each connection with the next
/// of `responses` (status line, headers and body as given), for shapes the
/// mock does not make. Returns its base URL.
pub async fn serve_raw(responses: Vec<String>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for response in responses {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            // Read the request head and body (Content-Length).
            let mut seen = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                let n = match sock.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
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
            let _ = sock.write_all(response.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    format!("http://{addr}")
}

/// A complete HTTP/1.1 response with a body.
pub fn http_response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}
