#![allow(clippy::unwrap_used, clippy::expect_used)]
//! read_file through the Tool trait on real files: every row of the
//! reference (docs/reference/tools.md) and the rules of
//! docs/design.md#reading-files.

mod files_support;

use files_support::Env;
use mm_tools::Tool;
use mm_tools::files::ReadFile;
use mm_types::ToolKind;
use serde_json::json;

fn tool() -> ReadFile {
    ReadFile::new()
}

#[tokio::test]
async fn whole_file_keeps_the_final_newline() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\nthree\n");
    assert_eq!(
        env.call(&tool(), json!({"path": "a.txt"})).await,
        "one\ntwo\nthree\n"
    );
    env.write("b.txt", "one\ntwo");
    assert_eq!(
        env.call(&tool(), json!({"path": "b.txt"})).await,
        "one\ntwo"
    );
}

#[tokio::test]
async fn ranges_are_one_based_inclusive_and_zero_is_open() {
    let env = Env::new();
    env.write("a.txt", "1\n2\n3\n4\n5\n");
    let t = tool();
    // A range that stops before the end drops the final newline.
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "start": 2, "end": 3}))
            .await,
        "2\n3"
    );
    // A range that reaches the end keeps it.
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "start": 4})).await,
        "4\n5\n"
    );
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "start": 0, "end": 2}))
            .await,
        "1\n2"
    );
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "start": 5, "end": 5}))
            .await,
        "5\n"
    );
    // An end past the file is the end of the file.
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "start": 4, "end": 99}))
            .await,
        "4\n5\n"
    );
}

#[tokio::test]
async fn numbered_prefixes_number_and_tab() {
    let env = Env::new();
    env.write("a.txt", "alpha\nbeta\ngamma\n");
    let t = tool();
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "numbered": true}))
            .await,
        "1\talpha\n2\tbeta\n3\tgamma\n"
    );
    assert_eq!(
        env.call(
            &t,
            json!({"path": "a.txt", "numbered": true, "start": 2, "end": 2})
        )
        .await,
        "2\tbeta"
    );
}

#[tokio::test]
async fn missing_file_text_names_the_path_as_given() {
    let env = Env::new();
    assert_eq!(
        env.call(&tool(), json!({"path": "sub/../nope.txt"})).await,
        "sub/../nope.txt does not exist. Create it with write_file"
    );
}

#[tokio::test]
async fn directory_not_text_and_bad_range() {
    let env = Env::new();
    std::fs::create_dir(env.path("src")).unwrap();
    assert_eq!(
        env.call(&tool(), json!({"path": "src"})).await,
        "src is a directory"
    );
    env.write("bin.dat", [0xff, 0xfe, 0x00, 0x80]);
    assert_eq!(
        env.call(&tool(), json!({"path": "bin.dat"})).await,
        "bin.dat is not a text file (4 bytes)"
    );
    env.write("a.txt", "x\n");
    assert_eq!(
        env.call(&tool(), json!({"path": "a.txt", "start": 5, "end": 2}))
            .await,
        "start (5) is after end (2)"
    );
}

#[tokio::test]
async fn absolute_paths_are_allowed() {
    let env = Env::new();
    let p = env.write("abs.txt", "hello\n");
    let given = p.display().to_string();
    assert_eq!(env.call(&tool(), json!({"path": given})).await, "hello\n");
}

#[tokio::test]
async fn plan_is_kind_read_with_the_absolute_path_and_no_permission() {
    let env = Env::new();
    env.write("dir/a.txt", "x\n");
    let plan = env
        .plan(&tool(), json!({"path": "dir/./a.txt"}))
        .await
        .unwrap();
    assert_eq!(plan.kind, ToolKind::Read);
    assert_eq!(plan.title, "dir/./a.txt");
    assert_eq!(
        plan.locations,
        vec![env.path("dir/a.txt").display().to_string()]
    );
    assert!(plan.rejection.is_none());
    assert!(plan.change.is_none());
    // The missing file is refused before anything runs.
    assert_eq!(
        env.plan(&tool(), json!({"path": "gone"}))
            .await
            .err()
            .unwrap(),
        "gone does not exist. Create it with write_file"
    );
}

