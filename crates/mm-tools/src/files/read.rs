//! `read_file`: lines of a text file, optionally a range, optionally
//! numbered, cut to `maxOutput` on whole lines with a marker that says how
//! to read on (docs/reference/tools.md#what-the-model-sees).
//!
//! Key values are redacted from the file's text before the lines are
//! picked and cut, so no part of a key reaches the model
//! (docs/design.md#keys-stay-out-of-tools).
//!
//! `start` past the last line answers
//! `start (S) is past the end of <path> (N lines)`, as a failure.

use std::fs;
use std::io::{self, BufRead};

use serde::{Deserialize, Deserializer};

use super::disk::{NotRegular, open_regular, special_kind};
use super::{
    absolute, blocking, describe_path, io_failure, is_directory, missing, not_regular, parse,
    path_subject,
};
use crate::lenient;
use crate::tool::{
    Described, Plan, Subject, Tool, ToolContext, ToolOutput, ToolSpec, invalid_args,
};
use mm_redact::redacted;

const NAME: &str = "read_file";

/// `read_file`: what the tool is, for every consumer.
pub const ROW: crate::tool::ToolRow = crate::tool::ToolRow {
    name: std::borrow::Cow::Borrowed(NAME),
    family: mm_types::ToolFamily::File,
    kind: mm_types::ToolKind::Read,
    title_from: Some("path"),
    echoes: false,
    changes_files: false,
    rejection: None,
};

/// Who refuses a file that is not regular.
const READS: &str = "read_file reads";

/// The `read_file` tool. Reads only: no permission, kind `read`.
#[derive(Default)]
pub struct ReadFile {
    secrets: Vec<String>,
}

impl ReadFile {
    /// The tool; its output is cut to the call's `max_output`.
    pub fn new() -> Self {
        ReadFile::default()
    }

    /// Key values to replace by `[redacted]` before the text is cut
    /// (docs/design.md#keys-stay-out-of-tools): give it the toolbox's secrets.
    pub fn with_secrets(mut self, secrets: &[String]) -> Self {
        self.secrets = secrets.to_vec();
        self
    }
}

fn line_number<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    lenient::u64_field(d, "a line number")
}

#[derive(Deserialize)]
struct Args {
    path: String,
    #[serde(default, deserialize_with = "line_number")]
    start: u64,
    #[serde(default, deserialize_with = "line_number")]
    end: u64,
    #[serde(default, deserialize_with = "lenient::bool_field")]
    numbered: bool,
}

impl Args {
    fn parse(args: &serde_json::Value) -> Result<Args, String> {
        let a: Args = parse(NAME, args)?;
        if a.path.is_empty() {
            return Err(invalid_args(NAME, "path is empty"));
        }
        let (start, end) = (a.start, a.end);
        if start > 0 && end > 0 && start > end {
            return Err(format!("start ({start}) is after end ({end})"));
        }
        Ok(a)
    }
}

