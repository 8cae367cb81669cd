//! The package diagram of the workspace, generated from `cargo metadata`,
//! and the floor rule of the design (docs/architecture.md): a crate uses
//! crates on lower floors only, and the front ends use nothing but
//! `mm-agent`, `mm-ui`, `mm-config` (and `mm-mock` for `--demo`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Where the generated diagram lives, relative to the workspace root.
pub const DIAGRAM: &str = "docs/diagrams/packages.md";

/// The same diagram as a draw.io file (opens in diagrams.net and its
/// editor extensions), generated too.
pub const DRAWIO: &str = "docs/diagrams/packages.drawio";

/// The floor of each workspace crate; `None` for crates set aside (the mock
/// server and this test crate).
pub fn floor(name: &str) -> Option<u8> {
    Some(match name {
        "mm-types" | "mm-child" | "mm-redact" => 0,
        "mm-config" | "mm-ui" | "mm-fileedit" | "mm-skills" | "mm-detector" | "mm-lsp"
        | "mm-checkpoint" | "mm-policy" | "mm-mcp" | "mm-hooks" => 1,
        "mm-engine" | "mm-tools" => 2,
        "mm-store" => 3,
        "mm-agent" => 4,
        "mm-repl" | "mm-tui" | "mm-acp" => 5,
        _ => return None,
    })
}

/// What `cargo metadata` says of the workspace's own packages.
fn metadata(root: &Path) -> Result<Vec<serde_json::Value>, String> {
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
    Ok(meta["packages"].as_array().cloned().unwrap_or_default())
}

/// Workspace crate → the workspace crates it depends on (normal and build
/// dependencies; dev-dependencies are test wiring, not design).
pub fn graph(root: &Path) -> Result<BTreeMap<String, Vec<String>>, String> {
    let packages = metadata(root)?;
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

/// Workspace crate → its one-line purpose (the manifest's `description`).
pub fn purposes(root: &Path) -> Result<BTreeMap<String, String>, String> {
    Ok(metadata(root)?
        .iter()
        .filter_map(|p| {
            let name = p["name"].as_str()?;
            let text = p["description"].as_str().unwrap_or_default();
            Some((name.to_owned(), text.to_owned()))
        })
        .collect())
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
                // Test crates below it take it as a dev-dependency.
                ("mm-test-support", _, g) => g == Some(0),
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

/// The diagram as a draw.io file: one row a floor (the front ends on top,
/// the crates set aside at the bottom), each box the crate's name over its
/// purpose, an arrow from a crate to each crate it uses.
pub fn render_drawio(
    graph: &BTreeMap<String, Vec<String>>,
    purposes: &BTreeMap<String, String>,
) -> String {
    const W: usize = 220;
    const H: usize = 80;
    const GAP: usize = 30;
    const LABEL: usize = 90;
    let id = |n: &str| n.replace('-', "_");
    let mut rows: BTreeMap<u8, Vec<&String>> = BTreeMap::new();
    for name in graph.keys() {
        // Aside crates go below floor 0.
        let row = floor(name).map_or(0, |f| f + 1);
        rows.entry(row).or_default().push(name);
    }
    let top = rows.keys().max().copied().unwrap_or(0);
    let widest = rows.values().map(Vec::len).max().unwrap_or(1);
    let mut cells = String::new();
    for (row, names) in &rows {
        let y = 40 + usize::from(top - row) * (H + GAP);
        let label = match row {
            0 => "aside".to_owned(),
            f => format!("floor {}", f - 1),
        };
        cells.push_str(&format!(
            "        <mxCell id=\"row{row}\" value=\"{label}\" style=\"text;html=1;align=left;verticalAlign=middle;fontStyle=1;\" vertex=\"1\" parent=\"1\">\n          <mxGeometry x=\"10\" y=\"{y}\" width=\"{}\" height=\"{H}\" as=\"geometry\"/>\n        </mxCell>\n",
            LABEL - 10
        ));
        for (i, name) in names.iter().enumerate() {
            let x = LABEL + i * (W + GAP);
            let purpose = purposes.get(*name).map(String::as_str).unwrap_or_default();
            let value = xml_escape(&format!("<b>{name}</b><br>{}", html_escape(purpose)));
            cells.push_str(&format!(
                "        <mxCell id=\"{}\" value=\"{value}\" style=\"rounded=1;whiteSpace=wrap;html=1;fontSize=11;\" vertex=\"1\" parent=\"1\">\n          <mxGeometry x=\"{x}\" y=\"{y}\" width=\"{W}\" height=\"{H}\" as=\"geometry\"/>\n        </mxCell>\n",
                id(name)
            ));
        }
    }
    for (name, deps) in graph {
        for d in deps {
            cells.push_str(&format!(
                "        <mxCell id=\"{}__{}\" style=\"endArrow=block;html=1;opacity=40;\" edge=\"1\" parent=\"1\" source=\"{}\" target=\"{}\">\n          <mxGeometry relative=\"1\" as=\"geometry\"/>\n        </mxCell>\n",
                id(name),
                id(d),
                id(name),
                id(d)
            ));
        }
    }
    let width = LABEL + widest * (W + GAP);
    let height = 80 + (usize::from(top) + 1) * (H + GAP);
    format!(
        "<mxfile host=\"mm-diagram\">\n  <diagram id=\"packages\" name=\"packages\">\n    <mxGraphModel grid=\"1\" gridSize=\"10\" arrows=\"1\" page=\"1\" pageWidth=\"{width}\" pageHeight=\"{height}\">\n      <root>\n        <mxCell id=\"0\"/>\n        <mxCell id=\"1\" parent=\"0\"/>\n{cells}      </root>\n    </mxGraphModel>\n  </diagram>\n</mxfile>\n"
    )
}

/// Text inside a draw.io HTML label.
fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Text inside an XML attribute.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
