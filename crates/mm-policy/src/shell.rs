//! What a `bash` command line will run, read with a real shell parser
//! (`brush-parser`), not a regular expression: every simple command of its
//! lists, pipelines, groups, loops and functions; the other ways bash may
//! read its words (braces expanded, ANSI-C quoting decoded, variables the
//! line sets substituted and split, unknown expansions empty), tried by
//! deny and ask rules; the constructs whose effect the rules cannot see
//! (substitutions, `eval`, `sh -c`, a shell fed on its input, a computed
//! or pattern command name, anything that makes bash evaluate a variable's
//! value, a command line that does not parse); and the redirections that
//! write outside the working directory.

mod commands;
mod words;

use std::collections::HashMap;
use std::io::Cursor;
use std::path::{Component, Path, PathBuf};

use brush_parser::ast;
use brush_parser::word::{
    self, Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource,
};
use brush_parser::{Parser, ParserOptions};

use commands::{ShellInput, base, is_wrapper};
use words::{Fields, ansi_c, inert_arithmetic};

/// Command lines longer than this are not parsed (a hostile line must not
/// cost time or stack); they count as unreadable.
const MAX_LEN: usize = 64 * 1024;

/// Deeper nesting of brackets, substitutions or compound commands than this
/// is not parsed, for the same reason.
const MAX_DEPTH: usize = 48;

/// The further readings of a command keep its first this many words.
const MAX_READ_WORDS: usize = 256;

/// A wrapper's words are tried from each of its first this many words on
/// (`sudo -u x rm …` as `rm …`).
const MAX_TAILS: usize = 32;

/// At most this many values of one variable are tried (`for c in …`).
const MAX_VALUES: usize = 8;

/// Symlinks followed for one path before giving up, as the kernel does.
const MAX_LINKS: usize = 40;

/// Files a redirection may name without counting as a write outside.
const HARMLESS_TARGETS: &[&str] = &["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"];

/// A construct the rules cannot judge by reading the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hazard {
    /// `$(...)` or `` `...` ``.
    CommandSubstitution,
    /// `<(...)` or `>(...)`.
    ProcessSubstitution,
    /// `eval`, `source` or `.`, `trap`, `alias`, a variable bash runs as
    /// code: code from a string or a file.
    Eval(String),
    /// `bash -c '...'` and the like.
    NestedShell(String),
    /// A shell that reads its commands from its input (`… | sh`,
    /// `bash < file`, `sh <<< '…'`).
    ShellInput(String),
    /// The command name comes from an expansion (`$CMD args`).
    ComputedCommand,
    /// The command name is a glob pattern (`/bin/r[m]`).
    PatternCommand,
    /// Bash evaluates what a variable holds, which may run commands: an
    /// indirect or prompt expansion, arithmetic, an array subscript, a
    /// builtin given a variable name. In words.
    Evaluates(String),
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
            Hazard::ShellInput(name) => format!("{name} reads its commands from its input"),
            Hazard::ComputedCommand => "the command name is computed".to_owned(),
            Hazard::PatternCommand => "the command name is a pattern".to_owned(),
            Hazard::Evaluates(what) => format!("{what} can run what a variable holds"),
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
    /// Its words without quoting (ANSI-C quoting decoded; assignments
    /// included; expansions as written).
    pub words: Vec<String>,
    /// The index of the command word in `words` (after `NAME=value`s);
    /// `words.len()` for a line of assignments only.
    pub first: usize,
    /// Found inside a substitution, `eval`, `sh -c` or text fed to a
    /// shell: judged by deny and ask rules, never recorded as a session
    /// rule.
    pub hidden: bool,
    /// The first redirection target outside the working directory, or
    /// whose place is unknown.
    pub writes_outside: Option<String>,
    /// Other ways bash may read the words from the command word on:
    /// braces expanded, variables the line sets substituted and split at
    /// `IFS`, unknown expansions kept as written or empty. Deny and ask
    /// rules are tried on each.
    pub readings: Vec<Vec<String>>,
}

impl SimpleCommand {
    /// The command word, without quoting; `""` for assignments only.
    pub fn name(&self) -> &str {
        self.words.get(self.first).map_or("", String::as_str)
    }

    /// The readings deny and ask rules are tried on, command word first:
    /// the words without quoting and leading assignments, the other
    /// [`readings`](Self::readings), each also with the command's path cut
    /// to its name (`/bin/rm` → `rm`), and for wrappers every tail of the
    /// words.
    pub fn strict_readings(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let plain = self.words[self.first.min(self.words.len())..].to_vec();
        add_reading(&mut out, plain);
        for r in &self.readings {
            add_reading(&mut out, r.clone());
        }
        out
    }

