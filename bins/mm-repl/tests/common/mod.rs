//! What every end-to-end test needs: a mock model server on 127.0.0.1, an
//! isolated HOME and XDG directories, a working directory, the built
//! binary with a bounded run, and a pseudo-terminal session.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mm_mock::{MockServer, Recorded, Reply};
use mm_test_support::User;
use mm_test_support::user::mock_config;
#[allow(unused_imports)]
pub use mm_test_support::wait_for;

pub const BIN: &str = env!("CARGO_BIN_EXE_mm-repl");

/// Longest any single run or expectation may take before the test fails.
pub const BOUND: Duration = Duration::from_secs(20);

/// One test's world.
pub struct World {
    /// HOME and the XDG folders; the project is `cwd`.
    pub user: User,
    pub cwd: PathBuf,
    pub server: MockServer,
    // Declared last: the server's tasks need the runtime until it stops.
    pub rt: tokio::runtime::Runtime,
}

impl World {
    /// A world whose model plays `script`, with a user config file that
    /// points at it (`openai-compatible/test`, no retries) plus `extra` YAML.
    pub fn new(script: Vec<Reply>, extra: &str) -> World {
        World::serving(script, extra, mm_mock::Options::default())
    }

    /// [`World::new`] with a server started with `options` (a simulated
    /// window, fixed routes).
    pub fn serving(script: Vec<Reply>, extra: &str, options: mm_mock::Options) -> World {
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
            "{}lsp:\n  servers: []\n{extra}",
            mock_config(&server.url(), "test", 15)
        ));
        World {
            cwd: user.work.clone(),
            user,
            server,
            rt,
        }
    }

    pub fn config_file(&self) -> PathBuf {
        self.user.config_file()
    }

    pub fn write_config(&self, yaml: &str) {
        self.user.write_config(yaml);
    }

    pub fn state_dir(&self) -> PathBuf {
        self.user.state.clone()
    }

    /// The binary with an isolated environment, in the working directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        self.user.apply(&mut cmd).args(args).env("TERM", "xterm");
        cmd
    }

    /// Run to the end with `stdin` (nothing when `None`), bounded.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        run_bounded(self.command(args), stdin)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.server.requests()
    }

    /// The chat requests (the mock also records anything else it is sent).
    pub fn chats(&self) -> Vec<serde_json::Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(|r| r.body)
            .collect()
    }

    /// A REPL in a pseudo-terminal (200×50) with `args`.
    pub fn pty(&self, args: &[&str], env: &[(&str, &str)]) -> expectrl::session::OsSession {
        self.pty_sized(args, env, 200)
    }

    /// [`World::pty`] on a terminal `cols` columns wide.
    pub fn pty_sized(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        cols: u16,
    ) -> expectrl::session::OsSession {
        let mut cmd = self.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut session = expectrl::Session::spawn(cmd).unwrap();
        session.get_process_mut().set_window_size(cols, 50).unwrap();
        session.set_expect_timeout(Some(BOUND));
        session
    }
}

/// Run `cmd` to the end, killing it after [`BOUND`].
pub fn run_bounded(mut cmd: Command, stdin: Option<&str>) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    let deadline = Instant::now() + BOUND;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "mm-repl did not finish within {BOUND:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `messages` of a chat request.
pub fn messages(body: &serde_json::Value) -> Vec<serde_json::Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

/// The text contents of every message of a request, joined.
pub fn all_text(body: &serde_json::Value) -> String {
    messages(body)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything up to and including `needle`, as text.
pub fn expect(session: &mut expectrl::session::OsSession, needle: &str) -> String {
    use expectrl::Expect;
    match session.expect(needle) {
        Ok(found) => String::from_utf8_lossy(found.as_bytes()).into_owned(),
        Err(e) => panic!("waiting for {needle:?}: {e}"),
    }
}

/// Type a line at the REPL (Enter is a carriage return on a terminal).
pub fn type_line(session: &mut expectrl::session::OsSession, line: &str) {
    use expectrl::Expect;
    session.send(format!("{line}\r")).unwrap();
}

pub fn path_text(p: &Path) -> String {
    p.display().to_string()
}
