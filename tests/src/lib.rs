//! mm-tests: end-to-end tests across mm's binaries (`tests/`), the fault
//! suite, and the whole-process benchmark (`mm-bench`). Nothing here ships.
//!
//! The library part holds what those share: running a child process and
//! measuring its wall time, CPU time and peak memory.

pub mod child;
pub mod diagram;
pub mod docs;
pub mod llama;
pub mod sandbox;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of a child process cost.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    pub wall: Duration,
    pub cpu: Duration,
    /// Peak resident set, KiB.
    pub max_rss_kib: u64,
    pub success: bool,
}

/// Run `cmd` to the end (stdout and stderr discarded) and measure it with
/// `wait4`, which reports the child's own CPU time and peak RSS.
pub fn measure(cmd: &mut Command) -> std::io::Result<Cost> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let start = Instant::now();
    let child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, status and usage are valid out-pointers.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Ok(Cost {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss as u64,
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    })
}

/// The median of several runs, by wall time (CPU and RSS of the same run).
pub fn median(mut costs: Vec<Cost>) -> Option<Cost> {
    costs.sort_by_key(|c| c.wall);
    costs.get(costs.len() / 2).copied()
}
