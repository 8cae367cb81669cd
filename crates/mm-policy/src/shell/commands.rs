//! What the rules know of particular commands: which run their arguments
//! as another command, which shells read a command line from where, which
//! take a command line in an option, which builtins take a variable's
//! name (and so evaluate its subscript).

/// Commands that run their arguments as another command: rules that deny or
/// ask are also tried on every tail of their words (`sudo rm -rf x` is
/// judged as `rm -rf x` too).
const WRAPPERS: &[&str] = &[
    "sudo",
    "doas",
    "env",
    "xargs",
    "nice",
    "nohup",
    "timeout",
    "command",
    "builtin",
    "exec",
    "stdbuf",
    "ionice",
    "setsid",
    "flock",
    "watch",
    "strace",
    "ltrace",
    "chroot",
    "find",
    "parallel",
    "unbuffer",
    "taskset",
    "chrt",
    "time",
    "busybox",
    "su",
    "runuser",
    "unshare",
    "prlimit",
    "setpriv",
    "fakeroot",
    "fakechroot",
    "script",
    "nsenter",
    "systemd-run",
    "firejail",
    "bwrap",
    "pkexec",
    "sg",
    "setarch",
    "linux32",
    "linux64",
    "numactl",
    "cgexec",
    "faketime",
    "eatmydata",
    "torsocks",
    "proxychains",
    "proxychains4",
    "dbus-run-session",
    "xvfb-run",
    "chpst",
    "catchsegv",
];

/// Shells whose `-c` argument is a command line of its own, and that read
/// commands from their input when given neither `-c` nor a script.
pub(crate) const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "ash"];

/// Variables whose value bash runs as code (`BASH_ENV` and `ENV` name a
/// file a shell sources; the prompts are expanded, command substitutions
/// included; `PROMPT_COMMAND` runs), and the prefix of an exported
/// function's variable.
const CODE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PS0",
    "PS1",
    "PS2",
    "PS4",
    "PROMPT_COMMAND",
];

/// The last path component of a command word: `/bin/rm` → `rm`.
pub(crate) fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

pub(crate) fn is_wrapper(name: &str) -> bool {
    WRAPPERS.contains(&base(name))
}

/// Where in a wrapper's arguments the command it runs may start: every
/// word that is not an option or a `NAME=value`, at most `max` of them
/// that are not wrappers themselves and `max` that are (so neither
/// `sudo sudo … rm` nor `sudo -u x -u x … rm` hides the `rm` for long).
pub(crate) fn tail_starts(args: &[String], max: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let (mut commands, mut wrappers) = (0, 0);
    for (i, w) in args.iter().enumerate() {
        if w.starts_with('-') || w.contains('=') {
            continue;
        }
        if is_wrapper(w) {
            if wrappers < max {
                starts.push(i);
                wrappers += 1;
            }
            continue;
        }
        starts.push(i);
        commands += 1;
        if commands == max {
            break;
        }
    }
    starts
}

/// A word that sets a variable whose value bash runs as code:
/// `PS4='$(rm x)'`, `BASH_ENV=./x`, `BASH_FUNC_ls%%=() { … }`. Its name.
pub(crate) fn code_variable(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    (CODE_VARIABLES.contains(&name) || name.starts_with("BASH_FUNC_")).then_some(name)
}

/// Where a shell reads its commands from.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ShellInput<'a> {
    /// `-c` and this command line.
    Line(&'a str),
    /// A script file named on the command line (or `-c` without its line).
    Script,
    /// Its standard input: no `-c` and no script, or `-s`.
    Stdin,
}

/// How a shell given `args` gets its commands. `-c` takes the first word
/// after the options (`sh -c -- 'x'` runs `x`); `-o`, `-O`, `--rcfile` and
/// `--init-file` take a value.
pub(crate) fn shell_input(args: &[String]) -> ShellInput<'_> {
    let (mut line, mut stdin) = (false, false);
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a == "--" || a == "-" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            if let Some(v) = long.strip_prefix("command=") {
                return ShellInput::Line(v);
            }
            line |= long == "command";
            if matches!(long, "rcfile" | "init-file") {
                i += 1;
            }
            continue;
        }
        if a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
            for c in a.chars().skip(1) {
                match c {
                    'c' => line = true,
                    's' => stdin = true,
                    'o' | 'O' => i += 1,
                    _ => {}
                }
            }
            continue;
        }
        i -= 1;
        break;
    }
    match args.get(i) {
        Some(l) if line => ShellInput::Line(l),
        None if line => ShellInput::Script,
        Some(_) if !stdin => ShellInput::Script,
        _ => ShellInput::Stdin,
    }
}

