#![allow(clippy::unwrap_used, clippy::expect_used)]
//! mm-lsp against rust-analyzer (a rustup component: optional, since a
//! fresh machine may not reach the component server; the test says when it
//! skips). One test, as rust-analyzer takes seconds to load a workspace.

mod support;

use mm_lsp::{Action, Query};
use support::{Project, call, config, installed_optional};

const CARGO_TOML: &str =
    "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n";
const LIB_RS: &str =
    "pub mod greet;\n\npub fn run() -> String {\n    let s = \"héllo 😀\"; greet::greet(s)\n}\n";
const GREET_RS: &str =
    "/// Say hello.\npub fn greet(name: &str) -> String {\n    format!(\"hi {name}\")\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_analyzer_navigation_and_rename() {
    if !installed_optional(
        "rust-analyzer",
        &["--version"],
        "rust_analyzer_navigation_and_rename",
    ) {
        return;
    }
    let p = Project::new(&[
        ("Cargo.toml", CARGO_TOML),
        ("src/lib.rs", LIB_RS),
        ("src/greet.rs", GREET_RS),
    ]);
    let c = p.client(vec![config(
        "rust-analyzer",
        "rust-analyzer",
        &[],
        &[".rs"],
    )]);

    // `greet::greet` prefers the call written that way over `pub mod greet`.
    let def = call(
        &c,
        Query::new(Action::Definition, "src/lib.rs").symbol("greet::greet"),
    )
    .await;
    assert_eq!(
        def,
        "src/greet.rs:2:8  pub fn greet(name: &str) -> String {"
    );

    let refs = call(
        &c,
        Query::new(Action::References, "src/greet.rs").symbol("greet"),
    )
    .await;
    assert_eq!(
        refs,
        "2 reference(s):\n\
         src/greet.rs:2:8  pub fn greet(name: &str) -> String {\n\
         src/lib.rs:4:31  let s = \"héllo 😀\"; greet::greet(s)"
    );

    let hover = call(&c, Query::new(Action::Hover, "src/lib.rs").at(4, 33)).await;
    assert!(
        hover.contains("pub fn greet(name: &str) -> String"),
        "{hover}"
    );

    let symbols = call(&c, Query::new(Action::Symbols, "src/lib.rs")).await;
    assert_eq!(
        symbols,
        "module greet  line 1\nfunction run  [fn() -> String]  line 3"
    );

    let out = call(
        &c,
        Query::new(Action::Rename, "src/greet.rs")
            .symbol("greet")
            .new_name("salute"),
    )
    .await;
    assert_eq!(
        out,
        "renamed to salute: 2 edit(s) in 2 file(s)\nsrc/greet.rs: 1 edit(s)\nsrc/lib.rs: 1 edit(s)"
    );
    assert_eq!(
        p.read("src/lib.rs"),
        LIB_RS.replace("greet::greet(s)", "greet::salute(s)")
    );
    c.shutdown_all().await;
}
