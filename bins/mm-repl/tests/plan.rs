//! The checklist and the modes through the built `mm-repl`: the `todo`
//! tool's `plan` events in JSON mode and its list kept with the session,
//! `--permissions plan` refusing an edit and a changing command while
//! reads run, `exit_plan` ending a one-shot turn with the plan as the
//! answer, and in a pseudo-terminal the mode on the banner and the prompt,
//! Shift-Tab cycling it, the checklist drawn (ASCII under TERM=dumb) and a
//! plan accepted with a key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{World, expect, messages, text, type_line, wait_for};
use expectrl::Expect;
use mm_mock::Reply;

fn call(id: &str, tool: &str, args: serde_json::Value) -> Reply {
    Reply::tool_call(id, tool, args.to_string())
}

fn todo(id: &str, statuses: &[(&str, &str)]) -> Reply {
    let items: Vec<serde_json::Value> = statuses
        .iter()
        .map(|(text, status)| serde_json::json!({"text": text, "status": status}))
        .collect();
    call(id, "todo", serde_json::json!({ "items": items }))
}

/// The results the model got for its calls, in order (from the last request).
fn results(w: &World) -> Vec<String> {
    let chats = w.chats();
    messages(chats.last().unwrap())
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The names of the tools a request declared.
fn declared(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn json_mode_emits_the_checklist_and_the_model_gets_a_short_confirmation() {
    let script = vec![
        todo(
            "c1",
            &[("read the code", "in_progress"), ("fix it", "pending")],
        ),
        todo(
            "c2",
            &[("read the code", "completed"), ("fix it", "in_progress")],
        ),
        Reply::text("done"),
    ];
    let w = World::new(script, "");
    let out = w.run(&["-p", "fix it", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plans: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "plan")
        .collect();
    assert_eq!(plans.len(), 2, "{}", text(&out.stdout));
    assert_eq!(
        plans[1],
        serde_json::json!({"type": "plan", "items": [
            {"text": "read the code", "status": "completed"},
            {"text": "fix it", "status": "in_progress"}]})
    );
    // The list is not echoed back to the model.
    assert_eq!(
        results(&w),
        [
            "checklist updated: 2 items, 0 done, 1 in progress",
            "checklist updated: 2 items, 1 done, 1 in progress"
        ]
    );
    // The last list is in the session file.
    let sessions = w.user.path().join("data/mm/sessions");
    let file = walk(&sessions)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a session file");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(saved["plan"], plans[1]["items"]);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn plan_mode_refuses_edits_and_changing_commands_and_lets_reading_run() {
    let script = vec![
        call(
            "c1",
            "write_file",
            serde_json::json!({"path": "new.txt", "content": "x"}),
        ),
        call(
            "c2",
            "bash",
            serde_json::json!({"command": "rm -rf victim"}),
        ),
        call("c3", "read_file", serde_json::json!({"path": "notes.txt"})),
        call(
            "c4",
            "bash",
            serde_json::json!({"command": "ls victim && cat notes.txt"}),
        ),
        Reply::text("Here is the plan."),
    ];
    // Allow rules do not open plan mode.
    let w = World::new(
        script,
        "permissions:\n  default: allow\n  allow: [\"bash(rm *)\", write_file]\n",
    );
    std::fs::create_dir(w.cwd.join("victim")).unwrap();
    std::fs::write(w.cwd.join("victim/kept"), "").unwrap();
    std::fs::write(w.cwd.join("notes.txt"), "a note\n").unwrap();
    let out = w.run(&["-p", "plan the cleanup", "--permissions", "plan"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!w.cwd.join("new.txt").exists(), "the edit ran in plan mode");
    assert!(w.cwd.join("victim/kept").exists(), "rm ran in plan mode");
    let got = results(&w);
    let refused = mm_tools_plan_text();
    assert_eq!(got[0], refused);
    assert_eq!(got[1], refused);
    assert!(got[2].contains("a note"), "{got:?}");
    assert_eq!(got[3], "kept\na note\n");
    assert!(
        text(&out.stderr).contains("plan mode is on"),
        "{}",
        text(&out.stderr)
    );
    // The model learns the mode from a note before the question; the
    // system prompt is the one every mode sends; exit_plan is declared.
    let first = &w.chats()[0];
    let msgs = messages(first);
    let question = msgs[1]["content"].as_str().unwrap();
    assert!(
        question.starts_with("plan the cleanup\n\n[mode: plan"),
        "{question}"
    );
    assert!(declared(first).contains(&"exit_plan".to_owned()));
    // The session is titled by the question, not the note.
    let file = walk(&w.user.path().join("data/mm/sessions"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a session file");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(saved["title"], "plan the cleanup");

    let w2 = World::new(vec![Reply::text("ok")], "");
    let out = w2.run(&["-p", "plan the cleanup"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let other = &w2.chats()[0];
    let system = |m: &serde_json::Value, w: &World| {
        m["content"]
            .as_str()
            .unwrap()
            .replace(&w.cwd.display().to_string(), "CWD")
    };
    assert_eq!(
        system(&messages(other)[0], &w2),
        system(&msgs[0], &w),
        "the system prompt changed"
    );
    assert_eq!(messages(other)[1]["content"], "plan the cleanup");
    assert!(!declared(other).contains(&"exit_plan".to_owned()));
}

/// What plan mode tells the model of a refused call.
fn mm_tools_plan_text() -> String {
    "[not run: plan mode is on — only reading and read-only commands run; present your plan \
     with exit_plan]"
        .to_owned()
}

#[test]
fn one_shot_plan_mode_ends_the_turn_with_the_plan_as_the_answer() {
    let plan = "# Plan\n\n1. Read `main.rs`.\n2. Fix the bug.\n";
    let script = vec![
        call("c1", "exit_plan", serde_json::json!({ "plan": plan })),
        Reply::text("never asked for"),
    ];
    let w = World::new(script, "");
    let out = w.run(&["-p", "fix the bug", "--permissions", "plan"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), plan.trim_end());
    assert_eq!(w.chats().len(), 1, "the turn went on after the plan");
}

#[test]
fn the_repl_shows_the_mode_cycles_it_with_shift_tab_and_draws_the_checklist() {
    let script = vec![
        todo(
            "c1",
            &[("look around", "in_progress"), ("write it", "pending")],
        ),
        Reply::text("Noted."),
        todo(
            "c2",
            &[("look around", "completed"), ("write it", "in_progress")],
        ),
        Reply::text("Again."),
    ];
    let w = World::new(script, "");
    let mut s = w.pty(&[], &[]);
    let banner = expect(&mut s, "[allow] mm> ");
    assert!(
        banner.contains("mode: allow — commands and edits run without asking; Shift-Tab to change"),
        "{banner}"
    );
    // Shift-Tab: allow → ask → plan → allow; the line typed so far stays.
    s.send("draft").unwrap();
    s.send("\x1b[Z").unwrap();
    expect(&mut s, "mode: ask");
    expect(&mut s, "[ask] mm> ");
    s.send("\x1b[Z").unwrap();
    expect(&mut s, "[plan] mm> ");
    s.send("\x1b[Z").unwrap();
    expect(&mut s, "[allow] mm> ");
    // Clear the kept draft, then ask.
    s.send("\x15").unwrap();
    type_line(&mut s, "make a list");
    let turn = expect(&mut s, "Noted.");
    assert!(turn.contains("◐ look around"), "{turn}");
    assert!(turn.contains("☐ write it"), "{turn}");
    expect(&mut s, "[allow] mm> ");
    type_line(&mut s, "/mode plan");
    expect(&mut s, "mode: plan — read-only");
    expect(&mut s, "[plan] mm> ");
    type_line(&mut s, "go on");
    let turn = expect(&mut s, "Again.");
    assert!(turn.contains("☑ look around"), "{turn}");
    expect(&mut s, "[plan] mm> ");
    type_line(&mut s, "/quit");
    assert!(wait_for(Duration::from_secs(10), || !s
        .get_process()
        .is_alive()
        .unwrap_or(false)));
    // The model was told of plan mode with the question after /mode.
    let chats = w.chats();
    let last = messages(chats.last().unwrap());
    let q = last.iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(q.starts_with("go on\n\n[mode: plan"), "{q}");
}

#[test]
fn a_dumb_terminal_gets_ascii_marks_and_continue_brings_the_list_back() {
    let script = vec![
        todo(
            "c1",
            &[
                ("one", "completed"),
                ("two", "in_progress"),
                ("three", "pending"),
            ],
        ),
        Reply::text("Listed."),
    ];
    let w = World::new(script, "");
    let mut s = w.pty(&[], &[("TERM", "dumb")]);
    expect(&mut s, "mm> ");
    type_line(&mut s, "list");
    let turn = expect(&mut s, "Listed.");
    for line in ["[x] one", "[~] two", "[ ] three"] {
        assert!(turn.contains(line), "{line} not in {turn}");
    }
    expect(&mut s, "mm> ");
    type_line(&mut s, "/quit");
    assert!(wait_for(Duration::from_secs(10), || !s
        .get_process()
        .is_alive()
        .unwrap_or(false)));
    let mut s = w.pty(&["--continue"], &[("TERM", "dumb")]);
    let resumed = expect(&mut s, "mm> ");
    assert!(resumed.contains("[~] two"), "{resumed}");
    type_line(&mut s, "/quit");
}

#[test]
fn a_plan_accepted_in_the_repl_switches_modes_and_the_model_carries_on() {
    let script = vec![
        call(
            "c1",
            "exit_plan",
            serde_json::json!({"plan": "1. Touch done.txt"}),
        ),
        call(
            "c2",
            "bash",
            serde_json::json!({"command": "touch done.txt"}),
        ),
        Reply::text("Carried out."),
    ];
    let w = World::new(script, "");
    let mut s = w.pty(&["--permissions", "plan"], &[("NO_COLOR", "1")]);
    expect(&mut s, "[plan] mm> ");
    type_line(&mut s, "do it");
    let asked = expect(&mut s, "[n/r] stay in plan mode");
    assert!(asked.contains("Touch done.txt"), "{asked}");
    s.send("s").unwrap();
    let turn = expect(&mut s, "Carried out.");
    assert!(turn.contains("mode: allow"), "{turn}");
    expect(&mut s, "[allow] mm> ");
    assert!(
        w.cwd.join("done.txt").exists(),
        "the plan was not carried out"
    );
    type_line(&mut s, "/quit");
    let got = results(&w);
    assert!(got[0].starts_with("The user accepted the plan"), "{got:?}");
    assert!(got[0].contains("[mode: allow"), "{got:?}");
    // exit_plan is no longer declared once plan mode ended.
    let chats = w.chats();
    assert!(declared(&chats[0]).contains(&"exit_plan".to_owned()));
    assert!(!declared(&chats[1]).contains(&"exit_plan".to_owned()));
}
