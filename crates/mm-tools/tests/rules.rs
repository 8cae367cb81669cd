#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Permission rules and the sandbox through the Toolbox, with the real
//! `bash`, `read_file` and `write_file`: what is denied never runs (nor is
//! planned), what asks waits for the sink, "allow for the session" records
//! a command prefix, and sandboxed commands and file writes stay in their
//! folders. Hostile lines are judged without ever running them: the sink
//! refuses, and nothing touches a file outside the temp folders.

mod bash_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mm_policy::{Mode, Policy, RuleLists, Sandbox, SandboxMode};
use mm_test_support::Recorder;
use mm_tools::bash::{Bash, ProcessRegistry};
use mm_tools::files::{ReadFile, WriteFile};
use mm_tools::toolbox::{CallOutcome, Toolbox, ToolboxSettings};
use mm_tools::{Permissions, Tool, ToolContext};
use mm_types::{Decision, Event, ToolStatus};
use tokio_util::sync::CancellationToken;

struct World {
    _dir: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    temp: PathBuf,
    toolbox: Toolbox,
    sink: Arc<Recorder>,
    ctx: ToolContext,
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// A world with these rules, answers and sandbox mode (`None`: off).
fn world(
    default: Mode,
    allow: &[&str],
    ask: &[&str],
    deny: &[&str],
    answers: &[Decision],
    sandbox: Option<SandboxMode>,
) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (work, home, temp) = (root.join("work"), root.join("home"), root.join("tmp"));
    for d in [&work, &home, &temp] {
        std::fs::create_dir(d).unwrap();
    }
    let policy = Policy::new(RuleLists {
        default,
        allow: &strings(allow),
        ask: &strings(ask),
        deny: &strings(deny),
    })
    .unwrap();
    let sandbox = match sandbox {
        Some(mode) => Sandbox::new(mode, false, &work, &temp),
        None => Sandbox::off(),
    };
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(Bash::with_registry(
            bash_support::settings(20),
            ProcessRegistry::new(),
        )),
        Box::new(ReadFile::new()),
        Box::new(WriteFile::new()),
    ];
    let toolbox = Toolbox::new(
        tools,
        ToolboxSettings {
            preview_lines: 2,
            secrets: Vec::new(),
        },
    );
    let sink = Recorder::answering(answers);
    let ctx = ToolContext {
        cwd: work.clone(),
        sink: sink.clone(),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::with(policy, sandbox)),
        max_output: 30_000,
        call_id: String::new(),
    };
    World {
        _dir: dir,
        work,
        home,
        temp,
        toolbox,
        sink,
        ctx,
    }
}

impl World {
    async fn call(&self, tool: &str, args: serde_json::Value) -> (String, bool) {
        let out = tokio::time::timeout(
            Duration::from_secs(30),
            self.toolbox.call("id", tool, &args.to_string(), &self.ctx),
        )
        .await
        .expect("call hung");
        match out {
            CallOutcome::Output(o) => (o.text, o.failed),
            other => panic!("unexpected {other:?}"),
        }
    }

    async fn bash(&self, command: &str) -> (String, bool) {
        // HOME points at a folder outside the working directory.
        let command = format!("HOME={} ; {command}", self.home.display());
        self.call("bash", serde_json::json!({ "command": command }))
            .await
    }

    async fn bash_raw(&self, command: &str) -> (String, bool) {
        self.call("bash", serde_json::json!({ "command": command }))
            .await
    }

    fn asked(&self) -> Vec<String> {
        self.sink.asked().into_iter().map(|i| i.title).collect()
    }

    fn notices(&self) -> Vec<String> {
        self.sink.notices()
    }

    fn events(&self) -> Vec<Event> {
        self.sink.events()
    }
}

fn last_status(events: &[Event]) -> ToolStatus {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolEnd { status, .. } => Some(*status),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_denied_command_never_runs_even_inside_a_list() {
    let w = world(Mode::Allow, &[], &[], &["bash(rm -rf *)"], &[], None);
    std::fs::create_dir(w.work.join("x")).unwrap();
    for line in [
        "rm -rf x",
        "echo ok && rm -rf x",
        "true; 'rm' -rf x",
        "echo $(rm -rf x)",
        "sudo rm -rf x",
        "if true; then rm -rf x; fi",
        "{rm,-rf,x}",
        "rm -r -f x",
        "rm --force --recursive x",
        "y=rm; $y -rf x",
        "echo 'rm -rf x' | bash",
    ] {
        let (out, failed) = w.bash_raw(line).await;
        assert_eq!(out, "[denied by rule \"bash(rm -rf *)\"]", "{line}");
        assert!(failed);
        assert!(w.work.join("x").exists(), "{line} ran");
    }
    let events = w.events();
    assert_eq!(last_status(&events), ToolStatus::Failed);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolRunning { .. })),
        "a denied call never runs"
    );
    // Other commands run as before (default allow).
    assert_eq!(w.bash_raw("echo fine").await, ("fine\n".to_owned(), false));
    assert!(w.asked().is_empty());
}

