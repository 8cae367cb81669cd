//! The painter: one frame from the transcript's current state and the
//! window's own. It is the only code that writes to the screen buffer, and
//! it runs only on the event loop.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use mm_config::Theme;

use crate::layout::{self, Areas, Wants};
use crate::popup::Kind;
use crate::transcript::Transcript;
use crate::ui::Ui;
use crate::view::{self, Scroll};
use crate::wrap;

/// Most rows of a popup list.
pub const POPUP_ROWS: u16 = 8;
/// Most diff rows in a permission prompt.
pub const PROMPT_DIFF_ROWS: usize = 12;

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Draw one frame.
pub fn draw(frame: &mut Frame, t: &Transcript, ui: &mut Ui) {
    let area = frame.area();
    // A new question shows its change from the top.
    let asking = t.permission.as_ref().map(|p| p.id.clone());
    if asking != ui.prompt_for {
        ui.prompt_for = asking;
        ui.prompt_scroll = 0;
    }
    if let Some(diff) = t.permission.as_ref().and_then(|p| p.diff.as_ref()) {
        let last = diff.lines().count().saturating_sub(PROMPT_DIFF_ROWS);
        ui.prompt_scroll = ui.prompt_scroll.min(last);
    }
    let prompt_rows = prompt_lines(t, area.width, ui.prompt_scroll).len() as u16;
    let queue_rows = queue_lines(ui, area.width).len() as u16;
    let popup_rows = ui
        .popup
        .as_ref()
        .map_or(0, |p| (p.items.len() as u16).min(POPUP_ROWS));
    let areas = layout::layout(
        area,
        Wants {
            input: ui.input_rows(area.width),
            prompt: prompt_rows,
            popup: popup_rows,
            plan: plan_rows(t),
            queue: queue_rows,
        },
    );
    ui.width = areas.transcript.width;
    ui.transcript_rows = areas.transcript.height;
    transcript(frame, t, ui, areas.transcript);
    if let Some(r) = areas.plan {
        plan(frame, t, r);
    }
    if let Some(r) = areas.queue {
        frame.render_widget(Paragraph::new(queue_lines(ui, r.width)), r);
    }
    if let Some(r) = areas.prompt {
        prompt(frame, t, r, ui.prompt_scroll);
    }
    if let Some(r) = areas.popup {
        popup(frame, ui, r);
    }
    rule(frame, t, ui, areas.rule);
    frame.render_widget(&ui.input, areas.input);
    status(frame, t, ui, &areas);
    apply_theme(frame.buffer_mut(), ui.theme);
}

/// The `theme` setting over a drawn frame, in one place for every part:
/// grey (colour 8) text becomes the terminal's own foreground, dim in
/// `dark` and `light`, plain in `high-contrast` (where the accents are
/// bold); `light` trades the bright accents for darker ones that read on
/// white. Cells on a background of their own (the status bar) keep theirs.
pub fn apply_theme(buf: &mut ratatui::buffer::Buffer, theme: Theme) {
    for cell in buf.content.iter_mut() {
        if cell.bg != Color::Reset {
            continue;
        }
        if cell.fg == Color::DarkGray {
            cell.fg = Color::Reset;
            if theme != Theme::HighContrast {
                cell.modifier.insert(Modifier::DIM);
            }
        }
        match theme {
            Theme::Dark => {}
            Theme::HighContrast => {
                cell.modifier.remove(Modifier::DIM);
                if cell.fg != Color::Reset {
                    cell.modifier.insert(Modifier::BOLD);
                }
            }
            Theme::Light => {
                cell.fg = match cell.fg {
                    Color::Yellow => Color::Indexed(130),
                    Color::Cyan => Color::Indexed(24),
                    Color::Green => Color::Indexed(28),
                    Color::Red => Color::Indexed(124),
                    Color::Magenta => Color::Indexed(90),
                    Color::Blue => Color::Indexed(19),
                    other => other,
                };
            }
        }
    }
}

