#![allow(clippy::unwrap_used, clippy::expect_used)]
//! mm-lsp against a real clangd (Debian's, installed by .ci/install-lsp) on
//! a small C project with a compile_commands.json: every action, rename
//! across files, diagnostics after an edit on disk, non-ASCII lines (UTF-16
//! on the wire), a killed server restarted, shutdown, and the failures'
//! texts.

mod support;

use mm_lsp::{Action, Client, Query, RENAME_NEEDS_NEW_NAME};
use support::{Project, call, config, installed};

const GREET_H: &str = "#ifndef GREET_H\n#define GREET_H\nint greet(int times);\n#endif\n";
const GREET_C: &str = "#include \"greet.h\"\n\n/* greet: says hello */\nint greet(int times) {\n  const char *s = \"héllo 😀\"; return times + (s != 0);\n}\n";
// Line 4 holds "wörld 😀" before the call: 😀 is two UTF-16 units, so a
// column conversion error would show as greet at 39 instead of 38.
const MAIN_C: &str = "#include \"greet.h\"\n\nint main(void) {\n  const char *w = \"wörld 😀\"; int n = greet(2);\n  return n + (w != 0);\n}\n";

fn project() -> Project {
    let p = Project::new(&[
        ("greet.h", GREET_H),
        ("greet.c", GREET_C),
        ("main.c", MAIN_C),
    ]);
    let cc = support::compile_commands(&p.root(), &["greet.c", "main.c"]);
    p.write("compile_commands.json", &cc);
    p
}

fn clangd(p: &Project) -> Client {
    p.client(vec![config("clangd", "clangd", &[], &[".c", ".h"])])
}

