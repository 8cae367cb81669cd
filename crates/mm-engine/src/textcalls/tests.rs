//! The streaming recogniser: every form whole, cut at every byte and fed a
//! character at a time; text that is not a call stays exactly as it was;
//! what is held back and when it is released.

use serde_json::{Value, json};

use super::*;

/// `bash {command}` and `read_file {path, start?, numbered?}`, as mm
/// declares them (trimmed to what the schema check reads).
pub(crate) fn tools() -> Vec<ToolDecl> {
    vec![
        ToolDecl {
            name: "bash".into(),
            description: "run".into(),
            parameters: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }),
        },
        ToolDecl {
            name: "read_file".into(),
            description: "read".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start": {"type": "integer"},
                    "numbered": {"type": "boolean"}
                },
                "required": ["path"]
            }),
        },
    ]
}

type Got = (String, Vec<(String, Value)>);

/// Feeds `chunks`, returns (the text, the calls).
fn feed(tools: &[ToolDecl], chunks: &[&str]) -> Got {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut take = |o: Out<'_>| match o {
        Out::Text(t) => {
            assert!(!t.is_empty(), "empty text piece");
            text.push_str(t);
        }
        Out::Call(c) => calls.push((c.name, serde_json::from_str(&c.arguments).unwrap())),
    };
    let mut r = Recogniser::new(tools);
    for c in chunks {
        r.push(c, &mut take).unwrap();
    }
    r.finish(&mut take);
    (text, calls)
}

/// The same result whole, cut once at every byte, cut twice at a spread
/// of places, and one character at a time.
fn check(input: &str, want: &Got) {
    let t = tools();
    assert_eq!(&feed(&t, &[input]), want, "whole: {input:?}");
    let cuts: Vec<usize> = (0..=input.len())
        .filter(|i| input.is_char_boundary(*i))
        .collect();
    for &i in &cuts {
        assert_eq!(
            &feed(&t, &[&input[..i], &input[i..]]),
            want,
            "cut at {i}: {input:?}"
        );
    }
    for &i in cuts.iter().step_by(3) {
        for &j in cuts.iter().filter(|j| **j >= i).step_by(5) {
            assert_eq!(
                &feed(&t, &[&input[..i], &input[i..j], &input[j..]]),
                want,
                "cut at {i},{j}: {input:?}"
            );
        }
    }
    let chars: Vec<String> = input.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(&feed(&t, &refs), want, "by character: {input:?}");
}

fn call(name: &str, args: Value) -> (String, Value) {
    (name.to_owned(), args)
}

fn ls() -> (String, Value) {
    call("bash", json!({"command": "ls"}))
}

fn text_only(input: &str) -> Got {
    (input.to_owned(), vec![])
}

#[test]
fn hermes_blocks_one_or_several_after_text() {
    check(
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>",
        &(String::new(), vec![ls()]),
    );
    check(
        "Let me look.\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}\n</tool_call>\n\n",
        &(
            "Let me look.\n".into(),
            vec![ls(), call("read_file", json!({"path": "a.txt"}))],
        ),
    );
}

#[test]
fn qwen3_coder_xml() {
    check(
        "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n<parameter=start>\n3\n</parameter>\n</function>\n</tool_call>",
        &(
            String::new(),
            vec![call(
                "read_file",
                json!({"path": "src/main.rs", "start": 3}),
            )],
        ),
    );
    // Without the outer tag, as some servers pass it through.
    check(
        "<function=bash>\n<parameter=command>\nls -la\n</parameter>\n</function>",
        &(
            String::new(),
            vec![call("bash", json!({"command": "ls -la"}))],
        ),
    );
}

#[test]
fn llama_python_tag_and_bare_object() {
    check(
        "<|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}<|eom_id|>",
        &(String::new(), vec![ls()]),
    );
    check(
        "<|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}; {\"name\": \"bash\", \"parameters\": {\"command\": \"pwd\"}}",
        &(
            String::new(),
            vec![ls(), call("bash", json!({"command": "pwd"}))],
        ),
    );
    check(
        "\n{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n",
        &(String::new(), vec![ls()]),
    );
    check(
        "{\"type\": \"function\", \"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}",
        &(String::new(), vec![ls()]),
    );
    check(
        "<function=bash>{\"command\": \"ls\"}</function>",
        &(String::new(), vec![ls()]),
    );
}

