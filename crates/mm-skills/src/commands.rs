//! Custom slash commands: Markdown prompt files the user writes, found in a
//! folder the way skills are, and the expansion of their placeholders.
//!
//! `<dir>/review.md` is `/review`; `<dir>/git/commit.md` is `/git:commit`.
//! A file may open with front matter (`description`, `argument-hint`); the
//! rest is the prompt. In the prompt `$ARGUMENTS` is the whole argument
//! text and `$1` … `$9` its shell-like words.
//!
//! Like skills, nothing is read outside the folder: hidden names are
//! skipped, and a symlink whose target leaves the folder is not followed.
//! Reading is bounded (file size, depth, number of files), since a
//! project's folder comes with the repository.

use std::fs;
use std::path::{Path, PathBuf};

use crate::split_front_matter;

/// Files larger than this are not loaded: a prompt is a page, not a book.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Folders deeper than this under the commands folder are not read.
pub const MAX_DEPTH: usize = 8;
/// At most this many files are looked at in one folder tree.
pub const MAX_FILES: usize = 1000;

/// One command file, loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFile {
    /// The name without the slash: `review`, `git:commit`.
    pub name: String,
    /// The file (symlinks resolved, inside the folder).
    pub path: PathBuf,
    /// One line for the command list: the front matter's `description`,
    /// else the prompt's first line that is not a heading.
    pub description: String,
    /// The front matter's `argument-hint` (`[file]`), when given.
    pub argument_hint: Option<String>,
    /// The prompt: the text after the front matter, trimmed.
    pub body: String,
}

impl CommandFile {
    /// True when the prompt has a place for arguments (`$ARGUMENTS`, `$1`…).
    pub fn takes_arguments(&self) -> bool {
        has_placeholder(&self.body)
    }

    /// The prompt with `arguments` put in its placeholders (see [`expand`]).
    pub fn expand(&self, arguments: &str) -> String {
        expand(&self.body, arguments)
    }
}

/// What was found in a commands folder: the commands, by name, and why
/// each file that could not be loaded was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The loaded commands, sorted by name.
    pub commands: Vec<CommandFile>,
    /// The files (or folders) left out, with the reason.
    pub problems: Vec<Problem>,
}

/// A file or folder of a commands folder that was not loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file or folder, as found.
    pub path: PathBuf,
    /// Why: `is not UTF-8 text`.
    pub why: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.why)
    }
}

/// Every command file under `dir`. A missing folder has none and no
/// problem: commands are optional.
pub fn discover(dir: &Path) -> Found {
    let mut found = Found::default();
    let Ok(root) = fs::canonicalize(dir) else {
        return found;
    };
    if !root.is_dir() {
        return found;
    }
    let mut walk = Walk {
        root: &root,
        files: 0,
        found: &mut found,
        visited: vec![root.clone()],
    };
    walk.folder(&root, &[], 0);
    found.commands.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

struct Walk<'a> {
    root: &'a Path,
    files: usize,
    found: &'a mut Found,
    /// Folders already read (their real paths), so a link cannot loop.
    visited: Vec<PathBuf>,
}

impl Walk<'_> {
    fn folder(&mut self, dir: &Path, prefix: &[String], depth: usize) {
        let Ok(entries) = fs::read_dir(dir) else {
            self.problem(dir, "cannot be read");
            return;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            // Links are followed only while they stay inside the folder.
            let Ok(real) = fs::canonicalize(&path) else {
                continue;
            };
            if !real.starts_with(self.root) {
                self.problem(&path, "links outside the commands folder; not read");
                continue;
            }
            if real.is_dir() {
                if depth + 1 >= MAX_DEPTH {
                    self.problem(
                        &path,
                        &format!("is deeper than {MAX_DEPTH} folders; not read"),
                    );
                } else if !self.visited.contains(&real) {
                    self.visited.push(real.clone());
                    let mut prefix = prefix.to_vec();
                    prefix.push(name);
                    self.folder(&real, &prefix, depth + 1);
                }
                continue;
            }
            let Some(stem) = name.strip_suffix(".md") else {
                continue;
            };
            if !real.is_file() {
                continue;
            }
            self.files += 1;
            if self.files > MAX_FILES {
                if self.files == MAX_FILES + 1 {
                    self.problem(
                        self.root,
                        &format!("holds more than {MAX_FILES} files; the rest are not loaded"),
                    );
                }
                return;
            }
            let mut parts = prefix.to_vec();
            parts.push(stem.to_string());
            let command_name = parts.join(":");
            match load(&real, command_name) {
                Ok(command) => self.found.commands.push(command),
                Err(why) => self.problem(&path, &why),
            }
        }
    }

    fn problem(&mut self, path: &Path, why: &str) {
        self.found.problems.push(Problem {
            path: path.to_path_buf(),
            why: why.to_string(),
        });
    }
}