#[async_trait::async_trait]
impl Tool for ReadFile {
    fn row(&self) -> &crate::tool::ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.to_string(),
            description: "Read a text file, or some of its lines. Long output is cut on whole \
                          lines and says how to read on."
                .to_string(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory."},
                    "start": {"type": "integer", "minimum": 0, "default": 0, "description": "First line (1-based); 0 = from the start."},
                    "end": {"type": "integer", "minimum": 0, "default": 0, "description": "Last line (1-based, inclusive); 0 = to the end."},
                    "numbered": {"type": "boolean", "default": false, "description": "Prefix each line with its number."}
                },
                "required": ["path"]
            }),
        }
    }

    /// The path, kind `read`, the absolute path as location.
    fn describe(&self, args: &serde_json::Value, ctx: &ToolContext) -> Described {
        describe_path(&ROW, args, ctx)
    }

    /// The path.
    fn subject(&self, args: &serde_json::Value, ctx: &ToolContext) -> Subject {
        path_subject(args, ctx)
    }

    async fn plan(&self, args: &serde_json::Value, ctx: &ToolContext) -> Result<Plan, String> {
        let a = Args::parse(args)?;
        let abs = absolute(&ctx.cwd, &a.path);
        match fs::metadata(&abs) {
            Ok(m) if m.is_dir() => return Err(is_directory(&a.path)),
            Ok(m) => {
                if let Some(kind) = special_kind(m.file_type()) {
                    return Err(not_regular(&a.path, kind, READS));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(missing(&a.path)),
            Err(e) => return Err(io_failure("read", &a.path, &e)),
        }
        let mut plan = ROW.plan(a.path);
        plan.locations = vec![abs.display().to_string()];
        Ok(plan)
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        let a = match Args::parse(args) {
            Ok(a) => a,
            Err(text) => return ToolOutput::fail(text),
        };
        let abs = absolute(&ctx.cwd, &a.path);
        if crate::image::media_type(&abs).is_some() && abs.is_file() {
            // A picture goes to the model as one.
            let shown = a.path.clone();
            let loaded = blocking(move || crate::image::load(&abs, &shown)).await;
            return match loaded {
                Ok(image) => ToolOutput {
                    text: format!("[image {}: {}]", a.path, image.media_type),
                    failed: false,
                    images: vec![image],
                },
                Err(why) => ToolOutput::fail(why),
            };
        }
        let max = ctx.max_output;
        let secrets = self.secrets.clone();
        let cancel = ctx.cancel.clone();
        let work = blocking(move || {
            let shown = a.path.as_str();
            let (file, meta) = match open_regular(&abs) {
                Ok(opened) => opened,
                Err(NotRegular::Missing) => return Err(missing(shown)),
                Err(NotRegular::Directory) => return Err(is_directory(shown)),
                Err(NotRegular::Special(kind)) => return Err(not_regular(shown, kind, READS)),
                Err(NotRegular::Io(e)) => return Err(io_failure("read", shown, &e)),
            };
            let shape = Shape {
                start: usize::try_from(a.start).unwrap_or(usize::MAX),
                end: usize::try_from(a.end).unwrap_or(usize::MAX),
                numbered: a.numbered,
                max,
                shown,
                secrets: &secrets,
            };
            let input = io::BufReader::with_capacity(1 << 16, file);
            render_from(input, &shape, meta.len(), &|| cancel.is_cancelled())
        });
        // A cancel answers at once, whatever the read is doing.
        tokio::select! {
            done = work => done.into(),
            _ = ctx.cancel.cancelled() => ToolOutput::fail(crate::bash::CANCELLED),
        }
    }
}

/// Bytes read past a full result to count the file's lines for the
/// marker; beyond them the marker says the file is larger instead.
const COUNT_LIMIT: u64 = 32 << 20;

/// What to show of a file, and how.
struct Shape<'a> {
    /// 1-based first and last line; 0 = open.
    start: usize,
    end: usize,
    numbered: bool,
    /// `maxOutput`, in characters.
    max: usize,
    /// The path as the model gave it.
    shown: &'a str,
    /// Key values to redact before lines are picked and cut.
    secrets: &'a [String],
}

/// The lines `start..=end` of `text` (0 = open), as the model sees them;
/// `Err` (a failure) when `start` is past the last line.
#[cfg(test)]
fn render(
    text: &str,
    start: usize,
    end: usize,
    numbered: bool,
    max: usize,
    shown: &str,
) -> Result<String, String> {
    let shape = Shape {
        start,
        end,
        numbered,
        max,
        shown,
        secrets: &[],
    };
    let size = text.len() as u64;
    render_from(io::Cursor::new(text.as_bytes()), &shape, size, &|| false)
}

