//! The one table of slash commands, and what each one does.
//!
//! Each [`Command`] carries its name, description, argument hint, the front
//! ends that offer it and its handler, as helix's typable commands do. A
//! front end parses a line against the agent's table ([`Commands::parse`]),
//! runs what it names ([`crate::Agent::run_command`]) and only renders the
//! [`Outcome`]: it never matches on a command's name, and every reply text
//! lives here. A command added to the table is offered (or deliberately
//! not) by every front end at once; an agent can add entries of its own at
//! run time ([`Commands::add`], for commands loaded from files).

mod builtin;
pub mod custom;
pub mod export;
mod mode;

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use mm_ui::Sink;
use tokio_util::sync::CancellationToken;

use crate::Agent;

pub use builtin::{INIT_PROMPT, copy, forked, recap, resumed, session_pick};

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

/// Every front end.
pub const ALL: &[Front] = &[Front::Repl, Front::Window, Front::Editor];
/// The two terminal front ends.
pub const TERMINAL: &[Front] = &[Front::Repl, Front::Window];

/// What a command takes after its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Argument {
    /// Nothing: Enter runs it.
    None,
    /// An argument that may be left out, with its hint (`[focus]`).
    Optional(Cow<'static, str>),
    /// An argument that must be given, with its hint (`<name>`).
    Required(Cow<'static, str>),
}

/// What a command's handler needs, which tells a front end when it can run.
#[derive(Clone)]
pub enum Run {
    /// Needs no agent, so it works while a turn runs (`/help`, `/quit`, a
    /// command that only writes a question).
    Free(Arc<dyn Fn(&Call<'_>) -> Outcome + Send + Sync>),
    /// A quick step on the idle agent (`/new`, `/model`).
    Now(fn(&mut Agent, &Call<'_>) -> Outcome),
    /// Takes time (it asks the model), shows as busy and can be cancelled
    /// (`/compact`).
    Task(
        for<'a> fn(
            &'a mut Agent,
            Call<'a>,
            Arc<dyn Sink>,
            CancellationToken,
        ) -> BoxFuture<'a, Outcome>,
    ),
}

/// What a handler is given besides the agent.
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The text after the command's name, trimmed; empty when none.
    pub argument: &'a str,
    /// The front end that runs it.
    pub front: Front,
    /// The table it was found in (for `/help`).
    pub commands: &'a Commands,
}

impl Call<'_> {
    /// The argument, `None` when none was given.
    pub fn argument(&self) -> Option<&str> {
        (!self.argument.is_empty()).then_some(self.argument)
    }
}

/// What a command did, for the front end to render. Replies are written
/// here; a front end decides only how they look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing more to show: the command's events already went to the sink
    /// (a compaction's notice).
    Done,
    /// A reply for the user.
    Say(String),
    /// A failure the user must see.
    Error(String),
    /// Rows of a list, one line each (`/sessions`).
    List(Vec<String>),
    /// The command list (`/help`); a front end may add its own keys after it.
    Help(String),
    /// Put this text on the clipboard, then render what [`copy`] answers.
    /// Copying may write to the terminal (OSC 52), which only a front end
    /// does.
    Copy(String),
    /// Send this text as a question, as if the user had typed it.
    Ask(String),
    /// The conversation starts afresh: clear what is shown, then say this.
    Fresh(String),
    /// The conversation is now a saved one: show the agent's history again
    /// in place of what is shown, then say this.
    Resumed(String),
    /// A unified diff (`/diff`), without colour: a terminal colours it, an
    /// editor shows it as a diff block.
    Diff(String),
    /// Leave mm.
    Quit,
    /// Choose one row (`/resume`, `/model` alone): a terminal shows a
    /// picker and runs the chosen row's command as if typed; a front end
    /// without one shows the rows.
    Pick(Pick),
}

/// A list to choose from, each row with the command that chooses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    /// What is being chosen, with how to choose without a picker.
    pub title: String,
    /// The rows, the first the most likely choice.
    pub rows: Vec<PickRow>,
}

/// One row of a [`Pick`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickRow {
    /// The row as shown (and filtered by what is typed).
    pub label: String,
    /// The command run when the row is chosen, e.g. `/resume 0190…`.
    pub command: String,
}

impl Pick {
    /// The rows whose label holds every character of `typed`, in order and
    /// ignoring case (a subsequence, as file pickers filter), with their
    /// index in [`Pick::rows`].
    pub fn filter(&self, typed: &str) -> Vec<(usize, &PickRow)> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, row)| subsequence(typed, &row.label))
            .collect()
    }
}

/// Whether `needle`'s characters appear in `hay` in order, ignoring case.
fn subsequence(needle: &str, hay: &str) -> bool {
    let mut hay = hay.chars().flat_map(char::to_lowercase);
    needle
        .chars()
        .flat_map(char::to_lowercase)
        .filter(|c| !c.is_whitespace())
        .all(|c| hay.any(|h| h == c))
}

