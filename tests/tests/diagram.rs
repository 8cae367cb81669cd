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
fn the_drawio_diagram_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let graph = diagram::graph(&root).unwrap();
    let purposes = diagram::purposes(&root).unwrap();
    let on_disk = std::fs::read_to_string(root.join(diagram::DRAWIO)).unwrap_or_default();
    assert!(
        on_disk == diagram::render_drawio(&graph, &purposes),
        "{} is stale: run `cargo run -p mm-tests --bin mm-diagram` and commit it",
        diagram::DRAWIO
    );
    // Every crate has a purpose to show on its box.
    let blank: Vec<&String> = purposes
        .iter()
        .filter(|(_, p)| p.trim().is_empty())
        .map(|(n, _)| n)
        .collect();
    assert!(blank.is_empty(), "crates without a description: {blank:?}");
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

#[test]
fn the_rule_keeps_the_test_support_on_floor_0_crates() {
    let mut graph = std::collections::BTreeMap::new();
    graph.insert(
        "mm-test-support".to_string(),
        vec!["mm-types".to_string(), "mm-tools".to_string()],
    );
    assert_eq!(
        diagram::violations(&graph),
        ["mm-test-support must not depend on mm-tools"]
    );
}

#[test]
fn every_path_of_the_code_map_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    assert_eq!(
        mm_tests::docs::missing_code_map_paths(&root),
        Vec::<String>::new(),
        "docs/architecture.md's code map names paths that are gone"
    );
}

#[test]
fn every_link_between_the_docs_leads_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    assert_eq!(
        mm_tests::docs::broken_links(&root),
        Vec::<String>::new(),
        "links to a missing file or heading"
    );
}

#[test]
fn the_readme_and_the_floors_table_name_every_crate_on_its_floor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let graph = diagram::graph(&root).unwrap();
    let crates: Vec<(String, Option<u8>)> = graph
        .keys()
        .map(|name| (name.clone(), diagram::floor(name)))
        .collect();
    assert_eq!(
        mm_tests::docs::table_disagreements(&root, &crates),
        Vec::<String>::new()
    );
}
