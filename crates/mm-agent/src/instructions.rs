//! Instructions files (`AGENTS.md` by default): the user's global one, then
//! one per folder from the repository root down to the working directory,
//! so a monorepo's root rules come before a package's.
//!
//! The `instructions` setting names the files looked for at every level
//! (it replaces `AGENTS.md`). Their combined text has one size limit; when
//! it is over, the outermost files are cut first (the global file, then the
//! root's), since the nearest ones speak of the code being worked on.
//! Project files whose real path leaves the repository are not read, nor
//! project files that are symbolic links to anything but Markdown, files
//! inside `.git`, or files a
//! `read_file` deny rule covers: each is skipped with one line saying so,
//! so a repository cannot smuggle `.env` into the prompt under another name.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The combined instructions text may hold this many bytes, so huge files
/// cannot take a small model's whole window.
pub const MAX_INSTRUCTIONS: usize = 16 * 1024;

/// How much of one file is read: a few bytes more than the limit, to end
/// on a whole character.
const READ_CAP: u64 = MAX_INSTRUCTIONS as u64 + 4;

/// A file cut to fewer bytes than this is left out instead: a few lines
/// torn from the top of a file would mislead more than help.
const MIN_PART: usize = 512;

/// Where a file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's own, for every project: in mm's user folder.
    Global,
    /// A folder between the repository root and the working directory.
    Project,
}

/// How much of a file the prompt holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// All of it.
    Whole,
    /// Its beginning: the size limit was reached.
    Cut,
    /// None: nearer files took the whole limit.
    LeftOut,
}

/// One instructions file that exists and was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// The path as shown: relative to the working directory for project
    /// files (`../AGENTS.md`), whole for the global file.
    pub shown: String,
    /// Global or project.
    pub scope: Scope,
    /// The text the prompt holds (trimmed; part of it when cut).
    pub text: String,
    /// The size of the whole file, in bytes.
    pub size: u64,
    /// Whole, cut or left out.
    pub fate: Fate,
}

/// The instructions of a session, outermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// Every file found, in prompt order.
    pub files: Vec<InstructionFile>,
    /// The names looked for (for the banner when none was found).
    pub names: Vec<String>,
    /// One line per file found but not read, and why.
    pub skipped: Vec<String>,
}

impl Instructions {
    /// Look for `names` in `user_dir` (the global files), then in each
    /// folder from the repository root holding `cwd` down to `cwd`; without
    /// a repository only `cwd` is looked in.
    pub fn gather(cwd: &Path, user_dir: &Path, names: &[String]) -> Instructions {
        Instructions::gather_with(cwd, user_dir, names, &|_| None)
    }

    /// Like [`Instructions::gather`]; `denied` names the deny rule that
    /// covers a path (given as found and resolved), if any: such a file is
    /// skipped.
    pub fn gather_with(
        cwd: &Path,
        user_dir: &Path,
        names: &[String],
        denied: &dyn Fn(&Path) -> Option<String>,
    ) -> Instructions {
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        let refused = |found: &Path, real: &Path| denied(found).or_else(|| denied(real));
        let mut seen: Vec<PathBuf> = Vec::new();
        for name in names {
            let found = user_dir.join(name);
            if let Some(real) = fs::canonicalize(&found).ok()
                && !seen.contains(&real)
            {
                if let Some(rule) = refused(&found, &real) {
                    skipped.push(skip_line(&found.display().to_string(), &deny_why(&rule)));
                    continue;
                }
                let Some((text, size)) = read(&real) else {
                    continue;
                };
                seen.push(real);
                files.push(InstructionFile {
                    shown: user_dir.join(name).display().to_string(),
                    scope: Scope::Global,
                    text,
                    size,
                    fate: Fate::Whole,
                });
            }
        }
        let here = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let root = repository_root(&here).unwrap_or_else(|| here.clone());
        let levels: Vec<&Path> = {
            let mut up: Vec<&Path> = here
                .ancestors()
                .take_while(|dir| dir.starts_with(&root))
                .collect();
            up.reverse();
            up
        };
        for level in levels {
            let back = here
                .strip_prefix(level)
                .map(|rest| rest.components().count())
                .unwrap_or(0);
            for name in names {
                let found = level.join(name);
                let shown = format!("{}{name}", "../".repeat(back));
                // Inside the project only, symlinks resolved: a repository's
                // AGENTS.md linking to ~/.ssh/… is not read.
                let Ok(real) = fs::canonicalize(&found) else {
                    continue;
                };
                if !real.starts_with(&root) || seen.contains(&real) {
                    continue;
                }
                if let Some(why) = project_refusal(&found, &real, &root, &refused) {
                    skipped.push(skip_line(&shown, &why));
                    continue;
                }
                let Some((text, size)) = read(&real) else {
                    continue;
                };
                seen.push(real);
                files.push(InstructionFile {
                    shown,
                    scope: Scope::Project,
                    text,
                    size,
                    fate: Fate::Whole,
                });
            }
        }
        cut(&mut files, MAX_INSTRUCTIONS);
        Instructions {
            files,
            names: names.to_vec(),
            skipped,
        }
    }

