//! What a `bash` command line will run, read with a real shell parser
//! (`brush-parser`), not a regular expression: every simple command of its
//! lists, pipelines, groups, loops and functions, and the constructs whose
//! effect the rules cannot see (substitutions, `eval`, `sh -c`, a computed
//! command name, a command line that does not parse) or that write outside
//! the working directory (redirections).

use std::io::Cursor;
use std::path::{Component, Path, PathBuf};

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};
use brush_parser::{Parser, ParserOptions};

/// Command lines longer than this are not parsed (a hostile line must not
/// cost time or stack); they count as unreadable.
const MAX_LEN: usize = 64 * 1024;

/// Deeper nesting of brackets, substitutions or compound commands than this
/// is not parsed, for the same reason.
const MAX_DEPTH: usize = 48;

/// Files a redirection may name without counting as a write outside.
const HARMLESS_TARGETS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// Commands that run their arguments as another command: rules that deny or
/// ask are also tried on every tail of their words (`sudo rm -rf x` is
/// judged as `rm -rf x` too).
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "xargs", "nice", "nohup", "timeout", "command", "builtin", "exec",
    "stdbuf", "ionice", "setsid", "flock", "watch", "strace", "ltrace", "chroot", "find",
    "parallel", "unbuffer", "taskset", "chrt", "time", "busybox", "su", "runuser",
];

/// Shells whose `-c` argument is a command line of its own.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash"];

/// A construct the rules cannot judge by reading the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hazard {
    /// `$(...)` or `` `...` ``.
    CommandSubstitution,
    /// `<(...)` or `>(...)`.
    ProcessSubstitution,
    /// `eval`, `source` or `.`: code from a string or a file.
    Eval(String),
    /// `bash -c '...'` and the like.
    NestedShell(String),
    /// The command name comes from an expansion (`$CMD args`).
    ComputedCommand,
    /// The line does not parse, or is too long or too deep to parse.
    Unreadable(String),
}

impl Hazard {
    /// The words a front end shows for why it asks.
    pub fn describe(&self) -> String {
        match self {
            Hazard::CommandSubstitution => "command substitution".to_owned(),
            Hazard::ProcessSubstitution => "process substitution".to_owned(),
            Hazard::Eval(name) => format!("{name} runs code the rules cannot read"),
            Hazard::NestedShell(name) => format!("{name} -c runs a command line of its own"),
            Hazard::ComputedCommand => "the command name is computed".to_owned(),
            Hazard::Unreadable(why) => format!("the command line cannot be read: {why}"),
        }
    }
}

/// One simple command of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Its words as written (quotes kept), one space apart; what allow
    /// rules are matched against.
    pub raw: String,
    /// Its words without quoting (assignments included).
    pub words: Vec<String>,
    /// The index of the command word in `words` (after `NAME=value`s);
    /// `words.len()` for a line of assignments only.
    pub first: usize,
    /// Found inside a substitution, `eval` or `sh -c`: judged by deny and
    /// ask rules, never recorded as a session rule.
    pub hidden: bool,
    /// The first redirection target outside the working directory.
    pub writes_outside: Option<String>,
}

impl SimpleCommand {
    /// The command word, without quoting; `""` for assignments only.
    pub fn name(&self) -> &str {
        self.words.get(self.first).map_or("", String::as_str)
    }

    /// The texts deny and ask rules are tried on: as written, without
    /// quoting, without leading assignments, with the command's path cut
    /// to its name (`/bin/rm` → `rm`), and for wrappers every tail of the
    /// words.
    pub fn strict_texts(&self) -> Vec<String> {
        let mut texts = vec![self.raw.clone(), self.words.join(" ")];
        let rest = &self.words[self.first.min(self.words.len())..];
        texts.push(rest.join(" "));
        if let Some((name, args)) = rest.split_first()
            && let Some(base) = name.rsplit('/').next()
            && base != name
        {
            let mut t = base.to_owned();
            for a in args {
                t.push(' ');
                t.push_str(a);
            }
            texts.push(t);
        }
        if is_wrapper(self.name()) {
            for i in 1..rest.len() {
                texts.push(rest[i..].join(" "));
            }
        }
        texts.dedup();
        texts
    }

