//! Keeps key values out of session files
//! (docs/design.md#keys-stay-out-of-tools): every string of the data is
//! searched, whatever message shape the engine adds later.

use serde_json::Value;

/// The text a key value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Replace every occurrence of each secret in every string value of `v`.
/// Longer secrets go first so that one containing another is removed whole.
/// Returns whether anything changed.
pub(crate) fn redact_value(v: &mut Value, secrets: &[String]) -> bool {
    match v {
        Value::String(s) => redact_str(s, secrets),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| redact_value(item, secrets) | changed),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |changed, item| redact_value(item, secrets) | changed),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fn redact_str(s: &mut String, secrets: &[String]) -> bool {
    let mut changed = false;
    for secret in secrets {
        if s.contains(secret.as_str()) {
            *s = s.replace(secret.as_str(), REDACTED);
            changed = true;
        }
    }
    changed
}

/// The secrets worth searching for: non-empty, longest first, no repeats.
pub(crate) fn prepare(secrets: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = secrets.into_iter().filter(|s| !s.is_empty()).collect();
    v.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_string_is_searched_and_longest_first() {
        let secrets = prepare(["sk-1".to_string(), String::new(), "sk-12345".to_string()]);
        assert_eq!(secrets, vec!["sk-12345".to_string(), "sk-1".to_string()]);
        let mut v = json!({"a": ["x sk-12345 y", {"b": "sk-1sk-1"}], "n": 3, "k": "clean"});
        assert!(redact_value(&mut v, &secrets));
        assert_eq!(
            v,
            json!({"a": ["x [redacted] y", {"b": "[redacted][redacted]"}], "n": 3, "k": "clean"})
        );
        assert!(!redact_value(&mut v, &secrets));
    }
}
