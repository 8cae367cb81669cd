//! Subagents through `mm-repl -p --output-format json` against the mock:
//! the `task` tool runs a child with a fresh context, side by side with
//! its siblings, narrowed to its agent's tools; its events carry their
//! parent, its record and tokens go to the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{World, messages, text, wait_for};
use expectrl::Expect;
use mm_mock::{Reply, Step};
use mm_test_support::procs;
use serde_json::{Value, json};

const QUESTION: &str = "PARENT-QUESTION: where is the config read?";

fn task(index: usize, id: &str, args: Value) -> Step {
    Step::ToolCall {
        index,
        id: Some(id.into()),
        name: "task".into(),
        arguments: args.to_string(),
    }
}

fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::tool_call(id, name, args.to_string())
}

fn events(stdout: &[u8]) -> Vec<Value> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// The declared tool names of a chat request.
fn declared(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The result the request gives call `id`.
fn result_of(body: &Value, id: &str) -> String {
    messages(body)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id} in {body}"))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn two_task_calls_run_side_by_side_each_with_a_fresh_context() {
    let w = World::new(
        vec![
            Reply::stream(vec![
                task(
                    0,
                    "t1",
                    json!({"description": "find A", "prompt": "JOB-A: look for a"}),
                ),
                task(
                    1,
                    "t2",
                    json!({"description": "find B", "prompt": "JOB-B: look for b"}),
                ),
                Step::Usage {
                    prompt: 100,
                    completion: 10,
                },
            ]),
            // The first child to ask waits; the second answers at once.
            Reply::stream(vec![
                Step::stall(1500),
                Step::text("SLOW ANSWER"),
                Step::Usage {
                    prompt: 20,
                    completion: 2,
                },
            ]),
            Reply::stream(vec![
                Step::text("FAST ANSWER"),
                Step::Usage {
                    prompt: 30,
                    completion: 3,
                },
            ]),
            Reply::stream(vec![
                Step::text("Both found."),
                Step::Usage {
                    prompt: 200,
                    completion: 20,
                },
            ]),
        ],
        "",
    );
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let events = events(&out.stdout);
    let chats = w.chats();
    assert_eq!(chats.len(), 4, "{chats:#?}");
    // Neither child sees the parent's question or history, each its job.
    let mut jobs = Vec::new();
    for child in &chats[1..3] {
        let all = common::all_text(child);
        assert!(!all.contains("PARENT-QUESTION"), "{all}");
        assert!(all.contains("subagent"), "the system prompt says so: {all}");
        assert_eq!(messages(child).len(), 2, "system and job only: {child}");
        jobs.push(if all.contains("JOB-A") { "A" } else { "B" });
        // No recursion: a child has no task tool.
        assert!(!declared(child).contains(&"task".to_owned()));
    }
    jobs.sort_unstable();
    assert_eq!(jobs, ["A", "B"]);
    // Side by side: the second child started before the first ended, and
    // the one that waited ended last.
    let position = |f: &dyn Fn(&Value) -> bool| events.iter().position(f);
    let first_end_of_t1 = position(&|e| e["type"] == "tool_end" && e["id"] == "t1").unwrap();
    let first_of_t2 = position(&|e| e["parent"] == "t2").unwrap();
    assert!(first_of_t2 < first_end_of_t1, "{events:#?}");
    let first_end = events
        .iter()
        .find(|e| e["type"] == "tool_end" && e["tool"] == "task")
        .unwrap();
    assert_eq!(first_end["output"], "FAST ANSWER", "{events:#?}");
    // The parent's next request holds both answers as the two results.
    let next = &chats[3];
    let answers = [result_of(next, "t1"), result_of(next, "t2")];
    assert!(
        answers.contains(&"SLOW ANSWER".to_owned()) && answers.contains(&"FAST ANSWER".to_owned()),
        "{answers:?}"
    );
    // Each child's end carries its parent and its tokens.
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "subagent_end")
        .collect();
    assert_eq!(ends.len(), 2, "{events:#?}");
    for end in &ends {
        assert_eq!(end["agent"], "explore");
        assert!(end["parent"] == "t1" || end["parent"] == "t2");
    }
    // The children's tokens count in the turn's.
    let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["prompt_tokens"], 350, "{turn_end}");
    // The session file keeps each child's transcript under its call.
    let session = session_file(&w);
    let subagents = session["subagents"].as_array().unwrap();
    let mut ids: Vec<&str> = subagents
        .iter()
        .map(|s| s["callId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["t1", "t2"]);
    for s in subagents {
        assert_eq!(s["messages"].as_array().unwrap().len(), 2, "{s}");
    }
}

/// The one session file the world's runs wrote.
fn session_file(w: &World) -> Value {
    let dir = w.user.path().join("data/mm/sessions");
    let mut found = Vec::new();
    for project in std::fs::read_dir(&dir).unwrap() {
        for file in std::fs::read_dir(project.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                found.push(path);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    serde_json::from_str(&std::fs::read_to_string(&found[0]).unwrap()).unwrap()
}

#[test]
fn an_agent_file_narrows_the_childs_tools_to_its_list() {
    let w = World::new(
        vec![
            call(
                "t1",
                "task",
                json!({"description": "read", "prompt": "read it", "agent": "reader"}),
            ),
            Reply::text("read."),
            Reply::text("done"),
        ],
        "",
    );
    let agents = w.cwd.join(".mm/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reader.md"),
        "---\ndescription: reads one file\ntools: [read_file]\n---\nREADER-PROMPT: read only what you are told.\n",
    )
    .unwrap();
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    // The parent's task tool lists the agent, one line.
    let parent_task = chats[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap();
    assert!(
        parent_task["function"]["description"]
            .as_str()
            .unwrap()
            .contains("\nreader: reads one file"),
        "{parent_task}"
    );
    assert_eq!(declared(&chats[1]), ["read_file"]);
    assert!(common::all_text(&chats[1]).contains("READER-PROMPT"));
}

#[test]
fn explore_refuses_writes_and_commands_that_change_things() {
    let w = World::new(
        vec![
            call(
                "t1",
                "task",
                json!({"description": "look", "prompt": "look"}),
            ),
            call(
                "w1",
                "write_file",
                json!({"path": "made.txt", "content": "x"}),
            ),
            call("b1", "bash", json!({"command": "touch touched.txt"})),
            call("b2", "bash", json!({"command": "ls"})),
            Reply::text("I could only read."),
            Reply::text("ok"),
        ],
        "",
    );
    std::fs::write(w.cwd.join("seen.txt"), "").unwrap();
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(!w.cwd.join("made.txt").exists());
    assert!(!w.cwd.join("touched.txt").exists());
    let chats = w.chats();
    let mut names = declared(&chats[1]);
    names.sort();
    assert_eq!(names, ["bash", "glob", "grep", "read_file"]);
    assert!(result_of(&chats[2], "w1").starts_with("unknown tool \"write_file\""));
    assert!(result_of(&chats[3], "b1").contains("only reads"));
    assert!(result_of(&chats[4], "b2").contains("seen.txt"));
    assert_eq!(result_of(&chats[5], "t1"), "I could only read.");
}

#[test]
fn cancelling_the_parent_mid_child_leaves_no_process() {
    let w = World::new(
        vec![
            call(
                "t1",
                "task",
                json!({"description": "wait", "prompt": "wait", "agent": "general"}),
            ),
            call(
                "b1",
                "bash",
                json!({"command": "touch started; sleep 30.0303"}),
            ),
            Reply::text("never"),
        ],
        "",
    );
    let mut cmd = w.command(&["-p", QUESTION, "--output-format", "json"]);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let started = wait_for(Duration::from_secs(10), || w.cwd.join("started").exists());
    if !started {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child's command never started");
    }
    assert!(!procs::with_cmdline("30.0303").is_empty());
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mm-repl did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        wait_for(Duration::from_secs(3), || procs::with_cmdline("30.0303")
            .is_empty()),
        "the child's command survived: {:?}",
        procs::with_cmdline("30.0303")
    );
    let events = events(&out.stdout);
    let end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(end["outcome"], "cancelled", "{events:#?}");
}

/// A subagent that reads a file, then writes one (which asks in `ask`
/// mode), then answers; the parent answers after it.
fn reading_and_writing_child() -> Vec<Reply> {
    vec![
        call(
            "t1",
            "task",
            json!({"description": "copy notes", "prompt": "copy notes.txt", "agent": "general"}),
        ),
        call("r1", "read_file", json!({"path": "notes.txt"})),
        call(
            "w1",
            "write_file",
            json!({"path": "copy.txt", "content": "noted\n"}),
        ),
        Reply::text("CHILD DONE: copied.\n"),
        Reply::text("PARENT DONE."),
    ]
}

#[test]
fn the_repl_shows_the_childs_calls_under_the_task_call_and_asks_for_it() {
    let w = World::new(reading_and_writing_child(), "permissions: ask\n");
    std::fs::write(w.cwd.join("notes.txt"), "noted\n").unwrap();
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    common::expect(&mut s, "mm> ");
    common::type_line(&mut s, "copy the notes");
    let asked = common::expect(&mut s, "allow? [y/a/Enter] allow once");
    assert!(
        asked.contains("🛠️  task: copy notes (general)"),
        "{asked:?}"
    );
    assert!(
        asked.contains("↳ general: 📝 read_file: notes.txt"),
        "{asked:?}"
    );
    assert!(
        asked.contains("↳ general: 📝 write_file: copy.txt"),
        "{asked:?}"
    );
    s.send("a").unwrap();
    let rest = common::expect(&mut s, "PARENT DONE.");
    assert!(rest.contains("↳ general: done · in"), "{rest:?}");
    common::expect(&mut s, "mm> ");
    assert_eq!(
        std::fs::read_to_string(w.cwd.join("copy.txt")).unwrap(),
        "noted\n"
    );
    // The child's work is part of the parent's turn: /undo takes it back.
    common::type_line(&mut s, "/undo");
    common::expect(&mut s, "mm> ");
    assert!(!w.cwd.join("copy.txt").exists(), "the child's file stayed");
    common::type_line(&mut s, "/quit");
    assert!(wait_for(Duration::from_secs(10), || {
        !s.get_process().is_alive().unwrap_or(false)
    }));
}

/// Two `task` calls in one reply, each child answering at once, then the
/// parent's answer; a llama.cpp `/props` with `slots` slots.
fn two_children_on(slots: u64) -> World {
    World::serving(
        vec![
            Reply::stream(vec![
                task(0, "t1", json!({"prompt": "JOB-A"})),
                task(1, "t2", json!({"prompt": "JOB-B"})),
            ]),
            Reply::stream(vec![Step::stall(300), Step::text("first")]),
            Reply::text("second"),
            Reply::text("done"),
        ],
        "",
        mm_mock::Options {
            routes: vec![mm_mock::Route::get(
                "/props",
                json!({"total_slots": slots, "default_generation_settings": {"n_ctx": 32768}}),
            )],
            ..mm_mock::Options::default()
        },
    )
}

#[test]
fn on_llama_cpp_with_two_slots_the_children_leave_the_parents_slot_alone() {
    let w = two_children_on(2);
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    assert_eq!(chats.len(), 4);
    // Before it knew, the parent was not pinned; from then on slot 0 is
    // its own and the children take slot 1, one after the other.
    assert!(chats[0].get("id_slot").is_none(), "{}", chats[0]);
    assert_eq!(chats[1]["id_slot"], 1);
    assert_eq!(chats[2]["id_slot"], 1);
    assert_eq!(chats[3]["id_slot"], 0);
    let events = events(&out.stdout);
    let end_of_first = events
        .iter()
        .position(|e| e["type"] == "tool_end" && e["tool"] == "task")
        .unwrap();
    assert_eq!(events[end_of_first]["id"], "t1", "{events:#?}");
}

#[test]
fn a_server_with_one_slot_runs_the_children_one_after_the_other() {
    let w = two_children_on(1);
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    assert!(chats.iter().all(|c| c.get("id_slot").is_none()));
    let events = events(&out.stdout);
    // The second child asks nothing of the model before the first ended.
    let end_of_t1 = events
        .iter()
        .position(|e| e["type"] == "tool_end" && e["id"] == "t1")
        .unwrap();
    let t2_thinks = events
        .iter()
        .position(|e| e["parent"] == "t2" && e["type"] == "status" && e["text"] == "Thinking")
        .unwrap();
    assert!(end_of_t1 < t2_thinks, "{events:#?}");
    assert_eq!(result_of(&chats[3], "t1"), "first");
    assert_eq!(result_of(&chats[3], "t2"), "second");
}

#[test]
fn a_child_whose_steps_outgrow_the_window_is_compacted_and_keeps_its_task() {
    // A 4000-token window: three long reads take the child past
    // compact.threshold, so its steps are summarised on its own engine
    // before its next request, and its task stays.
    let w = World::new(
        vec![
            call(
                "t1",
                "task",
                json!({"description": "read", "prompt": "CHILD-TASK: read the three logs"}),
            ),
            call("r1", "read_file", json!({"path": "a.log"})),
            call("r2", "read_file", json!({"path": "b.log"})),
            call("r3", "read_file", json!({"path": "c.log"})),
            Reply::text("CHILD-SUMMARY: a.log and b.log hold only their letters."),
            Reply::text("The logs hold letters."),
            Reply::text("ok"),
        ],
        "contextWindow: 4000\n",
    );
    for (name, letter) in [("a.log", "A"), ("b.log", "B"), ("c.log", "C")] {
        let line = format!("{}\n", letter.repeat(60));
        std::fs::write(w.cwd.join(name), line.repeat(100)).unwrap();
    }
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    assert_eq!(chats.len(), 7, "{chats:#?}");
    // The summary request: no tools, the child's older steps.
    let summary = &chats[4];
    assert!(declared(summary).is_empty());
    let asked = common::all_text(summary);
    for seen in ["CHILD-TASK", "AAAA", "BBBB", "CCCC"] {
        assert!(asked.contains(seen), "{seen} not in {asked}");
    }
    // The child's next request: the summary and the task, not the reads
    // (the latest alone is longer than what a 4000-token window keeps).
    let next = common::all_text(&chats[5]);
    assert!(next.contains("CHILD-SUMMARY"), "{next}");
    assert!(next.contains("CHILD-TASK"), "{next}");
    assert!(!next.contains("AAAA") && !next.contains("CCCC"), "{next}");
    assert!(next.len() < 2000, "{next}");
    assert_eq!(result_of(&chats[6], "t1"), "The logs hold letters.");
    let notices: Vec<String> = events(&out.stdout)
        .iter()
        .filter(|e| e["type"] == "notice")
        .map(|e| e.to_string())
        .collect();
    assert!(
        notices.iter().any(|n| n.contains("compacted: ")),
        "{notices:?}"
    );
}

#[test]
fn a_child_request_the_server_refuses_as_too_long_is_compacted_and_sent_again() {
    let w = World::new(
        vec![
            call(
                "t1",
                "task",
                json!({"description": "read", "prompt": "CHILD-TASK: read the log"}),
            ),
            call("r1", "read_file", json!({"path": "a.log"})),
            Reply::status(400, "This model's maximum context length is 3000 tokens"),
            Reply::text("CHILD-SUMMARY: a.log holds only As."),
            Reply::text("The log holds As."),
            Reply::text("ok"),
        ],
        "contextWindow: 4000\n",
    );
    let line = format!("{}\n", "A".repeat(60));
    std::fs::write(w.cwd.join("a.log"), line.repeat(100)).unwrap();
    let out = w.run(&["-p", QUESTION, "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let chats = w.chats();
    assert_eq!(chats.len(), 6, "{chats:#?}");
    assert!(
        declared(&chats[3]).is_empty(),
        "the summary request has no tools"
    );
    // Sent again: the summary and the task instead of the read.
    let again = common::all_text(&chats[4]);
    assert!(
        again.contains("CHILD-SUMMARY") && again.contains("CHILD-TASK"),
        "{again}"
    );
    assert!(!again.contains("AAAA"), "{again}");
    assert_eq!(result_of(&chats[5], "t1"), "The log holds As.");
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("did not fit the model's window; compacted: "),
        "{stdout}"
    );
}
