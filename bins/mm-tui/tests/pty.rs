#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The built window in a real pseudo-terminal against the mock model server
//! with `permissions: ask`: type a question, answer the inline prompt, and
//! read the screen through a vt100 parser. Every wait is bounded.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Reply, Step};
use mm_test_support::git::git;
use mm_test_support::user::mock_config;
use mm_test_support::{User, mcp, procs};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const BIN: &str = env!("CARGO_BIN_EXE_mm-tui");
const BOUND: Duration = Duration::from_secs(30);
const ROWS: u16 = 30;
const COLS: u16 = 100;
/// What the rule above the input says while a turn runs.
const BUSY: &str = "· Esc to interrupt";

struct World {
    user: User,
    cwd: PathBuf,
    server: MockServer,
    // Last: the server's tasks need the runtime until it stops.
    _rt: tokio::runtime::Runtime,
}

impl World {
    fn new(script: Vec<Reply>) -> World {
        World::with(script, "permissions: ask\n")
    }

    /// A world whose user file holds `settings` after the model's address.
    fn with(script: Vec<Reply>, settings: &str) -> World {
        World::serving(script, settings, mm_mock::Options::default())
    }

    /// [`World::with`], the server started with `options`.
    fn serving(script: Vec<Reply>, settings: &str, options: mm_mock::Options) -> World {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = rt
            .block_on(MockServer::start_with(script, options))
            .unwrap();
        let user = User::new();
        user.write_config(&format!(
            "{}{settings}",
            mock_config(&server.url(), "test", 15)
        ));
        World {
            cwd: user.work.clone(),
            user,
            server,
            _rt: rt,
        }
    }

    fn chats(&self) -> Vec<serde_json::Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body)
            .collect()
    }

    fn spawn(&self) -> Window {
        self.spawn_with(&[])
    }

    /// The window started with `args`.
    fn spawn_with(&self, args: &[&str]) -> Window {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(BIN);
        cmd.args(args);
        cmd.env_clear();
        cmd.cwd(&self.cwd);
        for (key, value) in self.user.environment() {
            cmd.env(key, value);
        }
        cmd.env("TERM", "xterm-256color");
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        {
            let parser = parser.clone();
            let raw = raw.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    parser.lock().unwrap().process(&buf[..n]);
                    raw.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        let writer = pty.master.take_writer().unwrap();
        Window {
            child,
            writer,
            parser,
            raw,
            _master: pty.master,
        }
    }
}

