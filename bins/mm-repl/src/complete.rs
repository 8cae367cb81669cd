//! Tab completion in the REPL: slash commands from the shared table at the
//! start of the line, and `@mentions`: the project's files matched fuzzily
//! (`@amain` finds `src/agent/main.rs`), or name by name from a folder.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use mm_agent::commands::{Commands, Front};
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Context, Helper, KeyCode, KeyEvent, Modifiers};

/// The REPL's rustyline helper.
pub struct MmHelper {
    pub cwd: PathBuf,
    /// The agent's commands, for `/` completion.
    pub commands: Commands,
}

/// Completions for `line` up to `pos`: where the replaced word starts and
/// the candidates (display, replacement).
pub fn candidates(
    line: &str,
    pos: usize,
    cwd: &Path,
    commands: &Commands,
) -> (usize, Vec<(String, String)>) {
    let head = &line[..pos];
    let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &head[start..];
    if start == 0 && word.starts_with('/') && !word[1..].contains('/') {
        let typed = &word[1..];
        let found = commands
            .for_front(Front::Repl)
            .filter(|c| c.name().starts_with(typed))
            .map(|c| {
                let name = format!("/{}", c.name());
                let replacement = if c.argument().is_some() {
                    format!("{name} ")
                } else {
                    name.clone()
                };
                (name, replacement)
            })
            .collect();
        return (0, found);
    }
    if let Some(path) = word.strip_prefix('@') {
        return (start, mention_candidates(path, cwd));
    }
    (pos, Vec::new())
}

/// Most candidates Tab lists for an `@` mention.
const MAX_MENTIONS: usize = 50;

/// `@partial`: the project's files that hold its letters in order (fuzzy,
/// as the window's `@` list; .gitignore respected), best first. A path
/// written from a folder (`@/…`, `@./…`, `@../…`, `@~…`) or one no file
/// matches completes name by name from its folder instead.
fn mention_candidates(typed: &str, cwd: &Path) -> Vec<(String, String)> {
    if !typed.starts_with(['/', '.', '~']) {
        let files = mm_ui::files::project_files(cwd);
        let found: Vec<(String, String)> = mm_ui::files::fuzzy(typed, &files, MAX_MENTIONS)
            .into_iter()
            .map(|f| {
                let replacement = format!("@{}", f.replace(' ', "\\ "));
                (f, replacement)
            })
            .collect();
        if !found.is_empty() {
            return found;
        }
    }
    path_candidates(typed, cwd)
}

fn path_candidates(typed: &str, cwd: &Path) -> Vec<(String, String)> {
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let base = if dir.starts_with('/') {
        PathBuf::from(dir)
    } else {
        cwd.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut found: Vec<(String, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            // The line editor writes a candidate as it is: a name holding
            // an escape sequence is not offered.
            if !mm_ui::sanitize::is_clean(&name) || name.contains(['\n', '\t']) {
                return None;
            }
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            let shown = if is_dir { format!("{name}/") } else { name };
            let escaped = shown.replace(' ', "\\ ");
            Some((shown, format!("@{dir}{escaped}")))
        })
        .collect();
    found.sort();
    found
}

impl Completer for MmHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, found) = candidates(line, pos, &self.cwd, &self.commands);
        Ok((
            start,
            found
                .into_iter()
                .map(|(display, replacement)| Pair {
                    display,
                    replacement,
                })
                .collect(),
        ))
    }
}

impl Hinter for MmHelper {
    type Hint = String;
}

impl Highlighter for MmHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

/// `\` at the end of the input, then Enter: not finished, the input goes on
/// on a new line (the backslash is dropped on sending: [`joined`]).
impl Validator for MmHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for MmHelper {}

/// Alt-Enter (Esc then Enter, as terminals send it) inserts a line break;
/// `\` then Enter is the validator's ([`MmHelper`]).
pub fn bind_multiline<H: Helper, I: rustyline::history::History>(ed: &mut rustyline::Editor<H, I>) {
    ed.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
}

