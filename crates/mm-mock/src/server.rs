//! The HTTP side: one axum server on 127.0.0.1 that records every request,
//! pops the next [`Reply`] and renders it in the format of the endpoint that
//! was called.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::render::{self, Ctx, OpenGuard, Out, Whole};
use crate::script::{Recorded, Reply, Step};
use crate::{anthropic, gemini, ollama, openai};

/// The largest request body read (bigger bodies are recorded as `Null`).
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// How to start a server.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Play the script again from the start whenever it runs out.
    pub repeat: bool,
    /// Fixed answers to requests other than the chat endpoints (a model
    /// list, `/props`), matched by method and path without the query.
    pub routes: Vec<Route>,
    /// Behave like a server with this context window, in tokens (the
    /// mock counts a request's body bytes / 4): it reports the window at
    /// each wire's discovery endpoint, and a chat request longer than it
    /// gets that wire's "too long" answer without using a reply, except on
    /// the Ollama wire, which cuts the prompt silently as Ollama does and
    /// reports the window as the prompt's size.
    pub window: Option<u64>,
}

/// A fixed answer to one method and path.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// `GET`, `POST`...
    pub method: String,
    /// The path without the query string.
    pub path: String,
    /// The HTTP status of the answer.
    pub status: u16,
    /// The JSON body of the answer.
    pub body: Value,
}

impl Route {
    /// `GET path` answered 200 with `body`.
    pub fn get(path: impl Into<String>, body: Value) -> Route {
        Route {
            method: "GET".into(),
            path: path.into(),
            status: 200,
            body,
        }
    }

    /// `POST path` answered 200 with `body`.
    pub fn post(path: impl Into<String>, body: Value) -> Route {
        Route {
            method: "POST".into(),
            path: path.into(),
            status: 200,
            body,
        }
    }
}

/// The mock's token count of a request body: bytes / 4.
pub fn mock_tokens(body_bytes: usize) -> u64 {
    body_bytes.div_ceil(4) as u64
}

struct Script {
    queue: VecDeque<Reply>,
    /// Every request, in order.
    requests: Vec<Recorded>,
    /// Which of `requests` reached a chat endpoint.
    chat: Vec<bool>,
    /// The whole script, kept when it repeats.
    again: Option<Vec<Reply>>,
    played: u64,
}

struct Shared {
    script: Mutex<Script>,
    routes: Vec<Route>,
    window: Option<u64>,
    cancel: CancellationToken,
    open: Arc<AtomicUsize>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Script> {
        // A panic while holding the lock leaves plain data: keep serving.
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A scripted model server on 127.0.0.1. Dropping it stops the server and
/// cuts the bodies it is still writing.
pub struct MockServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MockServer {
    /// Bind 127.0.0.1:0 (random port), serve in a tokio task, play `script`
    /// in order.
    pub async fn start(script: Vec<Reply>) -> std::io::Result<MockServer> {
        MockServer::start_with(script, Options::default()).await
    }

    /// Like [`MockServer::start`], with a chosen port and optional repeat.
    pub async fn start_with(script: Vec<Reply>, options: Options) -> std::io::Result<MockServer> {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], options.port))).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                queue: script.iter().cloned().collect(),
                requests: Vec::new(),
                chat: Vec::new(),
                again: options.repeat.then_some(script),
                played: 0,
            }),
            routes: options.routes,
            window: options.window,
            cancel: CancellationToken::new(),
            open: Arc::new(AtomicUsize::new(0)),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let stop = shared.cancel.clone().cancelled_owned();
        tokio::spawn(async move {
            // Errors of single connections are handled inside; serve only
            // ends when stopped.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await;
        });
        Ok(MockServer { shared, addr })
    }

    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Append replies to the script.
    pub fn push(&self, reply: Reply) {
        let mut s = self.shared.lock();
        if let Some(again) = &mut s.again {
            again.push(reply.clone());
        }
        s.queue.push_back(reply);
    }

    /// The chat requests received so far (those that reached a wire's
    /// chat endpoint), in order: what a test of a conversation looks at.
    pub fn requests(&self) -> Vec<Recorded> {
        let s = self.shared.lock();
        s.requests
            .iter()
            .zip(&s.chat)
            .filter(|(_, chat)| **chat)
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Every request received so far, in order, the questions a client
    /// asks beside the chat (a model list, `/props`) and unknown ones
    /// included.
    pub fn all_requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// How many replies are still unplayed.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// How many response bodies are still being written: 0 once every
    /// client has read its answer or hung up (cancellation tests).
    pub fn open_streams(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Stop serving (also done on drop).
    pub fn stop(&self) {
        self.shared.cancel.cancel();
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
    }
}

/// The endpoint a request reached.
#[derive(Debug, Clone, PartialEq)]
enum Wire {
    OpenAi,
    Ollama,
    Anthropic,
    Gemini {
        model: String,
        stream: bool,
        sse: bool,
    },
}

impl Wire {
    fn route(method: &Method, path: &str, query: Option<&str>) -> Option<Wire> {
        if method != Method::POST {
            return None;
        }
        if path.ends_with("/chat/completions") {
            return Some(Wire::OpenAi);
        }
        match path {
            "/api/chat" => return Some(Wire::Ollama),
            "/v1/messages" => return Some(Wire::Anthropic),
            _ => {}
        }
        let rest = path
            .strip_prefix("/v1beta/models/")
            .or_else(|| path.strip_prefix("/v1/models/"))?;
        let (model, action) = rest.rsplit_once(':')?;
        let stream = match action {
            "streamGenerateContent" => true,
            "generateContent" => false,
            _ => return None,
        };
        let sse = query
            .unwrap_or_default()
            .split('&')
            .any(|kv| kv == "alt=sse");
        Some(Wire::Gemini {
            model: model.to_owned(),
            stream,
            sse,
        })
    }

    /// This wire's answer to a prompt of `n` tokens over window `w`, as
    /// the server it stands for words it (the OpenAI wire as llama.cpp).
    fn too_long(&self, w: u64, n: u64) -> Value {
        use serde_json::json;
        match self {
            Wire::OpenAi | Wire::Ollama => json!({"error": {
                "code": 400,
                "message": format!("request ({n} tokens) exceeds the available context size ({w} tokens), try increasing it"),
                "type": "exceed_context_size_error",
                "n_prompt_tokens": n,
                "n_ctx": w,
            }}),
            Wire::Anthropic => json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("prompt is too long: {n} tokens > {w} maximum"),
            }}),
            Wire::Gemini { .. } => json!({"error": {
                "code": 400,
                "message": format!("The input token count ({n}) exceeds the maximum number of tokens allowed ({w})."),
                "status": "INVALID_ARGUMENT",
            }}),
        }
    }

    fn error(&self, status: u16, message: &str) -> Value {
        match self {
            Wire::OpenAi => openai::error(status, message),
            Wire::Ollama => ollama::error(status, message),
            Wire::Anthropic => anthropic::error(status, message),
            Wire::Gemini { .. } => gemini::error(status, message),
        }
    }
}

