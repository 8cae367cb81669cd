//! Markdown of an answer as styled, word-wrapped screen lines, for every
//! front end alike: the REPL prints them, the window draws them. Parsed by
//! `pulldown-cmark`; headings, emphasis, lists, quotes, tables, fenced code
//! with syntax colouring, links and rules. What a line looks like is said
//! by roles ([`Role`]); each front end picks its colours for them (and
//! none under `NO_COLOR`).
//!
//! Rendering is block by block: the answer is cut into its top-level
//! blocks, each is rendered on its own and they are joined by one empty
//! line. So a streamed answer ([`Stream`]) can show each block once it is
//! complete (another one has begun), the lines of a code block one by one
//! as they arrive, and the wrapped rows of running text (paragraphs,
//! lists, quotes) but the last as it grows; what it shows is what rendering
//! the whole answer gives, but for markup that changes an earlier row once
//! it closes (a terminal cannot draw that row again).
//!
//! The text is sanitised first ([`crate::sanitize()`]), and each span again
//! (a character reference like `&#27;` is a control character only once
//! parsed): no line holds a control character.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Alignment, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::highlight::Highlighter;
use crate::sanitize::Sanitizer;

/// What a piece of text is, for a front end to style.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Role {
    /// Running text.
    #[default]
    Text,
    /// A heading of this level (1–6).
    Heading(u8),
    /// `inline code`.
    Code,
    /// Code in a fenced block, not otherwise coloured.
    CodeBlock,
    /// A keyword in a code block.
    Keyword,
    /// A string literal in a code block.
    Str,
    /// A comment in a code block.
    Comment,
    /// A number in a code block.
    Number,
    /// The language named above a code block.
    Lang,
    /// A link's text.
    Link,
    /// A link's address, shown after its text.
    Url,
    /// A quote's bar.
    Quote,
    /// A list's bullet or number.
    Bullet,
    /// A horizontal rule, a table's lines, a code block's bar.
    Rule,
}

/// How a piece of text looks: its role and its emphasis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// What the text is.
    pub role: Role,
    /// `**strong**`, and headings.
    pub bold: bool,
    /// `*emphasis*`.
    pub italic: bool,
    /// `~~struck~~`.
    pub strike: bool,
}

impl Style {
    fn of(role: Role) -> Style {
        Style {
            role,
            ..Style::default()
        }
    }
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The text, without line breaks.
    pub text: String,
    /// How it looks.
    pub style: Style,
}

impl Span {
    fn new(text: impl Into<String>, style: Style) -> Span {
        let text = text.into();
        Span {
            text: match shown(&text) {
                Cow::Borrowed(_) => text,
                Cow::Owned(clean) => clean,
            },
            style,
        }
    }
}

/// `text` as a span may show it: sanitised (a character reference such as
/// `&#27;` becomes a control character only after parsing), and on one
/// line.
fn shown(text: &str) -> Cow<'_, str> {
    let clean = crate::sanitize(text);
    if clean.contains('\n') {
        Cow::Owned(clean.replace('\n', " "))
    } else {
        clean
    }
}

/// One screen line, already wrapped to the width it was rendered for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    /// The line's runs, left to right (the prefixes of quotes, lists and
    /// code blocks included).
    pub spans: Vec<Span>,
}

impl Line {
    /// The line's text without its styles.
    pub fn text(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }

    fn width(&self) -> usize {
        self.spans.iter().map(|s| s.text.width()).sum()
    }

    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        let text = shown(text);
        let text = text.as_ref();
        match self.spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            _ => self.spans.push(Span::new(text, style)),
        }
    }
}

/// `markdown` as lines of at most `width` columns (at least 10).
pub fn render(markdown: &str, width: usize) -> Vec<Line> {
    let markdown = crate::sanitize(markdown);
    let markdown = markdown.as_ref();
    let width = width.max(10);
    let mut out = Vec::new();
    for range in top_blocks(markdown) {
        if !out.is_empty() {
            out.push(Line::default());
        }
        out.extend(render_block(&markdown[range], width));
    }
    out
}

