//! Running one hook: `sh -c` in its own process group, the payload on
//! stdin, stdout and stderr read up to a bound, the group killed when the
//! hook ends, times out or the turn is cancelled.

use std::path::Path;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::{Hook, HookEvent};

/// What a hook may print that is kept, per stream; the rest is read and
/// dropped so that the hook never blocks on a full pipe.
const KEEP: usize = 64 * 1024;

/// How one hook ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// The command line.
    pub command: String,
    /// Its exit code; `None` when it was killed or could not start.
    pub code: Option<i32>,
    /// What it printed (at most 64 KiB).
    pub stdout: String,
    /// What it printed on stderr (at most 64 KiB).
    pub stderr: String,
    /// Killed at its timeout.
    pub timed_out: bool,
    /// Why it could not start.
    pub error: Option<String>,
}

impl Ran {
    /// Its stdout as a JSON object, when it is one.
    pub fn json(&self) -> Option<Value> {
        let text = self.stdout.trim();
        if !text.starts_with('{') {
            return None;
        }
        serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
    }

    /// The line a user sees: `hook PreToolUse: ~/guard.py exited 2: no rm`.
    pub fn line(&self, event: HookEvent) -> String {
        let how = match (&self.error, self.timed_out, self.code) {
            (Some(e), _, _) => format!("could not start: {e}"),
            (None, true, _) => "timed out and was killed".to_owned(),
            (None, false, Some(0)) => "ok".to_owned(),
            (None, false, Some(n)) => format!("exited {n}"),
            (None, false, None) => "was killed".to_owned(),
        };
        let first = self.stderr.lines().find(|l| !l.trim().is_empty());
        match first {
            Some(l) if self.code != Some(0) => {
                format!("hook {event}: {} {how}: {}", self.command, l.trim())
            }
            _ => format!("hook {event}: {} {how}", self.command),
        }
    }
}

/// Run `hook` with `payload` on stdin in `cwd`.
pub(crate) async fn run(hook: &Hook, payload: &str, cwd: &Path, cancel: &CancellationToken) -> Ran {
    let mut ran = Ran {
        command: hook.command.clone(),
        code: None,
        stdout: String::new(),
        stderr: String::new(),
        timed_out: false,
        error: None,
    };
    let mut cmd = mm_child::piped("sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        // Scripts written for the other agents find the project here.
        .env("CLAUDE_PROJECT_DIR", cwd)
        .env("MM_PROJECT_DIR", cwd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            ran.error = Some(e.to_string());
            return ran;
        }
    };
    let Some(pgid) = child.id().map(|p| p as i32) else {
        ran.error = Some("no process id".to_owned());
        return ran;
    };
    // The group dies with mm even if mm is killed while the hook runs.
    let guard = mm_child::DeathGuard::spawn(pgid).ok();
    let stdin = child.stdin.take();
    let payload = payload.to_owned();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A hook that does not read its stdin is not an error.
            let _ = stdin.write_all(payload.as_bytes()).await;
        }
    };
    let out = read_bounded(child.stdout.take());
    let err = read_bounded(child.stderr.take());
    let wait = async {
        tokio::select! {
            status = child.wait() => Some(status),
            _ = tokio::time::sleep(hook.timeout) => None,
            _ = cancel.cancelled() => None,
        }
    };
    let ((), (status, (stdout, stderr))) = tokio::join!(feed, async {
        let status = wait.await;
        // Whatever the hook left running in its group ends with it; the
        // pipes then close, so the reads below end.
        kill_group(pgid);
        (status, tokio::join!(out, err))
    });
    match status {
        Some(Ok(s)) => ran.code = s.code(),
        Some(Err(e)) => ran.error = Some(e.to_string()),
        None => ran.timed_out = !cancel.is_cancelled(),
    }
    let _ = child.wait().await;
    if let Some(g) = guard {
        g.reap().await;
    }
    ran.stdout = stdout;
    ran.stderr = stderr;
    ran
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals that process group; it
    // touches no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Everything `pipe` gives until it closes, keeping the first [`KEEP`]
/// bytes as text.
async fn read_bounded(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = KEEP.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
