//! The flags of `mm-tui`, and start-up: settings, `--print-config`,
//! `--version`, the agent, a resumed session, then the window.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use mm_agent::config::{Overrides, Sources, load};
use mm_agent::{Agent, PermissionSource};

/// mm in a full-screen window: the same agent as mm-repl, with a
/// transcript, folded tool output and an inline permission prompt.
#[derive(Debug, Parser)]
#[command(name = "mm-tui", version = mm_agent::version(), about, long_about)]
pub struct Cli {
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

    /// Work in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Continue the latest session of this directory.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,

    /// Continue the session with this id.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
}

/// Everything before the window opens; errors are one line on stderr.
pub fn prepare(cli: &Cli) -> Result<Option<Agent>, (String, u8)> {
    let cwd = working_dir(cli.cwd.as_ref()).map_err(|e| (e, 2))?;
    let flags = Overrides {
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        ..Overrides::default()
    };
    let sources = Sources::from_process(&cwd, cli.config.clone(), flags);
    let loaded = load(&sources).map_err(|e| (e.to_string(), 2))?;
    if cli.print_config {
        print!("{}", loaded.print());
        return Ok(None);
    }
    let mut agent = Agent::new(loaded.config, &cwd, PermissionSource::Terminal)
        .map_err(|e| (e.to_string(), 2))?;
    if cli.continue_session || cli.resume.is_some() {
        agent
            .resume(cli.resume.as_deref())
            .map_err(|e| (e.to_string(), 2))?;
    }
    Ok(Some(agent))
}

/// The session's root: `--cwd` (which must be a directory, as for
/// mm-repl) or the process's.
pub fn working_dir(flag: Option<&PathBuf>) -> Result<PathBuf, String> {
    match flag {
        Some(dir) => {
            let full =
                std::fs::canonicalize(dir).map_err(|e| format!("--cwd {}: {e}", dir.display()))?;
            if !full.is_dir() {
                return Err(format!("--cwd {}: not a directory", full.display()));
            }
            Ok(full)
        }
        None => {
            std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))
        }
    }
}

/// Exit code of a start-up failure.
pub fn fail(message: &str, code: u8) -> ExitCode {
    eprintln!("mm-tui: {message}");
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_flags_are_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::parse_from([
            "mm-tui",
            "--model",
            "openai/x",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--resume",
            "abc",
        ]);
        assert_eq!(cli.model.as_deref(), Some("openai/x"));
        assert_eq!(cli.resume.as_deref(), Some("abc"));
        assert!(Cli::try_parse_from(["mm-tui", "--continue", "--resume", "x"]).is_err());
    }
}
