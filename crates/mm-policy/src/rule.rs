//! One permission rule: `TOOL` or `TOOL(PATTERN)`.
//!
//! `TOOL` is a glob over tool names, matched without regard to case (so
//! `Bash(...)` written for another agent still means `bash`, and
//! `mcp__*__delete*` reaches MCP tools). `PATTERN` is a glob over the
//! call's subject: for `bash` each simple command of the command line, for
//! the file tools the path. A command pattern that ends in ` *` also
//! matches the command without arguments (`git status *` matches
//! `git status`), and `git status:*` is read as `git status *`. A path
//! pattern without a `/` matches the file name at any depth (`.env`
//! matches `config/.env`), as in `.gitignore`; one with a `/` is anchored
//! at the working directory, or at the root when it starts with `/`.

use std::fmt;

use globset::{GlobBuilder, GlobMatcher};

/// Why a rule's text is not a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Nothing but spaces.
    #[error("a rule is a tool name, optionally with a pattern: TOOL or TOOL(PATTERN)")]
    Empty,
    /// `bash(git status` or `bash)x(`.
    #[error("\"{0}\": expected TOOL(PATTERN) with \")\" at the end")]
    Unclosed(String),
    /// `(x)`.
    #[error("\"{0}\": the tool name is missing before \"(\"")]
    NoTool(String),
    /// `bash()`.
    #[error("\"{0}\": the pattern between the parentheses is empty")]
    EmptyPattern(String),
    /// `ba sh`.
    #[error("\"{0}\": a tool name has no spaces")]
    SpaceInTool(String),
    /// A glob that does not compile (`[a-`).
    #[error("\"{rule}\": {problem}")]
    Glob {
        /// The rule as written.
        rule: String,
        /// globset's words for what is wrong.
        problem: String,
    },
}

/// A compiled rule; [`fmt::Display`] gives it back as written.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: GlobMatcher,
    pattern: Option<Pattern>,
}

/// The argument pattern, compiled for each kind of subject.
#[derive(Debug, Clone)]
struct Pattern {
    /// Over one simple command: `*` crosses `/`.
    command: Vec<GlobMatcher>,
    /// Over a path: `*` stays within one folder, `**` crosses folders.
    path: Vec<GlobMatcher>,
}

