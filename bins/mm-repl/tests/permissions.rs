//! Permission rules and the sandbox through the built `mm-repl`: one-shot
//! `-p` without a terminal (deny, ask rejected, a bad rule at start), the
//! REPL in a pseudo-terminal (`s` records the command's prefix,
//! `/permissions` lists it), and the Linux sandbox with the mock model
//! server: a write at HOME and a connection to the server's own port fail
//! from `bash`, while mm's own requests to that port go on working.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{World, expect, messages, text, type_line, wait_for};
use expectrl::Expect;
use mm_mock::Reply;

const PROMPT: &str = "mm> ";

fn bash(id: &str, command: &str) -> Reply {
    Reply::tool_call(
        id,
        "bash",
        serde_json::json!({ "command": command }).to_string(),
    )
}

/// The result the model got for each tool call, in order.
fn results(w: &World) -> Vec<String> {
    let chats = w.chats();
    let last = chats.last().unwrap();
    messages(last)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn one_shot_denies_by_rule_and_shows_the_rule() {
    let script = vec![
        bash("c1", "echo ok && rm -rf victim"),
        bash("c2", "echo still here"),
        Reply::text("done"),
    ];
    let w = World::new(
        script,
        "permissions:\n  default: allow\n  deny: [\"bash(rm -rf *)\"]\n",
    );
    std::fs::create_dir(w.cwd.join("victim")).unwrap();
    let out = w.run(&["-p", "clean up"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(w.cwd.join("victim").exists(), "the denied command ran");
    assert_eq!(
        results(&w),
        ["[denied by rule \"bash(rm -rf *)\"]", "still here\n"]
    );
    assert!(
        text(&out.stderr).contains("[denied by rule \"bash(rm -rf *)\"]"),
        "the terminal shows the rule: {}",
        text(&out.stderr)
    );
}

#[test]
fn one_shot_runs_what_every_part_allows_and_rejects_what_would_ask() {
    let script = vec![
        bash("c1", "echo hi | cat"),
        bash("c2", "echo hi && touch made-it"),
        Reply::text("done"),
    ];
    let w = World::new(
        script,
        "permissions:\n  default: ask\n  allow: [\"bash(echo *)\", \"bash(cat)\"]\n",
    );
    let out = w.run(&["-p", "go"], None);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(
        results(&w),
        [
            "hi\n",
            "[not run: this call needs permission and there is no terminal to ask; use --permissions or an allow rule]"
        ]
    );
    assert!(!w.cwd.join("made-it").exists());
    assert!(text(&out.stderr).contains("no terminal to ask"));
}

/// Issue 29, point 3: with only `bash(echo *)` allowed, lines that make
/// bash evaluate a variable's value (indirection, prompt expansion,
/// arithmetic, array subscripts) ask; without a terminal they are refused,
/// so no marker file is ever made. A plain echo still runs unasked.
#[test]
fn one_shot_asks_before_what_bash_would_evaluate() {
    let attacks = [
        "for x in 'a[$(touch E1)]'; do echo ${!x}; done",
        "for x in '$(touch E2)'; do echo ${x@P}; done",
        "for x in 'a[$(touch E3)]'; do echo $[x]; done",
        "for x in 'a[$(touch E4)]'; do echo ${a[x]}; done",
        "for x in 'a[$(touch E5)]'; do echo ${x:x}; done",
        "for x in 'a[$(touch E6)]'; do echo; ((x)); done",
        "for x in 'a[$(touch E7)]'; do echo; [[ x -eq 0 ]]; done",
        "for x in 'a[$(touch E8)]'; do echo $(( $x )); done",
    ];
    let mut script = vec![bash("c0", "echo plain")];
    for (i, line) in attacks.iter().enumerate() {
        script.push(bash(&format!("c{}", i + 1), line));
    }
    script.push(Reply::text("done"));
    let w = World::new(
        script,
        "permissions:\n  default: ask\n  allow: [\"bash(echo *)\"]\n",
    );
    let out = w.run(&["-p", "go"], None);
    let stderr = text(&out.stderr);
    let got = results(&w);
    assert_eq!(got.len(), attacks.len() + 1, "{stderr}");
    assert_eq!(got[0], "plain\n");
    for (i, line) in attacks.iter().enumerate() {
        assert_eq!(got[i + 1], mm_repl::keys::NO_TERMINAL, "{line}");
        let marker = w.cwd.join(format!("E{}", i + 1));
        assert!(!marker.exists(), "{line} ran");
    }
}

/// Issue 29, point 12: spellings of a denied command are denied by the
/// rule; none runs.
#[test]
fn one_shot_denies_the_spellings_of_a_denied_command() {
    let spellings = [
        "{rm,-rf,victim}",
        "/bin/r[m] -rf victim",
        "$'\\x72m' -rf victim",
        "bash <<< 'rm -rf victim'",
        "echo 'rm -rf victim' | sh",
        "unshare -r rm -rf victim",
        "prlimit --nofile=64 rm -rf victim",
        "setpriv --reuid=0 rm -rf victim",
        "fakeroot rm -rf victim",
        "script -qc 'rm -rf victim' typescript",
        "rm -r -f victim",
        "rm -fr victim",
        "rm --recursive --force victim",
        "sh -c -- 'rm -rf victim'",
        "rm$IFS-rf victim",
        "x=rm; $x -rf victim",
    ];
    let mut script: Vec<Reply> = spellings
        .iter()
        .enumerate()
        .map(|(i, line)| bash(&format!("c{i}"), line))
        .collect();
    script.push(Reply::text("done"));
    let w = World::new(
        script,
        "permissions:\n  default: allow\n  deny: [\"bash(rm -rf *)\"]\n",
    );
    std::fs::create_dir(w.cwd.join("victim")).unwrap();
    let out = w.run(&["-p", "clean up"], None);
    let got = results(&w);
    assert_eq!(got.len(), spellings.len(), "{}", text(&out.stderr));
    for (line, result) in spellings.iter().zip(&got) {
        assert_eq!(result, "[denied by rule \"bash(rm -rf *)\"]", "{line}");
    }
    assert!(w.cwd.join("victim").exists());
}

/// Issue 29, point 4 (rules): a redirection through a dangling symlink, or
/// through a glob that matches a symlink, writes outside the working
/// directory; an allow rule for the command does not cover it.
#[test]
fn one_shot_asks_before_a_redirection_that_leads_outside() {
    let script = vec![
        bash("c1", "git status > dangling"),
        bash("c2", "git status > lin?"),
        bash("c3", "git status --short > inside.txt"),
        Reply::text("done"),
    ];
    let w = World::new(
        script,
        "permissions:\n  default: ask\n  allow: [\"bash(git status*)\"]\n",
    );
    let outside = w.user.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(outside.join("escaped"), w.cwd.join("dangling")).unwrap();
    std::os::unix::fs::symlink(outside.join("globbed"), w.cwd.join("link")).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&w.cwd)
        .status()
        .unwrap();
    assert!(init.success());
    let out = w.run(&["-p", "status"], None);
    assert_eq!(
        results(&w)[..2],
        [mm_repl::keys::NO_TERMINAL, mm_repl::keys::NO_TERMINAL],
        "{}",
        text(&out.stderr)
    );
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    assert!(w.cwd.join("inside.txt").exists(), "the allowed call ran");
}

#[test]
fn a_bad_rule_stops_mm_at_start_naming_it() {
    let w = World::new(vec![], "permissions:\n  deny: [\"bash(rm -rf\"]\n");
    let out = w.run(&["-p", "x"], None);
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains("permissions.deny[0]: \"bash(rm -rf\": expected TOOL(PATTERN)"),
        "{err}"
    );
    assert!(w.chats().is_empty());
}

#[test]
fn a_project_file_may_not_set_rules_or_the_sandbox() {
    for (yaml, key) in [
        ("permissions:\n  allow: [bash]\n", "permissions.allow"),
        ("sandbox: off\n", "sandbox"),
        ("sandboxNetwork: true\n", "sandboxNetwork"),
    ] {
        let w = World::new(vec![], "");
        std::fs::create_dir_all(w.cwd.join(".mm")).unwrap();
        std::fs::write(w.cwd.join(".mm/config.yaml"), yaml).unwrap();
        let out = w.run(&["-p", "x"], None);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(
            err.contains(".mm/config.yaml") && err.contains(&format!("{key} may not be set")),
            "{err}"
        );
    }
}

#[test]
fn s_records_the_prefix_and_permissions_lists_it() {
    let script = vec![
        bash("c1", "echo one"),
        Reply::text("First."),
        bash("c2", "echo one two"),
        Reply::text("Second, unasked."),
        bash("c3", "printf three"),
        Reply::text("Third, refused."),
    ];
    let w = World::new(
        script,
        "permissions:\n  default: ask\n  deny: [\"bash(rm -rf *)\"]\n",
    );
    let ask = "allow? [y/a/Enter] allow once · [s] allow for this session · [n/r] reject";
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);

    type_line(&mut s, "first");
    expect(&mut s, ask);
    s.send("s").unwrap();
    expect(&mut s, "session rule added: bash(echo one *)");
    expect(&mut s, "First.");
    expect(&mut s, PROMPT);

    type_line(&mut s, "second");
    let turn = expect(&mut s, "Second, unasked.");
    assert!(!turn.contains("allow?"), "{turn:?}");
    expect(&mut s, PROMPT);

    type_line(&mut s, "third");
    expect(&mut s, ask);
    // `r`, then Enter: no reason.
    s.send("r\r").unwrap();
    expect(&mut s, "Third, refused.");
    expect(&mut s, PROMPT);

    type_line(&mut s, "/permissions");
    let listed = expect(&mut s, "sandbox: off");
    for line in [
        "default: ask",
        "deny: bash(rm -rf *)",
        "allowed for this session: bash(echo one *)",
    ] {
        assert!(listed.contains(line), "{line} in {listed:?}");
    }
    expect(&mut s, PROMPT);
    type_line(&mut s, "/quit");
    assert!(wait_for(Duration::from_secs(10), || {
        !s.get_process().is_alive().unwrap_or(false)
    }));
    assert_eq!(
        results(&w),
        ["one\n", "one two\n", "[command rejected by the user]"]
    );
}

