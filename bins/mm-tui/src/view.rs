//! Entries as wrapped screen rows, cached per entry (keyed by its revision,
//! the width, and whatever else changes its look), and the scroll position.
//! A frame wraps only the entries it shows: the walk starts at the anchor
//! (or the bottom) and stops when the screen is full, so a transcript of
//! thousands of entries costs what the visible ones cost.

use std::time::{Duration, Instant};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::markdown;
use crate::transcript::{Entry, EntryKind, ToolEntry, ToolState, Transcript};
use crate::wrap::{self, Mode};

/// What, besides an entry, decides how it looks.
#[derive(Debug, Clone, Copy)]
pub struct Look {
    pub width: u16,
    pub now: Instant,
    /// Spinner frame of running tools.
    pub tick: u64,
    pub selected: Option<usize>,
}

/// Where the transcript is scrolled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scroll {
    /// Follow the end: new lines push the view up.
    #[default]
    Bottom,
    /// The top row of the screen is row `row` of entry `entry`.
    At { entry: usize, row: usize },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    rev: u64,
    selected: bool,
    /// Changes every second (and every spinner tick) for a running tool.
    dynamic: u64,
}

#[derive(Debug, Clone)]
struct Slot {
    key: Key,
    rows: Vec<Line<'static>>,
}

/// Wrapped rows of each entry for one width.
#[derive(Debug, Default)]
pub struct Cache {
    width: u16,
    epoch: u64,
    slots: Vec<Option<Slot>>,
    /// Entries wrapped since the cache was made (tests and the benchmark).
    pub misses: u64,
}

impl Cache {
    pub fn new() -> Cache {
        Cache::default()
    }

    /// Rows of entry `i`, wrapping it only if it changed.
    pub fn rows(&mut self, t: &Transcript, i: usize, look: &Look) -> &[Line<'static>] {
        if self.width != look.width || self.epoch != t.epoch {
            self.width = look.width;
            self.epoch = t.epoch;
            self.slots.clear();
        }
        if self.slots.len() < t.len() {
            self.slots.resize(t.len(), None);
        }
        self.slots.truncate(t.len());
        let entries = t.entries();
        let entry = &entries[i];
        let key = Key {
            rev: entry.rev,
            selected: look.selected == Some(i),
            dynamic: dynamic(entry, look),
        };
        let fresh = matches!(&self.slots[i], Some(slot) if slot.key == key);
        if !fresh {
            self.misses += 1;
            let prev = i.checked_sub(1).map(|p| &entries[p].kind);
            let rows = entry_rows(entry, prev, look, key.selected);
            self.slots[i] = Some(Slot { key, rows });
        }
        match &self.slots[i] {
            Some(slot) => &slot.rows,
            None => &[],
        }
    }

    pub fn count(&mut self, t: &Transcript, i: usize, look: &Look) -> usize {
        self.rows(t, i, look).len()
    }
}

fn dynamic(entry: &Entry, look: &Look) -> u64 {
    match &entry.kind {
        EntryKind::Tool(tool) if tool.state == ToolState::Running => {
            let secs = look.now.saturating_duration_since(tool.started).as_secs();
            secs * 16 + look.tick % 10
        }
        _ => 0,
    }
}

/// The rows that fill a screen of `height` at `scroll`; `scroll` is moved
/// to `Bottom` when the anchor would leave space under the last entry.
pub fn visible(
    t: &Transcript,
    cache: &mut Cache,
    look: &Look,
    height: usize,
    scroll: &mut Scroll,
) -> Vec<Line<'static>> {
    if height == 0 || t.is_empty() {
        return Vec::new();
    }
    if let Scroll::At { entry, row } = *scroll {
        if entry >= t.len() {
            *scroll = Scroll::Bottom;
        } else {
            let mut out = Vec::with_capacity(height);
            let mut i = entry;
            let mut skip = row;
            let mut at_end = false;
            while i < t.len() && out.len() < height {
                let rows = cache.rows(t, i, look);
                let take = height - out.len();
                at_end = i + 1 == t.len() && skip + take >= rows.len();
                out.extend(rows.iter().skip(skip).take(take).cloned());
                skip = 0;
                i += 1;
            }
            if out.len() == height && !at_end {
                return out;
            }
            // The end is on screen: follow it again.
            *scroll = Scroll::Bottom;
        }
    }
    // From the bottom up.
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut have = 0;
    let mut i = t.len();
    while i > 0 && have < height {
        i -= 1;
        let rows = cache.rows(t, i, look);
        let take = (height - have).min(rows.len());
        chunks.push(rows[rows.len() - take..].to_vec());
        have += take;
    }
    chunks.into_iter().rev().flatten().collect()
}

