//! What the model sees, tested from the outside: the built `mm-repl -p`
//! against the mock model, one scripted tool call at a time, asserting on
//! the NEXT request the exact `tool` message the model received. Texts are
//! the exact ones the model must get (docs/reference/tools.md,
//! docs/design.md) and are compared byte for byte. lsp rows are covered
//! elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod contract_support;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{World, messages, wait_for};
use contract_support::*;
use mm_mock::{Reply, Step};
use mm_test_support::procs;
use serde_json::json;

fn bash(command: &str) -> (&'static str, String) {
    ("bash", args(json!({ "command": command })))
}

fn write(w: &World, rel: &str, content: &str) {
    put(&w.cwd, rel, content.as_bytes());
}

fn read(w: &World, rel: &str) -> String {
    std::fs::read_to_string(w.cwd.join(rel)).unwrap()
}

fn mode(w: &World, rel: &str) -> u32 {
    std::fs::metadata(w.cwd.join(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

// ───────────────────────────── bash ─────────────────────────────

#[test]
fn bash_output_is_exactly_what_the_command_printed() {
    let got = run_calls(
        &[
            bash("echo hi"),
            bash("printf '  a  b  '"),
            bash("true"),
            bash("printf '\\n\\n'"),
        ],
        "",
        |_| {},
    );
    assert_eq!(got, ["hi\n", "  a  b  ", "", "\n\n"]);
}

#[test]
fn bash_merges_stderr_into_stdout_in_arrival_order() {
    let got = one(
        "bash",
        args(json!({"command": "echo out; echo err >&2; echo out2; echo err2 >&2"})),
        "",
        |_| {},
    );
    assert_eq!(got, "out\nerr\nout2\nerr2\n");
}

#[test]
fn bash_non_zero_exit_suffix_goes_on_its_own_line() {
    let got = run_calls(
        &[
            bash("exit 5"),
            bash("echo out; exit 3"),
            bash("printf out; exit 3"),
            bash("echo oops >&2; false"),
        ],
        "",
        |_| {},
    );
    assert_eq!(
        got,
        [
            "[exit code: exit status 5]",
            "out\n[exit code: exit status 3]",
            "out\n[exit code: exit status 3]",
            "oops\n[exit code: exit status 1]",
        ]
    );
}

#[test]
fn bash_killed_by_a_signal_names_it() {
    let got = run_calls(
        &[bash("echo before; kill -KILL $$"), bash("kill -TERM $$")],
        "",
        |_| {},
    );
    assert_eq!(
        got,
        [
            "before\n[exit code: killed by signal 9 (SIGKILL)]",
            "[exit code: killed by signal 15 (SIGTERM)]",
        ]
    );
}

#[test]
fn bash_timeout_suffix_uses_the_configured_seconds() {
    let got = run_calls(
        &[
            bash("echo started; sleep 10.0101"),
            bash("printf partial; sleep 10.0101"),
            bash("sleep 10.0101"),
        ],
        "bashTimeout: 1\n",
        |_| {},
    );
    assert_eq!(
        got,
        [
            "started\n[error: 1s timeout exceeded]",
            "partial\n[error: 1s timeout exceeded]",
            "[error: 1s timeout exceeded]",
        ]
    );
    assert!(
        wait_for(Duration::from_secs(3), || procs::with_cmdline("10.0101")
            .is_empty()),
        "a timed-out command's process survived: {:?}",
        procs::with_cmdline("10.0101")
    );
}

#[test]
fn bash_is_a_new_bash_shell_per_call() {
    let w = world(
        &[
            bash("X=kept; cd /; echo \"[$X]\""),
            bash("echo \"[${X-}]\"; pwd"),
            bash("echo \"${BASH_VERSION:+bash}\""),
        ],
        "",
    );
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 3);
    assert_eq!(
        got,
        [
            "[kept]\n".to_owned(),
            format!("[]\n{}\n", w.cwd.display()),
            "bash\n".to_owned(),
        ],
        "neither a variable nor a cd carries over to the next call"
    );
}

#[test]
fn bash_runs_in_the_process_directory() {
    let w = world(&[bash("pwd"), bash("cat here.txt")], "");
    write(&w, "here.txt", "in the cwd\n");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 2);
    assert_eq!(got[0], format!("{}\n", w.cwd.display()));
    assert_eq!(got[1], "in the cwd\n");
}

#[test]
fn bash_stdin_is_dev_null() {
    let w = world(&[bash("readlink /proc/$$/fd/0"), bash("cat")], "");
    // mm-repl's own stdin carries text: the command must not see it.
    let run = ask_with_env(&w, &[], Some("LEAKED-STDIN\n"));
    run.assert_ok();
    let got = results(&w, &run, 2);
    assert_eq!(got, ["/dev/null\n", ""]);
}

#[test]
fn bash_environment_drops_provider_keys_and_sets_mm() {
    let command = "echo \"[${OPENAI_API_KEY-}|${ANTHROPIC_API_KEY-}|${GEMINI_API_KEY-}|${GOOGLE_API_KEY-}|${MM_TEST_KEY-}|${MM-}|${KEEP_ME-}]\"";
    let w = world(&[bash(command)], "apiKeyEnv: MM_TEST_KEY\n");
    let run = ask_with_env(
        &w,
        &[
            ("OPENAI_API_KEY", "openai-value-1"),
            ("ANTHROPIC_API_KEY", "anthropic-value-2"),
            ("GEMINI_API_KEY", "gemini-value-3"),
            ("GOOGLE_API_KEY", "google-value-4"),
            ("MM_TEST_KEY", "configured-value-5"),
            ("KEEP_ME", "kept"),
        ],
        None,
    );
    run.assert_ok();
    assert_eq!(results(&w, &run, 1), ["[|||||1|kept]\n"]);
}

#[test]
fn bash_output_that_is_not_utf8_is_decoded_lossily() {
    let got = one(
        "bash",
        args(json!({"command": "printf 'a\\377b\\n'"})),
        "",
        |_| {},
    );
    assert_eq!(got, "a\u{FFFD}b\n");
}

#[test]
fn bash_truncation_keeps_exact_halves_counted_in_characters() {
    // 200 lines of 5 characters (6 bytes: é is two): 1000 characters.
    let command = "for i in $(seq 1 200); do printf 'é%03d\\n' $i; done";
    let full: String = (1..=200).map(|i| format!("é{i:03}\n")).collect();
    let got = one(
        "bash",
        args(json!({ "command": command })),
        "maxOutput: 200\n",
        |_| {},
    );
    let (expected, head) = bash_truncation(&full, "", 200);
    // Designed so that the head ends a line: every reading of "joined by
    // one line" gives this same text.
    assert!(head.ends_with('\n'), "{head:?}");
    assert_eq!(got, expected);
    assert_eq!(got.chars().count(), 200);
    assert!(got.contains("[… 829 characters omitted …]\n"), "{got}");
}

#[test]
fn bash_truncation_never_cuts_the_suffix() {
    // 250 lines of 4 characters, then exit 3.
    let command = "for i in $(seq 1 250); do printf 'é%02x\\n' $i; done; exit 3";
    let full: String = (1..=250).map(|i| format!("é{i:02x}\n")).collect();
    let got = one(
        "bash",
        args(json!({ "command": command })),
        "maxOutput: 200\n",
        |_| {},
    );
    let suffix = "[exit code: exit status 3]";
    let (expected, head) = bash_truncation(&full, suffix, 200);
    assert!(head.ends_with('\n'), "{head:?}");
    assert_eq!(got, expected);
    assert!(got.ends_with("\n[exit code: exit status 3]"), "{got}");
    // The tail ends its line, so the suffix's newline is not spent.
    assert!(got.chars().count() <= 200, "{}", got.chars().count());
}

#[test]
fn bash_background_child_neither_hangs_nor_survives_the_call() {
    let check = "{ for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\"; echo; done; } 2>/dev/null | grep -c 'sleep 29[9][.]5' || true";
    let w = world(&[bash("sleep 299.5 & echo started"), bash(check)], "");
    let began = Instant::now();
    let run = ask(&w);
    run.assert_ok();
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "the call waited for its background child: {:?}",
        began.elapsed()
    );
    let got = results(&w, &run, 2);
    assert_eq!(got[0], "started\n");
    assert_eq!(got[1], "0\n", "the background sleep outlived its call");
}

