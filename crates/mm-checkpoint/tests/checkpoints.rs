//! Checkpoints through the real git: a turn's changes (made by bash as well
//! as by direct writes) undone and redone, in a repository and outside one,
//! with the user's git state left exactly as it was.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{GitState, World, bash, git, read, write};
use mm_checkpoint::{ChangeKind, CheckpointError, Checkpoints, Location, Options, Restore};

fn done(r: Restore) -> Vec<(PathBuf, ChangeKind)> {
    match r {
        Restore::Done(changes) => {
            let mut v: Vec<_> = changes.into_iter().map(|c| (c.path, c.kind)).collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        }
        Restore::Conflicts(c) => panic!("unexpected conflicts: {c:?}"),
    }
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

/// A turn that changes files both ways: an edit, then
/// `rm b.txt; echo x > c.txt` in bash.
fn the_turn(dir: &Path) {
    write(&dir.join("a.txt"), "a edited by the turn\n");
    bash(dir, "rm b.txt; echo x > c.txt");
}

#[test]
fn undo_in_a_repository_leaves_the_users_git_state_exactly_as_it_was() {
    let w = World::new();
    let repo = w.repo(
        "repo",
        &[
            ("a.txt", "a\n"),
            ("b.txt", "b\n"),
            ("s.txt", "s\n"),
            (".gitignore", "*.log\n"),
        ],
    );
    // A user mid-work: a stash, a staged change, an unstaged one, an
    // untracked file and an ignored one.
    write(&repo.join("s.txt"), "stashed\n");
    git(&repo, &["stash", "-q"]);
    write(&repo.join("a.txt"), "a staged\n");
    git(&repo, &["add", "a.txt"]);
    write(&repo.join("a.txt"), "a staged then edited\n");
    write(&repo.join("notes.md"), "untracked\n");
    write(&repo.join("build.log"), "ignored\n");
    let before_state = GitState::of(&repo);

    let cps = w.open(&repo);
    assert_eq!(
        cps.location(),
        &Location::Repository {
            top: repo.canonicalize().unwrap()
        }
    );
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    write(&repo.join("build.log"), "ignored, changed by the turn\n");
    let after = cps.record().unwrap().checkpoint;

    let mut changed: Vec<_> = cps
        .changes(&before, &after)
        .unwrap()
        .into_iter()
        .map(|c| (c.path, c.kind))
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        [
            (p("a.txt"), ChangeKind::Modified),
            (p("b.txt"), ChangeKind::Deleted),
            (p("c.txt"), ChangeKind::Added),
        ],
        "ignored files are not recorded"
    );

    let undone = done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(
        undone,
        [
            (p("a.txt"), ChangeKind::Modified),
            (p("b.txt"), ChangeKind::Added),
            (p("c.txt"), ChangeKind::Deleted),
        ]
    );
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "a staged then edited\n");
    assert_eq!(read(&repo.join("b.txt")).unwrap(), "b\n");
    assert!(!repo.join("c.txt").exists());
    assert_eq!(read(&repo.join("notes.md")).unwrap(), "untracked\n");
    assert_eq!(GitState::of(&repo), before_state);

    // Redo: the turn's state again, and still nothing of git's changed.
    let redone = done(cps.restore(&after, &before, false).unwrap());
    assert_eq!(redone.len(), 3);
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "a edited by the turn\n");
    assert!(!repo.join("b.txt").exists());
    assert_eq!(read(&repo.join("c.txt")).unwrap(), "x\n");
    let mut redone_state = before_state;
    redone_state.status = GitState::of(&repo).status;
    assert_eq!(GitState::of(&repo), redone_state);
    assert_eq!(
        git(&repo, &["for-each-ref"]).lines().count(),
        2,
        "main and the stash only"
    );
}

