#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Toolbox drives every call: unknown tools, bad arguments, plan
//! refusals, permission (once / always / reject / cancelled), events and
//! their order, redaction, the loop detector's two levels, preview.

mod bash_support;

use std::sync::Arc;
use std::time::Duration;

use bash_support::TempDir;
use mm_test_support::Recorder;
use mm_tools::bash::{Bash, ProcessRegistry};
use mm_tools::toolbox::{CallOutcome, Toolbox, ToolboxSettings};
use mm_tools::{
    PermissionMode, Permissions, Plan, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, parse_args,
};
use mm_types::{Decision, Event, ToolInfo, ToolKind, ToolStatus};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LOOP: &str = "[LOOP_DETECTED: You have attempted the same action multiple times with the same result. Please try a different approach or provide more information.]";

/// A tool that answers `{text}` with a fixed output: "echo:<text>"; refuses
/// `text == "refuse"` in its plan; panics on `text == "panic"`; reports a
/// failure for a text starting with `fail`.
struct Fixed {
    name: &'static str,
    needs_permission: bool,
    row: ToolRow,
}

impl Fixed {
    fn new(name: &'static str, needs_permission: bool) -> Fixed {
        Fixed {
            name,
            needs_permission,
            row: ToolRow {
                name: name.into(),
                family: mm_types::ToolFamily::Other,
                kind: ToolKind::Other,
                title_from: None,
                echoes: false,
                changes_files: true,
                rejection: needs_permission.then_some("[edit rejected by the user]"),
            },
        }
    }
}

#[derive(serde::Deserialize)]
struct FixedArgs {
    text: String,
}

#[async_trait::async_trait]
impl Tool for Fixed {
    fn row(&self) -> &ToolRow {
        &self.row
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.to_string(),
            description: "test tool".to_string(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        }
    }
    async fn plan(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Result<Plan, String> {
        let a: FixedArgs = parse_args(self.name, args)?;
        if a.text == "refuse" {
            return Err(format!("{} refused", self.name));
        }
        let mut plan = Plan::simple(format!("title {}", a.text), ToolKind::Read);
        plan.locations = vec!["/abs/path".to_string()];
        if a.text.starts_with("change") {
            plan.change = Some(mm_types::FileChange {
                path: format!("/abs/{}", a.text),
                old_text: Some(String::new()),
                new_text: Some(a.text.clone()),
                diff: format!("+{}", a.text),
                too_large: false,
                lines: 1,
            });
        }
        if self.needs_permission {
            plan.rejection = Some("[edit rejected by the user]");
        }
        Ok(plan)
    }
    async fn run(&self, args: &serde_json::Value, _plan: Plan, _ctx: &ToolContext) -> ToolOutput {
        let a: FixedArgs = parse_args(self.name, args).unwrap();
        if a.text == "panic" {
            panic!("boom");
        }
        ToolOutput {
            failed: a.text.starts_with("fail"),
            text: format!("echo:{}", a.text),
            images: Vec::new(),
        }
    }
}

struct Setup {
    toolbox: Toolbox,
    sink: Arc<Recorder>,
    ctx: ToolContext,
    _dir: TempDir,
}

fn setup(mode: PermissionMode, answers: &[Decision], secrets: &[&str]) -> Setup {
    let dir = TempDir::new();
    // As the agent builds them: bash redacts the same values as the box.
    let mut settings = bash_support::settings(20);
    settings.secrets = secrets.iter().map(|s| s.to_string()).collect();
    let bash = Bash::with_registry(settings, ProcessRegistry::new());
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(bash),
        Box::new(Fixed::new("zeta", false)),
        Box::new(Fixed::new("alpha", true)),
    ];
    let toolbox = Toolbox::new(
        tools,
        ToolboxSettings {
            preview_lines: 2,
            secrets: secrets.iter().map(|s| s.to_string()).collect(),
        },
    );
    let sink = Recorder::answering(answers);
    let ctx = ToolContext {
        cwd: dir.path().to_path_buf(),
        sink: sink.clone(),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(mode)),
        max_output: 30_000,
        call_id: String::new(),
    };
    Setup {
        toolbox,
        sink,
        ctx,
        _dir: dir,
    }
}

