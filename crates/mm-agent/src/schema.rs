//! `--output-schema`: the JSON Schema a script's final answer must fit.
//! The question asks for it; mm checks the answer (the `jsonschema`
//! crate, every draft); an answer that does not fit is asked for once
//! more with the reason ([`crate::Agent::answer_in_schema`]), then as the
//! provider's structured output.

use std::path::Path;

use serde_json::Value;

/// How many of a bad answer's problems the model is told (the first ones).
const PROBLEMS_TOLD: usize = 5;

/// A JSON Schema, checked to be one, with its validator.
pub struct OutputSchema {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// The schema in the file at `path`; the error names the file and
    /// what is wrong (not JSON, not a schema).
    pub fn read(path: &Path) -> Result<OutputSchema, String> {
        let name = path.display();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("--output-schema {name}: {e}"))?;
        let schema: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--output-schema {name}: not JSON: {e}"))?;
        OutputSchema::new(schema).map_err(|e| format!("--output-schema {name}: {e}"))
    }

    /// `schema`, when it is a valid JSON Schema.
    pub fn new(schema: Value) -> Result<OutputSchema, String> {
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| format!("not a JSON Schema: {e}"))?;
        Ok(OutputSchema { schema, validator })
    }

    /// The schema itself.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The answer's JSON value when it fits; else what is wrong, in a few
    /// lines a model can act on. The answer may be wrapped in one Markdown
    /// code block.
    pub fn check(&self, answer: &str) -> Result<Value, String> {
        let text = unfenced(answer.trim());
        if text.is_empty() {
            return Err("the answer is empty; it must be a JSON value".to_owned());
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("the answer is not JSON: {e}"))?;
        let problems: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(PROBLEMS_TOLD)
            .map(|e| {
                let at = e.instance_path().to_string();
                match at.is_empty() {
                    true => e.to_string(),
                    false => format!("at {at}: {e}"),
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(problems.join("; "))
        }
    }

    /// What the question says after the user's text, so that the first
    /// answer can fit already.
    pub fn instruction(&self) -> String {
        format!(
            "\n\nGive your final answer as a JSON value only (no other text, no code fence) \
             that fits this JSON Schema:\n{}",
            self.schema
        )
    }

    /// What the model is told when its answer does not fit.
    pub fn retry_text(&self, why: &str) -> String {
        format!(
            "Your final answer does not fit the required JSON Schema: {why}\n\
             Answer again with only the JSON value that fits it."
        )
    }
}

/// The text inside a Markdown code block that is the whole of `text`,
/// else `text`.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The fence's language word ends at the first line break.
    match body.split_once('\n') {
        Some((_, inside)) => inside.trim(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn a_fitting_answer_gives_its_value() {
        assert_eq!(
            schema().check(" {\"count\": 3}\n").unwrap(),
            json!({"count": 3})
        );
        assert_eq!(
            schema().check("```json\n{\"count\": 3}\n```").unwrap(),
            json!({"count": 3})
        );
    }

    #[test]
    fn a_bad_answer_says_what_is_wrong() {
        let s = schema();
        assert!(
            s.check("three")
                .unwrap_err()
                .starts_with("the answer is not JSON")
        );
        let why = s.check(r#"{"count": "three"}"#).unwrap_err();
        assert!(why.contains("at /count"), "{why}");
        assert!(why.contains("integer"), "{why}");
        assert!(s.check(r#"{}"#).unwrap_err().contains("count"));
        assert!(s.check("").is_err());
    }

    #[test]
    fn a_schema_must_be_one() {
        assert!(OutputSchema::new(json!({"type": "bogus"})).is_err());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        std::fs::write(&file, "{not json").unwrap();
        let e = OutputSchema::read(&file).unwrap_err();
        assert!(
            e.starts_with("--output-schema ") && e.contains("not JSON"),
            "{e}"
        );
    }
}
