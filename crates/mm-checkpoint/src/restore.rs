//! Bringing the files a turn changed back to a checkpoint's state, without
//! overwriting or deleting anything of the user's made since.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::checkpoints::{Checkpoints, Scratch};
use crate::error::CheckpointError;
use crate::git::Git;
use crate::raw::{RawChange, Side};
use crate::{Change, ChangeKind, Checkpoint, Kept, Restore};

/// One file to bring to its wanted state.
struct Todo {
    /// Relative to the top, as git writes it.
    name: Vec<u8>,
    /// Its state now, as the checkpoint just recorded sees it.
    now: Option<Side>,
    /// Its wanted state; `None`: it must go.
    to: Option<Side>,
    /// Changed after the state it was expected in: a conflict.
    changed: bool,
}

/// Something on disk that stands where a file must be written and that
/// the expected state does not explain: a folder holding more than the
/// files the restore removes, a file or link where a folder must be, a
/// file the checkpoints do not see (ignored, too large).
struct Blocker {
    /// Relative to the top.
    name: Vec<u8>,
    /// A folder (shown with a final `/`).
    dir: bool,
    /// The [`Todo`] it stands in the way of.
    todo: usize,
}

impl Checkpoints {
    /// Bring the files that differ between `expected` and `target` to their
    /// state in `target`; every other file is left alone.
    ///
    /// `expected` is the state those files should be in now: to undo a
    /// turn, `target` is the checkpoint before it and `expected` the one
    /// after it; to redo, the other way round. A file whose state now is
    /// neither (someone changed it after the turn) is a conflict, and so is
    /// anything on disk in the way of a file to write that the expected
    /// state does not explain (a folder made where a file comes back, a
    /// file where a folder comes back, an ignored file). Then nothing is
    /// written and the conflicts are returned; with `force` each one is
    /// moved aside to `<name>.mm-undo-<n>` (named in [`Change::kept`]),
    /// never deleted. Files are written as git checks them out (mode and
    /// symbolic links kept, no filter run); files `target` lacks are
    /// removed, and folders left empty by that removed. Submodules are
    /// never touched.
    pub fn restore(
        &self,
        target: &Checkpoint,
        expected: &Checkpoint,
        force: bool,
    ) -> Result<Restore, CheckpointError> {
        let scratch = self.scratch()?;
        let wanted: Vec<RawChange> = self
            .raw_diff(&scratch, expected, target)?
            .into_iter()
            .filter(|c| !c.is_gitlink())
            .collect();
        if wanted.is_empty() {
            return Ok(Restore::Done(Vec::new()));
        }
        let now = self.record()?.checkpoint;
        let moved: HashMap<Vec<u8>, Option<Side>> = self
            .raw_diff(&scratch, expected, &now)?
            .into_iter()
            .map(|c| (c.path, c.to))
            .collect();
        let mut todo = Vec::new();
        for c in wanted {
            let now = moved
                .get(&c.path)
                .cloned()
                .unwrap_or_else(|| c.from.clone());
            if now == c.to {
                continue;
            }
            let changed = now != c.from;
            todo.push(Todo {
                name: c.path,
                now,
                to: c.to,
                changed,
            });
        }
        let blockers = self.blockers(&todo)?;
        let mut conflicts: Vec<PathBuf> = blockers
            .iter()
            .map(|b| self.shown(&b.name, b.dir))
            .chain(
                todo.iter()
                    .filter(|t| t.changed)
                    .map(|t| self.display(&t.name)),
            )
            .collect();
        if !conflicts.is_empty() && !force {
            conflicts.sort();
            conflicts.dedup();
            return Ok(Restore::Conflicts(conflicts));
        }
        let (git, _) = self.without_filters(&scratch)?;
        let mut kept = self.apply(&git, &scratch, &todo, &blockers)?;
        Ok(Restore::Done(
            todo.iter()
                .enumerate()
                .map(|(i, t)| Change {
                    path: self.display(&t.name),
                    kind: match (&t.now, &t.to) {
                        (None, _) => ChangeKind::Added,
                        (_, None) => ChangeKind::Deleted,
                        _ => ChangeKind::Modified,
                    },
                    kept: kept.remove(&i).unwrap_or_default(),
                })
                .collect(),
        ))
    }

