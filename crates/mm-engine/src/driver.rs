//! The one generic driver: streaming, watchdog, retries with backoff,
//! the non-streaming fallback, cancellation and error mapping, for every
//! provider alike.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::assemble::Assembler;
use crate::engine::{Engine, Generation, Inner};
use crate::error::{EngineError, GenerateError, one_line, server_error};
use crate::runaway;
use crate::textcalls::Quoted;
use futures::StreamExt;

use crate::frames::{ChunkError, Decoder, Watchdog};
use crate::types::{Message, StreamEvent, ToolDecl};
use crate::wire::{Delta, DeltaSink, Flow, Framing, Provider, WireRequest};

/// Frames shorter than this are never inspected while they arrive: they
/// cannot yet hold the 256 characters of arguments the guard needs.
const PARTIAL_WATCH: usize = runaway::WINDOW_CHARS;
/// How far before the new bytes of a growing frame the search for the
/// arguments key starts (the key, and the call's name before it, may
/// straddle the previous chunk's end).
const LOOKBACK: usize = 512;
/// No stream line may grow past this (memory stays bounded whatever the
/// server sends).
const MAX_LINE: usize = 16 << 20;

/// The notice the sink gets after a watchdog cut (docs/design.md#watchdog).
pub const STALL_NOTICE: &str = "stream stalled; retrying without streaming";

/// First backoff step; doubled per retry.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
/// Longest backoff step (a server's `Retry-After` is honoured as given).
const BACKOFF_CAP: Duration = Duration::from_secs(8);

/// An error and its causes on one line (reqwest's own text is terse).
/// What the HTTP client's causes say when the peer closed the connection
/// mid-body (hyper's chunked and length-delimited decoders, a reset).
const CLOSED: &[&str] = &[
    "unexpected EOF",
    "end of file before message length reached",
    "connection closed before message completed",
    "Connection reset by peer",
    "connection reset",
];

/// Said after a broken answer whose start was shown: it stays in the
/// session (the partial message goes with the error).
const KEPT: &str = "(what was received is kept)";

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

/// The one line a front end shows while mm waits as a server asked.
fn retry_notice(error: &EngineError, wait: Duration) -> String {
    format!(
        "{error}; retrying in {}s, as the server asks (Retry-After)",
        whole_seconds(wait)
    )
}

/// Seconds, a started one counted (a date's wait is rarely whole).
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    let v = resp.headers().get("retry-after")?.to_str().ok()?;
    retry_wait(v, std::time::SystemTime::now())
}