/// The command line a wrapper takes in an option and runs with a shell:
/// `script -qc LINE`, `su -c LINE`, `runuser -c`, `flock FILE -c LINE`,
/// `nix-shell --run LINE`, and `sg GROUP LINE`.
pub(crate) fn wrapped_line(name: &str, args: &[String]) -> Option<String> {
    let name = base(name);
    if name == "sg" {
        let rest: Vec<&str> = args
            .iter()
            .skip(1)
            .map(String::as_str)
            .filter(|a| *a != "-c")
            .collect();
        return (!rest.is_empty()).then(|| rest.join(" "));
    }
    let (short, long): (Option<char>, &[&str]) = match name {
        "script" | "su" | "runuser" | "flock" => (Some('c'), &["command"]),
        "nix-shell" => (None, &["run", "command"]),
        _ => return None,
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if let Some(opt) = a.strip_prefix("--") {
            let (key, value) = match opt.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (opt, None),
            };
            if long.contains(&key) {
                return value.map(str::to_owned).or_else(|| args.get(i).cloned());
            }
            continue;
        }
        let Some(cluster) = a.strip_prefix('-') else {
            continue;
        };
        if let Some(c) = short
            && let Some(at) = cluster.find(c)
        {
            let attached = &cluster[at + c.len_utf8()..];
            return if attached.is_empty() {
                args.get(i).cloned()
            } else {
                Some(attached.to_owned())
            };
        }
    }
    None
}

/// Options of builtins that run a command line: `mapfile -C`,
/// `readarray -C`, `compgen -C`, `complete -C`.
pub(crate) fn callback_option(name: &str, args: &[String]) -> Option<String> {
    if !matches!(name, "mapfile" | "readarray" | "compgen" | "complete") {
        return None;
    }
    let at = args.iter().position(|a| a == "-C")?;
    Some(args.get(at + 1).cloned().unwrap_or_default())
}

/// The positions in `args` of the variable names a builtin assigns or
/// tests, whose subscripts bash evaluates (`printf -v 'a[$x]'`, `read`,
/// `mapfile`, `unset`, `wait -p`, `getopts`, `test -v`); empty for other
/// commands.
pub(crate) fn name_arguments(name: &str, args: &[String]) -> Vec<usize> {
    // Options that take a value, and the options whose value is a name.
    let (with_value, naming): (&str, &str) = match name {
        "printf" => ("v", "v"),
        "read" => ("adinNptu", "a"),
        "mapfile" | "readarray" => ("dnOsuCc", ""),
        "wait" => ("p", "p"),
        "test" | "[" => ("vR", "vR"),
        "unset" | "getopts" => ("", ""),
        _ => return Vec::new(),
    };
    let mut names = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    let mut options_end = false;
    while i < args.len() {
        let a = &args[i];
        if options_end || !a.starts_with('-') || a == "-" {
            // `test` takes its operators anywhere.
            options_end = !matches!(name, "test" | "[");
            operands.push(i);
            i += 1;
            continue;
        }
        if a == "--" {
            options_end = true;
            i += 1;
            continue;
        }
        let cluster = &a[1..];
        let mut consumed = false;
        for (at, c) in cluster.char_indices() {
            if with_value.contains(c) {
                let attached = &cluster[at + 1..];
                let value_at = if attached.is_empty() {
                    consumed = true;
                    Some(i + 1)
                } else {
                    None
                };
                if naming.contains(c) {
                    // An attached value (`-vNAME`) is its own word.
                    names.push(value_at.unwrap_or(i));
                }
                break;
            }
        }
        i += if consumed { 2 } else { 1 };
    }
    match name {
        "read" | "mapfile" | "readarray" | "unset" => names.extend(operands),
        "getopts" => names.extend(operands.get(1)),
        _ => {}
    }
    names.retain(|&n| n < args.len());
    names
}

