//! Pure text work: cleaning what a model wrote as a symbol, finding the
//! symbol's occurrences, and converting between the tool's 1-based
//! character columns and the wire's 0-based UTF-16 offsets.
//!
//! Lines are split on `\n` alone (a trailing `\r` stays part of the line and
//! is never inside an identifier, so it shifts nothing before it).

/// True for characters that can be part of an identifier in the languages
/// the default servers speak (`$` for JavaScript).
pub fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// One word cleaned: arguments after `(` dropped, then the last identifier
/// run kept, so `Greet', `, `person.Greet`, `pkg::Greet()` and `self->Greet`
/// all give `Greet`. Empty when nothing identifier-like is left.
pub fn clean_word(word: &str) -> &str {
    let head = match word.find('(') {
        // `(Greet)` keeps what follows the parenthesis.
        Some(0) => &word[1..],
        Some(i) => &word[..i],
        None => word,
    };
    head.split(|c: char| !is_ident_char(c))
        .rfind(|part| !part.is_empty())
        .unwrap_or("")
}

/// What the model wrote before the identifier in `raw`: `person.` in
/// `person.Greet`, `greet::` in `greet::greet()`; empty when nothing.
/// Occurrences written the same way are tried first.
pub fn qualifier<'a>(raw: &'a str, ident: &str) -> &'a str {
    if ident.is_empty() {
        return "";
    }
    let Some(word) = raw
        .split(|c: char| c.is_whitespace() || c == ',')
        .find(|w| clean_word(w) == ident)
    else {
        return "";
    };
    let head = match word.find('(') {
        Some(i) if i > 0 => &word[..i],
        _ => word,
    };
    match head.rfind(ident) {
        Some(end) => head[..end].trim_start_matches(|c: char| !is_ident_char(c)),
        None => "",
    }
}

/// True when a cleaned word can name something (not a bare number).
fn is_identifier(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| is_ident_char(c) && !c.is_ascii_digit())
}

/// The identifiers in a field, in order, cleaned.
fn identifiers(field: &str) -> Vec<&str> {
    field
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(clean_word)
        .filter(|w| is_identifier(w))
        .collect()
}

/// The symbol and the new name after cleaning and the multi-word heuristic
/// for small models: when `new_name` is empty and `symbol` holds several
/// identifiers (`Greet 1 12 Hello`), the first is the symbol and, for a
/// rename, the last is the new name.
pub fn clean_symbol_and_name(symbol: &str, new_name: &str, rename: bool) -> (String, String) {
    let words = identifiers(symbol);
    let sym = words.first().copied().unwrap_or("").to_string();
    let name = identifiers(new_name);
    let new = match name.last() {
        Some(n) => n.to_string(),
        None if rename && words.len() >= 2 => words[words.len() - 1].to_string(),
        None => String::new(),
    };
    (sym, new)
}

/// Why `raw`, what the model wrote as the new name, cannot be the name
/// `cleaned` it was cleaned to: the cleaning may take off quotes, a call's
/// `()` and a qualifier (`pkg::`, `self.`, `p->`), nothing else. A name
/// that is not an identifier (`1bad-name`) is refused: renaming to a piece
/// of it (`name`) is not the rename that was asked for.
pub fn new_name_problem(raw: &str, cleaned: &str) -> Option<String> {
    let bare = raw
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | ',') || c.is_whitespace());
    let bare = bare.strip_suffix("()").unwrap_or(bare);
    let qualified = !cleaned.is_empty()
        && bare.strip_suffix(cleaned).is_some_and(|head| {
            head.is_empty()
                || ([".", "::", "->"].iter().any(|sep| head.ends_with(sep))
                    && head.chars().all(|c| is_ident_char(c) || ".:->".contains(c)))
        });
    if qualified && is_identifier(cleaned) {
        return None;
    }
    Some(format!(
        "[lsp: {raw:?} is not an identifier: a new name is letters, digits, _ and $, \
         not starting with a digit; nothing was renamed]"
    ))
}

/// A line's number of characters, without a trailing `\r`.
pub fn line_chars(line: &str) -> usize {
    line.strip_suffix('\r').unwrap_or(line).chars().count()
}

/// The lines of a text, split on `\n`. A text ending in `\n` has no extra
/// empty last line (editors do not count one either).
pub fn lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Vec::new();
    }
    body.split('\n').collect()
}

