#![allow(clippy::unwrap_used, clippy::expect_used)]
//! write_file through the Tool trait on real files: created / wrote /
//! unchanged texts, the diff, verbatim content, non-UTF-8 refusal,
//! atomicity, modes, symlinks, the preview and the changed-on-disk refusal.

mod files_support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

use files_support::{Env, REJECTED, mode, umask};
use mm_tools::Tool;
use mm_tools::files::WriteFile;
use mm_types::ToolKind;
use serde_json::json;

#[tokio::test]
async fn new_file_is_created_with_its_parents() {
    let env = Env::new();
    let out = env
        .call(
            &WriteFile::new(),
            json!({"path": "a/b/new.txt", "content": "one\ntwo\n"}),
        )
        .await;
    assert_eq!(
        out,
        "created a/b/new.txt (2 lines)\n@@ -0,0 +1,2 @@\n+one\n+two\n"
    );
    assert_eq!(env.read_str("a/b/new.txt"), "one\ntwo\n");
    assert_eq!(mode(&env.path("a/b/new.txt")), 0o666 & !umask());
}

#[tokio::test]
async fn empty_new_file_has_no_diff() {
    let env = Env::new();
    let out = env
        .call(&WriteFile::new(), json!({"path": "e.txt", "content": ""}))
        .await;
    assert_eq!(out, "created e.txt (0 lines)");
    assert_eq!(env.read("e.txt"), b"");
}

#[tokio::test]
async fn existing_file_is_entirely_replaced() {
    let env = Env::new();
    env.write("f.txt", "keep\nold\nkeep too\nextra\n");
    let out = env
        .call(
            &WriteFile::new(),
            json!({"path": "f.txt", "content": "keep\nnew\nkeep too\n"}),
        )
        .await;
    assert_eq!(
        out,
        "wrote f.txt: +1 -2 lines\n@@ -1,4 +1,3 @@\n keep\n-old\n+new\n keep too\n-extra\n"
    );
    assert_eq!(env.read_str("f.txt"), "keep\nnew\nkeep too\n");
}

#[tokio::test]
async fn identical_content_writes_nothing() {
    let env = Env::new();
    let p = env.write("same.txt", "x\ny\n");
    let before = fs::metadata(&p).unwrap();
    let plan = env
        .plan(
            &WriteFile::new(),
            json!({"path": "same.txt", "content": "x\ny\n"}),
        )
        .await
        .unwrap();
    // Nothing will be written: no permission to ask.
    assert!(plan.rejection.is_none());
    let out = env
        .run(
            &WriteFile::new(),
            json!({"path": "same.txt", "content": "x\ny\n"}),
            plan,
        )
        .await;
    assert_eq!(
        out,
        "same.txt unchanged: the content is identical, nothing written"
    );
    let after = fs::metadata(&p).unwrap();
    assert_eq!(before.ino(), after.ino(), "the file was replaced");
    assert_eq!(before.mtime_nsec(), after.mtime_nsec());
}

#[tokio::test]
async fn content_is_written_verbatim() {
    let env = Env::new();
    // An LF file replaced by CRLF content with a BOM and no final newline:
    // nothing is converted.
    env.write("v.txt", "a\nb\n");
    let content = "\u{feff}a\r\nb\r\nc";
    env.call(
        &WriteFile::new(),
        json!({"path": "v.txt", "content": content}),
    )
    .await;
    assert_eq!(env.read("v.txt"), content.as_bytes());
}

#[tokio::test]
async fn refuses_to_replace_a_non_utf8_file() {
    let env = Env::new();
    env.write("bin", [0xc3, 0x28, 0x00]);
    let out = env
        .call(&WriteFile::new(), json!({"path": "bin", "content": "text"}))
        .await;
    assert_eq!(
        out,
        "bin is not UTF-8 text; write_file and edit_file only write text"
    );
    assert_eq!(env.read("bin"), [0xc3, 0x28, 0x00]);
}

#[tokio::test]
async fn a_directory_is_not_replaced() {
    let env = Env::new();
    fs::create_dir(env.path("d")).unwrap();
    let out = env
        .call(&WriteFile::new(), json!({"path": "d", "content": "x"}))
        .await;
    assert_eq!(out, "d is a directory");
    assert!(env.path("d").is_dir());
}

