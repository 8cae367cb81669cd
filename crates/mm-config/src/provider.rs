//! Our figment provider: one layer of settings (defaults, a YAML file, one
//! environment variable, one flag) with its origin as figment metadata.
//!
//! YAML is parsed with `serde_norway`, not with figment's `yaml` feature:
//! that feature pulls the deprecated, unmaintained `serde_yaml`. Files are
//! parsed when the layer is made, so syntax errors come back as our own
//! errors with line and column, before figment sees anything.

use std::path::{Path, PathBuf};

use figment::value::{Dict, Empty, Map, Num, Value};
use figment::{Metadata, Profile, Provider, Source};

use crate::error::ConfigError;
use crate::load::Origin;

/// One source of settings, ready to merge.
#[derive(Debug, Clone)]
pub struct Layer {
    /// Where the layer's values come from (figment's metadata names it).
    pub origin: Origin,
    /// The layer's keys and values, short forms already expanded.
    pub dict: Dict,
}

impl Layer {
    /// A layer of already typed values (defaults, a variable, a flag).
    pub fn values(origin: Origin, value: impl serde::Serialize) -> Result<Layer, ConfigError> {
        match Value::serialize(value) {
            Ok(Value::Dict(_, dict)) => Ok(Layer { origin, dict }),
            Ok(_) => Err(ConfigError::Other(format!("{origin}: not a mapping"))),
            Err(e) => Err(ConfigError::Other(format!("{origin}: {e}"))),
        }
    }

    /// A single key (`model`) set to one value.
    pub fn single(origin: Origin, key: &str, value: impl Into<Value>) -> Layer {
        let mut dict = Dict::new();
        dict.insert(key.to_owned(), value.into());
        Layer { origin, dict }
    }

    /// Reads the YAML file `path`. `Ok(None)` when it does not exist and
    /// `required` is false (the user and project files are optional; a
    /// file named by `MM_CONFIG` or `--config` is not).
    pub fn yaml_file(
        origin: Origin,
        path: &Path,
        required: bool,
    ) -> Result<Option<Layer>, ConfigError> {
        let text = match read_bounded(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let dict = parse_yaml(&origin, path, &text)?;
        Ok(Some(Layer { origin, dict }))
    }
}

/// The most a settings file may hold: far more than any real one, and
/// small enough that a hostile file cannot exhaust memory.
pub const MAX_SETTINGS_FILE: u64 = 1024 * 1024;

/// The text of a settings file, read only when it is a regular file (a
/// FIFO would hang start-up, a device could stream forever) of at most
/// [`MAX_SETTINGS_FILE`] bytes. The open does not block, so a FIFO is
/// refused rather than waited on.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a folder")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    };
    if let Some(what) = what {
        return Err(std::io::Error::other(format!(
            "it is {what}, not a regular file"
        )));
    }
    let too_large = || {
        std::io::Error::other(format!(
            "it is larger than {} KiB, the most a settings file may hold",
            MAX_SETTINGS_FILE / 1024
        ))
    };
    if meta.len() > MAX_SETTINGS_FILE {
        return Err(too_large());
    }
    let mut text = String::new();
    file.take(MAX_SETTINGS_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_SETTINGS_FILE {
        return Err(too_large());
    }
    Ok(text)
}

/// The top-level mapping of a YAML text; an empty file (or only comments)
/// sets nothing. `origin` names the file in a value error (an integer too
/// large for any setting).
pub fn parse_yaml(origin: &Origin, path: &Path, text: &str) -> Result<Dict, ConfigError> {
    let doc: Yaml = serde_norway::from_str(text).map_err(|e| syntax_error(path, &e))?;
    let mut at = Vec::new();
    let value = to_figment(doc, &mut at).map_err(|(key, digits)| ConfigError::BadValue {
        at: origin.clone(),
        problem: crate::ranges::too_large(&key, &digits),
        key,
    })?;
    match value {
        Value::Dict(_, mut dict) => {
            crate::settings::expand_shorthands(&mut dict);
            Ok(dict)
        }
        Value::Empty(..) => Ok(Dict::new()),
        other => Err(ConfigError::NotAMapping {
            path: path.to_path_buf(),
            found: match other {
                Value::Array(..) => "a list".to_owned(),
                Value::String(_, s) => format!("a string {s:?}"),
                _ => "a single value".to_owned(),
            },
        }),
    }
}

fn syntax_error(path: &Path, e: &serde_norway::Error) -> ConfigError {
    let location = e.location();
    let mut message = e.to_string();
    // serde_norway appends " at line L column C"; we say it once, our way.
    if let Some(loc) = &location {
        let suffix = format!(" at line {} column {}", loc.line(), loc.column());
        if let Some(pos) = message.find(&suffix) {
            message.replace_range(pos..pos + suffix.len(), "");
        }
    }
    ConfigError::Syntax {
        path: path.to_path_buf(),
        line: location.as_ref().map(|l| l.line()),
        column: location.as_ref().map(|l| l.column()),
        message,
    }
}

/// A YAML document as read, before figment sees it. Unlike
/// `serde_norway::Value` it takes integers past 64 bits, so that a value
/// too large for its setting is a value error naming the key, not a
/// syntax error.
#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    /// An integer beyond 64 bits, as written.
    Big(String),
    Str(String),
    Seq(Vec<Yaml>),
    Map(Vec<(Yaml, Yaml)>),
}