impl Rule {
    /// Parses and compiles `text`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(RuleError::Empty);
        }
        let (tool, pattern) = match trimmed.find('(') {
            None if trimmed.contains(')') => return Err(RuleError::Unclosed(trimmed.to_owned())),
            None => (trimmed, None),
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(RuleError::Unclosed(trimmed.to_owned()));
                };
                (trimmed[..open].trim_end(), Some(inner))
            }
        };
        if tool.is_empty() {
            return Err(RuleError::NoTool(trimmed.to_owned()));
        }
        if tool.contains(char::is_whitespace) {
            return Err(RuleError::SpaceInTool(trimmed.to_owned()));
        }
        let glob_error = |e: globset::Error| RuleError::Glob {
            rule: trimmed.to_owned(),
            problem: e.kind().to_string(),
        };
        let tool = GlobBuilder::new(tool)
            .case_insensitive(true)
            .build()
            .map_err(glob_error)?
            .compile_matcher();
        let pattern = match pattern {
            None => None,
            Some(p) if p.trim().is_empty() => {
                return Err(RuleError::EmptyPattern(trimmed.to_owned()));
            }
            Some(p) => Some(Pattern::compile(p.trim()).map_err(glob_error)?),
        };
        Ok(Rule {
            text: trimmed.to_owned(),
            tool,
            pattern,
        })
    }

    /// The rule for "allow for the session" of a command prefix:
    /// `bash(git status *)`.
    pub fn command_prefix(tool: &str, prefix: &str) -> Result<Rule, RuleError> {
        Rule::parse(&format!("{tool}({} *)", escape(prefix)))
    }

    /// Whether the rule names this tool.
    pub fn names(&self, tool: &str) -> bool {
        self.tool.is_match(tool)
    }

    /// Whether the rule has no pattern (it covers every call of its tools).
    pub fn is_bare(&self) -> bool {
        self.pattern.is_none()
    }

    /// Whether the pattern matches one simple command; a bare rule matches
    /// every command.
    pub fn matches_command(&self, command: &str) -> bool {
        match &self.pattern {
            None => true,
            Some(p) => p.command.iter().any(|g| g.is_match(command)),
        }
    }

    /// Whether the pattern matches a path, given relative to the working
    /// directory when it is inside it, and absolute.
    pub fn matches_path(&self, relative: Option<&str>, absolute: &str) -> bool {
        match &self.pattern {
            None => true,
            Some(p) => p
                .path
                .iter()
                .any(|g| relative.is_some_and(|r| g.is_match(r)) || g.is_match(absolute)),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Pattern {
    fn compile(pattern: &str) -> Result<Pattern, globset::Error> {
        let pattern = match pattern.strip_suffix(":*") {
            Some(prefix) => format!("{prefix} *"),
            None => pattern.to_owned(),
        };
        let glob = |p: &str, literal_separator: bool| {
            GlobBuilder::new(p)
                .literal_separator(literal_separator)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
        };
        let mut command = vec![glob(&pattern, false)?];
        if let Some(bare) = pattern.strip_suffix(" *") {
            command.push(glob(bare, false)?);
        }
        let path_pattern = pattern.strip_prefix("./").unwrap_or(&pattern);
        let mut path = vec![glob(path_pattern, true)?];
        if !path_pattern.contains('/') {
            path.push(glob(&format!("**/{path_pattern}"), true)?);
        }
        Ok(Pattern { command, path })
    }
}

/// `text` with the glob's special characters escaped, so that a recorded
/// prefix matches only itself.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_of_a_rule() {
        let r = Rule::parse("  bash(git status*) ").unwrap();
        assert_eq!(r.to_string(), "bash(git status*)");
        assert!(r.names("bash") && r.names("BASH") && !r.names("bash2"));
        assert!(Rule::parse("read_file").unwrap().is_bare());
        assert_eq!(Rule::parse(" ").unwrap_err(), RuleError::Empty);
        for bad in ["bash(git", "bash)", "(x)", "bash()", "ba sh", "bash([a-)"] {
            assert!(Rule::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Rule::parse("bash(git").unwrap_err().to_string(),
            "\"bash(git\": expected TOOL(PATTERN) with \")\" at the end"
        );
    }

    #[test]
    fn tool_globs_reach_mcp_names() {
        let r = Rule::parse("mcp__*__delete*").unwrap();
        assert!(r.names("mcp__github__delete_repo"));
        assert!(!r.names("mcp__github__create_issue"));
        assert!(!r.names("bash"));
    }

    #[test]
    fn command_patterns() {
        let r = Rule::parse("bash(git status*)").unwrap();
        assert!(r.matches_command("git status"));
        assert!(r.matches_command("git status --short src/a.rs"));
        assert!(!r.matches_command("git push"));
        let r = Rule::parse("bash(git diff *)").unwrap();
        assert!(r.matches_command("git diff"));
        assert!(r.matches_command("git diff HEAD~1 -- a/b"));
        assert!(!r.matches_command("git difftool"));
        let r = Rule::parse("Bash(npm run:*)").unwrap();
        assert!(r.names("bash"));
        assert!(r.matches_command("npm run"));
        assert!(r.matches_command("npm run build"));
        assert!(!r.matches_command("npm install"));
        let r = Rule::parse("bash(rm -rf *)").unwrap();
        assert!(r.matches_command("rm -rf /tmp/x y"));
        assert!(r.matches_command("rm -rf"));
        assert!(!r.matches_command("rm -r x"));
    }

    #[test]
    fn path_patterns() {
        let r = Rule::parse("write_file(.env)").unwrap();
        assert!(r.matches_path(Some(".env"), "/p/.env"));
        assert!(r.matches_path(Some("config/.env"), "/p/config/.env"));
        assert!(r.matches_path(None, "/elsewhere/.env"));
        assert!(!r.matches_path(Some(".envrc"), "/p/.envrc"));
        let r = Rule::parse("edit_file(src/*.rs)").unwrap();
        assert!(r.matches_path(Some("src/main.rs"), "/p/src/main.rs"));
        assert!(!r.matches_path(Some("src/a/b.rs"), "/p/src/a/b.rs"));
        assert!(!r.matches_path(Some("lib/src/main.rs"), "/p/lib/src/main.rs"));
        let r = Rule::parse("edit_file(src/**)").unwrap();
        assert!(r.matches_path(Some("src/a/b.rs"), "/p/src/a/b.rs"));
        let r = Rule::parse("write_file(/etc/**)").unwrap();
        assert!(r.matches_path(None, "/etc/passwd"));
        assert!(!r.matches_path(Some("etc/passwd"), "/p/etc/passwd"));
        let r = Rule::parse("read_file(./notes.md)").unwrap();
        assert!(r.matches_path(Some("notes.md"), "/p/notes.md"));
    }

    #[test]
    fn a_recorded_prefix_matches_only_itself() {
        let r = Rule::command_prefix("bash", "git status").unwrap();
        assert_eq!(r.to_string(), "bash(git status *)");
        assert!(r.matches_command("git status"));
        assert!(r.matches_command("git status -s"));
        assert!(!r.matches_command("git statusx"));
        let r = Rule::command_prefix("bash", "ls [a]*").unwrap();
        assert!(r.matches_command("ls [a]* -l"));
        assert!(!r.matches_command("ls a -l"));
    }

    #[test]
    fn star_crosses_newlines_in_commands() {
        let r = Rule::parse("bash(echo *)").unwrap();
        assert!(r.matches_command("echo 'a\nb'"));
    }
}
