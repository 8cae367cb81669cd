//! What can go wrong with a session file. Every variant names the session or
//! the path, so a front end can print it as is.

use std::path::PathBuf;

/// Errors of the session store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the session's lock (docs/design.md#session-files).
    #[error("session {id} is in use by another mm process")]
    InUse {
        /// The session's id.
        id: String,
    },

    /// No file for this id in the project's folder.
    #[error("session {id} not found in {}", dir.display())]
    NotFound {
        /// The session id asked for.
        id: String,
        /// The project's folder that was searched.
        dir: PathBuf,
    },

    /// The start of an id that begins several sessions' ids.
    #[error("{prefix} begins several sessions: {}; give more of the id", ids.join(", "))]
    Ambiguous {
        /// The start given.
        prefix: String,
        /// The ids it begins, sorted.
        ids: Vec<String>,
    },

    /// `N` past the end of the list of sessions.
    #[error("there is no session number {number}: the project has {count}")]
    NoNumber {
        /// The number given.
        number: usize,
        /// How many sessions the project has.
        count: usize,
    },

    /// A title of nothing but whitespace.
    #[error("a title cannot be empty")]
    EmptyTitle,

    /// The id cannot name a session file (it would escape the folder).
    #[error("invalid session id {id:?}")]
    InvalidId {
        /// The id as given.
        id: String,
    },

    /// The file is half-written, hand-edited or not a session at all.
    #[error("session file {} is corrupt: {reason}", path.display())]
    Corrupt {
        /// The session file.
        path: PathBuf,
        /// What is wrong (the parser's message, or "the file is empty").
        reason: String,
    },

    /// A file written by a newer (or unknown) format.
    #[error("session file {} has format version {found}; this mm reads version {}", path.display(), crate::VERSION)]
    Version {
        /// The session file.
        path: PathBuf,
        /// The version the file says.
        found: u64,
    },

    /// The file on disk is not the one this session loaded or last wrote:
    /// writing would destroy someone else's change.
    #[error("session file {} changed on disk since it was loaded; not overwriting it", path.display())]
    Changed {
        /// The session file.
        path: PathBuf,
    },

    /// The file system refused.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder the operation was on.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },

    /// The session could not be encoded (e.g. a path that is not UTF-8).
    #[error("session {id} cannot be encoded: {reason}")]
    Encode {
        /// The session's id.
        id: String,
        /// What the encoder said.
        reason: String,
    },
}

impl StoreError {
    /// The file the error is about, when it is about one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            StoreError::Corrupt { path, .. }
            | StoreError::Version { path, .. }
            | StoreError::Changed { path }
            | StoreError::Io { path, .. } => Some(path),
            _ => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}
