//! The lists that open above the input: the `/` picker over the shared
//! command table, the `@` file list (fuzzy over the project's files; Tab on
//! a path with the list closed completes it by folder), and a command's own
//! choices.

use std::path::Path;

use mm_agent::commands::{Commands, Front};

/// Which list is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Commands,
    Paths,
    /// A command's list to choose from (`/resume`, `/model`), filtered by
    /// what is typed.
    Pick,
}

/// One row of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What the row shows first (`/compact [focus]`, `src/`).
    pub label: String,
    /// The description, for commands.
    pub detail: String,
    /// The text that replaces what was typed when the row is taken.
    pub insert: String,
    /// Enter runs it at once (a command whose argument may be left out);
    /// else it is put in the input for its argument.
    pub run: bool,
}

/// An open list and its selected row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    pub kind: Kind,
    pub items: Vec<Item>,
    pub selected: usize,
}

impl Popup {
    pub fn up(&mut self) {
        if !self.items.is_empty() {
            self.selected = (self.selected + self.items.len() - 1) % self.items.len();
        }
    }

    pub fn down(&mut self) {
        if !self.items.is_empty() {
            self.selected = (self.selected + 1) % self.items.len();
        }
    }

    pub fn chosen(&self) -> Option<&Item> {
        self.items.get(self.selected)
    }
}

/// The window's commands whose name starts with `typed` (the text after `/`).
pub fn commands(typed: &str, table: &Commands) -> Vec<Item> {
    table
        .for_front(Front::Window)
        .filter(|c| c.name().starts_with(typed))
        .map(|c| Item {
            label: c.usage(),
            detail: if c.needs_argument() {
                format!("{} (type the argument, then Enter)", c.description())
            } else {
                c.description().to_string()
            },
            insert: if c.argument().is_some() {
                format!("/{} ", c.name())
            } else {
                format!("/{}", c.name())
            },
            run: !c.needs_argument(),
        })
        .collect()
}

/// The picker for what is in the input, or `None` when it should be closed
/// (the text is not a bare `/name` being typed).
pub fn picker_for(input: &str, table: &Commands) -> Option<Popup> {
    let typed = input.strip_prefix('/')?;
    if typed.contains(char::is_whitespace) || typed.contains('/') {
        return None;
    }
    let items = commands(typed, table);
    if items.is_empty() {
        return None;
    }
    Some(Popup {
        kind: Kind::Commands,
        items,
        selected: 0,
    })
}

/// An `@` mention being typed: where it starts and what follows the `@`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// Char index of the `@` in the line.
    pub start: usize,
    /// The path typed so far (backslash escapes removed).
    pub partial: String,
    /// Chars from the `@` to the cursor.
    pub len: usize,
}

/// The mention that ends at char `col` of `line`, if the word there starts
/// with `@` (and the `@` starts a word, as mm_agent's mention rules say).
pub fn mention_at(line: &str, col: usize) -> Option<Mention> {
    let chars: Vec<char> = line.chars().collect();
    let col = col.min(chars.len());
    let mut i = col;
    while i > 0 {
        let c = chars[i - 1];
        let escaped = i >= 2 && chars[i - 2] == '\\';
        if c.is_whitespace() && !escaped {
            break;
        }
        i -= 1;
    }
    if chars.get(i) != Some(&'@') {
        return None;
    }
    let raw: String = chars[i + 1..col].iter().collect();
    if raw.starts_with('"') || raw.starts_with('\'') {
        return None;
    }
    Some(Mention {
        start: i,
        partial: raw.replace("\\ ", " "),
        len: col - i,
    })
}

/// `@path` as it must be typed (spaces escaped).
pub fn mention_text(path: &str) -> String {
    format!("@{}", path.replace(' ', "\\ "))
}

/// Most names listed from one folder.
const MAX_PATHS: usize = 200;

/// Paths under `cwd` that complete `partial`, sorted, folders with a `/`.
/// Hidden names only when the typed name starts with `.`.
pub fn paths(cwd: &Path, partial: &str) -> Vec<String> {
    let (dir, name) = match partial.rfind('/') {
        Some(i) => (&partial[..=i], &partial[i + 1..]),
        None => ("", partial),
    };
    let base = if dir.is_empty() {
        cwd.to_path_buf()
    } else {
        cwd.join(dir)
    };
    let Ok(read) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut out: Vec<String> = read
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            if !file.starts_with(name) || (file.starts_with('.') && !name.starts_with('.')) {
                return None;
            }
            let is_dir = e.file_type().ok()?.is_dir() || e.path().is_dir();
            Some(format!("{dir}{file}{}", if is_dir { "/" } else { "" }))
        })
        .take(MAX_PATHS)
        .collect();
    out.sort();
    out
}

