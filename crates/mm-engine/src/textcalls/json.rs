//! Where a JSON value written into an answer ends, found byte by byte as
//! the text streams in. Only the structure is followed (brackets, strings,
//! escapes): whether the value is valid JSON is decided once it is whole,
//! by `serde_json`.

/// Deeper nesting than this is not a tool call.
const MAX_DEPTH: usize = 64;

/// Follows one JSON object or array from its opening bracket.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extent {
    /// The closing brackets still expected, innermost last.
    open: Vec<u8>,
    in_string: bool,
    escaped: bool,
}

/// What the bytes fed so far say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The value goes on.
    More,
    /// The value closed after this many of the bytes just fed.
    Closed(usize),
    /// The first byte of this many (counting from the start of the bytes
    /// just fed) cannot be part of the value.
    Broken(usize),
}

impl Extent {
    /// Feed the next bytes; the first byte ever fed must be `{` or `[`.
    pub fn feed(&mut self, bytes: &[u8]) -> Seen {
        let mut i = 0;
        while i < bytes.len() {
            if self.escaped {
                // The byte after a backslash, whatever it is.
                self.escaped = false;
                i += 1;
                continue;
            }
            if self.in_string {
                // Skip to the next quote or backslash at once.
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    None => return Seen::More,
                    Some(at) => i += at,
                }
                if bytes[i] == b'\\' {
                    self.escaped = true;
                } else {
                    self.in_string = false;
                }
                i += 1;
                continue;
            }
            let b = bytes[i];
            if self.open.is_empty() && !matches!(b, b'{' | b'[') {
                return Seen::Broken(i);
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    if self.open.len() >= MAX_DEPTH {
                        return Seen::Broken(i);
                    }
                    self.open.push(if b == b'{' { b'}' } else { b']' });
                }
                b'}' | b']' => {
                    if self.open.pop() != Some(b) {
                        return Seen::Broken(i);
                    }
                    if self.open.is_empty() {
                        return Seen::Closed(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Seen::More
    }
}

/// The first key of the object whose text (after its `{`) begins `after`:
/// `Some(Ok(key))` once the key's closing quote arrived, `Some(Err(()))`
/// when what follows the brace cannot start a key, `None` while undecided.
/// Keys with escapes or longer than `max` bytes are `Err`.
pub(crate) fn first_key(after: &str, max: usize) -> Option<Result<&str, ()>> {
    let rest = after.trim_start();
    let body = match rest.as_bytes().first()? {
        b'"' => &rest[1..],
        _ => return Some(Err(())),
    };
    match body.find(['"', '\\']) {
        Some(end) if body.as_bytes()[end] == b'"' && end <= max => Some(Ok(&body[..end])),
        Some(_) => Some(Err(())),
        None if body.len() > max => Some(Err(())),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> Seen {
        Extent::default().feed(text.as_bytes())
    }

    #[test]
    fn finds_the_end_of_objects_and_arrays() {
        assert_eq!(
            whole(r#"{"a": "}", "b": [1, {"c": "\""}]} tail"#),
            Seen::Closed(33)
        );
        assert_eq!(whole(r#"[{"x": "\\"}]"#), Seen::Closed(13));
        assert_eq!(whole(r#"{"a": "#), Seen::More);
        assert_eq!(whole(r#"{"a": ]"#), Seen::Broken(6));
        assert_eq!(whole("x"), Seen::Broken(0));
        assert_eq!(whole(&"[".repeat(65)), Seen::Broken(64));
    }

    #[test]
    fn the_end_is_the_same_however_the_bytes_are_cut() {
        let text = r#"{"name": "bash", "arguments": {"command": "echo \"}\" \\"}}rest"#;
        let end = text.find("rest").unwrap();
        assert_eq!(whole(text), Seen::Closed(end));
        for cut in 0..text.len() {
            let mut e = Extent::default();
            let (a, b) = text.as_bytes().split_at(cut);
            let got = match e.feed(a) {
                Seen::Closed(n) => n,
                Seen::More => match e.feed(b) {
                    Seen::Closed(n) => cut + n,
                    other => panic!("{other:?} at {cut}"),
                },
                other => panic!("{other:?} at {cut}"),
            };
            assert_eq!(got, end, "cut {cut}");
        }
    }

    #[test]
    fn first_keys() {
        assert_eq!(first_key(r#" "name": 1"#, 16), Some(Ok("name")));
        assert_eq!(first_key(r#""na"#, 16), None);
        assert_eq!(first_key("  ", 16), None);
        assert_eq!(first_key("}", 16), Some(Err(())));
        assert_eq!(first_key(r#""a\"b""#, 16), Some(Err(())));
        assert_eq!(first_key(r#""abcdefghijklmnopq"#, 16), Some(Err(())));
    }
}