/// [`render`] of what `input` holds (`size` bytes, as its metadata said),
/// read in bounded memory: lines before `start` are skipped unkept, a line
/// is kept only as far as it can be shown, and reading stops once the
/// result is full (after counting the remaining lines, up to
/// [`COUNT_LIMIT`] bytes, for the marker). `cancelled` is polled between
/// reads.
fn render_from(
    mut input: impl BufRead,
    shape: &Shape,
    size: u64,
    cancelled: &dyn Fn() -> bool,
) -> Result<String, String> {
    let Shape {
        start,
        end,
        numbered,
        max,
        shown,
        secrets,
    } = *shape;
    let io_err = |e: io::Error| io_failure("read", shown, &e);
    let not_text = || format!("{shown} is not a text file ({size} bytes)");
    let stop = || crate::bash::CANCELLED.to_string();
    let mut utf8 = Utf8Check::default();

    let first = start.max(1);
    let skipped = skip_lines(&mut input, first - 1, &mut utf8, cancelled).map_err(io_err)?;
    if cancelled() {
        return Err(stop());
    }
    if utf8.bad {
        return Err(not_text());
    }
    if skipped < first - 1 {
        // The file ended first: `skipped` is its line count.
        let total = skipped;
        if first > total.max(1) {
            return Err(format!(
                "start ({start}) is past the end of {shown} ({total} lines)"
            ));
        }
    }

    // A kept line holds what `max` characters can take (4 bytes each at
    // most), and room to see a key whole across the cut.
    let longest = secrets.iter().map(String::len).max().unwrap_or(0);
    let cap = max
        .saturating_add(1)
        .saturating_mul(4)
        .saturating_add(longest + 4);
    let mut pieces: Vec<(String, usize)> = Vec::new();
    let mut chars = 0usize;
    let mut over = false;
    // Whether reading stopped inside a line (its rest not read).
    let mut open = false;
    let mut n = first;
    while end == 0 || n <= end {
        if cancelled() {
            return Err(stop());
        }
        let Some(line) = take_line(&mut input, cap, &mut utf8).map_err(io_err)? else {
            // The file has `n - 1` lines.
            if utf8.bad {
                return Err(not_text());
            }
            let total = n - 1;
            if pieces.is_empty() && first > total.max(1) {
                return Err(format!(
                    "start ({start}) is past the end of {shown} ({total} lines)"
                ));
            }
            break;
        };
        if utf8.bad {
            return Err(not_text());
        }
        let body = shown_body(line.bytes, line.cut, secrets, max);
        let mut piece = if numbered {
            format!("{n}\t{body}")
        } else {
            body
        };
        // The line's newline is shown unless it ends the range before the
        // end of the file.
        if line.newline && (n != end || input.fill_buf().map_err(io_err)?.is_empty()) {
            piece.push('\n');
        }
        let mut count = piece.chars().count();
        if line.cut {
            // Never shown whole, whatever redaction made of its length.
            count = count.max(max + 1);
            open = true;
        }
        chars += count;
        pieces.push((piece, count));
        if chars > max {
            over = true;
            break;
        }
        n += 1;
    }
    if !over {
        return Ok(pieces.into_iter().map(|(p, _)| p).collect());
    }

    // The result is full: count what is left, within a bound, for the marker.
    let last_read = first + pieces.len() - 1;
    let before_rest = if open { last_read - 1 } else { last_read };
    let (rest, complete) =
        count_rest(&mut input, COUNT_LIMIT, open, &mut utf8, cancelled).map_err(io_err)?;
    if cancelled() {
        return Err(stop());
    }
    if utf8.bad {
        return Err(not_text());
    }
    let total = before_rest + rest;
    let marker = |b: usize| {
        if complete {
            format!(
                "[… truncated: lines {first}–{b} of {total} shown; ask for start/end to read more]"
            )
        } else {
            format!(
                "[… truncated: lines {first}–{b} of at least {total} shown; the file is {size} \
                 bytes; ask for start/end to read more]"
            )
        }
    };
    let (mut kept, mut k) = (0, 0);
    while k < pieces.len() {
        let with = kept + pieces[k].1;
        if with + marker(first + k).chars().count() > max {
            break;
        }
        kept = with;
        k += 1;
    }
    if k == 0 {
        let marker = format!("[… truncated inside line {first}; ask for start/end to read more]");
        let room = max.saturating_sub(marker.chars().count() + 1);
        let head: String = pieces[0].0.chars().take(room).collect();
        return Ok(format!("{head}\n{marker}"));
    }
    let mut out: String = pieces[..k].iter().map(|(p, _)| p.as_str()).collect();
    out.push_str(&marker(first + k - 1));
    Ok(out)
}

/// The text of a kept line (without its newline) as it may be shown:
/// redacted, at most `max + 1` characters (a giant line only ever shows its
/// head). A line `cut` short loses a trailing part of a character and any
/// trailing start of a key first, so that no piece of a key shows.
fn shown_body(mut bytes: Vec<u8>, cut: bool, secrets: &[String], max: usize) -> String {
    if cut {
        let partial = secrets
            .iter()
            .filter(|s| !s.is_empty())
            .flat_map(|s| (1..s.len()).filter(|&l| bytes.ends_with(&s.as_bytes()[..l])))
            .max()
            .unwrap_or(0);
        bytes.truncate(bytes.len() - partial);
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) => e.valid_up_to(),
        };
        bytes.truncate(valid);
    }
    let text = String::from_utf8(bytes).unwrap_or_else(|e| {
        // Checked as it was read; kept as a safe fallback.
        String::from_utf8_lossy(e.as_bytes()).into_owned()
    });
    let text = redacted(&text, secrets).into_owned();
    match text.char_indices().nth(max + 1) {
        Some((at, _)) => text[..at].to_string(),
        None => text,
    }
}

