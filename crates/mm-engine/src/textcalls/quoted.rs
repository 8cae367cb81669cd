//! Calls the model was shown by someone else: markup inside the session's
//! tool results and user messages. A model that writes the same call back
//! is quoting what it read (a file, a web page, the user's question), not
//! calling, so such a call stays text.
//!
//! The markup is found wherever it stands in those texts, in every form,
//! and compared by what it means (tool and arguments), so that a copy with
//! other spacing or key order is still a copy. It is looked for only once a
//! reply holds a call, and then once per generation.

use std::sync::OnceLock;

use serde_json::Value;

use super::json::{self, Extent, Seen};
use super::{CALL_KEYS, Kind, Recovered, Region, TAGS, Verdict, forms, parse};
use crate::types::{Message, ToolDecl};

/// The texts of a session that others wrote, and the calls they hold.
#[derive(Debug, Default)]
pub struct Quoted<'m> {
    texts: Vec<&'m str>,
    /// (tool, arguments) of every call found in `texts`, for the declared
    /// tools of the first look.
    calls: OnceLock<Vec<(String, Value)>>,
}

impl<'m> Quoted<'m> {
    /// The tool results and user messages of `messages`.
    pub fn of(messages: &'m [Message]) -> Quoted<'m> {
        let texts = messages
            .iter()
            .filter_map(|m| match m {
                Message::User { content, .. } | Message::Tool { content, .. } => {
                    Some(content.as_str())
                }
                _ => None,
            })
            .collect();
        Quoted {
            texts,
            calls: OnceLock::new(),
        }
    }

    /// Whether `call` is one of the calls these texts hold.
    pub(crate) fn holds(&self, tools: &[ToolDecl], call: &Recovered) -> bool {
        if self.texts.is_empty() {
            return false;
        }
        let calls = self.calls.get_or_init(|| {
            let mut found = Vec::new();
            for text in &self.texts {
                calls_in(tools, text, &mut found);
            }
            found
        });
        let Ok(args) = serde_json::from_str::<Value>(&call.arguments) else {
            return false;
        };
        calls
            .iter()
            .any(|(name, a)| *name == call.name && *a == args)
    }
}

/// Every call written anywhere in `text`, in any form (a bare object too,
/// wherever it stands), pushed to `found`.
fn calls_in(tools: &[ToolDecl], text: &str, found: &mut Vec<(String, Value)>) {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = memchr::memchr3(b'<', b'[', b'{', &bytes[from..]) {
        let p = from + at;
        let rest = &text[p..];
        let calls = match TAGS.iter().find(|(tag, _)| rest.starts_with(tag)) {
            Some((tag, kind)) => tagged(tools, *kind, tag.len(), rest),
            None if bytes[p] == b'{' => bare(tools, rest),
            None => None,
        };
        match calls {
            Some((calls, len)) => {
                for c in calls {
                    if let Ok(args) = serde_json::from_str(&c.arguments) {
                        found.push((c.name, args));
                    }
                }
                from = p + len.max(1);
            }
            None => from = p + 1,
        }
    }
}

/// The calls of the region a tag opens at the start of `rest`, and its
/// length (a region still open at the end of the text runs to the end).
fn tagged(
    tools: &[ToolDecl],
    kind: Kind,
    body: usize,
    rest: &str,
) -> Option<(Vec<Recovered>, usize)> {
    let mut region = Region::new(kind, body, false, true);
    let end = match region.advance(rest) {
        Verdict::End(n) => n,
        Verdict::Wait => rest.len(),
        Verdict::Release(_) => return None,
    };
    Some((parse(tools, kind, false, &rest[..end])?, end))
}

/// A bare call object at the start of `rest`, and its length.
fn bare(tools: &[ToolDecl], rest: &str) -> Option<(Vec<Recovered>, usize)> {
    match json::first_key(&rest[1..], 16) {
        Some(Ok(key)) if CALL_KEYS.contains(&key) => {}
        _ => return None,
    }
    let Seen::Closed(end) = Extent::default().feed(rest.as_bytes()) else {
        return None;
    };
    Some((forms::bare(tools, &rest[..end])?, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::textcalls::tests::tools;
    use serde_json::json;

    fn found(text: &str) -> Vec<(String, Value)> {
        let mut found = Vec::new();
        calls_in(&tools(), text, &mut found);
        found
    }

    #[test]
    fn markup_is_found_wherever_it_stands() {
        let ls = ("bash".to_owned(), json!({"command": "ls"}));
        for text in [
            "a <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call> b",
            "1\t<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>",
            "x = '<function=bash>{\"command\": \"ls\"}</function>'",
            "> <|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}<|eom_id|>",
            "`[TOOL_CALLS]bash[ARGS]{\"command\": \"ls\"}`",
            "[TOOL_CALLS][{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]",
            "data: {\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}, more",
            "cut short: <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
        ] {
            assert!(found(text).contains(&ls), "{text}: {:?}", found(text));
        }
        assert_eq!(
            found("<tool_call>{\"name\": \"rm\"}</tool_call> {\"a\": 1} [x] <b>"),
            []
        );
    }

    #[test]
    fn a_copy_is_known_by_what_it_means() {
        let t = tools();
        let messages = [
            Message::user("what is this?"),
            Message::Tool {
                call_id: "c".into(),
                name: "read_file".into(),
                content: "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tool_call>".into(),
                failed: false,
                images: Vec::new(),
            },
        ];
        let q = Quoted::of(&messages);
        let call = |args: &str| Recovered {
            name: "bash".into(),
            arguments: args.into(),
            form: forms::Form::QwenXml,
            fenced: false,
        };
        assert!(q.holds(&t, &call("{\"command\":\"touch x\"}")));
        assert!(!q.holds(&t, &call("{\"command\":\"ls\"}")));
        assert!(!Quoted::default().holds(&t, &call("{\"command\":\"touch x\"}")));
    }
}
