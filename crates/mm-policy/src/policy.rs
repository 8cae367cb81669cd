//! The rules of one session and how a call is judged: deny wins over ask,
//! ask over allow, allow over the default.
//!
//! A `bash` command line is judged part by part (every simple command the
//! shell parser finds): it is denied when a deny rule matches any part,
//! asks when an ask rule matches any part, and is allowed by the rules
//! only when every part is allowed. Deny and ask rules try every reading
//! of a part (braces expanded, variables the line sets substituted,
//! wrappers and paths cut away, flags normalised): one that matches is
//! enough. What the rules cannot read (substitutions, `eval`, `sh -c`, a
//! shell fed on its input, a computed or pattern command name, anything
//! that makes bash evaluate a variable's value, a line that does not
//! parse) asks, unless nothing in the settings could refuse it (default
//! `allow` and no deny or ask rule for the tool). A part that redirects
//! into a file outside the working directory, or somewhere unknown, is
//! not allowed by an allow rule: it gets the default.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::readonly::read_only;
use crate::rule::{Rule, RuleError};
use crate::shell::{self, Hazard};

/// What a call gets when no rule speaks: `permissions.default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Run without asking.
    Allow,
    /// Ask before tools that change things.
    Ask,
    /// Read-only: calls that change things are refused
    /// ([`Verdict::PlanMode`]), except `bash` lines that only read
    /// ([`crate::readonly::read_only`]); deny and ask rules still apply.
    Plan,
}

/// What a call is judged on besides the tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// The `bash` command line.
    Command(&'a str),
    /// The path a file tool reads or writes (relative to the working
    /// directory, or absolute).
    Path(&'a Path),
    /// The host of a URL `web_fetch` reads: `domain:HOST` patterns apply.
    Domain(&'a str),
    /// Nothing: only rules without a pattern apply.
    None,
}

/// One call to judge.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// What the pattern of a rule is matched against.
    pub subject: Subject<'a>,
    /// Whether the tool changes things (needs permission by itself): a
    /// call of a tool that only reads is allowed unless a rule says
    /// otherwise, whatever the default.
    pub changes: bool,
    /// The session's working directory.
    pub cwd: &'a Path,
}

/// Why a call asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskReason {
    /// `permissions.default` is `ask` and no rule allowed the call.
    Default,
    /// An ask rule matched; its text.
    Rule(String),
    /// Something the rules cannot read; in words.
    Unreadable(String),
    /// A redirection into this file outside the working directory.
    WritesOutside(String),
}

impl AskReason {
    /// A short line for a front end: `rule "bash(git push*)"`; `None` for
    /// the default, which needs no explaining.
    pub fn describe(&self) -> Option<String> {
        match self {
            AskReason::Default => None,
            AskReason::Rule(rule) => Some(format!("rule \"{rule}\"")),
            AskReason::Unreadable(why) => Some(why.clone()),
            AskReason::WritesOutside(target) => {
                Some(format!("writes {target}, outside the working directory"))
            }
        }
    }
}

/// The judgement on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the user first.
    Ask(AskReason),
    /// Do not run it; the text of the deny rule that matched.
    Deny(String),
    /// Do not run it: plan mode is on and the call would change things.
    PlanMode,
}

/// A rule list entry that does not parse, named as the settings name it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permissions.{list}[{index}]: {source}")]
pub struct PolicyError {
    /// `allow`, `ask` or `deny`.
    pub list: &'static str,
    /// The entry's position in its list.
    pub index: usize,
    /// What is wrong with it.
    pub source: RuleError,
}

/// The rules of the settings, as text, for [`Policy::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleLists<'a> {
    /// `permissions.default`.
    pub default: Mode,
    /// `permissions.allow`.
    pub allow: &'a [String],
    /// `permissions.ask`.
    pub ask: &'a [String],
    /// `permissions.deny`.
    pub deny: &'a [String],
}

