//! Which `bash` lines only read: what plan mode lets run. A line is
//! read-only when the shell parser sees every command it runs
//! (no substitution, `eval`, `sh -c` or computed name), no redirection
//! writes a file, and every command is one of a short list of readers
//! whose flags that write or run other programs are refused. Like the
//! rules, this judges the text of a line, not what a program does.

use crate::shell::{Analysis, Hazard, SimpleCommand};

/// Commands that read and print, whatever their arguments, except the
/// flags [`WRITING_FLAGS`] names for them.
const READERS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "find",
    "fd",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "stat",
    "file",
    "du",
    "df",
    "tree",
    "which",
    "type",
    "whoami",
    "id",
    "date",
    "uname",
    "diff",
    "cmp",
    "cut",
    "tr",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "nl",
    "sort",
    "uniq",
    "column",
    "od",
    "xxd",
    "hexdump",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "ps",
    "printenv",
    "hostname",
    "seq",
    "jq",
    "cd",
    "less",
    "more",
    "look",
    "comm",
    "paste",
    "fold",
    "expand",
    "rev",
    "tac",
    "strings",
];

/// Flags of a reader that write a file or run another program
/// (`find -exec`, `sort -o`, `rg --pre`, `fd -x`); a word that starts
/// with one refuses the line.
const WRITING_FLAGS: &[(&str, &[&str])] = &[
    (
        "find",
        &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls",
        ],
    ),
    ("fd", &["-x", "-X", "--exec", "--exec-batch"]),
    ("rg", &["--pre"]),
    ("sort", &["-o", "--output"]),
    ("tree", &["-o"]),
    ("printf", &["-v"]),
    ("less", &["-o", "-O", "--log-file", "--LOG-FILE"]),
];

/// `git` subcommands that only read (no global option may come before
/// them: `-c` can set a program to run).
const GIT_READERS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "grep",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "describe",
    "shortlog",
    "cat-file",
    "reflog",
];

/// Whether the line `analysis` read runs only commands that read.
pub fn read_only(analysis: &Analysis) -> bool {
    analysis.hazards.iter().all(|h| find_argument(analysis, h))
        && analysis.writes.is_empty()
        && !analysis.commands.is_empty()
        && analysis.commands.iter().all(reads_only)
}

/// A hazard the rules see only because `find` may run its arguments
/// (`find . -name x` reads `.` as `source`): without `-exec` (refused
/// below) they are paths and tests.
fn find_argument(analysis: &Analysis, hazard: &Hazard) -> bool {
    let Hazard::Eval(word) = hazard else {
        return false;
    };
    analysis
        .commands
        .iter()
        .filter(|c| c.name() == "find")
        .any(|c| c.words[c.first + 1..].contains(word))
}

/// Whether one simple command only reads. Leading assignments are fine
/// (`LC_ALL=C sort`); a line of assignments only changes nothing outside
/// the shell.
fn reads_only(command: &SimpleCommand) -> bool {
    let words = &command.words[command.first.min(command.words.len())..];
    let Some(name) = words.first() else {
        return true;
    };
    let args = &words[1..];
    if name == "git" {
        return git_reads_only(args);
    }
    if name == "sed" {
        // Printing only: `-n` with `p`, no in-place edit, no `w`/`e`
        // command can be told apart cheaply, so only `sed -n 'N,Mp' file`.
        return args.first().is_some_and(|a| a == "-n")
            && args.get(1).is_some_and(|script| {
                script
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, ',' | 'p' | '$' | ';'))
            });
    }
    if !READERS.contains(&name.as_str()) {
        return false;
    }
    if name == "uniq" && args.iter().filter(|a| !a.starts_with('-')).count() > 1 {
        // `uniq IN OUT` writes OUT.
        return false;
    }
    let refused = WRITING_FLAGS
        .iter()
        .find(|(n, _)| n == name)
        .map_or(&[][..], |(_, flags)| flags);
    let writes = |a: &String| {
        refused
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")))
            || (name == "sort" && a.starts_with("-o"))
    };
    !args.iter().any(writes)
}

/// `git SUBCOMMAND …` for a subcommand that reads, without options that
/// write a file (`--output`) or start a program of the user's choosing
/// (`--ext-diff`, `-O`/`--open-files-in-pager`); `git branch` only lists.
fn git_reads_only(args: &[String]) -> bool {
    let Some(sub) = args.first() else {
        return false;
    };
    let rest = &args[1..];
    let bad = |a: &String| {
        a.starts_with("--output")
            || a.starts_with("--ext-diff")
            || a.starts_with("-O")
            || a.starts_with("--open-files-in-pager")
    };
    if rest.iter().any(bad) {
        return false;
    }
    match sub.as_str() {
        "branch" | "tag" | "remote" | "stash" => {
            rest.iter().all(|a| {
                matches!(
                    a.as_str(),
                    "-a" | "-r" | "-v" | "-vv" | "--list" | "-l" | "--show-current" | "list"
                ) && !(sub == "stash" && a != "list")
            }) && (sub != "stash" || rest.first().is_some_and(|a| a == "list"))
        }
        s => GIT_READERS.contains(&s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::analyse;

    fn ro(line: &str) -> bool {
        let dir = tempfile::tempdir().unwrap();
        read_only(&analyse(line, dir.path()))
    }

    #[test]
    fn readers_run_and_writers_do_not() {
        for line in [
            "ls -la",
            "cat src/main.rs | head -20",
            "grep -rn foo src && wc -l x",
            "find . -name '*.rs'",
            "git status",
            "git log --oneline -5",
            "git diff HEAD~1 -- src",
            "git branch -a",
            "sed -n 1,20p file",
            "ls 2>/dev/null",
            "LC_ALL=C sort file",
            "cd src && ls",
        ] {
            let dir = tempfile::tempdir().unwrap();
            assert!(
                ro(line),
                "{line} should be read-only: {:?}",
                analyse(line, dir.path())
            );
        }
        for line in [
            "rm x",
            "rm -rf /",
            "echo hi > file",
            "cat a >> b",
            "ls &> out",
            "find . -delete",
            "find . -name x -exec rm {} +",
            ". ./script",
            "find . -exec rm {} ;",
            "sort -o out in",
            "sort -oout in",
            "git push",
            "git commit -m x",
            "git -c core.pager=sh log",
            "git diff --output=x",
            "git branch -D x",
            "git stash",
            "sed -i s/a/b/ f",
            "sed -n 'w out' f",
            "ls $(rm x)",
            "bash -c ls",
            "$CMD",
            "cargo build",
            "touch x",
            "uniq a b",
            "rg --pre sh x",
            "",
        ] {
            assert!(!ro(line), "{line} should not be read-only");
        }
    }
}
