//! From response bytes to frames: SSE events or NDJSON lines, and the
//! watchdog on the bytes underneath.
//!
//! The decoders are push-style and zero-copy where they can be: a chunk's
//! complete lines are handed on in place, only a line cut between chunks is
//! copied. (`eventsource-stream` was measured first: it parses character by
//! character and re-copies its buffer after every line, which held the
//! engine to ~0.75M tokens/s on a fast local stream; see benches/absorb.rs.)

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::error::EngineError;
use crate::wire::{Flow, Framing};

/// Why the byte stream stopped giving bytes.
#[derive(Debug)]
pub enum ChunkError<E> {
    /// The watchdog: nothing arrived for its whole period.
    Stalled,
    /// The transport failed (connection dropped mid-body...).
    Transport(E),
}

/// Wraps a byte stream: yields [`ChunkError::Stalled`] once `period`
/// passes without a chunk. The timer is re-armed lazily (only when it
/// fires), so a fast stream pays one clock read per chunk.
pub struct Watchdog<S> {
    inner: S,
    period: Duration,
    last: Instant,
    sleep: Pin<Box<Sleep>>,
}

impl<S> Watchdog<S> {
    pub fn new(inner: S, period: Duration) -> Self {
        let now = Instant::now();
        Watchdog {
            inner,
            period,
            last: now,
            sleep: Box::pin(tokio::time::sleep_until(later(now, period))),
        }
    }
}

/// `at + period`, saturating: a period too long for the clock (a huge
/// `watchdog`) means "about never", not a panic.
fn later(at: Instant, period: Duration) -> Instant {
    at.checked_add(period)
        .or_else(|| at.checked_add(Duration::from_secs(1 << 30)))
        .unwrap_or(at)
}

impl<S, B, E> Stream for Watchdog<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
{
    type Item = Result<B, ChunkError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(b))) => {
                this.last = Instant::now();
                Poll::Ready(Some(Ok(b)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(ChunkError::Transport(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => loop {
                match this.sleep.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) => {
                        let deadline = later(this.last, this.period);
                        if Instant::now() >= deadline {
                            return Poll::Ready(Some(Err(ChunkError::Stalled)));
                        }
                        this.sleep.as_mut().reset(deadline);
                    }
                }
            },
        }
    }
}

/// Receives each frame: `(event, data)`. For SSE `event` is the event
/// name (`message` when none was given); for NDJSON it is empty.
pub type OnFrame<'a> = dyn FnMut(&str, &str) -> Result<Flow, EngineError> + 'a;

/// Splits bytes into lines (LF, CRLF or a lone CR), copying only a line
/// that is cut between chunks.
#[derive(Debug, Default)]
struct Lines {
    partial: Vec<u8>,
    /// The last chunk ended in CR: a LF first in the next one belongs to it.
    skip_lf: bool,
    /// Lines ended so far: tells one partial line from the next.
    ended: u64,
}

