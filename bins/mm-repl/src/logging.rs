//! Logs go to a file in the state directory, never to the screen:
//! `$XDG_STATE_HOME/mm/mm-repl.log` (level from `RUST_LOG`, default `info`).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// A log above this size is started afresh, so it never grows without end.
const MAX_LOG: u64 = 8 * 1024 * 1024;

/// The log file of `mm-repl` under `state_dir` (`…/mm`).
pub fn log_path(state_dir: &Path) -> PathBuf {
    state_dir.join("mm-repl.log")
}

/// Send `tracing` output to the log file. A log that cannot be opened is
/// not an error: mm works without it.
pub fn init(state_dir: &Path) {
    if std::fs::create_dir_all(state_dir).is_err() {
        return;
    }
    let path = log_path(state_dir);
    let too_big = std::fs::metadata(&path)
        .map(|m| m.len() > MAX_LOG)
        .unwrap_or(false);
    let file = OpenOptions::new()
        .create(true)
        .append(!too_big)
        .write(true)
        .truncate(too_big)
        .open(&path);
    let Ok(file) = file else {
        return;
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Mutex::new(file))
        .with_target(true)
        .try_init();
}
