#![allow(clippy::unwrap_used, clippy::expect_used)]
//! mm-lsp against a real pyright (npm, installed by .ci/install-lsp) on a
//! small Python project: every action, rename across files (with the small
//! model's one-string form), diagnostics after an edit on disk, non-ASCII
//! lines, a killed server restarted.

mod support;

use mm_lsp::{Action, Client, Query};
use support::{Project, call, config, installed};

const GREET_PY: &str = "\"\"\"Greetings.\"\"\"\n\n\ndef greet(name: str) -> str:\n    \"\"\"Say hello.\"\"\"\n    return \"héllo \" + name\n\n\nclass Person:\n    def __init__(self, name: str) -> None:\n        self.name = name\n\n    def hello(self) -> str:\n        return greet(self.name)\n";
// Line 4: 😀 is two UTF-16 units, so greet stands at character 22 but at
// UTF-16 offset 22 (0-based), and a conversion error shows as 23.
const MAIN_PY: &str = "from greet import Person, greet\n\n# greet the world\ns = \"😀 wörld\"; print(greet(s))\nprint(Person(\"ana\").hello())\n";

fn project() -> Project {
    Project::new(&[("greet.py", GREET_PY), ("main.py", MAIN_PY)])
}

fn pyright(p: &Project) -> Client {
    p.client(vec![config(
        "pyright",
        "pyright-langserver",
        &["--stdio"],
        &[".py"],
    )])
}

fn have_pyright(test: &str) -> bool {
    installed("pyright", &["--version"], test)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigation_actions() {
    if !have_pyright("pyright navigation_actions") {
        return;
    }
    let p = project();
    let c = pyright(&p);

    // `person.greet` means greet; the import's module name is tried after
    // the imported name.
    let def = call(
        &c,
        Query::new(Action::Definition, "main.py").symbol("`person.greet`,"),
    )
    .await;
    assert_eq!(def, "greet.py:4:5  def greet(name: str) -> str:");

    let refs = call(
        &c,
        Query::new(Action::References, "greet.py").symbol("greet"),
    )
    .await;
    assert_eq!(
        refs,
        "4 reference(s):\n\
         greet.py:4:5  def greet(name: str) -> str:\n\
         greet.py:14:16  return greet(self.name)\n\
         main.py:1:27  from greet import Person, greet\n\
         main.py:4:22  s = \"😀 wörld\"; print(greet(s))"
    );

    // Column 24 (characters) on the non-ASCII line is inside greet.
    let hover = call(&c, Query::new(Action::Hover, "main.py").at(4, 24)).await;
    assert!(hover.contains("def greet(name: str) -> str"), "{hover}");
    assert!(hover.contains("Say hello."), "{hover}");

    let symbols = call(&c, Query::new(Action::Symbols, "greet.py")).await;
    let rows: Vec<&str> = symbols.lines().collect();
    assert_eq!(rows.first(), Some(&"function greet  line 4"), "{symbols}");
    assert!(rows.contains(&"class Person  line 9"), "{symbols}");
    assert!(rows.contains(&"  method __init__  line 10"), "{symbols}");
    assert!(rows.contains(&"  method hello  line 13"), "{symbols}");
    c.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_follow_edits_made_on_disk() {
    if !have_pyright("pyright diagnostics_follow_edits_made_on_disk") {
        return;
    }
    let p = project();
    let c = pyright(&p);

    let first = call(&c, Query::new(Action::Diagnostics, "main.py")).await;
    assert_eq!(first, "no diagnostics: main.py is clean");

    p.write(
        "main.py",
        &format!("{MAIN_PY}label = \"😀\"; count: int = \"three\"\n"),
    );
    let broken = call(&c, Query::new(Action::Diagnostics, "main.py")).await;
    let (head, row) = broken.split_once('\n').expect(&broken);
    assert_eq!(head, "1 diagnostic(s) in main.py:");
    // The literal starts at character 27 of line 6, after the emoji.
    assert!(row.starts_with("error main.py:6:27 "), "{row}");
    assert!(row.contains("\"int\""), "{row}");
    assert!(row.ends_with(" [Pyright]"), "{row}");

    let again = call(&c, Query::new(Action::Diagnostics, "main.py")).await;
    assert_eq!(
        again,
        format!("1 diagnostic(s) in main.py (as last published):\n{row}")
    );

    p.write("main.py", MAIN_PY);
    let fixed = call(&c, Query::new(Action::Diagnostics, "main.py")).await;
    assert_eq!(fixed, "no diagnostics: main.py is clean");
    c.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_across_files_from_one_string() {
    if !have_pyright("pyright rename_across_files_from_one_string") {
        return;
    }
    let p = project();
    let c = pyright(&p);

    // A small model's form: symbol, line, column and new name in one field.
    let out = call(
        &c,
        Query::new(Action::Rename, "greet.py").symbol("greet 4 5 salute"),
    )
    .await;
    assert_eq!(
        out,
        "renamed to salute: 4 edit(s) in 2 file(s)\ngreet.py: 2 edit(s)\nmain.py: 2 edit(s)"
    );
    assert_eq!(
        p.read("greet.py"),
        GREET_PY
            .replace("def greet(", "def salute(")
            .replace("return greet(", "return salute(")
    );
    // The comment keeps its word, the module name too.
    assert_eq!(
        p.read("main.py"),
        MAIN_PY
            .replace("Person, greet", "Person, salute")
            .replace("print(greet(s))", "print(salute(s))")
    );

    let refs = call(
        &c,
        Query::new(Action::References, "main.py").symbol("salute"),
    )
    .await;
    assert!(refs.starts_with("4 reference(s):\n"), "{refs}");
    assert!(
        refs.contains("main.py:4:22  s = \"😀 wörld\"; print(salute(s))"),
        "{refs}"
    );
    c.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_started_again_on_the_next_call() {
    if !have_pyright("pyright a_killed_server_is_started_again_on_the_next_call") {
        return;
    }
    let p = project();
    let c = pyright(&p);
    let q = Query::new(Action::Definition, "main.py").symbol("greet");
    let before = call(&c, q.clone()).await;
    assert_eq!(before, "greet.py:4:5  def greet(name: str) -> str:");

    let pid = c.server_pid("pyright").await.expect("pyright runs");
    support::kill(pid);
    support::wait_gone(pid).await;

    assert_eq!(call(&c, q).await, before);
    let new_pid = c.server_pid("pyright").await.expect("pyright runs again");
    assert_ne!(new_pid, pid);
    c.shutdown_all().await;
    support::wait_gone(new_pid).await;
}
