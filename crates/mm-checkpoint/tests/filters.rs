//! No program named in the configuration runs while a checkpoint is
//! recorded or restored: a clean, smudge or process filter (`.gitattributes`
//! plus `filter.<driver>.*`) never starts, in a repository or outside git,
//! and the files come back byte for byte all the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{World, bash, git, read, write};
use mm_checkpoint::{Checkpoints, Options, Restore};

fn done(r: Restore) -> Vec<String> {
    match r {
        Restore::Done(changes) => {
            let mut v: Vec<String> = changes
                .iter()
                .map(|c| format!("{} {:?}", c.path.display(), c.kind))
                .collect();
            v.sort();
            v
        }
        Restore::Conflicts(c) => panic!("unexpected conflicts: {c:?}"),
    }
}

/// The names of the programs that ran (each touches its own file in
/// `ran`).
fn ran(ran: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(ran)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `filter.<driver>` settings whose every program leaves a trace in `ran`
/// (the one-shot filters pass the content through, the process filter
/// fails its handshake). `required` makes git refuse to go on without them.
fn evil_filters(ran: &Path) -> Vec<(String, String)> {
    let touch = |what: &str| format!("touch '{}/{what}'", ran.display());
    vec![
        (
            "filter.evil.clean".into(),
            format!("{}; cat", touch("clean")),
        ),
        (
            "filter.evil.smudge".into(),
            format!("{}; cat", touch("smudge")),
        ),
        ("filter.evil.required".into(), "true".into()),
        (
            "filter.proc.process".into(),
            format!("sh -c \"{}; exit 1\"", touch("process").replace('\'', "")),
        ),
        ("filter.proc.required".into(), "true".into()),
        // A driver whose name holds '=': `-c` alone cannot turn it off.
        ("filter.a=b.clean".into(), format!("{}; cat", touch("a=b"))),
        ("diff.tc.textconv".into(), touch("textconv")),
    ]
}

const ATTRIBUTES: &str = "* filter=evil diff=tc\n*.bin filter=proc\n*.eq filter=a=b\n";

/// Record, a turn, undo, redo and a diff, with every file under a filter.
fn a_turn_undone_and_redone(cps: &Checkpoints, dir: &Path) {
    let before = cps.record().unwrap().checkpoint;
    bash(
        dir,
        "echo turn > a.txt; rm b.txt; echo new > c.txt; printf 'b\\0in' > x.bin; echo q > y.eq",
    );
    let after = cps.record().unwrap().checkpoint;
    assert_eq!(
        done(cps.restore(&before, &after, false).unwrap()),
        [
            "a.txt Modified",
            "b.txt Added",
            "c.txt Deleted",
            "x.bin Deleted",
            "y.eq Deleted"
        ]
    );
    assert_eq!(read(&dir.join("a.txt")).unwrap(), "a\n");
    assert_eq!(read(&dir.join("b.txt")).unwrap(), "b\n");
    assert!(!dir.join("c.txt").exists());
    done(cps.restore(&after, &before, false).unwrap());
    assert_eq!(std::fs::read(dir.join("x.bin")).unwrap(), b"b\0in");
    assert_eq!(read(&dir.join("a.txt")).unwrap(), "turn\n");
    let diff = cps.diff(&before, &after).unwrap();
    assert!(diff.contains("+turn\n"), "{diff}");
}

#[test]
fn in_a_repository_no_filter_program_of_the_repository_runs() {
    let w = World::new();
    let repo = w.repo("repo", &[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let marks = w.path("ran");
    std::fs::create_dir_all(&marks).unwrap();
    for (k, v) in evil_filters(&marks) {
        git(&repo, &["config", &k, &v]);
    }
    write(&repo.join(".gitattributes"), ATTRIBUTES);

    let cps = w.open(&repo);
    a_turn_undone_and_redone(&cps, &repo);
    assert_eq!(
        ran(&marks),
        Vec::<String>::new(),
        "no program of the user's ran"
    );

    // The filters do run for the user's own git: the test can see them.
    common::git_cmd(&repo, &["add", "-A"]).output().unwrap();
    assert!(!ran(&marks).is_empty(), "the test's filters work");
}

#[test]
fn outside_git_no_filter_program_of_the_users_configuration_runs() {
    let w = World::new();
    let dir = w.path("plain");
    write(&dir.join("a.txt"), "a\n");
    write(&dir.join("b.txt"), "b\n");
    write(&dir.join(".gitattributes"), ATTRIBUTES);
    let marks = w.path("ran");
    std::fs::create_dir_all(&marks).unwrap();
    let home = w.path("home");
    std::fs::create_dir_all(&home).unwrap();
    for (k, v) in evil_filters(&marks) {
        git(
            &home,
            &[
                "config",
                "--file",
                home.join(".gitconfig").to_str().unwrap(),
                &k,
                &v,
            ],
        );
    }
    let cps = w.open(&dir);
    a_turn_undone_and_redone(&cps, &dir);
    assert_eq!(
        ran(&marks),
        Vec::<String>::new(),
        "no program of the user's ran"
    );
    assert!(!dir.join(".git").exists());
}

/// A filter that changes what git stores (like Git LFS, which stores a
/// pointer): with no filter run, the checkpoint holds the bytes on disk,
/// so an undo writes back exactly what was there and never the stored
/// form.
#[test]
fn a_filtered_file_comes_back_as_it_was_on_disk_not_as_git_stores_it() {
    let w = World::new();
    let repo = w.repo("repo", &[("other.txt", "o\n")]);
    git(
        &repo,
        &["config", "filter.pointer.clean", "sed s/content/POINTER/"],
    );
    git(
        &repo,
        &["config", "filter.pointer.smudge", "sed s/POINTER/content/"],
    );
    write(&repo.join(".gitattributes"), "*.psd filter=pointer\n");
    write(&repo.join("image.psd"), "content\n");
    write(&repo.join("gone.psd"), "content of gone\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "images"]);
    assert_eq!(git(&repo, &["show", "HEAD:image.psd"]), "POINTER\n");
    // Age the files so that the index's entries are clean, not racy.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    for f in ["image.psd", "gone.psd"] {
        std::fs::File::open(repo.join(f))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    git(&repo, &["update-index", "--refresh"]);

    let cps = w.open(&repo);
    let before = cps.record().unwrap().checkpoint;
    bash(&repo, "echo edited > image.psd; rm gone.psd");
    let after = cps.record().unwrap().checkpoint;
    assert_eq!(
        done(cps.restore(&before, &after, false).unwrap()),
        ["gone.psd Added", "image.psd Modified"]
    );
    assert_eq!(read(&repo.join("image.psd")).unwrap(), "content\n");
    assert_eq!(read(&repo.join("gone.psd")).unwrap(), "content of gone\n");
}

/// A filtered file too large to read at every checkpoint is left out
/// whole, so an undo never writes git's stored form in its place.
#[test]
fn a_filtered_file_over_the_size_limit_is_left_out_not_restored_wrong() {
    let w = World::new();
    let repo = w.repo("repo", &[("other.txt", "o\n")]);
    git(&repo, &["config", "filter.pointer.clean", "sed s/x/P/"]);
    write(&repo.join(".gitattributes"), "*.psd filter=pointer\n");
    write(&repo.join("big.psd"), &"x".repeat(2000));
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "big"]);
    let options = Options {
        max_file_size: 1000,
        ..w.options()
    };
    let cps = Checkpoints::open(&repo, &w.store(), options).unwrap();
    let recorded = cps.record().unwrap();
    assert_eq!(recorded.skipped, [PathBuf::from("big.psd")]);
    bash(&repo, "rm big.psd; echo n > n.txt");
    let after = cps.record().unwrap().checkpoint;
    assert_eq!(
        done(cps.restore(&recorded.checkpoint, &after, false).unwrap()),
        ["n.txt Deleted"]
    );
    assert!(!repo.join("big.psd").exists(), "no stored form written");
}

/// Outside git the bytes on disk are recorded as they are, whatever a
/// `.gitattributes` in the folder asks (line endings included).
#[test]
fn outside_git_line_endings_come_back_byte_for_byte() {
    let w = World::new();
    let dir = w.path("plain");
    write(&dir.join(".gitattributes"), "*.txt text eol=crlf\n");
    std::fs::write(dir.join("mixed.txt"), "crlf\r\nlf\n").unwrap();
    let cps = w.open(&dir);
    let before = cps.record().unwrap().checkpoint;
    write(&dir.join("mixed.txt"), "changed\n");
    let after = cps.record().unwrap().checkpoint;
    done(cps.restore(&before, &after, false).unwrap());
    assert_eq!(
        std::fs::read(dir.join("mixed.txt")).unwrap(),
        b"crlf\r\nlf\n"
    );
}
