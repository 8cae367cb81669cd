//! git run the way a user runs it, but with a fixed identity, `HOME` set
//! to the repository's folder and none of the test process's `GIT_*`
//! variables or system configuration.

use std::path::Path;
use std::process::Command;

/// The command `git <args>` in `dir`.
pub fn git_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(k);
        }
    }
    cmd.current_dir(dir)
        // Reading the status must not refresh the index: tests compare the
        // index file byte for byte.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args);
    cmd
}

/// `git <args>` in `dir`; its stdout. Fails the test when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir, args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
