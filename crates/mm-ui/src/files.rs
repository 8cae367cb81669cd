//! The `@` file list both front ends offer: the project's files as ripgrep
//! would walk them (`.gitignore`, `.ignore` and hidden files skipped), and a
//! fuzzy filter over them, best match first.

use std::path::Path;

use nucleo_matcher::pattern::{Atom, AtomKind, CaseMatching, Normalization};
use nucleo_matcher::{Config, Matcher};

/// Most files listed from one project: a huge tree is cut, not walked whole
/// on a key press.
pub const MAX_FILES: usize = 20_000;

/// The files under `root`, as paths relative to it with `/` between names,
/// sorted. Names that would write an escape sequence on a terminal are left
/// out (a front end shows them as they are).
pub fn project_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(true)
        .require_git(false)
        .follow_links(false)
        .build();
    for entry in walk.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(rel) = rel.to_str() else { continue };
        if !crate::sanitize::is_clean(rel) || rel.contains(['\n', '\t']) {
            continue;
        }
        out.push(rel.replace(std::path::MAIN_SEPARATOR, "/"));
        if out.len() >= MAX_FILES {
            break;
        }
    }
    out.sort();
    out
}

/// The `files` that hold the letters of `query` in order (smart case: an
/// upper-case letter must match exactly), best first, at most `limit`. An
/// empty query keeps the list's order.
pub fn fuzzy(query: &str, files: &[String], limit: usize) -> Vec<String> {
    if query.is_empty() {
        return files.iter().take(limit).cloned().collect();
    }
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let atom = Atom::new(
        query,
        CaseMatching::Smart,
        Normalization::Smart,
        AtomKind::Fuzzy,
        false,
    );
    let mut found = atom.match_list(files.iter(), &mut matcher);
    // Equal scores: the shorter path first, then by name (stable order).
    found.sort_by(|(a, x), (b, y)| y.cmp(x).then(a.len().cmp(&b.len())).then(a.cmp(b)));
    found
        .into_iter()
        .take(limit)
        .map(|(f, _)| f.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_respects_gitignore_and_hidden_files_and_matches_fuzzily() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/agent")).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/agent/main.rs"), "").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("README.md"), "").unwrap();
        std::fs::write(root.join("target/debug/main.rs"), "").unwrap();
        std::fs::write(root.join(".env"), "").unwrap();
        let files = project_files(root);
        assert_eq!(files, ["README.md", "src/agent/main.rs", "src/lib.rs"]);
        assert_eq!(fuzzy("amain", &files, 10), ["src/agent/main.rs"]);
        assert_eq!(fuzzy("lib", &files, 10), ["src/lib.rs"]);
        assert_eq!(fuzzy("readme", &files, 10), ["README.md"]);
        assert!(fuzzy("zzz", &files, 10).is_empty());
        assert_eq!(fuzzy("", &files, 2), ["README.md", "src/agent/main.rs"]);
    }
}
