//! Background commands: `bash` with `"background": true` starts the
//! command as a job of the session and returns after its first output
//! (at most [`FIRST_LOOK`]); `job_output` reads what it printed since, and
//! `job_kill` ends it (docs/reference/tools.md#background-commands).
//!
//! A job runs like any `bash` command (its own process group, the
//! sandbox, no stdin, the keys left out of its environment and redacted
//! from its output) but without the timeout. Its output waits in a
//! bounded buffer: past the budget of the call that started it the older
//! part is dropped and the next look starts with
//! `[… N characters dropped …]`. When `bash` ends, the rest of its group
//! is killed, as for a command in the foreground.
//!
//! No job outlives its session: [`Jobs::kill_all`] runs on `/new` and when
//! the session ends, and dropping the [`Jobs`] kills what still runs. Each
//! group is also in the process-wide registry that mm empties on exit and
//! SIGTERM, and has a death guard for the case mm is killed outright.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mm_child::DeathGuard;
use mm_redact::Redactor;
use tokio::net::unix::pipe;
use tokio::sync::watch;
use tokio::time::Instant;

use super::output::LossyDecoder;
use super::{
    Bash, CANCELLED, DRAIN, ProcessRegistry, READ_CHUNK, kill_group, read_some,
    sandbox_unavailable, signal_name,
};
use crate::output::fit;
use crate::tool::{ToolContext, ToolOutput};

/// How long the starting call waits for the job's first output.
pub const FIRST_LOOK: Duration = Duration::from_secs(2);

/// How long `job_kill` waits after SIGTERM before it sends SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// The jobs of one session. Share it behind an `Arc` between `bash`, the
/// job tools and the agent (`/jobs`).
#[derive(Debug, Default)]
pub struct Jobs {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u32,
    list: Vec<Arc<Job>>,
}

/// One background command.
#[derive(Debug)]
struct Job {
    id: u32,
    command: String,
    pgid: i32,
    started: Instant,
    registry: ProcessRegistry,
    buffer: Mutex<Buffer>,
    /// `Some(end text)` once `bash` ended and its group was killed.
    ended: watch::Sender<Option<String>>,
}

/// Output not looked at yet: at most `cap` characters, the older part
/// dropped and counted.
#[derive(Debug)]
struct Buffer {
    text: String,
    chars: usize,
    dropped: u64,
    cap: usize,
}

impl Buffer {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.chars += s.chars().count();
        if self.chars > self.cap {
            let extra = self.chars - self.cap;
            let cut = self
                .text
                .char_indices()
                .nth(extra)
                .map_or(self.text.len(), |(at, _)| at);
            self.text.drain(..cut);
            self.chars -= extra;
            self.dropped += extra as u64;
        }
    }

    /// What arrived since the last look, the dropped part's marker first.
    fn take(&mut self) -> String {
        let mut out = String::new();
        if self.dropped > 0 {
            out = format!("[… {} characters dropped …]\n", self.dropped);
        }
        out.push_str(&self.text);
        self.text.clear();
        self.chars = 0;
        self.dropped = 0;
        out
    }
}

/// A job as `/jobs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// Its number in the session (`job_output {"id": 1}`).
    pub id: u32,
    /// The command line.
    pub command: String,
    /// `None` while it runs, else how it ended (`exit status 0`,
    /// `killed by signal 15 (SIGTERM)`).
    pub ended: Option<String>,
    /// Time since it started.
    pub age: Duration,
}

impl Jobs {
    /// No jobs yet.
    pub fn new() -> Self {
        Jobs::default()
    }

    /// Every job of the session, oldest first.
    pub fn list(&self) -> Vec<JobInfo> {
        self.lock()
            .list
            .iter()
            .map(|j| JobInfo {
                id: j.id,
                command: j.command.clone(),
                ended: j.ended.borrow().clone(),
                age: j.started.elapsed(),
            })
            .collect()
    }

    /// Kill every job still running at once (SIGKILL to each group):
    /// `/new`, and the end of the session. Returns how many ran.
    pub fn kill_all(&self) -> usize {
        let list = self.lock().list.clone();
        let mut n = 0;
        for job in list.iter().filter(|j| j.ended.borrow().is_none()) {
            job.kill_now(libc::SIGKILL);
            n += 1;
        }
        n
    }

