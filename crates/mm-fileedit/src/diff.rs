//! Unified diffs of the changed regions only (format: see the crate doc).
//!
//! The caller knows where the text changed (edits) or finds it cheaply
//! (common prefix and suffix); only those windows, widened by the context,
//! go through Myers. Lines are split on `\n` alone, as read_file numbers
//! them, so a stray `\r` never shifts a line number.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, DiffTag};

use crate::text::{
    back_lines, common_prefix, common_suffix, count_newlines, count_newlines_upto, forward_lines,
    line_start,
};

/// Lines of unchanged context around each change.
pub const CONTEXT_LINES: usize = 3;

/// Bound on Myers per window: a pathological replacement gets a coarser
/// diff instead of a stalled tool call.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// A rendered diff and the numbers the headlines quote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// The hunks, every line ending in `\n`; empty when nothing changed.
    pub text: String,
    /// Lines added (`+A` in the headlines).
    pub added: usize,
    /// Lines deleted (`-D`).
    pub deleted: usize,
    /// 1-based line of the first change; `None` when nothing changed.
    pub first_line: Option<usize>,
}

impl Diff {
    /// True when the two texts were identical.
    pub fn is_empty(&self) -> bool {
        self.first_line.is_none()
    }
}

/// A changed region: a line-aligned byte range of the old text and what
/// the new text holds there (also ending on a line end, or at the end).
/// Outside the regions both texts hold the same bytes, so the new text never
/// has to exist as a whole for the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region<'a> {
    pub old: Range<usize>,
    pub new: Cow<'a, str>,
}

/// The diff between two whole texts (write_file). The common prefix and
/// suffix are skipped with block compares, so a small change in a big file
/// stays cheap.
pub fn diff(old: &str, new: &str) -> Diff {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let prefix = common_prefix(ob, nb);
    if prefix == ob.len() && prefix == nb.len() {
        return Diff::default();
    }
    let start = line_start(ob, prefix);
    let suffix = common_suffix(&ob[start..], &nb[start..], usize::MAX);
    let (mut old_end, mut new_end) = (ob.len() - suffix, nb.len() - suffix);
    let aligned = |bytes: &[u8], pos: usize| pos == start || bytes[pos - 1] == b'\n';
    if !(aligned(ob, old_end) && aligned(nb, new_end)) {
        // Move both ends to the next line start inside the shared suffix.
        match ob[old_end..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                old_end += i + 1;
                new_end += i + 1;
            }
            None => {
                old_end = ob.len();
                new_end = nb.len();
            }
        }
    }
    render(
        old,
        &[Region {
            old: start..old_end,
            new: Cow::Borrowed(&new[start..new_end]),
        }],
    )
}

