#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A command dies with mm even when mm is SIGKILLed and cannot clean up
//! (decisions.md 13: parent-death signal). The test runs this binary again
//! as the "mm" that dies.

mod bash_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bash_support::*;

const ROLE: &str = "MM_TEST_PDEATHSIG_CHILD";

/// In the child role: start a long command, print its pid, then wait to
/// be killed.
#[tokio::test]
async fn child_role() {
    if std::env::var_os(ROLE).is_none() {
        return;
    }
    let dir = TempDir::new();
    let (b, registry) = bash(120, 30_000);
    let c = ctx(dir.path());
    let watcher = registry.clone();
    tokio::spawn(async move {
        while watcher.running().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let bash exec into sleep, then report the pid.
        tokio::time::sleep(Duration::from_millis(300)).await;
        println!("PID={}", watcher.running()[0]);
    });
    let _ = b.execute("exec sleep 120", &c).await;
}

#[test]
fn command_dies_when_mm_is_killed() {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test child_role ... " on the same line.
            if let Some((_, pid)) = line.split_once("PID=") {
                let _ = tx.send(pid.trim().parse::<i32>().unwrap());
                return;
            }
        }
    });
    let pid = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("child never started the command");
    assert!(alive(pid));
    child.kill().unwrap(); // SIGKILL: no destructor, no registry runs
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        if Instant::now() > until {
            // SAFETY: kill has no memory effects; do not leave it behind.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the command outlived mm");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
