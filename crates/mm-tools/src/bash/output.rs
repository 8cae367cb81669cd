//! Turning a command's byte stream into text: lossy UTF-8 decoding across
//! chunk boundaries, as `String::from_utf8_lossy` decodes the whole.

/// Decodes a byte stream as UTF-8 the way `String::from_utf8_lossy` decodes
/// the whole of it: a character split between two reads is joined again, and
/// each maximal invalid sequence becomes one U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct LossyDecoder {
    /// The start of a character whose other bytes have not arrived (≤ 3 bytes).
    pending: Vec<u8>,
}

impl LossyDecoder {
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut String) {
        let joined;
        let data: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            self.pending.extend_from_slice(bytes);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        let mut chunks = data.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            out.push_str(chunk.valid());
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            let at_end = chunks.peek().is_none();
            let incomplete =
                matches!(std::str::from_utf8(invalid), Err(e) if e.error_len().is_none());
            if at_end && incomplete {
                self.pending = invalid.to_vec();
            } else {
                out.push(char::REPLACEMENT_CHARACTER);
            }
        }
    }

    /// The stream ended: an unfinished character is one U+FFFD.
    pub(crate) fn finish(&mut self, out: &mut String) {
        if !self.pending.is_empty() {
            self.pending.clear();
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
}

/// Decodes `chunks` as one stream.
#[cfg(test)]
fn decode_all(chunks: &[&[u8]]) -> String {
    let mut d = LossyDecoder::default();
    let mut out = String::new();
    for c in chunks {
        d.push(c, &mut out);
    }
    d.finish(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoder_joins_split_characters_and_matches_lossy() {
        let text = "aé€😀b".as_bytes();
        for cut in 0..=text.len() {
            assert_eq!(
                decode_all(&[&text[..cut], &text[cut..]]),
                "aé€😀b",
                "cut at {cut}"
            );
        }
        let bad: &[u8] = b"x\xff\xfey\xe2\x82z\xf0\x9f";
        let lossy = String::from_utf8_lossy(bad).into_owned();
        for cut in 0..=bad.len() {
            assert_eq!(
                decode_all(&[&bad[..cut], &bad[cut..]]),
                lossy,
                "cut at {cut}"
            );
        }
        // Byte by byte.
        let singles: Vec<&[u8]> = bad.chunks(1).collect();
        assert_eq!(decode_all(&singles), lossy);
    }
}
