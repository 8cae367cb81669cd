//! The one table of slash commands. The REPL dispatches on it, the window's
//! `/` picker lists it, and the ACP server advertises its editor slice: a
//! command added here is offered (or deliberately not) everywhere at once.

/// A front end that can offer a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// `mm-repl`, the line REPL.
    Repl,
    /// `mm-tui`, the window.
    Window,
    /// `mm-acp`, an editor over ACP.
    Editor,
}

/// One slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// Without the slash.
    pub name: &'static str,
    pub description: &'static str,
    /// A hint for the argument (`[focus]`), `None` when it takes none.
    pub argument: Option<&'static str>,
    pub fronts: &'static [Front],
}

const ALL: &[Front] = &[Front::Repl, Front::Window, Front::Editor];
const TERMINAL: &[Front] = &[Front::Repl, Front::Window];

/// Every command, in the order `/help` lists them.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "new",
        description: "Start a new session (forgets the conversation and resets the loop detector)",
        argument: None,
        fronts: ALL,
    },
    Command {
        name: "compact",
        description: "Summarise the conversation so far to free context",
        argument: Some("[focus]"),
        fronts: ALL,
    },
    Command {
        name: "copy",
        description: "Copy the last answer to the clipboard",
        argument: None,
        fronts: TERMINAL,
    },
    Command {
        name: "sessions",
        description: "List this project's saved sessions",
        argument: None,
        fronts: TERMINAL,
    },
    Command {
        name: "resume",
        description: "Resume a saved session by id (or the latest)",
        argument: Some("[id]"),
        fronts: TERMINAL,
    },
    Command {
        name: "model",
        description: "Show the model, or switch to PROVIDER/MODEL",
        argument: Some("[provider/model]"),
        fronts: TERMINAL,
    },
    Command {
        name: "help",
        description: "List the commands",
        argument: None,
        fronts: TERMINAL,
    },
    Command {
        name: "quit",
        description: "Leave mm",
        argument: None,
        fronts: TERMINAL,
    },
];

/// The commands a front end offers.
pub fn for_front(front: Front) -> impl Iterator<Item = &'static Command> {
    COMMANDS.iter().filter(move |c| c.fronts.contains(&front))
}

/// A command line typed by the user, split into its command and argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A known command offered by this front end.
    Command {
        command: &'static Command,
        argument: &'a str,
    },
    /// Starts with `/` but names no command of this front end.
    Unknown(&'a str),
    /// Not a command: a question.
    NotCommand,
}

/// Parse `line` for `front`. `/compact focus on tests` gives `compact` with
/// argument `focus on tests`. A line starting with `//` or `/ ` is not a
/// command, so a question may start with a path like `/etc/hosts?`
/// only if it names no command.
pub fn parse(line: &str, front: Front) -> Parsed<'_> {
    let trimmed = line.trim();
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Parsed::NotCommand;
    };
    let (name, argument) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    if name.is_empty() || name.contains('/') {
        return Parsed::NotCommand;
    }
    match for_front(front).find(|c| c.name == name) {
        Some(command) => Parsed::Command { command, argument },
        None => Parsed::Unknown(name),
    }
}

/// The `/help` text for a front end: one `/name [arg]  description` line each.
pub fn help(front: Front) -> String {
    let rows: Vec<(String, &str)> = for_front(front)
        .map(|c| {
            let usage = match c.argument {
                Some(a) => format!("/{} {}", c.name, a),
                None => format!("/{}", c.name),
            };
            (usage, c.description)
        })
        .collect();
    let width = rows
        .iter()
        .map(|(u, _)| u.chars().count())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(u, d)| format!("{u:<width$}  {d}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_slice_is_new_and_compact() {
        let names: Vec<_> = for_front(Front::Editor).map(|c| c.name).collect();
        assert_eq!(names, ["new", "compact"]);
    }

    #[test]
    fn terminal_fronts_offer_the_required_commands() {
        for front in [Front::Repl, Front::Window] {
            let names: Vec<_> = for_front(front).map(|c| c.name).collect();
            for want in [
                "new", "compact", "copy", "sessions", "resume", "model", "help", "quit",
            ] {
                assert!(names.contains(&want), "{front:?} lacks /{want}");
            }
        }
    }

    #[test]
    fn parses_commands_and_arguments() {
        match parse("/compact  focus on the parser ", Front::Repl) {
            Parsed::Command { command, argument } => {
                assert_eq!(command.name, "compact");
                assert_eq!(argument, "focus on the parser");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            parse("/frobnicate", Front::Repl),
            Parsed::Unknown("frobnicate")
        );
        assert_eq!(parse("/copy", Front::Editor), Parsed::Unknown("copy"));
        assert_eq!(parse("what is /etc/hosts", Front::Repl), Parsed::NotCommand);
        assert_eq!(
            parse("/etc/hosts is what?", Front::Repl),
            Parsed::NotCommand
        );
    }

    #[test]
    fn help_lists_every_command_of_the_front() {
        let text = help(Front::Repl);
        assert_eq!(text.lines().count(), for_front(Front::Repl).count());
        assert!(text.contains("/compact [focus]"));
    }
}