/// The top row of the screen as a position, whatever the scroll mode.
pub fn top(
    t: &Transcript,
    cache: &mut Cache,
    look: &Look,
    height: usize,
    scroll: Scroll,
) -> Scroll {
    if let Scroll::At { .. } = scroll {
        return scroll;
    }
    let mut left = height;
    let mut i = t.len();
    while i > 0 {
        i -= 1;
        let n = cache.count(t, i, look);
        if n >= left {
            return Scroll::At {
                entry: i,
                row: n - left,
            };
        }
        left -= n;
    }
    Scroll::At { entry: 0, row: 0 }
}

/// Scroll up by `n` rows (PageUp, the wheel).
pub fn up(
    t: &Transcript,
    cache: &mut Cache,
    look: &Look,
    height: usize,
    scroll: Scroll,
    n: usize,
) -> Scroll {
    if t.is_empty() {
        return Scroll::Bottom;
    }
    let Scroll::At { mut entry, mut row } = top(t, cache, look, height, scroll) else {
        return Scroll::Bottom;
    };
    let mut n = n;
    while n > 0 {
        if row >= n {
            row -= n;
            break;
        }
        n -= row;
        if entry == 0 {
            row = 0;
            break;
        }
        entry -= 1;
        row = cache.count(t, entry, look);
    }
    Scroll::At { entry, row }
}

/// Scroll down by `n` rows; back to `Bottom` once the end is reached.
pub fn down(
    t: &Transcript,
    cache: &mut Cache,
    look: &Look,
    height: usize,
    scroll: Scroll,
    n: usize,
) -> Scroll {
    let Scroll::At { mut entry, mut row } = scroll else {
        return Scroll::Bottom;
    };
    let mut n = n;
    while n > 0 && entry < t.len() {
        let count = cache.count(t, entry, look);
        if row + n < count {
            row += n;
            n = 0;
        } else {
            n -= count - row;
            entry += 1;
            row = 0;
        }
    }
    let mut moved = Scroll::At { entry, row };
    // Leave follow mode only while something is below the screen.
    visible(t, cache, look, height, &mut moved);
    moved
}

