//! Whether recovered arguments fit a tool's JSON Schema, and the typing of
//! parameter values that arrive as bare text (the Qwen3-Coder XML form).
//!
//! This is a plausibility check, not a validator: it follows `type`,
//! `required`, `properties`, `additionalProperties`, `enum`, `items` and
//! `anyOf`/`oneOf`/`allOf`, and lets every other keyword pass. The tool
//! checks its arguments itself and answers mistakes as text; what matters
//! here is that text which merely looks like a call stays text. Numbers
//! and booleans written as strings (`"10"`, `"true"`) fit, because the
//! tools accept them.

use serde_json::Value;

/// Schemas nested deeper than this are not followed further.
const MAX_DEPTH: usize = 32;

/// Whether `value` fits `schema`.
pub(crate) fn accepts(schema: &Value, value: &Value) -> bool {
    fits(schema, value, 0)
}

fn fits(schema: &Value, value: &Value, depth: usize) -> bool {
    let Value::Object(s) = schema else {
        // `true`, `{}` or something we do not read: anything goes.
        return schema != &Value::Bool(false);
    };
    if depth > MAX_DEPTH {
        return true;
    }
    if let Some(types) = s.get("type")
        && !type_fits(types, value)
    {
        return false;
    }
    if let Some(Value::Array(choices)) = s.get("enum")
        && !choices
            .iter()
            .any(|c| c == value || loosely_equal(c, value))
    {
        return false;
    }
    for (key, all) in [("anyOf", false), ("oneOf", false), ("allOf", true)] {
        if let Some(Value::Array(subs)) = s.get(key) {
            let mut each = subs.iter().map(|sub| fits(sub, value, depth + 1));
            let ok = if all {
                each.all(|b| b)
            } else {
                each.any(|b| b)
            };
            if !ok {
                return false;
            }
        }
    }
    match value {
        Value::Object(fields) => {
            if let Some(Value::Array(required)) = s.get("required")
                && required
                    .iter()
                    .any(|r| r.as_str().is_some_and(|r| !fields.contains_key(r)))
            {
                return false;
            }
            let props = s.get("properties").and_then(Value::as_object);
            let extra = s.get("additionalProperties");
            fields
                .iter()
                .all(|(k, v)| match props.and_then(|p| p.get(k)) {
                    Some(sub) => fits(sub, v, depth + 1),
                    None => match extra {
                        Some(Value::Bool(false)) => false,
                        Some(sub @ Value::Object(_)) => fits(sub, v, depth + 1),
                        _ => true,
                    },
                })
        }
        Value::Array(items) => match s.get("items") {
            Some(sub @ Value::Object(_)) => items.iter().all(|v| fits(sub, v, depth + 1)),
            _ => true,
        },
        _ => true,
    }
}

fn type_fits(types: &Value, value: &Value) -> bool {
    match types {
        Value::String(t) => one_type_fits(t, value),
        Value::Array(ts) => ts
            .iter()
            .any(|t| t.as_str().is_some_and(|t| one_type_fits(t, value))),
        _ => true,
    }
}

fn one_type_fits(t: &str, value: &Value) -> bool {
    match (t, value) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_))
        | ("boolean", Value::Bool(_))
        | ("null", Value::Null) => true,
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("number", Value::String(s)) => s.trim().parse::<f64>().is_ok_and(f64::is_finite),
        ("integer", Value::String(s)) => s.trim().parse::<i64>().is_ok(),
        ("boolean", Value::String(s)) => {
            matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "false")
        }
        // A type we do not know: let it pass.
        (other, _) => !matches!(
            other,
            "object" | "array" | "string" | "boolean" | "null" | "number" | "integer"
        ),
    }
}

/// `"10"` and `10` are the same choice of an `enum`.
fn loosely_equal(choice: &Value, value: &Value) -> bool {
    match (choice, value) {
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.trim() == n.to_string()
        }
        (Value::Bool(b), Value::String(s)) | (Value::String(s), Value::Bool(b)) => s
            .trim()
            .eq_ignore_ascii_case(if *b { "true" } else { "false" }),
        _ => false,
    }
}

