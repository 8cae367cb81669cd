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
    pub origin: Origin,
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
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let dict = parse_yaml(path, &text)?;
        Ok(Some(Layer { origin, dict }))
    }
}

/// The top-level mapping of a YAML text; an empty file (or only comments)
/// sets nothing.
pub fn parse_yaml(path: &Path, text: &str) -> Result<Dict, ConfigError> {
    let doc: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| syntax_error(path, &e))?;
    match to_figment(doc) {
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

/// serde_norway's tree as figment's. Keys that are not strings (`1:`,
/// `true:`) become their text, so they are reported as unknown keys.
fn to_figment(v: serde_norway::Value) -> Value {
    use serde_norway::Value as Y;
    match v {
        Y::Null => Value::from(Empty::None),
        Y::Bool(b) => Value::from(b),
        Y::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(Num::U64(u))
            } else if let Some(i) = n.as_i64() {
                Value::from(Num::I64(i))
            } else {
                Value::from(Num::F64(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        Y::String(s) => Value::from(s),
        Y::Sequence(items) => Value::from(items.into_iter().map(to_figment).collect::<Vec<_>>()),
        Y::Mapping(map) => {
            let dict: Dict = map
                .into_iter()
                .map(|(k, v)| (key_text(k), to_figment(v)))
                .collect();
            Value::from(dict)
        }
        Y::Tagged(tagged) => to_figment(tagged.value),
    }
}

fn key_text(k: serde_norway::Value) -> String {
    use serde_norway::Value as Y;
    match k {
        Y::String(s) => s,
        Y::Bool(b) => b.to_string(),
        Y::Number(n) => n.to_string(),
        Y::Null => "null".to_owned(),
        other => serde_norway::to_string(&other)
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_else(|_| "?".to_owned()),
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
        parse_yaml(Path::new("/p/c.yaml"), text)
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
