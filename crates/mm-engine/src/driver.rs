//! The one generic driver: streaming, watchdog, retries with backoff,
//! the non-streaming fallback, cancellation and error mapping, for every
//! provider alike.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::assemble::Assembler;
use crate::engine::{Engine, Generation, Inner};
use crate::error::{EngineError, GenerateError, one_line, server_error};
use crate::runaway;
use futures::StreamExt;

use crate::frames::{ChunkError, Decoder, Watchdog};
use crate::types::{Message, StreamEvent, ToolDecl};
use crate::wire::{Flow, Framing, WireRequest};

/// Frames shorter than this are never inspected while they arrive.
const PARTIAL_WATCH: usize = 4096;
/// No stream line may grow past this (memory stays bounded whatever the
/// server sends).
const MAX_LINE: usize = 16 << 20;

/// The notice the sink gets after a watchdog cut (decisions.md 18).
pub const STALL_NOTICE: &str = "stream stalled; retrying without streaming";

/// First backoff step; doubled per retry.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
/// Longest backoff step (a server's `Retry-After` is honoured as given).
const BACKOFF_CAP: Duration = Duration::from_secs(8);

/// A URL fit for an error line: without any user:password part.
pub(crate) fn display_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// An error and its causes on one line (reqwest's own text is terse).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

fn backoff(attempt: u32) -> Duration {
    let step = BACKOFF_BASE.saturating_mul(1u32 << attempt.min(16));
    step.min(BACKOFF_CAP)
}

