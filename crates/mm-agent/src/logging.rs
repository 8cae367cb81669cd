//! Where the terminal front ends log: a file in the state directory, never
//! the screen (`$XDG_STATE_HOME/mm/<binary>.log`, level from `RUST_LOG`,
//! default `info`). One home for both binaries; the editor server logs to
//! stderr instead, which its editor shows.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// A log above this size is started afresh, so it never grows without end.
pub const MAX_LOG: u64 = 8 * 1024 * 1024;

/// The log file of `binary` (`mm-repl`, `mm-tui`) under `state_dir`
/// (`…/mm`).
pub fn log_path(state_dir: &Path, binary: &str) -> PathBuf {
    state_dir.join(format!("{binary}.log"))
}

/// Open the log file (appending, or afresh when it is too big). `None`
/// when it cannot be opened: mm works without a log.
pub fn open(state_dir: &Path, binary: &str) -> Option<std::fs::File> {
    std::fs::create_dir_all(state_dir).ok()?;
    let path = log_path(state_dir, binary);
    let too_big = std::fs::metadata(&path)
        .map(|m| m.len() > MAX_LOG)
        .unwrap_or(false);
    OpenOptions::new()
        .create(true)
        .append(!too_big)
        .write(true)
        .truncate(too_big)
        .open(&path)
        .ok()
}

/// Send `tracing` output to the log file of `binary`; without one,
/// nowhere (never to stdout or stderr, which belong to the user).
pub fn init(state_dir: &Path, binary: &str) {
    let Some(file) = open(state_dir, binary) else {
        return;
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_target(true)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_log_appends_and_starts_afresh_when_too_big() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state/mm");
        writeln!(open(&state, "mm-tui").unwrap(), "first").unwrap();
        writeln!(open(&state, "mm-tui").unwrap(), "second").unwrap();
        let path = log_path(&state, "mm-tui");
        assert_eq!(path, state.join("mm-tui.log"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\nsecond\n");
        std::fs::write(&path, vec![b'x'; MAX_LOG as usize + 1]).unwrap();
        writeln!(open(&state, "mm-tui").unwrap(), "fresh").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "fresh\n");
    }
}
