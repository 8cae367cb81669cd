//! The `bash` tool: `bash -c <command>` in a new process group, stdout and
//! stderr merged through one pipe (so in arrival order), bounded output, a
//! timeout and cancellation that kill the whole group (see
//! docs/design.md#processes, docs/design.md#truncation and
//! docs/reference/tools.md#what-the-model-sees).
//!
//! Texts the model can get besides the command's output, each on its own
//! line at the end:
//! - `[exit code: exit status N]` / `[exit code: killed by signal N (NAME)]`
//! - `[error: Ns timeout exceeded]`
//! - `[error: cancelled by the user]` (the call was cancelled while running;
//!   what ran so far comes first)
//! - `[error: could not start bash: …]`
//!
//! Key values the tool is given are redacted while the output streams, so
//! before truncation (docs/design.md#keys-stay-out-of-tools).
//!
//! Dying with mm (docs/design.md#parent-death-signal): `bash` gets the
//! parent-death signal, but Linux clears it in every process `bash` forks,
//! so each call also starts a [`DeathGuard`] in the command's group, which
//! kills the whole group when mm dies. A normal end kills the group, guard
//! included. A command that leaves the group (`setsid`) escapes by design;
//! so would a grandchild forked in the moment between the start of `bash`
//! and that of its guard, if mm died just then.

pub mod jobs;
mod output;

use std::collections::HashSet;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mm_policy::{Confinement, Sandbox};
use mm_types::{Event, ToolFamily, ToolKind};
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;

use crate::output::{Collector, fit};
use mm_redact::Redactor;
use output::LossyDecoder;

use mm_child::DeathGuard;

use crate::tool::{Plan, Subject, Tool, ToolContext, ToolOutput, ToolRow, ToolSpec, parse_args};

/// What a refused command gives the model.
pub const REJECTED: &str = "[command rejected by the user]";

/// `bash`: runs a command, shown by its command line, echoes its output,
/// asks first.
pub const ROW: ToolRow = ToolRow {
    name: std::borrow::Cow::Borrowed("bash"),
    family: ToolFamily::Command,
    kind: ToolKind::Execute,
    title_from: Some("command"),
    echoes: true,
    changes_files: true,
    rejection: Some(REJECTED),
};

/// The last line of a command cancelled while it ran.
pub const CANCELLED: &str = "[error: cancelled by the user]";

/// The sentence the description gains when background jobs are on.
/// What `bash`'s description says of background jobs (and, with it, the
/// `background` parameter): left out where the job tools are not declared.
pub const BACKGROUND: &str = " background: true runs it as a job (servers) and returns at once.";

/// A background call where no job list was given (a library user's tool).
const NO_BACKGROUND: &str = "background commands are not available here; run it without background";

/// How long output still buffered by the group is read after `bash` exits.
const DRAIN: Duration = Duration::from_millis(100);

const READ_CHUNK: usize = 64 * 1024;

/// The settings `bash` runs with.
#[derive(Debug, Clone)]
pub struct BashSettings {
    /// `bashTimeout`.
    pub timeout: Duration,
    /// Names of the environment variables a command never inherits: every
    /// variable that holds a provider key, and the configured `apiKeyEnv`
    /// (docs/design.md#keys-stay-out-of-tools; the agent gives the
    /// provider registry's list).
    pub secrets_env: Vec<String>,
    /// Key values to replace by `[redacted]` before truncation.
    pub secrets: Vec<String>,
}

impl Default for BashSettings {
    /// The default `bashTimeout`: 30 s.
    fn default() -> Self {
        BashSettings {
            timeout: Duration::from_secs(30),
            secrets_env: Vec::new(),
            secrets: Vec::new(),
        }
    }
}

/// The process groups of running commands, so that mm can kill them all
/// when it ends (docs/design.md#killing-on-exit). Cloning shares the set.
#[derive(Debug, Clone, Default)]
pub struct ProcessRegistry {
    groups: Arc<Mutex<HashSet<i32>>>,
}

