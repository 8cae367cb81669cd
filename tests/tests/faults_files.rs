#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The fault suite, hostile files: the built `mm-repl` is pointed by a
//! scripted model at things in its project that are not ordinary files —
//! a device and a FIFO (made in the sandbox, never the machine's own), a
//! sparse gigabyte, a read-only file of another owner, a working directory
//! deleted under it. Each case checks what the model was told, that nothing
//! was replaced or re-created, that nothing hangs, and memory where it
//! matters.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use mm_mock::{MockServer, Recorded, Reply};
use mm_tests::child::{Finished, Running, built_binary};
use mm_tests::sandbox::Sandbox;
use serde_json::Value;

const CONFIG: &str = "retries: 1\nwatchdog: 30\nbashTimeout: 30\n";
const BOUND: Duration = Duration::from_secs(60);

fn repl() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| built_binary("mm-repl")).clone().unwrap()
}

/// `mm-repl -p hi` in the sandbox against a model that makes `calls` (id
/// `c1`, `c2`, …) one reply each, then answers "done"; bounded.
async fn run_calls(sb: &Sandbox, calls: &[(&str, String)]) -> (Finished, Vec<Recorded>) {
    let mut script: Vec<Reply> = calls
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| Reply::tool_call(format!("c{}", i + 1), *tool, args.clone()))
        .collect();
    script.push(Reply::text("done"));
    let server = MockServer::start(script).await.unwrap();
    let mut cmd = sb.command(&repl(), &format!("{}/v1", server.url()));
    cmd.args(["-p", "hi"]);
    let running = Running::spawn(&mut cmd).unwrap();
    let done = tokio::task::spawn_blocking(move || running.wait(BOUND))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("mm-repl: {e}"));
    (done, server.requests())
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

fn json_args(v: Value) -> String {
    v.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_in_the_project_is_never_replaced() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let dev = sb.work.join("mydev");
    let made = Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("SKIPPED a_device_in_the_project_is_never_replaced: mknod needs root");
        return;
    }
    let (done, reqs) = run_calls(
        &sb,
        &[
            (
                "write_file",
                json_args(serde_json::json!({"path": "mydev", "content": "x"})),
            ),
            (
                "edit_file",
                json_args(
                    serde_json::json!({"path": "mydev", "edits": [{"old": "a", "new": "b"}]}),
                ),
            ),
        ],
    )
    .await;
    assert_eq!(done.code, Some(0), "{}", done.describe());
    let refusal = "mydev is a character device, not a regular file; write_file and edit_file \
                   write only regular files";
    assert_eq!(tool_result(&reqs[1], "c1"), refusal);
    assert_eq!(tool_result(&reqs[2], "c2"), refusal);
    let meta = std::fs::symlink_metadata(&dev).unwrap();
    assert!(meta.file_type().is_char_device(), "replaced: {meta:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_never_hangs_the_turn() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let fifo = sb.work.join("pipe");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (done, reqs) = run_calls(
        &sb,
        &[("read_file", json_args(serde_json::json!({"path": "pipe"})))],
    )
    .await;
    assert_eq!(done.code, Some(0), "{}", done.describe());
    assert_eq!(
        tool_result(&reqs[1], "c1"),
        "pipe is a FIFO (named pipe), not a regular file; read_file reads only regular files"
    );
    assert!(sb.leftovers(&[]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_gigabyte_is_read_in_bounded_memory() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let big = sb.work.join("big.log");
    std::fs::write(&big, "first\nsecond\n").unwrap();
    let size: u64 = 1 << 30;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(size)
        .unwrap();
    let (done, reqs) = run_calls(
        &sb,
        &[(
            "read_file",
            json_args(serde_json::json!({"path": "big.log"})),
        )],
    )
    .await;
    assert_eq!(done.code, Some(0), "{}", done.describe());
    assert!(
        done.max_rss_kib < 100 * 1024,
        "peak RSS {} KiB reading a sparse gigabyte",
        done.max_rss_kib
    );
    let result = tool_result(&reqs[1], "c1");
    assert_eq!(
        result,
        format!(
            "first\nsecond\n[… truncated: lines 1–2 of at least 3 shown; the file is {size} bytes; \
             ask for start/end to read more]"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_file_of_another_owner_is_not_replaced() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let file = sb.work.join("theirs.txt");
    std::fs::write(&file, "v1\n").unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&file, Some(12345), Some(12345)).unwrap();
    }
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (done, reqs) = run_calls(
        &sb,
        &[(
            "write_file",
            json_args(serde_json::json!({"path": "theirs.txt", "content": "v2\n"})),
        )],
    )
    .await;
    assert_eq!(done.code, Some(0), "{}", done.describe());
    assert_eq!(
        tool_result(&reqs[1], "c1"),
        "theirs.txt is read-only (mode 0444); write_file and edit_file do not replace a file mm \
         may not write"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "v1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_working_directory_is_said_and_not_re_created() {
    let sb = Sandbox::new(CONFIG).unwrap();
    let work = sb.work.display().to_string();
    let (done, reqs) = run_calls(
        &sb,
        &[
            (
                "bash",
                json_args(serde_json::json!({"command": format!("rm -rf '{work}'")})),
            ),
            (
                "write_file",
                json_args(serde_json::json!({"path": "src/new.txt", "content": "x"})),
            ),
            ("bash", json_args(serde_json::json!({"command": "echo hi"}))),
        ],
    )
    .await;
    let gone = format!(
        "the working directory {work} is gone (deleted or moved while mm ran); mm will not \
         re-create it"
    );
    assert_eq!(tool_result(&reqs[2], "c2"), gone);
    assert_eq!(tool_result(&reqs[3], "c3"), gone);
    assert!(!sb.work.exists(), "the working directory was re-created");
    assert_eq!(done.code, Some(0), "{}", done.describe());
}
