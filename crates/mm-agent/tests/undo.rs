//! Undo and redo of a turn's file changes, through the real loop: the mock
//! model asks for a real `edit_file` and a real `bash` command, and the
//! checkpoints are real git trees.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::{Recorder, ask, config};
use mm_agent::checkpoint::{Direction, Rewind, RewindError};
use mm_agent::config::Config;
use mm_agent::ui::Sink;
use mm_agent::{Agent, Message, PermissionSource};
use mm_mock::{MockServer, Reply};

/// A turn that changes files both ways: edit a.txt, then
/// `rm b.txt; echo x > c.txt`.
fn the_turn() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "c1",
            "edit_file",
            serde_json::json!({"path": "a.txt", "edits": [{"old": "a\n", "new": "a edited\n"}]})
                .to_string(),
        ),
        Reply::tool_call("c2", "bash", r#"{"command":"rm b.txt; echo x > c.txt"}"#),
        Reply::text("Done."),
    ]
}

fn git(dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git status --porcelain`, `git stash list`, `git for-each-ref` and the
/// index file's bytes.
fn git_state(repo: &Path) -> (String, String, String, Vec<u8>) {
    (
        git(repo, &["status", "--porcelain", "--untracked-files=all"]),
        git(repo, &["stash", "list"]),
        git(repo, &["for-each-ref"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
    )
}

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The project: a.txt and b.txt, in a repository (committed, with a
    /// stash entry and a staged change) or in a plain folder.
    fn project(&self, in_git: bool) -> PathBuf {
        let p = self.dir.path().join("project");
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("a.txt"), "a\n").unwrap();
        std::fs::write(p.join("b.txt"), "b\n").unwrap();
        if in_git {
            git(&p, &["init", "-q"]);
            std::fs::write(p.join("s.txt"), "s\n").unwrap();
            git(&p, &["add", "-A"]);
            git(&p, &["commit", "-q", "-m", "start"]);
            std::fs::write(p.join("s.txt"), "stashed\n").unwrap();
            git(&p, &["stash", "-q"]);
            std::fs::write(p.join("s.txt"), "staged\n").unwrap();
            git(&p, &["add", "s.txt"]);
        }
        p.canonicalize().unwrap()
    }

    fn config(&self, url: &str) -> Config {
        config(url, self.dir.path())
    }

    fn agent(&self, url: &str, project: &Path) -> Agent {
        Agent::new(self.config(url), project, PermissionSource::Terminal).unwrap()
    }
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn sink() -> Arc<dyn Sink> {
    Recorder::new()
}

fn files(rewind: &Rewind) -> Vec<String> {
    match rewind {
        Rewind::Done { changes, .. } => {
            let mut v: Vec<String> = changes
                .iter()
                .map(|c| format!("{} {:?}", c.path.display(), c.kind))
                .collect();
            v.sort();
            v
        }
        Rewind::Conflicts(c) => panic!("unexpected conflicts {c:?}"),
    }
}

fn assert_turn_undone(project: &Path) {
    assert_eq!(read(&project.join("a.txt")).unwrap(), "a\n");
    assert_eq!(read(&project.join("b.txt")).unwrap(), "b\n");
    assert!(!project.join("c.txt").exists());
}

fn assert_turn_done(project: &Path) {
    assert_eq!(read(&project.join("a.txt")).unwrap(), "a edited\n");
    assert!(!project.join("b.txt").exists());
    assert_eq!(read(&project.join("c.txt")).unwrap(), "x\n");
}

#[tokio::test]
async fn undo_brings_back_edits_and_bash_changes_and_leaves_git_as_it_was() {
    let w = World::new();
    let project = w.project(true);
    let before = git_state(&project);
    let mock = MockServer::start(the_turn()).await.unwrap();
    let mut agent = w.agent(&mock.url(), &project);
    let (report, _) = ask(&mut agent, "edit a, remove b, make c").await;
    assert!(report.ok());
    assert_turn_done(&project);

    let undone = agent.rewind(Direction::Undo, false, &sink()).await.unwrap();
    assert_eq!(
        files(&undone),
        ["a.txt Modified", "b.txt Added", "c.txt Deleted"]
    );
    assert_turn_undone(&project);
    assert_eq!(
        git_state(&project),
        before,
        "status, stash, refs and index as before"
    );
    // The model is told.
    match agent.history().last().unwrap() {
        Message::User { content, .. } => assert_eq!(
            content,
            "[/undo: the user undid the file changes of the turn \"edit a, remove b, make c\"; \
             the files are as they were before it: a.txt restored, b.txt recreated, c.txt removed]"
        ),
        other => panic!("{other:?}"),
    }

    let redone = agent.rewind(Direction::Redo, false, &sink()).await.unwrap();
    assert_eq!(files(&redone).len(), 3);
    assert_turn_done(&project);
    assert_eq!(
        agent
            .rewind(Direction::Redo, false, &sink())
            .await
            .unwrap_err(),
        RewindError::Nothing(Direction::Redo)
    );
    let (_, stash, refs, index) = git_state(&project);
    assert_eq!((stash, refs, index), (before.1, before.2, before.3));
}

#[tokio::test]
async fn outside_git_the_private_store_is_used_and_no_git_folder_appears() {
    let w = World::new();
    let project = w.project(false);
    let mock = MockServer::start(the_turn()).await.unwrap();
    let mut agent = w.agent(&mock.url(), &project);
    assert!(ask(&mut agent, "edit a, remove b, make c").await.0.ok());
    assert_turn_done(&project);
    let undone = agent.rewind(Direction::Undo, false, &sink()).await.unwrap();
    assert_eq!(files(&undone).len(), 3);
    assert_turn_undone(&project);
    assert!(!project.join(".git").exists());
    let stores: Vec<_> = std::fs::read_dir(w.dir.path().join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(stores.len(), 1);
    assert!(stores[0].starts_with("project-"), "{stores:?}");
    agent.rewind(Direction::Redo, false, &sink()).await.unwrap();
    assert_turn_done(&project);
}

#[tokio::test]
async fn a_file_changed_after_the_turn_stops_the_undo_until_forced() {
    let w = World::new();
    let project = w.project(true);
    let mock = MockServer::start(the_turn()).await.unwrap();
    let mut agent = w.agent(&mock.url(), &project);
    assert!(ask(&mut agent, "edit a, remove b, make c").await.0.ok());
    std::fs::write(project.join("a.txt"), "the user's edit\n").unwrap();
    let history = agent.history().len();

    let refused = agent.rewind(Direction::Undo, false, &sink()).await.unwrap();
    assert_eq!(refused, Rewind::Conflicts(vec![PathBuf::from("a.txt")]));
    assert_eq!(read(&project.join("a.txt")).unwrap(), "the user's edit\n");
    assert!(project.join("c.txt").exists(), "nothing was written");
    assert_eq!(agent.history().len(), history, "no history line");

    agent.rewind(Direction::Undo, true, &sink()).await.unwrap();
    assert_turn_undone(&project);
    // The user's edit is kept beside it, and the model is told where.
    assert_eq!(
        read(&project.join("a.txt.mm-undo-1")).unwrap(),
        "the user's edit\n"
    );
    match agent.history().last().unwrap() {
        Message::User { content, .. } => assert!(
            content.contains("a.txt restored (a.txt moved to a.txt.mm-undo-1)"),
            "{content}"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn undo_works_after_continue_in_a_new_process() {
    let w = World::new();
    let project = w.project(true);
    let mock = MockServer::start(the_turn()).await.unwrap();
    {
        let mut agent = w.agent(&mock.url(), &project);
        assert!(ask(&mut agent, "edit a, remove b, make c").await.0.ok());
    }
    let mut later = w.agent(&mock.url(), &project);
    later.resume(None).unwrap();
    later.rewind(Direction::Undo, false, &sink()).await.unwrap();
    assert_turn_undone(&project);

    // And the undo itself is in the session: a third process redoes it.
    drop(later);
    let mut third = w.agent(&mock.url(), &project);
    third.resume(None).unwrap();
    third.rewind(Direction::Redo, false, &sink()).await.unwrap();
    assert_turn_done(&project);
}

#[tokio::test]
async fn turns_that_change_nothing_leave_nothing_to_undo() {
    let w = World::new();
    let project = w.project(true);
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "read_file", r#"{"path":"a.txt"}"#),
        Reply::text("It says a."),
        Reply::tool_call("c2", "bash", r#"{"command":"ls"}"#),
        Reply::text("Two files."),
    ])
    .await
    .unwrap();
    let mut agent = w.agent(&mock.url(), &project);
    assert!(ask(&mut agent, "read a").await.0.ok());
    assert!(ask(&mut agent, "list").await.0.ok());
    assert_eq!(
        agent
            .rewind(Direction::Undo, false, &sink())
            .await
            .unwrap_err(),
        RewindError::Nothing(Direction::Undo)
    );
    assert_eq!(
        RewindError::Nothing(Direction::Undo).to_string(),
        "nothing to undo: no turn of this session changed files"
    );
}

#[tokio::test]
async fn repeated_undo_goes_back_turn_by_turn_and_keep_bounds_it() {
    let w = World::new();
    let project = w.project(true);
    let write = |id: &str, n: u32| {
        Reply::tool_call(
            id,
            "write_file",
            serde_json::json!({"path": "n.txt", "content": format!("{n}\n")}).to_string(),
        )
    };
    let mock = MockServer::start(vec![
        write("c1", 1),
        Reply::text("1"),
        write("c2", 2),
        Reply::text("2"),
        write("c3", 3),
        Reply::text("3"),
    ])
    .await
    .unwrap();
    let mut config = w.config(&mock.url());
    config.checkpoints.keep = 2;
    let mut agent = Agent::new(config, &project, PermissionSource::Terminal).unwrap();
    for q in ["one", "two", "three"] {
        assert!(ask(&mut agent, q).await.0.ok());
    }
    assert_eq!(read(&project.join("n.txt")).unwrap(), "3\n");
    let question = |r: Rewind| match r {
        Rewind::Done { question, .. } => question,
        other => panic!("{other:?}"),
    };
    let s = sink();
    assert_eq!(
        question(agent.rewind(Direction::Undo, false, &s).await.unwrap()),
        "three"
    );
    assert_eq!(read(&project.join("n.txt")).unwrap(), "2\n");
    assert_eq!(
        question(agent.rewind(Direction::Undo, false, &s).await.unwrap()),
        "two"
    );
    assert_eq!(read(&project.join("n.txt")).unwrap(), "1\n");
    // Only two turns are kept.
    assert_eq!(
        agent.rewind(Direction::Undo, false, &s).await.unwrap_err(),
        RewindError::Nothing(Direction::Undo)
    );
    assert_eq!(
        question(agent.rewind(Direction::Redo, false, &s).await.unwrap()),
        "two"
    );
    assert_eq!(read(&project.join("n.txt")).unwrap(), "2\n");
}

#[tokio::test]
async fn a_new_turn_that_changes_files_ends_what_redo_could_bring_back() {
    let w = World::new();
    let project = w.project(true);
    let mut replies = the_turn();
    replies.push(Reply::tool_call(
        "c3",
        "bash",
        r#"{"command":"echo y > d.txt"}"#,
    ));
    replies.push(Reply::text("d."));
    let mock = MockServer::start(replies).await.unwrap();
    let mut agent = w.agent(&mock.url(), &project);
    assert!(ask(&mut agent, "turn one").await.0.ok());
    agent.rewind(Direction::Undo, false, &sink()).await.unwrap();
    assert!(ask(&mut agent, "turn two").await.0.ok());
    assert_eq!(
        agent
            .rewind(Direction::Redo, false, &sink())
            .await
            .unwrap_err(),
        RewindError::Nothing(Direction::Redo)
    );
    match agent.rewind(Direction::Undo, false, &sink()).await.unwrap() {
        Rewind::Done { question, .. } => assert_eq!(question, "turn two"),
        other => panic!("{other:?}"),
    }
    assert!(!project.join("d.txt").exists());
}

#[tokio::test]
async fn diff_shows_what_the_session_changed() {
    let w = World::new();
    let project = w.project(true);
    let mock = MockServer::start(the_turn()).await.unwrap();
    let mut agent = w.agent(&mock.url(), &project);
    assert_eq!(agent.diff().await.unwrap(), "", "nothing yet");
    assert!(ask(&mut agent, "edit a, remove b, make c").await.0.ok());
    let diff = agent.diff().await.unwrap();
    assert!(diff.contains("--- a/a.txt\n+++ b/a.txt\n"), "{diff}");
    assert!(diff.contains("-a\n+a edited\n"), "{diff}");
    assert!(diff.contains("--- a/b.txt\n+++ /dev/null\n"), "{diff}");
    assert!(diff.contains("+++ b/c.txt\n@@ -0,0 +1 @@\n+x\n"), "{diff}");
}

#[tokio::test]
async fn checkpoints_false_takes_none() {
    let w = World::new();
    let project = w.project(false);
    let mock = MockServer::start(the_turn()).await.unwrap();
    let mut config = w.config(&mock.url());
    config.checkpoints.enabled = false;
    let mut agent = Agent::new(config, &project, PermissionSource::Terminal).unwrap();
    assert!(ask(&mut agent, "edit a, remove b, make c").await.0.ok());
    assert_eq!(
        agent
            .rewind(Direction::Undo, false, &sink())
            .await
            .unwrap_err(),
        RewindError::Off
    );
    assert!(!w.dir.path().join("checkpoints").exists());
}

#[tokio::test]
async fn where_checkpoints_cannot_work_the_user_is_told_once() {
    let w = World::new();
    let project = w.project(true);
    let mock = MockServer::start(vec![
        Reply::tool_call("c1", "bash", r#"{"command":"echo 1 > x"}"#),
        Reply::text("1"),
        Reply::tool_call("c2", "bash", r#"{"command":"echo 2 > x"}"#),
        Reply::text("2"),
    ])
    .await
    .unwrap();
    // The session's root is inside the repository's .git folder.
    let inside = project.join(".git");
    let mut agent = w.agent(&mock.url(), &inside);
    let (_, first) = ask(&mut agent, "one").await;
    let (_, second) = ask(&mut agent, "two").await;
    let notices = first.notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("checkpoints are off here: "),
        "{notices:?}"
    );
    assert!(second.notices().is_empty());
    let err = agent
        .rewind(Direction::Undo, false, &sink())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("inside a git directory"), "{err}");
}