impl Outcome {
    /// The outcome's text, for a front end that shows every outcome as a
    /// message (an editor). `None` for `Done`, `Quit` and `Ask`.
    pub fn text(&self) -> Option<String> {
        match self {
            Outcome::Say(t)
            | Outcome::Error(t)
            | Outcome::Help(t)
            | Outcome::Fresh(t)
            | Outcome::Resumed(t)
            | Outcome::Copy(t) => Some(t.clone()),
            Outcome::List(rows) => Some(rows.join("\n")),
            Outcome::Pick(pick) => Some(
                std::iter::once(pick.title.clone())
                    .chain(pick.rows.iter().map(|r| format!("  {}", r.label)))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Outcome::Diff(diff) => Some(fenced("diff", diff)),
            Outcome::Done | Outcome::Quit | Outcome::Ask(_) => None,
        }
    }
}

/// `text` in a Markdown code block of `language`, fenced with more
/// backticks than any run inside it.
fn fenced(language: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{language}\n{text}{newline}{fence}")
}

/// One slash command.
#[derive(Clone)]
pub struct Command {
    name: Cow<'static, str>,
    description: Cow<'static, str>,
    argument: Argument,
    fronts: Cow<'static, [Front]>,
    run: Run,
    one_shot: bool,
}

impl Command {
    /// A command named `name` (without the slash) that takes no argument
    /// and is offered everywhere; refine it with the `with_` methods.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        run: Run,
    ) -> Command {
        Command {
            name: name.into(),
            description: description.into(),
            argument: Argument::None,
            fronts: Cow::Borrowed(ALL),
            run,
            one_shot: false,
        }
    }

    /// Run it when it is the one-shot question (`mm-repl -p "/name"`);
    /// other commands given that way are sent to the model as text.
    pub fn in_one_shot(mut self) -> Command {
        self.one_shot = true;
        self
    }

    /// True when `mm-repl -p "/name"` runs it.
    pub fn runs_in_one_shot(&self) -> bool {
        self.one_shot
    }

    /// What it takes after its name.
    pub fn with_argument(mut self, argument: Argument) -> Command {
        self.argument = argument;
        self
    }

    /// The front ends that offer it.
    pub fn with_fronts(mut self, fronts: impl Into<Cow<'static, [Front]>>) -> Command {
        self.fronts = fronts.into();
        self
    }

    /// Without the slash.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One line for `/help`, the picker and the editor.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The argument's hint (`[focus]`), `None` when it takes none.
    pub fn argument(&self) -> Option<&str> {
        match &self.argument {
            Argument::None => None,
            Argument::Optional(hint) | Argument::Required(hint) => Some(hint),
        }
    }

    /// True when it cannot run without an argument (a picker inserts it
    /// and waits instead of running it).
    pub fn needs_argument(&self) -> bool {
        matches!(self.argument, Argument::Required(_))
    }

    /// The front ends that offer it.
    pub fn fronts(&self) -> &[Front] {
        &self.fronts
    }

    /// True when `front` offers it.
    pub fn offered_by(&self, front: Front) -> bool {
        self.fronts.contains(&front)
    }

    /// What its handler needs.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// True when it needs the agent (so it waits for a running turn).
    pub fn needs_agent(&self) -> bool {
        !matches!(self.run, Run::Free(_))
    }

    /// True when it takes time: a front end shows it as busy and lets the
    /// user cancel it.
    pub fn takes_time(&self) -> bool {
        matches!(self.run, Run::Task(_))
    }

    /// `/name [hint]`.
    pub fn usage(&self) -> String {
        match self.argument() {
            Some(hint) => format!("/{} {hint}", self.name),
            None => format!("/{}", self.name),
        }
    }

    /// Run it if it needs no agent; `None` when it does.
    pub fn run_free(&self, argument: &str, front: Front, commands: &Commands) -> Option<Outcome> {
        match &self.run {
            Run::Free(f) => Some(f(&Call {
                argument,
                front,
                commands,
            })),
            Run::Now(_) | Run::Task(_) => None,
        }
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("name", &self.name)
            .field("argument", &self.argument)
            .field("fronts", &self.fronts)
            .finish_non_exhaustive()
    }
}

/// Two commands are the same when they have the same name and offer.
impl PartialEq for Command {
    fn eq(&self, other: &Command) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.argument == other.argument
            && self.fronts == other.fronts
            && self.one_shot == other.one_shot
    }
}

impl Eq for Command {}

/// A table of commands: the built-in ones, then any an agent added. Cheap
/// to clone (a front end keeps a copy for what works during a turn).
#[derive(Debug, Clone)]
pub struct Commands {
    entries: Arc<Vec<Command>>,
}

static BUILTIN: LazyLock<Commands> = LazyLock::new(|| Commands {
    entries: Arc::new(builtin::table()),
});

impl Commands {
    /// The built-in commands.
    pub fn builtin() -> Commands {
        BUILTIN.clone()
    }