fn transcript(frame: &mut Frame, t: &Transcript, ui: &mut Ui, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    if t.is_empty() {
        let lines = [
            Line::from(Span::styled(
                format!("mm {}", ui.version),
                Style::default().add_modifier(Modifier::BOLD),
            )),
            Line::from(Span::styled(
                format!(
                    "{}  ·  {}",
                    wrap::one_line(&ui.model),
                    wrap::one_line(&ui.cwd)
                ),
                dim(),
            )),
            Line::default(),
            Line::from(Span::styled("Type a question and press Enter.", dim())),
            Line::from(Span::styled(
                "/ commands · @ attach a file · Tab select · Enter unfold · Esc cancel",
                dim(),
            )),
            Line::from(Span::styled("Ctrl-C twice quits.", dim())),
        ];
        let lines: Vec<Line> = lines
            .iter()
            .flat_map(|l| wrap::wrap(l, usize::from(area.width), 0, wrap::Mode::Word))
            .collect();
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    let look = ui.look();
    let rows = view::visible(
        t,
        &mut ui.cache,
        &look,
        usize::from(area.height),
        &mut ui.scroll,
    );
    frame.render_widget(Paragraph::new(rows), area);
}

/// Most rows of the queue above the input.
pub const QUEUE_ROWS: usize = 4;

/// The messages waiting for the turn to end, then what happens to them.
pub fn queue_lines(ui: &Ui, width: u16) -> Vec<Line<'static>> {
    if ui.queued.is_empty() {
        return Vec::new();
    }
    let width = usize::from(width);
    let mut lines: Vec<Line<'static>> = ui
        .queued
        .iter()
        .take(QUEUE_ROWS)
        .map(|q| {
            Line::from(Span::styled(
                wrap::truncate(&wrap::one_line(&mm_ui::words::queued_line(q)), width),
                Style::default().add_modifier(Modifier::ITALIC),
            ))
        })
        .collect();
    if ui.queued.len() > QUEUE_ROWS {
        lines.push(Line::from(Span::styled(
            mm_ui::fold::more_lines(ui.queued.len() - QUEUE_ROWS),
            dim(),
        )));
    }
    lines.push(Line::from(Span::styled(
        wrap::truncate(mm_ui::words::QUEUE_HINT, width),
        dim(),
    )));
    lines
}

/// The permission prompt's rows (empty when nothing is asked), its change
/// shown from row `scroll`.
pub fn prompt_lines(t: &Transcript, width: u16, scroll: usize) -> Vec<Line<'static>> {
    let Some(p) = &t.permission else {
        return Vec::new();
    };
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let mut lines = Vec::new();
    let title = wrap::sanitize(&p.title).replace('\n', " ⏎ ");
    let head = Line::from(vec![
        Span::styled(
            format!("‣ {}  ", wrap::one_line(&p.tool)),
            Style::default()
                .fg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(title),
    ]);
    lines.extend(
        wrap::wrap(&head, inner, 4, wrap::Mode::Glyph)
            .into_iter()
            .take(4),
    );
    if let Some(diff) = &p.diff {
        let diff = wrap::sanitize(diff);
        let all: Vec<&str> = diff.lines().collect();
        let first = scroll.min(all.len().saturating_sub(PROMPT_DIFF_ROWS));
        for l in all.iter().skip(first).take(PROMPT_DIFF_ROWS) {
            let style = if l.starts_with('+') {
                Style::default().fg(Color::Green)
            } else if l.starts_with('-') {
                Style::default().fg(Color::Red)
            } else {
                dim()
            };
            lines.push(Line::from(Span::styled(wrap::truncate(l, inner), style)));
        }
        if all.len() > PROMPT_DIFF_ROWS {
            let last = (first + PROMPT_DIFF_ROWS).min(all.len());
            let below = all.len() - last;
            let text = if first == 0 {
                format!("{} · PgDn reads on", mm_ui::fold::more_lines(below))
            } else {
                format!(
                    "lines {}–{last} of {} · PgUp/PgDn scroll",
                    first + 1,
                    all.len()
                )
            };
            lines.push(Line::from(Span::styled(text, dim())));
        }
    }
    let key = |k: &'static str| {
        Span::styled(
            k,
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        )
    };
    match &p.reason {
        Some(why) => {
            let head = Line::from(vec![
                key("why?"),
                Span::styled(" (for the model; Enter rejects) ", dim()),
                Span::raw(wrap::sanitize(why).into_owned()),
                Span::styled("▏", Style::default().fg(Color::Yellow)),
            ]);
            lines.extend(wrap::wrap(&head, inner, 2, wrap::Mode::Glyph));
        }
        None => {
            let words = if p.plan {
                mm_ui::words::PLAN_KEYS
            } else {
                mm_ui::words::PERMISSION_KEYS
            };
            lines.push(keys_line(words, key));
        }
    }
    lines
}