/// A world whose bash commands run in the sandbox, with HOME and the temp
/// folder mm is given (`TMPDIR`) outside the working directory and apart.
fn sandboxed(script: Vec<Reply>, extra: &str) -> (World, PathBuf, PathBuf) {
    let w = World::new(script, &format!("sandbox: workspace-write\n{extra}"));
    let home = w.user.path().join("home").canonicalize().unwrap();
    let tmp = w.user.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    (w, home, tmp)
}

/// Whether this kernel can enforce the sandbox; says so loudly when not.
fn enforced(w: &World) -> bool {
    let probe = mm_policy::Sandbox::new(
        mm_policy::SandboxMode::WorkspaceWrite,
        false,
        &w.cwd,
        &w.cwd,
    );
    if let Some(why) = probe.unavailable() {
        eprintln!("SKIPPED: the sandbox cannot be enforced on this kernel: {why}");
        return false;
    }
    true
}

/// A write the sandbox refused: Landlock's error, or the read-only mount
/// layer's before it.
fn refused(result: &str) -> bool {
    result.contains("Permission denied") || result.contains("Read-only file system")
}

#[test]
fn the_sandbox_keeps_bash_in_the_working_directory_and_off_the_network() {
    let (w, home, tmp) = sandboxed(vec![], "");
    if !enforced(&w) {
        return;
    }
    let port = w.server.addr().port();
    for reply in [
        bash("c1", "touch ~/x"),
        bash("c2", "touch ./y && echo made"),
        bash(
            "c3",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ),
        bash("c4", "ln -s ~ out && echo x > out/escaped"),
        Reply::text("All done."),
    ] {
        w.server.push(reply);
    }
    let mut cmd = w.command(&["-p", "try things"]);
    cmd.env("TMPDIR", &tmp);
    let out = common::run_bounded(cmd, None);
    let stderr = text(&out.stderr);
    // mm's own requests reached the server to the end.
    assert_eq!(text(&out.stdout), "All done.\n", "{stderr}");
    assert_eq!(w.chats().len(), 5);
    let got = results(&w);
    assert!(refused(&got[0]), "{}", got[0]);
    assert!(!home.join("x").exists());
    assert_eq!(got[1], "made\n");
    assert!(w.cwd.join("y").exists());
    assert!(
        got[2].contains("Operation not permitted") && !got[2].contains("connected"),
        "{}",
        got[2]
    );
    assert!(refused(&got[3]), "{}", got[3]);
    assert!(!home.join("escaped").exists());
    assert!(
        stderr
            .contains("the sandbox may have blocked this command (workspace-write: writes only in"),
        "{stderr}"
    );
}
