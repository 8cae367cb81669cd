#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `bash` tool against real processes and pipes: every row of the
//! reference's bash table (docs/reference/tools.md) and the rules of
//! docs/design.md#processes and docs/design.md#truncation.

mod bash_support;

use std::time::{Duration, Instant};

use bash_support::*;
use mm_tools::Tool;
use mm_tools::bash::{Bash, BashSettings, ProcessRegistry};
use mm_types::ToolKind;
use serde_json::json;

#[tokio::test]
async fn echo_gives_its_output_untrimmed() {
    assert_eq!(run("echo hi").await, "hi\n");
}

#[tokio::test]
async fn a_timeout_too_long_for_the_clock_is_no_timeout() {
    let dir = TempDir::new();
    let (b, _) = bash(u64::MAX);
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        b.execute("echo hi", &ctx(dir.path())),
    )
    .await
    .expect("bash call hung");
    assert_eq!(out, "hi\n");
}

#[tokio::test]
async fn no_output_is_empty() {
    assert_eq!(run("true").await, "");
    assert_eq!(run("").await, "");
}

#[tokio::test]
async fn non_zero_exit_with_empty_output_is_the_suffix_alone() {
    assert_eq!(run("exit 5").await, "[exit code: exit status 5]");
}

#[tokio::test]
async fn suffix_goes_on_its_own_line() {
    assert_eq!(
        run("printf abc; exit 3").await,
        "abc\n[exit code: exit status 3]"
    );
    assert_eq!(
        run("echo abc; exit 2").await,
        "abc\n[exit code: exit status 2]"
    );
    assert_eq!(run("false").await, "[exit code: exit status 1]");
}

#[tokio::test]
async fn stderr_is_merged_in_arrival_order() {
    assert_eq!(
        run("echo 1; echo 2 >&2; echo 3; echo 4 >&2; printf 5 >&2").await,
        "1\n2\n3\n4\n5"
    );
    // Interleaved writes from two processes of the group keep their order too.
    assert_eq!(
        run("for i in 1 2 3; do echo out$i; echo err$i >&2; done; ls /nonexistent-mm-path 2>&1 >/dev/null | wc -l")
            .await,
        "out1\nerr1\nout2\nerr2\nout3\nerr3\n1\n"
    );
}

#[tokio::test]
async fn pipelines_get_the_default_sigpipe() {
    // With SIGPIPE ignored, `yes` would print "Broken pipe" errors forever.
    assert_eq!(run("yes | head -n 1").await, "y\n");
}

#[tokio::test]
async fn a_shell_that_cannot_start_is_text() {
    let dir = TempDir::new();
    let (b, _) = bash(10);
    let out = b
        .execute("echo hi", &ctx(&dir.path().join("missing")))
        .await;
    assert!(out.starts_with("[error: could not start bash: "), "{out}");
    assert!(out.ends_with(']') && !out.contains('\n'), "{out}");
}

#[tokio::test]
async fn killed_by_a_signal() {
    assert_eq!(
        run("kill -KILL $$").await,
        "[exit code: killed by signal 9 (SIGKILL)]"
    );
    assert_eq!(
        run("echo a; kill -TERM $$").await,
        "a\n[exit code: killed by signal 15 (SIGTERM)]"
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let dir = TempDir::new();
    let (b, registry) = bash(1);
    let started = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        b.execute(
            "sleep 300 & echo $$; sleep 30; echo never",
            &ctx(dir.path()),
        ),
    )
    .await
    .unwrap();
    let elapsed = started.elapsed();
    let (pid, rest) = out.split_once('\n').unwrap();
    assert_eq!(rest, "[error: 1s timeout exceeded]");
    assert!(elapsed >= Duration::from_millis(950), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_group_gone(pid.parse().unwrap());
    assert!(registry.running().is_empty());
}

#[tokio::test]
async fn timeout_text_uses_the_value_in_force() {
    let dir = TempDir::new();
    let (b, _) = bash(2);
    let out = b
        .execute("printf partial; sleep 30", &ctx(dir.path()))
        .await;
    assert_eq!(out, "partial\n[error: 2s timeout exceeded]");
}

#[tokio::test]
async fn background_child_holding_the_pipe_neither_hangs_nor_survives() {
    let dir = TempDir::new();
    let (b, registry) = bash(20);
    let started = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        b.execute("sleep 300 & echo $!; echo $$", &ctx(dir.path())),
    )
    .await
    .expect("a background child hung the call");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let mut lines = out.lines();
    let sleep_pid: i32 = lines.next().unwrap().parse().unwrap();
    let pgid: i32 = lines.next().unwrap().parse().unwrap();
    assert_eq!(lines.next(), None, "{out:?}");
    assert_group_gone(pgid);
    assert!(!alive(sleep_pid));
    assert!(registry.running().is_empty());
}