/// Render the diff of `regions` (sorted, line-aligned, disjoint) of `old`.
pub(crate) fn render(old: &str, regions: &[Region<'_>]) -> Diff {
    let ob = old.as_bytes();
    let mut out = Diff::default();
    // Old line index at `line_pos`, counted lazily, and how far the new
    // numbering has drifted from the old one at that point.
    let (mut line_pos, mut line_no) = (0usize, 0usize);
    let mut drift: isize = 0;
    let mut i = 0;
    while i < regions.len() {
        // Regions whose unchanged gap fits in the context of both sides
        // share one window, so they come out as one hunk.
        let mut j = i;
        while j + 1 < regions.len()
            && count_newlines_upto(
                &ob[regions[j].old.end..regions[j + 1].old.start],
                2 * CONTEXT_LINES,
            ) <= 2 * CONTEXT_LINES
        {
            j += 1;
        }
        let ws = back_lines(ob, regions[i].old.start, CONTEXT_LINES);
        let we = forward_lines(ob, regions[j].old.end, CONTEXT_LINES);
        // The new side of the window: the same context, the regions' new
        // contents, and the unchanged gaps between them.
        let mut nw = String::new();
        let mut pos = ws;
        for r in &regions[i..=j] {
            nw.push_str(&old[pos..r.old.start]);
            nw.push_str(&r.new);
            pos = r.old.end;
        }
        nw.push_str(&old[pos..we]);
        line_no += count_newlines(&ob[line_pos..ws]);
        let new_base = line_no.saturating_add_signed(drift);
        let ow = &old[ws..we];
        hunks(ow, &nw, line_no, new_base, &mut out);
        let (old_lines, new_lines) = (count_newlines(ow.as_bytes()), count_newlines(nw.as_bytes()));
        line_no += old_lines;
        line_pos = we;
        drift += new_lines as isize - old_lines as isize;
        i = j + 1;
    }
    out
}

/// Lines split after each `\n`; the last one may lack it.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Diff one window and append its hunks; `old_base`/`new_base` are the
/// 0-based line indexes of the window's first line.
fn hunks(old: &str, new: &str, old_base: usize, new_base: usize, out: &mut Diff) {
    let (ol, nl) = (split_lines(old), split_lines(new));
    let deadline = Instant::now().checked_add(DIFF_TIMEOUT);
    let ops = renumber(similar::capture_diff_slices_deadline(
        Algorithm::Myers,
        &ol,
        &nl,
        deadline,
    ));
    for group in similar::group_diff_ops(ops, CONTEXT_LINES) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            out.text,
            "@@ -{} +{} @@",
            hunk_range(old_base + old_range.start, old_range.len()),
            hunk_range(new_base + new_range.start, new_range.len()),
        );
        for op in &group {
            let (tag, old_r, new_r) = op.as_tag_tuple();
            if tag != DiffTag::Equal && out.first_line.is_none() {
                out.first_line = Some(if old_r.is_empty() {
                    new_base + new_r.start + 1
                } else {
                    old_base + old_r.start + 1
                });
            }
            match op {
                DiffOp::Equal { .. } => push_lines(&mut out.text, ' ', &ol[old_r]),
                DiffOp::Delete { .. } => {
                    out.deleted += old_r.len();
                    push_lines(&mut out.text, '-', &ol[old_r]);
                }
                DiffOp::Insert { .. } => {
                    out.added += new_r.len();
                    push_lines(&mut out.text, '+', &nl[new_r]);
                }
                DiffOp::Replace { .. } => {
                    out.deleted += old_r.len();
                    out.added += new_r.len();
                    push_lines(&mut out.text, '-', &ol[old_r]);
                    push_lines(&mut out.text, '+', &nl[new_r]);
                }
            }
        }
    }
}

/// similar's Myers can give an op a wrong index on the side it does not
/// touch (a Delete's `new_index`: mitsuhiko/similar#78), which shifted hunk
/// headers. The ops themselves come in order, so both sides are numbered
/// again by walking them.
fn renumber(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let (mut old, mut new) = (0, 0);
    ops.into_iter()
        .map(|op| {
            let (old_index, new_index) = (old, new);
            let op = match op {
                DiffOp::Equal { len, .. } => DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                },
                DiffOp::Delete { old_len, .. } => DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                },
                DiffOp::Insert { new_len, .. } => DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                },
                DiffOp::Replace {
                    old_len, new_len, ..
                } => DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                },
            };
            old += op.old_range().len();
            new += op.new_range().len();
            op
        })
        .collect()
}

/// `start,count` of a hunk header; an empty range names the line before.
fn hunk_range(start0: usize, len: usize) -> String {
    if len == 0 {
        format!("{start0},0")
    } else {
        format!("{},{len}", start0 + 1)
    }
}

