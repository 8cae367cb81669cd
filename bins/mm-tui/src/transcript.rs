//! The one value the window draws from. The Sink records every event here
//! (under a mutex, from whatever task sent it); the event loop reads it and
//! redraws from its current state. Nothing here draws or knows the screen.

use std::time::{Duration, Instant};

use mm_ui::{Counters, Event, FileChange, ToolInfo, ToolStatus, TurnOutcome};

/// What a tool call is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Announced, not yet running (planning, or waiting for permission).
    Pending,
    /// Waiting for the user's a/s/r.
    Asking,
    Running,
    Done,
    Failed,
}

/// One tool call, shown as one `‣ tool  title` line with folded output.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    pub id: String,
    pub tool: String,
    pub title: String,
    pub state: ToolState,
    /// When it was announced, then when it started running.
    pub started: Instant,
    /// Set when it ended.
    pub elapsed: Option<Duration>,
    /// What the model received; while the call runs, the tail of its
    /// output as it comes (at most [`LIVE_KEEP`] bytes).
    pub output: String,
    /// Lines of the running output dropped from the front of `output`.
    pub live_dropped: usize,
    /// The diff of an edit, shown while asking and when expanded.
    pub diff: Option<String>,
    pub expanded: bool,
}

/// The most of a running command's output the window keeps: the block
/// shows its last lines while it runs; the whole comes with its end.
pub const LIVE_KEEP: usize = 64 * 1024;

/// What an entry shows.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// The user's question.
    Question(String),
    /// Streamed answer text, drawn as markdown.
    Answer(String),
    /// Reasoning: folded by default, above the answer it led to.
    Thinking {
        text: String,
        expanded: bool,
    },
    Tool(ToolEntry),
    /// A line for the user (`compacted: …`, command output).
    Notice(String),
    /// A failure the user must see.
    Error(String),
    /// A unified diff (`/diff`), coloured by line.
    Diff(String),
    /// The counters after a turn.
    Recap(String),
}

impl EntryKind {
    /// Entries that fold: Enter/Tab act on them.
    pub fn foldable(&self) -> bool {
        matches!(self, EntryKind::Thinking { .. } | EntryKind::Tool(_))
    }
}

/// An entry and its revision: any change bumps `rev`, which is what the
/// layout cache keys on.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: EntryKind,
    pub rev: u64,
}

/// A permission request the user has not answered yet.
#[derive(Debug)]
pub struct PendingPermission {
    pub id: String,
    pub tool: String,
    pub title: String,
    pub diff: Option<String>,
    /// After `r`: the reason for the model being typed; Enter rejects.
    pub reason: Option<String>,
    /// Answers the Sink's waiting `permission()` future.
    pub reply: Option<tokio::sync::oneshot::Sender<mm_ui::Decision>>,
    /// The question is whether to carry out a plan (`exit_plan`), not
    /// whether a call may run: the keys mean go on asking first (a), go
    /// on without asking (s), stay in plan mode (r).
    pub plan: bool,
}

/// The whole window state that events change.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    next_rev: u64,
    /// `Thinking`, `Composing a tool call` … while a turn runs.
    pub status: Option<String>,
    /// When `status` last changed: the rule's seconds count from it, so
    /// they agree with a running tool's own.
    pub status_since: Option<Instant>,
    /// When the running turn (or command) started; `None` when idle.
    pub busy_since: Option<Instant>,
    /// The session's tokens so far.
    pub tokens: mm_ui::TokenCounts,
    /// Tokens the model's window holds now, and its size.
    pub context: (u64, u64),
    pub permission: Option<PendingPermission>,
    /// Reasons given with rejections, by call id, until the tools ask.
    pub reasons: std::collections::HashMap<String, String>,
    /// Bumped whenever the entry list is cleared, so caches start over.
    pub epoch: u64,
    /// The model's checklist (`todo`), drawn above the input while a turn
    /// runs.
    pub plan: Vec<mm_ui::PlanItem>,
    /// The mode an accepted plan switched to during the turn; the event
    /// loop takes it into the status bar.
    pub mode: Option<mm_ui::AgentMode>,
    /// Characters the model streamed in this turn (answer and reasoning),
    /// for the status line's token estimate.
    turn_chars: usize,
    /// Set by an answer streamed in this reply: later text appends to it.
    open_answer: Option<usize>,
    open_thinking: Option<usize>,
}

