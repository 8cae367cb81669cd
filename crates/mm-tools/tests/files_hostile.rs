#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The file tools against files that are not ordinary: devices, FIFOs and
//! sockets (made in a temp folder, never the machine's own), read-only
//! files of another owner, files far larger than what can be shown, a
//! working directory deleted under the session, mixed line endings.

mod files_support;

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use files_support::{Env, mode};
use mm_tools::bash::{Bash, BashSettings};
use mm_tools::files::{EditFile, ReadFile, WriteFile};
use mm_tools::toolbox::{Toolbox, ToolboxSettings};
use mm_tools::{PermissionMode, Permissions, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A character device like the machine's null device (1, 3), made in the
/// temp folder; `None` (said loudly) where this user may not make one.
fn char_device(env: &Env, rel: &str) -> Option<std::path::PathBuf> {
    let p = env.path(rel);
    let made = Command::new("mknod")
        .arg(&p)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("SKIPPED: cannot make a device node here (mknod needs root)");
        return None;
    }
    Some(p)
}

fn fifo(env: &Env, rel: &str) -> std::path::PathBuf {
    let p = env.path(rel);
    let ok = Command::new("mkfifo")
        .arg(&p)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo failed");
    p
}

fn assert_char_device(p: &Path) {
    let meta = fs::symlink_metadata(p).unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "{} was replaced: {:?}",
        p.display(),
        meta.file_type()
    );
}

const WRITERS: &str = "not a regular file; write_file and edit_file write only regular files";

