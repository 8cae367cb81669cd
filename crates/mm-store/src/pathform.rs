//! How a path is written in a session file: a JSON string when it is
//! UTF-8 (every file written before, and nearly every path), else
//! `{"bytes": "<hex>"}` with the path's raw bytes, so that a project in a
//! folder whose name is not UTF-8 keeps its sessions and `--continue`
//! finds them again.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};

/// Writes `path` as a string, or its bytes in hex when it is not UTF-8.
pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    match path.to_str() {
        Some(text) => s.serialize_str(text),
        None => {
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry("bytes", &hex(path.as_os_str().as_bytes()))?;
            map.end()
        }
    }
}

/// Reads either form [`serialize`] writes.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Text(String),
        Bytes { bytes: String },
    }
    match Form::deserialize(d)? {
        Form::Text(text) => Ok(PathBuf::from(text)),
        Form::Bytes { bytes } => unhex(&bytes)
            .map(|raw| PathBuf::from(OsString::from_vec(raw)))
            .ok_or_else(|| de::Error::custom("a path's bytes are not hexadecimal")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(serde::Serialize, Deserialize, PartialEq, Debug)]
    struct Holder {
        #[serde(with = "super")]
        cwd: PathBuf,
    }

    #[test]
    fn utf8_paths_stay_strings_and_others_round_trip_as_bytes() {
        let plain = Holder {
            cwd: PathBuf::from("/home/ann/project é"),
        };
        let text = serde_json::to_string(&plain).unwrap();
        assert_eq!(text, r#"{"cwd":"/home/ann/project é"}"#);
        assert_eq!(serde_json::from_str::<Holder>(&text).unwrap(), plain);

        let odd = Holder {
            cwd: PathBuf::from(OsString::from_vec(b"/tmp/caf\xe9".to_vec())),
        };
        let text = serde_json::to_string(&odd).unwrap();
        assert_eq!(text, r#"{"cwd":{"bytes":"2f746d702f636166e9"}}"#);
        assert_eq!(serde_json::from_str::<Holder>(&text).unwrap(), odd);
    }

    #[test]
    fn bad_bytes_are_an_error() {
        for bad in [r#"{"cwd":{"bytes":"2f7"}}"#, r#"{"cwd":{"bytes":"zz"}}"#] {
            assert!(serde_json::from_str::<Holder>(bad).is_err(), "{bad}");
        }
    }
}