/// What a server with window `w` answers at each wire's discovery
/// endpoint, in that server's shape.
fn discovery(method: &Method, path: &str, w: u64) -> Option<Value> {
    use serde_json::json;
    match (method.as_str(), path) {
        ("GET", "/props") => Some(json!({
            "default_generation_settings": {"params": {}, "n_ctx": w},
            "total_slots": 1,
            "model_alias": "mock",
        })),
        ("POST", "/api/show") => Some(json!({
            "parameters": "",
            "model_info": {"general.architecture": "mock", "mock.context_length": w},
        })),
        ("GET", p) => {
            if let Some(model) = p.strip_prefix("/v1beta/models/")
                && !model.contains(':')
            {
                return Some(json!({"name": format!("models/{model}"), "inputTokenLimit": w}));
            }
            let model = p.strip_prefix("/v1/models/")?;
            Some(json!({"id": model, "type": "model", "max_input_tokens": w}))
        }
        _ => None,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn json_response(status: u16, value: &Value, retry_after: Option<String>) -> Response {
    let mut resp = Response::new(Body::from(value.to_string()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(v) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(header::RETRY_AFTER, v);
    }
    resp
}

fn streamed(shared: &Shared, content_type: &'static str, outs: Vec<Out>) -> Response {
    let guard = OpenGuard::new(shared.open.clone());
    let mut resp = Response::new(render::body(outs, shared.cancel.clone(), guard));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .unwrap_or_default();
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let wire = Wire::route(&parts.method, parts.uri.path(), parts.uri.query());
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: path.clone(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: json.clone(),
    };

    let route = shared
        .routes
        .iter()
        .find(|r| r.method == parts.method.as_str() && r.path == parts.uri.path())
        .map(|r| (r.status, r.body.clone()))
        .or_else(|| {
            let w = shared.window?;
            discovery(&parts.method, parts.uri.path(), w).map(|b| (200, b))
        });
    let too_long = match (&wire, shared.window) {
        (Some(wire), Some(w)) if mock_tokens(bytes.len()) > w && route.is_none() => {
            Some((wire.clone(), w, mock_tokens(bytes.len())))
        }
        _ => None,
    };
    // Record first, then take the reply, under one lock: the log and the
    // script stay in the same order.
    let (reply, seq) = {
        let mut s = shared.lock();
        s.requests.push(recorded);
        s.chat.push(wire.is_some() && route.is_none());
        if let Some((status, body)) = route {
            drop(s);
            return json_response(status, &body, None);
        }
        if let Some((wire, w, n)) = &too_long
            && *wire != Wire::Ollama
        {
            drop(s);
            return json_response(400, &wire.too_long(*w, *n), None);
        }
        if wire.is_none() {
            (None, 0)
        } else {
            if s.queue.is_empty()
                && let Some(again) = &s.again
            {
                s.queue = again.iter().cloned().collect();
            }
            s.played += 1;
            (s.queue.pop_front(), s.played)
        }
    };

    let Some(wire) = wire else {
        let message = format!("mm-mock: no endpoint {} {path}", parts.method);
        return json_response(
            404,
            &serde_json::json!({"error": {"message": message}}),
            None,
        );
    };
    let steps = match reply {
        None => return json_response(500, &wire.error(500, "mock script exhausted"), None),
        Some(Reply::Status {
            status,
            retry_after,
            message,
        }) => {
            let retry_after = retry_after.map(|secs| secs.to_string());
            return json_response(status, &wire.error(status, &message), retry_after);
        }
        Some(Reply::RetryAt {
            status,
            seconds,
            message,
        }) => {
            let at = SystemTime::now() + Duration::from_secs(seconds);
            let date = httpdate::fmt_http_date(at);
            return json_response(status, &wire.error(status, &message), Some(date));
        }
        Some(Reply::Body { status, body }) => return json_response(status, &body, None),
        Some(Reply::Stream { mut steps }) => {
            if let Some((_, w, _)) = too_long {
                // Ollama cut the front of the prompt to fit its window.
                let completion = crate::render::usage(&steps).map_or(1, |(_, c)| c);
                steps.retain(|s| !matches!(s, Step::Usage { .. }));
                steps.push(Step::Usage {
                    prompt: w,
                    completion,
                });
            }
            steps
        }
    };

    let model = match &wire {
        Wire::Gemini { model, .. } => model.clone(),
        _ => json["model"].as_str().unwrap_or("mock").to_owned(),
    };
    let ctx = Ctx {
        model,
        seq,
        created: unix_now(),
        include_usage: json["stream_options"]["include_usage"] == Value::Bool(true),
    };
    let stream = match &wire {
        Wire::Ollama => json["stream"] != Value::Bool(false),
        Wire::Gemini { stream, .. } => *stream,
        _ => json["stream"] == Value::Bool(true),
    };

    if stream {
        let (content_type, outs) = match &wire {
            Wire::OpenAi => ("text/event-stream", openai::stream(&steps, &ctx)),
            Wire::Ollama => ("application/x-ndjson", ollama::stream(&steps, &ctx)),
            Wire::Anthropic => ("text/event-stream", anthropic::stream(&steps, &ctx)),
            Wire::Gemini { sse: true, .. } => {
                ("text/event-stream", gemini::stream(&steps, &ctx, true))
            }
            Wire::Gemini { sse: false, .. } => {
                ("application/json", gemini::stream(&steps, &ctx, false))
            }
        };
        return streamed(&shared, content_type, outs);
    }

    let Whole { delay, outs } = match &wire {
        Wire::OpenAi => openai::whole(&steps, &ctx),
        Wire::Ollama => ollama::whole(&steps, &ctx),
        Wire::Anthropic => anthropic::whole(&steps, &ctx),
        Wire::Gemini { .. } => gemini::whole(&steps, &ctx),
    };
    if delay > Duration::ZERO {
        // A slow non-streaming server answers late: headers included.
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shared.cancel.cancelled() => {}
        }
    }
    streamed(&shared, "application/json", outs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_path() {
        let post = Method::POST;
        assert_eq!(
            Wire::route(&post, "/v1/chat/completions", None),
            Some(Wire::OpenAi)
        );
        assert_eq!(Wire::route(&post, "/api/chat", None), Some(Wire::Ollama));
        assert_eq!(
            Wire::route(&post, "/v1/messages", None),
            Some(Wire::Anthropic)
        );
        assert_eq!(
            Wire::route(
                &post,
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                Some("alt=sse")
            ),
            Some(Wire::Gemini {
                model: "gemini-2.5-flash".into(),
                stream: true,
                sse: true
            })
        );
        assert_eq!(
            Wire::route(&post, "/v1beta/models/m:generateContent", None),
            Some(Wire::Gemini {
                model: "m".into(),
                stream: false,
                sse: false
            })
        );
        assert_eq!(
            Wire::route(&post, "/v1beta/models/m:countTokens", None),
            None
        );
        assert_eq!(Wire::route(&Method::GET, "/api/chat", None), None);
        assert_eq!(Wire::route(&post, "/nothing", None), None);
    }
}
