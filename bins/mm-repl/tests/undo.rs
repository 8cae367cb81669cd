//! /undo, /redo and /diff in the REPL (in a pseudo-terminal) and
//! `mm-repl --continue -p /undo`, against the mock model, with a real
//! `edit_file` and a real `bash` changing a real git repository.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{World, all_text, expect, text, type_line, wait_for};
use mm_mock::Reply;
use mm_test_support::git::git;

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

    // Nothing left: a plain reply, not an error.
    let out = w.run(&["--continue", "-p", "/undo"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "nothing to undo: no turn of this session changed files\n"
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
            "error: not undone: changed since the turn: c.txt; /undo force goes on and keeps each as <name>.mm-undo-<n>"
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
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[2]["type"], "result", "{lines:?}");
    assert_eq!(lines[0]["type"], "session");
    assert!(lines[0]["session_id"].is_string(), "{}", lines[0]);
    let line = &lines[1];
    assert_eq!(line["type"], "command");
    assert_eq!(line["name"], "undo");
    assert_eq!(line["ok"], true);
    assert!(
        line["text"]
            .as_str()
            .unwrap()
            .ends_with(", c.txt removed (c.txt moved to c.txt.mm-undo-1)"),
        "{line}"
    );
    assert_undone(&w);
    assert_eq!(read(&w, "c.txt.mm-undo-1").unwrap(), "the user's edit\n");
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
    assert!(w.user.path().join("data/mm/checkpoints").is_dir());
}

/// One `bash` call, then an answer.
fn one_command(command: &str, answer: &str) -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "c1",
            "bash",
            serde_json::json!({ "command": command }).to_string(),
        ),
        Reply::text(answer),
    ]
}

/// The world's folder holding `files`, committed when `in_git`.
fn project(w: &World, in_git: bool, files: &[(&str, &str)]) {
    for (name, content) in files {
        let path = w.cwd.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    if in_git {
        git(&w.cwd, &["init", "-q"]);
        git(&w.cwd, &["add", "-A"]);
        git(&w.cwd, &["commit", "-q", "-m", "start"]);
    }
}

/// `mm-repl --continue -p <command>`: its exit code, stdout and stderr.
fn continue_with(w: &World, command: &str) -> (Option<i32>, String, String) {
    let out = w.run(&["--continue", "-p", command], None);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The turn ran `rm notes`; the user then made a folder `notes/` with a
/// file and an ignored one. `/undo` refuses and leaves the folder whole;
/// `/undo force` brings the file back and says where the folder went.
fn a_folder_where_the_turn_removed_a_file(in_git: bool) {
    let w = World::new(one_command("rm notes", "Removed."), "");
    project(
        &w,
        in_git,
        &[("notes", "the old notes\n"), (".gitignore", "*.log\n")],
    );
    let out = w.run(&["-p", "remove notes"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!w.cwd.join("notes").exists());
    std::fs::create_dir(w.cwd.join("notes")).unwrap();
    std::fs::write(w.cwd.join("notes/todo.txt"), "mine\n").unwrap();
    std::fs::write(w.cwd.join("notes/run.log"), "ignored\n").unwrap();

    let (code, stdout, stderr) = continue_with(&w, "/undo");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stderr.contains(
            "not undone: changed since the turn: notes/; /undo force goes on and keeps each as <name>.mm-undo-<n>"
        ),
        "{stderr}"
    );
    assert_eq!(read(&w, "notes/todo.txt").unwrap(), "mine\n");
    assert_eq!(read(&w, "notes/run.log").unwrap(), "ignored\n");

    let (code, stdout, stderr) = continue_with(&w, "/undo force");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "undid \"remove notes\": notes recreated (notes/ moved to notes.mm-undo-1/)\n"
    );
    assert_eq!(read(&w, "notes").unwrap(), "the old notes\n");
    assert_eq!(read(&w, "notes.mm-undo-1/todo.txt").unwrap(), "mine\n");
    assert_eq!(read(&w, "notes.mm-undo-1/run.log").unwrap(), "ignored\n");
}

#[test]
fn in_git_undo_never_deletes_a_folder_made_after_the_turn() {
    a_folder_where_the_turn_removed_a_file(true);
}

#[test]
fn outside_git_undo_never_deletes_a_folder_made_after_the_turn() {
    a_folder_where_the_turn_removed_a_file(false);
}

/// The turn removed folder `d`; the user then made a file `d`.
fn a_file_where_the_turn_removed_a_folder(in_git: bool) {
    let w = World::new(one_command("rm -r d", "Removed."), "");
    project(&w, in_git, &[("d/x", "x\n"), ("d/y", "y\n")]);
    let out = w.run(&["-p", "remove d"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    std::fs::write(w.cwd.join("d"), "the user's file\n").unwrap();

    let (code, _, stderr) = continue_with(&w, "/undo");
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("not undone: changed since the turn: d; "),
        "{stderr}"
    );
    assert_eq!(read(&w, "d").unwrap(), "the user's file\n");

    let (code, stdout, stderr) = continue_with(&w, "/undo force");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "undid \"remove d\": d/x recreated (d moved to d.mm-undo-1), d/y recreated\n"
    );
    assert_eq!(read(&w, "d/x").unwrap(), "x\n");
    assert_eq!(read(&w, "d/y").unwrap(), "y\n");
    assert_eq!(read(&w, "d.mm-undo-1").unwrap(), "the user's file\n");
}

#[test]
fn in_git_undo_never_deletes_a_file_made_where_the_turn_removed_a_folder() {
    a_file_where_the_turn_removed_a_folder(true);
}

#[test]
fn outside_git_undo_never_deletes_a_file_made_where_the_turn_removed_a_folder() {
    a_file_where_the_turn_removed_a_folder(false);
}

/// A clean filter, a smudge filter and a process filter, each leaving a
/// file in the folder git runs in when it starts; `.gitattributes` puts
/// every file under them.
const FILTERS: &[(&str, &str)] = &[
    ("filter.evil.clean", "touch M; cat"),
    ("filter.evil.smudge", "touch S; cat"),
    ("filter.proc.process", "touch P; exit 1"),
    ("filter.proc.required", "true"),
];

/// A rejected command (permissions ask, no terminal to ask), then an
/// allowed turn and `/undo`: checkpoints were taken and restored, and no
/// filter program ever ran.
fn filters_never_run(in_git: bool) {
    let mut script = one_command("echo rejected > x.txt", "Rejected, then.");
    script.extend(one_command("echo turn > a.txt", "Done."));
    let w = World::new(script, "permissions:\n  default: ask\n");
    project(&w, in_git, &[("a.txt", "a\n")]);
    if in_git {
        for (k, v) in FILTERS {
            git(&w.cwd, &["config", k, v]);
        }
    } else {
        let global = w.user.path().join("home/.gitconfig");
        for (k, v) in FILTERS {
            git(
                &w.cwd,
                &["config", "--file", global.to_str().unwrap(), k, v],
            );
        }
    }
    std::fs::write(
        w.cwd.join(".gitattributes"),
        "* filter=evil\n*.bin filter=proc\n",
    )
    .unwrap();
    let ran = |w: &World| {
        ["M", "S", "P"]
            .into_iter()
            .filter(|m| w.cwd.join(m).exists())
            .collect::<Vec<_>>()
    };

    let out = w.run(&["-p", "write x"], None);
    // Nobody to ask: not run, exit 4.
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("no terminal to ask"));
    assert!(!w.cwd.join("x.txt").exists());
    assert_eq!(ran(&w), Vec::<&str>::new(), "a filter ran before approval");

    let config = std::fs::read_to_string(w.config_file()).unwrap();
    w.write_config(&config.replace("default: ask", "default: allow"));
    let out = w.run(&["--continue", "-p", "change a"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read(&w, "a.txt").unwrap(), "turn\n");
    let (code, stdout, stderr) = continue_with(&w, "/undo");
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "undid \"change a\": a.txt restored\n");
    assert_eq!(read(&w, "a.txt").unwrap(), "a\n");
    assert_eq!(ran(&w), Vec::<&str>::new(), "a filter ran");

    if in_git {
        // The user's own git does run them: the test can see it.
        let _ = Command::new("git")
            .current_dir(&w.cwd)
            .env("HOME", &w.cwd)
            .args(["add", "-A"])
            .output();
        assert!(ran(&w).contains(&"M"), "the test's filter works");
    }
}