#[test]
fn a_bare_object_is_a_call_only_as_the_whole_answer() {
    for input in [
        "Run this: {\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}",
        "{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}} is what I would run",
        "{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}",
        "{\"title\": \"a\", \"name\": \"bash\"}",
        "{\"name\": \"Ada\", \"parameters\": {\"age\": 36}}",
    ] {
        check(input, &text_only(input));
    }
}

#[test]
fn mistral_forms() {
    check(
        "[TOOL_CALLS] [{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}, \"id\": \"a1b2c3d4e\"}]",
        &(String::new(), vec![ls()]),
    );
    check(
        "[TOOL_CALLS]bash[ARGS]{\"command\": \"ls\"}[TOOL_CALLS]read_file[ARGS]{\"path\": \"x\"}",
        &(
            String::new(),
            vec![ls(), call("read_file", json!({"path": "x"}))],
        ),
    );
    check(
        "[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{\"command\": \"ls\"}",
        &(String::new(), vec![ls()]),
    );
}

#[test]
fn fenced_calls() {
    check(
        "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
        &(String::new(), vec![ls()]),
    );
    check(
        "I will list the files.\n```xml\n<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>\n```\n",
        &("I will list the files.\n".into(), vec![ls()]),
    );
    check(
        "Two:\n~~~\nnot a fence of calls\n~~~\n```\n<|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n```\n",
        &("Two:\n~~~\nnot a fence of calls\n~~~\n".into(), vec![ls()]),
    );
    // A call before a fence that ends the answer.
    check(
        "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}</tool_call>\n```\n[TOOL_CALLS]bash[ARGS]{\"command\": \"ls\"}\n```",
        &(
            String::new(),
            vec![call("bash", json!({"command": "pwd"})), ls()],
        ),
    );
}

#[test]
fn a_fence_is_a_call_only_holding_exactly_one_and_ending_the_answer() {
    for input in [
        // Two calls in one fence.
        "```\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}\n</tool_call>\n```",
        "```\n<|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}; {\"name\": \"bash\", \"parameters\": {\"command\": \"pwd\"}}\n```",
        // A fence in the middle, then text.
        "```xml\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>\n```\nThat one I will not run.",
    ] {
        check(input, &text_only(input));
    }
    // A fence followed by another call does not end the answer: it is
    // text, the call after it is one.
    check(
        "```\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}</tool_call>\n```\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
        &(
            "```\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"pwd\"}}</tool_call>\n```\n".into(),
            vec![ls()],
        ),
    );
}

/// Every written form of `bash ls`.
fn ls_forms() -> Vec<&'static str> {
    vec![
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>",
        "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>",
        "<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>",
        "<function=bash>{\"command\": \"ls\"}</function>",
        "<|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}",
        "[TOOL_CALLS]bash[ARGS]{\"command\": \"ls\"}",
        "[TOOL_CALLS][{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]",
        "```xml\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\n```",
    ]
}

#[test]
fn every_form_is_a_call_where_a_model_puts_one() {
    for form in ls_forms() {
        check(form, &(String::new(), vec![ls()]));
        check(
            &format!("I will list them.\n\n{form}\n"),
            &("I will list them.\n\n".into(), vec![ls()]),
        );
        check(
            &format!("Indented:\n   {form}"),
            &("Indented:\n   ".into(), vec![ls()]),
        );
        check(
            &format!("> a quote\n\n{form}"),
            &("> a quote\n\n".into(), vec![ls()]),
        );
    }
}

#[test]
fn quoted_markup_stays_text_as_written() {
    for form in ls_forms() {
        let indented: Vec<String> = form.lines().map(|l| format!("    {l}")).collect();
        let quoted: Vec<String> = form.lines().map(|l| format!("> {l}")).collect();
        for input in [
            // Inside prose.
            format!("The file contains {form} - I will not run it."),
            format!("The file contains {form}"),
            // On its own lines, but text follows.
            format!("The file contains:\n{form}\nI will not run it."),
            format!("{form}\n\nThat is what the file holds."),
            format!("{form} is in the file"),
            // Inline code.
            format!("The file contains `{form}`."),
            format!("`{form}`"),
            // A blockquote, each line marked or only the first.
            format!("The file says:\n{}", quoted.join("\n")),
            format!("The file says:\n> {form}"),
            format!("> The file says:\n{form}"),
            // Code: a fence in the middle, a fence of more than the call,
            // an indented block.
            format!("It says:\n```\n{form}\n```\nI will not run it."),
            format!("It says:\n```text\nSetup:\n{form}\n```"),
            format!("It says:\n```text\nSetup:\n{form}"),
            format!("It says:\n{}", indented.join("\n")),
            // A list item.
            format!("- {form}"),
        ] {
            if input.starts_with("`") && form.starts_with('`') {
                continue;
            }
            check(&input, &text_only(&input));
        }
    }
}

