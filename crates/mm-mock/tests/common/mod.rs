//! Test helpers: a real HTTP client, real SSE / NDJSON readers, and what
//! each provider's documentation says about where things live in its
//! stream. Nothing here uses the mock's own renderers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use mm_mock::MockServer;
use serde_json::{Value, json};

pub const BOUND: Duration = Duration::from_secs(20);

pub fn client() -> reqwest::Client {
    // reqwest wants a TLS provider even for plain http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(BOUND)
        .build()
        .unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Wire {
    OpenAi,
    Ollama,
    Anthropic,
    Gemini,
}

pub const ALL: [Wire; 4] = [Wire::OpenAi, Wire::Ollama, Wire::Anthropic, Wire::Gemini];

impl Wire {
    pub fn url(self, base: &str, stream: bool) -> String {
        match self {
            Wire::OpenAi => format!("{base}/v1/chat/completions"),
            Wire::Ollama => format!("{base}/api/chat"),
            Wire::Anthropic => format!("{base}/v1/messages"),
            Wire::Gemini if stream => {
                format!("{base}/v1beta/models/gemini-mock:streamGenerateContent?alt=sse")
            }
            Wire::Gemini => format!("{base}/v1beta/models/gemini-mock:generateContent"),
        }
    }

    pub fn body(self, stream: bool) -> Value {
        let messages = json!([{"role": "user", "content": "hi"}]);
        match self {
            Wire::OpenAi if stream => json!({"model": "gpt-mock", "stream": true,
                "stream_options": {"include_usage": true}, "messages": messages}),
            Wire::OpenAi => json!({"model": "gpt-mock", "messages": messages}),
            Wire::Ollama => json!({"model": "llama-mock", "stream": stream, "messages": messages}),
            Wire::Anthropic => json!({"model": "claude-mock", "max_tokens": 8192,
                "stream": stream, "messages": messages}),
            Wire::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        }
    }

    /// Where the provider's error JSON keeps its message.
    pub fn error_message(self, body: &Value) -> Option<String> {
        let v = match self {
            Wire::Ollama => &body["error"],
            _ => &body["error"]["message"],
        };
        v.as_str().map(str::to_owned)
    }

    /// Answer text pieces of one event, as the provider documents them.
    pub fn texts(self, data: &Value) -> Vec<String> {
        let one = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        match self {
            Wire::OpenAi => one(&data["choices"][0]["delta"]["content"])
                .into_iter()
                .collect(),
            Wire::Ollama => one(&data["message"]["content"]).into_iter().collect(),
            Wire::Anthropic if data["delta"]["type"] == "text_delta" => {
                one(&data["delta"]["text"]).into_iter().collect()
            }
            Wire::Anthropic => vec![],
            Wire::Gemini => parts(data)
                .iter()
                .filter(|p| p["thought"] != true)
                .filter_map(|p| one(&p["text"]))
                .collect(),
        }
    }

    /// Reasoning pieces of one event.
    pub fn reasoning(self, data: &Value) -> Vec<String> {
        let one = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        match self {
            Wire::OpenAi => one(&data["choices"][0]["delta"]["reasoning_content"])
                .into_iter()
                .collect(),
            Wire::Ollama => one(&data["message"]["thinking"]).into_iter().collect(),
            Wire::Anthropic if data["delta"]["type"] == "thinking_delta" => {
                one(&data["delta"]["thinking"]).into_iter().collect()
            }
            Wire::Anthropic => vec![],
            Wire::Gemini => parts(data)
                .iter()
                .filter(|p| p["thought"] == true)
                .filter_map(|p| one(&p["text"]))
                .collect(),
        }
    }
}

pub fn parts(data: &Value) -> Vec<Value> {
    data["candidates"][0]["content"]["parts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// One event of a stream: SSE `event:` name (`message` when unnamed, `line`
/// for NDJSON), its data, and when it arrived.
#[derive(Debug, Clone)]
pub struct Ev {
    pub name: String,
    pub data: String,
    pub at: Instant,
}

impl Ev {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }
}

#[derive(Debug)]
pub struct Read {
    pub events: Vec<Ev>,
    /// The transport error that ended the stream, if it did not end cleanly.
    pub error: Option<String>,
}

impl Read {
    pub fn jsons(&self) -> Vec<Value> {
        self.events
            .iter()
            .map(Ev::json)
            .filter(|v| !v.is_null())
            .collect()
    }
}

pub async fn post(server: &MockServer, wire: Wire, stream: bool) -> reqwest::Response {
    client()
        .post(wire.url(&server.url(), stream))
        .json(&wire.body(stream))
        .send()
        .await
        .unwrap()
}

/// Reads a whole stream (SSE, or NDJSON for Ollama), bounded in time.
pub async fn read(wire: Wire, resp: reqwest::Response) -> Read {
    tokio::time::timeout(BOUND, async move {
        if wire == Wire::Ollama {
            read_ndjson(resp).await
        } else {
            read_sse(resp).await
        }
    })
    .await
    .expect("stream did not end in time")
}

pub async fn read_sse(resp: reqwest::Response) -> Read {
    let mut stream = resp.bytes_stream().eventsource();
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(Ev {
                name: e.event,
                data: e.data,
                at: Instant::now(),
            }),
            Err(e) => {
                return Read {
                    events,
                    error: Some(e.to_string()),
                };
            }
        }
    }
    Read {
        events,
        error: None,
    }
}

