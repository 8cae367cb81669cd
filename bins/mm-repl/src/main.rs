//! mm-repl: not built yet.

fn main() {
    eprintln!("mm-repl is not built yet");
    std::process::exit(2);
}
