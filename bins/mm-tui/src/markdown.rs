//! The window's look of a rendered answer: mm-ui renders the Markdown
//! (the same renderer as the REPL's, wrapped to the window's width); here
//! each role gets its ratatui style.

use mm_ui::markdown::{self, Role};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// `text` (Markdown) as styled rows `width` columns wide.
pub fn lines(text: &str, width: usize) -> Vec<Line<'static>> {
    markdown::render(text, width)
        .into_iter()
        .map(|line| {
            Line::from(
                line.spans
                    .into_iter()
                    .map(|s| Span::styled(s.text, style(&s.style)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// A role's style in the window.
pub fn style(s: &markdown::Style) -> Style {
    let mut st = match s.role {
        Role::Heading(1) => Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::UNDERLINED),
        Role::Heading(_) => Style::default().fg(Color::Cyan),
        Role::Code => code_style(),
        Role::Keyword => Style::default().fg(Color::Magenta),
        Role::Str => Style::default().fg(Color::Green),
        Role::Number | Role::Bullet => Style::default().fg(Color::Cyan),
        Role::Comment | Role::Lang | Role::Url | Role::Rule | Role::Quote => {
            Style::default().fg(Color::DarkGray)
        }
        Role::Link => Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::UNDERLINED),
        Role::Text | Role::CodeBlock => Style::default(),
    };
    if s.bold {
        st = st.add_modifier(Modifier::BOLD);
    }
    if s.italic {
        st = st.add_modifier(Modifier::ITALIC);
    }
    if s.strike {
        st = st.add_modifier(Modifier::CROSSED_OUT);
    }
    st
}

/// Inline code.
pub fn code_style() -> Style {
    Style::default().fg(Color::Yellow)
}