/// The byte ranges of `text`'s top-level blocks, in order.
fn top_blocks(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    start = range.start;
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.push(start..range.end);
                }
            }
            _ if depth == 0 => out.push(range),
            _ => {}
        }
    }
    out
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// A fenced code block at the top of `src`: its fence and info string.
fn fence_of(src: &str) -> Option<(String, &str)> {
    let first = src.lines().next()?;
    let trimmed = first.trim_start();
    if first.len() - trimmed.len() > 3 {
        return None;
    }
    let ch = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = trimmed.chars().take_while(|c| *c == ch).count();
    if n < 3 {
        return None;
    }
    let info = trimmed[n..].trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch.to_string().repeat(n), info))
}

/// The body lines of a top-level fenced block whose source is `src`: the
/// complete ones only unless `whole` (a line is complete once its newline
/// has arrived), and never the closing fence.
fn fence_body<'a>(src: &'a str, fence: &str, whole: bool) -> Vec<&'a str> {
    let mut lines: Vec<&str> = src.split('\n').skip(1).collect();
    if !whole {
        // The last piece has no newline yet.
        lines.pop();
    }
    let mut body = Vec::new();
    for line in lines {
        let t = line.trim();
        if t.starts_with(fence) && t.chars().all(|c| fence.starts_with(c)) {
            break;
        }
        body.push(line);
    }
    // A whole block's source may end with the newline after its last line.
    if whole && body.last() == Some(&"") && !src.ends_with(&format!("\n{fence}")) {
        let closed = src.trim_end().ends_with(fence);
        if !closed {
            body.pop();
        }
    }
    body
}

/// A code block: the language line, then each line coloured and cut (not
/// wrapped at words) to the width, behind a bar.
fn code_lines(info: &str, body: &[&str], width: usize) -> Vec<Line> {
    let mut out = Vec::new();
    if !info.is_empty() {
        let mut l = Line::default();
        l.push("┌ ", Style::of(Role::Rule));
        l.push(info, Style::of(Role::Lang));
        out.push(l);
    }
    let mut h = Highlighter::new(info);
    for text in body {
        let pieces = h.line(&text.replace('\t', "    "));
        let spans: Vec<Span> = pieces
            .into_iter()
            .map(|(t, r)| Span::new(t, Style::of(r)))
            .collect();
        let bar = vec![Span::new("│ ", Style::of(Role::Rule))];
        out.extend(hard_wrap(&spans, width, &bar));
    }
    out
}

/// Lines of `spans` cut at `width` columns (whatever the words), each
/// behind `prefix`.
fn hard_wrap(spans: &[Span], width: usize, prefix: &[Span]) -> Vec<Line> {
    let pw: usize = prefix.iter().map(|s| s.text.width()).sum();
    let room = width.saturating_sub(pw).max(1);
    let start = || Line {
        spans: prefix.to_vec(),
    };
    let mut out = Vec::new();
    let mut line = start();
    let mut used = 0;
    for span in spans {
        for c in span.text.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > room && used > 0 {
                out.push(std::mem::replace(&mut line, start()));
                used = 0;
            }
            line.push(c.encode_utf8(&mut [0; 4]), span.style);
            used += w;
        }
    }
    out.push(line);
    out
}

/// Words of `spans` filled into lines of `width` columns: the first behind
/// `first`, the others behind `rest`. A word longer than a line is cut.
fn wrap(spans: &[Span], width: usize, first: &[Span], rest: &[Span]) -> Vec<Line> {
    let mut f = Filler {
        width,
        rest,
        out: Vec::new(),
        line: Line {
            spans: first.to_vec(),
        },
        room: width.saturating_sub(prefix_width(first)).max(1),
        used: 0,
        space: None,
    };
    for span in spans {
        let mut word = String::new();
        for c in span.text.chars() {
            match c {
                '\n' => {
                    f.word(&mut word, span.style);
                    f.space = None;
                    f.break_line();
                }
                ' ' | '\t' => {
                    f.word(&mut word, span.style);
                    f.space = Some(span.style);
                }
                c => word.push(c),
            }
        }
        f.word(&mut word, span.style);
    }
    f.out.push(f.line);
    f.out
}

