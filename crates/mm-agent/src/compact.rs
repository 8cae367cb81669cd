//! Context compression (docs/reference/settings.md#the-models-window): when
//! the history outgrows the window, a tool-less summary request replaces the
//! older messages with one summary, and the latest exchanges are kept
//! verbatim. The cut never
//! separates a tool call from its result, and the question being worked on
//! is never lost.

use mm_engine::{Engine, Message};
use tokio_util::sync::CancellationToken;

/// The fixed prefix of the user message that carries a summary.
pub const SUMMARY_PREFIX: &str =
    "[summary of earlier work in this session, written to save context]\n";

/// The system prompt of a summary request when the session's own would
/// not leave room in the window.
pub const SUMMARY_SYSTEM: &str =
    "You summarise a coding session between a user and an assistant that uses tools.";

/// Put before the summary of the older part when the next part is
/// summarised with it.
pub const SUMMARY_SO_FAR: &str = "[summary of the work before the messages below]\n";

/// The smallest summary worth asking for: below it, a window too small to
/// hold one drops the older messages instead.
pub const MIN_SUMMARY_TOKENS: u64 = 48;

/// Put before the question a summary carries when the kept tail lacks it.
const QUESTION_HEADER: &str = "\n\nThe question being worked on:\n";

/// The instruction sent with the summary request; `focus` is the user's
/// `/compact <focus>` line.
pub fn instruction(focus: Option<&str>) -> String {
    let mut text = String::from(
        "Write a working summary of the conversation above so that the work can continue from it alone. \
Cover: the user's goal; decisions made; files read, created or changed (with paths); commands run and their outcome; \
what is left to do. Be concise and factual; do not invent anything.",
    );
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        text.push_str("\nFocus especially on: ");
        text.push_str(focus);
    }
    text
}

/// Characters a message contributes to the request (what is sent).
pub fn message_chars(message: &Message) -> usize {
    match message {
        Message::System { content } | Message::User { content, .. } => content.len(),
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            content.len()
                + reasoning
                    .iter()
                    .filter(|r| r.signature.is_some() || r.redacted.is_some())
                    .map(|r| r.text.len())
                    .sum::<usize>()
                + tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len() + 16)
                    .sum::<usize>()
        }
        Message::Tool { content, .. } => content.len() + 16,
    }
}

/// Cheap token estimate: characters / 4, or scaled by the ratio of tokens
/// to characters the server last reported.
pub fn estimate_tokens(chars: usize, tokens_per_char: Option<f64>) -> u64 {
    match tokens_per_char {
        Some(r) if r.is_finite() && r > 0.0 => (chars as f64 * r).ceil() as u64,
        _ => chars.div_ceil(4) as u64,
    }
}

/// `text` cut to at most `max` characters, keeping its head and tail
/// around a line that says how much was left out (old tool output in a
/// summary request, a summary longer than its share of the window).
pub fn elide(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let marker = |n: usize| format!("\n[… {n} characters left out …]\n");
    let room = max.saturating_sub(marker(total).chars().count());
    let head = room / 2;
    let tail = room - head;
    let mut out: String = text.chars().take(head).collect();
    out.push_str(&marker(total - head - tail));
    out.extend(text.chars().skip(total - tail));
    out
}

/// The next piece of `history[from..to]` for one summary request: the
/// messages from `from` whose characters fit `budget`, each tool result
/// and each message cut to a share of it, and the index after the last
/// one taken. At least one message is taken, so the summary always moves
/// forward.
pub fn next_piece(
    history: &[Message],
    from: usize,
    to: usize,
    budget: usize,
) -> (usize, Vec<Message>) {
    // Old tool output is what fills a window: a result keeps at most a
    // quarter of the piece.
    let tool_share = (budget / 4).max(200);
    let mut used = 0;
    let mut piece = Vec::new();
    let mut at = from;
    while at < to {
        let remaining = budget.saturating_sub(used);
        let mut m = history[at].clone();
        let limit = match &m {
            Message::Tool { .. } => tool_share,
            _ => budget,
        };
        shorten(&mut m, limit);
        if message_chars(&m) > remaining {
            // Too long for what is left: shortened to it when that still
            // keeps half a piece, else it opens the next piece.
            if !piece.is_empty() && remaining < budget / 2 {
                break;
            }
            shorten(&mut m, remaining.saturating_sub(16).max(200));
        }
        used += message_chars(&m);
        piece.push(m);
        at += 1;
    }
    (at, piece)
}

/// `message`'s text (its content, or a tool's result) cut to `max`.
fn shorten(message: &mut Message, max: usize) {
    match message {
        Message::Tool { content, .. }
        | Message::User { content, .. }
        | Message::System { content }
        | Message::Assistant { content, .. } => *content = elide(content, max),
    }
}