    /// `job_output`: what job `id` printed since the last look, then its
    /// state on a line of its own.
    pub fn output(&self, id: u32) -> ToolOutput {
        let Some(job) = self.find(id) else {
            return ToolOutput::fail(self.unknown(id));
        };
        let ended = job.ended.borrow().clone();
        let text = job.take();
        let state = match ended {
            Some(end) => format!("[job {id} ended: {end}"),
            None => format!("[job {id} running for {}", age(job.started.elapsed())),
        };
        let state = if text.is_empty() {
            format!("{state}; no new output]")
        } else {
            format!("{state}]")
        };
        ToolOutput::ok(with_line(text, &state))
    }

    /// `job_kill` and `/jobs kill N`: SIGTERM to the job's group, SIGKILL
    /// after 2 s if `bash` is still there; the output not read yet,
    /// then how it ended.
    pub async fn kill(&self, id: u32) -> ToolOutput {
        let Some(job) = self.find(id) else {
            return ToolOutput::fail(self.unknown(id));
        };
        if let Some(end) = job.ended.borrow().clone() {
            return ToolOutput::ok(with_line(
                job.take(),
                &format!("[job {id} had already ended: {end}]"),
            ));
        }
        job.kill_now(libc::SIGTERM);
        let mut ended = job.ended.subscribe();
        if !wait_end(&mut ended, GRACE).await {
            job.kill_now(libc::SIGKILL);
            wait_end(&mut ended, GRACE).await;
        }
        let end = job
            .ended
            .borrow()
            .clone()
            .unwrap_or_else(|| "killed by signal 9 (SIGKILL)".to_string());
        ToolOutput::ok(with_line(job.take(), &format!("[job {id} ended: {end}]")))
    }

    fn find(&self, id: u32) -> Option<Arc<Job>> {
        self.lock().list.iter().find(|j| j.id == id).cloned()
    }

    /// `no job 7; jobs: 1 (running), 2 (ended)`.
    fn unknown(&self, id: u32) -> String {
        let list = self.list();
        if list.is_empty() {
            return format!("no job {id}; no background job was started in this session");
        }
        let known: Vec<String> = list
            .iter()
            .map(|j| {
                let state = if j.ended.is_some() {
                    "ended"
                } else {
                    "running"
                };
                format!("{} ({state})", j.id)
            })
            .collect();
        format!("no job {id}; jobs: {}", known.join(", "))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Jobs {
    /// The session is gone: so are its jobs.
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Job {
    fn take(&self) -> String {
        self.buffer.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn push(&self, s: &str) {
        self.buffer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(s);
    }

    /// Signal the whole group, unless it ended already (its id may be
    /// another group's by now).
    fn kill_now(&self, signal: i32) {
        if self.ended.borrow().is_none() && self.pgid > 1 {
            // SAFETY: killpg has no memory effects; a stale id gives ESRCH.
            unsafe {
                libc::killpg(self.pgid, signal);
            }
        }
    }
}

/// Wait at most `limit` for the job to end; true when it did.
async fn wait_end(ended: &mut watch::Receiver<Option<String>>, limit: Duration) -> bool {
    let wait = async { ended.wait_for(Option::is_some).await.is_ok() };
    matches!(tokio::time::timeout(limit, wait).await, Ok(true))
}

/// `text`, then `line` on a line of its own.
fn with_line(mut text: String, line: &str) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text
}

/// `12s`, `3m 5s`, `2h 10m`: how long ago, for the model and `/jobs`.
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, s / 60 % 60),
    }
}

/// How `bash` ended, as job texts say it: `exit status 0`,
/// `killed by signal 15 (SIGTERM)`.
fn end_text(status: std::io::Result<ExitStatus>) -> String {
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(sig)) => format!("killed by signal {sig} ({})", signal_name(sig)),
            (None, None) => "ended".to_string(),
        },
        Err(e) => format!("could not wait for bash: {e}"),
    }
}