/// Every rule in force, for `/permissions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The default.
    pub default: Mode,
    /// The deny rules, as written.
    pub deny: Vec<String>,
    /// The ask rules, as written.
    pub ask: Vec<String>,
    /// The allow rules, as written.
    pub allow: Vec<String>,
    /// The rules "allow for the session" added, oldest first.
    pub session: Vec<String>,
}

/// The rules of one session. Cheap to judge with; share it behind an `Arc`.
#[derive(Debug)]
pub struct Policy {
    /// The mode in force; `/mode`, Shift-Tab and an accepted plan change
    /// it while the session runs.
    default: Mutex<Mode>,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
    session: Mutex<Vec<Rule>>,
}

impl Policy {
    /// Compiles the rules of the settings; the first bad entry is the error.
    pub fn new(lists: RuleLists<'_>) -> Result<Policy, PolicyError> {
        let compile = |list: &'static str, texts: &[String]| {
            texts
                .iter()
                .enumerate()
                .map(|(index, t)| {
                    Rule::parse(t).map_err(|source| PolicyError {
                        list,
                        index,
                        source,
                    })
                })
                .collect::<Result<Vec<Rule>, PolicyError>>()
        };
        Ok(Policy {
            default: Mutex::new(lists.default),
            deny: compile("deny", lists.deny)?,
            ask: compile("ask", lists.ask)?,
            allow: compile("allow", lists.allow)?,
            session: Mutex::new(Vec::new()),
        })
    }

    /// A policy of no rules with this default.
    pub fn with_default(default: Mode) -> Policy {
        Policy {
            default: Mutex::new(default),
            deny: Vec::new(),
            ask: Vec::new(),
            allow: Vec::new(),
            session: Mutex::new(Vec::new()),
        }
    }

    /// The default in force.
    pub fn default_mode(&self) -> Mode {
        *self.default.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Switch modes for the calls judged from now on.
    pub fn set_default_mode(&self, mode: Mode) {
        *self.default.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    /// Judges one call. In plan mode a call that changes things is refused
    /// unless it is a `bash` line that only reads; a deny rule still names
    /// itself first.
    pub fn check(&self, call: &Call<'_>) -> Verdict {
        let mode = self.default_mode();
        if mode == Mode::Plan && call.changes {
            let reads = match call.subject {
                Subject::Command(line) => read_only(&shell::analyse(line, call.cwd)),
                // Reading a page changes nothing here: it runs in plan mode.
                Subject::Domain(_) => true,
                _ => false,
            };
            return match self.judge(call, Mode::Allow) {
                Verdict::Deny(rule) => Verdict::Deny(rule),
                verdict if reads => verdict,
                _ => Verdict::PlanMode,
            };
        }
        self.judge(call, mode)
    }

    /// Judges one call under the default `default`.
    fn judge(&self, call: &Call<'_>, default: Mode) -> Verdict {
        let deny = rules_for(&self.deny, call.tool);
        let ask = rules_for(&self.ask, call.tool);
        let session = self.session();
        let mut allow = rules_for(&self.allow, call.tool);
        allow.extend(rules_for(&session, call.tool));
        let fallback = || match (call.changes, default) {
            (true, Mode::Ask) => Verdict::Ask(AskReason::Default),
            _ => Verdict::Allow,
        };
        match call.subject {
            Subject::Command(line) => {
                let analysis = shell::analyse(line, call.cwd);
                let readings: Vec<Strict<'_>> = analysis.commands.iter().map(Strict::new).collect();
                for c in &readings {
                    if let Some(r) = first_match(&deny, |r| c.matches(r)) {
                        return Verdict::Deny(r.to_string());
                    }
                }
                if let Some(r) = deny.iter().find(|r| r.is_bare()) {
                    return Verdict::Deny(r.to_string());
                }
                for c in &readings {
                    if let Some(r) = first_match(&ask, |r| c.matches(r)) {
                        return Verdict::Ask(AskReason::Rule(r.to_string()));
                    }
                }
                if let Some(r) = ask.iter().find(|r| r.is_bare()) {
                    return Verdict::Ask(AskReason::Rule(r.to_string()));
                }
                if let Some(h) = analysis.hazards.first() {
                    let everything_allowed =
                        default == Mode::Allow && deny.is_empty() && ask.is_empty();
                    return if everything_allowed {
                        Verdict::Allow
                    } else {
                        Verdict::Ask(AskReason::Unreadable(describe(h)))
                    };
                }
                if analysis.commands.is_empty() {
                    return fallback();
                }
                for c in &analysis.commands {
                    if let Some(target) = &c.writes_outside {
                        if default == Mode::Ask {
                            return Verdict::Ask(AskReason::WritesOutside(target.clone()));
                        }
                        continue;
                    }
                    if !allow.iter().any(|r| r.matches_command(&c.raw)) {
                        return fallback();
                    }
                }
                Verdict::Allow
            }
            Subject::Path(path) => {
                let (relative, absolute) = path_forms(call.cwd, path);
                let matches = |r: &Rule| r.matches_path(relative.as_deref(), &absolute);
                // A bare rule covers every path of its tools.
                if let Some(r) = first_match(&deny, matches).or_else(|| first_bare(&deny)) {
                    return Verdict::Deny(r.to_string());
                }
                if let Some(r) = first_match(&ask, matches).or_else(|| first_bare(&ask)) {
                    return Verdict::Ask(AskReason::Rule(r.to_string()));
                }
                if allow.iter().any(|r| matches(r)) {
                    return Verdict::Allow;
                }
                fallback()
            }
            Subject::Domain(host) => {
                let matches = |r: &Rule| r.matches_domain(host);
                if let Some(r) = first_match(&deny, matches).or_else(|| first_bare(&deny)) {
                    return Verdict::Deny(r.to_string());
                }
                if let Some(r) = first_match(&ask, matches).or_else(|| first_bare(&ask)) {
                    return Verdict::Ask(AskReason::Rule(r.to_string()));
                }
                if allow.iter().any(|r| matches(r)) {
                    return Verdict::Allow;
                }
                fallback()
            }
            Subject::None => {
                if let Some(r) = deny.iter().find(|r| r.is_bare()) {
                    return Verdict::Deny(r.to_string());
                }
                if let Some(r) = ask.iter().find(|r| r.is_bare()) {
                    return Verdict::Ask(AskReason::Rule(r.to_string()));
                }
                if allow.iter().any(|r| r.is_bare()) {
                    return Verdict::Allow;
                }
                fallback()
            }
        }
    }

    /// "Allow for the session": records the rules that allow this call
    /// from now on and returns their texts. For `bash`, one rule per
    /// command prefix of the line not yet allowed (`bash(git status *)`);
    /// for other tools, the tool's bare name.
    pub fn allow_for_session(&self, call: &Call<'_>) -> Vec<String> {
        let mut added = Vec::new();
        let mut session = self.session_mut();
        let mut record = |rule: Rule, session: &mut Vec<Rule>| {
            let text = rule.to_string();
            if !session.iter().any(|r| r.to_string() == text) {
                session.push(rule);
                added.push(text);
            }
        };
        match call.subject {
            Subject::Command(line) => {
                let analysis = shell::analyse(line, call.cwd);
                for c in analysis.commands.iter().filter(|c| !c.hidden) {
                    let allowed = self
                        .allow
                        .iter()
                        .chain(session.iter())
                        .any(|r| r.names(call.tool) && r.matches_command(&c.raw));
                    if allowed {
                        continue;
                    }
                    if let Ok(rule) = Rule::command_prefix(call.tool, &c.prefix()) {
                        record(rule, &mut session);
                    }
                }
            }
            Subject::Path(_) | Subject::Domain(_) | Subject::None => {
                if let Ok(rule) = Rule::parse(call.tool) {
                    record(rule, &mut session);
                }
            }
        }
        added
    }

    /// Whether an allow rule of `tool` names `host` by a `domain:`
    /// pattern (a bare rule does not): what lets `web_fetch` reach a
    /// loopback or private address, which no prompt may reach unasked.
    pub fn names_domain(&self, tool: &str, host: &str) -> bool {
        rules_for(&self.allow, tool)
            .into_iter()
            .any(|r| !r.is_bare() && r.matches_domain(host))
    }

    /// Every rule in force.
    pub fn listing(&self) -> Listing {
        let texts = |rules: &[Rule]| rules.iter().map(Rule::to_string).collect();
        Listing {
            default: self.default_mode(),
            deny: texts(&self.deny),
            ask: texts(&self.ask),
            allow: texts(&self.allow),
            session: texts(&self.session()),
        }
    }

    fn session(&self) -> Vec<Rule> {
        self.session_mut().clone()
    }

    fn session_mut(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        // A panic elsewhere must not lose the user's answers.
        self.session.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One simple command as deny and ask rules see it: every way of reading
/// it (see [`shell::SimpleCommand::strict_readings`]); one matches is
/// enough.
struct Strict<'a> {
    command: &'a shell::SimpleCommand,
    texts: [String; 2],
    readings: Vec<Vec<String>>,
}

impl<'a> Strict<'a> {
    fn new(command: &'a shell::SimpleCommand) -> Strict<'a> {
        Strict {
            command,
            texts: [command.raw.clone(), command.words.join(" ")],
            readings: command.strict_readings(),
        }
    }

    fn matches(&self, rule: &Rule) -> bool {
        self.texts.iter().any(|t| rule.matches_command(t))
            || self.readings.iter().any(|w| rule.matches_reading(w))
            || rule.command_word().is_some_and(|name| {
                self.command
                    .readings_named(name)
                    .iter()
                    .any(|w| rule.matches_reading(w))
            })
    }
}

fn rules_for<'r>(rules: &'r [Rule], tool: &str) -> Vec<&'r Rule> {
    rules.iter().filter(|r| r.names(tool)).collect()
}

fn first_match<'r>(rules: &[&'r Rule], pred: impl Fn(&Rule) -> bool) -> Option<&'r Rule> {
    rules.iter().copied().find(|r| !r.is_bare() && pred(r))
}

