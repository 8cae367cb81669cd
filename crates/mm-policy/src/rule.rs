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
//!
//! Deny and ask rules for the usual destructive commands (`rm`, `cp`,
//! `mv`, `chmod`, `chown`, `chgrp`, `shred`, `rsync`, and `git push`,
//! `clean`, `reset`, `checkout`, `branch`) also match however the flags
//! are spelled: `rm -rf *` matches `rm -r -f x`, `rm -fr x`,
//! `rm --recursive --force x` and `rm -rfv x` (the command's flags include
//! the rule's; see [`Rule::matches_reading`]).

use std::collections::BTreeSet;
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
    /// The pattern read as a command of [`FLAG_SPECS`] with flags, when it
    /// is one: matched whatever the order and spelling of the flags.
    flags: Option<FlagPattern>,
    /// The pattern's first word when it is literal (`rm` of `rm -rf *`):
    /// what a command name that is a glob (`r[m]`) is tried as.
    command_word: Option<String>,
    /// `domain:HOST` (a `web_fetch` rule): the host glob, lower case,
    /// matched against a URL's host and, when literal, its subdomains.
    domain: Option<(String, GlobMatcher)>,
}

/// A command pattern with flags, normalised: `rm -rf *` is `rm` with the
/// flags `r` and `f`, then any operands.
#[derive(Debug, Clone)]
struct FlagPattern {
    key: Vec<String>,
    flags: BTreeSet<String>,
    /// Over the operands, one space apart; `None`: no operands.
    rest: Option<Vec<GlobMatcher>>,
}

/// How one destructive command spells its flags.
struct FlagSpec {
    /// The command words: `rm`, or `git` and its subcommand.
    words: &'static [&'static str],
    /// Letters that are flags without an argument (`-rf` is `r`, `f`).
    short: &'static str,
    /// Letters that mean others: `R` of `rm` is `r`, `D` of `git branch`
    /// is `d` and `f`.
    alias: &'static [(char, &'static str)],
    /// Long flags and the letters they mean (`--force` is `f`); other long
    /// flags stand for themselves (`--hard`).
    long: &'static [(&'static str, &'static str)],
}

/// The long flags `chown` and `chgrp` share.
const OWNER_LONG: &[(&str, &str)] = &[
    ("recursive", "R"),
    ("verbose", "v"),
    ("changes", "c"),
    ("silent", "f"),
    ("quiet", "f"),
    ("no-dereference", "h"),
    ("dereference", "L"),
];

