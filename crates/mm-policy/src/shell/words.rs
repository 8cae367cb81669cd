//! What bash does to one word before it runs, as far as the line itself
//! tells: brace expansion, ANSI-C quoting, field splitting; and whether a
//! piece of arithmetic is inert.

use brush_parser::ParserOptions;
use brush_parser::word::{self, BraceExpressionMember, BraceExpressionOrText};

/// At most this many words come out of one word's brace expansion; the
/// rest are not read (a reading, not a run).
const MAX_BRACE_WORDS: usize = 64;

/// `s`, an ANSI-C quoted text (`$'...'` without its quotes), decoded as
/// bash decodes it: `$'\x72m'` is `rm`.
pub(crate) fn ansi_c(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let simple = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(decoded) = simple {
            out.push(decoded);
            continue;
        }
        let (radix, max, mut value, mut digits) = match e {
            '0'..='7' => (8, 3, e.to_digit(8).unwrap_or(0), 1),
            'x' => (16, 2, 0, 0),
            'u' => (16, 4, 0, 0),
            'U' => (16, 8, 0, 0),
            'c' => {
                match chars.next() {
                    Some(ctl) => out.push(char::from((ctl as u8) & 0x1f)),
                    None => out.push_str("\\c"),
                }
                continue;
            }
            other => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        while digits < max {
            match chars.peek().and_then(|d| d.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    digits += 1;
                    chars.next();
                }
                None => break,
            }
        }
        if digits == 0 {
            out.push('\\');
            out.push(e);
        } else if radix == 8 || e == 'x' {
            // One byte: as text, the character of that code point.
            out.push(char::from((value & 0xff) as u8));
        } else {
            out.extend(char::from_u32(value));
        }
    }
    out
}

/// The words `raw` becomes by brace expansion (`{rm,-rf,x}` → `rm`,
/// `-rf`, `x`), at most [`MAX_BRACE_WORDS`]; `raw` itself when it has
/// none. Quoted braces stay as they are, as in bash.
pub(crate) fn brace_expand(raw: &str) -> Vec<String> {
    if !raw.contains('{') {
        return vec![raw.to_owned()];
    }
    match word::parse_brace_expansions(raw, &ParserOptions::default()) {
        Ok(Some(pieces))
            if pieces
                .iter()
                .any(|p| matches!(p, BraceExpressionOrText::Expr(_))) =>
        {
            alternatives(&pieces)
        }
        _ => vec![raw.to_owned()],
    }
}

/// Whether `raw` has a brace expansion bash would expand.
pub(crate) fn has_braces(raw: &str) -> bool {
    raw.contains('{') && brace_expand(raw).first().is_none_or(|w| w != raw)
}

fn alternatives(pieces: &[BraceExpressionOrText]) -> Vec<String> {
    let mut acc = vec![String::new()];
    for piece in pieces {
        let alts: Vec<String> = match piece {
            BraceExpressionOrText::Text(t) => vec![t.clone()],
            BraceExpressionOrText::Expr(members) => members
                .iter()
                .flat_map(member)
                .take(MAX_BRACE_WORDS)
                .collect(),
        };
        acc = acc
            .iter()
            .flat_map(|a| alts.iter().map(move |b| format!("{a}{b}")))
            .take(MAX_BRACE_WORDS)
            .collect();
    }
    acc
}

fn member(m: &BraceExpressionMember) -> Vec<String> {
    match m {
        BraceExpressionMember::Child(pieces) => alternatives(pieces),
        BraceExpressionMember::NumberSequence {
            start,
            end,
            increment,
        } => sequence(*start, *end, *increment)
            .map(|n| n.to_string())
            .collect(),
        BraceExpressionMember::CharSequence {
            start,
            end,
            increment,
        } => sequence(
            i64::from(u32::from(*start)),
            i64::from(u32::from(*end)),
            *increment,
        )
        .filter_map(|n| u32::try_from(n).ok().and_then(char::from_u32))
        .map(String::from)
        .collect(),
    }
}

fn sequence(start: i64, end: i64, increment: i64) -> impl Iterator<Item = i64> {
    let step = increment.unsigned_abs().max(1);
    let step = i64::try_from(step).unwrap_or(i64::MAX);
    let up = start <= end;
    let mut next = Some(start);
    std::iter::from_fn(move || {
        let n = next?;
        let beyond = if up { n > end } else { n < end };
        if beyond {
            return None;
        }
        next = if up {
            n.checked_add(step)
        } else {
            n.checked_sub(step)
        };
        Some(n)
    })
    .take(MAX_BRACE_WORDS)
}