/// The wait a `Retry-After` value asks for at `now`: seconds, or an HTTP
/// date (any of the three forms HTTP allows); a date already past means
/// at once.
fn retry_wait(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// What the runaway guard knows of the frame still arriving.
#[derive(Debug, Default)]
struct PartialWatch {
    /// The decoder's line count when this frame began: another count means
    /// another frame.
    line: u64,
    /// Bytes of the frame already looked at.
    scanned: usize,
    /// The call whose arguments are arriving, once its key was seen.
    call: Option<WatchedCall>,
}

#[derive(Debug)]
struct WatchedCall {
    /// Where its argument text begins in the frame.
    args_at: usize,
    name: String,
    scanner: runaway::Scanner,
}

/// The runaway guard on a frame still arriving (wires that send a tool
/// call whole), and a bound on any line's length. Only the bytes that
/// arrived since the last look are read (plus a short look-back for
/// the arguments key), so a long frame costs nothing twice.
fn watch_partial(
    provider: &dyn Provider,
    provider_name: &str,
    decoder: &Decoder,
    watch: &mut PartialWatch,
    asm: &mut Assembler<'_>,
) -> Result<(), EngineError> {
    let partial = decoder.partial();
    if partial.len() > MAX_LINE {
        return Err(EngineError::Stream(format!(
            "a line of the {provider_name} stream passed 16 MiB"
        )));
    }
    if watch.line != decoder.lines() {
        *watch = PartialWatch {
            line: decoder.lines(),
            ..PartialWatch::default()
        };
    }
    if partial.len() < PARTIAL_WATCH || partial.len() <= watch.scanned {
        return Ok(());
    }
    // The window: from a character boundary a little before the new
    // bytes to the end of their valid UTF-8 (a character may be cut).
    let mut from = watch.scanned.saturating_sub(LOOKBACK);
    while partial.get(from).is_some_and(|b| b & 0xC0 == 0x80) {
        from += 1;
    }
    let window = match std::str::from_utf8(&partial[from..]) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&partial[from..from + e.valid_up_to()]).unwrap_or("")
        }
        // Not UTF-8: the frame fails as a whole when it ends.
        Err(_) => return Ok(()),
    };
    let end = from + window.len();
    let new_text = window
        .get(watch.scanned.saturating_sub(from)..)
        .unwrap_or("");
    let found = provider
        .partial_call(window)
        .map(|(name, rest)| (name, end - rest.len(), rest));
    let tripped = match (found, &mut watch.call) {
        // The arguments of a call not seen before begin.
        (Some((name, at, rest)), call) if call.as_ref().is_none_or(|c| at > c.args_at) => {
            let mut scanner = runaway::Scanner::new();
            let trip = scanner.feed(rest);
            *call = Some(WatchedCall {
                args_at: at,
                name: name.to_owned(),
                scanner,
            });
            trip
        }
        (_, Some(c)) => c.scanner.feed(new_text),
        (_, None) => None,
    };
    watch.scanned = end;
    if let (Some(trip), Some(call)) = (tripped, &watch.call) {
        let args = partial
            .get(call.args_at..call.args_at + trip.bytes)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("");
        asm.runaway_call(&call.name, args);
        return Err(EngineError::Runaway {
            text: trip.sentence,
        });
    }
    Ok(())
}

/// Passes a frame's deltas to the assembler and notes whether any of them
/// carried content. The watchdog counts time without content, not without
/// bytes: a server that sends `: keep-alive` comments, pings or empty
/// deltas while its model is stuck is cut like a silent one.
struct Noting<'a, 's> {
    asm: &'a mut Assembler<'s>,
    content: bool,
}

impl DeltaSink for Noting<'_, '_> {
    fn delta(&mut self, delta: Delta<'_>) -> Result<(), EngineError> {
        self.content |= carries_content(&delta);
        self.asm.delta(delta)
    }
}

/// Text, reasoning or tool-call bytes (and the server's end of the
/// answer); not usage, not an empty piece.
fn carries_content(delta: &Delta<'_>) -> bool {
    match delta {
        Delta::Text(t) | Delta::Reasoning(t) | Delta::Signature(t) | Delta::Redacted(t) => {
            !t.is_empty()
        }
        Delta::ToolArgs { fragment, .. } => !fragment.is_empty(),
        Delta::ToolStart { .. } | Delta::ToolWhole { .. } | Delta::End => true,
        Delta::ReasoningBlock | Delta::ToolEnd { .. } | Delta::Usage { .. } => false,
    }
}