/// Scroll so that entry `i` is on screen (a newly selected entry).
pub fn reveal(
    t: &Transcript,
    cache: &mut Cache,
    look: &Look,
    height: usize,
    scroll: Scroll,
    i: usize,
) -> Scroll {
    let Scroll::At { entry, row } = top(t, cache, look, height, scroll) else {
        return scroll;
    };
    if i < entry || (i == entry && row > 0) {
        return Scroll::At { entry: i, row: 0 };
    }
    // Rows from the top of the screen to the first row of entry i.
    let above: usize = (entry..i).map(|k| cache.count(t, k, look)).sum::<usize>() - row;
    if above < height {
        return scroll;
    }
    let mut moved = Scroll::At { entry: i, row: 0 };
    visible(t, cache, look, height, &mut moved);
    moved
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Blank rows before an entry, by what came before it.
fn gap(prev: Option<&EntryKind>, cur: &EntryKind) -> usize {
    match (prev, cur) {
        (None, _) => 0,
        (Some(EntryKind::Tool(_)), EntryKind::Tool(_)) => 0,
        (Some(EntryKind::Thinking { .. }), EntryKind::Answer(_)) => 0,
        (Some(EntryKind::Thinking { .. }), EntryKind::Tool(_)) => 0,
        (_, EntryKind::Recap(_)) => 0,
        _ => 1,
    }
}

/// Every row of one entry, wrapped to the width.
pub fn entry_rows(
    entry: &Entry,
    prev: Option<&EntryKind>,
    look: &Look,
    selected: bool,
) -> Vec<Line<'static>> {
    let width = look.width.max(1) as usize;
    let mut rows: Vec<Line<'static>> = Vec::new();
    for _ in 0..gap(prev, &entry.kind) {
        rows.push(Line::default());
    }
    let start = rows.len();
    match &entry.kind {
        EntryKind::Question(q) => {
            let style = Style::default().add_modifier(Modifier::BOLD);
            for (k, line) in wrap::sanitize(q).split('\n').enumerate() {
                let lead = if k == 0 { "› " } else { "  " };
                let line = Line::from(vec![
                    Span::styled(lead, Style::default().fg(Color::Green)),
                    Span::styled(line.to_string(), style),
                ]);
                rows.extend(wrap::wrap(&line, width, 2, Mode::Word));
            }
        }
        EntryKind::Answer(text) => {
            rows.extend(markdown::lines(&wrap::sanitize(text), width));
        }
        EntryKind::Thinking { text, expanded } => {
            let words = text.split_whitespace().count();
            let (mark, hint) = if *expanded {
                ("▾", "")
            } else {
                ("▸", "  (Enter to expand)")
            };
            let hint = if selected { hint } else { "" };
            rows.push(Line::from(Span::styled(
                format!(
                    "{mark} thinking · {words} word{}{hint}",
                    if words == 1 { "" } else { "s" }
                ),
                dim().add_modifier(Modifier::ITALIC),
            )));
            if *expanded {
                let style = dim().add_modifier(Modifier::ITALIC);
                for line in wrap::sanitize(text.trim()).split('\n') {
                    let line =
                        Line::from(vec![Span::raw("  "), Span::styled(line.to_string(), style)]);
                    rows.extend(wrap::wrap(&line, width, 2, Mode::Word));
                }
                // Keep the answer below apart from the open reasoning.
                rows.push(Line::default());
            }
        }
        EntryKind::Tool(tool) => tool_rows(tool, look, width, &mut rows),
        EntryKind::Notice(text) => {
            for line in wrap::sanitize(text).split('\n') {
                rows.extend(wrap::wrap(
                    &Line::from(Span::styled(line.to_string(), dim())),
                    width,
                    0,
                    Mode::Word,
                ));
            }
        }
        EntryKind::Error(text) => {
            let style = Style::default().fg(Color::Red);
            for (k, line) in wrap::sanitize(text).split('\n').enumerate() {
                let lead = if k == 0 { "✗ " } else { "  " };
                let line = Line::from(Span::styled(format!("{lead}{line}"), style));
                rows.extend(wrap::wrap(&line, width, 2, Mode::Word));
            }
        }
        EntryKind::Diff(diff) => {
            for line in wrap::sanitize(diff).split('\n') {
                let style = diff_style(line);
                let line = Line::from(Span::styled(line.to_string(), style));
                rows.extend(wrap::wrap(&line, width, 0, Mode::Glyph));
            }
        }
        EntryKind::Recap(text) => {
            rows.push(Line::from(Span::styled(wrap::truncate(text, width), dim())));
        }
    }
    if selected && rows.len() > start {
        let head = &mut rows[start];
        head.style = head.style.add_modifier(Modifier::REVERSED);
    }
    rows
}

/// Rows of a running command's output shown under its folded block.
const LIVE_ROWS: usize = 5;

/// The colour of one line of a unified diff.
fn diff_style(line: &str) -> Style {
    if line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff ") {
        Style::default().add_modifier(Modifier::BOLD)
    } else if line.starts_with('+') {
        Style::default().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::default().fg(Color::Red)
    } else if line.starts_with("@@") {
        Style::default().fg(Color::Cyan)
    } else {
        Style::default()
    }
}

