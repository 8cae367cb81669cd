//! The system prompt. Short on purpose: it must suit 8–12B local models and,
//! with the tool declarations, keep the first request under 6 KB
//! (the fixed part, without instructions files). Instructions files
//! (`AGENTS.md` by default, see [`crate::instructions`]) follow it.

use std::path::Path;

use crate::instructions::Instructions;

/// The fixed part of the system prompt.
pub const BASE: &str = "You are mm, a coding assistant working in the user's project.
Use the tools to look before you answer: run commands with bash, read files with read_file, change them with edit_file (exact text replacements) or write_file (whole files).
Work step by step. Do not invent file contents or command output: read or run it.
When a tool reports an error, read it and try another way instead of repeating the same call.
Answer briefly and plainly. When you are done, say what you did.";

/// The whole system prompt for a session rooted at `cwd`: the base text,
/// the working directory, and the instructions files found for it.
pub fn system_prompt(cwd: &Path, instructions: &Instructions) -> String {
    let mut prompt = String::from(BASE);
    prompt.push_str("\nWorking directory: ");
    prompt.push_str(&cwd.display().to_string());
    prompt.push_str(&instructions.prompt_text());
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(dir: &Path) -> String {
        let found = Instructions::gather(dir, &dir.join("no-user"), &["AGENTS.md".into()]);
        system_prompt(dir, &found)
    }

    #[test]
    fn agents_md_is_appended_when_present() {
        let dir = tempfile::tempdir().unwrap();
        let without = prompt(dir.path());
        assert!(without.starts_with(BASE));
        assert!(!without.contains("Project instructions"));
        std::fs::write(
            dir.path().join("AGENTS.md"),
            "Run `make test` before you finish.\n",
        )
        .unwrap();
        let with = prompt(dir.path());
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
        assert!(!prompt(dir.path()).contains("TOP SECRET"));
        // A link that stays inside the project is fine.
        std::fs::write(dir.path().join("real.md"), "Use tabs.").unwrap();
        std::fs::remove_file(dir.path().join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.md"), dir.path().join("AGENTS.md"))
            .unwrap();
        assert!(prompt(dir.path()).ends_with("Use tabs."));
    }

    #[test]
    fn the_base_prompt_is_small() {
        assert!(BASE.len() < 1024, "{} bytes", BASE.len());
    }
}
