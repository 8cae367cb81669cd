//! The flags of `mm-tui`, and start-up: settings, `--print-config`,
//! `--version`, the agent, a resumed session, then the window.

use std::process::ExitCode;

use clap::Parser;
use mm_agent::config::load;
use mm_agent::start::Demo;
use mm_agent::{Agent, PermissionSource, StartError};
use mm_config::{DemoFlag, SessionFlags, SettingsFlags};

/// mm in a full-screen window: the same agent as mm-repl, with a
/// transcript, folded tool output and an inline permission prompt.
#[derive(Debug, Parser)]
#[command(name = "mm-tui", version = mm_agent::version(), about, long_about)]
pub struct Cli {
    #[command(flatten)]
    pub settings: SettingsFlags,

    #[command(flatten)]
    pub session: SessionFlags,

    #[command(flatten)]
    pub demo: DemoFlag,
}

/// What the window runs with: the agent, what to say about a resumed
/// session, and the demo's model and folder, kept alive until the window
/// closes.
pub struct Prepared {
    pub agent: Agent,
    pub resumed: Option<String>,
    pub demo: Option<(mm_mock::MockServer, Demo)>,
}

/// Everything before the window opens; `None` when a flag answered alone
/// (`--print-config`).
pub async fn prepare(cli: &Cli) -> Result<Option<Prepared>, StartError> {
    let cwd = cli.session.working_dir().map_err(StartError::WorkingDir)?;
    let demo = if cli.demo.demo {
        let server = mm_mock::start_demo()
            .await
            .map_err(|e| StartError::Front(format!("cannot start the demo model: {e}")))?;
        let demo = Demo::new(&server.url())?;
        Some((server, demo))
    } else {
        None
    };
    let mut overrides = cli.settings.overrides();
    if let Some((_, demo)) = &demo {
        demo.overrides(&mut overrides);
    }
    let sources = mm_config::Sources::from_process(&cwd, cli.settings.config.clone(), overrides);
    let loaded = load(&sources)?;
    if cli.settings.print_config {
        print!("{}", mm_agent::start::config_text(&loaded));
        return Ok(None);
    }
    let (source, resume) = (PermissionSource::Terminal, cli.session.resume());
    let (agent, resumed) = match &demo {
        Some((_, demo)) => demo.agent(loaded.config, &cwd, source, resume)?,
        None => mm_agent::start::agent(loaded.config, &cwd, source, resume)?,
    };
    Ok(Some(Prepared {
        agent,
        resumed,
        demo,
    }))
}

/// Say why the window cannot open; the exit code of a start-up failure.
pub fn fail(error: StartError) -> ExitCode {
    eprintln!("mm-tui: {error}");
    ExitCode::from(error.exit_code())
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
        assert_eq!(cli.settings.model.as_deref(), Some("openai/x"));
        assert_eq!(cli.session.resume.as_deref(), Some("abc"));
        assert!(Cli::try_parse_from(["mm-tui", "--continue", "--resume", "x"]).is_err());
    }
}