/// `1.5s`, `12s`, `2m05s`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 10_000 {
        format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
    } else if ms < 60_000 {
        format!("{}s", ms / 1000)
    } else {
        let s = ms / 1000;
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

fn tool_rows(tool: &ToolEntry, look: &Look, width: usize, rows: &mut Vec<Line<'static>>) {
    // What the model got; an edit's diff until then (its result is the
    // headline, then that diff).
    let body = match &tool.diff {
        Some(diff) if tool.output.is_empty() => diff.as_str(),
        _ => tool.output.as_str(),
    };
    // Counted as shown: a carriage return starts a row.
    let body = wrap::sanitize(body);
    let lines = tool.live_dropped + body.lines().count();
    let fold = if lines == 0 {
        String::new()
    } else if tool.expanded {
        format!("  ▾ {lines} line{}", if lines == 1 { "" } else { "s" })
    } else {
        format!("  ▸ {lines} line{}", if lines == 1 { "" } else { "s" })
    };
    let (status, style) = match tool.state {
        ToolState::Pending => ("…".to_string(), dim()),
        ToolState::Asking => (
            "? waiting for y/s/n".to_string(),
            Style::default().fg(Color::Yellow),
        ),
        ToolState::Running => {
            let frame = mm_ui::spinner::FRAMES[(look.tick % 10) as usize];
            let secs = look.now.saturating_duration_since(tool.started).as_secs();
            (
                format!("{frame} {secs}s"),
                Style::default().fg(Color::Yellow),
            )
        }
        ToolState::Done => (
            format!("✓ {}", duration(tool.elapsed.unwrap_or_default())),
            Style::default().fg(Color::Green),
        ),
        ToolState::Failed => (
            format!("✗ {}", duration(tool.elapsed.unwrap_or_default())),
            Style::default().fg(Color::Red),
        ),
    };
    let head = format!("‣ {}  ", wrap::one_line(&tool.tool));
    let whole = wrap::sanitize(&tool.title);
    let mut lines = whole.lines();
    let first = lines.next().unwrap_or("");
    let more = lines.next().is_some();
    let title = if more {
        format!("{first} …")
    } else {
        first.to_owned()
    };
    let tail_width = 2 + wrap::width(&status) + wrap::width(&fold);
    let room = width.saturating_sub(wrap::width(&head) + tail_width);
    // Cut here, the whole command line is shown when the block is open.
    let more = more || wrap::width(&title) > room;
    let title = wrap::truncate(&title, room);
    rows.push(Line::from(vec![
        Span::styled(
            head,
            Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(title),
        Span::raw("  "),
        Span::styled(status, style),
        Span::styled(fold, dim()),
    ]));
    if !tool.expanded && tool.state == ToolState::Running {
        // Folded and running: its last lines, as they come.
        let text = body.strip_suffix('\n').unwrap_or(&body);
        let last: Vec<&str> = text.rsplit('\n').take(LIVE_ROWS).collect();
        for line in last.into_iter().rev().filter(|_| !text.is_empty()) {
            rows.push(Line::from(vec![
                Span::raw("    "),
                Span::styled(wrap::truncate(line, width.saturating_sub(4)), dim()),
            ]));
        }
    }
    if tool.expanded {
        let out_style = dim();
        if more {
            for line in wrap::sanitize(&tool.title).split('\n') {
                let line = Line::from(vec![Span::raw("    $ "), Span::raw(line.to_string())]);
                rows.extend(wrap::wrap(&line, width, 6, Mode::Glyph));
            }
        }
        let text = body.strip_suffix('\n').unwrap_or(&body);
        if text.is_empty() {
            rows.push(Line::from(Span::styled("    (no output)", out_style)));
        }
        for line in text.split('\n') {
            if text.is_empty() {
                break;
            }
            let style = match &tool.diff {
                Some(_) if diff_style(line) != Style::default() => diff_style(line),
                _ => out_style,
            };
            let line = Line::from(vec![
                Span::raw("    "),
                Span::styled(line.to_string(), style),
            ]);
            rows.extend(wrap::wrap(&line, width, 4, Mode::Glyph));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(width: u16) -> Look {
        Look {
            width,
            now: Instant::now(),
            tick: 0,
            selected: None,
        }
    }

    fn transcript(n: usize) -> Transcript {
        let mut t = Transcript::new();
        for i in 0..n {
            t.push(EntryKind::Notice(format!("line {i}")));
        }
        t
    }

    fn text(rows: &[Line]) -> Vec<String> {
        rows.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn only_the_visible_entries_are_wrapped() {
        let t = transcript(5000);
        let mut cache = Cache::new();
        let l = look(40);
        let mut scroll = Scroll::Bottom;
        let rows = visible(&t, &mut cache, &l, 10, &mut scroll);
        assert_eq!(rows.len(), 10);
        assert_eq!(rows.last().unwrap().to_string(), "line 4999");
        // Each notice after the first has a blank row before it: 5 entries fill 10 rows.
        assert!(
            cache.misses <= 6,
            "wrapped {} entries for one screen",
            cache.misses
        );
        let before = cache.misses;
        visible(&t, &mut cache, &l, 10, &mut scroll);
        assert_eq!(
            cache.misses, before,
            "a second frame must come from the cache"
        );
        // A new width wraps again.
        visible(&t, &mut cache, &look(30), 10, &mut scroll);
        assert!(cache.misses > before);
    }

    #[test]
    fn scrolling_up_and_back_down_returns_to_follow_mode() {
        let t = transcript(100);
        let mut cache = Cache::new();
        let l = look(40);
        let s = up(&t, &mut cache, &l, 10, Scroll::Bottom, 15);
        let mut s2 = s;
        let rows = visible(&t, &mut cache, &l, 10, &mut s2);
        assert_eq!(s2, s, "an anchor with rows below stays");
        // 200 rows in all; the bottom screen starts at row 190, 15 up is row 175.
        assert_eq!(s, Scroll::At { entry: 87, row: 1 });
        assert_eq!(text(&rows)[0], "line 87");
        assert_eq!(text(&rows)[8], "line 91");
        let back = down(&t, &mut cache, &l, 10, s, 15);
        assert_eq!(back, Scroll::Bottom);
        // Up past the start stops at the top.
        let s = up(&t, &mut cache, &l, 10, Scroll::Bottom, 100_000);
        assert_eq!(s, Scroll::At { entry: 0, row: 0 });
        let mut s3 = s;
        let rows = visible(&t, &mut cache, &l, 10, &mut s3);
        assert_eq!(rows[0].to_string(), "line 0");
    }

    #[test]
    fn tool_lines_show_status_time_and_fold() {
        let now = Instant::now();
        let tool = ToolEntry {
            id: "c".into(),
            tool: "bash".into(),
            title: "cargo test --workspace".into(),
            state: ToolState::Done,
            started: now,
            elapsed: Some(Duration::from_millis(2300)),
            output: "ok\nall good\n".into(),
            live_dropped: 0,
            diff: None,
            expanded: false,
        };
        let mut e = Entry {
            kind: EntryKind::Tool(tool.clone()),
            rev: 1,
        };
        let rows = entry_rows(&e, None, &look(60), false);
        assert_eq!(
            text(&rows),
            ["‣ bash  cargo test --workspace  ✓ 2.3s  ▸ 2 lines"]
        );
        // Too narrow: the command is cut, the status stays.
        let rows = entry_rows(&e, None, &look(35), false);
        assert_eq!(text(&rows), ["‣ bash  cargo t…  ✓ 2.3s  ▸ 2 lines"]);
        assert_eq!(rows[0].width(), 35);
        let mut open = tool;
        open.expanded = true;
        e.kind = EntryKind::Tool(open);
        let rows = entry_rows(&e, None, &look(60), false);
        assert_eq!(
            text(&rows),
            [
                "‣ bash  cargo test --workspace  ✓ 2.3s  ▾ 2 lines",
                "    ok",
                "    all good"
            ]
        );
    }

    #[test]
    fn reveal_brings_a_selected_entry_on_screen() {
        let t = transcript(100);
        let mut cache = Cache::new();
        let l = look(40);
        // Entry 10 is far above the bottom screen: the view jumps to it.
        let s = reveal(&t, &mut cache, &l, 10, Scroll::Bottom, 10);
        assert_eq!(s, Scroll::At { entry: 10, row: 0 });
        // Entry 97 is on the bottom screen already: nothing moves.
        assert_eq!(
            reveal(&t, &mut cache, &l, 10, Scroll::Bottom, 97),
            Scroll::Bottom
        );
        // Below an anchored screen: it moves down to it.
        let s = reveal(&t, &mut cache, &l, 10, Scroll::At { entry: 0, row: 0 }, 50);
        assert_eq!(s, Scroll::At { entry: 50, row: 0 });
    }

    #[test]
    fn durations() {
        assert_eq!(duration(Duration::from_millis(300)), "0.3s");
        assert_eq!(duration(Duration::from_millis(12_400)), "12s");
        assert_eq!(duration(Duration::from_secs(125)), "2m05s");
    }
}
