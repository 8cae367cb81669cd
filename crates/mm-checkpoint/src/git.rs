//! Running the `git` on PATH so that nothing of the user's setup can steer it
//! somewhere else or make it run a program of theirs.
//!
//! Every variable whose name starts with `GIT_` is dropped from the child's
//! environment (`GIT_DIR`, `GIT_INDEX_FILE`, `GIT_WORK_TREE`,
//! `GIT_OBJECT_DIRECTORY`, `GIT_CONFIG_*` … in mm's own environment would
//! point git at another repository, index or configuration), and a few are
//! set instead. Hooks are pointed at an empty folder: `git update-index`
//! would otherwise run the repository's `post-index-change` hook. The
//! filesystem monitor, a program named in the configuration, is off too,
//! and so is every transport (no fetch of a missing object can start ssh
//! or a remote helper). Content filters are programs too:
//! [`filter_overrides`] turns off each one the configuration defines.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::CheckpointError;

/// Variables set for every git child, after every `GIT_*` one was removed.
const FIXED_ENV: &[(&str, &str)] = &[
    // Messages in English, so that "not a git repository" can be recognised.
    ("LC_ALL", "C"),
    // Never ask for a password, never fetch a missing object of a partial
    // clone from its remote, never take optional locks on the user's index,
    // never follow replacement refs when reading a tree.
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_NO_REPLACE_OBJECTS", "1"),
    // The values `--config-env` gives to the settings of
    // [`filter_overrides`] (a value after `-c` cannot follow a key that
    // holds `=`; `--config-env` splits at the last `=`).
    (EMPTY_VAR, ""),
    (FALSE_VAR, "false"),
];

/// An empty value for `--config-env`.
const EMPTY_VAR: &str = "MM_CHECKPOINT_EMPTY";
/// `false` for `--config-env`.
const FALSE_VAR: &str = "MM_CHECKPOINT_FALSE";

/// Settings given with `-c` to every git command; they override the user's
/// configuration for that command only and write nothing.
const FIXED_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.splitIndex=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.quotePath=false",
    "color.ui=never",
    "protocol.allow=never",
];

/// Settings for mm's private store (outside git): the bytes on disk are
/// recorded as they are, whatever the user's global configuration says.
pub(crate) const PRIVATE_CONFIG: &[&str] = &[
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.filemode=true",
    "core.symlinks=true",
    "core.ignorecase=false",
];

/// Settings that turn off every content filter named in `config` (the
/// output of `git config --list -z`): each driver's `clean`, `smudge` and
/// `process` commands emptied, `required` false, so git stores and writes
/// the bytes as they are and never starts a program of the repository's
/// (a `.gitattributes` line names the driver, the configuration its
/// command). Also the drivers' names, as `.gitattributes` spells them.
pub(crate) fn filter_overrides(config: &[u8]) -> (Vec<OsString>, Vec<Vec<u8>>) {
    let mut drivers: Vec<Vec<u8>> = crate::raw::names(config)
        .filter_map(|entry| {
            let key = entry.split(|b| *b == b'\n').next()?;
            let rest = key.strip_prefix(b"filter.")?;
            let dot = rest.iter().rposition(|b| *b == b'.')?;
            Some(rest[..dot].to_vec())
        })
        .collect();
    drivers.sort();
    drivers.dedup();
    let mut args = Vec::new();
    for d in &drivers {
        for (key, var) in [
            ("clean", EMPTY_VAR),
            ("smudge", EMPTY_VAR),
            ("process", EMPTY_VAR),
            ("required", FALSE_VAR),
        ] {
            let mut arg = OsString::from("--config-env=filter.");
            arg.push(OsStr::from_bytes(d));
            arg.push(format!(".{key}={var}"));
            args.push(arg);
        }
    }
    (args, drivers)
}

