//! `mm-repl`: the terminal front end of mm. All the work is in the library.

fn main() -> std::process::ExitCode {
    mm_repl::run::main()
}