    /// The texts deny and ask rules are tried on as globs: as written,
    /// without quoting (assignments included), and each strict reading.
    pub fn strict_texts(&self) -> Vec<String> {
        let mut texts = vec![self.raw.clone(), self.words.join(" ")];
        for r in self.strict_readings() {
            let t = r.join(" ");
            if !texts.contains(&t) {
                texts.push(t);
            }
        }
        texts
    }

    /// The strict readings whose command word is a glob (`r[m]`, `/bin/r?`)
    /// that matches `name`, with `name` in its place: how a deny rule for
    /// `name` reads a command whose name is a pattern.
    pub fn readings_named(&self, name: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for mut r in self.strict_readings() {
            let pattern = base(&r[0]);
            if !pattern.contains(['*', '?', '[']) {
                continue;
            }
            let matches = globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .is_ok_and(|g| g.compile_matcher().is_match(name));
            if matches {
                r[0] = name.to_owned();
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
        out
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

/// Adds `reading` and, for a wrapper, its tails where the command it runs
/// may start (the tails of a tail are among them; each at most
/// [`MAX_READ_WORDS`] long), each also with the command's path cut; each
/// once.
fn add_reading(out: &mut Vec<Vec<String>>, reading: Vec<String>) {
    let wrapper = reading.first().is_some_and(|n| is_wrapper(n));
    if wrapper {
        for i in commands::tail_starts(&reading[1..], MAX_TAILS) {
            let tail = &reading[1 + i..];
            add_one(out, tail[..tail.len().min(MAX_READ_WORDS)].to_vec());
        }
    }
    add_one(out, reading);
}

fn add_one(out: &mut Vec<Vec<String>>, reading: Vec<String>) {
    let Some(name) = reading.first() else {
        return;
    };
    let short = base(name);
    if short != name {
        let mut cut = reading.clone();
        cut[0] = short.to_owned();
        if !out.contains(&cut) {
            out.push(cut);
        }
    }
    if !out.contains(&reading) {
        out.push(reading);
    }
}

/// What a command line will run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command, in order of appearance.
    pub commands: Vec<SimpleCommand>,
    /// What the rules cannot see, in order of appearance.
    pub hazards: Vec<Hazard>,
    /// Files the line's redirections write (inside the working directory
    /// or not; devices like `/dev/null` left out): a line that writes one
    /// is not read-only.
    pub writes: Vec<String>,
}

/// A write target that is a harmless device (`/dev/null`, a descriptor),
/// not a file: writing it changes nothing.
fn is_device(target: &WordInfo) -> bool {
    !target.expands
        && !target.glob
        && !target.braces
        && (HARMLESS_TARGETS.contains(&target.plain.as_str())
            || target.plain.starts_with("/dev/fd/"))
}

/// Reads `line` as bash would, for a command run in `cwd`.
pub fn analyse(line: &str, cwd: &Path) -> Analysis {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut walker = Walker {
        cwd,
        out: Analysis::default(),
        changed_dir: false,
        vars: HashMap::new(),
        feed: None,
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
    /// The values the line gives variables (`x=rm`, `for c in ls rm`), as
    /// far as they are literal.
    vars: HashMap<String, Vec<String>>,
    /// Text known to be piped into the command being walked
    /// (`echo 'rm x' | sh`).
    feed: Option<String>,
}

/// What one word holds.
#[derive(Default)]
struct WordInfo {
    plain: String,
    /// Parameter, arithmetic, tilde or command expansion: its value is not
    /// known before it runs.
    expands: bool,
    /// Unquoted glob characters: bash replaces the word by the files it
    /// matches.
    glob: bool,
    /// An unquoted brace expansion.
    braces: bool,
}

/// What the walk keeps of one word of a simple command.
struct WordFacts {
    raw: String,
    expands: bool,
}

/// What a redirection does.
#[derive(Default)]
struct Redirected {
    /// Its target, when it writes outside the working directory or
    /// somewhere unknown.
    outside: Option<String>,
    /// The text of a here-string or here-document: a command's input.
    fed: Option<String>,
}

impl Walker {
    fn hazard(&mut self, h: Hazard) {
        if !self.out.hazards.contains(&h) {
            self.out.hazards.push(h);
        }
    }

    fn evaluates(&mut self, what: &str) {
        self.hazard(Hazard::Evaluates(what.to_owned()));
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

    /// Walks the commands of a pipeline; what `echo` or `printf` writes
    /// into the pipe is the next command's known input.
    fn pipeline(
        &mut self,
        pipeline: &ast::Pipeline,
        hidden: bool,
        outside: Option<&str>,
        depth: usize,
    ) {
        let outer = self.feed.take();
        let mut feed = outer.clone();
        for command in &pipeline.seq {
            self.feed = feed.take();
            let before = self.out.commands.len();
            self.command(command, hidden, outside, depth + 1);
            if matches!(command, ast::Command::Simple(_)) && self.out.commands.len() > before {
                feed = self.out.commands.last().and_then(|c| {
                    let args = &c.words[(c.first + 1).min(c.words.len())..];
                    commands::printed_text(c.name(), args)
                });
            }
        }
        self.feed = outer;
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
            let found = self.redirect(r, hidden, depth).outside;
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
            E::UnaryTest(predicate, w) => {
                let info = self.word(&w.value, hidden, depth);
                let names_variable = matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                        | ast::UnaryPredicate::ShellVariableIsSetAndNameRef
                );
                if names_variable && (info.expands || w.value.contains('[')) {
                    self.evaluates("an array subscript in [[ -v ]]");
                }
            }
            E::BinaryTest(predicate, a, b) => {
                use ast::BinaryPredicate as B;
                let arithmetic = matches!(
                    predicate,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                for w in [a, b] {
                    let info = self.word(&w.value, hidden, depth);
                    if arithmetic && (info.expands || !inert_arithmetic(&info.plain)) {
                        self.evaluates("arithmetic in [[ ]]");
                    }
                }
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
                let mut values = Vec::new();
                let mut known = true;
                for w in f.values.iter().flatten() {
                    let info = self.word(&w.value, hidden, depth);
                    if info.expands {
                        known = false;
                    } else {
                        values.extend(self.expand_word(&w.value, 0, false));
                    }
                }
                values.truncate(MAX_VALUES);
                if known && !values.is_empty() {
                    self.vars.insert(f.variable_name.clone(), values);
                } else {
                    self.vars.remove(&f.variable_name);
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

    /// Arithmetic bash evaluates: anything but numbers and operators reads
    /// a variable's value as arithmetic in turn; substitutions inside run.
    fn arithmetic(&mut self, expr: &str, hidden: bool, depth: usize) {
        if !inert_arithmetic(expr) {
            self.evaluates("arithmetic");
        }
        if expr.contains('$') || expr.contains('`') {
            // `$(( $(rm x) ))`: read the expression as a word to find it.
            self.nested_word(&format!("\"{expr}\""), hidden, depth);
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
        let mut facts = Vec::new();
        let mut fed = Vec::new();
        let mut assigned: Vec<(String, Option<String>)> = Vec::new();
        let mut first = None;
        let mut computed = false;
        let mut pattern = false;
        let mut writes_outside = outside.map(str::to_owned);
        let mut item = |w: &mut Self, it: &ast::CommandPrefixOrSuffixItem, assigning: bool| {
            use ast::CommandPrefixOrSuffixItem as I;
            match it {
                I::IoRedirect(r) => {
                    let found = w.redirect(r, hidden, depth);
                    if writes_outside.is_none() {
                        writes_outside = found.outside;
                    }
                    fed.extend(found.fed);
                }
                I::AssignmentWord(assignment, word) => {
                    let info = w.word(&word.value, hidden, depth);
                    raw.push(word.value.clone());
                    words.push(info.plain);
                    facts.push(WordFacts {
                        raw: word.value.clone(),
                        expands: info.expands,
                    });
                    assigned.push(w.assignment(assignment, hidden, depth));
                }
                I::Word(word) => {
                    let info = w.word(&word.value, hidden, depth);
                    raw.push(word.value.clone());
                    words.push(info.plain);
                    facts.push(WordFacts {
                        raw: word.value.clone(),
                        expands: info.expands,
                    });
                    if !assigning && first.is_none() {
                        first = Some(words.len() - 1);
                        computed = info.expands;
                        pattern = info.glob;
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
        if computed {
            self.hazard(Hazard::ComputedCommand);
        }
        if pattern {
            self.hazard(Hazard::PatternCommand);
        }
        for w in &words {
            if let Some(name) = commands::code_variable(w) {
                self.hazard(Hazard::Eval(name.to_owned()));
            }
        }
        let readings = self.readings(&raw[first..]);
        let command = SimpleCommand {
            raw: raw.join(" "),
            words,
            first,
            hidden,
            writes_outside,
            readings,
        };
        self.special(&command, &facts, &fed, depth);
        if first == command.words.len() {
            for (name, value) in assigned {
                self.set(name, value);
            }
        }
        self.out.commands.push(command);
    }

    /// Records what a variable now holds: a literal value, or unknown.
    fn set(&mut self, name: String, value: Option<String>) {
        match value {
            Some(v) => {
                self.vars.insert(name, vec![v]);
            }
            None => {
                self.vars.remove(&name);
            }
        }
    }

    /// Judges an assignment word's subscripts; returns the variable's name
    /// and its value when the value is literal.
    fn assignment(
        &mut self,
        assignment: &ast::Assignment,
        hidden: bool,
        depth: usize,
    ) -> (String, Option<String>) {
        let name = match &assignment.name {
            ast::AssignmentName::VariableName(n) => n.clone(),
            ast::AssignmentName::ArrayElementName(n, index) => {
                if !inert_arithmetic(index) {
                    self.evaluates("an array subscript");
                }
                self.nested_word(index, hidden, depth);
                n.clone()
            }
        };
        let value = match &assignment.value {
            ast::AssignmentValue::Scalar(w) => {
                let info = self.word(&w.value, hidden, depth);
                (!info.expands && !assignment.append).then_some(info.plain)
            }
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key {
                        if !inert_arithmetic(&key.value) {
                            self.evaluates("an array subscript");
                        }
                        self.nested_word(&key.value, hidden, depth);
                    }
                    self.word(&value.value, hidden, depth);
                }
                None
            }
        };
        (name, value)
    }

    /// The other readings of a command's words (from the command word on):
    /// for each value tried of the variables the line sets, with unknown
    /// expansions as written and as empty.
    fn readings(&self, raw: &[String]) -> Vec<Vec<String>> {
        if raw.is_empty() {
            return Vec::new();
        }
        let tries = self
            .vars
            .values()
            .map(Vec::len)
            .max()
            .unwrap_or(1)
            .clamp(1, MAX_VALUES);
        let mut out: Vec<Vec<String>> = Vec::new();
        for k in 0..tries {
            for empty in [false, true] {
                let reading: Vec<String> = raw
                    .iter()
                    .take(MAX_READ_WORDS)
                    .flat_map(|w| self.expand_word(w, k, empty))
                    .take(MAX_READ_WORDS)
                    .collect();
                if !reading.is_empty() && !out.contains(&reading) {
                    out.push(reading);
                }
            }
        }
        out
    }

    /// The fields one word may become: braces expanded, then each
    /// expansion as far as the line tells (try `k` of a variable's values;
    /// unknown ones as written, or dropped when `empty`).
    fn expand_word(&self, raw: &str, k: usize, empty: bool) -> Vec<String> {
        let mut out = Vec::new();
        for variant in words::brace_expand(raw) {
            match word::parse(&variant, &ParserOptions::default()) {
                Ok(pieces) => {
                    let mut fields = Fields::default();
                    self.expand_pieces(&variant, &pieces, false, k, empty, &mut fields);
                    out.extend(fields.finish());
                }
                Err(_) => out.push(variant),
            }
        }
        out
    }

    fn expand_pieces(
        &self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        k: usize,
        empty: bool,
        fields: &mut Fields,
    ) {
        for p in pieces {
            let source = raw.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => fields.push(t),
                WordPiece::AnsiCQuotedText(t) => fields.push(&ansi_c(t)),
                WordPiece::EscapeSequence(t) => fields.push(t.strip_prefix('\\').unwrap_or(t)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    fields.quoted();
                    self.expand_pieces(raw, inner, true, k, empty, fields);
                }
                WordPiece::TildeExpansion(_) => fields.push("~"),
                WordPiece::ParameterExpansion(expr) => match self.known(expr, k) {
                    Some(value) if quoted => fields.push(&value),
                    Some(value) => {
                        let ifs = self.value("IFS", k).unwrap_or_default();
                        fields.split(&value, &ifs);
                    }
                    None if empty => {}
                    None => fields.push(source),
                },
                WordPiece::CommandSubstitution(_)
                | WordPiece::BackquotedCommandSubstitution(_)
                | WordPiece::ArithmeticExpression(_) => {
                    if !empty {
                        fields.push(source);
                    }
                }
            }
        }
    }

    /// The value `k` of a variable the line sets; `IFS` is a space, a tab
    /// and a newline unless the line sets it.
    fn value(&self, name: &str, k: usize) -> Option<String> {
        match self.vars.get(name) {
            Some(values) if !values.is_empty() => Some(values[k % values.len()].clone()),
            _ => (name == "IFS").then(|| " \t\n".to_owned()),
        }
    }

    /// What a plain expansion (`$x`, `${x}`, `${x:-default}`) gives, when
    /// the line tells.
    fn known(&self, expr: &ParameterExpr, k: usize) -> Option<String> {
        match expr {
            ParameterExpr::Parameter {
                parameter: Parameter::Named(n),
                indirect: false,
            } => self.value(n, k),
            ParameterExpr::UseDefaultValues {
                parameter: Parameter::Named(n),
                indirect: false,
                default_value,
                ..
            } => self.value(n, k).filter(|v| !v.is_empty()).or_else(|| {
                Some(
                    self.expand_word(default_value.as_deref()?, k, true)
                        .join(" "),
                )
            }),
            _ => None,
        }
    }

    /// `cd`, `eval`, `source`, shells, builtins that evaluate names or run
    /// code; for a wrapper, also what it runs, as a command of its own
    /// from each of its first words on (`sudo sh -c '…'`).
    fn special(
        &mut self,
        command: &SimpleCommand,
        facts: &[WordFacts],
        fed: &[String],
        depth: usize,
    ) {
        self.special_one(command, facts, fed, depth);
        if !is_wrapper(command.name()) {
            return;
        }
        let start = (command.first + 1).min(command.words.len());
        for i in commands::tail_starts(&command.words[start..], MAX_TAILS) {
            let i = start + i;
            let end = command.words.len().min(i + MAX_READ_WORDS);
            let tail = SimpleCommand {
                raw: command.words[i..end].join(" "),
                words: command.words[i..end].to_vec(),
                first: 0,
                hidden: true,
                writes_outside: None,
                readings: Vec::new(),
            };
            self.special_one(&tail, facts.get(i..).unwrap_or_default(), fed, depth + 1);
        }
    }

    fn special_one(
        &mut self,
        command: &SimpleCommand,
        facts: &[WordFacts],
        fed: &[String],
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.hazard(Hazard::Unreadable("nested too deeply".to_owned()));
            return;
        }
        let name = command.name();
        let name_base = base(name);
        let start = (command.first + 1).min(command.words.len());
        let args = &command.words[start..];
        let arg_facts = facts.get(start..).unwrap_or_default();
        let expands = |i: usize| arg_facts.get(i).is_some_and(|f| f.expands);
        let raw_arg = |i: usize| {
            arg_facts
                .get(i)
                .map_or(args[i].as_str(), |f| f.raw.as_str())
        };
        match name_base {
            "cd" | "pushd" | "popd" => self.changed_dir = true,
            "eval" => {
                self.hazard(Hazard::Eval("eval".to_owned()));
                self.line(&args.join(" "), true, depth + 1);
            }
            "source" | "." => self.hazard(Hazard::Eval(name_base.to_owned())),
            "let" if (0..args.len()).any(|i| expands(i) || !inert_arithmetic(&args[i])) => {
                self.evaluates("let");
            }
            "declare" | "typeset" | "local" | "export" | "readonly" => {
                for i in 0..args.len() {
                    let a = &args[i];
                    if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
                        let attributes = &a[1..];
                        if name_base != "export" && attributes.contains(['i', 'n']) {
                            self.evaluates(&format!("{name_base} -i or -n"));
                        }
                        continue;
                    }
                    let raw = raw_arg(i);
                    let (raw_name, raw_value) = match raw.split_once('=') {
                        Some((n, v)) => (n, Some(v)),
                        None => (raw, None),
                    };
                    if raw_name.contains('[') || raw_value.is_some_and(|v| v.contains('[')) {
                        self.evaluates("an array subscript");
                    }
                    if raw_name.contains(['$', '`']) {
                        self.evaluates(&format!("{name_base} of a computed name"));
                    }
                    if let Some((n, v)) = a.split_once('=') {
                        let literal = !expands(i) && raw_value.is_some();
                        self.set(n.to_owned(), literal.then(|| v.to_owned()));
                    }
                }
            }
            "trap" => {
                let mut rest = args
                    .iter()
                    .skip_while(|a| a.starts_with('-') && a.len() > 1);
                if let (Some(action), true) = (rest.next(), args.len() >= 2)
                    && !action.is_empty()
                    && action != "-"
                {
                    self.hazard(Hazard::Eval("trap".to_owned()));
                    self.line(action, true, depth + 1);
                }
            }
            "alias" => {
                for a in args {
                    if let Some((_, value)) = a.split_once('=') {
                        self.hazard(Hazard::Eval("alias".to_owned()));
                        self.line(value, true, depth + 1);
                    }
                }
            }
            "enable" if args.iter().any(|a| a.starts_with('-') && a.contains('f')) => {
                self.hazard(Hazard::Eval("enable -f".to_owned()));
            }
            _ if commands::SHELLS.contains(&name_base) => match commands::shell_input(args) {
                ShellInput::Line(script) => {
                    self.hazard(Hazard::NestedShell(name_base.to_owned()));
                    self.line(script, true, depth + 1);
                }
                ShellInput::Stdin => {
                    self.hazard(Hazard::ShellInput(name_base.to_owned()));
                    let piped = self.feed.clone();
                    for text in fed.iter().chain(piped.as_ref()) {
                        self.line(text, true, depth + 1);
                    }
                }
                ShellInput::Script => {}
            },
            _ => {}
        }
        for i in commands::name_arguments(name_base, args) {
            if expands(i) || raw_arg(i).contains('[') {
                self.evaluates(&format!("the variable name given to {name_base}"));
            }
        }
        if let Some(code) = commands::callback_option(name_base, args) {
            self.hazard(Hazard::Eval(format!("{name_base} -C")));
            self.line(&code, true, depth + 1);
        }
        if let Some(line) = commands::wrapped_line(name_base, args) {
            self.hazard(Hazard::NestedShell(name_base.to_owned()));
            self.line(&line, true, depth + 1);
        }
    }

    /// Judges one redirection: whether it writes outside the working
    /// directory (or somewhere unknown), and the text it feeds.
    fn redirect(&mut self, r: &ast::IoRedirect, hidden: bool, depth: usize) -> Redirected {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match r {
            ast::IoRedirect::File(_, kind, target) => {
                let writes = !matches!(kind, K::Read | K::DuplicateInput);
                let outside = match target {
                    T::Filename(w) => {
                        let info = self.word(&w.value, hidden, depth);
                        if writes && !is_device(&info) {
                            self.out.writes.push(w.value.clone());
                        }
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
                };
                Redirected { outside, fed: None }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    match word::parse_heredoc(&doc.doc.value, &ParserOptions::default()) {
                        Ok(pieces) => {
                            let mut info = WordInfo::default();
                            self.pieces(&doc.doc.value, &pieces, true, &mut info, hidden, depth);
                        }
                        Err(e) => self.hazard(Hazard::Unreadable(e.to_string())),
                    }
                }
                Redirected {
                    outside: None,
                    fed: Some(doc.doc.value.clone()),
                }
            }
            ast::IoRedirect::HereString(_, w) => {
                let info = self.word(&w.value, hidden, depth);
                Redirected {
                    outside: None,
                    fed: Some(info.plain),
                }
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let info = self.word(&w.value, hidden, depth);
                if !is_device(&info) {
                    self.out.writes.push(w.value.clone());
                }
                Redirected {
                    outside: (!self.harmless(&info)).then(|| w.value.clone()),
                    fed: None,
                }
            }
        }
    }

    /// A write target known to stay inside the working directory (or to be
    /// a harmless device), once every symlink on its way is followed,
    /// dangling ones included. A target that expands, is a glob or has
    /// braces is somewhere unknown.
    fn harmless(&self, target: &WordInfo) -> bool {
        if target.expands || target.glob || target.braces {
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

    /// Reads one word: its text without quoting, whether it expands, is a
    /// glob or has braces, and (recorded as hazards, their commands as
    /// hidden ones) the substitutions and evaluations inside it.
    fn word(&mut self, raw: &str, hidden: bool, depth: usize) -> WordInfo {
        let mut info = WordInfo::default();
        match word::parse(raw, &ParserOptions::default()) {
            Ok(pieces) => self.pieces(raw, &pieces, false, &mut info, hidden, depth),
            Err(_) => {
                // The shell would refuse it too; keep the text as written.
                info.plain = raw.to_owned();
                info.expands = true;
                self.hazard(Hazard::Unreadable(format!("cannot read the word {raw}")));
            }
        }
        info.braces = words::has_braces(raw);
        info
    }

    /// A word inside an expansion (`${x:-WORD}`, a subscript): its hazards
    /// only. One that does not parse is judged by its text.
    fn nested_word(&mut self, raw: &str, hidden: bool, depth: usize) {
        match word::parse(raw, &ParserOptions::default()) {
            Ok(pieces) => {
                let mut info = WordInfo::default();
                self.pieces(raw, &pieces, false, &mut info, hidden, depth);
            }
            Err(_) if raw.contains("$(") || raw.contains('`') => {
                self.hazard(Hazard::CommandSubstitution);
            }
            Err(_) => {}
        }
    }

    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        info: &mut WordInfo,
        hidden: bool,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.hazard(Hazard::Unreadable("nested too deeply".to_owned()));
            return;
        }
        for p in pieces {
            let source = raw.get(p.start_index..p.end_index).unwrap_or("");
            match &p.piece {
                WordPiece::Text(t) => {
                    info.glob |= !quoted && words::is_glob(t, raw);
                    info.plain.push_str(t);
                }
                WordPiece::SingleQuotedText(t) => info.plain.push_str(t),
                WordPiece::AnsiCQuotedText(t) => info.plain.push_str(&ansi_c(t)),
                WordPiece::EscapeSequence(t) => {
                    info.plain.push_str(t.strip_prefix('\\').unwrap_or(t));
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(raw, inner, true, info, hidden, depth + 1);
                }
                WordPiece::TildeExpansion(_) => {
                    info.expands = true;
                    info.plain.push('~');
                }
                WordPiece::CommandSubstitution(inner)
                | WordPiece::BackquotedCommandSubstitution(inner) => {
                    info.expands = true;
                    info.plain.push_str(source);
                    self.hazard(Hazard::CommandSubstitution);
                    self.line(inner, true, depth + 1);
                }
                WordPiece::ArithmeticExpression(expr) => {
                    info.expands = true;
                    info.plain.push_str(source);
                    self.arithmetic(&expr.value, hidden, depth + 1);
                }
                WordPiece::ParameterExpansion(expr) => {
                    info.expands = true;
                    info.plain.push_str(source);
                    self.parameter(expr, source, hidden, depth + 1);
                }
            }
        }
    }

    /// The hazards of one parameter expansion: indirection, prompt
    /// expansion, arithmetic offsets, subscripts, and whatever the words
    /// inside it hold.
    fn parameter(&mut self, expr: &ParameterExpr, source: &str, hidden: bool, depth: usize) {
        use ParameterExpr as P;
        let (parameter, indirect, inner): (Option<&Parameter>, bool, Vec<&str>) = match expr {
            P::Parameter {
                parameter,
                indirect,
            }
            | P::ParameterLength {
                parameter,
                indirect,
            }
            | P::Transform {
                parameter,
                indirect,
                ..
            } => (Some(parameter), *indirect, Vec::new()),
            P::UseDefaultValues {
                parameter,
                indirect,
                default_value: word,
                ..
            }
            | P::AssignDefaultValues {
                parameter,
                indirect,
                default_value: word,
                ..
            }
            | P::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                error_message: word,
                ..
            }
            | P::UseAlternativeValue {
                parameter,
                indirect,
                alternative_value: word,
                ..
            }
            | P::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                pattern: word,
            }
            | P::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                pattern: word,
            }
            | P::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                pattern: word,
            }
            | P::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                pattern: word,
            }
            | P::UppercaseFirstChar {
                parameter,
                indirect,
                pattern: word,
            }
            | P::UppercasePattern {
                parameter,
                indirect,
                pattern: word,
            }
            | P::LowercaseFirstChar {
                parameter,
                indirect,
                pattern: word,
            }
            | P::LowercasePattern {
                parameter,
                indirect,
                pattern: word,
            } => (
                Some(parameter),
                *indirect,
                word.iter().map(String::as_str).collect(),
            ),
            P::ReplaceSubstring {
                parameter,
                indirect,
                pattern,
                replacement,
                ..
            } => {
                let mut inner = vec![pattern.as_str()];
                inner.extend(replacement.as_deref());
                (Some(parameter), *indirect, inner)
            }
            P::Substring {
                parameter,
                indirect,
                offset,
                length,
            } => {
                for e in std::iter::once(offset).chain(length) {
                    self.arithmetic(&e.value, hidden, depth);
                }
                (Some(parameter), *indirect, Vec::new())
            }
            P::VariableNames { .. } | P::MemberKeys { .. } => (None, false, Vec::new()),
        };
        if indirect {
            self.evaluates("indirect expansion ${!…}");
        }
        if let P::Transform {
            op: ParameterTransformOp::PromptExpand,
            ..
        } = expr
        {
            self.evaluates("prompt expansion ${…@P}");
        }
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
            if !inert_arithmetic(index) {
                self.evaluates("an array subscript");
            }
            self.nested_word(index, hidden, depth);
        }
        for w in inner {
            self.nested_word(w, hidden, depth);
        }
        if source.contains("<(") || source.contains(">(") {
            self.hazard(Hazard::ProcessSubstitution);
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
/// every symlink on its way is followed: a link in the working directory
/// that points outside leads outside, even when its target does not exist
/// yet. `root` must be canonical.
pub fn inside(root: &Path, path: &Path) -> bool {
    resolve(root, path).starts_with(root)
}

/// `path` made absolute against `base`, with `.` and `..` applied and every
/// symlink on its way followed, component by component, as the kernel
/// does when it opens the path: `link/..` is the parent of the link's
/// target, and a dangling link, the last component included, leads to
/// where its target would be (where a write through it creates the file).
/// `base` must be canonical.
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    let mut links = 0;
    follow(base, path, &mut links)
}

fn follow(base: &Path, path: &Path, links: &mut usize) -> PathBuf {
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
                let link =
                    std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
                current = match std::fs::read_link(&next) {
                    Ok(target) if link && *links < MAX_LINKS => {
                        *links += 1;
                        follow(&current, &target, links)
                    }
                    _ => next,
                };
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
        // A dangling link leads where its target would be.
        std::os::unix::fs::symlink("/nonexistent/x", cwd.join("dangling")).unwrap();
        assert_eq!(outside("ls > dangling").as_deref(), Some("dangling"));
        std::os::unix::fs::symlink("new.txt", cwd.join("fresh")).unwrap();
        assert_eq!(outside("ls > fresh"), None);
        // A glob or braces: the file is not known.
        assert_eq!(outside("ls > f*").as_deref(), Some("f*"));
        assert_eq!(outside("ls > {a,}").as_deref(), Some("{a,}"));
        assert_eq!(outside("ls > 'f*'"), None);
        // A loop of links ends.
        std::os::unix::fs::symlink("loop", cwd.join("loop")).unwrap();
        assert_eq!(outside("ls > loop"), None);
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
    fn readings_expand_braces_quotes_and_what_the_line_sets() {
        let cwd = Path::new("/");
        let readings = |line: &str| {
            let a = analyse(line, cwd);
            a.commands.last().unwrap().strict_readings()
        };
        let has = |line: &str, words: &[&str]| {
            let r = readings(line);
            assert!(r.iter().any(|w| w == words), "{line}: {r:?}");
        };
        has("{rm,-rf,x}", &["rm", "-rf", "x"]);
        has("$'\\x72m' -rf x", &["rm", "-rf", "x"]);
        has("rm$IFS-rf x", &["rm", "-rf", "x"]);
        has("x=rm; $x -rf y", &["rm", "-rf", "y"]);
        has("IFS=,; c=rm,-rf; $c y", &["rm", "-rf", "y"]);
        has("for c in ls rm; do $c -rf y; done", &["rm", "-rf", "y"]);
        has("r${none}m -rf x", &["rm", "-rf", "x"]);
        has("\"${none:-rm}\" -rf x", &["rm", "-rf", "x"]);
        has("sudo -u root /bin/rm -rf x", &["rm", "-rf", "x"]);
        // Quoted, an expansion is one word.
        has("x='rm -rf'; \"$x\" y", &["rm -rf", "y"]);
        // A value the line computes is not known.
        let r = readings("x=$(date); $x -rf y");
        assert!(r.iter().all(|w| w[0] != "rm"), "{r:?}");
    }

    #[test]
    fn what_bash_evaluates_is_a_hazard() {
        let cwd = Path::new("/");
        let evaluates = |line: &str| {
            analyse(line, cwd)
                .hazards
                .iter()
                .any(|h| matches!(h, Hazard::Evaluates(_)))
        };
        for line in [
            "echo ${!x}",
            "echo ${x@P}",
            "echo $[x]",
            "echo $((x + 1))",
            "echo ${a[x]}",
            "echo ${x:x}",
            "((x))",
            "[[ x -eq 0 ]]",
            "[[ -v a[x] ]]",
            "a[x]=1",
            "a=([x]=1)",
            "let x",
            "declare -i y",
            "printf -v \"$v\" x",
            "read 'a[x]'",
            "unset \"$v\"",
            "echo \"${y:-${!x}}\"",
        ] {
            assert!(evaluates(line), "{line}: {:?}", analyse(line, cwd).hazards);
        }
        for line in [
            "echo $x ${x:-a} ${#x} $((1+2)) ${a[0]} ${a[@]} ${!a[@]} ${!pre@} ${x:1:2}",
            "((1 < 2))",
            "[[ $x == y ]]",
            "declare x=1",
            "export PATH=\"$HOME/bin:$PATH\"",
            "read -r line",
            "printf '%s' \"$x\"",
            "a[0]=1",
        ] {
            assert!(!evaluates(line), "{line}: {:?}", analyse(line, cwd).hazards);
        }
    }

    #[test]
    fn shells_fed_on_their_input_and_code_in_strings() {
        let cwd = Path::new("/");
        let a = analyse("echo 'rm -rf x' | sh", cwd);
        assert_eq!(a.hazards, [Hazard::ShellInput("sh".into())]);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x" && c.hidden));
        let a = analyse("bash <<< 'rm -rf x'", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x" && c.hidden));
        let a = analyse("cat x | bash -s", cwd);
        assert_eq!(a.hazards, [Hazard::ShellInput("bash".into())]);
        let a = analyse("sh -c -- 'rm -rf x'", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x"));
        let a = analyse("sudo sh -c 'ls; rm -rf x'", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x"), "{a:?}");
        let a = analyse("script -qc 'rm -rf x' log", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x"));
        let a = analyse("trap 'rm -rf x' EXIT; alias l='rm -rf y'", cwd);
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf x"));
        assert!(a.commands.iter().any(|c| c.raw == "rm -rf y"));
        let a = analyse("PS4='$(rm x)' bash -xc true", cwd);
        assert!(a.hazards.contains(&Hazard::Eval("PS4".into())));
        let a = analyse("/bin/r[m] -rf x", cwd);
        assert_eq!(a.hazards, [Hazard::PatternCommand]);
        assert_eq!(a.commands[0].readings_named("rm")[0], ["rm", "-rf", "x"]);
        assert!(analyse("'r*' x", cwd).hazards.is_empty());
        assert!(analyse("bash script.sh", cwd).hazards.is_empty());
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
        // Wrappers of wrappers, braces, and many values: bounded readings.
        let sudo = format!("{}rm -rf x", "sudo ".repeat(10_000));
        let a = analyse(&sudo, cwd);
        let readings = a.commands[0].strict_readings();
        assert!(readings.iter().any(|r| r == &["rm", "-rf", "x"]));
        assert!(readings.len() <= 2 * MAX_TAILS + 2);
        let braces = format!("sudo {}", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l} ".repeat(500));
        let a = analyse(&braces, cwd);
        assert!(
            a.commands[0]
                .readings
                .iter()
                .all(|r| r.len() <= MAX_READ_WORDS)
        );
        let values = format!(
            "for x in {}; do for y in {}; do $x $y; done; done",
            "a ".repeat(5000),
            "b ".repeat(5000)
        );
        assert!(analyse(&values, cwd).commands[0].readings.len() <= 2 * MAX_VALUES);
    }
}