impl Transcript {
    pub fn new() -> Transcript {
        Transcript::default()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn rev(&mut self) -> u64 {
        self.next_rev += 1;
        self.next_rev
    }

    /// Add an entry at the end; returns its index.
    pub fn push(&mut self, kind: EntryKind) -> usize {
        let rev = self.rev();
        // A new entry of any other kind closes the streamed ones.
        if !matches!(kind, EntryKind::Answer(_)) {
            self.open_answer = None;
        }
        if !matches!(kind, EntryKind::Thinking { .. }) {
            self.open_thinking = None;
        }
        self.entries.push(Entry { kind, rev });
        self.entries.len() - 1
    }

    /// Change entry `i` in place (its revision moves).
    pub fn edit(&mut self, i: usize, f: impl FnOnce(&mut EntryKind)) {
        let rev = self.rev();
        if let Some(entry) = self.entries.get_mut(i) {
            f(&mut entry.kind);
            entry.rev = rev;
        }
    }

    /// `/new`: forget everything shown.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.open_answer = None;
        self.open_thinking = None;
        self.epoch += 1;
    }

    /// Fold or unfold entry `i`; false when it does not fold.
    pub fn toggle(&mut self, i: usize) -> bool {
        let foldable = self.entries.get(i).is_some_and(|e| e.kind.foldable());
        if foldable {
            self.edit(i, |k| match k {
                EntryKind::Thinking { expanded, .. } => *expanded = !*expanded,
                EntryKind::Tool(t) => t.expanded = !t.expanded,
                _ => {}
            });
        }
        foldable
    }

    /// The user asked a question: the turn starts.
    pub fn start_turn(&mut self, question: &str, now: Instant) {
        self.push(EntryKind::Question(question.to_string()));
        self.turn_chars = 0;
        self.busy_since = Some(now);
        self.set_status("Thinking", now);
    }

    /// A command (`/compact`) runs in the background.
    pub fn start_busy(&mut self, label: &str, now: Instant) {
        self.busy_since = Some(now);
        self.set_status(label, now);
    }

    /// The background work ended without a `TurnEnd` (commands).
    pub fn end_busy(&mut self) {
        self.busy_since = None;
        self.status = None;
        self.status_since = None;
        self.open_answer = None;
        self.open_thinking = None;
    }

    /// Say what the agent is doing; the rule's seconds start again when
    /// that changes.
    fn set_status(&mut self, text: &str, now: Instant) {
        if self.status.as_deref() != Some(text) {
            self.status = Some(text.to_owned());
            self.status_since = Some(now);
        }
    }

    /// The tokens the model wrote this turn, estimated from its text.
    pub fn turn_tokens(&self) -> u64 {
        mm_ui::words::estimate_tokens(self.turn_chars)
    }

    pub fn is_busy(&self) -> bool {
        self.busy_since.is_some()
    }

