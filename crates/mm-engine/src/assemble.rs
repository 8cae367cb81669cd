//! Turns neutral deltas into stream events and the final assistant
//! message: think-tag splitting, reasoning blocks, tool calls assembled from
//! interleaved deltas (by index), ids where the server gives none, usage,
//! the runaway guard on every call's arguments, and (when asked) tool calls
//! the model wrote into its answer as text.

use crate::answer_loop;
use crate::error::EngineError;
use crate::runaway;
use crate::textcalls::{self, Quoted, Recogniser};
use crate::think::{Piece, ThinkSplitter};
use crate::types::{Message, Reasoning, StreamEvent, ToolCall, ToolDecl, Usage};
use crate::wire::{Delta, DeltaSink};

/// A tool call being assembled.
#[derive(Debug)]
struct Call {
    /// The provider's index (or our ordinal for whole calls).
    key: usize,
    /// Unique within the reply: a repeated provider id gets a suffix.
    id: String,
    /// The id as the server sent it, to tell a resent start from a new call.
    wire_id: Option<String>,
    name: String,
    arguments: String,
    chars: usize,
    finished: bool,
}

impl Call {
    fn to_tool_call(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: if self.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                self.arguments.clone()
            },
        }
    }
}

/// Makes a tool-call id for servers that send none (Ollama, Gemini):
/// unique across sessions, so stored histories never pair wrongly.
pub fn make_call_id() -> String {
    let u = uuid::Uuid::now_v7().simple().to_string();
    format!("call_{u}")
}

/// Collects one generation.
pub struct Assembler<'s> {
    sink: &'s mut (dyn FnMut(StreamEvent) + Send),
    think: ThinkSplitter,
    content: String,
    reasoning: Vec<Reasoning>,
    /// Whether the last reasoning block still takes text.
    reasoning_open: bool,
    calls: Vec<Call>,
    usage: Option<Usage>,
    /// Whether anything reached the sink (a retry would repeat it).
    emitted: bool,
    /// Whether the server said the answer is complete ([`Delta::End`]).
    ended: bool,
    /// Recovers tool calls written as text, when enabled.
    text_calls: Option<Recogniser<'s>>,
    /// The runaway guard tripped inside text held as a possible call, or
    /// the answer-loop guard tripped.
    text_error: Option<EngineError>,
    /// Watches the visible answer for a passage repeated back to back.
    answer_guard: answer_loop::Guard,
    /// The answer looped: what follows is dropped, `content` is cut.
    looped: bool,
    /// A usage delta said how much of the prompt was cached.
    cache_reported: bool,
}

impl<'s> Assembler<'s> {
    pub fn new(sink: &'s mut (dyn FnMut(StreamEvent) + Send)) -> Self {
        Assembler {
            sink,
            think: ThinkSplitter::new(),
            content: String::new(),
            reasoning: Vec::new(),
            reasoning_open: false,
            calls: Vec::new(),
            usage: None,
            emitted: false,
            ended: false,
            text_calls: None,
            text_error: None,
            answer_guard: answer_loop::Guard::new(),
            looped: false,
            cache_reported: false,
        }
    }

    /// Recover tool calls of the declared `tools` that the model writes
    /// into its answer as text (after the think splitter, so a call inside
    /// reasoning is never one).
    pub fn with_text_calls(mut self, tools: &'s [ToolDecl]) -> Self {
        if !tools.is_empty() {
            self.text_calls = Some(Recogniser::new(tools));
        }
        self
    }

    /// A call written as text that copies one `quoted` holds (the
    /// session's tool results and user messages) stays text.
    pub fn quoting(mut self, quoted: &'s Quoted<'s>) -> Self {
        self.text_calls = self.text_calls.map(|r| r.quoting(quoted));
        self
    }

    /// Whether any event reached the sink yet.
    pub fn emitted(&self) -> bool {
        self.emitted
    }

    /// Whether the server said the answer is complete.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Whether the server said how much of the prompt its cache held.
    pub fn cache_reported(&self) -> bool {
        self.cache_reported
    }

