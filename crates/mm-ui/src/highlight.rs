//! A small syntax colouring of code blocks: keywords, strings, comments
//! and numbers of the languages models write most, line by line with the
//! state a block comment or a multi-line string carries to the next line.
//! Deliberately simple (no grammar files to load: mm starts instantly and
//! stays small); an unknown language is plain code.

use crate::markdown::Role;

/// How a language looks to the lexer.
#[derive(Debug, Clone, Copy)]
struct Lang {
    keywords: &'static [&'static str],
    /// Line comment openers.
    line_comments: &'static [&'static str],
    /// Block comment open and close.
    block_comment: Option<(&'static str, &'static str)>,
    /// Whether `'` quotes strings (not in Rust, where it marks lifetimes).
    single_quotes: bool,
    /// Python's and others' `"""` strings.
    triple_quotes: bool,
}

const RUST: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while",
];
const PYTHON: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "self",
];
const JS: &[&str] = &[
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "of",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "yield",
];
const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "false",
    "for",
    "func",
    "go",
    "if",
    "import",
    "interface",
    "map",
    "nil",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "true",
    "type",
    "var",
];
const C: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "if",
    "include",
    "int",
    "long",
    "namespace",
    "new",
    "nullptr",
    "private",
    "public",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "true",
    "typedef",
    "union",
    "unsigned",
    "using",
    "void",
    "while",
];
const SHELL: &[&str] = &[
    "case", "do", "done", "elif", "else", "esac", "exit", "export", "fi", "for", "function", "if",
    "in", "local", "return", "then", "until", "while",
];

fn lang(name: &str) -> Option<Lang> {
    let c_like = |keywords| Lang {
        keywords,
        line_comments: &["//"],
        block_comment: Some(("/*", "*/")),
        single_quotes: true,
        triple_quotes: false,
    };
    Some(match name.to_ascii_lowercase().as_str() {
        "rust" | "rs" => Lang {
            single_quotes: false,
            ..c_like(RUST)
        },
        "python" | "py" => Lang {
            keywords: PYTHON,
            line_comments: &["#"],
            block_comment: None,
            single_quotes: true,
            triple_quotes: true,
        },
        "javascript" | "js" | "typescript" | "ts" | "tsx" | "jsx" => c_like(JS),
        "go" | "golang" => c_like(GO),
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "java" | "kotlin" | "swift" | "cs" => c_like(C),
        "sh" | "bash" | "shell" | "zsh" | "console" => Lang {
            keywords: SHELL,
            line_comments: &["#"],
            block_comment: None,
            single_quotes: true,
            triple_quotes: false,
        },
        "toml" | "yaml" | "yml" | "ini" => Lang {
            keywords: &["true", "false", "null"],
            line_comments: &["#"],
            block_comment: None,
            single_quotes: true,
            triple_quotes: false,
        },
        "json" | "jsonc" => Lang {
            keywords: &["true", "false", "null"],
            line_comments: &["//"],
            block_comment: None,
            single_quotes: false,
            triple_quotes: false,
        },
        _ => return None,
    })
}

/// What an unfinished line leaves open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Open {
    #[default]
    Nothing,
    Comment,
    /// A string closed by this delimiter.
    Str(String),
}

/// Colours one code block, line after line.
#[derive(Debug, Clone)]
pub struct Highlighter {
    lang: Option<Lang>,
    open: Open,
}

impl Highlighter {
    /// A highlighter for a block whose fence names `lang` (`rust`, `py`…).
    pub fn new(lang: &str) -> Highlighter {
        let first = lang.split([' ', ',', '{']).next().unwrap_or("");
        Highlighter {
            lang: self::lang(first),
            open: Open::Nothing,
        }
    }