/// Whether bash can evaluate `expr` as arithmetic without reading a
/// variable: numbers and operators only. A name (`x`, `a[x]`) makes bash
/// evaluate what the variable holds as arithmetic in turn, and a
/// subscript in it runs command substitutions.
pub(crate) fn inert_arithmetic(expr: &str) -> bool {
    expr.chars()
        .all(|c| c.is_ascii_digit() || c.is_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c))
}

/// Whether unquoted text holds glob characters bash would expand (`*`,
/// `?`, `[...]`, extended globs); `raw` is the whole word, for a `]`.
pub(crate) fn is_glob(text: &str, raw: &str) -> bool {
    text.contains(['*', '?'])
        || (text.contains('[') && raw.contains(']'))
        || ["+(", "@(", "!("].iter().any(|e| text.contains(e))
}

/// The fields one word expands to, built piece by piece: unquoted
/// expansions are split at the characters of `IFS`, quoted ones are not,
/// and an empty quoted word stays a word.
#[derive(Default)]
pub(crate) struct Fields {
    done: Vec<String>,
    current: String,
    started: bool,
}

impl Fields {
    /// Text that joins the current field.
    pub(crate) fn push(&mut self, text: &str) {
        self.current.push_str(text);
        self.started = true;
    }

    /// A quoted part: the field exists even when empty.
    pub(crate) fn quoted(&mut self) {
        self.started = true;
    }

    /// An unquoted expansion's value, split at `ifs`.
    pub(crate) fn split(&mut self, value: &str, ifs: &str) {
        for c in value.chars() {
            if ifs.contains(c) {
                self.end();
            } else {
                self.current.push(c);
                self.started = true;
            }
        }
    }

    fn end(&mut self) {
        if self.started {
            self.done.push(std::mem::take(&mut self.current));
            self.started = false;
        }
    }

    /// The fields.
    pub(crate) fn finish(mut self) -> Vec<String> {
        self.end();
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_quoting_decodes() {
        assert_eq!(ansi_c(r"\x72m"), "rm");
        assert_eq!(ansi_c(r"\162m"), "rm");
        assert_eq!(ansi_c(r"r\u006d"), "rm");
        assert_eq!(ansi_c(r"r\U0000006d"), "rm");
        assert_eq!(ansi_c(r"a\tb\n\'\\"), "a\tb\n'\\");
        assert_eq!(ansi_c(r"\q\x"), r"\q\x");
        assert_eq!(ansi_c(r"\cA"), "\x01");
    }

    #[test]
    fn braces_expand_as_bash_does() {
        assert_eq!(brace_expand("{rm,-rf,x}"), ["rm", "-rf", "x"]);
        assert_eq!(brace_expand("-{r,f}"), ["-r", "-f"]);
        assert_eq!(brace_expand("a{1..3}"), ["a1", "a2", "a3"]);
        assert_eq!(brace_expand("{c..a}"), ["c", "b", "a"]);
        assert_eq!(brace_expand("{a,b{1,2}}"), ["a", "b1", "b2"]);
        assert_eq!(brace_expand("'{a,b}'"), ["'{a,b}'"]);
        assert_eq!(brace_expand("{a}"), ["{a}"]);
        assert_eq!(brace_expand("{1..100000}").len(), MAX_BRACE_WORDS);
        assert_eq!(
            brace_expand("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}").len(),
            MAX_BRACE_WORDS
        );
        assert!(has_braces("{link,}") && !has_braces("${x}") && !has_braces("{}"));
    }

    #[test]
    fn arithmetic_without_names_is_inert() {
        assert!(inert_arithmetic("1 + 2*(3 << 1)"));
        assert!(inert_arithmetic("-1"));
        assert!(!inert_arithmetic("x"));
        assert!(!inert_arithmetic("$x + 1"));
        assert!(!inert_arithmetic("a[0]"));
    }

    #[test]
    fn fields_split_unquoted_values() {
        let mut f = Fields::default();
        f.push("rm");
        f.split(" \t", " \t\n");
        f.push("-rf");
        assert_eq!(f.finish(), ["rm", "-rf"]);
        let mut f = Fields::default();
        f.quoted();
        assert_eq!(f.finish(), [""]);
        assert!(Fields::default().finish().is_empty());
    }
}
