//! What the four wire formats share: the plan of a response body ([`Out`]),
//! the lazy player that turns a plan into an HTTP body, tool-call argument
//! text that may repeat without being built ([`Args`]), and the script folded
//! into blocks for non-streaming answers ([`Collected`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::script::Step;

/// One instruction of a body plan. Plans stay small: a runaway is one
/// `Repeat`, never the repeated text itself.
#[derive(Debug, Clone)]
pub(crate) enum Out {
    Bytes(Bytes),
    /// These bytes, this many times.
    Repeat(Bytes, usize),
    Sleep(Duration),
    /// Cut the connection (the client sees an error, not a clean end).
    Abort,
}

/// What every renderer needs to know about the request it answers.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub model: String,
    /// Number of this reply, for ids (`chatcmpl-mock-3`…).
    pub seq: u64,
    /// Unix seconds.
    pub created: u64,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
}

/// A body sent whole: wait `delay` first (the script's stalls), then play
/// `outs`.
pub(crate) struct Whole {
    pub delay: Duration,
    pub outs: Vec<Out>,
}

pub(crate) fn bytes(text: impl Into<String>) -> Out {
    Out::Bytes(Bytes::from(text.into()))
}

/// `data: <json>` and the blank line that ends an SSE event.
pub(crate) fn sse(value: &Value) -> Out {
    bytes(format!("data: {value}\n\n"))
}

/// A named SSE event (Anthropic).
pub(crate) fn sse_event(name: &str, value: &Value) -> Out {
    bytes(format!("event: {name}\ndata: {value}\n\n"))
}

/// One NDJSON line (Ollama).
pub(crate) fn ndjson(value: &Value) -> Out {
    bytes(format!("{value}\n"))
}

/// Leading stalls are played before anything else, so that a stall as the
/// first step delays the first byte of the body (first-token watchdog).
pub(crate) fn leading_stalls(steps: &[Step]) -> (Vec<Out>, &[Step]) {
    let n = steps
        .iter()
        .take_while(|s| matches!(s, Step::Stall { .. }))
        .count();
    let outs = steps[..n]
        .iter()
        .filter_map(|s| match s {
            Step::Stall { millis } => Some(Out::Sleep(Duration::from_millis(*millis))),
            _ => None,
        })
        .collect();
    (outs, &steps[n..])
}

/// The last `Usage` step before any `Drop`.
pub(crate) fn usage(steps: &[Step]) -> Option<(u64, u64)> {
    steps
        .iter()
        .take_while(|s| !matches!(s, Step::Drop))
        .filter_map(|s| match s {
            Step::Usage { prompt, completion } => Some((*prompt, *completion)),
            _ => None,
        })
        .last()
}

/// The last `Cached` step before any `Drop`.
pub(crate) fn cached(steps: &[Step]) -> Option<u64> {
    steps
        .iter()
        .take_while(|s| !matches!(s, Step::Drop))
        .filter_map(|s| match s {
            Step::Cached { tokens } => Some(*tokens),
            _ => None,
        })
        .last()
}

/// Whether the reply calls a tool (it decides the finish reason).
pub(crate) fn has_tools(steps: &[Step]) -> bool {
    steps.iter().any(|s| {
        matches!(
            s,
            Step::ToolStart { .. }
                | Step::ToolArgs { .. }
                | Step::ToolCall { .. }
                | Step::Runaway { .. }
        )
    })
}

