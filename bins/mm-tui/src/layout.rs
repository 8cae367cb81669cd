//! The layout function: where each part of the window goes for a screen
//! size. Pure, so that every size (tiny ones included) is easy to test.

use ratatui::layout::Rect;

/// The parts of the window, top to bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub transcript: Rect,
    /// The model's checklist, while a turn runs and it keeps one.
    pub plan: Option<Rect>,
    /// Messages queued while a turn runs.
    pub queue: Option<Rect>,
    /// The permission prompt, when one is up.
    pub prompt: Option<Rect>,
    /// The command picker or the path completions.
    pub popup: Option<Rect>,
    /// The rule above the input box.
    pub rule: Rect,
    pub input: Rect,
    pub status: Rect,
}

/// What wants room besides the transcript: rows of each part's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wants {
    /// Rows of text in the input box (at least 1).
    pub input: u16,
    /// Rows of the permission prompt's content (0: none).
    pub prompt: u16,
    /// Rows of the popup's content (0: none).
    pub popup: u16,
    /// Rows of the checklist (0: none).
    pub plan: u16,
    /// Rows of the queue (0: none).
    pub queue: u16,
}

/// Most rows the input box takes before it scrolls.
pub const MAX_INPUT_ROWS: u16 = 8;

/// Split `area`. The status bar and one input row always get room first;
/// the prompt next (it must be answered), then the popup, then more input
/// rows; the transcript gets what is left.
pub fn layout(area: Rect, wants: Wants) -> Areas {
    let mut left = area.height;
    let mut take = |want: u16| {
        let got = want.min(left);
        left -= got;
        got
    };
    let status = take(1);
    let input_min = take(1);
    let rule = take(1);
    // Prompt and popup have a border row above and below.
    let prompt = if wants.prompt > 0 {
        take(wants.prompt + 2)
    } else {
        0
    };
    let popup = if wants.popup > 0 {
        take(wants.popup + 1)
    } else {
        0
    };
    let more_input = take(wants.input.clamp(1, MAX_INPUT_ROWS) - 1);
    let queue = take(wants.queue);
    // The checklist has a border row above; it gives way to the rest.
    let plan = if wants.plan > 0 {
        take(wants.plan + 1)
    } else {
        0
    };
    // Keep at least a few transcript rows when the screen allows.
    let transcript = left;

    let mut y = area.y;
    let mut next = |h: u16| {
        let r = Rect::new(area.x, y, area.width, h);
        y += h;
        r
    };
    let transcript = next(transcript);
    let plan = (plan > 0).then(|| next(plan));
    let queue = (queue > 0).then(|| next(queue));
    let prompt = (prompt > 0).then(|| next(prompt));
    let popup = (popup > 0).then(|| next(popup));
    let rule = next(rule);
    let input = next(input_min + more_input);
    let status = next(status);
    Areas {
        transcript,
        plan,
        queue,
        prompt,
        popup,
        rule,
        input,
        status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_stack_without_gaps_and_fill_the_screen() {
        let area = Rect::new(0, 0, 80, 24);
        let a = layout(
            area,
            Wants {
                input: 3,
                prompt: 4,
                popup: 5,
                plan: 0,
                queue: 0,
            },
        );
        assert_eq!(a.status, Rect::new(0, 23, 80, 1));
        assert_eq!(a.input, Rect::new(0, 20, 80, 3));
        assert_eq!(a.rule.y, 19);
        assert_eq!(a.popup, Some(Rect::new(0, 13, 80, 6)));
        assert_eq!(a.prompt, Some(Rect::new(0, 7, 80, 6)));
        assert_eq!(a.transcript, Rect::new(0, 0, 80, 7));
    }

    #[test]
    fn a_tiny_screen_keeps_status_and_input() {
        let a = layout(
            Rect::new(0, 0, 10, 2),
            Wants {
                input: 5,
                prompt: 3,
                popup: 0,
                plan: 0,
                queue: 0,
            },
        );
        assert_eq!(a.status.height, 1);
        assert_eq!(a.input.height, 1);
        assert_eq!(a.transcript.height, 0);
        assert_eq!(a.prompt, None);
        // Input rows are capped.
        let a = layout(
            Rect::new(0, 0, 80, 40),
            Wants {
                input: 50,
                ..Wants::default()
            },
        );
        assert_eq!(a.input.height, MAX_INPUT_ROWS);
    }
}