    fn tool_index(&self, id: &str) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| matches!(&e.kind, EntryKind::Tool(t) if t.id == id))
    }

    /// Change the block of tool call `id`, the latest of that id; nothing
    /// when there is none.
    fn edit_tool(&mut self, id: &str, f: impl FnOnce(&mut ToolEntry)) {
        if let Some(i) = self.tool_index(id) {
            self.edit(i, |k| {
                if let EntryKind::Tool(t) = k {
                    f(t);
                }
            });
        }
    }

    /// Mark the tool call of a permission request as waiting for the user.
    pub fn set_tool_state(&mut self, id: &str, state: ToolState, now: Instant) {
        if state == ToolState::Asking {
            self.set_status("Waiting for permission", now);
        }
        self.edit_tool(id, |t| t.state = state);
    }

    /// The user approved call `id`: an edit's diff, just read in the
    /// prompt, stays in sight under its block instead of folding away.
    pub fn approved(&mut self, id: &str) {
        self.edit_tool(id, |t| {
            if t.diff.is_some() {
                t.expanded = true;
            }
        });
    }

    /// Record one event of the turn. `now` is passed in so tests control time.
    pub fn apply(&mut self, event: Event, now: Instant) {
        match event {
            // A saved conversation replayed: its question opens an exchange.
            Event::Question { text } => {
                self.open_answer = None;
                self.open_thinking = None;
                self.push(EntryKind::Question(text));
            }
            Event::Text { text } => self.answer(text, now),
            Event::Reasoning { text } => self.thinking(text, now),
            Event::Status { text } => {
                // A new request: what it streams is a new answer.
                if text == "Thinking" {
                    self.open_answer = None;
                    self.open_thinking = None;
                }
                self.set_status(&text, now);
            }
            Event::ToolStart { info } => self.tool_started(info, now),
            Event::ToolRunning { id } => {
                let mut tool = String::new();
                self.edit_tool(&id, |t| {
                    t.state = ToolState::Running;
                    t.started = now;
                    tool = t.tool.clone();
                });
                if !tool.is_empty() {
                    self.set_status(&format!("Running {tool}"), now);
                }
            }
            Event::ToolEnd {
                id, status, output, ..
            } => self.edit_tool(&id, |t| {
                t.state = match status {
                    ToolStatus::Completed => ToolState::Done,
                    ToolStatus::Failed => ToolState::Failed,
                };
                t.elapsed = Some(now.saturating_duration_since(t.started));
                if t.tool == mm_agent::subagent::NAME {
                    // A subagent's steps stay above its answer.
                    t.output.push_str(&output);
                } else {
                    t.output = output;
                }
                t.live_dropped = 0;
            }),
            Event::Child {
                parent,
                agent,
                event,
            } => self.child(&parent, &agent, *event, now),
            // The result's text names the picture; the window shows that.
            Event::ToolImages { .. } => {}
            Event::ToolOutput { id, text } => self.edit_tool(&id, |t| {
                t.output.push_str(&text);
                keep_tail(t);
            }),
            Event::Notice { text } => {
                self.push(EntryKind::Notice(text));
            }
            Event::Tokens {
                session,
                context,
                window,
            } => {
                self.tokens = session;
                self.context = (context, window);
            }
            Event::Attached { path, size } => {
                self.push(EntryKind::Notice(mm_ui::attached_line(&path, &size)));
            }
            Event::Error { text } => {
                self.push(EntryKind::Error(text));
            }
            Event::Plan { items } => self.plan = items,
            Event::Mode { mode } => {
                self.mode = Some(mode);
                self.push(EntryKind::Notice(format!(
                    "mode: {} — {}",
                    mode.name(),
                    mode.meaning()
                )));
            }
            // The session's counts came with `Tokens`, just before.
            Event::TurnEnd {
                outcome, counters, ..
            } => {
                if outcome == TurnOutcome::Cancelled {
                    self.push(EntryKind::Notice(mm_ui::CANCELLED_LINE.into()));
                }
                let recap = recap(&counters);
                if !recap.is_empty() {
                    self.push(EntryKind::Recap(recap));
                }
                self.end_busy();
            }
        }
    }

    /// A subagent's event, in its `task` call's block: each of its tool
    /// calls (and failures, and its end) a line there; the last line of
    /// what it writes, the status line.
    fn child(&mut self, parent: &str, agent: &str, event: Event, now: Instant) {
        let line = match event {
            Event::ToolStart { info } => format!("↳ {}: {}\n", info.tool, info.title),
            Event::ToolEnd {
                status: ToolStatus::Failed,
                output,
                ..
            } => format!("  ✗ {}\n", output.lines().next().unwrap_or_default()),
            Event::Notice { text } | Event::Error { text } => format!("{text}\n"),
            Event::TurnEnd {
                prompt_tokens,
                completion_tokens,
                ..
            } => format!(
                "{agent} done · in {} · out {}\n\n",
                mm_ui::short_count(prompt_tokens),
                mm_ui::short_count(completion_tokens)
            ),
            Event::Text { text } => {
                if let Some(last) = text.lines().rev().find(|l| !l.trim().is_empty()) {
                    self.set_status(&format!("{agent}: {last}"), now);
                }
                return;
            }
            Event::Status { text } => {
                self.set_status(&format!("{agent}: {text}"), now);
                return;
            }
            _ => return,
        };
        self.edit_tool(parent, |t| {
            t.output.push_str(&line);
            keep_tail(t);
        });
    }

    /// A chunk of the answer: it grows the open answer or opens one.
    fn answer(&mut self, text: String, now: Instant) {
        if text.is_empty() {
            return;
        }
        self.turn_chars += text.chars().count();
        match self.open_answer {
            Some(i) => self.edit(i, |k| {
                if let EntryKind::Answer(all) = k {
                    all.push_str(&text);
                }
            }),
            None => {
                let i = self.push(EntryKind::Answer(text));
                self.open_answer = Some(i);
            }
        }
        self.set_status("Writing", now);
    }

    /// A chunk of reasoning: it grows the open thinking block or opens
    /// one, folded.
    fn thinking(&mut self, text: String, now: Instant) {
        if text.is_empty() {
            return;
        }
        self.turn_chars += text.chars().count();
        self.set_status("Thinking", now);
        match self.open_thinking {
            Some(i) => self.edit(i, |k| {
                if let EntryKind::Thinking { text: all, .. } = k {
                    all.push_str(&text);
                }
            }),
            None => {
                let i = self.push(EntryKind::Thinking {
                    text,
                    expanded: false,
                });
                self.open_thinking = Some(i);
            }
        }
    }

    /// A call's block, pending until it runs; an edit keeps its diff.
    fn tool_started(&mut self, info: ToolInfo, now: Instant) {
        self.set_status(&format!("Running {}", info.tool), now);
        self.push(EntryKind::Tool(ToolEntry {
            id: info.id,
            tool: info.tool,
            title: info.title,
            state: ToolState::Pending,
            started: now,
            elapsed: None,
            output: String::new(),
            live_dropped: 0,
            diff: info
                .change
                .map(|c: FileChange| c.diff)
                .filter(|d| !d.is_empty()),
            expanded: false,
        }));
    }
}

