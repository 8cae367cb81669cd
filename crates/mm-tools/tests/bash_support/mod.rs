//! Shared helpers of the bash tests: a context, temp dirs, /proc checks.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mm_tools::bash::{Bash, BashSettings, ProcessRegistry};
use mm_tools::{PermissionMode, Permissions, ToolContext};
use tokio_util::sync::CancellationToken;

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mm-bash-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir.canonicalize().unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A call's context in `cwd`, with the default output budget (30000).
pub fn ctx(cwd: &Path) -> ToolContext {
    ctx_max(cwd, 30_000)
}

/// A call's context in `cwd` whose output budget is `max_output`.
pub fn ctx_max(cwd: &Path, max_output: usize) -> ToolContext {
    ToolContext {
        cwd: cwd.to_path_buf(),
        sink: Arc::new(mm_types::NullSink),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
        max_output,
        call_id: String::new(),
    }
}

pub fn settings(timeout_secs: u64) -> BashSettings {
    BashSettings {
        timeout: Duration::from_secs(timeout_secs),
        secrets_env: Vec::new(),
        secrets: Vec::new(),
    }
}

pub fn bash(timeout_secs: u64) -> (Bash, ProcessRegistry) {
    let registry = ProcessRegistry::new();
    (
        Bash::with_registry(settings(timeout_secs), registry.clone()),
        registry,
    )
}

/// Runs `command` with a 10 s timeout, 30000 characters, in a fresh dir,
/// bounded by a 30 s test timeout.
pub async fn run(command: &str) -> String {
    let dir = TempDir::new();
    let (b, _) = bash(10);
    tokio::time::timeout(
        Duration::from_secs(30),
        b.execute(command, &ctx(dir.path())),
    )
    .await
    .expect("bash call hung")
}

/// Pids of live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) in parentheses.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] = state, [1] = ppid, [2] = pgrp
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" && fields[0] != "X"
        {
            out.push(pid);
        }
    }
    out
}

/// Whether process `pid` is alive (not a zombie).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, r)| !r.trim_start().starts_with('Z') && !r.trim_start().starts_with('X'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Waits (bounded) until no live process is left in group `pgid`; the
/// killed processes may take a moment to be reaped by their new parent.
pub fn assert_group_gone(pgid: i32) {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let members = group_members(pgid);
        if members.is_empty() {
            return;
        }
        if Instant::now() > until {
            panic!("processes of group {pgid} still alive: {members:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The result docs/design.md#truncation prescribes, computed by brute
/// force: find the omitted count N whose marker makes the numbers agree.
pub fn expected_truncation(output: &str, suffix: &str, max: usize) -> String {
    let chars: Vec<char> = output.chars().collect();
    let total = chars.len();
    let suffix_cost = if suffix.is_empty() {
        0
    } else {
        suffix.chars().count() + 1
    };
    for n in 0..=total {
        let marker = format!("[… {n} characters omitted …]");
        let budget = max - (marker.chars().count() + 1) - suffix_cost;
        if total - budget != n {
            continue;
        }
        let head = budget / 2;
        let tail = budget - head;
        let mut s: String = chars[..head].iter().collect();
        s.push_str(&marker);
        s.push('\n');
        let t: String = chars[total - tail..].iter().collect();
        s.push_str(&t);
        if !suffix.is_empty() {
            if !t.is_empty() && !t.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(suffix);
        }
        return s;
    }
    panic!("no consistent omitted count");
}
