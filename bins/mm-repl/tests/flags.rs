//! The flags that answer without a turn: --version, --help,
//! --print-config, completions, and a bad settings file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{World, text};

#[test]
fn version_is_the_stamped_one() {
    let w = World::new(vec![], "");
    let out = w.run(&["--version"], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("mm-repl {}\n", mm_agent::version())
    );
}

#[test]
fn help_lists_the_flags() {
    let w = World::new(vec![], "");
    let out = w.run(&["--help"], None);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for flag in [
        "--prompt",
        "--output-format",
        "--model",
        "--base-url",
        "--config",
        "--print-config",
        "--cwd",
        "--continue",
        "--resume",
        "--demo",
        "completions",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}

#[test]
fn print_config_shows_values_and_origins() {
    let w = World::new(vec![], "maxTurns: 7\n");
    let out = w.run(&["--print-config", "--model", "ollama/flagged"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let printed = text(&out.stdout);
    let line = |key: &str| {
        printed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} line in:\n{printed}"))
            .to_owned()
    };
    assert!(line("model").contains("ollama/flagged"));
    assert!(line("model").contains("flag --model"));
    let turns = line("maxTurns");
    assert!(turns.contains('7'), "{turns}");
    assert!(
        turns.contains(&format!("user file {}", w.config_file().display())),
        "{turns}"
    );
    assert!(line("watchdog").contains("15"));
    assert!(line("contextWindow").contains("default"));
    assert!(w.chats().is_empty(), "printing the settings asks no model");
}

#[test]
fn a_bad_settings_file_is_a_clear_error() {
    let w = World::new(vec![], "maxTurn: 3\n");
    let out = w.run(&["-p", "hello"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(&w.config_file().display().to_string()),
        "names the file: {stderr}"
    );
    assert!(
        stderr.contains("unknown key \"maxTurn\""),
        "names the key: {stderr}"
    );
    assert_eq!(text(&out.stdout), "");
    assert!(w.chats().is_empty());
}

#[test]
fn a_bad_value_names_the_key_and_what_was_expected() {
    let w = World::new(vec![], "permissions: sometimes\n");
    let out = w.run(&["--print-config"], None);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("permissions"), "{stderr}");
    assert!(stderr.contains("allow"), "{stderr}");
}

#[test]
fn a_missing_cwd_is_a_start_error() {
    let w = World::new(vec![], "");
    let out = w.run(&["--cwd", "/does/not/exist", "-p", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/does/not/exist"));
}

#[test]
fn cwd_flag_roots_the_session() {
    let w = World::new(vec![mm_mock::Reply::text("ok")], "");
    let other = w.user.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let other = std::fs::canonicalize(other).unwrap();
    let out = w.run(&["--cwd", other.to_str().unwrap(), "-p", "where?"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let system = w.chats()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains(&format!("Working directory: {}", other.display())),
        "{system}"
    );
}

#[test]
fn completions_for_bash() {
    let w = World::new(vec![], "");
    let out = w.run(&["completions", "bash"], None);
    assert_eq!(out.status.code(), Some(0));
    let script = text(&out.stdout);
    assert!(script.contains("mm-repl"));
    assert!(script.contains("--print-config"));
}

#[test]
fn logs_go_to_the_state_dir_not_the_screen() {
    let w = World::new(vec![mm_mock::Reply::text("fine")], "");
    let out = w.run(&["-p", "hello"], None);
    assert_eq!(text(&out.stdout), "fine\n");
    assert!(!text(&out.stderr).contains("INFO"), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(w.state_dir().join("mm/mm-repl.log")).unwrap();
    assert!(log.contains("starting"), "{log}");
}

#[test]
fn a_session_that_cannot_be_resumed_is_a_start_error() {
    let w = World::new(vec![], "");
    let out = w.run(&["--continue", "-p", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("mm-repl: cannot resume: no saved session for "),
        "{stderr}"
    );
    assert!(w.chats().is_empty(), "no question was sent");
}

#[test]
fn print_config_names_the_window_the_server_reports() {
    let w = World::serving(
        vec![],
        "",
        mm_mock::Options {
            window: Some(1024),
            ..mm_mock::Options::default()
        },
    );
    let out = w.run(&["--print-config"], None);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let printed = text(&out.stdout);
    let line = |key: &str| {
        printed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} line in:\n{printed}"))
            .to_owned()
    };
    assert_eq!(
        line("contextWindow"),
        "contextWindow       = auto: 1024 (server /props)  # default"
    );
    assert!(
        line("compact.keepRecent").contains("(capped at 256, a quarter of contextWindow)"),
        "{printed}"
    );
    // A number in the file is shown as it is, and the server is not asked.
    w.write_config(&format!(
        "model: openai-compatible/test\nbaseURL: {}/v1\ncontextWindow: 4096\n",
        w.server.url()
    ));
    let asked = w.server.all_requests().len();
    let out = w.run(&["--print-config"], None);
    assert!(text(&out.stdout).contains("contextWindow       = 4096  # user file"));
    assert_eq!(w.server.all_requests().len(), asked);
}
