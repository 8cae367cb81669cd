//! A stdio server: the child process and the transport over its pipes.
//!
//! mm starts the child itself rather than through the SDK's child-process
//! transport: it gets the treatment of every child of mm (own process
//! group, parent-death signal, a death guard for what it forks, killed when
//! mm ends), no provider key it was not given, and a stderr that is kept
//! (its tail explains a failure) but never reaches mm's own output. The
//! transport reads bounded lines and remembers what was not JSON-RPC, so a
//! broken server is reported as such rather than as a silent timeout.

use std::collections::HashSet;
use std::io;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::error::McpError;

/// The longest line (one JSON-RPC message) read from a server. A line
/// longer than this ends the connection: nothing that big is a tool result
/// a model can use, and reading on would hold it all in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;
/// How much of the server's stderr is kept, to explain a failure.
const STDERR_KEEP: usize = 4096;
/// How much of a line that is not JSON-RPC is quoted.
const JUNK_QUOTE: usize = 60;
/// How long a closed connection waits for the exit status, to report it.
const EXIT_WAIT: Duration = Duration::from_millis(500);

/// What is known about a stdio server beyond its messages: the tail of its
/// stderr, the lines that were not JSON-RPC, why the reader stopped, and
/// how the process ended.
#[derive(Debug, Default)]
pub(crate) struct Diag {
    inner: Mutex<DiagInner>,
    exited: OnceLock<watch::Sender<Option<String>>>,
}

#[derive(Debug, Default)]
struct DiagInner {
    stderr: String,
    junk_lines: usize,
    first_junk: Option<String>,
    /// Why the reader stopped before end of file.
    stopped: Option<String>,
}

impl Diag {
    fn lock(&self) -> MutexGuard<'_, DiagInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn exit_tx(&self) -> &watch::Sender<Option<String>> {
        self.exited.get_or_init(|| watch::channel(None).0)
    }

    fn note_junk(&self, line: &str) {
        let mut d = self.lock();
        d.junk_lines += 1;
        if d.first_junk.is_none() {
            d.first_junk = Some(quote(line));
        }
    }

    fn note_stop(&self, why: String) {
        let mut d = self.lock();
        d.stopped.get_or_insert(why);
    }

    fn note_exit(&self, status: io::Result<ExitStatus>) {
        let text = match status {
            Ok(s) => exit_text(s),
            Err(e) => format!("could not be waited for ({e})"),
        };
        self.exit_tx().send_replace(Some(text));
    }

    /// The exit text, once the process ended.
    pub(crate) fn exit(&self) -> Option<String> {
        self.exit_tx().borrow().clone()
    }

    /// The last non-empty stderr line, cut to a readable length.
    pub(crate) fn last_stderr_line(&self) -> Option<String> {
        let d = self.lock();
        d.stderr
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| cut(l, 200))
    }

    /// What to add to a timeout: ` (it wrote 2 lines that are not JSON-RPC,
    /// the first: "oops")`, else the last stderr line, else nothing.
    pub(crate) fn detail(&self) -> String {
        let junk = {
            let d = self.lock();
            d.first_junk.clone().map(|first| {
                let n = d.junk_lines;
                let lines = if n == 1 { "line" } else { "lines" };
                let are = if n == 1 { "is" } else { "are" };
                format!(" (it wrote {n} {lines} that {are} not JSON-RPC, the first: {first})")
            })
        };
        match junk {
            Some(j) => j,
            None => match self.last_stderr_line() {
                Some(line) => format!(" (its last stderr line: {line})"),
                None => String::new(),
            },
        }
    }

    /// Why the connection ended, as one line: how the process ended (waited
    /// for briefly), why the reader stopped, and the last stderr line.
    pub(crate) async fn gone(&self) -> String {
        let mut rx = self.exit_tx().subscribe();
        let _ = tokio::time::timeout(EXIT_WAIT, rx.wait_for(Option::is_some)).await;
        let exit = self.exit();
        let stopped = self.lock().stopped.clone();
        let mut text = match (stopped, exit) {
            (Some(why), _) => why,
            (None, Some(exit)) => format!("the server {exit}"),
            (None, None) => "the server closed its output".to_string(),
        };
        if let Some(line) = self.last_stderr_line() {
            text.push_str(&format!(" (its last stderr line: {line})"));
        } else if let Some(junk) = self.lock().first_junk.clone() {
            text.push_str(&format!(" (it wrote a line that is not JSON-RPC: {junk})"));
        }
        text
    }
}

