//! The command-line flags the binaries share (feature `cli`): one clap
//! struct for the settings flags, one for where a terminal session starts.
//! Each binary flattens them into its own parser, so every flag and its
//! help text is written once.

use std::path::PathBuf;

use clap::Args;

use crate::load::{Overrides, Sources};

/// The flags that feed the settings: `--model`, `--base-url`, `--config`
/// and `--print-config`.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct SettingsFlags {
    /// The model as PROVIDER/MODEL (overrides `model`).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,

    /// The model server's address (overrides `baseURL`).
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,

    /// Use this settings file instead of the user and project files.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print the merged settings and where each came from, then exit.
    #[arg(long = "print-config")]
    pub print_config: bool,

    /// The mode: allow (run without asking), ask, or plan (read-only)
    /// (overrides `permissions.default`, in mm-acp `acp.permissions`; the
    /// rules stay).
    #[arg(long, value_name = "MODE", value_parser = ["allow", "ask", "plan"])]
    pub permissions: Option<String>,
}

impl SettingsFlags {
    /// The settings the flags override.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            permissions: self.mode(),
            ..Overrides::default()
        }
    }

    /// `--permissions`, as a setting.
    pub fn mode(&self) -> Option<crate::PermissionSetting> {
        self.permissions.as_deref().and_then(|p| p.parse().ok())
    }

    /// This process's sources for a session rooted at `cwd`, with these
    /// flags on top.
    pub fn sources(&self, cwd: impl Into<PathBuf>) -> Sources {
        Sources::from_process(cwd, self.config.clone(), self.overrides())
    }
}

/// `--demo`, for the terminal front ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Args)]
pub struct DemoFlag {
    /// Talk to a scripted model in-process (no model server needed); its
    /// sessions go to a temporary folder.
    #[arg(long)]
    pub demo: bool,
}

/// The flags of a terminal front end (`mm-repl`, `mm-tui`): the
/// settings, where the session starts, and `--demo`. One struct, so the
/// two binaries cannot grow apart.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct TerminalFlags {
    /// `--model`, `--base-url`, `--config`, `--print-config`.
    #[command(flatten)]
    pub settings: SettingsFlags,
    /// `--cwd`, `--continue`, `--resume`.
    #[command(flatten)]
    pub session: SessionFlags,
    /// `--demo`.
    #[command(flatten)]
    pub demo: DemoFlag,
}

/// The process's working directory, or why it has none.
pub fn current_dir() -> Result<PathBuf, String> {
    std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))
}

/// Where a terminal session starts: `--cwd`, `--continue`, `--resume`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct SessionFlags {
    /// Work in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Continue the latest session of this directory.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,

    /// Continue the session with this id, the start of one (8 characters
    /// are enough), or its number in /sessions; without one, choose from
    /// a list.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,

    /// With --continue or --resume: go on in a copy of that session; its
    /// own file stays as it is.
    #[arg(long)]
    pub fork: bool,
}

impl SessionFlags {
    /// The session's root: `--cwd`, which must be a directory, or the
    /// process's own.
    pub fn working_dir(&self) -> Result<PathBuf, String> {
        match &self.cwd {
            Some(dir) => {
                let full = std::fs::canonicalize(dir)
                    .map_err(|e| format!("--cwd {}: {e}", dir.display()))?;
                if !full.is_dir() {
                    return Err(format!("--cwd {}: not a directory", full.display()));
                }
                Ok(full)
            }
            None => current_dir(),
        }
    }

    /// The saved session to continue: `None` for a new one, `Some(None)`
    /// for the latest of the directory, `Some(Some(id))` for one by id.
    pub fn resume(&self) -> Option<Option<&str>> {
        match (&self.resume, self.continue_session) {
            (Some(id), _) if id.is_empty() => None,
            (Some(id), _) => Some(Some(id)),
            (None, true) => Some(None),
            (None, false) => None,
        }
    }

    /// `--resume` without an id: the front end opens the list of sessions.
    pub fn resume_from_list(&self) -> bool {
        self.resume.as_deref() == Some("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Both {
        #[command(flatten)]
        settings: SettingsFlags,
        #[command(flatten)]
        session: SessionFlags,
    }

    #[test]
    fn the_flags_parse_into_overrides_and_a_session_choice() {
        use clap::CommandFactory;
        Both::command().debug_assert();
        let both = Both::parse_from(["x", "--model", "ollama/q", "--base-url", "http://h/v1"]);
        assert_eq!(both.settings.overrides().model.as_deref(), Some("ollama/q"));
        assert_eq!(
            both.settings.overrides().base_url.as_deref(),
            Some("http://h/v1")
        );
        assert_eq!(both.session.resume(), None);
        let both = Both::parse_from(["x", "--continue"]);
        assert_eq!(both.session.resume(), Some(None));
        let both = Both::parse_from(["x", "--resume", "abc"]);
        assert_eq!(both.session.resume(), Some(Some("abc")));
        assert!(!both.session.fork);
        let both = Both::parse_from(["x", "--continue", "--fork"]);
        assert!(both.session.fork && both.session.resume() == Some(None));
        assert!(Both::try_parse_from(["x", "--continue", "--resume", "abc"]).is_err());
    }

    #[test]
    fn cwd_must_be_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let flags = SessionFlags {
            cwd: Some(file.clone()),
            ..SessionFlags::default()
        };
        let full = file.canonicalize().unwrap();
        assert_eq!(
            flags.working_dir(),
            Err(format!("--cwd {}: not a directory", full.display()))
        );
        let flags = SessionFlags {
            cwd: Some(dir.path().to_path_buf()),
            ..SessionFlags::default()
        };
        assert_eq!(flags.working_dir(), Ok(dir.path().canonicalize().unwrap()));
    }
}
