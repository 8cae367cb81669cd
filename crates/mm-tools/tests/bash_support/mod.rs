//! Shared helpers of the bash tests: a context, temp dirs, /proc checks.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mm_tools::bash::{Bash, BashSettings, ProcessRegistry};
use mm_tools::{PermissionMode, Permissions, ToolContext};
use tokio_util::sync::CancellationToken;

pub use mm_test_support::TempDir;
#[allow(unused_imports)]
pub use mm_test_support::procs::{alive, group_members};

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

/// Waits (bounded) until no live process is left in group `pgid`; the
/// killed processes may take a moment to be reaped by their new parent.
pub fn assert_group_gone(pgid: i32) {
    mm_test_support::procs::assert_group_gone(pgid, Duration::from_secs(3));
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
