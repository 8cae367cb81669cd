//! The flags of `mm-repl`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use mm_agent::start::RunFlags;
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

/// The flags a script sets for one run.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct ScriptFlags {
    /// At most N model requests per question (overrides `maxTurns`); -p
    /// exits 3 when the limit ends the turn.
    #[arg(long = "max-turns", value_name = "N")]
    pub max_turns: Option<u32>,

    /// Allow rules for this run, as in `permissions.allow` (`read_file`,
    /// `bash(git log *)`): repeat the flag or separate rules with commas.
    #[arg(long = "allowed-tools", value_name = "RULES")]
    pub allowed_tools: Vec<String>,

    /// Deny rules for this run, as in `permissions.deny`.
    #[arg(long = "disallowed-tools", value_name = "RULES")]
    pub disallowed_tools: Vec<String>,

    /// With -p: the final answer must be a JSON value of the JSON Schema in
    /// FILE (stdout then holds just that value); an answer that does not
    /// fit is asked for once more, then -p exits 5.
    #[arg(long = "output-schema", value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
}

impl ScriptFlags {
    /// What the agent's start takes of them.
    pub fn run_flags(&self) -> RunFlags {
        RunFlags {
            max_turns: self.max_turns,
            // `--permissions` is every binary's (mm-config's flags).
            permissions: None,
            allow: split_rules(&self.allowed_tools),
            deny: split_rules(&self.disallowed_tools),
        }
    }
}

/// Rules given as flags: each value split at the commas outside a rule's
/// parentheses (`bash(echo a,b),read_file` is two rules).
pub fn split_rules(values: &[String]) -> Vec<String> {
    let mut rules = Vec::new();
    for value in values {
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in value.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    rules.push(value[start..i].trim().to_owned());
                    start = i + 1;
                }
                _ => {}
            }
        }
        rules.push(value[start..].trim().to_owned());
    }
    rules.retain(|r| !r.is_empty());
    rules
}

/// mm: a small coding agent in your terminal.
///
/// Without -p it opens the REPL. With -p (or a question on stdin) it runs one
/// turn, prints the answer and exits: 0 when the turn ended with an answer,
/// 1 when it failed, 2 for a bad start, 3 when the turn limit stopped it, 4
/// when a call needed permission and there was no terminal to ask, 5 when
/// the answer did not fit --output-schema, 130 when it was cancelled.
#[derive(Debug, Parser)]
#[command(name = "mm-repl", version = mm_agent::version(), about, long_about)]
pub struct Cli {
    /// Ask one question and exit (`-` reads it from stdin).
    #[arg(short = 'p', long = "prompt", value_name = "QUESTION")]
    pub prompt: Option<String>,

    /// Probe the configured server and model (window, template, native,
    /// text-form and constrained calls, cache, speed), print what mm will
    /// do and the settings it recommends, and exit: 0 when the server
    /// answered, 1 when it did not. Nothing the model asks for is run.
    #[arg(long, conflicts_with = "prompt")]
    pub doctor: bool,

    /// Output of one-shot mode and of --doctor.
    #[arg(long = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,

    #[command(flatten)]
    pub flags: TerminalFlags,

    #[command(flatten)]
    pub script: ScriptFlags,

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
        assert!(Cli::try_parse_from(["mm-repl", "--doctor", "-p", "x"]).is_err());
        assert!(Cli::parse_from(["mm-repl", "--doctor"]).doctor);
    }

    #[test]
    fn script_flags_parse_into_run_flags() {
        let cli = Cli::parse_from([
            "mm-repl",
            "--max-turns",
            "2",
            "--permissions",
            "ask",
            "--allowed-tools",
            "bash(echo a,b), read_file",
            "--allowed-tools",
            "lsp",
            "--disallowed-tools",
            "write_file",
        ]);
        let run = cli.script.run_flags();
        assert_eq!(run.max_turns, Some(2));
        assert_eq!(
            cli.flags.settings.mode(),
            Some(mm_config::PermissionSetting::Ask)
        );
        assert_eq!(
            Cli::parse_from(["mm-repl", "--permissions", "plan"])
                .flags
                .settings
                .mode(),
            Some(mm_config::PermissionSetting::Plan)
        );
        assert_eq!(run.allow, ["bash(echo a,b)", "read_file", "lsp"]);
        assert_eq!(run.deny, ["write_file"]);
        assert!(Cli::try_parse_from(["mm-repl", "--permissions", "maybe"]).is_err());
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