/// The longest prefix all of `items` share.
pub fn common_prefix(items: &[String]) -> String {
    let Some(first) = items.first() else {
        return String::new();
    };
    let mut end = first.len();
    for item in &items[1..] {
        end = first
            .char_indices()
            .zip(item.chars())
            .take_while(|((_, a), b)| a == b)
            .map(|((i, a), _)| i + a.len_utf8())
            .last()
            .unwrap_or(0)
            .min(end);
    }
    first[..end].to_string()
}

/// The completion list for `paths`.
pub fn path_popup(paths: &[String]) -> Popup {
    Popup {
        kind: Kind::Paths,
        items: paths
            .iter()
            .map(|p| Item {
                label: p.clone(),
                detail: String::new(),
                insert: mention_text(p),
                run: false,
            })
            .collect(),
        selected: 0,
    }
}

/// Most rows of the `@` file list (the best matches of what is typed).
pub const MAX_FILE_ROWS: usize = 50;

/// The `@` list: the project files that match `partial` fuzzily, best
/// first; taking a row puts `@path ` in the input (a space after it, so the
/// list stays closed for the words that follow). `None` when nothing matches.
pub fn file_popup(files: &[String], partial: &str) -> Option<Popup> {
    let found = mm_ui::files::fuzzy(partial, files, MAX_FILE_ROWS);
    if found.is_empty() {
        return None;
    }
    Some(Popup {
        kind: Kind::Paths,
        items: found
            .into_iter()
            .map(|p| Item {
                insert: format!("{} ", mention_text(&p)),
                label: p,
                detail: String::new(),
                run: false,
            })
            .collect(),
        selected: 0,
    })
}

/// The rows of `pick` that hold what is typed (see [`mm_agent::commands::Pick::filter`]).
pub fn pick_popup(pick: &mm_agent::commands::Pick, typed: &str) -> Popup {
    Popup {
        kind: Kind::Pick,
        items: pick
            .filter(typed)
            .into_iter()
            .map(|(_, row)| Item {
                label: row.label.clone(),
                detail: String::new(),
                insert: row.command.clone(),
                run: true,
            })
            .collect(),
        selected: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picker_lists_the_window_slice_of_the_table() {
        let table = Commands::builtin();
        let all = picker_for("/", &table).unwrap();
        let want: Vec<String> = mm_agent::commands::for_front(Front::Window)
            .map(|c| c.name().to_string())
            .collect();
        let got: Vec<String> = all
            .items
            .iter()
            .map(|i| i.insert.trim().trim_start_matches('/').to_string())
            .collect();
        assert_eq!(got, want);
        let c = picker_for("/co", &table).unwrap();
        let labels: Vec<_> = c.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["/compact [focus]", "/copy"]);
        // Enter runs a command whose argument may be left out; Tab puts it
        // in the input, with a space for the argument.
        assert!(c.items[0].run, "compact's focus is optional: Enter runs it");
        assert_eq!(c.items[0].insert, "/compact ");
        assert!(c.items[1].run);
        assert_eq!(picker_for("/compact now", &table), None);
        assert_eq!(picker_for("/zzz", &table), None);
        assert_eq!(picker_for("hello", &table), None);
    }

    #[test]
    fn mentions_are_found_at_the_cursor() {
        let m = mention_at("look at @src/ma", 15).unwrap();
        assert_eq!((m.start, m.partial.as_str(), m.len), (8, "src/ma", 7));
        assert_eq!(mention_at("mail me@example", 15), None);
        assert_eq!(mention_at("@my\\ fi", 7).unwrap().partial, "my fi");
        assert_eq!(mention_at("no mention", 10), None);
    }

    #[test]
    fn paths_complete_from_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("src/mod.rs"), "").unwrap();
        std::fs::write(dir.path().join("my file.txt"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        assert_eq!(paths(dir.path(), "s"), ["src/"]);
        assert_eq!(paths(dir.path(), "src/m"), ["src/main.rs", "src/mod.rs"]);
        assert_eq!(paths(dir.path(), ""), ["my file.txt", "src/"]);
        assert_eq!(paths(dir.path(), "."), [".hidden"]);
        assert_eq!(common_prefix(&paths(dir.path(), "src/m")), "src/m");
        assert_eq!(common_prefix(&["abcd".into(), "abce".into()]), "abc");
        assert_eq!(mention_text("my file.txt"), "@my\\ file.txt");
    }

    #[test]
    fn the_file_list_filters_fuzzily_and_inserts_the_mention_with_a_space() {
        let files: Vec<String> = ["README.md", "src/agent/main.rs", "my file.txt"]
            .map(String::from)
            .to_vec();
        let p = file_popup(&files, "amain").unwrap();
        assert_eq!(p.items.len(), 1);
        assert_eq!(p.items[0].label, "src/agent/main.rs");
        assert_eq!(p.items[0].insert, "@src/agent/main.rs ");
        assert_eq!(file_popup(&files, "").unwrap().items.len(), 3);
        assert_eq!(
            file_popup(&files, "myf").unwrap().items[0].insert,
            "@my\\ file.txt "
        );
        assert_eq!(file_popup(&files, "qqq"), None);
    }
}