    /// The prefix "allow for the session" records: the command word and
    /// its subcommand (`git status`, `cargo test`), or the command word
    /// alone when the next word is an option, a path or a value (`ls`).
    /// Leading assignments are kept: `FOO=1 make` is not `make`.
    pub fn prefix(&self) -> String {
        let raw: Vec<&str> = self.raw.split(' ').collect();
        let end = if self.first + 1 < self.words.len() && is_subcommand(&self.words[self.first + 1])
        {
            self.first + 2
        } else {
            self.first + 1
        };
        raw[..end.min(raw.len())].join(" ")
    }
}

/// What a command line will run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command, in order of appearance.
    pub commands: Vec<SimpleCommand>,
    /// What the rules cannot see, in order of appearance.
    pub hazards: Vec<Hazard>,
}

/// Reads `line` as bash would, for a command run in `cwd`.
pub fn analyse(line: &str, cwd: &Path) -> Analysis {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut walker = Walker {
        cwd,
        out: Analysis::default(),
        changed_dir: false,
    };
    walker.line(line, false, 0);
    walker.out
}

struct Walker {
    cwd: PathBuf,
    out: Analysis,
    /// A `cd`, `pushd` or `popd` was seen: relative targets after it are no
    /// longer known to be inside.
    changed_dir: bool,
}

/// What one word holds.
#[derive(Default)]
struct WordInfo {
    plain: String,
    /// Parameter, arithmetic, tilde or command expansion: its value is not
    /// known before it runs.
    expands: bool,
}

impl Walker {
    fn hazard(&mut self, h: Hazard) {
        if !self.out.hazards.contains(&h) {
            self.out.hazards.push(h);
        }
    }

    fn line(&mut self, line: &str, hidden: bool, depth: usize) {
        if line.len() > MAX_LEN {
            self.hazard(Hazard::Unreadable(format!(
                "longer than {} KiB",
                MAX_LEN / 1024
            )));
            return;
        }
        if depth > MAX_DEPTH || nesting(line) > MAX_DEPTH {
            self.hazard(Hazard::Unreadable("nested too deeply".to_owned()));
            return;
        }
        let parsed = std::panic::catch_unwind(|| {
            Parser::new(Cursor::new(line.as_bytes()), &ParserOptions::default()).parse_program()
        });
        match parsed {
            Ok(Ok(program)) => {
                for list in &program.complete_commands {
                    self.compound_list(list, hidden, None, depth + 1);
                }
            }
            Ok(Err(e)) => self.hazard(Hazard::Unreadable(e.to_string())),
            Err(_) => self.hazard(Hazard::Unreadable("the parser failed".to_owned())),
        }
    }