fn is_json(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    let v = resp.headers().get("retry-after")?.to_str().ok()?;
    v.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// How one streaming attempt ended.
enum Attempt {
    Done(Generation),
    Cancelled(Generation),
    /// Worth another try (connection error, 429, 5xx, an early drop).
    Retry {
        wait: Option<Duration>,
        error: EngineError,
    },
    /// The watchdog cut the stream.
    Stalled,
    Failed(GenerateError),
}

fn cancelled(message: Message, usage: Option<crate::types::Usage>) -> Generation {
    Generation {
        message,
        usage,
        cancelled: true,
    }
}

impl Inner {
    fn url_for_errors(&self) -> String {
        display_url(&self.base_url)
    }

    fn send_error(&self, e: reqwest::Error) -> EngineError {
        if e.is_connect() {
            EngineError::Unreachable {
                provider: self.spec.name.to_owned(),
                url: self.url_for_errors(),
            }
        } else {
            EngineError::Connection {
                provider: self.spec.name.to_owned(),
                url: self.url_for_errors(),
                detail: error_chain(&e.without_url()),
            }
        }
    }

    fn post(&self, req: &WireRequest) -> reqwest::RequestBuilder {
        let mut b = self
            .client
            .post(&req.url)
            .header("content-type", "application/json")
            .body(req.body.clone());
        for (name, value) in &req.headers {
            b = b.header(*name, value);
        }
        b
    }

    /// The runaway guard on a frame still arriving (wires that send a tool
    /// call whole), and a bound on any line's length.
    fn watch_partial(&self, partial: &[u8], asm: &mut Assembler<'_>) -> Result<(), EngineError> {
        if partial.len() < PARTIAL_WATCH {
            return Ok(());
        }
        if partial.len() > MAX_LINE {
            return Err(EngineError::Stream(format!(
                "a line of the {} stream passed 16 MiB",
                self.spec.name
            )));
        }
        let text = match std::str::from_utf8(partial) {
            Ok(t) => t,
            Err(e) => std::str::from_utf8(&partial[..e.valid_up_to()]).unwrap_or(""),
        };
        if let Some((name, args)) = self.provider.partial_call(text)
            && let Some(sentence) = runaway::check(args, args.chars().count())
        {
            asm.runaway_call(name, args);
            return Err(EngineError::Runaway { text: sentence });
        }
        Ok(())
    }

    /// The message of an error response, bounded by the watchdog.
    async fn error_body(&self, resp: reqwest::Response) -> String {
        let status = resp.status();
        let body = tokio::time::timeout(self.watchdog, resp.bytes())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        if let Some(m) = self.provider.error_message(&body) {
            return one_line(&m, 1000);
        }
        let text = one_line(&String::from_utf8_lossy(&body), 1000);
        if text.is_empty() {
            status.canonical_reason().unwrap_or("no message").to_owned()
        } else {
            text
        }
    }

    async fn stream_once(
        &self,
        req: &WireRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Attempt {
        let send = tokio::time::timeout(self.watchdog, self.post(req).send());
        let resp = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Attempt::Cancelled(cancelled(Message::assistant(""), None)),
            r = send => match r {
                Err(_elapsed) => return Attempt::Stalled,
                Ok(Err(e)) => return Attempt::Retry { wait: None, error: self.send_error(e) },
                Ok(Ok(resp)) => resp,
            },
        };
        let status = resp.status();
        if !status.is_success() {
            let wait = retry_after(&resp);
            let code = status.as_u16();
            let message = self.error_body(resp).await;
            let error = server_error(code, message);
            if code == 429 || status.is_server_error() {
                return Attempt::Retry { wait, error };
            }
            return Attempt::Failed(error.into());
        }
        if self.provider.framing() == Framing::Sse && is_json(&resp) {
            // Some servers ignore `stream: true` and answer whole (or send
            // an error object with status 200).
            return self.whole_instead(resp, on_event, cancel).await;
        }

        let mut bytes = Watchdog::new(resp.bytes_stream(), self.watchdog);
        let mut decoder = Decoder::new(self.provider.framing());
        let provider = &*self.provider;
        let mut asm = Assembler::new(on_event);
        let mut stop = std::pin::pin!(cancel.cancelled());
        loop {
            let chunk = tokio::select! {
                biased;
                _ = &mut stop => {
                    let (m, u) = asm.partial();
                    return Attempt::Cancelled(cancelled(m, u));
                }
                c = bytes.next() => c,
            };
            let (fed, last) = match chunk {
                None => (
                    decoder.finish(&mut |event, data| provider.parse_frame(event, data, &mut asm)),
                    true,
                ),
                Some(Ok(chunk)) => (
                    decoder.feed(&chunk, &mut |event, data| {
                        provider.parse_frame(event, data, &mut asm)
                    }),
                    false,
                ),
                Some(Err(ChunkError::Stalled)) => return Attempt::Stalled,
                Some(Err(ChunkError::Transport(e))) => {
                    let error = EngineError::Stream(format!(
                        "the {} stream broke off: {}",
                        self.spec.name,
                        error_chain(&e.without_url())
                    ));
                    // Nothing shown yet: trying again repeats nothing.
                    if !asm.emitted() {
                        return Attempt::Retry { wait: None, error };
                    }
                    let (m, _) = asm.partial();
                    return Attempt::Failed(GenerateError {
                        error,
                        partial: Some(m),
                    });
                }
            };
            let fed = match fed {
                Ok(Flow::Continue) if !last => self
                    .watch_partial(decoder.partial(), &mut asm)
                    .map(|()| Flow::Continue),
                other => other,
            };
            match fed {
                Ok(Flow::Continue) if !last => {}
                Ok(_) => break,
                Err(error) => {
                    let (m, _) = asm.partial();
                    return Attempt::Failed(GenerateError {
                        error,
                        partial: Some(m),
                    });
                }
            }
        }
        let (message, usage) = asm.finish();
        Attempt::Done(Generation {
            message,
            usage,
            cancelled: false,
        })
    }

    /// A streaming request answered with one JSON body.
    async fn whole_instead(
        &self,
        resp: reqwest::Response,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Attempt {
        let body = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Attempt::Cancelled(cancelled(Message::assistant(""), None)),
            r = tokio::time::timeout(self.watchdog.saturating_mul(5), resp.bytes()) => match r {
                Err(_) => return Attempt::Stalled,
                Ok(Err(e)) => {
                    return Attempt::Retry {
                        wait: None,
                        error: EngineError::Stream(format!(
                            "the answer of {} broke off: {}",
                            self.spec.name,
                            error_chain(&e.without_url())
                        )),
                    };
                }
                Ok(Ok(body)) => body,
            },
        };
        let mut asm = Assembler::new(on_event);
        if let Err(error) = self.provider.parse_response(&body, &mut asm) {
            let (m, _) = asm.partial();
            return Attempt::Failed(GenerateError {
                error,
                partial: Some(m),
            });
        }
        let (message, usage) = asm.finish();
        Attempt::Done(Generation {
            message,
            usage,
            cancelled: false,
        })
    }

    /// After a watchdog cut: one request without streaming, bounded by
    /// 5 × watchdog (decisions.md 18).
    async fn without_streaming(
        &self,
        messages: &[Message],
        tools: &[ToolDecl],
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Generation, GenerateError> {
        on_event(StreamEvent::Notice(STALL_NOTICE.to_owned()));
        let req = self.provider.request(messages, tools, false);
        let stalled = |detail: String| EngineError::Stalled {
            provider: self.spec.name.to_owned(),
            seconds: self.watchdog_secs,
            detail,
        };
        let bound = self.watchdog.saturating_mul(5);
        let whole = async {
            let resp = self
                .post(&req)
                .send()
                .await
                .map_err(|e| self.send_error(e))?;
            let status = resp.status();
            if !status.is_success() {
                let message = self.error_body(resp).await;
                return Err(server_error(status.as_u16(), message));
            }
            resp.bytes().await.map_err(|e| {
                EngineError::Stream(format!(
                    "the answer broke off: {}",
                    error_chain(&e.without_url())
                ))
            })
        };
        let body = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ok(cancelled(Message::assistant(""), None)),
            r = tokio::time::timeout(bound, whole) => match r {
                Err(_) => {
                    return Err(stalled(format!("no answer within {}s", bound.as_secs())).into());
                }
                Ok(Err(e @ EngineError::ContextLength { .. })) => return Err(e.into()),
                Ok(Err(e)) => return Err(stalled(e.to_string()).into()),
                Ok(Ok(body)) => body,
            },
        };
        let mut asm = Assembler::new(on_event);
        if let Err(error) = self.provider.parse_response(&body, &mut asm) {
            let (m, _) = asm.partial();
            let error = match error {
                e @ (EngineError::Runaway { .. } | EngineError::ContextLength { .. }) => e,
                other => stalled(other.to_string()),
            };
            return Err(GenerateError {
                error,
                partial: Some(m),
            });
        }
        let (message, usage) = asm.finish();
        Ok(Generation {
            message,
            usage,
            cancelled: false,
        })
    }
}

impl Engine {
    /// One model request: streams events to `on_event` as they arrive and
    /// returns the assistant message. Cancellation drops the stream at once
    /// and returns `Ok` with `cancelled: true` and the partial message.
    pub async fn generate(
        &self,
        messages: &[Message],
        tools: &[ToolDecl],
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Generation, GenerateError> {
        let inner = &*self.inner;
        let req = inner.provider.request(messages, tools, true);
        let mut attempt = 0u32;
        loop {
            match inner.stream_once(&req, on_event, cancel).await {
                Attempt::Done(g) | Attempt::Cancelled(g) => return Ok(g),
                Attempt::Failed(e) => return Err(e),
                Attempt::Stalled => {
                    return inner
                        .without_streaming(messages, tools, on_event, cancel)
                        .await;
                }
                Attempt::Retry { wait, error } => {
                    if attempt >= inner.retries {
                        return Err(error.into());
                    }
                    let wait = wait.unwrap_or_else(|| backoff(attempt));
                    tracing::debug!(provider = inner.spec.name, attempt, ?wait, %error, "retrying");
                    attempt += 1;
                    tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Ok(cancelled(Message::assistant(""), None)),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    /// A tool-less summary request for context compression: the history
    /// (tool calls and results written out as text, so every provider
    /// accepts it without tool declarations) plus `instruction`.
    pub async fn summarize(
        &self,
        messages: &[Message],
        instruction: &str,
        cancel: &CancellationToken,
    ) -> Result<String, GenerateError> {
        let mut transcript = summary_transcript(messages);
        transcript.push(Message::user(instruction));
        let mut ignore = |_e: StreamEvent| {};
        let g = self.generate(&transcript, &[], &mut ignore, cancel).await?;
        if g.cancelled {
            return Err(EngineError::Cancelled.into());
        }
        match g.message {
            Message::Assistant { content, .. } if !content.trim().is_empty() => Ok(content),
            _ => Err(EngineError::Stream("the model returned an empty summary".to_owned()).into()),
        }
    }
}

/// The history with tool calls and results as plain text.
pub(crate) fn summary_transcript(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m {
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut text = content.clone();
                for c in tool_calls {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!("[tool call {}: {}]", c.name, c.arguments));
                }
                Message::assistant(text)
            }
            Message::Tool { name, content, .. } => {
                Message::user(format!("[tool result of {name}]\n{content}"))
            }
            other => other.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        assert_eq!(display_url("http://u:p@host:1/v1"), "http://host:1/v1");
        assert_eq!(display_url("http://127.0.0.1:9"), "http://127.0.0.1:9");
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(0), Duration::from_millis(250));
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_millis(1000));
        assert_eq!(backoff(10), BACKOFF_CAP);
        assert_eq!(backoff(40), BACKOFF_CAP);
    }

    #[test]
    fn transcript_writes_tools_as_text() {
        let t = summary_transcript(&[
            Message::Assistant {
                content: "let me look".into(),
                reasoning: vec![],
                tool_calls: vec![crate::types::ToolCall {
                    id: "1".into(),
                    name: "bash".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                }],
            },
            Message::tool("1", "bash", "a.txt"),
        ]);
        assert_eq!(
            t,
            vec![
                Message::assistant("let me look\n[tool call bash: {\"command\":\"ls\"}]"),
                Message::user("[tool result of bash]\na.txt"),
            ]
        );
    }
}