/// JSON string content (no quotes) of `text`.
pub(crate) fn escape(text: &str) -> String {
    let quoted = Value::String(text.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

/// A piece of argument text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seg {
    Lit(String),
    Repeat { text: String, times: usize },
}

/// The argument text of one tool call, kept as segments so that a runaway
/// is never materialised.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Args(pub Vec<Seg>);

impl Args {
    pub fn push(&mut self, text: &str) {
        if let Some(Seg::Lit(last)) = self.0.last_mut() {
            last.push_str(text);
        } else if !text.is_empty() {
            self.0.push(Seg::Lit(text.to_owned()));
        }
    }

    pub fn repeat(&mut self, text: &str, times: usize) {
        self.0.push(Seg::Repeat {
            text: text.to_owned(),
            times,
        });
    }

    /// The whole text, unless it holds a runaway.
    fn plain(&self) -> Option<String> {
        let mut out = String::new();
        for seg in &self.0 {
            match seg {
                Seg::Lit(s) => out.push_str(s),
                Seg::Repeat { .. } => return None,
            }
        }
        Some(out)
    }
}

/// How spliced argument text is written into the JSON around it.
#[derive(Debug, Clone, Copy)]
enum Embed {
    /// Verbatim, as a JSON value (argument objects: Ollama, Anthropic, Gemini).
    Raw,
    /// As the content of a JSON string (OpenAI `arguments`).
    Escaped,
}

/// Builds JSON in which runaway arguments are placeholders, then serialises
/// it into a plan where each placeholder becomes lazy segments.
#[derive(Debug, Default)]
pub(crate) struct Splicer {
    subs: Vec<(String, Args, Embed)>,
}

impl Splicer {
    fn placeholder(&mut self, args: &Args, embed: Embed) -> Value {
        let marker = format!("\u{0}mm-mock-args-{}\u{0}", self.subs.len());
        let serialized = Value::String(marker.clone()).to_string();
        self.subs.push((serialized, args.clone(), embed));
        Value::String(marker)
    }

    /// Arguments as a JSON object, the way Ollama, Anthropic and Gemini send
    /// them. Text that is not JSON is sent as a JSON string (these servers
    /// never send broken arguments; the mock keeps the text visible).
    pub fn object(&mut self, args: &Args) -> Value {
        match args.plain() {
            Some(text) if text.trim().is_empty() => Value::Object(Default::default()),
            Some(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            None => self.placeholder(args, Embed::Raw),
        }
    }

    /// Arguments as a JSON string, the way OpenAI sends them.
    pub fn string(&mut self, args: &Args) -> Value {
        match args.plain() {
            Some(text) => Value::String(text),
            None => self.placeholder(args, Embed::Escaped),
        }
    }

    /// `prefix`, the JSON of `value`, `suffix`, with placeholders expanded.
    pub fn render(self, value: &Value, prefix: &str, suffix: &str) -> Vec<Out> {
        let text = format!("{prefix}{value}{suffix}");
        let mut hits: Vec<(usize, usize)> = self
            .subs
            .iter()
            .enumerate()
            .filter_map(|(i, (marker, _, _))| text.find(marker.as_str()).map(|pos| (pos, i)))
            .collect();
        hits.sort_unstable();
        let mut outs = Vec::new();
        let mut at = 0;
        for (pos, i) in hits {
            let (marker, args, embed) = &self.subs[i];
            outs.push(bytes(&text[at..pos]));
            if let Embed::Escaped = embed {
                outs.push(bytes("\""));
            }
            for seg in &args.0 {
                let piece = |s: &str| match embed {
                    Embed::Raw => s.to_owned(),
                    Embed::Escaped => escape(s),
                };
                match seg {
                    Seg::Lit(s) => outs.push(bytes(piece(s))),
                    Seg::Repeat { text, times } => {
                        outs.push(Out::Repeat(Bytes::from(piece(text)), *times));
                    }
                }
            }
            if let Embed::Escaped = embed {
                outs.push(bytes("\""));
            }
            at = pos + marker.len();
        }
        outs.push(bytes(&text[at..]));
        outs.retain(|o| !matches!(o, Out::Bytes(b) if b.is_empty()));
        outs
    }
}

/// One block of a non-streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Text(String),
    Reasoning {
        text: String,
        signature: Option<String>,
    },
    Tool {
        index: usize,
        id: Option<String>,
        name: String,
        args: Args,
    },
}

/// A script folded for an answer sent whole: consecutive text (and
/// reasoning) merged, tool calls assembled by index.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub blocks: Vec<Block>,
    pub usage: Option<(u64, u64)>,
    /// Sum of the stalls: the answer waits this long.
    pub delay: Duration,
    /// A `Drop` was scripted: the body is cut halfway.
    pub dropped: bool,
    /// Raw lines: they replace the body (malformed JSON).
    pub raw: Vec<String>,
}

impl Collected {
    pub fn new(steps: &[Step]) -> Collected {
        let mut c = Collected {
            usage: usage(steps),
            ..Collected::default()
        };
        for step in steps {
            match step {
                Step::Text { text } => match c.blocks.last_mut() {
                    Some(Block::Text(t)) => t.push_str(text),
                    _ => c.blocks.push(Block::Text(text.clone())),
                },
                Step::Reasoning { text, signature } => match c.blocks.last_mut() {
                    Some(Block::Reasoning {
                        text: t,
                        signature: s,
                    }) => {
                        t.push_str(text);
                        if signature.is_some() {
                            s.clone_from(signature);
                        }
                    }
                    _ => c.blocks.push(Block::Reasoning {
                        text: text.clone(),
                        signature: signature.clone(),
                    }),
                },
                Step::ToolStart { index, id, name } => c.blocks.push(Block::Tool {
                    index: *index,
                    id: id.clone(),
                    name: name.clone(),
                    args: Args::default(),
                }),
                Step::ToolCall {
                    index,
                    id,
                    name,
                    arguments,
                } => {
                    let mut args = Args::default();
                    args.push(arguments);
                    c.blocks.push(Block::Tool {
                        index: *index,
                        id: id.clone(),
                        name: name.clone(),
                        args,
                    });
                }
                Step::ToolArgs { index, fragment } => {
                    if let Some(args) = c.tool(*index) {
                        args.push(fragment);
                    }
                }
                Step::Runaway {
                    index,
                    fragment,
                    times,
                } => {
                    if let Some(args) = c.tool(*index) {
                        args.repeat(fragment, *times);
                    }
                }
                Step::Usage { .. } | Step::Cached { .. } => {}
                Step::Stall { millis } => c.delay += Duration::from_millis(*millis),
                Step::Drop => {
                    c.dropped = true;
                    break;
                }
                Step::Raw { line } => c.raw.push(line.clone()),
            }
        }
        c
    }

