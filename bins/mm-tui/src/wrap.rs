//! Wrapping styled lines to a width in terminal cells. Widths are measured
//! per grapheme with `unicode-width`, exactly as ratatui's buffer places
//! them, so CJK and emoji (two cells) never overflow or leave holes.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// How a line may be broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// At spaces; a word longer than the width is cut.
    Word,
    /// Anywhere (code, tool output): nothing is reflowed.
    Glyph,
}

/// Cells `text` takes on screen.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// Text that is safe to put in terminal cells: sanitised
/// ([`mm_ui::sanitize()`]: escape sequences and control characters removed,
/// a lone carriage return made a line break), then tabs expanded to stops
/// of 4.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    let clean = mm_ui::sanitize(text);
    if !clean.contains('\t') {
        return clean;
    }
    let mut out = String::with_capacity(clean.len() + 8);
    let mut col = 0usize;
    for c in clean.chars() {
        match c {
            '\n' => {
                out.push('\n');
                col = 0;
            }
            '\t' => {
                let n = 4 - col % 4;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            c => {
                out.push(c);
                col += width(c.encode_utf8(&mut [0; 4]));
            }
        }
    }
    Cow::Owned(out)
}

/// [`sanitize()`]d text on one row: line breaks become spaces (a name, a
/// status, a file in a list).
pub fn one_line(text: &str) -> Cow<'_, str> {
    match sanitize(text) {
        clean if clean.contains('\n') => Cow::Owned(clean.replace('\n', " ")),
        clean => clean,
    }
}

/// Cut `text` to at most `max` cells, ending with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for g in graphemes(text) {
        let w = width(&g);
        if used + w >= max {
            break;
        }
        out.push_str(&g);
        used += w;
    }
    out.push('…');
    out
}

/// Cut `text` from the left to at most `max` cells, starting with `…`.
pub fn truncate_left(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let gs = graphemes(text);
    let mut used = 0;
    let mut start = gs.len();
    while start > 0 && used + width(&gs[start - 1]) < max {
        start -= 1;
        used += width(&gs[start]);
    }
    format!("…{}", gs[start..].concat())
}

/// The graphemes of `text`, as ratatui splits them.
fn graphemes(text: &str) -> Vec<String> {
    // A one-span line yields exactly ratatui's own segmentation.
    Span::raw(text)
        .styled_graphemes(Style::default())
        .map(|g| g.symbol.to_string())
        .collect()
}

/// One grapheme with its style and width.
#[derive(Clone, Copy)]
struct Cell<'a> {
    symbol: &'a str,
    style: Style,
    width: usize,
}

impl Cell<'_> {
    fn is_space(&self) -> bool {
        self.symbol.chars().all(char::is_whitespace)
    }
}

/// Wrap `line` to `width` cells. Rows after the first start with `indent`
/// spaces (list items, questions). Always returns at least one row.
pub fn wrap(line: &Line<'_>, width: usize, indent: usize, mode: Mode) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent >= width { 0 } else { indent };
    let cells: Vec<Cell> = line
        .spans
        .iter()
        .flat_map(|span| span.styled_graphemes(line.style))
        .map(|g| Cell {
            symbol: g.symbol,
            style: g.style,
            width: UnicodeWidthStr::width(g.symbol),
        })
        .collect();
    let total: usize = cells.iter().map(|c| c.width).sum();
    if total <= width {
        return vec![own(line)];
    }

    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut row: Vec<Cell> = Vec::new();
    let mut used = 0;
    // Index in `row` just after the last space: where a word break may go.
    let mut brk: Option<usize> = None;
    let avail = |rows: &Vec<Vec<Cell>>| {
        if rows.is_empty() {
            width
        } else {
            width - indent
        }
    };
    for cell in cells {
        let room = avail(&rows);
        if used + cell.width > room && !row.is_empty() {
            let next_room = width - indent;
            match (mode, brk) {
                // A space that does not fit is the break itself.
                (Mode::Word, _) if cell.is_space() => rows.push(trim_end(std::mem::take(&mut row))),
                // Break after the last space when the word carried over
                // fits on the next row; otherwise cut here.
                (Mode::Word, Some(b))
                    if row[b..].iter().map(|c| c.width).sum::<usize>() + cell.width
                        <= next_room =>
                {
                    let rest = row.split_off(b);
                    rows.push(trim_end(row));
                    row = rest;
                }
                _ => rows.push(std::mem::take(&mut row)),
            }
            brk = None;
            used = row.iter().map(|c| c.width).sum();
        }
        // Spaces at the start of a continuation row are dropped.
        if row.is_empty() && !rows.is_empty() && cell.is_space() && mode == Mode::Word {
            continue;
        }
        row.push(cell);
        used += cell.width;
        if cell.is_space() {
            brk = Some(row.len());
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, cells)| to_line(&cells, if i == 0 { 0 } else { indent }, line))
        .collect()
}