    /// The text that follows the base system prompt: one headed section per
    /// file the prompt holds.
    pub fn prompt_text(&self) -> String {
        let mut out = String::new();
        for file in self.files.iter().filter(|f| f.fate != Fate::LeftOut) {
            out.push_str(match file.scope {
                Scope::Global => "\n\nUser instructions from ",
                Scope::Project => "\n\nProject instructions from ",
            });
            out.push_str(&file.shown);
            out.push_str(":\n");
            out.push_str(&file.text);
            if file.fate == Fate::Cut {
                out.push_str("\n[cut: the instructions are over their size limit]");
            }
        }
        out
    }

    /// The banner's line: the files read, outermost first.
    pub fn banner_line(&self) -> String {
        let read: Vec<&str> = self
            .files
            .iter()
            .filter(|f| f.fate != Fate::LeftOut)
            .map(|f| f.shown.as_str())
            .collect();
        if read.is_empty() {
            format!("instructions  none ({} not found)", self.names.join(", "))
        } else {
            format!("instructions  {}", read.join(", "))
        }
    }

    /// Said under the banner when the size limit cut files: which were cut
    /// and which left out. `None` when every file is whole.
    pub fn notice(&self) -> Option<String> {
        let named = |fate: Fate| -> Vec<String> {
            self.files
                .iter()
                .filter(|f| f.fate == fate)
                .map(|f| format!("{} ({} bytes)", f.shown, f.size))
                .collect()
        };
        let cut = named(Fate::Cut);
        let left_out = named(Fate::LeftOut);
        if cut.is_empty() && left_out.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if !left_out.is_empty() {
            parts.push(format!("left out {}", left_out.join(", ")));
        }
        if !cut.is_empty() {
            parts.push(format!("cut {}", cut.join(", ")));
        }
        Some(format!(
            "instructions are over the {} KB limit, outermost first: {}",
            MAX_INSTRUCTIONS / 1024,
            parts.join("; ")
        ))
    }
}

/// Why a project file is not read, if it is not: a link (anywhere on its
/// way inside the project), a file inside `.git`, or a deny rule.
fn project_refusal(
    found: &Path,
    real: &Path,
    root: &Path,
    refused: &dyn Fn(&Path, &Path) -> Option<String>,
) -> Option<String> {
    if let Ok(inside) = real.strip_prefix(root)
        && inside.components().any(|c| c.as_os_str() == ".git")
    {
        return Some("it is inside .git".to_owned());
    }
    // `AGENTS.md -> CLAUDE.md` is common and harmless; a link to anything
    // that is not Markdown (`.env`, a key file) is how a repository would
    // smuggle a secret in.
    let markdown = real
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md"));
    if !markdown && is_link_below(found, root) {
        return Some("it is a symbolic link to a file that is not Markdown".to_owned());
    }
    refused(found, real).map(|rule| deny_why(&rule))
}

