//! A diff made to fit a few lines of a terminal: the context goes before
//! any change does.

/// A diff folded to a number of lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    /// The lines to show, hunk headers renumbered for what they hold.
    pub lines: Vec<String>,
    /// Lines of the (context-free) diff left out at the end; 0 when every
    /// change is shown.
    pub hidden: usize,
}

/// Fold `diff` (this crate's format) into at most `max` lines. A diff that
/// fits is shown whole; otherwise its context shrinks to one line around
/// each change, then to none, and what still does not fit is cut at the end
/// (never after a lone hunk header). `max` = 0 shows nothing.
pub fn fold(diff: &str, max: usize) -> Folded {
    if max == 0 {
        return Folded::default();
    }
    let whole: Vec<&str> = diff.lines().collect();
    if whole.len() <= max {
        return Folded {
            lines: whole.into_iter().map(str::to_string).collect(),
            hidden: 0,
        };
    }
    let hunks = parse(diff);
    let one = with_context(&hunks, 1);
    if one.len() <= max {
        return Folded {
            lines: one,
            hidden: 0,
        };
    }
    let mut lines = with_context(&hunks, 0);
    let mut hidden = lines.len().saturating_sub(max);
    lines.truncate(max);
    while lines.last().is_some_and(|l| l.starts_with("@@")) {
        lines.pop();
        hidden += 1;
    }
    Folded { lines, hidden }
}

/// One hunk: where each side starts (1-based line of its first line) and
/// its lines, sign first.
struct Hunk<'a> {
    old_start: usize,
    new_start: usize,
    lines: Vec<&'a str>,
}

fn parse(diff: &str) -> Vec<Hunk<'_>> {
    let mut hunks: Vec<Hunk<'_>> = Vec::new();
    for line in diff.lines() {
        if let Some((old_start, new_start)) = header(line) {
            hunks.push(Hunk {
                old_start,
                new_start,
                lines: Vec::new(),
            });
        } else if let Some(h) = hunks.last_mut() {
            h.lines.push(line);
        }
    }
    hunks
}

/// The first line of each side of `@@ -a,b +c,d @@` (an empty side's start
/// names the line before it, so its first line is one further).
fn header(line: &str) -> Option<(usize, usize)> {
    let body = line.strip_prefix("@@ -")?.strip_suffix(" @@")?;
    let (old, new) = body.split_once(" +")?;
    let first = |range: &str| -> Option<usize> {
        let (start, len) = range.split_once(',').unwrap_or((range, "1"));
        let start: usize = start.parse().ok()?;
        Some(if len == "0" { start + 1 } else { start })
    };
    Some((first(old)?, first(new)?))
}

