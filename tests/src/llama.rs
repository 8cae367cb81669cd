//! A real llama.cpp `llama-server` with a real small model, as
//! `.ci/install-llama` puts them under `$MM_LLAMA_DIR` (default
//! `~/.cache/mm-ci/llama`): started on a free port of 127.0.0.1, one thread,
//! one slot, with the repository's chat template (it declares the tools in
//! the prompt, as the servers users run do), and killed when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The model `.ci/install-llama` installs.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// How long a server may take to load its model.
const START_LIMIT: Duration = Duration::from_secs(120);

/// Where the installed server and model are.
#[derive(Debug, Clone)]
pub struct Install {
    pub server: PathBuf,
    pub model: PathBuf,
}

impl Install {
    /// The installed server and model, or why they are not there. In CI
    /// (`CI` set) their absence is a failure, never a skip.
    pub fn find() -> Result<Install, String> {
        let dir = match std::env::var_os("MM_LLAMA_DIR") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/mm-ci/llama"),
        };
        let install = Install {
            server: dir.join("bin/llama-server"),
            model: dir.join("models").join(MODEL_FILE),
        };
        if install.server.is_file() && install.model.is_file() {
            Ok(install)
        } else {
            Err(format!(
                "no llama-server and model under {} (bash .ci/install-llama installs them)",
                dir.display()
            ))
        }
    }

    /// [`Install::find`], or `None` after saying loudly that the caller
    /// skips; in CI a missing install panics.
    pub fn or_skip(test: &str) -> Option<Install> {
        match Install::find() {
            Ok(install) => Some(install),
            Err(why) if std::env::var_os("CI").is_some() => {
                panic!("{test}: {why}, and CI is set: the real server is required")
            }
            Err(why) => {
                eprintln!("SKIPPED {test}: {why}");
                None
            }
        }
    }
}

/// The repository's chat template for the model.
pub fn template() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llama/smollm2-tools.jinja")
}

/// A running server; dropping it kills it.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub port: u16,
    /// The server's own log (stdout and stderr).
    pub log: PathBuf,
    _logdir: tempfile::TempDir,
}

impl Server {
    /// Start `install`'s server with a context of `ctx` tokens and wait
    /// until it answers `/health`.
    pub fn start(install: &Install, ctx: u32) -> Result<Server, String> {
        Server::start_with(
            install,
            ctx,
            Some(&template()),
            &["--temp", "0", "--seed", "7"],
        )
    }

    /// [`Server::start`] with the model's own chat template when
    /// `template` is `None`, and `sampling` flags (`--seed N`...).
    pub fn start_with(
        install: &Install,
        ctx: u32,
        template: Option<&Path>,
        sampling: &[&str],
    ) -> Result<Server, String> {
        Server::launch(install, ctx, template, sampling, 1)
    }

    /// [`Server::start`] with `slots` parallel slots (`-np`); `ctx` is
    /// shared among them. The server keeps no prompts in memory beside its
    /// slots (`--cache-ram 0`): a prompt a slot lost is read again.
    pub fn start_slots(install: &Install, ctx: u32, slots: u32) -> Result<Server, String> {
        Server::launch(
            install,
            ctx,
            Some(&template()),
            &["--temp", "0", "--seed", "7", "--cache-ram", "0"],
            slots,
        )
    }

    fn launch(
        install: &Install,
        ctx: u32,
        template: Option<&Path>,
        sampling: &[&str],
        slots: u32,
    ) -> Result<Server, String> {
        let port = free_port()?;
        let logdir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let log = logdir.path().join("llama-server.log");
        let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(&install.server);
        cmd.arg("-m").arg(&install.model).args([
            "-c",
            &ctx.to_string(),
            "-t",
            "1",
            "-np",
            &slots.to_string(),
            "--jinja",
        ]);
        if let Some(t) = template {
            cmd.arg("--chat-template-file").arg(t);
        }
        let child = cmd
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            // Same answers every run, as far as one thread allows.
            .args(sampling)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", install.server.display()))?;
        let mut server = Server {
            child,
            port,
            log,
            _logdir: logdir,
        };
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if get(port, "/health").is_some_and(|(status, _)| status == 200) {
                return Ok(server);
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "llama-server exited ({status}):\n{}",
                    server.log_text()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "llama-server did not become healthy within {START_LIMIT:?}:\n{}",
                    server.log_text()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The end of the server's log, for a failure's message.
    pub fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let skip = text.len().saturating_sub(4000);
        text.get(skip..).unwrap_or(&text).to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: the child leads its own process group.
        unsafe {
            libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// A plain HTTP GET on 127.0.0.1: the status and the body.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((status, body))
}
