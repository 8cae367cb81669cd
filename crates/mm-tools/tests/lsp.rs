#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `lsp` tool: declared only when a server is found (warnings for the
//! others), its description, and calls through the Toolbox against a real
//! clangd: navigation as kind `read` with echo, rename as kind `edit` that
//! asks first (rejected, allowed), and a file changed between the preview
//! and the write. clangd comes from .ci/install-lsp; without it the server
//! tests skip with a message unless `CI` is set.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mm_config::LspServer;
use mm_test_support::Recorder;
use mm_test_support::wait::eventually;
use mm_tools::lsp::Lsp;
use mm_tools::toolbox::{Toolbox, ToolboxSettings};
use mm_tools::{PermissionMode, Permissions, Tool, ToolContext};
use mm_types::{Decision, Event, ToolKind, ToolStatus};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const GREET_H: &str = "int greet(int times);\n";
const GREET_C: &str = "#include \"greet.h\"\n\nint greet(int times) { return times; }\n";
const MAIN_C: &str = "#include \"greet.h\"\n\nint main(void) {\n  const char *w = \"wörld 😀\"; return greet(2) + (w != 0);\n}\n";

fn server(name: &str, command: &str, exts: &[&str]) -> LspServer {
    LspServer {
        name: name.into(),
        command: command.into(),
        args: vec![],
        extensions: exts.iter().map(|s| s.to_string()).collect(),
    }
}

fn have_clangd(test: &str) -> bool {
    let ok = std::process::Command::new("clangd")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "clangd is not installed but CI is set: run .ci/install-lsp"
        );
        skip_note(&format!(
            "SKIPPED {test}: clangd is not installed (bash .ci/install-lsp installs it)"
        ));
    }
    ok
}

/// The status and preview of every finished call.
fn ends(sink: &Recorder) -> Vec<(ToolStatus, Vec<String>)> {
    sink.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::ToolEnd {
                status, preview, ..
            } => Some((status, preview)),
            _ => None,
        })
        .collect()
}

struct Env {
    dir: tempfile::TempDir,
    sink: Arc<Recorder>,
    ctx: ToolContext,
}

impl Env {
    fn new(mode: PermissionMode, answers: &[Decision]) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (name, text) in [
            ("greet.h", GREET_H),
            ("greet.c", GREET_C),
            ("main.c", MAIN_C),
        ] {
            std::fs::write(root.join(name), text).unwrap();
        }
        let cc = format!(
            "[{{\"directory\": \"{d}\", \"file\": \"greet.c\", \"arguments\": [\"cc\", \"-c\", \"greet.c\"]}}, {{\"directory\": \"{d}\", \"file\": \"main.c\", \"arguments\": [\"cc\", \"-c\", \"main.c\"]}}]",
            d = root.display()
        );
        std::fs::write(root.join("compile_commands.json"), cc).unwrap();
        let sink = Recorder::answering(answers);
        let ctx = ToolContext {
            cwd: root,
            sink: sink.clone(),
            cancel: CancellationToken::new(),
            permissions: Arc::new(Permissions::new(mode)),
            max_output: 30_000,
            call_id: String::new(),
        };
        Env { dir, sink, ctx }
    }

    fn root(&self) -> &Path {
        &self.ctx.cwd
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap()
    }

    fn lsp(&self) -> Lsp {
        let (lsp, warnings) = Lsp::new(
            vec![server("clangd", "clangd", &[".c", ".h"])],
            self.root().to_path_buf(),
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        lsp.expect("clangd is on the PATH")
    }

    fn toolbox(&self) -> Toolbox {
        Toolbox::new(
            vec![Box::new(self.lsp())],
            ToolboxSettings {
                preview_lines: 3,
                secrets: vec![],
            },
        )
    }

    async fn call(&self, toolbox: &Toolbox, id: &str, args: serde_json::Value) -> String {
        tokio::time::timeout(
            Duration::from_secs(90),
            toolbox.call(id, "lsp", &args.to_string(), &self.ctx),
        )
        .await
        .expect("lsp call timed out")
        .output()
        .to_string()
    }
}