    /// What stands in the way of the files to write (see [`Blocker`]).
    /// A file the restore itself removes (unchanged since the turn) is in
    /// nobody's way, and neither is a folder holding only such files (or
    /// nothing).
    fn blockers(&self, todo: &[Todo]) -> Result<Vec<Blocker>, CheckpointError> {
        let removed: HashSet<&[u8]> = todo
            .iter()
            .filter(|t| t.to.is_none() && t.now.is_some() && !t.changed)
            .map(|t| t.name.as_slice())
            .collect();
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut blockers = Vec::new();
        for (i, t) in todo.iter().enumerate() {
            if t.to.is_none() {
                continue;
            }
            // The folders above it: each a real folder, or not there yet.
            for (end, _) in t.name.iter().enumerate().filter(|(_, b)| **b == b'/') {
                let above = &t.name[..end];
                let path = self.top.join(OsStr::from_bytes(above));
                match fs::symlink_metadata(&path) {
                    Ok(m) if m.is_dir() => continue,
                    Ok(_) => {
                        if !removed.contains(above) && seen.insert(above.to_vec()) {
                            blockers.push(Blocker {
                                name: above.to_vec(),
                                dir: false,
                                todo: i,
                            });
                        }
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::NotFound) => {}
                    Err(e) => return Err(CheckpointError::io(&path, e)),
                }
                break;
            }
            // The file itself.
            let path = self.top.join(OsStr::from_bytes(&t.name));
            let blocked = match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => (!holds_only(&path, &t.name, &removed)).then_some(true),
                // A file the checkpoint does not see.
                Ok(_) => t.now.is_none().then_some(false),
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    None
                }
                Err(e) => return Err(CheckpointError::io(&path, e)),
            };
            if let Some(dir) = blocked
                && seen.insert(t.name.clone())
            {
                blockers.push(Blocker {
                    name: t.name.clone(),
                    dir,
                    todo: i,
                });
            }
        }
        Ok(blockers)
    }

    /// Move aside what is in the way and what changed after the turn,
    /// remove what must go, then write what must be there through a
    /// temporary index that holds only those files. What was moved aside,
    /// by the index of the [`Todo`] it was in the way of.
    fn apply(
        &self,
        git: &Git,
        scratch: &Scratch,
        todo: &[Todo],
        blockers: &[Blocker],
    ) -> Result<HashMap<usize, Vec<Kept>>, CheckpointError> {
        let names: HashSet<&[u8]> = todo.iter().map(|t| t.name.as_slice()).collect();
        let mut kept: HashMap<usize, Vec<Kept>> = HashMap::new();
        for b in blockers {
            if let Some(k) = self.move_aside(&b.name, b.dir, &names)? {
                kept.entry(b.todo).or_default().push(k);
            }
        }
        let mut emptied = Vec::new();
        for (i, t) in todo.iter().enumerate() {
            if t.changed {
                if t.now.is_some()
                    && let Some(k) = self.move_aside(&t.name, false, &names)?
                {
                    kept.entry(i).or_default().push(k);
                }
                continue;
            }
            if t.to.is_some() {
                continue;
            }
            let path = self.top.join(OsStr::from_bytes(&t.name));
            match fs::symlink_metadata(&path) {
                Ok(m) if !m.is_dir() => match fs::remove_file(&path) {
                    Ok(()) => emptied.push(path),
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(CheckpointError::io(&path, e)),
                },
                _ => {}
            }
        }
        self.remove_empty_parents(&emptied);
        let mut entries = Vec::new();
        for t in todo {
            let Some(side) = &t.to else { continue };
            // Only an empty folder may still be in the way: git would
            // remove a folder whatever it holds, so it goes here or the
            // restore stops.
            let path = self.top.join(OsStr::from_bytes(&t.name));
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                remove_empty_tree(&path).map_err(|e| CheckpointError::io(&path, e))?;
            }
            entries.extend_from_slice(format!("{:o} {}\t", side.mode, side.id).as_bytes());
            entries.extend_from_slice(&t.name);
            entries.push(0);
        }
        if entries.is_empty() {
            return Ok(kept);
        }
        let index = scratch.path().join("restore-index");
        git.run(&scratch.hooks, ["update-index", "-z", "--index-info"])
            .index(&index)
            .stdin(entries)
            .output()?;
        git.run(&scratch.hooks, ["checkout-index", "-a", "-f"])
            .index(&index)
            .output()?;
        Ok(kept)
    }

    /// Rename `name` to `<name>.mm-undo-<n>` beside it, the first `n`
    /// that names nothing on disk and no file of the restore. `None` when
    /// it is no longer there.
    fn move_aside(
        &self,
        name: &[u8],
        dir: bool,
        names: &HashSet<&[u8]>,
    ) -> Result<Option<Kept>, CheckpointError> {
        let from = self.top.join(OsStr::from_bytes(name));
        if fs::symlink_metadata(&from).is_err() {
            return Ok(None);
        }
        let mut n = 1u32;
        let backup = loop {
            let mut candidate = name.to_vec();
            candidate.extend_from_slice(format!(".mm-undo-{n}").as_bytes());
            let in_use = names.iter().any(|t| {
                t.strip_prefix(candidate.as_slice())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
            });
            let path = self.top.join(OsStr::from_bytes(&candidate));
            if !in_use && fs::symlink_metadata(&path).is_err() {
                break candidate;
            }
            n += 1;
        };
        let to = self.top.join(OsStr::from_bytes(&backup));
        fs::rename(&from, &to).map_err(|e| CheckpointError::io(&from, e))?;
        Ok(Some(Kept {
            path: self.shown(name, dir),
            backup: self.shown(&backup, dir),
        }))
    }

    /// A name as the user reads it: relative to the folder, a folder with
    /// a final `/`.
    fn shown(&self, name: &[u8], dir: bool) -> PathBuf {
        let mut path = self.display(name);
        if dir {
            path.as_mut_os_string().push("/");
        }
        path
    }

    /// Remove the folders that `removed` files leave empty, up to the top of
    /// the tree and never the folder the checkpoints were opened for or one
    /// above it.
    fn remove_empty_parents(&self, removed: &[PathBuf]) {
        let folder = self.top.join(&self.prefix);
        for path in removed {
            let mut dir: Option<&Path> = path.parent();
            while let Some(d) = dir {
                if d == self.top.as_path() || folder.starts_with(d) || fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }
}

/// Whether the folder `path` (named `name` from the top) holds nothing but
/// folders and files of `removed`.
fn holds_only(path: &Path, name: &[u8], removed: &HashSet<&[u8]>) -> bool {
    let Ok(entries) = fs::read_dir(path) else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let mut child = name.to_vec();
        child.push(b'/');
        child.extend_from_slice(entry.file_name().as_bytes());
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let fine = if is_dir {
            holds_only(&entry.path(), &child, removed)
        } else {
            removed.contains(child.as_slice())
        };
        if !fine {
            return false;
        }
    }
    true
}

/// Remove a folder that holds nothing but empty folders; fails (removing
/// only what was empty) when anything else is in it.
fn remove_empty_tree(path: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_empty_tree(&entry.path())?;
        }
    }
    fs::remove_dir(path)
}
