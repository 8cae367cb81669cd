//! Exact-replacement edits: every `old` found exactly once in the ORIGINAL
//! text, never in the text an earlier edit produced, so the result does not
//! depend on the order the model listed them in.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use crate::diff::{Diff, Region, render};
use crate::text::{after_next_newline, count_newlines, line_start};

/// One replacement: `old` (exact text, present once) becomes `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The exact text to replace; it must occur once in the original.
    pub old: String,
    /// The text that takes its place (empty deletes it).
    pub new: String,
}

impl Edit {
    /// An edit replacing `old` by `new`.
    pub fn new(old: impl Into<String>, new: impl Into<String>) -> Self {
        Edit {
            old: old.into(),
            new: new.into(),
        }
    }
}

/// One replacement in the original: its byte range there, and the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The byte range of the replaced text in the original.
    pub range: Range<usize>,
    /// The text that takes its place.
    pub text: String,
}

/// The result of [`apply`]: the replacements and the diff. The new text is
/// not built unless asked for: a caller that writes a 50 MB file writes the
/// [`Applied::pieces`] one after another instead of copying it all first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The diff between the original and the new text.
    pub diff: Diff,
    /// Sorted by position, disjoint.
    pub replacements: Vec<Replacement>,
}

impl Applied {
    /// The new text as consecutive pieces. `original` must be the text that
    /// was given to [`apply`].
    pub fn pieces<'a>(&'a self, original: &'a str) -> Vec<&'a str> {
        let mut out = Vec::with_capacity(2 * self.replacements.len() + 1);
        let mut pos = 0;
        for r in &self.replacements {
            out.push(original.get(pos..r.range.start).unwrap_or(""));
            out.push(r.text.as_str());
            pos = r.range.end;
        }
        out.push(original.get(pos..).unwrap_or(""));
        out
    }

    /// The whole new text (`original` as for [`Applied::pieces`]).
    pub fn text(&self, original: &str) -> String {
        let pieces = self.pieces(original);
        let mut text = String::with_capacity(pieces.iter().map(|p| p.len()).sum());
        for p in pieces {
            text.push_str(p);
        }
        text
    }
}

/// Why a call's edits were refused. Edit numbers are 1-based, as the model
/// counts them; in a pair `first < second`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The call listed no edit.
    NoEdits,
    /// `old` was empty.
    Empty {
        /// The edit's number.
        edit: usize,
    },
    /// `old` does not occur.
    NotFound {
        /// The edit's number.
        edit: usize,
    },
    /// `old` occurs `count` times, starting on `lines` (1-based, each line
    /// once however many matches start on it; at most
    /// [`Refusal::MAX_LINES`] of them, `more` when further lines hold
    /// matches).
    Ambiguous {
        /// The edit's number.
        edit: usize,
        /// How many times `old` occurs.
        count: usize,
        /// The lines the matches start on, ascending.
        lines: Vec<usize>,
        /// Further lines, past [`Refusal::MAX_LINES`], hold matches too.
        more: bool,
    },
    /// The two matches share some text but neither holds the other.
    Overlap {
        /// The edit listed first.
        first: usize,
        /// The edit listed later.
        second: usize,
    },
    /// One match lies inside the other.
    Nest {
        /// The edit listed first.
        first: usize,
        /// The edit listed later.
        second: usize,
    },
    /// Both edits match the same text.
    Repeat {
        /// The edit listed first.
        first: usize,
        /// The edit listed later.
        second: usize,
    },
}

impl Refusal {
    /// How many distinct line numbers an ambiguity lists; a model needs a
    /// few to find the places, not a million.
    pub const MAX_LINES: usize = 20;

    /// The first edit the refusal names (0 for [`Refusal::NoEdits`]): the
    /// order refusals are listed in.
    pub fn first_edit(&self) -> usize {
        match self {
            Refusal::NoEdits => 0,
            Refusal::Empty { edit }
            | Refusal::NotFound { edit }
            | Refusal::Ambiguous { edit, .. } => *edit,
            Refusal::Overlap { first, .. }
            | Refusal::Nest { first, .. }
            | Refusal::Repeat { first, .. } => *first,
        }
    }

