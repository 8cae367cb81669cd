//! What can go wrong while recording or restoring a checkpoint.

use std::path::PathBuf;

/// A checkpoint could not be recorded, read or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// `git` is not on PATH: checkpoints need it, in a repository or not.
    #[error("git was not found on PATH; checkpoints need it")]
    NoGit,
    /// A git command failed; `message` is its error output, trimmed.
    #[error("{command} failed: {message}")]
    Git {
        /// The command, e.g. `git write-tree`.
        command: String,
        /// What git said on stderr (or its exit status when it said nothing).
        message: String,
    },
    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The folder lies inside a repository's `.git` directory.
    #[error("{}: inside a git directory; checkpoints are off here", .0.display())]
    InsideGitDir(PathBuf),
    /// Outside git, the folder is `/` or the home directory: recording every
    /// file under it would be too costly.
    #[error("{}: not a project folder (the home directory or /); checkpoints are off here", .0.display())]
    TooBroad(PathBuf),
    /// The caller stopped the work (a turn was cancelled while its
    /// checkpoint was being recorded); the git command running was killed.
    #[error("stopped before it was recorded")]
    Stopped,
    /// A text that is not a checkpoint id (40 or 64 lowercase hex digits).
    #[error("not a checkpoint id: {0:?}")]
    BadId(String),
}

impl CheckpointError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            path: path.into(),
            source,
        }
    }
}
