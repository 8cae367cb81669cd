//! mm-acp: not built yet.

fn main() {
    eprintln!("mm-acp is not built yet");
    std::process::exit(2);
}
