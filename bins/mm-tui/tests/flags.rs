#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The flags that answer without opening the window.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mm_test_support::User;

const BIN: &str = env!("CARGO_BIN_EXE_mm-tui");

/// Run to the end, killed after 20 s.
fn run(args: &[&str], config: &str) -> Output {
    let user = User::new();
    user.write_config(config);
    let mut child = user
        .apply(&mut Command::new(BIN))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("mm-tui {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn version_prints_the_stamped_version() {
    let out = run(&["--version"], "");
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("mm-tui {}\n", mm_agent::version())
    );
}

#[test]
fn print_config_shows_values_and_where_they_came_from() {
    let out = run(
        &["--print-config", "--model", "openai-compatible/x"],
        "permissions: ask\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let line = |key: &str| {
        s.lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("model").contains("= openai-compatible/x  # flag --model"),
        "{s}"
    );
    assert!(
        line("permissions.default").contains("= ask  # user file"),
        "{s}"
    );
}

#[test]
fn a_bad_setting_stops_before_the_window_with_its_reason() {
    let out = run(&[], "permissions: maybe\n");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.starts_with("mm-tui: "), "{err}");
    assert!(err.contains("permissions"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "nothing drawn: {:?}",
        text(&out.stdout)
    );
}

#[test]
fn cwd_must_be_a_directory() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let file = file.canonicalize().unwrap();
    let out = run(&["--cwd", file.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!("mm-tui: --cwd {}: not a directory\n", file.display())
    );
    assert!(
        out.stdout.is_empty(),
        "nothing drawn: {:?}",
        text(&out.stdout)
    );

    let missing = root.path().join("missing");
    let out = run(&["--cwd", missing.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!("mm-tui: --cwd {}: ", missing.display())),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_session_that_cannot_be_resumed_stops_before_the_window() {
    let out = run(&["--continue"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with("mm-tui: cannot resume: no saved session for "),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing drawn: {:?}",
        text(&out.stdout)
    );
}
