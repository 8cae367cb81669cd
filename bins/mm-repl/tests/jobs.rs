//! Background commands end to end: `bash` with `"background": true`,
//! `job_output`, `job_kill`, through the built `mm-repl -p` against the
//! mock model, with real processes; and no job outlives mm, whether it
//! exits or is sent SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod contract_support;

use std::time::Duration;

use common::{BOUND, wait_for};
use contract_support::*;
use mm_mock::Reply;
use mm_test_support::procs;
use serde_json::json;

fn bash(command: &str) -> (&'static str, String) {
    ("bash", args(json!({ "command": command })))
}

fn background(command: &str) -> (&'static str, String) {
    (
        "bash",
        args(json!({ "command": command, "background": true })),
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A command line no other process has: `sleep` for a time no test else
/// uses, so that `procs::with_cmdline` finds only this test's job.
fn unique_sleep() -> String {
    let n = std::process::id() as u64 * 1000 + u64::from(free_port() % 1000);
    format!("sleep {}.{}", 1000 + n % 9000, n % 997)
}

#[test]
fn a_background_server_answers_later_calls_shows_its_log_and_stops_when_killed() {
    let port = free_port();
    let curl = format!(
        "curl -s --retry 20 --retry-connrefused --retry-delay 1 -o /dev/null -w '%{{http_code}}' \
         http://127.0.0.1:{port}/hello.txt"
    );
    let got = run_calls(
        &[
            background(&format!(
                "python3 -u -m http.server {port} --bind 127.0.0.1"
            )),
            bash(&curl),
            ("job_output", args(json!({"id": 1}))),
            ("job_output", args(json!({"id": "1"}))),
            ("job_kill", args(json!({"id": 1}))),
            bash(&format!("curl -s http://127.0.0.1:{port}/ > /dev/null")),
            ("job_output", args(json!({"id": 2}))),
        ],
        "",
        |w| put(&w.cwd, "hello.txt", b"hi\n"),
    );
    assert!(
        got[0].starts_with("Serving HTTP on 127.0.0.1"),
        "{}",
        got[0]
    );
    assert!(
        got[0].ends_with(
            "[job 1 runs in the background: job_output {\"id\": 1} shows what it prints next, \
             job_kill {\"id\": 1} stops it]"
        ),
        "{}",
        got[0]
    );
    assert_eq!(got[1], "200");
    assert!(
        got[2].contains("\"GET /hello.txt HTTP/1.1\" 200"),
        "{}",
        got[2]
    );
    assert!(
        got[2].ends_with("s]") && got[2].contains("\n[job 1 running for "),
        "{}",
        got[2]
    );
    // Nothing new since the last look.
    assert!(
        got[3].starts_with("[job 1 running for ") && got[3].ends_with("; no new output]"),
        "{}",
        got[3]
    );
    assert!(
        got[4].ends_with("[job 1 ended: killed by signal 15 (SIGTERM)]"),
        "{}",
        got[4]
    );
    // The port is free again: nothing answers.
    assert_eq!(got[5], "[exit code: exit status 7]");
    assert_eq!(got[6], "no job 2; jobs: 1 (ended)");
}

#[test]
fn a_job_that_ends_within_two_seconds_gives_its_output_and_exit_status() {
    let got = run_calls(
        &[
            background("echo started; exit 3"),
            ("job_output", args(json!({"id": 1}))),
            ("job_kill", args(json!({"id": 1}))),
        ],
        "",
        |_| {},
    );
    assert_eq!(got[0], "started\n[job 1 ended: exit status 3]");
    assert_eq!(got[1], "[job 1 ended: exit status 3; no new output]");
    assert_eq!(got[2], "[job 1 had already ended: exit status 3]");
}

#[test]
fn no_job_outlives_mm_when_it_exits() {
    let sleep = unique_sleep();
    let w = world(&[background(&format!("{sleep}; true"))], "");
    let run = ask(&w);
    run.assert_ok();
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_cmdline(&sleep)
            .is_empty()),
        "the job outlived mm: {:?}",
        procs::with_cmdline(&sleep)
    );
}

#[test]
fn no_job_outlives_mm_when_it_gets_sigterm() {
    let sleep = unique_sleep();
    let w = World::new(
        vec![
            call(
                "c1",
                "bash",
                &args(json!({"command": format!("{sleep}; true"), "background": true})),
            ),
            call("c2", "bash", &args(json!({"command": "sleep 30"}))),
            Reply::text("never asked for"),
        ],
        "",
    );
    let mut child = w.command(&["-p", QUESTION]).spawn().unwrap();
    assert!(
        wait_for(BOUND, || !procs::with_cmdline(&sleep).is_empty()),
        "the job never started"
    );
    // The second call runs: mm is in the middle of a turn.
    assert!(
        wait_for(BOUND, || w.chats().len() >= 2),
        "no second request"
    );
    // SAFETY: kill with a pid this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let ended = wait_for(BOUND, || child.try_wait().unwrap().is_some());
    assert!(ended, "mm did not end on SIGTERM");
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_cmdline(&sleep)
            .is_empty()),
        "the job outlived mm: {:?}",
        procs::with_cmdline(&sleep)
    );
}

use common::World;

#[test]
fn jobs_lists_the_background_commands_kills_one_and_new_ends_the_rest() {
    use common::{expect, type_line};
    let first = unique_sleep();
    let second = first.replace("sleep ", "sleep 1");
    let w = World::new(
        vec![
            call(
                "c1",
                "bash",
                &args(json!({"command": format!("{first}; true"), "background": true})),
            ),
            Reply::text("First started."),
            call(
                "c2",
                "bash",
                &args(json!({"command": format!("{second}; true"), "background": true})),
            ),
            Reply::text("Second started."),
        ],
        "",
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, "mm> ");
    type_line(&mut s, "/jobs");
    expect(&mut s, "No background jobs.");
    expect(&mut s, "mm> ");
    type_line(&mut s, "start one");
    expect(&mut s, "First started.");
    expect(&mut s, "mm> ");
    type_line(&mut s, "start another");
    expect(&mut s, "Second started.");
    expect(&mut s, "mm> ");
    type_line(&mut s, "/jobs");
    expect(&mut s, "1  running  ");
    expect(&mut s, &format!("{first}; true"));
    expect(&mut s, "2  running  ");
    expect(&mut s, "mm> ");
    type_line(&mut s, "/jobs kill 1");
    expect(&mut s, "Job 1 ended: killed by signal 15 (SIGTERM).");
    expect(&mut s, "mm> ");
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_cmdline(&first)
            .is_empty()),
        "job 1 still runs: {:?}",
        procs::with_cmdline(&first)
    );
    assert!(
        !procs::with_cmdline(&second).is_empty(),
        "job 2 was killed too"
    );
    type_line(&mut s, "/jobs");
    expect(&mut s, "1  killed by signal 15 (SIGTERM)  ");
    expect(&mut s, "mm> ");
    type_line(&mut s, "/new");
    expect(&mut s, "mm> ");
    assert!(
        wait_for(Duration::from_secs(5), || procs::with_cmdline(&second)
            .is_empty()),
        "/new left job 2 running: {:?}",
        procs::with_cmdline(&second)
    );
    type_line(&mut s, "/quit");
    assert!(wait_for(Duration::from_secs(10), || !s
        .get_process()
        .is_alive()
        .unwrap_or(false)));
}