/// `[y/a/Enter] allow once · …` with each bracketed key highlighted.
fn keys_line(words: &'static str, key: impl Fn(&'static str) -> Span<'static>) -> Line<'static> {
    let mut spans = Vec::new();
    let mut rest = words;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c + 1) else {
            break;
        };
        if open > 0 {
            spans.push(Span::raw(&rest[..open]));
        }
        spans.push(key(&rest[open..close]));
        rest = &rest[close..];
    }
    if !rest.is_empty() {
        spans.push(Span::raw(rest));
    }
    Line::from(spans)
}

/// Most rows of the checklist panel.
pub const PLAN_ROWS: usize = 8;

/// Rows of the checklist panel: the items while a turn runs, else none.
fn plan_rows(t: &Transcript) -> u16 {
    if t.busy_since.is_none() {
        return 0;
    }
    t.plan.len().min(PLAN_ROWS) as u16
}

/// The checklist above the input, the item in progress first in view.
fn plan(frame: &mut Frame, t: &Transcript, area: Rect) {
    let ascii = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
        || std::env::var_os("TERM").is_some_and(|v| v == "dumb");
    let lines = mm_ui::checklist_lines(&t.plan, ascii);
    let start = t
        .plan
        .iter()
        .position(|i| i.status == mm_ui::PlanStatus::InProgress)
        .map_or(0, |at| at.saturating_sub(PLAN_ROWS / 2))
        .min(lines.len().saturating_sub(PLAN_ROWS));
    let width = usize::from(area.width);
    let rows: Vec<Line<'static>> = lines
        .iter()
        .zip(&t.plan)
        .skip(start)
        .take(PLAN_ROWS)
        .map(|(line, item)| {
            let style = match item.status {
                mm_ui::PlanStatus::Completed => dim(),
                mm_ui::PlanStatus::InProgress => Style::default().add_modifier(Modifier::BOLD),
                mm_ui::PlanStatus::Pending => Style::default(),
            };
            Line::from(Span::styled(wrap::truncate(line, width), style))
        })
        .collect();
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(dim())
        .title(" plan ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(rows), inner);
}

fn prompt(frame: &mut Frame, t: &Transcript, area: Rect, scroll: usize) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Yellow))
        .title(" permission ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(prompt_lines(t, area.width, scroll)), inner);
}