#[test]
fn bash_terminal_display_previews_lines_or_no_output() {
    let w = world(
        &[bash("printf 'l1\\nl2\\nl3\\n'"), bash("true")],
        "previewLines: 2\n",
    );
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 2);
    assert_eq!(
        got,
        ["l1\nl2\nl3\n", ""],
        "the model never gets (no output)"
    );
    let err = &run.stderr;
    assert!(
        run.stderr_has_line("🛠️  bash: printf 'l1\\nl2\\nl3\\n'"),
        "{err}"
    );
    assert!(run.stderr_has_line("🛠️  bash: true"), "{err}");
    let indented = |word: &str| {
        err.lines()
            .any(|l| l.trim() == word && l.starts_with(char::is_whitespace))
    };
    assert!(indented("l1") && indented("l2"), "{err}");
    assert!(
        !err.lines().any(|l| l.trim() == "l3"),
        "previewLines: 2: {err}"
    );
    assert!(indented("(no output)"), "{err}");
}

#[test]
fn max_output_below_200_is_a_configuration_error() {
    let w = world(&[bash("echo hi")], "maxOutput: 199\n");
    let run = ask(&w);
    run.assert_stopped();
    assert!(run.stderr.contains("maxOutput"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&w.config_file().display().to_string()),
        "names the file: {}",
        run.stderr
    );
    assert!(w.chats().is_empty(), "no request with a bad setting");
}

// ─────────────────────────── read_file ───────────────────────────

fn read_file(v: serde_json::Value) -> (&'static str, String) {
    ("read_file", args(v))
}

#[test]
fn read_file_line_ranges_keep_the_final_newline_only_at_the_end() {
    let got = run_calls(
        &[
            read_file(json!({"path": "a.txt"})),
            read_file(json!({"path": "a.txt", "start": 2, "end": 2})),
            read_file(json!({"path": "a.txt", "start": 2})),
            read_file(json!({"path": "a.txt", "end": 2})),
            read_file(json!({"path": "a.txt", "start": 0, "end": 0})),
            read_file(json!({"path": "b.txt"})),
            read_file(json!({"path": "sub/c.txt", "start": 3, "end": 3})),
        ],
        "",
        |w| {
            write(w, "a.txt", "one\ntwo\nthree\n");
            write(w, "b.txt", "x\ny");
            write(w, "sub/c.txt", "1\n2\n3\n");
        },
    );
    assert_eq!(
        got,
        [
            "one\ntwo\nthree\n",
            "two",
            "two\nthree\n",
            "one\ntwo",
            "one\ntwo\nthree\n",
            "x\ny",
            "3\n",
        ]
    );
}

#[test]
fn read_file_numbered_lines_are_number_tab_line() {
    let got = run_calls(
        &[
            read_file(json!({"path": "a.txt", "numbered": true})),
            read_file(json!({"path": "a.txt", "start": 2, "end": 3, "numbered": true})),
            read_file(json!({"path": "a.txt", "start": 1, "end": 2, "numbered": true})),
        ],
        "",
        |w| write(w, "a.txt", "one\ntwo\nthree\n"),
    );
    assert_eq!(
        got,
        [
            "1\tone\n2\ttwo\n3\tthree\n",
            "2\ttwo\n3\tthree\n",
            "1\tone\n2\ttwo",
        ]
    );
}

#[test]
fn read_file_refusals_use_the_path_as_given() {
    let got = run_calls(
        &[
            read_file(json!({"path": "missing.txt"})),
            read_file(json!({"path": "./sub/../gone.txt"})),
            read_file(json!({"path": "sub"})),
            read_file(json!({"path": "bin.dat"})),
            read_file(json!({"path": "a.txt", "start": 3, "end": 2})),
        ],
        "",
        |w| {
            write(w, "a.txt", "one\ntwo\nthree\n");
            std::fs::create_dir_all(w.cwd.join("sub")).unwrap();
            put(&w.cwd, "bin.dat", &[0xff, 0xfe, 0x00, 0x01, 0x02]);
        },
    );
    assert_eq!(
        got,
        [
            "missing.txt does not exist. Create it with write_file",
            "./sub/../gone.txt does not exist. Create it with write_file",
            "sub is a directory",
            "bin.dat is not a text file (5 bytes)",
            "start (3) is after end (2)",
        ]
    );
}

/// read_file's cut (docs/reference/tools.md#what-the-model-sees): whole
/// lines from `first` are kept, then the marker line, all within `max` (as
/// many lines as fit).
fn read_truncation(lines: &[String], first: usize, total: usize, max: usize) -> String {
    let marker = |b: usize| {
        format!("[… truncated: lines {first}–{b} of {total} shown; ask for start/end to read more]")
    };
    let mut best = None;
    for k in 1..=lines.len() {
        let kept: usize = lines[..k].iter().map(|l| l.chars().count()).sum();
        if kept + marker(first + k - 1).chars().count() <= max {
            best = Some(k);
        }
    }
    let k = best.expect("at least one line fits");
    format!("{}{}", lines[..k].concat(), marker(first + k - 1))
}

