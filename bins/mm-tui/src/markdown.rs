//! Markdown of an answer as styled lines, line by line so that a half
//! streamed answer renders the same as it will once whole (an open code
//! fence simply runs to the end). Headings, lists, quotes, rules, fenced
//! code, and inline `code`, **bold** and *italic*; anything else is text.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::wrap::Mode;

/// One logical line and how to wrap it.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub line: Line<'static>,
    /// Spaces before the continuation rows (a list item's text column).
    pub indent: usize,
    pub mode: Mode,
    /// A horizontal rule: drawn as wide as the screen.
    pub rule: bool,
}

impl Block {
    fn text(line: Line<'static>, indent: usize) -> Block {
        Block {
            line,
            indent,
            mode: Mode::Word,
            rule: false,
        }
    }
}

pub fn code_style() -> Style {
    Style::default().fg(Color::Yellow)
}

fn heading_style(level: usize) -> Style {
    let s = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    if level == 1 {
        s.add_modifier(Modifier::UNDERLINED)
    } else {
        s
    }
}

/// Render `text` (markdown) to blocks.
pub fn render(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    // Some(fence) while inside a fenced code block.
    let mut fence: Option<String> = None;
    for raw in text.split('\n') {
        let trimmed = raw.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str())
                && trimmed
                    .trim_end()
                    .chars()
                    .all(|c| c == open.as_bytes()[0] as char)
            {
                fence = None;
                continue;
            }
            out.push(Block {
                line: Line::from(vec![
                    Span::styled("│ ", Style::default().fg(Color::DarkGray)),
                    Span::styled(raw.to_string(), code_style()),
                ]),
                indent: 2,
                mode: Mode::Glyph,
                rule: false,
            });
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            let lang = trimmed[marker.len()..].trim();
            fence = Some(marker);
            if !lang.is_empty() {
                out.push(Block::text(
                    Line::from(Span::styled(
                        format!("┌ {lang}"),
                        Style::default().fg(Color::DarkGray),
                    )),
                    0,
                ));
            }
            continue;
        }
        out.push(block(raw));
    }
    out
}

/// "```" or "~~~" (or longer) opening a fence.
fn fence_marker(line: &str) -> Option<String> {
    for c in ['`', '~'] {
        let n = line.chars().take_while(|&x| x == c).count();
        if n >= 3 {
            return Some(std::iter::repeat_n(c, n).collect());
        }
    }
    None
}

/// One line outside code.
fn block(raw: &str) -> Block {
    let lead = raw.len() - raw.trim_start_matches(' ').len();
    let rest = &raw[lead..];
    // Heading.
    let hashes = rest.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && (rest.len() == hashes || rest[hashes..].starts_with(' ')) {
        let title = rest[hashes..].trim();
        let style = heading_style(hashes);
        let spans = inline(title, style);
        return Block::text(Line::from(spans), 0);
    }
    // Rule.
    let compact: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.len() >= 3
        && (compact.chars().all(|c| c == '-')
            || compact.chars().all(|c| c == '*')
            || compact.chars().all(|c| c == '_'))
    {
        return Block {
            line: Line::from(Span::styled("─", Style::default().fg(Color::DarkGray))),
            indent: 0,
            mode: Mode::Glyph,
            rule: true,
        };
    }
    // Bullet list.
    for bullet in ["- ", "* ", "+ "] {
        if let Some(item) = rest.strip_prefix(bullet) {
            let mut spans = vec![
                Span::raw(" ".repeat(lead)),
                Span::styled("• ", Style::default().fg(Color::Cyan)),
            ];
            spans.extend(inline(item, Style::default()));
            return Block::text(Line::from(spans), lead + 2);
        }
    }
    // Numbered list.
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 10 {
        let after = &rest[digits..];
        if let Some(item) = after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))
        {
            let marker = format!("{}{} ", &rest[..digits], &after[..1]);
            let width = marker.len();
            let mut spans = vec![
                Span::raw(" ".repeat(lead)),
                Span::styled(marker, Style::default().fg(Color::Cyan)),
            ];
            spans.extend(inline(item, Style::default()));
            return Block::text(Line::from(spans), lead + width);
        }
    }
    // Quote.
    if let Some(quote) = rest.strip_prefix('>') {
        let quote = quote.strip_prefix(' ').unwrap_or(quote);
        let style = Style::default()
            .fg(Color::Gray)
            .add_modifier(Modifier::ITALIC);
        let mut spans = vec![Span::styled("▎ ", Style::default().fg(Color::DarkGray))];
        spans.extend(inline(quote, style));
        return Block::text(Line::from(spans), 2);
    }
    Block::text(Line::from(inline(raw, Style::default())), lead)
}

