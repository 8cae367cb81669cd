#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Server processes without a real language server: a stand-in that never
//! answers dies with mm even when mm is SIGKILLed (parent-death signal,
//! docs/design.md#parent-death-signal: it ignores its stdin, so only the
//! signal can end it), and a server that fails to start gives a text
//! naming why.

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
    if !mm_test_support::procs::wait_gone(pid as i32, Duration::from_secs(5)) {
        support::kill(pid);
        panic!("the server outlived mm");
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

/// The pids a stand-in server appended to `file`, one per start.
fn started(file: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_frame_is_the_tool_text_and_the_server_starts_again() {
    // Before the frame guard, the first call aborted the whole process
    // ("memory allocation of 99999999999999 bytes failed").
    let p = Project::new(&[("a.fake", "x\n")]);
    let starts = p.root().join("starts");
    let script = format!(
        "echo $$ >> '{}'; printf 'Content-Length: 99999999999999\\r\\n\\r\\n'; exec sleep 120",
        starts.display()
    );
    let c = p.client(vec![config("fake", "bash", &["-c", &script], &[".fake"])]);
    let want = "[lsp: fake: initialize failed: the server stopped: it sent a frame of \
                99999999999999 bytes, more than the 64 MiB mm accepts]";
    assert_eq!(call(&c, Query::new(Action::Symbols, "a.fake")).await, want);
    let first = started(&starts);
    assert_eq!(first.len(), 1);
    support::wait_gone(first[0]).await;
    // The next call starts the server again, and gets the same text.
    assert_eq!(
        call(&c, Query::new(Action::Hover, "a.fake").symbol("x")).await,
        want
    );
    assert_eq!(started(&starts).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_header_line_is_cut_at_its_bound() {
    let p = Project::new(&[("a.fake", "x\n")]);
    let c = p.client(vec![config(
        "fake",
        "bash",
        &["-c", "yes x | tr -d '\\n'"],
        &[".fake"],
    )]);
    assert_eq!(
        call(&c, Query::new(Action::Symbols, "a.fake")).await,
        "[lsp: fake: initialize failed: the server stopped: it sent a header line longer \
         than 8 KiB]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_name_that_is_not_an_identifier_renames_nothing() {
    let p = Project::new(&[("a.fake", "name x\n")]);
    let starts = p.root().join("starts");
    let script = format!("echo $$ >> '{}'; exec sleep 120", starts.display());
    let c = p.client(vec![config("fake", "bash", &["-c", &script], &[".fake"])]);
    let q = Query::new(Action::Rename, "a.fake")
        .symbol("x")
        .new_name("1bad-name");
    assert_eq!(
        call(&c, q).await,
        "[lsp: \"1bad-name\" is not an identifier: a new name is letters, digits, _ and $, \
         not starting with a digit; nothing was renamed]"
    );
    assert_eq!(
        std::fs::read_to_string(p.root().join("a.fake")).unwrap(),
        "name x\n"
    );
    assert!(started(&starts).is_empty(), "a server was asked");
}

/// In the child role: start a stand-in server that starts a child of its
/// own and never answers `initialize`, write both pids, then end the
/// process with `exit` while the call waits (no destructor runs, as when
/// mm-acp's stdin closes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_role() {
    let Some(pid_file) = std::env::var_os(EXIT_ROLE) else {
        return;
    };
    let p = Project::new(&[("a.fake", "x\n")]);
    let pids = pid_file.to_string_lossy().into_owned();
    let script = format!(
        "sleep 120 & echo \"$$ $!\" > '{pids}.tmp'; mv '{pids}.tmp' '{pids}'; exec sleep 120"
    );
    let c = p.client(vec![config("fake", "bash", &["-c", &script], &[".fake"])]);
    let waiting = tokio::spawn(async move {
        let _ = call(&c, Query::new(Action::Symbols, "a.fake")).await;
    });
    let until = Instant::now() + Duration::from_secs(30);
    while !std::path::Path::new(&pids).exists() {
        assert!(Instant::now() < until, "the stand-in server never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::process::exit(if waiting.is_finished() { 1 } else { 0 });
}

const EXIT_ROLE: &str = "MM_TEST_LSP_EXIT_CHILD";

#[test]
fn a_server_and_its_children_die_when_mm_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let exe = std::env::current_exe().unwrap();
    let status = Command::new(exe)
        .args(["--exact", "exit_role", "--nocapture", "--test-threads=1"])
        .env(EXIT_ROLE, &pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    let gone = mm_test_support::wait_for(Duration::from_secs(5), || {
        !pids.iter().any(|&p| support::process_exists(p))
    });
    if !gone {
        pids.iter().for_each(|&p| {
            if support::process_exists(p) {
                support::kill(p);
            }
        });
        panic!("the server or its child outlived mm: {pids:?}");
    }
}