/// `env` without any variable that could steer git, plus [`FIXED_ENV`].
pub(crate) fn sanitized_env(
    env: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = env
        .into_iter()
        .filter(|(name, _)| {
            let n = name.as_bytes();
            !n.starts_with(b"GIT_") && !matches!(n, b"LC_ALL" | b"LANG" | b"LANGUAGE")
        })
        .collect();
    out.extend(
        FIXED_ENV
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    out
}

/// How to run git for one checkpointed tree.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    /// The environment of every child (already sanitized).
    pub env: Vec<(OsString, OsString)>,
    /// Where git runs: the top of the checkpointed tree.
    pub cwd: PathBuf,
    /// Arguments before the command: `--git-dir`/`--work-tree` and the
    /// private store's settings outside git; nothing in a repository.
    pub prefix: Vec<OsString>,
    /// Once set, the running command is killed and no other starts
    /// ([`CheckpointError::Stopped`]).
    pub stop: Option<Arc<AtomicBool>>,
}

/// One command about to run: its arguments, the index it uses, and the
/// empty hooks folder.
pub(crate) struct Run<'a> {
    git: &'a Git,
    index: Option<&'a Path>,
    hooks: &'a Path,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
}

impl Git {
    /// The same git with `args` before every command (settings given with
    /// `-c` or `--config-env`).
    pub fn with(&self, args: Vec<OsString>) -> Git {
        let mut prefix = args;
        prefix.extend(self.prefix.iter().cloned());
        Git {
            prefix,
            ..self.clone()
        }
    }

    /// A command `git <args>` whose hooks folder is `hooks` (an empty folder).
    pub fn run<'a, I, S>(&'a self, hooks: &'a Path, args: I) -> Run<'a>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Run {
            git: self,
            index: None,
            hooks,
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            stdin: None,
        }
    }
}

impl<'a> Run<'a> {
    /// Use this index file instead of any other (`GIT_INDEX_FILE`).
    pub fn index(mut self, index: &'a Path) -> Self {
        self.index = Some(index);
        self
    }

    /// Feed these bytes on stdin.
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// The command's name for messages: `git ls-files`.
    fn name(&self) -> String {
        let sub = self
            .args
            .iter()
            .find(|a| !a.to_string_lossy().starts_with('-'))
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("git {sub}")
    }

    /// Run it to the end; its stdout, or an error with its stderr.
    pub fn output(self) -> Result<Vec<u8>, CheckpointError> {
        let name = self.name();
        let mut cmd = Command::new("git");
        cmd.env_clear()
            .envs(self.git.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.git.cwd)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut hooks = OsString::from("core.hooksPath=");
        hooks.push(self.hooks);
        cmd.arg("-c").arg(hooks);
        for c in FIXED_CONFIG {
            cmd.arg("-c").arg(c);
        }
        cmd.args(&self.git.prefix);
        if let Some(index) = self.index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        cmd.args(&self.args);
        let stop = self.git.stop.as_deref();
        if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(CheckpointError::Stopped);
        }
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => CheckpointError::NoGit,
            _ => CheckpointError::io("git", e),
        })?;
        // Write stdin from a thread while the output is read, so that a
        // child filling its stdout pipe cannot block us both.
        let input = child.stdin.take();
        let out = std::thread::scope(|s| {
            if let (Some(mut pipe), Some(bytes)) = (input, self.stdin.as_deref()) {
                s.spawn(move || {
                    // A child that exits early closes the pipe; its exit
                    // status tells what went wrong.
                    let _ = pipe.write_all(bytes);
                });
            }
            match stop {
                Some(stop) => wait_unless_stopped(child, stop),
                None => child.wait_with_output().map(Some),
            }
        })
        .map_err(|e| CheckpointError::io("git", e))?;
        let Some(out) = out else {
            return Err(CheckpointError::Stopped);
        };
        if out.status.success() {
            return Ok(out.stdout);
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let message = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(4)
            .collect::<Vec<_>>()
            .join("; ");
        Err(CheckpointError::Git {
            command: name,
            message: if message.is_empty() {
                out.status.to_string()
            } else {
                message
            },
        })
    }
}