fn first_bare<'r>(rules: &[&'r Rule]) -> Option<&'r Rule> {
    rules.iter().copied().find(|r| r.is_bare())
}

fn describe(h: &Hazard) -> String {
    h.describe()
}

/// The path relative to the working directory (when inside it) and
/// absolute, both with `.` and `..` applied on the text.
fn path_forms(cwd: &Path, path: &Path) -> (Option<String>, String) {
    let mut absolute = PathBuf::from("/");
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    for part in joined.components() {
        match part {
            Component::Normal(name) => absolute.push(name),
            Component::ParentDir => {
                absolute.pop();
            }
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
        }
    }
    let relative = absolute
        .strip_prefix(cwd)
        .ok()
        .filter(|r| !r.as_os_str().is_empty())
        .map(|r| r.to_string_lossy().into_owned());
    (relative, absolute.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn policy(default: Mode, allow: &[&str], ask: &[&str], deny: &[&str]) -> Policy {
        Policy::new(RuleLists {
            default,
            allow: &strings(allow),
            ask: &strings(ask),
            deny: &strings(deny),
        })
        .unwrap()
    }

    fn bash<'a>(line: &'a str, cwd: &'a Path) -> Call<'a> {
        Call {
            tool: "bash",
            subject: Subject::Command(line),
            changes: true,
            cwd,
        }
    }

    #[test]
    fn plan_mode_lets_only_reading_run() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let p = policy(
            Mode::Allow,
            &["bash(rm *)", "write_file"],
            &[],
            &["bash(git push*)"],
        );
        p.set_default_mode(Mode::Plan);
        assert_eq!(p.check(&bash("ls -la", cwd)), Verdict::Allow);
        assert_eq!(p.check(&bash("git status", cwd)), Verdict::Allow);
        // An allow rule does not open plan mode.
        assert_eq!(p.check(&bash("rm x", cwd)), Verdict::PlanMode);
        assert_eq!(p.check(&bash("echo a > f", cwd)), Verdict::PlanMode);
        assert_eq!(
            p.check(&bash("git push", cwd)),
            Verdict::Deny("bash(git push*)".into())
        );
        let write = Call {
            tool: "write_file",
            subject: Subject::Path(Path::new("a.txt")),
            changes: true,
            cwd,
        };
        assert_eq!(p.check(&write), Verdict::PlanMode);
        let read = Call {
            tool: "read_file",
            changes: false,
            ..write
        };
        assert_eq!(p.check(&read), Verdict::Allow);
        p.set_default_mode(Mode::Allow);
        assert_eq!(p.check(&write), Verdict::Allow);
        assert_eq!(p.listing().default, Mode::Allow);
    }

    #[test]
    fn web_fetch_is_judged_by_domain_asks_in_ask_mode_and_runs_in_plan_mode() {
        let cwd = Path::new("/p");
        let fetch = |host| Call {
            tool: "web_fetch",
            subject: Subject::Domain(host),
            changes: true,
            cwd,
        };
        let p = policy(
            Mode::Ask,
            &["web_fetch(domain:docs.rs)", "web_fetch(domain:127.0.0.1)"],
            &[],
            &["web_fetch(domain:*.evil.example)"],
        );
        assert_eq!(p.check(&fetch("docs.rs")), Verdict::Allow);
        assert_eq!(p.check(&fetch("www.Docs.RS")), Verdict::Allow);
        assert_eq!(
            p.check(&fetch("notdocs.rs")),
            Verdict::Ask(AskReason::Default)
        );
        assert_eq!(
            p.check(&fetch("a.evil.example")),
            Verdict::Deny("web_fetch(domain:*.evil.example)".into())
        );
        assert!(p.names_domain("web_fetch", "127.0.0.1"));
        assert!(!p.names_domain("web_fetch", "127.0.0.2"));
        p.set_default_mode(Mode::Plan);
        assert_eq!(p.check(&fetch("example.com")), Verdict::Allow);
        assert_eq!(
            p.check(&fetch("a.evil.example")),
            Verdict::Deny("web_fetch(domain:*.evil.example)".into())
        );
        // A bare allow rule lets every host run but names none.
        let bare = policy(Mode::Ask, &["web_fetch"], &[], &[]);
        assert_eq!(bare.check(&fetch("example.com")), Verdict::Allow);
        assert!(!bare.names_domain("web_fetch", "127.0.0.1"));
    }

    #[test]
    fn path_forms_inside_and_out() {
        let cwd = Path::new("/p");
        assert_eq!(
            path_forms(cwd, Path::new("src/../a.rs")),
            (Some("a.rs".into()), "/p/a.rs".into())
        );
        assert_eq!(
            path_forms(cwd, Path::new("/etc/x")),
            (None, "/etc/x".into())
        );
        assert_eq!(path_forms(cwd, Path::new("../q/x")), (None, "/q/x".into()));
    }

    #[test]
    fn bad_entries_are_named() {
        let e = Policy::new(RuleLists {
            default: Mode::Ask,
            allow: &strings(&["read_file"]),
            ask: &[],
            deny: &strings(&["bash(ok)", "bash(rm"]),
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "permissions.deny[1]: \"bash(rm\": expected TOOL(PATTERN) with \")\" at the end"
        );
    }

    #[test]
    fn the_order_is_deny_ask_allow_default() {
        let cwd = Path::new("/");
        let p = policy(
            Mode::Ask,
            &["bash(git *)"],
            &["bash(git push*)"],
            &["bash(git push --force*)"],
        );
        assert_eq!(p.check(&bash("git status", cwd)), Verdict::Allow);
        assert_eq!(
            p.check(&bash("git push origin", cwd)),
            Verdict::Ask(AskReason::Rule("bash(git push*)".into()))
        );
        assert_eq!(
            p.check(&bash("git push --force", cwd)),
            Verdict::Deny("bash(git push --force*)".into())
        );
        assert_eq!(p.check(&bash("ls", cwd)), Verdict::Ask(AskReason::Default));
        let allow = policy(Mode::Allow, &[], &["bash(git push*)"], &[]);
        assert_eq!(allow.check(&bash("ls", cwd)), Verdict::Allow);
        assert!(matches!(
            allow.check(&bash("ls && git push", cwd)),
            Verdict::Ask(AskReason::Rule(_))
        ));
        // A bare tool rule covers every call of the tool.
        let bare = policy(Mode::Allow, &[], &[], &["bash"]);
        assert_eq!(bare.check(&bash("", cwd)), Verdict::Deny("bash".into()));
        // Session rules are allow rules: an ask rule still wins.
        let p = policy(Mode::Ask, &[], &["bash(git push*)"], &[]);
        p.allow_for_session(&bash("git push", cwd));
        assert!(matches!(p.check(&bash("git push", cwd)), Verdict::Ask(_)));
    }

    #[test]
    fn hostile_lines_are_judged_without_running_them() {
        let cwd = Path::new("/p");
        let p = policy(
            Mode::Ask,
            &["bash(git status*)", "bash(echo *)"],
            &[],
            &["bash(rm -rf *)"],
        );
        let deny = Verdict::Deny("bash(rm -rf *)".into());
        assert_eq!(p.check(&bash("git status && rm -rf x", cwd)), deny);
        assert_eq!(p.check(&bash("git status; rm -rf x", cwd)), deny);
        assert_eq!(p.check(&bash("echo $(rm -rf x)", cwd)), deny);
        assert_eq!(p.check(&bash("eval 'rm -rf x'", cwd)), deny);
        assert_eq!(p.check(&bash("bash -c 'rm -rf x'", cwd)), deny);
        assert_eq!(p.check(&bash("FOO=1 /bin/rm -rf x", cwd)), deny);
        assert_eq!(p.check(&bash("git status | xargs rm -rf", cwd)), deny);
        assert_eq!(
            p.check(&bash("$(rm x)", cwd)),
            Verdict::Ask(AskReason::Unreadable("command substitution".into()))
        );
        assert_eq!(
            p.check(&bash("git status > /etc/x", cwd)),
            Verdict::Ask(AskReason::WritesOutside("/etc/x".into()))
        );
        assert_eq!(
            p.check(&bash("git status > out.txt 2>&1", cwd)),
            Verdict::Allow
        );
        assert_eq!(
            p.check(&bash("git status && echo done", cwd)),
            Verdict::Allow
        );
        assert_eq!(
            p.check(&bash("git status && rm x", cwd)),
            Verdict::Ask(AskReason::Default)
        );
        assert!(matches!(
            p.check(&bash("echo <(cat /etc/passwd)", cwd)),
            Verdict::Ask(AskReason::Unreadable(_))
        ));
        assert!(matches!(
            p.check(&bash("git status \"unterminated", cwd)),
            Verdict::Ask(AskReason::Unreadable(_))
        ));
        // Under default allow with no rules for bash, nothing could refuse.
        let open = policy(Mode::Allow, &[], &[], &["write_file(.env)"]);
        assert_eq!(
            open.check(&bash("echo $(date) > /tmp/x", cwd)),
            Verdict::Allow
        );
        // With a deny rule, what cannot be read asks.
        let guarded = policy(Mode::Allow, &[], &[], &["bash(rm -rf *)"]);
        assert!(matches!(
            guarded.check(&bash("$CMD -rf x", cwd)),
            Verdict::Ask(AskReason::Unreadable(_))
        ));
        assert_eq!(guarded.check(&bash("ls > /tmp/x", cwd)), Verdict::Allow);
    }

    #[test]
    fn paths_and_tools_without_a_subject() {
        let cwd = Path::new("/p");
        let p = policy(
            Mode::Ask,
            &["read_file", "lsp"],
            &["write_file(docs/**)"],
            &["write_file(.env)", "mcp__*__delete*"],
        );
        let call = |tool: &'static str, path: &'static str, changes: bool| Call {
            tool,
            subject: Subject::Path(Path::new(path)),
            changes,
            cwd,
        };
        assert_eq!(
            p.check(&call("write_file", "config/.env", true)),
            Verdict::Deny("write_file(.env)".into())
        );
        assert_eq!(
            p.check(&call("write_file", "/p/docs/a/b.md", true)),
            Verdict::Ask(AskReason::Rule("write_file(docs/**)".into()))
        );
        assert_eq!(
            p.check(&call("write_file", "src/x.rs", true)),
            Verdict::Ask(AskReason::Default)
        );
        assert_eq!(p.check(&call("read_file", ".env", false)), Verdict::Allow);
        assert_eq!(p.check(&call("lsp", "a.rs", true)), Verdict::Allow);
        let mcp = |tool: &'static str| Call {
            tool,
            subject: Subject::None,
            changes: true,
            cwd,
        };
        assert_eq!(
            p.check(&mcp("mcp__github__delete_repo")),
            Verdict::Deny("mcp__*__delete*".into())
        );
        assert_eq!(
            p.check(&mcp("mcp__github__create_issue")),
            Verdict::Ask(AskReason::Default)
        );
    }

    #[test]
    fn a_bare_rule_covers_every_path_of_its_tool() {
        let cwd = Path::new("/p");
        let p = policy(Mode::Allow, &[], &["write_file"], &["read_file", "grep"]);
        let call = |tool: &'static str, path: &'static str, changes: bool| Call {
            tool,
            subject: Subject::Path(Path::new(path)),
            changes,
            cwd,
        };
        assert_eq!(
            p.check(&call("read_file", "src/a.rs", false)),
            Verdict::Deny("read_file".into())
        );
        assert_eq!(
            p.check(&call("grep", "/p", false)),
            Verdict::Deny("grep".into())
        );
        assert_eq!(
            p.check(&call("write_file", "a.txt", true)),
            Verdict::Ask(AskReason::Rule("write_file".into()))
        );
        assert_eq!(p.check(&call("glob", "/p", false)), Verdict::Allow);
    }

    #[test]
    fn the_session_rule_is_a_prefix_not_the_tool() {
        let cwd = Path::new("/");
        let p = policy(Mode::Ask, &[], &[], &[]);
        let added = p.allow_for_session(&bash("git status -s && cargo test --lib", cwd));
        assert_eq!(added, ["bash(git status *)", "bash(cargo test *)"]);
        assert_eq!(p.check(&bash("git status", cwd)), Verdict::Allow);
        assert_eq!(p.check(&bash("cargo test -p x", cwd)), Verdict::Allow);
        assert_eq!(
            p.check(&bash("rm -rf x", cwd)),
            Verdict::Ask(AskReason::Default)
        );
        // Recorded once.
        assert!(p.allow_for_session(&bash("git status", cwd)).is_empty());
        assert_eq!(
            p.listing().session,
            ["bash(git status *)", "bash(cargo test *)"]
        );
        let write = Call {
            tool: "write_file",
            subject: Subject::Path(Path::new("a.txt")),
            changes: true,
            cwd,
        };
        assert_eq!(p.allow_for_session(&write), ["write_file"]);
    }
}
