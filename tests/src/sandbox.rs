//! A user's machine in a temp folder: HOME, the XDG folders, a project to
//! work in and a user config file, so that a binary under test reads and
//! writes nothing of the real user's. Every process started from it carries
//! a mark in its environment, so whatever it leaves running can be found.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use mm_test_support::User;
use serde_json::Value;

use crate::child;

/// The variable that marks every process a sandbox starts (inherited by the
/// tools' children: the agent passes its environment on, minus keys).
pub const MARK_VAR: &str = "MM_FAULT_MARK";

/// One isolated user.
#[derive(Debug)]
pub struct Sandbox {
    user: User,
    pub home: PathBuf,
    pub config_home: PathBuf,
    pub data_home: PathBuf,
    pub state_home: PathBuf,
    /// The project the binary runs in (its cwd).
    pub work: PathBuf,
    /// This sandbox's value of [`MARK_VAR`].
    pub mark: String,
}

impl Sandbox {
    /// A fresh user whose `~/.config/mm/config.yaml` holds `user_config`.
    pub fn new(user_config: &str) -> std::io::Result<Sandbox> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let user = User::new();
        user.write_config(user_config);
        Ok(Sandbox {
            home: user.home.clone(),
            config_home: user.config.clone(),
            data_home: user.data.clone(),
            state_home: user.state.clone(),
            work: user.work.clone(),
            mark: format!(
                "{}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst),
                user.root.display()
            ),
            user,
        })
    }

    /// `$XDG_CONFIG_HOME/mm/config.yaml`.
    pub fn user_config(&self) -> PathBuf {
        self.user.config_file()
    }

    /// `<project>/.mm/config.yaml`, written with `text`.
    pub fn write_project_config(&self, text: &str) -> std::io::Result<PathBuf> {
        let dir = self.work.join(".mm");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("config.yaml");
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// `bin` to be run in the project with only this user's environment:
    /// the model is `openai-compatible/x` at `base_url` (`…/v1`), stdin is
    /// `/dev/null`, no key and no other `MM_` variable is inherited.
    pub fn command(&self, bin: &Path, base_url: &str) -> Command {
        let mut cmd = Command::new(bin);
        self.user
            .apply(&mut cmd)
            .env("LANG", "C.UTF-8")
            .env("MM_MODEL", "openai-compatible/x")
            .env("MM_BASE_URL", base_url)
            .env(MARK_VAR, &self.mark)
            .stdin(Stdio::null());
        cmd
    }

    /// `$XDG_DATA_HOME/mm/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_home.join("mm/sessions")
    }

    fn files(&self, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(projects) = std::fs::read_dir(self.sessions_dir()) else {
            return out;
        };
        for project in projects.filter_map(Result::ok) {
            let Ok(files) = std::fs::read_dir(project.path()) else {
                continue;
            };
            for file in files.filter_map(Result::ok) {
                let name = file.file_name();
                if keep(&name.to_string_lossy()) {
                    out.push(file.path());
                }
            }
        }
        out.sort();
        out
    }

    /// The session files (`<id>.json`) of every project.
    pub fn session_files(&self) -> Vec<PathBuf> {
        self.files(|n| !n.starts_with('.') && n.ends_with(".json"))
    }

    /// The temp files of unfinished saves (`.<id>.json.….tmp`).
    pub fn temp_files(&self) -> Vec<PathBuf> {
        self.files(|n| n.starts_with('.') && n.ends_with(".tmp"))
    }

    /// Every session file, parsed. Fails on the first one that is not a
    /// whole session (JSON with a `version` and a `messages` list): a torn
    /// file is exactly what the suite must never see.
    pub fn sessions(&self) -> Result<Vec<Value>, String> {
        self.session_files()
            .iter()
            .map(|path| {
                let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
                let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
                    format!("{} is torn: {e} ({} bytes)", path.display(), bytes.len())
                })?;
                if !value["version"].is_u64() || !value["messages"].is_array() {
                    return Err(format!("{} is not a session: {value}", path.display()));
                }
                Ok(value)
            })
            .collect()
    }

    /// Processes this sandbox started that are still alive, except `not`.
    pub fn leftovers(&self, not: &[libc::pid_t]) -> Vec<libc::pid_t> {
        child::processes_with_env(MARK_VAR, &self.mark, not)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_session_file_is_reported() {
        let sb = Sandbox::new("").unwrap();
        let dir = sb.sessions_dir().join("project-0123456789ab");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.json"), r#"{"version":1,"messages":[]}"#).unwrap();
        std::fs::write(dir.join(".a.json.1.1.tmp"), "{").unwrap();
        assert_eq!(sb.sessions().unwrap().len(), 1);
        assert_eq!(sb.temp_files().len(), 1);
        std::fs::write(dir.join("b.json"), r#"{"version":1,"messa"#).unwrap();
        let err = sb.sessions().unwrap_err();
        assert!(err.contains("b.json is torn"), "{err}");
    }

    #[test]
    fn the_command_sees_only_the_sandbox() {
        let sb = Sandbox::new("retries: 1\n").unwrap();
        let out = sb
            .command(Path::new("env"), "http://127.0.0.1:1/v1")
            .output()
            .unwrap();
        let env = String::from_utf8(out.stdout).unwrap();
        assert!(env.contains(&format!("HOME={}\n", sb.home.display())));
        assert!(env.contains("MM_BASE_URL=http://127.0.0.1:1/v1\n"));
        assert!(!env.contains("OPENAI_API_KEY"));
        assert_eq!(
            std::fs::read_to_string(sb.user_config()).unwrap(),
            "retries: 1\n"
        );
    }
}
