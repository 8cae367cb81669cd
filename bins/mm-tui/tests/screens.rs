#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Snapshots of each screen state, drawn by the real painter on ratatui's
//! test backend from transcripts built with the same events a turn sends.

use std::time::{Duration, Instant};

use mm_tui::painter;
use mm_tui::popup;
use mm_tui::transcript::{PendingPermission, Transcript};
use mm_tui::ui::Ui;
use mm_ui::{Counters, Event, FileChange, ToolInfo, ToolKind, ToolStatus, TurnOutcome};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const W: u16 = 72;
const H: u16 = 18;

fn ui() -> Ui {
    Ui::new(
        "openai-compatible/qwen2.5-coder",
        "~/src/project",
        "0.1.0-test",
    )
}

fn draw(t: &Transcript, ui: &mut Ui, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| painter::draw(f, t, ui)).unwrap();
    term
}

fn screen(t: &Transcript, ui: &mut Ui) -> String {
    draw(t, ui, W, H).backend().to_string()
}

fn bash(id: &str, command: &str) -> ToolInfo {
    ToolInfo {
        id: id.into(),
        tool: "bash".into(),
        family: mm_ui::ToolFamily::Command,
        echoes: true,
        title: command.into(),
        kind: ToolKind::Execute,
        input: serde_json::json!({ "command": command }),
        locations: vec![],
        change: None,
    }
}

fn end(id: &str, output: &str) -> Event {
    Event::ToolEnd {
        id: id.into(),
        tool: "bash".into(),
        status: ToolStatus::Completed,
        output: output.into(),
        preview: vec![],
    }
}

/// A question, folded reasoning and an answer being streamed.
fn streaming(t0: Instant) -> Transcript {
    let mut t = Transcript::new();
    t.start_turn("How do I run the tests?", t0);
    t.apply(
        Event::Reasoning {
            text: "The user wants the test command. ".into(),
        },
        t0,
    );
    t.apply(
        Event::Reasoning {
            text: "Cargo runs them.".into(),
        },
        t0,
    );
    for chunk in [
        "## Running",
        " the tests\n\n",
        "Use **cargo**:\n\n",
        "- `cargo test` runs all\n",
        "- add `-p crate` for one\n\n```sh\ncargo te",
    ] {
        t.apply(Event::Text { text: chunk.into() }, t0);
    }
    t
}

#[test]
fn empty() {
    let t = Transcript::new();
    insta::assert_snapshot!(screen(&t, &mut ui()));
}

