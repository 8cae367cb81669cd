//! Agent files: `<dir>/NAME.md`, a subagent the `task` tool can run. The
//! front matter gives its `description`, the `tools` it may use (a list,
//! all of its parent's when absent) and an optional `model`
//! (`PROVIDER/MODEL`); the body is its system prompt.
//!
//! As with commands, nothing is read outside the folder (hidden names and
//! links leading out are skipped) and files are bounded in size.

use std::fs;
use std::path::{Path, PathBuf};

use crate::commands::{MAX_FILE_BYTES, Problem};
use crate::split_front_matter;

/// One agent file, loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    /// The file's name without `.md`: what the `task` tool's `agent` is.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// One line for the `task` tool's list of agents.
    pub description: String,
    /// The tools it may use; `None` for all of its parent's.
    pub tools: Option<Vec<String>>,
    /// `PROVIDER/MODEL` it runs on; `None` for its parent's.
    pub model: Option<String>,
    /// Its system prompt: the text after the front matter, trimmed.
    pub body: String,
}

/// The agents of a folder and the files that could not be loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoundAgents {
    /// The loaded agents, sorted by name.
    pub agents: Vec<AgentFile>,
    /// The files left out, with the reason.
    pub problems: Vec<Problem>,
}

#[derive(serde::Deserialize)]
struct Front {
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    model: Option<String>,
}

/// Every `NAME.md` directly in `dir` (a missing folder has none).
pub fn discover(dir: &Path) -> FoundAgents {
    let mut found = FoundAgents::default();
    let Ok(root) = fs::canonicalize(dir) else {
        return found;
    };
    let Ok(entries) = fs::read_dir(&root) else {
        return found;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n.ends_with(".md"))
        .collect();
    names.sort();
    for file in names {
        let path = root.join(&file);
        let name = file.trim_end_matches(".md").to_owned();
        match load(&root, &path, name) {
            Ok(agent) => found.agents.push(agent),
            Err(why) => found.problems.push(Problem { path, why }),
        }
    }
    found
}

fn load(root: &Path, path: &Path, name: String) -> Result<AgentFile, String> {
    let ok_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok_name {
        return Err("an agent's name may hold only letters, digits, - and _".into());
    }
    let real = fs::canonicalize(path).map_err(|e| format!("cannot be read: {e}"))?;
    if !real.starts_with(root) {
        return Err("links outside the agents folder; not read".into());
    }
    let size = fs::metadata(&real).map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "is {size} bytes; an agent file may hold at most {MAX_FILE_BYTES}"
        ));
    }
    let text = fs::read_to_string(&real).map_err(|_| "is not UTF-8 text".to_string())?;
    parse(name, real, &text)
}

/// An agent from the text of its file; `Err` says what is wrong with it.
pub fn parse(name: String, path: PathBuf, text: &str) -> Result<AgentFile, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text);
    let front: Front = match front {
        Some(yaml) if !yaml.trim().is_empty() => serde_norway::from_str(yaml)
            .map_err(|e| format!("its front matter cannot be read: {e}"))?,
        _ => Front {
            description: None,
            tools: None,
            model: None,
        },
    };
    let body = body.trim().to_owned();
    let description = front
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .ok_or("has no description in its front matter")?;
    if let Some(model) = &front.model
        && !model.contains('/')
    {
        return Err(format!("model \"{model}\" is not PROVIDER/MODEL"));
    }
    Ok(AgentFile {
        name,
        path,
        description,
        tools: front.tools,
        model: front.model.filter(|m| !m.trim().is_empty()),
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_description_tools_and_model() {
        let text = "---\ndescription: Reads the docs\ntools: [read_file, grep]\nmodel: ollama/qwen3:4b\n---\nYou read docs.\n";
        let a = parse("docs".into(), PathBuf::from("docs.md"), text).unwrap();
        assert_eq!(a.description, "Reads the docs");
        assert_eq!(a.tools, Some(vec!["read_file".into(), "grep".into()]));
        assert_eq!(a.model.as_deref(), Some("ollama/qwen3:4b"));
        assert_eq!(a.body, "You read docs.");
    }

    #[test]
    fn a_file_without_description_or_with_bad_tools_is_a_problem() {
        let no = parse("x".into(), PathBuf::new(), "just a prompt");
        assert!(no.unwrap_err().contains("no description"));
        let bad = parse(
            "x".into(),
            PathBuf::new(),
            "---\ndescription: d\ntools: read_file\n---\nbody",
        );
        assert!(bad.unwrap_err().contains("front matter"));
    }

    #[test]
    fn only_md_files_of_the_folder_with_plain_names_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ok.md"), "---\ndescription: d\n---\nb").unwrap();
        std::fs::write(dir.path().join("bad name.md"), "---\ndescription: d\n---\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let found = discover(dir.path());
        let names: Vec<&str> = found.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["ok"]);
        assert_eq!(found.problems.len(), 1);
    }
}