#[tokio::test]
async fn deny_wins_over_ask_and_ask_over_allow() {
    let w = world(
        Mode::Allow,
        &["bash(git *)", "bash(echo *)"],
        &["bash(git push*)"],
        &["bash(git push --force*)"],
        &[Decision::Reject],
        None,
    );
    let (out, _) = w.bash_raw("git push --force origin main").await;
    assert_eq!(out, "[denied by rule \"bash(git push --force*)\"]");
    let (out, _) = w.bash_raw("git push origin main").await;
    assert_eq!(out, "[command rejected by the user]");
    assert_eq!(w.asked(), ["git push origin main"]);
    assert_eq!(w.bash_raw("echo allowed").await.0, "allowed\n");
}

#[tokio::test]
async fn with_default_ask_a_list_runs_unasked_only_when_every_part_is_allowed() {
    let w = world(
        Mode::Ask,
        &["bash(echo *)", "bash(true)"],
        &[],
        &[],
        &[Decision::Reject; 7],
        None,
    );
    assert_eq!(w.bash_raw("echo a && true").await.0, "a\n");
    assert!(w.asked().is_empty());
    std::fs::write(w.work.join("x"), "keep").unwrap();
    std::os::unix::fs::symlink(w.home.join("dangling"), w.work.join("link")).unwrap();
    // Each of these asks (and is refused), so none runs.
    for line in [
        "echo a && rm x",
        "echo $(rm x)",
        "echo hi > ../home/outside",
        "eval 'rm x'",
        "for v in 'a[$(rm x)]'; do echo ${!v}; done",
        "for v in 'a[$(rm x)]'; do echo $((v)); done",
        "echo hi > link",
    ] {
        let (out, failed) = w.bash_raw(line).await;
        assert_eq!(out, "[command rejected by the user]", "{line}");
        assert!(failed);
    }
    assert_eq!(w.asked().len(), 7);
    assert!(w.work.join("x").exists());
    assert!(!w.home.join("outside").exists());
    assert!(!w.home.join("dangling").exists());
}

#[tokio::test]
async fn allow_for_the_session_records_the_command_prefix_not_the_tool() {
    let w = world(
        Mode::Ask,
        &[],
        &[],
        &[],
        &[Decision::AllowAlways, Decision::Reject],
        None,
    );
    assert_eq!(w.bash_raw("echo one").await.0, "one\n");
    assert_eq!(w.notices(), ["session rule added: bash(echo one *)"]);
    // The same prefix runs unasked.
    assert_eq!(w.bash_raw("echo one more").await.0, "one more\n");
    assert_eq!(w.asked().len(), 1);
    // Another command of the same tool still asks.
    assert_eq!(
        w.bash_raw("printf two").await.0,
        "[command rejected by the user]"
    );
    assert_eq!(w.asked(), ["echo one", "printf two"]);
    assert_eq!(
        w.ctx.permissions.policy().listing().session,
        ["bash(echo one *)"]
    );
}

#[tokio::test]
async fn file_rules_match_paths_and_a_denied_read_is_not_planned() {
    let w = world(
        Mode::Allow,
        &[],
        &["write_file(notes/**)"],
        &["read_file(.env)", "write_file(.env)"],
        &[Decision::Reject],
        None,
    );
    std::fs::create_dir(w.work.join("sub")).unwrap();
    std::fs::write(w.work.join("sub/.env"), "SECRET=1").unwrap();
    let (out, failed) = w
        .call("read_file", serde_json::json!({"path": "sub/.env"}))
        .await;
    assert_eq!(out, "[denied by rule \"read_file(.env)\"]");
    assert!(failed);
    // Denied before planning: a missing file is not even looked for.
    let (out, _) = w
        .call("read_file", serde_json::json!({"path": "missing/.env"}))
        .await;
    assert_eq!(out, "[denied by rule \"read_file(.env)\"]");
    let (out, _) = w
        .call(
            "write_file",
            serde_json::json!({"path": ".env", "content": "x"}),
        )
        .await;
    assert_eq!(out, "[denied by rule \"write_file(.env)\"]");
    assert!(!w.work.join(".env").exists());
    let (out, _) = w
        .call(
            "write_file",
            serde_json::json!({"path": "notes/a.md", "content": "x"}),
        )
        .await;
    assert_eq!(out, "[edit rejected by the user]");
    let (out, _) = w
        .call(
            "write_file",
            serde_json::json!({"path": "b.md", "content": "x"}),
        )
        .await;
    assert!(out.starts_with("created b.md"), "{out}");
}

#[tokio::test]
async fn a_rule_can_make_a_reading_tool_ask() {
    let w = world(
        Mode::Allow,
        &[],
        &["read_file(secrets/*)"],
        &[],
        &[Decision::Reject],
        None,
    );
    std::fs::create_dir(w.work.join("secrets")).unwrap();
    std::fs::write(w.work.join("secrets/k"), "k").unwrap();
    let (out, failed) = w
        .call("read_file", serde_json::json!({"path": "secrets/k"}))
        .await;
    assert_eq!(out, "[call rejected by the user]");
    assert!(failed);
    // Default ask does not make reads ask.
    let w = world(Mode::Ask, &[], &[], &[], &[], None);
    std::fs::write(w.work.join("r"), "read me").unwrap();
    let (out, _) = w.call("read_file", serde_json::json!({"path": "r"})).await;
    assert_eq!(out, "read me");
}

