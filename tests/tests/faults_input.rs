#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The fault suite, hostile input: an endless stdin, SIGTERM while the
//! question is still being read, and a language server that sends a frame
//! of absurd size, all through the built `mm-repl`. Each case checks that
//! mm ends as it should (never an abort), says why, and stays within
//! bounded memory.

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Reply};
use mm_tests::child::{Running, built_binary};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;

const CONFIG: &str = "retries: 1\nwatchdog: 30\n";
const BOUND: Duration = Duration::from_secs(60);

fn repl() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built_binary("mm-repl")).clone().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stdin_is_refused_past_its_bound() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![Reply::text("never")]).await.unwrap();
    let (reader, mut writer) = std::io::pipe().unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["-p", "-"]).stdin(reader);
    let running = Running::spawn(&mut cmd).unwrap();
    drop(cmd);
    // `yes`: writes until mm closes its end.
    std::thread::spawn(move || {
        let chunk = "y\n".repeat(32 * 1024);
        while writer.write_all(chunk.as_bytes()).is_ok() {}
    });
    let done = tokio::task::spawn_blocking(move || running.wait(BOUND))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("mm-repl: {e}"));
    assert_eq!(done.code, Some(2), "{}", done.describe());
    assert_eq!(
        done.stderr.trim_end(),
        "mm-repl: the question on stdin is larger than 4 MiB; give a shorter one (a long text \
         can go in a file the question names with @path)"
    );
    assert!(
        done.max_rss_kib < 64 * 1024,
        "peak RSS {} KiB reading an endless stdin",
        done.max_rss_kib
    );
    assert!(server.requests().is_empty(), "the model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_mm_while_it_waits_for_the_question() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let server = MockServer::start(vec![Reply::text("never")]).await.unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["-p", "-"]).stdin(reader);
    let running = Running::spawn(&mut cmd).unwrap();
    drop(cmd);
    // The log's start line comes after the signal handler is in place and
    // just before the question is read.
    let log = sb.state_home.join("mm/mm-repl.log");
    let until = Instant::now() + BOUND;
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("starting")) {
        assert!(Instant::now() < until, "mm-repl never started");
        assert!(!running.has_ended(), "mm-repl ended before the signal");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: a plain signal to our own child.
    unsafe {
        libc::kill(running.pid(), libc::SIGTERM);
    }
    let done = tokio::task::spawn_blocking(move || running.wait(Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("SIGTERM did not end mm-repl waiting on stdin: {e}"));
    assert_eq!(done.code, Some(128 + libc::SIGTERM), "{}", done.describe());
    drop(writer);
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_language_server_sending_a_huge_frame_is_a_tool_text() {
    let sb = Sandbox::new(CONFIG).unwrap();
    std::fs::write(sb.work.join("a.fake"), "x\n").unwrap();
    let starts = sb.home.join("starts");
    let script = sb.home.join("server.sh");
    std::fs::write(
        &script,
        format!(
            "echo $$ >> '{}'\nprintf 'Content-Length: 99999999999999\\r\\n\\r\\n'\nexec sleep 120\n",
            starts.display()
        ),
    )
    .unwrap();
    std::fs::write(
        sb.user_config(),
        format!(
            "{CONFIG}lsp:\n  servers:\n    - {{name: fake, command: bash, args: ['{}'], \
             extensions: ['.fake']}}\n",
            script.display()
        ),
    )
    .unwrap();
    let args = r#"{"action": "symbols", "path": "a.fake"}"#;
    let server = MockServer::start(vec![
        Reply::tool_call("c1", "lsp", args),
        Reply::tool_call("c2", "lsp", args),
        Reply::text("done"),
    ])
    .await
    .unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["-p", "hi"]);
    let running = Running::spawn(&mut cmd).unwrap();
    let done = tokio::task::spawn_blocking(move || running.wait(BOUND))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("mm-repl: {e}"));
    // Before the frame guard: "memory allocation of 99999999999999 bytes
    // failed" and exit 134.
    assert_eq!(done.code, Some(0), "{}", done.describe());
    assert!(
        done.max_rss_kib < 100 * 1024,
        "peak RSS {} KiB",
        done.max_rss_kib
    );
    let reqs = server.requests();
    let result = |i: usize, id: &str| -> String {
        let found: Vec<&Value> = reqs[i].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        found[0]["content"].as_str().unwrap().to_owned()
    };
    let want = "[lsp: fake: initialize failed: the server stopped: it sent a frame of \
                99999999999999 bytes, more than the 64 MiB mm accepts]";
    assert_eq!(result(1, "c1"), want);
    assert_eq!(result(2, "c2"), want);
    let starts = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(starts.lines().count(), 2, "started again on the next call");
    let grace = Instant::now() + Duration::from_secs(5);
    while !sb.leftovers(&[]).is_empty() && Instant::now() < grace {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        sb.leftovers(&[]),
        Vec::<i32>::new(),
        "the server outlived mm"
    );
}