impl ProcessRegistry {
    /// An empty registry of its own; [`ProcessRegistry::global`] is the one
    /// mm's `bash` tools share.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry [`Bash::new`] uses. Process-wide on purpose: ending the
    /// process must reach every session's commands.
    pub fn global() -> &'static ProcessRegistry {
        static GLOBAL: OnceLock<ProcessRegistry> = OnceLock::new();
        GLOBAL.get_or_init(ProcessRegistry::new)
    }

    /// Ids of the groups now running.
    pub fn running(&self) -> Vec<i32> {
        let mut ids: Vec<i32> = self.lock().iter().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// SIGKILL every running group; returns how many there were. Safe to
    /// call from a SIGTERM task, an exit path or a panic hook.
    pub fn kill_all(&self) -> usize {
        let ids: Vec<i32> = self.lock().drain().collect();
        for &pgid in &ids {
            kill_group(pgid);
        }
        ids.len()
    }

    fn insert(&self, pgid: i32) {
        self.lock().insert(pgid);
    }

    fn remove(&self, pgid: i32) {
        self.lock().remove(&pgid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<i32>> {
        // A panic elsewhere must not stop us from killing children.
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Kill every command group started through [`ProcessRegistry::global`]
/// (mm-repl, mm-tui and mm-acp call it when they end).
pub fn kill_all_running() -> usize {
    ProcessRegistry::global().kill_all()
}

fn kill_group(pgid: i32) {
    // Never 0 or 1: killpg(0) is our own group, -1/1 would be everything.
    if pgid > 1 {
        // SAFETY: killpg has no memory effects; a stale id gives ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Kills and unregisters the group when dropped, so that a call whose
/// future is dropped (turn aborted) leaves nothing running.
struct GroupGuard {
    pgid: i32,
    registry: ProcessRegistry,
    done: bool,
}

impl GroupGuard {
    fn new(pgid: i32, registry: ProcessRegistry) -> Self {
        registry.insert(pgid);
        GroupGuard {
            pgid,
            registry,
            done: false,
        }
    }

    fn kill(&mut self) {
        if !self.done {
            kill_group(self.pgid);
            self.registry.remove(self.pgid);
            self.done = true;
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

#[derive(Deserialize)]
struct BashArgs {
    command: String,
    #[serde(default, deserialize_with = "crate::lenient::bool_field")]
    background: bool,
}

/// The `bash` tool.
#[derive(Debug, Clone)]
pub struct Bash {
    settings: BashSettings,
    registry: ProcessRegistry,
    /// Where `"background": true` puts its jobs; `None`: no background
    /// commands (the argument is refused).
    jobs: Option<Arc<jobs::Jobs>>,
}

/// How the wait for `bash` ended.
enum End {
    Exited(io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

impl Bash {
    /// A `bash` tool whose groups go into [`ProcessRegistry::global`].
    pub fn new(settings: BashSettings) -> Self {
        Self::with_registry(settings, ProcessRegistry::global().clone())
    }

    /// A `bash` tool whose groups go into `registry` (a test's own, so that
    /// it sees only its commands).
    pub fn with_registry(settings: BashSettings, registry: ProcessRegistry) -> Self {
        Bash {
            settings,
            registry,
            jobs: None,
        }
    }

    /// Let `"background": true` start jobs into `jobs` (the session's,
    /// shared with `job_output`, `job_kill` and `/jobs`).
    pub fn with_jobs(mut self, jobs: Arc<jobs::Jobs>) -> Self {
        self.jobs = Some(jobs);
        self
    }

    /// Run `command` in `ctx.cwd` and return the text the model receives.
    pub async fn execute(&self, command: &str, ctx: &ToolContext) -> String {
        self.run_command(command, ctx).await.text
    }

    /// Run `command` in `ctx.cwd`: the text the model receives, failed
    /// unless `bash` exited with status 0 (a non-zero exit, a signal, the
    /// timeout, a cancel, a shell that could not start).
    pub async fn run_command(&self, command: &str, ctx: &ToolContext) -> ToolOutput {
        let max = ctx.max_output;
        // Never unconfined when a sandbox was asked for.
        let confinement = match ctx.permissions.sandbox().prepare() {
            Ok(c) => c,
            Err(why) => return ToolOutput::fail(fit("", &sandbox_unavailable(&why), max)),
        };
        let (reader, mut child) = match self.spawn(command, ctx, confinement) {
            Ok(started) => started,
            Err(e) => {
                // A spawn in a folder that is gone fails with "No such file
                // or directory", which reads as if bash were missing.
                let why = ctx.cwd_gone().unwrap_or_else(|| e.to_string());
                return ToolOutput::fail(fit(
                    "",
                    &format!("[error: could not start bash: {why}]"),
                    max,
                ));
            }
        };
        let Some(pid) = child.id() else {
            return ToolOutput::fail(fit("", "[error: could not start bash: no process id]", max));
        };
        let mut guard = GroupGuard::new(pid as i32, self.registry.clone());
        // While `bash` has not been waited for it is at least a zombie, so
        // its group exists for the guard to join.
        let death_guard = match DeathGuard::spawn(pid as i32) {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::warn!(
                    "bash: cannot start the guard that kills the command if mm dies: {e}"
                );
                None
            }
        };
        let mut rx = match pipe::Receiver::from_owned_fd(reader) {
            Ok(rx) => Some(rx),
            Err(e) => {
                tracing::warn!("bash: cannot read the output pipe: {e}");
                None
            }
        };

        let mut sink = OutputSink::new(max, &self.settings.secrets);
        let mut buf = vec![0u8; READ_CHUNK];
        // `sleep` saturates: a timeout too long for the clock never panics.
        let timeout = tokio::time::sleep(self.settings.timeout);
        tokio::pin!(timeout);
        let end = loop {
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => break End::Cancelled,
                status = child.wait() => break End::Exited(status),
                _ = &mut timeout => break End::TimedOut,
                read = read_some(&mut rx, &mut buf) => match read {
                    Some(n) => sink.push(&buf[..n], ctx),
                    None => rx = None,
                },
            }
        };
        if !matches!(end, End::Exited(_)) {
            // At once: nothing of the group may outlive a timeout or a cancel.
            guard.kill();
        }
        // What the group still buffers, for a bounded time; a background
        // child holding the pipe open must not hang the call.
        let drain_until = Instant::now() + DRAIN;
        while rx.is_some() {
            tokio::select! {
                _ = tokio::time::sleep_until(drain_until) => break,
                read = read_some(&mut rx, &mut buf) => match read {
                    Some(n) => sink.push(&buf[..n], ctx),
                    None => rx = None,
                },
            }
        }
        guard.kill();
        if !matches!(end, End::Exited(_)) {
            // Reap bash; SIGKILL makes this quick, the bound keeps it honest.
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
        if let Some(g) = death_guard {
            g.reap().await;
        }
        let suffix = match end {
            End::Exited(Ok(status)) => exit_suffix(status),
            End::Exited(Err(e)) => format!("[error: could not wait for bash: {e}]"),
            End::TimedOut => timeout_text(self.settings.timeout),
            End::Cancelled => CANCELLED.to_string(),
        };
        let failed = !suffix.is_empty();
        let text = sink.finish(&suffix);
        if failed && let Some(line) = sandbox_hint(ctx.permissions.sandbox(), &text) {
            ctx.sink.event(Event::Notice { text: line });
        }
        ToolOutput {
            text,
            failed,
            images: Vec::new(),
        }
    }

    /// Starts `bash -c` with the write end of one pipe as both stdout and
    /// stderr; returns the read end.
    fn spawn(
        &self,
        command: &str,
        ctx: &ToolContext,
        confinement: Option<Confinement>,
    ) -> io::Result<(OwnedFd, tokio::process::Child)> {
        let (reader, writer) = io::pipe()?;
        let writer_err = writer.try_clone()?;
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&ctx.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer_err))
            .process_group(0)
            .kill_on_drop(true)
            .env("MM", "1");
        for var in &self.settings.secrets_env {
            cmd.env_remove(var);
        }
        let parent = std::process::id();
        // SAFETY: the closure runs between fork and exec and only calls
        // async-signal-safe functions (prctl, getppid, and the Landlock and
        // seccomp system calls of a confinement prepared here, before fork).
        unsafe {
            cmd.pre_exec(move || {
                mm_child::die_with_parent(parent)?;
                match &confinement {
                    Some(c) => c.apply(),
                    None => Ok(()),
                }
            });
        }
        let child = cmd.spawn();
        // Our copies of the write end must close, or the pipe never ends.
        drop(cmd);
        Ok((OwnedFd::from(reader), child?))
    }
}

/// One read from the pipe; `None` at the end (or on an error, which ends
/// the output the same way). Pending forever when there is no pipe.
async fn read_some(rx: &mut Option<pipe::Receiver>, buf: &mut [u8]) -> Option<usize> {
    match rx {
        Some(rx) => match rx.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// Bytes → lossy text → redaction → bounded collector, and the redacted
/// text to the front end as it comes (`ToolOutput`).
struct OutputSink {
    decoder: LossyDecoder,
    redactor: Redactor,
    collector: Collector,
    text: String,
    live: String,
}

impl OutputSink {
    fn new(max: usize, secrets: &[String]) -> Self {
        OutputSink {
            decoder: LossyDecoder::default(),
            redactor: Redactor::new(secrets),
            collector: Collector::new(max),
            text: String::new(),
            live: String::new(),
        }
    }

    fn push(&mut self, bytes: &[u8], ctx: &ToolContext) {
        self.text.clear();
        self.decoder.push(bytes, &mut self.text);
        let (collector, live) = (&mut self.collector, &mut self.live);
        self.redactor.push(&self.text, &mut |s: &str| {
            collector.push(s);
            live.push_str(s);
        });
        if !self.live.is_empty() {
            ctx.sink.event(Event::ToolOutput {
                id: ctx.call_id.clone(),
                text: std::mem::take(&mut self.live),
            });
        }
    }

    fn finish(mut self, suffix: &str) -> String {
        self.text.clear();
        self.decoder.finish(&mut self.text);
        let collector = &mut self.collector;
        self.redactor
            .push(&self.text, &mut |s: &str| collector.push(s));
        self.redactor.finish(&mut |s: &str| collector.push(s));
        self.collector.finish(suffix)
    }
}

/// What the model gets when the sandbox asked for cannot be enforced: the
/// command does not run.
pub fn sandbox_unavailable(why: &str) -> String {
    format!(
        "[error: the sandbox cannot be enforced on this system ({why}); the command was not run]"
    )
}

/// The errors a command prints when the kernel refuses it a write
/// (Landlock: EACCES, or EROFS) or a socket (the seccomp filter: EPERM).
const REFUSED_TEXTS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
];

/// The line a front end shows when a sandboxed command failed with one of
/// those errors. A hint read from the output: the kernel does not say
/// which call it refused.
pub fn sandbox_hint(sandbox: &Sandbox, output: &str) -> Option<String> {
    if !sandbox.is_on() || !REFUSED_TEXTS.iter().any(|t| output.contains(t)) {
        return None;
    }
    Some(format!(
        "the sandbox may have blocked this command ({})",
        sandbox.limits()
    ))
}

/// `""` for success, else the exit line (docs/design.md#exit-lines).
pub fn exit_suffix(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        if code == 0 {
            String::new()
        } else {
            format!("[exit code: exit status {code}]")
        }
    } else if let Some(sig) = status.signal() {
        format!("[exit code: killed by signal {sig} ({})]", signal_name(sig))
    } else {
        String::new()
    }
}

/// `[error: Ns timeout exceeded]`, N the timeout in force (`1`, `30`, `0.5`).
pub fn timeout_text(timeout: Duration) -> String {
    format!("[error: {}s timeout exceeded]", timeout.as_secs_f64())
}

/// The conventional name of a signal number (`SIGKILL`); `SIG<N>` for one
/// without a name here.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("SIG{sig}"),
    };
    name.to_string()
}

#[async_trait::async_trait]
impl Tool for Bash {
    fn row(&self) -> &ToolRow {
        &ROW
    }

    fn spec(&self) -> ToolSpec {
        let mut description = format!(
            "Run `bash -c` in the working directory, no stdin; stdout and stderr merged, \
             long output cut to head and tail, a non-zero exit noted; killed after {}s.",
            self.settings.timeout.as_secs_f64()
        );
        let mut parameters = serde_json::json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run."}
            },
            "required": ["command"]
        });
        if self.jobs.is_some() {
            description.push_str(BACKGROUND);
            parameters["properties"]["background"] = serde_json::json!({"type": "boolean"});
        }
        ToolSpec {
            name: ROW.name.to_string(),
            description,
            parameters,
        }
    }

    /// The command line.
    fn subject(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Subject {
        match args.get("command").and_then(serde_json::Value::as_str) {
            Some(command) => Subject::Command(command.to_string()),
            None => Subject::None,
        }
    }

    async fn plan(&self, args: &serde_json::Value, _ctx: &ToolContext) -> Result<Plan, String> {
        let args: BashArgs = parse_args(&ROW.name, args)?;
        Ok(ROW.plan(args.command))
    }

    async fn run(&self, args: &serde_json::Value, _plan: Plan, ctx: &ToolContext) -> ToolOutput {
        match parse_args::<BashArgs>(&ROW.name, args) {
            Ok(args) if args.background => match &self.jobs {
                Some(jobs) => self.start_job(jobs, &args.command, ctx).await,
                None => ToolOutput::fail(NO_BACKGROUND),
            },
            Ok(args) => self.run_command(&args.command, ctx).await,
            Err(text) => ToolOutput::fail(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_texts() {
        assert_eq!(exit_suffix(ExitStatus::from_raw(0)), "");
        assert_eq!(
            exit_suffix(ExitStatus::from_raw(5 << 8)),
            "[exit code: exit status 5]"
        );
        assert_eq!(
            exit_suffix(ExitStatus::from_raw(9)),
            "[exit code: killed by signal 9 (SIGKILL)]"
        );
        assert_eq!(
            exit_suffix(ExitStatus::from_raw(15)),
            "[exit code: killed by signal 15 (SIGTERM)]"
        );
        assert_eq!(
            timeout_text(Duration::from_secs(30)),
            "[error: 30s timeout exceeded]"
        );
        assert_eq!(
            timeout_text(Duration::from_millis(1500)),
            "[error: 1.5s timeout exceeded]"
        );
    }

    #[test]
    fn registry_tracks_and_forgets() {
        let r = ProcessRegistry::new();
        {
            // A pgid that cannot exist: killing it is a harmless ESRCH.
            let mut g = GroupGuard::new(i32::MAX - 7, r.clone());
            assert_eq!(r.running(), vec![i32::MAX - 7]);
            g.kill();
            assert!(r.running().is_empty());
            g.kill();
        }
        let _g = GroupGuard::new(i32::MAX - 8, r.clone());
        assert_eq!(r.kill_all(), 1);
        assert!(r.running().is_empty());
    }
}
