#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A command dies with mm even when mm is SIGKILLed and cannot clean up
//! (docs/design.md#parent-death-signal). Two mechanisms, each tested
//! alone: the parent-death signal on `bash` itself, and the guard in the
//! command's group that kills the group (grandchildren included, which the
//! signal does not reach). The tests run this binary again as the "mm"
//! that dies.

mod bash_support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bash_support::*;

const ROLE: &str = "MM_TEST_PDEATHSIG_CHILD";

/// In the child role: run the command `$MM_TEST_PDEATHSIG_CHILD`, print its
/// group id once it runs, then wait to be killed.
#[tokio::test]
async fn child_role() {
    let Some(command) = std::env::var_os(ROLE) else {
        return;
    };
    let dir = TempDir::new();
    let (b, registry) = bash(120);
    let c = ctx(dir.path());
    let watcher = registry.clone();
    tokio::spawn(async move {
        while watcher.running().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let bash start the command, then report the group.
        tokio::time::sleep(Duration::from_millis(300)).await;
        println!("PGID={}", watcher.running()[0]);
    });
    let _ = b.execute(command.to_str().unwrap(), &c).await;
}

/// Starts the fake mm running `command`; returns it and the command's group.
fn fake_mm(command: &str) -> (Child, i32) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE, command)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test child_role ... " on the same line.
            if let Some((_, pid)) = line.split_once("PGID=") {
                let _ = tx.send(pid.trim().parse::<i32>().unwrap());
                return;
            }
        }
    });
    let pgid = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("child never started the command");
    (child, pgid)
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// SIGKILL: no destructor, no registry, nothing of mm runs.
fn kill_mm(mut mm: Child) {
    mm.kill().unwrap();
    mm.wait().unwrap();
}

/// Waits (bounded) for `pid` to die; kills it and fails if it does not.
fn assert_dies(pid: i32, what: &str) {
    if !mm_test_support::procs::wait_gone(pid, Duration::from_secs(5)) {
        // SAFETY: kill has no memory effects; do not leave it behind.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("{what} outlived mm");
    }
}

#[test]
fn command_dies_when_mm_is_killed_by_the_parent_death_signal() {
    // `exec sleep`: the command is bash itself, which leads the group.
    let (mm, pgid) = fake_mm("exec sleep 120");
    assert!(alive(pgid));
    assert_eq!(comm(pgid), "sleep");
    // Take the guard away first, so that only the signal can do it.
    let guards: Vec<i32> = group_members(pgid)
        .into_iter()
        .filter(|&p| p != pgid)
        .collect();
    assert_eq!(guards.len(), 1, "one guard in the group: {guards:?}");
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(guards[0], libc::SIGKILL) };
    assert_dies(guards[0], "the guard");
    assert!(alive(pgid));
    kill_mm(mm);
    assert_dies(pgid, "the command");
}

#[test]
fn grandchildren_die_when_mm_is_killed() {
    // `sleep` is forked by bash, so the parent-death signal is not set on
    // it: only the guard can end it.
    let (mm, pgid) = fake_mm("sleep 120; true");
    let sleeps: Vec<i32> = group_members(pgid)
        .into_iter()
        .filter(|&p| comm(p) == "sleep")
        .collect();
    assert_eq!(sleeps.len(), 1, "{:?}", group_members(pgid));
    let sleep = sleeps[0];
    assert_ne!(sleep, pgid);
    kill_mm(mm);
    assert_dies(sleep, "the grandchild");
    assert_group_gone(pgid);
}
