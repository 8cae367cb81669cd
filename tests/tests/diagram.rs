//! The package diagram matches the workspace, and the workspace keeps the
//! floor rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mm_tests::diagram;

#[test]
fn the_package_diagram_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let graph = diagram::graph(&root).unwrap();
    let on_disk = std::fs::read_to_string(root.join(diagram::DIAGRAM)).unwrap_or_default();
    assert!(
        on_disk == diagram::render(&graph),
        "{} is stale: run `cargo run -p mm-tests --bin mm-diagram` and commit it",
        diagram::DIAGRAM
    );
}

#[test]
fn no_crate_depends_on_its_own_or_a_higher_floor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let graph = diagram::graph(&root).unwrap();
    assert!(graph.contains_key("mm-agent") && graph.contains_key("mm-repl"));
    assert_eq!(diagram::violations(&graph), Vec::<String>::new());
}

#[test]
fn the_rule_catches_a_front_end_reaching_into_the_engine() {
    let mut graph = std::collections::BTreeMap::new();
    graph.insert("mm-repl".to_string(), vec!["mm-engine".to_string()]);
    graph.insert("mm-engine".to_string(), vec!["mm-agent".to_string()]);
    graph.insert("mm-mock".to_string(), vec!["mm-ui".to_string()]);
    assert_eq!(
        diagram::violations(&graph),
        [
            "mm-engine must not depend on mm-agent",
            "mm-mock must not depend on mm-ui",
            "mm-repl must not depend on mm-engine"
        ]
    );
}
