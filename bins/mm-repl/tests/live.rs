//! What a person meets in the REPL while a turn runs (issue 37): one
//! interrupt model (Esc/Ctrl-C stop a turn, Ctrl-C clears a draft, Ctrl-C
//! twice on an empty line quits), answers shown line by line under one
//! status line, messages queued with Enter during a turn, and permission
//! prompts answered y/n/Enter. Each test prints the screen it saw (plain
//! text) with `--nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{World, expect, messages, type_line, wait_for};
use expectrl::Expect;
use mm_mock::{Reply, Step};

const PROMPT: &str = "mm> ";

/// `text` without escape sequences and carriage returns, as a screen
/// excerpt for the report.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() || c == '~' {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

fn quit(mut s: expectrl::session::OsSession) {
    type_line(&mut s, "/quit");
    let ended = wait_for(Duration::from_secs(10), || {
        !s.get_process().is_alive().unwrap_or(false)
    });
    assert!(ended, "mm-repl did not quit");
}

/// A stalled answer: `first`, a pause long enough to act in, then `rest`.
fn stalled(first: &str, millis: u64, rest: &str) -> Reply {
    Reply::stream(vec![
        Step::text(first),
        Step::stall(millis),
        Step::text(rest),
    ])
}

/// A REPL asked `question`, whose answer has shown `first` and now pauses
/// `millis` before `rest`; `then` are the replies after it.
fn mid_answer(
    first: &str,
    millis: u64,
    rest: &str,
    then: Vec<Reply>,
    question: &str,
) -> (World, expectrl::session::OsSession) {
    let mut script = vec![stalled(first, millis, rest)];
    script.extend(then);
    let w = World::new(script, "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, question);
    expect(&mut s, first.trim_end());
    (w, s)
}

#[test]
fn ctrl_c_stops_a_streaming_answer_clears_a_draft_and_twice_on_an_empty_line_quits() {
    let (_w, mut s) = mid_answer(
        "Part one of the answer.\n\n",
        12_000,
        "Never shown.",
        vec![],
        "a long answer please",
    );
    s.send("\x03").unwrap();
    let stopped = expect(&mut s, PROMPT);
    assert!(stopped.contains("[cancelled]"), "{stopped:?}");
    eprintln!("--- REPL after Ctrl-C mid-answer:\n{}", plain(&stopped));
    // Ctrl-C on a draft clears it, and does not arm the quit.
    s.send("half a thought").unwrap();
    expect(&mut s, "half a thought");
    s.send("\x03").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(s.get_process().is_alive().unwrap());
    // Twice on an empty line: the first says how to quit, the second quits.
    s.send("\x03").unwrap();
    let hint = expect(&mut s, mm_ui::words::QUIT_HINT);
    eprintln!("--- REPL after Ctrl-C on an empty line:\n{}", plain(&hint));
    assert!(s.get_process().is_alive().unwrap());
    // The hint is followed by the prompt again; the second Ctrl-C goes to
    // that prompt. On a loaded machine one can reach the terminal before
    // the line editor reads it and be lost; each Ctrl-C either quits (the
    // one before armed it, within three seconds) or arms, so sending again
    // two seconds later still tests "twice quits".
    expect(&mut s, PROMPT);
    let mut ended = false;
    for _ in 0..4 {
        s.send("\x03").unwrap();
        ended = wait_for(Duration::from_secs(2), || {
            !s.get_process().is_alive().unwrap_or(false)
        });
        if ended {
            break;
        }
    }
    assert!(ended, "a second Ctrl-C on an empty line must quit");
}

/// A SIGINT that reaches mm as a signal (sent by another process, or a
/// Ctrl-C pressed while the line editor is between two reads) counts as
/// Ctrl-C: it stops the turn, and mm goes on. Before, it ended mm on the
/// spot.
#[test]
fn a_sigint_signal_stops_the_turn_and_mm_goes_on() {
    let (_w, mut s) = mid_answer(
        "Part one of the answer.\n\n",
        12_000,
        "Never shown.",
        vec![Reply::text("Second answer.")],
        "a long answer please",
    );
    let pid = s.get_process().pid().as_raw();
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let stopped = expect(&mut s, PROMPT);
    assert!(stopped.contains("[cancelled]"), "{:?}", plain(&stopped));
    assert!(s.get_process().is_alive().unwrap());
    type_line(&mut s, "and now?");
    expect(&mut s, "Second answer.");
    expect(&mut s, PROMPT);
    quit(s);
}

/// On a terminal the line editor does not drive (`TERM=dumb`, an Emacs
/// shell) lines are read cooked and Ctrl-C is SIGINT: it ends mm, as
/// Ctrl-C ends a cooked program, instead of waiting unseen.
#[test]
fn on_a_dumb_terminal_ctrl_c_at_the_prompt_ends_mm() {
    let w = World::new(vec![], "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1"), ("TERM", "dumb")]);
    expect(&mut s, PROMPT);
    s.send("\x03").unwrap();
    let ended = wait_for(Duration::from_secs(10), || {
        !s.get_process().is_alive().unwrap_or(false)
    });
    assert!(ended, "Ctrl-C at a cooked prompt did nothing");
}

