//! Tool calls that models write into their answer as text.
//!
//! Small local models often put a call into the answer instead of the
//! API's tool-call field (the server's template parser missed it). This
//! recogniser runs on the answer text after the `<think>` splitter and sets
//! apart each region that could be a call, in any of the written forms of
//! [`forms`]: `<tool_call>…`, `<function=…>…`, `<|python_tag|>…`,
//! `[TOOL_CALLS]…`, a bare JSON object that is the whole answer, and a
//! Markdown code fence holding exactly one of these. A region that names a
//! declared tool with arguments that fit its schema becomes a call; every
//! other region is released as the text it was, untouched.
//!
//! A region is a call only where a model puts one: at the start of a line,
//! outside inline code, blockquotes and code blocks ([`lines`]), followed
//! by nothing but whitespace or further calls to the end of the answer, and
//! not a copy of a call the session's tool results or user messages hold
//! ([`quoted`]). Markup anywhere else is the model quoting it: the whole
//! region stays text, shown as written.
//!
//! Streaming stays live: text passes at once unless what arrived could
//! still be the start of a call (at most an opener's length is held back,
//! plus a fence's first line), and is released as soon as it cannot. Only
//! a region that has begun is held to its end, and a call with what
//! follows it until the answer ends or text shows it was quoted. The
//! runaway guard watches held regions as it watches native call arguments.
//!
//! Pure and chunking-independent: the same text cut anywhere gives the same
//! text and calls (the fuzz target checks it).

mod forms;
mod json;
mod lines;
mod quoted;
mod schema;

use crate::runaway;
use crate::types::ToolDecl;
pub use forms::Recovered;
use forms::{
    ARGS, CALL_ID, END_TOKENS, FENCE, FUNCTION, FUNCTION_END, MAX_NAME, PYTHON_TAG, TOOL_CALL,
    TOOL_CALL_END, TOOL_CALLS, name_byte,
};
use json::{Extent, Seen};
use lines::Lines;
pub use quoted::Quoted;

/// Leading whitespace of an answer held at most (a bare JSON object may
/// still follow it).
const MAX_LEADING_WS: usize = 4096;
/// Longest fence info string (`json`, `xml`, `tool_call`…).
const MAX_FENCE_INFO: usize = 32;
/// First keys of a JSON object that may be a bare call.
const CALL_KEYS: [&str; 4] = ["name", "type", "arguments", "parameters"];

/// What the recogniser gives back, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out<'a> {
    /// Answer text, to show and keep.
    Text(&'a str),
    /// A call recovered from the text (its markup is gone from the answer).
    Call(Recovered),
}

/// The runaway guard tripped inside a held region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runaway {
    /// The guard's sentence (as for native calls).
    pub sentence: String,
    /// The declared tool the region names, when it names one already.
    pub name: Option<String>,
}

/// The streaming recogniser of one answer.
#[derive(Debug)]
pub struct Recogniser<'t> {
    tools: &'t [ToolDecl],
    /// Calls a copy of which is no call.
    quoted: Option<&'t Quoted<'t>>,
    /// Text not decided yet: a possible opener, or the region so far.
    held: String,
    /// Boxed: the guard it carries is large, and the recogniser moves.
    region: Option<Box<Region>>,
    /// Nothing but whitespace released and no call recovered yet.
    at_start: bool,
    /// Where the released text stands (line start, quote, code block).
    lines: Lines,
    /// Calls recovered but not given out: they are calls only if nothing
    /// but whitespace and further calls follows them.
    pending: Vec<Recovered>,
    /// The text of the pending calls and the whitespace after them, as
    /// written: released as text if other text follows.
    pending_text: String,
    /// The last pending call was a fence, which is a call only when it
    /// ends the answer.
    pending_fence: bool,
    /// Markdown fences are looked into (not inside a fence itself).
    fences: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ToolCall,
    Function,
    PythonTag,
    Mistral,
    Bare,
    Fence,
}

const TAGS: [(&str, Kind); 4] = [
    (TOOL_CALL, Kind::ToolCall),
    (FUNCTION, Kind::Function),
    (PYTHON_TAG, Kind::PythonTag),
    (TOOL_CALLS, Kind::Mistral),
];