#[test]
fn outside_git_a_private_store_holds_the_checkpoints() {
    let w = World::new();
    let dir = w.path("plain");
    write(&dir.join("a.txt"), "a\n");
    write(&dir.join("b.txt"), "b\n");
    write(&dir.join("deep/er/keep.txt"), "k\n");
    let cps = w.open(&dir);
    match cps.location() {
        Location::Private { store } => assert_eq!(store, &w.store().canonicalize().unwrap()),
        other => panic!("expected the private store, got {other:?}"),
    }
    let mode = std::fs::metadata(w.store()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);

    let before = cps.record().unwrap().checkpoint;
    the_turn(&dir);
    bash(&dir, "mkdir -p new/folder && echo n > new/folder/n.txt");
    let after = cps.record().unwrap().checkpoint;
    let undone = done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(undone.len(), 4);
    assert_eq!(read(&dir.join("a.txt")).unwrap(), "a\n");
    assert_eq!(read(&dir.join("b.txt")).unwrap(), "b\n");
    assert!(!dir.join("c.txt").exists());
    assert!(!dir.join("new").exists(), "folders left empty are removed");
    assert!(dir.join("deep/er/keep.txt").exists());
    assert!(!dir.join(".git").exists(), "no .git in the user's folder");

    done(cps.restore(&after, &before, false).unwrap());
    assert_eq!(read(&dir.join("a.txt")).unwrap(), "a edited by the turn\n");
    assert_eq!(read(&dir.join("new/folder/n.txt")).unwrap(), "n\n");
    assert!(!dir.join("b.txt").exists());

    // The store reopens (a later process) and still knows both states.
    let again = w.open(&dir);
    assert_eq!(again.changes(&before, &after).unwrap().len(), 4);
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !entries.iter().any(|e| e.starts_with(".git")),
        "{entries:?}"
    );
}

#[test]
fn a_file_changed_after_the_turn_is_not_overwritten_without_force() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    let after = cps.record().unwrap().checkpoint;
    // The user edits a file of the turn afterwards, and one the turn did
    // not touch (that one is never a conflict).
    write(&repo.join("a.txt"), "the user's own edit\n");
    write(&repo.join("other.txt"), "the user's new file\n");

    match cps.restore(&before, &after, false).unwrap() {
        Restore::Conflicts(c) => assert_eq!(c, [p("a.txt")]),
        other => panic!("expected a conflict, got {other:?}"),
    }
    // Nothing was written.
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "the user's own edit\n");
    assert!(!repo.join("b.txt").exists());
    assert!(repo.join("c.txt").exists());

    let forced = done(cps.restore(&before, &after, true).unwrap());
    assert_eq!(forced.len(), 3);
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "a\n");
    assert_eq!(
        read(&repo.join("a.txt.mm-undo-1")).unwrap(),
        "the user's own edit\n",
        "what force replaced is kept beside it"
    );
    assert_eq!(read(&repo.join("b.txt")).unwrap(), "b\n");
    assert!(!repo.join("c.txt").exists());
    assert_eq!(
        read(&repo.join("other.txt")).unwrap(),
        "the user's new file\n"
    );
}

#[test]
fn a_file_already_back_in_place_is_no_conflict() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    let after = cps.record().unwrap().checkpoint;
    write(&repo.join("a.txt"), "a\n");
    let undone = done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(
        undone,
        [
            (p("b.txt"), ChangeKind::Added),
            (p("c.txt"), ChangeKind::Deleted)
        ]
    );
    assert_eq!(done(cps.restore(&before, &after, false).unwrap()), []);
}

#[test]
fn repeated_undo_goes_further_back_and_each_turn_is_checked_on_its_own() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "1\n")]);
    let cps = w.open(&repo);
    let b1 = cps.record().unwrap().checkpoint;
    write(&repo.join("a.txt"), "2\n");
    let a1 = cps.record().unwrap().checkpoint;
    let b2 = cps.record().unwrap().checkpoint;
    assert_eq!(a1, b2, "an unchanged tree gives the same checkpoint");
    write(&repo.join("a.txt"), "3\n");
    write(&repo.join("t2.txt"), "turn 2\n");
    let a2 = cps.record().unwrap().checkpoint;

    done(cps.restore(&b2, &a2, false).unwrap());
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "2\n");
    assert!(!repo.join("t2.txt").exists());
    done(cps.restore(&b1, &a1, false).unwrap());
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "1\n");
    done(cps.restore(&a1, &b1, false).unwrap());
    done(cps.restore(&a2, &b2, false).unwrap());
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "3\n");
    assert_eq!(read(&repo.join("t2.txt")).unwrap(), "turn 2\n");
}