/// UTF-16 offset of the character at 0-based `col` in `line`; past the end
/// gives the line's length.
pub fn utf16_of_char_col(line: &str, col: usize) -> u32 {
    line.chars().take(col).map(char::len_utf16).sum::<usize>() as u32
}

/// 0-based character column of a UTF-16 offset in `line` (an offset inside
/// a surrogate pair counts as the character it splits).
pub fn char_col_of_utf16(line: &str, utf16: u32) -> usize {
    let mut units = 0u32;
    for (i, c) in line.chars().enumerate() {
        if units >= utf16 {
            return i;
        }
        units += c.len_utf16() as u32;
        if units > utf16 {
            return i;
        }
    }
    line.chars().count()
}

/// Byte offset in `text` of a 0-based (line, UTF-16 character) position as
/// a server sends it. Positions past a line's end clamp to the end of that
/// line (before its `\n`), past the last line to the end of the text, as
/// the protocol asks.
pub fn byte_offset(text: &str, line: u32, utf16: u32) -> usize {
    let mut start = 0usize;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let mut units = 0u32;
    for (i, c) in text[start..end].char_indices() {
        if units >= utf16 {
            return start + i;
        }
        units += c.len_utf16() as u32;
    }
    end
}

/// Where an occurrence of a symbol stands: 0-based line and character
/// column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spot {
    pub line: usize,
    pub col: usize,
}

/// The line-comment and block-comment-line openers of a file's language,
/// from its extension (with the dot). Unknown languages get both families.
fn comment_openers(ext: &str) -> &'static [&'static str] {
    match ext {
        ".py" | ".pyi" | ".sh" | ".bash" | ".rb" | ".pl" | ".toml" | ".yaml" | ".yml" | ".r" => {
            &["#"]
        }
        ".c" | ".h" | ".cc" | ".cpp" | ".cxx" | ".hpp" | ".hh" | ".rs" | ".go" | ".js" | ".jsx"
        | ".ts" | ".tsx" | ".java" | ".kt" | ".swift" | ".cs" | ".scala" | ".zig" => {
            &["//", "/*", "*"]
        }
        ".lua" | ".sql" | ".hs" => &["--"],
        _ => &["//", "/*", "*", "#", "--"],
    }
}

/// True when the line is a comment as a whole (its first non-blank
/// characters open a comment).
fn is_comment_line(line: &str, openers: &[&str]) -> bool {
    let t = line.trim_start();
    openers.iter().any(|m| t.starts_with(m)) && !t.starts_with("#[") && !t.starts_with("#!")
}

/// True when the column lies after a line comment opened earlier on the
/// same line (`//`, `#`, `--`; a rough cut that ignores string literals).
fn after_line_comment(line: &str, col: usize, openers: &[&str]) -> bool {
    openers
        .iter()
        .filter(|m| **m != "*" && **m != "/*")
        .filter_map(|m| line.find(m))
        .any(|b| line[..b].chars().count() < col)
}

/// True when the byte offset `at` lies inside a string literal opened
/// earlier on the line (quotes counted, escapes skipped; a rough cut).
fn in_string(line: &str, at: usize) -> bool {
    let mut open: Option<char> = None;
    let mut escaped = false;
    for c in line[..at].chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match (open, c) {
            (_, '\\') => escaped = true,
            (None, '"' | '\'' | '`') => open = Some(c),
            (Some(q), c) if c == q => open = None,
            _ => {}
        }
    }
    open.is_some()
}

/// True when the occurrence names a module or a receiver rather than the
/// thing itself: followed by `.` or `::` (`greet.h`, `greet::x`), or the
/// module of a Python `import greet` / `from greet import …`.
fn is_qualifier(line: &str, start: usize, end: usize) -> bool {
    let rest = &line[end..];
    if rest.starts_with('.') || rest.starts_with("::") {
        return true;
    }
    let t = line.trim_start();
    let indent = line.len() - t.len();
    if let Some(module) = t.strip_prefix("from ") {
        let module_end = indent + 5 + module.find(" import").unwrap_or(module.len());
        return start < module_end;
    }
    t.starts_with("import ")
}