/// `exited with status 3`, `was killed by signal 9 (SIGKILL)`.
fn exit_text(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}{}", signal_name(sig)),
        (None, None) => format!("ended ({status})"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGPIPE => " (SIGPIPE)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

fn quote(line: &str) -> String {
    format!("{:?}", cut(line.trim(), JUNK_QUOTE))
}

/// The process groups of running stdio servers, so that mm can kill them
/// all when it ends, from any session.
fn groups() -> MutexGuard<'static, HashSet<i32>> {
    static GROUPS: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    GROUPS
        .get_or_init(|| Mutex::new(HashSet::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// SIGKILL the process group of every running stdio MCP server; returns
/// how many there were. Safe from a signal task, an exit path or a panic
/// hook.
pub fn kill_all() -> usize {
    let ids: Vec<i32> = groups().drain().collect();
    for &pgid in &ids {
        kill_group(pgid);
    }
    ids.len()
}

fn kill_group(pgid: i32) {
    // Never 0 or 1: killpg(0) is our own group, 1 would be everything.
    if pgid > 1 {
        // SAFETY: killpg has no memory effects; a gone group gives ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// A running server process: killed with its whole group when dropped.
pub(crate) struct Proc {
    pgid: i32,
    waiter: tokio::task::JoinHandle<()>,
    guard: Option<mm_child::DeathGuard>,
    pub(crate) diag: Arc<Diag>,
}

impl Proc {
    /// Kill the group and wait (bounded) until the leader is gone.
    pub(crate) async fn kill(mut self) {
        self.kill_now();
        self.wait(EXIT_WAIT).await;
        if let Some(guard) = self.guard.take() {
            guard.reap().await;
        }
    }

    /// Wait up to `bound` for the process to end by itself (it does once
    /// its stdin closes), then kill what is left of its group.
    pub(crate) async fn end(mut self, bound: Duration) {
        self.wait(bound).await;
        self.kill().await;
    }

    /// Wait up to `bound` for the leader to be reaped.
    async fn wait(&mut self, bound: Duration) {
        if !self.waiter.is_finished() {
            let _ = tokio::time::timeout(bound, &mut self.waiter).await;
        }
    }

    fn kill_now(&mut self) {
        groups().remove(&self.pgid);
        kill_group(self.pgid);
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill_now();
        self.waiter.abort();
    }
}

/// Start `command` in `cwd` with piped stdio, in its own process group,
/// with the parent-death signal and a death guard.
pub(crate) fn spawn(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    remove_env: &[String],
    cwd: &std::path::Path,
) -> Result<(Proc, StdioTransport), McpError> {
    let mut cmd = mm_child::piped(command);
    cmd.args(args).current_dir(cwd);
    for var in remove_env {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let mut child = cmd.spawn().map_err(|e| McpError::Spawn {
        command: command.to_string(),
        reason: spawn_reason(&e),
    })?;
    let pgid = child.id().map_or(0, |id| id as i32);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(McpError::Spawn {
            command: command.to_string(),
            reason: "no pipes to the process".to_string(),
        });
    };
    groups().insert(pgid);
    let guard = match mm_child::DeathGuard::spawn(pgid) {
        Ok(g) => Some(g),
        Err(e) => {
            // The parent-death signal still covers the server itself.
            tracing::warn!("mcp: no death guard for {command}: {e}");
            None
        }
    };
    let diag = Arc::new(Diag::default());
    tokio::spawn(keep_tail(stderr, diag.clone()));
    let waiter = {
        let diag = diag.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            diag.note_exit(status);
        })
    };
    let transport = StdioTransport {
        stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
        lines: FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE)),
        diag: diag.clone(),
        ended: false,
    };
    Ok((
        Proc {
            pgid,
            waiter,
            guard,
            diag,
        },
        transport,
    ))
}

fn spawn_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "not found (is it installed and on PATH?)".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

/// Keep the last [`STDERR_KEEP`] bytes of the server's stderr, and drain
/// it so that a chatty server never blocks on a full pipe.
async fn keep_tail(stderr: ChildStderr, diag: Arc<Diag>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let mut d = diag.lock();
        d.stderr.push_str(&text);
        if d.stderr.len() > STDERR_KEEP {
            let mut cut = d.stderr.len() - STDERR_KEEP;
            while !d.stderr.is_char_boundary(cut) {
                cut += 1;
            }
            d.stderr.drain(..cut);
        }
    }
}