impl Bash {
    /// Start `command` as a background job of `jobs` and answer with its
    /// first output: until it ends, or [`FIRST_LOOK`] passed.
    pub(crate) async fn start_job(
        &self,
        jobs: &Arc<Jobs>,
        command: &str,
        ctx: &ToolContext,
    ) -> ToolOutput {
        let max = ctx.max_output;
        let confinement = match ctx.permissions.sandbox().prepare() {
            Ok(c) => c,
            Err(why) => return ToolOutput::fail(fit("", &sandbox_unavailable(&why), max)),
        };
        let (reader, mut child) = match self.spawn(command, ctx, confinement) {
            Ok(started) => started,
            Err(e) => {
                let why = ctx.cwd_gone().unwrap_or_else(|| e.to_string());
                return ToolOutput::fail(format!("[error: could not start bash: {why}]"));
            }
        };
        let Some(pid) = child.id() else {
            return ToolOutput::fail("[error: could not start bash: no process id]");
        };
        let pgid = pid as i32;
        self.registry.insert(pgid);
        let death_guard = DeathGuard::spawn(pgid)
            .map_err(|e| tracing::warn!("bash: no guard for a background job: {e}"))
            .ok();
        let (ended, _) = watch::channel(None);
        let job = {
            let mut inner = jobs.lock();
            inner.next += 1;
            let job = Arc::new(Job {
                id: inner.next,
                command: command.to_string(),
                pgid,
                started: Instant::now(),
                registry: self.registry.clone(),
                buffer: Mutex::new(Buffer {
                    text: String::new(),
                    chars: 0,
                    dropped: 0,
                    cap: max,
                }),
                ended,
            });
            inner.list.push(job.clone());
            job
        };
        let rx = pipe::Receiver::from_owned_fd(reader)
            .map_err(|e| tracing::warn!("bash: cannot read a job's output: {e}"))
            .ok();
        let secrets = self.settings.secrets.clone();
        let runner = job.clone();
        tokio::spawn(async move {
            let status = follow(&runner, rx, &mut child, &secrets).await;
            kill_group(runner.pgid);
            runner.registry.remove(runner.pgid);
            if let Some(g) = death_guard {
                g.reap().await;
            }
            runner.ended.send_replace(Some(end_text(status)));
        });

        let id = job.id;
        let mut ended = job.ended.subscribe();
        tokio::select! {
            _ = wait_end(&mut ended, FIRST_LOOK) => {}
            _ = ctx.cancel.cancelled() => {
                jobs.kill(id).await;
                return ToolOutput::fail(with_line(job.take(), CANCELLED));
            }
        }
        let text = job.take();
        let end = job.ended.borrow().clone();
        match end {
            None => ToolOutput::ok(with_line(
                text,
                &format!(
                    "[job {id} runs in the background: job_output {{\"id\": {id}}} shows what it \
                     prints next, job_kill {{\"id\": {id}}} stops it]"
                ),
            )),
            Some(end) => ToolOutput {
                failed: end != "exit status 0",
                text: with_line(text, &format!("[job {id} ended: {end}]")),
                images: Vec::new(),
            },
        }
    }
}

/// Read the job's output into its buffer until `bash` exits, then what the
/// group still buffers for [`DRAIN`]; returns how `bash` ended.
async fn follow(
    job: &Job,
    mut rx: Option<pipe::Receiver>,
    child: &mut tokio::process::Child,
    secrets: &[String],
) -> std::io::Result<ExitStatus> {
    let mut decoder = LossyDecoder::default();
    let mut redactor = Redactor::new(secrets);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut text = String::new();
    let mut push = |bytes: &[u8], decoder: &mut LossyDecoder, redactor: &mut Redactor| {
        text.clear();
        decoder.push(bytes, &mut text);
        redactor.push(&text, &mut |s: &str| job.push(s));
    };
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            read = read_some(&mut rx, &mut buf) => match read {
                Some(n) => push(&buf[..n], &mut decoder, &mut redactor),
                None => rx = None,
            },
        }
    };
    let until = Instant::now() + DRAIN;
    while rx.is_some() {
        tokio::select! {
            _ = tokio::time::sleep_until(until) => break,
            read = read_some(&mut rx, &mut buf) => match read {
                Some(n) => push(&buf[..n], &mut decoder, &mut redactor),
                None => rx = None,
            },
        }
    }
    let mut rest = String::new();
    decoder.finish(&mut rest);
    redactor.push(&rest, &mut |s: &str| job.push(s));
    redactor.finish(&mut |s: &str| job.push(s));
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_keeps_the_newest_part_and_counts_the_rest() {
        let mut b = Buffer {
            text: String::new(),
            chars: 0,
            dropped: 0,
            cap: 5,
        };
        b.push("abc");
        b.push("défgh");
        assert_eq!(b.take(), "[… 3 characters dropped …]\ndéfgh");
        assert_eq!(b.take(), "");
        b.push("xy");
        assert_eq!(b.take(), "xy");
    }

    #[test]
    fn ages() {
        assert_eq!(age(Duration::from_secs(5)), "5s");
        assert_eq!(age(Duration::from_secs(185)), "3m 5s");
        assert_eq!(age(Duration::from_secs(7800)), "2h 10m");
    }
}
