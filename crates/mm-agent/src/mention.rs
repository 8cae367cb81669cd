//! `@path` mentions in a question. A mention of a path that exists becomes
//! an `[attached file: <path>]` line after the question, followed by the
//! file's text (fenced, within the tool-result budget: head and tail
//! around the truncation marker past it), a folder's listing, or, for a
//! PNG, JPEG, GIF or WebP file, the picture itself; an editor's
//! `resource_link` attaches the same way. Anything else stays as typed.
//!
//! Forms: `@src/main.rs`, `@"docs/my notes.md"`, `@'a b.txt'`,
//! `@my\ file.txt`. An `@` inside a word (`me@example.com`) is not a
//! mention. Trailing punctuation (`@main.rs,`) is not part of the path
//! unless the path with it exists.
//!
//! A picture's path attaches without the `@`: a terminal pastes a file
//! dropped on it as its path (`/home/me/shot.png`, quoted or with `\ `
//! when it has spaces; `~/…`; a file manager's `file:` URL), and the
//! user meant the picture.

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
                let (word, len) = escaped_word(&text[j..]);
                path = word;
                j += len;
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

/// The paths of pictures in `text` written without `@`, as a terminal
/// pastes a dropped file: `/a/shot.png`, `'/a/my shot.png'`,
/// `"/a/my shot.png"`, `/a/my\ shot.png`, `~/shot.png` or
/// `file:///a/my%20shot.png`, at the start of a word. `~` is the user's
/// home folder; a `file:` URL becomes its path.
pub fn pasted(text: &str) -> Vec<String> {
    let home = mm_config::BaseDirs::from_process();
    pasted_words(text)
        .into_iter()
        .filter_map(|word| {
            let path = if word.starts_with("file://") {
                local_file(&word)?.display().to_string()
            } else if word.starts_with("~/") {
                home.expand_tilde(Path::new(&word)).display().to_string()
            } else {
                word
            };
            mm_tools::image::media_type(Path::new(&path))
                .is_some()
                .then_some(path)
        })
        .fold(Vec::new(), |mut found, path| {
            if !found.contains(&path) {
                found.push(path);
            }
            found
        })
}

/// The words of `text` that start like a pasted path (`/`, `~/`,
/// `file://`, quoted or not), unquoted and unescaped, trailing punctuation
/// cut.
fn pasted_words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    let mut at_word_start = true;
    while let Some(c) = rest.chars().next() {
        if c.is_whitespace() {
            at_word_start = true;
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if !at_word_start {
            rest = &rest[c.len_utf8()..];
            continue;
        }
        at_word_start = false;
        let (path, len) = match c {
            '\'' | '"' if starts_like_a_path(&rest[1..]) => match rest[1..].find(c) {
                Some(end) => (rest[1..=end].to_string(), end + 2),
                None => (String::new(), 1),
            },
            _ if starts_like_a_path(rest) => escaped_word(rest),
            _ => (String::new(), c.len_utf8()),
        };
        let path = path.trim_end_matches([',', '.', ';', ':', '!', '?', ')', ']']);
        if !path.is_empty() {
            found.push(path.to_string());
        }
        rest = &rest[len..];
    }
    found
}

/// Whether `text` starts like a pasted path: absolute, in the home
/// folder, or a `file:` URL.
fn starts_like_a_path(text: &str) -> bool {
    text.starts_with('/') || text.starts_with("~/") || text.starts_with("file://")
}

/// The path of a `file:` URL on this machine: no host, `localhost`, or
/// this machine's name (some file managers write it); another host's file
/// is not here.
fn local_file(word: &str) -> Option<std::path::PathBuf> {
    let url = url::Url::parse(word).ok()?;
    if let Some(host) = url.host_str().filter(|h| !h.is_empty()) {
        let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        if !host.eq_ignore_ascii_case("localhost") && !host.eq_ignore_ascii_case(here.trim()) {
            return None;
        }
        // The same path without the host.
        let local = url::Url::parse(&format!("file://{}", url.path())).ok()?;
        return local.to_file_path().ok();
    }
    url.to_file_path().ok()
}