fn popup(frame: &mut Frame, ui: &Ui, area: Rect) {
    let Some(p) = &ui.popup else { return };
    let title = match p.kind {
        Kind::Commands => " commands ",
        Kind::Paths => " files ",
        Kind::Pick => " type to filter · Enter choose · Esc leave ",
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(dim())
        .title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = usize::from(inner.height);
    if rows == 0 {
        return;
    }
    // Keep the selected row in view.
    let first = p.selected.saturating_sub(rows - 1);
    let label_width = p
        .items
        .iter()
        .map(|i| wrap::width(&i.label))
        .max()
        .unwrap_or(0);
    let width = usize::from(inner.width);
    let lines: Vec<Line> = p
        .items
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, item)| {
            let pad = label_width.saturating_sub(wrap::width(&item.label));
            let text = if item.detail.is_empty() {
                item.label.clone()
            } else {
                format!("{}{}  {}", item.label, " ".repeat(pad), item.detail)
            };
            // A file's name may hold anything.
            let text = wrap::one_line(&text);
            let style = if i == p.selected {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            Line::from(Span::styled(
                wrap::truncate(&format!(" {text}"), width),
                style,
            ))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The rule above the input; it carries what the agent is doing.
fn rule(frame: &mut Frame, t: &Transcript, ui: &Ui, area: Rect) {
    if area.height == 0 {
        return;
    }
    let width = usize::from(area.width);
    let mut spans = Vec::new();
    let mut used = 0;
    if let Some(busy) = t.busy_since {
        // The seconds of what it does now: a running tool's, as its block.
        let since = t.status_since.unwrap_or(busy);
        let frame_glyph = mm_ui::spinner::FRAMES[(ui.tick % 10) as usize];
        let secs = ui.now.saturating_duration_since(since).as_secs();
        let label = wrap::one_line(t.status.as_deref().unwrap_or("Working"));
        let line = mm_ui::words::status_line(&label, secs, t.turn_tokens());
        let text = format!("─ {frame_glyph} {line} ");
        used += wrap::width(&text);
        spans.push(Span::styled(
            wrap::truncate(&text, width),
            Style::default().fg(Color::Yellow),
        ));
    }
    if used < width {
        spans.push(Span::styled("─".repeat(width - used), dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn status(frame: &mut Frame, t: &Transcript, ui: &Ui, areas: &Areas) {
    let area = areas.status;
    if area.height == 0 {
        return;
    }
    let width = usize::from(area.width);
    let left = if let Some(hint) = &ui.hint {
        hint.clone()
    } else if ui.scroll != Scroll::Bottom {
        "↑ scrolled (PgDn)".to_string()
    } else if t.permission.as_ref().is_some_and(|p| p.reason.is_some()) {
        "rejecting: type why, Enter".to_string()
    } else if t.permission.is_some() {
        "permission: y/s/n · PgDn".to_string()
    } else {
        String::new()
    };
    // The mode is always there, first; vi's normal mode before it.
    let vi = match ui.vi {
        Some(v) if v.visual && ui.input.is_selecting() => "-- VISUAL -- · ",
        Some(v) if v.normal => "-- NORMAL -- · ",
        _ => "",
    };
    let left = if left.is_empty() {
        format!(" {vi}mode: {} ", ui.mode)
    } else {
        format!(" {vi}mode: {} · {left} ", ui.mode)
    };
    // What does not fit goes first: the folder, mm's version, then the
    // model's length; the tokens stay.
    let tokens = mm_ui::words::tokens_line(&t.tokens, t.context.0, t.context.1);
    let tail = format!(" · {tokens} · mm {} ", ui.version);
    let tail = if wrap::width(&left) + wrap::width(&tail) + 12 <= width {
        tail
    } else if wrap::width(&left) + wrap::width(&tokens) + 3 <= width {
        format!(" · {tokens} ")
    } else {
        // Short of room, the labels go before the numbers do.
        let short = tokens.replace("context ", "").replace("session ", "");
        format!(" · {short} ")
    };
    let model = format!(" {}", wrap::one_line(&ui.model));
    let fixed = wrap::width(&left) + wrap::width(&model) + wrap::width(&tail);
    let room = width.saturating_sub(fixed + 3);
    let cwd = if room >= 8 {
        format!(" · {}", wrap::truncate_left(&wrap::one_line(&ui.cwd), room))
    } else {
        String::new()
    };
    let right_room = width.saturating_sub(wrap::width(&left));
    let model = wrap::truncate(
        &model,
        right_room.saturating_sub(wrap::width(&tail) + wrap::width(&cwd)),
    );
    let right = wrap::truncate(&format!("{model}{cwd}{tail}"), right_room);
    let left = wrap::truncate(&left, width);
    let pad = width.saturating_sub(wrap::width(&left) + wrap::width(&right));
    let bar = Style::default().bg(Color::DarkGray).fg(Color::White);
    let line = Line::from(vec![
        Span::styled(left, bar.fg(Color::Yellow)),
        Span::styled(" ".repeat(pad), bar),
        Span::styled(right, bar),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}
