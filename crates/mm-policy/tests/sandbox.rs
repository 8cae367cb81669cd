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
    // Landlock refuses it, or first the read-only mount layer.
    assert!(
        text(&out).contains("Permission denied") || text(&out).contains("Read-only file system"),
        "{}",
        text(&out)
    );
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
    assert_eq!(off.warning(), None);
    let on = workspace(&w, false);
    if enforced(&on) {
        let line = format!(
            "sandbox: workspace-write: writes only in {}, {}; no network",
            w.work.display(),
            w.temp.display()
        );
        match on.mount_layer_missing() {
            None => {
                assert_eq!(on.describe(), line);
                assert_eq!(on.warning(), None);
            }
            Some(why) => {
                eprintln!("no read-only mount layer here ({why}): its line is checked instead");
                let warned = format!(
                    "{line} (Landlock only: {why}; outside those folders a command can still change a file's mode, owner, times and extended attributes)"
                );
                assert_eq!(on.describe(), warned);
                assert_eq!(on.warning(), Some(warned));
            }
        }
    }
    // A sandbox the kernel cannot enforce is a warning, whatever the layer.
    let broken = Sandbox::unenforceable(SandboxMode::WorkspaceWrite, false, &w.work, "no Landlock");
    assert_eq!(
        broken.warning().as_deref(),
        Some(
            "sandbox: workspace-write cannot be enforced here (no Landlock); bash commands will be refused"
        )
    );
}

#[test]
fn a_dangling_symlink_does_not_lead_out() {
    let w = world();
    let sandbox = workspace(&w, false);
    let link =
        |target: &Path, name: &str| std::os::unix::fs::symlink(target, w.work.join(name)).unwrap();
    // The link is inside, its target (not there yet) outside.
    link(&w.home.join("AGENTS.md"), "notes.md");
    // A dangling link to a folder that does not exist yet.
    link(&w.home.join("newdir"), "d");
    // A chain: inside and dangling, to a link inside that leads out.
    link(Path::new("hop"), "chain");
    link(&w.home.join("deep"), "hop");
    // A relative target climbing out.
    link(Path::new("../home/rel"), "rel");
    for path in [
        "notes.md",
        "d/x",
        "d/a/b/c",
        "chain",
        "./sub/../notes.md",
        "rel",
    ] {
        let refused = sandbox.may_write(&w.work, Path::new(path));
        assert!(refused.is_err(), "{path} is writable");
        assert!(
            refused.unwrap_err().contains("outside the folders"),
            "{path}"
        );
    }
    // The full path is followed, and says where it leads.
    assert_eq!(
        mm_policy::sandbox::real_path(&w.work, Path::new("chain")).unwrap(),
        w.home.join("deep")
    );
    assert_eq!(
        mm_policy::sandbox::real_path(&w.work, Path::new("d/a/../b")).unwrap(),
        w.home.join("newdir/b")
    );
    // A dangling link whose target is inside stays writable.
    link(Path::new("later.md"), "soon");
    assert!(sandbox.may_write(&w.work, Path::new("soon")).is_ok());
    assert_eq!(
        mm_policy::sandbox::real_path(&w.work, Path::new("soon")).unwrap(),
        w.work.join("later.md")
    );
    // A loop is refused, not followed for ever.
    link(Path::new("loop"), "loop");
    assert!(sandbox.may_write(&w.work, Path::new("loop")).is_err());
}

/// Whether the read-only mount layer is in place; when not, says loudly
/// what this run could not check.
fn layered(sandbox: &Sandbox) -> bool {
    if !enforced(sandbox) {
        return false;
    }
    if let Some(why) = sandbox.mount_layer_missing() {
        eprintln!(
            "SKIPPED: no read-only mount layer on this machine ({why}); \
             metadata outside the workspace is not protected and was not checked"
        );
        return false;
    }
    true
}

/// What a test can see of a file's metadata.
fn metadata_of(p: &Path) -> (u32, u32, u32, i64, Option<Vec<u8>>) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.mode(), m.uid(), m.gid(), m.mtime(), xattr(p))
}

