//! Children that die with mm (decisions.md 13): language servers here, and
//! `bash` commands in mm-tools, which stands on this crate.

use std::io;

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