    fn order_key(&self) -> (usize, usize) {
        match self {
            Refusal::Overlap { first, second }
            | Refusal::Nest { first, second }
            | Refusal::Repeat { first, second } => (*first, *second),
            other => (other.first_edit(), 0),
        }
    }

    /// The text the model gets (docs/design.md#edit-rules). `several`:
    /// the call had more than one edit, so single-edit texts get `edit K: `.
    pub fn message(&self, path: &str, several: bool) -> String {
        let prefix = |edit: usize| {
            if several {
                format!("edit {edit}: ")
            } else {
                String::new()
            }
        };
        match self {
            Refusal::NoEdits => "no edits given".to_string(),
            Refusal::Empty { edit } => format!(
                "{}old text is empty; give the exact text to replace",
                prefix(*edit)
            ),
            Refusal::NotFound { edit } => {
                format!("{}old text not found in {path}", prefix(*edit))
            }
            Refusal::Ambiguous {
                edit,
                count,
                lines,
                more,
            } => {
                let mut list = lines
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                if *more {
                    list.push_str(", …");
                }
                format!(
                    "{}old text appears {count} times (lines {list}) — to change ONE of them, \
                     include its surrounding lines in old until the text is unique; to change \
                     several, send one edit per place.",
                    prefix(*edit)
                )
            }
            Refusal::Overlap { first, second } => {
                format!("edits {first} and {second} overlap in {path}")
            }
            Refusal::Nest { first, second } => {
                format!("edits {first} and {second} nest in {path}")
            }
            Refusal::Repeat { first, second } => {
                format!("edits {first} and {second} repeat the same text in {path}")
            }
        }
    }
}

/// All refusals of a call of `edits` edits, one per line, in order.
pub fn refusal_text(refusals: &[Refusal], path: &str, edits: usize) -> String {
    let mut out = String::new();
    for (i, r) in refusals.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "{}", r.message(path, edits > 1));
    }
    out
}

const BOM: &str = "\u{feff}";

/// Apply `edits` to `original`, all resolved against `original`. Either
/// every edit applies or none does: the refusals come back ordered by the
/// first edit each names.
///
/// A file whose first line ends in CRLF gets `old` and `new` converted to
/// CRLF before matching (when the converted `old` is absent but the text
/// as given is there, as in a file of mixed line endings, that matches);
/// a leading byte order mark stays where it is
/// (docs/design.md#line-endings-and-bom).
pub fn apply(original: &str, edits: &[Edit]) -> Result<Applied, Vec<Refusal>> {
    if edits.is_empty() {
        return Err(vec![Refusal::NoEdits]);
    }
    let bom = if original.starts_with(BOM) {
        BOM.len()
    } else {
        0
    };
    let body = &original[bom..];
    let crlf = body
        .find('\n')
        .is_some_and(|i| i > 0 && body.as_bytes()[i - 1] == b'\r');
    let convert = |s: &str| -> String {
        if crlf {
            to_crlf(s).into_owned()
        } else {
            s.to_string()
        }
    };

    let mut refusals = Vec::new();
    // (start, end, replacement, 1-based edit number) of each edit that matched once.
    let mut spans: Vec<(usize, usize, String, usize)> = Vec::new();
    for (i, edit) in edits.iter().enumerate() {
        let k = i + 1;
        if edit.old.is_empty() {
            refusals.push(Refusal::Empty { edit: k });
            continue;
        }
        let mut old = convert(&edit.old);
        let mut new = convert(&edit.new);
        let mut found = occurrences(body, &old);
        // A file of mixed line endings may hold the text as given, byte for
        // byte, where the converted text is absent: that is the match then,
        // and its replacement goes in as given too.
        if found.count == 0 && old != edit.old {
            let literal = occurrences(body, &edit.old);
            if literal.count > 0 {
                (old, new, found) = (edit.old.clone(), edit.new.clone(), literal);
            }
        }
        match found.count {
            0 => refusals.push(Refusal::NotFound { edit: k }),
            1 => {
                let s = bom + found.first;
                spans.push((s, s + old.len(), new, k));
            }
            count => refusals.push(Refusal::Ambiguous {
                edit: k,
                count,
                lines: found.lines,
                more: found.more,
            }),
        }
    }
    for (a, x) in spans.iter().enumerate() {
        for y in &spans[a + 1..] {
            let (first, second) = (x.3.min(y.3), x.3.max(y.3));
            let (xs, xe, ys, ye) = (x.0, x.1, y.0, y.1);
            if xs == ys && xe == ye {
                refusals.push(Refusal::Repeat { first, second });
            } else if xs < ye && ys < xe {
                if (xs <= ys && ye <= xe) || (ys <= xs && xe <= ye) {
                    refusals.push(Refusal::Nest { first, second });
                } else {
                    refusals.push(Refusal::Overlap { first, second });
                }
            }
        }
    }
    if !refusals.is_empty() {
        refusals.sort_by_key(Refusal::order_key);
        return Err(refusals);
    }

    spans.sort_by_key(|s| s.0);
    let regions = regions(original, &spans);
    let diff = render(original, &regions);
    let replacements = spans
        .into_iter()
        .map(|(s, e, text, _)| Replacement { range: s..e, text })
        .collect();
    Ok(Applied { diff, replacements })
}

