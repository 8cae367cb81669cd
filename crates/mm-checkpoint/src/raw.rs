//! Parsing git's NUL-separated outputs (`-z`): names may hold spaces,
//! newlines and bytes that are not UTF-8.

use crate::error::CheckpointError;

/// Mode of a submodule (a gitlink): never restored.
pub(crate) const GITLINK: u32 = 0o160000;

/// One side of a changed entry: its mode and object id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Side {
    pub mode: u32,
    pub id: String,
}

/// One entry of `git diff-tree -r -z --no-renames`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChange {
    /// Relative to the top of the tree, as git wrote it.
    pub path: Vec<u8>,
    /// The entry in the first tree; `None` when it was added.
    pub from: Option<Side>,
    /// The entry in the second tree; `None` when it was deleted.
    pub to: Option<Side>,
}

impl RawChange {
    /// A submodule on either side: left alone.
    pub fn is_gitlink(&self) -> bool {
        [&self.from, &self.to]
            .iter()
            .any(|s| s.as_ref().is_some_and(|s| s.mode == GITLINK))
    }
}

/// The NUL-terminated names of `git ls-files -z` and the like.
pub(crate) fn names(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|b| *b == 0).filter(|n| !n.is_empty())
}

/// `:<mode> <mode> <id> <id> <status>\0<path>\0` records.
pub(crate) fn diff_tree(out: &[u8]) -> Result<Vec<RawChange>, CheckpointError> {
    let bad = |what: &[u8]| CheckpointError::Git {
        command: "git diff-tree".into(),
        message: format!(
            "unexpected output: {:?}",
            String::from_utf8_lossy(&what[..what.len().min(120)])
        ),
    };
    let mut fields = out.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let Some(header) = fields.next() {
        if header.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(header).map_err(|_| bad(header))?;
        let mut parts = text
            .strip_prefix(':')
            .ok_or_else(|| bad(header))?
            .split(' ');
        let (Some(m1), Some(m2), Some(id1), Some(id2), Some(_status)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(bad(header));
        };
        let path = fields
            .next()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| bad(header))?;
        let side = |mode: &str, id: &str| -> Result<Option<Side>, CheckpointError> {
            let mode = u32::from_str_radix(mode, 8).map_err(|_| bad(header))?;
            Ok((mode != 0).then(|| Side {
                mode,
                id: id.to_string(),
            }))
        };
        changes.push(RawChange {
            path: path.to_vec(),
            from: side(m1, id1)?,
            to: side(m2, id2)?,
        });
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_with_odd_names_parse() {
        let z = "0000000000000000000000000000000000000000";
        let a = "78981922613b2afb6025042ff6bd878ac1994e85";
        let out = format!(
            ":100644 000000 {a} {z} D\0line\nbreak\0:000000 120000 {z} {a} A\0sp ace\0:160000 160000 {a} {a} M\0sub\0"
        );
        let got = diff_tree(out.as_bytes()).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].path, b"line\nbreak");
        assert_eq!(got[0].to, None);
        assert_eq!(got[0].from.as_ref().unwrap().mode, 0o100644);
        assert_eq!(got[1].path, b"sp ace");
        assert_eq!(got[1].from, None);
        assert_eq!(got[1].to.as_ref().unwrap().mode, 0o120000);
        assert!(got[2].is_gitlink() && !got[0].is_gitlink());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(diff_tree(b":100644 x\0").is_err());
        assert!(diff_tree(b"nonsense\0path\0").is_err());
        assert!(diff_tree(b":100644 100644 a b M\0").is_err());
        assert_eq!(diff_tree(b"").unwrap(), vec![]);
    }
}