#[tokio::test]
async fn truncation_keeps_whole_lines_then_the_marker() {
    let env = Env::with_max(200);
    let text: String = (1..=100).map(|i| format!("line {i:03}\n")).collect();
    env.write("long.txt", &text);
    let out = env
        .call(&ReadFile::new(), json!({"path": "long.txt"}))
        .await;
    // 14 lines of 9 characters and the 70-character marker: 196 ≤ 200; a
    // 15th line would pass it.
    let expected: String = (1..=14)
        .map(|i| format!("line {i:03}\n"))
        .collect::<String>()
        + "[… truncated: lines 1–14 of 100 shown; ask for start/end to read more]";
    assert_eq!(out, expected);
    // A range: the marker names the lines shown and the file's total.
    let out = env
        .call(
            &ReadFile::new(),
            json!({"path": "long.txt", "start": 90, "end": 100}),
        )
        .await;
    let expected: String = (90..=100).map(|i| format!("line {i:03}\n")).collect();
    // 11 lines (99) fit with the marker: no truncation at all.
    assert_eq!(out, expected);
}

#[tokio::test]
async fn truncation_of_a_numbered_range() {
    let env = Env::with_max(200);
    let text: String = (1..=500).map(|i| format!("row {i}\n")).collect();
    env.write("t.txt", &text);
    let out = env
        .call(
            &ReadFile::new(),
            json!({"path": "t.txt", "start": 100, "numbered": true}),
        )
        .await;
    // Each line `NNN\trow NNN\n` is 12 characters; the marker
    // `[… truncated: lines 100–110 of 500 shown; ask for start/end to read more]`
    // is 73: 11 lines make 132 + 73 = 205 > 200, 10 lines 120 + 73 = 193.
    let expected: String = (100..=109)
        .map(|i| format!("{i}\trow {i}\n"))
        .collect::<String>()
        + "[… truncated: lines 100–109 of 500 shown; ask for start/end to read more]";
    assert_eq!(out, expected);
    assert!(out.chars().count() <= 200);
}

#[tokio::test]
async fn a_first_line_too_long_is_cut_inside() {
    let env = Env::with_max(200);
    env.write("one.txt", format!("{}\nnext\n", "ü".repeat(1000)));
    let out = env.call(&ReadFile::new(), json!({"path": "one.txt"})).await;
    let marker = "[… truncated inside line 1; ask for start/end to read more]";
    let head = "ü".repeat(200 - marker.chars().count() - 1);
    assert_eq!(out, format!("{head}\n{marker}"));
    assert_eq!(out.chars().count(), 200);
}

#[tokio::test]
async fn bad_arguments_give_the_invalid_arguments_text() {
    let env = Env::new();
    assert_eq!(
        env.call(&tool(), json!({"start": 1})).await,
        "invalid arguments for read_file: missing field `path`; send a JSON object matching the tool's schema"
    );
    assert_eq!(
        env.call(&tool(), json!("a.txt")).await,
        "invalid arguments for read_file: the arguments are not a JSON object; send a JSON object matching the tool's schema"
    );
}

#[tokio::test]
async fn empty_file_reads_as_nothing() {
    let env = Env::new();
    env.write("empty.txt", "");
    assert_eq!(env.call(&tool(), json!({"path": "empty.txt"})).await, "");
}

#[tokio::test]
async fn spec_declares_the_reference_fields() {
    let spec = tool().spec();
    assert_eq!(spec.name, "read_file");
    let props = &spec.parameters["properties"];
    for field in ["path", "start", "end", "numbered"] {
        assert!(props.get(field).is_some(), "{field}");
    }
    assert_eq!(spec.parameters["required"], json!(["path"]));
}