/// A parameter value written as bare text, typed by the parameter's schema
/// the way the Qwen3-Coder template writes it: strings verbatim, numbers
/// and booleans as their text, objects and arrays as JSON. Text that does
/// not read as the declared type stays a string (and then fails
/// [`accepts`]).
pub(crate) fn typed(schema: Option<&Value>, raw: &str) -> Value {
    let types: Vec<&str> = match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"string") {
        return Value::String(raw.to_owned());
    }
    let text = raw.trim();
    for t in types {
        let parsed = match t {
            "integer" => text.parse::<i64>().ok().map(Value::from),
            "number" => text.parse::<i64>().ok().map(Value::from).or_else(|| {
                text.parse::<f64>()
                    .ok()
                    .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            }),
            "boolean" => match text.to_ascii_lowercase().as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "null" => (text == "null").then_some(Value::Null),
            "object" | "array" => serde_json::from_str::<Value>(text)
                .ok()
                .filter(|v| v.is_object() == (t == "object") && v.is_array() == (t == "array")),
            _ => None,
        };
        if let Some(v) = parsed {
            return v;
        }
    }
    Value::String(raw.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_file_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start": {"type": "integer", "minimum": 0},
                "numbered": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["a", "b"]}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    #[test]
    fn required_types_and_extra_keys() {
        let s = read_file_schema();
        assert!(accepts(&s, &json!({"path": "a"})));
        assert!(accepts(
            &s,
            &json!({"path": "a", "start": 3, "numbered": true})
        ));
        // Written as strings, the way small models do: the tools take them.
        assert!(accepts(
            &s,
            &json!({"path": "a", "start": "3", "numbered": "true"})
        ));
        assert!(!accepts(&s, &json!({"start": 3})));
        assert!(!accepts(&s, &json!({"path": 3})));
        assert!(!accepts(&s, &json!({"path": "a", "start": "three"})));
        assert!(!accepts(&s, &json!({"path": "a", "other": 1})));
        assert!(!accepts(&s, &json!({"path": "a", "mode": "c"})));
        assert!(!accepts(&s, &json!(["path"])));
        assert!(accepts(&s, &json!({"path": "a", "mode": "b"})));
    }

    #[test]
    fn nested_items_and_combinators() {
        let s = json!({
            "type": "object",
            "properties": {
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
                    "required": ["old", "new"]
                }},
                "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}
            }
        });
        assert!(accepts(&s, &json!({"edits": [{"old": "a", "new": "b"}]})));
        assert!(!accepts(&s, &json!({"edits": [{"old": "a"}]})));
        assert!(accepts(&s, &json!({"n": null})));
        assert!(!accepts(&s, &json!({"n": [1]})));
        // Unknown keywords and schemas pass.
        assert!(accepts(&json!({"type": "mystery"}), &json!(1)));
        assert!(accepts(&json!(true), &json!(1)));
        assert!(!accepts(&json!(false), &json!(1)));
    }

    #[test]
    fn bare_text_values_take_the_declared_type() {
        let int = json!({"type": "integer"});
        let num = json!({"type": "number"});
        let boolean = json!({"type": "boolean"});
        let obj = json!({"type": "array"});
        let text = json!({"type": "string"});
        assert_eq!(typed(Some(&int), " 12 "), json!(12));
        assert_eq!(typed(Some(&num), "1.5"), json!(1.5));
        assert_eq!(typed(Some(&num), "2"), json!(2));
        assert_eq!(typed(Some(&boolean), "True"), json!(true));
        assert_eq!(typed(Some(&obj), "[1, 2]"), json!([1, 2]));
        assert_eq!(typed(Some(&text), " 12 "), json!(" 12 "));
        assert_eq!(typed(Some(&int), "twelve"), json!("twelve"));
        assert_eq!(typed(None, "12"), json!("12"));
        let either = json!({"type": ["integer", "null"]});
        assert_eq!(typed(Some(&either), "null"), Value::Null);
    }
}