/// `at + period`, saturating (a `watchdog` of 0 is a year).
fn after_period(at: tokio::time::Instant, period: Duration) -> tokio::time::Instant {
    at.checked_add(period)
        .or_else(|| at.checked_add(Duration::from_secs(1 << 30)))
        .unwrap_or(at)
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

impl Attempt {
    /// The answer `asm` assembled, whole.
    fn done(asm: Assembler<'_>) -> Attempt {
        let cache_reported = asm.cache_reported();
        let (message, usage) = asm.finish();
        Attempt::Done(Generation {
            message,
            usage,
            cancelled: false,
            cache_reported,
        })
    }

    /// A failure midway: what `asm` took so far goes with the error.
    fn failed(asm: Assembler<'_>, error: EngineError) -> Attempt {
        let (m, _) = asm.partial();
        Attempt::Failed(GenerateError {
            error,
            partial: Some(m),
        })
    }

    /// The stream broke off. Before anything was shown another try
    /// repeats nothing; after, the part shown goes with the error.
    fn broke_off(asm: Assembler<'_>, error: EngineError) -> Attempt {
        if asm.emitted() {
            let error = match error {
                EngineError::Stream(m) => EngineError::Stream(format!("{m} {KEPT}")),
                other => other,
            };
            Attempt::failed(asm, error)
        } else {
            Attempt::Retry { wait: None, error }
        }
    }
}

fn cancelled(message: Message, usage: Option<crate::types::Usage>) -> Generation {
    Generation {
        message,
        usage,
        cancelled: true,
        cache_reported: false,
    }
}

impl Inner {
    /// The address for error lines: credentials in the user part and the
    /// query string masked (docs/design.md#where-keys-go).
    pub(crate) fn url_for_errors(&self) -> String {
        mm_config::mask_url(&self.base_url)
    }

    pub(crate) fn send_error(&self, e: reqwest::Error) -> EngineError {
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

    /// A 3xx answer: redirects are not followed (the client's policy), so
    /// it is an error naming where the server points, masked.
    fn redirect_error(&self, resp: &reqwest::Response) -> EngineError {
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map_or_else(|| "no Location given".to_owned(), mm_config::mask_url);
        EngineError::Redirect {
            status: resp.status().as_u16(),
            location: one_line(&location, 300),
        }
    }

    /// The assembler of one response; it recovers tool calls written as
    /// text unless `textToolCalls` is off.
    fn assembler<'s>(
        &self,
        on_event: &'s mut (dyn FnMut(StreamEvent) + Send),
        tools: &'s [ToolDecl],
        quoted: &'s Quoted<'s>,
    ) -> Assembler<'s> {
        let asm = Assembler::new(on_event);
        if self.text_tool_calls {
            asm.with_text_calls(tools).quoting(quoted)
        } else {
            asm
        }
    }

    /// The error an error response means, its body read within the
    /// watchdog: an overflow, or the status and the body's message.
    pub(crate) async fn error_of(&self, resp: reqwest::Response) -> EngineError {
        let status = resp.status();
        let body = tokio::time::timeout(self.watchdog, resp.bytes())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        let message = match self.provider.error_message(&body) {
            Some(m) => one_line(&m, 1000),
            None => {
                let text = one_line(&String::from_utf8_lossy(&body), 1000);
                if text.is_empty() {
                    status.canonical_reason().unwrap_or("no message").to_owned()
                } else {
                    text
                }
            }
        };
        server_error(status.as_u16(), message, &json)
    }

    /// One streaming request: connect, then read the stream.
    async fn stream_once(
        &self,
        req: &WireRequest,
        tools: &[ToolDecl],
        quoted: &Quoted<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Attempt {
        let resp = match self.connect(req, cancel).await {
            Ok(resp) => resp,
            Err(ended) => return ended,
        };
        if self.provider.framing() == Framing::Sse && is_json(&resp) {
            // Some servers ignore `stream: true` and answer whole (or send
            // an error object with status 200).
            return self
                .whole_instead(resp, tools, quoted, on_event, cancel)
                .await;
        }
        self.read_stream(resp, tools, quoted, on_event, cancel)
            .await
    }

    /// Send the request and map a refusal: a redirect and a 4xx fail, a
    /// 429, a 5xx and a connection error are worth another try.
    async fn connect(
        &self,
        req: &WireRequest,
        cancel: &CancellationToken,
    ) -> Result<reqwest::Response, Attempt> {
        let send = tokio::time::timeout(self.watchdog, self.post(req).send());
        let resp = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(Attempt::Cancelled(cancelled(Message::assistant(""), None))),
            r = send => match r {
                Err(_elapsed) => return Err(Attempt::Stalled),
                Ok(Err(e)) => return Err(Attempt::Retry { wait: None, error: self.send_error(e) }),
                Ok(Ok(resp)) => resp,
            },
        };
        let status = resp.status();
        if status.is_redirection() {
            return Err(Attempt::Failed(self.redirect_error(&resp).into()));
        }
        if !status.is_success() {
            let wait = retry_after(&resp);
            let error = self.error_of(resp).await;
            if status.as_u16() == 429 || status.is_server_error() {
                return Err(Attempt::Retry { wait, error });
            }
            return Err(Attempt::Failed(error.into()));
        }
        Ok(resp)
    }

    /// Decode the stream into the assembler until the answer ends, the
    /// watchdog cuts it (`watchdog` seconds without content, whatever
    /// else arrives), the user cancels or it breaks off.
    async fn read_stream(
        &self,
        resp: reqwest::Response,
        tools: &[ToolDecl],
        quoted: &Quoted<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Attempt {
        let mut bytes = Watchdog::new(resp.bytes_stream(), self.watchdog);
        let mut decoder = Decoder::new(self.provider.framing());
        let provider = &*self.provider;
        let mut asm = self.assembler(on_event, tools, quoted);
        let mut watch = PartialWatch::default();
        let mut stop = std::pin::pin!(cancel.cancelled());
        // The content watchdog, re-armed lazily like the byte one.
        let mut last_content = tokio::time::Instant::now();
        let mut quiet = std::pin::pin!(tokio::time::sleep_until(after_period(
            last_content,
            self.watchdog
        )));
        loop {
            let chunk = tokio::select! {
                biased;
                _ = &mut stop => {
                    let (m, u) = asm.partial();
                    return Attempt::Cancelled(cancelled(m, u));
                }
                c = bytes.next() => c,
                () = &mut quiet => {
                    let deadline = after_period(last_content, self.watchdog);
                    if tokio::time::Instant::now() >= deadline {
                        return Attempt::Stalled;
                    }
                    quiet.as_mut().reset(deadline);
                    continue;
                }
            };
            let held = decoder.partial().len();
            let mut noting = Noting {
                asm: &mut asm,
                content: false,
            };
            let (fed, last) = match chunk {
                None => (
                    decoder
                        .finish(&mut |event, data| provider.parse_frame(event, data, &mut noting)),
                    true,
                ),
                Some(Ok(chunk)) => (
                    decoder.feed(&chunk, &mut |event, data| {
                        provider.parse_frame(event, data, &mut noting)
                    }),
                    false,
                ),
                Some(Err(ChunkError::Stalled)) => return Attempt::Stalled,
                Some(Err(ChunkError::Transport(e))) => {
                    let error = self.transport_broke(&e.without_url());
                    return Attempt::broke_off(asm, error);
                }
            };
            // A long frame still arriving (a tool call sent whole) is
            // content too; a short line is not yet anything.
            let growing = decoder.partial().len() > held.max(PARTIAL_WATCH);
            if noting.content || growing {
                last_content = tokio::time::Instant::now();
            }
            let fed = match fed {
                Ok(Flow::Continue) if !last => {
                    watch_partial(provider, self.spec.name, &decoder, &mut watch, &mut asm)
                        .map(|()| Flow::Continue)
                }
                other => other,
            };
            match fed {
                Ok(Flow::Continue) if !last => {}
                Ok(Flow::Done) => break,
                Ok(Flow::Continue) if asm.ended() => break,
                // The body ended cleanly but the answer did not: a server
                // cut it short, and a half-received tool call must not run.
                Ok(Flow::Continue) => {
                    let error = self.broke_off("it ended before the answer was complete");
                    return Attempt::broke_off(asm, error);
                }
                Err(error) => return Attempt::failed(asm, error),
            }
        }
        Attempt::done(asm)
    }

    /// `the <provider> stream broke off: <why>`.
    fn broke_off(&self, why: &str) -> EngineError {
        EngineError::Stream(format!("the {} stream broke off: {why}", self.spec.name))
    }

    /// A body that failed while arriving, in plain words where the cause is
    /// the usual one (the server closed the connection: it died, or a proxy
    /// cut it), else with the HTTP client's own chain of causes.
    fn transport_broke(&self, e: &reqwest::Error) -> EngineError {
        let chain = error_chain(e);
        if CLOSED.iter().any(|sign| chain.contains(sign)) {
            EngineError::Stream(format!(
                "the {} server closed the connection in the middle of the answer",
                self.spec.name
            ))
        } else {
            self.broke_off(&chain)
        }
    }

    /// A streaming request answered with one JSON body.
    async fn whole_instead(
        &self,
        resp: reqwest::Response,
        tools: &[ToolDecl],
        quoted: &Quoted<'_>,
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
        let mut asm = self.assembler(on_event, tools, quoted);
        match self.provider.parse_response(&body, &mut asm) {
            Ok(_) => Attempt::done(asm),
            Err(error) => Attempt::failed(asm, error),
        }
    }

    /// After a watchdog cut: one request without streaming, bounded by
    /// 5 × watchdog (docs/design.md#watchdog).
    async fn without_streaming(
        &self,
        messages: &[Message],
        tools: &[ToolDecl],
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<Generation, GenerateError> {
        let quoted = Quoted::of(messages);
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
            if status.is_redirection() {
                return Err(self.redirect_error(&resp));
            }
            if !status.is_success() {
                return Err(self.error_of(resp).await);
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
        let mut asm = self.assembler(on_event, tools, &quoted);
        if let Err(error) = self.provider.parse_response(&body, &mut asm) {
            let (m, _) = asm.partial();
            let error = match error {
                e @ (EngineError::Runaway { .. }
                | EngineError::Repeated { .. }
                | EngineError::ContextLength { .. }) => e,
                other => stalled(other.to_string()),
            };
            return Err(GenerateError {
                error,
                partial: Some(m),
            });
        }
        let cache_reported = asm.cache_reported();
        let (message, usage) = asm.finish();
        Ok(Generation {
            message,
            usage,
            cancelled: false,
            cache_reported,
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
        let seen = unseen_images(messages, self.sees_images());
        let messages: &[Message] = seen.as_deref().unwrap_or(messages);
        let req = inner.provider.request(messages, tools, true);
        // Calls the model was shown: written back, they are quotes.
        let quoted = Quoted::of(messages);
        let mut attempt = 0u32;
        loop {
            match inner
                .stream_once(&req, tools, &quoted, on_event, cancel)
                .await
            {
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
                    let wait = match wait {
                        Some(asked) if asked > inner.max_retry_wait => {
                            return Err(EngineError::WaitTooLong {
                                error: Box::new(error),
                                asked: whole_seconds(asked),
                                max: inner.max_retry_wait.as_secs(),
                            }
                            .into());
                        }
                        // A wait the server chose is said, so that a pause
                        // of a minute is not taken for a hang.
                        Some(asked) => {
                            on_event(StreamEvent::Notice(retry_notice(&error, asked)));
                            asked
                        }
                        None => backoff(attempt),
                    };
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
        let g = match self.generate(&transcript, &[], &mut ignore, cancel).await {
            Ok(g) => g,
            // A summary that loops is cut to what came before the loop and
            // one copy, like an answer: that is still a summary, and failing
            // here would leave an overflowing history uncured.
            Err(GenerateError {
                error: EngineError::Repeated { .. },
                partial: Some(message),
            }) => Generation {
                message,
                usage: None,
                cancelled: false,
                cache_reported: false,
            },
            Err(e) => return Err(e),
        };
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

/// For a model that does not see: the history with each image replaced by
/// the line saying so (after its message's text); `None` when nothing
/// changes, so a model that sees, or a history without images, costs no
/// copy.
pub(crate) fn unseen_images(messages: &[Message], sees: bool) -> Option<Vec<Message>> {
    let has = |m: &Message| matches!(m, Message::User { images, .. } | Message::Tool { images, .. } if !images.is_empty());
    if sees || !messages.iter().any(has) {
        return None;
    }
    Some(
        messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                if let Message::User {
                    content, images, ..
                }
                | Message::Tool {
                    content, images, ..
                } = &mut m
                {
                    for image in images.drain(..) {
                        if !content.is_empty() && !content.ends_with('\n') {
                            content.push('\n');
                        }
                        content.push_str(&image.unseen_line());
                    }
                }
                m
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ollama() -> Box<dyn Provider> {
        let spec = crate::providers::lookup("ollama").unwrap();
        (spec.build)(crate::providers::ProviderSettings {
            model: "m".into(),
            base_url: "http://127.0.0.1:1".into(),
            key: None,
            max_tokens: 100,
            context_window: 2048,
            thinking: mm_config::Thinking::Off,
            cache_control: true,
            cache_key: None,
            output_schema: None,
            constrained_calls: false,
            reasoning_back: false,
            slot: None,
        })
    }

    /// Feeds `body` in `piece`-byte chunks the way the stream loop does,
    /// watching the frame still arriving after each chunk. Returns the
    /// guard's error and the runaway call (name, arguments), if any.
    fn watch(body: &str, piece: usize) -> Option<(EngineError, String, String)> {
        let provider = ollama();
        let mut events = Vec::new();
        let mut sink = |e: StreamEvent| events.push(e);
        let mut asm = Assembler::new(&mut sink);
        let mut decoder = Decoder::new(Framing::Ndjson);
        let mut w = PartialWatch::default();
        for chunk in body.as_bytes().chunks(piece) {
            decoder
                .feed(chunk, &mut |ev, data| {
                    provider.parse_frame(ev, data, &mut asm)
                })
                .unwrap();
            if let Err(e) = watch_partial(&*provider, "ollama", &decoder, &mut w, &mut asm) {
                let (m, _) = asm.partial();
                let Message::Assistant { tool_calls, .. } = m else {
                    panic!()
                };
                let c = tool_calls.last().unwrap();
                return Some((e, c.name.clone(), c.arguments.clone()));
            }
        }
        None
    }

    const HEAD: &str = r#"{"model":"q","message":{"role":"assistant","content":"","tool_calls":["#;

    #[test]
    fn a_call_running_away_inside_a_frame_trips_at_once() {
        // A sane call first, then one that repeats, in the same frame.
        let args = format!("{{\"content\":\"{}", "xy12".repeat(2000));
        let body = format!(
            r#"{HEAD}{{"function":{{"name":"read_file","arguments":{{"path":"a"}}}}}},{{"function":{{"name":"write_file","arguments":{args}"#
        );
        let want = runaway::pattern_sentence(268, "xy12");
        for piece in [1, 7, 300, 4096, 100_000] {
            let (e, name, got) = watch(&body, piece).unwrap();
            assert_eq!(e, EngineError::Runaway { text: want.clone() }, "{piece}");
            assert_eq!(name, "write_file");
            assert_eq!(got, args.chars().take(268).collect::<String>());
        }
    }

    #[test]
    fn each_frame_is_watched_on_its_own() {
        // A long call that does not repeat, whole in one line, then a frame
        // whose call starts fresh: nothing carries over from the first.
        let text: String = (0..3000).map(|i| format!("{i},")).collect();
        let first = format!(
            r#"{HEAD}{{"function":{{"name":"write_file","arguments":{{"content":"{text}"}}}}}}]}},"done":false}}"#
        );
        let second = format!(
            r#"{HEAD}{{"function":{{"name":"bash","arguments":{{"command":"{}"#,
            "ab".repeat(100)
        );
        let body = format!("{first}\n{second}");
        for piece in [5, 333, 8192] {
            // 12 characters of prefix + 200 of pattern: under the window.
            assert_eq!(watch(&body, piece), None, "{piece}");
            let more = format!("{body}{}", "ab".repeat(30));
            let (e, name, args) = watch(&more, piece).unwrap();
            assert_eq!(name, "bash");
            let n = args.chars().count();
            assert_eq!(n, 12 + 256, "{piece}");
            assert_eq!(
                e,
                EngineError::Runaway {
                    text: runaway::pattern_sentence(n, "abab")
                }
            );
        }
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_445_412_470);
        let wait = |v: &str| retry_wait(v, now);
        assert_eq!(wait(" 7 "), Some(Duration::from_secs(7)));
        // 10 s after `now`, in each form HTTP allows.
        for date in [
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "Wednesday, 21-Oct-15 07:28:00 GMT",
            "Wed Oct 21 07:28:00 2015",
        ] {
            assert_eq!(wait(date), Some(Duration::from_secs(10)), "{date}");
        }
        assert_eq!(wait("Wed, 21 Oct 2015 07:27:00 GMT"), Some(Duration::ZERO));
        assert_eq!(wait("soon"), None);
        assert_eq!(wait("-1"), None);
        assert_eq!(whole_seconds(Duration::from_millis(1200)), 2);
        assert_eq!(whole_seconds(Duration::from_secs(3)), 3);
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