#[tokio::test]
async fn mode_is_kept_and_no_temp_file_is_left() {
    let env = Env::new();
    let p = env.write("run.sh", "#!/bin/sh\necho hi\n");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    let ino = fs::metadata(&p).unwrap().ino();
    let out = env
        .call(
            &WriteFile::new(),
            json!({"path": "run.sh", "content": "#!/bin/sh\necho bye\n"}),
        )
        .await;
    assert!(out.starts_with("wrote run.sh: +1 -1 lines\n"), "{out}");
    assert_eq!(mode(&p), 0o755);
    // Replaced by a rename (a new inode), never rewritten in place.
    assert_ne!(fs::metadata(&p).unwrap().ino(), ino);
    // A mode the umask would cut is kept exactly too.
    fs::set_permissions(&p, fs::Permissions::from_mode(0o777)).unwrap();
    env.call(
        &WriteFile::new(),
        json!({"path": "run.sh", "content": "again\n"}),
    )
    .await;
    assert_eq!(mode(&p), 0o777);
    assert_eq!(env.names(""), ["run.sh"]);
}

#[tokio::test]
async fn writes_through_a_symlink_and_the_link_stays() {
    let env = Env::new();
    env.write("real/target.txt", "old\n");
    symlink("real/target.txt", env.path("link.txt")).unwrap();
    let out = env
        .call(
            &WriteFile::new(),
            json!({"path": "link.txt", "content": "new\n"}),
        )
        .await;
    assert_eq!(
        out,
        "wrote link.txt: +1 -1 lines\n@@ -1,1 +1,1 @@\n-old\n+new\n"
    );
    assert!(
        fs::symlink_metadata(env.path("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(env.read_str("real/target.txt"), "new\n");
    assert_eq!(env.names("real"), ["target.txt"]);
    // A dangling link: the file it names is created, the link stays.
    symlink("made.txt", env.path("dangling")).unwrap();
    let out = env
        .call(
            &WriteFile::new(),
            json!({"path": "dangling", "content": "hi\n"}),
        )
        .await;
    assert_eq!(out, "created dangling (1 lines)\n@@ -0,0 +1,1 @@\n+hi\n");
    assert_eq!(env.read_str("made.txt"), "hi\n");
    assert!(
        fs::symlink_metadata(env.path("dangling"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn plan_previews_the_change_and_asks() {
    let env = Env::new();
    env.write("p.txt", "a\n");
    let args = json!({"path": "p.txt", "content": "b\n"});
    let plan = env.plan(&WriteFile::new(), args.clone()).await.unwrap();
    assert_eq!(plan.kind, ToolKind::Edit);
    assert_eq!(plan.title, "p.txt");
    assert_eq!(plan.rejection, Some(REJECTED));
    let abs = env.path("p.txt").display().to_string();
    assert_eq!(plan.locations, vec![abs.clone()]);
    let change = plan.change.clone().unwrap();
    assert_eq!(change.path, abs);
    assert_eq!(change.old_text.as_deref(), Some("a\n"));
    assert_eq!(change.new_text.as_deref(), Some("b\n"));
    assert_eq!(change.diff, "@@ -1,1 +1,1 @@\n-a\n+b\n");
    assert!(!change.too_large);
    assert_eq!(change.lines, 1);
    // Planning wrote nothing.
    assert_eq!(env.read_str("p.txt"), "a\n");
    let out = env.run(&WriteFile::new(), args, plan).await;
    assert_eq!(out, format!("wrote p.txt: +1 -1 lines\n{}", change.diff));
    assert_eq!(env.read_str("p.txt"), "b\n");
}

#[tokio::test]
async fn plan_of_a_new_file_has_no_old_text_and_writes_nothing() {
    let env = Env::new();
    let plan = env
        .plan(
            &WriteFile::new(),
            json!({"path": "sub/n.txt", "content": "x\n"}),
        )
        .await
        .unwrap();
    let change = plan.change.unwrap();
    assert_eq!(change.old_text, None);
    assert_eq!(change.new_text.as_deref(), Some("x\n"));
    assert_eq!(change.diff, "@@ -0,0 +1,1 @@\n+x\n");
    assert!(!env.path("sub").exists(), "plan must not create folders");
}

#[tokio::test]
async fn big_files_leave_their_contents_out_of_the_preview() {
    let env = Env::new();
    env.write("big.txt", "y\n".repeat(600_000));
    let content = "y\n".repeat(600_000) + "z\n"; // 1.2 MB
    let plan = env
        .plan(
            &WriteFile::new(),
            json!({"path": "big.txt", "content": content}),
        )
        .await
        .unwrap();
    let change = plan.change.unwrap();
    assert!(change.too_large);
    assert_eq!((change.old_text, change.new_text), (None, None));
    assert_eq!(change.lines, 600_001);
    assert_eq!(change.diff, "@@ -599998,3 +599998,4 @@\n y\n y\n y\n+z\n");
}

#[tokio::test]
async fn a_file_changed_since_the_plan_is_not_written() {
    let env = Env::new();
    env.write("c.txt", "original\n");
    let args = json!({"path": "c.txt", "content": "mine\n"});
    let plan = env.plan(&WriteFile::new(), args.clone()).await.unwrap();
    env.write("c.txt", "someone else\n");
    let out = env.run(&WriteFile::new(), args, plan).await;
    assert_eq!(
        out,
        "c.txt changed on disk since it was read; read it again"
    );
    assert_eq!(env.read_str("c.txt"), "someone else\n");
}

#[tokio::test]
async fn a_file_created_since_the_plan_is_not_overwritten() {
    let env = Env::new();
    let args = json!({"path": "late.txt", "content": "mine\n"});
    let plan = env.plan(&WriteFile::new(), args.clone()).await.unwrap();
    env.write("late.txt", "theirs\n");
    let out = env.run(&WriteFile::new(), args, plan).await;
    assert_eq!(
        out,
        "late.txt changed on disk since it was read; read it again"
    );
    assert_eq!(env.read_str("late.txt"), "theirs\n");
}

#[tokio::test]
async fn bad_arguments() {
    let env = Env::new();
    assert_eq!(
        env.call(&WriteFile::new(), json!({"path": "x"})).await,
        "invalid arguments for write_file: missing field `content`; send a JSON object matching the tool's schema"
    );
}

#[tokio::test]
async fn spec_declares_path_and_content() {
    let spec = WriteFile::new().spec();
    assert_eq!(spec.name, "write_file");
    assert_eq!(spec.parameters["required"], json!(["path", "content"]));
}

#[tokio::test]
async fn a_hard_linked_file_is_written_in_place_for_every_name() {
    let env = Env::new();
    env.write("a.txt", "old\n");
    fs::hard_link(env.path("a.txt"), env.path("b.txt")).unwrap();
    let ino = fs::metadata(env.path("a.txt")).unwrap().ino();
    let out = env
        .outcome(
            &WriteFile::new(),
            json!({"path": "b.txt", "content": "new\n"}),
        )
        .await;
    assert_eq!(
        out,
        mm_tools::ToolOutput::ok("wrote b.txt: +1 -1 lines\n@@ -1,1 +1,1 @@\n-old\n+new\n")
    );
    assert_eq!(env.read_str("a.txt"), "new\n");
    let meta = fs::metadata(env.path("b.txt")).unwrap();
    assert_eq!((meta.ino(), meta.nlink()), (ino, 2));
    assert_eq!(env.names(""), ["a.txt", "b.txt"]);
}

#[tokio::test]
async fn the_owner_and_group_are_kept() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("the_owner_and_group_are_kept: skipped, only root can give a file away");
        return;
    }
    let env = Env::new();
    let p = env.write("owned.txt", "v1\n");
    std::os::unix::fs::chown(&p, Some(1234), Some(1234)).unwrap();
    // Set-user-ID survives too: the mode is put back after the owner.
    fs::set_permissions(&p, fs::Permissions::from_mode(0o4750)).unwrap();
    let out = env
        .outcome(
            &WriteFile::new(),
            json!({"path": "owned.txt", "content": "v2\n"}),
        )
        .await;
    assert!(!out.failed, "{}", out.text);
    let meta = fs::metadata(&p).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (1234, 1234));
    assert_eq!(mode(&p), 0o4750);
    assert_eq!(env.read_str("owned.txt"), "v2\n");
}
