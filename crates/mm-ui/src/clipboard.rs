//! Puts text on the system clipboard: a native tool on
//! `PATH` first, OSC 52 written to the terminal otherwise, and it says which
//! was used. `PATH` and the display variables are passed in, so tests can
//! put fake tools first and read what they received.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

/// How long a native tool may take before the next way is tried.
const TOOL_TIMEOUT: Duration = Duration::from_secs(5);

/// What was used to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// macOS's `pbcopy`.
    Pbcopy,
    /// Wayland's `wl-copy` (only with `WAYLAND_DISPLAY` set).
    WlCopy,
    /// `xclip` (only with `DISPLAY` set).
    Xclip,
    /// `xsel` (only with `DISPLAY` set).
    Xsel,
    /// The OSC 52 escape sequence, written to the terminal when no native
    /// tool worked.
    Osc52,
}

impl Method {
    /// The name the user knows it by.
    pub fn name(self) -> &'static str {
        match self {
            Method::Pbcopy => "pbcopy",
            Method::WlCopy => "wl-copy",
            Method::Xclip => "xclip",
            Method::Xsel => "xsel",
            Method::Osc52 => "OSC 52",
        }
    }
}

/// The answer of a copy: `Copied with xclip`, `Copied with OSC 52`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// The way that worked.
    pub method: Method,
}

impl std::fmt::Display for Copied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Copied with {}", self.method.name())
    }
}

/// Why nothing was copied.
#[derive(Debug, thiserror::Error)]
pub enum ClipboardError {
    /// No native tool worked and there is no terminal to write OSC 52 to.
    #[error("no clipboard tool found and no terminal to send OSC 52 to")]
    NoTerminal,
    /// Writing OSC 52 to the terminal failed.
    #[error("cannot send OSC 52 to the terminal: {0}")]
    Terminal(#[source] io::Error),
}

/// What decides which tool may be used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClipboardEnv {
    /// `PATH` to search (and to give the tool).
    pub path: Option<OsString>,
    /// `WAYLAND_DISPLAY` is set: `wl-copy` may be used.
    pub wayland: bool,
    /// `DISPLAY` is set: `xclip` and `xsel` may be used.
    pub x11: bool,
}

impl ClipboardEnv {
    /// The environment of this process.
    pub fn from_process() -> Self {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        ClipboardEnv {
            path: std::env::var_os("PATH"),
            wayland: set("WAYLAND_DISPLAY"),
            x11: set("DISPLAY"),
        }
    }
}

/// The native tools, in the order they are tried.
fn candidates(env: &ClipboardEnv) -> Vec<(Method, &'static [&'static str])> {
    let mut v: Vec<(Method, &'static [&'static str])> = vec![(Method::Pbcopy, &[])];
    if env.wayland {
        v.push((Method::WlCopy, &[]));
    }
    if env.x11 {
        v.push((Method::Xclip, &["-selection", "clipboard"]));
        v.push((Method::Xsel, &["--clipboard", "--input"]));
    }
    v
}

/// The OSC 52 sequence that asks the terminal to set its clipboard.
pub fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

/// Copy with the first native tool that works, else write OSC 52 to
/// `terminal`.
pub fn copy(
    text: &str,
    env: &ClipboardEnv,
    terminal: &mut dyn Write,
) -> Result<Copied, ClipboardError> {
    if let Some(method) = copy_native(text, env) {
        return Ok(Copied { method });
    }
    terminal
        .write_all(osc52(text).as_bytes())
        .and_then(|()| terminal.flush())
        .map_err(ClipboardError::Terminal)?;
    Ok(Copied {
        method: Method::Osc52,
    })
}

/// [`copy`] with this process's environment; OSC 52 goes to the
/// controlling terminal (`/dev/tty`), or to stdout when that is one.
pub fn copy_to_clipboard(text: &str) -> Result<Copied, ClipboardError> {
    let env = ClipboardEnv::from_process();
    if let Some(method) = copy_native(text, &env) {
        return Ok(Copied { method });
    }
    let mut terminal: Box<dyn Write> =
        match std::fs::OpenOptions::new().write(true).open("/dev/tty") {
            Ok(tty) => Box::new(tty),
            Err(_) if io::IsTerminal::is_terminal(&io::stdout()) => Box::new(io::stdout()),
            Err(_) => return Err(ClipboardError::NoTerminal),
        };
    terminal
        .write_all(osc52(text).as_bytes())
        .and_then(|()| terminal.flush())
        .map_err(ClipboardError::Terminal)?;
    Ok(Copied {
        method: Method::Osc52,
    })
}

/// Try the native tools in order; the first that exits 0 wins.
pub fn copy_native(text: &str, env: &ClipboardEnv) -> Option<Method> {
    let path = env.path.as_ref()?;
    for (method, args) in candidates(env) {
        let Some(exe) = find_on_path(method.name(), path) else {
            continue;
        };
        if run_tool(&exe, args, text, path) {
            return Some(method);
        }
    }
    None
}

