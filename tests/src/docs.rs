//! Docs that cannot drift: every path the code map of
//! docs/architecture.md names exists, and every link between the
//! repository's Markdown pages (a file, and its `#anchor` when it has one)
//! leads somewhere.

use std::path::{Path, PathBuf};

/// The pages whose links are checked: the README and everything under
/// `docs/`.
pub fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, every other
/// character but letters, digits, `-` and `_` dropped.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (outside code fences).
pub fn anchors(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            out.push(slug(&line[hashes..]));
        }
    }
    out
}

/// The targets of a page's Markdown links `[text](target)`, outside code
/// fences and inline code.
pub fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Inline code spans are not links.
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else {
                break;
            };
            out.push(rest[..end].to_owned());
            rest = &rest[end..];
        }
    }
    out
}

/// Every link of the checked pages that leads nowhere, as
/// `page: target (why)`. Links out of the repository are not followed.
pub fn broken_links(root: &Path) -> Vec<String> {
    let mut broken = Vec::new();
    for page in pages(root) {
        let Ok(text) = std::fs::read_to_string(&page) else {
            continue;
        };
        let shown = page
            .strip_prefix(root)
            .unwrap_or(&page)
            .display()
            .to_string();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap_or(root).join(file)
            };
            if !path.exists() {
                broken.push(format!("{shown}: {target} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor
                && path.extension().is_some_and(|e| e == "md")
            {
                let target_text = std::fs::read_to_string(&path).unwrap_or_default();
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    broken.push(format!("{shown}: {target} (no such heading)"));
                }
            }
        }
    }
    broken
}

/// Every path the code map of docs/architecture.md names that does not
/// exist: each entry is `` **`crates/x`**: `src/a.rs`: … `` and the
/// paths after the crate are relative to it.
pub fn missing_code_map_paths(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap_or_default();
    let Some(start) = text.find("## Code map") else {
        return vec!["docs/architecture.md has no code map".to_owned()];
    };
    let map = &text[start..];
    let map = match map[3..].find("\n## ") {
        Some(end) => &map[..end + 3],
        None => map,
    };
    let mut missing = Vec::new();
    let mut krate: Option<String> = None;
    for line in map.lines() {
        if let Some(rest) = line.strip_prefix("- **`")
            && let Some(end) = rest.find("`**")
        {
            let dir = rest[..end].to_owned();
            if !root.join(&dir).is_dir() {
                missing.push(dir.clone());
            }
            krate = Some(dir);
        }
        let Some(dir) = &krate else { continue };
        for (i, part) in line.split('`').enumerate() {
            let is_path = i % 2 == 1
                && (part.starts_with("src/")
                    || part.starts_with("tests/")
                    || part.starts_with("examples/")
                    || part.starts_with("benches/"))
                && !part.contains(' ');
            if is_path && !exists(&root.join(dir), part) {
                missing.push(format!("{}/{part}", dir.trim_end_matches('/')));
            }
        }
    }
    missing
}

/// Where the README's layout table and docs/architecture.md's floors
/// table disagree with the workspace: a crate missing from one of them, or
/// a floor other than `floor` gives.
pub fn table_disagreements(root: &Path, crates: &[(String, Option<u8>)]) -> Vec<String> {
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    let arch = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap_or_default();
    let mut wrong = Vec::new();
    for (name, floor) in crates {
        let Some(floor) = floor else { continue };
        if !readme
            .lines()
            .any(|l| l.starts_with("| `") && l.contains(&format!("/{name}`")))
        {
            wrong.push(format!("README.md's layout table lacks {name}"));
        }
        if *floor < 5 {
            let row = format!("| {floor} | `{name}` |");
            if !arch.lines().any(|l| l.starts_with(&row)) {
                wrong.push(format!("docs/architecture.md's floors table lacks `{row}`"));
            }
        }
    }
    wrong
}

/// Whether `path` exists under `dir`; a `*` in its file name matches any
/// run of characters (`tests/faults*.rs`).
fn exists(dir: &Path, path: &str) -> bool {
    let Some((folder, name)) = path.rsplit_once('/') else {
        return dir.join(path).exists();
    };
    let Some((before, after)) = name.split_once('*') else {
        return dir.join(path).exists();
    };
    std::fs::read_dir(dir.join(folder)).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.len() >= before.len() + after.len() && n.starts_with(before) && n.ends_with(after)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_as_github_makes_them() {
        assert_eq!(slug(" The model's window"), "the-models-window");
        assert_eq!(slug("Keys stay out of tools"), "keys-stay-out-of-tools");
        assert_eq!(slug("`mm-repl -p`: exit codes"), "mm-repl--p-exit-codes");
    }

    #[test]
    fn links_outside_code_only() {
        let text = "see [a](b.md#c) and `[x](y)`\n```\n[z](w)\n```\n";
        assert_eq!(links(text), ["b.md#c"]);
    }
}