#[test]
fn a_folder_inside_the_repository_records_the_whole_tree_and_names_paths_from_the_folder() {
    let w = World::new();
    let repo = w.repo("repo", &[("top.txt", "top\n"), ("app/src/x.rs", "x\n")]);
    let folder = repo.join("app");
    let cps = w.open(&folder);
    let before = cps.record().unwrap().checkpoint;
    bash(
        &folder,
        "echo y >> src/x.rs; echo changed > ../top.txt; echo n > new.txt",
    );
    let after = cps.record().unwrap().checkpoint;
    let mut changed: Vec<_> = cps
        .changes(&before, &after)
        .unwrap()
        .into_iter()
        .map(|c| c.path)
        .collect();
    changed.sort();
    assert_eq!(changed, [p("../top.txt"), p("new.txt"), p("src/x.rs")]);
    done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(read(&repo.join("top.txt")).unwrap(), "top\n");
    assert_eq!(read(&folder.join("src/x.rs")).unwrap(), "x\n");
    assert!(!folder.join("new.txt").exists());
    assert!(folder.is_dir());
}

#[test]
fn the_folder_itself_is_never_removed() {
    let w = World::new();
    let repo = w.repo("repo", &[("keep.txt", "k\n")]);
    let folder = repo.join("empty/sub");
    std::fs::create_dir_all(&folder).unwrap();
    let cps = w.open(&folder);
    let before = cps.record().unwrap().checkpoint;
    write(&folder.join("only.txt"), "o\n");
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    assert!(!folder.join("only.txt").exists());
    assert!(folder.is_dir(), "the session's folder stays");
}