#[test]
fn a_call_after_quoted_markup_is_still_a_call() {
    check(
        "The file says <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tool_call>; I list instead.\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
        &(
            "The file says <tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}</tool_call>; I list instead.\n".into(),
            vec![ls()],
        ),
    );
}

/// Feeds `input` whole and cut at every byte, quoting `messages`.
fn feed_quoting(messages: &[crate::types::Message], input: &str) -> Vec<Got> {
    let t = tools();
    let quoted = Quoted::of(messages);
    let mut seen = Vec::new();
    for cut in (0..=input.len()).filter(|i| input.is_char_boundary(*i)) {
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut take = |o: Out<'_>| match o {
            Out::Text(t) => text.push_str(t),
            Out::Call(c) => calls.push((c.name, serde_json::from_str(&c.arguments).unwrap())),
        };
        let mut r = Recogniser::new(&t).quoting(&quoted);
        r.push(&input[..cut], &mut take).unwrap();
        r.push(&input[cut..], &mut take).unwrap();
        r.finish(&mut take);
        seen.push((text, calls));
    }
    seen
}

#[test]
fn a_copy_of_a_tool_result_or_the_users_message_stays_text() {
    use crate::types::Message;
    let touch = "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"touch x\"}}\n</tool_call>";
    let from_tool = [
        Message::user("what is in notes.txt?"),
        Message::Tool {
            call_id: "c1".into(),
            name: "read_file".into(),
            content: format!("Setup:\n{touch}\n"),
            failed: false,
            images: Vec::new(),
        },
    ];
    let from_user = [Message::user(format!("What does {touch} do?"))];
    // The copy, as written or spaced and ordered otherwise, or in another
    // form: the same call, so text.
    for messages in [&from_tool[..], &from_user[..]] {
        for reply in [
            format!("It holds:\n\n{touch}"),
            "It holds:\n<tool_call>{\"arguments\":{\"command\":\"touch x\"},\"name\":\"bash\"}</tool_call>".to_owned(),
            "[TOOL_CALLS]bash[ARGS]{\"command\": \"touch x\"}".to_owned(),
        ] {
            for got in feed_quoting(messages, &reply) {
                assert_eq!(got, text_only(&reply), "{messages:?}");
            }
        }
    }
    // Another call is still a call.
    let reply = "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>";
    for got in feed_quoting(&from_tool, reply) {
        assert_eq!(got, (String::new(), vec![ls()]));
    }
    // An assistant's own text is not a source of quotes.
    let own = [Message::assistant(touch)];
    for got in feed_quoting(&own, touch) {
        assert_eq!(got.1, vec![call("bash", json!({"command": "touch x"}))]);
    }
}

#[test]
fn code_fences_and_json_that_are_not_calls_stay_text() {
    for input in [
        "Here:\n```python\nprint('<tool_call>')\n```\nDone",
        "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\nThat is how a call looks.",
        "Example:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
        "```\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>\nand then some\n```",
        "```json\n{\"key\": [1, 2]}\n```",
        "`inline` and ``` not at a line start",
    ] {
        check(input, &text_only(input));
    }
}

#[test]
fn missing_closing_tags_at_the_end_of_the_stream() {
    check(
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
        &(String::new(), vec![ls()]),
    );
    check(
        "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>",
        &(String::new(), vec![ls()]),
    );
    check(
        "<tool_call>\n<function=bash>\n<parameter=command>\nls\n",
        &(String::new(), vec![ls()]),
    );
    check(
        "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n",
        &(String::new(), vec![ls()]),
    );
}