/// Newline-delimited JSON-RPC over the child's stdin and stdout.
pub(crate) struct StdioTransport {
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    lines: FramedRead<ChildStdout, LinesCodec>,
    diag: Arc<Diag>,
    ended: bool,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        let line = serde_json::to_vec(&item).map(|mut v| {
            v.push(b'\n');
            v
        });
        async move {
            let line = line.map_err(io::Error::other)?;
            let mut guard = stdin.lock().await;
            let pipe = guard
                .as_mut()
                .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "stdin closed"))?;
            pipe.write_all(&line).await?;
            pipe.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        if self.ended {
            return None;
        }
        loop {
            let line = match self.lines.next().await {
                None => {
                    self.ended = true;
                    return None;
                }
                Some(Ok(line)) => line,
                Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                    self.diag.note_stop(format!(
                        "the server sent a message over {} MiB",
                        MAX_LINE / (1024 * 1024)
                    ));
                    self.ended = true;
                    return None;
                }
                Some(Err(LinesCodecError::Io(e))) => {
                    let why = if e.kind() == io::ErrorKind::InvalidData {
                        "the server wrote output that is not UTF-8 text".to_string()
                    } else {
                        format!("cannot read the server's output: {e}")
                    };
                    self.diag.note_stop(why);
                    self.ended = true;
                    return None;
                }
            };
            let text = line.trim().trim_start_matches('\u{feff}');
            if text.is_empty() {
                continue;
            }
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(text) {
                Ok(message) => return Some(message),
                Err(e) => {
                    // A notification this client does not know is fine;
                    // anything else is remembered, to be reported.
                    if is_unknown_notification(text) {
                        tracing::debug!("mcp: ignored notification: {e}");
                    } else {
                        self.diag.note_junk(text);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stdin.lock().await.take();
        Ok(())
    }
}

/// A JSON object with a `method` and no `id`.
fn is_unknown_notification(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| {
        v.get("method").is_some_and(serde_json::Value::is_string) && v.get("id").is_none()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_texts() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            exit_text(ExitStatus::from_raw(3 << 8)),
            "exited with status 3"
        );
        assert_eq!(
            exit_text(ExitStatus::from_raw(libc::SIGKILL)),
            "was killed by signal 9 (SIGKILL)"
        );
    }

    #[test]
    fn junk_is_counted_and_quoted() {
        let d = Diag::default();
        assert_eq!(d.detail(), "");
        d.note_junk("{oops");
        d.note_junk(&"x".repeat(500));
        assert_eq!(
            d.detail(),
            " (it wrote 2 lines that are not JSON-RPC, the first: \"{oops\")"
        );
        assert!(is_unknown_notification(
            r#"{"jsonrpc":"2.0","method":"x/y"}"#
        ));
        assert!(!is_unknown_notification(
            r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#
        ));
        assert!(!is_unknown_notification("{oops"));
    }
}