/// Load the file at `path` (already resolved) as command `name`.
fn load(path: &Path, name: String) -> Result<CommandFile, String> {
    if name.is_empty() || name.split(':').any(str::is_empty) {
        return Err("has no name".into());
    }
    if name.chars().any(char::is_whitespace) {
        return Err(format!(
            "the command name \"{name}\" holds a space; rename the file"
        ));
    }
    let size = fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| e.to_string())?;
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "is {size} bytes; a command file may hold at most {MAX_FILE_BYTES}"
        ));
    }
    let bytes = fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())?;
    Ok(parse(name, path.to_path_buf(), &text))
}

/// A command from the text of its file.
pub fn parse(name: String, path: PathBuf, text: &str) -> CommandFile {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text);
    let field = |key: &str| front.and_then(|f| front_field(f, key));
    let body = body.trim().to_string();
    let description = field("description")
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| {
            body.lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'))
                .unwrap_or("")
                .to_string()
        });
    let argument_hint = field("argument-hint").filter(|h| !h.is_empty());
    CommandFile {
        name,
        path,
        description,
        argument_hint,
        body,
    }
}

/// The string value of `key` in the front matter. YAML first; when the
/// YAML is broken or the value is not a string (peers write
/// `argument-hint: [file] [line]`, which YAML reads as a list or refuses),
/// the text after `key:` on its line, unquoted.
fn front_field(front: &str, key: &str) -> Option<String> {
    if let Ok(value) = serde_norway::from_str::<serde_norway::Value>(front)
        && let Some(text) = value.get(key).and_then(|v| v.as_str())
    {
        return Some(text.trim().to_string());
    }
    let raw = front.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.trim_start();
        rest.strip_prefix(':').map(str::trim)
    })?;
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| raw.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
        .unwrap_or(raw);
    Some(unquoted.trim().to_string())
}

/// The shell-like words of an argument text: `a "b c"` is `a`, `b c`.
/// Unbalanced quotes fall back to splitting at whitespace.
pub fn words(arguments: &str) -> Vec<String> {
    shlex::split(arguments)
        .unwrap_or_else(|| arguments.split_whitespace().map(str::to_string).collect())
}

/// True when `body` holds `$ARGUMENTS` or one of `$1` … `$9`.
pub fn has_placeholder(body: &str) -> bool {
    let bytes = body.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        b == b'$'
            && (body[i + 1..].starts_with("ARGUMENTS")
                || matches!(bytes.get(i + 1), Some(b'1'..=b'9')))
    })
}

