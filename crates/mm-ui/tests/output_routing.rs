#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The human stream, seen from outside the process: in ACP mode not one byte
//! of human text may reach stdout.

use std::process::Command;

use mm_ui::{Output, Spinner};

const CHILD: &str = "MM_UI_OUTPUT_CHILD";

/// Runs only inside the child started by the tests below.
#[test]
#[ignore = "child process of the routing tests"]
fn child_prints() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    let out = if mode == "acp" {
        Output::acp()
    } else {
        Output::terminal()
    };
    // Not a terminal here: the spinner must stay off and write nothing.
    let spinner = Spinner::for_output(out);
    spinner.set("Thinking");
    out.line("HUMAN-LINE").unwrap();
    drop(spinner);
}

fn run(mode: &str) -> (String, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_prints",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, mode)
        .output()
        .unwrap();
    assert!(out.status.success(), "child failed: {out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn acp_mode_keeps_stdout_clean() {
    let (stdout, stderr) = run("acp");
    assert!(!stdout.contains("HUMAN-LINE"), "stdout: {stdout:?}");
    assert!(stderr.contains("HUMAN-LINE\n"), "stderr: {stderr:?}");
    assert!(!stdout.contains("Thinking") && !stderr.contains("Thinking"));
}

#[test]
fn terminal_mode_writes_to_stdout_and_no_spinner_into_a_pipe() {
    let (stdout, stderr) = run("terminal");
    assert!(stdout.contains("HUMAN-LINE\n"), "stdout: {stdout:?}");
    assert!(!stderr.contains("HUMAN-LINE"), "stderr: {stderr:?}");
    assert!(
        !stdout.contains("Thinking"),
        "spinner drawn into a pipe: {stdout:?}"
    );
    assert!(!stdout.contains('\r'));
}
