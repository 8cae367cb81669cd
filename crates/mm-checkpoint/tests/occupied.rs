//! A restore never destroys what the user put in a path after the turn:
//! a folder where the turn removed a file, a file where it removed a
//! folder, an ignored file the checkpoints cannot see. Without `force` they
//! are conflicts and nothing is written; with `force` they are moved aside
//! as `<name>.mm-undo-<n>`, never deleted. In a repository and outside git.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{GitState, World, bash, read, write};
use mm_checkpoint::Restore;

/// A repository (committed) or a plain folder holding `files`.
fn project(w: &World, in_git: bool, files: &[(&str, &str)]) -> PathBuf {
    if in_git {
        return w.repo("project", files);
    }
    let dir = w.path("project");
    std::fs::create_dir_all(&dir).unwrap();
    for (f, content) in files {
        write(&dir.join(f), content);
    }
    dir
}

fn conflicts(r: Restore) -> Vec<String> {
    match r {
        Restore::Conflicts(c) => c.iter().map(|p| p.display().to_string()).collect(),
        other => panic!("expected conflicts, got {other:?}"),
    }
}

/// Each change as `path kind`, and what was moved aside for it.
fn done(r: Restore) -> (Vec<String>, Vec<String>) {
    match r {
        Restore::Done(changes) => {
            let names = changes
                .iter()
                .map(|c| format!("{} {:?}", c.path.display(), c.kind))
                .collect();
            let kept = changes
                .iter()
                .flat_map(|c| &c.kept)
                .map(|k| format!("{} -> {}", k.path.display(), k.backup.display()))
                .collect();
            (names, kept)
        }
        Restore::Conflicts(c) => panic!("unexpected conflicts: {c:?}"),
    }
}