struct Window {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Window {
    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Wait until the screen shows `needle`; the screen then.
    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let s = self.screen();
            if s.contains(needle) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} on the screen within {BOUND:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until the screen shows `needle` and the turn has ended (the
    /// rule above the input no longer says a turn is running): a line typed
    /// before that gets "A turn is running" and stays in the input.
    fn wait_for_idle(&self, needle: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let s = self.screen();
            if s.contains(needle) && !s.contains(BUSY) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} with the turn ended within {BOUND:?}:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Type text, then Enter (a carriage return on a terminal).
    fn type_line(&mut self, text: &str) {
        self.send(text);
        self.send("\r");
    }

    /// Ctrl-C twice, then wait (bounded) for the exit.
    fn quit(mut self) -> (portable_pty::ExitStatus, Vec<u8>) {
        // A Ctrl-C that lands while a turn is still ending stops that turn
        // instead of arming the quit: press again until it arms.
        let deadline = Instant::now() + BOUND;
        loop {
            self.send("\x03");
            let armed = Instant::now() + Duration::from_secs(2);
            while Instant::now() < armed && !self.screen().contains("Press Ctrl-C again to quit") {
                std::thread::sleep(Duration::from_millis(20));
            }
            if self.screen().contains("Press Ctrl-C again to quit") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "Ctrl-C never armed the quit:\n{}",
                self.screen()
            );
        }
        self.send("\x03");
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader drain what was written last.
                std::thread::sleep(Duration::from_millis(100));
                let raw = self.raw.lock().unwrap().clone();
                return (status, raw);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("mm-tui did not quit:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn bash(id: &str, command: &str) -> Reply {
    Reply::tool_call(
        id,
        "bash",
        serde_json::json!({ "command": command }).to_string(),
    )
}

#[test]
fn a_question_a_permission_prompt_allowed_and_the_answer() {
    let w = World::new(vec![
        bash("c1", "echo tui-e2e-marker"),
        Reply::text("## Done\n\nThe command printed **the marker**."),
    ]);
    let mut win = w.spawn();
    let first = win.wait_for("context 0% of 32k · session in 0 · out 0");
    assert!(
        first.contains(&format!("mm {}", mm_agent::version())),
        "{first}"
    );
    assert!(first.contains("openai-compatible/test"), "{first}");

    win.type_line("run the marker command");
    let asking = win.wait_for("[y/a/Enter] allow once");
    assert!(asking.contains("‣ bash  echo tui-e2e-marker"), "{asking}");
    assert!(asking.contains("[s] allow for this session"), "{asking}");
    assert!(asking.contains("[n/r] reject"), "{asking}");
    assert_eq!(w.chats().len(), 1, "the tool must wait for the answer");

    win.send("a");
    win.wait_for("The command printed the marker.");
    // The recap follows the answer's last words; it may be a frame later.
    let done = win.wait_for("⚙ 1 command(s)");
    assert!(done.contains("The command printed the marker."), "{done}");
    assert!(done.contains("› run the marker command"), "{done}");
    assert!(done.contains("‣ bash  echo tui-e2e-marker  ✓"), "{done}");
    assert!(done.contains("⚙ 1 command(s)"), "{done}");
    assert!(
        !done.contains("[y/a/Enter] allow once"),
        "the prompt must go: {done}"
    );
    // Folded: the output is not on the screen until the entry is opened.
    assert!(!done.contains("    tui-e2e-marker"), "{done}");
    win.send("\t");
    win.send("\r");
    win.wait_for("    tui-e2e-marker");

    let (status, raw) = win.quit();
    assert!(status.success(), "exit status {status:?}");
    let raw = String::from_utf8_lossy(&raw);
    assert!(
        raw.contains("\x1b[?1049l"),
        "the alternate screen must be left"
    );
    // The model received the command's output.
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    let last = chats[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "tui-e2e-marker\n");
}

#[test]
fn a_rejected_command_gives_the_model_the_rejection_text() {
    let marker = "mm-tui-rejected-file";
    let w = World::new(vec![
        bash("c1", &format!("touch {marker}")),
        Reply::text("Understood, not touching it."),
    ]);
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");
    win.type_line("make the file");
    win.wait_for("[n/r] reject");
    // `r`, a reason for the model, Enter.
    win.send("r");
    win.wait_for("why? (for the model");
    win.send("not in this folderx\x7f");
    win.wait_for("not in this folder▏");
    win.send("\r");
    let done = win.wait_for("Understood, not touching it.");
    assert!(
        done.contains(&format!("‣ bash  touch {marker}  ✗")),
        "{done}"
    );
    assert!(
        !w.cwd.join(marker).exists(),
        "a rejected command must not run"
    );
    let chats = w.chats();
    let last = chats[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["content"],
        "[command rejected by the user]\nThe user says: not in this folder"
    );
    let (status, _) = win.quit();
    assert!(status.success());
}

#[test]
fn escape_cancels_a_running_command_and_the_window_goes_on() {
    let w = World::new(vec![
        bash("c1", "sleep 30"),
        Reply::text("After the cancel."),
    ]);
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");
    win.type_line("sleep a while");
    win.wait_for("[y/a/Enter] allow once");
    win.send("a");
    win.wait_for("Running bash");
    let start = Instant::now();
    win.send("\x1b");
    let s = win.wait_for("[cancelled]");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "cancel took {:?}",
        start.elapsed()
    );
    assert!(s.contains("‣ bash  sleep 30  ✗"), "{s}");
    assert!(
        !s.contains("Esc to interrupt"),
        "the turn must be over: {s}"
    );
    assert_eq!(w.chats().len(), 1, "a cancelled turn sends nothing more");
    // The next question works.
    win.type_line("and now?");
    win.wait_for("After the cancel.");
    let (status, _) = win.quit();
    assert!(status.success());
}

#[test]
fn sigterm_exits_143_and_the_log_is_a_file() {
    let w = World::new(vec![]);
    let win = w.spawn();
    // The banner's facts are in the window, as notices.
    let first = win.wait_for("context 0% of 32k · session in 0 · out 0");
    assert!(first.contains("tools   bash"), "{first}");
    assert!(first.contains("lsp     "), "{first}");
    let pid = win.child.process_id().unwrap();
    // SAFETY: kill(2) on the child we spawned.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + BOUND;
    let mut win = win;
    let status = loop {
        if let Some(status) = win.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "mm-tui did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.exit_code(), 143, "128 + SIGTERM, like mm-repl");
    // Logs go to the state directory's file, never to the screen.
    let log =
        std::fs::read_to_string(w.user.path().join("state/mm/mm-tui.log")).expect("no mm-tui.log");
    assert!(log.contains("starting"), "{log}");
    assert!(!win.screen().contains("INFO"), "{}", win.screen());
}
/// The colour of the last row of the screen that holds `line` alone
/// (spaces aside), taken at its first character.
fn colour_of(win: &Window, line: &str) -> vt100::Color {
    let parser = win.parser.lock().unwrap();
    let screen = parser.screen();
    for row in (0..ROWS).rev() {
        let text = screen.contents_between(row, 0, row, COLS);
        if text.trim() == line {
            let col = (text.len() - text.trim_start().len()) as u16;
            return screen.cell(row, col).unwrap().fgcolor();
        }
    }
    panic!("no {line:?} row on the screen:\n{}", screen.contents());
}

#[test]
fn undo_redo_and_a_coloured_diff_in_the_window() {
    let w = World::new(vec![
        Reply::tool_call(
            "c1",
            "edit_file",
            serde_json::json!({"path": "a.txt", "edits": [{"old": "a\n", "new": "a edited\n"}]})
                .to_string(),
        ),
        bash("c2", "rm b.txt; echo x > c.txt"),
        Reply::text("All three done."),
    ]);
    std::fs::write(w.cwd.join("a.txt"), "a\n").unwrap();
    std::fs::write(w.cwd.join("b.txt"), "b\n").unwrap();
    git(&w.cwd, &["init", "-q"]);
    git(&w.cwd, &["add", "-A"]);
    git(&w.cwd, &["commit", "-q", "-m", "start"]);
    let status = git(&w.cwd, &["status", "--porcelain"]);
    let index = std::fs::read(w.cwd.join(".git/index")).unwrap();
    let read = |name: &str| std::fs::read_to_string(w.cwd.join(name)).ok();

    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");
    win.type_line("edit a, remove b, make c");
    win.wait_for("[y/a/Enter] allow once");
    win.send("a");
    win.wait_for("‣ bash  rm b.txt");
    win.wait_for("[y/a/Enter] allow once");
    win.send("a");
    let done = win.wait_for("All three done.");
    // The diff just approved stays in sight under the edit's block.
    assert!(done.contains("‣ edit_file  a.txt"), "{done}");
    assert!(done.contains("▾ 4 lines"), "{done}");
    assert!(done.contains("    +a edited"), "{done}");
    // The turn is over once its recap is in (after its last checkpoint).
    win.wait_for_idle("⚙ 1 command(s)");
    assert_eq!(read("c.txt").as_deref(), Some("x\n"));

    // The block's diff is coloured as any other.
    assert_eq!(colour_of(&win, "+a edited"), vt100::Color::Idx(2), "green");
    assert_eq!(colour_of(&win, "-a"), vt100::Color::Idx(1), "red");

    win.type_line("/diff");
    win.wait_for("+++ b/a.txt");
    win.wait_for_idle("+++ b/a.txt");
    assert_eq!(colour_of(&win, "+a edited"), vt100::Color::Idx(2), "green");
    assert_eq!(colour_of(&win, "-a"), vt100::Color::Idx(1), "red");

    // Enter in the picker runs a command whose argument may be left out
    // (`/undo [force]`).
    win.type_line("/undo");
    win.wait_for("a.txt restored, b.txt recreated, c.txt removed");
    assert_eq!(read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(read("b.txt").as_deref(), Some("b\n"));
    assert_eq!(read("c.txt"), None);
    assert_eq!(git(&w.cwd, &["status", "--porcelain"]), status);
    assert_eq!(std::fs::read(w.cwd.join(".git/index")).unwrap(), index);

    win.type_line("/redo");
    win.wait_for("redid \"edit a, remove b, make c\"");
    assert_eq!(read("a.txt").as_deref(), Some("a edited\n"));
    assert_eq!(read("b.txt"), None);
    let (status, _) = win.quit();
    assert!(status.success());
}

#[test]
fn rules_deny_and_s_records_the_prefix_in_the_window() {
    let w = World::with(
        vec![
            bash("c1", "true && rm -rf victim"),
            Reply::text("Denied, fine."),
            bash("c2", "echo one"),
            Reply::text("First."),
            bash("c3", "echo one two"),
            Reply::text("Second, unasked."),
        ],
        "permissions:\n  default: ask\n  deny: [\"bash(rm -rf *)\"]\n",
    );
    std::fs::create_dir(w.cwd.join("victim")).unwrap();
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");

    win.type_line("clean up");
    let done = win.wait_for_idle("Denied, fine.");
    assert!(done.contains("‣ bash  true && rm -rf victim  ✗"), "{done}");
    assert!(
        !done.contains("[y/a/Enter] allow once"),
        "a denied call never asks: {done}"
    );
    assert!(w.cwd.join("victim").exists());

    win.type_line("first");
    win.wait_for("[s] allow for this session");
    win.send("s");
    let shown = win.wait_for_idle("First.");
    assert!(
        shown.contains("session rule added: bash(echo one *)"),
        "{shown}"
    );
    win.type_line("second");
    let shown = win.wait_for_idle("Second, unasked.");
    assert!(!shown.contains("[y/a/Enter] allow once"), "{shown}");

    win.type_line("/permissions");
    let listed = win.wait_for("allowed for this session: bash(echo one *)");
    assert!(listed.contains("deny: bash(rm -rf *)"), "{listed}");
    let (status, _) = win.quit();
    assert!(status.success());

    let chats = w.chats();
    let results: Vec<String> = chats[chats.len() - 1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        results,
        ["[denied by rule \"bash(rm -rf *)\"]", "one\n", "one two\n"]
    );
}

#[test]
fn custom_commands_in_the_picker_instructions_and_init_in_the_window() {
    let w = World::with(
        vec![Reply::text("Reviewed."), Reply::text("Wrote AGENTS.md.")],
        "",
    );
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

    let mut win = w.spawn();
    let screen = win.wait_for("context 0% of 32k · session in 0 · out 0");
    assert!(screen.contains("instructions  AGENTS.md"), "{screen}");
    // The warning names the file; at 100 columns it wraps onto two rows.
    assert!(
        screen.replace('\n', " ").contains(
            "/.mm/commands/new.md not loaded: /new is a built-in command; rename the file"
        ),
        "{screen}"
    );
    // The picker lists the custom command with its hint and description.
    win.send("/rev");
    let screen = win.wait_for("Review one file (user)");
    assert!(screen.contains("/review <path>"), "{screen}");
    // Its prompt takes arguments: Enter puts the name in the input and
    // waits for them.
    win.send("\r");
    win.type_line("src/lib.rs");
    win.wait_for_idle("Reviewed.");
    win.type_line("/init");
    win.wait_for("Wrote AGENTS.md.");
    let (status, _) = win.quit();
    assert!(status.success());

    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    let system = chats[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("Project instructions from AGENTS.md:\nUse tabs."),
        "{system}"
    );
    let asked = |i: usize| {
        chats[i]["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    };
    assert_eq!(
        asked(0)["content"],
        "Review @src/lib.rs and list the bugs.\n\n[attached file: src/lib.rs]\n```\npub fn f() {}\n```"
    );
    assert_eq!(
        asked(1)["content"],
        mm_agent::commands::INIT_PROMPT.replace("{file}", "AGENTS.md")
    );
}

#[test]
fn an_mcp_tool_asks_in_the_window_and_slash_mcp_lists_the_servers() {
    let Some(python) = mcp::installed("python3", "an_mcp_tool_asks_in_the_window") else {
        return;
    };
    let mark = format!("tui-time-{}", std::process::id());
    let w = World::with(
        vec![
            Reply::tool_call(
                "c1",
                "mcp__time__get_current_time",
                r#"{"timezone":"Etc/UTC"}"#,
            ),
            Reply::text("It is now."),
        ],
        &format!(
            "permissions: ask\nmcpServers:\n  time:\n    command: {}\n    args: [\"-m\", \"mcp_server_time\"]\n    env: {{MM_TEST_MARK: {mark}}}\n  ghost:\n    command: no-such-mcp-server-xyz\nmcp:\n  startTimeout: 30\n",
            python.display()
        ),
    );
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");

    win.type_line("what time is it?");
    let asked = win.wait_for("[y/a/Enter] allow once");
    assert!(
        asked.contains("time/get_current_time {\"timezone\":\"Etc/UTC\"}"),
        "the call is shown before the question: {asked}"
    );
    win.send("a");
    let done = win.wait_for_idle("It is now.");
    assert!(
        done.contains(
            "mcp server ghost: cannot start no-such-mcp-server-xyz: not found (is it installed and on PATH?)"
        ),
        "the broken server is one line: {done}"
    );

    win.type_line("/mcp");
    let listed = win.wait_for("time: ready, 2 tools");
    assert!(
        listed.contains("ghost: failed: cannot start no-such-mcp-server-xyz"),
        "{listed}"
    );
    let (status, _) = win.quit();
    assert!(status.success());

    let chats = w.chats();
    let result = chats[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("Etc/UTC"), "{result}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !procs::with_env("MM_TEST_MARK", &mark).is_empty() {
        assert!(Instant::now() < deadline, "the server outlived the window");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn model_alone_lists_the_servers_models_in_the_window() {
    let w = World::serving(
        vec![Reply::text("One."), Reply::text("Hi.")],
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
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");
    win.type_line("first");
    win.wait_for_idle("One.");
    win.type_line("/model");
    let shown = win.wait_for_idle("openai-compatible/qwen2.5-coder  (32768 tokens)");
    assert!(
        shown.contains("the server's models (Enter switches, Esc keeps it"),
        "{shown}"
    );
    assert!(
        shown.contains("* openai-compatible/test  (8192 tokens)"),
        "{shown}"
    );
    // The list filters as one types; Enter switches to the row left.
    win.type_line("qwen");
    let switched = win.wait_for_idle("model: openai-compatible/qwen2.5-coder at ");
    assert!(switched.contains("window 32768 tokens"), "{switched}");
    win.type_line("hello");
    win.wait_for_idle("Hi.");
    let (status, _) = win.quit();
    assert!(status.success());
    let chats = w.chats();
    assert_eq!(chats[1]["model"], "qwen2.5-coder");
    // The conversation and its prefix survive the switch.
    let before = chats[0]["messages"].as_array().unwrap();
    let after = chats[1]["messages"].as_array().unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(chats[1]["tools"], chats[0]["tools"]);
}

#[test]
fn a_continued_session_keeps_its_token_counts_and_new_starts_them_again() {
    let turn = |text: &str| {
        Reply::stream(vec![
            Step::text(text),
            Step::Usage {
                prompt: 5200,
                completion: 80,
            },
            Step::Cached { tokens: 4800 },
        ])
    };
    let w = World::with(vec![turn("One."), turn("Two.")], "");
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");
    win.type_line("first");
    win.wait_for_idle("context 16% of 32k · session in 5.2k (4.8k cached) · out 80");
    let (status, _) = win.quit();
    assert!(status.success());

    let mut win = w.spawn_with(&["--continue"]);
    win.wait_for("One.");
    // The window's share is mm's estimate of the conversation now (waited
    // for: the frame with the answer may still be being written).
    win.wait_for("% of 32k · session in 5.2k (4.8k cached) · out 80");
    win.type_line("second");
    win.wait_for_idle("context 16% of 32k · session in 10k (9.6k cached) · out 160");
    win.type_line("/new");
    win.wait_for_idle("context 0% of 32k · session in 0 · out 0");
    let (status, _) = win.quit();
    assert!(status.success());
}

#[test]
fn a_backslash_continues_the_question_and_ctrl_d_on_an_empty_input_quits() {
    let w = World::new(vec![Reply::text("Two lines it is.")]);
    let mut win = w.spawn();
    win.wait_for("in 0 · out 0");
    win.send("first line\\");
    win.send("\r");
    win.send("second line");
    let typing = win.wait_for("second line");
    assert!(
        !typing.contains("first line\\"),
        "the backslash goes: {typing}"
    );
    win.send("\r");
    win.wait_for_idle("Two lines it is.");
    let question = w.chats()[0]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(question, "first line\nsecond line");
    // Ctrl-D with something typed is the input's; on an empty input, quit.
    win.send("x\x04");
    std::thread::sleep(Duration::from_millis(300));
    assert!(win.child.try_wait().unwrap().is_none(), "still open");
    win.send("\x7f\x04");
    let deadline = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = win.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "Ctrl-D did not quit:\n{}",
            win.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn the_demo_says_so_in_the_window_and_keeps_its_sessions_apart() {
    let w = World::new(vec![]);
    let mut win = w.spawn_with(&["--demo"]);
    let first = win.wait_for("This is the demo: a scripted model answers");
    assert!(first.contains("openai-compatible/demo"), "{first}");
    win.type_line("what is here?");
    win.wait_for("[y/a/Enter] allow once");
    win.send("a");
    win.wait_for_idle("This was a demo");
    win.type_line("/sessions");
    let listed = win.wait_for_idle("what is here?");
    assert!(!listed.contains("sessions.enabled"), "{listed}");
    let (status, _) = win.quit();
    assert!(status.success());
    assert!(w.chats().is_empty(), "the demo has its own model");
    assert!(
        !w.user.path().join("data/mm/sessions").exists(),
        "nothing of the demo among the real sessions"
    );
}

#[test]
fn a_long_command_shows_its_output_as_it_comes_and_the_timers_agree() {
    let w = World::new(vec![
        bash(
            "c1",
            "for i in 1 2 3 4 5 6; do echo step $i; sleep 0.5; done",
        ),
        Reply::text("Six steps."),
    ]);
    let mut win = w.spawn();
    win.wait_for("in 0 · out 0");
    win.type_line("step slowly");
    win.wait_for("[y/a/Enter] allow once");
    win.send("a");
    let running = win.wait_for("    step 2");
    assert_eq!(w.chats().len(), 1, "shown before the command ended");
    assert!(running.contains("‣ bash  for i in"), "{running}");
    // One frame: the block's seconds and the rule's are the same.
    let mut agreed = false;
    for _ in 0..150 {
        let s = win.screen();
        let block = s.lines().find(|l| l.contains("‣ bash")).and_then(|l| {
            let (head, _) = l.split_once("s  ▸")?;
            Some(head.rsplit(' ').next()?.to_string())
        });
        let rule = s
            .split_once("Running bash ")
            .and_then(|(_, r)| r.split_once("s ·").map(|(n, _)| n.to_string()));
        // Past the first second, so that an offset would show.
        if let (Some(b), Some(r)) = (block, rule)
            && b != "0"
        {
            assert_eq!(b.trim(), r.trim(), "{s}");
            agreed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(agreed, "no frame with both timers:\n{}", win.screen());
    win.wait_for_idle("Six steps.");
    let (status, _) = win.quit();
    assert!(status.success());
}

/// A clipboard write and a screen clear, as a model or a command may send.
const OSC52: &str = "\x1b]52;c;aGk=\x07";
const CLEAR: &str = "\x1b[2J";

#[test]
fn escapes_from_the_model_and_its_commands_never_reach_the_terminal() {
    use mm_mock::Step;
    let command = format!("printf 'A{OSC52}B{CLEAR}C\\n'; printf 'before\\rafter\\n'");
    let arguments = serde_json::json!({ "command": command }).to_string();
    let w = World::with(
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
            // A title never ended hides no more than the rest of its line.
            Reply::text(format!(
                "Done{OSC52}{CLEAR} here.\x1b]0;title\n\nStill shown."
            )),
        ],
        "",
    );
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k · session in 0 · out 0");
    win.type_line("go");
    let done = win.wait_for_idle("Done here.");
    assert!(done.contains("Still shown."), "{done}");
    assert!(done.contains("Look at this."), "{done}");
    assert!(done.contains("‣ bash  printf 'ABC\\n'; printf"), "{done}");
    // Open the command's block: its output, every line in sight.
    win.send("\t");
    win.send("\r");
    let open = win.wait_for("    ABC");
    assert!(
        open.contains("    before") && open.contains("    after"),
        "{open}"
    );
    for screen in [&done, &open] {
        for junk in ["52;c", "aGk=", "2J", "title"] {
            assert!(!screen.contains(junk), "{junk:?} on the screen:\n{screen}");
        }
    }
    let (status, raw) = win.quit();
    assert!(status.success(), "exit status {status:?}");
    let raw = String::from_utf8_lossy(&raw);
    assert!(
        !raw.contains("\x1b]52"),
        "a clipboard write reached the terminal"
    );
    assert!(
        !raw.contains("aGk="),
        "a sequence's payload reached the terminal"
    );
}

fn todo(id: &str, items: serde_json::Value) -> Reply {
    Reply::tool_call(
        id,
        "todo",
        serde_json::json!({ "items": items }).to_string(),
    )
}

#[test]
fn the_mode_is_on_the_status_bar_shift_tab_cycles_it_and_the_checklist_shows_while_a_turn_runs() {
    let w = World::with(
        vec![
            todo(
                "c1",
                serde_json::json!([
                    {"text": "look around", "status": "in_progress"},
                    {"text": "write it", "status": "pending"}]),
            ),
            bash("c2", "sleep 3"),
            Reply::text("Listed."),
        ],
        "",
    );
    let mut win = w.spawn();
    let first = win.wait_for("mode: allow");
    assert!(
        first.contains("mode: allow — commands and edits run without asking; Shift-Tab to change"),
        "{first}"
    );
    win.send("\x1b[Z");
    win.wait_for(" mode: ask ");
    win.send("\x1b[Z");
    win.wait_for(" mode: plan ");
    win.send("\x1b[Z");
    win.wait_for(" mode: allow ");
    win.type_line("make a list");
    // While the command runs the checklist stands above the input.
    let running = win.wait_for("◐ look around");
    assert!(running.contains("☐ write it"), "{running}");
    assert!(running.contains(BUSY), "{running}");
    let done = win.wait_for_idle("Listed.");
    assert!(!done.contains("◐ look around"), "the panel stays: {done}");
    let (status, _) = win.quit();
    assert!(status.success());
}

#[test]
fn a_plan_is_shown_and_accepted_in_the_window() {
    let w = World::with(
        vec![
            Reply::tool_call(
                "c1",
                "exit_plan",
                serde_json::json!({"plan": "## The plan\n\n1. Touch **done.txt**"}).to_string(),
            ),
            Reply::text("Planned and approved."),
        ],
        "",
    );
    let mut win = w.spawn_with(&["--permissions", "plan"]);
    win.wait_for(" mode: plan ");
    win.type_line("plan it");
    let asking = win.wait_for("[n/r] stay in plan mode");
    assert!(asking.contains("1. Touch done.txt"), "{asking}");
    assert!(asking.contains("[y/a/Enter] yes, asking first"), "{asking}");
    win.send("a");
    let done = win.wait_for_idle("Planned and approved.");
    assert!(done.contains(" mode: ask "), "{done}");
    let (status, _) = win.quit();
    assert!(status.success());
    let chats = w.chats();
    let last = chats[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("[mode: ask"),
        "{last}"
    );
}

/// A stalled answer: `first`, a pause long enough to act in, then `rest`.
fn stalled(first: &str, millis: u64, rest: &str) -> Reply {
    Reply::stream(vec![
        Step::text(first),
        Step::stall(millis),
        Step::text(rest),
    ])
}

/// A window asked for a long answer, which has shown its first part and
/// pauses 12 s; the next question is answered "After the stop.".
fn mid_answer() -> (World, Window) {
    let w = World::with(
        vec![
            stalled("Part one of the answer.", 12_000, " Never shown."),
            Reply::text("After the stop."),
        ],
        "",
    );
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k");
    win.type_line("a long answer please");
    win.wait_for("Part one of the answer.");
    (w, win)
}

/// The screen's rows that hold text, for the report.
fn excerpt(screen: &str) -> String {
    screen
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 37, point 1: one interrupt model.
#[test]
fn ctrl_c_stops_a_streaming_answer_clears_a_draft_and_twice_on_an_empty_input_quits() {
    let (_w, mut win) = mid_answer();
    win.send("\x03");
    let stopped = win.wait_for_idle("[cancelled]");
    eprintln!("--- window after Ctrl-C mid-answer:\n{}", excerpt(&stopped));
    assert!(
        !stopped.contains(mm_ui::words::QUIT_HINT),
        "a turn's Ctrl-C stops it, not quits: {stopped}"
    );
    // Ctrl-C on a draft clears it and does not arm the quit.
    win.send("half a thought");
    win.wait_for("half a thought");
    win.send("\x03");
    let cleared = win.wait_for("Ask mm anything");
    assert!(!cleared.contains("half a thought"), "{cleared}");
    assert!(!cleared.contains(mm_ui::words::QUIT_HINT), "{cleared}");
    win.type_line("and now?");
    win.wait_for_idle("After the stop.");
    let (status, _) = win.quit();
    assert!(status.success());
}

/// A SIGINT from another process means the Ctrl-C key: it stops the turn
/// and the window goes on; two on an idle window quit it cleanly (exit 0,
/// the terminal given back). Before, it ended mm on the spot.
#[test]
fn a_sigint_signal_is_the_ctrl_c_key() {
    let (_w, mut win) = mid_answer();
    let pid = win.child.process_id().unwrap() as i32;
    // SAFETY: kill(2) on the child we spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    win.wait_for_idle("[cancelled]");
    win.type_line("and now?");
    win.wait_for_idle("After the stop.");
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    win.wait_for(mm_ui::words::QUIT_HINT);
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let deadline = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = win.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "two SIGINTs did not quit the window"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let raw = String::from_utf8_lossy(&win.raw.lock().unwrap()).to_string();
    assert!(raw.contains("\x1b[?1049l"), "the alternate screen was left");
}

/// Issue 37, point 5: messages typed during a turn are queued, shown, and
/// sent when it ends; Esc puts them back in the input.
#[test]
fn messages_typed_during_a_turn_are_queued_and_sent_when_it_ends() {
    let w = World::with(
        vec![
            stalled("Working on it.", 4_000, " First answer."),
            Reply::text("Second answer."),
            stalled("Again working.", 12_000, " Never shown."),
            Reply::text("Answered the one put back."),
        ],
        "",
    );
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k");
    win.type_line("first question");
    win.wait_for("Working on it.");
    win.type_line("second question");
    let queued = win.wait_for("queued: second question");
    eprintln!("--- window with a message queued:\n{}", excerpt(&queued));
    assert!(!queued.contains("A turn is running"), "{queued}");
    let done = win.wait_for_idle("Second answer.");
    assert!(done.contains("› second question"), "{done}");
    assert!(!done.contains("queued:"), "the queue is empty: {done}");
    let chats = w.chats();
    assert_eq!(chats.len(), 2);
    assert_eq!(
        chats[1]["messages"].as_array().unwrap().last().unwrap()["content"],
        "second question"
    );
    // Esc stops the turn; the queued line comes back to the input.
    win.type_line("third question");
    win.wait_for("Again working.");
    win.type_line("try this instead");
    win.wait_for("queued: try this instead");
    win.send("\x1b");
    let back = win.wait_for_idle("1 queued message put back in the input");
    eprintln!("--- window after Esc with a queue:\n{}", excerpt(&back));
    assert!(!back.contains("queued: try"), "{back}");
    assert_eq!(w.chats().len(), 3, "nothing was sent");
    win.send("\r");
    win.wait_for_idle("Answered the one put back.");
    assert_eq!(
        w.chats()[3]["messages"].as_array().unwrap().last().unwrap()["content"],
        "try this instead"
    );
    let (status, _) = win.quit();
    assert!(status.success());
}

/// Issue 37, point 4: a large change is read inside the prompt before it
/// is approved, and y answers.
#[test]
fn a_large_change_scrolls_inside_the_permission_prompt_and_y_allows_it() {
    let old: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let new: String = (1..=40).map(|i| format!("LINE {i}\n")).collect();
    let w = World::new(vec![
        Reply::tool_call(
            "c1",
            "write_file",
            serde_json::json!({"path": "big.txt", "content": new}).to_string(),
        ),
        Reply::text("Rewritten."),
    ]);
    std::fs::write(w.cwd.join("big.txt"), &old).unwrap();
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k");
    win.type_line("rewrite big.txt");
    win.wait_for("PgDn reads on");
    // The whole frame: the keys line is drawn with it.
    let first = win.wait_for("[y/a/Enter] allow once");
    eprintln!("--- window permission prompt, top:\n{}", excerpt(&first));
    assert!(!first.contains("+LINE 20"), "{first}");
    // PageDown twice: further into the change, inside the prompt.
    win.send("\x1b[6~");
    win.send("\x1b[6~");
    let later = win.wait_for("lines 21–32 of");
    eprintln!(
        "--- window permission prompt, after PgDn twice:\n{}",
        excerpt(&later)
    );
    assert!(later.contains("PgUp/PgDn scroll"), "{later}");
    win.send("y");
    win.wait_for_idle("Rewritten.");
    assert_eq!(std::fs::read_to_string(w.cwd.join("big.txt")).unwrap(), new);
    let (status, _) = win.quit();
    assert!(status.success());
}

#[test]
fn a_subagents_calls_show_in_its_task_block_and_ask_in_the_window() {
    let call = |id: &str, name: &str, args: serde_json::Value| {
        Reply::tool_call(id, name, args.to_string())
    };
    let w = World::new(vec![
        call(
            "t1",
            "task",
            serde_json::json!({"description": "copy notes", "prompt": "copy", "agent": "general"}),
        ),
        call("r1", "read_file", serde_json::json!({"path": "notes.txt"})),
        call(
            "w1",
            "write_file",
            serde_json::json!({"path": "copy.txt", "content": "noted\n"}),
        ),
        Reply::text("CHILD DONE: copied."),
        Reply::text("PARENT DONE."),
    ]);
    std::fs::write(w.cwd.join("notes.txt"), "noted\n").unwrap();
    let mut win = w.spawn();
    win.wait_for("in 0 · out 0");
    win.type_line("copy the notes");
    let asking = win.wait_for("[y/a/Enter] allow once");
    assert!(asking.contains("‣ task  copy notes (general)"), "{asking}");
    // The question names the subagent that needs it.
    assert!(
        asking.contains("‣ write_file  [subagent general] copy.txt"),
        "{asking}"
    );
    win.send("a");
    let done = win.wait_for_idle("PARENT DONE.");
    assert!(done.contains("‣ task  copy notes (general)  ✓"), "{done}");
    // Opened, the block holds the child's calls, its end and its answer.
    win.send("\t");
    win.send("\r");
    let open = win.wait_for("CHILD DONE: copied.");
    assert!(open.contains("↳ read_file: notes.txt"), "{open}");
    assert!(open.contains("↳ write_file: copy.txt"), "{open}");
    assert!(open.contains("general done · in"), "{open}");
    assert_eq!(
        std::fs::read_to_string(w.cwd.join("copy.txt")).unwrap(),
        "noted\n"
    );
    let (status, _) = win.quit();
    assert!(status.success(), "exit status {status:?}");
}

/// Issue 37, point 2: `@` opens a list of the project's files (not what
/// .gitignore leaves out), typing filters it fuzzily, Enter puts the
/// mention in the input.
#[test]
fn typing_at_opens_a_fuzzy_file_list_in_the_window() {
    let w = World::with(vec![Reply::text("Read it.")], "");
    std::fs::create_dir_all(w.cwd.join("src/agent")).unwrap();
    std::fs::create_dir_all(w.cwd.join("target")).unwrap();
    std::fs::write(w.cwd.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(w.cwd.join("src/agent/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(w.cwd.join("src/lib.rs"), "\n").unwrap();
    std::fs::write(w.cwd.join("target/ignored.rs"), "\n").unwrap();
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k");
    win.send("look at @");
    let open = win.wait_for(" files ");
    eprintln!("--- window after typing @:\n{}", excerpt(&open));
    assert!(open.contains("src/lib.rs"), "{open}");
    assert!(open.contains("src/agent/main.rs"), "{open}");
    assert!(!open.contains("ignored.rs"), "{open}");
    win.send("agmain");
    let filtered = win.wait_for("@agmain");
    let filtered = if filtered.contains("src/lib.rs") {
        std::thread::sleep(Duration::from_millis(300));
        win.screen()
    } else {
        filtered
    };
    eprintln!("--- window after typing agmain:\n{}", excerpt(&filtered));
    assert!(filtered.contains("src/agent/main.rs"), "{filtered}");
    assert!(!filtered.contains("src/lib.rs"), "{filtered}");
    win.send("\r");
    let taken = win.wait_for("look at @src/agent/main.rs");
    assert!(!taken.contains(" files "), "{taken}");
    win.type_line("please");
    win.wait_for_idle("Read it.");
    let asked = serde_json::to_string(&w.chats()[0]).unwrap();
    assert!(
        asked.contains("look at @src/agent/main.rs please"),
        "{asked}"
    );
    let (status, _) = win.quit();
    assert!(status.success());
}

/// Issue 37, point 11: quitting leaves the last exchange in the terminal's
/// scrollback, after the alternate screen is gone.
#[test]
fn quitting_prints_the_last_exchange_into_the_scrollback() {
    let w = World::with(
        vec![
            Reply::text("The first answer."),
            Reply::text("The **second** answer."),
        ],
        "",
    );
    let mut win = w.spawn();
    win.wait_for("context 0% of 32k");
    win.type_line("first question");
    win.wait_for_idle("The first answer.");
    win.type_line("second question");
    win.wait_for_idle("The second answer.");
    let (status, raw) = win.quit();
    assert!(status.success());
    let raw = String::from_utf8_lossy(&raw);
    let left = raw
        .rfind("\x1b[?1049l")
        .expect("the alternate screen is left");
    let after = &raw[left..];
    eprintln!("--- printed after the window closed:\n{after}");
    assert!(after.contains("› second question"), "{after:?}");
    assert!(after.contains("The **second** answer."), "{after:?}");
    assert!(!after.contains("first question"), "{after:?}");
}

#[test]
fn vi_mode_esc_then_normal_mode_keys_edit_the_question() {
    let w = World::with(
        vec![Reply::text("Sent it.")],
        "permissions: ask\neditMode: vi\n",
    );
    let mut win = w.spawn();
    win.wait_for("in 0 · out 0");
    win.send("fix the bug now");
    win.wait_for("fix the bug now");
    win.send("\x1b");
    let normal = win.wait_for("-- NORMAL --");
    eprintln!("--- the window in vi's normal mode:\n{normal}");
    win.send("0wx");
    win.wait_for("fix he bug now");
    win.send("D");
    win.send("Ado it");
    win.wait_for("fix do it");
    assert!(!win.screen().contains("-- NORMAL --"), "A: insert mode");
    win.send("\r");
    win.wait_for_idle("Sent it.");
    let question = w.chats()[0]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(question, "fix do it");
    let (status, _) = win.quit();
    assert!(status.success(), "{status:?}");
}
