//! Real repositories in temporary folders, and git run the way a user runs
//! it (but with a fixed identity and none of the test process's `GIT_*`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use mm_checkpoint::{Checkpoints, Options};

#[allow(unused_imports)]
pub use mm_test_support::git::{git, git_cmd};

/// `bash -c <script>` in `dir`, as the bash tool would run it.
pub fn bash(dir: &Path, script: &str) {
    let status = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .expect("bash runs");
    assert!(status.success(), "{script} failed");
}

/// A temporary world: a home folder (also the HOME of every git) and a
/// data folder for mm's private store.
pub struct World {
    pub root: tempfile::TempDir,
}

impl World {
    pub fn new() -> World {
        World {
            root: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// The environment mm's git starts from: this world's HOME and no
    /// system configuration of the user's.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| k != "HOME" && k != "XDG_CONFIG_HOME")
            .collect();
        env.push(("HOME".into(), self.path("home").into()));
        env
    }

    pub fn options(&self) -> Options {
        Options {
            env: Some(self.env()),
            ..Options::default()
        }
    }

    /// The private store for a folder of this world.
    pub fn store(&self) -> PathBuf {
        self.path("data/checkpoints/project")
    }

    pub fn open(&self, folder: &Path) -> Checkpoints {
        Checkpoints::open(folder, &self.store(), self.options()).unwrap()
    }

    /// A repository with one commit holding `files` (name, content).
    pub fn repo(&self, name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(self.path("home")).unwrap();
        git(&dir, &["init", "-q"]);
        for (f, content) in files {
            write(&dir.join(f), content);
        }
        if !files.is_empty() {
            git(&dir, &["add", "-A"]);
            git(&dir, &["commit", "-q", "-m", "start"]);
        }
        dir
    }
}

pub fn write(path: &Path, content: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, content).unwrap();
}

pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Everything of the user's git state the checkpoints must leave as it was.
#[derive(Debug, PartialEq, Eq)]
pub struct GitState {
    pub status: String,
    pub stash: String,
    pub refs: String,
    pub index: Option<Vec<u8>>,
    pub head: Vec<u8>,
    pub config: Vec<u8>,
    pub staged: String,
}

impl GitState {
    pub fn of(repo: &Path) -> GitState {
        let gitdir = repo.join(".git");
        GitState {
            status: git(repo, &["status", "--porcelain", "--untracked-files=all"]),
            stash: git(repo, &["stash", "list"]),
            refs: git(repo, &["for-each-ref"]),
            index: std::fs::read(gitdir.join("index")).ok(),
            head: std::fs::read(gitdir.join("HEAD")).unwrap(),
            config: std::fs::read(gitdir.join("config")).unwrap(),
            staged: git(repo, &["diff", "--cached", "--binary"]),
        }
    }
}