impl Setup {
    async fn call(&self, name: &str, arguments: &str) -> CallOutcome {
        tokio::time::timeout(
            Duration::from_secs(30),
            self.toolbox.call("call-1", name, arguments, &self.ctx),
        )
        .await
        .expect("call hung")
    }
    async fn output(&self, name: &str, arguments: &str) -> String {
        match self.call(name, arguments).await {
            CallOutcome::Output(out) => out.text,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn end_of(events: &[Event]) -> (ToolStatus, String, Vec<String>) {
    match events.last().unwrap() {
        Event::ToolEnd {
            status,
            output,
            preview,
            ..
        } => (*status, output.clone(), preview.clone()),
        other => panic!("last event is {other:?}"),
    }
}

/// The events' kinds; a run of `output` (as the pipe was read) is one.
fn kinds(events: &[Event]) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = events
        .iter()
        .map(|e| match e {
            Event::ToolStart { .. } => "start",
            Event::ToolRunning { .. } => "running",
            Event::ToolOutput { .. } => "output",
            Event::ToolEnd { .. } => "end",
            _ => "other",
        })
        .collect();
    kinds.dedup_by(|a, b| *a == "output" && *b == "output");
    kinds
}

#[tokio::test]
async fn calls_can_be_spawned() {
    // ACP runs a turn on a spawned task: the call's future must be Send.
    fn assert_send<T: Send>(_: &T) {}
    let s = setup(PermissionMode::Allow, &[], &[]);
    let fut = s.toolbox.call("id", "bash", "{}", &s.ctx);
    assert_send(&fut);
    drop(fut);
    let toolbox = Arc::new(s.toolbox);
    let ctx = s.ctx.clone();
    let out = tokio::spawn(async move {
        toolbox
            .call("id", "bash", r#"{"command":"echo spawned"}"#, &ctx)
            .await
    })
    .await
    .unwrap();
    assert_eq!(out, CallOutcome::Output(ToolOutput::ok("spawned\n")));
}

#[tokio::test]
async fn specs_and_names_in_declaration_order() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    assert_eq!(s.toolbox.names(), vec!["bash", "zeta", "alpha"]);
    let specs: Vec<String> = s.toolbox.specs().into_iter().map(|t| t.name).collect();
    assert_eq!(specs, vec!["bash", "zeta", "alpha"]);
}

#[tokio::test]
async fn unknown_tool_lists_the_tools_sorted() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    let out = s.output("nope", "{}").await;
    assert_eq!(
        out,
        "unknown tool \"nope\"; available tools: alpha, bash, zeta"
    );
    let events = s.sink.events();
    assert_eq!(kinds(&events), vec!["start", "end"]);
    assert_eq!(end_of(&events).0, ToolStatus::Failed);
}

#[tokio::test]
async fn invalid_arguments() {
    let s = setup(PermissionMode::Ask, &[], &[]);
    assert_eq!(
        s.output("bash", "[1, 2]").await,
        "invalid arguments for bash: the arguments are not a JSON object; send a JSON object matching the tool's schema"
    );
    assert_eq!(
        s.output("bash", "{}").await,
        "invalid arguments for bash: missing field `command`; send a JSON object matching the tool's schema"
    );
    // An empty arguments string is an empty object: the missing field is named.
    assert_eq!(
        s.output("bash", "").await,
        "invalid arguments for bash: missing field `command`; send a JSON object matching the tool's schema"
    );
    let out = s.output("bash", "{\"command\": ").await;
    assert!(
        out.starts_with("invalid arguments for bash: the arguments are not valid JSON ("),
        "{out}"
    );
    assert!(
        out.ends_with("; send a JSON object matching the tool's schema"),
        "{out}"
    );
    // Never asked, never ran.
    assert_eq!(s.sink.asked().len(), 0);
    assert!(!kinds(&s.sink.events()).contains(&"running"));
    // The raw text is the input shown for invalid JSON.
    match &s.sink.events()[s.sink.events().len() - 2] {
        Event::ToolStart { info } => assert_eq!(info.input, json!("{\"command\": ")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn plan_refusal_is_the_output_and_asks_nothing() {
    let s = setup(PermissionMode::Ask, &[], &[]);
    assert_eq!(
        s.output("alpha", r#"{"text":"refuse"}"#).await,
        "alpha refused"
    );
    assert_eq!(s.sink.asked().len(), 0);
    let events = s.sink.events();
    assert_eq!(kinds(&events), vec!["start", "end"]);
    assert_eq!(end_of(&events).0, ToolStatus::Failed);
}

#[tokio::test]
async fn events_in_order_with_the_plans_info_and_preview() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    let out = s
        .output("bash", r#"{"command": "printf 'a\nb\nc\n'"}"#)
        .await;
    assert_eq!(out, "a\nb\nc\n");
    let events = s.sink.events();
    assert_eq!(kinds(&events), vec!["start", "running", "output", "end"]);
    match &events[0] {
        Event::ToolStart { info } => {
            assert_eq!(info.id, "call-1");
            assert_eq!(info.tool, "bash");
            // JSON's \n escapes are real newlines in the command.
            assert_eq!(info.title, "printf 'a\nb\nc\n'");
            assert_eq!(info.kind, ToolKind::Execute);
            assert_eq!(info.input, json!({"command": "printf 'a\nb\nc\n'"}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        events[1],
        Event::ToolRunning {
            id: "call-1".to_string()
        }
    );
    let (status, output, preview) = end_of(&events);
    assert_eq!(status, ToolStatus::Completed);
    assert_eq!(output, "a\nb\nc\n");
    // previewLines = 2, bash echoes; the cut is said.
    assert_eq!(preview, vec!["a", "b", "… 1 more line"]);

    // A tool that does not echo has no preview; locations come from the plan.
    s.sink.take_events();
    assert_eq!(s.output("zeta", r#"{"text":"x\ny"}"#).await, "echo:x\ny");
    let events = s.sink.events();
    match &events[0] {
        Event::ToolStart { info } => {
            assert_eq!(info.title, "title x\ny");
            assert_eq!(info.kind, ToolKind::Read);
            assert_eq!(info.locations, vec!["/abs/path"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        end_of(&events),
        (ToolStatus::Completed, "echo:x\ny".to_string(), vec![])
    );
}

#[tokio::test]
async fn failing_command_is_status_failed() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    assert_eq!(
        s.output("bash", r#"{"command":"echo x; exit 4"}"#).await,
        "x\n[exit code: exit status 4]"
    );
    let (status, _, preview) = end_of(&s.sink.events());
    assert_eq!(status, ToolStatus::Failed);
    assert_eq!(preview, vec!["x", "[exit code: exit status 4]"]);
}

#[tokio::test]
async fn permission_allow_once_asks_every_time() {
    let s = setup(
        PermissionMode::Ask,
        &[Decision::AllowOnce, Decision::AllowOnce],
        &[],
    );
    assert_eq!(s.output("bash", r#"{"command":"echo one"}"#).await, "one\n");
    assert_eq!(s.output("bash", r#"{"command":"echo two"}"#).await, "two\n");
    assert_eq!(s.sink.asked().len(), 2);
    let asked = s.sink.asked()[0].clone();
    assert_eq!(asked.title, "echo one");
    // Asked after ToolStart, before ToolRunning.
    assert_eq!(
        kinds(&s.sink.events()),
        vec![
            "start", "running", "output", "end", "start", "running", "output", "end"
        ]
    );
    // A tool that needs no permission is never asked about.
    assert_eq!(s.output("zeta", r#"{"text":"q"}"#).await, "echo:q");
    assert_eq!(s.sink.asked().len(), 2);
}

#[tokio::test]
async fn permission_allow_always_is_remembered_for_the_command_prefix() {
    let s = setup(
        PermissionMode::Ask,
        &[
            Decision::AllowAlways,
            Decision::AllowOnce,
            Decision::AllowAlways,
        ],
        &[],
    );
    assert_eq!(s.output("bash", r#"{"command":"echo one"}"#).await, "one\n");
    assert_eq!(
        s.output("bash", r#"{"command":"echo one two"}"#).await,
        "one two\n"
    );
    assert_eq!(s.sink.asked().len(), 1);
    // Another command of the same tool still asks (rules.rs has more).
    assert_eq!(s.output("bash", r#"{"command":"echo two"}"#).await, "two\n");
    assert_eq!(s.sink.asked().len(), 2);
    // Other tools are remembered by name.
    assert_eq!(s.output("alpha", r#"{"text":"a"}"#).await, "echo:a");
    assert_eq!(s.output("alpha", r#"{"text":"b"}"#).await, "echo:b");
    assert_eq!(s.sink.asked().len(), 3);
}

#[tokio::test]
async fn permission_reject_returns_the_rejection_text_and_runs_nothing() {
    let s = setup(
        PermissionMode::Ask,
        &[Decision::Reject, Decision::Reject],
        &[],
    );
    let out = s.output("bash", r#"{"command":"touch ran"}"#).await;
    assert_eq!(out, "[command rejected by the user]");
    assert!(!s.ctx.cwd.join("ran").exists());
    let events = s.sink.events();
    assert_eq!(kinds(&events), vec!["start", "end"]);
    assert_eq!(end_of(&events).0, ToolStatus::Failed);
    assert_eq!(
        s.output("alpha", r#"{"text":"a"}"#).await,
        "[edit rejected by the user]"
    );
}

#[tokio::test]
async fn permission_cancelled_is_not_run() {
    let s = setup(PermissionMode::Ask, &[Decision::Cancelled], &[]);
    let out = s.output("bash", r#"{"command":"touch ran"}"#).await;
    assert_eq!(out, "[not run: the turn was stopped]");
    assert!(!s.ctx.cwd.join("ran").exists());
    let events = s.sink.events();
    assert_eq!(kinds(&events), vec!["start", "end"]);
    assert_eq!(end_of(&events).0, ToolStatus::Failed);
}

#[tokio::test]
async fn already_cancelled_turn_runs_nothing() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    s.ctx.cancel.cancel();
    assert_eq!(
        s.output("bash", r#"{"command":"touch ran"}"#).await,
        "[not run: the turn was stopped]"
    );
    assert!(!s.ctx.cwd.join("ran").exists());
}

#[tokio::test]
async fn allow_mode_never_asks() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    assert_eq!(s.output("bash", r#"{"command":"echo ok"}"#).await, "ok\n");
    assert_eq!(s.output("alpha", r#"{"text":"a"}"#).await, "echo:a");
    assert_eq!(s.sink.asked().len(), 0);
}

#[tokio::test]
async fn key_values_are_redacted_in_every_output() {
    let s = setup(
        PermissionMode::Allow,
        &[],
        &["sk-live-abcdef123456", "gm-987654321"],
    );
    assert_eq!(
        s.output(
            "bash",
            r#"{"command":"echo key=sk-live-abcdef123456; echo gm-987654321x"}"#
        )
        .await,
        "key=[redacted]\n[redacted]x\n"
    );
    assert_eq!(
        s.output("zeta", r#"{"text":"sk-live-abcdef123456"}"#).await,
        "echo:[redacted]"
    );
    // The events carry the redacted text too.
    let (_, output, _) = end_of(&s.sink.events());
    assert_eq!(output, "echo:[redacted]");
}

#[tokio::test]
async fn key_values_are_redacted_in_every_event() {
    // `--output-format json` showed the raw arguments and the diff of
    // `tool_start` while `tool_end` was redacted.
    let key = "sk-live-abcdef123456";
    let s = setup(PermissionMode::Ask, &[Decision::AllowOnce], &[key]);
    assert_eq!(
        s.output("alpha", &format!(r#"{{"text":"change {key}"}}"#))
            .await,
        "echo:change [redacted]"
    );
    // Refused before its plan: the arguments as sent, under a key too.
    s.output("zeta", &format!(r#"{{"text": 5, "{key}": "{key}"}}"#))
        .await;
    s.output("nope", &format!(r#"not json {key}"#)).await;
    let events = format!("{:?}", s.sink.events());
    assert!(!events.contains(key), "{events}");
    // Title, input, path, diff, new text, output and the diff's preview
    // of the edit; the refused calls' input (three).
    assert_eq!(events.matches("[redacted]").count(), 10, "{events}");
    let asked = format!("{:?}", s.sink.asked());
    assert!(
        !asked.contains(key) && asked.contains("[redacted]"),
        "{asked}"
    );
}

#[tokio::test]
async fn loop_detector_warns_at_three_and_stops_at_six() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    let args = r#"{"command":"echo same; exit 1"}"#;
    let plain = "same\n[exit code: exit status 1]";
    let warned = format!("{plain}\n{LOOP}");
    for i in 1..=5 {
        // Spacing differences do not hide the repeat.
        let a = if i % 2 == 0 {
            args.to_string()
        } else {
            args.replace(':', " : ")
        };
        let out = s.output("bash", &a).await;
        if i < 3 {
            assert_eq!(out, plain, "call {i}");
        } else {
            assert_eq!(out, warned, "call {i}");
        }
    }
    let stop = "[error: the model repeated the same bash call 6 times in a row with the same failing result — turn stopped by the loop detector; rephrase the request, or fix what the tool kept reporting]";
    match s.call("bash", args).await {
        CallOutcome::Stop { output, error } => {
            assert_eq!(output, format!("{plain}\n{stop}"));
            assert_eq!(error, stop);
        }
        other => panic!("expected a stop, got {other:?}"),
    }
    let (status, output, _) = end_of(&s.sink.events());
    assert_eq!(status, ToolStatus::Failed);
    assert_eq!(output, format!("{plain}\n{stop}"));
}

#[tokio::test]
async fn loop_detector_restarts_on_a_different_call_and_resets_on_new() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    let a = r#"{"text":"a"}"#;
    assert_eq!(s.output("zeta", a).await, "echo:a");
    assert_eq!(s.output("zeta", a).await, "echo:a");
    assert_eq!(s.output("zeta", r#"{"text":"b"}"#).await, "echo:b");
    assert_eq!(s.output("zeta", a).await, "echo:a");
    assert_eq!(s.output("zeta", a).await, "echo:a");
    assert_eq!(s.output("zeta", a).await, format!("echo:a\n{LOOP}"));
    s.toolbox.reset_detector();
    assert_eq!(s.output("zeta", a).await, "echo:a");
    assert_eq!(s.output("zeta", a).await, "echo:a");
    assert_eq!(s.output("zeta", a).await, format!("echo:a\n{LOOP}"));
}

#[tokio::test]
async fn repeated_refusals_are_detected_too() {
    // The 12B model that repeated a refused edit thirty times.
    let s = setup(PermissionMode::Allow, &[], &[]);
    for _ in 0..5 {
        s.call("alpha", r#"{"text":"refuse"}"#).await;
    }
    match s.call("alpha", r#"{"text":"refuse"}"#).await {
        CallOutcome::Stop { output, error } => {
            assert_eq!(output, format!("alpha refused\n{error}"));
            assert!(error.starts_with("[error: the model repeated the same alpha call 6 times"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn empty_output_gets_the_loop_text_alone() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    for _ in 0..2 {
        assert_eq!(s.output("bash", r#"{"command":"true"}"#).await, "");
    }
    assert_eq!(s.output("bash", r#"{"command":"true"}"#).await, LOOP);
    // An output ending in a newline gets no blank line before the text.
    for _ in 0..2 {
        assert_eq!(s.output("bash", r#"{"command":"echo hi"}"#).await, "hi\n");
    }
    assert_eq!(
        s.output("bash", r#"{"command":"echo hi"}"#).await,
        format!("hi\n{LOOP}")
    );
}

#[tokio::test]
async fn a_panicking_tool_is_text() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    assert_eq!(
        s.output("zeta", r#"{"text":"panic"}"#).await,
        "[error: the zeta tool failed unexpectedly: boom]"
    );
    assert_eq!(end_of(&s.sink.events()).0, ToolStatus::Failed);
}

#[tokio::test]
async fn outputs_are_capped_at_max_output() {
    let dir = TempDir::new();
    let tools: Vec<Box<dyn Tool>> = vec![Box::new(Fixed::new("zeta", false))];
    let toolbox = Toolbox::new(
        tools,
        ToolboxSettings {
            preview_lines: 5,
            secrets: Vec::new(),
        },
    );
    let ctx = ToolContext {
        cwd: dir.path().to_path_buf(),
        sink: Arc::new(mm_types::NullSink),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
        max_output: 200,
        call_id: String::new(),
    };
    let text = "0123456789".repeat(50);
    let out = toolbox
        .call("c", "zeta", &json!({ "text": text }).to_string(), &ctx)
        .await;
    let expected = bash_support::expected_truncation(&format!("echo:{text}"), "", 200);
    assert_eq!(out, CallOutcome::Output(ToolOutput::ok(expected)));
}

#[tokio::test]
async fn cancelling_a_running_command_through_the_toolbox() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    let cancel = s.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let out = s
        .output("bash", r#"{"command":"echo started; sleep 30"}"#)
        .await;
    assert_eq!(out, "started\n[error: cancelled by the user]");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(end_of(&s.sink.events()).0, ToolStatus::Failed);
}

/// The ToolStart of the last call.
fn last_start(events: &[Event]) -> ToolInfo {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolStart { info } => Some(info.clone()),
            _ => None,
        })
        .expect("no ToolStart")
}

#[tokio::test]
async fn a_call_refused_before_its_plan_is_still_shown_as_what_it_is() {
    let dir = TempDir::new();
    std::fs::create_dir(dir.path().join("skills")).unwrap();
    std::fs::write(dir.path().join("skills/deploy.md"), "# Deploy\n").unwrap();
    let server = mm_config::LspServer {
        name: "fake".to_string(),
        command: "bash".to_string(),
        args: Vec::new(),
        extensions: vec![".c".to_string()],
    };
    let (lsp, _) = mm_tools::lsp::Lsp::new(vec![server], dir.path().to_path_buf());
    let tools: Vec<Box<dyn Tool>> = vec![
        Box::new(Bash::with_registry(
            bash_support::settings(20),
            ProcessRegistry::new(),
        )),
        Box::new(mm_tools::files::ReadFile::new()),
        Box::new(mm_tools::files::WriteFile::new()),
        Box::new(mm_tools::skill::ReadSkill::new(dir.path().join("skills")).unwrap()),
        Box::new(lsp.unwrap()),
    ];
    let toolbox = Toolbox::new(
        tools,
        ToolboxSettings {
            preview_lines: 2,
            secrets: Vec::new(),
        },
    );
    let sink = Recorder::answering(&[]);
    let ctx = ToolContext {
        cwd: dir.path().to_path_buf(),
        sink: sink.clone(),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Ask)),
        max_output: 30_000,
        call_id: String::new(),
    };
    let abs = |p: &str| vec![dir.path().join(p).display().to_string()];
    let cases: Vec<(&str, &str, &str, ToolKind, Vec<String>)> = vec![
        (
            "read_file",
            r#"{"path": "missing.txt"}"#,
            "missing.txt",
            ToolKind::Read,
            abs("missing.txt"),
        ),
        (
            "read_file",
            r#"{"path": "#,
            "read_file",
            ToolKind::Read,
            vec![],
        ),
        (
            "write_file",
            r#"{"path": "sub/new.txt"}"#,
            "sub/new.txt",
            ToolKind::Edit,
            abs("sub/new.txt"),
        ),
        (
            "read_skill",
            r#"{"name": "../nope"}"#,
            "nope",
            ToolKind::Read,
            vec![],
        ),
        (
            "lsp",
            r#"{"action": "rename", "path": "main.c", "symbol": "greet"}"#,
            "rename main.c greet",
            ToolKind::Edit,
            abs("main.c"),
        ),
        (
            "lsp",
            r#"{"action": "jump", "path": "main.c", "symbol": "greet"}"#,
            "jump main.c greet",
            ToolKind::Read,
            abs("main.c"),
        ),
        (
            "bash",
            r#"{"command": 3}"#,
            "bash",
            ToolKind::Execute,
            vec![],
        ),
        ("nope", r#"{"path": "x"}"#, "nope", ToolKind::Other, vec![]),
    ];
    for (tool, args, title, kind, locations) in cases {
        let out = toolbox.call("c", tool, args, &ctx).await;
        assert!(out.failed(), "{tool} {args}: {out:?}");
        let events = sink.take_events();
        assert_eq!(kinds(&events), vec!["start", "end"], "{tool} {args}");
        let info = last_start(&events);
        assert_eq!(
            (info.title.as_str(), info.kind, info.locations),
            (title, kind, locations),
            "{tool} {args}"
        );
        assert_eq!(end_of(&events).0, ToolStatus::Failed);
    }
    // A call that runs shows its plan's title, the same the fallback gives.
    std::fs::write(dir.path().join("here.txt"), "x\n").unwrap();
    toolbox
        .call("c", "read_file", r#"{"path": "here.txt"}"#, &ctx)
        .await;
    let info = last_start(&sink.take_events());
    assert_eq!(
        (info.title.as_str(), info.kind, info.locations),
        ("here.txt", ToolKind::Read, abs("here.txt"))
    );
}

#[tokio::test]
async fn the_status_is_the_tools_word_never_a_guess_from_the_text() {
    let s = setup(PermissionMode::Allow, &[], &[]);
    // A `cat` of a log whose last line reads like a tool error.
    let out = s
        .call(
            "bash",
            r#"{"command":"printf 'ok\\n[error: 30s timeout exceeded]\\n'"}"#,
        )
        .await;
    assert_eq!(
        out,
        CallOutcome::Output(ToolOutput::ok("ok\n[error: 30s timeout exceeded]\n"))
    );
    assert_eq!(end_of(&s.sink.take_events()).0, ToolStatus::Completed);
    let out = s
        .call("zeta", r#"{"text":"x\n[exit code: exit status 1]"}"#)
        .await;
    assert!(!out.failed());
    assert_eq!(end_of(&s.sink.take_events()).0, ToolStatus::Completed);
    // A tool that says it failed is failed, whatever its text.
    let out = s.call("zeta", r#"{"text":"fail quietly"}"#).await;
    assert_eq!(
        out,
        CallOutcome::Output(ToolOutput::fail("echo:fail quietly"))
    );
    assert_eq!(end_of(&s.sink.take_events()).0, ToolStatus::Failed);
    // Rejections, refusals and not-run calls are failures in the outcome too.
    assert!(s.call("zeta", r#"{"text":"refuse"}"#).await.failed());
    assert!(s.call("nope", "{}").await.failed());
}

/// A running command's output goes to the front end as it comes, under
/// the call's id, redacted like the result (a key split between two reads
/// too); it is the start of what the model gets.
#[tokio::test]
async fn bash_output_streams_to_the_sink_redacted() {
    let s = setup(PermissionMode::Allow, &[], &["sk-live-0123456789"]);
    let out = s
        .output(
            "bash",
            r#"{"command":"echo the first line of a slow command; sleep 0.3; printf 'key sk-live-01'; sleep 0.3; echo '23456789 in two reads'; sleep 0.3; echo the third line, long enough to pass the held tail"}"#,
        )
        .await;
    let live: Vec<(String, String)> = s
        .sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolOutput { id, text } => Some((id, text)),
            _ => None,
        })
        .collect();
    assert!(live.len() >= 2, "in pieces, as it came: {live:?}");
    assert!(live.iter().all(|(id, _)| id == "call-1"), "{live:?}");
    let joined: String = live.iter().map(|(_, t)| t.as_str()).collect();
    assert!(!joined.contains("sk-live"), "{joined}");
    assert!(joined.contains("key [redacted] in two reads"), "{joined}");
    assert!(out.starts_with(&joined), "{joined:?} / {out:?}");
}

/// The echo is the tool's row's, decided once: a server's tool (family
/// `mcp`) that echoes shows the same preview live and when the session is
/// replayed (the replay once decided by family and showed none).
#[tokio::test]
async fn a_replayed_call_echoes_what_it_echoed_live() {
    let dir = TempDir::new();
    let mut server = Fixed::new("mcp__srv__tool", false);
    server.row.family = mm_types::ToolFamily::Mcp;
    server.row.echoes = true;
    let toolbox = Toolbox::new(
        vec![Box::new(server)],
        ToolboxSettings {
            preview_lines: 2,
            secrets: Vec::new(),
        },
    );
    let sink = Recorder::answering(&[]);
    let ctx = ToolContext {
        cwd: dir.path().to_path_buf(),
        sink: sink.clone(),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
        max_output: 30_000,
        call_id: String::new(),
    };
    let args = r#"{"text": "a\nb\nc\nd"}"#;
    let live = toolbox.call("c1", "mcp__srv__tool", args, &ctx).await;
    toolbox.replay(
        "c1",
        "mcp__srv__tool",
        args,
        Some((live.output(), live.failed())),
        &ctx,
    );
    let ends: Vec<(Vec<String>, bool)> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolEnd { preview, .. } => Some((preview, false)),
            Event::ToolStart { info } => Some((Vec::new(), info.echoes)),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 4, "{ends:?}");
    assert_eq!(ends[0], (Vec::new(), true), "the live start says it echoes");
    assert_eq!(ends[2], (Vec::new(), true), "the replayed start too");
    assert_eq!(ends[1].0, ["echo:a", "b", "… 2 more lines"]);
    assert_eq!(ends[1].0, ends[3].0, "live and replay echo alike");
}
