#![allow(clippy::unwrap_used, clippy::expect_used)]
//! edit_file through the Tool trait on real files: the headline and diff,
//! every refusal text (byte for byte), dry runs, nothing written on any
//! refusal, CRLF, BOM, modes, symlinks, preview and changed-on-disk.

mod files_support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

use files_support::{Env, REJECTED, mode};
use mm_tools::Tool;
use mm_tools::files::EditFile;
use mm_types::ToolKind;
use serde_json::{Value, json};

fn edits(path: &str, pairs: &[(&str, &str)]) -> Value {
    let list: Vec<Value> = pairs
        .iter()
        .map(|(o, n)| json!({"old": o, "new": n}))
        .collect();
    json!({"path": path, "edits": list})
}

const AMBIGUITY_TAIL: &str = " — to change ONE of them, include its surrounding lines in old until the text is unique; to change several, send one edit per place.";

/// Runs `args` and checks that the file was not touched.
async fn refused(env: &Env, rel: &str, args: Value) -> String {
    let p = env.path(rel);
    let before = fs::read(&p).unwrap();
    let meta = fs::metadata(&p).unwrap();
    let out = env.call(&EditFile::new(), args).await;
    assert_eq!(fs::read(&p).unwrap(), before, "the file was changed");
    let after = fs::metadata(&p).unwrap();
    assert_eq!(
        (meta.ino(), meta.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );
    out
}

#[tokio::test]
async fn one_edit_headline_and_diff() {
    let env = Env::new();
    env.write("f.txt", "a\nb\nc\n");
    let out = env
        .call(&EditFile::new(), edits("f.txt", &[("b", "B")]))
        .await;
    assert_eq!(
        out,
        "edited f.txt: 1 edit(s), +1 -1 lines, first change at line 2\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    );
    assert_eq!(env.read_str("f.txt"), "a\nB\nc\n");
}

#[tokio::test]
async fn several_edits_in_one_call() {
    let env = Env::new();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    env.write("n.txt", &text);
    let out = env
        .call(
            &EditFile::new(),
            edits(
                "n.txt",
                &[("line 20\n", "twenty\n"), ("line 5\n", "five\nFIVE\n")],
            ),
        )
        .await;
    assert_eq!(
        out,
        "edited n.txt: 2 edit(s), +3 -2 lines, first change at line 5\n\
         @@ -2,7 +2,8 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n+FIVE\n line 6\n line 7\n line 8\n\
         @@ -17,7 +18,7 @@\n line 17\n line 18\n line 19\n-line 20\n+twenty\n line 21\n line 22\n line 23\n"
    );
    assert_eq!(
        env.read_str("n.txt"),
        text.replace("line 20\n", "twenty\n")
            .replace("line 5\n", "five\nFIVE\n")
    );
}

#[tokio::test]
async fn empty_new_deletes() {
    let env = Env::new();
    env.write("d.txt", "x\ny\nz\n");
    let out = env
        .call(&EditFile::new(), edits("d.txt", &[("y\n", "")]))
        .await;
    assert_eq!(
        out,
        "edited d.txt: 1 edit(s), +0 -1 lines, first change at line 2\n@@ -1,3 +1,2 @@\n x\n-y\n z\n"
    );
    assert_eq!(env.read_str("d.txt"), "x\nz\n");
}

#[tokio::test]
async fn dry_run_reports_and_writes_nothing() {
    let env = Env::new();
    env.write("f.txt", "a\nb\n");
    let mut args = edits("f.txt", &[("a", "A")]);
    args["dry_run"] = json!(true);
    let plan = env.plan(&EditFile::new(), args.clone()).await.unwrap();
    assert!(plan.rejection.is_none(), "a dry run needs no permission");
    assert_eq!(plan.kind, ToolKind::Edit);
    let meta = fs::metadata(env.path("f.txt")).unwrap();
    let out = env.run(&EditFile::new(), args, plan).await;
    assert_eq!(
        out,
        "dry run: edited f.txt: 1 edit(s), +1 -1 lines, first change at line 1\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n"
    );
    assert_eq!(env.read_str("f.txt"), "a\nb\n");
    let after = fs::metadata(env.path("f.txt")).unwrap();
    assert_eq!(meta.mtime_nsec(), after.mtime_nsec());
    assert_eq!(env.names(""), ["f.txt"]);
}

#[tokio::test]
async fn missing_file_gives_read_files_text() {
    let env = Env::new();
    assert_eq!(
        env.call(&EditFile::new(), edits("no/such.txt", &[("a", "b")]))
            .await,
        "no/such.txt does not exist. Create it with write_file"
    );
    assert!(!env.path("no").exists());
}

#[tokio::test]
async fn directory_and_non_utf8_are_refused() {
    let env = Env::new();
    fs::create_dir(env.path("dir")).unwrap();
    assert_eq!(
        env.call(&EditFile::new(), edits("dir", &[("a", "b")]))
            .await,
        "dir is a directory"
    );
    env.write("latin1.txt", b"caf\xe9\n");
    assert_eq!(
        refused(&env, "latin1.txt", edits("latin1.txt", &[("caf", "tea")])).await,
        "latin1.txt is not UTF-8 text; write_file and edit_file only write text"
    );
}

#[tokio::test]
async fn not_found_single_and_prefixed() {
    let env = Env::new();
    env.write("s.txt", "alpha\nbeta\n");
    assert_eq!(
        refused(&env, "s.txt", edits("s.txt", &[("gamma", "x")])).await,
        "old text not found in s.txt"
    );
    assert_eq!(
        refused(
            &env,
            "s.txt",
            edits("s.txt", &[("alpha", "A"), ("gamma", "x")])
        )
        .await,
        "edit 2: old text not found in s.txt"
    );
}

#[tokio::test]
async fn ambiguous_single_and_prefixed() {
    let env = Env::new();
    let text = "fn a() {}\n\nlet x = 1;\nfn b() {}\nlet x = 1;\n";
    env.write("amb.rs", text);
    assert_eq!(
        refused(
            &env,
            "amb.rs",
            edits("amb.rs", &[("let x = 1;", "let x = 2;")])
        )
        .await,
        format!("old text appears 2 times (lines 3, 5){AMBIGUITY_TAIL}")
    );
    assert_eq!(
        refused(
            &env,
            "amb.rs",
            edits("amb.rs", &[("fn a", "fn c"), ("let x = 1;", "let x = 2;")])
        )
        .await,
        format!("edit 2: old text appears 2 times (lines 3, 5){AMBIGUITY_TAIL}")
    );
}

#[tokio::test]
async fn overlap_nest_and_repeat_texts() {
    let env = Env::new();
    env.write("o.txt", "one two three four\n");
    assert_eq!(
        refused(
            &env,
            "o.txt",
            edits("o.txt", &[("one two", "1"), ("two three", "2")])
        )
        .await,
        "edits 1 and 2 overlap in o.txt"
    );
    assert_eq!(
        refused(
            &env,
            "o.txt",
            edits("o.txt", &[("two", "2"), ("one two three", "123")])
        )
        .await,
        "edits 1 and 2 nest in o.txt"
    );
    assert_eq!(
        refused(
            &env,
            "o.txt",
            edits("o.txt", &[("four", "4"), ("four", "IV")])
        )
        .await,
        "edits 1 and 2 repeat the same text in o.txt"
    );
}

#[tokio::test]
async fn several_refusals_one_per_line_ordered_by_first_edit() {
    let env = Env::new();
    env.write("m.txt", "a b c\nx\nx\nlast\n");
    let out = refused(
        &env,
        "m.txt",
        edits(
            "m.txt",
            &[
                ("b c", "1"),     // 1 overlaps 3
                ("x", "2"),       // 2 ambiguous
                ("a b", "3"),     // 3
                ("missing", "4"), // 4 not found
                ("last", "5"),    // 5 fine: nothing is written anyway
            ],
        ),
    )
    .await;
    assert_eq!(
        out,
        format!(
            "edits 1 and 3 overlap in m.txt\n\
             edit 2: old text appears 2 times (lines 2, 3){AMBIGUITY_TAIL}\n\
             edit 4: old text not found in m.txt"
        )
    );
}

#[tokio::test]
async fn no_edits_and_empty_old() {
    let env = Env::new();
    env.write("e.txt", "x\n");
    assert_eq!(
        refused(&env, "e.txt", json!({"path": "e.txt", "edits": []})).await,
        "no edits given"
    );
    assert_eq!(
        refused(&env, "e.txt", edits("e.txt", &[("", "y")])).await,
        "old text is empty; give the exact text to replace"
    );
    assert_eq!(
        refused(&env, "e.txt", edits("e.txt", &[("x", "y"), ("", "z")])).await,
        "edit 2: old text is empty; give the exact text to replace"
    );
}

#[tokio::test]
async fn edits_are_resolved_against_the_original() {
    let env = Env::new();
    env.write("c.txt", "red\ngreen\n");
    // Edit 2 looks for what edit 1 would create: not found, nothing written.
    assert_eq!(
        refused(
            &env,
            "c.txt",
            edits("c.txt", &[("red", "blue"), ("blue", "black")])
        )
        .await,
        "edit 2: old text not found in c.txt"
    );
    // A swap is fine: both match the original.
    env.call(
        &EditFile::new(),
        edits("c.txt", &[("red", "green"), ("green", "red")]),
    )
    .await;
    assert_eq!(env.read_str("c.txt"), "green\nred\n");
}

#[tokio::test]
async fn identical_result_writes_nothing() {
    let env = Env::new();
    env.write("i.txt", "same\n");
    assert_eq!(
        refused(&env, "i.txt", edits("i.txt", &[("same", "same")])).await,
        "i.txt unchanged: the content is identical, nothing written"
    );
}

#[tokio::test]
async fn crlf_file_stays_crlf() {
    let env = Env::new();
    env.write("w.txt", "one\r\ntwo\r\nthree\r\n");
    let out = env
        .call(
            &EditFile::new(),
            edits("w.txt", &[("one\ntwo\n", "uno\ndos\nmas\n")]),
        )
        .await;
    assert!(
        out.starts_with("edited w.txt: 1 edit(s), +3 -2 lines, first change at line 1\n"),
        "{out:?}"
    );
    assert_eq!(env.read("w.txt"), b"uno\r\ndos\r\nmas\r\nthree\r\n");
}

#[tokio::test]
async fn bom_is_kept() {
    let env = Env::new();
    env.write("bom.txt", "\u{feff}title\nbody\n");
    env.call(&EditFile::new(), edits("bom.txt", &[("title", "Title")]))
        .await;
    assert_eq!(env.read("bom.txt"), "\u{feff}Title\nbody\n".as_bytes());
}

#[tokio::test]
async fn mode_symlink_and_no_temp_files() {
    let env = Env::new();
    let real = env.write("bin/tool.sh", "#!/bin/sh\necho a\n");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o755)).unwrap();
    symlink("bin/tool.sh", env.path("tool")).unwrap();
    let out = env
        .call(&EditFile::new(), edits("tool", &[("echo a", "echo b")]))
        .await;
    assert!(
        out.starts_with("edited tool: 1 edit(s), +1 -1 lines, first change at line 2\n"),
        "{out}"
    );
    assert_eq!(env.read_str("bin/tool.sh"), "#!/bin/sh\necho b\n");
    assert_eq!(mode(&real), 0o755);
    assert!(
        fs::symlink_metadata(env.path("tool"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(env.names(""), ["bin", "tool"]);
    assert_eq!(env.names("bin"), ["tool.sh"]);
}

#[tokio::test]
async fn plan_previews_the_diff_and_asks() {
    let env = Env::new();
    env.write("p.txt", "x\ny\n");
    let args = edits("p.txt", &[("y", "why")]);
    let plan = env.plan(&EditFile::new(), args.clone()).await.unwrap();
    assert_eq!(plan.kind, ToolKind::Edit);
    assert_eq!(plan.title, "p.txt");
    assert_eq!(plan.rejection, Some(REJECTED));
    let abs = env.path("p.txt").display().to_string();
    assert_eq!(plan.locations, vec![abs.clone()]);
    let change = plan.change.clone().unwrap();
    assert_eq!(change.path, abs);
    assert_eq!(change.old_text.as_deref(), Some("x\ny\n"));
    assert_eq!(change.new_text.as_deref(), Some("x\nwhy\n"));
    assert_eq!(change.diff, "@@ -1,2 +1,2 @@\n x\n-y\n+why\n");
    assert_eq!(change.lines, 2);
    assert_eq!(env.read_str("p.txt"), "x\ny\n", "plan must not write");
    // A refused edit fails at plan time: nothing to ask about.
    assert_eq!(
        env.plan(&EditFile::new(), edits("p.txt", &[("zz", "y")]))
            .await
            .err()
            .unwrap(),
        "old text not found in p.txt"
    );
}

#[tokio::test]
async fn big_file_preview_leaves_contents_out() {
    let env = Env::new();
    let text: String = (0..200_000).map(|i| format!("row {i}\n")).collect(); // ~2 MB
    env.write("big.txt", &text);
    let plan = env
        .plan(&EditFile::new(), edits("big.txt", &[("row 123456\n", "")]))
        .await
        .unwrap();
    let change = plan.change.unwrap();
    assert!(change.too_large);
    assert_eq!((change.old_text, change.new_text), (None, None));
    assert_eq!(change.lines, 199_999);
    assert_eq!(
        change.diff,
        "@@ -123454,7 +123454,6 @@\n row 123453\n row 123454\n row 123455\n-row 123456\n row 123457\n row 123458\n row 123459\n"
    );
}

#[tokio::test]
async fn a_file_changed_since_the_plan_is_not_written() {
    let env = Env::new();
    env.write("r.txt", "v1\n");
    let args = edits("r.txt", &[("v1", "v2")]);
    let plan = env.plan(&EditFile::new(), args.clone()).await.unwrap();
    env.write("r.txt", "v1 changed elsewhere\n");
    assert_eq!(
        env.run(&EditFile::new(), args.clone(), plan).await,
        "r.txt changed on disk since it was read; read it again"
    );
    assert_eq!(env.read_str("r.txt"), "v1 changed elsewhere\n");
    // Deleted since the plan: also refused, and not recreated.
    let plan = env
        .plan(&EditFile::new(), edits("r.txt", &[("changed", "x")]))
        .await
        .unwrap();
    fs::remove_file(env.path("r.txt")).unwrap();
    assert_eq!(
        env.run(&EditFile::new(), edits("r.txt", &[("changed", "x")]), plan)
            .await,
        "r.txt changed on disk since it was read; read it again"
    );
    assert!(!env.path("r.txt").exists());
}

#[tokio::test]
async fn bad_arguments() {
    let env = Env::new();
    assert_eq!(
        env.call(&EditFile::new(), json!({"path": "x"})).await,
        "invalid arguments for edit_file: missing field `edits`; send a JSON object matching the tool's schema"
    );
}

#[tokio::test]
async fn spec_declares_the_reference_fields() {
    let spec = EditFile::new().spec();
    assert_eq!(spec.name, "edit_file");
    assert_eq!(spec.parameters["required"], json!(["path", "edits"]));
    assert_eq!(
        spec.parameters["properties"]["edits"]["items"]["required"],
        json!(["old", "new"])
    );
    assert!(spec.parameters["properties"].get("dry_run").is_some());
}

#[tokio::test]
async fn a_hard_linked_file_is_edited_in_place_for_every_name() {
    let env = Env::new();
    env.write("a.txt", "one\ntwo\n");
    fs::hard_link(env.path("a.txt"), env.path("b.txt")).unwrap();
    let ino = fs::metadata(env.path("a.txt")).unwrap().ino();
    let out = env
        .outcome(&EditFile::new(), edits("a.txt", &[("two", "2")]))
        .await;
    assert!(!out.failed, "{}", out.text);
    assert_eq!(env.read_str("b.txt"), "one\n2\n");
    assert_eq!(env.read_str("a.txt"), "one\n2\n");
    let meta = fs::metadata(env.path("a.txt")).unwrap();
    assert_eq!((meta.ino(), meta.nlink()), (ino, 2));
    assert_eq!(env.names(""), ["a.txt", "b.txt"]);
}

#[tokio::test]
async fn the_owner_is_kept() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("the_owner_is_kept: skipped, only root can give a file away");
        return;
    }
    let env = Env::new();
    let p = env.write("owned.txt", "v1\n");
    std::os::unix::fs::chown(&p, Some(1234), Some(1234)).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
    let ino = fs::metadata(&p).unwrap().ino();
    let out = env
        .outcome(&EditFile::new(), edits("owned.txt", &[("v1", "v2")]))
        .await;
    assert!(!out.failed, "{}", out.text);
    let meta = fs::metadata(&p).unwrap();
    assert_ne!(meta.ino(), ino, "replaced by rename");
    assert_eq!((meta.uid(), meta.gid()), (1234, 1234));
    assert_eq!(mode(&p), 0o640);
    assert_eq!(env.read_str("owned.txt"), "v2\n");
}

#[tokio::test]
async fn dry_run_may_come_as_a_string() {
    let env = Env::new();
    env.write("f.txt", "a\n");
    let mut args = edits("f.txt", &[("a", "A")]);
    args["dry_run"] = json!("true");
    let out = env.call(&EditFile::new(), args.clone()).await;
    assert!(out.starts_with("dry run: edited f.txt: "), "{out}");
    assert_eq!(env.read_str("f.txt"), "a\n");
    args["dry_run"] = json!("false");
    let out = env.outcome(&EditFile::new(), args).await;
    assert!(out.text.starts_with("edited f.txt: "), "{}", out.text);
    assert!(!out.failed);
    assert_eq!(env.read_str("f.txt"), "A\n");
}

#[tokio::test]
async fn refusals_and_stale_plans_are_failures() {
    let env = Env::new();
    env.write("r.txt", "x\nx\n");
    assert!(
        env.outcome(&EditFile::new(), edits("r.txt", &[("x", "y")]))
            .await
            .failed
    );
    assert!(
        env.outcome(&EditFile::new(), edits("nope.txt", &[("x", "y")]))
            .await
            .failed
    );
    let args = edits("r.txt", &[("x\nx", "y")]);
    let plan = env.plan(&EditFile::new(), args.clone()).await.unwrap();
    env.write("r.txt", "x\nx\nz\n");
    let out = env.run_output(&EditFile::new(), args, plan).await;
    assert_eq!(
        out,
        mm_tools::ToolOutput::fail("r.txt changed on disk since it was read; read it again")
    );
    // Nothing to change is not a failure.
    let out = env
        .outcome(&EditFile::new(), edits("r.txt", &[("z", "z")]))
        .await;
    assert_eq!(
        out,
        mm_tools::ToolOutput::ok("r.txt unchanged: the content is identical, nothing written")
    );
}
