//! Regenerates `docs/diagrams/packages.md` and `packages.drawio` from
//! `cargo metadata`.

use std::path::Path;

use mm_tests::diagram;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let result = diagram::graph(&root).and_then(|g| {
        let purposes = diagram::purposes(&root)?;
        for (file, text) in [
            (diagram::DIAGRAM, diagram::render(&g)),
            (diagram::DRAWIO, diagram::render_drawio(&g, &purposes)),
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap_or(&root)).map_err(|e| e.to_string())?;
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote {}", path.display());
        }
        Ok(())
    });
    if let Err(e) = result {
        eprintln!("mm-diagram: {e}");
        std::process::exit(1);
    }
}