    /// The arguments of the latest tool call with this index (a nameless
    /// call is started when the script sends arguments first).
    fn tool(&mut self, index: usize) -> Option<&mut Args> {
        let known = self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Tool { index: i, .. } if *i == index));
        if !known {
            self.blocks.push(Block::Tool {
                index,
                id: None,
                name: String::new(),
                args: Args::default(),
            });
        }
        self.blocks.iter_mut().rev().find_map(|b| match b {
            Block::Tool { index: i, args, .. } if *i == index => Some(args),
            _ => None,
        })
    }

    /// All answer text joined (formats with one `content` string).
    pub fn text(&self) -> Option<String> {
        self.join(|b| match b {
            Block::Text(t) => Some(t),
            _ => None,
        })
    }

    /// All reasoning joined.
    pub fn reasoning(&self) -> Option<String> {
        self.join(|b| match b {
            Block::Reasoning { text, .. } => Some(text),
            _ => None,
        })
    }

    fn join<'a>(&'a self, pick: impl Fn(&'a Block) -> Option<&'a String>) -> Option<String> {
        let parts: Vec<&String> = self.blocks.iter().filter_map(pick).collect();
        (!parts.is_empty()).then(|| parts.into_iter().map(String::as_str).collect())
    }

    pub fn tools(&self) -> impl Iterator<Item = (&Option<String>, &String, &Args)> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Tool { id, name, args, .. } => Some((id, name, args)),
            _ => None,
        })
    }

    /// The plan for `value` (built with `splicer`), honouring raw lines and
    /// drops.
    pub fn finish(&self, value: &Value, splicer: Splicer) -> Whole {
        let outs = if !self.raw.is_empty() {
            vec![bytes(self.raw.join("\n") + "\n")]
        } else {
            splicer.render(value, "", "")
        };
        let outs = if self.dropped {
            let mut cut = Vec::new();
            if let Some(Out::Bytes(first)) = outs.first() {
                cut.push(Out::Bytes(first.slice(..first.len() / 2)));
            }
            cut.push(Out::Abort);
            cut
        } else {
            outs
        };
        Whole {
            delay: self.delay,
            outs,
        }
    }
}

/// Tool calls of a format that sends them whole (Ollama, Gemini): fragments
/// are gathered here and the calls leave together when the model moves on.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub calls: Vec<(usize, Option<String>, String, Args)>,
}

impl Pending {
    /// Takes a tool step; false when the step is not a tool step.
    pub fn take(&mut self, step: &Step) -> bool {
        match step {
            Step::ToolStart { index, id, name } => {
                self.calls
                    .push((*index, id.clone(), name.clone(), Args::default()));
            }
            Step::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                let mut args = Args::default();
                args.push(arguments);
                self.calls.push((*index, id.clone(), name.clone(), args));
            }
            Step::ToolArgs { index, fragment } => self.args(*index).push(fragment),
            Step::Runaway {
                index,
                fragment,
                times,
            } => self.args(*index).repeat(fragment, *times),
            _ => return false,
        }
        true
    }

    fn args(&mut self, index: usize) -> &mut Args {
        let pos = match self.calls.iter().rposition(|c| c.0 == index) {
            Some(pos) => pos,
            None => {
                self.calls
                    .push((index, None, String::new(), Args::default()));
                self.calls.len() - 1
            }
        };
        &mut self.calls[pos].3
    }
}

/// Counts bodies still being written, so tests can see a client hang up.
#[derive(Debug)]
pub(crate) struct OpenGuard(pub Arc<AtomicUsize>);

impl OpenGuard {
    pub fn new(count: Arc<AtomicUsize>) -> OpenGuard {
        count.fetch_add(1, Ordering::SeqCst);
        OpenGuard(count)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Bytes per write when playing a `Repeat`: big enough to be quick, small
/// enough that a runaway never sits in memory.
const BATCH: usize = 16 * 1024;

struct Player {
    outs: VecDeque<Out>,
    cancel: CancellationToken,
    done: bool,
    _open: OpenGuard,
}

fn aborted() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "mm-mock: connection dropped",
    )
}

