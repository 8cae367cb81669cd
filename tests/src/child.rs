//! Running a built binary the way a user does, with a hard bound: the fault
//! suite must fail, never hang, when a binary misbehaves. A run that
//! overruns its bound is killed (its whole process group) and reported.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long the output pipes may stay open after the process ended: longer
/// means a descendant kept them, which is a leak the suite reports.
const PIPE_GRACE: Duration = Duration::from_secs(5);

/// A finished run: how it ended, what it printed, what it cost.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    /// Lossily decoded: assertions read it as text.
    pub stderr: String,
    pub wall: Duration,
    /// Peak resident set of the process (and of the descendants it
    /// reaped), KiB, from `wait4`.
    pub max_rss_kib: u64,
}

impl Finished {
    /// stdout as text (lossy).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The non-empty lines of stderr.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }

    /// One line for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "code {:?}, signal {:?}, {:?}, stdout {:?}, stderr {:?}",
            self.code,
            self.signal,
            self.wall,
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        )
    }
}

/// A child started with [`Running::spawn`]: in its own process group, stdin
/// from `/dev/null`, stdout and stderr read on threads so it never blocks on
/// a full pipe.
#[derive(Debug)]
pub struct Running {
    pid: libc::pid_t,
    stdout: Receiver<Vec<u8>>,
    stderr: Receiver<Vec<u8>>,
    start: Instant,
}