/// The usual destructive commands, whose flags deny and ask rules match
/// whatever their order and spelling.
const FLAG_SPECS: &[FlagSpec] = &[
    FlagSpec {
        words: &["rm"],
        short: "rRfdivI",
        alias: &[('R', "r")],
        long: &[
            ("recursive", "r"),
            ("force", "f"),
            ("dir", "d"),
            ("verbose", "v"),
        ],
    },
    FlagSpec {
        words: &["cp"],
        short: "rRfaivnulpPdsxLHTb",
        alias: &[('R', "r")],
        long: &[
            ("recursive", "r"),
            ("force", "f"),
            ("archive", "a"),
            ("interactive", "i"),
            ("verbose", "v"),
            ("no-clobber", "n"),
            ("update", "u"),
            ("link", "l"),
            ("symbolic-link", "s"),
            ("one-file-system", "x"),
            ("dereference", "L"),
            ("no-target-directory", "T"),
        ],
    },
    FlagSpec {
        words: &["mv"],
        short: "finuvTb",
        alias: &[],
        long: &[
            ("force", "f"),
            ("interactive", "i"),
            ("no-clobber", "n"),
            ("update", "u"),
            ("verbose", "v"),
            ("no-target-directory", "T"),
        ],
    },
    FlagSpec {
        words: &["chmod"],
        short: "Rvcf",
        alias: &[],
        long: &[
            ("recursive", "R"),
            ("verbose", "v"),
            ("changes", "c"),
            ("silent", "f"),
            ("quiet", "f"),
        ],
    },
    FlagSpec {
        words: &["chown"],
        short: "RvcfhHLP",
        alias: &[],
        long: OWNER_LONG,
    },
    FlagSpec {
        words: &["chgrp"],
        short: "RvcfhHLP",
        alias: &[],
        long: OWNER_LONG,
    },
    FlagSpec {
        words: &["shred"],
        short: "fuvzx",
        alias: &[],
        long: &[
            ("force", "f"),
            ("remove", "u"),
            ("verbose", "v"),
            ("zero", "z"),
            ("exact", "x"),
        ],
    },
    FlagSpec {
        words: &["rsync"],
        short: "avzrlptgoDhPnuqcHAXxSWRE",
        alias: &[],
        long: &[
            ("archive", "a"),
            ("verbose", "v"),
            ("compress", "z"),
            ("recursive", "r"),
            ("dry-run", "n"),
            ("update", "u"),
            ("quiet", "q"),
            ("checksum", "c"),
            ("relative", "R"),
        ],
    },
    FlagSpec {
        words: &["git", "push"],
        short: "fdnuvq",
        alias: &[],
        long: &[
            ("force", "f"),
            ("delete", "d"),
            ("dry-run", "n"),
            ("set-upstream", "u"),
            ("verbose", "v"),
            ("quiet", "q"),
        ],
    },
    FlagSpec {
        words: &["git", "clean"],
        short: "fdxXnqi",
        alias: &[],
        long: &[
            ("force", "f"),
            ("dry-run", "n"),
            ("quiet", "q"),
            ("interactive", "i"),
        ],
    },
    FlagSpec {
        words: &["git", "reset"],
        short: "qpN",
        alias: &[],
        long: &[("quiet", "q"), ("patch", "p")],
    },
    FlagSpec {
        words: &["git", "checkout"],
        short: "fqpmB",
        alias: &[],
        long: &[
            ("force", "f"),
            ("quiet", "q"),
            ("patch", "p"),
            ("merge", "m"),
        ],
    },
    FlagSpec {
        words: &["git", "branch"],
        short: "dDfrlavqmMcC",
        alias: &[('D', "df"), ('M', "mf"), ('C', "cf")],
        long: &[
            ("delete", "d"),
            ("force", "f"),
            ("remotes", "r"),
            ("list", "l"),
            ("all", "a"),
            ("verbose", "v"),
            ("quiet", "q"),
            ("move", "m"),
            ("copy", "c"),
        ],
    },
];