fn prefix_width(prefix: &[Span]) -> usize {
    prefix.iter().map(|s| s.text.width()).sum()
}

/// The state of [`wrap`]: the line being filled and what is left of it.
struct Filler<'a> {
    width: usize,
    rest: &'a [Span],
    out: Vec<Line>,
    line: Line,
    room: usize,
    used: usize,
    /// A space waiting to be written before the next word on this line.
    space: Option<Style>,
}

impl Filler<'_> {
    fn break_line(&mut self) {
        let next = Line {
            spans: self.rest.to_vec(),
        };
        self.out.push(std::mem::replace(&mut self.line, next));
        self.room = self.width.saturating_sub(prefix_width(self.rest)).max(1);
        self.used = 0;
    }

    /// Put `word` (then empty it) on this line, or the next when it does
    /// not fit; cut when it does not fit a line either.
    fn word(&mut self, word: &mut String, style: Style) {
        if word.is_empty() {
            return;
        }
        let w = word.width();
        let gap = usize::from(self.space.is_some() && self.used > 0);
        if self.used > 0 && self.used + gap + w > self.room {
            self.break_line();
        } else if let Some(st) = self.space
            && self.used > 0
        {
            self.line.push(" ", st);
            self.used += 1;
        }
        self.space = None;
        if w <= self.room.saturating_sub(self.used) {
            self.line.push(word, style);
            self.used += w;
        } else {
            for c in word.chars() {
                let cw = c.width().unwrap_or(0);
                if self.used + cw > self.room && self.used > 0 {
                    self.break_line();
                }
                self.line.push(c.encode_utf8(&mut [0; 4]), style);
                self.used += cw;
            }
        }
        word.clear();
    }
}

/// One top-level block's lines.
fn render_block(src: &str, width: usize) -> Vec<Line> {
    if let Some((fence, info)) = fence_of(src) {
        return code_lines(info, &fence_body(src, &fence, true), width);
    }
    let mut r = Renderer::new(width);
    for event in Parser::new_ext(src, options()) {
        r.event(event);
    }
    r.flush();
    r.out
}

/// What encloses the text being rendered: a quote, a list item.
#[derive(Debug, Clone)]
struct Frame {
    /// Before the frame's first line (a bullet).
    first: Vec<Span>,
    /// Before its other lines.
    rest: Vec<Span>,
    /// Whether the first line was written.
    started: bool,
}

struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span>>>,
    head: usize,
}

struct Renderer {
    width: usize,
    out: Vec<Line>,
    frames: Vec<Frame>,
    /// The inline text being gathered.
    inline: Vec<Span>,
    style: Style,
    /// Open lists: the next number, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Open links' addresses.
    links: Vec<String>,
    code: Option<(String, String)>,
    table: Option<Table>,
    /// A block was written in the current container: the next one gets an
    /// empty line before it.
    wrote: bool,
    heading: Option<u8>,
}

impl Renderer {
    fn new(width: usize) -> Renderer {
        Renderer {
            width,
            out: Vec::new(),
            frames: Vec::new(),
            inline: Vec::new(),
            style: Style::default(),
            lists: Vec::new(),
            links: Vec::new(),
            code: None,
            table: None,
            wrote: false,
            heading: None,
        }
    }

    /// The prefixes of the next line: the first unwritten frame shows its
    /// bullet, the others their continuation.
    fn prefixes(&mut self) -> (Vec<Span>, Vec<Span>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for f in &mut self.frames {
            if f.started {
                first.extend(f.rest.clone());
            } else {
                first.extend(f.first.clone());
                f.started = true;
            }
            rest.extend(f.rest.clone());
        }
        (first, rest)
    }

    fn blank(&mut self) {
        if self.wrote {
            // A quote's bar runs through its empty lines.
            let (_, rest) = self.prefixes();
            let mut l = Line { spans: rest };
            trim_line(&mut l);
            self.out.push(l);
        }
    }

