//! The cost of a checkpoint on a tree of 10,000 files, against `git status`
//! on the same tree in the same run (what a user pays to see their own
//! changes). `cargo bench -p mm-checkpoint --bench record`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use mm_checkpoint::{Checkpoints, Options};

const FILES: usize = 10_000;
const RUNS: usize = 21;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// 100 folders of 100 small source-like files.
fn fill(dir: &Path) {
    for d in 0..FILES / 100 {
        let sub = dir.join(format!("pkg{d:03}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..100 {
            std::fs::write(
                sub.join(format!("file{f:03}.rs")),
                format!("// file {d}/{f}\npub fn f{f}() -> u32 {{ {f} }}\n"),
            )
            .unwrap();
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(mut f: impl FnMut()) -> Duration {
    f(); // warm the caches
    median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    fill(&repo);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "files"]);
    let store = tmp.path().join("store");
    let cps = Checkpoints::open(&repo, &store, Options::default()).unwrap();

    let status = || {
        let out = Command::new("git")
            .current_dir(&repo)
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    println!("| {FILES} files | checkpoint | baseline: git status --porcelain | ratio |");
    println!("|---|---|---|---|");
    let row = |what: &str, ours: Duration, base: Duration| {
        println!(
            "| {what} | {} | {} | {:.2}× |",
            ms(ours),
            ms(base),
            ours.as_secs_f64() / base.as_secs_f64()
        );
    };

    let base = time(status);
    let ours = time(|| {
        cps.record().unwrap();
    });
    row("git repository, clean", ours, base);

    // A turn's worth of changes the user has not added: 10 edits, 10 new files.
    for i in 0..10 {
        std::fs::write(
            repo.join(format!("pkg{i:03}/file000.rs")),
            format!("// edited {i}\n"),
        )
        .unwrap();
        std::fs::write(repo.join(format!("pkg{i:03}/new.rs")), "// new\n").unwrap();
    }
    let base = time(status);
    let ours = time(|| {
        cps.record().unwrap();
    });
    row("git repository, 20 files changed", ours, base);
    // As a turn records: stoppable, its git commands watched for a stop.
    // The baseline here is the same checkpoint without a stop.
    let stoppable = cps.stopped_by(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
        false,
    )));
    let watched = time(|| {
        stoppable.record().unwrap();
    });
    row(
        "the same, stoppable (baseline: the same without a stop)",
        watched,
        ours,
    );

    let before = cps.record().unwrap().checkpoint;
    for i in 0..10 {
        std::fs::write(repo.join(format!("pkg{i:03}/file001.rs")), "// turn\n").unwrap();
    }
    let after = cps.record().unwrap().checkpoint;
    let ours = time(|| {
        cps.restore(&before, &after, true).unwrap();
        cps.restore(&after, &before, true).unwrap();
    }) / 2;
    row("undo of 10 files (incl. its check)", ours, base);

    // Outside git: the private store, same files (the baseline stays the
    // repository's status: the same tree, the same walk).
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    fill(&plain);
    let private = Checkpoints::open(&plain, &store, Options::default()).unwrap();
    let first = Instant::now();
    private.record().unwrap();
    let first = first.elapsed();
    let ours = time(|| {
        private.record().unwrap();
    });
    row("outside git, first checkpoint", first, base);
    row("outside git, later checkpoints", ours, base);
}