fn drain<R: Read + Send + 'static>(mut pipe: R) -> Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// The status and cost of `pid` once it ended, or `None` when it is still
/// running at `deadline`. Polls `wait4` without blocking.
pub fn wait_until(
    pid: libc::pid_t,
    deadline: Instant,
) -> Result<Option<(libc::c_int, libc::rusage)>, String> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is plain data that wait4 fills.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pid is our own child; status and usage are valid pointers.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if rc == pid {
            return Ok(Some((status, usage)));
        }
        if rc < 0 {
            return Err(format!("wait4({pid}): {}", std::io::Error::last_os_error()));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Kill the process group `pgid` (our children lead their own).
pub fn kill_group(pgid: libc::pid_t) {
    // SAFETY: a plain signal send; a group that is gone gives ESRCH.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

impl Running {
    /// Start `cmd` (stdin `/dev/null` unless the caller set it, stdout and
    /// stderr captured) in a process group of its own.
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Running> {
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let start = Instant::now();
        let mut child = cmd.spawn()?;
        let out: Option<ChildStdout> = child.stdout.take();
        let err: Option<ChildStderr> = child.stderr.take();
        let (Some(out), Some(err)) = (out, err) else {
            return Err(std::io::Error::other("no pipes"));
        };
        Ok(Running {
            pid: child.id() as libc::pid_t,
            stdout: drain(out),
            stderr: drain(err),
            start,
        })
    }

    /// The child's process id.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// True once the process has ended (a zombie not yet reaped counts as
    /// ended): lets a watcher stop waiting for something that never comes.
    pub fn has_ended(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(stat) => stat
                .rsplit_once(')')
                .is_none_or(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => true,
        }
    }

    /// `kill -9` the process itself (not its group), as a user would.
    pub fn kill9(&self) {
        // SAFETY: a plain signal send to our own, not yet reaped, child.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
        }
    }

    /// Wait at most `limit` for the end. On overrun the whole group is
    /// killed and the error says what it printed so far.
    pub fn wait(self, limit: Duration) -> Result<Finished, String> {
        let deadline = self.start + limit;
        let ended = wait_until(self.pid, deadline)?;
        let overran = ended.is_none();
        let (status, usage) = match ended {
            Some(done) => done,
            None => {
                kill_group(self.pid);
                wait_until(self.pid, Instant::now() + Duration::from_secs(10))?
                    .ok_or_else(|| format!("pid {} survived SIGKILL", self.pid))?
            }
        };
        let wall = self.start.elapsed();
        let stdout = self.stdout.recv_timeout(PIPE_GRACE);
        let stderr = self.stderr.recv_timeout(PIPE_GRACE);
        if overran {
            // The group is dead now, so the pipes have closed.
            return Err(format!(
                "overran {limit:?} and was killed; stdout {:?}; stderr {:?}",
                String::from_utf8_lossy(&stdout.unwrap_or_default()),
                String::from_utf8_lossy(&stderr.unwrap_or_default())
            ));
        }
        let (Ok(stdout), Ok(stderr)) = (stdout, stderr) else {
            kill_group(self.pid);
            return Err(format!(
                "ended after {wall:?} but a descendant kept its stdout/stderr open"
            ));
        };
        let exited = libc::WIFEXITED(status);
        let signaled = libc::WIFSIGNALED(status);
        Ok(Finished {
            code: exited.then(|| libc::WEXITSTATUS(status)),
            signal: signaled.then(|| libc::WTERMSIG(status)),
            stdout,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            wall,
            max_rss_kib: usage.ru_maxrss as u64,
        })
    }
}

/// Every live process whose environment holds `key=value`, except `not`:
/// how the suite finds what a tool left behind, whatever it was called.
pub fn processes_with_env(key: &str, value: &str, not: &[libc::pid_t]) -> Vec<libc::pid_t> {
    mm_test_support::procs::with_env(key, value)
        .into_iter()
        .filter(|pid| !not.contains(pid))
        .collect()
}

/// `<dir>/<name>` of the workspace's built binary `name`, next to the
/// running test executable (`target/<profile>/deps/…` → `target/<profile>`).
/// When it is missing it is built once (`cargo build -p <name> --bin
/// <name>`), with the profile of the tests.
pub fn built_binary(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} has no grandparent", exe.display()))?;
    let path = dir.join(name);
    if path.is_file() {
        return Ok(path);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--quiet",
        "-p",
        name,
        "--bin",
        name,
        "--manifest-path",
    ])
    .arg(&manifest);
    if dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    if let Some(target) = dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() || !path.is_file() {
        return Err(format!("cargo build -p {name} failed ({status})"));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_overruns_is_killed_and_reported() {
        let run = Running::spawn(Command::new("sleep").arg("30").stdin(Stdio::null())).unwrap();
        let pid = run.pid();
        assert!(!run.has_ended());
        let err = run.wait(Duration::from_millis(200)).unwrap_err();
        assert!(err.contains("overran"), "{err}");
        // SAFETY: probing with signal 0 only.
        assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "the child is still alive");
    }

    #[test]
    fn exit_code_output_and_cost_are_reported() {
        let run = Running::spawn(
            Command::new("bash")
                .args(["-c", "echo out; echo err >&2; exit 3"])
                .stdin(Stdio::null()),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !run.has_ended() {
            assert!(Instant::now() < deadline, "bash did not end");
            std::thread::sleep(Duration::from_millis(5));
        }
        let done = run.wait(Duration::from_secs(10)).unwrap();
        assert_eq!(done.code, Some(3));
        assert_eq!(done.signal, None);
        assert_eq!(done.stdout_text(), "out\n");
        assert_eq!(done.stderr_lines(), vec!["err"]);
        assert!(done.max_rss_kib > 0);
    }

    #[test]
    fn a_descendant_holding_the_pipe_is_a_failure() {
        let run = Running::spawn(
            Command::new("bash")
                .args(["-c", "sleep 30 & exit 0"])
                .stdin(Stdio::null()),
        )
        .unwrap();
        let pid = run.pid();
        let err = run.wait(Duration::from_secs(20)).unwrap_err();
        assert!(err.contains("kept its stdout"), "{err}");
        kill_group(pid);
    }

    #[test]
    fn processes_are_found_by_their_environment() {
        let mark = format!("{}-{:?}", std::process::id(), Instant::now());
        let mut child = Command::new("sleep")
            .arg("30")
            .env("MM_TEST_MARK", &mark)
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        let deadline = Instant::now() + Duration::from_secs(5);
        while processes_with_env("MM_TEST_MARK", &mark, &[]).is_empty() {
            assert!(Instant::now() < deadline, "not found");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(processes_with_env("MM_TEST_MARK", &mark, &[]), vec![pid]);
        assert!(processes_with_env("MM_TEST_MARK", &mark, &[pid]).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(processes_with_env("MM_TEST_MARK", &mark, &[]).is_empty());
    }
}