#[tokio::test]
async fn background_child_that_closed_the_pipe_is_killed_too() {
    let dir = TempDir::new();
    let (b, _) = bash(20);
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        b.execute(
            "sleep 300 >/dev/null 2>&1 & echo $!; echo $$",
            &ctx(dir.path()),
        ),
    )
    .await
    .unwrap();
    let mut lines = out.lines();
    let sleep_pid: i32 = lines.next().unwrap().parse().unwrap();
    let pgid: i32 = lines.next().unwrap().parse().unwrap();
    assert_group_gone(pgid);
    assert!(!alive(sleep_pid));
}

#[tokio::test]
async fn cancellation_kills_the_group_at_once() {
    let dir = TempDir::new();
    let (b, registry) = bash(60);
    let c = ctx(dir.path());
    let cancel = c.cancel.clone();
    let watcher = registry.clone();
    let canceller = tokio::spawn(async move {
        // Cancel once the command runs and has printed.
        while watcher.running().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
        Instant::now()
    });
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        b.execute("echo $$; sleep 60 & sleep 60", &c),
    )
    .await
    .expect("cancel did not end the call");
    let cancelled_at = canceller.await.unwrap();
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(1),
        "{:?}",
        cancelled_at.elapsed()
    );
    let (pid, rest) = out.split_once('\n').unwrap();
    assert_eq!(rest, "[error: cancelled by the user]");
    assert_group_gone(pid.parse().unwrap());
    assert!(registry.running().is_empty());
}