/// The word at the start of `text`, `\ ` and `\\` unescaped, and its
/// length as written.
fn escaped_word(text: &str) -> (String, usize) {
    let mut word = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((k, c)) = chars.next() {
        if c == '\\' {
            if let Some(&(_, next)) = chars.peek()
                && (next.is_whitespace() || next == '\\')
            {
                word.push(next);
                chars.next();
                continue;
            }
        } else if c.is_whitespace() {
            return (word, k);
        }
        word.push(c);
    }
    (word, text.len())
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
/// `cwd` (or absolutely), then each pasted picture's path that exists,
/// once, in order.
pub fn attached(question: &str, cwd: &Path) -> Vec<String> {
    let mut attached: Vec<String> = Vec::new();
    let mentioned = find(question).into_iter().map(|m| m.path);
    for written in mentioned.chain(pasted(question)) {
        if let Some(path) = existing(cwd, &written)
            && !attached.contains(&path)
        {
            attached.push(path);
        }
    }
    attached
}

/// What a mention (or an editor's `resource_link`) attaches: the text the
/// model reads, the words the user reads, and a picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The path as the question wrote it.
    pub path: String,
    /// What follows the question: the `[attached file: …]` line, then the
    /// file's text (fenced), the folder's listing, or why nothing follows.
    pub text: String,
    /// How much was sent, for the user: `3 lines`, `a directory, 4
    /// entries`, `an image`…
    pub size: String,
    /// The picture, for a PNG, JPEG, GIF or WebP file.
    pub image: Option<mm_engine::Image>,
}

/// Files larger than this are named, not read.
const MAX_TEXT_FILE: u64 = 8 << 20;

/// Pieces a question carries besides its text: paths read like mentions
/// (an editor's `resource_link`) and pictures (an editor's image blocks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    /// Paths attached as a mention of each would.
    pub paths: Vec<String>,
    /// Pictures sent with the question.
    pub images: Vec<mm_engine::Image>,
}

/// What `path` (relative to `cwd`, or absolute) attaches: a text file's
/// text within `budget` characters (head and tail around the truncation
/// marker past it), a folder's listing, a picture; `sees`: whether the
/// model sees pictures (the words for the user say so).
pub fn attach(cwd: &Path, path: &str, budget: usize, sees: bool) -> Attachment {
    let full = cwd.join(path);
    let line = attached_line(path);
    let done = |body: Option<String>, size: String, image| Attachment {
        path: path.to_owned(),
        text: match body {
            Some(b) => format!("{line}\n{b}"),
            None => line.clone(),
        },
        size,
        image,
    };
    let meta = match std::fs::metadata(&full) {
        Ok(m) => m,
        Err(e) => return done(Some(format!("({e})")), "unreadable".into(), None),
    };
    if meta.is_dir() {
        return listing(&full, budget, |body, size| done(Some(body), size, None));
    }
    if !meta.is_file() {
        let why = "not a regular file: not read".to_owned();
        return done(Some(format!("({why})")), why, None);
    }
    if mm_tools::image::media_type(&full).is_some() {
        return match mm_tools::image::load(&full, path) {
            Ok(image) => {
                let size = if sees {
                    "an image".to_owned()
                } else {
                    "an image, not shown: the model cannot see images".to_owned()
                };
                done(None, size, Some(image))
            }
            Err(why) => done(Some(format!("({why})")), format!("not sent: {why}"), None),
        };
    }
    if meta.len() > MAX_TEXT_FILE {
        let size = format!("{} MiB: too large to attach", meta.len() >> 20);
        let body = format!("({size}; read_file reads parts of it)");
        return done(Some(body), size, None);
    }
    let bytes = match std::fs::read(&full) {
        Ok(b) => b,
        Err(e) => return done(Some(format!("({e})")), "unreadable".into(), None),
    };
    let n = bytes.len();
    let text = match String::from_utf8(bytes) {
        Ok(t) if !t.contains('\0') => t,
        _ => {
            let size = format!("a binary file of {n} bytes: not attached");
            return done(Some(format!("({size})")), size, None);
        }
    };
    let mut lines = text.matches('\n').count();
    if !text.is_empty() && !text.ends_with('\n') {
        lines += 1;
    }
    let shown = mm_tools::output::fit(&text, "", budget);
    let plural = if lines == 1 { "" } else { "s" };
    let size = if shown.len() == text.len() {
        format!("{lines} line{plural}")
    } else {
        format!("{lines} line{plural}, cut to {budget} characters")
    };
    done(Some(fenced(&shown)), size, None)
}

/// `text` in a code fence longer than any run of backticks inside it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{fence}\n{text}{newline}{fence}")
}

/// A folder's entries, sorted, folders with a `/`, within `budget`.
fn listing(
    dir: &Path,
    budget: usize,
    done: impl FnOnce(String, String) -> Attachment,
) -> Attachment {
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| {
                let mut name = e.file_name().to_string_lossy().into_owned();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                name
            })
            .collect(),
        Err(e) => return done(format!("({e})"), "unreadable".into()),
    };
    names.sort();
    let n = names.len();
    let text: String = names.iter().map(|n| format!("{n}\n")).collect();
    let plural = if n == 1 { "y" } else { "ies" };
    let shown = mm_tools::output::fit(&text, "", budget);
    let size = if shown.len() == text.len() {
        format!("a directory, {n} entr{plural}")
    } else {
        format!("a directory, {n} entr{plural}, cut to {budget} characters")
    };
    done(fenced(&shown), size)
}

