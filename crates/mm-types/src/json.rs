//! JSON text with a chosen key order, written by hand rather than trusting
//! `Value`'s map order: serde_json's `preserve_order` feature, if any crate
//! of the build enables it, keeps insertion order instead of sorting.

use serde_json::{Map, Value};

/// How the keys of every object are ordered in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// Sorted at every level: equal values give equal text (the loop
    /// detector compares calls by it).
    Sorted,
    /// `name` first, the rest as the map holds them: a grammar built from a
    /// schema writes properties in this order, and a small model must
    /// start a call with its name.
    NameFirst,
}

/// `value` as compact JSON text, each object's keys in `order`.
pub fn to_text(value: &Value, order: KeyOrder) -> String {
    let mut out = String::new();
    write(value, order, &mut out);
    out
}

fn entries(map: &Map<String, Value>, order: KeyOrder) -> Vec<(&String, &Value)> {
    match order {
        KeyOrder::Sorted => {
            let mut all: Vec<_> = map.iter().collect();
            all.sort_by(|a, b| a.0.cmp(b.0));
            all
        }
        KeyOrder::NameFirst => {
            let named = map.get_key_value("name");
            let rest = map.iter().filter(|(k, _)| k.as_str() != "name");
            named.into_iter().chain(rest).collect()
        }
    }
}

fn write(value: &Value, order: KeyOrder, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (key, val)) in entries(map, order).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write(val, order, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, order, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorted_orders_every_level() {
        let v = json!({"b": [{"z": 1, "a": null}], "a": "x\"y"});
        assert_eq!(
            to_text(&v, KeyOrder::Sorted),
            r#"{"a":"x\"y","b":[{"a":null,"z":1}]}"#
        );
    }

    #[test]
    fn name_first_puts_name_before_the_rest() {
        let mut inner = Map::new();
        inner.insert("arguments".into(), json!({}));
        inner.insert("name".into(), json!("bash"));
        let v = json!({"items": [Value::Object(inner)]});
        assert_eq!(
            to_text(&v, KeyOrder::NameFirst),
            r#"{"items":[{"name":"bash","arguments":{}}]}"#
        );
    }
}
