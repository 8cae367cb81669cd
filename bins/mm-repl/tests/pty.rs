//! The REPL in a real pseudo-terminal against the mock model: a
//! conversation with a bash call and its preview, the permission prompt
//! answered a, s and r, cancelling a long command with Escape and Ctrl-C,
//! /compact, /new and --continue.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{World, all_text, expect, messages, type_line, wait_for};
use expectrl::Expect;
use mm_mock::Reply;
use mm_test_support::procs;

const PROMPT: &str = "mm> ";

fn quit(mut s: expectrl::session::OsSession) {
    type_line(&mut s, "/quit");
    let ended = wait_for(Duration::from_secs(10), || {
        !s.get_process().is_alive().unwrap_or(false)
    });
    assert!(ended, "mm-repl did not quit");
}

#[test]
fn a_conversation_with_a_bash_call_and_its_preview() {
    let script = vec![
        Reply::tool_call(
            "c1",
            "bash",
            r#"{"command":"printf 'l1\\nl2\\nl3\\nl4\\nl5\\n'"}"#,
        ),
        Reply::text("Five lines."),
    ];
    let w = World::new(script, "previewLines: 3\n");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    assert!(
        banner.contains(&format!("mm {}", mm_agent::version())),
        "{banner}"
    );
    assert!(banner.contains("openai-compatible/test"), "{banner}");
    assert!(banner.contains(&w.cwd.display().to_string()), "{banner}");
    assert!(
        banner.contains("bash, read_file, write_file, edit_file"),
        "{banner}"
    );
    type_line(&mut s, "count lines");
    let turn = expect(&mut s, "Five lines.");
    assert!(turn.contains("🛠️  bash: printf"), "{turn}");
    for l in ["   l1", "   l2", "   l3"] {
        assert!(turn.contains(l), "no {l:?} in {turn:?}");
    }
    assert!(!turn.contains("   l4"), "only previewLines lines: {turn:?}");
    // A cut preview says so.
    assert!(turn.contains("   … 2 more lines"), "{turn:?}");
    let after = expect(&mut s, PROMPT);
    assert!(after.contains("⚙ 1 command(s)"), "recap: {after:?}");
    assert!(
        !format!("{banner}{turn}{after}").contains("\x1b[2m"),
        "NO_COLOR: no dim"
    );
    quit(s);
    let chats = w.chats();
    assert_eq!(
        messages(&chats[1]).last().unwrap()["content"],
        "l1\nl2\nl3\nl4\nl5\n"
    );
}

#[test]
fn color_is_used_on_a_terminal_without_no_color() {
    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"true"}"#),
        Reply::text("ok"),
    ];
    let w = World::new(script, "");
    let mut s = w.pty(&[], &[]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "run true");
    let turn = expect(&mut s, "ok");
    assert!(
        turn.contains("\x1b[2m   (no output)\x1b[0m"),
        "dimmed (no output): {turn:?}"
    );
    expect(&mut s, PROMPT);
    quit(s);
}

fn edit(id: &str, old: &str, new: &str) -> Reply {
    Reply::tool_call(
        id,
        "edit_file",
        serde_json::json!({"path": "a.txt", "edits": [{"old": old, "new": new}]}).to_string(),
    )
}

#[test]
fn permission_prompt_answered_r_a_and_s() {
    let script = vec![
        edit("e1", "one", "uno"),
        Reply::text("Rejected, fine."),
        edit("e2", "two", "dos"),
        Reply::text("Edited once."),
        edit("e3", "three", "tres"),
        Reply::text("Edited for the session."),
        edit("e4", "one", "uno"),
        Reply::text("No question this time."),
    ];
    let w = World::new(script, "permissions: ask\n");
    let file = w.cwd.join("a.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let ask = "allow? [y/a/Enter] allow once · [s] allow for this session · [n/r] reject";
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);

    type_line(&mut s, "first edit");
    let shown = expect(&mut s, ask);
    assert!(shown.contains("📝 edit_file: a.txt"), "{shown:?}");
    assert!(
        shown.contains("-one") && shown.contains("+uno"),
        "the diff is shown first: {shown:?}"
    );
    // `r`, then a reason for the model, then Enter.
    s.send("r").unwrap();
    expect(&mut s, "why? (told to the model");
    s.send("keep the English wordx\x7f\r").unwrap();
    expect(&mut s, "rejected");
    expect(&mut s, "Rejected, fine.");
    expect(&mut s, PROMPT);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\nthree\n");

    type_line(&mut s, "second edit");
    expect(&mut s, ask);
    s.send("a").unwrap();
    expect(&mut s, "allowed once");
    let after = expect(&mut s, "Edited once.");
    // The diff was shown while asking; not a second time.
    assert!(after.contains("edited a.txt: 1 edit(s)"), "{after:?}");
    assert!(!after.contains("+dos"), "{after:?}");
    expect(&mut s, PROMPT);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ndos\nthree\n");

    type_line(&mut s, "third edit");
    expect(&mut s, ask);
    s.send("s").unwrap();
    expect(&mut s, "allowed for the session");
    expect(&mut s, "Edited for the session.");
    expect(&mut s, PROMPT);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ndos\ntres\n");

    type_line(&mut s, "fourth edit");
    let turn = expect(&mut s, "No question this time.");
    // The status line is drawn again under each line: not part of them.
    let turn = strip_ansi(&without_spinner(&turn));
    assert!(
        !turn.contains("allow?"),
        "allowed for the session: no prompt: {turn:?}"
    );
    // Not asked, the diff is shown under the headline all the same.
    assert!(
        turn.contains("   -one\r\n   +uno\r\n"),
        "the diff of an edit not asked about: {turn:?}"
    );
    expect(&mut s, PROMPT);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "uno\ndos\ntres\n");
    quit(s);

    let chats = w.chats();
    let result = |i: usize| {
        messages(&chats[i]).last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        result(1),
        "[edit rejected by the user]\nThe user says: keep the English word"
    );
    assert!(
        result(3).starts_with("edited a.txt: 1 edit(s)"),
        "{}",
        result(3)
    );
    assert!(
        result(5).starts_with("edited a.txt: 1 edit(s)"),
        "{}",
        result(5)
    );
    assert!(
        result(7).starts_with("edited a.txt: 1 edit(s)"),
        "{}",
        result(7)
    );
}