/// The text `echo` or `printf` with these arguments writes, when the line
/// says it all: what a shell fed by it in a pipe reads.
pub(crate) fn printed_text(name: &str, args: &[String]) -> Option<String> {
    match base(name) {
        "echo" => {
            let mut escapes = false;
            let mut rest = args;
            while let Some((first, tail)) = rest.split_first() {
                let flags = first
                    .strip_prefix('-')
                    .filter(|f| !f.is_empty() && f.chars().all(|c| matches!(c, 'n' | 'e' | 'E')));
                let Some(flags) = flags else { break };
                escapes |= flags.contains('e');
                rest = tail;
            }
            let text = rest.join(" ");
            Some(if escapes {
                super::words::ansi_c(&text)
            } else {
                text
            })
        }
        "printf" => {
            let args = match args.first() {
                Some(a) if a == "--" => &args[1..],
                Some(a) if a.starts_with("-v") => return None,
                _ => args,
            };
            let (format, rest) = args.split_first()?;
            let mut text = super::words::ansi_c(format);
            for a in rest {
                text.push('\n');
                text.push_str(a);
            }
            Some(text)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn where_a_wrapped_command_may_start() {
        assert_eq!(tail_starts(&words("-u root rm -rf x"), 8), [1, 2, 4]);
        assert_eq!(tail_starts(&words("sudo sudo sudo rm"), 2), [0, 1, 3]);
        assert_eq!(tail_starts(&words("A=1 B=2 rm x y z"), 2), [2, 3]);
    }

    #[test]
    fn where_a_shell_reads_its_commands() {
        let input = |line: &str| match shell_input(&words(line)) {
            ShellInput::Line(l) => format!("line {l}"),
            other => format!("{other:?}"),
        };
        assert_eq!(input("-c x"), "line x");
        assert_eq!(input("-lc x"), "line x");
        assert_eq!(input("-c -- x"), "line x");
        assert_eq!(input("-o pipefail -c x"), "line x");
        assert_eq!(input("--norc -ec x"), "line x");
        assert_eq!(input("--command=x"), "line x");
        assert_eq!(input("script.sh"), "Script");
        assert_eq!(input("--rcfile rc script.sh"), "Script");
        assert_eq!(input(""), "Stdin");
        assert_eq!(input("-s"), "Stdin");
        assert_eq!(input("-s a b"), "Stdin");
        assert_eq!(input("-x -"), "Stdin");
        assert_eq!(input("-c"), "Script");
    }

    #[test]
    fn command_lines_in_options() {
        let line = |name: &str, args: &str| wrapped_line(name, &words(args));
        assert_eq!(line("script", "-qc x log").as_deref(), Some("x"));
        assert_eq!(line("script", "-q -c x").as_deref(), Some("x"));
        assert_eq!(line("script", "--command=x").as_deref(), Some("x"));
        assert_eq!(line("su", "-c x root").as_deref(), Some("x"));
        assert_eq!(line("flock", "/tmp/l -c x").as_deref(), Some("x"));
        assert_eq!(line("sg", "wheel -c x").as_deref(), Some("x"));
        assert_eq!(line("nix-shell", "--run x").as_deref(), Some("x"));
        assert_eq!(line("script", "-q log"), None);
        assert_eq!(line("sudo", "-c x"), None);
    }

    #[test]
    fn name_arguments_of_builtins() {
        let names = |name: &str, args: &str| name_arguments(name, &words(args));
        assert_eq!(names("printf", "-v n %s x"), [1]);
        assert_eq!(names("printf", "-vn %s x"), [0]);
        assert_eq!(names("printf", "%s x"), Vec::<usize>::new());
        assert_eq!(names("read", "-r -p prompt a b"), [3, 4]);
        assert_eq!(names("read", "-a arr"), [1]);
        assert_eq!(names("unset", "-v a b"), [1, 2]);
        assert_eq!(names("wait", "-n -p v"), [2]);
        assert_eq!(names("getopts", "ab: opt"), [1]);
        assert_eq!(names("test", "-v x"), [1]);
        assert_eq!(names("[", "x = y ]"), Vec::<usize>::new());
        assert_eq!(names("echo", "-v x"), Vec::<usize>::new());
    }

    #[test]
    fn what_echo_and_printf_print() {
        let text = |name: &str, args: &[&str]| {
            printed_text(
                name,
                &args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            text("echo", &["rm", "-rf", "x"]).as_deref(),
            Some("rm -rf x")
        );
        assert_eq!(text("echo", &["-e", "ls\\nrm"]).as_deref(), Some("ls\nrm"));
        assert_eq!(
            text("printf", &["ls\\nrm -rf x\\n"]).as_deref(),
            Some("ls\nrm -rf x\n")
        );
        assert_eq!(text("printf", &["-v", "x", "y"]), None);
        assert_eq!(text("cat", &["x"]), None);
    }
}