/// Checks that a byte stream fed in pieces is UTF-8, a character split
/// between two pieces included.
#[derive(Debug, Default)]
struct Utf8Check {
    carry: Vec<u8>,
    bad: bool,
}

impl Utf8Check {
    fn feed(&mut self, mut bytes: &[u8]) {
        if self.bad || bytes.is_empty() {
            return;
        }
        while !self.carry.is_empty() {
            let Some((&b, rest)) = bytes.split_first() else {
                return;
            };
            self.carry.push(b);
            bytes = rest;
            match std::str::from_utf8(&self.carry) {
                Ok(_) => self.carry.clear(),
                Err(e) if e.error_len().is_some() || self.carry.len() >= 4 => {
                    self.bad = true;
                    return;
                }
                Err(_) => {}
            }
        }
        if let Err(e) = std::str::from_utf8(bytes) {
            match e.error_len() {
                Some(_) => self.bad = true,
                None => self.carry.extend_from_slice(&bytes[e.valid_up_to()..]),
            }
        }
    }

    /// Call at the end of the stream: a character left unfinished is bad.
    fn finish(&mut self) {
        if !self.carry.is_empty() {
            self.bad = true;
        }
    }
}

/// Read past up to `lines` lines, keeping nothing; returns how many there
/// were (fewer at the end of the file).
fn skip_lines(
    input: &mut impl BufRead,
    lines: usize,
    utf8: &mut Utf8Check,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<usize> {
    let mut done = 0;
    // Whether the current line has bytes (a last line without a newline
    // still counts).
    let mut partial = false;
    while done < lines {
        if cancelled() {
            return Ok(done);
        }
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            utf8.finish();
            return Ok(done + usize::from(partial));
        }
        let mut used = buf.len();
        for at in memchr::memchr_iter(b'\n', buf) {
            done += 1;
            if done == lines {
                used = at + 1;
                break;
            }
        }
        partial = buf[..used].last() != Some(&b'\n');
        utf8.feed(&buf[..used]);
        input.consume(used);
    }
    Ok(done)
}

/// One line read by [`take_line`].
struct Line {
    /// Its first bytes (all of them unless `cut`), without the newline.
    bytes: Vec<u8>,
    /// It ended with a newline.
    newline: bool,
    /// Longer than the cap: reading stopped inside it.
    cut: bool,
}

/// Read the next line, keeping at most `cap` bytes of it: past them the
/// line is `cut` and its rest left unread. `None` at the end of the file.
fn take_line(
    input: &mut impl BufRead,
    cap: usize,
    utf8: &mut Utf8Check,
) -> io::Result<Option<Line>> {
    let mut bytes = Vec::new();
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            utf8.finish();
            return Ok((!bytes.is_empty()).then_some(Line {
                bytes,
                newline: false,
                cut: false,
            }));
        }
        let room = cap - bytes.len();
        let newline = memchr::memchr(b'\n', buf);
        match newline {
            Some(at) if at <= room => {
                bytes.extend_from_slice(&buf[..at]);
                utf8.feed(&buf[..=at]);
                input.consume(at + 1);
                return Ok(Some(Line {
                    bytes,
                    newline: true,
                    cut: false,
                }));
            }
            _ if buf.len() > room => {
                bytes.extend_from_slice(&buf[..room]);
                utf8.feed(&buf[..room]);
                input.consume(room);
                return Ok(Some(Line {
                    bytes,
                    newline: false,
                    cut: true,
                }));
            }
            _ => {
                let n = buf.len();
                bytes.extend_from_slice(buf);
                utf8.feed(buf);
                input.consume(n);
            }
        }
    }
}

