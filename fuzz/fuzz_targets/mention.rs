//! The mention parser: `find` never panics and its spans are valid (inside
//! the text, on character boundaries, in order, disjoint, each starting
//! with `@` and spelling its path); `expand` never panics and only appends
//! `[attached file: …]` lines after the question.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mm_agent::mention::{attached_line, expand, find};

/// A project with a few files, so `expand` has something to attach.
fn project() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mm-fuzz-mention-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).expect("temp dir");
        for f in ["a", "main.rs", "src/lib.rs", "my notes.md", "a.b"] {
            std::fs::write(dir.join(f), "x").expect("temp file");
        }
        dir
    })
}

/// The path an unquoted mention spells: `\ ` and `\\` are escapes.
fn unescape(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && (next.is_whitespace() || next == '\\')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mentions = find(text);
    let mut last_end = 0;
    for m in &mentions {
        let span = m.span.clone();
        assert!(span.start >= last_end && span.start < span.end && span.end <= text.len());
        assert!(text.is_char_boundary(span.start) && text.is_char_boundary(span.end));
        last_end = span.end;
        let written = &text[span];
        assert!(written.starts_with('@'), "{written:?}");
        assert!(!m.path.is_empty());
        let inner = &written[1..];
        let quoted = ['"', '\''].iter().any(|&q| {
            inner.len() >= 2
                && inner.starts_with(q)
                && inner.ends_with(q)
                && inner[1..inner.len() - 1] == m.path
        });
        assert!(
            quoted || unescape(inner) == m.path,
            "{written:?} vs {:?}",
            m.path
        );
    }

    let out = expand(text, project(), 4096);
    if out != text {
        // The question as typed (trailing space trimmed), a blank line,
        // then per attached path, each once and each a mention's path (or
        // the same cut short of trailing punctuation), its
        // `[attached file: …]` line followed by what it attaches (a file's
        // text, a folder's listing: never such a line, as the project's
        // files hold `x`).
        let rest = out
            .strip_prefix(text.trim_end())
            .expect("the question is kept");
        let lines = rest.strip_prefix("\n\n").expect("a blank line first");
        let mut seen = Vec::new();
        for line in lines.split('\n') {
            let Some(path) = line
                .strip_prefix("[attached file: ")
                .and_then(|l| l.strip_suffix(']'))
            else {
                continue;
            };
            assert_eq!(attached_line(path), line);
            assert!(
                mentions.iter().any(|m| m.path.starts_with(path)),
                "{path:?}"
            );
            assert!(!seen.contains(&path), "{path:?} attached twice");
            seen.push(path);
        }
        assert!(!seen.is_empty(), "something attached without its line");
    }
});
