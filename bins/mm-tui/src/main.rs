//! mm-tui: not built yet.

fn main() {
    eprintln!("mm-tui is not built yet");
    std::process::exit(2);
}
