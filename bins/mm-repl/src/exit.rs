//! Leaving cleanly, whatever the reason (docs/design.md#killing-on-exit):
//! on exit, SIGTERM, SIGHUP or a panic every running tool process group is
//! killed and the terminal is put back as it was found.
//!
//! `mm_agent::shutdown` kills the groups the tools registered. As a second
//! net, the children are also found the way the kernel knows them: every
//! process whose parent is this one (a `bash` call, a language server) has
//! its process group killed — each tool call runs in a group of its own, so
//! what it started dies with it.

use std::sync::OnceLock;

static TERMIOS: OnceLock<libc::termios> = OnceLock::new();

/// Remember the terminal settings of stdin, to restore them on any exit.
pub fn save_terminal() {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return;
    }
    // SAFETY: termios is plain old data; tcgetattr fills it or fails.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: fd 0 is open (it is a terminal) and `t` is a valid pointer.
    if unsafe { libc::tcgetattr(0, &mut t) } == 0 {
        let _ = TERMIOS.set(t);
    }
}

/// Put the terminal back as it was at start (raw mode off, echo on).
pub fn restore_terminal() {
    if let Some(t) = TERMIOS.get() {
        // SAFETY: `t` came from tcgetattr on the same descriptor.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, t);
        }
    }
}

/// `(pid, parent pid, process group)` from the text of `/proc/<pid>/stat`.
pub fn parse_stat(stat: &str) -> Option<(i32, i32, i32)> {
    let pid = stat.split_whitespace().next()?.parse().ok()?;
    // The command name is in parentheses and may hold spaces or `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((pid, ppid, pgrp))
}

/// Whether this process has any child, running or exited, asked without
/// reaping one (`WNOWAIT`): the full scan of `/proc` below is then skipped
/// for the common one-shot answer that started nothing.
fn has_children() -> bool {
    // SAFETY: siginfo_t is plain old data; waitid fills it or fails.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to `info`; WNOHANG never blocks, WNOWAIT
    // leaves an exited child for whoever waits for it.
    let rc = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    !(rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// This process's children as the kernel lists them per thread
/// (`/proc/self/task/<tid>/children`, where the kernel offers it): a few
/// small reads instead of one per process of the machine.
fn listed_children() -> Option<Vec<i32>> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .ok()?
        .filter_map(Result::ok)
    {
        let list = std::fs::read_to_string(task.path().join("children")).ok()?;
        children.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    Some(children)
}

/// Kill `pid` with its process group when that group is its own.
fn kill_with_group(pid: i32, my_group: i32) {
    // SAFETY: getpgid has no memory effects; a vanished process gives -1.
    let pgrp = unsafe { libc::getpgid(pid) };
    // SAFETY: plain signal sends; a vanished process only gives ESRCH.
    unsafe {
        if pgrp > 1 && pgrp != my_group {
            libc::killpg(pgrp, libc::SIGKILL);
        } else {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Kill every child process of this one with its process group.
pub fn kill_children() {
    let me = std::process::id() as i32;
    // SAFETY: getpgrp has no preconditions.
    let my_group = unsafe { libc::getpgrp() };
    if !has_children() {
        return;
    }
    if let Some(children) = listed_children() {
        for pid in children {
            kill_with_group(pid, my_group);
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((pid, ppid, pgrp)) = parse_stat(&stat) else {
            continue;
        };
        if ppid != me {
            continue;
        }
        // SAFETY: plain signal sends; a vanished process only gives ESRCH.
        unsafe {
            if pgrp > 1 && pgrp != my_group {
                libc::killpg(pgrp, libc::SIGKILL);
            } else {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Everything that must happen before the process ends.
pub fn shutdown() {
    mm_agent::shutdown();
    kill_children();
    let _ = crossterm::terminal::disable_raw_mode();
    restore_terminal();
}

/// On SIGTERM or SIGHUP: shut down and exit with 128 + the signal.
pub fn spawn_signal_handler() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::warn!("cannot watch SIGTERM/SIGHUP");
        return;
    };
    tokio::spawn(async move {
        let code = tokio::select! {
            _ = term.recv() => 128 + libc::SIGTERM,
            _ = hup.recv() => 128 + libc::SIGHUP,
        };
        tracing::info!("signal received; exiting with {code}");
        shutdown();
        std::process::exit(code);
    });
}

/// A panic kills the children and restores the terminal before the usual
/// report.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        shutdown();
        default(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_command_names() {
        assert_eq!(parse_stat("42 (sleep) S 7 42 7 0 -1"), Some((42, 7, 42)));
        assert_eq!(parse_stat("43 (a b) c) R 1 43 1"), Some((43, 1, 43)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_child_is_seen_without_being_reaped() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        // Exited or not, it is a child until someone waits for it.
        assert!(has_children());
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn children_die_with_their_group() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("bash")
            .args(["-c", "sleep 60 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = child.id() as i32;
        std::thread::sleep(std::time::Duration::from_millis(200));
        kill_children();
        let status = child.wait().unwrap();
        assert!(!status.success());
        // The background sleep was in the same group: nothing of it is left.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let alive = std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(Result::ok)
                .any(|e| {
                    std::fs::read_to_string(e.path().join("stat"))
                        .ok()
                        .filter(|s| !s.contains(") Z "))
                        .and_then(|s| parse_stat(&s))
                        .is_some_and(|(_, _, g)| g == group)
                });
            if !alive {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "group {group} survived"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