#[test]
fn read_file_truncates_on_whole_lines_with_the_marker() {
    let lines: Vec<String> = (1..=30)
        .map(|i| format!("line {i:02} of the file\n"))
        .collect();
    let numbered: Vec<String> = (5..=30)
        .map(|i| format!("{i}\tline {i:02} of the file\n"))
        .collect();
    let got = run_calls(
        &[
            read_file(json!({"path": "long.txt"})),
            read_file(json!({"path": "long.txt", "start": 5, "numbered": true})),
        ],
        "maxOutput: 200\n",
        |w| write(w, "long.txt", &lines.concat()),
    );
    let expected = read_truncation(&lines, 1, 30, 200);
    assert!(
        expected.ends_with("[… truncated: lines 1–6 of 30 shown; ask for start/end to read more]"),
        "{expected}"
    );
    assert_eq!(got[0], expected);
    assert_eq!(got[1], read_truncation(&numbered, 5, 30, 200));
    assert!(got.iter().all(|g| g.chars().count() <= 200));
}

#[test]
fn read_file_cuts_a_first_line_that_does_not_fit() {
    let long = "x".repeat(500);
    let got = one(
        "read_file",
        args(json!({"path": "wide.txt"})),
        "maxOutput: 200\n",
        |w| write(w, "wide.txt", &format!("{long}\nshort\n")),
    );
    let marker = "\n[… truncated inside line 1; ask for start/end to read more]";
    assert!(got.ends_with(marker), "{got}");
    let head = &got[..got.len() - marker.len()];
    assert!(!head.is_empty() && long.starts_with(head), "{got}");
    assert!(got.chars().count() <= 200, "{}", got.chars().count());
}

// ─────────────────────────── write_file ──────────────────────────

fn write_file(path: &str, content: &str) -> (&'static str, String) {
    (
        "write_file",
        args(json!({"path": path, "content": content})),
    )
}

/// The headline, then the diff.
fn split_headline(output: &str) -> (&str, &str) {
    output.split_once('\n').unwrap_or((output, ""))
}

#[test]
fn write_file_creates_parents_and_says_created() {
    let w = world(&[write_file("deep/er/new.txt", "a\nb\n")], "");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 1).remove(0);
    let (headline, diff) = split_headline(&got);
    assert_eq!(headline, "created deep/er/new.txt (2 lines)");
    assert!(
        diff.lines().any(|l| l.starts_with('+') && l.ends_with('a'))
            && diff.lines().any(|l| l.starts_with('+') && l.ends_with('b')),
        "the diff of a new file adds its lines: {got}"
    );
    assert_eq!(read(&w, "deep/er/new.txt"), "a\nb\n");
}

#[test]
fn write_file_replaces_and_counts_lines() {
    let w = world(&[write_file("x.txt", "a\nc\nd\n")], "");
    write(&w, "x.txt", "a\nb\n");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 1).remove(0);
    let (headline, diff) = split_headline(&got);
    assert_eq!(headline, "wrote x.txt: +2 -1 lines");
    assert!(
        diff.lines().any(|l| l.starts_with('-') && l.ends_with('b')),
        "{got}"
    );
    assert!(
        diff.lines().any(|l| l.starts_with('+') && l.ends_with('c')),
        "{got}"
    );
    assert_eq!(read(&w, "x.txt"), "a\nc\nd\n");
}