    fn compound_list(
        &mut self,
        list: &ast::CompoundList,
        hidden: bool,
        outside: Option<&str>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.hazard(Hazard::Unreadable("nested too deeply".to_owned()));
            return;
        }
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, hidden, outside, depth);
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                self.pipeline(p, hidden, outside, depth);
            }
        }
    }

    fn pipeline(
        &mut self,
        pipeline: &ast::Pipeline,
        hidden: bool,
        outside: Option<&str>,
        depth: usize,
    ) {
        for command in &pipeline.seq {
            self.command(command, hidden, outside, depth + 1);
        }
    }

    fn command(
        &mut self,
        command: &ast::Command,
        hidden: bool,
        outside: Option<&str>,
        depth: usize,
    ) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, hidden, outside, depth),
            ast::Command::Compound(compound, redirects) => {
                let own = self.redirect_list(redirects.as_ref(), hidden, depth);
                let outside = outside.or(own.as_deref());
                self.compound(compound, hidden, outside, depth);
            }
            ast::Command::Function(def) => {
                let ast::FunctionBody(body, redirects) = &def.body;
                let own = self.redirect_list(redirects.as_ref(), hidden, depth);
                let outside = outside.or(own.as_deref());
                self.compound(body, hidden, outside, depth);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.redirect_list(redirects.as_ref(), hidden, depth);
                self.test_expr(&test.expr, hidden, depth);
            }
        }
    }

    fn redirect_list(
        &mut self,
        redirects: Option<&ast::RedirectList>,
        hidden: bool,
        depth: usize,
    ) -> Option<String> {
        let mut outside = None;
        for r in redirects.map(|r| r.0.as_slice()).unwrap_or_default() {
            let found = self.redirect(r, hidden, depth);
            outside = outside.or(found);
        }
        outside
    }

    fn test_expr(&mut self, expr: &ast::ExtendedTestExpr, hidden: bool, depth: usize) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.test_expr(a, hidden, depth + 1);
                self.test_expr(b, hidden, depth + 1);
            }
            E::Not(a) | E::Parenthesized(a) => self.test_expr(a, hidden, depth + 1),
            E::UnaryTest(_, w) => {
                self.word(&w.value, hidden, depth);
            }
            E::BinaryTest(_, a, b) => {
                self.word(&a.value, hidden, depth);
                self.word(&b.value, hidden, depth);
            }
        }
    }

    fn compound(
        &mut self,
        compound: &ast::CompoundCommand,
        hidden: bool,
        outside: Option<&str>,
        depth: usize,
    ) {
        use ast::CompoundCommand as C;
        let depth = depth + 1;
        match compound {
            C::Arithmetic(a) => self.arithmetic(&a.expr.value, hidden, depth),
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&e.value, hidden, depth);
                }
                self.compound_list(&f.body.list, hidden, outside, depth);
            }
            C::BraceGroup(g) => self.compound_list(&g.list, hidden, outside, depth),
            C::Subshell(s) => self.compound_list(&s.list, hidden, outside, depth),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, hidden, depth);
                }
                self.compound_list(&f.body.list, hidden, outside, depth);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value, hidden, depth);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(&p.value, hidden, depth);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, hidden, outside, depth);
                    }
                }
            }
            C::IfClause(i) => {
                self.compound_list(&i.condition, hidden, outside, depth);
                self.compound_list(&i.then, hidden, outside, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.compound_list(c, hidden, outside, depth);
                    }
                    self.compound_list(&e.body, hidden, outside, depth);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.compound_list(&w.0, hidden, outside, depth);
                self.compound_list(&w.1.list, hidden, outside, depth);
            }
            C::Coprocess(c) => self.command(&c.body, hidden, outside, depth),
        }
    }

    fn arithmetic(&mut self, expr: &str, hidden: bool, depth: usize) {
        if expr.contains("$(") || expr.contains('`') {
            // `$(( $(rm x) ))`: read the expression as a word to find it.
            self.word(&format!("\"{expr}\""), hidden, depth);
        }
    }

    fn simple(
        &mut self,
        simple: &ast::SimpleCommand,
        hidden: bool,
        outside: Option<&str>,
        depth: usize,
    ) {
        let mut raw = Vec::new();
        let mut words = Vec::new();
        let mut first = None;
        let mut computed = false;
        let mut writes_outside = outside.map(str::to_owned);
        let mut item = |w: &mut Self, it: &ast::CommandPrefixOrSuffixItem, assigning: bool| {
            use ast::CommandPrefixOrSuffixItem as I;
            match it {
                I::IoRedirect(r) => {
                    let found = w.redirect(r, hidden, depth);
                    if writes_outside.is_none() {
                        writes_outside = found;
                    }
                }
                I::Word(word) | I::AssignmentWord(_, word) => {
                    let info = w.word(&word.value, hidden, depth);
                    raw.push(word.value.clone());
                    words.push(info.plain);
                    if !assigning && first.is_none() {
                        first = Some(words.len() - 1);
                        computed = info.expands;
                    }
                }
                I::ProcessSubstitution(_, sub) => {
                    w.hazard(Hazard::ProcessSubstitution);
                    w.compound_list(&sub.list, true, None, depth + 1);
                }
            }
        };
        for it in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            item(self, it, true);
        }
        if let Some(name) = &simple.word_or_name {
            item(
                self,
                &ast::CommandPrefixOrSuffixItem::Word(name.clone()),
                false,
            );
        }
        for it in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            item(self, it, false);
        }
        if raw.is_empty() {
            return;
        }
        let first = first.unwrap_or(words.len());
        let command = SimpleCommand {
            raw: raw.join(" "),
            words,
            first,
            hidden,
            writes_outside,
        };
        if computed {
            self.hazard(Hazard::ComputedCommand);
        }
        self.special(&command, depth);
        self.out.commands.push(command);
    }

    /// `cd`, `eval`, `source`, `sh -c`.
    fn special(&mut self, command: &SimpleCommand, depth: usize) {
        let name = command.name();
        let base = name.rsplit('/').next().unwrap_or(name);
        let args = &command.words[(command.first + 1).min(command.words.len())..];
        match base {
            "cd" | "pushd" | "popd" => self.changed_dir = true,
            "eval" => {
                self.hazard(Hazard::Eval("eval".to_owned()));
                self.line(&args.join(" "), true, depth + 1);
            }
            "source" | "." => self.hazard(Hazard::Eval(base.to_owned())),
            _ if SHELLS.contains(&base) => {
                let script = args
                    .iter()
                    .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
                    .and_then(|i| args.get(i + 1));
                if let Some(script) = script {
                    self.hazard(Hazard::NestedShell(base.to_owned()));
                    self.line(script, true, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// Judges one redirection; returns its target when it writes outside
    /// the working directory.
    fn redirect(&mut self, r: &ast::IoRedirect, hidden: bool, depth: usize) -> Option<String> {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match r {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = !matches!(kind, K::Read | K::DuplicateInput);
                match target {
                    T::Filename(w) => {
                        let info = self.word(&w.value, hidden, depth);
                        (writes && !self.harmless(&info)).then(|| w.value.clone())
                    }
                    T::Duplicate(w) => {
                        let info = self.word(&w.value, hidden, depth);
                        let fd = info
                            .plain
                            .trim_end_matches('-')
                            .chars()
                            .all(|c| c.is_ascii_digit());
                        (writes && !fd && !self.harmless(&info)).then(|| w.value.clone())
                    }
                    T::Fd(_) => None,
                    T::ProcessSubstitution(_, sub) => {
                        self.hazard(Hazard::ProcessSubstitution);
                        self.compound_list(&sub.list, true, None, depth + 1);
                        None
                    }
                }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    match word::parse_heredoc(&doc.doc.value, &ParserOptions::default()) {
                        Ok(pieces) => {
                            let mut info = WordInfo::default();
                            self.pieces(&doc.doc.value, &pieces, &mut info, depth);
                        }
                        Err(e) => self.hazard(Hazard::Unreadable(e.to_string())),
                    }
                }
                None
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(&w.value, hidden, depth);
                None
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let info = self.word(&w.value, hidden, depth);
                (!self.harmless(&info)).then(|| w.value.clone())
            }
        }
    }

    /// A write target known to stay inside the working directory (or to be
    /// a harmless device).
    fn harmless(&self, target: &WordInfo) -> bool {
        if target.expands {
            return false;
        }
        let path = Path::new(&target.plain);
        if HARMLESS_TARGETS.contains(&target.plain.as_str()) || target.plain.starts_with("/dev/fd/")
        {
            return true;
        }
        if path.is_relative() && self.changed_dir {
            return false;
        }
        inside(&self.cwd, path)
    }

    /// Reads one word: its text without quoting, whether it expands, and
    /// (recorded as hazards, their commands as hidden ones) the
    /// substitutions inside it.
    fn word(&mut self, raw: &str, hidden: bool, depth: usize) -> WordInfo {
        let _ = hidden;
        let mut info = WordInfo::default();
        match word::parse(raw, &ParserOptions::default()) {
            Ok(pieces) => self.pieces(raw, &pieces, &mut info, depth),
            Err(_) => {
                // The shell would refuse it too; keep the text as written.
                info.plain = raw.to_owned();
                info.expands = true;
                self.hazard(Hazard::Unreadable(format!("cannot read the word {raw}")));
            }
        }
        info
    }

    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        info: &mut WordInfo,
        depth: usize,
    ) {
        for p in pieces {
            match &p.piece {
                WordPiece::Text(t)
                | WordPiece::SingleQuotedText(t)
                | WordPiece::AnsiCQuotedText(t) => info.plain.push_str(t),
                WordPiece::EscapeSequence(t) => info.plain.push_str(t.trim_start_matches('\\')),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(raw, inner, info, depth)
                }
                WordPiece::TildeExpansion(_) => {
                    info.expands = true;
                    info.plain.push('~');
                }
                WordPiece::CommandSubstitution(inner)
                | WordPiece::BackquotedCommandSubstitution(inner) => {
                    info.expands = true;
                    info.plain
                        .push_str(raw.get(p.start_index..p.end_index).unwrap_or(""));
                    self.hazard(Hazard::CommandSubstitution);
                    self.line(inner, true, depth + 1);
                }
                WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                    info.expands = true;
                    let source = raw.get(p.start_index..p.end_index).unwrap_or(raw);
                    info.plain.push_str(source);
                    if source.contains("$(") || source.contains('`') {
                        self.hazard(Hazard::CommandSubstitution);
                    }
                    if source.contains("<(") || source.contains(">(") {
                        self.hazard(Hazard::ProcessSubstitution);
                    }
                }
            }
        }
    }
}