/// A picture an editor sent (base64, as ACP's image block carries it),
/// checked and scaled down as a mentioned file is; `Err` says why not.
pub fn image_from_base64(data: &str, source: &str) -> Result<mm_engine::Image, String> {
    use base64::Engine as _;
    let shown = if source.is_empty() {
        "the image"
    } else {
        source
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("{shown} is not valid base64: {e}"))?;
    mm_tools::image::from_bytes(&bytes, shown)
}

/// Everything a question attaches: each mentioned path that exists, then
/// each of `extra` (an editor's links), once each, in order.
pub fn attachments(
    question: &str,
    extra: &[String],
    cwd: &Path,
    budget: usize,
    sees: bool,
) -> Vec<Attachment> {
    let mut paths = attached(question, cwd);
    for p in extra {
        if !paths.contains(p) {
            paths.push(p.clone());
        }
    }
    paths.iter().map(|p| attach(cwd, p, budget, sees)).collect()
}

/// The question followed by what each attachment gives the model.
pub fn expand_with(question: &str, attachments: &[Attachment]) -> String {
    if attachments.is_empty() {
        return question.to_string();
    }
    let mut out = question.trim_end().to_string();
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(
        &attachments
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    );
    out
}

/// The question with what each mentioned path that exists under `cwd` (or
/// absolutely) attaches, within `budget` characters each.
pub fn expand(question: &str, cwd: &Path, budget: usize) -> String {
    expand_with(question, &attachments(question, &[], cwd, budget, true))
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
    fn a_pasted_picture_path_is_found_without_an_at() {
        let text = r#"what is /a/shot.png? and '/b/my shot.JPG' "/c/x y.webp" /d/my\ pic.gif, not /e/notes.md x/f.png a/g.png src/h.png:3 @/i.png"#;
        assert_eq!(
            pasted(text),
            [
                "/a/shot.png",
                "/b/my shot.JPG",
                "/c/x y.webp",
                "/d/my pic.gif"
            ]
        );
        assert!(pasted("'/unclosed.png").is_empty());
        assert_eq!(
            pasted("see file:///a/my%20shot.png and 'file:///b/c.gif'"),
            ["/a/my shot.png", "/b/c.gif"]
        );
        let home = mm_config::BaseDirs::from_process().expand_tilde(Path::new("~/d.png"));
        assert_eq!(pasted("~/d.png"), [home.display().to_string()]);
        assert!(pasted("x~/d.png file://elsewhere.example/e.png").is_empty());
        assert_eq!(pasted("file://localhost/e.png"), ["/e.png"]);
        let here = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(
            pasted(&format!("file://{}/f%20g.png", here.trim())),
            ["/f g.png"],
            "this machine's own name is here"
        );
        assert!(pasted("/a.png /a.png").len() == 1);
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
            1000,
        );
        assert_eq!(
            out,
            "fix @main.rs, see @\"my notes.md\" not @missing.rs\n\n[attached file: main.rs]\n```\nfn main() {}\n```\n[attached file: my notes.md]\n```\nx\n```"
        );
        assert_eq!(expand("no mention", dir.path(), 1000), "no mention");
        assert_eq!(expand("@missing", dir.path(), 1000), "@missing");
    }

    #[test]
    fn a_path_is_attached_once_and_directories_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::create_dir(dir.path().join("src/sub")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        let out = expand("@src and @src again", dir.path(), 1000);
        assert_eq!(
            out,
            "@src and @src again\n\n[attached file: src]\n```\na.rs\nsub/\n```"
        );
        let a = attach(dir.path(), "src", 1000, true);
        assert_eq!(a.size, "a directory, 2 entries");
    }

    #[test]
    fn a_long_file_keeps_its_head_and_tail_and_says_it_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("log.txt"), &text).unwrap();
        let a = attach(dir.path(), "log.txt", 500, true);
        assert_eq!(a.size, "2000 lines, cut to 500 characters");
        assert!(
            a.text
                .starts_with("[attached file: log.txt]\n```\nline 0\n")
        );
        assert!(a.text.contains("characters omitted …]"), "{}", a.text);
        assert!(a.text.ends_with("line 1999\n```"), "{}", a.text);
        let small = attach(dir.path(), "log.txt", 100_000, true);
        assert_eq!(small.size, "2000 lines");
        // A fence longer than any inside the file.
        std::fs::write(dir.path().join("doc.md"), "```rust\nx\n```").unwrap();
        let a = attach(dir.path(), "doc.md", 1000, true);
        assert_eq!(
            a.text,
            "[attached file: doc.md]\n````\n```rust\nx\n```\n````"
        );
        std::fs::write(dir.path().join("b.bin"), b"\x00\x01\x02").unwrap();
        let a = attach(dir.path(), "b.bin", 1000, true);
        assert_eq!(a.size, "a binary file of 3 bytes: not attached");
    }
}