/// Options of `git` itself, before the subcommand, that take a value.
const GIT_OPTIONS_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--exec-path",
];

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

    /// Whether the pattern matches one reading of a simple command, its
    /// words without quoting, command word first: the words one space
    /// apart, or, for the usual destructive commands, the same command
    /// with at least the pattern's flags, however spelled and ordered, and
    /// operands that match the rest of the pattern. Deny and ask rules are
    /// tried this way; allow rules never (a flag more is not covered).
    pub fn matches_reading(&self, words: &[String]) -> bool {
        let Some(p) = &self.pattern else {
            return true;
        };
        if p.command.iter().any(|g| g.is_match(words.join(" "))) {
            return true;
        }
        let Some(fp) = &p.flags else {
            return false;
        };
        let Some(normal) = normalise(words) else {
            return false;
        };
        let operands = normal.operands.join(" ");
        normal.key == fp.key
            && fp.flags.is_subset(&normal.flags)
            && match &fp.rest {
                None => normal.operands.is_empty(),
                Some(globs) => globs.iter().any(|g| g.is_match(&operands)),
            }
    }

    /// The pattern's first word when it is a literal command name (`rm` of
    /// `bash(rm -rf *)`); `None` for a bare rule or a pattern that starts
    /// with a glob.
    pub fn command_word(&self) -> Option<&str> {
        self.pattern.as_ref()?.command_word.as_deref()
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

impl Rule {
    /// Whether the pattern names a URL's host: `domain:docs.rs` matches
    /// `docs.rs` and `www.docs.rs`, `domain:*.internal` any host the glob
    /// matches; a bare rule matches every host, any other pattern none.
    pub fn matches_domain(&self, host: &str) -> bool {
        let Some(p) = &self.pattern else {
            return true;
        };
        let Some((literal, glob)) = &p.domain else {
            return false;
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        glob.is_match(host)
            || (!literal.contains(GLOB_CHARS)
                && host.len() > literal.len()
                && host.ends_with(literal.as_str())
                && host[..host.len() - literal.len()].ends_with('.'))
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
        let command_globs = |p: &str| -> Result<Vec<GlobMatcher>, globset::Error> {
            let mut globs = vec![glob(p, false)?];
            if let Some(bare) = p.strip_suffix(" *") {
                globs.push(glob(bare, false)?);
            }
            Ok(globs)
        };
        let command = command_globs(&pattern)?;
        let path_pattern = pattern.strip_prefix("./").unwrap_or(&pattern);
        let mut path = vec![glob(path_pattern, true)?];
        if !path_pattern.contains('/') {
            path.push(glob(&format!("**/{path_pattern}"), true)?);
        }
        let flags = match flag_pattern(&pattern) {
            None => None,
            Some((key, flags, rest)) => Some(FlagPattern {
                key,
                flags,
                rest: rest.map(|r| command_globs(&r)).transpose()?,
            }),
        };
        let command_word = pattern
            .split(' ')
            .next()
            .filter(|w| !w.is_empty() && !w.contains(GLOB_CHARS))
            .map(str::to_owned);
        let domain = match pattern.strip_prefix("domain:") {
            Some(host) => {
                let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
                let matcher = GlobBuilder::new(&host)
                    .case_insensitive(true)
                    .literal_separator(false)
                    .build()?
                    .compile_matcher();
                Some((host, matcher))
            }
            None => None,
        };
        Ok(Pattern {
            command,
            path,
            flags,
            command_word,
            domain,
        })
    }
}

/// The characters that make a word of a pattern a glob.
const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// A command with its flags normalised.
#[derive(Debug, PartialEq, Eq)]
struct Normal {
    key: Vec<String>,
    flags: BTreeSet<String>,
    operands: Vec<String>,
}

/// Where the command words of `words` end and which spec they name: `rm`
/// is one word, `git -C x push` is `git push`.
fn find_spec(words: &[String]) -> Option<(&'static FlagSpec, usize)> {
    let first = words.first()?;
    if first != "git" {
        let spec = FLAG_SPECS.iter().find(|s| s.words == [first.as_str()])?;
        return Some((spec, 1));
    }
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if GIT_OPTIONS_WITH_VALUE.contains(&w.as_str()) {
            i += 2;
        } else if w.starts_with('-') {
            i += 1;
        } else {
            let spec = FLAG_SPECS
                .iter()
                .find(|s| s.words.len() == 2 && s.words[1] == w)?;
            return Some((spec, i + 1));
        }
    }
    None
}

/// What one word after the command words is.
enum Arg {
    /// Flags (normalised letters, or a long flag that stands for itself).
    Flags(Vec<String>),
    /// `--`: the rest are operands.
    EndOfOptions,
    Operand,
}

fn classify(spec: &FlagSpec, word: &str) -> Arg {
    if word == "--" {
        return Arg::EndOfOptions;
    }
    if let Some(long) = word.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or(long);
        // GNU tools and git take an unambiguous abbreviation (`--recur`).
        let exact = spec.long.iter().find(|(n, _)| *n == name);
        let mut prefixed = spec.long.iter().filter(|(n, _)| n.starts_with(name));
        let abbreviated = match (name.len() >= 3, prefixed.next(), prefixed.next()) {
            (true, Some(only), None) => Some(only),
            _ => None,
        };
        return Arg::Flags(match exact.or(abbreviated) {
            Some((_, letters)) => letters.chars().map(String::from).collect(),
            None => vec![format!("--{name}")],
        });
    }
    match word.strip_prefix('-') {
        Some(cluster) if !cluster.is_empty() && cluster.chars().all(|c| spec.short.contains(c)) => {
            let mut flags = Vec::new();
            for c in cluster.chars() {
                match spec.alias.iter().find(|(a, _)| *a == c) {
                    Some((_, letters)) => flags.extend(letters.chars().map(String::from)),
                    None => flags.push(c.to_string()),
                }
            }
            Arg::Flags(flags)
        }
        _ => Arg::Operand,
    }
}

