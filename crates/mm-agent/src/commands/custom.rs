//! Custom commands: the user's `commands/` folder in mm's user folder and
//! the project's `.mm/commands/`, loaded into an agent's table.
//!
//! Each file becomes a command whose handler writes its prompt, with the
//! arguments put in, as the user's question ([`Outcome::Ask`]); the turn
//! then expands `@path` mentions like typed ones. Nothing about the
//! commands is sent to the model until one is used. A project may add
//! commands (they are only text the user chooses to send) but never
//! replace a built-in or a user command: such a file is refused, with a
//! warning that names it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mm_skills::commands::{self as files, CommandFile};

use super::{Argument, Call, Command, Commands, Outcome, Run};

/// The folder of the user's commands in mm's user folder.
pub fn user_folder(user_dir: &Path) -> PathBuf {
    user_dir.join("commands")
}

/// The folder of a project's commands under its working directory.
pub fn project_folder(cwd: &Path) -> PathBuf {
    cwd.join(".mm").join("commands")
}

/// Where a custom command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The user's folder.
    User,
    /// The project's `.mm/commands`.
    Project,
}

impl Origin {
    fn word(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Project => "project",
        }
    }
}

/// Add the user's and then the project's commands to `table`. Returns a
/// warning for each file that was not loaded (a clash, or a file that
/// cannot be read), naming the file.
pub fn load(table: &mut Commands, user_dir: &Path, cwd: &Path) -> Vec<String> {
    let mut warnings = Vec::new();
    let builtin: Vec<String> = table.all().iter().map(|c| c.name().to_string()).collect();
    let mut added: Vec<(String, PathBuf, Origin)> = Vec::new();
    for (origin, dir) in [
        (Origin::User, user_folder(user_dir)),
        (Origin::Project, project_folder(cwd)),
    ] {
        let found = files::discover(&dir);
        for problem in found.problems {
            warnings.push(format!(
                "command file {} not loaded: {}",
                problem.path.display(),
                problem.why
            ));
        }
        for file in found.commands {
            let name = file.name.clone();
            if builtin.contains(&name) {
                warnings.push(format!(
                    "command file {} not loaded: /{name} is a built-in command; rename the file",
                    file.path.display()
                ));
                continue;
            }
            if let Some((_, first, by)) = added.iter().find(|(n, _, _)| *n == name) {
                warnings.push(format!(
                    "command file {} not loaded: /{name} is already a {} command ({})",
                    file.path.display(),
                    by.word(),
                    first.display()
                ));
                continue;
            }
            added.push((name, file.path.clone(), origin));
            table.add(command(file, origin));
        }
    }
    warnings
}

/// The table row of a command file.
pub fn command(file: CommandFile, origin: Origin) -> Command {
    let description = if file.description.is_empty() {
        format!("({} command)", origin.word())
    } else {
        format!("{} ({})", file.description, origin.word())
    };
    // A prompt with placeholders waits for its arguments in a picker; one
    // without runs at once (arguments typed anyway follow the prompt).
    let argument = match (&file.argument_hint, file.takes_arguments()) {
        (Some(hint), true) => Argument::Required(hint.clone().into()),
        (Some(hint), false) => Argument::Optional(hint.clone().into()),
        (None, true) => Argument::Required("[arguments]".into()),
        (None, false) => Argument::None,
    };
    let name = file.name.clone();
    let file = Arc::new(file);
    let run = Run::Free(Arc::new(move |call: &Call<'_>| {
        Outcome::Ask(file.expand(call.argument))
    }));
    // Offered by every front end, and run by `mm-repl -p "/name args"`.
    Command::new(name, description, run)
        .with_argument(argument)
        .in_one_shot()
}