pub async fn read_ndjson(resp: reqwest::Response) -> Read {
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let mut events = Vec::new();
    let mut error = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => {
                buf.extend_from_slice(&bytes);
                while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=pos).collect();
                    let line = String::from_utf8(line[..line.len() - 1].to_vec()).unwrap();
                    if !line.is_empty() {
                        events.push(Ev {
                            name: "line".into(),
                            data: line,
                            at: Instant::now(),
                        });
                    }
                }
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    if !buf.is_empty() {
        events.push(Ev {
            name: "line".into(),
            data: String::from_utf8(buf).unwrap(),
            at: Instant::now(),
        });
    }
    Read { events, error }
}

pub fn fixture_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

/// A fixture SSE file through the same SSE parser the tests use.
pub async fn fixture_sse(rel: &str) -> Vec<Ev> {
    let bytes = std::fs::read(fixture_path(rel)).unwrap();
    let stream = futures::stream::iter(vec![Ok::<_, std::io::Error>(bytes)]);
    let mut events = Vec::new();
    let mut es = stream.eventsource();
    while let Some(e) = es.next().await {
        let e = e.unwrap();
        events.push(Ev {
            name: e.event,
            data: e.data,
            at: Instant::now(),
        });
    }
    events
}

pub fn fixture_ndjson(rel: &str) -> Vec<Value> {
    std::fs::read_to_string(fixture_path(rel))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn fixture_json(rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture_path(rel)).unwrap()).unwrap()
}

/// Keys whose content is the model's own data (tool arguments): their
/// inner keys are not part of the wire format.
const OPAQUE: [&str; 3] = ["args", "arguments", "input"];

/// Every field path of `value`, arrays as `[]`: `choices[].delta.content`.
pub fn paths(value: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, at: &str, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    let p = if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    };
                    out.insert(p.clone());
                    if !OPAQUE.contains(&k.as_str()) {
                        walk(child, &p, out);
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    walk(item, &format!("{at}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(value, "", &mut out);
    out
}

/// Paths grouped by a key (event name, or any other grouping).
pub type Shape = BTreeMap<String, BTreeSet<String>>;

pub fn add_shape(shape: &mut Shape, group: &str, value: &Value) {
    shape
        .entry(group.to_owned())
        .or_default()
        .extend(paths(value));
}

/// The mock emits only documented fields, and every documented field not
/// listed as optional.
pub fn assert_same_shape(mock: &Shape, fixture: &Shape, optional: &[&str]) {
    let groups_m: BTreeSet<_> = mock.keys().collect();
    let groups_f: BTreeSet<_> = fixture.keys().collect();
    assert_eq!(groups_m, groups_f, "event kinds differ");
    for (group, fixture_paths) in fixture {
        let mock_paths = &mock[group];
        let extra: Vec<_> = mock_paths.difference(fixture_paths).collect();
        assert!(
            extra.is_empty(),
            "{group}: mock sends undocumented {extra:?}"
        );
        let missing: Vec<_> = fixture_paths
            .difference(mock_paths)
            .filter(|p| !optional.contains(&p.as_str()))
            .collect();
        assert!(missing.is_empty(), "{group}: mock never sends {missing:?}");
    }
}
