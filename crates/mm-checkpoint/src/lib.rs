//! mm-checkpoint: checkpoints of a working tree, so that a turn of the agent
//! can be undone whatever tool made its changes (`edit_file`, `write_file`
//! or a `bash` command).
//!
//! A checkpoint is a git tree object: the state of every file that is not
//! ignored, recorded with the `git` on PATH (no library of git inside mm).
//!
//! - **In a git repository** the objects go into the repository's own object
//!   database, through a temporary index (`GIT_INDEX_FILE`) seeded with a
//!   copy of the user's index, so that only files changed since the user's
//!   last `git add` are read again. No ref is created, and the user's index,
//!   HEAD, stash and configuration are never touched. Files ignored by
//!   `.gitignore` are not recorded.
//! - **Outside git** they go into a private bare repository of mm's (one per
//!   folder, under mm's data directory), used with `--git-dir`/`--work-tree`:
//!   no `.git` is ever created in the user's folder.
//!
//! No program named in the configuration runs: no hook, no filesystem
//! monitor, no content filter (files are recorded and written back as the
//! bytes on disk), no external diff. A restore never overwrites or deletes
//! what changed after the turn unless forced, and then moves it aside.
//!
//! What a checkpoint does not hold: ignored files, submodules and nested
//! repositories (left alone), files over [`Options::max_file_size`], files
//! that cannot be read, and anything that is not a regular file or a
//! symbolic link. Because no ref points at a checkpoint, git treats its
//! objects as garbage: the user's `git gc` may delete those older than its
//! expiry (`gc.pruneExpire`, two weeks by default), after which the
//! checkpoint can no longer be restored.

#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod checkpoints;
mod error;
mod git;
mod raw;
mod restore;

use std::fmt;
use std::path::PathBuf;

pub use checkpoints::{Checkpoints, Location, Options};
pub use error::CheckpointError;

/// The id of one checkpoint: the hex id of a git tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Checkpoint(String);

impl Checkpoint {
    /// A checkpoint id read back (from a session file): 40 or 64 lowercase
    /// hex digits.
    pub fn parse(id: &str) -> Result<Checkpoint, CheckpointError> {
        let hex = id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if hex && (id.len() == 40 || id.len() == 64) {
            Ok(Checkpoint(id.to_string()))
        } else {
            Err(CheckpointError::BadId(id.to_string()))
        }
    }

    /// The id as text, for a session file.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Checkpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A checkpoint just recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// Its id.
    pub checkpoint: Checkpoint,
    /// Changed or new files left out (too large, unreadable, or not a
    /// regular file or link), relative to the folder.
    pub skipped: Vec<PathBuf>,
}

/// What happened to a file between two states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    /// It did not exist before.
    Added,
    /// Its content, mode or type changed.
    Modified,
    /// It no longer exists.
    Deleted,
}

/// One file that differs between two states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the folder the checkpoints were opened for (it starts
    /// with `../` for a file of the repository outside that folder).
    pub path: PathBuf,
    /// What happened to it.
    pub kind: ChangeKind,
    /// What stood in its way and was moved aside instead of being lost
    /// (only in a forced [`Checkpoints::restore`]; usually none or one).
    pub kept: Vec<Kept>,
}

/// Something of the user's that a forced restore moved aside: a file
/// changed after the turn, or whatever occupied a path to be written (a
/// folder where a file comes back, a file where a folder comes back). It
/// is renamed to `<name>.mm-undo-<n>` beside itself, the first `n` free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Where it was, relative to the folder (a folder ends with `/`).
    pub path: PathBuf,
    /// Where it is now, relative to the folder (a folder ends with `/`).
    pub backup: PathBuf,
}

/// The outcome of [`Checkpoints::restore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// The files were brought to the wanted state: what happened to each
    /// (`Added` is a file recreated, `Deleted` one removed). Empty when
    /// there was nothing to do.
    Done(Vec<Change>),
    /// Nothing was written: these files changed after the state they were
    /// expected in, or stand where a file must be written (a folder ends
    /// with `/`), and restoring would overwrite or delete them. Ask again
    /// with `force` to move them aside ([`Change::kept`]) and go on.
    Conflicts(Vec<PathBuf>),
}
