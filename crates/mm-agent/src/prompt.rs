//! The system prompt. Short on purpose: it must suit 8–12B local models and,
//! with the tool declarations, keep the first request under 6 KB
//! (decisions.md 24). Project instructions (`AGENTS.md` by default) follow it.

use std::path::Path;

/// The fixed part of the system prompt.
pub const BASE: &str = "You are mm, a coding assistant working in the user's project.
Use the tools to look before you answer: run commands with bash, read files with read_file, change them with edit_file (exact text replacements) or write_file (whole files).
Work step by step. Do not invent file contents or command output: read or run it.
When a tool reports an error, read it and try another way instead of repeating the same call.
Answer briefly and plainly. When you are done, say what you did.";

/// Instructions files larger than this are cut, so one huge file cannot
/// take a small model's whole window.
const MAX_INSTRUCTIONS: usize = 16 * 1024;

/// The whole system prompt for a session rooted at `cwd`: the base text, the
/// working directory, and the text of each instructions file that exists
/// (paths are relative to `cwd`; the config already refused escapes).
pub fn system_prompt(cwd: &Path, instructions: &[String]) -> String {
    let mut prompt = String::from(BASE);
    prompt.push_str("\nWorking directory: ");
    prompt.push_str(&cwd.display().to_string());
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for name in instructions {
        // Inside the project only (decisions.md 1), symlinks resolved: a
        // repository's AGENTS.md linking to ~/.ssh/… is not read.
        let Ok(path) = std::fs::canonicalize(cwd.join(name)) else {
            continue;
        };
        if !path.starts_with(&root) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut cut = text.len().min(MAX_INSTRUCTIONS);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        prompt.push_str("\n\nProject instructions from ");
        prompt.push_str(name);
        prompt.push_str(":\n");
        prompt.push_str(&text[..cut]);
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_is_appended_when_present() {
        let dir = tempfile::tempdir().unwrap();
        let without = system_prompt(dir.path(), &["AGENTS.md".into()]);
        assert!(without.starts_with(BASE));
        assert!(!without.contains("Project instructions"));
        std::fs::write(
            dir.path().join("AGENTS.md"),
            "Run `make test` before you finish.\n",
        )
        .unwrap();
        let with = system_prompt(dir.path(), &["AGENTS.md".into()]);
        assert!(
            with.ends_with(
                "Project instructions from AGENTS.md:\nRun `make test` before you finish."
            )
        );
    }

    #[test]
    fn an_instructions_file_linking_outside_the_project_is_not_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "TOP SECRET").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("AGENTS.md"),
        )
        .unwrap();
        let prompt = system_prompt(dir.path(), &["AGENTS.md".into()]);
        assert!(!prompt.contains("TOP SECRET"));
        // A link that stays inside the project is fine.
        std::fs::write(dir.path().join("real.md"), "Use tabs.").unwrap();
        std::fs::remove_file(dir.path().join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.md"), dir.path().join("AGENTS.md"))
            .unwrap();
        assert!(system_prompt(dir.path(), &["AGENTS.md".into()]).ends_with("Use tabs."));
    }

    #[test]
    fn the_base_prompt_is_small() {
        assert!(BASE.len() < 1024, "{} bytes", BASE.len());
    }
}