/// Where the verbatim tail starts: the smallest index whose suffix fits in
/// `keep_tokens`, moved forward to a message that is not a tool result (so
/// every kept result keeps its call). May return `history.len()` (keep
/// nothing).
pub fn cut_index(history: &[Message], keep_tokens: u64, tokens_per_char: Option<f64>) -> usize {
    let mut chars = 0usize;
    let mut cut = history.len();
    for (i, m) in history.iter().enumerate().rev() {
        chars += message_chars(m);
        if estimate_tokens(chars, tokens_per_char) > keep_tokens {
            break;
        }
        cut = i;
    }
    while cut < history.len() && matches!(history[cut], Message::Tool { .. }) {
        cut += 1;
    }
    cut
}

/// Whether compacting at `cut` would shorten the history: not when all it
/// would replace is the question being worked on, which a compacted
/// history carries again.
pub fn shortens(history: &[Message], cut: usize) -> bool {
    let tail_has_question = history[cut.min(history.len())..]
        .iter()
        .any(|m| matches!(m, Message::User { .. }));
    match cut {
        0 => false,
        1 => tail_has_question || !matches!(history[0], Message::User { .. }),
        _ => true,
    }
}

/// The compacted history: the summary message, then the kept tail. When the
/// tail does not hold the last question, the summary message carries it.
pub fn rebuild(history: &[Message], cut: usize, summary: &str) -> Vec<Message> {
    let tail = &history[cut.min(history.len())..];
    let mut text = String::from(SUMMARY_PREFIX);
    text.push_str(summary.trim());
    let tail_has_question = tail.iter().any(|m| matches!(m, Message::User { .. }));
    if !tail_has_question {
        // The latest question, or the one an earlier summary carried.
        let last_question = history[..cut.min(history.len())]
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content, .. } if !content.starts_with(SUMMARY_PREFIX) => {
                    Some(content.as_str())
                }
                Message::User { content, .. } => {
                    content.split_once(QUESTION_HEADER).map(|(_, q)| q)
                }
                _ => None,
            });
        if let Some(question) = last_question {
            text.push_str(QUESTION_HEADER);
            text.push_str(question);
        }
    }
    let mut out = Vec::with_capacity(tail.len() + 1);
    out.push(Message::user(text));
    out.extend_from_slice(tail);
    out
}

/// The history without its messages before `cut`, and no summary: the
/// kept tail, led by the latest question when the tail lacks it.
pub fn rebuild_without_summary(history: &[Message], cut: usize) -> Vec<Message> {
    let tail = &history[cut.min(history.len())..];
    let mut out = Vec::with_capacity(tail.len() + 1);
    if !tail.iter().any(|m| matches!(m, Message::User { .. })) {
        let question = history[..cut.min(history.len())]
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content, .. } if !content.starts_with(SUMMARY_PREFIX) => {
                    Some(content.clone())
                }
                Message::User { content, .. } => content
                    .split_once(QUESTION_HEADER)
                    .map(|(_, q)| q.to_owned()),
                _ => None,
            });
        out.extend(question.map(Message::user));
    }
    out.extend_from_slice(tail);
    out
}

/// Characters of what every request carries: the system prompt and the
/// tool declarations.
pub fn fixed_chars(system: &str, decls: &[mm_engine::ToolDecl]) -> usize {
    system.len()
        + decls
            .iter()
            .map(|d| d.name.len() + d.description.len() + d.parameters.to_string().len())
            .sum::<usize>()
}

/// What a summary may take, in tokens: the window, the room a compacted
/// history has beside the fixed part, the longest answer asked for
/// (`maxTokens`), and the tokens per character last measured.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The model's window.
    pub window: u64,
    /// What a compacted history may hold beside the system prompt and
    /// the tools, an eighth of the window left for the answer.
    pub history_room: u64,
    /// `maxTokens`.
    pub max_tokens: u64,
    /// Tokens per character, as the server last counted.
    pub ratio: Option<f64>,
}

impl Budget {
    /// The room a compacted history has in `window` beside a fixed part of
    /// `fixed_chars`.
    pub fn history_room(window: u64, fixed_chars: usize, ratio: Option<f64>) -> u64 {
        window.saturating_sub(estimate_tokens(fixed_chars, ratio) + window / 8)
    }

    /// How long a summary may be; below [`MIN_SUMMARY_TOKENS`] there is no
    /// room for one.
    pub fn summary_tokens(&self) -> u64 {
        (self.window / 4)
            .min(self.history_room / 2)
            .min(self.max_tokens)
    }

    fn chars_of(&self, tokens: u64) -> usize {
        (tokens as f64 / self.ratio.unwrap_or(0.25)) as usize
    }
}