#[test]
fn missing_servers_are_warned_about_and_none_found_means_no_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (lsp, warnings) = Lsp::new(
        vec![
            server("gopls", "mm-test-no-such-gopls", &[".go"]),
            server("zls", "/nonexistent/zls", &[".zig"]),
        ],
        dir.path().to_path_buf(),
    );
    assert!(lsp.is_none());
    assert_eq!(
        warnings,
        vec![
            "[warning: lsp server gopls (mm-test-no-such-gopls) not found on the PATH — skipped]"
                .to_string(),
            "[warning: lsp server zls (/nonexistent/zls) not found on the PATH — skipped]"
                .to_string(),
        ]
    );

    // One found (bash is everywhere): the tool is declared and names only
    // the servers it has.
    let (lsp, warnings) = Lsp::new(
        vec![
            server("gopls", "mm-test-no-such-gopls", &[".go"]),
            server("fake", "bash", &[".c", ".h"]),
        ],
        dir.path().to_path_buf(),
    );
    assert_eq!(
        warnings,
        vec![
            "[warning: lsp server gopls (mm-test-no-such-gopls) not found on the PATH — skipped]"
                .to_string()
        ]
    );
    let spec = lsp.expect("declared").spec();
    assert_eq!(spec.name, "lsp");
    assert!(
        spec.description
            .ends_with("Servers available: fake (.c .h)."),
        "{}",
        spec.description
    );
    for action in [
        "definition",
        "references",
        "hover",
        "symbols",
        "diagnostics",
        "rename",
    ] {
        assert!(spec.description.contains(action), "{action}");
    }
    assert_eq!(spec.parameters["required"], json!(["action", "path"]));
    for field in ["action", "path", "symbol", "line", "column", "new_name"] {
        assert!(spec.parameters["properties"][field].is_object(), "{field}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_is_a_read_that_echoes() {
    if !have_clangd("navigation_is_a_read_that_echoes") {
        return;
    }
    let env = Env::new(PermissionMode::Ask, &[]);
    let tb = env.toolbox();
    let out = env
        .call(
            &tb,
            "c1",
            json!({"action": "definition", "path": "main.c", "symbol": "greet"}),
        )
        .await;
    assert_eq!(out, "greet.c:3:5  int greet(int times) { return times; }");
    let out = env
        .call(
            &tb,
            "c2",
            json!({"action": "hover", "path": "main.c", "line": "4", "column": 39}),
        )
        .await;
    assert!(out.contains("function `greet`"), "{out}");

    let starts = env.sink.starts();
    assert_eq!(starts[0].kind, ToolKind::Read);
    assert_eq!(starts[0].title, "definition main.c greet");
    assert_eq!(
        starts[0].locations,
        vec![env.root().join("main.c").display().to_string()]
    );
    assert_eq!(starts[1].title, "hover main.c:4:39");
    // No permission asked for navigation, even in ask mode; output echoed.
    assert!(env.sink.asked().is_empty());
    let ends = ends(&env.sink);
    assert_eq!(ends[0].0, ToolStatus::Completed);
    assert_eq!(
        ends[0].1,
        vec!["greet.c:3:5  int greet(int times) { return times; }".to_string()]
    );

    let bad = env
        .call(&tb, "c3", json!({"action": "jump", "path": "main.c"}))
        .await;
    assert_eq!(
        bad,
        "[lsp: unknown action \"jump\" — use definition, references, hover, symbols, diagnostics or rename]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_asks_first_and_a_rejection_writes_nothing() {
    if !have_clangd("rename_asks_first_and_a_rejection_writes_nothing") {
        return;
    }
    let env = Env::new(
        PermissionMode::Ask,
        &[Decision::Reject, Decision::AllowOnce],
    );
    let tb = env.toolbox();
    let args =
        json!({"action": "rename", "path": "greet.c", "symbol": "greet", "new_name": "salute"});

    let out = env.call(&tb, "r1", args.clone()).await;
    assert_eq!(out, "[rename rejected by the user]");
    assert_eq!(env.read("greet.c"), GREET_C);
    assert_eq!(env.read("main.c"), MAIN_C);

    let asked = env.sink.asked().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].kind, ToolKind::Edit);
    assert_eq!(asked[0].title, "rename greet.c greet → salute");
    let mut locations = asked[0].locations.clone();
    locations.sort();
    let abs = |n: &str| env.root().join(n).display().to_string();
    assert_eq!(
        locations,
        vec![abs("greet.c"), abs("greet.h"), abs("main.c")]
    );
    let change = asked[0].change.clone().expect("a preview");
    assert!(change.diff.contains("--- main.c\n"), "{}", change.diff);
    assert!(
        change
            .diff
            .contains("+  const char *w = \"wörld 😀\"; return salute(2) + (w != 0);"),
        "{}",
        change.diff
    );

    let out = env.call(&tb, "r2", args).await;
    assert_eq!(
        out,
        "renamed to salute: 3 edit(s) in 3 file(s)\ngreet.c: 1 edit(s)\ngreet.h: 1 edit(s)\nmain.c: 1 edit(s)"
    );
    assert_eq!(env.read("main.c"), MAIN_C.replace("greet(2)", "salute(2)"));
    assert_eq!(env.read("greet.h"), "int salute(int times);\n");
    let ends = ends(&env.sink);
    assert_eq!(ends[0].0, ToolStatus::Failed);
    assert_eq!(ends[1].0, ToolStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_after_the_preview_is_not_written() {
    if !have_clangd("a_file_changed_after_the_preview_is_not_written") {
        return;
    }
    let env = Env::new(PermissionMode::Allow, &[]);
    let lsp = env.lsp();
    let args =
        json!({"action": "rename", "path": "main.c", "symbol": "greet", "new_name": "salute"});
    let plan = tokio::time::timeout(Duration::from_secs(90), lsp.plan(&args, &env.ctx))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plan.kind, ToolKind::Edit);
    assert_eq!(plan.rejection, Some("[rename rejected by the user]"));
    assert!(lsp.row().echoes);

    let edited = GREET_C.replace("return times;", "return times + 1;");
    std::fs::write(env.root().join("greet.c"), &edited).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), lsp.run(&args, plan, &env.ctx))
        .await
        .unwrap();
    assert_eq!(
        out,
        mm_tools::ToolOutput::fail("greet.c changed on disk since it was read; read it again")
    );
    assert_eq!(env.read("greet.c"), edited);
    assert_eq!(env.read("main.c"), MAIN_C);
    assert_eq!(env.read("greet.h"), GREET_H);

    // Without new_name the reference's text, from the plan.
    let no_name = json!({"action": "rename", "path": "main.c", "symbol": "greet"});
    let err = lsp.plan(&no_name, &env.ctx).await.err();
    assert_eq!(
        err.as_deref(),
        Some(
            "[lsp: rename needs new_name — call lsp again with {\"action\": \"rename\", \"path\": …, \"symbol\": …, \"new_name\": \"<the new identifier>\"}; do not use edit_file for a rename]"
        )
    );

    let pid = lsp.client().server_pid("clangd").await.expect("running");
    lsp.shutdown().await;
    assert_eq!(lsp.client().server_pid("clangd").await, None);
    // The process is gone (reaped: no zombie left either).
    assert!(
        eventually(Duration::from_secs(10), || !Path::new(&format!(
            "/proc/{pid}"
        ))
        .exists())
        .await,
        "clangd {pid} still runs"
    );
}

/// A skip note that the test harness does not capture (it shows even for a
/// passing test): written to the process's stderr directly.
fn skip_note(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{text}");
}

/// A rename is written by the file tools' writer, not by mm-lsp: each file
/// is replaced atomically (a new inode; a reader never sees half a file)
/// and keeps its mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_is_written_atomically_and_keeps_each_mode() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !have_clangd("a_rename_is_written_atomically_and_keeps_each_mode") {
        return;
    }
    let env = Env::new(PermissionMode::Allow, &[]);
    let header = env.root().join("greet.h");
    std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::metadata(&header).unwrap();
    let tb = env.toolbox();
    let args =
        json!({"action": "rename", "path": "greet.c", "symbol": "greet", "new_name": "salute"});
    let out = env.call(&tb, "r1", args).await;
    assert!(out.starts_with("renamed to salute: 3 edit(s)"), "{out}");
    assert_eq!(env.read("greet.h"), "int salute(int times);\n");
    let after = std::fs::metadata(&header).unwrap();
    assert_eq!(after.mode() & 0o7777, 0o640, "the mode is kept");
    assert_ne!(
        after.ino(),
        before.ino(),
        "replaced by a rename, not rewritten"
    );
}
