//! `@path` mentions in a question. A mention of a path that exists becomes
//! an `[attached file: <path>]` line after the question (the same line an
//! editor's `resource_link` gives); anything else stays as typed.
//!
//! Forms: `@src/main.rs`, `@"docs/my notes.md"`, `@'a b.txt'`,
//! `@my\ file.txt`. An `@` inside a word (`me@example.com`) is not a
//! mention. Trailing punctuation (`@main.rs,`) is not part of the path
//! unless the path with it exists.

use std::path::Path;

/// The line that attaches a file.
pub fn attached_line(path: &str) -> String {
    format!("[attached file: {path}]")
}

/// One `@` mention found in a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The path as written, unquoted and unescaped.
    pub path: String,
    /// Byte range of the whole mention (with `@` and quotes) in the question.
    pub span: std::ops::Range<usize>,
}

/// Every mention in `text`, in order.
pub fn find(text: &str) -> Vec<Mention> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'@'
            || (i > 0 && !bytes[i - 1].is_ascii_whitespace() && bytes[i - 1] != b'(')
        {
            i += 1;
            continue;
        }
        let start = i;
        let mut j = i + 1;
        let mut path = String::new();
        match bytes.get(j) {
            Some(&q) if q == b'"' || q == b'\'' => {
                j += 1;
                let close = text[j..].find(q as char).map(|k| j + k);
                match close {
                    Some(end) => {
                        path.push_str(&text[j..end]);
                        j = end + 1;
                    }
                    None => {
                        i += 1;
                        continue;
                    }
                }
            }
            _ => {
                let mut chars = text[j..].char_indices().peekable();
                let mut end = text.len();
                while let Some((k, c)) = chars.next() {
                    if c == '\\' {
                        if let Some(&(_, next)) = chars.peek()
                            && (next.is_whitespace() || next == '\\')
                        {
                            path.push(next);
                            chars.next();
                            continue;
                        }
                        path.push(c);
                    } else if c.is_whitespace() {
                        end = j + k;
                        break;
                    } else {
                        path.push(c);
                    }
                }
                j = end;
            }
        }
        if !path.is_empty() {
            found.push(Mention {
                path,
                span: start..j,
            });
        }
        i = j.max(i + 1);
    }
    found
}

/// Resolve `path` against `cwd`, trimming trailing punctuation when the
/// path as written does not exist. Returns the path as it should be shown.
fn existing(cwd: &Path, path: &str) -> Option<String> {
    let mut candidate = path;
    loop {
        if !candidate.is_empty() && cwd.join(candidate).exists() {
            return Some(candidate.to_string());
        }
        let trimmed =
            candidate.trim_end_matches([',', '.', ';', ':', '!', '?', ')', ']', '\'', '"']);
        if trimmed.len() == candidate.len() {
            return None;
        }
        // Trim one character at a time so `a.b.` can still match `a.b`.
        let mut chars = candidate.chars();
        chars.next_back();
        candidate = chars.as_str();
    }
}

/// The paths `question` attaches: each mentioned path that exists under
/// `cwd` (or absolutely), once, in order.
pub fn attached(question: &str, cwd: &Path) -> Vec<String> {
    let mut attached: Vec<String> = Vec::new();
    for mention in find(question) {
        if let Some(path) = existing(cwd, &mention.path)
            && !attached.contains(&path)
        {
            attached.push(path);
        }
    }
    attached
}

/// How big an attached path is, for the user: `120 lines`, `1 line`, `a
/// directory`, or its size past 8 MiB (not read through).
pub fn size_of(cwd: &Path, path: &str) -> String {
    let full = cwd.join(path);
    let Ok(meta) = std::fs::metadata(&full) else {
        return "unreadable".to_owned();
    };
    if meta.is_dir() {
        return "a directory".to_owned();
    }
    if meta.len() > 8 << 20 {
        return format!("{} MiB", meta.len() >> 20);
    }
    match std::fs::read(&full) {
        Ok(bytes) => {
            let mut n = bytes.iter().filter(|b| **b == b'\n').count();
            if bytes.last().is_some_and(|b| *b != b'\n') {
                n += 1;
            }
            format!("{n} line{}", if n == 1 { "" } else { "s" })
        }
        Err(_) => "unreadable".to_owned(),
    }
}

/// The question with an `[attached file: …]` line for each mentioned path
/// that exists under `cwd` (or absolutely). Each path is attached once.
pub fn expand(question: &str, cwd: &Path) -> String {
    let attached = attached(question, cwd);
    if attached.is_empty() {
        return question.to_string();
    }
    let mut out = question.trim_end().to_string();
    out.push_str("\n\n");
    out.push_str(
        &attached
            .iter()
            .map(|p| attached_line(p))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_plain_quoted_and_escaped_mentions() {
        let m = find(r#"look at @src/main.rs and @"my notes.md" and @'a b' and @x\ y.txt"#);
        let paths: Vec<_> = m.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["src/main.rs", "my notes.md", "a b", "x y.txt"]);
    }

    #[test]
    fn an_at_inside_a_word_is_not_a_mention() {
        assert!(find("mail me@example.com").is_empty());
        assert!(find("a lone @ sign").is_empty());
    }

    #[test]
    fn existing_paths_are_attached_others_stay_as_typed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.path().join("my notes.md"), "x").unwrap();
        let out = expand(
            r#"fix @main.rs, see @"my notes.md" not @missing.rs"#,
            dir.path(),
        );
        assert_eq!(
            out,
            "fix @main.rs, see @\"my notes.md\" not @missing.rs\n\n[attached file: main.rs]\n[attached file: my notes.md]"
        );
        assert_eq!(expand("no mention", dir.path()), "no mention");
        assert_eq!(expand("@missing", dir.path()), "@missing");
    }

    #[test]
    fn a_path_is_attached_once_and_directories_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let out = expand("@src and @src again", dir.path());
        assert_eq!(out, "@src and @src again\n\n[attached file: src]");
    }
}