#[test]
fn odd_names_links_modes_and_type_changes_come_back() {
    let w = World::new();
    let repo = w.repo(
        "repo",
        &[
            ("with space.txt", "s\n"),
            ("line\nbreak.txt", "n\n"),
            ("script.sh", "echo hi\n"),
            ("was_file", "f\n"),
            ("dir/was_dir_child", "c\n"),
        ],
    );
    std::os::unix::fs::symlink("with space.txt", repo.join("link")).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(repo.join(odd), "latin-1 name\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "more"]);
    let before_state = GitState::of(&repo);

    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    bash(
        &repo,
        "set -e
         echo changed > 'with space.txt'
         rm \"$(printf 'line\\nbreak.txt')\"
         chmod +x script.sh
         rm link && ln -s script.sh link
         rm was_file && mkdir was_file && echo inside > was_file/child
         rm -r dir && echo now-a-file > dir
         rm caf*.txt",
    );
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());

    assert_eq!(read(&repo.join("with space.txt")).unwrap(), "s\n");
    assert_eq!(read(&repo.join("line\nbreak.txt")).unwrap(), "n\n");
    let mode = std::fs::metadata(repo.join("script.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0, "the executable bit the turn set is gone");
    assert_eq!(
        std::fs::read_link(repo.join("link")).unwrap(),
        p("with space.txt")
    );
    assert_eq!(read(&repo.join("was_file")).unwrap(), "f\n");
    assert_eq!(read(&repo.join("dir/was_dir_child")).unwrap(), "c\n");
    assert_eq!(std::fs::read(repo.join(odd)).unwrap(), b"latin-1 name\n");
    assert_eq!(GitState::of(&repo), before_state);

    // And forward again.
    done(cps.restore(&after, &before, false).unwrap());
    let mode = std::fs::metadata(repo.join("script.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_ne!(mode & 0o100, 0);
    assert_eq!(
        std::fs::read_link(repo.join("link")).unwrap(),
        p("script.sh")
    );
    assert_eq!(read(&repo.join("was_file/child")).unwrap(), "inside\n");
    assert_eq!(read(&repo.join("dir")).unwrap(), "now-a-file\n");
}

use std::os::unix::ffi::OsStrExt;

#[test]
fn a_repository_with_no_commit_and_no_index_yet() {
    let w = World::new();
    let repo = w.repo("fresh", &[]);
    write(&repo.join("a.txt"), "a\n");
    write(&repo.join("b.txt"), "b\n");
    let before_state = GitState::of(&repo);
    assert_eq!(before_state.index, None);
    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "a\n");
    assert_eq!(read(&repo.join("b.txt")).unwrap(), "b\n");
    assert!(!repo.join("c.txt").exists());
    assert_eq!(GitState::of(&repo), before_state, "still no index, no ref");
}

#[test]
fn a_merge_in_progress_can_be_checkpointed() {
    let w = World::new();
    let repo = w.repo("repo", &[("f", "base\n")]);
    git(&repo, &["checkout", "-q", "-b", "other"]);
    write(&repo.join("f"), "other\n");
    git(&repo, &["commit", "-q", "-am", "other"]);
    git(&repo, &["checkout", "-q", "main"]);
    write(&repo.join("f"), "main\n");
    git(&repo, &["commit", "-q", "-am", "main"]);
    let merge = common::git_cmd(&repo, &["merge", "-q", "other"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge conflicts");
    let before_state = GitState::of(&repo);
    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    write(&repo.join("f"), "resolved by the turn\n");
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    assert!(read(&repo.join("f")).unwrap().contains("<<<<<<<"));
    assert_eq!(GitState::of(&repo), before_state);
}

#[test]
fn submodules_and_nested_repositories_are_left_alone() {
    let w = World::new();
    let lib = w.repo("lib", &[("lib.txt", "lib v1\n")]);
    let repo = w.repo("repo", &[("a.txt", "a\n")]);
    git(
        &repo,
        &["submodule", "add", "-q", lib.to_str().unwrap(), "sub"],
    );
    git(&repo, &["commit", "-q", "-m", "submodule"]);
    let nested = w.repo("repo/nested", &[("n.txt", "nested\n")]);
    let before_state = GitState::of(&repo);

    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    write(&repo.join("sub/lib.txt"), "lib v2\n");
    git(&repo.join("sub"), &["commit", "-q", "-am", "v2"]);
    write(&nested.join("n.txt"), "nested, changed\n");
    write(&repo.join("a.txt"), "a changed\n");
    let after = cps.record().unwrap().checkpoint;
    let changed: Vec<_> = cps
        .changes(&before, &after)
        .unwrap()
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(changed, [p("a.txt")]);
    done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(read(&repo.join("a.txt")).unwrap(), "a\n");
    assert_eq!(read(&repo.join("sub/lib.txt")).unwrap(), "lib v2\n");
    assert_eq!(read(&nested.join("n.txt")).unwrap(), "nested, changed\n");
    let mut state = GitState::of(&repo);
    state.status = before_state.status.clone();
    assert_eq!(state, before_state, "only the submodule's own commit moved");
}

#[test]
fn files_over_the_size_limit_and_special_files_are_left_out() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n")]);
    let options = Options {
        max_file_size: 1000,
        ..w.options()
    };
    let cps = Checkpoints::open(&repo, &w.store(), options).unwrap();
    let before = cps.record().unwrap().checkpoint;
    write(&repo.join("big.bin"), &"x".repeat(2000));
    write(&repo.join("small.txt"), "s\n");
    let fifo = repo.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let recorded = cps.record().unwrap();
    assert_eq!(
        recorded.skipped,
        [p("big.bin")],
        "git itself passes the FIFO by"
    );
    let undone = done(cps.restore(&before, &recorded.checkpoint, false).unwrap());
    assert_eq!(undone, [(p("small.txt"), ChangeKind::Deleted)]);
    assert_eq!(std::fs::metadata(repo.join("big.bin")).unwrap().len(), 2000);
    assert!(fifo.exists());
}

#[test]
fn git_variables_in_mms_environment_cannot_redirect_it() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let decoy = w.repo("decoy", &[("d.txt", "d\n")]);
    let decoy_state = GitState::of(&decoy);
    let count = |r: &Path| git(r, &["count-objects"]);
    let decoy_objects = count(&decoy);
    let stray_index = w.path("stray-index");
    let mut env = w.env();
    for (k, v) in [
        ("GIT_DIR", decoy.join(".git")),
        ("GIT_WORK_TREE", decoy.clone()),
        ("GIT_INDEX_FILE", stray_index.clone()),
        ("GIT_OBJECT_DIRECTORY", decoy.join(".git/objects")),
        ("GIT_CONFIG_GLOBAL", decoy.join(".git/config")),
    ] {
        env.push((k.into(), v.into()));
    }
    env.push(("GIT_CONFIG_COUNT".into(), "1".into()));
    env.push(("GIT_CONFIG_KEY_0".into(), "core.hooksPath".into()));
    env.push(("GIT_CONFIG_VALUE_0".into(), decoy.join("hooks").into()));
    let options = Options {
        env: Some(env),
        ..Options::default()
    };
    let cps = Checkpoints::open(&repo, &w.store(), options).unwrap();
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(read(&repo.join("b.txt")).unwrap(), "b\n");
    assert!(!stray_index.exists());
    assert_eq!(GitState::of(&decoy), decoy_state);
    assert_eq!(count(&decoy), decoy_objects);
}

#[test]
fn no_hook_and_no_filesystem_monitor_of_the_user_runs() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let marker = w.path("ran");
    let script = format!("#!/bin/sh\necho \"$0\" >> '{}'\n", marker.display());
    for hook in [
        "post-index-change",
        "post-checkout",
        "pre-commit",
        "reference-transaction",
    ] {
        let path = repo.join(".git/hooks").join(hook);
        std::fs::write(&path, &script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let monitor = w.path("monitor.sh");
    std::fs::write(&monitor, &script).unwrap();
    std::fs::set_permissions(&monitor, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(
        &repo,
        &["config", "core.fsmonitor", monitor.to_str().unwrap()],
    );
    // The hook does run for git's own use of the index: the test can see it.
    git(&repo, &["update-index", "--refresh"]);
    assert!(marker.exists(), "the test's hook works");
    std::fs::remove_file(&marker).unwrap();

    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    cps.diff(&before, &after).unwrap();
    assert_eq!(read(&marker), None, "no program of the user's ran");
}

#[test]
fn the_diff_is_a_unified_diff_without_the_users_diff_programs() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "one\ntwo\n"), ("b.txt", "b\n")]);
    git(&repo, &["config", "diff.external", "false"]);
    git(&repo, &["config", "diff.noprefix", "true"]);
    git(&repo, &["config", "color.diff", "always"]);
    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    the_turn(&repo);
    let after = cps.record().unwrap().checkpoint;
    let diff = cps.diff(&before, &after).unwrap();
    assert!(diff.contains("--- a/a.txt\n+++ b/a.txt\n"), "{diff}");
    assert!(
        diff.contains("-one\n-two\n+a edited by the turn\n"),
        "{diff}"
    );
    assert!(diff.contains("+++ /dev/null"), "{diff}");
    assert!(diff.contains("--- /dev/null\n+++ b/c.txt\n"), "{diff}");
    assert!(!diff.contains('\x1b'), "no colour codes");
}

#[test]
fn places_without_checkpoints_say_why() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n")]);
    let err = Checkpoints::open(&repo.join(".git"), &w.store(), w.options()).unwrap_err();
    assert!(matches!(err, CheckpointError::InsideGitDir(_)), "{err}");
    let home = w.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let err = Checkpoints::open(&home, &w.store(), w.options()).unwrap_err();
    assert!(matches!(err, CheckpointError::TooBroad(_)), "{err}");
    assert!(err.to_string().contains("home directory"), "{err}");
    assert!(!w.store().exists(), "no store made for a refused folder");
    let err = Checkpoints::open(&w.path("missing"), &w.store(), w.options()).unwrap_err();
    assert!(matches!(err, CheckpointError::Io { .. }), "{err}");
    let no_git = Options {
        env: Some(vec![("PATH".into(), w.path("empty-bin").into())]),
        ..Options::default()
    };
    let err = Checkpoints::open(&repo, &w.store(), no_git).unwrap_err();
    assert!(matches!(err, CheckpointError::NoGit), "{err}");
}

