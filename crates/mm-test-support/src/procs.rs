//! Scanners of `/proc`: which processes live, by command line, by
//! environment or by process group, and bounded waits for them to go. A
//! zombie counts as gone: it runs nothing.

use std::time::Duration;

use crate::wait::wait_for;

/// What `/proc/<pid>/stat` says of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `Z`, …
    pub state: char,
    /// The parent's id.
    pub ppid: i32,
    /// The process group.
    pub pgrp: i32,
}

/// The stat of `pid`, when it exists.
pub fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parens.
    let mut fields = text[text.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// Whether `pid` runs (exists and is neither a zombie nor dead).
pub fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| !matches!(s.state, 'Z' | 'X'))
}

/// The ids of every process that runs.
pub fn live() -> Vec<i32> {
    let mut pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|pid| alive(*pid))
        .collect();
    pids.sort_unstable();
    pids
}

/// The command line of `pid`, its arguments joined by spaces.
pub fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(String::from_utf8_lossy(&raw).replace('\0', " "))
}

/// Running processes whose command line contains `marker`, each as
/// `/proc/<pid>: <command line>` for a failure message.
pub fn with_cmdline(marker: &str) -> Vec<String> {
    live()
        .into_iter()
        .filter_map(|pid| {
            let line = cmdline(pid)?;
            line.contains(marker)
                .then(|| format!("/proc/{pid}: {line}"))
        })
        .collect()
}

/// Running processes whose command line is exactly `argv`, with their
/// process group.
pub fn with_argv(argv: &[&str]) -> Vec<(i32, i32)> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    live()
        .into_iter()
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .filter_map(|pid| Some((pid, stat(pid)?.pgrp)))
        .collect()
}

/// Running processes whose environment holds `var=value`.
pub fn with_env(var: &str, value: &str) -> Vec<i32> {
    let needle = format!("{var}={value}").into_bytes();
    live()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == needle.as_slice()))
        })
        .collect()
}

/// Running members of process group `pgrp`.
pub fn group_members(pgrp: i32) -> Vec<i32> {
    live()
        .into_iter()
        .filter(|pid| stat(*pid).is_some_and(|s| s.pgrp == pgrp))
        .collect()
}

/// Wait (up to `bound`) until `pid` no longer runs; whether it stopped.
pub fn wait_gone(pid: i32, bound: Duration) -> bool {
    wait_for(bound, || !alive(pid))
}

/// Wait (up to `bound`) until no process of group `pgrp` runs (killed
/// ones may take a moment to be reaped by their new parent); fail the test
/// with the ones left when some still run.
pub fn assert_group_gone(pgrp: i32, bound: Duration) {
    if !wait_for(bound, || group_members(pgrp).is_empty()) {
        panic!(
            "processes of group {pgrp} still alive: {:?}",
            group_members(pgrp)
        );
    }
}

/// A field of this process's `/proc/self/status` (`VmHWM`, `Umask`, …),
/// its value trimmed (`1234 kB`).
pub fn self_status(field: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_by_its_argv_its_env_and_its_group_until_it_is_gone() {
        let mark = format!("mm-test-support-{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("MM_PROCS_MARK", &mark)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(alive(pid));
        // The parent of a vfork-style spawn resumes when the child's new
        // image replaces the old one, a moment before the kernel records
        // where its arguments and environment lie: until then both read
        // empty. So the scanners are asked until they see it.
        let bound = Duration::from_secs(5);
        assert!(wait_for(bound, || with_env("MM_PROCS_MARK", &mark).contains(&pid)));
        assert!(wait_for(bound, || with_argv(&["sleep", "30"])
            .iter()
            .any(|(p, _)| *p == pid)));
        assert!(wait_for(bound, || with_cmdline("sleep 30")
            .iter()
            .any(|l| l.contains(&format!("/proc/{pid}:")))));
        let me = stat(std::process::id() as i32).unwrap();
        assert!(group_members(me.pgrp).contains(&pid));
        child.kill().unwrap();
        // A zombie until it is reaped: gone already.
        assert!(wait_gone(pid, Duration::from_secs(5)));
        child.wait().unwrap();
        assert!(with_env("MM_PROCS_MARK", &mark).is_empty());
        assert!(self_status("VmHWM").ends_with("kB"));
    }
}