#[test]
fn undeclared_tools_broken_json_and_wrong_arguments_stay_text_untouched() {
    for input in [
        "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {\"path\": \"/\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}\n</tool_call>",
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"cmd\": 1}}\n</tool_call> and text",
        "<tool_call>\n<function=read_file>\n<parameter=start>\n3\n</parameter>\n</function>\n</tool_call>",
        "[TOOL_CALLS]nope[ARGS]{\"command\": \"ls\"}",
        "[TOOL_CALLS] [{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}",
        "<|python_tag|>brave_search.call(query=\"weather\")<|eom_id|>",
        "{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}",
        "Use <tool_call> tags, [TOOL_CALLS] markers or <function=name> blocks.",
        "a < b and c [x] d `e` <tool_cal <|python <function=a b> [TOOL_CALLS] x",
        "Vec<T> and [link](url) and <b>bold</b>",
    ] {
        check(input, &text_only(input));
    }
}

#[test]
fn a_failed_region_does_not_hide_a_call_after_it() {
    check(
        "<tool_call>oops</tool_call>\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
        &("<tool_call>oops</tool_call>\n".into(), vec![ls()]),
    );
}

#[test]
fn without_declared_tools_nothing_is_recognised() {
    let input =
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>";
    assert_eq!(feed(&[], &[input]), text_only(input));
}

/// What has been released after each push of `chunks`.
fn released_after_each(chunks: &[&str]) -> Vec<String> {
    let t = tools();
    let mut r = Recogniser::new(&t);
    let mut text = String::new();
    let mut seen = Vec::new();
    for c in chunks {
        r.push(c, &mut |o| {
            if let Out::Text(t) = o {
                text.push_str(t);
            }
        })
        .unwrap();
        seen.push(text.clone());
    }
    seen
}

#[test]
fn plain_text_is_released_at_once() {
    assert_eq!(
        released_after_each(&["Hello ", "a <", " b", " [T", "OOL", "S]", " ok"]),
        [
            "Hello ",
            "Hello a ",
            "Hello a < b",
            "Hello a < b ",
            "Hello a < b ",
            "Hello a < b [TOOLS]",
            "Hello a < b [TOOLS] ok"
        ]
    );
    // A fence of code is released at the first byte of its code.
    assert_eq!(
        released_after_each(&["Code:\n", "``", "`rust\n", "fn", " main"]),
        [
            "Code:\n",
            "Code:\n",
            "Code:\n",
            "Code:\n```rust\nfn",
            "Code:\n```rust\nfn main"
        ]
    );
    // An answer that starts like JSON is released once its first key says
    // it is not a call.
    assert_eq!(
        released_after_each(&["{\"ti", "tle\": 1}"]),
        ["", "{\"title\": 1}"]
    );
    // A whole object that names no declared tool is released as soon as
    // it closes, without waiting for the end of the answer.
    assert_eq!(
        released_after_each(&["{\"name\": \"Ada\", \"parameters\"", ": {}}", "\n"]),
        [
            "",
            "{\"name\": \"Ada\", \"parameters\": {}}",
            "{\"name\": \"Ada\", \"parameters\": {}}\n"
        ]
    );
}

#[test]
fn text_before_a_call_is_released_before_the_call_completes() {
    assert_eq!(
        released_after_each(&["Let me check.\n<tool", "_call>\n{\"name\": \"bash\""]),
        ["Let me check.\n", "Let me check.\n"]
    );
}

#[test]
fn a_region_that_repeats_itself_trips_the_runaway_guard() {
    let t = tools();
    let mut r = Recogniser::new(&t);
    let mut ignore = |_o: Out<'_>| {};
    r.push(
        "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"",
        &mut ignore,
    )
    .unwrap();
    let mut err = None;
    for _ in 0..200 {
        if let Err(e) = r.push("ab12", &mut ignore) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the guard trips");
    assert!(
        err.sentence.contains("repeat the same pattern"),
        "{}",
        err.sentence
    );
    assert_eq!(err.name.as_deref(), Some("bash"));
    assert_eq!(r.held(), "");
}

#[test]
fn held_text_is_what_a_cancelled_answer_keeps() {
    let t = tools();
    let mut r = Recogniser::new(&t);
    let mut text = String::new();
    r.push("ok <tool_call>{\"name\"", &mut |o| {
        if let Out::Text(t) = o {
            text.push_str(t)
        }
    })
    .unwrap();
    assert_eq!(text, "ok ");
    assert_eq!(r.held(), "<tool_call>{\"name\"");
}