/// The HTTP body that plays `outs`. It is pulled by the connection, so a
/// client that stops reading (or hangs up) stops the writing; a stopped
/// server cuts it.
pub(crate) fn body(outs: Vec<Out>, cancel: CancellationToken, open: OpenGuard) -> Body {
    let player = Player {
        outs: outs.into(),
        cancel,
        done: false,
        _open: open,
    };
    let stream = futures::stream::unfold(player, |mut p| async move {
        loop {
            if p.done {
                return None;
            }
            if p.cancel.is_cancelled() {
                p.done = true;
                return Some((Err(aborted()), p));
            }
            let next = p.outs.pop_front()?;
            match next {
                Out::Bytes(b) => return Some((Ok(b), p)),
                Out::Repeat(b, times) => {
                    if times == 0 || b.is_empty() {
                        continue;
                    }
                    let per = (BATCH / b.len()).max(1).min(times);
                    if times > per {
                        p.outs.push_front(Out::Repeat(b.clone(), times - per));
                    }
                    let mut batch = Vec::with_capacity(b.len() * per);
                    for _ in 0..per {
                        batch.extend_from_slice(&b);
                    }
                    return Some((Ok(Bytes::from(batch)), p));
                }
                Out::Sleep(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => {}
                        _ = p.cancel.cancelled() => {}
                    }
                }
                Out::Abort => {
                    // hyper flushes its buffer only when the body is pending;
                    // pause so what was written (headers included) leaves
                    // before the cut.
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    p.done = true;
                    return Some((Err(aborted()), p));
                }
            }
        }
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flatten(outs: &[Out]) -> String {
        let mut s = String::new();
        for o in outs {
            match o {
                Out::Bytes(b) => s.push_str(std::str::from_utf8(b).unwrap()),
                Out::Repeat(b, n) => s.push_str(&std::str::from_utf8(b).unwrap().repeat(*n)),
                _ => s.push('|'),
            }
        }
        s
    }

    #[test]
    fn splicer_expands_runaway_in_a_string_escaped() {
        let mut args = Args::default();
        args.push("{\"a\":\"");
        args.repeat("x\"", 3);
        let mut sp = Splicer::default();
        let v = json!({"arguments": sp.string(&args)});
        let outs = sp.render(&v, "data: ", "\n");
        assert!(outs.iter().any(|o| matches!(o, Out::Repeat(_, 3))));
        let text = flatten(&outs);
        let parsed: Value =
            serde_json::from_str(text.trim_start_matches("data: ").trim_end()).unwrap();
        assert_eq!(parsed["arguments"], "{\"a\":\"x\"x\"x\"");
    }

    #[test]
    fn splicer_embeds_runaway_raw_in_objects() {
        let mut args = Args::default();
        args.push("{\"a\":\"");
        args.repeat("ab", 2);
        args.push("\"}");
        let mut sp = Splicer::default();
        let v = json!({"f": {"arguments": sp.object(&args)}});
        let text = flatten(&sp.render(&v, "", ""));
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["f"]["arguments"]["a"], "abab");
    }

    #[test]
    fn plain_args_become_objects_or_strings() {
        let mut sp = Splicer::default();
        let mut good = Args::default();
        good.push("{\"x\":1}");
        assert_eq!(sp.object(&good), json!({"x": 1}));
        let mut bad = Args::default();
        bad.push("{\"x\":");
        assert_eq!(sp.object(&bad), json!("{\"x\":"));
        assert_eq!(sp.object(&Args::default()), json!({}));
    }

    #[test]
    fn collected_merges_text_and_assembles_tools() {
        let steps = vec![
            Step::text("a"),
            Step::text("b"),
            Step::tool_start(0, "c0", "bash"),
            Step::tool_start(1, "c1", "read"),
            Step::tool_args(1, "{\"p\""),
            Step::tool_args(0, "{}"),
            Step::tool_args(1, ":1}"),
            Step::stall(5),
            Step::Usage {
                prompt: 1,
                completion: 2,
            },
        ];
        let c = Collected::new(&steps);
        assert_eq!(c.text().as_deref(), Some("ab"));
        let tools: Vec<_> = c.tools().map(|(_, n, a)| (n.clone(), a.plain())).collect();
        assert_eq!(
            tools,
            vec![
                ("bash".to_owned(), Some("{}".to_owned())),
                ("read".to_owned(), Some("{\"p\":1}".to_owned()))
            ]
        );
        assert_eq!(c.delay, Duration::from_millis(5));
        assert_eq!(c.usage, Some((1, 2)));
    }
}
