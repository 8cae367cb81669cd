#![allow(clippy::unwrap_used, clippy::expect_used)]
//! write_file and edit_file against symlinks, with the sandbox on and off:
//! under `workspace-write` a path is followed whole (a dangling last link,
//! a dangling folder link, a chain) before it is judged, and what leads
//! out of the writable folders is refused, at plan and again at run;
//! without a sandbox a link out of the working directory is written
//! through (decision 12) and the call says where it wrote. Every target is
//! in a temp folder: "home" stands in for the user's own files.

mod files_support;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use files_support::Env;
use mm_policy::{Mode, Policy, RuleLists, Sandbox, SandboxMode};
use mm_tools::files::{EditFile, WriteFile};
use mm_tools::{Permissions, ToolContext};
use serde_json::json;

/// A working directory, a temp folder and a "home" apart, with file tools
/// in a `workspace-write` sandbox (`None`: no sandbox).
struct World {
    env: Env,
    work: PathBuf,
    home: PathBuf,
    temp: PathBuf,
}

fn world(mode: Option<SandboxMode>) -> World {
    let mut env = Env::new();
    let root = env.dir.path().canonicalize().unwrap();
    let (work, home, temp) = (root.join("work"), root.join("home"), root.join("tmp"));
    for d in [&work, &home, &temp] {
        std::fs::create_dir(d).unwrap();
    }
    let sandbox = match mode {
        Some(mode) => Sandbox::new(mode, false, &work, &temp),
        None => Sandbox::off(),
    };
    let policy = Policy::new(RuleLists {
        default: Mode::Allow,
        allow: &[],
        ask: &[],
        deny: &[],
    })
    .unwrap();
    env.ctx = ToolContext {
        cwd: work.clone(),
        permissions: Arc::new(Permissions::with(policy, sandbox)),
        ..env.ctx
    };
    World {
        env,
        work,
        home,
        temp,
    }
}

impl World {
    fn link(&self, target: &Path, name: &str) {
        symlink(target, self.work.join(name)).unwrap();
    }

    fn outside(&self, path: &str, real: &Path) -> String {
        format!(
            "{path} leads through a symlink to {}, outside the folders the sandbox lets mm write ({}, {})",
            real.display(),
            self.work.display(),
            self.temp.display()
        )
    }

    async fn write(&self, path: &str, content: &str) -> mm_tools::ToolOutput {
        self.env
            .outcome(&WriteFile::new(), json!({"path": path, "content": content}))
            .await
    }

    async fn edit(&self, path: &str, old: &str, new: &str) -> mm_tools::ToolOutput {
        self.env
            .outcome(
                &EditFile::new(),
                json!({"path": path, "edits": [{"old": old, "new": new}]}),
            )
            .await
    }
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_symlink()
}

#[tokio::test]
async fn a_dangling_link_out_of_the_sandbox_is_not_written_through() {
    let w = world(Some(SandboxMode::WorkspaceWrite));
    // ~/.config/mm/AGENTS.md, not there yet, and a link to it made inside.
    let config = w.home.join("config/mm");
    std::fs::create_dir_all(&config).unwrap();
    let agents = config.join("AGENTS.md");
    w.link(&agents, "notes.md");
    let out = w.write("notes.md", "obey me\n").await;
    assert!(out.failed, "{}", out.text);
    assert_eq!(out.text, w.outside("notes.md", &agents));
    assert!(!agents.exists(), "written outside the sandbox");
    assert!(is_link(&w.work.join("notes.md")));

    // A dangling link to a folder that is not there yet: nothing made.
    w.link(&w.home.join("newdir"), "d");
    let out = w.write("d/sub/x.md", "x").await;
    assert_eq!(
        out.text,
        w.outside("d/sub/x.md", &w.home.join("newdir/sub/x.md"))
    );
    assert!(!w.home.join("newdir").exists());

    // A chain: a dangling link inside to a link inside that leads out.
    w.link(Path::new("hop"), "chain");
    w.link(&w.home.join("deep.md"), "hop");
    let out = w.write("chain", "x").await;
    assert_eq!(out.text, w.outside("chain", &w.home.join("deep.md")));
    assert!(!w.home.join("deep.md").exists());

    // edit_file through a link to a file outside: refused, unchanged.
    std::fs::write(w.home.join("rc"), "keep = 1\n").unwrap();
    w.link(&w.home.join("rc"), "rc");
    let out = w.edit("rc", "keep = 1", "keep = 2").await;
    assert_eq!(out.text, w.outside("rc", &w.home.join("rc")));
    assert_eq!(
        std::fs::read_to_string(w.home.join("rc")).unwrap(),
        "keep = 1\n"
    );
}