/// Wait for `child` as `wait_with_output` does, but kill it as soon as
/// `stop` is set (then `None`). Two threads read its output while this one
/// waits for it to exit without reaping it (`WNOWAIT`), and a third looks
/// at `stop` every 10 ms (woken at once by the exit). Until this one has
/// seen the exit and told it to end, the child's id cannot go to another
/// process, so the kill can only hit the child. The threads cost about
/// 2 ms a checkpoint (`cargo bench -p mm-checkpoint`).
fn wait_unless_stopped(mut child: Child, stop: &AtomicBool) -> std::io::Result<Option<Output>> {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    let exited = AtomicBool::new(false);
    let killed = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            while !exited.load(Ordering::SeqCst) {
                if stop.load(Ordering::SeqCst) {
                    // SAFETY: kill(2) on our own child, not yet reaped.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return true;
                }
                // Woken at once when the child exits.
                std::thread::park_timeout(Duration::from_millis(10));
            }
            false
        });
        let waited = wait_without_reaping(pid);
        exited.store(true, Ordering::SeqCst);
        watcher.thread().unpark();
        let killed = watcher.join().unwrap_or(false);
        waited.map(|()| killed)
    })?;
    let status = child.wait()?;
    if killed {
        return Ok(None);
    }
    Ok(Some(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }))
}

/// Block until child `pid` has exited, leaving it to be reaped.
fn wait_without_reaping(pid: libc::pid_t) -> std::io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain old data that waitid fills.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to `info`; WNOWAIT leaves the child
        // a zombie for `Child::wait`.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_kills_the_running_command_and_a_finished_one_gives_its_output() {
        let stop = AtomicBool::new(false);
        let child = Command::new("sh")
            .args(["-c", "echo out; echo err >&2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_unless_stopped(child, &stop).unwrap().unwrap();
        assert!(out.status.success());
        assert_eq!(
            (&out.stdout[..], &out.stderr[..]),
            (&b"out\n"[..], &b"err\n"[..])
        );
        let child = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let started = std::time::Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                stop.store(true, Ordering::SeqCst);
            });
            assert!(wait_unless_stopped(child, &stop).unwrap().is_none());
        });
        assert!(started.elapsed() < Duration::from_secs(10));
        // Killed and reaped: no such process any more.
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn git_variables_are_dropped_and_ours_set() {
        let env = [
            ("GIT_DIR", "/elsewhere/.git"),
            ("GIT_INDEX_FILE", "/elsewhere/index"),
            ("GIT_CONFIG_COUNT", "1"),
            ("LANG", "fr_FR.UTF-8"),
            ("HOME", "/home/u"),
            ("PATH", "/usr/bin"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let out = sanitized_env(env);
        let names: Vec<_> = out.iter().map(|(k, _)| k.to_string_lossy()).collect();
        assert!(names.contains(&"HOME".into()) && names.contains(&"PATH".into()));
        assert!(!names.contains(&"GIT_DIR".into()));
        assert!(!names.contains(&"GIT_INDEX_FILE".into()));
        assert!(!names.contains(&"GIT_CONFIG_COUNT".into()));
        assert!(!names.contains(&"LANG".into()));
        assert!(out.contains(&("LC_ALL".into(), "C".into())));
        assert!(out.contains(&("GIT_OPTIONAL_LOCKS".into(), "0".into())));
    }

    #[test]
    fn every_filter_driver_of_the_configuration_is_turned_off() {
        let config = b"core.bare\nfalse\0filter.lfs.process\ngit-lfs filter-process\0\
            filter.lfs.required\0filter.a=b.c.clean\ntouch M\0filters.x.clean\ny\0\
            filter.noname\nz\0user.name\nU\0";
        let (args, drivers) = filter_overrides(config);
        assert_eq!(drivers, [b"a=b.c".to_vec(), b"lfs".to_vec()]);
        let args: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args.len(), 8);
        assert!(args.contains(&"--config-env=filter.a=b.c.clean=MM_CHECKPOINT_EMPTY".into()));
        assert!(args.contains(&"--config-env=filter.lfs.process=MM_CHECKPOINT_EMPTY".into()));
        assert!(args.contains(&"--config-env=filter.lfs.required=MM_CHECKPOINT_FALSE".into()));
        assert_eq!(filter_overrides(b"core.bare\nfalse\0"), (vec![], vec![]));
    }
}