/// Drop the front of a running call's output past [`LIVE_KEEP`], at a
/// line break, counting the lines dropped.
fn keep_tail(t: &mut ToolEntry) {
    if t.output.len() <= LIVE_KEEP {
        return;
    }
    let mut cut = t.output.len() - LIVE_KEEP / 2;
    while !t.output.is_char_boundary(cut) {
        cut += 1;
    }
    let cut = t.output[cut..].find('\n').map_or(cut, |at| cut + at + 1);
    t.live_dropped += t.output[..cut].matches('\n').count();
    t.output.drain(..cut);
}

/// The counters line after a turn (docs/design.md#notices).
pub fn recap(counters: &Counters) -> String {
    counters.recap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_ui::{ToolInfo, ToolKind};

    fn info(id: &str, command: &str) -> ToolInfo {
        ToolInfo {
            id: id.into(),
            tool: "bash".into(),
            family: mm_ui::ToolFamily::Command,
            echoes: true,
            title: command.into(),
            kind: ToolKind::Execute,
            input: serde_json::json!({ "command": command }),
            locations: Vec::new(),
            change: None,
        }
    }

    #[test]
    fn chunks_append_to_one_answer_until_the_next_request() {
        let now = Instant::now();
        let mut t = Transcript::new();
        t.start_turn("hi", now);
        t.apply(
            Event::Reasoning {
                text: "let me ".into(),
            },
            now,
        );
        t.apply(
            Event::Reasoning {
                text: "think".into(),
            },
            now,
        );
        t.apply(Event::Text { text: "Hel".into() }, now);
        t.apply(Event::Text { text: "lo".into() }, now);
        let kinds: Vec<_> = t.entries().iter().map(|e| e.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![
                EntryKind::Question("hi".into()),
                EntryKind::Thinking {
                    text: "let me think".into(),
                    expanded: false
                },
                EntryKind::Answer("Hello".into()),
            ]
        );
        // The next request of the turn starts a new answer.
        t.apply(
            Event::Status {
                text: "Thinking".into(),
            },
            now,
        );
        t.apply(
            Event::Text {
                text: "Again".into(),
            },
            now,
        );
        assert_eq!(t.len(), 4);
        assert_eq!(t.entries()[3].kind, EntryKind::Answer("Again".into()));
    }

    #[test]
    fn a_tool_call_goes_from_pending_to_done_with_its_time() {
        let t0 = Instant::now();
        let mut t = Transcript::new();
        t.apply(
            Event::ToolStart {
                info: info("c1", "ls"),
            },
            t0,
        );
        t.apply(
            Event::ToolRunning { id: "c1".into() },
            t0 + Duration::from_millis(100),
        );
        let EntryKind::Tool(tool) = &t.entries()[0].kind else {
            panic!()
        };
        assert_eq!(tool.state, ToolState::Running);
        let rev = t.entries()[0].rev;
        t.apply(
            Event::ToolEnd {
                id: "c1".into(),
                tool: "bash".into(),
                status: ToolStatus::Completed,
                output: "a\nb\n".into(),
                preview: vec![],
            },
            t0 + Duration::from_millis(1600),
        );
        let EntryKind::Tool(tool) = &t.entries()[0].kind else {
            panic!()
        };
        assert_eq!(tool.state, ToolState::Done);
        assert_eq!(tool.elapsed, Some(Duration::from_millis(1500)));
        assert_eq!(tool.output, "a\nb\n");
        assert!(t.entries()[0].rev > rev, "a change must move the revision");
        assert!(t.toggle(0));
        let EntryKind::Tool(tool) = &t.entries()[0].kind else {
            panic!()
        };
        assert!(tool.expanded);
    }

    #[test]
    fn turn_end_takes_the_sessions_tokens_and_the_recap_and_ends_busy() {
        let now = Instant::now();
        let mut t = Transcript::new();
        t.start_turn("q", now);
        assert!(t.is_busy());
        let counters = Counters {
            commands: 2,
            file_ops: 1,
            ..Counters::default()
        };
        t.apply(
            Event::Tokens {
                session: mm_ui::TokenCounts {
                    prompt: 10,
                    completion: 5,
                    cached: 4,
                },
                context: 15,
                window: 100,
            },
            now,
        );
        t.apply(
            Event::TurnEnd {
                outcome: TurnOutcome::Done,
                counters,
                prompt_tokens: 10,
                completion_tokens: 5,
                cached_tokens: 4,
            },
            now,
        );
        assert!(!t.is_busy());
        assert_eq!(t.context, (15, 100));
        assert_eq!(
            t.tokens,
            mm_ui::TokenCounts {
                prompt: 10,
                completion: 5,
                cached: 4,
            }
        );
        assert_eq!(
            t.entries().last().map(|e| e.kind.clone()),
            Some(EntryKind::Recap("⚙ 2 command(s)  📝 1 file op(s)".into()))
        );
    }
}
