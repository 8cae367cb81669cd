#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Server processes without a real language server: a stand-in that never
//! answers dies with mm even when mm is SIGKILLed (parent-death signal,
//! decisions.md 13: it ignores its stdin, so only the signal can end it),
//! and a server that fails to start gives a text naming why.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mm_lsp::{Action, Query};
use support::{Project, call, config};

const ROLE: &str = "MM_TEST_LSP_PDEATHSIG_CHILD";

/// In the child role (the "mm" that dies): start a stand-in server that
/// writes its pid and sleeps, then wait to be killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_role() {
    let Some(pid_file) = std::env::var_os(ROLE) else {
        return;
    };
    let p = Project::new(&[("a.fake", "x\n")]);
    let script = format!("echo $$ > {}; exec sleep 120", pid_file.to_string_lossy());
    let c = p.client(vec![config("fake", "bash", &["-c", &script], &[".fake"])]);
    println!("STARTING");
    // Never answers `initialize`: the call waits until the process dies.
    let _ = call(&c, Query::new(Action::Symbols, "a.fake")).await;
}

#[test]
fn a_server_dies_when_mm_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE, &pid_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || BufReader::new(stdout).lines().for_each(drop));
    let until = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < until, "the stand-in server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Let bash exec into sleep.
    std::thread::sleep(Duration::from_millis(200));
    assert!(support::process_exists(pid));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    while support::process_exists(pid) {
        if Instant::now() > until {
            support::kill(pid);
            panic!("the server outlived mm");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_says_why() {
    let p = Project::new(&[("a.fake", "x\n")]);
    let c = p.client(vec![config(
        "fake",
        "bash",
        &["-c", "echo 'error: no such toolchain' >&2; exit 1"],
        &[".fake"],
    )]);
    let out = call(&c, Query::new(Action::Symbols, "a.fake")).await;
    assert_eq!(
        out,
        "[lsp: fake: initialize failed: the server stopped: error: no such toolchain]"
    );
    // Tried again on the next call, with the same answer.
    let out = call(&c, Query::new(Action::Hover, "a.fake").symbol("x")).await;
    assert_eq!(
        out,
        "[lsp: fake: initialize failed: the server stopped: error: no such toolchain]"
    );
}

#[test]
fn servers_not_on_the_path_are_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let c = mm_lsp::Client::new(
        vec![
            config("gopls", "mm-test-no-such-gopls", &[], &[".go"]),
            config("sh", "bash", &[], &[".sh"]),
        ],
        dir.path().to_path_buf(),
    );
    assert_eq!(
        c.warnings(),
        ["[warning: lsp server gopls (mm-test-no-such-gopls) not found on the PATH — skipped]"]
    );
    assert_eq!(c.servers_line(), "sh (.sh)");
}
