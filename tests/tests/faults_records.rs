#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The fault suite, honest records: what a session file says after mm was
//! killed in the middle of a command, what `--continue` says of a session
//! file that is truncated, empty or garbage (and that it leaves it as it
//! is), and what a script is told when the session could not be saved.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Options, Recorded, Reply};
use mm_tests::child::{Finished, Running, built_binary};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;

const BOUND: Duration = Duration::from_secs(60);
const CONFIG: &str = "retries: 1\nwatchdog: 30\nbashTimeout: 60\n";
/// What a call that was running when mm died is recorded as.
const INTERRUPTED: &str =
    "[interrupted: mm stopped while the call was running; its effects may be partial]";
const NOT_RUN: &str = "[not run: the turn was stopped]";

fn repl() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built_binary("mm-repl")).clone().unwrap()
}

fn base(server: &MockServer) -> String {
    format!("{}/v1", server.url())
}

async fn finish(running: Running) -> Finished {
    tokio::task::spawn_blocking(move || running.wait(BOUND))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("mm-repl: {e}"))
}

async fn run(sb: &Sandbox, server: &MockServer, args: &[&str]) -> Finished {
    let mut cmd = sb.command(&repl(), &base(server));
    cmd.args(args);
    finish(Running::spawn(&mut cmd).unwrap()).await
}

/// The content of the tool message answering `call_id` in `req`.
fn tool_result(req: &Recorded, call_id: &str) -> String {
    let found: Vec<&Value> = req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .collect();
    assert_eq!(found.len(), 1, "results for {call_id}: {found:?}");
    found[0]["content"].as_str().unwrap().to_owned()
}