#[test]
fn write_file_identical_content_writes_nothing() {
    let w = world(&[write_file("same.txt", "same\n")], "");
    write(&w, "same.txt", "same\n");
    let old = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(w.cwd.join("same.txt"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let run = ask(&w);
    run.assert_ok();
    assert_eq!(
        results(&w, &run, 1),
        ["same.txt unchanged: the content is identical, nothing written"]
    );
    let mtime: SystemTime = std::fs::metadata(w.cwd.join("same.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(mtime, old, "nothing may be written");
}

#[test]
fn write_file_writes_verbatim_and_keeps_the_mode() {
    let w = world(
        &[
            write_file("v.txt", "\u{feff}a\r\nb\r\n"),
            write_file("run.sh", "#!/bin/sh\necho b\n"),
        ],
        "",
    );
    write(&w, "run.sh", "#!/bin/sh\necho a\n");
    std::fs::set_permissions(w.cwd.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 2);
    assert_eq!(split_headline(&got[0]).0, "created v.txt (2 lines)");
    assert_eq!(split_headline(&got[1]).0, "wrote run.sh: +1 -1 lines");
    assert_eq!(
        std::fs::read(w.cwd.join("v.txt")).unwrap(),
        "\u{feff}a\r\nb\r\n".as_bytes(),
        "no line-ending or BOM conversion"
    );
    assert_eq!(read(&w, "run.sh"), "#!/bin/sh\necho b\n");
    assert_eq!(mode(&w, "run.sh"), 0o755);
}

#[test]
fn write_file_and_edit_file_refuse_a_file_that_is_not_utf8() {
    let bytes = [b'a', 0xff, 0xfe, b'\n'];
    let w = world(
        &[
            write_file("bin.dat", "text\n"),
            (
                "edit_file",
                args(json!({"path": "bin.dat", "edits": [{"old": "a", "new": "b"}]})),
            ),
        ],
        "",
    );
    put(&w.cwd, "bin.dat", &bytes);
    let run = ask(&w);
    run.assert_ok();
    let text = "bin.dat is not UTF-8 text; write_file and edit_file only write text";
    assert_eq!(results(&w, &run, 2), [text, text]);
    assert_eq!(std::fs::read(w.cwd.join("bin.dat")).unwrap(), bytes);
}

// ─────────────────────────── edit_file ───────────────────────────

fn edit(path: &str, edits: serde_json::Value) -> (&'static str, String) {
    ("edit_file", args(json!({"path": path, "edits": edits})))
}

#[test]
fn edit_file_applies_and_reports_the_headline() {
    let w = world(
        &[
            edit("f.txt", json!([{"old": "two", "new": "TWO"}])),
            edit(
                "g.txt",
                json!([{"old": "four", "new": "4"}, {"old": "two", "new": "2\n2b"}]),
            ),
            edit("h.txt", json!([{"old": "drop\n", "new": ""}])),
        ],
        "",
    );
    write(&w, "f.txt", "one\ntwo\nthree\n");
    write(&w, "g.txt", "one\ntwo\nthree\nfour\n");
    write(&w, "h.txt", "keep\ndrop\nkeep2\n");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 3);
    let heads: Vec<&str> = got.iter().map(|g| split_headline(g).0).collect();
    assert_eq!(
        heads,
        [
            "edited f.txt: 1 edit(s), +1 -1 lines, first change at line 2",
            "edited g.txt: 2 edit(s), +3 -2 lines, first change at line 2",
            "edited h.txt: 1 edit(s), +0 -1 lines, first change at line 2",
        ]
    );
    // The diff with line numbers (in its hunk headers) and the lines.
    let diff = split_headline(&got[0]).1;
    assert!(
        diff.lines()
            .any(|l| l.starts_with("@@") && l.chars().any(|c| c.is_ascii_digit())),
        "{diff}"
    );
    assert!(diff.lines().any(|l| l == "-two"), "{diff}");
    assert!(diff.lines().any(|l| l == "+TWO"), "{diff}");
    assert_eq!(read(&w, "f.txt"), "one\nTWO\nthree\n");
    assert_eq!(read(&w, "g.txt"), "one\n2\n2b\nthree\n4\n");
    assert_eq!(read(&w, "h.txt"), "keep\nkeep2\n");
}

#[test]
fn edit_file_not_found_and_ambiguous_write_nothing() {
    let w = world(
        &[
            edit("f.txt", json!([{"old": "absent", "new": "x"}])),
            edit("f.txt", json!([{"old": "x = 1", "new": "x = 2"}])),
            edit("g.txt", json!([{"old": "aa", "new": "b"}])),
        ],
        "",
    );
    write(&w, "f.txt", "a\nx = 1\nb\nx = 1\n");
    write(&w, "g.txt", "aa b aa\nc\naa\n");
    let run = ask(&w);
    run.assert_ok();
    assert_eq!(
        results(&w, &run, 3),
        [
            "old text not found in f.txt",
            "old text appears 2 times (lines 2, 4) — to change ONE of them, include its surrounding lines in old until the text is unique; to change several, send one edit per place.",
            // Two occurrences on line 1: each line is listed once.
            "old text appears 3 times (lines 1, 3) — to change ONE of them, include its surrounding lines in old until the text is unique; to change several, send one edit per place.",
        ]
    );
    assert_eq!(read(&w, "f.txt"), "a\nx = 1\nb\nx = 1\n");
    assert_eq!(read(&w, "g.txt"), "aa b aa\nc\naa\n");
}

#[test]
fn edit_file_overlap_nest_and_repeat_are_refused() {
    let w = world(
        &[
            edit(
                "f.txt",
                json!([{"old": "abcd", "new": "X"}, {"old": "cdef", "new": "Y"}]),
            ),
            edit(
                "f.txt",
                json!([{"old": "abcdef", "new": "X"}, {"old": "cd", "new": "Y"}]),
            ),
            edit(
                "f.txt",
                json!([{"old": "abc", "new": "X"}, {"old": "abc", "new": "Y"}]),
            ),
        ],
        "",
    );
    write(&w, "f.txt", "abcdef\n");
    let run = ask(&w);
    run.assert_ok();
    assert_eq!(
        results(&w, &run, 3),
        [
            "edits 1 and 2 overlap in f.txt",
            "edits 1 and 2 nest in f.txt",
            "edits 1 and 2 repeat the same text in f.txt",
        ]
    );
    assert_eq!(read(&w, "f.txt"), "abcdef\n");
}

#[test]
fn edit_file_several_refusals_are_prefixed_and_ordered() {
    let amb = "old text appears 2 times (lines 2, 4) — to change ONE of them, include its surrounding lines in old until the text is unique; to change several, send one edit per place.";
    let w = world(
        &[
            edit(
                "f.txt",
                json!([
                    {"old": "zzz", "new": "a"},
                    {"old": "one", "new": "ONE"},
                    {"old": "dup", "new": "b"}
                ]),
            ),
            edit(
                "f.txt",
                json!([
                    {"old": "nope", "new": ""},
                    {"old": "one\ndup", "new": "x"},
                    {"old": "dup\ntwo", "new": "y"}
                ]),
            ),
            edit(
                "f.txt",
                json!([
                    {"old": "one\ndup", "new": "x"},
                    {"old": "missing", "new": ""},
                    {"old": "dup\ntwo", "new": "y"}
                ]),
            ),
            edit(
                "f.txt",
                json!([{"old": "one", "new": "1"}, {"old": "", "new": "x"}]),
            ),
            // One good edit and one refused: nothing is written.
            edit(
                "f.txt",
                json!([{"old": "two", "new": "2"}, {"old": "absent", "new": "x"}]),
            ),
        ],
        "",
    );
    write(&w, "f.txt", "one\ndup\ntwo\ndup\n");
    let run = ask(&w);
    run.assert_ok();
    assert_eq!(
        results(&w, &run, 5),
        [
            format!("edit 1: old text not found in f.txt\nedit 3: {amb}"),
            "edit 1: old text not found in f.txt\nedits 2 and 3 overlap in f.txt".to_owned(),
            "edits 1 and 3 overlap in f.txt\nedit 2: old text not found in f.txt".to_owned(),
            "edit 2: old text is empty; give the exact text to replace".to_owned(),
            "edit 2: old text not found in f.txt".to_owned(),
        ]
    );
    assert_eq!(read(&w, "f.txt"), "one\ndup\ntwo\ndup\n");
}

#[test]
fn edit_file_edits_resolve_against_the_original_never_in_cascade() {
    let w = world(
        &[edit(
            "f.txt",
            json!([{"old": "a", "new": "b"}, {"old": "b", "new": "c"}]),
        )],
        "",
    );
    write(&w, "f.txt", "a\nb\n");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 1).remove(0);
    let headline = split_headline(&got).0;
    assert!(
        headline.starts_with("edited f.txt: 2 edit(s), +")
            && headline.ends_with(" lines, first change at line 1"),
        "{got}"
    );
    assert_eq!(read(&w, "f.txt"), "b\nc\n");
}

#[test]
fn edit_file_missing_file_empty_edits_and_empty_old() {
    let got = run_calls(
        &[
            edit("nofile.txt", json!([{"old": "a", "new": "b"}])),
            edit("f.txt", json!([])),
            edit("f.txt", json!([{"old": "", "new": "x"}])),
        ],
        "",
        |w| write(w, "f.txt", "one\n"),
    );
    assert_eq!(
        got,
        [
            "nofile.txt does not exist. Create it with write_file",
            "no edits given",
            "old text is empty; give the exact text to replace",
        ]
    );
}

#[test]
fn edit_file_dry_run_answers_dry_run_and_writes_nothing() {
    let w = world(
        &[
            (
                "edit_file",
                args(
                    json!({"path": "f.txt", "edits": [{"old": "two", "new": "2"}], "dry_run": true}),
                ),
            ),
            edit("f.txt", json!([{"old": "two", "new": "2"}])),
        ],
        "",
    );
    write(&w, "f.txt", "one\ntwo\n");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 2);
    // The real edit found `two` again: the dry run wrote nothing.
    assert!(
        got[1].starts_with("edited f.txt: 1 edit(s), +1 -1 lines, first change at line 2\n"),
        "{}",
        got[1]
    );
    assert_eq!(got[0], format!("dry run: {}", got[1]));
    assert_eq!(read(&w, "f.txt"), "one\n2\n");
}

#[test]
fn edit_file_keeps_crlf_bom_mode_and_symlinks() {
    let w = world(
        &[
            edit("crlf.txt", json!([{"old": "one\ntwo", "new": "1\n2"}])),
            edit("bom.txt", json!([{"old": "world", "new": "earth"}])),
            edit("mode.sh", json!([{"old": "echo a", "new": "echo b"}])),
            edit("link.txt", json!([{"old": "old", "new": "new"}])),
        ],
        "",
    );
    write(&w, "crlf.txt", "one\r\ntwo\r\nthree\r\n");
    write(&w, "bom.txt", "\u{feff}hello\nworld\n");
    write(&w, "mode.sh", "#!/bin/sh\necho a\n");
    std::fs::set_permissions(
        w.cwd.join("mode.sh"),
        std::fs::Permissions::from_mode(0o754),
    )
    .unwrap();
    write(&w, "target.txt", "old\n");
    symlink("target.txt", w.cwd.join("link.txt")).unwrap();
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, 4);
    for g in &got {
        assert!(g.starts_with("edited "), "{got:#?}");
    }
    assert_eq!(read(&w, "crlf.txt"), "1\r\n2\r\nthree\r\n");
    assert_eq!(read(&w, "bom.txt"), "\u{feff}hello\nearth\n");
    assert_eq!(mode(&w, "mode.sh"), 0o754);
    assert_eq!(read(&w, "mode.sh"), "#!/bin/sh\necho b\n");
    let link = w.cwd.join("link.txt");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        std::path::PathBuf::from("target.txt")
    );
    assert_eq!(read(&w, "target.txt"), "new\n");
}