/// `user.mm` of `p`, through python (no crate needed for one test).
fn xattr(p: &Path) -> Option<Vec<u8>> {
    let out = Command::new("python3")
        .arg("-c")
        .arg("import os,sys\ntry: sys.stdout.write(os.getxattr(sys.argv[1], 'user.mm').decode())\nexcept OSError: sys.exit(3)")
        .arg(p)
        .output()
        .unwrap();
    out.status.success().then_some(out.stdout)
}

/// The lines that change a file's metadata, each on `$1`.
const METADATA: &[&str] = &[
    "chmod 4777 \"$1\"",
    "chown 65534:65534 \"$1\"",
    "chown :65534 \"$1\"",
    "touch -d 2001-01-01 \"$1\"",
    "python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.mm\", b\"x\")' \"$1\"",
];

/// Runs each of [`METADATA`] on `file` in the sandbox (as `uid` when
/// given) and checks nothing about it changed; then checks the same lines
/// do change a file inside the working directory.
fn metadata_stays(sandbox: &Sandbox, w: &World, file: &Path, uid: Option<u32>) {
    // Unconfined, each line changes a copy; one that cannot (chown by a
    // user who is not root) proves nothing and is said so.
    let copy = w.home.join("copy");
    for line in METADATA {
        std::fs::copy(file, &copy).unwrap();
        if let Some(uid) = uid {
            std::os::unix::fs::chown(&copy, Some(uid), Some(uid)).unwrap();
        }
        let start = metadata_of(&copy);
        let out = run_as(
            &Sandbox::off(),
            w,
            &format!("set -- {}; {line}", copy.display()),
            uid,
        );
        if !out.status.success() || metadata_of(&copy) == start {
            eprintln!(
                "NOT CHECKED: `{line}` changes nothing even unconfined here: {}",
                text(&out)
            );
        }
    }
    std::fs::remove_file(&copy).unwrap();
    let before = metadata_of(file);
    for line in METADATA {
        let out = run_as(
            sandbox,
            w,
            &format!("set -- {}; {line}", file.display()),
            uid,
        );
        assert!(
            !out.status.success(),
            "{line} succeeded outside: {}",
            text(&out)
        );
        assert!(
            text(&out).contains("Read-only file system")
                || text(&out).contains("Permission denied")
                || text(&out).contains("Operation not permitted"),
            "{line}: {}",
            text(&out)
        );
        assert_eq!(
            metadata_of(file),
            before,
            "{line} changed {}",
            file.display()
        );
    }
    // Inside the working directory the same lines work (chown to oneself).
    let inside = w.work.join("mine");
    let out = run_as(
        sandbox,
        w,
        "touch mine && chown \"$(id -u):$(id -g)\" mine && chmod 4755 mine && touch -d 2001-01-01 mine \
         && python3 -c 'import os; os.setxattr(\"mine\", \"user.mm\", b\"y\")' && echo ok",
        uid,
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok\n",
        "{}",
        text(&out)
    );
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&inside).unwrap().mode() & 0o7777, 0o4755);
    std::fs::remove_file(inside).unwrap();
}

fn run_as(sandbox: &Sandbox, w: &World, line: &str, uid: Option<u32>) -> Output {
    let confinement = sandbox.prepare().unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(line)
        .current_dir(&w.work)
        .env("HOME", &w.home)
        .env("TMPDIR", &w.temp);
    if let Some(uid) = uid {
        use std::os::unix::process::CommandExt;
        cmd.uid(uid).gid(uid);
    }
    if let Some(c) = confinement {
        use std::os::unix::process::CommandExt;
        // SAFETY: apply makes only async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(move || c.apply());
        }
    }
    cmd.output().unwrap()
}

/// A file outside the workspace with a `user.mm` attribute (a loud line
/// when this file system takes no user attributes).
fn victim(w: &World) -> PathBuf {
    let file = w.home.join("victim");
    std::fs::write(&file, "keep").unwrap();
    let set = Command::new("python3")
        .arg("-c")
        .arg("import os,sys; os.setxattr(sys.argv[1], 'user.mm', b'orig')")
        .arg(&file)
        .status()
        .unwrap();
    if !set.success() {
        eprintln!(
            "NOT CHECKED: this file system takes no user.* attributes; setxattr is tried but proves nothing"
        );
    }
    file
}

