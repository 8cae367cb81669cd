//! The flags of `mm-tui`, and start-up: settings, `--print-config`,
//! `--version`, the agent, a resumed session, then the window.

use std::process::ExitCode;

use clap::Parser;
use mm_agent::start::{Demo, Launch, Terminal};
use mm_agent::{Agent, StartError};
use mm_config::TerminalFlags;

/// mm in a full-screen window: the same agent as mm-repl, with a
/// transcript, folded tool output and an inline permission prompt.
#[derive(Debug, Parser)]
#[command(name = "mm-tui", version = mm_agent::version(), about, long_about)]
pub struct Cli {
    #[command(flatten)]
    pub flags: TerminalFlags,
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
    let server = match cli.flags.demo.demo {
        true => Some(mm_mock::start_demo().await.map_err(StartError::Demo)?),
        false => None,
    };
    let demo = server.as_ref().map(|s| Demo::new(&s.url())).transpose()?;
    let start = match Terminal::load(&cli.flags, demo.as_ref())? {
        Launch::Run(start) => start,
        Launch::Print(settings) => {
            print!("{settings}");
            return Ok(None);
        }
    };
    let (agent, resumed) = start.agent(&cli.flags, demo.as_ref())?;
    Ok(Some(Prepared {
        agent,
        resumed,
        demo: server.zip(demo),
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
        assert_eq!(cli.flags.settings.model.as_deref(), Some("openai/x"));
        assert_eq!(cli.flags.session.resume.as_deref(), Some("abc"));
        assert!(Cli::try_parse_from(["mm-tui", "--continue", "--resume", "x"]).is_err());
    }
}