/// The line-aligned regions that the (sorted, disjoint) spans change, each
/// with its new content. Spans that share a line share a region.
fn regions<'a>(original: &'a str, spans: &[(usize, usize, String, usize)]) -> Vec<Region<'a>> {
    let ob = original.as_bytes();
    // Through the end of the line holding the last replaced byte; when a
    // match ends on a line end the next line joins, so that the new side
    // ends on a line end too.
    let end_after = |e: usize| {
        if e == ob.len() {
            e
        } else {
            after_next_newline(ob, e)
        }
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < spans.len() {
        let start = line_start(ob, spans[i].0);
        let mut end = end_after(spans[i].1);
        let mut j = i + 1;
        while j < spans.len() && line_start(ob, spans[j].0) < end {
            end = end.max(end_after(spans[j].1));
            j += 1;
        }
        let mut content = String::new();
        let mut pos = start;
        for (s, e, new, _) in &spans[i..j] {
            content.push_str(&original[pos..*s]);
            content.push_str(new);
            pos = *e;
        }
        content.push_str(&original[pos..end]);
        out.push(Region {
            old: start..end,
            new: Cow::Owned(content),
        });
        i = j;
    }
    out
}

struct Found {
    count: usize,
    /// Byte offset of the first match.
    first: usize,
    /// 1-based lines the matches start on, each once (at most `MAX_LINES`).
    lines: Vec<usize>,
    /// Matches start on further lines too.
    more: bool,
}

impl Found {
    /// Note a match starting on `line` (lines arrive in order).
    fn on_line(&mut self, line: usize) {
        if self.lines.last() == Some(&line) {
            return;
        }
        if self.lines.len() < Refusal::MAX_LINES {
            self.lines.push(line);
        } else {
            self.more = true;
        }
    }
}

/// Count the occurrences of `needle` (non-overlapping, linear time) and the
/// lines they start on. A single match that overlaps another copy of
/// itself (`aa` in `aaa`) is not unique either: that counts as two.
fn occurrences(hay: &str, needle: &str) -> Found {
    let mut found = Found {
        count: 0,
        first: 0,
        lines: Vec::new(),
        more: false,
    };
    // Lines are counted only while they can still be listed.
    let (mut pos, mut line) = (0, 1);
    for (i, _) in hay.match_indices(needle) {
        if found.count == 0 {
            found.first = i;
        }
        found.count += 1;
        if !found.more {
            line += count_newlines(&hay.as_bytes()[pos..i]);
            pos = i;
            found.on_line(line);
        }
    }
    if found.count == 1 {
        let s = found.first;
        let step = hay[s..].chars().next().map_or(1, char::len_utf8);
        if let Some(j) = hay[s + step..].find(needle) {
            found.count = 2;
            let at = s + step + j;
            found.on_line(line + count_newlines(&hay.as_bytes()[pos..at]));
        }
    }
    found
}