#[test]
fn metadata_outside_the_workspace_cannot_change() {
    let w = world();
    let sandbox = workspace(&w, false);
    if !layered(&sandbox) {
        return;
    }
    let file = victim(&w);
    // Without the sandbox each line works: the test would see a change.
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    metadata_stays(&sandbox, &w, &file, None);
    // Read-only mode: the same, and inside too.
    let ro = Sandbox::new(SandboxMode::ReadOnly, false, &w.work, &w.temp);
    let out = run(
        &ro,
        &w,
        &format!("chmod 600 {0}; touch -d 2001-01-01 ./x {0}", file.display()),
    );
    assert!(!out.status.success());
    assert!(!w.work.join("x").exists());
    if uid == 0 {
        eprintln!("ran as root: the root path of the layer was checked");
    } else {
        eprintln!("ran as uid {uid}: the unprivileged path of the layer was checked");
    }
}

#[test]
fn metadata_outside_cannot_change_for_an_unprivileged_user_either() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "NOT CHECKED here: this test runs commands as another user, which needs root; the other metadata test ran unprivileged"
        );
        return;
    }
    let w = world();
    let sandbox = workspace(&w, false);
    if !layered(&sandbox) {
        return;
    }
    // Folders `nobody` may reach, a workspace it owns, a file outside it
    // owns too, so that without the sandbox it could change all of it.
    use std::os::unix::fs::PermissionsExt;
    let top = w.work.parent().unwrap();
    std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = victim(&w);
    for p in [&w.work, &w.temp, &file] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let probe = run_as(
        &Sandbox::off(),
        &w,
        &format!("chmod 640 {}", file.display()),
        Some(65534),
    );
    assert!(
        probe.status.success(),
        "nobody cannot chmod its own file: {}",
        text(&probe)
    );
    metadata_stays(&sandbox, &w, &file, Some(65534));
}

#[test]
fn the_read_only_layer_cannot_be_lifted_from_inside() {
    let w = world();
    let sandbox = workspace(&w, false);
    if !layered(&sandbox) {
        return;
    }
    let file = victim(&w);
    let before = metadata_of(&file);
    let f = file.display();
    for line in [
        format!("mount -o remount,rw / ; chmod 4777 {f}"),
        format!(
            "mount -o remount,bind,rw {} ; chmod 4777 {f}",
            w.home.display()
        ),
        format!(
            "unshare -rm sh -c 'mount -o remount,rw /; mount -o remount,bind,rw {}; chmod 4777 {f}'",
            w.home.display()
        ),
        // mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, {clear MOUNT_ATTR_RDONLY})
        format!(
            "python3 -c 'import ctypes,os; l=ctypes.CDLL(None, use_errno=True); \
             a=(ctypes.c_uint64*4)(0,1,0,0); l.syscall(442, -100, b\"/\", 0x8000, a, 32); \
             os.chmod(\"{f}\", 0o4777)'"
        ),
    ] {
        let _ = run(&sandbox, &w, &line);
        assert_eq!(metadata_of(&file), before, "{line}");
    }
}

#[test]
fn the_parent_death_signal_survives_the_confinement() {
    // mm sets it before applying the sandbox, so that a command dies with
    // mm; entering namespaces or dropping capabilities must not clear it.
    let w = world();
    let sandbox = workspace(&w, false);
    if !enforced(&sandbox) {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // As the user, and (when root) as another user too: the layer's user
    // namespace path.
    let users = if root {
        vec![None, Some(65534)]
    } else {
        vec![None]
    };
    for uid in users {
        let c = sandbox.prepare().unwrap().unwrap();
        let mut cmd = Command::new("true");
        use std::os::unix::process::CommandExt;
        if let Some(uid) = uid {
            cmd.uid(uid).gid(uid);
        }
        // SAFETY: prctl and apply make only async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                c.apply()?;
                let mut sig: libc::c_int = 0;
                libc::prctl(
                    libc::PR_GET_PDEATHSIG,
                    &mut sig as *mut libc::c_int,
                    0,
                    0,
                    0,
                );
                if sig != libc::SIGKILL {
                    return Err(std::io::Error::from_raw_os_error(libc::ECHILD));
                }
                Ok(())
            });
        }
        let status = cmd.current_dir("/").status();
        assert!(
            status.as_ref().is_ok_and(|s| s.success()),
            "as {uid:?}, the parent-death signal was cleared: {status:?}"
        );
    }
}
