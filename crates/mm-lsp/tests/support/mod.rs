//! Shared by the real-server tests: fixture projects in temp dirs, bounded
//! calls, and the skip rule (a server that is not installed skips the test
//! with a message, unless `CI` is set: in CI it must be there).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mm_lsp::{Client, Query, ServerConfig};
use mm_test_support::wait::eventually;

/// Every call of a test is bounded: a hung server fails the test.
pub const CALL_LIMIT: Duration = Duration::from_secs(90);

pub fn config(name: &str, command: &str, args: &[&str], exts: &[&str]) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        command: command.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        extensions: exts.iter().map(|s| s.to_string()).collect(),
    }
}

/// True when `command --version`-like `probe` runs. Else: in CI a panic
/// (the server must be installed there, by .ci/install-lsp), elsewhere a
/// printed skip.
pub fn installed(command: &str, probe: &[&str], test: &str) -> bool {
    let ok = Command::new(command)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{command} is not installed but CI is set: run .ci/install-lsp");
    }
    skip_note(&format!(
        "SKIPPED {test}: {command} is not installed (bash .ci/install-lsp installs it)"
    ));
    false
}

/// Like [`installed`], but never required: for servers whose install may
/// be impossible on a fresh machine (a rustup component).
pub fn installed_optional(command: &str, probe: &[&str], test: &str) -> bool {
    let ok = Command::new(command)
        .args(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip_note(&format!(
            "SKIPPED {test}: {command} is not installed (optional server)"
        ));
    }
    ok
}

/// A project in a temp dir.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new(files: &[(&str, &str)]) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let p = Project { dir };
        for (name, text) in files {
            p.write(name, text);
        }
        p
    }

    /// The canonical root (servers answer with real paths).
    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub fn write(&self, name: &str, text: &str) {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap()
    }

    pub fn client(&self, servers: Vec<ServerConfig>) -> Client {
        Client::new(servers, self.root())
    }
}

/// One call, bounded: its answer, or the text of its failure.
pub async fn call(client: &Client, q: Query) -> String {
    tokio::time::timeout(CALL_LIMIT, client.call(&q))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "lsp call {} did not answer within {CALL_LIMIT:?}",
                q.title()
            )
        })
        .unwrap_or_else(|e| e.to_string())
}

/// True while a process with this id exists (and is not a zombie).
pub fn process_exists(pid: u32) -> bool {
    mm_test_support::procs::alive(pid as i32)
}

/// Wait (bounded) until the process is gone.
pub async fn wait_gone(pid: u32) {
    assert!(
        eventually(Duration::from_secs(10), || !process_exists(pid)).await,
        "process {pid} still runs"
    );
}

/// SIGKILL a process, as a crash would.
pub fn kill(pid: u32) {
    // SAFETY: kill has no memory effects.
    let rc = unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert_eq!(rc, 0, "kill {pid}");
}

pub fn compile_commands(root: &Path, files: &[&str]) -> String {
    let entries: Vec<String> = files
        .iter()
        .map(|f| {
            format!(
                "{{\"directory\": \"{d}\", \"file\": \"{f}\", \"arguments\": [\"cc\", \"-c\", \"{f}\"]}}",
                d = root.display()
            )
        })
        .collect();
    format!("[{}]\n", entries.join(", "))
}

/// A skip note that the test harness does not capture (it shows even for a
/// passing test): written to the process's stderr directly.
fn skip_note(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{text}");
}
