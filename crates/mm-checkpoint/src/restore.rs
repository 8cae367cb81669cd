//! Bringing the files a turn changed back to a checkpoint's state, without
//! overwriting what changed since.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::checkpoints::{Checkpoints, Scratch};
use crate::error::CheckpointError;
use crate::raw::{RawChange, Side};
use crate::{Change, ChangeKind, Checkpoint, Restore};

impl Checkpoints {
    /// Bring the files that differ between `expected` and `target` to their
    /// state in `target`; every other file is left alone.
    ///
    /// `expected` is the state those files should be in now: to undo a
    /// turn, `target` is the checkpoint before it and `expected` the one
    /// after it; to redo, the other way round. A file whose state now is
    /// neither (someone changed it after the turn) is a conflict: nothing is
    /// written and the conflicts are returned, unless `force`, when it is
    /// overwritten too. Files are written as git checks them out (mode and
    /// symbolic links kept); files `target` lacks are removed, and folders
    /// left empty by that removed. Submodules are never touched.
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
        // For each file: its state now, and where it must go.
        let mut todo = Vec::new();
        let mut conflicts = Vec::new();
        for c in wanted {
            let current = moved
                .get(&c.path)
                .cloned()
                .unwrap_or_else(|| c.from.clone());
            if current == c.to {
                continue;
            }
            if current != c.from {
                conflicts.push(self.display(&c.path));
                if !force {
                    continue;
                }
            }
            todo.push((c.path, current, c.to));
        }
        if !conflicts.is_empty() && !force {
            return Ok(Restore::Conflicts(conflicts));
        }
        self.apply(&scratch, &todo)?;
        Ok(Restore::Done(
            todo.iter()
                .map(|(path, now, to)| Change {
                    path: self.display(path),
                    kind: match (now, to) {
                        (None, _) => ChangeKind::Added,
                        (_, None) => ChangeKind::Deleted,
                        _ => ChangeKind::Modified,
                    },
                })
                .collect(),
        ))
    }

    /// Remove what must go, then write what must be there through a
    /// temporary index that holds only those files.
    fn apply(
        &self,
        scratch: &Scratch,
        todo: &[(Vec<u8>, Option<Side>, Option<Side>)],
    ) -> Result<(), CheckpointError> {
        let mut emptied = Vec::new();
        for (name, _, to) in todo {
            if to.is_some() {
                continue;
            }
            let path = self.top.join(OsStr::from_bytes(name));
            match fs::symlink_metadata(&path) {
                Ok(m) if !m.is_dir() => match fs::remove_file(&path) {
                    Ok(()) => emptied.push(path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(CheckpointError::io(&path, e)),
                },
                _ => {}
            }
        }
        self.remove_empty_parents(&emptied);
        let mut entries = Vec::new();
        for (name, _, to) in todo {
            if let Some(side) = to {
                entries.extend_from_slice(format!("{:o} {}\t", side.mode, side.id).as_bytes());
                entries.extend_from_slice(name);
                entries.push(0);
            }
        }
        if entries.is_empty() {
            return Ok(());
        }
        let index = scratch.path().join("restore-index");
        self.git
            .run(&scratch.hooks, ["update-index", "-z", "--index-info"])
            .index(&index)
            .stdin(entries)
            .output()?;
        self.git
            .run(&scratch.hooks, ["checkout-index", "-a", "-f"])
            .index(&index)
            .output()?;
        Ok(())
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
