//! A looping answer stops (issue 30): through `mm-repl -p` against the
//! mock, a model repeating one line is cut after the first copy, the turn
//! ends with its own outcome, and a long table is never taken for a loop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, text};
use mm_mock::{Reply, Step};

const LINE: &str = "I'm here to help you with your coding.\n";

fn looping_reply(copies: usize) -> Reply {
    let mut steps = vec![Step::text("Sure.\n")];
    for _ in 0..copies {
        // Each line arrives in two pieces, as tokens do.
        steps.push(Step::text(&LINE[..10]));
        steps.push(Step::text(&LINE[10..]));
    }
    Reply::stream(steps)
}

/// The stored messages of the only session of the world.
fn stored_messages(w: &World) -> Vec<serde_json::Value> {
    let mut files = Vec::new();
    let mut dirs = vec![w.user.path().join("data")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    assert_eq!(files.len(), 1, "{files:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    v["messages"].as_array().unwrap().clone()
}

#[test]
fn a_looping_answer_is_stopped_and_one_copy_kept() {
    let w = World::new(vec![looping_reply(400)], "");
    let out = w.run(&["-p", "hello"], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("[stopped: the answer repeated the same passage"),
        "{stderr}"
    );
    // Shown: at most the copies that made the loop plain, never the 400.
    assert!(stdout.matches(LINE).count() < 20, "{stdout}");
    let messages = stored_messages(&w);
    let answer = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(answer["content"], format!("Sure.\n{LINE}"), "{answer}");
}

#[test]
fn the_json_turn_end_says_repeated() {
    let w = World::new(vec![looping_reply(400)], "");
    let out = w.run(&["-p", "hello", "--output-format", "json"], None);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let end = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "turn_end")
        .unwrap();
    assert_eq!(end["outcome"], "repeated", "{stdout}");
}

#[test]
fn a_table_of_200_rows_is_answered_whole() {
    let mut table = String::from("| id | name | status |\n|---|---|---|\n");
    for i in 0..200 {
        table.push_str(&format!("| {i} | item-{i} | ok |\n"));
    }
    let steps = table
        .as_bytes()
        .chunks(7)
        .map(|c| Step::text(String::from_utf8_lossy(c).into_owned()))
        .collect();
    let w = World::new(vec![Reply::stream(steps)], "");
    let out = w.run(&["-p", "hello"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), table.trim_end());
}