/// The words of a command of [`FLAG_SPECS`] as its command words, the set
/// of its flags (wherever they stand before `--`, as GNU tools and git
/// read them) and its operands in order.
fn normalise(words: &[String]) -> Option<Normal> {
    let (spec, start) = find_spec(words)?;
    let mut flags = BTreeSet::new();
    let mut operands = Vec::new();
    let mut options_end = false;
    for w in &words[start..] {
        if options_end {
            operands.push(w.clone());
            continue;
        }
        match classify(spec, w) {
            Arg::Flags(f) => flags.extend(f),
            Arg::EndOfOptions => options_end = true,
            Arg::Operand => operands.push(w.clone()),
        }
    }
    Some(Normal {
        key: spec.words.iter().map(|w| (*w).to_owned()).collect(),
        flags,
        operands,
    })
}

/// The command words, flags and operand pattern of a flag pattern.
type FlagParts = (Vec<String>, BTreeSet<String>, Option<String>);

/// A command pattern read as a command of [`FLAG_SPECS`]: its command
/// words, the flags it names before its first operand (a last flag word
/// ending in `*`, as in `git push --force*`, is the flag then any
/// operands), and the pattern for the operands. `None` when the pattern
/// names no such command or no flag.
fn flag_pattern(pattern: &str) -> Option<FlagParts> {
    let words: Vec<String> = pattern.split(' ').map(str::to_owned).collect();
    let (spec, start) = find_spec(&words)?;
    if words[..start].iter().any(|w| w.contains(GLOB_CHARS)) {
        return None;
    }
    let mut flags = BTreeSet::new();
    let mut rest = None;
    let mut i = start;
    while let Some(w) = words.get(i) {
        let last = i + 1 == words.len();
        let (word, starred) = match w.strip_suffix('*') {
            Some(stem) if last && stem.starts_with('-') => (stem, true),
            _ => (w.as_str(), false),
        };
        if word.contains(GLOB_CHARS) || word == "--" {
            break;
        }
        match classify(spec, word) {
            Arg::Flags(f) => flags.extend(f),
            Arg::EndOfOptions | Arg::Operand => break,
        }
        i += 1;
        if starred {
            rest = Some("*".to_owned());
        }
    }
    if flags.is_empty() {
        return None;
    }
    if i < words.len() {
        rest = Some(words[i..].join(" "));
    }
    Some((
        spec.words.iter().map(|w| (*w).to_owned()).collect(),
        flags,
        rest,
    ))
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
    fn flags_are_normalised_for_destructive_commands() {
        let words = |line: &str| -> Vec<String> { line.split(' ').map(str::to_owned).collect() };
        let r = Rule::parse("bash(rm -rf *)").unwrap();
        for line in [
            "rm -rf x",
            "rm -fr x",
            "rm -r -f x",
            "rm -R -f x",
            "rm x -rf",
            "rm --recursive --force x",
            "rm --recur --forc x",
            "rm -rfv --one-file-system x y",
            "rm -rf",
        ] {
            assert!(r.matches_reading(&words(line)), "{line}");
        }
        for line in ["rm -r x", "rm -f x", "rm -- -rf", "rm --re x", "ls -rf x"] {
            assert!(!r.matches_reading(&words(line)), "{line}");
        }
        // An exact rule keeps its operands.
        let r = Rule::parse("bash(rm -rf /)").unwrap();
        assert!(r.matches_reading(&words("rm -r --no-preserve-root -f /")));
        assert!(!r.matches_reading(&words("rm -r -f /tmp")));
        // Allow rules never use this; only the glob over the text counts.
        assert!(
            !Rule::parse("bash(rm -f *)")
                .unwrap()
                .matches_command("rm -rf x")
        );
        assert_eq!(
            Rule::parse("bash(rm -rf *)").unwrap().command_word(),
            Some("rm")
        );
        assert_eq!(Rule::parse("bash(*rm*)").unwrap().command_word(), None);
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
