//! `grep` and `glob` end to end: the built `mm-repl -p` against the mock
//! model, real files in a temp folder, asserting on the exact result the
//! model received in the next request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod contract_support;

use std::time::{Duration, SystemTime};

use contract_support::*;
use serde_json::json;

fn grep(v: serde_json::Value) -> (&'static str, String) {
    ("grep", args(v))
}

fn glob(v: serde_json::Value) -> (&'static str, String) {
    ("glob", args(v))
}

/// A project with a marker in two files, and in three a search must skip:
/// one `.gitignore` names, a hidden one, and a binary one.
fn project(w: &common::World) {
    put(&w.cwd, ".gitignore", b"ignored/\n*.log\n");
    put(
        &w.cwd,
        "src/main.rs",
        b"fn main() {\n    let x = \"MARKER_7f3 here\";\n}\n",
    );
    put(&w.cwd, "notes/b.txt", b"first\nMARKER_7f3 again\n");
    put(&w.cwd, "ignored/c.txt", b"MARKER_7f3 ignored\n");
    put(&w.cwd, "run.log", b"MARKER_7f3 in a log\n");
    put(&w.cwd, ".hidden/d.txt", b"MARKER_7f3 hidden\n");
    put(&w.cwd, "data.bin", b"MARKER_7f3\0\x01\x02 binary\n");
}

#[test]
fn grep_finds_the_marker_and_skips_ignored_hidden_and_binary_files() {
    let got = run_calls(
        &[
            grep(json!({"pattern": "MARKER_7f3"})),
            grep(json!({"pattern": "marker_7F3", "ignore_case": true, "glob": "*.rs"})),
            grep(json!({"pattern": "again", "path": "notes", "context": 1})),
            grep(json!({"pattern": "nowhere_to_be_found"})),
            grep(json!({"pattern": "(unclosed"})),
        ],
        "",
        project,
    );
    assert_eq!(
        got[0],
        "notes/b.txt:2: MARKER_7f3 again\nsrc/main.rs:2:     let x = \"MARKER_7f3 here\";\n"
    );
    assert_eq!(got[1], "src/main.rs:2:     let x = \"MARKER_7f3 here\";\n");
    assert_eq!(
        got[2],
        "notes/b.txt-1- first\nnotes/b.txt:2: MARKER_7f3 again\n"
    );
    assert_eq!(got[3], "no matches for \"nowhere_to_be_found\" in .");
    assert!(got[4].starts_with("invalid pattern: "), "{}", got[4]);
    assert!(!got[4].contains('\n'), "{}", got[4]);
}

#[test]
fn grep_cuts_a_hundred_thousand_matches_and_says_how_many_were_left_out() {
    let w = world(&[grep(json!({"pattern": "hit"}))], "");
    let body: String = (0..100_000).map(|i| format!("hit {i}\n")).collect();
    put(&w.cwd, "big.txt", body.as_bytes());
    let run = ask(&w);
    run.assert_ok();
    let got = &results(&w, &run, 1)[0];
    assert!(got.chars().count() <= 30_000, "{}", got.chars().count());
    assert!(
        got.starts_with("big.txt:1: hit 0\nbig.txt:2: hit 1\n"),
        "{got}"
    );
    let shown = got.lines().filter(|l| l.starts_with("big.txt:")).count();
    assert!(shown > 1000, "only {shown} lines shown");
    let marker = format!(
        "[… {} more matches left out; narrow the pattern, path or glob]",
        100_000 - shown
    );
    assert!(got.ends_with(&marker), "{}", &got[got.len() - 200..]);
}

#[test]
fn grep_and_glob_never_search_a_denied_path_and_a_rule_can_deny_them() {
    let setup = |w: &common::World| {
        project(w);
        put(&w.cwd, "secret/keys.txt", b"MARKER_7f3 secret\n");
        put(&w.cwd, "notes/.env", b"MARKER_7f3 env\n");
    };
    let got = run_calls(
        &[
            grep(json!({"pattern": "MARKER_7f3"})),
            glob(json!({"pattern": "*.txt"})),
            grep(json!({"pattern": "MARKER_7f3", "path": "secret"})),
        ],
        "permissions:\n  deny: [\"read_file(secret/**)\", \"grep(secret)\"]\n",
        setup,
    );
    assert!(!got[0].contains("secret"), "{}", got[0]);
    assert!(got[0].starts_with("notes/b.txt:2: "), "{}", got[0]);
    assert!(!got[1].contains("secret"), "{}", got[1]);
    assert!(got[1].contains("notes/b.txt"), "{}", got[1]);
    assert_eq!(got[2], "[denied by rule \"grep(secret)\"]");

    let got = run_calls(
        &[grep(json!({"pattern": "MARKER_7f3"}))],
        "permissions:\n  deny: [grep]\n",
        setup,
    );
    assert_eq!(got[0], "[denied by rule \"grep\"]");
}

#[test]
fn grep_and_glob_run_without_asking_when_the_default_is_ask() {
    // No terminal to ask: a call that asked would not run (exit 4).
    let got = run_calls(
        &[
            grep(json!({"pattern": "MARKER_7f3"})),
            glob(json!({"pattern": "**/*.rs"})),
        ],
        "permissions: ask\n",
        project,
    );
    assert!(got[0].starts_with("notes/b.txt:2: "), "{}", got[0]);
    assert_eq!(got[1], "src/main.rs\n");
}

#[test]
fn glob_lists_newest_first_with_the_ignore_rules_of_grep() {
    let setup = |w: &common::World| {
        project(w);
        put(&w.cwd, "src/lib.rs", b"\n");
        put(&w.cwd, "src/deep/mod.rs", b"\n");
        put(&w.cwd, "ignored/x.rs", b"\n");
        put(&w.cwd, ".hidden/y.rs", b"\n");
        let now = SystemTime::now();
        for (rel, age) in [
            ("src/main.rs", 300),
            ("src/lib.rs", 100),
            ("src/deep/mod.rs", 200),
        ] {
            let f = std::fs::File::options()
                .write(true)
                .open(w.cwd.join(rel))
                .unwrap();
            f.set_modified(now - Duration::from_secs(age)).unwrap();
        }
    };
    let got = run_calls(
        &[
            glob(json!({"pattern": "**/*.rs"})),
            glob(json!({"pattern": "*.rs", "path": "src"})),
            glob(json!({"pattern": "src/*.rs"})),
            glob(json!({"pattern": "*.py"})),
        ],
        "",
        setup,
    );
    assert_eq!(got[0], "src/lib.rs\nsrc/deep/mod.rs\nsrc/main.rs\n");
    assert_eq!(got[1], "src/lib.rs\nsrc/deep/mod.rs\nsrc/main.rs\n");
    assert_eq!(got[2], "src/lib.rs\nsrc/main.rs\n");
    assert_eq!(got[3], "no files match \"*.py\" in .");
}

#[test]
fn the_terminal_shows_the_first_matches_under_the_grep_line() {
    let w = world(&[grep(json!({"pattern": "MARKER_7f3"}))], "");
    project(&w);
    let run = ask(&w);
    run.assert_ok();
    assert!(run.stderr_has_line("📝 grep: MARKER_7f3"), "{}", run.stderr);
    assert!(
        run.stderr.contains("notes/b.txt:2: MARKER_7f3 again"),
        "{}",
        run.stderr
    );
}
