//! /undo, /redo and /diff in the REPL (in a pseudo-terminal) and
//! `mm-repl --continue -p /undo`, against the mock model, with a real
//! `edit_file` and a real `bash` changing a real git repository.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{World, all_text, expect, text, type_line, wait_for};
use mm_mock::Reply;

const PROMPT: &str = "mm> ";

/// Edit a.txt, then `rm b.txt; echo x > c.txt`, then answer.
fn the_turn() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "c1",
            "edit_file",
            serde_json::json!({"path": "a.txt", "edits": [{"old": "a\n", "new": "a edited\n"}]})
                .to_string(),
        ),
        Reply::tool_call("c2", "bash", r#"{"command":"rm b.txt; echo x > c.txt"}"#),
        Reply::text("Done."),
    ]
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("HOME", dir)
        .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The world's folder as a repository holding a.txt and b.txt.
fn repository(w: &World) {
    std::fs::write(w.cwd.join("a.txt"), "a\n").unwrap();
    std::fs::write(w.cwd.join("b.txt"), "b\n").unwrap();
    git(&w.cwd, &["init", "-q"]);
    git(&w.cwd, &["add", "-A"]);
    git(&w.cwd, &["commit", "-q", "-m", "start"]);
}

fn state(w: &World) -> (String, String, String, Vec<u8>) {
    (
        git(&w.cwd, &["status", "--porcelain", "--untracked-files=all"]),
        git(&w.cwd, &["stash", "list"]),
        git(&w.cwd, &["for-each-ref"]),
        std::fs::read(w.cwd.join(".git/index")).unwrap(),
    )
}

fn read(w: &World, name: &str) -> Option<String> {
    std::fs::read_to_string(w.cwd.join(name)).ok()
}

fn assert_undone(w: &World) {
    assert_eq!(read(w, "a.txt").unwrap(), "a\n");
    assert_eq!(read(w, "b.txt").unwrap(), "b\n");
    assert!(!w.cwd.join("c.txt").exists());
}

fn assert_done(w: &World) {
    assert_eq!(read(w, "a.txt").unwrap(), "a edited\n");
    assert!(!w.cwd.join("b.txt").exists());
    assert_eq!(read(w, "c.txt").unwrap(), "x\n");
}

#[test]
fn undo_redo_and_diff_in_the_repl() {
    let mut script = the_turn();
    script.push(Reply::text("Noted."));
    let w = World::new(script, "");
    repository(&w);
    let before = state(&w);
    let mut s = w.pty(&[], &[]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "edit a, remove b, make c");
    expect(&mut s, "Done.");
    expect(&mut s, PROMPT);
    assert_done(&w);

    type_line(&mut s, "/diff");
    let diff = expect(&mut s, PROMPT);
    assert!(
        diff.contains("\x1b[31m-a\x1b[0m"),
        "removed lines in red: {diff:?}"
    );
    assert!(
        diff.contains("\x1b[32m+a edited\x1b[0m"),
        "added lines in green: {diff:?}"
    );
    assert!(diff.contains("+++ b/c.txt"), "{diff:?}");

    type_line(&mut s, "/undo");
    let said = expect(&mut s, PROMPT);
    assert!(
        said.contains(
            "undid \"edit a, remove b, make c\": a.txt restored, b.txt recreated, c.txt removed"
        ),
        "{said:?}"
    );
    assert_undone(&w);
    assert_eq!(state(&w), before);

    type_line(&mut s, "/redo");
    let said = expect(&mut s, PROMPT);
    assert!(
        said.contains("redid \"edit a, remove b, make c\""),
        "{said:?}"
    );
    assert_done(&w);

    type_line(&mut s, "/undo");
    expect(&mut s, PROMPT);
    assert_undone(&w);
    type_line(&mut s, "what changed?");
    expect(&mut s, "Noted.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/quit");
    assert!(wait_for(Duration::from_secs(10), || !s
        .get_process()
        .is_alive()
        .unwrap_or(false)));
    // The model was told, in the history it got next.
    let chats = w.chats();
    let last = all_text(chats.last().unwrap());
    assert!(
        last.contains(
            "[/undo: the user undid the file changes of the turn \"edit a, remove b, make c\""
        ),
        "{last}"
    );
    assert!(last.contains("[/redo: the user redid"), "{last}");
}

#[test]
fn continue_p_undo_undoes_the_last_turn_of_the_latest_session() {
    let mut script = the_turn();
    script.push(Reply::text("I cannot redo from a script."));
    let w = World::new(script, "");
    repository(&w);
    let before = state(&w);
    let out = w.run(&["-p", "edit a, remove b, make c"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_done(&w);

    let out = w.run(&["--continue", "-p", "/undo"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "undid \"edit a, remove b, make c\": a.txt restored, b.txt recreated, c.txt removed\n"
    );
    assert_undone(&w);
    assert_eq!(state(&w), before);

    // Nothing left: a script sees it in the exit code.
    let out = w.run(&["--continue", "-p", "/undo"], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert!(
        text(&out.stderr).contains("nothing to undo: no turn of this session changed files"),
        "{}",
        text(&out.stderr)
    );

    // Other built-in commands stay interactive: /redo is sent as text.
    let chats = w.chats().len();
    let out = w.run(&["--continue", "-p", "/redo"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "I cannot redo from a script.\n");
    assert_eq!(w.chats().len(), chats + 1);
    assert_undone(&w);
}

#[test]
fn a_file_changed_after_the_turn_makes_p_undo_fail_until_forced() {
    let w = World::new(the_turn(), "");
    repository(&w);
    let out = w.run(&["-p", "edit a, remove b, make c"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    std::fs::write(w.cwd.join("c.txt"), "the user's edit\n").unwrap();

    let out = w.run(&["--continue", "-p", "/undo"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "error: not undone: changed since the turn: c.txt; /undo force overwrites them"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(read(&w, "c.txt").unwrap(), "the user's edit\n");
    assert!(!w.cwd.join("b.txt").exists(), "nothing written");

    let out = w.run(
        &["--continue", "--output-format", "json", "-p", "/undo force"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The session line names the session the command worked on, then the
    // command's own line.
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["type"], "session");
    assert!(lines[0]["session_id"].is_string(), "{}", lines[0]);
    let line = &lines[1];
    assert_eq!(line["type"], "command");
    assert_eq!(line["name"], "undo");
    assert_eq!(line["ok"], true);
    assert!(
        line["text"].as_str().unwrap().starts_with("undid "),
        "{line}"
    );
    assert_undone(&w);
}

#[test]
fn outside_git_undo_works_and_leaves_no_git_folder() {
    let w = World::new(the_turn(), "");
    std::fs::write(w.cwd.join("a.txt"), "a\n").unwrap();
    std::fs::write(w.cwd.join("b.txt"), "b\n").unwrap();
    let out = w.run(&["-p", "edit a, remove b, make c"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_done(&w);
    let out = w.run(&["--continue", "-p", "/undo"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_undone(&w);
    assert!(!w.cwd.join(".git").exists());
    assert!(w.root.path().join("data/mm/checkpoints").is_dir());
}
