//! Folding long text for a person: the first lines, then one line saying
//! how many were left out. Every front end ends a cut preview with the same
//! words, so they live here.

/// The line that ends a cut preview: `… 1 more line`, `… 195 more lines`.
pub fn more_lines(n: usize) -> String {
    if n == 1 {
        "… 1 more line".to_string()
    } else {
        format!("… {n} more lines")
    }
}

/// The first `n` lines of `text`, then [`more_lines`] when some were left
/// out; nothing at all for `n` = 0 (`previewLines: 0` turns previews off).
pub fn head(text: &str, n: usize) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let mut lines = text.lines();
    let mut shown: Vec<String> = lines.by_ref().take(n).map(str::to_string).collect();
    let rest = lines.count();
    if rest > 0 {
        shown.push(more_lines(rest));
    }
    shown
}

/// The first non-blank line of `text`, trimmed and cut to `max`
/// characters (the last one `…` when cut): a long text named in one line.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() > max {
        let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_named_in_one_line() {
        assert_eq!(first_line("\n  First line.\nSecond", 100), "First line.");
        assert_eq!(first_line(&"y".repeat(150), 100).chars().count(), 100);
        assert!(first_line(&"y".repeat(150), 100).ends_with('…'));
        assert_eq!(first_line("", 10), "");
    }

    #[test]
    fn a_cut_preview_says_how_much_was_left_out() {
        let text: String = (1..=200).map(|i| format!("{i}\n")).collect();
        assert_eq!(
            head(&text, 5),
            ["1", "2", "3", "4", "5", "… 195 more lines"]
        );
        assert_eq!(head("a\nb\n", 1), ["a", "… 1 more line"]);
        // Nothing cut, nothing said.
        assert_eq!(head("a\nb", 2), ["a", "b"]);
        assert_eq!(head("", 5), Vec::<String>::new());
        assert!(head("a\nb\n", 0).is_empty());
    }
}