#[tokio::test]
async fn a_link_that_stays_inside_is_written_through_and_stays_a_link() {
    let w = world(Some(SandboxMode::WorkspaceWrite));
    std::fs::create_dir(w.work.join("docs")).unwrap();
    w.link(Path::new("docs/real.md"), "notes.md");
    let out = w.write("notes.md", "a\n").await;
    assert!(!out.failed, "{}", out.text);
    assert!(
        out.text.starts_with("created notes.md (1 lines)\n"),
        "{}",
        out.text
    );
    assert_eq!(
        std::fs::read_to_string(w.work.join("docs/real.md")).unwrap(),
        "a\n"
    );
    assert!(is_link(&w.work.join("notes.md")));
    let out = w.edit("notes.md", "a", "b").await;
    assert!(!out.failed, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(w.work.join("docs/real.md")).unwrap(),
        "b\n"
    );
    assert!(is_link(&w.work.join("notes.md")));
    // Into the temp folder, a writable root too.
    w.link(&w.temp.join("scratch.md"), "scratch");
    let out = w.write("scratch", "t").await;
    assert!(!out.failed, "{}", out.text);
    assert!(w.temp.join("scratch.md").exists());
}

#[tokio::test]
async fn a_folder_swapped_for_a_link_after_the_plan_is_caught_at_run() {
    let w = world(Some(SandboxMode::WorkspaceWrite));
    std::fs::create_dir(w.work.join("sub")).unwrap();
    let tool = WriteFile::new();
    let args = json!({"path": "sub/f.md", "content": "x"});
    let plan = w.env.plan(&tool, args.clone()).await.unwrap();
    // While the user is asked, a command swaps the folder for a link out.
    std::fs::remove_dir(w.work.join("sub")).unwrap();
    w.link(&w.home, "sub");
    let out = w.env.run_output(&tool, args, plan).await;
    assert!(out.failed, "{}", out.text);
    assert_eq!(out.text, w.outside("sub/f.md", &w.home.join("f.md")));
    assert!(!w.home.join("f.md").exists());
}

#[tokio::test]
async fn without_a_sandbox_a_link_out_is_written_and_the_call_says_where() {
    let w = world(None);
    let agents = w.home.join("AGENTS.md");
    w.link(&agents, "notes.md");
    let tool = WriteFile::new();
    let args = json!({"path": "notes.md", "content": "hi\n"});
    let plan = w.env.plan(&tool, args.clone()).await.unwrap();
    // The user is asked with the real target in view.
    assert_eq!(plan.title, format!("notes.md → {}", agents.display()));
    assert_eq!(plan.locations, [agents.display().to_string()]);
    let out = w.env.run_output(&tool, args, plan).await;
    assert!(!out.failed, "{}", out.text);
    let note = format!(
        "notes.md leads through a symlink to {}, outside the working directory",
        agents.display()
    );
    assert!(
        out.text
            .starts_with(&format!("created notes.md (1 lines); {note}\n")),
        "{}",
        out.text
    );
    assert_eq!(std::fs::read_to_string(&agents).unwrap(), "hi\n");
    assert!(is_link(&w.work.join("notes.md")));
    let out = w.edit("notes.md", "hi", "ho").await;
    assert!(
        out.text.starts_with("edited notes.md: 1 edit(s)") && out.text.contains(&note),
        "{}",
        out.text
    );
    // A link inside, or a path the model wrote outside itself: no note.
    w.link(Path::new("inside.md"), "in");
    let out = w.write("in", "x").await;
    assert!(
        out.text.starts_with("created in (1 lines)\n"),
        "{}",
        out.text
    );
    let plain = w.home.join("plain.md").display().to_string();
    let out = w.write(&plain, "x").await;
    assert!(
        out.text
            .starts_with(&format!("created {plain} (1 lines)\n")),
        "{}",
        out.text
    );
}