/// The turn ran `rm notes`; the user then made a folder `notes/` with a
/// file and an ignored one.
fn a_folder_where_the_turn_removed_a_file(in_git: bool) {
    let w = World::new();
    let dir = project(
        &w,
        in_git,
        &[
            ("notes", "the turn removes me\n"),
            (".gitignore", "*.log\n"),
        ],
    );
    let cps = w.open(&dir);
    let before = cps.record().unwrap().checkpoint;
    bash(&dir, "rm notes");
    let after = cps.record().unwrap().checkpoint;
    bash(
        &dir,
        "mkdir notes && echo mine > notes/todo.txt && echo ignored > notes/run.log",
    );
    let git_before = in_git.then(|| GitState::of(&dir));

    assert_eq!(
        conflicts(cps.restore(&before, &after, false).unwrap()),
        ["notes/"]
    );
    assert_eq!(read(&dir.join("notes/todo.txt")).unwrap(), "mine\n");
    assert_eq!(read(&dir.join("notes/run.log")).unwrap(), "ignored\n");

    let (changes, kept) = done(cps.restore(&before, &after, true).unwrap());
    assert_eq!(changes, ["notes Added"]);
    assert_eq!(kept, ["notes/ -> notes.mm-undo-1/"]);
    assert_eq!(read(&dir.join("notes")).unwrap(), "the turn removes me\n");
    assert_eq!(
        read(&dir.join("notes.mm-undo-1/todo.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        read(&dir.join("notes.mm-undo-1/run.log")).unwrap(),
        "ignored\n"
    );
    if let Some(state) = git_before {
        let mut now = GitState::of(&dir);
        now.status = state.status.clone();
        assert_eq!(now, state, "index, HEAD, refs, stash and config untouched");
    }
}

#[test]
fn in_a_repository_a_folder_made_after_the_turn_is_never_removed() {
    a_folder_where_the_turn_removed_a_file(true);
}

#[test]
fn outside_git_a_folder_made_after_the_turn_is_never_removed() {
    a_folder_where_the_turn_removed_a_file(false);
}

/// The turn removed folder `d`; the user then made a file `d`.
fn a_file_where_the_turn_removed_a_folder(in_git: bool) {
    let w = World::new();
    let dir = project(&w, in_git, &[("d/x", "x\n"), ("d/deep/y", "y\n")]);
    let cps = w.open(&dir);
    let before = cps.record().unwrap().checkpoint;
    bash(&dir, "rm -r d");
    let after = cps.record().unwrap().checkpoint;
    write(&dir.join("d"), "the user's file\n");

    assert_eq!(
        conflicts(cps.restore(&before, &after, false).unwrap()),
        ["d"]
    );
    assert_eq!(read(&dir.join("d")).unwrap(), "the user's file\n");

    let (mut changes, kept) = done(cps.restore(&before, &after, true).unwrap());
    changes.sort();
    assert_eq!(changes, ["d/deep/y Added", "d/x Added"]);
    assert_eq!(kept, ["d -> d.mm-undo-1"]);
    assert_eq!(read(&dir.join("d/x")).unwrap(), "x\n");
    assert_eq!(read(&dir.join("d/deep/y")).unwrap(), "y\n");
    assert_eq!(read(&dir.join("d.mm-undo-1")).unwrap(), "the user's file\n");
}

#[test]
fn in_a_repository_a_file_made_where_the_turn_removed_a_folder_is_kept() {
    a_file_where_the_turn_removed_a_folder(true);
}

#[test]
fn outside_git_a_file_made_where_the_turn_removed_a_folder_is_kept() {
    a_file_where_the_turn_removed_a_folder(false);
}

/// A file the checkpoints cannot see (ignored since the turn) stands where
/// a file must come back.
#[test]
fn an_ignored_file_in_the_way_is_a_conflict_too() {
    for in_git in [true, false] {
        let w = World::new();
        let dir = project(&w, in_git, &[("out.txt", "made before\n")]);
        let cps = w.open(&dir);
        let before = cps.record().unwrap().checkpoint;
        bash(&dir, "rm out.txt; echo out.txt > .gitignore");
        if in_git {
            common::git(&dir, &["rm", "-q", "--cached", "out.txt"]);
        }
        let after = cps.record().unwrap().checkpoint;
        write(&dir.join("out.txt"), "the user's, ignored\n");
        assert_eq!(
            conflicts(cps.restore(&before, &after, false).unwrap()),
            ["out.txt"],
            "in git: {in_git}"
        );
        assert_eq!(read(&dir.join("out.txt")).unwrap(), "the user's, ignored\n");
        assert!(dir.join(".gitignore").exists(), "nothing written");
    }
}

/// A forced restore over a file edited after the turn keeps the edit too.
#[test]
fn force_keeps_an_edited_file_beside_it_and_counts_past_taken_names() {
    let w = World::new();
    let dir = project(&w, true, &[("a.txt", "a\n"), ("c.txt", "c\n")]);
    write(&dir.join("a.txt.mm-undo-1"), "an older backup\n");
    let cps = w.open(&dir);
    let before = cps.record().unwrap().checkpoint;
    bash(&dir, "echo turn > a.txt; rm c.txt; echo new > n.txt");
    let after = cps.record().unwrap().checkpoint;
    write(&dir.join("a.txt"), "the user's edit\n");
    write(&dir.join("n.txt"), "the user's edit of the new file\n");
    let mut c = conflicts(cps.restore(&before, &after, false).unwrap());
    c.sort();
    assert_eq!(c, ["a.txt", "n.txt"]);

    let (mut changes, mut kept) = done(cps.restore(&before, &after, true).unwrap());
    changes.sort();
    kept.sort();
    assert_eq!(changes, ["a.txt Modified", "c.txt Added", "n.txt Deleted"]);
    assert_eq!(
        kept,
        ["a.txt -> a.txt.mm-undo-2", "n.txt -> n.txt.mm-undo-1"]
    );
    assert_eq!(read(&dir.join("a.txt")).unwrap(), "a\n");
    assert_eq!(
        read(&dir.join("a.txt.mm-undo-1")).unwrap(),
        "an older backup\n"
    );
    assert_eq!(
        read(&dir.join("a.txt.mm-undo-2")).unwrap(),
        "the user's edit\n"
    );
    assert!(!dir.join("n.txt").exists());
    assert_eq!(
        read(&dir.join("n.txt.mm-undo-1")).unwrap(),
        "the user's edit of the new file\n"
    );
}

/// What the turn itself put in the way goes without a conflict: its file
/// where a folder must come back, its folder (holding only its own files)
/// where a file must come back, and an empty folder.
#[test]
fn what_the_turn_itself_put_in_the_way_is_no_conflict() {
    for in_git in [true, false] {
        let w = World::new();
        let dir = project(
            &w,
            in_git,
            &[("was_file", "f\n"), ("dir/child", "c\n"), ("e", "e\n")],
        );
        let cps = w.open(&dir);
        let before = cps.record().unwrap().checkpoint;
        bash(
            &dir,
            "rm was_file && mkdir -p was_file/sub && echo t > was_file/sub/t
             rm -r dir && echo file > dir
             rm e && mkdir -p e/empty",
        );
        let after = cps.record().unwrap().checkpoint;
        let (mut changes, kept) = done(cps.restore(&before, &after, false).unwrap());
        changes.sort();
        assert_eq!(
            changes,
            [
                "dir Deleted",
                "dir/child Added",
                "e Added",
                "was_file Added",
                "was_file/sub/t Deleted"
            ],
            "in git: {in_git}"
        );
        assert!(kept.is_empty(), "{kept:?}");
        assert_eq!(read(&dir.join("was_file")).unwrap(), "f\n");
        assert_eq!(read(&dir.join("dir/child")).unwrap(), "c\n");
        assert_eq!(read(&dir.join("e")).unwrap(), "e\n");
    }
}

/// A symbolic link to a folder elsewhere, made where the turn removed a
/// folder: nothing is written through it.
#[test]
fn nothing_is_written_through_a_link_the_user_put_in_the_way() {
    let w = World::new();
    let dir = project(&w, true, &[("d/x", "x\n")]);
    let elsewhere = w.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let cps = w.open(&dir);
    let before = cps.record().unwrap().checkpoint;
    bash(&dir, "rm -r d");
    let after = cps.record().unwrap().checkpoint;
    std::os::unix::fs::symlink(&elsewhere, dir.join("d")).unwrap();
    assert_eq!(
        conflicts(cps.restore(&before, &after, false).unwrap()),
        ["d"]
    );
    let (_, kept) = done(cps.restore(&before, &after, true).unwrap());
    assert_eq!(kept, ["d -> d.mm-undo-1"]);
    assert_eq!(read(&dir.join("d/x")).unwrap(), "x\n");
    assert!(!elsewhere.join("x").exists(), "nothing written elsewhere");
    assert_eq!(
        std::fs::read_link(dir.join("d.mm-undo-1")).unwrap(),
        elsewhere
    );
}

/// The turn made a folder where a file was, and the user edited a file in
/// it: a forced undo moves the whole folder aside, the edit in it.
#[test]
fn force_moves_a_folder_of_the_turn_holding_a_users_edit_aside_whole() {
    for in_git in [true, false] {
        let w = World::new();
        let dir = project(&w, in_git, &[("notes", "old notes\n")]);
        let cps = w.open(&dir);
        let before = cps.record().unwrap().checkpoint;
        bash(&dir, "rm notes && mkdir notes && echo turn > notes/x");
        let after = cps.record().unwrap().checkpoint;
        write(&dir.join("notes/x"), "the user's edit\n");
        assert_eq!(
            conflicts(cps.restore(&before, &after, false).unwrap()),
            ["notes/", "notes/x"],
            "in git: {in_git}"
        );
        let (mut changes, kept) = done(cps.restore(&before, &after, true).unwrap());
        changes.sort();
        assert_eq!(changes, ["notes Added", "notes/x Deleted"]);
        assert_eq!(kept, ["notes/ -> notes.mm-undo-1/"]);
        assert_eq!(read(&dir.join("notes")).unwrap(), "old notes\n");
        assert_eq!(
            read(&dir.join("notes.mm-undo-1/x")).unwrap(),
            "the user's edit\n"
        );
    }
}
