//! mm-fileedit: exact-replacement editing of text and the diffs shown for
//! it. Pure text in, text out: it never touches the disk (the tools do).
//!
//! It owns the rules behind `edit_file` (every `old` present exactly once,
//! edits resolved against the original, overlap / nest / repeat refusals,
//! CRLF and BOM kept) and the diff format every file tool shows.
//!
//! # Diff format
//! A unified diff without file headers (the headline names the file):
//! hunks `@@ -3,2 +3,3 @@` (old start,count then new start,count; a start of
//! an empty range is the line before it, as in `diff -u`) with 3 lines of
//! context, each line prefixed by ` `, `-` or `+`, and
//! `\ No newline at end of file` after a line that has none. Only the
//! changed regions are diffed, so a few edits in a 50 MB file cost a few
//! scans of it, never a Myers diff over the whole text.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod diff;
mod edit;
mod fold;
mod text;

pub use diff::{CONTEXT_LINES, Diff, diff};
pub use edit::{Applied, Edit, Refusal, Replacement, apply, refusal_text};
pub use fold::{Folded, fold};
pub use text::line_count;