    fn emit(&mut self, e: StreamEvent) {
        self.emitted = true;
        (self.sink)(e);
    }

    fn push_reasoning(&mut self, text: &str) {
        match self.reasoning.last_mut() {
            Some(r) if self.reasoning_open && r.redacted.is_none() => r.text.push_str(text),
            _ => {
                self.reasoning.push(Reasoning {
                    text: text.to_owned(),
                    signature: None,
                    redacted: None,
                });
                self.reasoning_open = true;
            }
        }
        self.emit(StreamEvent::Reasoning(text.to_owned()));
    }

    fn text(&mut self, chunk: &str) -> Result<(), EngineError> {
        // The splitter borrows itself mutably while we need `self` to emit;
        // take it out for the call.
        let mut think = std::mem::take(&mut self.think);
        think.push(chunk, &mut |p| self.piece(p));
        self.think = think;
        self.text_error.take().map_or(Ok(()), Err)
    }

    fn piece(&mut self, p: Piece<'_>) {
        match p {
            Piece::Text(t) => match self.text_calls.take() {
                Some(mut rec) => {
                    if self.text_error.is_none()
                        && let Err(trip) = rec.push(t, &mut |o| self.recovered(o))
                    {
                        if let Some(name) = &trip.name {
                            self.runaway_call(name, "");
                        }
                        self.text_error = Some(EngineError::Runaway {
                            text: trip.sentence,
                        });
                    }
                    self.text_calls = Some(rec);
                }
                None => self.answer(t),
            },
            Piece::Reasoning(r) => self.push_reasoning(r),
        }
    }

    fn answer(&mut self, t: &str) {
        if self.looped {
            return;
        }
        self.content.push_str(t);
        self.emit(StreamEvent::Text(t.to_owned()));
        if let Some(v) = self.answer_guard.push(t) {
            // The guard saw exactly what `content` holds: cut it to what
            // came before the loop and one copy.
            self.content.truncate(v.keep);
            self.looped = true;
            if self.text_error.is_none() {
                self.text_error = Some(EngineError::Repeated {
                    text: answer_loop::sentence(&v),
                });
            }
        }
    }

    /// What the text-call recogniser gives: answer text, or a recovered
    /// call, which becomes a call like one the server sent whole.
    fn recovered(&mut self, o: textcalls::Out<'_>) {
        match o {
            textcalls::Out::Text(t) => self.answer(t),
            textcalls::Out::Call(call) => {
                let key = usize::MAX - self.calls.len();
                let pos = self.start_call(key, None, &call.name);
                if let Some(c) = self.calls.get_mut(pos) {
                    c.chars = call.arguments.chars().count();
                    c.arguments = call.arguments;
                }
                self.finish_call(pos);
            }
        }
    }

    /// End of the answer text: flush what the splitters hold.
    fn flush_text(&mut self) {
        let mut think = std::mem::take(&mut self.think);
        think.finish(&mut |p| self.piece(p));
        if let Some(mut rec) = self.text_calls.take() {
            rec.finish(&mut |o| self.recovered(o));
        }
    }

    fn position(&self, key: usize) -> Option<usize> {
        // Calls are few: a linear search from the end finds the active one.
        self.calls.iter().rposition(|c| c.key == key && !c.finished)
    }

    fn start_call(&mut self, key: usize, id: Option<&str>, name: &str) -> usize {
        let wire_id = id.filter(|id| !id.is_empty()).map(str::to_owned);
        let id = match &wire_id {
            Some(id) => self.distinct(id),
            None => make_call_id(),
        };
        let index = self.calls.len();
        self.calls.push(Call {
            key,
            id: id.clone(),
            wire_id,
            name: name.to_owned(),
            arguments: String::new(),
            chars: 0,
            finished: false,
        });
        self.emit(StreamEvent::ToolCallStarted {
            index,
            id,
            name: name.to_owned(),
        });
        index
    }