/// `mm-repl -p` on a terminal: the key watch owns Ctrl-C, and a SIGINT sent
/// by another process cancels the turn too (exit 130, as without a
/// terminal) instead of ending mm before its shutdown.
#[test]
fn a_sigint_signal_cancels_a_one_shot_answer_on_a_terminal() {
    let w = World::new(
        vec![stalled(
            "Part one of the answer.\n\n",
            12_000,
            "Never shown.",
        )],
        "",
    );
    let mut s = w.pty(&["-p", "a long answer please"], &[("NO_COLOR", "1")]);
    expect(&mut s, "Part one of the answer.");
    let pid = s.get_process().pid();
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid.as_raw(), libc::SIGINT) }, 0);
    let status = s.get_process().wait().unwrap();
    assert_eq!(
        status,
        expectrl::process::unix::WaitStatus::Exited(pid, 130),
        "cancelled, not killed by the signal"
    );
}

#[test]
fn an_answer_shows_line_by_line_under_one_status_line() {
    let first = "The plan has a long first paragraph that a real model writes as one line \
                 without any break in it.\n\n- item one\n- item two\n- item three\n";
    let w = World::new(vec![stalled(first, 6_000, "- item four\n\nAll done.")], "");
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "the plan");
    // While the stream pauses: the paragraph and the finished items are on
    // screen, with the status line under them.
    let during = expect(&mut s, "• item two");
    assert!(during.contains("without any break in it."), "{during:?}");
    let status = expect(&mut s, "Esc to interrupt");
    let during = format!("{during}{status}");
    assert!(during.contains("Writing"), "{during:?}");
    assert!(during.contains("tokens"), "{during:?}");
    assert!(!during.contains("item four"), "{during:?}");
    eprintln!("--- REPL while the answer streams:\n{}", plain(&during));
    let rest = expect(&mut s, "All done.");
    assert!(rest.contains("• item four"), "{rest:?}");
    expect(&mut s, PROMPT);
    quit(s);
}

#[test]
fn enter_during_a_turn_queues_the_message_and_it_goes_when_the_turn_ends() {
    let (w, mut s) = mid_answer(
        "Working on it.\n\n",
        4_000,
        "First answer.",
        vec![Reply::text("Second answer.")],
        "first question",
    );
    s.send("second question\r").unwrap();
    let queued = expect(&mut s, "queued: second question");
    eprintln!("--- REPL with a message queued:\n{}", plain(&queued));
    expect(&mut s, "First answer.");
    let sent = expect(&mut s, "Second answer.");
    assert!(sent.contains("mm> second question"), "{sent:?}");
    eprintln!("--- REPL when the queue is sent:\n{}", plain(&sent));
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(
        messages(&chats[1]).last().unwrap()["content"],
        "second question"
    );
}

#[test]
fn escape_puts_queued_messages_back_in_the_input() {
    let (w, mut s) = mid_answer(
        "Working on it.\n\n",
        12_000,
        "Never shown.",
        vec![Reply::text("Answered the queued one.")],
        "first question",
    );
    s.send("try this instead\r").unwrap();
    expect(&mut s, "queued: try this instead");
    s.send("\x1b").unwrap();
    expect(&mut s, "[cancelled]");
    // Not sent: it waits in the input, to edit or send.
    let back = expect(&mut s, "try this instead");
    eprintln!("--- REPL after Esc with a queue:\n{}", plain(&back));
    assert_eq!(w.chats().len(), 1);
    s.send("\r").unwrap();
    expect(&mut s, "Answered the queued one.");
    expect(&mut s, PROMPT);
    quit(s);
    assert_eq!(
        messages(&w.chats()[1]).last().unwrap()["content"],
        "try this instead"
    );
}

