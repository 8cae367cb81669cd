//! The written forms of a tool call, each parsed from the whole text of
//! one region the streaming recogniser set apart. A region is a call only
//! when it names a declared tool and its arguments fit that tool's schema;
//! anything else gives `None` and the region stays text.

use serde_json::{Map, Value};

use super::schema;
use crate::types::ToolDecl;

/// Which written form a call was recovered from (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// Hermes / Qwen2.5: `<tool_call>{"name": …, "arguments": …}</tool_call>`.
    Hermes,
    /// Qwen3-Coder: `<function=name><parameter=p>value</parameter></function>`.
    QwenXml,
    /// Llama 3.1's user-defined form: `<function=name>{…}</function>`.
    FunctionJson,
    /// Llama 3.x: `<|python_tag|>{"name": …, "parameters": …}`.
    PythonTag,
    /// Llama 3.x: a bare JSON object that is the whole answer.
    BareJson,
    /// Mistral (tokenizer v3): `[TOOL_CALLS][{"name": …, "arguments": …}]`.
    MistralList,
    /// Mistral (tokenizer v11+): `[TOOL_CALLS]name[ARGS]{…}`.
    MistralArgs,
}

impl Form {
    /// A short name for the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Hermes => "hermes",
            Form::QwenXml => "qwen3-coder-xml",
            Form::FunctionJson => "function-json",
            Form::PythonTag => "llama-python-tag",
            Form::BareJson => "bare-json",
            Form::MistralList => "mistral-list",
            Form::MistralArgs => "mistral-args",
        }
    }
}

/// A call recovered from text: a declared tool and arguments (JSON object
/// text) that fit its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    pub name: String,
    pub arguments: String,
    pub form: Form,
    /// It was written inside a Markdown code fence.
    pub fenced: bool,
}

pub(crate) const TOOL_CALL: &str = "<tool_call>";
pub(crate) const TOOL_CALL_END: &str = "</tool_call>";
pub(crate) const FUNCTION: &str = "<function=";
pub(crate) const FUNCTION_END: &str = "</function>";
pub(crate) const PYTHON_TAG: &str = "<|python_tag|>";
pub(crate) const TOOL_CALLS: &str = "[TOOL_CALLS]";
pub(crate) const ARGS: &str = "[ARGS]";
pub(crate) const CALL_ID: &str = "[CALL_ID]";
pub(crate) const FENCE: &str = "```";
/// Llama's end-of-message and end-of-turn tokens, when a server leaves
/// them in the text.
pub(crate) const END_TOKENS: [&str; 2] = ["<|eom_id|>", "<|eot_id|>"];
const PARAMETER: &str = "<parameter=";
const PARAMETER_END: &str = "</parameter>";

/// Longest tool name (or call id) taken from markup.
pub(crate) const MAX_NAME: usize = 64;

/// A byte that may appear in a tool name written into markup.
pub(crate) fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME && name.bytes().all(name_byte)
}

fn tool<'t>(tools: &'t [ToolDecl], name: &str) -> Option<&'t ToolDecl> {
    tools.iter().find(|t| t.name == name)
}

/// The call for declared tool `name` with `args`, if they fit its schema.
fn checked(tools: &[ToolDecl], name: &str, args: Value, form: Form) -> Option<Recovered> {
    let decl = tool(tools, name)?;
    if !args.is_object() || !schema::accepts(&decl.parameters, &args) {
        return None;
    }
    Some(Recovered {
        name: name.to_owned(),
        arguments: serde_json::to_string(&args).ok()?,
        form,
        fenced: false,
    })
}