    /// The pieces of one line (without its newline), each with its role.
    pub fn line(&mut self, text: &str) -> Vec<(String, Role)> {
        let Some(lang) = self.lang else {
            return vec![(text.to_owned(), Role::CodeBlock)];
        };
        let mut out: Vec<(String, Role)> = Vec::new();
        let push = |out: &mut Vec<(String, Role)>, s: &str, role: Role| {
            if s.is_empty() {
                return;
            }
            match out.last_mut() {
                Some((last, r)) if *r == role => last.push_str(s),
                _ => out.push((s.to_owned(), role)),
            }
        };
        let mut rest = text;
        while !rest.is_empty() {
            match self.open.clone() {
                Open::Comment => {
                    let close = lang.block_comment.map_or("*/", |(_, c)| c);
                    match rest.find(close) {
                        Some(at) => {
                            push(&mut out, &rest[..at + close.len()], Role::Comment);
                            rest = &rest[at + close.len()..];
                            self.open = Open::Nothing;
                        }
                        None => {
                            push(&mut out, rest, Role::Comment);
                            rest = "";
                        }
                    }
                    continue;
                }
                Open::Str(delim) => {
                    match find_close(rest, &delim) {
                        Some(end) => {
                            push(&mut out, &rest[..end], Role::Str);
                            rest = &rest[end..];
                            self.open = Open::Nothing;
                        }
                        None => {
                            push(&mut out, rest, Role::Str);
                            rest = "";
                            // A plain quote does not run past its line.
                            if delim.len() == 1 {
                                self.open = Open::Nothing;
                            }
                        }
                    }
                    continue;
                }
                Open::Nothing => {}
            }
            if let Some(c) = lang.line_comments.iter().find(|c| rest.starts_with(**c)) {
                let _ = c;
                push(&mut out, rest, Role::Comment);
                break;
            }
            if let Some((open, _)) = lang.block_comment
                && rest.starts_with(open)
            {
                push(&mut out, open, Role::Comment);
                rest = &rest[open.len()..];
                self.open = Open::Comment;
                continue;
            }
            if lang.triple_quotes && (rest.starts_with("\"\"\"") || rest.starts_with("'''")) {
                let delim = rest[..3].to_owned();
                push(&mut out, &delim, Role::Str);
                rest = &rest[3..];
                self.open = Open::Str(delim);
                continue;
            }
            let first = rest.chars().next().unwrap_or(' ');
            if first == '"' || (first == '\'' && lang.single_quotes) || first == '`' {
                push(&mut out, &rest[..1], Role::Str);
                rest = &rest[1..];
                self.open = Open::Str(first.to_string());
                continue;
            }
            if first.is_alphanumeric() || first == '_' {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                let word = &rest[..end];
                let role = if lang.keywords.contains(&word) {
                    Role::Keyword
                } else if first.is_ascii_digit() {
                    Role::Number
                } else {
                    Role::CodeBlock
                };
                push(&mut out, word, role);
                rest = &rest[end..];
                continue;
            }
            let len = first.len_utf8();
            push(&mut out, &rest[..len], Role::CodeBlock);
            rest = &rest[len..];
        }
        out
    }
}

/// Where the string that `delim` closes ends in `text` (just after the
/// delimiter), skipping escaped characters.
fn find_close(text: &str, delim: &str) -> Option<usize> {
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if let Some(escaped) = rest.strip_prefix('\\') {
            i += 1 + escaped.chars().next().map_or(0, char::len_utf8);
            continue;
        }
        if rest.starts_with(delim) {
            return Some(i + delim.len());
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(lang: &str, lines: &[&str]) -> Vec<Vec<(String, Role)>> {
        let mut h = Highlighter::new(lang);
        lines.iter().map(|l| h.line(l)).collect()
    }

    #[test]
    fn keywords_strings_comments_numbers() {
        let got = roles("rust", &["fn main() { let x = \"a\\\"b\"; // hi"]);
        assert_eq!(
            got[0],
            vec![
                ("fn".into(), Role::Keyword),
                (" main() { ".into(), Role::CodeBlock),
                ("let".into(), Role::Keyword),
                (" x = ".into(), Role::CodeBlock),
                ("\"a\\\"b\"".into(), Role::Str),
                ("; ".into(), Role::CodeBlock),
                ("// hi".into(), Role::Comment),
            ]
        );
        let got = roles("py", &["x = 42  # n"]);
        assert_eq!(got[0][0], ("x = ".into(), Role::CodeBlock));
        assert_eq!(got[0][1], ("42".into(), Role::Number));
        assert_eq!(got[0][3], ("# n".into(), Role::Comment));
    }

    #[test]
    fn a_block_comment_and_a_triple_string_carry_to_the_next_line() {
        let got = roles("c", &["int a; /* one", "two */ int b;"]);
        assert_eq!(got[1][0], ("two */".into(), Role::Comment));
        assert_eq!(got[1][2], ("int".into(), Role::Keyword));
        let got = roles("python", &["s = \"\"\"doc", "more\"\"\" + x"]);
        assert_eq!(got[1][0], ("more\"\"\"".into(), Role::Str));
        // A plain quote left open ends with its line.
        let got = roles("js", &["let s = \"open", "let t"]);
        assert_eq!(got[1][0], ("let".into(), Role::Keyword));
    }

    #[test]
    fn an_unknown_language_is_plain_code() {
        assert_eq!(
            roles("brainfuck", &["+++ if"]),
            vec![vec![("+++ if".to_owned(), Role::CodeBlock)]]
        );
    }
}