    /// `id`, or `id_2`, `id_3`… when an earlier call of this reply has it:
    /// two calls under one id would share one result and one card. The
    /// suffix keeps the characters every provider accepts in an id.
    fn distinct(&self, id: &str) -> String {
        let taken = |candidate: &str| self.calls.iter().any(|c| c.id == candidate);
        if !taken(id) {
            return id.to_owned();
        }
        (2..)
            .map(|n| format!("{id}_{n}"))
            .find(|candidate| !taken(candidate))
            .unwrap_or_else(make_call_id)
    }

    fn finish_call(&mut self, pos: usize) {
        if let Some(c) = self.calls.get_mut(pos)
            && !c.finished
        {
            c.finished = true;
            let call = c.to_tool_call();
            self.emit(StreamEvent::ToolCallFinished(call));
        }
    }

    fn add_args(&mut self, pos: usize, fragment: &str) -> Result<(), EngineError> {
        let Some(c) = self.calls.get_mut(pos) else {
            return Ok(());
        };
        c.arguments.push_str(fragment);
        c.chars += fragment.chars().count();
        match runaway::check(&c.arguments, c.chars) {
            Some(text) => Err(EngineError::Runaway { text }),
            None => Ok(()),
        }
    }

    /// A whole-call wire's call caught running away inside a frame still
    /// arriving: it joins the message (unfinished) with its text so far.
    pub fn runaway_call(&mut self, name: &str, arguments: &str) {
        let key = usize::MAX - self.calls.len();
        let pos = self.start_call(key, None, name);
        if let Some(c) = self.calls.get_mut(pos) {
            c.arguments.push_str(arguments);
            c.chars = arguments.chars().count();
        }
    }

    /// End of the response: flush held text, finish open calls, report usage.
    pub fn finish(mut self) -> (Message, Option<Usage>) {
        self.flush_text();
        for pos in 0..self.calls.len() {
            self.finish_call(pos);
        }
        if let Some(u) = self.usage {
            self.emit(StreamEvent::Usage(u));
        }
        let usage = self.usage;
        (self.into_message(), usage)
    }

    /// The message as far as it got (cancellation, errors): held-back text
    /// is kept, unfinished calls are included with the arguments so far.
    pub fn partial(mut self) -> (Message, Option<Usage>) {
        if let Some(rec) = &self.text_calls
            && !self.looped
        {
            self.content.push_str(&rec.held());
        }
        let (text, reasoning) = self.think.held();
        let (text, reasoning) = (text.to_owned(), reasoning.to_owned());
        if !self.looped {
            self.content.push_str(&text);
        }
        if !reasoning.is_empty() {
            match self.reasoning.last_mut() {
                Some(r) if self.reasoning_open => r.text.push_str(&reasoning),
                _ => self.reasoning.push(Reasoning {
                    text: reasoning,
                    signature: None,
                    redacted: None,
                }),
            }
        }
        let usage = self.usage;
        (self.into_message(), usage)
    }

    fn into_message(self) -> Message {
        Message::Assistant {
            content: self.content,
            reasoning: self.reasoning,
            tool_calls: self.calls.iter().map(Call::to_tool_call).collect(),
        }
    }
}

