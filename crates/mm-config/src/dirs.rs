//! XDG base directories, the same layout on every Unix.
//!
//! Two ways in, one rule: [`BaseDirs::from_process`] asks `etcetera`'s XDG
//! strategy; [`BaseDirs::from_env`] applies the same rule to an explicit
//! environment, so the loader can be tested without touching the real HOME.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use etcetera::BaseStrategy;

use crate::error::ConfigError;

/// The user's XDG base directories (not yet with `mm/` appended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseDirs {
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub config: PathBuf,
    /// `$XDG_DATA_HOME`, else `~/.local/share`.
    pub data: PathBuf,
    /// `$XDG_STATE_HOME`, else `~/.local/state`.
    pub state: PathBuf,
    /// The home directory, when known (for `~/` in paths and messages).
    pub home: Option<PathBuf>,
}

impl BaseDirs {
    /// The directories of this process, through `etcetera`. Without a
    /// home directory the fallbacks are relative paths (`.config`, ...):
    /// a `Default` cannot fail, and such a machine is rare.
    pub fn from_process() -> BaseDirs {
        match etcetera::base_strategy::Xdg::new() {
            Ok(xdg) => BaseDirs {
                config: xdg.config_dir(),
                data: xdg.data_dir(),
                state: xdg
                    .state_dir()
                    .unwrap_or_else(|| xdg.home_dir().join(".local/state")),
                home: Some(xdg.home_dir().to_path_buf()),
            },
            Err(_) => BaseDirs::with_home(None, |name| std::env::var(name).ok()),
        }
    }

    /// The directories an explicit environment describes: an absolute
    /// `XDG_*_HOME` wins (a relative one is ignored, as the XDG spec and
    /// `etcetera` say), else the path under `HOME`.
    pub fn from_env(env: &BTreeMap<String, String>) -> Result<BaseDirs, ConfigError> {
        let home = env.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
        let get = |name: &str| env.get(name).cloned();
        let needs_home = ["XDG_CONFIG_HOME", "XDG_DATA_HOME"]
            .iter()
            .any(|v| xdg_var(get(v)).is_none());
        if home.is_none() && needs_home {
            return Err(ConfigError::NoHome);
        }
        Ok(BaseDirs::with_home(home, get))
    }

    fn with_home(home: Option<PathBuf>, get: impl Fn(&str) -> Option<String>) -> BaseDirs {
        let base = home.clone().unwrap_or_default();
        let dir =
            |var: &str, default: &str| xdg_var(get(var)).unwrap_or_else(|| base.join(default));
        BaseDirs {
            config: dir("XDG_CONFIG_HOME", ".config"),
            data: dir("XDG_DATA_HOME", ".local/share"),
            state: dir("XDG_STATE_HOME", ".local/state"),
            home,
        }
    }

    /// `path` with a leading `~/` replaced by the home directory.
    pub fn expand_tilde(&self, path: &Path) -> PathBuf {
        match (&self.home, path.strip_prefix("~")) {
            (Some(home), Ok(rest)) => home.join(rest),
            _ => path.to_path_buf(),
        }
    }

    /// `path` with the home directory shown as `~`, for messages.
    pub fn display_short(&self, path: &Path) -> String {
        match self.home.as_deref().map(|h| path.strip_prefix(h)) {
            Some(Ok(rest)) => Path::new("~").join(rest).display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

fn xdg_var(value: Option<String>) -> Option<PathBuf> {
    value.map(PathBuf::from).filter(|p| p.is_absolute())
}

/// mm's configuration directory: `$XDG_CONFIG_HOME/mm` (else `~/.config/mm`).
pub fn config_dir() -> PathBuf {
    BaseDirs::from_process().config.join("mm")
}

/// mm's data directory: `$XDG_DATA_HOME/mm` (else `~/.local/share/mm`).
pub fn data_dir() -> PathBuf {
    BaseDirs::from_process().data.join("mm")
}

/// mm's state directory, for the REPL's history and logs:
/// `$XDG_STATE_HOME/mm` (else `~/.local/state/mm`).
pub fn state_dir() -> PathBuf {
    BaseDirs::from_process().state.join("mm")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn xdg_variables_win_over_home() {
        let dirs = BaseDirs::from_env(&env(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/x/conf"),
            ("XDG_DATA_HOME", "/x/data"),
            ("XDG_STATE_HOME", "/x/state"),
        ]))
        .unwrap();
        assert_eq!(dirs.config, PathBuf::from("/x/conf"));
        assert_eq!(dirs.data, PathBuf::from("/x/data"));
        assert_eq!(dirs.state, PathBuf::from("/x/state"));
    }

    #[test]
    fn home_fallbacks_and_relative_xdg_ignored() {
        let dirs =
            BaseDirs::from_env(&env(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "rel")])).unwrap();
        assert_eq!(dirs.config, PathBuf::from("/home/u/.config"));
        assert_eq!(dirs.data, PathBuf::from("/home/u/.local/share"));
        assert_eq!(dirs.state, PathBuf::from("/home/u/.local/state"));
    }

    #[test]
    fn no_home_is_an_error_only_when_needed() {
        let err = BaseDirs::from_env(&env(&[("XDG_CONFIG_HOME", "/c")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot find the home directory: set HOME (or XDG_CONFIG_HOME and XDG_DATA_HOME)"
        );
        let dirs = BaseDirs::from_env(&env(&[("XDG_CONFIG_HOME", "/c"), ("XDG_DATA_HOME", "/d")]))
            .unwrap();
        assert_eq!(dirs.config, PathBuf::from("/c"));
        assert_eq!(dirs.home, None);
    }

    #[test]
    fn process_rule_matches_explicit_rule() {
        // etcetera (process) and from_env (explicit) must agree on the same environment.
        let mut vars: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        if let Some(home) = std::env::home_dir() {
            vars.entry("HOME".to_owned())
                .or_insert_with(|| home.display().to_string());
        }
        let explicit = BaseDirs::from_env(&vars).unwrap();
        assert_eq!(BaseDirs::from_process(), explicit);
        assert_eq!(config_dir(), explicit.config.join("mm"));
        assert_eq!(data_dir(), explicit.data.join("mm"));
        assert_eq!(state_dir(), explicit.state.join("mm"));
    }

    #[test]
    fn tilde_expansion_and_short_display() {
        let dirs = BaseDirs::from_env(&env(&[("HOME", "/home/u")])).unwrap();
        assert_eq!(
            dirs.expand_tilde(Path::new("~/skills")),
            PathBuf::from("/home/u/skills")
        );
        assert_eq!(
            dirs.expand_tilde(Path::new("/abs/~x")),
            PathBuf::from("/abs/~x")
        );
        assert_eq!(
            dirs.display_short(Path::new("/home/u/.config/mm/config.yaml")),
            "~/.config/mm/config.yaml"
        );
        assert_eq!(dirs.display_short(Path::new("/etc/x")), "/etc/x");
    }
}