/// The lines left in `input`, reading at most `limit` bytes, and whether
/// that was all of them (else the count is a lower bound). `open`: the
/// first of them was begun already (it counts even when nothing of it is
/// left).
fn count_rest(
    input: &mut impl BufRead,
    limit: u64,
    open: bool,
    utf8: &mut Utf8Check,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<(usize, bool)> {
    let (mut newlines, mut read) = (0usize, 0u64);
    let mut last = None;
    loop {
        let unended = (open || last.is_some()) && last != Some(b'\n');
        if cancelled() {
            return Ok((newlines + usize::from(unended), false));
        }
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            utf8.finish();
            return Ok((newlines + usize::from(unended), true));
        }
        if read >= limit {
            // More follows: one more line at least.
            return Ok((newlines + 1, false));
        }
        let n = buf.len();
        newlines += memchr::memchr_iter(b'\n', buf).count();
        last = buf.last().copied();
        utf8.feed(buf);
        input.consume(n);
        read += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str, start: usize, end: usize, numbered: bool) -> String {
        render(text, start, end, numbered, 10_000, "f").unwrap_or_else(|e| e)
    }

    #[test]
    fn final_newline_only_with_the_end_of_the_file() {
        let t = "a\nb\nc\n";
        assert_eq!(r(t, 0, 0, false), "a\nb\nc\n");
        assert_eq!(r(t, 1, 2, false), "a\nb");
        assert_eq!(r(t, 2, 0, false), "b\nc\n");
        assert_eq!(r(t, 3, 3, false), "c\n");
        assert_eq!(r("a\nb", 0, 0, false), "a\nb");
        assert_eq!(r(t, 2, 99, false), "b\nc\n");
    }

    #[test]
    fn numbered_lines() {
        assert_eq!(r("a\nb\nc\n", 2, 3, true), "2\tb\n3\tc\n");
        assert_eq!(r("x\ny", 0, 0, true), "1\tx\n2\ty");
    }

    #[test]
    fn empty_file_and_start_past_the_end() {
        assert_eq!(r("", 0, 0, false), "");
        assert_eq!(r("", 1, 0, false), "");
        assert_eq!(
            render("a\nb\n", 5, 0, false, 10_000, "f"),
            Err("start (5) is past the end of f (2 lines)".to_string())
        );
    }

    #[test]
    fn truncation_keeps_whole_lines_within_max() {
        let t: String = (1..=100).map(|i| format!("line {i:03}\n")).collect();
        let max = 200;
        let out = render(&t, 0, 0, false, max, "f").unwrap();
        // 14 lines of 9 characters and the 70-character marker: 196.
        let marker = "[… truncated: lines 1–14 of 100 shown; ask for start/end to read more]";
        let expected: String = (1..=14)
            .map(|i| format!("line {i:03}\n"))
            .collect::<String>()
            + marker;
        assert_eq!(out, expected);
        assert_eq!(out.chars().count(), 196);
    }

    #[test]
    fn truncation_inside_the_first_line() {
        let t = format!("{}\nsecond\n", "é".repeat(500));
        let out = render(&t, 0, 0, false, 200, "f").unwrap();
        let marker = "[… truncated inside line 1; ask for start/end to read more]";
        let head = "é".repeat(200 - marker.chars().count() - 1);
        assert_eq!(out, format!("{head}\n{marker}"));
        assert_eq!(out.chars().count(), 200);
    }

    /// [`render_from`] through a reader of `cap`-byte reads.
    fn r_small(text: &[u8], start: usize, end: usize, max: usize, cap: usize) -> String {
        let shape = Shape {
            start,
            end,
            numbered: true,
            max,
            shown: "f",
            secrets: &[],
        };
        let input = io::BufReader::with_capacity(cap, io::Cursor::new(text));
        render_from(input, &shape, text.len() as u64, &|| false).unwrap_or_else(|e| e)
    }

    #[test]
    fn reads_split_anywhere_give_the_same_result() {
        let many = "x\n".repeat(300);
        let texts: [&[u8]; 5] = [
            "é\nàb\n\nc".as_bytes(),
            b"a\nb\nc\n",
            many.as_bytes(),
            b"bad \xff byte\n",
            b"cut \xc3",
        ];
        for text in texts {
            for (start, end, max) in [(0, 0, 10_000), (2, 3, 10_000), (0, 0, 60), (5, 0, 10_000)] {
                let whole = r_small(text, start, end, max, 1 << 16);
                for cap in 1..8 {
                    assert_eq!(
                        r_small(text, start, end, max, cap),
                        whole,
                        "{text:?} {start}-{end} max {max}, reads of {cap}"
                    );
                }
            }
        }
        assert_eq!(
            r_small(b"bad \xff byte\n", 0, 0, 100, 3),
            "f is not a text file (11 bytes)"
        );
        assert_eq!(
            r_small(b"cut \xc3", 0, 0, 100, 2),
            "f is not a text file (5 bytes)"
        );
    }

    #[test]
    fn truncation_of_a_range_names_its_lines() {
        let t: String = (1..=100).map(|i| format!("{i}\n")).collect();
        let out = render(&t, 50, 0, true, 200, "f").unwrap();
        assert!(out.starts_with("50\t50\n51\t51\n"), "{out}");
        assert!(
            out.ends_with(" of 100 shown; ask for start/end to read more]"),
            "{out}"
        );
        assert!(out.contains("[… truncated: lines 50–"), "{out}");
        assert!(out.chars().count() <= 200);
    }
}