#[test]
fn pruning_the_private_store_keeps_the_sessions_checkpoints() {
    let w = World::new();
    let dir = w.path("plain");
    write(&dir.join("f.txt"), "1\n");
    let cps = w.open(&dir);
    let c1 = cps.record().unwrap().checkpoint;
    write(&dir.join("f.txt"), "2 only in a dropped checkpoint\n");
    let c2 = cps.record().unwrap().checkpoint;
    write(&dir.join("f.txt"), "3\n");
    let c3 = cps.record().unwrap().checkpoint;
    // Age every object past the expiry.
    let three_weeks = std::time::SystemTime::now() - std::time::Duration::from_secs(21 * 86400);
    age_files(&w.store().join("objects"), three_weeks);
    let exists = |c: &mm_checkpoint::Checkpoint| {
        common::git_cmd(
            &dir,
            &[
                "--git-dir",
                w.store().to_str().unwrap(),
                "cat-file",
                "-e",
                c.as_str(),
            ],
        )
        .status()
        .unwrap()
        .success()
    };
    assert!(exists(&c2));
    assert!(cps.prune(&[c1.clone(), c3.clone()]).unwrap());
    assert!(exists(&c1) && exists(&c3));
    assert!(!exists(&c2), "a checkpoint no session keeps is gone");
    assert_eq!(cps.changes(&c1, &c3).unwrap().len(), 1);
    assert!(!cps.prune(&[c3]).unwrap(), "at most once a day");

    // In a repository pruning is git's own business.
    let repo = w.repo("repo", &[("a.txt", "a\n")]);
    assert!(!w.open(&repo).prune(&[]).unwrap());
}

