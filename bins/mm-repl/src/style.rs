//! Terminal styles as SGR sequences, and the one rule that decides whether
//! they are used: a terminal, `NO_COLOR` unset or empty (no-color.org), and
//! `TERM` not `dumb` (which also rules out the spinner and line clearing).

/// A text style; each maps to one SGR sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Reasoning, previews, recap: present but quiet.
    Dim,
    /// Errors.
    Red,
    /// Notices and the permission prompt.
    Yellow,
    /// Added diff lines.
    Green,
    /// Diff hunk headers, banner names.
    Cyan,
    /// The banner title.
    Bold,
}

impl Style {
    /// The SGR sequence of this style in the theme in force; empty when
    /// the theme shows it plain (high-contrast has no dim text).
    fn sgr(self) -> &'static str {
        match (theme(), self) {
            (Theme::HighContrast, Style::Dim) => "",
            (Theme::HighContrast, Style::Red) => "\x1b[1;31m",
            (Theme::HighContrast, Style::Yellow) => "\x1b[1;33m",
            (Theme::HighContrast, Style::Green) => "\x1b[1;32m",
            (Theme::HighContrast, Style::Cyan) => "\x1b[1;36m",
            // Darker accents that stay readable on a white background.
            (Theme::Light, Style::Red) => "\x1b[38;5;124m",
            (Theme::Light, Style::Yellow) => "\x1b[38;5;130m",
            (Theme::Light, Style::Green) => "\x1b[38;5;28m",
            (Theme::Light, Style::Cyan) => "\x1b[38;5;24m",
            (_, Style::Dim) => "\x1b[2m",
            (_, Style::Red) => "\x1b[31m",
            (_, Style::Yellow) => "\x1b[33m",
            (_, Style::Green) => "\x1b[32m",
            (_, Style::Cyan) => "\x1b[36m",
            (_, Style::Bold) => "\x1b[1m",
        }
    }
}

pub use mm_agent::config::Theme;

/// The `theme` in force, set once at start-up (dark until then).
static THEME: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Use `theme`'s colours from now on (the `theme` setting).
pub fn set_theme(theme: Theme) {
    let n = match theme {
        Theme::Dark => 0,
        Theme::Light => 1,
        Theme::HighContrast => 2,
    };
    THEME.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// The theme in force.
pub fn theme() -> Theme {
    match THEME.load(std::sync::atomic::Ordering::Relaxed) {
        1 => Theme::Light,
        2 => Theme::HighContrast,
        _ => Theme::Dark,
    }
}

/// An SGR colour code of a rendered answer in the theme in force: `None`
/// where the theme leaves it out (dim in high-contrast).
fn themed(code: &'static str) -> Option<&'static str> {
    match (theme(), code) {
        (Theme::HighContrast, "2") => None,
        (Theme::Light, "36") => Some("38;5;24"),
        (Theme::Light, "33") => Some("38;5;130"),
        (Theme::Light, "32") => Some("38;5;28"),
        (Theme::Light, "35") => Some("38;5;90"),
        (Theme::Light, "34") => Some("38;5;19"),
        _ => Some(code),
    }
}

/// The reset sequence.
pub const RESET: &str = "\x1b[0m";

/// How a piece of a rendered answer is written: SGR sequences on a
/// terminal that takes color; without color, the marks that keep its
/// meaning in plain text (a heading's `#`, code's backticks).
pub fn markdown_span(color: bool, span: &mm_ui::markdown::Span) -> String {
    use mm_ui::markdown::Role;
    let s = &span.style;
    if !color {
        return match s.role {
            Role::Code => format!("`{}`", span.text),
            _ => span.text.clone(),
        };
    }
    let mut sgr: Vec<&str> = Vec::new();
    if s.bold {
        sgr.push("1");
    }
    if s.italic {
        sgr.push("3");
    }
    if s.strike {
        sgr.push("9");
    }
    match s.role {
        // Headings are bold already.
        Role::Heading(1) => sgr.extend(["4", "36"]),
        Role::Heading(_) => sgr.push("36"),
        Role::Code => sgr.push("33"),
        Role::Keyword => sgr.push("35"),
        Role::Str => sgr.push("32"),
        Role::Comment | Role::Lang | Role::Url | Role::Rule | Role::Quote => sgr.push("2"),
        Role::Number | Role::Bullet => sgr.push("36"),
        Role::Link => sgr.extend(["4", "34"]),
        Role::Text | Role::CodeBlock => {}
    }
    let sgr: Vec<&str> = sgr.into_iter().filter_map(themed).collect();
    if sgr.is_empty() {
        return span.text.clone();
    }
    format!("\x1b[{}m{}{RESET}", sgr.join(";"), span.text)
}

/// A heading's level mark where no style can show it (`## `).
pub fn heading_mark(color: bool, line: &mm_ui::markdown::Line) -> String {
    match line.spans.first().map(|s| s.style.role) {
        Some(mm_ui::markdown::Role::Heading(n)) if !color => {
            format!("{} ", "#".repeat(usize::from(n)))
        }
        _ => String::new(),
    }
}

/// Whether `NO_COLOR` asks for no color, from its value (`None` = unset).
pub fn no_color(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

/// Whether `TERM` (`None` = unset) names a terminal that understands no
/// escape sequences at all: Emacs' shell, some CI logs.
pub fn dumb_term(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "dumb")
}

/// Whether this process may use color on a stream that is (or is not) a
/// terminal.
pub fn color_for(is_tty: bool) -> bool {
    cursor_for(is_tty) && !no_color(std::env::var_os("NO_COLOR").as_deref())
}

/// Whether this process may move the cursor (the spinner, clearing a line)
/// on a stream that is (or is not) a terminal.
pub fn cursor_for(is_tty: bool) -> bool {
    is_tty && !dumb_term(std::env::var_os("TERM").as_deref())
}

/// `text` in `style` when `color` is on; each line is styled on its own so
/// a style never bleeds past a line end (raw mode, scrollback).
pub fn paint(color: bool, style: Style, text: &str) -> String {
    if !color || text.is_empty() || style.sgr().is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !line.is_empty() {
            out.push_str(style.sgr());
            out.push_str(line);
            out.push_str(RESET);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_term_dumb_is_dumb() {
        use std::ffi::OsStr;
        assert!(dumb_term(Some(OsStr::new("dumb"))));
        for other in [None, Some(OsStr::new("xterm")), Some(OsStr::new(""))] {
            assert!(!dumb_term(other), "{other:?}");
        }
    }

    #[test]
    fn no_color_means_plain_text() {
        assert_eq!(paint(false, Style::Dim, "a\nb"), "a\nb");
    }

    #[test]
    fn each_line_is_styled_and_reset() {
        assert_eq!(
            paint(true, Style::Red, "a\n\nb"),
            "\x1b[31ma\x1b[0m\n\n\x1b[31mb\x1b[0m"
        );
    }

    #[test]
    fn no_color_variable_rule() {
        assert!(!no_color(None));
        assert!(!no_color(Some(std::ffi::OsStr::new(""))));
        assert!(no_color(Some(std::ffi::OsStr::new("1"))));
    }
}