#[test]
fn in_git_no_filter_of_the_repository_runs_before_approval_or_ever() {
    filters_never_run(true);
}

#[test]
fn outside_git_no_filter_of_the_users_configuration_runs() {
    filters_never_run(false);
}

/// A first checkpoint outside git reads every file, which takes seconds in
/// a large folder. A cancelled turn must not wait for it: the git command
/// recording it is killed and the call never runs. A `git` first on PATH
/// stands in for a slow one: it hangs where the files are added.
#[test]
fn cancelling_while_the_checkpoint_is_recorded_stops_it_and_runs_nothing() {
    let w = World::new(
        vec![
            Reply::tool_call("c1", "bash", r#"{"command":"touch ran.txt"}"#),
            Reply::text("unused"),
        ],
        "",
    );
    // A file to record: an empty folder adds nothing.
    std::fs::write(w.cwd.join("a.txt"), "a\n").unwrap();
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = w.cwd.join("../slow-git-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = w.cwd.join("../adding");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = update-index ]; then\n    touch '{}'\n    exec sleep 31.7\n  fi\ndone\nexec '{}' \"$@\"\n",
        marker.display(),
        real.trim()
    );
    let fake = bin.join("git");
    std::fs::write(&fake, script).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut cmd = w.command(&["-p", "make a file"]);
    cmd.env("PATH", path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if !wait_for(Duration::from_secs(20), || marker.exists()) {
        let _ = child.kill();
        panic!("the checkpoint never reached git update-index");
    }
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let ended = wait_for(Duration::from_secs(10), || {
        child.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        ended,
        "the turn waited for the checkpoint: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(!w.cwd.join("ran.txt").exists(), "the call ran");
    assert!(
        mm_test_support::procs::with_cmdline("sleep 31.7").is_empty(),
        "the checkpoint's git outlived the turn"
    );
}
