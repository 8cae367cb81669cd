//! What both terminal front ends say about keys, the queue and the turn's
//! progress, said once here so the REPL and the window never drift apart.
//! The front ends only place these words on their screens.

use std::time::Duration;

/// One interrupt model for both front ends: Esc or Ctrl-C stop a turn,
/// Ctrl-C on a draft clears it, Ctrl-D on an empty input or Ctrl-C twice
/// on an empty input quits. The first Ctrl-C on an empty input shows this.
pub const QUIT_HINT: &str = "Press Ctrl-C again to quit";

/// A second Ctrl-C on an empty input within this quits.
pub const QUIT_WINDOW: Duration = Duration::from_secs(3);

/// The keys of the interrupt model, for banners and `/help`.
pub const INTERRUPT_KEYS: &str =
    "Esc or Ctrl-C stops a turn · Ctrl-C clears the line · Ctrl-D or Ctrl-C twice quits";

/// The input history the REPL and the window share, in mm's data folder
/// (rustyline's file format).
pub const HISTORY_FILE: &str = "repl_history";

/// What the status line offers while a turn runs.
pub const INTERRUPT_OFFER: &str = "Esc to interrupt";

/// The one status line a running turn keeps on screen:
/// `Writing 12s · ~340 tokens · Esc to interrupt` (the spinner's glyph is
/// the front end's). `tokens` is the estimate of what the model wrote this
/// turn; none is shown before the first.
pub fn status_line(label: &str, secs: u64, tokens: u64) -> String {
    let mut line = label.to_owned();
    if secs > 0 {
        line.push_str(&format!(" {secs}s"));
    }
    if tokens > 0 {
        line.push_str(&format!(" · ~{} tokens", crate::short_count(tokens)));
    }
    line.push_str(" · ");
    line.push_str(INTERRUPT_OFFER);
    line
}

/// Tokens the model wrote, estimated from the characters streamed (four a
/// token) until the server counts them at the end of the request.
pub fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// A message typed while the model works, as it waits.
pub fn queued_line(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    let more = if text.lines().count() > 1 { " …" } else { "" };
    format!("queued: {first}{more}")
}

/// Said under the queue: when it goes, and how to take it back.
pub const QUEUE_HINT: &str =
    "sent when the turn ends · Esc stops the turn and puts them back in the input";

/// After Esc with messages queued: where they went.
pub fn unqueued_line(n: usize) -> String {
    format!(
        "{n} queued message{} put back in the input",
        if n == 1 { "" } else { "s" }
    )
}

/// What `notify` sends to a terminal in the background when a turn ends
/// or a permission waits: a desktop notice by OSC 9 (`osc9`), else the
/// bell. `text` is sanitised and kept on one line.
pub fn notice_sequence(osc9: bool, text: &str) -> String {
    if osc9 {
        let clean = crate::sanitize(text).replace(['\n', '\t'], " ");
        format!("\x1b]9;{clean}\x07")
    } else {
        "\x07".to_owned()
    }
}

/// Whether the terminal is known to show OSC 9 notices (`notify: auto`):
/// iTerm2, WezTerm, Ghostty and kitty.
pub fn shows_osc9(term_program: Option<&str>, term: Option<&str>) -> bool {
    matches!(
        term_program,
        Some("iTerm.app" | "WezTerm" | "ghostty" | "Ghostty")
    ) || term.is_some_and(|t| t.contains("kitty") || t.contains("ghostty"))
}

/// The notice's words when a turn ended.
pub const NOTICE_DONE: &str = "mm: the answer is ready";

/// The notice's words when a permission waits.
pub const NOTICE_ASKING: &str = "mm: a permission question waits";

/// The keys that answer a permission prompt, as the prompt says them.
pub const PERMISSION_KEYS: &str =
    "[y/a/Enter] allow once · [s] allow for this session · [n/r] reject";

/// The keys that answer whether to carry out a plan.
pub const PLAN_KEYS: &str =
    "[y/a/Enter] yes, asking first · [s] yes, without asking · [n/r] stay in plan mode";

/// What a permission key means. Enter, `y` and `a` allow once; `s` allows
/// for the session; `n` and `r` reject (the front end then asks why).
pub fn permission_key(c: char) -> Option<crate::Decision> {
    use crate::Decision;
    match c.to_ascii_lowercase() {
        'y' | 'a' | '\r' | '\n' => Some(Decision::AllowOnce),
        's' => Some(Decision::AllowAlways),
        'n' | 'r' => Some(Decision::Reject),
        _ => None,
    }
}

/// The token line after a turn and on the status bar: how full the
/// model's window is, then what the session sent and received in all
/// (`context 52% of 32k · session in 145k (120k cached) · out 2.1k`).
pub fn tokens_line(session: &crate::TokenCounts, context: u64, window: u64) -> String {
    let share = match context.saturating_mul(100).checked_div(window) {
        Some(p) => format!(
            "context {}% of {} · ",
            p.min(100),
            crate::short_count(window)
        ),
        None => String::new(),
    };
    let cached = if session.cached > 0 {
        format!(" ({} cached)", crate::short_count(session.cached))
    } else {
        String::new()
    };
    format!(
        "{share}session in {}{cached} · out {}",
        crate::short_count(session.prompt),
        crate::short_count(session.completion)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_names_the_work_its_time_tokens_and_the_key() {
        assert_eq!(status_line("Thinking", 0, 0), "Thinking · Esc to interrupt");
        assert_eq!(
            status_line("Writing", 12, 340),
            "Writing 12s · ~340 tokens · Esc to interrupt"
        );
        assert_eq!(estimate_tokens(9), 3);
    }

    #[test]
    fn permission_keys_take_yes_no_and_enter() {
        use crate::Decision;
        assert_eq!(permission_key('y'), Some(Decision::AllowOnce));
        assert_eq!(permission_key('\r'), Some(Decision::AllowOnce));
        assert_eq!(permission_key('S'), Some(Decision::AllowAlways));
        assert_eq!(permission_key('n'), Some(Decision::Reject));
        assert_eq!(permission_key('x'), None);
    }

    #[test]
    fn the_token_line_labels_its_parts() {
        let t = crate::TokenCounts {
            prompt: 145_000,
            completion: 2100,
            cached: 0,
        };
        assert_eq!(
            tokens_line(&t, 17_000, 32768),
            "context 51% of 32k · session in 145k · out 2.1k"
        );
        assert_eq!(queued_line("a\nb"), "queued: a …");
    }
}