// ─────────────────────────── read_skill ──────────────────────────

fn skills(w: &World) {
    let dir = skills_dir(w);
    put(
        &dir,
        "alpha.md",
        b"---\nname: alpha\ndescription: Does the alpha thing\n---\n# Alpha\nBody A\n",
    );
    put(
        &dir,
        "beta/SKILL.md",
        b"# Beta\n\nFirst line of beta.\nMore.\n",
    );
    put(&dir, "gamma.md", b"# Gamma only heading\n");
    put(&dir, "delta.md", b"Flat delta.\n");
    put(&dir, "delta/SKILL.md", b"Folder delta.\n");
    put(&dir, "notes.txt", b"not a skill\n");
    // Outside the folder: never reachable by name.
    put(&w.user.path().join("config/mm"), "outside.md", b"outside\n");
}

fn read_skill(name: &str) -> (&'static str, String) {
    ("read_skill", args(json!({ "name": name })))
}

#[test]
fn read_skill_is_declared_with_its_catalogue_only_when_skills_exist() {
    let w = World::new(vec![Reply::text("hi")], "");
    skills(&w);
    ask(&w).assert_ok();
    let first = &w.chats()[0];
    let decl = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "read_skill")
        .unwrap_or_else(|| panic!("read_skill not declared: {:?}", tool_names(first)))
        .clone();
    let description = decl["function"]["description"].as_str().unwrap();
    assert!(
        description.ends_with(
            "\n  alpha — Does the alpha thing\n  beta — First line of beta.\n  delta — Flat delta.\n  gamma"
        ),
        "{description}"
    );

    // A folder with no `<name>.md` or `<name>/SKILL.md`: not declared.
    let w = World::new(vec![Reply::text("hi")], "");
    put(&skills_dir(&w), "notes.txt", b"not a skill\n");
    ask(&w).assert_ok();
    assert_eq!(
        tool_names(&w.chats()[0]),
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "grep",
            "glob",
            "job_output",
            "job_kill",
            "web_fetch",
            "todo",
            "task"
        ]
    );
}

#[test]
fn read_skill_returns_the_full_markdown_flat_file_first() {
    let got = run_calls(
        &[read_skill("alpha"), read_skill("beta"), read_skill("delta")],
        "",
        skills,
    );
    assert_eq!(
        got,
        [
            "---\nname: alpha\ndescription: Does the alpha thing\n---\n# Alpha\nBody A\n",
            "# Beta\n\nFirst line of beta.\nMore.\n",
            "Flat delta.\n",
        ]
    );
}

#[test]
fn read_skill_unknown_names_and_only_the_base_name_is_used() {
    let got = run_calls(
        &[
            read_skill("x"),
            read_skill("../outside"),
            read_skill("sub/dir/alpha"),
        ],
        "",
        skills,
    );
    assert_eq!(
        got,
        [
            "No skill named \"x\". Available skills: alpha, beta, delta, gamma",
            "No skill named \"outside\". Available skills: alpha, beta, delta, gamma",
            "---\nname: alpha\ndescription: Does the alpha thing\n---\n# Alpha\nBody A\n",
        ]
    );
}