/// Whether `path` or a folder on its way up to `root` (excluded) is a
/// symbolic link.
fn is_link_below(path: &Path, root: &Path) -> bool {
    path.ancestors()
        .take_while(|p| *p != root && p.starts_with(root))
        .any(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
}

fn deny_why(rule: &str) -> String {
    format!("denied by rule \"{rule}\"")
}

fn skip_line(shown: &str, why: &str) -> String {
    format!("instructions: skipped {shown}: {why}")
}

/// The nearest folder at or above `dir` that holds `.git` (a folder, or
/// the file of a worktree or submodule).
pub fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| fs::symlink_metadata(d.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

/// The trimmed text of a regular file (never a FIFO or device) and its
/// size, reading no more than the limit can use. `None` when it is not
/// a readable UTF-8 text or is empty.
fn read(path: &Path) -> Option<(String, u64)> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(READ_CAP)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // Only a character torn by the read's end is forgiven.
        Err(e) if (e.utf8_error().error_len().is_none()) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).ok()?
        }
        Err(_) => return None,
    };
    let text = text.trim();
    (!text.is_empty()).then(|| (text.to_string(), meta.len()))
}

/// Keep the innermost files whole while the limit allows; the first that
/// does not fit is cut to what is left, and those outside it are left out.
fn cut(files: &mut [InstructionFile], limit: usize) {
    let mut left = limit;
    for file in files.iter_mut().rev() {
        // A file larger than the read was never read whole.
        let complete = file.size <= READ_CAP;
        if complete && file.text.len() <= left {
            left -= file.text.len();
            continue;
        }
        if left >= MIN_PART {
            let mut end = left.min(file.text.len());
            while !file.text.is_char_boundary(end) {
                end -= 1;
            }
            // End on a line when one ends in the second half.
            if let Some(line) = file.text[..end].rfind('\n')
                && line > end / 2
            {
                end = line;
            }
            file.text.truncate(end);
            file.text.truncate(file.text.trim_end().len());
            file.fate = Fate::Cut;
            left = 0;
        } else {
            file.text.clear();
            file.fate = Fate::LeftOut;
            left = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["AGENTS.md".into()]
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn root_to_working_directory_after_the_global_file() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let pkg = repo.join("packages/web");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(&pkg).unwrap();
        let user = tmp.path().join("user");
        write(&user.join("AGENTS.md"), "Global rule.");
        write(&repo.join("AGENTS.md"), "Root rule.");
        write(&pkg.join("AGENTS.md"), "Package rule.");
        // Above the repository: never read.
        write(&tmp.path().join("AGENTS.md"), "Outside rule.");
        let found = Instructions::gather(&pkg, &user, &names());
        let shown: Vec<_> = found.files.iter().map(|f| f.shown.as_str()).collect();
        let global = user.join("AGENTS.md").display().to_string();
        assert_eq!(shown, [global.as_str(), "../../AGENTS.md", "AGENTS.md"]);
        let text = found.prompt_text();
        assert_eq!(
            text,
            format!(
                "\n\nUser instructions from {global}:\nGlobal rule.\n\nProject instructions from ../../AGENTS.md:\nRoot rule.\n\nProject instructions from AGENTS.md:\nPackage rule."
            )
        );
        assert_eq!(found.notice(), None);
        assert_eq!(
            found.banner_line(),
            format!("instructions  {global}, ../../AGENTS.md, AGENTS.md")
        );
    }

    #[test]
    fn without_a_repository_only_the_working_directory_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        fs::create_dir_all(&dir).unwrap();
        write(&tmp.path().join("a/AGENTS.md"), "Parent.");
        let found = Instructions::gather(&dir, &tmp.path().join("none"), &names());
        assert!(found.files.is_empty());
        assert_eq!(
            found.banner_line(),
            "instructions  none (AGENTS.md not found)"
        );
    }

    #[test]
    fn the_setting_names_replace_agents_md_at_every_level_and_a_file_is_read_once() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        fs::write(repo.join(".git"), "gitdir: elsewhere\n").unwrap();
        let sub = repo.join("sub");
        write(&repo.join("CLAUDE.md"), "Root claude.");
        write(&repo.join("AGENTS.md"), "Not wanted.");
        write(&sub.join("CONTRIBUTING.md"), "Sub contributing.");
        // A link to a file already read is not read twice.
        std::os::unix::fs::symlink(repo.join("CLAUDE.md"), sub.join("CLAUDE.md")).unwrap();
        let names = vec!["CLAUDE.md".to_string(), "CONTRIBUTING.md".to_string()];
        let found = Instructions::gather(&sub, &repo.join("user"), &names);
        let shown: Vec<_> = found.files.iter().map(|f| f.shown.as_str()).collect();
        assert_eq!(shown, ["../CLAUDE.md", "CONTRIBUTING.md"]);
        assert!(!found.prompt_text().contains("Not wanted"));
    }

    #[test]
    fn a_project_file_linking_outside_the_repository_is_not_read() {
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("secret.txt"), "TOP SECRET");
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir(repo.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            repo.path().join("AGENTS.md"),
        )
        .unwrap();
        let found = Instructions::gather(repo.path(), &repo.path().join("u"), &names());
        assert!(found.files.is_empty(), "{found:?}");
    }

    #[test]
    fn a_fifo_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("AGENTS.md");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let found = Instructions::gather(dir.path(), &dir.path().join("u"), &names());
        assert!(found.files.is_empty());
    }

    #[test]
    fn over_the_limit_the_outermost_files_are_cut_first() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let pkg = repo.join("pkg");
        fs::create_dir_all(repo.join(".git")).unwrap();
        let user = tmp.path().join("user");
        let line = "x".repeat(99) + "\n";
        write(&user.join("AGENTS.md"), &line.repeat(40)); // 4000 bytes
        write(&repo.join("AGENTS.md"), &line.repeat(60)); // 6000
        write(&pkg.join("AGENTS.md"), &line.repeat(120)); // 12000
        let found = Instructions::gather(&pkg, &user, &names());
        let fates: Vec<_> = found.files.iter().map(|f| f.fate).collect();
        assert_eq!(fates, [Fate::LeftOut, Fate::Cut, Fate::Whole]);
        let kept: usize = found.files.iter().map(|f| f.text.len()).sum();
        assert!(kept <= MAX_INSTRUCTIONS, "{kept}");
        // The cut one ends on a whole line.
        assert!(found.files[1].text.ends_with('x'));
        assert_eq!(found.files[1].text.len() % 100, 99);
        let global = user.join("AGENTS.md").display().to_string();
        assert_eq!(
            found.notice().unwrap(),
            format!(
                "instructions are over the 16 KB limit, outermost first: left out {global} (4000 bytes); cut ../AGENTS.md (6000 bytes)"
            )
        );
        let text = found.prompt_text();
        assert!(!text.contains("User instructions"));
        assert!(text.contains("x\n[cut: the instructions are over their size limit]\n\nProject instructions from AGENTS.md:\n"));
        assert_eq!(found.banner_line(), "instructions  ../AGENTS.md, AGENTS.md");
    }

    #[test]
    fn one_huge_file_is_read_only_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let big = "é".repeat(MAX_INSTRUCTIONS); // twice the limit in bytes
        write(&dir.path().join("AGENTS.md"), &big);
        let found = Instructions::gather(dir.path(), &dir.path().join("u"), &names());
        let file = &found.files[0];
        assert_eq!(file.fate, Fate::Cut);
        assert!(file.text.len() <= MAX_INSTRUCTIONS);
        assert!(file.text.len() > MAX_INSTRUCTIONS - 4);
        assert_eq!(file.size, big.len() as u64);
    }
}