impl<'de> serde::Deserialize<'de> for Yaml {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Yaml, D::Error> {
        d.deserialize_any(YamlVisitor)
    }
}

struct YamlVisitor;

impl<'de> serde::de::Visitor<'de> for YamlVisitor {
    type Value = Yaml;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Yaml, E> {
        Ok(Yaml::I64(i))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Yaml, E> {
        Ok(Yaml::U64(u))
    }
    fn visit_i128<E>(self, i: i128) -> Result<Yaml, E> {
        Ok(i64::try_from(i).map_or_else(|_| Yaml::Big(i.to_string()), Yaml::I64))
    }
    fn visit_u128<E>(self, u: u128) -> Result<Yaml, E> {
        Ok(u64::try_from(u).map_or_else(|_| Yaml::Big(u.to_string()), Yaml::U64))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Yaml, E> {
        Ok(Yaml::F64(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<Yaml, E> {
        Ok(Yaml::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Yaml, E> {
        Ok(Yaml::Str(s))
    }
    fn visit_unit<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_none<E>(self) -> Result<Yaml, E> {
        Ok(Yaml::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Yaml::Seq(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
        let mut entries: Vec<(Yaml, Yaml)> = Vec::new();
        while let Some((key, value)) = map.next_entry()? {
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(serde::de::Error::custom(duplicate(&key)));
            }
            entries.push((key, value));
        }
        Ok(Yaml::Map(entries))
    }
    /// A tagged value (`!tag x`): the tag is dropped, the value kept.
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<Yaml, A::Error> {
        use serde::de::VariantAccess as _;
        let (_tag, contents): (String, _) = data.variant()?;
        contents.newtype_variant()
    }
}

/// The text serde_norway gives a key that appears twice in one mapping.
fn duplicate(key: &Yaml) -> String {
    match key {
        Yaml::Null => "duplicate entry with null key".to_owned(),
        Yaml::Bool(b) => format!("duplicate entry with key `{b}`"),
        Yaml::U64(_) | Yaml::I64(_) | Yaml::F64(_) | Yaml::Big(_) => {
            format!("duplicate entry with key {}", key_text(key.clone()))
        }
        Yaml::Str(s) => format!("duplicate entry with key {s:?}"),
        Yaml::Seq(_) | Yaml::Map(_) => "duplicate entry in YAML map".to_owned(),
    }
}

/// The tree as figment's. Keys that are not strings (`1:`, `true:`)
/// become their text, so they are reported as unknown keys. `Err`: the
/// dotted key of an integer too large, and its digits.
fn to_figment(v: Yaml, at: &mut Vec<String>) -> Result<Value, (String, String)> {
    Ok(match v {
        Yaml::Null => Value::from(Empty::None),
        Yaml::Bool(b) => Value::from(b),
        Yaml::U64(u) => Value::from(Num::U64(u)),
        Yaml::I64(i) => Value::from(Num::I64(i)),
        Yaml::F64(x) => Value::from(Num::F64(x)),
        Yaml::Big(digits) => return Err((crate::error::dotted(at), digits)),
        Yaml::Str(s) => Value::from(s),
        Yaml::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                at.push(i.to_string());
                out.push(to_figment(item, at)?);
                at.pop();
            }
            Value::from(out)
        }
        Yaml::Map(entries) => {
            let mut dict = Dict::new();
            for (k, v) in entries {
                let key = key_text(k);
                at.push(key.clone());
                let value = to_figment(v, at)?;
                at.pop();
                dict.insert(key, value);
            }
            Value::from(dict)
        }
    })
}

fn key_text(k: Yaml) -> String {
    match k {
        Yaml::Str(s) => s,
        Yaml::Bool(b) => b.to_string(),
        Yaml::U64(n) => n.to_string(),
        Yaml::I64(n) => n.to_string(),
        Yaml::F64(x) => x.to_string(),
        Yaml::Big(digits) => digits,
        Yaml::Null => "null".to_owned(),
        Yaml::Seq(_) => "[…]".to_owned(),
        Yaml::Map(_) => "{…}".to_owned(),
    }
}

impl Provider for Layer {
    fn metadata(&self) -> Metadata {
        // The name is the origin's text: `load` maps it back to the origin.
        let meta = Metadata::named(self.origin.to_string());
        match self.origin.file() {
            Some(path) => meta.source(Source::File(PathBuf::from(path))),
            None => meta,
        }
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut map = Map::new();
        map.insert(Profile::Default, self.dict.clone());
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Dict, ConfigError> {
        let path = Path::new("/p/c.yaml");
        parse_yaml(&Origin::UserFile(path.to_path_buf()), path, text)
    }

    #[test]
    fn integers_past_64_bits_are_value_errors_naming_the_key() {
        let e = parse("watchdog: 18446744073709551616\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/p/c.yaml: watchdog: expected at most 86400, found 18446744073709551616"
        );
        let e = parse("compact:\n  keepRecent: -99999999999999999999\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/p/c.yaml: compact.keepRecent: expected at most 100000000, found -99999999999999999999"
        );
        let e = parse("lsp:\n  servers: [99999999999999999999]\n").unwrap_err();
        assert!(e.to_string().contains("lsp.servers[0]"), "{e}");
        // Tags are read through, as before.
        let d = parse("a: !x 5\n").unwrap();
        assert_eq!(d["a"], Value::from(Num::U64(5)));
    }

    #[test]
    fn empty_and_comment_only_files_set_nothing() {
        assert!(parse("").unwrap().is_empty());
        assert!(parse("# nothing\n").unwrap().is_empty());
    }

    #[test]
    fn values_keep_their_types() {
        let d = parse("a: 1\nb: -2\nc: 0.5\nd: true\ne: hi\nf: [x]\ng: {h: ~}\n1: k\n").unwrap();
        assert_eq!(d["a"], Value::from(Num::U64(1)));
        assert_eq!(d["b"], Value::from(Num::I64(-2)));
        assert_eq!(d["c"], Value::from(Num::F64(0.5)));
        assert_eq!(d["d"], Value::from(true));
        assert_eq!(d["e"], Value::from("hi"));
        assert_eq!(d["f"], Value::from(vec![Value::from("x")]));
        assert_eq!(d["g"].find_ref("h"), Some(&Value::from(Empty::None)));
        assert_eq!(d["1"], Value::from("k"));
    }

    #[test]
    fn top_level_must_be_a_mapping() {
        let e = parse("- a\n- b\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/p/c.yaml: expected a mapping of keys to values, found a list"
        );
        let e = parse("hello\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/p/c.yaml: expected a mapping of keys to values, found a string \"hello\""
        );
    }
}