fn find_on_path(name: &str, path: &OsString) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Feed `text` to the tool; true when it took it (exit status 0 in time).
fn run_tool(exe: &Path, args: &[&str], text: &str, path: &OsString) -> bool {
    let Some(mut child) = spawn(exe, args, path) else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let fed = stdin.write_all(text.as_bytes()).is_ok();
        // End of input: the tool may finish now.
        drop(stdin);
        if !fed {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
    }
    wait_bounded(&mut child)
}

fn spawn(exe: &Path, args: &[&str], path: &OsString) -> Option<Child> {
    // A script written a moment ago may still be open for writing in a
    // child forked meanwhile ("text file busy"): try again briefly.
    for _ in 0..20 {
        match Command::new(exe)
            .args(args)
            .env("PATH", path)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => return Some(child),
            Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => return None,
        }
    }
    None
}

fn wait_bounded(child: &mut Child) -> bool {
    let deadline = Instant::now() + TOOL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tool that records its arguments and stdin next to itself.
    fn fake_tool(dir: &Path, name: &str, exit: i32) {
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n/bin/cat > \"$0.stdin\"\nexit {exit}\n"
        );
        let p = dir.join(name);
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn env(dir: &Path, wayland: bool, x11: bool) -> ClipboardEnv {
        ClipboardEnv {
            path: Some(dir.as_os_str().to_owned()),
            wayland,
            x11,
        }
    }

    fn read(dir: &Path, file: &str) -> String {
        std::fs::read_to_string(dir.join(file)).unwrap()
    }

    #[test]
    fn osc52_bytes_are_exact() {
        assert_eq!(osc52("hello"), "\x1b]52;c;aGVsbG8=\x07");
        assert_eq!(osc52("é\n"), "\x1b]52;c;w6kK\x07");
    }

    #[test]
    fn xclip_gets_the_text_and_the_selection() {
        let dir = tempfile::tempdir().unwrap();
        fake_tool(dir.path(), "xclip", 0);
        let mut term = Vec::new();
        let copied = copy("line 1\nline 2 é", &env(dir.path(), false, true), &mut term).unwrap();
        assert_eq!(copied.method, Method::Xclip);
        assert_eq!(copied.to_string(), "Copied with xclip");
        assert_eq!(read(dir.path(), "xclip.stdin"), "line 1\nline 2 é");
        assert_eq!(read(dir.path(), "xclip.args"), "-selection\nclipboard\n");
        assert!(term.is_empty(), "OSC 52 sent although xclip worked");
    }

    #[test]
    fn pbcopy_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        fake_tool(dir.path(), "pbcopy", 0);
        fake_tool(dir.path(), "xclip", 0);
        let mut term = Vec::new();
        let copied = copy("abc", &env(dir.path(), true, true), &mut term).unwrap();
        assert_eq!(copied.to_string(), "Copied with pbcopy");
        assert_eq!(read(dir.path(), "pbcopy.stdin"), "abc");
        assert!(!dir.path().join("xclip.stdin").exists());
    }

    #[test]
    fn display_variables_gate_the_tools() {
        let dir = tempfile::tempdir().unwrap();
        fake_tool(dir.path(), "wl-copy", 0);
        fake_tool(dir.path(), "xsel", 0);
        // Neither display: straight to OSC 52.
        let mut term = Vec::new();
        let copied = copy("x", &env(dir.path(), false, false), &mut term).unwrap();
        assert_eq!(copied.to_string(), "Copied with OSC 52");
        assert_eq!(term, b"\x1b]52;c;eA==\x07");
        assert!(!dir.path().join("wl-copy.stdin").exists());
        assert!(!dir.path().join("xsel.stdin").exists());
        // X11 only: wl-copy is skipped, xsel used with its flags.
        let copied = copy("y", &env(dir.path(), false, true), &mut Vec::new()).unwrap();
        assert_eq!(copied.method, Method::Xsel);
        assert_eq!(read(dir.path(), "xsel.args"), "--clipboard\n--input\n");
        // Wayland: wl-copy.
        let copied = copy("z", &env(dir.path(), true, true), &mut Vec::new()).unwrap();
        assert_eq!(copied.to_string(), "Copied with wl-copy");
        assert_eq!(read(dir.path(), "wl-copy.stdin"), "z");
    }

    #[test]
    fn a_failing_or_unusable_tool_falls_through() {
        let dir = tempfile::tempdir().unwrap();
        fake_tool(dir.path(), "xclip", 1);
        // Not executable: not a tool.
        std::fs::write(dir.path().join("xsel"), "#!/bin/sh\nexit 0\n").unwrap();
        let mut term = Vec::new();
        let copied = copy("hello", &env(dir.path(), false, true), &mut term).unwrap();
        assert_eq!(copied.method, Method::Osc52);
        assert_eq!(read(dir.path(), "xclip.stdin"), "hello");
        assert_eq!(term, b"\x1b]52;c;aGVsbG8=\x07");
    }

    #[test]
    fn no_path_means_osc52() {
        let mut term = Vec::new();
        let copied = copy("hi", &ClipboardEnv::default(), &mut term).unwrap();
        assert_eq!(copied.method, Method::Osc52);
        assert_eq!(term, b"\x1b]52;c;aGk=\x07");
    }
}