#[derive(Debug, Clone)]
enum Phase {
    /// `<tool_call>`: whitespace, then `{`, `<` or a fence.
    ToolCallLead,
    /// Everything up to this closing tag.
    Until(&'static str),
    /// `<function=`: the name, up to `>`.
    FunctionName {
        len: usize,
    },
    /// Whitespace, then a JSON object.
    JsonLead,
    Json(Extent),
    /// After a python-tag object: `;` and another, an end token, or the end.
    AfterPython,
    /// After a bare object: only end tokens and whitespace, to the end.
    AfterBare,
    /// `[TOOL_CALLS]`: whitespace, then `[` (a list) or a name.
    MistralLead,
    MistralName {
        len: usize,
    },
    /// `[ARGS]`, or `[CALL_ID]` and an id first (unless `id_seen`).
    MistralMarker {
        id_seen: bool,
    },
    MistralId {
        len: usize,
    },
    /// A fence's info string and the end of its line.
    FenceInfo {
        len: usize,
    },
    /// Whitespace, then an opener (or, for a whole answer, `{`).
    FenceLead,
    /// The first key of the object at `at` decides whether it may be a call.
    FirstKey {
        at: usize,
    },
    /// Only whitespace until the end of the answer.
    AwaitEnd,
}

#[derive(Debug, Clone)]
struct Region {
    kind: Kind,
    /// Bytes of `held` looked at so far.
    pos: usize,
    phase: Phase,
    /// It may be the whole answer (a bare object is a call only then).
    whole: bool,
    /// It stands where a model puts a call; otherwise it is quoted markup,
    /// set apart only so that all of it stays text.
    placed: bool,
    /// A fence around a bare object.
    bare_inner: bool,
    /// Where a bare object (or the fence around one) ended: it is a call
    /// only if nothing but whitespace follows, so it waits for the end of
    /// the answer, but it is looked at once at once.
    complete: Option<usize>,
    /// The complete region parsed as a call.
    checked: bool,
    guard: runaway::Scanner,
    /// Bytes of `held` the guard has seen.
    guarded: usize,
}

/// What a region's next bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Undecided: more text is needed.
    Wait,
    /// The region is `held[..n]`: parse it.
    End(usize),
    /// Not a call: `held[..n]` is text, and scanning goes on at `n`.
    Release(usize),
}

/// How `text` (at least its first byte) relates to a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    /// `text` starts with it.
    Full,
    /// `text` is a proper prefix of it.
    Partial,
    No,
}

fn prefix(text: &[u8], lit: &str) -> Prefix {
    let lit = lit.as_bytes();
    if text.starts_with(lit) {
        Prefix::Full
    } else if lit.starts_with(text) {
        Prefix::Partial
    } else {
        Prefix::No
    }
}

fn ws_len(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| b.is_ascii_whitespace()).count()
}