#[test]
fn streaming_answer() {
    let t0 = Instant::now();
    let t = streaming(t0);
    let mut ui = ui();
    ui.now = t0 + Duration::from_secs(4);
    let s = screen(&t, &mut ui);
    assert!(s.contains("▸ thinking · 9 words"), "{s}");
    assert!(s.contains("Writing 4s"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn thinking_expanded() {
    let t0 = Instant::now();
    let mut t = streaming(t0);
    let mut ui = ui();
    ui.now = t0 + Duration::from_secs(4);
    ui.select(&t, true);
    assert!(t.toggle(ui.selected.unwrap()));
    let s = screen(&t, &mut ui);
    assert!(s.contains("▾ thinking · 9 words"), "{s}");
    assert!(
        s.contains("  The user wants the test command. Cargo runs them."),
        "{s}"
    );
    insta::assert_snapshot!(s);
}

fn with_tool(t0: Instant) -> Transcript {
    let mut t = Transcript::new();
    t.start_turn("What is in this folder?", t0);
    t.apply(
        Event::Text {
            text: "Let me look.".into(),
        },
        t0,
    );
    t.apply(
        Event::ToolStart {
            info: bash("c1", "ls -la"),
        },
        t0,
    );
    t.apply(Event::ToolRunning { id: "c1".into() }, t0);
    t
}

#[test]
fn tool_running() {
    let t0 = Instant::now();
    let t = with_tool(t0);
    let mut ui = ui();
    ui.now = t0 + Duration::from_secs(3);
    let s = screen(&t, &mut ui);
    assert!(s.contains("‣ bash  ls -la  ⠋ 3s"), "{s}");
    assert!(s.contains("Running bash 3s"), "{s}");
    insta::assert_snapshot!(s);
}

/// A running command shows its last lines under its folded block as they
/// come; the rule's seconds are the command's.
#[test]
fn tool_running_shows_its_output_as_it_comes() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn("Build it", t0);
    t.apply(
        Event::ToolStart {
            info: bash("c1", "make all"),
        },
        t0 + Duration::from_secs(2),
    );
    t.apply(
        Event::ToolRunning { id: "c1".into() },
        t0 + Duration::from_secs(2),
    );
    for i in 1..=8 {
        t.apply(
            Event::ToolOutput {
                id: "c1".into(),
                text: format!("step {i}\n"),
            },
            t0 + Duration::from_secs(3),
        );
    }
    let mut ui = ui();
    ui.now = t0 + Duration::from_secs(6);
    let s = screen(&t, &mut ui);
    assert!(s.contains("‣ bash  make all  ⠋ 4s  ▸ 8 lines"), "{s}");
    assert!(s.contains("Running bash 4s"), "the timers agree: {s}");
    assert!(s.contains("    step 8"), "{s}");
    assert!(s.contains("    step 4"), "{s}");
    assert!(!s.contains("step 3"), "the last five lines: {s}");
    insta::assert_snapshot!(s);
    // Ended, it folds as any other; the model's text replaces the live one.
    t.apply(end("c1", "step 1\nstep 2\n"), ui.now);
    let s = screen(&t, &mut ui);
    assert!(s.contains("▸ 2 lines"), "{s}");
    assert!(!s.contains("step 8"), "{s}");
}

/// A command too long for its block's line is shown whole when the block
/// is open.
#[test]
fn an_open_block_shows_the_whole_command_line() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn("Test it", t0);
    let long =
        "cargo test --workspace --all-features -- --test-threads=1 --nocapture the_long_filter";
    t.apply(
        Event::ToolStart {
            info: bash("c1", long),
        },
        t0,
    );
    t.apply(Event::ToolRunning { id: "c1".into() }, t0);
    t.apply(end("c1", "ok\n"), t0 + Duration::from_millis(100));
    let mut ui = ui();
    ui.select(&t, true);
    let i = ui.selected.unwrap();
    assert!(t.toggle(i));
    let s = screen(&t, &mut ui);
    assert!(s.contains("…"), "cut on the block's line: {s}");
    assert!(s.contains("    $ cargo test --workspace"), "{s}");
    assert!(s.contains("the_long_filter"), "the whole line: {s}");
    insta::assert_snapshot!(s);
}

fn tool_done(t0: Instant) -> Transcript {
    let mut t = with_tool(t0);
    t.apply(
        end("c1", "Cargo.toml\nREADME.md\nsrc\n"),
        t0 + Duration::from_millis(420),
    );
    t.apply(
        Event::Status {
            text: "Thinking".into(),
        },
        t0,
    );
    t.apply(
        Event::Text {
            text: "The folder holds a Rust crate.".into(),
        },
        t0,
    );
    t.apply(tokens(1234, 56, 0), t0);
    t.apply(
        Event::TurnEnd {
            outcome: TurnOutcome::Done,
            counters: Counters {
                commands: 1,
                ..Counters::default()
            },
            prompt_tokens: 1234,
            completion_tokens: 56,
            cached_tokens: 0,
        },
        t0,
    );
    t
}

#[test]
fn tool_done_folded() {
    let t0 = Instant::now();
    let t = tool_done(t0);
    let s = screen(&t, &mut ui());
    assert!(s.contains("‣ bash  ls -la  ✓ 0.4s  ▸ 3 lines"), "{s}");
    assert!(!s.contains("README.md"), "folded output must not show: {s}");
    assert!(s.contains("⚙ 1 command(s)"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn tool_done_expanded() {
    let t0 = Instant::now();
    let mut t = tool_done(t0);
    let mut ui = ui();
    // Tab selects the tool call (the last foldable entry), Enter unfolds it.
    ui.select(&t, true);
    let i = ui.selected.unwrap();
    assert!(t.toggle(i));
    let s = screen(&t, &mut ui);
    assert!(s.contains("▾ 3 lines"), "{s}");
    assert!(s.contains("    README.md"), "{s}");
    insta::assert_snapshot!(s);
}

/// The edit of `src/main.rs` that fixes the greeting, with `diff`.
fn greeting_edit(diff: &str) -> ToolInfo {
    ToolInfo {
        id: "e1".into(),
        tool: "edit_file".into(),
        family: mm_ui::ToolFamily::File,
        echoes: false,
        title: "src/main.rs".into(),
        kind: ToolKind::Edit,
        input: serde_json::json!({}),
        locations: vec!["/p/src/main.rs".into()],
        change: Some(FileChange {
            path: "/p/src/main.rs".into(),
            old_text: Some("println!(\"helo\");\n".into()),
            new_text: Some("println!(\"hello\");\n".into()),
            diff: diff.into(),
            too_large: false,
            lines: 1,
        }),
    }
}

#[test]
fn permission_prompt() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn("Fix the greeting", t0);
    let info = greeting_edit("@@ -1 +1 @@\n-println!(\"helo\");\n+println!(\"hello\");");
    t.apply(Event::ToolStart { info: info.clone() }, t0);
    t.set_tool_state("e1", mm_tui::transcript::ToolState::Asking, t0);
    t.permission = Some(PendingPermission {
        id: info.id.clone(),
        tool: info.tool.clone(),
        title: info.title.clone(),
        diff: info.change.as_ref().map(|c| c.diff.clone()),
        reason: None,
        reply: None,
        plan: false,
    });
    let mut ui = ui();
    ui.now = t0 + Duration::from_secs(1);
    let s = screen(&t, &mut ui);
    assert!(
        s.contains("[y/a/Enter] allow once · [s] allow for this session · [n/r] reject"),
        "{s}"
    );
    assert!(s.contains("+println!(\"hello\");"), "{s}");
    insta::assert_snapshot!(s);
    // After `r`, the reason for the model is typed in the prompt.
    if let Some(p) = t.permission.as_mut() {
        p.reason = Some("keep the typo".into());
    }
    let s = screen(&t, &mut ui);
    assert!(s.contains("why? (for the model; Enter rejects)"), "{s}");
    assert!(s.contains("keep the typo▏"), "{s}");
    assert!(!s.contains("[y/a/Enter] allow once"), "{s}");
    insta::assert_snapshot!("permission_prompt_reason", s);
}

/// Approved, an edit's block stays unfolded on its diff, then the
/// headline the model got.
#[test]
fn an_approved_edit_keeps_its_diff_in_sight() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn("Fix the greeting", t0);
    let info = greeting_edit("@@ -1,1 +1,1 @@\n-println!(\"helo\");\n+println!(\"hello\");\n");
    t.apply(Event::ToolStart { info }, t0);
    t.set_tool_state("e1", mm_tui::transcript::ToolState::Asking, t0);
    t.approved("e1");
    t.apply(Event::ToolRunning { id: "e1".into() }, t0);
    t.apply(
        Event::ToolEnd {
            id: "e1".into(),
            tool: "edit_file".into(),
            status: ToolStatus::Completed,
            output: concat!(
                "edited src/main.rs: 1 edit(s), +1 -1 lines, first change at line 1\n",
                "@@ -1,1 +1,1 @@\n-println!(\"helo\");\n+println!(\"hello\");\n"
            )
            .into(),
            preview: vec![],
        },
        t0 + Duration::from_millis(300),
    );
    let s = screen(&t, &mut ui());
    assert!(
        s.contains("‣ edit_file  src/main.rs  ✓ 0.3s  ▾ 4 lines"),
        "{s}"
    );
    assert!(s.contains("    +println!(\"hello\");"), "{s}");
    assert!(s.contains("    edited src/main.rs: 1 edit(s)"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn picker() {
    let t = Transcript::new();
    let mut ui = ui();
    ui.set_text("/");
    let table = mm_agent::commands::Commands::builtin();
    ui.popup = popup::picker_for("/", &table);
    let s = screen(&t, &mut ui);
    // The list scrolls with the selection: every command comes into view.
    let mut seen = s.clone();
    let count = ui.popup.as_ref().unwrap().items.len();
    for _ in 1..count {
        ui.popup.as_mut().unwrap().down();
        seen.push_str(&screen(&t, &mut ui));
    }
    for c in mm_agent::commands::for_front(mm_agent::commands::Front::Window) {
        assert!(
            seen.contains(&format!("/{}", c.name())),
            "/{} missing: {seen}",
            c.name()
        );
    }
    insta::assert_snapshot!(s);
    // Typing narrows it.
    ui.set_text("/co");
    ui.popup = popup::picker_for("/co", &table);
    ui.popup.as_mut().unwrap().down();
    insta::assert_snapshot!("picker_filtered", screen(&t, &mut ui));
}

#[test]
fn custom_commands_in_the_picker() {
    // The table the agent builds: built-ins plus the user's command files.
    let user = tempfile::tempdir().unwrap();
    let dir = user.path().join("commands");
    std::fs::create_dir_all(dir.join("git")).unwrap();
    std::fs::write(
        dir.join("review.md"),
        "---\ndescription: Review one file\nargument-hint: <path>\n---\nReview @$1.\n",
    )
    .unwrap();
    std::fs::write(dir.join("git/log.md"), "Summarise the git log.\n").unwrap();
    let project = tempfile::tempdir().unwrap();
    let mut table = mm_agent::commands::Commands::builtin();
    let warnings = mm_agent::commands::custom::load(&mut table, user.path(), project.path());
    assert!(warnings.is_empty(), "{warnings:?}");

    let t = Transcript::new();
    let mut ui = ui();
    ui.set_text("/rev");
    ui.popup = popup::picker_for("/rev", &table);
    let s = screen(&t, &mut ui);
    assert!(s.contains("/review <path>"), "{s}");
    assert!(s.contains("Review one file (user)"), "{s}");
    // It waits for its argument: choosing it inserts the name, runs nothing.
    let item = &ui.popup.as_ref().unwrap().items[0];
    assert_eq!((item.insert.as_str(), item.run), ("/review ", false));
    // A sub-folder gives dir:name; the body's first line describes it.
    ui.set_text("/git");
    ui.popup = popup::picker_for("/git", &table);
    let s = screen(&t, &mut ui);
    assert!(s.contains("/git:log"), "{s}");
    assert!(s.contains("Summarise the git log. (user)"), "{s}");
    // The whole list holds them after the built-ins.
    let all = popup::picker_for("/", &table).unwrap();
    let names: Vec<&str> = all.items.iter().map(|i| i.insert.trim()).collect();
    assert_eq!(names[names.len() - 2..], ["/git:log", "/review"]);
}

#[test]
fn error() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn("hello", t0);
    t.apply(
        Event::Error {
            text: "cannot reach the model server: ollama at http://localhost:11434 (connection refused); set --model, --base-url or baseURL in ~/.config/mm/config.yaml".into(),
        },
        t0,
    );
    t.apply(
        Event::TurnEnd {
            outcome: TurnOutcome::Failed(mm_agent::TurnError::new(
                mm_agent::FailureKind::Server,
                "x",
            )),
            counters: Counters::default(),
            prompt_tokens: 0,
            completion_tokens: 0,
            cached_tokens: 0,
        },
        t0,
    );
    let s = screen(&t, &mut ui());
    assert!(s.contains("✗ cannot reach the model server"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn wide_characters_and_long_lines_wrap_inside_the_screen() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn("日本語で説明してください。これはとても長い質問で、画面の幅を超えて折り返されるはずです。🦀🦀🦀", t0);
    t.apply(
        Event::Text {
            text: format!("答え：{}\n\n{}", "漢字".repeat(40), "x".repeat(200)),
        },
        t0,
    );
    let mut ui = ui();
    let term = draw(&t, &mut ui, 41, 20);
    let buf = term.backend().buffer().clone();
    // No row of the transcript is cut: every character shows up somewhere.
    let s = term.backend().to_string();
    assert_eq!(s.matches('漢').count(), 40, "{s}");
    assert!(s.matches('x').count() >= 200, "{s}");
    // A wide character never starts in the last column.
    for y in 0..buf.area.height {
        let last = &buf[(buf.area.width - 1, y)];
        assert!(unicode_width::UnicodeWidthStr::width(last.symbol()) <= 1);
    }
    insta::assert_snapshot!(s);
}

#[test]
fn resize_reflows_the_same_transcript() {
    let t0 = Instant::now();
    let t = tool_done(t0);
    let mut ui = ui();
    let wide = draw(&t, &mut ui, 100, 14).backend().to_string();
    let narrow = draw(&t, &mut ui, 34, 14).backend().to_string();
    assert!(wide.contains("The folder holds a Rust crate."), "{wide}");
    assert!(narrow.contains("The folder holds a Rust"), "{narrow}");
    assert!(narrow.contains("crate."), "{narrow}");
    insta::assert_snapshot!("resize_narrow", narrow);
}

#[test]
fn thousands_of_entries_show_the_end_and_scroll() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    for i in 0..3000 {
        t.start_turn(&format!("question {i}"), t0);
        t.apply(
            Event::Text {
                text: format!("answer {i}"),
            },
            t0,
        );
    }
    let mut ui = ui();
    let s = draw(&t, &mut ui, W, H).backend().to_string();
    assert!(s.contains("answer 2999"), "{s}");
    assert!(
        ui.cache.misses < 20,
        "drew {} entries for one screen",
        ui.cache.misses
    );
    // Page up twice, then to the top.
    let look = ui.look();
    let rows = usize::from(ui.transcript_rows);
    ui.scroll = mm_tui::view::up(&t, &mut ui.cache, &look, rows, ui.scroll, rows * 2);
    let s = draw(&t, &mut ui, W, H).backend().to_string();
    assert!(!s.contains("answer 2999"), "{s}");
    assert!(s.contains("↑ scrolled"), "{s}");
    ui.scroll = mm_tui::view::Scroll::At { entry: 0, row: 0 };
    let s = draw(&t, &mut ui, W, H).backend().to_string();
    assert!(s.contains("question 0"), "{s}");
}

/// The session's tokens so far, the window holding the last turn.
fn tokens(prompt: u64, completion: u64, cached: u64) -> Event {
    Event::Tokens {
        session: mm_ui::TokenCounts {
            prompt,
            completion,
            cached,
        },
        context: 1234 + 56,
        window: 32768,
    }
}

/// The status bar says the session's tokens, in and out, and how full the
/// model's window is; the cached part of the input once a provider said
/// there was one.
#[test]
fn status_bar_shows_the_tokens_and_the_window() {
    let t0 = Instant::now();
    let mut t = tool_done(t0);
    let s = screen(&t, &mut ui());
    assert!(
        s.contains("context 3% of 32k · session in 1.2k · out 56"),
        "{s}"
    );
    // The mode is always there, first.
    assert!(s.contains("\" mode: allow "), "{s}");
    assert!(!s.contains("cached"), "{s}");
    t.start_turn("again", t0);
    t.apply(tokens(4234, 76, 2200), t0);
    t.apply(
        Event::TurnEnd {
            outcome: TurnOutcome::Done,
            counters: Counters::default(),
            prompt_tokens: 3000,
            completion_tokens: 20,
            cached_tokens: 2200,
        },
        t0,
    );
    let s = screen(&t, &mut ui());
    // Short of room, mm's version gives way to the tokens, then their
    // labels do.
    assert!(
        s.contains("· 3% of 32k · in 4.2k (2.2k cached) · out 76 \""),
        "{s}"
    );
}

/// What a model, a command or a server may send to take over a terminal:
/// a clipboard write, a screen clear (7-bit and 8-bit) and a DCS string.
const HOSTILE: &str = "\x1b]52;c;aGk=\x07\x1b[2J\u{9b}2J\x1bPpayload\x1b\\";

/// No cell holds a control character, and nothing of a sequence shows.
fn assert_harmless(term: &Terminal<TestBackend>) -> String {
    let buffer = term.backend().buffer();
    for cell in buffer.content() {
        assert!(
            !cell.symbol().contains(char::is_control),
            "{:?} in a cell",
            cell.symbol()
        );
    }
    let s = term.backend().to_string();
    for junk in ["52;c", "aGk=", "2J", "payload", "title"] {
        assert!(!s.contains(junk), "{junk:?} drawn:\n{s}");
    }
    s
}

#[test]
fn escapes_from_the_model_and_commands_are_not_drawn() {
    let t0 = Instant::now();
    let mut t = Transcript::new();
    t.start_turn(&format!("go{HOSTILE}"), t0);
    t.apply(
        Event::Reasoning {
            text: format!("Pondering{HOSTILE}."),
        },
        t0,
    );
    // An OSC never ended hides no more than the rest of its line.
    t.apply(
        Event::Text {
            text: format!("Look{HOSTILE} here.\x1b]0;title\n\nStill shown."),
        },
        t0,
    );
    let mut info = bash("c1", &format!("printf '{HOSTILE}'"));
    info.tool = format!("ba{HOSTILE}sh");
    t.apply(Event::ToolStart { info }, t0);
    t.apply(Event::ToolRunning { id: "c1".into() }, t0);
    t.apply(
        Event::ToolOutput {
            id: "c1".into(),
            text: format!("A{HOSTILE}B\nbefore\rafter\n"),
        },
        t0,
    );
    let mut ui = ui();
    let s = assert_harmless(&draw(&t, &mut ui, W, 24));
    assert!(s.contains("Look here."), "{s}");
    assert!(s.contains("Still shown."), "{s}");
    assert!(s.contains("‣ bash  printf ''"), "{s}");
    assert!(s.contains("Running bash"), "{s}");
    assert!(s.contains("    AB"), "{s}");
    // A lone CR hides nothing: what follows it is on a row of its own.
    assert!(s.contains("    before") && s.contains("    after"), "{s}");

    t.apply(end("c1", &format!("A{HOSTILE}B\nbefore\rafter\n")), t0);
    t.apply(
        Event::Error {
            text: format!("the server said: overloaded{HOSTILE}"),
        },
        t0,
    );
    ui.select(&t, true);
    assert!(t.toggle(ui.selected.unwrap()));
    let s = assert_harmless(&draw(&t, &mut ui, W, 24));
    assert!(s.contains("▾ 3 lines"), "{s}");
    assert!(s.contains("    AB  "), "{s}");
    assert!(s.contains("overloaded"), "{s}");
}

/// Each row's text, then its styled runs (`col..col fg bg modifiers`),
/// to compare a screen's colours in a snapshot.
fn styled_screen(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut text = String::new();
        let mut runs: Vec<(u16, u16, String)> = Vec::new();
        for x in 0..area.width {
            let cell = &buf[(x, y)];
            text.push_str(cell.symbol());
            let look = format!("{:?} {:?} {:?}", cell.fg, cell.bg, cell.modifier);
            match runs.last_mut() {
                Some((_, end, l)) if *l == look => *end = x + 1,
                _ => runs.push((x, x + 1, look)),
            }
        }
        out.push_str(&format!("{:2}|{}\n", y, text.trim_end()));
        for (a, b, look) in runs {
            if look != "Reset Reset NONE" {
                out.push_str(&format!("    {a}..{b} {look}\n"));
            }
        }
    }
    out
}

/// One screen (reasoning folded, an answer with a heading and code) in
/// each theme: grey text is the terminal's foreground, dim in dark and
/// light, plain in high-contrast with bold accents; light has darker
/// accents.
#[test]
fn themes() {
    use mm_config::Theme;
    let t0 = Instant::now();
    let t = streaming(t0);
    let mut seen = Vec::new();
    for (name, theme) in [
        ("dark", Theme::Dark),
        ("light", Theme::Light),
        ("high_contrast", Theme::HighContrast),
    ] {
        let mut ui = ui();
        ui.theme = theme;
        ui.now = t0 + Duration::from_secs(4);
        let s = styled_screen(&draw(&t, &mut ui, W, H));
        // No grey (colour 8) text in any theme; no dim in high-contrast.
        let grey = s
            .lines()
            .any(|l| l.starts_with("    ") && l.split_whitespace().nth(1) == Some("DarkGray"));
        assert!(!grey, "{s}");
        assert_eq!(theme == Theme::HighContrast, !s.contains("DIM"), "{s}");
        insta::assert_snapshot!(format!("theme_{name}"), s);
        seen.push(s);
    }
    assert_ne!(seen[0], seen[1]);
    assert_ne!(seen[0], seen[2]);
}

/// The input's placeholder reads as a hint, not as typed text, in every
/// theme: italic, and dim where the theme dims (high-contrast does not).
#[test]
fn the_placeholder_reads_as_a_hint_in_every_theme() {
    use mm_config::Theme;
    for theme in [Theme::Dark, Theme::Light, Theme::HighContrast] {
        let mut ui = ui();
        ui.theme = theme;
        let s = styled_screen(&draw(&Transcript::new(), &mut ui, W, H));
        let mut lines = s.lines();
        let row = lines
            .by_ref()
            .find(|l| l.contains("Ask mm anything"))
            .unwrap_or_else(|| panic!("no placeholder in {s}"));
        // The styled runs of that row (the cursor's first).
        let looks: Vec<&str> = lines.take_while(|l| l.starts_with("    ")).collect();
        let hint = looks.iter().find(|l| !l.contains("REVERSED"));
        let hint = hint.unwrap_or_else(|| panic!("{theme:?}: {row} {looks:?}"));
        assert!(hint.contains("ITALIC"), "{theme:?}: {row} {looks:?}");
        assert_eq!(
            hint.contains("DIM"),
            theme != Theme::HighContrast,
            "{theme:?}: {hint}"
        );
    }
}