    /// Add a command after the others; one of the same name is replaced
    /// (a built-in's place in `/help` is kept).
    pub fn add(&mut self, command: Command) {
        let entries = Arc::make_mut(&mut self.entries);
        match entries.iter_mut().find(|c| c.name == command.name) {
            Some(old) => *old = command,
            None => entries.push(command),
        }
    }

    /// Every command, in the order `/help` lists them.
    pub fn all(&self) -> &[Command] {
        &self.entries
    }

    /// The commands a front end offers.
    pub fn for_front(&self, front: Front) -> impl Iterator<Item = &Command> {
        self.entries.iter().filter(move |c| c.offered_by(front))
    }

    /// Parse `line` for `front`. `/compact focus on tests` gives `compact`
    /// with argument `focus on tests`. A line whose first word holds a
    /// second `/` is not a command, so a question may start with a path
    /// like `/etc/hosts`.
    pub fn parse<'a>(&'a self, line: &'a str, front: Front) -> Parsed<'a> {
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
        match self.for_front(front).find(|c| c.name == name) {
            Some(command) => Parsed::Command { command, argument },
            None => Parsed::Unknown(name),
        }
    }

    /// The `/help` text for a front end: one `/name [arg]  description`
    /// line each.
    pub fn help(&self, front: Front) -> String {
        let rows: Vec<(String, &str)> = self
            .for_front(front)
            .map(|c| (c.usage(), c.description()))
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

    /// The reply to a line that names no command of `front`.
    pub fn unknown(&self, name: &str, front: Front) -> Outcome {
        builtin::unknown(self, name, front)
    }
}

impl Default for Commands {
    fn default() -> Commands {
        Commands::builtin()
    }
}

/// The built-in commands a front end offers.
pub fn for_front(front: Front) -> impl Iterator<Item = &'static Command> {
    BUILTIN.entries.iter().filter(move |c| c.offered_by(front))
}

/// Parse `line` against the built-in commands (see [`Commands::parse`]).
pub fn parse(line: &str, front: Front) -> Parsed<'_> {
    BUILTIN.parse(line, front)
}

/// The `/help` text of the built-in commands for a front end.
pub fn help(front: Front) -> String {
    BUILTIN.help(front)
}

/// A command line typed by the user, split into its command and argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A known command offered by this front end.
    Command {
        /// The command the line names.
        command: &'a Command,
        /// The rest of the line, trimmed; empty when there is none.
        argument: &'a str,
    },
    /// Starts with `/` but names no command of this front end.
    Unknown(&'a str),
    /// Not a command: a question.
    NotCommand,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_slice_is_new_compact_and_the_checkpoint_commands_mcp_and_permissions() {
        let names: Vec<_> = for_front(Front::Editor).map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "new",
                "compact",
                "undo",
                "redo",
                "diff",
                "mcp",
                "hooks",
                "permissions"
            ]
        );
    }

    #[test]
    fn terminal_fronts_offer_the_required_commands() {
        for front in [Front::Repl, Front::Window] {
            let names: Vec<_> = for_front(front).map(|c| c.name()).collect();
            for want in [
                "new", "compact", "mcp", "copy", "sessions", "resume", "model", "help", "quit",
            ] {
                assert!(names.contains(&want), "{front:?} lacks /{want}");
            }
        }
    }

    #[test]
    fn parses_commands_and_arguments() {
        match parse("/compact  focus on the parser ", Front::Repl) {
            Parsed::Command { command, argument } => {
                assert_eq!(command.name(), "compact");
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

    #[test]
    fn an_added_command_is_parsed_listed_and_run_without_an_agent() {
        let mut table = Commands::builtin();
        let review = Command::new(
            "review",
            "Review the staged changes",
            Run::Free(Arc::new(|call: &Call<'_>| {
                Outcome::Ask(format!("Review {}", call.argument().unwrap_or("all")))
            })),
        )
        .with_argument(Argument::Optional("[path]".into()));
        table.add(review);
        assert!(table.help(Front::Editor).contains("/review [path]"));
        assert!(
            !help(Front::Editor).contains("/review"),
            "built-ins unchanged"
        );
        let Parsed::Command { command, argument } = table.parse("/review src", Front::Window)
        else {
            panic!("not parsed");
        };
        assert!(!command.needs_agent());
        assert_eq!(
            command.run_free(argument, Front::Window, &table),
            Some(Outcome::Ask("Review src".into()))
        );
    }

    #[test]
    fn an_unknown_name_points_at_what_the_front_offers() {
        let table = Commands::builtin();
        assert_eq!(
            table.unknown("zap", Front::Repl),
            Outcome::Error("unknown command /zap; /help lists the commands".into())
        );
        assert_eq!(
            table.unknown("copy", Front::Editor),
            Outcome::Error(
                "unknown command /copy; the commands here are /new, /compact, /undo, /redo, /diff, /mcp, /hooks, \
                 /permissions"
                    .into()
            )
        );
    }
}
