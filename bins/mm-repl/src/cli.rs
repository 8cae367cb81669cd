//! The flags of `mm-repl`.

use clap::{Parser, Subcommand, ValueEnum};
use mm_config::TerminalFlags;

/// How one-shot mode prints the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// The answer on stdout; tool lines, notices and errors on stderr.
    #[default]
    Text,
    /// One JSON object per event and line on stdout: first `session`
    /// {session_id, model, cwd, version}, then the turn's events (`text`,
    /// `tool_start`, `tool_end` …), then `usage` {prompt_tokens,
    /// completion_tokens, cached_tokens} and, last, `turn_end` {outcome:
    /// done|cancelled|max_turns|failed, error (with failed), counters,
    /// prompt_tokens, completion_tokens, cached_tokens}.
    Json,
}

/// mm: a small coding agent in your terminal.
///
/// Without -p it opens the REPL. With -p (or a question on stdin) it runs one
/// turn, prints the answer and exits: 0 when the turn ended normally, 1 when
/// it failed or was stopped, 130 when it was cancelled, 2 for a bad start.
#[derive(Debug, Parser)]
#[command(name = "mm-repl", version = mm_agent::version(), about, long_about)]
pub struct Cli {
    /// Ask one question and exit (`-` reads it from stdin).
    #[arg(short = 'p', long = "prompt", value_name = "QUESTION")]
    pub prompt: Option<String>,

    /// Output of one-shot mode.
    #[arg(long = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    #[command(flatten)]
    pub flags: TerminalFlags,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a shell completion script.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// Write the completion script for `shell` to `out`.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "mm-repl", out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_one_shot_flags() {
        let cli = Cli::parse_from([
            "mm-repl",
            "-p",
            "hi",
            "--output-format",
            "json",
            "--model",
            "ollama/x",
        ]);
        assert_eq!(cli.prompt.as_deref(), Some("hi"));
        assert_eq!(cli.output_format, OutputFormat::Json);
        assert_eq!(cli.flags.settings.model.as_deref(), Some("ollama/x"));
        assert!(Cli::try_parse_from(["mm-repl", "--continue", "--resume", "x"]).is_err());
    }

    #[test]
    fn bash_completions_name_the_flags() {
        let mut out = Vec::new();
        completions(clap_complete::Shell::Bash, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("--print-config"));
        assert!(text.contains("--output-format"));
    }
}