/// A call written as one JSON object: `name` and `arguments` (or
/// `parameters`, as Llama writes it), optionally `"type": "function"` and
/// an `id` (Mistral). Arguments may be an object or a JSON string holding
/// one. Any other key means this is not a call.
fn from_object(tools: &[ToolDecl], value: Value, form: Form, need_args: bool) -> Option<Recovered> {
    let Value::Object(mut map) = value else {
        return None;
    };
    if map.keys().any(|k| {
        !matches!(
            k.as_str(),
            "name" | "arguments" | "parameters" | "type" | "id"
        )
    }) {
        return None;
    }
    if let Some(t) = map.remove("type")
        && t != "function"
    {
        return None;
    }
    let Some(Value::String(name)) = map.remove("name") else {
        return None;
    };
    let args = match (map.remove("arguments"), map.remove("parameters")) {
        (Some(_), Some(_)) => return None,
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) if need_args => return None,
        (None, None) => Value::Object(Map::new()),
    };
    let args = match args {
        Value::String(text) => serde_json::from_str::<Value>(&text).ok()?,
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    checked(tools, &name, args, form)
}

/// Exactly one JSON value in `text` (surrounding whitespace allowed).
fn one_json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// A Markdown fence around `text` taken off: the opening line and the
/// closing backticks, when present.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix(FENCE) else {
        return text;
    };
    let Some((_info, body)) = rest.split_once('\n') else {
        return text;
    };
    let body = body.trim_end();
    body.strip_suffix(FENCE).unwrap_or(body).trim()
}

/// `<tool_call> … </tool_call>`: a Hermes JSON object, or a Qwen3-Coder or
/// Llama `<function=…>` block, the closing tag optional (a stream may end
/// without it).
pub(crate) fn tool_call(tools: &[ToolDecl], region: &str) -> Option<Vec<Recovered>> {
    let body = region.trim_start().strip_prefix(TOOL_CALL)?.trim_end();
    let body = body.strip_suffix(TOOL_CALL_END).unwrap_or(body).trim();
    let body = unfence(body);
    let call = if body.starts_with(FUNCTION) {
        function(tools, body)?
    } else {
        from_object(tools, one_json(body)?, Form::Hermes, false)?
    };
    Some(vec![call])
}

/// `<function=name>` followed by `<parameter=…>` blocks (Qwen3-Coder) or a
/// JSON object (Llama 3.1), then `</function>` (optional at the end).
pub(crate) fn function(tools: &[ToolDecl], region: &str) -> Option<Recovered> {
    let rest = region.trim().strip_prefix(FUNCTION)?;
    let (name, body) = rest.split_once('>')?;
    if !valid_name(name) {
        return None;
    }
    let body = body.trim_end();
    let body = body.strip_suffix(FUNCTION_END).unwrap_or(body);
    if body.trim_start().starts_with('{') {
        let args = one_json(body)?;
        return checked(tools, name, args, Form::FunctionJson);
    }
    let decl = tool(tools, name)?;
    let props = decl.parameters.get("properties");
    let mut args = Map::new();
    let mut rest = body;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let after = rest.strip_prefix(PARAMETER)?;
        let (param, after) = after.split_once('>')?;
        if param.is_empty() || param.len() > MAX_NAME * 2 || param.contains(['<', '\n']) {
            return None;
        }
        let (value, next) = match after.find(PARAMETER_END) {
            Some(end) => (&after[..end], &after[end + PARAMETER_END.len()..]),
            // The last parameter of a stream cut before its closing tag.
            None => (after, ""),
        };
        // The template writes each value between two newlines.
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        let typed = schema::typed(props.and_then(|p| p.get(param)), value);
        if args.insert(param.to_owned(), typed).is_some() {
            return None;
        }
        rest = next;
    }
    checked(tools, name, Value::Object(args), Form::QwenXml)
}

/// `<|python_tag|>` and one or more JSON objects, separated by `;`,
/// optionally ended by Llama's end token.
pub(crate) fn python_tag(tools: &[ToolDecl], region: &str) -> Option<Vec<Recovered>> {
    let mut rest = region.trim_start().strip_prefix(PYTHON_TAG)?;
    let mut calls = Vec::new();
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(';') {
            rest = r;
            continue;
        }
        if rest.is_empty() {
            break;
        }
        if let Some(r) = END_TOKENS.iter().find_map(|t| rest.strip_prefix(t)) {
            if !r.trim().is_empty() {
                return None;
            }
            break;
        }
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        let used = values.byte_offset();
        calls.push(from_object(tools, value, Form::PythonTag, false)?);
        rest = &rest[used..];
    }
    (!calls.is_empty()).then_some(calls)
}