/// Inline markup: `code`, **bold**, *italic*. Markers without a closing
/// partner are text.
pub fn inline(text: &str, base: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut bold = false;
    let mut italic = false;
    let style = |bold: bool, italic: bool| {
        let mut s = base;
        if bold {
            s = s.add_modifier(Modifier::BOLD);
        }
        if italic {
            s = s.add_modifier(Modifier::ITALIC);
        }
        s
    };
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let rest = &text[i..];
        if bytes[i] == b'`' {
            let ticks = rest.bytes().take_while(|&b| b == b'`').count();
            let marker = &rest[..ticks];
            if let Some(end) = rest[ticks..].find(marker) {
                flush(&mut spans, &mut plain, style(bold, italic));
                let code = &rest[ticks..ticks + end];
                let code = if code.starts_with(' ') && code.ends_with(' ') && code.len() > 1 {
                    &code[1..code.len() - 1]
                } else {
                    code
                };
                spans.push(Span::styled(code.to_string(), code_style()));
                i += ticks + end + ticks;
                continue;
            }
            plain.push_str(marker);
            i += ticks;
            continue;
        }
        if let Some(after) = rest.strip_prefix("**") {
            if bold || after.contains("**") {
                flush(&mut spans, &mut plain, style(bold, italic));
                bold = !bold;
                i += 2;
                continue;
            }
        } else if bytes[i] == b'*' {
            let opens = !italic
                && rest[1..].starts_with(|c: char| !c.is_whitespace())
                && rest[1..].contains('*');
            if opens || italic {
                flush(&mut spans, &mut plain, style(bold, italic));
                italic = !italic;
                i += 1;
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        plain.push(c);
        i += c.len_utf8();
    }
    flush(&mut spans, &mut plain, style(bold, italic));
    spans
}

fn flush(spans: &mut Vec<Span<'static>>, plain: &mut String, style: Style) {
    if !plain.is_empty() {
        spans.push(Span::styled(std::mem::take(plain), style));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(blocks: &[Block]) -> Vec<String> {
        blocks.iter().map(|b| b.line.to_string()).collect()
    }

    #[test]
    fn headings_lists_and_code_blocks() {
        let md = "# Title\nSome *text* and `code`.\n- one\n  - two\n3. three\n```rust\nlet x = 1;\n```\nafter";
        let blocks = render(md);
        assert_eq!(
            texts(&blocks),
            [
                "Title",
                "Some text and code.",
                "• one",
                "  • two",
                "3. three",
                "┌ rust",
                "│ let x = 1;",
                "after"
            ]
        );
        assert!(
            blocks[0].line.spans[0]
                .style
                .add_modifier
                .contains(Modifier::BOLD)
        );
        assert_eq!(blocks[2].indent, 2);
        assert_eq!(blocks[3].indent, 4);
        assert_eq!(blocks[4].indent, 3);
        assert_eq!(blocks[6].mode, Mode::Glyph);
        assert_eq!(blocks[6].line.spans[1].style, code_style());
    }

    #[test]
    fn an_open_fence_runs_to_the_end_while_streaming() {
        let blocks = render("```\nfn main() {\n    # not a heading");
        assert_eq!(texts(&blocks), ["│ fn main() {", "│     # not a heading"]);
    }

    #[test]
    fn inline_markers_need_a_partner() {
        let spans = inline("a **bold** b * c 2*3", Style::default());
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "a bold b * c 2*3");
        let bold = spans.iter().find(|s| s.content == "bold").unwrap();
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        let spans = inline("snake_case_name and `unclosed", Style::default());
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "snake_case_name and `unclosed");
    }

    #[test]
    fn rules_are_marked() {
        let blocks = render("---");
        assert!(blocks[0].rule);
    }
}