fn age_files(dir: &Path, when: std::time::SystemTime) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            age_files(&path, when);
        } else {
            let f = std::fs::File::open(&path);
            if let Ok(f) = f {
                f.set_modified(when).unwrap();
            }
        }
    }
}

/// "Racy git": an edit made in the same second as the user's last
/// `git add`, keeping the size, is seen only because git compares the file
/// with the index's own modification time. A copy of the index that looked
/// newer would hide it.
#[test]
fn an_edit_in_the_same_second_as_the_users_last_add_is_recorded() {
    use std::os::unix::fs::MetadataExt;
    let w = World::new();
    let repo = w.repo("repo", &[("other.txt", "o\n")]);
    let file = repo.join("a.txt");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    let set_mtime = |path: &Path| {
        std::fs::File::open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    let mut same_ctime = false;
    for _ in 0..5 {
        write(&file, "1\n");
        set_mtime(&file);
        git(&repo, &["add", "a.txt"]);
        let c1 = std::fs::metadata(&file).unwrap().ctime();
        write(&file, "2\n");
        set_mtime(&file);
        if std::fs::metadata(&file).unwrap().ctime() == c1 {
            same_ctime = true;
            break;
        }
    }
    assert!(same_ctime, "could not make the edit within one second");
    set_mtime(&repo.join(".git/index"));
    // Git itself sees the edit (the index is no newer than the file).
    assert_eq!(git(&repo, &["status", "--porcelain"]), "AM a.txt\n");
    // And so does a checkpoint taken a while later.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    write(&file, "3\n");
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(read(&file).unwrap(), "2\n");
}

/// A stopped recording ends in `Stopped` without starting git, and the
/// same checkpoints record as before once the stop is not theirs.
#[test]
fn a_stopped_recording_ends_at_once_and_the_next_one_works() {
    let w = World::new();
    let dir = w.path("plain");
    write(&dir.join("a.txt"), "a\n");
    let cps = w.open(&dir);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let stopped = cps.stopped_by(stop).record();
    assert!(
        matches!(stopped, Err(CheckpointError::Stopped)),
        "{stopped:?}"
    );
    let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    assert!(cps.stopped_by(running).record().is_ok());
    assert!(cps.record().is_ok());
}