/// Whole-word occurrences of `symbol`, best candidates first: written
/// after the model's `qualifier` (`person.`), then plain code, then code
/// naming a module or receiver, then inside string literals, then
/// comments; each group in reading order. `only_line` (0-based) restricts
/// the search to one line; `ext` (with the dot) tells which comment syntax
/// applies.
pub fn occurrences(
    text: &str,
    symbol: &str,
    qualifier: &str,
    only_line: Option<usize>,
    ext: &str,
) -> Vec<Spot> {
    let openers = comment_openers(ext);
    let mut groups: [Vec<Spot>; 5] = Default::default();
    if symbol.is_empty() {
        return Vec::new();
    }
    for (n, line) in lines(text).into_iter().enumerate() {
        if only_line.is_some_and(|l| l != n) {
            continue;
        }
        let comment_line = is_comment_line(line, openers);
        let mut from = 0;
        while let Some(i) = line[from..].find(symbol) {
            let b = from + i;
            let e = b + symbol.len();
            let before = line[..b].chars().next_back();
            let after = line[e..].chars().next();
            from = e;
            if before.is_some_and(is_ident_char) || after.is_some_and(is_ident_char) {
                continue;
            }
            let col = line[..b].chars().count();
            let spot = Spot { line: n, col };
            let group = if comment_line || after_line_comment(line, col, openers) {
                4
            } else if in_string(line, b) {
                3
            } else if !qualifier.is_empty() && line[..b].ends_with(qualifier) {
                0
            } else if is_qualifier(line, b, e) {
                2
            } else {
                1
            };
            groups[group].push(spot);
        }
    }
    groups.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_name_that_is_not_an_identifier_is_refused() {
        for raw in ["1bad-name", "bad-name", "1bad", "a b", "x+y", "-"] {
            let (_, cleaned) = clean_symbol_and_name("old", raw, true);
            let problem = new_name_problem(raw, &cleaned);
            assert!(problem.is_some(), "{raw:?} was accepted as {cleaned:?}");
        }
        assert_eq!(
            new_name_problem("1bad-name", "name").unwrap(),
            "[lsp: \"1bad-name\" is not an identifier: a new name is letters, digits, _ and $, \
             not starting with a digit; nothing was renamed]"
        );
        for (raw, want) in [
            ("hello", "hello"),
            ("'Hello',", "Hello"),
            ("`salute`", "salute"),
            ("greet()", "greet"),
            ("pkg::Hello", "Hello"),
            ("self.name2", "name2"),
            ("p->$x", "$x"),
            ("héllo_1", "héllo_1"),
        ] {
            let (_, cleaned) = clean_symbol_and_name("old", raw, true);
            assert_eq!(cleaned, want, "{raw:?}");
            assert_eq!(new_name_problem(raw, &cleaned), None, "{raw:?}");
        }
    }

    #[test]
    fn cleaning_cuts_quotes_punctuation_and_prefixes() {
        assert_eq!(clean_word("Greet',"), "Greet");
        assert_eq!(clean_word("`Greet`"), "Greet");
        assert_eq!(clean_word("person.Greet"), "Greet");
        assert_eq!(clean_word("pkg::Greet()"), "Greet");
        assert_eq!(clean_word("self->Greet"), "Greet");
        assert_eq!(clean_word("greet(name)"), "greet");
        assert_eq!(clean_word("(greet)"), "greet");
        assert_eq!(clean_word("\"\""), "");
        assert_eq!(clean_word("grüße"), "grüße");
    }

    #[test]
    fn multi_word_heuristic_takes_first_and_last_identifier() {
        assert_eq!(
            clean_symbol_and_name("Greet 1 12 Hello", "", true),
            ("Greet".to_string(), "Hello".to_string())
        );
        // Only a rename takes a new name from the symbol.
        assert_eq!(
            clean_symbol_and_name("Greet 1 12 Hello", "", false),
            ("Greet".to_string(), String::new())
        );
        // An explicit new name wins, and is cleaned like the symbol.
        assert_eq!(
            clean_symbol_and_name("person.Greet", "'Hello',", true),
            ("Greet".to_string(), "Hello".to_string())
        );
        assert_eq!(
            clean_symbol_and_name("Greet', ", "", true),
            ("Greet".to_string(), String::new())
        );
    }

    #[test]
    fn utf16_conversions_count_surrogate_pairs_twice() {
        let line = "let é = \"😀\"; greet";
        // é is one UTF-16 unit, 😀 two.
        let col = line.chars().position(|c| c == 'g').unwrap_or(0);
        let units = utf16_of_char_col(line, col);
        assert_eq!(units as usize, col + 1);
        assert_eq!(char_col_of_utf16(line, units), col);
        assert_eq!(char_col_of_utf16(line, 0), 0);
        assert_eq!(char_col_of_utf16(line, 1000), line.chars().count());
    }

    #[test]
    fn byte_offsets_follow_utf16_and_clamp() {
        let text = "aé😀b\nsecond\n";
        assert_eq!(byte_offset(text, 0, 0), 0);
        assert_eq!(byte_offset(text, 0, 2), 3); // after é (2 bytes)
        assert_eq!(byte_offset(text, 0, 4), 7); // after 😀 (4 bytes, 2 units)
        assert_eq!(&text[byte_offset(text, 0, 4)..byte_offset(text, 0, 5)], "b");
        assert_eq!(byte_offset(text, 0, 99), 8); // clamps before \n
        assert_eq!(byte_offset(text, 1, 3), 12);
        assert_eq!(byte_offset(text, 5, 0), text.len());
    }

    #[test]
    fn occurrences_are_whole_words_code_first() {
        let text = "// greet the user\nfn greet() {}\nlet greeting = greet(); // greet\n";
        let spots = occurrences(text, "greet", "", None, ".rs");
        assert_eq!(
            spots,
            vec![
                Spot { line: 1, col: 3 },
                Spot { line: 2, col: 15 },
                Spot { line: 0, col: 3 },
                Spot { line: 2, col: 27 },
            ]
        );
        assert_eq!(
            occurrences(text, "greet", "", Some(2), ".rs"),
            vec![Spot { line: 2, col: 15 }, Spot { line: 2, col: 27 }]
        );
        assert!(occurrences(text, "gree", "", None, ".rs").is_empty());
    }

    #[test]
    fn occurrence_columns_count_characters() {
        let text = "s = \"héllo wörld\"; greet(s)\n";
        let spots = occurrences(text, "greet", "", None, ".py");
        assert_eq!(spots, vec![Spot { line: 0, col: 19 }]);
    }

    #[test]
    fn comment_syntax_follows_the_language() {
        let c = "#define GREET 1\n// GREET\nint x = GREET;\n";
        assert_eq!(
            occurrences(c, "GREET", "", None, ".c"),
            vec![
                Spot { line: 0, col: 8 },
                Spot { line: 2, col: 8 },
                Spot { line: 1, col: 3 },
            ]
        );
        let py = "# greet here\ndef greet(): pass  # greet\n";
        assert_eq!(
            occurrences(py, "greet", "", None, ".py"),
            vec![
                Spot { line: 1, col: 4 },
                Spot { line: 0, col: 2 },
                Spot { line: 1, col: 21 },
            ]
        );
    }

    #[test]
    fn modules_receivers_and_strings_come_after_plain_code() {
        let c = "#include \"greet.h\"\nint main(void) { return greet(2); }\n";
        assert_eq!(
            occurrences(c, "greet", "", None, ".c"),
            vec![Spot { line: 1, col: 24 }, Spot { line: 0, col: 10 }]
        );
        let py = "from greet import greet\nimport greet\nprint(greet.greet('greet'))\n";
        assert_eq!(
            occurrences(py, "greet", "", None, ".py"),
            vec![
                Spot { line: 0, col: 18 },
                Spot { line: 2, col: 12 },
                Spot { line: 0, col: 5 },
                Spot { line: 1, col: 7 },
                Spot { line: 2, col: 6 },
                Spot { line: 2, col: 19 },
            ]
        );
    }

    #[test]
    fn the_models_qualifier_is_tried_first() {
        assert_eq!(qualifier("greet::greet()", "greet"), "greet::");
        assert_eq!(qualifier("`person.Greet`", "Greet"), "person.");
        assert_eq!(qualifier("Greet", "Greet"), "");
        assert_eq!(qualifier("Greet 1 12 Hello", "Greet"), "");
        let rs = "pub mod greet;\nfn run() { greet::greet(1) }\n";
        assert_eq!(
            occurrences(rs, "greet", "greet::", None, ".rs"),
            vec![
                Spot { line: 1, col: 18 },
                Spot { line: 0, col: 8 },
                Spot { line: 1, col: 11 },
            ]
        );
    }

    #[test]
    fn lines_ignore_the_final_newline() {
        assert_eq!(lines("a\nb\n"), vec!["a", "b"]);
        assert_eq!(lines("a\nb"), vec!["a", "b"]);
        assert!(lines("").is_empty());
        assert_eq!(line_chars("ab\r"), 2);
    }
}