fn have_clangd(test: &str) -> bool {
    installed("clangd", &["--version"], test)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_actions() {
    if !have_clangd("clangd navigation_actions") {
        return;
    }
    let p = project();
    let c = clangd(&p);

    // The include line names greet inside a string: the call on line 4 is
    // tried first.
    let def = call(&c, Query::new(Action::Definition, "main.c").symbol("greet")).await;
    assert_eq!(def, "greet.c:4:5  int greet(int times) {");

    let refs = call(
        &c,
        Query::new(Action::References, "greet.c").symbol("greet"),
    )
    .await;
    assert_eq!(
        refs,
        "3 reference(s):\n\
         greet.c:4:5  int greet(int times) {\n\
         greet.h:3:5  int greet(int times);\n\
         main.c:4:38  const char *w = \"wörld 😀\"; int n = greet(2);"
    );

    // A position on the non-ASCII line: column 40 is inside "greet".
    let hover = call(&c, Query::new(Action::Hover, "main.c").at(4, 40)).await;
    assert!(hover.contains("function `greet`"), "{hover}");
    assert!(hover.contains("int greet(int times)"), "{hover}");

    let symbols = call(&c, Query::new(Action::Symbols, "greet.c")).await;
    assert_eq!(symbols, "function greet  [int (int)]  line 4");
    let symbols = call(&c, Query::new(Action::Symbols, "main.c")).await;
    assert_eq!(symbols, "function main  [int (void)]  line 3");

    c.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_follow_edits_made_on_disk() {
    if !have_clangd("clangd diagnostics_follow_edits_made_on_disk") {
        return;
    }
    let p = project();
    let c = clangd(&p);

    let first = call(&c, Query::new(Action::Diagnostics, "main.c")).await;
    assert_eq!(first, "no diagnostics: main.c is clean");
    // Nothing changed since the server spoke.
    let again = call(&c, Query::new(Action::Diagnostics, "main.c")).await;
    assert_eq!(again, "no diagnostics: main.c is clean (as last published)");

    // An edit on disk (as edit_file makes it), after the emoji on line 4.
    p.write(
        "main.c",
        &MAIN_C.replace("greet(2);", "greet(2) + missing;"),
    );
    let broken = call(&c, Query::new(Action::Diagnostics, "main.c")).await;
    assert_eq!(
        broken,
        "1 diagnostic(s) in main.c:\nerror main.c:4:49 Use of undeclared identifier 'missing' [clang]"
    );
    let again = call(&c, Query::new(Action::Diagnostics, "main.c")).await;
    assert_eq!(
        again,
        "1 diagnostic(s) in main.c (as last published):\nerror main.c:4:49 Use of undeclared identifier 'missing' [clang]"
    );

    p.write("main.c", MAIN_C);
    let fixed = call(&c, Query::new(Action::Diagnostics, "main.c")).await;
    assert_eq!(fixed, "no diagnostics: main.c is clean");
    c.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_edits_every_file_and_tells_the_server() {
    if !have_clangd("clangd rename_edits_every_file_and_tells_the_server") {
        return;
    }
    let p = project();
    let c = clangd(&p);

    let out = call(
        &c,
        Query::new(Action::Rename, "greet.c")
            .symbol("greet")
            .new_name("salute"),
    )
    .await;
    assert_eq!(
        out,
        "renamed to salute: 3 edit(s) in 3 file(s)\ngreet.c: 1 edit(s)\ngreet.h: 1 edit(s)\nmain.c: 1 edit(s)"
    );
    // The comment keeps its word; the non-ASCII line is edited at the
    // right place.
    assert_eq!(
        p.read("greet.c"),
        GREET_C.replace("int greet(", "int salute(")
    );
    assert_eq!(p.read("greet.h"), GREET_H.replace("greet(", "salute("));
    assert_eq!(p.read("main.c"), MAIN_C.replace("greet(2)", "salute(2)"));

    // The server has the new contents.
    let refs = call(
        &c,
        Query::new(Action::References, "main.c").symbol("salute"),
    )
    .await;
    assert_eq!(
        refs,
        "3 reference(s):\n\
         greet.c:4:5  int salute(int times) {\n\
         greet.h:3:5  int salute(int times);\n\
         main.c:4:38  const char *w = \"wörld 😀\"; int n = salute(2);"
    );
    c.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_started_again_on_the_next_call() {
    if !have_clangd("clangd a_killed_server_is_started_again_on_the_next_call") {
        return;
    }
    let p = project();
    let c = clangd(&p);
    let q = Query::new(Action::Definition, "main.c").symbol("greet");
    let before = call(&c, q.clone()).await;
    assert_eq!(before, "greet.c:4:5  int greet(int times) {");

    let pid = c.server_pid("clangd").await.expect("clangd runs");
    support::kill(pid);
    support::wait_gone(pid).await;

    let after = call(&c, q).await;
    assert_eq!(after, before);
    let new_pid = c.server_pid("clangd").await.expect("clangd runs again");
    assert_ne!(new_pid, pid);

    // shutdown ends the process.
    c.shutdown_all().await;
    support::wait_gone(new_pid).await;
    assert_eq!(c.server_pid("clangd").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_kills_the_server() {
    if !have_clangd("clangd dropping_the_client_kills_the_server") {
        return;
    }
    let p = project();
    let c = clangd(&p);
    let out = call(&c, Query::new(Action::Symbols, "greet.c")).await;
    assert_eq!(out, "function greet  [int (int)]  line 4");
    let pid = c.server_pid("clangd").await.expect("clangd runs");
    drop(c);
    support::wait_gone(pid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_texts() {
    if !have_clangd("clangd failures_are_texts") {
        return;
    }
    let p = project();
    p.write("notes.md", "# notes\n");
    let c = clangd(&p);

    let none = call(&c, Query::new(Action::Hover, "notes.md").symbol("notes")).await;
    assert_eq!(
        none,
        "[lsp: no language server for \"notes.md\" — configured: clangd (.c .h)]"
    );
    let missing = call(
        &c,
        Query::new(Action::Definition, "main.c").symbol("nothing"),
    )
    .await;
    assert_eq!(missing, "[lsp: \"nothing\" not found in main.c]");
    let on_line = call(
        &c,
        Query::new(Action::Definition, "main.c")
            .symbol("greet")
            .at(5, 0),
    )
    .await;
    assert_eq!(on_line, "[lsp: \"greet\" not found on line 5 of main.c]");
    // 46 characters, though more bytes and UTF-16 units.
    let column = call(&c, Query::new(Action::Hover, "main.c").at(4, 60)).await;
    assert_eq!(
        column,
        "[lsp: column 60 is past the end of line 4 (46 characters)]"
    );
    let line = call(&c, Query::new(Action::Hover, "main.c").at(99, 1)).await;
    assert_eq!(line, "[lsp: line 99 is past the end of main.c (6 lines)]");
    let no_name = call(&c, Query::new(Action::Rename, "main.c").symbol("greet")).await;
    assert_eq!(no_name, RENAME_NEEDS_NEW_NAME);
    assert_eq!(
        no_name,
        "[lsp: rename needs new_name — call lsp again with {\"action\": \"rename\", \"path\": …, \"symbol\": …, \"new_name\": \"<the new identifier>\"}; do not use edit_file for a rename]"
    );
    let gone = call(&c, Query::new(Action::Symbols, "gone.c")).await;
    assert_eq!(gone, "[lsp: gone.c does not exist]");
    // The keyword `return` has no definition.
    let nothing = call(&c, Query::new(Action::Definition, "main.c").at(5, 3)).await;
    assert_eq!(
        nothing,
        "[lsp: no definition found for the symbol at main.c:5:3]"
    );
    c.shutdown_all().await;
}