/// `body` with `$ARGUMENTS` replaced by the whole (trimmed) argument text
/// and `$1` … `$9` by its words (empty when there are fewer). A body with
/// no placeholder gets the arguments after a blank line, so what the user
/// typed is never lost.
pub fn expand(body: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    if !has_placeholder(body) {
        return if arguments.is_empty() {
            body.to_string()
        } else {
            format!("{}\n\n{arguments}", body.trim_end())
        };
    }
    let words = words(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            rest = tail;
        } else if let Some(d @ b'1'..=b'9') = after.as_bytes().first().copied() {
            let n = usize::from(d - b'0');
            out.push_str(words.get(n - 1).map_or("", String::as_str));
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(problems: &[Problem]) -> String {
        problems
            .iter()
            .map(Problem::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn files_and_subfolders_give_names_with_colons() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("review.md"), "Review the code.");
        write(&dir.path().join("git/commit.md"), "Write a commit message.");
        write(&dir.path().join("git/deep/log.md"), "Show the log.");
        write(&dir.path().join("notes.txt"), "not a command");
        write(&dir.path().join(".draft.md"), "hidden");
        write(&dir.path().join(".hidden/x.md"), "hidden folder");
        let found = discover(dir.path());
        let names: Vec<_> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:commit", "git:deep:log", "review"]);
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        assert_eq!(found.commands[2].body, "Review the code.");
        assert_eq!(found.commands[2].description, "Review the code.");
    }

    #[test]
    fn a_missing_folder_has_no_commands_and_no_problem() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(discover(&dir.path().join("nope")), Found::default());
    }

    #[test]
    fn front_matter_gives_description_and_hint() {
        let c = parse(
            "review".into(),
            "r.md".into(),
            "---\ndescription: Review a file\nargument-hint: <path>\nmodel: x\n---\n\n# Review\n\nReview $1 carefully.\n",
        );
        assert_eq!(c.description, "Review a file");
        assert_eq!(c.argument_hint.as_deref(), Some("<path>"));
        assert_eq!(c.body, "# Review\n\nReview $1 carefully.");
        assert!(c.takes_arguments());
        // Without front matter: the first line that is not a heading.
        let c = parse("x".into(), "x.md".into(), "# Title\n\nDo the thing.\nMore.");
        assert_eq!(c.description, "Do the thing.");
        assert_eq!(c.argument_hint, None);
        assert!(!c.takes_arguments());
    }

    #[test]
    fn a_hint_yaml_reads_as_a_list_is_kept_as_written() {
        let c = parse(
            "fix".into(),
            "f.md".into(),
            "---\ndescription: \"Fix an issue\"\nargument-hint: [issue] [priority]\n---\nFix #$1.",
        );
        assert_eq!(c.description, "Fix an issue");
        assert_eq!(c.argument_hint.as_deref(), Some("[issue] [priority]"));
        let c = parse(
            "fix".into(),
            "f.md".into(),
            "---\nargument-hint: [issue]\n---\nFix #$1.",
        );
        assert_eq!(c.argument_hint.as_deref(), Some("[issue]"));
    }

    #[test]
    fn placeholders_take_the_whole_text_and_shell_like_words() {
        let body = "Args: $ARGUMENTS | one: $1 | two: $2 | nine: $9 | cost: $5.00? no: $x $ | $10";
        assert_eq!(
            expand(body, r#"  src/lib.rs "two words" 'three' "#),
            "Args: src/lib.rs \"two words\" 'three' | one: src/lib.rs | two: two words | nine:  | cost: .00? no: $x $ | src/lib.rs0"
        );
        // Unbalanced quotes: plain whitespace words.
        assert_eq!(expand("$1/$2", "it's fine"), "it's/fine");
        assert_eq!(expand("$ARGUMENTS.", ""), ".");
    }

    #[test]
    fn arguments_to_a_prompt_without_placeholders_follow_it() {
        assert_eq!(
            expand("Review the diff.\n", "focus on errors"),
            "Review the diff.\n\nfocus on errors"
        );
        assert_eq!(expand("Review the diff.", "  "), "Review the diff.");
    }

    #[test]
    fn files_that_cannot_be_loaded_are_named_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("ok.md"), "fine");
        fs::write(dir.path().join("bin.md"), [0xff, 0xfe, 0x00]).unwrap();
        write(&dir.path().join("two words.md"), "x");
        let big = "x".repeat(MAX_FILE_BYTES as usize + 1);
        write(&dir.path().join("big.md"), &big);
        let found = discover(dir.path());
        let names: Vec<_> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["ok"]);
        let root = fs::canonicalize(dir.path()).unwrap();
        let problems = text(&found.problems);
        assert!(
            problems.contains(&format!(
                "{}: is not UTF-8 text",
                root.join("bin.md").display()
            )),
            "{problems}"
        );
        assert!(
            problems.contains("two words.md: the command name \"two words\" holds a space"),
            "{problems}"
        );
        assert!(
            problems.contains(&format!("big.md: is {} bytes", MAX_FILE_BYTES + 1)),
            "{problems}"
        );
    }

    #[test]
    fn links_leaving_the_folder_are_not_followed_and_loops_end() {
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("secret.md"), "TOP SECRET");
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("leak.md"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("away")).unwrap();
        write(&dir.path().join("real.md"), "Real.");
        std::os::unix::fs::symlink(dir.path().join("real.md"), dir.path().join("alias.md"))
            .unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("again")).unwrap();
        let found = discover(dir.path());
        let names: Vec<_> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["alias", "real"]);
        assert!(found.commands.iter().all(|c| !c.body.contains("SECRET")));
        let problems = text(&found.problems);
        assert!(
            problems.contains("leak.md: links outside the commands folder"),
            "{problems}"
        );
        assert!(
            problems.contains("away: links outside the commands folder"),
            "{problems}"
        );
    }

    #[test]
    fn the_number_of_files_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_FILES + 5 {
            fs::write(dir.path().join(format!("c{i:04}.md")), "x").unwrap();
        }
        let found = discover(dir.path());
        assert_eq!(found.commands.len(), MAX_FILES);
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(found.problems[0].to_string().ends_with(&format!(
            "holds more than {MAX_FILES} files; the rest are not loaded"
        )));
    }
}