/// A bare JSON object that is the whole answer (Llama 3.x writes custom
/// tool calls this way), possibly followed by Llama's end token.
pub(crate) fn bare(tools: &[ToolDecl], region: &str) -> Option<Vec<Recovered>> {
    let mut text = region.trim();
    while let Some(t) = END_TOKENS.iter().find_map(|t| text.strip_suffix(t)) {
        text = t.trim_end();
    }
    if !text.starts_with('{') {
        return None;
    }
    Some(vec![from_object(
        tools,
        one_json(text)?,
        Form::BareJson,
        true,
    )?])
}

/// `[TOOL_CALLS]` and a JSON list of calls (tokenizer v3), or a name,
/// an optional `[CALL_ID]id`, `[ARGS]` and a JSON object (v11 and later).
pub(crate) fn mistral(tools: &[ToolDecl], region: &str) -> Option<Vec<Recovered>> {
    let rest = region.trim_start().strip_prefix(TOOL_CALLS)?.trim();
    if rest.starts_with('[') {
        let Value::Array(items) = one_json(rest)? else {
            return None;
        };
        if items.is_empty() {
            return None;
        }
        return items
            .into_iter()
            .map(|v| from_object(tools, v, Form::MistralList, false))
            .collect();
    }
    let end = rest.find(['[', '{']).unwrap_or(rest.len());
    let (name, mut rest) = rest.split_at(end);
    if !valid_name(name) {
        return None;
    }
    if let Some(r) = rest.strip_prefix(CALL_ID) {
        let end = r.find('[')?;
        if !valid_name(&r[..end]) {
            return None;
        }
        rest = &r[end..];
    }
    let rest = rest.strip_prefix(ARGS).unwrap_or(rest);
    let args = one_json(rest)?;
    Some(vec![checked(tools, name, args, Form::MistralArgs)?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::textcalls::tests::tools;
    use serde_json::json;

    fn one(calls: Option<Vec<Recovered>>) -> (String, Value, Form) {
        let calls = calls.expect("a call");
        assert_eq!(calls.len(), 1, "{calls:?}");
        let c = &calls[0];
        (
            c.name.clone(),
            serde_json::from_str(&c.arguments).unwrap(),
            c.form,
        )
    }

    #[test]
    fn hermes_arguments_as_object_or_string() {
        let t = tools();
        let got = one(tool_call(
            &t,
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>",
        ));
        assert_eq!(got, ("bash".into(), json!({"command": "ls"}), Form::Hermes));
        let got = one(tool_call(
            &t,
            r#"<tool_call>{"name": "bash", "arguments": "{\"command\": \"ls\"}"}"#,
        ));
        assert_eq!(got.1, json!({"command": "ls"}));
        // Undeclared, broken, extra keys, wrong types: not calls.
        for text in [
            r#"<tool_call>{"name": "rm", "arguments": {"command": "ls"}}</tool_call>"#,
            r#"<tool_call>{"name": "bash", "arguments": {"command": "ls"}</tool_call>"#,
            r#"<tool_call>{"name": "bash", "arguments": {"command": 1}}</tool_call>"#,
            r#"<tool_call>{"name": "bash", "arguments": {}}</tool_call>"#,
            r#"<tool_call>{"name": "bash", "arguments": {"command": "ls"}, "x": 1}</tool_call>"#,
            r#"<tool_call>{"name": "bash", "arguments": "not json"}</tool_call>"#,
            r#"<tool_call>{"name": "bash", "type": "other", "arguments": {"command": "ls"}}</tool_call>"#,
            "<tool_call>ls</tool_call>",
        ] {
            assert_eq!(tool_call(&t, text), None, "{text}");
        }
    }

    #[test]
    fn qwen_xml_values_are_typed_by_the_schema() {
        let t = tools();
        let text = "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/a b.rs\n</parameter>\n<parameter=start>\n12\n</parameter>\n<parameter=numbered>\ntrue\n</parameter>\n</function>\n</tool_call>";
        let got = one(tool_call(&t, text));
        assert_eq!(
            got,
            (
                "read_file".into(),
                json!({"path": "src/a b.rs", "start": 12, "numbered": true}),
                Form::QwenXml
            )
        );
        // A multi-line value keeps its inner newlines.
        let text =
            "<function=bash>\n<parameter=command>\necho a\necho b\n</parameter>\n</function>";
        assert_eq!(
            one(function(&t, text).map(|c| vec![c])).1,
            json!({"command": "echo a\necho b"})
        );
        // Cut before the closing tags at the end of the stream.
        let text = "<tool_call>\n<function=bash>\n<parameter=command>\nls\n";
        assert_eq!(one(tool_call(&t, text)).1, json!({"command": "ls"}));
        for text in [
            "<function=bash>\n<parameter=command>\nls\n</parameter>\nand more\n</function>",
            "<function=bash>\n<parameter=command>\nls\n</parameter><parameter=command>\nx\n</parameter></function>",
            "<function=read_file>\n<parameter=path>\na\n</parameter>\n<parameter=start>\ntwelve\n</parameter>\n</function>",
            "<function=ba sh>\n</function>",
        ] {
            assert_eq!(function(&t, text), None, "{text}");
        }
    }

    #[test]
    fn llama_forms() {
        let t = tools();
        let got = one(python_tag(
            &t,
            "<|python_tag|>{\"type\": \"function\", \"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}<|eom_id|>",
        ));
        assert_eq!(
            got,
            ("bash".into(), json!({"command": "ls"}), Form::PythonTag)
        );
        let two = python_tag(
            &t,
            r#"<|python_tag|>{"name": "bash", "parameters": {"command": "ls"}}; {"name": "read_file", "parameters": {"path": "a"}}"#,
        )
        .unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].name, "read_file");
        let got = one(bare(
            &t,
            "{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}",
        ));
        assert_eq!(got.2, Form::BareJson);
        // A bare object needs its arguments key: `{"name": "bash"}` is data.
        assert_eq!(bare(&t, r#"{"name": "read_file"}"#), None);
        let got = one(function(
            &t,
            r#"<function=read_file>{"path": "x", "start": "2"}</function>"#,
        )
        .map(|c| vec![c]));
        assert_eq!(
            got,
            (
                "read_file".into(),
                json!({"path": "x", "start": "2"}),
                Form::FunctionJson
            )
        );
        assert_eq!(
            python_tag(&t, "<|python_tag|>brave_search.call(query=\"x\")"),
            None
        );
    }

    #[test]
    fn mistral_forms() {
        let t = tools();
        let calls = mistral(
            &t,
            r#"[TOOL_CALLS] [{"name": "bash", "arguments": {"command": "ls"}, "id": "abc123def"}, {"name": "read_file", "arguments": {"path": "a"}}]"#,
        )
        .unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].form, Form::MistralList);
        let got = one(mistral(&t, r#"[TOOL_CALLS]bash[ARGS]{"command": "ls"}"#));
        assert_eq!(
            got,
            ("bash".into(), json!({"command": "ls"}), Form::MistralArgs)
        );
        let got = one(mistral(
            &t,
            r#"[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{"command": "ls"}"#,
        ));
        assert_eq!(got.1, json!({"command": "ls"}));
        assert_eq!(
            mistral(&t, r#"[TOOL_CALLS]bash[ARGS]{"command": "ls""#),
            None
        );
        assert_eq!(
            mistral(
                &t,
                r#"[TOOL_CALLS][{"name": "bash", "arguments": {"command": "ls"}}, {"name": "nope", "arguments": {}}]"#
            ),
            None
        );
        assert_eq!(mistral(&t, "[TOOL_CALLS][]"), None);
    }

    #[test]
    fn fenced_bodies_inside_the_tag() {
        let t = tools();
        let text = "<tool_call>\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n</tool_call>";
        assert_eq!(one(tool_call(&t, text)).0, "bash");
    }
}