#[tokio::test]
async fn registry_holds_running_groups_and_kill_all_ends_them() {
    let dir = TempDir::new();
    let (b, registry) = bash(60);
    let c = ctx(dir.path());
    let watcher = registry.clone();
    // The shell marks a file once it has printed its pid, so the kill cannot
    // land before the echo (the group is registered at spawn, earlier).
    let ready = dir.path().join("ready");
    let task = tokio::spawn(async move { b.execute("echo $$; : > ready; sleep 60", &c).await });
    let until = Instant::now() + Duration::from_secs(10);
    while watcher.running().is_empty() || !ready.exists() {
        assert!(Instant::now() < until, "the command never registered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pgid = watcher.running()[0];
    assert_eq!(watcher.kill_all(), 1);
    let out = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        out,
        format!("{pgid}\n[exit code: killed by signal 9 (SIGKILL)]")
    );
    assert_group_gone(pgid);
    assert!(registry.running().is_empty());
}

#[tokio::test]
async fn dropping_the_call_kills_the_group() {
    let dir = TempDir::new();
    let (b, registry) = bash(60);
    let c = ctx(dir.path());
    let fut = b.execute("sleep 60", &c);
    // Abandon the call half-way, as an aborted turn would.
    let _ = tokio::time::timeout(Duration::from_millis(500), fut).await;
    assert!(registry.running().is_empty());
}

#[tokio::test]
async fn not_utf8_and_binary_output_is_decoded_lossily() {
    assert_eq!(run(r"printf 'a\377b\303'").await, "a\u{FFFD}b\u{FFFD}");
    assert_eq!(
        run(r"printf '\000\001\376\nz'").await,
        "\u{0}\u{1}\u{FFFD}\nz"
    );
    // Valid multi-byte text passes untouched.
    assert_eq!(run("printf 'é€😀'").await, "é€😀");
}

#[tokio::test]
async fn binary_stream_of_every_byte_comes_back_as_text() {
    // All 256 byte values, many times, through read boundaries.
    let out = run_max(
        "s=$(printf '\\\\%03o' $(seq 0 255)); for i in $(seq 1 600); do printf \"$s\"; done",
        400_000,
    )
    .await;
    let one: Vec<u8> = (0u8..=255).collect();
    let expected = String::from_utf8_lossy(&one.repeat(600)).into_owned();
    assert_eq!(out.chars().count(), expected.chars().count());
    assert_eq!(out, expected);
}

#[tokio::test]
async fn working_directory_is_the_contexts() {
    let dir = TempDir::new();
    let (b, _) = bash(10);
    let out = b.execute("pwd; touch made-here", &ctx(dir.path())).await;
    assert_eq!(out, format!("{}\n", dir.path().display()));
    assert!(dir.path().join("made-here").exists());
}

#[tokio::test]
async fn stdin_is_dev_null() {
    assert_eq!(run("readlink /proc/self/fd/0").await, "/dev/null\n");
    // A command reading stdin ends at once instead of waiting.
    assert_eq!(run("cat; echo done").await, "done\n");
}

#[tokio::test]
async fn new_process_group_per_call() {
    let out = run("ps -o pgid= -p $$; echo $$").await;
    let mut lines = out.lines();
    let pgid: i32 = lines.next().unwrap().trim().parse().unwrap();
    let pid: i32 = lines.next().unwrap().parse().unwrap();
    assert_eq!(pgid, pid, "bash leads its own group");
    // SAFETY: getpgrp has no preconditions.
    assert_ne!(pgid, unsafe { libc::getpgrp() });
}

#[tokio::test]
async fn a_new_shell_per_call() {
    let dir = TempDir::new();
    let (b, _) = bash(10);
    let c = ctx(dir.path());
    assert_eq!(
        b.execute("export MM_TEST_VAR=x; cd /; echo $MM_TEST_VAR", &c)
            .await,
        "x\n"
    );
    assert_eq!(
        b.execute("echo \"${MM_TEST_VAR-unset}\"; pwd", &c).await,
        format!("unset\n{}\n", dir.path().display())
    );
}

// ---- truncation (docs/design.md#truncation) ----

async fn run_max(command: &str, max: usize) -> String {
    let dir = TempDir::new();
    let (b, _) = bash(30);
    tokio::time::timeout(
        Duration::from_secs(60),
        b.execute(command, &ctx_max(dir.path(), max)),
    )
    .await
    .unwrap()
}

fn numbers(n: usize) -> String {
    (1..=n).map(|i| format!("{i},")).collect()
}

#[tokio::test]
async fn output_that_fits_is_untouched() {
    // 200 characters exactly.
    let out = run_max("printf '%.0sx' $(seq 1 200)", 200).await;
    assert_eq!(out, "x".repeat(200));
    // 173 characters + "\n" + the 26-character suffix: exactly 200, untouched.
    let out = run_max("printf '%.0sx' $(seq 1 173); exit 1", 200).await;
    assert_eq!(
        out,
        format!("{}\n[exit code: exit status 1]", "x".repeat(173))
    );
    assert_eq!(out.chars().count(), 200);
}

#[tokio::test]
async fn truncation_halves_are_exact() {
    let expected_output = numbers(1000);
    let out = run_max("for i in $(seq 1 1000); do printf '%d,' $i; done", 200).await;
    assert_eq!(out, expected_truncation(&expected_output, "", 200));
    assert_eq!(out.chars().count(), 200);
    assert!(out.contains("[… 3723 characters omitted …]\n"), "{out}");
}

#[tokio::test]
async fn truncation_keeps_the_suffix_whole() {
    let expected_output = numbers(1000);
    let out = run_max(
        "for i in $(seq 1 1000); do printf '%d,' $i; done; exit 7",
        300,
    )
    .await;
    assert_eq!(
        out,
        expected_truncation(&expected_output, "[exit code: exit status 7]", 300)
    );
    assert!(out.ends_with(",\n[exit code: exit status 7]"), "{out}");
    assert_eq!(out.chars().count(), 300);
}

#[tokio::test]
async fn truncation_one_character_over() {
    // 201 characters for a 200 limit: one marker, halves around it.
    let text = "y".repeat(201);
    let out = run_max("printf '%.0sy' $(seq 1 201)", 200).await;
    assert_eq!(out, expected_truncation(&text, "", 200));
    assert!(out.chars().count() <= 200);
}

#[tokio::test]
async fn truncation_counts_characters_not_bytes_and_never_splits_one() {
    // 2-, 3- and 4-byte characters around every possible cut.
    let unit = "é€😀a";
    let text = unit.repeat(500);
    let out = run_max(
        "for i in $(seq 1 500); do printf 'é€😀a'; done; exit 1",
        250,
    )
    .await;
    assert_eq!(
        out,
        expected_truncation(&text, "[exit code: exit status 1]", 250)
    );
    assert_eq!(out.chars().count(), 250);
    assert!(!out.contains('\u{FFFD}'));
}

#[tokio::test]
async fn truncation_of_a_timed_out_command() {
    let dir = TempDir::new();
    let (b, _) = bash(1);
    let out = b
        .execute(
            "for i in $(seq 1 1000); do printf '%d,' $i; done; sleep 30",
            &ctx_max(dir.path(), 200),
        )
        .await;
    assert_eq!(
        out,
        expected_truncation(&numbers(1000), "[error: 1s timeout exceeded]", 200)
    );
}

#[tokio::test]
async fn big_output_across_many_reads() {
    // 5 MB with line structure: the head and tail are the real ones.
    let out = run_max("seq 1 700000", 30_000).await;
    let all: String = (1..=700_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(out, expected_truncation(&all, "", 30_000));
}

// ---- the Tool interface ----

#[tokio::test]
async fn plan_and_spec() {
    let dir = TempDir::new();
    let c = ctx(dir.path());
    let b = Bash::with_registry(BashSettings::default(), ProcessRegistry::new());
    let spec = b.spec();
    assert_eq!(spec.name, "bash");
    assert_eq!(spec.parameters["required"], json!(["command"]));
    assert_eq!(spec.parameters["properties"]["command"]["type"], "string");

    let args = json!({"command": "ls -la"});
    let plan = b.plan(&args, &c).await.unwrap();
    assert_eq!(plan.title, "ls -la");
    assert_eq!(plan.kind, ToolKind::Execute);
    assert_eq!(plan.rejection, Some("[command rejected by the user]"));
    assert!(b.row().echoes);

    let bad = b.plan(&json!({}), &c).await.err().unwrap();
    assert_eq!(
        bad,
        "invalid arguments for bash: missing field `command`; send a JSON object matching the tool's schema"
    );
    let bad = b.plan(&json!({"command": 3}), &c).await.err().unwrap();
    assert!(
        bad.starts_with("invalid arguments for bash: invalid type: integer `3`"),
        "{bad}"
    );

    let plan = b
        .plan(&json!({"command": "echo via-run"}), &c)
        .await
        .unwrap();
    assert_eq!(
        b.run(&json!({"command": "echo via-run"}), plan, &c).await,
        mm_tools::ToolOutput::ok("via-run\n")
    );
}

#[tokio::test]
async fn defaults_are_the_configs() {
    let s = BashSettings::default();
    assert_eq!(s.timeout, Duration::from_secs(30));
}