impl Lines {
    fn feed(
        &mut self,
        mut chunk: &[u8],
        on_line: &mut dyn FnMut(&[u8]) -> Result<Flow, EngineError>,
    ) -> Result<Flow, EngineError> {
        // An empty chunk says nothing about the LF after a CR: keep waiting.
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let Some(i) = memchr::memchr2(b'\n', b'\r', chunk) else {
                self.partial.extend_from_slice(chunk);
                break;
            };
            let mut next = i + 1;
            if chunk[i] == b'\r' {
                match chunk.get(i + 1) {
                    Some(b'\n') => next = i + 2,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            self.ended += 1;
            let flow = if self.partial.is_empty() {
                on_line(&chunk[..i])?
            } else {
                self.partial.extend_from_slice(&chunk[..i]);
                let line = std::mem::take(&mut self.partial);
                let flow = on_line(&line)?;
                // Keep the allocation for the next cut line.
                self.partial = line;
                self.partial.clear();
                flow
            };
            if flow == Flow::Done {
                return Ok(Flow::Done);
            }
            chunk = &chunk[next..];
        }
        Ok(Flow::Continue)
    }

    /// The line received so far but not yet ended.
    fn partial(&self) -> &[u8] {
        &self.partial
    }

    /// A last line without a terminator.
    fn finish(
        &mut self,
        on_line: &mut dyn FnMut(&[u8]) -> Result<Flow, EngineError>,
    ) -> Result<Flow, EngineError> {
        if self.partial.is_empty() {
            return Ok(Flow::Continue);
        }
        let line = std::mem::take(&mut self.partial);
        on_line(&line)
    }
}

fn utf8(line: &[u8]) -> Result<&str, EngineError> {
    std::str::from_utf8(line)
        .map_err(|e| EngineError::Stream(format!("stream line is not UTF-8: {e}")))
}

/// A server-sent events decoder after the WHATWG rules: `data` lines
/// accumulate (joined by LF), `event` names the event, a blank line
/// dispatches, `:` lines are comments, a leading BOM is dropped.
#[derive(Debug, Default)]
pub struct SseDecoder {
    lines: Lines,
    event: String,
    data: String,
    has_data: bool,
    started: bool,
}

impl SseDecoder {
    fn line(&mut self, line: &[u8], on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            if !self.has_data {
                self.event.clear();
                return Ok(Flow::Continue);
            }
            self.has_data = false;
            let event = if self.event.is_empty() {
                "message"
            } else {
                &self.event
            };
            let flow = on(event, &self.data);
            self.event.clear();
            self.data.clear();
            return flow;
        }
        if line[0] == b':' {
            return Ok(Flow::Continue);
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(utf8(value)?);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(utf8(value)?);
            }
            _ => {} // id, retry and unknown fields do not matter here
        }
        Ok(Flow::Continue)
    }

    /// Feed one chunk; stops early when `on` says the stream is done.
    pub fn feed(&mut self, chunk: &[u8], on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        let mut lines = std::mem::take(&mut self.lines);
        let r = lines.feed(chunk, &mut |l| self.line(l, on));
        self.lines = lines;
        r
    }

    /// End of the body. An event without its closing blank line is still
    /// dispatched: some servers end the stream right after the last `data`.
    pub fn finish(&mut self, on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        let mut lines = std::mem::take(&mut self.lines);
        let r = lines.finish(&mut |l| self.line(l, on));
        self.lines = lines;
        if r? == Flow::Done {
            return Ok(Flow::Done);
        }
        self.line(b"", on)
    }
}

/// One JSON object per line; blank lines are skipped.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    lines: Lines,
}

impl NdjsonDecoder {
    fn line(line: &[u8], on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(Flow::Continue);
        }
        on("", utf8(line)?)
    }

    pub fn feed(&mut self, chunk: &[u8], on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        self.lines.feed(chunk, &mut |l| Self::line(l, on))
    }

    pub fn finish(&mut self, on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        self.lines.finish(&mut |l| Self::line(l, on))
    }
}

/// The decoder for a provider's framing.
#[derive(Debug)]
pub enum Decoder {
    Sse(SseDecoder),
    Ndjson(NdjsonDecoder),
}

impl Decoder {
    pub fn new(framing: Framing) -> Self {
        match framing {
            Framing::Sse => Decoder::Sse(SseDecoder::default()),
            Framing::Ndjson => Decoder::Ndjson(NdjsonDecoder::default()),
        }
    }

    pub fn feed(&mut self, chunk: &[u8], on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        match self {
            Decoder::Sse(d) => d.feed(chunk, on),
            Decoder::Ndjson(d) => d.feed(chunk, on),
        }
    }

    pub fn finish(&mut self, on: &mut OnFrame<'_>) -> Result<Flow, EngineError> {
        match self {
            Decoder::Sse(d) => d.finish(on),
            Decoder::Ndjson(d) => d.finish(on),
        }
    }

    /// The bytes of a line still arriving (a whole tool call in one frame
    /// can be long; the runaway guard watches it).
    pub fn partial(&self) -> &[u8] {
        match self {
            Decoder::Sse(d) => d.lines.partial(),
            Decoder::Ndjson(d) => d.lines.partial(),
        }
    }