/// The summary of `history[..cut]` from `engine`, in requests that fit the
/// window however long the history is: the older part piece by piece,
/// oldest first, each piece with the summary so far, old tool output cut
/// short; each summary asked to be, and cut to, at most
/// [`Budget::summary_tokens`]. `system` is the session's system prompt,
/// sent when it takes a small part of the room (the server's cached prefix
/// stays). `None` when the window leaves no room for a summary.
pub async fn summarise(
    engine: &Engine,
    history: &[Message],
    cut: usize,
    system: &str,
    focus: Option<&str>,
    budget: Budget,
    cancel: &CancellationToken,
) -> Result<Option<String>, String> {
    let summary_tokens = budget.summary_tokens();
    if summary_tokens < MIN_SUMMARY_TOKENS {
        return Ok(None);
    }
    let instruction = instruction(focus);
    let summary_chars = budget.chars_of(summary_tokens);
    // What one request may carry: nine tenths of the window, less the
    // answer's room.
    let input = budget.chars_of((budget.window * 9 / 10).saturating_sub(summary_tokens));
    let system = if system.len() <= input / 10 {
        system
    } else {
        SUMMARY_SYSTEM
    };
    let fixed = system.len() + instruction.len() + SUMMARY_SO_FAR.len();
    let engine = engine.with_max_tokens(summary_tokens);
    let mut summary: Option<String> = None;
    let mut from = 0;
    let cut = cut.min(history.len());
    while from < cut {
        let room = input
            .saturating_sub(fixed + summary.as_ref().map_or(0, String::len))
            .max(400);
        let (to, piece) = next_piece(history, from, cut, room);
        let mut messages = vec![Message::system(system.to_owned())];
        if let Some(so_far) = &summary {
            messages.push(Message::user(format!("{SUMMARY_SO_FAR}{so_far}")));
        }
        messages.extend(piece);
        let text = engine
            .summarize(&messages, &instruction, cancel)
            .await
            .map_err(|e| e.error.to_string())?;
        summary = Some(elide(text.trim(), summary_chars));
        from = to;
    }
    Ok(Some(summary.unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm_engine::ToolCall;

    fn call(id: &str) -> Message {
        Message::Assistant {
            content: String::new(),
            reasoning: vec![],
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: "{\"command\":\"ls\"}".into(),
            }],
        }
    }

    #[test]
    fn the_cut_never_starts_at_a_tool_result() {
        let history = vec![
            Message::user("q1"),
            call("a"),
            Message::tool("a", "bash", "x".repeat(400)),
            Message::tool("a", "bash", "y".repeat(40)),
            Message::assistant("done"),
        ];
        // Budget that would start the tail at the second tool result.
        let cut = cut_index(&history, 16, None);
        assert!(!matches!(history[cut], Message::Tool { .. }) || cut == history.len());
        assert_eq!(cut, 4);
    }

    #[test]
    fn the_question_survives_when_the_tail_lacks_it() {
        let history = vec![
            Message::user("fix the parser"),
            call("a"),
            Message::tool("a", "bash", "ok"),
        ];
        let out = rebuild(&history, 1, "did things");
        match &out[0] {
            Message::User { content, .. } => {
                assert!(content.starts_with(SUMMARY_PREFIX));
                assert!(content.ends_with("The question being worked on:\nfix the parser"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(&out[1..], &history[1..]);
    }

    #[test]
    fn a_second_compaction_still_carries_the_question() {
        let history = vec![
            Message::user("fix the parser"),
            call("a"),
            Message::tool("a", "bash", "ok"),
        ];
        let once = rebuild(&history, 1, "first summary");
        // The tail is compacted away too: only the summary is left to carry it.
        let twice = rebuild(&once, once.len(), "second summary");
        match &twice[0] {
            Message::User { content, .. } => {
                assert!(
                    content.ends_with("The question being worked on:\nfix the parser"),
                    "{content}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn elide_keeps_head_and_tail_within_the_limit() {
        let text: String = (0..500)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let cut = elide(&text, 100);
        assert!(cut.chars().count() <= 100, "{}", cut.chars().count());
        assert!(cut.starts_with("abc"));
        assert!(cut.ends_with(&text[text.len() - 10..]));
        assert!(cut.contains("characters left out"));
        assert_eq!(elide("short", 100), "short");
    }

    #[test]
    fn pieces_cover_the_history_in_order_and_fit() {
        let mut history = Vec::new();
        for i in 0..40 {
            history.push(Message::user(format!("question {i} {}", "x".repeat(300))));
            history.push(call(&format!("c{i}")));
            history.push(Message::tool(format!("c{i}"), "bash", "y".repeat(5000)));
        }
        let budget = 2000;
        let mut from = 0;
        let mut pieces = 0;
        while from < history.len() {
            let (to, piece) = next_piece(&history, from, history.len(), budget);
            assert!(to > from);
            assert_eq!(piece.len(), to - from);
            let chars: usize = piece.iter().map(message_chars).sum();
            assert!(chars <= budget || piece.len() == 1, "{chars}");
            from = to;
            pieces += 1;
        }
        assert!(pieces > 10, "{pieces}");
    }

    #[test]
    fn estimate_uses_the_reported_ratio() {
        assert_eq!(estimate_tokens(400, None), 100);
        assert_eq!(estimate_tokens(400, Some(0.5)), 200);
    }

    #[test]
    fn focus_joins_the_instruction() {
        assert!(instruction(Some("the lexer")).ends_with("Focus especially on: the lexer"));
        assert!(!instruction(Some("  ")).contains("Focus"));
    }
}
