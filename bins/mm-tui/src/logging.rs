//! Logs go to a file in the state directory, never to the screen (the
//! window owns the terminal): `$XDG_STATE_HOME/mm/mm-tui.log`, level from
//! `RUST_LOG`, default `info`.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// A log above this size is started afresh, so it never grows without end.
const MAX_LOG: u64 = 8 * 1024 * 1024;

/// The log file of `mm-tui` under `state_dir` (`…/mm`).
pub fn log_path(state_dir: &Path) -> PathBuf {
    state_dir.join("mm-tui.log")
}

/// Open the log file (appending, or afresh when it is too big). `None`
/// when it cannot be opened: mm works without a log.
pub fn open(state_dir: &Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(state_dir).ok()?;
    let path = log_path(state_dir);
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

/// Send `tracing` output to the log file; without one, nowhere (never to
/// stdout or stderr while the window is open).
pub fn init(state_dir: &Path) {
    let Some(file) = open(state_dir) else {
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
        writeln!(open(&state).unwrap(), "first").unwrap();
        writeln!(open(&state).unwrap(), "second").unwrap();
        let path = log_path(&state);
        assert_eq!(path, state.join("mm-tui.log"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\nsecond\n");
        std::fs::write(&path, vec![b'x'; MAX_LOG as usize + 1]).unwrap();
        writeln!(open(&state).unwrap(), "fresh").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "fresh\n");
    }
}
