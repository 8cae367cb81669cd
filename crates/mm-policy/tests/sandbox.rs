#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The sandbox on this machine's kernel: real `bash` children confined by
//! Landlock and seccomp. Every path is in a temp folder: HOME, the working
//! directory and the "system temp folder" the sandbox is given are three
//! separate folders, so a write to HOME is a write outside.

#![cfg(target_os = "linux")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mm_policy::{Sandbox, SandboxMode};

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    work: PathBuf,
    temp: PathBuf,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mk = |name: &str| {
        let p = root.join(name);
        std::fs::create_dir(&p).unwrap();
        p
    };
    World {
        home: mk("home"),
        work: mk("work"),
        temp: mk("tmp"),
        _dir: dir,
    }
}

/// Whether this kernel enforces the sandbox; when not, the test says so
/// loudly and is skipped (CI's kernel has Landlock ABI 7).
fn enforced(sandbox: &Sandbox) -> bool {
    if let Some(why) = sandbox.unavailable() {
        eprintln!("SKIPPED: the sandbox cannot be enforced on this kernel: {why}");
        return false;
    }
    true
}

fn run(sandbox: &Sandbox, w: &World, line: &str) -> Output {
    let confinement = sandbox.prepare().unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(line)
        .current_dir(&w.work)
        .env("HOME", &w.home)
        .env("TMPDIR", &w.temp);
    if let Some(c) = confinement {
        use std::os::unix::process::CommandExt;
        // SAFETY: apply makes only async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(move || c.apply());
        }
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn workspace(w: &World, network: bool) -> Sandbox {
    Sandbox::new(SandboxMode::WorkspaceWrite, network, &w.work, &w.temp)
}

#[test]
fn workspace_write_writes_inside_and_not_at_home() {
    let w = world();
    let sandbox = workspace(&w, false);
    if !enforced(&sandbox) {
        return;
    }
    let out = run(&sandbox, &w, "touch ./x && mkdir -p d/e && echo hi > d/e/f");
    assert!(out.status.success(), "{}", text(&out));
    assert!(w.work.join("x").exists() && w.work.join("d/e/f").exists());

    let out = run(&sandbox, &w, "touch ~/x");
    assert!(!out.status.success());
    assert!(text(&out).contains("Permission denied"), "{}", text(&out));
    assert!(!w.home.join("x").exists());

    // The temp folder and /dev/null are writable; stdout still works.
    let out = run(
        &sandbox,
        &w,
        "echo t > \"$TMPDIR/t\" && ls / > /dev/null && echo shown",
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "shown\n");
    assert!(w.temp.join("t").exists());

    // Reads are everywhere.
    std::fs::write(w.home.join("notes"), "read me").unwrap();
    let out = run(&sandbox, &w, "cat ~/notes");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "read me");
}

#[test]
fn other_writes_outside_fail_too() {
    let w = world();
    let sandbox = workspace(&w, false);
    if !enforced(&sandbox) {
        return;
    }
    std::fs::write(w.home.join("keep"), "precious").unwrap();
    for line in [
        "rm ~/keep",
        ": > ~/keep",
        "truncate -s 0 ~/keep",
        "mv ~/keep ./stolen",
        "ln ~/keep ./hard",
        "mkdir ~/d",
        "ln -s /etc ~/link",
    ] {
        let out = run(&sandbox, &w, line);
        assert!(!out.status.success(), "{line}: {}", text(&out));
    }
    assert_eq!(
        std::fs::read_to_string(w.home.join("keep")).unwrap(),
        "precious"
    );
}

#[test]
fn a_symlink_in_the_working_directory_does_not_lead_out() {
    let w = world();
    let sandbox = workspace(&w, false);
    if !enforced(&sandbox) {
        return;
    }
    std::os::unix::fs::symlink(&w.home, w.work.join("out")).unwrap();
    let out = run(&sandbox, &w, "echo x > out/escaped; touch out/also");
    assert!(!out.status.success());
    assert!(!w.home.join("escaped").exists() && !w.home.join("also").exists());
    // The file tools follow the same rule.
    assert!(
        sandbox
            .may_write(&w.work, Path::new("out/escaped"))
            .is_err()
    );
    assert!(sandbox.may_write(&w.work, Path::new("in/new.txt")).is_ok());
    assert!(sandbox.may_write(&w.work, &w.temp.join("t")).is_ok());
    assert!(sandbox.may_write(&w.work, Path::new("../home/x")).is_err());
    assert!(sandbox.may_write(&w.work, Path::new("/dev/null")).is_ok());
}

#[test]
fn read_only_writes_nowhere() {
    let w = world();
    let sandbox = Sandbox::new(SandboxMode::ReadOnly, true, &w.work, &w.temp);
    if !enforced(&sandbox) {
        return;
    }
    let out = run(&sandbox, &w, "touch ./x");
    assert!(!out.status.success());
    assert!(!w.work.join("x").exists());
    let out = run(&sandbox, &w, "echo t > \"$TMPDIR/t\"");
    assert!(!out.status.success());
    let out = run(&sandbox, &w, "ls > /dev/null && echo ok");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert!(sandbox.may_write(&w.work, Path::new("x")).is_err());
}

#[test]
fn no_network_means_no_socket_to_loopback() {
    let w = world();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let line = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let sandbox = workspace(&w, false);
    if !enforced(&sandbox) {
        return;
    }
    let out = run(&sandbox, &w, &line);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("Operation not permitted"),
        "{}",
        text(&out)
    );
    // This process still connects.
    std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();

    // With network allowed the same command connects.
    let open = workspace(&w, true);
    let out = run(&open, &w, &line);
    assert!(out.status.success(), "{}", text(&out));

    // Unix-domain sockets stay usable (local tools rely on them).
    let out = run(
        &sandbox,
        &w,
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(1)'",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1\n",
        "{}",
        text(&out)
    );
}

#[test]
fn a_detached_child_stays_confined() {
    let w = world();
    let sandbox = workspace(&w, false);
    if !enforced(&sandbox) {
        return;
    }
    let out = run(
        &sandbox,
        &w,
        "setsid bash -c 'touch ~/detached; echo $? > ./status' < /dev/null; sleep 0.5; cat ./status",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1",
        "{}",
        text(&out)
    );
    assert!(!w.home.join("detached").exists());
}

#[test]
fn off_confines_nothing_and_describes_itself() {
    let w = world();
    let off = Sandbox::off();
    assert!(off.prepare().unwrap().is_none());
    assert!(off.may_write(&w.work, &w.home.join("x")).is_ok());
    assert_eq!(off.describe(), "sandbox: off");
    let on = workspace(&w, false);
    if enforced(&on) {
        assert_eq!(
            on.describe(),
            format!(
                "sandbox: workspace-write: writes only in {}, {}; no network",
                w.work.display(),
                w.temp.display()
            )
        );
    }
}
