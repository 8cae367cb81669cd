//! Regenerates `docs/diagrams/packages.md` from `cargo metadata`.

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let result = mm_tests::diagram::graph(&root).and_then(|g| {
        let path = root.join(mm_tests::diagram::DIAGRAM);
        std::fs::create_dir_all(path.parent().unwrap_or(&root)).map_err(|e| e.to_string())?;
        std::fs::write(&path, mm_tests::diagram::render(&g))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
        Ok(())
    });
    if let Err(e) = result {
        eprintln!("mm-diagram: {e}");
        std::process::exit(1);
    }
}
