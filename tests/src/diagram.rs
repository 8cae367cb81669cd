//! The package diagram of the workspace, generated from `cargo metadata`,
//! and the floor rule of the design (docs/architecture.md): a crate uses
//! crates on lower floors only, and the front ends use nothing but
//! `mm-agent`, `mm-ui`, `mm-config` (and `mm-mock` for `--demo`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Where the generated diagram lives, relative to the workspace root.
pub const DIAGRAM: &str = "docs/diagrams/packages.md";

/// The floor of each workspace crate; `None` for crates set aside (the mock
/// server and this test crate).
pub fn floor(name: &str) -> Option<u8> {
    Some(match name {
        "mm-child" | "mm-redact" => 0,
        "mm-config" | "mm-ui" | "mm-fileedit" | "mm-skills" | "mm-detector" | "mm-lsp"
        | "mm-checkpoint" | "mm-policy" | "mm-mcp" => 1,
        "mm-engine" | "mm-tools" => 2,
        "mm-store" => 3,
        "mm-agent" => 4,
        "mm-repl" | "mm-tui" | "mm-acp" => 5,
        _ => return None,
    })
}

/// Workspace crate → the workspace crates it depends on (normal and build
/// dependencies; dev-dependencies are test wiring, not design).
pub fn graph(root: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cargo metadata gave bad JSON: {e}"))?;
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();
    let names: Vec<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    let mut graph = BTreeMap::new();
    for p in &packages {
        let Some(name) = p["name"].as_str() else {
            continue;
        };
        let mut deps: Vec<String> = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null() || d["kind"] == "build")
            .filter_map(|d| d["name"].as_str().map(String::from))
            .filter(|d| names.contains(d))
            .collect();
        deps.sort();
        deps.dedup();
        graph.insert(name.to_string(), deps);
    }
    Ok(graph)
}

/// The diagram as a Markdown page with a Mermaid graph, one floor a row.
pub fn render(graph: &BTreeMap<String, Vec<String>>) -> String {
    let mut out = String::from(
        "# Package diagram\n\n\
Generated from `cargo metadata` by `cargo run -p mm-tests --bin mm-diagram`; \
a test fails when it is stale. Arrows point from a crate to the crates it uses \
(normal dependencies only).\n\n```mermaid\ngraph BT\n",
    );
    let id = |n: &str| n.replace('-', "_");
    let mut floors: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for name in graph.keys() {
        let label = match floor(name) {
            Some(f) => format!("floor {f}"),
            None => "aside".to_string(),
        };
        floors.entry(label).or_default().push(name);
    }
    for (label, names) in &floors {
        out.push_str(&format!(
            "  subgraph {}[\"{label}\"]\n",
            label.replace(' ', "_")
        ));
        for n in names {
            out.push_str(&format!("    {}[\"{n}\"]\n", id(n)));
        }
        out.push_str("  end\n");
    }
    for (name, deps) in graph {
        for d in deps {
            out.push_str(&format!("  {} --> {}\n", id(name), id(d)));
        }
    }
    out.push_str("```\n");
    out
}

/// Every dependency that breaks the floor rule, as readable lines.
pub fn violations(graph: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, deps) in graph {
        for d in deps {
            let ok = match (name.as_str(), floor(name), floor(d)) {
                ("mm-mock", _, _) => false,
                ("mm-tests", _, _) => true,
                (_, Some(5), _) => {
                    matches!(d.as_str(), "mm-agent" | "mm-ui" | "mm-config" | "mm-mock")
                }
                (_, Some(f), Some(g)) => g < f,
                (_, Some(_), None) => false,
                (_, None, _) => true,
            };
            if !ok {
                bad.push(format!("{name} must not depend on {d}"));
            }
        }
    }
    bad
}
