//! mm-skills: finding skills (markdown procedures) under the skills folder
//! and rendering the read_skill catalogue, and finding custom slash
//! commands (markdown prompts, [`commands`]) the same way. It knows nothing
//! of tools or the model.
//!
//! A skill is `<dir>/<name>.md` or `<dir>/<name>/SKILL.md`; the flat file
//! wins when both exist. It must never read outside the skills folder: names
//! are base names only, and a symlink whose target leaves the folder is
//! ignored as if it were absent.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agents;
pub mod commands;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The name the model asks for.
    pub name: String,
    /// The markdown file, resolved (symlinks followed, inside the folder).
    pub path: PathBuf,
    /// One line, possibly empty (see [`description_of`]).
    pub description: String,
}

/// Reading a skill's file failed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The skill's file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// The skill's file.
        path: PathBuf,
    },
}

/// Every skill in `dir`, sorted by name. A missing or unreadable folder has
/// none: skills are optional.
pub fn discover(dir: &Path) -> Vec<Skill> {
    let Ok(root) = fs::canonicalize(dir) else {
        return Vec::new();
    };
    let Ok(entries) = fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut names = std::collections::BTreeSet::new();
    for entry in entries.flatten() {
        let Ok(file) = entry.file_name().into_string() else {
            continue;
        };
        let name = file.strip_suffix(".md").unwrap_or(&file);
        names.insert(name.to_string());
    }
    let mut found = BTreeMap::new();
    for name in names {
        if let Some(skill) = resolve(&root, &name) {
            found.insert(name, skill);
        }
    }
    found.into_values().collect()
}

/// The skill called `name` in `dir`, if `name` is a plain base name.
pub fn find(dir: &Path, name: &str) -> Option<Skill> {
    let root = fs::canonicalize(dir).ok()?;
    resolve(&root, name)
}

/// The last path component of what the model sent (`../x` → `x`), so that
/// a name can never walk out of the folder. Empty when there is none.
pub fn base_name(name: &str) -> &str {
    Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
}

/// The whole markdown of `skill`.
pub fn read(skill: &Skill) -> Result<String, SkillError> {
    let bytes = fs::read(&skill.path).map_err(|source| SkillError::Io {
        path: skill.path.clone(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| SkillError::NotUtf8 {
        path: skill.path.clone(),
    })
}

/// The catalogue lines: `  <name> — <description>`, or `  <name>` when the
/// description is empty, in the order given (discover sorts by name).
pub fn catalogue(skills: &[Skill]) -> String {
    skills
        .iter()
        .map(|s| {
            if s.description.is_empty() {
                format!("  {}", s.name)
            } else {
                format!("  {} — {}", s.name, s.description)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A skill's one-line description: the front matter's `description:`,
/// else the first non-empty line after the front matter that is not a
/// heading, else empty. Whitespace runs (a folded YAML value) become one
/// space.
pub fn description_of(markdown: &str) -> String {
    let text = markdown.strip_prefix('\u{feff}').unwrap_or(markdown);
    let (front, body) = split_front_matter(text);
    if let Some(front) = front
        && let Ok(value) = serde_norway::from_str::<serde_norway::Value>(front)
        && let Some(desc) = value.get("description").and_then(|d| d.as_str())
    {
        let one_line = desc.split_whitespace().collect::<Vec<_>>().join(" ");
        if !one_line.is_empty() {
            return one_line;
        }
    }
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("")
        .to_string()
}

/// `(Some(yaml), rest)` when the text opens with a `---` line closed by a
/// `---` or `...` line; otherwise `(None, text)`.
pub(crate) fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return (None, text);
    };
    if first.trim_end() != "---" {
        return (None, text);
    }
    let yaml_start = first.len();
    let mut pos = yaml_start;
    for line in lines {
        let end = pos + line.len();
        if matches!(line.trim_end(), "---" | "...") {
            return (Some(&text[yaml_start..pos]), &text[end..]);
        }
        pos = end;
    }
    (None, text)
}

/// `<root>/<name>.md`, else `<root>/<name>/SKILL.md`, each only when it is
/// a regular file whose real path stays inside `root` (canonical).
fn resolve(root: &Path, name: &str) -> Option<Skill> {
    // Hidden names (and `.`, `..`) are never skills.
    if name.is_empty() || name.starts_with('.') || name != base_name(name) {
        return None;
    }
    let candidates = [
        root.join(format!("{name}.md")),
        root.join(name).join("SKILL.md"),
    ];
    candidates.iter().find_map(|candidate| {
        let real = fs::canonicalize(candidate).ok()?;
        if !real.starts_with(root) || !real.is_file() {
            return None;
        }
        let description = fs::read_to_string(&real)
            .map(|t| description_of(&t))
            .unwrap_or_default();
        Some(Skill {
            name: name.to_string(),
            path: real,
            description,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_description_wins() {
        let md = "---\nname: x\ndescription: Deploy the app\n---\n# Title\n\nBody line\n";
        assert_eq!(description_of(md), "Deploy the app");
    }

    #[test]
    fn folded_description_becomes_one_line() {
        let md = "---\ndescription: >\n  first part\n  second part\n---\nbody\n";
        assert_eq!(description_of(md), "first part second part");
    }

    #[test]
    fn first_non_heading_line_after_front_matter() {
        let md = "---\nname: x\n---\n\n# Heading\n\n  Use this to release.  \nmore\n";
        assert_eq!(description_of(md), "Use this to release.");
        assert_eq!(description_of("# Only a heading\n\n## Another\n"), "");
        assert_eq!(description_of(""), "");
        assert_eq!(
            description_of("plain first line\nsecond"),
            "plain first line"
        );
    }

    #[test]
    fn unclosed_or_broken_front_matter_falls_back_to_lines() {
        // Unclosed: the `---` line is not front matter, and it is no heading.
        assert_eq!(description_of("---\ndescription: x\n"), "---");
        // Invalid YAML: the first body line.
        assert_eq!(description_of("---\n: : [\n---\nthe body\n"), "the body");
        // Non-string description: the first body line.
        assert_eq!(
            description_of("---\ndescription: [1, 2]\n---\nbody\n"),
            "body"
        );
    }

    #[test]
    fn crlf_front_matter_and_bom() {
        let md = "\u{feff}---\r\ndescription: Windows skill\r\n---\r\nbody\r\n";
        assert_eq!(description_of(md), "Windows skill");
    }

    #[test]
    fn catalogue_lines() {
        let s = |name: &str, d: &str| Skill {
            name: name.into(),
            path: PathBuf::new(),
            description: d.into(),
        };
        assert_eq!(
            catalogue(&[s("alpha", "Does A"), s("beta", "")]),
            "  alpha — Does A\n  beta"
        );
    }

    #[test]
    fn base_name_cuts_every_directory() {
        assert_eq!(base_name("../../etc/passwd"), "passwd");
        assert_eq!(base_name("a/b"), "b");
        assert_eq!(base_name("plain"), "plain");
        assert_eq!(base_name(".."), "");
        assert_eq!(base_name(""), "");
    }
}