/// Whether a word can name a subcommand: letters, digits, `-`, `_`, `:`,
/// starting with a letter (`status`, `run`, `compose`), not an option, a
/// path or a file name with an extension.
fn is_subcommand(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
}

fn is_wrapper(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    WRAPPERS.contains(&base)
}

/// The deepest nesting of brackets (`(`, `{`, `[`) and compound commands
/// (`if`…`fi`, `while`/`until`/`for`/`select`…`done`, `case`…`esac`) in a
/// line, quotes ignored: a cheap bound checked before the parser, which
/// recurses once per level, is let near it.
fn nesting(line: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut word = String::new();
    let end_word = |word: &mut String, depth: &mut usize, max: &mut usize| {
        match word.as_str() {
            "if" | "while" | "until" | "for" | "select" | "case" => {
                *depth += 1;
                *max = (*max).max(*depth);
            }
            "fi" | "done" | "esac" => *depth = depth.saturating_sub(1),
            _ => {}
        }
        word.clear();
    };
    for c in line.chars() {
        match c {
            '(' | '{' | '[' => {
                end_word(&mut word, &mut depth, &mut max);
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' | ']' => {
                end_word(&mut word, &mut depth, &mut max);
                depth = depth.saturating_sub(1);
            }
            c if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>' | '`') => {
                end_word(&mut word, &mut depth, &mut max);
            }
            c => word.push(c),
        }
    }
    end_word(&mut word, &mut depth, &mut max);
    max
}

/// Whether `path` (relative to `root`, or absolute) lies in `root` once
/// every symlink that exists is followed: a link in the working directory
/// that points outside leads outside. `root` must be canonical.
pub fn inside(root: &Path, path: &Path) -> bool {
    resolve(root, path).starts_with(root)
}

/// `path` made absolute against `base`, with `.` and `..` applied and every
/// existing symlink followed, component by component (so `link/..` is the
/// parent of the link's target, as the kernel sees it).
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    let mut current = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    for part in path.components() {
        match part {
            Component::Prefix(_) | Component::RootDir => current = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                current.pop();
            }
            Component::Normal(name) => {
                let next = current.join(name);
                current = next.canonicalize().unwrap_or(next);
            }
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(a: &Analysis) -> Vec<String> {
        a.commands.iter().map(|c| c.raw.clone()).collect()
    }

    #[test]
    fn lists_and_pipelines_split_into_simple_commands() {
        let cwd = Path::new("/");
        let a = analyse("git status && rm -rf x; ls | wc -l || echo 'a; b'", cwd);
        assert_eq!(
            names(&a),
            ["git status", "rm -rf x", "ls", "wc -l", "echo 'a; b'"]
        );
        assert!(a.hazards.is_empty());
        let a = analyse("if true; then for f in a b; do cat \"$f\"; done; fi", cwd);
        assert_eq!(names(&a), ["true", "cat \"$f\""]);
        let a = analyse("f() { rm -rf x; }; f", cwd);
        assert_eq!(names(&a), ["rm -rf x", "f"]);
        let a = analyse("(cd sub && make) &", cwd);
        assert_eq!(names(&a), ["cd sub", "make"]);
    }

    #[test]
    fn substitutions_are_hazards_and_their_commands_hidden() {
        let cwd = Path::new("/");
        let a = analyse("$(rm x)", cwd);
        assert!(a.hazards.contains(&Hazard::CommandSubstitution));
        assert!(a.commands.iter().any(|c| c.raw == "rm x" && c.hidden));
        let a = analyse("echo `rm -rf y`", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf y" && c.hidden));
        let a = analyse("diff <(ls a) <(ls b)", cwd);
        assert_eq!(a.hazards, [Hazard::ProcessSubstitution]);
        let a = analyse("echo \"${X:-$(rm z)}\"", cwd);
        assert!(a.hazards.contains(&Hazard::CommandSubstitution));
        let a = analyse("echo $(( $(rm z) + 1 ))", cwd);
        assert!(a.hazards.contains(&Hazard::CommandSubstitution));
        let a = analyse("cat <<EOF\n$(rm q)\nEOF\n", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm q" && c.hidden));
        let a = analyse("cat <<'EOF'\n$(rm q)\nEOF\n", cwd);
        assert!(a.hazards.is_empty(), "{:?}", a.hazards);
    }

    #[test]
    fn eval_and_nested_shells() {
        let cwd = Path::new("/");
        let a = analyse("eval \"rm -rf x\"", cwd);
        assert_eq!(a.hazards, [Hazard::Eval("eval".into())]);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x" && c.hidden));
        let a = analyse("bash -c 'git push --force'", cwd);
        assert_eq!(a.hazards, [Hazard::NestedShell("bash".into())]);
        assert!(a.commands.iter().any(|c| c.raw == "git push --force"));
        let a = analyse("source ./env.sh", cwd);
        assert_eq!(a.hazards, [Hazard::Eval("source".into())]);
        let a = analyse("$CMD -rf x", cwd);
        assert_eq!(a.hazards, [Hazard::ComputedCommand]);
        let a = analyse("echo \"unterminated", cwd);
        assert!(matches!(a.hazards[..], [Hazard::Unreadable(_)]));
    }

    #[test]
    fn redirections_outside_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let outside = |line: &str| {
            analyse(line, &cwd)
                .commands
                .iter()
                .find_map(|c| c.writes_outside.clone())
        };
        assert_eq!(outside("git status > /etc/x").as_deref(), Some("/etc/x"));
        assert_eq!(outside("ls >> ../up.txt").as_deref(), Some("../up.txt"));
        assert_eq!(outside("ls &> ~/x").as_deref(), Some("~/x"));
        assert_eq!(outside("ls > \"$OUT\"").as_deref(), Some("\"$OUT\""));
        assert_eq!(outside("{ ls; } > /tmp/x").as_deref(), Some("/tmp/x"));
        assert_eq!(
            outside("cd /etc && echo x > passwd").as_deref(),
            Some("passwd")
        );
        assert_eq!(outside("ls > out.txt 2>&1 < /etc/passwd"), None);
        assert_eq!(outside("ls 2>/dev/null >&2"), None);
        assert_eq!(outside(&format!("ls > {}/a/b", cwd.display())), None);
        std::os::unix::fs::symlink("/etc", cwd.join("link")).unwrap();
        assert_eq!(outside("ls > link/x").as_deref(), Some("link/x"));
        assert_eq!(outside("ls > sub/../x"), None);
    }

    #[test]
    fn strict_texts_see_through_quotes_paths_and_wrappers() {
        let cwd = Path::new("/");
        let a = analyse("FOO=1 /bin/'rm' -rf \"x y\"", cwd);
        let texts = a.commands[0].strict_texts();
        assert!(texts.contains(&"rm -rf x y".to_owned()), "{texts:?}");
        let a = analyse("sudo -u root rm -rf /", cwd);
        assert!(
            a.commands[0]
                .strict_texts()
                .contains(&"rm -rf /".to_owned())
        );
        let a = analyse("echo rm -rf /", cwd);
        assert!(
            !a.commands[0]
                .strict_texts()
                .contains(&"rm -rf /".to_owned())
        );
    }

    #[test]
    fn prefixes_for_the_session_rule() {
        let cwd = Path::new("/");
        let prefix = |line: &str| analyse(line, cwd).commands[0].prefix();
        assert_eq!(prefix("git status -s"), "git status");
        assert_eq!(prefix("cargo test --release"), "cargo test");
        assert_eq!(prefix("ls -la"), "ls");
        assert_eq!(prefix("cat notes.txt"), "cat");
        assert_eq!(prefix("python3 x.py"), "python3");
        assert_eq!(prefix("npm run build"), "npm run");
        assert_eq!(prefix("FOO=1 make"), "FOO=1 make");
        assert_eq!(prefix("make"), "make");
    }

    #[test]
    fn hostile_lines_cost_little() {
        let cwd = Path::new("/");
        let deep = format!("{}x{}", "$(".repeat(5000), ")".repeat(5000));
        assert!(matches!(
            analyse(&deep, cwd).hazards[..],
            [Hazard::Unreadable(_)]
        ));
        let long = "a ".repeat(40_000);
        assert!(matches!(
            analyse(&long, cwd).hazards[..],
            [Hazard::Unreadable(_)]
        ));
        // Keyword nesting overflows the parser's stack long before 5000.
        let ifs = format!(
            "{}true{}",
            "if true; then ".repeat(5000),
            "; fi".repeat(5000)
        );
        assert!(matches!(
            analyse(&ifs, cwd).hazards[..],
            [Hazard::Unreadable(_)]
        ));
        let loops = format!(
            "{}true{}",
            "while true;do ".repeat(5000),
            ";done".repeat(5000)
        );
        assert!(matches!(
            analyse(&loops, cwd).hazards[..],
            [Hazard::Unreadable(_)]
        ));
        // Within the bound, on a worker's 2 MiB stack, in a debug build.
        let ok = format!("{}true{}", "if (true); then ".repeat(20), "; fi".repeat(20));
        let done = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || analyse(&ok, Path::new("/")))
            .unwrap()
            .join()
            .unwrap();
        assert!(done.hazards.is_empty(), "{:?}", done.hazards);
        assert_eq!(nesting("if true; then while x; do (a); done; fi"), 3);
    }
}