fn floor_boundary(s: &str, mut at: usize) -> usize {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl Region {
    fn new(kind: Kind, body: usize, whole: bool, placed: bool) -> Region {
        let phase = match kind {
            Kind::ToolCall => Phase::ToolCallLead,
            Kind::Function => Phase::FunctionName { len: 0 },
            Kind::PythonTag => Phase::JsonLead,
            Kind::Mistral => Phase::MistralLead,
            Kind::Fence => Phase::FenceInfo { len: 0 },
            Kind::Bare => Phase::FirstKey { at: body },
        };
        Region {
            kind,
            pos: body,
            phase,
            whole,
            placed,
            bare_inner: false,
            complete: None,
            checked: false,
            guard: runaway::Scanner::new(),
            guarded: body,
        }
    }

    /// Looks at `held` from `pos` on.
    fn advance(&mut self, held: &str) -> Verdict {
        let bytes = held.as_bytes();
        loop {
            let rest = &bytes[self.pos..];
            match &mut self.phase {
                Phase::ToolCallLead => {
                    let ws = ws_len(rest);
                    self.pos += ws;
                    match rest.get(ws) {
                        None => return Verdict::Wait,
                        Some(b'{' | b'<' | b'`') => self.phase = Phase::Until(TOOL_CALL_END),
                        Some(_) => return Verdict::Release(self.pos),
                    }
                }
                Phase::Until(tag) => {
                    let tag = *tag;
                    match memchr::memmem::find(rest, tag.as_bytes()) {
                        Some(at) => {
                            let end = self.pos + at + tag.len();
                            if self.kind == Kind::Fence && self.bare_inner {
                                self.pos = end;
                                self.complete = Some(end);
                                self.phase = Phase::AwaitEnd;
                                continue;
                            }
                            self.pos = end;
                            return Verdict::End(end);
                        }
                        None => {
                            let safe = bytes.len().saturating_sub(tag.len() - 1).max(self.pos);
                            self.pos = floor_boundary(held, safe).max(self.pos);
                            return Verdict::Wait;
                        }
                    }
                }
                Phase::FunctionName { len } => {
                    let n = rest.iter().take_while(|b| name_byte(**b)).count();
                    *len += n;
                    self.pos += n;
                    if *len > MAX_NAME {
                        return Verdict::Release(self.pos);
                    }
                    match bytes.get(self.pos) {
                        None => return Verdict::Wait,
                        Some(b'>') if *len > 0 => {
                            self.pos += 1;
                            self.phase = Phase::Until(FUNCTION_END);
                        }
                        Some(_) => return Verdict::Release(self.pos),
                    }
                }
                Phase::JsonLead => {
                    let ws = ws_len(rest);
                    self.pos += ws;
                    match rest.get(ws) {
                        None => return Verdict::Wait,
                        Some(b'{') => self.phase = Phase::Json(Extent::default()),
                        Some(_) => return Verdict::Release(self.pos),
                    }
                }
                Phase::Json(extent) => match extent.feed(rest) {
                    Seen::More => {
                        self.pos = bytes.len();
                        return Verdict::Wait;
                    }
                    Seen::Broken(n) => return Verdict::Release(self.pos + n),
                    Seen::Closed(n) => {
                        self.pos += n;
                        match self.kind {
                            Kind::PythonTag => self.phase = Phase::AfterPython,
                            Kind::Bare => {
                                self.complete = Some(self.pos);
                                self.phase = Phase::AfterBare;
                            }
                            _ => return Verdict::End(self.pos),
                        }
                    }
                },
                Phase::AfterPython => {
                    let ws = ws_len(rest);
                    let at = self.pos + ws;
                    match bytes.get(at) {
                        None => return Verdict::Wait,
                        Some(b';') => {
                            self.pos = at + 1;
                            self.phase = Phase::JsonLead;
                        }
                        Some(b'<') => match end_token(&bytes[at..]) {
                            Prefix::Full => return Verdict::End(at + END_TOKENS[0].len()),
                            Prefix::Partial => return Verdict::Wait,
                            Prefix::No => return Verdict::End(self.pos),
                        },
                        Some(_) => return Verdict::End(self.pos),
                    }
                }
                Phase::AfterBare => {
                    let ws = ws_len(rest);
                    let at = self.pos + ws;
                    match bytes.get(at) {
                        None => return Verdict::Wait,
                        Some(b'<') => match end_token(&bytes[at..]) {
                            Prefix::Full => self.pos = at + END_TOKENS[0].len(),
                            Prefix::Partial => return Verdict::Wait,
                            Prefix::No => return Verdict::Release(at),
                        },
                        Some(_) => return Verdict::Release(at),
                    }
                }
                Phase::MistralLead => {
                    let ws = ws_len(rest);
                    self.pos += ws;
                    match rest.get(ws) {
                        None => return Verdict::Wait,
                        Some(b'[') => self.phase = Phase::Json(Extent::default()),
                        Some(b) if name_byte(*b) => self.phase = Phase::MistralName { len: 0 },
                        Some(_) => return Verdict::Release(self.pos),
                    }
                }
                Phase::MistralName { .. } | Phase::MistralId { .. } => {
                    let id = matches!(self.phase, Phase::MistralId { .. });
                    let n = rest.iter().take_while(|b| name_byte(**b)).count();
                    self.pos += n;
                    let len = match &mut self.phase {
                        Phase::MistralName { len } | Phase::MistralId { len } => {
                            *len += n;
                            *len
                        }
                        _ => 0,
                    };
                    if len > MAX_NAME {
                        return Verdict::Release(self.pos);
                    }
                    match bytes.get(self.pos) {
                        None => return Verdict::Wait,
                        Some(b'[') if len > 0 => {
                            self.phase = Phase::MistralMarker { id_seen: id };
                        }
                        Some(b'{') if len > 0 && !id => {
                            self.phase = Phase::Json(Extent::default());
                        }
                        Some(_) => return Verdict::Release(self.pos),
                    }
                }
                Phase::MistralMarker { id_seen } => {
                    let id_seen = *id_seen;
                    match prefix(rest, ARGS) {
                        Prefix::Full => {
                            self.pos += ARGS.len();
                            self.phase = Phase::JsonLead;
                            continue;
                        }
                        Prefix::Partial => return Verdict::Wait,
                        Prefix::No => {}
                    }
                    match prefix(rest, CALL_ID) {
                        Prefix::Full if !id_seen => {
                            self.pos += CALL_ID.len();
                            self.phase = Phase::MistralId { len: 0 };
                        }
                        Prefix::Partial if !id_seen => return Verdict::Wait,
                        _ => return Verdict::Release(self.pos),
                    }
                }
                Phase::FenceInfo { len } => {
                    let n = rest
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || b"_+.#-".contains(b))
                        .count();
                    *len += n;
                    self.pos += n;
                    if *len > MAX_FENCE_INFO {
                        return Verdict::Release(self.pos);
                    }
                    match &bytes[self.pos..] {
                        [] | [b'\r'] => return Verdict::Wait,
                        [b'\n', ..] => self.pos += 1,
                        [b'\r', b'\n', ..] => self.pos += 2,
                        _ => return Verdict::Release(self.pos),
                    }
                    self.phase = Phase::FenceLead;
                }
                Phase::FenceLead => {
                    let ws = ws_len(rest);
                    self.pos += ws;
                    let rest = &bytes[self.pos..];
                    if rest.is_empty() {
                        return Verdict::Wait;
                    }
                    let mut partial = false;
                    let mut full = false;
                    for (tag, _) in TAGS {
                        match prefix(rest, tag) {
                            Prefix::Full => full = true,
                            Prefix::Partial => partial = true,
                            Prefix::No => {}
                        }
                    }
                    if full {
                        self.phase = Phase::Until(FENCE);
                    } else if partial {
                        return Verdict::Wait;
                    } else if rest[0] == b'{' && self.whole {
                        self.bare_inner = true;
                        self.phase = Phase::FirstKey { at: self.pos };
                    } else {
                        return Verdict::Release(self.pos);
                    }
                }
                Phase::FirstKey { at } => {
                    let at = *at;
                    match json::first_key(&held[at + 1..], 16) {
                        None => return Verdict::Wait,
                        Some(Ok(key)) if CALL_KEYS.contains(&key) => {
                            self.pos = at;
                            self.phase = match self.kind {
                                Kind::Fence => Phase::Until(FENCE),
                                _ => Phase::Json(Extent::default()),
                            };
                        }
                        Some(_) => return Verdict::Release(at + 1),
                    }
                }
                Phase::AwaitEnd => {
                    let ws = ws_len(rest);
                    if ws == rest.len() {
                        return Verdict::Wait;
                    }
                    return Verdict::Release(self.pos + ws);
                }
            }
        }
    }
}