fn push_lines(out: &mut String, sign: char, lines: &[&str]) {
    for line in lines {
        out.push(sign);
        match line.strip_suffix('\n') {
            Some(body) => {
                out.push_str(body);
                out.push('\n');
            }
            None => {
                out.push_str(line);
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn hunk_headers_hold_when_myers_misnumbers_a_deletion() {
        // Found by fuzz/fileedit (similar's Myers numbers these Deletes
        // wrongly on the new side, mitsuhiko/similar#78).
        let d = diff("A\n\nC", "\nB\n\nC");
        assert_eq!(
            d.text,
            "@@ -1,3 +1,4 @@\n-A\n \n+B\n+\n C\n\\ No newline at end of file\n"
        );
        assert_eq!((d.added, d.deleted, d.first_line), (2, 1, Some(1)));
        let old = "\n\n\n\n\n\n\n1\n";
        let new = format!("x\ny\n{}", "\n".repeat(19));
        let d = diff(old, &new);
        assert!(
            d.text.ends_with("@@ -5,4 +19,3 @@\n \n \n \n-1\n"),
            "{}",
            d.text
        );
        assert_eq!((d.added, d.deleted, d.first_line), (14, 1, Some(1)));
    }

    #[test]
    fn identical_texts_give_an_empty_diff() {
        let d = diff("a\nb\n", "a\nb\n");
        assert!(d.is_empty());
        assert_eq!(d, Diff::default());
    }

    #[test]
    fn one_changed_line_has_three_lines_of_context() {
        let old = numbered(10);
        let new = old.replace("line 5\n", "line five\n");
        let d = diff(&old, &new);
        assert_eq!(
            d.text,
            "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"
        );
        assert_eq!((d.added, d.deleted, d.first_line), (1, 1, Some(5)));
    }

    #[test]
    fn new_file_and_emptied_file() {
        let d = diff("", "a\nb\n");
        assert_eq!(d.text, "@@ -0,0 +1,2 @@\n+a\n+b\n");
        assert_eq!((d.added, d.deleted, d.first_line), (2, 0, Some(1)));
        let d = diff("a\nb\n", "");
        assert_eq!(d.text, "@@ -1,2 +0,0 @@\n-a\n-b\n");
        assert_eq!((d.added, d.deleted, d.first_line), (0, 2, Some(1)));
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let d = diff("a\nb", "a\nb\n");
        assert_eq!(
            d.text,
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
        assert_eq!((d.added, d.deleted, d.first_line), (1, 1, Some(2)));
    }

    #[test]
    fn appended_lines_start_after_the_last_line() {
        let d = diff("a\nb\n", "a\nb\nc\n");
        assert_eq!(d.text, "@@ -1,2 +1,3 @@\n a\n b\n+c\n");
        assert_eq!(d.first_line, Some(3));
    }

    #[test]
    fn far_apart_changes_make_two_hunks_near_ones_one() {
        let old = numbered(30);
        let far = old.replace("line 3\n", "x\n").replace("line 20\n", "y\n");
        let d = diff(&old, &far);
        assert_eq!(d.text.matches("@@ ").count(), 2, "{}", d.text);
        assert!(d.text.contains("@@ -17,7 +17,7 @@\n"), "{}", d.text);
        let near = old.replace("line 3\n", "x\n").replace("line 10\n", "y\n");
        let d = diff(&old, &near);
        assert_eq!(d.text.matches("@@ ").count(), 1, "{}", d.text);
        assert!(d.text.starts_with("@@ -1,13 +1,13 @@\n"), "{}", d.text);
    }

    #[test]
    fn lone_carriage_returns_do_not_shift_line_numbers() {
        let old = "a\rb\nc\nd\ne\nf\n";
        let new = "a\rb\nc\nd\ne\nF\n";
        let d = diff(old, new);
        // Line 1 is `a\rb`: the change on line 5 has lines 2 to 4 as context.
        assert_eq!(d.text, "@@ -2,4 +2,4 @@\n c\n d\n e\n-f\n+F\n");
        assert_eq!(d.first_line, Some(5));
    }

    #[test]
    fn a_change_inside_a_multibyte_run_stays_on_char_boundaries() {
        let d = diff("héllo wörld\n", "héllo wõrld\n");
        assert_eq!(d.text, "@@ -1,1 +1,1 @@\n-héllo wörld\n+héllo wõrld\n");
    }

    #[test]
    fn line_numbers_after_a_growing_hunk_follow_the_new_text() {
        let old = numbered(40);
        let new = old
            .replace("line 2\n", "a\nb\nc\n")
            .replace("line 30\n", "z\n");
        // One region from line 2 to line 30: the second hunk's new start
        // is shifted by the two lines the first hunk added.
        let d = diff(&old, &new).text;
        assert!(d.contains("@@ -27,7 +29,7 @@\n"), "{d}");
    }

    #[test]
    fn render_keeps_the_drift_across_separate_windows() {
        let old = numbered(40);
        // Line 2 (bytes 7..14) becomes three lines; line 30 becomes `z`.
        let l30 = old.find("line 30\n").unwrap();
        let d = render(
            &old,
            &[
                Region {
                    old: 7..14,
                    new: Cow::Borrowed("a\nb\nc\n"),
                },
                Region {
                    old: l30..l30 + 8,
                    new: Cow::Owned("z\n".to_string()),
                },
            ],
        );
        assert_eq!(d.text.matches("@@ ").count(), 2, "{}", d.text);
        assert!(d.text.contains("@@ -27,7 +29,7 @@\n"), "{}", d.text);
        assert_eq!((d.added, d.deleted, d.first_line), (4, 2, Some(2)));
    }
}