    /// How many lines have ended: the partial line is another one
    /// whenever this changed.
    pub fn lines(&self) -> u64 {
        match self {
            Decoder::Sse(d) => d.lines.ended,
            Decoder::Ndjson(d) => d.lines.ended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn decode(framing: Framing, parts: &[&[u8]]) -> Vec<(String, String)> {
        let mut d = Decoder::new(framing);
        let mut out = Vec::new();
        let mut on = |e: &str, data: &str| {
            out.push((e.to_owned(), data.to_owned()));
            Ok(Flow::Continue)
        };
        for p in parts {
            d.feed(p, &mut on).unwrap();
        }
        d.finish(&mut on).unwrap();
        out
    }

    fn f(e: &str, d: &str) -> (String, String) {
        (e.to_owned(), d.to_owned())
    }

    #[test]
    fn sse_events_split_at_every_byte() {
        let body = "\u{feff}event: message_start\ndata: {\"a\":1}\n\n: comment\ndata: é→x\r\n\r\ndata:a\rdata: b\r\rid: 7\nretry: 5\ndata: [DONE]\n\n";
        let want = vec![
            f("message_start", "{\"a\":1}"),
            f("message", "é→x"),
            f("message", "a\nb"),
            f("message", "[DONE]"),
        ];
        let bytes = body.as_bytes();
        assert_eq!(decode(Framing::Sse, &[bytes]), want);
        for i in 0..=bytes.len() {
            assert_eq!(
                decode(Framing::Sse, &[&bytes[..i], &bytes[i..]]),
                want,
                "split at {i}"
            );
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode(Framing::Sse, &singles), want);
    }

    #[test]
    fn sse_event_name_resets_and_last_event_needs_no_blank_line() {
        let body = b"event: a\n\ndata: 1\n\ndata: 2";
        assert_eq!(
            decode(Framing::Sse, &[body]),
            vec![f("message", "1"), f("message", "2")]
        );
    }

    #[test]
    fn sse_stops_when_done() {
        let mut d = SseDecoder::default();
        let mut seen = 0;
        let flow = d
            .feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", &mut |_, data| {
                seen += 1;
                Ok(if data == "2" {
                    Flow::Done
                } else {
                    Flow::Continue
                })
            })
            .unwrap();
        assert_eq!(flow, Flow::Done);
        assert_eq!(seen, 2);
    }

    #[test]
    fn ndjson_lines_split_at_every_byte() {
        let body = "{\"a\":\"é\"}\n\n{\"b\":2}\r\n{\"c\":3}";
        let want = vec![
            f("", "{\"a\":\"é\"}"),
            f("", "{\"b\":2}"),
            f("", "{\"c\":3}"),
        ];
        let bytes = body.as_bytes();
        for i in 0..=bytes.len() {
            assert_eq!(
                decode(Framing::Ndjson, &[&bytes[..i], &bytes[i..]]),
                want,
                "split at {i}"
            );
        }
    }

    #[test]
    fn bad_utf8_is_a_stream_error() {
        let mut d = NdjsonDecoder::default();
        let r = d.feed(b"{\"a\":\"\xff\"}\n", &mut |_, _| Ok(Flow::Continue));
        assert!(
            matches!(r, Err(EngineError::Stream(m)) if m.starts_with("stream line is not UTF-8"))
        );
    }

    #[tokio::test]
    async fn a_period_too_long_for_the_clock_never_panics() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, Infallible>>();
        let mut w = Watchdog::new(rx, Duration::from_secs(u64::MAX));
        tx.unbounded_send(Ok(b"x".to_vec())).unwrap();
        assert!(matches!(w.next().await, Some(Ok(_))));
        // Silence: the timer is armed again, far away.
        let r = tokio::time::timeout(Duration::from_millis(50), w.next()).await;
        assert!(r.is_err(), "a stall after 50 ms of a never-ending period");
    }

    #[tokio::test]
    async fn watchdog_fires_after_silence_and_not_before() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Vec<u8>, Infallible>>();
        let mut w = Watchdog::new(rx, Duration::from_millis(300));
        for _ in 0..4 {
            // Chunks every 100 ms keep it quiet.
            tokio::time::sleep(Duration::from_millis(100)).await;
            tx.unbounded_send(Ok(b"x".to_vec())).unwrap();
            assert!(matches!(w.next().await, Some(Ok(_))));
        }
        let started = std::time::Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap();
        assert!(matches!(r, Some(Err(ChunkError::Stalled))));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(290), "{waited:?}");
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        drop(tx);
    }
}
