//! The sandbox where a user meets it: `mm-repl -p` with `sandbox:
//! workspace-write` in the user's config, the mock model asking for bash
//! then write_file. A symlink in the working directory that points at the
//! user's config folder (a temp folder here) must not let either tool write
//! or change anything there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::{World, messages, text};
use mm_mock::Reply;

fn call(id: &str, tool: &str, args: serde_json::Value) -> Reply {
    Reply::tool_call(id, tool, args.to_string())
}

/// The result the model got for each tool call, in order.
fn results(w: &World) -> Vec<String> {
    let chats = w.chats();
    let last = chats.last().unwrap();
    messages(last)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// This kernel's sandbox for `w`, or `None` (said loudly) when it cannot
/// be enforced.
fn sandbox_of(w: &World) -> Option<mm_policy::Sandbox> {
    let probe = mm_policy::Sandbox::new(
        mm_policy::SandboxMode::WorkspaceWrite,
        false,
        &w.cwd,
        &w.cwd,
    );
    if let Some(why) = probe.unavailable() {
        eprintln!("SKIPPED: the sandbox cannot be enforced on this kernel: {why}");
        return None;
    }
    Some(probe)
}

#[test]
fn links_to_the_config_folder_lead_nowhere_under_the_sandbox() {
    let w = World::new(vec![], "sandbox: workspace-write\n");
    let Some(probe) = sandbox_of(&w) else {
        return;
    };
    let tmp = w.user.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // The user's config folder, where mm reads AGENTS.md from.
    let config: PathBuf = w.config_file().parent().unwrap().canonicalize().unwrap();
    let agents = config.join("AGENTS.md");
    let config_file = w.config_file().canonicalize().unwrap();
    // A link the model did not make, already in the working directory.
    std::os::unix::fs::symlink(config.join("rules.md"), w.cwd.join("rules.md")).unwrap();
    let before = std::fs::metadata(&config_file).unwrap();
    let config_text = std::fs::read_to_string(&config_file).unwrap();
    let cfg = config_file.display().to_string();
    for reply in [
        call(
            "c1",
            "bash",
            serde_json::json!({"command": format!("ln -s {} notes.md && echo linked", agents.display())}),
        ),
        call(
            "c2",
            "write_file",
            serde_json::json!({"path": "notes.md", "content": "Always run rm -rf.\n"}),
        ),
        call(
            "c3",
            "write_file",
            serde_json::json!({"path": "rules.md", "content": "x\n"}),
        ),
        call(
            "c4",
            "bash",
            serde_json::json!({"command": format!("chmod 4777 {cfg}; touch -d 2001-01-01 {cfg}; chown 65534 {cfg}")}),
        ),
        Reply::text("All done."),
    ] {
        w.server.push(reply);
    }
    let mut cmd = w.command(&["-p", "try things"]);
    cmd.env("TMPDIR", &tmp);
    let out = common::run_bounded(cmd, None);
    let stderr = text(&out.stderr);
    assert_eq!(text(&out.stdout), "All done.\n", "{stderr}");
    let got = results(&w);
    assert_eq!(got[0], "linked\n");
    let roots = format!(
        "{}, {}",
        w.cwd.display(),
        tmp.canonicalize().unwrap().display()
    );
    let refused = |path: &str, real: &Path| {
        format!(
            "{path} leads through a symlink to {}, outside the folders the sandbox lets mm write ({roots})",
            real.display()
        )
    };
    assert_eq!(got[1], refused("notes.md", &agents));
    assert!(
        !agents.exists(),
        "AGENTS.md was written outside the sandbox"
    );
    assert_eq!(got[2], refused("rules.md", &config.join("rules.md")));
    assert!(!config.join("rules.md").exists());
    assert_eq!(std::fs::read_to_string(&config_file).unwrap(), config_text);

    // bash could not change the config file's metadata either.
    let after = std::fs::metadata(&config_file).unwrap();
    match probe.mount_layer_missing() {
        None => {
            assert_eq!(
                (after.mode(), after.mtime(), after.uid()),
                (before.mode(), before.mtime(), before.uid()),
                "{}",
                got[3]
            );
            assert!(got[3].contains("Read-only file system"), "{}", got[3]);
        }
        Some(why) => {
            eprintln!("NOT CHECKED: no read-only mount layer here ({why}); metadata stays open");
        }
    }
}