/// mm-repl runs a command that leaves a marker and sleeps; once the
/// marker is there, `stop` ends mm-repl. Then `--continue` must send the
/// call's result as interrupted, not as never run.
async fn stopped_mid_command(stop: impl FnOnce(&Running)) {
    let sb = Sandbox::new(CONFIG).unwrap();
    let marker = sb.work.join("ran.marker");
    let server = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            format!(r#"{{"command": "touch '{}'; sleep 30"}}"#, marker.display()),
        ),
        Reply::text("after"),
    ])
    .await
    .unwrap();
    let mut cmd = sb.command(&repl(), &base(&server));
    cmd.args(["-p", "go"]);
    let running = Running::spawn(&mut cmd).unwrap();
    let deadline = Instant::now() + BOUND;
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the command never ran");
        assert!(!running.has_ended(), "mm-repl ended before the command ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop(&running);
    let done = finish(running).await;
    assert_ne!(done.code, Some(0), "{}", done.describe());

    let again = run(&sb, &server, &["--continue", "-p", "what happened?"]).await;
    assert_eq!(again.code, Some(0), "{}", again.describe());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let result = tool_result(&reqs[1], "c1");
    assert_ne!(result, NOT_RUN, "the command ran: its marker exists");
    assert_eq!(result, INTERRUPTED);
    // The sleep died with mm (parent-death signal, process group).
    let grace = Instant::now() + Duration::from_secs(5);
    while !sb.leftovers(&[]).is_empty() && Instant::now() < grace {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(sb.leftovers(&[]).is_empty(), "{:?}", sb.leftovers(&[]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_command_is_recorded_as_interrupted() {
    stopped_mid_command(Running::kill9).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_command_is_recorded_as_interrupted() {
    stopped_mid_command(|running| {
        // SAFETY: sending a signal to a child we started.
        unsafe { libc::kill(running.pid(), libc::SIGTERM) };
    })
    .await;
}

/// A server that answers every question with "ok".
async fn answering() -> MockServer {
    MockServer::start_with(
        vec![Reply::text("ok")],
        Options {
            port: 0,
            repeat: true,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// What a damage does to a session file's bytes.
type Damage = fn(&[u8]) -> Vec<u8>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_session_file_is_named_by_continue_and_left_as_it_is() {
    let server = answering().await;
    let cases: [(&str, Damage, &str); 3] = [
        (
            "truncated",
            |b| b[..b.len() / 2].to_vec(),
            "is corrupt: EOF while parsing",
        ),
        ("empty", |_| Vec::new(), "is corrupt: the file is empty"),
        (
            "garbage",
            |_| b"\x00\x01garbage".to_vec(),
            "is corrupt: expected value",
        ),
    ];
    for (what, damage, says) in cases {
        let sb = Sandbox::new(CONFIG).unwrap();
        let first = run(&sb, &server, &["-p", "hi"]).await;
        assert_eq!(first.code, Some(0), "{}", first.describe());
        let files = sb.session_files();
        assert_eq!(files.len(), 1);
        let file = &files[0];
        let broken = damage(&std::fs::read(file).unwrap());
        std::fs::write(file, &broken).unwrap();

        let done = run(&sb, &server, &["--continue", "-p", "next"]).await;
        assert_ne!(done.code, Some(0), "{what}: {}", done.describe());
        let path = file.display().to_string();
        assert!(
            done.stderr.contains(&path) && done.stderr.contains(says),
            "{what}: the error does not name {path} and {says:?}: {}",
            done.describe()
        );
        assert!(!done.stderr.contains("no saved session"), "{what}");
        assert_eq!(
            std::fs::read(file).unwrap(),
            broken,
            "{what}: the file was touched"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_newer_session_is_not_passed_over_for_an_older_one() {
    let server = answering().await;
    let sb = Sandbox::new(CONFIG).unwrap();
    assert_eq!(run(&sb, &server, &["-p", "old"]).await.code, Some(0));
    assert_eq!(run(&sb, &server, &["-p", "new"]).await.code, Some(0));
    let mut files = sb.session_files();
    assert_eq!(files.len(), 2);
    files.sort_by_key(|f| std::fs::metadata(f).unwrap().modified().unwrap());
    let newest = files[1].clone();
    std::fs::write(&newest, b"{\"version\":").unwrap();
    let done = run(&sb, &server, &["--continue", "-p", "next"]).await;
    assert_ne!(done.code, Some(0), "{}", done.describe());
    assert!(
        done.stderr.contains(&newest.display().to_string()),
        "{}",
        done.describe()
    );
}

/// `bin` with `RLIMIT_FSIZE` at `bytes` and SIGXFSZ ignored: a write past
/// it fails with "File too large", the way a full disk fails a write.
fn with_file_size_limit(cmd: &mut std::process::Command, bytes: u64) {
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
}

fn json_lines(done: &Finished) -> Vec<Value> {
    done.stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_written_fails_the_json_run() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![
        Reply::tool_call(
            "c1",
            "bash",
            r#"{"command": "head -c 5000 /dev/zero | tr '\\0' a"}"#,
        ),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let mut cmd = sb.command(&repl(), &base(&server));
    cmd.args(["-p", "hi", "--output-format", "json"]);
    with_file_size_limit(&mut cmd, 3000);
    let done = finish(Running::spawn(&mut cmd).unwrap()).await;
    assert_eq!(done.code, Some(1), "{}", done.describe());
    let lines = json_lines(&done);
    let errors: Vec<&Value> = lines.iter().filter(|l| l["type"] == "error").collect();
    assert!(
        errors.iter().any(|e| e["text"]
            .as_str()
            .unwrap()
            .starts_with("session not saved: ")),
        "{lines:?}"
    );
    assert!(
        done.stderr_lines()
            .iter()
            .any(|l| l.starts_with("error: session not saved: ") && l.contains("too large")),
        "{}",
        done.describe()
    );
    // What is on disk is whole: the last save that fitted.
    let all = sb.sessions().unwrap();
    assert_eq!(all.len(), 1);
    assert!(sb.temp_files().is_empty(), "{:?}", sb.temp_files());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_folder_that_cannot_be_made_fails_the_json_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let sessions = file.join("sessions");
    let sb = Sandbox::new(&format!(
        "{CONFIG}sessions:\n  dir: {}\n",
        sessions.display()
    ))
    .unwrap();
    let server = answering().await;
    let done = run(&sb, &server, &["-p", "hi", "--output-format", "json"]).await;
    assert_eq!(done.code, Some(1), "{}", done.describe());
    let lines = json_lines(&done);
    assert!(
        lines.iter().any(|l| l["type"] == "error"
            && l["text"]
                .as_str()
                .unwrap()
                .starts_with("session not saved: ")),
        "{lines:?}"
    );
    assert_eq!(lines[lines.len() - 2]["type"], "turn_end");
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["outcome"], "not_saved", "{result}");
    assert!(Path::new(&file).is_file());
}

/// A server that gives two calls of one reply the same id: both run, each
/// is reported under its own id, and each result goes back under the id of
/// its own call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_under_one_id_are_told_apart() {
    use mm_mock::Step;
    let sb = Sandbox::new(CONFIG).unwrap();
    let call = |index: usize, word: &str| Step::ToolCall {
        index,
        id: Some("call_0".into()),
        name: "bash".into(),
        arguments: format!(r#"{{"command": "echo {word}"}}"#),
    };
    let server = MockServer::start(vec![
        Reply::stream(vec![call(0, "first"), call(1, "second")]),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let done = run(&sb, &server, &["-p", "hi", "--output-format", "json"]).await;
    assert_eq!(done.code, Some(0), "{}", done.describe());
    let lines = json_lines(&done);
    let ids = |kind: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["type"] == kind)
            .map(|l| {
                let id = if kind == "tool_start" {
                    &l["info"]["id"]
                } else {
                    &l["id"]
                };
                id.as_str().unwrap().to_owned()
            })
            .collect()
    };
    assert_eq!(ids("tool_start"), ["call_0", "call_0_2"], "{lines:?}");
    assert_eq!(ids("tool_end"), ["call_0", "call_0_2"], "{lines:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let sent: Vec<&str> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(sent, ["call_0", "call_0_2"]);
    assert!(tool_result(&requests[1], "call_0").contains("first"));
    assert!(tool_result(&requests[1], "call_0_2").contains("second"));
}

/// A project whose folder name is not UTF-8 keeps its session: it is
/// saved, and `--continue` carries on from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_folder_that_is_not_utf8_keeps_its_session() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new(CONFIG).unwrap();
    let odd = sb.work.join(std::ffi::OsStr::from_bytes(b"caf\xe9-\xff"));
    std::fs::create_dir(&odd).unwrap();
    let server = answering().await;
    for question in ["first question", "second question"] {
        let mut cmd = sb.command(&repl(), &base(&server));
        cmd.current_dir(&odd);
        if question.starts_with("second") {
            cmd.arg("--continue");
        }
        cmd.args(["-p", question]);
        let done = finish(Running::spawn(&mut cmd).unwrap()).await;
        assert_eq!(done.code, Some(0), "{question}: {}", done.describe());
        assert!(
            !done.stderr.contains("not saved"),
            "{question}: {}",
            done.describe()
        );
    }
    assert_eq!(sb.session_files().len(), 1);
    let requests = server.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains("first question") && last.contains("second question"),
        "--continue did not carry the first exchange: {last}"
    );
}