#[tokio::test]
async fn a_device_is_never_replaced_by_write_file_or_edit_file() {
    let env = Env::new();
    let Some(dev) = char_device(&env, "mydev") else {
        return;
    };
    symlink("mydev", env.path("link-to-dev")).unwrap();
    for path in ["mydev", "link-to-dev"] {
        let out = env
            .outcome(&WriteFile::new(), json!({"path": path, "content": "x\n"}))
            .await;
        assert!(out.failed, "{}", out.text);
        assert_eq!(out.text, format!("{path} is a character device, {WRITERS}"));
        let out = env
            .outcome(
                &EditFile::new(),
                json!({"path": path, "edits": [{"old": "a", "new": "b"}]}),
            )
            .await;
        assert!(out.failed, "{}", out.text);
        assert_eq!(out.text, format!("{path} is a character device, {WRITERS}"));
    }
    assert_char_device(&dev);
    assert!(
        fs::symlink_metadata(env.path("link-to-dev"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(env.names(""), ["link-to-dev", "mydev"]);
}

#[tokio::test]
async fn a_fifo_or_a_socket_is_refused_at_once() {
    let env = Env::new();
    let f = fifo(&env, "pipe");
    let _listener = std::os::unix::net::UnixListener::bind(env.path("sock")).unwrap();
    for (path, kind) in [("pipe", "a FIFO (named pipe)"), ("sock", "a socket")] {
        let out = env
            .outcome(&WriteFile::new(), json!({"path": path, "content": "x"}))
            .await;
        assert_eq!(out.text, format!("{path} is {kind}, {WRITERS}"));
        let out = env
            .outcome(
                &EditFile::new(),
                json!({"path": path, "edits": [{"old": "a", "new": "b"}]}),
            )
            .await;
        assert_eq!(out.text, format!("{path} is {kind}, {WRITERS}"));
        let out = env.outcome(&ReadFile::new(), json!({"path": path})).await;
        assert!(out.failed);
        assert_eq!(
            out.text,
            format!("{path} is {kind}, not a regular file; read_file reads only regular files")
        );
    }
    assert!(fs::metadata(&f).unwrap().file_type().is_fifo());
    assert!(
        fs::metadata(env.path("sock"))
            .unwrap()
            .file_type()
            .is_socket()
    );
}

#[tokio::test]
async fn read_file_of_a_device_is_refused_before_opening_it() {
    let env = Env::new();
    let Some(_dev) = char_device(&env, "zero") else {
        return;
    };
    let out = env.outcome(&ReadFile::new(), json!({"path": "zero"})).await;
    assert!(out.failed);
    assert_eq!(
        out.text,
        "zero is a character device, not a regular file; read_file reads only regular files"
    );
}

#[tokio::test]
async fn a_file_swapped_for_a_fifo_after_the_plan_never_blocks() {
    let env = Env::new();
    env.write("f.txt", "a\n");
    let tool = ReadFile::new();
    let plan = env.plan(&tool, json!({"path": "f.txt"})).await.unwrap();
    fs::remove_file(env.path("f.txt")).unwrap();
    fifo(&env, "f.txt");
    // Bounded by Env: a blocking open would time out.
    let out = env.run_output(&tool, json!({"path": "f.txt"}), plan).await;
    assert!(out.failed);
    assert!(
        out.text.starts_with("f.txt is a FIFO (named pipe)"),
        "{}",
        out.text
    );

    // The same for a write planned on a regular file.
    env.write("g.txt", "a\n");
    let args = json!({"path": "g.txt", "content": "b\n"});
    let plan = env.plan(&WriteFile::new(), args.clone()).await.unwrap();
    fs::remove_file(env.path("g.txt")).unwrap();
    let g = fifo(&env, "g.txt");
    let out = env.run_output(&WriteFile::new(), args, plan).await;
    assert!(out.failed);
    assert_eq!(out.text, format!("g.txt is a FIFO (named pipe), {WRITERS}"));
    assert!(fs::metadata(&g).unwrap().file_type().is_fifo());
}

#[tokio::test]
async fn a_cancel_ends_a_long_read_at_once() {
    let env = Env::new();
    // A sparse terabyte: skipping to a line past its end reads for ever.
    let f = fs::File::create(env.path("huge")).unwrap();
    f.set_len(1 << 40).unwrap();
    drop(f);
    let tool = ReadFile::new();
    let args = json!({"path": "huge", "start": 1_000_000_000});
    let plan = env.plan(&tool, args.clone()).await.unwrap();
    let cancel = env.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = env.run_output(&tool, args, plan).await;
    assert!(out.failed);
    assert_eq!(out.text, "[error: cancelled by the user]");
}

#[tokio::test]
async fn a_huge_file_is_read_only_as_far_as_it_can_be_shown() {
    let env = Env::with_max(200);
    // Lines, then a gigabyte of NULs (valid UTF-8, one endless line).
    let p = env.write("big", "one\ntwo\n");
    let f = fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    let out = env.outcome(&ReadFile::new(), json!({"path": "big"})).await;
    assert!(!out.failed, "{}", out.text);
    assert_eq!(
        out.text,
        format!(
            "one\ntwo\n[… truncated: lines 1–2 of at least 3 shown; the file is {} bytes; ask \
             for start/end to read more]",
            1u64 << 30
        )
    );
    assert!(out.text.chars().count() <= 200);

    // Counted to the end when the rest is small: the reference's marker.
    let lines: String = (1..=100).map(|i| format!("line {i:03}\n")).collect();
    env.write("small", &lines);
    let out = env
        .outcome(&ReadFile::new(), json!({"path": "small"}))
        .await;
    assert!(
        out.text
            .ends_with("[… truncated: lines 1–14 of 100 shown; ask for start/end to read more]"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn a_key_cut_by_the_line_limit_leaves_no_piece_behind() {
    let env = Env::with_max(100);
    // A long key: redacted, a line of them shrinks so far that what lies
    // past the kept part of the line would come into view.
    let key = format!("sk-live-{}", &"0123456789abcdefghijklmn".repeat(4)[..92]);
    assert_eq!(key.len(), 100);
    let max = 100;
    // The line is kept to 4 × (max + 1) + 100 + 4 = 508 bytes: "ab", five
    // keys, and the first 6 bytes of a sixth.
    let line = format!("ab{}", key.repeat(8));
    env.write("k.txt", format!("{line}\n"));
    assert_eq!(env.ctx.max_output, max);
    let tool = ReadFile::new().with_secrets(std::slice::from_ref(&key));
    let out = env.outcome(&tool, json!({"path": "k.txt"})).await;
    assert!(!out.failed, "{}", out.text);
    assert!(!out.text.contains("sk-l"), "{}", out.text);
    assert!(
        out.text.starts_with("ab[redacted][redacted]"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .ends_with("\n[… truncated inside line 1; ask for start/end to read more]"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn a_file_mm_may_not_write_is_refused_not_replaced() {
    let env = Env::new();
    let p = env.write("ro.txt", "v1\n");
    if is_root() {
        // Owned by someone else, as in the report.
        std::os::unix::fs::chown(&p, Some(12345), Some(12345)).unwrap();
    }
    fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
    let ino = fs::metadata(&p).unwrap().ino();
    symlink("ro.txt", env.path("link")).unwrap();
    for path in ["ro.txt", "link"] {
        let out = env
            .outcome(&WriteFile::new(), json!({"path": path, "content": "v2\n"}))
            .await;
        assert!(out.failed);
        assert_eq!(
            out.text,
            format!(
                "{path} is read-only (mode 0444); write_file and edit_file do not replace a file \
                 mm may not write"
            )
        );
        let out = env
            .outcome(
                &EditFile::new(),
                json!({"path": path, "edits": [{"old": "v1", "new": "v2"}]}),
            )
            .await;
        assert!(out.failed);
        assert!(
            out.text
                .starts_with(&format!("{path} is read-only (mode 0444)"))
        );
    }
    let meta = fs::metadata(&p).unwrap();
    assert_eq!(meta.ino(), ino, "replaced");
    assert_eq!(mode(&p), 0o444);
    assert_eq!(env.read_str("ro.txt"), "v1\n");
    // Reading it is fine.
    let out = env
        .outcome(&ReadFile::new(), json!({"path": "ro.txt"}))
        .await;
    assert_eq!(out.text, "v1\n");
}

#[tokio::test]
async fn a_file_mm_may_write_of_another_owner_is_still_written() {
    if !is_root() {
        eprintln!("SKIPPED: only root can give a file away");
        return;
    }
    let env = Env::new();
    let p = env.write("theirs.txt", "v1\n");
    std::os::unix::fs::chown(&p, Some(12345), Some(12345)).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
    let out = env
        .outcome(
            &WriteFile::new(),
            json!({"path": "theirs.txt", "content": "v2\n"}),
        )
        .await;
    assert!(!out.failed, "{}", out.text);
    assert_eq!(env.read_str("theirs.txt"), "v2\n");
}

#[tokio::test]
async fn mixed_line_endings_match_the_text_as_given() {
    let env = Env::new();
    env.write("m.txt", "alpha\r\nbeta\ngamma\r\n");
    let out = env
        .outcome(
            &EditFile::new(),
            json!({"path": "m.txt", "edits": [{"old": "beta\ngamma", "new": "BETA\ngamma"}]}),
        )
        .await;
    assert!(!out.failed, "{}", out.text);
    assert_eq!(env.read("m.txt"), b"alpha\r\nBETA\ngamma\r\n");
}

fn toolbox() -> Toolbox {
    let bash = Bash::new(BashSettings {
        timeout: Duration::from_secs(10),

        secrets_env: Vec::new(),
        secrets: Vec::new(),
    });
    Toolbox::new(
        vec![
            Box::new(WriteFile::new()),
            Box::new(ReadFile::new()),
            Box::new(bash),
        ],
        ToolboxSettings {
            preview_lines: 2,
            secrets: Vec::new(),
        },
    )
}

#[tokio::test]
async fn a_deleted_working_directory_is_named_and_never_re_created() {
    let env = Env::new();
    let cwd = env.path("work");
    fs::create_dir(&cwd).unwrap();
    let ctx = ToolContext {
        cwd: cwd.clone(),
        sink: Arc::new(mm_types::NullSink),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::new(PermissionMode::Allow)),
        max_output: 30_000,
        call_id: String::new(),
    };
    fs::remove_dir(&cwd).unwrap();
    let gone = format!(
        "the working directory {} is gone (deleted or moved while mm ran); mm will not re-create it",
        cwd.display()
    );
    let tb = toolbox();
    for (name, args) in [
        ("write_file", r#"{"path": "sub/new.txt", "content": "x"}"#),
        ("write_file", r#"{"path": "new.txt", "content": "x"}"#),
        ("read_file", r#"{"path": "a.txt"}"#),
        ("bash", r#"{"command": "echo hi"}"#),
    ] {
        let out = tb.call("c1", name, args, &ctx).await;
        assert!(out.failed(), "{name}");
        assert_eq!(out.output(), gone, "{name}");
    }
    assert!(!cwd.exists(), "the working directory was re-created");

    // The bash tool called on its own says so too.
    let bash = Bash::new(BashSettings {
        timeout: Duration::from_secs(10),

        secrets_env: Vec::new(),
        secrets: Vec::new(),
    });
    let out = bash.run_command("echo hi", &ctx).await;
    assert_eq!(out.text, format!("[error: could not start bash: {gone}]"));
}