fn enforced(w: &World) -> bool {
    if let Some(why) = w.ctx.permissions.sandbox().unavailable() {
        eprintln!("SKIPPED: the sandbox cannot be enforced on this kernel: {why}");
        return false;
    }
    true
}

#[tokio::test]
async fn sandboxed_bash_writes_inside_and_not_at_home() {
    let w = world(
        Mode::Allow,
        &[],
        &[],
        &[],
        &[],
        Some(SandboxMode::WorkspaceWrite),
    );
    if !enforced(&w) {
        return;
    }
    assert_eq!(w.bash("touch ./x && echo done").await.0, "done\n");
    assert!(w.work.join("x").exists());
    assert!(w.notices().is_empty());
    let (out, failed) = w.bash("touch ~/x").await;
    assert!(failed);
    // Landlock's refusal, or the read-only mount layer's before it.
    assert!(
        out.contains("Permission denied") || out.contains("Read-only file system"),
        "{out}"
    );
    assert!(!w.home.join("x").exists());
    assert_eq!(
        w.notices(),
        [format!(
            "the sandbox may have blocked this command (workspace-write: writes only in {}, {}; no network)",
            w.work.display(),
            w.temp.display()
        )]
    );
    // An escape through a symlink in the working directory fails.
    std::os::unix::fs::symlink(&w.home, w.work.join("out")).unwrap();
    let (_, failed) = w.bash("echo x > out/escaped").await;
    assert!(failed);
    assert!(!w.home.join("escaped").exists());
}

#[tokio::test]
async fn sandboxed_file_tools_obey_the_same_folders() {
    let w = world(
        Mode::Allow,
        &[],
        &[],
        &[],
        &[],
        Some(SandboxMode::WorkspaceWrite),
    );
    std::os::unix::fs::symlink(&w.home, w.work.join("out")).unwrap();
    let outside = w.home.join("a.txt");
    let roots = format!("{}, {}", w.work.display(), w.temp.display());
    for (path, why) in [
        (outside.display().to_string(), "is outside".to_owned()),
        (
            "out/b.txt".to_owned(),
            format!(
                "leads through a symlink to {}, outside",
                w.home.join("b.txt").display()
            ),
        ),
    ] {
        let (out, failed) = w
            .call(
                "write_file",
                serde_json::json!({"path": path, "content": "x"}),
            )
            .await;
        assert!(failed, "{out}");
        assert_eq!(
            out,
            format!("{path} {why} the folders the sandbox lets mm write ({roots})")
        );
    }
    assert!(std::fs::read_dir(&w.home).unwrap().next().is_none());
    let (out, failed) = w
        .call(
            "write_file",
            serde_json::json!({"path": "in.txt", "content": "x"}),
        )
        .await;
    assert!(!failed, "{out}");
    let tmp_file = w.temp.join("t.txt");
    let (_, failed) = w
        .call(
            "write_file",
            serde_json::json!({"path": tmp_file, "content": "x"}),
        )
        .await;
    assert!(!failed);
    // Reading outside is fine.
    std::fs::write(&outside, "outside").unwrap();
    let (out, _) = w
        .call("read_file", serde_json::json!({"path": outside}))
        .await;
    assert_eq!(out, "outside");
}

#[tokio::test]
async fn read_only_sandbox_refuses_every_write() {
    let w = world(Mode::Allow, &[], &[], &[], &[], Some(SandboxMode::ReadOnly));
    let (out, failed) = w
        .call(
            "write_file",
            serde_json::json!({"path": "x", "content": "x"}),
        )
        .await;
    assert!(failed);
    assert_eq!(out, "x cannot be written: the sandbox is read-only");
    if enforced(&w) {
        let (_, failed) = w.bash("touch ./y").await;
        assert!(failed);
        assert!(!w.work.join("y").exists());
    }
}

#[tokio::test]
async fn a_sandbox_the_kernel_cannot_enforce_refuses_commands() {
    let w = world(Mode::Allow, &[], &[], &[], &[], None);
    let ctx = ToolContext {
        permissions: Arc::new(Permissions::with(
            Policy::with_default(Mode::Allow),
            Sandbox::unenforceable(SandboxMode::WorkspaceWrite, false, &w.work, "no Landlock"),
        )),
        ..w.ctx.clone()
    };
    let out = w
        .toolbox
        .call("id", "bash", r#"{"command":"touch ran"}"#, &ctx)
        .await;
    assert_eq!(
        out.output(),
        "[error: the sandbox cannot be enforced on this system (no Landlock); the command was not run]"
    );
    assert!(out.failed());
    assert!(!w.work.join("ran").exists());
}