    /// Write the gathered inline text as wrapped lines.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        let lines = wrap(&spans, self.width, &first, &rest);
        self.out.extend(lines);
        self.wrote = true;
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        if let Some(t) = &mut self.table {
            if let Some(row) = t.rows.last_mut()
                && let Some(cell) = row.last_mut()
            {
                cell.push(Span::new(text, self.style));
            }
            return;
        }
        self.inline.push(Span::new(text, self.style));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let saved = self.style;
                self.style.role = Role::Code;
                self.text(&t);
                self.style = saved;
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.text("\n"),
            Event::Html(t) | Event::InlineHtml(t) => self.text(t.trim_end_matches('\n')),
            Event::Rule => {
                self.flush();
                self.blank();
                let (first, _) = self.prefixes();
                let mut l = Line { spans: first };
                let room = self.width.saturating_sub(l.width());
                l.push(&"─".repeat(room), Style::of(Role::Rule));
                self.out.push(l);
                self.wrote = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                self.flush();
                self.blank();
            }
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank();
                let n = match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                };
                self.heading = Some(n);
                self.style = Style {
                    role: Role::Heading(n),
                    bold: true,
                    ..Style::default()
                };
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.blank();
                let bar = vec![Span::new("│ ", Style::of(Role::Quote))];
                self.frames.push(Frame {
                    first: bar.clone(),
                    rest: bar,
                    started: false,
                });
                self.wrote = false;
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.blank();
                let info = match kind {
                    pulldown_cmark::CodeBlockKind::Fenced(i) => i.to_string(),
                    pulldown_cmark::CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((info, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_owned(),
                };
                let indent = " ".repeat(marker.width());
                self.frames.push(Frame {
                    first: vec![Span::new(marker, Style::of(Role::Bullet))],
                    rest: vec![Span::new(indent, Style::default())],
                    started: false,
                });
                self.wrote = false;
            }
            Tag::Emphasis => self.style.italic = true,
            Tag::Strong => self.style.bold = true,
            Tag::Strikethrough => self.style.strike = true,
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.style.role = Role::Link;
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.style.role = Role::Link;
                self.text("[image: ");
            }
            Tag::Table(aligns) => {
                self.flush();
                self.blank();
                self.table = Some(Table {
                    aligns,
                    rows: Vec::new(),
                    head: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(t) = &mut self.table
                    && let Some(row) = t.rows.last_mut()
                {
                    row.push(Vec::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.heading = None;
                self.style = Style::default();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.frames.pop();
                self.wrote = true;
            }
            TagEnd::CodeBlock => {
                if let Some((info, code)) = self.code.take() {
                    let body: Vec<&str> = code
                        .strip_suffix('\n')
                        .unwrap_or(&code)
                        .split('\n')
                        .collect();
                    let (first, rest) = self.prefixes();
                    for (i, mut line) in code_lines(
                        &info,
                        &body,
                        self.width
                            .saturating_sub(rest.iter().map(|s| s.text.width()).sum()),
                    )
                    .into_iter()
                    .enumerate()
                    {
                        let mut spans = if i == 0 { first.clone() } else { rest.clone() };
                        spans.append(&mut line.spans);
                        line.spans = spans;
                        self.out.push(line);
                    }
                    self.wrote = true;
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.wrote = true;
            }
            TagEnd::Item => {
                self.flush();
                self.frames.pop();
                self.wrote = false;
            }
            TagEnd::Emphasis => self.style.italic = false,
            TagEnd::Strong => self.style.bold = self.heading.is_some(),
            TagEnd::Strikethrough => self.style.strike = false,
            TagEnd::Link | TagEnd::Image => {
                let image = matches!(tag, TagEnd::Image);
                if image {
                    self.text("]");
                }
                self.style.role = match self.heading {
                    Some(n) => Role::Heading(n),
                    None => Role::Text,
                };
                if let Some(url) = self.links.pop() {
                    let shown: String = self
                        .inline
                        .iter()
                        .rev()
                        .take_while(|s| s.style.role == Role::Link)
                        .map(|s| s.text.as_str())
                        .collect::<Vec<_>>()
                        .into_iter()
                        .rev()
                        .collect();
                    if !url.is_empty() && shown != url && !image {
                        let saved = self.style;
                        self.style.role = Role::Url;
                        self.text(&format!(" ({url})"));
                        self.style = saved;
                    }
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_lines(&t);
                    self.wrote = true;
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.head = t.rows.len();
                }
            }
            _ => {}
        }
    }

    /// A table laid out in columns that fit the width, cells wrapped within
    /// their column, the header bold and ruled off.
    fn table_lines(&mut self, t: &Table) {
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        let (first, rest) = self.prefixes();
        let room = self
            .width
            .saturating_sub(rest.iter().map(|s| s.text.width()).sum::<usize>());
        let cell_width = |cell: &Vec<Span>| cell.iter().map(|s| s.text.width()).sum::<usize>();
        let mut widths: Vec<usize> = (0..cols)
            .map(|c| {
                t.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(cell_width)
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        let seps = 3 * (cols - 1);
        while widths.iter().sum::<usize>() + seps > room {
            let Some((i, w)) = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w) else {
                break;
            };
            if w <= 3 {
                break;
            }
            widths[i] = w - 1;
        }
        let bar = Style::of(Role::Rule);
        let mut lines_out = Vec::new();
        for (r, row) in t.rows.iter().enumerate() {
            let head = r < t.head;
            let cells: Vec<Vec<Line>> = (0..cols)
                .map(|c| {
                    let mut spans = row.get(c).cloned().unwrap_or_default();
                    if head {
                        for s in &mut spans {
                            s.style.bold = true;
                        }
                    }
                    wrap(&spans, widths[c], &[], &[])
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for k in 0..height {
                let mut line = Line::default();
                for (c, cell) in cells.iter().enumerate() {
                    if c > 0 {
                        line.push(" │ ", bar);
                    }
                    let piece = cell.get(k).cloned().unwrap_or_default();
                    let pad = widths[c].saturating_sub(piece.width());
                    let (left, right) = match t.aligns.get(c) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    line.push(&" ".repeat(left), Style::default());
                    for s in piece.spans {
                        line.push(&s.text, s.style);
                    }
                    if c + 1 < cols {
                        line.push(&" ".repeat(right), Style::default());
                    }
                }
                lines_out.push(line);
            }
            if head && r + 1 == t.head {
                let mut rule = Line::default();
                let parts: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                rule.push(&parts.join("─┼─"), bar);
                lines_out.push(rule);
            }
        }
        for (i, mut line) in lines_out.into_iter().enumerate() {
            let mut spans = if i == 0 { first.clone() } else { rest.clone() };
            spans.append(&mut line.spans);
            line.spans = spans;
            trim_line(&mut line);
            self.out.push(line);
        }
    }
}

/// Without trailing spaces.
fn trim_line(line: &mut Line) {
    while let Some(last) = line.spans.last_mut() {
        let kept = last.text.trim_end_matches(' ').len();
        if kept == 0 {
            line.spans.pop();
        } else {
            last.text.truncate(kept);
            break;
        }
    }
}

/// Whether the first block of `src` (a paragraph closed by a blank line,
/// or a `#` heading) is complete now that `next` has begun: nothing that
/// arrives later can join it.
fn closed(src: &str, first: &Range<usize>, next: &Range<usize>) -> bool {
    let head = &src[first.clone()];
    let gap = &src[first.start..next.start];
    match first_tag(head) {
        Some(Tag::Paragraph) => {
            !head.trim_start().starts_with('|')
                && gap.trim_end_matches([' ', '\t']).ends_with("\n\n")
        }
        Some(Tag::Heading { .. }) => head.trim_start().starts_with('#'),
        _ => false,
    }
}

/// Whether a block being written may be shown line by line: running text
/// only (a table's widths, a heading's kind, are known at its end).
fn growable(src: &str) -> bool {
    !src.trim_start().starts_with('|')
        && matches!(
            first_tag(src),
            Some(Tag::Paragraph | Tag::List(_) | Tag::BlockQuote(_))
        )
}

/// The tag that opens `src`'s first block.
fn first_tag(src: &str) -> Option<Tag<'_>> {
    match Parser::new_ext(src, options()).next()? {
        Event::Start(tag) => Some(tag),
        _ => None,
    }
}

/// A streamed answer rendered as it arrives: each call returns the lines
/// that are final (the blocks another has followed, the complete lines of
/// a code block being written); [`Stream::finish`] returns the rest. What
/// it returns, in order, is [`render`] of the whole answer.
#[derive(Debug, Clone)]
pub struct Stream {
    width: usize,
    text: String,
    /// Bytes of `text` whose blocks were returned.
    done: usize,
    /// Lines of the block being written already returned (a code block's).
    shown: usize,
    /// Whether a block was returned (the next one is led by an empty line).
    any: bool,
    /// Makes the chunks safe as they come: a sequence may be split
    /// between two.
    clean: Sanitizer,
}

impl Stream {
    /// A stream rendered at `width` columns.
    pub fn new(width: usize) -> Stream {
        Stream {
            width: width.max(10),
            text: String::new(),
            done: 0,
            shown: 0,
            any: false,
            clean: Sanitizer::new(),
        }
    }

    /// Whether nothing arrived since the last [`Stream::finish`].
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Take `chunk`; the lines now final.
    pub fn push(&mut self, chunk: &str) -> Vec<Line> {
        self.clean.push_into(chunk, &mut self.text);
        // What is not returned yet: the block being written, mostly.
        let rest = self.text[self.done..].to_owned();
        let rest = rest.as_str();
        // Only whole lines say where blocks begin: a line still arriving
        // may yet join the block before it (a table's next row).
        let settled = rest.rfind('\n').map_or("", |at| &rest[..=at]);
        let blocks = top_blocks(settled);
        let mut out = Vec::new();
        let Some((last, complete)) = blocks.split_last() else {
            // No whole line yet: a paragraph's first line may still wrap.
            self.grow(&mut out);
            return out;
        };
        let mut done = self.done;
        for range in complete {
            let lines = render_block(&rest[range.clone()], self.width);
            self.emit(lines, &mut out);
            self.shown = 0;
        }
        done += last.start;
        // The block being written: a code block shows its complete lines.
        let open = &rest[last.clone()];
        let src = &rest[last.start..];
        if let Some((fence, info)) = fence_of(src)
            && src.contains('\n')
        {
            let _ = open;
            let lines = code_lines(info, &fence_body(src, &fence, false), self.width);
            self.show_growing(lines, &mut out);
            self.done = done;
        } else {
            self.done = done;
            self.grow(&mut out);
        }
        out
    }

    /// The block being written, when it is running text (a paragraph, a
    /// list, a quote): its lines but the last, which may still grow, so a
    /// long paragraph or list shows line by line as it arrives. A
    /// paragraph that a blank line closed is shown whole.
    fn grow(&mut self, out: &mut Vec<Line>) {
        loop {
            let src = self.text[self.done..].to_owned();
            let blocks = top_blocks(&src);
            match blocks.as_slice() {
                [first, next, ..] if closed(&src, first, next) => {
                    let lines = render_block(&src[first.clone()], self.width);
                    self.emit(lines, out);
                    self.shown = 0;
                    self.done += next.start;
                }
                [only] if growable(&src[only.start..]) => {
                    let mut lines = render_block(&src[only.start..], self.width);
                    // A paragraph a blank line ended is whole; the last row
                    // of anything else may still grow.
                    let ended = matches!(first_tag(&src[only.clone()]), Some(Tag::Paragraph))
                        && src[only.start..]
                            .trim_end_matches([' ', '\t'])
                            .ends_with("\n\n");
                    if !ended {
                        lines.pop();
                    }
                    self.show_growing(lines, out);
                    self.done += only.start;
                    return;
                }
                _ => return,
            }
        }
    }

    /// Show the lines of the block being written not shown yet.
    fn show_growing(&mut self, lines: Vec<Line>, out: &mut Vec<Line>) {
        if lines.len() > self.shown {
            let new: Vec<Line> = lines[self.shown..].to_vec();
            if self.shown == 0 && self.any {
                out.push(Line::default());
            }
            self.shown = lines.len();
            self.any = true;
            out.extend(new);
        }
    }

    /// The answer ended: the lines not returned yet. The stream is then
    /// empty, ready for the next answer.
    pub fn finish(&mut self) -> Vec<Line> {
        let rest = self.text[self.done..].to_owned();
        let mut out = Vec::new();
        for range in top_blocks(&rest) {
            let lines = render_block(&rest[range], self.width);
            self.emit(lines, &mut out);
            self.shown = 0;
        }
        *self = Stream::new(self.width);
        out
    }

    fn emit(&mut self, lines: Vec<Line>, out: &mut Vec<Line>) {
        if self.shown > 0 {
            // The start of this block was returned while it was written.
            out.extend(lines.into_iter().skip(self.shown));
            return;
        }
        if self.any {
            out.push(Line::default());
        }
        self.any = true;
        out.extend(lines);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    fn show(md: &str, width: usize) -> Vec<String> {
        texts(&render(md, width))
    }

    #[test]
    fn headings_emphasis_and_paragraphs() {
        let lines = render("# Project overview\n\nThis is **tiny** and *neat*.\n", 40);
        assert_eq!(
            texts(&lines),
            ["Project overview", "", "This is tiny and neat."]
        );
        assert_eq!(lines[0].spans[0].style.role, Role::Heading(1));
        assert!(lines[0].spans[0].style.bold);
        let tiny = lines[2].spans.iter().find(|s| s.text == "tiny").unwrap();
        assert!(tiny.style.bold);
        let neat = lines[2].spans.iter().find(|s| s.text == "neat").unwrap();
        assert!(neat.style.italic);
    }

    #[test]
    fn words_wrap_and_are_never_cut_when_they_fit() {
        let text = "Point mm at a local server and ask it anything about the code.";
        let lines = show(text, 20);
        assert!(lines.iter().all(|l| l.width() <= 20), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(lines[0], "Point mm at a local");
        // A word longer than the line is cut.
        let long = show(&"x".repeat(25), 10);
        assert_eq!(long, ["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"]);
    }

    #[test]
    fn lists_quotes_and_rules() {
        let md =
            "- one\n- two that wraps onto another line\n  1. nested\n\n> quoted\n> text\n\n---\n";
        assert_eq!(
            show(md, 24),
            [
                "• one",
                "• two that wraps onto",
                "  another line",
                "  1. nested",
                "",
                "│ quoted text",
                "",
                "────────────────────────",
            ]
        );
    }

    #[test]
    fn code_blocks_keep_their_lines_and_colour_them() {
        let md = "```rust\nfn main() {\n    let x = 1; // one\n}\n```\n";
        let lines = render(md, 40);
        assert_eq!(
            texts(&lines),
            ["┌ rust", "│ fn main() {", "│     let x = 1; // one", "│ }"]
        );
        let roles: Vec<Role> = lines[1].spans.iter().map(|s| s.style.role).collect();
        assert_eq!(roles, [Role::Rule, Role::Keyword, Role::CodeBlock]);
        // Long code lines are cut, not wrapped at words.
        let long = show(&format!("```\n{}\n```", "ab ".repeat(10)), 12);
        assert_eq!(long[0], "│ ab ab ab a");
    }

    #[test]
    fn tables_fit_the_width() {
        let md = "| name | what |\n|---|--:|\n| mm | a small agent |\n| curl | 1 |\n";
        assert_eq!(
            show(md, 40),
            [
                "name │          what",
                "─────┼──────────────",
                "mm   │ a small agent",
                "curl │             1",
            ]
        );
        // Too wide: the widest column gives way and its cells wrap.
        let narrow = show(md, 16);
        assert!(narrow.iter().all(|l| l.width() <= 16), "{narrow:?}");
        assert!(narrow.iter().any(|l| l.contains("small")), "{narrow:?}");
    }

    #[test]
    fn links_show_their_address() {
        assert_eq!(
            show(
                "See [the docs](https://example.invalid/d) and <https://x.invalid>.",
                80
            ),
            ["See the docs (https://example.invalid/d) and https://x.invalid."]
        );
    }

    /// The answer of the issue's check: a table and a code block, streamed
    /// in pieces split at every byte.
    const ANSWER: &str = "## Results\n\nThe **build** passed:\n\n| step | time |\n|---|---|\n| test | 12 s |\n| lint | 3 s |\n\n```sh\ncargo test\ncargo clippy\n```\n\n- done\n- next: *ship it*\n";

    #[test]
    fn a_stream_renders_the_same_at_every_split() {
        let whole = render(ANSWER, 30);
        for cut in 1..ANSWER.len() {
            if !ANSWER.is_char_boundary(cut) {
                continue;
            }
            let mut s = Stream::new(30);
            let mut got = s.push(&ANSWER[..cut]);
            got.extend(s.push(&ANSWER[cut..]));
            got.extend(s.finish());
            assert_eq!(texts(&got), texts(&whole), "cut at {cut}");
            assert_eq!(got, whole, "styles, cut at {cut}");
        }
        // Byte by byte (char by char), as slow as a server can be.
        let mut s = Stream::new(30);
        let mut got = Vec::new();
        for c in ANSWER.chars() {
            got.extend(s.push(&c.to_string()));
        }
        got.extend(s.finish());
        assert_eq!(got, whole);
    }

    #[test]
    fn a_long_paragraph_and_a_list_show_line_by_line_as_they_arrive() {
        let mut s = Stream::new(20);
        // One long line, no line break yet: the wrapped rows but the last.
        let shown = texts(&s.push("one two three four five six seven eight nine"));
        assert_eq!(shown, ["one two three four", "five six seven eight"]);
        assert!(texts(&s.push(" ten")).is_empty());
        let mut p = Stream::new(40);
        assert_eq!(texts(&p.push("A short one.\n\n")), ["A short one."]);
        assert!(p.finish().is_empty());
        // A blank line closes the paragraph; the list shows item by item.
        let shown = texts(&s.push("\n\n- a\n- b\n- c"));
        assert_eq!(shown, ["nine ten", "", "• a", "• b"]);
        assert_eq!(texts(&s.finish()), ["• c"]);
    }

    #[test]
    fn a_code_block_streams_line_by_line() {
        let mut s = Stream::new(40);
        assert_eq!(
            texts(&s.push("Run:\n\n```sh\ncargo b")),
            ["Run:", "", "┌ sh"]
        );
        let shown = texts(&s.push("uild\ncargo te"));
        assert!(shown.contains(&"│ cargo build".to_owned()), "{shown:?}");
        assert!(!shown.iter().any(|l| l.contains("cargo te")), "{shown:?}");
    }

    #[test]
    fn no_span_holds_a_control_character() {
        // Raw escapes in text, a code block and a table, and character
        // references that become control characters only once parsed.
        let md = concat!(
            "Hi \x1b]52;c;aGk=\x07there \x1b[2J&#27;[2J&#x1b;]0;t&#7;&#13;x\n",
            "\n",
            "```sh\n",
            "echo \x1b[2Jdone\n",
            "```\n",
            "\n",
            "| a&#27;[31m | b\x1b[1m |\n",
            "|---|---|\n",
            "| c | d |\n",
        );
        let whole = render(md, 80);
        for span in whole.iter().flat_map(|l| &l.spans) {
            assert!(
                !span.text.chars().any(char::is_control),
                "{:?} in {whole:?}",
                span.text
            );
        }
        let all = texts(&whole).join("\n");
        assert!(all.contains("Hi there [2J]0;tx"), "{all}");
        assert!(all.contains("│ echo done"), "{all}");
        // Streamed, a sequence cut in two is removed all the same.
        for cut in 1..md.len() {
            if !md.is_char_boundary(cut) {
                continue;
            }
            let mut s = Stream::new(80);
            let mut got = s.push(&md[..cut]);
            got.extend(s.push(&md[cut..]));
            got.extend(s.finish());
            assert_eq!(got, whole, "cut at {cut}");
        }
    }
}