/// Whether `text` starts with (or is a start of) one of Llama's end tokens.
fn end_token(text: &[u8]) -> Prefix {
    let mut best = Prefix::No;
    for t in END_TOKENS {
        match prefix(text, t) {
            Prefix::Full => return Prefix::Full,
            Prefix::Partial => best = Prefix::Partial,
            Prefix::No => {}
        }
    }
    best
}

/// The tool a held region names so far, for the record of a runaway.
fn named_tool<'t>(tools: &'t [ToolDecl], region: &str) -> Option<&'t str> {
    let candidates = [
        region
            .find(FUNCTION)
            .map(|i| &region[i + FUNCTION.len()..])
            .and_then(|r| r.split_once('>'))
            .map(|(n, _)| n),
        region
            .find(TOOL_CALLS)
            .map(|i| &region[i + TOOL_CALLS.len()..])
            .and_then(|r| r.split_once('['))
            .map(|(n, _)| n.trim()),
        region
            .find("\"name\"")
            .map(|i| &region[i + 6..])
            .and_then(|r| r.trim_start().strip_prefix(':'))
            .and_then(|r| r.trim_start().strip_prefix('"'))
            .and_then(|r| r.split_once('"'))
            .map(|(n, _)| n),
    ];
    candidates
        .into_iter()
        .flatten()
        .find_map(|n| tools.iter().find(|t| t.name == n))
        .map(|t| t.name.as_str())
}