#[test]
fn read_skill_terminal_line_does_not_echo_the_content() {
    let w = world(&[read_skill("alpha")], "");
    skills(&w);
    let run = ask(&w);
    run.assert_ok();
    assert!(
        run.stderr_has_line("📖 read_skill: alpha"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Body A"), "{}", run.stderr);
    assert!(!run.stdout.contains("Body A"), "{}", run.stdout);
}

#[test]
fn read_skill_is_truncated_to_max_output() {
    let body: String = (0..100)
        .map(|i| format!("step {i:03} of the long skill\n"))
        .collect();
    let got = one(
        "read_skill",
        args(json!({"name": "long"})),
        "maxOutput: 200\n",
        |w| {
            put(&skills_dir(w), "long.md", body.as_bytes());
        },
    );
    assert!(got.chars().count() <= 200, "{}", got.chars().count());
    assert!(got.chars().count() >= 150, "cut far below maxOutput: {got}");
    let start: String = body.chars().take(40).collect();
    assert!(got.starts_with(&start), "{got}");
    assert_ne!(got, body);
}

// ──────────────────── unknown tool, bad arguments ────────────────────

#[test]
fn unknown_tool_names_the_sorted_available_tools() {
    let got = one("nope", "{}".into(), "", |_| {});
    assert_eq!(
        got,
        "unknown tool \"nope\"; available tools: bash, edit_file, glob, grep, job_kill, job_output, read_file, task, todo, web_fetch, write_file"
    );
    let got = one("nope", "{}".into(), "", skills);
    assert_eq!(
        got,
        "unknown tool \"nope\"; available tools: bash, edit_file, glob, grep, job_kill, job_output, read_file, read_skill, task, todo, web_fetch, write_file"
    );
}

#[test]
fn undeclared_tools_are_unknown() {
    let w = world(&[bash("touch ran")], "bashTool: false\n");
    let run = ask(&w);
    run.assert_ok();
    assert_eq!(
        tool_names(&w.chats()[0]),
        [
            "read_file",
            "write_file",
            "edit_file",
            "grep",
            "glob",
            "web_fetch",
            "todo",
            "task"
        ]
    );
    assert_eq!(
        results(&w, &run, 1),
        [
            "unknown tool \"bash\"; available tools: edit_file, glob, grep, read_file, task, todo, web_fetch, write_file"
        ]
    );
    assert!(!w.cwd.join("ran").exists());

    let w = world(&[read_file(json!({"path": "a.txt"}))], "editTools: false\n");
    let run = ask(&w);
    run.assert_ok();
    assert_eq!(
        tool_names(&w.chats()[0]),
        [
            "bash",
            "job_output",
            "job_kill",
            "web_fetch",
            "todo",
            "task"
        ]
    );
    assert_eq!(
        results(&w, &run, 1),
        [
            "unknown tool \"read_file\"; available tools: bash, job_kill, job_output, task, todo, web_fetch"
        ]
    );
}

#[test]
fn bad_arguments_get_the_invalid_arguments_sentence() {
    let list = [
        ("bash", "[1,2]".to_owned(), ""),
        ("bash", "{\"command\": ".to_owned(), ""),
        ("bash", "{}".to_owned(), "command"),
        ("bash", args(json!({"command": 5})), ""),
        ("read_file", "{}".to_owned(), "path"),
        ("write_file", args(json!({"path": "w.txt"})), "content"),
        ("edit_file", args(json!({"path": "f.txt"})), "edits"),
    ];
    let calls: Vec<(&str, String)> = list.iter().map(|(t, a, _)| (*t, a.clone())).collect();
    let w = world(&calls, "");
    write(&w, "f.txt", "one\n");
    let run = ask(&w);
    run.assert_ok();
    let got = results(&w, &run, list.len());
    for ((tool, arguments, field), text) in list.iter().zip(&got) {
        let start = format!("invalid arguments for {tool}: ");
        assert!(
            text.starts_with(&start) && text.ends_with(INVALID_END),
            "{tool} {arguments}: {text}"
        );
        let what = &text[start.len()..text.len() - INVALID_END.len()];
        assert!(!what.trim().is_empty(), "{text}");
        assert!(
            what.contains(field),
            "{tool} {arguments}: names {field}: {text}"
        );
    }
    assert!(!w.cwd.join("w.txt").exists());
    assert_eq!(read(&w, "f.txt"), "one\n");
}

#[test]
fn several_calls_of_one_reply_run_in_order_and_answer_in_order() {
    let w = World::new(
        vec![
            calls(&[
                (
                    "c1",
                    "write_file",
                    &args(json!({"path": "o.txt", "content": "first\n"})),
                ),
                (
                    "c2",
                    "bash",
                    &args(json!({"command": "cat o.txt; echo second >> o.txt"})),
                ),
                ("c3", "read_file", &args(json!({"path": "o.txt"}))),
            ]),
            Reply::text("done"),
        ],
        "",
    );
    let run = ask(&w);
    run.assert_ok();
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    let got = tool_messages(&chats[1]);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    assert_eq!(split_headline(&got[0].1).0, "created o.txt (1 lines)");
    assert_eq!(got[1].1, "first\n");
    assert_eq!(got[2].1, "first\nsecond\n");
}

// ───────────────────────── counters, keys ─────────────────────────

#[test]
fn the_recap_line_lists_the_non_zero_counters() {
    let w = world(
        &[
            bash("echo a"),
            bash("echo b"),
            read_file(json!({"path": "f.txt"})),
            write_file("g.txt", "g\n"),
            edit("f.txt", json!([{"old": "one", "new": "1"}])),
            read_skill("alpha"),
        ],
        "",
    );
    write(&w, "f.txt", "one\n");
    skills(&w);
    let run = ask(&w);
    run.assert_ok();
    assert!(
        run.stderr_has_line("⚙ 2 command(s)  📝 3 file op(s)  📖 1 skill(s)"),
        "{}",
        run.stderr
    );

    let w = world(&[read_file(json!({"path": "f.txt"}))], "");
    write(&w, "f.txt", "one\n");
    let run = ask(&w);
    run.assert_ok();
    assert!(run.stderr_has_line("📝 1 file op(s)"), "{}", run.stderr);
    assert!(!run.stderr.contains("command(s)"), "{}", run.stderr);
}

const KEY: &str = "sk-contract-0123456789abcdefghijklmnopqrstuvwxyz-0123456789";

#[test]
fn keys_are_redacted_in_every_tool_result_and_never_stored() {
    let w = world(
        &[
            bash("printf '%s\\n' \"$KEY_COPY\""),
            read_file(json!({"path": "notes.txt"})),
            read_skill("secret"),
            write_file("out.txt", &format!("k={KEY}\n")),
            edit("notes.txt", json!([{"old": "key=", "new": "k2="}])),
        ],
        "apiKeyEnv: MM_TEST_KEY\n",
    );
    write(&w, "notes.txt", &format!("key={KEY}\n"));
    put(
        &skills_dir(&w),
        "secret.md",
        format!("token: {KEY}\n").as_bytes(),
    );
    let run = ask_with_env(&w, &[("MM_TEST_KEY", KEY), ("KEY_COPY", KEY)], None);
    run.assert_ok();
    // The key is one mm holds: it went to the provider.
    assert_eq!(
        w.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let got = results(&w, &run, 5);
    assert_eq!(got[0], "[redacted]\n");
    assert_eq!(got[1], "key=[redacted]\n");
    assert_eq!(got[2], "token: [redacted]\n");
    assert!(
        got[3].starts_with("created out.txt (1 lines)\n"),
        "{}",
        got[3]
    );
    assert!(got[3].contains("k=[redacted]"), "{}", got[3]);
    assert!(got[4].starts_with("edited notes.txt: "), "{}", got[4]);
    assert!(got[4].contains("[redacted]"), "{}", got[4]);
    // No tool result sent or stored holds the key (the model's own call
    // arguments to write_file do, and are not a tool result).
    for chat in w.chats() {
        for (id, content) in tool_messages(&chat) {
            assert!(
                !content.contains(KEY),
                "the result of {id} was sent with the key"
            );
        }
    }
    let stored = session_tool_results(&w);
    assert_eq!(stored.len(), 5, "{stored:?}");
    for content in stored {
        assert!(
            !content.contains(KEY),
            "a stored result holds the key: {content}"
        );
    }
    // write_file itself writes verbatim.
    assert_eq!(read(&w, "out.txt"), format!("k={KEY}\n"));
}

#[test]
fn redaction_happens_before_truncation() {
    // 5 lines of the key: 305 characters raw, 55 once redacted.
    let raw = format!("{KEY}\n").repeat(5);
    assert!(raw.chars().count() > 200);
    let w = world(
        &[
            bash("for i in 1 2 3 4 5; do printf '%s\\n' \"$KEY_COPY\"; done"),
            read_file(json!({"path": "five.txt"})),
            read_skill("five"),
        ],
        "apiKeyEnv: MM_TEST_KEY\nmaxOutput: 200\n",
    );
    write(&w, "five.txt", &raw);
    put(&skills_dir(&w), "five.md", raw.as_bytes());
    let run = ask_with_env(&w, &[("MM_TEST_KEY", KEY), ("KEY_COPY", KEY)], None);
    run.assert_ok();
    let whole = "[redacted]\n".repeat(5);
    let got = results(&w, &run, 3);
    assert_eq!(
        got,
        [whole.clone(), whole.clone(), whole],
        "bash, read_file, read_skill"
    );
}

// ───────────────────── permissions without a TTY ─────────────────────

#[test]
fn ask_mode_without_a_terminal_rejects_with_the_texts() {
    let w = world(
        &[
            bash("touch made-it"),
            write_file("new.txt", "x\n"),
            edit("f.txt", json!([{"old": "keep", "new": "changed"}])),
            read_file(json!({"path": "f.txt"})),
        ],
        "permissions: ask\n",
    );
    write(&w, "f.txt", "keep\n");
    let run = ask(&w);
    // Nobody was asked, so nobody rejected: the model is told why the calls
    // did not run (decision 8's texts are for a user's rejection), and the
    // run exits 4 (decision 45).
    assert_eq!(run.code(), Some(4), "{}", run.stderr);
    let not_run = "[not run: this call needs permission and there is no terminal to ask; use --permissions or an allow rule]";
    assert_eq!(results(&w, &run, 4), [not_run, not_run, not_run, "keep\n"]);
    assert!(!w.cwd.join("made-it").exists());
    assert!(!w.cwd.join("new.txt").exists());
    assert_eq!(read(&w, "f.txt"), "keep\n");
}

// ───────────────────────── loop detection ─────────────────────────

#[test]
fn loop_detected_is_appended_to_the_third_identical_call_and_nothing_stops() {
    let got = run_calls(
        &[
            bash("echo same"),
            // Spacing cannot hide a repeat: the input is canonical JSON.
            ("bash", "{ \"command\" :  \"echo same\" }".to_owned()),
            bash("echo same"),
            bash("echo other"),
        ],
        "",
        |_| {},
    );
    assert_eq!(
        got,
        [
            "same\n".to_owned(),
            "same\n".to_owned(),
            format!("same\n{LOOP_DETECTED}"),
            "other\n".to_owned(),
        ]
    );
}

#[test]
fn loop_count_starts_again_after_a_different_call_or_output() {
    let a = || bash("echo same");
    let got = run_calls(&[a(), a(), bash("echo other"), a(), a(), a()], "", |_| {});
    assert_eq!(
        got,
        [
            "same\n".to_owned(),
            "same\n".to_owned(),
            "other\n".to_owned(),
            "same\n".to_owned(),
            "same\n".to_owned(),
            format!("same\n{LOOP_DETECTED}"),
        ]
    );
    // Same tool and input, different output: not a repeat.
    let c = || bash("echo x >> n.log; wc -l < n.log");
    let got = run_calls(&[c(), c(), c()], "", |_| {});
    assert_eq!(got, ["1\n", "2\n", "3\n"]);
}

#[test]
fn the_sixth_identical_call_stops_the_turn_and_is_recorded() {
    let a = args(json!({"path": "f.txt", "edits": [{"old": "nope", "new": "x"}]}));
    // The same call with its keys in another order.
    let b = "{\"edits\":[{\"new\":\"x\",\"old\":\"nope\"}],\"path\":\"f.txt\"}".to_owned();
    let touch = args(json!({"command": "touch not-run.txt"}));
    let mut script = vec![
        call("c1", "edit_file", &a),
        call("c2", "edit_file", &b),
        call("c3", "edit_file", &a),
        call("c4", "edit_file", &b),
        call("c5", "edit_file", &a),
        calls(&[("c6", "edit_file", &b), ("c7", "bash", &touch)]),
    ];
    script.push(Reply::text("after the stop"));
    let w = World::new(script, "");
    write(&w, "f.txt", "content\n");
    let run = ask(&w);
    run.assert_stopped();
    let stop = stop_sentence("edit_file");
    assert!(run.stderr.contains(&stop), "{}", run.stderr);
    let chats = w.chats();
    assert_eq!(chats.len(), 6, "no request after the stop");
    let not_found = "old text not found in f.txt";
    for (i, chat) in chats.iter().enumerate().skip(1) {
        let expected = if i < 3 {
            not_found.to_owned()
        } else {
            format!("{not_found}\n{LOOP_DETECTED}")
        };
        assert_eq!(result_of(chat, &format!("c{i}")), expected, "call {i}");
    }
    assert!(!w.cwd.join("not-run.txt").exists());

    let sessions = session_files(&w);
    let errors: Vec<&serde_json::Value> = sessions
        .iter()
        .filter_map(|s| s["errors"].as_array())
        .flatten()
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e["where"] == "generation" && e["message"] == stop.as_str()),
        "errors: {errors:?}"
    );

    // The history kept everything that ran, and a result for every call.
    let again = continue_session(&w);
    again.assert_ok();
    let next = &w.chats()[6];
    for i in 1..=5 {
        let expected = if i < 3 {
            not_found.to_owned()
        } else {
            format!("{not_found}\n{LOOP_DETECTED}")
        };
        assert_eq!(result_of(next, &format!("c{i}")), expected, "kept call {i}");
    }
    assert_eq!(result_of(next, "c6"), format!("{not_found}\n{stop}"));
    assert_eq!(result_of(next, "c7"), NOT_RUN);
    assert!(!w.cwd.join("not-run.txt").exists());
}

#[test]
fn the_loop_stop_names_the_tool_keeps_failing_and_the_call_ran() {
    let same = args(json!({"command": "echo x >> ran.log; echo same"}));
    let mut script: Vec<Reply> = (1..=6)
        .map(|i| call(&format!("c{i}"), "bash", &same))
        .collect();
    script.push(Reply::text("after the stop"));
    let w = World::new(script, "");
    let run = ask(&w);
    run.assert_stopped();
    assert_eq!(w.chats().len(), 6);
    assert_eq!(read(&w, "ran.log"), "x\n".repeat(6), "the sixth call ran");
    continue_session(&w).assert_ok();
    assert_eq!(
        result_of(&w.chats()[6], "c6"),
        format!("same\n{}", stop_sentence("bash"))
    );
}

#[test]
fn arguments_that_are_not_json_are_compared_as_raw_text() {
    let got = run_calls(
        &[
            ("bash", "{oops".to_owned()),
            ("bash", "{oops".to_owned()),
            ("bash", "{oops".to_owned()),
        ],
        "",
        |_| {},
    );
    assert!(
        got[0].starts_with("invalid arguments for bash: "),
        "{got:?}"
    );
    assert_eq!(got[1], got[0]);
    assert_eq!(got[2], format!("{}\n{LOOP_DETECTED}", got[0]));
}

// ───────────────────────── runaway guard ─────────────────────────

fn runaway_script(id: &str, tool: &str, prefix: &str, rest: Vec<Step>) -> Vec<Reply> {
    let mut steps = vec![Step::tool_start(0, id, tool), Step::tool_args(0, prefix)];
    steps.extend(rest);
    vec![Reply::stream(steps), Reply::text("after the runaway")]
}

/// The turn stopped with `sentence`, the call never ran, and the history
/// holds it with the not-run result.
fn assert_runaway(w: &World, run: &Run, sentence: &str, id: &str) {
    run.assert_stopped();
    assert!(
        run.stderr.contains(sentence),
        "expected {sentence}\nstderr: {}",
        run.stderr
    );
    assert_eq!(w.chats().len(), 1, "no request after the runaway");
    continue_session(w).assert_ok();
    let next = &w.chats()[1];
    let called = messages(next).iter().any(|m| {
        m["role"] == "assistant"
            && m["tool_calls"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["id"] == id))
    });
    assert!(called, "the runaway call stays in the history: {next:#}");
    assert_eq!(result_of(next, id), NOT_RUN);
}