/// Send `key` (after `typed`, keys pressed during the turn) while
/// `marker`'s sleep runs; the prompt must come back fast and no process of
/// the command may be left.
fn cancel_with(
    s: &mut expectrl::session::OsSession,
    question: &str,
    marker: &str,
    typed: &str,
    key: &str,
) {
    type_line(s, question);
    expect(s, &format!("🛠️  bash: sleep {marker}"));
    assert!(
        wait_for(Duration::from_secs(10), || !procs::with_cmdline(marker)
            .is_empty()),
        "the command never started"
    );
    if !typed.is_empty() {
        s.send(typed).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    let start = Instant::now();
    s.send(key).unwrap();
    expect(s, "cancelled");
    expect(s, PROMPT);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        wait_for(Duration::from_secs(3), || procs::with_cmdline(marker)
            .is_empty()),
        "left behind: {:?}",
        procs::with_cmdline(marker)
    );
}

#[test]
fn escape_and_ctrl_c_cancel_a_long_command_and_keep_the_history() {
    let script = vec![
        Reply::tool_call("c1", "bash", r#"{"command":"sleep 31.25"}"#),
        Reply::tool_call("c2", "bash", r#"{"command":"sleep 32.75"}"#),
        Reply::text("Still here."),
    ];
    let w = World::new(script, "bashTimeout: 60\n");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    cancel_with(&mut s, "wait a while", "31.25", "", "\x1b");
    // What is typed during a turn is waiting at the next prompt.
    cancel_with(&mut s, "wait again", "32.75", "are you there?", "\x03");
    expect(&mut s, "are you there?");
    s.send("\r").unwrap();
    expect(&mut s, "Still here.");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    assert_eq!(chats.len(), 3);
    let last = messages(&chats[2]);
    assert_eq!(last.last().unwrap()["content"], "are you there?");
    let all = all_text(&chats[2]);
    for q in ["wait a while", "wait again"] {
        assert!(all.contains(q), "history kept: {q} missing from {all}");
    }
    // Each cancelled call still has a result, so the request is valid.
    let tool_results = last.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(tool_results, 2);
}

#[test]
fn sigterm_kills_the_running_command_and_exits() {
    let script = vec![Reply::tool_call(
        "c1",
        "bash",
        r#"{"command":"sleep 34.25"}"#,
    )];
    let w = World::new(script, "bashTimeout: 60\n");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "wait");
    expect(&mut s, "🛠️  bash: sleep 34.25");
    assert!(wait_for(Duration::from_secs(10), || !procs::with_cmdline(
        "34.25"
    )
    .is_empty()));
    let pid = s.get_process().pid();
    s.get_process_mut()
        .signal(expectrl::process::unix::Signal::SIGTERM)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        match s.get_process().status() {
            Ok(expectrl::process::unix::WaitStatus::StillAlive) | Err(_) => {}
            Ok(other) => break other,
        }
        assert!(Instant::now() < deadline, "mm-repl did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        status,
        expectrl::process::unix::WaitStatus::Exited(pid, 143),
        "128 + SIGTERM"
    );
    assert!(
        wait_for(Duration::from_secs(3), || procs::with_cmdline("34.25")
            .is_empty()),
        "left behind: {:?}",
        procs::with_cmdline("34.25")
    );
}

#[test]
fn compact_replaces_the_history_with_a_summary() {
    let script = vec![
        Reply::text("Answer one."),
        Reply::text("Answer two."),
        Reply::text("SUMMARY: the user asked two questions."),
        Reply::text("Answer three."),
    ];
    let w = World::new(script, "compact:\n  keepRecent: 1\n");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "question one");
    expect(&mut s, "Answer one.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "question two");
    expect(&mut s, "Answer two.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/compact");
    let shown = expect(&mut s, "compacted: 4 messages → summary of");
    assert!(!shown.contains("error"), "{shown}");
    expect(&mut s, PROMPT);
    type_line(&mut s, "question three");
    expect(&mut s, "Answer three.");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    assert_eq!(chats.len(), 4);
    let after = all_text(&chats[3]);
    assert!(
        after.contains("SUMMARY: the user asked two questions."),
        "{after}"
    );
    assert!(
        after.contains(mm_agent::compact::SUMMARY_PREFIX.trim_end()),
        "{after}"
    );
    assert!(!after.contains("question one"), "compacted away: {after}");
    assert!(after.contains("question three"));
}

#[test]
fn new_forgets_the_conversation_and_its_tokens() {
    use mm_mock::Step;
    let answer = |text: &str| {
        Reply::stream(vec![
            Step::text(text),
            Step::Usage {
                prompt: 1200,
                completion: 40,
            },
        ])
    };
    let w = World::new(
        vec![
            answer("First answer."),
            answer("Again."),
            answer("Second answer."),
        ],
        "",
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "remember the word apricot");
    expect(&mut s, "First answer.");
    // The session's tokens and how full the window is, after each turn.
    expect(&mut s, "context 3% of 32k · session in 1.2k · out 40");
    expect(&mut s, PROMPT);
    type_line(&mut s, "and again");
    expect(&mut s, "context 3% of 32k · session in 2.4k · out 80");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/new");
    expect(&mut s, "new session");
    expect(&mut s, PROMPT);
    type_line(&mut s, "what was the word?");
    expect(&mut s, "Second answer.");
    // A new session counts from nothing.
    expect(&mut s, "context 3% of 32k · session in 1.2k · out 40");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    let second = messages(&chats[2]);
    assert_eq!(
        second.len(),
        2,
        "system prompt and the new question only: {second:?}"
    );
    assert!(!all_text(&chats[2]).contains("apricot"));
}

#[test]
fn continue_resumes_the_latest_session() {
    let w = World::new(
        vec![
            Reply::text("Noted: apricot."),
            Reply::text("It was apricot."),
        ],
        "",
    );
    let out = w.run(&["-p", "remember the word apricot"], None);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let mut s = w.pty(&["--continue"], &[("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    assert!(banner.contains("resumed session"), "{banner}");
    assert!(banner.contains("(2 messages)"), "{banner}");
    // A recap of the last exchange, since the REPL does not print it again.
    assert!(
        banner.contains("last question: remember the word apricot"),
        "{banner}"
    );
    assert!(banner.contains("last answer: Noted: apricot."), "{banner}");
    type_line(&mut s, "what was the word?");
    expect(&mut s, "It was apricot.");
    expect(&mut s, PROMPT);
    quit(s);
    let contents: Vec<String> = messages(&w.chats()[1])
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        contents[1..],
        [
            "remember the word apricot",
            "Noted: apricot.",
            "what was the word?"
        ]
    );
}

#[test]
fn help_and_unknown_commands_and_ctrl_d() {
    let w = World::new(vec![], "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "/help");
    let help = expect(&mut s, "/quit");
    assert!(help.contains("/compact [focus]"), "{help}");
    let keys = expect(&mut s, PROMPT);
    assert!(
        keys.contains("\\ then Enter, or Alt-Enter, continues on a new line"),
        "{keys}"
    );
    type_line(&mut s, "/frobnicate");
    expect(&mut s, "unknown command /frobnicate");
    expect(&mut s, PROMPT);
    // Ctrl-C at the prompt clears the line; the REPL stays.
    s.send("half a question\x03").unwrap();
    expect(&mut s, PROMPT);
    assert!(s.get_process().is_alive().unwrap());
    s.send("\x04").unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || !s
            .get_process()
            .is_alive()
            .unwrap_or(true)),
        "Ctrl-D quits"
    );
    assert!(w.chats().is_empty(), "no question was sent");
    // The history file is in the data dir.
    let history = std::fs::read_to_string(w.user.path().join("data/mm/repl_history")).unwrap();
    assert!(history.contains("/help"), "{history}");
}

#[test]
fn the_demo_says_so_on_screen_and_keeps_its_sessions_apart() {
    let w = World::new(vec![], "");
    let mut s = w.pty(&["--demo"], &[("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    assert!(
        banner.contains("This is the demo: a scripted model"),
        "{banner}"
    );
    type_line(&mut s, "what is here?");
    expect(&mut s, "🛠️  bash: ls");
    expect(&mut s, "This was a demo");
    expect(&mut s, PROMPT);
    // Its sessions are listed, not blamed on a setting the user never set.
    type_line(&mut s, "/sessions");
    let listed = expect(&mut s, PROMPT);
    assert!(listed.contains("what is here?"), "{listed}");
    assert!(!listed.contains("sessions.enabled"), "{listed}");
    quit(s);
    assert!(
        !w.user.path().join("data/mm/sessions").exists() || session_ids(&w).is_empty(),
        "nothing of the demo among the real sessions"
    );
}

#[test]
fn copy_puts_the_last_answer_on_the_clipboard() {
    let script = vec![Reply::stream(vec![
        mm_mock::Step::reasoning("private thoughts"),
        mm_mock::Step::text("Copy me."),
    ])];
    let w = World::new(script, "");
    // A fake xclip first on the PATH records what it was given.
    let bin = w.user.path().join("fakebin");
    std::fs::create_dir(&bin).unwrap();
    let xclip = bin.join("xclip");
    std::fs::write(&xclip, "#!/bin/sh\ncat > \"$CLIP_OUT\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let clip = w.user.path().join("clip.txt");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let clip_text = clip.display().to_string();
    let env = [
        ("NO_COLOR", "1"),
        ("PATH", path.as_str()),
        ("DISPLAY", ":0"),
        ("CLIP_OUT", clip_text.as_str()),
    ];
    let mut s = w.pty(&[], &env);
    expect(&mut s, PROMPT);
    type_line(&mut s, "/copy");
    expect(&mut s, "nothing to copy yet");
    expect(&mut s, PROMPT);
    type_line(&mut s, "say something");
    expect(&mut s, "Copy me.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/copy");
    expect(&mut s, "Copied with xclip");
    expect(&mut s, PROMPT);
    quit(s);
    assert_eq!(
        std::fs::read_to_string(&clip).unwrap(),
        "Copy me.",
        "the answer, never the reasoning"
    );
}

/// Session ids on disk, oldest first (ids are time-ordered UUIDv7).
fn session_ids(w: &World) -> Vec<String> {
    let mut ids = Vec::new();
    let root = w.user.path().join("data/mm/sessions");
    for project in std::fs::read_dir(&root).unwrap().filter_map(Result::ok) {
        for f in std::fs::read_dir(project.path())
            .unwrap()
            .filter_map(Result::ok)
        {
            let name = f.file_name().into_string().unwrap();
            if let Some(id) = name.strip_suffix(".json") {
                ids.push(id.to_owned());
            }
        }
    }
    ids.sort();
    ids
}

#[test]
fn sessions_resume_and_model_commands() {
    let script = vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
    ];
    let w = World::new(script, "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "first topic");
    expect(&mut s, "One.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/new");
    expect(&mut s, "new session");
    expect(&mut s, PROMPT);
    type_line(&mut s, "second topic");
    expect(&mut s, "Two.");
    expect(&mut s, PROMPT);
    let ids = session_ids(&w);
    assert_eq!(ids.len(), 2, "{ids:?}");
    type_line(&mut s, "/sessions");
    let listed = expect(&mut s, "first topic");
    assert!(
        listed.contains(&format!("* {}", ids[1])),
        "current one marked first: {listed}"
    );
    assert!(listed.contains(&format!("  {}", ids[0])), "{listed}");
    expect(&mut s, PROMPT);
    // `/resume` alone is a list: Esc leaves it, typing filters it, Enter
    // resumes the row.
    type_line(&mut s, "/resume");
    let list = expect(&mut s, "second topic (this one)");
    assert!(list.contains("Resume which session?"), "{list}");
    s.send("\x1b").unwrap();
    expect(&mut s, PROMPT);
    type_line(&mut s, "/resume");
    expect(&mut s, "second topic (this one)");
    s.send("first").unwrap();
    s.send("\r").unwrap();
    expect(&mut s, &format!("resumed session {} (2 messages)", ids[0]));
    let recap = expect(&mut s, PROMPT);
    assert!(recap.contains("last question: first topic"), "{recap}");
    assert!(recap.contains("last answer: One."), "{recap}");
    type_line(&mut s, "/model openai-compatible/other");
    expect(&mut s, "model: openai-compatible/other at ");
    expect(&mut s, PROMPT);
    type_line(&mut s, "third");
    expect(&mut s, "Three.");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    assert_eq!(chats[2]["model"], "other");
    let all = all_text(&chats[2]);
    assert!(
        all.contains("first topic") && !all.contains("second topic"),
        "{all}"
    );
}

#[test]
fn term_dumb_gets_no_color_no_spinner_and_no_line_clearing() {
    // The same run on a terminal with escapes, as a baseline, then dumb.
    for (term, escapes) in [("xterm", true), ("dumb", false)] {
        let script = vec![
            Reply::tool_call("c1", "bash", r#"{"command":"true"}"#),
            Reply::text("ok"),
        ];
        let w = World::new(script, "");
        let mut s = w.pty(&["-p", "run true"], &[("TERM", term)]);
        let all = match s.expect(expectrl::Eof) {
            Ok(found) => String::from_utf8_lossy(found.as_bytes()).into_owned(),
            Err(e) => panic!("TERM={term}: waiting for the end: {e}"),
        };
        assert!(all.contains("ok"), "TERM={term}: {all:?}");
        assert!(all.contains("(no output)"), "TERM={term}: {all:?}");
        assert_eq!(all.contains('\x1b'), escapes, "TERM={term}: {all:?}");
    }
}

#[test]
fn custom_commands_instructions_and_init_in_the_repl() {
    let script = vec![Reply::text("Reviewed."), Reply::text("Wrote AGENTS.md.")];
    let w = World::new(script, "");
    let user = w.user.path().join("config/mm/commands");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("review.md"),
        "---\ndescription: Review one file\nargument-hint: <path>\n---\nReview @$1 and list the bugs.",
    )
    .unwrap();
    std::fs::create_dir_all(w.cwd.join(".mm/commands")).unwrap();
    std::fs::write(w.cwd.join(".mm/commands/new.md"), "clashes").unwrap();
    std::fs::create_dir_all(w.cwd.join("src")).unwrap();
    std::fs::write(w.cwd.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(w.cwd.join("AGENTS.md"), "Use tabs.\n").unwrap();
    std::fs::create_dir_all(w.cwd.join(".git")).unwrap();

    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    assert!(banner.contains("instructions  AGENTS.md"), "{banner}");
    let clash = std::fs::canonicalize(w.cwd.join(".mm/commands/new.md")).unwrap();
    assert!(
        banner.contains(&format!(
            "command file {} not loaded: /new is a built-in command",
            clash.display()
        )),
        "{banner}"
    );
    type_line(&mut s, "/help");
    let help = expect(&mut s, "Review one file (user)");
    assert!(help.contains("/review <path>"), "{help}");
    assert!(help.contains("/init"), "{help}");
    expect(&mut s, PROMPT);
    // Tab completes the custom name like a built-in one.
    s.send("/rev\t").unwrap();
    expect(&mut s, "/review ");
    type_line(&mut s, "src/lib.rs");
    expect(&mut s, "Reviewed.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "/init");
    expect(&mut s, "Wrote AGENTS.md.");
    expect(&mut s, PROMPT);
    quit(s);

    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    assert!(
        messages(&chats[0])[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("Project instructions from AGENTS.md:\nUse tabs.")
    );
    assert_eq!(
        messages(&chats[0]).last().unwrap()["content"],
        "Review @src/lib.rs and list the bugs.\n\n[attached file: src/lib.rs]\n```\npub fn f() {}\n```"
    );
    assert_eq!(
        messages(&chats[1]).last().unwrap()["content"],
        mm_agent::commands::INIT_PROMPT.replace("{file}", "AGENTS.md")
    );
}

#[test]
fn model_alone_lists_the_servers_models_and_marks_the_one_in_use() {
    let w = World::serving(
        vec![mm_mock::Reply::text("One."), mm_mock::Reply::text("Hi.")],
        "",
        mm_mock::Options {
            routes: vec![mm_mock::Route::get(
                "/v1/models",
                serde_json::json!({"object": "list", "data": [
                    {"id": "test", "max_model_len": 8192},
                    {"id": "qwen2.5-coder", "max_model_len": 32768},
                ]}),
            )],
            ..mm_mock::Options::default()
        },
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "first");
    expect(&mut s, "One.");
    expect(&mut s, PROMPT);
    // `/model` alone is a list of the server's models; typing filters it
    // and Enter switches.
    type_line(&mut s, "/model");
    expect(&mut s, "model: openai-compatible/test at ");
    expect(&mut s, "the server's models (Enter switches, Esc keeps it");
    expect(&mut s, "openai-compatible/qwen2.5-coder  (32768 tokens)");
    s.send("qwen").unwrap();
    s.send("\r").unwrap();
    // The line names the new model's window, not the old one's.
    let line = expect(&mut s, "model: openai-compatible/qwen2.5-coder at ");
    let line = format!("{line}{}", expect(&mut s, PROMPT));
    assert!(line.contains("window 32768 tokens"), "{line}");
    type_line(&mut s, "hello");
    expect(&mut s, "Hi.");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    assert_eq!(chats[1]["model"], "qwen2.5-coder");
    // The switch keeps the conversation, and the request's prefix is the
    // one before it, unchanged (the server's cache holds it).
    let before = chats[0]["messages"].as_array().unwrap();
    let after = chats[1]["messages"].as_array().unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(chats[1]["tools"], chats[0]["tools"]);
}

#[test]
fn a_bare_model_name_is_a_model_of_the_provider_in_use() {
    let w = World::serving(
        vec![mm_mock::Reply::text("Hi.")],
        "",
        mm_mock::Options {
            routes: vec![mm_mock::Route::get(
                "/v1/models",
                serde_json::json!({"object": "list", "data": [
                    {"id": "test", "max_model_len": 8192},
                    {"id": "smart-large", "max_model_len": 65536},
                ]}),
            )],
            ..mm_mock::Options::default()
        },
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "/model smart-large");
    let line = expect(&mut s, PROMPT);
    assert!(
        line.contains("model: openai-compatible/smart-large at "),
        "{line}"
    );
    assert!(line.contains("window 65536 tokens"), "{line}");
    type_line(&mut s, "hello");
    expect(&mut s, "Hi.");
    expect(&mut s, PROMPT);
    quit(s);
    assert_eq!(w.chats()[0]["model"], "smart-large");
}

#[test]
fn resume_without_an_id_opens_the_list_and_one_shot_mode_refuses_it() {
    let w = World::new(
        vec![Reply::text("Noted: apricot."), Reply::text("Noted: plum.")],
        "",
    );
    for q in ["remember apricot", "remember plum"] {
        let out = w.run(&["-p", q], None);
        assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    }
    let out = w.run(&["--resume", "-p", "hi"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::text(&out.stderr).contains("--resume without an id opens a list"),
        "{}",
        common::text(&out.stderr)
    );
    let mut s = w.pty(&["--resume"], &[("NO_COLOR", "1")]);
    let list = expect(&mut s, "remember apricot");
    assert!(list.contains("remember plum"), "newest first: {list}");
    // The newest is selected; Down picks the older one.
    s.send("\x1b[B").unwrap();
    s.send("\r").unwrap();
    expect(&mut s, "resumed session");
    let recap = expect(&mut s, PROMPT);
    assert!(recap.contains("last question: remember apricot"), "{recap}");
    quit(s);
}

/// An answer in Markdown, streamed in pieces that cut its marks in half.
fn markdown_answer() -> Reply {
    Reply::stream(vec![
        mm_mock::Step::reasoning("The user wants an overview."),
        mm_mock::Step::text("# Project ov"),
        mm_mock::Step::text("erview\n\nThis is **ti"),
        mm_mock::Step::text(
            "ny** and it points mm at a local server so that answers stay on this machine.\n\n| crate | lines |\n|---|--",
        ),
        mm_mock::Step::text("-|\n| mm-ui | 1200 |\n\n```rust\nfn main() {}\n```\n"),
    ])
}

#[test]
fn answers_render_markdown_wrapped_at_words() {
    let w = World::new(vec![markdown_answer()], "");
    let mut s = w.pty_sized(&[], &[("NO_COLOR", "1")], 40);
    expect(&mut s, PROMPT);
    type_line(&mut s, "overview please");
    let shown = strip_ansi(&without_spinner(&expect(&mut s, "fn main() {}")));
    expect(&mut s, PROMPT);
    quit(s);
    let lines: Vec<&str> = shown.lines().map(|l| l.trim_end_matches('\r')).collect();
    // Reasoning has its gutter, then a blank line before the answer.
    let at = lines
        .iter()
        .position(|l| l.contains("┊ The user wants an overview."))
        .unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(lines[at + 1], "", "{shown}");
    // Without color: the heading keeps its mark, emphasis loses its stars,
    // the table is laid out, code sits behind its bar.
    assert!(lines.contains(&"# Project overview"), "{shown}");
    assert!(!shown.contains("**"), "{shown}");
    assert!(lines.contains(&"crate │ lines"), "{shown}");
    assert!(lines.contains(&"mm-ui │ 1200"), "{shown}");
    assert!(lines.contains(&"│ fn main() {}"), "{shown}");
    // Words are never cut at the edge of the 40-column terminal.
    let paragraph: Vec<&str> = lines
        .iter()
        .copied()
        .skip_while(|l| !l.starts_with("This is tiny"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(paragraph.len() > 1, "{shown}");
    assert!(
        paragraph.iter().all(|l| l.chars().count() <= 40),
        "{paragraph:?}"
    );
    assert_eq!(
        paragraph.join(" "),
        "This is tiny and it points mm at a local server so that answers stay on this machine."
    );
}

/// The paragraph of [`markdown_answer`] as the screen wrapped it.
fn wrapped_paragraph(shown: &str) -> Vec<String> {
    strip_ansi(&without_spinner(shown))
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .skip_while(|l| !l.starts_with("This is tiny"))
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_answer_wraps_at_the_width_the_terminal_has_now() {
    let w = World::new(vec![markdown_answer(), markdown_answer()], "");
    let mut s = w.pty_sized(&[], &[("NO_COLOR", "1")], 40);
    expect(&mut s, PROMPT);
    type_line(&mut s, "overview please");
    let first = expect(&mut s, "fn main() {}");
    expect(&mut s, PROMPT);
    // The user widens the terminal between two answers.
    s.get_process_mut().set_window_size(70, 50).unwrap();
    type_line(&mut s, "again please");
    let second = expect(&mut s, "fn main() {}");
    expect(&mut s, PROMPT);
    quit(s);
    let narrow = wrapped_paragraph(&first);
    assert!(narrow.iter().all(|l| l.chars().count() <= 40), "{narrow:?}");
    let wide = wrapped_paragraph(&second);
    assert!(wide.iter().all(|l| l.chars().count() <= 70), "{wide:?}");
    assert!(wide[0].chars().count() > 40, "{wide:?}");
}

#[test]
fn answers_render_markdown_in_color() {
    let w = World::new(vec![markdown_answer()], "");
    let mut s = w.pty_sized(&[], &[], 80);
    expect(&mut s, PROMPT);
    type_line(&mut s, "overview please");
    let shown = expect(&mut s, "main");
    expect(&mut s, PROMPT);
    quit(s);
    // The heading bold, underlined and cyan; the emphasis bold; the
    // keyword colored; no Markdown marks left.
    assert!(shown.contains("\x1b[1;4;36mProject overview"), "{shown:?}");
    assert!(shown.contains("\x1b[1mtiny\x1b[0m"), "{shown:?}");
    assert!(shown.contains("\x1b[35mfn\x1b[0m"), "{shown:?}");
    assert!(
        !shown.contains("# Project") && !shown.contains("**"),
        "{shown:?}"
    );
}

#[test]
fn a_script_reading_stdout_gets_the_models_own_markdown() {
    let w = World::new(vec![markdown_answer()], "");
    let out = w.run(&["-p", "overview please"], None);
    let stdout = common::text(&out.stdout);
    assert!(
        stdout.starts_with("# Project overview\n\nThis is **tiny**"),
        "{stdout}"
    );
}

/// The built-in language servers that are missing are named once, in the
/// banner's lsp line: no warning per server (a server the user listed
/// still gets one).
#[test]
fn missing_default_language_servers_are_one_banner_line() {
    let w = World::new(vec![], "");
    // The world's settings list no server: take the built-in list.
    w.write_config(&format!(
        "model: openai-compatible/test\nbaseURL: {}/v1\n",
        w.server.url()
    ));
    let bin = w.user.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("rust-analyzer");
    std::fs::write(&fake, "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = bin.display().to_string();
    let mut s = w.pty(&[], &[("PATH", &path), ("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    quit(s);
    assert!(
        banner.contains(
            "lsp     rust-analyzer (.rs); not found: gopls, clangd, pyright, typescript-language-server"
        ),
        "{banner}"
    );
    assert!(!banner.contains("[warning: lsp server"), "{banner}");

    // Servers the user lists each get their warning.
    w.write_config(&format!(
        "model: openai-compatible/test\nbaseURL: {}/v1\nlsp:\n  servers:\n    - {{name: gopls, command: gopls, extensions: [.go]}}\n",
        w.server.url()
    ));
    let mut s = w.pty(&[], &[("PATH", &path), ("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    quit(s);
    assert!(
        banner.contains("[warning: lsp server gopls (gopls) not found on the PATH — skipped]"),
        "{banner}"
    );
}

#[test]
fn a_mention_says_what_it_attached() {
    let w = World::new(vec![Reply::text("Looked.")], "");
    std::fs::create_dir_all(w.cwd.join("src")).unwrap();
    std::fs::write(w.cwd.join("src/main.rs"), "fn main() {\n    run();\n}\n").unwrap();
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "fix @src/main.rs and @src please");
    let shown = expect(&mut s, "Looked.");
    expect(&mut s, PROMPT);
    quit(s);
    assert!(shown.contains("attached src/main.rs (3 lines)"), "{shown}");
    assert!(
        shown.contains("attached src (a directory, 1 entry)"),
        "{shown}"
    );
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// An edit shows its diff, folded like a command's output (context first);
/// a cut preview says how much was left out, and `/output` shows it whole.
fn an_edit_and_a_long_output(no_color: bool) {
    let script = vec![
        Reply::tool_call(
            "e1",
            "edit_file",
            serde_json::json!({"path": "f.txt", "edits": [{"old": "line 10\n", "new": "line ten\n"}]})
                .to_string(),
        ),
        Reply::tool_call("c1", "bash", r#"{"command":"seq 1 200"}"#),
        Reply::text("Done."),
    ];
    let w = World::new(script, "");
    std::fs::write(w.cwd.join("f.txt"), numbered(20)).unwrap();
    let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
    let mut s = w.pty(&[], env);
    expect(&mut s, PROMPT);
    type_line(&mut s, "edit and count");
    let turn = expect(&mut s, "Done.");
    let plain = without_spinner(&strip_ansi(&turn));
    assert!(
        plain.contains(concat!(
            "   edited f.txt: 1 edit(s), +1 -1 lines, first change at line 10\r\n",
            "   @@ -9,3 +9,3 @@\r\n",
            "    line 9\r\n",
            "   -line 10\r\n",
            "   +line ten\r\n",
            "    line 11\r\n",
        )),
        "{plain:?}"
    );
    assert!(
        plain.contains("   1\r\n   2\r\n   3\r\n   4\r\n   5\r\n   … 195 more lines\r\n"),
        "{plain:?}"
    );
    if no_color {
        for sgr in ["\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[2m"] {
            assert!(!turn.contains(sgr), "NO_COLOR: no colour: {turn:?}");
        }
    } else {
        assert!(turn.contains("\x1b[32m   +line ten"), "green: {turn:?}");
        assert!(turn.contains("\x1b[31m   -line 10"), "red: {turn:?}");
    }
    expect(&mut s, PROMPT);
    type_line(&mut s, "/output");
    let whole = expect(&mut s, "200\r\n");
    assert!(whole.contains("\r\n6\r\n7\r\n"), "{whole:?}");
    expect(&mut s, PROMPT);
    quit(s);
}

#[test]
fn an_edit_shows_its_diff_and_a_cut_preview_says_so() {
    an_edit_and_a_long_output(false);
}

#[test]
fn an_edit_shows_its_diff_and_a_cut_preview_says_so_without_color() {
    an_edit_and_a_long_output(true);
}

/// `text` without the spinner's frames (each drawn after a `\r` and
/// overwritten by what follows) and the returns that cleared them.
fn without_spinner(text: &str) -> String {
    let mut out = String::new();
    for (i, piece) in text.split('\r').enumerate() {
        let spinner = piece
            .chars()
            .next()
            .is_some_and(|c| mm_ui::spinner::FRAMES.contains(&c.to_string().as_str()));
        if i > 0 && !spinner {
            out.push('\r');
        }
        if !spinner {
            out.push_str(piece);
        }
    }
    // The carriage return that cleared the spinner's line.
    out.replace("\n\r", "\n")
}

/// `text` without its escape sequences (colours, cursor moves).
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    out
}

#[test]
fn backslash_enter_and_alt_enter_continue_the_question() {
    let w = World::new(vec![Reply::text("Two lines."), Reply::text("Three.")], "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    // `\` then Enter: the backslash becomes the line break.
    s.send("first line\\\r").unwrap();
    s.send("second line\r").unwrap();
    expect(&mut s, "Two lines.");
    expect(&mut s, PROMPT);
    // Alt-Enter: Esc then Enter, as a terminal sends it.
    s.send("one\x1b\rtwo\x1b\rthree\r").unwrap();
    expect(&mut s, "Three.");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    let question = |i: usize| messages(&chats[i]).last().unwrap()["content"].clone();
    assert_eq!(question(0), "first line\nsecond line");
    assert_eq!(question(1), "one\ntwo\nthree");
}

/// A long command's output shows as it comes: its first `previewLines`
/// lines at once, then a count in the spinner; nothing twice at the end.
fn a_long_command_streams(no_color: bool) {
    let script = vec![
        Reply::tool_call(
            "c1",
            "bash",
            r#"{"command":"for i in 1 2 3 4 5 6 7; do echo line $i; sleep 0.4; done"}"#,
        ),
        Reply::text("Seven lines."),
    ];
    let w = World::new(script, "");
    let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
    let mut s = w.pty(&[], env);
    expect(&mut s, PROMPT);
    type_line(&mut s, "count slowly");
    let first = expect(&mut s, "line 2");
    // Shown while it runs: the model has not had the result yet.
    assert_eq!(w.chats().len(), 1, "line 2 came before the command ended");
    let counted = expect(&mut s, "2 more lines");
    assert!(counted.contains("Running bash"), "{counted:?}");
    let turn = expect(&mut s, "Seven lines.");
    expect(&mut s, PROMPT);
    quit(s);
    let all = strip_ansi(&format!("{first}{counted}{turn}"));
    for i in 1..=5 {
        assert_eq!(
            all.matches(&format!("   line {i}\r\n")).count(),
            1,
            "line {i} once: {all:?}"
        );
    }
    assert!(!all.contains("line 6"), "{all:?}");
    assert!(all.contains("   … 2 more lines\r\n"), "{all:?}");
    if no_color {
        assert!(!turn.contains("\x1b[2m"), "NO_COLOR: {turn:?}");
    }
}

#[test]
fn a_long_command_shows_its_output_as_it_comes() {
    a_long_command_streams(false);
}

#[test]
fn a_long_command_shows_its_output_as_it_comes_without_color() {
    a_long_command_streams(true);
}

/// A clipboard write and a screen clear, as a model or a command may send.
const OSC52: &str = "\x1b]52;c;aGk=\x07";
const CLEAR: &str = "\x1b[2J";

/// A model that puts terminal escapes in its reasoning, its answer (cut
/// mid-sequence between stream chunks), a bash command line and that
/// command's output, then in its last answer.
fn hostile_script() -> Vec<Reply> {
    use mm_mock::Step;
    let command = format!("printf 'A{OSC52}B{CLEAR}C\\n'; printf 'before\\rafter\\n'");
    let arguments = serde_json::json!({ "command": command }).to_string();
    vec![
        Reply::stream(vec![
            Step::reasoning("Pondering \x1b]52;c;"),
            Step::reasoning("aGk=\x07quietly."),
            Step::text("Look \x1b]52;c;aG"),
            Step::text("k=\x07at \x1b["),
            Step::text("2Jthis.\n"),
            Step::tool_start(0, "c1", "bash"),
            Step::tool_args(0, arguments),
        ]),
        Reply::text(format!("Done{OSC52}{CLEAR} here.")),
    ]
}

/// What the terminal must never receive, and what must still be seen.
fn assert_harmless(all: &str) {
    assert!(!all.contains("\x1b]52"), "a clipboard write: {all:?}");
    assert!(!all.contains(CLEAR), "a screen clear: {all:?}");
    assert!(!all.contains("aGk="), "the sequence's payload: {all:?}");
    let seen = strip_ansi(all);
    for text in ["Look at this.", "Done here.", "   ABC"] {
        assert!(seen.contains(text), "{text:?} not in {seen:?}");
    }
    // The text a lone CR would let overwrite its line stays in sight.
    for line in ["   before\r\n", "   after\r\n"] {
        assert!(seen.contains(line), "{line:?} not in {seen:?}");
    }
}

#[test]
fn escapes_from_the_model_and_its_commands_never_reach_the_terminal() {
    let w = World::new(hostile_script(), "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "go");
    let turn = expect(&mut s, "here.");
    let after = expect(&mut s, PROMPT);
    quit(s);
    let all = format!("{turn}{after}");
    assert_harmless(&all);
    assert!(strip_ansi(&all).contains("Pondering quietly."), "{all:?}");
    // What the model got back is the command's output, untouched.
    let chats = w.chats();
    assert_eq!(
        messages(&chats[1]).last().unwrap()["content"],
        format!("A{OSC52}B{CLEAR}C\nbefore\rafter\n")
    );
}

#[test]
fn one_shot_on_a_terminal_is_sanitised_too() {
    let w = World::new(hostile_script(), "");
    let mut s = w.pty(&["-p", "go"], &[]);
    let all = match s.expect(expectrl::Eof) {
        Ok(found) => String::from_utf8_lossy(found.as_bytes()).into_owned(),
        Err(e) => panic!("waiting for the end: {e}"),
    };
    assert_harmless(&all);
}

#[test]
fn the_recap_of_continue_is_sanitised() {
    let w = World::new(vec![Reply::text(format!("Done{OSC52}{CLEAR} here."))], "");
    // Piped, the answer is recorded and printed as the model wrote it.
    let out = w.run(&["-p", "go"], None);
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let mut s = w.pty(&["--continue"], &[("NO_COLOR", "1")]);
    let banner = expect(&mut s, PROMPT);
    quit(s);
    assert!(banner.contains("last answer: Done here."), "{banner:?}");
    assert!(
        !banner.contains("\x1b]52") && !banner.contains(CLEAR),
        "{banner:?}"
    );
}
