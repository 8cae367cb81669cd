//! A user in a temp folder: HOME, the XDG folders and a project to work in,
//! so that a binary under test reads and writes nothing of the real user's.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One isolated user, removed with its folder when dropped. The layout,
/// under [`User::root`]: `home`, `config` (`XDG_CONFIG_HOME`), `data`,
/// `state`, `cache` and `work` (the project).
#[derive(Debug)]
pub struct User {
    dir: tempfile::TempDir,
    /// The temp folder, canonical.
    pub root: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// `XDG_CONFIG_HOME`.
    pub config: PathBuf,
    /// `XDG_DATA_HOME`.
    pub data: PathBuf,
    /// `XDG_STATE_HOME`.
    pub state: PathBuf,
    /// `XDG_CACHE_HOME`.
    pub cache: PathBuf,
    /// The project a run works in (its cwd).
    pub work: PathBuf,
}

impl User {
    /// A fresh user with every folder made.
    pub fn new() -> User {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let made = |name: &str| {
            let path = root.join(name);
            std::fs::create_dir_all(&path).unwrap();
            path
        };
        User {
            home: made("home"),
            config: made("config"),
            data: made("data"),
            state: made("state"),
            cache: made("cache"),
            work: made("work"),
            root,
            dir,
        }
    }

    /// The temp folder as the `TempDir` made it (not canonical).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The variables that point a process at this user's folders.
    pub fn vars(&self) -> [(&'static str, &Path); 5] {
        [
            ("HOME", &self.home),
            ("XDG_CONFIG_HOME", &self.config),
            ("XDG_DATA_HOME", &self.data),
            ("XDG_STATE_HOME", &self.state),
            ("XDG_CACHE_HOME", &self.cache),
        ]
    }

    /// The whole environment a run gets: the test's `PATH` and
    /// [`User::vars`], nothing else (no key, no `MM_` variable).
    pub fn environment(&self) -> Vec<(&'static str, OsString)> {
        let mut env = vec![("PATH", std::env::var_os("PATH").unwrap_or_default())];
        env.extend(self.vars().map(|(k, v)| (k, v.as_os_str().to_owned())));
        env
    }

    /// [`User::environment`] as the map `mm_config::Sources` reads.
    pub fn env_map(&self) -> BTreeMap<String, String> {
        self.environment()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_string_lossy().into_owned()))
            .collect()
    }

    /// Give `cmd` this user's environment only, in the project.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_clear()
            .envs(self.environment())
            .current_dir(&self.work)
    }

    /// `$XDG_CONFIG_HOME/mm/config.yaml`.
    pub fn config_file(&self) -> PathBuf {
        self.config.join("mm/config.yaml")
    }

    /// Write the user's config file.
    pub fn write_config(&self, yaml: &str) {
        let path = self.config_file();
        std::fs::create_dir_all(self.config.join("mm")).unwrap();
        std::fs::write(path, yaml).unwrap();
    }
}

impl Default for User {
    fn default() -> User {
        User::new()
    }
}

/// The settings that point mm at a mock server at `url`: model
/// `openai-compatible/<model>`, no retries, a watchdog of `watchdog`
/// seconds.
pub fn mock_config(url: &str, model: &str, watchdog: u32) -> String {
    format!(
        "model: openai-compatible/{model}\nbaseURL: {url}/v1\nretries: 0\nwatchdog: {watchdog}\n"
    )
}

/// A temp folder known by its canonical path (what tools under test
/// report), removed when dropped.
#[derive(Debug)]
pub struct TempDir {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl TempDir {
    /// A fresh empty folder.
    pub fn new() -> TempDir {
        let dir = tempfile::Builder::new()
            .prefix("mm-test-")
            .tempdir()
            .unwrap();
        TempDir {
            path: dir.path().canonicalize().unwrap(),
            _dir: dir,
        }
    }

    /// Its canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Default for TempDir {
    fn default() -> TempDir {
        TempDir::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_sees_only_the_user() {
        let user = User::new();
        user.write_config("retries: 1\n");
        let out = user.apply(&mut Command::new("env")).output().unwrap();
        let env = String::from_utf8(out.stdout).unwrap();
        assert!(env.contains(&format!("HOME={}\n", user.home.display())));
        assert!(env.contains(&format!("XDG_CACHE_HOME={}\n", user.cache.display())));
        assert_eq!(env.lines().count(), 6, "{env}");
        assert_eq!(
            std::fs::read_to_string(user.config_file()).unwrap(),
            "retries: 1\n"
        );
    }
}