#[test]
fn a_repeating_tool_call_is_stopped_and_never_run() {
    let prefix = "{\"command\":\"touch ran-away; ";
    let expected =
        runaway_sentence(std::iter::once(prefix).chain(std::iter::repeat_n("ab12", 2000))).unwrap();
    assert!(expected.contains("so far: \"ab12\")"), "{expected}");
    let w = World::new(
        runaway_script(
            "r1",
            "bash",
            prefix,
            vec![Step::Runaway {
                index: 0,
                fragment: "ab12".into(),
                times: 2000,
            }],
        ),
        "",
    );
    let run = ask(&w);
    assert!(!w.cwd.join("ran-away").exists());
    assert_runaway(&w, &run, &expected, "r1");
    assert!(!w.cwd.join("ran-away").exists());
}

#[test]
fn the_runaway_pattern_is_written_as_a_json_string_literal() {
    let prefix = "{\"path\":\"r.txt\",\"content\":\"";
    // é, backslash, quote, b: 4 characters, 5 bytes.
    let fragment = "é\\\"b";
    let expected =
        runaway_sentence(std::iter::once(prefix).chain(std::iter::repeat_n(fragment, 2000)))
            .unwrap();
    assert!(expected.contains(r#"so far: "é\\\"b")"#), "{expected}");
    let w = World::new(
        runaway_script(
            "r2",
            "write_file",
            prefix,
            vec![Step::Runaway {
                index: 0,
                fragment: fragment.into(),
                times: 2000,
            }],
        ),
        "",
    );
    let run = ask(&w);
    assert_runaway(&w, &run, &expected, "r2");
    assert!(!w.cwd.join("r.txt").exists());
}

#[test]
fn a_tool_call_over_256_kib_is_stopped() {
    let prefix = "{\"path\":\"big.txt\",\"content\":\"";
    // Never repeating, and with é (2 bytes) so that bytes and characters
    // differ: the limit counts bytes.
    let mut chunks: Vec<String> = Vec::new();
    let mut i = 0u64;
    while chunks.iter().map(String::len).sum::<usize>() < 300_000 {
        let chunk: String = (0..300).map(|k| format!("é{},", i + k)).collect();
        i += 300;
        chunks.push(chunk);
    }
    let expected =
        runaway_sentence(std::iter::once(prefix).chain(chunks.iter().map(String::as_str))).unwrap();
    assert!(
        expected.contains("its arguments passed 256 KiB ("),
        "{expected}"
    );
    let w = World::new(
        runaway_script(
            "s1",
            "write_file",
            prefix,
            chunks
                .iter()
                .map(|c| Step::tool_args(0, c.as_str()))
                .collect(),
        ),
        // The 256 KiB call stays in the history: keep the follow-up
        // request under the compaction threshold.
        "contextWindow: 1000000\n",
    );
    let run = ask(&w);
    assert_runaway(&w, &run, &expected, "s1");
    assert!(!w.cwd.join("big.txt").exists());
}

// ───────────────────────── stopped turns ─────────────────────────

#[test]
fn max_turns_notice_and_the_last_replys_calls_are_not_run() {
    let w = World::new(
        vec![
            call("c1", "bash", &args(json!({"command": "echo one"}))),
            calls(&[
                ("c2", "bash", &args(json!({"command": "touch t2"}))),
                ("c3", "bash", &args(json!({"command": "touch t3"}))),
            ]),
            Reply::text("after"),
        ],
        "maxTurns: 2\n",
    );
    let run = ask(&w);
    run.assert_stopped();
    assert!(
        run.stderr_has_line("[stopped: maxTurns (2) reached]"),
        "{}",
        run.stderr
    );
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(result_of(&chats[1], "c1"), "one\n");
    assert!(!w.cwd.join("t2").exists() && !w.cwd.join("t3").exists());
    continue_session(&w).assert_ok();
    let next = &w.chats()[2];
    assert_eq!(result_of(next, "c2"), NOT_RUN);
    assert_eq!(result_of(next, "c3"), NOT_RUN);
}

#[test]
fn a_cancelled_turn_exits_non_zero_and_later_calls_are_not_run() {
    let w = World::new(
        vec![
            calls(&[
                (
                    "c1",
                    "bash",
                    &args(json!({"command": "touch started; sleep 30"})),
                ),
                ("c2", "bash", &args(json!({"command": "touch later"}))),
            ]),
            Reply::text("after"),
        ],
        "",
    );
    let mut cmd = w.command(&["-p", QUESTION]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let started = wait_for(Duration::from_secs(10), || w.cwd.join("started").exists());
    if !started {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the command never started");
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mm-repl did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let run = Run::new(std::process::Output {
        status,
        stdout: out.stdout,
        stderr: out.stderr,
    });
    run.assert_stopped();
    assert!(!w.cwd.join("later").exists());
    continue_session(&w).assert_ok();
    let next = &w.chats()[1];
    // Every call has a result; the one after the cancelled call did not run.
    let _ = result_of(next, "c1");
    assert_eq!(result_of(next, "c2"), NOT_RUN);
}