/// `\n` not already preceded by `\r` becomes `\r\n`.
fn to_crlf(s: &str) -> Cow<'_, str> {
    if !s.contains('\n') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    let mut prev = '\0';
    for c in s.chars() {
        if c == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(c);
        prev = c;
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The applied text built, with the diff.
    #[derive(Debug, PartialEq)]
    struct Done {
        text: String,
        diff: Diff,
    }

    fn run(original: &str, edits: &[Edit]) -> Result<Done, Vec<Refusal>> {
        apply(original, edits).map(|a| Done {
            text: a.text(original),
            diff: a.diff,
        })
    }

    fn e(old: &str, new: &str) -> Edit {
        Edit::new(old, new)
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn single_edit_replaces_and_reports() {
        let a = run("a\nb\nc\n", &[e("b", "B")]).unwrap();
        assert_eq!(a.text, "a\nB\nc\n");
        assert_eq!(a.diff.text, "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
        assert_eq!(
            (a.diff.added, a.diff.deleted, a.diff.first_line),
            (1, 1, Some(2))
        );
    }

    #[test]
    fn pieces_are_the_new_text_in_order() {
        let t = "a1 b2 c3\n";
        let a = apply(t, &[e("c3", "C"), e("a1", "")]).unwrap();
        assert_eq!(a.pieces(t), ["", "", " b2 ", "C", "\n"]);
        assert_eq!(a.text(t), " b2 C\n");
        assert_eq!(
            a.replacements,
            vec![
                Replacement {
                    range: 0..2,
                    text: String::new()
                },
                Replacement {
                    range: 6..8,
                    text: "C".into()
                },
            ]
        );
    }

    #[test]
    fn empty_new_deletes_the_match() {
        let a = run("keep\ndrop\nkeep too\n", &[e("drop\n", "")]).unwrap();
        assert_eq!(a.text, "keep\nkeep too\n");
        assert_eq!(a.diff.text, "@@ -1,3 +1,2 @@\n keep\n-drop\n keep too\n");
    }

    #[test]
    fn no_edits_and_empty_old() {
        assert_eq!(run("x", &[]).unwrap_err(), vec![Refusal::NoEdits]);
        assert_eq!(
            refusal_text(&[Refusal::NoEdits], "f.txt", 0),
            "no edits given"
        );
        let r = run("x", &[e("", "y")]).unwrap_err();
        assert_eq!(
            refusal_text(&r, "f.txt", 1),
            "old text is empty; give the exact text to replace"
        );
        let r = run("x", &[e("x", "y"), e("", "y")]).unwrap_err();
        assert_eq!(
            refusal_text(&r, "f.txt", 2),
            "edit 2: old text is empty; give the exact text to replace"
        );
    }

    #[test]
    fn not_found_and_ambiguous_texts() {
        let r = run("abc\n", &[e("zzz", "y")]).unwrap_err();
        assert_eq!(
            refusal_text(&r, "src/a.rs", 1),
            "old text not found in src/a.rs"
        );
        let text = "x\nfoo\nx\nfoo\n";
        let r = run(text, &[e("foo", "bar")]).unwrap_err();
        assert_eq!(
            refusal_text(&r, "a", 1),
            "old text appears 2 times (lines 2, 4) — to change ONE of them, include its \
             surrounding lines in old until the text is unique; to change several, send one \
             edit per place."
        );
    }

    #[test]
    fn self_overlapping_single_match_is_ambiguous() {
        let r = run("aaa\n", &[e("aa", "b")]).unwrap_err();
        assert_eq!(
            r,
            vec![Refusal::Ambiguous {
                edit: 1,
                count: 2,
                lines: vec![1],
                more: false,
            }]
        );
    }

    #[test]
    fn ambiguity_lists_each_line_once() {
        // Three matches on two lines: N counts matches, the list lines.
        let r = run("one\ntwo\nthree\n", &[e("e", "E")]).unwrap_err();
        assert_eq!(
            refusal_text(&r, "a", 1),
            "old text appears 3 times (lines 1, 3) — to change ONE of them, include its \
             surrounding lines in old until the text is unique; to change several, send one \
             edit per place."
        );
        // Many matches on few lines: no "…" when every line is listed.
        let r = run(&"xx x\n".repeat(3), &[e("x", "y")]).unwrap_err();
        assert!(
            refusal_text(&r, "a", 1).starts_with("old text appears 9 times (lines 1, 2, 3) — "),
            "{r:?}"
        );
        // A match spanning lines starts on its first one.
        let r = run("a\nb\na\nb\n", &[e("a\nb", "c")]).unwrap_err();
        assert!(
            refusal_text(&r, "a", 1).starts_with("old text appears 2 times (lines 1, 3) — "),
            "{r:?}"
        );
        // More distinct lines than are listed end in "…".
        let text: String = (0..25).map(|_| "x x\n").collect();
        let r = run(&text, &[e("x", "y")]).unwrap_err();
        let expected: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
        assert!(
            refusal_text(&r, "a", 1).starts_with(&format!(
                "old text appears 50 times (lines {}, …) — ",
                expected.join(", ")
            )),
            "{r:?}"
        );
    }

    #[test]
    fn ambiguity_lists_at_most_max_lines() {
        let text = "x\n".repeat(30);
        let r = run(&text, &[e("x", "y")]).unwrap_err();
        let msg = refusal_text(&r, "a", 1);
        let expected: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
        assert!(
            msg.starts_with(&format!(
                "old text appears 30 times (lines {}, …) — ",
                expected.join(", ")
            )),
            "{msg}"
        );
    }

    #[test]
    fn edits_resolve_against_the_original_never_in_cascade() {
        // Edit 1 creates the text edit 2 looks for: edit 2 must not see it.
        let r = run("one\ntwo\n", &[e("one", "three"), e("three", "four")]).unwrap_err();
        assert_eq!(refusal_text(&r, "f", 2), "edit 2: old text not found in f");
        // A swap works because both match the original.
        let a = run("one\ntwo\n", &[e("one", "two"), e("two", "one")]).unwrap();
        assert_eq!(a.text, "two\none\n");
    }

    #[test]
    fn the_listed_order_does_not_matter() {
        let t = numbered(50);
        let a = run(&t, &[e("line 40\n", "X\n"), e("line 3\n", "Y\n")]).unwrap();
        let b = run(&t, &[e("line 3\n", "Y\n"), e("line 40\n", "X\n")]).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn overlap_nest_repeat() {
        let t = "alpha beta gamma\n";
        let r = run(t, &[e("alpha beta", "x"), e("beta gamma", "y")]).unwrap_err();
        assert_eq!(refusal_text(&r, "f", 2), "edits 1 and 2 overlap in f");
        let r = run(t, &[e("beta", "x"), e("alpha beta gamma", "y")]).unwrap_err();
        assert_eq!(refusal_text(&r, "f", 2), "edits 1 and 2 nest in f");
        let r = run(t, &[e("gamma", "x"), e("gamma", "y")]).unwrap_err();
        assert_eq!(
            refusal_text(&r, "f", 2),
            "edits 1 and 2 repeat the same text in f"
        );
    }

    #[test]
    fn adjacent_edits_are_not_overlapping() {
        let a = run("abcd\n", &[e("ab", "1"), e("cd", "2")]).unwrap();
        assert_eq!(a.text, "12\n");
        assert_eq!(a.diff.text, "@@ -1,1 +1,1 @@\n-abcd\n+12\n");
    }

    #[test]
    fn several_refusals_are_ordered_by_the_first_edit_they_name() {
        let t = "a b c d\nx\nx\n";
        let edits = [
            e("zzz", "1"), // 1: not found
            e("c d", "2"), // 2: overlaps 4
            e("x", "3"),   // 3: ambiguous
            e("b c", "4"), // 4
            e("a", "5"),   // 5: fine
            e("a", "6"),   // 6: repeats 5
        ];
        let r = run(t, &edits).unwrap_err();
        assert_eq!(
            refusal_text(&r, "p", edits.len()),
            "edit 1: old text not found in p\n\
             edits 2 and 4 overlap in p\n\
             edit 3: old text appears 2 times (lines 2, 3) — to change ONE of them, include \
             its surrounding lines in old until the text is unique; to change several, send \
             one edit per place.\n\
             edits 5 and 6 repeat the same text in p"
        );
    }

    #[test]
    fn pair_names_are_in_edit_order_whatever_the_position() {
        let r = run("abc\n", &[e("bc", "x"), e("ab", "y")]).unwrap_err();
        assert_eq!(
            r,
            vec![Refusal::Overlap {
                first: 1,
                second: 2
            }]
        );
        let r = run("abc\n", &[e("abc", "x"), e("b", "y")]).unwrap_err();
        assert_eq!(
            r,
            vec![Refusal::Nest {
                first: 1,
                second: 2
            }]
        );
    }

    #[test]
    fn crlf_file_gets_crlf_old_and_new() {
        let t = "one\r\ntwo\r\nthree\r\n";
        let a = run(t, &[e("one\ntwo\n", "uno\ndos\n")]).unwrap();
        assert_eq!(a.text, "uno\r\ndos\r\nthree\r\n");
        // Text already in CRLF is not doubled.
        let a = run(t, &[e("two\r\n", "2\r\n")]).unwrap();
        assert_eq!(a.text, "one\r\n2\r\nthree\r\n");
    }

    #[test]
    fn mixed_endings_match_the_literal_text_when_the_converted_one_is_absent() {
        let t = "alpha\r\nbeta\ngamma\r\n";
        let a = run(t, &[e("beta\ngamma", "BETA\nGAMMA")]).unwrap();
        assert_eq!(a.text, "alpha\r\nBETA\nGAMMA\r\n");
        // The converted text still wins where it is there.
        let a = run(t, &[e("alpha\nbeta", "A\nB")]).unwrap();
        assert_eq!(a.text, "A\r\nB\ngamma\r\n");
        // Neither form present: not found, as before.
        let r = run(t, &[e("beta\ndelta", "x")]).unwrap_err();
        assert_eq!(r, vec![Refusal::NotFound { edit: 1 }]);
    }

    #[test]
    fn lf_file_is_matched_as_is() {
        let r = run("a\nb\n", &[e("a\r\nb", "x")]).unwrap_err();
        assert_eq!(r, vec![Refusal::NotFound { edit: 1 }]);
    }

    #[test]
    fn bom_is_kept_and_not_matched() {
        let t = "\u{feff}first\nsecond\n";
        let a = run(t, &[e("first", "1st")]).unwrap();
        assert_eq!(a.text, "\u{feff}1st\nsecond\n");
        let t = "\u{feff}x\r\ny\r\n";
        let a = run(t, &[e("x\ny", "z\nw")]).unwrap();
        assert_eq!(a.text, "\u{feff}z\r\nw\r\n");
    }

    #[test]
    fn identical_replacement_leaves_an_empty_diff() {
        let a = run("a\nb\n", &[e("b", "b")]).unwrap();
        assert_eq!(a.text, "a\nb\n");
        assert!(a.diff.is_empty());
    }

    #[test]
    fn replacement_that_joins_lines_is_diffed_as_joined() {
        // "a\n" → "x" glues line 1 onto line 2.
        let a = run("a\nb\nc\n", &[e("a\n", "x")]).unwrap();
        assert_eq!(a.text, "xb\nc\n");
        assert_eq!(a.diff.text, "@@ -1,3 +1,2 @@\n-a\n-b\n+xb\n c\n");
        assert_eq!((a.diff.added, a.diff.deleted), (1, 2));
    }

    #[test]
    fn edit_at_the_end_without_final_newline() {
        let a = run("a\nb", &[e("b", "c")]).unwrap();
        assert_eq!(a.text, "a\nc");
        assert_eq!(
            a.diff.text,
            "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn far_edits_give_separate_hunks_with_right_numbers() {
        let t = numbered(100);
        let a = run(
            &t,
            &[
                e("line 10\n", "ten\nTEN\n"),
                e("line 50\n", ""),
                e("line 90\n", "ninety\n"),
            ],
        )
        .unwrap();
        assert_eq!(
            a.diff.text,
            "@@ -7,7 +7,8 @@\n line 7\n line 8\n line 9\n-line 10\n+ten\n+TEN\n line 11\n line 12\n line 13\n\
             @@ -47,7 +48,6 @@\n line 47\n line 48\n line 49\n-line 50\n line 51\n line 52\n line 53\n\
             @@ -87,7 +87,7 @@\n line 87\n line 88\n line 89\n-line 90\n+ninety\n line 91\n line 92\n line 93\n"
        );
        assert_eq!(
            (a.diff.added, a.diff.deleted, a.diff.first_line),
            (3, 3, Some(10))
        );
    }

    #[test]
    fn edits_six_lines_apart_share_a_hunk_seven_do_not() {
        let t = numbered(40);
        let a = run(&t, &[e("line 10\n", "a\n"), e("line 17\n", "b\n")]).unwrap();
        assert_eq!(a.diff.text.matches("@@ ").count(), 1, "{}", a.diff.text);
        let a = run(&t, &[e("line 10\n", "a\n"), e("line 18\n", "b\n")]).unwrap();
        assert_eq!(a.diff.text.matches("@@ ").count(), 2, "{}", a.diff.text);
    }

    #[test]
    fn two_edits_on_one_line() {
        let a = run(
            "let a = 1; let b = 2;\n",
            &[e("a = 1", "a = 10"), e("b = 2", "b = 20")],
        )
        .unwrap();
        assert_eq!(a.text, "let a = 10; let b = 20;\n");
        assert_eq!(
            a.diff.text,
            "@@ -1,1 +1,1 @@\n-let a = 1; let b = 2;\n+let a = 10; let b = 20;\n"
        );
    }

    /// A tiny deterministic generator: property-style checks without a
    /// dependency.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    /// Apply the diff's hunks to the old text; must give the new text.
    fn patch(old: &str, diff: &str) -> String {
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut next = 0; // next old line index to copy
        let lines: Vec<&str> = diff.split_inclusive('\n').collect();
        let mut i = 0;
        while i < lines.len() {
            let h = lines[i];
            assert!(h.starts_with("@@ -"), "not a hunk header: {h:?}");
            let old_part = h[4..].split(' ').next().unwrap();
            let (start, len) = old_part.split_once(',').unwrap();
            let (start, len): (usize, usize) = (start.parse().unwrap(), len.parse().unwrap());
            let first = if len == 0 { start } else { start - 1 };
            for l in &old_lines[next..first] {
                out.push_str(l);
            }
            next = first;
            i += 1;
            while i < lines.len() && !lines[i].starts_with("@@ ") {
                let l = lines[i];
                let no_nl = lines
                    .get(i + 1)
                    .is_some_and(|n| *n == "\\ No newline at end of file\n");
                let body = &l[1..];
                let body = if no_nl {
                    body.strip_suffix('\n').unwrap()
                } else {
                    body
                };
                match &l[..1] {
                    " " => {
                        assert_eq!(old_lines[next], body);
                        out.push_str(body);
                        next += 1;
                    }
                    "-" => {
                        assert_eq!(old_lines[next], body);
                        next += 1;
                    }
                    "+" => out.push_str(body),
                    other => panic!("bad line {other:?}"),
                }
                i += if no_nl { 2 } else { 1 };
            }
        }
        for l in &old_lines[next..] {
            out.push_str(l);
        }
        out
    }

    #[test]
    fn property_random_edits_patch_back_and_count_right() {
        let mut rng = Lcg(7);
        let words = ["alpha", "beta", "", "gamma delta", "x", "\t", "é"];
        for round in 0..300 {
            let n = 1 + rng.next(40);
            let mut lines: Vec<String> = (0..n)
                .map(|i| format!("{} {i}", words[rng.next(words.len())]))
                .collect();
            let final_nl = rng.next(2) == 0;
            let text = {
                let mut t = lines.join("\n");
                if final_nl {
                    t.push('\n');
                }
                t
            };
            // Pick distinct lines; each line ends in its unique index.
            let mut picked: Vec<usize> = (0..1 + rng.next(4)).map(|_| rng.next(n)).collect();
            picked.sort_unstable();
            picked.dedup();
            let edits: Vec<Edit> = picked
                .iter()
                .map(|&i| {
                    let old = format!("{}\n", lines[i]);
                    let new = match rng.next(3) {
                        0 => String::new(),
                        1 => format!("new {round}\n"),
                        _ => format!("a {round}\nb {round}\n"),
                    };
                    (old, new)
                })
                .filter(|(old, _)| text.contains(old.as_str()))
                .map(|(o, nw)| Edit::new(o, nw))
                .collect();
            if edits.is_empty() {
                continue;
            }
            let Ok(a) = run(&text, &edits) else {
                // A line can be a suffix of another ("x 1\n" in "x 11\n"? no:
                // every line holds a distinct number, but "1\n" ends "11\n").
                continue;
            };
            assert_eq!(
                patch(&text, &a.diff.text),
                a.text,
                "round {round}\n{}",
                a.diff.text
            );
            let whole = crate::diff(&text, &a.text);
            assert_eq!(patch(&text, &whole.text), a.text, "round {round}");
            // Unchanged texts: whatever the regions, the totals agree with
            // a whole-file diff.
            assert_eq!(
                a.diff.added as isize - a.diff.deleted as isize,
                whole.added as isize - whole.deleted as isize,
                "round {round}"
            );
            assert_eq!(a.diff.first_line, whole.first_line, "round {round}");
            lines.clear();
        }
    }

    #[test]
    fn property_whole_text_diff_patches_back() {
        let mut rng = Lcg(11);
        let alphabet = ["a", "b", "c", "", "dd", "a b"];
        let random_text = |rng: &mut Lcg| {
            let n = rng.next(12);
            let mut t: String = (0..n)
                .map(|_| format!("{}\n", alphabet[rng.next(alphabet.len())]))
                .collect();
            if rng.next(3) == 0 {
                t.push_str(alphabet[rng.next(alphabet.len())]);
            }
            t
        };
        for round in 0..2000 {
            let old = random_text(&mut rng);
            let new = random_text(&mut rng);
            let d = crate::diff(&old, &new);
            assert_eq!(
                patch(&old, &d.text),
                new,
                "round {round}: {old:?} → {new:?}\n{}",
                d.text
            );
            assert_eq!(
                d.added as isize - d.deleted as isize,
                crate::line_count(&new) as isize - crate::line_count(&old) as isize,
                "round {round}"
            );
            assert_eq!(d.is_empty(), old == new, "round {round}");
        }
    }

    #[test]
    fn big_text_with_few_edits_is_fast() {
        let t = numbered(400_000); // ~5 MB
        let start = std::time::Instant::now();
        let a = run(
            &t,
            &[
                e("line 1000\n", "a\n"),
                e("line 200000\n", "b\n"),
                e("line 399999\n", "c\n"),
            ],
        )
        .unwrap();
        assert!(
            a.diff.text.contains("@@ -199997,7 +199997,7 @@\n"),
            "{}",
            a.diff.text
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }
}