fn trim_end(mut row: Vec<Cell<'_>>) -> Vec<Cell<'_>> {
    while row.last().is_some_and(Cell::is_space) {
        row.pop();
    }
    row
}

/// Cells back into spans, merging runs of one style.
fn to_line(cells: &[Cell], indent: usize, like: &Line) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    if indent > 0 {
        spans.push(Span::raw(" ".repeat(indent)));
    }
    let mut text = String::new();
    let mut style: Option<Style> = None;
    for c in cells {
        if style != Some(c.style) {
            if let Some(s) = style {
                spans.push(Span::styled(std::mem::take(&mut text), s));
            }
            style = Some(c.style);
        }
        text.push_str(c.symbol);
    }
    if let Some(s) = style {
        spans.push(Span::styled(text, s));
    }
    let mut out = Line::from(spans);
    out.style = like.style;
    out
}

/// An owned copy of a line.
pub fn own(line: &Line<'_>) -> Line<'static> {
    let mut out = Line::from(
        line.spans
            .iter()
            .map(|s| Span::styled(s.content.to_string(), s.style))
            .collect::<Vec<_>>(),
    );
    out.style = line.style;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    fn max_width(lines: &[Line]) -> usize {
        lines.iter().map(|l| l.width()).max().unwrap_or(0)
    }

    #[test]
    fn words_wrap_at_spaces_with_a_hanging_indent() {
        let rows = wrap(&Line::from("- one two three four five"), 10, 2, Mode::Word);
        assert_eq!(text(&rows), ["- one two", "  three", "  four", "  five"]);
    }

    #[test]
    fn a_long_word_is_cut_and_nothing_is_lost() {
        let word = "x".repeat(25);
        let rows = wrap(&Line::from(word.as_str()), 10, 0, Mode::Word);
        assert_eq!(text(&rows), ["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
    }

    #[test]
    fn wide_characters_never_pass_the_width() {
        // 12 CJK characters of two cells each, in 7 columns: 3 per row.
        let line = Line::from("漢字漢字漢字漢字漢字漢字");
        let rows = wrap(&line, 7, 0, Mode::Glyph);
        assert_eq!(rows.len(), 4);
        assert!(max_width(&rows) <= 7);
        assert_eq!(text(&rows).concat(), "漢字漢字漢字漢字漢字漢字");
        // Emoji too.
        let rows = wrap(&Line::from("🦀🦀🦀🦀🦀 ok"), 5, 0, Mode::Word);
        assert!(max_width(&rows) <= 5, "{:?}", text(&rows));
        assert_eq!(text(&rows).concat().replace(' ', ""), "🦀🦀🦀🦀🦀ok");
    }

    #[test]
    fn styles_survive_wrapping() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = Line::from(vec![Span::raw("aaa "), Span::styled("bbb ccc", bold)]);
        let rows = wrap(&line, 7, 0, Mode::Word);
        assert_eq!(text(&rows), ["aaa bbb", "ccc"]);
        assert_eq!(rows[1].spans[0].style, bold);
    }

    #[test]
    fn sanitize_removes_what_would_break_the_screen() {
        assert_eq!(sanitize("a\tb"), "a   b");
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m\r\n"), "red\n");
        assert_eq!(sanitize("bell\u{7}"), "bell");
        assert_eq!(sanitize("x\ty\rz\t"), "x   y\nz   ");
        assert!(matches!(sanitize("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn truncation_counts_cells() {
        assert_eq!(truncate("hello world", 8), "hello w…");
        assert_eq!(truncate("漢字漢字", 5), "漢字…");
        assert_eq!(truncate("short", 8), "short");
        assert_eq!(truncate_left("/home/user/project", 10), "…r/project");
    }
}