#[tokio::test]
async fn a_key_across_the_cut_is_redacted_before_truncation() {
    let env = Env::with_max(200);
    let key = "sk-live-0123456789abcdef";
    // The cut inside line 1 falls at character 140 (200 minus the
    // 59-character marker and its newline): in the middle of the key.
    let line = format!("{}{key}{}", "x".repeat(125), "y".repeat(300));
    env.write("k.txt", format!("{line}\nnext\n"));
    let t = ReadFile::new().with_secrets(&[key.to_string()]);
    let out = env.call(&t, json!({"path": "k.txt"})).await;
    let marker = "[… truncated inside line 1; ask for start/end to read more]";
    assert_eq!(
        out,
        format!("{}[redacted]{}\n{marker}", "x".repeat(125), "y".repeat(5))
    );
    assert!(!out.contains("sk-live"), "{out}");
    // Whole lines: the key is replaced where it stands, lines still count.
    env.write("w.txt", format!("a {key} b\nsecond\n"));
    assert_eq!(
        env.call(&t, json!({"path": "w.txt", "numbered": true}))
            .await,
        "1\ta [redacted] b\n2\tsecond\n"
    );
}

#[tokio::test]
async fn failures_are_flagged_by_the_tool_not_guessed_from_text() {
    let env = Env::new();
    let t = tool();
    std::fs::create_dir(env.path("src")).unwrap();
    env.write("bin.dat", [0xff, 0xfe]);
    env.write("a.txt", "x\n");
    for args in [
        json!({"path": "gone.txt"}),
        json!({"path": "src"}),
        json!({"path": "bin.dat"}),
        json!({"path": "a.txt", "start": 5, "end": 2}),
        json!({"path": "a.txt", "start": "x"}),
    ] {
        assert!(env.outcome(&t, args.clone()).await.failed, "{args}");
    }
    // A file whose last line reads like a tool error is read fine.
    env.write("log.txt", "ok\n[error: 30s timeout exceeded]\n");
    let out = env.outcome(&t, json!({"path": "log.txt"})).await;
    assert_eq!(
        out,
        mm_tools::ToolOutput::ok("ok\n[error: 30s timeout exceeded]\n")
    );
}

#[tokio::test]
async fn start_past_the_end_is_a_failure_that_says_so() {
    let env = Env::new();
    env.write("a.txt", "1\n2\n");
    let out = env
        .outcome(&tool(), json!({"path": "a.txt", "start": 3}))
        .await;
    assert_eq!(
        out,
        mm_tools::ToolOutput::fail("start (3) is past the end of a.txt (2 lines)")
    );
    // The last line itself is fine.
    let out = env
        .outcome(&tool(), json!({"path": "a.txt", "start": 2}))
        .await;
    assert_eq!(out, mm_tools::ToolOutput::ok("2\n"));
}

#[tokio::test]
async fn numbers_and_booleans_may_come_as_strings() {
    let env = Env::new();
    env.write("a.txt", "a\nb\nc\nd\n");
    let t = tool();
    assert_eq!(
        env.call(
            &t,
            json!({"path": "a.txt", "start": "2", "end": " 3 ", "numbered": "true"})
        )
        .await,
        "2\tb\n3\tc"
    );
    assert_eq!(
        env.call(
            &t,
            json!({"path": "a.txt", "start": 4, "end": null, "numbered": "false"})
        )
        .await,
        "d\n"
    );
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "start": "two"})).await,
        "invalid arguments for read_file: expected a line number, got \"two\"; send a JSON object matching the tool's schema"
    );
    assert_eq!(
        env.call(&t, json!({"path": "a.txt", "numbered": "yes"}))
            .await,
        "invalid arguments for read_file: expected true or false, got \"yes\"; send a JSON object matching the tool's schema"
    );
}