/// The hunks again with `radius` lines of context around each change; a
/// hunk whose changes lie further apart splits in several.
fn with_context(hunks: &[Hunk<'_>], radius: usize) -> Vec<String> {
    let mut out = Vec::new();
    for h in hunks {
        let changed: Vec<bool> = h
            .lines
            .iter()
            .map(|l| l.starts_with('-') || l.starts_with('+'))
            .collect();
        // A `\ No newline` marker belongs to the line before it.
        let keep: Vec<bool> = (0..h.lines.len())
            .map(|i| {
                let at = if h.lines[i].starts_with('\\') {
                    i.saturating_sub(1)
                } else {
                    i
                };
                let lo = at.saturating_sub(radius);
                let hi = (at + radius + 1).min(h.lines.len());
                changed[lo..hi].iter().any(|&c| c)
            })
            .collect();
        let (mut old_no, mut new_no) = (h.old_start, h.new_start);
        let mut i = 0;
        while i < h.lines.len() {
            if !keep[i] {
                advance(h.lines[i], &mut old_no, &mut new_no);
                i += 1;
                continue;
            }
            let (old_first, new_first) = (old_no, new_no);
            let start = i;
            while i < h.lines.len() && keep[i] {
                advance(h.lines[i], &mut old_no, &mut new_no);
                i += 1;
            }
            let range = |first: usize, len: usize| {
                if len == 0 {
                    format!("{},0", first - 1)
                } else {
                    format!("{first},{len}")
                }
            };
            out.push(format!(
                "@@ -{} +{} @@",
                range(old_first, old_no - old_first),
                range(new_first, new_no - new_first)
            ));
            out.extend(h.lines[start..i].iter().map(|l| l.to_string()));
        }
    }
    out
}

/// Step the line numbers of each side past `line`.
fn advance(line: &str, old_no: &mut usize, new_no: &mut usize) {
    match line.as_bytes().first() {
        Some(b'-') => *old_no += 1,
        Some(b'+') => *new_no += 1,
        Some(b'\\') => {}
        _ => {
            *old_no += 1;
            *new_no += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn a_diff_that_fits_is_shown_whole() {
        let d = diff(
            &numbered(10),
            &numbered(10).replace("line 5\n", "line five\n"),
        );
        let f = fold(&d.text, 9);
        assert_eq!(f.lines, d.text.lines().collect::<Vec<_>>());
        assert_eq!(f.hidden, 0);
    }

    #[test]
    fn context_shrinks_before_a_change_is_cut() {
        let d = diff(
            &numbered(10),
            &numbered(10).replace("line 5\n", "line five\n"),
        );
        assert_eq!(d.text.lines().count(), 9);
        let f = fold(&d.text, 5);
        assert_eq!(
            f.lines,
            [
                "@@ -4,3 +4,3 @@",
                " line 4",
                "-line 5",
                "+line five",
                " line 6"
            ]
        );
        assert_eq!(f.hidden, 0);
        let f = fold(&d.text, 3);
        assert_eq!(f.lines, ["@@ -5,1 +5,1 @@", "-line 5", "+line five"]);
        assert_eq!(f.hidden, 0);
    }

    #[test]
    fn far_apart_changes_of_one_hunk_get_their_own_headers() {
        let new = numbered(12)
            .replace("line 3\n", "line three\n")
            .replace("line 9\n", "line nine\n");
        let d = diff(&numbered(12), &new);
        assert_eq!(d.text.matches("@@").count(), 2, "one hunk: {}", d.text);
        let f = fold(&d.text, 6);
        assert_eq!(
            f.lines,
            [
                "@@ -3,1 +3,1 @@",
                "-line 3",
                "+line three",
                "@@ -9,1 +9,1 @@",
                "-line 9",
                "+line nine"
            ]
        );
    }

    #[test]
    fn what_does_not_fit_is_cut_and_counted() {
        let new: String = (1..=40).map(|i| format!("new {i}\n")).collect();
        let d = diff("", &new);
        let f = fold(&d.text, 5);
        assert_eq!(f.lines[0], "@@ -0,0 +1,40 @@");
        assert_eq!(f.lines[1..], ["+new 1", "+new 2", "+new 3", "+new 4"]);
        assert_eq!(f.hidden, 36);
        // Never a header with nothing under it.
        let new = numbered(20)
            .replace("line 2\n", "line two\n")
            .replace("line 18\n", "line eighteen\n");
        let d = diff(&numbered(20), &new);
        let f = fold(&d.text, 4);
        assert_eq!(f.lines, ["@@ -2,1 +2,1 @@", "-line 2", "+line two"]);
        assert_eq!(f.hidden, 3);
    }

    #[test]
    fn added_and_deleted_ranges_are_numbered_as_diff_does() {
        let d = diff(&numbered(10), &numbered(10).replace("line 5\n", ""));
        let f = fold(&d.text, 2);
        assert_eq!(f.lines, ["@@ -5,1 +4,0 @@", "-line 5"]);
        let d = diff(
            &numbered(10),
            &numbered(10).replace("line 5\n", "line 5\nextra\n"),
        );
        let f = fold(&d.text, 2);
        assert_eq!(f.lines, ["@@ -5,0 +6,1 @@", "+extra"]);
    }

    #[test]
    fn the_no_newline_marker_stays_with_its_line() {
        let d = diff("a\nb\nc\nd\ne\nf", "a\nb\nc\nd\ne\nF");
        let f = fold(&d.text, 4);
        assert!(
            f.lines
                .contains(&"\\ No newline at end of file".to_string()),
            "{f:?}"
        );
        assert_eq!(fold(&d.text, 0), Folded::default());
    }
}