#[test]
fn a_permission_prompt_takes_y_n_and_enter_and_says_so() {
    let bash = |id: &str, cmd: &str| {
        Reply::tool_call(
            id,
            "bash",
            serde_json::json!({ "command": cmd }).to_string(),
        )
    };
    let w = World::new(
        vec![
            bash("c1", "echo yes-key"),
            Reply::text("One."),
            bash("c2", "echo enter-key"),
            Reply::text("Two."),
            bash("c3", "echo no-key"),
            Reply::text("Three."),
        ],
        "permissions: ask\n",
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    let ask = "[y/a/Enter] allow once · [s] allow for this session · [n/r] reject";
    type_line(&mut s, "one");
    let asked = expect(&mut s, ask);
    eprintln!("--- REPL permission prompt:\n{}", plain(&asked));
    s.send("y").unwrap();
    expect(&mut s, "allowed once");
    expect(&mut s, "One.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "two");
    expect(&mut s, ask);
    s.send("\r").unwrap();
    expect(&mut s, "allowed once");
    expect(&mut s, "Two.");
    expect(&mut s, PROMPT);
    type_line(&mut s, "three");
    expect(&mut s, ask);
    s.send("n").unwrap();
    expect(&mut s, "why?");
    s.send("\r").unwrap();
    expect(&mut s, "rejected");
    expect(&mut s, "Three.");
    expect(&mut s, PROMPT);
    quit(s);
    let chats = w.chats();
    let result = |i: usize| messages(&chats[i]).last().unwrap()["content"].clone();
    assert_eq!(result(1), "yes-key\n");
    assert_eq!(result(3), "enter-key\n");
    assert_eq!(result(5), "[command rejected by the user]");
}

/// Issue 37, point 2: Tab after `@partial` completes a project file
/// matched fuzzily (what .gitignore leaves out is not offered); with several
/// matches a second Tab lists them.
#[test]
fn tab_completes_a_mention_fuzzily_from_the_projects_files() {
    let w = World::new(vec![Reply::text("Read it.")], "");
    std::fs::create_dir_all(w.cwd.join("src/agent")).unwrap();
    std::fs::create_dir_all(w.cwd.join("target")).unwrap();
    std::fs::write(w.cwd.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(w.cwd.join("src/agent/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(w.cwd.join("src/lib.rs"), "\n").unwrap();
    std::fs::write(w.cwd.join("target/agent_main.rs"), "\n").unwrap();
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    s.send("look at @agmain\t").unwrap();
    let completed = expect(&mut s, "@src/agent/main.rs");
    eprintln!("--- REPL after @agmain Tab:\n{}", plain(&completed));
    s.send(" please\r").unwrap();
    expect(&mut s, "Read it.");
    expect(&mut s, PROMPT);
    let chats = w.chats();
    let asked = serde_json::to_string(&messages(&chats[0])).unwrap();
    assert!(
        asked.contains("look at @src/agent/main.rs please"),
        "{asked}"
    );
    // Several matches: the second Tab lists them.
    s.send("@rs\t\t").unwrap();
    let listed = expect(&mut s, "src/lib.rs");
    let listed = format!("{listed}{}", expect(&mut s, PROMPT));
    eprintln!("--- REPL after @rs Tab Tab:\n{}", plain(&listed));
    assert!(listed.contains("src/agent/main.rs"), "{listed}");
    assert!(!listed.contains("agent_main"), "{listed}");
    s.send("\x15").unwrap();
    quit(s);
}

fn bash_call(id: &str, command: &str) -> Reply {
    Reply::tool_call(
        id,
        "bash",
        serde_json::json!({ "command": command }).to_string(),
    )
}

/// Issue 37, point 11: the recap counts the commands that ran, not the
/// rejected one; a failed command is marked as failed.
#[test]
fn the_recap_counts_only_commands_that_ran_and_a_failed_one_is_marked() {
    let w = World::new(
        vec![
            Reply::stream(vec![
                Step::ToolCall {
                    index: 0,
                    id: Some("c1".into()),
                    name: "bash".into(),
                    arguments: r#"{"command":"echo ran-marker"}"#.into(),
                },
                Step::ToolCall {
                    index: 1,
                    id: Some("c2".into()),
                    name: "bash".into(),
                    arguments: r#"{"command":"echo not-this"}"#.into(),
                },
            ]),
            Reply::text("Two asked."),
            bash_call("c3", "echo oops-marker; exit 3"),
            Reply::text("It failed."),
        ],
        "permissions: ask\n",
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    let ask = "[n/r] reject";
    type_line(&mut s, "two commands");
    expect(&mut s, ask);
    s.send("y").unwrap();
    expect(&mut s, ask);
    s.send("n").unwrap();
    expect(&mut s, "why?");
    s.send("\r").unwrap();
    let recap = expect(&mut s, "Two asked.");
    let recap = format!("{recap}{}", expect(&mut s, PROMPT));
    eprintln!(
        "--- REPL recap after one allowed, one rejected:\n{}",
        plain(&recap)
    );
    assert!(recap.contains("⚙ 1 command(s)"), "{recap:?}");
    assert!(!recap.contains("⚙ 2 command(s)"), "{recap:?}");
    type_line(&mut s, "a failing one");
    expect(&mut s, ask);
    s.send("y").unwrap();
    let failed = expect(&mut s, "It failed.");
    eprintln!("--- REPL after a failing command:\n{}", plain(&failed));
    assert!(failed.contains("✗ exit 3"), "{failed:?}");
    expect(&mut s, PROMPT);
    quit(s);
}

/// Issue 37, point 11: a stopped answer adds no output tokens.
#[test]
fn a_cancelled_answer_adds_no_output_tokens() {
    let usage = r#"data: {"id":"u","object":"chat.completion.chunk","created":1,"model":"test","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":77,"total_tokens":197}}"#;
    let w = World::new(
        vec![Reply::stream(vec![
            Step::text("Part one.\n\n"),
            Step::raw(usage),
            Step::stall(12_000),
            Step::text("Never."),
        ])],
        "",
    );
    let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
    expect(&mut s, PROMPT);
    type_line(&mut s, "go");
    expect(&mut s, "Part one.");
    std::thread::sleep(Duration::from_millis(300));
    s.send("\x1b").unwrap();
    let stopped = expect(&mut s, "[cancelled]");
    let stopped = format!("{stopped}{}", expect(&mut s, PROMPT));
    eprintln!("--- REPL after a cancelled answer:\n{}", plain(&stopped));
    assert!(!stopped.contains("out 77"), "{stopped:?}");
    assert!(stopped.contains("out 0"), "{stopped:?}");
    quit(s);
}

/// Issue 37, point 11: `notify: osc9` in the REPL sends an OSC 9 notice when
/// a turn ends (and `off`, the test's other run, sends nothing).
#[test]
fn notify_sends_an_osc9_notice_when_a_turn_ends() {
    for (setting, want) in [("osc9", true), ("off", false)] {
        let w = World::new(
            vec![Reply::text("Done here.")],
            &format!("notify: {setting}\n"),
        );
        let mut s = w.pty(&[], &[("NO_COLOR", "1")]);
        expect(&mut s, PROMPT);
        type_line(&mut s, "hello");
        let ended = expect(&mut s, PROMPT);
        assert!(ended.contains("Done here."), "{ended:?}");
        assert_eq!(
            ended.contains("\x1b]9;mm: the answer is ready\x07"),
            want,
            "notify: {setting}: {ended:?}"
        );
        quit(s);
    }
}

/// `theme`: `/help` in the default (dark) theme uses the terminal's own
/// foreground for its body and dim for the secondary line, never grey
/// colour 8; high-contrast has no dim text at all.
#[test]
fn help_is_readable_in_each_theme() {
    for (setting, dim) in [
        ("", true),
        ("theme: dark\n", true),
        ("theme: high-contrast\n", false),
    ] {
        let w = World::new(vec![], setting);
        let mut s = w.pty(&[], &[("NO_COLOR", ""), ("TERM", "xterm-256color")]);
        expect(&mut s, PROMPT);
        type_line(&mut s, "/help");
        let help = expect(&mut s, "queues a message");
        let help = format!("{help}{}", expect(&mut s, PROMPT));
        assert!(help.contains("/quit"), "{help:?}");
        assert!(!help.contains("\x1b[90m"), "{setting}: {help:?}");
        assert!(!help.contains("38;5;8m"), "{setting}: {help:?}");
        assert_eq!(help.contains("\x1b[2m"), dim, "{setting}: {help:?}");
        eprintln!("--- /help with {setting:?}:\n{help:?}");
        quit(s);
    }
}