/// Shift-Tab at the prompt: the REPL switches to the next mode and
/// prompts again with the line as it was. The key ends the line edit (as
/// an interrupt) and leaves the line here.
#[derive(Clone, Default)]
pub struct ModeKey(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl ModeKey {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the last interrupt was Shift-Tab (the line stays for
    /// [`ModeKey::take_line`]).
    pub fn pressed(&self) -> bool {
        self.slot().is_some()
    }

    /// The line Shift-Tab left, once.
    pub fn take_line(&self) -> Option<String> {
        self.slot().take()
    }
}

impl rustyline::ConditionalEventHandler for ModeKey {
    fn handle(
        &self,
        _evt: &rustyline::Event,
        _n: rustyline::RepeatCount,
        _positive: bool,
        ctx: &rustyline::EventContext<'_>,
    ) -> Option<Cmd> {
        *self.slot() = Some(ctx.line().to_owned());
        Some(Cmd::Interrupt)
    }
}

/// Binds Shift-Tab to [`ModeKey`].
pub fn bind_mode_key<H: Helper, I: rustyline::history::History>(
    ed: &mut rustyline::Editor<H, I>,
    key: ModeKey,
) {
    ed.bind_sequence(
        KeyEvent(KeyCode::BackTab, Modifiers::NONE),
        rustyline::EventHandler::Conditional(Box::new(key)),
    );
}

/// Ctrl-C at the prompt: it ends the line edit as an interrupt (the line
/// is cleared) and notes whether the line was empty, for the second
/// Ctrl-C that quits.
#[derive(Clone, Default)]
pub struct InterruptKey(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl InterruptKey {
    /// Whether the last Ctrl-C came on an empty line, once.
    pub fn take_was_empty(&self) -> bool {
        self.0.swap(false, std::sync::atomic::Ordering::SeqCst)
    }
}

impl rustyline::ConditionalEventHandler for InterruptKey {
    fn handle(
        &self,
        _evt: &rustyline::Event,
        _n: rustyline::RepeatCount,
        _positive: bool,
        ctx: &rustyline::EventContext<'_>,
    ) -> Option<Cmd> {
        self.0
            .store(ctx.line().is_empty(), std::sync::atomic::Ordering::SeqCst);
        Some(Cmd::Interrupt)
    }
}

/// Binds Ctrl-C to [`InterruptKey`].
pub fn bind_interrupt_key<H: Helper, I: rustyline::history::History>(
    ed: &mut rustyline::Editor<H, I>,
    key: InterruptKey,
) {
    ed.bind_sequence(
        KeyEvent::ctrl('C'),
        rustyline::EventHandler::Conditional(Box::new(key)),
    );
}

/// The question as typed: each `\` that ended a line (to continue it) is
/// dropped, the line break stays.
pub fn joined(input: &str) -> String {
    input.replace("\\\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_continued_with_a_backslash_keeps_only_the_break() {
        assert_eq!(joined("one\\\ntwo\\\nthree"), "one\ntwo\nthree");
        // A backslash elsewhere is the user's.
        assert_eq!(joined("C:\\path \\n"), "C:\\path \\n");
    }

    #[test]
    fn completes_commands_at_the_start_only() {
        let dir = tempfile::tempdir().unwrap();
        let (start, found) = candidates("/co", 3, dir.path(), &Commands::builtin());
        assert_eq!(start, 0);
        assert_eq!(
            found,
            [
                ("/compact".to_string(), "/compact ".to_string()),
                ("/copy".to_string(), "/copy".to_string())
            ]
        );
        let (_, found) = candidates("say /co", 7, dir.path(), &Commands::builtin());
        assert!(found.is_empty());
    }

    #[test]
    fn completes_at_paths_fuzzily_and_from_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("my notes.md"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join("build/main.rs"), "").unwrap();
        let c = |line: &str| candidates(line, line.len(), dir.path(), &Commands::builtin());
        let (start, found) = c("look at @smain");
        assert_eq!(start, 8);
        assert_eq!(
            found,
            [("src/main.rs".to_string(), "@src/main.rs".to_string())]
        );
        assert_eq!(
            c("@mynot").1,
            [("my notes.md".to_string(), "@my\\ notes.md".to_string())]
        );
        let (_, found) = c("@");
        assert_eq!(found.len(), 2, "no hidden or ignored files: {found:?}");
        // From a folder: name by name, folders marked.
        assert_eq!(c("@./s").1, [("src/".to_string(), "@./src/".to_string())]);
        // Nor a name that would write an escape sequence on the terminal.
        std::fs::write(dir.path().join("x\x1b]52;c;aGk=\x07"), "").unwrap();
        std::fs::write(dir.path().join("x\ny"), "").unwrap();
        assert!(c("@x").1.is_empty(), "{:?}", c("@x").1);
        assert!(c("@./x").1.is_empty(), "{:?}", c("@./x").1);
    }
}
