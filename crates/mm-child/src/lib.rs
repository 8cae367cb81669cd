//! mm-child: children that die with mm. When mm ends, however it ends,
//! what it started ends too: language servers (mm-lsp), `bash` commands
//! (mm-tools) and MCP servers (mm-mcp) all start through here.
//!
//! Two mechanisms. [`die_with_parent`] sets the parent-death signal on the
//! process mm starts; Linux clears it in every process that one forks, so
//! [`DeathGuard`] covers the rest: a small process in the child's process
//! group that kills the whole group once mm is gone.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::io;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

/// What the guard runs: wait for end-of-file on stdin (mm died, or the
/// guard was dropped), then kill its own process group.
const GUARD_SCRIPT: &str = "read -r _; kill -KILL 0";

/// A process in a child's process group, blocked reading a pipe whose write
/// end only mm holds. When mm dies, however it dies, the kernel closes that
/// end, the read returns, and the guard kills the whole group with itself.
/// Killing the group at a normal end kills the guard too. A process that
/// leaves the group (`setsid`) escapes by design.
pub struct DeathGuard {
    child: tokio::process::Child,
    /// Closed when mm dies, or when the guard is dropped.
    _alarm: OwnedFd,
}

impl DeathGuard {
    /// Start the guard (`bash`, empty environment but `PATH`, in `/`, no
    /// parent-death signal: it must outlive mm to do its job) in process
    /// group `pgid`, which must exist (a leader not yet waited for counts).
    pub fn spawn(pgid: i32) -> io::Result<DeathGuard> {
        // Both ends close on exec: no child of mm inherits the write end
        // (the guard itself gets the read end as its stdin).
        let (reader, writer) = io::pipe()?;
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(GUARD_SCRIPT)
            // No key in an environment the group could read from /proc.
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::from(reader))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(pgid)
            .kill_on_drop(true);
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        let child = cmd.spawn();
        // Our copy of the read end must not outlive the spawn.
        drop(cmd);
        Ok(DeathGuard {
            child: child?,
            _alarm: OwnedFd::from(writer),
        })
    }

    /// The guard's process id.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Once its group was killed: wait for the guard (bounded), so that no
    /// zombie is left, then close the pipe.
    pub async fn reap(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }
}

/// Run in a child between fork and exec (`CommandExt::pre_exec`): set the
/// parent-death signal so the child is killed when mm dies, and refuse to
/// run orphaned if mm died before that. `parent` is mm's pid, read before
/// the fork. Linux ties the signal to the spawning thread, so spawn from a
/// runtime worker (alive as long as the runtime), never a short-lived
/// blocking thread.
pub fn die_with_parent(parent: u32) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_PDEATHSIG takes plain integers and is
        // async-signal-safe.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            )
        };
        if rc == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid is always safe.
        if unsafe { libc::getppid() } as u32 != parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = parent;
    Ok(())
}

/// A command for a child mm talks to over pipes (a language server, an MCP
/// server, a hook): stdin, stdout and stderr piped, its own process group,
/// killed when its handle is dropped and when mm dies.
pub fn piped(program: impl AsRef<std::ffi::OsStr>) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls
    // async-signal-safe functions (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || die_with_parent(parent));
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[tokio::test]
    async fn the_group_dies_when_the_pipe_closes() {
        let mut leader = tokio::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pgid = leader.id().unwrap() as i32;
        let DeathGuard { mut child, _alarm } = DeathGuard::spawn(pgid).unwrap();
        // The guard waits while the pipe is open.
        let waited = tokio::time::timeout(Duration::from_millis(300), leader.wait()).await;
        assert!(waited.is_err(), "the group died early: {waited:?}");
        // What the kernel does when mm dies.
        drop(_alarm);
        let bound = Duration::from_secs(5);
        let status = tokio::time::timeout(bound, leader.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        let status = tokio::time::timeout(bound, child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }

    #[tokio::test]
    async fn the_guard_keeps_no_key_in_its_environment() {
        let mut leader = tokio::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let guard = DeathGuard::spawn(leader.id().unwrap() as i32).unwrap();
        let pid = guard.id().unwrap();
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let names: Vec<String> = env
            .split(|b| *b == 0)
            .filter(|v| !v.is_empty())
            .map(|v| {
                String::from_utf8_lossy(v)
                    .split('=')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        assert!(names.iter().all(|n| n == "PATH"), "{names:?}");
        // SAFETY: killpg has no memory effects.
        unsafe { libc::killpg(leader.id().unwrap() as i32, libc::SIGKILL) };
        let _ = leader.wait().await;
        guard.reap().await;
    }
}