impl<'t> Recogniser<'t> {
    /// A recogniser for an answer, knowing the declared `tools`.
    pub fn new(tools: &'t [ToolDecl]) -> Recogniser<'t> {
        Recogniser {
            tools,
            quoted: None,
            held: String::new(),
            region: None,
            at_start: true,
            lines: Lines::default(),
            pending: Vec::new(),
            pending_text: String::new(),
            pending_fence: false,
            fences: true,
        }
    }

    /// A call that `quoted` holds stays text: the model copies what a tool
    /// result or the user showed it.
    pub fn quoting(mut self, quoted: &'t Quoted<'t>) -> Recogniser<'t> {
        self.quoted = Some(quoted);
        self
    }

    /// Feed the next piece of answer text.
    pub fn push(&mut self, chunk: &str, out: &mut dyn FnMut(Out<'_>)) -> Result<(), Runaway> {
        if self.tools.is_empty() {
            if !chunk.is_empty() {
                out(Out::Text(chunk));
            }
            return Ok(());
        }
        // The common case: plain text with nothing that could open a call.
        if self.region.is_none()
            && self.held.is_empty()
            && !self.at_start
            && self.pending.is_empty()
        {
            match memchr::memchr3(b'<', b'[', b'`', chunk.as_bytes()) {
                None => {
                    self.emit(chunk, out);
                    return Ok(());
                }
                Some(at) => {
                    self.emit(&chunk[..at], out);
                    self.held.push_str(&chunk[at..]);
                }
            }
        } else {
            self.held.push_str(chunk);
        }
        self.run(false, out)
    }

    /// End of the answer: a region still open is parsed as it is (its
    /// closing tag may be missing), anything else held is text, and the
    /// calls that end the answer are given out.
    pub fn finish(&mut self, out: &mut dyn FnMut(Out<'_>)) {
        // Nothing new reaches the guard at the end, so this cannot trip.
        let _ = self.run(true, out);
        self.held.clear();
        self.region = None;
        self.pending_text.clear();
        for call in std::mem::take(&mut self.pending) {
            tracing::info!(
                tool = %call.name,
                form = call.form.as_str(),
                fenced = call.fenced,
                "recovered a tool call the model wrote as text"
            );
            out(Out::Call(call));
        }
    }

    /// What is held back right now (the partial answer of a cancelled or
    /// failed generation keeps it as text).
    pub fn held(&self) -> String {
        format!("{}{}", self.pending_text, self.held)
    }

    /// Emit text that is decided.
    fn emit(&mut self, text: &str, out: &mut dyn FnMut(Out<'_>)) {
        if text.is_empty() {
            return;
        }
        if self.at_start && !text.trim_start().is_empty() {
            self.at_start = false;
        }
        self.lines.feed(text);
        out(Out::Text(text));
    }

    /// Emit `held[..n]` as text and drop it.
    fn release(&mut self, n: usize, out: &mut dyn FnMut(Out<'_>)) {
        let text = std::mem::take(&mut self.held);
        self.emit(&text[..n], out);
        self.held = text;
        self.held.drain(..n);
    }

    /// Text other than calls followed the pending calls: they were quoted,
    /// and are text as written.
    fn unpend(&mut self, out: &mut dyn FnMut(Out<'_>)) {
        self.pending.clear();
        self.pending_fence = false;
        let text = std::mem::take(&mut self.pending_text);
        self.emit(&text, out);
    }

    /// The calls a complete placed region holds, unless the session showed
    /// the model the same call (then it is a copy, and text).
    fn calls_in(&self, kind: Kind, whole: bool, region: &str) -> Option<Vec<Recovered>> {
        let calls = parse(self.tools, kind, whole, region)?;
        if let Some(quoted) = self.quoted
            && calls.iter().any(|c| quoted.holds(self.tools, c))
        {
            tracing::info!("a tool call written as text copies a tool result or the user: text");
            return None;
        }
        Some(calls)
    }

    fn run(&mut self, eos: bool, out: &mut dyn FnMut(Out<'_>)) -> Result<(), Runaway> {
        loop {
            if let Some(region) = &mut self.region {
                let mut verdict = region.advance(&self.held);
                // The guard sees every byte of the region up to where it is
                // decided, however the text was cut. (At the end nothing
                // new is looked at: the last push saw all of it.)
                let upto = match verdict {
                    Verdict::Wait => region.pos,
                    Verdict::End(n) | Verdict::Release(n) => n,
                };
                let upto = floor_boundary(&self.held, upto.min(self.held.len()));
                if !eos && upto > region.guarded {
                    let fresh = &self.held[region.guarded..upto];
                    region.guarded = upto;
                    if let Some(trip) = region.guard.feed(fresh) {
                        let name = named_tool(self.tools, &self.held).map(str::to_owned);
                        self.held.clear();
                        self.region = None;
                        self.pending.clear();
                        self.pending_text.clear();
                        return Err(Runaway {
                            sentence: trip.sentence,
                            name,
                        });
                    }
                }
                let (kind, whole, placed) = (region.kind, region.whole, region.placed);
                // A complete bare object that is no call is text at once.
                if verdict == Verdict::Wait
                    && !region.checked
                    && let Some(end) = region.complete
                {
                    region.checked = true;
                    if self.calls_in(kind, whole, &self.held[..end]).is_none() {
                        verdict = Verdict::Release(end);
                    }
                }
                if verdict == Verdict::Wait && eos {
                    verdict = Verdict::End(self.held.len());
                }
                if verdict == Verdict::Wait {
                    return Ok(());
                }
                self.region = None;
                match verdict {
                    Verdict::End(end) => {
                        let calls = if placed {
                            self.calls_in(kind, whole, &self.held[..end])
                        } else {
                            None
                        };
                        match calls {
                            Some(calls) => {
                                // A fence is a call only when it ends the answer.
                                if self.pending_fence {
                                    self.unpend(out);
                                }
                                self.pending_text.push_str(&self.held[..end]);
                                self.held.drain(..end);
                                self.pending.extend(calls);
                                self.pending_fence = kind == Kind::Fence;
                                self.at_start = false;
                            }
                            None => {
                                self.unpend(out);
                                self.release(end, out);
                            }
                        }
                    }
                    Verdict::Release(n) => {
                        self.unpend(out);
                        self.release(n, out);
                    }
                    Verdict::Wait => {}
                }
                continue;
            }
            if !self.pending.is_empty() && !self.after_calls(eos, out) {
                return Ok(());
            }
            if self.held.is_empty() {
                return Ok(());
            }
            if !self.scan(eos, out) {
                return Ok(());
            }
        }
    }

    /// After pending calls only whitespace and further calls may come:
    /// whitespace joins them, an opener starts a region; anything else
    /// makes them text. False when it must wait for more text.
    fn after_calls(&mut self, eos: bool, out: &mut dyn FnMut(Out<'_>)) -> bool {
        let ws = ws_len(self.held.as_bytes());
        self.pending_text.push_str(&self.held[..ws]);
        self.held.drain(..ws);
        if self.held.is_empty() {
            return false;
        }
        let line = match memchr::memrchr(b'\n', self.pending_text.as_bytes()) {
            Some(i) => indent_ok(&self.pending_text.as_bytes()[i + 1..], 0),
            None => false,
        };
        match opener(self.held.as_bytes(), self.fences && line) {
            (Prefix::Full, kind, len) => {
                self.region = Some(Box::new(Region::new(kind, len, false, true)));
                true
            }
            (Prefix::Partial, ..) if !eos => false,
            _ => {
                self.unpend(out);
                true
            }
        }
    }

    /// Whether `held[p]` is at the start of a line (after at most three
    /// spaces).
    fn line_start_at(&self, p: usize) -> bool {
        let before = &self.held.as_bytes()[..p];
        match memchr::memrchr(b'\n', before) {
            Some(i) => indent_ok(&before[i + 1..], 0),
            None => self.lines.indent().is_some_and(|n| indent_ok(before, n)),
        }
    }

    /// Scanning plain text: releases what cannot open a call and opens a
    /// region where one may begin. False when it must wait for more text.
    fn scan(&mut self, eos: bool, out: &mut dyn FnMut(Out<'_>)) -> bool {
        let bytes = self.held.as_bytes();
        let lead = if self.at_start { ws_len(bytes) } else { 0 };
        if self.at_start {
            if lead == bytes.len() {
                if eos || lead > MAX_LEADING_WS {
                    self.release(lead, out);
                }
                return false;
            }
            if bytes[lead] == b'{' {
                self.region = Some(Box::new(Region::new(Kind::Bare, lead, true, true)));
                return true;
            }
        }
        let mut from = lead;
        loop {
            let bytes = self.held.as_bytes();
            let Some(found) = memchr::memchr3(b'<', b'[', b'`', &bytes[from..]) else {
                self.release(bytes.len(), out);
                return false;
            };
            let mut p = from + found;
            // Leading whitespace of the answer stays with the region.
            let answer_start = self.at_start && p == lead;
            let line = answer_start || self.line_start_at(p);
            if line && !answer_start {
                // What comes before is text whatever follows; released, it
                // tells whether a quote or a code block holds `p`.
                self.release(p, out);
                p = 0;
            }
            let placed = line && (answer_start || !self.lines.quoted());
            let fence = self.fences && line && !self.lines.in_code();
            let (verdict, kind, len) = opener(&self.held.as_bytes()[p..], fence);
            let keep = if answer_start { 0 } else { p };
            match verdict {
                Prefix::Full => {
                    self.release(keep, out);
                    let body = p - keep + len;
                    let region = Region::new(kind, body, answer_start, placed);
                    self.region = Some(Box::new(region));
                    return true;
                }
                Prefix::Partial if !eos => {
                    self.release(keep, out);
                    return false;
                }
                Prefix::Partial => {
                    self.release(self.held.len(), out);
                    return false;
                }
                Prefix::No => from = p + 1,
            }
        }
    }
}

/// Only spaces, at most three with the `before` already on the line.
fn indent_ok(text: &[u8], before: usize) -> bool {
    before + text.len() <= 3 && text.iter().all(|b| *b == b' ')
}

/// Whether an opener starts `rest` (a fence only where `fence`): its kind
/// and length.
fn opener(rest: &[u8], fence: bool) -> (Prefix, Kind, usize) {
    let mut partial = false;
    for (tag, kind) in TAGS {
        match prefix(rest, tag) {
            Prefix::Full => return (Prefix::Full, kind, tag.len()),
            Prefix::Partial => partial = true,
            Prefix::No => {}
        }
    }
    if fence {
        match prefix(rest, FENCE) {
            Prefix::Full => return (Prefix::Full, Kind::Fence, FENCE.len()),
            Prefix::Partial => partial = true,
            Prefix::No => {}
        }
    }
    let verdict = if partial { Prefix::Partial } else { Prefix::No };
    (verdict, Kind::Fence, 0)
}

/// The calls a complete region holds, or `None` when it is text.
fn parse(tools: &[ToolDecl], kind: Kind, whole: bool, region: &str) -> Option<Vec<Recovered>> {
    match kind {
        Kind::ToolCall => forms::tool_call(tools, region),
        Kind::Function => forms::function(tools, region).map(|c| vec![c]),
        Kind::PythonTag => forms::python_tag(tools, region),
        Kind::Mistral => forms::mistral(tools, region),
        Kind::Bare => forms::bare(tools, region),
        Kind::Fence => fenced(tools, whole, region),
    }
}

/// A fence is a call when it holds exactly one call and nothing else.
fn fenced(tools: &[ToolDecl], whole: bool, region: &str) -> Option<Vec<Recovered>> {
    let rest = region.trim_start().strip_prefix(FENCE)?;
    let (_info, body) = rest.split_once('\n')?;
    let body = body.trim_end();
    let body = body.strip_suffix(FENCE).unwrap_or(body);
    let mut inner = Recogniser::new(tools);
    inner.fences = false;
    inner.at_start = whole;
    let mut calls = Vec::new();
    let mut text_only_ws = true;
    let mut take = |o: Out<'_>| match o {
        Out::Text(t) => text_only_ws &= t.trim().is_empty(),
        Out::Call(c) => calls.push(c),
    };
    inner.push(body, &mut take).ok()?;
    inner.finish(&mut take);
    if !text_only_ws || calls.len() != 1 {
        return None;
    }
    for c in &mut calls {
        c.fenced = true;
    }
    Some(calls)
}

#[cfg(test)]
mod tests;