impl DeltaSink for Assembler<'_> {
    fn delta(&mut self, delta: Delta<'_>) -> Result<(), EngineError> {
        match delta {
            Delta::Text(t) => self.text(t)?,
            Delta::Reasoning(r) => self.push_reasoning(r),
            Delta::ReasoningBlock => self.reasoning_open = false,
            Delta::Signature(s) => match self.reasoning.last_mut() {
                Some(r) if self.reasoning_open && r.redacted.is_none() => {
                    r.signature.get_or_insert_with(String::new).push_str(s);
                }
                _ => {
                    self.reasoning.push(Reasoning {
                        text: String::new(),
                        signature: Some(s.to_owned()),
                        redacted: None,
                    });
                    self.reasoning_open = true;
                }
            },
            Delta::Redacted(d) => {
                self.reasoning.push(Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: Some(d.to_owned()),
                });
                self.reasoning_open = false;
            }
            Delta::ToolStart { key, id, name } => match self.position(key) {
                // Another id under the same index: servers that number
                // every call 0 (or give no index) send a new call.
                Some(pos)
                    if id.is_some_and(|id| {
                        !id.is_empty() && self.calls[pos].wire_id.as_deref() != Some(id)
                    }) =>
                {
                    self.finish_call(pos);
                    self.start_call(key, id, name);
                }
                // A repeated start (some servers resend the id) fills gaps.
                Some(pos) => {
                    let c = &mut self.calls[pos];
                    if c.name.is_empty() {
                        c.name = name.to_owned();
                    }
                }
                None => {
                    self.start_call(key, id, name);
                }
            },
            Delta::ToolArgs { key, fragment } => {
                let pos = match self.position(key) {
                    Some(pos) => pos,
                    None => self.start_call(key, None, ""),
                };
                self.add_args(pos, fragment)?;
            }
            Delta::ToolEnd { key } => {
                if let Some(pos) = self.position(key) {
                    self.finish_call(pos);
                }
            }
            Delta::ToolWhole {
                id,
                name,
                arguments,
            } => {
                let key = usize::MAX - self.calls.len();
                let pos = self.start_call(key, id, name);
                self.add_args(pos, arguments)?;
                self.finish_call(pos);
            }
            Delta::End => self.ended = true,
            Delta::Usage {
                prompt: None,
                completion: None,
                cached: None,
            } => {}
            Delta::Usage {
                prompt,
                completion,
                cached,
            } => {
                let u = self.usage.get_or_insert_with(Usage::default);
                if let Some(p) = prompt {
                    u.prompt_tokens = p;
                }
                if let Some(c) = cached {
                    u.cached_tokens = c;
                    self.cache_reported = true;
                }
                if let Some(c) = completion {
                    u.completion_tokens = c;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(deltas: &[Delta<'_>]) -> (Vec<StreamEvent>, Message, Option<Usage>) {
        let mut events = Vec::new();
        let mut sink = |e: StreamEvent| events.push(e);
        let mut a = Assembler::new(&mut sink);
        for d in deltas {
            a.delta(d.clone()).unwrap();
        }
        let (m, u) = a.finish();
        (events, m, u)
    }

    #[test]
    fn interleaved_tool_calls_are_assembled_by_index() {
        let (events, msg, _) = collect(&[
            Delta::ToolStart {
                key: 0,
                id: Some("a"),
                name: "read_file",
            },
            Delta::ToolStart {
                key: 1,
                id: Some("b"),
                name: "bash",
            },
            Delta::ToolArgs {
                key: 0,
                fragment: "{\"path\":",
            },
            Delta::ToolArgs {
                key: 1,
                fragment: "{\"command\":\"ls\"",
            },
            Delta::ToolArgs {
                key: 0,
                fragment: "\"x\"}",
            },
            Delta::ToolArgs {
                key: 1,
                fragment: "}",
            },
        ]);
        let Message::Assistant { tool_calls, .. } = msg else {
            panic!()
        };
        assert_eq!(
            tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"x\"}".into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "bash".into(),
                    arguments: "{\"command\":\"ls\"}".into()
                },
            ]
        );
        assert_eq!(
            events[0],
            StreamEvent::ToolCallStarted {
                index: 0,
                id: "a".into(),
                name: "read_file".into()
            }
        );
        assert_eq!(
            events[1],
            StreamEvent::ToolCallStarted {
                index: 1,
                id: "b".into(),
                name: "bash".into()
            }
        );
        assert!(matches!(&events[2], StreamEvent::ToolCallFinished(c) if c.id == "a"));
        assert!(matches!(&events[3], StreamEvent::ToolCallFinished(c) if c.id == "b"));
    }

    #[test]
    fn calls_that_share_an_id_get_distinct_ids() {
        let (events, msg, _) = collect(&[
            Delta::ToolStart {
                key: 0,
                id: Some("call_0"),
                name: "bash",
            },
            Delta::ToolStart {
                key: 1,
                id: Some("call_0"),
                name: "bash",
            },
            // A resent start of the second call is not a third call.
            Delta::ToolStart {
                key: 1,
                id: Some("call_0"),
                name: "",
            },
            Delta::ToolArgs {
                key: 0,
                fragment: "{\"command\":\"echo a\"}",
            },
            Delta::ToolArgs {
                key: 1,
                fragment: "{\"command\":\"echo b\"}",
            },
            Delta::ToolWhole {
                id: Some("call_0"),
                name: "read_file",
                arguments: "{}",
            },
        ]);
        let Message::Assistant { tool_calls, .. } = msg else {
            panic!()
        };
        let ids: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_0", "call_0_2", "call_0_3"]);
        assert_eq!(tool_calls[1].arguments, "{\"command\":\"echo b\"}");
        let started: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallStarted { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(started, ids);
    }

    #[test]
    fn a_new_id_under_the_same_index_is_a_new_call() {
        let (_, msg, _) = collect(&[
            Delta::ToolStart {
                key: 0,
                id: Some("x"),
                name: "a",
            },
            Delta::ToolArgs {
                key: 0,
                fragment: "{}",
            },
            Delta::ToolStart {
                key: 0,
                id: Some("x"),
                name: "",
            },
            Delta::ToolStart {
                key: 0,
                id: Some("y"),
                name: "b",
            },
            Delta::ToolArgs {
                key: 0,
                fragment: "{\"k\":1}",
            },
        ]);
        let Message::Assistant { tool_calls, .. } = msg else {
            panic!()
        };
        assert_eq!(
            tool_calls,
            vec![
                ToolCall {
                    id: "x".into(),
                    name: "a".into(),
                    arguments: "{}".into()
                },
                ToolCall {
                    id: "y".into(),
                    name: "b".into(),
                    arguments: "{\"k\":1}".into()
                },
            ]
        );
    }

    #[test]
    fn whole_calls_get_made_ids_and_empty_arguments_become_an_object() {
        let (_, msg, _) = collect(&[
            Delta::ToolWhole {
                id: None,
                name: "a",
                arguments: "{\"x\":1}",
            },
            Delta::ToolWhole {
                id: None,
                name: "b",
                arguments: "",
            },
        ]);
        let Message::Assistant { tool_calls, .. } = msg else {
            panic!()
        };
        assert_eq!(tool_calls.len(), 2);
        assert!(tool_calls[0].id.starts_with("call_"));
        assert_ne!(tool_calls[0].id, tool_calls[1].id);
        assert_eq!(tool_calls[1].arguments, "{}");
    }

    #[test]
    fn signed_reasoning_blocks_stay_apart() {
        let (events, msg, usage) = collect(&[
            Delta::ReasoningBlock,
            Delta::Reasoning("one"),
            Delta::Signature("sig1"),
            Delta::ReasoningBlock,
            Delta::Reasoning("two"),
            Delta::Signature("sig2"),
            Delta::Redacted("opaque"),
            Delta::Text("answer"),
            Delta::Usage {
                prompt: Some(5),
                completion: None,
                cached: Some(3),
            },
            Delta::Usage {
                prompt: None,
                completion: Some(7),
                cached: None,
            },
        ]);
        let Message::Assistant {
            content, reasoning, ..
        } = msg
        else {
            panic!()
        };
        assert_eq!(content, "answer");
        assert_eq!(reasoning.len(), 3);
        assert_eq!(reasoning[0].signature.as_deref(), Some("sig1"));
        assert_eq!(reasoning[1].text, "two");
        assert_eq!(reasoning[2].redacted.as_deref(), Some("opaque"));
        let u = Usage {
            prompt_tokens: 5,
            completion_tokens: 7,
            cached_tokens: 3,
        };
        assert_eq!(usage, Some(u));
        assert_eq!(events.last(), Some(&StreamEvent::Usage(u)));
    }

    #[test]
    fn runaway_arguments_stop_with_the_sentence() {
        let mut sink = |_e: StreamEvent| {};
        let mut a = Assembler::new(&mut sink);
        a.delta(Delta::ToolStart {
            key: 0,
            id: Some("r"),
            name: "write_file",
        })
        .unwrap();
        a.delta(Delta::ToolArgs {
            key: 0,
            fragment: "{\"content\":\"",
        })
        .unwrap();
        let mut err = None;
        for _ in 0..1000 {
            if let Err(e) = a.delta(Delta::ToolArgs {
                key: 0,
                fragment: "la ",
            }) {
                err = Some(e);
                break;
            }
        }
        // 12 + 3k >= 12 + 256 -> k = 86, n = 270; the pattern "la " has
        // period 3, so P is the shortest multiple >= 4: 6.
        assert_eq!(
            err,
            Some(EngineError::Runaway {
                text: runaway::pattern_sentence(270, "la la ")
            })
        );
        let (msg, _) = a.partial();
        let Message::Assistant { tool_calls, .. } = msg else {
            panic!()
        };
        assert_eq!(tool_calls[0].id, "r");
        assert_eq!(tool_calls[0].arguments.chars().count(), 270);
    }

    fn bash_decl() -> Vec<ToolDecl> {
        vec![ToolDecl {
            name: "bash".into(),
            description: "run".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
        }]
    }

    #[test]
    fn a_call_written_as_text_becomes_a_call_and_leaves_the_answer() {
        let tools = bash_decl();
        let mut events = Vec::new();
        let mut sink = |e: StreamEvent| events.push(e);
        let mut a = Assembler::new(&mut sink).with_text_calls(&tools);
        for piece in [
            "<think>maybe <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"rm\"}}</tool_call></think>",
            "Listing.\n<tool_",
            "call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n",
        ] {
            a.delta(Delta::Text(piece)).unwrap();
        }
        let (msg, _) = a.finish();
        let Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } = msg
        else {
            panic!()
        };
        assert_eq!(content, "Listing.\n");
        // The call inside the reasoning is reasoning, not a call.
        assert!(reasoning[0].text.contains("\"rm\""));
        assert_eq!(tool_calls.len(), 1);
        assert_eq!(tool_calls[0].name, "bash");
        assert_eq!(tool_calls[0].arguments, "{\"command\":\"ls\"}");
        let shown: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(shown, content);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolCallStarted { name, .. } if name == "bash"))
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolCallFinished(c) if c.id == tool_calls[0].id))
        );
    }

    #[test]
    fn a_text_call_running_away_stops_like_a_native_one() {
        let tools = bash_decl();
        let mut sink = |_e: StreamEvent| {};
        let mut a = Assembler::new(&mut sink).with_text_calls(&tools);
        a.delta(Delta::Text(
            "ok <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"",
        ))
        .unwrap();
        let mut err = None;
        for _ in 0..1000 {
            if let Err(e) = a.delta(Delta::Text("la ")) {
                err = Some(e);
                break;
            }
        }
        let Some(EngineError::Runaway { text }) = err else {
            panic!("{err:?}")
        };
        assert!(text.contains("repeat the same pattern"), "{text}");
        let (msg, _) = a.partial();
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = msg
        else {
            panic!()
        };
        // The runaway call is recorded (to be closed as not run); its
        // repeated text is not kept.
        assert_eq!(content, "ok ");
        assert_eq!(tool_calls.len(), 1);
        assert_eq!(tool_calls[0].name, "bash");
        assert_eq!(tool_calls[0].arguments, "{}");
    }

    #[test]
    fn think_tags_become_reasoning() {
        let (events, msg, _) = collect(&[Delta::Text("<thi"), Delta::Text("nk>hm</think>ok")]);
        assert_eq!(
            events,
            vec![
                StreamEvent::Reasoning("hm".into()),
                StreamEvent::Text("ok".into())
            ]
        );
        let Message::Assistant {
            content, reasoning, ..
        } = msg
        else {
            panic!()
        };
        assert_eq!(content, "ok");
        assert_eq!(reasoning[0].text, "hm");
        assert_eq!(reasoning[0].signature, None);
    }
}
