//! Argument values as small models send them: numbers as strings (`"12"`),
//! booleans as strings (`"true"`), `null` for "not given". One place, so
//! that every tool accepts the same forms (`read_file`, `edit_file`, `lsp`).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A non-negative whole number from `v`: a JSON number (a fraction is cut,
/// a negative number means "not given", 0), a string holding one (blank
/// is 0), or `null` (0). `None` for anything else.
pub(crate) fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Null => Some(0),
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .or_else(|| n.as_i64().map(|_| 0))
            .or_else(|| n.as_f64().map(|_| 0)),
        Value::String(s) if s.trim().is_empty() => Some(0),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<u64>().ok().or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .map(|f| if f < 0.0 { 0 } else { f as u64 })
            })
        }
        _ => None,
    }
}

/// A boolean from `v`: `true`/`false`, the strings `"true"`/`"false"` (any
/// case, spaces around), or `null` (false). `None` for anything else.
pub(crate) fn boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Null => Some(false),
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" | "" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A [`number`] for a `deserialize_with`, capped at `u32::MAX`; `what`
/// names the value in the error (`a line number`).
pub(crate) fn u32_field<'de, D: Deserializer<'de>>(d: D, what: &str) -> Result<u32, D::Error> {
    let v = Value::deserialize(d)?;
    number(&v)
        .map(|n| n.min(u64::from(u32::MAX)) as u32)
        .ok_or_else(|| serde::de::Error::custom(format!("expected {what}, got {v}")))
}

/// A [`number`] for a `deserialize_with`; `what` names the value in the
/// error.
pub(crate) fn u64_field<'de, D: Deserializer<'de>>(d: D, what: &str) -> Result<u64, D::Error> {
    let v = Value::deserialize(d)?;
    number(&v).ok_or_else(|| serde::de::Error::custom(format!("expected {what}, got {v}")))
}

/// A [`boolean`] for `#[serde(default, deserialize_with = "lenient::bool_field")]`.
pub(crate) fn bool_field<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = Value::deserialize(d)?;
    boolean(&v).ok_or_else(|| serde::de::Error::custom(format!("expected true or false, got {v}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_in_every_form_a_model_sends() {
        for (v, n) in [
            (json!(3), Some(3)),
            (json!("3"), Some(3)),
            (json!(" 12 "), Some(12)),
            (json!(2.7), Some(2)),
            (json!("2.0"), Some(2)),
            (json!(-4), Some(0)),
            (json!("-4"), Some(0)),
            (json!(null), Some(0)),
            (json!(""), Some(0)),
            (json!("three"), None),
            (json!(true), None),
            (json!([1]), None),
        ] {
            assert_eq!(number(&v), n, "{v}");
        }
    }

    #[test]
    fn booleans_in_every_form_a_model_sends() {
        for (v, b) in [
            (json!(true), Some(true)),
            (json!(false), Some(false)),
            (json!("true"), Some(true)),
            (json!(" False "), Some(false)),
            (json!("TRUE"), Some(true)),
            (json!(null), Some(false)),
            (json!("yes"), None),
            (json!(1), None),
        ] {
            assert_eq!(boolean(&v), b, "{v}");
        }
    }
}
