//! Saved sessions from a script and in the REPL: `--resume` by the start
//! of an id or the list's number, `--fork` (the original file untouched),
//! `-p /export`, and `/fork`, `/rename`, `/sessions WORDS` in a
//! pseudo-terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{World, all_text, expect, text, type_line, wait_for};
use mm_mock::Reply;

const PROMPT: &str = "mm> ";

/// Session files on disk, oldest first (ids are time-ordered UUIDv7).
fn session_files(w: &World) -> Vec<PathBuf> {
    let root = w.user.path().join("data/mm/sessions");
    let mut files = Vec::new();
    let Ok(projects) = std::fs::read_dir(&root) else {
        return files;
    };
    for project in projects.filter_map(Result::ok) {
        for f in std::fs::read_dir(project.path())
            .unwrap()
            .filter_map(Result::ok)
        {
            let name = f.file_name().into_string().unwrap();
            if name.ends_with(".json") && !name.starts_with('.') {
                files.push(f.path());
            }
        }
    }
    files.sort();
    files
}

fn id_of(file: &std::path::Path) -> String {
    file.file_stem().unwrap().to_string_lossy().into_owned()
}

fn session(file: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

fn quit(mut s: expectrl::session::OsSession) {
    type_line(&mut s, "/quit");
    let ended = wait_for(Duration::from_secs(10), || {
        !s.get_process().is_alive().unwrap_or(false)
    });
    assert!(ended, "mm-repl did not quit");
}

#[test]
fn resume_takes_the_start_of_an_id_or_the_list_number() {
    let w = World::new(
        vec![
            Reply::text("noted"),
            Reply::text("teal, still"),
            Reply::text("by number"),
        ],
        "",
    );
    assert_eq!(
        w.run(&["-p", "the colour is teal"], None).status.code(),
        Some(0)
    );
    let files = session_files(&w);
    assert_eq!(files.len(), 1);
    let id = id_of(&files[0]);
    let out = w.run(&["--resume", &id[..8], "-p", "which colour?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(all_text(&w.chats()[1]).contains("the colour is teal"));
    let out = w.run(&["--resume", "1", "-p", "and now?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(all_text(&w.chats()[2]).contains("which colour?"));
    assert_eq!(session_files(&w).len(), 1, "no new session");
    let out = w.run(&["--resume", "7", "-p", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no session number 7"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn fork_leaves_the_original_file_byte_identical() {
    let w = World::new(vec![Reply::text("noted"), Reply::text("forked answer")], "");
    assert_eq!(w.run(&["-p", "remember 42"], None).status.code(), Some(0));
    let original = session_files(&w).remove(0);
    let before = std::fs::read(&original).unwrap();
    let out = w.run(
        &[
            "--continue",
            "--fork",
            "-p",
            "what was it?",
            "--output-format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "the original is byte-identical"
    );
    let files = session_files(&w);
    assert_eq!(files.len(), 2, "{files:?}");
    let fork = files.iter().find(|f| **f != original).unwrap();
    let data = session(fork);
    assert_eq!(data["forkedFrom"], id_of(&original));
    assert_eq!(data["title"], "remember 42 (fork)");
    let contents: Vec<&str> = data["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents,
        ["remember 42", "noted", "what was it?", "forked answer"]
    );
    // The first JSON line names the fork, where the run was recorded.
    let first: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["session_id"], id_of(fork));
    // --fork alone has nothing to copy.
    let out = w.run(&["--fork", "-p", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--fork needs --continue or --resume"));
}

#[test]
fn export_from_a_script_writes_markdown_with_the_calls_and_output() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"echo exported-output"}"#),
            Reply::text("It printed it."),
        ],
        "",
    );
    assert_eq!(
        w.run(&["-p", "print something"], None).status.code(),
        Some(0)
    );
    let id = id_of(&session_files(&w)[0]);
    let out = w.run(&["--continue", "-p", "/export"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let file = w.cwd.join(format!("mm-session-{}.md", &id[..8]));
    assert!(
        text(&out.stdout).contains(&file.display().to_string()),
        "{}",
        text(&out.stdout)
    );
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(md.starts_with("# print something\n"), "{md}");
    assert!(md.contains("## Question 1\n\nprint something\n"), "{md}");
    assert!(md.contains("### Tool call: `bash`"), "{md}");
    assert!(md.contains("\"command\": \"echo exported-output\""), "{md}");
    assert!(
        md.contains("```text\nexported-output\n"),
        "the output: {md}"
    );
    assert!(md.contains("### Answer\n\nIt printed it.\n"), "{md}");
    assert_eq!(w.chats().len(), 2, "the command asks no model");
    // A path of the user's choice, and JSON for a script.
    let out = w.run(
        &[
            "--continue",
            "-p",
            "/export out.md",
            "--output-format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(w.cwd.join("out.md")).unwrap(), md);
    let last: serde_json::Value =
        serde_json::from_str(text(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["outcome"], "done");
}

#[test]
fn diff_runs_from_a_script_too() {
    let w = World::new(vec![Reply::text("x")], "");
    let out = w.run(&["-p", "/diff"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(w.chats().is_empty(), "not sent to the model");
}

#[test]
fn fork_rename_and_sessions_words_in_the_repl() {
    let w = World::new(
        vec![
            Reply::text("The lexer is fine."),
            Reply::text("The fork answers."),
            Reply::text("Unrelated."),
        ],
        "",
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "is the lexer broken?");
    expect(&mut s, "The lexer is fine.");
    expect(&mut s, PROMPT);
    let original = session_files(&w).remove(0);
    let before = std::fs::read(&original).unwrap();

    type_line(&mut s, "/fork try the parser");
    let said = expect(&mut s, PROMPT);
    assert!(said.contains("forked: now in session"), "{said}");
    assert!(said.contains("\"try the parser\""), "{said}");
    assert!(said.contains("stays as it was"), "{said}");
    type_line(&mut s, "and the parser?");
    expect(&mut s, "The fork answers.");
    expect(&mut s, PROMPT);
    assert_eq!(
        std::fs::read(&original).unwrap(),
        before,
        "original untouched"
    );
    let fork = session_files(&w)
        .into_iter()
        .find(|f| *f != original)
        .unwrap();
    // The fork's request held the first exchange.
    assert!(all_text(&w.chats()[1]).contains("is the lexer broken?"));

    type_line(&mut s, "/rename parser investigation");
    expect(
        &mut s,
        "this session is now titled \"parser investigation\"",
    );
    expect(&mut s, PROMPT);
    assert_eq!(session(&fork)["title"], "parser investigation");

    type_line(&mut s, "/new");
    expect(&mut s, PROMPT);
    type_line(&mut s, "something else");
    expect(&mut s, "Unrelated.");
    expect(&mut s, PROMPT);

    // The list shows the titles, numbered.
    type_line(&mut s, "/sessions");
    let listed = expect(&mut s, PROMPT);
    assert!(listed.contains("parser investigation"), "{listed}");
    assert!(listed.contains(" 1 * "), "{listed}");
    // Words: only the sessions that hold them, newest first.
    type_line(&mut s, "/sessions LEXER");
    let found = expect(&mut s, PROMPT);
    assert!(found.contains("that mention LEXER"), "{found}");
    let (fork_at, original_at) = (
        found.find(&id_of(&fork)).unwrap(),
        found.find(&id_of(&original)).unwrap(),
    );
    assert!(fork_at < original_at, "newest first: {found}");
    assert!(!found.contains("something else"), "{found}");
    type_line(&mut s, "/sessions nowhere-said");
    expect(&mut s, "no session of this project mentions nowhere-said");
    expect(&mut s, PROMPT);
    // --all-projects looks in every project's folder.
    type_line(&mut s, "/sessions --all-projects unrelated");
    let all = expect(&mut s, PROMPT);
    assert!(all.contains(&w.cwd.display().to_string()), "{all}");
    quit(s);
}
